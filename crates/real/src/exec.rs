//! The run loop: jobs -> scheduler -> backend, on the real clock.
//!
//! One thread, one loop. Each turn it (1) polls every job that is runnable (started, woken by
//! a completion, or past its think time), submits what it issues to the block layer and, after
//! each job, (2) starts what the block layer dispatches while the backend has room and the
//! scheduler has something to say (after an insert or a completion, or once its `Idle { until }`
//! has passed),
//! (3) sleeps in the backend until a completion, the earliest timer (the scheduler's idle
//! deadline or a job's think time) or a stop request, and (4) feeds completions back to the
//! scheduler and the jobs with the time they were reaped. The loop holds no policy: the
//! scheduler alone decides what goes to the device and how much is outstanding; the backend's
//! capacity is only a generous ceiling.
//!
//! Time is [`Nanos`] since the executor started, from a monotonic clock. A request's latency is
//! measured from its insertion into the scheduler (when the job issued it) to its completion,
//! so time spent queued in our scheduler counts, as time in the kernel's scheduler counts in
//! fio's completion latency.
//!
//! The loop holds no block-layer logic either: each I/O a job issues is a bio submitted to the
//! [`BlockLayer`] (split at the limits, merged into a queued
//! request, counted), which the simulator drives the same way. A request carrying several
//! merged bios is one I/O at the device over one buffer, and completes each of its bios.
//!
//! **Job order.** fio runs each job in a thread of its own; none is favoured by its place in
//! the job file. The executor polls the runnable jobs of a turn in the order they became
//! runnable: by the time of the event that woke them (their start, the completion they waited
//! for, the end of their think time) and, among completions reaped together, in completion
//! order. Jobs woken at the same instant (every job of a phase at its start) are ordered by
//! draws from a generator seeded with [`RunOptions::seed`], so a run is reproducible and the
//! order still differs from seed to seed. The order matters: it is the order the scheduler
//! sees the requests inserted, hence which queue BFQ creates first.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use elevator_core::block::{BlockLayer, DiskStat, Done, Limits};
use elevator_core::{CtxId, GroupId, IoPrio, Nanos, Op, Request, Scheduler, SECTOR_BYTES};
use elevator_workload::metrics::{CompletionRecorder, JobMetrics};
use elevator_workload::{Action, IoSpec, Job};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::backend::{Backend, IoCompletion, IoKind, IoRequest};
use crate::buf::BufPool;
use crate::verify::{self, VerifyError, WrittenMap};

/// A byte range `[start, end)` on the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl ByteRange {
    /// Whether `[offset, offset + len)` lies inside.
    pub fn contains(&self, offset: u64, len: u64) -> bool {
        offset >= self.start && offset.checked_add(len).is_some_and(|e| e <= self.end)
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// One job to run, with what the executor needs to know about it.
pub struct RealJob {
    /// The name reports print.
    pub name: String,
    /// The workload.
    pub job: Box<dyn Job>,
    /// Its group (cgroup) in the scheduler's tree.
    pub group: GroupId,
    /// The group's path, for reports.
    pub group_path: String,
    /// Priority of its I/O unless an I/O names its own.
    pub prio: IoPrio,
    /// The region it declared: an I/O outside it is refused, never submitted.
    pub region: ByteRange,
    /// Jobs start phase by phase (fio's `stonewall`): every job of phase n finishes before
    /// phase n + 1 starts. Jobs of one phase start together, each `start_delay` after
    /// its phase (fio's `startdelay`).
    pub phase: u32,
    /// fio's `startdelay`: how long after its phase starts the job does; its figures count
    /// from then.
    pub start_delay: Nanos,
    /// The `RWF_*` flags its writes carry (fio's `sync=`: `RWF_SYNC` for O_SYNC, `RWF_DSYNC`
    /// for O_DSYNC), as the job's O_SYNC/O_DSYNC open would give each; 0 for none. A request
    /// merging several jobs' writes carries all their flags.
    pub rw_flags: i32,
}

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Stamp every written sector and check reads; read back everything written at the end.
    pub verify: bool,
    /// Set (by a signal handler) to stop: no new I/O, in-flight I/O drained, partial report.
    pub stop: Option<&'static AtomicBool>,
    /// Stop issuing after this long even if jobs are not done (a safety limit).
    pub time_limit: Option<Duration>,
    /// Identifies this run's data in verify stamps.
    pub run_id: u64,
    /// Orders jobs that become runnable at the same instant (see the module's "Job order").
    pub seed: u64,
    /// fio's `ramp_time`: I/O completed within this long of a job's start is left out of its
    /// figures, and its rates are over the time after it.
    pub ramp: Duration,
    /// Keep a [`RequestRecord`] of every request completed ([`RunReport::requests`]).
    pub request_log: bool,
    /// Count every request completed here as it completes, for a progress display that
    /// reads it from another thread.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Poll jobs woken at the same instant in the order they were given (as the simulator
    /// does) instead of by the seeded draw: for runs compared call by call with the simulator.
    pub ties_in_job_order: bool,
    /// The group tree the jobs' groups come from: the io controllers its groups configure
    /// (io.max, io.latency, io.cost) are installed at the block layer's rq_qos position
    /// ([`elevator_core::qos::chain`]). The root alone (the default): none.
    pub groups: elevator_core::GroupTree,
    /// Whether the target is non-rotational (an SSD), for the io controllers.
    pub non_rotational: bool,
}

