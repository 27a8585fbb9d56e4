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
//!   was issued or completed within `reader_idle` ms, or one is in flight) the write *bytes*
//!   in flight are kept within a budget; one write may always be in flight, so writes never
//!   starve. With no reader active, up to `write_depth_max` writes are outstanding.
//! - The budget counts bytes, not requests, because a read waits behind the bytes the device
//!   holds: a 1 MiB write delays it as much as four of 256 KiB. It is controlled from the
//!   reads' device latency (dispatch to completion), averaged over windows of `window` ms:
//!   above the target the budget halves (not below `write_kb_min`) and the budget that
//!   overshot is remembered; at or under the target it grows by `write_kb_step`, but not back
//!   to a budget that overshot within the last `probe_interval` ms (multiplicative decrease,
//!   additive increase, with a memory of the last overshoot as TCP's slow-start threshold, so
//!   it settles just under the budget where read latency breaks down instead of oscillating
//!   across it).
//! - The target is `target_factor` times the reads' *floor*, or `target_read_lat` if that is
//!   larger: reads may be that much slower than with the least write work in flight. The floor
//!   is measured, not assumed: the control starts at `write_kb_min`, and every
//!   `floor_interval` ms it drops the budget there for two windows (the first lets the writes
//!   of the larger budget drain, the second is measured) and goes back; the floor is a moving
//!   average of such windows. So on a device whose reads are slow whatever we hold back (a
//!   host serving every request late, a loop device over a busy disk), the target follows and
//!   the writes are let through, while reads that are slow only under a larger budget keep it
//!   small. The former target (the best window mean ever seen, forgotten at 5% a second)
//!   pinned the writer at the minimum for whole runs when this machine's host turned slow.
//! - New I/O reaches the policy cut into pieces: `max_request_kb` halved until it fits the
//!   budget ([`Scheduler::max_request_sectors`], asked at every insert: the driver splits, as
//!   the block layer splits at `max_sectors_kb` and Seastar's I/O queue splits long requests,
//!   and completes the job's I/O with its last piece). With the defaults a 1 MiB write goes
//!   whole, and the budget moves in whole writes: one while reads are near their floor, more
//!   while they allow it. Halving keeps a write's pieces equal (never 768 + 256 KiB).
//! - A write outstanding longer than `stall_factor` times the median of the last 32 writes'
//!   device latencies is taken to be *stalled*: held by the device's write path (a host cache
//!   flushing, write throttling), not in front of the reads. It stops counting toward the
//!   budget (still toward `write_depth_max`), so another write keeps the write pipeline busy
//!   while it waits. On this machine's direct-io loop device, writes over 1 ms were 7-18% of
//!   W1's and held 30-79% of the writer's time (5 rounds); reads overtook them in some runs and
//!   not in others (docs/real-io.md).
//!
//! Why bytes, whole writes and a measured floor (docs/real-io.md has the figures, medians of 3-5
//! interleaved rounds): on this machine's loop device a dependent reader keeps most of its IOPS
//! up to 1 MiB of writes in flight and loses most of them at 1.5 MiB, while below that the same
//! bytes as one whole write or two halves kept the writer's bandwidth better than as four 256
//! KiB pieces one after another (each pays the round trip from a completion to the next
//! dispatch). The former
//! controller counted 256 KiB pieces from a depth of one, with a target of the best window mean
//! ever seen (forgotten at 5% a second) or 1 ms: when the host turned slow it held the writer at
//! 1-4% of its bandwidth for whole runs, and on a quiet machine it let 2-3 MiB into flight.
//!
//! Tunables (our names, in the style of sysfs): `target_read_lat` (us, default 250),
//! `target_factor` (count, 2; 0 makes the target absolute), `window` (ms, 20),
//! `probe_interval` (ms, 1000), `floor_interval` (ms, 1000; 0: measured only when the control
//! is at the minimum), `write_kb_min` (KiB, 1024), `write_kb_max` (KiB, 65536),
//! `write_kb_step` (KiB, 128), `write_depth_max` (requests, 64), `reader_idle` (ms, 10),
//! `max_request_kb` (KiB, 1024; 0: pieces as large as the budget), `stall_factor` (count, 4;
//! 0: off). Sizes are multiples of 4 KiB.
//!
//! Scope: one shared write budget for all writers; no groups, priorities or per-process
//! fairness (the reads are FIFO among themselves, the writes too); no merging; no anticipation
//! (idling for a dependent reader's next read did not improve reads here, because the writes
//! already inside the device are what a read waits for, and the budget bounds those).

use std::collections::VecDeque;

