//! Hostile cases of issue 17, "unsafe writes": each test is named after the case. The block
//! device cases need root and `losetup` (loop devices over image files); they print a notice
//! and skip otherwise. squashfs needs `mksquashfs`, the ENOSPC and mounted cases `mkfs.ext4`
//! and `mount`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use elevator_real::target::{self, OpenSpec, TargetError};
use elevator_real::ByteRange;

mod common;
use common::loopdev::{tool, Loop};

fn spec(writes: bool, allow: bool, need: u64) -> OpenSpec {
    OpenSpec {
        writes,
        allow_overwrite: allow,
        need_bytes: need,
        ..OpenSpec::default()
    }
}

/// A job writing the MiB at `mib` MiB, the device needed up to its end.
fn writing_a_mib_at(mib: u64, allow: bool) -> OpenSpec {
    OpenSpec {
        write_regions: vec![ByteRange {
            start: mib * MIB,
            end: (mib + 1) * MIB,
        }],
        ..spec(true, allow, (mib + 1) * MIB)
    }
}

fn direct_io_works(dir: &Path) -> bool {
    let p = dir.join("probe");
    let ok = target::open(&p, spec(true, false, 4096)).is_ok();
    let _ = std::fs::remove_file(&p);
    if !ok {
        eprintln!("skipping: O_DIRECT is not supported in {}", dir.display());
    }
    ok
}

/// A filesystem mounted on a directory, unmounted on drop.
struct Mount {
    dir: PathBuf,
}

impl Mount {
    fn ext4(dev: &Path, dir: &Path) -> Option<Mount> {
        if !tool("mkfs.ext4") || !tool("mount") {
            return None;
        }
        let mkfs = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(dev)
            .output()
            .ok()?;
        if !mkfs.status.success() {
            eprintln!("skipping: mkfs.ext4 failed");
            return None;
        }
        let m = Command::new("mount").arg(dev).arg(dir).output().ok()?;
        if !m.status.success() {
            eprintln!(
                "skipping: mount failed: {}",
                String::from_utf8_lossy(&m.stderr)
            );
            return None;
        }
        Some(Mount {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn image(dir: &Path, name: &str, bytes: &[u8], size: u64) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(size).unwrap();
    p
}

fn refusal(err: TargetError) -> String {
    match err {
        TargetError::Refused(r) => {
            let msg = r.to_string();
            assert!(msg.len() < 1024, "{msg}");
            msg
        }
        other => panic!("expected a refusal, got {other}"),
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn rerun_on_a_file_elevator_laid_out_is_reused_without_allow_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let path = dir.path().join("t.dat");
    let t = target::open(&path, spec(true, false, MIB)).unwrap();
    assert!(t.ours && t.laid_out);
    t.remember().unwrap();
    drop(t);
    let again = target::open(&path, spec(true, false, MIB)).unwrap();
    assert!(again.ours && !again.laid_out);
    // A bigger job on our file extends it, still without the flag.
    drop(again);
    let bigger = target::open(&path, spec(true, false, 2 * MIB)).unwrap();
    assert!(bigger.ours && bigger.laid_out);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 * MIB);
}

#[test]
fn a_file_elevator_laid_out_then_changed_by_another_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let path = dir.path().join("t.dat");
    drop(target::open(&path, spec(true, false, MIB)).unwrap());
    // Another program replaces the contents (the extended attribute survives a truncating
    // rewrite, so the marker must also check length and time).
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, vec![b'x'; MIB as usize]).unwrap();
    let msg = refusal(target::open(&path, spec(true, false, MIB)).unwrap_err());
    assert!(
        msg.contains("changed since elevator last wrote it"),
        "{msg}"
    );
    assert!(msg.contains("--allow-overwrite"), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; MIB as usize]);
}

/// The error of laying out 8 MiB at `path` told to stop before it starts (as after Ctrl-C).
fn layout_stopped(path: &Path) -> TargetError {
    static STOP: AtomicBool = AtomicBool::new(true);
    target::open(
        path,
        OpenSpec {
            stop: Some(&STOP),
            ..spec(true, false, 8 * MIB)
        },
    )
    .unwrap_err()
}

#[test]
fn ctrl_c_during_layout_removes_the_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let path = dir.path().join("t.dat");
    let err = layout_stopped(&path);
    assert!(matches!(err, TargetError::Interrupted { .. }), "{err}");
    assert!(!path.exists(), "the partial file is removed");
    // An existing empty file is given back empty.
    std::fs::write(&path, b"").unwrap();
    let err = layout_stopped(&path);
    assert!(matches!(err, TargetError::Interrupted { .. }), "{err}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn enospc_during_layout_removes_the_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fs.img", b"", 16 * MIB);
    let Some(lo) = Loop::over(&img) else { return };
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(_m) = Mount::ext4(&lo.dev, &mnt) else {
        return;
    };
    let path = mnt.join("t.dat");
    // 64 MiB on a 16 MiB filesystem: the space is reserved (fallocate, as fio does) or the
    // free space checked before any byte is written, so the layout is refused up front, and
    // no partial file is left behind.
    let err = target::open(&path, spec(true, false, 64 * MIB)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("more than the file holds"), "{msg}");
    assert!(msg.contains("nothing was written"), "{msg}");
    assert!(!path.exists(), "the partial file is removed");
}

