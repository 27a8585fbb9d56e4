//! The replay: our block layer fed the kernel's request stream on a virtual clock, asked at
//! the kernel's decisions ([`super::diff_with_log`] builds it and compares the two logs).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use elevator_core::block::{Allocation, Bio, BlockLayer, Done, Limits};
use elevator_core::{CtxId, GroupId, IoClass, IoPrio, Nanos, Op, RequestId, Scheduler};

use super::cross_cpu::MovedBefore;
use super::*;

/// A kernel event of the replay's timeline.
#[derive(Clone, Copy, Debug)]
enum KEvent {
    /// A request is allocated ahead of its insertion ([`Replay::allocations`]) as the
    /// kernel's task got its tag: at once, at the depth `limit_depth` gave it
    /// ([`Allocation::Now`]); sleeping for it, its depth decided here and its tag taken at
    /// its [`KEvent::TagGot`] ([`Allocation::Sleeping`]); or from its plug's batch of tags,
    /// with no depth of its own ([`Allocation::Batched`], [`BfqLogTimes::batched`]).
    Allocate(usize, Allocation),
    /// The kernel's task got request `i`'s tag (its `block_getrq`).
    TagGot(usize),
    Arrive(usize),
    /// A bio merged into a queued request ([`KernelTrace::sched_bios`]).
    Merge(usize),
    /// A queue run of the kernel started just after this insertion ([`own_runs`]): ours
    /// decides here what the kernel issues at the next dispatch.
    OwnRun,
    /// A kernel dispatch of request `kernel` (its first bio's index); `early`: ours
    /// decided it at the [`KEvent::OwnRun`] before.
    Dispatch {
        early: bool,
        kernel: usize,
    },
    /// A process exited.
    Exit(u32),
    /// The kernel's queue run ended: its scheduler returned nothing (no tracepoint shows
    /// it: [`Replay::with_empty_runs`]).
    EmptyRun,
    /// A dispatch call of bfq's that returned nothing after changing its state, as its log
    /// shows it ([`BfqLogTimes::refused_calls`]): made whatever bfq held queued
    /// ([`Replay::empty_run`]).
    RefusedCall,
}

/// The replay's state: our block layer on a virtual clock.
pub(super) struct Replay<'a> {
    trace: &'a KernelTrace,
    blk: BlockLayer<Box<dyn Scheduler>, usize>,
    pace: Pace,
    /// Whether ours is asked at the kernel's empty runs ([`asked_at_empty_runs`]).
    empty_runs: bool,
    /// Whether ours gets the kernel's software queues: requests on their CPUs, decisions at
    /// their runs' starts ([`software_queues_replayed`]).
    pub(super) own_runs: bool,
    /// Whether ours gets each request's allocating CPU without the software queues
    /// ([`allocating_cpus_replayed`]).
    pub(super) allocating_cpus: bool,
    /// Ours decided at a [`KEvent::OwnRun`] and has not logged it: the next dispatch of
    /// ours goes to [`Replay::deferred`].
    defer: bool,
    /// A dispatch ours decided early, logged at the kernel's dispatch it stands for (after
    /// the insertions between, as the kernel's log has them).
    deferred: Vec<QueueEvent>,
    /// The insertion just replayed is not the last of its plug's batch, which 6.18's
    /// `blk_mq_dispatch_list` inserts whole (`insert_requests`) before the one queue run
    /// that follows it (`blk_mq_run_hw_queue`). A run that finds every driver tag taken takes the scheduler's
    /// next request to wait for one (`Limits::dequeues_without_driver_tag`): ours makes it
    /// after the batch's last insertion, as the kernel's run does, not after the first.
    batch_open: bool,
    /// The request the kernel issued at the dispatch ours is asked for now: the device
    /// slot ours' next dispatch takes ([`Self::completion_at`]).
    slot: Option<usize>,
    now: Nanos,
    /// Kernel dispatches ours may still make; below zero, what ours dispatched at the
    /// kernel's empty runs ahead of the kernel.
    credits: i64,
    submitted: Vec<bool>,
    /// Our request allocated for each kernel request ahead of its insertion, until then.
    allocated: Vec<Option<RequestId>>,
    /// Requests (by kernel index) ours has dispatched.
    dispatched: Vec<bool>,
    /// Scheduler merges the replay did not submit: ours had dispatched the request already.
    merges_missed: usize,
    completions: BinaryHeap<Reverse<(Nanos, u64, Nanos)>>,
    log: Vec<QueueEvent>,
    median: Nanos,
    /// When bfq learned of each request's completion ([`BfqLogTimes::completions`]).
    completion_seen: &'a [Option<Nanos>],
    done: Vec<Done<usize>>,
    /// What each context's bios carry in place of their own.
    contexts: Contexts<'a>,
    /// Where each scheduler merge comes in the log replayed (events before it): the
    /// trace's, or bfq's log order's ([`LogOrder::merge_after`]).
    merge_after: Vec<usize>,
    /// When bfq chose each request, by index ([`LogOrder::decided`]; empty without a log):
    /// the kernel's dispatch, where ours is asked, there.
    decided: &'a [Option<Nanos>],
    /// When bfq decided each request's depth, by index ([`BfqLogTimes::depths`]).
    depths: &'a [Option<Nanos>],
    /// Whether each request came from its plug's batch of tags ([`BfqLogTimes::batched`]).
    batched: &'a [bool],
    /// The groups bfq's log puts each process's queues in ([`QueueCgroups`]).
    queue_cgroups: &'a QueueCgroups,
    /// Requests (by our id) whose choice was logged when a run parked them for a driver tag
    /// ([`Self::log_parked`]), each with the time before which no run of the kernel's issued
    /// it: their later issue is neither logged nor owed a dispatch.
    logged_parked: HashMap<u64, Nanos>,
    /// When a parked request's kernel issue lets it go to the device ([`Self::log_parked`]).
    parked_wakes: BinaryHeap<Reverse<Nanos>>,
    /// The kernel's decisions ours is asked for before the insertions just before them
    /// ([`set_aside_cross_cpu_insertions`](super::cross_cpu::set_aside_cross_cpu_insertions)).
    pub(super) moved_before: Vec<MovedBefore>,
}