use crate::id_map::IdMap;
use crate::request::{Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{codec, Settings, TunableError};

crate::tunable::tunables! {
    policy: "latency-guard", finish: Config::check;
    /// latency_guard's tunables.
    pub const TUNABLES;
    /// latency_guard's configuration.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// Read latency target.
        target_read_lat: Nanos = "target_read_lat" {
            unit: Us,
            default: 250,
            min: 1,
            max: 10_000_000,
            doc: "read latency (dispatch to completion) the write budget is steered to stay under",
        },
        /// Control window.
        window: Nanos = "window" {
            unit: Ms,
            default: 20,
            min: 1,
            max: 60_000,
            doc: "how often the write budget is re-decided from the reads completed meanwhile",
        },
        /// How long an overshooting budget is not retried.
        probe_interval: Nanos = "probe_interval" {
            unit: Ms,
            default: 1000,
            min: 0,
            max: 3_600_000,
            doc: "how long a write budget that overshot the target is not tried again",
        },
        /// How often the floor is measured (0: only when the budget is at the minimum anyway).
        floor_interval: Nanos = "floor_interval" {
            unit: Ms,
            default: 1000,
            min: 0,
            max: 3_600_000,
            doc: "how often the budget drops to write_kb_min for one window to measure the reads' \
                  floor latency (0: only when the control takes it there)",
        },
        /// Least write budget while readers are active, in sectors.
        write_min: u64 = "write_kb_min" {
            unit: KiB,
            default: 1024,
            min: 4,
            max: 4_194_304,
            codec: codec::KiBSectors,
            doc: "least write bytes in flight while readers are active (one write always may be)",
        },
        /// Ceiling of the write budget, in sectors.
        write_max: u64 = "write_kb_max" {
            unit: KiB,
            default: 65_536,
            min: 4,
            max: 4_194_304,
            codec: codec::KiBSectors,
            doc: "ceiling of the write budget while readers are active",
        },
        /// Growth of the budget per window under the target, in sectors.
        write_step: u64 = "write_kb_step" {
            unit: KiB,
            default: 128,
            min: 4,
            max: 4_194_304,
            codec: codec::KiBSectors,
            doc: "how much the write budget grows per window while reads meet the target",
        },
        /// Most writes outstanding; the only write limit with no reader active.
        write_depth_max: u32 = "write_depth_max" {
            unit: Requests,
            default: 64,
            min: 1,
            max: 4096,
            doc: "most writes outstanding, readers or not (the only limit when no reader is active)",
        },
        /// How long readers count as active after their last read.
        reader_idle: Nanos = "reader_idle" {
            unit: Ms,
            default: 10,
            min: 0,
            max: 60_000,
            doc: "readers count as active for this long after their last read",
        },
        /// The target is at least this many times the floor (0: off).
        target_factor: u32 = "target_factor" {
            unit: Count,
            default: 2,
            min: 0,
            max: 1000,
            doc: "the target is at least this many times the reads' floor latency (0: off)",
        },
        /// Largest piece, in sectors; 0: no limit of its own (the budget still sizes pieces).
        max_request_sectors: u32 = "max_request_kb" {
            unit: KiB,
            default: 1024,
            min: 0,
            max: 65_536,
            codec: codec::KiBSectors,
            doc: "largest piece larger I/O is split into (0: the budget alone decides the pieces)",
        },
        /// A write outstanding this many times the median recent write latency is stalled and
        /// no longer counts toward the budget (0: off).
        stall_factor: u32 = "stall_factor" {
            unit: Count,
            default: 4,
            min: 0,
            max: 1000,
            doc: "a write outstanding this many times the median recent write latency stops counting \
                  toward the budget (0: never)",
        },
    }
}

impl Config {
    /// The rules across tunables: sizes are multiples of 4 KiB, and `write_kb_min <=
    /// write_kb_max`.
    fn check(&mut self, _given: &Settings) -> Result<(), TunableError> {
        for name in [
            "write_kb_min",
            "write_kb_max",
            "write_kb_step",
            "max_request_kb",
        ] {
            let kb = self.get(name).expect("a tunable of ours");
            if kb % 4 != 0 {
                return Err(TunableError::Invalid {
                    reason: format!("{name} ({kb}) is not a multiple of 4 KiB"),
                });
            }
        }
        if self.write_min > self.write_max {
            return Err(TunableError::Invalid {
                reason: format!(
                    "write_kb_min ({}) is larger than write_kb_max ({})",
                    self.write_min / 2,
                    self.write_max / 2
                ),
            });
        }
        Ok(())
    }
}

/// How many recent write latencies the stall threshold's median is taken over.
const WRITE_LAT_HISTORY: usize = 32;

/// A window is measured for the floor when it is this many in a row at `write_kb_min` (the
/// first lets the writes of a larger budget drain).
const FLOOR_WINDOWS: u32 = 2;

/// Pieces are multiples of this many sectors (4 KiB).
const PIECE_ALIGN: u64 = 8;

