//! io.cost: blk-iocost, the cost-model based proportional I/O controller of cgroup v2, as a
//! sans-IO state machine at the block layer's rq_qos position. Documentation:
//! docs/iocost.md.
//!
//! **Follows** Linux `block/blk-iocost.c` as of torvalds/linux commit `4e6bd13a` (a v6.9+
//! tree: it reads time through `blk_time_get_ns`, added in v6.9; the control algorithm is the
//! one of v5.10's rework, with the debt forgiveness of v5.10 and the margins of v5.11).
//!
//! What it does, in the kernel's terms (each step names the kernel function it follows):
//! - **Cost model** ([`params::Model`], `io.cost.model`): a bio costs a base (sequential, or
//!   random when it starts more than 16 MiB from where the group's previous bio ended) plus a
//!   per-4 KiB-page cost, from the six coefficients through `calc_lcoefs`; built-in sets for
//!   HDD, SSD QD1, SSD and fast SSD ([`params::Autop`], `ioc_autop_idx`, with the step between
//!   the two SSD sets on a vrate held at 500% / 10% for 10 s).
//! - **Virtual time**: the device's vtime runs at `vrate` (100% = one second of device time a
//!   second); a group may issue while its own vtime plus the bio's cost, scaled by the inverse
//!   of its hierarchical share (`hweight_inuse`), does not pass the device's
//!   (`ioc_rqos_throttle`); otherwise the bio waits on the group's wait queue, woken in order
//!   as the budget allows (`iocg_kick_waitq`), the wake-up time computed from the shortage.
//! - **Weights**: `io.weight` per group (1..10000, default 100), flattened into
//!   `hweight_active` and `hweight_inuse` (`propagate_weights`, `current_hweight`), only
//!   leaves with I/O active (`iocg_activate`); a group idle for a period is deactivated
//!   (`ioc_check_iocgs`).
//! - **The period timer** (`ioc_timer_fn`): period from the latency targets (`multi x lat`,
//!   1 ms..1 s, `ioc_refresh_period_us`); busy_level from the requests that missed the
//!   `rpct`/`wpct` latency targets (`ioc_rqos_done`: time from the request's allocation to its
//!   completion less its size cost) and the time requests waited to be issued
//!   (`rq_wait_pct` above 5%); vrate steps by `vrate_adj_pct[busy_level]` within `min`/`max`
//!   (`ioc_adjust_base_vrate`), compensated for vtime thrown away (`ioc_refresh_vrate`).
//! - **Surplus donation** (`hweight_after_donation`, `transfer_surpluses`: the v5.10+ method
//!   that lowers donors' `inuse` so each non-donor keeps its relative share); a donor that
//!   needs its share again takes it back at once (`adjust_inuse_and_calc_cost`).
//! - **Debt and delay**: a bio that must not wait (ours: `meta`, the kernel's
//!   `bio_issue_as_root_blkg`: REQ_META or REQ_SWAP) goes through over budget and is charged as
//!   debt (`iocg_incur_debt`), paid from later budget before any waiter (`iocg_kick_waitq`,
//!   `iocg_pay_debt`); a debt beyond 5 periods of vtime induces a delay of 250 us..250 ms,
//!   halving each second (`iocg_kick_delay`); debts halve while the device is under 50% used
//!   (`ioc_forgive_debts`).
//! - **io.stat**: `cost.vrate` (root), `cost.usage`, `cost.wait`, `cost.indebt`,
//!   `cost.indelay` in microseconds (`ioc_pd_stat`, `iocg_flush_stat`).
//!
//! **Deviations** (each deliberate; docs/iocost.md has the list with reasons):
//! 1. The block layer asks the hooks before it merges or splits a bio, so each bio pays its
//!    own base cost, also one the scheduler then merges (the kernel charges a merged bio only
//!    its pages through `ioc_rqos_merge`); and a bio later split is charged once, whole (the
//!    kernel charges each piece, split before `rq_qos_throttle`).
//! 2. "Allocation" is the moment the bio passes the controller; `rq_wait` is the time from
//!    there to the request's start, when it got its tag: under `none` the host's tag
//!    (`BlockLayer::set_host_tags`; by default the device's slot, as on NVMe), under
//!    mq-deadline, kyber and bfq its scheduler tag (`Scheduler::holds_sched_tag`), as the
//!    kernel counts it; under the elevators from before blk-mq its dispatch, so there it
//!    also counts time queued in the elevator.
//!    A request's latency counts from the earliest bio that passed at or within it.
//! 3. Timers (the period and each group's wake-up) fire when the driver calls
//!    [`IoCost::handle_timeout`] at [`IoCost::poll_timeout`] (the block layer folds them into
//!    its own); anything due is also run, in time order, at the next call of any kind.
//! 4. The delay of a group in debt (`blkcg_set_delay`, which the kernel charges to the issuing
//!    task on its return to user space) holds each of the group's following non-meta bios for
//!    the delay in force when it is submitted ([`Admit::Wait`]).
//! 5. Time is in nanoseconds from the driver; the kernel's microsecond `now` is `now / 1000`
//!    and vtime is an `i64` (no wrap: about two years at a vrate of 100%).
//! 6. The kernel's io.cost is off until `enable=1` is written to `io.cost.qos`; here the
//!    configuration that installs it ([`from_tree`]: io.cost lines or an `io.weight`) enables
//!    it unless it says `enable=0`. Per-device `io.weight` (`MAJ:MIN weight`) is not modelled:
//!    a group has one weight.
//! 7. A bio over budget waits on its group's queue ([`Admit::Hold`]) while its submitter goes
//!    on; the kernel's issuer sleeps in `ioc_rqos_throttle` until `iocg_kick_waitq` commits
//!    its bio, so a job has at most one bio on the queue there. The queue is woken in order
//!    either way.

pub mod params;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use rustc_hash::FxHashMap;

use crate::block::{Admit, BioEnd, QosHook};
use crate::group::GroupTree;
use crate::qos::QosDevice;
use crate::request::{GroupId, Op, Request};
use crate::time::Nanos;

pub use params::{Autop, Lcoefs, Model, ParamError, Qos};
use params::{MILLION, VTIME_PER_NSEC, VTIME_PER_USEC};

/// Hierarchical weights are fractions of this (`WEIGHT_ONE`).
pub const WEIGHT_ONE: u64 = 1 << 16;
/// The default `io.weight` (`CGROUP_WEIGHT_DFL`).
pub const WEIGHT_DEFAULT: u32 = 100;
/// The smallest and largest `io.weight`.
pub const WEIGHT_MIN: u32 = 1;
/// The largest `io.weight`.
pub const WEIGHT_MAX: u32 = 10_000;

const USEC_PER_SEC: u64 = 1_000_000;
/// Period bounds, microseconds.
const MIN_PERIOD: u64 = 1_000;
const MAX_PERIOD: u64 = 1_000_000;
/// A group's vtime is kept this far behind the device's (percent of a period).
const MARGIN_MIN_PCT: i64 = 10;
const MARGIN_LOW_PCT: i64 = 20;
const MARGIN_TARGET_PCT: i64 = 50;
const INUSE_ADJ_STEP_PCT: u64 = 25;
const TIMER_SLACK_PCT: u64 = 1;
const VRATE_CLAMP_ADJ_PCT: u64 = 4;
const AUTOP_CYCLE_NS: u64 = 10_000_000_000;
const RQ_WAIT_BUSY_PCT: u64 = 5;
const UNBUSY_THR_PCT: u64 = 75;
const MIN_DELAY_THR_PCT: i64 = 500;
const MAX_DELAY_THR_PCT: i64 = 25_000;
/// Delay bounds, microseconds.
const MIN_DELAY: u64 = 250;
const MAX_DELAY: u64 = 250_000;
const DFGV_USAGE_PCT: u64 = 50;
/// Debt forgiveness period, microseconds.
const DFGV_PERIOD: u64 = 100_000;
const MAX_LAGGING_PERIODS: i64 = 10;
const SECT_TO_PAGE_SHIFT: u32 = 3;

/// vrate steps (percent) by |busy_level| (`vrate_adj_pct`).
const VRATE_ADJ_PCT: [u64; 53] = [
    0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16,
];

/// How io.cost is set up on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoCostConfig {
    /// The device is rotational (picks the HDD set).
    pub rotational: bool,
    /// The device's queue depth (1 picks the SSD QD1 set).
    pub queue_depth: usize,
    /// `io.cost.model`, or `None` for the built-in set (`ctrl=auto`).
    pub model: Option<Model>,
    /// `io.cost.qos`, or `None` for the built-in set (`ctrl=auto`, enabled).
    pub qos: Option<Qos>,
}

/// A group's weight is out of range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightError {
    /// The group's path.
    pub group: String,
    /// The weight given.
    pub weight: u32,
}