/// What the replay gives each context's bios: its priority and its group, by context pid.
pub(super) struct Contexts<'a> {
    /// Each io_context's priority, given to its bios in place of their own.
    pub(super) prios: &'a HashMap<u32, IoPrio>,
    /// Each process's group.
    pub(super) groups: &'a ContextGroups,
}

impl<'a> Replay<'a> {
    pub(super) fn new(
        trace: &'a KernelTrace,
        sched: Box<dyn Scheduler>,
        limits: Limits,
        pace: Pace,
        empty_runs: bool,
        bfq_log: &'a BfqLogTimes,
        contexts: Contexts<'a>,
    ) -> Replay<'a> {
        let completion_seen = &bfq_log.completions[..];
        let order = bfq_log.order.as_ref();
        let service = |r: &TracedRequest| {
            let end = completion_seen.get(r.index).copied().flatten();
            Self::kernel_service(r, end)
        };
        let mut services: Vec<Nanos> = trace.requests.iter().filter_map(service).collect();
        services.sort();
        let mut blk = BlockLayer::new(sched, limits);
        blk.keep_merged_away();
        if pace == Pace::Kernel && order.is_some_and(|o| !o.decided.is_empty()) {
            // bfq's log times its choices, a parked request's when it was parked.
            blk.keep_parked();
        }
        blk.set_timer_latency(TIMER_LATENCY);
        if pace == Pace::Kernel {
            // The kernel's timer ran its handler at these times (one per device).
            blk.set_timer_fires(bfq_log.timer_fires.clone());
        }
        Replay {
            trace,
            blk,
            pace,
            empty_runs,
            own_runs: false,
            allocating_cpus: false,
            defer: false,
            slot: None,
            deferred: Vec::new(),
            batch_open: false,
            now: Nanos::ZERO,
            credits: 0,
            submitted: vec![false; trace.requests.len()],
            allocated: vec![None; trace.requests.len()],
            dispatched: vec![false; trace.requests.len()],
            merges_missed: 0,
            completions: BinaryHeap::new(),
            log: Vec::new(),
            median: services
                .get(services.len() / 2)
                .copied()
                .unwrap_or(Nanos::ZERO),
            completion_seen,
            done: Vec::new(),
            contexts,
            merge_after: order.map_or_else(
                || trace.sched_bios.iter().map(|m| m.after).collect(),
                |o| o.merge_after.clone(),
            ),
            decided: order.map_or(&[][..], |o| &o.decided),
            depths: &bfq_log.depths,
            batched: &bfq_log.batched,
            queue_cgroups: &bfq_log.queue_cgroups,
            moved_before: Vec::new(),
            logged_parked: HashMap::new(),
            parked_wakes: BinaryHeap::new(),
        }
    }

    /// The first value `f` gives along request `i`'s chain: `i` (its host when `i` is a
    /// scheduler merge's bio ours made a request of its own, token `requests.len() + k`),
    /// then each request the kernel merged it into.
    fn along_merges<R>(&self, i: usize, mut f: impl FnMut(usize) -> Option<R>) -> Option<R> {
        let mut k = match i
            .checked_sub(self.trace.requests.len())
            .and_then(|m| self.trace.sched_bios.get(m))
        {
            Some(m) => m.host,
            None => i,
        };
        for _ in 0..self.trace.requests.len() {
            if let Some(v) = f(k) {
                return Some(v);
            }
            match self.trace.requests[k].merged_into {
                Some(j) => k = j,
                None => break,
            }
        }
        None
    }

    /// When bfq's log shows the kernel learned of request `k`'s completion, if it does.
    fn seen(&self, k: usize) -> Option<Nanos> {
        self.completion_seen.get(k).copied().flatten()
    }

    /// The kernel's service time for request `i` (its host's when merged away; a scheduler
    /// merge's bio ours made a request of its own, its host's).
    fn service(&self, i: usize) -> Nanos {
        self.along_merges(i, |k| {
            Self::kernel_service(&self.trace.requests[k], self.seen(k))
        })
        .unwrap_or(self.median)
    }

    /// When ours completes request `i`, dispatched now: after the kernel's service time for
    /// it ([`Self::service`]), and at the kernel's pace no earlier than bfq's log shows the
    /// kernel learned of the completion. Ours dispatches at the time the log shows the
    /// choice, a few microseconds before the issue event the service counts from, so a
    /// completion would otherwise reach ours before insertions it followed in the kernel
    /// (bfq's stamps at an insertion, `bfq_check_waker`'s among them, compare with it).
    /// With it, an estimate of when bfq read its clock for the completion
    /// ([`Scheduler::complete_clocked`](elevator_core::Scheduler::complete_clocked)):
    /// `bfq_completed_request` stamps `last_completion` under `bfqd->lock`, after
    /// `block_rq_complete` and before the log's note; the midpoint of the two is taken, the
    /// first end never before the recorded `block_rq_complete` (`bfq_finish_requeue_request`
    /// runs after `blk_update_request` traced it, so its clock cannot read earlier; an
    /// estimate from our own dispatch time could, and then ours judged an injection's
    /// sample against a completion that had not happened: per-io-priorities-cmdprio's
    /// `bfq_update_inject_limit` at 23376.457959).
    ///
    /// Without bfq's log, ours' request holds the device slot of `slot`, the request the
    /// kernel issued at the decision ours made now, and leaves it when that request's
    /// completion freed it in the kernel (`blk_mq_end_request`, `__blk_mq_free_request`
    /// releasing its driver tag): the loop device's tags are what a run that finds none
    /// free parks a request for (`__blk_mq_do_dispatch_sched`), and a request ours sent
    /// early or late, timed by its own service, left ours a tag the kernel did not have
    /// (deep-randwriter-qd256-beside-qd1-reader-defaults: 774336, ours' at kblockd's issue
    /// of 778496, completed 3.8 ms before the kernel's, and at 28627.348484 ours had a tag
    /// free where the kernel's run parked 334912). bfq's completions stay its own
    /// requests' ([`Self::seen`]): its log names the request whose completion it learned.
    fn completion_at(&self, i: usize, slot: Option<usize>) -> (Nanos, Nanos) {
        let at = self.now + self.service(i);
        if self.pace != Pace::Kernel {
            return (at, at);
        }
        if self.completion_seen.is_empty() {
            let freed = slot.and_then(|k| {
                self.along_merges(k, |j| {
                    let r = &self.trace.requests[j];
                    r.ended.or(r.completed)
                })
            });
            if let Some(freed) = freed {
                let at = freed.max(self.now);
                return (at, at);
            }
        }
        match self.along_merges(i, |k| self.seen(k)) {
            Some(seen) => {
                let at = at.max(seen);
                let event = self.along_merges(i, |k| self.trace.requests[k].service());
                let completed = self.along_merges(i, |k| self.trace.requests[k].completed);
                let clock = event.map_or(at, |s| {
                    let event = (self.now + s).max(completed.unwrap_or(Nanos::ZERO)).min(at);
                    Nanos(event.0 + (at.0 - event.0) / 2)
                });
                (at, clock)
            }
            None => (at, at),
        }
    }

    /// From `r`'s dispatch to `end`, when the scheduler learned of its completion, else to
    /// its end after a post-flush ([`TracedRequest::ended`]: where the kernel's scheduler
    /// learns of it), else to its completion event ([`TracedRequest::service`]). From its
    /// issue event even where
    /// bfq's log places the choice earlier ([`LogOrder::decided`]): the device's service
    /// time, which counting from the choice lowered the agreement (docs/kernel-agreement.md).
    fn kernel_service(r: &TracedRequest, end: Option<Nanos>) -> Option<Nanos> {
        match end.or(r.ended) {
            Some(end) => Some(Nanos(end.0.checked_sub(r.issued?.0)?)),
            None => r.service(),
        }
    }

    /// The kernel's timeline: arrivals and dispatches in trace order, with their times.
    fn timeline(&self, log: &[QueueEvent]) -> Vec<(Nanos, KEvent)> {
        let reqs = &self.trace.requests;
        let mut seen = vec![false; reqs.len()];
        let mut out = Vec::new();
        let mut nth_issue: HashMap<usize, usize> = HashMap::new();
        let mut last = Nanos::ZERO;
        // Scheduler merges: at their place in the kernel's event order; in the diagnostic
        // pace, whose log is reordered, just before their request's dispatch.
        let merges: &[SchedBio] = &self.trace.sched_bios;
        let mut next_merge = 0;
        let (starts, early) = if self.own_runs && self.pace == Pace::Kernel {
            own_runs(self.trace, log)
        } else {
            (vec![false; log.len()], vec![false; log.len()])
        };
        let mut by_host: HashMap<usize, Vec<usize>> = HashMap::new();
        if self.pace == Pace::Early {
            for (k, m) in merges.iter().enumerate() {
                by_host.entry(m.host).or_default().push(k);
            }
        }
        for (pos, e) in log.iter().enumerate() {
            if self.pace != Pace::Early {
                while let Some(m) = merges
                    .get(next_merge)
                    .filter(|_| self.merge_after[next_merge] <= pos)
                {
                    last = m.time.max(last);
                    out.push((last, KEvent::Merge(next_merge)));
                    next_merge += 1;
                }
            } else if let QueueEvent::Dispatch(i) = *e {
                if !nth_issue.contains_key(&i) {
                    for &k in by_host.get(&i).into_iter().flatten() {
                        out.push((last, KEvent::Merge(k)));
                    }
                }
            }
            match *e {
                QueueEvent::Arrive(i) => {
                    if !seen[i] && reqs[i].bio().is_some() {
                        seen[i] = true;
                        let t = reqs[i].arrival().unwrap_or(last).max(last);
                        last = t;
                        out.push((t, KEvent::Arrive(i)));
                    }
                    if starts[pos] {
                        out.push((last, KEvent::OwnRun));
                    }
                }
                QueueEvent::Leave(_) => {}
                QueueEvent::Dispatch(i) => {
                    let n = nth_issue.entry(i).or_insert(0);
                    *n += 1;
                    // bfq's log's time of its choice, else the issue event's.
                    let first = *n == 1;
                    let issued = self
                        .decided
                        .get(i)
                        .copied()
                        .flatten()
                        .filter(|_| first)
                        .or_else(|| {
                            self.trace
                                .first_dispatch(i)
                                .filter(|_| first)
                                .map(|d| d.time)
                        })
                        .or(reqs[i].issued)
                        .unwrap_or(last)
                        .max(last);
                    let t = match self.pace {
                        Pace::Early => reqs[i].arrival().unwrap_or(last).max(last),
                        Pace::Kernel | Pace::Device => issued,
                    };
                    if !seen[i] && reqs[i].bio().is_some() {
                        seen[i] = true;
                        out.push((t, KEvent::Arrive(i)));
                    }
                    last = t;
                    out.push((
                        t,
                        KEvent::Dispatch {
                            early: early[pos],
                            kernel: i,
                        },
                    ));
                }
            }
        }
        if self.pace == Pace::Kernel && self.empty_runs {
            out = Self::with_empty_runs(out);
            out = self.with_blocked_insertion_runs(out);
        }
        out
    }

    /// `timeline` with a [`KEvent::EmptyRun`] after each insertion the kernel's mq-deadline
    /// could not dispatch from: a request inserted below a priority level that has a request
    /// in flight (issued, not completed) and none in its lists, nor any level above it
    /// ([`run_returns_nothing`]), with no dispatch within 20 us and not followed by
    /// another insertion of the same task (one run after a plugged batch). The queue run after an
    /// insertion (`blk_mq_run_hw_queue`, in the inserting task or kblockd) calls
    /// `dd_dispatch_request`, whose `dd_dispatch_prio_aged_requests` asks the lower levels
    /// with an aged latest start when two levels have requests (`dd_queued`): a write queued
    /// alone there starts a write batch (`last_dir` WRITE, `batching` 0, `starved` 0) and is
    /// refused as young; the priority loop then stops at the busy higher level, and the run
    /// returns nothing, which no tracepoint shows. Such a run returned nothing whenever it
    /// came, so it is replayed at the insertion; an insertion the scheduler could have
    /// dispatched from is not (its run may have been kblockd's, later: the module docs).
    fn with_blocked_insertion_runs(&self, timeline: Vec<(Nanos, KEvent)>) -> Vec<(Nanos, KEvent)> {
        let reqs = &self.trace.requests;
        // mq-deadline's level of a request (`dd_rq_ioclass`; class none is best effort).
        let level = |r: &TracedRequest| match r.prio.and_then(|p| p.io_prio()).map(|p| p.class) {
            Some(IoClass::RealTime) => 0,
            Some(IoClass::Idle) => 2,
            _ => 1,
        };
        // Each level's requests in flight by time: issues and completions in time order.
        let mut flights: Vec<(Nanos, bool, usize)> = Vec::new();
        for r in reqs
            .iter()
            .filter(|r| r.op().is_some_and(|op| op != Op::Flush))
        {
            if let (Some(issued), Some(done)) = (r.issued, r.ended.or(r.completed)) {
                flights.push((issued, true, level(r)));
                flights.push((done, false, level(r)));
            }
        }
        flights.sort_by_key(|&(t, issue, _)| (t, issue));
        // A dispatch this soon after an insertion is taken as its run's (the corpus's runs
        // issue within a few microseconds of the insertion that started them).
        const SAME_RUN: Nanos = Nanos::from_us(20);
        let mut in_flight = [0i64; 3];
        let mut next = 0;
        // The requests inserted and not yet issued (in mq-deadline's lists), as far as seen.
        let mut in_lists: Vec<usize> = Vec::new();
        let mut out = Vec::with_capacity(timeline.len());
        for (p, &e) in timeline.iter().enumerate() {
            out.push(e);
            let (t, KEvent::Arrive(i)) = e else { continue };
            while let Some(&(_, issue, l)) = flights.get(next).filter(|f| f.0 <= t) {
                in_flight[l] += if issue { 1 } else { -1 };
                next += 1;
            }
            in_lists.push(i);
            in_lists.retain(|&j| {
                reqs[j].merged_into.is_none() && reqs[j].issued.is_none_or(|at| at > t)
            });
            let mut listed = [0i64; 3];
            for &j in &in_lists {
                listed[level(&reqs[j])] += 1;
            }
            // The run comes after the last of a task's insertions in a row (a plug's
            // batch, `blk_mq_flush_plug_list`), or is a dispatch the trace shows at once
            // (a dispatch later than that is another run's).
            let run_later = match timeline.get(p + 1) {
                Some((at, KEvent::Dispatch { .. })) => *at <= t + SAME_RUN,
                Some((_, KEvent::Arrive(j))) => reqs[*j].pid == reqs[i].pid,
                _ => false,
            };
            let below_busy = run_returns_nothing(level(&reqs[i]), &listed, &in_flight);
            if below_busy && !run_later {
                out.push((t, KEvent::EmptyRun));
            }
        }
        out
    }

    /// `timeline` with two [`KEvent::EmptyRun`]s after the last dispatch of each of the
    /// kernel's queue runs: `__blk_mq_do_dispatch_sched` asks the scheduler until it returns
    /// nothing or has no work (the loop device never refuses a request), and that last call,
    /// which no tracepoint shows, has side effects in mq-deadline; a round that dispatched
    /// makes `blk_mq_do_dispatch_sched` start another, whose first call returns nothing too
    /// when requests are still queued (`has_work`). Each ask is made only if ours holds
    /// requests ([`Self::empty_run`]), as the kernel's second round asks only if
    /// `dd_has_work`. Not modelled: the runs that
    /// dispatched nothing at all (after an insertion the scheduler held back, and the
    /// re-run `blk_mq_delay_run_hw_queues` arms `BLK_MQ_BUDGET_DELAY` after a refusal),
    /// which the trace cannot tell from an insertion whose run kblockd made later, but for
    /// an insertion below a busy priority level ([`Self::with_blocked_insertion_runs`]).
    fn with_empty_runs(timeline: Vec<(Nanos, KEvent)>) -> Vec<(Nanos, KEvent)> {
        let mut out = Vec::with_capacity(timeline.len() * 2);
        for (p, &e) in timeline.iter().enumerate() {
            out.push(e);
            let next_dispatch = matches!(timeline.get(p + 1), Some((_, KEvent::Dispatch { .. })));
            if matches!(e.1, KEvent::Dispatch { .. }) && !next_dispatch {
                // The dispatching round's last call, then the next round's first.
                out.push((e.0, KEvent::EmptyRun));
                out.push((e.0, KEvent::EmptyRun));
            }
        }
        out
    }

    /// `timeline` with the events of `extra` (in time order) each placed after the events of
    /// its time or before.
    fn interleave(
        timeline: Vec<(Nanos, KEvent)>,
        extra: impl Iterator<Item = (Nanos, KEvent)>,
    ) -> Vec<(Nanos, KEvent)> {
        let mut extra = extra.peekable();
        if extra.peek().is_none() {
            return timeline;
        }
        let mut merged = Vec::with_capacity(timeline.len());
        for e in timeline {
            while let Some(x) = extra.next_if(|x| x.0 < e.0) {
                merged.push(x);
            }
            merged.push(e);
        }
        merged.extend(extra);
        merged
    }

    /// Replay `log`: our queue log, and the scheduler merges not submitted.
    pub(super) fn run(
        mut self,
        log: &[QueueEvent],
        bfq_log: &BfqLogTimes,
    ) -> (Vec<QueueEvent>, usize, Vec<(Nanos, String)>) {
        let mut timeline = self.timeline(log);
        if self.pace == Pace::Kernel {
            // bfq's calls that returned nothing: where ours is asked as at an empty run.
            let calls = bfq_log
                .refused_calls
                .iter()
                .map(|&t| (t, KEvent::RefusedCall));
            timeline = Self::interleave(timeline, calls);
        }
        let exits = bfq_log.exits.iter().map(|&(t, pid)| (t, KEvent::Exit(pid)));
        timeline = Self::interleave(timeline, exits);
        timeline = Self::interleave(timeline, self.allocations().into_iter());
        timeline = with_decisions_moved_before(timeline, &self.moved_before);
        for (p, &(t, e)) in timeline.iter().enumerate() {
            self.advance(Some(t));
            self.now = self.now.max(t);
            self.batch_open = match e {
                KEvent::Arrive(i) => self.inserts_more(&timeline[p + 1..], i),
                _ => false,
            };
            match e {
                KEvent::Allocate(i, how) => self.allocate(i, how),
                KEvent::TagGot(i) => {
                    if let Some(id) = self.allocated[i] {
                        self.blk.handle_tag_got(id, self.now);
                    }
                }
                KEvent::Arrive(i) => self.submit(i),
                KEvent::Merge(k) => self.submit_merge(k),
                KEvent::OwnRun => {
                    self.credits += 1;
                    self.defer = true;
                    let _ = self.blk.scheduler_mut();
                }
                KEvent::Dispatch { early: true, .. } => {
                    // Decided at the run's start (if ours could then): logged here. If ours
                    // could not, its credit stands and it decides now.
                    self.defer = false;
                    self.log.append(&mut self.deferred);
                }
                KEvent::Dispatch {
                    early: false,
                    kernel,
                } => {
                    self.slot = Some(kernel);
                    if self.pace != Pace::Device {
                        self.credits += 1;
                        // The kernel ran its queue here: ask our scheduler again.
                        let _ = self.blk.scheduler_mut();
                    }
                }
                KEvent::Exit(pid) => self.blk.handle_exit(CtxId(pid), self.now),
                KEvent::EmptyRun => {
                    self.pump();
                    self.empty_run(false);
                    continue;
                }
                KEvent::RefusedCall => {
                    self.pump();
                    self.empty_run(true);
                    continue;
                }
            }
            self.pump();
        }
        self.advance(None);
        let notes = self.blk.scheduler_mut().take_notes();
        (self.log, self.merges_missed, notes)
    }

    /// When the kernel allocated each request it inserted later, in time order. The
    /// allocation (`__blk_mq_alloc_requests`) decides the depth (`limit_depth`) and takes a
    /// scheduler tag (`blk_mq_get_tag`), sleeping for one if none its depth may take is free;
    /// `block_getrq` fires when it has the tag, before the submitter's plug is flushed
    /// (`blk_add_rq_to_plug`; `block_rq_insert` at the flush), and the tag is held from
    /// there. A request starts allocating where bfq's log shows `bfq_limit_depth` decide its
    /// depth ([`BfqLogTimes::depths`]), else, if its task slept for its tag ([`slept`]), at
    /// its bio's `block_bio_queue`; it takes its tag at its `block_getrq`
    /// ([`KEvent::TagGot`]), not before even where ours has one free (taking it earlier gave
    /// ours tags the kernel's task did not have, docs/bfq.md). Any other is allocated at its
    /// `block_getrq`, from its plug's batch of tags where bfq's log shows it
    /// ([`Allocation::Batched`]). Only the requests the kernel kept to the end and inserted
    /// ([`Self::bio`]'s `own_request`, not `issue_directly`): a bio ours may merge or issue
    /// directly is submitted whole at its arrival.
    fn allocations(&self) -> Vec<(Nanos, KEvent)> {
        let mut out: Vec<(Nanos, KEvent)> = Vec::new();
        for r in &self.trace.requests {
            if r.merged_into.is_some() || r.bio().is_none() {
                continue;
            }
            let (Some(at), Some(inserted)) = (r.created, r.inserted) else {
                continue;
            };
            if at >= inserted {
                continue;
            }
            let decided = self.depths.get(r.index).copied().flatten();
            let start = decided.or(r.queued.filter(|&q| slept(q, at)));
            match start.filter(|&d| d < at) {
                Some(q) => {
                    out.push((q, KEvent::Allocate(r.index, Allocation::Sleeping)));
                    out.push((at, KEvent::TagGot(r.index)));
                }
                None if self.batched.get(r.index) == Some(&true) => {
                    out.push((at, KEvent::Allocate(r.index, Allocation::Batched)));
                }
                None => out.push((at, KEvent::Allocate(r.index, Allocation::Now))),
            }
        }
        out.sort_by_key(|&(t, e)| {
            let i = match e {
                KEvent::Allocate(i, _) | KEvent::TagGot(i) => i,
                _ => usize::MAX,
            };
            (t, i)
        });
        out
    }

    /// Request `i`'s bio as the replay gives it to ours: its io_context's priority; not
    /// offered for merging if the kernel kept it to the end; issued directly if the kernel
    /// never inserted it.
    fn bio(&self, i: usize) -> Option<Bio> {
        let r = &self.trace.requests[i];
        let mut bio = r.bio()?;
        let at = r.inserted.or(r.queued).or(r.created).unwrap_or(Nanos::ZERO);
        self.context_of(&mut bio, at);
        self.software_queue(&mut bio);
        // A request the kernel kept to the end was not merged at its submission (neither
        // into the plug's last request, `blk_attempt_plug_merge`, nor through the scheduler's
        // `bio_merge`, which kyber limits to the submitting CPU's software queue and which
        // finds nothing still plugged): ours may not merge it either.
        bio.own_request = r.merged_into.is_none();
        // Under none, a request the kernel issued without inserting it went to the device
        // from its submitter (`blk_mq_try_issue_directly`), past any inserted request still
        // waiting for kblockd's run of the queue.
        bio.issue_directly = r.inserted.is_none();
        Some(bio)
    }

    /// The kernel allocated request `i` as `how` says: ours allocates it, to insert it at
    /// its arrival.
    fn allocate(&mut self, i: usize, how: Allocation) {
        if self.submitted[i] {
            return;
        }
        let Some(bio) = self.bio(i) else {
            return;
        };
        self.submitted[i] = true;
        // Not allocated ahead (a bio the layer takes the whole way now): it arrived here.
        self.allocated[i] = self.arriving(i, |blk, now| blk.handle_allocate_as(bio, i, now, how));
    }

    fn submit(&mut self, i: usize) {
        if let Some(id) = self.allocated[i].take() {
            self.arriving(i, |blk, now| blk.handle_insert(id, now));
            return;
        }
        if self.submitted[i] {
            return;
        }
        let Some(bio) = self.bio(i) else {
            return;
        };
        self.submitted[i] = true;
        self.arriving(i, |blk, now| blk.handle_submit(bio, i, now));
    }

    /// Give `bio`, submitted at `at`, its io_context's priority, when the replay has one for
    /// it, and its group: its process's (`bio_associate_blkg`: the submitter's blkcg; an
    /// io_uring worker's is its owner's, whose cgroup the worker was created in), or, for a
    /// process the groups file does not name, the group bfq's log put its queue in then
    /// ([`QueueCgroups`]: a kworker resubmitting throttled bios serves their blkcg's group).
    fn context_of(&self, bio: &mut Bio, at: Nanos) {
        let pid = bio.ctx.0;
        if let Some(&p) = self.contexts.prios.get(&pid) {
            bio.prio = p;
        }
        let groups = self.contexts.groups;
        bio.group = match groups.by_pid.get(&pid) {
            Some(&g) => g,
            None => self
                .queue_cgroups
                .at(pid, at)
                .filter(|_| !groups.by_cgroup_id.is_empty())
                .and_then(|id| groups.of_cgroup_id(id))
                .unwrap_or(GroupId::ROOT),
        };
    }

    /// Stage `bio` in its recorded CPU's software queue, or in CPU 0's when ours replays
    /// neither the software queues ([`software_queues_replayed`]) nor the allocating CPUs
    /// ([`allocating_cpus_replayed`]).
    fn software_queue(&self, bio: &mut Bio) {
        if !self.own_runs && !self.allocating_cpus {
            bio.cpu = 0;
        }
    }

    /// Submit the `k`th scheduler merge's bio, if ours still holds its request.
    fn submit_merge(&mut self, k: usize) {
        let m = &self.trace.sched_bios[k];
        let Some(mut bio) = m.bio(&self.trace.requests[m.host]) else {
            return;
        };
        self.context_of(&mut bio, m.time);
        self.software_queue(&mut bio);
        if !self.submitted[m.host] || self.dispatched[m.host] {
            self.merges_missed += 1;
            return;
        }
        let token = self.trace.requests.len() + k;
        self.arriving(token, |blk, now| blk.handle_submit(bio, token, now));
    }

    /// Run `step` on our block layer now, and log request `token`'s arrival if the step
    /// inserted a request into the scheduler.
    fn arriving<R>(
        &mut self,
        token: usize,
        step: impl FnOnce(&mut BlockLayer<Box<dyn Scheduler>, usize>, Nanos) -> R,
    ) -> R {
        let before = self.blk.counters().inserted;
        let out = step(&mut self.blk, self.now);
        if self.blk.counters().inserted > before {
            self.log.push(QueueEvent::Arrive(token));
        }
        // A request merged into the one a bio grew (`attempt_back_merge`) leaves the queue.
        for gone in self.blk.take_merged_away() {
            self.log.push(QueueEvent::Leave(gone));
        }
        out
    }

    /// The kernel's queue run ended here with its scheduler returning nothing: ask ours
    /// once, as the kernel asked its own, for the side effects of asking (mq-deadline's
    /// refused aged dispatch starts a batch: `dd_dispatch_prio_aged_requests`; bfq's
    /// `bfq_select_queue` expires an empty in-service queue it need not idle for). Only when
    /// ours owes the kernel no dispatch, and, unless the call is one bfq's log shows
    /// (`logged`), has requests queued: blk-mq asks a scheduler only when it `has_work`
    /// (`__blk_mq_do_dispatch_sched`), but `bfq_has_work` reads `bfqd->queued` without
    /// `bfqd->lock`, so a call the log shows may find nothing queued (another CPU dispatched
    /// it in between) and still expire a queue. A request ours returns is dispatched (a
    /// divergence: the kernel's returned none) and counted against the kernel's next
    /// dispatch.
    fn empty_run(&mut self, logged: bool) {
        if self.credits != 0 || (!logged && self.blk.queued() == 0) {
            return;
        }
        let before = self.blk.counters().dispatched;
        let _ = self.blk.scheduler_mut();
        self.credits = 1;
        self.pump();
        self.credits = if self.blk.counters().dispatched > before {
            -1
        } else {
            0
        };
    }

    /// Whether request `i`'s insertion is not the last of its plug's batch: the next
    /// insertion in `rest` (the timeline after it, before any dispatch or merge) is the same
    /// task's, on the same CPU, of a request allocated (`block_getrq`) before `i` was
    /// inserted. A plug's requests are all allocated before its flush inserts them in a row
    /// and runs the queue once (`blk_mq_flush_plug_list`, `blk_mq_dispatch_list`: one list
    /// per hardware queue and software queue, the CPU); a task submitting unplugged
    /// allocates each request after the previous one's insertion and run. Allocations and
    /// exits between do not end a batch.
    fn inserts_more(&self, rest: &[(Nanos, KEvent)], i: usize) -> bool {
        let reqs = &self.trace.requests;
        let (Some(on), Some(at)) = (reqs[i].inserted_on, reqs[i].inserted) else {
            return false;
        };
        rest.iter()
            .find(|(_, e)| {
                !matches!(
                    e,
                    KEvent::Allocate(..) | KEvent::TagGot(_) | KEvent::Exit(_)
                )
            })
            .is_some_and(|(_, e)| {
                matches!(e, KEvent::Arrive(j)
                    if reqs[*j].inserted_on == Some(on) && reqs[*j].created.is_some_and(|c| c <= at))
            })
    }

    /// Dispatch what the pace allows now.
    fn pump(&mut self) {
        if self.batch_open && self.blk.device_full() {
            // The run comes after the batch's last insertion (`batch_open`).
            return;
        }
        loop {
            if self.pace != Pace::Device && self.credits <= 0 {
                // No dispatch is owed, but a run that finds every driver tag taken still
                // takes the scheduler's next request to wait for a tag
                // (`Limits::dequeues_without_driver_tag`); `poll_dispatch` returns nothing then.
                if self.blk.device_full() {
                    let _ = self.blk.poll_dispatch(self.now);
                    self.log_parked();
                    return;
                }
                // A parked request whose choice is logged goes to the device at the first
                // free tag once a run of the kernel's could issue it, owing nothing.
                let parked_ready = self
                    .blk
                    .next_requeued()
                    .and_then(|id| self.logged_parked.get(&id.0))
                    .is_some_and(|&at| at <= self.now);
                if !parked_ready {
                    return;
                }
            }
            match self.blk.poll_dispatch(self.now) {
                Some(rq) => {
                    let first = self
                        .first_bio(rq.id)
                        .expect("a dispatched request carries its bios");
                    if self.logged_parked.remove(&rq.id.0).is_some() {
                        // Its choice was logged when it was parked ([`Self::log_parked`]).
                        let (at, clock) = self.completion_at(first, None);
                        self.completions.push(Reverse((at, rq.id.0, clock)));
                        continue;
                    }
                    self.log_dispatch(first);
                    let slot = self.slot.take();
                    let (at, clock) = self.completion_at(first, slot);
                    self.completions.push(Reverse((at, rq.id.0, clock)));
                    if self.pace != Pace::Device {
                        self.credits -= 1;
                    }
                }
                None => {
                    self.log_parked();
                    if self.blk.queued() == 0 {
                        // Nothing of ours to give the kernel's dispatch: it is spent.
                        self.credits = 0;
                    }
                    return;
                }
            }
        }
    }

    /// The trace's index of the first bio our request `id` carries (its token), if it is held.
    fn first_bio(&self, id: RequestId) -> Option<usize> {
        self.blk
            .segments(id)
            .and_then(|mut s| s.next().map(|s| s.token))
    }

    /// Log our dispatch of the request whose first bio is `first`: deferred to the run's
    /// start where one is pending (`defer`), else now; and mark that bio dispatched.
    fn log_dispatch(&mut self, first: usize) {
        if std::mem::take(&mut self.defer) {
            self.deferred.push(QueueEvent::Dispatch(first));
        } else {
            self.log.push(QueueEvent::Dispatch(first));
        }
        if let Some(d) = self.dispatched.get_mut(first) {
            *d = true;
        }
    }

    /// Log the choice of each request a run of ours just parked for a driver tag, as a
    /// dispatch owed to the kernel's decision, when bfq's log times the kernel's choices
    /// ([`LogOrder::decided`]; the layer keeps the parked requests only then). bfq chose such
    /// a request in `bfq_dispatch_request`, and its log notes it there, when the run found no
    /// driver tag (`__blk_mq_do_dispatch_sched` takes the request, `blk_mq_dispatch_rq_list`
    /// fails `blk_mq_get_driver_tag` and puts it on `hctx->dispatch`); the issue comes at the
    /// next free tag, after insertions the kernel's log places after the choice
    /// (typical-two-libaio-16k-...-defaults: 97 of 1,057 real choices logged at the issue).
    /// The parked request goes to the device at a free tag no earlier than the kernel
    /// issued it: the run that does is not the completion's but one after it, kblockd's
    /// (`blk_mq_sched_restart` from `__blk_mq_free_request`, run asynchronously) or an
    /// insertion's, and no tracepoint shows when it began; ours' completion run issuing it at
    /// once, and parking the next choice there, chose that one before the insertions the
    /// kernel's choice followed (the same recording: the write 1083392+2048, inserted by
    /// fio at 18980.394239, in the kernel's set at the choice of 650752+32 and not in ours').
    fn log_parked(&mut self) {
        for id in self.blk.take_parked() {
            let Some(first) = self.first_bio(id) else {
                continue;
            };
            self.log_dispatch(first);
            let issue = self
                .along_merges(first, |k| self.trace.requests[k].issued)
                .unwrap_or(self.now)
                .max(self.now);
            self.logged_parked.insert(id.0, issue);
            self.parked_wakes.push(Reverse(issue));
            self.credits -= 1;
        }
    }

    /// Complete and fire timers due before `until` (everything left with `None`).
    fn advance(&mut self, until: Option<Nanos>) {
        loop {
            let c = self.completions.peek().map(|r| r.0 .0);
            let timer = self.blk.poll_timeout();
            let wake = self.parked_wakes.peek().map(|r| r.0);
            let Some(next) = [c, timer, wake].into_iter().flatten().min() else {
                return;
            };
            if until.is_some_and(|u| next > u) {
                return;
            }
            // A timer that cannot lead anywhere (no credit left at the end) ends the replay.
            if until.is_none() && c.is_none() && self.pace != Pace::Device && self.credits <= 0 {
                return;
            }
            self.now = self.now.max(next);
            if wake == Some(next) {
                self.parked_wakes.pop();
            } else if c == Some(next) {
                let Reverse((_, id, clock)) = self.completions.pop().expect("peeked");
                self.done.clear();
                self.blk.handle_complete_clocked(
                    RequestId(id),
                    true,
                    clock,
                    self.now,
                    &mut self.done,
                );
            } else {
                self.blk.handle_timeout(self.now);
            }
            self.pump();
        }
    }
}

