//! Groups (cgroups) for BFQ: one group entity per group with its own service trees,
//! weight 1..=1000 (default 100), the async queues and the position tree of each group, and
//! the count of groups with pending I/O that makes a scenario asymmetric.

use crate::group::GroupTree;
use crate::request::{IoClass, IoPrio};
use crate::tunable::TunableError;

use super::pos_tree::PosTree;
use super::wf2q::Wf2q;
use super::Bfq;

/// Default group weight (io.bfq.weight).
pub const DEFAULT_GROUP_WEIGHT: u32 = 100;
/// Smallest and largest group weights.
pub const GROUP_WEIGHT_RANGE: (u32, u32) = (1, 1000);
/// Async queue slots per group: 8 RT levels, 8 BE levels, one idle.
const ASYNC_SLOTS: usize = 17;

/// One group's BFQ state.
#[derive(Clone, Debug)]
pub(super) struct GroupState {
    /// Its scheduling data.
    pub sd: usize,
    /// Async queues by priority slot.
    pub async_q: [Option<usize>; ASYNC_SLOTS],
    /// Queues by the sector of their next request, for finding cooperators.
    pub pos_tree: PosTree,
    /// Its queues with pending (queued or in-flight) requests.
    pub queues_pending: u32,
    /// The last sync queue created here: the stable-merge candidate.
    pub last_created: Option<usize>,
}

/// Build the BFQ groups from the run's tree; parents come before children in its ids.
pub(super) fn build(wf: &mut Wf2q, tree: &GroupTree) -> Result<Vec<GroupState>, TunableError> {
    let mut out: Vec<GroupState> = Vec::with_capacity(tree.len());
    for id in tree.ids() {
        let g = tree.get(id);
        let sd = match g.parent {
            None => 0,
            Some(p) => {
                let w = g.io.bfq_weight.or(g.weight).unwrap_or(DEFAULT_GROUP_WEIGHT);
                if !(GROUP_WEIGHT_RANGE.0..=GROUP_WEIGHT_RANGE.1).contains(&w) {
                    return Err(TunableError::Invalid {
                        reason: format!(
                            "bfq: group {} has weight {w}; bfq accepts {}..={}",
                            g.path, GROUP_WEIGHT_RANGE.0, GROUP_WEIGHT_RANGE.1
                        ),
                    });
                }
                wf.add_group(out[p.0 as usize].sd, u64::from(w)).1
            }
        };
        out.push(GroupState {
            sd,
            async_q: [None; ASYNC_SLOTS],
            pos_tree: PosTree::default(),
            queues_pending: 0,
            last_created: None,
        });
    }
    Ok(out)
}

/// The async-queue slot for a priority.
pub(super) fn async_slot(prio: IoPrio) -> usize {
    match prio.class {
        IoClass::RealTime => usize::from(prio.level.min(7)),
        IoClass::BestEffort => 8 + usize::from(prio.level.min(7)),
        IoClass::Idle => 16,
    }
}

impl Bfq {
    /// `q` now has pending I/O: count its group.
    pub(super) fn add_in_groups_pending(&mut self, q: usize) {
        if self.queues[q].in_groups_pending {
            return;
        }
        self.queues[q].in_groups_pending = true;
        let g = &mut self.groups[self.queues[q].group.0 as usize];
        g.queues_pending += 1;
        if g.queues_pending == 1 {
            self.num_groups_with_pending += 1;
        }
    }

    /// `q` has no pending I/O any more.
    pub(super) fn del_in_groups_pending(&mut self, q: usize) {
        if !self.queues[q].in_groups_pending {
            return;
        }
        self.queues[q].in_groups_pending = false;
        let g = &mut self.groups[self.queues[q].group.0 as usize];
        g.queues_pending -= 1;
        if g.queues_pending == 0 {
            self.num_groups_with_pending -= 1;
        }
    }
}
