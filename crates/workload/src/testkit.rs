//! A tiny hand driver for jobs: a FIFO device with a fixed number of slots and a fixed (or
//! per-request) service time, no scheduler. Tests of jobs (here and in other crates) use it to
//! check a job's own behaviour: how many requests it keeps outstanding, what it reads, when its
//! contexts exit, whether it finishes.
//!
//! The driver follows the [`Job`] contract exactly: it polls at start, after every completion and
//! at every `Think` deadline, each time until the job answers `Think`, `Wait` or `Done`. It
//! panics (this is test code) when a job breaks the contract in a way no driver can survive:
//! a tag issued twice while outstanding, or a job that neither waits nor thinks.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use elevator_core::Nanos;

use crate::job::{Action, IoSpec, Job};

/// One I/O as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    /// What the job asked for.
    pub spec: IoSpec,
    /// When it was issued.
    pub at: Nanos,
    /// When it completed (`None` if the run ended first).
    pub done: Option<Nanos>,
}

/// What a run of one job produced.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Every I/O in issue order.
    pub issued: Vec<Issued>,
    /// The size of each submission call of several I/Os ([`Action::Batch`]), in order.
    pub batches: Vec<usize>,
    /// Every context exit: (local context, time).
    pub exits: Vec<(u32, Nanos)>,
    /// When the job said `Done`, if it did.
    pub done_at: Option<Nanos>,
    /// Most I/Os outstanding at once (issued, not completed).
    pub max_outstanding: usize,
    /// Most I/Os outstanding at once, per local context.
    pub max_outstanding_per_ctx: BTreeMap<u32, usize>,
    /// Most I/Os marked `sync` (the issuer waits for them) outstanding at once, per local
    /// context. Readahead reads the issuer does not wait for are marked not `sync`.
    pub max_sync_outstanding_per_ctx: BTreeMap<u32, usize>,
    /// I/Os still outstanding when the job said `Done`.
    pub outstanding_at_done: usize,
    /// Context that issued after it exited, if any (a contract violation).
    pub issue_after_exit: Option<u32>,
    /// The job waited with nothing outstanding and no deadline: it can never be woken.
    pub stuck: bool,
    /// The time the run stopped.
    pub end: Nanos,
}

impl Record {
    /// Tags in issue order.
    pub fn tags(&self) -> Vec<u64> {
        self.issued.iter().map(|i| i.spec.tag).collect()
    }
}

/// A FIFO device with `depth` slots and a service time per request.
pub struct HandDriver {
    depth: usize,
    cost: Box<dyn Fn(&IoSpec) -> Nanos>,
    limit: Nanos,
}

impl HandDriver {
    /// A device with `depth` slots serving each request in `delay`, stopping at `limit`.
    pub fn new(depth: usize, delay: Nanos, limit: Nanos) -> HandDriver {
        HandDriver::with_cost(depth, move |_| delay, limit)
    }

    /// A device with `depth` slots serving a request in `cost(spec)`, stopping at `limit`.
    pub fn with_cost(
        depth: usize,
        cost: impl Fn(&IoSpec) -> Nanos + 'static,
        limit: Nanos,
    ) -> HandDriver {
        HandDriver {
            depth: depth.max(1),
            cost: Box::new(cost),
            limit,
        }
    }

    /// Run `job` from time zero until it is done and its I/O has drained, it is stuck, or the
    /// limit passes.
    pub fn run(&self, job: &mut dyn Job) -> Record {
        let mut rec = Record::default();
        let mut now = Nanos::ZERO;
        let mut queue: VecDeque<usize> = VecDeque::new();
        let mut in_service: BTreeMap<(Nanos, u64), usize> = BTreeMap::new();
        let mut outstanding: BTreeSet<u64> = BTreeSet::new();
        let mut per_ctx: BTreeMap<u32, usize> = BTreeMap::new();
        let mut sync_per_ctx: BTreeMap<u32, usize> = BTreeMap::new();
        let mut exited: BTreeSet<u32> = BTreeSet::new();
        let mut wake: Option<Nanos> = None;
        let mut seq = 0u64;
        let mut done = false;
        loop {
            if !done {
                wake = None;
                let mut spins = 0u32;
                loop {
                    spins += 1;
                    assert!(
                        spins < 1_000_000,
                        "{} polled a million times at {now}",
                        job.name()
                    );
                    // An I/O issued alone is a submission call of one.
                    let action = match job.poll(now) {
                        Action::Issue(spec) => Action::Batch(vec![spec]),
                        Action::Batch(specs) => {
                            rec.batches.push(specs.len());
                            Action::Batch(specs)
                        }
                        other => other,
                    };
                    match action {
                        Action::Issue(_) => unreachable!("made a batch of one above"),
                        Action::Batch(specs) => {
                            for spec in specs {
                                assert!(
                                    outstanding.insert(spec.tag),
                                    "{} issued tag {} while it was outstanding",
                                    job.name(),
                                    spec.tag
                                );
                                if exited.contains(&spec.ctx) {
                                    rec.issue_after_exit = Some(spec.ctx);
                                }
                                let c = per_ctx.entry(spec.ctx).or_default();
                                *c += 1;
                                let m = rec.max_outstanding_per_ctx.entry(spec.ctx).or_default();
                                *m = (*m).max(*c);
                                if spec.sync {
                                    let c = sync_per_ctx.entry(spec.ctx).or_default();
                                    *c += 1;
                                    let m = rec
                                        .max_sync_outstanding_per_ctx
                                        .entry(spec.ctx)
                                        .or_default();
                                    *m = (*m).max(*c);
                                }
                                rec.max_outstanding = rec.max_outstanding.max(outstanding.len());
                                queue.push_back(rec.issued.len());
                                rec.issued.push(Issued {
                                    spec,
                                    at: now,
                                    done: None,
                                });
                            }
                        }
                        Action::Exit { ctx } => {
                            exited.insert(ctx);
                            rec.exits.push((ctx, now));
                        }
                        Action::Think { until } => {
                            if until > now {
                                wake = Some(until);
                                break;
                            }
                        }
                        Action::Wait => break,
                        Action::Done => {
                            done = true;
                            rec.done_at = Some(now);
                            rec.outstanding_at_done = outstanding.len();
                            break;
                        }
                    }
                }
            }
            while in_service.len() < self.depth {
                let Some(i) = queue.pop_front() else { break };
                seq += 1;
                let t = now + (self.cost)(&rec.issued[i].spec);
                in_service.insert((t, seq), i);
            }
            let next_done = in_service.keys().next().map(|k| k.0);
            let next = match (next_done, wake) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => {
                    rec.stuck = !done;
                    break;
                }
            };
            if next > self.limit {
                break;
            }
            now = next;
            if next_done == Some(now) {
                let (_, i) = in_service.pop_first().expect("a request in service");
                rec.issued[i].done = Some(now);
                let spec = &rec.issued[i].spec;
                outstanding.remove(&spec.tag);
                *per_ctx.get_mut(&spec.ctx).expect("counted at issue") -= 1;
                if spec.sync {
                    *sync_per_ctx.get_mut(&spec.ctx).expect("counted at issue") -= 1;
                }
                if !done {
                    job.complete(spec.tag, now);
                }
            }
        }
        rec.end = now;
        rec
    }
}
