//! latency_guard: elevator's own policy for fast devices, **not a Linux scheduler**.
//!
//! On a device with a deep internal queue (an SSD, a virtual disk, a loop device), a streaming
//! writer that keeps many large writes outstanding makes every read wait behind them: a
//! dependent reader (one read at a time) drops from tens of thousands of IOPS to a few hundred,
//! and the kernel's schedulers barely help, because none of them limits how much *write* work
//! is inside the device. latency_guard does exactly that, steered by what it measures:
//!
//! - Reads are served first, in arrival order, without limit.
//! - Writes (and flushes, discards) go in arrival order, but while a reader is active (a read
//!   was issued or completed within `reader_idle` ms, or one is in flight) at most `depth`
//!   writes are outstanding. With no reader active, up to `write_depth_max` are.
//! - `depth` is controlled from the reads' device latency (dispatch to completion), averaged
//!   over windows of `window` ms: above the target the depth halves (not below
//!   `write_depth_min`) and the depth that overshot is remembered; at or under the target it
//!   grows by one per window, but not back to a depth that overshot within the last
//!   `probe_interval` ms. The depth starts at `write_depth_min` and survives idle readers.
//! - The target is `target_read_lat`, or `target_factor` times the best window mean seen so
//!   far if that is larger: on a device whose reads are slow even without writes (a loop
//!   device over a busy disk), a fixed target would pin the writes at the minimum depth. The
//!   best mean is forgotten slowly (it may rise by 1/1024 per window, about 5% a second with
//!   the default window), so it follows a device that changes but cannot run away while reads
//!   are slow because of the writes.
//!
//! - A write outstanding longer than `stall_factor` times the median of the last 32 writes
//!   device latencies (dispatch to completion) is taken to be *stalled*: held by the device's
//!   write path (a host cache flushing, write throttling), not in front of the reads. It stops
//!   counting toward `depth` (still toward `write_depth_max`), so another write keeps the write
//!   pipeline busy while it waits. Measured on this machine's direct-io loop device (W1 with the
//!   depth at 1-2 pieces of 256 KiB): half the writes completed in 160 us, but 10% took more
//!   than 1 ms and those held 77% of the writer's time; reads dispatched while such a write was
//!   outstanding completed in a median 66 us, faster than behind young writes (122 us). Without
//!   the rule the writer spent most of its time waiting for stalls with nothing else queued.
//!
//! - I/O larger than `max_request_kb` reaches the policy split into pieces of at most that
//!   size ([`Scheduler::max_request_sectors`]; the driver splits, as the block layer splits
//!   at `max_sectors_kb` and Seastar's I/O queue splits long requests). The depth then counts
//!   pieces: a read waits behind at most `depth` pieces, and a writer at depth 4 of 256 KiB
//!   keeps the device busy across the round trip between a completion and the next dispatch,
//!   where one outstanding 1 MiB write leaves it idle. On a direct-io loop device here, W1's
//!   1 MiB writer went from 1.0-2.1 GB/s (reader 2,200-5,400 IOPS, varying run to run) to
//!   3.0 GB/s (reader 4,300-4,900 IOPS) with 256 KiB pieces.
//!
//! So the writer keeps the device busy with as few writes as the reads can tolerate: on a
//! device whose bandwidth saturates at low depth, that costs the writer little. The control is
//! multiplicative-decrease / additive-increase with a memory of the last overshoot (as TCP's
//! slow-start threshold), so it settles just under the depth where read latency breaks down
//! instead of oscillating across it.
//!
//! Tunables (our names, in the style of sysfs): `target_read_lat` (us, default 1000),
//! `window` (ms, 20), `probe_interval` (ms, 1000), `write_depth_min` (requests, 1),
//! `write_depth_max` (requests, 64), `reader_idle` (ms, 10), `target_factor` (count, 3; 0
//! makes the target absolute), `max_request_kb` (KiB, 256, a multiple of 4; 0 takes I/O
//! whole).
//!
//! Scope: one shared write depth for all writers; no groups, priorities or per-process
//! fairness (the reads are FIFO among themselves, the writes too); no merging; no anticipation
//! (idling for a dependent reader's next read did not improve reads here, because the writes
//! already inside the device are what a read waits for, and the depth control bounds those).

