//! cfq: Completely Fair Queueing with group scheduling, as in Linux 4.19's
//! `block/cfq-iosched.c` (the last long-term kernel before CFQ's removal in 5.0), hierarchical
//! blkio groups included. Documentation: docs/cfq.md.
//!
//! Each process gets a sync queue; async writeback shares one queue per group, class and
//! level. Queues are served in time slices from service trees kept per group, per class
//! (RT, BE, IDLE) and per workload (async, sync-noidle, sync); groups take turns by virtual
//! disk time (service divided by their compounded weight share). Between a sync queue's
//! requests the disk idles (`slice_idle`) if the process thinks briefly and reads
//! sequentially; a group with one queue keeps the disk for a while too (`group_idle`).
//!
//! # Tunables (sysfs `/sys/block/<dev>/queue/iosched/`, 4.19 defaults)
//! | name | default | unit | meaning |
//! |---|---|---|---|
//! | `quantum` | 8 | requests | dispatch depth of a queue per round |
//! | `fifo_expire_sync` | 125 | ms | age at which a sync request is served out of order |
//! | `fifo_expire_async` | 250 | ms | same for async requests |
//! | `back_seek_max` | 16384 | KiB | longest backward seek preferred to a forward one |
//! | `back_seek_penalty` | 2 | | cost factor of a backward seek |
//! | `slice_sync` | 100 | ms | base sync slice (prio 4); `+ slice/5` per level up |
//! | `slice_async` | 40 | ms | base async slice |
//! | `slice_async_rq` | 2 | requests | async dispatch budget base (`2*n*(8-prio)`) |
//! | `slice_idle` | 8 | ms | idle wait for a sync queue's next request |
//! | `group_idle` | 8 | ms | idle wait for a group's next request (0 in `cfq-flat`) |
//! | `low_latency` | 1 | bool | shrink slices so busy queues fit `target_latency` |
//! | `target_latency` | 300 | ms | the latency low_latency aims at |
//! | `rotational` | 1 | bool | the device's `queue/rotational` (0: SSD rules) |
//! | `groups` | 1 | bool | group scheduling (`CONFIG_CFQ_GROUP_IOSCHED`); 0 in `cfq-flat` |
//!
//! Group weights are blkio.weight (legacy hierarchy): default 500, range 10..=1000, the root
//! group 1000 (twice the default, as 4.19 sets it). With `groups = 0` ("vanilla" CFQ, as a
//! kernel built without `CONFIG_CFQ_GROUP_IOSCHED`) every request counts as the root group's
//! and `group_idle` defaults to 0. The registry offers this as `cfq-flat`.
//!
//! # Deviations from 4.19
//! - Time is continuous (ns): a jiffy, where the kernel needs one (minimum charges, the idle
//!   class's workload), is taken as 1 ms (HZ=1000).
//! - Timers (slice idle, group idle) are `Dispatch::Idle { until }`, fired lazily by the next
//!   call at or after their time; while one is armed, `dispatch` answers `Idle` instead of
//!   `Empty` so the driver comes back when it fires.
//! - No request merging (bio merges into queued requests are the block layer's business and
//!   the workloads here issue whole requests).
//! - The prio tree (queues by their next request's sector) is re-keyed whenever a queue's
//!   next request changes; the kernel leaves it stale after a dispatch.
//! - `cfqq_close` checks the queued next requests just below and just above the head and
//!   takes the nearer one if close (the kernel walks from an rbtree leaf's parent).
//! - Per-cgroup `group_idle` and `leaf_weight` files are not modelled (group_idle is
//!   device-wide and leaf_weight equals weight).
//! - A context's priority and group come from its requests; queues of exited processes are
//!   dropped from the lookup tables but not freed.

mod group;
mod queue;
mod service_tree;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use crate::group::GroupTree;
use crate::request::{CtxId, GroupId, IoClass, IoPrio, Op, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{self, Settings, Tunable, TunableError, Unit};

use group::{CfqGroup, SavedWorkload, SERVICE_SHIFT};
pub use group::{WEIGHT_DEFAULT, WEIGHT_MAX, WEIGHT_MIN};
use queue::{CfqQueue, Class, QId, SortKey, TTime, SECT_THR_NONROT, SEEK_THR};
use service_tree::{GroupServiceTree, StKey, Workload};

const MS: u64 = 1_000_000;
/// One jiffy at HZ=1000.
const JIFFY: u64 = MS;
/// `CFQ_IDLE_DELAY`: idle-class queues go this far behind the tree's last queue.
const IDLE_DELAY: u64 = 200 * MS;
/// `CFQ_SLICE_MODE_GROUP_DELAY`: a group becoming busy goes this far behind the last group.
const SLICE_MODE_GROUP_DELAY: u64 = 200 * MS;
/// `CFQ_IOPS_MODE_GROUP_DELAY` (HZ/5 at HZ=1000).
const IOPS_MODE_GROUP_DELAY: u64 = 200;
/// `CFQ_MIN_TT`: think times below this count as immediate.
const MIN_TT: u64 = 2 * JIFFY;
/// `CFQ_HW_QUEUE_MIN`.
const HW_QUEUE_MIN: u32 = 5;
/// `CFQQ_CLOSE_THR`: sectors within which a request is "close" to the head.
const CLOSE_THR: u64 = 8 * 1024;
/// `cfq_hist_divisor`.
const HIST_DIVISOR: u32 = 4;
/// A page, for the "bigger than a page, let it rip" rule.
const PAGE_BYTES: u64 = 4096;

const fn t(
    name: &'static str,
    unit: Unit,
    default: i64,
    min: i64,
    max: i64,
    doc: &'static str,
) -> Tunable {
    Tunable {
        name,
        unit,
        default,
        min,
        max,
        doc,
    }
}

const N_TUNABLES: usize = 14;
const U32MAX: i64 = u32::MAX as i64;
const TABLE: [Tunable; N_TUNABLES] = [
    t(
        "quantum",
        Unit::Requests,
        8,
        1,
        U32MAX,
        "requests a queue may have in flight per round (doubled early in a slice)",
    ),
    t(
        "fifo_expire_sync",
        Unit::Ms,
        125,
        1,
        U32MAX,
        "age at which a sync request is served ahead of sector order",
    ),
    t(
        "fifo_expire_async",
        Unit::Ms,
        250,
        1,
        U32MAX,
        "age at which an async request is served ahead of sector order",
    ),
    t(
        "back_seek_max",
        Unit::KiB,
        16384,
        0,
        U32MAX,
        "longest backward seek still preferred to a forward one",
    ),
    t(
        "back_seek_penalty",
        Unit::Count,
        2,
        1,
        U32MAX,
        "cost factor of a backward seek against a forward one",
    ),
    t(
        "slice_sync",
        Unit::Ms,
        100,
        1,
        U32MAX,
        "base time slice of a sync queue at priority 4",
    ),
    t(
        "slice_async",
        Unit::Ms,
        40,
        1,
        U32MAX,
        "base time slice of an async queue at priority 4",
    ),
    t(
        "slice_async_rq",
        Unit::Requests,
        2,
        1,
        U32MAX,
        "base of an async queue's dispatch budget per slice",
    ),
    t(
        "slice_idle",
        Unit::Ms,
        8,
        0,
        U32MAX,
        "how long to idle for a sync queue's next request",
    ),
    t(
        "low_latency",
        Unit::Bool,
        1,
        0,
        1,
        "scale slices down so busy queues fit target_latency",
    ),
    t(
        "target_latency",
        Unit::Ms,
        300,
        1,
        U32MAX,
        "latency target of low_latency",
    ),
    t(
        "rotational",
        Unit::Bool,
        1,
        0,
        1,
        "the device's queue/rotational (0: SSD: no idling, seekiness by size)",
    ),
    // The two below differ in cfq-flat; keep them last.
    t(
        "group_idle",
        Unit::Ms,
        8,
        0,
        U32MAX,
        "how long to idle for the next request of a group with one queue",
    ),
    t(
        "groups",
        Unit::Bool,
        1,
        0,
        1,
        "group scheduling on (1) or every request in the root group (0, vanilla CFQ)",
    ),
];

const fn flat_table() -> [Tunable; N_TUNABLES] {
    let mut table = TABLE;
    table[N_TUNABLES - 2].default = 0;
    table[N_TUNABLES - 1].default = 0;
    table
}
const FLAT_TABLE: [Tunable; N_TUNABLES] = flat_table();

/// CFQ's tunables, with 4.19's defaults.
pub const TUNABLES: &[Tunable] = &TABLE;
/// The tunables of `cfq-flat`: as [`TUNABLES`] but `groups = 0` and `group_idle = 0`.
pub const FLAT_TUNABLES: &[Tunable] = &FLAT_TABLE;

/// CFQ's configuration, in nanoseconds where the sysfs unit is ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `quantum`.
    pub quantum: u32,
    /// `fifo_expire_sync`, ns.
    pub fifo_expire_sync: u64,
    /// `fifo_expire_async`, ns.
    pub fifo_expire_async: u64,
    /// `back_seek_max`, KiB.
    pub back_seek_max: u64,
    /// `back_seek_penalty`.
    pub back_seek_penalty: u64,
    /// `slice_sync`, ns.
    pub slice_sync: u64,
    /// `slice_async`, ns.
    pub slice_async: u64,
    /// `slice_async_rq`.
    pub slice_async_rq: u32,
    /// `slice_idle`, ns.
    pub slice_idle: u64,
    /// `group_idle`, ns.
    pub group_idle: u64,
    /// `low_latency`.
    pub low_latency: bool,
    /// `target_latency`, ns.
    pub target_latency: u64,
    /// The device is rotational.
    pub rotational: bool,
    /// Group scheduling on.
    pub groups: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config::read(&Settings::new(), TUNABLES)
    }
}

