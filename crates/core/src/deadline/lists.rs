//! The queues both deadline versions keep, and the merge lookup they share.
//!
//! Every queued request sits in two structures of its data direction (reads; everything else
//! counts as a write, as `rq_data_dir` does): a tree sorted by start sector (the kernel's
//! `sort_list` rbtree) and a FIFO in arrival order (`fifo_list`), each request stamped with
//! its deadline. Requests live in the slab of the core's [`Fifos`] (one FIFO per direction);
//! the trees are [`SortList`]s keyed by `(sector, id)` onto its slots (several requests may
//! start at one sector), so every operation is `O(log n)` over contiguous keys.

use super::dir_of;
use crate::fifo::Fifos;
use crate::id_map::IdMap;
use crate::request::{Op, Request, RequestId};
use crate::sort_list::SortList;
use crate::time::Nanos;

/// A queued request.
#[derive(Debug)]
struct Entry {
    rq: Request,
    /// `arrival + expire` of its direction.
    deadline: Nanos,
}

/// Both directions' trees and FIFOs over one slab of requests.
#[derive(Debug)]
pub(super) struct Lists {
    /// The FIFOs, one per direction (READ, WRITE).
    fifos: Fifos<Entry>,
    /// Per direction: (start sector, id) -> slot.
    sorted: [SortList<(u64, u64)>; 2],
    /// Mergeable requests by end sector, either direction (the elevator's merge hash,
    /// `elv_rqhash_add`); where two end at one sector, the newer.
    by_end: IdMap<u64, u32>,
    queued: usize,
}

/// `rq_mergeable`: only reads and writes with data go into the merge hash.
fn mergeable(rq: &Request) -> bool {
    matches!(rq.op, Op::Read | Op::Write) && rq.sectors > 0
}

impl Lists {
    pub(super) fn new() -> Lists {
        Lists {
            fifos: Fifos::new(2),
            sorted: [SortList::default(), SortList::default()],
            by_end: IdMap::default(),
            queued: 0,
        }
    }

    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    fn entry(&self, slot: u32) -> &Entry {
        self.fifos.get(slot)
    }

    fn entry_mut(&mut self, slot: u32) -> &mut Entry {
        self.fifos.get_mut(slot)
    }

    fn key(&self, slot: u32) -> (u64, u64) {
        let rq = &self.entry(slot).rq;
        (rq.sector, rq.id.0)
    }

    /// The start sector of the request in `slot`.
    pub(super) fn sector(&self, slot: u32) -> u64 {
        self.entry(slot).rq.sector
    }

    /// Whether `dir` has a request queued.
    pub(super) fn has(&self, dir: usize) -> bool {
        !self.fifos.is_empty(dir)
    }

    /// The oldest request of `dir` (the FIFO head), if any.
    pub(super) fn fifo_head(&self, dir: usize) -> Option<u32> {
        self.fifos.front(dir)
    }

    /// The lowest-sector request of `dir`, if any.
    pub(super) fn first(&self, dir: usize) -> Option<u32> {
        self.sorted[dir].first().map(|(_, s)| s)
    }

    /// `deadline_latter_request`: the request after `slot` in its direction's sector order.
    pub(super) fn latter(&self, slot: u32) -> Option<u32> {
        let dir = dir_of(&self.entry(slot).rq);
        self.sorted[dir].above(self.key(slot)).map(|(_, s)| s)
    }

    /// `deadline_check_fifo`: whether the FIFO head of `dir` has expired, `time_after(now,
    /// deadline)`: strictly after it.
    pub(super) fn expired(&self, dir: usize, now: Nanos) -> bool {
        self.fifo_head(dir)
            .is_some_and(|head| now > self.entry(head).deadline)
    }

    /// Queue `rq` with its deadline at the tails of its direction's FIFO and in its tree.
    pub(super) fn insert(&mut self, rq: Request, deadline: Nanos) {
        let dir = dir_of(&rq);
        let key = (rq.sector, rq.id.0);
        let end = mergeable(&rq).then(|| rq.end());
        let slot = self.fifos.push_back(dir, Entry { rq, deadline });
        if let Some(end) = end {
            self.by_end.insert(end, slot);
        }
        self.sorted[dir]
            .insert(key, slot)
            .expect("request ids are distinct");
        self.queued += 1;
    }

    /// `deadline_move_to_dispatch`: take `slot` off its tree and FIFO and hand its request
    /// out.
    pub(super) fn remove(&mut self, slot: u32) -> Request {
        let key = self.key(slot);
        let dir = dir_of(&self.entry(slot).rq);
        let end = self.entry(slot).rq.end();
        if self.by_end.get(&end) == Some(&slot) {
            self.by_end.remove(&end);
        }
        self.sorted[dir].remove(key);
        let entry = self.fifos.remove(dir, slot);
        self.queued -= 1;
        entry.rq
    }

    /// Merge `rq` into a queued request: a back merge into the request the merge hash finds
    /// ending where it starts, else (if `front_merges`) a front merge into
    /// one that starts where it ends, which moves down in the tree. Same direction and
    /// operation, at most `max_sectors` (the device's limit) in all; neither FIFO position nor deadline
    /// changes.
    pub(super) fn try_merge(
        &mut self,
        rq: &Request,
        front_merges: bool,
        max_sectors: u32,
    ) -> Option<RequestId> {
        if !mergeable(rq) {
            return None;
        }
        let dir = dir_of(rq);
        let fits = |q: &Request| q.op == rq.op && q.sectors + rq.sectors <= max_sectors;

        // `elv_rqhash_find`: a request ending where `rq` starts; `elv_rq_merge_ok` refuses
        // one of the other direction or operation.
        if let Some(&slot) = self.by_end.get(&rq.sector) {
            let q = &mut self.entry_mut(slot).rq;
            if dir_of(q) == dir && fits(q) {
                q.sectors += rq.sectors;
                let (id, end) = (q.id, q.end());
                // `elv_rqhash_reposition`.
                self.by_end.remove(&rq.sector);
                self.by_end.insert(end, slot);
                return Some(id);
            }
        }

        if front_merges {
            let end = rq.end();
            let above = self.sorted[dir]
                .ceil((end, 0))
                .filter(|&((sector, _), _)| sector == end);
            if let Some((key, slot)) = above {
                let q = &mut self.entry_mut(slot).rq;
                if fits(q) {
                    q.sector = rq.sector;
                    q.sectors += rq.sectors;
                    let id = q.id;
                    let sorted = &mut self.sorted[dir];
                    sorted.remove(key);
                    sorted
                        .insert((rq.sector, id.0), slot)
                        .expect("request ids are distinct");
                    return Some(id);
                }
            }
        }
        None
    }
}