use std::collections::{HashMap, VecDeque};

use crate::request::{Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{self, Settings, Tunable, TunableError, Unit};

/// latency_guard's tunables.
pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "target_read_lat",
        unit: Unit::Us,
        default: 1000,
        min: 1,
        max: 10_000_000,
        doc: "read latency (dispatch to completion) the write depth is steered to stay under",
    },
    Tunable {
        name: "window",
        unit: Unit::Ms,
        default: 20,
        min: 1,
        max: 60_000,
        doc: "how often the write depth is re-decided from the reads completed meanwhile",
    },
    Tunable {
        name: "probe_interval",
        unit: Unit::Ms,
        default: 1000,
        min: 0,
        max: 3_600_000,
        doc: "how long a write depth that overshot the target is not tried again",
    },
    Tunable {
        name: "write_depth_min",
        unit: Unit::Requests,
        default: 1,
        min: 1,
        max: 4096,
        doc: "fewest writes kept outstanding while readers are active (writes never starve)",
    },
    Tunable {
        name: "write_depth_max",
        unit: Unit::Requests,
        default: 64,
        min: 1,
        max: 4096,
        doc: "writes outstanding when no reader is active, and the ceiling of the control",
    },
    Tunable {
        name: "reader_idle",
        unit: Unit::Ms,
        default: 10,
        min: 0,
        max: 60_000,
        doc: "readers count as active for this long after their last read",
    },
    Tunable {
        name: "target_factor",
        unit: Unit::Count,
        default: 3,
        min: 0,
        max: 1000,
        doc: "the target is at least this many times the best read latency seen (0: off)",
    },
    Tunable {
        name: "max_request_kb",
        unit: Unit::KiB,
        default: 256,
        min: 0,
        max: 65_536,
        doc: "larger I/O is split into pieces of at most this size before queueing (0: never)",
    },
    Tunable {
        name: "stall_factor",
        unit: Unit::Count,
        default: 4,
        min: 0,
        max: 1000,
        doc: "a write outstanding this many times the median recent write latency stops counting \
              toward the depth (0: never)",
    },
];

/// How many recent write latencies the stall threshold's median is taken over.
const WRITE_LAT_HISTORY: usize = 32;

/// latency_guard's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Read latency target.
    pub target_read_lat: Nanos,
    /// Control window.
    pub window: Nanos,
    /// How long an overshooting depth is not retried.
    pub probe_interval: Nanos,
    /// Least write depth while readers are active.
    pub write_depth_min: u32,
    /// Write depth with no reader active; ceiling of the control.
    pub write_depth_max: u32,
    /// How long readers count as active after their last read.
    pub reader_idle: Nanos,
    /// The target is at least this many times the best window mean seen (0: off).
    pub target_factor: u32,
    /// Largest request taken, in sectors (I/O beyond it is split by the driver); 0: no limit.
    pub max_request_sectors: u32,
    /// A write outstanding this many times the median recent write latency is stalled and no
    /// longer counts toward the depth (0: off).
    pub stall_factor: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config::from_settings(&Settings::new()).expect("defaults are valid")
    }
}