impl Config {
    /// Vanilla CFQ: no group scheduling, no group idling.
    pub fn flat() -> Config {
        Config::read(&Settings::new(), FLAT_TUNABLES)
    }

    /// Validate `settings` against CFQ's table (`flat` selects cfq-flat's defaults).
    pub fn from_settings(settings: &Settings, flat: bool) -> Result<Config, TunableError> {
        let table = if flat { FLAT_TUNABLES } else { TUNABLES };
        settings.validate(if flat { "cfq-flat" } else { "cfq" }, table)?;
        Ok(Config::read(settings, table))
    }

    fn read(s: &Settings, table: &[Tunable]) -> Config {
        let g = |n| s.get(table, n) as u64;
        Config {
            quantum: g("quantum") as u32,
            fifo_expire_sync: g("fifo_expire_sync") * MS,
            fifo_expire_async: g("fifo_expire_async") * MS,
            back_seek_max: g("back_seek_max"),
            back_seek_penalty: g("back_seek_penalty"),
            slice_sync: g("slice_sync") * MS,
            slice_async: g("slice_async") * MS,
            slice_async_rq: g("slice_async_rq") as u32,
            slice_idle: g("slice_idle") * MS,
            group_idle: g("group_idle") * MS,
            low_latency: g("low_latency") != 0,
            target_latency: g("target_latency") * MS,
            rotational: g("rotational") != 0,
            groups: g("groups") != 0,
        }
    }

    fn fifo_expire(&self, sync: bool) -> u64 {
        if sync {
            self.fifo_expire_sync
        } else {
            self.fifo_expire_async
        }
    }

    fn slice(&self, sync: bool) -> u64 {
        if sync {
            self.slice_sync
        } else {
            self.slice_async
        }
    }
}

/// Counters of CFQ's decisions since it was built (what blktrace would show).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CfqStats {
    /// A process's queue was merged into a cooperating process's queue.
    pub queue_merges: u64,
    /// A shared queue was broken apart for a process.
    pub queue_splits: u64,
    /// An arriving request preempted the active queue.
    pub preemptions: u64,
    /// The slice-idle or group-idle timer was armed.
    pub idle_arms: u64,
}

/// Per-process state (`cfq_io_cq`).
#[derive(Clone, Debug)]
struct Cic {
    /// [async, sync] queues.
    queues: [Option<QId>; 2],
    ttime: TTime,
    prio: IoPrio,
    group: usize,
    exited: bool,
}

/// The CFQ scheduler.
#[derive(Debug)]
pub struct Cfq {
    cfg: Config,
    groups: Vec<group::CfqGroup>,
    grp_st: GroupServiceTree,
    queues: Vec<CfqQueue>,
    cics: HashMap<CtxId, Cic>,
    rq_queue: HashMap<RequestId, QId>,
    prio_trees: [BTreeMap<u64, QId>; 8],

    serving_class: Class,
    serving_type: Workload,
    workload_expires: i64,
    serving_group: Option<usize>,

    busy_queues: u32,
    busy_sync_queues: u32,
    rq_in_driver: u32,
    rq_in_flight: [u32; 2],
    rq_queued: u32,
    hw_tag: i8,
    hw_tag_est_depth: u32,
    hw_tag_samples: u32,

    idle_timer: Option<u64>,
    active_queue: Option<QId>,
    active_cic: Option<CtxId>,
    last_position: u64,
    last_delayed_sync: i64,
    seq: u64,
    stats: CfqStats,
}

fn class_of(prio: IoPrio) -> Class {
    match prio.class {
        IoClass::RealTime => Class::Rt,
        IoClass::BestEffort => Class::Be,
        IoClass::Idle => Class::Idle,
    }
}

impl Cfq {
    /// CFQ with `cfg` over `groups` (only the root is used when `cfg.groups` is off).
    /// Fails if a group's weight is outside 10..=1000.
    pub fn new(cfg: Config, groups: &GroupTree) -> Result<Cfq, TunableError> {
        let mut gs = Vec::with_capacity(groups.len());
        for id in groups.ids() {
            let g = groups.get(id);
            let weight = match g.parent {
                None => g.weight.unwrap_or(2 * WEIGHT_DEFAULT),
                Some(_) => g.weight.unwrap_or(WEIGHT_DEFAULT),
            };
            if !(WEIGHT_MIN..=WEIGHT_MAX).contains(&weight) && g.parent.is_some() {
                return Err(TunableError::Invalid {
                    reason: format!(
                        "group {}: blkio.weight {weight} is outside {WEIGHT_MIN}..={WEIGHT_MAX}",
                        g.path
                    ),
                });
            }
            gs.push(CfqGroup::new(g.parent.map(|p| p.0 as usize), weight, 0));
        }
        Ok(Cfq {
            cfg,
            groups: gs,
            grp_st: GroupServiceTree::default(),
            queues: Vec::new(),
            cics: HashMap::new(),
            rq_queue: HashMap::new(),
            prio_trees: Default::default(),
            serving_class: Class::Be,
            serving_type: Workload::Async,
            workload_expires: 0,
            serving_group: None,
            busy_queues: 0,
            busy_sync_queues: 0,
            rq_in_driver: 0,
            rq_in_flight: [0, 0],
            rq_queued: 0,
            hw_tag: -1,
            hw_tag_est_depth: 0,
            hw_tag_samples: 0,
            idle_timer: None,
            active_queue: None,
            active_cic: None,
            last_position: 0,
            // The kernel assumes no sync request was delayed in the last second.
            last_delayed_sync: -1_000_000_000,
            seq: 0,
            stats: CfqStats::default(),
        })
    }

