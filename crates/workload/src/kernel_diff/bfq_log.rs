//! What the replay takes from a recording's bfq log (`--bfq-log`, the `blk` tracer's notes of
//! `bfq_log_bfqq`): where processes exited, when bfq itself learned of each completion,
//! which of its dispatch calls that returned nothing changed its state, and the order and
//! times in which it chose the requests it dispatched ([`BfqLogTimes`], [`LogOrder`]).
//!
//! The trace's `block_rq_complete` fires in `blk_update_request`, before the request is
//! freed. bfq hears of the completion afterwards, in the same context: `blk_mq_free_request`
//! calls the scheduler's `finish_request`, `bfq_finish_requeue_request`, which takes
//! `bfqd->lock` (held meanwhile by another CPU inserting or dispatching), runs
//! `bfq_completed_request` (in-flight counts, think time, waker candidate, the idle timer or
//! an expiry) and then `bfq_finish_requeue_request_body`, whose `bfq_put_queue` logs
//! `put_queue`. In 6.18 an insertion is traced under that lock (`bfq_insert_request` fires
//! `block_rq_insert` after `bfq_init_rq`), so an insertion on another CPU between the two
//! comes before the completion as bfq sees it. Over the 22 bfq recordings with a log, every
//! completion of a request bfq handled is followed in its context by a `put_queue` line, a
//! median 2 to 16 us and at most 131 us later; on `twelve-procs-mixed-prio` a real-time
//! read completed at 10596.615298 s reached bfq at .615328, after a writer's insertion on the
//! other CPU at .615302 (its `expire ... num_disp 1` at .615322 still counts the read in
//! flight).

use std::collections::HashMap;

use elevator_core::Nanos;

use crate::agreement::QueueEvent;
use crate::traces::ftrace::{KernelTrace, TaskOnCpu};

/// The processes whose exit bfq's log shows (`bfqPIDS exit_bfqq` or `bfqPIDA exit_bfqq`:
/// `bfq_exit_icq` -> `bfq_exit_bfqq`), each at its first such note: (time, pid). A shared
/// queue's note (`bfqSHARED-S exit_bfqq`) names no process: the exiting one is the task that
/// logged it (`pids`, one per message: [`KernelTrace::message_pids`]).
pub fn exits_in_bfq_log(messages: &[(Nanos, String)], pids: &[u32]) -> Vec<(Nanos, u32)> {
    let mut out: Vec<(Nanos, u32)> = Vec::new();
    for (k, (t, m)) in messages.iter().enumerate() {
        let Some(rest) = m.strip_prefix("bfq") else {
            continue;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after = &rest[digits..];
        let pid = if after.starts_with("SHARED-S exit_bfqq") {
            pids.get(k).copied()
        } else if digits > 0
            && (after.starts_with("S exit_bfqq") || after.starts_with("A exit_bfqq"))
        {
            rest[..digits].parse::<u32>().ok()
        } else {
            None
        };
        if let Some(pid) = pid {
            if !out.iter().any(|&(_, p)| p == pid) {
                out.push((*t, pid));
            }
        }
    }
    out.sort();
    out
}

/// What the replay takes from a recording's bfq log; empty without one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BfqLogTimes {
    /// The processes' exits (time, pid: [`exits_in_bfq_log`]), replayed into our block layer
    /// where the kernel saw them (`handle_exit`).
    pub exits: Vec<(Nanos, u32)>,
    /// When bfq learned of each request's completion, by request index
    /// ([`completions_seen_by_bfq`]): ours completes the request then, instead of at its
    /// completion event. Empty, or `None` for a request: at its completion event.
    pub completions: Vec<Option<Nanos>>,
    /// bfq's dispatch calls that returned nothing but changed its state
    /// ([`refused_dispatch_calls`]): ours is asked there too, as at the end of a kernel queue
    /// run ([`asked_at_empty_runs`](super::asked_at_empty_runs)).
    pub refused_calls: Vec<Nanos>,
    /// bfq's dispatches in the order and at the times its log shows them ([`LogOrder`]):
    /// `None` when the log shows none.
    pub order: Option<LogOrder>,
    /// When `bfq_limit_depth` decided each request's depth, by request index
    /// (`depths_decided`). Empty, or `None` for a request: not shown.
    pub depths: Vec<Option<Nanos>>,
    /// When bfq's idle slice timer ran its handler and expired a queue
    /// ([`idle_timer_fires`]): ours' own timer fires there at the kernel's pace.
    pub timer_fires: Vec<Nanos>,
    /// Whether each request, by index, came from a batch of tags its submitter's plug
    /// allocated at once (`batch_allocated`): ours gives it a tag without a depth limit.
    /// Empty: none did.
    pub batched: Vec<bool>,
    /// The cgroup ids bfq's notes give each process's queues over time
    /// ([`QueueCgroups::read`]).
    pub queue_cgroups: QueueCgroups,
}

impl BfqLogTimes {
    /// The times `log` (a recording's bfq log) gives for `trace`'s requests. A queue's exit
    /// note names the task that created the queue: an io_uring thread's exit is its owner's
    /// io_context's ([`TracedRequest::ctx`](crate::traces::ftrace::TracedRequest::ctx)).
    pub fn read(trace: &KernelTrace, log: &KernelTrace) -> BfqLogTimes {
        let ctxs: HashMap<u32, u32> = trace.requests.iter().map(|r| (r.pid, r.ctx)).collect();
        let mut exits = exits_in_bfq_log(&log.messages, &log.message_pids);
        for (_, pid) in &mut exits {
            *pid = ctxs.get(pid).copied().unwrap_or(*pid);
        }
        BfqLogTimes {
            exits,
            completions: completions_seen_by_bfq(trace, log),
            refused_calls: refused_dispatch_calls(log),
            order: LogOrder::read(trace, log, &ctxs),
            depths: depths_decided(trace, &log.messages, &log.message_pids),
            timer_fires: idle_timer_fires(&log.messages),
            batched: batch_allocated(trace, &log.messages, &log.message_pids),
            queue_cgroups: QueueCgroups::read(log, &ctxs),
        }
    }
}

