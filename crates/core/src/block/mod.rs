//! # The block layer: one sans-IO queue between I/O issuers, a scheduler and a device
//!
//! Linux puts the same machinery around every elevator (blk-mq's `blk_mq_submit_bio` and
//! the elevator core, block/blk-mq.c, blk-merge.c, elevator.c): a bio becomes a request (or is
//! merged into a queued one), is split at the device's limits, is counted in
//! `/sys/block/<dev>/stat`, passes the `rq_qos` controllers, waits in the scheduler, is
//! dispatched while the device has room, and completes its bio (or, for a split bio, its part
//! of it). [`BlockLayer`] is that machinery, written once, and driven by three loops that
//! differ only in the device and the clock they plug in:
//!
//! - the simulator (`elevator-sim`): a virtual clock and a device model;
//! - the io_uring executor and the submission engine under the FUSE mount (`elevator-real`):
//!   the monotonic clock and a real file or block device;
//! - tests: a hand-driven clock and device.
//!
//! Like the schedulers it holds, it does no I/O and reads no clock: every call takes `now`.
//!
//! ## Driving it
//!
//! Inputs are `handle_*`, outputs `poll_*`:
//!
//! 1. [`handle_submit`](BlockLayer::handle_submit) when an issuer submits a [`Bio`]; it carries
//!    the driver's token `T`, returned when the bio completes.
//! 2. [`poll_dispatch`](BlockLayer::poll_dispatch) until it answers `None`: each `Some` is a
//!    request to start on the device now. The layer keeps at most
//!    [`Limits::queue_depth`] requests at the device.
//! 3. [`handle_complete`](BlockLayer::handle_complete) when the device finishes a request; the
//!    bios it completes are appended to the caller's vector as [`Done`]s.
//! 4. [`poll_timeout`](BlockLayer::poll_timeout): when to come back if nothing else happens
//!    (the scheduler's `Idle { until }`: anticipation, slice idling; its own timer,
//!    [`Scheduler::next_timer`]; or a controller's timer: a throttled bio's release,
//!    io.latency's window); then [`handle_timeout`](BlockLayer::handle_timeout). A
//!    discrete-event driver may instead follow the scheduler's `Idle` timer by generation
//!    ([`timer`](BlockLayer::timer) / [`handle_timer`](BlockLayer::handle_timer)) and the
//!    controllers' by [`qos_timeout`](BlockLayer::qos_timeout) /
//!    [`handle_qos_timeout`](BlockLayer::handle_qos_timeout): it asks for a dispatch whenever
//!    the device has room, so the scheduler's own timer acts at that `Idle` deadline.
//!
//! A driver that knows when each request was allocated and when it was inserted (a replay
//! of the kernel's trace: `block_getrq`, later `block_rq_insert` after a plug's flush) calls
//! [`handle_allocate`](BlockLayer::handle_allocate) at the first and
//! [`handle_insert`](BlockLayer::handle_insert) at the second, in place of `handle_submit`: a
//! policy with scheduler tags decides the depth and takes the tag at the allocation, and
//! holds the request from its queues until the insertion ([`Scheduler::allocate`]).
//!
//! After any `handle_*` the driver calls `poll_dispatch` again. [`handle_exit`](BlockLayer::handle_exit)
//! tells the scheduler that a process exited; [`handle_requeue`](BlockLayer::handle_requeue)
//! gives back a request the device refused.
//!
//! ```
//! use elevator_core::block::{Bio, BlockLayer, Done, Limits};
//! use elevator_core::{deadline::Deadline, CtxId, Nanos, Op};
//!
//! let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
//! let t0 = Nanos::ZERO;
//! // A process writes 8 KiB as two 4 KiB bios at once: the second back-merges into the first.
//! blk.handle_submit(Bio::new(CtxId(1), Op::Write, 0, 8).sync(true), "a", t0);
//! blk.handle_submit(Bio::new(CtxId(1), Op::Write, 8, 8).sync(true), "b", t0);
//! let rq = blk.poll_dispatch(t0).expect("one request of 16 sectors");
//! assert_eq!((rq.sector, rq.sectors), (0, 16));
//! assert_eq!(blk.poll_dispatch(t0), None);
//! let mut done: Vec<Done<&str>> = Vec::new();
//! blk.handle_complete(rq.id, true, Nanos::from_ms(1), &mut done);
//! assert_eq!(done.iter().map(|d| d.token).collect::<Vec<_>>(), ["a", "b"]);
//! assert_eq!(blk.stat().write.merges, 1);
//! assert_eq!(blk.stat().write.ios, 1);
//! ```
//!
//! ## What it follows and where it differs
//!
//! - Splitting (`bio_split_to_limits`): a read or write larger than the smaller of
//!   [`Limits::max_sectors`] and the scheduler's
//!   [`max_request_sectors`](crate::Scheduler::max_request_sectors) is cut into consecutive
//!   pieces, each a request; the bio completes with its last piece. Deviation: the pieces are
//!   inserted without being offered for merging (the kernel resubmits the remainder, which may
//!   merge).
//! - Merging (`blk_mq_sched_bio_merge` -> `elv_merge`): a bio is offered to the scheduler's
//!   [`try_merge`](crate::Scheduler::try_merge), which finds a back or front merge candidate
//!   among its queued requests and grows it; the layer then rides the bio on that request and
//!   counts the merge. [`Limits::nomerges`] is sysfs `nomerges`. Under a policy that
//!   [issues directly](crate::Scheduler::issues_directly) (none), a bio is offered only while
//!   the device is full, since otherwise the request it would merge into is already there.
//!   The size limit is the device's ([`Limits::request_sectors`]: `max_sectors` and
//!   `max_segments`, as `ll_back_merge_fn` checks them), passed to the policy with the bio;
//!   the policy only picks the candidate. A device that states no limit merges up to
//!   [`DEFAULT_MERGE_SECTORS`]. Deviation: a segment is one 4 KiB page (the kernel counts
//!   physically contiguous pages up to `max_segment_size` as one).
//! - Tags: the device's queue depth ([`Limits::queue_depth`]) bounds requests at the device;
//!   the scheduler tags (`nr_requests`) are kept by the policies that limit depth with them
//!   (mq-deadline, kyber, bfq: [`crate::tags`]); a request's start for the rq_qos hooks
//!   (`start_time_ns`) is when it got its scheduler tag under mq-deadline, kyber and bfq
//!   ([`Scheduler::holds_sched_tag`]). `handle_submit` allocates and inserts at
//!   once; `handle_allocate` and `handle_insert` take the kernel's two steps apart.
//! - Requeue: a request the device gave back goes ahead of the scheduler, as on the hardware
//!   queue's dispatch list; the scheduler is not told (Linux's `requeue_request` hook: bfq and
//!   mq-deadline use it to undo accounting; ours do not need it).
//! - `sync`: reads are always sync (`op_is_sync`), whatever the bio says.

mod host_tags;
pub mod observe;
mod plug;
pub mod qos;
pub mod request_list;
pub mod stat;
mod table;

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

pub use crate::counted::Counters;
use crate::request::{CtxId, GroupId, IoPrio, Op, Request, RequestId, DEFAULT_MERGE_SECTORS};
use crate::scheduler::{Dispatch, GrownBy, RequestsMerged, Scheduler};
use crate::time::Nanos;

pub use host_tags::DISK_HOST_TAGS;
pub use observe::{Event, Observer};
pub use plug::{BLK_MAX_REQUEST_COUNT, BLK_PLUG_FLUSH_SIZE, PLUG_THRESHOLD};
pub use qos::{Admit, BioEnd, QosChain, QosHook};
pub use request_list::BLKDEV_MAX_RQ;
use request_list::{Asleep, Class, RequestList};
pub use stat::{DirStat, DiskStat};
use table::Table;

/// sysfs `nomerges`: which merges the layer attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoMerges {
    /// 0: every merge the scheduler finds.
    #[default]
    All,
    /// 2: no merging at all.
    None,
}

