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
// hostile_writes signals its child but waits on it itself.
#[allow(dead_code)]
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

/// Let `child` run for `after`, send it one SIGTERM, and wait at most `limit` for it to end
/// (then kill it, as [`wait_within`]).
// Only the binaries whose tests stop a busy child with one SIGTERM use it.
#[allow(dead_code)]
pub fn terminate_after(child: Child, after: Duration, limit: Duration) -> Finished {
    std::thread::sleep(after);
    // SAFETY: kill(2) of our own child, not yet reaped.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    wait_within(child, limit, |c| {
        let _ = c.kill();
    })
}

/// Starting a child as an interactive shell starts it, whatever this test process inherited.
// Only the binaries whose tests signal a child use it.
#[allow(dead_code)]
pub trait TerminalSignals {
    /// SIGINT, SIGQUIT, SIGTERM and SIGHUP at their defaults and no signal blocked in the
    /// child, as a shell with job control starts a foreground command. A test that sends one
    /// of them stands for a user at a terminal; started from a script's background job (which
    /// starts with SIGINT and SIGQUIT ignored) or under `nohup`, the child would inherit the
    /// ignore, and elevator, by design, keeps a signal ignored that it was started with.
    fn with_terminal_signals(&mut self) -> &mut Self;
}

impl TerminalSignals for std::process::Command {
    fn with_terminal_signals(&mut self) -> &mut Self {
        use std::os::unix::process::CommandExt;
        // SAFETY: only signal(2) and sigprocmask(2), both async-signal-safe, between fork
        // and exec.
        unsafe {
            self.pre_exec(|| {
                for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                Ok(())
            })
        }
    }
}

/// Set the child's `resource` limit (soft and hard) to `value` before it runs (`ulimit`).
// Only the binaries whose tests limit a child use it.
#[allow(dead_code)]
pub fn rlimit(cmd: &mut std::process::Command, resource: libc::__rlimit_resource_t, value: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec, on a struct
    // local to the closure.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
