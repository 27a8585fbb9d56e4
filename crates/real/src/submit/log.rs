//! The engine's request log ([`EngineOptions::request_log`](super::EngineOptions)): the
//! executor's [`RequestRecord`] for every request completed, the latest ones kept.
//!
//! A mount may serve for days, so the log is bounded: past its limit each new record pushes
//! out the oldest and is counted in [`RequestLog::dropped`]; what is kept is always the most
//! recent stretch. The contexts are listed in the order they first completed a request, and a
//! record's `job` is its context's index in [`RequestLog::contexts`].

use std::collections::{HashMap, VecDeque};

use elevator_core::CtxId;

use crate::RequestRecord;

/// What the engine logged (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLog {
    /// Every context that completed a request since the log was last taken; a record's `job`
    /// indexes this list.
    pub contexts: Vec<CtxId>,
    /// The latest requests completed (pieces of a split I/O each), in completion order.
    pub requests: Vec<RequestRecord>,
    /// Requests completed but pushed out by later ones (the oldest).
    pub dropped: u64,
}

/// Keeps the log on the engine thread's behalf.
pub(super) struct LogKeeper {
    limit: usize,
    contexts: Vec<CtxId>,
    index: HashMap<CtxId, usize>,
    requests: VecDeque<RequestRecord>,
    dropped: u64,
}

impl LogKeeper {
    /// A log keeping at most `limit` records (0: keeps nothing).
    pub(super) fn new(limit: usize) -> LogKeeper {
        LogKeeper {
            limit,
            contexts: Vec::new(),
            index: HashMap::new(),
            requests: VecDeque::new(),
            dropped: 0,
        }
    }

    /// Whether records are kept at all.
    pub(super) fn is_on(&self) -> bool {
        self.limit > 0
    }

    /// Log a request of `ctx`; `record.job` is filled in here.
    pub(super) fn record(&mut self, ctx: CtxId, mut record: RequestRecord) {
        if !self.is_on() {
            return;
        }
        record.job = *self.index.entry(ctx).or_insert_with(|| {
            self.contexts.push(ctx);
            self.contexts.len() - 1
        });
        if self.requests.len() == self.limit {
            self.requests.pop_front();
            self.dropped += 1;
        }
        self.requests.push_back(record);
    }

    /// Everything logged so far; the log starts again empty.
    pub(super) fn take(&mut self) -> RequestLog {
        self.index.clear();
        RequestLog {
            contexts: std::mem::take(&mut self.contexts),
            requests: std::mem::take(&mut self.requests).into(),
            dropped: std::mem::take(&mut self.dropped),
        }
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::{Nanos, Op};

    use super::*;

    fn rec(sector: u64) -> RequestRecord {
        RequestRecord {
            job: usize::MAX,
            op: Op::Read,
            sector,
            sectors: 8,
            queued: Nanos(sector),
            inserted: Nanos(sector),
            dispatched: Nanos(sector + 1),
            tagged: Nanos(sector + 1),
            completed: Nanos(sector + 2),
            ctx: 1,
            waiting: 1,
            in_flight: 1,
            merged: false,
        }
    }

    #[test]
    fn past_its_limit_the_log_keeps_the_latest_and_counts_the_rest() {
        let mut log = LogKeeper::new(3);
        for (i, ctx) in [7, 9, 7, 5, 9].into_iter().enumerate() {
            log.record(CtxId(ctx), rec(i as u64));
        }
        let got = log.take();
        assert_eq!(got.dropped, 2);
        assert_eq!(got.contexts, vec![CtxId(7), CtxId(9), CtxId(5)]);
        let kept: Vec<(u64, usize)> = got.requests.iter().map(|r| (r.sector, r.job)).collect();
        assert_eq!(kept, vec![(2, 0), (3, 2), (4, 1)]);
        // Taken: the next take starts from nothing.
        assert_eq!(log.take(), RequestLog::default());
    }

    #[test]
    fn a_log_of_limit_zero_keeps_nothing() {
        let mut log = LogKeeper::new(0);
        log.record(CtxId(1), rec(1));
        assert_eq!(log.take(), RequestLog::default());
    }
}
