//! Waiting on a child process for a bounded time, reading its output as it runs.

use std::io::Read;
use std::process::{Child, ExitStatus};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a child ended, and what it wrote to its piped stdout and stderr (empty where not piped).
// The mount tests' daemon writes to neither pipe: that binary reads only `status`.
#[allow(dead_code)]
pub struct Finished {
    /// Its exit status; `None` when it was still running at the limit.
    pub status: Option<ExitStatus>,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
}

/// Wait for `child` at most `limit`, its piped output read on threads meanwhile (so a full
/// pipe cannot stall it). Then `stop` runs, whether the child exited or the limit passed: it
/// kills the child (and whatever else it left holding the pipes) so that the output can be
/// collected; a child that had exited is past harm.
pub fn wait_within(mut child: Child, limit: Duration, stop: impl FnOnce(&mut Child)) -> Finished {
    fn drain(r: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
        r.map(|mut r| {
            std::thread::spawn(move || {
                let mut s = Vec::new();
                let _ = r.read_to_end(&mut s);
                s
            })
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if t0.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            _ => break None,
        }
    };
    stop(&mut child);
    let _ = child.wait();
    let collect = |h: Option<JoinHandle<Vec<u8>>>| h.map(|h| h.join().unwrap()).unwrap_or_default();
    Finished {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}