/// The cgroup id of the group each process's bfq queue was in, note by note: bfq logs a
/// queue's notes with its group's blkcg (`bfq_log_bfqq` -> `blk_add_cgroup_trace_msg`), which
/// the `blk` tracer prints with its `blk_cgroup` option ([`KernelTrace::message_cgroups`]).
/// A queue is named by the process that made it (`bfq_bfqq_name`: `bfqPIDS`, `bfqPIDA`).
///
/// The trace's block events carry no cgroup, and a process's group is not always its own:
/// blk-throttle resubmits a throttled bio from its dispatch work (`blk_throtl_dispatch_work_fn`,
/// a kworker), still charged to the bio's blkcg (`bio->bi_blkg`), so bfq puts the kworker's
/// queue in the throttled bio's group (`bfq_bic_update_cgroup`), one group after another as
/// the kworker serves them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueCgroups {
    /// By process (its io_context's pid), the (time, cgroup id) of each note naming its
    /// queue, in time order.
    by_pid: HashMap<u32, Vec<(Nanos, u64)>>,
}

impl QueueCgroups {
    /// The notes of `log` that name a process's queue and carry a cgroup id; `ctxs` maps a
    /// process to its io_context's (an io_uring thread's to its owner's).
    pub fn read(log: &KernelTrace, ctxs: &HashMap<u32, u32>) -> QueueCgroups {
        let mut by_pid: HashMap<u32, Vec<(Nanos, u64)>> = HashMap::new();
        for (k, (t, text)) in log.messages.iter().enumerate() {
            let Some(Some(id)) = log.message_cgroups.get(k) else {
                continue;
            };
            let Some(pid) = queue_pid(text) else {
                continue;
            };
            let pid = ctxs.get(&pid).copied().unwrap_or(pid);
            by_pid.entry(pid).or_default().push((*t, *id));
        }
        for notes in by_pid.values_mut() {
            notes.sort_by_key(|&(t, _)| t);
        }
        QueueCgroups { by_pid }
    }

    /// The cgroup id of the note naming `pid`'s queue nearest `time` (the earlier of two as
    /// near): the group bfq served that process's request in then. `None` without one.
    pub fn at(&self, pid: u32, time: Nanos) -> Option<u64> {
        let notes = self.by_pid.get(&pid)?;
        let k = notes.partition_point(|&(t, _)| t <= time);
        let before = k.checked_sub(1).map(|j| notes[j]);
        let after = notes.get(k).copied();
        match (before, after) {
            (Some((tb, b)), Some((ta, a))) => Some(if time - tb <= ta - time { b } else { a }),
            (Some((_, b)), None) => Some(b),
            (None, Some((_, a))) => Some(a),
            (None, None) => None,
        }
    }
}

/// The process a note's queue name gives (`bfq_bfqq_name`: `bfq` PID `S`|`A`), or `None` for
/// a note of no process's queue (a shared queue's `bfqSHARED-`, bfq's own `bfq ...`).
fn queue_pid(text: &str) -> Option<u32> {
    let name = text.split_whitespace().next()?.strip_prefix("bfq")?;
    let digits = name.strip_suffix('S').or_else(|| name.strip_suffix('A'))?;
    digits.parse().ok()
}

/// When bfq's idle slice timer fired, as far as its log shows: each `expire (0, ...)` note
/// (`BFQQE_TOO_IDLE`, which only `bfq_idle_slice_timer_body` passes to `bfq_bfqq_expire`,
/// once the hrtimer's interrupt runs it), sorted. A firing that found a request queued
/// (`schedule_dispatch` only) or expired a queue for its budget timeout is not told apart.
pub fn idle_timer_fires(messages: &[(Nanos, String)]) -> Vec<Nanos> {
    let mut out: Vec<Nanos> = messages
        .iter()
        .filter(|(_, m)| note_what(m).is_some_and(|w| w.starts_with("expire (0,")))
        .map(|&(t, _)| t)
        .collect();
    out.sort_unstable();
    out
}

/// Whether each of `trace`'s requests, by index, was taken from a batch of scheduler tags
/// its submitter's plug allocated at once: its submitter logged a `[bfq_limit_depth]` note
/// (`pids`: the task that logged each message) before its `block_getrq`, but its last such
/// note came before its bio's `block_bio_queue`, so none was its own. With a plug that
/// expects several requests (`blk_mq_get_new_requests` with the plug's `nr_ios`),
/// `__blk_mq_alloc_requests` runs `bfq_limit_depth` once, for the first bio, and, if that
/// set no shallow depth (a sync read's), takes the tags for the rest at once
/// (`__blk_mq_alloc_requests_batch`, `blk_mq_get_tags`); the later bios' requests come from
/// the plug's cache (`blk_mq_get_cached_request`) without a depth of their own. A write
/// first sets a shallow depth, the batch is refused and each request is allocated alone,
/// each with its note.
pub fn batch_allocated(
    trace: &KernelTrace,
    messages: &[(Nanos, String)],
    pids: &[u32],
) -> Vec<bool> {
    let notes = depth_notes(messages, pids);
    trace
        .requests
        .iter()
        .map(|r| {
            let (Some(created), Some(queued)) = (r.created, r.queued) else {
                return false;
            };
            notes.get(&r.pid).is_some_and(|times| {
                times[..times.partition_point(|&t| t <= created)]
                    .last()
                    .is_some_and(|&at| at < queued)
            })
        })
        .collect()
}

