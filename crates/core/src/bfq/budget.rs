//! Budgets: the feedback that sizes each queue's next budget from why it expired, the
//! time charge for slow (seeky) queues, and the peak-rate estimator that autotunes
//! `max_budget` to what the device transfers in one budget timeout.

use super::queue::rq_seeky;
use super::{Bfq, Expire, Tick, MIN_TT, MS};

/// Budget before autotuning has enough samples, sectors.
pub(super) const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// Budgets assigned (7/8-decayed count) before the autotuned max budget is used.
pub(super) const STATS_MIN_BUDGETS: u32 = 194;
/// Async requests are charged this many times their size.
pub(super) const ASYNC_CHARGE_FACTOR: u64 = 3;
/// In-flight plus queued requests that make a sample for device-queueing detection.
pub(super) const HW_QUEUE_THRESHOLD: u32 = 3;
/// Samples needed to decide on device queueing.
pub(super) const HW_QUEUE_SAMPLES: u32 = 32;

/// Fixed-point shift of rates, which are in sectors per microsecond.
const RATE_SHIFT: u32 = 16;
const RATE_MIN_SAMPLES: u32 = 32;
const RATE_MIN_INTERVAL: Tick = 300 * MS;
const RATE_REF_INTERVAL: Tick = 1000 * MS;
/// Reference peak rates (rotational, non-rotational), sectors/us << 16.
pub(super) const REF_RATE: [u64; 2] = [14_000, 33_000];
/// Reference raising durations (rotational, non-rotational), ms.
pub(super) const REF_WR_DURATION_MS: [u64; 2] = [7_000, 2_500];

/// The device peak-rate estimator (`bfq_update_peak_rate`).
#[derive(Clone, Debug)]
pub(super) struct PeakRate {
    /// Estimated peak rate, sectors/us << 16.
    pub rate: u64,
    /// Reference rate times reference raising duration (ms).
    pub rate_dur_prod: u64,
    samples: u32,
    sequential: u32,
    tot_sectors: u64,
    last_rq_max_size: u64,
    delta_from_first: Tick,
    first_dispatch: Tick,
    last_dispatch: Tick,
}

impl PeakRate {
    /// Start at 2/3 of the reference rate of the device kind.
    pub fn new(rotational: bool) -> PeakRate {
        let k = usize::from(!rotational);
        PeakRate {
            rate: REF_RATE[k] * 2 / 3,
            rate_dur_prod: REF_RATE[k] * REF_WR_DURATION_MS[k],
            samples: 0,
            sequential: 0,
            tot_sectors: 0,
            last_rq_max_size: 0,
            delta_from_first: 0,
            first_dispatch: 0,
            last_dispatch: 0,
        }
    }

    /// A completion so late that the request was certainly served below 1M sectors/s closes
    /// the observation interval.
    pub fn needs_reset_on_completion(&self, t: Tick, last_completion: Tick) -> bool {
        let delta_us = (t - last_completion) / 1000;
        delta_us > MIN_TT / 1000
            && (self.last_rq_max_size << RATE_SHIFT) / (delta_us as u64) < 1 << (RATE_SHIFT - 10)
    }

    fn reset(&mut self, rq_sectors: Option<u64>, t: Tick) {
        match rq_sectors {
            Some(s) => {
                self.last_dispatch = t;
                self.first_dispatch = t;
                self.samples = 1;
                self.sequential = 0;
                self.tot_sectors = s;
                self.last_rq_max_size = s;
            }
            None => self.samples = 0,
        }
    }
}

impl Bfq {
    /// The autotuned max budget: what the device moves in one timeout at peak rate.
    pub(super) fn calc_max_budget(&self) -> u64 {
        (self.peak.rate * 1000 * self.cfg.timeout.as_ms()) >> RATE_SHIFT
    }

