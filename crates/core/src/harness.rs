//! A small deterministic driver for tests: a fixed-cost device, a clock, and conservation checks.
//!
//! Policies' unit and property tests build a situation by hand with [`rq`], drive it with a
//! [`Harness`], and read back what was dispatched when. The harness asserts the driver-side
//! invariants as it goes: every request dispatched and completed exactly once, `now` never
//! decreasing, and no dispatch of a request that was never inserted; a run ends with every
//! request completed and nothing left in the policy. [`Outcome::longest_wait`] is what a
//! starvation bound is checked against. It is public: a policy written outside this crate is
//! tested with it the same way (docs/extending.md).
//!
//! What it does not do: it merges only through [`Scheduler::try_merge`] (never
//! [`Scheduler::merge_next`]), inserts at arrival (never [`Scheduler::allocate`]), asks for a
//! dispatch at an `Idle` deadline but never calls [`Scheduler::fire_timer`], and completes
//! each request after the time its cost function gives, at a fixed depth;
//! [`crate::block::BlockLayer`] is the whole protocol.

use std::collections::{BTreeMap, BTreeSet};

use crate::request::{
    CtxId, GroupId, IoClass, IoPrio, Op, Request, RequestId, DEFAULT_MERGE_SECTORS,
};

use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;

/// Start building a request with id `id` from context `ctx` (a 4 KiB sync read at sector 0).
pub fn rq(id: u64, ctx: u32) -> RequestBuilder {
    RequestBuilder(Request {
        id: RequestId(id),
        ctx: CtxId(ctx),
        group: GroupId::ROOT,
        op: Op::Read,
        sync: true,
        meta: false,
        idle_hint: false,
        sector: 0,
        sectors: 8,
        prio: IoPrio::default(),
        submitted: Nanos::ZERO,
        cpu: 0,
    })
}

/// Builder returned by [`rq`].
#[derive(Clone, Debug)]
pub struct RequestBuilder(Request);

impl RequestBuilder {
    /// First sector.
    pub fn sector(mut self, s: u64) -> Self {
        self.0.sector = s;
        self
    }
    /// Length in sectors.
    pub fn sectors(mut self, n: u32) -> Self {
        self.0.sectors = n;
        self
    }
    /// A (sync) read.
    pub fn read(mut self) -> Self {
        self.0.op = Op::Read;
        self.0.sync = true;
        self
    }
    /// An async write (writeback).
    pub fn write(mut self) -> Self {
        self.0.op = Op::Write;
        self.0.sync = false;
        self
    }
    /// A sync write (O_DIRECT or fsync).
    pub fn sync_write(mut self) -> Self {
        self.0.op = Op::Write;
        self.0.sync = true;
        self
    }
    /// The operation as a value (a trace's or a process's), leaving `sync` as it is.
    pub fn op(mut self, op: Op) -> Self {
        self.0.op = op;
        self
    }
    /// Whether the issuer waits for it, as a value.
    pub fn sync(mut self, sync: bool) -> Self {
        self.0.sync = sync;
        self
    }
    /// Linux REQ_IDLE, as a value (see [`Request::idle_hint`]).
    pub fn idle_hint(mut self, idle_hint: bool) -> Self {
        self.0.idle_hint = idle_hint;
        self
    }
    /// Group.
    pub fn group(mut self, g: u32) -> Self {
        self.0.group = GroupId(g);
        self
    }
    /// Priority class and level.
    pub fn prio(mut self, class: IoClass, level: u8) -> Self {
        self.0.prio = IoPrio { class, level };
        self
    }
    /// Mark as metadata.
    pub fn meta(mut self) -> Self {
        self.0.meta = true;
        self
    }
    /// Staged in CPU `cpu`'s software queue ([`Request::cpu`]).
    pub fn cpu(mut self, cpu: u32) -> Self {
        self.0.cpu = cpu;
        self
    }
    /// Submission time.
    pub fn at(mut self, t: Nanos) -> Self {
        self.0.submitted = t;
        self
    }
    /// The request.
    pub fn build(self) -> Request {
        self.0
    }
}