/// Each task's `[bfq_limit_depth]` notes (`pids`: the task that logged each message), sorted.
fn depth_notes(messages: &[(Nanos, String)], pids: &[u32]) -> HashMap<u32, Vec<Nanos>> {
    let mut notes: HashMap<u32, Vec<Nanos>> = HashMap::new();
    for (k, (t, m)) in messages.iter().enumerate() {
        if let (true, Some(&pid)) = (m.contains("[bfq_limit_depth]"), pids.get(k)) {
            notes.entry(pid).or_default().push(*t);
        }
    }
    for times in notes.values_mut() {
        times.sort_unstable();
    }
    notes
}

/// When `bfq_limit_depth` ran for each of `trace`'s requests, by index: its submitter's last
/// `[bfq_limit_depth]` note (`pids`: the task that logged each message) at or before its
/// `block_getrq`, and not before its bio's `block_bio_queue`. `__blk_mq_alloc_requests`
/// decides the depth there, then takes a tag (`blk_mq_get_tag`), sleeping for one if none
/// its depth may take is free; `block_getrq` fires once it has the tag.
pub fn depths_decided(
    trace: &KernelTrace,
    messages: &[(Nanos, String)],
    pids: &[u32],
) -> Vec<Option<Nanos>> {
    let notes = depth_notes(messages, pids);
    trace
        .requests
        .iter()
        .map(|r| {
            let created = r.created?;
            let times = notes.get(&r.pid)?;
            let at = *times[..times.partition_point(|&t| t <= created)].last()?;
            r.queued.is_none_or(|q| at >= q).then_some(at)
        })
        .collect()
}

/// What a bfq log note says after the queue it names (`bfqPIDS `, `bfqSHARED-S `, or `bfq `
/// for none): `bfq_log_bfqq`'s and `bfq_log`'s message.
fn note_what(note: &str) -> Option<&str> {
    Some(note.strip_prefix("bfq")?.split_once(' ')?.1)
}

/// Whether a bfq log note is `bfq_put_queue`'s (`bfqPIDS put_queue: ...`, `bfqSHARED-S
/// put_queue: ...`).
fn is_put_queue(note: &str) -> bool {
    note_what(note).is_some_and(|what| what.starts_with("put_queue:"))
}

/// When bfq learned of each of `trace`'s completions, by request index, from `log`'s notes:
/// the first note its completion's context (CPU and task, [`TaskOnCpu`]) logged at or after
/// the completion, when that context logged a `put_queue` (`bfq_finish_requeue_request`)
/// before its next completion; `None` where it did not (a flush, which bfq never holds, or a
/// request completed before the log began) and for requests that did not complete.
///
/// The first note rather than the `put_queue` itself: every note between them was logged under
/// `bfqd->lock` by `bfq_completed_request` (`schedule dispatch` when nothing is left in flight,
/// an expiry, a rate reset), so the lock was held by then. A softirq runs to its end on its CPU
/// before the task it interrupted goes on, and no task holds `bfqd->lock` with interrupts on,
/// so no other note of the context comes between.
pub fn completions_seen_by_bfq(trace: &KernelTrace, log: &KernelTrace) -> Vec<Option<Nanos>> {
    let mut notes: HashMap<TaskOnCpu, Vec<usize>> = HashMap::new();
    for (k, (&pid, &cpu)) in log.message_pids.iter().zip(&log.message_cpus).enumerate() {
        notes.entry(TaskOnCpu { cpu, pid }).or_default().push(k);
    }
    let mut completions: HashMap<TaskOnCpu, Vec<(Nanos, usize)>> = HashMap::new();
    for r in &trace.requests {
        if let (Some(t), Some(on)) = (r.completed, r.completed_on) {
            completions.entry(on).or_default().push((t, r.index));
        }
    }
    let mut seen = vec![None; trace.requests.len()];
    for (on, mut done) in completions {
        done.sort();
        let Some(notes) = notes.get(&on) else {
            continue;
        };
        let time = |n: usize| log.messages[notes[n]].0;
        let mut next = 0;
        for (c, &(t, i)) in done.iter().enumerate() {
            let until = done.get(c + 1).map_or(Nanos(u64::MAX), |d| d.0);
            while next < notes.len() && time(next) < t {
                next += 1;
            }
            let put = (next..notes.len())
                .take_while(|&n| time(n) <= until)
                .find(|&n| is_put_queue(&log.messages[notes[n]].1));
            if let Some(put) = put {
                seen[i] = Some(time(next));
                next = put + 1;
            }
        }
    }
    seen
}

/// Whether a bfq log note starts one of bfq's dispatch calls (`__bfq_dispatch_request`'s
/// `dispatch requests: N busy queues`), ends one that returned nothing (`bfq_select_queue`'s
/// `select_queue: no queue returned`), ends one that returns a request (`bfq_select_queue`'s
/// `select_queue: returned this queue`, after which `__bfq_dispatch_request` always takes
/// the queue's `next_rq`), or shows a side effect of one (`set_in_service_queue`,
/// `expire (`). A `bfqq_served` note is neither: `bfq_dispatch_rq_from_bfqq` logs one for
/// a dispatch, after `returned this queue`, but `bfq_bfqq_expire` logs one too, before its
/// `expire (` note, where it charges a slow queue for its time (`bfq_bfqq_charge_time`),
/// in a call that may then return nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallNote {
    Start,
    Nothing,
    Served,
    SideEffect,
}

fn call_note(note: &str) -> Option<CallNote> {
    let what = note_what(note)?;
    if what.starts_with("dispatch requests:") {
        Some(CallNote::Start)
    } else if what.starts_with("select_queue: no queue returned") {
        Some(CallNote::Nothing)
    } else if what.starts_with("select_queue: returned this queue") {
        Some(CallNote::Served)
    } else if what.starts_with("set_in_service_queue") || what.starts_with("expire (") {
        Some(CallNote::SideEffect)
    } else {
        None
    }
}

