//! Scheduler tags and depth limits (`bfq_limit_depth`, `bfqq_request_over_limit`,
//! `bfq_update_depths`, `bfqq_request_allocated` / `bfqq_request_freed` in Linux 6.9).
//!
//! Every request takes one of `nr_requests` scheduler tags before it reaches bfq and frees it
//! at completion ([`crate::tags`]). When the request is allocated, bfq gives it a shallow
//! depth: none for a sync read; for a sync write 75% of each tag-bitmap word (37.5% while a
//! weight-raised queue is busy); for an async request 50% (18.75%). And if the queue the
//! process already has for that direction, or one of its parent groups, has more requests
//! allocated (from `bfq_init_rq` to completion: `entity->allocated`) than its weight's share
//! of that depth, the depth is 1: its further requests wait for a tag outside bfq, so a
//! queue that holds too many cannot take the tags its siblings need. A queue limited so
//! drains, empties and turns busy again (and may then preempt the queue in service).
//!
//! From Linux 6.17 (lib/sbitmap's `shallow_depth` made a count over the whole bitmap, not a
//! bit position in each word; `bfq_update_depths` fills `async_depths` from `nr_requests`) the
//! same fractions are of all `nr_requests` tags, and an over-limit queue's depth of 1 is one
//! tag in all, not one bit of each word: `whole_map_depths` (default off: 6.9's per-word
//! depths). The two differ only where words are small: with 8 tags (2-bit words) a sync write
//! may hold 4 tags by word (one bit of each of 4 words) and 6 by count. kernel-diff replays a
//! recording of 6.17 or later with it and `tag_sleepers` (docs/bfq.md, branch kfid42: bfq's
//! real choices over the corpus 21343 -> 21425 of 21765). It is not our default: Linux 6.18,
//! asked with two weighted groups under a backlog deeper than the tags (docs/bfq.md, "6.18's
//! depths under a deep backlog", branch kfid43), gives the heavier group more than ours with
//! both on does with one process per group (0.71-0.73 against 0.63; per word 0.73) and more
//! than per word with four (0.78-0.87 against 0.75; both on 0.83), and bfq's group-weight
//! test reads 0.69 for `/b` with both on (0.75 per word); neither starves it. Both functions
//! are 6.18's line by line. A driver that knows the allocation apart from the
//! insertion ([`Scheduler::allocate`](crate::Scheduler::allocate)) has the depth decided and
//! the tag taken at the allocation, the request held from bfq until its insertion (where
//! `allocated` starts counting); one whose task sleeps for its tag
//! ([`Scheduler::allocate_sleeping`](crate::Scheduler::allocate_sleeping)) has its depth
//! decided at the allocation's start and takes its tag only when the driver says its task
//! has it ([`Scheduler::tag_got`](crate::Scheduler::tag_got)): kernel-diff's replay starts
//! each allocation where bfq's log shows `bfq_limit_depth` and takes the tag at
//! `block_getrq`. With `nr_requests` lowered from 256 the kernel's map keeps 64-bit words,
//! where 6.9's per-word depths equal the whole-map counts: the default's 2-bit words for 8
//! tags are neither kernel's (a deviation kept because kernel-diff agrees more with it; in
//! them every shallow depth of 8 tags is one bit a word, 4 tags, whether a raised queue is
//! busy or not, so the moment a depth is decided changes nothing there).
//! `tag_bits` (default off) takes the same depths and keeps the tags by bit position as
//! 6.18's lib/sbitmap places them ([`crate::tags::TagBits`]: per-CPU hints, the words of the
//! depth the map was allocated with, `tag_map_depth`); it lowers kernel-diff's bfq agreement
//! (92.9 -> 90.0%, docs/bfq.md), so it is an option.
//! `tag_sleepers` (default off) wakes waiting requests as blk-mq wakes its tag sleepers (one
//! per freed tag, wait queues in turn, the woken one retrying at its own depth:
//! [`Bfq::admit_woken`]) instead of giving a freed tag to the oldest waiting request its
//! depth allows; with `whole_map_depths` it is what kernel-diff replays for 6.17+ (above).
//!
//! The share is taken from the top group down: at each level the limit is multiplied by the
//! entity's weight over its service tree's weight sum (entities active, idle or in service);
//! for the queue itself the sum also counts every higher class's tree, each class's sum
//! multiplied by 8 (`IOPRIO_BE_NR`) over the next lower one's. A level whose sum is 0 is
//! skipped; an entity not on a tree (not active) stops the test (no limit), as in the kernel.

