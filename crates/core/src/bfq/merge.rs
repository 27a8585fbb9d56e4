//! Queue merging of cooperating processes: processes whose requests, each non-sequential,
//! are sequential together (interleaved readers of one file, QEMU I/O threads) get one shared
//! queue, found through a per-group tree of queues sorted by the sector of their next request
//! (`bfq_setup_cooperator`), at a request's insertion and at a bio's merge attempt
//! (`bfq_allow_bio_merge`). A queue may be merged only within `merge_window_ms` (100 ms) of
//! its first service after it last became busy (`bfq_too_late_for_merging`, the commit of
//! shared/seeds/002); never across groups or classes, never async or seeky queues. A shared
//! queue found seeky is split on its processes' next requests. Queues created within 180 ms
//! of each other in one group with one priority are "stably" merged 600 ms after creation,
//! unless the new one is sequential and I/O bound; stably merged queues are never split. The
//! candidate is the group's last created queue, or the shared queue it merged into, until a
//! process lets go of it.

use crate::request::CtxId;

use super::pos_tree::Lookup;
use super::weight_raising::RT_MAX_TIME;
use super::{Bfq, Tick, MS, PAST};

/// Queues whose next requests are this close (sectors) may cooperate.
const CLOSE_THR: u64 = 8 * 1024;
/// Stable merge: creation window to the last created queue (the burst interval).
const STABLE_CREATION_WINDOW: Tick = 180 * MS;
/// Stable merge: queues created this long apart start a new candidate.
const ACTIVATION_STABLE_MERGING: Tick = 600 * MS;
/// Stable merge: performed this long after creation (and after a split).
const LATE_STABLE_MERGING: Tick = 600 * MS;

/// Per-process queue state saved on merge and restored on split.
#[derive(Clone, Debug)]
pub(crate) struct Saved {
    ttime: (u64, u64, u64, Tick),
    has_short_ttime: bool,
    io_bound: bool,
    io_start_time: Tick,
    tot_idle_time: Tick,
    wr_coeff: u64,
    wr_start_at_switch_to_srt: Tick,
    last_wr_start_finish: Tick,
    wr_cur_max_time: Tick,
    /// The injection state (`last_serv_time_ns`, `inject_limit`, `decrease_time_jif`).
    inject: (u64, u32, Tick),
}

impl Bfq {
    /// The 100 ms rule: `q` has been served since it last became busy, and its first service
    /// then lies more than the merge window in the past.
    pub(super) fn too_late_for_merging(&self, q: usize, t: Tick) -> bool {
        let w = self.cfg.merge_window.0 as Tick;
        let qq = &self.queues[q];
        w > 0 && qq.service_from_backlogged > 0 && t > qq.first_io_time + w
    }

    /// Take `q` out of its group's position tree.
    pub(super) fn pos_tree_remove(&mut self, q: usize) {
        if let Some(k) = self.queues[q].pos_key.take() {
            let g = self.queues[q].group.0 as usize;
            self.groups[g].pos_tree.remove(k);
        }
    }

    /// Re-file `q` in the position tree under its next request's sector (not once it is too
    /// late for merging, nor idle-class or empty queues; not if another queue's next request
    /// starts at that sector).
    pub(super) fn pos_tree_add_move(&mut self, q: usize, t: Tick) {
        if !self.cfg.queue_merging {
            return;
        }
        self.pos_tree_remove(q);
        if self.too_late_for_merging(q, t) || self.queues[q].class_idle() {
            return;
        }
        let Some(sector) = self.queues[q].next().map(|r| r.sector) else {
            return;
        };
        let g = self.queues[q].group.0 as usize;
        if self.groups[g].pos_tree.insert(sector, q) {
            self.queues[q].pos_key = Some(sector);
        }
    }

