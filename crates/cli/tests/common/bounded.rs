//! Run the `elevator` binary under test for a bounded time, failing on a hang or a panic.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::child::wait_within;

/// What a run of elevator gave.
pub struct Out {
    /// Its exit code (-1 for a signal).
    pub code: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Run elevator with `args`, killing it (and failing) if it runs longer than `limit` (a hang)
/// or if it panics.
pub fn elevator_within(args: &[&str], limit: Duration) -> Out {
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run elevator");
    let done = wait_within(child, limit, |c| {
        let _ = c.kill();
    });
    let Some(status) = done.status else {
        panic!("elevator {args:?} ran longer than {limit:?}: it hangs");
    };
    let out = Out {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&done.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
    };
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
}

/// [`elevator_within`] two minutes.
pub fn elevator(args: &[&str]) -> Out {
    elevator_within(args, Duration::from_secs(120))
}