use std::collections::VecDeque;

use crate::request::{CtxId, Op, Request};
use crate::tags::{self, Depth};

use super::{Bfq, IdMap, Tick};

/// How much a higher class's weight sum weighs over the next lower class's (`IOPRIO_BE_NR`).
const IOPRIO_BE_NR: u64 = 8;

/// The shallow depths in bits per tag-bitmap word (`bfqd->word_depths`, with
/// `full_depth_shift`), set by `bfq_update_depths` for the scheduler tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WordDepths {
    /// Indexed by [a weight-raised queue is busy][the request is sync].
    pub bits: [[u32; 2]; 2],
    /// log2 of the bits in one word of the tag bitmap.
    pub shift: u32,
}

impl WordDepths {
    /// `bfq_update_depths` for a tag bitmap of `nr_requests` tags.
    pub fn new(nr_requests: u32) -> WordDepths {
        let shift = tags::word_shift(nr_requests);
        let word = 1u32 << shift;
        let at_least_1 = |d: u32| d.max(1);
        WordDepths {
            bits: [
                [at_least_1(word >> 1), at_least_1((word * 3) >> 2)],
                [at_least_1((word * 3) >> 4), at_least_1((word * 6) >> 4)],
            ],
            shift,
        }
    }
}

/// Requests waiting for a scheduler tag outside bfq, one line per process: a process
/// sleeping in tag allocation issues nothing else, so only the head of its line is
/// allocating, at the depth `bfq_limit_depth` gave it when it started (kept while it sleeps,
/// as `blk_mq_get_tag` keeps `data->shallow_depth`). A request allocated ahead of its
/// insertion ([`Scheduler::allocate`](crate::Scheduler::allocate)) allocates on its own
/// (the driver allocates it when its task does), and once it has its tag is held here
/// until its insertion.
#[derive(Clone, Debug, Default)]
pub(super) struct TagWait {
    lines: IdMap<CtxId, VecDeque<Request>>,
    /// Emptied lines kept for the next process that waits (at most [`SPARE_LINES`]), so that
    /// a line is not grown again from nothing each time a process waits anew.
    spare: Vec<VecDeque<Request>>,
    /// The heads, in the order they started allocating: (line or request, depth, number).
    /// One a waiting process or request allocated ahead: a scan and a removal cost the
    /// number waiting, as the scan for the oldest admissible head did in a map sorted by
    /// start. The number is the head's own (`seq` when it started), naming it in `sleepers`.
    heads: VecDeque<(Head, Depth, u64)>,
    /// With `tag_sleepers`: the heads asleep for a tag, by number, on blk-mq's wait queues
    /// ([`Sleepers`]); a head in `heads` not asleep here is trying for a tag.
    sleepers: Sleepers,
    /// Requests allocated ahead of their insertion that hold their tag: the request, its
    /// depth and its bit, by id.
    pub(super) held: IdMap<u64, (Request, Depth, Option<u32>)>,
    /// Requests allocated ahead and inserted while still waiting for their tag: they enter
    /// bfq when they get it.
    inserted_waiting: Vec<u64>,
    /// Requests allocated ahead whose task the driver says still sleeps for its tag
    /// ([`Bfq::allocate_sleeping`]), each with the time its depth was decided: they take
    /// none until [`Bfq::tag_got`].
    sleeping: Vec<(u64, Tick)>,
    /// Heads started so far.
    seq: u64,
    len: usize,
    /// The tags' generation and `seq` when no head could take a tag: until either changes
    /// (a tag taken or freed, a depth set, a new head) none can, and the heads are not
    /// looked at again.
    refused: Option<(u64, u64)>,
    /// Each process's plug clock (`blk_time_get_ns`, block/blk.h since 6.9): the time its
    /// plug cached at its first allocation since it last had nothing allocated ahead, or
    /// when it got a tag after sleeping for one (the sleep drops the cached time). bfq's
    /// stamps at an insertion read it.
    plug_clock: IdMap<CtxId, PlugClock>,
    /// The ids of the requests waiting (in `lines`, or alone in `heads`), so that
    /// [`Bfq::waits_for_tag`] is one look-up: it scanned every line, and the block layer asks
    /// it of every waiting request after each call, so 10^4 requests of one process waiting
    /// took 225 s to replay (cubic; issue 32, round 18).
    waiting: std::collections::HashSet<u64>,
    /// Requests that took their tag after waiting, ever ([`Bfq::tags_admitted`]).
    admitted: u64,
}

