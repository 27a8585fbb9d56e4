//! Emulated devices: a device model's timing on the real clock, over a backing store.
//!
//! An emulated device keeps its data in a backing file (or, behind the mount, the backing
//! directory's files) and completes each request at the time a device model says, on the
//! real clock: the model (a [`ServiceModel`]: the simulator's HDD or SSD, adapted by the CLI)
//! is handed every dispatched request with the time it reached the device, advances its own
//! queue, cache, head and rotation, and answers with the completion time; the backing I/O is
//! started at once and its completion is held until that time. Real programs and real jobs
//! then see the drive the model describes (a 2003 laptop disk, a 2009 disk, an SSD) whatever
//! the host's own disk is.
//!
//! **The emulator's own error** is how late each completion was delivered against the
//! model's time: the timer's wake-up, a CPU the host did not give in time, or backing I/O
//! slower than the modelled drive. [`Lateness`] keeps every one; its [`Summary`] gives the
//! median, p99 and maximum and a [`Verdict`]: faithful, a warning, or a host that could not
//! keep up.
//!
//! **The host's own latency is subtracted where it can be measured.** A completion delivered
//! late by `L` makes the loop's next dispatch late by `L` too; in the simulator that dispatch
//! would have happened at the completion's own time. So a request dispatched in the same turn
//! as a delivery is given to the model as having arrived `L` earlier (never before the model's
//! previous arrival, never before the delivered completion's time): the model's device runs on
//! the model's time, and one late wake-up does not push every later request back. Only a
//! wake-up's lateness is taken back: when the backing I/O itself came after the model's time,
//! the host is slower than the drive, and the model is not held back for it (its time would
//! fall further behind the real clock with every request).
//!
//! - [`Emulated`]: a [`Backend`] for the job executor ([`crate::run_with_clock`]).
//! - [`Layout`]: where files behind the mount lie on the emulated drive (the submission
//!   engine's files each have their own sector space, a drive has one).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::io;
use std::time::Duration;

use elevator_core::{CtxId, GroupId, IoPrio, Nanos, Op, Request, RequestId, SECTOR_BYTES};

use crate::backend::{Backend, IoCompletion, IoKind, IoRequest};
use crate::exec::Clock;

/// A device model driven on the real clock: the simulator's drives implement it (through the
/// CLI's adapter), so this crate needs no simulator.
pub trait ServiceModel: Send {
    /// The drive's name, for reports.
    fn name(&self) -> &str;
    /// Requests the drive holds at once (1 for the rotational drives modelled here).
    fn depth(&self) -> usize;
    /// The drive's size in bytes.
    fn capacity_bytes(&self) -> u64;
    /// Whether the drive needs no positioning (an SSD).
    fn non_rotational(&self) -> bool;
    /// Accept `rq`, arriving at `now` (fewer than [`depth`](Self::depth) requests are
    /// outstanding), and say when it completes (never before `now`).
    fn service(&mut self, rq: &Request, now: Nanos) -> Nanos;
}

/// A model handed to the submission engine ([`crate::submit::EngineOptions::emulate`]),
/// which takes it on its own thread.
#[derive(Clone)]
pub struct SharedModel(std::sync::Arc<std::sync::Mutex<Option<Box<dyn ServiceModel>>>>);

impl SharedModel {
    /// Wrap `model`.
    pub fn new(model: Box<dyn ServiceModel>) -> SharedModel {
        SharedModel(std::sync::Arc::new(std::sync::Mutex::new(Some(model))))
    }

    /// Whether the drive is rotational (`None` once the engine has taken the model).
    pub fn rotational(&self) -> Option<bool> {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().map(|m| !m.non_rotational())
    }

    /// Take the model out (once; `None` after).
    pub fn take(&self) -> Option<Box<dyn ServiceModel>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl fmt::Debug for SharedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_tuple("SharedModel")
            .field(&g.as_ref().map(|m| m.name().to_string()))
            .finish()
    }
}

/// Median lateness above which the emulation is reported as imprecise (the figures still
/// the model's, give or take this).
pub const WARN_MEDIAN: Nanos = Nanos(50_000);
/// p99 lateness above which the emulation is reported as imprecise.
pub const WARN_P99: Nanos = Nanos(1_000_000);
/// The host did not keep up when the median lateness exceeds this fraction of the model's
/// mean service time (and [`WARN_MEDIAN`]): the figures are then the host's, not the model's.
pub const BEHIND_FRACTION: f64 = 0.25;

