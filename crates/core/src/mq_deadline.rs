//! mq-deadline: deadline for blk-mq, with three I/O priority levels and priority aging.
//!
//! Follows `block/mq-deadline.c` of mainline Linux 6.x (Jens Axboe, Damien Le Moal, Bart Van
//! Assche; as of 6.18, after zoned write locking moved out to zone write plugging); see
//! `docs/mq-deadline.md`.
//!
//! Every queued request belongs to one of three *levels* by its I/O priority class (real time,
//! best effort, idle) and to one data direction (reads; everything else is a write, as
//! `rq_data_dir` says). Each level keeps, per direction, a tree sorted by start sector and a
//! FIFO in arrival order, each request stamped with its deadline (arrival + `read_expire` or
//! `write_expire`), and remembers the start sector of the last request it dispatched per
//! direction (`latest_pos`). The direction of the last batch, the batch count and the
//! starvation count are shared by the levels.
//!
//! One level's dispatch step, given a *latest start* time (only requests that arrived no later
//! may go):
//!
//! 1. if the level has a request at or above `latest_pos` in the last batch's direction and
//!    fewer than `fifo_batch` requests went in this batch, that one continues the batch;
//! 2. otherwise a batch starts: reads, unless writes are queued and reads have already been
//!    chosen over them `writes_starved` times (then writes, and the count restarts);
//! 3. it starts at the head of that direction's FIFO if the head's deadline has passed or
//!    nothing is queued at or above `latest_pos`, else at the first request at or above it.
//!
//! The request chosen is dispatched only if it arrived no later than the latest start; a
//! refusal keeps the side effects of choosing (a batch started, a starvation counted), as the
//! kernel's does. As in the kernel, a fresh scheduler starts as if a write batch were under
//! way (last direction write, nothing sent), so its first requests may be writes. A dispatch first tries the *aged* requests: when requests of at least two
//! levels are queued or in flight, the best-effort and then the idle level take a step with the
//! latest start `now - prio_aging_expire`. Failing that, the levels take a step in priority
//! order with the latest start `now`, stopping at the first level that dispatches or still has
//! requests queued *or in flight*: a lower level waits until a higher one has completed all its
//! requests, unless its requests have aged.
//!
//! Scheduler tags ([`crate::tags`]): every request holds one of `nr_requests` tags from its
//! admission into the queues to its completion, and writes (everything but reads, which
//! `dd_limit_depth` leaves unthrottled) may hold at most `async_depth` of them;
//! `dd_depth_updated` sets `async_depth` to `nr_requests` whenever `nr_requests` is set. A
//! request that finds no tag waits outside the queues, so a flood of writes holding every tag
//! makes a read wait for one. Flushes bypass the scheduler and go to the device first, as
//! blk-mq sends flush sequences straight to the dispatch list.
//!
//! Merging ([`Scheduler::try_merge`]) is deadline's: a back merge into the request just below
//! in sector order that ends where the new one starts, else (if `front_merges`) a front merge
//! into one that starts where it ends; same level, same direction, same operation and the same
//! I/O priority (class and level, as `blk_rq_merge_ok` requires), never beyond
//! the device's limit (the `max_sectors` the block layer passes). A bio's merge changes neither
//! FIFO position nor deadline. After a merge the grown request merges with the queued request
//! it now touches ([`Scheduler::merge_next`]): after a bio's back merge the next one in sector
//! order merges into it (`attempt_back_merge`), after a front merge it merges into the one
//! before it (`attempt_front_merge`), and after a request's merge at its insertion it merges
//! into the one ending where it starts, again and again (`elv_attempt_insert_merge`); the
//! one kept takes the FIFO place and deadline of the one gone when that one expires first
//! (`dd_merged_requests`), and the one gone gives back its tag.
//!
//! ## Tunables (sysfs names, `/sys/block/<dev>/queue/iosched/`)
//! | name | unit | default | meaning |
//! |---|---|---|---|
//! | `read_expire` | ms | 500 | a read's deadline after its arrival |
//! | `write_expire` | ms | 5000 | a write's deadline after its arrival |
//! | `writes_starved` | count | 2 | read batches allowed to pass queued writes |
//! | `fifo_batch` | requests | 16 | requests per batch |
//! | `front_merges` | bool | 1 | try front merges |
//! | `prio_aging_expire` | ms | 10000 | age after which a lower-priority request goes first |
//! | `nr_requests` | requests | 256 | scheduler tags (queue attribute); setting it sets `async_depth` |
//! | `async_depth` | requests | 256 | writes holding tags at once |
//! | `hz` | count | 0 | elevator's: the kernel's `CONFIG_HZ`, expiries in whole jiffies (0: nanoseconds) |
//!
//! ## Deviations from the kernel
//! - **Tags are counted**: the kernel's `async_depth` is a shallow depth in each word of the
//!   tag bitmap; we cap the number of writes holding tags ([`crate::tags`]). Waiting requests
//!   are admitted in arrival order, a read passing writes that wait only for `async_depth`.
//! - **`nr_requests`** defaults to 256, the kernel's value for a device queue depth of 128 or
//!   more (`2 * min(queue_depth, 128)`); a shallower device gets fewer tags in the kernel. It
//!   is refused outside 4 ..= 2048 (`BLKDEV_MIN_RQ`, `MAX_SCHED_RQ`), which the kernel clamps
//!   to. Flushes take no tag.
//! - **Zoned devices**: no zone handling; writes to one zone may be reordered.
//! - **Merging** is deadline's model (whole requests, no `last_merge` cache: the candidate
//!   of a back merge is the request just below in sector order, not `elv_rqhash_find`'s
//!   newest request ending there, and an insertion merge's loop takes the request just
//!   below too); a bio's merge does not check the cgroup (`blk_cgroup_mergeable`), the
//!   request-to-request merge does; `dd_merged_requests` compares deadlines in nanoseconds,
//!   where the kernel compares jiffies (two requests queued in the same jiffy keep their
//!   places); discards and flushes never merge.
//! - **Requests at the same sector** coexist in a tree (ordered by id).
//! - **Time** is kept in nanoseconds unless `hz` is set (elevator's tunable, 0 by default:
//!   the simulator's expiries are exact). With `hz` set (the replay of a recording sets the
//!   kernel's `CONFIG_HZ`), deadlines and priority aging count whole jiffies as the kernel's
//!   do: an expiry is `msecs_to_jiffies` of its milliseconds (rounded up to a jiffy), a
//!   request is stamped with the jiffy it was inserted in (`dd_insert_request`: `fifo_time =
//!   jiffies + fifo_expire`), it has expired once `jiffies` reaches that stamp
//!   (`deadline_check_fifo`) and aged once its insertion jiffy is `prio_aging_expire` jiffies
//!   behind (`started_after`), the jiffy boundaries at multiples of the jiffy on the
//!   monotonic clock (`tick_init_jiffy_update`). So with HZ = 250 and `prio_aging_expire` 4
//!   (one jiffy) a request inserted at 29.4 ms has aged at 32.3 ms, past the boundary at 32 ms.
//!   A request's insertion stamp is stored, where the kernel recomputes it from the deadline
//!   with the current `*_expire` (which differs only when the tunable changed while the
//!   request was queued).
//! - `writes_starved` refuses negative values (the kernel accepts them, and a negative value
//!   compared as unsigned never forces a write batch).
//! - The per-level dispatch list for requests inserted at the head is absent: our drivers
//!   never insert at the head.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound::{Excluded, Included, Unbounded};

use crate::deadline::{choose_direction, dir_of, READ, WRITE};
use crate::fifo::Fifos;
use crate::request::{IoClass, Op, Request, RequestId};
use crate::scheduler::{Dispatch, GrownBy, RequestsMerged, Scheduler};
use crate::tags::SchedTags;
use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

const INT_MAX: i64 = i32::MAX as i64;