impl Config {
    /// Build from settings, checking names, ranges and `write_depth_min <= write_depth_max`.
    pub fn from_settings(s: &Settings) -> Result<Config, TunableError> {
        s.validate("latency-guard", TUNABLES)?;
        let g = |n| s.get(TUNABLES, n);
        let cfg = Config {
            target_read_lat: Nanos::from_us(g("target_read_lat") as u64),
            window: Nanos::from_ms(g("window") as u64),
            probe_interval: Nanos::from_ms(g("probe_interval") as u64),
            write_depth_min: g("write_depth_min") as u32,
            write_depth_max: g("write_depth_max") as u32,
            reader_idle: Nanos::from_ms(g("reader_idle") as u64),
            target_factor: g("target_factor") as u32,
            max_request_sectors: (g("max_request_kb") * 2) as u32,
            stall_factor: g("stall_factor") as u32,
        };
        if !cfg.max_request_sectors.is_multiple_of(8) {
            return Err(TunableError::Invalid {
                reason: format!(
                    "max_request_kb ({}) is not a multiple of 4 KiB",
                    cfg.max_request_sectors / 2
                ),
            });
        }
        if cfg.write_depth_min > cfg.write_depth_max {
            return Err(TunableError::Invalid {
                reason: format!(
                    "write_depth_min ({}) is larger than write_depth_max ({})",
                    cfg.write_depth_min, cfg.write_depth_max
                ),
            });
        }
        Ok(cfg)
    }
}

/// The latency_guard scheduler. See the module documentation.
#[derive(Debug)]
pub struct LatencyGuard {
    cfg: Config,
    reads: VecDeque<Request>,
    writes: VecDeque<Request>,
    reads_in_flight: usize,
    /// Writes in flight with their dispatch times, oldest first.
    writes_in_flight: VecDeque<(RequestId, Nanos)>,
    /// The device latencies of the last writes completed (a ring of WRITE_LAT_HISTORY).
    write_lats: VecDeque<u64>,
    /// The median of `write_lats`, kept as they change (dispatch reads it on every call).
    write_lat_median: Option<u64>,
    read_dispatched: HashMap<RequestId, Nanos>,
    depth: u32,
    overshoot: Option<(u32, Nanos)>,
    window_start: Option<Nanos>,
    window_sum: u64,
    window_reads: u64,
    last_read: Option<Nanos>,
    best_mean: Option<u64>,
}

impl LatencyGuard {
    /// A scheduler with `cfg`.
    pub fn new(cfg: Config) -> LatencyGuard {
        LatencyGuard {
            depth: cfg.write_depth_min,
            cfg,
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            reads_in_flight: 0,
            writes_in_flight: VecDeque::new(),
            write_lats: VecDeque::with_capacity(WRITE_LAT_HISTORY),
            write_lat_median: None,
            read_dispatched: HashMap::new(),
            overshoot: None,
            window_start: None,
            window_sum: 0,
            window_reads: 0,
            last_read: None,
            best_mean: None,
        }
    }

    /// Build from settings.
    pub fn from_settings(s: &Settings) -> Result<LatencyGuard, TunableError> {
        Config::from_settings(s).map(LatencyGuard::new)
    }

    /// The write depth the control has settled on (used while readers are active).
    pub fn write_depth(&self) -> u32 {
        self.depth
    }

    fn readers_active(&self, now: Nanos) -> bool {
        self.reads_in_flight > 0
            || self
                .last_read
                .is_some_and(|t| now < t.saturating_add(self.cfg.reader_idle))
    }

    /// The write limit in force at `now`.
    pub fn write_limit(&self, now: Nanos) -> u32 {
        if self.readers_active(now) {
            self.depth
        } else {
            self.cfg.write_depth_max
        }
    }

    /// How long a write may be outstanding before it counts as stalled, from the median of the
    /// recent write latencies (`None`: the rule is off or no write has completed yet).
    pub fn stall_after(&self) -> Option<Nanos> {
        if self.cfg.stall_factor == 0 {
            return None;
        }
        self.write_lat_median
            .map(|m| Nanos(m.saturating_mul(u64::from(self.cfg.stall_factor))))
    }

    /// Writes in flight that count toward the depth at `now` (not stalled), and when the
    /// oldest of them becomes stalled.
    fn young_writes(&self, now: Nanos) -> (u32, Option<Nanos>) {
        let Some(after) = self.stall_after() else {
            return (self.writes_in_flight.len() as u32, None);
        };
        // Oldest first: the stalled ones are a prefix.
        let stalled = self
            .writes_in_flight
            .iter()
            .take_while(|(_, at)| now >= at.saturating_add(after))
            .count();
        let next = self
            .writes_in_flight
            .get(stalled)
            .map(|(_, at)| at.saturating_add(after));
        ((self.writes_in_flight.len() - stalled) as u32, next)
    }

