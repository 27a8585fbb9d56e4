//! Insertion and preemption: a request's process and group find (or make) its queue, the
//! queue takes its priority, and an arriving request may preempt the active queue
//! (`cfq_should_preempt`).

use crate::request::{GroupId, IoPrio, Request};

use super::queue::CfqQueue;
use super::stats::TTime;
use super::types::{class_of, Class, QId, Workload};
use super::{Cfq, Cic};

/// A page, for the "bigger than a page, let it rip" rule.
const PAGE_BYTES: u64 = 4096;

impl Cfq {
    pub(super) fn group_of(&self, rq: &Request) -> usize {
        if self.cfg.groups && (rq.group.0 as usize) < self.groups.len() {
            rq.group.0 as usize
        } else {
            GroupId::ROOT.0 as usize
        }
    }

    pub(super) fn put_queue(&mut self, q: QId) {
        if self.queues[q].sync {
            self.queues[q].refs = self.queues[q].refs.saturating_sub(1);
        }
    }

    /// `cfq_init_prio_data`.
    pub(super) fn init_prio_data(&mut self, q: QId, prio: IoPrio) {
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
    pub(super) fn boost_on_prio(&mut self, q: QId, meta: bool) {
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
    pub(super) fn get_queue(&mut self, sync: bool, prio: IoPrio, g: usize) -> QId {
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
    pub(super) fn queue_for(&mut self, rq: &Request, now: u64) -> QId {
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

    /// `cfq_should_preempt`: should `new`, which just got `rq`, take the disk now?
    pub(super) fn should_preempt(&self, new: QId, rq: &Request, now: u64) -> bool {
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
    pub(super) fn is_descendant(&self, g: usize, ancestor: usize) -> bool {
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
    pub(super) fn preempt_queue(&mut self, q: QId, now: u64) {
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
    pub(super) fn rq_enqueued(&mut self, q: QId, rq: &Request, now: u64) {
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
}
