//! ioband: dm-ioband's `weight` policy (Ryo Tsuruta and Hirokazu Takahashi, VA Linux Systems
//! Japan, 2008-2009; `drivers/md/dm-ioband-ctl.c` and `dm-ioband-policy.c` of the 2009
//! patches, documented in `Documentation/device-mapper/ioband.txt`) as a controller above any
//! scheduler, in two releases (`release`): by default the late-2009 source's device limits
//! (v1.13.0 or v1.14.0): one `io_limit` of `3 * nr_requests / 2` requests (192 for 128) per
//! class, the classes being sync and async (`bio_is_sync`: reads and sync writes against
//! asynchronous writes); with `release = 10` the read/write source's (v1.10.x and before,
//! which v1.11.0 of 19 May 2009 replaced): `nr_requests` per direction (`bio_data_dir`), one
//! held count and `c_limit` per group over both directions, and every share plus one.
//! Which release Goyal's table measured is not established (docs/ioband.md, "Which release
//! Goyal measured"). Documentation: docs/ioband.md.
//!
//! Every group gets tokens in proportion to its weight at each epoch; each request passed down
//! to the inner scheduler costs one token (dm-ioband charges a bio, whatever its size:
//! `prepare_token`; a request here is one bio). A group with no tokens left holds its requests
//! above the inner scheduler. When no held request can go, a new epoch refills everyone,
//! unless the "dominant" group (the busiest group that still has most of its tokens) has more
//! than 1/8 of them left while `io_throttle` or more requests are in flight: then the others
//! wait for it. Unused tokens carry over for up to `carryover` epochs. A group passing down
//! requests yields to others every 20 tokens (`TOKEN_BATCH_UNIT`).
//!
//! # Tunables (dm-ioband table arguments and messages)
//! | name | default | unit | meaning |
//! |---|---|---|---|
//! | `release` | 14 | | dm-ioband release: 14 late 2009 (v1.13.0 / v1.14.0), 10 v1.10 and before; build only |
//! | `io_throttle` | 4 | requests | in-flight count below which a new epoch is never held back |
//! | `io_limit` | 192 | requests | requests passed down per class at most (late 2009: `3 * nr_requests / 2`; release 10: 128 per direction unless given) |
//! | `token` | 2048 | tokens | token pool: `carryover = token / bucket`, bucket = `2 * (2 * io_limit)` |
//! | `weight` | 100 | | weight of a group the group tree gives none |
//! | `worker_context` | 1 | | held requests reach the inner scheduler as the worker thread's |
//! | `worker_ioprio` | 3 | level | best-effort level of the worker thread's requests (2.6.31: kthreads at nice -5) |
//! | `dm_max_sectors` | 0 | sectors | the dm device's `max_sectors`: larger bios arrive as whole-page pieces under it (0: none; 2.6.31: 255) |
//!
//! Groups are the run's group tree, flattened: each group, the root included (dm-ioband's
//! default group), is one ioband group with its own weight.
//!
//! A submitter whose group holds its `c_limit` (`io_limit * weight / total /
//! OVERCOMMIT_RATE`) requests of its class sleeps (`prevent_burst_bios`, `is_queue_full`)
//! until the group holds none of them; then its request goes through `ioband_map` again and,
//! if it passes, reaches the inner scheduler in its own process's context.
//!
//! The dm device's queue limit (`dm_max_sectors`, off by default): in 2.6.31 a dm device's
//! `max_sectors` is 255 sectors whatever the disk's (`dm_calculate_queue_limits` starts from
//! `blk_set_default_limits`, which sets `SAFE_MAX_SECTORS`, and `blk_stack_limits` keeps the
//! smaller of it and the disk's), and a submitter adds whole pages to a bio (`bio_add_page`
//! refuses the page that would pass the limit): a 128 KiB readahead window is a bio of 31
//! pages and one of 1, two bios to charge and count in flight. 2.6.30 stacked on the disk's
//! limits alone and 2.6.32 on `BLK_DEF_MAX_SECTORS` (1024), which keep the window one bio.
//!
//! # Deviations
//! - With `dm_max_sectors`, a window's second bio is its own request below dm-ioband; in the
//!   kernel it back-merges into the first at the disk's queue when both pass at once
//!   (`__make_request`'s `elv_merge`), so the two complete together.
//! - The device-wide block (`device_should_block`: a class of which the device holds
//!   `io_limit` requests) is not modelled; it is what kernel threads and urgent bios wait on.
//! - The weight policy's token rules (`get_token`, `iopriority`, `make_global_epoch`,
//!   `make_epoch`, `is_token_left`, `consume_token`) are the same in the read/write source
//!   and in the late-2009 `dm-ioband-policy.c` (the release with hierarchical groups and
//!   range-bw, read in a 2.6.3x tree that carries it); the releases differ in their classes,
//!   `io_limit` and shares (`release`): late 2009's bucket `io_limit * 2 * DEFAULT_BUCKET`
//!   (`init_token_bucket`) and share `bucket * weight / total`, at least one
//!   (`__set_weight`), v1.10's bucket `(io_limit[READ] + io_limit[WRITE]) * DEFAULT_BUCKET`
//!   and share plus one (`set_weight`). Not modelled from the late file: hierarchical groups
//!   and `is_group_down`'s bonus tokens during suspend. The `token` tunable is the pool
//!   (v1.10's `token` message: carryover = pool / bucket) under both releases; late 2009's
//!   `token` message sets the bucket instead (the defaults agree).
//! - No "urgent" (page reclaim) requests, no suspend/resume, and no `weight-iosize` policy.
//! - The conductor (`ioband_conduct`, run by dm-ioband's workqueue) runs at the instant of
//!   what queues it: a completion of a request passed down while requests are held
//!   (`ioband_end_io`; dm's `clone_endio` calls it before the bio's own end_io wakes the
//!   submitter, so it decides before the woken process's next request arrives), or, when
//!   nothing is in flight, the next `dispatch` (`ioband_map` queues it one jiffy later; the
//!   jiffy is not modelled). Released requests are issued by the worker thread: the
//!   inner scheduler sees them under [`WORKER_CTX`] (so CFQ queues them in the worker's queue,
//!   not their process's) at the worker's priority, best effort level 3: the kioband
//!   thread sets no ioprio, CFQ derives one from its nice level (`task_nice_ioprio`), and
//!   2.6.31's `kthread_create` runs every kernel thread at `KTHREAD_NICE_LEVEL`, -5 (later
//!   kernels run them at nice 0: `worker_ioprio = 4`). The driver sees each request with
//!   its own context and priority again. `worker_context = 0` keeps the process's context.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::group::GroupTree;
use crate::request::{CtxId, IoClass, IoPrio, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{self, Settings, TunableError};

/// `DEFAULT_BUCKET`: epochs' worth of io_limit in one bucket.
const DEFAULT_BUCKET: i64 = 2;
/// `IOBAND_IOPRIO_BASE`.
const IOPRIO_BASE: i64 = 100;
/// `TOKEN_BATCH_UNIT`: tokens a group spends before yielding to others.
const TOKEN_BATCH_UNIT: i64 = 20;
/// `PROCEED_THRESHOLD`.
const PROCEED_THRESHOLD: i64 = 8;
/// `OVERCOMMIT_RATE`: a group's `c_limit` is its share of `io_limit` over this.
const OVERCOMMIT_RATE: i64 = 4;
/// Sectors in a page: the unit a submitter adds to a bio (`bio_add_page`).
const PAGE_SECTORS: u32 = 8;
/// `LOCAL_ACTIVE_RATIO`.
const LOCAL_ACTIVE_RATIO: i64 = 8;
/// `GLOBAL_ACTIVE_RATIO`.
const GLOBAL_ACTIVE_RATIO: i64 = 16;

crate::tunable::tunables! {
    policy: "ioband", finish: Config::raise_io_limit;
    /// ioband's own tunables.
    pub const TUNABLES;
    /// ioband's configuration.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// The dm-ioband release whose classes, device limits and shares apply: 14 for the
        /// late-2009 source (v1.13.0 of 14 September 2009, with hierarchical groups, or
        /// v1.14.0 of 2 October 2009: `bio_is_sync` classes, one `io_limit` of `3 *
        /// nr_requests / 2`), 10 for the read/write source (v1.10.x and before, replaced by
        /// v1.11.0 of 19 May 2009: `bio_data_dir` classes, `nr_requests` per direction, every
        /// share plus one). The releases between were not read and are refused.
        release: u32 = "release" {
            unit: Count,
            default: 14,
            min: 10,
            max: 14,
            set: build_only,
            doc: "dm-ioband release: 14 (late 2009: sync/async classes, one io_limit of 3/2 nr_requests) or 10 (v1.10 and before: read/write, nr_requests per direction, shares plus one)",
        },
        /// `io_throttle`.
        io_throttle: u32 = "io_throttle" {
            unit: Requests,
            default: 4,
            min: 1,
            max: 1 << 15,
            doc: "in-flight requests below which a new token epoch is never held back",
        },
        /// `io_limit`, per class (at least `io_throttle`); late 2009's default `3 *
        /// nr_requests / 2` for the usual `nr_requests` of 128 (`ioband_ctr`), v1.10's
        /// `nr_requests` (128) when not given.
        io_limit: u32 = "io_limit" {
            unit: Requests,
            default: 192,
            min: 1,
            max: 1 << 15,
            doc: "requests passed down to the inner scheduler per class (sync, async) at most",
        },
        /// `token`: the token pool.
        token: u32 = "token" {
            unit: Count,
            default: 2048,
            min: 1,
            max: 1 << 24,
            doc: "token pool: unused tokens carry over for token / (4 * io_limit) epochs",
        },
        /// Released requests are issued by the worker thread's context.
        worker_context: bool = "worker_context" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "held requests reach the inner scheduler as the kioband worker thread's, not their process's",
        },
        /// The best-effort level of the requests the worker thread re-issues.
        worker_ioprio: u32 = "worker_ioprio" {
            unit: Count,
            default: 3,
            min: 0,
            max: 7,
            doc: "best-effort level of the held requests the worker thread re-issues (2.6.31: nice -5 gives level 3)",
        },
        /// `max_sectors` of the dm device's queue: the largest bio a submitter builds for it
        /// (0: none of its own, the device's). 2.6.31 stacks a dm device's limits on
        /// `blk_set_default_limits`'s `SAFE_MAX_SECTORS` (255: `dm_calculate_queue_limits`,
        /// `blk_stack_limits` keeps the smaller), 2.6.30 and 2.6.32 on the disk's own.
        dm_max_sectors: u32 = "dm_max_sectors" {
            unit: Sectors,
            default: 0,
            min: 0,
            max: 65_535,
            doc: "the dm device's max_sectors: larger bios reach dm-ioband as whole-page pieces under it (0: no limit of its own; 2.6.31: 255)",
        },
        /// Default group weight.
        weight: u32 = "weight" {
            unit: Count,
            default: 100,
            min: 1,
            max: 1 << 15,
            set: build_only,
            doc: "weight of a group the group tree gives no weight",
        },
    }
}

