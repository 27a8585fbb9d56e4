//! The submission API: any thread submits reads, writes and fsyncs; one engine thread owns the
//! io_uring and the scheduler.
//!
//! [`Engine::start`] spawns the engine thread and returns an [`Engine`] (the owner, which shuts
//! it down) from which any number of [`Handle`]s are cloned. A handle [registers](Handle::register)
//! open files (opened with O_DIRECT by the caller for the figures to mean anything) and
//! [submits](Handle::submit) [`Io`]s against them, each tagged with its context (the process
//! the scheduler sees), its group (cgroup), its priority and whether the issuer waits for it
//! (sync). A submission returns a [`Ticket`] to [wait](Ticket::wait) on or
//! [poll](Ticket::poll); [`Handle::submit_with`] runs a callback on the engine thread instead,
//! for servers that answer from the completion (the FUSE filesystem does).
//!
//! The engine inserts each I/O into the scheduler as a [`Request`](elevator_core::Request) (split into pieces of at most
//! [`Scheduler::max_request_sectors`], as `exec` does), dispatches while the ring has room and
//! the scheduler has something to say, sleeps in `io_uring_enter` until a completion, the
//! scheduler's idle deadline or a submission (an eventfd read kept armed in the ring), and runs
//! completions. The scheduler, not the ring, decides how much is outstanding.
//!
//! The scheduler sees one sector space for all files: file `n` starts at sector
//! `n << 32` (2 TiB apart), so requests to one file sort and seek among themselves and a
//! request to another file is a long seek. The real placement of the files on the device is
//! not known to it.
//!
//! With [`EngineOptions::request_log`] the engine also keeps, per request, the executor's
//! [`RequestRecord`](crate::RequestRecord): when its issuer submitted it (Q), when the
//! scheduler got it (I), dispatched it (D) and when it completed (C), the latest records kept
//! ([`Handle::take_request_log`]).
//!
//! Changing the scheduler ([`Handle::set_scheduler`]) works as the kernel's `elevator_switch`:
//! the queue is frozen (new I/O is held), the old scheduler drains everything it holds and the
//! device goes idle, then the new one takes the held I/O. [`Engine::shutdown`] (or dropping the
//! engine) refuses new I/O, lets every queued and in-flight I/O complete, and joins the thread:
//! an I/O whose completion was delivered is never lost to shutdown.
//!
//! ```
//! use std::io::Write;
//! use elevator_core::{registry, CtxId, GroupId, GroupTree, IoPrio, Settings};
//! use elevator_real::buf::AlignedBuf;
//! use elevator_real::submit::{Engine, EngineOptions, Io};
//!
//! let sched = || registry::find("deadline").unwrap().build(&Settings::new(), &GroupTree::new());
//! let engine = Engine::start(Box::new(sched), EngineOptions::default()).unwrap();
//! let handle = engine.handle();
//!
//! // Register a file (a real program opens it with O_DIRECT; a temporary file suffices here).
//! let mut f = tempfile::tempfile().unwrap();
//! f.write_all(&[0u8; 8192]).unwrap();
//! let file = handle.register(f);
//!
//! // Two threads, two processes as the scheduler sees them: one writes, one reads.
//! let writer = {
//!     let h = handle.clone();
//!     std::thread::spawn(move || {
//!         let mut data = AlignedBuf::new(4096);
//!         data.fill(7);
//!         let io = Io::write(file, 0, data).ctx(CtxId(1)).sync(true);
//!         h.submit(io).wait().result.unwrap();
//!         h.submit(Io::fsync(file, true).ctx(CtxId(1))).wait().result.unwrap();
//!     })
//! };
//! writer.join().unwrap();
//! let done = handle.submit(Io::read(file, 0, 4096).ctx(CtxId(2)).group(GroupId::ROOT)
//!     .prio(IoPrio::default())).wait();
//! assert_eq!(done.result.unwrap(), 4096);
//! assert!(done.buf.iter().all(|&b| b == 7));
//! assert_eq!(handle.stats().read_ios, 1);
//! engine.shutdown();
//! ```