/// `timeline` with the dispatch of each of `moves` (in order) placed before the insertions it
/// passes, at the time of the first of them, everything else where it was (the events
/// between, the asks at a run's end, stay in place). A move whose insertions are not all
/// between its dispatch and the dispatch before it is not made (the kernel's queue log has
/// them there). A move that passes other CPUs' decisions too ([`MovedBefore::lands`] before
/// [`MovedBefore::decision`]) keeps ours' asks (an ask carries no request) and places the
/// insertions it passes just after the ask it lands at, at that ask's time.
fn with_decisions_moved_before(
    mut timeline: Vec<(Nanos, KEvent)>,
    moves: &[MovedBefore],
) -> Vec<(Nanos, KEvent)> {
    if moves.is_empty() {
        return timeline;
    }
    for m in moves {
        let asks = |t: &[(Nanos, KEvent)]| -> Vec<usize> {
            t.iter()
                .enumerate()
                .filter(|(_, e)| matches!(e.1, KEvent::Dispatch { .. }))
                .map(|(p, _)| p)
                .collect()
        };
        if !m.passed_dispatches.is_empty() {
            // Ours' asks stay; the insertions passed follow the ask the decision lands at.
            let asked = asks(&timeline);
            let Some(&at) = asked.get(m.lands) else {
                continue;
            };
            let since = m.lands.checked_sub(1).map_or(0, |k| asked[k] + 1);
            let passed: Vec<usize> = (since..at)
                .filter(|&p| matches!(timeline[p].1, KEvent::Arrive(i) if m.passed.contains(&i)))
                .collect();
            if passed.len() != m.passed.len() {
                continue;
            }
            let time = timeline[at].0;
            let moved: Vec<(Nanos, KEvent)> =
                passed.iter().map(|&p| (time, timeline[p].1)).collect();
            for &p in passed.iter().rev() {
                timeline.remove(p);
            }
            let after = at + 1 - passed.len();
            timeline.splice(after..after, moved);
            continue;
        }
        let Some(&from) = asks(&timeline).get(m.decision) else {
            continue;
        };
        let mut left = m.passed.clone();
        let mut to = from;
        while !left.is_empty() && to > 0 {
            to -= 1;
            match timeline[to].1 {
                KEvent::Dispatch { .. } => break,
                KEvent::Arrive(i) => left.retain(|&j| j != i),
                _ => {}
            }
        }
        if left.is_empty() {
            let at = timeline[to].0;
            timeline[to..=from].rotate_right(1);
            timeline[to].0 = at;
        }
    }
    timeline
}