/// Every completion's lateness against the model, and the model's service times.
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    late_ns: Vec<u64>,
    /// Completions whose backing I/O finished after the model's time.
    host_slow: u64,
    service_sum: u128,
    services: u64,
}

impl Lateness {
    /// Record one completion delivered `late` after the model's time; `host_slow` if the
    /// backing I/O itself finished after it.
    pub fn record(&mut self, late: Nanos, host_slow: bool) {
        self.late_ns.push(late.as_ns());
        self.host_slow += u64::from(host_slow);
    }

    /// Record one service time the model gave (arrival to completion).
    pub fn record_service(&mut self, service: Nanos) {
        self.service_sum += u128::from(service.as_ns());
        self.services += 1;
    }

    /// The figures so far.
    pub fn summary(&self) -> Summary {
        let mut v = self.late_ns.clone();
        v.sort_unstable();
        let at = |q: f64| -> Nanos {
            if v.is_empty() {
                return Nanos::ZERO;
            }
            let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
            Nanos(v[i])
        };
        Summary {
            completions: v.len() as u64,
            median: at(0.5),
            p99: at(0.99),
            max: Nanos(v.last().copied().unwrap_or(0)),
            host_slow: self.host_slow,
            mean_service: Nanos(
                self.service_sum
                    .checked_div(u128::from(self.services))
                    .unwrap_or(0) as u64,
            ),
        }
    }
}

/// How late completions were against the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Completions delivered.
    pub completions: u64,
    /// Median lateness.
    pub median: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Largest.
    pub max: Nanos,
    /// Completions whose backing I/O finished after the model's time.
    pub host_slow: u64,
    /// The model's mean service time (arrival at the drive to completion).
    pub mean_service: Nanos,
}

/// What the lateness says about the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within [`WARN_MEDIAN`] and [`WARN_P99`].
    Faithful,
    /// Late beyond those bounds, but by little against the model's service times.
    Imprecise(String),
    /// The host did not keep up: the figures are not the model's.
    Behind(String),
}

impl Summary {
    /// Judge the run (see [`WARN_MEDIAN`], [`WARN_P99`], [`BEHIND_FRACTION`]).
    pub fn verdict(&self) -> Verdict {
        if self.completions == 0 {
            return Verdict::Faithful;
        }
        let behind_at = self.mean_service.as_ns() as f64 * BEHIND_FRACTION;
        if self.median > WARN_MEDIAN && self.median.as_ns() as f64 > behind_at {
            return Verdict::Behind(format!(
                "the host could not keep up with the model: completions were late by a median \
                 {} against a mean service time of {}; these figures are the host's, not the \
                 drive's",
                us(self.median),
                us(self.mean_service)
            ));
        }
        if self.median > WARN_MEDIAN || self.p99 > WARN_P99 {
            return Verdict::Imprecise(format!(
                "completions were late by a median {} and a p99 {} (bounds {} and {}); the \
                 figures carry that error",
                us(self.median),
                us(self.p99),
                us(WARN_MEDIAN),
                us(WARN_P99)
            ));
        }
        Verdict::Faithful
    }
}

fn us(n: Nanos) -> String {
    format!("{:.1} us", n.as_ns() as f64 / 1e3)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} completions late against the model by median {}, p99 {}, max {}; \
             backing I/O slower than the model {} times; mean modelled service {}",
            self.completions,
            us(self.median),
            us(self.p99),
            us(self.max),
            self.host_slow,
            us(self.mean_service)
        )
    }
}

/// How long before a completion's time the emulator stops sleeping and watches the clock
/// instead: a timer's wake-up on a virtual machine is late, a spin of this long is not. On
/// this project's 2-vCPU VM, busy, wake-ups were late by tens of microseconds; idle (a halted
/// vCPU), `nanosleep` of 0.2-5 ms overshot by a median of 56-117 us and a p90 of 78-189 us
/// under SCHED_FIFO (2026-11-30 00:21 UTC, load 0.2), and a 60 us spin left completions late
/// by a median of 22-55 us (docs/emulation.md). 250 us covers the idle p90 for a short sleep.
pub const SPIN: Duration = Duration::from_micros(250);