/// The late-2009 release (v1.13.0 / v1.14.0): `bio_is_sync` classes, one `io_limit`.
pub const RELEASE_LATE_2009: u32 = 14;
/// The read/write release (v1.10.x and before): `bio_data_dir` classes, `io_limit` per
/// direction, every share plus one.
pub const RELEASE_V1_10: u32 = 10;
/// `nr_requests` of the disk's queue (`BLKDEV_MAX_RQ`), which v1.10's `ioband_ctr` takes as
/// `io_limit` when the table gives 0.
const NR_REQUESTS: u32 = 128;

impl Config {
    /// The release's default `io_limit` (v1.10: `nr_requests` per direction) unless one is
    /// given, a release that was read, and dm-ioband's raise of `io_limit` to `io_throttle`.
    fn raise_io_limit(&mut self, given: &Settings) -> Result<(), TunableError> {
        match self.release {
            RELEASE_V1_10 if given.raw("io_limit").is_none() => self.io_limit = NR_REQUESTS,
            RELEASE_V1_10 | RELEASE_LATE_2009 => {}
            other => {
                return Err(TunableError::Invalid {
                    reason: format!(
                        "ioband release = {other}: only 10 (v1.10 and before, read/write \
                         classes) and 14 (late 2009, sync/async classes) are modelled; the \
                         releases between were not read"
                    ),
                })
            }
        }
        self.io_limit = self.io_limit.max(self.io_throttle);
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
struct Group {
    weight: i64,
    token: i64,
    token_initial: i64,
    my_epoch: u64,
    consumed: i64,
    held: VecDeque<Request>,
    /// Requests popped for a direction with no room, released first (`c_prio_bios`).
    prio: VecDeque<Request>,
    /// `c_blocked` per class (async, sync; release 10: one count, in class 0): requests of
    /// that class in `held` and `prio`.
    held_of: [usize; 2],
    /// `c_limit`: held requests of one class at which the group's submitters sleep.
    limit: usize,
    /// `is_group_blocked`, per class (async, sync; release 10: class 0 only).
    blocked_flag: [bool; 2],
    /// Requests of submitters asleep in `prevent_burst_bios`, per class (release 10: one
    /// wait queue, class 0), in arrival order.
    sleeping: [VecDeque<Request>; 2],
}

/// What releasing a group's requests ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    Ok,
    Block,
    Yield,
}

/// dm-ioband over an inner scheduler.
pub struct IoBand {
    name: &'static str,
    cfg: Config,
    inner: Box<dyn Scheduler>,
    groups: Vec<Group>,
    issued: [u32; 2],
    blocked: usize,
    epoch: u64,
    token_bucket: i64,
    carryover: u64,
    token_left: i64,
    token_extra: i64,
    current: Option<usize>,
    yield_mark: i64,
    dominant: Option<usize>,
    passed: FxHashSet<RequestId>,
    /// Processes of requests re-issued by the worker, by request.
    orig_ctx: FxHashMap<RequestId, (CtxId, IoPrio)>,
}

/// The context of dm-ioband's worker thread (`kioband`), which re-issues held requests.
pub const WORKER_CTX: CtxId = CtxId(u32::MAX);

impl std::fmt::Debug for IoBand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoBand")
            .field("name", &self.name)
            .field("inner", &self.inner.name())
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl IoBand {
    /// dm-ioband with `config` over `inner`, one ioband group per group of `groups`.
    pub fn new(config: Config, groups: &GroupTree, inner: Box<dyn Scheduler>) -> IoBand {
        let mut band = IoBand {
            name: "ioband",
            cfg: config,
            inner,
            groups: Vec::new(),
            issued: [0, 0],
            blocked: 0,
            epoch: 0,
            token_bucket: 0,
            carryover: 0,
            token_left: 0,
            token_extra: 0,
            current: None,
            yield_mark: 0,
            dominant: None,
            passed: Default::default(),
            orig_ctx: FxHashMap::default(),
        };
        band.init_token_bucket();
        band.token_left = band.token_bucket;
        band.groups = groups
            .ids()
            .map(|id| Group {
                weight: i64::from(groups.weight_or(id, band.cfg.weight)),
                ..Group::default()
            })
            .collect();
        band.set_weights();
        band
    }

    /// dm-ioband over `inner` with its tunables from `settings` (every name must be one of
    /// [`TUNABLES`] and in range), one ioband group per group of `groups`.
    pub fn from_settings(
        settings: &Settings,
        groups: &GroupTree,
        inner: Box<dyn Scheduler>,
    ) -> Result<IoBand, TunableError> {
        Ok(IoBand::new(Config::from_settings(settings)?, groups, inner))
    }

    /// The same, reporting `name` as its name (the registry names a stack `ioband+<policy>`).
    pub fn named(mut self, name: &'static str) -> IoBand {
        self.name = name;
        self
    }

    /// The inner scheduler.
    pub fn inner(&self) -> &dyn Scheduler {
        self.inner.as_ref()
    }

    /// Requests of group `g` (by index in the group tree) held above the inner scheduler.
    pub fn held(&self, g: usize) -> usize {
        self.groups
            .get(g)
            .map_or(0, |gr| gr.held.len() + gr.prio.len())
    }

    /// Requests of group `g` whose submitters sleep in `prevent_burst_bios` (not yet held).
    pub fn sleeping(&self, g: usize) -> usize {
        self.groups
            .get(g)
            .map_or(0, |gr| gr.sleeping[0].len() + gr.sleeping[1].len())
    }

    /// Tokens group `g` has in the current epoch (negative: debt).
    pub fn tokens(&self, g: usize) -> i64 {
        self.groups[g].token
    }

    /// The class whose `g_issued` and `io_limit` a request counts against: late 2009's
    /// `bio_is_sync` (1 for reads and sync writes, 0 for asynchronous writes: `BLK_RW_SYNC`,
    /// `BLK_RW_ASYNC`), v1.10's `bio_data_dir` (0 for reads, 1 for writes).
    fn room_class(&self, rq: &Request) -> usize {
        if self.cfg.release == RELEASE_V1_10 {
            usize::from(!rq.op.is_read())
        } else {
            usize::from(rq.is_sync())
        }
    }

    /// The class whose held requests (`c_blocked`), `c_limit` and sleepers a request joins:
    /// late 2009 keeps them per `bio_is_sync` class, v1.10 one of each for the group
    /// (`is_queue_full`: `c_blocked >= c_limit`; one `c_waitq`), here class 0.
    fn block_class(&self, rq: &Request) -> usize {
        if self.cfg.release == RELEASE_V1_10 {
            0
        } else {
            self.room_class(rq)
        }
    }

    /// `init_token_bucket`.
    fn init_token_bucket(&mut self) {
        let lim = i64::from(self.cfg.io_limit);
        self.token_bucket = (2 * lim) * DEFAULT_BUCKET;
        let pool = i64::from(self.cfg.token).max(self.token_bucket);
        self.carryover = (pool / self.token_bucket) as u64;
    }

    /// `set_weight` for every group. Late 2009 (`__set_weight`, flat): tokens in proportion
    /// to weight, at least one, and the group's share of `io_limit` over `OVERCOMMIT_RATE`,
    /// at least one, as `c_limit`. v1.10 (`set_weight`): one added to the share of tokens,
    /// and `c_limit` the share of both directions' `io_limit` over `OVERCOMMIT_RATE`, plus one.
    fn set_weights(&mut self) {
        let total: i64 = self.groups.iter().map(|g| g.weight).sum::<i64>().max(1);
        let io_limit = i64::from(self.cfg.io_limit);
        let v1_10 = self.cfg.release == RELEASE_V1_10;
        for g in &mut self.groups {
            let share = self.token_bucket * g.weight / total;
            let limit = if v1_10 {
                g.token_initial = share + 1;
                (2 * io_limit) * g.weight / total / OVERCOMMIT_RATE + 1
            } else {
                g.token_initial = share.max(1);
                ((io_limit * g.weight / total).max(1) / OVERCOMMIT_RATE).max(1)
            };
            g.token = g.token_initial;
            g.limit = limit as usize;
        }
    }

    /// `c_blocked[d]`: requests of class `d` group `g` holds (counted as they are held and
    /// released, as dm-ioband's `c_blocked` is).
    fn c_blocked(&self, g: usize, d: usize) -> usize {
        let gr = &self.groups[g];
        debug_assert_eq!(
            gr.held_of[d],
            gr.held
                .iter()
                .chain(&gr.prio)
                .filter(|r| self.block_class(r) == d)
                .count()
        );
        gr.held_of[d]
    }

    /// `group_should_block` with the weight policy's `is_queue_full`: whether a submitter of
    /// class `d` in group `g` sleeps now; the group stays blocked until it holds none.
    fn group_should_block(&mut self, g: usize, d: usize) -> bool {
        if self.groups[g].blocked_flag[d] {
            return true;
        }
        if self.c_blocked(g, d) >= self.groups[g].limit {
            self.groups[g].blocked_flag[d] = true;
            return true;
        }
        false
    }

    /// `make_issue_list`'s wake-up: a blocked group that holds no request of a class any
    /// more is unblocked, and its sleeping submitters of that class go through `ioband_map`
    /// again, in their order (each may pass, be held, or sleep again). Once one sleeps
    /// again the group is blocked, so every one after it would too: they stay asleep
    /// without being touched, and a wake-up costs what it lets through, not what sleeps.
    fn wake_sleepers(&mut self, now: Nanos) {
        for g in 0..self.groups.len() {
            for d in 0..2 {
                if !self.groups[g].blocked_flag[d] || self.c_blocked(g, d) > 0 {
                    continue;
                }
                self.groups[g].blocked_flag[d] = false;
                while !self.group_should_block(g, d) {
                    let Some(rq) = self.groups[g].sleeping[d].pop_front() else {
                        break;
                    };
                    self.map(rq, now);
                }
            }
        }
    }

    fn get_token(&self, g: usize) -> i64 {
        let gr = &self.groups[g];
        let allowance = (self.epoch - gr.my_epoch).min(self.carryover) as i64;
        gr.token + gr.token_initial * allowance
    }

    fn iopriority(&self, g: usize) -> i64 {
        self.get_token(g) * IOPRIO_BASE / self.groups[g].token_initial + 1
    }

    fn issued_total(&self) -> u32 {
        self.issued[0] + self.issued[1]
    }

    /// `make_global_epoch`: refill everyone, unless the dominant group still has plenty.
    fn make_global_epoch(&mut self) -> bool {
        if let Some(d) = self.dominant {
            if self.iopriority(d) * PROCEED_THRESHOLD > IOPRIO_BASE
                && self.issued_total() >= self.cfg.io_throttle
            {
                return false;
            }
        }
        self.epoch += 1;
        self.token_extra = self.token_left.max(0);
        self.token_left = self.token_bucket;
        self.dominant = None;
        true
    }

    /// `is_token_left`: the group's priority to submit, refilling it from new epochs; 0 if
    /// it has no tokens.
    fn can_submit(&mut self, g: usize) -> i64 {
        if self.groups[g].token > 0 {
            return self.iopriority(g);
        }
        let allowance = (self.epoch - self.groups[g].my_epoch).min(self.carryover) as i64;
        if allowance == 0 {
            return 0;
        }
        self.groups[g].my_epoch = self.epoch;
        let initial = self.groups[g].token_initial;
        let mut delta = initial * allowance;
        self.token_left -= delta;
        let extra = self.token_extra * initial / (self.token_bucket - self.token_extra / 2).max(1);
        delta += extra;
        self.groups[g].token += delta;
        self.groups[g].consumed = 0;
        if self.current == Some(g) {
            self.yield_mark += delta;
        }
        if self.groups[g].token > 0 {
            self.iopriority(g)
        } else {
            0
        }
    }

    /// `consume_token`: spend one token; `Yield` when the group has had its batch.
    fn consume_token(&mut self, g: usize) -> Release {
        let (consumed, initial) = (self.groups[g].consumed, self.groups[g].token_initial);
        let active = !(consumed * LOCAL_ACTIVE_RATIO < initial
            && consumed * GLOBAL_ACTIVE_RATIO < self.token_bucket);
        if active
            && self
                .dominant
                .is_none_or(|d| self.get_token(g) > self.get_token(d))
        {
            self.dominant = Some(g);
        }
        let gr = &self.groups[g];
        if self.epoch == gr.my_epoch
            && gr.token > 0
            && gr.token - 1 <= 0
            && self.dominant == Some(g)
        {
            self.dominant = None;
        }
        if self.current != Some(g) {
            self.current = Some(g);
            self.yield_mark = self.groups[g].token - TOKEN_BATCH_UNIT;
        }
        self.groups[g].token -= 1;
        self.groups[g].consumed += 1;
        if self.groups[g].token <= self.yield_mark {
            self.current = None;
            return Release::Yield;
        }
        Release::Ok
    }

    /// The priority the worker thread's requests carry: best effort at `worker_ioprio`. The
    /// kioband thread has no ioprio of its own, so CFQ takes one from its nice level
    /// (`cfq_init_prio_data` for `IOPRIO_CLASS_NONE`: `task_nice_ioprio`, `(nice + 20) / 5`),
    /// and 2.6.31's `kthread_create` sets every kernel thread to `KTHREAD_NICE_LEVEL` (-5):
    /// level 3, where a reader at nice 0 has level 4.
    fn worker_prio(&self) -> IoPrio {
        IoPrio {
            class: IoClass::BestEffort,
            level: self.cfg.worker_ioprio as u8,
        }
    }

    fn room(&self, d: usize) -> bool {
        self.issued[d] < self.cfg.io_limit
    }

    fn room_any(&self) -> bool {
        self.room(0) || self.room(1)
    }

    fn group_of(&self, rq: &Request) -> usize {
        let g = rq.group.0 as usize;
        if g < self.groups.len() {
            g
        } else {
            0
        }
    }

    /// `prepare_to_issue` and hand the request down; a `released` (held) request goes down
    /// from the worker thread.
    fn issue(&mut self, g: usize, mut rq: Request, now: Nanos, released: bool) -> Release {
        if released && self.cfg.worker_context {
            self.orig_ctx.insert(rq.id, (rq.ctx, rq.prio));
            rq.ctx = WORKER_CTX;
            rq.prio = self.worker_prio();
        }
        let rc = self.room_class(&rq);
        self.issued[rc] += 1;
        self.passed.insert(rq.id);
        let r = self.consume_token(g);
        self.inner.insert(rq, now);
        r
    }

    /// `choose_best_group`: the group with held requests and the highest priority.
    fn choose_best_group(&mut self) -> Option<usize> {
        let mut best = None;
        let mut highest = 0;
        for g in 0..self.groups.len() {
            let gr = &self.groups[g];
            if (gr.held.is_empty() && gr.prio.is_empty()) || !self.room_any() {
                continue;
            }
            if gr.held.is_empty()
                && !gr
                    .prio
                    .front()
                    .is_some_and(|r| self.room(self.room_class(r)))
            {
                continue;
            }
            let pri = self.can_submit(g);
            if pri > highest {
                highest = pri;
                best = Some(g);
            }
        }
        best
    }

    /// `release_bios`: pass down as many of `g`'s held requests as its tokens and the room
    /// allow.
    fn release(&mut self, g: usize, now: Nanos) -> (Release, bool) {
        let mut issued_any = false;
        while let Some((rc, bc)) = self.groups[g]
            .prio
            .front()
            .map(|r| (self.room_class(r), self.block_class(r)))
        {
            if self.can_submit(g) == 0 {
                return (Release::Block, issued_any);
            }
            if !self.room(rc) {
                break;
            }
            let rq = self.groups[g].prio.pop_front().expect("front exists");
            self.groups[g].held_of[bc] -= 1;
            self.blocked -= 1;
            issued_any = true;
            let r = self.issue(g, rq, now, true);
            if r != Release::Ok {
                return (r, issued_any);
            }
        }
        while !self.groups[g].held.is_empty() {
            if self.can_submit(g) == 0 {
                return (Release::Block, issued_any);
            }
            if !self.room_any() {
                break;
            }
            let rq = self.groups[g].held.pop_front().expect("not empty");
            if !self.room(self.room_class(&rq)) {
                self.groups[g].prio.push_back(rq);
                continue;
            }
            let bc = self.block_class(&rq);
            self.groups[g].held_of[bc] -= 1;
            self.blocked -= 1;
            issued_any = true;
            let r = self.issue(g, rq, now, true);
            if r != Release::Ok {
                return (r, issued_any);
            }
        }
        (Release::Ok, issued_any)
    }

    /// `ioband_map`: a request arrives from its process. Its submitter sleeps if its group is
    /// blocked (`prevent_burst_bios`); else the request passes down if the group holds none of
    /// its class (v1.10: none at all), there is room in its class (v1.10: its direction) and
    /// the group has tokens; else it is held.
    fn map(&mut self, rq: Request, now: Nanos) {
        let g = self.group_of(&rq);
        let (rc, bc) = (self.room_class(&rq), self.block_class(&rq));
        if self.group_should_block(g, bc) {
            self.groups[g].sleeping[bc].push_back(rq);
            return;
        }
        if self.c_blocked(g, bc) == 0 && self.room(rc) && self.can_submit(g) > 0 {
            self.issue(g, rq, now, false);
            return;
        }
        self.blocked += 1;
        self.groups[g].held_of[bc] += 1;
        self.groups[g].held.push_back(rq);
    }

    /// `ioband_conduct`, repeated while it makes progress.
    fn conduct(&mut self, now: Nanos) {
        for _ in 0..100_000 {
            let mut again = false;
            let mut issued_any = false;
            if self.blocked > 0 {
                if let Some(g) = self.choose_best_group() {
                    let (r, any) = self.release(g, now);
                    issued_any = any;
                    again = r == Release::Yield;
                }
            }
            self.wake_sleepers(now);
            if self.blocked > 0
                && self.room(0)
                && self.room(1)
                && !issued_any
                && self.make_global_epoch()
            {
                again = true;
            }
            if !again {
                return;
            }
        }
        debug_assert!(false, "ioband_conduct did not settle");
    }
}

impl Scheduler for IoBand {
    fn name(&self) -> &'static str {
        self.name
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        self.map(rq, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        // `ioband_map` kicks the conductor itself only when nothing is in flight (no
        // completion will come to run it); every other run starts at a completion
        // (`ioband_end_io`, in `complete`).
        if self.blocked > 0 && self.issued_total() == 0 {
            self.conduct(now);
        }
        match self.inner.dispatch(now) {
            Dispatch::Request(mut rq) => {
                if let Some(&(ctx, prio)) = self.orig_ctx.get(&rq.id) {
                    rq.ctx = ctx;
                    rq.prio = prio;
                }
                Dispatch::Request(rq)
            }
            other => other,
        }
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        match self.orig_ctx.remove(&rq.id) {
            Some(_) => {
                let mut down = rq.clone();
                down.ctx = WORKER_CTX;
                down.prio = self.worker_prio();
                self.inner.complete(&down, now);
            }
            None => self.inner.complete(rq, now),
        }
        // `ioband_end_io`: the target's end_io runs before the bio's own bi_end_io (dm's
        // `clone_endio`), so the conductor is queued before the submitter is woken: it
        // decides with this bio gone from `g_issued` and before the woken process's next bio.
        if self.passed.remove(&rq.id) {
            let rc = self.room_class(rq);
            self.issued[rc] -= 1;
        }
        if self.blocked > 0 {
            self.conduct(now);
        }
    }

