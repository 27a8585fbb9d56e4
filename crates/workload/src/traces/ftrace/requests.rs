//! The kernel's block events put together into requests: when each was created, entered the
//! scheduler, was dispatched and completed, what it was and whose, and the order of dispatch.
//!
//! The tracepoints carry no request identity, so requests are followed by their extents, as
//! blkparse does: `block_getrq` creates one from its first bio; `block_bio_backmerge` and
//! `block_bio_frontmerge` grow the request not yet dispatched that ends (starts) where the bio
//! starts (ends); `block_rq_insert` finds the created request of those extents, `block_rq_issue`
//! the inserted one (or, under `none`, which issues most requests without inserting them, the
//! created one); `block_rq_merge` removes the request merged away and grows the one ending
//! where it starts (`attempt_merge` only merges `next` into the request just before it);
//! `block_rq_requeue` puts an issued request back to be inserted or issued again;
//! `block_rq_complete` ends the issued request of those extents. A cache flush is issued as
//! the flush machinery's own request (`FF`, no sectors) for the empty preflush write that
//! asked for it, and completes at sector `u64::MAX`; it never passes through the scheduler.
//! When several requests have the same extents, the oldest of those whose rwbs and priority
//! are the event's is taken (each event prints its request's own: two processes reading
//! one block at two priorities), else the oldest of them all, and [`Assembly::ambiguous`]
//! counts it.
//!
//! Events are taken in time order (a stable sort: `trace_pipe` can hand one CPU's event out
//! a little before another CPU's earlier one); what cannot be matched (a trace started while
//! I/O was in flight, lost events) is counted in [`Assembly`], never guessed.

use std::collections::HashMap;
use std::path::Path;

use elevator_core::block::Bio;
use elevator_core::{CtxId, Nanos, Op};

use super::{
    BioAction, BioEvent, Dev, Dir, EventBody, FtraceEvent, FtraceReader, KyberEvent, RqAction,
    RqEvent, Rwbs, TracedPrio, MARK_FIO_ENDED, MARK_FIO_STARTS,
};
use crate::agreement::{self, Decision, QueueEvent};
use crate::input::InputError;

/// One request as the kernel handled it.
///
/// Times are the trace clock's. Which of them a request has tells its path: `created`
/// (`block_getrq`) always for one made while tracing; `inserted` when it went through the
/// scheduler (`none` issues most requests directly, without it); `issued` when it was
/// dispatched; `completed` when it finished; `merged_into` instead of `issued` when the
/// scheduler merged it into another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedRequest {
    /// Its index in [`KernelTrace::requests`] (creation order).
    pub index: usize,
    /// The device.
    pub dev: Dev,
    /// Its flags (from its first bio; the issue's when it was not seen created).
    pub rwbs: Rwbs,
    /// When its first bio was submitted (`block_bio_queue`), if seen.
    pub queued: Option<Nanos>,
    /// When the request was allocated for that bio (`block_getrq`).
    pub created: Option<Nanos>,
    /// When it entered the scheduler (`block_rq_insert`, the first one if it was requeued).
    pub inserted: Option<Nanos>,
    /// Where that insertion fired: the CPU and the task (the submitter, whose own queue run
    /// follows: `blk_mq_run_hw_queue` after `blk_mq_insert_request` or
    /// `blk_mq_insert_requests`).
    pub inserted_on: Option<TaskOnCpu>,
    /// First sector as it arrived: at its insertion, or at its issue when it was never
    /// inserted.
    pub sector: u64,
    /// Length in sectors as it arrived (bios merged while plugged included).
    pub sectors: u32,
    /// The process that created it (the submitter; a flusher thread for writeback).
    pub pid: u32,
    /// That process's command.
    pub comm: String,
    /// The CPU whose software queue it was staged in (blk-mq's `rq->mq_ctx`, the CPU it was
    /// allocated on): the `[CPU]` column of its `block_getrq`, which fires in the submitter's
    /// context just after the allocation; of its insertion or issue when it was not seen
    /// created.
    pub cpu: u32,
    /// The io_context it submitted in, named by its owner's pid ([`KernelTrace::requests`]'
    /// processes resolved through [`io_uring_owner`]): its own pid unless an io_uring thread.
    pub ctx: u32,
    /// Its I/O priority, when the kernel prints it.
    pub prio: Option<TracedPrio>,
    /// When it was dispatched to the driver (`block_rq_issue`; the last one if requeued).
    pub issued: Option<Nanos>,
    /// First sector when dispatched (a front merge in the scheduler moves it).
    pub issued_sector: u64,
    /// Length when dispatched (merges in the scheduler grow it).
    pub issued_sectors: u32,
    /// Its position in [`KernelTrace::dispatches`] (its first dispatch).
    pub dispatch_index: Option<usize>,
    /// When it completed.
    pub completed: Option<Nanos>,
    /// Where its completion event fired: the CPU and the task in whose context it ran
    /// (`ksoftirqd`, or whichever task the softirq interrupted).
    pub completed_on: Option<TaskOnCpu>,
    /// The completion's error (0: success).
    pub error: i32,
    /// The request it was merged into (`block_rq_merge`), which then carried its sectors.
    pub merged_into: Option<usize>,
    /// Bios merged into it after its first (while plugged or in the scheduler).
    pub bios_merged: u32,
    /// Of those, the ones merged while it was in the scheduler (after its insertion).
    pub sched_bio_merges: u32,
    /// Requests merged into it in the scheduler (`block_rq_merge`).
    pub rq_merges: u32,
    /// Times the driver gave it back.
    pub requeues: u32,
    /// A write of the flush machinery's (REQ_FUA on a device without FUA, or REQ_PREFLUSH
    /// with data): when it ended, after the post-flush its data's completion started. The
    /// trace prints its `block_rq_complete` twice, the data's ([`Self::completed`]) and then,
    /// with 0 sectors, the request's end (`blk_flush_complete_seq` at `REQ_FSEQ_DONE`,
    /// `blk_mq_end_request`), where its scheduler tag is put and the scheduler's
    /// `finish_request` called (`mq_flush_data_end_io` put only the driver tag). `None` for
    /// every other request.
    pub ended: Option<Nanos>,
}

/// The context an event fired in: its CPU and the task running there. Two events of one
/// context are ordered as they ran; a softirq that interrupted a task runs to its end before
/// the task goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskOnCpu {
    /// The CPU (the tracefs `[CPU]` column).
    pub cpu: u32,
    /// The task's pid.
    pub pid: u32,
}

impl TracedRequest {
    /// When it arrived at the scheduler: its insertion, or, for a request issued without one
    /// (`none`'s direct issue), its creation.
    pub fn arrival(&self) -> Option<Nanos> {
        self.inserted.or(self.created)
    }

    /// The scheduler's operation (`None` for rwbs `N`). An empty preflush write is the flush
    /// it asks for.
    pub fn op(&self) -> Option<Op> {
        if self.rwbs.preflush && self.sectors == 0 {
            return Some(Op::Flush);
        }
        self.rwbs.dir.op()
    }

    /// Synchronous as the kernel counts it (`op_is_sync`).
    pub fn is_sync(&self) -> bool {
        self.rwbs.is_sync()
    }

    /// Time from dispatch to completion: the device's service time.
    pub fn service(&self) -> Option<Nanos> {
        Some(Nanos(self.completed?.0.checked_sub(self.issued?.0)?))
    }

