//! deadline: sector-sorted batches with per-direction FIFO expiry (Jens Axboe), as in Linux
//! 2.6.32 `block/deadline-iosched.c`; see `docs/deadline.md`. The 2.5.59 deadline that
//! Morton measured against in 2003 is [`v2_5`] (`--sched deadline-2.5`).
//!
//! Every queued request sits in two structures of its data direction (reads; everything else
//! counts as a write, as `rq_data_dir` does): a tree sorted by start sector and a FIFO in
//! arrival order, each request stamped with a deadline (`now + read_expire` or
//! `now + write_expire`). Dispatch (`deadline_dispatch_requests`) works in *batches* of one
//! direction:
//!
//! 1. while the previous dispatch left a *next request* (`next_rq`: the one after it in sector
//!    order, same direction) and fewer than `fifo_batch` requests went in this batch, send
//!    that one: a batch counts requests, contiguous or not;
//! 2. otherwise start a batch: reads, unless writes are queued and reads have already been
//!    chosen over them `writes_starved` times in a row (then writes, and the count restarts);
//! 3. the batch starts at the head of that direction's FIFO (the oldest request) if its
//!    deadline has passed (`time_after`: strictly) or if there is no next request in that
//!    direction, else at the next request. Every dispatch clears the other direction's next
//!    request (`deadline_move_request`), so a batch after a direction switch always starts at
//!    the FIFO head, and so does one after the sweep ran off the top of the disk.
//!
//! The next request is fixed when its predecessor is dispatched: a request arriving between
//! the two is passed over by the batch under way.
//!
//! Merging ([`Scheduler::try_merge`]): a back merge into a queued request of the same direction
//! that ends where the new one starts, then (if `front_merges`) a front merge into one that
//! starts where the new one ends; never beyond the device's
//! limit (the `max_sectors` the block layer passes) in total. A front merge
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
//! - **Requests at the same sector** coexist in the tree (ordered by id). The kernel's rbtree
//!   refuses such an alias and sends the older request straight to the dispatch queue.
//! - **Merging**: the kernel merges bios into requests; we merge whole requests, as the
//!   driver offers them. The back-merge candidate comes from a hash of end sectors, as the kernel's
//!   merge hash (`elv_rqhash_find`); where two queued requests end at one sector only the newer
//!   is found (the kernel's hash chain keeps both, and finds the older once the newer goes). There is no one-hit `last_merge` cache (through which the
//!   kernel front-merges even with `front_merges` = 0), and no request-to-request merge after a
//!   bio merge closes a gap (the trait cannot retire a request already inserted). Only reads
//!   and writes merge; flushes and discards are queued as writes and never merged.
//! - **Units**: deadlines are kept in nanoseconds, not jiffies: a request expires once `now`
//!   is past `arrival + expire`, where the kernel's jiffy counter must pass the jiffy of the
//!   deadline (up to one tick later).
//! - `writes_starved` refuses negative values (the kernel accepts them; compared as unsigned
//!   they never force a write batch).
//!
//! ## Cost
//! Requests live in a slab; the sector trees are sorted blocks of keys and slots
//! (`sort_list.rs`) keyed by `(sector, id)`, and the FIFOs are intrusive doubly linked lists
//! through the slab, so insert, dispatch and merge are `O(log n)` and a tree walk touches only
//! keys in contiguous memory, not the requests. Once the slab and the blocks have grown to the
//! queue's peak depth, nothing is allocated.

mod lists;
pub mod v2_5;

use crate::request::{Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};
use lists::Lists;

const INT_MAX: i64 = i32::MAX as i64;