    /// The policy below keeps its own timers (dm-ioband's are its conductor's runs, at
    /// completions and submissions).
    fn next_timer(&self) -> Option<Nanos> {
        self.inner.next_timer()
    }
    fn fire_timer(&mut self, now: Nanos) {
        self.inner.fire_timer(now);
    }

    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        self.inner.exit(ctx, now);
    }

    /// The dm device's `max_sectors` in whole pages: a submitter builds its bios a page at a
    /// time (`mpage_readpages` through `bio_add_page`, which refuses a page that would take
    /// the bio past `queue_max_sectors` and has the caller submit it and start another), so
    /// under 2.6.31's 255 a 128 KiB readahead window reaches dm-ioband as a bio of 31 pages
    /// and one of 1, each charged a token and counted in flight.
    fn max_request_sectors(&self) -> Option<u32> {
        (self.cfg.dm_max_sectors > 0)
            .then(|| (self.cfg.dm_max_sectors / PAGE_SECTORS).max(1) * PAGE_SECTORS)
    }

    /// dm-ioband holds bios above the queue and passes at most `io_limit` a class down.
    fn bounds_own_requests(&self) -> bool {
        true
    }
    fn queued(&self) -> usize {
        let sleeping: usize = self
            .groups
            .iter()
            .map(|g| g.sleeping[0].len() + g.sleeping[1].len())
            .sum();
        self.inner.queued() + self.blocked + sleeping
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        if tunable::lookup("ioband", TUNABLES, name).is_err() {
            return self.inner.set_tunable(name, value);
        }
        self.cfg.set("ioband", name, value)?;
        match name {
            "io_limit" => {
                self.cfg.io_limit = self.cfg.io_limit.max(self.cfg.io_throttle);
                self.init_token_bucket();
                self.set_weights();
            }
            "token" => {
                self.init_token_bucket();
                self.set_weights();
                self.token_extra = 0;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};
    use crate::noop::Noop;

    fn groups_ab() -> GroupTree {
        let mut t = GroupTree::new();
        t.add("/a", None).unwrap();
        t.add("/b", None).unwrap();
        t
    }

    fn band(settings: &[(&str, i64)]) -> IoBand {
        let mut s = Settings::new();
        for (k, v) in settings {
            s.set(*k, *v);
        }
        IoBand::new(
            Config::from_settings(&s).unwrap(),
            &groups_ab(),
            Box::new(Noop::new()),
        )
    }

    #[test]
    fn tokens_are_shared_in_proportion_to_weight() {
        let mut t = GroupTree::new();
        t.add("/a", Some(100)).unwrap();
        t.add("/b", Some(300)).unwrap();
        let b = IoBand::new(Config::default(), &t, Box::new(Noop::new()));
        // 2009: io_limit 3 * 128 / 2 = 192, bucket = 2 * (192 + 192) = 768 over weights 100
        // (root) + 100 + 300; the pool of 2048 carries over 2048 / 768 = 2 epochs.
        assert_eq!(b.cfg.io_limit, 192);
        assert_eq!(b.tokens(1), 768 * 100 / 500);
        assert_eq!(b.tokens(2), 768 * 300 / 500);
        assert_eq!(b.carryover, 2);
    }

    #[test]
    fn release_10_takes_nr_requests_per_direction_and_adds_one_to_every_share() {
        // dm-ioband v1.10 and before: ioband_ctr takes q->nr_requests (128) as io_limit for
        // each direction (g_io_limit[0], g_io_limit[1]); init_token_bucket's bucket is
        // (g_io_limit[0] + g_io_limit[1]) * DEFAULT_BUCKET = 512, the pool of 2048 carries
        // over 4 epochs; set_weight gives bucket * weight / total + 1 tokens (512 * 100 / 300
        // + 1 = 171) and c_limit = (g_io_limit[0] + g_io_limit[1]) * weight / total /
        // OVERCOMMIT_RATE + 1 (256 * 100 / 300 / 4 + 1 = 22). Late 2009: 192, 768, 2, 256, 16.
        let v1 = band(&[("release", 10)]);
        assert_eq!(v1.cfg.io_limit, 128);
        assert_eq!((v1.token_bucket, v1.carryover), (512, 4));
        assert_eq!((v1.tokens(1), v1.groups[1].limit), (171, 22));
        let late = band(&[]);
        assert_eq!(late.cfg.io_limit, 192);
        assert_eq!((late.token_bucket, late.carryover), (768, 2));
        assert_eq!((late.tokens(1), late.groups[1].limit), (256, 16));
        // A given io_limit stands under either release; a release not read is refused.
        assert_eq!(band(&[("release", 10), ("io_limit", 64)]).cfg.io_limit, 64);
        let mut s = Settings::new();
        s.set("release", 12);
        assert!(matches!(
            Config::from_settings(&s),
            Err(TunableError::Invalid { .. })
        ));
    }

    #[test]
    fn release_10_counts_requests_by_direction_where_late_2009_counts_sync_and_async() {
        // v1.10's ioband_map passes a bio when room_for_bio_rw(dp, bio_data_dir(bio)): a sync
        // write (O_DIRECT) counts against the write direction's io_limit, and a read finds
        // its own direction empty. Late 2009's room_for_bio_sync counts bio_is_sync classes:
        // the sync writes fill the class the read belongs to, and the read is held.
        for (release, read_held) in [(10, 0), (14, 1)] {
            let mut b = band(&[("release", release), ("io_limit", 4), ("io_throttle", 1)]);
            let now = Nanos::ZERO;
            for i in 0..4u64 {
                b.insert(rq(i, 1).sector(i * 8).sync_write().group(1).build(), now);
            }
            assert_eq!(b.held(1), 0, "release {release}: four writes pass");
            b.insert(rq(10, 2).sector(10_000).read().group(2).build(), now);
            assert_eq!(b.held(2), read_held, "release {release}");
        }
    }

    #[test]
    fn release_10_holds_a_groups_reads_behind_its_held_writes_in_one_c_limit() {
        // v1.10 keeps one c_blocked per group over both directions: ioband_map passes a bio
        // only when !gp->c_blocked, and is_queue_full compares that one count with c_limit,
        // so a group holding writes holds its next read too and its c_limit-th held request
        // of either direction puts every submitter of the group to sleep. Late 2009 keeps
        // c_blocked[sync] per class: the group's async writes hold back none of its reads.
        for (release, read_held, c_limit) in [(10, 1, 22), (14, 0, 16)] {
            let mut b = band(&[("release", release)]);
            let now = Nanos::ZERO;
            b.groups[1].token = 1; // /a's last token goes to its first write
            b.groups[1].my_epoch = b.epoch;
            for i in 0..3u64 {
                b.insert(rq(i, 1).sector(i * 8).write().group(1).build(), now);
            }
            assert_eq!(
                b.held(1),
                2,
                "release {release}: the writes after the first are held"
            );
            b.groups[1].token = 10; // tokens again: only c_blocked decides now
            b.insert(rq(10, 2).sector(10_000).read().group(1).build(), now);
            assert_eq!(b.held(1), 2 + read_held, "release {release}");
            assert_eq!(b.groups[1].limit, c_limit);
            // Writes until the group holds c_limit of the read's count; then the next read's
            // submitter sleeps (v1.10: one count), or the read passes (late 2009: its class
            // holds nothing).
            b.groups[1].token = 0;
            for i in 0..(c_limit - 2 - read_held) as u64 {
                b.insert(
                    rq(100 + i, 1)
                        .sector(20_000 + i * 8)
                        .write()
                        .group(1)
                        .build(),
                    now,
                );
            }
            assert_eq!(
                (b.held(1), b.sleeping(1)),
                (c_limit, 0),
                "release {release}"
            );
            b.groups[1].token = 10;
            b.insert(rq(200, 3).sector(40_000).read().group(1).build(), now);
            assert_eq!(
                b.sleeping(1),
                usize::from(release == 10),
                "release {release}"
            );
        }
    }

    #[test]
    fn group_out_of_tokens_waits_while_the_dominant_group_keeps_its_tokens() {
        // io_limit 8, token 32: a bucket of 32 tokens over weights 100 (/), 100 (/a) and
        // 300 (/b): 6 for /a, 19 for /b.
        let mut t = GroupTree::new();
        t.add("/a", Some(100)).unwrap();
        t.add("/b", Some(300)).unwrap();
        let mut s = Settings::new();
        s.set("io_limit", 8).set("token", 32);
        let mut b = IoBand::new(
            Config::from_settings(&s).unwrap(),
            &t,
            Box::new(Noop::new()),
        );
        let mut now = Nanos::ZERO;
        // /b passes 4 requests down and becomes the dominant group with 15 tokens left.
        for i in 0..4u64 {
            b.insert(
                rq(1000 + i, 2).sector(900_000 + i * 8).group(2).build(),
                now,
            );
        }
        assert_eq!(b.dominant, Some(2));
        // /a wants 20: 4 fit under the read limit now.
        for i in 0..20u64 {
            b.insert(rq(i, 1).sector(i * 8).group(1).build(), now);
        }
        // /a's c_limit is 8 * 100 / 500 / OVERCOMMIT_RATE, at least 1: one held request, the
        // other submitters asleep (prevent_burst_bios).
        assert_eq!((b.held(1), b.sleeping(1)), (1, 15));
        let mut refill_seen = false;
        let passed = |b: &IoBand| 20 - b.held(1) - b.sleeping(1);
        loop {
            // The conductor runs from a completion (ioband_end_io), or from dispatch when
            // nothing is in flight; check what it decided either way.
            let (in_flight, before) = (b.issued_total(), passed(&b));
            let Dispatch::Request(r) = b.dispatch(now) else {
                break;
            };
            let mut steps = vec![(in_flight, before, passed(&b))];
            now += Nanos::from_ms(1);
            let (in_flight, before) = (b.issued_total() - 1, passed(&b));
            b.complete(&r, now);
            steps.push((in_flight, before, passed(&b)));
            for (in_flight, before, after) in steps {
                assert!(
                    after <= 6 || b.epoch >= 1,
                    "/a spent more than its 6 tokens"
                );
                if before <= 6 && after > 6 {
                    // Out of tokens, /a waited for a new epoch, which /b (dominant, most
                    // of its tokens left) allowed only once fewer than io_throttle were in
                    // flight.
                    assert!(in_flight < 4, "refilled with {in_flight} in flight");
                    refill_seen = true;
                }
            }
        }
        assert!(refill_seen);
        assert_eq!(b.queued(), 0, "every request got through in the end");
    }

    #[test]
    fn new_epoch_waits_for_a_dominant_group_with_tokens_and_enough_in_flight() {
        let mut b = band(&[("io_limit", 16), ("token", 64)]);
        let now = Nanos::ZERO;
        // /b becomes dominant: it spends 4 of its 21 tokens, 4 requests in flight.
        for i in 0..4u64 {
            b.insert(
                rq(1000 + i, 2).sector(900_000 + i * 8).group(2).build(),
                now,
            );
        }
        assert_eq!(b.dominant, Some(2));
        // /a spends all of its 21 tokens (its 22nd request is held).
        b.groups[1].token = 1;
        b.insert(rq(1, 1).group(1).build(), now);
        b.insert(rq(2, 1).sector(8).group(1).build(), now);
        assert_eq!(b.held(1), 1);
        // No epoch: /b has most of its tokens and 5 requests are in flight.
        assert!(!b.make_global_epoch());
        // Once fewer than io_throttle requests are in flight, the epoch comes.
        b.issued = [3, 0];
        assert!(b.make_global_epoch());
        b.conduct(now);
        assert_eq!(b.held(1), 0);
    }

    #[test]
    fn a_group_that_has_spent_under_an_eighth_of_its_tokens_never_holds_the_epoch_back() {
        // consume_token (2009 and v1.x): a group becomes the dominant group only once it is
        // "really active", having spent at least token_initial / LOCAL_ACTIVE_RATIO or
        // bucket / GLOBAL_ACTIVE_RATIO tokens since its last refill; make_global_epoch's veto
        // reads only the dominant group. Bucket 64 over three groups of weight 100: 21 tokens
        // each, so a group is really active from its 4th request (3 * 8 >= 21).
        for (b_requests, vetoed) in [(3u64, false), (4, true)] {
            let mut b = band(&[("io_limit", 16), ("token", 64)]);
            let now = Nanos::ZERO;
            for i in 0..b_requests {
                b.insert(
                    rq(1000 + i, 2).sector(900_000 + i * 8).group(2).build(),
                    now,
                );
            }
            assert_eq!(b.dominant.is_some(), vetoed, "{b_requests} requests of /b");
            // /a spends its last token; its next request is held, with io_throttle (4) or
            // more requests in flight.
            b.groups[1].token = 1;
            b.insert(rq(1, 1).group(1).build(), now);
            b.insert(rq(2, 1).sector(8).group(1).build(), now);
            assert_eq!(b.held(1), 1);
            assert!(b.issued_total() >= 4);
            assert_eq!(
                b.make_global_epoch(),
                !vetoed,
                "{b_requests} requests of /b"
            );
        }
    }

    #[test]
    fn under_2_6_31s_dm_max_sectors_a_readahead_window_is_two_bios_each_charged_and_in_flight() {
        // 2.6.31: a dm device's max_sectors is SAFE_MAX_SECTORS, 255 (dm_calculate_queue_limits
        // starts from blk_set_default_limits, and blk_stack_limits keeps the smaller of that
        // and the disk's). mpage_readpages adds a window's pages to its bio with bio_add_page,
        // which refuses the page that takes the bio past queue_max_sectors: the 32nd page of a
        // 128 KiB window (256 sectors). The window reaches ioband_map as a bio of 31 pages and
        // one of 1; prepare_token charges each and g_issued counts each until its end_io, so a
        // reader's two windows are io_throttle (4) bios in flight. Without the limit (0, as
        // 2.6.30's and 2.6.32's stacking give for this disk) a window is one bio.
        use crate::block::{Bio, BlockLayer, Limits};
        use crate::request::{GroupId, Op};
        for (max, pieces, in_flight) in [(255, vec![248, 8, 248, 8], 4), (0, vec![256, 256], 2)] {
            let b = band(&[("dm_max_sectors", max)]);
            let initial = b.tokens(2);
            let mut blk = BlockLayer::new(b, Limits::depth(4));
            for w in 0..2u64 {
                let window = Bio::new(CtxId(1), Op::Read, w * 256, 256).group(GroupId(2));
                blk.handle_submit(window, w, Nanos::ZERO);
            }
            let mut got = Vec::new();
            while let Some(r) = blk.poll_dispatch(Nanos::ZERO) {
                got.push(r.sectors);
            }
            assert_eq!(got, pieces, "dm_max_sectors {max}");
            let band = blk.scheduler();
            assert_eq!(
                initial - band.tokens(2),
                pieces.len() as i64,
                "dm_max_sectors {max}"
            );
            assert_eq!(band.issued_total(), in_flight, "dm_max_sectors {max}");
        }
    }

    #[test]
    fn a_lone_readers_two_readahead_windows_hold_the_epoch_only_while_the_drained_groups_own_bios_drain(
    ) {
        // Goyal's n = 1 (docs/ioband.md): B's one buffered reader has two 128 KiB readahead
        // windows in flight (ondemand_readahead, do_generic_file_read). make_global_epoch
        // holds the drained group /a back only while the dominant group has over 1/8 of its
        // tokens AND nr_issued >= io_throttle (4): B's two bios alone never reach it, so /a
        // waits only until its own bios in flight fall under 4 - 2.
        for (a_in_flight, vetoed) in [(3u64, true), (2, true), (1, false), (0, false)] {
            let mut b = band(&[("io_limit", 16), ("token", 64)]);
            let mut now = Nanos::ZERO;
            // /b becomes the dominant group (really active from its 4th bio: consume_token),
            // then two of its four complete: the reader's two windows stay in flight.
            let bs: Vec<Request> = (0..4u64)
                .map(|i| rq(1000 + i, 2).sector(900_000 + i * 256).group(2).build())
                .collect();
            for r in &bs {
                b.insert(r.clone(), now);
            }
            assert_eq!(b.dominant, Some(2));
            for r in &bs[..2] {
                let Dispatch::Request(d) = b.dispatch(now) else {
                    panic!("nothing to dispatch")
                };
                assert_eq!(d.id, r.id);
                now += Nanos::from_ms(1);
                b.complete(&d, now);
            }
            // /a passes `a_in_flight` bios down with its last tokens; its next is held.
            b.groups[1].token = a_in_flight as i64;
            for i in 0..=a_in_flight {
                b.insert(rq(i, 1).sector(i * 256).group(1).build(), now);
            }
            assert_eq!(b.held(1), 1);
            assert_eq!(b.issued_total() as u64, 2 + a_in_flight);
            assert_eq!(
                b.make_global_epoch(),
                !vetoed,
                "{a_in_flight} of /a in flight"
            );
        }
    }

    #[test]
    fn a_completion_runs_the_conductor_before_the_woken_reader_issues_again() {
        // Goyal's n = 2: B's two buffered readers keep two readahead windows each in
        // flight, exactly io_throttle (4). ioband_end_io drops g_issued and queues
        // ioband_conduct before the bio's own end_io wakes the reader (dm's clone_endio
        // calls the target's end_io first), so make_global_epoch sees 3 < io_throttle and
        // refills the drained group A then, even though the woken reader's next window
        // brings B back to 4 at once.
        let mut b = band(&[("io_limit", 16), ("token", 64)]);
        let mut now = Nanos::ZERO;
        for i in 0..4u64 {
            b.insert(
                rq(1000 + i, 2 + (i as u32 % 2))
                    .sector(900_000 + i * 256)
                    .group(2)
                    .build(),
                now,
            );
        }
        assert_eq!(b.dominant, Some(2));
        // A is out of tokens in this epoch: its bio is held.
        b.groups[1].token = 0;
        b.groups[1].my_epoch = b.epoch;
        b.insert(rq(1, 1).sector(0).group(1).build(), now);
        assert_eq!((b.held(1), b.issued_total()), (1, 4));
        // Nothing is decided while 4 are in flight: dispatching does not start an epoch.
        let Dispatch::Request(first) = b.dispatch(now) else {
            panic!("B's first window is queued below")
        };
        assert_eq!((b.epoch, b.held(1)), (0, 1));
        // Its completion: the conductor runs at once, with 3 in flight.
        now += Nanos::from_ms(5);
        b.complete(&first, now);
        assert_eq!(b.epoch, 1, "make_global_epoch ran from the completion");
        assert_eq!(b.held(1), 0, "A's bio went down with its new tokens");
        // The woken reader's next window then passes down on B's own tokens.
        b.insert(rq(1004, 2).sector(900_000 + 4 * 256).group(2).build(), now);
        assert_eq!((b.held(2), b.issued_total()), (0, 5));
    }

    #[test]
    fn the_first_refill_hands_the_drained_group_the_tokens_nobody_claimed_in_the_first_epoch() {
        // Why an epoch outlasts most of Goyal's 30 s on our disk (docs/ioband.md): at the
        // 2009 defaults the bucket is 768 (io_limit 192: init_token_bucket), 256 for each
        // of the default group, /a and /b (__set_weight), handed out without touching
        // g_token_left. The first make_global_epoch turns all 768 of g_token_left into
        // g_token_extra, and is_token_left refills the drained /a with its 256 plus
        // extra * 256 / (768 - 768 / 2) = 512: 768 bios before /a runs dry again.
        let mut b = band(&[]);
        assert_eq!((b.token_bucket, b.groups[1].token_initial), (768, 256));
        b.groups[1].token = 0;
        b.groups[1].my_epoch = b.epoch;
        assert_eq!(b.can_submit(1), 0, "no tokens and no new epoch yet");
        assert!(b.make_global_epoch());
        assert_eq!(b.token_extra, 768);
        assert!(b.can_submit(1) > 0);
        assert_eq!(b.tokens(1), 256 + 512);
    }

    #[test]
    fn a_group_holding_its_c_limit_puts_its_submitters_to_sleep_until_it_holds_none() {
        // 2009 dm-ioband: __set_weight gives each group c_limit = io_limit * weight / total
        // / OVERCOMMIT_RATE (192 * 100 / 300 / 4 = 16 here); prevent_burst_bios puts a
        // submitter to sleep once its group holds c_limit requests of its class
        // (is_queue_full, group_should_block), and the group stays blocked until
        // make_issue_list has released every one of them. The woken submitters then go
        // through ioband_map again and pass down in their own context.
        let mut b = band(&[]);
        assert_eq!(b.groups[1].limit, 16);
        let now = Nanos::ZERO;
        b.groups[1].token = 0; // /a is out of tokens: everything it sends is held.
        b.groups[1].my_epoch = b.epoch;
        for i in 0..20u64 {
            b.insert(rq(i, 100 + i as u32).sector(i * 256).group(1).build(), now);
        }
        assert_eq!((b.held(1), b.sleeping(1)), (16, 4));
        // A new epoch: the conductor releases the 16 through the worker; the group holds
        // none, wakes its 4 sleepers, and they pass down as their own processes'.
        b.epoch += 1;
        b.conduct(now);
        assert_eq!((b.held(1), b.sleeping(1)), (0, 0));
        assert_eq!(
            b.orig_ctx.len(),
            16,
            "the 16 held went down from the worker"
        );
        assert_eq!(b.inner.queued(), 20);
    }

    /// An inner scheduler that records the context and priority of what it is given.
    #[derive(Default)]
    struct Seen {
        queue: VecDeque<Request>,
        inserted: std::sync::Arc<std::sync::Mutex<Vec<(CtxId, IoPrio)>>>,
    }

    impl Scheduler for Seen {
        fn name(&self) -> &'static str {
            "seen"
        }
        fn insert(&mut self, rq: Request, _now: Nanos) {
            self.inserted.lock().unwrap().push((rq.ctx, rq.prio));
            self.queue.push_back(rq);
        }
        fn dispatch(&mut self, _now: Nanos) -> Dispatch {
            self.queue
                .pop_front()
                .map_or(Dispatch::Empty, Dispatch::Request)
        }
        fn complete(&mut self, _rq: &Request, _now: Nanos) {}
        fn queued(&self) -> usize {
            self.queue.len()
        }
        fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
            Err(TunableError::Unknown {
                scheduler: "seen".to_string(),
                name: name.to_string(),
            })
        }
    }