    /// The read latency the control steers to at present.
    pub fn target(&self) -> Nanos {
        let relative = self
            .best_mean
            .map_or(0, |b| b.saturating_mul(u64::from(self.cfg.target_factor)));
        Nanos(self.cfg.target_read_lat.as_ns().max(relative))
    }

    fn end_window(&mut self, now: Nanos) {
        let mean = self.window_sum / self.window_reads.max(1);
        let target = self.target().as_ns();
        self.best_mean = Some(self.best_mean.map_or(mean, |b| mean.min(b + b / 1024 + 1)));
        if mean > target {
            if self.depth > self.cfg.write_depth_min {
                self.overshoot = Some((self.depth, now));
                self.depth = (self.depth / 2).max(self.cfg.write_depth_min);
            }
        } else {
            let next = self.depth + 1;
            let barred = self.overshoot.is_some_and(|(d, at)| {
                next >= d && now < at.saturating_add(self.cfg.probe_interval)
            });
            if next <= self.cfg.write_depth_max && !barred {
                self.depth = next;
            }
        }
        self.window_start = Some(now);
        self.window_sum = 0;
        self.window_reads = 0;
    }
}

impl Scheduler for LatencyGuard {
    fn name(&self) -> &'static str {
        "latency-guard"
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        if rq.op.is_read() {
            self.last_read = Some(now);
            self.reads.push_back(rq);
        } else {
            self.writes.push_back(rq);
        }
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        if let Some(rq) = self.reads.pop_front() {
            self.reads_in_flight += 1;
            self.read_dispatched.insert(rq.id, now);
            return Dispatch::Request(rq);
        }
        if self.writes.is_empty() || self.writes_in_flight.len() as u32 >= self.cfg.write_depth_max
        {
            // A write completion (or a read) brings the driver back.
            return Dispatch::Empty;
        }
        let (young, next_stall) = self.young_writes(now);
        if young >= self.write_limit(now) {
            // A completion, a read, or the oldest write turning stalled brings the driver back.
            return match next_stall {
                Some(until) => Dispatch::Idle { until },
                None => Dispatch::Empty,
            };
        }
        let rq = self.writes.pop_front().expect("not empty");
        self.writes_in_flight.push_back((rq.id, now));
        Dispatch::Request(rq)
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        if !rq.op.is_read() {
            if let Some(i) = self
                .writes_in_flight
                .iter()
                .position(|(id, _)| *id == rq.id)
            {
                let (_, at) = self.writes_in_flight.remove(i).expect("found");
                if self.write_lats.len() == WRITE_LAT_HISTORY {
                    self.write_lats.pop_front();
                }
                self.write_lats.push_back(now.saturating_sub(at).as_ns());
                let mut v: Vec<u64> = self.write_lats.iter().copied().collect();
                let mid = v.len() / 2;
                self.write_lat_median = Some(*v.select_nth_unstable(mid).1);
            }
            return;
        }
        self.reads_in_flight = self.reads_in_flight.saturating_sub(1);
        self.last_read = Some(now);
        let Some(at) = self.read_dispatched.remove(&rq.id) else {
            return;
        };
        self.window_sum += now.saturating_sub(at).as_ns();
        self.window_reads += 1;
        let start = *self.window_start.get_or_insert(at);
        if now >= start.saturating_add(self.cfg.window) {
            self.end_window(now);
        }
    }

    fn queued(&self) -> usize {
        self.reads.len() + self.writes.len()
    }

    fn max_request_sectors(&self) -> Option<u32> {
        (self.cfg.max_request_sectors > 0).then_some(self.cfg.max_request_sectors)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let t = tunable::lookup("latency-guard", TUNABLES, name)?;
        tunable::check_range(t, value)?;
        let mut s = Settings::new();
        for t in TUNABLES {
            s.set(t.name, self.get(t.name));
        }
        s.set(name, value);
        self.cfg = Config::from_settings(&s)?;
        self.depth = self
            .depth
            .clamp(self.cfg.write_depth_min, self.cfg.write_depth_max);
        Ok(())
    }
}