/// Where the executor's time comes from: the monotonic clock ([`MonotonicClock`]) in a real
/// run, a test's own clock (advanced by its backend) in a run compared with the simulator.
pub trait Clock {
    /// Time since the run started.
    fn now(&self) -> Nanos;
}

/// The monotonic clock, from when it was made.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock(Instant);

impl MonotonicClock {
    /// A clock at zero now.
    pub fn start() -> MonotonicClock {
        MonotonicClock(Instant::now())
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Nanos {
        Nanos(self.0.elapsed().as_nanos() as u64)
    }
}

/// One request's way through the executor (`RunOptions::request_log`): when its job issued it
/// (inserted into our scheduler), when the scheduler dispatched it (handed to the backend) and
/// when it completed. Pieces of a split I/O are requests of their own. The submission engine
/// keeps the same record ([`crate::submit::RequestLog`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// Index of the job in the run's job list (in the submission engine's log, of the context
    /// in [`RequestLog::contexts`](crate::submit::RequestLog::contexts)).
    pub job: usize,
    /// What it did.
    pub op: Op,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Issued by its job (blktrace's Q). The executor inserts at once: the same as `inserted`.
    pub queued: Nanos,
    /// Inserted into the scheduler.
    pub inserted: Nanos,
    /// Dispatched by the scheduler, submitted to the backend.
    pub dispatched: Nanos,
    /// Got its tag ([`elevator_core::block::Done::tagged`]): its dispatch, unless the block
    /// layer keeps host tags or the policy scheduler tags (mq-deadline, kyber).
    pub tagged: Nanos,
    /// Completed (reaped).
    pub completed: Nanos,
    /// The issuing process (context) as the block layer saw it.
    pub ctx: u32,
    /// Requests in the scheduler just after it was inserted, itself included; for a merged
    /// bio, those when it merged.
    pub waiting: u32,
    /// Requests at the device just after it (or the request it rode on) was dispatched.
    pub in_flight: u32,
    /// Whether it merged into a queued request instead of being inserted.
    pub merged: bool,
}

/// One job's outcome.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// Job name.
    pub name: String,
    /// Group path.
    pub group: String,
    /// Its phase.
    pub phase: u32,
    /// What it did.
    pub metrics: JobMetrics,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The scheduler's name.
    pub scheduler: String,
    /// Per job, in the order given.
    pub jobs: Vec<JobReport>,
    /// When the run ended (time since the executor started).
    pub elapsed: Nanos,
    /// Whether a stop request ended it early.
    pub interrupted: bool,
    /// Requests issued but never dispatched because the run stopped early.
    pub abandoned: usize,
    /// Bytes read back and checked after the jobs (`verify` only).
    pub verified_bytes: u64,
    /// Every request completed, in completion order (`RunOptions::request_log` only).
    pub requests: Vec<RequestRecord>,
    /// The `/sys/block/<dev>/stat` counters of our block layer over the run.
    pub disk: DiskStat,
}

