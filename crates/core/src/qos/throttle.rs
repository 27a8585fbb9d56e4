//! blk-throttle (`io.max`): per-group read and write limits in bytes and I/Os per second.
//!
//! Follows Linux **v6.18** block/blk-throttle.c (the kernel this project's VM runs; the split
//! bps/iops queues of v6.16 and the trimming that keeps one slice, v6.13), on the default
//! (cgroup v2) hierarchy. See docs/io-control.md.
//!
//! What it does, in the kernel's words:
//!
//! - Each group (`throtl_grp`, here a node) has a limit per direction (`bps[rw]`, `iops[rw]`;
//!   `None` is `max`) and counts what it let through in the current slice (`bytes_disp`,
//!   `io_disp`) from `slice_start`. A bio may pass when the bytes (I/Os) allowed since the slice
//!   began, with the elapsed time rounded up to a whole slice (`tg_within_bps_limit`,
//!   `tg_within_iops_limit`), cover what was dispatched plus this bio; otherwise it waits the
//!   time the excess takes at the limit. A slice is `DFL_THROTL_SLICE` = HZ/10 jiffies
//!   (100 ms). `throtl_trim_slice` drops whole slices older than one slice from the count as
//!   bios go through, so idle time is not saved up beyond that.
//! - Hierarchy: a bio passes its own group, then its parent's, and so on up to the device
//!   (`__blk_throtl_bio` climbs while each level admits it, charging each level). The root
//!   group has no limits (`tg_bps_limit` answers max for it on cgroup v2).
//! - Queues: a bio over a limit is queued at the level that refused it, FIFO per direction,
//!   behind anything already queued there. Each group's queue is a round-robin of qnodes, one
//!   per source (itself, each child), so one child cannot fill its parent's queue
//!   (`throtl_qnode`). Since v6.16 a qnode holds two lists: bios still to pass the bps limit
//!   and bios that passed it and wait for the iops limit.
//! - Dispatch: each queue's group has a dispatch time (`tg_update_disptime`: when its first
//!   read or write may go), kept in its parent's pending tree; the parent's `pending_timer`
//!   fires at the earliest one (`throtl_schedule_next_dispatch`, never more than 8 slices
//!   ahead) and `throtl_select_dispatch` moves bios up one level: at most
//!   `THROTL_GRP_QUANTUM` (8) bios per group per round, 6 reads and 2 writes
//!   (`throtl_dispatch_tg`), at most `THROTL_QUANTUM` (32) per round. Bios reaching the device
//!   level are issued by the dispatch work (`blk_throtl_dispatch_work_fn`), reads first.
//! - A group with no limit on itself or an ancestor in a direction is not throttled at all
//!   (`blk_should_throtl`, `has_rules_bps` / `has_rules_iops`). REQ_META bios go through even
//!   over the limit and are charged (`bio_issue_as_root_blkg`).
//!
//! Time is kept in jiffies of [`Config::hz`] (CONFIG_HZ; 250 on this VM and by default).
//!
//! Deviations, each named:
//!
//! - I/Os are charged once per bio; the kernel charges each piece of a bio split after it
//!   passed (the remainder comes back with `BIO_BPS_THROTTLED`). Bios here are throttled before
//!   the layer splits them.
//! - Limits are fixed for a run: no `tg_update_carryover` / `tg_conf_updated`.
//! - A timer fires at the start of its jiffy, and one armed for the current jiffy or earlier at
//!   the next (the timer wheel's next tick), without timer slack; the dispatch work runs at once
//!   (no kthrotld queueing delay).
//! - A flush is a zero-byte write bio; a discard counts 512 bytes (as the kernel's
//!   `throtl_bio_data_size`).

use std::collections::{BTreeSet, VecDeque};

use crate::block::{Admit, QosHook};
use crate::group::GroupTree;
use crate::request::{Op, Request};
use crate::time::Nanos;

/// Max bios dispatched from one group in one round (`THROTL_GRP_QUANTUM`).
pub const THROTL_GRP_QUANTUM: u32 = 8;
/// Max bios dispatched from all groups in one round (`THROTL_QUANTUM`).
pub const THROTL_QUANTUM: u32 = 32;

const READ: usize = 0;
const WRITE: usize = 1;

