//! Hostile cases of issue 17, "unsafe writes", end to end through `elevator run` (the block
//! device cases are in crates/real/tests/hostile_writes.rs).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn elevator(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .output()
        .expect("run elevator");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// O_DIRECT is not available everywhere (tmpfs): skip with a notice there.
fn direct_io_works(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(dir.join("probe"))
        .is_ok();
    if !ok {
        eprintln!("skipping: {} does not support O_DIRECT", dir.display());
    }
    ok
}

#[test]
fn rerun_on_a_file_elevator_laid_out_is_reused_without_allow_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let job = dir.path().join("w.fio");
    std::fs::write(&job, "[w]\nrw=randwrite\nbs=4k\nsize=1m\niodepth=4\n").unwrap();
    let target = dir.path().join("t.dat");
    let args = [
        "run",
        job.to_str().unwrap(),
        "--target",
        target.to_str().unwrap(),
    ];
    for run in 0..3 {
        let (ok, _, err) = elevator(&args);
        assert!(ok, "run {run}: {err}");
    }
    // Another program writes the file: refused again.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&target, vec![b'q'; 1 << 20]).unwrap();
    let (ok, _, err) = elevator(&args);
    assert!(!ok);
    assert!(
        err.contains("changed since elevator last wrote it"),
        "{err}"
    );
    assert!(err.len() < 1024, "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), vec![b'q'; 1 << 20]);
}

#[test]
fn ctrl_c_during_layout_removes_the_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let job = dir.path().join("w.fio");
    // 4 GiB to lay out: the signal arrives long before the layout ends.
    std::fs::write(&job, "[w]\nrw=write\nbs=1m\nsize=4g\n").unwrap();
    let target = dir.path().join("t.dat");
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", job.to_str().unwrap(), "--target"])
        .arg(&target)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(&target).map_or(0, |m| m.len()) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "layout never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("interrupted while laying out"), "{err}");
    assert!(!target.exists(), "the partial file is removed");
}
