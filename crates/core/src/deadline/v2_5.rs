//! deadline-2.5: the deadline scheduler of Linux 2.5.59 (`drivers/block/deadline-iosched.c`,
//! Jens Axboe, January 2003), the one Andrew Morton measured against anticipatory
//! scheduling; `--sched deadline-2.5`. See `docs/deadline.md`.
//!
//! The queues are 2.6.32's (per direction a sector-sorted rbtree and a FIFO of deadlines for
//! reads and writes; the rbtree arrived in 2.5.57), and so are the direction choice and
//! `writes_starved`. The batches differ (`deadline_dispatch_requests`):
//!
//! 1. a batch follows `next_drq`, the request after the last dispatched one in sector order,
//!    while fewer than `fifo_batch` requests went in it *and* the next request starts where
//!    the last one ended (`last_sector`): a seek ends the batch at once, by adding
//!    `fifo_batch` to the count;
//! 2. otherwise a direction is chosen as in 2.6.32, and the request is the FIFO head if its
//!    deadline has passed (`time_after`, strictly; the count restarts), else the next request
//!    in that direction *without* restarting the count, else the lowest sector of the
//!    direction (`deadline_find_first_drq`, the one-way elevator sweeping back to the start
//!    of the disk; the count restarts).
//!
//! So once a seek has ended a batch, every dispatch until the sweep wraps or a deadline
//! passes is a fresh choice of direction, each counting towards `writes_starved`: writes get
//! their turn after `writes_starved` such dispatches, not batches.
//!
//! There is no `seek_cost` or `stream_unit`: they belonged to the list-sorted deadline of
//! 2.5.39 to 2.5.56 (which also expired only reads) and went with the rbtree patch.
//!
//! ## Tunables
//! Those of 2.6.32's deadline ([`super::TUNABLES`]), same names and defaults. 2.5.59 showed
//! and took `read_expire` and `write_expire` in jiffies, which at its i386 `HZ` of 1000 are
//! milliseconds.
//!
//! ## Deviations from 2.5.59
//! - **Requests at the same sector** coexist in the tree (ordered by id); 2.5.59 chained an
//!   alias to the queued request to go out with it, and gave it no FIFO entry.
//! - **Merging** is 2.6.32's model (see [`super`]): whole requests, no `last_merge` hint, no
//!   request-to-request merge.
//! - **Units**: nanoseconds, not jiffies, as in [`super`].
//! - The batch count saturates instead of wrapping its `unsigned int` (which takes 2^28
//!   seeks without a wrap of the sweep or an expired deadline at the default `fifo_batch`).
//! - `writes_starved` refuses negative values (2.5.59 takes them; compared as unsigned they
//!   never force a write batch).

use super::{Config, Queues};
use crate::request::{Request, RequestId};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

/// The deadline scheduler of 2.5.59.
#[derive(Debug)]
pub struct Deadline25 {
    q: Queues,
    /// `last_sector`: where the last dispatched request ended (the head position).
    last_sector: u64,
    /// `batching`: requests in the batch, plus `fifo_batch` for every seek that ended it.
    batching: u32,
}

impl Default for Deadline25 {
    fn default() -> Self {
        Deadline25::new(Config::default())
    }
}

impl Deadline25 {
    /// An empty scheduler with `config`.
    pub fn new(config: Config) -> Deadline25 {
        Deadline25 {
            q: Queues::new(config),
            last_sector: 0,
            batching: 0,
        }
    }

    /// Build from user settings (see [`TUNABLES`](super::TUNABLES)).
    pub fn from_settings(settings: &Settings) -> Result<Deadline25, TunableError> {
        Ok(Deadline25::new(Config::from_settings(settings)?))
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.q.config
    }

    /// `deadline_move_request` ([`Queues::move_request`]), remembering where `slot` ends and
    /// counting it in the batch.
    fn move_request(&mut self, slot: u32) -> Request {
        let rq = self.q.move_request(slot);
        self.last_sector = rq.end();
        self.batching = self.batching.saturating_add(1);
        rq
    }
}