/// blk-throttle's settings beyond the groups' limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// CONFIG_HZ: jiffies per second (100, 250, 300 or 1000). Default 250.
    pub hz: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { hz: 250 }
    }
}

/// A bio in blk-throttle's queues: its key, size and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tb {
    key: u64,
    size: u64,
    /// BIO_BPS_THROTTLED: passed every level (set at the top).
    bps_throttled: bool,
    /// BIO_TG_BPS_THROTTLED: charged for bytes at the current level.
    tg_bps: bool,
    /// REQ_META: issued as the root (`bio_issue_as_root_blkg`).
    meta: bool,
}

/// A qnode's two lists (bios waiting for the bps limit, then for the iops limit).
#[derive(Clone, Debug, Default)]
struct QBios {
    bps: VecDeque<Tb>,
    iops: VecDeque<Tb>,
    /// On its service queue's `queued[rw]` list.
    active: bool,
}

/// A service queue, and (for every node but the device's) the group's `throtl_grp`.
#[derive(Clone, Debug, Default)]
struct Node {
    /// The parent service queue: the device's (0) for the root group, none for the device.
    parent: Option<usize>,
    /// Active qnodes per direction: (owning node, on its parent?).
    queued: [VecDeque<(usize, bool)>; 2],
    nr_queued_bps: [u32; 2],
    nr_queued_iops: [u32; 2],
    /// Children with bios queued, by (dispatch time, arrival, child).
    pending_tree: BTreeSet<(u64, u64, usize)>,
    /// `pending_timer`, in jiffies.
    timer: Option<u64>,
    /// `qnode_on_self[rw]` (index 0) and `qnode_on_parent[rw]` (index 1).
    qn: [[QBios; 2]; 2],
    bps: [Option<u64>; 2],
    iops: [Option<u32>; 2],
    has_rules_bps: [bool; 2],
    has_rules_iops: [bool; 2],
    bytes_disp: [i64; 2],
    io_disp: [i64; 2],
    slice_start: [u64; 2],
    slice_end: [u64; 2],
    disptime: u64,
    /// Its key in the parent's pending tree (THROTL_TG_PENDING).
    pending_key: Option<(u64, u64)>,
    was_empty: bool,
    iops_was_empty: bool,
}

/// blk-throttle over a group tree. See the module documentation.
#[derive(Clone, Debug)]
pub struct Throttle {
    hz: u64,
    slice: u64,
    /// Node 0 is the device (`throtl_data`'s service queue); group `g` is node `g + 1`.
    nodes: Vec<Node>,
    seq: u64,
    ready: VecDeque<u64>,
    work: bool,
    throttled: u64,
}

fn dir(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write | Op::Flush | Op::Discard => WRITE,
    }
}

