//! deadline: sector-sorted batches with per-direction FIFO expiry (Jens Axboe's 2.6 deadline).
//!
//! Follows `block/deadline-iosched.c` of Linux 2.6.32; see `docs/deadline.md`.
//!
//! Every queued request sits in two structures of its data direction (reads; everything else
//! counts as a write, as `rq_data_dir` does): a tree sorted by start sector and a FIFO in
//! arrival order, each request stamped with a deadline (`now + read_expire` or
//! `now + write_expire`). Dispatch works in *batches* of one direction:
//!
//! 1. while the previous dispatch left a *next request* (the one after it in sector order, same
//!    direction) and fewer than `fifo_batch` requests went in this batch, send that one;
//! 2. otherwise start a batch: reads, unless writes are queued and reads have already been
//!    chosen over them `writes_starved` times in a row (then writes, and the count restarts);
//! 3. the batch starts at the head of that direction's FIFO if its deadline has passed
//!    (`now >= deadline`), else at the next request in sector order, else (see deviations) at
//!    the lowest sector of that direction.
//!
//! Merging ([`Scheduler::try_merge`]): a back merge into a queued request of the same direction
//! that ends where the new one starts, then (if `front_merges`) a front merge into one that
//! starts where the new one ends; never beyond [`MAX_MERGE_SECTORS`] in total. A front merge
//! moves the request in the sector tree; neither changes its FIFO position or deadline.
//!
//! ## Tunables (sysfs names, `/sys/block/<dev>/queue/iosched/`)
//! | name | unit | default | meaning |
//! |---|---|---|---|
//! | `read_expire` | ms | 500 | a read's deadline after its arrival |
//! | `write_expire` | ms | 5000 | a write's deadline after its arrival |
//! | `fifo_batch` | requests | 16 | requests per batch |
//! | `writes_starved` | count | 2 | read batches allowed to pass queued writes |
//! | `front_merges` | bool | 1 | try front merges |
//!
//! ## Deviations from 2.6.32
//! - **Where a batch starts when nothing expired and no next request is left**: 2.6.32 starts
//!   at the FIFO head (the oldest request); we sweep back to the lowest sector of the direction,
//!   the one-way elevator of 2.5 and early 2.6 (`deadline_find_first_drq`, still in 2.6.11,
//!   gone by 2.6.24), which is the deadline Morton measured against in 2003. Everything else
//!   about batches is 2.6.32's: a batch runs `fifo_batch` requests in sector order whether or
//!   not they are contiguous (2.6.24 and earlier also ended a batch at the first
//!   non-contiguous request).
//! - **Requests at the same sector** coexist in the tree (ordered by id). The kernel's rbtree
//!   refuses such an alias and sends the older request straight to the dispatch queue.
//! - **Merging**: the kernel merges bios into requests; we merge whole requests, as the
//!   driver offers them. The back-merge candidate is the request that starts just below the new
//!   one in sector order (the kernel's hash finds any request ending there, which differs only
//!   for overlapping queued requests). There is no one-hit `last_merge` cache (through which the
//!   kernel front-merges even with `front_merges` = 0), and no request-to-request merge after a
//!   bio merge closes a gap (the trait cannot retire a request already inserted). Only reads
//!   and writes merge; flushes and discards are queued as writes and never merged.
//! - **Units**: deadlines are kept in nanoseconds, not jiffies; a deadline is
//!   `arrival + expire` exactly, with no rounding to a 1 ms or 4 ms tick.
//! - `writes_starved` refuses negative values (the kernel accepts them; they act as 0).
//!
//! ## Cost
//! Requests live in a slab; the sector trees are `BTreeMap`s keyed by `(sector, id)` and the
//! FIFOs are intrusive doubly linked lists through the slab, so insert, dispatch and merge are
//! `O(log n)`. Once the slab has grown to the queue's peak depth, the only allocations are the
//! B-trees' own, when a node splits (and a free when nodes merge): amortised, not per call.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use crate::request::{Op, Request, RequestId, MAX_MERGE_SECTORS};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{self, Settings, Tunable, TunableError, Unit};

/// Default `read_expire`, ms.
pub const DEFAULT_READ_EXPIRE_MS: i64 = 500;
/// Default `write_expire`, ms.
pub const DEFAULT_WRITE_EXPIRE_MS: i64 = 5_000;
/// Default `fifo_batch`, requests.
pub const DEFAULT_FIFO_BATCH: i64 = 16;
/// Default `writes_starved`, read batches.
pub const DEFAULT_WRITES_STARVED: i64 = 2;
/// Default `front_merges` (on).
pub const DEFAULT_FRONT_MERGES: i64 = 1;