impl fmt::Display for WeightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "group {}: io.weight {} is not from {WEIGHT_MIN} to {WEIGHT_MAX}",
            self.group, self.weight
        )
    }
}

impl std::error::Error for WeightError {}

/// A group's `io.stat` figures of io.cost, microseconds (`iocg_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Device time used (`cost.usage`).
    pub usage_us: u64,
    /// Time with bios waiting for budget (`cost.wait`).
    pub wait_us: u64,
    /// Time in debt (`cost.indebt`).
    pub indebt_us: u64,
    /// Time with a delay in force (`cost.indelay`).
    pub indelay_us: u64,
}

impl Stat {
    fn add_delta(&mut self, now: &Stat, last: &Stat) {
        self.usage_us += now.usage_us - last.usage_us;
        self.wait_us += now.wait_us - last.wait_us;
        self.indebt_us += now.indebt_us - last.indebt_us;
        self.indelay_us += now.indelay_us - last.indelay_us;
    }
}

/// A bio on a group's wait queue (`iocg_wait`).
#[derive(Clone, Copy, Debug)]
struct Waiter {
    /// The key the block layer gave the bio.
    key: u64,
    abs_cost: u64,
    sector: u64,
    op: Op,
}

/// A bio past the controller, until its request completes: when it passed (the kernel's
/// `alloc_time_ns` of the request it starts).
#[derive(Clone, Copy, Debug)]
struct Passed {
    op: Op,
    admitted: u64,
}

/// One group on the device (`ioc_gq`). Weights are in `WEIGHT_ONE` units of `io.weight`.
#[derive(Clone, Debug)]
struct Node {
    path: String,
    level: usize,
    /// Self and ancestors, indexed by level (root first).
    ancestors: Vec<usize>,
    weight: u64,
    active: u64,
    inuse: u64,
    last_inuse: u64,
    saved_margin: i64,
    cursor: u64,
    vtime: i64,
    done_vtime: i64,
    abs_vdebt: u64,
    delay: u64,
    delay_at: u64,
    /// The delay handed to the blkcg (`blkcg_set_delay`), microseconds; 0 when cleared.
    use_delay: u64,
    active_period: u64,
    is_active: bool,
    child_active_sum: u64,
    child_inuse_sum: u64,
    child_adjusted_sum: u64,
    hweight_gen: u64,
    hweight_active: u64,
    hweight_inuse: u64,
    hweight_donating: u64,
    hweight_after_donation: u64,
    waitq: VecDeque<Waiter>,
    /// The wait queue's wake-up (`waitq_timer`), nanoseconds.
    wake_at: Option<u64>,
    activated_at: u64,
    abs_vusage: u64,
    stat: Stat,
    last_stat: Stat,
    last_stat_abs_vusage: u64,
    usage_delta_us: u64,
    wait_since: Option<u64>,
    indebt_since: Option<u64>,
    indelay_since: Option<u64>,
}

/// The state of the period timer (`ioc_running`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Running {
    Idle,
    Running,
}

/// A snapshot of wall and device time (`ioc_now`).
#[derive(Clone, Copy, Debug)]
struct Now {
    ns: u64,
    us: u64,
    vnow: i64,
}

/// io.cost on one device. See the module documentation. Drive it as a [`QosHook`]; call
/// [`handle_timeout`](Self::handle_timeout) at [`poll_timeout`](Self::poll_timeout) where the
/// driver can.
#[derive(Clone, Debug)]
pub struct IoCost {
    enabled: bool,
    rotational: bool,
    queue_depth: usize,
    autop: Option<Autop>,
    user_model: bool,
    user_qos: bool,
    model: Model,
    qos: Qos,
    lcoefs: Lcoefs,
    period_us: u64,
    timer_slack_ns: u64,
    margin_min: i64,
    margin_low: i64,
    margin_target: i64,
    vrate_min: u64,
    vrate_max: u64,
    running: Running,
    vtime_rate: u64,
    vtime_base_rate: u64,
    vtime_err: i64,
    period_at: u64,
    period_at_vtime: i64,
    cur_period: u64,
    busy_level: i32,
    weights_updated: bool,
    hweight_gen: u64,
    dfgv_period_at: u64,
    dfgv_period_rem: u64,
    dfgv_usage_us_sum: u64,
    autop_too_fast_at: u64,
    autop_too_slow_at: u64,
    nr_met: [u64; 2],
    nr_missed: [u64; 2],
    rq_wait_ns: u64,
    nodes: Vec<Node>,
    active: Vec<usize>,
    /// The bios past the controller whose requests have not completed, by (sector, the
    /// order they passed in): one entry each, where a vector by sector allocated one per
    /// bio and [`IoCost::done`] a list of the keys it looked at.
    passed: BTreeMap<(u64, u64), Passed>,
    /// The number the next bio past the controller takes in [`IoCost::passed`]'s keys.
    passed_seq: u64,
    /// The keys [`IoCost::done`] removes, kept between calls for their room.
    done_keys: Vec<(u64, u64)>,
    /// vtime charged to each bio past the controller (`bi_iocost_cost`) and its group, by
    /// key, returned to `done_vtime` at its end.
    charged: FxHashMap<u64, (usize, u64)>,
    /// Woken bios (by key) the block layer has not yet taken back ([`QosHook::poll_release`]).
    released: VecDeque<u64>,
    /// Bios asked to wait for their group's delay (deviation 5), and until when (ns).
    delayed: Vec<(u64, u64)>,
    /// Periods run (for reports).
    periods: u64,
}

fn div_up(a: u128, b: u128) -> u128 {
    a.div_ceil(b.max(1))
}

/// `abs_cost_to_cost`: the lower the share, the dearer each I/O. Rounds up.
fn abs_cost_to_cost(abs_cost: u64, hw_inuse: u64) -> u64 {
    div_up(
        u128::from(abs_cost) * u128::from(WEIGHT_ONE),
        u128::from(hw_inuse),
    ) as u64
}

/// `cost_to_abs_cost`. Rounds up.
fn cost_to_abs_cost(cost: u64, hw_inuse: u64) -> u64 {
    div_up(
        u128::from(cost) * u128::from(hw_inuse),
        u128::from(WEIGHT_ONE),
    ) as u64
}

fn rw(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write => Some(1),
        _ => None,
    }
}

impl IoCost {
    /// io.cost on a device, with every group of `tree` (its `io.weight`, default 100),
    /// started at `now`.
    pub fn new(cfg: IoCostConfig, tree: &GroupTree, now: Nanos) -> Result<IoCost, WeightError> {
        let mut nodes = Vec::with_capacity(tree.len());
        for i in 0..tree.len() {
            let g = tree.get(GroupId(i as u32));
            let w = g.io.weight.unwrap_or(WEIGHT_DEFAULT);
            if !(WEIGHT_MIN..=WEIGHT_MAX).contains(&w) {
                return Err(WeightError {
                    group: g.path.clone(),
                    weight: w,
                });
            }
            let mut ancestors = vec![i];
            let mut p = g.parent;
            while let Some(pid) = p {
                ancestors.push(pid.0 as usize);
                p = tree.get(pid).parent;
            }
            ancestors.reverse();
            nodes.push(Node {
                path: g.path.clone(),
                level: ancestors.len() - 1,
                ancestors,
                weight: u64::from(w) * WEIGHT_ONE,
                active: 0,
                inuse: 0,
                last_inuse: 0,
                saved_margin: 0,
                cursor: 0,
                vtime: 0,
                done_vtime: 0,
                abs_vdebt: 0,
                delay: 0,
                delay_at: 0,
                use_delay: 0,
                active_period: 0,
                is_active: false,
                child_active_sum: 0,
                child_inuse_sum: 0,
                child_adjusted_sum: 0,
                hweight_gen: u64::MAX,
                hweight_active: WEIGHT_ONE,
                hweight_inuse: WEIGHT_ONE,
                hweight_donating: 0,
                hweight_after_donation: 0,
                waitq: VecDeque::new(),
                wake_at: None,
                activated_at: 0,
                abs_vusage: 0,
                stat: Stat::default(),
                last_stat: Stat::default(),
                last_stat_abs_vusage: 0,
                usage_delta_us: 0,
                wait_since: None,
                indebt_since: None,
                indelay_since: None,
            });
        }
        let mut ioc = IoCost {
            enabled: true,
            rotational: cfg.rotational,
            queue_depth: cfg.queue_depth,
            autop: None,
            user_model: cfg.model.is_some(),
            user_qos: cfg.qos.is_some(),
            model: cfg.model.unwrap_or(Autop::SsdDfl.model()),
            qos: cfg.qos.unwrap_or(Autop::SsdDfl.qos()),
            lcoefs: Lcoefs::default(),
            period_us: 0,
            timer_slack_ns: 0,
            margin_min: 0,
            margin_low: 0,
            margin_target: 0,
            vrate_min: 0,
            vrate_max: 0,
            running: Running::Idle,
            vtime_rate: VTIME_PER_USEC,
            vtime_base_rate: VTIME_PER_USEC,
            vtime_err: 0,
            period_at: now.as_ns() / 1000,
            period_at_vtime: 0,
            cur_period: 0,
            busy_level: 0,
            weights_updated: false,
            hweight_gen: 0,
            dfgv_period_at: 0,
            dfgv_period_rem: 0,
            dfgv_usage_us_sum: 0,
            autop_too_fast_at: 0,
            autop_too_slow_at: 0,
            nr_met: [0; 2],
            nr_missed: [0; 2],
            rq_wait_ns: 0,
            nodes,
            active: Vec::new(),
            passed: BTreeMap::new(),
            passed_seq: 0,
            done_keys: Vec::new(),
            charged: FxHashMap::default(),
            released: VecDeque::new(),
            delayed: Vec::new(),
            periods: 0,
        };
        ioc.refresh_params(true, now.as_ns());
        ioc.enabled = ioc.qos.enable;
        Ok(ioc)
    }

