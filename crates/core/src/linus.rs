//! linus: the 2.4 elevator (`elevator_linus`), one sorted queue with pass-over budgets.
//!
//! Follows Linux 2.4.20: `drivers/block/elevator.c` (`elevator_linus_merge`,
//! `bh_rq_in_between`), the merge and insertion code of `__make_request` in
//! `drivers/block/ll_rw_blk.c`, and `include/linux/elevator.h`; see `docs/linus.md`.
//!
//! All requests, reads and writes, wait in one queue that the device takes from the front.
//! A new request is placed by scanning the queue backwards from the tail:
//!
//! - the scan stops at the first request whose budget (`elevator_sequence`) is used up
//!   (`<= 0`): nothing may be placed in front of it, front-merged into it, or merged into
//!   anything before it; a request of the same direction may still back-merge into it
//!   (2.4.20's `backmerge_only`: appending does not move it, so it is not passed);
//! - it may be placed right after a request `r` when it falls strictly between `r` and the
//!   request after `r` in sector order, or, where the queue wraps round (the request after
//!   `r` starts lower than `r`), when it lies above `r` or below that next request. The
//!   first such place met from the tail is kept;
//! - a request of the same direction that ends where the new one starts takes it as a back
//!   merge; one that starts where the new one ends takes it as a front merge (and loses one
//!   unit of budget); the first such request met from the tail wins, over any place found;
//! - a request that finds neither a place nor a merge goes to the tail. This is what leaves a
//!   read behind every queued write (the "30 MB of writes" effect of the 2.4 days).
//!
//! Every request queued behind the chosen place pays for being passed: 16 units
//! (`ELV_LINUS_SEEK_COST`) for an insertion in front of it, 1 for a merge in front of it.
//! A new request starts with a budget of `read_latency` (reads) or `write_latency` (writes,
//! flushes and discards).
//!
//! ## Tunables (the names elvtune(8) used; 2.4 had no sysfs)
//! | name | unit | default | meaning |
//! |---|---|---|---|
//! | `read_latency` | pass-over units | 2048 | budget of a new read: 128 insertions in front of it |
//! | `write_latency` | pass-over units | 8192 | budget of a new write: 512 insertions in front of it |
//! | `max_sectors` | sectors | 256 | largest request: merges stop there, larger I/O is split |
//!
//! The defaults are the `ELEVATOR_LINUS` initialiser of 2.4.20's `include/linux/elevator.h`
//! ("read passovers" 2048, "write passovers" 8192), set by Jens Axboe's "elevator seek
//! accounting fixes" for 2.4.20-pre2 (August 2002), which also introduced the costs of 16 per
//! seek and 1 per merge. (2.4.19 and earlier used 8192 / 16384 with other accounting.)
//! `max_sectors` is 2.4's per-device `max_sectors[]` entry, which `elevator_linus_merge` and
//! `__make_request` compare every merge against; IDE set it to 128 (`ide-probe.c`), SCSI
//! and the generic default to 255 (`MAX_SECTORS`). Our default, 256, keeps 128 KiB requests
//! whole.
//!
//! ## Deviations from 2.4.20
//! - **Whole requests, not buffer heads**: 2.4 merged one buffer head (1 to 4 KiB) at a time;
//!   we merge the requests the driver offers through [`Scheduler::try_merge`], up to
//!   `max_sectors`, and ask the driver to split larger I/O
//!   ([`Scheduler::max_request_sectors`]), as 2.4 built no request above it. Segment limits
//!   are not modelled. After a merge 2.4 also tried to join the grown request
//!   with its neighbour in the queue; we do not (the trait cannot retire a request already
//!   inserted). Only reads and writes merge; flushes and discards queue as writes.
//! - **No plugging and no active head**: the device takes a request when it has room, and a
//!   dispatched request leaves the queue. (2.4 left the request being served at the head of
//!   the queue, out of reach of the scan; the effect is the same.)
//! - **One device**: 2.4's ordering also compared device numbers (partitions sharing a
//!   queue); a scheduler here serves one device.
//! - `read_latency` and `write_latency` are taken at insertion, as in 2.4: changing them
//!   affects requests queued afterwards.

use std::collections::VecDeque;

