//! One CFQ queue (`cfq_queue`): the requests of one process (sync) or of one priority level of
//! a group's writeback (async), sorted by sector and in arrival order, with the per-queue
//! state the policy keys its decisions on.
//!
//! The requests live in a slab threaded by their FIFO (`cfqq->fifo`, appended at the tail as
//! `cfq_insert_request` does) and are indexed by `(sector, id)` in sorted blocks of keys
//! (`sort_list.rs`, the kernel's `cfqq->sort_list` rbtree): a sector walk touches only keys.

use crate::fifo::Fifos;
use crate::request::Request;
use crate::sort_list::SortList;

use super::types::{Class, QId, SortKey, StKey};

/// A queued request with its FIFO deadline.
#[derive(Clone, Debug)]
pub(super) struct Queued {
    pub rq: Request,
    pub fifo_time: u64,
}

/// One CFQ queue.
#[derive(Clone, Debug)]
pub(super) struct CfqQueue {
    /// The group it belongs to (index in the scheduler's group table).
    pub group: usize,
    /// A sync queue (one process's reads and sync writes) or an async one (shared writeback).
    pub sync: bool,
    /// Current priority level 0..=7 and class (possibly boosted for metadata).
    pub ioprio: u8,
    /// Current class.
    pub class: Class,
    /// The level as the process set it (the prio-tree index).
    pub org_ioprio: u8,
    /// The class as the process set it.
    pub org_class: Class,
    /// Set when the process's priority changed; applied at its next request.
    pub prio_changed: bool,

    /// The queued requests, in one FIFO (list 0) in arrival order.
    fifo: Fifos<Queued>,
    /// `(sector, id)` -> slot in `fifo`.
    sorted: SortList<SortKey>,
    /// The request to serve next if the FIFO has not expired: its key and its slot (which
    /// stays its own while it is queued).
    pub next_rq: Option<(SortKey, u32)>,
    /// Queued requests by direction: [async, sync].
    pub queued: [u32; 2],
    /// Queued metadata (REQ_PRIO) requests.
    pub prio_pending: u32,
    /// Requests dispatched and not yet completed.
    pub dispatched: u32,

    /// The service tree it is on, if any.
    pub st: Option<StKey>,
    /// Its key on that tree, ns.
    pub rb_key: i64,
    /// The insertion sequence number of its tree entry (orders equal keys).
    pub tree_seq: u64,
    /// On the round-robin (busy) lists.
    pub on_rr: bool,
    /// Where it sits in the prio trees, when it is there: the tree's level (the `org_ioprio`
    /// at insertion, which may have changed since, as the kernel's `p_root` remembers) and
    /// its next request's sector.
    pub prio_tree_pos: Option<(usize, u64)>,

    /// When it was made active (first dispatch of the slice may precede the slice start).
    pub dispatch_start: u64,
    /// The slice length granted at its first completion.
    pub allocated_slice: u64,
    /// Requests dispatched in this slice.
    pub slice_dispatch: u32,
    /// When the slice started (its first completion); `None` until then.
    pub slice_start: Option<u64>,
    /// When the slice ends (ns); meaningful once `slice_new` is clear.
    pub slice_end: u64,
    /// Slice time left over (positive) or overrun (negative) at the last expiry.
    pub slice_resid: i64,

    /// 32 bits of seek history, newest in bit 0.
    pub seek_history: u32,
    /// End of the last request queued (0: none yet).
    pub last_request_pos: u64,

    /// Process references (contexts pointing at it, plus references taken for a pending merge).
    pub refs: u32,
    /// The queue this one is scheduled to merge into.
    pub new_cfqq: Option<QId>,

    /// Flags (`cfqq_state_flags`).
    pub wait_request: bool,
    /// A request arrived while idling: let it through even if the slice ends.
    pub must_dispatch: bool,
    /// FIFO already checked in this slice.
    pub fifo_expire: bool,
    /// Slice idling enabled for this queue.
    pub idle_window: bool,
    /// No request of the slice has completed yet.
    pub slice_new: bool,
    /// Shared by merged cooperating processes.
    pub coop: bool,
    /// A shared queue that turned seeky: split at the next request.
    pub split_coop: bool,
    /// Had a deep queue (4 or more requests queued at once).
    pub deep: bool,
    /// Waiting for the group to get backlogged again before expiring.
    pub wait_busy: bool,
}

impl CfqQueue {
    /// A new empty queue.
    pub fn new(group: usize, sync: bool) -> CfqQueue {
        CfqQueue {
            group,
            sync,
            ioprio: 4,
            class: Class::Be,
            org_ioprio: 4,
            org_class: Class::Be,
            prio_changed: true,
            fifo: Fifos::new(1),
            sorted: SortList::default(),
            next_rq: None,
            queued: [0, 0],
            prio_pending: 0,
            dispatched: 0,
            st: None,
            rb_key: 0,
            tree_seq: 0,
            on_rr: false,
            prio_tree_pos: None,
            dispatch_start: 0,
            allocated_slice: 0,
            slice_dispatch: 0,
            slice_start: None,
            slice_end: 0,
            slice_resid: 0,
            seek_history: 0,
            last_request_pos: 0,
            refs: 0,
            new_cfqq: None,
            wait_request: false,
            must_dispatch: false,
            fifo_expire: false,
            idle_window: sync,
            slice_new: false,
            coop: false,
            split_coop: false,
            deep: false,
            wait_busy: false,
        }
    }

    /// Nothing queued (dispatched requests may still be in flight).
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// `CFQQ_SEEKY`: more than 4 of the last 32 requests were seeks.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 32 / 8
    }

    /// The queued request in `slot` (its key's, from [`CfqQueue::add`] or the sort list), read
    /// without a search of the sort list.
    pub fn at(&self, slot: u32) -> &Request {
        &self.fifo.get(slot).rq
    }

    /// Queue `rq` with FIFO deadline `fifo_time`, at the FIFO's tail: its key and slot.
    pub fn add(&mut self, rq: Request, fifo_time: u64) -> (SortKey, u32) {
        let key = (rq.sector, rq.id.0);
        let slot = self.fifo.push_back(0, Queued { rq, fifo_time });
        self.sorted
            .insert(key, slot)
            .expect("request ids are distinct");
        (key, slot)
    }

    /// Take the request at `key` out of both lists.
    pub fn remove(&mut self, key: SortKey) -> Request {
        let slot = self.sorted.remove(key).expect("request is queued");
        self.fifo.remove(0, slot).rq
    }

    /// The oldest queued request and its FIFO deadline.
    pub fn fifo_head(&self) -> Option<(SortKey, u64)> {
        let q = self.fifo.get(self.fifo.front(0)?);
        Some(((q.rq.sector, q.rq.id.0), q.fifo_time))
    }

    /// The queued requests just after and just before `key` in sector order, the "after" one
    /// wrapping to the lowest (`cfq_find_next_rq`'s candidates), each with its slot.
    #[allow(clippy::type_complexity)]
    pub fn neighbours(&self, key: SortKey) -> (Option<(SortKey, u32)>, Option<(SortKey, u32)>) {
        let next = self
            .sorted
            .above(key)
            .or_else(|| self.sorted.first().filter(|(k, _)| *k != key));
        let prev = self.sorted.below(key);
        (next, prev)
    }
}