    // ---- parameters -------------------------------------------------------------------

    /// The built-in set in use (`autop_idx`).
    pub fn autop(&self) -> Autop {
        self.autop.unwrap_or(Autop::SsdDfl)
    }

    /// The cost model in force.
    pub fn model(&self) -> Model {
        self.model
    }

    /// The QoS parameters in force.
    pub fn qos(&self) -> Qos {
        self.qos
    }

    /// The period, microseconds.
    pub fn period_us(&self) -> u64 {
        self.period_us
    }

    /// `ioc_autop_idx`: the set the device should use now.
    fn autop_idx(&mut self, now_ns: u64) -> Autop {
        if self.rotational {
            return Autop::Hdd;
        }
        if self.queue_depth == 1 {
            return Autop::SsdQd1;
        }
        let idx = match self.autop {
            None | Some(Autop::Hdd) | Some(Autop::SsdQd1) => return Autop::SsdDfl,
            Some(a) => a,
        };
        if self.user_qos || self.user_model {
            return idx;
        }
        let vrate_pct = self.vtime_base_rate * 100 / VTIME_PER_USEC;
        let too_fast = idx.too_fast_vrate_pct().is_some_and(|f| f <= vrate_pct);
        if held_for_a_cycle(&mut self.autop_too_fast_at, too_fast, now_ns) {
            return Autop::SsdFast;
        }
        let too_slow = idx.too_slow_vrate_pct().is_some_and(|s| s >= vrate_pct);
        if held_for_a_cycle(&mut self.autop_too_slow_at, too_slow, now_ns) {
            return Autop::SsdDfl;
        }
        idx
    }

    /// `ioc_refresh_params`: pick the built-in set and derive the period, margins, costs and
    /// vrate bounds. Returns whether anything changed.
    fn refresh_params(&mut self, force: bool, now_ns: u64) -> bool {
        let idx = self.autop_idx(now_ns);
        if Some(idx) == self.autop && !force {
            return false;
        }
        if Some(idx) != self.autop {
            self.vtime_rate = VTIME_PER_USEC;
            self.vtime_base_rate = VTIME_PER_USEC;
        }
        self.autop = Some(idx);
        self.autop_too_fast_at = 0;
        self.autop_too_slow_at = 0;
        // Without the user's QoS the controller is on: `enable=0` is a user's line.
        if !self.user_qos {
            self.qos = idx.qos();
        }
        if !self.user_model {
            self.model = idx.model();
        }
        self.refresh_period_us();
        self.lcoefs = self.model.lcoefs();
        let ppm_to_rate =
            |ppm: u32| div_up(u128::from(ppm) * u128::from(VTIME_PER_USEC), MILLION.into()) as u64;
        self.vrate_min = ppm_to_rate(self.qos.min_ppm);
        self.vrate_max = ppm_to_rate(self.qos.max_ppm);
        true
    }

    /// `ioc_refresh_period_us`: the period is a multiple of the larger latency target, 2x at
    /// the 90th percentile and above up to 10x at the 50th, within 1 ms..1 s.
    fn refresh_period_us(&mut self) {
        let (ppm, lat) = if self.qos.rlat >= self.qos.wlat {
            (self.qos.rppm, self.qos.rlat)
        } else {
            (self.qos.wppm, self.qos.wlat)
        };
        let multi = if ppm > 0 {
            ((MILLION - u64::from(ppm)) / 50_000).max(2)
        } else {
            2
        };
        let period = (multi * u64::from(lat)).clamp(MIN_PERIOD, MAX_PERIOD);
        self.period_us = period;
        self.timer_slack_ns = period * 1000 * TIMER_SLACK_PCT / 100;
        self.refresh_margins();
    }

    /// `ioc_refresh_margins`.
    fn refresh_margins(&mut self) {
        let p = self.period_us as i64;
        let v = self.vtime_base_rate as i64;
        self.margin_min = p * MARGIN_MIN_PCT / 100 * v;
        self.margin_low = p * MARGIN_LOW_PCT / 100 * v;
        self.margin_target = p * MARGIN_TARGET_PCT / 100 * v;
    }

    // ---- time -------------------------------------------------------------------------

    fn now(&self, now_ns: u64) -> Now {
        let us = now_ns / 1000;
        let vnow =
            self.period_at_vtime + (us as i64 - self.period_at as i64) * self.vtime_rate as i64;
        Now {
            ns: now_ns,
            us,
            vnow,
        }
    }

    fn start_period(&mut self, now: &Now) {
        self.period_at = now.us;
        self.period_at_vtime = now.vnow;
    }