crate::tunable::tunables! {
    policy: "mq-deadline";
    /// mq-deadline's tunables, as sysfs names them (the first five are deadline's).
    pub const TUNABLES;
    /// mq-deadline's settings.
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
        /// Read batches that may pass queued writes before a write batch (`writes_starved`).
        writes_starved: u32 = "writes_starved" {
            unit: Count,
            default: 2,
            min: 0,
            max: INT_MAX,
            doc: "read batches that may be chosen over queued writes before a write batch",
        },
        /// Requests per batch (`fifo_batch`); 0 behaves as 1.
        fifo_batch: u32 = "fifo_batch" {
            unit: Requests,
            default: 16,
            min: 0,
            max: INT_MAX,
            doc: "requests dispatched in sector order before the direction and FIFO are checked again",
        },
        /// Whether to try front merges (`front_merges`).
        front_merges: bool = "front_merges" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "1 to merge a new request in front of a queued one that starts where it ends",
        },
        /// Age after which best-effort and idle requests go first (`prio_aging_expire`).
        prio_aging_expire: Nanos = "prio_aging_expire" {
            unit: Ms,
            default: 10_000,
            min: 0,
            max: INT_MAX,
            doc: "a best-effort or idle request this old goes before higher-priority requests",
        },
        /// Requests admitted and not completed at once: the scheduler tags (`nr_requests`).
        /// Twice the device queue depth capped at 128 (`blk_mq_init_sched`): 256 for a deep
        /// device. Setting it sets `async_depth` too (`dd_depth_updated`), so it comes first.
        nr_requests: u32 = "nr_requests" {
            unit: Requests,
            default: 256,
            min: 4,
            max: 2048,
            store: custom,
            doc: "scheduler tags, one per request from admission to completion; sets async_depth",
        },
        /// Writes admitted and not completed at once (`async_depth`); `nr_requests` unless
        /// given.
        async_depth: u32 = "async_depth" {
            unit: Requests,
            default: 256,
            min: 1,
            max: INT_MAX,
            doc: "writes (everything but reads) that may be admitted and not completed at once",
        },
        /// The kernel's timer frequency (`CONFIG_HZ`), elevator's own: 0 keeps every
        /// expiry in nanoseconds; otherwise deadlines and priority aging count whole jiffies,
        /// as the kernel's do (see the module docs, *Time*).
        hz: u64 = "hz" {
            unit: Count,
            default: 0,
            min: 0,
            max: 1000,
            doc: "elevator: the kernel's CONFIG_HZ; 0 counts expiries in nanoseconds, 100-1000 in \
                  whole jiffies of that length, as the kernel does",
        },
    }
}

impl Config {
    /// `nr_requests`, whose store is `dd_depth_updated`'s: `async_depth` follows it.
    fn store_custom(&mut self, name: &str, value: i64) {
        debug_assert_eq!(name, "nr_requests");
        self.nr_requests = value as u32;
        self.async_depth = self.nr_requests;
    }

    fn show_custom(&self, name: &str) -> i64 {
        debug_assert_eq!(name, "nr_requests");
        i64::from(self.nr_requests)
    }
}

/// The levels, highest priority first.
const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;
const LEVELS: usize = 3;

fn level_of(rq: &Request) -> usize {
    match rq.prio.class {
        IoClass::RealTime => RT,
        IoClass::BestEffort => BE,
        IoClass::Idle => IDLE,
    }
}

/// A jiffy's length in nanoseconds at `hz` (> 0).
fn jiffy_ns(hz: u64) -> i64 {
    1_000_000_000 / hz.max(1) as i64
}

/// Whether `rq` counts against `async_depth` (everything but reads; flushes never get here).
fn throttled(rq: &Request) -> bool {
    !rq.op.is_read()
}

/// The FIFO of direction `dir` of `level` in [`MqDeadline::fifos`].
fn fifo_of(level: usize, dir: usize) -> usize {
    level * 2 + dir
}

/// A queued request.
#[derive(Debug)]
struct Entry {
    rq: Request,
    /// When it entered the queues, on the scheduler's clock ([`MqDeadline::stamp`]).
    arrival: i64,
    /// `arrival + expire` of its direction, on the same clock.
    deadline: i64,
}

/// The queued request the last merge grew, where [`Scheduler::merge_next`] starts.
#[derive(Clone, Copy, Debug)]
struct Grown {
    id: RequestId,
    level: usize,
    dir: usize,
    /// Its key in its level's and direction's sort tree.
    key: (u64, u64),
    /// Its key before a bio's front merge moved it (`elv_former_request` looks from
    /// there: `dd_request_merged` repositions it only when no request merges).
    before_front: Option<(u64, u64)>,
}

/// One direction of one level: its sort tree (its FIFO is in [`MqDeadline::fifos`]).
#[derive(Debug)]
struct Lists {
    /// (start sector, id) -> slot.
    sorted: BTreeMap<(u64, u64), u32>,
}

/// One priority level.
#[derive(Debug)]
struct Level {
    lists: [Lists; 2],
    /// Start sector of the last request dispatched, per direction.
    latest_pos: [u64; 2],
    /// Requests queued here or dispatched and not completed.
    owned: u64,
}

/// The mq-deadline scheduler.
#[derive(Debug)]
pub struct MqDeadline {
    config: Config,
    /// Every level's and direction's FIFO ([`fifo_of`]) over one slab of queued requests.
    fifos: Fifos<Entry>,
    levels: [Level; LEVELS],
    /// Direction of the batch under way.
    last_dir: usize,
    /// Requests dispatched in the batch under way.
    batching: u32,
    /// Times reads were chosen over queued writes since the last write batch.
    starved: u32,
    /// Flushes, which bypass the scheduler.
    bypass: VecDeque<Request>,
    tags: SchedTags,
    /// Requests in the levels' lists.
    in_lists: usize,
    /// The request the last merge grew.
    grown: Option<Grown>,
}

impl Default for MqDeadline {
    fn default() -> Self {
        MqDeadline::new(Config::default())
    }
}

impl MqDeadline {
    /// An empty scheduler with `config`.
    pub fn new(config: Config) -> MqDeadline {
        let lists = || Lists {
            sorted: BTreeMap::new(),
        };
        let level = || Level {
            lists: [lists(), lists()],
            latest_pos: [0, 0],
            owned: 0,
        };
        MqDeadline {
            tags: SchedTags::new(config.nr_requests, config.async_depth),
            config,
            fifos: Fifos::new(LEVELS * 2),
            levels: [level(), level(), level()],
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            bypass: VecDeque::new(),
            in_lists: 0,
            grown: None,
        }
    }

