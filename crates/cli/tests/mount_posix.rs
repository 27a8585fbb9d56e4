//! What a program expects of a filesystem, through `elevator mount` (issue 31): extended
//! attributes, a symlink's own times, SEEK_DATA / SEEK_HOLE, a bounded number of descriptors
//! under the default limit of 1,024 with thousands of files known to the kernel, stable inode
//! numbers in listings, and the mount's type in /proc/mounts.
//!
//! Each test skips with a printed notice where /dev/fuse or fusermount3 is missing.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, MetadataExt, PermissionsExt};
use std::path::Path;

mod common {
    pub mod child;
    pub mod mount;
}
use common::mount::{fuse_available, have, is_root, mount_line, Mount};

/// A mount of a fresh backing directory with `--sched none`, the daemon's open-file limit
/// `nofile` (soft and hard).
fn start(nofile: u64) -> Mount {
    let dirs = tempfile::tempdir().unwrap();
    let back = dirs.path().join("back");
    std::fs::create_dir(&back).unwrap();
    Mount::start_limited(back, dirs, "none", &[], Some(nofile))
}

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// lgetxattr of `name` on `p`: the value, or the errno.
fn get_xattr(p: &Path, name: &str) -> Result<Vec<u8>, i32> {
    let (p, n) = (c(p), CString::new(name).unwrap());
    let mut buf = vec![0u8; 256];
    // SAFETY: valid C strings and a buffer of the length given.
    let r = unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), 256) };
    if r < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap());
    }
    buf.truncate(r as usize);
    Ok(buf)
}

#[test]
fn extended_attributes_pass_through_to_the_backing_file() {
    if !fuse_available("mount_xattr") {
        return;
    }
    let mut m = start(1024);
    let f = m.path("f");
    std::fs::write(&f, b"x").unwrap();
    let (fc, name) = (c(&f), c"user.elevator.test");
    // SAFETY: valid C strings and a buffer of the length given.
    let r = unsafe { libc::setxattr(fc.as_ptr(), name.as_ptr(), c"v1".as_ptr().cast(), 2, 0) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        // The backing filesystem may have no user xattrs (tmpfs before 6.6): the mount must
        // then say what the backing file says, not ENOSYS.
        std::fs::File::create(m.back.join("probe")).unwrap();
        let bc = c(&m.back.join("probe"));
        // SAFETY: as above.
        let rb = unsafe { libc::setxattr(bc.as_ptr(), name.as_ptr(), c"v".as_ptr().cast(), 1, 0) };
        assert!(
            rb != 0,
            "the backing file takes user xattrs but the mount refused: {e}"
        );
        eprintln!("mount_xattr: skipped: the backing filesystem has no user xattrs ({e})");
        return;
    }
    // The value is on the backing file, and read back through the mount (getxattr with a
    // size of 0 first, as getfattr asks, then the value).
    assert_eq!(
        get_xattr(&m.back.join("f"), "user.elevator.test"),
        Ok(b"v1".to_vec())
    );
    assert_eq!(get_xattr(&f, "user.elevator.test"), Ok(b"v1".to_vec()));
    let mut list = vec![0u8; 256];
    // SAFETY: valid C string and a buffer of the length given.
    let n = unsafe { libc::listxattr(fc.as_ptr(), list.as_mut_ptr().cast(), 256) };
    assert!(n > 0);
    list.truncate(n as usize);
    assert!(
        list.split(|&b| b == 0).any(|s| s == b"user.elevator.test"),
        "{:?}",
        String::from_utf8_lossy(&list)
    );
    // A buffer too small is ERANGE, as on a local filesystem.
    // SAFETY: as above, with a 1-byte buffer.
    let small = unsafe { libc::getxattr(fc.as_ptr(), name.as_ptr(), list.as_mut_ptr().cast(), 1) };
    assert_eq!(small, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ERANGE)
    );
    // SAFETY: valid C strings.
    assert_eq!(unsafe { libc::removexattr(fc.as_ptr(), name.as_ptr()) }, 0);
    assert_eq!(
        get_xattr(&m.back.join("f"), "user.elevator.test"),
        Err(libc::ENODATA)
    );
    assert_eq!(get_xattr(&f, "user.elevator.test"), Err(libc::ENODATA));
    assert!(m.unmount());
}

#[test]
fn a_symlinks_times_are_its_own() {
    if !fuse_available("mount_symlink_times") {
        return;
    }
    let mut m = start(1024);
    std::fs::write(m.path("target"), b"t").unwrap();
    std::os::unix::fs::symlink("target", m.path("link")).unwrap();
    let before = std::fs::metadata(m.back.join("target")).unwrap().mtime();
    // `touch -h`: utimensat with AT_SYMLINK_NOFOLLOW on the link.
    let times = [
        libc::timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 0,
        },
    ];
    let l = c(&m.path("link"));
    // SAFETY: valid C string and two timespecs.
    let r = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            l.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    let link = std::fs::symlink_metadata(m.back.join("link")).unwrap();
    assert_eq!(link.mtime(), 1_000_000_000);
    assert_eq!(link.atime(), 1_000_000_000);
    assert_eq!(
        std::fs::symlink_metadata(m.path("link")).unwrap().mtime(),
        1_000_000_000
    );
    // The target is untouched.
    assert_eq!(
        std::fs::metadata(m.back.join("target")).unwrap().mtime(),
        before
    );
    assert!(m.unmount());
}