/// Ask the kernel to wake this thread's timers without slack (the default slack of 50 us
/// would be the emulator's error). Best effort: a refusal leaves the default.
pub fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The model's clock for arrivals: the real time, less the lateness of the completions the
/// loop reacted to (see the module's doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArrivalClock {
    /// (real time of the last delivery, the latest model time it delivered), while the loop
    /// is in the turn that followed it.
    turn: Option<(Nanos, Nanos)>,
    last: Nanos,
}

impl ArrivalClock {
    /// Completions whose model time was at most `due` were delivered at `now`.
    pub fn delivered(&mut self, now: Nanos, due: Nanos) {
        let due = self.turn.map_or(due, |(_, d)| d.max(due));
        self.turn = Some((now, due));
    }

    /// The loop went back to waiting: later arrivals are not reactions to that delivery.
    pub fn waiting(&mut self) {
        self.turn = None;
    }

    /// The model's time for a request reaching the device at real time `now`.
    pub fn arrival(&mut self, now: Nanos) -> Nanos {
        let t = match self.turn {
            Some((at, due)) if now >= at => due + (now - at),
            _ => now,
        };
        let t = t.min(now).max(self.last);
        self.last = t;
        t
    }
}

struct Pending {
    due: Nanos,
    /// The backing I/O's completion, once it came, and when.
    done: Option<(IoCompletion, Nanos)>,
}

/// A backend that serves requests from `inner` (the backing file) at the times `model` gives.
pub struct Emulated<B: Backend, C: Clock> {
    inner: B,
    model: Box<dyn ServiceModel>,
    clock: C,
    pending: HashMap<u64, Pending>,
    /// (model time, token) of requests whose backing I/O has completed.
    ready: BinaryHeap<Reverse<(Nanos, u64)>>,
    arrivals: ArrivalClock,
    lateness: Lateness,
    scratch: Vec<IoCompletion>,
    next_id: u64,
    spin: Nanos,
    /// The executor's time zero on `clock` ([`Backend::begin`]): the model's time counts from
    /// here, so its first request finds the drive as the simulator's first does (the platter
    /// at the same angle), not as many microseconds of set-up later.
    origin: Nanos,
}

impl<B: Backend, C: Clock> Emulated<B, C> {
    /// Emulate `model` over `inner`, on `clock` (the clock the executor runs on).
    pub fn new(inner: B, model: Box<dyn ServiceModel>, clock: C) -> Self {
        precise_timers();
        Emulated {
            inner,
            model,
            clock,
            pending: HashMap::new(),
            ready: BinaryHeap::new(),
            arrivals: ArrivalClock::default(),
            lateness: Lateness::default(),
            scratch: Vec::new(),
            next_id: 1,
            spin: Nanos::ZERO,
            origin: Nanos::ZERO,
        }
    }

    /// Sleep until `spin` before each completion's time and watch the clock for the rest
    /// ([`SPIN`] suits the monotonic clock; 0, the default, always sleeps: a test's clock
    /// that moves only when waited on must not be watched).
    pub fn with_spin(mut self, spin: Duration) -> Self {
        self.spin = Nanos(spin.as_nanos() as u64);
        self
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        self.model.name()
    }

    /// How late completions have been so far.
    pub fn lateness(&self) -> &Lateness {
        &self.lateness
    }

    fn start(&mut self, io: IoRequest, rq: &Request) -> io::Result<()> {
        let now = self.clock.now();
        let at = self.arrivals.arrival(now).max(self.origin);
        let model_at = at - self.origin;
        let due = self.origin + self.model.service(rq, model_at).max(model_at);
        self.lateness.record_service(due - at);
        let token = io.token;
        self.inner.submit(io)?;
        self.pending.insert(token, Pending { due, done: None });
        Ok(())
    }
}

