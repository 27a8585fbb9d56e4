//! Ctrl-C (SIGINT), SIGTERM and SIGHUP, one way for every command; and the signal state a
//! shell hands over.
//!
//! SIGHUP (the terminal the command runs in closed, or `kill -HUP`) is caught as SIGTERM is:
//! its default action ended the process where it stood, leaving `.NAME.elevator-tmp-PID`
//! files, a `run` target whose marker was not refreshed (the next run refused it), and a dead
//! FUSE mount.
//!
//! **What elevator inherits** ([`prepare`], first thing in `main`, before any thread starts):
//!
//! - A signal **ignored** when elevator starts stays ignored: SIGHUP under `nohup`, SIGINT
//!   (and SIGQUIT) of a command a shell without job control put in the background (`cmd &`
//!   in a script, `bash -c 'cmd &'`: POSIX has the shell ignore them, so the terminal's
//!   Ctrl-C, sent to the whole process group, ends the script, not the background command),
//!   any signal after `trap '' SIG`. This is the Unix convention (coreutils' `sort` catches
//!   only the signals it finds not ignored; Python leaves an ignored SIGINT ignored, and so
//!   does our Python package); mkfs installs no handler at all, so it keeps the disposition
//!   too. fio does not (`set_sig_handlers` installs its handler whatever it inherited), so
//!   a background fio stops on the script's Ctrl-C. Such a `run` or `mount` is stopped by
//!   SIGTERM (`kill PID`), which a shell does not ignore for it.
//! - A signal **blocked** when elevator starts (a mask inherited through `exec`: a parent that
//!   blocked it in the thread that started us) is unblocked for the three signals caught
//!   here: blocked, SIGTERM stayed pending for the whole run, so `kill` did nothing to a
//!   `run` or a `mount` (which only SIGKILL then ended, leaving a dead mount). Blocking
//!   defers a signal; it does not ask for it to be dropped.
//! - **SIGXFSZ** (a write past the file-size limit, `ulimit -f`) is ignored, so the write
//!   fails with EFBIG and the output or layout that made it reports its path, as every
//!   other write error does (PostgreSQL's postmaster ignores it for the same reason). Its
//!   default action killed elevator mid-write (exit 153): a temporary output left beside its
//!   name, a `run` target half laid out and not removed, every other output lost. The
//!   programs elevator starts (fio under `kernel-record`, blkid, fusermount3) inherit the
//!   ignored disposition through `exec`, so they too get EFBIG instead of the signal.
//! - **SIGPIPE** stays ignored (Rust's runtime ignores it before `main`): a standard output
//!   whose reader went away (`elevator sim ... --json F | head -1`) fails its write with
//!   EPIPE ([`crate::output::stdout_broken`]); the command still writes its other outputs,
//!   then exits 141 without a message, as a process SIGPIPE ended is reported. SIGPIPE's
//!   default action had ended it at the first table, losing `--json` and every later output.
//!
//! Two modes:
//!
//! - **Ending** (every command, from the start of `main`): the first signal ends the process
//!   within milliseconds. A watcher thread, woken through a pipe the handler writes (`write` is
//!   async-signal-safe; nothing else happens in the handler), removes every temporary file
//!   and directory elevator is writing (`elevator_workload::input::Temporary`: outputs written
//!   beside their path before the rename, a blktrace being written, a spooled trace, a Parquet
//!   table), says so on stderr, and exits with 128 + the signal's number (130 for SIGINT, 143
//!   for SIGTERM, 129 for SIGHUP), as a shell reports a process a signal ended. An output renamed into place
//!   is whole; one not yet renamed is gone; an older file under its name is intact.
//! - **Stopping** ([`cooperate`]: `run`, `calibrate`, `compare`, `kernel-record` and `replay`
//!   on a real target): the signal only sets [`STOP`]; the command lets what is in flight
//!   complete, undoes or re-marks what it touched, writes what it measured and returns; `main`
//!   then exits with 128 + the signal's number ([`received`]). `mount` installs its own
//!   handler (its unmount watcher).
//!
//! SIGKILL cannot be caught: outputs are renamed into place whole, so an older output
//! survives, and what is left is at most a `.NAME.elevator-tmp-PID` beside it.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by the first SIGINT or SIGTERM in the stopping mode (and in the ending one).
pub static STOP: AtomicBool = AtomicBool::new(false);

/// The number of the first signal received, 0 before.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The pipe the handler writes to wake the watcher (-1 before it exists).
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// The mode: [`ENDING`], [`STOPPING_ONCE`] or [`STOPPING_ABSORB`].
static MODE: AtomicI32 = AtomicI32::new(ENDING);
/// Every signal wakes the watcher, which ends the process.
const ENDING: i32 = 0;
/// The first signal sets [`STOP`]; a second wakes the watcher (ends the process, removing
/// temporary files as the ending mode does).
const STOPPING_ONCE: i32 = 1;
/// Every signal sets [`STOP`] and nothing more.
const STOPPING_ABSORB: i32 = 2;