use crate::request::{Op, Request, RequestId, DEFAULT_MERGE_SECTORS};
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

/// What a queued request pays when a new request is inserted in front of it
/// (`ELV_LINUS_SEEK_COST`).
pub const SEEK_COST: i64 = 16;
/// What a queued request pays when a merge happens in front of it.
pub const MERGE_COST: i64 = 1;

crate::tunable::tunables! {
    policy: "linus";
    /// linus's tunables, under the names elvtune gave them.
    pub const TUNABLES;
    /// linus's settings.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// Budget given to a new read (`read_latency`, pass-over units; 2.4.20's 2048).
        read_latency: i64 = "read_latency" {
            unit: Count,
            default: 2048,
            min: 0,
            max: i32::MAX as i64,
            doc: "pass-over budget of a new read: an insertion in front of it costs 16, a merge 1",
        },
        /// Budget given to a new write (`write_latency`, pass-over units; 2.4.20's 8192).
        write_latency: i64 = "write_latency" {
            unit: Count,
            default: 8192,
            min: 0,
            max: i32::MAX as i64,
            doc: "pass-over budget of a new write: an insertion in front of it costs 16, a merge 1",
        },
        /// Largest request, sectors (`max_sectors`).
        max_sectors: u32 = "max_sectors" {
            unit: Sectors,
            default: DEFAULT_MERGE_SECTORS as i64,
            min: 8,
            max: 65_535,
            doc: "largest request (2.4's per-device max_sectors; IDE 128): merges stop there and \
                  larger I/O is split",
        },
    }
}

/// A queued request with what is left of its budget.
#[derive(Debug)]
struct Queued {
    /// `elevator_sequence`: how much more passing over this request may cost.
    budget: i64,
    rq: Request,
}

/// The 2.4.20 elevator.
#[derive(Debug, Default)]
pub struct Linus {
    config: Config,
    /// Front = next to dispatch.
    queue: VecDeque<Queued>,
    /// The place a request at this sector found in the last [`Scheduler::try_merge`] that
    /// did not merge (`None`: the tail), kept until the queue changes: the insertion of that
    /// request (`__make_request` after `elevator_linus_merge` refused a merge) takes it
    /// without scanning again, since the place depends only on the sector and the queue.
    scanned: Option<(u64, Option<usize>)>,
}

/// What the backward scan found.
enum Found {
    /// Merge into the request at this index: back (true) or front (false).
    Merge(usize, bool),
    /// Insert right after this index.
    After(usize),
    /// Append at the tail.
    Tail,
}

impl Linus {
    /// An empty queue with `config`.
    pub fn new(config: Config) -> Linus {
        Linus {
            config,
            queue: VecDeque::new(),
            scanned: None,
        }
    }

