//! I/O injection: while the in-service queue is empty and the device idles for it, requests
//! of other queues may be dispatched, up to a per-queue limit on requests in flight. The limit
//! adapts: the total service time of the queue's "first" requests (arriving into an empty
//! queue) is measured with nothing else in flight (the baseline) and with injection; the
//! limit goes up while the latter stays below 1.5x the baseline and down otherwise, and is
//! reset every second. Its intervals (10 ms before a measurement, 100 ms and 1 s before a
//! reset) count jiffies of `hz` from the limit's stamp, as `bfq_add_request` does.

use super::{Bfq, Tick, MS};
use crate::time::Nanos;

/// Sampling state of the inject-limit measurement.
#[derive(Clone, Debug, Default)]
pub(super) struct InjectState {
    /// The request whose completion ends a measurement.
    pub waited_rq: Option<u64>,
    /// Arm `waited_rq` at the next dispatch from the in-service queue.
    pub wait_dispatch: bool,
    /// Requests were injected during the measurement.
    pub rqs_injected: bool,
    /// When the in-service queue went from empty to non-empty.
    pub last_empty_occupied: Tick,
    /// The inject limit's history, when kept (`Scheduler::keep_notes`).
    pub notes: Option<Vec<(Nanos, String)>>,
}

impl Bfq {
    /// Keep note `n` about queue `q` at `t`, when notes are kept.
    pub(super) fn inj_note(&mut self, q: usize, t: Tick, n: String) {
        if self.inj.notes.is_none() {
            return;
        }
        let name = self.queue_name(q);
        let qq = &self.queues[q];
        let line = format!(
            "{name} {n} [limit {} last_serv_time_ns {} decrease_time {:.6}]",
            qq.inject_limit,
            qq.last_serv_time,
            qq.decrease_time as f64 / 1e9
        );
        if let Some(v) = self.inj.notes.as_mut() {
            v.push((Nanos::from_ns(t.max(0) as u64), line));
        }
    }

    /// Queue `q` as bfq's log names it: `bfq`, its process, `S` (sync) or `A` (async).
    fn queue_name(&self, q: usize) -> String {
        let qq = &self.queues[q];
        let kind = if qq.sync { 'S' } else { 'A' };
        format!("bfq{}{kind}", qq.bic.map_or(0, |c| c.0))
    }

    /// Start the inject limit afresh: 0 for a queue with short think time, 1 otherwise.
    pub(super) fn reset_inject_limit(&mut self, q: usize, t: Tick) {
        let qq = &mut self.queues[q];
        qq.last_serv_time = 0;
        self.inj.waited_rq = None;
        qq.inject_limit = u32::from(!qq.has_short_ttime);
        qq.decrease_time = t;
        self.inj_note(q, t, "reset_inject_limit".into());
    }

    /// A "first request" of sync queue `q` arrives: its process has no other request queued
    /// or in flight (`RQ_BIC(rq)->requests <= 1`). Periodic reset, and maybe start measuring
    /// its total service time.
    /// `now_ns` is the plug clock (`blk_time_get_ns`), which stamps the measurement's start.
    pub(super) fn inject_on_first_request(&mut self, q: usize, t: Tick, now_ns: Tick) {
        if self.jiffies_since(self.queues[q].decrease_time, 1000 * MS, t) {
            self.reset_inject_limit(q, t);
        }
        let qq = &self.queues[q];
        if self.in_service == Some(q)
            && (self.rq_in_driver == 0
                || (qq.last_serv_time > 0 && self.inj.rqs_injected && self.rq_in_driver > 0))
            && self.jiffies_since(qq.decrease_time, 10 * MS, t)
        {
            self.inj.last_empty_occupied = now_ns;
            self.inj.wait_dispatch = true;
            if self.rq_in_driver == 0 {
                self.inj.rqs_injected = false;
            }
            let n = format!(
                "sample start: last_empty_occupied_ns {:.6} rq_in_driver {} rqs_injected {}",
                now_ns as f64 / 1e9,
                self.rq_in_driver,
                self.inj.rqs_injected
            );
            self.inj_note(q, t, n);
        }
    }

