//! The engine thread: commands in, scheduler decisions, io_uring, completions out.
//!
//! One loop. Each turn it (1) takes every command waiting in the channel (registrations,
//! submissions, tunables, a scheduler switch, shutdown) and inserts submitted I/O into the
//! scheduler, (2) completes a pending switch once the old scheduler is empty and nothing is in
//! flight, (3) asks the scheduler for dispatches while the ring has room and the scheduler has
//! something to say, and (4) sleeps in `io_uring_enter` until a completion, the scheduler's idle
//! deadline, or a submitter's write to the eventfd whose read stays armed in the ring.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use elevator_core::{
    Dispatch, Nanos, Op, Request, RequestId, Scheduler, TunableError, SECTOR_BYTES,
};
use io_uring::{opcode, types, IoUring};

use super::stat::StatKind;
use super::{Callback, Cmd, Completion, EngineOptions, FileId, Io, IoOp, SchedFactory, Shared};
use crate::buf::AlignedBuf;
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

impl Kind {
    fn stat(self) -> StatKind {
        match self {
            Kind::Read => StatKind::Read,
            Kind::Write => StatKind::Write,
            Kind::Fsync { .. } => StatKind::Flush,
        }
    }
}

struct FileEntry {
    file: File,
    /// Pieces of this file queued or in flight.
    outstanding: usize,
    closing: bool,
}

/// One submitted I/O, possibly cut into several pieces.
struct Parent {
    kind: Kind,
    buf: AlignedBuf,
    done: Option<Callback>,
    left: u32,
    error: Option<io::Error>,
    /// Bytes valid from the start of `buf`: the whole length unless a piece came back short.
    valid: usize,
    started: Instant,
}

/// One request the scheduler sees.
struct Piece {
    parent: u64,
    file: FileId,
    /// Where its bytes are in the parent's buffer.
    buf_off: usize,
    len: usize,
    offset: u64,
    inserted: Instant,
    /// The request as dispatched, once it is in the ring.
    dispatched: Option<Request>,
    /// For the request log: submitted by its issuer, inserted into the scheduler (later when
    /// held by a switch), dispatched.
    queued_at: Nanos,
    inserted_at: Nanos,
    dispatched_at: Nanos,
}

struct Engine {
    ring: IoUring,
    shared: Arc<Shared>,
    sched: Box<dyn Scheduler>,
    t0: Instant,
    files: HashMap<FileId, FileEntry>,
    parents: HashMap<u64, Parent>,
    pieces: HashMap<u64, Piece>,
    next_id: u64,
    in_ring: usize,
    capacity: usize,
    kick: bool,
    idle_until: Option<Nanos>,
    /// A switch waiting for the old scheduler to drain, and its requester.
    switch: Option<(Box<dyn Scheduler>, Reply)>,
    /// Requests held while a switch is pending (the frozen queue).
    held: VecDeque<Request>,
    wake_buf: Box<u64>,
    wake_armed: bool,
    shutting: bool,
    /// Whether completions go into the shared request log.
    logging: bool,
}

pub(super) fn run(
    build: SchedFactory,
    opts: EngineOptions,
    rx: Receiver<Cmd>,
    shared: Arc<Shared>,
    ready: Sender<io::Result<()>>,
) -> io::Result<()> {
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
    let capacity = ring.params().sq_entries() as usize - 1;
    let logging = opts.request_log > 0;
    let mut e = Engine {
        ring,
        shared,
        sched,
        t0: Instant::now(),
        files: HashMap::new(),
        parents: HashMap::new(),
        pieces: HashMap::new(),
        next_id: 1,
        in_ring: 0,
        capacity,
        kick: false,
        idle_until: None,
        switch: None,
        held: VecDeque::new(),
        wake_buf: Box::new(0),
        wake_armed: false,
        shutting: false,
        logging,
    };
    let _ = ready.send(Ok(()));
    let r = e.main_loop(&rx);
    e.disarm_wake();
    r
}

impl Engine {
    fn now(&self) -> Nanos {
        Nanos(self.t0.elapsed().as_nanos() as u64)
    }