impl Scheduler for Deadline25 {
    fn name(&self) -> &'static str {
        "deadline-2.5"
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, _now: Nanos) -> Option<RequestId> {
        self.q.try_merge(rq, max_sectors)
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        self.q.insert(rq, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let fifo_batch = self.q.config.fifo_batch;
        if let Some(slot) = self.q.next() {
            if self.q.lists.sector(slot) != self.last_sector {
                // A seek: the batch ends here.
                self.batching = self.batching.saturating_add(fifo_batch);
            }
            if self.batching < fifo_batch {
                return Dispatch::Request(self.move_request(slot));
            }
        }
        let Some(dir) = self.q.choose_direction() else {
            return Dispatch::Empty;
        };
        let slot = if self.q.lists.expired(dir, now) {
            self.batching = 0;
            self.q.lists.fifo_head(dir)
        } else if let Some(next) = self.q.next_rq[dir] {
            Some(next)
        } else {
            self.batching = 0;
            self.q.lists.first(dir)
        };
        let slot = slot.expect("deadline-2.5: the chosen direction has a request");
        Dispatch::Request(self.move_request(slot))
    }

    fn complete(&mut self, _rq: &Request, _now: Nanos) {}

    fn queued(&self) -> usize {
        self.q.lists.queued()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.q.config.set("deadline-2.5", name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counted::Counted;
    use crate::deadline::tests::reads;
    use crate::harness::{drain_ids as drain, next_id, rq};
    use crate::request::DEFAULT_MERGE_SECTORS;

    fn with(f: impl FnOnce(&mut Config)) -> Deadline25 {
        let mut c = Config::default();
        f(&mut c);
        Deadline25::new(c)
    }

    /// 2.5.59 `deadline_find_first_drq`: with no next request the batch starts at the lowest
    /// sector of the direction and sweeps upward (2.6.32 starts at the FIFO head: 1, 3, 2, 5,
    /// 4).
    #[test]
    fn find_first_drq_sweeps_back_to_the_lowest_sector() {
        let mut s = Deadline25::default();
        reads(
            &mut s,
            Nanos::ZERO,
            &[(1, 700), (2, 300), (3, 900), (4, 100), (5, 500)],
        );
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![4, 2, 5, 1, 3]);
        assert_eq!(s.name(), "deadline-2.5");
    }

    /// 2.5.59 `deadline_dispatch_requests`: contiguous requests (each starting at
    /// `last_sector`) make a batch of `fifo_batch`; then the starved write; then the sweep
    /// starts again at the lowest read.
    #[test]
    fn dispatch_requests_runs_fifo_batch_contiguous_requests() {
        let mut s = with(|c| {
            c.fifo_batch = 3;
            c.writes_starved = 1;
        });
        reads(
            &mut s,
            Nanos::ZERO,
            &[(1, 0), (2, 8), (3, 16), (4, 24), (5, 32)],
        );
        s.insert(rq(9, 2).sector(5_000).write().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 2, 3, 9, 4, 5]);
    }

    /// 2.5.59 `deadline_dispatch_requests`: going on from `next_drq` after a seek does not
    /// restart the count, so every later dispatch chooses a direction again and counts
    /// towards `writes_starved`: a write gets in after every two reads (2.6.32 sends the five
    /// reads in one batch, then the writes).
    #[test]
    fn dispatch_requests_after_a_seek_counts_writes_starved_per_dispatch() {
        let mut s = with(|c| c.writes_starved = 2);
        let spread = [(1, 100), (2, 1_000), (3, 2_000), (4, 3_000), (5, 4_000)];
        reads(&mut s, Nanos::ZERO, &spread);
        s.insert(rq(9, 2).sector(50).write().build(), Nanos::ZERO);
        s.insert(rq(10, 2).sector(60).write().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 2, 9, 3, 4, 10, 5]);
    }

    /// 2.5.59 `deadline_check_fifo` (`time_after`, per direction): when a batch ends, an
    /// expired FIFO head goes first; at its deadline itself it has not expired.
    #[test]
    fn check_fifo_sends_an_expired_head_first_when_a_batch_ends() {
        let situation = || {
            let mut s = with(|c| {
                c.read_expire = Nanos::from_ms(100);
                c.fifo_batch = 3;
            });
            reads(&mut s, Nanos::ZERO, &[(1, 90_000)]);
            reads(
                &mut s,
                Nanos::from_ms(50),
                &[(2, 8), (3, 16), (4, 24), (5, 32)],
            );
            assert_eq!(next_id(&mut s, Nanos::from_ms(60)), 2);
            assert_eq!(next_id(&mut s, Nanos::from_ms(60)), 3);
            s
        };
        let mut expired = situation();
        assert_eq!(
            drain(&mut expired, Nanos::from_ms(100) + Nanos(1)),
            vec![4, 1, 5]
        );
        let mut at_deadline = situation();
        assert_eq!(drain(&mut at_deadline, Nanos::from_ms(100)), vec![4, 5, 1]);
    }

    /// 2.5.59 deadline had write deadlines too (`fifo_expire[WRITE]`): an expired write FIFO
    /// head starts the write batch instead of the lowest write.
    #[test]
    fn check_fifo_applies_to_writes_too() {
        let mut s = with(|c| {
            c.write_expire = Nanos::from_ms(10);
            c.fifo_batch = 1;
        });
        for (id, sector) in [(1, 900_000), (2, 100), (3, 200)] {
            s.insert(rq(id, 1).sector(sector).write().build(), Nanos::ZERO);
        }
        assert_eq!(next_id(&mut s, Nanos::from_ms(10)), 2);
        assert_eq!(next_id(&mut s, Nanos::from_ms(11)), 1);
    }

    #[test]
    fn tunables_are_deadlines_and_checked() {
        let mut s = Deadline25::default();
        assert_eq!(s.config(), &Config::default());
        assert!(s.set_tunable("fifo_batch", -1).is_err());
        assert!(s.set_tunable("seek_cost", 16).is_err());
        s.set_tunable("fifo_batch", 4).unwrap();
        assert_eq!(s.config().fifo_batch, 4);
        let mut settings = Settings::new();
        settings.set("writes_starved", 5);
        let built = Deadline25::from_settings(&settings).unwrap();
        assert_eq!(built.config().writes_starved, 5);
    }

    #[test]
    fn merges_are_shared_with_2_6_32() {
        let mut s = Counted::new(Deadline25::default());
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        let back = rq(2, 1).sector(108).sectors(8).read().build();
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
        assert_eq!(s.queued(), 1);
        let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) else {
            panic!()
        };
        assert_eq!((r.sector, r.sectors), (100, 16));
        s.complete(&r, Nanos::ZERO);
        let c = s.counters();
        assert_eq!(
            (c.inserted, c.merged, c.dispatched, c.completed),
            (1, 1, 1, 1)
        );
        assert_eq!(s.queued(), 0);
    }
}
