//! The vocabulary AS's parts share: the two directions, a queued request and its place in
//! the sort lists, what the heuristics need of an arriving request, and the anticipation
//! state.

use crate::request::{CtxId, Request};
use crate::time::Nanos;

/// Index of the async (write) sort list and FIFO, as `BLK_RW_ASYNC`.
pub(super) const ASYNC: usize = 0;

/// Index of the sync (read and sync write) sort list and FIFO, as `BLK_RW_SYNC`.
pub(super) const SYNC: usize = 1;

/// A queued request's place: its first sector (the sort key) and its slot.
pub(super) type Key = (u64, u32);

/// A queued request and its fifo time.
#[derive(Debug)]
pub(super) struct Queued {
    pub(super) rq: Request,
    pub(super) fifo_time: Nanos,
}

/// What the anticipation heuristics need to know of a request.
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub(super) ctx: CtxId,
    pub(super) sector: u64,
    pub(super) end: u64,
    pub(super) sync: bool,
}

impl Candidate {
    pub(super) fn of(rq: &Request) -> Candidate {
        Candidate {
            ctx: rq.ctx,
            sector: rq.sector,
            end: rq.end(),
            sync: rq.is_sync(),
        }
    }
}

pub(super) fn dir_of(rq: &Request) -> usize {
    if rq.is_sync() {
        SYNC
    } else {
        ASYNC
    }
}

/// Where anticipation stands (`enum anticipation_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AnticState {
    /// Not anticipating: normal operation.
    Off,
    /// Anticipating, but the last sync request has not completed yet.
    WaitReq,
    /// The anticipated request completed; waiting (at most `antic_expire`) for a good one.
    WaitNext,
    /// Anticipation ended (timeout or a good candidate arrived); the next dispatch runs.
    Finished,
}
