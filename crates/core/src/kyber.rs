//! kyber: per-domain dispatch tokens whose number follows measured latencies (Omar Sandoval).
//!
//! Follows `block/kyber-iosched.c` of Linux 6.3 (the kernel of the ICPE'24 study, 6.3.8; the
//! functions modelled here, `kyber_timer_fn`, `calculate_percentile`, `add_latency_sample`,
//! `kyber_resize_domain`, `kyber_dispatch_request` and `kyber_limit_depth`, have the same logic
//! from 5.0 through 6.16, where only the timer accessor was renamed); see `docs/kyber.md`.
//!
//! Requests fall into four *domains* by operation: reads, writes, discards and other. A domain
//! may have at most `depth` requests at the device: a dispatch takes one of its tokens and the
//! completion gives it back. Depths start at 256, 128, 64 and 16 and never exceed those.
//! Dispatch serves the domains round robin, up to a batch of 16 reads, 8 writes, 1 discard, 1
//! other in a row; a domain out of requests or tokens ends its batch early. New requests wait
//! in the staging list of their CPU's software queue (`kcq`, by [`Request::cpu`]: the CPU the
//! request was allocated on, `rq->mq_ctx`), where they may be merged; the first time a token
//! is taken while the domain's dispatch list is empty, every staging list of the domain moves
//! to it, CPU by CPU from CPU 0 (`kyber_flush_busy_kcqs`: `sbitmap_for_each_set` over the
//! domain's `kcq_map`). So a domain's requests go in CPU order within one such flush, each
//! CPU's in arrival order; with every request on CPU 0 (the simulator, the executors), in
//! arrival order.
//!
//! **Depth control.** Each completion of a read, write or discard adds two samples to its
//! domain's histograms: *total* latency (admission to completion) and *I/O* latency (dispatch
//! to completion). A histogram has 8 buckets a quarter of the domain's target wide; the last
//! takes everything beyond 1.75 targets. A completion also sets the timer to the start of the
//! 26th clock tick (HZ 250) after the one under way, 100 to 104 ms ahead (`timer_reduce`
//! with `jiffies + HZ / 10`, filed one tick late by the timer wheel: [`timer_expiry`]),
//! unless it is already due sooner. When the timer fires, a domain's percentile is computed
//! once it has 500 samples, or once a second has passed since the first time the timer found
//! samples there (then the histogram is emptied); the two histograms of a domain share that
//! one-second clock. Then:
//!
//! - there is *congestion* if any domain's I/O-latency p90 lies beyond its target (bucket 4 or
//!   more);
//! - each domain with a total-latency p99 bucket `b` (this time's, or under congestion the one
//!   remembered from an earlier time) gets `depth * (b + 1) / 4`, clamped to 1 ..= its
//!   maximum, if there is congestion or `b >= 4`. So under congestion domains within target
//!   shrink (to a quarter at best) and those beyond it grow (up to double); without congestion
//!   only domains beyond their target grow back. A p99 is remembered until congestion uses it.
//!
//! The timer is evaluated lazily: at the start of every call, if its time has come, it fires
//! as of that time (before the call's own completion is counted). Between calls no samples
//! arrive and no token can be taken, so this decides exactly as a real timer would.
//!
//! Every request holds one of `nr_requests` (256 by default, a tunable) scheduler tags from
//! admission to completion, asynchronous ones (writeback) at most 75% of them (192 of 256);
//! beyond that they wait outside (see [`crate::tags`]). Flushes bypass
//! the scheduler and go to the device first.
//!
//! ## Tunables (sysfs names)
//! | name | unit | default | meaning |
//! |---|---|---|---|
//! | `read_lat_nsec` | ns | 2000000 | read latency target |
//! | `write_lat_nsec` | ns | 10000000 | write latency target |
//!
//! The discard target (5 s), the depths, batches and the async share are constants, as in the
//! kernel.
//!
//! ## Deviations from the kernel
//! - **Tokens are counted**: a domain never has more than `depth` requests at the device.
//!   The kernel's tokens are bit numbers; after a shrink, a request may take a freed bit below
//!   the new depth while bits above it are still held, so a domain briefly exceeds its depth.
//! - **Merging**: a new read or write merges into one of the last 8 requests staged in its
//!   domain by the CPU it is submitted on (newest first; `kyber_bio_merge` looks in the
//!   submitting CPU's `kcq` only) that ends where it starts or starts where it ends, with the same
//!   operation and I/O priority, up to the device's limit (the `max_sectors` the block layer passes); a candidate it is adjacent to
//!   but too large for stops the search, as in `blk_bio_list_merge`. Discards never merge.
//! - **Tags are counted** ([`crate::tags`]): at most 75% of `nr_requests` async requests hold
//!   tags, as Linux 6.17 on counts it (`kyber_depth_updated` over the whole map). 6.3's limit
//!   is a shallow depth in each 64-tag word of the map allocated at the start (256 tags for a
//!   deep device), so there an `nr_requests` lowered below 256 afterwards limits async requests
//!   less (at 8, not at all); at 256 and at multiples of 64 above it the two agree.
//! - The `OTHER` domain exists (depth 16, batch 1) but no request of ours falls in it: flushes
//!   bypass, and we have no zone or write-zeroes operations.

use std::collections::{BTreeMap, VecDeque};