/// The request a backend I/O stands for when the loop gave none (the executor's read-back).
fn request_of(io: &IoRequest, id: u64) -> Request {
    let (op, bytes) = match io.kind {
        IoKind::Read => (Op::Read, io.buf.len() as u64),
        IoKind::Write => (Op::Write, io.buf.len() as u64),
        IoKind::Flush => (Op::Flush, 0),
        IoKind::Discard { len } => (Op::Discard, len),
    };
    Request {
        id: RequestId(id),
        ctx: CtxId(0),
        group: GroupId::ROOT,
        op,
        sync: true,
        meta: false,
        idle_hint: false,
        sector: io.offset / SECTOR_BYTES,
        sectors: (bytes / SECTOR_BYTES) as u32,
        prio: IoPrio::default(),
        submitted: Nanos::ZERO,
        cpu: 0,
    }
}

impl<B: Backend, C: Clock> Backend for Emulated<B, C> {
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes().min(self.model.capacity_bytes())
    }
    fn capacity(&self) -> usize {
        self.model.depth().max(1)
    }
    fn in_flight(&self) -> usize {
        self.pending.len()
    }
    fn queue_limits(&self) -> crate::queue_limits::QueueLimits {
        self.inner.queue_limits()
    }
    fn submit(&mut self, io: IoRequest) -> io::Result<()> {
        self.next_id += 1;
        let rq = request_of(&io, self.next_id);
        self.start(io, &rq)
    }
    fn submit_request(&mut self, io: IoRequest, rq: &Request) -> io::Result<()> {
        self.start(io, rq)
    }
    fn begin(&mut self, now: Nanos) {
        self.origin = now;
        self.inner.begin(now);
    }
    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()> {
        self.arrivals.waiting();
        let start = self.clock.now();
        let deadline = timeout.map(|t| start + Nanos(t.as_nanos() as u64));
        let before = out.len();
        loop {
            let now = self.clock.now();
            let mut latest = None;
            while let Some(&Reverse((due, token))) = self.ready.peek() {
                if due > now {
                    break;
                }
                self.ready.pop();
                let p = self
                    .pending
                    .remove(&token)
                    .expect("a ready token is pending");
                let (c, arrived) = p.done.expect("a ready token has its completion");
                self.lateness.record(now - due, arrived > due);
                // Only the wake-up's lateness is taken back; backing I/O slower than the
                // model is the host's, and the model's time must not fall behind for it.
                let due = if arrived > due { now } else { due };
                latest = Some(latest.map_or(due, |l: Nanos| l.max(due)));
                out.push(c);
            }
            if let Some(due) = latest {
                self.arrivals.delivered(now, due);
            }
            if out.len() > before {
                return Ok(());
            }
            let next = self.ready.peek().map(|r| r.0 .0);
            let wake = match (next, deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if deadline.is_some_and(|d| d <= now) {
                return Ok(());
            }
            if self.inner.in_flight() == 0 && wake.is_none() {
                // Nothing in flight and no time asked for: nothing would ever wake us.
                return Ok(());
            }
            if let Some(due) = next {
                if self.spin > Nanos::ZERO && due.saturating_sub(now) <= self.spin {
                    while self.clock.now() < due {
                        std::hint::spin_loop();
                    }
                    continue;
                }
            }
            // Wake `spin` early for a completion's time, on time for the caller's deadline.
            let wake = match (next, deadline) {
                (Some(a), d) if self.spin > Nanos::ZERO => {
                    let a = a.saturating_sub(self.spin);
                    Some(d.map_or(a, |d| d.min(a)))
                }
                _ => wake,
            };
            let t = wake.map(|w| Duration::from_nanos(w.saturating_sub(now).as_ns()));
            self.inner.wait(t, &mut self.scratch)?;
            let arrived = self.clock.now();
            for c in self.scratch.drain(..) {
                let Some(p) = self.pending.get_mut(&c.token) else {
                    continue;
                };
                self.ready.push(Reverse((p.due, c.token)));
                p.done = Some((c, arrived));
            }
        }
    }
}