    #[test]
    fn held_requests_reach_the_inner_scheduler_at_the_kernel_threads_priority() {
        // ioband_conduct re-issues held bios from the kioband workqueue thread
        // (generic_make_request in the worker), so CFQ files them under the worker's io
        // context. The worker sets no ioprio, and CFQ's cfq_init_prio_data takes an unset
        // one from the nice level (task_nice_ioprio: (nice + 20) / 5); 2.6.31's
        // kthread_create gives every kernel thread KTHREAD_NICE_LEVEL, -5: best effort 3,
        // one level above a reader at nice 0 (a 120 ms sync slice instead of 100 ms).
        let mut s = Settings::new();
        s.set("worker_ioprio", 3);
        let seen = Seen::default();
        let inserted = seen.inserted.clone();
        let mut b = IoBand::new(
            Config::from_settings(&s).unwrap(),
            &groups_ab(),
            Box::new(seen),
        );
        let now = Nanos::ZERO;
        b.insert(rq(1, 7).group(1).build(), now); // passes down at once, as process 7's
        b.groups[1].token = 0;
        b.groups[1].my_epoch = b.epoch;
        b.insert(rq(2, 8).sector(256).group(1).build(), now); // held: /a has no tokens
        assert_eq!(b.held(1), 1);
        b.epoch += 1;
        b.conduct(now);
        assert_eq!(b.held(1), 0);
        let best_effort = |level| IoPrio {
            class: IoClass::BestEffort,
            level,
        };
        assert_eq!(
            *inserted.lock().unwrap(),
            vec![(CtxId(7), best_effort(4)), (WORKER_CTX, best_effort(3))]
        );
        // The driver sees the released request as its process's again.
        let _ = b.dispatch(now);
        match b.dispatch(now) {
            Dispatch::Request(r) => assert_eq!((r.ctx, r.prio), (CtxId(8), best_effort(4))),
            other => panic!("expected the released request, got {other:?}"),
        }
    }

    #[test]
    fn held_requests_are_dispatched_exactly_once() {
        let mut h = Harness::new(band(&[("io_limit", 4), ("token", 16)]), 2, |_| {
            Nanos::from_ms(1)
        });
        for i in 0..60u64 {
            let g = (i % 3) as u32;
            h.submit(
                rq(i, g + 1)
                    .sector(i * 8)
                    .group(g)
                    .at(Nanos::from_us(i * 300)),
            );
        }
        h.run();
    }

    #[test]
    fn from_settings_takes_only_iobands_tunables_and_raises_io_limit_to_io_throttle() {
        let mut s = Settings::new();
        s.set("io_throttle", 200);
        let b = IoBand::from_settings(&s, &groups_ab(), Box::new(Noop::new())).unwrap();
        assert_eq!((b.cfg.io_throttle, b.cfg.io_limit), (200, 200));
        assert_eq!(b.named("ioband+noop").name(), "ioband+noop");
        s.set("slice_idle", 0);
        assert!(IoBand::from_settings(&s, &groups_ab(), Box::new(Noop::new())).is_err());
    }
}