fn roundup(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

impl Throttle {
    /// blk-throttle with the `io.max` limits of `tree`'s groups.
    pub fn new(tree: &GroupTree, cfg: Config) -> Throttle {
        let hz = cfg.hz.max(10);
        let mut nodes = vec![Node::default()];
        for id in tree.ids() {
            let g = tree.get(id);
            let parent = g.parent.map_or(0, |p| p.0 as usize + 1);
            let mut n = Node {
                parent: Some(parent),
                ..Node::default()
            };
            // cgroup v2: the root group has no limits (tg_bps_limit / tg_iops_limit).
            if g.parent.is_some() {
                n.bps = [g.io.max.rbps, g.io.max.wbps];
                n.iops = [g.io.max.riops, g.io.max.wiops];
            }
            // tg_update_has_rules: the parent is already done (parents come first).
            for rw in [READ, WRITE] {
                let (pb, pi) = if parent == 0 {
                    (false, false)
                } else {
                    let p = &nodes[parent];
                    (p.has_rules_bps[rw], p.has_rules_iops[rw])
                };
                n.has_rules_bps[rw] = pb || n.bps[rw].is_some();
                n.has_rules_iops[rw] = pi || n.iops[rw].is_some();
            }
            nodes.push(n);
        }
        Throttle {
            hz,
            slice: (hz / 10).max(1),
            nodes,
            seq: 0,
            ready: VecDeque::new(),
            work: false,
            throttled: 0,
        }
    }

    /// The slice, jiffies (`DFL_THROTL_SLICE`).
    pub fn slice_jiffies(&self) -> u64 {
        self.slice
    }

    /// Bios queued so far (over a limit when submitted).
    pub fn throttled_bios(&self) -> u64 {
        self.throttled
    }

    /// Bios waiting in the queues now.
    pub fn queued(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| {
                (n.nr_queued_bps[0]
                    + n.nr_queued_bps[1]
                    + n.nr_queued_iops[0]
                    + n.nr_queued_iops[1]) as usize
            })
            .sum::<usize>()
            + self.ready.len()
    }

    fn jiffies(&self, now: Nanos) -> u64 {
        ((u128::from(now.as_ns()) * u128::from(self.hz)) / 1_000_000_000) as u64
    }

    fn jiffy_start(&self, j: u64) -> Nanos {
        Nanos(((u128::from(j) * 1_000_000_000).div_ceil(u128::from(self.hz))) as u64)
    }

    fn sq_queued(&self, i: usize, rw: usize) -> u32 {
        self.nodes[i].nr_queued_bps[rw] + self.nodes[i].nr_queued_iops[rw]
    }

    /// `throtl_slice_used`.
    fn slice_used(&self, i: usize, rw: usize, j: u64) -> bool {
        let n = &self.nodes[i];
        !(n.slice_start[rw] <= j && j <= n.slice_end[rw])
    }

    /// `throtl_start_new_slice`.
    fn start_new_slice(&mut self, i: usize, rw: usize, clear: bool, j: u64) {
        let slice = self.slice;
        let n = &mut self.nodes[i];
        if clear {
            n.bytes_disp[rw] = 0;
            n.io_disp[rw] = 0;
        }
        n.slice_start[rw] = j;
        n.slice_end[rw] = j + slice;
    }

    /// `throtl_start_new_slice_with_credit`.
    fn start_new_slice_with_credit(&mut self, i: usize, rw: usize, start: u64, j: u64) {
        let slice = self.slice;
        let n = &mut self.nodes[i];
        n.bytes_disp[rw] = 0;
        n.io_disp[rw] = 0;
        if start > n.slice_start[rw] {
            n.slice_start[rw] = start;
        }
        n.slice_end[rw] = j + slice;
    }

    /// `throtl_set_slice_end`.
    fn set_slice_end(&mut self, i: usize, rw: usize, end: u64) {
        self.nodes[i].slice_end[rw] = roundup(end, self.slice);
    }

    /// `throtl_extend_slice`.
    fn extend_slice(&mut self, i: usize, rw: usize, end: u64) {
        if self.nodes[i].slice_end[rw] >= end {
            return;
        }
        self.set_slice_end(i, rw, end);
    }

    /// `calculate_io_allowed`, as the kernel's `int` holds it.
    fn io_allowed(&self, iops: u32, elapsed: u64) -> i64 {
        let v = (u128::from(iops) * u128::from(elapsed) / u128::from(self.hz))
            .min(u128::from(u32::MAX));
        i64::from(v as u32 as i32)
    }

    /// `calculate_bytes_allowed`, as the kernel's `long long` holds it (-1 past 2^62).
    fn bytes_allowed(&self, bps: u64, elapsed: u64) -> i64 {
        let v = u128::from(bps) * u128::from(elapsed) / u128::from(self.hz);
        if v > (1u128 << 62) {
            -1
        } else {
            v as i64
        }
    }

    /// `throtl_trim_bps`.
    fn trim_bps(&mut self, i: usize, rw: usize, elapsed: u64) -> i64 {
        let Some(bps) = self.nodes[i].bps[rw] else {
            return 0;
        };
        let mut trim = self.bytes_allowed(bps, elapsed);
        let n = &mut self.nodes[i];
        if trim <= 0 || n.bytes_disp[rw] < trim {
            trim = n.bytes_disp[rw];
            n.bytes_disp[rw] = 0;
        } else {
            n.bytes_disp[rw] -= trim;
        }
        trim
    }

    /// `throtl_trim_iops`.
    fn trim_iops(&mut self, i: usize, rw: usize, elapsed: u64) -> i64 {
        let Some(iops) = self.nodes[i].iops[rw] else {
            return 0;
        };
        let mut trim = self.io_allowed(iops, elapsed);
        let n = &mut self.nodes[i];
        if trim <= 0 || n.io_disp[rw] < trim {
            trim = n.io_disp[rw];
            n.io_disp[rw] = 0;
        } else {
            n.io_disp[rw] -= trim;
        }
        trim
    }

    /// `throtl_trim_slice`: drop whole slices but the last one from the count.
    fn trim_slice(&mut self, i: usize, rw: usize, j: u64) {
        if self.slice_used(i, rw, j) {
            return;
        }
        self.set_slice_end(i, rw, j + self.slice);
        let elapsed = (j - self.nodes[i].slice_start[rw]) / self.slice * self.slice;
        if elapsed < 2 * self.slice {
            return;
        }
        let elapsed = elapsed - self.slice;
        let bytes = self.trim_bps(i, rw, elapsed);
        let ios = self.trim_iops(i, rw, elapsed);
        if bytes == 0 && ios == 0 {
            return;
        }
        self.nodes[i].slice_start[rw] += elapsed;
    }

    /// `tg_within_iops_limit`: jiffies to wait, 0 if the bio may go.
    fn within_iops_limit(&self, i: usize, rw: usize, iops: u32, j: u64) -> u64 {
        let n = &self.nodes[i];
        let elapsed = j - n.slice_start[rw].min(j);
        let rnd = roundup(elapsed + 1, self.slice);
        let allowed = self.io_allowed(iops, rnd);
        // The kernel's `io_disp + 1 <= io_allowed`.
        if allowed > 0 && n.io_disp[rw] < allowed {
            return 0;
        }
        (rnd - elapsed).max(self.hz / u64::from(iops) + 1)
    }

    /// `tg_within_bps_limit`: jiffies to wait, 0 if the bio may go.
    fn within_bps_limit(&self, i: usize, rw: usize, size: u64, bps: u64, j: u64) -> u64 {
        let n = &self.nodes[i];
        let elapsed = j - n.slice_start[rw].min(j);
        let rnd = if elapsed == 0 { self.slice } else { elapsed };
        let rnd = roundup(rnd, self.slice);
        let allowed = self.bytes_allowed(bps, rnd);
        if (allowed > 0 && n.bytes_disp[rw] + size as i64 <= allowed) || allowed < 0 {
            return 0;
        }
        let extra = (n.bytes_disp[rw] + size as i64 - allowed) as u64;
        let wait = ((u128::from(extra) * u128::from(self.hz)) / u128::from(bps)) as u64;
        wait.max(1) + (rnd - elapsed)
    }

    /// `tg_update_slice`.
    fn update_slice(&mut self, i: usize, rw: usize, j: u64) {
        if self.slice_used(i, rw, j) && self.sq_queued(i, rw) == 0 {
            self.start_new_slice(i, rw, true, j);
        } else {
            self.extend_slice(i, rw, j + self.slice);
        }
    }

    /// `tg_dispatch_bps_time`.
    fn dispatch_bps_time(&mut self, i: usize, tb: &Tb, rw: usize, j: u64) -> u64 {
        let Some(bps) = self.nodes[i].bps[rw] else {
            return 0;
        };
        if tb.bps_throttled || tb.tg_bps {
            return 0;
        }
        self.update_slice(i, rw, j);
        let wait = self.within_bps_limit(i, rw, tb.size, bps, j);
        self.extend_slice(i, rw, j + wait);
        wait
    }

    /// `tg_dispatch_iops_time`.
    fn dispatch_iops_time(&mut self, i: usize, rw: usize, j: u64) -> u64 {
        let Some(iops) = self.nodes[i].iops[rw] else {
            return 0;
        };
        self.update_slice(i, rw, j);
        let wait = self.within_iops_limit(i, rw, iops, j);
        self.extend_slice(i, rw, j + wait);
        wait
    }

    /// `tg_dispatch_time`: bps first; a bio within it is charged its bytes, then iops.
    fn dispatch_time(&mut self, i: usize, tb: &mut Tb, rw: usize, j: u64) -> u64 {
        let wait = self.dispatch_bps_time(i, tb, rw, j);
        if wait != 0 {
            return wait;
        }
        self.charge_bps(i, tb, rw);
        self.dispatch_iops_time(i, rw, j)
    }

    /// `throtl_charge_bps_bio`.
    fn charge_bps(&mut self, i: usize, tb: &mut Tb, rw: usize) {
        if !tb.bps_throttled && !tb.tg_bps {
            tb.tg_bps = true;
            self.nodes[i].bytes_disp[rw] += tb.size as i64;
        }
    }

    /// `throtl_charge_iops_bio`.
    fn charge_iops(&mut self, i: usize, tb: &mut Tb, rw: usize) {
        tb.tg_bps = false;
        self.nodes[i].io_disp[rw] += 1;
    }

    /// `throtl_qnode_add_bio`: `tb` joins qnode `qn` = (owner, on its parent) on `sq`.
    fn qnode_add_bio(&mut self, tb: Tb, qn: (usize, bool), sq: usize, rw: usize) {
        let to_iops = tb.tg_bps || tb.bps_throttled;
        let q = &mut self.nodes[qn.0].qn[usize::from(qn.1)][rw];
        if to_iops {
            q.iops.push_back(tb);
        } else {
            q.bps.push_back(tb);
        }
        let newly = !q.active;
        q.active = true;
        let s = &mut self.nodes[sq];
        if to_iops {
            s.nr_queued_iops[rw] += 1;
        } else {
            s.nr_queued_bps[rw] += 1;
        }
        if newly {
            s.queued[rw].push_back(qn);
        }
    }

    /// `throtl_peek_queued`: the first qnode's first bio, iops list first.
    fn peek_queued(&mut self, sq: usize, rw: usize) -> Option<&mut Tb> {
        let &(owner, on_parent) = self.nodes[sq].queued[rw].front()?;
        let q = &mut self.nodes[owner].qn[usize::from(on_parent)][rw];
        if q.iops.is_empty() {
            q.bps.front_mut()
        } else {
            q.iops.front_mut()
        }
    }

    /// `throtl_pop_queued`: pop the first qnode's first bio; the qnode goes to the back.
    fn pop_queued(&mut self, sq: usize, rw: usize) -> Option<Tb> {
        let &(owner, on_parent) = self.nodes[sq].queued[rw].front()?;
        let q = &mut self.nodes[owner].qn[usize::from(on_parent)][rw];
        let (tb, from_iops) = match q.iops.pop_front() {
            Some(tb) => (tb, true),
            None => (
                q.bps.pop_front().expect("an active qnode holds a bio"),
                false,
            ),
        };
        let empty = q.iops.is_empty() && q.bps.is_empty();
        if empty {
            q.active = false;
        }
        let s = &mut self.nodes[sq];
        if from_iops {
            s.nr_queued_iops[rw] -= 1;
        } else {
            s.nr_queued_bps[rw] -= 1;
        }
        let qn = s.queued[rw].pop_front().expect("peeked");
        if !empty {
            s.queued[rw].push_back(qn);
        }
        Some(tb)
    }

    /// `tg_service_queue_add` (and THROTL_TG_PENDING).
    fn service_queue_add(&mut self, i: usize) {
        let parent = self.nodes[i].parent.expect("a group has a parent queue");
        if let Some((d, s)) = self.nodes[i].pending_key.take() {
            self.nodes[parent].pending_tree.remove(&(d, s, i));
        }
        self.seq += 1;
        let key = (self.nodes[i].disptime, self.seq);
        self.nodes[parent].pending_tree.insert((key.0, key.1, i));
        self.nodes[i].pending_key = Some(key);
    }

    /// `throtl_enqueue_tg`.
    fn enqueue_tg(&mut self, i: usize) {
        if self.nodes[i].pending_key.is_none() {
            self.service_queue_add(i);
        }
    }

    /// `throtl_dequeue_tg`.
    fn dequeue_tg(&mut self, i: usize) {
        if let Some((d, s)) = self.nodes[i].pending_key.take() {
            let parent = self.nodes[i].parent.expect("a group has a parent queue");
            self.nodes[parent].pending_tree.remove(&(d, s, i));
        }
    }

    /// `throtl_add_bio_tg`: queue `tb` on group `i` through qnode `qn` (its own by default).
    fn add_bio_tg(&mut self, tb: Tb, qn: Option<(usize, bool)>, i: usize, rw: usize) {
        let qn = qn.unwrap_or((i, false));
        if self.sq_queued(i, rw) == 0 {
            self.nodes[i].was_empty = true;
        }
        let key = tb.key;
        let bps_throttled = tb.bps_throttled;
        self.qnode_add_bio(tb, qn, i, rw);
        if bps_throttled && self.peek_queued(i, rw).map(|t| t.key) == Some(key) {
            self.nodes[i].iops_was_empty = true;
        }
        self.enqueue_tg(i);
    }

    /// The wait of the first bio of `rw` on group `i` (`tg_dispatch_time` on the peeked bio).
    fn head_wait(&mut self, i: usize, rw: usize, j: u64) -> Option<u64> {
        let mut tb = *self.peek_queued(i, rw)?;
        let wait = self.dispatch_time(i, &mut tb, rw, j);
        *self.peek_queued(i, rw).expect("still there") = tb;
        Some(wait)
    }

    /// `tg_update_disptime`.
    fn update_disptime(&mut self, i: usize, j: u64) {
        let r = self.head_wait(i, READ, j).unwrap_or(u64::MAX);
        let w = self.head_wait(i, WRITE, j).unwrap_or(u64::MAX);
        self.nodes[i].disptime = j.saturating_add(r.min(w));
        self.service_queue_add(i);
        self.nodes[i].was_empty = false;
        self.nodes[i].iops_was_empty = false;
    }

    /// `tg_dispatch_one_bio`: move the first bio of `rw` from group `i` up one level.
    fn dispatch_one_bio(&mut self, i: usize, rw: usize, j: u64) {
        let mut tb = self.pop_queued(i, rw).expect("a bio to dispatch");
        self.charge_iops(i, &mut tb, rw);
        let parent = self.nodes[i].parent.expect("a group has a parent queue");
        if parent != 0 {
            self.add_bio_tg(tb, Some((i, true)), parent, rw);
            // start_parent_slice_with_credit
            if self.slice_used(parent, rw, j) {
                let start = self.nodes[i].slice_start[rw];
                self.start_new_slice_with_credit(parent, rw, start, j);
            }
        } else {
            tb.bps_throttled = true;
            self.qnode_add_bio(tb, (i, true), 0, rw);
        }
        self.trim_slice(i, rw, j);
    }

    /// `throtl_dispatch_tg`: up to 6 reads and 2 writes that are within the limits.
    fn dispatch_tg(&mut self, i: usize, j: u64) -> u32 {
        let max_reads = THROTL_GRP_QUANTUM * 3 / 4;
        let max_writes = THROTL_GRP_QUANTUM - max_reads;
        let mut n = 0;
        for (rw, max) in [(READ, max_reads), (WRITE, max_writes)] {
            let mut done = 0;
            while self.head_wait(i, rw, j) == Some(0) {
                self.dispatch_one_bio(i, rw, j);
                done += 1;
                if done >= max {
                    break;
                }
            }
            n += done;
        }
        n
    }

    /// `throtl_select_dispatch`: dispatch the due children of service queue `sq`.
    fn select_dispatch(&mut self, sq: usize, j: u64) -> u32 {
        let mut nr = 0;
        while let Some(&(disptime, _, tg)) = self.nodes[sq].pending_tree.first() {
            if j < disptime {
                break;
            }
            nr += self.dispatch_tg(tg, j);
            if self.sq_queued(tg, READ) > 0 || self.sq_queued(tg, WRITE) > 0 {
                self.update_disptime(tg, j);
            } else {
                self.dequeue_tg(tg);
            }
            if nr >= THROTL_QUANTUM {
                break;
            }
        }
        nr
    }

    /// `throtl_schedule_pending_timer`: at most 8 slices ahead; one due now fires at the next
    /// tick.
    fn schedule_pending_timer(&mut self, sq: usize, expires: u64, j: u64) {
        let expires = expires.min(j + 8 * self.slice).max(j + 1);
        self.nodes[sq].timer = Some(expires);
    }

    /// `throtl_schedule_next_dispatch`: true when the timer is armed or nothing is pending;
    /// false when the window is open and the caller should keep dispatching.
    fn schedule_next_dispatch(&mut self, sq: usize, force: bool, j: u64) -> bool {
        let Some(&(first, _, _)) = self.nodes[sq].pending_tree.first() else {
            return true;
        };
        if force || first > j {
            self.schedule_pending_timer(sq, first, j);
            return true;
        }
        false
    }

    /// `throtl_pending_timer_fn` for service queue `sq`.
    fn pending_timer_fn(&mut self, mut sq: usize, j: u64) {
        loop {
            let parent = self.nodes[sq].parent;
            let mut dispatched = false;
            loop {
                if self.select_dispatch(sq, j) > 0 {
                    dispatched = true;
                }
                if self.schedule_next_dispatch(sq, false, j) {
                    break;
                }
            }
            if !dispatched {
                return;
            }
            match parent {
                Some(p) => {
                    let n = &self.nodes[sq];
                    if n.was_empty || n.iops_was_empty {
                        self.update_disptime(sq, j);
                        if !self.schedule_next_dispatch(p, false, j) {
                            sq = p;
                            continue;
                        }
                    }
                    return;
                }
                None => {
                    self.work = true;
                    return;
                }
            }
        }
    }

    /// `blk_throtl_dispatch_work_fn`: issue what reached the device level, reads first.
    fn dispatch_work(&mut self) {
        self.work = false;
        for rw in [READ, WRITE] {
            while let Some(tb) = self.pop_queued(0, rw) {
                self.ready.push_back(tb.key);
            }
        }
    }

    /// `tg_within_limit`. Its first case, a bio back with `BIO_BPS_THROTTLED` (the rest of a
    /// split), does not arise here: bios are throttled whole (see the deviations).
    fn within_limit(&mut self, i: usize, tb: &mut Tb, rw: usize, j: u64) -> bool {
        if self.sq_queued(i, rw) > 0 {
            if self.nodes[i].nr_queued_bps[rw] == 0 && self.dispatch_bps_time(i, tb, rw, j) == 0 {
                self.charge_bps(i, tb, rw);
            }
            return false;
        }
        self.dispatch_time(i, tb, rw, j) == 0
    }

    /// `__blk_throtl_bio`: true if the bio was queued.
    fn throtl_bio(&mut self, mut tb: Tb, group: usize, rw: usize, j: u64) -> bool {
        let mut i = group + 1;
        let mut qn = None;
        loop {
            if self.within_limit(i, &mut tb, rw, j) {
                self.charge_iops(i, &mut tb, rw);
                self.trim_slice(i, rw, j);
            } else if tb.meta {
                self.charge_bps(i, &mut tb, rw);
                self.charge_iops(i, &mut tb, rw);
            } else {
                break;
            }
            qn = Some((i, true));
            let parent = self.nodes[i].parent.expect("a group has a parent queue");
            if parent == 0 {
                return false;
            }
            i = parent;
        }
        self.throttled += 1;
        self.add_bio_tg(tb, qn, i, rw);
        if self.nodes[i].was_empty || self.nodes[i].iops_was_empty {
            self.update_disptime(i, j);
            let parent = self.nodes[i].parent.expect("a group has a parent queue");
            self.schedule_next_dispatch(parent, true, j);
        }
        true
    }
}