const INT_MAX: i64 = i32::MAX as i64;

/// `read_expire`: a read's deadline after its arrival, ms.
pub const READ_EXPIRE: Tunable = Tunable {
    name: "read_expire",
    unit: Unit::Ms,
    default: DEFAULT_READ_EXPIRE_MS,
    min: 0,
    max: INT_MAX,
    doc: "deadline of a read, counted from its arrival",
};

/// `write_expire`: a write's deadline after its arrival, ms.
pub const WRITE_EXPIRE: Tunable = Tunable {
    name: "write_expire",
    unit: Unit::Ms,
    default: DEFAULT_WRITE_EXPIRE_MS,
    min: 0,
    max: INT_MAX,
    doc: "deadline of a write, counted from its arrival",
};

/// `fifo_batch`: requests per batch.
pub const FIFO_BATCH: Tunable = Tunable {
    name: "fifo_batch",
    unit: Unit::Requests,
    default: DEFAULT_FIFO_BATCH,
    min: 0,
    max: INT_MAX,
    doc: "requests dispatched in sector order before the direction and FIFO are checked again",
};

/// `writes_starved`: read batches allowed to pass queued writes.
pub const WRITES_STARVED: Tunable = Tunable {
    name: "writes_starved",
    unit: Unit::Count,
    default: DEFAULT_WRITES_STARVED,
    min: 0,
    max: INT_MAX,
    doc: "read batches that may be chosen over queued writes before a write batch",
};

/// `front_merges`: whether front merges are tried.
pub const FRONT_MERGES: Tunable = Tunable {
    name: "front_merges",
    unit: Unit::Bool,
    default: DEFAULT_FRONT_MERGES,
    min: 0,
    max: 1,
    doc: "1 to merge a new request in front of a queued one that starts where it ends",
};

/// deadline's tunables, as sysfs names them (mq-deadline shares them).
pub const TUNABLES: &[Tunable] = &[
    READ_EXPIRE,
    WRITE_EXPIRE,
    FIFO_BATCH,
    WRITES_STARVED,
    FRONT_MERGES,
];

/// deadline's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// How long after its arrival a read expires (`read_expire`).
    pub read_expire: Nanos,
    /// How long after its arrival a write expires (`write_expire`).
    pub write_expire: Nanos,
    /// Requests per batch (`fifo_batch`); 0 behaves as 1.
    pub fifo_batch: u32,
    /// Read batches that may pass queued writes before a write batch (`writes_starved`).
    pub writes_starved: u32,
    /// Whether to try front merges (`front_merges`).
    pub front_merges: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            read_expire: Nanos::from_ms(DEFAULT_READ_EXPIRE_MS as u64),
            write_expire: Nanos::from_ms(DEFAULT_WRITE_EXPIRE_MS as u64),
            fifo_batch: DEFAULT_FIFO_BATCH as u32,
            writes_starved: DEFAULT_WRITES_STARVED as u32,
            front_merges: DEFAULT_FRONT_MERGES != 0,
        }
    }
}

impl Config {
    /// Build from user settings: every name must be one of [`TUNABLES`] and in range.
    pub fn from_settings(settings: &Settings) -> Result<Config, TunableError> {
        settings.validate("deadline", TUNABLES)?;
        let mut c = Config::default();
        for name in settings.names() {
            c.apply(name, settings.get(TUNABLES, name));
        }
        Ok(c)
    }

    /// Set one tunable from its sysfs integer; the value has been range-checked.
    fn apply(&mut self, name: &str, value: i64) {
        match name {
            "read_expire" => self.read_expire = Nanos::from_ms(value as u64),
            "write_expire" => self.write_expire = Nanos::from_ms(value as u64),
            "fifo_batch" => self.fifo_batch = value as u32,
            "writes_starved" => self.writes_starved = value as u32,
            "front_merges" => self.front_merges = value != 0,
            _ => unreachable!("{name} is not in deadline's table"),
        }
    }
}

/// Index of the read direction in the per-direction arrays.
const READ: usize = 0;
/// Index of the write direction (everything that is not a read).
const WRITE: usize = 1;
/// "No slot" in the FIFO links.
const NIL: u32 = u32::MAX;

