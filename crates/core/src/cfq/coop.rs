//! Cooperation: queues of processes that issue requests close to each other (found through
//! the per-level prio trees keyed by each queue's next sector) are served one after the other
//! and merged into one shared queue (`cfq_close_cooperator`, `cfq_setup_merge`).

use super::types::{Class, QId};
use super::Cfq;

/// `CFQQ_CLOSE_THR`: sectors within which a request is "close" to the head.
const CLOSE_THR: u64 = 8 * 1024;

impl Cfq {
    pub(super) fn prio_tree_del(&mut self, q: QId) {
        if let Some((prio, pos)) = self.queues[q].prio_tree_pos.take() {
            self.prio_trees[prio].remove(&pos);
        }
    }

    /// `cfq_prio_tree_add`: key the queue by its next request's sector in its level's tree
    /// (a queue whose sector is taken stays out, as in the kernel).
    pub(super) fn prio_tree_add(&mut self, q: QId) {
        self.prio_tree_del(q);
        let cq = &self.queues[q];
        if cq.class == Class::Idle {
            return;
        }
        let Some((next, _)) = cq.next_rq else { return };
        let prio = cq.org_ioprio as usize;
        if let std::collections::btree_map::Entry::Vacant(e) = self.prio_trees[prio].entry(next.0) {
            e.insert(q);
            self.queues[q].prio_tree_pos = Some((prio, next.0));
        }
    }

    pub(super) fn rq_close(&self, sector: u64) -> bool {
        sector.abs_diff(self.last_position) <= CLOSE_THR
    }

    /// `cfqq_close`: a queue whose next request is close to the head, at `cur`'s level.
    pub(super) fn cfqq_close(&self, cur: QId) -> Option<QId> {
        let tree = &self.prio_trees[self.queues[cur].org_ioprio as usize];
        let pos = self.last_position;
        if let Some(&q) = tree.get(&pos) {
            return Some(q);
        }
        let below = tree.range(..pos).next_back().map(|(&s, &q)| (s, q));
        let above = tree.range(pos..).next().map(|(&s, &q)| (s, q));
        let mut cands: Vec<(u64, QId)> = below.into_iter().chain(above).collect();
        cands.sort_by_key(|&(s, _)| s.abs_diff(pos));
        cands
            .into_iter()
            .find(|&(s, _)| self.rq_close(s))
            .map(|(_, q)| q)
    }

    /// `cfq_close_cooperator`.
    pub(super) fn close_cooperator(&self, cur: QId) -> Option<QId> {
        let c = &self.queues[cur];
        if c.class == Class::Idle || !c.sync || c.seeky() {
            return None;
        }
        if self.groups[c.group].nr_cfqq == 1 {
            return None;
        }
        let q = self.cfqq_close(cur)?;
        let n = &self.queues[q];
        if q == cur || n.group != c.group || !n.sync || n.seeky() {
            return None;
        }
        if (n.class == Class::Rt) != (c.class == Class::Rt) {
            return None;
        }
        Some(q)
    }

    /// `cfq_setup_merge`: schedule the queue with fewer processes to merge into the other.
    pub(super) fn setup_merge(&mut self, q: QId, new: QId) {
        let mut new = new;
        if self.queues[new].refs == 0 {
            return;
        }
        while let Some(next) = self.queues[new].new_cfqq {
            if next == q {
                return;
            }
            new = next;
        }
        let (pr, npr) = (self.queues[q].refs, self.queues[new].refs);
        if pr == 0 || npr == 0 {
            return;
        }
        if npr >= pr {
            self.queues[q].new_cfqq = Some(new);
            self.queues[new].refs += pr;
        } else {
            self.queues[new].new_cfqq = Some(q);
            self.queues[q].refs += npr;
        }
    }

    /// `cfq_put_cooperator`: drop the references a pending merge took. The walk ends: a
    /// chain of `new_cfqq` links never loops (`setup_merge` only links a queue with no
    /// `new_cfqq` of its own, and never to a chain that leads back to it); the kernel's
    /// check for a link back to `q` is kept.
    pub(super) fn put_cooperator(&mut self, q: QId) {
        let mut cur = self.queues[q].new_cfqq;
        while let Some(n) = cur {
            if n == q {
                break;
            }
            self.queues[n].refs = self.queues[n].refs.saturating_sub(1);
            cur = self.queues[n].new_cfqq;
        }
    }
}