impl QosHook for Throttle {
    fn name(&self) -> &'static str {
        "io.max"
    }

    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        let g = bio.group.0 as usize;
        if g + 1 >= self.nodes.len() {
            return Admit::Now;
        }
        let rw = dir(bio.op);
        // blk_should_throtl
        let n = &self.nodes[g + 1];
        if !n.has_rules_bps[rw] && !n.has_rules_iops[rw] {
            return Admit::Now;
        }
        let size = match bio.op {
            Op::Discard => 512,
            _ => bio.bytes(),
        };
        let tb = Tb {
            key: bio.id.0,
            size,
            bps_throttled: false,
            tg_bps: false,
            meta: bio.meta,
        };
        let j = self.jiffies(now);
        if self.throtl_bio(tb, g, rw, j) {
            Admit::Hold
        } else {
            Admit::Now
        }
    }

    fn poll_release(&mut self, _now: Nanos) -> Option<u64> {
        self.ready.pop_front()
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.nodes
            .iter()
            .filter_map(|n| n.timer)
            .min()
            .map(|j| self.jiffy_start(j))
    }

    fn handle_timeout(&mut self, now: Nanos) {
        let j = self.jiffies(now);
        while let Some((_, sq)) = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.timer.filter(|&t| t <= j).map(|t| (t, i)))
            .min()
        {
            self.nodes[sq].timer = None;
            self.pending_timer_fn(sq, j);
        }
        if self.work {
            self.dispatch_work();
        }
    }
}

#[cfg(test)]
mod tests;