/// The device's limits, as the request queue's `queue_limits` and its tag set give them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request, sectors (`max_sectors_kb` x 2): larger reads and writes are split,
    /// and no merge builds a larger one. `None`: the device states no limit (the
    /// scheduler's own, if any; merges stop at [`DEFAULT_MERGE_SECTORS`]).
    pub max_sectors: Option<u32>,
    /// Most segments in one request (`max_segments`), a segment being one 4 KiB page
    /// ([`PAGE_SECTORS`]): with 4 KiB bios from the page cache or O_DIRECT buffers whose
    /// pages are not physically contiguous, a request of `n` pages holds `n` segments, so the
    /// limit bounds a request at `max_segments` pages. `None`: no segment limit.
    pub max_segments: Option<u32>,
    /// Requests the device holds at once (the hardware queue depth).
    pub queue_depth: usize,
    /// Which merges are attempted.
    pub nomerges: NoMerges,
    /// sysfs `nr_requests` of a queue before blk-mq: requests allocated at most per class
    /// (sync, async) under a policy that keeps no scheduler tags of its own
    /// ([`Scheduler::bounds_own_requests`]); see [`request_list`]. `None`: unbounded.
    pub nr_requests: Option<u32>,
    /// Whether a queue run that finds every driver tag taken still takes one request from
    /// the scheduler, to wait ahead of it for the next free tag. blk-mq does so for a driver
    /// without a dispatch budget (loop, NVMe, virtio-blk: no `get_budget` in its
    /// `blk_mq_ops`): `__blk_mq_do_dispatch_sched` adds the request the scheduler returns to
    /// its list before `blk_mq_get_driver_tag` fails and stops, and `blk_mq_dispatch_rq_list`
    /// puts it on `hctx->dispatch`, which the next run issues before it asks the scheduler
    /// again (`__blk_mq_sched_dispatch_requests`). The scheduler's choice is then made at the
    /// run that found the tags taken, one tag earlier than its issue; a scheduler holding no
    /// request is not asked (`has_work`). A SCSI or SATA driver's
    /// budget (`scsi_mq_get_budget`) refuses first and the scheduler is not asked. `false`
    /// (the default): the scheduler is asked only when the device has room.
    pub dequeues_without_driver_tag: bool,
}

impl Limits {
    /// A device holding `queue_depth` requests, with no size limit and every merge.
    pub fn depth(queue_depth: usize) -> Limits {
        Limits {
            max_sectors: None,
            max_segments: None,
            queue_depth: queue_depth.max(1),
            nomerges: NoMerges::All,
            nr_requests: Some(BLKDEV_MAX_RQ),
            dequeues_without_driver_tag: false,
        }
    }

    /// These limits with [`dequeues_without_driver_tag`](Limits::dequeues_without_driver_tag).
    pub fn dequeues_without_driver_tag(self, on: bool) -> Limits {
        Limits {
            dequeues_without_driver_tag: on,
            ..self
        }
    }

    /// These limits with `nr_requests` (at least 1; `None`: unbounded).
    pub fn nr_requests(self, nr_requests: Option<u32>) -> Limits {
        Limits {
            nr_requests: nr_requests.map(|n| n.max(1)),
            ..self
        }
    }

    /// These limits with `max_sectors`.
    pub fn max_sectors(self, max_sectors: u32) -> Limits {
        Limits {
            max_sectors: Some(max_sectors.max(1)),
            ..self
        }
    }

    /// These limits with `max_segments`.
    pub fn max_segments(self, max_segments: u32) -> Limits {
        Limits {
            max_segments: Some(max_segments.max(1)),
            ..self
        }
    }

    /// These limits with `nomerges`.
    pub fn nomerges(self, nomerges: NoMerges) -> Limits {
        Limits { nomerges, ..self }
    }

    /// The largest request the device takes, sectors: the smaller of `max_sectors`, the
    /// segment limit in pages and the scheduler's own `sched` limit (the kernel's
    /// `blk_rq_get_max_sectors` with `bio_split_rw`'s segment count). `None` when no one
    /// states a limit.
    pub fn request_sectors(&self, sched: Option<u32>) -> Option<u32> {
        let segments = self.max_segments.map(|n| n.saturating_mul(PAGE_SECTORS));
        [self.max_sectors, segments, sched]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Sectors in one segment (a 4 KiB page).
pub const PAGE_SECTORS: u32 = 8;

/// One I/O as an issuer submits it: a `struct bio`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bio {
    /// The issuing process.
    pub ctx: CtxId,
    /// Its group (cgroup).
    pub group: GroupId,
    /// What it does.
    pub op: Op,
    /// The issuer waits for it (REQ_SYNC); reads are sync whatever this says.
    pub sync: bool,
    /// Filesystem metadata (REQ_META).
    pub meta: bool,
    /// REQ_IDLE: more follows from this issuer.
    pub idle_hint: bool,
    /// First sector.
    pub sector: u64,
    /// Length, sectors.
    pub sectors: u32,
    /// Its I/O priority.
    pub prio: IoPrio,
    /// When the issuer submitted it (earlier than the `now` of
    /// [`BlockLayer::handle_submit`] when it spent time on the host CPU first).
    pub submitted: Option<Nanos>,
    /// It starts a request of its own: the layer does not offer it to the scheduler's
    /// [`try_merge`](crate::Scheduler::try_merge). A replay sets it on a recorded kernel
    /// request that the kernel's merge attempts (`blk_attempt_plug_merge`, the scheduler's
    /// `bio_merge`) did not merge; later bios may still merge into its request (unlike
    /// REQ_NOMERGE, which the request inherits).
    pub own_request: bool,
    /// Under a policy that [issues directly](crate::Scheduler::issues_directly) (`none`): its
    /// request goes to the device at the next dispatch ahead of the policy's queued ones, as
    /// the submitter's `blk_mq_try_issue_directly` passes requests waiting in the software
    /// queue for a queue run (a plug flushed from `schedule()` inserts its requests and
    /// leaves the run to kblockd). A replay sets it on a request the kernel issued without
    /// inserting it. Ignored under other policies.
    pub issue_directly: bool,
    /// It stands for a request that merges at its insertion (`elv_attempt_insert_merge`; a
    /// replay submits such a request as a bio of its host's process): after it merges, the
    /// grown request merges on into the request ending where it starts, and so on
    /// ([`GrownBy::Insertion`]), not into the next one as after a bio's back merge.
    pub insertion_merge: bool,
    /// The CPU it was submitted on: its request's [`Request::cpu`] (the software queue it is
    /// staged in), and the software queue a merge looks in. 0 unless a replay says otherwise.
    pub cpu: u32,
}

impl Bio {
    /// A bio of `ctx` in the root group at the default priority, async unless a read.
    pub fn new(ctx: CtxId, op: Op, sector: u64, sectors: u32) -> Bio {
        Bio {
            ctx,
            group: GroupId::ROOT,
            op,
            sync: false,
            meta: false,
            idle_hint: false,
            sector,
            sectors,
            prio: IoPrio::default(),
            submitted: None,
            own_request: false,
            issue_directly: false,
            insertion_merge: false,
            cpu: 0,
        }
    }

    /// With REQ_SYNC set as given.
    pub fn sync(mut self, sync: bool) -> Bio {
        self.sync = sync;
        self
    }

    /// In `group`.
    pub fn group(mut self, group: GroupId) -> Bio {
        self.group = group;
        self
    }

    /// At priority `prio`.
    pub fn prio(mut self, prio: IoPrio) -> Bio {
        self.prio = prio;
        self
    }

    fn request(&self, now: Nanos) -> Request {
        Request {
            id: RequestId(0),
            ctx: self.ctx,
            group: self.group,
            op: self.op,
            sync: self.sync || self.op.is_read(),
            meta: self.meta,
            idle_hint: self.idle_hint,
            sector: self.sector,
            sectors: self.sectors,
            prio: self.prio,
            submitted: self.submitted.unwrap_or(now),
            cpu: self.cpu,
        }
    }
}

/// `BLKDEV_DEFAULT_RQ`: under a blk-mq elevator a queue gets twice its tag set's depth as
/// `nr_requests`, at most twice this ([`BlockLayer::nr_requests`]).
pub const BLKDEV_DEFAULT_RQ: usize = 128;

/// A bio (or a piece of a split bio) the device finished, as
/// [`BlockLayer::handle_complete`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done<T> {
    /// The token the driver submitted the bio with.
    pub token: T,
    /// What it did.
    pub op: Op,
    /// Its process.
    pub ctx: CtxId,
    /// This piece's first sector.
    pub sector: u64,
    /// This piece's length.
    pub sectors: u32,
    /// When the bio was submitted.
    pub submitted: Nanos,
    /// When the request carrying it was dispatched.
    pub dispatched: Nanos,
    /// When the request carrying it got its tag (blk-mq's `start_time_ns`, the start io.cost's
    /// `ioc_rqos_done` counts `rq_wait` to): under a policy that keeps scheduler tags
    /// (mq-deadline, kyber, bfq: [`Scheduler::holds_sched_tag`]) its scheduler tag, at insertion
    /// when one was free, else when the policy gave it one; under
    /// [`BlockLayer::set_host_tags`] its host tag, likewise; otherwise its dispatch (the tag
    /// is the device's slot). For a merged bio, the tag of the request it rode on, which may
    /// be earlier than its own submission.
    pub tagged: Nanos,
    /// Requests in the scheduler just after this piece was inserted (itself included) or
    /// merged.
    pub queued: u32,
    /// Requests at the device just after its request was dispatched (itself included).
    pub in_flight: u32,
    /// It rode on another bio's request (a merge).
    pub merged: bool,
    /// `Some(bytes of the whole bio)` when this piece completes its bio (always, unless the
    /// bio was split and other pieces are still out); `None` otherwise.
    pub whole: Option<u64>,
    /// Whether the bio succeeded: every piece of it so far was completed with success.
    pub ok: bool,
}

