//! Conservation counters kept once, around any scheduler: what Linux's block layer checks
//! for every elevator (`inserted`, `merged`, `dispatched`, `completed`; queued = inserted -
//! dispatched). Cheap to keep, and a request lost or served twice shows at once.
//!
//! [`Counted`] wraps a [`Scheduler`] and counts the calls that cross it: a
//! [`try_merge`](Scheduler::try_merge) that merged, every [`insert`](Scheduler::insert), a
//! [`dispatch`](Scheduler::dispatch) that handed out a request, every
//! [`complete`](Scheduler::complete). The policies themselves keep no such counters.

use crate::request::{CtxId, Request, RequestId};
use crate::scheduler::{Dispatch, GrownBy, RequestsMerged, Scheduler};
use crate::time::Nanos;
use crate::tunable::TunableError;

/// Conservation counters: every request is inserted or merged once, dispatched once if
/// inserted, and completed once after its dispatch. The one counter type: [`Counted`] keeps
/// it around a bare scheduler, [`BlockLayer`](crate::block::BlockLayer) around the one it
/// drives, and the simulator's report carries it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Requests inserted.
    pub inserted: u64,
    /// Requests merged into a queued request instead of being inserted (or after: a queued
    /// request merged into another, [`Scheduler::merge_next`], moves from `inserted` here).
    pub merged: u64,
    /// Requests dispatched.
    pub dispatched: u64,
    /// Completions reported.
    pub completed: u64,
}

impl Counters {
    /// Requests inserted and not yet dispatched.
    pub fn queued(&self) -> u64 {
        self.inserted.saturating_sub(self.dispatched)
    }

    /// Requests dispatched and not yet completed.
    pub fn in_flight(&self) -> u64 {
        self.dispatched.saturating_sub(self.completed)
    }
}

/// A scheduler with its conservation counters.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    counters: Counters,
}