    fn period_end_ns(&self) -> Option<u64> {
        (self.running == Running::Running).then(|| (self.period_at + self.period_us) * 1000)
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) at the latest: the end of the
    /// period while groups are active, a group's wake-up, the end of a bio's delay.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let wake = self.nodes.iter().filter_map(|n| n.wake_at).min();
        let delayed = self.delayed.iter().map(|d| d.1).min();
        [self.period_end_ns(), wake, delayed]
            .into_iter()
            .flatten()
            .min()
            .map(Nanos)
    }

    /// Run the timers due by `now` (the period timer, groups' wake-ups), in time order.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.advance(now.as_ns());
    }

    fn advance(&mut self, now_ns: u64) {
        loop {
            let period = self.period_end_ns().filter(|&t| t <= now_ns);
            let wake = self
                .nodes
                .iter()
                .enumerate()
                .filter_map(|(i, n)| n.wake_at.map(|t| (t, i)))
                .filter(|&(t, _)| t <= now_ns)
                .min();
            match (period, wake) {
                (Some(p), w) if w.is_none_or(|(t, _)| p <= t) => self.timer_fn(p),
                (_, Some((t, i))) => {
                    self.nodes[i].wake_at = None;
                    let now = self.now(t);
                    let pay = self.nodes[i].abs_vdebt > 0;
                    self.kick_waitq(i, pay, &now);
                }
                _ => break,
            }
        }
    }

    // ---- weights ----------------------------------------------------------------------

    /// `__propagate_weights`: set `i`'s active and inuse and update the sums up the tree.
    fn propagate_weights(&mut self, i: usize, active: u64, inuse: u64, save: bool, now: &Now) {
        let mut active = active;
        let n = &self.nodes[i];
        let mut inuse = if !n.is_active && n.child_active_sum > 0 {
            div_up(
                u128::from(active) * u128::from(n.child_inuse_sum),
                u128::from(n.child_active_sum),
            ) as u64
        } else {
            inuse.max(1).min(active)
        };
        let n = &mut self.nodes[i];
        n.last_inuse = n.inuse;
        if save {
            n.saved_margin = now.vnow - n.vtime;
        }
        if active == n.active && inuse == n.inuse {
            return;
        }
        let level = n.level;
        let anc = n.ancestors.clone();
        for lvl in (0..level).rev() {
            let (p, c) = (anc[lvl], anc[lvl + 1]);
            let (c_active, c_inuse) = (self.nodes[c].active, self.nodes[c].inuse);
            let parent = &mut self.nodes[p];
            parent.child_active_sum = parent.child_active_sum + active - c_active;
            parent.child_inuse_sum = parent.child_inuse_sum + inuse - c_inuse;
            let (pa, pi) = if parent.child_active_sum > 0 {
                let pa = parent.weight;
                let pi = div_up(
                    u128::from(pa) * u128::from(parent.child_inuse_sum),
                    u128::from(parent.child_active_sum),
                ) as u64;
                (pa, pi)
            } else {
                (0, 0)
            };
            let stop = pa == parent.active && pi == parent.inuse;
            self.nodes[c].active = active;
            self.nodes[c].inuse = inuse;
            if stop {
                break;
            }
            active = pa;
            inuse = pi;
        }
        self.weights_updated = true;
    }

    /// `commit_weights`: publish a new generation of weights.
    fn commit_weights(&mut self) {
        if self.weights_updated {
            self.hweight_gen += 1;
            self.weights_updated = false;
        }
    }

    /// `propagate_weights`: update and publish.
    fn propagate_commit(&mut self, i: usize, active: u64, inuse: u64, save: bool, now: &Now) {
        self.propagate_weights(i, active, inuse, save, now);
        self.commit_weights();
    }

    /// `current_hweight`: (hweight_active, hweight_inuse) of `i`, from the cache while the
    /// weights' generation has not moved.
    fn current_hweight(&mut self, i: usize) -> (u64, u64) {
        if self.nodes[i].hweight_gen == self.hweight_gen {
            return (self.nodes[i].hweight_active, self.nodes[i].hweight_inuse);
        }
        let (mut hwa, mut hwi) = (WEIGHT_ONE, WEIGHT_ONE);
        let level = self.nodes[i].level;
        for lvl in 0..level {
            let p = self.nodes[i].ancestors[lvl];
            let c = self.nodes[i].ancestors[lvl + 1];
            let (asum, isum) = (
                self.nodes[p].child_active_sum,
                self.nodes[p].child_inuse_sum,
            );
            if asum == 0 || isum == 0 {
                continue;
            }
            let (a, u) = (self.nodes[c].active, self.nodes[c].inuse);
            hwa = (u128::from(hwa) * u128::from(a) / u128::from(asum.max(a))) as u64;
            hwi = (u128::from(hwi) * u128::from(u) / u128::from(isum.max(u))) as u64;
        }
        let n = &mut self.nodes[i];
        n.hweight_active = hwa.max(1);
        n.hweight_inuse = hwi.max(1);
        n.hweight_gen = self.hweight_gen;
        (n.hweight_active, n.hweight_inuse)
    }

    /// `current_hweight_max`: the hweight_inuse `i` would get with inuse at its active.
    fn current_hweight_max(&self, i: usize) -> u64 {
        let mut hwm = WEIGHT_ONE;
        let n = &self.nodes[i];
        let mut inuse = n.active;
        for lvl in (0..n.level).rev() {
            let p = &self.nodes[n.ancestors[lvl]];
            let c = &self.nodes[n.ancestors[lvl + 1]];
            let sum = (p.child_inuse_sum + inuse).saturating_sub(c.inuse);
            hwm = (u128::from(hwm) * u128::from(inuse) / u128::from(sum.max(1))) as u64;
            inuse = div_up(
                u128::from(p.active) * u128::from(sum),
                u128::from(p.child_active_sum),
            ) as u64;
        }
        hwm.max(1)
    }

    /// Change `group`'s `io.weight` at `now` (`weight_updated`).
    pub fn set_weight(
        &mut self,
        group: GroupId,
        weight: u32,
        now: Nanos,
    ) -> Result<(), WeightError> {
        let i = group.0 as usize;
        if !(WEIGHT_MIN..=WEIGHT_MAX).contains(&weight) || i >= self.nodes.len() {
            return Err(WeightError {
                group: self.nodes.get(i).map_or("?".into(), |n| n.path.clone()),
                weight,
            });
        }
        self.advance(now.as_ns());
        let now = self.now(now.as_ns());
        let w = u64::from(weight) * WEIGHT_ONE;
        if w != self.nodes[i].weight && self.nodes[i].active > 0 {
            let inuse = self.nodes[i].inuse;
            self.propagate_commit(i, w, inuse, true, &now);
        }
        self.nodes[i].weight = w;
        Ok(())
    }

    // ---- activation, debt, delay, waiting ---------------------------------------------

    /// `iocg_activate`: make `i` active (its vtime at the target margin behind the device's)
    /// and start the period timer if idle. False for a group that cannot be charged (an
    /// inner node, or below an active leaf): its bios go through uncharged.
    fn activate(&mut self, i: usize, now: &Now) -> bool {
        if self.nodes[i].is_active {
            self.nodes[i].active_period = self.cur_period;
            return true;
        }
        if self.nodes[i].child_active_sum > 0 {
            return false;
        }
        self.nodes[i].active_period = self.cur_period;
        let level = self.nodes[i].level;
        for lvl in (1..level).rev() {
            if self.nodes[self.nodes[i].ancestors[lvl]].is_active {
                return false;
            }
        }
        let vtarget = now.vnow - self.margin_target;
        let n = &mut self.nodes[i];
        let d = vtarget - n.vtime;
        n.vtime += d;
        n.done_vtime += d;
        n.hweight_gen = self.hweight_gen.wrapping_sub(1);
        n.is_active = true;
        self.active.push(i);
        let (w, last) = (n.weight, n.last_inuse);
        self.propagate_commit(i, w, if last > 0 { last } else { w }, true, now);
        self.nodes[i].activated_at = now.us;
        if self.running == Running::Idle {
            self.running = Running::Running;
            self.dfgv_period_at = now.us;
            self.dfgv_period_rem = 0;
            self.start_period(now);
        }
        true
    }

    /// `iocg_kick_delay`: the delay in force for `i`'s debt, decayed by half a second; true
    /// if a delay of at least 250 us is set on the group.
    fn kick_delay(&mut self, i: usize, now: &Now) -> bool {
        if now.us < self.nodes[i].delay_at {
            return false;
        }
        let n = &self.nodes[i];
        let shift = (now.us - n.delay_at) / USEC_PER_SEC;
        let mut delay = if shift < 64 { n.delay >> shift } else { 0 };
        let (hwa, _) = self.current_hweight(i);
        let n = &self.nodes[i];
        let vover = n.vtime + abs_cost_to_cost(n.abs_vdebt, hwa) as i64 - now.vnow;
        let vover_pct = (100 * i128::from(vover)
            / (i128::from(self.period_us) * i128::from(self.vtime_base_rate)))
            as i64;
        let new_delay = if vover_pct <= MIN_DELAY_THR_PCT {
            0
        } else if vover_pct >= MAX_DELAY_THR_PCT {
            MAX_DELAY
        } else {
            MIN_DELAY
                + (MAX_DELAY - MIN_DELAY) * (vover_pct - MIN_DELAY_THR_PCT) as u64
                    / (MAX_DELAY_THR_PCT - MIN_DELAY_THR_PCT) as u64
        };
        let n = &mut self.nodes[i];
        if new_delay > delay {
            n.delay = new_delay;
            n.delay_at = now.us;
            delay = new_delay;
        }
        if delay >= MIN_DELAY {
            n.indelay_since.get_or_insert(now.us);
            n.use_delay = delay;
            true
        } else {
            if let Some(s) = n.indelay_since.take() {
                n.stat.indelay_us += now.us - s;
            }
            n.delay = 0;
            n.use_delay = 0;
            false
        }
    }

    /// `iocg_incur_debt`: charge `abs_cost` as debt; a group in debt donates all its share.
    fn incur_debt(&mut self, i: usize, abs_cost: u64, now: &Now) {
        if self.nodes[i].abs_vdebt == 0 && abs_cost > 0 {
            self.nodes[i].indebt_since = Some(now.us);
            let a = self.nodes[i].active;
            self.propagate_commit(i, a, 0, false, now);
        }
        self.nodes[i].abs_vdebt += abs_cost;
        self.nodes[i].abs_vusage += abs_cost;
    }

    /// `iocg_pay_debt`: pay `abs_vpay` of the debt; paid in full, inuse comes back.
    fn pay_debt(&mut self, i: usize, abs_vpay: u64, now: &Now) {
        let n = &mut self.nodes[i];
        n.abs_vdebt -= abs_vpay.min(n.abs_vdebt);
        if n.abs_vdebt == 0 {
            if let Some(s) = n.indebt_since.take() {
                n.stat.indebt_us += now.us - s;
            }
            let (a, last) = (n.active, n.last_inuse);
            self.propagate_commit(i, a, last, false, now);
        }
    }

    /// `iocg_kick_waitq`: pay debt from the budget (if `pay_debt`), then wake the waiting bios
    /// in order while the budget covers them, and set the wake-up for the next.
    fn kick_waitq(&mut self, i: usize, pay_debt: bool, now: &Now) {
        let (hwa, _) = self.current_hweight(i);
        let mut vbudget = now.vnow - self.nodes[i].vtime;
        if pay_debt && self.nodes[i].abs_vdebt > 0 && vbudget > 0 {
            let abs_vbudget = cost_to_abs_cost(vbudget as u64, hwa);
            let abs_vpay = abs_vbudget.min(self.nodes[i].abs_vdebt);
            let vpay = abs_cost_to_cost(abs_vpay, hwa);
            self.nodes[i].vtime += vpay as i64;
            self.nodes[i].done_vtime += vpay as i64;
            self.pay_debt(i, abs_vpay, now);
            vbudget -= vpay as i64;
        }
        if self.nodes[i].abs_vdebt > 0 || self.nodes[i].delay > 0 {
            self.kick_delay(i, now);
        }
        if self.nodes[i].abs_vdebt > 0 {
            let vdebt = abs_cost_to_cost(self.nodes[i].abs_vdebt, hwa) as i64;
            vbudget = (vbudget - vdebt).min(0);
        }
        let (_, hw_inuse) = self.current_hweight(i);
        let n = &mut self.nodes[i];
        while let Some(w) = n.waitq.front().copied() {
            let cost = abs_cost_to_cost(w.abs_cost, hw_inuse);
            vbudget -= cost as i64;
            if vbudget < 0 {
                break;
            }
            n.waitq.pop_front();
            // iocg_commit_bio
            n.vtime += cost as i64;
            n.abs_vusage += w.abs_cost;
            self.charged.insert(w.key, (i, cost));
            self.passed.insert(
                (w.sector, self.passed_seq),
                Passed {
                    op: w.op,
                    admitted: now.ns,
                },
            );
            self.passed_seq += 1;
            self.released.push_back(w.key);
        }
        if n.waitq.is_empty() {
            if let Some(s) = n.wait_since.take() {
                n.stat.wait_us += now.us - s;
            }
            n.wake_at = None;
            return;
        }
        n.wait_since.get_or_insert(now.us);
        if vbudget >= 0 {
            return;
        }
        let vshortage = (-vbudget) as u64;
        let expires =
            now.ns + vshortage.div_ceil(self.vtime_base_rate) * 1000 + self.timer_slack_ns;
        if let Some(old) = n.wake_at {
            if old.abs_diff(expires) <= self.timer_slack_ns {
                return;
            }
        }
        n.wake_at = Some(expires);
    }

    /// `iocg_is_idle`: nothing issued this period and nothing in flight.
    fn is_idle(&self, i: usize) -> bool {
        let n = &self.nodes[i];
        n.active_period != self.cur_period && n.done_vtime == n.vtime
    }

    // ---- the period timer -------------------------------------------------------------

    /// `ioc_lat_stat`: the share of requests that missed their latency target per direction
    /// (ppm) and the time requests waited to be issued as a percentage of the period.
    fn lat_stat(&mut self) -> ([u64; 2], u64) {
        let mut missed = [0u64; 2];
        for (rw, m) in missed.iter_mut().enumerate() {
            let total = self.nr_met[rw] + self.nr_missed[rw];
            if total > 0 {
                *m = (self.nr_missed[rw] * MILLION).div_ceil(total);
            }
        }
        let pct = self.rq_wait_ns * 100 / (self.period_us * 1000);
        self.nr_met = [0; 2];
        self.nr_missed = [0; 2];
        self.rq_wait_ns = 0;
        (missed, pct)
    }

    /// Pre-order list of the inner ancestors of `leaves` (`iocg_build_inner_walk`).
    fn inner_walk(&self, leaves: &[usize]) -> Vec<usize> {
        let mut walk: Vec<usize> = Vec::new();
        let mut seen = vec![false; self.nodes.len()];
        for &l in leaves {
            let n = &self.nodes[l];
            let mut lvl = n.level as isize - 1;
            while lvl >= 0 && !seen[n.ancestors[lvl as usize]] {
                lvl -= 1;
            }
            for k in (lvl + 1) as usize..n.level {
                let a = n.ancestors[k];
                seen[a] = true;
                walk.push(a);
            }
        }
        walk
    }

    /// `iocg_flush_stat_upward`.
    fn flush_stat_upward(&mut self, i: usize) {
        let n = &self.nodes[i];
        if n.level > 0 {
            let p = n.ancestors[n.level - 1];
            let (s, l) = (n.stat, n.last_stat);
            self.nodes[p].stat.add_delta(&s, &l);
        }
        self.nodes[i].last_stat = self.nodes[i].stat;
    }

    /// `iocg_flush_stat`: usage of the active leaves this period, flushed up the tree.
    fn flush_stat(&mut self) {
        let leaves = self.active.clone();
        for &i in &leaves {
            let n = &mut self.nodes[i];
            let delta = n.abs_vusage - n.last_stat_abs_vusage;
            n.last_stat_abs_vusage = n.abs_vusage;
            n.usage_delta_us = delta / self.vtime_base_rate;
            n.stat.usage_us += n.usage_delta_us;
            self.flush_stat_upward(i);
        }
        for i in self.inner_walk(&leaves).into_iter().rev() {
            self.flush_stat_upward(i);
        }
    }

    /// `hweight_after_donation`: the hweight_inuse `i` needs for its usage, keeping the
    /// target margin at the next period's end; throws away budget beyond the target.
    fn hweight_after_donation(
        &mut self,
        i: usize,
        old_hwi: u64,
        hwm: u64,
        usage: u64,
        now: &Now,
    ) -> u64 {
        if self.nodes[i].abs_vdebt > 0 {
            return 1;
        }
        let vtime = self.nodes[i].vtime;
        if !self.nodes[i].waitq.is_empty() || vtime > now.vnow - self.margin_min {
            return hwm;
        }
        let excess = now.vnow - vtime - self.margin_target;
        let mut vtime = vtime;
        if excess > 0 {
            self.nodes[i].vtime += excess;
            self.nodes[i].done_vtime += excess;
            vtime += excess;
            self.vtime_err -=
                (i128::from(excess) * i128::from(old_hwi) / i128::from(WEIGHT_ONE)) as i64;
        }
        let one = WEIGHT_ONE as i128;
        let delta = one * i128::from(now.vnow - vtime)
            / i128::from((now.vnow - self.period_at_vtime).max(1));
        let target = one * i128::from(MARGIN_TARGET_PCT) / 100;
        let new_hwi = one * i128::from(usage) / (one - target + delta).max(1);
        new_hwi.clamp(1, i128::from(hwm)) as u64
    }

    /// Add node `i`'s `hweight_donating` and `hweight_after_donation` to its parent's
    /// (`transfer_surpluses`' propagation up the tree; `i` is not the root).
    fn add_donation_to_parent(&mut self, i: usize) {
        let n = &self.nodes[i];
        let (p, d, a) = (
            n.ancestors[n.level - 1],
            n.hweight_donating,
            n.hweight_after_donation,
        );
        self.nodes[p].hweight_donating += d;
        self.nodes[p].hweight_after_donation += a;
    }

    /// `transfer_surpluses`: lower the donors' inuse so that each ends at its
    /// `hweight_after_donation` while the others keep their relative shares.
    fn transfer_surpluses(&mut self, surpluses: &[usize], now: &Now) {
        let one = WEIGHT_ONE;
        // Keep the sum of after-donation hweights below one.
        let mut after_sum = 0u64;
        let mut over_sum = 0u64;
        let mut over = Vec::new();
        for &i in surpluses {
            let (hwa, _) = self.current_hweight(i);
            let after = self.nodes[i].hweight_after_donation;
            after_sum += after;
            if after > hwa {
                over_sum += after;
                over.push(i);
            }
        }
        let over_target = if after_sum >= one {
            over_sum.saturating_sub(after_sum - (one - 1))
        } else {
            0
        };
        for i in over {
            if over_target > 0 {
                let n = &mut self.nodes[i];
                n.hweight_after_donation =
                    (u128::from(n.hweight_after_donation) * u128::from(over_target)
                        / u128::from(over_sum.max(1))) as u64;
            }
        }
        let walk = self.inner_walk(surpluses);
        let Some(&root) = walk.first() else { return };
        for &i in &walk {
            let n = &mut self.nodes[i];
            n.child_adjusted_sum = 0;
            n.hweight_donating = 0;
            n.hweight_after_donation = 0;
        }
        for &i in surpluses {
            self.add_donation_to_parent(i);
        }
        for &i in walk.iter().rev() {
            if self.nodes[i].level > 0 {
                self.add_donation_to_parent(i);
            }
        }
        for &i in &walk {
            if self.nodes[i].level > 0 {
                let p = self.nodes[i].ancestors[self.nodes[i].level - 1];
                let (phwa, psum) = (self.nodes[p].hweight_active, self.nodes[p].child_active_sum);
                let a = self.nodes[i].active;
                self.nodes[i].hweight_active =
                    div_up(u128::from(phwa) * u128::from(a), u128::from(psum)) as u64;
            }
            let n = &mut self.nodes[i];
            n.hweight_donating = n.hweight_donating.min(n.hweight_active);
            n.hweight_after_donation = n
                .hweight_after_donation
                .min(n.hweight_donating.saturating_sub(1));
        }
        // The global donation rate: gamma = (1 - t'_r) / (1 - t_r).
        let r = &self.nodes[root];
        let gamma = div_up(
            u128::from(one - r.hweight_after_donation.min(one)) * u128::from(one),
            u128::from(one - r.hweight_donating.min(one - 1)),
        ) as u64;
        for &i in &walk {
            if self.nodes[i].level == 0 {
                let n = &mut self.nodes[i];
                n.child_adjusted_sum = div_up(
                    u128::from(n.child_active_sum) * u128::from(one - n.hweight_donating.min(one)),
                    u128::from(one - n.hweight_after_donation.min(one - 1)),
                ) as u64;
                continue;
            }
            let p = self.nodes[i].ancestors[self.nodes[i].level - 1];
            let (p_adj, p_hwi) = (
                self.nodes[p].child_adjusted_sum,
                self.nodes[p].hweight_inuse,
            );
            let n = &mut self.nodes[i];
            n.hweight_inuse = div_up(
                u128::from(gamma) * u128::from(n.hweight_active - n.hweight_donating),
                u128::from(one),
            ) as u64
                + n.hweight_after_donation;
            let inuse = div_up(
                u128::from(p_adj) * u128::from(n.hweight_inuse),
                u128::from(p_hwi),
            ) as u64;
            let st = div_up(
                u128::from(n.child_active_sum) * u128::from(n.hweight_donating),
                u128::from(n.hweight_active),
            ) as u64;
            let sf = n.child_active_sum.saturating_sub(st);
            let wpt = div_up(
                u128::from(n.active) * u128::from(n.hweight_donating),
                u128::from(n.hweight_active),
            ) as u64;
            let wptp = div_up(
                u128::from(inuse) * u128::from(n.hweight_after_donation),
                u128::from(n.hweight_inuse),
            ) as u64;
            n.child_adjusted_sum =
                sf + div_up(u128::from(st) * u128::from(wptp), u128::from(wpt)) as u64;
        }
        for &i in surpluses {
            if self.nodes[i].abs_vdebt > 0 {
                continue;
            }
            let p = self.nodes[i].ancestors[self.nodes[i].level - 1];
            let (p_adj, p_hwi) = (
                self.nodes[p].child_adjusted_sum,
                self.nodes[p].hweight_inuse,
            );
            let inuse = div_up(
                u128::from(p_adj) * u128::from(self.nodes[i].hweight_after_donation),
                u128::from(p_hwi),
            ) as u64;
            let a = self.nodes[i].active;
            self.propagate_weights(i, a, inuse, true, now);
        }
    }

    /// `ioc_forgive_debts`: while the device is used under half over 100 ms, halve debts and
    /// delays once per 100 ms passed.
    fn forgive_debts(&mut self, usage_us_sum: u64, nr_debtors: usize, now: &Now) {
        if nr_debtors == 0 {
            self.dfgv_period_at = now.us;
            self.dfgv_period_rem = 0;
            self.dfgv_usage_us_sum = 0;
            return;
        }
        let usage = if self.busy_level > 0 {
            usage_us_sum.max(self.period_us)
        } else {
            usage_us_sum
        };
        self.dfgv_usage_us_sum += usage;
        if now.us < self.dfgv_period_at + DFGV_PERIOD {
            return;
        }
        let dur = now.us - self.dfgv_period_at;
        let usage_pct = 100 * self.dfgv_usage_us_sum / dur.max(1);
        self.dfgv_period_at = now.us;
        self.dfgv_usage_us_sum = 0;
        if usage_pct > DFGV_USAGE_PCT {
            self.dfgv_period_rem = 0;
            return;
        }
        let cycles = dur + self.dfgv_period_rem;
        self.dfgv_period_rem = cycles % DFGV_PERIOD;
        let shift = (cycles / DFGV_PERIOD).min(63) as u32;
        for i in self.active.clone() {
            let n = &mut self.nodes[i];
            if n.abs_vdebt == 0 && n.delay == 0 {
                continue;
            }
            if n.abs_vdebt > 0 {
                n.abs_vdebt = (n.abs_vdebt >> shift).max(1);
            }
            if n.delay > 0 {
                n.delay = (n.delay >> shift).max(1);
            }
            self.kick_waitq(i, true, now);
        }
    }

    /// `ioc_check_iocgs`: kick groups that wait or owe, deactivate idle ones; the number of
    /// groups in debt or delay.
    fn check_iocgs(&mut self, now: &Now) -> usize {
        let mut nr_debtors = 0;
        for i in self.active.clone() {
            let n = &self.nodes[i];
            let busy = !n.waitq.is_empty() || n.abs_vdebt > 0 || n.delay > 0;
            if !busy && !self.is_idle(i) {
                continue;
            }
            let n = &mut self.nodes[i];
            // Flush the wait, debt and delay time so far into the stat, and go on counting.
            if let Some(s) = n.wait_since {
                n.stat.wait_us += now.us - s;
                n.wait_since = Some(now.us);
            }
            if let Some(s) = n.indebt_since {
                n.stat.indebt_us += now.us - s;
                n.indebt_since = Some(now.us);
            }
            if let Some(s) = n.indelay_since {
                n.stat.indelay_us += now.us - s;
                n.indelay_since = Some(now.us);
            }
            if busy {
                self.kick_waitq(i, true, now);
                if self.nodes[i].abs_vdebt > 0 || self.nodes[i].delay > 0 {
                    nr_debtors += 1;
                }
            } else if self.is_idle(i) {
                let excess = now.vnow - self.nodes[i].vtime - self.margin_target;
                if excess > 0 {
                    let (_, old_hwi) = self.current_hweight(i);
                    self.vtime_err -=
                        (i128::from(excess) * i128::from(old_hwi) / i128::from(WEIGHT_ONE)) as i64;
                }
                self.propagate_weights(i, 0, 0, false, now);
                self.nodes[i].is_active = false;
                self.active.retain(|&a| a != i);
            }
        }
        self.commit_weights();
        nr_debtors
    }

    /// `ioc_adjust_base_vrate`: step vrate by busy_level within `min`/`max` (or towards the
    /// bounds by 4% a period when outside them).
    fn adjust_base_vrate(&mut self, nr_lagging: usize) {
        if self.busy_level == 0 || (self.busy_level < 0 && nr_lagging > 0) {
            return;
        }
        let mut vrate = self.vtime_base_rate;
        if vrate < self.vrate_min {
            vrate = (vrate * (100 + VRATE_CLAMP_ADJ_PCT) / 100).min(self.vrate_min);
        } else if vrate > self.vrate_max {
            vrate = (vrate * (100 - VRATE_CLAMP_ADJ_PCT) / 100).max(self.vrate_max);
        } else {
            let idx = (self.busy_level.unsigned_abs() as usize).min(VRATE_ADJ_PCT.len() - 1);
            let adj = VRATE_ADJ_PCT[idx];
            let pct = if self.busy_level > 0 {
                100 - adj
            } else {
                100 + adj
            };
            vrate = div_up(u128::from(vrate) * u128::from(pct), 100) as u64;
            vrate = vrate.clamp(self.vrate_min, self.vrate_max);
        }
        self.vtime_base_rate = vrate;
        self.refresh_margins();
    }

    /// `ioc_refresh_vrate`: run vrate off its base for the rest of the period to make up for
    /// the vtime thrown away (`vtime_err`).
    fn refresh_vrate(&mut self, now: &Now) {
        let pleft = (self.period_at + self.period_us) as i64 - now.us as i64;
        let base = self.vtime_base_rate as i64;
        let vperiod = self.period_us as i64 * base;
        if pleft > 0 {
            let vcomp = (-(self.vtime_err / pleft)).clamp(-(base >> 1), base);
            self.vtime_err += vcomp * pleft;
            self.vtime_rate = (base + vcomp) as u64;
        }
        self.vtime_err = self.vtime_err.clamp(-vperiod, vperiod);
    }

    /// `ioc_timer_fn`, at `t_ns`.
    fn timer_fn(&mut self, t_ns: u64) {
        self.periods += 1;
        let (missed_ppm, rq_wait_pct) = self.lat_stat();
        let ppm_rthr = MILLION - u64::from(self.qos.rppm);
        let ppm_wthr = MILLION - u64::from(self.qos.wppm);
        let now = self.now(t_ns);
        let period_vtime = now.vnow - self.period_at_vtime;
        if period_vtime <= 0 {
            // Nothing to measure (a zero-length period): start again.
            self.start_period(&now);
            return;
        }
        let nr_debtors = self.check_iocgs(&now);
        self.flush_stat();
        let mut nr_shortages = 0;
        let mut nr_lagging = 0;
        let mut usage_us_sum = 0;
        let mut surpluses = Vec::new();
        for i in self.active.clone() {
            let (vdone, vtime) = (self.nodes[i].done_vtime, self.nodes[i].vtime);
            let (hw_active, hw_inuse) = self.current_hweight(i);
            if (ppm_rthr != MILLION || ppm_wthr != MILLION)
                && self.nodes[i].use_delay == 0
                && vtime > vdone
                && vtime > now.vnow - MAX_LAGGING_PERIODS * period_vtime
                && vdone < now.vnow - period_vtime
            {
                nr_lagging += 1;
            }
            let mut usage_us = self.nodes[i].usage_delta_us;
            usage_us_sum += usage_us;
            let waiting = !self.nodes[i].waitq.is_empty();
            if hw_inuse < hw_active || (!waiting && vtime < now.vnow - self.margin_low) {
                if vdone != vtime {
                    let inflight = cost_to_abs_cost((vtime - vdone).max(0) as u64, hw_inuse)
                        .div_ceil(self.vtime_base_rate);
                    usage_us = usage_us.max(inflight);
                }
                let at = self.nodes[i].activated_at;
                let usage_dur = if at > self.period_at {
                    (now.us - at).max(1)
                } else {
                    (now.us - self.period_at).max(1)
                };
                let usage = (div_up(
                    u128::from(usage_us) * u128::from(WEIGHT_ONE),
                    u128::from(usage_dur),
                ) as u64)
                    .clamp(1, WEIGHT_ONE);
                let (hwa, old_hwi) = self.current_hweight(i);
                let hwm = self.current_hweight_max(i);
                let new_hwi = self.hweight_after_donation(i, old_hwi, hwm, usage, &now);
                if new_hwi < hwm && hwa >= 2 {
                    self.nodes[i].hweight_donating = hwa;
                    self.nodes[i].hweight_after_donation = new_hwi;
                    surpluses.push(i);
                } else if self.nodes[i].abs_vdebt == 0 {
                    let a = self.nodes[i].active;
                    self.propagate_weights(i, a, a, true, &now);
                    nr_shortages += 1;
                }
            } else {
                nr_shortages += 1;
            }
        }
        if !surpluses.is_empty() && nr_shortages > 0 {
            self.transfer_surpluses(&surpluses, &now);
        }
        self.commit_weights();

        let missed = |ppm: u64, thr: u64| ppm > thr;
        if rq_wait_pct > RQ_WAIT_BUSY_PCT
            || missed(missed_ppm[0], ppm_rthr)
            || missed(missed_ppm[1], ppm_wthr)
        {
            self.busy_level = self.busy_level.max(0) + 1;
        } else if rq_wait_pct <= RQ_WAIT_BUSY_PCT * UNBUSY_THR_PCT / 100
            && missed_ppm[0] <= ppm_rthr * UNBUSY_THR_PCT / 100
            && missed_ppm[1] <= ppm_wthr * UNBUSY_THR_PCT / 100
        {
            if nr_shortages > 0 {
                self.busy_level = self.busy_level.min(0);
                if nr_lagging == 0 {
                    self.busy_level -= 1;
                }
            } else {
                self.busy_level = 0;
            }
        } else {
            self.busy_level = 0;
        }
        self.busy_level = self.busy_level.clamp(-1000, 1000);
        self.adjust_base_vrate(nr_lagging);
        self.refresh_params(false, now.ns);
        self.forgive_debts(usage_us_sum, nr_debtors, &now);
        self.cur_period += 1;
        if !self.active.is_empty() {
            self.start_period(&now);
        } else {
            self.busy_level = 0;
            self.vtime_err = 0;
            self.running = Running::Idle;
        }
        self.refresh_vrate(&now);
    }

    // ---- the bio path -----------------------------------------------------------------

    /// `calc_vtime_cost_builtin`: base (sequential or random, from the distance to the
    /// group's cursor) plus pages; 0 for anything but reads and writes.
    fn bio_cost(&self, i: usize, rq: &Request, is_merge: bool) -> u64 {
        let c = &self.lcoefs;
        let (seqio, randio, page) = match rq.op {
            Op::Read => (c.rseqio, c.rrandio, c.rpage),
            Op::Write => (c.wseqio, c.wrandio, c.wpage),
            _ => return 0,
        };
        if rq.sectors == 0 {
            return 0;
        }
        let pages = u64::from(rq.sectors >> SECT_TO_PAGE_SHIFT).max(1);
        let cursor = self.nodes[i].cursor;
        let seek_pages = if cursor > 0 {
            rq.sector.abs_diff(cursor) >> SECT_TO_PAGE_SHIFT
        } else {
            0
        };
        let mut cost = 0;
        if !is_merge {
            cost += if seek_pages > params::RANDIO_PAGES {
                randio
            } else {
                seqio
            };
        }
        cost + pages * page
    }

    /// `adjust_inuse_and_calc_cost`: the bio's vtime cost at the group's hweight_inuse; a
    /// group that donated and now runs short takes its weight back in 25% steps.
    fn adjust_inuse_and_calc_cost(
        &mut self,
        i: usize,
        vtime: i64,
        abs_cost: u64,
        now: &Now,
    ) -> u64 {
        let (_, mut hwi) = self.current_hweight(i);
        let mut cost = abs_cost_to_cost(abs_cost, hwi);
        let margin = now.vnow - vtime - cost as i64;
        let n = &self.nodes[i];
        if n.abs_vdebt > 0 {
            return cost;
        }
        if margin >= n.saved_margin || margin >= self.margin_low || n.inuse == n.active {
            return cost;
        }
        if !n.is_active {
            return cost;
        }
        let step = (n.active * INUSE_ADJ_STEP_PCT).div_ceil(100);
        let mut new_inuse = n.inuse;
        loop {
            new_inuse += step;
            let a = self.nodes[i].active;
            self.propagate_commit(i, a, new_inuse, true, now);
            hwi = self.current_hweight(i).1;
            cost = abs_cost_to_cost(abs_cost, hwi);
            let n = &self.nodes[i];
            if !(vtime + cost as i64 > now.vnow && n.inuse != n.active) {
                break;
            }
        }
        cost
    }

    /// `bio` passes at `now_ns` (the time its request's latency counts from).
    fn record_passed(&mut self, rq: &Request, now_ns: u64) {
        if rw(rq.op).is_none() {
            return;
        }
        self.passed.insert(
            (rq.sector, self.passed_seq),
            Passed {
                op: rq.op,
                admitted: now_ns,
            },
        );
        self.passed_seq += 1;
    }

    /// `ioc_rqos_throttle`: may `bio` go on at `now`?
    pub fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        let now_ns = now.as_ns();
        self.advance(now_ns);
        let i = bio.group.0 as usize;
        if !self.enabled || i >= self.nodes.len() || self.nodes[i].level == 0 {
            self.record_passed(bio, now_ns);
            return Admit::Now;
        }
        let key = bio.id.0;
        // A bio offered again after waiting for its group's delay.
        let mut delayed_done = false;
        if let Some(pos) = self.delayed.iter().position(|d| d.0 == key) {
            if now_ns < self.delayed[pos].1 {
                return Admit::Wait {
                    until: Nanos(self.delayed[pos].1),
                };
            }
            self.delayed.remove(pos);
            delayed_done = true;
        }
        let abs_cost = self.bio_cost(i, bio, false);
        if abs_cost == 0 {
            self.record_passed(bio, now_ns);
            return Admit::Now;
        }
        let mut t = self.now(now_ns);
        if !self.activate(i, &t) {
            self.record_passed(bio, now_ns);
            return Admit::Now;
        }
        // Deviation 5: the delay of a group in debt holds its other bios.
        if !delayed_done && !bio.meta && self.nodes[i].use_delay >= MIN_DELAY {
            self.kick_delay(i, &t);
            let d = self.nodes[i].use_delay;
            if d >= MIN_DELAY {
                let until = now_ns + d * 1000;
                self.delayed.push((key, until));
                return Admit::Wait {
                    until: Nanos(until),
                };
            }
        }
        t = self.now(now_ns);
        self.nodes[i].cursor = bio.end();
        let vtime = self.nodes[i].vtime;
        let cost = self.adjust_inuse_and_calc_cost(i, vtime, abs_cost, &t);
        let n = &self.nodes[i];
        if n.waitq.is_empty() && n.abs_vdebt == 0 && vtime + cost as i64 <= t.vnow {
            self.commit(i, abs_cost, cost);
            self.charged.insert(bio.id.0, (i, cost));
            self.record_passed(bio, now_ns);
            return Admit::Now;
        }
        let use_debt = bio.meta;
        let ioc_locked = use_debt || self.nodes[i].abs_vdebt > 0;
        if use_debt {
            self.incur_debt(i, abs_cost, &t);
            self.kick_delay(i, &t);
            self.record_passed(bio, now_ns);
            return Admit::Now;
        }
        let n = &self.nodes[i];
        if n.abs_vdebt == 0 && n.inuse != n.active {
            let a = n.active;
            self.propagate_commit(i, a, a, true, &t);
        }
        self.nodes[i].waitq.push_back(Waiter {
            key,
            abs_cost,
            sector: bio.sector,
            op: bio.op,
        });
        self.kick_waitq(i, ioc_locked, &t);
        if let Some(pos) = self.released.iter().position(|&k| k == key) {
            // Woken at once (the budget covered it after all): it goes now.
            self.released.remove(pos);
            return Admit::Now;
        }
        Admit::Hold
    }

    /// The key of a woken bio to let go (the kernel's waiter returning from
    /// `ioc_rqos_throttle`).
    pub fn poll_release(&mut self, now: Nanos) -> Option<u64> {
        let _ = now;
        self.released.pop_front()
    }

    /// `iocg_commit_bio`.
    fn commit(&mut self, i: usize, abs_cost: u64, cost: u64) {
        let n = &mut self.nodes[i];
        n.vtime += cost as i64;
        n.abs_vusage += abs_cost;
    }

    /// `ioc_rqos_done_bio`: a bio ended; its charge returns to its group's `done_vtime`.
    pub fn done_bio(&mut self, key: u64) {
        if let Some((i, cost)) = self.charged.remove(&key) {
            self.nodes[i].done_vtime += cost as i64;
        }
    }

    /// `ioc_rqos_done`: `rq`, started (given its tag: `start_time_ns`) at `started`,
    /// completed at `now`: count whether it met its latency target (time since it passed the
    /// controller less its size cost) and how long it waited to start (`rq_wait_ns`).
    pub fn done(&mut self, rq: &Request, started: Nanos, now: Nanos) {
        let now_ns = now.as_ns();
        self.advance(now_ns);
        let end = rq.end().max(rq.sector + 1);
        // The bios of `rq`'s direction that passed at or within it: the earliest's time,
        // and each leaves the map.
        let mut first: Option<u64> = None;
        let mut keys = std::mem::take(&mut self.done_keys);
        for (k, p) in self.passed.range((rq.sector, 0)..(end, 0)) {
            if p.op == rq.op {
                first = Some(first.map_or(p.admitted, |f| f.min(p.admitted)));
                keys.push(*k);
            }
        }
        for k in keys.drain(..) {
            self.passed.remove(&k);
        }
        self.done_keys = keys;
        let (Some(admitted), Some(rw)) = (first, rw(rq.op)) else {
            return;
        };
        if !self.enabled {
            return;
        }
        let on_q = now_ns.saturating_sub(admitted);
        let rq_wait = started.as_ns().max(admitted) - admitted;
        let page = if rw == 0 {
            self.lcoefs.rpage
        } else {
            self.lcoefs.wpage
        };
        let size_ns = u64::from(rq.sectors >> SECT_TO_PAGE_SHIFT) * page / VTIME_PER_NSEC;
        let lat = u64::from(if rw == 0 {
            self.qos.rlat
        } else {
            self.qos.wlat
        });
        if on_q <= size_ns || on_q - size_ns <= lat * 1000 {
            self.nr_met[rw] += 1;
        } else {
            self.nr_missed[rw] += 1;
        }
        self.rq_wait_ns += rq_wait;
    }

    // ---- what it shows ----------------------------------------------------------------

    /// vrate, percent (`cost.vrate`).
    pub fn vrate_pct(&self) -> f64 {
        self.vtime_base_rate as f64 * 100.0 / VTIME_PER_USEC as f64
    }

    /// The saturation history (`busy_level`): positive while missing targets.
    pub fn busy_level(&self) -> i32 {
        self.busy_level
    }

    /// Periods run so far.
    pub fn periods(&self) -> u64 {
        self.periods
    }

    /// `group`'s (hweight_active, hweight_inuse) as fractions of the device.
    pub fn hweights(&mut self, group: GroupId) -> (f64, f64) {
        let (a, i) = self.current_hweight(group.0 as usize);
        (a as f64 / WEIGHT_ONE as f64, i as f64 / WEIGHT_ONE as f64)
    }

    /// Whether `group` is active.
    pub fn is_active(&self, group: GroupId) -> bool {
        self.nodes[group.0 as usize].is_active
    }

    /// `group`'s figures as last flushed by the period timer.
    pub fn stat(&self, group: GroupId) -> Stat {
        self.nodes[group.0 as usize].last_stat
    }

    /// `group`'s io.cost fields of `io.stat`, as the kernel prints them (`ioc_pd_stat` with
    /// `blkcg_debug_stats`): `cost.vrate` on the root only.
    pub fn io_stat(&self, group: GroupId) -> String {
        let n = &self.nodes[group.0 as usize];
        let mut s = String::new();
        if n.level == 0 {
            let vp10k = (self.vtime_base_rate as u128 * 10_000 + VTIME_PER_USEC as u128 / 2)
                / VTIME_PER_USEC as u128;
            s.push_str(&format!("cost.vrate={}.{:02} ", vp10k / 100, vp10k % 100));
        }
        let st = n.last_stat;
        s.push_str(&format!(
            "cost.usage={} cost.wait={} cost.indebt={} cost.indelay={}",
            st.usage_us, st.wait_us, st.indebt_us, st.indelay_us
        ));
        s
    }

    /// `group`'s debt, in microseconds of device time at the current vrate.
    pub fn debt_us(&self, group: GroupId) -> u64 {
        self.nodes[group.0 as usize].abs_vdebt / self.vtime_base_rate.max(1)
    }

    /// `group`'s delay in force (`use_delay`), microseconds.
    pub fn delay_us(&self, group: GroupId) -> u64 {
        self.nodes[group.0 as usize].use_delay
    }
}

