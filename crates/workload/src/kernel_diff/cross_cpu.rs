//! Decisions a queue run took while another CPU inserted: set aside where the trace cannot
//! order the two and the other order makes ours agree ([`set_aside_cross_cpu_insertions`]).
//!
//! `__blk_mq_do_dispatch_sched` (6.18) makes all of a round's `dispatch_request` calls, each
//! its own section under the scheduler's lock, before `blk_mq_dispatch_rq_list` issues the
//! batch, so a decision's `block_rq_issue` comes after the decision by up to a round's
//! length. An insertion another CPU traced (`block_rq_insert` fires under the scheduler's
//! lock in `dd_insert_request`, `kyber_insert_requests`, `bfq_insert_request`) after the
//! run began and before the issue may have come before or after the decision: the trace
//! does not say. The replay takes the trace's order (the insertion first). Where ours then
//! disagrees, this module tries the one other order the trace allows, the decision taken
//! before those insertions, and where ours then takes the kernel's request from the kernel's
//! set, the decision counts neither way ([`TraceDiff::set_aside`](super::TraceDiff::set_aside)).
//!
//! The decision's window: from the last event its CPU traced before its issue (an insertion
//! by any task, or an issue: the run cannot have begun before it, and its own earlier issues
//! bound it from below, since their decisions came first) to its issue. The insertions
//! passed: those just before the decision in the kernel's queue log, traced on another CPU
//! inside the window, the first of each request, with no dispatch, merge or insertion of the
//! decision's CPU between (passing a dispatch would reorder two decisions, the
//! issue-issue pairs of [`super::settle_unordered_pairs`]; a merge's place is fixed by its
//! position in the log). The decision is moved before all of them (the earliest the trace
//! allows), on both sides: the kernel's queue log (its decision's set loses them) and ours'
//! timeline (ours is asked there, the insertions follow, nothing else of the timeline
//! moves: its extra asks at run ends stay where the recorded order put them). A decision
//! bfq's log places ([`LogOrder::decided`](super::LogOrder::decided)) is ordered and never
//! moved. Narrower than the kernel's: a run's later decision may have been taken before the
//! run's earlier issues (in the same round), and a run's first decision may have been taken
//! before other CPUs' runs whose issues its own issue trails (an interrupt or a preempted
//! vCPU between `dispatch_request` and `blk_mq_start_request`). Those cases have their own
//! alternative ([`run_decided_before`]): where ours took a request the kernel decided a little
//! later on another CPU, that decision is moved before the other CPUs' insertions and
//! decisions between, all traced after its run could have begun.
//!
//! The policies are not `Clone`, so ours' state at the decision is reached again by a replay
//! of the whole recording with the move (a fork by replaying the prefix). The replay then
//! goes on from the alternative where a decision is set aside (ours took the kernel's
//! request, as the kernel did; every later kernel decision is the recorded one), and from
//! the recorded order where it is not.

use std::collections::HashSet;

use elevator_core::Nanos;

use crate::agreement::{Decision, QueueEvent};
use crate::traces::ftrace::{Dispatch, KernelTrace};

/// One of the kernel's decisions taken before the insertions just before it in its queue
/// log ([`set_aside_cross_cpu_insertions`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct MovedBefore {
    /// The decision (its index in the dispatch order, the earlier moves made).
    pub(super) decision: usize,
    /// Its index in the dispatch order after the move: `decision` less the other CPUs'
    /// decisions it passes ([`run_decided_before`]; none for [`before_insertions`]).
    pub(super) lands: usize,
    /// Its position in the kernel's queue log.
    from: usize,
    /// The position of the first insertion it passes.
    to: usize,
    /// The requests whose insertions it passes.
    pub(super) passed: Vec<usize>,
    /// The requests whose dispatches (other CPUs' decisions) it passes.
    pub(super) passed_dispatches: Vec<usize>,
}

/// A replay's decisions on both sides.
pub(super) struct Replayed<T> {
    /// The kernel's, issue-issue pairs settled ([`super::settle_unordered_pairs`]).
    pub(super) kernel: Vec<Decision>,
    /// Ours.
    pub(super) ours: Vec<Decision>,
    /// Whatever else the caller keeps of the replay.
    pub(super) rest: T,
}

