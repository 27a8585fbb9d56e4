//! CFQ groups (`cfq_group`): one per cgroup, with its weight, its seven service trees, its
//! shared async queues, and its place in time on the group service tree.
//!
//! Every busy group sits on one flat group service tree ordered by vdisktime. The hierarchy
//! enters through `vfraction`, the share of the disk a group's own queues are entitled to,
//! compounded from its weight against its active siblings up to the root
//! (`cfq_group_service_tree_add`).

use super::service_tree::{GroupServiceTree, ServiceTree};
use super::stats::TTime;
use super::types::{Class, QId, Workload};
use super::{Cfq, JIFFY, MS};

/// `CFQ_SLICE_MODE_GROUP_DELAY`: a group becoming busy goes this far behind the last group.
pub(super) const SLICE_MODE_GROUP_DELAY: u64 = 200 * MS;
/// `CFQ_IOPS_MODE_GROUP_DELAY` (HZ/5 at HZ=1000).
const IOPS_MODE_GROUP_DELAY: u64 = 200;

/// `CFQ_SERVICE_SHIFT`: vfraction and vdisktime fixed point.
pub(super) const SERVICE_SHIFT: u32 = 12;
/// Smallest blkio.weight (legacy hierarchy, `CFQ_WEIGHT_LEGACY_MIN`).
pub const WEIGHT_MIN: u32 = 10;
/// Largest blkio.weight (`CFQ_WEIGHT_LEGACY_MAX`).
pub const WEIGHT_MAX: u32 = 1000;
/// Default blkio.weight (`CFQ_WEIGHT_LEGACY_DFL`); the root group gets twice this.
pub const WEIGHT_DEFAULT: u32 = 500;

/// The saved workload of a group whose turn ended mid-workload.
#[derive(Clone, Copy, Debug)]
pub(super) struct SavedWorkload {
    pub slice: u64,
    pub class: Class,
    pub workload: Workload,
}

/// One group.
#[derive(Clone, Debug)]
pub(super) struct CfqGroup {
    /// Parent group (index), `None` for the root.
    pub parent: Option<usize>,
    /// Weight against its siblings.
    pub weight: u32,
    /// Weight of its own queues against its child groups.
    pub leaf_weight: u32,
    /// Active entities counted at this node (itself when busy, plus active children).
    pub nr_active: u32,
    /// Sum of the weights of those entities.
    pub children_weight: u32,
    /// Its compounded share, fixed point with `SERVICE_SHIFT`; 0 while inactive.
    pub vfraction: u32,
    /// Virtual disk time: service received divided by share.
    pub vdisktime: u64,
    /// Sequence number of its entry on the group tree, while it is there.
    pub tree_seq: Option<u64>,
    /// Busy queues of this group (on its service trees).
    pub nr_cfqq: u32,
    /// Averaged busy queue counts per class [BE, RT] (`busy_queues_avg`).
    pub busy_queues_avg: [u32; 2],
    /// Service trees: [RT, BE] x [async, sync-noidle, sync].
    pub trees: [[ServiceTree; 3]; 2],
    /// The idle class's tree.
    pub idle_tree: ServiceTree,
    /// The workload it was serving when its turn ended, if time was left.
    pub saved: Option<SavedWorkload>,
    /// Requests of this group dispatched and not completed.
    pub dispatched: u32,
    /// Think time of the group as a whole (for group idling).
    pub ttime: TTime,
    /// Shared async queues: [RT, BE] x level.
    pub async_queues: [[Option<QId>; 8]; 2],
    /// The idle class's async queue.
    pub async_idle: Option<QId>,
}

impl CfqGroup {
    /// A group with `weight` (used for both weights, as the kernel initialises them).
    pub fn new(parent: Option<usize>, weight: u32, now: u64) -> CfqGroup {
        CfqGroup {
            parent,
            weight,
            leaf_weight: weight,
            nr_active: 0,
            children_weight: 0,
            vfraction: 0,
            vdisktime: 0,
            tree_seq: None,
            nr_cfqq: 0,
            busy_queues_avg: [0, 0],
            trees: Default::default(),
            idle_tree: ServiceTree::default(),
            saved: None,
            dispatched: 0,
            ttime: TTime::new(now),
            async_queues: [[None; 8]; 2],
            async_idle: None,
        }
    }

    /// The tree for `class` and `workload`.
    pub fn tree(&self, class: Class, workload: Workload) -> &ServiceTree {
        match class {
            Class::Rt => &self.trees[0][workload as usize],
            Class::Be => &self.trees[1][workload as usize],
            Class::Idle => &self.idle_tree,
        }
    }

    /// The tree for `class` and `workload`, mutably.
    pub fn tree_mut(&mut self, class: Class, workload: Workload) -> &mut ServiceTree {
        match class {
            Class::Rt => &mut self.trees[0][workload as usize],
            Class::Be => &mut self.trees[1][workload as usize],
            Class::Idle => &mut self.idle_tree,
        }
    }

    /// Busy queues of `class` (`cfq_group_busy_queues_wl`).
    pub fn busy_in_class(&self, class: Class) -> u32 {
        match class {
            Class::Idle => self.idle_tree.count() as u32,
            _ => Workload::ALL
                .iter()
                .map(|&w| self.tree(class, w).count() as u32)
                .sum(),
        }
    }