impl<S: Scheduler> Counted<S> {
    /// Count the calls made to `inner`.
    pub fn new(inner: S) -> Counted<S> {
        Counted {
            inner,
            counters: Counters::default(),
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The scheduler inside.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The scheduler inside, to change.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The scheduler inside, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Scheduler> Scheduler for Counted<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        let merged = self.inner.try_merge(rq, max_sectors, now);
        if merged.is_some() {
            self.counters.merged += 1;
        }
        merged
    }
    fn bio_not_merged(&mut self, bio: &Request, now: Nanos) {
        self.inner.bio_not_merged(bio, now);
    }
    fn merge_next(
        &mut self,
        into: RequestId,
        grown: GrownBy,
        max_sectors: u32,
        now: Nanos,
    ) -> Option<RequestsMerged> {
        let gone = self.inner.merge_next(into, grown, max_sectors, now);
        if gone.is_some() {
            // Counted as merged, not inserted: it is never dispatched.
            self.counters.inserted -= 1;
            self.counters.merged += 1;
        }
        gone
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.counters.inserted += 1;
        self.inner.insert(rq, now)
    }
    fn allocate(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        self.inner.allocate(rq, now)
    }
    fn insert_allocated(&mut self, id: RequestId, now: Nanos) {
        self.counters.inserted += 1;
        self.inner.insert_allocated(id, now)
    }
    fn allocate_sleeping(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        self.inner.allocate_sleeping(rq, now)
    }
    fn tag_got(&mut self, id: RequestId, now: Nanos) {
        self.inner.tag_got(id, now)
    }
    fn allocate_batched(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        self.inner.allocate_batched(rq, now)
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let d = self.inner.dispatch(now);
        if matches!(d, Dispatch::Request(_)) {
            self.counters.dispatched += 1;
        }
        d
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.counters.completed += 1;
        self.inner.complete(rq, now)
    }
    fn complete_clocked(&mut self, rq: &Request, clock: Nanos, now: Nanos) {
        self.counters.completed += 1;
        self.inner.complete_clocked(rq, clock, now)
    }
    fn next_timer(&self) -> Option<Nanos> {
        self.inner.next_timer()
    }
    fn fire_timer(&mut self, now: Nanos) {
        self.inner.fire_timer(now)
    }
    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        self.inner.exit(ctx, now)
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn max_request_sectors(&self) -> Option<u32> {
        self.inner.max_request_sectors()
    }
    fn issues_directly(&self) -> bool {
        self.inner.issues_directly()
    }
    fn bounds_own_requests(&self) -> bool {
        self.inner.bounds_own_requests()
    }
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        self.inner.holds_sched_tag(id)
    }
    fn sched_tags_admitted(&self) -> Option<u64> {
        self.inner.sched_tags_admitted()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.inner.set_tunable(name, value)
    }
    fn keep_notes(&mut self) {
        self.inner.keep_notes()
    }
    fn take_notes(&mut self) -> Vec<(Nanos, String)> {
        self.inner.take_notes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::rq;
    use crate::noop::Noop;
    use crate::request::DEFAULT_MERGE_SECTORS;

    #[test]
    fn every_call_that_crosses_the_wrapper_is_counted_once() {
        let mut s = Counted::new(Noop::new());
        let t = Nanos::ZERO;
        let first = rq(1, 1).sector(0).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&first, DEFAULT_MERGE_SECTORS, t),
            None,
            "nothing queued to merge into"
        );
        s.insert(first, t);
        s.insert(rq(2, 1).sector(800).sectors(8).write().build(), t);
        // none back-merges a write that starts where a queued one ends.
        let back = rq(3, 1).sector(8).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, t),
            Some(RequestId(1))
        );
        assert_eq!(s.counters().queued(), 2);
        let Dispatch::Request(a) = s.dispatch(t) else {
            panic!("a request is queued")
        };
        assert_eq!(s.counters().in_flight(), 1);
        s.complete(&a, t);
        let Dispatch::Request(b) = s.dispatch(t) else {
            panic!("a request is queued")
        };
        assert_eq!(
            s.dispatch(t),
            Dispatch::Empty,
            "an empty answer counts nothing"
        );
        // A completion with the clock the policy read reaches the policy with that clock
        // (bfq's `complete_clocked`) and counts once.
        s.complete_clocked(&b, t, t);
        let c = s.counters();
        assert_eq!(
            (c.inserted, c.merged, c.dispatched, c.completed),
            (2, 1, 2, 2)
        );
        assert_eq!((c.queued(), c.in_flight()), (0, 0));
        assert_eq!(s.name(), "noop");
    }

    /// noop that notes each insertion once asked to keep notes.
    #[derive(Default)]
    struct Noting {
        inner: Noop,
        keeping: bool,
        notes: Vec<(Nanos, String)>,
    }

    impl Scheduler for Noting {
        fn name(&self) -> &'static str {
            "noting"
        }
        fn insert(&mut self, rq: Request, now: Nanos) {
            if self.keeping {
                self.notes.push((now, format!("insert {}", rq.id.0)));
            }
            self.inner.insert(rq, now);
        }
        fn dispatch(&mut self, now: Nanos) -> Dispatch {
            self.inner.dispatch(now)
        }
        fn complete(&mut self, rq: &Request, now: Nanos) {
            self.inner.complete(rq, now);
        }
        fn queued(&self) -> usize {
            self.inner.queued()
        }
        fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
            self.inner.set_tunable(name, value)
        }
        fn keep_notes(&mut self) {
            self.keeping = true;
        }
        fn take_notes(&mut self) -> Vec<(Nanos, String)> {
            std::mem::take(&mut self.notes)
        }
    }

    #[test]
    fn the_policys_notes_pass_through_the_wrapper() {
        let mut s = Counted::new(Noting::default());
        s.keep_notes();
        s.insert(rq(7, 1).build(), Nanos::from_ms(3));
        assert_eq!(
            s.take_notes(),
            [(Nanos::from_ms(3), "insert 7".to_string())]
        );
        assert!(s.take_notes().is_empty(), "taken once");
    }
}