    /// The request as a bio to submit to our block layer at its arrival: context = its
    /// process's io_context ([`Self::ctx`]: an io_uring thread's is its owner's), its extents as it arrived, REQ_SYNC and REQ_META from rwbs, its priority (best effort
    /// 4, the kernel's default for a task of nice 0, when the trace shows class `none`),
    /// submitted at [`Self::arrival`]. `None` for what never reaches a scheduler: flushes.
    /// rwbs `N` with sectors is a write of zeroes, given as a discard (`scheduled_op`). rwbs does not show
    /// REQ_IDLE, so `idle_hint` is false (the kernel puts it on O_DIRECT writes).
    pub fn bio(&self) -> Option<Bio> {
        let op = scheduled_op(self.op(), self.rwbs.dir, self.sectors)?;
        let mut bio = Bio::new(CtxId(self.ctx), op, self.sector, self.sectors)
            .sync(self.rwbs.sync)
            .prio(self.prio.and_then(TracedPrio::io_prio).unwrap_or_default());
        bio.meta = self.rwbs.meta;
        bio.submitted = self.arrival();
        bio.cpu = self.cpu;
        Some(bio)
    }
}

/// The operation a request carries into the scheduler: none for a flush (`blk_insert_flush`
/// takes it around the scheduler); for rwbs `N` with sectors, a discard. On the recorder's
/// loop device `N` is `REQ_OP_WRITE_ZEROES` (`blk_fill_rwbs` has no letter for it; the loop
/// driver takes no zone or driver operations): `blkdev_issue_zeroout` from a hole punched in
/// the device (`blkdev_fallocate`; fio's mmap engine punches its whole mapping,
/// `MADV_REMOVE`, at every map), and `blk_mq_insert_request` gives it to the scheduler like
/// any request. Its data direction is a write (`op_is_write`: the operation is odd), as our
/// schedulers take a discard; like a discard it is neither split at `max_sectors_kb` (its
/// limit is `write_zeroes_max_bytes`) nor merged with reads and writes (`blk_rq_merge_ok`
/// wants the same operation); kyber puts it in `KYBER_OTHER`, ours in its discard domain,
/// the other domain of operations neither read nor write. Left out, each one shifted every
/// later decision of the replay by one (kfid57: 0.0-2.4% of decisions under all four
/// schedulers); as a write, ours split it into 2,560-sector pieces.
fn scheduled_op(op: Option<Op>, dir: Dir, sectors: u32) -> Option<Op> {
    match op {
        Some(Op::Flush) => None,
        Some(op) => Some(op),
        None => (dir == Dir::None && sectors > 0).then_some(Op::Discard),
    }
}

/// The task whose io_context an io_uring thread of command `comm` shares: io_uring's workers
/// (`create_io_worker`) and its SQPOLL thread are made by `create_io_thread`, which clones
/// with `CLONE_IO`, so `copy_io` shares the creator's io_context, and with it bfq's
/// `bfq_io_cq` (one per io_context and queue) and the bfq queues it holds. tracefs names such
/// a task by its command, `iou-wrk-CREATOR` or `iou-sqp-CREATOR` (`io_wq_worker` and
/// `io_sq_thread` name the creator's pid; an SQPOLL thread's workers are its own, so their
/// creator is the SQPOLL thread, whose creator is the ring's owner). `None` for any other
/// command, or one whose creator is not a number.
pub fn io_uring_owner(comm: &str) -> Option<u32> {
    comm.strip_prefix("iou-wrk-")
        .or_else(|| comm.strip_prefix("iou-sqp-"))
        .and_then(|owner| owner.parse().ok())
}

/// Each request's and scheduler merge's io_context: its process's, followed through
/// [`io_uring_owner`] as far as the trace names the creators (a worker of an SQPOLL thread
/// to the ring's owner); a creator the trace never shows is the context itself.
fn resolve_io_contexts(out: &mut KernelTrace) {
    let mut comms: HashMap<u32, String> = HashMap::new();
    for r in &out.requests {
        comms.entry(r.pid).or_insert_with(|| r.comm.clone());
    }
    for m in &out.sched_bios {
        comms.entry(m.pid).or_insert_with(|| m.comm.clone());
    }
    let resolve = |pid: u32, comm: &str| {
        let mut ctx = match io_uring_owner(comm) {
            Some(o) => o,
            None => return pid,
        };
        // A chain is two long (worker, SQPOLL thread, owner); the bound stops a cycle.
        for _ in 0..4 {
            match comms.get(&ctx).and_then(|c| io_uring_owner(c)) {
                Some(o) if o != ctx => ctx = o,
                _ => break,
            }
        }
        ctx
    };
    for r in &mut out.requests {
        r.ctx = resolve(r.pid, &r.comm);
    }
    for m in &mut out.sched_bios {
        m.ctx = resolve(m.pid, &m.comm);
    }
}

/// A bio the kernel merged into a request already in the scheduler (`block_bio_backmerge` or
/// `block_bio_frontmerge` into a queued request: `blk_mq_sched_try_merge` from the scheduler's
/// `bio_merge`), which a replay submits on its own at its time for the scheduler to merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedBio {
    /// When it was submitted (the merge event's time).
    pub time: Nanos,
    /// The submitting process.
    pub pid: u32,
    /// That process's command.
    pub comm: String,
    /// The CPU it was submitted on (the merge event's `[CPU]`): the software queue the
    /// merge looked in (`blk_mq_sched_bio_merge`, `kyber_bio_merge`).
    pub cpu: u32,
    /// The io_context it submitted in (as [`TracedRequest::ctx`]).
    pub ctx: u32,
    /// Its flags.
    pub rwbs: Rwbs,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// The request it was merged into (its index).
    pub host: usize,
    /// How many [`KernelTrace::queue_log`] events came before it.
    pub after: usize,
    /// A request merged at its insertion (`block_rq_merge` of a request never inserted:
    /// `blk_mq_sched_try_insert_merge`, which takes the request ending where it starts
    /// whichever queue and process it belongs to), not a bio.
    pub insert_merge: bool,
}

impl SchedBio {
    /// The bio to submit to our block layer: as [`TracedRequest::bio`], with `host`'s
    /// priority (a bio event does not print one). An insertion merge is submitted as a bio of
    /// `host`'s process: our block layer merges bios only, through the policy's `try_merge`
    /// (`bfq_bio_merge` merges only into the submitter's own queue), and has no insertion
    /// merge; so its own process's request setup (`bfq_init_rq`) is not replayed. It says it stands for an
    /// insertion merge (`Bio::insertion_merge`). `None` for a flush.
    pub fn bio(&self, host: &TracedRequest) -> Option<Bio> {
        let op = scheduled_op(self.rwbs.dir.op(), self.rwbs.dir, self.sectors)?;
        let ctx = if self.insert_merge {
            host.ctx
        } else {
            self.ctx
        };
        let mut bio = Bio::new(CtxId(ctx), op, self.sector, self.sectors)
            .sync(self.rwbs.sync)
            .prio(host.prio.and_then(TracedPrio::io_prio).unwrap_or_default());
        bio.meta = self.rwbs.meta;
        bio.submitted = Some(self.time);
        bio.cpu = self.cpu;
        bio.insertion_merge = self.insert_merge;
        Some(bio)
    }
}

