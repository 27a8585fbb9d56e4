//! anticipatory: the anticipatory I/O scheduler (AS) as in Linux 2.6.32 `block/as-iosched.c`
//! (Nick Piggin, 2.5.59-mm5 to 2.6.32; removed in 2.6.33). See docs/anticipatory.md.
//!
//! AS is deadline-style batching (a sector-sorted list and a FIFO for sync requests, another
//! pair for async writes, batches that alternate between them) plus *anticipation*: after a
//! sync request completes, the disk may be kept idle for up to `antic_expire` in the hope that
//! the process that issued it (which usually sleeps until its read returns) submits another
//! request close by, instead of seeking away to serve someone else and seeking back. Whether
//! to wait is decided from per-process statistics (think time, seek distance) kept with the
//! kernel's 7/8-decay fixed-point arithmetic, and global statistics for processes that have
//! none yet (new-process means, the probability a waited-on process exits).
//!
//! ## Tunables (sysfs names, milliseconds, 2.6.32 defaults at HZ = 1000)
//! Every time below is kept in jiffies, as the kernel keeps it: a value in ms becomes
//! `msecs_to_jiffies(ms)` (rounded up), and a default not given is the kernel's fraction of
//! `hz` (at `hz` = 250, `read_expire` is 31 jiffies = 124 ms and `antic_expire` 1 jiffy).
//! - `read_expire` (ms) = 125 (`HZ/8`): a sync request's FIFO deadline.
//! - `write_expire` (ms) = 250 (`HZ/4`): an async request's FIFO deadline.
//! - `read_batch_expire` (ms) = 500 (`HZ/2`): how long a read batch may run while writes wait.
//! - `write_batch_expire` (ms) = 125 (`HZ/8`): the target length of a write batch; the number
//!   of writes per batch is autotuned towards it (starting at `write_batch_expire / 10`, at
//!   least 2).
//! - `antic_expire` (ms) = 6 (`HZ/150`, which is 6 at HZ = 1000 by integer division): the
//!   longest anticipation after the anticipated request completed; 0 disables anticipation
//!   and AS behaves like deadline with batches. At most [`ANTIC_EXPIRE_MAX_MS`] (ours; see
//!   the deviations).
//! - `hz` = 1000: the kernel's timer frequency (`CONFIG_HZ`, fixed when the kernel is built;
//!   not a sysfs file): the length of a jiffy, 1/`hz` s.
//!
//! The read-only `est_time` file is [`Anticipatory::est_time`].
//!
//! ## Fixed constants
//! `MAX_THINKTIME` `HZ/50` jiffies (20 ms), [`MAXBACK`] 1024*1024 sectors, [`BACK_PENALTY`] 2,
//! the close window base 8192 sectors widening for at most `20 * HZ / 1000` jiffies, and
//! [`MAX_MERGE_SECTORS`] = 256 (128 KiB) for merges.
//!
//! ## Jiffies
//! The driver's `now` is in ns; AS reads it as the kernel reads `jiffies`, the number of whole
//! ticks since time zero. Think times are differences of tick counts (a think time of 0.4 ms
//! that crosses a tick is 1 jiffy, one of 0.9 ms that does not is 0), the per-process mean
//! think time is kept in jiffies with `as_update_thinktime`'s fixed point, `(total + 128) /
//! samples`, whose rounding term is worth 4 jiffies on a first sample (samples = 32): a new
//! process whose first think time is 3 jiffies or more has a mean above `antic_expire` (6) and
//! is not anticipated. The anticipation timer fires on the tick `antic_start +
//! antic_expire`, counted from the tick of the completion (so 5 to 6 ms after it at
//! HZ = 1000), FIFO and batch deadlines are tick counts compared with `time_after`, and
//! `as_close_req`'s window widens by one bit per elapsed jiffy.
//!
//! ## How a call maps to the kernel
//! [`insert`](Scheduler::insert) is `as_add_request` (statistics, sort list, FIFO, and the
//! anticipation break check of `as_update_rq`); [`dispatch`](Scheduler::dispatch) is
//! `as_dispatch_request` followed at once by the driver taking the request (activation);
//! [`complete`](Scheduler::complete) is `as_completed_request`; [`exit`](Scheduler::exit) is
//! the io_context exit hook; [`try_merge`](Scheduler::try_merge) is the generic back merge
//! plus `as_merge`'s front merge. The kernel's `antic_timer` is a deadline kept here and
//! evaluated lazily: every call first runs the timeout (with its `exit_prob` /
//! `exit_no_coop` updates) if `now` has reached it, and `dispatch` answers
//! `Dispatch::Idle { until }` with that deadline while anticipating.
//!
//! ## Deviations from 2.6.32 (deliberate)
//! - **Jiffies are exact ticks** of `1_000_000_000 / hz` ns (3,333,333 ns at `hz` = 300,
//!   where the kernel's tick is 1/300 s); `jiffies` starts at 0, not at the kernel's
//!   `INITIAL_JIFFIES` (AS only takes differences). `est_time` and
//!   [`CtxStats::ttime_mean`] report jiffy means as ns.
//! - **Activation is dispatch.** The kernel's per-process `nr_dispatched` counts requests on
//!   the dispatch list that the driver has not yet taken; here the driver takes each request
//!   when `dispatch` returns it, so that count is always zero and can-break rule 3 reduces
//!   to "the anticipated process has requests queued" (as it does in practice in the kernel,
//!   where `as_dispatch_request` only runs once the dispatch list is empty).
//! - **No non-rotational check**: as in 2.6.32, where it is compiled out (`#if 0`).
//! - **No `as_may_queue`**: request-slot allocation (nr_requests) belongs to the driver.
//! - **Merging**: back merges find a queued request of the same operation ending where the
//!   new one starts through a hash of end sectors, in either sync class (as the kernel's
//!   merge hash; when two queued requests end at the same sector only the newer is found);
//!   front merges look in the new request's own sort list. 2.6.32's `as_merge` indexes its
//!   sort lists with `bio_data_dir` (READ = 0 is the *async* list), so its front merges only
//!   ever found sync writes; we do not copy that slip. Merged size is capped at
//!   [`MAX_MERGE_SECTORS`] (the kernel: the queue's max_sectors). The generic `last_merge`
//!   one-hit cache and request-to-request merging after a merge (`attempt_back_merge`) are
//!   not modelled: the trait can only absorb the arriving request, never make a queued one
//!   disappear.
//! - **Flush** requests are treated as 2.6.32 treats barriers: the elevator is drained
//!   (forced dispatch of everything queued, in elevator order) and the flush goes to the
//!   back of the dispatch list; like any unsorted request its completion is not reported to
//!   AS's accounting.
//! - **Tunables** out of range are refused with an error; the kernel silently clamps.
//!   `antic_expire` is capped at [`ANTIC_EXPIRE_MAX_MS`] (the kernel takes any value): 2.6.32
//!   waits the full `antic_expire` for a process that exited (its exit hook,
//!   `exit_as_io_context`, only clears `AS_TASK_RUNNING`; the wait ends at the timer, or at a
//!   new arrival once exits are seldom rescued), so a value of days idles the disk for days
//!   while other requests wait. Beyond `MAX_THINKTIME` (20 ms) a longer wait serves no
//!   process whose think time AS would anticipate anyway.
//! - Per-process state of an exited process is dropped once nothing refers to it (no queued
//!   request, not the anticipated process), as the kernel frees it with the last reference.
//!
//! ## Cost
//! Queued requests live in the slab of the core's FIFOs (`fifo.rs`: one intrusive doubly
//! linked list per direction through the slab); each sort list is a blocked sorted array from
//! start sector to slot (`sort_list.rs`), in which the request dispatched and both of its
//! neighbours, which `as_find_next_rq` weighs, come from one search; back merges use a hash of
//! end sectors, and per-process state sits in a vector indexed by context id (a hash map for
//! ids of 4096 and up). Insert, dispatch, complete and merge search in `O(log n)`, and
//! allocate nothing once the slab has grown to the queue's peak depth. `cargo bench -p elevator-core --bench sched_cost -- anticipatory`
//! measures insert + dispatch + complete with 1,000 requests queued.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::fifo::Fifos;
pub use crate::request::MAX_MERGE_SECTORS;
use crate::request::{CtxId, Op, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::sort_list::{Pos, SortList};
use crate::time::Nanos;
use crate::tunable::{self, Settings, Tunable, TunableError, Unit};

/// The farthest the elevator goes backwards for a request, in sectors (512 MiB).
pub const MAXBACK: u64 = 1024 * 1024;
/// A backward seek counts this many times its distance when choosing the next request.
pub const BACK_PENALTY: u64 = 2;

/// The close window right after the anticipated request completed, in sectors.
const CLOSE_BASE: u64 = 8192;
/// Fixed point: 1.0.
const ONE: u64 = 256;
/// Seek samples up to which the generous seek clip applies.
const SEEK_EARLY_SAMPLES: u64 = 60;

/// Index of the async (write) sort list and FIFO, as `BLK_RW_ASYNC`.
const ASYNC: usize = 0;
/// Index of the sync (read and sync write) sort list and FIFO, as `BLK_RW_SYNC`.
const SYNC: usize = 1;

/// The tunables, as under `/sys/block/<dev>/queue/iosched/`.
pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "read_expire",
        unit: Unit::Ms,
        default: 125,
        min: 0,
        max: i32::MAX as i64,
        doc: "FIFO deadline of a sync request (HZ/8)",
    },
    Tunable {
        name: "write_expire",
        unit: Unit::Ms,
        default: 250,
        min: 0,
        max: i32::MAX as i64,
        doc: "FIFO deadline of an async write (HZ/4)",
    },
    Tunable {
        name: "read_batch_expire",
        unit: Unit::Ms,
        default: 500,
        min: 0,
        max: i32::MAX as i64,
        doc: "how long a read batch may run while writes are pending (HZ/2)",
    },
    Tunable {
        name: "write_batch_expire",
        unit: Unit::Ms,
        default: 125,
        min: 0,
        max: i32::MAX as i64,
        doc: "target length of a write batch; the writes per batch autotune to it (HZ/8)",
    },
    Tunable {
        name: "antic_expire",
        unit: Unit::Ms,
        default: 6,
        min: 0,
        max: ANTIC_EXPIRE_MAX_MS,
        doc: "longest wait for the anticipated process after its request completed; 0 disables (HZ/150)",
    },
    Tunable {
        name: "hz",
        unit: Unit::Count,
        default: 1000,
        min: 100,
        max: 1000,
        doc: "the kernel's timer frequency CONFIG_HZ (build time): AS counts time in jiffies of 1/hz s",
    },
];