extern "C" fn on_signal(sig: libc::c_int) {
    let first = SIGNAL
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    STOP.store(true, Ordering::SeqCst);
    let wake = match MODE.load(Ordering::SeqCst) {
        ENDING => true,
        STOPPING_ONCE => !first,
        _ => false,
    };
    let fd = WAKE.load(Ordering::SeqCst);
    if wake && fd >= 0 {
        let b = [sig as u8];
        // SAFETY: write(2) is async-signal-safe; `b` outlives the call. A failed write (the
        // pipe full after many signals) leaves the watcher already woken.
        unsafe {
            libc::write(fd, b.as_ptr().cast(), 1);
        }
    }
}

/// The signals a command ends or stops on: Ctrl-C, `kill`'s default, and the hang-up of its
/// terminal.
const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Prepare the signal state elevator inherited (see the module documentation): unblock
/// [`CAUGHT`] and ignore SIGXFSZ. Called first thing in `main`, before any thread starts
/// (threads inherit the mask of the thread that starts them).
pub fn prepare() {
    // SAFETY: sigset and sigaction calls on local, zero-initialised structs; no memory but
    // theirs is touched.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in CAUGHT {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Install `handler` for [`CAUGHT`] (`flags` as sigaction takes them), leaving a signal
/// ignored where it is (`nohup`, `trap '' INT`, a background command of a script). The
/// handler must be async-signal-safe.
pub fn catch(handler: extern "C" fn(libc::c_int), flags: libc::c_int) {
    for sig in CAUGHT {
        // SAFETY: sigaction with a zeroed struct and an empty mask; the old action is read
        // into `old` first (a null new action changes nothing).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = flags;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Install `on_signal` for [`CAUGHT`]; `once`: the default action comes back after the first
/// (used only when there is no watcher to wake).
fn install(once: bool) {
    catch(on_signal, if once { libc::SA_RESETHAND } else { 0 });
}

/// The ending mode (see the module documentation); called first thing in `main`.
pub fn install_ending() {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        // No pipe: the default actions stay (the process ends; temporary files may remain).
        return;
    }
    let (read, write) = (fds[0], fds[1]);
    // The handler's write must never wait (a pipe filled by many signals): non-blocking.
    // SAFETY: F_GETFL/F_SETFL on the descriptor pipe2 just made; no memory is touched.
    unsafe {
        let flags = libc::fcntl(write, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(write, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            loop {
                // SAFETY: reads one byte into `b` from the pipe this thread owns.
                let n = unsafe { libc::read(read, b.as_mut_ptr().cast(), 1) };
                match n {
                    1 => break,
                    n if n < 0
                        && std::io::Error::last_os_error().kind()
                            == std::io::ErrorKind::Interrupted => {}
                    // The pipe failed or closed: no watcher (the handler's write is harmless).
                    _ => return,
                }
            }
            let sig = SIGNAL.load(Ordering::SeqCst);
            let removed = elevator_workload::input::abandon_temporaries();
            let note = match removed {
                0 => String::new(),
                1 => "; removed 1 unfinished temporary file".to_string(),
                n => format!("; removed {n} unfinished temporary files"),
            };
            crate::output::tell!(
                "elevator: interrupted by {}: stopped{note}; every output written is whole",
                name(sig)
            );
            // SAFETY: _exit ends the process without running destructors or flushing
            // buffers another thread may be filling.
            unsafe { libc::_exit(128 + sig) }
        });
    if spawned.is_err() {
        return;
    }
    WAKE.store(write, Ordering::SeqCst);
    install(false);
}

/// The stopping mode: from now on a SIGINT or SIGTERM only sets [`STOP`], which the command
/// polls. `once`: a second signal ends the process at once (as a second Ctrl-C usually does),
/// through the watcher, so the temporary files of an output being written are removed (the
/// default action used before left `.NAME.elevator-tmp-PID` behind); otherwise further
/// signals are absorbed too (`kernel-record` must undo what it set up).
pub fn cooperate(once: bool) {
    MODE.store(
        if once { STOPPING_ONCE } else { STOPPING_ABSORB },
        Ordering::SeqCst,
    );
    if WAKE.load(Ordering::SeqCst) < 0 && once {
        // No watcher: the default action comes back after the first signal.
        install(true);
    }
}

/// The first SIGINT or SIGTERM received, if any.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The name of a signal, for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT (Ctrl-C)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP (hang-up)",
        _ => "a signal",
    }
}
