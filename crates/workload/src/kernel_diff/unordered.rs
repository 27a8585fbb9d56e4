//! Dispatches the trace leaves unordered: two CPUs' issue events close together, whose
//! decisions under the scheduler's lock may have come in either order
//! ([`settle_unordered_pairs`]).

use std::collections::HashMap;

use elevator_core::Nanos;

use crate::agreement::Decision;
use crate::traces::ftrace::KernelTrace;

/// The longest time between the issue events of two dispatches from two CPUs that the
/// trace leaves unordered ([`settle_unordered_pairs`]): a queue run takes up to
/// `nr_requests` requests from the scheduler before it issues the first
/// (`__blk_mq_do_dispatch_sched`, then `blk_mq_dispatch_rq_list`), about a microsecond
/// each on the loop device.
pub const UNORDERED_ISSUE_GAP: Nanos = Nanos::from_us(10);

/// The most decisions one unordered run may hold: a queue run's list is at most
/// `nr_requests` long, and two runs' lists at the loop device's 128 driver tags; this bounds
/// the search where longer bursts meet.
const LONGEST_RUN: usize = 512;

/// Whether the kernel's dispatches of requests `a` then `b` (issued in that order) may have
/// been decided in the other order: two CPUs issued them, within [`UNORDERED_ISSUE_GAP`].
/// `block_rq_issue` fires in `blk_mq_start_request`, after the scheduler returned the
/// request and released its lock; each CPU's queue run asks the scheduler under that lock,
/// so which of two runs on two CPUs asked first is not in the trace. Two dispatches placed
/// by bfq's log (`decided`, [`LogOrder::decided`](super::LogOrder::decided)) are ordered.
/// So are two whose CPUs were both in a queue run then: the run that issued `b` had begun
/// ([`burst_starts`]: its burst of issues, or the submitter's own insertion before it) when
/// `a` was issued. A run takes its
/// whole list from the scheduler (`__blk_mq_do_dispatch_sched`, up to `nr_requests`
/// requests while driver tags last) before `blk_mq_dispatch_rq_list` issues the first, so
/// two runs issuing side by side had both taken theirs, in an order the scheduler's lock
/// alone decided (two lists of mq-deadline's one sorted pass, issued interleaved by fio on
/// CPU 0 and kblockd on CPU 1 for 65 us: deep-randwriter-qd256-beside-qd1-reader-defaults,
/// 28627.351666-.351731).
fn unordered(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    bursts: &[Nanos],
    a: usize,
    b: usize,
) -> bool {
    let placed = |i: usize| decided.get(i).copied().flatten().is_some();
    if placed(a) && placed(b) {
        return false;
    }
    match (trace.first_dispatch(a), trace.first_dispatch(b)) {
        (Some(x), Some(y)) => {
            x.cpu != y.cpu
                && y.time >= x.time
                && (y.time.saturating_sub(x.time) <= UNORDERED_ISSUE_GAP
                    || burst_start(trace, bursts, b).is_some_and(|s| s <= x.time))
        }
        _ => false,
    }
}

/// For each dispatch of `trace` (by index), when the queue run that issued it could have
/// begun taking its list from the scheduler. First, when its CPU's burst of issues began: the
/// issue of the first dispatch of the same task on the same CPU reached from it through
/// issues each at most [`UNORDERED_ISSUE_GAP`] after the one before (another task's issue on
/// that CPU ends the burst). Then, where the issuing task had itself inserted on that CPU
/// since the CPU's last issue before the burst, its last such insertion: the submitter's own
/// run (`blk_mq_run_hw_queue` after `blk_mq_insert_request`, or after
/// `blk_mq_insert_requests` for a flushed plug) begins there, and may take its list long
/// before its first `block_rq_issue` (an interrupt between:
/// typical-three-iouring-randreaders-qd8-beside-libaio-16k-randwriter-qd32-defaults under
/// mq-deadline, a read inserted by fio on CPU 0 at 81459.527999 and issued by it at .528033,
/// two writes inserted and issued by fio on CPU 1 at .528021-.528029 between, the read
/// taken first: mq-deadline would not have chosen a write with it queued). A kblockd run
/// inserts nothing, so its burst's start stands.
fn burst_starts(trace: &KernelTrace) -> Vec<Nanos> {
    // Each task's insertions on each CPU, in time order.
    let mut inserts: HashMap<(u32, u32), Vec<Nanos>> = HashMap::new();
    for r in &trace.requests {
        if let (Some(on), Some(at)) = (r.inserted_on, r.inserted) {
            inserts.entry((on.cpu, on.pid)).or_default().push(at);
        }
    }
    for v in inserts.values_mut() {
        v.sort_unstable();
    }
    // Per CPU: the last issue's task and time, the burst's start, and the issue before it.
    let mut last: HashMap<u32, (u32, Nanos, Nanos, Option<Nanos>)> = HashMap::new();
    trace
        .dispatches
        .iter()
        .map(|d| {
            let (start, before) = match last.get(&d.cpu) {
                Some(&(pid, at, start, before))
                    if pid == d.pid && d.time.saturating_sub(at) <= UNORDERED_ISSUE_GAP =>
                {
                    (start, before)
                }
                Some(&(_, at, _, _)) => (d.time, Some(at)),
                None => (d.time, None),
            };
            last.insert(d.cpu, (d.pid, d.time, start, before));
            let own_run = inserts.get(&(d.cpu, d.pid)).and_then(|v| {
                let n = v.partition_point(|&t| t <= start);
                n.checked_sub(1).map(|i| v[i])
            });
            match own_run {
                Some(t) if before.is_none_or(|b| t > b) => t,
                _ => start,
            }
        })
        .collect()
}