/// When the queue run that issued `issue` may have begun at the earliest, as the trace
/// bounds it: its CPU's last traced insertion (by any task) or issue before it.
fn window_opens(trace: &KernelTrace, issue: &Dispatch) -> Nanos {
    let before = trace.requests[issue.request]
        .dispatch_index
        .map_or(&[][..], |d| &trace.dispatches[..d]);
    let issued = before
        .iter()
        .rev()
        .find(|d| d.cpu == issue.cpu)
        .map(|d| d.time);
    issued.max(run_opens(trace, issue)).unwrap_or(Nanos::ZERO)
}

/// The kernel's `k`th decision in `log` if the trace leaves its place open: its position in
/// `log` and its request, unless bfq's log places it (`decided`) or it repeats an earlier
/// event of `log`.
fn movable_decision(
    decided: &[Option<Nanos>],
    log: &[QueueEvent],
    k: usize,
) -> Option<(usize, usize)> {
    let from = log
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, QueueEvent::Dispatch(_)))
        .nth(k)?
        .0;
    let QueueEvent::Dispatch(r) = log[from] else {
        return None;
    };
    let placed = decided.get(r).copied().flatten().is_some();
    (!placed && !log[..from].contains(&log[from])).then_some((from, r))
}

/// The kernel's `d`th decision in `log` taken before the insertions just before it that
/// other CPUs traced inside its window (module docs), if there are any. `merge_after`: where
/// each scheduler merge comes in `log` (before the event at that position); `decided`: the
/// decisions bfq's log places.
pub(super) fn before_insertions(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    merge_after: &HashSet<usize>,
    log: &[QueueEvent],
    d: usize,
) -> Option<MovedBefore> {
    let (from, r) = movable_decision(decided, log, d)?;
    let issue = trace.first_dispatch(r)?;
    let opens = window_opens(trace, issue);
    let mut to = from;
    let mut passed = Vec::new();
    while to > 0 && !merge_after.contains(&to) {
        let QueueEvent::Arrive(i) = log[to - 1] else {
            break;
        };
        let inside = trace.requests.get(i).is_some_and(|rq| {
            rq.bio().is_some()
                && matches!((rq.inserted, rq.inserted_on),
                    (Some(t), Some(on)) if on.cpu != issue.cpu && t >= opens && t <= issue.time)
        });
        if i == r || !inside || log[..to - 1].contains(&log[to - 1]) {
            break;
        }
        passed.push(i);
        to -= 1;
    }
    (!passed.is_empty() && log[..to].contains(&QueueEvent::Arrive(r))).then_some(MovedBefore {
        decision: d,
        lands: d,
        from,
        to,
        passed,
        passed_dispatches: Vec::new(),
    })
}

/// When the queue run that issued `issue` may have begun at the earliest if its CPU's earlier
/// issues since its last insertion were the same run's: that insertion (by any task on the
/// CPU), `None` if the CPU inserted nothing before it. A round's decisions all precede its
/// first issue (`__blk_mq_do_dispatch_sched` dequeues, then `blk_mq_dispatch_rq_list`
/// issues), and the issues of one round can be spread out by interrupts (the softirq
/// completions, a preemption) past other CPUs' work.
fn run_opens(trace: &KernelTrace, issue: &Dispatch) -> Option<Nanos> {
    trace
        .requests
        .iter()
        .filter_map(|r| match (r.inserted, r.inserted_on) {
            (Some(t), Some(on)) if on.cpu == issue.cpu && t <= issue.time => Some(t),
            _ => None,
        })
        .max()
}

/// How many decisions later than a disagreement [`run_decided_before`] looks for ours'
/// choice (a round's remaining decisions on the loop device's single hardware queue).
pub(super) const RUN_REACH: usize = 8;