    /// The queue whose next request is close to `sector`, as `bfqq_find_close` and
    /// `bfq_find_close_cooperator` find it: a queue at `sector` itself, else the last node
    /// of the search path if close, else its one neighbour towards `sector` if close; `q`
    /// itself found that way means none.
    fn find_close(&self, q: usize, sector: u64) -> Option<usize> {
        let tree = &self.groups[self.queues[q].group.0 as usize].pos_tree;
        let found = match tree.lookup(sector) {
            Lookup::Found(x) => Some(x),
            Lookup::Parent(None) => None,
            Lookup::Parent(Some((key, x))) => {
                let close = |k: u64| k.abs_diff(sector) <= CLOSE_THR;
                if close(key) {
                    Some(x)
                } else {
                    let neighbour = if key < sector {
                        tree.next_after(key)
                    } else {
                        tree.prev_before(key)
                    };
                    neighbour.filter(|&(k, _)| close(k)).map(|(_, x)| x)
                }
            }
        };
        found.filter(|&x| x != q)
    }

    pub(super) fn may_be_close_cooperator(&self, q: usize, n: usize, t: Tick) -> bool {
        let (a, b) = (&self.queues[q], &self.queues[n]);
        !self.too_late_for_merging(n, t)
            && !a.class_idle()
            && !b.class_idle()
            && a.class == b.class
            && !a.seeky()
            && !b.seeky()
            && a.sync
            && b.sync
    }

    /// Schedule the redirection of `q`'s processes to `n` (or to the end of `n`'s chain).
    pub(super) fn setup_merge(&mut self, q: usize, n: usize) -> Option<usize> {
        if self.queues[n].proc_refs == 0 {
            return None;
        }
        let mut n = n;
        while let Some(x) = self.queues[n].new_queue {
            if x == q {
                return None;
            }
            n = x;
        }
        if n == q || self.queues[q].proc_refs == 0 || self.queues[n].proc_refs == 0 {
            return None;
        }
        if self.queues[q].group != self.queues[n].group {
            return None;
        }
        self.queues[q].new_queue = Some(n);
        self.queues[n].proc_refs += self.queues[q].proc_refs;
        Some(n)
    }

    /// Find a queue to merge `q` with for request `rq` (`bfq_setup_cooperator`).
    pub(super) fn setup_cooperator(
        &mut self,
        q: usize,
        rq: Option<&crate::request::Request>,
        t: Tick,
    ) -> Option<usize> {
        if !self.cfg.queue_merging {
            return None;
        }
        if let Some(mut n) = self.queues[q].new_queue {
            while let Some(x) = self.queues[n].new_queue {
                if x == q {
                    break;
                }
                n = x;
            }
            return Some(n);
        }
        if !self.nonrot_with_queueing {
            if let Some(ctx) = rq.map(|r| r.ctx) {
                let stable = self.bics.get(&ctx).and_then(|b| b.stable_merge_q);
                let qq = &self.queues[q];
                if let Some(s) = stable {
                    if qq.sync
                        && !qq.just_created
                        && t > qq.split_time + LATE_STABLE_MERGING
                        && t > qq.creation_time + LATE_STABLE_MERGING
                    {
                        return self.setup_stable_merge(q, s, ctx);
                    }
                }
            }
        }
        if self.nonrot_with_queueing || self.too_late_for_merging(q, t) {
            return None;
        }
        let rq = rq?;
        if self.tot_busy() == 1 {
            return None;
        }
        if let Some(is) = self.in_service {
            if is != q
                && rq.sector.abs_diff(self.in_serv_last_pos) <= CLOSE_THR
                && self.queues[q].group == self.queues[is].group
                && self.may_be_close_cooperator(q, is, t)
            {
                if let Some(n) = self.setup_merge(q, is) {
                    return Some(n);
                }
            }
        }
        let n = self.find_close(q, rq.sector)?;
        if self.may_be_close_cooperator(q, n, t) {
            return self.setup_merge(q, n);
        }
        None
    }

    /// Whether queued request `r` is one `elv_merge` offers bio `bio` to the elevator's
    /// `allow_merge` for and `bfq_allow_bio_merge` gets past its first test with: mergeable
    /// together (`blk_rq_merge_ok`: the same operation, I/O priority and cgroup) and not a
    /// sync bio into an async request.
    fn merge_candidate(r: &crate::request::Request, bio: &crate::request::Request) -> bool {
        r.op == bio.op
            && r.prio == bio.prio
            && r.group == bio.group
            && (!bio.is_sync() || r.is_sync())
    }