    /// Close the observation interval, maybe update the peak rate, start a new interval.
    pub(super) fn update_rate_reset(&mut self, rq_sectors: Option<u64>, t: Tick) {
        let p = &mut self.peak;
        if p.samples >= RATE_MIN_SAMPLES && p.delta_from_first >= RATE_MIN_INTERVAL {
            p.delta_from_first = p
                .delta_from_first
                .max(self.last_completion - p.first_dispatch);
            let us = (p.delta_from_first / 1000).max(1) as u64;
            let rate = (p.tot_sectors << RATE_SHIFT) / us;
            let mostly_random = p.sequential < (3 * p.samples) >> 2 && rate <= p.rate;
            if !mostly_random && rate <= 20 << RATE_SHIFT {
                let weight = (9 * p.sequential) / p.samples;
                let weight = (u64::from(weight) * p.delta_from_first as u64
                    / RATE_REF_INTERVAL as u64)
                    .min(8);
                let divisor = 10 - weight;
                p.rate = (p.rate * (divisor - 1) / divisor + rate / divisor).max(1);
                if self.cfg.max_budget == 0 {
                    self.max_budget = self.calc_max_budget();
                }
            }
        }
        self.peak.reset(rq_sectors, t);
    }

    /// Sample a dispatch for the peak rate and remember the head position.
    pub(super) fn update_peak_rate(
        &mut self,
        q: usize,
        sector: u64,
        sectors: u32,
        end: u64,
        t: Tick,
    ) {
        let s = u64::from(sectors);
        if self.peak.samples == 0 {
            self.peak.reset(Some(s), t);
        } else if t - self.peak.last_dispatch > 100 * MS && self.rq_in_driver == 0 {
            self.update_rate_reset(Some(s), t);
        } else {
            let seeky = rq_seeky(self.cfg.rotational, self.last_position, sector, sectors);
            let p = &mut self.peak;
            p.samples += 1;
            if (self.rq_in_driver > 0 || t - self.last_completion < MIN_TT) && !seeky {
                p.sequential += 1;
            }
            p.tot_sectors += s;
            if !p.samples.is_multiple_of(32) {
                p.last_rq_max_size = p.last_rq_max_size.max(s);
            } else {
                p.last_rq_max_size = s;
            }
            p.delta_from_first = t - p.first_dispatch;
            if p.delta_from_first >= RATE_REF_INTERVAL {
                self.update_rate_reset(Some(s), t);
            }
        }
        self.last_position = end;
        if self.in_service == Some(q) {
            self.in_serv_last_pos = end;
        }
        self.peak.last_dispatch = t;
    }

    /// On reactivation: a queue that expired empty and got a request soon resumes its old
    /// budget (and may preempt); otherwise it gets a fresh budget. Returns "wants to preempt".
    pub(super) fn update_budg_for_activation(&mut self, q: usize, arrived_in_time: bool) -> bool {
        let e = self.queues[q].eid;
        if self.queues[q].non_blocking_wait_rq && arrived_in_time && self.budget_left(q) > 0 {
            let left = self.budget_left(q) as u64;
            self.wf.entities[e].budget = left.min(self.queues[q].max_budget);
            self.wf.entities[e].service = 0;
            return true;
        }
        self.wf.entities[e].service = 0;
        let b = self.queues[q].max_budget.max(self.next_charge(q));
        self.wf.entities[e].budget = b;
        self.queues[q].non_blocking_wait_rq = false;
        false
    }

