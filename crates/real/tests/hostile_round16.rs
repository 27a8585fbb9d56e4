//! Hostile cases of issue 32 (round 16) against the executor's target: what holds a device or
//! a file where the kernel's exclusive open does not tell. A loop device claims neither its
//! backing file nor its backing device (`loop_configure` claims the loop device itself; its
//! backing's sysfs `holders/` stays empty, and an exclusive open of the backing succeeds), so
//! only the loop devices' own record (`loop_get_status`: the backing file's `st_dev`,
//! `st_ino`, `st_rdev`) says a write there lands under the loop device. Needs root,
//! `losetup`, `mkfs.ext4` and `unshare`; prints a notice and skips otherwise.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use elevator_real::target::{self, OpenSpec, TargetError};

mod common;
use common::loopdev::{mount_elsewhere, tool, Loop};

const EXT4_MAGIC_AT: u64 = 1080;

fn writing(need: u64) -> OpenSpec {
    OpenSpec {
        writes: true,
        allow_overwrite: true,
        need_bytes: need,
        ..OpenSpec::default()
    }
}

fn refusal(r: Result<target::Target, TargetError>) -> String {
    match r {
        Err(TargetError::Refused(r)) => r.to_string(),
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(t) => panic!("{} was opened for writing", t.path.display()),
    }
}

/// A digest of a whole file (FNV-1a over its bytes): nothing written means the same value.
fn digest(path: &Path) -> u64 {
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return h;
        }
        for &b in &buf[..n] {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn image(dir: &Path, name: &str, bytes: u64) -> std::path::PathBuf {
    let img = dir.join(name);
    std::fs::File::create(&img).unwrap().set_len(bytes).unwrap();
    img
}

/// The class: a block device another loop device reads and writes (`losetup LOOP2 LOOP1`),
/// blank, so no signature and no data refuse it: written, under whatever used the upper loop
/// device, with or without `--allow-overwrite` (the kernel's exclusive open succeeds: the
/// loop driver does not claim it). Now refused whatever the flags, naming the upper device.
#[test]
fn a_device_backing_another_loop_device_is_refused_whatever_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "lower.img", 32 << 20);
    let Some(lower) = Loop::over(&img) else {
        return;
    };
    let Some(upper) = Loop::over(&lower.dev) else {
        return;
    };
    let before = digest(&img);
    for allow_overwrite in [false, true] {
        let msg = refusal(target::open(
            &lower.dev,
            OpenSpec {
                allow_overwrite,
                ..writing(16 << 20)
            },
        ));
        assert!(
            msg.contains(&format!("loop device {}", upper.dev.display()))
                && msg.contains("losetup -d"),
            "{msg}"
        );
    }
    // Reading is always allowed.
    target::open(
        &lower.dev,
        OpenSpec {
            writes: false,
            ..writing(16 << 20)
        },
    )
    .unwrap();
    assert_eq!(digest(&img), before, "the lower device was written");
}

/// An ext4 filesystem on `dev`, its inode tables and journal written now (not lazily, so no
/// kernel thread writes to it later).
fn mkfs_ext4(dev: &std::path::Path) {
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
        .arg(dev)
        .status()
        .unwrap();
    assert!(mkfs.success(), "mkfs.ext4 {} failed", dev.display());
}

/// The class: the image file of a loop device whose ext4 filesystem is mounted in another
/// mount namespace, given as a regular-file target with `--allow-overwrite` (the flag is for
/// the file's own contents): written, the mounted superblock destroyed. Now refused whatever
/// the flags, naming the loop device and where it is mounted; the image is unchanged.
#[test]
fn an_image_file_of_a_loop_device_mounted_in_another_namespace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ext4.img", 64 << 20);
    let Some(lo) = Loop::over(&img) else { return };
    if !tool("mkfs.ext4") {
        return;
    }
    mkfs_ext4(&lo.dev);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(held) = mount_elsewhere(&lo.dev, &mnt) else {
        return;
    };
    let before = digest(&img);
    let msg = refusal(target::open(&img, writing(16 << 20)));
    assert!(
        msg.contains(&format!("loop device {}", lo.dev.display())),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "mounted on {} in the mount namespace of pid {}",
            mnt.display(),
            held.child.id()
        )),
        "{msg}"
    );
    let f = std::fs::File::open(&img).unwrap();
    let mut magic = [0u8; 2];
    f.read_exact_at(&mut magic, EXT4_MAGIC_AT).unwrap();
    assert_eq!(magic, [0x53, 0xef], "the ext4 superblock was overwritten");
    assert_eq!(digest(&img), before, "the image was written");
}

/// The kernel's EBUSY does not say who holds the device: a whole device one of whose
/// partitions is mounted in another mount namespace is refused naming that mount (found in
/// the namespace's mountinfo by the partition's `major:minor`) and the process whose
/// namespace it is. Partitions are added with BLKPG (`addpart`), which needs no partition
/// table support in the kernel.
#[test]
fn a_whole_device_whose_partition_is_mounted_elsewhere_is_refused_naming_the_mount() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "disk.img", 80 << 20);
    let Some(lo) = Loop::over(&img) else { return };
    if !tool("addpart") || !tool("mkfs.ext4") {
        return;
    }
    // A loop device keeps a partition added with BLKPG after it is detached, so a device
    // some earlier run used may still carry partition 1: delete it before adding ours.
    let _ = delpart(&lo.dev);
    // Partition 1: sectors 2048 .. 2048 + 64 MiB.
    let added = Command::new("addpart")
        .arg(&lo.dev)
        .args(["1", "2048", "131072"])
        .status()
        .unwrap();
    assert!(added.success(), "addpart failed");
    // Declared after the loop device and before the mount: dropped after the mount's holder
    // and before the detach, on success or panic alike.
    let _partition = Partition { disk: &lo.dev };
    let part = std::path::PathBuf::from(format!("{}p1", lo.dev.display()));
    for _ in 0..50 {
        if part.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if !part.exists() {
        eprintln!("skipping: {} did not appear", part.display());
        return;
    }
    mkfs_ext4(&part);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(held) = mount_elsewhere(&part, &mnt) else {
        return;
    };
    let before = digest(&img);
    let msg = refusal(target::open(&lo.dev, writing(16 << 20)));
    assert!(msg.contains("EBUSY"), "{msg}");
    assert!(
        msg.contains(&format!(
            "mounted on {} in the mount namespace of pid {}",
            mnt.display(),
            held.child.id()
        )),
        "{msg}"
    );
    assert_eq!(digest(&img), before, "the device was written");
    drop(held);
}

/// Delete partition 1 of `disk` (BLKPG, `delpart`); whether it was deleted.
fn delpart(disk: &Path) -> bool {
    Command::new("delpart")
        .arg(disk)
        .arg("1")
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Partition 1 of a loop device, deleted on drop: the loop driver keeps it after the detach,
/// and the next run on that device could not add its own.
struct Partition<'a> {
    disk: &'a Path,
}

impl Drop for Partition<'_> {
    fn drop(&mut self) {
        // The namespace holding the mount goes with its process, but the unmount may trail
        // the process's exit by a moment: retry while the kernel says EBUSY.
        for _ in 0..50 {
            if delpart(self.disk) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("could not delete partition 1 of {}", self.disk.display());
    }
}