mod engine;
mod log;
mod stat;

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use elevator_core::{CtxId, GroupId, IoPrio, Scheduler, TunableError};

use crate::buf::AlignedBuf;

pub use log::RequestLog;
pub use stat::DiskStats;

/// Builds a scheduler on the engine thread (a scheduler need not be `Send`).
pub type SchedFactory = Box<dyn FnOnce() -> Result<Box<dyn Scheduler>, TunableError> + Send>;

/// A file registered with the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// What an [`Io`] does.
#[derive(Debug)]
pub enum IoOp {
    /// Read this many bytes.
    Read {
        /// Bytes to read (a multiple of 512).
        len: usize,
    },
    /// Write this buffer.
    Write {
        /// The data (its length a multiple of 512).
        data: AlignedBuf,
    },
    /// Make the file's completed writes durable: fsync, or fdatasync when `datasync`.
    Fsync {
        /// fdatasync instead of fsync.
        datasync: bool,
    },
}

/// One I/O to submit, with the tags the scheduler classifies it by.
#[derive(Debug)]
pub struct Io {
    /// The file.
    pub file: FileId,
    /// Byte offset (a multiple of 512; ignored by fsync).
    pub offset: u64,
    /// What to do.
    pub op: IoOp,
    /// The issuing context (process). Default: context 0.
    pub ctx: CtxId,
    /// The issuer's group (cgroup). Default: the root.
    pub group: GroupId,
    /// The issuer's I/O priority. Default: best effort, level 4.
    pub prio: IoPrio,
    /// Whether the issuer waits for it. Reads and fsyncs are always sync; a write is sync only
    /// when marked (O_DIRECT, O_SYNC), otherwise it is writeback. Default: false.
    pub sync: bool,
    /// Filesystem metadata (REQ_META). Default: false.
    pub meta: bool,
    /// Linux's REQ_IDLE: the issuer sends more right after this (the kernel sets it on
    /// O_DIRECT writes). Default: false.
    pub idle_hint: bool,
}

impl Io {
    fn new(file: FileId, offset: u64, op: IoOp) -> Io {
        Io {
            file,
            offset,
            op,
            ctx: CtxId(0),
            group: GroupId::ROOT,
            prio: IoPrio::default(),
            sync: false,
            meta: false,
            idle_hint: false,
        }
    }
    /// Read `len` bytes at `offset`.
    pub fn read(file: FileId, offset: u64, len: usize) -> Io {
        Io::new(file, offset, IoOp::Read { len })
    }
    /// Write `data` at `offset`.
    pub fn write(file: FileId, offset: u64, data: AlignedBuf) -> Io {
        Io::new(file, offset, IoOp::Write { data })
    }
    /// fsync (or fdatasync) the file.
    pub fn fsync(file: FileId, datasync: bool) -> Io {
        Io::new(file, 0, IoOp::Fsync { datasync })
    }
    /// Tag with the issuing context.
    pub fn ctx(mut self, ctx: CtxId) -> Io {
        self.ctx = ctx;
        self
    }
    /// Tag with the issuer's group.
    pub fn group(mut self, group: GroupId) -> Io {
        self.group = group;
        self
    }
    /// Tag with the issuer's priority.
    pub fn prio(mut self, prio: IoPrio) -> Io {
        self.prio = prio;
        self
    }
    /// Mark a write sync (the issuer waits for it) or async (writeback).
    pub fn sync(mut self, sync: bool) -> Io {
        self.sync = sync;
        self
    }
    /// Mark as filesystem metadata.
    pub fn meta(mut self, meta: bool) -> Io {
        self.meta = meta;
        self
    }
    /// Carry REQ_IDLE (set it on O_DIRECT writes, as the kernel's direct-I/O paths do).
    pub fn idle_hint(mut self, idle_hint: bool) -> Io {
        self.idle_hint = idle_hint;
        self
    }
}