    /// The early queue merge of a bio's merge attempt (`bfq_bio_merge` -> `elv_merge` ->
    /// `bfq_allow_bio_merge`, 6.18): for each merge candidate `elv_merge` tries (the one-hit
    /// `q->last_merge`, a request of any queue ending where the bio starts, one of the
    /// bio's queue starting where it ends) that passes `blk_rq_merge_ok`, the kernel runs
    /// `bfq_setup_cooperator` for the bio's sync queue at the bio's sector and redirects
    /// the process to the queue found (`bfq_merge_bfqqs`), whether the bio then merges or
    /// not, before its request is allocated. Ours runs it once if any candidate passes.
    pub(super) fn early_queue_merge(&mut self, bio: &crate::request::Request, t: Tick) {
        if !self.cfg.queue_merging || !bio.is_sync() {
            return;
        }
        let Some(q) = self.bics.get(&bio.ctx).and_then(|b| b.sync_q) else {
            return;
        };
        let queued = |x: usize| self.queues[x].sort.values();
        let last = self.last_merge.and_then(|id| {
            let &(x, ..) = self.rq_queue.get(&id)?;
            queued(x).find(|r| r.id.0 == id)
        });
        let candidate = last.is_some_and(|r| Self::merge_candidate(r, bio))
            || (0..self.queues.len())
                .flat_map(queued)
                .any(|r| r.end() == bio.sector && Self::merge_candidate(r, bio))
            || queued(q).any(|r| r.sector == bio.end() && Self::merge_candidate(r, bio));
        if !candidate {
            return;
        }
        if let Some(n) = self.setup_cooperator(q, Some(bio), t) {
            if self.bics[&bio.ctx].sync_q == Some(q) {
                self.merge_bfqqs(bio.ctx, q, n, t);
            }
        }
    }

    fn setup_stable_merge(&mut self, q: usize, s: usize, ctx: CtxId) -> Option<usize> {
        let proc_ref = self.queues[q].proc_refs.min(self.queues[s].proc_refs);
        self.bics.get_mut(&ctx).expect("bic").stable_merge_q = None;
        if self.idling_boosts_thr_without_issues(q) || proc_ref == 0 {
            return None;
        }
        let n = self.setup_merge(q, s)?;
        self.bics.get_mut(&ctx).expect("bic").stably_merged = true;
        if let Some(other) = self.queues[n].bic {
            if let Some(b) = self.bics.get_mut(&other) {
                b.stably_merged = true;
            }
        }
        Some(n)
    }

    pub(super) fn save_state(&mut self, q: usize, t: Tick) {
        let Some(ctx) = self.queues[q].bic else {
            return;
        };
        let qq = &self.queues[q];
        let fresh = qq.just_created && !qq.in_large_burst && self.cfg.low_latency;
        let d = self.wr_duration();
        let saved = Saved {
            ttime: (
                qq.ttime_samples,
                qq.ttime_total,
                qq.ttime_mean,
                qq.last_end_request,
            ),
            has_short_ttime: qq.has_short_ttime,
            io_bound: qq.io_bound,
            io_start_time: qq.io_start_time,
            tot_idle_time: qq.tot_idle_time,
            wr_coeff: if fresh {
                super::weight_raising::WR_COEFF
            } else {
                qq.wr_coeff
            },
            wr_start_at_switch_to_srt: if fresh {
                PAST
            } else {
                qq.wr_start_at_switch_to_srt
            },
            last_wr_start_finish: if fresh { t } else { qq.last_wr_start_finish },
            wr_cur_max_time: if fresh { d } else { qq.wr_cur_max_time },
            inject: (qq.last_serv_time, qq.inject_limit, qq.decrease_time),
        };
        let (in_large, in_list) = (qq.in_large_burst, qq.in_burst_list);
        let bic = self.bics.get_mut(&ctx).expect("bic");
        bic.saved = Some(saved);
        bic.saved_in_large_burst = in_large;
        bic.was_in_burst_list = in_list;
    }