    /// Build from user settings (see [`TUNABLES`]).
    pub fn from_settings(settings: &Settings) -> Result<Linus, TunableError> {
        Ok(Linus::new(Config::from_settings(settings)?))
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The remaining budgets of the queued requests, front to tail, by id (for tests and
    /// inspection).
    pub fn budgets(&self) -> Vec<(RequestId, i64)> {
        self.queue.iter().map(|q| (q.rq.id, q.budget)).collect()
    }

    /// Whether `sector` belongs right after a request at `here` whose successor in the
    /// queue is at `next` (2.4's `bh_rq_in_between`; no successor: no).
    fn in_between(sector: u64, here: u64, next: Option<u64>) -> bool {
        let Some(next) = next else {
            return false;
        };
        if sector > here && sector < next {
            return true;
        }
        if next > here {
            return false;
        }
        // The queue wraps round between here and next.
        sector > here || sector < next
    }

    /// Scan backwards from the tail as 2.4 does; merges are considered only when given the
    /// largest request a merge may build (the device's limit; `max_sectors` bounds it too).
    fn scan(&self, rq: &Request, merge: Option<u32>) -> Found {
        let limit = merge.map_or(0, |m| m.min(self.config.max_sectors));
        let mergeable = merge.is_some() && matches!(rq.op, Op::Read | Op::Write) && rq.sectors > 0;
        // A merge candidate: same direction, room under the limit.
        let fits = |q: &Request| q.op == rq.op && q.sectors + rq.sectors <= limit;
        let end = rq.end();
        let mut it = self.queue.iter().enumerate().rev();
        // Until a place is found: places and merges. The sector of the request after the one
        // looked at (none after the tail).
        let mut next = None;
        let place = loop {
            let Some((i, q)) = it.next() else {
                return Found::Tail;
            };
            // 2.4.20 `elevator_linus_merge`: a used-up request sets `backmerge_only`, which
            // ends the scan after this request and, in this request, allows a back merge
            // only (no insertion after it, no front merge into it).
            let backmerge_only = q.budget <= 0;
            let placed = !backmerge_only && Self::in_between(rq.sector, q.rq.sector, next);
            if mergeable && fits(&q.rq) {
                if q.rq.end() == rq.sector {
                    return Found::Merge(i, true);
                }
                if !backmerge_only && end == q.rq.sector {
                    return Found::Merge(i, false);
                }
            }
            if backmerge_only {
                return Found::Tail;
            }
            if placed {
                break i;
            }
            next = Some(q.rq.sector);
        };
        // The place is kept; only a merge further on can change the outcome.
        if mergeable {
            for (i, q) in it {
                let backmerge_only = q.budget <= 0;
                let back = q.rq.end() == rq.sector;
                if (back || (!backmerge_only && end == q.rq.sector)) && fits(&q.rq) {
                    return Found::Merge(i, back);
                }
                if backmerge_only {
                    break;
                }
            }
        }
        Found::After(place)
    }

    /// Charge every request behind index `i` for being passed over.
    fn charge_behind(&mut self, i: usize, cost: i64) {
        for q in self.queue.range_mut(i + 1..) {
            q.budget -= cost;
        }
    }
}

impl Scheduler for Linus {
    fn name(&self) -> &'static str {
        "linus"
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, _now: Nanos) -> Option<RequestId> {
        let (i, back) = match self.scan(rq, Some(max_sectors)) {
            Found::Merge(i, back) => (i, back),
            Found::After(i) => {
                self.scanned = Some((rq.sector, Some(i)));
                return None;
            }
            Found::Tail => {
                self.scanned = Some((rq.sector, None));
                return None;
            }
        };
        self.scanned = None;
        let q = &mut self.queue[i];
        if back {
            q.rq.sectors += rq.sectors;
        } else {
            q.rq.sector = rq.sector;
            q.rq.sectors += rq.sectors;
            q.budget -= 1;
        }
        let id = q.rq.id;
        self.charge_behind(i, MERGE_COST);
        Some(id)
    }

    fn insert(&mut self, rq: Request, _now: Nanos) {
        let budget = if rq.op.is_read() {
            self.config.read_latency
        } else {
            self.config.write_latency
        };
        let found = match self.scanned.take() {
            Some((sector, place)) if sector == rq.sector => place.map_or(Found::Tail, Found::After),
            _ => self.scan(&rq, None),
        };
        match found {
            Found::After(i) => {
                self.charge_behind(i, SEEK_COST);
                self.queue.insert(i + 1, Queued { budget, rq });
            }
            Found::Tail | Found::Merge(..) => self.queue.push_back(Queued { budget, rq }),
        }
    }

    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        self.scanned = None;
        match self.queue.pop_front() {
            Some(q) => Dispatch::Request(q.rq),
            None => Dispatch::Empty,
        }
    }