    /// Build from user settings (see [`TUNABLES`]).
    pub fn from_settings(settings: &Settings) -> Result<MqDeadline, TunableError> {
        Ok(MqDeadline::new(Config::from_settings(settings)?))
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Writes holding a tag (admitted and not completed), at most `async_depth`.
    pub fn async_tags_held(&self) -> u32 {
        self.tags.held_throttled()
    }

    /// Requests holding a tag (admitted and not completed), at most `nr_requests`.
    pub fn tags_held(&self) -> u32 {
        self.tags.held()
    }

    fn entry(&self, slot: u32) -> &Entry {
        self.fifos.get(slot)
    }

    fn entry_mut(&mut self, slot: u32) -> &mut Entry {
        self.fifos.get_mut(slot)
    }

    /// Put an admitted request into its level's tree and FIFO.
    fn enqueue(&mut self, rq: Request, now: Nanos) {
        let (level, dir) = (level_of(&rq), dir_of(&rq));
        let c = &self.config;
        let expire = if dir == READ {
            c.read_expire
        } else {
            c.write_expire
        };
        let arrival = self.stamp(now);
        let deadline = arrival.saturating_add(self.span(expire));
        let key = (rq.sector, rq.id.0);
        let entry = Entry {
            rq,
            arrival,
            deadline,
        };
        let slot = self.fifos.push_back(fifo_of(level, dir), entry);
        let lv = &mut self.levels[level];
        lv.lists[dir].sorted.insert(key, slot);
        lv.owned += 1;
        self.in_lists += 1;
    }

    /// `t` on the scheduler's clock: nanoseconds, or with `hz` set the kernel's `jiffies`
    /// (the jiffy `t` falls in, boundaries at multiples of the jiffy).
    fn stamp(&self, t: Nanos) -> i64 {
        let ns = i64::try_from(t.as_ns()).unwrap_or(i64::MAX);
        match self.config.hz {
            0 => ns,
            hz => ns.div_euclid(jiffy_ns(hz)),
        }
    }

    /// The duration `d` on the scheduler's clock: nanoseconds, or with `hz` set
    /// `msecs_to_jiffies` of it (whole jiffies, rounded up).
    fn span(&self, d: Nanos) -> i64 {
        let ns = i64::try_from(d.as_ns()).unwrap_or(i64::MAX);
        match self.config.hz {
            0 => ns,
            hz => ns.div_euclid(jiffy_ns(hz)) + i64::from(ns % jiffy_ns(hz) != 0),
        }
    }

    /// Admit the requests waiting for a tag, as far as tags are free.
    fn admit_waiting(&mut self, now: Nanos) {
        while let Some(rq) = self.tags.next_admitted() {
            self.enqueue(rq, now);
        }
    }

    /// The first request of `level`, direction `dir`, at or above that direction's
    /// `latest_pos`.
    fn at_or_above_pos(&self, level: usize, dir: usize) -> Option<u32> {
        let pos = self.levels[level].latest_pos[dir];
        self.levels[level].lists[dir]
            .sorted
            .range((Included((pos, 0)), Unbounded))
            .next()
            .map(|(_, &s)| s)
    }

    /// Take `slot` off its level's lists and hand its request out.
    fn remove(&mut self, level: usize, dir: usize, slot: u32) -> Request {
        let entry = self.fifos.remove(fifo_of(level, dir), slot);
        let lists = &mut self.levels[level].lists[dir];
        lists.sorted.remove(&(entry.rq.sector, entry.rq.id.0));
        self.in_lists -= 1;
        entry.rq
    }

    /// One level's dispatch step: the best request of `level` that arrived no later than
    /// `latest_start` (on the scheduler's clock, [`Self::stamp`]).
    fn dispatch_level(&mut self, level: usize, latest_start: i64, now: Nanos) -> Option<Request> {
        let continued = if self.batching < self.config.fifo_batch {
            self.at_or_above_pos(level, self.last_dir)
        } else {
            None
        };
        let (dir, slot) = match continued {
            Some(slot) => (self.last_dir, slot),
            None => {
                let (reads, writes) = (
                    !self.fifos.is_empty(fifo_of(level, READ)),
                    !self.fifos.is_empty(fifo_of(level, WRITE)),
                );
                let writes_starved = self.config.writes_starved;
                let dir = choose_direction(reads, writes, &mut self.starved, writes_starved)?;
                let head = self
                    .fifos
                    .front(fifo_of(level, dir))
                    .expect("a direction with requests");
                let expired = self.stamp(now) >= self.entry(head).deadline;
                let slot = match self.at_or_above_pos(level, dir) {
                    Some(next) if !expired => next,
                    _ => head,
                };
                self.last_dir = dir;
                self.batching = 0;
                (dir, slot)
            }
        };
        if self.entry(slot).arrival > latest_start {
            return None;
        }
        self.batching += 1;
        let rq = self.remove(level, dir, slot);
        self.levels[level].latest_pos[dir] = rq.sector;
        Some(rq)
    }

    /// Best-effort and idle requests older than `prio_aging_expire`, when more than one level
    /// has requests queued or in flight.
    fn dispatch_aged(&mut self, now: Nanos) -> Option<Request> {
        let busy = self.levels.iter().filter(|l| l.owned > 0).count();
        if busy < 2 {
            return None;
        }
        // Before time zero (nanoseconds) or jiffy zero nothing qualifies: no stamp is negative.
        let latest = self.stamp(now) - self.span(self.config.prio_aging_expire);
        (BE..LEVELS).find_map(|level| self.dispatch_level(level, latest, now))
    }
}

impl Scheduler for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    fn try_merge(&mut self, rq: &Request, max_sectors: u32, _now: Nanos) -> Option<RequestId> {
        if !matches!(rq.op, Op::Read | Op::Write) || rq.sectors == 0 {
            return None;
        }
        let (level, dir) = (level_of(rq), dir_of(rq));
        let fits = |q: &Request| {
            q.op == rq.op && q.prio == rq.prio && q.sectors + rq.sectors <= max_sectors
        };

        // Back merge: the queued request just below rq in sector order ends where rq starts.
        let below = self.levels[level].lists[dir]
            .sorted
            .range(..(rq.sector, 0))
            .next_back()
            .map(|(_, &s)| s);
        if let Some(slot) = below {
            let q = &mut self.entry_mut(slot).rq;
            if q.end() == rq.sector && fits(q) {
                q.sectors += rq.sectors;
                let (id, key) = (q.id, (q.sector, q.id.0));
                self.grown = Some(Grown {
                    id,
                    level,
                    dir,
                    key,
                    before_front: None,
                });
                return Some(id);
            }
        }

