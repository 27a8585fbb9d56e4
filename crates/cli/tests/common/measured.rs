//! Running the `elevator` binary to completion and reading its peak memory from `wait4`.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run elevator with `args` to completion; (exit status 0, wall time, peak resident bytes).
pub fn measured<S: AsRef<OsStr>>(args: &[S]) -> (bool, Duration, u64) {
    let t0 = Instant::now();
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which also gives its rusage
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid buffer; waiting for our own child by its id.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    // Reaped by wait4 above: std's handle has nothing left to wait for.
    drop(child);
    (ok, t0.elapsed(), usage.ru_maxrss as u64 * 1024)
}
