//! Run the `elevator` binary under test.

use std::process::Command;

/// Run `elevator args`: (whether it succeeded, its stdout, its stderr).
pub fn elevator(args: &[&str]) -> (bool, String, String) {
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