/// The largest `antic_expire` accepted, in ms (ours: the kernel accepts any value).
pub const ANTIC_EXPIRE_MAX_MS: i64 = 1000;

/// AS's settings: times in nanoseconds, each a whole number of jiffies of 1/`hz` s. Build
/// with [`Config::from_settings`] or `Default`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `CONFIG_HZ`: ticks per second.
    pub hz: u32,
    /// `read_expire`: FIFO deadline of a sync request.
    pub read_expire: Nanos,
    /// `write_expire`: FIFO deadline of an async write.
    pub write_expire: Nanos,
    /// `read_batch_expire`: how long a read batch may run while writes wait.
    pub read_batch_expire: Nanos,
    /// `write_batch_expire`: target length of a write batch.
    pub write_batch_expire: Nanos,
    /// `antic_expire`: longest anticipation after the anticipated request completed.
    pub antic_expire: Nanos,
}

impl Default for Config {
    fn default() -> Config {
        Config::from_settings(&Settings::new()).expect("defaults are valid")
    }
}

impl Config {
    /// Read the tunables from `settings`: a time given in ms becomes whole jiffies
    /// (`msecs_to_jiffies`, rounding up); one not given takes its 2.6.32 default, a fraction
    /// of `hz` (`HZ/8`, `HZ/4`, `HZ/2`, `HZ/8`, `HZ/150` but at least 1).
    pub fn from_settings(settings: &Settings) -> Result<Config, TunableError> {
        settings.validate("anticipatory", TUNABLES)?;
        let hz = settings.get(TUNABLES, "hz") as u64;
        let jiffy = 1_000_000_000 / hz;
        let time = |name, default_jiffies: u64| {
            let jiffies = settings
                .raw(name)
                .map_or(default_jiffies, |ms| msecs_to_jiffies(ms as u64, hz));
            Nanos(jiffies * jiffy)
        };
        Ok(Config {
            hz: hz as u32,
            read_expire: time("read_expire", hz / 8),
            write_expire: time("write_expire", hz / 4),
            read_batch_expire: time("read_batch_expire", hz / 2),
            write_batch_expire: time("write_batch_expire", hz / 8),
            antic_expire: time("antic_expire", (hz / 150).max(1)),
        })
    }

