//! Selection: which group, class and workload are served next, which queue gets the
//! device (`cfq_select_queue`), which of its requests goes (sector order, the FIFO, backward
//! seeks), and the dispatch of it (`cfq_dispatch_requests`).

use crate::request::Request;

use super::types::{Class, QId, SortKey, Workload};
use super::{Cfq, JIFFY, MIN_TT};

impl Cfq {
    /// `cfq_choose_req`: of two requests, the better one to serve with the head at `last`.
    /// Each comes (and the choice goes) as its key and slot in queue `q`, read without a
    /// search of the sort list.
    pub(super) fn choose_req(
        &self,
        q: QId,
        a: Option<(SortKey, u32)>,
        b: Option<(SortKey, u32)>,
        last: u64,
    ) -> Option<(SortKey, u32)> {
        let ((k1, a1), (k2, a2)) = match (a, b) {
            (None, b) => return b,
            (a, None) => return a,
            (Some(x), Some(y)) if x.0 == y.0 => return Some(y),
            (Some(x), Some(y)) => (x, y),
        };
        let cq = &self.queues[q];
        let (r1, r2) = (cq.at(a1), cq.at(a2));
        if r1.is_sync() != r2.is_sync() {
            return Some(if r1.is_sync() { (k1, a1) } else { (k2, a2) });
        }
        if r1.meta != r2.meta {
            return Some(if r1.meta { (k1, a1) } else { (k2, a2) });
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
                    (k1, a1)
                } else {
                    (k2, a2)
                }
            }
            (Some(_), None) => (k1, a1),
            (None, Some(_)) => (k2, a2),
            (None, None) => {
                if s1 <= s2 {
                    (k1, a1)
                } else {
                    (k2, a2)
                }
            }
        })
    }

    /// `cfq_find_next_rq`: what to serve after `last` leaves the queue.
    pub(super) fn find_next_rq(&self, q: QId, last: SortKey) -> Option<(SortKey, u32)> {
        let (next, prev) = self.queues[q].neighbours(last);
        self.choose_req(q, next, prev, last.0)
    }

    /// `cfq_choose_wl_type`: the workload whose first queue has waited longest.
    pub(super) fn choose_wl_type(&self, g: usize, class: Class) -> Workload {
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
    pub(super) fn choose_wl_class_and_type(&mut self, g: usize, now: u64) {
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
    pub(super) fn choose_cfqg(&mut self, now: u64) {
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

    pub(super) fn set_active_queue(&mut self, q: Option<QId>, now: u64) -> Option<QId> {
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

    pub(super) fn get_next_queue(&self) -> Option<QId> {
        if self.rq_queued == 0 {
            return None;
        }
        let g = self.serving_group?;
        self.groups[g]
            .tree(self.serving_class, self.serving_type)
            .first()
            .map(|(_, q)| q)
    }

    /// `cfq_select_queue`.
    pub(super) fn select_queue(&mut self, now: u64) -> Option<QId> {
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
    pub(super) fn slice_used_soon(&self, q: QId, now: u64) -> bool {
        let cq = &self.queues[q];
        cq.slice_new || now + self.cfg.slice_idle * u64::from(cq.dispatched) > cq.slice_end
    }

    /// `cfq_may_dispatch`.
    pub(super) fn may_dispatch(&self, q: QId, now: u64) -> bool {
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
    pub(super) fn check_fifo(&mut self, q: QId, now: u64) -> Option<SortKey> {
        let cq = &mut self.queues[q];
        if cq.fifo_expire {
            return None;
        }
        cq.fifo_expire = true;
        let (key, fifo_time) = cq.fifo_head()?;
        (now >= fifo_time).then_some(key)
    }

    /// Take a request out of its queue's lists (`cfq_remove_request`).
    pub(super) fn remove_request(&mut self, q: QId, key: SortKey) -> Request {
        let rq = self.queues[q].remove(key);
        let cq = &mut self.queues[q];
        cq.queued[usize::from(rq.is_sync())] -= 1;
        if rq.meta {
            cq.prio_pending -= 1;
        }
        self.rq_queued -= 1;
        if cq.next_rq.is_some_and(|(k, _)| k == key) {
            cq.next_rq = None;
        }
        if self.queues[q].on_rr {
            self.prio_tree_add(q);
        }
        rq
    }

    /// `cfq_dispatch_insert` plus the driver's activation of the request.
    pub(super) fn dispatch_insert(&mut self, q: QId, key: SortKey) -> Request {
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
    pub(super) fn dispatch_request(&mut self, q: QId, now: u64) -> Option<Request> {
        let fifo = self.check_fifo(q, now);
        if fifo.is_some() {
            self.queues[q].must_dispatch = true;
        }
        if !self.may_dispatch(q, now) {
            return None;
        }
        let key = fifo.or(self.queues[q].next_rq.map(|(k, _)| k))?;
        let rq = self.dispatch_insert(q, key);
        if self.active_cic.is_none() {
            self.active_cic = Some(rq.ctx);
        }
        Some(rq)
    }

    /// `cfq_dispatch_requests` for one request.
    pub(super) fn dispatch_requests(&mut self, now: u64) -> Option<Request> {
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
}
