//! The kernel's dispatch decisions against ours: a recorded kernel trace
//! ([`crate::traces::ftrace`]) replayed into our scheduler of the same name through the block
//! layer ([`elevator_core::block::BlockLayer`]) on a virtual clock, and the two dispatch
//! sequences compared with [`crate::agreement`] (issue 27's `kernel-diff`).
//!
//! ## The replay
//!
//! - The policy is the registry's of the recording's scheduler (`none` is our `noop`), with
//!   every tunable it shares with the recording's sysfs (`queue/iosched/NAME`, else
//!   `queue/NAME`: `nr_requests`, `rotational`), [`policy_settings`]. A value our policy
//!   refuses (out of its range) is left at its default and listed in
//!   [`TraceDiff::skipped`]. A recording of Linux 6.17 or later replays bfq with that
//!   kernel's scheduler tags, `whole_map_depths` and `tag_sleepers`, unless its `iosched`
//!   names them ([`policy_settings`]; our bfq's defaults stay 6.9's per-word depths).
//! - Each request the kernel dispatched or inserted (flushes aside: the flush machinery's, not
//!   the scheduler's) is submitted as one bio ([`TracedRequest::bio`]: its sector and size as
//!   it entered the scheduler, its operation, REQ_SYNC and REQ_META, process, priority) at its
//!   recorded arrival, and not offered for merging unless the kernel merged it away later
//!   (`Bio::own_request`: the kernel did not merge it at its submission, e.g. a bio whose
//!   neighbour was still plugged or in another CPU's kyber software queue). A bio the kernel merged into a request already in the scheduler, or a
//!   request it merged into one at its insertion ([`SchedBio`]), is submitted on its own
//!   where it came in the kernel's event order, for our scheduler to merge as the kernel's
//!   did: what a request costs bfq's budget is its size at dispatch (`bfq_serv_to_charge`).
//!   The insertion merge (`blk_mq_sched_try_insert_merge`, into whichever queue's request
//!   ends where it starts) is submitted as a bio of its host's process, since our block layer
//!   merges bios only (through the policy's `try_merge`); its own process's request setup
//!   (`bfq_init_rq`) is not replayed. One whose request ours has dispatched already
//!   is not submitted (counted in [`TraceDiff::merges_missed`]); one ours does not merge
//!   becomes a request of its own, which the kernel never had (a divergence).
//! - A request ours dispatches completes after the service time the kernel's device gave the
//!   same request (issue to completion; a request the kernel merged away takes its host's; an
//!   unknown one the median). Its identity is its first bio, so a request merged into another
//!   leaves the queued set on both sides as it does in the kernel.
//! - A recorded request the recorded device could not have carried is refused before any
//!   replay, naming the line of its dispatch: outside `device.bytes`, larger than the
//!   queue's limit for its operation, or past `u32::MAX` bytes ([`diff_recording`]).
//! - The queue's `max_sectors_kb` bounds ours as it bounded the kernel's. Its `max_segments`
//!   does too, raised to the largest recorded request in pages: the trace does not say how
//!   many segments a request held (the kernel counts physically contiguous runs, ours a page
//!   each), so a request the kernel formed is replayed whole, and a merge past what the
//!   kernel's requests were seen to hold is refused (the two pieces of a `block_split`).
//! - The queue's `nomerges` too: 2 (`QUEUE_FLAG_NOMERGES`: `blk_mq_attempt_bio_merge` and
//!   `elv_attempt_insert_merge` try no merge) refuses every merge of ours; 1
//!   (`QUEUE_FLAG_NOXMERGES`: `elv_merge` tries only the one-hit `q->last_merge`, no
//!   hash or sorted lookup) is replayed as 0, since ours is offered only the bios the kernel
//!   merged, which are the one-hit merges it made. sysfs shows 0, 1 or 2
//!   (`queue_nomerges_show`); another value is refused naming the field.
//!   For a bfq recording with its log, the completion is taken where bfq learned of it
//!   ([`completions_seen_by_bfq`]): `block_rq_complete` fires before the request is freed,
//!   and bfq hears of it in `bfq_finish_requeue_request` under `bfqd->lock`, which another
//!   CPU may hold, 2 to 131 us later in the corpus, after insertions the trace shows later.
//! - The device holds [`DiffOptions::depth`] requests, by default what the recording says the
//!   loop device's hardware queue holds (`hw_queue_depth`, 128), else the most the kernel had
//!   in flight.
//! - A request's context is its process's io_context ([`TracedRequest::ctx`]): io_uring's
//!   workers (`iou-wrk-CREATOR`) and SQPOLL thread (`iou-sqp-CREATOR`) share their creator's
//!   (`CLONE_IO`), an SQPOLL thread's workers the ring owner's, so bfq gives them the owner's
//!   queue. Under bfq a request carries its io_context's
//!   priority, the job's `prioclass`/`prio` that fio set on the process
//!   ([`Recording::context_priorities`](crate::traces::ftrace::Recording::context_priorities)), in place of its own: bfq's queue takes the
//!   context's (`bfq_check_ioprio_change`, `bic->ioprio`), not the request's (fio's
//!   `cmdprio_*`), which mq-deadline alone reads. A process whose job sets neither keeps its
//!   requests' priorities, which the kernel derived from its context (`get_current_ioprio`).
//!   The context's priority is fixed for a recording (fio sets it before the job's first
//!   I/O), so bfq's handling of a change is never replayed.
//! - Where a bfq recording has its log, the kernel's decisions are bfq's in the order and at
//!   the times its log shows them ([`LogOrder`]: each `bfqq_served` note of a dispatch matched
//!   to the request it returned), not the issue events', and ours is asked at those times:
//!   `block_rq_issue` fires after a queue run took up to `nr_requests` requests from bfq and
//!   released its lock, so the issue order need not be the order of bfq's choices.
//! - A request's group is its process's cgroup, from the recording's `groups.txt`
//!   ([`Recording::context_groups`](crate::traces::ftrace::Recording::context_groups): `kernel-record` writes it for jobs with fio's `cgroup`), and
//!   our policy is built over those groups with their bfq weights: 6.18's bfq serves a queue
//!   inside its bios' blkcg's group (`bfq_bic_update_cgroup`), each group an entity of its
//!   parent's service tree with its `blkio.bfq.weight` (`bfq_group_set_parent`,
//!   `bfq_io_set_weight_legacy`). A process the file does not name is in the group bfq's
//!   log gives its queue at the time (the notes' cgroup ids, recorded with the blk tracer's
//!   `blk_cgroup` option, and the file's `cgroup` lines: blk-throttle's kworker serves each
//!   throttled group's bios in turn, [`QueueCgroups`]), else in the root group.
//! - A process exits where the recording's bfq log says its queue exited (`exit_bfqq`,
//!   [`exits_in_bfq_log`]; a recording without that log replays no exit): bfq stops idling
//!   for an exited process's queue (`bfq_exit_bfqq` expires it when it is in service).
//! - When the queue runs ([`Pace`]): the loop device never refuses a request, so what a
//!   scheduler chooses among is what was inserted before the hardware queue ran (a plugged
//!   batch, kblockd's asynchronous run). [`Pace::Kernel`] (the default) runs our queue where
//!   the kernel ran its own: each kernel dispatch lets ours dispatch one request then (kept
//!   while ours idles, dropped if ours has nothing queued); mq-deadline is asked twice more
//!   where a kernel run that dispatched ended, as the kernel's was (the dispatching round's
//!   last call and the next round's first), for the side effects of a call that returns
//!   nothing ([`asked_at_empty_runs`]), and after an insertion below a
//!   priority level with a request in flight that no dispatch follows within 20 us (the run
//!   after it could dispatch nothing; one run after a task's insertions in a row, a plugged
//!   batch);
//!   bfq is asked once more at each of
//!   its dispatch calls the bfq log shows returning nothing after setting a queue in service or
//!   expiring one ([`refused_dispatch_calls`]), whatever ours holds queued (`bfq_has_work`
//!   reads `bfqd->queued` without the lock, so such a call may find nothing queued and still
//!   expire the empty queue in service), and its idle slice timer fires where the
//!   kernel's did when that falls within the replay's 30 us timer latency after ours' deadline
//!   ([`idle_timer_fires`]). [`Pace::Device`] runs it after
//!   every arrival, completion and timer, limited by the device depth only: it shows how much
//!   of the kernel's choice comes from when its queue runs rather than from the policy.
//!   [`Pace::Early`] is a diagnostic of the tracepoints' timing: each kernel dispatch is moved
//!   back to the earliest point the trace allows, on both sides ([`earliest`]).
//!
//! ## What is compared
//!
//! Both sides' queue logs (arrivals, merges away, dispatches by request index) give each side's
//! [`Decision`]s, compared position by position ([`agreement::compare`]: the same request
//! chosen from the same queued set), plus the Kendall distance between the two dispatch orders
//! over consecutive windows ([`agreement::windowed_kendall`]). Two kernel dispatches issued by
//! two CPUs within [`UNORDERED_ISSUE_GAP`], the second request queued at the first decision,
//! are not ordered by the trace (`block_rq_issue` fires after the scheduler's lock is
//! released): where ours made a run of adjacent decisions in another order that inverts only
//! such pairs (each CPU's own order kept, two CPUs' runs interleaved), from the sets the
//! kernel's would have had in that order, it is taken as the kernel's
//! ([`settle_unordered_pairs`], the pairs counted in [`TraceDiff::unordered_pairs`]).
//! A decision where ours disagrees, taken (as recorded) after insertions another CPU traced
//! inside its queue run's window (after its CPU's previous traced event, before its issue:
//! `__blk_mq_do_dispatch_sched` takes a round's requests before it issues any), is replayed
//! once more with those insertions after it, the one other order the trace allows; where
//! ours then takes the kernel's request from the kernel's set, the decision counts neither
//! way ([`TraceDiff::set_aside`], the "set aside" column) and the replay goes on in that
//! order (`cross_cpu`).
//!
//! - The kernel's `CONFIG_HZ` ([`kernel_hz`]) is given to a policy that counts in jiffies
//!   (bfq's and mq-deadline's `hz`): the recordings' kernel runs at HZ = 250.
//!
//! Deviations of the replay itself: process exits are replayed only where bfq's log shows
//! them ([`exits_in_bfq_log`]); time is the trace's microseconds (ours decides on
//! nanoseconds, the kernel's expiries on jiffies, which ours counts where it models them:
//! bfq's, and mq-deadline's deadlines and priority aging); REQ_IDLE is not in rwbs, so no bio carries it.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use elevator_core::block::{Limits, PAGE_SECTORS};
use elevator_core::{IoPrio, Nanos};