/// A finished [`Io`].
#[derive(Debug)]
pub struct Completion {
    /// Bytes transferred (fewer than asked at end of file; 0 for fsync), or the error.
    pub result: io::Result<usize>,
    /// The read data (its first `result` bytes are valid), the written buffer handed back, or
    /// an empty buffer for fsync.
    pub buf: AlignedBuf,
    /// From submission to completion, time queued in the scheduler included.
    pub latency: Duration,
}

impl Completion {
    fn refused(error: io::Error, buf: AlignedBuf) -> Completion {
        Completion {
            result: Err(error),
            buf,
            latency: Duration::ZERO,
        }
    }
}

/// Called on the engine thread with an I/O's completion. It must not block.
pub type Callback = Box<dyn FnOnce(Completion) + Send>;

/// Tuning for the engine.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// io_uring entries (a power of two): a ceiling on I/O in flight; the scheduler decides
    /// below it.
    pub ring_entries: u32,
    /// Keep a record of at most this many of the latest requests completed (0, the default:
    /// none); see [`Handle::take_request_log`].
    pub request_log: usize,
    /// The group tree the submitters' groups come from: the io controllers its groups
    /// configure are installed at the block layer's rq_qos position
    /// ([`elevator_core::qos::chain`]). The root alone (the default): none.
    pub groups: elevator_core::GroupTree,
    /// Whether the device is non-rotational (an SSD), for the io controllers.
    pub non_rotational: bool,
    /// Emulate this drive: each request completes at the time the model says, on the real
    /// clock, over the registered files (see [`crate::emulate`]); the block layer's queue
    /// depth is the model's. `None` (the default): the files' own device.
    pub emulate: Option<crate::emulate::SharedModel>,
    /// Let each submitter drive the engine itself (false, the default: every submission is
    /// handed to the engine thread). With it, [`Handle::submit_with`] takes the engine's lock
    /// on the caller's thread, inserts the I/O into the block layer, lets the scheduler
    /// dispatch and puts what it dispatches in the ring, then returns; the engine thread only
    /// waits for completions and the scheduler's timers. One thread hand-off (a channel
    /// message and an eventfd wake-up) less per I/O. The scheduler then runs on several
    /// threads, one at a time under that lock, so it must keep no thread-local state (none of
    /// ours does). Ignored with [`emulate`](Self::emulate), whose clock lives in the loop.
    pub inline_submit: bool,
    /// With [`inline_submit`](Self::inline_submit): a read the scheduler dispatches while
    /// nothing else is in flight, over one submitted I/O, is done by the submitter itself
    /// with one `pread` on its own thread (outside the engine's lock), not through the ring,
    /// and completed to the block layer there; its callback then runs on the submitter's
    /// thread. It is in flight for the block layer as a ring entry is, and the scheduler
    /// still decided it: it is what `poll_dispatch` gave. Saves the engine thread's wake-up
    /// on the completion and the ring's system calls for a read that would wait for nothing
    /// else (a reader at queue depth 1). The submitter blocks until it completes. Writes
    /// always go through the ring: they come in batches (writeback, asynchronous direct
    /// I/O at depth), where a submitter held for a whole large write is a FUSE thread
    /// fewer (docs/mount.md). False by default.
    pub sync_when_idle: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            ring_entries: 256,
            request_log: 0,
            groups: elevator_core::GroupTree::new(),
            non_rotational: false,
            emulate: None,
            inline_submit: false,
            sync_when_idle: false,
        }
    }
}

/// A waitable completion.
pub struct Ticket {
    slot: Arc<(Mutex<Option<Completion>>, Condvar)>,
}