    /// Redirect process `ctx` from `q` to the shared queue `n` (`bfq_merge_bfqqs`).
    pub(super) fn merge_bfqqs(&mut self, ctx: CtxId, q: usize, n: usize, t: Tick) {
        self.save_state(q, t);
        self.save_state(n, t);
        if self.queues[q].io_bound {
            self.queues[n].io_bound = true;
        }
        self.queues[q].io_bound = false;
        // The merged processes are happy to let `q`'s waker inject while they have no I/O:
        // `n` inherits it unless it has one (6.18; "make shared queues inherit
        // wakers").
        if let Some(w) = self.queues[q].waker.filter(|&w| w != n) {
            if self.queues[n].waker.is_none() {
                self.inherit_waker(n, w);
            }
        }
        if self.queues[n].wr_coeff == 1 && self.queues[q].wr_coeff > 1 {
            let (c, m, s, a) = {
                let qq = &self.queues[q];
                (
                    qq.wr_coeff,
                    qq.wr_cur_max_time,
                    qq.last_wr_start_finish,
                    qq.wr_start_at_switch_to_srt,
                )
            };
            let nn = &mut self.queues[n];
            nn.wr_coeff = c;
            nn.wr_cur_max_time = m;
            nn.last_wr_start_finish = s;
            nn.wr_start_at_switch_to_srt = a;
            if nn.busy {
                self.wr_busy_queues += 1;
            }
            if self.in_service != Some(n) {
                self.apply_weight(n);
            }
        }
        if self.queues[q].wr_coeff > 1 {
            self.queues[q].wr_coeff = 1;
            if self.queues[q].busy {
                self.wr_busy_queues -= 1;
            }
            if self.in_service != Some(q) {
                self.apply_weight(q);
            }
        }
        self.bics.get_mut(&ctx).expect("bic").sync_q = Some(n);
        self.queues[n].coop = true;
        self.queues[n].bic = None;
        self.queues[q].bic = None;
        self.reassign_last_created(q, Some(n));
        self.release_process_ref(q, t);
    }

    /// Detach process `ctx` from the shared queue `q`. Returns `q` if it was the last user.
    pub(super) fn split_bfqq(&mut self, ctx: CtxId, q: usize, t: Tick) -> Option<usize> {
        if self.queues[q].proc_refs == 1 {
            self.queues[q].coop = false;
            self.queues[q].split_coop = false;
            return Some(q);
        }
        self.bics.get_mut(&ctx).expect("bic").sync_q = None;
        self.put_cooperator(q);
        self.release_process_ref(q, t);
        None
    }

    /// Drop the references a scheduled merge took on `q`'s merge chain.
    pub(super) fn put_cooperator(&mut self, q: usize) {
        let mut cur = self.queues[q].new_queue;
        while let Some(x) = cur {
            if x == q {
                break;
            }
            self.queues[x].proc_refs = self.queues[x].proc_refs.saturating_sub(1);
            cur = self.queues[x].new_queue;
        }
    }

    /// A queue created again for a process split from a shared queue.
    pub(super) fn mark_split_queue(&mut self, q: usize, ctx: CtxId, t: Tick) {
        let bic = &self.bics[&ctx];
        if (bic.was_in_burst_list && self.burst.large) || bic.saved_in_large_burst {
            self.queues[q].in_large_burst = true;
        } else {
            self.queues[q].in_large_burst = false;
            if bic.was_in_burst_list {
                self.burst.list.push(q);
                self.queues[q].in_burst_list = true;
            }
        }
        self.queues[q].split_time = t;
    }