    /// The measured request of `q` completed: update the baseline and the limit.
    pub(super) fn update_inject_limit(&mut self, q: usize, t: Tick) {
        let tot = (t - self.inj.last_empty_occupied).max(0) as u64;
        let max_in_driver = self.max_rq_in_driver;
        let qq = &mut self.queues[q];
        let old = qq.inject_limit;
        if qq.last_serv_time > 0 && self.inj.rqs_injected {
            let threshold = (qq.last_serv_time * 3) >> 1;
            if tot >= threshold && old > 0 {
                qq.inject_limit -= 1;
                qq.decrease_time = t;
            } else if tot < threshold && old <= max_in_driver {
                qq.inject_limit += 1;
            }
        }
        if (qq.last_serv_time == 0 && self.rq_in_driver == 1) || tot < qq.last_serv_time {
            if qq.last_serv_time == 0 {
                qq.inject_limit = old.max(1);
            }
            qq.last_serv_time = tot;
        } else if !self.inj.rqs_injected && self.rq_in_driver == 1 {
            qq.last_serv_time = tot;
        }
        let n = format!(
            "update_inject_limit: tot_time_ns {tot} (since {:.6}) tot_rq_in_driver {} \
             rqs_injected {} max_rq_in_driver {max_in_driver} limit {old} ->",
            self.inj.last_empty_occupied as f64 / 1e9,
            self.rq_in_driver,
            self.inj.rqs_injected
        );
        self.inj.waited_rq = None;
        self.inj.rqs_injected = false;
        self.inj_note(q, t, n);
    }

    /// `bfq_check_waker`: a first request of sync queue `q` (long think time) arriving less
    /// than 4 ms after a completion of another queue makes that queue its tentative waker;
    /// seen three times in a row (within 128 * `slice_idle` of the first), it becomes `q`'s
    /// waker, and `q` goes to the head of the waker's woken list.
    pub(super) fn check_waker(&mut self, q: usize, t: Tick) {
        let Some(last) = self.last_completed_q else {
            return;
        };
        // `t` is the plug clock: a completion bfq saw after the submitter's plug cached its
        // time makes the kernel's `u64` difference wrap, far above 4 ms.
        let since = t - self.last_completion;
        if last == q || self.queues[q].has_short_ttime || !(0..4 * MS).contains(&since) {
            return;
        }
        let slice = self.slice_idle();
        let qq = &mut self.queues[q];
        if qq.tentative_waker != Some(last) || t > qq.waker_detection_started + 128 * slice {
            qq.tentative_waker = Some(last);
            qq.waker_detections = 1;
            qq.waker_detection_started = t;
        } else {
            qq.waker_detections += 1;
        }
        if qq.waker_detections == 3 {
            let n = format!("set waker {}", self.queue_name(last));
            self.inj_note(q, t, n);
            let qq = &mut self.queues[q];
            qq.waker = Some(last);
            qq.tentative_waker = None;
            for w in &mut self.queues {
                w.woken.retain(|&x| x != q);
            }
            self.queues[last].woken.insert(0, q);
        }
    }

    /// Queue `q` takes `w` as its waker without detecting it (`bfq_merge_bfqqs`, and a queue
    /// split off a shared one in `bfq_init_rq`): no tentative waker, and `q` goes to the head
    /// of `w`'s woken list.
    pub(super) fn inherit_waker(&mut self, q: usize, w: usize) {
        self.queues[q].waker = Some(w);
        self.queues[q].tentative_waker = None;
        for x in &mut self.queues {
            x.woken.retain(|&y| y != q);
        }
        self.queues[w].woken.insert(0, q);
    }

    /// Whether queue `w` can give a request to inject now: busy, with a next request its
    /// budget covers.
    fn can_inject_from(&self, w: usize) -> bool {
        let wq = &self.queues[w];
        wq.busy && wq.next().is_some() && self.next_charge(w) as i64 <= self.budget_left(w)
    }