/// A head of [`TagWait`]: what is allocating a tag.
#[derive(Clone, Debug)]
enum Head {
    /// The first request of a process's line.
    Line(CtxId),
    /// A request allocated ahead of its insertion.
    Alone(Request),
}

/// Emptied lines [`TagWait`] keeps for reuse.
const SPARE_LINES: usize = 16;

impl TagWait {
    /// Requests waiting for a tag, or holding one ahead of their insertion.
    pub fn len(&self) -> usize {
        self.len + self.held.len()
    }

    /// Whether a head may take a tag as far as the driver is concerned: not a request whose
    /// task the driver says still sleeps for its tag.
    fn awake(&self, h: &Head) -> bool {
        match h {
            Head::Alone(rq) => !self.sleeping.iter().any(|&(id, _)| id == rq.id.0),
            Head::Line(_) => true,
        }
    }
}

/// blk-mq's wait queues for a tag (`SBQ_WAIT_QUEUES`): heads asleep, by number, each queue
/// in the order its heads went to sleep (`prepare_to_wait_exclusive`).
#[derive(Clone, Debug, Default)]
pub(super) struct Sleepers {
    queues: [VecDeque<u64>; WAIT_QUEUES],
    /// The wait queue the next head to sleep takes (`hctx->wait_index`).
    wait_index: usize,
    /// The wait queue a wake-up looks at first (`sbq->wake_index`).
    wake_index: usize,
    /// Tags freed while a head slept, whose wake-up is still to be made.
    wakes: u32,
    /// Heads asleep, over all queues (`sbq->ws_active`).
    asleep: usize,
}

/// blk-mq's wait queues per tag bitmap (`SBQ_WAIT_QUEUES`).
const WAIT_QUEUES: usize = 8;

impl Sleepers {
    /// Whether head `n` is asleep.
    fn holds(&self, n: u64) -> bool {
        self.asleep > 0 && self.queues.iter().any(|q| q.contains(&n))
    }

    /// Head `n` goes to sleep on the next wait queue (`bt_wait_ptr`,
    /// `sbitmap_prepare_to_wait`).
    fn sleep(&mut self, n: u64) {
        self.queues[self.wait_index].push_back(n);
        self.wait_index = (self.wait_index + 1) % WAIT_QUEUES;
        self.asleep += 1;
    }

    /// A tag was freed: a wake-up is due if a head sleeps (`sbitmap_queue_wake_up` returns
    /// at once while `ws_active` is 0; with a wake batch of 1 every other free wakes one).
    fn freed(&mut self) {
        if self.asleep > usize::try_from(self.wakes).unwrap_or(usize::MAX) {
            self.wakes += 1;
        }
    }

    /// Make one due wake-up (`__sbitmap_queue_wake_up` with 1): the first head of the first
    /// non-empty wait queue from `wake_index`, which moves past it. False when none is due.
    fn wake(&mut self) -> bool {
        if self.wakes == 0 {
            return false;
        }
        self.wakes -= 1;
        for i in 0..WAIT_QUEUES {
            let at = (self.wake_index + i) % WAIT_QUEUES;
            if self.queues[at].pop_front().is_some() {
                self.wake_index = (at + 1) % WAIT_QUEUES;
                self.asleep -= 1;
                return true;
            }
        }
        self.wakes = 0;
        false
    }
}

/// A process's plug clock: the time its plug cached (`first`), and when and on which CPU
/// it last allocated a request.
#[derive(Clone, Copy, Debug)]
struct PlugClock {
    first: Tick,
    last: Tick,
    cpu: u32,
}

/// The longest a task allocating a request may take between its depth decision and its tag
/// without having slept for the tag (kernel-diff's replay takes its tasks the same way:
/// `block_bio_queue` and `block_getrq` are a few microseconds apart unless the task slept).
const TAG_SLEEP: Tick = 30_000;