/// One dispatch: a request handed to the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The request's index.
    pub request: usize,
    /// When.
    pub time: Nanos,
    /// The trace line of its `block_rq_issue`.
    pub line: usize,
    /// The CPU that issued it (the tracefs `[CPU]` column).
    pub cpu: u32,
    /// The task that issued it (the queue run's: the submitter's own, or kblockd's).
    pub pid: u32,
    /// That task is a kblockd worker (`kworker/CPU:NH`, the high-priority workqueue's, where
    /// `blk_mq_run_hw_queue(hctx, true)` queues a run: on the CPU that asked, the loop
    /// device having one hardware queue, `WORK_CPU_UNBOUND`).
    pub kblockd: bool,
}

/// What putting the requests together counted: what the trace held besides requests, and
/// what could not be matched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assembly {
    /// Event lines read.
    pub events: usize,
    /// Events the ring buffer lost (`[LOST N EVENTS]`). Anything may be unmatched after one.
    pub lost_events: u64,
    /// Events read but not used: other names, other devices, `blk` tracer actions.
    pub other_events: usize,
    /// Events that came out of time order and were sorted back.
    pub out_of_order: usize,
    /// `block_bio_queue` events.
    pub bios_queued: usize,
    /// `block_split` events.
    pub splits: usize,
    /// Inserts of no created request (a request created before the trace began).
    pub orphan_inserts: usize,
    /// Issues of no known request.
    pub orphan_issues: usize,
    /// Completions (and requeues) of no issued request.
    pub orphan_completions: usize,
    /// Bio or request merges into no known request.
    pub unmatched_merges: usize,
    /// Matches that had more than one candidate of the same extents (the oldest was taken).
    pub ambiguous: usize,
    /// Requeues.
    pub requeues: usize,
    /// Requests created or inserted but neither dispatched nor merged by the end.
    pub never_issued: usize,
    /// Requests dispatched but not completed by the end.
    pub never_completed: usize,
    /// Of `orphan_issues`, the cache flushes (`FF`, no sectors): the flush machinery issues
    /// its own flush request for a write with data and REQ_PREFLUSH (`blk_kick_flush`), which
    /// no `block_getrq` created; a whole trace has them.
    pub orphan_flush_issues: usize,
    /// Of `orphan_completions`, those of no sectors: ends of a flush sequence beyond the one
    /// matched (`blk_flush_complete_seq`), which whole traces of fsync-heavy jobs show.
    pub orphan_empty_completions: usize,
    /// The line of the first insert, issue, completion or merge counted above as matching
    /// no request (`orphan_*` but the flushes' and the empty completions, `unmatched_merges`),
    /// or of the first `[LOST N EVENTS]`.
    pub first_unmatched_line: Option<usize>,
    /// Event lines that repeat the line before them exactly (the same task, pid, CPU, time
    /// and event: a trace whose lines were written twice), each assembled as read. Not
    /// counted: completions (two requests of the same extents completed in the same
    /// microsecond print the same line) and kyber's throttled notes, which repeat in a
    /// recorded trace.
    pub duplicate_lines: usize,
    /// The line of the first of them.
    pub first_duplicate_line: Option<usize>,
    /// The trace has `elevator kernel-record`'s start mark ([`MARK_FIO_STARTS`]) and not
    /// its end mark ([`MARK_FIO_ENDED`]): it was cut before fio ended.
    pub cut_short: bool,
}

/// A trace's requests, dispatches and scheduler events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTrace {
    /// Every request, in creation order.
    pub requests: Vec<TracedRequest>,
    /// Every dispatch in order (a requeued request appears again when dispatched again).
    pub dispatches: Vec<Dispatch>,
    /// kyber's tracepoints, with their times.
    pub kyber: Vec<(Nanos, KyberEvent)>,
    /// The `blk` tracer's notes (bfq's log), with their times.
    pub messages: Vec<(Nanos, String)>,
    /// The process in whose context each of [`messages`](Self::messages) was logged (its
    /// line's task pid), in the same order.
    pub message_pids: Vec<u32>,
    /// The CPU each of [`messages`](Self::messages) was logged on, in the same order.
    pub message_cpus: Vec<u32>,
    /// The cgroup id each of [`messages`](Self::messages) carries, in the same order
    /// ([`EventBody::Message`]'s `cgroup`).
    pub message_cgroups: Vec<Option<u64>>,
    /// `trace_marker` lines, with their times.
    pub markers: Vec<(Nanos, String)>,
    /// The scheduler's queue as the events show it, in order: each insertion an arrival,
    /// each request merged away in the scheduler a departure, each dispatch (flushes, which
    /// bypass the scheduler, left out). [`agreement::decisions`] turns it into the decisions
    /// the kernel made.
    pub queue_log: Vec<QueueEvent>,
    /// The bios merged into requests already in the scheduler, in order.
    pub sched_bios: Vec<SchedBio>,
    /// What was counted on the way.
    pub stats: Assembly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Created (`block_getrq`), not yet inserted.
    Created,
    /// In the scheduler.
    Queued,
    /// Given back by the driver.
    Requeued,
    /// With the driver.
    Issued,
    /// Completed.
    Done,
    /// Merged into another.
    Merged,
}

struct Track {
    state: State,
    sector: u64,
    sectors: u32,
    dir: Dir,
}

impl Track {
    fn end(&self) -> u64 {
        self.sector.saturating_add(u64::from(self.sectors))
    }
}

#[derive(Default)]
struct Builder {
    out: KernelTrace,
    track: Vec<Track>,
    /// Requests not yet dispatched: created, queued or requeued.
    live: Vec<usize>,
    /// Requests with the driver.
    inflight: Vec<usize>,
    /// Each pid's last submitted bio: time, device, sector.
    last_bio: HashMap<u32, (Nanos, Dev, u64)>,
}

/// Is this an empty preflush: the flush machinery's business, not the scheduler's?
fn flush_only(rwbs: Rwbs, sectors: u32) -> bool {
    sectors == 0 && (rwbs.dir == Dir::Flush || rwbs.preflush)
}

impl Builder {
    fn new_request(
        &mut self,
        ev: &FtraceEvent,
        dev: Dev,
        rwbs: Rwbs,
        sector: u64,
        sectors: u32,
    ) -> usize {
        let index = self.out.requests.len();
        self.out.requests.push(TracedRequest {
            index,
            dev,
            rwbs,
            queued: None,
            created: None,
            inserted: None,
            inserted_on: None,
            sector,
            sectors,
            pid: ev.pid,
            comm: ev.task.clone(),
            cpu: ev.cpu,
            ctx: ev.pid,
            prio: None,
            issued: None,
            issued_sector: sector,
            issued_sectors: sectors,
            dispatch_index: None,
            completed: None,
            completed_on: None,
            error: 0,
            merged_into: None,
            bios_merged: 0,
            sched_bio_merges: 0,
            rq_merges: 0,
            requeues: 0,
            ended: None,
        });
        self.track.push(Track {
            state: State::Created,
            sector,
            sectors,
            dir: rwbs.dir,
        });
        index
    }