    /// One jiffy, in ns.
    pub fn jiffy(&self) -> Nanos {
        Nanos(1_000_000_000 / u64::from(self.hz))
    }

    /// `d` (a whole number of jiffies) in jiffies.
    fn jiffies(&self, d: Nanos) -> u64 {
        d.as_ns() / self.jiffy().as_ns()
    }

    fn fifo_expire(&self, dir: usize) -> Nanos {
        if dir == SYNC {
            self.read_expire
        } else {
            self.write_expire
        }
    }

    fn batch_expire(&self, dir: usize) -> Nanos {
        if dir == SYNC {
            self.read_batch_expire
        } else {
            self.write_batch_expire
        }
    }
}

/// Where anticipation stands (`enum anticipation_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnticState {
    /// Not anticipating: normal operation.
    Off,
    /// Anticipating, but the last sync request has not completed yet.
    WaitReq,
    /// The anticipated request completed; waiting (at most `antic_expire`) for a good one.
    WaitNext,
    /// Anticipation ended (timeout or a good candidate arrived); the next dispatch runs.
    Finished,
}

/// Which kind of batch is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchDir {
    /// Reads and sync writes.
    Sync,
    /// Async writes (writeback).
    Async,
}

/// The global estimates the kernel shows in the read-only sysfs file `est_time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EstTime {
    /// Probability that a process exits while being waited on, fixed point (256 = 1.0).
    pub exit_prob: u64,
    /// Probability that an exited process is not followed by a cooperating request,
    /// fixed point (256 = 1.0).
    pub exit_no_coop: u64,
    /// Mean first think time of new processes.
    pub new_ttime_mean: Nanos,
    /// Mean first seek distance of new processes, in sectors.
    pub new_seek_mean: u64,
}

impl EstTime {
    /// `exit_prob` in whole percent, as `est_time` prints it.
    pub fn exit_prob_percent(&self) -> u64 {
        100 * self.exit_prob / ONE
    }
    /// `exit_no_coop` in whole percent, as `est_time` prints it.
    pub fn exit_no_coop_percent(&self) -> u64 {
        100 * self.exit_no_coop / ONE
    }
}

/// One process's statistics as AS keeps them (a read-only view of `as_io_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtxStats {
    /// Whether the process is still running (has not exited).
    pub running: bool,
    /// Requests queued in AS (not yet dispatched).
    pub queued: u32,
    /// Think-time sample weight, fixed point (256 = 1.0; it saturates at 249).
    pub ttime_samples: u64,
    /// Mean think time.
    pub ttime_mean: Nanos,
    /// Seek sample weight, fixed point.
    pub seek_samples: u64,
    /// Mean seek distance, in sectors.
    pub seek_mean: u64,
}

/// Per-process state (`struct as_io_context`).
#[derive(Clone, Debug)]
struct Aic {
    /// AS_TASK_RUNNING: the process has not exited.
    running: bool,
    /// AS_TASK_IOSTARTED: it has submitted a sync request.
    io_started: bool,
    /// AS_TASK_IORUNNING: one of its sync requests has completed.
    io_running: bool,
    nr_queued: u32,
    /// Jiffies at the last sync completion.
    last_end_request: u64,
    last_request_pos: u64,
    ttime_total: u64,
    ttime_samples: u64,
    /// In jiffies.
    ttime_mean: u64,
    seek_total: u64,
    seek_samples: u64,
    seek_mean: u64,
}

impl Aic {
    fn new() -> Aic {
        Aic {
            running: true,
            io_started: false,
            io_running: false,
            nr_queued: 0,
            last_end_request: 0,
            last_request_pos: 0,
            ttime_total: 0,
            ttime_samples: 0,
            ttime_mean: 0,
            seek_total: 0,
            seek_samples: 0,
            seek_mean: 0,
        }
    }
}

/// The global statistics of `struct as_data`.
#[derive(Clone, Debug, Default)]
struct Globals {
    exit_prob: u64,
    exit_no_coop: u64,
    new_ttime_total: u64,
    /// In jiffies.
    new_ttime_mean: u64,
    new_seek_total: u64,
    new_seek_mean: u64,
}

/// `msecs_to_jiffies`: `ms` in jiffies at `hz`, rounded up.
fn msecs_to_jiffies(ms: u64, hz: u64) -> u64 {
    (ms * hz).div_ceil(1000)
}

/// `(7 * old + sample) / 8`: the kernel's decaying average step.
fn decay(old: u64, sample: u64) -> u64 {
    (7 * old + sample) / 8
}

fn update_thinktime(g: &mut Globals, aic: &mut Aic, ttime: u64) {
    if aic.ttime_samples == 0 {
        g.new_ttime_total = decay(g.new_ttime_total, ONE * ttime);
        g.new_ttime_mean = g.new_ttime_total / ONE;
        g.exit_prob = decay(g.exit_prob, 0);
    }
    aic.ttime_samples = decay(aic.ttime_samples, ONE);
    aic.ttime_total = decay(aic.ttime_total, ONE * ttime);
    aic.ttime_mean = (aic.ttime_total + ONE / 2) / aic.ttime_samples;
}

fn update_seekdist(g: &mut Globals, aic: &mut Aic, sdist: u64) {
    if aic.seek_samples == 0 {
        g.new_seek_total = decay(g.new_seek_total, ONE * sdist);
        g.new_seek_mean = g.new_seek_total / ONE;
    }
    // The odd fragment or page-in must not blow up the mean: clip generously for the first
    // few samples, tighter afterwards.
    let clip = if aic.seek_samples <= SEEK_EARLY_SAMPLES {
        aic.seek_mean * 4 + 2 * 1024 * 1024
    } else {
        aic.seek_mean * 4 + 2 * 1024 * 64
    };
    let sdist = sdist.min(clip);
    aic.seek_samples = decay(aic.seek_samples, ONE);
    aic.seek_total = decay(aic.seek_total, ONE * sdist);
    aic.seek_mean = (aic.seek_total + aic.seek_samples / 2) / aic.seek_samples;
}