use crate::agreement::{self, Agreement, Decision, QueueEvent};
use crate::traces::ftrace::{ContextGroups, KernelTrace, RecordingMeta, SchedBio, TracedRequest};

mod bfq_log;
mod corpus;
mod cross_cpu;
#[cfg(test)]
mod mutants_tests;
mod queue_runs;
mod replay;
mod report;
mod resolve;
mod settings;
mod unordered;
pub use bfq_log::{
    completions_seen_by_bfq, exits_in_bfq_log, idle_timer_fires, refused_dispatch_calls,
    BfqLogTimes, LogOrder, QueueCgroups,
};
use corpus::load;
pub use corpus::{diff_recording, find_recordings, has_meta, Row, KERNEL_SCHEDULERS};
use cross_cpu::{moved_log, set_aside_cross_cpu_insertions, MovedBefore, Replayed};
pub use queue_runs::{
    allocating_cpus_replayed, asked_at_empty_runs, earliest, own_runs, software_queues_replayed,
};
use replay::{Contexts, Replay};
pub use report::{divergences, markdown};
pub use resolve::{resolve, Move, Resolution};
pub use settings::{kernel_hz, policy_for, policy_settings};
use settings::{nomerges, queue_limit, scsi_major};
pub use unordered::{settle_unordered_pairs, UNORDERED_ISSUE_GAP};

/// When our queue runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pace {
    /// Where the kernel's ran: one dispatch of ours per kernel dispatch.
    #[default]
    Kernel,
    /// After every event, as deep as the device.
    Device,
    /// A diagnostic: as [`Pace::Kernel`], with each of the kernel's dispatches moved back to
    /// the earliest point the trace allows (just after its request's insertion, the previous
    /// dispatch and any merge), on both sides. It tests whether the kernel chose before
    /// requests its issue event follows were inserted: `block_rq_issue` fires when the driver
    /// starts the request (`blk_mq_start_request` in `loop_queue_rq`), after the scheduler's
    /// `dispatch_request` returned it, and an insertion on another CPU can come in between.
    Early,
}

impl std::str::FromStr for Pace {
    type Err = String;

    fn from_str(s: &str) -> Result<Pace, String> {
        match s {
            "kernel" => Ok(Pace::Kernel),
            "device" => Ok(Pace::Device),
            "early" => Ok(Pace::Early),
            _ => Err(format!("pace {s:?}: kernel, device or early")),
        }
    }
}

/// How to replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffOptions {
    /// When our queue runs.
    pub pace: Pace,
    /// The device's queue depth; `None`: the recording's (see the module docs).
    pub depth: Option<usize>,
    /// Requests per Kendall window.
    pub window: usize,
    /// Keep our policy's notes of its internal state ([`TraceDiff::notes`]).
    pub notes: bool,
    /// At [`Pace::Kernel`], set aside the decisions a queue run may have taken before another
    /// CPU's insertions that the trace shows first, where ours agrees with them taken so
    /// ([`TraceDiff::set_aside`]); `false` replays the recorded order only.
    pub set_aside: bool,
}

impl Default for DiffOptions {
    fn default() -> DiffOptions {
        DiffOptions {
            pace: Pace::Kernel,
            depth: None,
            window: 32,
            notes: false,
            set_aside: true,
        }
    }
}

/// One recording replayed and compared.
#[derive(Clone, Debug)]
pub struct TraceDiff {
    /// The kernel's scheduler.
    pub kernel_scheduler: String,
    /// Our policy's registry name.
    pub policy: &'static str,
    /// The settings our policy ran with (name, value).
    pub settings: Vec<(String, i64)>,
    /// Recorded tunables our policy has but refused (name, value, why).
    pub skipped: Vec<(String, String, String)>,
    /// The device depth replayed.
    pub depth: usize,
    /// The kernel's decisions.
    pub kernel: Vec<Decision>,
    /// Ours.
    pub ours: Vec<Decision>,
    /// Their comparison, less the decisions set aside ([`TraceDiff::set_aside`]).
    pub agreement: Agreement,
    /// Kernel decisions with more than one request queued (a real choice), less those set
    /// aside.
    pub choices: usize,
    /// Of those, where ours chose the same request from the same set.
    pub choices_agreed: usize,
    /// Kendall distance per window of the kernel's dispatch order against ours.
    pub kendall: Vec<f64>,
    /// Bios the kernel merged into a queued request that the replay did not submit, because
    /// ours had dispatched that request already.
    pub merges_missed: usize,
    /// Pairs of the kernel's decisions the trace cannot order that ours made in the other
    /// order, in runs taken as ours made them ([`settle_unordered_pairs`]).
    pub unordered_pairs: usize,
    /// The kernel's decisions (indices into [`TraceDiff::kernel`]) counted neither way: each
    /// taken, as recorded, after insertions another CPU traced inside its queue run's window
    /// (after the run could have begun, before the issue), where ours disagreed, and agreed
    /// with the decision taken before those insertions, the one other order the trace allows
    /// (`cross_cpu`). [`TraceDiff::kernel`] and [`TraceDiff::ours`] are the replay in that
    /// order. Each was a real choice as recorded.
    pub set_aside: Vec<usize>,
    /// Our policy's notes of its internal state, in time order, when asked for
    /// ([`DiffOptions::notes`]; bfq: its inject limit's history).
    pub notes: Vec<(Nanos, String)>,
}

impl TraceDiff {
    /// The mean windowed Kendall distance (0 when there is no window).
    pub fn kendall_mean(&self) -> f64 {
        if self.kendall.is_empty() {
            0.0
        } else {
            self.kendall.iter().sum::<f64>() / self.kendall.len() as f64
        }
    }

    /// The largest windowed Kendall distance.
    pub fn kendall_max(&self) -> f64 {
        self.kendall.iter().copied().fold(0.0, f64::max)
    }

    /// The share of real choices (more than one queued) where ours agreed (1 with none).
    pub fn choice_share(&self) -> f64 {
        if self.choices == 0 {
            1.0
        } else {
            self.choices_agreed as f64 / self.choices as f64
        }
    }
}

/// The most requests the kernel had at the device at once.
pub fn max_in_flight(trace: &KernelTrace) -> usize {
    let mut ev: Vec<(Nanos, i32)> = Vec::new();
    for r in &trace.requests {
        if let (Some(i), Some(c)) = (r.issued, r.completed) {
            ev.push((i, 1));
            ev.push((c, -1));
        }
    }
    // Completions first at a tie: the slot is free before it is taken again.
    ev.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in ev {
        now += d;
        max = max.max(now);
    }
    max.max(1) as usize
}

/// Replay `trace` (recorded with `meta`) into our policy of the same name and compare.
pub fn diff(
    trace: &KernelTrace,
    meta: &RecordingMeta,
    opts: &DiffOptions,
) -> Result<TraceDiff, String> {
    diff_with_log(
        trace,
        meta,
        opts,
        &BfqLogTimes::default(),
        &HashMap::new(),
        &ContextGroups::default(),
    )
}

/// [`diff`], with what a recording's bfq log shows ([`BfqLogTimes`]) and, under bfq, each
/// io_context's priority (`prios`, by context pid: [`Recording::context_priorities`](crate::traces::ftrace::Recording::context_priorities)) given to
/// its requests in place of their own (see the module docs), and each process's cgroup
/// (`groups`: [`Recording::context_groups`](crate::traces::ftrace::Recording::context_groups)), our policy built over those groups.
pub fn diff_with_log(
    trace: &KernelTrace,
    meta: &RecordingMeta,
    opts: &DiffOptions,
    bfq_log: &BfqLogTimes,
    prios: &HashMap<u32, IoPrio>,
    groups: &ContextGroups,
) -> Result<TraceDiff, String> {
    let log = match opts.pace {
        Pace::Early => earliest(kernel_log(trace, bfq_log)),
        Pace::Kernel | Pace::Device => kernel_log(trace, bfq_log).clone(),
    };
    replay_log(trace, meta, opts, bfq_log, Contexts { prios, groups }, &log)
}

