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
//! One file per mechanism: the shared vocabulary (`anticipatory/types.rs`); the tunables in
//! jiffies (`anticipatory/config.rs`); per-process and global statistics
//! (`anticipatory/stats.rs`); the anticipation timer and heuristics (`anticipatory/antic.rs`);
//! selection, FIFOs and batches (`anticipatory/select.rs`); insertion and merging
//! (`anticipatory/insert.rs`). White-box tests sit beside them (`anticipatory/tests*.rs`).
//!
//! ## Tunables (sysfs names, milliseconds, 2.6.32 defaults at HZ = 1000)
//! Every time below is kept in jiffies, as the kernel keeps it: a value in ms becomes
//! `msecs_to_jiffies(ms)` (rounded up), and a default not given is the kernel's fraction of
//! `hz` (at `hz` = 250, `read_expire` is 31 jiffies = 124 ms and `antic_expire` 1 jiffy).
//! - `hz` = 1000: the kernel's timer frequency (`CONFIG_HZ`, fixed when the kernel is built;
//!   not a sysfs file): the length of a jiffy, 1/`hz` s. It comes first: the others
//!   are counted in it.
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
//!
//! The read-only `est_time` file is [`Anticipatory::est_time`].
//!
//! ## Fixed constants
//! `MAX_THINKTIME` `HZ/50` jiffies (20 ms), [`MAXBACK`] 1024*1024 sectors, [`BACK_PENALTY`] 2,
//! the close window base 8192 sectors widening for at most `20 * HZ / 1000` jiffies.
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
//!   `INITIAL_JIFFIES` (AS only takes differences). `est_time` reports jiffy means as ns.
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
//!   the device's limit, which the block layer passes (the queue's max_sectors). The generic `last_merge`
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

mod antic;
mod config;
mod insert;
mod select;
mod stats;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_closed_loop;
#[cfg(test)]
mod tests_props;
mod types;

use std::collections::VecDeque;

use crate::fifo::Fifos;
use crate::request::{CtxId, Op, Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::sort_list::SortList;
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

pub use config::{Config, ANTIC_EXPIRE_MAX_MS, TUNABLES};
pub use select::{BACK_PENALTY, MAXBACK};
use stats::{update_iohist, AicTable, EndMap, Globals, ONE};
use types::{dir_of, AnticState, Candidate, Key, Queued, ASYNC, SYNC};

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

    /// The start of the tick `now` falls in: what the kernel's `jiffies` says at `now`.
    fn tick(&self, now: Nanos) -> Nanos {
        let j = self.cfg.jiffy().as_ns();
        Nanos(now.as_ns() / j * j)
    }

    /// `jiffies` at `now`.
    fn jiffies(&self, now: Nanos) -> u64 {
        now.as_ns() / self.cfg.jiffy().as_ns()
    }
}

impl Scheduler for Anticipatory {
    fn name(&self) -> &'static str {
        "anticipatory"
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        self.run_timer(now);
        if !matches!(rq.op, Op::Read | Op::Write | Op::Discard) || rq.sectors == 0 {
            return None;
        }
        self.merge_into(rq, max_sectors)
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
        self.cfg.set("anticipatory", name, value)
    }
}