use crate::fifo::Fifos;
use crate::id_map::IdMap;
use crate::request::{Op, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::tags::SchedTags;
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

/// The discard domain's latency target (not tunable).
pub const DISCARD_LAT: Nanos = Nanos::from_secs(5);
/// Each domain's largest (and initial) depth, in [`Domain`] order.
pub const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
/// Each domain's batch, in [`Domain`] order.
pub const BATCH: [u32; DOMAINS] = [16, 8, 1, 1];
/// Scheduler tags (`nr_requests`) by default: 256, the kernel's value for a device queue depth
/// of 128 or more.
pub const NR_REQUESTS: u32 = 256;
/// Tags asynchronous requests may hold at the default `nr_requests`: 75% of them
/// (`kyber_limit_depth`).
pub const ASYNC_DEPTH: u32 = async_depth(NR_REQUESTS);

/// Tags asynchronous requests may hold among `nr_requests`: `KYBER_ASYNC_PERCENT` (75) of them,
/// as `kyber_depth_updated` counts it from Linux 6.17 on (over the whole tag map; before, 75% of
/// each 64-tag word of the map allocated at the scheduler's start, the same at 256 tags).
pub const fn async_depth(nr_requests: u32) -> u32 {
    nr_requests * 75 / 100
}

/// The kernel's clock tick, `1 / CONFIG_HZ`: 4 ms at `CONFIG_HZ = 250` (the Kconfig default,
/// and the kernel of this project's recordings, Linux 6.18.44 on the VM). Ticks fall at
/// multiples of it on the scheduler's clock.
pub const TICK: Nanos = Nanos::from_ms(4);
/// The ticks a completion sets the timer ahead of the current one: `HZ / 10`, 100 ms.
pub const TIMER_TICKS: u64 = 25;

/// When a timer armed at `now` fires: `timer_reduce(&kqd->timer, jiffies + HZ / 10)` in
/// `kyber_completed_request` counts from the tick under way (`jiffies`, whole ticks), and the
/// timer wheel files a timer one tick past its expiry so that it cannot fire early
/// (`calc_index` in kernel/time/timer.c rounds a level-0 expiry up by its granularity, one
/// jiffy), so it fires at the start of tick `jiffies + HZ / 10 + 1`: 100 to 104 ms after
/// `now`, and 104 or 108 ms between firings when the next completion comes in the tick the
/// timer fired in or the one after (the 26 and 27 ticks kfid48 measured between
/// `kyber_latency` events).
pub fn timer_expiry(now: Nanos) -> Nanos {
    let tick = TICK.as_ns();
    Nanos::from_ns((now.as_ns() / tick + TIMER_TICKS + 1) * tick)
}
/// Samples after which a percentile is computed without waiting.
pub const MIN_SAMPLES: u32 = 500;
/// How long after samples were first seen a percentile is computed whatever their number.
pub const SAMPLE_WINDOW: Nanos = Nanos::from_secs(1);

/// Number of domains.
pub const DOMAINS: usize = 4;
/// Histogram buckets: four within the target, four beyond.
const BUCKETS: usize = 8;
/// Buckets within the target.
const GOOD_BUCKETS: usize = 4;
/// Domains with latency histograms (all but OTHER).
const MEASURED: usize = 3;
const TOTAL: usize = 0;
const IO: usize = 1;

crate::tunable::tunables! {
    policy: "kyber";
    /// kyber's tunables, as sysfs names them.
    pub const TUNABLES;
    /// kyber's settings.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// Read latency target (`read_lat_nsec`, 2 ms).
        read_lat: Nanos = "read_lat_nsec" {
            unit: Ns,
            default: 2_000_000,
            min: 0,
            max: i64::MAX,
            doc: "read latency target: reads' p90 device latency beyond it means congestion",
        },
        /// Write latency target (`write_lat_nsec`, 10 ms).
        write_lat: Nanos = "write_lat_nsec" {
            unit: Ns,
            default: 10_000_000,
            min: 0,
            max: i64::MAX,
            doc: "write latency target: writes' p90 device latency beyond it means congestion",
        },
        /// Scheduler tags (`nr_requests`, the queue's attribute): one per request from
        /// admission to completion; asynchronous requests may hold three quarters of them
        /// (`kyber_depth_updated`, `kyber_limit_depth`). 256 for a deep device.
        nr_requests: u32 = "nr_requests" {
            unit: Requests,
            default: 256,
            min: 4,
            max: 2048,
            doc: "scheduler tags, one per request from admission to completion; async requests \
                  may hold three quarters of them",
        },
    }
}

/// A scheduling domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// Reads.
    Read = 0,
    /// Writes.
    Write = 1,
    /// Discards.
    Discard = 2,
    /// Every other operation.
    Other = 3,
}

fn domain_of(rq: &Request) -> usize {
    match rq.op {
        Op::Read => Domain::Read as usize,
        Op::Write => Domain::Write as usize,
        Op::Discard => Domain::Discard as usize,
        Op::Flush => Domain::Other as usize,
    }
}

/// Whether `rq` counts against the async tags (flushes never get here).
fn throttled(rq: &Request) -> bool {
    !rq.is_sync()
}

/// The bucket of a latency sample against `target`.
fn bucket(target: Nanos, latency: Nanos) -> usize {
    if latency.as_ns() == 0 {
        return 0;
    }
    let width = (target.as_ns() >> 2).max(1);
    (((latency.as_ns() - 1) / width) as usize).min(BUCKETS - 1)
}

/// A request waiting in a domain, with its admission time.
#[derive(Debug)]
struct Waiting {
    rq: Request,
    admitted: Nanos,
}

/// Domain `d`'s FIFO of requests moved to dispatch (`khd->rqs`, no longer mergeable), in
/// order.
fn dispatch_of(d: usize) -> usize {
    d
}

/// The kyber scheduler.
#[derive(Debug)]
pub struct Kyber {
    config: Config,
    /// Every domain's dispatch FIFO ([`dispatch_of`]) and staging FIFOs ([`Kyber::staged`]).
    queues: Fifos<Waiting>,
    /// Per domain, each CPU's staging FIFO in [`Kyber::queues`] (its `kcq`'s list for the
    /// domain), by CPU; made at the CPU's first request.
    staged: [BTreeMap<u32, usize>; DOMAINS],
    depth: [u32; DOMAINS],
    in_flight: [u32; DOMAINS],
    cur_domain: usize,
    batching: u32,
    /// [domain][total, io][bucket].
    histograms: [[[u32; BUCKETS]; 2]; MEASURED],
    /// When a percentile is computed whatever the sample count, per domain.
    sample_deadline: [Option<Nanos>; MEASURED],
    /// A total-latency p99 bucket kept for the next congestion, per domain.
    remembered_p99: [Option<usize>; MEASURED],
    timer: Option<Nanos>,
    /// Admission and dispatch times of the requests at the device.
    started: IdMap<RequestId, (Nanos, Nanos)>,
    bypass: VecDeque<Request>,
    tags: SchedTags,
    /// Requests staged, in dispatch lists or bypassing (not those waiting for a tag).
    queued: usize,
}

impl Default for Kyber {
    fn default() -> Self {
        Kyber::new(Config::default())
    }
}

impl Kyber {
    /// An empty scheduler with `config`.
    pub fn new(config: Config) -> Kyber {
        let nr_requests = config.nr_requests;
        Kyber {
            config,
            queues: Fifos::new(DOMAINS),
            staged: Default::default(),
            depth: MAX_DEPTH,
            in_flight: [0; DOMAINS],
            cur_domain: 0,
            batching: 0,
            histograms: [[[0; BUCKETS]; 2]; MEASURED],
            sample_deadline: [None; MEASURED],
            remembered_p99: [None; MEASURED],
            timer: None,
            started: IdMap::default(),
            bypass: VecDeque::new(),
            tags: SchedTags::new(nr_requests, async_depth(nr_requests)),
            queued: 0,
        }
    }

