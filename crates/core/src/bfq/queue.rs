//! One bfq_queue: the requests of a process (sync) or of a group's writeback (async), sorted
//! by sector with a FIFO for expiry, plus the per-queue state the heuristics keep.

use std::collections::{BTreeMap, VecDeque};

use super::wf2q::Eid;
use super::{Tick, PAST};
use crate::request::{CtxId, GroupId, IoClass, Request};

/// A queued request's key in its queue's sort list: (sector, request id).
pub(super) type Key = (u64, u64);

/// Seek distance above which a request is seeky, in sectors.
pub(super) const SEEK_THR: u64 = 8 * 100;
/// On non-rotational devices only small requests count as seeky (sectors).
pub(super) const SECT_THR_NONROT: u32 = 2 * 32;

/// One bfq_queue.
#[derive(Clone, Debug)]
pub(super) struct Queue {
    /// Its scheduling entity.
    pub eid: Eid,
    /// Its group.
    pub group: GroupId,
    /// Sync (one process) or async (shared writeback).
    pub sync: bool,
    /// I/O priority class.
    pub class: IoClass,
    /// Priority level 0..=7.
    pub level: u8,
    /// The weight from the I/O priority, before raising.
    pub orig_weight: u64,

    /// Queued requests by (sector, id).
    pub sort: BTreeMap<Key, Request>,
    /// FIFO of (expiry time, key); entries already dispatched are skipped lazily.
    pub fifo: VecDeque<(Tick, Key)>,
    /// The request to serve next.
    pub next_rq: Option<Key>,
    /// Queued requests that are sync / async.
    pub queued: [u32; 2],
    /// Dispatched and not yet completed.
    pub dispatched: u32,
    /// Busy: counted among the queues with pending I/O (on a service tree or in service).
    pub busy: bool,
    /// FIFO already checked in this service slot.
    pub fifo_checked: bool,
    /// Waiting for a request after expiring empty (lets a quick newcomer keep its budget).
    pub non_blocking_wait_rq: bool,
    /// Think time deemed short.
    pub has_short_ttime: bool,
    /// Deemed I/O bound.
    pub io_bound: bool,
    /// Created in a large burst of queue creations.
    pub in_large_burst: bool,
    /// In the current burst list.
    pub in_burst_list: bool,
    /// Created and no request added yet.
    pub just_created: bool,
    /// Shared by several processes (after a queue merge).
    pub coop: bool,
    /// A shared queue found seeky: split it on its processes' next requests.
    pub split_coop: bool,
    /// Recompute the soft real-time next start once in-flight I/O completes.
    pub softrt_update: bool,

    /// Largest budget this queue may get next (sectors).
    pub max_budget: u64,
    /// Budget timeout while in service; when idle, the time it became idle.
    pub budget_timeout: Tick,

    /// Think-time samples (7/8 decayed, scaled by 256).
    pub ttime_samples: u64,
    /// Think-time total (decayed).
    pub ttime_total: u64,
    /// Mean think time, ns.
    pub ttime_mean: u64,
    /// Completion time of the last request.
    pub last_end_request: Tick,
    /// One bit per recent request: seeky or not.
    pub seek_history: u32,
    /// End of the last request added.
    pub last_request_pos: u64,
    /// Start of the I/O-intensity observation window (at most about 200 ms long).
    pub io_start_time: Tick,
    /// Time the queue spent empty with nothing in flight within that window, ns.
    pub tot_idle_time: Tick,

    /// Weight-raising coefficient (1 = not raised).
    pub wr_coeff: u64,
    /// Duration of the current raising period, ns.
    pub wr_cur_max_time: Tick,
    /// Start of the current raising period (or last arrival when not raised).
    pub last_wr_start_finish: Tick,
    /// Start of interactive raising when it switched to soft real-time.
    pub wr_start_at_switch_to_srt: Tick,
    /// Service received while raised, sectors.
    pub service_from_wr: u64,
    /// Earliest time a new request may arrive for the queue to be soft real-time.
    pub soft_rt_next_start: Tick,
    /// When the queue last went from idle to busy.
    pub last_idle_bklogged: Tick,
    /// Service received since it last went from idle to busy, sectors.
    pub service_from_backlogged: u64,
    /// Time of its first service after it last went from idle to busy.
    pub first_io_time: Tick,
    /// Last time it was split from a shared queue.
    pub split_time: Tick,
    /// Creation time.
    pub creation_time: Tick,

    /// Injection limit: requests in flight allowed while this queue idles.
    pub inject_limit: u32,
    /// Baseline total service time of a first request with no injection, ns (0 = none).
    pub last_serv_time: u64,
    /// Last time the inject limit was decreased or reset.
    pub decrease_time: Tick,

    /// Scheduled merge target.
    pub new_queue: Option<usize>,
    /// Process references: contexts using it plus pending redirections to it.
    pub proc_refs: u32,
    /// The one context owning it; `None` once shared or orphaned.
    pub bic: Option<CtxId>,
    /// Its key in its group's position tree, if inserted.
    pub pos_key: Option<u64>,
    /// Counted in the weights multiset under this weight.
    pub weight_counter: Option<u64>,
    /// Counted in its group's queues with pending requests.
    pub in_groups_pending: bool,

    /// The queue whose completions this one's first requests followed lately, not yet
    /// confirmed (`tentative_waker_bfqq`).
    pub tentative_waker: Option<usize>,
    /// How many times in a row the tentative waker was seen (`num_waker_detections`).
    pub waker_detections: u32,
    /// When the current detection began (`waker_detection_started`).
    pub waker_detection_started: Tick,
    /// Its waker queue (`waker_bfqq`), once seen three times.
    pub waker: Option<usize>,
    /// The queues this one wakes, the latest first (`woken_list`).
    pub woken: Vec<usize>,
}