impl Ticket {
    /// Block until the I/O completes.
    pub fn wait(self) -> Completion {
        let (m, cv) = &*self.slot;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(c) = g.take() {
                return c;
            }
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The completion if the I/O has completed (then the ticket is spent: a later `poll` or
    /// `wait` will not see it again), else `None`.
    pub fn poll(&self) -> Option<Completion> {
        self.slot.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Ticket")
    }
}

/// Messages from handles to the engine thread.
enum Cmd {
    Register(FileId, File),
    Unregister(FileId),
    /// The I/O, what to do with its completion, and when it was submitted.
    Submit(Io, Callback, Instant),
    Exit(CtxId),
    SetTunable(String, i64, Sender<Result<(), TunableError>>),
    Switch(SchedFactory, Sender<Result<(), TunableError>>),
    Shutdown,
}

/// What the handles and the engine thread share.
struct Shared {
    /// Set by the engine just before it sleeps; a submitter that clears it writes the eventfd.
    asleep: AtomicBool,
    /// Written to wake the engine.
    wake: OwnedFd,
    stats: Mutex<stat::StatView>,
    log: Mutex<log::LogKeeper>,
    scheduler: Mutex<&'static str>,
    next_file: AtomicU32,
    /// With [`EngineOptions::emulate`]: how late completions were against the model.
    lateness: Option<Mutex<crate::emulate::Lateness>>,
    /// With [`EngineOptions::inline_submit`]: the engine, for submitters to drive.
    inline: std::sync::OnceLock<Arc<engine::Core>>,
}

/// A cloneable, thread-safe way into the engine.
#[derive(Clone)]
pub struct Handle {
    tx: Sender<Cmd>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("scheduler", &self.scheduler())
            .finish()
    }
}

fn shut_down() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the I/O engine has shut down")
}