#[test]
fn seek_data_and_seek_hole_find_a_sparse_files_extents() {
    if !fuse_available("mount_seek_hole") {
        return;
    }
    let mut m = start(1024);
    // 8 MiB with data only at 4 MiB..4 MiB + 64 KiB, made in the backing directory.
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(m.back.join("sparse")).unwrap();
        f.set_len(8 << 20).unwrap();
        f.write_all_at(&[7u8; 65536], 4 << 20).unwrap();
        f.sync_all().unwrap();
    }
    let blocks = std::fs::metadata(m.back.join("sparse")).unwrap().blocks();
    if blocks * 512 >= 8 << 20 {
        eprintln!("mount_seek_hole: skipped: the backing filesystem keeps no holes");
        return;
    }
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(m.path("sparse")).unwrap();
    let fd = f.as_raw_fd();
    // SAFETY: valid descriptor.
    let data = unsafe { libc::lseek(fd, 0, libc::SEEK_DATA) };
    assert_eq!(data, 4 << 20, "{}", std::io::Error::last_os_error());
    // SAFETY: valid descriptor.
    let hole = unsafe { libc::lseek(fd, 4 << 20, libc::SEEK_HOLE) };
    assert_eq!(hole, (4 << 20) + 65536);
    // SAFETY: valid descriptor.
    assert_eq!(unsafe { libc::lseek(fd, 0, libc::SEEK_HOLE) }, 0);
    // Past the last data: ENXIO (lseek(2)).
    // SAFETY: valid descriptor.
    assert_eq!(
        unsafe { libc::lseek(fd, (4 << 20) + 65536, libc::SEEK_DATA) },
        -1
    );
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ENXIO)
    );
    drop(f);
    // While a handle may write the file, the kernel may hold data the backing file has not
    // got yet (fuse_lseek writes nothing back): then nothing is called a hole. A write into
    // the hole at 1 MiB is still only in the page cache; SEEK_HOLE from 1 MiB must not
    // answer 1 MiB.
    {
        use std::os::unix::fs::FileExt;
        let w = std::fs::OpenOptions::new()
            .write(true)
            .open(m.path("sparse"))
            .unwrap();
        w.write_all_at(&[9u8; 4096], 1 << 20).unwrap();
        let r = std::fs::File::open(m.path("sparse")).unwrap();
        // SAFETY: valid descriptor.
        let h = unsafe { libc::lseek(r.as_raw_fd(), 1 << 20, libc::SEEK_HOLE) };
        assert!(h > 1 << 20, "a hole reported over unwritten-back data: {h}");
        // SAFETY: valid descriptor.
        let d = unsafe { libc::lseek(r.as_raw_fd(), 0, libc::SEEK_DATA) };
        assert!(d <= 1 << 20, "the data at 1 MiB skipped: {d}");
    }
    assert!(m.unmount());
}

