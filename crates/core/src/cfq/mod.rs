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
//! One file per mechanism: the shared vocabulary (`cfq/types.rs`); a queue's requests
//! (`cfq/queue.rs`); service trees and the round-robin lists (`cfq/service_tree.rs`); groups,
//! their activation and charging (`cfq/group.rs`); selection of the group, workload, queue and
//! request, and dispatch (`cfq/select.rs`); slices and idling (`cfq/slice.rs`); insertion,
//! priorities and preemption (`cfq/insert.rs`); cooperating queues and their merging
//! (`cfq/coop.rs`); think time, seekiness, the device-queue estimate and the decision counters
//! (`cfq/stats.rs`); the tunables (`cfq/config.rs`). White-box tests are in `cfq/tests.rs`.
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

mod config;
mod coop;
mod group;
mod insert;
mod queue;
mod select;
mod service_tree;
mod slice;
mod stats;
#[cfg(test)]
mod tests;
mod types;

use std::collections::BTreeMap;

use crate::group::GroupTree;
use crate::id_map::IdMap;
use crate::request::{CtxId, IoPrio, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

pub use config::{Config, FLAT_TUNABLES, TUNABLES};
use group::CfqGroup;
pub use group::{WEIGHT_DEFAULT, WEIGHT_MAX, WEIGHT_MIN};
use queue::CfqQueue;
use service_tree::{GroupServiceTree, ServiceTree};
pub use stats::CfqStats;
use stats::TTime;
use types::{Class, QId, StKey, Workload};

const MS: u64 = 1_000_000;
/// One jiffy at HZ=1000.
const JIFFY: u64 = MS;
/// `CFQ_MIN_TT`: think times below this count as immediate.
const MIN_TT: u64 = 2 * JIFFY;

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
    groups: Vec<CfqGroup>,
    grp_st: GroupServiceTree,
    queues: Vec<CfqQueue>,
    cics: IdMap<CtxId, Cic>,
    rq_queue: IdMap<RequestId, QId>,
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
            cics: IdMap::default(),
            rq_queue: IdMap::default(),
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
        Cfq::new(Config::from_settings(settings)?, groups)
    }

    /// Build `cfq-flat` (vanilla CFQ, every request in the root group) from settings.
    pub fn flat_from_settings(
        settings: &Settings,
        groups: &GroupTree,
    ) -> Result<Cfq, TunableError> {
        Cfq::new(Config::flat_from_settings(settings)?, groups)
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

    fn st(&self, key: StKey) -> &ServiceTree {
        self.groups[key.0].tree(key.1, key.2)
    }

    fn st_mut(&mut self, key: StKey) -> &mut ServiceTree {
        self.groups[key.0].tree_mut(key.1, key.2)
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
        let added = self.queues[q].add(rq.clone(), fifo_time);
        // cfq_add_rq_rb
        let sync = usize::from(rq.is_sync());
        self.queues[q].queued[sync] += 1;
        if !self.queues[q].on_rr {
            self.add_cfqq_rr(q, now);
        }
        let prev = self.queues[q].next_rq;
        let next = self.choose_req(q, prev, Some(added), self.last_position);
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
        self.cfg.set(self.name(), name, value)
    }
}