/// The kernel's `e`th decision in `log` (the moves before made), a decision of its CPU's run
/// (its first, or a later one of a round whose earlier issues came first), taken before the
/// `d`th and the other CPUs' events between, where all of them fall inside its run's window
/// ([`run_opens`]): other CPUs' first insertions of a request and other CPUs' decisions,
/// traced after the run could have begun, with no event of the deciding CPU, merge or
/// repeated event between, and the decision's own request inserted before the place it
/// lands. The one other order: the run's decision before the other CPU's run (the trace
/// ordered them by issue, not by decision). `merge_before`: the events a scheduler merge
/// comes just before; `decided`: the decisions bfq's log places.
pub(super) fn run_decided_before(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    merge_before: &HashSet<QueueEvent>,
    log: &[QueueEvent],
    d: usize,
    e: usize,
) -> Option<MovedBefore> {
    let (from, r) = movable_decision(decided, log, e)?;
    let placed = |i: usize| decided.get(i).copied().flatten().is_some();
    let issue = trace.first_dispatch(r)?;
    let inserted = run_opens(trace, issue);
    let opens = inserted.unwrap_or(Nanos::ZERO);
    // A run's decision: a later one of a round (its CPU issued since the run could have
    // begun), or the first after an insertion on its CPU (the insertion's own queue run).
    let index = trace.requests[r].dispatch_index?;
    let later_of_round = trace.dispatches[..index]
        .iter()
        .rev()
        .find(|x| x.cpu == issue.cpu)
        .is_some_and(|x| x.time >= opens);
    // The insertion's own run: no completion on the CPU since (a completion's restart,
    // `blk_mq_sched_restart`, may have begun the run that decided).
    let after_insertion = inserted.is_some()
        && !trace.requests.iter().any(|q| {
            matches!((q.completed, q.completed_on),
                (Some(t), Some(on)) if on.cpu == issue.cpu && t > opens && t < issue.time)
        });
    if !later_of_round && !after_insertion {
        return None;
    }
    let other_cpu_after_opens =
        |t: Nanos, cpu: u32| cpu != issue.cpu && t >= opens && t <= issue.time;
    let mut to = from;
    let mut passed = Vec::new();
    let mut passed_dispatches = Vec::new();
    while to > 0 && !merge_before.contains(&log[to]) {
        let ev = log[to - 1];
        if log[..to - 1].contains(&ev) {
            break;
        }
        let passable = match ev {
            QueueEvent::Arrive(i) => {
                i != r
                    && trace.requests.get(i).is_some_and(|rq| {
                        rq.bio().is_some()
                            && matches!((rq.inserted, rq.inserted_on),
                                (Some(t), Some(on)) if other_cpu_after_opens(t, on.cpu))
                    })
            }
            QueueEvent::Dispatch(j) => {
                passed_dispatches.len() < e - d
                    && !placed(j)
                    && trace
                        .first_dispatch(j)
                        .is_some_and(|x| other_cpu_after_opens(x.time, x.cpu))
            }
            QueueEvent::Leave(_) => false,
        };
        if !passable {
            break;
        }
        match ev {
            QueueEvent::Arrive(i) => passed.push(i),
            QueueEvent::Dispatch(j) => passed_dispatches.push(j),
            QueueEvent::Leave(_) => {}
        }
        to -= 1;
    }
    (passed_dispatches.len() == e - d && log[..to].contains(&QueueEvent::Arrive(r))).then_some(
        MovedBefore {
            decision: e,
            lands: d,
            from,
            to,
            passed,
            passed_dispatches,
        },
    )
}

/// `log` with each of `moves` made, in order (each move's positions are in the log the
/// moves before it made).
pub(super) fn moved_log(log: &[QueueEvent], moves: &[MovedBefore]) -> Vec<QueueEvent> {
    let mut out = log.to_vec();
    for m in moves {
        out[m.to..=m.from].rotate_right(1);
    }
    out
}

