//! Weight raising: interactive queues (busy again after a long idle period) and soft
//! real-time queues (isochronous, low bandwidth) get their weight multiplied for a while;
//! queues created in a large burst (many at once: a service starting, `git grep`) get none.

use super::{Bfq, Tick, MS, PAST};

/// Raising coefficient for interactive queues.
pub(super) const WR_COEFF: u64 = 30;
/// Extra factor for soft real-time queues.
const SOFTRT_WEIGHT_FACTOR: u64 = 100;
/// Raising duration of soft real-time queues.
pub(super) const RT_MAX_TIME: Tick = 300 * MS;
/// Idle time needed before a queue is deemed interactive again.
pub(super) const MIN_IDLE_TIME: Tick = 2000 * MS;
/// Async queues are raised after this long without requests.
pub(super) const MIN_INTER_ARR_ASYNC: Tick = 500 * MS;
/// Largest rate of a soft real-time queue, sectors/s.
const MAX_SOFTRT_RATE: u64 = 7000;
/// Only queues at this weight (ioprio level 4, the default, in any class) are raised: a
/// queue the user gave another priority keeps the weight asked for.
pub(super) const DEFAULT_WEIGHT: u64 = 40;
/// Interactive raising ends after this much raised service, sectors.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// Queues created this close to each other form a burst.
const BURST_INTERVAL: Tick = 180 * MS;
/// A burst this large is "large".
const LARGE_BURST_THRESH: u32 = 8;

/// The burst of queue creations being tracked.
#[derive(Clone, Debug, Default)]
pub(super) struct Burst {
    /// Queues in the current burst list.
    pub list: Vec<usize>,
    /// Size of the current burst.
    pub size: u32,
    /// The current burst is large.
    pub large: bool,
    /// Last time a queue joined the burst.
    pub last_ins: Tick,
    /// Group of the current burst.
    pub group: u32,
}

impl Bfq {
    /// Duration of interactive raising: 7 s at the reference rate, scaled by the measured peak
    /// rate, within 3..25 s.
    pub(super) fn wr_duration(&self) -> Tick {
        let ms = self.peak.rate_dur_prod / self.peak.rate.max(1);
        (ms.clamp(3_000, 25_000) as Tick) * MS
    }

    /// End raising for `q` (`bfq_bfqq_end_wr`). Interactive raising also forgets
    /// `soft_rt_next_start`: the bandwidth a starting application took says nothing about the
    /// soft real-time pattern it may show once started. The entity keeps its raised weight
    /// until the change is applied (`entity.prio_changed`, see [`Bfq::apply_weight`]).
    pub(super) fn end_wr(&mut self, q: usize, t: Tick) {
        if self.queues[q].busy && self.queues[q].wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        let qq = &mut self.queues[q];
        if qq.wr_cur_max_time != RT_MAX_TIME {
            qq.soft_rt_next_start = t;
        }
        qq.wr_coeff = 1;
        qq.wr_cur_max_time = 0;
        qq.last_wr_start_finish = t;
    }

    /// Soft real-time raising of `q` ends: back to interactive raising if the interactive
    /// period it interrupted still runs (`switch_back_to_interactive_wr`), else no raising.
    /// The weight changes when the entity is next activated or requeued.
    pub(super) fn end_softrt_wr(&mut self, q: usize, t: Tick) {
        if t > self.queues[q].wr_start_at_switch_to_srt + self.wr_duration() {
            self.end_wr(q, t);
        } else {
            self.switch_back_to_interactive(q);
        }
    }

    fn switch_back_to_interactive(&mut self, q: usize) {
        let d = self.wr_duration();
        let qq = &mut self.queues[q];
        qq.wr_coeff = WR_COEFF;
        qq.wr_cur_max_time = d;
        qq.last_wr_start_finish = qq.wr_start_at_switch_to_srt;
    }