/// `as_update_iohist`: feed a sync request at `sector..end`, arriving at tick `jiffies`,
/// into `aic`'s history. Think times are capped just below `MAX_THINKTIME` = `hz / 50`.
fn update_iohist(g: &mut Globals, aic: &mut Aic, (sector, end): (u64, u64), jiffies: u64, hz: u32) {
    if aic.io_running || aic.io_started {
        let mut ttime = 0;
        // The kernel adds the dispatched-but-not-activated count, always 0 here.
        if aic.io_running && aic.nr_queued == 0 {
            let max_thinktime = u64::from(hz) / 50;
            ttime = jiffies
                .saturating_sub(aic.last_end_request)
                .min(max_thinktime - 1);
        }
        update_thinktime(g, aic, ttime);
        update_seekdist(g, aic, aic.last_request_pos.abs_diff(sector));
    }
    aic.last_request_pos = end;
    aic.io_started = true;
}

/// A cheap hasher for context ids and sectors (multiplicative; keys are plain integers).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Contexts below this id are kept in a plain vector (the common case: drivers number their
/// processes from zero); others in a hash map.
const DENSE_CTX: u32 = 4096;

/// Per-process state by context id, without hashing for small ids.
#[derive(Debug, Default)]
struct AicTable {
    dense: Vec<Option<Aic>>,
    sparse: HashMap<CtxId, Aic, BuildHasherDefault<IdHasher>>,
}

impl AicTable {
    fn get(&self, ctx: &CtxId) -> Option<&Aic> {
        if ctx.0 < DENSE_CTX {
            self.dense.get(ctx.0 as usize)?.as_ref()
        } else {
            self.sparse.get(ctx)
        }
    }
    fn get_mut(&mut self, ctx: &CtxId) -> Option<&mut Aic> {
        if ctx.0 < DENSE_CTX {
            self.dense.get_mut(ctx.0 as usize)?.as_mut()
        } else {
            self.sparse.get_mut(ctx)
        }
    }
    fn get_or_insert(&mut self, ctx: CtxId) -> &mut Aic {
        if ctx.0 < DENSE_CTX {
            let i = ctx.0 as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i].get_or_insert_with(Aic::new)
        } else {
            self.sparse.entry(ctx).or_insert_with(Aic::new)
        }
    }
    fn remove(&mut self, ctx: &CtxId) {
        if ctx.0 < DENSE_CTX {
            if let Some(a) = self.dense.get_mut(ctx.0 as usize) {
                *a = None;
            }
        } else {
            self.sparse.remove(ctx);
        }
    }
}
type EndMap = HashMap<u64, u32, BuildHasherDefault<IdHasher>>;

/// A queued request's place: its first sector (the sort key) and its slot.
type Key = (u64, u32);

/// A queued request and its fifo time.
#[derive(Debug)]
struct Queued {
    rq: Request,
    fifo_time: Nanos,
}

/// The anticipatory scheduler. See the module documentation.
#[derive(Debug)]
pub struct Anticipatory {
    cfg: Config,
    /// Queued requests, in one FIFO per direction (SYNC, ASYNC); their slots are the values
    /// of the sort lists and the merge hash.
    fifos: Fifos<Queued>,
    /// The sort lists, keyed by first sector (unique: an alias is dispatched at once).
    sort: [SortList; 2],
    /// Queued requests by end sector, for back merges (the kernel's merge hash).
    by_end: EndMap,
    /// The `next_rq` cache.
    next_rq: [Option<Key>; 2],
    /// End of the last request dispatched in each direction.
    last_sector: [u64; 2],
    /// Requests moved to the dispatch list outside `dispatch` (aliases, a barrier drain).
    forced: VecDeque<Request>,
    aics: AicTable,
    g: Globals,
    /// Tick at which the batch expires (`time_after` it).
    current_batch_expires: Nanos,
    /// Tick of the last FIFO check per direction.
    last_check_fifo: [Nanos; 2],
    /// Waiting for the old batch's requests to complete.
    changed_batch: bool,
    /// Waiting on the first completion of a new read batch.
    new_batch: bool,
    batch_dir: usize,
    write_batch_count: i64,
    current_write_count: i64,
    write_batch_idled: bool,
    antic_status: AnticState,
    /// Tick of the anticipated process's last completion.
    antic_start: Nanos,
    /// The tick on which the antic timer fires (valid in `WaitNext`).
    antic_deadline: Nanos,
    /// The process to anticipate: issuer of the last sync request dispatched.
    io_context: Option<CtxId>,
    /// A request of `io_context` completed since the last dispatch.
    ioc_finished: bool,
    /// Requests dispatched (by AS) and not yet completed.
    nr_dispatched: usize,
    /// Exited processes whose state is still kept.
    exited: usize,
}

impl Default for Anticipatory {
    fn default() -> Anticipatory {
        Anticipatory::new(Config::default())
    }
}

impl Anticipatory {
    /// A new, empty scheduler (`as_init_queue`), as if created at time zero.
    pub fn new(cfg: Config) -> Anticipatory {
        let write_batch_count = ((cfg.jiffies(cfg.write_batch_expire) / 10) as i64).max(2);
        Anticipatory {
            current_batch_expires: cfg.read_batch_expire,
            cfg,
            fifos: Fifos::new(2),
            sort: [SortList::default(), SortList::default()],
            next_rq: [None; 2],
            by_end: EndMap::default(),
            last_sector: [0; 2],
            forced: VecDeque::new(),
            aics: AicTable::default(),
            g: Globals::default(),
            last_check_fifo: [Nanos::ZERO; 2],
            changed_batch: false,
            new_batch: false,
            // Zero-initialised in the kernel: BLK_RW_ASYNC.
            batch_dir: ASYNC,
            write_batch_count,
            current_write_count: 0,
            write_batch_idled: false,
            antic_status: AnticState::Off,
            antic_start: Nanos::ZERO,
            antic_deadline: Nanos::ZERO,
            io_context: None,
            ioc_finished: false,
            nr_dispatched: 0,
            exited: 0,
        }
    }

