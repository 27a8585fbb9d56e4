//! How much of a recording's disagreement is the trace's resolution: each divergence
//! replayed again with the kernel's decision made where the trace allows it to have been
//! made, and kept when ours then agrees (a diagnostic, `elevator kernel-diff --resolve`).
//!
//! `block_rq_issue` fires when the driver starts a request (`blk_mq_start_request`), after a
//! queue run took it from the scheduler under the scheduler's lock
//! (`__blk_mq_do_dispatch_sched` takes up to `nr_requests` requests before
//! `blk_mq_dispatch_rq_list` issues the first). An insertion another CPU traced shortly
//! before the issue (`block_rq_insert` fires under the scheduler's lock in
//! `dd_insert_request`, `kyber_insert_requests`, `bfq_insert_request`) may therefore have
//! come after the run chose: the trace does not order the two. The kernel's decision at a
//! divergence is moved back past such insertions (traced on another CPU than the issue,
//! within [`UNORDERED_ISSUE_GAP`] before it, or before the first issue of the same run: the
//! issuing task's issues on its CPU just before, with no insertion of its own between,
//! [`run_start`]; past other CPUs' issues in that window too), one at a time, for that decision and the two before it (whose timing sets what the
//! scheduler's state is at the divergence: kyber's batch count, mq-deadline's sorted pass),
//! then for the one after it (a run that took several requests issues them one by one, and
//! another CPU may insert and issue a request between two of those issues: the later ones
//! were chosen before that insertion, and the divergence is the other CPU's request read as
//! chosen first; branch kfid46's `cgroup-weights-ionice-classes-inside-groups`); both sides are replayed from the start with the kernel's log so reordered, the kernel's
//! queued sets following it. A move is kept when every decision from the divergence's
//! search start to the divergence then agrees and the recording's agreement does not fall.
//! A divergence no move settles is a mechanism's (or a cascade of one): it is listed, and
//! the search goes on after it. A decision bfq's log places ([`LogOrder::decided`]) is
//! ordered by the log and never moved. Same-CPU order is the trace's (each CPU's buffer
//! keeps its events in order).

use super::*;
use crate::traces::ftrace::Dispatch;

/// How many insertions (or other CPUs' issues) one move may pass.
const MOST_PASSED: usize = 8;

/// How many decisions before a divergence are moved too, besides its own.
const DECISIONS_BEFORE: usize = 2;

/// How many decisions after a divergence are moved too, after those before it.
const DECISIONS_AFTER: usize = 1;

/// One move kept: the kernel's decision `decision` (request `request`) taken as made before
/// the `passed` events the trace shows just before its issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The kernel's decision moved (its index in the dispatch order).
    pub decision: usize,
    /// Its request.
    pub request: usize,
    /// The insertions and other CPUs' issues it was moved before.
    pub passed: usize,
}

/// What [`resolve`] found for one recording.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The replay of the recorded order (the agreement `kernel-diff` prints).
    pub before: TraceDiff,
    /// The replay with every kept move.
    pub after: TraceDiff,
    /// The moves kept, in the order found.
    pub moves: Vec<Move>,
    /// The divergences no move settled, in order: the first is where a mechanism (or
    /// something else the trace does fix) first parts ours from the kernel.
    pub unresolved: Vec<usize>,
    /// Replays made (the recorded order's included).
    pub replays: usize,
    /// The search stopped at its budget of replays before the last divergence.
    pub exhausted: bool,
}

/// [`Resolution`] for the recording in `dir`, at the kernel's pace, with at most `budget`
/// replays. `opts`' pace and notes are not used: the search compares decisions at the
/// kernel's pace, and keeps no notes of its replays.
pub fn resolve(dir: &Path, opts: &DiffOptions, budget: usize) -> Result<Resolution, String> {
    let l = load(dir)?;
    let opts = DiffOptions {
        pace: Pace::Kernel,
        notes: false,
        // Its own moves are the search; the recorded order is its start.
        set_aside: false,
        ..opts.clone()
    };
    let decided = l.bfq_log.order.as_ref().map_or(&[][..], |o| &o.decided);
    let replay = |log: &[QueueEvent]| {
        let contexts = Contexts {
            prios: &l.prios,
            groups: &l.groups,
        };
        replay_log(&l.trace, &l.rec.meta, &opts, &l.bfq_log, contexts, log)
            .map_err(|e| format!("{}: {e}", dir.display()))
    };
    let mut log = kernel_log(&l.trace, &l.bfq_log).clone();
    let before = replay(&log)?;
    let mut cur = before.clone();
    let mut replays = 1;
    let mut moves = Vec::new();
    let mut unresolved = Vec::new();
    let mut from = 0;
    let mut exhausted = false;
    'divergences: while let Some(k) = first_divergence(&cur, from) {
        let first = k.saturating_sub(DECISIONS_BEFORE).max(from);
        let after = (k + DECISIONS_AFTER).min(cur.kernel.len().saturating_sub(1));
        for j in (first..=k).rev().chain(k + 1..=after) {
            for (passed, moved) in moves_of(&l.trace, decided, &log, j) {
                if replays >= budget {
                    exhausted = true;
                    break 'divergences;
                }
                replays += 1;
                let d = replay(&moved)?;
                let settled = (from..=k).all(|p| d.ours.get(p) == d.kernel.get(p));
                if settled && d.agreement.same_choice >= cur.agreement.same_choice {
                    moves.push(Move {
                        decision: j,
                        request: cur.kernel[j].chosen,
                        passed,
                    });
                    log = moved;
                    cur = d;
                    continue 'divergences;
                }
            }
        }
        unresolved.push(k);
        from = k + 1;
    }
    Ok(Resolution {
        before,
        after: cur,
        moves,
        unresolved,
        replays,
        exhausted,
    })
}

