//! The engine thread: commands in, scheduler decisions, io_uring, completions out.
//!
//! One loop around the [`BlockLayer`]. Each turn it (1) takes every command waiting in the
//! channel (registrations, submissions, tunables, a scheduler switch, shutdown) and submits
//! I/O to the block layer as bios, (2) starts what the layer dispatches while the ring has
//! room: a request carrying one bio as a read or write, one carrying several merged bios as one
//! readv or writev over their buffers, (3) sleeps in `io_uring_enter` until a completion, the
//! layer's timeout, or a submitter's write to the eventfd whose read stays armed in the ring,
//! and (4) hands completions to the layer, which says which bios they finish. Splitting,
//! merging, the switch's freeze and drain, and the stat counters are the layer's.
//!
//! With [`EngineOptions::inline_submit`](super::EngineOptions::inline_submit) a submitter
//! runs step (1) and (2) for its own I/O on its own thread, under the engine's lock, and the
//! engine thread sleeps in `io_uring_enter` without the lock; whoever holds the lock touches
//! the ring's queues, and completions' callbacks run after the lock is let go. With
//! [`EngineOptions::sync_when_idle`](super::EngineOptions::sync_when_idle) as well, a read
//! dispatched to an idle device is done by its submitter with `pread` ([`SyncIo`]).
//!
//! With an emulated drive ([`EngineOptions::emulate`]) each dispatched request is also given
//! to the drive's model (at its place on the drive, [`Layout`]), and its completion is held
//! until the model's time: the loop then also wakes at the earliest such time, and the
//! device's depth is the model's.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use elevator_core::block::{Bio, BlockLayer, Done, Limits};
use elevator_core::{Nanos, Op, Request, Scheduler, TunableError, SECTOR_BYTES};
use io_uring::{opcode, types, IoUring};

use super::{Callback, Cmd, Completion, EngineOptions, FileId, Io, IoOp, SchedFactory, Shared};
use crate::buf::AlignedBuf;
use crate::emulate::{ArrivalClock, Layout, ServiceModel, SPIN};
use crate::RequestRecord;

/// Where the outcome of a tunable change or a scheduler switch goes.
type Reply = Sender<Result<(), TunableError>>;

/// The token of the eventfd read; request ids count up from 1 and never reach it.
const WAKE_TOKEN: u64 = u64::MAX;

/// Sectors between the starts of two files in the scheduler's one sector space (2 TiB).
const FILE_SPAN_SHIFT: u32 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Fsync { datasync: bool },
}

struct FileEntry {
    file: File,
    /// With an emulated drive: the backing file's (device, inode) and its size in sectors
    /// when registered, for its place on the drive.
    place: ((u64, u64), u64),
    /// I/Os on this file queued or in flight.
    outstanding: usize,
    closing: bool,
}

/// One submitted I/O: a bio to the block layer (which may split it into several requests, or
/// merge it into another's).
struct Parent {
    kind: Kind,
    file: FileId,
    /// Its first sector in the layer's sector space.
    sector: u64,
    buf: AlignedBuf,
    done: Option<Callback>,
    error: Option<io::Error>,
    /// Bytes valid from the start of `buf`: the whole length unless a piece came back short.
    valid: usize,
    started: Instant,
    /// For the request log: when its issuer submitted it (Q).
    queued_at: Nanos,
}

/// A request in the ring.
struct Flight {
    rq: Request,
    /// The iovecs of a readv/writev (a request of several bios); they must outlive the I/O.
    _iov: Option<Box<[libc::iovec]>>,
}

/// The engine's state behind its lock, for the engine thread and (with inline submission)
/// the submitters.
pub(super) struct Core(Mutex<Locked>);

/// The engine, `Send` so that it can sit in a lock shared between threads.
struct Locked(Engine);

// SAFETY: the engine holds a scheduler, which need not be `Send` (`SchedFactory`). It is
// reached only through `Core`'s mutex, so one thread at a time touches it; nothing in it is
// tied to a thread (no scheduler keeps thread-local state, and any `Rc` a scheduler holds
// has all its clones inside it, behind the same lock).
unsafe impl Send for Locked {}