    fn complete(&mut self, _rq: &Request, _now: Nanos) {}

    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn max_request_sectors(&self) -> Option<u32> {
        Some(self.config.max_sectors)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.config.set("linus", name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};

    fn order(s: &Linus) -> Vec<u64> {
        s.queue.iter().map(|q| q.rq.id.0).collect()
    }

    fn budget(s: &Linus, id: u64) -> i64 {
        s.queue.iter().find(|q| q.rq.id.0 == id).unwrap().budget
    }

    /// Offer `r` for merging, insert it if refused (as a driver does).
    fn submit(s: &mut Linus, r: Request) -> Option<RequestId> {
        let merged = s.try_merge(&r, DEFAULT_MERGE_SECTORS, Nanos::ZERO);
        if merged.is_none() {
            s.insert(r, Nanos::ZERO);
        }
        merged
    }

    #[test]
    fn defaults_are_2_4_20s() {
        let c = Config::from_settings(&Settings::new()).unwrap();
        assert_eq!((c.read_latency, c.write_latency), (2048, 8192));
        let mut bad = Settings::new();
        bad.set("read_latency", -1);
        assert!(Linus::from_settings(&bad).is_err());
        let mut s = Linus::default();
        s.set_tunable("write_latency", 100).unwrap();
        assert_eq!(s.config().write_latency, 100);
        s.set_tunable("read_latency", 50).unwrap();
        assert_eq!(
            (s.config().read_latency, s.config().write_latency),
            (50, 100)
        );
        assert_eq!(s.name(), "linus");
        assert!(s.set_tunable("max_bomb_segments", 4).is_err());
    }

    #[test]
    fn max_sectors_bounds_merges_and_the_requests_the_driver_builds() {
        // IDE's 128 sectors: two adjacent 64 KiB writes stay two requests.
        let mut s = Linus::default();
        assert_eq!(s.max_request_sectors(), Some(256));
        s.set_tunable("max_sectors", 128).unwrap();
        assert_eq!(s.max_request_sectors(), Some(128));
        assert_eq!(
            submit(&mut s, rq(1, 1).sector(0).sectors(128).build()),
            None
        );
        assert_eq!(
            submit(&mut s, rq(2, 1).sector(128).sectors(128).build()),
            None
        );
        assert_eq!(order(&s), vec![1, 2]);
        // Within the limit they merge.
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(0).sectors(128).build());
        assert_eq!(
            submit(&mut s, rq(2, 1).sector(128).sectors(128).build()),
            Some(RequestId(1))
        );
        assert!(s.set_tunable("max_sectors", 4).is_err());
    }

    #[test]
    fn requests_are_inserted_in_ascending_sector_order() {
        let mut s = Linus::default();
        for (id, sector) in [(1, 100), (2, 900), (3, 500), (4, 300), (5, 700)] {
            submit(&mut s, rq(id, 1).sector(sector).read().build());
        }
        assert_eq!(order(&s), vec![1, 4, 3, 5, 2]);
        // Each insertion charged those it passed in front of: 900 was passed three times, 500
        // once (by 300, inserted before it), 700 and 300 never.
        let budgets: Vec<(u64, i64)> = s.budgets().iter().map(|&(id, b)| (id.0, b)).collect();
        assert_eq!(
            budgets,
            vec![
                (1, 2048),
                (4, 2048),
                (3, 2048 - SEEK_COST),
                (5, 2048),
                (2, 2048 - 3 * SEEK_COST)
            ]
        );
    }

    #[test]
    fn a_request_below_the_sweep_waits_for_the_next_sweep() {
        let mut s = Linus::default();
        for (id, sector) in [(1, 100), (2, 200), (3, 50), (4, 150), (5, 80)] {
            submit(&mut s, rq(id, 1).sector(sector).read().build());
        }
        // 50 is below the head's 100: it starts a second sweep at the tail; 150 joins the
        // first sweep, 80 the second, after 50.
        assert_eq!(order(&s), vec![1, 4, 2, 3, 5]);
    }

