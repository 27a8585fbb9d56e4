//! A closed-loop test driver: processes that issue their next request a think time after the
//! previous one completes, a device with a cost function and a queue depth, and the
//! conservation checks of [`harness`](crate::harness) (every request dispatched and completed
//! exactly once, nothing dispatched that was not inserted).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::harness::rq;
use crate::request::{CtxId, GroupId, IoPrio, Op, Request};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;

/// Where a process's `n`th request (0-based) starts.
pub(crate) type Pattern = Box<dyn FnMut(u64) -> u64>;

/// One process.
pub(crate) struct Proc {
    pub ctx: u32,
    pub group: u32,
    pub prio: IoPrio,
    pub sectors: u32,
    pub think: Nanos,
    pub start: Nanos,
    pub op: Op,
    pub sync: bool,
    /// REQ_IDLE on its requests (an O_DIRECT writer).
    pub idle_hint: bool,
    pub pattern: Pattern,
}

impl Proc {
    /// A sequential reader of `sectors`-sized requests from `base`.
    pub fn seq_reader(ctx: u32, group: u32, base: u64, sectors: u32) -> Proc {
        Proc {
            ctx,
            group,
            prio: IoPrio::default(),
            sectors,
            think: Nanos::ZERO,
            start: Nanos::ZERO,
            op: Op::Read,
            sync: true,
            idle_hint: false,
            pattern: Box::new(move |n| base + n * u64::from(sectors)),
        }
    }
}

/// One dispatch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Served {
    pub at: Nanos,
    pub ctx: CtxId,
    pub group: GroupId,
}

/// What a run produced.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub bytes: Vec<u64>,
    pub max_latency: Vec<Nanos>,
    pub served: Vec<Served>,
    pub end: Nanos,
}

impl Run {
    /// Bytes completed by the processes of `group`.
    pub fn group_bytes(&self, procs_group: &[u32], group: u32) -> u64 {
        procs_group
            .iter()
            .zip(&self.bytes)
            .filter(|(g, _)| **g == group)
            .map(|(_, b)| b)
            .sum()
    }
}

/// Run `procs` against `sched` on a device of `depth` slots whose service time for a request
/// is `cost(request, head position)`, until `limit`.
pub(crate) fn run<S: Scheduler + ?Sized>(
    sched: &mut S,
    mut procs: Vec<Proc>,
    depth: usize,
    mut cost: impl FnMut(&Request, u64) -> Nanos,
    limit: Nanos,
) -> Run {
    let n = procs.len();
    let mut out = Run {
        bytes: vec![0; n],
        max_latency: vec![Nanos::ZERO; n],
        ..Run::default()
    };
    let by_ctx: HashMap<u32, usize> = procs.iter().enumerate().map(|(i, p)| (p.ctx, i)).collect();
    let mut arrivals: BTreeMap<(Nanos, u64), usize> = BTreeMap::new();
    let mut in_flight: BTreeMap<(Nanos, u64), Request> = BTreeMap::new();
    let mut issued = vec![0u64; n];
    let (mut inserted, mut dispatched, mut completed) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let mut seq = 0u64;
    for (i, p) in procs.iter().enumerate() {
        seq += 1;
        arrivals.insert((p.start, seq), i);
    }
    let mut now = Nanos::ZERO;
    let mut idle_until: Option<Nanos> = None;
    let mut head = 0u64;
    let mut next_id = 0u64;
    loop {
        // Pump the device.
        while in_flight.len() < depth {
            if idle_until.is_some_and(|u| u > now) {
                break;
            }
            match sched.dispatch(now) {
                Dispatch::Request(rq) => {
                    assert!(
                        inserted.contains(&rq.id.0),
                        "dispatched a request never inserted"
                    );
                    assert!(dispatched.insert(rq.id.0), "dispatched twice");
                    idle_until = None;
                    let done = now + cost(&rq, head);
                    head = rq.end();
                    out.served.push(Served {
                        at: now,
                        ctx: rq.ctx,
                        group: rq.group,
                    });
                    seq += 1;
                    in_flight.insert((done, seq), rq);
                }
                Dispatch::Idle { until } => {
                    assert!(until > now, "Idle until a time not in the future");
                    idle_until = Some(until);
                    break;
                }
                Dispatch::Empty => {
                    idle_until = None;
                    break;
                }
            }
        }
        let next_arrival = arrivals.keys().next().map(|k| k.0);
        let next_done = in_flight.keys().next().map(|k| k.0);
        let Some(t) = [next_arrival, next_done, idle_until]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if t > limit {
            break;
        }
        now = t;
        if next_done == Some(t) {
            let (_, rq) = in_flight.pop_first().expect("a completion");
            assert!(completed.insert(rq.id.0), "completed twice");
            sched.complete(&rq, now);
            idle_until = None;
            let p = by_ctx[&rq.ctx.0];
            out.bytes[p] += rq.bytes();
            let lat = now - rq.submitted;
            out.max_latency[p] = out.max_latency[p].max(lat);
            seq += 1;
            arrivals.insert((now + procs[p].think, seq), p);
        } else if next_arrival == Some(t) {
            let (_, p) = arrivals.pop_first().expect("an arrival");
            let proc = &mut procs[p];
            let sector = (proc.pattern)(issued[p]);
            issued[p] += 1;
            next_id += 1;
            let arrival = rq(next_id, proc.ctx)
                .group(proc.group)
                .op(proc.op)
                .sync(proc.sync)
                .idle_hint(proc.idle_hint)
                .sector(sector)
                .sectors(proc.sectors)
                .prio(proc.prio.class, proc.prio.level)
                .at(now)
                .build();
            inserted.insert(arrival.id.0);
            sched.insert(arrival, now);
            idle_until = None;
        } else {
            idle_until = None;
        }
    }
    for id in &completed {
        assert!(dispatched.contains(id));
    }
    out.end = now;
    out
}
