//! Where and when the replay runs our queue as the kernel ran its own: the extra asks at a
//! run's end, the software queues per CPU and each run's start ([`own_runs`]), and the
//! earliest point a dispatch could have been decided ([`earliest`], [`super::Pace::Early`]).

use std::collections::HashMap;

use crate::agreement::QueueEvent;
use crate::traces::ftrace::{KernelTrace, TaskOnCpu};

/// Whether the replay asks `policy` twice more at the end of each of the kernel's queue runs
/// (at its pace: the two calls that returned nothing, which no tracepoint shows,
/// `Replay::with_empty_runs`), and after each insertion below a busy priority level (none of
/// its requests listed) that no dispatch follows at once (`Replay::with_blocked_insertion_runs`). mq-deadline only: a refused dispatch of its changes what
/// it chooses next (`dd_dispatch_prio_aged_requests` asks the lower levels with an aged
/// latest start, and a refusal keeps the batch it started), and asking it there is what the
/// kernel did. Not kyber, whose refusals are token waits ours answers with a timer the
/// replay already follows, nor bfq at every run end: bfq's log tells which of its refused
/// calls changed its state, and only those are replayed ([`refused_dispatch_calls`](super::refused_dispatch_calls); asking
/// it at every refused call the log shows lowered its agreement, docs/kernel-agreement.md).
pub fn asked_at_empty_runs(policy: &str) -> bool {
    policy == "mq-deadline"
}

/// Whether the replay gives `policy` the kernel's software queues: each request its
/// recorded CPU ([`TracedRequest::cpu`](crate::traces::ftrace::TracedRequest::cpu); otherwise CPU 0, one software queue), and each
/// decision of a queue run the run's start ([`own_runs`]), since which CPUs' requests a run
/// takes depends on when its flush ran: `none` (our `noop`: `blk_mq_flush_busy_ctxs`) and
/// kyber, which stages per CPU as well (`kyber_flush_busy_kcqs` splices the busy CPUs'
/// queues in CPU order). Replayed for kyber since 1 December 2026: the corpus's kyber real
/// choices 9138 -> 9194 of 9241, 28 recordings up, one down (`rt-reader-beside-deep-randwrite`,
/// 100 -> 99.6%: a write inserted on CPU 1 and a read on CPU 0 in the same microsecond, the
/// run taken to start between them; docs/kyber.md). mq-deadline and bfq keep one queue of
/// their own.
pub fn software_queues_replayed(policy: &str) -> bool {
    matches!(policy, "noop" | "kyber")
}

/// Whether the replay gives each request of `policy` the CPU it was allocated on (its
/// `block_getrq`'s, blk-mq's `rq->mq_ctx`) without replaying the software queues: bfq's tags
/// kept by bit position start each search from that CPU's allocation hint and set it when
/// the request frees its tag (lib/sbitmap's per-CPU `alloc_hint`, `crate::tags`' `TagBits`
/// in the core crate); bfq has one queue of its own, so nothing else of it reads the CPU.
pub fn allocating_cpus_replayed(policy: &str) -> bool {
    policy == "bfq"
}

/// Where the replay moves a dispatch of the kernel back to the start of the queue run that
/// made it ([`software_queues_replayed`]), by position in the queue log: `(starts, early)`,
/// `starts[p]` for the insertion (an `Arrive`) just after which the run started, `early[q]`
/// for the dispatch it decided. A run is taken to start just after the last insertion made
/// on the issuing CPU since the previous dispatch, when that insertion's task issued it (the
/// submitter's own run: `blk_mq_run_hw_queue` after `blk_mq_insert_request`, or after
/// `blk_mq_insert_requests` for a flushed plug) or a kblockd worker of that CPU did (the
/// asynchronous run a plug flushed from `schedule()` queues there, which runs as the
/// submitter sleeps). The run's first flush (`blk_mq_flush_busy_ctxs`,
/// `kyber_flush_busy_kcqs`) took what the software queues held then; its `block_rq_issue`
/// comes a few µs later, after other CPUs may have inserted more, which that flush did not
/// see. Inferred from the trace, not traced: the run's start is taken as that insertion.
pub fn own_runs(trace: &KernelTrace, log: &[QueueEvent]) -> (Vec<bool>, Vec<bool>) {
    let mut starts = vec![false; log.len()];
    let mut early = vec![false; log.len()];
    // The insertions since the previous dispatch: log position and where they fired.
    let mut since: Vec<(usize, TaskOnCpu)> = Vec::new();
    let mut issued = vec![false; trace.requests.len()];
    for (pos, e) in log.iter().enumerate() {
        match *e {
            QueueEvent::Arrive(i) => {
                if let Some(on) = trace.requests[i].inserted_on {
                    since.push((pos, on));
                }
            }
            QueueEvent::Leave(_) => {}
            QueueEvent::Dispatch(i) => {
                let first = !std::mem::replace(&mut issued[i], true);
                let by = trace.first_dispatch(i);
                let start = by.filter(|_| first).and_then(|d| {
                    let &(at, on) = since.iter().rev().find(|(_, on)| on.cpu == d.cpu)?;
                    (on.pid == d.pid || d.kblockd).then_some(at)
                });
                if let Some(at) = start {
                    starts[at] = true;
                    early[pos] = true;
                }
                since.clear();
            }
        }
    }
    (starts, early)
}