impl LatencyGuard {
    fn get(&self, name: &str) -> i64 {
        let c = &self.cfg;
        (match name {
            "target_read_lat" => c.target_read_lat.as_us(),
            "window" => c.window.as_ms(),
            "probe_interval" => c.probe_interval.as_ms(),
            "write_depth_min" => u64::from(c.write_depth_min),
            "write_depth_max" => u64::from(c.write_depth_max),
            "reader_idle" => c.reader_idle.as_ms(),
            "target_factor" => u64::from(c.target_factor),
            "max_request_kb" => u64::from(c.max_request_sectors / 2),
            "stall_factor" => u64::from(c.stall_factor),
            _ => 0,
        }) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};
    use proptest::prelude::*;

    fn lg() -> LatencyGuard {
        LatencyGuard::new(Config::default())
    }

    fn take(s: &mut LatencyGuard, now: Nanos) -> Option<Request> {
        match s.dispatch(now) {
            Dispatch::Request(r) => Some(r),
            _ => None,
        }
    }

    /// One read from ctx 9 dispatched at `at` and completed `lat` later.
    fn read_with_latency(s: &mut LatencyGuard, id: u64, at: Nanos, lat: Nanos) -> Nanos {
        s.insert(rq(id, 9).sector(1 << 30).read().at(at).build(), at);
        let r = take(s, at).expect("reads go first");
        assert!(r.op.is_read());
        s.complete(&r, at + lat);
        at + lat
    }

    #[test]
    fn io_is_taken_in_pieces_of_max_request_kb_and_whole_when_it_is_zero() {
        assert_eq!(lg().max_request_sectors(), Some(512), "256 KiB by default");
        let mut s = Settings::new();
        s.set("max_request_kb", 0);
        assert_eq!(
            LatencyGuard::from_settings(&s)
                .unwrap()
                .max_request_sectors(),
            None
        );
        s.set("max_request_kb", 6);
        let err = LatencyGuard::from_settings(&s).unwrap_err().to_string();
        assert!(err.contains("not a multiple of 4 KiB"), "{err}");
    }

    #[test]
    fn with_no_reader_writes_fill_up_to_write_depth_max() {
        let mut s = lg();
        for i in 0..100 {
            s.insert(
                rq(i, 1).sector(i * 2048).sectors(2048).write().build(),
                Nanos::ZERO,
            );
        }
        let n = std::iter::from_fn(|| take(&mut s, Nanos::ZERO)).count();
        assert_eq!(n, 64);
    }

    #[test]
    fn reads_jump_ahead_of_queued_writes() {
        let mut s = lg();
        s.insert(rq(1, 1).write().build(), Nanos::ZERO);
        s.insert(rq(2, 2).read().build(), Nanos::ZERO);
        assert_eq!(take(&mut s, Nanos::ZERO).unwrap().id.0, 2);
    }

    #[test]
    fn an_active_reader_limits_writes_to_the_controlled_depth() {
        let mut s = lg();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        for i in 0..10 {
            s.insert(rq(i, 1).sector(i * 2048).write().build(), t);
        }
        assert_eq!(s.write_depth(), 1);
        assert!(take(&mut s, t).is_some());
        assert_eq!(
            s.dispatch(t),
            Dispatch::Empty,
            "one write outstanding while reading"
        );
        // After reader_idle without reads, the limit lifts.
        let later = t + Nanos::from_ms(11);
        let n = std::iter::from_fn(|| take(&mut s, later)).count();
        assert_eq!(n, 9);
    }

    /// Ten writes completed in 100 us each while a reader is active; returns the time after.
    fn writes_of_100_us(s: &mut LatencyGuard, mut t: Nanos) -> Nanos {
        for i in 0..10 {
            s.insert(rq(500 + i, 1).sector(i * 2048).write().build(), t);
            let w = take(s, t).expect("one write fits the depth");
            t += Nanos::from_us(100);
            s.complete(&w, t);
        }
        t
    }