    /// Build from user settings (unknown or out-of-range tunables are an error).
    pub fn from_settings(settings: &Settings) -> Result<Anticipatory, TunableError> {
        Ok(Anticipatory::new(Config::from_settings(settings)?))
    }

    /// The current settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The global estimates (the sysfs `est_time` file).
    pub fn est_time(&self) -> EstTime {
        EstTime {
            exit_prob: self.g.exit_prob,
            exit_no_coop: self.g.exit_no_coop,
            new_ttime_mean: Nanos(self.g.new_ttime_mean * self.cfg.jiffy().as_ns()),
            new_seek_mean: self.g.new_seek_mean,
        }
    }

    /// The anticipation state.
    pub fn antic_state(&self) -> AnticState {
        self.antic_status
    }

    /// The process being anticipated (issuer of the last sync dispatch), if any.
    pub fn anticipated(&self) -> Option<CtxId> {
        self.io_context
    }

    /// When the anticipation timer fires, while it is armed.
    pub fn next_timer(&self) -> Option<Nanos> {
        (self.antic_status == AnticState::WaitNext).then_some(self.antic_deadline)
    }

    /// The kind of batch running (or being switched to).
    pub fn batch(&self) -> BatchDir {
        if self.batch_dir == SYNC {
            BatchDir::Sync
        } else {
            BatchDir::Async
        }
    }

    /// The autotuned number of writes per write batch.
    pub fn write_batch_count(&self) -> i64 {
        self.write_batch_count
    }

    /// Requests dispatched and not yet completed, as AS counts them.
    pub fn in_flight(&self) -> usize {
        self.nr_dispatched
    }

    /// Statistics kept for `ctx`, if AS knows it.
    pub fn ctx_stats(&self, ctx: CtxId) -> Option<CtxStats> {
        self.aics.get(&ctx).map(|a| CtxStats {
            running: a.running,
            queued: a.nr_queued,
            ttime_samples: a.ttime_samples,
            ttime_mean: Nanos(a.ttime_mean * self.cfg.jiffy().as_ns()),
            seek_samples: a.seek_samples,
            seek_mean: a.seek_mean,
        })
    }

    // ----- jiffies -----

    /// The start of the tick `now` falls in: what the kernel's `jiffies` says at `now`.
    fn tick(&self, now: Nanos) -> Nanos {
        let j = self.cfg.jiffy().as_ns();
        Nanos(now.as_ns() / j * j)
    }

    /// `jiffies` at `now`.
    fn jiffies(&self, now: Nanos) -> u64 {
        now.as_ns() / self.cfg.jiffy().as_ns()
    }

    // ----- the anticipation timer -----

    /// `as_antic_timeout`, run lazily: the timer fires at the first call at or after it.
    fn run_timer(&mut self, now: Nanos) {
        if self.antic_status != AnticState::WaitNext || now < self.antic_deadline {
            return;
        }
        self.antic_status = AnticState::Finished;
        let Some(aic) = self.io_context.and_then(|c| self.aics.get(&c)) else {
            return;
        };
        if aic.ttime_samples == 0 {
            // The anticipated process has exited or timed out.
            self.g.exit_prob = decay(self.g.exit_prob, ONE);
        }
        if !aic.running {
            // Not saved by a cooperating request.
            self.g.exit_no_coop = decay(self.g.exit_no_coop, ONE);
        }
    }

    fn antic_waitnext(&mut self) {
        debug_assert!(matches!(
            self.antic_status,
            AnticState::Off | AnticState::WaitReq
        ));
        self.antic_deadline = self.antic_start.saturating_add(self.cfg.antic_expire);
        self.antic_status = AnticState::WaitNext;
    }

    fn antic_waitreq(&mut self) {
        if self.antic_status == AnticState::Off {
            if self.io_context.is_none() || self.ioc_finished {
                self.antic_waitnext();
            } else {
                self.antic_status = AnticState::WaitReq;
            }
        }
    }

    fn antic_stop(&mut self) {
        if matches!(
            self.antic_status,
            AnticState::WaitReq | AnticState::WaitNext
        ) {
            self.antic_status = AnticState::Finished;
        }
    }

    /// `as_antic_expired`: whole jiffies since the completion >= `antic_expire`.
    fn antic_expired(&self, now: Nanos) -> bool {
        self.tick(now).saturating_sub(self.antic_start) >= self.cfg.antic_expire
    }

    // ----- anticipation heuristics -----

    /// `as_close_req`: is a sync request at `next` close to where the anticipated process
    /// left the head, given how long we have waited?
    fn close_req(&self, aic: &Aic, next: u64, now: Nanos) -> bool {
        let last = self.last_sector[self.batch_dir];
        // Jiffies since the anticipated request completed.
        let delay = if self.antic_status == AnticState::Off || !self.ioc_finished {
            0
        } else {
            self.cfg
                .jiffies(self.tick(now).saturating_sub(self.antic_start))
        };
        let max_delay = 20 * u64::from(self.cfg.hz) / 1000;
        let delta = if delay == 0 {
            CLOSE_BASE
        } else if delay <= max_delay && delay <= self.cfg.jiffies(self.cfg.antic_expire) {
            CLOSE_BASE << delay
        } else {
            return true;
        };
        if last <= next.saturating_add(delta / 2) && next <= last.saturating_add(delta) {
            return true;
        }
        let s = last.abs_diff(next);
        let expected = if aic.seek_samples == 0 {
            self.g.new_seek_mean
        } else {
            aic.seek_mean
        };
        // Better than what we expect from the anticipated process anyway.
        expected > s
    }