impl Core {
    fn lock(&self) -> MutexGuard<'_, Locked> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Inline submission: insert `io` and dispatch what the scheduler gives, on the caller's
    /// thread; wake the engine thread if the scheduler now wants a timer earlier than the
    /// one it sleeps with.
    ///
    /// With [`EngineOptions::sync_when_idle`](super::EngineOptions::sync_when_idle), a read
    /// the scheduler dispatches while nothing is in flight is done here, with one `pread`
    /// outside the lock (see [`SyncIo`]), and completed to the block layer on this thread.
    pub(super) fn submit(&self, io: Io, done: Callback, queued: Instant) {
        let (mut ready, sync) = {
            let mut g = self.lock();
            let e = &mut g.0;
            e.drain();
            e.command(Cmd::Submit(io, done, queued));
            let r = e.dispatch_first(e.sync_when_idle).and_then(|sync| {
                e.submit_queued()?;
                Ok(sync)
            });
            let sync = match r {
                Ok(sync) => {
                    e.nudge();
                    sync
                }
                Err(err) => {
                    // The engine thread returns it at its next turn.
                    e.fatal.get_or_insert(err);
                    e.wake();
                    None
                }
            };
            (std::mem::take(&mut e.ready), sync)
        };
        if let Some(io) = sync {
            // The callbacks already ready go first: they need not wait for the device.
            run_ready(std::mem::take(&mut ready));
            let res = io.run();
            let mut g = self.lock();
            let e = &mut g.0;
            e.complete(io.id, res, Instant::now());
            // The device is free again: what the scheduler holds may go now.
            match e.dispatch().and_then(|()| e.submit_queued()) {
                Ok(()) => e.nudge(),
                Err(err) => {
                    e.fatal.get_or_insert(err);
                    e.wake();
                }
            }
            if e.shutting && e.sleeping.is_some() {
                // The engine thread waits for the device to go idle before it exits.
                e.wake();
            }
            ready = std::mem::take(&mut e.ready);
        }
        run_ready(ready);
    }
}

/// A dispatched read done on the submitter's thread with one `pread` of the registered
/// descriptor (`EngineOptions::sync_when_idle`), not through the ring. It counts
/// as in flight (the block layer's depth) from its dispatch to its completion, like a ring
/// entry; its buffer is its parent's, which stays in the engine until the request completes,
/// and its file stays registered while the parent is outstanding.
pub(super) struct SyncIo {
    id: u64,
    fd: std::os::fd::RawFd,
    ptr: *mut u8,
    len: usize,
    offset: u64,
}

impl SyncIo {
    /// Do the I/O; the result as a completion queue entry gives it (bytes, or -errno).
    fn run(&self) -> i32 {
        loop {
            // SAFETY: `ptr` points to `len` bytes of a parent's buffer that lives until this
            // request completes (which only the caller of `run` does, afterwards), and `fd`
            // stays open while the parent is outstanding.
            let n = unsafe {
                libc::pread(
                    self.fd,
                    self.ptr.cast(),
                    self.len,
                    self.offset as libc::off_t,
                )
            };
            if n >= 0 {
                return n as i32;
            }
            let errno = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            if errno != libc::EINTR {
                return -errno;
            }
        }
    }
}

/// Run completions' callbacks (outside the engine's lock).
fn run_ready(ready: Vec<(Callback, Completion)>) {
    for (done, c) in ready {
        done(c);
    }
}

