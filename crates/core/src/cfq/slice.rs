//! Slices and idling: how long a queue's turn lasts (`cfq_prio_slice`, `low_latency`'s
//! scaling, the group's share), when it ends, and the idle timer that keeps the device for a
//! sync queue's or a group's next request (`slice_idle`, `group_idle`).

use super::group::SERVICE_SHIFT;
use super::types::{Class, QId};
use super::{Cfq, JIFFY};

/// `cfq_hist_divisor`.
const HIST_DIVISOR: u32 = 4;

impl Cfq {
    /// `cfq_prio_slice`: base slice scaled by priority level.
    pub(super) fn prio_slice(&self, sync: bool, prio: u8) -> u64 {
        let base = self.cfg.slice(sync) as i64;
        (base + base / 5 * (4 - i64::from(prio))).max(0) as u64
    }

    /// `cfq_group_slice`: the group's share of target_latency.
    pub(super) fn group_slice(&self, g: usize) -> u64 {
        (self.cfg.target_latency * u64::from(self.groups[g].vfraction)) >> SERVICE_SHIFT
    }

    /// `cfq_group_get_avg_queues`: update and read the averaged busy count of a class.
    pub(super) fn group_avg_queues(&mut self, g: usize, rt: bool) -> u32 {
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
    pub(super) fn scaled_slice(&mut self, q: QId) -> u64 {
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

    pub(super) fn set_prio_slice(&mut self, q: QId, now: u64) {
        let slice = self.scaled_slice(q);
        let cq = &mut self.queues[q];
        cq.slice_start = Some(now);
        cq.slice_end = now + slice;
        cq.allocated_slice = slice;
    }

    /// `cfq_slice_used`.
    pub(super) fn slice_used(&self, q: QId, now: u64) -> bool {
        let cq = &self.queues[q];
        !cq.slice_new && now >= cq.slice_end
    }

    /// `__cfq_slice_expired`.
    pub(super) fn slice_expired_queue(&mut self, q: QId, timed_out: bool, now: u64) {
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

    pub(super) fn slice_expired(&mut self, timed_out: bool, now: u64) {
        if let Some(q) = self.active_queue {
            self.slice_expired_queue(q, timed_out, now);
        }
    }

    /// `cfq_should_idle`.
    pub(super) fn should_idle(&self, q: QId) -> bool {
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
    pub(super) fn arm_slice_timer(&mut self, now: u64) {
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
    pub(super) fn fire_timer(&mut self, now: u64) {
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
    pub(super) fn should_wait_busy(&self, q: QId, now: u64) -> bool {
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
}