#[test]
fn loop_device_over_csv_text_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::new();
    let mut i = 0u64;
    while csv.len() < (64 * MIB) as usize {
        csv.push_str(&format!("{i},{},sensor-{}\n", i * 7, i % 13));
        i += 1;
    }
    let img = image(dir.path(), "csv.img", csv.as_bytes(), 64 * MIB);
    let Some(lo) = Loop::over(&img) else { return };
    // A job writing in the middle of the device, where there is text too.
    let err = target::open(&lo.dev, writing_a_mib_at(32, false)).unwrap_err();
    let msg = refusal(err);
    assert!(
        msg.contains(&format!("byte {} is not zero", 32 * MIB)),
        "{msg}"
    );
    assert!(msg.contains("--allow-overwrite"), "{msg}");
    // Read-only jobs are fine.
    target::open(&lo.dev, spec(false, false, 33 * MIB)).unwrap();
    // Told to, it writes.
    target::open(&lo.dev, writing_a_mib_at(32, true)).unwrap();
    drop(lo);
    let kept = std::fs::read(&img).unwrap();
    assert!(
        kept == csv.as_bytes()[..(64 * MIB) as usize],
        "the text is intact"
    );
}

/// An md superblock 1.2 (4 KiB from the start; struct mdp_superblock_1 of
/// include/uapi/linux/raid/md_p.h) with a valid checksum, for a two-disk RAID1.
fn md_v1_2_superblock() -> Vec<u8> {
    let max_dev = 4usize;
    let mut sb = vec![0u8; 256 + 2 * max_dev];
    let put32 = |sb: &mut [u8], at: usize, v: u32| sb[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |sb: &mut [u8], at: usize, v: u64| sb[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(&mut sb, 0, 0xa92b_4efc); // magic
    put32(&mut sb, 4, 1); // major_version
    for (i, b) in sb[16..32].iter_mut().enumerate() {
        *b = i as u8 + 1; // set_uuid
    }
    sb[32..39].copy_from_slice(b"host:t0"); // set_name
    put32(&mut sb, 72, 1); // level: raid1
    put64(&mut sb, 80, 100_000); // size (sectors)
    put32(&mut sb, 92, 2); // raid_disks
    put64(&mut sb, 128, 2048); // data_offset
    put64(&mut sb, 136, 100_000); // data_size
    put64(&mut sb, 144, 8); // super_offset: 4 KiB in sectors
    for (i, b) in sb[168..184].iter_mut().enumerate() {
        *b = i as u8 + 17; // device_uuid
    }
    put32(&mut sb, 220, max_dev as u32);
    for (i, role) in [0u16, 1, 0xffff, 0xffff].iter().enumerate() {
        sb[256 + 2 * i..258 + 2 * i].copy_from_slice(&role.to_le_bytes());
    }
    // calc_sb_1_csum: the sum of the little-endian words, folded once.
    let sum: u64 = sb
        .chunks(4)
        .map(|w| u64::from(u32::from_le_bytes(w.try_into().unwrap())))
        .sum();
    put32(&mut sb, 216, ((sum & 0xffff_ffff) + (sum >> 32)) as u32);
    let mut dev = vec![0u8; 4096];
    dev.extend_from_slice(&sb);
    dev
}

#[test]
fn md_v1_2_member_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "md.img", &md_v1_2_superblock(), 64 * MIB);
    let Some(lo) = Loop::over(&img) else { return };
    // The job writes well past the superblock, where the member's data area reads as zeroes:
    // the signature alone refuses it.
    let err = target::open(&lo.dev, writing_a_mib_at(8, false)).unwrap_err();
    let msg = refusal(err);
    assert!(
        msg.contains("linux_raid_member") || msg.contains("md RAID member"),
        "{msg}"
    );
}

#[test]
fn squashfs_is_refused_naming_it() {
    if !tool("mksquashfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("hello.txt"), "hello\n").unwrap();
    let sq = dir.path().join("sq.img");
    let ok = Command::new("mksquashfs")
        .arg(&src)
        .arg(&sq)
        .args(["-quiet", "-noappend"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mksquashfs failed");
    let f = std::fs::OpenOptions::new().write(true).open(&sq).unwrap();
    f.set_len(16 * MIB).unwrap();
    let Some(lo) = Loop::over(&sq) else { return };
    let err = target::open(&lo.dev, writing_a_mib_at(8, false)).unwrap_err();
    let msg = refusal(err);
    assert!(msg.contains("squashfs"), "{msg}");
}

#[test]
fn an_all_zero_device_is_written_without_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "zero.img", b"", 16 * MIB);
    let Some(lo) = Loop::over(&img) else { return };
    let t = target::open(&lo.dev, spec(true, false, 16 * MIB)).unwrap();
    assert_eq!(t.size, 16 * MIB);
}

#[test]
fn allow_overwrite_does_not_lift_the_mounted_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fs.img", b"", 16 * MIB);
    let Some(lo) = Loop::over(&img) else { return };
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(_m) = Mount::ext4(&lo.dev, &mnt) else {
        return;
    };
    let msg = refusal(target::open(&lo.dev, spec(true, true, MIB)).unwrap_err());
    assert!(msg.contains("in use"), "{msg}");
    assert!(msg.contains("whatever the flags"), "{msg}");
}