/// Where the files served behind the mount lie on the emulated drive.
///
/// The submission engine gives each file its own sector space; a drive has one. A file is
/// placed when its data is first touched, at the next free place on the drive (so files lie in
/// the order programs first use them, as a tree written once lies in the order it was
/// written): as many sectors as it had then, rounded up to 64 KiB. A file that grows past its
/// extents gets a new extent at the next free place, of at least what it already has (up to
/// 64 MiB) and at least 1 MiB, so a streaming writer's file runs in long extents and a small
/// file's growth stays small. Extents of [`FAR_BYTES`] or more are placed from
/// [`FAR_FRACTION`] of the drive on, away from the small files, as ext2/3's allocator puts a
/// large file in block groups of its own (and as the seeds' writer lay far from the source
/// tree). Past the drive's end, placement wraps to the region's start. A request lying across
/// two extents is given to the model at the first one's place (the model sees one request, as
/// the scheduler did).
#[derive(Debug, Default)]
pub struct Layout {
    files: HashMap<(u64, u64), Vec<Extent>>,
    /// Next free sector of the near region (from 0) and of the far one.
    next: u64,
    next_far: u64,
    capacity: u64,
}

/// Extents at least this large go to the far region ([`Layout`]).
pub const FAR_BYTES: u64 = 8 << 20;
/// Where the far region starts, as a fraction of the drive.
pub const FAR_FRACTION: f64 = 0.6;

#[derive(Clone, Copy, Debug)]
struct Extent {
    /// First sector in the file.
    file: u64,
    /// First sector on the drive.
    drive: u64,
    sectors: u64,
}

const ROUND: u64 = 128; // 64 KiB in sectors
const GROW_MIN: u64 = 2048; // 1 MiB
const GROW_MAX: u64 = 131_072; // 64 MiB

impl Layout {
    /// A layout on a drive of `capacity_sectors`.
    pub fn new(capacity_sectors: u64) -> Layout {
        let capacity = capacity_sectors.max(ROUND);
        Layout {
            files: HashMap::new(),
            next: 0,
            next_far: Self::far_start(capacity),
            capacity,
        }
    }

    fn far_start(capacity: u64) -> u64 {
        ((capacity as f64 * FAR_FRACTION) as u64 / ROUND) * ROUND
    }

    fn alloc(&mut self, sectors: u64) -> u64 {
        let sectors = sectors.div_ceil(ROUND) * ROUND;
        let far = sectors * SECTOR_BYTES >= FAR_BYTES;
        let (start, end) = if far {
            (Self::far_start(self.capacity), self.capacity)
        } else {
            (0, Self::far_start(self.capacity).max(ROUND))
        };
        let next = if far {
            &mut self.next_far
        } else {
            &mut self.next
        };
        if *next + sectors > end {
            *next = start;
        }
        let at = *next;
        *next = (*next + sectors).min(end);
        at
    }