    /// A completion of 0 sectors that no request in flight takes: the end of a flush
    /// sequence's write ([`TracedRequest::ended`]) completed at that sector, the latest such
    /// not yet ended. Whether one took it.
    fn flush_sequence_ended(&mut self, ev: &FtraceEvent, e: &RqEvent) -> bool {
        if e.action != RqAction::Complete || e.sectors != 0 || flush_only(e.rwbs, e.sectors) {
            return false;
        }
        let ended = (0..self.out.requests.len()).rev().find(|&i| {
            let r = &self.out.requests[i];
            self.track[i].state == State::Done
                && r.dev == e.dev
                && (r.rwbs.fua || r.rwbs.preflush)
                && r.issued_sector == e.sector
                && r.ended.is_none()
        });
        match ended {
            Some(i) => {
                self.out.requests[i].ended = Some(ev.time);
                true
            }
            None => false,
        }
    }

    /// The oldest of `set` that `pick` accepts and whose flags and priority are the event's
    /// (`alike`), else the oldest `pick` accepts, noting an ambiguity among those taken from.
    /// Two requests of the same extents told apart by their rwbs or priority are not
    /// ambiguous: two processes reading the same block, one a real-time `RS` and one a
    /// best-effort `R`, each issue event names its own.
    fn pick_alike(
        &mut self,
        set: &[usize],
        pick: impl Fn(usize, &Track) -> bool,
        alike: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let all: Vec<usize> = set
            .iter()
            .copied()
            .filter(|&i| pick(i, &self.track[i]))
            .collect();
        let same_flags: Vec<usize> = all.iter().copied().filter(|&i| alike(i)).collect();
        let from = if same_flags.is_empty() {
            &all
        } else {
            &same_flags
        };
        if from.len() > 1 {
            self.out.stats.ambiguous += 1;
        }
        from.iter().copied().min()
    }

    /// The oldest of `set` that `pick` accepts, noting an ambiguity.
    fn pick(&mut self, set: &[usize], pick: impl Fn(usize, &Track) -> bool) -> Option<usize> {
        let mut found = set.iter().copied().filter(|&i| pick(i, &self.track[i]));
        let first = found.clone().min();
        if found.nth(1).is_some() {
            self.out.stats.ambiguous += 1;
        }
        first
    }

    fn remove(list: &mut Vec<usize>, i: usize) {
        if let Some(p) = list.iter().position(|&x| x == i) {
            list.remove(p);
        }
    }

    fn bio(&mut self, ev: &FtraceEvent, b: &BioEvent) {
        match b.action {
            BioAction::Queue => {
                self.out.stats.bios_queued += 1;
                self.last_bio.insert(ev.pid, (ev.time, b.dev, b.sector));
            }
            BioAction::GetRq => {
                let i = self.new_request(ev, b.dev, b.rwbs, b.sector, b.sectors);
                let r = &mut self.out.requests[i];
                r.created = Some(ev.time);
                if let Some(&(t, dev, sector)) = self.last_bio.get(&ev.pid) {
                    if dev == b.dev && sector == b.sector {
                        r.queued = Some(t);
                    }
                }
                self.live.push(i);
            }
            BioAction::BackMerge | BioAction::FrontMerge => {
                let back = b.action == BioAction::BackMerge;
                let end = b.sector.saturating_add(u64::from(b.sectors));
                let fits = |i: usize, t: &Track, reqs: &[TracedRequest]| {
                    reqs[i].dev == b.dev
                        && t.dir == b.rwbs.dir
                        && matches!(t.state, State::Created | State::Queued)
                        && if back {
                            t.end() == b.sector
                        } else {
                            t.sector == end
                        }
                };
                let reqs = &self.out.requests;
                let track = &self.track;
                let candidates: Vec<usize> = self
                    .live
                    .iter()
                    .copied()
                    .filter(|&i| fits(i, &track[i], reqs))
                    .collect();
                // A plugged request takes its own submitter's bios; the scheduler's take anyone's.
                let own: Vec<usize> = candidates
                    .iter()
                    .copied()
                    .filter(|&i| track[i].state == State::Created && reqs[i].pid == ev.pid)
                    .collect();
                let from = if own.is_empty() { &candidates } else { &own };
                if from.len() > 1 {
                    self.out.stats.ambiguous += 1;
                }
                let Some(&i) = from.iter().max() else {
                    self.out.stats.unmatched_merges += 1;
                    self.out.stats.first_unmatched_line.get_or_insert(ev.line);
                    return;
                };
                let t = &mut self.track[i];
                t.sectors = t.sectors.saturating_add(b.sectors);
                if !back {
                    t.sector = b.sector;
                }
                let queued = t.state == State::Queued;
                let r = &mut self.out.requests[i];
                r.bios_merged += 1;
                if queued {
                    r.sched_bio_merges += 1;
                    self.out.sched_bios.push(SchedBio {
                        time: ev.time,
                        pid: ev.pid,
                        comm: ev.task.clone(),
                        cpu: ev.cpu,
                        ctx: ev.pid,
                        rwbs: b.rwbs,
                        sector: b.sector,
                        sectors: b.sectors,
                        host: i,
                        after: self.out.queue_log.len(),
                        insert_merge: false,
                    });
                }
            }
        }
    }