/// The times of bfq's dispatch calls that returned nothing but changed its state: in `log`,
/// each `dispatch requests` note of a context followed, in that context and before its
/// `select_queue` returned a queue, by `set_in_service_queue` or an expiry and then by
/// `select_queue: no queue returned`. Such a call (a queue run after an insertion or a
/// completion, `blk_mq_run_hw_queue`) has no tracepoint: on `twelve-procs-mixed-prio` a
/// writer's insertion at 10596.640064 s preempted the real-time reader in service
/// (`expire (4, ...)`), and the same queue run put the reader back in service and idled for
/// it (`set_in_service_queue` at .640079, then `no queue returned`), before the reader's
/// request in flight completed. A call may also find nothing queued in bfq: blk-mq's
/// `__blk_mq_do_dispatch_sched` calls `bfq_dispatch_request` when `bfq_has_work`, an
/// unlocked read of `bfqd->queued`, and another CPU may dispatch the last request between
/// the two; `bfq_select_queue` then finds the in-service queue empty and, where it need not
/// idle (`bfq_better_to_idle`), expires it (`bfq_bfqq_expire`, `BFQQE_NO_MORE_REQUESTS`,
/// after charging a slow queue's time: on `rt-be-idle-classes-cmdprio-uring` kworker's call
/// at 79406.328286 s expired the idle-class queue whose last read fio-3190 had dispatched at
/// .328285). Calls that returned nothing and changed nothing logged need no replay.
pub fn refused_dispatch_calls(log: &KernelTrace) -> Vec<Nanos> {
    // Per context: the open call's start and whether it changed bfq's state.
    let mut open: HashMap<TaskOnCpu, (Nanos, bool)> = HashMap::new();
    let mut out = Vec::new();
    for (k, (t, m)) in log.messages.iter().enumerate() {
        let (Some(&cpu), Some(&pid)) = (log.message_cpus.get(k), log.message_pids.get(k)) else {
            break;
        };
        let on = TaskOnCpu { cpu, pid };
        match call_note(m) {
            Some(CallNote::Start) => {
                open.insert(on, (*t, false));
            }
            Some(CallNote::SideEffect) => {
                if let Some(call) = open.get_mut(&on) {
                    call.1 = true;
                }
            }
            Some(CallNote::Nothing) => {
                if let Some((at, true)) = open.remove(&on) {
                    out.push(at);
                }
            }
            Some(CallNote::Served) => {
                open.remove(&on);
            }
            None => {}
        }
    }
    out.sort();
    out
}

/// The queue a bfq log note names (`bfq_bfqq_name`): the pid of the process that made it,
/// `None` once bfq merged it with another (`bfqSHARED-`, `bfq_merge_bfqqs` sets its pid to
/// -1), and whether it is a sync (`S`) or async (`A`) queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct QueueName {
    pid: Option<u32>,
    sync: bool,
}

fn queue_name(note: &str) -> Option<QueueName> {
    let rest = note.strip_prefix("bfq")?;
    let (rest, pid) = match rest.strip_prefix("SHARED-") {
        Some(r) => (r, None),
        None => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            (&rest[digits..], Some(rest.get(..digits)?.parse().ok()?))
        }
    };
    let sync = match rest.as_bytes() {
        [b'S', b' ', ..] => true,
        [b'A', b' ', ..] => false,
        _ => return None,
    };
    Some(QueueName { pid, sync })
}

/// One request bfq chose, as its log shows it: `bfq_dispatch_rq_from_bfqq`'s
/// `bfq_bfqq_served` note (`bfqq_served N secs`: what it charged the queue,
/// `bfq_serv_to_charge`), logged under `bfqd->lock` by the context running the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Served {
    time: Nanos,
    on: TaskOnCpu,
    queue: QueueName,
    charged: u64,
}

/// bfq's choices in `log`, in its order: each `bfqq_served` note that follows, in its
/// context, that context's `select_queue: returned this queue` of the same queue (the end of
/// `bfq_select_queue`, then `bfq_dispatch_rq_from_bfqq`). The other `bfqq_served` notes are
/// charges at an expiry (`bfq_bfqq_charge_time`), not dispatches.
fn served_notes(log: &KernelTrace) -> Vec<Served> {
    let mut chosen: HashMap<TaskOnCpu, QueueName> = HashMap::new();
    let mut out = Vec::new();
    for (k, (t, m)) in log.messages.iter().enumerate() {
        let (Some(&cpu), Some(&pid)) = (log.message_cpus.get(k), log.message_pids.get(k)) else {
            break;
        };
        let on = TaskOnCpu { cpu, pid };
        let (Some(what), Some(queue)) = (note_what(m), queue_name(m)) else {
            continue;
        };
        if what.starts_with("select_queue: returned this queue") {
            chosen.insert(on, queue);
        } else if let Some(n) = what.strip_prefix("bfqq_served ") {
            let charged = n.strip_suffix(" secs").and_then(|n| n.parse::<u64>().ok());
            if let (Some(charged), true) = (charged, chosen.get(&on) == Some(&queue)) {
                chosen.remove(&on);
                out.push(Served {
                    time: *t,
                    on,
                    queue,
                    charged,
                });
            }
        }
    }
    out
}

/// How many of a CPU's next issues a choice of bfq's is matched among ([`LogOrder::read`]):
/// a queue run takes at most `nr_requests` requests before issuing them.
const MATCH_SCAN: usize = 256;