/// When the queue run that issued request `i`'s first dispatch could have begun (`bursts`:
/// [`burst_starts`]), if the kernel issued it.
fn burst_start(trace: &KernelTrace, bursts: &[Nanos], i: usize) -> Option<Nanos> {
    trace.requests[i]
        .dispatch_index
        .and_then(|d| bursts.get(d).copied())
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
    let bursts = burst_starts(trace);
    while k + 1 < end {
        if ours[k] == kernel[k] {
            k += 1;
            continue;
        }
        match unordered_run(trace, decided, &bursts, &kernel[k..end], &ours[k..end]) {
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
/// kernel issued on no CPU (a direct issue's order is its own) or in a burst of issues
/// ([`burst_starts`]) begun past [`UNORDERED_ISSUE_GAP`] after the first's issue, and holds
/// at most [`LONGEST_RUN`] decisions.
fn unordered_run(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    bursts: &[Nanos],
    kernel: &[Decision],
    ours: &[Decision],
) -> Option<(Vec<Decision>, usize)> {
    let issued = |i: usize| trace.first_dispatch(i).map(|d| d.time);
    let start = issued(kernel[0].chosen)?;
    // How many more times each request is in the kernel's first n than in ours', and how
    // many requests that count is not zero for.
    let mut balance: HashMap<usize, i64> = HashMap::new();
    let mut unbalanced = 0i64;
    let tally = |balance: &mut HashMap<usize, i64>, r: usize, by: i64| -> i64 {
        let v = balance.entry(r).or_insert(0);
        let was = *v != 0;
        *v += by;
        i64::from(*v != 0) - i64::from(was)
    };
    unbalanced += tally(&mut balance, kernel[0].chosen, 1);
    unbalanced += tally(&mut balance, ours[0].chosen, -1);
    for n in 2..=kernel.len().min(LONGEST_RUN) {
        let last = kernel[n - 1].chosen;
        issued(last)?;
        if burst_start(trace, bursts, last)?.saturating_sub(start) > UNORDERED_ISSUE_GAP {
            return None;
        }
        unbalanced += tally(&mut balance, last, 1);
        unbalanced += tally(&mut balance, ours[n - 1].chosen, -1);
        if unbalanced != 0 {
            continue;
        }
        let theirs: Vec<usize> = kernel[..n].iter().map(|d| d.chosen).collect();
        let mine: Vec<usize> = ours[..n].iter().map(|d| d.chosen).collect();
        if theirs == mine {
            continue;
        }
        // Every pair ours took in the other order must be one the trace leaves open.
        let at = |r: usize| mine.iter().position(|&m| m == r).unwrap_or(usize::MAX);
        let mut inverted = 0;
        let mut open = true;
        'pairs: for (i, &x) in theirs.iter().enumerate() {
            for &y in &theirs[i + 1..] {
                if at(y) < at(x) {
                    if !unordered(trace, decided, bursts, x, y) {
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
        // The runs' lists were taken before their first issue (`start`): a request inserted
        // after it was in no set the kernel chose from there, though its issue-time set
        // shows it; ours, asked at each issue, may hold it or not.
        let earlier = |q: &[usize]| -> Vec<usize> {
            q.iter()
                .copied()
                .filter(|&r| {
                    trace
                        .requests
                        .get(r)
                        .and_then(|r| r.inserted)
                        .is_none_or(|at| at <= start)
                })
                .collect()
        };
        if run
            .iter()
            .zip(&ours[..n])
            .all(|(k, o)| k.chosen == o.chosen && earlier(&k.queued) == earlier(&o.queued))
        {
            return Some((ours[..n].to_vec(), inverted));
        }
    }
    None
}