fn dir_of(rq: &Request) -> usize {
    if rq.op.is_read() {
        READ
    } else {
        WRITE
    }
}

/// A queued request and its FIFO links.
#[derive(Debug)]
struct Entry {
    rq: Request,
    /// `arrival + expire` of its direction.
    deadline: Nanos,
    prev: u32,
    next: u32,
}

/// One direction's sort tree and FIFO.
#[derive(Debug, Default)]
struct Lists {
    /// (start sector, id) -> slot.
    sorted: BTreeMap<(u64, u64), u32>,
    head: u32,
    tail: u32,
}

/// Conservation counters: every request is inserted or merged once, dispatched once if
/// inserted, and the policy holds `inserted - dispatched`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests inserted.
    pub inserted: u64,
    /// Requests merged into a queued request instead of being inserted.
    pub merged: u64,
    /// Requests dispatched.
    pub dispatched: u64,
    /// Completions reported.
    pub completed: u64,
}

/// The deadline scheduler.
#[derive(Debug)]
pub struct Deadline {
    config: Config,
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    lists: [Lists; 2],
    /// The request after the last dispatched one in sector order, in the last one's direction.
    next_rq: [Option<u32>; 2],
    /// Requests dispatched in the current batch.
    batching: u32,
    /// Times a read batch was chosen while writes were queued, since the last write batch.
    starved: u32,
    queued: usize,
    counters: Counters,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new(Config::default())
    }
}

impl Deadline {
    /// An empty scheduler with `config`.
    pub fn new(config: Config) -> Deadline {
        let empty = || Lists {
            sorted: BTreeMap::new(),
            head: NIL,
            tail: NIL,
        };
        Deadline {
            config,
            slots: Vec::new(),
            free: Vec::new(),
            lists: [empty(), empty()],
            next_rq: [None, None],
            batching: 0,
            starved: 0,
            queued: 0,
            counters: Counters::default(),
        }
    }

