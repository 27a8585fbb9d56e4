//! Service trees (`cfq_rb_root`): queues of one group, class and workload ordered by the time
//! they should next be served; and the tree of groups ordered by virtual disk time.

use std::collections::BTreeSet;

use super::stats::TTime;
use super::types::{Class, QId};
use super::{Cfq, MS};

/// `CFQ_IDLE_DELAY`: idle-class queues go this far behind the tree's last queue.
const IDLE_DELAY: u64 = 200 * MS;

/// One service tree of queues.
#[derive(Clone, Debug, Default)]
pub(super) struct ServiceTree {
    tree: BTreeSet<(i64, u64, QId)>,
    /// Think time of the tree's queues taken together (for idling on the last queue).
    pub ttime: TTime,
}

impl ServiceTree {
    /// Queues on the tree.
    pub fn count(&self) -> usize {
        self.tree.len()
    }
    /// The queue to serve first, with its key.
    pub fn first(&self) -> Option<(i64, QId)> {
        self.tree.iter().next().map(|&(k, _, q)| (k, q))
    }
    /// The queue served last, with its key.
    pub fn last(&self) -> Option<(i64, QId)> {
        self.tree.iter().next_back().map(|&(k, _, q)| (k, q))
    }
    /// Insert `q` at `key`; `seq` orders equal keys (later inserts go after).
    pub fn insert(&mut self, key: i64, seq: u64, q: QId) {
        self.tree.insert((key, seq, q));
    }
    /// Remove `q` (inserted with `key`, `seq`).
    pub fn remove(&mut self, key: i64, seq: u64, q: QId) {
        let removed = self.tree.remove(&(key, seq, q));
        debug_assert!(removed, "queue {q} not on its service tree");
    }
}

/// The tree of busy groups ordered by virtual disk time (`grp_service_tree`).
#[derive(Clone, Debug, Default)]
pub(super) struct GroupServiceTree {
    tree: BTreeSet<(u64, u64, usize)>,
    /// The virtual time of the group served first, never decreasing.
    pub min_vdisktime: u64,
}

impl GroupServiceTree {
    /// The group with the least virtual time.
    pub fn first(&self) -> Option<usize> {
        self.tree.iter().next().map(|&(_, _, g)| g)
    }
    /// The vdisktime of the group with the most.
    pub fn last_vdisktime(&self) -> Option<u64> {
        self.tree.iter().next_back().map(|&(v, _, _)| v)
    }
    /// Insert group `g` at `vdisktime`.
    pub fn insert(&mut self, vdisktime: u64, seq: u64, g: usize) {
        self.tree.insert((vdisktime, seq, g));
    }
    /// Remove group `g`.
    pub fn remove(&mut self, vdisktime: u64, seq: u64, g: usize) {
        let removed = self.tree.remove(&(vdisktime, seq, g));
        debug_assert!(removed, "group {g} not on the group service tree");
    }
    /// `update_min_vdisktime`: advance the floor to the first group's time.
    pub fn update_min_vdisktime(&mut self) {
        if let Some(&(v, _, _)) = self.tree.iter().next() {
            self.min_vdisktime = self.min_vdisktime.max(v);
        }
    }
}

impl Cfq {
    pub(super) fn st_remove(&mut self, q: QId) {
        if let Some(key) = self.queues[q].st.take() {
            let (rb_key, seq) = (self.queues[q].rb_key, self.queues[q].tree_seq);
            self.st_mut(key).remove(rb_key, seq, q);
        }
    }

    /// `cfq_service_tree_add`.
    pub(super) fn service_tree_add(&mut self, q: QId, add_front: bool, now: u64) {
        let key = self.st_key(q);
        let cq = &self.queues[q];
        let rb_key: i64 = if cq.class == Class::Idle {
            let base = match self.st(key).last() {
                Some((k, last)) if last != q => k,
                _ => now as i64,
            };
            base + IDLE_DELAY as i64
        } else if !add_front {
            let nr = i64::from(self.groups[cq.group].nr_cfqq);
            let offset = (nr - 1)
                * (self.prio_slice(true, 0) as i64 - self.prio_slice(cq.sync, cq.ioprio) as i64);
            let k = offset + now as i64 - cq.slice_resid;
            self.queues[q].slice_resid = 0;
            k
        } else {
            let base = match self.st(key).first() {
                Some((k, _)) => k,
                None => now as i64,
            };
            base - 1_000_000_000
        };
        let mut new_cfqq = true;
        if self.queues[q].st.is_some() {
            new_cfqq = false;
            if rb_key == self.queues[q].rb_key && self.queues[q].st == Some(key) {
                return;
            }
            self.st_remove(q);
        }
        let seq = self.next_seq();
        self.queues[q].st = Some(key);
        self.queues[q].rb_key = rb_key;
        self.queues[q].tree_seq = seq;
        self.st_mut(key).insert(rb_key, seq, q);
        if add_front || !new_cfqq {
            return;
        }
        self.group_notify_queue_add(self.queues[q].group);
    }

    pub(super) fn resort_rr_list(&mut self, q: QId, now: u64) {
        if self.queues[q].on_rr {
            self.service_tree_add(q, false, now);
            self.prio_tree_add(q);
        }
    }

    pub(super) fn add_cfqq_rr(&mut self, q: QId, now: u64) {
        debug_assert!(!self.queues[q].on_rr);
        self.queues[q].on_rr = true;
        self.busy_queues += 1;
        if self.queues[q].sync {
            self.busy_sync_queues += 1;
        }
        self.resort_rr_list(q, now);
    }

    pub(super) fn del_cfqq_rr(&mut self, q: QId) {
        debug_assert!(self.queues[q].on_rr);
        self.queues[q].on_rr = false;
        self.st_remove(q);
        self.prio_tree_del(q);
        self.group_notify_queue_del(self.queues[q].group);
        self.busy_queues -= 1;
        if self.queues[q].sync {
            self.busy_sync_queues -= 1;
        }
    }
}