/// Why a run failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The device returned an error.
    Io {
        /// The job whose I/O failed.
        job: String,
        /// "read", "write" or "flush".
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The error.
        error: io::Error,
    },
    /// The device transferred fewer bytes than asked.
    Short {
        /// The job whose I/O came back short.
        job: String,
        /// "read" or "write".
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// Bytes transferred.
        got: u64,
    },
    /// The device refused a direct I/O (EINVAL) whose offset or length is not a multiple of
    /// its logical block size (`blkdev_dio_invalid`): a 512-byte `bs` on a device of
    /// 4096-byte sectors.
    Misaligned {
        /// The job whose I/O failed.
        job: String,
        /// "read" or "write".
        op: &'static str,
        /// Byte offset.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The device's logical block size, bytes.
        block: u32,
    },
    /// A job issued an I/O outside its declared region (or the target); it was not submitted.
    OutOfRegion {
        /// The job.
        job: String,
        /// Byte offset of the I/O.
        offset: u64,
        /// Its length.
        len: u64,
        /// Where the job may do I/O.
        region: ByteRange,
    },
    /// A job issued an operation the executor cannot perform.
    Unsupported {
        /// The job.
        job: String,
        /// The operation.
        op: Op,
    },
    /// Data read back was not what the run wrote.
    Verify(VerifyError),
    /// The backend itself failed (not a device error on one I/O).
    Backend(io::Error),
    /// Nothing in flight, nothing to wake for, yet work remains: a job or scheduler bug.
    Stalled {
        /// What was left.
        detail: String,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Io {
                job,
                op,
                offset,
                len,
                error,
            } => write!(
                f,
                "job {job}: {op} of {len} bytes at offset {offset} failed: {error}"
            ),
            RunError::Misaligned {
                job,
                op,
                offset,
                len,
                block,
            } => write!(
                f,
                "job {job}: {op} of {len} bytes at offset {offset} failed: Invalid argument \
                 (EINVAL): the device's logical block size is {block} bytes, and a direct I/O's \
                 offset and length must be multiples of it (give `bs` and offsets in \
                 multiples of {block})"
            ),
            RunError::Short {
                job,
                op,
                offset,
                len,
                got,
            } => write!(
                f,
                "job {job}: short {op}: {got} of {len} bytes at offset {offset}"
            ),
            RunError::OutOfRegion {
                job,
                offset,
                len,
                region,
            } => write!(
                f,
                "job {job}: refused an I/O of {len} bytes at offset {offset}, outside its region {region}"
            ),
            RunError::Unsupported { job, op } => {
                write!(f, "job {job}: the real executor cannot perform {op:?}")
            }
            RunError::Verify(e) => e.fmt(f),
            RunError::Backend(e) => write!(f, "I/O backend failed: {e}"),
            RunError::Stalled { detail } => write!(f, "run stalled: {detail}"),
        }
    }
}

impl std::error::Error for RunError {}

/// A failed run: the error, and what the run had done until then.
#[derive(Debug)]
pub struct RunFailure {
    /// The first error.
    pub error: RunError,
    /// The figures up to the failure (no I/O was left in flight).
    pub partial: Box<RunReport>,
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RunFailure {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Ready,
    Think(Nanos),
    Wait,
    Done,
}

struct Slot {
    name: String,
    job: Box<dyn Job>,
    group: GroupId,
    group_path: String,
    prio: IoPrio,
    region: ByteRange,
    phase: u32,
    start_delay: Nanos,
    /// `RWF_*` flags of its writes ([`RealJob::rw_flags`]).
    rw_flags: i32,
    state: State,
    /// While runnable: when it became runnable, for the order jobs are polled in.
    woke: WakeKey,
    metrics: JobMetrics,
    ctxs: BTreeMap<u32, (CtxId, bool)>,
    /// Records its completions in `metrics` (failed I/Os are not recorded).
    recorder: CompletionRecorder,
}

/// When a job became runnable: the event's time, then the completion's place among those
/// reaped together, then a seeded draw for jobs woken at the same instant otherwise.
type WakeKey = (Nanos, u64, u64);

struct Flight {
    rq: Request,
    /// The job of its first bio: the one named if it fails.
    job: usize,
    written_before: Option<Vec<bool>>,
}

fn op_name(kind: IoKind) -> &'static str {
    match kind {
        IoKind::Read => "read",
        IoKind::Write => "write",
        IoKind::Flush => "flush",
        IoKind::Discard { .. } => "discard",
    }
}

/// What a request of `op` and `bytes` does at the backend.
fn kind_of(op: Op, bytes: u64) -> IoKind {
    match op {
        Op::Read => IoKind::Read,
        Op::Write => IoKind::Write,
        Op::Flush => IoKind::Flush,
        Op::Discard => IoKind::Discard { len: bytes },
    }
}

/// The bytes of buffer an I/O of `kind` and `bytes` holds: none for a flush or a discard.
fn buffer_bytes(kind: IoKind, bytes: u64) -> u64 {
    match kind {
        IoKind::Read | IoKind::Write => bytes,
        IoKind::Flush | IoKind::Discard { .. } => 0,
    }
}

/// Wake at least this often to look at the stop flag, even when nothing else is due.
const STOP_POLL: Duration = Duration::from_millis(50);

/// The most bytes of data buffers the executor holds in flight: it dispatches no further
/// request while this many are at the device, however deep the device (a request larger than
/// this goes alone). The kernel needs no such bound (a request's pages are the program's own
/// and `max_sectors` splits it), but the executor allocates each request's buffer: without it
/// a trace of 64 writes of 64 MiB at one instant on a file (no `max_sectors`) would
/// hold 4 GiB at once and abort when memory ran out.
pub const MAX_IN_FLIGHT_BYTES: u64 = 1 << 30;

/// Run `jobs` through `sched` on `backend` until every job is done, a stop is requested, or an
/// I/O fails. Never returns with I/O in flight.
pub fn run<B: Backend>(
    backend: &mut B,
    sched: &mut dyn Scheduler,
    jobs: Vec<RealJob>,
    opts: &RunOptions,
) -> Result<RunReport, RunFailure> {
    run_with_clock(backend, &MonotonicClock::start(), sched, jobs, opts)
}