    fn rq(&mut self, ev: &FtraceEvent, e: &RqEvent) {
        let same = |t: &Track, reqs: &[TracedRequest], i: usize| {
            reqs[i].dev == e.dev
                && t.dir == e.rwbs.dir
                && t.sector == e.sector
                && t.sectors == e.sectors
        };
        // The event's flags and priority are the request's (`blk_fill_rwbs` of its
        // `cmd_flags`, its `ioprio`); a request not yet given a priority (created, not
        // inserted) is alike in that.
        let alike = |reqs: &[TracedRequest], i: usize| {
            reqs[i].rwbs == e.rwbs && (reqs[i].prio.is_none() || reqs[i].prio == e.prio)
        };
        match e.action {
            RqAction::Insert => {
                let live = self.live.clone();
                let reqs = std::mem::take(&mut self.out.requests);
                let found = self
                    .pick_alike(
                        &live,
                        |i, t| t.state == State::Requeued && same(t, &reqs, i),
                        |i| alike(&reqs, i),
                    )
                    .or_else(|| {
                        self.pick_alike(
                            &live,
                            |i, t| t.state == State::Created && same(t, &reqs, i),
                            |i| alike(&reqs, i),
                        )
                    });
                self.out.requests = reqs;
                let i = match found {
                    Some(i) => i,
                    None => {
                        self.out.stats.orphan_inserts += 1;
                        self.out.stats.first_unmatched_line.get_or_insert(ev.line);
                        let i = self.new_request(ev, e.dev, e.rwbs, e.sector, e.sectors);
                        self.live.push(i);
                        i
                    }
                };
                self.track[i].state = State::Queued;
                self.out.queue_log.push(QueueEvent::Arrive(i));
                let r = &mut self.out.requests[i];
                if r.inserted.is_none() {
                    r.inserted = Some(ev.time);
                    r.inserted_on = Some(TaskOnCpu {
                        cpu: ev.cpu,
                        pid: ev.pid,
                    });
                    r.sector = e.sector;
                    r.sectors = e.sectors;
                }
                if r.prio.is_none() {
                    r.prio = e.prio;
                }
            }
            RqAction::Issue => {
                let live = self.live.clone();
                let reqs = std::mem::take(&mut self.out.requests);
                let found = if flush_only(e.rwbs, e.sectors) {
                    self.pick(&live, |i, t| {
                        t.state == State::Created && flush_only(reqs[i].rwbs, t.sectors)
                    })
                } else {
                    let alike = |i| alike(&reqs, i);
                    self.pick_alike(
                        &live,
                        |i, t| t.state == State::Queued && same(t, &reqs, i),
                        alike,
                    )
                    .or_else(|| {
                        self.pick_alike(
                            &live,
                            |i, t| t.state == State::Requeued && same(t, &reqs, i),
                            alike,
                        )
                    })
                    .or_else(|| {
                        self.pick_alike(
                            &live,
                            |i, t| t.state == State::Created && same(t, &reqs, i),
                            alike,
                        )
                    })
                };
                self.out.requests = reqs;
                let i = match found {
                    Some(i) => {
                        Self::remove(&mut self.live, i);
                        i
                    }
                    None => {
                        self.out.stats.orphan_issues += 1;
                        if flush_only(e.rwbs, e.sectors) {
                            self.out.stats.orphan_flush_issues += 1;
                        } else {
                            self.out.stats.first_unmatched_line.get_or_insert(ev.line);
                        }
                        self.new_request(ev, e.dev, e.rwbs, e.sector, e.sectors)
                    }
                };
                if !flush_only(e.rwbs, e.sectors) {
                    self.out.queue_log.push(QueueEvent::Dispatch(i));
                }
                self.track[i].state = State::Issued;
                self.inflight.push(i);
                let d = self.out.dispatches.len();
                self.out.dispatches.push(Dispatch {
                    request: i,
                    time: ev.time,
                    line: ev.line,
                    cpu: ev.cpu,
                    pid: ev.pid,
                    kblockd: ev.task.starts_with("kworker/") && ev.task.ends_with('H'),
                });
                let r = &mut self.out.requests[i];
                if r.inserted.is_none() && r.issued.is_none() {
                    r.sector = e.sector;
                    r.sectors = e.sectors;
                }
                r.issued = Some(ev.time);
                r.issued_sector = e.sector;
                r.issued_sectors = e.sectors;
                r.dispatch_index.get_or_insert(d);
                if r.prio.is_none() {
                    r.prio = e.prio;
                }
            }
            RqAction::Merge => {
                let live = self.live.clone();
                let reqs = std::mem::take(&mut self.out.requests);
                let next = self.pick(&live, |i, t| {
                    matches!(t.state, State::Created | State::Queued) && same(t, &reqs, i)
                });
                let into = next.and_then(|n| {
                    let before = |i: usize, t: &Track| {
                        i != n && reqs[i].dev == e.dev && t.dir == e.rwbs.dir && t.end() == e.sector
                    };
                    self.pick(&live, |i, t| t.state == State::Queued && before(i, t))
                        .or_else(|| {
                            self.pick(&live, |i, t| t.state == State::Created && before(i, t))
                        })
                });
                self.out.requests = reqs;
                let (Some(n), Some(into)) = (next, into) else {
                    self.out.stats.unmatched_merges += 1;
                    self.out.stats.first_unmatched_line.get_or_insert(ev.line);
                    return;
                };
                Self::remove(&mut self.live, n);
                if self.track[n].state == State::Created && self.track[into].state == State::Queued
                {
                    // Merged at its insertion (`blk_mq_sched_try_insert_merge`) into a request
                    // already in the scheduler: for a replay, a bio of that request.
                    self.out.sched_bios.push(SchedBio {
                        time: ev.time,
                        pid: self.out.requests[n].pid,
                        comm: self.out.requests[n].comm.clone(),
                        cpu: ev.cpu,
                        ctx: self.out.requests[n].pid,
                        rwbs: self.out.requests[n].rwbs,
                        sector: e.sector,
                        sectors: e.sectors,
                        host: into,
                        after: self.out.queue_log.len(),
                        insert_merge: true,
                    });
                }
                if self.track[n].state == State::Queued {
                    self.out.queue_log.push(QueueEvent::Leave(n));
                }
                self.track[n].state = State::Merged;
                self.track[into].sectors = self.track[into].sectors.saturating_add(e.sectors);
                self.out.requests[n].merged_into = Some(into);
                self.out.requests[into].rq_merges += 1;
            }
            RqAction::Requeue | RqAction::Complete | RqAction::Error => {
                let inflight = self.inflight.clone();
                let reqs = std::mem::take(&mut self.out.requests);
                let found = if flush_only(e.rwbs, e.sectors) {
                    self.pick(&inflight, |i, t| flush_only(reqs[i].rwbs, t.sectors))
                } else {
                    self.pick_alike(&inflight, |i, t| same(t, &reqs, i), |i| alike(&reqs, i))
                };
                self.out.requests = reqs;
                let Some(i) = found else {
                    if !self.flush_sequence_ended(ev, e) {
                        self.out.stats.orphan_completions += 1;
                        if e.sectors == 0 {
                            self.out.stats.orphan_empty_completions += 1;
                        } else {
                            self.out.stats.first_unmatched_line.get_or_insert(ev.line);
                        }
                    }
                    return;
                };
                Self::remove(&mut self.inflight, i);
                let r = &mut self.out.requests[i];
                if e.action == RqAction::Requeue {
                    r.requeues += 1;
                    self.out.stats.requeues += 1;
                    self.track[i].state = State::Requeued;
                    self.live.push(i);
                } else {
                    r.completed = Some(ev.time);
                    r.completed_on = Some(TaskOnCpu {
                        cpu: ev.cpu,
                        pid: ev.pid,
                    });
                    r.error = e.error.unwrap_or(0);
                    self.track[i].state = State::Done;
                }
            }
        }
    }
}

impl KernelTrace {
    /// Request `i`'s first dispatch (its `block_rq_issue`, [`TracedRequest::dispatch_index`]),
    /// if it was dispatched.
    pub fn first_dispatch(&self, i: usize) -> Option<&Dispatch> {
        self.requests
            .get(i)?
            .dispatch_index
            .and_then(|d| self.dispatches.get(d))
    }