/// The first decision at or after `from` where ours differs from the kernel's.
fn first_divergence(d: &TraceDiff, from: usize) -> Option<usize> {
    (from..d.kernel.len()).find(|&k| d.ours.get(k) != Some(&d.kernel[k]))
}

/// When the queue run that issued `issue` began issuing, as far as the trace shows: the
/// earliest of the issues its task made on its CPU just before it, with no insertion by that
/// task on that CPU in between (`__blk_mq_do_dispatch_sched` dequeued them all before the
/// first was issued, and `blk_mq_dispatch_rq_list` issues them one by one, other CPUs'
/// events falling between), up to [`MOST_PASSED`] issues back. kblockd's runs are not
/// chained (its worker inserts nothing, so its separate runs would read as one): for them,
/// and for an issue no earlier one of the same run precedes, the issue's own time.
pub(super) fn run_start(trace: &KernelTrace, issue: &Dispatch) -> Nanos {
    let mut start = issue.time;
    if issue.kblockd {
        return start;
    }
    let Some(d) = trace.requests[issue.request].dispatch_index else {
        return start;
    };
    let inserted_between = |from: Nanos, to: Nanos| {
        trace.requests.iter().any(|r| {
            matches!((r.inserted, r.inserted_on), (Some(t), Some(on))
                if on.cpu == issue.cpu && on.pid == issue.pid && t > from && t < to)
        })
    };
    let mut chained = 0;
    for e in trace.dispatches[..d].iter().rev() {
        if e.cpu != issue.cpu {
            continue;
        }
        if e.pid != issue.pid || chained == MOST_PASSED || inserted_between(e.time, start) {
            break;
        }
        start = e.time;
        chained += 1;
    }
    start
}

/// The kernel's log with its `j`th dispatch moved back past 1, 2 ... of the events just
/// before it that the trace does not order with its issue (module docs), nearest first,
/// each with how many it passed.
pub(super) fn moves_of(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    log: &[QueueEvent],
    j: usize,
) -> Vec<(usize, Vec<QueueEvent>)> {
    let Some(p) = log
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, QueueEvent::Dispatch(_)))
        .nth(j)
        .map(|(p, _)| p)
    else {
        return Vec::new();
    };
    let QueueEvent::Dispatch(r) = log[p] else {
        return Vec::new();
    };
    if decided.get(r).copied().flatten().is_some() {
        return Vec::new();
    }
    let Some(issue) = trace.first_dispatch(r) else {
        return Vec::new();
    };
    let since = run_start(trace, issue);
    let open = |t: Nanos, cpu: u32| cpu != issue.cpu && t + UNORDERED_ISSUE_GAP >= since;
    let mut out = Vec::new();
    let mut q = p;
    while q > 0 && p - q < MOST_PASSED {
        q -= 1;
        let passable = match log[q] {
            QueueEvent::Arrive(i) => {
                let rq = &trace.requests[i];
                match (rq.inserted, rq.inserted_on) {
                    (Some(t), Some(on)) => open(t, on.cpu),
                    _ => false,
                }
            }
            QueueEvent::Dispatch(x) => trace.first_dispatch(x).is_some_and(|d| {
                open(d.time, d.cpu) && decided.get(x).copied().flatten().is_none()
            }),
            QueueEvent::Leave(_) => false,
        };
        if !passable {
            break;
        }
        if matches!(log[q], QueueEvent::Arrive(_)) {
            let mut moved = log.to_vec();
            let e = moved.remove(p);
            moved.insert(q, e);
            out.push((p - q, moved));
        }
    }
    out
}