/// The kernel's queue log the replay follows: bfq's choices in its log's order where it has
/// a log ([`LogOrder`]), else the issue events'.
fn kernel_log<'t>(trace: &'t KernelTrace, bfq_log: &'t BfqLogTimes) -> &'t Vec<QueueEvent> {
    bfq_log
        .order
        .as_ref()
        .map_or(&trace.queue_log, |o| &o.queue_log)
}

/// What one replay gives besides both sides' decisions.
struct Extras {
    /// [`TraceDiff::unordered_pairs`].
    unordered_pairs: usize,
    /// [`TraceDiff::merges_missed`].
    merges_missed: usize,
    /// [`TraceDiff::notes`].
    notes: Vec<(Nanos, String)>,
}

/// [`diff_with_log`] with the kernel's queue log given (`log`: the recorded one, or one
/// reordered as the trace allows, [`resolve`]).
fn replay_log(
    trace: &KernelTrace,
    meta: &RecordingMeta,
    opts: &DiffOptions,
    bfq_log: &BfqLogTimes,
    contexts: Contexts<'_>,
    log: &[QueueEvent],
) -> Result<TraceDiff, String> {
    let Contexts { prios, groups } = contexts;
    let info = policy_for(&meta.scheduler)
        .ok_or_else(|| format!("no policy of ours for the kernel's {:?}", meta.scheduler))?;
    let (settings, skipped) = policy_settings(&info, meta);
    if meta.device.hw_queue_depth == Some(0) {
        // The loop driver refuses a hardware queue depth below 1 (`loop_init`).
        return Err(
            "meta.json: field `device.hw_queue_depth`: 0 is not a queue depth the \
                    kernel accepts (at least 1)"
                .into(),
        );
    }
    let depth = opts.depth.unwrap_or_else(|| {
        meta.device
            .hw_queue_depth
            .map(|d| d as usize)
            .unwrap_or_else(|| max_in_flight(trace))
    });
    // A driver without a dispatch budget (every recording's so far: a loop device) lets a
    // run that finds every driver tag taken take one request from the scheduler anyway.
    let mut limits =
        Limits::depth(depth).dequeues_without_driver_tag(!scsi_major(meta.device.major));
    // The kernel accepts `max_sectors_kb` from a page (4 KiB) up (`queue_max_sectors_store`)
    // and at least one segment (`blk_validate_limits`); a value outside, or one that is not a
    // number, would silently become another limit (0 KiB replayed as one sector a request).
    if let Some(kb) = queue_limit(meta, "max_sectors_kb", 4)? {
        // Nor above the hardware's `max_hw_sectors_kb` (`queue_max_sectors_store` refuses
        // it with EINVAL): 4294967295 beside 1280 let ours merge requests the kernel could
        // not form, without a word (issue 32, round 19).
        if let Some(hw) = queue_limit(meta, "max_hw_sectors_kb", 4)?.filter(|&hw| kb > hw) {
            return Err(format!(
                "meta.json: field `queue.max_sectors_kb`: {kb} is above the recorded \
                 max_hw_sectors_kb {hw}, which the kernel never accepts"
            ));
        }
        limits = limits.max_sectors(kb.saturating_mul(2));
    }
    if let Some(n) = queue_limit(meta, "nomerges", 0)? {
        limits = limits.nomerges(nomerges(n)?);
    }
    // `max_segments`, in pages, is raised to the largest request the kernel formed. Ours
    // counts a segment a page (`PAGE_SECTORS`); the kernel counts physically contiguous runs
    // of up to `max_segment_size`, which the trace does not give: one 1 MiB O_DIRECT read
    // went to the loop device as one request of 2048 sectors in one recording (a buffer in
    // large folios) and was split at 1208 or 1024 sectors (`block_split`) in another of the
    // same job. At 128 pages ours split the unsplit one again (every later decision then
    // compared one position off); with no segment limit it merged a split's two pieces back
    // (1032 + 1016 sectors), which the kernel had split because they did not fit together.
    // The largest recorded request is what the kernel's segments were seen to hold.
    if let Some(n) = queue_limit(meta, "max_segments", 1)? {
        let largest = trace
            .requests
            .iter()
            .map(|r| r.sectors.max(r.issued_sectors))
            .max()
            .unwrap_or(0);
        limits = limits.max_segments(n.max(largest.div_ceil(PAGE_SECTORS)));
    }
    // Only bfq reads the io_context's priority (`bfq_check_ioprio_change`); mq-deadline reads
    // the request's (`dd_insert_request`), kyber and none neither.
    let no_prios = HashMap::new();
    let prios = if info.name == "bfq" { prios } else { &no_prios };
    let merge_gaps: HashSet<usize> = bfq_log.order.as_ref().map_or_else(
        || trace.sched_bios.iter().map(|m| m.after).collect(),
        |o| o.merge_after.iter().copied().collect(),
    );
    let decided = bfq_log.order.as_ref().map_or(&[][..], |o| &o.decided);
    // One replay of `log` with `moves` made: both sides' decisions, the issue-issue pairs
    // settled, and the merges ours missed and its notes.
    let replay = |moves: &[MovedBefore]| -> Result<Replayed<Extras>, String> {
        let mut sched = info
            .build(&settings, &groups.tree)
            .map_err(|e| format!("{}: {e}", info.name))?;
        if opts.notes {
            sched.keep_notes();
        }
        let mut replay = Replay::new(
            trace,
            sched,
            limits,
            opts.pace,
            asked_at_empty_runs(info.name),
            bfq_log,
            Contexts { prios, groups },
        );
        replay.own_runs = software_queues_replayed(info.name);
        replay.allocating_cpus = allocating_cpus_replayed(info.name);
        replay.moved_before = moves.to_vec();
        let (ours, merges_missed, notes) = replay.run(log, bfq_log);
        let ours = agreement::decisions(&ours);
        let kernel = agreement::decisions(&moved_log(log, moves));
        let (kernel, unordered_pairs) = settle_unordered_pairs(trace, decided, kernel, &ours);
        Ok(Replayed {
            kernel,
            ours,
            rest: Extras {
                unordered_pairs,
                merges_missed,
                notes,
            },
        })
    };
    let first = replay(&[])?;
    let (done, moves) = if opts.set_aside && opts.pace == Pace::Kernel {
        set_aside_cross_cpu_insertions(trace, decided, &merge_gaps, log, first, replay)?
    } else {
        (first, Vec::new())
    };
    let Replayed {
        kernel,
        ours,
        rest:
            Extras {
                unordered_pairs,
                merges_missed,
                notes,
            },
    } = done;
    let mut set_aside: Vec<usize> = moves.iter().map(|m| m.lands).collect();
    set_aside.sort_unstable();
    let counted: Vec<usize> = (0..kernel.len())
        .filter(|k| set_aside.binary_search(k).is_err())
        .collect();
    let pick = |d: &[Decision], all: &[usize]| -> Vec<Decision> {
        all.iter().filter_map(|&k| d.get(k).cloned()).collect()
    };
    let mut a = agreement::compare(&pick(&kernel, &counted), &pick(&ours, &counted));
    a.first_divergence = a
        .first_divergence
        .map(|k| counted.get(k).copied().unwrap_or(k));
    let choices: Vec<usize> = counted
        .iter()
        .copied()
        .filter(|&k| kernel[k].queued.len() > 1)
        .collect();
    let choices_agreed = choices
        .iter()
        .filter(|&&k| ours.get(k) == Some(&kernel[k]))
        .count();
    let order = |d: &[Decision]| d.iter().map(|d| d.chosen).collect::<Vec<_>>();
    let kendall = agreement::windowed_kendall(&order(&kernel), &order(&ours), opts.window);
    Ok(TraceDiff {
        kernel_scheduler: meta.scheduler.clone(),
        policy: info.name,
        settings: settings
            .names()
            .map(|n| (n.to_string(), settings.raw(n).unwrap_or(0)))
            .collect(),
        skipped,
        depth,
        agreement: a,
        choices: choices.len(),
        choices_agreed,
        kendall,
        kernel,
        ours,
        merges_missed,
        unordered_pairs,
        set_aside,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::ftrace::FtraceReader;
    use crate::traces::lines::Lines;

    /// Three reads allocated by one task, inserted in a row, issued by kblockd as 100, 300,
    /// 500 (mq-deadline's sorted order; `none` would keep arrival order 100, 500, 300).
    pub(super) const BATCH: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_getrq: 7,0 R 500 + 8 [fio]
 fio-10 [000] ..... 1.000003: block_getrq: 7,0 R 300 + 8 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 4096 () 300 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 R 4096 () 300 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 R 4096 () 500 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 R () 300 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000030: block_rq_complete: 7,0 R () 500 + 8 be,0,4 [0]
";

    /// The trace of ftrace text `text`.
    pub(super) fn read(text: &str) -> KernelTrace {
        let r = FtraceReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "t"));
        KernelTrace::assemble(r, None).unwrap()
    }

    fn trace() -> KernelTrace {
        read(BATCH)
    }

    /// A recording's metadata under `sched`: 128 hardware tags, nr_requests 8, fifo_batch 16
    /// and read_expire 0.
    pub(super) fn meta(sched: &str) -> RecordingMeta {
        let mut m = RecordingMeta {
            scheduler: sched.into(),
            ..RecordingMeta::default()
        };
        m.device.hw_queue_depth = Some(128);
        m.queue.insert("nr_requests".into(), "8".into());
        m.iosched.insert("fifo_batch".into(), "16".into());
        m.iosched.insert("read_expire".into(), "0".into());
        m
    }

    #[test]
    fn a_sorted_batch_agrees_with_mq_deadline_and_not_with_fifo_at_the_kernels_pace() {
        let t = trace();
        let d = diff(&t, &meta("mq-deadline"), &DiffOptions::default()).unwrap();
        assert_eq!(d.policy, "mq-deadline");
        assert!(d.settings.contains(&("fifo_batch".into(), 16)));
        assert!(d.settings.contains(&("nr_requests".into(), 8)));
        assert_eq!(d.depth, 128);
        assert_eq!(d.agreement.decisions, 3);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!((d.choices, d.choices_agreed), (2, 2));
        assert_eq!(d.kendall_max(), 0.0);
        // none (our noop) keeps arrival order: 500 second, where mq-deadline (the FIFO head
        // first, then the next in sector order) took 300.
        let n = diff(&t, &meta("none"), &DiffOptions::default()).unwrap();
        assert_eq!(n.policy, "noop");
        assert!(n.settings.is_empty());
        assert_eq!(n.agreement.first_divergence, Some(1));
        assert_eq!(n.ours[1].chosen, 1);
        assert!(n.kendall_mean() > 0.0);
    }

    fn none_agreement(events: &str) -> TraceDiff {
        diff(&read(events), &meta("none"), &DiffOptions::default()).unwrap()
    }

    /// blk-mq without a scheduler: a write staged on CPU 1, then a read on CPU 0; kblockd's
    /// run on CPU 0 (queued by CPU 0's insertion) splices CPU 0's software queue first
    /// (`blk_mq_flush_busy_ctxs`) and issues the read before the older write.
    #[test]
    fn blk_mq_flush_busy_ctxs_orders_a_runs_insertions_by_cpu_in_the_replay() {
        let d = none_agreement(
            "\
 fio-11 [001] ..... 1.000001: block_getrq: 7,0 W 900 + 8 [fio]
 fio-11 [001] ...1. 1.000002: block_rq_insert: 7,0 W 4096 () 900 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000002: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000003: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 W 4096 () 900 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 W () 900 + 8 be,0,4 [0]
",
        );
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!((d.choices, d.choices_agreed), (1, 1));
    }

    /// A submitter's own queue run, started just after its insertion on CPU 1, flushed the
    /// software queues before CPU 0's insertion a microsecond later: it issued its own
    /// request first though CPU 0's was queued at the issue event. The replay decides at the
    /// run's start (`own_runs`); deciding at the issue event, ours would splice CPU 0 first.
    #[test]
    fn a_submitters_own_run_flushes_before_a_later_insertion_on_another_cpu() {
        let d = none_agreement(
            "\
 fio-11 [001] ..... 1.000001: block_getrq: 7,0 W 900 + 8 [fio]
 fio-11 [001] ...1. 1.000002: block_rq_insert: 7,0 W 4096 () 900 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000002: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000003: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000004: block_rq_issue: 7,0 W 4096 () 900 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000005: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 W () 900 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
",
        );
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!(d.kernel[0].queued.len(), 2);
    }

    /// A write request grown after its insertion by a bio of its own process and by another
    /// process's request merged at its insertion.
    const GROWN: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 W 100 + 8 [fio]
 fio-10 [000] d..1. 1.000002: block_rq_insert: 7,0 W 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_bio_queue: 7,0 W 108 + 8 [fio]
 fio-10 [000] d..1. 1.000004: block_bio_backmerge: 7,0 W 108 + 8 [fio]
 fio-11 [001] ..... 1.000005: block_getrq: 7,0 W 116 + 8 [fio]
 fio-11 [001] d..1. 1.000006: block_rq_merge: 7,0 W 4096 () 116 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 W 12288 () 100 + 24 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 W () 100 + 24 be,0,4 [0]
";

    /// A write request in mq-deadline grows after its insertion by a bio of its own process
    /// (`block_bio_backmerge` into a queued request) and by another process's request merged
    /// at its insertion (`block_rq_merge` of a request never inserted): the replay submits
    /// both where they came, ours merges both into the queued request, and the one dispatch
    /// finds the same single request on both sides. At the device's pace ours has dispatched
    /// the request before either arrives: both are counted missed, not made requests.
    #[test]
    fn merges_into_a_queued_request_are_replayed_where_the_kernel_made_them() {
        let t = read(GROWN);
        assert_eq!(t.sched_bios.len(), 2);
        let d = diff(&t, &meta("mq-deadline"), &DiffOptions::default()).unwrap();
        assert_eq!(d.merges_missed, 0);
        assert_eq!(
            d.ours,
            [Decision {
                queued: vec![0],
                chosen: 0
            }]
        );
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        let opts = DiffOptions {
            pace: Pace::Device,
            ..DiffOptions::default()
        };
        let d = diff(&t, &meta("mq-deadline"), &opts).unwrap();
        assert_eq!(d.merges_missed, 2);
        assert_eq!(d.ours.len(), 1, "{:?}", d.ours);
    }

    /// The queue's `nomerges` reaches the block layer: at 2 (`blk_mq_attempt_bio_merge` and
    /// `elv_attempt_insert_merge` give up on `blk_queue_nomerges`) ours merges neither bio
    /// of [`GROWN`], which are dispatched apart; at 1 and 0 it merges both
    /// (what the kernel merged at 1 were its one-hit merges, `elv_merge`). A value sysfs never
    /// shows is refused naming the field.
    #[test]
    fn the_queues_nomerges_reaches_the_block_layer() {
        let t = read(GROWN);
        let dispatched = |nomerges: &str| {
            let mut m = meta("mq-deadline");
            m.queue.insert("nomerges".into(), nomerges.into());
            diff(&t, &m, &DiffOptions::default()).map(|d| d.ours.len())
        };
        assert_eq!(dispatched("0"), Ok(1));
        assert_eq!(dispatched("1"), Ok(1));
        let apart = dispatched("2").unwrap();
        assert!(apart > 1, "{apart} dispatches: merged at nomerges 2");
        for bad in ["3", "-1", "no"] {
            let e = dispatched(bad).unwrap_err();
            assert!(e.contains("field `queue.nomerges`"), "{bad}: {e}");
        }
    }

    /// Two contiguous writes of one process became two requests in the kernel under kyber:
    /// the second bio was submitted while the first was still in the plug, not its last
    /// request (`blk_attempt_plug_merge` looks at the last only) and not yet in a software
    /// queue (`kyber_bio_merge` looks in the submitting CPU's `kcq` only), and kyber merges
    /// no requests at insertion (`kyber_insert_requests`). The replay keeps them apart:
    /// ours merging the second into the first would leave one request where the kernel
    /// chose among three.
    #[test]
    fn a_request_the_kernel_kept_apart_is_not_merged_by_ours() {
        const APART: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 WS 100 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_getrq: 7,0 WS 900 + 8 [fio]
 fio-10 [000] ..... 1.000003: block_getrq: 7,0 WS 108 + 8 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 WS 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 WS 4096 () 900 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 WS 4096 () 108 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 WS 4096 () 100 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 WS 4096 () 900 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 WS 4096 () 108 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 WS () 100 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 WS () 900 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000030: block_rq_complete: 7,0 WS () 108 + 8 be,0,4 [0]
";
        let t = read(APART);
        assert!(t.sched_bios.is_empty());
        let d = diff(&t, &meta("kyber"), &DiffOptions::default()).unwrap();
        assert_eq!(d.ours.len(), 3, "{:?}", d.ours);
        assert_eq!(
            d.ours[0],
            Decision {
                queued: vec![0, 1, 2],
                chosen: 0
            }
        );
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
    }

    /// Two reads inserted 1 us apart by processes on two CPUs, issued 1 us apart in the
    /// other order: each CPU ran the queue (`blk_mq_run_hw_queue`), and which run asked
    /// mq-deadline first (`dd_dispatch_request`, under `dd->lock`) is not in the trace,
    /// since `block_rq_issue` fires after the lock is released. Ours takes the lower sector
    /// first (`deadline_from_pos`): the pair is settled as ours made it. Issued by one CPU,
    /// the same pair is ordered, and ours diverges.
    #[test]
    fn two_cpus_issuing_close_together_leave_their_order_open() {
        let lines = |cpu_b: u32| {
            format!(
                "\
 fio-10 [001] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [001] ...1. 1.000001: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-11 [000] ..... 1.000002: block_getrq: 7,0 R 500 + 8 [fio]
 fio-11 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-11 [00{cpu_b}] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-10 [001] ..... 1.000004: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 500 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
"
            )
        };
        let run = |cpu_b: u32| {
            let t = read(&lines(cpu_b));
            diff(&t, &meta("mq-deadline"), &DiffOptions::default()).unwrap()
        };
        let two_cpus = run(0);
        assert_eq!(two_cpus.unordered_pairs, 1);
        assert_eq!(two_cpus.agreement.share(), 1.0, "{:?}", two_cpus.ours);
        assert_eq!(
            two_cpus.kernel[0],
            Decision {
                queued: vec![0, 1],
                chosen: 0
            }
        );
        let one_cpu = run(1);
        assert_eq!(one_cpu.unordered_pairs, 0);
        assert_eq!(one_cpu.agreement.first_divergence, Some(0));
    }

    /// One process's four reads in one software queue, taken by queue runs on two CPUs at
    /// once: each run takes its requests from kyber one by one under the domain's lock
    /// (`blk_mq_do_dispatch_sched` -> `kyber_dispatch_request`, the oldest first from
    /// `khd->rqs` once `flush_busy_kcqs` moved them there) and issues them after
    /// (`blk_mq_dispatch_rq_list`, `block_rq_issue`), so CPU 1 took the first and third and
    /// CPU 0 the second and fourth, while the trace shows CPU 0's two issues first
    /// (`iodepth-low-...-round2`/kyber, decision 560). Ours takes them in arrival order, an
    /// interleaving of the two CPUs' runs the trace allows: settled as ours made it, three
    /// pairs inverted. Issued by one CPU, the same order is the kernel's, and ours diverges.
    #[test]
    fn two_cpus_runs_interleaved_leave_their_order_open() {
        let lines = |cpu_b: u32| {
            format!(
                "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 104640 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_getrq: 7,0 R 71352 + 8 [fio]
 fio-10 [000] ..... 1.000003: block_getrq: 7,0 R 78864 + 8 [fio]
 fio-10 [000] ..... 1.000004: block_getrq: 7,0 R 81200 + 8 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 R 4096 () 104640 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 R 4096 () 71352 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 4096 () 78864 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 4096 () 81200 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000009: block_rq_issue: 7,0 R 4096 () 71352 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000010: block_rq_issue: 7,0 R 4096 () 81200 + 8 be,0,4 [fio]
 fio-11 [00{cpu_b}] ..... 1.000010: block_rq_issue: 7,0 R 4096 () 104640 + 8 be,0,4 [fio]
 fio-11 [00{cpu_b}] ..... 1.000011: block_rq_issue: 7,0 R 4096 () 78864 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000070: block_rq_complete: 7,0 R () 71352 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000072: block_rq_complete: 7,0 R () 81200 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000073: block_rq_complete: 7,0 R () 104640 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000074: block_rq_complete: 7,0 R () 78864 + 8 be,0,4 [0]
"
            )
        };
        let run = |cpu_b: u32| {
            let t = read(&lines(cpu_b));
            diff(&t, &meta("kyber"), &DiffOptions::default()).unwrap()
        };
        let two_cpus = run(1);
        assert_eq!(two_cpus.unordered_pairs, 3);
        assert_eq!(two_cpus.agreement.share(), 1.0, "{:?}", two_cpus.ours);
        let chosen: Vec<usize> = two_cpus.kernel.iter().map(|d| d.chosen).collect();
        assert_eq!(chosen, [0, 1, 2, 3]);
        let one_cpu = run(0);
        assert_eq!(one_cpu.unordered_pairs, 0);
        assert_eq!(one_cpu.agreement.first_divergence, Some(0));
    }

    /// Under none, a discard inserted from a plug flushed in `schedule()` waits for kblockd's
    /// run of the queue, while a reader's requests go to the device from its own context
    /// (`blk_mq_try_issue_directly`, no `block_rq_insert`): the reads pass the discard. Ours
    /// issues the replayed direct issues ahead of the queued discard, as the kernel did.
    #[test]
    fn under_none_direct_issues_pass_a_request_waiting_for_kblockd() {
        const PASSED: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 DS 3840 + 128 [fio]
 fio-10 [000] ..... 1.000002: block_rq_insert: 7,0 DS 65536 () 3840 + 128 be,0,4 [fio]
 fio-11 [001] ..... 1.000010: block_getrq: 7,0 R 68112 + 8 [fio]
 fio-11 [001] ..... 1.000011: block_rq_issue: 7,0 R 4096 () 68112 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000020: block_getrq: 7,0 R 95216 + 8 [fio]
 fio-11 [001] ..... 1.000021: block_rq_issue: 7,0 R 4096 () 95216 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.002000: block_rq_issue: 7,0 DS 65536 () 3840 + 128 be,0,4 [kworker/0:1H]
 ksoftirqd/1-22 [001] ..s.. 1.002010: block_rq_complete: 7,0 R () 68112 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.002020: block_rq_complete: 7,0 R () 95216 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.002030: block_rq_complete: 7,0 DS () 3840 + 128 be,0,4 [0]
";
        let t = read(PASSED);
        let d = diff(&t, &meta("none"), &DiffOptions::default()).unwrap();
        assert_eq!(d.kernel[0].chosen, 1, "{:?}", d.kernel);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
    }

    /// mq-deadline's refused aged dispatch starts a write batch where no tracepoint shows
    /// it (Linux 6.18, `dd_dispatch_request`): while a real-time read is in flight, every
    /// run of the queue first asks the best-effort level with an aged latest start
    /// (`dd_dispatch_prio_aged_requests`), which starts a write batch (`last_dir` WRITE,
    /// `batching` 0) and then refuses the young write; the priority loop then stops at the
    /// real-time level (`dd_queued`). Such a call ends the run that dispatched the second
    /// real-time read (`__blk_mq_do_dispatch_sched` asks until nothing comes). So when the
    /// last write's insertion runs the queue after the reads completed, the kernel continues
    /// the write batch (200, 300) before the best-effort read (1100), though the real-time
    /// read had made the last direction a read. Asked only where the kernel dispatched,
    /// ours took the read first (decision 3).
    #[test]
    fn mq_deadline_is_asked_once_more_at_the_end_of_each_kernel_queue_run() {
        const AGED: &str = "\
 fio-21 [000] ..... 1.000010: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-21 [000] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-21 [000] ..... 1.000013: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 fio-20 [001] ..... 1.000100: block_getrq: 7,0 RS 5000 + 8 [fio]
 fio-20 [001] d..1. 1.000101: block_rq_insert: 7,0 RS 4096 () 5000 + 8 rt,0,4 [fio]
 fio-20 [001] ..... 1.000102: block_rq_issue: 7,0 RS 4096 () 5000 + 8 rt,0,4 [fio]
 fio-22 [000] ..... 1.000200: block_getrq: 7,0 WS 200 + 8 [fio]
 fio-22 [000] d..1. 1.000201: block_rq_insert: 7,0 WS 4096 () 200 + 8 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000300: block_rq_complete: 7,0 RS () 5000 + 8 rt,0,4 [0]
 fio-20 [001] ..... 1.000400: block_getrq: 7,0 RS 6000 + 8 [fio]
 fio-20 [001] d..1. 1.000401: block_rq_insert: 7,0 RS 4096 () 6000 + 8 rt,0,4 [fio]
 fio-20 [001] ..... 1.000402: block_rq_issue: 7,0 RS 4096 () 6000 + 8 rt,0,4 [fio]
 fio-21 [000] ..... 1.000500: block_getrq: 7,0 R 1100 + 8 [fio]
 fio-21 [000] d..1. 1.000501: block_rq_insert: 7,0 R 4096 () 1100 + 8 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000600: block_rq_complete: 7,0 RS () 6000 + 8 rt,0,4 [0]
 fio-22 [000] ..... 1.000700: block_getrq: 7,0 WS 300 + 8 [fio]
 fio-22 [000] d..1. 1.000701: block_rq_insert: 7,0 WS 4096 () 300 + 8 be,0,4 [fio]
 fio-22 [000] ..... 1.000702: block_rq_issue: 7,0 WS 4096 () 200 + 8 be,0,4 [fio]
 fio-22 [000] ..... 1.000703: block_rq_issue: 7,0 WS 4096 () 300 + 8 be,0,4 [fio]
 fio-22 [000] ..... 1.000704: block_rq_issue: 7,0 R 4096 () 1100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000800: block_rq_complete: 7,0 WS () 200 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000801: block_rq_complete: 7,0 WS () 300 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000802: block_rq_complete: 7,0 R () 1100 + 8 be,0,4 [0]
";
        let t = read(AGED);
        let mut m = meta("mq-deadline");
        m.iosched.insert("read_expire".into(), "500".into());
        let d = diff(&t, &m, &DiffOptions::default()).unwrap();
        let order: Vec<u64> = d.ours.iter().map(|o| t.requests[o.chosen].sector).collect();
        assert_eq!(order, [1000, 5000, 6000, 200, 300, 1100]);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        assert!(asked_at_empty_runs("mq-deadline"));
    }

    /// mq-deadline, a run that returned nothing after an insertion (kfresh20's
    /// `cpus-allowed-0-classes-batched-readers-writer`, decisions 734 and 702): the
    /// best-effort write 200 is inserted while the real-time read 5000 is in flight, and the
    /// run after it dispatches nothing: `dd_dispatch_request` first calls
    /// `dd_dispatch_prio_aged_requests` (two levels have requests, `dd_queued`), whose
    /// best-effort step starts a write batch (`last_dir` WRITE, `batching` 0, `starved` 0)
    /// and refuses the young write (`started_after`), and the priority loop stops at the busy
    /// real-time level. The best-effort reads 1000 and 1100 come in one batch of one task,
    /// whose run continues the write batch and refuses it again. When the real-time read has
    /// completed, the kernel continues the write batch: 200, then the reads. Asked only where
    /// the kernel dispatched, ours still had the real-time read's direction and took 1000.
    #[test]
    fn mq_deadline_is_asked_at_an_insertion_below_a_busy_level() {
        blocked_below_a_busy_level("rt,0,0", "be,0,4");
    }

    /// The trace of [`mq_deadline_is_asked_at_an_insertion_below_a_busy_level`]: the read
    /// 5000 of class `busy` in flight while the write 200 and the reads 1000 and 1100 of class
    /// `low` are inserted (9000 before, `low` too). mq-deadline (`read_expire` 500) must take
    /// 9000, 5000, then the write batch 200 and the reads, as the kernel did.
    pub(super) fn blocked_below_a_busy_level(busy: &str, low: &str) {
        let text = format!(
            "\
 fio-21 [000] ..... 1.000010: block_getrq: 7,0 R 9000 + 8 [fio]
 fio-21 [000] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 9000 + 8 {low} [fio]
 fio-21 [000] ..... 1.000013: block_rq_issue: 7,0 R 4096 () 9000 + 8 {low} [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 9000 + 8 {low} [0]
 fio-20 [000] ..... 1.000100: block_getrq: 7,0 R 5000 + 8 [fio]
 fio-20 [000] d..1. 1.000101: block_rq_insert: 7,0 R 4096 () 5000 + 8 {busy} [fio]
 fio-20 [000] ..... 1.000102: block_rq_issue: 7,0 R 4096 () 5000 + 8 {busy} [fio]
 fio-22 [000] ..... 1.000200: block_getrq: 7,0 WS 200 + 8 [fio]
 fio-22 [000] d..1. 1.000201: block_rq_insert: 7,0 WS 4096 () 200 + 8 {low} [fio]
 fio-21 [000] ..... 1.000300: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-21 [000] d..1. 1.000301: block_rq_insert: 7,0 R 4096 () 1000 + 8 {low} [fio]
 fio-21 [000] ..... 1.000302: block_getrq: 7,0 R 1100 + 8 [fio]
 fio-21 [000] d..1. 1.000303: block_rq_insert: 7,0 R 4096 () 1100 + 8 {low} [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000400: block_rq_complete: 7,0 R () 5000 + 8 {busy} [0]
 fio-21 [000] ..... 1.000450: block_rq_issue: 7,0 WS 4096 () 200 + 8 {low} [fio]
 fio-21 [000] ..... 1.000451: block_rq_issue: 7,0 R 4096 () 1000 + 8 {low} [fio]
 fio-21 [000] ..... 1.000452: block_rq_issue: 7,0 R 4096 () 1100 + 8 {low} [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000500: block_rq_complete: 7,0 WS () 200 + 8 {low} [0]
 ksoftirqd/0-14 [000] ..s.. 1.000501: block_rq_complete: 7,0 R () 1000 + 8 {low} [0]
 ksoftirqd/0-14 [000] ..s.. 1.000502: block_rq_complete: 7,0 R () 1100 + 8 {low} [0]
"
        );
        let t = read(&text);
        let mut m = meta("mq-deadline");
        m.iosched.insert("read_expire".into(), "500".into());
        let d = diff(&t, &m, &DiffOptions::default()).unwrap();
        let order: Vec<u64> = d.ours.iter().map(|o| t.requests[o.chosen].sector).collect();
        assert_eq!(order, [9000, 5000, 200, 1000, 1100], "{busy} above {low}");
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
    }

    /// bfq: a best-effort 7 process (its io_context's priority, `ioprio_set` by fio's
    /// `prioclass=2`, `prio=7`) whose read carries real time 0 (fio's `cmdprio`, the request's
    /// own priority), beside a best-effort 0 reader.
    const CMDPRIO: &str = "\
 fio-50 [000] ..... 1.000001: block_getrq: 7,0 RS 1000 + 8 [fio]
 fio-50 [000] d..1. 1.000002: block_rq_insert: 7,0 RS 4096 () 1000 + 8 rt,0,0 [fio]
 fio-60 [001] ..... 1.000003: block_getrq: 7,0 RS 900000 + 8 [fio]
 fio-60 [001] d..1. 1.000004: block_rq_insert: 7,0 RS 4096 () 900000 + 8 be,0,0 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 RS 4096 () 900000 + 8 be,0,0 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 RS () 900000 + 8 be,0,0 [0]
 kworker/0:1H-58 [000] ..... 1.000030: block_rq_issue: 7,0 RS 4096 () 1000 + 8 rt,0,0 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000040: block_rq_complete: 7,0 RS () 1000 + 8 rt,0,0 [0]
";

    /// 6.18's bfq gives a queue its io_context's priority (`bfq_check_ioprio_change` copies
    /// `ioc->ioprio` into `bic->ioprio`; `bfq_init_bfqq` -> `bfq_set_next_ioprio_data` reads
    /// it), not the request's: the best-effort 7 queue (weight 10) waits for the best-effort 0 one
    /// (weight 80: its virtual finish time comes first, `bfq_calc_finish`). Given each
    /// request's own priority, ours made the first queue real time 0 and served it first
    /// (`bfq_lookup_next_entity` serves the classes in order).
    #[test]
    fn bfq_queues_take_their_io_contexts_priority_not_the_requests() {
        let t = read(CMDPRIO);
        let prio = |class, level| IoPrio { class, level };
        let prios = HashMap::from([
            (50, prio(elevator_core::IoClass::BestEffort, 7)),
            (60, prio(elevator_core::IoClass::BestEffort, 0)),
        ]);
        let opts = DiffOptions::default();
        let none = ContextGroups::default();
        let d = diff_with_log(
            &t,
            &meta("bfq"),
            &opts,
            &BfqLogTimes::default(),
            &prios,
            &none,
        )
        .unwrap();
        let first = |d: &TraceDiff| t.requests[d.ours[0].chosen].sector;
        assert_eq!(first(&d), 900000, "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        // Each request's own priority: real time 0 wins.
        let own = diff(&t, &meta("bfq"), &opts).unwrap();
        assert_eq!(first(&own), 1000);
        // mq-deadline reads the request's priority (`dd_insert_request`): the real-time read
        // first; the context's priority is not given to it.
        let dd = diff_with_log(
            &t,
            &meta("mq-deadline"),
            &opts,
            &BfqLogTimes::default(),
            &prios,
            &none,
        )
        .unwrap();
        assert_eq!(first(&dd), 1000);
    }

    /// Two best-effort 4 readers, each the only process of a cgroup: 50's of bfq weight 10,
    /// 60's of weight 1000. 50's read comes first, yet the kernel serves 60's.
    const TWO_GROUPS: &str = "\
 fio-50 [000] ..... 1.000001: block_getrq: 7,0 RS 1000 + 8 [fio]
 fio-50 [000] d..1. 1.000002: block_rq_insert: 7,0 RS 4096 () 1000 + 8 be,0,4 [fio]
 fio-60 [001] ..... 1.000003: block_getrq: 7,0 RS 900000 + 8 [fio]
 fio-60 [001] d..1. 1.000004: block_rq_insert: 7,0 RS 4096 () 900000 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 RS 4096 () 900000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 RS () 900000 + 8 be,0,4 [0]
 kworker/0:1H-58 [000] ..... 1.000030: block_rq_issue: 7,0 RS 4096 () 1000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000040: block_rq_complete: 7,0 RS () 1000 + 8 be,0,4 [0]
";

    /// The groups of [`TWO_GROUPS`], as a recording's groups file gives them.
    const TWO_GROUPS_FILE: &str = "group /g10 10\ngroup /g1000 1000\npid 50 /g10\npid 60 /g1000\n";

    /// In 6.18's bfq each cgroup is an entity of the root group's service tree with its
    /// `blkio.bfq.weight` (`bfq_io_set_weight_legacy` -> `bfq_group_set_weight`), its queues
    /// below it (`bfq_group_set_parent`). Both groups start at the root's virtual time; the
    /// weight-1000 group's finish (`bfq_calc_finish`: start + budget / weight) comes first,
    /// so `bfq_lookup_next_entity` -> `__bfq_lookup_next_entity` picks it at the root and
    /// 60's read goes first. In the root group both queues have weight 40 and the first
    /// activated, 50's, is served first.
    #[test]
    fn bfq_serves_the_heavier_cgroup_first_as_the_groups_file_says() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = meta("bfq");
        m.format = crate::traces::ftrace::recording::META_FORMAT;
        m.device.major = 7;
        // A 1 GiB device: the reads lie inside it (`bio_check_eod`).
        m.device.bytes = 1 << 30;
        m.trace.file = "trace.txt".into();
        m.fio.job_file = "job.fio".into();
        let write = |f: &str, text: &str| std::fs::write(dir.path().join(f), text).unwrap();
        write("meta.json", &serde_json::to_string(&m).unwrap());
        write("trace.txt", TWO_GROUPS);
        write("job.fio", "[a]\nrw=read\n");
        let first = |row: &Row| row.requests[row.kernel_pace.ours[0].chosen].sector;
        // Without the groups file: both queues in the root group.
        let flat = diff_recording(dir.path(), &DiffOptions::default()).unwrap();
        assert_eq!(first(&flat), 1000);
        assert_eq!(flat.kernel_pace.agreement.first_divergence, Some(0));
        write(crate::traces::ftrace::GROUPS_FILE, TWO_GROUPS_FILE);
        let grouped = diff_recording(dir.path(), &DiffOptions::default()).unwrap();
        let d = &grouped.kernel_pace;
        assert_eq!(first(&grouped), 900000, "{:?} vs {:?}", d.kernel, d.ours);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        // A bad line is refused, naming the file, its line and the field.
        write(
            crate::traces::ftrace::GROUPS_FILE,
            "group /g10 10\npid 50 /g11\n",
        );
        let e = diff_recording(dir.path(), &DiffOptions::default()).unwrap_err();
        assert!(
            e.contains("groups.txt") && e.contains(":2") && e.contains("group"),
            "{e}"
        );
    }

    /// The exits bfq's log names (`bfq_exit_bfqq`'s note, from `bfq_exit_icq`) are each
    /// process's first, of a sync or an async queue, sorted by time; a shared queue's note
    /// is the exit of the task that logged it; other notes are not exits.
    #[test]
    fn the_exits_are_the_first_exit_bfqq_note_of_each_process() {
        let ms = |t: u64| Nanos::from_ms(t);
        let log = [
            (ms(1), "bfq5750S add_request 1".to_string()),
            (ms(2), "bfq5751A exit_bfqq: 00000000deadbeef, 1".to_string()),
            (ms(3), "bfq5750S exit_bfqq: 0000000036c9f691, 1".to_string()),
            (ms(4), "bfq5750A exit_bfqq: 0000000036c9f692, 1".to_string()),
            (
                ms(5),
                "bfqSHARED-S exit_bfqq: 0000000036c9f693, 1".to_string(),
            ),
            (ms(6), "bfq5752S put_queue: 0000000036c9f694 1".to_string()),
        ];
        let pids = [5750, 5751, 5750, 5750, 424, 5752];
        assert_eq!(
            exits_in_bfq_log(&log, &pids),
            [(ms(2), 5751), (ms(3), 5750), (ms(5), 424)]
        );
    }

    /// A 1 MiB read the kernel issued whole (its buffer's pages physically contiguous: no
    /// `block_split`) beside a 16 KiB one, under none, on a queue of 128 segments: 128
    /// segments of a page each would bound a request at 512 KiB, but the replay takes the
    /// kernel's request as it formed it, so the two sides see the same two dispatches.
    #[test]
    fn a_request_the_kernel_did_not_split_is_not_split_by_our_segment_count() {
        const WHOLE: &str = "\
 fio-10 [001] ..... 1.000001: block_bio_queue: 7,0 R 0 + 2048 [fio]
 fio-10 [001] ..... 1.000002: block_getrq: 7,0 R 0 + 2048 [fio]
 fio-10 [001] ..... 1.000003: block_rq_issue: 7,0 R 1048576 () 0 + 2048 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000100: block_rq_complete: 7,0 R () 0 + 2048 be,0,4 [0]
 fio-11 [000] ..... 1.000200: block_bio_queue: 7,0 RS 9000 + 32 [fio]
 fio-11 [000] ..... 1.000201: block_getrq: 7,0 RS 9000 + 32 [fio]
 fio-11 [000] ..... 1.000202: block_rq_issue: 7,0 RS 16384 () 9000 + 32 be,0,2 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000250: block_rq_complete: 7,0 RS () 9000 + 32 be,0,2 [0]
";
        let t = read(WHOLE);
        let mut m = meta("none");
        m.queue.insert("max_sectors_kb".into(), "1280".into());
        m.queue.insert("max_segments".into(), "128".into());
        let d = diff(&t, &m, &DiffOptions::default()).unwrap();
        assert_eq!(d.ours.len(), 2, "{:?}", d.ours);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        // max_sectors_kb still bounds ours: at 512 KiB the 1 MiB request goes as two pieces,
        // and the second kernel dispatch finds ours sending the second piece.
        m.queue.insert("max_sectors_kb".into(), "512".into());
        let d = diff(&t, &m, &DiffOptions::default()).unwrap();
        assert_eq!(d.ours[1].chosen, 0, "{:?}", d.ours);
        assert_eq!(d.agreement.first_divergence, Some(1));
    }

    /// The two pieces of a 1 MiB read the kernel split for its segments (`block_split` at
    /// 1032 sectors), both queued under mq-deadline before its queue ran: the kernel sent
    /// them as two requests, because together they do not fit its segment limit, so ours
    /// must not merge the second into the first either.
    #[test]
    fn the_pieces_of_a_kernel_split_are_not_merged_back() {
        const SPLIT: &str = "\
 fio-10 [000] ..... 1.000001: block_bio_queue: 7,0 R 4096 + 2048 [fio]
 fio-10 [000] ..... 1.000002: block_split: 7,0 R 4096 / 5128 [fio]
 fio-10 [000] ..... 1.000003: block_getrq: 7,0 R 4096 + 1032 [fio]
 fio-10 [000] ...1. 1.000004: block_rq_insert: 7,0 R 528384 () 4096 + 1032 be,0,4 [fio]
 fio-10 [000] ..... 1.000005: block_getrq: 7,0 R 5128 + 1016 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 520192 () 5128 + 1016 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 R 528384 () 4096 + 1032 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 R 520192 () 5128 + 1016 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000100: block_rq_complete: 7,0 R () 4096 + 1032 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000200: block_rq_complete: 7,0 R () 5128 + 1016 be,0,4 [0]
";
        let t = read(SPLIT);
        let mut m = meta("mq-deadline");
        m.queue.insert("max_sectors_kb".into(), "1280".into());
        m.queue.insert("max_segments".into(), "128".into());
        let d = diff(&t, &m, &DiffOptions::default()).unwrap();
        assert_eq!(d.kernel.len(), 2);
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
    }

    #[test]
    fn at_the_devices_pace_each_arrival_goes_straight_to_the_device() {
        let t = trace();
        let opts = DiffOptions {
            pace: Pace::Device,
            ..DiffOptions::default()
        };
        let d = diff(&t, &meta("mq-deadline"), &opts).unwrap();
        let order: Vec<usize> = d.ours.iter().map(|d| d.chosen).collect();
        assert_eq!(order, [0, 1, 2]);
        // Each alone in the queue when it went, where the kernel chose among three.
        assert_eq!(d.ours[0].queued, [0]);
        assert_eq!(d.agreement.first_divergence, Some(0));
        assert_eq!(max_in_flight(&t), 3);
        let shallow = DiffOptions {
            depth: Some(1),
            ..opts
        };
        let d = diff(&t, &meta("mq-deadline"), &shallow).unwrap();
        assert_eq!(d.depth, 1);
    }

    #[test]
    fn earliest_moves_each_dispatch_back_to_its_arrival_keeping_dispatch_and_merge_order() {
        use QueueEvent::{Arrive, Dispatch, Leave};
        let log = [
            Arrive(0),
            Arrive(1),
            Arrive(2),
            Dispatch(1),
            Dispatch(0),
            Arrive(3),
            Leave(3),
            Dispatch(2),
            Dispatch(4),
        ];
        assert_eq!(
            earliest(&log),
            [
                Arrive(0),
                Arrive(1),
                Dispatch(1),
                Dispatch(0),
                Arrive(2),
                Arrive(3),
                Leave(3),
                Dispatch(2),
                Dispatch(4),
            ]
        );
        let d = diff(
            &trace(),
            &meta("mq-deadline"),
            &DiffOptions {
                pace: Pace::Early,
                ..DiffOptions::default()
            },
        )
        .unwrap();
        // Decided at once, each from what had arrived: the first alone.
        assert_eq!(d.kernel[0].queued, [0]);
        assert_eq!(d.agreement.decisions, 3);
    }

    /// Queue limits the kernel never reports (issue 32, round 3): `max_sectors_kb = 0` was
    /// replayed as one sector a request (0.5% agreement, exit 0), a hardware queue depth of 0
    /// as 1 and a limit that is not a number was dropped. Each is refused naming the field.
    #[test]
    fn impossible_queue_limits_are_refused_naming_the_field() {
        let t = trace();
        let opts = DiffOptions::default();
        for (field, value, needle) in [
            ("max_sectors_kb", "0", "below what the kernel accepts (4)"),
            ("max_sectors_kb", "3", "below"),
            ("max_sectors_kb", "lots", "not a whole number"),
            ("max_segments", "0", "below what the kernel accepts (1)"),
            ("max_segments", "-1", "not a whole number"),
        ] {
            let mut m = meta("mq-deadline");
            m.queue.insert(field.into(), value.into());
            let e = diff(&t, &m, &opts).unwrap_err();
            assert!(
                e.contains(&format!("field `queue.{field}`")) && e.contains(needle),
                "{field}={value}: {e}"
            );
        }
        // Round 19: above the hardware's limit, which `queue_max_sectors_store` refuses.
        let mut m = meta("mq-deadline");
        m.queue.insert("max_hw_sectors_kb".into(), "1280".into());
        m.queue.insert("max_sectors_kb".into(), "4294967295".into());
        let e = diff(&t, &m, &opts).unwrap_err();
        assert!(
            e.contains("field `queue.max_sectors_kb`") && e.contains("max_hw_sectors_kb 1280"),
            "{e}"
        );
        let mut m = meta("mq-deadline");
        m.queue.insert("max_sectors_kb".into(), "4".into());
        m.queue.insert("max_segments".into(), "1".into());
        assert!(diff(&t, &m, &opts).is_ok());
        m.device.hw_queue_depth = Some(0);
        let e = diff(&t, &m, &opts).unwrap_err();
        assert!(e.contains("field `device.hw_queue_depth`"), "{e}");
    }

    /// Two reads of fio-10 on CPU 0 (1000, then 200), the first issued by CPU 1's kworker
    /// 20 us after, the second by CPU 0's later still (kblockd's runs, whose start the trace
    /// does not show: a run of fio-10's own would be taken to begin at its insertion, and
    /// the two issues left unordered); both complete. The trace of
    /// `bfqs_choices_are_taken_in_its_logs_order_at_its_logs_times` and of mutants42's
    /// `a_decision_bfqs_log_places_after_another_cpus_insertion_is_not_set_aside`, each with
    /// its own bfq log.
    pub(super) const ISSUED_LATE: &str = "\
 fio-10 [000] ..... 1.000009: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-10 [000] d..1. 1.000010: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000011: block_getrq: 7,0 R 200 + 8 [fio]
 fio-10 [000] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 200 + 8 be,0,4 [fio]
 kworker/1:1H-58 [001] ..... 1.000031: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [kworker/1:1H]
 kworker/0:1H-57 [000] ..... 1.000052: block_rq_issue: 7,0 R 4096 () 200 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/1-22 [001] ..s.. 1.000100: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000110: block_rq_complete: 7,0 R () 200 + 8 be,0,4 [0]
";

    /// bfq's choices in its log's order, not the issue events' (issue 27): a run on CPU 1
    /// takes the read at 1000 when it is alone in the queue (`bfqq_served` at 1.000011),
    /// the read at 200 comes in, a run on CPU 0 takes it (.000013); CPU 1 issues its read
    /// 20 us after its choice and CPU 0 later still. From the issue events the kernel chose
    /// 1000 with both queued, which bfq (`bfq_choose_req`, the nearer to the head at 0) does
    /// not. From the log each choice is made with one request queued, as ours makes it at
    /// the log's times. The `bfqq_served` of an expiry's charge (`bfq_bfqq_charge_time`,
    /// not after `select_queue: returned this queue`) is no choice.
    #[test]
    fn bfqs_choices_are_taken_in_its_logs_order_at_its_logs_times() {
        const LOG: &str = "\
 fio-10 [000] d..1. 1.000010: 7,0 1,0 m N bfq10S add_request 1
 kworker/1:1H-58 [001] d..1. 1.000011: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 kworker/1:1H-58 [001] d..1. 1.000011: 7,0 1,0 m N bfq10S bfqq_served 8 secs
 kworker/1:1H-58 [001] d..1. 1.000011: 7,0 1,0 m N bfq10S select_queue: returned this queue
 kworker/1:1H-58 [001] d..1. 1.000011: 7,0 1,0 m N bfq10S bfqq_served 8 secs
 fio-10 [000] d..1. 1.000012: 7,0 1,0 m N bfq10S add_request 1
 fio-10 [000] d..1. 1.000013: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 fio-10 [000] d..1. 1.000013: 7,0 1,0 m N bfq10S select_queue: returned this queue
 fio-10 [000] d..1. 1.000013: 7,0 1,0 m N bfq10S bfqq_served 8 secs
";
        let (t, log) = (read(ISSUED_LATE), read(LOG));
        let times = BfqLogTimes::read(&t, &log);
        let order = times.order.clone().expect("the log shows bfq's choices");
        let us = |u: u64| Some(Nanos(1_000_000_000 + u * 1000));
        assert_eq!((order.notes, order.matched), (2, 2));
        assert_eq!(order.decided, [us(11), us(13)]);
        let opts = DiffOptions::default();
        let d = diff_with_log(
            &t,
            &meta("bfq"),
            &opts,
            &times,
            &HashMap::new(),
            &ContextGroups::default(),
        )
        .unwrap();
        assert_eq!(
            d.kernel,
            [
                Decision {
                    queued: vec![0],
                    chosen: 0
                },
                Decision {
                    queued: vec![1],
                    chosen: 1
                }
            ]
        );
        assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
        // From the issue events, as without a log: the first choice is 1000 of both.
        let issued = BfqLogTimes {
            order: None,
            ..times
        };
        let from_issues = |set_aside| {
            let opts = DiffOptions {
                set_aside,
                ..DiffOptions::default()
            };
            let (prios, groups) = (HashMap::new(), ContextGroups::default());
            diff_with_log(&t, &meta("bfq"), &opts, &issued, &prios, &groups).unwrap()
        };
        let d = from_issues(false);
        assert_eq!(d.kernel[0].queued, [0, 1]);
        assert_eq!(d.agreement.first_divergence, Some(0), "{:?}", d.ours);
        // 200's insertion on CPU 0 lies inside the window of CPU 1's decision (CPU 1 traced
        // nothing before its issue): with it after the decision, as the log shows it, ours
        // takes 1000 alone, and the decision is set aside (`cross_cpu`).
        let d = from_issues(true);
        assert_eq!(d.set_aside, [0]);
        assert_eq!(d.kernel[0].queued, [0]);
        assert_eq!(d.agreement.first_divergence, None, "{:?}", d.ours);
        assert_eq!(d.agreement.decisions, 1);
    }

    /// bfq's choice of a request that its run then parks on `hctx->dispatch` for want of a
    /// driver tag is logged when bfq made it (`bfq_dispatch_request` notes `bfqq_served`
    /// under `bfqd->lock`; `blk_mq_dispatch_rq_list` then finds no tag in
    /// `blk_mq_get_driver_tag`), and the request goes to the device no earlier than the
    /// kernel issued it (at a free tag, from a run after the completion:
    /// `blk_mq_sched_restart`, run by kblockd). One driver tag, held by the write at 1000:
    /// the write at 5000, alone in bfq's async queue, is chosen at 6 us and issued at 60;
    /// 2000 comes at 8 and 6000 at 55, and the run that issues 5000 takes 6000 (ahead of
    /// the head at 5008; `bfq_choose_req`), then 2000 once 6000 is issued at 92. Logged at
    /// its issue, ours' choice of 5000 has 2000 queued beside it, and its run parks 2000
    /// before 6000; issued at 1000's completion (50 us), ours' next choice is 2000, the only
    /// one queued by then.
    #[test]
    fn bfqs_choice_parked_for_a_driver_tag_is_logged_when_made_and_issued_when_the_kernel_did() {
        const TRACE: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 W 1000 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 W 4096 () 1000 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 W 4096 () 1000 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000005: block_getrq: 7,0 W 5000 + 8 [fio]
 fio-11 [001] ...1. 1.000006: block_rq_insert: 7,0 W 4096 () 5000 + 8 be,0,4 [fio]
 fio-12 [001] ..... 1.000007: block_getrq: 7,0 W 2000 + 8 [fio]
 fio-12 [001] ...1. 1.000008: block_rq_insert: 7,0 W 4096 () 2000 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 W () 1000 + 8 be,0,4 [0]
 fio-13 [001] ..... 1.000054: block_getrq: 7,0 W 6000 + 8 [fio]
 fio-13 [001] ...1. 1.000055: block_rq_insert: 7,0 W 4096 () 6000 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000060: block_rq_issue: 7,0 W 4096 () 5000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000090: block_rq_complete: 7,0 W () 5000 + 8 be,0,4 [0]
 kworker/0:1H-58 [000] ..... 1.000092: block_rq_issue: 7,0 W 4096 () 6000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000120: block_rq_complete: 7,0 W () 6000 + 8 be,0,4 [0]
 kworker/0:1H-58 [000] ..... 1.000122: block_rq_issue: 7,0 W 4096 () 2000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000150: block_rq_complete: 7,0 W () 2000 + 8 be,0,4 [0]
";
        const LOG: &str = "\
 fio-10 [000] d..1. 1.000003: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 fio-10 [000] d..1. 1.000003: 7,0 1,0 m N bfq10A select_queue: returned this queue
 fio-10 [000] d..1. 1.000003: 7,0 1,0 m N bfq10A bfqq_served 24 secs
 fio-11 [001] d..1. 1.000006: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 fio-11 [001] d..1. 1.000006: 7,0 1,0 m N bfq10A select_queue: returned this queue
 fio-11 [001] d..1. 1.000006: 7,0 1,0 m N bfq10A bfqq_served 24 secs
 kworker/0:1H-58 [000] d..1. 1.000060: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 kworker/0:1H-58 [000] d..1. 1.000060: 7,0 1,0 m N bfq10A select_queue: returned this queue
 kworker/0:1H-58 [000] d..1. 1.000060: 7,0 1,0 m N bfq10A bfqq_served 24 secs
 kworker/0:1H-58 [000] d..1. 1.000092: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 kworker/0:1H-58 [000] d..1. 1.000092: 7,0 1,0 m N bfq10A select_queue: returned this queue
 kworker/0:1H-58 [000] d..1. 1.000092: 7,0 1,0 m N bfq10A bfqq_served 24 secs
";
        let (t, log) = (read(TRACE), read(LOG));
        let times = BfqLogTimes::read(&t, &log);
        let order = times.order.clone().expect("the log shows bfq's choices");
        let us = |u: u64| Some(Nanos(1_000_000_000 + u * 1000));
        assert_eq!(order.decided, [us(3), us(6), us(92), us(60)]);
        let mut m = meta("bfq");
        m.device.hw_queue_depth = Some(1);
        let (prios, groups) = (HashMap::new(), ContextGroups::default());
        let d = diff_with_log(&t, &m, &DiffOptions::default(), &times, &prios, &groups).unwrap();
        let decision = |queued: &[usize], chosen| Decision {
            queued: queued.to_vec(),
            chosen,
        };
        let kernel = [
            decision(&[0], 0),
            decision(&[1], 1),
            decision(&[2, 3], 3),
            decision(&[2], 2),
        ];
        assert_eq!(d.kernel, kernel);
        assert_eq!(d.ours, kernel);
    }
}