impl From<RequestBuilder> for Request {
    fn from(b: RequestBuilder) -> Request {
        b.0
    }
}

/// One dispatch as the harness saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The request as dispatched.
    pub rq: Request,
    /// When it was dispatched.
    pub dispatched: Nanos,
    /// When it completed.
    pub completed: Nanos,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Every dispatch in order.
    pub served: Vec<Served>,
    /// Every idle period the policy asked for: (asked at, until).
    pub idles: Vec<(Nanos, Nanos)>,
    /// Time at which the run ended.
    pub end: Nanos,
}

impl Outcome {
    /// Request ids in dispatch order.
    pub fn dispatch_order(&self) -> Vec<u64> {
        self.served.iter().map(|s| s.rq.id.0).collect()
    }
    /// Of the requests `of` accepts, the one that waited longest from its arrival (its
    /// `submitted` time) to its dispatch, and that wait: what a starvation bound is checked
    /// against (a policy that promises no request of a class waits more than `B` has
    /// `longest_wait(in_class) <= B` on every run; `|_| true` for every request). `None`
    /// when no such request was dispatched.
    pub fn longest_wait(&self, of: impl Fn(&Request) -> bool) -> Option<(RequestId, Nanos)> {
        self.served
            .iter()
            .filter(|s| of(&s.rq))
            .map(|s| (s.rq.id, s.dispatched.saturating_sub(s.rq.submitted)))
            .max_by_key(|&(id, wait)| (wait, std::cmp::Reverse(id.0)))
    }
    /// The record for request `id`.
    pub fn of(&self, id: u64) -> &Served {
        self.served
            .iter()
            .find(|s| s.rq.id.0 == id)
            .unwrap_or_else(|| panic!("request {id} was never dispatched"))
    }
}

/// Dispatch from `s` at `now` until it has nothing, completing each request at once; the ids
/// in dispatch order.
pub fn drain_ids(s: &mut impl Scheduler, now: Nanos) -> Vec<u64> {
    let mut order = Vec::new();
    while let Dispatch::Request(r) = s.dispatch(now) {
        s.complete(&r, now);
        order.push(r.id.0);
    }
    order
}

/// The id of the request `s` dispatches at `now` (not completed); panics if it dispatches none.
pub fn next_id(s: &mut impl Scheduler, now: Nanos) -> u64 {
    match s.dispatch(now) {
        Dispatch::Request(r) => r.id.0,
        other => panic!("no request at {now:?}: {other:?}"),
    }
}

/// A fixed-cost device driven by a clock, feeding a scheduler.
pub struct Harness<S: Scheduler> {
    /// The policy under test.
    pub sched: S,
    /// The current time.
    pub now: Nanos,
    depth: usize,
    cost: Box<dyn Fn(&Request) -> Nanos>,
    pending: BTreeMap<(Nanos, u64), Request>,
    in_flight: BTreeMap<(Nanos, u64), Request>,
    inserted: BTreeSet<u64>,
    merged: BTreeMap<u64, u64>,
    dispatched: BTreeSet<u64>,
    completed: BTreeSet<u64>,
    idle_until: Option<Nanos>,
    outcome: Outcome,
    seq: u64,
}

impl<S: Scheduler> Harness<S> {
    /// A device with `depth` slots whose service time for a request is `cost(rq)`.
    pub fn new(sched: S, depth: usize, cost: impl Fn(&Request) -> Nanos + 'static) -> Self {
        Harness {
            sched,
            now: Nanos::ZERO,
            depth,
            cost: Box::new(cost),
            pending: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            inserted: BTreeSet::new(),
            merged: BTreeMap::new(),
            dispatched: BTreeSet::new(),
            completed: BTreeSet::new(),
            idle_until: None,
            outcome: Outcome::default(),
            seq: 0,
        }
    }

    /// Queue `rq` to arrive at its `submitted` time.
    pub fn submit(&mut self, rq: impl Into<Request>) {
        let rq = rq.into();
        self.seq += 1;
        self.pending.insert((rq.submitted, self.seq), rq);
    }

