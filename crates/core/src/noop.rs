//! noop: no reordering, no idling: Linux's `none`, blk-mq's software queues.
//!
//! Follows Linux's `noop-iosched.c` (2.6) and its blk-mq successor `none` (6.18): requests go
//! to the device in arrival order from each CPU. It has no tunables.
//!
//! **Software queues** (6.18, `block/blk-mq.c`). With no elevator, a request the submitter
//! cannot issue at once (a plug flushed from `schedule()`, `blk_mq_insert_requests`; a
//! request inserted with `blk_mq_insert_request`) waits in the software queue of the CPU it
//! was allocated on (`rq->mq_ctx`, [`Request::cpu`]). A run of the hardware queue
//! (`__blk_mq_sched_dispatch_requests`, with no elevator and the queue not `dispatch_busy`)
//! splices every busy software queue into one list, CPU by CPU from CPU 0
//! (`blk_mq_flush_busy_ctxs`: `sbitmap_for_each_set` walks the busy bits from 0, whichever
//! CPU runs the queue), and issues that list in order (`blk_mq_dispatch_rq_list`); a request
//! queued after the splice waits for the next run. So insertions that meet in one run go in
//! CPU order, each CPU's in arrival order. Here a run is spliced when the device asks for a
//! request and the previous run's list is used up ([`Noop::dispatch`]). With every request on
//! CPU 0 (the simulator, the executors) this is one FIFO.
//!
//! Merging follows `none` (6.x): with no elevator, blk-mq issues a request straight to the
//! device while it has room ([`Scheduler::issues_directly`]), and merges a bio into a request
//! still waiting in the software queue of the CPU it is submitted on
//! (`blk_mq_sched_bio_merge` -> `blk_bio_list_merge`): it looks at that CPU's last
//! [`MERGE_LOOKBACK`] requests queued, newest first, for one the bio extends at its back or at
//! its front, of the same operation, within the device's limit (the `max_sectors` the block
//! layer passes).
//!
//! Deviations: the kernel's plug list (`blk_attempt_plug_merge`, bios a process submits in
//! one batch) is not modelled separately; a batch's requests wait here when the device is
//! full, where the same look-back finds them. A request a run took that the device had no
//! room for stays in the run's list, in the look-back of its CPU (the kernel's run issues the
//! whole list or parks the rest on `hctx->dispatch`, beyond any merge); our block layer asks
//! for a request only when the device has room. The queue is never `dispatch_busy` here
//! (the loop device never answers `BLK_STS_RESOURCE`), so the one-at-a-time round robin from
//! `hctx->dispatch_from` (`blk_mq_do_dispatch_ctx`) is not modelled.

use std::collections::{BTreeMap, VecDeque};

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

/// The noop (`none`) scheduler: per-CPU software queues, taken CPU by CPU.
#[derive(Debug, Default)]
pub struct Noop {
    /// What the last run spliced and the device has not taken yet, in CPU order.
    run: VecDeque<Request>,
    /// Each CPU's software queue (`blk_mq_ctx`), in arrival order; no empty queue is kept.
    staged: BTreeMap<u32, VecDeque<Request>>,
    queued: usize,
}

impl Noop {
    /// No request queued.
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
        let staged = self.staged.get_mut(&rq.cpu).into_iter().flatten();
        let q = self
            .run
            .iter_mut()
            .chain(staged)
            .rev()
            .filter(|q| q.cpu == rq.cpu)
            .take(MERGE_LOOKBACK)
            .find(|q| {
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
        self.queued += 1;
        self.staged.entry(rq.cpu).or_default().push_back(rq);
    }
    fn issues_directly(&self) -> bool {
        true
    }
    /// `blk_mq_flush_busy_ctxs` when the last run's list is used up, then its head.
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        if self.run.is_empty() {
            for (_, mut q) in std::mem::take(&mut self.staged) {
                self.run.append(&mut q);
            }
        }
        match self.run.pop_front() {
            Some(rq) => {
                self.queued -= 1;
                Dispatch::Request(rq)
            }
            None => Dispatch::Empty,
        }
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {}
    fn queued(&self) -> usize {
        self.queued
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
        let grown: Vec<(u64, u32)> = s.run.iter().map(|r| (r.sector, r.sectors)).collect();
        assert!(
            grown.contains(&(900, 16)) && grown.contains(&(292, 16)),
            "{grown:?}"
        );
    }

    fn on(id: u64, cpu: u32) -> Request {
        rq(id, id as u32).sector(id * 100).cpu(cpu).build()
    }

    fn order(s: &mut Noop) -> Vec<u64> {
        std::iter::from_fn(|| match s.dispatch(Nanos::ZERO) {
            Dispatch::Request(r) => Some(r.id.0),
            _ => None,
        })
        .collect()
    }

    #[test]
    fn blk_mq_flush_busy_ctxs_takes_the_software_queues_cpu_by_cpu() {
        // CPU 1's request was inserted first; the run splices CPU 0's queue first
        // (sbitmap_for_each_set from bit 0), each CPU's in arrival order.
        let mut s = Noop::new();
        for (id, cpu) in [(1, 1), (2, 0), (3, 0), (4, 1)] {
            s.insert(on(id, cpu), Nanos::ZERO);
        }
        let Dispatch::Request(first) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!(first.id.0, 2);
        // Queued after the splice: the next run's, after the rest of this one even on CPU 0.
        s.insert(on(5, 0), Nanos::ZERO);
        assert_eq!(order(&mut s), vec![3, 1, 4, 5]);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn a_bio_merges_only_into_its_own_cpus_software_queue() {
        // blk_mq_sched_bio_merge looks in the submitting CPU's ctx list only.
        let mut s = Noop::new();
        s.insert(queued(1, 0), Nanos::ZERO);
        let mut other = queued(2, 8);
        other.cpu = 1;
        assert_eq!(
            s.try_merge(&other, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        other.cpu = 0;
        assert_eq!(
            s.try_merge(&other, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
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