    /// `as_can_break_anticipation`: should we stop waiting for the anticipated process,
    /// given `rq` (a candidate: an arriving request, or the next in elevator order)?
    fn can_break(&mut self, rq: Option<Candidate>, now: Nanos) -> bool {
        let Some(ioc) = self.io_context else {
            return false;
        };
        // 1. The request is from the anticipated process (a write too: an fsync, say).
        if rq.is_some_and(|c| c.ctx == ioc) {
            return true;
        }
        // 2. Its request completed and antic_expire has passed (the timer is due).
        if self.ioc_finished && self.antic_expired(now) {
            return true;
        }
        let Some(aic) = self.aics.get(&ioc) else {
            return false;
        };
        // 3. It already has requests queued (dispatched-unactivated is always 0 here).
        if aic.nr_queued > 0 {
            return true;
        }
        // 4. A close sync request from another process: take it, and let it feed the
        //    anticipated process's history (cooperating processes).
        if let Some(c) = rq.filter(|c| c.sync) {
            if self.close_req(aic, c.sector, now) {
                let (jiffies, hz) = (self.jiffies(now), self.cfg.hz);
                let aic = self.aics.get_mut(&ioc).expect("looked up above");
                if !aic.running {
                    if aic.ttime_samples == 0 {
                        self.g.exit_prob = decay(self.g.exit_prob, ONE);
                    }
                    self.g.exit_no_coop = decay(self.g.exit_no_coop, 0);
                }
                update_iohist(&mut self.g, aic, (c.sector, c.end), jiffies, hz);
                return true;
            }
        }
        let (running, samples, mean) = (aic.running, aic.ttime_samples, aic.ttime_mean);
        // 5. It has exited, and exited processes are rarely followed by cooperators.
        if !running {
            if samples == 0 {
                self.g.exit_prob = decay(self.g.exit_prob, ONE);
            }
            if self.g.exit_no_coop > ONE / 2 {
                return true;
            }
        }
        // Think times are means in jiffies, as is antic_expire.
        let antic_expire = self.cfg.jiffies(self.cfg.antic_expire);
        if samples == 0 {
            // 6. No history: judge by new processes in general.
            if self.g.new_ttime_mean > antic_expire {
                return true;
            }
            if self.g.exit_prob * self.g.exit_no_coop > (ONE / 2) * ONE {
                return true;
            }
        } else if mean > antic_expire {
            // 7. It thinks too long between requests.
            return true;
        }
        false
    }

    /// `as_can_anticipate`: keep the disk idle for the anticipated process instead of
    /// dispatching the next request (`next`, possibly none)?
    fn can_anticipate(&mut self, next: Option<Key>, now: Nanos) -> bool {
        if self.io_context.is_none() {
            // The last request dispatched was an async write.
            return false;
        }
        if self.antic_status == AnticState::Finished {
            // Just finished: run the next request.
            return false;
        }
        let candidate = next.map(|(_, slot)| Candidate::of(self.request_in(slot)));
        !self.can_break(candidate, now)
    }

    // ----- the elevator -----

    fn request_in(&self, slot: u32) -> &Request {
        &self.fifos.get(slot).rq
    }