    /// Build from user settings (see [`TUNABLES`]).
    pub fn from_settings(settings: &Settings) -> Result<Deadline, TunableError> {
        Ok(Deadline::new(Config::from_settings(settings)?))
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Conservation counters since creation.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    fn entry(&self, slot: u32) -> &Entry {
        self.slots[slot as usize]
            .as_ref()
            .expect("deadline: slot in a list is occupied")
    }

    fn entry_mut(&mut self, slot: u32) -> &mut Entry {
        self.slots[slot as usize]
            .as_mut()
            .expect("deadline: slot in a list is occupied")
    }

    fn key(&self, slot: u32) -> (u64, u64) {
        let rq = &self.entry(slot).rq;
        (rq.sector, rq.id.0)
    }

    /// The request after `slot` in its direction's sector order.
    fn latter(&self, dir: usize, slot: u32) -> Option<u32> {
        let key = self.key(slot);
        self.lists[dir]
            .sorted
            .range((Excluded(key), Unbounded))
            .next()
            .map(|(_, &s)| s)
    }

    /// Take `slot` off its lists and hand its request out, remembering where the sweep goes on.
    fn move_to_dispatch(&mut self, slot: u32) -> Request {
        let dir = dir_of(&self.entry(slot).rq);
        self.next_rq = [None, None];
        self.next_rq[dir] = self.latter(dir, slot);
        let key = self.key(slot);
        self.lists[dir].sorted.remove(&key);
        let entry = self.slots[slot as usize]
            .take()
            .expect("deadline: dispatched slot is occupied");
        if entry.prev == NIL {
            self.lists[dir].head = entry.next;
        } else {
            self.entry_mut(entry.prev).next = entry.next;
        }
        if entry.next == NIL {
            self.lists[dir].tail = entry.prev;
        } else {
            self.entry_mut(entry.next).prev = entry.prev;
        }
        self.free.push(slot);
        self.queued -= 1;
        self.counters.dispatched += 1;
        entry.rq
    }

    fn fifo_expired(&self, dir: usize, now: Nanos) -> bool {
        let head = self.lists[dir].head;
        head != NIL && now >= self.entry(head).deadline
    }
}

impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn try_merge(&mut self, rq: &Request, _now: Nanos) -> Option<RequestId> {
        if !matches!(rq.op, Op::Read | Op::Write) || rq.sectors == 0 {
            return None;
        }
        let dir = dir_of(rq);
        let fits = |q: &Request| q.op == rq.op && q.sectors + rq.sectors <= MAX_MERGE_SECTORS;

        // Back merge: the queued request just below rq in sector order ends where rq starts.
        let below = self.lists[dir]
            .sorted
            .range(..(rq.sector, 0))
            .next_back()
            .map(|(_, &s)| s);
        if let Some(slot) = below {
            let q = &mut self.entry_mut(slot).rq;
            if q.end() == rq.sector && fits(q) {
                q.sectors += rq.sectors;
                let id = q.id;
                self.counters.merged += 1;
                return Some(id);
            }
        }

        // Front merge: a queued request starts where rq ends; it moves down in the sector tree.
        if self.config.front_merges {
            let end = rq.end();
            let above = self.lists[dir]
                .sorted
                .range((Included((end, 0)), Included((end, u64::MAX))))
                .next()
                .map(|(&k, &s)| (k, s));
            if let Some((key, slot)) = above {
                let q = &mut self.entry_mut(slot).rq;
                if fits(q) {
                    q.sector = rq.sector;
                    q.sectors += rq.sectors;
                    let id = q.id;
                    let sorted = &mut self.lists[dir].sorted;
                    sorted.remove(&key);
                    sorted.insert((rq.sector, id.0), slot);
                    self.counters.merged += 1;
                    return Some(id);
                }
            }
        }
        None
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        let dir = dir_of(&rq);
        let expire = if dir == READ {
            self.config.read_expire
        } else {
            self.config.write_expire
        };
        let key = (rq.sector, rq.id.0);
        let tail = self.lists[dir].tail;
        let entry = Entry {
            rq,
            deadline: now.saturating_add(expire),
            prev: tail,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(entry);
                s
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        if tail == NIL {
            self.lists[dir].head = slot;
        } else {
            self.entry_mut(tail).next = slot;
        }
        self.lists[dir].tail = slot;
        self.lists[dir].sorted.insert(key, slot);
        self.queued += 1;
        self.counters.inserted += 1;
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        // Continue the batch in sector order while it has room.
        if let Some(slot) = self.next_rq[WRITE].or(self.next_rq[READ]) {
            if self.batching < self.config.fifo_batch {
                self.batching += 1;
                return Dispatch::Request(self.move_to_dispatch(slot));
            }
        }

        // Start a batch: choose the direction.
        let reads = self.lists[READ].head != NIL;
        let writes = self.lists[WRITE].head != NIL;
        let dir = if reads {
            let starved = writes && self.starved >= self.config.writes_starved;
            if writes {
                self.starved = self.starved.saturating_add(1);
            }
            if starved {
                self.starved = 0;
                WRITE
            } else {
                READ
            }
        } else if writes {
            self.starved = 0;
            WRITE
        } else {
            return Dispatch::Empty;
        };

        // Choose where the batch starts.
        let slot = if self.fifo_expired(dir, now) {
            self.lists[dir].head
        } else if let Some(next) = self.next_rq[dir] {
            next
        } else {
            *self.lists[dir]
                .sorted
                .values()
                .next()
                .expect("deadline: a direction with a FIFO head has a sorted request")
        };
        self.batching = 1;
        Dispatch::Request(self.move_to_dispatch(slot))
    }

    fn complete(&mut self, _rq: &Request, _now: Nanos) {
        self.counters.completed += 1;
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let t = tunable::lookup("deadline", TUNABLES, name)?;
        tunable::check_range(t, value)?;
        self.config.apply(name, value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};

    /// Dispatch until the policy has nothing, completing each at once; the ids in order.
    fn drain(s: &mut Deadline, now: Nanos) -> Vec<u64> {
        let mut order = Vec::new();
        while let Dispatch::Request(r) = s.dispatch(now) {
            s.complete(&r, now);
            order.push(r.id.0);
        }
        order
    }

    fn with(f: impl FnOnce(&mut Config)) -> Deadline {
        let mut c = Config::default();
        f(&mut c);
        Deadline::new(c)
    }

    #[test]
    fn defaults_match_the_kernel() {
        let c = Config::default();
        assert_eq!(c.read_expire, Nanos::from_ms(500));
        assert_eq!(c.write_expire, Nanos::from_secs(5));
        assert_eq!(
            (c.fifo_batch, c.writes_starved, c.front_merges),
            (16, 2, true)
        );
        for t in TUNABLES {
            let mut s = Settings::new();
            s.set(t.name, t.default);
            assert_eq!(Config::from_settings(&s).unwrap(), c, "{}", t.name);
        }
    }

    #[test]
    fn settings_are_applied_and_out_of_range_values_refused() {
        let mut s = Settings::new();
        s.set("read_expire", 20)
            .set("fifo_batch", 4)
            .set("front_merges", 0);
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.read_expire, Nanos::from_ms(20));
        assert_eq!(c.fifo_batch, 4);
        assert!(!c.front_merges);
        let mut bad = Settings::new();
        bad.set("writes_starved", -1);
        assert!(matches!(
            Deadline::from_settings(&bad),
            Err(TunableError::OutOfRange { .. })
        ));
        let mut d = Deadline::default();
        assert!(d.set_tunable("front_merges", 2).is_err());
        d.set_tunable("fifo_batch", 3).unwrap();
        assert_eq!(d.config().fifo_batch, 3);
    }

    #[test]
    fn batch_sweeps_upward_in_sector_order_from_the_lowest_sector() {
        let mut s = Deadline::default();
        for (id, sector) in [(1, 700), (2, 300), (3, 900), (4, 100), (5, 500)] {
            s.insert(rq(id, 1).sector(sector).read().build(), Nanos::ZERO);
        }
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![4, 2, 5, 1, 3]);
    }