/// `log` with each dispatch moved back to just after the latest of its request's first
/// arrival, the previous dispatch and the previous merge (`Leave`): the earliest point the
/// kernel could have chosen it ([`Pace::Early`](super::Pace::Early)).
///
/// Linear in the log (issue 32: a scan for the arrival and an insertion into the middle made
/// it quadratic). Only arrivals follow the last dispatch or merge, so they are held apart
/// (`pending`) with the absolute position of each request's first arrival; a dispatch whose
/// first arrival is pending takes the pending arrivals up to it, one placed before any of them.
pub fn earliest(log: &[QueueEvent]) -> Vec<QueueEvent> {
    let mut out: Vec<QueueEvent> = Vec::with_capacity(log.len());
    // The arrivals after the last dispatch or merge; `pending_start` numbers the first of
    // them among every arrival seen.
    let mut pending: std::collections::VecDeque<QueueEvent> = Default::default();
    let mut pending_start = 0u64;
    let mut arrivals = 0u64;
    // Each request's first arrival, numbered as above.
    let mut first: HashMap<usize, u64> = HashMap::new();
    for &e in log {
        match e {
            QueueEvent::Arrive(i) => {
                first.entry(i).or_insert(arrivals);
                arrivals += 1;
                pending.push_back(e);
            }
            QueueEvent::Leave(_) => {
                out.extend(pending.drain(..));
                pending_start = arrivals;
                out.push(e);
            }
            QueueEvent::Dispatch(i) => {
                if let Some(&at) = first.get(&i).filter(|&&at| at >= pending_start) {
                    let upto = (at - pending_start + 1) as usize;
                    out.extend(pending.drain(..upto));
                    pending_start = at + 1;
                }
                out.push(e);
            }
        }
    }
    out.extend(pending);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadratic `earliest` this crate had before issue 32 (a scan for the arrival, an
    /// insertion into the middle), kept as the reference.
    fn earliest_by_scan(log: &[QueueEvent]) -> Vec<QueueEvent> {
        let mut out: Vec<QueueEvent> = Vec::with_capacity(log.len());
        let mut barrier = 0;
        for &e in log {
            match e {
                QueueEvent::Arrive(_) => out.push(e),
                QueueEvent::Leave(_) => {
                    out.push(e);
                    barrier = out.len();
                }
                QueueEvent::Dispatch(i) => {
                    let arrived = out
                        .iter()
                        .position(|&x| x == QueueEvent::Arrive(i))
                        .map_or(0, |p| p + 1);
                    let at = arrived.max(barrier);
                    out.insert(at, e);
                    barrier = at + 1;
                }
            }
        }
        out
    }

    #[test]
    fn earliest_in_linear_time_places_every_event_as_the_scan_did() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(32);
        for n in [0, 1, 5, 30, 200, 2000] {
            // Requests arrive (some again, as after a requeue), leave or are dispatched, in
            // any order, some dispatched without an arrival.
            let log: Vec<QueueEvent> = (0..n)
                .map(|_| {
                    let i = rng.gen_range(0..(n / 3).max(1) + 2);
                    match rng.gen_range(0..10) {
                        0..=4 => QueueEvent::Arrive(i),
                        5 => QueueEvent::Leave(i),
                        _ => QueueEvent::Dispatch(i),
                    }
                })
                .collect();
            assert_eq!(earliest(&log), earliest_by_scan(&log), "{log:?}");
        }
    }
}