/// Whether mq-deadline's queue run after an insertion at priority level `level` (0 real
/// time, 1 best effort, 2 idle) returns nothing, given each level's requests in its lists
/// (`listed`) and in flight (`in_flight`): `dd_dispatch_request`'s priority loop (6.18)
/// stops at the first level with requests (`dd_queued`: inserted, not completed) and
/// dispatches from it if its lists hold one, so the run is empty only if that level is
/// above the insertion's and all its requests are in flight. Not modelled: the aged
/// requests `dd_dispatch_prio_aged_requests` takes first.
fn run_returns_nothing(level: usize, listed: &[i64; 3], in_flight: &[i64; 3]) -> bool {
    (0..level)
        .find(|&l| listed[l] > 0 || in_flight[l] > 0)
        .is_some_and(|l| listed[l] == 0)
}

/// Whether a task slept in tag allocation between its bio's `block_bio_queue` (`queued`) and
/// its request's `block_getrq` (`created`): more than [`TAG_SLEEP`] apart.
pub(super) fn slept(queued: Nanos, created: Nanos) -> bool {
    created.0.saturating_sub(queued.0) > TAG_SLEEP.0
}

/// The gap between a bio's `block_bio_queue` and its request's `block_getrq` past which the
/// replay takes its task to have slept for a tag (the two are a few µs apart otherwise).
const TAG_SLEEP: Nanos = Nanos(30_000);