struct Engine {
    ring: Arc<IoUring>,
    rx: Receiver<Cmd>,
    /// Whether the command channel still has senders.
    connected: bool,
    /// Completions whose callbacks are to run once the lock is let go.
    ready: Vec<(Callback, Completion)>,
    /// While the engine thread sleeps without the lock: the scheduler's timer it sleeps
    /// until (`Some(None)`: none).
    sleeping: Option<Option<Nanos>>,
    /// A ring failure met by an inline submitter, for the engine thread to return.
    fatal: Option<io::Error>,
    shared: Arc<Shared>,
    /// The block layer and the scheduler in it; a bio's token is its parent's id.
    blk: BlockLayer<Box<dyn Scheduler>, u64>,
    t0: Instant,
    files: HashMap<FileId, FileEntry>,
    parents: HashMap<u64, Parent>,
    flights: HashMap<u64, Flight>,
    next_parent: u64,
    in_ring: usize,
    capacity: usize,
    /// The requester of a pending switch.
    switch_reply: Option<Reply>,
    wake_buf: Box<u64>,
    wake_armed: bool,
    shutting: bool,
    /// Whether completions go into the shared request log.
    logging: bool,
    /// Bios the last completion finished (kept to reuse its allocation).
    done: Vec<Done<u64>>,
    /// The emulated drive, if any.
    emu: Option<Emu>,
    /// [`EngineOptions::sync_when_idle`](super::EngineOptions::sync_when_idle), with inline
    /// submission.
    sync_when_idle: bool,
}

/// An emulated drive's state in the engine.
struct Emu {
    model: Box<dyn ServiceModel>,
    layout: Layout,
    arrivals: ArrivalClock,
    /// Model completion time of each request in the ring or held.
    due: HashMap<u64, Nanos>,
    /// Requests whose I/O completed before the model's time: (time, id, result).
    held: BinaryHeap<Reverse<(Nanos, u64, i32)>>,
}

pub(super) fn run(
    build: SchedFactory,
    opts: EngineOptions,
    rx: Receiver<Cmd>,
    shared: Arc<Shared>,
    ready: Sender<io::Result<()>>,
) -> io::Result<()> {
    let model = opts.emulate.as_ref().and_then(|m| m.take());
    if opts.emulate.is_some() && model.is_none() {
        let _ = ready.send(Err(io::Error::other(
            "the emulated drive's model was already taken by another engine",
        )));
        return Ok(());
    }
    let setup = || -> io::Result<(IoUring, Box<dyn Scheduler>)> {
        let sched = build().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let entries = opts.ring_entries.max(2);
        let ring = IoUring::builder()
            .setup_cqsize(entries.saturating_mul(2))
            .build(entries)?;
        // As in the job executor (uring.rs): io-wq may run as many workers as the ring holds,
        // so what is outstanding is what the scheduler decided.
        let mut max = [entries, 0];
        let _ = ring.submitter().register_iowq_max_workers(&mut max);
        Ok((ring, sched))
    };
    let (ring, sched) = match setup() {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return Ok(());
        }
    };
    *shared.scheduler.lock().unwrap_or_else(|e| e.into_inner()) = sched.name();
    let mut capacity = ring.params().sq_entries() as usize - 1;
    let emu = model.map(|model| {
        crate::emulate::precise_timers();
        capacity = capacity.min(model.depth().max(1));
        Emu {
            layout: Layout::new(model.capacity_bytes() / SECTOR_BYTES),
            model,
            arrivals: ArrivalClock::default(),
            due: HashMap::new(),
            held: BinaryHeap::new(),
        }
    });
    let logging = opts.request_log > 0;
    let t0 = Instant::now();
    shared
        .stats
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .publish(&Default::default(), t0);
    let mut blk = BlockLayer::new(sched, Limits::depth(capacity));
    let dev = elevator_core::qos::QosDevice {
        non_rotational: opts.non_rotational,
        queue_depth: capacity,
        nr_requests: blk.nr_requests(),
    };
    blk.set_qos(elevator_core::qos::chain(&opts.groups, &dev));
    let inline = opts.inline_submit && emu.is_none();
    let ring = Arc::new(ring);
    let e = Engine {
        ring: Arc::clone(&ring),
        rx,
        connected: true,
        ready: Vec::new(),
        sleeping: None,
        fatal: None,
        shared: Arc::clone(&shared),
        blk,
        t0,
        files: HashMap::new(),
        parents: HashMap::new(),
        flights: HashMap::new(),
        next_parent: 1,
        in_ring: 0,
        capacity,
        switch_reply: None,
        wake_buf: Box::new(0),
        wake_armed: false,
        shutting: false,
        logging,
        done: Vec::new(),
        emu,
        sync_when_idle: inline && opts.sync_when_idle,
    };
    let core = Arc::new(Core(Mutex::new(Locked(e))));
    if inline {
        let _ = shared.inline.set(Arc::clone(&core));
    }
    let _ = ready.send(Ok(()));
    let r = main_loop(&core, &ring);
    let leftover = {
        let mut g = core.lock();
        g.0.disarm_wake();
        std::mem::take(&mut g.0.ready)
    };
    run_ready(leftover);
    r
}