#[test]
fn thousands_of_files_need_no_more_descriptors_than_the_default_limit() {
    if !fuse_available("mount_bounded_fds") {
        return;
    }
    // The daemon's limit is 1,024, soft and hard (it cannot raise it); 3,000 files are made,
    // read back and renamed through it, and the kernel keeps every one of them looked up.
    let mut m = start(1024);
    const N: usize = 3000;
    for d in 0..30 {
        std::fs::create_dir(m.path(&format!("d{d}"))).unwrap();
    }
    for i in 0..N {
        std::fs::write(m.path(&format!("d{}/f{i}", i % 30)), i.to_string()).unwrap();
    }
    // The inode table holds at most half the limit (crates/mount/src/inode.rs); the rest is
    // FUSE's, the engine's and open files'.
    let peak = m.fds();
    assert!(peak <= 700, "the daemon holds {peak} descriptors");
    // A directory renamed through the mount: every file under it is still found, through
    // descriptors long since closed.
    std::fs::rename(m.path("d0"), m.path("moved")).unwrap();
    std::fs::set_permissions(m.path("moved"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for i in 0..N {
        let p = if i % 30 == 0 {
            format!("moved/f{i}")
        } else {
            format!("d{}/f{i}", i % 30)
        };
        assert_eq!(
            std::fs::read_to_string(m.path(&p)).unwrap(),
            i.to_string(),
            "{p}"
        );
    }
    // Stat every one again: the kernel's remembered inodes (all 3,000 still looked up)
    // need their backing files reopened by name.
    for i in 0..N {
        let p = m.path(&format!("d{}/f{i}", i % 30));
        if i % 30 != 0 {
            let md = std::fs::metadata(&p).unwrap();
            let back = std::fs::metadata(m.back.join(format!("d{}/f{i}", i % 30))).unwrap();
            assert_eq!(md.ino(), back.ino(), "{}", p.display());
        }
    }
    let now = m.fds();
    assert!(now <= 700, "the daemon holds {now} descriptors");
    // An open file whose name is unlinked through the mount stays readable.
    use std::io::Read;
    let mut f = std::fs::File::open(m.path("d1/f1")).unwrap();
    std::fs::remove_file(m.path("d1/f1")).unwrap();
    for i in 0..N {
        if i % 30 > 1 {
            std::fs::metadata(m.path(&format!("d{}/f{i}", i % 30))).unwrap();
        }
    }
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "1");
    drop(f);
    assert!(m.unmount());
}

#[test]
fn listings_give_the_numbers_stat_gives_and_proc_mounts_the_type_fuse_elevator() {
    if !fuse_available("mount_readdirplus") {
        return;
    }
    let mut m = start(1024);
    for i in 0..50 {
        std::fs::write(m.back.join(format!("f{i}")), b"x").unwrap();
    }
    std::os::unix::fs::symlink("f0", m.back.join("l")).unwrap();
    std::fs::create_dir(m.back.join("d")).unwrap();
    let line = mount_line(&m.mnt).unwrap();
    assert_eq!(line.split(' ').nth(2), Some("fuse.elevator"), "{line}");
    // A listing (readdirplus: each entry with its attributes) and stat agree, and both give
    // the backing file's number, type and size.
    let mut seen = 0;
    for e in std::fs::read_dir(&m.mnt).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".elevator" {
            assert!(e.file_type().unwrap().is_dir());
            continue;
        }
        let back = std::fs::symlink_metadata(m.back.join(&name)).unwrap();
        let through = std::fs::symlink_metadata(e.path()).unwrap();
        assert_eq!(e.ino(), through.ino(), "{name:?}");
        assert_eq!(through.ino(), back.ino(), "{name:?}");
        assert_eq!(through.file_type(), back.file_type(), "{name:?}");
        assert_eq!(through.len(), back.len(), "{name:?}");
        seen += 1;
    }
    assert_eq!(seen, 52);
    // The control directory lists its files with their own attributes.
    let ctl: Vec<_> = std::fs::read_dir(m.path(".elevator"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(ctl.iter().any(|n| n == "scheduler"), "{ctl:?}");
    // Read after the listing gave its attributes: the whole file, not the listing's size.
    let sched = std::fs::read_to_string(m.path(".elevator/scheduler")).unwrap();
    assert!(
        sched.contains("[noop]") && sched.ends_with('\n'),
        "{sched:?}"
    );
    assert!(m.unmount());
}

#[test]
fn a_write_or_truncate_by_another_user_drops_setuid_and_setgid_as_the_backing_fs_does() {
    // The mount asks for FUSE_HANDLE_KILLPRIV_V2 (no GETXATTR before every write), so the
    // kernel leaves dropping the bits to us; the daemon writes as root, whom the backing
    // filesystem lets keep them. Each case runs on the backing directory too, as the
    // reference: after a write by uid 65534 (not in the file's group), and after a truncate.
    if !fuse_available("mount_killpriv") {
        return;
    }
    if !is_root() || !have("setpriv") {
        eprintln!("mount_killpriv: skipped: needs root and setpriv to act as another user");
        return;
    }
    let mut m = Mount::start("none", &["--allow-other"]);
    let top = m.mnt.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&m.back, std::fs::Permissions::from_mode(0o777)).unwrap();
    let as_nobody = |cmd: String| {
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sh",
                "-c",
            ])
            .arg(&cmd)
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
    };
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    for (i, start) in [0o4777, 0o2777, 0o2767, 0o6777, 0o0777]
        .into_iter()
        .enumerate()
    {
        let mut after = Vec::new();
        for dir in [m.back.clone(), m.mnt.clone()] {
            for (j, op) in [
                "dd if=/dev/zero of={} bs=4096 count=1 conv=notrunc status=none",
                "truncate -s 100 {}",
            ]
            .into_iter()
            .enumerate()
            {
                let f = dir.join(format!("f{i}{j}"));
                std::fs::write(&f, vec![1u8; 8192]).unwrap();
                std::fs::set_permissions(&f, std::fs::Permissions::from_mode(start)).unwrap();
                as_nobody(op.replace("{}", f.to_str().unwrap()));
                // Through the mount, as the backing file has it (no attribute cache).
                after.push(mode(&m.back.join(f.file_name().unwrap())));
                std::fs::remove_file(&f).unwrap();
            }
        }
        assert_eq!(
            after[..2],
            after[2..],
            "mode {start:o}: backing, then mount"
        );
        if start & 0o4000 != 0 {
            assert_eq!(
                after[2] & 0o4000,
                0,
                "mode {start:o}: setuid kept by the mount"
            );
        }
    }
    assert!(m.unmount());
}