    /// Put together the requests of `events` (for device `dev` only, if given), taking the
    /// events in time order. The first error among `events` is returned as it is.
    pub fn assemble<I>(events: I, dev: Option<Dev>) -> Result<KernelTrace, InputError>
    where
        I: IntoIterator<Item = Result<FtraceEvent, InputError>>,
    {
        let mut all = Vec::new();
        let mut latest = Nanos::ZERO;
        let mut b = Builder::default();
        for ev in events {
            let ev = ev?;
            if matches!(ev.body, EventBody::Lost { .. }) {
                all.push(ev);
                continue;
            }
            // Two requests of the same extents completed in the same microsecond print the
            // same line (a hot sector written twice: 13 corpus recordings), and kyber notes a
            // domain throttled at each failed token attempt: their repeats are events.
            let may_repeat = matches!(
                ev.body,
                EventBody::Rq(RqEvent {
                    action: RqAction::Complete,
                    ..
                }) | EventBody::Kyber(KyberEvent::Throttled { .. })
            );
            let repeats = |p: &FtraceEvent| {
                !may_repeat
                    && (p.time, p.cpu, p.pid, &p.task, &p.body)
                        == (ev.time, ev.cpu, ev.pid, &ev.task, &ev.body)
            };
            if all.last().is_some_and(repeats) {
                b.out.stats.duplicate_lines += 1;
                b.out.stats.first_duplicate_line.get_or_insert(ev.line);
            }
            if ev.time < latest {
                b.out.stats.out_of_order += 1;
            }
            latest = latest.max(ev.time);
            all.push(ev);
        }
        // A lost-events mark has no time: it stays after the event before it.
        let mut t = Nanos::ZERO;
        for ev in &mut all {
            if matches!(ev.body, EventBody::Lost { .. }) {
                ev.time = t;
            }
            t = ev.time;
        }
        all.sort_by_key(|e| e.time);
        b.out.stats.events = all.len();
        let wanted = |d: Dev| dev.is_none_or(|want| want == d);
        for ev in &all {
            match &ev.body {
                EventBody::Rq(e) if wanted(e.dev) => b.rq(ev, e),
                EventBody::Bio(e) if wanted(e.dev) => b.bio(ev, e),
                EventBody::Split { dev: d, .. } if wanted(*d) => b.out.stats.splits += 1,
                EventBody::Kyber(k) => {
                    let d = match k {
                        KyberEvent::Latency { dev, .. }
                        | KyberEvent::Adjust { dev, .. }
                        | KyberEvent::Throttled { dev, .. } => *dev,
                    };
                    if wanted(d) {
                        b.out.kyber.push((ev.time, k.clone()));
                    } else {
                        b.out.stats.other_events += 1;
                    }
                }
                EventBody::Message {
                    dev: d,
                    cgroup,
                    text,
                } if wanted(*d) => {
                    b.out.messages.push((ev.time, text.clone()));
                    b.out.message_cgroups.push(*cgroup);
                    b.out.message_pids.push(ev.pid);
                    b.out.message_cpus.push(ev.cpu);
                }
                EventBody::Marker(m) => b.out.markers.push((ev.time, m.clone())),
                EventBody::Lost { events, .. } => {
                    // Saturating: two marks of 2^64 - 1 wrapped to a small count.
                    b.out.stats.lost_events = b.out.stats.lost_events.saturating_add(*events);
                    b.out.stats.first_unmatched_line.get_or_insert(ev.line);
                }
                _ => b.out.stats.other_events += 1,
            }
        }
        b.out.stats.never_issued = b
            .live
            .iter()
            .filter(|&&i| b.track[i].state != State::Merged)
            .count();
        b.out.stats.never_completed = b.inflight.len();
        let marked = |mark: &str| b.out.markers.iter().any(|(_, m)| m == mark);
        b.out.stats.cut_short = marked(MARK_FIO_STARTS) && !marked(MARK_FIO_ENDED);
        resolve_io_contexts(&mut b.out);
        Ok(b.out)
    }

    /// Read and put together a trace file (`.gz` read through gzip); see [`Self::assemble`].
    pub fn read(path: &Path, dev: Option<Dev>) -> Result<KernelTrace, InputError> {
        KernelTrace::assemble(FtraceReader::open(path)?, dev)
    }

    /// The kernel's dispatch decisions: at each dispatch, the requests queued in the scheduler
    /// and the one it chose ([`agreement::decisions`] of [`Self::queue_log`]).
    pub fn decisions(&self) -> Vec<Decision> {
        agreement::decisions(&self.queue_log)
    }

    /// The requests that went through the scheduler or were dispatched, in order of arrival
    /// ([`TracedRequest::arrival`]; creation order among equal times): what a replay feeds a
    /// scheduler. Flushes, which the kernel's flush machinery sends around the scheduler, are
    /// left out.
    pub fn arrivals(&self) -> Vec<&TracedRequest> {
        let mut v: Vec<&TracedRequest> = self
            .requests
            .iter()
            .filter(|r| r.op() != Some(Op::Flush) && r.arrival().is_some())
            .filter(|r| r.inserted.is_some() || r.issued.is_some())
            .collect();
        v.sort_by_key(|r| (r.arrival(), r.index));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::lines::Lines;

    fn trace(text: &str) -> KernelTrace {
        let r = FtraceReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "t"));
        KernelTrace::assemble(r, None).unwrap()
    }

    /// mq-deadline: a batch of two random reads inserted, dispatched in sector order.
    const DEADLINE: &str = "\
 fio-10 [000] ..... 1.000001: block_bio_queue: 7,0 R 500 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_getrq: 7,0 R 500 + 8 [fio]
 fio-10 [000] ..... 1.000003: block_bio_queue: 7,0 R 100 + 8 [fio]
 fio-10 [000] ..... 1.000004: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000006: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000011: block_rq_issue: 7,0 R 4096 () 500 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 R () 500 + 8 be,0,4 [0]
