//! The one interface every policy implements.

use crate::request::{CtxId, Request, RequestId};
use crate::time::Nanos;
use crate::tunable::TunableError;

/// What a scheduler answers when the driver asks for the next request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Send this request to the device now.
    Request(Request),
    /// Requests may be queued, but the policy keeps the device idle on purpose (anticipation,
    /// slice idling, a token bucket ...). The driver asks again at `until`, or earlier if an
    /// insert or a completion happens first. `until` is later than the `now` of the call: a
    /// driver asks again at once for a time already reached, and a policy that answers so
    /// again and again holds its driver at one instant ([`crate::harness::Harness`] refuses
    /// it).
    Idle {
        /// When to ask again at the latest.
        until: Nanos,
    },
    /// Nothing to dispatch now. The driver asks again after the next insert or completion.
    Empty,
}

/// How the request a [`Scheduler::merge_next`] starts from grew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrownBy {
    /// A bio merged into it (`blk_mq_sched_try_merge`), at its back or its front.
    Bio,
    /// A request merged into it at that request's insertion (`elv_attempt_insert_merge`),
    /// or it merged into another in that function's loop.
    Insertion,
}

/// Two queued requests merged into one ([`Scheduler::merge_next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestsMerged {
    /// The request that grew and stays queued (`attempt_merge`'s `req`).
    pub kept: RequestId,
    /// The request merged into it, no longer queued (`attempt_merge`'s `next`).
    pub gone: RequestId,
}

/// A block I/O scheduler as a sans-IO state machine.
///
/// The driver (simulator or real executor) owns the clock and the device and calls, for each
/// request, in this order:
///
/// 1. [`try_merge`](Scheduler::try_merge) (optional) then [`insert`](Scheduler::insert) when the
///    request arrives (or [`allocate`](Scheduler::allocate) when it is allocated and
///    [`insert_allocated`](Scheduler::insert_allocated) when it is inserted, later);
/// 2. [`dispatch`](Scheduler::dispatch) whenever the device has room, repeatedly until it answers
///    [`Dispatch::Idle`] or [`Dispatch::Empty`], and again at an `Idle` deadline;
/// 3. [`complete`](Scheduler::complete) when the device finishes the request.
///
/// [`exit`](Scheduler::exit) tells the policy that a context (process) has exited. Every
/// call takes `now`, which never decreases from one call to the next. A policy reads no
/// clock, starts no timer and does no I/O: timers are expressed as `Dispatch::Idle { until }`
/// and evaluated lazily against the `now` of the next call; a timer that must act at its own
/// time is reported by [`next_timer`](Scheduler::next_timer) and run by
/// [`fire_timer`](Scheduler::fire_timer) when the driver's clock reaches it.
pub trait Scheduler {
    /// The policy's name as `elevator list` prints it (e.g. `"deadline"`).
    fn name(&self) -> &'static str;