/// The engine thread: each turn, under the lock, take commands, dispatch and put the ring's
/// new entries to the kernel; then, without it, run the finished callbacks and sleep until a
/// completion, a timer or a wake-up.
fn main_loop(core: &Core, ring: &IoUring) -> io::Result<()> {
    loop {
        let mut g = core.lock();
        let e = &mut g.0;
        if let Some(err) = e.fatal.take() {
            return Err(err);
        }
        e.drain();
        e.release_due();
        e.dispatch()?;
        if e.shutting && e.blk.is_idle() && !e.blk.switching() {
            let ready = std::mem::take(&mut e.ready);
            drop(g);
            run_ready(ready);
            return Ok(());
        }
        e.arm_wake()?;
        if e.connected {
            e.shared.asleep.store(true, Ordering::SeqCst);
            match e.rx.try_recv() {
                Ok(c) => {
                    e.shared.asleep.store(false, Ordering::SeqCst);
                    e.command(c);
                    continue;
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    e.shared.asleep.store(false, Ordering::SeqCst);
                    e.connected = false;
                    e.shutting = true;
                    continue;
                }
            }
        }
        let mut wake = e.blk.poll_timeout();
        if let Some(emu) = &mut e.emu {
            emu.arrivals.waiting();
            if let Some(&Reverse((due, _, _))) = emu.held.peek() {
                let now = Nanos(e.t0.elapsed().as_nanos() as u64);
                let spin = Nanos(SPIN.as_nanos() as u64);
                if due.saturating_sub(now) <= spin {
                    // Close to a completion's time: watch the clock rather than trust a
                    // timer's wake-up (see `emulate::SPIN`).
                    e.shared.asleep.store(false, Ordering::SeqCst);
                    while Nanos(e.t0.elapsed().as_nanos() as u64) < due {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                let early = due - spin;
                wake = Some(wake.map_or(early, |w| w.min(early)));
            }
        }
        let timeout = wake.map(|u| {
            let now = e.now();
            Duration::from_nanos(u.as_ns().saturating_sub(now.as_ns()))
        });
        // What this turn queued goes to the kernel now: the wait below runs without the
        // lock, and another thread may touch the queues meanwhile.
        e.submit_queued()?;
        e.sleeping = Some(wake);
        let ready = std::mem::take(&mut e.ready);
        drop(g);
        run_ready(ready);
        let r = crate::uring::enter(ring, 1, timeout);
        let mut g = core.lock();
        let e = &mut g.0;
        e.sleeping = None;
        e.shared.asleep.store(false, Ordering::SeqCst);
        r?;
        e.reap();
        // The callbacks run after the next turn's dispatching, without the lock. Running
        // them here, first, was tried (mount4): 1 MiB O_DIRECT writes at depth 8 through the
        // mount went 10-20% slower (docs/mount.md).
    }
}

impl Engine {
    fn now(&self) -> Nanos {
        Nanos(self.t0.elapsed().as_nanos() as u64)
    }

    /// Take every command waiting in the channel.
    fn drain(&mut self) {
        while self.connected {
            match self.rx.try_recv() {
                Ok(c) => self.command(c),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.connected = false;
                    self.shutting = true;
                }
            }
        }
    }

    /// Wake the engine thread (through the eventfd read armed in the ring).
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.shared.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// After an inline submission: wake the sleeping engine thread if the scheduler's timer
    /// is now earlier than the one it sleeps until.
    fn nudge(&self) {
        if let Some(until) = self.sleeping {
            let want = self.blk.poll_timeout();
            let earlier = match (want, until) {
                (Some(w), Some(u)) => w < u,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if earlier {
                self.wake();
            }
        }
    }

    fn command(&mut self, c: Cmd) {
        match c {
            Cmd::Register(id, file) => {
                let place = match (&self.emu, file.metadata()) {
                    (Some(_), Ok(m)) => {
                        use std::os::unix::fs::MetadataExt;
                        ((m.dev(), m.ino()), m.len().div_ceil(SECTOR_BYTES))
                    }
                    // Without its identity a file is placed on its own (by its id).
                    _ => ((u64::MAX, u64::from(id.0)), 0),
                };
                self.files.insert(
                    id,
                    FileEntry {
                        file,
                        place,
                        outstanding: 0,
                        closing: false,
                    },
                );
            }
            Cmd::Unregister(id) => {
                if let Some(f) = self.files.get_mut(&id) {
                    f.closing = true;
                    if f.outstanding == 0 {
                        self.files.remove(&id);
                    }
                }
            }
            Cmd::Submit(io, done, queued) => {
                if self.shutting {
                    let buf = match io.op {
                        IoOp::Write { data } => data,
                        _ => AlignedBuf::new(0),
                    };
                    self.ready
                        .push((done, Completion::refused(super::shut_down(), buf)));
                } else {
                    self.insert(io, done, queued);
                }
            }
            Cmd::Exit(ctx) => {
                let now = self.now();
                self.blk.handle_exit(ctx, now);
            }
            Cmd::SetTunable(name, value, reply) => {
                let _ = reply.send(self.blk.scheduler_mut().set_tunable(&name, value));
            }
            Cmd::Switch(build, reply) => match build() {
                Ok(s) => {
                    self.blk.switch_scheduler(s);
                    if let Some(earlier) = self.switch_reply.replace(reply) {
                        // A later switch wins; the earlier requester learns it was replaced.
                        let _ = earlier.send(Err(TunableError::Invalid {
                            reason: "replaced by a later scheduler switch".into(),
                        }));
                    }
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            Cmd::Shutdown => self.shutting = true,
        }
    }

    /// Check `io` (submitted at `queued`), cut it into pieces and insert them (or hold them
    /// during a switch).
    fn insert(&mut self, io: Io, done: Callback, queued: Instant) {
        let started = Instant::now();
        let (kind, buf) = match io.op {
            IoOp::Read { len } => (Kind::Read, AlignedBuf::new(len)),
            IoOp::Write { data } => (Kind::Write, data),
            IoOp::Fsync { datasync } => (Kind::Fsync { datasync }, AlignedBuf::new(0)),
        };
        let len = buf.len();
        let data = matches!(kind, Kind::Read | Kind::Write);
        let errno = match self.files.get(&io.file) {
            Some(f) if !f.closing => {
                if data
                    && (!io.offset.is_multiple_of(SECTOR_BYTES)
                        || !(len as u64).is_multiple_of(SECTOR_BYTES))
                {
                    Some(libc::EINVAL)
                } else {
                    None
                }
            }
            _ => Some(libc::EBADF),
        };
        if let Some(errno) = errno {
            let c = Completion::refused(io::Error::from_raw_os_error(errno), buf);
            return self.ready.push((done, c));
        }
        if data && len == 0 {
            let c = Completion {
                result: Ok(0),
                buf,
                latency: Duration::ZERO,
            };
            return self.ready.push((done, c));
        }
        let sectors = (len as u64 / SECTOR_BYTES) as u32;
        let (op, sync) = match kind {
            Kind::Read => (Op::Read, true),
            Kind::Write => (Op::Write, io.sync),
            Kind::Fsync { .. } => (Op::Flush, true),
        };
        let base = u64::from(io.file.0) << FILE_SPAN_SHIFT;
        let sector = base + io.offset / SECTOR_BYTES;
        let now = self.now();
        let queued_at = Nanos(queued.saturating_duration_since(self.t0).as_nanos() as u64);
        let bio = Bio {
            ctx: io.ctx,
            group: io.group,
            op,
            sync,
            meta: io.meta,
            idle_hint: io.idle_hint && kind == Kind::Write,
            sector,
            sectors,
            prio: io.prio,
            submitted: None,
            own_request: false,
            issue_directly: false,
            insertion_merge: false,
            cpu: 0,
        };
        let id = self.next_parent;
        self.next_parent += 1;
        self.parents.insert(
            id,
            Parent {
                kind,
                file: io.file,
                sector,
                buf,
                done: Some(done),
                error: None,
                valid: len,
                started,
                queued_at,
            },
        );
        if let Some(f) = self.files.get_mut(&io.file) {
            f.outstanding += 1;
        }
        self.blk.handle_submit(bio, id, now);
        self.publish_stats();
    }

    fn publish_stats(&self) {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .publish(self.blk.stat(), self.t0);
    }

    fn dispatch(&mut self) -> io::Result<()> {
        self.dispatch_first(false).map(|_| ())
    }

    /// Put the ring's new entries to the kernel, if there are any (an empty submission would
    /// still cost a system call).
    fn submit_queued(&self) -> io::Result<()> {
        // SAFETY: under the engine's lock (see `push`).
        if !unsafe { self.ring.submission_shared() }.is_empty() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Dispatch what the scheduler gives while the device has room. With `sync_first`, the
    /// first request, if nothing else is in flight and it is a read of one bio, is not put
    /// in the ring but returned, for the caller to do itself ([`SyncIo`]).
    fn dispatch_first(&mut self, sync_first: bool) -> io::Result<Option<SyncIo>> {
        let now = self.now();
        self.blk.handle_timeout(now);
        let was_switching = self.blk.switching();
        let mut sync_ok = sync_first && self.in_ring == 0 && self.emu.is_none();
        let mut sync = None;
        while self.in_ring < self.capacity {
            let Some(rq) = self.blk.poll_dispatch(now) else {
                break;
            };
            if let Some(s) = self.submit(rq, sync_ok)? {
                sync = Some(s);
            }
            sync_ok = false;
        }
        if was_switching && !self.blk.switching() {
            *self
                .shared
                .scheduler
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = self.blk.scheduler().name();
            // The layer swapped within the loop above and gave the new scheduler the held
            // bios; what it dispatched is already in the ring.
            if let Some(reply) = self.switch_reply.take() {
                let _ = reply.send(Ok(()));
            }
        }
        Ok(sync)
    }

    /// Put a dispatched request in the ring: one read or write over its bio's buffer, or one
    /// readv or writev over the buffers of the bios merged into it, in sector order. With
    /// `sync_ok`, a read of one bio is returned instead, to be done by the caller.
    fn submit(&mut self, rq: Request, sync_ok: bool) -> io::Result<Option<SyncIo>> {
        let id = rq.id.0;
        // The layer refuses (panics on) a request the scheduler was never given.
        let mut segs: Vec<(u64, u64, u32)> = self
            .blk
            .segments(rq.id)
            .expect("the block layer dispatches only requests it holds")
            .map(|s| (s.token, s.sector, s.sectors))
            .collect();
        segs.sort_unstable_by_key(|s| s.1);
        let first = &self.parents[&segs[0].0];
        let (kind, file) = (first.kind, first.file);
        if segs.iter().any(|s| self.parents[&s.0].file != file) {
            return Err(io::Error::other(format!(
                "request {id} spans two files; the block layer merged across a file boundary"
            )));
        }
        let fd = types::Fd(
            self.files
                .get(&file)
                .expect("a file with outstanding I/O stays open")
                .file
                .as_raw_fd(),
        );
        let base = u64::from(file.0) << FILE_SPAN_SHIFT;
        let offset = (rq.sector - base) * SECTOR_BYTES;
        // Where each bio's bytes are: (pointer into its parent's buffer, length).
        let mut parts: Vec<(*mut u8, usize)> = Vec::with_capacity(segs.len());
        for &(parent, sector, sectors) in &segs {
            let p = self
                .parents
                .get_mut(&parent)
                .expect("a queued bio has its parent");
            let buf_off = ((sector - p.sector) * SECTOR_BYTES) as usize;
            let len = sectors as usize * SECTOR_BYTES as usize;
            debug_assert!(buf_off + len <= p.buf.len());
            // SAFETY (for the pointer): the parent's buffer lives in `self.parents` until its
            // bio has completed, and its heap address never changes.
            parts.push((unsafe { p.buf.as_mut_ptr().add(buf_off) }, len));
        }
        if sync_ok && parts.len() == 1 && kind == Kind::Read {
            self.flights.insert(id, Flight { rq, _iov: None });
            self.in_ring += 1;
            return Ok(Some(SyncIo {
                id,
                fd: fd.0,
                ptr: parts[0].0,
                len: parts[0].1,
                offset,
            }));
        }
        let mut iov = None;
        let entry = match kind {
            Kind::Fsync { datasync } => {
                let flags = if datasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(fd).flags(flags).build()
            }
            Kind::Read if parts.len() == 1 => opcode::Read::new(fd, parts[0].0, parts[0].1 as u32)
                .offset(offset)
                .build(),
            Kind::Write if parts.len() == 1 => {
                opcode::Write::new(fd, parts[0].0, parts[0].1 as u32)
                    .offset(offset)
                    .build()
            }
            Kind::Read | Kind::Write => {
                let vecs: Box<[libc::iovec]> = parts
                    .iter()
                    .map(|&(base, len)| libc::iovec {
                        iov_base: base.cast(),
                        iov_len: len,
                    })
                    .collect();
                let (ptr, n) = (vecs.as_ptr(), vecs.len() as u32);
                iov = Some(vecs);
                if kind == Kind::Read {
                    opcode::Readv::new(fd, ptr, n).offset(offset).build()
                } else {
                    opcode::Writev::new(fd, ptr, n).offset(offset).build()
                }
            }
        }
        .user_data(id);
        if let Some(emu) = &mut self.emu {
            let (key, size) = self.files[&file].place;
            let mut on_drive = rq.clone();
            on_drive.sector = emu.layout.map(key, size, rq.sector - base);
            let now = Nanos(self.t0.elapsed().as_nanos() as u64);
            let at = emu.arrivals.arrival(now);
            let due = emu.model.service(&on_drive, at).max(at);
            if let Some(l) = &self.shared.lateness {
                l.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .record_service(due - at);
            }
            emu.due.insert(id, due);
        }
        self.flights.insert(id, Flight { rq, _iov: iov });
        self.push(entry)?;
        self.in_ring += 1;
        Ok(None)
    }

    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an entry points to outlives its completion (see `submit`
            // and `arm_wake`), and the loop never returns with an entry outstanding.
            // The queues are touched only under the engine's lock (`Core`), so one thread at
            // a time.
            if unsafe { self.ring.submission_shared().push(&entry).is_ok() } {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    fn arm_wake(&mut self) -> io::Result<()> {
        if self.wake_armed {
            return Ok(());
        }
        let fd = types::Fd(self.shared.wake.as_raw_fd());
        let ptr = (&mut *self.wake_buf as *mut u64).cast::<u8>();
        let entry = opcode::Read::new(fd, ptr, 8)
            .offset(0)
            .build()
            .user_data(WAKE_TOKEN);
        self.push(entry)?;
        self.wake_armed = true;
        Ok(())
    }

    /// Complete the armed eventfd read before `wake_buf` goes away.
    fn disarm_wake(&mut self) {
        while self.wake_armed {
            let one: u64 = 1;
            // SAFETY: writing 8 bytes from a live u64 to our eventfd.
            unsafe { libc::write(self.shared.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
            // SAFETY: under the engine's lock (see `reap`).
            if self.ring.submit_and_wait(1).is_err()
                && unsafe { self.ring.completion_shared() }.is_empty()
            {
                // The ring is unusable: leak the buffer rather than free it under the kernel.
                std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
                return;
            }
            self.reap();
        }
    }

    fn reap(&mut self) {
        // SAFETY: under the engine's lock, the one place that reads the completion queue.
        let cqes: Vec<(u64, i32)> = unsafe { self.ring.completion_shared() }
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        let ns = self.now();
        for (token, res) in cqes {
            if token == WAKE_TOKEN {
                self.wake_armed = false;
                continue;
            }
            if let Some(emu) = &mut self.emu {
                if let Some(&due) = emu.due.get(&token) {
                    if due > ns {
                        emu.held.push(Reverse((due, token, res)));
                        continue;
                    }
                    // The backing I/O came after the model's time: late by that much.
                    emu.due.remove(&token);
                    self.late(ns, due, true);
                }
            }
            self.complete(token, res, now);
        }
    }

    /// Record a completion of model time `due` delivered at `now`.
    fn late(&mut self, now: Nanos, due: Nanos, host_slow: bool) {
        if let Some(emu) = &mut self.emu {
            // Only a wake-up's lateness is taken back (see `emulate`'s module doc).
            emu.arrivals
                .delivered(now, if host_slow { now } else { due });
        }
        if let Some(l) = &self.shared.lateness {
            l.lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(now.saturating_sub(due), host_slow);
        }
    }

    /// Complete the held requests whose model time has come.
    fn release_due(&mut self) {
        loop {
            let ns = self.now();
            let Some(emu) = &mut self.emu else {
                return;
            };
            let Some(&Reverse((due, id, res))) = emu.held.peek() else {
                return;
            };
            if due > ns {
                return;
            }
            emu.held.pop();
            emu.due.remove(&id);
            self.late(ns, due, false);
            self.complete(id, res, Instant::now());
        }
    }

    fn complete(&mut self, id: u64, res: i32, now: Instant) {
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        self.in_ring -= 1;
        let rq = flight.rq;
        let ns = self.now();
        let mut done = std::mem::take(&mut self.done);
        self.blk.handle_complete(rq.id, res >= 0, ns, &mut done);
        self.publish_stats();
        for d in done.drain(..) {
            let parent = self
                .parents
                .get_mut(&d.token)
                .expect("a bio has its parent until it completes");
            if self.logging {
                let record = RequestRecord {
                    job: 0,
                    op: d.op,
                    sector: d.sector,
                    sectors: d.sectors,
                    queued: parent.queued_at,
                    inserted: d.submitted,
                    dispatched: d.dispatched,
                    tagged: d.tagged,
                    completed: ns,
                    ctx: d.ctx.0,
                    waiting: d.queued,
                    in_flight: d.in_flight,
                    merged: d.merged,
                };
                self.shared
                    .log
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .record(d.ctx, record);
            }
            let len = d.sectors as usize * SECTOR_BYTES as usize;
            if res < 0 {
                parent
                    .error
                    .get_or_insert(io::Error::from_raw_os_error(-res));
            } else if matches!(parent.kind, Kind::Read | Kind::Write) {
                // This bio's bytes start this far into the request; a short transfer leaves
                // its tail (or all of it) invalid.
                let at = ((d.sector - rq.sector) * SECTOR_BYTES) as usize;
                let got = (res as usize).saturating_sub(at).min(len);
                if got < len {
                    let buf_off = ((d.sector - parent.sector) * SECTOR_BYTES) as usize;
                    parent.valid = parent.valid.min(buf_off + got);
                }
            }
            if d.whole.is_none() {
                continue;
            }
            let mut p = self.parents.remove(&d.token).expect("just seen");
            if let Some(f) = self.files.get_mut(&p.file) {
                f.outstanding -= 1;
                if f.closing && f.outstanding == 0 {
                    self.files.remove(&p.file);
                }
            }
            let result = match p.error.take() {
                Some(e) => Err(e),
                None if matches!(p.kind, Kind::Fsync { .. }) => Ok(0),
                None => Ok(p.valid),
            };
            let latency = now.saturating_duration_since(p.started);
            if let Some(done) = p.done.take() {
                let c = Completion {
                    result,
                    buf: p.buf,
                    latency,
                };
                self.ready.push((done, c));
            }
        }
        self.done = done;
    }
}
