//! Hostile cases of issue 32, sixteenth round: what round 15 left (devices written, the
//! mount's signals and nesting, `kernel-record`'s refusals, `reproduce`'s flags). Every run
//! is bounded in time, so a hang fails instead of waiting. The device cases are in
//! crates/real/tests/hostile_round16.rs.

use std::process::{Command, Stdio};
use std::time::Duration;

mod common {
    pub mod bounded;
    pub mod child;
    pub mod mount;
}
use common::bounded::{clean_error, elevator_within, s, MINUTE};
use common::child::wait_within;
use common::mount::{fuse_available, have, Mount};

/// Whether the test runs as root; says it skips otherwise.
fn root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let r = unsafe { libc::geteuid() } == 0;
    if !r {
        eprintln!("{test}: skipped: needs root");
    }
    r
}

/// `kernel-record --file` on a dangling symbolic link: its check looked through the link
/// (`Path::exists` follows it), so the run went on (leftovers cleaned, the output directory
/// made) to the create, which failed with only "backing: create LINK: File exists" (O_EXCL
/// does not follow a link). Now refused at the check, before anything is set up, naming the
/// link and where it points (`record`'s check of `Backing::File`).
#[test]
fn kernel_record_file_on_a_dangling_symlink_is_refused_naming_the_link() {
    let test = "kernel_record_file_on_a_dangling_symlink_is_refused_naming_the_link";
    if !root(test) || !have("fio") {
        eprintln!("{test}: skipped: needs root and fio");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("w.fio");
    std::fs::write(&job, "[w]\nrw=write\nbs=4k\nsize=1m\n").unwrap();
    let link = dir.path().join("backing");
    std::os::unix::fs::symlink(dir.path().join("nowhere/file"), &link).unwrap();
    let out_dir = dir.path().join("rec");
    let out = elevator_within(
        &[
            "kernel-record",
            s(&job),
            "--sched",
            "none",
            "--out",
            s(&out_dir),
            "--file",
            s(&link),
        ],
        MINUTE,
    );
    clean_error(&out, &["backing", "symbolic link", "nowhere/file"]);
    assert!(!out_dir.exists(), "the output directory was made");
}

/// The backing directory on an elevator mount whose own backing directory holds the new
/// mountpoint (`elevator mount B M1`, then `elevator mount M1 B/x`): both mounted, and the
/// first path that went round (`ls M1/x/x/x/...`) left every FUSE thread of both daemons
/// waiting on the other; `kill -9` made them zombies holding the mounts until the FUSE
/// connections were aborted by hand (/sys/fs/fuse/connections/N/abort). Now refused before
/// mounting, naming the mount it goes through (`check_not_nested` follows the elevator mounts'
/// `elevator:BACKING` sources in /proc/self/mountinfo: `check_no_cycle`).
#[test]
fn a_mount_of_a_mount_whose_backing_holds_the_mountpoint_is_refused_not_a_deadlock() {
    let test = "a_mount_of_a_mount_whose_backing_holds_the_mountpoint_is_refused_not_a_deadlock";
    if !fuse_available(test) {
        return;
    }
    let mut first = Mount::start("none", &[]);
    let inner = first.back.join("x");
    std::fs::create_dir(&inner).unwrap();
    let second = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("mount")
        .arg(&first.mnt)
        .arg(&inner)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Refused at once; a daemon that mounted serves until stopped (nothing here touches the
    // cycle, so killing it is safe), and its mount is detached.
    let done = wait_within(second, Duration::from_secs(15), |c| {
        let _ = c.kill();
    });
    let _ = Command::new("fusermount3").arg("-uz").arg(&inner).status();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(
        done.status.is_some_and(|st| st.code() == Some(1)),
        "the second mount was not refused (status {:?}): {err}",
        done.status
    );
    assert!(
        err.contains("served by another elevator mount") && err.contains(s(&first.mnt)),
        "{err}"
    );
    assert!(first.unmount(), "the first mount did not unmount cleanly");
}

/// A stacked mount that makes no cycle (the backing directory a subdirectory of another
/// elevator mount, the mountpoint elsewhere) still mounts and serves: the guard on the
/// refusal above, which must not refuse stacking as such.
#[test]
fn a_mount_stacked_on_another_without_a_cycle_still_mounts() {
    let test = "a_mount_stacked_on_another_without_a_cycle_still_mounts";
    if !fuse_available(test) {
        return;
    }
    let mut first = Mount::start("none", &[]);
    std::fs::create_dir(first.back.join("sub")).unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let mut second = Mount::start_over(first.mnt.join("sub"), dirs, "none", &[]);
    std::fs::write(second.path("f"), b"through two mounts").unwrap();
    // Read through the first mount: the second daemon's write sits in the first mount's
    // page cache (the writeback cache) until the first writes it back.
    assert_eq!(
        std::fs::read(first.path("sub/f")).unwrap(),
        b"through two mounts"
    );
    assert!(second.unmount());
    assert!(first.unmount());
}

/// A mountpoint inside a bind mount of the backing directory (`mount --bind B BB`, then
/// `elevator mount B BB/sub`): the paths differ, so the check of canonical paths let it
/// mount; where mounts propagate (a shared mount, systemd's default for /) the new mount
/// appears at B/sub too, inside what it serves, and the first lookup under it left every FUSE
/// thread waiting on the mount, the daemon unkillable (rehearsed in a private mount namespace
/// with a shared tmpfs). Now refused: an ancestor of the mountpoint that is the backing
/// directory's device and inode (`check_not_nested`).
#[test]
fn a_mountpoint_inside_a_bind_mount_of_the_backing_directory_is_refused() {
    let test = "a_mountpoint_inside_a_bind_mount_of_the_backing_directory_is_refused";
    if !fuse_available(test) || !root(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let back = dir.path().join("back");
    let alias = dir.path().join("alias");
    std::fs::create_dir_all(back.join("sub")).unwrap();
    std::fs::create_dir(&alias).unwrap();
    let bound = Command::new("mount")
        .arg("--bind")
        .arg(&back)
        .arg(&alias)
        .status()
        .unwrap();
    assert!(bound.success(), "mount --bind failed");
    let inner = alias.join("sub");
    let run = |backing: &std::path::Path, mountpoint: &std::path::Path| {
        let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .arg("mount")
            .arg(backing)
            .arg(mountpoint)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let done = wait_within(child, Duration::from_secs(15), |c| {
            let _ = c.kill();
        });
        // A daemon that mounted: nothing looked up under it, so killing it is safe.
        let _ = Command::new("fusermount3")
            .arg("-uz")
            .arg(mountpoint)
            .status();
        done
    };
    let done = run(&back, &inner);
    let err = String::from_utf8_lossy(&done.stderr).into_owned();
    // The reverse: the backing directory inside a bind mount of the mountpoint.
    let rev = run(&inner, &back);
    let rev_err = String::from_utf8_lossy(&rev.stderr).into_owned();
    let _ = Command::new("umount").arg("-l").arg(&alias).status();
    assert!(
        done.status.is_some_and(|st| st.code() == Some(1)),
        "not refused (status {:?}): {err}",
        done.status
    );
    assert!(err.contains("under another name"), "{err}");
    assert!(
        rev.status.is_some_and(|st| st.code() == Some(1)),
        "the reverse not refused (status {:?}): {rev_err}",
        rev.status
    );
}
