//! A closed-loop driver for the anticipatory scheduler's tests: processes that think, issue a
//! request, and wait for it when it is sync (a dependent reader), on a device of some depth
//! whose service time is given by a function. Unlike the shared harness (open loop: arrivals
//! at fixed times), arrivals here depend on completions, which is what anticipation is about.
//! It checks conservation as it goes and records every dispatch, completion and idle period.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Anticipatory;
use crate::harness::rq;
use crate::request::{CtxId, Op, Request, DEFAULT_MERGE_SECTORS};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;

/// One step of a process: think, then issue a request.
#[derive(Clone, Debug)]
pub struct Step {
    /// Time spent before issuing (after the previous sync request completed).
    pub think: Nanos,
    /// Read or write.
    pub op: Op,
    /// Whether the process waits for it (reads always do).
    pub sync: bool,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
}

impl Step {
    /// A dependent read.
    pub fn read(think: Nanos, sector: u64) -> Step {
        Step {
            think,
            op: Op::Read,
            sync: true,
            sector,
            sectors: 8,
        }
    }
    /// An async write (writeback): the process goes on at once.
    pub fn write(think: Nanos, sector: u64) -> Step {
        Step {
            think,
            op: Op::Write,
            sync: false,
            sector,
            sectors: 8,
        }
    }
}

/// A process: a context id, when it starts, and its steps. It exits after its last step.
#[derive(Clone, Debug)]
pub struct Job {
    /// Context id.
    pub ctx: u32,
    /// Start time.
    pub start: Nanos,
    /// What it does.
    pub steps: Vec<Step>,
}

/// One dispatched request.
#[derive(Clone, Debug)]
pub struct Record {
    /// As dispatched.
    pub rq: Request,
    /// When dispatched.
    pub dispatched: Nanos,
    /// When completed.
    pub completed: Nanos,
}

/// One `Idle` answer.
#[derive(Clone, Copy, Debug)]
pub struct IdleRecord {
    /// When the scheduler answered.
    pub at: Nanos,
    /// Until when it asked the device to stay idle.
    pub until: Nanos,
    /// The process it was anticipating.
    pub anticipated: Option<CtxId>,
}

/// What a run produced.
#[derive(Debug, Default)]
pub struct Run {
    /// Dispatches in order.
    pub served: Vec<Record>,
    /// Idle answers.
    pub idles: Vec<IdleRecord>,
    /// Every completion: (time, ctx of the completed request).
    pub completions: Vec<(Nanos, CtxId)>,
    /// Requests issued (inserted or merged).
    pub issued: usize,
    /// Requests absorbed by a merge.
    pub merged: usize,
    /// End time.
    pub end: Nanos,
}

impl Run {
    /// Records of context `ctx`, in dispatch order.
    pub fn of_ctx(&self, ctx: u32) -> Vec<&Record> {
        self.served.iter().filter(|r| r.rq.ctx.0 == ctx).collect()
    }
}

struct JobState {
    job: Job,
    next: usize,
    ready_at: Option<Nanos>,
    waiting_on: Option<u64>,
}