impl Bfq {
    /// A request arrives: it waits for a tag behind its process's earlier ones, or starts
    /// allocating one now.
    pub(super) fn arrive(&mut self, rq: Request, t: Tick) {
        let ctx = rq.ctx;
        self.tag_wait.len += 1;
        self.tag_wait.waiting.insert(rq.id.0);
        let w = &mut self.tag_wait;
        let line = w
            .lines
            .entry(ctx)
            .or_insert_with(|| w.spare.pop().unwrap_or_default());
        line.push_back(rq);
        if line.len() == 1 {
            self.start_allocating(ctx);
        }
        self.admit_waiting(t);
    }

    /// The head of `ctx`'s line starts allocating a tag: its depth is decided now.
    fn start_allocating(&mut self, ctx: CtxId) {
        let depth = self.limit_depth(&self.tag_wait.lines[&ctx][0]);
        let w = &mut self.tag_wait;
        w.seq += 1;
        w.heads.push_back((Head::Line(ctx), depth, w.seq));
    }

    /// `rq` is allocated now, ahead of its insertion (`__blk_mq_alloc_requests`): its depth
    /// is decided now (`bfq_limit_depth`, from the state of now: before any sleep for a tag
    /// and before the submitter's plug is flushed), and it takes a tag now or waits for
    /// one; bfq sees it only at its insertion ([`Bfq::insert_allocated`]).
    pub(super) fn allocate(&mut self, rq: Request, t: Tick) {
        let depth = self.limit_depth(&rq);
        self.allocate_at(rq, depth, t);
    }

    /// [`Bfq::allocate`] at `depth`: `bfq_limit_depth`'s, or [`Depth::Full`] for a request
    /// its plug took from a batch of tags allocated at once, which `bfq_limit_depth` never
    /// sees ([`Scheduler::allocate_batched`](crate::Scheduler::allocate_batched)).
    pub(super) fn allocate_at(&mut self, rq: Request, depth: Depth, t: Tick) {
        let w = &mut self.tag_wait;
        w.seq += 1;
        w.len += 1;
        w.waiting.insert(rq.id.0);
        let id = rq.id.0;
        w.heads.push_back((Head::Alone(rq), depth, w.seq));
        self.admit_waiting_now(t, Some(id));
    }

    /// Whether request `id` waits for a scheduler tag outside bfq: in its process's line, or
    /// allocated ahead without one yet. A request that has its tag (in bfq, held until its
    /// insertion, dispatched) or that bfq never saw does not.
    pub(super) fn waits_for_tag(&self, id: u64) -> bool {
        self.tag_wait.waiting.contains(&id)
    }

    /// How many requests took their scheduler tag after waiting for it, ever: the block
    /// layer looks for that many among those it saw waiting
    /// ([`Scheduler::sched_tags_admitted`](crate::Scheduler::sched_tags_admitted)).
    pub(super) fn tags_admitted(&self) -> u64 {
        self.tag_wait.admitted
    }

    /// The plug clock of `ctx` at time `t` (`blk_time_get_ns` in the submitter's context):
    /// its cached time if it allocated ahead, else `t` (no plug modelled).
    pub(super) fn plug_clock(&self, ctx: CtxId, t: Tick) -> Tick {
        self.tag_wait
            .plug_clock
            .get(&ctx)
            .map_or(t, |c| c.first.min(t))
    }

    /// `ctx` was inserted: its plug is flushed once it has nothing allocated ahead left.
    pub(super) fn drop_plug_clock(&mut self, ctx: CtxId) {
        let w = &mut self.tag_wait;
        let ahead = w.held.values().any(|(r, _, _)| r.ctx == ctx)
            || w.heads
                .iter()
                .any(|(h, ..)| matches!(h, Head::Alone(r) if r.ctx == ctx));
        if !ahead {
            w.plug_clock.remove(&ctx);
        }
    }

    /// As [`Bfq::allocate`], for a request whose task sleeps for its tag until
    /// [`Bfq::tag_got`]: its depth is decided now, by `bfq_limit_depth` before
    /// `blk_mq_get_tag` sleeps, and kept (`data->shallow_depth`); its tag is taken then.
    pub(super) fn allocate_sleeping(&mut self, rq: Request, t: Tick) {
        self.tag_wait.sleeping.push((rq.id.0, t));
        self.allocate(rq, t);
    }

