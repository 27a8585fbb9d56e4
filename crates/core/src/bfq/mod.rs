//! bfq: Budget Fair Queueing, Paolo Valente's proportional-share scheduler with low-latency
//! heuristics, as in mainline Linux `block/bfq-iosched.c`, `bfq-wf2q.c` and `bfq-cgroup.c`
//! as of v6.9 (stable merge, `bfq_setup_cooperator` with `bfq_too_late_for_merging`,
//! per-group pending-request accounting; see Documentation/block/bfq-iosched.rst).
//!
//! Each process gets a sync queue; each group an async queue per priority. A queue is served
//! in slots: it receives a *budget* in sectors and keeps the device until the budget is used
//! (EXHAUSTED), its budget timeout fires (BUDGET_TIMEOUT), it empties and idling is not worth
//! it (NO_MORE_REQUESTS) or idling times out (TOO_IDLE). Queues are ordered by B-WF2Q+
//! (`bfq/wf2q.rs`) in a hierarchy of groups, so each gets a share of the *sectors* in proportion
//! to its weight, whatever the device's speed. On top of that: budget feedback and
//! `max_budget` autotuning from the measured peak rate (`bfq/budget.rs`); weight raising of
//! interactive and soft real-time queues, with large-burst detection (`bfq/weight_raising.rs`);
//! I/O injection into idling periods with its adaptive limit (`bfq/injection.rs`); early queue
//! merging of cooperating processes with the 100 ms window, stable merge and split
//! (`bfq/merge.rs`); groups and the symmetry test that decides whether idling is needed for
//! guarantees (`bfq/group.rs`); scheduler tags with `bfq_limit_depth`'s shallow depths, depth 1
//! for a queue or group over its weight's share of them (`bfq/depth.rs`).
//!
//! # Tunables (sysfs names, mainline defaults)
//! - `slice_idle` (ms) 8, `slice_idle_us` (us) 8000: idling for an empty sync queue.
//! - `fifo_expire_sync` (ms) 125, `fifo_expire_async` (ms) 250.
//! - `back_seek_max` (KiB) 16384, `back_seek_penalty` 2.
//! - `max_budget` (sectors) 0 = autotuned (16384 until 194 budgets were assigned, then
//!   peak rate * `timeout_sync`).
//! - `timeout_sync` (ms) 125: the budget timeout.
//! - `strict_guarantees` 0, `low_latency` 1.
//! - elevator's own: `merge_window_ms` 100 (0 turns the 100 ms rule off), `queue_merging` 1
//!   (0 = never merge queues), `rotational` 1 (the kernel reads it from the device),
//!   `rotational_at_init` 2 (the flag when bfq started, 2 = as `rotational`: 6.18's
//!   `bfq_init_queue` sets `nonrot_with_queueing` and the reference peak rate from the flag
//!   then, and `bfq_update_hw_tag` alone sets `nonrot_with_queueing` again), `hz`
//!   1000 (the kernel's `CONFIG_HZ`: the length of the jiffies the soft real-time test
//!   counts).
//! - `nr_requests` 256: scheduler tags (a queue attribute; the kernel's 2 * min(queue
//!   depth, 128), 256 for a loop device or a deep one).
//!
//! Fixed mainline parameters: async service charged x3 (symmetric scenario); weight from
//! ioprio (8 - level) * 10, group weight 1..=1000 default 100; raising coefficient 30 for a
//! duration of 7 s * 14000 / peak rate (rotational; 2.5 s * 33000 otherwise) clamped to
//! 3..25 s, ended after 120000 sectors of raised service, granted after 2 s idle; soft
//! real-time coefficient 3000 for 300 ms under 7000 sectors/s; large burst = 8 queues created
//! within 180 ms of each other; I/O bound = busy 80% of the last 200 ms; idle class served at least every
//! 200 ms; stable merge of queues created within 180 ms, performed 600 ms after creation.
//!
//! # Deviations from the kernel
//! - No clock, no timers: the idle timer is [`Dispatch::Idle`]; budget timeouts, the end of
//!   weight raising and inject-limit resets are evaluated lazily from `now` at the next call,
//!   as the kernel itself does for most of them. Times are nanoseconds, not jiffies, except
//!   for the soft real-time bound (below; where the kernel mixes the two, as in the
//!   injection limit's temporary raise, its arithmetic is kept with HZ = 1000).
//! - Waker-queue detection (`bfq_check_waker`) is modelled, and a shared queue inherits the
//!   waker of a queue merged into it, a queue split off it the shared queue's (6.18's
//!   `bfq_merge_bfqqs`, `bfq_init_rq`), but a waker link is not undone when a queue is freed
//!   (the kernel resets its woken queues' `waker_bfqq`); the
//!   `oom_bfqq` and ioprio changes of a running process are not modelled (a queue keeps the
//!   class of its first request). A process whose bios change group (blk-throttle's kworker
//!   resubmitting each throttled group's bios) is followed as 6.18's `bfq_bic_update_cgroup`
//!   does: its async queue of the old group dropped, its sync queue moved to the new group
//!   (`bfq_bfqq_move`) or, shared with a queue of another group, left for a new one
//!   (`bfq_sync_bfqq_move`); the kernel detects the change by the blkcg's serial number, ours
//!   by the group of the process's last request. A queue moved with requests allocated
//!   frees them along its new parents, as `bfqq_request_freed` does (the old group keeps
//!   the count); the kernel's `int` count of the new group may go below zero, ours stops at
//!   zero.
//! - Tag depths are counted ([`crate::tags`]): a request with a shallow depth of d bits in
//!   each tag-bitmap word is admitted while fewer than d * words held requests have a shallow
//!   depth of at most that (with 256 tags, 64-bit words: depth 1 admits at most 4); in the
//!   kernel, deeper or full-depth requests sitting in a word's first bits block it too. A
//!   process's waiting requests allocate one at a time, each at the depth decided when it
//!   starts; a change of `nr_requests` recomputes the word size (the kernel keeps it when the
//!   tags shrink). With `tag_bits` the tags are kept by bit position instead (6.18's sbitmap,
//!   [`crate::tags::TagBits`], with its own deviations). A freed tag goes to the oldest
//!   waiting request its depth allows; the kernel wakes one sleeper per freed tag, its wait
//!   queues in turn, and the woken one may find no tag at its depth and sleep again while
//!   another that could take the tag sleeps on (followed with `tag_sleepers`, off; kernel-diff
//!   turns it and `whole_map_depths` on for a recording of Linux 6.17 or later).
//!   A request from its plug's batch of tags ([`Scheduler::allocate_batched`]: blk-mq's
//!   `__blk_mq_alloc_requests_batch` after a first request with no shallow depth) takes a tag
//!   at full depth when the driver allocates it, not with the batch's first request.
//! - A process's io_context counts as inactive (`active_ref == 0`, think time long) once the
//!   driver reported it exited ([`Scheduler::exit`]).
//! - `try_merge` back- or front-merges a request into a queued one of the same queue (up to the
//!   device's limit), `q->last_merge` first as `elv_merge` does.
//!   Queue merging is tried at a request's insertion and, as the kernel's
//!   `bfq_allow_bio_merge` does, at each bio's merge attempt ([`Scheduler::bio_not_merged`] for
//!   one that merges nothing) once `elv_merge` would offer it a candidate: `q->last_merge`, a
//!   request ending where the bio starts, or one of its queue starting where it ends, of the
//!   same operation, priority and group (the kernel calls it once per candidate; ours once).
//! - bfq's stamps at an insertion read the submitter's plug clock (`blk_time_get_ns`, 6.9+):
//!   the time its process allocated the first request still waiting for insertion (or got a
//!   tag after sleeping), else the insertion's time; `bfq_check_waker`'s difference wraps as
//!   the kernel's `u64` does, `bfq_update_io_intensity`'s is kept signed (the kernel's wraps).
//!   An expiry at an insertion (a preemption, a budget timeout) measures the slot
//!   (`bfq_bfqq_is_slow`) to the submitter's plug clock, a negative difference wrapping as
//!   the kernel's `u32` microseconds do; a dispatch within 20 us of an insertion is taken as
//!   its plug flush's queue run and starts a budget (`bfq_set_budget_timeout`'s
//!   `last_budget_start`) at that plug clock. A dispatch otherwise reads the real time, and
//!   its other stamps (the idling start, the peak rate's samples) do so even in a flush (the
//!   kernel's read the plug clock there).
//! - Jiffies are modelled only where a recorded decision showed they matter: the soft
//!   real-time bound (`bfq_bfqq_softrt_next_start`) and its test, the budget timeout
//!   (`bfq_set_budget_timeout`: `jiffies` plus `timeout_sync` in jiffies, passed once that
//!   jiffy begins), the idle class's timeout (`bfq_lookup_next_entity`: HZ / 5 jiffies
//!   after the jiffy it last timed out in) and the inject limit's intervals (`bfq_add_request`
//!   and `bfq_update_has_short_ttime`: `decrease_time_jif` plus 10, 100 or 1000 ms in
//!   jiffies) count jiffies of the configured `hz` (the kernel's `CONFIG_HZ`, 1000 by
//!   default, 250 on the kernel the corpus was recorded on); the idle time since a budget
//!   timeout (`bfq_wr_min_idle_time`, the burst list's 10 s), raising periods, burst and
//!   merge windows are kept in nanoseconds.