/// [`run`] with time from `clock` instead of the monotonic clock.
pub fn run_with_clock<B: Backend>(
    backend: &mut B,
    clock: &dyn Clock,
    sched: &mut dyn Scheduler,
    jobs: Vec<RealJob>,
    opts: &RunOptions,
) -> Result<RunReport, RunFailure> {
    let mut ex = Executor::new(backend, clock, sched, jobs, opts);
    ex.main_loop();
    if ex.error.is_none() && opts.verify && !ex.interrupted {
        ex.read_back();
    }
    ex.finish()
}

struct Executor<'a, B: Backend> {
    backend: &'a mut B,
    /// The block layer and the scheduler in it; a bio's token is (job, its tag).
    blk: BlockLayer<&'a mut dyn Scheduler, (usize, u64)>,
    opts: &'a RunOptions,
    clock: &'a dyn Clock,
    slots: Vec<Slot>,
    phases: Vec<u32>,
    phase_idx: usize,
    flights: HashMap<u64, Flight>,
    pool: BufPool,
    next_ctx: u32,
    /// Bios the last completion finished (kept to reuse its allocation).
    done: Vec<Done<(usize, u64)>>,
    stopping: bool,
    interrupted: bool,
    error: Option<RunError>,
    written: Option<WrittenMap>,
    write_seq: u64,
    verified_bytes: u64,
    target: ByteRange,
    /// Breaks ties between jobs woken at the same instant.
    order_rng: ChaCha8Rng,
    /// Completions reaped so far: their order among those reaped together.
    reaped: u64,
    requests: Vec<RequestRecord>,
    /// Requests handed to the backend in this turn of the main loop
    /// ([`Backend::submit_burst`]).
    sent_this_turn: usize,
    /// Bytes of the requests at the backend ([`MAX_IN_FLIGHT_BYTES`] bounds them).
    in_flight_bytes: u64,
}

impl<'a, B: Backend> Executor<'a, B> {
    fn new(
        backend: &'a mut B,
        clock: &'a dyn Clock,
        sched: &'a mut dyn Scheduler,
        jobs: Vec<RealJob>,
        opts: &'a RunOptions,
    ) -> Self {
        let mut phases: Vec<u32> = jobs.iter().map(|j| j.phase).collect();
        phases.sort_unstable();
        phases.dedup();
        let size = backend.size_bytes();
        let slots = jobs
            .into_iter()
            .map(|j| Slot {
                recorder: CompletionRecorder::new(j.job.as_ref()),
                name: j.name,
                job: j.job,
                group: j.group,
                group_path: j.group_path,
                prio: j.prio,
                region: j.region,
                phase: j.phase,
                start_delay: j.start_delay,
                rw_flags: j.rw_flags,
                state: State::Pending,
                woke: (Nanos::ZERO, 0, 0),
                metrics: JobMetrics::default(),
                ctxs: BTreeMap::new(),
            })
            .collect();
        let queue = backend.queue_limits();
        let mut limits = Limits::depth(backend.capacity());
        if let Some(m) = queue.max_sectors {
            limits = limits.max_sectors(m);
        }
        if let Some(n) = queue.max_segments {
            limits = limits.max_segments(n);
        }
        let mut blk = BlockLayer::new(sched, limits);
        let dev = elevator_core::qos::QosDevice {
            non_rotational: opts.non_rotational,
            queue_depth: limits.queue_depth,
            nr_requests: blk.nr_requests(),
        };
        blk.set_qos(elevator_core::qos::chain(&opts.groups, &dev));
        Executor {
            written: opts.verify.then(|| WrittenMap::new(size)),
            backend,
            blk,
            opts,
            clock,
            slots,
            phases,
            phase_idx: 0,
            flights: HashMap::new(),
            pool: BufPool::default(),
            // Contexts are numbered from 1, as the simulator numbers them.
            next_ctx: 1,
            done: Vec::new(),
            stopping: false,
            interrupted: false,
            error: None,
            write_seq: 0,
            verified_bytes: 0,
            target: ByteRange {
                start: 0,
                end: size,
            },
            order_rng: ChaCha8Rng::seed_from_u64(opts.seed),
            reaped: 0,
            requests: Vec::new(),
            sent_this_turn: 0,
            in_flight_bytes: 0,
        }
    }

    fn now(&self) -> Nanos {
        self.clock.now()
    }

    fn fail(&mut self, e: RunError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self.stopping = true;
    }

    fn start_phase(&mut self, now: Nanos) {
        let Some(&phase) = self.phases.get(self.phase_idx) else {
            return;
        };
        for s in self.slots.iter_mut().filter(|s| s.phase == phase) {
            s.state = if s.start_delay > Nanos::ZERO {
                State::Think(now.saturating_add(s.start_delay))
            } else {
                State::Ready
            };
            s.woke = (now, 0, self.order_rng.next_u64());
            if self.opts.ties_in_job_order {
                s.woke.2 = 0;
            }
            s.metrics.started = now
                .saturating_add(s.start_delay)
                .saturating_add(Nanos(self.opts.ramp.as_nanos() as u64));
        }
    }