    fn main_loop(&mut self, rx: &Receiver<Cmd>) -> io::Result<()> {
        let mut connected = true;
        loop {
            while connected {
                match rx.try_recv() {
                    Ok(c) => self.command(c),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        connected = false;
                        self.shutting = true;
                    }
                }
            }
            self.maybe_switch();
            self.dispatch()?;
            if self.shutting
                && self.pieces.is_empty()
                && self.held.is_empty()
                && self.switch.is_none()
            {
                return Ok(());
            }
            self.arm_wake()?;
            if connected {
                self.shared.asleep.store(true, Ordering::SeqCst);
                match rx.try_recv() {
                    Ok(c) => {
                        self.shared.asleep.store(false, Ordering::SeqCst);
                        self.command(c);
                        continue;
                    }
                    Err(TryRecvError::Empty) => {}
                    Err(TryRecvError::Disconnected) => {
                        self.shared.asleep.store(false, Ordering::SeqCst);
                        connected = false;
                        self.shutting = true;
                        continue;
                    }
                }
            }
            let timeout = self.idle_until.map(|u| {
                let now = self.now();
                Duration::from_nanos(u.as_ns().saturating_sub(now.as_ns()))
            });
            let r = match timeout {
                Some(t) => {
                    let ts = types::Timespec::new()
                        .sec(t.as_secs())
                        .nsec(t.subsec_nanos());
                    let args = types::SubmitArgs::new().timespec(&ts);
                    self.ring.submitter().submit_with_args(1, &args)
                }
                None => self.ring.submit_and_wait(1),
            };
            self.shared.asleep.store(false, Ordering::SeqCst);
            match r {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(e) => return Err(e),
            }
            self.reap();
        }
    }

    fn command(&mut self, c: Cmd) {
        match c {
            Cmd::Register(id, file) => {
                self.files.insert(
                    id,
                    FileEntry {
                        file,
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
                    done(Completion::refused(super::shut_down(), buf));
                } else {
                    self.insert(io, done, queued);
                }
            }
            Cmd::Exit(ctx) => {
                let now = self.now();
                self.sched.exit(ctx, now);
            }
            Cmd::SetTunable(name, value, reply) => {
                let _ = reply.send(self.sched.set_tunable(&name, value));
                self.kick = true;
            }
            Cmd::Switch(build, reply) => match build() {
                Ok(s) => {
                    if let Some((_, earlier)) = self.switch.replace((s, reply)) {
                        // A later switch wins; the earlier requester learns it was replaced.
                        let _ = earlier.send(Err(TunableError::Invalid {
                            reason: "replaced by a later scheduler switch".into(),
                        }));
                    }
                    self.kick = true;
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
            return done(Completion::refused(
                io::Error::from_raw_os_error(errno),
                buf,
            ));
        }
        if data && len == 0 {
            return done(Completion {
                result: Ok(0),
                buf,
                latency: Duration::ZERO,
            });
        }
        let sectors_total = (len as u64 / SECTOR_BYTES) as u32;
        let (op, sync) = match kind {
            Kind::Read => (Op::Read, true),
            Kind::Write => (Op::Write, io.sync),
            Kind::Fsync { .. } => (Op::Flush, true),
        };
        let base = u64::from(io.file.0) << FILE_SPAN_SHIFT;
        let now = self.now();
        let queued_at = Nanos(queued.saturating_duration_since(self.t0).as_nanos() as u64);
        let whole = Request {
            id: RequestId(0),
            ctx: io.ctx,
            group: io.group,
            op,
            sync,
            meta: io.meta,
            idle_hint: io.idle_hint && kind == Kind::Write,
            sector: base + io.offset / SECTOR_BYTES,
            sectors: sectors_total,
            prio: io.prio,
            submitted: now,
        };
        let max = self
            .sched
            .max_request_sectors()
            .filter(|&m| data && m > 0 && sectors_total > m)
            .unwrap_or(sectors_total.max(1));
        let parent_id = self.next_id;
        let mut count = 0;
        let parts: Vec<Request> = if data {
            whole.pieces(max).collect()
        } else {
            vec![whole]
        };
        for mut part in parts {
            let id = self.next_id;
            self.next_id += 1;
            part.id = RequestId(id);
            let first = io.offset / SECTOR_BYTES;
            let buf_off = ((part.sector - base - first) * SECTOR_BYTES) as usize;
            self.pieces.insert(
                id,
                Piece {
                    parent: parent_id,
                    file: io.file,
                    buf_off,
                    len: part.bytes() as usize,
                    offset: io.offset + buf_off as u64,
                    inserted: started,
                    dispatched: None,
                    queued_at,
                    inserted_at: now,
                    dispatched_at: now,
                },
            );
            if let Some(f) = self.files.get_mut(&io.file) {
                f.outstanding += 1;
            }
            count += 1;
            self.shared
                .stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .inserted(started);
            if self.switch.is_some() {
                self.held.push_back(part);
            } else {
                self.sched.insert(part, now);
            }
        }
        self.parents.insert(
            parent_id,
            Parent {
                kind,
                buf,
                done: Some(done),
                left: count,
                error: None,
                valid: len,
                started,
            },
        );
        self.kick = true;
    }

    fn maybe_switch(&mut self) {
        if self.switch.is_none() || self.sched.queued() > 0 || self.in_ring > 0 {
            return;
        }
        let (new, reply) = self.switch.take().expect("checked");
        self.sched = new;
        *self
            .shared
            .scheduler
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self.sched.name();
        let now = self.now();
        for rq in self.held.drain(..) {
            if let Some(p) = self.pieces.get_mut(&rq.id.0) {
                p.inserted_at = now;
            }
            self.sched.insert(rq, now);
        }
        self.idle_until = None;
        self.kick = true;
        let _ = reply.send(Ok(()));
    }

    fn dispatch(&mut self) -> io::Result<()> {
        let now = self.now();
        if self.idle_until.is_some_and(|u| now >= u) {
            self.kick = true;
        }
        if !self.kick {
            return Ok(());
        }
        self.kick = false;
        self.idle_until = None;
        while self.in_ring < self.capacity {
            match self.sched.dispatch(now) {
                Dispatch::Request(rq) => self.submit(rq, now)?,
                Dispatch::Idle { until } => {
                    self.idle_until = Some(until.max(now));
                    break;
                }
                Dispatch::Empty => break,
            }
        }
        Ok(())
    }

    fn submit(&mut self, rq: Request, now: Nanos) -> io::Result<()> {
        let id = rq.id.0;
        let Some(piece) = self.pieces.get_mut(&id) else {
            // A scheduler handing out a request it was never given: a policy bug. Completing
            // it is impossible; say so loudly rather than touch the disk.
            return Err(io::Error::other(format!(
                "scheduler {} dispatched request {id} that was never inserted (or twice)",
                self.sched.name()
            )));
        };
        let parent = self
            .parents
            .get_mut(&piece.parent)
            .expect("piece has parent");
        let fd = types::Fd(
            self.files
                .get(&piece.file)
                .expect("a file with outstanding I/O stays open")
                .file
                .as_raw_fd(),
        );
        // SAFETY (for the pointer): the parent's buffer lives in `self.parents` until every
        // piece has completed, and its heap address never changes.
        let ptr = unsafe { parent.buf.as_mut_ptr().add(piece.buf_off) };
        let len = piece.len as u32;
        let entry = match parent.kind {
            Kind::Read => opcode::Read::new(fd, ptr, len).offset(piece.offset).build(),
            Kind::Write => opcode::Write::new(fd, ptr, len)
                .offset(piece.offset)
                .build(),
            Kind::Fsync { datasync } => {
                let flags = if datasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(fd).flags(flags).build()
            }
        }
        .user_data(id);
        piece.dispatched = Some(rq);
        piece.dispatched_at = now;
        self.push(entry)?;
        self.in_ring += 1;
        Ok(())
    }

    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an entry points to outlives its completion (see `submit`
            // and `arm_wake`), and the loop never returns with an entry outstanding.
            if unsafe { self.ring.submission().push(&entry).is_ok() } {
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
            if self.ring.submit_and_wait(1).is_err() && self.ring.completion().is_empty() {
                // The ring is unusable: leak the buffer rather than free it under the kernel.
                std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
                return;
            }
            self.reap();
        }
    }

    fn reap(&mut self) {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        for (token, res) in cqes {
            if token == WAKE_TOKEN {
                self.wake_armed = false;
                continue;
            }
            self.complete(token, res, now);
        }
    }

    fn complete(&mut self, id: u64, res: i32, now: Instant) {
        let Some(piece) = self.pieces.remove(&id) else {
            return;
        };
        self.in_ring -= 1;
        self.kick = true;
        let rq = piece.dispatched.expect("a completed piece was dispatched");
        let ns = self.now();
        self.sched.complete(&rq, ns);
        if self.logging {
            let record = RequestRecord {
                job: 0,
                op: rq.op,
                sector: rq.sector,
                sectors: rq.sectors,
                queued: piece.queued_at,
                inserted: piece.inserted_at,
                dispatched: piece.dispatched_at,
                completed: ns,
            };
            self.shared
                .log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(rq.ctx, record);
        }
        let parent = self
            .parents
            .get_mut(&piece.parent)
            .expect("piece has parent");
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .completed(
                parent.kind.stat(),
                u64::from(rq.sectors),
                now.saturating_duration_since(piece.inserted),
                now,
            );
        if res < 0 {
            parent
                .error
                .get_or_insert(io::Error::from_raw_os_error(-res));
        } else if parent.kind != Kind::Read && parent.kind != Kind::Write {
            // fsync: nothing transferred.
        } else if (res as usize) < piece.len {
            parent.valid = parent.valid.min(piece.buf_off + res as usize);
        }
        if let Some(f) = self.files.get_mut(&piece.file) {
            f.outstanding -= 1;
            if f.closing && f.outstanding == 0 {
                self.files.remove(&piece.file);
            }
        }
        parent.left -= 1;
        if parent.left > 0 {
            return;
        }
        let mut p = self.parents.remove(&piece.parent).expect("just seen");
        let result = match p.error.take() {
            Some(e) => Err(e),
            None if matches!(p.kind, Kind::Fsync { .. }) => Ok(0),
            None => Ok(p.valid),
        };
        let latency = now.saturating_duration_since(p.started);
        if let Some(done) = p.done.take() {
            done(Completion {
                result,
                buf: p.buf,
                latency,
            });
        }
    }
}