    /// Budget feedback on expiration (`__bfq_bfqq_recalc_budget`).
    pub(super) fn recalc_budget(&mut self, q: usize, reason: Expire) {
        let min_budget = self.bfq_min_budget();
        let qq = &self.queues[q];
        let mut budget = if qq.wr_coeff == 1 {
            qq.max_budget
        } else {
            2 * min_budget
        };
        if qq.sync && qq.wr_coeff == 1 {
            budget = match reason {
                Expire::TooIdle => {
                    if qq.dispatched > 0 {
                        (budget * 2).min(self.max_budget)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expire::BudgetTimeout => (budget * 2).min(self.max_budget),
                Expire::Exhausted => (budget * 4).min(self.max_budget),
                Expire::NoMoreRequests => self.wf.entities[qq.eid].service.max(min_budget),
                Expire::Preempted => return,
            };
        } else if !qq.sync {
            budget = self.max_budget;
        }
        let mut max_budget = budget;
        if self.budgets_assigned >= STATS_MIN_BUDGETS && self.cfg.max_budget == 0 {
            max_budget = max_budget.min(self.max_budget);
        }
        self.queues[q].max_budget = max_budget;
        if self.queues[q].next_rq.is_some() {
            let b = max_budget.max(self.next_charge(q));
            self.set_budget(q, b);
        }
    }

    /// Whether the in-service queue consumed its budget slowly, and how long it was served
    /// (`bfq_bfqq_is_slow`). `t` is the time `blk_time_get` reads in the expiring context,
    /// a submitter's plug clock in an insertion: it may precede the budget's start (stamped
    /// by another task), and the kernel keeps the difference in microseconds in a `u32`, so
    /// a negative one wraps to over an hour: the queue is slow unless it received half the
    /// max budget, and is charged for the whole timeout.
    pub(super) fn is_slow(&self, q: usize, compensate: bool, t: Tick) -> (bool, u64) {
        let qq = &self.queues[q];
        let mut slow = qq.seeky();
        if !qq.sync {
            return (false, 0);
        }
        let end = if compensate {
            self.last_idling_start
        } else {
            t
        };
        let delta_us = u64::from(((end - self.last_budget_start) / 1000) as u32);
        if delta_us < 1000 {
            let ms = if self.cfg.rotational {
                self.cfg.slice_idle.as_ms()
            } else {
                (MIN_TT / MS) as u64
            };
            return (slow, ms);
        }
        if delta_us > 20_000 {
            slow = self.wf.entities[qq.eid].service < self.max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    /// Charge a slow queue for the time it held the device instead of its service.
    pub(super) fn charge_time(&mut self, q: usize, time_ms: u64, t: Tick) {
        let timeout_ms = self.cfg.timeout.as_ms().max(1);
        let bounded = time_ms.min(timeout_ms);
        let for_time = self.max_budget * bounded / timeout_ms;
        let e = self.queues[q].eid;
        let service = self.wf.entities[e].service;
        let tot = for_time.max(service);
        if tot > self.wf.entities[e].budget {
            self.wf.entities[e].budget = tot;
        }
        self.served(q, tot - service, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfq::Config;

    #[test]
    fn bfq_completed_request_closes_the_rate_interval_only_for_a_slow_late_completion() {
        // bfq_completed_request (Linux 6.9): more than BFQ_MIN_TT (2 ms) since the last
        // completion, and the largest request seen served below 1M sectors/s.
        let mut p = PeakRate::new(true);
        p.last_rq_max_size = 1;
        assert!(!p.needs_reset_on_completion(1_500_000, 0), "within 2 ms");
        assert!(
            p.needs_reset_on_completion(3_000_000, 0),
            "1 sector in 3 ms"
        );
        p.last_rq_max_size = 1024;
        assert!(
            !p.needs_reset_on_completion(3_000_000, 0),
            "1024 sectors in 3 ms"
        );
    }

    #[test]
    fn bfq_completed_request_rate_check_boundaries() {
        // bfq_completed_request (Linux 6.9): strictly more than 2000 us, and
        // (last_rq_max_size << 16) / delta_us < 1 << 6.
        let mut p = PeakRate::new(true);
        p.last_rq_max_size = 1;
        assert!(!p.needs_reset_on_completion(2_000_999, 0), "2000 us");
        assert!(p.needs_reset_on_completion(2_001_000, 0), "2001 us");
        p.last_rq_max_size = 2;
        assert!(
            p.needs_reset_on_completion(3_000_000, 0),
            "2 << 16 / 3000 = 43"
        );
        p.last_rq_max_size = 3;
        assert!(
            !p.needs_reset_on_completion(3_000_000, 0),
            "3 << 16 / 3000 = 65"
        );
        assert!(
            !p.needs_reset_on_completion(3_072_000, 0),
            "3 << 16 / 3072 = 64"
        );
        assert!(
            p.needs_reset_on_completion(3_073_000, 0),
            "3 << 16 / 3073 = 63"
        );
        assert!(p.needs_reset_on_completion(13_000_000, 10_000_000 - 100_000));
        assert!(!p.needs_reset_on_completion(13_000_000, 10_000_000 + 1_000_000));
    }

    fn rate_state(s: &Bfq) -> (u32, u32, u64, u64, Tick, Tick) {
        let p = &s.peak;
        (
            p.samples,
            p.sequential,
            p.tot_sectors,
            p.last_rq_max_size,
            p.first_dispatch,
            p.delta_from_first,
        )
    }

    #[test]
    fn bfq_update_peak_rate_samples_dispatches_as_the_kernel_does() {
        // bfq_update_peak_rate and bfq_reset_rate_computation (Linux 6.9): the first dispatch
        // starts an interval; a dispatch is sequential when something is in the driver or
        // the last completion is under BFQ_MIN_TT (2 ms) old, and it is not seeky; over
        // 100 ms without dispatches and with an empty driver the interval restarts.
        let mut s = Bfq::new(Config::default());
        s.update_peak_rate(0, 1000, 8, 1008, 0);
        assert_eq!(rate_state(&s), (1, 0, 8, 8, 0, 0));
        assert_eq!((s.last_position, s.peak.last_dispatch), (1008, 0));
        s.update_peak_rate(0, 1008, 8, 1016, 2 * MS - 1);
        assert_eq!(
            rate_state(&s),
            (2, 1, 16, 8, 0, 2 * MS - 1),
            "completion < 2 ms ago"
        );
        s.update_peak_rate(0, 1016, 16, 1032, 2 * MS);
        assert_eq!(
            rate_state(&s),
            (3, 1, 32, 16, 0, 2 * MS),
            "completion 2 ms ago"
        );
        s.rq_in_driver = 1;
        s.update_peak_rate(0, 1833, 8, 1841, 3 * MS);
        assert_eq!(rate_state(&s).1, 1, "801 sectors away: seeky");
        s.update_peak_rate(0, 2641, 8, 2649, 4 * MS);
        assert_eq!(rate_state(&s).1, 2, "800 sectors away: not seeky");
        s.rq_in_driver = 0;
        s.update_peak_rate(0, 2649, 8, 2657, 104 * MS);
        assert_eq!(
            rate_state(&s).0,
            6,
            "100 ms after the last dispatch: same interval"
        );
        s.update_peak_rate(0, 2657, 8, 2665, 204 * MS + 1);
        assert_eq!(rate_state(&s), (1, 0, 8, 8, 204 * MS + 1, 104 * MS));
        // The largest request size is reset every 32 samples.
        s.rq_in_driver = 1;
        let mut pos = 2665;
        for i in 2..=32u32 {
            let size = if i == 31 { 64 } else { 8 };
            s.update_peak_rate(
                0,
                pos,
                size,
                pos + u64::from(size),
                205 * MS + Tick::from(i),
            );
            pos += u64::from(size);
            let want = if i < 31 {
                8
            } else if i == 31 {
                64
            } else {
                8
            };
            assert_eq!(s.peak.last_rq_max_size, want, "sample {i}");
        }
    }

    #[test]
    fn bfq_update_rate_reset_bounds_the_rate_and_the_filter_weight() {
        // bfq_update_rate_reset (Linux 6.9): no update for a rate above 20 sectors/us; the
        // filter weight is at most 8 (divisor 2); the interval extends to the last
        // completion; the peak rate never falls below 1.
        let run = |tot: u64, delta: Tick, last_completion: Tick, rate: u64| {
            let mut s = Bfq::new(Config::default());
            s.peak.rate = rate;
            s.peak.samples = 40;
            s.peak.sequential = 39;
            s.peak.tot_sectors = tot;
            s.peak.first_dispatch = 0;
            s.peak.delta_from_first = delta;
            s.last_completion = last_completion;
            s.update_rate_reset(None, delta);
            assert_eq!(s.peak.samples, 0, "reset for the next dispatch");
            s.peak.rate
        };
        let ms = |n: Tick| n * MS;
        // 8e6 sectors in 400 ms: exactly 20 sectors/us, taken; weight 8 * 0.4 = 3.
        assert_eq!(
            run(8_000_000, ms(400), 0, 9333),
            9333 * 6 / 7 + (20 << 16) / 7
        );
        assert_eq!(
            run(8_000_100, ms(400), 0, 9333),
            9333,
            "above 20 sectors/us"
        );
        // 5 s: weight 8 * 5 = 40, capped at 8: divisor 2. Rate 320 << 16 / 5e6 us = 4.
        assert_eq!(run(320, ms(5000), 0, 9333), 9333 / 2 + 4 / 2);
        // The last completion at 800 ms: 320 << 16 / 800000 = 26, weight 8 * 0.8 = 6.
        assert_eq!(run(320, ms(400), ms(800), 9333), 9333 * 3 / 4 + 26 / 4);
        assert_eq!(run(0, ms(400), 0, 1), 1, "at least 1");
        // Too few samples or too short an interval: no update.
        assert_eq!(run(320, ms(300) - 1, 0, 9333), 9333);
    }
}