    fn main_loop(&mut self) {
        let now = self.now();
        self.backend.begin(now);
        self.start_phase(now);
        let mut done = Vec::new();
        loop {
            let now = self.now();
            self.sent_this_turn = 0;
            if !self.stopping {
                if self
                    .opts
                    .stop
                    .as_ref()
                    .is_some_and(|f| f.load(Ordering::SeqCst))
                {
                    self.stopping = true;
                    self.interrupted = true;
                }
                if self
                    .opts
                    .time_limit
                    .is_some_and(|l| now.as_ns() >= l.as_nanos() as u64)
                {
                    self.stopping = true;
                }
            }
            let mut more = false;
            if !self.stopping {
                self.poll_jobs(now);
                more = self.dispatch(now);
            }
            let in_flight = self.backend.in_flight();
            if in_flight == 0 {
                if self.stopping || self.all_done() && self.blk.queued() == 0 {
                    break;
                }
                if let Some(detail) = self.stall(now) {
                    self.fail(RunError::Stalled { detail });
                    break;
                }
            }
            let timeout = if more {
                Some(Duration::ZERO)
            } else {
                self.timeout(now)
            };
            if let Err(e) = self.backend.wait(timeout, &mut done) {
                self.fail(RunError::Backend(e));
                // Whatever the backend still holds is released by its Drop, which waits.
                break;
            }
            let now = self.now();
            for c in done.drain(..) {
                self.complete(c, now);
            }
        }
    }

    fn all_done(&self) -> bool {
        self.slots.iter().all(|s| s.state == State::Done)
    }

    /// With nothing in flight: is anything still going to happen?
    fn stall(&self, now: Nanos) -> Option<String> {
        let waking = self.blk.poll_timeout().is_some()
            || self
                .slots
                .iter()
                .any(|s| matches!(s.state, State::Ready | State::Think(_)));
        if waking {
            return None;
        }
        let _ = now;
        let waiting: Vec<&str> = self
            .slots
            .iter()
            .filter(|s| s.state == State::Wait)
            .map(|s| s.name.as_str())
            .collect();
        Some(format!(
            "scheduler {} holds {} request(s) and dispatches none; jobs waiting: {}",
            self.blk.scheduler().name(),
            self.blk.queued(),
            if waiting.is_empty() {
                "none".to_string()
            } else {
                waiting.join(", ")
            }
        ))
    }

    fn timeout(&self, now: Nanos) -> Option<Duration> {
        let mut due = self.blk.poll_timeout();
        for s in &self.slots {
            if let State::Think(t) = s.state {
                due = Some(due.map_or(t, |d| d.min(t)));
            }
            if s.state == State::Ready {
                due = Some(now);
            }
        }
        if let Some(l) = self.opts.time_limit {
            let l = Nanos(l.as_nanos() as u64);
            due = Some(due.map_or(l, |d| d.min(l)));
        }
        let mut t = due.map(|d| Duration::from_nanos(d.saturating_sub(now).as_ns()));
        if self.opts.stop.is_some() {
            t = Some(t.map_or(STOP_POLL, |t| t.min(STOP_POLL)));
        }
        t
    }

    fn poll_jobs(&mut self, now: Nanos) {
        let mut due = Vec::new();
        loop {
            // In the order they became runnable, as independent threads would issue.
            due.clear();
            for (i, s) in self.slots.iter_mut().enumerate() {
                match s.state {
                    State::Ready => due.push((s.woke, i)),
                    State::Think(t) if now >= t => {
                        let draw = self.order_rng.next_u64();
                        let draw = if self.opts.ties_in_job_order { 0 } else { draw };
                        due.push(((t, 0, draw), i))
                    }
                    _ => {}
                }
            }
            due.sort_unstable();
            for &(_, i) in &due {
                self.poll_job(i, now);
                if self.stopping {
                    return;
                }
                // As a process's submission runs the hardware queue in the kernel
                // (blk_mq_submit_bio -> blk_mq_run_hw_queue), and as the simulator dispatches
                // after each job's turn: the next job's I/O finds the device as this one left it.
                self.dispatch(now);
            }
            // Advance to the next phase once every job of this one is done.
            let Some(&phase) = self.phases.get(self.phase_idx) else {
                return;
            };
            let phase_done = self
                .slots
                .iter()
                .filter(|s| s.phase == phase)
                .all(|s| s.state == State::Done);
            if !phase_done || self.phase_idx + 1 >= self.phases.len() {
                return;
            }
            self.phase_idx += 1;
            self.start_phase(now);
        }
    }