mod active_tree;
mod budget;
mod config;
mod depth;
mod group;
mod injection;
mod merge;
mod pos_tree;
mod queue;
mod weight_raising;
mod wf2q;

#[cfg(test)]
mod clock_tests;
#[cfg(test)]
mod component_tests;
#[cfg(test)]
mod depth_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use config::{Config, TUNABLES};

use crate::group::GroupTree;
pub(crate) use crate::id_map::IdMap;
use crate::request::{CtxId, GroupId, IoPrio, Request, RequestId};
use crate::scheduler::{Dispatch, GrownBy, RequestsMerged, Scheduler};
use crate::tags::{Depth, SchedTags};
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};
use budget::PeakRate;
use depth::{TagWait, WordDepths};
use group::GroupState;
use queue::{class_index, Key, Queue};
use wf2q::{Tree, Wf2q};

/// Internal time: signed nanoseconds, so that "long ago" is representable.
pub(crate) type Tick = i64;
/// A time far in the past ("minus infinity" in the kernel's jiffies arithmetic).
pub(crate) const PAST: Tick = i64::MIN / 4;

const MS: Tick = 1_000_000;
/// How soon after an insertion a dispatch is taken as the queue run of that insertion's plug
/// flush (kernel-diff's replay takes a dispatch within 20 us of an insertion as its run).
const FLUSH_RUN: Tick = 20_000;

/// `t` as the non-negative time the WF2Q+ lookups take.
fn nanos(t: Tick) -> Nanos {
    Nanos(t.max(0) as u64)
}
/// Below this think time (and this idling), requests are deemed back to back.
const MIN_TT: Tick = 2 * MS;

/// Why the in-service queue stops being served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expire {
    /// Idled for its next request in vain.
    TooIdle,
    /// Its budget timeout fired.
    BudgetTimeout,
    /// Its budget is used up.
    Exhausted,
    /// It has no request and idling is not worth it.
    NoMoreRequests,
    /// Another queue preempted it.
    Preempted,
}

/// What BFQ keeps per process (the kernel's `bfq_io_cq`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Bic {
    /// Its sync queue (possibly shared after a merge).
    pub sync_q: Option<usize>,
    /// The async queue it uses.
    pub async_q: Option<usize>,
    /// The process exited.
    pub exited: bool,
    /// State saved when its queue was merged, restored on split.
    pub saved: Option<merge::Saved>,
    /// Its queue was in the burst list when merged.
    pub was_in_burst_list: bool,
    /// Its queue was in a large burst when merged or split.
    pub saved_in_large_burst: bool,
    /// A scheduled stable merge target.
    pub stable_merge_q: Option<usize>,
    /// Its queue was stably merged (never split again).
    pub stably_merged: bool,
    /// Its requests queued or in flight, sync and async (the kernel's `bic->requests`).
    pub requests: u32,
    /// The group of its last request's bio (the kernel's `bic->blkcg_serial_nr`); `None`
    /// before its first.
    pub group: Option<GroupId>,
}

/// Budget Fair Queueing. See the module documentation.
#[derive(Clone, Debug)]
pub struct Bfq {
    cfg: Config,
    wf: Wf2q,
    queues: Vec<Queue>,
    groups: Vec<GroupState>,
    bics: IdMap<CtxId, Bic>,
    /// Request id -> its queue, the depth it took its tag at, its bit (tags kept by bit) and
    /// the CPU it was allocated on (whose hint its freed bit becomes), for queued and
    /// in-flight requests (every one holds a tag: bfq sees a request only once it has one).
    rq_queue: IdMap<u64, (usize, Depth, Option<u32>, u32)>,
    /// The request the last bio front-merged into (`bfq_request_merge`), for
    /// `attempt_front_merge` after it; `None` after a back merge.
    front_merged: Option<RequestId>,
    /// The scheduler tags.
    tags: SchedTags,
    /// The requests waiting for a tag, outside bfq.
    tag_wait: TagWait,
    /// Shallow depths per tag-bitmap word (`bfq_update_depths`).
    word_depths: WordDepths,
    in_service: Option<usize>,
    /// The in-service queue is idling for a request (the kernel's wait_request flag).
    wait_request: bool,
    /// Deadline of the idle slice timer while `wait_request`.
    idle_until: Tick,
    last_idling_start: Tick,
    last_budget_start: Tick,
    /// The last insertion's time and the plug clock its submitter read: a dispatch within
    /// [`FLUSH_RUN`] of it, with no completion between, is taken as its plug flush's queue
    /// run (`blk_mq_flush_plug_list` runs the queue in the submitter's task), whose
    /// `blk_time_get` reads that clock ([`Self::dispatch_clock`]).
    flush_clock: Option<(Tick, Tick)>,
    queued: usize,
    rq_in_driver: u32,
    busy_queues: [u32; 3],
    wr_busy_queues: u32,
    /// Weights of the active, non-raised queues: weight -> count.
    weights: BTreeMap<u64, u32>,
    num_groups_with_pending: u32,
    budgets_assigned: u32,
    /// Current max budget (autotuned unless the user set one).
    max_budget: u64,
    peak: PeakRate,
    last_position: u64,
    in_serv_last_pos: u64,
    /// The request queue's one-hit merge cache (`q->last_merge`): the first request inserted
    /// while it was empty, or the last one a merge grew; cleared when that request leaves.
    last_merge: Option<u64>,
    hw_tag: i8,
    max_rq_in_driver: u32,
    hw_tag_samples: u32,
    nonrot_with_queueing: bool,
    burst: weight_raising::Burst,
    inj: injection::InjectState,
    last_completion: Tick,
    last_completed_q: Option<usize>,
}

impl Bfq {
    /// BFQ with `cfg` over the flat root group.
    pub fn new(cfg: Config) -> Bfq {
        Bfq::with_groups(cfg, &GroupTree::new()).expect("the root group is always valid")
    }

    /// BFQ with `cfg` over `groups` (weights 1..=1000, default 100).
    pub fn with_groups(cfg: Config, groups: &GroupTree) -> Result<Bfq, TunableError> {
        let mut wf = Wf2q::new();
        let groups = group::build(&mut wf, groups)?;
        let user_max = cfg.max_budget;
        let rotational_at_init = cfg.started_rotational();
        Ok(Bfq {
            wf,
            queues: Vec::new(),
            groups,
            bics: IdMap::default(),
            rq_queue: IdMap::default(),
            front_merged: None,
            tags: {
                let mut tags = SchedTags::new(cfg.nr_requests, cfg.nr_requests);
                tags.set_map_depth(cfg.tag_map_depth);
                tags.set_bit_positions(cfg.tag_bits);
                tags
            },
            tag_wait: TagWait::default(),
            word_depths: WordDepths::new(cfg.nr_requests),
            in_service: None,
            wait_request: false,
            idle_until: 0,
            last_idling_start: 0,
            last_budget_start: 0,
            flush_clock: None,
            queued: 0,
            rq_in_driver: 0,
            busy_queues: [0; 3],
            wr_busy_queues: 0,
            weights: BTreeMap::new(),
            num_groups_with_pending: 0,
            budgets_assigned: 0,
            max_budget: if user_max > 0 {
                user_max
            } else {
                budget::DEFAULT_MAX_BUDGET
            },
            peak: PeakRate::new(rotational_at_init),
            last_position: 0,
            in_serv_last_pos: 0,
            last_merge: None,
            hw_tag: -1,
            max_rq_in_driver: 0,
            hw_tag_samples: 0,
            nonrot_with_queueing: !rotational_at_init,
            burst: Default::default(),
            inj: Default::default(),
            last_completion: 0,
            last_completed_q: None,
            cfg,
        })
    }

