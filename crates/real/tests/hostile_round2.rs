//! Hostile cases of issue 32 (hardening, round 2) against the executor's target: a block
//! device in use where /proc/self/mounts cannot see it. Needs root, `losetup`, `mkfs.ext4`
//! and `unshare`; prints a notice and skips otherwise.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::process::Command;

use elevator_real::target::{self, OpenSpec, TargetError};

mod common;
use common::loopdev::{mount_elsewhere, tool, Loop};

const EXT4_MAGIC_AT: u64 = 1080;

/// The class: a device in use in another mount namespace, written with `--allow-overwrite`
/// (an ext4 superblock was destroyed). The exclusive open refuses it whatever the flags, and
/// the superblock is intact.
#[test]
fn a_device_mounted_in_another_namespace_is_refused_even_with_allow_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("ext4.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let Some(lo) = Loop::over(&img) else { return };
    if !tool("mkfs.ext4") {
        return;
    }
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&lo.dev)
        .status()
        .unwrap();
    assert!(mkfs.success());
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(_held) = mount_elsewhere(&lo.dev, &mnt) else {
        return;
    };
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains(lo.dev.to_str().unwrap()),
        "the mount is visible here; the case needs it hidden"
    );
    let err = target::open(
        &lo.dev,
        OpenSpec {
            writes: true,
            allow_overwrite: true,
            need_bytes: 16 << 20,
            ..OpenSpec::default()
        },
    )
    .unwrap_err();
    let msg = match err {
        TargetError::Refused(r) => r.to_string(),
        other => panic!("expected a refusal, got {other}"),
    };
    assert!(msg.contains("in use") && msg.contains("EBUSY"), "{msg}");
    let f = std::fs::File::open(&lo.dev).unwrap();
    let mut magic = [0u8; 2];
    f.read_exact_at(&mut magic, EXT4_MAGIC_AT).unwrap();
    assert_eq!(magic, [0x53, 0xef], "the ext4 superblock was overwritten");
}

/// While elevator holds a device for writing, nothing else can claim it exclusively (mkfs,
/// mount): the exclusive open is held for the run.
#[test]
fn a_device_open_for_writing_is_held_exclusively() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("blank.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let Some(lo) = Loop::over(&img) else { return };
    let t = target::open(
        &lo.dev,
        OpenSpec {
            writes: true,
            allow_overwrite: false,
            need_bytes: 16 << 20,
            ..OpenSpec::default()
        },
    )
    .unwrap();
    let other = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&lo.dev);
    assert_eq!(
        other.map(|_| ()).unwrap_err().raw_os_error(),
        Some(libc::EBUSY),
        "another exclusive opener got the device while elevator held it"
    );
    drop(t);
    // The last writer's close makes udev probe the device (its inotify watch on close-write),
    // which can hold it for a moment: elevator's claim is gone at the drop, so an exclusive
    // open succeeds within a bounded wait (2 s), not necessarily at the first try.
    let mut last = None;
    for _ in 0..50 {
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&lo.dev)
        {
            Ok(_) => return,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = Some(e);
                std::thread::sleep(std::time::Duration::from_millis(40));
            }
            Err(e) => panic!("released when the target is dropped: {e}"),
        }
    }
    panic!("still held 2 s after the target was dropped: {last:?}");
}