    #[test]
    fn a_write_outstanding_stall_factor_times_the_median_stops_counting_toward_the_depth() {
        let mut s = lg();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let t = writes_of_100_us(&mut s, t);
        assert_eq!(
            s.stall_after(),
            Some(Nanos::from_us(400)),
            "4 x the 100 us median"
        );
        for i in 0..3 {
            s.insert(rq(i, 1).sector((20 + i) * 2048).write().build(), t);
        }
        let first = take(&mut s, t).expect("depth 1");
        assert_eq!(
            s.dispatch(t),
            Dispatch::Idle {
                until: t + Nanos::from_us(400)
            },
            "the depth is full until the outstanding write stalls"
        );
        assert!(
            take(&mut s, t + Nanos::from_us(399)).is_none(),
            "not stalled yet"
        );
        let second = take(&mut s, t + Nanos::from_us(400)).expect("the first write is stalled");
        assert_ne!(first.id, second.id);
        // The stalled write completing frees nothing the young one holds.
        s.complete(&first, t + Nanos::from_us(500));
        assert_eq!(
            s.dispatch(t + Nanos::from_us(500)),
            Dispatch::Idle {
                until: t + Nanos::from_us(800)
            }
        );
    }

    #[test]
    fn stalled_writes_still_count_toward_write_depth_max() {
        let mut st = Settings::new();
        st.set("write_depth_max", 2);
        let mut s = LatencyGuard::from_settings(&st).unwrap();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let t = writes_of_100_us(&mut s, t);
        for i in 0..3 {
            s.insert(rq(i, 1).sector((20 + i) * 2048).write().build(), t);
        }
        assert!(take(&mut s, t).is_some());
        assert!(
            take(&mut s, t + Nanos::from_us(400)).is_some(),
            "first stalled"
        );
        assert_eq!(
            s.dispatch(t + Nanos::from_ms(5)),
            Dispatch::Empty,
            "two outstanding, both stalled, is write_depth_max"
        );
    }

    #[test]
    fn stall_factor_zero_never_takes_a_write_as_stalled() {
        let mut st = Settings::new();
        st.set("stall_factor", 0);
        let mut s = LatencyGuard::from_settings(&st).unwrap();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let t = writes_of_100_us(&mut s, t);
        assert_eq!(s.stall_after(), None);
        s.insert(rq(1, 1).write().build(), t);
        s.insert(rq(2, 1).sector(4096).write().build(), t);
        assert!(take(&mut s, t).is_some());
        assert_eq!(s.dispatch(t + Nanos::from_ms(5)), Dispatch::Empty);
    }

    #[test]
    fn depth_grows_one_per_window_while_reads_are_fast() {
        let mut s = lg();
        let mut t = Nanos::ZERO;
        for i in 0..5 {
            // Two reads per 20 ms window: the window closes on the second.
            t = read_with_latency(&mut s, 2 * i, t, Nanos::from_us(100));
            t = read_with_latency(
                &mut s,
                2 * i + 1,
                t + Nanos::from_ms(20),
                Nanos::from_us(100),
            );
        }
        assert_eq!(s.write_depth(), 6);
    }

    #[test]
    fn slow_reads_halve_the_depth_and_the_overshoot_is_not_retried_until_probe_interval() {
        let mut s = lg();
        let mut t = Nanos::ZERO;
        let mut id = 0;
        let mut window = |s: &mut LatencyGuard, t: &mut Nanos, lat_us: u64| {
            *t = read_with_latency(s, id, *t, Nanos::from_us(lat_us));
            *t = read_with_latency(s, id + 1, *t + Nanos::from_ms(20), Nanos::from_us(lat_us));
            id += 2;
        };
        for _ in 0..7 {
            window(&mut s, &mut t, 100);
        }
        assert_eq!(s.write_depth(), 8);
        window(&mut s, &mut t, 3000);
        assert_eq!(s.write_depth(), 4);
        // Fast again: climbs to 7 and stays under the overshoot (8) ...
        for _ in 0..10 {
            window(&mut s, &mut t, 100);
        }
        assert_eq!(s.write_depth(), 7);
        // ... until probe_interval (1 s) after the overshoot.
        for _ in 0..60 {
            window(&mut s, &mut t, 100);
        }
        assert!(s.write_depth() > 8, "{}", s.write_depth());
    }