    /// Restore the per-process state saved at merge time into the split queue `q`.
    pub(super) fn resume_state(&mut self, q: usize, ctx: CtxId, already_existing: bool, t: Tick) {
        let Some(s) = self.bics.get(&ctx).and_then(|b| b.saved.clone()) else {
            return;
        };
        let busy = already_existing && self.queues[q].busy;
        let old_wr = self.queues[q].wr_coeff;
        let d = self.wr_duration();
        let qq = &mut self.queues[q];
        qq.has_short_ttime = s.has_short_ttime;
        qq.io_bound = s.io_bound;
        qq.io_start_time = s.io_start_time;
        qq.tot_idle_time = s.tot_idle_time;
        (
            qq.ttime_samples,
            qq.ttime_total,
            qq.ttime_mean,
            qq.last_end_request,
        ) = s.ttime;
        qq.wr_coeff = s.wr_coeff;
        qq.wr_start_at_switch_to_srt = s.wr_start_at_switch_to_srt;
        qq.last_wr_start_finish = s.last_wr_start_finish;
        qq.wr_cur_max_time = s.wr_cur_max_time;
        (qq.last_serv_time, qq.inject_limit, qq.decrease_time) = s.inject;
        if qq.wr_coeff > 1
            && (qq.in_large_burst || t > qq.last_wr_start_finish + qq.wr_cur_max_time)
        {
            if qq.wr_cur_max_time == RT_MAX_TIME
                && !qq.in_large_burst
                && t <= qq.wr_start_at_switch_to_srt + d
            {
                qq.wr_coeff = super::weight_raising::WR_COEFF;
                qq.wr_cur_max_time = d;
                qq.last_wr_start_finish = qq.wr_start_at_switch_to_srt;
            } else {
                qq.wr_coeff = 1;
            }
        }
        let new_wr = qq.wr_coeff;
        if busy {
            if old_wr == 1 && new_wr > 1 {
                self.wr_busy_queues += 1;
            } else if old_wr > 1 && new_wr == 1 {
                self.wr_busy_queues -= 1;
            }
        }
        if self.in_service != Some(q) && !self.wf_active(q) {
            self.apply_weight(q);
        }
    }

    fn wf_active(&self, q: usize) -> bool {
        self.wf.entities[self.queues[q].eid].tree == super::wf2q::Tree::Active
    }

    /// `bfq_reassign_last_bfqq`: if `q` is its group's stable-merge candidate (the last queue
    /// created), the candidate becomes `to` (the shared queue `q` merges into, or none when a
    /// process lets go of `q`).
    pub(super) fn reassign_last_created(&mut self, q: usize, to: Option<usize>) {
        let g = self.queues[q].group.0 as usize;
        if self.groups[g].last_created == Some(q) {
            self.groups[g].last_created = to;
        }
    }

    /// A new sync queue: start a stable-merge candidate, or schedule a stable merge with the
    /// last queue created shortly before in the same group with the same priority.
    pub(super) fn do_or_sched_stable_merge(&mut self, q: usize, ctx: CtxId, t: Tick) -> usize {
        if !self.cfg.queue_merging {
            return q;
        }
        let g = self.queues[q].group.0 as usize;
        let last = self.groups[g].last_created;
        let fresh_candidate = match last {
            None => true,
            Some(l) => {
                let (lq, qq) = (&self.queues[l], &self.queues[q]);
                lq.creation_time + ACTIVATION_STABLE_MERGING < qq.creation_time
                    || lq.group != qq.group
                    || lq.level != qq.level
                    || lq.class != qq.class
            }
        };
        if fresh_candidate {
            self.groups[g].last_created = Some(q);
            return q;
        }
        let l = last.expect("a candidate");
        if self.queues[l].creation_time + STABLE_CREATION_WINDOW >= t {
            if self.nonrot_with_queueing {
                // bfq_do_early_stable_merge: merged at once, and both processes are marked
                // stably merged, so bfq_get_bfqq_handle_split never splits the shared queue.
                if let Some(n) = self.setup_merge(q, l) {
                    if let Some(other) = self.queues[n].bic {
                        if let Some(b) = self.bics.get_mut(&other) {
                            b.stably_merged = true;
                        }
                    }
                    self.bics.get_mut(&ctx).expect("bic").stably_merged = true;
                    self.merge_bfqqs(ctx, q, n, t);
                    return n;
                }
            } else {
                self.bics.get_mut(&ctx).expect("bic").stable_merge_q = Some(l);
            }
        }
        q
    }
}
