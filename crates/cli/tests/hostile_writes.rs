//! Hostile cases of issue 17, "unsafe writes", end to end through `elevator run` (the block
//! device cases are in crates/real/tests/hostile_writes.rs).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod child;
    pub mod direct_io;
    pub mod elevator;
}
use common::child::TerminalSignals;
use common::direct_io::direct_io_works;
use common::elevator::elevator;

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
        .with_terminal_signals()
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