    #[test]
    fn depth_never_falls_below_write_depth_min_so_writes_never_starve() {
        let mut set = Settings::new();
        set.set("write_depth_min", 2).set("target_factor", 0);
        let mut s = LatencyGuard::from_settings(&set).unwrap();
        let mut t = Nanos::ZERO;
        for i in 0..10 {
            t = read_with_latency(&mut s, 2 * i, t, Nanos::from_ms(5));
            t = read_with_latency(&mut s, 2 * i + 1, t + Nanos::from_ms(20), Nanos::from_ms(5));
        }
        assert_eq!(s.write_depth(), 2);
    }

    #[test]
    fn on_a_device_with_slow_reads_the_target_follows_the_best_latency_seen() {
        let mut t = Nanos::ZERO;
        let mut run = |s: &mut LatencyGuard| {
            for i in 0..5 {
                // Every read takes 1.5 ms, above the absolute 1 ms target.
                t = read_with_latency(s, 2 * i, t, Nanos::from_us(1500));
                t = read_with_latency(s, 2 * i + 1, t + Nanos::from_ms(20), Nanos::from_us(1500));
            }
        };
        let mut relative = lg();
        run(&mut relative);
        assert_eq!(relative.target(), Nanos::from_us(4500));
        assert!(relative.write_depth() > 1, "{}", relative.write_depth());
        let mut set = Settings::new();
        set.set("target_factor", 0);
        let mut absolute = LatencyGuard::from_settings(&set).unwrap();
        run(&mut absolute);
        assert_eq!(absolute.write_depth(), 1);
    }

    #[test]
    fn a_long_run_of_slow_reads_does_not_raise_the_target() {
        let mut s = lg();
        let mut t = Nanos::ZERO;
        let mut id = 0;
        for lat_us in [100u64; 10].into_iter().chain([5000u64; 100]) {
            t = read_with_latency(&mut s, id, t, Nanos::from_us(lat_us));
            t = read_with_latency(
                &mut s,
                id + 1,
                t + Nanos::from_ms(20),
                Nanos::from_us(lat_us),
            );
            id += 2;
        }
        assert_eq!(s.target(), Nanos::from_us(1000));
        assert_eq!(s.write_depth(), 1);
    }

    #[test]
    fn tunables_are_checked_across_fields_and_settable_at_run_time() {
        let mut set = Settings::new();
        set.set("write_depth_min", 8).set("write_depth_max", 4);
        assert!(matches!(
            LatencyGuard::from_settings(&set),
            Err(TunableError::Invalid { .. })
        ));
        let mut s = lg();
        s.set_tunable("write_depth_min", 3).unwrap();
        assert_eq!(s.write_depth(), 3);
        assert!(s.set_tunable("write_depth_max", 2).is_err());
        assert!(s.set_tunable("no_such", 1).is_err());
    }

    proptest! {
        #[test]
        fn every_request_is_dispatched_and_completed_exactly_once(
            ops in proptest::collection::vec((any::<bool>(), 0u64..1000, 0u64..3), 1..200),
        ) {
            let mut h = Harness::new(lg(), 8, |r: &Request| {
                if r.op.is_read() { Nanos::from_us(100) } else { Nanos::from_us(400) }
            });
            for (i, (read, sector, ms)) in ops.into_iter().enumerate() {
                let b = rq(i as u64, (i % 3) as u32).sector(sector * 8).at(Nanos::from_ms(ms));
                h.submit(if read { b.read() } else { b.write() });
            }
            let out = h.run();
            prop_assert!(!out.served.is_empty());
        }
    }
}
