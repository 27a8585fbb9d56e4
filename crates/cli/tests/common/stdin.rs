//! Run the `elevator` binary with a writer feeding its standard input (a pipe), bounded in
//! time: a job file on `/dev/stdin`, a trace on `-`, an endless stream.

use std::ffi::OsStr;
use std::process::{ChildStdin, Command, Stdio};
use std::time::Duration;

use super::bounded::Out;
use super::child::wait_within;

/// Run elevator with `args` (and the environment variables `envs`), `feed` writing its
/// standard input on a thread of its own; kill it and fail if it runs longer than `limit` (a
/// hang) or panics. elevator may stop reading early (a refusal): `feed` then sees its writes
/// fail and should return; the pipe is closed when it does.
pub fn with_stdin(
    args: &[&str],
    envs: &[(&str, &OsStr)],
    limit: Duration,
    feed: impl FnOnce(ChildStdin) + Send + 'static,
) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run elevator");
    let pipe = child.stdin.take().expect("a piped stdin");
    let writer = std::thread::spawn(move || feed(pipe));
    let done = wait_within(child, limit, |c| {
        let _ = c.kill();
    });
    writer.join().expect("the stdin writer panicked");
    let Some(status) = done.status else {
        panic!("elevator {args:?} ran longer than {limit:?} reading a pipe: it hangs");
    };
    Out::of(status, &done)
}