    /// `as_choose_req`: the better of two requests of direction `dir` from the head position,
    /// one-way with short backward seeks at [`BACK_PENALTY`].
    fn choose_req(&self, dir: usize, a: Option<Key>, b: Option<Key>) -> Option<Key> {
        let (s1, s2) = match (a, b) {
            (None, _) => return b,
            (Some(_), None) => return a,
            (Some(k1), Some(k2)) if k1 == k2 => return b,
            (Some((s1, _)), Some((s2, _))) => (s1, s2),
        };
        let last = self.last_sector[dir];
        // Distance, or None when behind the head beyond MAXBACK (wraps to the next sweep).
        let dist = |s: u64| {
            if s >= last {
                Some(s - last)
            } else if s + MAXBACK >= last {
                Some((last - s) * BACK_PENALTY)
            } else {
                None
            }
        };
        match (dist(s1), dist(s2)) {
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if s1 <= s2 {
                    a
                } else {
                    b
                }
            }
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    a
                } else {
                    b
                }
            }
        }
    }

    /// `as_find_next_rq`: the request to follow the one at `last` (still queued, at `at`) in elevator
    /// order: the better of its neighbours in the sort list, the one above (or, past the top,
    /// the lowest) and the one below. The head, `last_sector[dir]`, is already at its end.
    fn find_next_rq(&self, dir: usize, last: u64, at: Pos) -> Option<Key> {
        let list = &self.sort[dir];
        let next = list
            .after(at)
            .or_else(|| list.first().filter(|&(s, _)| s != last));
        self.choose_req(dir, next, list.before(at))
    }

    /// The oldest request in `dir`'s FIFO.
    fn fifo_head(&self, dir: usize) -> Option<Key> {
        let head = self.fifos.front(dir)?;
        Some((self.request_in(head).sector, head))
    }

    /// `as_fifo_expired`, rate-limited to one look per `fifo_expire` interval (in jiffies).
    fn fifo_expired(&mut self, dir: usize, now: Nanos) -> bool {
        let now = self.tick(now);
        if now.saturating_sub(self.last_check_fifo[dir]) < self.cfg.fifo_expire(dir) {
            return false;
        }
        self.last_check_fifo[dir] = now;
        self.fifos
            .front(dir)
            .is_some_and(|head| now > self.fifos.get(head).fifo_time)
    }

    /// `as_batch_expired` (`time_after(jiffies, current_batch_expires)`).
    fn batch_expired(&self, now: Nanos) -> bool {
        if self.changed_batch || self.new_batch {
            return false;
        }
        let now = self.tick(now);
        if self.batch_dir == SYNC {
            now > self.current_batch_expires
        } else {
            now > self.current_batch_expires || self.current_write_count == 0
        }
    }

    /// `update_write_batch`: resize the write batch from how long the last one took.
    fn update_write_batch(&mut self, now: Nanos) {
        let batch = self.cfg.write_batch_expire;
        let write_time = (self.tick(now) + batch).saturating_sub(self.current_batch_expires);
        if write_time > batch && !self.write_batch_idled {
            if write_time.as_ns() > batch.as_ns().saturating_mul(3) {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count -= 1;
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch.as_ns() > write_time.as_ns().saturating_mul(3) {
                self.write_batch_count *= 2;
            } else {
                self.write_batch_count += 1;
            }
        }
        self.write_batch_count = self.write_batch_count.max(1);
    }

    /// Drop an exited process's state once nothing refers to it.
    fn forget_if_done(&mut self, ctx: CtxId) {
        if self.exited == 0 || self.io_context == Some(ctx) {
            return;
        }
        if self
            .aics
            .get(&ctx)
            .is_some_and(|a| !a.running && a.nr_queued == 0)
        {
            self.aics.remove(&ctx);
            self.exited -= 1;
        }
    }

    /// `as_move_to_dispatch` (with `as_remove_queued_request`): take the request at `sector`
    /// off `dir`'s lists and hand it to the driver.
    fn move_to_dispatch(&mut self, dir: usize, (sector, slot): Key) -> Request {
        self.antic_stop();
        self.antic_status = AnticState::Off;
        let (ctx, end) = {
            let rq = self.request_in(slot);
            (rq.ctx, rq.end())
        };
        self.last_sector[dir] = end;
        let previous = if dir == SYNC {
            self.io_context.replace(ctx)
        } else {
            if self.current_write_count != 0 {
                self.current_write_count -= 1;
            }
            self.io_context.take()
        };
        self.ioc_finished = false;
        let at = self.sort[dir]
            .find(sector)
            .expect("a queued request is in its sort list");
        self.next_rq[dir] = self.find_next_rq(dir, sector, at);

        if let Some(aic) = self.aics.get_mut(&ctx) {
            aic.nr_queued -= 1;
        }
        self.sort[dir].remove_at(at);
        if let Entry::Occupied(e) = self.by_end.entry(end) {
            if *e.get() == slot {
                e.remove();
            }
        }
        let rq = self.fifos.remove(dir, slot).rq;
        self.nr_dispatched += 1;

        if let Some(old) = previous.filter(|&old| old != ctx) {
            self.forget_if_done(old);
        }
        self.forget_if_done(ctx);
        rq
    }

    /// `as_add_rq_rb`: file a request in `dir`'s sort list. A queued request starting at the
    /// same sector (an alias) goes to the dispatch list first.
    fn add_rq_rb(&mut self, dir: usize, sector: u64, slot: u32) {
        if let Err(alias) = self.sort[dir].insert(sector, slot) {
            let alias = self.move_to_dispatch(dir, (sector, alias));
            self.forced.push_back(alias);
            self.antic_stop();
            self.sort[dir]
                .insert(sector, slot)
                .expect("the alias left the sort list");
        }
    }

    /// `as_update_rq`: keep the next-request cache and check whether `rq` ends anticipation.
    fn update_rq(&mut self, dir: usize, c: Candidate, slot: u32, now: Nanos) {
        self.next_rq[dir] = self.choose_req(dir, Some((c.sector, slot)), self.next_rq[dir]);
        if matches!(
            self.antic_status,
            AnticState::WaitReq | AnticState::WaitNext
        ) && self.can_break(Some(c), now)
        {
            self.antic_stop();
        }
    }

    /// Forced dispatch of everything queued (`as_dispatch_request(q, 1)`), for a barrier.
    fn drain(&mut self, now: Nanos) {
        self.batch_dir = SYNC;
        self.changed_batch = false;
        self.new_batch = false;
        for dir in [SYNC, ASYNC] {
            while let Some(key) = self.next_rq[dir] {
                let rq = self.move_to_dispatch(dir, key);
                self.forced.push_back(rq);
            }
            self.last_check_fifo[dir] = self.tick(now);
        }
    }

    /// The body of `as_dispatch_request` (not forced): the sector key and direction of the
    /// request to dispatch, or what to tell the driver instead.
    fn select(&mut self, now: Nanos) -> Result<(usize, Key), Dispatch> {
        let reads = !self.fifos.is_empty(SYNC);
        let writes = !self.fifos.is_empty(ASYNC);

        // The write batch ran out of work: it cannot be timed.
        if self.batch_dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_batch_idled = true;
        }
        if !(reads || writes) {
            return Err(Dispatch::Empty);
        }
        match self.antic_status {
            AnticState::WaitReq => return Err(Dispatch::Empty),
            AnticState::WaitNext => {
                return Err(Dispatch::Idle {
                    until: self.antic_deadline,
                })
            }
            _ => {}
        }
        if self.changed_batch {
            return Err(Dispatch::Empty);
        }

        let mut chosen = None;
        let mut fifo_checked = false;
        if !(reads && writes && self.batch_expired(now)) {
            // The batch continues (or there is only one kind of request).
            let next = self.next_rq[self.batch_dir];
            if self.batch_dir == SYNC && self.cfg.antic_expire > Nanos::ZERO {
                if self.fifo_expired(SYNC, now) {
                    chosen = self.fifo_head(SYNC);
                    fifo_checked = true;
                } else if self.can_anticipate(next, now) {
                    self.antic_waitreq();
                    return Err(match self.antic_status {
                        AnticState::WaitNext => Dispatch::Idle {
                            until: self.antic_deadline,
                        },
                        _ => Dispatch::Empty,
                    });
                }
            }
            if chosen.is_none() {
                if let Some(key) = next {
                    if reads && !writes {
                        // The read batch clock only runs down while writes wait.
                        self.current_batch_expires = self.tick(now) + self.cfg.read_batch_expire;
                    }
                    chosen = Some(key);
                }
            }
        }

        if chosen.is_none() {
            // Start a new batch.
            if reads && !(writes && self.batch_dir == SYNC) {
                if self.batch_dir == ASYNC {
                    self.changed_batch = true;
                }
                self.batch_dir = SYNC;
            } else {
                // Writes: either there are no reads, or the last batch was a read batch.
                if self.batch_dir == SYNC {
                    self.changed_batch = true;
                    // The queue may have run out of reads before the first one completed.
                    self.new_batch = false;
                }
                self.batch_dir = ASYNC;
                self.current_write_count = self.write_batch_count;
                self.write_batch_idled = false;
            }
            chosen = self.fifo_head(self.batch_dir);
            self.last_check_fifo[self.batch_dir] = self.tick(now);
        }

        // An expired request is served first.
        if !fifo_checked && self.fifo_expired(self.batch_dir, now) {
            chosen = self.fifo_head(self.batch_dir);
        }

        if self.changed_batch {
            // Wait for the old batch's requests to complete before starting the new one.
            if self.nr_dispatched > 0 {
                return Err(Dispatch::Empty);
            }
            if self.batch_dir == ASYNC {
                self.current_batch_expires = self.tick(now) + self.cfg.write_batch_expire;
            } else {
                self.new_batch = true;
            }
            self.changed_batch = false;
        }
        let key = chosen.expect("a non-empty list has a request");
        Ok((self.batch_dir, key))
    }

    /// Try to grow a queued request of list `dir` by `rq` (back merge at its end, or front
    /// merge at its start). Returns the grown request's id.
    fn merge_into(&mut self, rq: &Request) -> Option<RequestId> {
        let fits = |q: &Request| q.op == rq.op && q.sectors + rq.sectors <= MAX_MERGE_SECTORS;
        // Back merge: a queued request (of either sync class) ending where `rq` starts.
        if let Some(&slot) = self.by_end.get(&rq.sector) {
            if fits(self.request_in(slot)) {
                self.by_end.remove(&rq.sector);
                self.by_end.insert(rq.end(), slot);
                let q = &mut self.fifos.get_mut(slot).rq;
                q.sectors += rq.sectors;
                return Some(q.id);
            }
        }
        // Front merge: a request of the same list starting where `rq` ends; it moves in the
        // sort list.
        let dir = dir_of(rq);
        let old = rq.end();
        let slot = self.sort[dir].get(old)?;
        if !fits(self.request_in(slot)) {
            return None;
        }
        self.sort[dir].remove(old);
        let id = {
            let q = &mut self.fifos.get_mut(slot).rq;
            q.sector = rq.sector;
            q.sectors += rq.sectors;
            q.id
        };
        if self.next_rq[dir] == Some((old, slot)) {
            self.next_rq[dir] = Some((rq.sector, slot));
        }
        self.add_rq_rb(dir, rq.sector, slot);
        Some(id)
    }
}