impl Handle {
    fn send(&self, cmd: Cmd) -> Result<(), Cmd> {
        self.tx.send(cmd).map_err(|e| e.0)?;
        if self.shared.asleep.swap(false, Ordering::SeqCst) {
            let one: u64 = 1;
            // SAFETY: writing 8 bytes from a live u64 to an eventfd we own.
            unsafe { libc::write(self.shared.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
        Ok(())
    }

    /// Hand `file` to the engine. It keeps the file open until [`unregister`](Self::unregister)
    /// (and its I/O is done) or shutdown.
    pub fn register(&self, file: File) -> FileId {
        let id = FileId(self.shared.next_file.fetch_add(1, Ordering::Relaxed));
        let _ = self.send(Cmd::Register(id, file));
        id
    }

    /// Close `file` once its queued and in-flight I/O has completed. Later I/O to it fails
    /// with EBADF.
    pub fn unregister(&self, file: FileId) {
        let _ = self.send(Cmd::Unregister(file));
    }

    /// Submit `io`; wait for or poll the returned ticket.
    pub fn submit(&self, io: Io) -> Ticket {
        let slot = Arc::new((Mutex::new(None), Condvar::new()));
        let theirs = Arc::clone(&slot);
        self.submit_with(io, move |c| {
            let (m, cv) = &*theirs;
            *m.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
            cv.notify_all();
        });
        Ticket { slot }
    }

    /// Submit `io`; `done` runs with its completion on the thread that reaps it (the engine
    /// thread; or, with [`EngineOptions::inline_submit`], the caller's when the I/O is
    /// refused or completes at once, and with [`EngineOptions::sync_when_idle`] when the
    /// caller did the read itself, before this returns), never under the engine's lock (at
    /// once, on the caller's thread, if the engine has shut down). `done` must not block.
    pub fn submit_with(&self, io: Io, done: impl FnOnce(Completion) + Send + 'static) {
        if let Some(core) = self.shared.inline.get() {
            return core.submit(io, Box::new(done), Instant::now());
        }
        let cmd = Cmd::Submit(io, Box::new(done), Instant::now());
        if let Err(Cmd::Submit(io, done, _)) = self.send(cmd) {
            let buf = match io.op {
                IoOp::Write { data } => data,
                _ => AlignedBuf::new(0),
            };
            done(Completion::refused(shut_down(), buf));
        }
    }

    /// Tell the scheduler that context `ctx` has exited (Linux's `exit_io_context`).
    pub fn exit_context(&self, ctx: CtxId) {
        let _ = self.send(Cmd::Exit(ctx));
    }

    /// Set a tunable of the running scheduler, as writing its sysfs file would.
    pub fn set_tunable(&self, name: &str, value: i64) -> Result<(), TunableError> {
        let (tx, rx) = mpsc::channel();
        if self
            .send(Cmd::SetTunable(name.to_string(), value, tx))
            .is_err()
        {
            return Err(TunableError::Invalid {
                reason: shut_down().to_string(),
            });
        }
        rx.recv().unwrap_or_else(|_| {
            Err(TunableError::Invalid {
                reason: shut_down().to_string(),
            })
        })
    }

    /// Replace the scheduler: new I/O is held while the old one drains and the device goes
    /// idle, then `build`'s scheduler takes over. Returns when the switch is done, or with
    /// `build`'s error (the old scheduler stays).
    pub fn set_scheduler(&self, build: SchedFactory) -> Result<(), TunableError> {
        let (tx, rx) = mpsc::channel();
        if self.send(Cmd::Switch(build, tx)).is_err() {
            return Err(TunableError::Invalid {
                reason: shut_down().to_string(),
            });
        }
        rx.recv().unwrap_or_else(|_| {
            Err(TunableError::Invalid {
                reason: shut_down().to_string(),
            })
        })
    }

    /// The running scheduler's name.
    pub fn scheduler(&self) -> &'static str {
        *self
            .shared
            .scheduler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Every request logged since the last call (none unless [`EngineOptions::request_log`]);
    /// the log starts again empty. Times are from the engine's start. Call it after
    /// [`Engine::shutdown`] for the complete log.
    pub fn take_request_log(&self) -> RequestLog {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// With an emulated drive ([`EngineOptions::emulate`]): how late completions have been
    /// against the model so far.
    pub fn emulation(&self) -> Option<crate::emulate::Summary> {
        self.shared
            .lateness
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()).summary())
    }

    /// The `/sys/block/<dev>/stat` counters so far.
    pub fn stats(&self) -> DiskStats {
        let now = std::time::Instant::now();
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .snapshot(now)
    }
}

/// The engine's owner: hands out [`Handle`]s and shuts the engine down.
pub struct Engine {
    handle: Handle,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.handle.fmt(f)
    }
}

impl Engine {
    /// Start the engine thread with the scheduler `build` makes. Fails if the scheduler cannot
    /// be built or the ring cannot be set up.
    pub fn start(build: SchedFactory, opts: EngineOptions) -> io::Result<Engine> {
        // SAFETY: eventfd(2) with valid flags; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
        let wake = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let shared = Arc::new(Shared {
            asleep: AtomicBool::new(false),
            wake,
            stats: Mutex::new(stat::StatView::new(Instant::now())),
            log: Mutex::new(log::LogKeeper::new(opts.request_log)),
            scheduler: Mutex::new(""),
            next_file: AtomicU32::new(0),
            lateness: opts.emulate.as_ref().map(|_| Mutex::default()),
            inline: std::sync::OnceLock::new(),
        });
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("elevator-engine".into())
            .spawn(move || engine::run(build, opts, rx, theirs, ready_tx))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Engine {
                handle: Handle { tx, shared },
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(thread
                .join()
                .map_err(|_| io::Error::other("the I/O engine panicked"))?
                .err()
                .unwrap_or_else(shut_down)),
        }
    }

    /// A handle for submitting I/O.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Refuse new I/O, complete everything queued and in flight, stop the thread. Returns the
    /// engine's own failure (a broken ring), if any.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> io::Result<()> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        let _ = self.handle.send(Cmd::Shutdown);
        t.join()
            .map_err(|_| io::Error::other("the I/O engine panicked"))?
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests;