    /// 2.4.20 `bh_rq_in_between` is strict: a request at the sector of a queued one is not in
    /// between that one and the next, so (finding no other place) it goes to the tail.
    #[test]
    fn bh_rq_in_between_is_strict_at_a_queued_requests_sector() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).read().build());
        submit(&mut s, rq(2, 1).sector(300).read().build());
        submit(&mut s, rq(3, 2).sector(100).write().build());
        assert_eq!(order(&s), vec![1, 2, 3]);
    }

    /// 2.4.20 `bh_rq_in_between`: a next request that does not lie above this one counts as
    /// the wrap of the sweep, even at the same sector, and a request above this one goes in
    /// between.
    #[test]
    fn bh_rq_in_between_takes_two_requests_at_one_sector_for_a_wrap() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).read().build());
        submit(&mut s, rq(2, 2).sector(100).write().build());
        submit(&mut s, rq(3, 1).sector(200).read().build());
        assert_eq!(order(&s), vec![1, 3, 2]);
    }

    /// 2.4.20 `bh_rq_in_between` is strict at the *next* request's sector as well: a request
    /// at the sector of the request after `rq` is not in between them (`b_rsector <
    /// next_rq->sector`), and with the two in order it goes on looking, here to the tail.
    #[test]
    fn bh_rq_in_between_is_strict_at_the_next_requests_sector() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).read().build());
        submit(&mut s, rq(2, 1).sector(300).read().build());
        submit(&mut s, rq(3, 2).sector(300).write().build());
        assert_eq!(order(&s), vec![1, 2, 3]);
    }

    /// 2.4.20 `bh_rq_in_between` where the queue wraps between `rq` (300) and `next_rq` (100):
    /// a request goes there if above `rq` or below `next_rq`, strictly on both sides.
    #[test]
    fn bh_rq_in_between_at_the_wrap_takes_only_sectors_strictly_outside_the_gap() {
        let wrap = |sector: u64| {
            let mut s = Linus::default();
            submit(&mut s, rq(1, 1).sector(300).read().build());
            submit(&mut s, rq(2, 1).sector(100).read().build());
            assert_eq!(order(&s), vec![1, 2], "100 waits for the next sweep");
            submit(&mut s, rq(3, 2).sector(sector).write().build());
            order(&s)
        };
        assert_eq!(wrap(400), vec![1, 3, 2], "above rq: continues the sweep");
        assert_eq!(
            wrap(50),
            vec![1, 3, 2],
            "below next_rq: starts the next one"
        );
        assert_eq!(wrap(300), vec![1, 2, 3], "at rq's sector: not above it");
        assert_eq!(
            wrap(100),
            vec![1, 2, 3],
            "at next_rq's sector: not below it"
        );
        assert_eq!(wrap(200), vec![1, 2, 3], "inside the gap");
    }

    /// Merging is the driver's `try_merge` (2.4.20's `elevator_linus_merge` before
    /// `__make_request` adds a request); an insert never merges, but places a request in
    /// sector order even when it is contiguous with a queued one.
    #[test]
    fn insert_places_a_contiguous_request_without_merging_it() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).sectors(8).read().build());
        submit(&mut s, rq(2, 1).sector(300).read().build());
        s.insert(rq(3, 2).sector(108).sectors(8).read().build(), Nanos::ZERO);
        assert_eq!(order(&s), vec![1, 3, 2]);
        assert_eq!(s.queue[0].rq.sectors, 8);
    }

    /// The place a refused merge's scan found is the insertion's only while the queue is as
    /// that scan saw it: `__make_request` inserts right after `elevator_linus_merge`, but a
    /// dispatch (or another request's insertion) in between moves every index.
    #[test]
    fn an_insertion_after_a_refused_merge_scans_again_if_the_queue_changed() {
        let fresh = |dispatch_first: bool| {
            let mut s = Linus::default();
            for (id, sector) in [(1, 100), (2, 300), (3, 500)] {
                submit(&mut s, rq(id, 1).sector(sector).read().build());
            }
            let r = rq(4, 1).sector(400).read().build();
            assert_eq!(s.try_merge(&r, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
            if dispatch_first {
                assert!(matches!(s.dispatch(Nanos::ZERO), Dispatch::Request(_)));
            }
            s.insert(r, Nanos::ZERO);
            order(&s)
        };
        assert_eq!(fresh(false), vec![1, 2, 4, 3]);
        assert_eq!(
            fresh(true),
            vec![2, 4, 3],
            "400 still goes between 300 and 500, one index nearer the front"
        );
        // A request at another sector than the one the refused merge scanned for: its own.
        let mut s = Linus::default();
        for (id, sector) in [(1, 100), (2, 300), (3, 500)] {
            submit(&mut s, rq(id, 1).sector(sector).read().build());
        }
        let probe = rq(4, 1).sector(400).read().build();
        assert_eq!(
            s.try_merge(&probe, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        s.insert(rq(5, 1).sector(200).read().build(), Nanos::ZERO);
        assert_eq!(order(&s), vec![1, 5, 2, 3]);
    }

    /// Only reads and writes with data merge (2.4's `rq_mergeable` buffer heads): two
    /// contiguous discards, or a zero-length write at the end of a queued one, stay apart.
    #[test]
    fn only_reads_and_writes_with_data_merge() {
        let mut s = Linus::default();
        let mut d1 = rq(1, 1).sector(100).sectors(8).build();
        d1.op = Op::Discard;
        let mut d2 = rq(2, 1).sector(108).sectors(8).build();
        d2.op = Op::Discard;
        assert_eq!(submit(&mut s, d1), None);
        assert_eq!(submit(&mut s, d2), None);
        submit(&mut s, rq(3, 1).sector(500).sectors(8).write().build());
        assert_eq!(
            submit(&mut s, rq(4, 1).sector(508).sectors(0).write().build()),
            None
        );
        assert_eq!(s.queued(), 4);
    }

    #[test]
    fn a_read_with_no_place_goes_to_the_tail_behind_all_writes() {
        let mut s = Linus::default();
        for id in 1..=5 {
            submit(&mut s, rq(id, 1).sector(10_000 + id * 1000).write().build());
        }
        // A read below every queued write finds no place between them: it goes last.
        submit(&mut s, rq(9, 2).sector(500).read().build());
        assert_eq!(order(&s), vec![1, 2, 3, 4, 5, 9]);
        // Appending charges nobody.
        assert_eq!(budget(&s, 5), 8192);
    }

    #[test]
    fn a_request_whose_budget_is_exhausted_is_not_passed() {
        let mut s = Linus::new(Config {
            read_latency: 2 * SEEK_COST,
            write_latency: 8192,
            ..Config::default()
        });
        submit(&mut s, rq(1, 1).sector(100).read().build());
        submit(&mut s, rq(2, 1).sector(1000).read().build());
        // Two insertions in front of request 2 use up its budget of 32...
        submit(&mut s, rq(3, 1).sector(500).read().build());
        submit(&mut s, rq(4, 1).sector(600).read().build());
        assert_eq!(order(&s), vec![1, 3, 4, 2]);
        assert_eq!(budget(&s, 2), 0);
        // ... so the next request that belongs in front of it goes behind it instead.
        submit(&mut s, rq(5, 1).sector(700).read().build());
        assert_eq!(order(&s), vec![1, 3, 4, 2, 5]);
        // And nothing is merged into anything before it.
        let back = rq(6, 1).sector(108).read().build();
        assert_eq!(submit(&mut s, back), None);
        assert_eq!(order(&s), vec![1, 3, 4, 2, 5, 6]);
    }

    /// 2.4.20 `elevator_linus_merge`: a request whose `elevator_sequence` is used up sets
    /// `backmerge_only`; the loop still tries it, and `__rq->sector + __rq->nr_sectors ==
    /// bh->b_rsector` back-merges into it (charging those behind it 1 each), while the front
    /// merge and the insertion after it carry `&& !backmerge_only`, and the scan goes no
    /// further back.
    #[test]
    fn elevator_linus_merge_back_merges_into_a_used_up_request_but_nothing_else() {
        let cfg = Config {
            read_latency: SEEK_COST,
            write_latency: SEEK_COST,
            ..Config::default()
        };
        let setup = || {
            let mut s = Linus::new(cfg.clone());
            submit(&mut s, rq(1, 1).sector(100).sectors(8).write().build());
            submit(&mut s, rq(2, 1).sector(1000).sectors(8).write().build());
            // An insertion in front of request 2 uses up its budget of 16.
            submit(&mut s, rq(3, 1).sector(500).sectors(8).write().build());
            submit(&mut s, rq(4, 1).sector(5000).sectors(8).write().build());
            assert_eq!(order(&s), vec![1, 3, 2, 4]);
            assert_eq!(budget(&s, 2), 0);
            s
        };
        // Back merge into the used-up request 2: it grows, request 4 behind it pays 1.
        let mut s = setup();
        let into = submit(&mut s, rq(5, 2).sector(1008).sectors(8).write().build());
        assert_eq!(into, Some(RequestId(2)));
        assert_eq!(s.queue[2].rq.sectors, 16);
        assert_eq!(budget(&s, 4), SEEK_COST - MERGE_COST);
        assert_eq!(budget(&s, 2), 0);
        // A front merge into it is refused and the request goes to the tail.
        let mut s = setup();
        assert_eq!(
            submit(&mut s, rq(6, 2).sector(992).sectors(8).write().build()),
            None
        );
        assert_eq!(order(&s), vec![1, 3, 2, 4, 6]);
        // A back merge into request 3, in front of the used-up one, is refused too.
        let mut s = setup();
        assert_eq!(
            submit(&mut s, rq(7, 2).sector(508).sectors(8).write().build()),
            None
        );
        assert_eq!(order(&s), vec![1, 3, 2, 4, 7]);
        // And a request that belongs right after it (between 1000 and 5000) is not placed
        // there: the insertion would pass nobody, but 2.4.20 keeps no place at a used-up
        // request.
        let mut s = setup();
        assert_eq!(
            submit(&mut s, rq(8, 2).sector(3000).sectors(8).write().build()),
            None
        );
        assert_eq!(order(&s), vec![1, 3, 2, 4, 8]);
    }

    #[test]
    fn back_merge_extends_the_request_and_charges_those_behind_it_one() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).read().build());
        submit(&mut s, rq(2, 1).sector(500).read().build());
        let into = submit(&mut s, rq(3, 2).sector(108).sectors(8).read().build());
        assert_eq!(into, Some(RequestId(1)));
        assert_eq!(s.queue[0].rq.sectors, 16);
        assert_eq!(budget(&s, 2), 2048 - MERGE_COST);
        assert_eq!(budget(&s, 1), 2048);
    }

    #[test]
    fn front_merge_moves_the_start_and_costs_the_merged_request_one() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).read().build());
        submit(&mut s, rq(2, 1).sector(500).read().build());
        let into = submit(&mut s, rq(3, 2).sector(492).sectors(8).read().build());
        assert_eq!(into, Some(RequestId(2)));
        assert_eq!((s.queue[1].rq.sector, s.queue[1].rq.sectors), (492, 16));
        assert_eq!(budget(&s, 2), 2048 - 1);
    }

    #[test]
    fn merges_need_the_same_direction_and_room_under_max_sectors() {
        let mut s = Linus::default();
        submit(&mut s, rq(1, 1).sector(100).sectors(8).write().build());
        assert_eq!(submit(&mut s, rq(2, 1).sector(108).read().build()), None);
        submit(&mut s, rq(3, 1).sector(1000).sectors(250).write().build());
        assert_eq!(
            submit(&mut s, rq(4, 1).sector(1250).sectors(8).write().build()),
            None
        );
        assert_eq!(
            submit(&mut s, rq(5, 1).sector(1250).sectors(6).write().build()),
            Some(RequestId(3))
        );
    }

    #[test]
    fn the_device_takes_requests_from_the_front_one_sweep_after_another() {
        let mut s = Linus::default();
        for (id, sector) in [(1, 300), (2, 100), (3, 400)] {
            submit(&mut s, rq(id, 1).sector(sector).read().build());
        }
        // 100 lies below the head: it waits at the tail for the next sweep. 400 continues the
        // current sweep past 300, so it goes where the queue wraps round, ahead of 100.
        let mut got = Vec::new();
        while let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) {
            got.push(r.id.0);
        }
        assert_eq!(got, vec![1, 3, 2]);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn a_read_behind_streaming_writes_is_passed_read_latency_over_16_times() {
        // A writer keeps the queue full of ascending writes, one per ms, each taking 3 ms.
        let mut h = Harness::new(Linus::default(), 1, |_| Nanos::from_ms(3));
        let writes = 300u64;
        for i in 0..writes {
            h.submit(
                rq(i, 1)
                    .sector(10_000 + i * 100)
                    .write()
                    .at(Nanos::from_ms(i)),
            );
        }
        // A read low on the disk arrives at 10.5 ms: it finds no place, goes to the tail, and
        // each later write is inserted in front of it (continuing the sweep) until its budget
        // of 2048 has paid for 2048 / 16 = 128 of them.
        let read_at = Nanos::from_us(10_500);
        h.submit(rq(1_000, 2).sector(0).read().at(read_at));
        let out = h.run();
        let before = (0..writes).filter(|&i| Nanos::from_ms(i) < read_at).count();
        let index = out
            .dispatch_order()
            .iter()
            .position(|&id| id == 1_000)
            .unwrap();
        assert_eq!(
            index,
            before + (Config::default().read_latency / SEEK_COST) as usize
        );
    }
}