    /// The in-service queue `is` is empty but keeps the device: pick a queue to inject from,
    /// if any (its own process's async I/O first, then its waker queue, then the first queue
    /// it wakes, whatever the inject limit; else `bfq_choose_bfqq_for_injection`).
    pub(super) fn injection_candidate(&mut self, is: usize, t: Tick) -> Option<usize> {
        let own_async = self.queues[is]
            .bic
            .and_then(|c| self.bics.get(&c))
            .and_then(|b| b.async_q)
            .filter(|&a| {
                let aq = &self.queues[a];
                aq.busy
                    && aq
                        .next()
                        .is_some_and(|r| Some(r.ctx) == self.queues[is].bic)
                    && self.next_charge(a) as i64 <= self.budget_left(a)
            });
        let waker = self.queues[is].waker.filter(|&w| self.can_inject_from(w));
        let blocked = self.queues[is].woken.first().copied();
        let blocked = blocked.filter(|&b| self.can_inject_from(b));
        let chosen = [
            (own_async, "its process's async queue"),
            (waker, "its waker"),
            (blocked, "the first queue it wakes"),
        ]
        .into_iter()
        .find_map(|(q, why)| q.map(|q| (q, why)));
        if let Some((q, why)) = chosen {
            let n = format!(
                "select_queue: injects {} ({why}) with rq_in_driver {}, whatever the limit",
                self.queue_name(q),
                self.rq_in_driver
            );
            self.inj_note(is, t, n);
            return Some(q);
        }
        let qq = &self.queues[is];
        if !self.idling_boosts_thr_without_issues(is)
            && (qq.wr_coeff == 1 || self.wr_busy_queues > 1 || !qq.has_short_ttime)
        {
            return self.choose_for_injection(t);
        }
        None
    }

    /// `bfq_choose_bfqq_for_injection`: the limit on requests in the driver is checked once;
    /// then the first busy queue with enough budget for its next request gives it, except
    /// that on a non-rotational device a large request goes only into an empty driver. The
    /// queues are walked as the kernel walks `active_list`: the one most recently put on an
    /// active tree (activated or requeued, `bfq_active_insert`) first.
    pub(super) fn choose_for_injection(&mut self, t: Tick) -> Option<usize> {
        let is = self.in_service?;
        let isq = &self.queues[is];
        let mut limit = isq.inject_limit;
        let always = isq.wr_coeff == 1 || !isq.has_short_ttime;
        // The kernel raises a 0 limit to 1 once plugging has lasted `slice_idle`, but adds
        // `slice_idle` (nanoseconds) to a time in jiffies: the raise waits `slice_idle`
        // jiffies (8,000,000: 9 hours at HZ = 250), far beyond any idle window. Kept as it
        // behaves.
        if limit == 0
            && isq.last_serv_time == 0
            && self.wait_request
            && self.jiffies(t) >= self.jiffies(self.last_idling_start) + self.slice_idle()
        {
            limit = 1;
        }
        if self.rq_in_driver >= limit {
            return None;
        }
        let mut order: Vec<usize> = (0..self.queues.len())
            .filter(|&q| {
                let qq = &self.queues[q];
                q != is
                    && qq.busy
                    && !qq.is_empty()
                    && self.wf.entities[qq.eid].tree == super::wf2q::Tree::Active
            })
            .collect();
        order.sort_by_key(|&q| std::cmp::Reverse(self.wf.entities[self.queues[q].eid].active_seq));
        for q in order {
            let qq = &self.queues[q];
            if (always || qq.wr_coeff > 1) && self.next_charge(q) as i64 <= self.budget_left(q) {
                let large = qq
                    .next()
                    .is_some_and(|r| r.sectors >= super::queue::SECT_THR_NONROT);
                if !self.cfg.rotational && large && self.rq_in_driver >= 1 {
                    continue;
                }
                self.inj.rqs_injected = true;
                let n = format!(
                    "choose_bfqq_for_injection: injects {} with rq_in_driver {} (limit used \
                     {limit})",
                    self.queue_name(q),
                    self.rq_in_driver
                );
                self.inj_note(is, t, n);
                return Some(q);
            }
        }
        None
    }
}