/// One bio's part of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<T> {
    /// The bio's token.
    pub token: T,
    /// First sector.
    pub sector: u64,
    /// Length, sectors.
    pub sectors: u32,
    submitted: Nanos,
    ctx: CtxId,
    group: GroupId,
    /// The bio's key at the rq_qos hooks.
    key: u64,
    queued: u32,
    merged: bool,
    /// For a piece of a split bio: the key of its bio in [`BlockLayer::splits`].
    split: Option<u64>,
}

impl<T> Segment<T> {
    /// The segment of bio `rq` (its request as built, `token` and rq_qos `key`) that starts
    /// a request with `queued` requests waiting; `split`: its split bio's key.
    fn new(rq: &Request, token: T, key: u64, queued: u32, split: Option<u64>) -> Segment<T> {
        Segment {
            token,
            sector: rq.sector,
            sectors: rq.sectors,
            submitted: rq.submitted,
            ctx: rq.ctx,
            group: rq.group,
            key,
            queued,
            merged: false,
            split,
        }
    }

    /// The segment of bio `rq` merged into another request with `queued` requests waiting.
    fn merged(rq: &Request, token: T, key: u64, queued: u32) -> Segment<T> {
        Segment {
            merged: true,
            ..Segment::new(rq, token, key, queued, None)
        }
    }
}

/// How a request allocated ahead of its insertion gets its scheduler tag
/// ([`BlockLayer::handle_allocate_as`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Now, at the depth the policy gives it ([`Scheduler::allocate`]).
    Now,
    /// Its task sleeps for it until the driver says ([`Scheduler::allocate_sleeping`]).
    Sleeping,
    /// From its plug's batch ([`Scheduler::allocate_batched`]).
    Batched,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Queued,
    InFlight,
}

struct Rq<T> {
    rq: Request,
    segs: SegList<T>,
    /// The request list's class it was allocated from, if the list bounds this policy.
    class: Option<Class>,
    started: Nanos,
    dispatched: Nanos,
    /// When it got a host tag ([`BlockLayer::set_host_tags`]; otherwise `None`, and the tag
    /// is the device's slot it is dispatched to).
    tagged: Option<Nanos>,
    /// Whether it holds one of the host tags.
    holds_tag: bool,
    /// When it got its scheduler tag, under a policy that keeps them
    /// ([`Scheduler::holds_sched_tag`]): the request's `start_time_ns` there.
    sched_tagged: Option<Nanos>,
    in_flight: u32,
    state: State,
}

/// A request's segments: one inline (the common case), more on the heap.
struct SegList<T> {
    first: Segment<T>,
    more: Vec<Segment<T>>,
}

impl<T> SegList<T> {
    fn iter(&self) -> impl Iterator<Item = &Segment<T>> {
        std::iter::once(&self.first).chain(self.more.iter())
    }
}

/// A split bio: pieces not yet completed, its size, and whether a piece failed.
struct Split {
    left: u32,
    bytes: u64,
    failed: bool,
}

/// A bio a hook of the [`QosChain`] asked to be asked about again ([`Admit::Wait`]).
struct Throttled<T> {
    bio: Bio,
    token: T,
    key: u64,
    hook: usize,
    until: Nanos,
}

/// A bio a hook keeps in its own queue ([`Admit::Hold`]) until it releases its key.
struct Held<T> {
    bio: Bio,
    token: T,
    hook: usize,
}

/// A bio of a process asleep for a request ([`request_list`]).
enum Waiting<T> {
    /// The bio that found no request: its request (or its pieces, at most `split` sectors
    /// each) is built and gets one when the process wakes, without a second merge attempt
    /// (`get_request_wait` returns a request to `__make_request`).
    Refused {
        rq: Request,
        token: T,
        key: u64,
        split: Option<u32>,
    },
    /// A bio the process would submit after it wakes: it takes the whole way then.
    Later { bio: Bio, token: T, key: u64 },
}

impl<T> Waiting<T> {
    fn ctx(&self) -> CtxId {
        match self {
            Waiting::Refused { rq, .. } => rq.ctx,
            Waiting::Later { bio, .. } => bio.ctx,
        }
    }

    /// The request list's class it needs a request of (`rw_is_sync`, as `Bio::request` sets
    /// `sync`).
    fn class(&self) -> Class {
        match self {
            Waiting::Refused { rq, .. } => Class::of(rq.sync),
            Waiting::Later { bio, .. } => Class::of(bio.sync || bio.op.is_read()),
        }
    }
}

/// What [`BlockLayer::build`] made of a bio.
enum Built {
    /// It rode on a queued request.
    Merged,
    /// It must be split into pieces of at most this many sectors.
    Split(Request, u32),
    /// One request of its own, with its id.
    One(Request),
}

/// A request entering the scheduler ([`BlockLayer::enter`]).
enum Entry {
    /// Given whole (into [`BlockLayer::direct`] when `true`).
    New(Request, bool),
    /// Taken at its allocation by the policy ([`Scheduler::allocate`]).
    Allocated(RequestId),
}

/// A pending scheduler switch ([`BlockLayer::switch_scheduler`]).
struct Switch<S, T> {
    next: S,
    held: VecDeque<(Bio, T)>,
}

/// The block layer. See the module documentation.
pub struct BlockLayer<S: Scheduler, T: Copy> {
    sched: S,
    limits: Limits,
    next_id: u64,
    requests: Table<Rq<T>>,
    splits: FxHashMap<u64, Split>,
    in_flight: usize,
    kick: bool,
    timer: Option<Nanos>,
    timer_gen: u64,
    /// How long after its deadline the scheduler's own timer fires.
    timer_latency: Nanos,
    /// When the scheduler's own timer is known to have fired (sorted): a replay's record of
    /// the kernel's timer ([`BlockLayer::set_timer_fires`]).
    timer_fires: Vec<Nanos>,
    requeued: VecDeque<u64>,
    /// Requests issued directly ([`Bio::issue_directly`]), never given to the policy.
    direct: VecDeque<u64>,
    counters: Counters,
    bios_completed: u64,
    stat: DiskStat,
    qos: QosChain,
    throttled: Vec<Throttled<T>>,
    held: FxHashMap<u64, Held<T>>,
    next_key: u64,
    switch: Option<Switch<S, T>>,
    observer: Option<Box<dyn Observer>>,
    list: Option<RequestList<Waiting<T>>>,
    tags: Option<host_tags::HostTags>,
    /// Requests allocated and not yet inserted ([`BlockLayer::handle_allocate`]): whether
    /// the policy gave each back (it takes it at its insertion) rather than holding it.
    allocated: FxHashMap<u64, bool>,
    /// The first bios' tokens of the requests merged into another after their insertion
    /// ([`BlockLayer::merge_next`]), kept only for a driver that asked
    /// ([`BlockLayer::keep_merged_away`]).
    merged_away: Option<Vec<T>>,
    /// The requests a run parked to wait for a driver tag
    /// ([`Limits::dequeues_without_driver_tag`]), kept only for a driver that asked
    /// ([`BlockLayer::keep_parked`]).
    parked: Option<Vec<RequestId>>,
    /// Requests inserted under a policy with scheduler tags that were still waiting for one
    /// when last asked ([`BlockLayer::stamp_sched_tags`]).
    untagged: Vec<u64>,
    /// The policy's [`Scheduler::sched_tags_admitted`] when `untagged` was last looked at.
    admitted_seen: u64,
    /// Open plugs, by submitter ([`BlockLayer::handle_plug`]).
    plugs: FxHashMap<CtxId, Vec<plug::Plugged<T>>>,
}