/// Run `jobs` against `sched` on a device with `depth` slots and service time `cost`.
/// Request ids are assigned in issue order from 1. Panics when conservation breaks.
pub fn run(
    sched: &mut Anticipatory,
    jobs: Vec<Job>,
    depth: usize,
    cost: impl Fn(&Request) -> Nanos,
) -> Run {
    let mut out = Run::default();
    let mut states: Vec<JobState> = jobs
        .into_iter()
        .map(|job| JobState {
            ready_at: Some(job.start),
            job,
            next: 0,
            waiting_on: None,
        })
        .collect();
    let mut now = Nanos::ZERO;
    let mut seq = 0u64;
    let mut next_id = 1u64;
    let mut in_flight: BTreeMap<(Nanos, u64), Request> = BTreeMap::new();
    let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut inserted: HashSet<u64> = HashSet::new();
    let mut dispatched: HashSet<u64> = HashSet::new();
    let mut completed: HashSet<u64> = HashSet::new();
    let mut idle_until: Option<Nanos> = None;

    loop {
        // Feed the device.
        while in_flight.len() < depth && idle_until.is_none_or(|u| u <= now) {
            match sched.dispatch(now) {
                Dispatch::Request(rq) => {
                    assert!(
                        inserted.contains(&rq.id.0),
                        "dispatched {} never inserted",
                        rq.id.0
                    );
                    assert!(dispatched.insert(rq.id.0), "dispatched {} twice", rq.id.0);
                    idle_until = None;
                    seq += 1;
                    in_flight.insert((now + cost(&rq), seq), rq.clone());
                    out.served.push(Record {
                        rq,
                        dispatched: now,
                        completed: Nanos::MAX,
                    });
                }
                Dispatch::Idle { until } => {
                    assert!(until > now, "idle until {until} at {now}");
                    out.idles.push(IdleRecord {
                        at: now,
                        until,
                        anticipated: sched.anticipated(),
                    });
                    idle_until = Some(until);
                    break;
                }
                Dispatch::Empty => {
                    idle_until = None;
                    break;
                }
            }
        }
        let next_done = in_flight.keys().next().map(|k| k.0);
        let next_job = states.iter().filter_map(|s| s.ready_at).min();
        let Some(t) = [next_done, next_job, idle_until]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        assert!(t >= now, "time went backwards");
        now = t;
        if next_done == Some(t) {
            let (_, rq) = in_flight.pop_first().expect("in flight");
            sched.complete(&rq, now);
            idle_until = None;
            out.completions.push((now, rq.ctx));
            let mut done = vec![rq.id.0];
            done.extend(children.remove(&rq.id.0).unwrap_or_default());
            for id in done {
                assert!(completed.insert(id), "completed {id} twice");
                for st in states.iter_mut().filter(|s| s.waiting_on == Some(id)) {
                    st.waiting_on = None;
                    wake(st, sched, now);
                }
            }
            if let Some(r) = out.served.iter_mut().rev().find(|r| r.rq.id == rq.id) {
                r.completed = now;
            }
        } else if next_job == Some(t) {
            let st = states
                .iter_mut()
                .find(|s| s.ready_at == Some(t))
                .expect("ready job");
            st.ready_at = None;
            let step = st.job.steps[st.next].clone();
            st.next += 1;
            let issued = rq(next_id, st.job.ctx)
                .op(step.op)
                .sync(step.sync || step.op == Op::Read)
                .sector(step.sector)
                .sectors(step.sectors)
                .at(now)
                .build();
            next_id += 1;
            out.issued += 1;
            let id = issued.id.0;
            let sync = issued.is_sync();
            inserted.insert(id);
            if let Some(into) = sched.try_merge(&issued, DEFAULT_MERGE_SECTORS, now) {
                assert!(
                    !dispatched.contains(&into.0),
                    "merged into dispatched {}",
                    into.0
                );
                children.entry(into.0).or_default().push(id);
                out.merged += 1;
            } else {
                sched.insert(issued, now);
            }
            idle_until = None;
            if sync {
                st.waiting_on = Some(id);
            } else {
                wake(st, sched, now);
            }
        } else {
            idle_until = None;
        }
    }
    assert_eq!(sched.queued(), 0, "requests left queued at the end");
    for id in &inserted {
        assert!(completed.contains(id), "request {id} never completed");
    }
    out.end = now;
    out
}

/// A process whose last request finished goes on: thinks, or exits if it has nothing left.
fn wake(st: &mut JobState, sched: &mut Anticipatory, now: Nanos) {
    match st.job.steps.get(st.next) {
        Some(step) => st.ready_at = Some(now + step.think),
        None => sched.exit(CtxId(st.job.ctx), now),
    }
}