    /// The task allocating request `id` ([`Bfq::allocate_sleeping`]) got its tag in the
    /// driver's kernel now: the request takes one now if one its depth may take is free,
    /// else it waits for one as any other.
    pub(super) fn tag_got(&mut self, id: u64, t: Tick) {
        let w = &mut self.tag_wait;
        if let Some(i) = w.sleeping.iter().position(|&(s, _)| s == id) {
            let (_, decided) = w.sleeping.swap_remove(i);
            w.seq += 1;
            // A task that had its tag within a few microseconds of its depth decision did
            // not sleep: its plug keeps the time it cached first (`blk_time_get_ns`; only a
            // sleep drops it, `blk_plug_invalidate_ts`), as for a request allocated now.
            let awake = t.saturating_sub(decided) <= TAG_SLEEP;
            self.admit_waiting_now(t, awake.then_some(id));
        }
    }

    /// Request `id`, allocated ahead, is inserted now (`bfq_insert_requests`): it enters
    /// bfq now (`bfq_init_rq` counts it allocated to its queue from here) if it holds its
    /// tag, else as soon as it gets one.
    pub(super) fn insert_allocated(&mut self, id: u64, t: Tick) {
        match self.tag_wait.held.remove(&id) {
            Some((rq, depth, bit)) => self.insert_at(rq, depth, bit, t),
            None => self.tag_wait.inserted_waiting.push(id),
        }
    }

    /// Give tags to the waiting heads that may take one, oldest first; each request is
    /// allocated and inserted now (`bfq_init_rq` runs at insertion), and its process's next
    /// request starts allocating. With `tag_sleepers`, as blk-mq does instead
    /// ([`Bfq::admit_woken`]).
    pub(super) fn admit_waiting(&mut self, t: Tick) {
        self.admit_waiting_now(t, None);
    }

    /// [`Bfq::admit_waiting`], where request `awake` (if any) is allocating now without
    /// having slept for its tag: if it takes one now, its plug keeps the time it cached
    /// first ([`Bfq::admit_alone`]).
    fn admit_waiting_now(&mut self, t: Tick, awake: Option<u64>) {
        if self.cfg.tag_sleepers {
            return self.admit_woken(t, awake);
        }
        loop {
            let tags = &self.tags;
            let now = (tags.generation(), self.tag_wait.seq);
            if self.tag_wait.refused == Some(now) {
                return;
            }
            // With every tag held no depth may take one (`may_take` asks that first): the
            // heads are not walked.
            let w = &self.tag_wait;
            let at = if tags.may_take(Depth::Full) {
                w.heads
                    .iter()
                    .position(|(h, d, _)| w.awake(h) && tags.may_take(*d))
            } else {
                None
            };
            let Some(at) = at else {
                self.tag_wait.refused = Some(now);
                return;
            };
            self.admit_head(at, t, awake);
        }
    }

    /// blk-mq's tag allocation with its sleepers (`blk_mq_get_tag`, `sbitmap_queue_clear`,
    /// `sbitmap_queue_wake_up` in Linux 6.18): a head that starts allocating (or whose task
    /// the driver says has woken, [`Bfq::tag_got`]) tries once at its depth and, finding no
    /// tag, sleeps on the next of the 8 wait queues (`bt_wait_ptr`: the hardware queue's
    /// `wait_index`, advanced at each choice); each tag freed while a head sleeps wakes one
    /// (bfq sets a wake batch of 1: `blk_mq_set_min_shallow_depth(q, 1)`,
    /// `sbq_calc_wake_batch`), the first of the first non-empty wait queue from the
    /// sbitmap's `wake_index`, which then moves past that queue (`__sbitmap_queue_wake_up`);
    /// the woken head retries at its own depth (`data->shallow_depth`, kept over the sleep)
    /// and, finding none, sleeps again on the next wait queue. So a freed tag the woken head
    /// may not take stays free for whoever allocates next, while a head that could take it
    /// sleeps on. Deviation: the woken task retries at once (the kernel's runs after a
    /// wake-up latency, in which another allocation may take the tag).
    fn admit_woken(&mut self, t: Tick, awake: Option<u64>) {
        loop {
            let w = &self.tag_wait;
            let trying = w
                .heads
                .iter()
                .position(|(h, _, n)| w.awake(h) && !w.sleepers.holds(*n));
            if let Some(at) = trying {
                if self.tags.may_take(self.tag_wait.heads[at].1) {
                    self.admit_head(at, t, awake);
                } else {
                    let n = self.tag_wait.heads[at].2;
                    self.tag_wait.sleepers.sleep(n);
                }
                continue;
            }
            if !self.tag_wait.sleepers.wake() {
                return;
            }
        }
    }