/// bfq's dispatches in the order and at the times bfq made them, from its log.
///
/// `block_rq_issue` fires in `blk_mq_start_request`, after a queue run took up to
/// `nr_requests` requests from bfq (`__blk_mq_do_dispatch_sched`) and released `bfqd->lock`,
/// and another CPU's run, or its insertions, may come in between: the issue order is not the
/// order of bfq's choices. Its log is: each choice is a `bfqq_served` note
/// logged under the lock, naming the queue and what it charged, not the request. Each note
/// is matched to the request it returned by [`LogOrder::read`]'s rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOrder {
    /// The kernel's queue log ([`KernelTrace::queue_log`]) with each matched request's first
    /// dispatch moved to its note's place among the trace's events (by time; at the same
    /// microsecond after the trace's events).
    pub queue_log: Vec<QueueEvent>,
    /// For each scheduler merge ([`KernelTrace::sched_bios`]), how many events of
    /// `queue_log` come before it (its `after` in the reordered log).
    pub merge_after: Vec<usize>,
    /// When bfq chose each request, by request index (its note's time); `None`: not matched,
    /// at its issue event.
    pub decided: Vec<Option<Nanos>>,
    /// The log's choices (`bfqq_served` notes of dispatches).
    pub notes: usize,
    /// Of those, the ones matched to a request.
    pub matched: usize,
}

impl LogOrder {
    /// bfq's choices in `log` matched to `trace`'s requests (`ctxs`: each process's
    /// io_context, by pid), or `None` when the log shows no choice.
    ///
    /// The rule: each note, in the log's order, takes the request that the same CPU issued
    /// first at or after the note's time among those that the note's queue can have
    /// returned: not yet matched, inserted by then, as sync as the queue, of the queue's
    /// io_context when the note names a sync queue's process (a shared queue, `bfqSHARED-S`,
    /// and an async queue, which serves every process of its priority, do not narrow), and
    /// of the size charged (`bfq_serv_to_charge`: the request's sectors, three times that for
    /// an async queue out of weight raising, `bfq_async_charge_factor`). A queue run issues
    /// the requests it took in the order it took them, on its CPU, so a CPU's issues follow
    /// its notes. A note with no such request on its CPU (its task moved between choosing
    /// and issuing) takes the first such issue of any CPU; one with none at all is left
    /// unmatched. Ambiguous where two runs on one CPU interleave, or where a shared queue's
    /// note fits two processes' requests issued in the other order.
    pub fn read(
        trace: &KernelTrace,
        log: &KernelTrace,
        ctxs: &HashMap<u32, u32>,
    ) -> Option<LogOrder> {
        let notes = served_notes(log);
        if notes.is_empty() {
            return None;
        }
        let reqs = &trace.requests;
        let timed = timed_queue_log(trace);
        let mut arrived: Vec<Option<Nanos>> = vec![None; reqs.len()];
        for &(t, item) in &timed {
            if let Timed::Event(QueueEvent::Arrive(i)) = item {
                arrived[i].get_or_insert(t);
            }
        }
        // Each request's first issue, by CPU and over all, in issue order.
        let mut by_cpu: HashMap<u32, Vec<(Nanos, usize)>> = HashMap::new();
        let mut all: Vec<(Nanos, usize)> = Vec::new();
        for (d, x) in trace.dispatches.iter().enumerate() {
            if reqs[x.request].dispatch_index == Some(d) {
                by_cpu.entry(x.cpu).or_default().push((x.time, x.request));
                all.push((x.time, x.request));
            }
        }
        let mut decided: Vec<Option<Nanos>> = vec![None; reqs.len()];
        let mut order: Vec<(Nanos, usize)> = Vec::new();
        for n in &notes {
            let fits = |i: usize, decided: &[Option<Nanos>]| {
                let r = &reqs[i];
                let of_ctx = match (n.queue.sync, n.queue.pid) {
                    (true, Some(pid)) => ctxs.get(&pid).copied().unwrap_or(pid) == r.ctx,
                    _ => true,
                };
                let size = u64::from(r.issued_sectors);
                decided[i].is_none()
                    && arrived[i].is_some_and(|a| a <= n.time)
                    && r.is_sync() == n.queue.sync
                    && of_ctx
                    && (n.charged == size || (!n.queue.sync && n.charged == 3 * size))
            };
            let first_fit = |issues: &[(Nanos, usize)], decided: &[Option<Nanos>]| {
                let from = issues.partition_point(|&(t, _)| t < n.time);
                issues[from..]
                    .iter()
                    .take(MATCH_SCAN)
                    .map(|&(_, i)| i)
                    .find(|&i| fits(i, decided))
            };
            let on_cpu = by_cpu.get(&n.on.cpu).map(Vec::as_slice).unwrap_or(&[]);
            let pick = first_fit(on_cpu, &decided).or_else(|| first_fit(&all, &decided));
            if let Some(i) = pick {
                decided[i] = Some(n.time);
                order.push((n.time, i));
            }
        }
        let (queue_log, merge_after) = reorder(trace, &timed, &decided, &order);
        Some(LogOrder {
            queue_log,
            merge_after,
            decided,
            notes: notes.len(),
            matched: order.len(),
        })
    }
}

/// An item of [`timed_queue_log`].
#[derive(Clone, Copy, Debug)]
enum Timed {
    Event(QueueEvent),
    /// The `k`th scheduler merge.
    Merge(usize),
}

