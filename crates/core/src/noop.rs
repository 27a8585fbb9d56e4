//! noop: first in, first out, no reordering, no idling.
//!
//! Follows Linux's `noop-iosched.c` (2.6) and its blk-mq successor `none`: requests go to the
//! device in arrival order. It has no tunables.
//!
//! Merging follows `none` (6.x): with no elevator, blk-mq issues a request straight to the
//! device while it has room ([`Scheduler::issues_directly`]), and merges a bio into a request
//! still waiting in the software queue (`blk_bio_list_merge`): it looks at the last
//! [`MERGE_LOOKBACK`] requests queued, newest first, for one the bio extends at its back or at
//! its front, of the same operation, within the device's limit (the `max_sectors` the block layer
//! passes). Deviation: the kernel's
//! plug list (`blk_attempt_plug_merge`, bios a process submits in one batch) is not modelled
//! separately; a batch's requests wait here when the device is full, where the same look-back
//! finds them.

use std::collections::VecDeque;

use crate::request::{Op, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

/// How many of the latest queued requests a bio may merge into (`blk_bio_list_merge`'s 8).
pub const MERGE_LOOKBACK: usize = 8;

crate::tunable::tunables! {
    policy: "noop";
    /// noop has no tunables.
    pub const TUNABLES;
    /// noop's settings: none.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {}
}

/// The noop (FIFO) scheduler.
#[derive(Debug, Default)]
pub struct Noop {
    fifo: VecDeque<Request>,
}

impl Noop {
    /// An empty FIFO.
    pub fn new() -> Noop {
        Noop::default()
    }

    /// Build from settings (there are none to accept).
    pub fn from_settings(settings: &Settings) -> Result<Noop, TunableError> {
        Config::from_settings(settings).map(|_| Noop::new())
    }
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, _now: Nanos) -> Option<RequestId> {
        if !matches!(rq.op, Op::Read | Op::Write) {
            return None;
        }
        let q = self.fifo.iter_mut().rev().take(MERGE_LOOKBACK).find(|q| {
            q.op == rq.op
                && q.sectors + rq.sectors <= max_sectors
                && (q.end() == rq.sector || rq.end() == q.sector)
        })?;
        if rq.end() == q.sector {
            q.sector = rq.sector;
        }
        q.sectors += rq.sectors;
        Some(q.id)
    }
    fn insert(&mut self, rq: Request, _now: Nanos) {
        self.fifo.push_back(rq);
    }
    fn issues_directly(&self) -> bool {
        true
    }
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        match self.fifo.pop_front() {
            Some(rq) => Dispatch::Request(rq),
            None => Dispatch::Empty,
        }
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {}
    fn queued(&self) -> usize {
        self.fifo.len()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        Config::default().set("noop", name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};
    use crate::request::DEFAULT_MERGE_SECTORS;

    #[test]
    fn noop_dispatches_in_arrival_order() {
        let mut h = Harness::new(Noop::new(), 1, |_| Nanos::from_ms(1));
        for (i, s) in [900u64, 10, 500].into_iter().enumerate() {
            h.submit(rq(i as u64, 0).sector(s).read());
        }
        let out = h.run();
        assert_eq!(out.dispatch_order(), vec![0, 1, 2]);
    }

    fn queued(id: u64, sector: u64) -> Request {
        rq(id, 0).sector(sector).sectors(8).write().build()
    }

    #[test]
    fn none_merges_into_one_of_the_last_eight_queued_requests_at_its_back_or_front() {
        // blk_bio_list_merge: the software queue's newest eight, back or front.
        let mut s = Noop::new();
        for i in 0..10u64 {
            s.insert(queued(i, i * 100), Nanos::ZERO);
        }
        let back = queued(20, 908);
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(9))
        );
        let front = queued(21, 292);
        assert_eq!(
            s.try_merge(&front, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(3))
        );
        // Request 1 is ninth from the newest: out of reach.
        let old = queued(22, 108);
        assert_eq!(s.try_merge(&old, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let Dispatch::Request(first) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!((first.sector, first.sectors), (0, 8));
        let grown: Vec<(u64, u32)> = s.fifo.iter().map(|r| (r.sector, r.sectors)).collect();
        assert!(
            grown.contains(&(900, 16)) && grown.contains(&(292, 16)),
            "{grown:?}"
        );
    }

    #[test]
    fn none_never_merges_across_operations_or_past_the_size_limit() {
        let mut s = Noop::new();
        s.insert(queued(1, 0), Nanos::ZERO);
        let read = rq(2, 0).sector(8).sectors(8).read().build();
        assert_eq!(s.try_merge(&read, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let big = rq(3, 0)
            .sector(8)
            .sectors(DEFAULT_MERGE_SECTORS - 7)
            .write()
            .build();
        assert_eq!(s.try_merge(&big, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let fits = rq(4, 0)
            .sector(8)
            .sectors(DEFAULT_MERGE_SECTORS - 8)
            .write()
            .build();
        assert_eq!(
            s.try_merge(&fits, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
    }
}