";

    #[test]
    fn a_batch_is_inserted_then_dispatched_in_the_schedulers_order() {
        let t = trace(DEADLINE);
        assert_eq!(t.requests.len(), 2);
        let order: Vec<u64> = t
            .dispatches
            .iter()
            .map(|d| t.requests[d.request].sector)
            .collect();
        assert_eq!(order, [100, 500]);
        let r = &t.requests[0];
        assert_eq!((r.pid, r.comm.as_str()), (10, "fio"));
        assert_eq!(r.queued, Some(Nanos(1_000_001_000)));
        assert_eq!(r.created, Some(Nanos(1_000_002_000)));
        assert_eq!(r.arrival(), Some(Nanos(1_000_005_000)));
        assert_eq!(r.issued, Some(Nanos(1_000_011_000)));
        assert_eq!(r.service(), Some(Nanos(11_000)));
        assert_eq!(r.dispatch_index, Some(1));
        assert_eq!(r.op(), Some(Op::Read));
        let bio = r.bio().unwrap();
        assert_eq!(
            (bio.ctx, bio.op, bio.sector, bio.sectors),
            (CtxId(10), Op::Read, 500, 8)
        );
        assert_eq!(
            (bio.sync, bio.meta, bio.submitted),
            (false, false, Some(Nanos(1_000_005_000)))
        );
        assert_eq!(bio.prio, elevator_core::IoPrio::default());
        assert_eq!(
            t.stats,
            Assembly {
                events: 10,
                bios_queued: 2,
                ..Assembly::default()
            }
        );
        assert_eq!(
            t.arrivals().iter().map(|r| r.index).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(
            t.decisions(),
            [
                Decision {
                    queued: vec![0, 1],
                    chosen: 1
                },
                Decision {
                    queued: vec![0],
                    chosen: 0
                }
            ]
        );
    }

    #[test]
    fn plug_merges_scheduler_merges_and_request_merges_follow_the_extents() {
        let t = trace(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 WS 100 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_bio_backmerge: 7,0 WS 108 + 8 [fio]
 fio-10 [000] ...1. 1.000003: block_rq_insert: 7,0 WS 8192 () 100 + 16 be,0,4 [fio]
 fio-11 [001] ..... 1.000004: block_bio_frontmerge: 7,0 WS 92 + 8 [fio]
 fio-11 [001] ..... 1.000005: block_getrq: 7,0 WS 124 + 8 [fio]
 fio-11 [001] ..... 1.000006: block_bio_backmerge: 7,0 WS 116 + 8 [fio]
 fio-11 [001] ..... 1.000007: block_rq_merge: 7,0 WS 4096 () 124 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000010: block_rq_issue: 7,0 WS 20480 () 92 + 40 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 WS () 92 + 40 be,0,4 [0]
",
        );
        assert_eq!(t.requests.len(), 2);
        let (a, b) = (&t.requests[0], &t.requests[1]);
        assert_eq!((a.sector, a.sectors), (100, 16));
        assert_eq!((a.issued_sector, a.issued_sectors), (92, 40));
        assert_eq!((a.bios_merged, a.sched_bio_merges, a.rq_merges), (3, 2, 1));
        assert!(a.completed.is_some());
        assert_eq!(b.merged_into, Some(0));
        assert_eq!((b.pid, b.issued), (11, None));
        assert_eq!(t.stats.unmatched_merges, 0);
        assert_eq!(t.stats.never_issued, 0);
        // The two bios merged after the insertion are kept, for a replay to submit, and so is
        // the request merged at its insertion (124, never inserted); the bio merged while
        // plugged (108) is part of the inserted size.
        let sched: Vec<_> = t
            .sched_bios
            .iter()
            .map(|s| {
                (
                    s.time.0,
                    s.pid,
                    s.sector,
                    s.sectors,
                    s.host,
                    s.after,
                    s.insert_merge,
                )
            })
            .collect();
        assert_eq!(
            sched,
            [
                (1_000_004_000, 11, 92, 8, 0, 1, false),
                (1_000_006_000, 11, 116, 8, 0, 1, false),
                (1_000_007_000, 11, 124, 8, 0, 1, true)
            ]
        );
        // The insert-merged request never reached the queue: one arrival, one dispatch.
        assert_eq!(
            t.queue_log,
            [QueueEvent::Arrive(0), QueueEvent::Dispatch(0)]
        );
    }

    #[test]
    fn none_issues_directly_and_flushes_go_around_the_scheduler() {
        let t = trace(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 RS 0 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_rq_issue: 7,0 RS 4096 () 0 + 8 be,0,4 [fio]
 fio-12 [000] ..... 1.000003: block_bio_queue: 7,0 FWS 0 + 0 [fio]
 fio-12 [000] ..... 1.000004: block_getrq: 7,0 FWS 0 + 0 [fio]
 kworker/0:1H-58 [000] ..... 1.000005: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000006: block_rq_complete: 7,0 RS () 0 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000008: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
",
        );
        assert_eq!(t.requests.len(), 2);
        let (r, f) = (&t.requests[0], &t.requests[1]);
        assert_eq!(
            (r.inserted, r.arrival()),
            (None, Some(Nanos(1_000_001_000)))
        );
        assert_eq!(r.completed, Some(Nanos(1_000_006_000)));
        assert_eq!(f.op(), Some(Op::Flush));
        assert_eq!(f.bio(), None);
        assert!(r.bio().unwrap().sync);
        assert_eq!((f.pid, f.completed), (12, Some(Nanos(1_000_008_000))));
        assert_eq!(t.arrivals().len(), 1);
        assert_eq!(t.stats.orphan_completions + t.stats.orphan_issues, 0);
    }

    /// A write of zeroes (rwbs `NS`, from fio's mmap engine punching its mapping) goes
    /// through the scheduler (`blk_mq_insert_request`), as the recorded insertion shows: the
    /// replay gives it to ours whole, as a discard (a write not split or merged), which it
    /// left out before kfid57 (and shifted every later decision by one).
    #[test]
    fn a_write_of_zeroes_reaches_the_scheduler_as_a_discard() {
        let t = trace(
            "\
 fio-10 [001] ..... 1.000001: block_bio_queue: 7,0 NS 0 + 49152 [fio]
 fio-10 [001] ..... 1.000002: block_getrq: 7,0 NS 0 + 49152 [fio]
 fio-10 [001] ...1. 1.000003: block_rq_insert: 7,0 NS 25165824 () 0 + 49152 be,0,4 [fio]
 kworker/1:2H-58 [001] ..... 1.000004: block_rq_issue: 7,0 NS 25165824 () 0 + 49152 be,0,4 [kworker/1:2H]
 ksoftirqd/0-14 [000] ..s.. 1.000006: block_rq_complete: 7,0 NS () 0 + 49152 be,0,4 [0]
",
        );
        let r = &t.requests[0];
        assert_eq!(r.op(), None);
        let bio = r.bio().expect("the scheduler's request");
        assert_eq!(
            (bio.op, bio.sector, bio.sectors, bio.sync),
            (Op::Discard, 0, 49152, true)
        );
    }

    #[test]
    fn a_fua_write_ends_after_its_post_flush_where_the_scheduler_learns_of_it() {
        // An O_DSYNC O_DIRECT write on a device without FUA (`blk_insert_flush`: data through
        // the scheduler, then a post-flush): its data completes, the flush machinery's `FF`
        // runs, then `blk_flush_complete_seq` at REQ_FSEQ_DONE ends the request (0 sectors),
        // which puts its scheduler tag and calls the scheduler's `finish_request`. An
        // fdatasync's empty preflush write ends the same way after its `FF`.
        let t = trace(
            "\
 fio-10 [001] ..... 1.000001: block_getrq: 7,0 WFS 32768 + 16 [fio]
 fio-10 [001] ...1. 1.000002: block_rq_insert: 7,0 WS 8192 () 32768 + 16 be,0,4 [fio]
 fio-10 [001] ..... 1.000003: block_rq_issue: 7,0 WS 8192 () 32768 + 16 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000014: block_rq_complete: 7,0 WS () 32768 + 16 be,0,4 [0]
 kworker/1:1H-58 [001] ..... 1.000018: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/1:1H]
 ksoftirqd/1-22 [001] ..s.. 1.000022: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
 ksoftirqd/1-22 [001] d.s1. 1.000023: block_rq_complete: 7,0 WS () 32768 + 0 be,0,4 [0]
 fio-10 [001] ..... 1.000027: block_getrq: 7,0 FWS 0 + 0 [fio]
 kworker/1:1H-58 [001] ..... 1.000031: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/1:1H]
 ksoftirqd/1-22 [001] ..s.. 1.000036: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
 ksoftirqd/1-22 [001] d.s1. 1.000037: block_rq_complete: 7,0 WS () 0 + 0 be,0,4 [0]
",
        );
        let (w, f) = (&t.requests[0], &t.requests[2]);
        assert!(w.rwbs.fua);
        assert_eq!(w.completed, Some(Nanos(1_000_014_000)));
        assert_eq!(w.ended, Some(Nanos(1_000_023_000)));
        assert_eq!(f.ended, Some(Nanos(1_000_037_000)));
        assert_eq!(t.requests[1].ended, None, "the post-flush itself");
        assert_eq!(t.stats.orphan_completions, 0);
    }

    /// Two processes read the same block (the held-out
    /// `asyncdepth-12-be-levels-writers-beside-rt-reader-nr64`, kfid45: a best-effort
    /// reader's `R` of 227368 + 8 waited in bfq while the real-time reader's `RS` of the
    /// same block was inserted, issued and completed; the best-effort one was issued 5.6 ms
    /// later). `block_rq_issue` and `block_rq_complete` print the request's own rwbs and
    /// priority (`blk_fill_rwbs` of `cmd_flags`, `ioprio`), so the issue is the real-time
    /// request's, not the oldest of those extents.
    #[test]
    fn requests_of_the_same_extents_are_told_apart_by_their_flags_and_priority() {
        let t = trace(
            "\
 fio-31 [000] ..... 1.000001: block_getrq: 7,0 R 227368 + 8 [fio]
 fio-31 [000] d..1. 1.000003: block_rq_insert: 7,0 R 4096 () 227368 + 8 be,0,4 [fio]
 fio-30 [000] ..... 1.007666: block_getrq: 7,0 RS 227368 + 8 [fio]
 fio-30 [000] d..1. 1.007667: block_rq_insert: 7,0 RS 4096 () 227368 + 8 rt,0,4 [fio]
 fio-30 [000] ..... 1.007673: block_rq_issue: 7,0 RS 4096 () 227368 + 8 rt,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.007681: block_rq_complete: 7,0 RS () 227368 + 8 rt,0,4 [0]
 fio-25 [000] ..... 1.013292: block_rq_issue: 7,0 R 4096 () 227368 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.013316: block_rq_complete: 7,0 R () 227368 + 8 be,0,4 [0]
",
        );
        assert_eq!(
            t.dispatches.iter().map(|d| d.request).collect::<Vec<_>>(),
            [1, 0]
        );
        assert_eq!(t.requests[0].issued, Some(Nanos(1_013_292_000)));
        assert_eq!(t.requests[1].completed, Some(Nanos(1_007_681_000)));
        assert_eq!(t.stats.ambiguous, 0);
    }

    #[test]
    fn a_requeued_request_is_dispatched_again_and_unknowns_are_counted() {
        let t = trace(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 0 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 0 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 0 + 8 be,0,4 [fio]
 kworker-5 [000] ..... 1.000004: block_rq_requeue: 7,0 R () 0 + 8 be,0,4 [0]
 kworker-5 [000] ...1. 1.000005: block_rq_insert: 7,0 R 4096 () 0 + 8 be,0,4 [kworker]
 kworker-5 [000] ..... 1.000006: block_rq_issue: 7,0 R 4096 () 0 + 8 be,0,4 [kworker]
 ksoftirqd/0-14 [000] ..s.. 1.000007: block_rq_complete: 7,0 R () 0 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000008: block_rq_complete: 7,0 R () 64 + 8 be,0,4 [0]
 fio-10 [000] ..... 1.000009: block_rq_issue: 7,0 W 4096 () 128 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000010: block_bio_backmerge: 7,0 W 512 + 8 [fio]
CPU:1 [LOST 7 EVENTS]
 fio-10 [000] ..... 1.000011: block_rq_insert: 7,1 W 4096 () 0 + 8 be,0,4 [fio]
",
        );
        assert_eq!(
            t.dispatches.iter().map(|d| d.request).collect::<Vec<_>>(),
            [0, 0, 1]
        );
        let r = &t.requests[0];
        assert_eq!(
            (r.requeues, r.inserted, r.dispatch_index),
            (1, Some(Nanos(1_000_002_000)), Some(0))
        );
        assert_eq!(r.issued, Some(Nanos(1_000_006_000)));
        let s = &t.stats;
        assert_eq!(
            (
                s.requeues,
                s.orphan_completions,
                s.orphan_issues,
                s.unmatched_merges
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (
                s.lost_events,
                s.orphan_inserts,
                s.never_issued,
                s.never_completed
            ),
            (7, 1, 1, 1)
        );
    }

    #[test]
    fn events_out_of_time_order_are_sorted_and_other_devices_left_out() {
        let t = KernelTrace::assemble(
            FtraceReader::new(Lines::from_bytes(
                "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 0 + 8 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 0 + 8 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000002: block_rq_issue: 7,1 R 4096 () 0 + 8 be,0,4 [0]
 ksoftirqd/1-22 [001] ..s.. 1.000004: block_rq_complete: 7,0 R () 0 + 8 be,0,4 [0]
"
                .as_bytes()
                .to_vec(),
                "t",
            )),
            Some(Dev { major: 7, minor: 0 }),
        )
        .unwrap();
        assert_eq!(t.stats.out_of_order, 1);
        assert_eq!(t.stats.other_events, 1);
        assert_eq!(t.requests.len(), 1);
        assert!(t.requests[0].completed.is_some());
    }

    #[test]
    fn a_bad_line_is_the_error() {
        let r = FtraceReader::new(Lines::from_bytes(
            b"fio-1 [000] ..... 1.0: block_getrq: 7,0 R 1 + [f]\n".to_vec(),
            "x.trace",
        ));
        let e = KernelTrace::assemble(r, None).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.line(), e.field.as_str()),
            ("x.trace", Some(1), "sectors")
        );
    }

    /// io_uring's workers (`iou-wrk-CREATOR`) and SQPOLL thread (`iou-sqp-CREATOR`) are made by
    /// `create_io_thread` with `CLONE_IO`: they submit in their owner's io_context, so bfq puts
    /// their requests in the owner's queue (the recordings' bfq log: one `bfqNS` queue for
    /// `fio-N` and all its `iou-wrk-N` workers).
    #[test]
    fn io_uring_workers_submit_in_their_owners_io_context() {
        let t = trace(
            "\
 iou-wrk-30-31 [000] ..... 1.000001: block_getrq: 7,0 RS 100 + 8 [iou-wrk-30]
 iou-wrk-30-31 [000] d..1. 1.000002: block_rq_insert: 7,0 RS 4096 () 100 + 8 be,0,2 [iou-wrk-30]
 iou-wrk-30-32 [000] ..... 1.000003: block_bio_backmerge: 7,0 RS 108 + 8 [iou-wrk-30]
 iou-sqp-30-33 [000] ..... 1.000004: block_getrq: 7,0 RS 900 + 8 [iou-sqp-30]
 iou-sqp-30-33 [000] d..1. 1.000005: block_rq_insert: 7,0 RS 4096 () 900 + 8 be,0,2 [iou-sqp-30]
 fio-40 [000] ..... 1.000006: block_getrq: 7,0 RS 500 + 8 [fio]
 fio-40 [000] d..1. 1.000007: block_rq_insert: 7,0 RS 4096 () 500 + 8 be,0,2 [fio]
 iou-wrk-33-34 [000] ..... 1.000008: block_getrq: 7,0 RS 2000 + 8 [iou-wrk-33]
 iou-wrk-33-34 [000] d..1. 1.000009: block_rq_insert: 7,0 RS 4096 () 2000 + 8 be,0,2 [iou-wrk-33]
",
        );
        let ctx = |r: &TracedRequest| r.bio().unwrap().ctx;
        assert_eq!(t.requests[0].pid, 31);
        assert_eq!(ctx(&t.requests[0]), CtxId(30));
        assert_eq!(ctx(&t.requests[1]), CtxId(30));
        assert_eq!(ctx(&t.requests[2]), CtxId(40));
        let m = &t.sched_bios[0];
        assert_eq!(m.pid, 32);
        assert_eq!(m.bio(&t.requests[0]).unwrap().ctx, CtxId(30));
        // A worker of the SQPOLL thread 33 (`iou-wrk-33`) shares the ring owner's context.
        assert_eq!(ctx(&t.requests[3]), CtxId(30));
        // A command that only looks like one names no creator.
        assert_eq!(io_uring_owner("iou-wrk-x"), None);
        assert_eq!(io_uring_owner("kworker/0:1H"), None);
    }
}