/// The kernel's decisions replayed with ours, each decision where ours disagrees tried once
/// more with the one other order the trace allows (module docs), and set aside where ours
/// then takes the kernel's request from the kernel's set: the replay kept (the last
/// alternative set aside, else the first), with the moves of the decisions set aside, in
/// order. `replay` replays the recording with the moves given; `first` is its replay with
/// none. An alternative counts only if ours' decisions before it are the first replay's
/// (the fork is at the same point). A decision is tried only if ours' set and the kernel's
/// differ by nothing but the insertions passed, without which ours cannot agree.
pub(super) fn set_aside_cross_cpu_insertions<T>(
    trace: &KernelTrace,
    decided: &[Option<Nanos>],
    merge_after: &HashSet<usize>,
    log: &[QueueEvent],
    first: Replayed<T>,
    mut replay: impl FnMut(&[MovedBefore]) -> Result<Replayed<T>, String>,
) -> Result<(Replayed<T>, Vec<MovedBefore>), String> {
    let mut cur = first;
    let mut moves: Vec<MovedBefore> = Vec::new();
    let merge_before: HashSet<QueueEvent> = merge_after
        .iter()
        .filter_map(|&p| log.get(p).copied())
        .collect();
    let mut k = 0;
    while let Some(d) = (k..cur.kernel.len()).find(|&d| cur.ours.get(d) != Some(&cur.kernel[d])) {
        k = d + 1;
        let Some(ours) = cur.ours.get(d) else {
            break;
        };
        let now = moved_log(log, &moves);
        let Some(m) = before_insertions(trace, decided, merge_after, log, d) else {
            if let Some(m) = (d + 1..cur.kernel.len().min(d + 1 + RUN_REACH))
                .find(|&e| cur.kernel[e].chosen == ours.chosen)
                .and_then(|e| run_decided_before(trace, decided, &merge_before, &now, d, e))
            {
                let mut tried = moves.clone();
                tried.push(m);
                let alt = replay(&tried)?;
                if alt.ours.get(..d) == cur.ours.get(..d) && alt.ours.get(d) == alt.kernel.get(d) {
                    moves = tried;
                    cur = alt;
                }
            }
            continue;
        };
        let without = |q: &[usize]| -> Vec<usize> {
            q.iter()
                .copied()
                .filter(|i| !m.passed.contains(i))
                .collect()
        };
        if without(&ours.queued) != without(&cur.kernel[d].queued) {
            continue;
        }
        let mut tried = moves.clone();
        tried.push(m);
        let alt = replay(&tried)?;
        if alt.ours.get(..d) == cur.ours.get(..d) && alt.ours.get(d) == alt.kernel.get(d) {
            moves = tried;
            cur = alt;
        }
    }
    Ok((cur, moves))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{meta, read};
    use super::super::{diff, divergences, markdown, DiffOptions, Row, TraceDiff};

    /// mq-deadline's read at 50 issued alone on CPU 0 leaves its sorted pass at 58
    /// (`latest_pos`); fio-10 then inserts a read at 1000 on CPU 0, `SECOND` inserts a read at
    /// 100, and CPU 0 issues 1000 first, kblockd on CPU 1 100 16 us later (past
    /// [`UNORDERED_ISSUE_GAP`](super::super::UNORDERED_ISSUE_GAP), and kblockd's run, unlike
    /// a submitter's own, is not taken to begin at the insertion: the two decisions are
    /// ordered): the kernel's run on CPU 0 chose 1000, so it took it before 100 was there,
    /// or its pass would have taken 100 (the next at or after 58).
    /// `before` goes before fio-10's insertion of 1000, `second` after it, `after` after
    /// the issue of 100.
    fn trace(before: &str, second: &str, after: &str) -> String {
        format!(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 50 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 50 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 50 + 8 be,0,4 [fio]
{before} fio-10 [000] ..... 1.000009: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-10 [000] ...1. 1.000010: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
{second} fio-10 [000] ..... 1.000014: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 kworker/1:1H-59 [001] ..... 1.000030: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [kworker/1:1H]
{after} ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 50 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000060: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000070: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
"
        )
    }

    /// fio-11's read at 100 inserted on `cpu` at 1.000012.
    fn read_at_100_on(cpu: u32) -> String {
        format!(
            " fio-11 [{cpu:03}] ..... 1.000011: block_getrq: 7,0 R 100 + 8 [fio]
 fio-11 [{cpu:03}] ...1. 1.000012: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
"
        )
    }

    /// mq-deadline with reads expiring after a second: its sorted pass decides, not its FIFO.
    fn replay(text: &str, set_aside: bool) -> TraceDiff {
        let mut m = meta("mq-deadline");
        m.iosched.insert("read_expire".into(), "1000".into());
        let opts = DiffOptions {
            set_aside,
            ..DiffOptions::default()
        };
        diff(&read(text), &m, &opts).unwrap()
    }

    /// Requests of `d`'s decisions by index: (kernel's set, kernel's choice, ours' choice).
    fn decision(d: &TraceDiff, k: usize) -> (Vec<usize>, usize, usize) {
        (
            d.kernel[k].queued.clone(),
            d.kernel[k].chosen,
            d.ours[k].chosen,
        )
    }

    /// CPU 1 inserted 100 inside the window of CPU 0's decision (after CPU 0's insertion of
    /// 1000, which its run followed, before 1000's issue): taken in the trace's order ours
    /// chooses 100, and the next decision's sets differ; with 100 inserted after the
    /// decision (the other order the trace allows) ours chooses 1000 alone, as the kernel
    /// did. The decision counts neither way, the one after it agrees.
    #[test]
    fn a_decision_another_cpus_insertion_may_have_followed_is_set_aside_where_ours_then_agrees() {
        let text = trace("", &read_at_100_on(1), "");
        let recorded = replay(&text, false);
        assert_eq!(decision(&recorded, 1), (vec![1, 2], 1, 2));
        assert_eq!(recorded.set_aside, Vec::<usize>::new());
        assert_eq!(recorded.agreement.first_divergence, Some(1));
        assert_eq!((recorded.choices, recorded.choices_agreed), (1, 0));
        assert_eq!(
            (recorded.agreement.decisions, recorded.agreement.same_choice),
            (3, 1)
        );
        let d = replay(&text, true);
        assert_eq!(d.set_aside, [1], "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!(decision(&d, 1), (vec![1], 1, 1));
        assert_eq!((d.agreement.decisions, d.agreement.same_choice), (2, 2));
        assert_eq!((d.choices, d.choices_agreed), (0, 0));
        assert_eq!(d.agreement.first_divergence, None);
    }

    /// The decision set aside is printed as a count in both tables, in neither decisions
    /// nor real choices, and listed by `--divergences`.
    #[test]
    fn the_tables_count_a_decision_set_aside_in_its_own_column() {
        let text = trace("", &read_at_100_on(1), "");
        let d = replay(&text, true);
        let row = Row {
            mix: "cross".into(),
            scheduler: "mq-deadline".into(),
            kernel_pace: d.clone(),
            device_pace: d.clone(),
            early: d,
            requests: read(&text).requests,
            assembly: Default::default(),
        };
        let table = markdown(std::slice::from_ref(&row));
        assert!(
            table.contains("| cross | mq-deadline | mq-deadline | 2 | 100.0% | 0/0 | 1 | - |"),
            "{table}"
        );
        assert!(
            table.contains("| mq-deadline | 2 | 100.0% | 0/0 (-) | 1 | 100.0% | 100.0% |"),
            "{table}"
        );
        let listed = divergences(&row, 5);
        assert!(
            listed
                .iter()
                .any(|l| l.contains("1 decision(s) set aside") && l.ends_with(": 1")),
            "{listed:?}"
        );
    }

    /// The same insertion on CPU 0, the deciding CPU: its run began after it (each CPU's
    /// events are in order), so the decision saw 100 and stays a disagreement. And on CPU 1
    /// before a flush kblockd issued on CPU 0 (no decision of the scheduler's, not in the
    /// queue log): CPU 0's run that issued 1000 began after that issue, after 100's insertion;
    /// and CPU 1's run that issued 100 may have begun only at a completion on CPU 1 after
    /// CPU 0's decision (`blk_mq_sched_restart`), so it is not moved before it either.
    #[test]
    fn the_same_insertion_on_the_deciding_cpu_or_before_its_window_is_not_set_aside() {
        let flushed = trace(
            "",
            &format!(
                "{} kworker/0:1H-58 [000] ..... 1.000013: block_rq_issue: 7,0 FF 0 () 0 + 0 \
                 none,0,0 [kworker/0:1H]\n",
                read_at_100_on(1)
            ),
            "",
        );
        let completed_on_1 = " ksoftirqd/1-22 [001] ..s.. 1.000020: block_rq_complete: 7,0 R () \
                              50 + 8 be,0,4 [0]\n";
        let flushed = flushed
            .replace(
                " ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 50 + 8 be,0,4 [0]\n",
                "",
            )
            .replace(
                " kworker/1:1H-59 [001] ..... 1.000030:",
                &format!("{completed_on_1} kworker/1:1H-59 [001] ..... 1.000030:"),
            );
        for text in [trace("", &read_at_100_on(0), ""), flushed] {
            let d = replay(&text, true);
            assert_eq!(d.set_aside, Vec::<usize>::new(), "{text}");
            assert_eq!(decision(&d, 1), (vec![1, 2], 1, 2), "{text}");
            assert_eq!((d.choices, d.choices_agreed), (1, 0), "{text}");
        }
    }

    /// A read at 200 inserted on CPU 0 before 1000 (the run saw it): with 100 after the
    /// decision ours' pass takes 200, not the kernel's 1000, so the decision disagrees under
    /// both orders and counts as a disagreement, in the trace's order.
    #[test]
    fn a_decision_ours_misses_under_both_orders_still_counts() {
        let earlier = "\
 fio-10 [000] ..... 1.000005: block_getrq: 7,0 R 200 + 8 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 4096 () 200 + 8 be,0,4 [fio]
";
        let issued = "\
 fio-10 [000] ..... 1.000032: block_rq_issue: 7,0 R 4096 () 200 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000045: block_rq_complete: 7,0 R () 200 + 8 be,0,4 [0]
";
        let text = trace(earlier, &read_at_100_on(1), issued);
        let d = replay(&text, true);
        assert_eq!(d.set_aside, Vec::<usize>::new());
        assert_eq!(decision(&d, 1), (vec![1, 2, 3], 2, 3));
        assert_eq!(d.agreement.first_divergence, Some(1));
        assert_eq!(d.agreement.decisions, 4);
    }

    /// CPU 1's run takes 1000 and 1100 in one round (`__blk_mq_do_dispatch_sched` dequeues
    /// both, then `blk_mq_dispatch_rq_list` issues them) and issues 1000 at 1.000013; CPU 0
    /// inserts 100 at .000015 and issues it at .000016; CPU 1's issue of 1100 comes at
    /// .000030 (past the issue-issue gap: the trace orders the two issues). Taken in the
    /// issue order, CPU 0's decision sees 1100 and 100, and ours' sorted pass (at 1008 after
    /// 1000) takes 1100: a miss, and the next decision's sets differ. Taken as CPU 1's round
    /// did, 1100 before 100's insertion and CPU 0's decision, ours agrees with both; the
    /// decision moved lands at index 2 and is set aside. `between`: events traced after
    /// CPU 0's issue of 100.
    fn round_trace(between: &str) -> String {
        format!(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 50 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 50 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 50 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000008: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-11 [001] ..... 1.000009: block_getrq: 7,0 R 1100 + 8 [fio]
 fio-11 [001] ...1. 1.000010: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-11 [001] ...1. 1.000011: block_rq_insert: 7,0 R 4096 () 1100 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000013: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000014: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000015: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000016: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
{between} fio-11 [001] .N... 1.000030: block_rq_issue: 7,0 R 4096 () 1100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 50 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000060: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000070: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000080: block_rq_complete: 7,0 R () 1100 + 8 be,0,4 [0]
"
        )
    }

    /// The round's later decision taken before the other CPU's insertion and decision
    /// ([`super::run_decided_before`]): set aside, the decision it passed agrees.
    #[test]
    fn a_rounds_later_decision_issued_after_another_cpus_run_is_set_aside_where_ours_then_agrees() {
        let text = round_trace("");
        let recorded = replay(&text, false);
        assert_eq!(decision(&recorded, 2), (vec![2, 3], 3, 2));
        assert_eq!(recorded.agreement.first_divergence, Some(2));
        assert_eq!((recorded.choices, recorded.choices_agreed), (2, 1));
        let d = replay(&text, true);
        assert_eq!(d.set_aside, [2], "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!(decision(&d, 2), (vec![2], 2, 2));
        assert_eq!(decision(&d, 3), (vec![3], 3, 3));
        assert_eq!((d.choices, d.choices_agreed), (1, 1));
        assert_eq!((d.agreement.decisions, d.agreement.same_choice), (3, 3));
        assert_eq!(d.agreement.first_divergence, None);
    }

    /// A run's first decision whose issue trails another CPU's run: CPU 1 inserts 1000 at
    /// 1.000010 and a run there (kblockd's) takes it at once (mq-deadline's pass goes on from
    /// 58), but the issue comes at .000030; meanwhile CPU 0 inserts a read at 20 and issues it (.000016).
    /// Taken in the issue order, CPU 0's decision sees 1000 and 20, and ours' pass (the first
    /// at or after 58) takes 1000: a miss. Taken as CPU 1's run could have (1000 before 20's
    /// insertion and CPU 0's decision, both inside 1000's window: `run_opens`), ours agrees
    /// with both; the moved decision is set aside. Before 3 December 2026 only a round's
    /// later decision was moved (CPU 1 had to issue between its insertion and 1000's issue).
    /// Had fio-11 issued 1000 itself, its own run would be taken to begin at the insertion,
    /// and the two runs' order left open (`unordered`'s `burst_starts`): ours' order agrees
    /// then, in the recorded order too.
    #[test]
    fn a_runs_first_decision_issued_after_another_cpus_run_is_set_aside_where_ours_then_agrees() {
        let text = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 50 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 50 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 50 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000009: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-11 [001] ...1. 1.000010: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000014: block_getrq: 7,0 R 20 + 8 [fio]
 fio-10 [000] ...1. 1.000015: block_rq_insert: 7,0 R 4096 () 20 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000016: block_rq_issue: 7,0 R 4096 () 20 + 8 be,0,4 [fio]
 kworker/1:1H-59 [001] ..... 1.000030: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [kworker/1:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 50 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000060: block_rq_complete: 7,0 R () 20 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000070: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
";
        let recorded = replay(text, false);
        assert_eq!(decision(&recorded, 1), (vec![1, 2], 2, 1));
        assert_eq!(recorded.agreement.first_divergence, Some(1));
        assert_eq!((recorded.choices, recorded.choices_agreed), (1, 0));
        let d = replay(text, true);
        assert_eq!(d.set_aside, [1], "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!(decision(&d, 1), (vec![1], 1, 1));
        assert_eq!(decision(&d, 2), (vec![2], 2, 2));
        assert_eq!((d.choices, d.choices_agreed), (0, 0));
        assert_eq!((d.agreement.decisions, d.agreement.same_choice), (2, 2));
        assert_eq!(d.agreement.first_divergence, None);
    }

    /// CPU 1 inserts a read at 5000 after CPU 0's issue of 100: the run that issued 1100
    /// began after that insertion, so after CPU 0's decision: nothing is moved, the miss
    /// counts.
    #[test]
    fn an_insertion_on_the_deciding_cpu_after_the_other_cpus_events_bounds_its_run() {
        let text = round_trace(
            " fio-11 [001] ..... 1.000017: block_getrq: 7,0 R 5000 + 8 [fio]
 fio-11 [001] ...1. 1.000018: block_rq_insert: 7,0 R 4096 () 5000 + 8 be,0,4 [fio]
",
        );
        let d = replay(&text, true);
        assert_eq!(
            d.set_aside,
            Vec::<usize>::new(),
            "{:?} vs {:?}",
            d.kernel,
            d.ours
        );
        assert_eq!(d.agreement.first_divergence, Some(2));
    }
}