    /// Start, renew or stop raising when `q` becomes busy.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn update_wr_on_rq_arrival(
        &mut self,
        q: usize,
        old_wr: u64,
        wr_or_deserves: bool,
        interactive: bool,
        in_burst: bool,
        soft_rt: bool,
        t: Tick,
    ) {
        let d = self.wr_duration();
        let min_budget = self.bfq_min_budget();
        let e = self.queues[q].eid;
        let qq = &mut self.queues[q];
        if old_wr == 1 && wr_or_deserves {
            if interactive {
                qq.service_from_wr = 0;
                qq.wr_coeff = WR_COEFF;
                qq.wr_cur_max_time = d;
            } else {
                qq.wr_start_at_switch_to_srt = PAST;
                qq.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                qq.wr_cur_max_time = RT_MAX_TIME;
            }
            let b = &mut self.wf.entities[e].budget;
            *b = (*b).min(2 * min_budget);
        } else if old_wr > 1 {
            if interactive {
                qq.wr_coeff = WR_COEFF;
                qq.wr_cur_max_time = d;
            } else if in_burst {
                qq.wr_coeff = 1;
            } else if soft_rt {
                if qq.wr_cur_max_time != RT_MAX_TIME {
                    qq.wr_start_at_switch_to_srt = qq.last_wr_start_finish;
                    qq.wr_cur_max_time = RT_MAX_TIME;
                    qq.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                }
                qq.last_wr_start_finish = t;
            }
        }
    }

    /// On each dispatch from the in-service queue: end raising that has run its course
    /// (`bfq_update_wr_data`). The weight changes at once only when the queue starts or stops
    /// being raised; a change of coefficient while raised (soft real-time back to
    /// interactive) waits for the next activation or requeue, as the kernel's pending
    /// `prio_changed` does ("WARN: pending prio change" in its log).
    pub(super) fn update_wr_data(&mut self, q: usize, t: Tick) {
        if self.queues[q].wr_coeff > 1 {
            let qq = &self.queues[q];
            if qq.in_large_burst {
                self.end_wr(q, t);
            } else if t > qq.last_wr_start_finish + qq.wr_cur_max_time {
                if qq.wr_cur_max_time == RT_MAX_TIME {
                    self.end_softrt_wr(q, t);
                } else {
                    self.end_wr(q, t);
                }
            }
            let qq = &self.queues[q];
            if qq.wr_coeff > 1
                && qq.wr_cur_max_time != RT_MAX_TIME
                && qq.service_from_wr > MAX_SERVICE_FROM_WR
            {
                self.end_wr(q, t);
            }
        }
        let qq = &self.queues[q];
        if (self.wf.entities[qq.eid].weight > qq.orig_weight) != (qq.wr_coeff > 1) {
            self.apply_weight(q);
        }
    }

    /// The earliest arrival at which `q` could still be soft real-time
    /// (`bfq_bfqq_softrt_next_start`), in jiffies as the kernel counts it: the latest of the
    /// previous value, the jiffy the queue last became busy plus `HZ * service / 7000`
    /// jiffies (integer division), and now plus `nsecs_to_jiffies(slice_idle)` plus 4
    /// jiffies. Returned as the start of that jiffy; at HZ = 250 the last term is 24 ms
    /// ahead where HZ = 1000 gives 12.
    pub(super) fn softrt_next_start(&self, q: usize, t: Tick) -> Tick {
        let qq = &self.queues[q];
        let hz = self.cfg.hz as i64;
        let by_rate = self.jiffies(qq.last_idle_bklogged)
            + (hz as u64 * qq.service_from_backlogged / MAX_SOFTRT_RATE) as i64;
        let by_idle = self.jiffies(t) + self.slice_idle() / self.jiffy() + 4;
        let j = self
            .jiffies(qq.soft_rt_next_start)
            .max(by_rate)
            .max(by_idle);
        j * self.jiffy()
    }

    /// The length of a jiffy at the configured `hz`, ns.
    pub(super) fn jiffy(&self) -> Tick {
        1_000_000_000 / self.cfg.hz as Tick
    }

    /// The kernel's `jiffies` at `t`: its tick is aligned to multiples of the jiffy on the
    /// monotonic clock (`tick_init_jiffy_update`), the clock the recordings use.
    pub(super) fn jiffies(&self, t: Tick) -> i64 {
        t.div_euclid(self.jiffy())
    }

    /// The start of the jiffy `t` falls in: where the kernel's `jiffies` stamp of `t` reads
    /// back in nanoseconds.
    pub(super) fn jiffy_start(&self, t: Tick) -> Tick {
        self.jiffies(t) * self.jiffy()
    }

    /// `msecs_to_jiffies` of the duration `d` (ns): whole jiffies, rounded up.
    pub(super) fn to_jiffies(&self, d: Tick) -> i64 {
        (d + self.jiffy() - 1).div_euclid(self.jiffy())
    }

    /// `time_is_before_eq_jiffies(stamp_jif + msecs_to_jiffies(d))`, where `stamp_jif` is
    /// the kernel's `jiffies` at `stamp`: at `t`, `d` has passed counted in whole jiffies
    /// (up to a jiffy sooner than in nanoseconds).
    pub(super) fn jiffies_since(&self, stamp: Tick, d: Tick, t: Tick) -> bool {
        self.jiffies(t) >= self.jiffies(stamp) + self.to_jiffies(d)
    }

    /// `time_is_before_jiffies(at)`: the jiffy of `at` is over at `t`.
    pub(super) fn jiffy_passed(&self, at: Tick, t: Tick) -> bool {
        self.jiffies(t) > self.jiffies(at)
    }

    /// A soft real-time queue set in service after waiting: move its raising start forward by
    /// the time it was not served.
    pub(super) fn softrt_shift_on_service(&mut self, q: usize, t: Tick) {
        let timeout_passed = self.jiffy_passed(self.queues[q].budget_timeout, t);
        let qq = &mut self.queues[q];
        if t > qq.last_wr_start_finish
            && qq.wr_coeff > 1
            && qq.wr_cur_max_time == RT_MAX_TIME
            && timeout_passed
        {
            if qq.budget_timeout > qq.last_wr_start_finish {
                qq.last_wr_start_finish += t - qq.budget_timeout;
            } else {
                qq.last_wr_start_finish = t;
            }
        }
    }

    /// Track bursts of queue creations (`bfq_handle_burst`).
    pub(super) fn handle_burst(&mut self, q: usize, t: Tick) {
        let qq = &self.queues[q];
        if qq.in_burst_list || qq.in_large_burst || t <= qq.split_time + 10 * MS {
            return;
        }
        if t > self.burst.last_ins + BURST_INTERVAL || qq.group.0 != self.burst.group {
            self.burst.large = false;
            self.reset_burst_list(q);
        } else if self.burst.large {
            self.queues[q].in_large_burst = true;
        } else {
            self.add_to_burst(q);
        }
        self.burst.last_ins = t;
    }

    fn reset_burst_list(&mut self, q: usize) {
        for x in std::mem::take(&mut self.burst.list) {
            self.queues[x].in_burst_list = false;
        }
        if self.tot_busy() == 0 {
            self.burst.list.push(q);
            self.queues[q].in_burst_list = true;
            self.burst.size = 1;
        } else {
            self.burst.size = 0;
        }
        self.burst.group = self.queues[q].group.0;
    }

    fn add_to_burst(&mut self, q: usize) {
        self.burst.size += 1;
        if self.burst.size == LARGE_BURST_THRESH {
            self.burst.large = true;
            for x in std::mem::take(&mut self.burst.list) {
                self.queues[x].in_burst_list = false;
                self.queues[x].in_large_burst = true;
            }
            self.queues[q].in_large_burst = true;
        } else {
            self.burst.list.push(q);
            self.queues[q].in_burst_list = true;
        }
    }

    /// Take `q` out of the burst list.
    pub(super) fn burst_list_remove(&mut self, q: usize) {
        if self.queues[q].in_burst_list {
            self.queues[q].in_burst_list = false;
            self.burst.list.retain(|&x| x != q);
        }
    }
}
