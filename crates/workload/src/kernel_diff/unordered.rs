//! Dispatches the trace leaves unordered: two CPUs' issue events close together, whose
//! decisions under the scheduler's lock may have come in either order
//! ([`settle_unordered_pairs`]).

use elevator_core::Nanos;

use crate::agreement::Decision;
use crate::traces::ftrace::KernelTrace;

/// The longest time between the issue events of two dispatches from two CPUs that the
/// trace leaves unordered ([`settle_unordered_pairs`]): a queue run takes up to
/// `nr_requests` requests from the scheduler before it issues the first
/// (`__blk_mq_do_dispatch_sched`, then `blk_mq_dispatch_rq_list`), about a microsecond
/// each on the loop device.
pub const UNORDERED_ISSUE_GAP: Nanos = Nanos::from_us(10);

/// Whether the kernel's dispatches of requests `a` then `b` (issued in that order) may have
/// been decided in the other order: two CPUs issued them, within [`UNORDERED_ISSUE_GAP`].
/// `block_rq_issue` fires in `blk_mq_start_request`, after the scheduler returned the
/// request and released its lock; each CPU's queue run asks the scheduler under that lock,
/// so which of two runs on two CPUs asked first is not in the trace. Two dispatches placed
/// by bfq's log (`decided`, [`LogOrder::decided`](super::LogOrder::decided)) are ordered.
fn unordered(trace: &KernelTrace, decided: &[Option<Nanos>], a: usize, b: usize) -> bool {
    let placed = |i: usize| decided.get(i).copied().flatten().is_some();
    if placed(a) && placed(b) {
        return false;
    }
    match (trace.first_dispatch(a), trace.first_dispatch(b)) {
        (Some(x), Some(y)) => {
            x.cpu != y.cpu
                && y.time >= x.time
                && y.time.saturating_sub(x.time) <= UNORDERED_ISSUE_GAP
        }
        _ => false,
    }
}

/// The kernel's decisions with every run of them the trace cannot order that ours made in
/// another order taken as ours made them, and how many pairs of them ours inverted. A run is
/// two or more adjacent decisions; ours' order of its requests may differ from the kernel's
/// only in pairs the trace leaves unordered (`unordered`: issued by two CPUs close
/// together), so each CPU's own order stands and the runs of two CPUs interleave as they
/// may have under the scheduler's lock (`blk_mq_do_dispatch_sched` on each CPU takes its
/// requests one by one before `blk_mq_dispatch_rq_list` issues them). `decided`: when bfq's
/// log places each request's dispatch (empty without a log). Only ours' exact decisions
/// count: at each step ours chose the request it did from the set the kernel's decision at
/// that step would have had in ours' order (the kernel's set, less what ours took earlier in
/// the run and the kernel later, plus what the kernel took earlier and ours later). The
/// shortest such run is taken; for two decisions this is the swap of an adjacent pair.
pub fn settle_unordered_pairs(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    mut kernel: Vec<Decision>,
    ours: &[Decision],
) -> (Vec<Decision>, usize) {
    let mut settled = 0;
    let mut k = 0;
    let end = kernel.len().min(ours.len());
    while k + 1 < end {
        if ours[k] == kernel[k] {
            k += 1;
            continue;
        }
        match unordered_run(trace, decided, &kernel[k..end], &ours[k..end]) {
            Some((run, inverted)) => {
                let n = run.len();
                kernel.splice(k..k + n, run);
                settled += inverted;
                k += n;
            }
            None => k += 1,
        }
    }
    (kernel, settled)
}

/// The shortest run at the start of `kernel` that ours made in another order the trace
/// allows ([`settle_unordered_pairs`]), as the kernel's decisions in ours' order, with the
/// number of pairs inverted; `None` if there is none. A run ends at the first request the
/// kernel issued on no CPU (a direct issue's order is its own) or past
/// [`UNORDERED_ISSUE_GAP`] after the first.
fn unordered_run(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    kernel: &[Decision],
    ours: &[Decision],
) -> Option<(Vec<Decision>, usize)> {
    let issued = |i: usize| trace.first_dispatch(i).map(|d| d.time);
    let start = issued(kernel[0].chosen)?;
    for n in 2..=kernel.len() {
        let last = issued(kernel[n - 1].chosen)?;
        if last.saturating_sub(start) > UNORDERED_ISSUE_GAP {
            return None;
        }
        let theirs: Vec<usize> = kernel[..n].iter().map(|d| d.chosen).collect();
        let mine: Vec<usize> = ours[..n].iter().map(|d| d.chosen).collect();
        let mut a = theirs.clone();
        let mut b = mine.clone();
        a.sort_unstable();
        b.sort_unstable();
        if a != b || theirs == mine {
            continue;
        }
        // Every pair ours took in the other order must be one the trace leaves open.
        let at = |r: usize| mine.iter().position(|&m| m == r).unwrap_or(usize::MAX);
        let mut inverted = 0;
        let mut open = true;
        'pairs: for (i, &x) in theirs.iter().enumerate() {
            for &y in &theirs[i + 1..] {
                if at(y) < at(x) {
                    if !unordered(trace, decided, x, y) {
                        open = false;
                        break 'pairs;
                    }
                    inverted += 1;
                }
            }
        }
        if !open {
            continue;
        }
        let mut run = Vec::with_capacity(n);
        for (s, d) in kernel[..n].iter().enumerate() {
            let (kernel_before, ours_before) = (&theirs[..s], &mine[..s]);
            let mut queued: Vec<usize> = d
                .queued
                .iter()
                .copied()
                .filter(|r| !ours_before.contains(r))
                .collect();
            for &r in kernel_before {
                if !ours_before.contains(&r) {
                    if let Err(at) = queued.binary_search(&r) {
                        queued.insert(at, r);
                    }
                }
            }
            run.push(Decision {
                queued,
                chosen: mine[s],
            });
        }
        if run[..] == ours[..n] {
            return Some((run, inverted));
        }
    }
    None
}