    /// Build from settings and the run's groups, as the registry does.
    pub fn from_settings(s: &Settings, groups: &GroupTree) -> Result<Bfq, TunableError> {
        Bfq::with_groups(Config::from_settings(s)?, groups)
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    fn tot_busy(&self) -> u32 {
        self.busy_queues.iter().sum()
    }

    fn slice_idle(&self) -> Tick {
        self.cfg.slice_idle.0 as Tick
    }

    fn budget_left(&self, q: usize) -> i64 {
        let e = &self.wf.entities[self.queues[q].eid];
        e.budget as i64 - e.service as i64
    }

    fn set_budget(&mut self, q: usize, b: u64) {
        let e = self.queues[q].eid;
        self.wf.entities[e].budget = b;
    }

    /// Sectors charged for `rq` of queue `q`: async I/O costs three times as much unless the
    /// queue is raised or the scenario asymmetric.
    fn serv_to_charge(&self, rq: &Request, q: usize) -> u64 {
        let qq = &self.queues[q];
        if qq.sync || qq.wr_coeff > 1 || self.asymmetric_scenario(Some(q)) {
            u64::from(rq.sectors)
        } else {
            u64::from(rq.sectors) * budget::ASYNC_CHARGE_FACTOR
        }
    }

    fn next_charge(&self, q: usize) -> u64 {
        self.queues[q]
            .next()
            .map_or(0, |rq| self.serv_to_charge(rq, q))
    }

    // ----- queue lookup and creation (bfq_init_rq) -----

    fn group_of(&self, g: GroupId) -> GroupId {
        if (g.0 as usize) < self.groups.len() {
            g
        } else {
            GroupId::ROOT
        }
    }

    fn new_queue(&mut self, group: GroupId, sync: bool, prio: IoPrio, t: Tick) -> usize {
        let qid = self.queues.len();
        let sd = self.groups[group.0 as usize].sd;
        let class = class_index(prio.class);
        let mut q = Queue::new(0, group, sync, prio.class, prio.level, t);
        let eid = self.wf.add_entity(sd, class, q.orig_weight, Some(qid));
        q.eid = eid;
        q.max_budget = 2 * self.bfq_max_budget() / 3;
        self.queues.push(q);
        qid
    }

    fn async_queue(&mut self, group: GroupId, prio: IoPrio, t: Tick) -> usize {
        let slot = group::async_slot(prio);
        if let Some(q) = self.groups[group.0 as usize].async_q[slot] {
            return q;
        }
        let q = self.new_queue(group, false, prio, t);
        self.groups[group.0 as usize].async_q[slot] = Some(q);
        q
    }

    /// The queue `rq` goes to, creating, splitting and burst-marking as the kernel's
    /// `bfq_init_rq` does.
    fn queue_for(&mut self, rq: &Request, t: Tick) -> usize {
        let ctx = rq.ctx;
        let group = self.group_of(rq.group);
        let prio = rq.prio;
        self.bics.entry(ctx).or_default();
        self.bic_update_group(ctx, group, t);
        if !rq.is_sync() {
            let q = self.async_queue(group, prio, t);
            let bic = self.bics.get_mut(&ctx).expect("just inserted");
            if bic.async_q != Some(q) {
                bic.async_q = Some(q);
                self.queues[q].proc_refs += 1;
            }
            return q;
        }
        let mut split = false;
        let mut already_existing = false;
        let q = match self.bics[&ctx].sync_q {
            None => self.create_sync_queue(ctx, group, prio, t, false),
            Some(q) => {
                let stably = self.bics[&ctx].stably_merged;
                if self.queues[q].coop && self.queues[q].split_coop && !stably {
                    if self.queues[q].in_large_burst {
                        self.bics.get_mut(&ctx).expect("bic").saved_in_large_burst = true;
                    }
                    split = true;
                    match self.split_bfqq(ctx, q, t) {
                        Some(q) => {
                            already_existing = true;
                            q
                        }
                        None => {
                            // A queue created for the split-off process inherits the shared
                            // queue's waker (`bfq_init_rq`, 6.18).
                            let n = self.create_sync_queue(ctx, group, prio, t, true);
                            if let Some(w) = self.queues[q].waker {
                                self.inherit_waker(n, w);
                            }
                            n
                        }
                    }
                } else {
                    q
                }
            }
        };
        if self.queues[q].proc_refs == 1 {
            self.queues[q].bic = Some(ctx);
            if split {
                self.resume_state(q, ctx, already_existing, t);
            }
        }
        if self.queues[q].just_created && (self.burst.size > 0 || self.tot_busy() == 0) {
            self.handle_burst(q, t);
        }
        q
    }

    fn create_sync_queue(
        &mut self,
        ctx: CtxId,
        group: GroupId,
        prio: IoPrio,
        t: Tick,
        respawn: bool,
    ) -> usize {
        let q = self.new_queue(group, true, prio, t);
        self.queues[q].proc_refs = 1;
        self.bics.get_mut(&ctx).expect("bic").sync_q = Some(q);
        if respawn {
            self.mark_split_queue(q, ctx, t);
            q
        } else {
            self.do_or_sched_stable_merge(q, ctx, t)
        }
    }

    // ----- insertion -----

    fn insert_at(&mut self, rq: Request, depth: Depth, bit: Option<u32>, t: Tick) {
        let ctx = rq.ctx;
        let now_ns = self.plug_clock(ctx, t);
        self.insert_with_clock(rq, depth, bit, t, now_ns);
        self.drop_plug_clock(ctx);
        self.flush_clock = Some((t, now_ns));
    }

    /// `bfq_insert_request` at time `t` (jiffies-counted state), its process's plug clock
    /// reading `now_ns` (`blk_time_get_ns`: think time, arrival stamps, FIFO expiry).
    fn insert_with_clock(
        &mut self,
        rq: Request,
        depth: Depth,
        bit: Option<u32>,
        t: Tick,
        now_ns: Tick,
    ) {
        let mut q = self.queue_for(&rq, t);
        self.bics.get_mut(&rq.ctx).expect("bic").requests += 1;
        if let Some(n) = self.setup_cooperator(q, Some(&rq), t) {
            if self.bics[&rq.ctx].sync_q == Some(q) {
                self.merge_bfqqs(rq.ctx, q, n, t);
            }
            self.queues[q].just_created = false;
            q = n;
        }
        self.count_allocated(q, true);
        self.update_io_thinktime(q, now_ns);
        self.update_has_short_ttime(q, rq.ctx, t);
        self.update_io_seektime(q, &rq, t);
        let sync = rq.is_sync();
        let sectors = rq.sectors;
        let end = rq.end();
        let key: Key = (rq.sector, rq.id.0);
        let expire = now_ns
            + if sync {
                self.cfg.fifo_expire_sync.0 as Tick
            } else {
                self.cfg.fifo_expire_async.0 as Tick
            };
        self.rq_queue.insert(rq.id.0, (q, depth, bit, rq.cpu));
        // bfq_insert_request: a mergeable request becomes `q->last_merge` if there is none.
        self.last_merge.get_or_insert(rq.id.0);
        self.add_request(q, rq, t, now_ns);
        self.queues[q].fifo.push_back((expire, key));
        self.rq_enqueued(q, sectors, sync, end, t, now_ns);
    }

    /// `bfq_add_request` at `t`; `now_ns` is its `blk_time_get_ns` (the plug clock).
    fn add_request(&mut self, q: usize, rq: Request, t: Tick, now_ns: Tick) {
        let old_wr = self.queues[q].wr_coeff;
        let sync = rq.is_sync();
        let ctx = rq.ctx;
        self.queues[q].queued[usize::from(sync)] += 1;
        self.queued += 1;
        if self.queues[q].sync && self.bics[&ctx].requests <= 1 {
            self.check_waker(q, now_ns);
            self.inject_on_first_request(q, t, now_ns);
        }
        if self.queues[q].sync {
            self.update_io_intensity(q, now_ns);
        }
        let key: Key = (rq.sector, rq.id.0);
        self.queues[q].sort.insert(key, rq);
        let prev = self.queues[q].next_rq;
        let next = {
            let qq = &self.queues[q];
            queue::choose_req(
                qq.next(),
                qq.sort.get(&key),
                self.last_position,
                self.cfg.back_seek_max_kib * 2,
                self.cfg.back_seek_penalty,
            )
            .map(|r| (r.sector, r.id.0))
        };
        self.queues[q].next_rq = next;
        if !self.nonrot_with_queueing && prev != next {
            self.pos_tree_add_move(q, t);
        }
        let mut interactive = false;
        if !self.queues[q].busy {
            interactive = self.handle_idle_busy_switch(q, old_wr, ctx, t, now_ns);
        } else {
            let qq = &self.queues[q];
            if self.cfg.low_latency
                && old_wr == 1
                && !sync
                && t > qq.last_wr_start_finish + weight_raising::MIN_INTER_ARR_ASYNC
            {
                let d = self.wr_duration();
                let qq = &mut self.queues[q];
                qq.wr_coeff = weight_raising::WR_COEFF;
                qq.wr_cur_max_time = d;
                self.wr_busy_queues += 1;
            }
            if prev != next {
                self.updated_next_req(q, t);
            }
        }
        let qq = &mut self.queues[q];
        if self.cfg.low_latency && (old_wr == 1 || qq.wr_coeff == 1 || interactive) {
            qq.last_wr_start_finish = t;
        }
    }

    /// A queue goes from idle to busy: budget, raising, burst and I/O-bound bookkeeping, then
    /// activation and possibly preemption of the in-service queue. Returns `interactive`.
    /// `now_ns` is the plug clock (`arrived_in_time`).
    fn handle_idle_busy_switch(
        &mut self,
        q: usize,
        old_wr: u64,
        ctx: CtxId,
        t: Tick,
        now_ns: Tick,
    ) -> bool {
        let qq = &self.queues[q];
        let idle_for_long =
            qq.dispatched == 0 && t > qq.budget_timeout + weight_raising::MIN_IDLE_TIME;
        let arrived_in_time = now_ns <= qq.last_end_request + 3 * self.slice_idle();
        let in_burst = qq.in_large_burst;
        let default_weight = qq.orig_weight == weight_raising::DEFAULT_WEIGHT;
        let soft_rt = self.cfg.low_latency
            && !qq.totally_seeky()
            && !in_burst
            && self.jiffy_passed(qq.soft_rt_next_start, t)
            && qq.dispatched == 0
            && default_weight;
        let interactive = !in_burst && idle_for_long && default_weight;
        let owned = qq.bic.is_some() || self.bics.get(&ctx).is_some_and(|b| b.stably_merged);
        let wr_or_deserves = self.cfg.low_latency
            && (qq.wr_coeff > 1 || (qq.sync && owned && (interactive || soft_rt)));
        let wants_preempt = self.update_budg_for_activation(q, arrived_in_time);
        let qq = &self.queues[q];
        if !qq.just_created && idle_for_long && t > qq.budget_timeout + 10_000 * MS {
            self.burst_list_remove(q);
            self.queues[q].in_large_burst = false;
        }
        self.queues[q].just_created = false;
        if self.cfg.low_latency && t > self.queues[q].split_time + weight_raising::MIN_IDLE_TIME {
            self.update_wr_on_rq_arrival(
                q,
                old_wr,
                wr_or_deserves,
                interactive,
                in_burst,
                soft_rt,
                t,
            );
        }
        let qq = &mut self.queues[q];
        qq.last_idle_bklogged = t;
        qq.service_from_backlogged = 0;
        qq.softrt_update = false;
        self.add_busy(q, t);
        // Preempt if `q` must recover a service hole and is at least as raised, is of a
        // higher class or weight, or if idling for the in-service queue is no longer worth it
        // now that `q` is busy (the last since 5.12: "re-evaluate convenience of I/O plugging
        // on rq arrivals"), and the root would serve something else next
        // (`next_queue_may_preempt`).
        if let Some(is) = self.in_service {
            if is != q
                && ((wants_preempt && self.queues[q].wr_coeff >= self.queues[is].wr_coeff)
                    || self.higher_class_or_weight(q, is)
                    || !self.better_to_idle(is))
                && self.wf.next_may_preempt()
            {
                self.expire_clocked(is, false, Expire::Preempted, t, now_ns);
            }
        }
        interactive
    }

    fn higher_class_or_weight(&self, q: usize, is: usize) -> bool {
        let (a, b) = (&self.queues[q], &self.queues[is]);
        if class_index(a.class) < class_index(b.class) {
            return true;
        }
        let (ea, eb) = (&self.wf.entities[a.eid], &self.wf.entities[b.eid]);
        let (wa, wb) = if ea.sd == eb.sd {
            (ea.weight, eb.weight)
        } else {
            let gw = |e: &wf2q::Entity| match self.wf.sds[e.sd].owner {
                Some(g) => self.wf.entities[g].weight,
                None => e.weight,
            };
            (gw(ea), gw(eb))
        };
        wa > wb
    }

    /// A request arrived for `q`: stop idling for it unless it is small and idling boosts
    /// throughput; expire it if its budget timed out. `now_ns` is the submitter's plug clock
    /// (the expiry's `bfq_bfqq_is_slow` reads it).
    fn rq_enqueued(&mut self, q: usize, sectors: u32, sync: bool, end: u64, t: Tick, now_ns: Tick) {
        self.queues[q].last_request_pos = end;
        if self.in_service == Some(q) && self.wait_request {
            let small = self.queues[q].queued[usize::from(sync)] == 1 && sectors < 32;
            let timed_out = self.budget_timed_out(q, t);
            if small && self.idling_boosts_thr_without_issues(q) && !timed_out {
                return;
            }
            self.wait_request = false;
            if timed_out {
                self.expire_clocked(q, false, Expire::BudgetTimeout, t, now_ns);
            }
        }
    }

    /// I/O bound means busy (requests queued or in flight) at least 80% of the time over
    /// the last 200 ms or so (`bfq_update_io_intensity`, mainline since 5.12). Called on
    /// each sync request arrival, before the request is queued.
    fn update_io_intensity(&mut self, q: usize, t: Tick) {
        let qq = &mut self.queues[q];
        let tot_io_time = t - qq.io_start_time;
        if qq.is_empty() && qq.dispatched == 0 {
            qq.tot_idle_time += t - qq.last_end_request;
        }
        if qq.just_created {
            return;
        }
        qq.io_bound = qq.tot_idle_time * 5 <= tot_io_time;
        if tot_io_time > 200 * MS {
            qq.io_start_time = t - tot_io_time / 2;
            qq.tot_idle_time /= 2;
        }
    }

    /// Think time: how long the queue stays without I/O before its next request. Only the
    /// periods with nothing queued or in flight count (mainline since 5.12).
    fn update_io_thinktime(&mut self, q: usize, t: Tick) {
        let cap = 2 * self.slice_idle() as u64;
        if self.queues[q].dispatched > 0 || self.queues[q].busy {
            return;
        }
        let qq = &mut self.queues[q];
        let elapsed = if t >= qq.last_end_request {
            ((t - qq.last_end_request) as u64).min(cap)
        } else {
            cap
        };
        qq.ttime_samples = (7 * qq.ttime_samples + 256) / 8;
        qq.ttime_total = (7 * qq.ttime_total + 256 * elapsed) / 8;
        qq.ttime_mean = (qq.ttime_total + 128) / qq.ttime_samples.max(1);
    }

    /// Think time short or long (`bfq_update_has_short_ttime`): long once the issuing
    /// process `ctx` has exited, or when the mean exceeds half the idling timeout (mainline
    /// since 5.12) over enough samples.
    fn update_has_short_ttime(&mut self, q: usize, ctx: CtxId, t: Tick) {
        let slice = self.slice_idle();
        let qq = &self.queues[q];
        if !qq.sync || qq.class_idle() || slice == 0 {
            return;
        }
        if t <= qq.split_time + weight_raising::MIN_IDLE_TIME {
            return;
        }
        let exited = self.bics.get(&ctx).is_some_and(|b| b.exited);
        let short = !(exited || (qq.ttime_samples > 80 && qq.ttime_mean > slice as u64 / 2));
        let changed = short != qq.has_short_ttime;
        self.queues[q].has_short_ttime = short;
        let qq = &self.queues[q];
        if changed
            && qq.last_serv_time == 0
            && (self.jiffies_since(qq.decrease_time, 100 * MS, t) || !short)
        {
            self.reset_inject_limit(q, t);
        }
    }

    /// Record whether `rq` seeks; a soft real-time queue whose last 32 requests all seeked
    /// is random I/O, not isochronous: its soft real-time raising ends, back to the
    /// interactive raising it interrupted if that still runs (`bfq_update_io_seektime`).
    fn update_io_seektime(&mut self, q: usize, rq: &Request, t: Tick) {
        let rot = self.cfg.rotational;
        let qq = &mut self.queues[q];
        let seeky = queue::rq_seeky(rot, qq.last_request_pos, rq.sector, rq.sectors);
        qq.seek_history = (qq.seek_history << 1) | u32::from(seeky);
        if qq.wr_coeff > 1
            && qq.wr_cur_max_time == weight_raising::RT_MAX_TIME
            && qq.totally_seeky()
        {
            self.end_softrt_wr(q, t);
        }
    }

    // ----- busy / idle, weights -----

    /// Set the queue entity's weight from its ioprio weight and raising coefficient, keeping
    /// the weights multiset in step (`__bfq_entity_update_weight_prio`): a queue whose weight
    /// changes leaves its weight counter and, unless raised, joins that of its new weight (a
    /// busy queue at once, an idle one when it next becomes busy). Returns whether the
    /// weight changed. As in the kernel, a change of the raising coefficient is pending
    /// (`entity.prio_changed`) until the entity is activated or requeued, or the in-service
    /// queue starts or stops being raised (`bfq_update_wr_data`).
    fn apply_weight(&mut self, q: usize) -> bool {
        let qq = &self.queues[q];
        let new = qq.orig_weight * qq.wr_coeff;
        let e = qq.eid;
        if self.wf.entities[e].weight == new {
            return false;
        }
        self.wf.set_weight(e, new);
        self.count_weight(q);
        true
    }

    /// The queue's place in the weights counter after its weight changed
    /// (`bfq_weights_tree_remove` / `bfq_weights_tree_add` in `__bfq_entity_update_weight_prio`).
    fn count_weight(&mut self, q: usize) {
        self.weights_remove(q);
        if self.queues[q].wr_coeff == 1 && self.queues[q].busy {
            self.weights_add(q);
        }
    }

    fn weights_add(&mut self, q: usize) {
        if self.queues[q].weight_counter.is_some() {
            return;
        }
        let w = self.wf.entities[self.queues[q].eid].weight;
        *self.weights.entry(w).or_insert(0) += 1;
        self.queues[q].weight_counter = Some(w);
    }

    fn weights_remove(&mut self, q: usize) {
        if let Some(w) = self.queues[q].weight_counter.take() {
            if let Some(c) = self.weights.get_mut(&w) {
                *c -= 1;
                if *c == 0 {
                    self.weights.remove(&w);
                }
            }
        }
    }

    fn add_busy(&mut self, q: usize, t: Tick) {
        let weight_changed = self.apply_weight(q);
        let nb = self.queues[q].non_blocking_wait_rq;
        self.activate_queue_entity(q, nb, t);
        let qq = &mut self.queues[q];
        qq.non_blocking_wait_rq = false;
        qq.busy = true;
        self.busy_queues[class_index(qq.class)] += 1;
        let qq = &self.queues[q];
        let (idle, unraised) = (qq.dispatched == 0, qq.wr_coeff == 1);
        if idle {
            self.add_in_groups_pending(q);
        }
        if unraised && (idle || weight_changed) {
            self.weights_add(q);
        }
        if self.queues[q].wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
    }

    fn del_busy(&mut self, q: usize, expiration: bool, t: Tick) {
        let qq = &mut self.queues[q];
        qq.busy = false;
        self.busy_queues[class_index(qq.class)] -= 1;
        if qq.wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        let e = self.queues[q].eid;
        self.wf
            .deactivate_entity(e, true, expiration, self.wf_now(t));
        if self.queues[q].dispatched == 0 {
            self.del_in_groups_pending(q);
            self.weights_remove(q);
        }
    }

    /// `bfq_activate_bfqq`: activate a queue's entity and, as far as their schedule changes,
    /// the groups above it.
    fn activate_queue_entity(&mut self, q: usize, non_blocking: bool, t: Tick) {
        let (e, push) = (self.queues[q].eid, self.queues[q].wr_coeff);
        self.wf
            .activate_requeue(e, non_blocking, push, false, false, self.wf_now(t));
    }

    /// `bfq_requeue_bfqq`: requeue queue `q` with its (new) budget; if it is the in-service
    /// queue (being expired), every ancestor too.
    fn requeue_queue(&mut self, q: usize, expiration: bool, t: Tick) {
        // A pending weight change (the end of raising, a new ioprio) takes effect after an
        // in-service queue is charged its service at the old weight (`__bfq_requeue_entity`
        // charges, `bfq_update_fin_time_enqueue` then applies the change).
        let qq = &self.queues[q];
        let (e, push, new) = (qq.eid, qq.wr_coeff, qq.orig_weight * qq.wr_coeff);
        let changed = self.wf.entities[e].weight != new;
        let requeue = self.in_service == Some(q);
        let now = self.wf_now(t);
        self.wf
            .activate_requeue_weighted(e, Some(new), false, push, requeue, expiration, now);
        if changed {
            self.count_weight(q);
        }
    }

    /// The next request of `q` changed: give it enough budget for it.
    fn updated_next_req(&mut self, q: usize, t: Tick) {
        if self.queues[q].next_rq.is_none() || self.in_service == Some(q) {
            return;
        }
        let e = self.queues[q].eid;
        let new = self.queues[q]
            .max_budget
            .max(self.next_charge(q))
            .max(self.wf.entities[e].service);
        if self.wf.entities[e].budget != new {
            self.wf.entities[e].budget = new;
            if self.wf.entities[e].tree == Tree::Active {
                self.requeue_queue(q, false, t);
            }
        }
    }

    /// Whether the scenario is asymmetric for `q`: queues of different weights (unless `q`
    /// has the smallest), several classes busy, or more than one group with pending I/O.
    fn asymmetric_scenario(&self, q: Option<usize>) -> bool {
        let smallest = q
            .and_then(|q| self.queues[q].weight_counter)
            .is_some_and(|w| self.weights.keys().next() == Some(&w));
        let varied = !smallest && self.weights.len() >= 2;
        let classes = self.busy_queues.iter().filter(|&&n| n > 0).count();
        varied || classes > 1 || self.num_groups_with_pending > 1
    }

    // ----- queue selection, idling, expiration -----

    fn bfq_max_budget(&self) -> u64 {
        if self.budgets_assigned < budget::STATS_MIN_BUDGETS {
            budget::DEFAULT_MAX_BUDGET
        } else {
            self.max_budget
        }
    }

    fn bfq_min_budget(&self) -> u64 {
        self.bfq_max_budget() / 32
    }

    /// The time the service trees are given at `t`: the kernel's `jiffies` (the start of the
    /// jiffy `t` falls in), which `bfq_lookup_next_entity` stamps and compares for the idle
    /// class's timeout (`BFQ_CL_IDLE_TIMEOUT`, HZ / 5 jiffies).
    fn wf_now(&self, t: Tick) -> Nanos {
        nanos(self.jiffy_start(t))
    }

    fn get_next_queue(&mut self, t: Tick) -> Option<usize> {
        if self.tot_busy() == 0 {
            return None;
        }
        let leaf = self.wf.get_next(self.wf_now(t))?;
        self.wf.entities[leaf].queue
    }

    fn set_in_service_queue(&mut self, t: Tick) -> Option<usize> {
        let q = self.get_next_queue(t)?;
        self.queues[q].fifo_checked = false;
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        self.softrt_shift_on_service(q, t);
        self.set_budget_timeout(q, t);
        // The previous queue's position says nothing about this one (41e76c85660c "Avoid
        // false bfq queue merging").
        self.in_serv_last_pos = 0;
        self.in_service = Some(q);
        Some(q)
    }

    /// The time `blk_time_get` reads in a dispatch at `t`: the plug clock of the insertion
    /// whose flush runs it ([`Bfq::flush_clock`]), else `t` (a run by kblockd or after a
    /// completion reads the real time).
    fn dispatch_clock(&self, t: Tick) -> Tick {
        match self.flush_clock {
            Some((at, clock)) if t >= at && t - at <= FLUSH_RUN => clock,
            _ => t,
        }
    }

    /// `bfq_set_budget_timeout`: `jiffies + bfq_timeout * timeout_coeff`, in whole jiffies
    /// (`timeout_sync` is kept in jiffies, `msecs_to_jiffies` rounding up), so the queue times
    /// out at the start of that jiffy ([`Self::budget_timed_out`], `bfq_bfqq_budget_timeout`:
    /// `time_is_before_eq_jiffies`), up to a jiffy before `timeout_sync` has passed; and the
    /// budget's start, `last_budget_start`, at what `blk_time_get` reads in the dispatch at
    /// `t` ([`Self::dispatch_clock`]).
    fn set_budget_timeout(&mut self, q: usize, t: Tick) {
        self.last_budget_start = self.dispatch_clock(t);
        let qq = &self.queues[q];
        let coeff = if qq.wr_cur_max_time == weight_raising::RT_MAX_TIME {
            1
        } else {
            self.wf.entities[qq.eid].weight / qq.orig_weight.max(1)
        };
        let jiffies = self.jiffies(t) + self.timeout_jiffies() * coeff as i64;
        self.queues[q].budget_timeout = jiffies * self.jiffy();
    }

    /// `bfqd->bfq_timeout`: `timeout_sync` in jiffies, as `bfq_timeout_sync_store` keeps it
    /// (`msecs_to_jiffies`, rounding up).
    fn timeout_jiffies(&self) -> i64 {
        self.to_jiffies(self.cfg.timeout.0 as i64)
    }

    /// `bfq_bfqq_budget_timeout`: the jiffy the timeout names has begun
    /// (`time_is_before_eq_jiffies`); `budget_timeout` is the start of that jiffy.
    fn budget_timed_out(&self, q: usize, t: Tick) -> bool {
        t >= self.queues[q].budget_timeout
    }

    fn may_expire_for_budg_timeout(&self, q: usize, t: Tick) -> bool {
        let e = &self.wf.entities[self.queues[q].eid];
        (!self.wait_request || self.budget_left(q) >= (e.budget / 3) as i64)
            && self.budget_timed_out(q, t)
    }

    fn idling_boosts_thr_without_issues(&self, q: usize) -> bool {
        let qq = &self.queues[q];
        if qq.proc_refs == 0 {
            return false;
        }
        let rot = self.cfg.rotational;
        let rot_without_queueing = rot && self.hw_tag == 0;
        let seq_io_bound = !qq.seeky() && qq.io_bound && qq.has_short_ttime;
        let boosts = rot_without_queueing || ((rot || self.hw_tag == 0) && seq_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    fn idling_needed_for_service_guarantees(&self, q: usize) -> bool {
        let qq = &self.queues[q];
        if qq.proc_refs == 0 {
            return false;
        }
        let tot_busy = self.tot_busy();
        (qq.wr_coeff > 1
            && (self.wr_busy_queues < tot_busy || self.rq_in_driver >= qq.dispatched + 4))
            || self.asymmetric_scenario(Some(q))
            // The only busy queue keeps the device: expiring it gains nothing, and a queue that
            // becomes busy meanwhile could be served for long before it (mainline since 5.12).
            || tot_busy == 1
    }

    fn better_to_idle(&self, q: usize) -> bool {
        let qq = &self.queues[q];
        if qq.proc_refs == 0 {
            return false;
        }
        if self.cfg.strict_guarantees {
            return true;
        }
        if self.slice_idle() == 0 || !qq.sync || qq.class_idle() {
            return false;
        }
        self.idling_boosts_thr_without_issues(q) || self.idling_needed_for_service_guarantees(q)
    }

    fn must_idle(&self, q: usize) -> bool {
        self.queues[q].is_empty() && self.better_to_idle(q)
    }

    fn arm_slice_timer(&mut self, t: Tick) {
        let q = self.in_service.expect("in service");
        self.wait_request = true;
        let mut sl = self.slice_idle();
        let qq = &self.queues[q];
        if qq.seeky() && qq.wr_coeff == 1 && !self.asymmetric_scenario(Some(q)) {
            sl = sl.min(MIN_TT);
        } else if qq.wr_coeff > 1 {
            sl = sl.max(20 * MS);
        }
        self.last_idling_start = t;
        self.idle_until = t + sl.max(1);
    }

    /// The idle slice timer, evaluated lazily.
    fn check_idle_timer(&mut self, t: Tick) {
        if !self.wait_request || t < self.idle_until {
            return;
        }
        let Some(q) = self.in_service else {
            self.wait_request = false;
            return;
        };
        self.wait_request = false;
        if self.budget_timed_out(q, t) {
            self.expire(q, true, Expire::BudgetTimeout, t);
        } else if self.queues[q].queued == [0, 0] {
            self.expire(q, true, Expire::TooIdle, t);
        }
    }

    fn select_queue(&mut self, t: Tick) -> Option<usize> {
        let mut q = match self.in_service {
            Some(q) => {
                if self.may_expire_for_budg_timeout(q, t) && !self.must_idle(q) {
                    self.expire(q, false, Expire::BudgetTimeout, t);
                    self.set_in_service_queue(t)?
                } else {
                    q
                }
            }
            None => self.set_in_service_queue(t)?,
        };
        loop {
            if let Some(next) = self.queues[q].next() {
                if self.serv_to_charge(next, q) as i64 > self.budget_left(q) {
                    self.expire(q, false, Expire::Exhausted, t);
                } else {
                    self.wait_request = false;
                    return Some(q);
                }
            } else if self.wait_request
                || (self.queues[q].dispatched != 0 && self.better_to_idle(q))
            {
                return self.injection_candidate(q, t);
            } else {
                self.expire(q, false, Expire::NoMoreRequests, t);
            }
            q = self.set_in_service_queue(t)?;
        }
    }

    /// Expire the in-service queue `q` for `reason` (`bfq_bfqq_expire`).
    fn expire(&mut self, q: usize, compensate: bool, reason: Expire, t: Tick) {
        self.expire_clocked(q, compensate, reason, t, t);
    }

    /// [`Self::expire`] in a context whose `blk_time_get` reads `clock`: in a submitter's
    /// insertion (a preemption, a budget timeout on a request's arrival) its plug clock,
    /// which `bfq_bfqq_is_slow` measures the slot against.
    fn expire_clocked(&mut self, q: usize, compensate: bool, reason: Expire, t: Tick, clock: Tick) {
        let (slow, delta_ms) = self.is_slow(q, compensate, clock);
        let e = self.queues[q].eid;
        let budget = self.wf.entities[e].budget;
        if self.queues[q].wr_coeff == 1
            && (slow
                || (reason == Expire::BudgetTimeout && self.budget_left(q) >= (budget / 3) as i64))
        {
            self.charge_time(q, delta_ms, t);
        }
        if self.cfg.low_latency && self.queues[q].wr_coeff == 1 {
            self.queues[q].last_wr_start_finish = t;
        }
        if self.cfg.low_latency && self.queues[q].is_empty() {
            let qq = &self.queues[q];
            // As in 6.9 and 6.18: any queue left empty with nothing in flight, interactive
            // raising or not (3c337690d2eb's exception for interactive queues is kept only
            // by `bfq_completed_request`'s delayed update).
            if qq.dispatched == 0 {
                self.queues[q].soft_rt_next_start = self.softrt_next_start(q, t);
            } else if qq.dispatched > 0 {
                self.queues[q].softrt_update = true;
            }
        }
        if self.inj.rqs_injected || self.inj.wait_dispatch || self.inj.waited_rq.is_some() {
            self.inj_note(q, t, "expire: measurement dropped".into());
        }
        self.inj.rqs_injected = false;
        self.inj.wait_dispatch = false;
        self.inj.waited_rq = None;
        self.recalc_budget(q, reason);
        self.expire_inner(q, reason, t);
        if !self.queues[q].busy && reason != Expire::BudgetTimeout && reason != Expire::Exhausted {
            self.queues[q].non_blocking_wait_rq = true;
        } else {
            self.wf.entities[e].service = 0;
        }
        let mut sd = self.wf.entities[e].sd;
        while let Some(g) = self.wf.sds[sd].owner {
            self.wf.entities[g].service = 0;
            sd = self.wf.entities[g].sd;
        }
    }

    /// `__bfq_bfqq_expire`: deactivate or requeue, then leave service.
    fn expire_inner(&mut self, q: usize, reason: Expire, t: Tick) {
        if self.queues[q].coop && self.queues[q].seeky() {
            self.queues[q].split_coop = true;
        }
        if self.queues[q].is_empty()
            && !(reason == Expire::Preempted && self.idling_needed_for_service_guarantees(q))
        {
            if self.queues[q].dispatched == 0 {
                self.queues[q].budget_timeout = self.jiffy_start(t);
            }
            self.del_busy(q, true, t);
        } else {
            self.requeue_queue(q, true, t);
            if !self.nonrot_with_queueing && !self.queues[q].is_empty() {
                self.pos_tree_add_move(q, t);
            }
        }
        self.wait_request = false;
        self.in_service = None;
        self.wf.reset_in_service(self.queues[q].eid);
    }

    // ----- dispatch -----

    fn served(&mut self, q: usize, served: u64, t: Tick) {
        let qq = &mut self.queues[q];
        if qq.service_from_backlogged == 0 {
            qq.first_io_time = t;
        }
        if qq.wr_coeff > 1 {
            qq.service_from_wr += served;
        }
        qq.service_from_backlogged += served;
        let e = qq.eid;
        self.wf.served(e, served);
    }

    fn find_next_rq(&mut self, q: usize, last: Key, t: Tick) -> Option<Key> {
        let qq = &mut self.queues[q];
        if !qq.fifo_checked {
            qq.fifo_checked = true;
            while let Some(&(_, k)) = qq.fifo.front() {
                if qq.sort.contains_key(&k) {
                    break;
                }
                qq.fifo.pop_front();
            }
            if let Some(&(exp, k)) = qq.fifo.front() {
                if k != last && t >= exp {
                    return Some(k);
                }
            }
        }
        let qq = &self.queues[q];
        let next = qq
            .sort
            .range((std::ops::Bound::Excluded(last), std::ops::Bound::Unbounded))
            .next()
            .or_else(|| qq.sort.iter().next().filter(|(k, _)| **k != last))
            .map(|(_, r)| r);
        let prev = qq.sort.range(..last).next_back().map(|(_, r)| r);
        queue::choose_req(
            next,
            prev,
            last.0,
            self.cfg.back_seek_max_kib * 2,
            self.cfg.back_seek_penalty,
        )
        .map(|r| (r.sector, r.id.0))
    }

    fn remove_request(&mut self, q: usize, key: Key, t: Tick) -> Request {
        if self.queues[q].next_rq == Some(key) {
            let n = self.find_next_rq(q, key, t);
            self.queues[q].next_rq = n;
            self.updated_next_req(q, t);
        }
        let rq = self.queues[q].sort.remove(&key).expect("queued request");
        if self.last_merge == Some(key.1) {
            self.last_merge = None;
        }
        self.queues[q].queued[usize::from(rq.is_sync())] -= 1;
        self.queued -= 1;
        if self.queues[q].is_empty() {
            self.queues[q].next_rq = None;
            if self.queues[q].busy && self.in_service != Some(q) {
                self.del_busy(q, false, t);
                let e = self.queues[q].eid;
                self.wf.entities[e].budget = 0;
                self.wf.entities[e].service = 0;
            }
            self.pos_tree_remove(q);
        } else if !self.nonrot_with_queueing {
            self.pos_tree_add_move(q, t);
        }
        rq
    }

    /// `attempt_back_merge` / `attempt_front_merge` after a bio grew request `into`: bfq's
    /// `next_request` and `former_request` are `elv_rb_latter_request` and
    /// `elv_rb_former_request`, the next and the previous request in `into`'s queue's sort
    /// tree. After a back merge the next one merges into `into`, after a front merge `into`
    /// merges into the previous one, if `attempt_merge` allows (same operation and I/O
    /// priority, contiguous, at most `max_sectors` together). Then `bfq_requests_merged`
    /// (the one kept takes the merged one's FIFO place when that one expires first, and its
    /// place as the queue's next request; `bfq_remove_request` drops it) and its freeing
    /// (`bfq_finish_requeue_request` of a request never started: its tag and its allocation
    /// given back). Returns (kept, gone).
    fn merge_neighbour(
        &mut self,
        into: RequestId,
        front: bool,
        max_sectors: u32,
        t: Tick,
    ) -> Option<(RequestId, RequestId)> {
        let &(q, ..) = self.rq_queue.get(&into.0)?;
        let qq = &mut self.queues[q];
        let (&own, _) = qq.sort.iter().find(|(k, _)| k.1 == into.0)?;
        let (&other, _) = if front {
            qq.sort.range(..own).next_back()?
        } else {
            qq.sort
                .range((std::ops::Bound::Excluded(own), std::ops::Bound::Unbounded))
                .next()?
        };
        let (key, next_key) = if front { (other, own) } else { (own, other) };
        let (rq, next) = (&qq.sort[&key], &qq.sort[&next_key]);
        if next.sector != rq.end()
            || next.op != rq.op
            || next.prio != rq.prio
            || rq.sectors + next.sectors > max_sectors
        {
            return None;
        }
        let (kept, gone, ctx, sectors) = (rq.id, next.id, next.ctx, next.sectors);
        let expiry = |k: Key| qq.fifo.iter().find(|e| e.1 == k).map(|e| e.0);
        if let (Some(own), Some(theirs)) = (expiry(key), expiry(next_key)) {
            if theirs < own {
                qq.fifo.retain(|e| e.1 != key);
                if let Some(e) = qq.fifo.iter_mut().find(|e| e.1 == next_key) {
                    e.1 = key;
                }
            }
        }
        if qq.next_rq == Some(next_key) {
            qq.next_rq = Some(key);
        }
        if let Some(r) = qq.sort.get_mut(&key) {
            r.sectors += sectors;
        }
        self.remove_request(q, next_key, t);
        // elv_merge_requests: the request kept is the one-hit cache now.
        self.last_merge = Some(kept.0);
        self.free_request(gone, ctx);
        self.admit_waiting(t);
        Some((kept, gone))
    }

    fn dispatch_from(&mut self, q: usize, t: Tick) -> Request {
        let key = self.queues[q]
            .next_rq
            .expect("a queue chosen to dispatch has a request");
        let charge = self.next_charge(q);
        self.served(q, charge, t);
        if self.in_service == Some(q) && self.inj.wait_dispatch {
            self.inj.wait_dispatch = false;
            self.inj.waited_rq = Some(key.1);
            let n = format!(
                "waited_rq = #{} (rq_in_driver {})",
                key.1, self.rq_in_driver
            );
            self.inj_note(q, t, n);
        }
        self.queues[q].dispatched += 1;
        {
            let rq = &self.queues[q].sort[&key];
            let (sector, sectors, end) = (rq.sector, rq.sectors, rq.end());
            self.update_peak_rate(q, sector, sectors, end, t);
        }
        let rq = self.remove_request(q, key, t);
        self.rq_in_driver += 1;
        if self.in_service == Some(q) {
            self.update_wr_data(q, t);
            if self.tot_busy() > 1 && self.queues[q].class_idle() {
                self.expire(q, false, Expire::Exhausted, t);
            }
        }
        rq
    }

    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_in_driver as usize + self.queued <= budget::HW_QUEUE_THRESHOLD as usize {
            return;
        }
        if let Some(q) = self.in_service {
            let qq = &self.queues[q];
            if qq.has_short_ttime
                && qq.dispatched + qq.queued[0] + qq.queued[1] < budget::HW_QUEUE_THRESHOLD
                && self.rq_in_driver < budget::HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= budget::HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = i8::from(self.max_rq_in_driver > budget::HW_QUEUE_THRESHOLD);
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
        self.nonrot_with_queueing = !self.cfg.rotational && self.hw_tag == 1;
    }

    /// Request `id` of `ctx` is freed: its tag, its queue's and its process's count of
    /// requests given back (`bfqq_request_freed`, `RQ_BIC(rq)->requests--`). Its queue, if
    /// bfq knew the request.
    fn free_request(&mut self, id: RequestId, ctx: CtxId) -> Option<usize> {
        let (q, depth, bit, cpu) = self.rq_queue.remove(&id.0)?;
        self.tags.release_bit(depth, bit, cpu);
        self.tag_freed();
        self.count_allocated(q, false);
        if let Some(b) = self.bics.get_mut(&ctx) {
            b.requests = b.requests.saturating_sub(1);
        }
        Some(q)
    }

    /// `bfq_finish_requeue_request`: the inject limit is updated before
    /// `bfq_completed_request` samples the hardware queue depth.
    fn complete_at(&mut self, id: RequestId, ctx: CtxId, t: Tick) {
        self.flush_clock = None;
        let Some(q) = self.free_request(id, ctx) else {
            return;
        };
        if self.inj.waited_rq == Some(id.0) {
            self.update_inject_limit(q, t);
        }
        self.update_hw_tag();
        self.rq_in_driver = self.rq_in_driver.saturating_sub(1);
        self.queues[q].dispatched = self.queues[q].dispatched.saturating_sub(1);
        if self.queues[q].dispatched == 0 && !self.queues[q].busy {
            self.queues[q].budget_timeout = self.jiffy_start(t);
            self.del_in_groups_pending(q);
            self.weights_remove(q);
        }
        self.queues[q].last_end_request = t;
        if self.peak.needs_reset_on_completion(t, self.last_completion) {
            self.update_rate_reset(None, t);
        }
        self.last_completion = t;
        // A shared queue is kept out of waker detection: its completion leaves no candidate
        // waker at all (`bfq_completed_request`, 5.14 on: "reset waker pointer with shared
        // queues"), so the queue completed before it is not taken for the waker either.
        self.last_completed_q = (!self.queues[q].coop).then_some(q);
        let qq = &self.queues[q];
        if qq.softrt_update
            && qq.dispatched == 0
            && qq.is_empty()
            && qq.wr_coeff != weight_raising::WR_COEFF
        {
            self.queues[q].soft_rt_next_start = self.softrt_next_start(q, t);
        }
        if self.in_service == Some(q) {
            if self.must_idle(q) {
                if self.queues[q].dispatched == 0 {
                    self.arm_slice_timer(t);
                }
            } else if self.may_expire_for_budg_timeout(q, t) {
                self.expire(q, false, Expire::BudgetTimeout, t);
            } else if self.queues[q].is_empty()
                && (self.queues[q].dispatched == 0 || !self.better_to_idle(q))
            {
                self.expire(q, false, Expire::NoMoreRequests, t);
            }
        }
    }

    fn exit_ctx(&mut self, ctx: CtxId, t: Tick) {
        let Some(bic) = self.bics.get_mut(&ctx) else {
            return;
        };
        bic.exited = true;
        bic.stable_merge_q = None;
        let sync_q = bic.sync_q.take();
        let async_q = bic.async_q.take();
        if let Some(q) = sync_q {
            self.queues[q].bic = None;
            if self.in_service == Some(q) {
                self.expire_inner(q, Expire::BudgetTimeout, t);
            }
            self.put_cooperator(q);
            self.release_process_ref(q, t);
            if self.queues[q].proc_refs == 0 && self.queues[q].in_burst_list {
                self.burst_list_remove(q);
                self.burst.size = self.burst.size.saturating_sub(1);
            }
        }
        if let Some(q) = async_q {
            self.queues[q].proc_refs = self.queues[q].proc_refs.saturating_sub(1);
        }
    }

    /// Drop one process reference; an empty busy queue nobody will feed leaves the trees, and
    /// stops being its group's stable-merge candidate (`bfq_release_process_ref` calls
    /// `bfq_reassign_last_bfqq(bfqq, NULL)` on every release, even while other processes
    /// still share the queue).
    fn release_process_ref(&mut self, q: usize, t: Tick) {
        if self.queues[q].busy && self.queues[q].is_empty() && self.in_service != Some(q) {
            self.del_busy(q, false, t);
        }
        self.reassign_last_created(q, None);
        self.queues[q].proc_refs = self.queues[q].proc_refs.saturating_sub(1);
    }

    /// Number of queues ever created (for tests and reports).
    pub fn queues_created(&self) -> usize {
        self.queues.len()
    }
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    /// `bfq_bio_merge`: first the early queue merge of `bfq_allow_bio_merge`
    /// ([`Bfq::bio_not_merged`]), then `blk_mq_sched_try_merge` -> `elv_merge`'s candidate:
    /// the one-hit `q->last_merge` if the bio continues it or ends where it starts
    /// (`blk_try_merge`), else the request of the bio's queue that ends where the bio starts
    /// (`elv_rqhash_find`: a back merge), else the one that starts where the bio ends
    /// (`bfq_request_merge`, `bfq_find_rq_fmerge`: `elv_rb_find` on the queue's sort tree; a
    /// front merge), each only if `elv_bio_merge_ok` allows (same operation and I/O priority,
    /// `blk_rq_merge_ok`; no sync bio into an async request, `bfq_allow_bio_merge`). The
    /// candidate found merges if the two fit in `max_sectors` (`ll_back_merge_fn`,
    /// `ll_front_merge_fn`), else nothing merges. A front-merged request keeps its place in
    /// the sort tree (`bfq_request_merged` repositions it only when it now starts before the
    /// one before it) and its queue's next request.
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        self.early_queue_merge(rq, now.0 as Tick);
        let bic = self.bics.get(&rq.ctx)?;
        let q = if rq.is_sync() {
            bic.sync_q?
        } else {
            let slot = group::async_slot(rq.prio);
            self.groups[self.group_of(rq.group).0 as usize].async_q[slot]?
        };
        let qq = &mut self.queues[q];
        let allowed = |target: &Request| {
            target.op == rq.op && target.prio == rq.prio && (!rq.is_sync() || target.is_sync())
        };
        let end = rq.end();
        let last = self
            .last_merge
            .and_then(|id| qq.sort.iter().find(|(k, _)| k.1 == id))
            .filter(|(_, r)| allowed(r))
            .and_then(|(&k, r)| {
                if r.end() == rq.sector {
                    Some((k, false))
                } else if r.sector == end {
                    Some((k, true))
                } else {
                    None
                }
            });
        let back = || {
            qq.sort
                .range(..(rq.sector, 0))
                .next_back()
                .filter(|(_, r)| r.end() == rq.sector && allowed(r))
                .map(|(&k, _)| (k, false))
        };
        let front = || {
            qq.sort
                .range((end, 0)..=(end, u64::MAX))
                .next()
                .filter(|(_, r)| allowed(r))
                .map(|(&k, _)| (k, true))
        };
        let (key, is_front) = last.or_else(back).or_else(front)?;
        if qq.sort[&key].sectors + rq.sectors > max_sectors {
            return None;
        }
        let id = RequestId(key.1);
        // elv_merged_request: the grown request is the one-hit cache now.
        self.last_merge = Some(id.0);
        if !is_front {
            qq.sort.get_mut(&key).expect("found above").sectors += rq.sectors;
            self.front_merged = None;
            return Some(id);
        }
        let mut grown = qq.sort.remove(&key).expect("found above");
        grown.sector = rq.sector;
        grown.sectors += rq.sectors;
        let new_key = (rq.sector, key.1);
        qq.sort.insert(new_key, grown);
        for e in qq.fifo.iter_mut().filter(|e| e.1 == key) {
            e.1 = new_key;
        }
        if qq.next_rq == Some(key) {
            qq.next_rq = Some(new_key);
            // The position tree reads its queues' next requests' sectors as they are
            // (`bfq_rq_pos_tree_lookup`): ours keeps the sector it filed, so re-file.
            if !self.nonrot_with_queueing {
                self.pos_tree_add_move(q, now.0 as Tick);
            }
        }
        self.front_merged = Some(id);
        Some(id)
    }

    fn bio_not_merged(&mut self, bio: &Request, now: Nanos) {
        self.early_queue_merge(bio, now.0 as Tick);
    }

    /// After a bio's back or front merge (`attempt_back_merge`, `attempt_front_merge`).
    /// Deviation: after an insertion merge the kernel's `elv_attempt_insert_merge` goes on
    /// merging the grown request into the one ending where it starts; ours merges no further.
    fn merge_next(
        &mut self,
        into: RequestId,
        grown: GrownBy,
        max_sectors: u32,
        now: Nanos,
    ) -> Option<RequestsMerged> {
        if grown != GrownBy::Bio {
            return None;
        }
        let front = self.front_merged.take() == Some(into);
        let (kept, gone) = self.merge_neighbour(into, front, max_sectors, now.0 as Tick)?;
        Some(RequestsMerged { kept, gone })
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        self.arrive(rq, now.0 as Tick);
    }

    fn allocate(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        Bfq::allocate(self, rq, now.0 as Tick);
        None
    }

    fn insert_allocated(&mut self, id: RequestId, now: Nanos) {
        Bfq::insert_allocated(self, id.0, now.0 as Tick);
    }

    fn allocate_sleeping(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        Bfq::allocate_sleeping(self, rq, now.0 as Tick);
        None
    }

    fn tag_got(&mut self, id: RequestId, now: Nanos) {
        Bfq::tag_got(self, id.0, now.0 as Tick);
    }

    fn allocate_batched(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        Bfq::allocate_at(self, rq, Depth::Full, now.0 as Tick);
        None
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let t = now.0 as Tick;
        self.admit_waiting(t);
        self.check_idle_timer(t);
        if self.tot_busy() == 0 {
            return Dispatch::Empty;
        }
        if self.cfg.strict_guarantees && self.rq_in_driver > 0 {
            return Dispatch::Empty;
        }
        match self.select_queue(t) {
            Some(q) => Dispatch::Request(self.dispatch_from(q, t)),
            None if self.wait_request && self.idle_until > t => Dispatch::Idle {
                until: Nanos(self.idle_until as u64),
            },
            None => Dispatch::Empty,
        }
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.complete_clocked(rq, now, now);
    }

    /// `bfq_finish_requeue_request` takes `bfqd->lock`, then `bfq_completed_request` reads
    /// the clock (`last_completion`, `last_end_request`, the inject limit's sample, the
    /// jiffies of the budget's idle start). `now` is when bfq's log shows the completion
    /// (its first note after it); where the in-service queue is left empty and idles,
    /// `bfq_arm_slice_timer` starts the idle timer between the clock and that note, unlogged,
    /// so the clock is taken at `clock` (the replay's estimate, earlier); elsewhere the note
    /// follows the clock closely and `now` is taken. Deviation: the kernel's lag is not
    /// known, only bounded (docs/bfq.md, "The completion's clock and the idle timer").
    fn complete_clocked(&mut self, rq: &Request, clock: Nanos, now: Nanos) {
        let arms = self.rq_queue.get(&rq.id.0).is_some_and(|&(q, ..)| {
            self.in_service == Some(q)
                && self.queues[q].dispatched == 1
                && self.queues[q].is_empty()
                && self.must_idle(q)
        });
        let t = if arms { clock } else { now };
        self.complete_at(rq.id, rq.ctx, t.0 as Tick);
        self.admit_waiting(now.0 as Tick);
    }

    /// The idle slice timer (`bfq_arm_slice_timer`'s hrtimer, armed with no slack) while the
    /// in-service queue idles for its next request.
    fn next_timer(&self) -> Option<Nanos> {
        self.wait_request.then(|| nanos(self.idle_until))
    }

    /// `bfq_idle_slice_timer` fired: `bfq_idle_slice_timer_body` expires the queue it idled
    /// for (budget timeout, else too idle if still empty) and schedules a dispatch, which the
    /// driver makes at its next call.
    fn fire_timer(&mut self, now: Nanos) {
        self.check_idle_timer(now.0 as Tick);
    }

    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        self.exit_ctx(ctx, now.0 as Tick);
    }

    fn bounds_own_requests(&self) -> bool {
        true
    }
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        Some(!self.waits_for_tag(id.0))
    }
    fn sched_tags_admitted(&self) -> Option<u64> {
        Some(self.tags_admitted())
    }
    fn queued(&self) -> usize {
        self.queued + self.tag_wait.len()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let mut cfg = self.cfg.clone();
        cfg.set("bfq", name, value)?;
        cfg.apply_strict_guarantees();
        let old = std::mem::replace(&mut self.cfg, cfg);
        // blk_mq_update_nr_requests, then bfq_depth_updated; waiting requests are admitted
        // at the next call.
        self.tags.set_depth(self.cfg.nr_requests);
        self.tags.set_map_depth(self.cfg.tag_map_depth);
        self.tags.set_bit_positions(self.cfg.tag_bits);
        self.word_depths = WordDepths::new(self.cfg.nr_requests);
        // bfq_max_budget_store and bfq_timeout_sync_store: a user max budget is taken as
        // is; an autotuned one is recomputed when it is asked for or the timeout changes.
        if self.cfg.max_budget > 0 {
            self.max_budget = self.cfg.max_budget;
        } else if old.max_budget > 0 || self.cfg.timeout != old.timeout {
            self.max_budget = self.calc_max_budget();
        }
        if !self.cfg.low_latency && old.low_latency {
            for q in 0..self.queues.len() {
                if self.queues[q].wr_coeff > 1 {
                    self.end_wr(q, self.last_completion);
                }
            }
        }
        Ok(())
    }

    fn keep_notes(&mut self) {
        self.inj.notes.get_or_insert_with(Vec::new);
    }

    fn take_notes(&mut self) -> Vec<(Nanos, String)> {
        self.inj
            .notes
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
}