    /// Build from user settings (see [`TUNABLES`]).
    pub fn from_settings(settings: &Settings) -> Result<Kyber, TunableError> {
        Ok(Kyber::new(Config::from_settings(settings)?))
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `domain`'s depth: how many of its requests may be at the device.
    pub fn depth(&self, domain: Domain) -> u32 {
        self.depth[domain as usize]
    }

    /// `domain`'s requests at the device now.
    pub fn in_flight(&self, domain: Domain) -> u32 {
        self.in_flight[domain as usize]
    }

    /// When the depth-control timer fires next, if it is armed.
    pub fn timer(&self) -> Option<Nanos> {
        self.timer
    }

    fn target(&self, domain: usize) -> Nanos {
        match domain {
            0 => self.config.read_lat,
            1 => self.config.write_lat,
            _ => DISCARD_LAT,
        }
    }

    /// Fire the timer if it is due at `now`.
    fn run_timer(&mut self, now: Nanos) {
        if let Some(at) = self.timer.filter(|&at| at <= now) {
            self.timer = None;
            self.adjust_depths(at);
        }
    }

    /// The bucket holding the `percentile`th sample of `domain`'s histogram `kind`, if it is
    /// time to compute it at `now` (which then empties the histogram).
    fn percentile(
        &mut self,
        domain: usize,
        kind: usize,
        percentile: u32,
        now: Nanos,
    ) -> Option<usize> {
        let buckets = self.histograms[domain][kind];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return None;
        }
        let deadline = *self.sample_deadline[domain].get_or_insert(now + SAMPLE_WINDOW);
        if samples < MIN_SAMPLES && deadline > now {
            return None;
        }
        self.sample_deadline[domain] = None;
        self.histograms[domain][kind] = [0; BUCKETS];
        let mut rank = (samples * percentile).div_ceil(100);
        for (b, &n) in buckets.iter().enumerate().take(BUCKETS - 1) {
            if n >= rank {
                return Some(b);
            }
            rank -= n;
        }
        Some(BUCKETS - 1)
    }

    /// The timer's work at `now`: detect congestion and resize the domains.
    fn adjust_depths(&mut self, now: Nanos) {
        let mut congested = false;
        for d in 0..MEASURED {
            if self
                .percentile(d, IO, 90, now)
                .is_some_and(|p90| p90 >= GOOD_BUCKETS)
            {
                congested = true;
            }
        }
        for (d, &max) in MAX_DEPTH.iter().enumerate().take(MEASURED) {
            let mut p99 = self.percentile(d, TOTAL, 99, now);
            if congested {
                p99 = p99.or(self.remembered_p99[d]);
                self.remembered_p99[d] = None;
            } else if p99.is_some() {
                self.remembered_p99[d] = p99;
            }
            let Some(p99) = p99 else { continue };
            if congested || p99 >= GOOD_BUCKETS {
                let scaled = (u64::from(self.depth[d]) * (p99 as u64 + 1)) >> 2;
                self.depth[d] = (scaled as u32).clamp(1, max);
            }
        }
    }

    /// Admit the requests waiting for an async tag, as far as tags are free.
    fn admit_waiting(&mut self, now: Nanos) {
        while let Some(rq) = self.tags.next_admitted() {
            self.stage(rq, now);
        }
    }

    /// CPU `cpu`'s staging FIFO of domain `d`, if it has had one.
    fn staged(&self, d: usize, cpu: u32) -> Option<usize> {
        self.staged[d].get(&cpu).copied()
    }

    fn stage(&mut self, rq: Request, now: Nanos) {
        self.queued += 1;
        let d = domain_of(&rq);
        let list = match self.staged(d, rq.cpu) {
            Some(list) => list,
            None => {
                let list = self.queues.add_list();
                self.staged[d].insert(rq.cpu, list);
                list
            }
        };
        self.queues.push_back(list, Waiting { rq, admitted: now });
    }

    /// The next request of the current domain, if it has one and a token for it.
    fn dispatch_current(&mut self, now: Nanos) -> Option<Request> {
        let d = self.cur_domain;
        let dispatch = dispatch_of(d);
        let q = &mut self.queues;
        let staged = || self.staged[d].values().copied();
        if q.is_empty(dispatch) && staged().all(|l| q.is_empty(l))
            || self.in_flight[d] >= self.depth[d]
        {
            return None;
        }
        if q.is_empty(dispatch) {
            // kyber_flush_busy_kcqs: the busy kcqs' lists of the domain, from CPU 0 up.
            for list in staged() {
                q.append(list, dispatch);
            }
        }
        let w = q.pop_front(dispatch).expect("a domain with requests");
        self.in_flight[d] += 1;
        self.batching += 1;
        self.queued -= 1;
        self.started.insert(w.rq.id, (w.admitted, now));
        Some(w.rq)
    }
}