    /// Offer `rq` for merging into a request still queued (not dispatched). On success the
    /// policy has grown that request to cover `rq` and returns its id: the driver completes
    /// `rq` when that request completes, and never inserts `rq`. The default merges nothing.
    ///
    /// `max_sectors` is the largest request the merge may build: the device's limit, which
    /// the block layer derives from the queue's `max_sectors` and `max_segments` (the
    /// kernel's `ll_back_merge_fn` / `ll_front_merge_fn` refuse a merge past
    /// `blk_rq_get_max_sectors` or the segment limit). The policy picks the candidate, as the
    /// elevator's `request_merge` does; the limit is the device's, not the policy's.
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        let _ = (rq, max_sectors, now);
        None
    }

    /// The kernel's merge attempt for `bio` (`blk_mq_sched_bio_merge`, the elevator's
    /// `bio_merge`) ran and merged nothing, so the block layer does not offer it to
    /// [`try_merge`](Scheduler::try_merge) (a replay's request of its own): a policy whose
    /// attempt has side effects besides the merge applies them (bfq's early queue merge in
    /// `bfq_allow_bio_merge`). The default does nothing.
    fn bio_not_merged(&mut self, bio: &Request, now: Nanos) {
        let _ = (bio, now);
    }

    /// Right after [`try_merge`](Scheduler::try_merge) grew request `into`: merge it with
    /// the queued request that now continues it, as the kernel does after a merge (both
    /// through `attempt_merge`: same operation, I/O priority and cgroup, contiguous, at most
    /// `max_sectors` together). After a bio's merge ([`GrownBy::Bio`],
    /// `blk_mq_sched_try_merge`) once: a back merge is followed by `attempt_back_merge` (the
    /// request next in the policy's sort order, `elv_latter_request`, merges into `into`),
    /// a front merge by `attempt_front_merge` (`into` merges into the request before it,
    /// `elv_former_request`). After a request merged into `into` at its insertion
    /// ([`GrownBy::Insertion`], `elv_attempt_insert_merge`): `into` merges into the request
    /// that ends where it starts, and the block layer asks again for the one kept, as that
    /// function's loop does. The policy grows the one kept, drops the other from its queues
    /// (the elevator's `requests_merged`) and frees it (its tag included), and says which
    /// is which: the block layer moves the bios of the one gone onto the one kept. The
    /// default merges nothing.
    fn merge_next(
        &mut self,
        into: RequestId,
        grown: GrownBy,
        max_sectors: u32,
        now: Nanos,
    ) -> Option<RequestsMerged> {
        let _ = (into, grown, max_sectors, now);
        None
    }

    /// A new request arrives: allocated and inserted at once.
    fn insert(&mut self, rq: Request, now: Nanos);

    /// `rq` is allocated now and will be inserted later, by
    /// [`insert_allocated`](Scheduler::insert_allocated): blk-mq's two steps, the allocation
    /// (`__blk_mq_alloc_requests`: the policy's `limit_depth`, then a scheduler tag, or a
    /// sleep for one) and, after the submitter's plug is flushed, the insertion
    /// (`insert_requests`). A policy that keeps scheduler tags takes `rq` and returns `None`:
    /// it decides the depth now, gives it a tag now or when one it may take is freed, and
    /// keeps it out of its queues until its insertion. The default gives `rq` back: the
    /// policy sees a request at its insertion only, and the driver passes it to
    /// [`insert`](Scheduler::insert) then.
    fn allocate(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        let _ = now;
        Some(rq)
    }

    /// As [`allocate`](Scheduler::allocate), for a request whose allocating task sleeps for
    /// its tag until the driver calls [`tag_got`](Scheduler::tag_got): the kernel's
    /// `__blk_mq_alloc_requests` runs the policy's `limit_depth` before `blk_mq_get_tag`
    /// sleeps, so the depth is decided now, and the tag is taken no earlier than that call.
    /// The default allocates at once.
    fn allocate_sleeping(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        self.allocate(rq, now)
    }

    /// As [`allocate`](Scheduler::allocate), for a request its submitter's plug took from a
    /// batch of scheduler tags allocated at once: blk-mq allocates a plug's next requests
    /// together (`blk_mq_get_new_requests` with the plug's `nr_ios`,
    /// `__blk_mq_alloc_requests_batch`) when the first one's `limit_depth` set no shallow
    /// depth (`blk_mq_get_tags` refuses a batch under one), and the later requests, taken
    /// from the plug's cache (`blk_mq_get_cached_request`), never meet `limit_depth`: each
    /// may hold any free tag. The default allocates as [`allocate`](Scheduler::allocate).
    fn allocate_batched(&mut self, rq: Request, now: Nanos) -> Option<Request> {
        self.allocate(rq, now)
    }

    /// The task allocating request `id` ([`allocate_sleeping`](Scheduler::allocate_sleeping))
    /// got its tag now in the driver's kernel: the request takes one now if one it may take
    /// is free, else when one is. The default does nothing.
    fn tag_got(&mut self, id: RequestId, now: Nanos) {
        let _ = (id, now);
    }

    /// Request `id`, which [`allocate`](Scheduler::allocate) took, is inserted now: it enters
    /// the policy's queues now if it holds its tag, else when it gets one. The default does
    /// nothing (its `allocate` takes no request).
    fn insert_allocated(&mut self, id: RequestId, now: Nanos) {
        let _ = (id, now);
    }

    /// The device has room for one more request: what should it get? Each inserted request
    /// is handed out exactly once, with its id unchanged (the block layer panics naming the
    /// policy on a request dispatched twice or never given).
    fn dispatch(&mut self, now: Nanos) -> Dispatch;

    /// The device finished `rq` (as it was dispatched, grown by any merges) at `now`. A
    /// request merged into another ([`try_merge`](Scheduler::try_merge)) is never completed
    /// on its own: it completes with the one it joined.
    fn complete(&mut self, rq: &Request, now: Nanos);

    /// As [`complete`](Scheduler::complete), where the policy reads its clock for the
    /// completion at `clock`, before `now`, the time the completion reaches it. A kernel
    /// scheduler stamps a completion with the time it reads under its lock and its effects
    /// follow that lock's order: a replay of a kernel trace knows the order (`now`) and a
    /// bound on the stamp (`clock`). The default completes at `now`.
    fn complete_clocked(&mut self, rq: &Request, clock: Nanos, now: Nanos) {
        let _ = clock;
        self.complete(rq, now);
    }

    /// When a timer the policy armed itself fires, if one is armed: a kernel scheduler's
    /// timer that acts at its own time, whether or not the driver asks for a dispatch then
    /// (bfq's idle slice timer, an hrtimer armed at a completion by `bfq_arm_slice_timer`,
    /// whose `bfq_idle_slice_timer_body` expires the queue it idled for). A driver that asks
    /// for a dispatch whenever the device has room and at every `Idle` deadline needs
    /// nothing more; one that asks only where another system's queue ran (a kernel trace's
    /// replay) calls [`fire_timer`](Scheduler::fire_timer) at this time. Changed by every
    /// call. The default, `None`, arms none.
    fn next_timer(&self) -> Option<Nanos> {
        None
    }

    /// The time [`next_timer`](Scheduler::next_timer) gave is reached (`now`, at or past
    /// it): act as the timer's handler does. The default does nothing.
    fn fire_timer(&mut self, now: Nanos) {
        let _ = now;
    }

    /// Context `ctx` exited; it will issue nothing more. The default ignores it. An exit may
    /// end an `Idle` kept for that context, so the driver asks for a dispatch again after it.
    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        let _ = (ctx, now);
    }

    /// Requests inserted (or taken by [`allocate`](Scheduler::allocate)) and not yet
    /// dispatched. Drivers rely on it being exact: the block layer asks a policy holding
    /// nothing for no request in some paths, counts it in [`BlockLayer::queued`] and
    /// [`BlockLayer::is_idle`], and the harness ends a run only at 0.
    ///
    /// [`BlockLayer::queued`]: crate::block::BlockLayer::queued
    /// [`BlockLayer::is_idle`]: crate::block::BlockLayer::is_idle
    fn queued(&self) -> usize;

    /// The largest request, in sectors, this policy wants to be given. A driver splits a
    /// job's larger I/O into consecutive pieces of at most this size, inserts each piece as a
    /// request of its own, and completes the job's I/O when the last piece completes: what
    /// the block layer does with a bio larger than the queue's `max_sectors_kb`, and what
    /// Seastar's I/O queue does with requests above its maximum length. Drivers ask when each
    /// I/O is issued, so the limit may change during a run (latency-guard sizes its pieces
    /// from its write budget). The default, `None`, takes requests as they come.
    fn max_request_sectors(&self) -> Option<u32> {
        None
    }

    /// Whether a request goes straight to the device while it has room, as blk-mq issues
    /// without an elevator (`blk_mq_try_issue_directly` for `none`): then a request is queued
    /// here, and can be merged into, only while the device is full. With an elevator the
    /// kernel inserts every request and runs the queue asynchronously, so a burst of bios
    /// waits in the scheduler and merges. Default `false`.
    fn issues_directly(&self) -> bool {
        false
    }

    /// Whether the policy bounds the requests it holds itself: with blk-mq scheduler tags
    /// (`nr_requests`), as mq-deadline, kyber and bfq do ([`crate::tags`]), or above the
    /// queue, as dm-ioband's `io_limit` does. A policy that does not (the elevators before
    /// blk-mq) is bounded by the block layer's request list instead
    /// ([`crate::block::request_list`]). Default `false`.
    fn bounds_own_requests(&self) -> bool {
        false
    }

    /// For a policy that keeps blk-mq scheduler tags ([`crate::tags`]): whether request `id`,
    /// inserted, holds its tag (`Some(true)`) or still waits for one outside the policy's
    /// queues (`Some(false)`). Under an elevator the tag a request takes at its allocation is a
    /// scheduler tag (`__blk_mq_alloc_requests` with `RQF_SCHED_TAGS`), and the moment it has
    /// it is the request's `start_time_ns` (`blk_mq_rq_time_init`), which io.cost's
    /// `ioc_rqos_done` counts `rq_wait` to. The default, `None`, keeps no scheduler tags: a
    /// request's tag is the device's slot, taken at dispatch.
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        let _ = id;
        None
    }

    /// For a policy that keeps scheduler tags: how many requests that waited for one have
    /// been handed one so far ([`crate::tags::SchedTags::admitted`]), so the block layer looks
    /// for that many among the requests it saw waiting instead of asking
    /// [`Scheduler::holds_sched_tag`] of each after every call. The default, `None`: it asks
    /// of each.
    fn sched_tags_admitted(&self) -> Option<u64> {
        None
    }

    /// Change a tunable at run time, as writing to
    /// `/sys/block/<dev>/queue/iosched/<name>` would.
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError>;

    /// Start keeping notes of the policy's internal state changes, for diagnosis (bfq: its
    /// inject limit's history, which the kernel does not log; `kernel-diff --inject-history`).
    /// The default keeps none.
    fn keep_notes(&mut self) {}

    /// The notes kept since [`keep_notes`](Scheduler::keep_notes), each with the time it was
    /// taken, and forget them. The default has none.
    fn take_notes(&mut self) -> Vec<(Nanos, String)> {
        Vec::new()
    }
}