    /// Busy async queues (`cfqg_busy_async_queues`).
    pub fn busy_async(&self) -> u32 {
        (self.trees[0][0].count() + self.trees[1][0].count()) as u32
    }
}

/// Put group `g` on the group tree at its vdisktime and activate it up the hierarchy,
/// computing its vfraction (`cfq_group_service_tree_add`).
pub(super) fn activate(groups: &mut [CfqGroup], st: &mut GroupServiceTree, g: usize, seq: u64) {
    debug_assert!(groups[g].tree_seq.is_none());
    st.insert(groups[g].vdisktime, seq, g);
    groups[g].tree_seq = Some(seq);

    let mut vfr: u64 = 1 << SERVICE_SHIFT;
    let mut propagate = groups[g].nr_active == 0;
    groups[g].nr_active += 1;
    groups[g].children_weight += groups[g].leaf_weight;
    vfr = vfr * u64::from(groups[g].leaf_weight) / u64::from(groups[g].children_weight);

    let mut pos = g;
    while let Some(parent) = groups[pos].parent {
        if propagate {
            propagate = groups[parent].nr_active == 0;
            groups[parent].nr_active += 1;
            groups[parent].children_weight += groups[pos].weight;
        }
        vfr = vfr * u64::from(groups[pos].weight) / u64::from(groups[parent].children_weight);
        pos = parent;
    }
    groups[g].vfraction = (vfr as u32).max(1);
}

/// Undo [`activate`] and take `g` off the group tree (`cfq_group_service_tree_del`).
pub(super) fn deactivate(groups: &mut [CfqGroup], st: &mut GroupServiceTree, g: usize) {
    groups[g].nr_active -= 1;
    let mut propagate = groups[g].nr_active == 0;
    groups[g].children_weight -= groups[g].leaf_weight;
    let mut pos = g;
    while propagate {
        groups[pos].vfraction = 0;
        let Some(parent) = groups[pos].parent else {
            break;
        };
        groups[parent].nr_active -= 1;
        propagate = groups[parent].nr_active == 0;
        groups[parent].children_weight -= groups[pos].weight;
        pos = parent;
    }
    if let Some(seq) = groups[g].tree_seq.take() {
        st.remove(groups[g].vdisktime, seq, g);
    }
}

/// `cfqg_scale_charge`: service `charge` divided by the share `vfraction`, in vdisktime units.
pub(super) fn scale_charge(charge: u64, vfraction: u32) -> u64 {
    let c = u128::from(charge) << (2 * SERVICE_SHIFT);
    (c / u128::from(vfraction.max(1))) as u64
}

impl Cfq {
    pub(super) fn group_notify_queue_add(&mut self, g: usize) {
        self.groups[g].nr_cfqq += 1;
        if self.groups[g].tree_seq.is_some() {
            return;
        }
        self.groups[g].vdisktime = match self.grp_st.last_vdisktime() {
            Some(v) => {
                v + if self.iops_mode() {
                    IOPS_MODE_GROUP_DELAY
                } else {
                    SLICE_MODE_GROUP_DELAY
                }
            }
            None => self.grp_st.min_vdisktime,
        };
        let seq = self.next_seq();
        activate(&mut self.groups, &mut self.grp_st, g, seq);
    }

    pub(super) fn group_notify_queue_del(&mut self, g: usize) {
        self.groups[g].nr_cfqq -= 1;
        if self.groups[g].nr_cfqq > 0 {
            return;
        }
        deactivate(&mut self.groups, &mut self.grp_st, g);
        self.groups[g].saved = None;
    }

    /// `cfq_cfqq_slice_usage`.
    pub(super) fn slice_usage(&self, q: QId, now: u64) -> u64 {
        let cq = &self.queues[q];
        match cq.slice_start {
            Some(start) if start != now => (now - start).min(cq.allocated_slice),
            _ => now.saturating_sub(cq.dispatch_start).max(JIFFY),
        }
    }

    /// `cfq_group_served`: charge the group for the slice its queue just used.
    pub(super) fn group_served(&mut self, g: usize, q: QId, now: u64) {
        let grp = &self.groups[g];
        let nr_sync = grp.nr_cfqq - grp.busy_async() - grp.idle_tree.count() as u32;
        let mut charge = self.slice_usage(q, now);
        if self.iops_mode() {
            charge = u64::from(self.queues[q].slice_dispatch);
        } else if !self.queues[q].sync && nr_sync == 0 {
            charge = self.queues[q].allocated_slice;
        }
        if self.groups[g].tree_seq.is_some() {
            let vfr = self.groups[g].vfraction;
            deactivate(&mut self.groups, &mut self.grp_st, g);
            self.groups[g].vdisktime += scale_charge(charge, vfr);
            let seq = self.next_seq();
            activate(&mut self.groups, &mut self.grp_st, g, seq);
        }
        if self.workload_expires > now as i64 {
            self.groups[g].saved = Some(SavedWorkload {
                slice: (self.workload_expires - now as i64) as u64,
                class: self.serving_class,
                workload: self.serving_type,
            });
        } else {
            self.groups[g].saved = None;
        }
    }
}