impl Scheduler for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        self.run_timer(now);
        if !matches!(rq.op, Op::Read | Op::Write) || rq.sectors == 0 {
            return None;
        }
        let mut candidate = self
            .staged(domain_of(rq), rq.cpu)
            .and_then(|list| self.queues.back(list));
        for _ in 0..8 {
            let Some(slot) = candidate else { break };
            candidate = self.queues.prev(slot);
            let q = &mut self.queues.get_mut(slot).rq;
            if q.op != rq.op || q.prio != rq.prio {
                continue;
            }
            let back = q.end() == rq.sector;
            let front = rq.end() == q.sector;
            if !back && !front {
                continue;
            }
            if q.sectors + rq.sectors > max_sectors {
                return None;
            }
            if front {
                q.sector = rq.sector;
            }
            q.sectors += rq.sectors;
            return Some(q.id);
        }
        None
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        self.run_timer(now);
        if rq.op == Op::Flush {
            self.queued += 1;
            self.bypass.push_back(rq);
            return;
        }
        let throttle = throttled(&rq);
        self.tags.arrive(rq, throttle);
        self.admit_waiting(now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.run_timer(now);
        if let Some(rq) = self.bypass.pop_front() {
            self.queued -= 1;
            return Dispatch::Request(rq);
        }
        self.admit_waiting(now);
        if self.batching < BATCH[self.cur_domain] {
            if let Some(rq) = self.dispatch_current(now) {
                return Dispatch::Request(rq);
            }
        }
        self.batching = 0;
        for _ in 0..DOMAINS {
            self.cur_domain = (self.cur_domain + 1) % DOMAINS;
            if let Some(rq) = self.dispatch_current(now) {
                return Dispatch::Request(rq);
            }
        }
        Dispatch::Empty
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.run_timer(now);
        if rq.op == Op::Flush {
            return;
        }
        let d = domain_of(rq);
        self.in_flight[d] = self.in_flight[d].saturating_sub(1);
        self.tags.release(throttled(rq));
        // Only flushes are of the unmeasured domain (`KYBER_OTHER`), and they returned above.
        if let Some((admitted, dispatched)) = self.started.remove(&rq.id) {
            let target = self.target(d);
            let h = &mut self.histograms[d];
            h[TOTAL][bucket(target, now.saturating_sub(admitted))] += 1;
            h[IO][bucket(target, now.saturating_sub(dispatched))] += 1;
            let due = timer_expiry(now);
            self.timer = Some(self.timer.map_or(due, |t| t.min(due)));
        }
        self.admit_waiting(now);
    }

    fn bounds_own_requests(&self) -> bool {
        true
    }
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        Some(!self.tags.is_waiting(id))
    }
    fn sched_tags_admitted(&self) -> Option<u64> {
        Some(self.tags.admitted())
    }
    fn queued(&self) -> usize {
        self.queued + self.tags.waiting()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.config.set("kyber", name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};
    use crate::request::{IoClass, DEFAULT_MERGE_SECTORS};
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn take(s: &mut Kyber, now: Nanos) -> Option<Request> {
        match s.dispatch(now) {
            Dispatch::Request(r) => Some(r),
            _ => None,
        }
    }

    /// Dispatch until the policy answers Empty, completing nothing.
    fn take_all(s: &mut Kyber, now: Nanos) -> Vec<Request> {
        std::iter::from_fn(|| take(s, now)).collect()
    }

    /// One round: `reads` reads and `writes` sync writes arrive at `t`, are dispatched at
    /// `t + wait`, and complete `read_io` (reads) or `write_io` (writes) after that.
    /// Returns the time of the last completion.
    fn round(
        s: &mut Kyber,
        t: Nanos,
        (reads, read_io): (u64, Nanos),
        (writes, write_io): (u64, Nanos),
        wait: Nanos,
    ) -> Nanos {
        let base = t.as_ns() * 4;
        for i in 0..reads {
            s.insert(rq(base + i, 1).sector(i * 8).read().build(), t);
        }
        for i in 0..writes {
            s.insert(
                rq(base + 1_000 + i, 2).sector(i * 8).sync_write().build(),
                t,
            );
        }
        let out = take_all(s, t + wait);
        assert_eq!(out.len() as u64, reads + writes, "all dispatched at once");
        let mut done: Vec<(Nanos, Request)> = out
            .into_iter()
            .map(|r| {
                let io = if r.op.is_read() { read_io } else { write_io };
                (t + wait + io, r)
            })
            .collect();
        done.sort_by_key(|(at, r)| (*at, r.id));
        for (at, r) in &done {
            s.complete(r, *at);
        }
        done.last().map_or(t, |(at, _)| *at)
    }

    #[test]
    fn defaults_match_the_kernel() {
        let c = Config::default();
        assert_eq!(c.read_lat, Nanos::from_ms(2));
        assert_eq!(c.write_lat, Nanos::from_ms(10));
        let s = Kyber::default();
        let depths: Vec<u32> = [Domain::Read, Domain::Write, Domain::Discard, Domain::Other]
            .into_iter()
            .map(|d| s.depth(d))
            .collect();
        assert_eq!(depths, vec![256, 128, 64, 16]);
        assert_eq!(ASYNC_DEPTH, 192);
        let mut set = Settings::new();
        set.set("read_lat_nsec", 500_000);
        assert_eq!(
            Config::from_settings(&set).unwrap().read_lat,
            Nanos::from_us(500)
        );
        let mut k = Kyber::default();
        assert!(k.set_tunable("read_lat_nsec", -1).is_err());
        assert!(k.set_tunable("fifo_batch", 1).is_err());
        k.set_tunable("write_lat_nsec", 1).unwrap();
        assert_eq!(k.config().write_lat, Nanos(1));
    }

    #[test]
    fn latency_buckets_are_quarter_targets_with_the_target_itself_in_the_fourth() {
        let t = Nanos::from_ms(2);
        assert_eq!(bucket(t, Nanos::ZERO), 0);
        assert_eq!(bucket(t, Nanos::from_us(500)), 0);
        assert_eq!(bucket(t, Nanos::from_us(500) + Nanos(1)), 1);
        assert_eq!(bucket(t, Nanos::from_ms(2)), 3);
        assert_eq!(bucket(t, Nanos::from_ms(2) + Nanos(1)), 4);
        assert_eq!(bucket(t, Nanos::from_secs(9)), 7);
    }

    /// Mainline `calculate_percentile`: the percentile is the
    /// bucket where the running count reaches `samples * percentile / 100` (rounded up).
    #[test]
    fn percentile_is_the_bucket_holding_the_ranked_sample() {
        let mut s = Kyber::default();
        s.histograms[0][TOTAL][0] = 440;
        s.histograms[0][TOTAL][5] = 60;
        // 500 samples: the 450th (p90) is in bucket 5, the 440th (p88) still in bucket 0.
        assert_eq!(s.percentile(0, TOTAL, 90, Nanos::ZERO), Some(5));
        assert_eq!(s.histograms[0][TOTAL], [0; BUCKETS]);
        s.histograms[0][TOTAL][0] = 440;
        s.histograms[0][TOTAL][5] = 60;
        assert_eq!(s.percentile(0, TOTAL, 88, Nanos::ZERO), Some(0));
    }

    /// `kyber_dispatch_cur_domain` (mainline) flushes the domain's per-context lists into
    /// `khd->rqs` and takes the first; what it flushed is no longer in a `kcq->rq_list`, where
    /// `kyber_bio_merge` looks, so a write contiguous with it is not merged into it.
    #[test]
    fn kyber_bio_merge_does_not_merge_into_requests_flushed_for_dispatch() {
        let mut s = Kyber::default();
        s.insert(rq(1, 1).sector(0).write().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(100).write().build(), Nanos::ZERO);
        let Dispatch::Request(first) = s.dispatch(Nanos::ZERO) else {
            panic!("a write to dispatch")
        };
        assert_eq!(first.id, RequestId(1));
        // Request 2 was flushed with it and waits in the dispatch list.
        let next = rq(3, 1).sector(108).write().build();
        assert_eq!(s.try_merge(&next, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        // A write contiguous with a request still staged is merged.
        s.insert(next, Nanos::ZERO);
        let after = rq(4, 1).sector(116).write().build();
        assert_eq!(
            s.try_merge(&after, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(3))
        );
    }

    /// `kyber_bio_merge` through `blk_bio_list_merge` (mainline): a merge is refused only when
    /// the merged request would exceed the queue's limit (`ll_back_merge_fn`:
    /// `blk_rq_sectors(req) + bio_sectors(bio) > max`); exactly the limit merges.
    #[test]
    fn kyber_bio_merge_merges_up_to_exactly_the_size_limit() {
        let mut s = Kyber::default();
        let big = DEFAULT_MERGE_SECTORS - 8;
        s.insert(rq(1, 1).sector(0).sectors(big).write().build(), Nanos::ZERO);
        let fits = rq(2, 1).sector(u64::from(big)).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&fits, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
        let over = rq(3, 1)
            .sector(u64::from(DEFAULT_MERGE_SECTORS))
            .sectors(8)
            .write()
            .build();
        assert_eq!(s.try_merge(&over, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
    }

    /// `blk_rq_merge_ok` (6.18, block/blk-merge.c), which `kyber_bio_merge` reaches through
    /// `blk_bio_list_merge`: a bio of another I/O priority (`bi_ioprio`) or another
    /// operation does not merge into a contiguous staged request.
    #[test]
    fn kyber_bio_merge_refuses_another_priority_or_operation() {
        let mut s = Kyber::default();
        s.insert(rq(1, 1).sector(0).sectors(8).write().build(), Nanos::ZERO);
        let rt = rq(2, 1)
            .sector(8)
            .sectors(8)
            .write()
            .prio(IoClass::RealTime, 0)
            .build();
        assert_eq!(s.try_merge(&rt, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let read = rq(3, 1).sector(8).sectors(8).build();
        assert_eq!(s.try_merge(&read, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let same = rq(4, 1).sector(8).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&same, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
    }

    /// `calculate_percentile` (mainline) computes once 500 samples are in or once the
    /// timeout set at the first call has come: it waits only while
    /// `time_is_after_jiffies(latency_timeout)`, i.e. strictly before it.
    #[test]
    fn kyber_flush_busy_kcqs_splices_a_domains_kcqs_cpu_by_cpu() {
        // Reads staged on CPU 1, then CPU 0: the flush takes CPU 0's kcq first (its
        // kcq_map walked from bit 0), each kcq in arrival order; a read staged after the
        // flush waits until the flushed ones are dispatched.
        let mut s = Kyber::default();
        for (id, cpu) in [(1, 1), (2, 0), (3, 1), (4, 0)] {
            s.insert(
                rq(id, id as u32).sector(id * 100).cpu(cpu).build(),
                Nanos::ZERO,
            );
        }
        let first = take(&mut s, Nanos::ZERO).expect("a read");
        assert_eq!(first.id.0, 2);
        s.insert(rq(5, 5).sector(500).cpu(0).build(), Nanos::ZERO);
        let rest: Vec<u64> = take_all(&mut s, Nanos::ZERO)
            .iter()
            .map(|r| r.id.0)
            .collect();
        assert_eq!(rest, vec![4, 1, 3, 5]);
    }

    #[test]
    fn kyber_bio_merge_looks_in_the_submitting_cpus_kcq_only() {
        let mut s = Kyber::default();
        s.insert(rq(1, 1).sector(0).sectors(8).cpu(1).build(), Nanos::ZERO);
        let bio = |cpu| rq(2, 1).sector(8).sectors(8).cpu(cpu).build();
        assert_eq!(s.try_merge(&bio(0), 256, Nanos::ZERO), None);
        assert_eq!(s.try_merge(&bio(1), 256, Nanos::ZERO), Some(RequestId(1)));
    }

    #[test]
    fn calculate_percentile_computes_at_the_timeout_itself() {
        let mut s = Kyber::default();
        s.histograms[0][TOTAL][3] = 10;
        let t0 = Nanos::from_ms(5);
        assert_eq!(
            s.percentile(0, TOTAL, 90, t0),
            None,
            "10 samples, timeout set"
        );
        let just_before = Nanos(t0.0 + SAMPLE_WINDOW.0 - 1);
        assert_eq!(s.percentile(0, TOTAL, 90, just_before), None);
        assert_eq!(
            s.percentile(0, TOTAL, 90, t0 + SAMPLE_WINDOW),
            Some(3),
            "at the timeout"
        );
    }

    #[test]
    fn a_domain_never_has_more_than_its_depth_at_the_device() {
        let mut s = Kyber::default();
        for i in 0..100 {
            s.insert(rq(i, 1).sector(i * 8).read().build(), Nanos::ZERO);
        }
        for i in 0..200 {
            s.insert(
                rq(1_000 + i, 2).sector(i * 8).sync_write().build(),
                Nanos::ZERO,
            );
        }
        // 256 tags: the reads and 156 writes hold them, 44 writes wait for one; of the 156,
        // the write domain's depth lets 128 go.
        let out = take_all(&mut s, Nanos::ZERO);
        let reads = out.iter().filter(|r| r.op.is_read()).count();
        assert_eq!((reads, out.len() - reads), (100, 128));
        assert_eq!(s.in_flight(Domain::Write), 128);
        assert_eq!(s.queued(), 72);
        // A write completes: exactly one more write may go.
        let w = out.iter().find(|r| !r.op.is_read()).unwrap();
        s.complete(w, Nanos::from_ms(1));
        let more = take_all(&mut s, Nanos::from_ms(1));
        assert_eq!(more.len(), 1);
        assert!(!more[0].op.is_read());
    }

    #[test]
    fn domains_are_served_round_robin_in_batches_of_16_8_1() {
        let mut s = Kyber::default();
        for i in 0..40 {
            s.insert(rq(i, 1).sector(i * 8).read().build(), Nanos::ZERO);
        }
        for i in 0..20 {
            s.insert(
                rq(100 + i, 2).sector(i * 8).sync_write().build(),
                Nanos::ZERO,
            );
        }
        for i in 0..3 {
            let mut d = rq(200 + i, 3).sector(i * 8).write().build();
            d.op = Op::Discard;
            d.sync = true;
            s.insert(d, Nanos::ZERO);
        }
        let runs: Vec<(Op, usize)> =
            take_all(&mut s, Nanos::ZERO)
                .iter()
                .fold(Vec::new(), |mut runs, r| {
                    match runs.last_mut() {
                        Some((op, n)) if *op == r.op => *n += 1,
                        _ => runs.push((r.op, 1)),
                    }
                    runs
                });
        let (rd, wr, dc) = (Op::Read, Op::Write, Op::Discard);
        assert_eq!(
            runs,
            vec![
                (rd, 16),
                (wr, 8),
                (dc, 1),
                (rd, 16),
                (wr, 8),
                (dc, 1),
                (rd, 8),
                (wr, 4),
                (dc, 1)
            ]
        );
    }

    #[test]
    fn within_a_domain_requests_go_in_arrival_order() {
        let mut s = Kyber::default();
        for (i, sector) in [900u64, 10, 500].into_iter().enumerate() {
            s.insert(rq(i as u64, 1).sector(sector).read().build(), Nanos::ZERO);
        }
        let ids: Vec<u64> = take_all(&mut s, Nanos::ZERO)
            .iter()
            .map(|r| r.id.0)
            .collect();
        assert_eq!(ids, vec![0, 1, 2]);
    }

    #[test]
    fn the_timer_fires_on_the_26th_tick_after_the_first_completion_since_it_last_fired() {
        // kyber_completed_request: timer_reduce(jiffies + HZ / 10), filed one tick later by the
        // timer wheel (calc_index); at HZ 250 a completion at 1 ms (tick 0) fires at 104 ms.
        let mut s = Kyber::default();
        let end = round(
            &mut s,
            Nanos::ZERO,
            (1, Nanos::from_ms(1)),
            (0, Nanos::ZERO),
            Nanos::ZERO,
        );
        assert_eq!(end, Nanos::from_ms(1));
        assert_eq!(s.timer(), Some(Nanos::from_ms(104)));
        // Later completions do not push it back.
        round(
            &mut s,
            Nanos::from_ms(50),
            (1, Nanos::from_ms(1)),
            (0, Nanos::ZERO),
            Nanos::ZERO,
        );
        assert_eq!(s.timer(), Some(Nanos::from_ms(104)));
        // It fires at the first call at or after that time, not 100 ms after the completion.
        assert_eq!(s.dispatch(Nanos::from_ms(101)), Dispatch::Empty);
        assert_eq!(s.timer(), Some(Nanos::from_ms(104)));
        assert_eq!(s.dispatch(Nanos::from_ms(104)), Dispatch::Empty);
        assert_eq!(s.timer(), None);
        // Armed late in a tick it still counts from the tick's start: 100.5 ms ahead.
        assert_eq!(timer_expiry(Nanos::from_us(7_500)), Nanos::from_ms(108));
    }

    /// Five rounds of 100 reads (100 us at the device) and 100 writes (20 ms, twice the write
    /// target): the 500th sample arrives by 100 ms; returns the time after the timer fired.
    fn congest(s: &mut Kyber) -> Nanos {
        let mut t = Nanos::ZERO;
        for _ in 0..5 {
            t = round(
                s,
                t,
                (100, Nanos::from_us(100)),
                (100, Nanos::from_ms(20)),
                Nanos::ZERO,
            );
        }
        assert_eq!(s.depth(Domain::Read), 256, "no decision before the timer");
        let fire = s.timer().expect("armed");
        assert_eq!(s.dispatch(fire), Dispatch::Empty);
        fire
    }

    #[test]
    fn congestion_scales_each_domain_by_its_p99_bucket() {
        let mut s = Kyber::default();
        congest(&mut s);
        // Writes' p90 device latency is beyond target: congestion. Reads' p99 total latency is
        // in bucket 0, so reads get (0 + 1) / 4 of their depth; writes' p99 is in bucket 7, so
        // they would double, but are at their maximum already.
        assert_eq!(s.depth(Domain::Read), 64);
        assert_eq!(s.depth(Domain::Write), 128);
        assert_eq!(s.depth(Domain::Discard), 64, "no samples, no change");
    }

    /// `kyber_timer_fn`'s `domain_p99`: a domain's p99 computed in a window without congestion
    /// is kept; the next congested window with no p99 of its own uses it once and forgets it
    /// (reset to -1), so a later congested window without new samples leaves the depth alone.
    #[test]
    fn kyber_timer_fn_uses_a_remembered_p99_once_under_congestion() {
        let (r, w) = (Domain::Read as usize, Domain::Write as usize);
        let mut s = Kyber::default();
        // Window 1: 500 writes, total latency in bucket 1, device latency in bucket 0; no
        // congestion, and bucket 1 < KYBER_GOOD_BUCKETS: kept, nothing resized.
        s.histograms[w][TOTAL][1] = 500;
        s.histograms[w][IO][0] = 500;
        s.adjust_depths(Nanos::from_ms(100));
        assert_eq!(s.depth(Domain::Write), 128);
        assert_eq!(s.remembered_p99[w], Some(1));
        // Window 2: 500 reads whose device-latency p90 is past the read target (bucket 5:
        // congestion), no writes: the writes' remembered bucket 1 gives 128 * 2 / 4.
        s.histograms[r][IO][5] = 500;
        s.histograms[r][TOTAL][5] = 500;
        s.adjust_depths(Nanos::from_ms(200));
        assert_eq!(s.depth(Domain::Write), 64);
        assert_eq!(s.remembered_p99[w], None);
        // The reads' own p99 (bucket 5) grew them, clamped at their maximum.
        assert_eq!(s.depth(Domain::Read), 256);
        // Window 3: congested again, still no writes: nothing to scale the writes by.
        s.histograms[r][IO][5] = 500;
        s.histograms[r][TOTAL][5] = 500;
        s.adjust_depths(Nanos::from_ms(300));
        assert_eq!(s.depth(Domain::Write), 64);
    }

    #[test]
    fn without_congestion_a_domain_beyond_its_target_grows_back() {
        let mut s = Kyber::default();
        let mut t = congest(&mut s);
        assert_eq!(s.depth(Domain::Read), 64);
        // Reads now wait 3 ms before dispatch and take 1 ms at the device: device latency is
        // within target (no congestion), total latency (4 ms) is beyond it, in bucket 7.
        for _ in 0..8 {
            t = round(
                &mut s,
                t,
                (64, Nanos::from_ms(1)),
                (0, Nanos::ZERO),
                Nanos::from_ms(3),
            );
        }
        let fire = s.timer().expect("armed");
        assert_eq!(s.dispatch(fire), Dispatch::Empty);
        assert_eq!(s.depth(Domain::Read), 128);
    }

    #[test]
    fn without_congestion_a_domain_within_target_keeps_its_depth() {
        let mut s = Kyber::default();
        let mut t = congest(&mut s);
        for _ in 0..8 {
            t = round(
                &mut s,
                t,
                (64, Nanos::from_us(100)),
                (0, Nanos::ZERO),
                Nanos::ZERO,
            );
        }
        let fire = s.timer().expect("armed");
        assert_eq!(s.dispatch(fire), Dispatch::Empty);
        assert_eq!(s.depth(Domain::Read), 64);
    }

    #[test]
    fn under_lasting_congestion_depth_shrinks_to_one_and_no_further() {
        let mut s = Kyber::default();
        let mut t = Nanos::ZERO;
        let mut depths = vec![s.depth(Domain::Read)];
        // Reads within target beside writes at twice theirs, as long as it takes: each read
        // decision (500 samples) under congestion quarters the read depth.
        for _ in 0..400 {
            let reads = u64::from(s.depth(Domain::Read)).min(100);
            t = round(
                &mut s,
                t,
                (reads, Nanos::from_us(100)),
                (100, Nanos::from_ms(20)),
                Nanos::ZERO,
            );
            if let Some(fire) = s.timer() {
                t = t.max(fire);
                assert_eq!(s.dispatch(t), Dispatch::Empty);
            }
            if depths.last() != Some(&s.depth(Domain::Read)) {
                depths.push(s.depth(Domain::Read));
            }
        }
        assert_eq!(depths, vec![256, 64, 16, 4, 1]);
    }

    #[test]
    fn with_few_samples_congestion_is_seen_after_a_second_but_resizing_waits_for_500() {
        let mut s = Kyber::default();
        let mut t = Nanos::ZERO;
        let mut run_until = |s: &mut Kyber, end: Nanos| {
            // 10 reads within target and 10 writes at twice theirs per round, a round about
            // every 100 ms: far under 500 samples per decision.
            while t < end {
                t = round(
                    s,
                    t,
                    (10, Nanos::from_us(100)),
                    (10, Nanos::from_ms(20)),
                    Nanos::ZERO,
                );
                if let Some(fire) = s.timer() {
                    t = t.max(fire);
                    assert_eq!(s.dispatch(t), Dispatch::Empty);
                }
            }
        };
        // After a second the device-latency p90s are computed and find congestion, but the
        // total-latency p99 shares the one-second clock, which that computation restarted:
        // with no p99 yet, nothing is resized (as in the kernel).
        run_until(&mut s, Nanos::from_ms(1_500));
        assert_eq!(s.depth(Domain::Read), 256);
        // Once 500 total-latency samples have gathered, the reads' p99 (bucket 0) is known and
        // the next congestion quarters their depth.
        run_until(&mut s, Nanos::from_secs(8));
        assert_eq!(s.depth(Domain::Read), 64);
    }

    /// A QD1 reader beside a writer of 32 sync writes, both closed loops, on a device
    /// that serves writes one at a time, 200 us each (a drive whose buffer admits writes at
    /// one rate whatever the queue), and serves a read in `60 + 40 x (writes in the device)`
    /// us (a read waiting behind the writes fetched before it). `read_lat` is kyber's read
    /// target, the write target the default 10 ms. Runs `secs` simulated seconds; returns the
    /// write domain's final depth, the reader's mean latency over the last 10 s (us) and the
    /// writes completed in them.
    fn reader_beside_writer(read_lat: Nanos, secs: u64) -> (u32, f64, u64) {
        reader_beside_writer_of(read_lat, secs, 32, 200)
    }

    /// [`reader_beside_writer`] with a writer of `writer_qd` writes on a device serving one
    /// every `write_us`.
    fn reader_beside_writer_of(
        read_lat: Nanos,
        secs: u64,
        writer_qd: u64,
        write_us: u64,
    ) -> (u32, f64, u64) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut s = Kyber::new(Config {
            read_lat,
            ..Config::default()
        });
        let mut now = Nanos::ZERO;
        let mut next_id = 0u64;
        let mut fresh = |write: bool, now: Nanos| {
            next_id += 1;
            let b = rq(next_id, if write { 2 } else { 1 })
                .sector(next_id * 8)
                .at(now);
            if write {
                b.sync_write().build()
            } else {
                b.read().build()
            }
        };
        s.insert(fresh(false, now), now);
        for _ in 0..writer_qd {
            s.insert(fresh(true, now), now);
        }
        let mut done: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
        let mut at_device: HashMap<u64, Request> = HashMap::new();
        let (mut writes_in, mut write_free) = (0u64, Nanos::ZERO);
        let measure_from = Nanos::from_secs(secs - 10);
        let (mut read_ns, mut reads, mut writes) = (0u64, 0u64, 0u64);
        let end = Nanos::from_secs(secs);
        while now < end {
            while let Dispatch::Request(r) = s.dispatch(now) {
                let at = if r.op == Op::Write {
                    writes_in += 1;
                    write_free = write_free.max(now) + Nanos::from_us(write_us);
                    write_free
                } else {
                    now + Nanos::from_us(60 + 40 * writes_in)
                };
                done.push(Reverse((at, r.id.0)));
                at_device.insert(r.id.0, r);
            }
            let Reverse((at, id)) = done.pop().expect("the loops keep requests at the device");
            now = at;
            let r = at_device.remove(&id).expect("dispatched");
            s.complete(&r, now);
            let write = r.op == Op::Write;
            if write {
                writes_in -= 1;
            }
            if now >= measure_from {
                if write {
                    writes += 1;
                } else {
                    read_ns += (now - r.submitted).as_ns();
                    reads += 1;
                }
            }
            s.insert(fresh(write, now), now);
        }
        let mean_us = read_ns as f64 / reads as f64 / 1e3;
        (s.depth(Domain::Write), mean_us, writes)
    }

    #[test]
    fn kyber_timer_fn_grades_the_write_domain_by_the_read_target() {
        // kyber_timer_fn: a read p90 (I/O latency) past the read target is congestion, and then
        // kyber_resize_domain gives the write domain depth * (p99 bucket + 1) / 4. The writes'
        // total-latency p99 here is 32 x 200 us = 6.4 ms whatever their depth (the device's
        // rate sets it), bucket 2 of the 10 ms target (add_latency_sample: (6.4 ms - 1) / 2.5
        // ms), so each congested decision gives 3/4: 128, 96, 72, 54, 40, 30, 22, 16, 12, 9, 6,
        // 4, 3, 2, 1. Without congestion nothing changes (bucket 2 < KYBER_GOOD_BUCKETS). So the
        // write depth settles at the first step whose reads (60 + 40 x min(depth, 32) us) are
        // within the target, and a target between two others gives a depth and a read latency
        // between theirs: no step.
        let targets_us = [50, 250, 500, 1000, 2000];
        let runs: Vec<(u32, f64, u64)> = targets_us
            .iter()
            .map(|&t| reader_beside_writer(Nanos::from_us(t), 30))
            .collect();
        let depths: Vec<u32> = runs.iter().map(|r| r.0).collect();
        // 50 us: even one write makes a read 100 us, so kyber goes down to 1 and stays.
        // 250 us: 4 writes (220 us) pass, 6 (300 us) do not. 500 us: 9 (420 us), not 12
        // (540 us). 1 ms: 22 (940 us), not 30 (1,260 us). 2 ms: 32 writes in the device
        // (1,340 us) are within it from the start: never congested, never resized.
        assert_eq!(depths, [1, 4, 9, 22, 128]);
        let means: Vec<f64> = runs.iter().map(|r| r.1).collect();
        for (m, want) in means.iter().zip([100.0, 220.0, 420.0, 940.0, 1340.0]) {
            assert!((m - want).abs() < 1.0, "{means:?}");
        }
        // The write domain's depth never stops the writer here: the device's rate does
        // (5,000 writes/s over the last 10 s at every target).
        for r in &runs {
            assert!((49_990..=50_010).contains(&r.2), "{runs:?}");
        }
    }

    #[test]
    fn kyber_timer_fn_quarters_a_write_domain_whose_writes_finish_in_a_quarter_of_their_target() {
        // The same rule where the writes' total latency is in bucket 0: 128 writes at 100 K/s
        // take 1.28 ms, under a quarter of the 10 ms target, so each congested decision gives
        // the write domain depth * 1 / 4 and only 128, 32, 8, 2 and 1 are reachable (a
        // QD128 writer on a drive that takes its writes at 100 K/s or more: the simulated 980
        // PRO's 186 K, bench/kyber-read-target.sh). Reads take 60 + 40 x (writes in the device)
        // us. 250 us passes 4 writes, so kyber stops at 2; 500 us passes 11 and 1 ms 23, and
        // both stop at 8 (the step below, 32, is past both): two targets a factor of two apart
        // give the same depth and the same reader, where bucket 2's steps of 3/4
        // (kyber_timer_fn_grades_the_write_domain_by_the_read_target) tell them apart.
        let targets_us = [250, 500, 1000, 2000];
        let runs: Vec<(u32, f64, u64)> = targets_us
            .iter()
            .map(|&t| reader_beside_writer_of(Nanos::from_us(t), 14, 128, 10))
            .collect();
        let depths: Vec<u32> = runs.iter().map(|r| r.0).collect();
        assert_eq!(depths, [2, 8, 8, 32]);
        for (r, want) in runs.iter().zip([140.0, 380.0, 380.0, 1340.0]) {
            assert!((r.1 - want).abs() < 1.0, "{runs:?}");
        }
    }

    #[test]
    fn the_write_target_bounds_how_far_a_read_target_cuts_the_writes() {
        // The other half of kyber_timer_fn: under congestion every domain with a p99 gets
        // depth * (p99 bucket + 1) / 4, which grows a domain past its own target
        // (bucket >= KYBER_GOOD_BUCKETS). Reads take 300 us at the device against a 50 us
        // target (bucket 7: congestion); writes take 6.4 ms. Against a 10 ms write target that
        // is bucket 2 (2.5 ms wide) and the first decision gives the writes 3/4 of 128; against
        // 5 ms it is bucket 5 (1.25 ms wide: (6.4 ms - 1) / 1.25 ms = 5.1), 6/4 of 128 clamped
        // by kyber_resize_domain to 128: however tight the read target, kyber does not hold
        // the writes where their own latency passes their target.
        let first_decision = |write_lat: Nanos| {
            let mut s = Kyber::new(Config {
                read_lat: Nanos::from_us(50),
                write_lat,
                ..Config::default()
            });
            let mut t = Nanos::ZERO;
            while s.depth(Domain::Write) == 128 && t < Nanos::from_secs(2) {
                t = round(
                    &mut s,
                    t,
                    (100, Nanos::from_us(300)),
                    (100, Nanos::from_us(6400)),
                    Nanos::ZERO,
                );
                if let Some(fire) = s.timer().filter(|&f| f <= t + Nanos::from_ms(7)) {
                    t = t.max(fire);
                    assert_eq!(s.dispatch(t), Dispatch::Empty);
                }
            }
            (s.depth(Domain::Write), s.depth(Domain::Read))
        };
        // The reads' own p99 (bucket 7) doubles their depth, clamped at 256, either way.
        assert_eq!(first_decision(Nanos::from_ms(10)), (96, 256));
        assert_eq!(first_decision(Nanos::from_ms(5)), (128, 256));
    }

    #[test]
    fn async_requests_beyond_three_quarters_of_nr_requests_wait_for_a_tag() {
        let mut s = Kyber::default();
        for i in 0..200 {
            s.insert(rq(i, 1).sector(i * 8).write().build(), Nanos::ZERO);
        }
        assert_eq!(s.queued(), 200);
        let out = take_all(&mut s, Nanos::ZERO);
        assert_eq!(out.len(), 128, "write depth");
        // The block layer learns how many waiting requests got a tag from this count.
        assert_eq!(s.sched_tags_admitted(), Some(192));
        for r in &out {
            s.complete(r, Nanos::from_ms(1));
        }
        // 192 were admitted; 64 left of those, and 8 more after the 128 completions.
        assert_eq!(s.sched_tags_admitted(), Some(200));
        let out = take_all(&mut s, Nanos::from_ms(1));
        assert_eq!(out.len(), 72);
        assert_eq!(s.queued(), 0);
    }

    /// `nr_requests` sizes the scheduler tags and the async share with them
    /// (`kyber_depth_updated`: 75%, over the whole map from Linux 6.17): at 1024 tags 768 async
    /// requests are admitted where the default's 256 admit 192; at 8, 6.
    #[test]
    fn nr_requests_sizes_the_tags_and_their_async_three_quarters() {
        for (nr, admitted) in [(1024u32, 768u32), (256, 192), (8, 6)] {
            let mut settings = Settings::new();
            settings.set("nr_requests", i64::from(nr));
            let mut s = Kyber::from_settings(&settings).unwrap();
            assert_eq!(s.config().nr_requests, nr);
            for i in 0..1000 {
                s.insert(rq(i, 1).sector(i * 8).write().build(), Nanos::ZERO);
            }
            assert_eq!(s.tags.held(), admitted, "nr_requests {nr}");
            assert_eq!(s.tags.depth(), nr, "nr_requests {nr}");
        }
    }

    #[test]
    fn only_requests_still_staged_can_be_merged() {
        let mut s = Kyber::default();
        s.insert(rq(1, 1).sector(100).read().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(300).read().build(), Nanos::ZERO);
        let back = rq(3, 1).sector(108).read().build();
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
        let front = rq(4, 1).sector(292).read().build();
        assert_eq!(
            s.try_merge(&front, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(2))
        );
        // The first dispatch moves every staged read to the dispatch list.
        assert_eq!(
            take(&mut s, Nanos::ZERO).map(|r| (r.id.0, r.sectors)),
            Some((1, 16))
        );
        let late = rq(5, 1).sector(308).read().build();
        assert_eq!(s.try_merge(&late, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        s.insert(late, Nanos::ZERO);
        let next = rq(6, 1).sector(316).read().build();
        assert_eq!(
            s.try_merge(&next, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(5))
        );
        let write = rq(7, 1).sector(324).write().build();
        assert_eq!(
            s.try_merge(&write, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
    }

    #[test]
    fn flushes_bypass_the_domains_and_go_first() {
        let mut s = Kyber::default();
        s.insert(rq(1, 1).sector(10).read().build(), Nanos::ZERO);
        let mut flush = rq(2, 1).write().build();
        flush.op = Op::Flush;
        s.insert(flush, Nanos::ZERO);
        let ids: Vec<u64> = take_all(&mut s, Nanos::ZERO)
            .iter()
            .map(|r| r.id.0)
            .collect();
        assert_eq!(ids, vec![2, 1]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn every_request_is_dispatched_and_completed_exactly_once(
            ops in proptest::collection::vec((0u8..5, 0u64..200, 1u32..=4, 0u64..400), 1..300),
            depth in 1usize..=64,
            read_lat_us in 1i64..3_000,
        ) {
            let mut set = Settings::new();
            set.set("read_lat_nsec", read_lat_us * 1000);
            let sched = Kyber::from_settings(&set).unwrap();
            let mut h = Harness::new(sched, depth, |r: &Request| {
                Nanos::from_us(50 + (r.sector % 11) * 400 + u64::from(r.sectors) * 5)
            });
            let mut t = 0;
            let mut submitted = 0u64;
            for (i, &(kind, slot, size, gap)) in ops.iter().enumerate() {
                t += gap;
                let b = rq(i as u64, (i % 4) as u32)
                    .sector(slot * 8)
                    .sectors(size * 8)
                    .at(Nanos::from_us(t));
                let mut r = match kind {
                    0 | 1 => b.read().build(),
                    2 => b.write().build(),
                    _ => b.sync_write().build(),
                };
                if kind == 4 {
                    r.op = if slot % 2 == 0 { Op::Discard } else { Op::Flush };
                }
                submitted += u64::from(r.sectors);
                h.submit(r);
            }
            let out = h.run();
            let served: u64 = out.served.iter().map(|s| u64::from(s.rq.sectors)).sum();
            prop_assert_eq!(served, submitted);
        }

        #[test]
        fn no_domain_exceeds_its_depth_while_depths_change(
            lats in proptest::collection::vec((0u64..40_000, 0u64..40_000), 50..400),
        ) {
            let mut s = Kyber::default();
            let mut t = Nanos::ZERO;
            let mut at_device: Vec<(Nanos, Request)> = Vec::new();
            for (i, &(read_us, write_us)) in lats.iter().enumerate() {
                let i = i as u64;
                s.insert(rq(2 * i, 1).sector(i * 8).read().build(), t);
                s.insert(rq(2 * i + 1, 2).sector(i * 8).sync_write().build(), t);
                while let Some(r) = take(&mut s, t) {
                    let io = if r.op.is_read() { read_us } else { write_us };
                    at_device.push((t + Nanos::from_us(io), r));
                }
                for d in [Domain::Read, Domain::Write] {
                    prop_assert!(s.in_flight(d) <= s.depth(d));
                    let n = at_device
                        .iter()
                        .filter(|(_, r)| (r.op.is_read()) == (d == Domain::Read))
                        .count();
                    prop_assert_eq!(n as u32, s.in_flight(d));
                }
                t += Nanos::from_us(500);
                at_device.sort_by_key(|(at, r)| (*at, r.id));
                while at_device.first().is_some_and(|(at, _)| *at <= t) {
                    let (at, r) = at_device.remove(0);
                    s.complete(&r, at);
                }
            }
        }
    }
}