crate::tunable::tunables! {
    policy: "deadline";
    /// deadline's tunables, as sysfs names them.
    pub const TUNABLES;
    /// deadline's settings.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// How long after its arrival a read expires (`read_expire`).
        read_expire: Nanos = "read_expire" {
            unit: Ms,
            default: 500,
            min: 0,
            max: INT_MAX,
            doc: "deadline of a read, counted from its arrival",
        },
        /// How long after its arrival a write expires (`write_expire`).
        write_expire: Nanos = "write_expire" {
            unit: Ms,
            default: 5_000,
            min: 0,
            max: INT_MAX,
            doc: "deadline of a write, counted from its arrival",
        },
        /// Requests per batch (`fifo_batch`); 0 behaves as 1.
        fifo_batch: u32 = "fifo_batch" {
            unit: Requests,
            default: 16,
            min: 0,
            max: INT_MAX,
            doc: "requests dispatched in sector order before the direction and FIFO are checked again",
        },
        /// Read batches that may pass queued writes before a write batch (`writes_starved`).
        writes_starved: u32 = "writes_starved" {
            unit: Count,
            default: 2,
            min: 0,
            max: INT_MAX,
            doc: "read batches that may be chosen over queued writes before a write batch",
        },
        /// Whether to try front merges (`front_merges`).
        front_merges: bool = "front_merges" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "1 to merge a new request in front of a queued one that starts where it ends",
        },
    }
}

/// Index of the read direction in the per-direction arrays.
pub(crate) const READ: usize = 0;
/// Index of the write direction (everything that is not a read).
pub(crate) const WRITE: usize = 1;

/// `rq_data_dir`: reads, or everything else.
pub(crate) fn dir_of(rq: &Request) -> usize {
    if rq.op.is_read() {
        READ
    } else {
        WRITE
    }
}

/// The direction of the batch a dispatch starts, given whether reads and writes are queued,
/// counting a read batch chosen over queued writes in `starved`; `None` with nothing queued.
/// Every deadline version chooses so: 2.6.32's and 2.5.59's `deadline_dispatch_requests`
/// and mq-deadline's `__dd_dispatch_request` (`dd->starved++ >= dd->writes_starved`, over
/// one priority level's queues).
pub(crate) fn choose_direction(
    reads: bool,
    writes: bool,
    starved: &mut u32,
    writes_starved: u32,
) -> Option<usize> {
    if reads {
        if writes {
            let passed = *starved;
            *starved = starved.saturating_add(1);
            if passed >= writes_starved {
                *starved = 0;
                return Some(WRITE);
            }
        }
        Some(READ)
    } else if writes {
        *starved = 0;
        Some(WRITE)
    } else {
        None
    }
}

/// The deadline of a request of `dir` arriving at `now`: `now + read_expire` for a read,
/// `now + write_expire` otherwise (every deadline version's `deadline_add_request` /
/// `dd_insert_request`).
pub(crate) fn deadline_of(
    read_expire: Nanos,
    write_expire: Nanos,
    dir: usize,
    now: Nanos,
) -> Nanos {
    let expire = if dir == READ {
        read_expire
    } else {
        write_expire
    };
    now.saturating_add(expire)
}

/// What 2.6.32's and 2.5.59's deadline keep alike: the settings, the queues, the next request
/// in sector order and the starvation count; each version adds its batch state.
#[derive(Debug)]
struct Queues {
    config: Config,
    lists: Lists,
    /// The request after the last dispatched one in sector order, in the last one's direction
    /// (`next_rq`; 2.5.59's `next_drq`); the other direction's is always empty.
    next_rq: [Option<u32>; 2],
    /// Times a read was chosen while writes were queued, since the last write (a batch in
    /// 2.6.32; in 2.5.59 every fresh choice of direction).
    starved: u32,
}

impl Queues {
    fn new(config: Config) -> Queues {
        Queues {
            config,
            lists: Lists::new(),
            next_rq: [None, None],
            starved: 0,
        }
    }

    /// `deadline_move_request`: clear both next requests, remember the one after `slot` in
    /// its direction, and hand `slot`'s request out.
    fn move_request(&mut self, slot: u32) -> Request {
        let next = self.lists.latter(slot);
        let rq = self.lists.remove(slot);
        self.next_rq = [None, None];
        self.next_rq[dir_of(&rq)] = next;
        rq
    }

    /// The direction of a new batch ([`choose_direction`]).
    fn choose_direction(&mut self) -> Option<usize> {
        let (reads, writes) = (self.lists.has(READ), self.lists.has(WRITE));
        choose_direction(reads, writes, &mut self.starved, self.config.writes_starved)
    }