    /// Every dispatch so far, in order (a run's [`Outcome::served`] before it ends).
    pub fn served(&self) -> &[Served] {
        &self.outcome.served
    }

    /// Run until nothing is pending, queued or in flight (or `limit` passes). Returns what
    /// happened; panics if a conservation invariant breaks.
    pub fn run(mut self) -> Outcome {
        self.run_until(Nanos::MAX);
        assert_eq!(
            self.sched.queued(),
            0,
            "{} still holds requests at the end",
            self.sched.name()
        );
        for id in &self.inserted {
            assert!(
                self.completed.contains(id),
                "request {id} inserted but never completed"
            );
        }
        self.outcome
    }

    /// Advance the run to `limit`, handling every event before it.
    pub fn run_until(&mut self, limit: Nanos) {
        loop {
            self.pump();
            let next_arrival = self.pending.keys().next().map(|k| k.0);
            let next_done = self.in_flight.keys().next().map(|k| k.0);
            let next_timer = self.idle_until;
            let next = [next_arrival, next_done, next_timer]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = next else {
                self.outcome.end = self.now;
                return;
            };
            if t > limit {
                self.now = limit.max(self.now);
                return;
            }
            assert!(t >= self.now, "time went backwards");
            self.now = t;
            if next_done == Some(t) {
                let (_, rq) = self.in_flight.pop_first().unwrap();
                assert!(self.completed.insert(rq.id.0), "completed twice");
                self.sched.complete(&rq, t);
                self.idle_until = None;
                let children: Vec<u64> = self
                    .merged
                    .iter()
                    .filter(|(_, &into)| into == rq.id.0)
                    .map(|(&c, _)| c)
                    .collect();
                for c in children {
                    self.merged.remove(&c);
                    assert!(self.completed.insert(c), "merged request completed twice");
                }
                if let Some(s) = self
                    .outcome
                    .served
                    .iter_mut()
                    .rev()
                    .find(|s| s.rq.id == rq.id)
                {
                    s.completed = t;
                }
            } else if next_arrival == Some(t) {
                let (_, rq) = self.pending.pop_first().unwrap();
                self.arrive(rq);
            } else {
                self.idle_until = None;
            }
        }
    }

    /// Exit context `ctx` now.
    pub fn exit(&mut self, ctx: u32) {
        self.sched.exit(CtxId(ctx), self.now);
    }

    fn arrive(&mut self, rq: Request) {
        assert!(self.inserted.insert(rq.id.0), "request id reused");
        if let Some(into) = self.sched.try_merge(&rq, DEFAULT_MERGE_SECTORS, self.now) {
            assert!(
                !self.dispatched.contains(&into.0),
                "merged into a dispatched request"
            );
            self.merged.insert(rq.id.0, into.0);
            return;
        }
        self.sched.insert(rq, self.now);
        self.idle_until = None;
    }

    fn pump(&mut self) {
        while self.in_flight.len() < self.depth {
            if let Some(until) = self.idle_until {
                if until > self.now {
                    return;
                }
            }
            match self.sched.dispatch(self.now) {
                Dispatch::Request(rq) => {
                    assert!(
                        self.inserted.contains(&rq.id.0),
                        "dispatched a request never inserted"
                    );
                    assert!(self.dispatched.insert(rq.id.0), "dispatched twice");
                    self.idle_until = None;
                    let done = self.now + (self.cost)(&rq);
                    self.seq += 1;
                    self.in_flight.insert((done, self.seq), rq.clone());
                    self.outcome.served.push(Served {
                        rq,
                        dispatched: self.now,
                        completed: Nanos::MAX,
                    });
                }
                Dispatch::Idle { until } => {
                    assert!(until > self.now, "Idle until a time not in the future");
                    self.outcome.idles.push((self.now, until));
                    self.idle_until = Some(until);
                    return;
                }
                Dispatch::Empty => {
                    self.idle_until = None;
                    return;
                }
            }
        }
    }
}