    /// The block layer's context for `spec` of job `i`, after checking that the run may do
    /// it: `None` (the run failed, with the reason) for an I/O outside the job's region or
    /// the target, or an operation the backend does not do.
    fn ctx_for(&mut self, i: usize, spec: &IoSpec) -> Option<CtxId> {
        let slot = &mut self.slots[i];
        let offset = spec.sector * SECTOR_BYTES;
        let len = u64::from(spec.sectors) * SECTOR_BYTES;
        // A discard destroys data as a write does: it too stays in the job's region.
        let moves_data = matches!(spec.op, Op::Read | Op::Write | Op::Discard);
        if moves_data && (!slot.region.contains(offset, len) || !self.target.contains(offset, len))
        {
            let region = slot.region;
            let job = slot.name.clone();
            self.fail(RunError::OutOfRegion {
                job,
                offset,
                len,
                region,
            });
            return None;
        }
        let next_ctx = &mut self.next_ctx;
        let (ctx, _) = *slot.ctxs.entry(spec.ctx).or_insert_with(|| {
            *next_ctx += 1;
            (CtxId(*next_ctx - 1), false)
        });
        Some(ctx)
    }

    fn poll_job(&mut self, i: usize, now: Nanos) {
        loop {
            let slot = &mut self.slots[i];
            let action = slot.job.poll(now);
            slot.recorder
                .reaped(&mut slot.metrics, slot.job.as_mut(), now);
            match action {
                Action::Issue(spec) => {
                    let Some(ctx) = self.ctx_for(i, &spec) else {
                        return;
                    };
                    let slot = &self.slots[i];
                    let bio = spec.bio(ctx, slot.group, slot.prio);
                    self.blk.handle_submit(bio, (i, spec.tag), now);
                }
                Action::Batch(specs) => {
                    // One submission call (`BlockLayer::handle_submit_call` plugs it); a
                    // refused I/O fails the run after the ones before it are submitted.
                    let mut bios = Vec::with_capacity(specs.len());
                    let mut refused = false;
                    for spec in specs {
                        let Some(ctx) = self.ctx_for(i, &spec) else {
                            refused = true;
                            break;
                        };
                        let slot = &self.slots[i];
                        bios.push((spec.bio(ctx, slot.group, slot.prio), (i, spec.tag)));
                    }
                    self.blk.handle_submit_call(bios, now);
                    if refused {
                        return;
                    }
                }
                Action::Exit { ctx } => {
                    if let Some((id, exited)) = self.slots[i].ctxs.get_mut(&ctx) {
                        if !*exited {
                            *exited = true;
                            self.blk.handle_exit(*id, now);
                        }
                    }
                }
                Action::Think { until } => {
                    self.slots[i].state = State::Think(until);
                    return;
                }
                Action::Wait => {
                    self.slots[i].state = State::Wait;
                    return;
                }
                Action::Done => {
                    let slot = &mut self.slots[i];
                    slot.state = State::Done;
                    slot.metrics.finished = Some(now);
                    for (id, exited) in slot.ctxs.values_mut() {
                        if !*exited {
                            *exited = true;
                            self.blk.handle_exit(*id, now);
                        }
                    }
                    return;
                }
            }
        }
    }

    /// Hand the backend what the block layer dispatches, up to its capacity and at most
    /// [`Backend::submit_burst`] requests in one turn of the main loop (this call and the ones
    /// before it in the turn); true if it stopped at that limit with room left
    /// (the caller then collects completions without waiting and comes back).
    fn dispatch(&mut self, now: Nanos) -> bool {
        self.blk.handle_timeout(now);
        let burst = self.backend.submit_burst().unwrap_or(usize::MAX).max(1);
        while self.backend.in_flight() < self.backend.capacity() {
            if self.sent_this_turn >= burst {
                return self.blk.queued() > 0;
            }
            if self.in_flight_bytes >= MAX_IN_FLIGHT_BYTES {
                // Completions make room; the requests wait in the scheduler meanwhile.
                return false;
            }
            let Some(rq) = self.blk.poll_dispatch(now) else {
                return false;
            };
            if !self.submit(rq) {
                return false;
            }
            self.sent_this_turn += 1;
        }
        false
    }