impl QosHook for IoCost {
    fn name(&self) -> &'static str {
        "io.cost"
    }
    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        IoCost::throttle(self, bio, now)
    }
    fn poll_release(&mut self, now: Nanos) -> Option<u64> {
        IoCost::poll_release(self, now)
    }
    fn done(&mut self, rq: &Request, started: Nanos, now: Nanos) {
        IoCost::done(self, rq, started, now)
    }
    fn done_bio(&mut self, bio: &BioEnd, now: Nanos) {
        let _ = now;
        IoCost::done_bio(self, bio.key)
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        IoCost::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        IoCost::handle_timeout(self, now)
    }
}

/// The device's `io.cost.model` and `io.cost.qos` lines of `tree`, parsed over the built-in
/// set of a device like `dev` (`None`: not given, or `ctrl=auto`). The error names the file.
#[allow(clippy::type_complexity)]
pub fn lines(
    tree: &GroupTree,
    dev: &QosDevice,
) -> Result<(Option<Model>, Option<Qos>), (&'static str, ParamError)> {
    let auto = Autop::for_device(!dev.non_rotational, dev.queue_depth);
    let lines = tree.io_cost();
    let model = match &lines.model {
        Some(l) => auto
            .model()
            .parse_over(l)
            .map_err(|e| ("io.cost.model", e))?,
        None => None,
    };
    let qos = match &lines.qos {
        Some(l) => {
            let (q, user) = auto.qos().parse_over(l).map_err(|e| ("io.cost.qos", e))?;
            // enable=0 alone keeps the built-in targets but turns the controller off.
            if user {
                Some(q)
            } else {
                (!q.enable).then_some(q)
            }
        }
        None => None,
    };
    Ok((model, qos))
}