/// The latency_guard scheduler. See the module documentation.
#[derive(Debug)]
pub struct LatencyGuard {
    cfg: Config,
    reads: VecDeque<Request>,
    writes: VecDeque<Request>,
    reads_in_flight: usize,
    /// Writes in flight with their dispatch times and sizes (sectors), oldest first.
    writes_in_flight: VecDeque<(RequestId, Nanos, u64)>,
    /// The device latencies of the last writes completed (a ring of WRITE_LAT_HISTORY).
    write_lats: VecDeque<u64>,
    /// The median of `write_lats`, kept as they change (dispatch reads it on every call).
    write_lat_median: Option<u64>,
    read_dispatched: IdMap<RequestId, Nanos>,
    /// Write sectors allowed in flight (not stalled) while readers are active.
    budget: u64,
    overshoot: Option<(u64, Nanos)>,
    window_start: Option<Nanos>,
    window_sum: u64,
    window_reads: u64,
    last_read: Option<Nanos>,
    /// The reads' mean latency with the budget at `write_min` (a moving average of such
    /// windows), and when it was last measured.
    floor: Option<(u64, Nanos)>,
    /// While a floor measurement holds the budget at `write_min`: the budget to go back to.
    probing: Option<u64>,
    /// Consecutive windows begun with the budget at `write_min`.
    windows_at_min: u32,
}

impl LatencyGuard {
    /// A scheduler with `cfg`.
    pub fn new(cfg: Config) -> LatencyGuard {
        LatencyGuard {
            budget: cfg.write_min,
            cfg,
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            reads_in_flight: 0,
            writes_in_flight: VecDeque::new(),
            write_lats: VecDeque::with_capacity(WRITE_LAT_HISTORY),
            write_lat_median: None,
            read_dispatched: IdMap::default(),
            overshoot: None,
            window_start: None,
            window_sum: 0,
            window_reads: 0,
            last_read: None,
            floor: None,
            probing: None,
            windows_at_min: 0,
        }
    }

    /// Build from settings.
    pub fn from_settings(s: &Settings) -> Result<LatencyGuard, TunableError> {
        Config::from_settings(s).map(LatencyGuard::new)
    }

    /// The write budget the control has settled on, in KiB (in force while readers are
    /// active).
    pub fn write_budget_kb(&self) -> u64 {
        self.budget / 2
    }

    /// The piece size new I/O is split into, in sectors: `max_request_kb` halved until it
    /// fits the budget (not below 4 KiB). A budget of 1 MiB or more under the default 1 MiB
    /// limit takes 1 MiB writes whole, one of 512-1020 KiB takes them in two halves. Halving
    /// keeps the pieces of one write equal (a 1 MiB write is never cut into 768 and 256 KiB).
    pub fn piece_sectors(&self) -> u64 {
        let mut piece = match self.cfg.max_request_sectors {
            0 => return self.budget,
            m => u64::from(m),
        };
        while piece > self.budget && piece / 2 >= PIECE_ALIGN {
            piece /= 2;
        }
        piece
    }