    /// The next request in sector order, in whichever direction has one.
    fn next(&self) -> Option<u32> {
        self.next_rq[WRITE].or(self.next_rq[READ])
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32) -> Option<RequestId> {
        self.lists
            .try_merge(rq, self.config.front_merges, max_sectors)
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        let c = &self.config;
        let deadline = deadline_of(c.read_expire, c.write_expire, dir_of(&rq), now);
        self.lists.insert(rq, deadline);
    }
}

/// The deadline scheduler of 2.6.32.
#[derive(Debug)]
pub struct Deadline {
    q: Queues,
    /// Requests dispatched in the current batch.
    batching: u32,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new(Config::default())
    }
}

impl Deadline {
    /// An empty scheduler with `config`.
    pub fn new(config: Config) -> Deadline {
        Deadline {
            q: Queues::new(config),
            batching: 0,
        }
    }

    /// Build from user settings (see [`TUNABLES`]).
    pub fn from_settings(settings: &Settings) -> Result<Deadline, TunableError> {
        Ok(Deadline::new(Config::from_settings(settings)?))
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.q.config
    }
}

impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, _now: Nanos) -> Option<RequestId> {
        self.q.try_merge(rq, max_sectors)
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        self.q.insert(rq, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        // Continue the batch in sector order while it has room.
        if let Some(slot) = self.q.next() {
            if self.batching < self.q.config.fifo_batch {
                self.batching += 1;
                return Dispatch::Request(self.q.move_request(slot));
            }
        }
        let Some(dir) = self.q.choose_direction() else {
            return Dispatch::Empty;
        };
        // An expired FIFO head, a direction switch or a sweep off the top: the FIFO head;
        // else go on from the next request.
        let slot = match self.q.next_rq[dir] {
            Some(next) if !self.q.lists.expired(dir, now) => next,
            _ => self
                .q
                .lists
                .fifo_head(dir)
                .expect("deadline: the chosen direction has a request"),
        };
        self.batching = 1;
        Dispatch::Request(self.q.move_request(slot))
    }

    fn complete(&mut self, _rq: &Request, _now: Nanos) {}

    fn queued(&self) -> usize {
        self.q.lists.queued()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.q.config.set("deadline", name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counted::Counted;
    use crate::harness::{drain_ids as drain, next_id, rq, Harness};
    use crate::request::DEFAULT_MERGE_SECTORS;

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

    /// Process 1's 4 KiB reads queued at `at`: (id, sector).
    pub(super) fn reads(s: &mut impl Scheduler, at: Nanos, reqs: &[(u64, u64)]) {
        for &(id, sector) in reqs {
            s.insert(rq(id, 1).sector(sector).read().build(), at);
        }
    }

    /// 2.6.32 `deadline_dispatch_requests`: with no next request the batch starts at the FIFO
    /// head, the oldest read, and sweeps upward from there; off the top it starts again at the
    /// (new) FIFO head. The hybrid this replaced swept from the lowest sector: 4, 2, 5, 1, 3.
    #[test]
    fn dispatch_requests_starts_a_batch_at_the_fifo_head_not_the_lowest_sector() {
        let mut s = Deadline::default();
        reads(
            &mut s,
            Nanos::ZERO,
            &[(1, 700), (2, 300), (3, 900), (4, 100), (5, 500)],
        );
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 3, 2, 5, 4]);
    }

    /// 2.6.32 `deadline_move_request`: the next request is fixed when its predecessor goes out,
    /// so a read arriving between the two is passed over by the batch under way.
    #[test]
    fn move_request_fixes_next_rq_so_an_arrival_behind_it_waits() {
        let mut s = Deadline::default();
        reads(&mut s, Nanos::ZERO, &[(1, 100), (2, 500), (3, 900)]);
        assert_eq!(next_id(&mut s, Nanos::ZERO), 1);
        s.insert(rq(4, 2).sector(300).read().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![2, 3, 4]);
    }

    /// 2.6.32 `deadline_move_request` clears both `next_rq`: after a write batch the read batch
    /// starts at the read FIFO head (sector 400), not where the read sweep stopped (300, as
    /// the hybrid did).
    #[test]
    fn move_request_clears_next_rq_so_a_read_batch_after_writes_starts_at_the_fifo_head() {
        let mut s = with(|c| {
            c.fifo_batch = 2;
            c.writes_starved = 1;
        });
        reads(
            &mut s,
            Nanos::ZERO,
            &[(1, 100), (2, 400), (3, 200), (4, 300)],
        );
        s.insert(rq(9, 2).sector(5_000).write().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 3, 9, 2, 4]);
    }

    /// Reads far apart and a starved write, `fifo_batch` 3: 2.6.32 `deadline_dispatch_requests`
    /// counts `fifo_batch` in requests, seeks included (a batch is three reads far apart, then
    /// the write); 2.5.59's (`batching += fifo_batch` when the next request does not start at
    /// `last_sector`) ends the batch at the first seek, so the write goes second.
    #[test]
    fn dispatch_requests_counts_fifo_batch_in_requests_seeks_included() {
        fn order(mut s: impl Scheduler) -> Vec<u64> {
            let far_apart = [(1, 10), (2, 1_000), (3, 50_000), (4, 90_000)];
            reads(&mut s, Nanos::ZERO, &far_apart);
            s.insert(rq(9, 2).sector(5).write().build(), Nanos::ZERO);
            drain(&mut s, Nanos::ZERO)
        }
        let c = Config {
            fifo_batch: 3,
            writes_starved: 1,
            ..Config::default()
        };
        assert_eq!(order(Deadline::new(c.clone())), vec![1, 2, 3, 9, 4]);
        assert_eq!(order(v2_5::Deadline25::new(c)), vec![1, 9, 2, 3, 4]);
    }

    /// 2.6.32 `deadline_dispatch_requests`: a read batch is chosen over writes queued first.
    #[test]
    fn dispatch_requests_prefers_reads_over_writes_queued_first() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(10).write().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(20).write().build(), Nanos::ZERO);
        s.insert(rq(3, 2).sector(9_000).read().build(), Nanos::ZERO);
        assert_eq!(next_id(&mut s, Nanos::ZERO), 3);
    }

    /// 2.6.32 `deadline_dispatch_requests` (`starved++ >= writes_starved`): two read batches
    /// pass the writes, the third decision goes to a write batch; then again.
    #[test]
    fn dispatch_requests_lets_writes_starved_read_batches_pass_then_a_write_batch() {
        let mut s = with(|c| {
            c.fifo_batch = 1;
            c.writes_starved = 2;
        });
        for id in 1..=6 {
            s.insert(rq(id, 1).sector(id * 100).read().build(), Nanos::ZERO);
        }
        s.insert(rq(10, 2).sector(50).write().build(), Nanos::ZERO);
        s.insert(rq(11, 2).sector(60).write().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 2, 10, 3, 4, 11, 5, 6]);
    }

    /// Reads for the expiry tests: an old read far up the disk behind one low read, and a
    /// run of younger reads low on the disk; two batches of two go out before the deadline.
    fn expiry_situation() -> Deadline {
        let mut s = with(|c| {
            c.read_expire = Nanos::from_ms(100);
            c.fifo_batch = 2;
        });
        reads(&mut s, Nanos::ZERO, &[(1, 100), (2, 90_000)]);
        reads(
            &mut s,
            Nanos::from_ms(50),
            &[(3, 200), (4, 300), (5, 400), (6, 500)],
        );
        let before: Vec<u64> = (0..3)
            .map(|_| next_id(&mut s, Nanos::from_ms(60)))
            .collect();
        // The FIFO head first, then on from the next request: read 2 is not expired yet.
        assert_eq!(before, vec![1, 3, 4]);
        s
    }

    /// 2.6.32 `deadline_check_fifo`: when a batch ends, an expired FIFO head starts the next
    /// one, ahead of the next request in sector order.
    #[test]
    fn check_fifo_starts_the_next_batch_at_an_expired_fifo_head() {
        let mut s = expiry_situation();
        assert_eq!(drain(&mut s, Nanos::from_ms(100) + Nanos(1)), vec![5, 2, 6]);
    }

    /// 2.6.32 `deadline_check_fifo` is `time_after(jiffies, fifo_time)`: at its deadline
    /// itself a read has not expired.
    #[test]
    fn check_fifo_is_time_after_not_at_the_deadline_itself() {
        let mut s = expiry_situation();
        assert_eq!(drain(&mut s, Nanos::from_ms(100)), vec![5, 6, 2]);
    }

    /// 2.6.32 `deadline_check_fifo` for writes: an expired write FIFO head starts the write
    /// batch even where the write sweep would go on elsewhere.
    #[test]
    fn check_fifo_applies_to_writes_too() {
        let mut s = with(|c| {
            c.write_expire = Nanos::from_ms(10);
            c.fifo_batch = 1;
        });
        for (id, sector) in [(1, 100), (2, 900_000), (3, 200), (4, 300)] {
            s.insert(rq(id, 1).sector(sector).write().build(), Nanos::ZERO);
        }
        assert_eq!(next_id(&mut s, Nanos::ZERO), 1);
        // Not expired: the next write in sector order (3); expired: the FIFO head (2).
        assert_eq!(next_id(&mut s, Nanos::from_ms(10)), 3);
        assert_eq!(next_id(&mut s, Nanos::from_ms(11)), 2);
    }

    #[test]
    fn back_merge_grows_a_queued_request_of_the_same_direction() {
        let mut s = Counted::new(Deadline::default());
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(108).sectors(8).write().build(), Nanos::ZERO);
        let into = s.try_merge(
            &rq(3, 2).sector(108).sectors(8).read().build(),
            DEFAULT_MERGE_SECTORS,
            Nanos::ZERO,
        );
        assert_eq!(into, Some(RequestId(1)));
        // Both now end at 116, and the merge hash (`elv_rqhash_find`) offers the one it filed
        // last, the grown read (`elv_rqhash_reposition` re-adds at the chain's head):
        // `elv_rq_merge_ok` refuses a write into it, and 2.6.32's `elv_merge` looks no further.
        let into = s.try_merge(
            &rq(4, 2).sector(116).sectors(8).write().build(),
            DEFAULT_MERGE_SECTORS,
            Nanos::ZERO,
        );
        assert_eq!(into, None);
        // A write where only the write ends back-merges into it, never into a read.
        s.insert(rq(5, 1).sector(300).sectors(8).write().build(), Nanos::ZERO);
        let into = s.try_merge(
            &rq(6, 2).sector(308).sectors(8).write().build(),
            DEFAULT_MERGE_SECTORS,
            Nanos::ZERO,
        );
        assert_eq!(into, Some(RequestId(5)));
        let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!((r.id.0, r.sector, r.sectors), (1, 100, 16));
        assert_eq!(s.counters().merged, 2);
    }

    /// The back merge of 2.6.32 `deadline_merge` (`elv_merge` finding a request by its end
    /// sector): a request below the new one that does not end where it starts takes no merge,
    /// and a request of another operation (a discard) takes none either.
    #[test]
    fn back_merge_needs_the_request_below_to_end_where_the_new_one_starts() {
        let mut s = Counted::new(Deadline::default());
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        let gap = rq(2, 1).sector(112).sectors(8).read().build();
        assert_eq!(s.try_merge(&gap, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let mut discard = rq(3, 1).sector(200).sectors(8).write().build();
        discard.op = crate::request::Op::Discard;
        s.insert(discard, Nanos::ZERO);
        let after = rq(4, 1).sector(208).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&after, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        assert_eq!(s.counters().merged, 0);
        assert_eq!(s.queued(), 2);
    }

    /// 2.6.32 `deadline_dispatch_requests` compares the starvation count with the
    /// `writes_starved` in force: lowered at run time below the count, it sends writes next.
    #[test]
    fn writes_starved_lowered_at_run_time_applies_to_the_count_so_far() {
        let mut s = with(|c| {
            c.fifo_batch = 1;
            c.writes_starved = 5;
        });
        for id in 1..=6 {
            s.insert(rq(id, 1).sector(id * 100).read().build(), Nanos::ZERO);
        }
        s.insert(rq(10, 2).sector(50).write().build(), Nanos::ZERO);
        let first: Vec<u64> = (0..4).map(|_| next_id(&mut s, Nanos::ZERO)).collect();
        assert_eq!(first, vec![1, 2, 3, 4]);
        s.set_tunable("writes_starved", 1).unwrap();
        assert_eq!(next_id(&mut s, Nanos::ZERO), 10);
    }

    #[test]
    fn merge_never_builds_a_request_above_max_sectors() {
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(0).sectors(200).read().build(), Nanos::ZERO);
        let big = rq(2, 1).sector(200).sectors(57).read().build();
        assert_eq!(s.try_merge(&big, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let fits = rq(3, 1).sector(200).sectors(56).read().build();
        assert_eq!(
            s.try_merge(&fits, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
    }

    #[test]
    fn front_merge_moves_the_request_down_the_sort_order() {
        let mut s = Counted::new(Deadline::default());
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(96).sectors(2).read().build(), Nanos::ZERO);
        let into = s.try_merge(
            &rq(3, 2).sector(92).sectors(8).read().build(),
            DEFAULT_MERGE_SECTORS,
            Nanos::ZERO,
        );
        assert_eq!(into, Some(RequestId(1)));
        assert_eq!(s.counters().merged, 1);
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
        assert_eq!(
            s.try_merge(&front, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        let back = rq(3, 1).sector(108).sectors(8).read().build();
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
    }

    #[test]
    fn flushes_and_discards_are_never_merged() {
        use crate::request::Op;
        let mut s = Deadline::default();
        s.insert(rq(1, 1).sector(100).sectors(8).write().build(), Nanos::ZERO);
        let with_op = |id: u64, sector: u64, op: Op| {
            let mut r = rq(id, 1).sector(sector).sectors(8).write().build();
            r.op = op;
            r
        };
        assert_eq!(
            s.try_merge(
                &with_op(2, 108, Op::Flush),
                DEFAULT_MERGE_SECTORS,
                Nanos::ZERO
            ),
            None
        );
        // Not even into a queued request of the same operation.
        s.insert(with_op(3, 200, Op::Flush), Nanos::ZERO);
        s.insert(with_op(4, 300, Op::Discard), Nanos::ZERO);
        assert_eq!(
            s.try_merge(
                &with_op(5, 208, Op::Flush),
                DEFAULT_MERGE_SECTORS,
                Nanos::ZERO
            ),
            None
        );
        assert_eq!(
            s.try_merge(
                &with_op(6, 308, Op::Discard),
                DEFAULT_MERGE_SECTORS,
                Nanos::ZERO
            ),
            None
        );
        assert_eq!(
            s.try_merge(
                &with_op(7, 292, Op::Discard),
                DEFAULT_MERGE_SECTORS,
                Nanos::ZERO
            ),
            None
        );
    }

    #[test]
    fn harness_run_completes_everything_with_merges() {
        let mut h = Harness::new(Counted::new(Deadline::default()), 1, |_| Nanos::from_ms(2));
        for i in 0..20u64 {
            // Sequential 4 KiB reads from one process, 1 ms apart: later ones merge while
            // earlier ones wait for the device.
            h.submit(rq(i, 1).sector(i * 8).read().at(Nanos::from_ms(i)));
        }
        h.run_until(Nanos::from_secs(10));
        let c = h.sched.counters();
        assert_eq!(c.inserted + c.merged, 20);
        assert_eq!((c.dispatched, c.completed), (c.inserted, c.inserted));
        assert_eq!(h.sched.name(), "deadline");
        let out = h.run();
        let sectors: u32 = out.served.iter().map(|s| s.rq.sectors).sum();
        assert_eq!(sectors, 160);
        assert!(out.served.len() < 20, "contiguous reads were merged");
    }
}