impl<S: Scheduler, T: Copy> BlockLayer<S, T> {
    /// A layer over `sched` for a device with `limits`.
    pub fn new(sched: S, limits: Limits) -> Self {
        BlockLayer {
            sched,
            limits,
            next_id: 0,
            requests: Table::default(),
            splits: FxHashMap::default(),
            in_flight: 0,
            kick: false,
            timer: None,
            timer_gen: 0,
            timer_latency: Nanos::ZERO,
            timer_fires: Vec::new(),
            requeued: VecDeque::new(),
            direct: VecDeque::new(),
            counters: Counters::default(),
            bios_completed: 0,
            stat: DiskStat::default(),
            qos: QosChain::default(),
            throttled: Vec::new(),
            held: FxHashMap::default(),
            next_key: 0,
            switch: None,
            observer: None,
            list: limits.nr_requests.map(RequestList::new),
            tags: None,
            allocated: FxHashMap::default(),
            merged_away: None,
            parked: None,
            untagged: Vec::new(),
            admitted_seen: 0,
            plugs: FxHashMap::default(),
        }
    }

    /// Keep the token of each request merged into another after its insertion (its first
    /// bio's), for [`take_merged_away`](Self::take_merged_away): a driver that follows each
    /// request through the policy's queue (a replay's queue log) learns it left.
    pub fn keep_merged_away(&mut self) {
        self.merged_away.get_or_insert_with(Vec::new);
    }