    /// Build `cfq` (group scheduling) from settings.
    pub fn from_settings(settings: &Settings, groups: &GroupTree) -> Result<Cfq, TunableError> {
        Cfq::new(Config::from_settings(settings, false)?, groups)
    }

    /// Build `cfq-flat` (vanilla CFQ, every request in the root group) from settings.
    pub fn flat_from_settings(
        settings: &Settings,
        groups: &GroupTree,
    ) -> Result<Cfq, TunableError> {
        Cfq::new(Config::from_settings(settings, true)?, groups)
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Counters of its decisions so far.
    pub fn stats(&self) -> CfqStats {
        self.stats
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    // ----- small predicates -------------------------------------------------------------

    fn nonrot(&self) -> bool {
        !self.cfg.rotational
    }

    fn iops_mode(&self) -> bool {
        self.cfg.slice_idle == 0 && self.hw_tag != 0
    }

    fn group_idle(&self) -> u64 {
        self.cfg.group_idle
    }

    fn workload(&self, q: QId) -> Workload {
        let q = &self.queues[q];
        if !q.sync {
            Workload::Async
        } else if !q.idle_window {
            Workload::SyncNoidle
        } else {
            Workload::Sync
        }
    }

    fn st_key(&self, q: QId) -> StKey {
        let cq = &self.queues[q];
        let w = if cq.class == Class::Idle {
            Workload::Async
        } else {
            self.workload(q)
        };
        (cq.group, cq.class, w)
    }

    fn st(&self, key: StKey) -> &service_tree::ServiceTree {
        self.groups[key.0].tree(key.1, key.2)
    }

    fn st_mut(&mut self, key: StKey) -> &mut service_tree::ServiceTree {
        self.groups[key.0].tree_mut(key.1, key.2)
    }

    /// `cfq_prio_slice`: base slice scaled by priority level.
    fn prio_slice(&self, sync: bool, prio: u8) -> u64 {
        let base = self.cfg.slice(sync) as i64;
        (base + base / 5 * (4 - i64::from(prio))).max(0) as u64
    }

    /// `cfq_group_slice`: the group's share of target_latency.
    fn group_slice(&self, g: usize) -> u64 {
        (self.cfg.target_latency * u64::from(self.groups[g].vfraction)) >> SERVICE_SHIFT
    }

    /// `cfq_group_get_avg_queues`: update and read the averaged busy count of a class.
    fn group_avg_queues(&mut self, g: usize, rt: bool) -> u32 {
        let idx = usize::from(rt);
        let class = if rt { Class::Rt } else { Class::Be };
        let busy = self.groups[g].busy_in_class(class);
        let avg = self.groups[g].busy_queues_avg[idx];
        let (min_q, max_q) = (avg.min(busy), avg.max(busy));
        let mult = HIST_DIVISOR - 1;
        let round = HIST_DIVISOR / 2;
        self.groups[g].busy_queues_avg[idx] = (mult * max_q + min_q + round) / HIST_DIVISOR;
        self.groups[g].busy_queues_avg[idx]
    }

    /// `cfq_scaled_cfqq_slice`: the queue's slice, shrunk under low_latency so the class's
    /// busy queues fit the group's share of target_latency.
    fn scaled_slice(&mut self, q: QId) -> u64 {
        let (sync, prio, g, rt) = {
            let cq = &self.queues[q];
            (cq.sync, cq.ioprio, cq.group, cq.class == Class::Rt)
        };
        let mut slice = self.prio_slice(sync, prio);
        if self.cfg.low_latency {
            let iq = u64::from(self.group_avg_queues(g, rt));
            let sync_slice = self.cfg.slice_sync;
            let expect_latency = sync_slice * iq;
            let group_slice = self.group_slice(g);
            if expect_latency > group_slice {
                let base_low_slice = 2 * self.cfg.slice_idle;
                let low_slice = (base_low_slice * slice / sync_slice).min(slice);
                slice = (slice * group_slice / expect_latency).max(low_slice);
            }
        }
        slice
    }

    fn set_prio_slice(&mut self, q: QId, now: u64) {
        let slice = self.scaled_slice(q);
        let cq = &mut self.queues[q];
        cq.slice_start = Some(now);
        cq.slice_end = now + slice;
        cq.allocated_slice = slice;
    }

    /// `cfq_slice_used`.
    fn slice_used(&self, q: QId, now: u64) -> bool {
        let cq = &self.queues[q];
        !cq.slice_new && now >= cq.slice_end
    }

    /// `cfq_choose_req`: of two requests, the better one to serve with the head at `last`.
    fn choose_req(
        &self,
        q: QId,
        a: Option<SortKey>,
        b: Option<SortKey>,
        last: u64,
    ) -> Option<SortKey> {
        let (k1, k2) = match (a, b) {
            (None, b) => return b,
            (a, None) => return a,
            (Some(x), Some(y)) if x == y => return Some(y),
            (Some(x), Some(y)) => (x, y),
        };
        let cq = &self.queues[q];
        let (r1, r2) = (cq.get(k1), cq.get(k2));
        if r1.is_sync() != r2.is_sync() {
            return Some(if r1.is_sync() { k1 } else { k2 });
        }
        if r1.meta != r2.meta {
            return Some(if r1.meta { k1 } else { k2 });
        }
        let (s1, s2) = (r1.sector, r2.sector);
        let back_max = self.cfg.back_seek_max * 2;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.cfg.back_seek_penalty)
            } else {
                None
            }
        };
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    k1
                } else {
                    k2
                }
            }
            (Some(_), None) => k1,
            (None, Some(_)) => k2,
            (None, None) => {
                if s1 <= s2 {
                    k1
                } else {
                    k2
                }
            }
        })
    }

    /// `cfq_find_next_rq`: what to serve after `last` leaves the queue.
    fn find_next_rq(&self, q: QId, last: SortKey) -> Option<SortKey> {
        let (next, prev) = self.queues[q].neighbours(last);
        self.choose_req(q, next, prev, last.0)
    }

    // ----- prio trees and service trees -------------------------------------------------

    fn prio_tree_del(&mut self, q: QId) {
        if let Some((prio, pos)) = self.queues[q].prio_tree_pos.take() {
            self.prio_trees[prio].remove(&pos);
        }
    }

    /// `cfq_prio_tree_add`: key the queue by its next request's sector in its level's tree
    /// (a queue whose sector is taken stays out, as in the kernel).
    fn prio_tree_add(&mut self, q: QId) {
        self.prio_tree_del(q);
        let cq = &self.queues[q];
        if cq.class == Class::Idle {
            return;
        }
        let Some(next) = cq.next_rq else { return };
        let prio = cq.org_ioprio as usize;
        if let std::collections::btree_map::Entry::Vacant(e) = self.prio_trees[prio].entry(next.0) {
            e.insert(q);
            self.queues[q].prio_tree_pos = Some((prio, next.0));
        }
    }

    fn st_remove(&mut self, q: QId) {
        if let Some(key) = self.queues[q].st.take() {
            let (rb_key, seq) = (self.queues[q].rb_key, self.queues[q].tree_seq);
            self.st_mut(key).remove(rb_key, seq, q);
        }
    }

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, q: QId, add_front: bool, now: u64) {
        let key = self.st_key(q);
        let cq = &self.queues[q];
        let rb_key: i64 = if cq.class == Class::Idle {
            let base = match self.st(key).last() {
                Some((k, last)) if last != q => k,
                _ => now as i64,
            };
            base + IDLE_DELAY as i64
        } else if !add_front {
            let nr = i64::from(self.groups[cq.group].nr_cfqq);
            let offset = (nr - 1)
                * (self.prio_slice(true, 0) as i64 - self.prio_slice(cq.sync, cq.ioprio) as i64);
            let k = offset + now as i64 - cq.slice_resid;
            self.queues[q].slice_resid = 0;
            k
        } else {
            let base = match self.st(key).first() {
                Some((k, _)) => k,
                None => now as i64,
            };
            base - 1_000_000_000
        };
        let mut new_cfqq = true;
        if self.queues[q].st.is_some() {
            new_cfqq = false;
            if rb_key == self.queues[q].rb_key && self.queues[q].st == Some(key) {
                return;
            }
            self.st_remove(q);
        }
        let seq = self.next_seq();
        self.queues[q].st = Some(key);
        self.queues[q].rb_key = rb_key;
        self.queues[q].tree_seq = seq;
        self.st_mut(key).insert(rb_key, seq, q);
        if add_front || !new_cfqq {
            return;
        }
        self.group_notify_queue_add(self.queues[q].group);
    }

    fn resort_rr_list(&mut self, q: QId, now: u64) {
        if self.queues[q].on_rr {
            self.service_tree_add(q, false, now);
            self.prio_tree_add(q);
        }
    }

    fn add_cfqq_rr(&mut self, q: QId, now: u64) {
        debug_assert!(!self.queues[q].on_rr);
        self.queues[q].on_rr = true;
        self.busy_queues += 1;
        if self.queues[q].sync {
            self.busy_sync_queues += 1;
        }
        self.resort_rr_list(q, now);
    }

    fn del_cfqq_rr(&mut self, q: QId) {
        debug_assert!(self.queues[q].on_rr);
        self.queues[q].on_rr = false;
        self.st_remove(q);
        self.prio_tree_del(q);
        self.group_notify_queue_del(self.queues[q].group);
        self.busy_queues -= 1;
        if self.queues[q].sync {
            self.busy_sync_queues -= 1;
        }
    }

    // ----- groups -----------------------------------------------------------------------

    fn group_notify_queue_add(&mut self, g: usize) {
        self.groups[g].nr_cfqq += 1;
        if self.groups[g].tree_seq.is_some() {
            return;
        }
        self.groups[g].vdisktime = match self.grp_st.last_vdisktime() {
            Some(v) => {
                v + if self.iops_mode() {
                    IOPS_MODE_GROUP_DELAY
                } else {
                    SLICE_MODE_GROUP_DELAY
                }
            }
            None => self.grp_st.min_vdisktime,
        };
        let seq = self.next_seq();
        group::activate(&mut self.groups, &mut self.grp_st, g, seq);
    }

    fn group_notify_queue_del(&mut self, g: usize) {
        self.groups[g].nr_cfqq -= 1;
        if self.groups[g].nr_cfqq > 0 {
            return;
        }
        group::deactivate(&mut self.groups, &mut self.grp_st, g);
        self.groups[g].saved = None;
    }

    /// `cfq_cfqq_slice_usage`.
    fn slice_usage(&self, q: QId, now: u64) -> u64 {
        let cq = &self.queues[q];
        match cq.slice_start {
            Some(start) if start != now => (now - start).min(cq.allocated_slice),
            _ => now.saturating_sub(cq.dispatch_start).max(JIFFY),
        }
    }

    /// `cfq_group_served`: charge the group for the slice its queue just used.
    fn group_served(&mut self, g: usize, q: QId, now: u64) {
        let grp = &self.groups[g];
        let nr_sync = grp.nr_cfqq - grp.busy_async() - grp.idle_tree.count() as u32;
        let mut charge = self.slice_usage(q, now);
        if self.iops_mode() {
            charge = u64::from(self.queues[q].slice_dispatch);
        } else if !self.queues[q].sync && nr_sync == 0 {
            charge = self.queues[q].allocated_slice;
        }
        if self.groups[g].tree_seq.is_some() {
            let vfr = self.groups[g].vfraction;
            group::deactivate(&mut self.groups, &mut self.grp_st, g);
            self.groups[g].vdisktime += group::scale_charge(charge, vfr);
            let seq = self.next_seq();
            group::activate(&mut self.groups, &mut self.grp_st, g, seq);
        }
        if self.workload_expires > now as i64 {
            self.groups[g].saved = Some(SavedWorkload {
                slice: (self.workload_expires - now as i64) as u64,
                class: self.serving_class,
                workload: self.serving_type,
            });
        } else {
            self.groups[g].saved = None;
        }
    }

    /// `cfq_choose_wl_type`: the workload whose first queue has waited longest.
    fn choose_wl_type(&self, g: usize, class: Class) -> Workload {
        let mut best = Workload::SyncNoidle;
        let mut lowest: Option<i64> = None;
        for w in Workload::ALL {
            if let Some((k, _)) = self.groups[g].tree(class, w).first() {
                if lowest.is_none_or(|l| k < l) {
                    lowest = Some(k);
                    best = w;
                }
            }
        }
        best
    }

    /// `choose_wl_class_and_type`.
    fn choose_wl_class_and_type(&mut self, g: usize, now: u64) {
        let original = self.serving_class;
        let grp = &self.groups[g];
        self.serving_class = if grp.busy_in_class(Class::Rt) > 0 {
            Class::Rt
        } else if grp.busy_in_class(Class::Be) > 0 {
            Class::Be
        } else {
            self.serving_class = Class::Idle;
            self.workload_expires = (now + JIFFY) as i64;
            return;
        };
        if original == self.serving_class {
            let count = grp.tree(self.serving_class, self.serving_type).count();
            if count > 0 && (now as i64) <= self.workload_expires {
                return;
            }
        }
        self.serving_type = self.choose_wl_type(g, self.serving_class);
        let grp = &self.groups[g];
        let count = grp.tree(self.serving_class, self.serving_type).count() as u64;
        let group_slice = self.group_slice(g);
        let rt = usize::from(self.serving_class == Class::Rt);
        let denom = u64::from(grp.busy_queues_avg[rt].max(grp.busy_in_class(self.serving_class)));
        let mut slice = group_slice * count / denom.max(1);
        if self.serving_type == Workload::Async {
            let tmp = self.cfg.target_latency * u64::from(grp.busy_async())
                / u64::from(self.busy_queues.max(1));
            slice = slice.min(tmp);
            slice = slice * self.cfg.slice_async / self.cfg.slice_sync;
        } else {
            slice = slice.max(2 * self.cfg.slice_idle);
        }
        slice = slice.max(MIN_TT);
        self.workload_expires = (now + slice) as i64;
    }

    /// `cfq_choose_cfqg`: the group with the least vdisktime, and its workload.
    fn choose_cfqg(&mut self, now: u64) {
        let Some(g) = self.grp_st.first() else {
            self.serving_group = None;
            return;
        };
        self.grp_st.update_min_vdisktime();
        self.serving_group = Some(g);
        if let Some(saved) = self.groups[g].saved {
            self.workload_expires = (now + saved.slice) as i64;
            self.serving_type = saved.workload;
            self.serving_class = saved.class;
        } else {
            self.workload_expires = now as i64 - 1;
        }
        self.choose_wl_class_and_type(g, now);
    }

    // ----- active queue -----------------------------------------------------------------

    fn set_active_queue(&mut self, q: Option<QId>, now: u64) -> Option<QId> {
        let q = q.or_else(|| self.get_next_queue());
        if let Some(q) = q {
            let cq = &mut self.queues[q];
            cq.slice_start = None;
            cq.dispatch_start = now;
            cq.allocated_slice = 0;
            cq.slice_end = 0;
            cq.slice_dispatch = 0;
            cq.wait_request = false;
            cq.must_dispatch = false;
            cq.fifo_expire = false;
            cq.slice_new = true;
            self.idle_timer = None;
        }
        self.active_queue = q;
        q
    }

    fn get_next_queue(&self) -> Option<QId> {
        if self.rq_queued == 0 {
            return None;
        }
        let g = self.serving_group?;
        self.groups[g]
            .tree(self.serving_class, self.serving_type)
            .first()
            .map(|(_, q)| q)
    }

    /// `__cfq_slice_expired`.
    fn slice_expired_queue(&mut self, q: QId, timed_out: bool, now: u64) {
        if self.queues[q].wait_request {
            self.idle_timer = None;
        }
        self.queues[q].wait_request = false;
        self.queues[q].wait_busy = false;
        if self.queues[q].coop && self.queues[q].seeky() {
            self.queues[q].split_coop = true;
        }
        if timed_out {
            let resid = if self.queues[q].slice_new {
                self.scaled_slice(q) as i64
            } else {
                self.queues[q].slice_end as i64 - now as i64
            };
            self.queues[q].slice_resid = resid;
        }
        let g = self.queues[q].group;
        self.group_served(g, q, now);
        if self.queues[q].on_rr && self.queues[q].is_empty() {
            self.del_cfqq_rr(q);
        }
        self.resort_rr_list(q, now);
        if self.active_queue == Some(q) {
            self.active_queue = None;
        }
        self.active_cic = None;
    }

    fn slice_expired(&mut self, timed_out: bool, now: u64) {
        if let Some(q) = self.active_queue {
            self.slice_expired_queue(q, timed_out, now);
        }
    }

    // ----- idling -----------------------------------------------------------------------

    /// `cfq_should_idle`.
    fn should_idle(&self, q: QId) -> bool {
        let cq = &self.queues[q];
        let Some(st) = cq.st else { return false };
        if self.cfg.slice_idle == 0 || cq.class == Class::Idle {
            return false;
        }
        if cq.idle_window && !(self.nonrot() && self.hw_tag != 0) {
            return true;
        }
        let tree = self.st(st);
        tree.count() == 1 && cq.sync && !tree.ttime.big(self.cfg.slice_idle)
    }

    /// `cfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, now: u64) {
        let Some(q) = self.active_queue else { return };
        if self.nonrot() && self.hw_tag != 0 && self.group_idle() == 0 {
            return;
        }
        let mut group_idle = 0;
        if !self.should_idle(q) {
            group_idle = self.group_idle();
            if group_idle == 0 {
                return;
            }
        }
        let cq = &self.queues[q];
        if cq.dispatched > 0 {
            return;
        }
        let Some(cic) = self.active_cic.and_then(|c| self.cics.get(&c)) else {
            return;
        };
        if cic.exited {
            return;
        }
        if cic.ttime.valid() && (cq.slice_end as i64 - (now as i64)) < cic.ttime.mean as i64 {
            return;
        }
        if group_idle > 0 {
            let st_big = cq.st.is_some_and(|st| self.st(st).ttime.big(group_idle));
            if self.groups[cq.group].nr_cfqq > 1 || st_big {
                return;
            }
        }
        self.queues[q].wait_request = true;
        let sl = if group_idle > 0 {
            group_idle
        } else {
            self.cfg.slice_idle
        };
        self.idle_timer = Some(now + sl);
        self.stats.idle_arms += 1;
    }

    /// `cfq_idle_slice_timer`, run when `now` reaches the armed time.
    fn fire_timer(&mut self, now: u64) {
        let Some(at) = self.idle_timer else { return };
        if at > now {
            return;
        }
        self.idle_timer = None;
        let mut timed_out = true;
        if let Some(q) = self.active_queue {
            timed_out = false;
            if self.queues[q].must_dispatch {
                return;
            }
            if !self.slice_used(q, at) {
                if self.busy_queues == 0 || !self.queues[q].is_empty() {
                    return;
                }
                self.queues[q].deep = false;
            }
        }
        self.slice_expired(timed_out, at);
    }

    /// `cfq_should_wait_busy`.
    fn should_wait_busy(&self, q: QId, now: u64) -> bool {
        let cq = &self.queues[q];
        if !cq.is_empty() || self.groups[cq.group].nr_cfqq > 1 {
            return false;
        }
        if self.groups[cq.group].ttime.big(self.group_idle()) {
            return false;
        }
        if self.slice_used(q, now) {
            return true;
        }
        let left = cq.slice_end as i64 - now as i64;
        if let Some(cic) = self.active_cic.and_then(|c| self.cics.get(&c)) {
            if cic.ttime.valid() && left < cic.ttime.mean as i64 {
                return true;
            }
        }
        left <= JIFFY as i64
    }

    // ----- cooperating queues -----------------------------------------------------------

    fn rq_close(&self, sector: u64) -> bool {
        sector.abs_diff(self.last_position) <= CLOSE_THR
    }

    /// `cfqq_close`: a queue whose next request is close to the head, at `cur`'s level.
    fn cfqq_close(&self, cur: QId) -> Option<QId> {
        let tree = &self.prio_trees[self.queues[cur].org_ioprio as usize];
        let pos = self.last_position;
        if let Some(&q) = tree.get(&pos) {
            return Some(q);
        }
        let below = tree.range(..pos).next_back().map(|(&s, &q)| (s, q));
        let above = tree.range(pos..).next().map(|(&s, &q)| (s, q));
        let mut cands: Vec<(u64, QId)> = below.into_iter().chain(above).collect();
        cands.sort_by_key(|&(s, _)| s.abs_diff(pos));
        cands
            .into_iter()
            .find(|&(s, _)| self.rq_close(s))
            .map(|(_, q)| q)
    }

    /// `cfq_close_cooperator`.
    fn close_cooperator(&self, cur: QId) -> Option<QId> {
        let c = &self.queues[cur];
        if c.class == Class::Idle || !c.sync || c.seeky() {
            return None;
        }
        if self.groups[c.group].nr_cfqq == 1 {
            return None;
        }
        let q = self.cfqq_close(cur)?;
        let n = &self.queues[q];
        if q == cur || n.group != c.group || !n.sync || n.seeky() {
            return None;
        }
        if (n.class == Class::Rt) != (c.class == Class::Rt) {
            return None;
        }
        Some(q)
    }

    /// `cfq_setup_merge`: schedule the queue with fewer processes to merge into the other.
    fn setup_merge(&mut self, q: QId, new: QId) {
        let mut new = new;
        if self.queues[new].refs == 0 {
            return;
        }
        while let Some(next) = self.queues[new].new_cfqq {
            if next == q {
                return;
            }
            new = next;
        }
        let (pr, npr) = (self.queues[q].refs, self.queues[new].refs);
        if pr == 0 || npr == 0 {
            return;
        }
        if npr >= pr {
            self.queues[q].new_cfqq = Some(new);
            self.queues[new].refs += pr;
        } else {
            self.queues[new].new_cfqq = Some(q);
            self.queues[q].refs += npr;
        }
    }

    /// `cfq_put_cooperator`: drop the references a pending merge took. The walk ends: a
    /// chain of `new_cfqq` links never loops (`setup_merge` only links a queue with no
    /// `new_cfqq` of its own, and never to a chain that leads back to it); the kernel's
    /// check for a link back to `q` is kept.
    fn put_cooperator(&mut self, q: QId) {
        let mut cur = self.queues[q].new_cfqq;
        while let Some(n) = cur {
            if n == q {
                break;
            }
            self.queues[n].refs = self.queues[n].refs.saturating_sub(1);
            cur = self.queues[n].new_cfqq;
        }
    }

    // ----- select and dispatch ----------------------------------------------------------

    /// `cfq_select_queue`.
    fn select_queue(&mut self, now: u64) -> Option<QId> {
        let mut new_cfqq = None;
        'expire: {
            let Some(q) = self.active_queue else {
                break 'expire;
            };
            if self.rq_queued == 0 {
                return None;
            }
            let g = self.queues[q].group;
            'check_group_idle: {
                if self.queues[q].wait_busy && !self.queues[q].is_empty() {
                    break 'expire;
                }
                if self.slice_used(q, now) && !self.queues[q].must_dispatch {
                    let cq = &self.queues[q];
                    if self.groups[g].nr_cfqq == 1
                        && cq.is_empty()
                        && cq.dispatched > 0
                        && self.should_idle(q)
                    {
                        return None;
                    }
                    break 'check_group_idle;
                }
                if !self.queues[q].is_empty() {
                    return Some(q);
                }
                if let Some(n) = self.close_cooperator(q) {
                    if self.queues[q].new_cfqq.is_none() {
                        self.setup_merge(q, n);
                    }
                    new_cfqq = Some(n);
                    break 'expire;
                }
                if self.idle_timer.is_some() {
                    return None;
                }
                let cq = &self.queues[q];
                if cq.seeky()
                    && cq.idle_window
                    && (cq.slice_new
                        || cq.slice_end as i64 - now as i64
                            > now as i64 - cq.slice_start.unwrap_or(0) as i64)
                {
                    self.queues[q].deep = false;
                    self.queues[q].idle_window = false;
                }
                if self.queues[q].dispatched > 0 && self.should_idle(q) {
                    return None;
                }
            }
            if self.group_idle() > 0
                && self.groups[g].nr_cfqq == 1
                && self.groups[g].dispatched > 0
                && !self.groups[g].ttime.big(self.group_idle())
            {
                return None;
            }
        }
        self.slice_expired(false, now);
        if new_cfqq.is_none() {
            self.choose_cfqg(now);
        }
        self.set_active_queue(new_cfqq, now)
    }

    /// `cfq_slice_used_soon`.
    fn slice_used_soon(&self, q: QId, now: u64) -> bool {
        let cq = &self.queues[q];
        cq.slice_new || now + self.cfg.slice_idle * u64::from(cq.dispatched) > cq.slice_end
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: QId, now: u64) -> bool {
        let cq = &self.queues[q];
        if cq.must_dispatch {
            return true;
        }
        if self.should_idle(q) && self.rq_in_flight[0] > 0 {
            return false;
        }
        if self.rq_in_flight[1] > 0 && !cq.sync {
            return false;
        }
        let mut max_dispatch = (self.cfg.quantum / 2).max(1);
        if cq.class == Class::Idle {
            max_dispatch = 1;
        }
        if cq.dispatched >= max_dispatch {
            if cq.class == Class::Idle {
                return false;
            }
            let promote_sync = cq.sync && self.busy_sync_queues == 1;
            if self.busy_queues > 1 && self.slice_used_soon(q, now) && !promote_sync {
                return false;
            }
            max_dispatch = if self.busy_queues == 1 || promote_sync {
                u32::MAX
            } else {
                self.cfg.quantum
            };
        }
        if !cq.sync && self.cfg.low_latency {
            let last_sync = (now as i64 - self.last_delayed_sync).max(0) as u64;
            let mut depth = (last_sync / self.cfg.slice_sync) as u32;
            if depth == 0 && cq.dispatched == 0 {
                depth = 1;
            }
            max_dispatch = max_dispatch.min(depth);
        }
        cq.dispatched < max_dispatch
    }

    /// `cfq_check_fifo`: the oldest request if it expired (checked once per slice).
    fn check_fifo(&mut self, q: QId, now: u64) -> Option<SortKey> {
        let cq = &mut self.queues[q];
        if cq.fifo_expire {
            return None;
        }
        cq.fifo_expire = true;
        let (key, fifo_time) = cq.fifo_head()?;
        (now >= fifo_time).then_some(key)
    }

    /// Take a request out of its queue's lists (`cfq_remove_request`).
    fn remove_request(&mut self, q: QId, key: SortKey) -> Request {
        let rq = self.queues[q].remove(key);
        let cq = &mut self.queues[q];
        cq.queued[usize::from(rq.is_sync())] -= 1;
        if rq.meta {
            cq.prio_pending -= 1;
        }
        self.rq_queued -= 1;
        if cq.next_rq == Some(key) {
            cq.next_rq = None;
        }
        if self.queues[q].on_rr {
            self.prio_tree_add(q);
        }
        rq
    }

    /// `cfq_dispatch_insert` plus the driver's activation of the request.
    fn dispatch_insert(&mut self, q: QId, key: SortKey) -> Request {
        self.queues[q].next_rq = self.find_next_rq(q, key);
        let rq = self.remove_request(q, key);
        let g = self.queues[q].group;
        self.queues[q].dispatched += 1;
        self.groups[g].dispatched += 1;
        let sync = usize::from(self.queues[q].sync);
        self.rq_in_flight[sync] += 1;
        self.rq_in_driver += 1;
        self.last_position = rq.end();
        rq
    }

    /// `cfq_dispatch_request`.
    fn dispatch_request(&mut self, q: QId, now: u64) -> Option<Request> {
        let fifo = self.check_fifo(q, now);
        if fifo.is_some() {
            self.queues[q].must_dispatch = true;
        }
        if !self.may_dispatch(q, now) {
            return None;
        }
        let key = fifo.or(self.queues[q].next_rq)?;
        let rq = self.dispatch_insert(q, key);
        if self.active_cic.is_none() {
            self.active_cic = Some(rq.ctx);
        }
        Some(rq)
    }

    /// `cfq_dispatch_requests` for one request.
    fn dispatch_requests(&mut self, now: u64) -> Option<Request> {
        if self.busy_queues == 0 {
            return None;
        }
        let q = self.select_queue(now)?;
        let rq = self.dispatch_request(q, now)?;
        let cq = &mut self.queues[q];
        cq.slice_dispatch += 1;
        cq.must_dispatch = false;
        let maxrq = 2 * self.cfg.slice_async_rq * (8 - u32::from(cq.ioprio));
        if self.busy_queues > 1
            && ((!cq.sync && cq.slice_dispatch >= maxrq) || cq.class == Class::Idle)
        {
            // 4.19 also sets `slice_end` to now + 1 here, which nothing reads before the
            // queue's next activation resets it.
            self.slice_expired(false, now);
        }
        Some(rq)
    }

    // ----- arrival ----------------------------------------------------------------------

    fn group_of(&self, rq: &Request) -> usize {
        if self.cfg.groups && (rq.group.0 as usize) < self.groups.len() {
            rq.group.0 as usize
        } else {
            GroupId::ROOT.0 as usize
        }
    }

    fn put_queue(&mut self, q: QId) {
        if self.queues[q].sync {
            self.queues[q].refs = self.queues[q].refs.saturating_sub(1);
        }
    }

    /// `cfq_init_prio_data`.
    fn init_prio_data(&mut self, q: QId, prio: IoPrio) {
        let cq = &mut self.queues[q];
        if !cq.prio_changed {
            return;
        }
        cq.class = class_of(prio);
        cq.ioprio = prio.level.min(7);
        if cq.class == Class::Idle {
            cq.ioprio = 7;
            cq.idle_window = false;
        }
        cq.org_ioprio = cq.ioprio;
        cq.org_class = cq.class;
        cq.prio_changed = false;
    }

    /// `cfqq_boost_on_prio`: metadata lifts an idle or low-priority queue to BE/4.
    fn boost_on_prio(&mut self, q: QId, meta: bool) {
        let cq = &mut self.queues[q];
        if !meta {
            cq.class = cq.org_class;
            cq.ioprio = cq.org_ioprio;
        } else {
            if cq.class == Class::Idle {
                cq.class = Class::Be;
            }
            cq.ioprio = cq.ioprio.min(4);
        }
    }

    /// `cfq_get_queue`: the process's new sync queue, or the group's shared async queue.
    fn get_queue(&mut self, sync: bool, prio: IoPrio, g: usize) -> QId {
        let class = class_of(prio);
        let level = prio.level.min(7) as usize;
        if !sync {
            let slot = match class {
                Class::Rt => self.groups[g].async_queues[0][level],
                Class::Be => self.groups[g].async_queues[1][level],
                Class::Idle => self.groups[g].async_idle,
            };
            if let Some(q) = slot {
                return q;
            }
        }
        let q = self.queues.len();
        self.queues.push(CfqQueue::new(g, sync));
        self.init_prio_data(q, prio);
        if sync {
            self.queues[q].refs = 1;
        } else {
            match class {
                Class::Rt => self.groups[g].async_queues[0][level] = Some(q),
                Class::Be => self.groups[g].async_queues[1][level] = Some(q),
                Class::Idle => self.groups[g].async_idle = Some(q),
            }
        }
        q
    }

    /// `cfq_set_request`: find (creating, splitting or merging) the request's queue.
    fn queue_for(&mut self, rq: &Request, now: u64) -> QId {
        let g = self.group_of(rq);
        let sync = rq.is_sync();
        let idx = usize::from(sync);
        let cic = self.cics.entry(rq.ctx).or_insert_with(|| Cic {
            queues: [None, None],
            ttime: TTime::new(now),
            prio: rq.prio,
            group: g,
            exited: false,
        });
        if cic.exited {
            *cic = Cic {
                queues: [None, None],
                ttime: TTime::new(now),
                prio: rq.prio,
                group: g,
                exited: false,
            };
        }
        // check_blkcg_changed
        if cic.group != g {
            let old = std::mem::take(&mut cic.queues);
            cic.group = g;
            for q in old.into_iter().flatten() {
                self.put_queue(q);
            }
        }
        // check_ioprio_changed
        let cic = self.cics.get_mut(&rq.ctx).expect("cic just made");
        if cic.prio != rq.prio {
            cic.prio = rq.prio;
            let (aq, sq) = (cic.queues[0].take(), cic.queues[1]);
            if let Some(q) = aq {
                self.put_queue(q);
            }
            if let Some(q) = sq {
                self.queues[q].prio_changed = true;
            }
        }
        loop {
            let cur = self.cics[&rq.ctx].queues[idx];
            let q = match cur {
                None => {
                    let q = self.get_queue(sync, rq.prio, g);
                    self.cics.get_mut(&rq.ctx).expect("cic").queues[idx] = Some(q);
                    q
                }
                Some(mut q) => {
                    if self.queues[q].coop && self.queues[q].split_coop {
                        self.stats.queue_splits += 1;
                        if self.queues[q].refs == 1 {
                            self.queues[q].coop = false;
                            self.queues[q].split_coop = false;
                        } else {
                            self.cics.get_mut(&rq.ctx).expect("cic").queues[idx] = None;
                            self.put_cooperator(q);
                            self.put_queue(q);
                            continue;
                        }
                    }
                    if let Some(new) = self.queues[q].new_cfqq {
                        self.cics.get_mut(&rq.ctx).expect("cic").queues[idx] = Some(new);
                        self.queues[new].coop = true;
                        self.stats.queue_merges += 1;
                        self.put_queue(q);
                        q = new;
                    }
                    q
                }
            };
            return q;
        }
    }

    /// `cfq_update_io_seektime`.
    fn update_io_seektime(&mut self, q: QId, rq: &Request) {
        let nonrot = self.nonrot();
        let cq = &mut self.queues[q];
        let sdist = if cq.last_request_pos != 0 {
            cq.last_request_pos.abs_diff(rq.sector)
        } else {
            0
        };
        cq.seek_history <<= 1;
        let seek = if nonrot {
            u64::from(rq.sectors) < SECT_THR_NONROT
        } else {
            sdist > SEEK_THR
        };
        cq.seek_history |= u32::from(seek);
    }

    /// `cfq_update_idle_window`.
    fn update_idle_window(&mut self, q: QId, ctx: CtxId) {
        let cq = &self.queues[q];
        if !cq.sync || cq.class == Class::Idle {
            return;
        }
        let mut enable = cq.idle_window;
        let deep = cq.deep || cq.queued[0] + cq.queued[1] >= 4;
        // `req_noidle`: a sync write without REQ_IDLE (fsync, O_SYNC writeback). O_DIRECT
        // writes carry REQ_IDLE and keep their idle window.
        let noidle = cq.next_rq.is_some_and(|k| {
            let r = cq.get(k);
            r.op == Op::Write && r.sync && !r.idle_hint
        });
        let cic = &self.cics[&ctx];
        if noidle || cic.exited || self.cfg.slice_idle == 0 || (!deep && cq.seeky()) {
            enable = false;
        } else if cic.ttime.valid() {
            enable = cic.ttime.mean <= self.cfg.slice_idle;
        }
        let cq = &mut self.queues[q];
        cq.deep = deep;
        cq.idle_window = enable;
    }

    /// `cfq_should_preempt`: should `new`, which just got `rq`, take the disk now?
    fn should_preempt(&self, new: QId, rq: &Request, now: u64) -> bool {
        let Some(a) = self.active_queue else {
            return false;
        };
        let (act, nq) = (&self.queues[a], &self.queues[new]);
        if nq.class == Class::Idle {
            return false;
        }
        if act.class == Class::Idle {
            return true;
        }
        if act.class == Class::Rt && nq.class != Class::Rt {
            return false;
        }
        if rq.is_sync() && !act.sync && !act.must_dispatch {
            return true;
        }
        if !self.is_descendant(act.group, nq.group) {
            return false;
        }
        if self.slice_used(a, now) {
            return true;
        }
        if nq.class == Class::Rt && act.class != Class::Rt {
            return true;
        }
        if self.serving_type == Workload::SyncNoidle
            && self.workload(new) == Workload::SyncNoidle
            && act.is_empty()
        {
            return true;
        }
        if rq.meta && act.prio_pending == 0 {
            return true;
        }
        if act.is_empty() && !self.should_idle(a) {
            return true;
        }
        if self.active_cic.is_none() || !act.wait_request {
            return false;
        }
        self.rq_close(rq.sector)
    }

    /// Whether group `g` is `ancestor` or below it.
    fn is_descendant(&self, g: usize, ancestor: usize) -> bool {
        let mut cur = Some(g);
        while let Some(c) = cur {
            if c == ancestor {
                return true;
            }
            cur = self.groups[c].parent;
        }
        false
    }

    /// `cfq_preempt_queue`.
    fn preempt_queue(&mut self, q: QId, now: u64) {
        let old_type = self.active_queue.map(|a| self.workload(a));
        self.slice_expired(true, now);
        if old_type != Some(self.workload(q)) {
            let g = self.queues[q].group;
            self.groups[g].saved = None;
        }
        debug_assert!(self.queues[q].on_rr);
        self.service_tree_add(q, true, now);
        self.queues[q].slice_end = 0;
        self.queues[q].slice_new = true;
    }

    /// `cfq_rq_enqueued`.
    fn rq_enqueued(&mut self, q: QId, rq: &Request, now: u64) {
        self.rq_queued += 1;
        if rq.meta {
            self.queues[q].prio_pending += 1;
        }
        // cfq_update_io_thinktime
        if self.queues[q].sync {
            let idle = self.cfg.slice_idle;
            if let Some(cic) = self.cics.get_mut(&rq.ctx) {
                cic.ttime.update(now, idle);
            }
            if let Some(st) = self.queues[q].st {
                self.st_mut(st).ttime.update(now, idle);
            }
        }
        if self.cfg.groups {
            let gi = self.group_idle();
            let g = self.queues[q].group;
            self.groups[g].ttime.update(now, gi);
        }
        self.update_io_seektime(q, rq);
        self.update_idle_window(q, rq.ctx);
        self.queues[q].last_request_pos = rq.end();

        if self.active_queue == Some(q) {
            if self.queues[q].wait_request {
                if rq.bytes() > PAGE_BYTES || self.busy_queues > 1 {
                    self.idle_timer = None;
                    self.queues[q].wait_request = false;
                } else {
                    self.queues[q].must_dispatch = true;
                }
            }
        } else if self.should_preempt(q, rq, now) {
            self.stats.preemptions += 1;
            self.preempt_queue(q, now);
        }
    }

    /// `cfq_update_hw_tag`, at each completion.
    fn update_hw_tag(&mut self) {
        self.hw_tag_est_depth = self.hw_tag_est_depth.max(self.rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_queued <= HW_QUEUE_MIN && self.rq_in_driver <= HW_QUEUE_MIN {
            return;
        }
        if let Some(a) = self.active_queue {
            let cq = &self.queues[a];
            if cq.idle_window
                && cq.dispatched + cq.queued[0] + cq.queued[1] < HW_QUEUE_MIN
                && self.rq_in_driver < HW_QUEUE_MIN
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= 50 {
            return;
        }
        self.hw_tag = i8::from(self.hw_tag_est_depth >= HW_QUEUE_MIN);
    }
}

impl Scheduler for Cfq {
    fn name(&self) -> &'static str {
        if self.cfg.groups {
            "cfq"
        } else {
            "cfq-flat"
        }
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        let now = now.as_ns();
        self.fire_timer(now);
        // cfq_may_queue, before the request is set up: the process's queue for this
        // direction, if it has one, takes its priority and the metadata boost (a process's
        // first request of a direction is never boosted).
        let existing = self
            .cics
            .get(&rq.ctx)
            .filter(|c| !c.exited)
            .and_then(|c| Some((c.queues[usize::from(rq.is_sync())]?, c.prio)));
        if let Some((q, prio)) = existing {
            self.init_prio_data(q, prio);
            self.boost_on_prio(q, rq.meta);
        }
        let q = self.queue_for(&rq, now);
        let prio = self.cics[&rq.ctx].prio;
        self.init_prio_data(q, prio);
        let fifo_time = now + self.cfg.fifo_expire(rq.is_sync());
        self.rq_queue.insert(rq.id, q);
        let key = self.queues[q].add(rq.clone(), fifo_time);
        // cfq_add_rq_rb
        let sync = usize::from(rq.is_sync());
        self.queues[q].queued[sync] += 1;
        if !self.queues[q].on_rr {
            self.add_cfqq_rr(q, now);
        }
        let prev = self.queues[q].next_rq;
        let next = self.choose_req(q, prev, Some(key), self.last_position);
        self.queues[q].next_rq = next;
        if prev != next && self.queues[q].on_rr {
            self.prio_tree_add(q);
        }
        self.rq_enqueued(q, &rq, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let now = now.as_ns();
        self.fire_timer(now);
        match self.dispatch_requests(now) {
            Some(rq) => Dispatch::Request(rq),
            None => match self.idle_timer {
                Some(t) => Dispatch::Idle { until: Nanos(t) },
                None => Dispatch::Empty,
            },
        }
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        let now = now.as_ns();
        self.fire_timer(now);
        let Some(q) = self.rq_queue.remove(&rq.id) else {
            debug_assert!(false, "completion of a request cfq never dispatched");
            return;
        };
        self.update_hw_tag();
        let g = self.queues[q].group;
        self.rq_in_driver -= 1;
        self.queues[q].dispatched -= 1;
        self.groups[g].dispatched -= 1;
        self.rq_in_flight[usize::from(self.queues[q].sync)] -= 1;
        let sync = rq.is_sync();
        if sync {
            if let Some(cic) = self.cics.get_mut(&rq.ctx) {
                cic.ttime.last_end = now;
            }
            let st = self.queues[q].st.unwrap_or_else(|| self.st_key(q));
            self.st_mut(st).ttime.last_end = now;
            if rq.submitted.as_ns() + self.cfg.fifo_expire_sync <= now {
                self.last_delayed_sync = now as i64;
            }
        }
        if self.cfg.groups {
            self.groups[g].ttime.last_end = now;
        }
        if self.active_queue == Some(q) {
            let empty = self.queues[q].is_empty();
            if self.queues[q].slice_new {
                self.set_prio_slice(q, now);
                self.queues[q].slice_new = false;
            }
            if self.should_wait_busy(q, now) {
                let extend = if self.cfg.slice_idle > 0 {
                    self.cfg.slice_idle
                } else {
                    self.group_idle()
                };
                self.queues[q].slice_end = now + extend;
                self.queues[q].wait_busy = true;
            }
            if self.slice_used(q, now) || self.queues[q].class == Class::Idle {
                self.slice_expired(true, now);
            } else if sync && empty && self.close_cooperator(q).is_none() {
                self.arm_slice_timer(now);
            }
        }
    }

    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        let now = now.as_ns();
        self.fire_timer(now);
        let Some(cic) = self.cics.get_mut(&ctx) else {
            return;
        };
        cic.exited = true;
        let queues = std::mem::take(&mut cic.queues);
        for q in queues.into_iter().flatten() {
            if self.active_queue == Some(q) {
                self.slice_expired_queue(q, false, now);
            }
            self.put_cooperator(q);
            self.put_queue(q);
        }
    }

    fn queued(&self) -> usize {
        self.rq_queued as usize
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let table = if self.cfg.groups {
            TUNABLES
        } else {
            FLAT_TUNABLES
        };
        let t = tunable::lookup(self.name(), table, name)?;
        tunable::check_range(t, value)?;
        let v = value as u64;
        match name {
            "quantum" => self.cfg.quantum = v as u32,
            "fifo_expire_sync" => self.cfg.fifo_expire_sync = v * MS,
            "fifo_expire_async" => self.cfg.fifo_expire_async = v * MS,
            "back_seek_max" => self.cfg.back_seek_max = v,
            "back_seek_penalty" => self.cfg.back_seek_penalty = v,
            "slice_sync" => self.cfg.slice_sync = v * MS,
            "slice_async" => self.cfg.slice_async = v * MS,
            "slice_async_rq" => self.cfg.slice_async_rq = v as u32,
            "slice_idle" => self.cfg.slice_idle = v * MS,
            "group_idle" => self.cfg.group_idle = v * MS,
            "low_latency" => self.cfg.low_latency = v != 0,
            "target_latency" => self.cfg.target_latency = v * MS,
            "rotational" => self.cfg.rotational = v != 0,
            _ => {
                return Err(TunableError::Invalid {
                    reason: format!("{name} can only be set when {} is built", self.name()),
                })
            }
        }
        Ok(())
    }
}