    /// The drive sector of `sector` (in the file's own space) of the file `key` (its device
    /// and inode), which was `size_sectors` long when first seen.
    pub fn map(&mut self, key: (u64, u64), size_sectors: u64, sector: u64) -> u64 {
        if !self.files.contains_key(&key) {
            let len = size_sectors.max(sector + 1).div_ceil(ROUND) * ROUND;
            let drive = self.alloc(len);
            self.files.insert(
                key,
                vec![Extent {
                    file: 0,
                    drive,
                    sectors: len,
                }],
            );
        }
        loop {
            let ext = &self.files[&key];
            if let Some(e) = ext
                .iter()
                .find(|e| sector >= e.file && sector < e.file + e.sectors)
            {
                return (e.drive + (sector - e.file)) % self.capacity;
            }
            let end = ext.last().map_or(0, |e| e.file + e.sectors);
            let have = end.min(GROW_MAX);
            let want = (sector + 1 - end.min(sector + 1))
                .max(have)
                .max(GROW_MIN)
                .div_ceil(ROUND)
                * ROUND;
            let drive = self.alloc(want);
            self.files.get_mut(&key).expect("just seen").push(Extent {
                file: end,
                drive,
                sectors: want,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::AlignedBuf;
    use crate::mem::MemBackend;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A drive whose every request takes 1 ms after the previous one ends (depth 1).
    struct OneMs {
        free: Nanos,
        arrivals: Rc<std::cell::RefCell<Vec<Nanos>>>,
    }
    // SAFETY-free: the test model is used on one thread only; Send is required by the trait.
    unsafe impl Send for OneMs {}
    impl ServiceModel for OneMs {
        fn name(&self) -> &str {
            "one-ms"
        }
        fn depth(&self) -> usize {
            1
        }
        fn capacity_bytes(&self) -> u64 {
            1 << 30
        }
        fn non_rotational(&self) -> bool {
            false
        }
        fn service(&mut self, _: &Request, now: Nanos) -> Nanos {
            self.arrivals.borrow_mut().push(now);
            self.free = self.free.max(now) + Nanos(1_000_000);
            self.free
        }
    }

    /// A clock tests move by hand; waiting in the inner backend moves it by what was asked.
    #[derive(Clone)]
    struct Hand(Rc<Cell<Nanos>>);
    impl Clock for Hand {
        fn now(&self) -> Nanos {
            self.0.get()
        }
    }

    /// An in-memory device whose waits advance the hand clock by the whole timeout.
    struct Sleepy {
        mem: MemBackend,
        clock: Hand,
    }
    impl Backend for Sleepy {
        fn size_bytes(&self) -> u64 {
            self.mem.size_bytes()
        }
        fn capacity(&self) -> usize {
            self.mem.capacity()
        }
        fn in_flight(&self) -> usize {
            self.mem.in_flight()
        }
        fn submit(&mut self, io: IoRequest) -> io::Result<()> {
            self.mem.submit(io)
        }
        fn wait(&mut self, t: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()> {
            let before = out.len();
            self.mem.wait(Some(Duration::ZERO), out)?;
            if out.len() == before {
                if let Some(t) = t {
                    let c = &self.clock.0;
                    c.set(c.get() + Nanos(t.as_nanos() as u64) + Nanos(7_000));
                }
            }
            Ok(())
        }
    }

    fn io(token: u64, kind: IoKind, offset: u64, len: usize) -> IoRequest {
        IoRequest {
            rw_flags: 0,
            token,
            kind,
            offset,
            buf: AlignedBuf::new(len),
        }
    }

    fn setup() -> (
        Emulated<Sleepy, Hand>,
        Hand,
        Rc<std::cell::RefCell<Vec<Nanos>>>,
    ) {
        let clock = Hand(Rc::new(Cell::new(Nanos::ZERO)));
        let arrivals = Rc::new(std::cell::RefCell::new(Vec::new()));
        let model = OneMs {
            free: Nanos::ZERO,
            arrivals: arrivals.clone(),
        };
        let inner = Sleepy {
            mem: MemBackend::new(1 << 20, 8),
            clock: clock.clone(),
        };
        (
            Emulated::new(inner, Box::new(model), clock.clone()),
            clock,
            arrivals,
        )
    }

    #[test]
    fn the_model_counts_from_the_executors_time_zero_not_from_the_clocks() {
        // The clock has run 5 ms of set-up when the executor starts its jobs: the model must
        // see the first request at its time 0, as the simulator's does (a drive's rotation
        // and cache depend on the absolute time), and the completion come 1 ms later on the
        // real clock.
        let (mut e, clock, arrivals) = setup();
        clock.0.set(Nanos(5_000_000));
        e.begin(clock.now());
        e.submit(io(1, IoKind::Read, 0, 4096)).unwrap();
        assert_eq!(*arrivals.borrow(), vec![Nanos::ZERO]);
        let mut out = Vec::new();
        e.wait(Some(Duration::from_micros(900)), &mut out).unwrap();
        assert!(out.is_empty(), "due at 6 ms, not before");
        e.wait(None, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(clock.now() >= Nanos(6_000_000));
        assert_eq!(e.lateness().summary().mean_service, Nanos(1_000_000));
    }

    #[test]
    fn a_completion_waits_for_the_model_time_even_when_the_backing_io_is_done() {
        let (mut e, clock, _) = setup();
        e.submit(io(1, IoKind::Write, 0, 4096)).unwrap();
        assert_eq!(e.capacity(), 1);
        let mut out = Vec::new();
        // Asked to wait 0.2 ms: the backing write is done, the model's 1 ms is not.
        e.wait(Some(Duration::from_micros(200)), &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(e.in_flight(), 1);
        e.wait(None, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(clock.now() >= Nanos(1_000_000));
        let s = e.lateness().summary();
        assert_eq!(s.completions, 1);
        // The hand clock oversleeps by 7 us on every wait: that is the lateness reported.
        assert_eq!(s.median, Nanos(7_000));
        assert_eq!(s.mean_service, Nanos(1_000_000));
        assert_eq!(s.verdict(), Verdict::Faithful);
    }

    #[test]
    fn a_dispatch_right_after_a_late_delivery_reaches_the_model_at_the_delivered_time() {
        let (mut e, clock, arrivals) = setup();
        e.submit(io(1, IoKind::Read, 0, 4096)).unwrap();
        let mut out = Vec::new();
        e.wait(None, &mut out).unwrap();
        // Delivered at 1.007 ms; the loop spends 3 us, then dispatches.
        clock.0.set(clock.now() + Nanos(3_000));
        e.submit(io(2, IoKind::Read, 4096, 4096)).unwrap();
        // Not a reaction to a delivery: this one arrives at its real time.
        e.wait(None, &mut out).unwrap();
        let t = clock.now();
        e.wait(Some(Duration::ZERO), &mut out).unwrap();
        clock.0.set(t + Nanos(500_000));
        e.submit(io(3, IoKind::Read, 8192, 4096)).unwrap();
        let a = arrivals.borrow().clone();
        assert_eq!(a[0], Nanos::ZERO);
        // 1 ms (the model's time) + 3 us of the loop's own, not + 7 us of oversleep.
        assert_eq!(a[1], Nanos(1_003_000));
        assert_eq!(a[2], t + Nanos(500_000));
    }

    #[test]
    fn backing_io_slower_than_the_model_does_not_hold_the_models_time_back() {
        let (mut e, clock, arrivals) = setup();
        e.submit(io(1, IoKind::Read, 0, 4096)).unwrap();
        // The backing read is seen only at 5 ms; the model said 1 ms.
        clock.0.set(Nanos(5_000_000));
        let mut out = Vec::new();
        e.wait(None, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        let s = e.lateness().summary();
        assert_eq!((s.host_slow, s.median), (1, Nanos(4_000_000)));
        clock.0.set(Nanos(5_003_000));
        e.submit(io(2, IoKind::Read, 4096, 4096)).unwrap();
        // Not 1.003 ms: the 4 ms were the host's, not a late wake-up's.
        assert_eq!(arrivals.borrow()[1], Nanos(5_003_000));
    }

    #[test]
    fn a_host_slower_than_the_model_is_reported_behind() {
        let mut l = Lateness::default();
        for _ in 0..10 {
            l.record_service(Nanos(100_000));
            l.record(Nanos(80_000), true);
        }
        let s = l.summary();
        assert_eq!(s.host_slow, 10);
        assert!(matches!(s.verdict(), Verdict::Behind(_)));
        let mut l = Lateness::default();
        for i in 0..100 {
            l.record_service(Nanos(10_000_000));
            l.record(Nanos(if i == 99 { 5_000_000 } else { 60_000 }), false);
        }
        assert!(matches!(l.summary().verdict(), Verdict::Imprecise(_)));
    }

    #[test]
    fn files_lie_one_after_another_and_a_growing_file_gets_long_extents() {
        let mut l = Layout::new(1 << 30);
        assert_eq!(l.map((1, 10), 16, 0), 0);
        // The first file took 64 KiB (128 sectors).
        assert_eq!(l.map((1, 11), 0, 0), 128);
        assert_eq!(l.map((1, 10), 16, 5), 5);
        // File 11 was empty: 128 sectors; growing past them takes a 1 MiB extent after both.
        assert_eq!(l.map((1, 11), 0, 128), 256);
        assert_eq!(l.map((1, 11), 0, 129), 257);
        // A new file after that extent.
        assert_eq!(l.map((1, 12), 8, 0), 256 + 2048);
        // A large file lies in the far region, and so do its large extents of growth.
        let far = Layout::far_start(1 << 30);
        assert_eq!(l.map((1, 13), 1 << 18, 0), far);
        assert_eq!(l.map((1, 13), 1 << 18, 1 << 18), far + (1 << 18));
        // The near region goes on where it was.
        assert_eq!(l.map((1, 14), 8, 0), 256 + 2048 + 128);
    }

    #[test]
    fn placement_wraps_at_the_end_of_its_region() {
        let mut l = Layout::new(2048);
        let far = Layout::far_start(2048);
        assert_eq!(l.map((1, 1), far - 100, 0), 0);
        // The rest of the near region is too small: back to its start.
        assert_eq!(l.map((1, 2), 200, 0), 0);
        assert!(l.map((1, 1), far - 100, far - 101) < far);
    }
}