    /// The requests merged away since the last call, by their first bio's token (empty
    /// unless [`keep_merged_away`](Self::keep_merged_away) was called).
    pub fn take_merged_away(&mut self) -> Vec<T> {
        self.merged_away
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Keep each request a run parks to wait for a driver tag
    /// ([`Limits::dequeues_without_driver_tag`]), for [`take_parked`](Self::take_parked): a
    /// driver that logs the policy's choices (a replay comparing them with a kernel log that
    /// records the choice, not the issue) learns the choice when it is made.
    pub fn keep_parked(&mut self) {
        self.parked.get_or_insert_with(Vec::new);
    }

    /// The requests parked for a driver tag since the last call, in the order the policy
    /// chose them (empty unless [`keep_parked`](Self::keep_parked) was called). Each still
    /// holds its bios ([`segments`](Self::segments)) and goes to the device from
    /// [`poll_dispatch`](Self::poll_dispatch) once a tag is free.
    pub fn take_parked(&mut self) -> Vec<RequestId> {
        self.parked.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The request [`poll_dispatch`](Self::poll_dispatch) starts first once the device has
    /// room: the head of the requests parked or requeued, if any.
    pub fn next_requeued(&self) -> Option<RequestId> {
        self.requeued.front().map(|&id| RequestId(id))
    }

    /// The host tags `depth` requests (at least the device's queue depth) under a policy that
    /// [issues directly](crate::Scheduler::issues_directly) (`none`): a request gets a tag
    /// when it is inserted, or when a holder completes, in the order they asked, and waits
    /// for the device holding it. The rq_qos hooks see a request start when it got its tag
    /// (`start_time_ns`; io.cost's `rq_wait`). By default the tags are the device's queue:
    /// a request starts when it is dispatched. See `host_tags.rs`; set before any request.
    pub fn set_host_tags(&mut self, depth: usize) {
        self.tags = Some(host_tags::HostTags::new(depth, self.limits.queue_depth));
    }

    /// The queue's `nr_requests` as Linux v6.1 sets it, which blk-iolatency steps its depths
    /// by: without an elevator (a policy that [issues
    /// directly](crate::Scheduler::issues_directly), `none`) the tag set's depth
    /// (`blk_mq_init_allocated_queue`; `elevator_disable` restores it): the host's tags
    /// ([`BlockLayer::set_host_tags`]) or else the device's queue depth; under a blk-mq
    /// elevator twice that, at most twice [`BLKDEV_DEFAULT_RQ`] (`blk_mq_init_sched`); under
    /// a policy from before blk-mq, the request list's [`Limits::nr_requests`] (`BLKDEV_MAX_RQ`
    /// by default), or the blk-mq rule when there is no list.
    pub fn nr_requests(&self) -> usize {
        let tags = self
            .tags
            .as_ref()
            .map_or(self.limits.queue_depth, |t| t.depth());
        if self.sched.issues_directly() {
            tags
        } else if self.listed() {
            self.limits.nr_requests.map_or(tags, |n| n as usize)
        } else {
            2 * tags.min(BLKDEV_DEFAULT_RQ)
        }
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &S {
        &self.sched
    }

    /// The scheduler, to change a tunable; the layer asks for a dispatch at the next poll.
    pub fn scheduler_mut(&mut self) -> &mut S {
        self.kick = true;
        &mut self.sched
    }

    /// The device's limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Change the device's queue depth (at least 1).
    pub fn set_queue_depth(&mut self, depth: usize) {
        self.limits.queue_depth = depth.max(1);
        self.kick = true;
    }

    /// Add a controller at the end of the rq_qos chain.
    pub fn add_qos(&mut self, hook: Box<dyn QosHook>) {
        self.qos.push(hook);
    }

    /// Append every controller of `chain` (e.g. [`crate::qos::chain`]'s) to the rq_qos chain.
    pub fn set_qos(&mut self, chain: QosChain) {
        self.qos.append(chain);
    }

    /// The rq_qos chain.
    pub fn qos(&self) -> &QosChain {
        &self.qos
    }

    /// Report every request's life to `observer`.
    pub fn set_observer(&mut self, observer: Box<dyn Observer>) {
        self.observer = Some(observer);
    }

    /// Tell the observer (if any) that `ctx` is process `pid` named `name`.
    pub fn observe_process(&mut self, ctx: CtxId, pid: u32, name: &str, now: Nanos) {
        if let Some(o) = self.observer.as_mut() {
            o.process(ctx, pid, name, now);
        }
    }

    /// Whether an observer is set.
    pub fn observed(&self) -> bool {
        self.observer.is_some()
    }

    fn observe(&mut self, event: Event, rq: &Request, now: Nanos) {
        if let Some(o) = self.observer.as_mut() {
            o.event(event, rq, now);
        }
    }

    /// The `/sys/block/<dev>/stat` counters.
    pub fn stat(&self) -> &DiskStat {
        &self.stat
    }

    /// The conservation counters (requests, as the scheduler sees them).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Bios (and pieces of split ones) completed, merged ones included: what the issuers
    /// saw complete.
    pub fn bios_completed(&self) -> u64 {
        self.bios_completed
    }

    /// Requests at the device.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Requests waiting in the scheduler, requeued, held by a controller or by a switch,
    /// allocated and not yet inserted, or in a plug.
    pub fn queued(&self) -> usize {
        self.sched.queued()
            + self
                .allocated
                .values()
                .filter(|&&given_back| given_back)
                .count()
            + self.requeued.len()
            + self.direct.len()
            + self.throttled.len()
            + self.held.len()
            + self.switch.as_ref().map_or(0, |s| s.held.len())
            + self.list.as_ref().map_or(0, |l| l.pending())
            + self.plugged()
    }

    /// Whether nothing is queued or at the device.
    pub fn is_idle(&self) -> bool {
        self.in_flight == 0 && self.queued() == 0
    }

    /// The segments (bios, in the order they joined) a request carries, or `None` for an
    /// unknown request.
    pub fn segments(&self, id: RequestId) -> Option<impl Iterator<Item = &Segment<T>>> {
        self.requests.get(&id.0).map(|r| r.segs.iter())
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) if nothing else happens first:
    /// the scheduler's `Idle` deadline, its own timer ([`Scheduler::next_timer`]) and the
    /// rq_qos controllers'. Changed by every `handle_*` and `poll_dispatch`.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        [self.timer, self.own_timer(), self.qos_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// When the scheduler's own timer ([`Scheduler::next_timer`]) fires: its deadline plus
    /// the [timer latency](Self::set_timer_latency), or earlier, at the first recorded
    /// firing ([`set_timer_fires`](Self::set_timer_fires)) from the deadline on.
    fn own_timer(&self) -> Option<Nanos> {
        let deadline = self.sched.next_timer()?;
        let latest = deadline + self.timer_latency;
        let first = self.timer_fires.partition_point(|&f| f < deadline);
        Some(match self.timer_fires.get(first) {
            Some(&f) if f <= latest => f,
            _ => latest,
        })
    }

    /// The scheduler's own timer fires `latency` after its deadline: a replay of a kernel
    /// trace models the kernel's hrtimer, whose handler runs after the expiry interrupt and
    /// waits for the scheduler's lock (bfq's `bfq_idle_slice_timer_body` takes `bfqd->lock`,
    /// which an insertion may hold). Default zero.
    pub fn set_timer_latency(&mut self, latency: Nanos) {
        self.timer_latency = latency;
    }

    /// The times the device's timer is known to have fired (a replay of a kernel trace:
    /// bfq's one `idle_slice_timer` per device, seen where its handler expired a queue). The
    /// scheduler's own timer then fires at the first of them from its deadline on, when that
    /// comes within the [timer latency](Self::set_timer_latency), rather than a full latency
    /// after the deadline: the handler's delay is the kernel's measured one, not a model's.
    /// Default none.
    pub fn set_timer_fires(&mut self, mut fires: Vec<Nanos>) {
        fires.sort_unstable();
        self.timer_fires = fires;
    }

    /// When the rq_qos controllers next need [`handle_qos_timeout`](Self::handle_qos_timeout):
    /// the earliest of a waiting bio's time and the hooks' timers.
    pub fn qos_timeout(&self) -> Option<Nanos> {
        let throttled = self.throttled.iter().map(|t| t.until).min();
        match (throttled, self.qos.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time reached `now` for the rq_qos controllers: fire the hooks' due timers, ask again
    /// about the bios whose wait is over, and take what the hooks release.
    pub fn handle_qos_timeout(&mut self, now: Nanos) {
        if self.qos.is_empty() {
            return;
        }
        self.qos.handle_timeout(now);
        if self.throttled.iter().any(|t| now >= t.until) {
            self.release_throttled(now, false);
        }
        self.release_held(now);
    }

    /// The scheduler's armed idle timer and its generation: a new generation each time the
    /// scheduler asks for a new deadline. A discrete-event driver schedules one event per
    /// generation and calls [`handle_timer`](Self::handle_timer) with it.
    pub fn timer(&self) -> Option<(Nanos, u64)> {
        self.timer.map(|t| (t, self.timer_gen))
    }

    /// The scheduler's timer of generation `gen` fired; a stale generation is ignored.
    pub fn handle_timer(&mut self, gen: u64) {
        if self.timer.is_some() && self.timer_gen == gen {
            self.timer = None;
            self.kick = true;
        }
    }

    /// Time passed to `now`: fire what is due. The scheduler's own timer runs its handler
    /// ([`Scheduler::fire_timer`]) and, as the kernel's handlers schedule a queue run
    /// (`bfq_schedule_dispatch`), the next [`poll_dispatch`](Self::poll_dispatch) asks it.
    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.timer.is_some_and(|t| now >= t) {
            self.timer = None;
            self.kick = true;
        }
        if self.own_timer().is_some_and(|t| now >= t) {
            self.sched.fire_timer(now);
            self.kick = true;
        }
        self.handle_qos_timeout(now);
    }

    /// Process `ctx` exited: it will issue nothing more.
    pub fn handle_exit(&mut self, ctx: CtxId, now: Nanos) {
        // A process asleep for a request exits once its bios are in.
        if self.list.as_mut().is_some_and(|l| l.defer_exit(ctx)) {
            return;
        }
        self.sched.exit(ctx, now);
        // An exit may end the scheduler's idling for that context.
        self.kick = true;
    }

    /// A bio is submitted at `now`: split, merged or inserted (or held by a controller or a
    /// pending switch). `token` comes back in its [`Done`].
    pub fn handle_submit(&mut self, mut bio: Bio, token: T, now: Nanos) {
        // Its latency counts from here, however long a controller or a switch holds it.
        bio.submitted.get_or_insert(now);
        if let Some(sw) = self.switch.as_mut() {
            sw.held.push_back((bio, token));
            return;
        }
        if self.qos.is_empty() {
            self.queue(bio, token, 0, now);
            return;
        }
        self.next_key += 1;
        let key = self.next_key;
        self.offer(bio, token, key, 0, now);
        self.release_held(now);
    }

    /// Ask the hooks from `from` on about `bio`; queue it if they all let it through.
    fn offer(&mut self, bio: Bio, token: T, key: u64, from: usize, now: Nanos) {
        let mut rq = bio.request(now);
        rq.id = RequestId(key);
        match self.qos.throttle(from, &rq, now) {
            qos::Verdict::Pass => self.queue(bio, token, key, now),
            qos::Verdict::Wait(hook, until) => self.throttled.push(Throttled {
                bio,
                token,
                key,
                hook,
                until,
            }),
            qos::Verdict::Hold(hook) => {
                self.held.insert(key, Held { bio, token, hook });
            }
        }
    }

    /// Take the keys each hook releases and offer those bios to the hooks after it.
    fn release_held(&mut self, now: Nanos) {
        if self.held.is_empty() {
            return;
        }
        for i in 0..self.qos.len() {
            while let Some(key) = self.qos.poll_release(i, now) {
                if let Some(h) = self.held.remove(&key) {
                    debug_assert_eq!(h.hook, i, "a hook released a bio it did not hold");
                    self.offer(h.bio, h.token, key, i + 1, now);
                }
            }
        }
    }

    /// Offer held bios to their hooks again (all after a completion, else those due).
    fn release_throttled(&mut self, now: Nanos, all: bool) {
        let mut i = 0;
        while i < self.throttled.len() {
            if !all && now < self.throttled[i].until {
                i += 1;
                continue;
            }
            let t = &self.throttled[i];
            let mut rq = t.bio.request(now);
            rq.id = RequestId(t.key);
            match self.qos.throttle(t.hook, &rq, now) {
                qos::Verdict::Pass => {
                    let t = self.throttled.remove(i);
                    self.queue(t.bio, t.token, t.key, now);
                }
                qos::Verdict::Wait(hook, until) => {
                    let t = &mut self.throttled[i];
                    t.hook = hook;
                    t.until = until;
                    i += 1;
                }
                qos::Verdict::Hold(hook) => {
                    let t = self.throttled.remove(i);
                    self.held.insert(
                        t.key,
                        Held {
                            bio: t.bio,
                            token: t.token,
                            hook,
                        },
                    );
                }
            }
        }
    }

    /// Past the controllers: split, merge or insert; or keep it while its process sleeps
    /// for a request.
    fn queue(&mut self, bio: Bio, token: T, key: u64, now: Nanos) {
        if let Some(l) = self.list.as_mut().filter(|l| l.is_asleep(bio.ctx)) {
            let w = Waiting::Later { bio, token, key };
            l.sleep(w.ctx(), w.class(), w);
            return;
        }
        if self.plugs_bio(&bio) {
            self.plug_bio(bio, token, key, now);
            return;
        }
        self.queue_now(bio, token, key, now);
    }

    /// Split, merge or insert `bio` now; or keep it while its process sleeps for a request.
    fn queue_now(&mut self, bio: Bio, token: T, key: u64, now: Nanos) {
        if let Err(w) = self.try_queue(bio, token, key, now) {
            self.sleep_refused(w);
        }
    }

    /// The process of `w` found no request: it sleeps with `w` until one is freed.
    fn sleep_refused(&mut self, w: Waiting<T>) {
        self.list
            .as_mut()
            .expect("only the request list refuses")
            .sleep(w.ctx(), w.class(), w);
    }

    /// Whether the request list bounds the current policy (one that keeps no scheduler
    /// tags and does not issue directly).
    fn listed(&self) -> bool {
        self.list.is_some() && !self.sched.bounds_own_requests() && !self.sched.issues_directly()
    }

    /// `get_request` for `n` requests of `rq`'s class: the class, or `Err` if the process
    /// must sleep; `Ok(None)` when the list does not bound this policy.
    fn allocate(&mut self, rq: &Request, n: u32, now: Nanos) -> Result<Option<Class>, ()> {
        if !self.listed() {
            return Ok(None);
        }
        let class = Class::of(rq.sync);
        let l = self.list.as_mut().expect("listed");
        if l.allocate(rq.ctx, class, n, now) {
            Ok(Some(class))
        } else {
            Err(())
        }
    }

    /// Split, merge or insert `bio`; `Err` with its built request when its process must
    /// sleep for one.
    fn try_queue(&mut self, bio: Bio, token: T, key: u64, now: Nanos) -> Result<(), Waiting<T>> {
        let direct = bio.issue_directly && self.sched.issues_directly();
        match self.build(bio, token, key, now) {
            Built::Merged => Ok(()),
            Built::Split(rq, max) => {
                self.allocate_and_insert(rq, token, key, Some(max), direct, now)
            }
            Built::One(rq) => self.allocate_and_insert(rq, token, key, None, direct, now),
        }
    }

    /// `bio`'s request: to split at the device's limit, merged into a queued one, or one
    /// request of its own (with its id).
    fn build(&mut self, bio: Bio, token: T, key: u64, now: Nanos) -> Built {
        let own_request = bio.own_request;
        let grown = if bio.insertion_merge {
            GrownBy::Insertion
        } else {
            GrownBy::Bio
        };
        let mut rq = bio.request(now);
        let data = matches!(rq.op, Op::Read | Op::Write);
        let limit = self
            .limits
            .request_sectors(self.sched.max_request_sectors());
        if let Some(max) = limit.filter(|&m| data && m > 0 && rq.sectors > m) {
            return Built::Split(rq, max);
        }
        self.next_id += 1;
        rq.id = RequestId(self.next_id);
        self.observe(Event::Queue, &rq, now);
        // Under a policy that issues directly (none), the first queued requests that fit in
        // the device's free room would already be there: only those beyond are waiting, and
        // only then is there one to merge into.
        let waiting = !self.sched.issues_directly()
            || self.in_flight + self.sched.queued() > self.limits.queue_depth;
        let attempt = self.limits.nomerges != NoMerges::None && data && waiting;
        let merge = attempt && !own_request;
        if attempt && own_request {
            self.sched.bio_not_merged(&rq, now);
        }
        let room = limit.unwrap_or(DEFAULT_MERGE_SECTORS);
        if let Some(into) = merge
            .then(|| self.sched.try_merge(&rq, room, now))
            .flatten()
        {
            self.observe(Event::Merge, &rq, now);
            let queued = (self.counters.inserted - self.counters.dispatched) as u32;
            self.stat.merged(rq.op);
            let host = self
                .requests
                .get_mut(&into.0)
                .expect("the scheduler merged into a request the block layer does not know");
            debug_assert_eq!(
                host.state,
                State::Queued,
                "merged into a dispatched request"
            );
            // The layer's copy of the request is the scheduler's from its dispatch on
            // (`start`); until then only its segments matter.
            host.segs
                .more
                .push(Segment::merged(&rq, token, key, queued));
            self.counters.merged += 1;
            self.merge_next(into, grown, room, now);
            self.kick = true;
            Built::Merged
        } else {
            Built::One(rq)
        }
    }

    /// After a merge grew `into`: queued requests the policy merges with it
    /// ([`Scheduler::merge_next`]: once after a bio's merge, `blk_mq_sched_try_merge`'s
    /// `attempt_back_merge` / `attempt_front_merge`; after an insertion merge as long as one
    /// merges, `elv_attempt_insert_merge`'s loop). The bios of each request gone ride on the
    /// one kept from here, and its request is freed (`blk_mq_free_request`): given back to
    /// the request list, its host tag put.
    fn merge_next(&mut self, mut into: RequestId, grown: GrownBy, room: u32, now: Nanos) {
        while let Some(m) = self.sched.merge_next(into, grown, room, now) {
            self.requests_merged(m, now);
            if grown == GrownBy::Bio {
                break;
            }
            into = m.kept;
        }
    }

    /// Request `m.gone` merged into `m.kept` (`attempt_merge`).
    fn requests_merged(&mut self, m: RequestsMerged, now: Nanos) {
        let r = self
            .requests
            .remove(&m.gone.0)
            .expect("the scheduler merged away a request the block layer does not know");
        debug_assert_eq!(r.state, State::Queued, "merged away a dispatched request");
        // `blk_account_io_merge_request`; counted as merged, not inserted: never dispatched.
        self.stat.merged(r.rq.op);
        self.counters.inserted -= 1;
        self.counters.merged += 1;
        if let Some(gone) = self.merged_away.as_mut() {
            gone.push(r.segs.first.token);
        }
        let host = self
            .requests
            .get_mut(&m.kept.0)
            .expect("merged into a known request");
        host.segs.more.extend(r.segs.iter().map(|&seg| Segment {
            merged: true,
            ..seg
        }));
        if r.holds_tag {
            self.put_host_tag(now);
        }
        if let Some(class) = r.class {
            self.free_to_list(class, now);
        }
    }

    /// A request holding a host tag is freed: the tag goes to the first request waiting.
    fn put_host_tag(&mut self, now: Nanos) {
        let requests = &mut self.requests;
        if let Some(tags) = self.tags.as_mut() {
            tags.put(|id| match requests.get_mut(&id) {
                Some(w) if w.tagged.is_none() => {
                    w.tagged = Some(now);
                    w.holds_tag = true;
                    true
                }
                _ => false,
            });
        }
    }

    /// `freed_request`: a request of `class` goes back to the list, and may wake a sleeper.
    fn free_to_list(&mut self, class: Class, now: Nanos) {
        let woken = self.list.as_mut().and_then(|l| l.free(class, now));
        if let Some((ctx, asleep)) = woken {
            self.wake(ctx, asleep, now);
        }
    }

    /// Take a request from the list for `rq` (or for each of its pieces of at most `split`
    /// sectors) and insert it, into [`BlockLayer::direct`] when `direct`
    /// ([`Bio::issue_directly`]); `Err` when the process must sleep.
    fn allocate_and_insert(
        &mut self,
        rq: Request,
        token: T,
        key: u64,
        split: Option<u32>,
        direct: bool,
        now: Nanos,
    ) -> Result<(), Waiting<T>> {
        let n = split.map_or(1, |max| rq.sectors.div_ceil(max));
        let Ok(class) = self.allocate(&rq, n, now) else {
            return Err(Waiting::Refused {
                rq,
                token,
                key,
                split,
            });
        };
        match split {
            Some(max) => self.queue_split(rq, token, key, max, class, direct, now),
            None => {
                self.insert(rq, token, key, None, class, direct, now);
                self.kick = true;
            }
        }
        Ok(())
    }

    /// `ctx` woke with `asleep`: its first bio takes the request the wake-up freed, the rest
    /// go the whole way, until one finds no request again and it sleeps again.
    fn wake(&mut self, ctx: CtxId, mut asleep: Asleep<Waiting<T>>, now: Nanos) {
        while let Some(w) = asleep.bios.pop_front() {
            let refused = match w {
                // Never one issued directly: the list does not bound a policy that issues
                // directly.
                Waiting::Refused {
                    rq,
                    token,
                    key,
                    split,
                } => self.allocate_and_insert(rq, token, key, split, false, now),
                Waiting::Later { bio, token, key } => self.try_queue(bio, token, key, now),
            };
            if let Err(w) = refused {
                let class = w.class();
                asleep.bios.push_front(w);
                self.list
                    .as_mut()
                    .expect("only the request list refuses")
                    .sleep_again(ctx, class, asleep);
                return;
            }
        }
        if asleep.exited {
            self.sched.exit(ctx, now);
        }
        self.kick = true;
    }

    /// Insert `whole` as consecutive pieces of at most `max` sectors, each a request of its
    /// own; the bio completes with the last piece.
    #[allow(clippy::too_many_arguments)]
    fn queue_split(
        &mut self,
        whole: Request,
        token: T,
        key: u64,
        max: u32,
        class: Option<Class>,
        direct: bool,
        now: Nanos,
    ) {
        let first = self.next_id + 1;
        self.splits.insert(
            first,
            Split {
                left: whole.sectors.div_ceil(max),
                bytes: whole.bytes(),
                failed: false,
            },
        );
        for mut rq in whole.pieces(max) {
            self.next_id += 1;
            rq.id = RequestId(self.next_id);
            self.observe(Event::Queue, &rq, now);
            self.insert(rq, token, key, Some(first), class, direct, now);
        }
        self.kick = true;
    }

    /// Insert `rq` into the policy, or into [`BlockLayer::direct`] when `direct`.
    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        rq: Request,
        token: T,
        key: u64,
        split: Option<u64>,
        class: Option<Class>,
        direct: bool,
        now: Nanos,
    ) {
        self.record(&rq, token, key, split, class, now);
        self.enter(Entry::New(rq, direct), now);
    }

    /// Keep `rq` (its first segment the bio `token`) among the requests the layer knows.
    fn record(
        &mut self,
        rq: &Request,
        token: T,
        key: u64,
        split: Option<u64>,
        class: Option<Class>,
        now: Nanos,
    ) {
        let queued = (self.counters.inserted - self.counters.dispatched + 1) as u32;
        let seg = Segment::new(rq, token, key, queued, split);
        self.requests.insert(
            rq.id.0,
            Rq {
                rq: rq.clone(),
                segs: SegList {
                    first: seg,
                    more: Vec::new(),
                },
                class,
                started: now,
                dispatched: Nanos::ZERO,
                tagged: None,
                holds_tag: false,
                sched_tagged: None,
                in_flight: 0,
                state: State::Queued,
            },
        );
        if self.sched.issues_directly() {
            if let Some(tags) = self.tags.as_mut() {
                if tags.get(rq.id.0) {
                    let r = self.requests.get_mut(&rq.id.0).expect("just inserted");
                    r.tagged = Some(now);
                    r.holds_tag = true;
                }
            }
        }
    }

    /// The recorded request enters the scheduler (or [`BlockLayer::direct`]) now.
    fn enter(&mut self, entry: Entry, now: Nanos) {
        self.stat.started(now);
        match entry {
            Entry::New(rq, direct) => {
                self.observe(Event::Insert, &rq, now);
                if direct {
                    self.direct.push_back(rq.id.0);
                } else {
                    let id = rq.id.0;
                    self.sched.insert(rq, now);
                    self.note_sched_tag(id, now);
                }
            }
            Entry::Allocated(id) => {
                if self.observer.is_some() {
                    let rq = self.requests.get(&id.0).expect("recorded").rq.clone();
                    self.observe(Event::Insert, &rq, now);
                }
                self.sched.insert_allocated(id, now);
            }
        }
        self.counters.inserted += 1;
    }

    /// Allocate a request for `bio` now and insert it later, at
    /// [`handle_insert`](Self::handle_insert) with the id returned: blk-mq's two steps, the
    /// allocation (`__blk_mq_alloc_requests`: the policy's `limit_depth` and a scheduler
    /// tag, or a sleep for one; [`Scheduler::allocate`]) and, once the submitter's plug is
    /// flushed, the insertion (`block_rq_insert`). The request holds its tag in between and
    /// cannot be merged into. A bio merged into a queued request is not allocated (`None`);
    /// one split at the device's limits, or passing rq_qos controllers, a pending switch,
    /// the request list or a direct issue, takes the whole way now, as
    /// [`handle_submit`](Self::handle_submit) (`None`).
    pub fn handle_allocate(&mut self, bio: Bio, token: T, now: Nanos) -> Option<RequestId> {
        self.handle_allocate_as(bio, token, now, Allocation::Now)
    }

    /// As [`handle_allocate`](Self::handle_allocate), for a bio whose request its
    /// submitter's plug takes from a batch of scheduler tags allocated at once, which the
    /// policy's `limit_depth` never sees ([`Scheduler::allocate_batched`]).
    pub fn handle_allocate_batched(&mut self, bio: Bio, token: T, now: Nanos) -> Option<RequestId> {
        self.handle_allocate_as(bio, token, now, Allocation::Batched)
    }

    /// As [`handle_allocate`](Self::handle_allocate), for a bio whose task sleeps in tag
    /// allocation until [`handle_tag_got`](Self::handle_tag_got): the policy decides the
    /// request's depth now (`limit_depth` runs before `blk_mq_get_tag` sleeps) and gives it
    /// a tag no earlier than then ([`Scheduler::allocate_sleeping`]).
    pub fn handle_allocate_sleeping(
        &mut self,
        bio: Bio,
        token: T,
        now: Nanos,
    ) -> Option<RequestId> {
        self.handle_allocate_as(bio, token, now, Allocation::Sleeping)
    }

    /// The task allocating request `id` ([`handle_allocate_sleeping`](Self::handle_allocate_sleeping))
    /// got its tag now ([`Scheduler::tag_got`]). An unknown id, or one the policy gave back,
    /// is ignored.
    pub fn handle_tag_got(&mut self, id: RequestId, now: Nanos) {
        if self.allocated.get(&id.0) == Some(&false) {
            self.sched.tag_got(id, now);
            self.stamp_sched_tags(now);
        }
    }

    /// [`handle_allocate`](Self::handle_allocate) the way `how` says (`Now` is
    /// `handle_allocate` itself; `Sleeping` and `Batched` as
    /// [`handle_allocate_sleeping`](Self::handle_allocate_sleeping) and
    /// [`handle_allocate_batched`](Self::handle_allocate_batched)).
    pub fn handle_allocate_as(
        &mut self,
        mut bio: Bio,
        token: T,
        now: Nanos,
        how: Allocation,
    ) -> Option<RequestId> {
        let direct = bio.issue_directly && self.sched.issues_directly();
        if self.switch.is_some() || !self.qos.is_empty() || self.listed() || direct {
            self.handle_submit(bio, token, now);
            return None;
        }
        bio.submitted.get_or_insert(now);
        let rq = match self.build(bio, token, 0, now) {
            Built::Merged => return None,
            Built::Split(rq, max) => {
                self.queue_split(rq, token, 0, max, None, false, now);
                return None;
            }
            Built::One(rq) => rq,
        };
        let id = rq.id;
        self.record(&rq, token, 0, None, None, now);
        let back = match how {
            Allocation::Now => self.sched.allocate(rq, now),
            Allocation::Sleeping => self.sched.allocate_sleeping(rq, now),
            Allocation::Batched => self.sched.allocate_batched(rq, now),
        };
        self.allocated.insert(id.0, back.is_some());
        if back.is_none() {
            self.note_sched_tag(id.0, now);
        }
        Some(id)
    }

    /// Request `id`, allocated by [`handle_allocate`](Self::handle_allocate), is inserted
    /// now. An unknown id (never allocated, or inserted already) is ignored.
    pub fn handle_insert(&mut self, id: RequestId, now: Nanos) {
        let Some(given_back) = self.allocated.remove(&id.0) else {
            return;
        };
        let queued = (self.counters.inserted - self.counters.dispatched + 1) as u32;
        let r = self
            .requests
            .get_mut(&id.0)
            .expect("an allocated request is held");
        r.started = now;
        r.segs.first.queued = queued;
        if given_back {
            let rq = r.rq.clone();
            self.enter(Entry::New(rq, false), now);
        } else {
            self.enter(Entry::Allocated(id), now);
        }
        self.kick = true;
    }

    /// The next request to start on the device now, if the device has room and the
    /// scheduler (or the requeue list) has one. Call until `None`.
    pub fn poll_dispatch(&mut self, now: Nanos) -> Option<Request> {
        if self.switch.is_some() {
            self.finish_switch(now);
        }
        if !self.kick {
            return None;
        }
        if self.device_full() {
            self.kick = false;
            if self.limits.dequeues_without_driver_tag
                && self.requeued.is_empty()
                && self.direct.is_empty()
            {
                self.dequeue_to_wait_for_a_tag(now);
            }
            return None;
        }
        if let Some(id) = self.requeued.pop_front() {
            let rq = self
                .requests
                .get(&id)
                .expect("a requeued request is held")
                .rq
                .clone();
            return Some(self.start(rq, now, false));
        }
        if let Some(id) = self.direct.pop_front() {
            let rq = self
                .requests
                .get(&id)
                .expect("a request issued directly is held")
                .rq
                .clone();
            return Some(self.start(rq, now, true));
        }
        match self.ask_scheduler(now) {
            Some(rq) => Some(self.start(rq, now, true)),
            None => {
                self.kick = false;
                None
            }
        }
    }

    /// The scheduler's next request, if it gives one now; an idling scheduler's deadline
    /// becomes the layer's timer.
    fn ask_scheduler(&mut self, now: Nanos) -> Option<Request> {
        let d = self.sched.dispatch(now);
        self.stamp_sched_tags(now);
        match d {
            Dispatch::Request(rq) => Some(rq),
            Dispatch::Idle { until } => {
                if self.timer != Some(until) {
                    self.timer_gen += 1;
                    self.timer = Some(until);
                }
                None
            }
            Dispatch::Empty => None,
        }
    }

    /// A run that finds every driver tag taken, under
    /// [`Limits::dequeues_without_driver_tag`]: the scheduler's next request (if it has one
    /// now) leaves it and waits ahead of it for the next free tag, as blk-mq's
    /// `hctx->dispatch` holds a request that `blk_mq_get_driver_tag` refused.
    fn dequeue_to_wait_for_a_tag(&mut self, now: Nanos) {
        // `__blk_mq_do_dispatch_sched` asks only a scheduler that has work (`has_work`):
        // kyber's `kyber_dispatch_request` ends its batch when it returns nothing.
        if self.sched.queued() == 0 {
            return;
        }
        let Some(rq) = self.ask_scheduler(now) else {
            return;
        };
        // A scheduler dispatch as `start`'s fresh one counts it; the issue comes later, from
        // the requeue list, not counted again.
        self.counters.dispatched += 1;
        self.timer = None;
        let id = rq.id.0;
        match self.requests.get_mut(&id) {
            Some(r) => r.rq = rq,
            None => panic!(
                "{} dispatched request {id} it was never given",
                self.sched.name()
            ),
        }
        self.requeued.push_back(id);
        if let Some(parked) = self.parked.as_mut() {
            parked.push(RequestId(id));
        }
    }

    /// Whether the device holds all it can (every driver tag taken).
    pub fn device_full(&self) -> bool {
        self.in_flight >= self.limits.queue_depth
    }

    /// Request `id` was just given to a policy that may keep scheduler tags: note when it
    /// holds its tag (now, if it does; else at the first [`stamp_sched_tags`](Self::stamp_sched_tags)
    /// that finds it holding one).
    fn note_sched_tag(&mut self, id: u64, now: Nanos) {
        match self.sched.holds_sched_tag(RequestId(id)) {
            None => {}
            Some(true) => {
                if let Some(r) = self.requests.get_mut(&id) {
                    r.sched_tagged.get_or_insert(now);
                }
            }
            Some(false) => self.untagged.push(id),
        }
    }

    /// After a policy call that may have given out scheduler tags (a dispatch, a
    /// completion): the requests that were waiting for one and now hold it got it now.
    fn stamp_sched_tags(&mut self, now: Nanos) {
        if self.untagged.is_empty() {
            return;
        }
        let (sched, requests) = (&self.sched, &mut self.requests);
        // A policy that counts its admissions: only that many were admitted since the last
        // look, so the look stops once it has found them (they are the oldest waiting of
        // their depth, near the front). Asking of every waiting request after every call made
        // 4096 requests waiting for mq-deadline's tags cubic (issue 32, round 14).
        if let Some(admitted) = sched.sched_tags_admitted() {
            let mut left = admitted.saturating_sub(self.admitted_seen);
            self.admitted_seen = admitted;
            let mut i = 0;
            while left > 0 && i < self.untagged.len() {
                let id = self.untagged[i];
                match requests.get_mut(&id) {
                    Some(_) if sched.holds_sched_tag(RequestId(id)) == Some(false) => i += 1,
                    Some(r) => {
                        r.sched_tagged = Some(now);
                        self.untagged.remove(i);
                        left -= 1;
                    }
                    None => {
                        self.untagged.remove(i);
                    }
                }
            }
            return;
        }
        // An id is noted here once, untagged, and leaves when it is stamped: none here is
        // stamped yet.
        self.untagged.retain(|&id| match requests.get_mut(&id) {
            Some(r) => {
                if sched.holds_sched_tag(RequestId(id)) == Some(false) {
                    return true;
                }
                r.sched_tagged = Some(now);
                false
            }
            None => false,
        });
    }

    fn start(&mut self, rq: Request, now: Nanos, fresh: bool) -> Request {
        self.in_flight += 1;
        if fresh {
            self.counters.dispatched += 1;
            self.timer = None;
        }
        let in_flight = self.in_flight as u32;
        let r = self.requests.get_mut(&rq.id.0).unwrap_or_else(|| {
            panic!(
                "{} dispatched request {} it was never given, or twice",
                self.sched.name(),
                rq.id.0
            )
        });
        assert_eq!(
            r.state,
            State::Queued,
            "{} dispatched request {} twice",
            self.sched.name(),
            rq.id.0
        );
        r.state = State::InFlight;
        r.rq = rq.clone();
        r.dispatched = now;
        r.in_flight = in_flight;
        if r.tagged.is_none() {
            if let Some(tags) = self.tags.as_mut() {
                tags.take();
                r.tagged = Some(now);
                r.holds_tag = true;
            }
        }
        self.observe(Event::Issue, &rq, now);
        self.qos.issue(&rq, now);
        rq
    }

    /// The device gave request `id` back unfinished (busy): it goes ahead of the scheduler's
    /// next choice.
    pub fn handle_requeue(&mut self, id: RequestId, now: Nanos) {
        let _ = now;
        if let Some(r) = self.requests.get_mut(&id.0) {
            if r.state == State::InFlight {
                r.state = State::Queued;
                self.in_flight -= 1;
                self.requeued.push_back(id.0);
                self.kick = true;
            }
        }
    }

    /// The device finished request `id` at `now` (`ok`: without error). Appends one [`Done`]
    /// per bio or piece it carried, its own first, then those merged into it in merge order.
    /// An unknown id (a request never dispatched) is ignored.
    pub fn handle_complete(&mut self, id: RequestId, ok: bool, now: Nanos, out: &mut Vec<Done<T>>) {
        self.handle_complete_clocked(id, ok, now, now, out);
    }

    /// As [`Self::handle_complete`], with the policy's clock for the completion read at
    /// `clock`, before `now` ([`Scheduler::complete_clocked`]): a kernel trace's replay, whose
    /// scheduler learned of a completion later than it stamped it.
    pub fn handle_complete_clocked(
        &mut self,
        id: RequestId,
        ok: bool,
        clock: Nanos,
        now: Nanos,
        out: &mut Vec<Done<T>>,
    ) {
        let Some(r) = self.requests.remove(&id.0) else {
            return;
        };
        debug_assert_eq!(
            r.state,
            State::InFlight,
            "completion of a request never dispatched"
        );
        self.in_flight -= 1;
        self.sched.complete_clocked(&r.rq, clock.min(now), now);
        self.stamp_sched_tags(now);
        if r.holds_tag {
            self.put_host_tag(now);
        }
        let tagged = r.sched_tagged.or(r.tagged).unwrap_or(r.dispatched);
        let controlled = !self.qos.is_empty();
        if controlled {
            self.qos.done(&r.rq, tagged, now);
        }
        self.observe(Event::Complete, &r.rq, now);
        self.stat.done(r.rq.op, r.rq.sectors, r.started, now);
        self.counters.completed += 1;
        self.bios_completed += 1 + r.segs.more.len() as u64;
        for seg in r.segs.iter() {
            let (whole, ok) = match seg.split {
                None => (Some(u64::from(seg.sectors) * crate::SECTOR_BYTES), ok),
                Some(key) => {
                    let s = self.splits.get_mut(&key).expect("a piece's bio is tracked");
                    s.left -= 1;
                    s.failed |= !ok;
                    if s.left == 0 {
                        let s = self.splits.remove(&key).expect("just seen");
                        (Some(s.bytes), !s.failed)
                    } else {
                        (None, ok)
                    }
                }
            };
            if controlled {
                if let Some(bytes) = whole {
                    self.qos.done_bio(
                        &BioEnd {
                            key: seg.key,
                            group: seg.group,
                            op: r.rq.op,
                            bytes,
                            submitted: seg.submitted,
                            ok,
                        },
                        now,
                    );
                }
            }
            out.push(Done {
                token: seg.token,
                op: r.rq.op,
                ctx: seg.ctx,
                sector: seg.sector,
                sectors: seg.sectors,
                submitted: seg.submitted,
                dispatched: r.dispatched,
                tagged,
                queued: seg.queued,
                in_flight: r.in_flight,
                merged: seg.merged,
                whole,
                ok,
            });
        }
        if let Some(class) = r.class {
            self.free_to_list(class, now);
        }
        if !self.throttled.is_empty() {
            self.release_throttled(now, true);
        }
        if controlled {
            self.release_held(now);
        }
        self.kick = true;
    }

    /// Change the scheduler as the kernel's `elevator_switch` does: the queue is frozen (new
    /// bios are held), the current scheduler drains what it holds and the device goes idle,
    /// then `next` takes over and gets the held bios. A later switch replaces a pending one,
    /// whose scheduler is returned.
    pub fn switch_scheduler(&mut self, next: S) -> Option<S> {
        self.kick = true;
        match self.switch.as_mut() {
            Some(sw) => Some(std::mem::replace(&mut sw.next, next)),
            None => {
                self.switch = Some(Switch {
                    next,
                    held: VecDeque::new(),
                });
                None
            }
        }
    }

    /// Whether a switch is waiting for the old scheduler to drain.
    pub fn switching(&self) -> bool {
        self.switch.is_some()
    }

    fn finish_switch(&mut self, now: Nanos) {
        if self.sched.queued() > 0
            || self.in_flight > 0
            || !self.requeued.is_empty()
            || !self.allocated.is_empty()
        {
            return;
        }
        let sw = self.switch.take().expect("checked by the caller");
        self.sched = sw.next;
        self.timer = None;
        self.kick = true;
        for (bio, token) in sw.held {
            self.handle_submit(bio, token, now);
        }
    }

    /// Finish: the scheduler and the counters.
    pub fn into_parts(self) -> (S, Counters, DiskStat) {
        (self.sched, self.counters, self.stat)
    }
}

#[cfg(test)]
mod tests;