impl Queue {
    /// A fresh queue at `now`.
    pub fn new(
        eid: Eid,
        group: GroupId,
        sync: bool,
        class: IoClass,
        level: u8,
        now: Tick,
    ) -> Queue {
        let orig_weight = ioprio_weight(class, level);
        Queue {
            eid,
            group,
            sync,
            class,
            level,
            orig_weight,
            sort: BTreeMap::new(),
            fifo: VecDeque::new(),
            next_rq: None,
            queued: [0, 0],
            dispatched: 0,
            busy: false,
            fifo_checked: false,
            non_blocking_wait_rq: false,
            // `bfq_init_bfqq` skips the mark for an idle-class queue, but tests the class
            // before `bfq_init_entity` copies it from `new_ioprio_class`: the zeroed queue's
            // class is IOPRIO_CLASS_NONE then, so every sync queue starts marked, and
            // `bfq_update_has_short_ttime` never clears an idle-class one's.
            has_short_ttime: sync,
            io_bound: true,
            in_large_burst: false,
            in_burst_list: false,
            just_created: sync,
            coop: false,
            split_coop: false,
            softrt_update: false,
            max_budget: 0,
            budget_timeout: PAST,
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            // "Minus infinity": the first think-time sample counts as long.
            last_end_request: now + 1,
            seek_history: 1,
            last_request_pos: 0,
            io_start_time: now,
            tot_idle_time: 0,
            wr_coeff: 1,
            wr_cur_max_time: 0,
            last_wr_start_finish: now,
            wr_start_at_switch_to_srt: PAST,
            service_from_wr: 0,
            soft_rt_next_start: now,
            last_idle_bklogged: now,
            service_from_backlogged: 0,
            first_io_time: now,
            split_time: PAST,
            creation_time: now,
            inject_limit: 0,
            last_serv_time: 0,
            decrease_time: now,
            new_queue: None,
            proc_refs: 0,
            bic: None,
            pos_key: None,
            weight_counter: None,
            in_groups_pending: false,
            tentative_waker: None,
            waker_detections: 0,
            waker_detection_started: PAST,
            waker: None,
            woken: Vec::new(),
        }
    }

    /// The queue is seeky: more than 19 of its last 32 requests were.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }

    /// All of its last 32 requests were seeky.
    pub fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }

    /// Whether it is in the idle class.
    pub fn class_idle(&self) -> bool {
        self.class == IoClass::Idle
    }

    /// The queued request to serve next.
    pub fn next(&self) -> Option<&Request> {
        self.next_rq.and_then(|k| self.sort.get(&k))
    }

    /// Whether it has no queued request.
    pub fn is_empty(&self) -> bool {
        self.sort.is_empty()
    }
}

/// Queue weight from the I/O priority: (8 - level) * 10, idle class at level 7.
pub(super) fn ioprio_weight(class: IoClass, level: u8) -> u64 {
    let level = if class == IoClass::Idle {
        7
    } else {
        level.min(7)
    };
    (8 - u64::from(level)) * 10
}

/// Class index used by the service trees.
pub(super) fn class_index(class: IoClass) -> usize {
    match class {
        IoClass::RealTime => 0,
        IoClass::BestEffort => 1,
        IoClass::Idle => 2,
    }
}

/// Sector distance between `last_pos` and `sector` (0 when no last position is known).
pub(super) fn sdist(last_pos: u64, sector: u64) -> u64 {
    if last_pos == 0 {
        0
    } else {
        last_pos.abs_diff(sector)
    }
}

/// The seek rule: far from the last position (and, on flash, small).
pub(super) fn rq_seeky(rotational: bool, last_pos: u64, sector: u64, sectors: u32) -> bool {
    sdist(last_pos, sector) > SEEK_THR && (rotational || sectors < SECT_THR_NONROT)
}

/// Choose which of two requests is better served next from head position `last`, as the
/// AS-derived rule does: sync before async, metadata before data, then the shorter seek with
/// backward seeks up to `back_max` sectors costing `penalty` times, else the one behind.
pub(super) fn choose_req<'a>(
    a: Option<&'a Request>,
    b: Option<&'a Request>,
    last: u64,
    back_max: u64,
    penalty: u64,
) -> Option<&'a Request> {
    let (r1, r2) = match (a, b) {
        (None, x) | (x, None) => return x,
        (Some(r1), Some(r2)) => (r1, r2),
    };
    if r1.id == r2.id {
        return Some(r2);
    }
    match (r1.is_sync(), r2.is_sync()) {
        (true, false) => return Some(r1),
        (false, true) => return Some(r2),
        _ => {}
    }
    match (r1.meta, r2.meta) {
        (true, false) => return Some(r1),
        (false, true) => return Some(r2),
        _ => {}
    }
    let dist = |s: u64| -> Option<u64> {
        if s >= last {
            Some(s - last)
        } else if s + back_max >= last {
            Some((last - s) * penalty)
        } else {
            None
        }
    };
    let (s1, s2) = (r1.sector, r2.sector);
    match (dist(s1), dist(s2)) {
        (Some(d1), Some(d2)) => {
            if d1 < d2 || (d1 == d2 && s1 >= s2) {
                Some(r1)
            } else {
                Some(r2)
            }
        }
        (Some(_), None) => Some(r1),
        (None, Some(_)) => Some(r2),
        (None, None) => {
            if s1 <= s2 {
                Some(r1)
            } else {
                Some(r2)
            }
        }
    }
}