/// The trace's queue log with the scheduler merges in their places, each with its time: an
/// arrival its insertion's, a dispatch its issue's, a departure the time before it, never
/// earlier than the item before.
fn timed_queue_log(trace: &KernelTrace) -> Vec<(Nanos, Timed)> {
    let reqs = &trace.requests;
    let merges = &trace.sched_bios;
    let mut out = Vec::with_capacity(trace.queue_log.len() + merges.len());
    let mut issued = vec![false; reqs.len()];
    let mut last = Nanos::ZERO;
    let mut next_merge = 0;
    for (pos, &e) in trace.queue_log.iter().enumerate() {
        while let Some(m) = merges.get(next_merge).filter(|m| m.after <= pos) {
            last = m.time.max(last);
            out.push((last, Timed::Merge(next_merge)));
            next_merge += 1;
        }
        let t = match e {
            QueueEvent::Arrive(i) => reqs[i].arrival(),
            QueueEvent::Leave(_) => None,
            QueueEvent::Dispatch(i) => {
                let first = !std::mem::replace(&mut issued[i], true);
                trace
                    .first_dispatch(i)
                    .filter(|_| first)
                    .map(|d| d.time)
                    .or(reqs[i].issued)
            }
        };
        last = t.unwrap_or(last).max(last);
        out.push((last, Timed::Event(e)));
    }
    for (k, m) in merges.iter().enumerate().skip(next_merge) {
        last = m.time.max(last);
        out.push((last, Timed::Merge(k)));
    }
    out
}