/// A pointer to a scheduler is that scheduler: every call goes through.
macro_rules! forward_scheduler {
    ($($ptr:tt)*) => {
        impl<S: Scheduler + ?Sized> Scheduler for $($ptr)* {
            fn name(&self) -> &'static str {
                (**self).name()
            }
            fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
                (**self).try_merge(rq, max_sectors, now)
            }
            fn merge_next(
                &mut self,
                into: RequestId,
                grown: GrownBy,
                max_sectors: u32,
                now: Nanos,
            ) -> Option<RequestsMerged> {
                (**self).merge_next(into, grown, max_sectors, now)
            }
            fn bio_not_merged(&mut self, bio: &Request, now: Nanos) {
                (**self).bio_not_merged(bio, now)
            }
            fn insert(&mut self, rq: Request, now: Nanos) {
                (**self).insert(rq, now)
            }
            fn allocate(&mut self, rq: Request, now: Nanos) -> Option<Request> {
                (**self).allocate(rq, now)
            }
            fn insert_allocated(&mut self, id: RequestId, now: Nanos) {
                (**self).insert_allocated(id, now)
            }
            fn allocate_sleeping(&mut self, rq: Request, now: Nanos) -> Option<Request> {
                (**self).allocate_sleeping(rq, now)
            }
            fn tag_got(&mut self, id: RequestId, now: Nanos) {
                (**self).tag_got(id, now)
            }
            fn allocate_batched(&mut self, rq: Request, now: Nanos) -> Option<Request> {
                (**self).allocate_batched(rq, now)
            }
            fn dispatch(&mut self, now: Nanos) -> Dispatch {
                (**self).dispatch(now)
            }
            fn complete(&mut self, rq: &Request, now: Nanos) {
                (**self).complete(rq, now)
            }
            fn complete_clocked(&mut self, rq: &Request, clock: Nanos, now: Nanos) {
                (**self).complete_clocked(rq, clock, now)
            }
            fn next_timer(&self) -> Option<Nanos> {
                (**self).next_timer()
            }
            fn fire_timer(&mut self, now: Nanos) {
                (**self).fire_timer(now)
            }
            fn exit(&mut self, ctx: CtxId, now: Nanos) {
                (**self).exit(ctx, now)
            }
            fn queued(&self) -> usize {
                (**self).queued()
            }
            fn max_request_sectors(&self) -> Option<u32> {
                (**self).max_request_sectors()
            }
            fn issues_directly(&self) -> bool {
                (**self).issues_directly()
            }
            fn bounds_own_requests(&self) -> bool {
                (**self).bounds_own_requests()
            }
            fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
                (**self).holds_sched_tag(id)
            }
            fn sched_tags_admitted(&self) -> Option<u64> {
                (**self).sched_tags_admitted()
            }
            fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
                (**self).set_tunable(name, value)
            }
            fn keep_notes(&mut self) {
                (**self).keep_notes()
            }
            fn take_notes(&mut self) -> Vec<(Nanos, String)> {
                (**self).take_notes()
            }
        }
    };
}

forward_scheduler!(&mut S);
forward_scheduler!(Box<S>);
