//! Service trees (`cfq_rb_root`): queues of one group, class and workload ordered by the time
//! they should next be served; and the tree of groups ordered by virtual disk time.

use std::collections::BTreeSet;

use super::queue::{Class, QId, TTime};

/// The workload type of a queue (`wl_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Workload {
    /// Async (writeback) queues.
    Async = 0,
    /// Sync queues that do not idle (seeky or thinking too long).
    SyncNoidle = 1,
    /// Sync queues that idle between requests.
    Sync = 2,
}

impl Workload {
    /// All three, in the kernel's index order.
    pub const ALL: [Workload; 3] = [Workload::Async, Workload::SyncNoidle, Workload::Sync];
}

/// Which of a group's seven trees: (group, class, workload). The idle class has one tree,
/// whose workload is always `Async` here.
pub(super) type StKey = (usize, Class, Workload);

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