    /// Send a dispatched request to the backend; false if the run must stop.
    fn submit(&mut self, rq: Request) -> bool {
        let offset = rq.sector * SECTOR_BYTES;
        let kind = kind_of(rq.op, rq.bytes());
        let len = if kind == IoKind::Flush { 0 } else { rq.bytes() };
        let buf_len = buffer_bytes(kind, len);
        // Every bio it carries lies in its job's region, and together they are the request:
        // a scheduler that changed the request's range is refused before anything is touched.
        // The layer refuses (panics on) a request the scheduler was never given.
        let segments: Vec<(usize, u64, u32)> = self
            .blk
            .segments(rq.id)
            .expect("the block layer dispatches only requests it holds")
            .map(|s| (s.token.0, s.sector, s.sectors))
            .collect();
        let job = segments[0].0;
        if kind != IoKind::Flush {
            let covered: u64 = segments.iter().map(|s| u64::from(s.2)).sum();
            let first = segments.iter().map(|s| s.1).min().unwrap_or(rq.sector);
            let outside = segments.iter().find(|&&(j, sector, sectors)| {
                !self.slots[j]
                    .region
                    .contains(sector * SECTOR_BYTES, u64::from(sectors) * SECTOR_BYTES)
            });
            if first != rq.sector || covered != u64::from(rq.sectors) || outside.is_some() {
                let j = outside.map_or(job, |s| s.0);
                let slot = &self.slots[j];
                let e = RunError::OutOfRegion {
                    job: slot.name.clone(),
                    offset,
                    len,
                    region: slot.region,
                };
                self.fail(e);
                return false;
            }
        }
        let Some(mut buf) = self.pool.try_get(buf_len as usize) else {
            let e = io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "cannot allocate a buffer of {len} bytes for a {} at byte {offset} \
                     ({} bytes already in flight)",
                    op_name(kind),
                    self.in_flight_bytes
                ),
            );
            self.fail(RunError::Backend(e));
            return false;
        };
        let mut written_before = None;
        if let Some(map) = &mut self.written {
            match kind {
                IoKind::Write => {
                    self.write_seq += 1;
                    verify::stamp(&mut buf, offset, self.opts.run_id, self.write_seq);
                }
                IoKind::Read => {
                    written_before = Some(
                        (0..u64::from(rq.sectors))
                            .map(|s| map.get(rq.sector + s))
                            .collect(),
                    );
                }
                IoKind::Flush => {}
                IoKind::Discard { .. } => {
                    // Reads racing the discard no longer check these sectors (cleared again
                    // at its completion, after any write that completed meanwhile).
                    map.clear(rq.sector, u64::from(rq.sectors));
                }
            }
        }
        let token = rq.id.0;
        let rw_flags = if kind == IoKind::Write {
            segments.iter().fold(0, |f, s| f | self.slots[s.0].rw_flags)
        } else {
            0
        };
        let io = IoRequest {
            token,
            kind,
            offset,
            buf,
            rw_flags,
        };
        if let Err(e) = self.backend.submit_request(io, &rq) {
            self.fail(RunError::Backend(e));
            return false;
        }
        self.in_flight_bytes += buf_len;
        self.flights.insert(
            token,
            Flight {
                rq,
                job,
                written_before,
            },
        );
        true
    }

    fn complete(&mut self, c: IoCompletion, now: Nanos) {
        let Some(f) = self.flights.remove(&c.token) else {
            return;
        };
        let kind = kind_of(f.rq.op, f.rq.bytes());
        let offset = f.rq.sector * SECTOR_BYTES;
        let len = if kind == IoKind::Flush {
            0
        } else {
            f.rq.bytes()
        };
        self.in_flight_bytes -= buffer_bytes(kind, len);
        let name = || self.slots[f.job].name.clone();
        let block = self.backend.queue_limits().logical_block.filter(|&b| b > 0);
        let outcome = match c.result {
            Err(error)
                if error.raw_os_error() == Some(libc::EINVAL)
                    && block.is_some_and(|b| {
                        !offset.is_multiple_of(u64::from(b)) || !len.is_multiple_of(u64::from(b))
                    }) =>
            {
                Err(RunError::Misaligned {
                    job: name(),
                    op: op_name(kind),
                    offset,
                    len,
                    block: block.unwrap_or(0),
                })
            }
            Err(error) => Err(RunError::Io {
                job: name(),
                op: op_name(kind),
                offset,
                len,
                error,
            }),
            Ok(n) if matches!(kind, IoKind::Read | IoKind::Write) && n as u64 != len => {
                Err(RunError::Short {
                    job: name(),
                    op: op_name(kind),
                    offset,
                    len,
                    got: n as u64,
                })
            }
            Ok(_) => Ok(()),
        };
        let outcome = outcome.and_then(|()| match (&mut self.written, kind, &f.written_before) {
            (Some(map), IoKind::Write, _) => {
                map.set(f.rq.sector, u64::from(f.rq.sectors));
                Ok(())
            }
            (Some(map), IoKind::Discard { .. }, _) => {
                map.clear(f.rq.sector, u64::from(f.rq.sectors));
                Ok(())
            }
            (Some(_), IoKind::Read, Some(before)) => {
                verify::check(&c.buf, offset, self.opts.run_id, |i| before[i])
                    .map_err(RunError::Verify)
            }
            _ => Ok(()),
        });
        let mut done = std::mem::take(&mut self.done);
        self.blk
            .handle_complete(f.rq.id, outcome.is_ok(), now, &mut done);
        if let Err(e) = outcome {
            self.fail(e);
        }
        if let Some(p) = &self.opts.progress {
            p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        for d in done.drain(..) {
            let (job, tag) = d.token;
            if self.opts.request_log {
                self.requests.push(RequestRecord {
                    job,
                    op: d.op,
                    sector: d.sector,
                    sectors: d.sectors,
                    queued: d.submitted,
                    inserted: d.submitted,
                    dispatched: d.dispatched,
                    tagged: d.tagged,
                    completed: now,
                    ctx: d.ctx.0,
                    waiting: d.queued,
                    in_flight: d.in_flight,
                    merged: d.merged,
                });
            }
            // A piece of a split I/O: the job's I/O completes with its last piece.
            let Some(bytes) = d.whole else {
                continue;
            };
            let slot = &mut self.slots[job];
            if d.ok {
                slot.recorder.completed(
                    &mut slot.metrics,
                    slot.job.as_ref(),
                    tag,
                    d.op,
                    bytes,
                    d.submitted,
                    now,
                );
            }
            slot.job.complete(tag, now);
            self.reaped += 1;
            if matches!(slot.state, State::Wait | State::Think(_)) {
                slot.state = State::Ready;
                slot.woke = (now, self.reaped, 0);
            }
        }
        self.done = done;
        self.pool.put(c.buf);
    }

    /// Read back every sector the run wrote and check it, bypassing the scheduler.
    fn read_back(&mut self) {
        let Some(map) = self.written.take() else {
            return;
        };
        const CHUNK: u64 = 2048; // sectors: 1 MiB reads
        let mut pieces = Vec::new();
        for (first, count) in map.runs() {
            let mut s = first;
            while s < first + count {
                let n = CHUNK.min(first + count - s);
                pieces.push((s, n));
                s += n;
            }
        }
        let depth = 16.min(self.backend.capacity()).max(1);
        let mut next = 0;
        let mut outstanding: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut done = Vec::new();
        while (next < pieces.len() || !outstanding.is_empty()) && self.error.is_none() {
            if self
                .opts
                .stop
                .as_ref()
                .is_some_and(|f| f.load(Ordering::SeqCst))
            {
                self.interrupted = true;
                self.stopping = true;
            }
            while !self.stopping && next < pieces.len() && outstanding.len() < depth {
                let (s, n) = pieces[next];
                let token = u64::MAX - next as u64;
                next += 1;
                let buf = self.pool.get((n * SECTOR_BYTES) as usize);
                let io = IoRequest {
                    token,
                    kind: IoKind::Read,
                    offset: s * SECTOR_BYTES,
                    buf,
                    rw_flags: 0,
                };
                if let Err(e) = self.backend.submit(io) {
                    self.fail(RunError::Backend(e));
                    break;
                }
                outstanding.insert(token, (s, n));
            }
            if outstanding.is_empty() {
                break;
            }
            if let Err(e) = self.backend.wait(Some(STOP_POLL), &mut done) {
                self.fail(RunError::Backend(e));
                break;
            }
            for c in done.drain(..) {
                let Some((s, n)) = outstanding.remove(&c.token) else {
                    continue;
                };
                let (offset, len) = (s * SECTOR_BYTES, n * SECTOR_BYTES);
                let r = match c.result {
                    Err(error) => Err(RunError::Io {
                        job: "verify".into(),
                        op: "read",
                        offset,
                        len,
                        error,
                    }),
                    Ok(got) if got as u64 != len => Err(RunError::Short {
                        job: "verify".into(),
                        op: "read",
                        offset,
                        len,
                        got: got as u64,
                    }),
                    Ok(_) => verify::check(&c.buf, offset, self.opts.run_id, |_| true)
                        .map_err(RunError::Verify),
                };
                match r {
                    Ok(()) => self.verified_bytes += len,
                    Err(e) => self.fail(e),
                }
                self.pool.put(c.buf);
            }
        }
        // Drain whatever is left after an error or a stop.
        while !outstanding.is_empty() && self.backend.in_flight() > 0 {
            if self.backend.wait(Some(STOP_POLL), &mut done).is_err() {
                break;
            }
            for c in done.drain(..) {
                outstanding.remove(&c.token);
            }
        }
    }

    fn finish(self) -> Result<RunReport, RunFailure> {
        let elapsed = self.now();
        let report = RunReport {
            scheduler: self.blk.scheduler().name().to_string(),
            abandoned: self.blk.queued(),
            disk: *self.blk.stat(),
            jobs: self
                .slots
                .into_iter()
                .map(|s| JobReport {
                    name: s.name,
                    group: s.group_path,
                    phase: s.phase,
                    metrics: s.metrics,
                })
                .collect(),
            elapsed,
            interrupted: self.interrupted,
            verified_bytes: self.verified_bytes,
            requests: self.requests,
        };
        match self.error {
            None => Ok(report),
            Some(error) => Err(RunFailure {
                error,
                partial: Box::new(report),
            }),
        }
    }
}
