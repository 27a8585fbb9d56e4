//! Groups (cgroups) for BFQ: one group entity per group with its own service trees,
//! weight 1..=1000 (default 100), the async queues and the position tree of each group, and
//! the count of groups with pending I/O that makes a scenario asymmetric.

use crate::group::GroupTree;
use crate::request::{IoClass, IoPrio};
use crate::tunable::TunableError;

use super::pos_tree::PosTree;
use super::wf2q::Wf2q;
use super::{Bfq, Expire, Tick};
use crate::{CtxId, GroupId};

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

    /// `bfq_bic_update_cgroup`: a process's request whose bio belongs to another group than
    /// its last one's (blk-throttle's dispatch work resubmits each group's throttled bios from
    /// one kworker; a process moved between cgroups). `__bfq_bic_change_cgroup`: its async
    /// queue, another group's, is dropped (the group's own is taken next); its sync queue is
    /// moved to the group if no other process shares it (`bfq_sync_bfqq_move` ->
    /// `bfq_bfqq_move`), else, when any queue of its merge chain is another group's, the
    /// process leaves it (`bfq_put_cooperator`, `bfq_release_process_ref`) and gets a new one.
    pub(super) fn bic_update_group(&mut self, ctx: CtxId, group: GroupId, t: Tick) {
        let Some(bic) = self.bics.get_mut(&ctx) else {
            return;
        };
        let last = bic.group.replace(group);
        if last.is_none_or(|g| g == group) {
            return;
        }
        if let Some(a) = bic.async_q.filter(|&a| self.queues[a].group != group) {
            self.bics.get_mut(&ctx).expect("bic").async_q = None;
            self.release_process_ref(a, t);
        }
        let Some(s) = self.bics[&ctx].sync_q else {
            return;
        };
        if self.queues[s].new_queue.is_none() && !self.queues[s].coop {
            self.move_queue(s, group, t);
            return;
        }
        let mut cur = Some(s);
        let mut other_group = false;
        for _ in 0..self.queues.len() {
            let Some(x) = cur else { break };
            if self.queues[x].group != group {
                other_group = true;
                break;
            }
            cur = self.queues[x].new_queue.filter(|&n| n != x);
        }
        if other_group {
            self.put_cooperator(s);
            self.bics.get_mut(&ctx).expect("bic").sync_q = None;
            self.release_process_ref(s, t);
        }
    }

    /// `bfq_bfqq_move`: put queue `q` under `group`'s scheduling data. In service, it is
    /// expired first (`BFQQE_PREEMPTED`); busy, its entity leaves the old group's trees and
    /// joins the new one's; idle on a tree, it is forgotten there (`bfq_put_idle_entity`). It
    /// stops being its old group's stable-merge candidate (`bfq_reassign_last_bfqq`).
    pub(super) fn move_queue(&mut self, q: usize, group: GroupId, t: Tick) {
        if self.queues[q].group == group {
            return;
        }
        let pending = self.queues[q].in_groups_pending;
        if pending {
            self.del_in_groups_pending(q);
        }
        if self.in_service == Some(q) {
            self.expire(q, false, Expire::Preempted, t);
        }
        let e = self.queues[q].eid;
        let now = self.wf_now(t);
        if self.queues[q].busy {
            self.wf.deactivate_entity(e, false, false, now);
        } else if self.wf.entities[e].on_st {
            self.wf.put_idle_entity(e);
        }
        self.reassign_last_created(q, None);
        // Out of the old group's position tree (`bfq_pos_tree_add_move` removes it from its
        // `pos_root`, the old group's, when it next files it).
        self.pos_tree_remove(q);
        self.wf.entities[e].sd = self.groups[group.0 as usize].sd;
        self.queues[q].group = group;
        if pending {
            self.add_in_groups_pending(q);
        }
        if self.queues[q].busy {
            if !self.nonrot_with_queueing {
                self.pos_tree_add_move(q, t);
            }
            self.activate_queue_entity(q, false, t);
        }
    }
}