        // Front merge: a queued request starts where rq ends; it moves down in the tree.
        if self.config.front_merges {
            let end = rq.end();
            let above = self.levels[level].lists[dir]
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
                    let sorted = &mut self.levels[level].lists[dir].sorted;
                    sorted.remove(&key);
                    sorted.insert((rq.sector, id.0), slot);
                    self.grown = Some(Grown {
                        id,
                        level,
                        dir,
                        key: (rq.sector, id.0),
                        before_front: Some(key),
                    });
                    return Some(id);
                }
            }
        }
        None
    }

    /// `attempt_back_merge` / `attempt_front_merge` after a bio's merge, or a step of
    /// `elv_attempt_insert_merge`'s loop after an insertion merge: mq-deadline's
    /// `next_request` and `former_request` are `elv_rb_latter_request` and
    /// `elv_rb_former_request`, the neighbours in the grown request's sort tree (the
    /// insertion merge's `elv_rqhash_find` takes any request ending where the grown one
    /// starts: ours the one before it in the tree). `attempt_merge` allows the merge when
    /// the two are contiguous with the same operation, I/O priority and cgroup
    /// (`blk_cgroup_mergeable`) and fit in `max_sectors`; then `dd_merged_requests`: the
    /// one kept takes the FIFO place and deadline of the one gone if that one expires
    /// first, and the one gone leaves the lists, is freed (`dd_finish_request` counts it
    /// completed) and gives back its tag.
    fn merge_next(
        &mut self,
        into: RequestId,
        grown: GrownBy,
        max_sectors: u32,
        now: Nanos,
    ) -> Option<RequestsMerged> {
        let g = self.grown.filter(|g| g.id == into)?;
        let sorted = &self.levels[g.level].lists[g.dir].sorted;
        let own = (g.key, *sorted.get(&g.key)?);
        let neighbour = match (grown, g.before_front) {
            (GrownBy::Bio, None) => sorted.range((Excluded(g.key), Unbounded)).next(),
            (GrownBy::Bio, Some(before)) => sorted.range(..before).rev().find(|e| *e.0 != g.key),
            (GrownBy::Insertion, _) => sorted.range(..g.key).next_back(),
        };
        let neighbour = neighbour.map(|(&k, &s)| (k, s))?;
        let ((kept_key, mut kept), (gone_key, mut gone)) = match (grown, g.before_front) {
            (GrownBy::Bio, None) => (own, neighbour),
            _ => (neighbour, own),
        };
        let (a, b) = (&self.entry(kept).rq, &self.entry(gone).rq);
        if a.end() != b.sector
            || a.op != b.op
            || a.prio != b.prio
            || a.group != b.group
            || a.sectors + b.sectors > max_sectors
        {
            return None;
        }
        if self.entry(gone).deadline < self.entry(kept).deadline {
            let (arrival, deadline) = (self.entry(gone).arrival, self.entry(gone).deadline);
            self.fifos.swap_items(kept, gone);
            let sorted = &mut self.levels[g.level].lists[g.dir].sorted;
            sorted.insert(kept_key, gone);
            sorted.insert(gone_key, kept);
            std::mem::swap(&mut kept, &mut gone);
            let e = self.entry_mut(kept);
            e.arrival = arrival;
            e.deadline = deadline;
        }
        let sectors = self.entry(gone).rq.sectors;
        let k = &mut self.entry_mut(kept).rq;
        k.sectors += sectors;
        let kept_id = k.id;
        let gone = self.remove(g.level, g.dir, gone);
        let level = &mut self.levels[g.level];
        level.owned = level.owned.saturating_sub(1);
        self.tags.release(throttled(&gone));
        self.admit_waiting(now);
        self.grown = Some(Grown {
            id: kept_id,
            key: kept_key,
            before_front: None,
            ..g
        });
        Some(RequestsMerged {
            kept: kept_id,
            gone: gone.id,
        })
    }

    fn insert(&mut self, rq: Request, now: Nanos) {
        if rq.op == Op::Flush {
            self.bypass.push_back(rq);
            return;
        }
        let throttle = throttled(&rq);
        self.tags.arrive(rq, throttle);
        self.admit_waiting(now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.admit_waiting(now);
        let rq = self.bypass.pop_front().or_else(|| {
            self.dispatch_aged(now).or_else(|| {
                for level in RT..LEVELS {
                    let rq = self.dispatch_level(level, self.stamp(now), now);
                    if rq.is_some() || self.levels[level].owned > 0 {
                        return rq;
                    }
                }
                None
            })
        });
        match rq {
            Some(rq) => Dispatch::Request(rq),
            None => Dispatch::Empty,
        }
    }

    fn complete(&mut self, rq: &Request, now: Nanos) {
        if rq.op == Op::Flush {
            return;
        }
        let level = &mut self.levels[level_of(rq)];
        level.owned = level.owned.saturating_sub(1);
        self.tags.release(throttled(rq));
        self.admit_waiting(now);
    }

    fn bounds_own_requests(&self) -> bool {
        true
    }
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        Some(!self.tags.is_waiting(id))
    }
    fn sched_tags_admitted(&self) -> Option<u64> {
        Some(self.tags.admitted())
    }
    fn queued(&self) -> usize {
        self.in_lists + self.tags.waiting() + self.bypass.len()
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.config.set("mq-deadline", name, value)?;
        self.tags.set_depth(self.config.nr_requests);
        self.tags.set_limit(self.config.async_depth);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{drain_ids as drain, rq, Harness, RequestBuilder};
    use crate::request::DEFAULT_MERGE_SECTORS;
    use proptest::prelude::*;

    fn take(s: &mut MqDeadline, now: Nanos) -> Request {
        match s.dispatch(now) {
            Dispatch::Request(r) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    fn with(f: impl FnOnce(&mut Config)) -> MqDeadline {
        let mut c = Config::default();
        f(&mut c);
        MqDeadline::new(c)
    }

    #[test]
    fn defaults_match_the_kernel() {
        let c = Config::default();
        assert_eq!(c.read_expire, Nanos::from_ms(500));
        assert_eq!(c.write_expire, Nanos::from_secs(5));
        assert_eq!(c.prio_aging_expire, Nanos::from_secs(10));
        assert_eq!(
            (
                c.writes_starved,
                c.fifo_batch,
                c.front_merges,
                c.async_depth,
                c.nr_requests
            ),
            (2, 16, true, 256, 256)
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
        s.set("prio_aging_expire", 20).set("async_depth", 4);
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.prio_aging_expire, Nanos::from_ms(20));
        assert_eq!(c.async_depth, 4);
        let mut bad = Settings::new();
        bad.set("async_depth", 0);
        assert!(matches!(
            MqDeadline::from_settings(&bad),
            Err(TunableError::OutOfRange { .. })
        ));
        let mut d = MqDeadline::default();
        assert!(d.set_tunable("front_merges", 2).is_err());
        assert!(d.set_tunable("antic_expire", 1).is_err());
        d.set_tunable("fifo_batch", 3).unwrap();
        assert_eq!(d.config().fifo_batch, 3);
    }

    /// A scheduler that has just dispatched and completed one read at sector 0, so the batch
    /// under way is a read batch.
    fn after_one_read(f: impl FnOnce(&mut Config)) -> MqDeadline {
        let mut s = with(f);
        s.insert(rq(1000, 9).sector(0).read().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1000]);
        s
    }

    #[test]
    fn a_fresh_scheduler_continues_a_write_batch_first() {
        // As in the kernel, the scheduler starts with last_dir = write and an empty batch, so
        // queued writes continue that "batch" before reads are preferred.
        let mut s = MqDeadline::default();
        s.insert(rq(1, 1).sector(10).write().build(), Nanos::ZERO);
        s.insert(rq(2, 2).sector(9_000).read().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![1, 2]);
    }

    #[test]
    fn reads_are_dispatched_before_writes_queued_earlier() {
        // Batches of one request make each dispatch a batch decision.
        let mut s = after_one_read(|c| c.fifo_batch = 1);
        s.insert(rq(1, 1).sector(10).write().build(), Nanos::ZERO);
        s.insert(rq(2, 1).sector(20).write().build(), Nanos::ZERO);
        s.insert(rq(3, 2).sector(9_000).read().build(), Nanos::ZERO);
        assert_eq!(take(&mut s, Nanos::ZERO).id.0, 3);
    }

    #[test]
    fn writes_get_a_batch_after_writes_starved_read_batches() {
        let mut s = after_one_read(|c| {
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
    fn expired_fifo_head_is_served_when_the_batch_under_way_ends() {
        let mut s = with(|c| {
            c.read_expire = Nanos::from_ms(100);
            c.fifo_batch = 3;
        });
        // An old read high on the disk, then a run of reads low on the disk.
        s.insert(rq(1, 1).sector(90_000).read().build(), Nanos::ZERO);
        for id in 2..=9 {
            s.insert(rq(id, 2).sector(id * 8).read().build(), Nanos::from_ms(50));
        }
        // Before expiry the batch starts at the lowest sector at or above latest_pos (0)...
        assert_eq!(take(&mut s, Nanos::from_ms(60)).id.0, 2);
        // ... request 1 expires at 100 ms, inside the batch: the batch finishes its three,
        // then the next batch starts at the expired head.
        let order = drain(&mut s, Nanos::from_ms(100));
        assert_eq!(&order[..3], &[3, 4, 1]);
    }

    #[test]
    fn batch_continues_from_latest_pos_and_picks_up_requests_arriving_above_it() {
        let mut s = MqDeadline::default();
        for (id, sector) in [(1, 100), (2, 900), (3, 50)] {
            s.insert(rq(id, 1).sector(sector).read().build(), Nanos::ZERO);
        }
        // The first batch starts at the lowest sector at or above latest_pos = 0.
        assert_eq!(take(&mut s, Nanos::ZERO).id.0, 3);
        assert_eq!(take(&mut s, Nanos::ZERO).id.0, 1);
        // A read arrives between the last position (100) and the next one (900): the batch
        // takes it next, as the position is looked up afresh at each dispatch.
        s.insert(rq(4, 2).sector(400).read().build(), Nanos::ZERO);
        // One arrives below the position: the sweep goes on upward first.
        s.insert(rq(5, 2).sector(60).read().build(), Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![4, 2, 5]);
    }

    #[test]
    fn a_new_batch_with_nothing_above_latest_pos_starts_at_the_fifo_head() {
        let mut s = with(|c| c.fifo_batch = 2);
        for (id, sector) in [(1, 500), (2, 300), (3, 100), (4, 600)] {
            s.insert(rq(id, 1).sector(sector).read().build(), Nanos::ZERO);
        }
        // Batch 1 from sector 0 upward: 100, 300. Batch 2 continues above 300: 500, 600.
        // Then nothing is above 600; a new read arrives low and one high, older first.
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![3, 2, 1, 4]);
        s.insert(rq(5, 1).sector(40).read().build(), Nanos::ZERO);
        s.insert(rq(6, 1).sector(20).read().build(), Nanos::ZERO);
        // Nothing at or above 600: the batch starts at the FIFO head (5), not the lowest (6).
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![5, 6]);
    }

    #[test]
    fn real_time_goes_before_best_effort_before_idle() {
        let mut s = MqDeadline::default();
        s.insert(
            rq(1, 1).sector(10).read().prio(IoClass::Idle, 7).build(),
            Nanos::ZERO,
        );
        s.insert(rq(2, 2).sector(20).read().build(), Nanos::ZERO);
        s.insert(
            rq(3, 3)
                .sector(30)
                .read()
                .prio(IoClass::RealTime, 0)
                .build(),
            Nanos::ZERO,
        );
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![3, 2, 1]);
    }

    #[test]
    fn a_lower_level_waits_while_a_higher_one_has_requests_in_flight() {
        let mut s = MqDeadline::default();
        s.insert(
            rq(1, 1)
                .sector(10)
                .read()
                .prio(IoClass::RealTime, 0)
                .build(),
            Nanos::ZERO,
        );
        s.insert(rq(2, 2).sector(20).read().build(), Nanos::ZERO);
        let rt = take(&mut s, Nanos::ZERO);
        assert_eq!(rt.id.0, 1);
        // The real-time read is at the device: best effort waits for it to complete.
        assert_eq!(s.dispatch(Nanos::from_ms(1)), Dispatch::Empty);
        s.complete(&rt, Nanos::from_ms(2));
        assert_eq!(take(&mut s, Nanos::from_ms(2)).id.0, 2);
    }

    #[test]
    fn an_idle_request_older_than_prio_aging_expire_goes_before_newer_best_effort() {
        let mut s = with(|c| c.prio_aging_expire = Nanos::from_ms(100));
        s.insert(
            rq(1, 1).sector(10).read().prio(IoClass::Idle, 7).build(),
            Nanos::ZERO,
        );
        let mut t = Nanos::ZERO;
        // A stream of best-effort reads keeps the idle read waiting...
        for id in 2..=5 {
            s.insert(rq(id, 2).sector(id * 100).read().build(), t);
            let r = take(&mut s, t);
            assert_eq!(r.id.0, id);
            t += Nanos::from_ms(25);
            s.complete(&r, t);
        }
        // ... until it has waited prio_aging_expire (now 100 ms): then it goes first.
        assert_eq!(t, Nanos::from_ms(100));
        s.insert(rq(7, 2).sector(700).read().build(), t);
        assert_eq!(take(&mut s, t).id.0, 1);
        assert_eq!(take(&mut s, t).id.0, 7);
    }

    /// An idle write inserted at 29.36 ms while a real-time read is at the device, asked
    /// again at 32.26 ms with `prio_aging_expire` one jiffy (4 ms shown at HZ = 250): the
    /// kernel's `dd_dispatch_prio_aged_requests` compares jiffies (`started_after`: the
    /// write's insertion jiffy 7 against jiffy 8 less one), so the write has aged past the
    /// boundary at 32 ms although 2.9 ms is less than 4 (the kernel dispatched it so in
    /// kfid54's `ddaging1-...-round2`). In nanoseconds (`hz` 0) it has not.
    fn aged_write_past_a_jiffy_boundary(hz: u64) -> Dispatch {
        let mut s = with(|c| {
            c.prio_aging_expire = Nanos::from_ms(4);
            c.hz = hz;
        });
        let rt = rq(1, 1)
            .sector(131_072)
            .read()
            .prio(IoClass::RealTime, 2)
            .build();
        s.insert(rt, Nanos::from_us(28_875));
        assert_eq!(take(&mut s, Nanos::from_us(28_881)).id.0, 1);
        let idle = rq(2, 2).sector(3952).write().prio(IoClass::Idle, 0).build();
        s.insert(idle, Nanos::from_us(29_360));
        // The insertion's own run: the write is young, real time is in flight.
        assert_eq!(s.dispatch(Nanos::from_us(29_366)), Dispatch::Empty);
        s.dispatch(Nanos::from_us(32_260))
    }

    #[test]
    fn dd_dispatch_prio_aged_requests_counts_whole_jiffies() {
        match aged_write_past_a_jiffy_boundary(250) {
            Dispatch::Request(r) => assert_eq!(r.id.0, 2),
            other => panic!("the aged idle write, not {other:?}"),
        }
        assert_eq!(aged_write_past_a_jiffy_boundary(0), Dispatch::Empty);
    }

    /// `deadline_check_fifo` compares jiffies too: with `read_expire` 4 ms at HZ = 250 (one
    /// jiffy) a read inserted at 3.9 ms has expired at 4.1 ms, in the next jiffy, and a new
    /// batch starts at it rather than at the read above the last position.
    #[test]
    fn deadline_check_fifo_counts_whole_jiffies() {
        let order = |hz: u64| {
            let mut s = with(|c| {
                c.read_expire = Nanos::from_ms(4);
                c.fifo_batch = 1;
                c.hz = hz;
            });
            s.insert(rq(1, 1).sector(9_000).read().build(), Nanos::from_us(3_900));
            s.insert(rq(2, 2).sector(100).read().build(), Nanos::from_us(3_950));
            let first = take(&mut s, Nanos::from_us(3_960));
            s.complete(&first, Nanos::from_us(4_000));
            s.insert(rq(3, 3).sector(6_000).read().build(), Nanos::from_us(4_050));
            let mut order = vec![first.id.0];
            order.extend(drain(&mut s, Nanos::from_us(4_100)));
            order
        };
        // Read 2 is the lowest, so the first batch takes it; the next batch starts at the
        // expired FIFO head 1 in jiffies, at 3 (the next above 2) in nanoseconds.
        assert_eq!(order(250), vec![2, 1, 3]);
        assert_eq!(order(0), vec![2, 3, 1]);
    }

    #[test]
    fn no_aging_before_prio_aging_expire() {
        let mut s = with(|c| c.prio_aging_expire = Nanos::from_ms(100));
        s.insert(
            rq(1, 1).sector(10).read().prio(IoClass::Idle, 7).build(),
            Nanos::ZERO,
        );
        s.insert(rq(2, 2).sector(20).read().build(), Nanos::from_ms(1));
        assert_eq!(take(&mut s, Nanos::from_ms(100) - Nanos(1)).id.0, 2);
    }

    /// Real-time reads: one high on the disk at 0 ms, five low at 5 ms; read_expire 10 ms.
    /// The first dispatch (6 ms) starts a batch at the lowest; the rest go at 10 ms, when the
    /// high one has expired.
    fn rt_batch_order(with_best_effort_write: bool) -> Vec<u64> {
        let mut s = with(|c| c.read_expire = Nanos::from_ms(10));
        let rt = |id: u64, sector: u64| {
            rq(id, 1)
                .sector(sector)
                .read()
                .prio(IoClass::RealTime, 0)
                .build()
        };
        s.insert(rt(1, 5_000), Nanos::ZERO);
        for id in 2..=6 {
            s.insert(rt(id, id * 100), Nanos::from_ms(5));
        }
        if with_best_effort_write {
            s.insert(rq(9, 2).sector(50).write().build(), Nanos::from_ms(5));
        }
        let first = take(&mut s, Nanos::from_ms(6));
        s.complete(&first, Nanos::from_ms(6));
        let mut order = vec![first.id.0];
        order.extend(drain(&mut s, Nanos::from_ms(10)));
        order
    }

    #[test]
    fn the_aged_request_probe_ends_the_batch_under_way_even_when_nothing_has_aged() {
        // Real time alone: the batch runs on in sector order, the expired read waits for it.
        assert_eq!(rt_batch_order(false), vec![2, 3, 4, 5, 6, 1]);
        // With a best-effort write queued, two levels are busy: every dispatch first probes
        // best effort for aged requests; the probe starts a (write) batch there and refuses
        // the young write, which leaves the batch count at zero, so real time starts a new
        // batch at each dispatch and serves its expired FIFO head at once. The kernel's
        // __dd_dispatch_request has these side effects too.
        assert_eq!(rt_batch_order(true), vec![2, 1, 3, 4, 5, 6, 9]);
    }

    #[test]
    fn async_depth_bounds_the_writes_holding_tags_but_not_reads() {
        let mut s = with(|c| c.async_depth = 2);
        for id in 1..=5 {
            s.insert(rq(id, 1).sector(id * 8).write().build(), Nanos::ZERO);
        }
        s.insert(rq(10, 2).sector(5_000).read().build(), Nanos::ZERO);
        s.insert(rq(11, 2).sector(6_000).read().build(), Nanos::ZERO);
        assert_eq!(s.queued(), 7);
        let mut out = Vec::new();
        while let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) {
            out.push(r);
        }
        let mut ids: Vec<u64> = out.iter().map(|r| r.id.0).collect();
        ids.sort_unstable();
        // Both reads, and only the first two writes: the others wait for a tag.
        assert_eq!(ids, vec![1, 2, 10, 11]);
        assert_eq!(s.async_tags_held(), 2);
        assert_eq!(s.queued(), 3);
        // A write completes: the next write is admitted and dispatched, and no more.
        let first_write = out.iter().find(|r| r.id.0 == 1).unwrap();
        s.complete(first_write, Nanos::from_ms(1));
        assert_eq!(drain_one_by_one(&mut s, Nanos::from_ms(1)), vec![3]);
        s.set_tunable("async_depth", 4).unwrap();
        assert_eq!(drain_one_by_one(&mut s, Nanos::from_ms(2)), vec![4, 5]);
    }

    /// Mainline `dd_limit_depth` leaves reads unthrottled but every request takes one of
    /// `nr_requests` scheduler tags (`blk_mq_get_tag`), and `dd_depth_updated` lets writes hold
    /// all of them by default (`async_depth = nr_requests`): a write flood that holds every tag
    /// makes a read wait for one, and the read gets the first tag freed.
    #[test]
    fn a_read_waits_for_a_scheduler_tag_behind_a_write_flood() {
        let mut s = MqDeadline::default();
        s.set_tunable("nr_requests", 4).unwrap();
        assert_eq!((s.config().nr_requests, s.config().async_depth), (4, 4));
        for id in 1..=6 {
            s.insert(rq(id, 1).sector(id * 1_000).write().build(), Nanos::ZERO);
        }
        s.insert(rq(10, 2).sector(50).read().build(), Nanos::from_us(1));
        assert_eq!((s.tags_held(), s.async_tags_held()), (4, 4));
        // Only the four writes holding tags are in the queues; the read waits behind two writes.
        let out: Vec<Request> = std::iter::from_fn(|| match s.dispatch(Nanos::from_us(2)) {
            Dispatch::Request(r) => Some(r),
            _ => None,
        })
        .collect();
        assert_eq!(
            out.iter().map(|r| r.id.0).collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert_eq!(s.queued(), 3);
        // Tags go to the waiters in arrival order: the two writes first, then the read.
        s.complete(&out[0], Nanos::from_ms(5));
        assert_eq!(drain_one_by_one(&mut s, Nanos::from_ms(5)), vec![5]);
        s.complete(&out[1], Nanos::from_ms(6));
        assert_eq!(drain_one_by_one(&mut s, Nanos::from_ms(6)), vec![6]);
        s.complete(&out[2], Nanos::from_ms(7));
        assert_eq!(drain_one_by_one(&mut s, Nanos::from_ms(7)), vec![10]);
        assert_eq!((s.tags_held(), s.async_tags_held()), (4, 3));
        // With async_depth below nr_requests (25% kept for reads, as before 6.10) the read
        // would have found a tag at once.
        let mut reserved = MqDeadline::default();
        reserved.set_tunable("nr_requests", 4).unwrap();
        reserved.set_tunable("async_depth", 3).unwrap();
        for id in 1..=6 {
            reserved.insert(rq(id, 1).sector(id * 1_000).write().build(), Nanos::ZERO);
        }
        reserved.insert(rq(10, 2).sector(50).read().build(), Nanos::from_us(1));
        assert_eq!((reserved.tags_held(), reserved.async_tags_held()), (4, 3));
        // It is queued at once (a fresh mq-deadline finishes its write batch first).
        assert_eq!(
            drain_one_by_one(&mut reserved, Nanos::from_us(2)),
            vec![1, 2, 3, 10]
        );
    }

    /// `dd_depth_updated` runs when `nr_requests` changes and sets `async_depth` to it; an
    /// `async_depth` given with it applies after it, whatever the order of the settings.
    #[test]
    fn nr_requests_sets_async_depth_as_dd_depth_updated_does() {
        let mut both = Settings::new();
        both.set("nr_requests", 64).set("async_depth", 16);
        let c = Config::from_settings(&both).unwrap();
        assert_eq!((c.nr_requests, c.async_depth), (64, 16));
        let mut only = Settings::new();
        only.set("nr_requests", 64);
        assert_eq!(Config::from_settings(&only).unwrap().async_depth, 64);
        for bad in [3, 2049] {
            let mut s = Settings::new();
            s.set("nr_requests", bad);
            assert!(Config::from_settings(&s).is_err(), "{bad}");
        }
    }

    /// W1 as the real executor drives a policy: a device with 256 free slots, a writer keeping
    /// 32 sequential 1 MiB writes outstanding and a dependent reader (a new 4 KiB random read
    /// as each completes), for one simulated second. Completions that fall at the same instant
    /// are reaped together; each turn inserts what the jobs issue, then dispatches until the
    /// policy has nothing to give. Returns the reads done and the longest time a read waited in
    /// the policy (insertion to dispatch).
    fn w1_closed_loop(mut s: impl Scheduler) -> (u64, Nanos) {
        const WRITE_SECTORS: u32 = 2048;
        let end = Nanos::from_secs(1);
        let mut in_flight: BTreeMap<(Nanos, u64), Request> = BTreeMap::new();
        let (mut next_id, mut next_write, mut lcg) = (1u64, 0u64, 7u64);
        let (mut reads, mut max_wait) = (0u64, Nanos::ZERO);
        let mut issue = |s: &mut dyn Scheduler, read: bool, now: Nanos, id: &mut u64| {
            let r = if read {
                lcg = lcg
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                rq(*id, 2)
                    .sector(8_388_608 + (lcg >> 40) % 1_000_000 * 8)
                    .read()
            } else {
                next_write += u64::from(WRITE_SECTORS);
                rq(*id, 1)
                    .sector(next_write)
                    .sectors(WRITE_SECTORS)
                    .sync_write()
            };
            s.insert(r.at(now).build(), now);
            *id += 1;
        };
        let mut now = Nanos::ZERO;
        for _ in 0..32 {
            issue(&mut s, false, now, &mut next_id);
        }
        issue(&mut s, true, now, &mut next_id);
        loop {
            while in_flight.len() < 256 {
                let Dispatch::Request(r) = s.dispatch(now) else {
                    break;
                };
                let id = r.id.0;
                let cost = if r.op.is_read() {
                    max_wait = max_wait.max(now.saturating_sub(r.submitted));
                    Nanos::from_us(1_500 + r.sector / 8 % 7 * 500)
                } else {
                    Nanos::from_ms(12 + id % 9)
                };
                in_flight.insert((now + cost, id), r);
            }
            let Some(&(t, _)) = in_flight.keys().next() else {
                break;
            };
            now = t;
            while let Some(entry) = in_flight.first_entry().filter(|e| e.key().0 == t) {
                let r = entry.remove();
                s.complete(&r, now);
                if r.op.is_read() {
                    reads += 1;
                }
                if now < end {
                    issue(&mut s, r.op.is_read(), now, &mut next_id);
                }
            }
        }
        assert_eq!(s.queued(), 0);
        (reads, max_wait)
    }

    #[test]
    fn with_free_device_slots_a_dependent_read_is_dispatched_when_inserted_beside_streaming_writes()
    {
        // dd_dispatch_request hands out a request whenever a level has one queued (only a
        // higher level's queued or in-flight requests hold a lower level back), and blk-mq
        // keeps calling it while driver tags are free: with a deep device the read never waits
        // in the scheduler, whatever the write batch, writes_starved or async_depth state.
        let (noop_reads, noop_wait) = w1_closed_loop(crate::noop::Noop::new());
        assert_eq!(noop_wait, Nanos::ZERO);
        assert!(noop_reads > 200, "{noop_reads} reads");
        for depth in [256, 8] {
            let (reads, wait) = w1_closed_loop(with(|c| c.async_depth = depth));
            assert_eq!(
                (reads, wait),
                (noop_reads, Nanos::ZERO),
                "async_depth {depth}: reads done and longest wait in the scheduler"
            );
        }
    }

    /// Dispatch without completing; the ids in order.
    fn drain_one_by_one(s: &mut MqDeadline, now: Nanos) -> Vec<u64> {
        std::iter::from_fn(|| match s.dispatch(now) {
            Dispatch::Request(r) => Some(r.id.0),
            _ => None,
        })
        .collect()
    }

    #[test]
    fn flushes_bypass_the_queues_and_go_first() {
        let mut s = MqDeadline::default();
        s.insert(rq(1, 1).sector(10).read().build(), Nanos::ZERO);
        let mut flush = rq(2, 1).write().build();
        flush.op = Op::Flush;
        assert_eq!(
            s.try_merge(&flush, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        s.insert(flush, Nanos::ZERO);
        assert_eq!(drain(&mut s, Nanos::ZERO), vec![2, 1]);
    }

    /// What mq-deadline holds counts every request given to it: those in its lists, those
    /// waiting for a scheduler tag and the flushes that bypass it (`dd_has_work` sees the
    /// dispatch list as well as the FIFOs).
    #[test]
    fn queued_counts_listed_waiting_and_bypassing_requests() {
        let mut s = MqDeadline::default();
        s.set_tunable("nr_requests", 4).unwrap();
        for id in 1..=5 {
            s.insert(rq(id, 1).sector(id * 1_000).write().build(), Nanos::ZERO);
        }
        let mut flush = rq(6, 1).write().build();
        flush.op = Op::Flush;
        s.insert(flush, Nanos::ZERO);
        assert_eq!(s.queued(), 6);
    }

    #[test]
    fn merges_stay_within_one_priority() {
        let mut s = MqDeadline::default();
        s.insert(rq(1, 1).sector(100).sectors(8).read().build(), Nanos::ZERO);
        let idle = rq(2, 1)
            .sector(108)
            .sectors(8)
            .read()
            .prio(IoClass::Idle, 7)
            .build();
        assert_eq!(s.try_merge(&idle, DEFAULT_MERGE_SECTORS, Nanos::ZERO), None);
        let level0 = rq(3, 1)
            .sector(108)
            .sectors(8)
            .read()
            .prio(IoClass::BestEffort, 0)
            .build();
        assert_eq!(
            s.try_merge(&level0, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        let back = rq(4, 2).sector(108).sectors(8).read().build();
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
        let front = rq(5, 2).sector(92).sectors(8).read().build();
        assert_eq!(
            s.try_merge(&front, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
        let r = take(&mut s, Nanos::ZERO);
        assert_eq!((r.id.0, r.sector, r.sectors), (1, 92, 24));
    }

    /// Reads 16+8, 1000+8 and 0+8 inserted at `at` ms each (FIFO order), then a bio 8+8
    /// back-merged into 0+8 (`blk_mq_sched_try_merge`) at the last of them, which makes it
    /// reach 16+8: `attempt_back_merge` (`elv_rb_latter_request`) merges 16+8 into it.
    fn latter_merged_into_grown_read(at: [u64; 3]) -> MqDeadline {
        let mut s = MqDeadline::default();
        let t = Nanos::from_ms;
        s.insert(rq(1, 1).sector(16).sectors(8).read().build(), t(at[0]));
        s.insert(rq(2, 2).sector(1000).sectors(8).read().build(), t(at[1]));
        s.insert(rq(3, 1).sector(0).sectors(8).read().build(), t(at[2]));
        let bio = rq(4, 1).sector(8).sectors(8).read().build();
        let now = t(at[2]);
        assert_eq!(
            s.try_merge(&bio, DEFAULT_MERGE_SECTORS, now),
            Some(RequestId(3))
        );
        let merged = s.merge_next(RequestId(3), GrownBy::Bio, DEFAULT_MERGE_SECTORS, now);
        assert_eq!(
            merged,
            Some(RequestsMerged {
                kept: RequestId(3),
                gone: RequestId(1)
            })
        );
        s
    }

    /// The kept request takes the FIFO place and deadline of the one gone, which expires
    /// first (`dd_merged_requests`), and the one gone frees its tag.
    #[test]
    fn attempt_back_merge_merges_the_latter_request_with_its_earlier_deadline() {
        let mut s = latter_merged_into_grown_read([0, 1, 2]);
        assert_eq!(s.queued(), 2);
        assert_eq!(s.tags_held(), 2, "the request gone gave back its tag");
        // Both reads expired: the batch starts at the FIFO's head, now the grown request
        // in the place of 16+8 (arrived at 0 ms), before 1000+8 (1 ms).
        let r = take(&mut s, Nanos::from_ms(600));
        assert_eq!((r.id.0, r.sector, r.sectors), (3, 0, 24));
    }

    /// `dd_merged_requests` moves the kept request to the FIFO place of the one gone only when
    /// that one expires strictly first (`time_before`): with all three inserted at one
    /// instant, 0+24 keeps its own place, after 1000+8, which the expired FIFO serves first.
    #[test]
    fn dd_merged_requests_keeps_the_fifo_place_at_an_equal_deadline() {
        let mut s = latter_merged_into_grown_read([0, 0, 0]);
        let r = take(&mut s, Nanos::from_ms(600));
        assert_eq!((r.id.0, r.sector), (2, 1000));
    }

    /// `attempt_merge` refuses a latter request of another I/O priority, of another
    /// cgroup, past the device's limit, or not contiguous.
    #[test]
    fn attempt_back_merge_needs_a_mergeable_latter_request() {
        type Latter = fn(RequestBuilder) -> RequestBuilder;
        let setups: [(&str, Latter, u32); 4] = [
            (
                "prio",
                |b| b.prio(IoClass::BestEffort, 0),
                DEFAULT_MERGE_SECTORS,
            ),
            ("group", |b| b.group(1), DEFAULT_MERGE_SECTORS),
            ("size", |b| b, 16),
            ("gap", |b| b.sector(100), DEFAULT_MERGE_SECTORS),
        ];
        for (what, latter, max) in setups {
            let mut s = MqDeadline::default();
            s.insert(
                latter(rq(1, 1).sector(16).sectors(8).read()).build(),
                Nanos::ZERO,
            );
            s.insert(rq(2, 1).sector(0).sectors(8).read().build(), Nanos::ZERO);
            let bio = rq(3, 1).sector(8).sectors(8).read().build();
            assert_eq!(
                s.try_merge(&bio, max, Nanos::ZERO),
                Some(RequestId(2)),
                "{what}"
            );
            let merged = s.merge_next(RequestId(2), GrownBy::Bio, max, Nanos::ZERO);
            assert_eq!(merged, None, "{what}");
        }
    }

    /// `blk_rq_merge_ok` / `ll_back_merge_fn` (through `dd_bio_merge`): a bio merges into the
    /// request it continues only while the two together stay within `max_sectors`: 100 + 156
    /// fills 256 exactly, 100 + 157 does not merge. A bio of no sectors is never merged here
    /// (mq-deadline sees none: `bio_mergeable`, and ours asks only of reads and writes with
    /// data).
    #[test]
    fn dd_bio_merge_merges_up_to_exactly_max_sectors_and_never_an_empty_bio() {
        for (bio_sectors, merged) in [(156, Some(RequestId(1))), (157, None)] {
            let mut s = MqDeadline::default();
            s.insert(rq(1, 1).sector(0).sectors(100).read().build(), Nanos::ZERO);
            let bio = rq(2, 1).sector(100).sectors(bio_sectors).read().build();
            assert_eq!(s.try_merge(&bio, 256, Nanos::ZERO), merged, "{bio_sectors}");
        }
        let mut s = MqDeadline::default();
        s.insert(rq(1, 1).sector(0).sectors(8).read().build(), Nanos::ZERO);
        let empty = rq(2, 1).sector(8).sectors(0).read().build();
        assert_eq!(s.try_merge(&empty, 256, Nanos::ZERO), None);
    }

    /// `nr_requests` reads back as stored (`queue_requests_show`), and sets `async_depth`
    /// with it (`dd_depth_updated`).
    #[test]
    fn nr_requests_reads_back_as_stored() {
        let mut s = MqDeadline::default();
        s.set_tunable("nr_requests", 48).unwrap();
        assert_eq!(s.config().get("nr_requests"), Some(48));
        assert_eq!(s.config().get("async_depth"), Some(48));
    }

    /// `elv_attempt_insert_merge`: a request merged at its insertion into 8+8 (the queued
    /// request ending where it starts), which then merges into 0+8 that ends where it
    /// starts, and the loop goes on from 0+8 (nothing ends at 0). After a bio's back merge
    /// (`attempt_back_merge`) the former request stays apart.
    #[test]
    fn an_insertion_merge_goes_on_into_the_former_requests() {
        let t = Nanos::from_ms;
        let setup = || {
            let mut s = MqDeadline::default();
            s.insert(rq(1, 1).sector(8).sectors(8).write().build(), t(0));
            s.insert(rq(2, 2).sector(0).sectors(8).write().build(), t(1));
            s.insert(rq(3, 3).sector(500).sectors(8).write().build(), t(2));
            let inserted = rq(4, 1).sector(16).sectors(8).write().build();
            assert_eq!(
                s.try_merge(&inserted, DEFAULT_MERGE_SECTORS, t(3)),
                Some(RequestId(1))
            );
            s
        };
        let mut s = setup();
        let max = DEFAULT_MERGE_SECTORS;
        assert_eq!(s.merge_next(RequestId(1), GrownBy::Bio, max, t(3)), None);
        let mut s2 = setup();
        assert_eq!(
            s2.merge_next(RequestId(1), GrownBy::Insertion, max, t(3)),
            Some(RequestsMerged {
                kept: RequestId(2),
                gone: RequestId(1)
            })
        );
        assert_eq!(
            s2.merge_next(RequestId(2), GrownBy::Insertion, max, t(3)),
            None
        );
        assert_eq!(s2.queued(), 2);
        assert_eq!(s2.async_tags_held(), 2);
        let r = take(&mut s2, t(4));
        assert_eq!((r.id.0, r.sector, r.sectors), (2, 0, 24));
        let r = take(&mut s, t(4));
        assert_eq!((r.id.0, r.sector, r.sectors), (2, 0, 8));
    }

    #[test]
    fn front_merges_off_keeps_back_merges() {
        let mut s = with(|c| c.front_merges = false);
        s.insert(rq(1, 1).sector(100).sectors(8).write().build(), Nanos::ZERO);
        let front = rq(2, 1).sector(92).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&front, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            None
        );
        let back = rq(3, 1).sector(108).sectors(8).write().build();
        assert_eq!(
            s.try_merge(&back, DEFAULT_MERGE_SECTORS, Nanos::ZERO),
            Some(RequestId(1))
        );
    }

    fn class(k: u8) -> IoClass {
        [IoClass::RealTime, IoClass::BestEffort, IoClass::Idle][usize::from(k % 3)]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn every_request_is_dispatched_and_completed_exactly_once(
            ops in proptest::collection::vec(
                (0u8..4, 0u64..200, 1u32..=4, 0u64..3_000, 0u8..3), 1..200),
            depth in 1usize..=8,
            fifo_batch in 0u32..20,
            writes_starved in 0u32..4,
            aging_ms in 0u64..20,
            async_depth in 1u32..6,
            front in any::<bool>(),
            hz in prop_oneof![Just(0u64), Just(250u64), Just(1000u64)],
        ) {
            let cfg = Config {
                read_expire: Nanos::from_ms(5),
                write_expire: Nanos::from_ms(20),
                writes_starved,
                fifo_batch,
                front_merges: front,
                prio_aging_expire: Nanos::from_ms(aging_ms),
                async_depth,
                nr_requests: 256,
                hz,
            };
            let mut h = Harness::new(MqDeadline::new(cfg), depth, |r: &Request| {
                Nanos::from_us(200 + (r.sector % 7) * 300)
            });
            let mut t = 0;
            let mut submitted = 0u64;
            for (i, &(kind, slot, size, gap, prio)) in ops.iter().enumerate() {
                t += gap;
                let b = rq(i as u64, (i % 4) as u32)
                    .sector(slot * 8)
                    .sectors(size * 8)
                    .prio(class(prio), 4)
                    .at(Nanos::from_us(t));
                let mut r = match kind {
                    0 | 1 => b.read().build(),
                    2 => b.write().build(),
                    _ => b.sync_write().build(),
                };
                if kind == 3 && slot % 5 == 0 {
                    r.op = Op::Flush;
                }
                submitted += u64::from(r.sectors);
                h.submit(r);
            }
            // `run` asserts every request dispatched and completed exactly once.
            let out = h.run();
            let served: u64 = out.served.iter().map(|s| u64::from(s.rq.sectors)).sum();
            prop_assert_eq!(served, submitted);
        }

        #[test]
        fn writes_holding_tags_never_exceed_async_depth(
            writes in proptest::collection::vec((0u64..500, 0u64..2_000), 1..100),
            async_depth in 1u32..5,
        ) {
            let mut s = with(|c| c.async_depth = async_depth);
            let mut in_flight: VecDeque<Request> = VecDeque::new();
            let mut t = Nanos::ZERO;
            for (i, &(slot, gap)) in writes.iter().enumerate() {
                t += Nanos::from_us(gap);
                s.insert(rq(i as u64, 1).sector(slot * 8).write().build(), t);
                while let Dispatch::Request(r) = s.dispatch(t) {
                    in_flight.push_back(r);
                }
                prop_assert!(in_flight.len() <= async_depth as usize);
                prop_assert!(s.async_tags_held() <= async_depth);
                if gap % 2 == 0 {
                    if let Some(r) = in_flight.pop_front() {
                        s.complete(&r, t);
                    }
                }
            }
        }
    }
}