    fn readers_active(&self, now: Nanos) -> bool {
        self.reads_in_flight > 0
            || self
                .last_read
                .is_some_and(|t| now < t.saturating_add(self.cfg.reader_idle))
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

    /// Write sectors in flight that count toward the budget at `now` (not stalled), and when
    /// the oldest of them becomes stalled.
    fn young_writes(&self, now: Nanos) -> (u64, Option<Nanos>) {
        let all = || self.writes_in_flight.iter().map(|w| w.2).sum::<u64>();
        let Some(after) = self.stall_after() else {
            return (all(), None);
        };
        // Oldest first: the stalled ones are a prefix.
        let stalled = self
            .writes_in_flight
            .iter()
            .take_while(|(_, at, _)| now >= at.saturating_add(after))
            .count();
        let young = self
            .writes_in_flight
            .iter()
            .skip(stalled)
            .map(|w| w.2)
            .sum();
        let next = self
            .writes_in_flight
            .get(stalled)
            .map(|(_, at, _)| at.saturating_add(after));
        (young, next)
    }

    /// The reads' floor latency: their mean with the least write work in flight (the budget
    /// at `write_kb_min`), as last measured.
    pub fn floor(&self) -> Option<Nanos> {
        self.floor.map(|(f, _)| Nanos(f))
    }

    /// The read latency the control steers to at present.
    pub fn target(&self) -> Nanos {
        let relative = self.floor.map_or(0, |(f, _)| {
            f.saturating_mul(u64::from(self.cfg.target_factor))
        });
        Nanos(self.cfg.target_read_lat.as_ns().max(relative))
    }

    fn end_window(&mut self, now: Nanos) {
        let mean = self.window_sum / self.window_reads.max(1);
        self.window_start = Some(now);
        self.window_sum = 0;
        self.window_reads = 0;
        // The budget changes only here. A window counts toward the floor when the one before
        // it was at the minimum too, so that the writes a larger budget let in have drained.
        if self.budget == self.cfg.write_min {
            self.windows_at_min += 1;
        } else {
            self.windows_at_min = 0;
        }
        if self.windows_at_min >= FLOOR_WINDOWS {
            let f = self.floor.map_or(mean, |(f, _)| (3 * f + mean) / 4);
            self.floor = Some((f, now));
        }
        if self.floor.is_none() {
            // The control starts by measuring the floor.
            return;
        }
        if let Some(saved) = self.probing {
            if self.windows_at_min >= FLOOR_WINDOWS {
                self.probing = None;
                self.budget = saved;
            }
            return;
        }
        if mean > self.target().as_ns() {
            if self.budget > self.cfg.write_min {
                self.overshoot = Some((self.budget, now));
                self.budget = (self.budget / 2).max(self.cfg.write_min);
            }
        } else {
            let next = (self.budget + self.cfg.write_step).min(self.cfg.write_max);
            let barred = self.overshoot.is_some_and(|(b, at)| {
                next >= b && now < at.saturating_add(self.cfg.probe_interval)
            });
            if !barred {
                self.budget = next;
            }
        }
        let floor_due = self.cfg.floor_interval > Nanos::ZERO
            && self
                .floor
                .is_none_or(|(_, at)| now >= at.saturating_add(self.cfg.floor_interval));
        if self.budget > self.cfg.write_min && floor_due {
            self.probing = Some(self.budget);
            self.budget = self.cfg.write_min;
        }
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
        let Some(next) = self.writes.front() else {
            return Dispatch::Empty;
        };
        if self.writes_in_flight.len() as u32 >= self.cfg.write_depth_max {
            // A write completion (or a read) brings the driver back.
            return Dispatch::Empty;
        }
        if self.readers_active(now) {
            let (young, next_stall) = self.young_writes(now);
            // One write may always be in flight: writes never starve.
            if young > 0 && young + u64::from(next.sectors) > self.budget {
                // A completion, a read, or the oldest write turning stalled brings the driver
                // back.
                return match next_stall {
                    Some(until) => Dispatch::Idle { until },
                    None => Dispatch::Empty,
                };
            }
        }
        let rq = self.writes.pop_front().expect("not empty");
        self.writes_in_flight
            .push_back((rq.id, now, u64::from(rq.sectors)));
        Dispatch::Request(rq)
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        if !rq.op.is_read() {
            if let Some(i) = self
                .writes_in_flight
                .iter()
                .position(|(id, _, _)| *id == rq.id)
            {
                let (_, at, _) = self.writes_in_flight.remove(i).expect("found");
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
        Some(u32::try_from(self.piece_sectors()).unwrap_or(u32::MAX))
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let mut cfg = self.cfg.clone();
        cfg.set("latency-guard", name, value)?;
        cfg.check(&Settings::new())?;
        self.cfg = cfg;
        self.budget = self.budget.clamp(self.cfg.write_min, self.cfg.write_max);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};
    use proptest::prelude::*;

    /// A guard whose budget starts at 256 KiB, so that the control has room below 1 MiB.
    fn lg() -> LatencyGuard {
        with(&[])
    }

    /// `lg()` with `settings` on top.
    fn with(settings: &[(&str, i64)]) -> LatencyGuard {
        let mut s = Settings::new();
        s.set("write_kb_min", 256);
        for (k, v) in settings {
            s.set(*k, *v);
        }
        LatencyGuard::from_settings(&s).unwrap()
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

    /// `n` control windows of two reads each taking `lat_us`; ids from `*id`.
    fn windows(s: &mut LatencyGuard, t: &mut Nanos, id: &mut u64, n: usize, lat_us: u64) {
        windows_by_budget(s, t, id, n, |_| lat_us);
    }

    /// `n` control windows of two reads each, whose latency (us) depends on the budget (KiB).
    fn windows_by_budget(
        s: &mut LatencyGuard,
        t: &mut Nanos,
        id: &mut u64,
        n: usize,
        lat_us: impl Fn(u64) -> u64,
    ) {
        for _ in 0..n {
            let lat = Nanos::from_us(lat_us(s.write_budget_kb()));
            *t = read_with_latency(s, *id, *t, lat);
            *t = read_with_latency(s, *id + 1, *t + Nanos::from_ms(20), lat);
            *id += 2;
        }
    }

    /// A write of `kb` KiB from ctx 1.
    fn write_kb(id: u64, kb: u32) -> Request {
        rq(id, 1).sector(id * 4096).sectors(kb * 2).write().build()
    }

    #[test]
    fn pieces_are_max_request_kb_halved_until_they_fit_the_budget() {
        let s = LatencyGuard::new(Config::default());
        assert_eq!(s.write_budget_kb(), 1024, "starts at write_kb_min");
        assert_eq!(s.max_request_sectors(), Some(2048), "1 MiB writes whole");
        let piece_kb = |budget_kb: i64, max_kb: i64| {
            with(&[("write_kb_min", budget_kb), ("max_request_kb", max_kb)])
                .max_request_sectors()
                .map(|p| p / 2)
        };
        assert_eq!(piece_kb(1536, 1024), Some(1024), "at most max_request_kb");
        assert_eq!(piece_kb(768, 1024), Some(512), "two halves");
        assert_eq!(piece_kb(256, 1024), Some(256), "four quarters");
        assert_eq!(piece_kb(4, 1024), Some(4), "never below 4 KiB");
        assert_eq!(
            piece_kb(4, 12),
            Some(6),
            "12 KiB halves once: 3 KiB is below 4"
        );
        assert_eq!(
            piece_kb(1500, 0),
            Some(1500),
            "no limit of its own: one piece of the whole budget"
        );
        let mut set = Settings::new();
        set.set("write_kb_step", 6);
        let err = LatencyGuard::from_settings(&set).unwrap_err().to_string();
        assert!(
            err.contains("write_kb_step (6) is not a multiple of 4 KiB"),
            "{err}"
        );
    }

    #[test]
    fn with_no_reader_writes_fill_up_to_write_depth_max() {
        let mut s = lg();
        for i in 0..100 {
            s.insert(write_kb(i, 1024), Nanos::ZERO);
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
    fn an_active_reader_limits_the_write_bytes_in_flight_to_the_budget() {
        let mut s = lg();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        for i in 0..10 {
            s.insert(write_kb(i, 64), t);
        }
        let n = std::iter::from_fn(|| take(&mut s, t)).count();
        assert_eq!(n, 4, "four 64 KiB writes fill the 256 KiB budget");
        // After reader_idle without reads, the budget no longer applies.
        let later = t + Nanos::from_ms(11);
        let n = std::iter::from_fn(|| take(&mut s, later)).count();
        assert_eq!(n, 6);
    }

    #[test]
    fn one_write_larger_than_the_budget_goes_alone_so_writes_never_starve() {
        let mut s = lg();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        s.insert(write_kb(1, 1024), t);
        s.insert(write_kb(2, 4), t);
        let big = take(&mut s, t).expect("nothing in flight: the write goes");
        assert_eq!(big.sectors, 2048);
        assert!(
            take(&mut s, t).is_none(),
            "the budget is spent, even for 4 KiB"
        );
        s.complete(&big, t + Nanos::from_us(100));
        assert!(take(&mut s, t + Nanos::from_us(100)).is_some());
    }

    /// Ten 256 KiB writes completed in 100 us each while a reader is active; returns the time
    /// after.
    fn writes_of_100_us(s: &mut LatencyGuard, mut t: Nanos) -> Nanos {
        for i in 0..10 {
            s.insert(write_kb(500 + i, 256), t);
            let w = take(s, t).expect("one write fits the budget");
            t += Nanos::from_us(100);
            s.complete(&w, t);
        }
        t
    }

    #[test]
    fn a_write_outstanding_stall_factor_times_the_median_stops_counting_toward_the_budget() {
        let mut s = lg();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let t = writes_of_100_us(&mut s, t);
        assert_eq!(
            s.stall_after(),
            Some(Nanos::from_us(400)),
            "4 x the 100 us median"
        );
        for i in 0..3 {
            s.insert(write_kb(20 + i, 256), t);
        }
        let first = take(&mut s, t).expect("fills the 256 KiB budget");
        assert_eq!(
            s.dispatch(t),
            Dispatch::Idle {
                until: t + Nanos::from_us(400)
            },
            "the budget is full until the outstanding write stalls"
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
        let mut s = with(&[("write_depth_max", 2)]);
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let t = writes_of_100_us(&mut s, t);
        for i in 0..3 {
            s.insert(write_kb(20 + i, 256), t);
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
        let mut s = with(&[("stall_factor", 0)]);
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let t = writes_of_100_us(&mut s, t);
        assert_eq!(s.stall_after(), None);
        s.insert(write_kb(1, 256), t);
        s.insert(write_kb(2, 256), t);
        assert!(take(&mut s, t).is_some());
        assert_eq!(s.dispatch(t + Nanos::from_ms(5)), Dispatch::Empty);
    }

    #[test]
    fn the_budget_grows_by_write_kb_step_per_window_while_reads_are_fast() {
        let mut s = lg();
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 1, 100);
        assert_eq!(
            s.write_budget_kb(),
            256,
            "no floor yet: the first windows measure it"
        );
        windows(&mut s, &mut t, &mut id, 1, 100);
        assert_eq!(s.floor(), Some(Nanos::from_us(100)));
        assert_eq!(s.write_budget_kb(), 256 + 128);
        windows(&mut s, &mut t, &mut id, 4, 100);
        assert_eq!(s.write_budget_kb(), 256 + 5 * 128);
        // And new I/O is cut to fit it: 896 KiB takes 512 KiB halves of 1 MiB.
        assert_eq!(s.max_request_sectors(), Some(1024));
    }

    #[test]
    fn slow_reads_halve_the_budget_and_the_overshoot_is_not_retried_until_probe_interval() {
        let mut s = lg();
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 7, 100);
        assert_eq!(s.write_budget_kb(), 1024);
        windows(&mut s, &mut t, &mut id, 1, 3000);
        assert_eq!(s.write_budget_kb(), 512);
        // Fast again: climbs to 896 KiB and stays under the overshoot (1 MiB) ...
        windows(&mut s, &mut t, &mut id, 10, 100);
        assert_eq!(s.write_budget_kb(), 896);
        // ... until probe_interval (1 s) after the overshoot.
        windows(&mut s, &mut t, &mut id, 60, 100);
        assert!(s.write_budget_kb() > 1024, "{}", s.write_budget_kb());
    }

    #[test]
    fn the_budget_stays_within_write_kb_min_and_write_kb_max() {
        let mut s = with(&[
            ("write_kb_min", 512),
            ("write_kb_max", 1024),
            ("target_factor", 0),
        ]);
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 10, 5000);
        assert_eq!(s.write_budget_kb(), 512);
        windows(&mut s, &mut t, &mut id, 60, 100);
        assert_eq!(s.write_budget_kb(), 1024);
    }

    #[test]
    fn on_a_device_with_slow_reads_the_target_follows_their_floor() {
        let run = |s: &mut LatencyGuard| {
            let (mut t, mut id) = (Nanos::ZERO, 0);
            // Every read takes 1.5 ms, above the absolute 250 us target.
            windows(s, &mut t, &mut id, 5, 1500);
        };
        let mut relative = lg();
        run(&mut relative);
        assert_eq!(relative.target(), Nanos::from_us(3000));
        assert!(
            relative.write_budget_kb() > 256,
            "{}",
            relative.write_budget_kb()
        );
        let mut absolute = with(&[("target_factor", 0)]);
        run(&mut absolute);
        assert_eq!(absolute.write_budget_kb(), 256);
    }

    #[test]
    fn every_floor_interval_the_budget_drops_to_the_minimum_for_two_windows() {
        let mut s = lg();
        let (mut t, mut id) = (Nanos::ZERO, 0);
        // Fast reads: the budget grows by a step a window (of 20.2 ms) after the first floor
        // measurement (two windows), until the next is due a second later.
        windows(&mut s, &mut t, &mut id, 2, 100);
        let first = t;
        let mut before = s.write_budget_kb();
        // Bounded, so that a control that never grows (or never drops back) fails here
        // instead of looping: the floor is due after about 50 windows.
        let mut grown = 0;
        while s.write_budget_kb() > 256 || before == 256 {
            before = s.write_budget_kb();
            windows(&mut s, &mut t, &mut id, 1, 100);
            grown += 1;
            assert!(
                grown <= 100,
                "no floor measurement in {grown} windows (budget {} KiB)",
                s.write_budget_kb()
            );
        }
        assert!(
            t >= first + Nanos::from_ms(1000) && t < first + Nanos::from_ms(1030),
            "{t} after {first}"
        );
        assert_eq!(before, 256 + 50 * 128, "grew a step per window meanwhile");
        windows(&mut s, &mut t, &mut id, 1, 100);
        assert_eq!(
            s.write_budget_kb(),
            256,
            "the first window at the minimum drains"
        );
        windows(&mut s, &mut t, &mut id, 1, 100);
        assert_eq!(
            s.write_budget_kb(),
            before + 128,
            "back where the control had taken it"
        );
    }

    #[test]
    fn reads_slow_only_under_a_larger_budget_keep_the_target_but_slow_at_the_minimum_raise_it() {
        // Reads take 100 us at the minimum budget and 5 ms above it: the writes are what they
        // wait for, and the budget stays low.
        let mut s = lg();
        let (mut t, mut id) = (Nanos::ZERO, 0);
        let caused = |kb: u64| if kb > 256 { 5000 } else { 100 };
        windows_by_budget(&mut s, &mut t, &mut id, 300, caused);
        assert_eq!(s.target(), Nanos::from_us(250));
        assert!(s.write_budget_kb() <= 384, "{}", s.write_budget_kb());
        // Reads take 5 ms at the minimum budget too: the writes are not the cause, the floor
        // follows, and the budget is let grow.
        let mut s = lg();
        windows(&mut s, &mut t, &mut id, 2, 100);
        windows(&mut s, &mut t, &mut id, 300, 5000);
        let floor = s.floor().unwrap();
        assert!(floor > Nanos::from_us(4900), "{floor}");
        assert_eq!(s.target(), Nanos(2 * floor.as_ns()));
        assert!(s.write_budget_kb() > 1024, "{}", s.write_budget_kb());
    }

    #[test]
    fn tunables_are_checked_across_fields_and_settable_at_run_time() {
        let mut set = Settings::new();
        set.set("write_kb_min", 8192).set("write_kb_max", 4096);
        assert!(matches!(
            LatencyGuard::from_settings(&set),
            Err(TunableError::Invalid { .. })
        ));
        let mut s = lg();
        s.set_tunable("write_kb_min", 768).unwrap();
        assert_eq!(s.write_budget_kb(), 768);
        assert!(s.set_tunable("write_kb_max", 512).is_err());
        assert!(s.set_tunable("no_such", 1).is_err());
    }

    #[test]
    fn readers_stop_counting_as_active_exactly_reader_idle_after_the_last_read() {
        let mut s = lg();
        let t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        for i in 0..6 {
            s.insert(write_kb(i, 64), t);
        }
        let just_before = t + Nanos::from_ms(10) - Nanos(1);
        assert_eq!(std::iter::from_fn(|| take(&mut s, just_before)).count(), 4);
        let idle = t + Nanos::from_ms(10);
        assert_eq!(
            std::iter::from_fn(|| take(&mut s, idle)).count(),
            2,
            "`reader_idle` after the last read the writes are no longer held"
        );
    }

    #[test]
    fn a_read_still_in_flight_keeps_the_reader_active() {
        let mut s = lg();
        s.insert(rq(1000, 9).sector(1 << 30).read().build(), Nanos::ZERO);
        let r = take(&mut s, Nanos::ZERO).expect("the read goes first");
        for i in 0..6 {
            s.insert(write_kb(i, 64), Nanos::ZERO);
        }
        let late = Nanos::from_ms(50);
        assert_eq!(
            std::iter::from_fn(|| take(&mut s, late)).count(),
            4,
            "50 ms after its insertion, the read at the device still holds the writes"
        );
        assert_eq!(s.queued(), 2);
        s.complete(&r, late);
        let later = late + Nanos::from_ms(10);
        assert_eq!(std::iter::from_fn(|| take(&mut s, later)).count(), 2);
        assert_eq!(s.queued(), 0);
        assert_eq!(s.name(), "latency-guard");
    }

    #[test]
    fn the_stall_threshold_is_the_median_of_the_last_32_write_latencies() {
        let mut s = lg();
        let mut t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        let mut id = 0;
        let mut write_taking = |s: &mut LatencyGuard, t: &mut Nanos, us: u64| {
            id += 1;
            s.insert(write_kb(id, 4), *t);
            let w = take(s, *t).expect("nothing else in flight");
            *t += Nanos::from_us(us);
            s.complete(&w, *t);
        };
        for _ in 0..10 {
            write_taking(&mut s, &mut t, 100);
        }
        write_taking(&mut s, &mut t, 1000);
        assert_eq!(s.stall_after(), Some(Nanos::from_us(400)), "one slow write");
        write_taking(&mut s, &mut t, 1000);
        assert_eq!(
            s.stall_after(),
            Some(Nanos::from_us(400)),
            "the upper median of 12: still 100 us"
        );
        // 40 fast writes, then 20 slow: of the last 32, 20 are slow.
        let mut s = lg();
        let mut t = read_with_latency(&mut s, 1000, Nanos::ZERO, Nanos::from_us(50));
        for _ in 0..40 {
            write_taking(&mut s, &mut t, 100);
        }
        for _ in 0..20 {
            write_taking(&mut s, &mut t, 1000);
        }
        assert_eq!(s.stall_after(), Some(Nanos::from_us(4000)));
    }

    #[test]
    fn a_window_ends_when_a_read_completes_window_ms_after_it_began() {
        let mut s = lg();
        // The first read opens the window at its dispatch and closes it 20 ms later; the second
        // window begins there and also lasts exactly 20 ms: two windows at the minimum, so the
        // floor is measured.
        let t = read_with_latency(&mut s, 1, Nanos::ZERO, Nanos::from_ms(20));
        assert_eq!(s.floor(), None);
        read_with_latency(&mut s, 2, t, Nanos::from_ms(20));
        assert_eq!(s.floor(), Some(Nanos::from_ms(20)));
        // The floor is a moving average: 3/4 of the old and 1/4 of each new window.
        let mut s = lg();
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 2, 400);
        assert_eq!(s.floor(), Some(Nanos::from_us(400)));
        // Hold the budget at the minimum (absolute target, slow reads) to measure again.
        let mut s = with(&[("target_factor", 0)]);
        windows(&mut s, &mut t, &mut id, 2, 400);
        windows(&mut s, &mut t, &mut id, 1, 800);
        assert_eq!(s.floor(), Some(Nanos::from_us(500)));
        assert_eq!(s.write_budget_kb(), 256);
    }

    #[test]
    fn reads_exactly_at_the_target_let_the_budget_grow() {
        let mut s = with(&[("target_factor", 0)]);
        let (mut t, mut id) = (Nanos::ZERO, 0);
        // The second window measures the floor and then steers.
        windows(&mut s, &mut t, &mut id, 2, 250);
        assert_eq!(
            s.write_budget_kb(),
            256 + 128,
            "250 us is not above the target"
        );
        windows(&mut s, &mut t, &mut id, 1, 251);
        assert_eq!(
            s.write_budget_kb(),
            256,
            "above it: halved, not below the minimum"
        );
    }

    #[test]
    fn slow_reads_at_the_minimum_leave_no_overshoot_to_avoid() {
        // An overshoot is remembered only when the budget could be halved: slow reads at
        // write_kb_min bar no budget, so the next fast window grows it at once.
        let mut s = with(&[("target_factor", 0)]);
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 4, 5000);
        assert_eq!(s.write_budget_kb(), 256);
        windows(&mut s, &mut t, &mut id, 1, 100);
        assert_eq!(s.write_budget_kb(), 256 + 128);
    }

    #[test]
    fn an_overshot_budget_is_tried_again_exactly_probe_interval_after_the_overshoot() {
        let mut s = with(&[("target_factor", 0), ("floor_interval", 0)]);
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 3, 100);
        assert_eq!(s.write_budget_kb(), 512);
        windows(&mut s, &mut t, &mut id, 1, 5000);
        let overshoot = t;
        assert_eq!(s.write_budget_kb(), 256);
        windows(&mut s, &mut t, &mut id, 2, 100);
        assert_eq!(
            s.write_budget_kb(),
            384,
            "512 overshot: not tried again yet"
        );
        // A window ending exactly probe_interval after the overshoot may grow back to it.
        let at = overshoot + Nanos::from_ms(1000) - Nanos::from_us(100);
        assert!(at > t + Nanos::from_ms(20));
        read_with_latency(&mut s, 100, at, Nanos::from_us(100));
        assert_eq!(s.write_budget_kb(), 512);
    }

    #[test]
    fn a_floor_due_while_the_budget_is_at_the_minimum_is_measured_without_a_probe() {
        let mut s = with(&[("target_factor", 0)]);
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 3, 100);
        assert_eq!(s.write_budget_kb(), 512);
        // More than floor_interval later, slow reads halve the budget to the minimum: the
        // floor is due, but the budget is already where it would be measured.
        t = read_with_latency(&mut s, 100, t + Nanos::from_ms(1000), Nanos::from_ms(5));
        assert_eq!(s.write_budget_kb(), 256);
        // Fast again: the control grows the budget, then (the floor still due) drops it to the
        // minimum for two windows and goes back to where it had taken it.
        t = read_with_latency(&mut s, 101, t + Nanos::from_ms(20), Nanos::from_us(100));
        assert_eq!(s.write_budget_kb(), 256);
        read_with_latency(&mut s, 102, t + Nanos::from_ms(20), Nanos::from_us(100));
        assert_eq!(s.write_budget_kb(), 384);
    }

    #[test]
    fn floor_interval_zero_never_drops_a_grown_budget_to_measure() {
        let mut s = with(&[("floor_interval", 0)]);
        let (mut t, mut id) = (Nanos::ZERO, 0);
        windows(&mut s, &mut t, &mut id, 2, 100);
        let mut last = s.write_budget_kb();
        for _ in 0..70 {
            windows(&mut s, &mut t, &mut id, 1, 100);
            let now = s.write_budget_kb();
            assert!(now > last || now == 65_536, "{last} -> {now}");
            last = now;
        }
        assert!(
            t > Nanos::from_ms(1400),
            "{t}: past a floor_interval's default"
        );
    }

    #[test]
    fn write_kb_min_may_equal_write_kb_max_and_a_larger_one_is_named() {
        let mut set = Settings::new();
        set.set("write_kb_min", 4096).set("write_kb_max", 4096);
        let s = LatencyGuard::from_settings(&set).unwrap();
        assert_eq!(s.write_budget_kb(), 4096);
        set.set("write_kb_min", 8192);
        let err = LatencyGuard::from_settings(&set).unwrap_err().to_string();
        assert!(
            err.contains("write_kb_min (8192) is larger than write_kb_max (4096)"),
            "{err}"
        );
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
