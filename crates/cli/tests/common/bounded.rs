//! Run the `elevator` binary under test for a bounded time, failing on a hang or a panic.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::child::{wait_within, Finished};

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
    elevator_set_up(args, limit, |_| {})
}

/// [`elevator_within`] with the command set up further first (its directory, environment).
#[allow(dead_code)] // not every test file sets the command up
pub fn elevator_set_up<A: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    args: &[A],
    limit: Duration,
    set_up: impl FnOnce(&mut Command),
) -> Out {
    let mut command = Command::new(env!("CARGO_BIN_EXE_elevator"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    set_up(&mut command);
    let child = command.spawn().expect("run elevator");
    let done = wait_within(child, limit, |c| {
        let _ = c.kill();
    });
    let Some(status) = done.status else {
        panic!("elevator {args:?} ran longer than {limit:?}: it hangs");
    };
    Out::of(status, &done)
}

impl Out {
    /// What a finished run gave (its `status` and captured output), failing if it panicked.
    pub fn of(status: std::process::ExitStatus, done: &Finished) -> Out {
        let out = Out {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&done.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
        };
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        out
    }
}

/// [`elevator_within`] two minutes.
#[allow(dead_code)] // not every test file runs without its own bound
pub fn elevator(args: &[&str]) -> Out {
    elevator_within(args, Duration::from_secs(120))
}

/// The run failed cleanly (exit 1, a short message) and its message names every `needle`.
pub fn clean_error(out: &Out, needles: &[&str]) {
    assert_eq!(
        out.code, 1,
        "expected exit 1; stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.len() < 1024,
        "message of {} bytes",
        out.stderr.len()
    );
    for n in needles {
        assert!(out.stderr.contains(n), "{n:?} not in: {}", out.stderr);
    }
}

/// A path as an argument (the tests' paths are UTF-8: their temporary directories).
#[allow(dead_code)] // not every test file passes paths
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A minute: the bound of a case that is refused or runs in a few seconds.
#[allow(dead_code)] // not every test file bounds its runs by it
pub const MINUTE: Duration = Duration::from_secs(60);

/// A compile of `files` files through a 1 MiB page cache on the 980 PRO model.
#[allow(dead_code)] // not every test file runs a compile
pub fn compile(dir: &Path, files: u32) -> std::path::PathBuf {
    let p = dir.join(format!("make-{files}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"make\"\ndrive = \"samsung-980pro-1tb\"\n[[job]]\nname = \"make\"\n\
             kind = \"compile\"\nfiles = {files}\ndirs = 1000\npage_cache_mib = 1\n"
        ),
    )
    .unwrap();
    p
}