/// How long after its deadline a policy's own timer fires in the replay (bfq's idle slice
/// timer, [`Scheduler::next_timer`](elevator_core::Scheduler::next_timer)): the kernel's
/// hrtimer handler runs after the expiry interrupt and takes `bfqd->lock`, which an insertion
/// may hold (`bfq_idle_slice_timer_body`). Ours arms it at its estimate of the completion's
/// clock, a few microseconds before the note bfq's log shows; over the corpus a queue's
/// TOO_IDLE expiry note comes a median 16 us (5th percentile 3, 95th 35) after that note
/// plus the slice. A model constant: the latency differs between recordings (a median 9 us
/// in one, 27 us in another). At the kernel's pace a firing bfq's log shows within it (a
/// TOO_IDLE expiry, [`BfqLogTimes::timer_fires`]) is taken instead.
const TIMER_LATENCY: Nanos = Nanos(30_000);

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(us: u64) -> (Nanos, KEvent) {
        (
            Nanos::from_us(us),
            KEvent::Dispatch {
                early: false,
                kernel: 0,
            },
        )
    }

    fn empty_runs_after(timeline: &[(Nanos, KEvent)]) -> Vec<usize> {
        timeline
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.1, KEvent::EmptyRun))
            .map(|(p, _)| p)
            .collect()
    }

    /// `blk_mq_do_dispatch_sched` (6.18) repeats `__blk_mq_do_dispatch_sched` while a round
    /// dispatched: a run whose dispatching round ended on a call that returned nothing makes
    /// a second round, whose first call (`dd_has_work` still true) returns nothing as well.
    /// Both calls go through `dd_dispatch_prio_aged_requests`, which moves mq-deadline's
    /// `starved` count on each (branch kfid52: `cbssplit-...-nr32` decision 116, the kernel
    /// chose a real-time write there once the count had reached `writes_starved`).
    /// `dd_dispatch_request` (6.18) serves the highest priority level with requests: a
    /// best-effort insertion while real-time requests are in flight gets a run that returns
    /// nothing, unless real-time requests wait in the lists (a plug's batch of both levels:
    /// branch kfid53, `cbssplit-...-nr32` decision 532, where the kernel dispatched the
    /// batch's real-time read 16 us later and the replay had asked ours at the insertion).
    #[test]
    fn dd_dispatch_request_serves_a_busy_levels_listed_requests() {
        // Real time busy, nothing of it listed: the best-effort and idle insertions wait.
        assert!(run_returns_nothing(1, &[0, 1, 0], &[2, 0, 0]));
        assert!(run_returns_nothing(2, &[0, 1, 1], &[2, 0, 0]));
        // A real-time request listed: the run dispatches it.
        assert!(!run_returns_nothing(1, &[1, 1, 0], &[2, 0, 0]));
        assert!(!run_returns_nothing(2, &[0, 1, 1], &[0, 0, 0]));
        // Best effort busy and listed: an idle insertion's run dispatches best effort.
        assert!(!run_returns_nothing(2, &[0, 1, 1], &[0, 3, 0]));
        // Best effort busy, nothing listed above the idle insertion: empty.
        assert!(run_returns_nothing(2, &[0, 0, 1], &[0, 3, 0]));
        // Nothing above a real-time insertion can hold it back.
        assert!(!run_returns_nothing(0, &[1, 0, 0], &[0, 5, 5]));
    }

    #[test]
    fn a_run_that_dispatched_ends_with_two_calls_that_return_nothing() {
        let timeline = vec![
            (Nanos::from_us(1), KEvent::Arrive(0)),
            (Nanos::from_us(1), KEvent::Arrive(1)),
            dispatch(2),
            dispatch(2),
            (Nanos::from_us(9), KEvent::Arrive(2)),
            dispatch(10),
        ];
        let out = Replay::with_empty_runs(timeline);
        assert_eq!(empty_runs_after(&out), vec![4, 5, 8, 9]);
        assert!(matches!(out[3].1, KEvent::Dispatch { .. }));
        assert!(matches!(out[6].1, KEvent::Arrive(2)));
    }
}