    /// A tag was freed (`sbitmap_queue_clear`): with `tag_sleepers`, it wakes a sleeper at
    /// the next [`Bfq::admit_waiting`] if one sleeps now.
    pub(super) fn tag_freed(&mut self) {
        if self.cfg.tag_sleepers {
            self.tag_wait.sleepers.freed();
        }
    }

    /// The head at `at` takes its tag: its request is allocated, and inserted (a line's) or
    /// held until its insertion (one allocated ahead); its process's next request starts
    /// allocating.
    fn admit_head(&mut self, at: usize, t: Tick, awake: Option<u64>) {
        let (head, depth, _) = self.tag_wait.heads.remove(at).expect("found");
        let ctx = match head {
            Head::Line(ctx) => ctx,
            Head::Alone(rq) => {
                let now = awake == Some(rq.id.0);
                return self.admit_alone(rq, depth, now, t);
            }
        };
        let line = self
            .tag_wait
            .lines
            .get_mut(&ctx)
            .expect("a head has a line");
        let rq = line.pop_front().expect("a line has a head");
        let more = !line.is_empty();
        if !more {
            let w = &mut self.tag_wait;
            if let Some(empty) = w.lines.remove(&ctx) {
                if w.spare.len() < SPARE_LINES {
                    w.spare.push(empty);
                }
            }
        }
        self.tag_wait.len -= 1;
        self.tag_wait.waiting.remove(&rq.id.0);
        self.tag_wait.admitted += 1;
        let bit = self.tags.take_bit(depth, rq.cpu);
        self.insert_at(rq, depth, bit, t);
        if more {
            self.start_allocating(ctx);
        }
    }

    /// A request allocated ahead takes its tag: it enters bfq now if it was inserted while
    /// waiting, else it is held until its insertion. `awake`: its task allocates now without
    /// having slept for the tag ([`Bfq::admit_waiting_now`]).
    fn admit_alone(&mut self, rq: Request, depth: Depth, awake: bool, t: Tick) {
        let w = &mut self.tag_wait;
        w.len -= 1;
        w.waiting.remove(&rq.id.0);
        w.admitted += 1;
        // A task that slept for its tag reads the time anew. A plug is one task's, its
        // requests allocated back to back on one CPU: an allocation of the process on another
        // CPU or after a pause (another thread, an io_uring worker, while a request of its is
        // still allocated ahead) is another plug's, which reads the time anew too.
        let kept = w
            .plug_clock
            .get(&rq.ctx)
            .filter(|c| awake && c.cpu == rq.cpu && t - c.last <= TAG_SLEEP);
        let first = kept.map_or(t, |c| c.first);
        let clock = PlugClock {
            first,
            last: t,
            cpu: rq.cpu,
        };
        w.plug_clock.insert(rq.ctx, clock);
        let bit = self.tags.take_bit(depth, rq.cpu);
        let w = &mut self.tag_wait;
        match w.inserted_waiting.iter().position(|&id| id == rq.id.0) {
            Some(i) => {
                w.inserted_waiting.swap_remove(i);
                self.insert_at(rq, depth, bit, t);
            }
            None => {
                w.held.insert(rq.id.0, (rq, depth, bit));
            }
        }
    }