    #[test]
    fn batch_continues_from_the_next_request_after_new_arrivals_below_it() {
        let mut s = Deadline::default();
        for (id, sector) in [(1, 100), (2, 500), (3, 900)] {
            s.insert(rq(id, 1).sector(sector).read().build(), Nanos::ZERO);
        }
        let Dispatch::Request(first) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!(first.id.0, 1);
        // A request below the head position arrives: the sweep goes on upward first.
        s.insert(rq(4, 2).sector(50).read().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![2, 3, 4]);
    }

    #[test]
    fn batch_ends_after_fifo_batch_requests_and_starved_writes_get_their_turn() {
        let mut s = with(|c| {
            c.fifo_batch = 3;
            c.writes_starved = 1;
        });
        for (id, sector) in [(1, 10), (2, 20), (3, 30), (4, 40)] {
            s.insert(rq(id, 1).sector(sector).read().build(), Nanos::ZERO);
        }
        s.insert(rq(9, 2).sector(5).write().build(), Nanos::ZERO);
        // One read batch of exactly three, then the write that one read batch has starved.
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 2, 3, 9, 4]);
    }

    #[test]
    fn reads_are_preferred_over_writes_queued_first() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(10).write().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(20).write().build(), Nanos::ZERO);
        s.insert(rq(3, 2).sector(9_000).read().build(), Nanos::ZERO);
        let Dispatch::Request(first) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!(first.id.0, 3);
    }

    #[test]
    fn writes_starved_read_batches_then_one_write_batch() {
        // Batches of one request make each dispatch a batch decision.
        let mut s = with(|c| {
            c.fifo_batch = 1;
            c.writes_starved = 2;
        });
        for id in 1..=6 {
            s.insert(rq(id, 1).sector(id * 100).read().build(), Nanos::ZERO);
        }
        s.insert(rq(10, 2).sector(50).write().build(), Nanos::ZERO);
        s.insert(rq(11, 2).sector(60).write().build(), Nanos::ZERO);
        // Two read batches pass the writes, the third decision goes to writes; then again.
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 2, 10, 3, 4, 11, 5, 6]);
    }

    #[test]
    fn expired_read_fifo_head_restarts_the_batch_from_the_fifo() {
        let mut s = with(|c| {
            c.read_expire = Nanos::from_ms(100);
            c.fifo_batch = 2;
        });
        // An old read far down the disk, then a run of reads low on the disk.
        s.insert(rq(1, 1).sector(90_000).read().build(), Nanos::ZERO);
        for id in 2..=7 {
            s.insert(rq(id, 2).sector(id * 8).read().build(), Nanos::from_ms(50));
        }
        // Before expiry the sweep starts at the lowest sector...
        let Dispatch::Request(r) = s.dispatch(Nanos::from_ms(60)) else {
            panic!()
        };
        assert_eq!(r.id.0, 2);
        let Dispatch::Request(r) = s.dispatch(Nanos::from_ms(60)) else {
            panic!()
        };
        assert_eq!(r.id.0, 3);
        // ... at 100 ms request 1 expires: the next batch starts from the FIFO head, and goes
        // on from there in sector order (nothing above it), then sweeps back to the low run.
        assert_eq!(drain(&mut s, Nanos::from_ms(100)), vec![1, 4, 5, 6, 7]);
    }

    #[test]
    fn read_is_not_expired_one_nanosecond_before_its_deadline() {
        let mut s = with(|c| c.read_expire = Nanos::from_ms(100));
        s.insert(rq(1, 1).sector(90_000).read().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(8).read().build(), Nanos::ZERO);
        let Dispatch::Request(r) = s.dispatch(Nanos::from_ms(100) - Nanos(1)) else {
            panic!()
        };
        assert_eq!(r.id.0, 2);
    }

    #[test]
    fn expired_write_is_served_when_its_batch_comes() {
        let mut s = with(|c| {
            c.write_expire = Nanos::from_ms(10);
            c.fifo_batch = 1;
            c.writes_starved = 1;
        });
        s.insert(rq(1, 1).sector(500).write().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(100).write().build(), Nanos::ZERO);
        for id in 3..=5 {
            s.insert(rq(id, 2).sector(id * 8).read().build(), Nanos::ZERO);
        }
        // One read batch, then the write batch starts at the expired FIFO head (sector 500),
        // not at the lowest write.
        let order = drain(&mut s, Nanos::from_ms(20));
        assert_eq!(&order[..2], &[3, 1]);
    }

    #[test]
    fn back_merge_grows_a_queued_request_of_the_same_direction() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(108).sectors(8).write().build(), Nanos::ZERO);
        let into = s.try_merge(&rq(3, 2).sector(108).sectors(8).read().build(), Nanos::ZERO);
        assert_eq!(into, Some(RequestId(1)));
        // A write starting at 116 back-merges into the queued write, never into a read.
        let into = s.try_merge(
            &rq(4, 2).sector(116).sectors(8).write().build(),
            Nanos::ZERO,
        );
        assert_eq!(into, Some(RequestId(2)));
        let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!((r.id.0, r.sector, r.sectors), (1, 100, 16));
        assert_eq!(s.counters().merged, 2);
    }

    #[test]
    fn merge_never_builds_a_request_above_max_sectors() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(0).sectors(200).read().build(), Nanos::ZERO);
        let big = rq(2, 1).sector(200).sectors(57).read().build();
        assert_eq!(s.try_merge(&big, Nanos::ZERO), None);
        let fits = rq(3, 1).sector(200).sectors(56).read().build();
        assert_eq!(s.try_merge(&fits, Nanos::ZERO), Some(RequestId(1)));
    }

    #[test]
    fn front_merge_moves_the_request_down_the_sort_order() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(96).sectors(2).read().build(), Nanos::ZERO);
        let into = s.try_merge(&rq(3, 2).sector(92).sectors(8).read().build(), Nanos::ZERO);
        assert_eq!(into, Some(RequestId(1)));
        // Request 1 now covers 92..108 and is the lowest sector.
        let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!((r.id.0, r.sector, r.sectors), (1, 92, 16));
    }

    #[test]
    fn front_merges_off_refuses_front_but_keeps_back_merges() {
        let mut s = with(|c| c.front_merges = false);
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        let front = rq(2, 1).sector(92).sectors(8).read().build();
        assert_eq!(s.try_merge(&front, Nanos::ZERO), None);
        let back = rq(3, 1).sector(108).sectors(8).read().build();
        assert_eq!(s.try_merge(&back, Nanos::ZERO), Some(RequestId(1)));
    }

    #[test]
    fn flushes_are_never_merged() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(100).sectors(8).write().build(), Nanos::ZERO);
        let mut flush = rq(2, 1).sector(108).sectors(8).write().build();
        flush.op = Op::Flush;
        assert_eq!(s.try_merge(&flush, Nanos::ZERO), None);
    }

    #[test]
    fn harness_run_completes_everything_with_merges() {
        let mut h = Harness::new(Deadline::default(), 1, |_| Nanos::from_ms(2));
        for i in 0..20u64 {
            // Sequential 4 KiB reads from one process, 1 ms apart: later ones merge while
            // earlier ones wait for the device.
            h.submit(rq(i, 1).sector(i * 8).read().at(Nanos::from_ms(i)));
        }
        let out = h.run();
        let sectors: u32 = out.served.iter().map(|s| s.rq.sectors).sum();
        assert_eq!(sectors, 160);
        assert!(out.served.len() < 20, "contiguous reads were merged");
    }
}