/// What the anticipation heuristics need to know of a request.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    ctx: CtxId,
    sector: u64,
    end: u64,
    sync: bool,
}

impl Candidate {
    fn of(rq: &Request) -> Candidate {
        Candidate {
            ctx: rq.ctx,
            sector: rq.sector,
            end: rq.end(),
            sync: rq.is_sync(),
        }
    }
}

fn dir_of(rq: &Request) -> usize {
    if rq.is_sync() {
        SYNC
    } else {
        ASYNC
    }
}

impl Scheduler for Anticipatory {
    fn name(&self) -> &'static str {
        "anticipatory"
    }

    fn try_merge(&mut self, rq: &Request, now: Nanos) -> Option<RequestId> {
        self.run_timer(now);
        if !matches!(rq.op, Op::Read | Op::Write | Op::Discard) || rq.sectors == 0 {
            return None;
        }
        self.merge_into(rq)
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        self.run_timer(now);
        if rq.op == Op::Flush {
            // A barrier: drain the elevator, then the flush goes behind everything.
            self.drain(now);
            self.forced.push_back(rq);
            return;
        }
        let dir = dir_of(&rq);
        let c = Candidate::of(&rq);
        let end = c.end;
        let (jiffies, hz) = (self.jiffies(now), self.cfg.hz);
        let aic = self.aics.get_or_insert(c.ctx);
        if c.sync {
            update_iohist(&mut self.g, aic, (c.sector, c.end), jiffies, hz);
        }
        aic.nr_queued += 1;

        let fifo_time = self.tick(now) + self.cfg.fifo_expire(dir);
        // Queued at the FIFO's tail before an alias is dispatched: the alias is older, so it
        // leaves the FIFO either way.
        let slot = self.fifos.push_back(dir, Queued { rq, fifo_time });
        self.add_rq_rb(dir, c.sector, slot);
        self.by_end.insert(end, slot);
        self.update_rq(dir, c, slot, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.run_timer(now);
        if let Some(rq) = self.forced.pop_front() {
            return Dispatch::Request(rq);
        }
        match self.select(now) {
            Ok((dir, key)) => Dispatch::Request(self.move_to_dispatch(dir, key)),
            Err(answer) => answer,
        }
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.run_timer(now);
        if rq.op == Op::Flush {
            // Unsorted requests are not reported to the elevator.
            return;
        }
        let dir = dir_of(rq);
        if self.changed_batch && self.nr_dispatched == 1 {
            // The old batch's last request: the new batch starts now.
            self.current_batch_expires = self.tick(now) + self.cfg.batch_expire(self.batch_dir);
            self.changed_batch = false;
            if self.batch_dir == SYNC {
                self.new_batch = true;
            }
        }
        self.nr_dispatched = self.nr_dispatched.saturating_sub(1);

        // A read batch is timed from its first completion (helps deep queues and caches).
        if self.new_batch && self.batch_dir == dir {
            self.update_write_batch(now);
            self.current_batch_expires = self.tick(now) + self.cfg.read_batch_expire;
            self.new_batch = false;
        }

        if self.io_context == Some(rq.ctx) {
            self.antic_start = self.tick(now);
            self.ioc_finished = true;
            if self.antic_status == AnticState::WaitReq {
                // The request we waited on is done: now anticipate the next one.
                self.antic_waitnext();
            }
        }

        if rq.is_sync() {
            let jiffies = self.jiffies(now);
            if let Some(aic) = self.aics.get_mut(&rq.ctx) {
                aic.io_running = true;
                aic.last_end_request = jiffies;
            }
        }
    }

    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        self.run_timer(now);
        if let Some(aic) = self.aics.get_mut(&ctx) {
            if aic.running {
                aic.running = false;
                self.exited += 1;
            }
        }
        self.forget_if_done(ctx);
    }

    fn queued(&self) -> usize {
        self.fifos.len() + self.forced.len()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let t = tunable::lookup("anticipatory", TUNABLES, name)?;
        tunable::check_range(t, value)?;
        if name == "hz" {
            return Err(TunableError::Invalid {
                reason: "hz is the kernel's CONFIG_HZ, fixed when the scheduler is built".into(),
            });
        }
        // as_var_store: msecs_to_jiffies.
        let hz = u64::from(self.cfg.hz);
        let v = Nanos(msecs_to_jiffies(value as u64, hz) * self.cfg.jiffy().as_ns());
        match name {
            "read_expire" => self.cfg.read_expire = v,
            "write_expire" => self.cfg.write_expire = v,
            "read_batch_expire" => self.cfg.read_batch_expire = v,
            "write_batch_expire" => self.cfg.write_batch_expire = v,
            "antic_expire" => self.cfg.antic_expire = v,
            _ => unreachable!("every tunable in TUNABLES is handled"),
        }
        Ok(())
    }
}