    /// `bfq_limit_depth`: the depth at which `rq`, being allocated now, may take a tag.
    /// Flushes get the full depth: blk-mq does not ask the scheduler for them.
    pub(super) fn limit_depth(&self, rq: &Request) -> Depth {
        let nr = self.cfg.nr_requests;
        let shift = self.word_depths.shift;
        let sync = rq.is_sync();
        if self.cfg.whole_map_depths || self.cfg.tag_bits {
            return self.limit_depth_whole_map(rq, nr, sync);
        }
        let (mut bits, limit) = match rq.op {
            Op::Flush => return Depth::Full,
            // A read is always sync (`op_is_sync`): the full depth.
            Op::Read => (None, nr),
            _ => {
                let raised = usize::from(self.wr_busy_queues > 0);
                let d = self.word_depths.bits[raised][usize::from(sync)];
                (Some(d), ((u64::from(nr) * u64::from(d)) >> shift) as u32)
            }
        };
        let bic = self.bics.get(&rq.ctx);
        let q = bic.and_then(|b| if sync { b.sync_q } else { b.async_q });
        if q.is_some_and(|q| self.request_over_limit(q, limit)) {
            bits = Some(1);
        }
        match bits {
            None => Depth::Full,
            Some(d) => Depth::Shallow(tags::shallow_tags(nr, shift, d)),
        }
    }

    /// `bfq_limit_depth` from Linux 6.17 on: sync reads may take any of the `nr` tags,
    /// other requests `async_depths[raised][sync]` of them (`bfq_update_depths`: a half,
    /// three quarters, 3/16 and 6/16 of `nr_requests`, at least 1), and a request of a queue
    /// over its share of that limit (`bfqq_request_over_limit`) one.
    fn limit_depth_whole_map(&self, rq: &Request, nr: u32, sync: bool) -> Depth {
        let mut limit = match rq.op {
            Op::Flush => return Depth::Full,
            Op::Read => nr,
            _ => {
                let raised = usize::from(self.wr_busy_queues > 0);
                let num = [[8u32, 12], [3, 6]][raised][usize::from(sync)];
                ((nr * num) >> 4).max(1)
            }
        };
        let bic = self.bics.get(&rq.ctx);
        let q = bic.and_then(|b| if sync { b.sync_q } else { b.async_q });
        if q.is_some_and(|q| self.request_over_limit(q, limit)) {
            limit = 1;
        }
        if limit < nr {
            Depth::Shallow(limit)
        } else {
            Depth::Full
        }
    }

    /// `bfqq_request_over_limit`: whether queue `q` or one of its parent groups holds at
    /// least its weight's share of `limit` allocated requests.
    pub(super) fn request_over_limit(&self, q: usize, limit: u32) -> bool {
        let ents = &self.wf.entities;
        // The queue and its parents up to the root: on the stack for a hierarchy of up to
        // `SHALLOW` levels (every one the group trees build in practice), else on the heap.
        const SHALLOW: usize = 8;
        let mut near = [0usize; SHALLOW];
        let mut deep = Vec::new();
        let mut levels = 0;
        let mut e = self.queues[q].eid;
        loop {
            if !ents[e].on_st {
                return false;
            }
            if levels < SHALLOW {
                near[levels] = e;
            } else {
                deep.push(e);
            }
            levels += 1;
            match self.wf.sds[ents[e].sd].owner {
                Some(parent) => e = parent,
                None => break,
            }
        }
        // From the top group down, each with its level (0: the queue).
        let top_down = deep
            .iter()
            .enumerate()
            .rev()
            .map(|(j, &e)| (SHALLOW + j, e))
            .chain(
                near[..levels.min(SHALLOW)]
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, &e)| (i, e)),
            );
        let mut limit = u64::from(limit);
        for (level, e) in top_down {
            let en = &ents[e];
            let trees = &self.wf.sds[en.sd].trees;
            let wsum = if level > 0 {
                trees[en.class].wsum
            } else {
                trees[..=en.class]
                    .iter()
                    .fold(0, |sum, t| sum * IOPRIO_BE_NR + t.wsum)
            };
            if wsum == 0 {
                continue;
            }
            limit = (limit * en.weight + wsum / 2) / wsum;
            if u64::from(en.allocated) >= limit {
                return true;
            }
        }
        false
    }

    /// `bfqq_request_allocated` (`up`) and `bfqq_request_freed`: one request more or less
    /// allocated to `q` and each of its parent groups.
    pub(super) fn count_allocated(&mut self, q: usize, up: bool) {
        let mut e = Some(self.queues[q].eid);
        while let Some(id) = e {
            let en = &mut self.wf.entities[id];
            en.allocated = if up {
                en.allocated + 1
            } else {
                en.allocated.saturating_sub(1)
            };
            e = self.wf.sds[en.sd].owner;
        }
    }
}