/// Check the tree's io.cost lines (any device class: the syntax does not depend on it).
pub fn check_lines(tree: &GroupTree) -> Result<(), (&'static str, ParamError)> {
    lines(tree, &QosDevice::default()).map(|_| ())
}

/// io.cost for `tree` on a device like `dev`, when the device has io.cost lines or a group
/// sets `io.weight` and the lines do not say `enable=0`; `None` otherwise (or when the lines
/// or weights do not pass [`check_lines`] and [`crate::qos::validate`], which callers run
/// first). Deviation: the kernel's io.cost is off until `enable=1` is written to
/// `io.cost.qos`; here the configuration that asks for it enables it.
pub fn from_tree(tree: &GroupTree, dev: &QosDevice) -> Option<IoCost> {
    let wanted = tree.io_cost().model.is_some()
        || tree.io_cost().qos.is_some()
        || tree.ids().any(|id| tree.get(id).io.weight.is_some());
    if !wanted {
        return None;
    }
    let (model, qos) = lines(tree, dev).ok()?;
    if qos.is_some_and(|q| !q.enable) {
        return None;
    }
    let cfg = IoCostConfig {
        rotational: !dev.non_rotational,
        queue_depth: dev.queue_depth,
        model,
        qos,
    };
    IoCost::new(cfg, tree, Nanos::ZERO).ok()
}

/// `ioc_autop_idx`'s clocks: whether `holds` has held for [`AUTOP_CYCLE_NS`] since `since`,
/// the time it was first seen holding (0: not holding; cleared when it stops).
fn held_for_a_cycle(since: &mut u64, holds: bool, now_ns: u64) -> bool {
    if !holds {
        *since = 0;
        return false;
    }
    if *since == 0 {
        *since = now_ns.max(1);
    }
    now_ns - (*since).min(now_ns) >= AUTOP_CYCLE_NS
}