/// `timed` as a queue log with the first dispatch of each request in `decided` taken out
/// and the dispatches of `order` (time, request; in time order) put in by time, each before
/// the trace's items of a later time; and each merge's place in it.
fn reorder(
    trace: &KernelTrace,
    timed: &[(Nanos, Timed)],
    decided: &[Option<Nanos>],
    order: &[(Nanos, usize)],
) -> (Vec<QueueEvent>, Vec<usize>) {
    let mut log = Vec::with_capacity(trace.queue_log.len());
    let mut merge_after = vec![0; trace.sched_bios.len()];
    let mut issued = vec![false; trace.requests.len()];
    let mut moved = order.iter().peekable();
    for &(t, item) in timed {
        while let Some(&(_, i)) = moved.next_if(|&&(d, _)| d < t) {
            log.push(QueueEvent::Dispatch(i));
        }
        match item {
            Timed::Merge(k) => merge_after[k] = log.len(),
            Timed::Event(QueueEvent::Dispatch(i))
                if !std::mem::replace(&mut issued[i], true) && decided[i].is_some() => {}
            Timed::Event(e) => log.push(e),
        }
    }
    log.extend(moved.map(|&(_, i)| QueueEvent::Dispatch(i)));
    (log, merge_after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_diff::tests::read;

    /// With the `blk` tracer's `blk_cgroup` option each of bfq's notes carries the cgroup id
    /// of its queue's group (`blk_add_cgroup_trace_msg`): a process's queue is in the group of
    /// the note naming it nearest in time, a kworker serving one throttled group and then
    /// another (blkthrottle-...-round3: `bfq23281S` in 281, then 295). Notes of no process's
    /// queue (`bfq ...`, `bfqSHARED-S`) and lines without the field give nothing.
    #[test]
    fn a_queues_group_is_its_nearest_notes_cgroup_id() {
        let log = read(
            " kworker/1:4-23281 [001] d..1. 1.000100:   7,0   281,0  m   N bfq23281S add_request 1
 kworker/1:4-23281 [001] d..1. 1.000200:   7,0   281,0  m   N bfqSHARED-S put_queue: 0 5
 kworker/1:4-23281 [001] d..1. 1.000300:   7,0   1,0  m   N bfq dispatch requests: 2 busy queues
 kworker/1:4-23281 [001] d..1. 1.000400:   7,0   295,0  m   N bfq23281S allocated
 fio-14763 [001] d..1. 1.000500:   7,0    m   N bfq14763S add_request 1
 fio-14764 [000] d..1. 1.000600:   7,0   295,0  m   N bfq14764A add_request 1
",
        );
        let ctxs = HashMap::from([(14764, 14000)]);
        let c = QueueCgroups::read(&log, &ctxs);
        let t = |us: u64| Nanos::from_secs(1) + Nanos::from_us(us);
        assert_eq!(
            c.at(23281, t(0)),
            Some(0x281),
            "before the first note: the first"
        );
        assert_eq!(c.at(23281, t(250)), Some(0x281), "nearer the first");
        assert_eq!(c.at(23281, t(251)), Some(0x295), "nearer the second");
        assert_eq!(c.at(23281, t(900)), Some(0x295));
        assert_eq!(c.at(14763, t(500)), None, "a note without the field");
        assert_eq!(c.at(14000, t(600)), Some(0x295), "an io_context's owner");
        assert_eq!(c.at(14764, t(600)), None);
        assert_eq!(queue_pid("bfqSHARED-S put_queue"), None);
        assert_eq!(queue_pid("bfq dispatch requests"), None);
        assert_eq!(queue_pid("bfq7A exit_bfqq"), Some(7));
    }

    /// The idle slice timer's firings are the `BFQQE_TOO_IDLE` expiries (`expire (0, ...)`,
    /// from `bfq_idle_slice_timer_body` only): here the hardirq note of
    /// `burst-of-twelve-short-jobs-beside-long-readers-round2` at 57006.046864, not the
    /// preemption (4) or the empty queue's expiry (3).
    #[test]
    fn the_idle_timers_firings_are_its_too_idle_expiries() {
        let t = Nanos::from_us;
        let log = [
            (
                t(46_864),
                "bfq26881S expire (0, slow 1, num_disp 0, short_ttime 0)".to_string(),
            ),
            (
                t(48_190),
                "bfq26881S expire (4, slow 1, num_disp 0, short_ttime 1)".to_string(),
            ),
            (
                t(52_031),
                "bfq26880S expire (3, slow 0, num_disp 0, short_ttime 0)".to_string(),
            ),
            (
                t(44_253),
                "bfq26881S expire (0, slow 1, num_disp 0, short_ttime 0)".to_string(),
            ),
            (
                t(44_254),
                "bfq26881S recalc_budg: last budg 512, budg left 248".to_string(),
            ),
        ];
        assert_eq!(idle_timer_fires(&log), [t(44_253), t(46_864)]);
    }

    /// Each completion is paired with the first note of its own context from the
    /// completion on, when that context's `put_queue` follows before its next completion: the
    /// other CPU's notes, the flush (no `put_queue`: bfq never held it) and the task's notes
    /// before the completion are not bfq's view of it.
    #[test]
    fn bfq_sees_a_completion_at_its_contexts_next_note_before_put_queue() {
        let trace = read(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] d..1. 1.000002: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000004: block_getrq: 7,0 R 900 + 8 [fio]
 fio-11 [001] d..1. 1.000005: block_rq_insert: 7,0 R 4096 () 900 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000006: block_rq_issue: 7,0 R 4096 () 900 + 8 be,0,4 [fio]
 fio-12 [001] ..... 1.000007: block_rq_issue: 7,0 FWS 0 () 0 + 0 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000010: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000040: block_rq_complete: 7,0 FWS () 0 + 0 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000050: block_rq_complete: 7,0 R () 900 + 8 be,0,4 [0]
",
        );
        let log = read(
            "\
 ksoftirqd/1-22 [001] d.s1. 1.000009: 7,0 1,0 m N bfq10S add_request 1
 fio-11 [000] d..1. 1.000012: 7,0 1,0 m N bfq11S put_queue: 00000000a 3
 ksoftirqd/1-22 [001] d.s1. 1.000030: 7,0 1,0 m N bfq schedule dispatch
 ksoftirqd/1-22 [001] d.s1. 1.000031: 7,0 1,0 m N bfq10S put_queue: 00000000b 2
 ksoftirqd/1-22 [001] d.s1. 1.000060: 7,0 1,0 m N bfq11S put_queue: 00000000a 2
",
        );
        let seen = completions_seen_by_bfq(&trace, &log);
        let us = |u: u64| Some(Nanos(1_000_000_000 + u * 1000));
        assert_eq!(seen, [us(30), us(60), None]);
        assert!(is_put_queue("bfqSHARED-S put_queue: 0000000036c9f694 1"));
        assert!(!is_put_queue("bfq put_async_bfqq: 0000000036c9f694"));
    }

    /// Of bfq's dispatch calls (`bfq_dispatch_request`) only those that returned nothing and
    /// changed its state are kept: the writer's insertion preempts the reader in service and
    /// the queue run puts the reader back in service to idle for it (the recording
    /// twelve-procs-mixed-prio at 10596.640078 s); a call that returned nothing and changed
    /// nothing, one that served a request, and another context's notes in between are not.
    #[test]
    fn a_refused_dispatch_call_is_kept_when_it_changed_bfqs_state() {
        let log = read(
            "\
 fio-22 [000] d..1. 1.000071: 7,0 1,0 m N bfq21S expire (4, slow 0, num_disp 1, short_ttime 0)
 fio-22 [000] d..1. 1.000078: 7,0 1,0 m N bfq dispatch requests: 6 busy queues
 fio-23 [001] d..1. 1.000079: 7,0 1,0 m N bfq dispatch requests: 6 busy queues
 fio-22 [000] d..1. 1.000079: 7,0 1,0 m N bfq21S set_in_service_queue, cur-budget = 512
 fio-23 [001] d..1. 1.000079: 7,0 1,0 m N bfq21S select_queue: already in-service queue
 fio-23 [001] d..1. 1.000080: 7,0 1,0 m N bfq select_queue: no queue returned
 fio-22 [000] d..1. 1.000080: 7,0 1,0 m N bfq select_queue: no queue returned
 fio-29 [000] d..1. 1.000149: 7,0 1,0 m N bfq dispatch requests: 6 busy queues
 fio-29 [000] d..1. 1.000150: 7,0 1,0 m N bfq21S select_queue: already in-service queue
 fio-29 [000] d..1. 1.000151: 7,0 1,0 m N bfq22S select_queue: returned this queue
 fio-29 [000] d..1. 1.000152: 7,0 1,0 m N bfq22S bfqq_served 8 secs
 fio-29 [000] d..1. 1.000153: 7,0 1,0 m N bfq21S expire (3, slow 0, num_disp 1, short_ttime 0)
",
        );
        assert_eq!(
            refused_dispatch_calls(&log),
            [Nanos(1_000_000_000 + 78_000)]
        );
    }

    /// A call that charged a slow queue for its time and then returned nothing is kept: on
    /// `rt-be-idle-classes-cmdprio-uring` (79406.328285-.328293) fio-3190 dispatched the
    /// idle-class queue's last read, and kworker's call, started on a stale `bfq_has_work`
    /// (an unlocked read of `bfqd->queued`), found that queue empty in service:
    /// `bfq_select_queue` expired it (`bfq_bfqq_expire`, `BFQQE_NO_MORE_REQUESTS`), which
    /// first logs `bfq_bfqq_charge_time`'s `bfqq_served` for a slow queue. That note is no
    /// dispatch (`bfq_dispatch_rq_from_bfqq` logs it only after `select_queue: returned this
    /// queue`); taking it for one dropped the call. A call that charged, expired and then
    /// returned a queue is a dispatch, not kept.
    #[test]
    fn a_refused_call_that_charged_a_slow_queue_is_kept() {
        let log = read(
            "\
 fio-3190 [001] d..1. 79406.328284: 7,0 1,0 m N bfq3190S select_queue: returned this queue
 fio-3190 [001] d..1. 79406.328285: 7,0 1,0 m N bfq3190S bfqq_served 8 secs
 kworker/0:1H-44 [000] d..1. 79406.328286: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 kworker/0:1H-44 [000] d..1. 79406.328286: 7,0 1,0 m N bfq3190S select_queue: already in-service queue
 kworker/0:1H-44 [000] d..1. 79406.328287: 7,0 1,0 m N bfq3190S may_budget_timeout: wait_request 0 left 1 timeout 0
 kworker/0:1H-44 [000] d..1. 79406.328288: 7,0 1,0 m N bfq3190S bfqq_served 256 secs
 kworker/0:1H-44 [000] d..1. 79406.328288: 7,0 1,0 m N bfq3190S expire (3, slow 1, num_disp 1, short_ttime 1)
 kworker/0:1H-44 [000] d..1. 79406.328291: 7,0 1,0 m N bfq3190S del from busy
 kworker/0:1H-44 [000] d..1. 79406.328293: 7,0 1,0 m N bfq select_queue: no queue returned
 fio-3189 [001] d..1. 79406.328310: 7,0 1,0 m N bfq dispatch requests: 2 busy queues
 fio-3189 [001] d..1. 79406.328311: 7,0 1,0 m N bfq3190S bfqq_served 256 secs
 fio-3189 [001] d..1. 79406.328311: 7,0 1,0 m N bfq3190S expire (3, slow 1, num_disp 1, short_ttime 1)
 fio-3189 [001] d..1. 79406.328312: 7,0 1,0 m N bfq3189S set_in_service_queue, cur-budget = 10922
 fio-3189 [001] d..1. 79406.328313: 7,0 1,0 m N bfq3189S select_queue: returned this queue
 fio-3189 [001] d..1. 79406.328313: 7,0 1,0 m N bfq3189S bfqq_served 32 secs
",
        );
        assert_eq!(refused_dispatch_calls(&log), [Nanos(79_406_328_286_000)]);
    }

    /// `__blk_mq_alloc_requests` runs `bfq_limit_depth` before `blk_mq_get_tag` (which may
    /// sleep) and `block_getrq` fires after it: each request's depth was decided at its
    /// submitter's last `[bfq_limit_depth]` note up to its `block_getrq`, not another task's,
    /// not one after, and not one before its bio's `block_bio_queue` (an earlier request's).
    #[test]
    fn bfq_limit_depth_ran_at_the_submitters_last_note_before_its_getrq() {
        let trace = read(
            "\
 fio-10 [001] ..... 1.000010: block_bio_queue: 7,0 WS 100 + 8 [fio]
 fio-11 [000] ..... 1.000020: block_bio_queue: 7,0 WS 500 + 8 [fio]
 fio-10 [001] ..... 1.000045: block_getrq: 7,0 WS 100 + 8 [fio]
 fio-10 [001] ..... 1.000050: block_bio_queue: 7,0 WS 900 + 8 [fio]
 fio-11 [000] ..... 1.000070: block_getrq: 7,0 WS 500 + 8 [fio]
 fio-10 [001] ..... 1.031000: block_getrq: 7,0 WS 900 + 8 [fio]
",
        );
        let log = read(
            "\
 fio-10 [001] d.... 1.000044: 7,0 1,0 m N bfq [bfq_limit_depth] wr_busy 1 sync 1 depth 3
 fio-10 [001] d.... 1.000055: 7,0 1,0 m N bfq [bfq_limit_depth] wr_busy 1 sync 1 depth 3
 fio-12 [000] d.... 1.000065: 7,0 1,0 m N bfq [bfq_limit_depth] wr_busy 1 sync 1 depth 3
 fio-10 [001] d.... 1.031500: 7,0 1,0 m N bfq [bfq_limit_depth] wr_busy 0 sync 1 depth 6
",
        );
        let us = |u: u64| Some(Nanos(1_000_000_000 + u * 1000));
        assert_eq!(
            depths_decided(&trace, &log.messages, &log.message_pids),
            [us(44), None, us(55)]
        );
    }

    /// An io_uring submission of a read and two writes, as in the held-out
    /// `deep-iouring-randrw50-two-procs-qd256-nr64` (Linux 6.18, 35614.903779-.903797): one
    /// `[bfq_limit_depth]` note, the read's, between its `block_bio_queue` and `block_getrq`,
    /// and none for the two writes after it, whose requests came from the plug's batch of
    /// tags (`__blk_mq_alloc_requests_batch`). Another task's request with no note of its
    /// task's at all is not one (its notes were not logged), nor is the read.
    #[test]
    fn requests_after_their_tasks_one_note_came_from_the_plugs_batch() {
        let trace = read(
            " fio-10 [000] ..... 1.000779: block_bio_queue: 7,0 R 58000 + 16 [fio]
 fio-10 [000] ..... 1.000787: block_getrq: 7,0 R 58000 + 16 [fio]
 fio-10 [000] ..... 1.000790: block_bio_queue: 7,0 WS 40896 + 16 [fio]
 fio-10 [000] ..... 1.000791: block_getrq: 7,0 WS 40896 + 16 [fio]
 fio-11 [001] ..... 1.000792: block_bio_queue: 7,0 WS 900 + 16 [fio]
 fio-11 [001] ..... 1.000793: block_getrq: 7,0 WS 900 + 16 [fio]
 fio-10 [000] ..... 1.000793: block_bio_queue: 7,0 WS 7392 + 16 [fio]
 fio-10 [000] ..... 1.000794: block_getrq: 7,0 WS 7392 + 16 [fio]
",
        );
        let log = read(
            " fio-10 [000] d.... 1.000783: 7,0 1,0 m N bfq [bfq_limit_depth] wr_busy 1 sync 1 depth 64
",
        );
        assert_eq!(
            batch_allocated(&trace, &log.messages, &log.message_pids),
            [false, true, false, true]
        );
    }
}
