//! Scheduler tags and depth limits, each test pinned to the Linux 6.9 function it names
//! (`bfq_limit_depth`, `bfqq_request_over_limit`, `bfq_update_depths`,
//! `bfqq_request_allocated` / `bfqq_request_freed`).

use std::collections::BTreeSet;

use super::tests::{cfg_with, served_sectors};
use super::*;
use crate::harness::{rq, Harness};
use crate::request::{IoClass, Op};

fn sync_q(s: &Bfq, ctx: u32) -> usize {
    s.bics[&CtxId(ctx)].sync_q.unwrap()
}

fn allocated(s: &Bfq, q: usize) -> u32 {
    s.wf.entities[s.queues[q].eid].allocated
}

/// 1 MiB sync (O_DIRECT) write `i` of ctx 2, sequential from sector 0.
fn write(i: u64) -> Request {
    rq(1000 + i, 2)
        .sync_write()
        .sector(i * 2048)
        .sectors(2048)
        .build()
}

/// A writer (ctx 2, its queue no longer raised) with one write queued, then, 1 s later (no
/// stable merge: `bfq_do_or_sched_stable_merge` looks back 600 ms), a reader (ctx 1) raised
/// as interactive by its first read: weights 40 and 1,200.
fn writer_beside_raised_reader() -> Bfq {
    let mut s = Bfq::new(cfg_with(&[("rotational", 0)]));
    s.insert(write(0), Nanos::ZERO);
    let w = sync_q(&s, 2);
    s.end_wr(w, 0);
    s.apply_weight(w);
    s.insert(rq(1, 1).sector(1 << 30).build(), Nanos::from_ms(1000));
    let r = sync_q(&s, 1);
    assert_eq!(s.wr_busy_queues, 1);
    assert_eq!(s.wf.entities[s.queues[r].eid].weight, 1200);
    assert_eq!(s.wf.entities[s.queues[w].eid].weight, 40);
    s
}

/// `bfq_update_depths` for 256 tags: 64-bit words (`full_depth_shift` 6); async 50% of a
/// word, sync writes 75%, and 18.75% and 37.5% while a raised queue is busy.
#[test]
fn bfq_update_depths_sets_the_word_depths_for_256_tags() {
    let d = WordDepths::new(256);
    assert_eq!(d.shift, 6);
    assert_eq!(d.bits, [[32, 48], [12, 24]]);
    // 16 tags: 4-bit words (sbitmap keeps at least four words), every depth at least 1.
    let d = WordDepths::new(16);
    assert_eq!((d.shift, d.bits), (2, [[2, 3], [1, 1]]));
}

/// `bfq_limit_depth` and `bfqq_request_over_limit`: beside a raised reader (weights 1,200
/// and 40) the writer's share of the sync-write depth (24 bits of each of 4 words: 96 tags)
/// is round(96 * 40 / 1,240) = 3, as in the kernel's trace (`allocated 29 limit 3 level 0`).
/// Its first three writes take tags at the raised sync-write depth; from then on it is over
/// its limit and gets depth 1 (one bit in each of 4 words: 4 tags). A fifth depth-1 write
/// waits for a tag outside bfq (counted as queued, not in the writer's queue) until one of
/// them completes.
#[test]
fn bfqq_request_over_limit_cuts_a_writer_beside_a_raised_reader_to_depth_1() {
    let mut s = writer_beside_raised_reader();
    let w = sync_q(&s, 2);
    assert_eq!(s.limit_depth(&write(1)), Depth::Shallow(96));
    s.insert(write(1), Nanos::from_ms(1002));
    s.insert(write(2), Nanos::from_ms(1002));
    assert_eq!(allocated(&s, w), 3);
    assert!(s.request_over_limit(w, 96));
    assert!(!s.request_over_limit(w, 109), "round(109 * 40 / 1240) = 4");
    assert_eq!(s.limit_depth(&write(3)), Depth::Shallow(4));
    for i in 3..8 {
        s.insert(write(i), Nanos::from_ms(1003));
    }
    assert_eq!(
        allocated(&s, w),
        7,
        "1 at depth 48/word, 2 at 24/word, 4 at 1/word"
    );
    assert_eq!(s.queues[w].queued[1], 7);
    assert_eq!(
        (s.tag_wait.len(), s.queued()),
        (1, 9),
        "1 read, 7 writes, 1 waiting"
    );
    assert_eq!(s.tags.held_shallow(4), 4);
    // The reader's reads take any tag meanwhile.
    s.insert(rq(2, 1).sector(2 << 30).build(), Nanos::from_ms(1003));
    assert_eq!(s.tag_wait.len(), 1);
    // A write at depth 24/word completing frees no tag the waiting one may take; a depth-1
    // one does (bfq_finish_requeue_request -> bfqq_request_freed).
    let mut done = Vec::new();
    let mut t = Nanos::from_ms(1004);
    while !done.iter().any(|r: &Request| r.id.0 == 1003) {
        match s.dispatch(t) {
            // Reads complete at once; writes stay in flight.
            Dispatch::Request(r) if r.op.is_read() => s.complete(&r, t),
            Dispatch::Request(r) => done.push(r),
            Dispatch::Idle { until } => t = until,
            Dispatch::Empty => panic!("write 3 is queued"),
        }
    }
    let first = done.iter().find(|r| r.id.0 == 1001).unwrap().clone();
    s.complete(&first, t);
    assert_eq!((allocated(&s, w), s.tag_wait.len()), (6, 1));
    let shallow = done.iter().find(|r| r.id.0 == 1003).unwrap().clone();
    s.complete(&shallow, t);
    assert_eq!((allocated(&s, w), s.tag_wait.len()), (6, 0));
}

/// `bfq_limit_depth` and `bfq_update_depths` from Linux 6.17 on (`whole_map_depths`, the
/// kernel of the kernel-diff recordings): with 8 tags a sync write may hold 6 of them
/// (`async_depths[0][1]` = 8 * 3 / 4; the 6.18 bfq log of `reader-beside-direct-writers`
/// prints `wr_busy 0 sync 1 depth 6`), where by word it held one bit of each 2-bit word, 4;
/// a queue over its share of that limit gets one tag in all, not one bit of each word.
#[test]
fn from_linux_6_17_a_sync_write_may_hold_six_of_eight_tags_and_an_over_limit_queue_one() {
    let by_word = Bfq::new(cfg_with(&[("nr_requests", 8)]));
    let whole = Bfq::new(cfg_with(&[("nr_requests", 8), ("whole_map_depths", 1)]));
    let sync_write = rq(1, 1).sync_write().build();
    assert_eq!(by_word.limit_depth(&sync_write), Depth::Shallow(4));
    assert_eq!(whole.limit_depth(&sync_write), Depth::Shallow(6));
    let async_write = rq(2, 1).write().build();
    assert_eq!(by_word.limit_depth(&async_write), Depth::Shallow(4));
    assert_eq!(whole.limit_depth(&async_write), Depth::Shallow(4));
    assert_eq!(whole.limit_depth(&rq(3, 1).build()), Depth::Full);
    // One process's sync writes (not weight-raised: raising would give async_depths[1][1],
    // 8 * 6 / 16 = 3): the fifth and sixth take tags only by count; the seventh
    // is over its queue's share (6 of 6 allocated) and gets depth 1, so the eighth, also at
    // depth 1, waits for a tag with 7 held (ours counts a shallow depth: the deviation in
    // crate::tags).
    let mut s = Bfq::new(cfg_with(&[
        ("nr_requests", 8),
        ("whole_map_depths", 1),
        ("low_latency", 0),
    ]));
    for i in 0..8u64 {
        s.insert(
            rq(10 + i, 1)
                .sector(i * 16)
                .sectors(16)
                .sync_write()
                .build(),
            Nanos::ZERO,
        );
    }
    assert_eq!((s.tags.held(), s.tag_wait.len()), (7, 1));
    assert_eq!(
        s.limit_depth(&rq(20, 1).sync_write().build()),
        Depth::Shallow(1)
    );
}

/// `bfq_limit_depth`: sync reads have the full depth, raised queues busy or not (no word
/// depth); only `bfqq_request_over_limit` on all `nr_requests` applies to them, which a
/// queue alone reaches only with every one of the 256 tags.
#[test]
fn bfq_limit_depth_gives_sync_reads_the_full_depth() {
    let mut s = writer_beside_raised_reader();
    let r = sync_q(&s, 1);
    // The raised reader: share round(256 * 1200 / 1240) = 248.
    for i in 0..200u64 {
        s.insert(rq(10 + i, 1).sector(i * 64).build(), Nanos::from_ms(1002));
    }
    assert_eq!(s.limit_depth(&rq(999, 1).build()), Depth::Full);
    assert_eq!((allocated(&s, r), s.tag_wait.len()), (201, 0));
    // A reader alone, unraised: its share is every tag.
    let mut s = Bfq::new(cfg_with(&[("low_latency", 0)]));
    for i in 0..255u64 {
        s.insert(rq(i, 1).sector(i * 64).build(), Nanos::ZERO);
    }
    assert_eq!(s.limit_depth(&rq(999, 1).build()), Depth::Full);
    s.insert(rq(255, 1).sector(255 * 64).build(), Nanos::ZERO);
    assert_eq!(s.limit_depth(&rq(999, 1).build()), Depth::Shallow(4));
    // Async writes, by contrast, get half of each word with no raised queue busy.
    assert_eq!(
        s.limit_depth(&rq(998, 3).write().build()),
        Depth::Shallow(128)
    );
}

/// `bfq_limit_depth` after raising ends (`wr_busy_queues` 0): the sync-write depth is 48
/// bits a word (192 tags) and the writer's share round(192 * 40 / 80) = 96, so the writer
/// held to 7 requests is no longer over its limit.
#[test]
fn bfq_limit_depth_widens_the_writer_share_when_raising_ends() {
    let mut s = writer_beside_raised_reader();
    for i in 1..8 {
        s.insert(write(i), Nanos::from_ms(1002));
    }
    let (r, w) = (sync_q(&s, 1), sync_q(&s, 2));
    assert_eq!(s.limit_depth(&write(8)), Depth::Shallow(4));
    s.end_wr(r, 1003 * MS);
    // As bfq_update_wr_data does for the in-service queue whose raising ends.
    s.apply_weight(r);
    assert_eq!(s.wr_busy_queues, 0);
    assert_eq!(s.limit_depth(&write(8)), Depth::Shallow(192));
    assert!(!s.request_over_limit(w, 192));
    assert!(s.request_over_limit(w, 14), "round(14 * 40 / 80) = 7");
}

/// `bfqq_request_over_limit` walks the queue's parent groups from the top: under /a (weight
/// 100) beside /b (300), /a's share of the 192 sync-write tags (no raising) is 48; two
/// writers in /a share those 48 between them (each queue's share 24), and the group's own
/// count (`bfqq_request_allocated` counts each level) stops the second writer at level 1
/// even below its queue's share.
#[test]
fn bfqq_request_over_limit_applies_the_limit_at_each_group_level() {
    let mut groups = GroupTree::new();
    let a = groups.add("/a", Some(100)).unwrap();
    let b = groups.add("/b", Some(300)).unwrap();
    let mut s = Bfq::with_groups(cfg_with(&[("low_latency", 0)]), &groups).unwrap();
    let w = |id: u64, ctx: u32, g: GroupId| {
        rq(id, ctx)
            .sync_write()
            .sector((u64::from(ctx) << 30) + id * 8)
            .group(g.0)
            .build()
    };
    s.insert(w(1, 3, b), Nanos::ZERO);
    for i in 0..30 {
        s.insert(w(100 + i, 1, a), Nanos::ZERO);
    }
    for i in 0..17 {
        s.insert(w(200 + i, 2, a), Nanos::ZERO);
    }
    let (q1, q2) = (sync_q(&s, 1), sync_q(&s, 2));
    let group_a = s.wf.sds[s.wf.entities[s.queues[q1].eid].sd].owner.unwrap();
    assert_eq!(s.wf.entities[group_a].allocated, 47);
    assert_eq!(s.limit_depth(&w(300, 2, a)), Depth::Shallow(192));
    s.insert(w(217, 2, a), Nanos::ZERO);
    assert_eq!(s.wf.entities[group_a].allocated, 48);
    // ctx 2 holds 18 of its 24 at queue level, but /a holds its 48.
    assert!(s.request_over_limit(q2, 192));
    assert_eq!(s.limit_depth(&w(300, 2, a)), Depth::Shallow(4));
    // /b's writer is far below /b's 144.
    let q3 = sync_q(&s, 3);
    assert!(!s.request_over_limit(q3, 192));
    assert!(s.request_over_limit(q1, 192), "ctx 1 too, through /a");
}

/// The W1 shape (bench/jobs/w1.fio) end to end on a flash device with 32 slots: a dependent
/// 4 KiB random reader, created first and raised as interactive, and 300 ms later (past the
/// 180 ms within which a flash drive's queues are merged at once) a 1 MiB sequential O_DIRECT
/// writer keeping 32 writes in flight. While the reader is raised, the writer holds at most
/// its share of the tags (3) plus the four depth-1 tags, and the rest of its 32 writes wait
/// outside bfq (the kernel's trace on this VM: `allocated 29 limit 3`, then depth 1); once
/// raising ends (after 120,000 sectors of raised service) its share is 96 and all 32 are in.
/// Without `bfq_limit_depth` all 32 sit in its queue throughout.
#[test]
fn bfq_limit_depth_holds_a_writer_to_its_share_beside_a_raised_reader() {
    let mut l = Loop::new(Bfq::new(cfg_with(&[("rotational", 0)])), 32);
    l.run_until(Nanos::from_ms(300));
    for _ in 0..WRITER_DEPTH {
        l.issue(2);
    }
    let (mut raised, mut after) = (0, 0);
    for k in 5..=30 {
        l.run_until(Nanos::from_ms(k * 100));
        let (r, w) = (sync_q(&l.s, 1), sync_q(&l.s, 2));
        assert_ne!(r, w, "no stable merge");
        let held = allocated(&l.s, w);
        assert_eq!(held as usize + l.s.tag_wait.len(), WRITER_DEPTH as usize);
        if l.s.queues[r].wr_coeff > 1 {
            raised += 1;
            assert!(held <= 7, "at {k}00 ms the writer holds {held} tags");
        } else {
            after += 1;
            assert_eq!(held, 32, "at {k}00 ms");
        }
    }
    assert!(
        raised >= 5 && after >= 5,
        "{raised} samples raised, {after} after"
    );
}

/// A closed loop on a device with `slots` slots: ctx 1 reads 4 KiB at random (one at a time,
/// 100 us each, the next 20 us after the last completes), ctx 2 writes 1 MiB sequentially with `WRITER_DEPTH` in flight (1 ms each),
/// each job issuing its next request when one completes.
struct Loop {
    s: Bfq,
    now: Nanos,
    slots: usize,
    in_flight: BTreeSet<(Nanos, u64)>,
    /// The reader's next read, issued after its think time.
    read_at: Option<Nanos>,
    rqs: IdMap<u64, Request>,
    idle_until: Option<Nanos>,
    next_id: u64,
    next_write: u64,
    /// (ctx, completion time) of every completed request.
    done: Vec<(u32, Nanos)>,
}

const WRITER_DEPTH: u64 = 32;
/// The reader's time between a read's completion and its next read (a system call).
const READER_THINK: Nanos = Nanos::from_us(20);

impl Loop {
    fn new(s: Bfq, slots: usize) -> Loop {
        let mut l = Loop {
            s,
            now: Nanos::ZERO,
            slots,
            in_flight: BTreeSet::new(),
            read_at: None,
            rqs: IdMap::default(),
            idle_until: None,
            next_id: 0,
            next_write: 0,
            done: Vec::new(),
        };
        l.issue(1);
        l
    }

    fn issue(&mut self, ctx: u32) {
        self.next_id += 1;
        let id = self.next_id;
        let r = if ctx == 1 {
            // A multiplicative hash spreads the reads over 4 GiB beyond the writer's area.
            let block = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44;
            rq(id, 1).sector((8 << 21) + block * 8).at(self.now).build()
        } else {
            self.next_write += 1;
            rq(id, 2)
                .sync_write()
                .sector(self.next_write * 2048)
                .sectors(2048)
                .at(self.now)
                .build()
        };
        self.s.insert(r, self.now);
        self.idle_until = None;
    }

    fn run_until(&mut self, end: Nanos) {
        while self.now < end {
            while self.in_flight.len() < self.slots && self.idle_until.is_none_or(|u| u <= self.now)
            {
                match self.s.dispatch(self.now) {
                    Dispatch::Request(r) => {
                        let cost = if r.op.is_read() { 100 } else { 1000 };
                        self.in_flight
                            .insert((self.now + Nanos::from_us(cost), r.id.0));
                        self.rqs.insert(r.id.0, r);
                    }
                    Dispatch::Idle { until } => self.idle_until = Some(until),
                    Dispatch::Empty => {
                        self.idle_until = None;
                        break;
                    }
                }
            }
            let done = self.in_flight.first().map(|f| f.0);
            let Some(t) = [done, self.idle_until, self.read_at]
                .into_iter()
                .flatten()
                .min()
            else {
                return;
            };
            self.now = t;
            if self.read_at == Some(t) {
                self.read_at = None;
                self.issue(1);
            } else if done == Some(t) {
                let (_, id) = self.in_flight.pop_first().expect("in flight");
                let r = self.rqs.remove(&id).expect("dispatched");
                self.s.complete(&r, t);
                self.done.push((r.ctx.0, t));
                self.idle_until = None;
                if r.ctx.0 == 1 {
                    self.read_at = Some(t + READER_THINK);
                } else {
                    self.issue(2);
                }
            } else {
                self.idle_until = None;
            }
        }
    }
}

/// `nr_requests` is a tunable like the others; writing it resizes the tags and, as
/// `bfq_depth_updated` does, recomputes the word depths (64 tags: 16-bit words).
#[test]
fn bfq_depth_updated_follows_a_write_of_nr_requests() {
    let mut s = Bfq::new(Config::default());
    assert_eq!(s.tags.depth(), 256);
    s.set_tunable("nr_requests", 64).unwrap();
    assert_eq!((s.cfg.nr_requests, s.tags.depth()), (64, 64));
    assert_eq!(s.word_depths, WordDepths::new(64));
    assert_eq!(
        (s.word_depths.shift, s.word_depths.bits),
        (4, [[8, 12], [3, 6]])
    );
    // An async write with no raised queue: 8 bits in each of 4 words.
    assert_eq!(s.limit_depth(&rq(1, 1).write().build()), Depth::Shallow(32));
    assert!(s.set_tunable("nr_requests", 3).is_err());
}

/// blk-mq asks the scheduler's `limit_depth` only for requests that are neither flushes nor
/// passthrough (`__blk_mq_alloc_requests`): a flush takes any tag, even from a process whose
/// queue is over its share beside a raised reader.
#[test]
fn bfq_limit_depth_is_not_asked_for_a_flush() {
    let mut s = writer_beside_raised_reader();
    for i in 1..8 {
        s.insert(write(i), Nanos::from_ms(1002));
    }
    let w = sync_q(&s, 2);
    assert!(s.request_over_limit(w, 96));
    assert_eq!(s.limit_depth(&write(8)), Depth::Shallow(4));
    let flush = rq(2000, 2).op(Op::Flush).build();
    assert_eq!(s.limit_depth(&flush), Depth::Full);
}

/// `bfqq_request_over_limit`: at the queue's own level the weight sum counts every higher
/// class's tree, each multiplied by `IOPRIO_BE_NR` (8) over the next: a best-effort writer
/// (weight 40) beside a real-time reader of level 0 (weight 80, not raised: raising is for
/// the default weight, 40) has a share of round(192 * 40 / (80 * 8 + 40)) = 11 of the
/// sync-write depth, not the 192 its own class's tree alone would give.
#[test]
fn bfqq_request_over_limit_weighs_higher_classes_at_the_queue_level() {
    let mut s = Bfq::new(cfg_with(&[("rotational", 0)]));
    s.insert(write(0), Nanos::ZERO);
    let w = sync_q(&s, 2);
    s.end_wr(w, 0);
    s.apply_weight(w);
    s.insert(
        rq(1, 1).sector(1 << 30).prio(IoClass::RealTime, 0).build(),
        Nanos::from_ms(1000),
    );
    let r = sync_q(&s, 1);
    assert_eq!(
        (s.queues[r].wr_coeff, s.queues[w].wr_coeff, s.wr_busy_queues),
        (1, 1, 0)
    );
    for i in 1..10 {
        s.insert(write(i), Nanos::from_ms(1001));
    }
    assert_eq!(allocated(&s, w), 10);
    assert!(!s.request_over_limit(w, 192));
    s.insert(write(10), Nanos::from_ms(1001));
    assert_eq!(allocated(&s, w), 11);
    assert!(s.request_over_limit(w, 192), "11 of round(7680 / 680) = 11");
    assert_eq!(s.limit_depth(&write(11)), Depth::Shallow(4));
}

/// `bfqq_request_over_limit`: above the queue's own level each entity's share is taken over
/// its own class's tree only: group /a (weight 100, the only best-effort entity at the root)
/// keeps the whole 192 beside a real-time reader at the root, so its writer (alone in /a) is
/// under its limit with 50 requests allocated; weighing the root's real-time tree in at the
/// group's level too would give /a round(192 * 100 / (80 * 8 + 100)) = 26.
#[test]
fn bfqq_request_over_limit_weighs_only_the_own_class_above_the_queue() {
    let mut groups = GroupTree::new();
    let a = groups.add("/a", Some(100)).unwrap();
    let mut s =
        Bfq::with_groups(cfg_with(&[("rotational", 0), ("low_latency", 0)]), &groups).unwrap();
    s.insert(
        rq(1, 1).sector(1 << 30).prio(IoClass::RealTime, 0).build(),
        Nanos::ZERO,
    );
    for i in 0..50 {
        s.insert(
            rq(100 + i, 2).sync_write().sector(i * 8).group(a.0).build(),
            Nanos::ZERO,
        );
    }
    let w = sync_q(&s, 2);
    assert_eq!(allocated(&s, w), 50);
    assert!(!s.request_over_limit(w, 192));
}

/// `bfqq_request_over_limit` as the 6.18 bfq log of `twelve-procs-mixed-prio` shows it
/// (`bfq26730S too many requests: allocated 0 limit 0 level 0`, then `depth 1`): a
/// best-effort-7 reader's queue (weight 10) left on its idle tree (`on_st_or_in_serv`: its
/// finish is still ahead of the tree's virtual time) with nothing allocated is over a limit
/// of round(8 * 10 / (80 * 8 + 90)) = 0 once a real-time reader (weight 80) is busy: the
/// real-time tree weighs `IOPRIO_BE_NR` times over the best-effort one at the queue's level.
/// Its next read gets one tag (`async_depths` over the whole map, 6.17 on); the test walks
/// no further once the queue is off the trees (forgotten: no limit).
#[test]
fn bfqq_request_over_limit_cuts_an_idle_queue_with_nothing_allocated_beside_real_time() {
    let mut s = Bfq::new(cfg_with(&[
        ("nr_requests", 8),
        ("whole_map_depths", 1),
        ("low_latency", 0),
        ("slice_idle", 0),
    ]));
    let read = |id: u64, ctx: u32, level: u8, class: IoClass| {
        rq(id, ctx)
            .sector((u64::from(ctx) << 24) | (id * 8))
            .prio(class, level)
            .build()
    };
    // Best effort 0 (weight 80) and 7 (weight 10), one read each, served in turn.
    s.insert(read(1, 1, 0, IoClass::BestEffort), Nanos::ZERO);
    s.insert(read(2, 2, 7, IoClass::BestEffort), Nanos::ZERO);
    for ms in 1..=2 {
        let r = match s.dispatch(Nanos::from_ms(ms)) {
            Dispatch::Request(r) => r,
            d => panic!("{d:?}"),
        };
        s.complete(&r, Nanos::from_ms(ms));
    }
    let b = sync_q(&s, 2);
    let e = &s.wf.entities[s.queues[b].eid];
    assert_eq!((e.tree, e.on_st, e.allocated), (wf2q::Tree::Idle, true, 0));
    // Alone with its best-effort sibling its share is round(8 * 10 / 90) = 1: full depth.
    assert_eq!(
        s.limit_depth(&read(3, 2, 7, IoClass::BestEffort)),
        Depth::Full
    );
    s.insert(read(4, 3, 0, IoClass::RealTime), Nanos::from_ms(3));
    assert!(s.request_over_limit(b, 8), "0 allocated, limit 0");
    assert_eq!(
        s.limit_depth(&read(5, 2, 7, IoClass::BestEffort)),
        Depth::Shallow(1)
    );
}

/// blk-mq's two steps (`__blk_mq_alloc_requests`, then `bfq_insert_requests` after the
/// submitter's plug is flushed): four reads allocated into a plug hold all of the 4 tags
/// before bfq sees them, so another process's read, allocated and inserted at once, sleeps
/// for a tag; bfq has nothing to dispatch until the plug's reads are inserted, and the other
/// read gets the tag the first completion frees. Allocated at their insertion, the plug's
/// reads would have left the other read a tag.
#[test]
fn a_tag_is_held_from_the_allocation_until_the_insertion() {
    use crate::block::{Bio, BlockLayer, Limits};
    let s = Bfq::new(cfg_with(&[("rotational", 0), ("nr_requests", 4)]));
    let mut blk: BlockLayer<Bfq, u32> = BlockLayer::new(s, Limits::depth(8));
    let t = Nanos::from_us;
    let read = |ctx: u32, sector: u64| {
        let mut b = Bio::new(CtxId(ctx), Op::Read, sector, 8);
        b.own_request = true;
        b
    };
    let plugged: Vec<RequestId> = (0..4)
        .map(|i| blk.handle_allocate(read(1, i * 1000), i as u32, t(i)))
        .map(|id| id.expect("allocated ahead"))
        .collect();
    assert_eq!(blk.scheduler().tags.held(), 4);
    blk.handle_submit(read(2, 1 << 30), 9, t(5));
    assert_eq!(
        blk.poll_dispatch(t(5)),
        None,
        "nothing inserted holds a tag"
    );
    assert_eq!(blk.scheduler().tag_wait.len(), 5);
    for &id in &plugged {
        blk.handle_insert(id, t(10));
    }
    let first = blk.poll_dispatch(t(10)).expect("a plugged read");
    assert_eq!(first.ctx, CtxId(1));
    let mut done = Vec::new();
    blk.handle_complete(first.id, true, t(50), &mut done);
    // The freed tag goes to the sleeping read: bfq now holds it with the other plugged ones.
    assert_eq!(blk.scheduler().tag_wait.len(), 0);
    assert_eq!(blk.scheduler().queued, 4);
}

/// `bfq_limit_depth` runs at the allocation (`__blk_mq_alloc_requests`), from the state of
/// then: four sync writes allocated while no raised queue is busy get Linux 6.17's
/// whole-map depth of 6 of 8 tags each, and all hold tags when a reader's raised queue turns
/// busy before their insertion. Allocated at the insertion, after the reader, they get 3 of
/// 8 (`async_depths[1][1]`), and one sleeps.
#[test]
fn bfq_limit_depth_decides_at_the_allocation_not_at_the_insertion() {
    let cfg = || {
        cfg_with(&[
            ("rotational", 0),
            ("nr_requests", 8),
            ("whole_map_depths", 1),
        ])
    };
    let reader = || rq(1, 1).sector(1 << 30).build();
    let mut s = Bfq::new(cfg());
    for i in 0..4 {
        assert!(Scheduler::allocate(&mut s, write(i), Nanos::ZERO).is_none());
    }
    assert_eq!((s.tags.held(), s.tags.held_shallow(6)), (4, 4));
    s.insert(reader(), Nanos::from_ms(1000));
    assert!(s.wr_busy_queues > 0);
    for i in 0..4 {
        Scheduler::insert_allocated(&mut s, RequestId(1000 + i), Nanos::from_ms(1001));
    }
    assert_eq!((s.queued, s.tag_wait.len()), (5, 0));

    let mut late = Bfq::new(cfg());
    late.insert(reader(), Nanos::from_ms(1000));
    for i in 0..4 {
        late.insert(write(i), Nanos::from_ms(1001));
    }
    assert!(late.tag_wait.len() > 0, "a write sleeps at depth 3");
}

/// The bit each held request of `s` took, by request id.
fn bits_held(s: &Bfq) -> Vec<(u64, Option<u32>)> {
    let mut held: Vec<_> = s.rq_queue.iter().map(|(&id, e)| (id, e.2)).collect();
    held.sort_unstable();
    held
}

/// lib/sbitmap's allocation hints are per CPU (`sb->alloc_hint`), and a freed tag becomes
/// the hint of the CPU its request was allocated on (`blk_mq_put_tag` passes
/// `rq->mq_ctx->cpu` to `sbitmap_queue_clear`, `sbitmap_update_cpu_hint`): one process's
/// four async writes on CPU 0 take bits 0-3 (their depth, 4 of 8 tags, is bits 0-3 of the
/// one word the 256 tags the map was allocated with keep), free them in bit order, and
/// another process's async write on CPU 0 then folds the freed bits back
/// (`sbitmap_deferred_clear`) and takes bit 3, CPU 0's hint, where a process on CPU 1 takes
/// bit 0. Hints kept per process, the second process would start from its own hint, 0.
#[test]
fn sbitmap_hints_are_the_allocating_cpus_and_a_freed_tag_sets_its_cpus_hint() {
    let mut s = Bfq::new(cfg_with(&[
        ("rotational", 0),
        ("nr_requests", 8),
        ("tag_map_depth", 256),
        ("tag_bits", 1),
    ]));
    let write = |id: u64, ctx: u32, cpu: u32| {
        rq(id, ctx)
            .write()
            .sector(id * 2048)
            .sectors(8)
            .cpu(cpu)
            .build()
    };
    for id in 1..=4 {
        s.insert(write(id, 2, 0), Nanos::ZERO);
    }
    let bits: Vec<_> = (1..=4).map(|id| (id, Some(id as u32 - 1))).collect();
    assert_eq!(bits_held(&s), bits);
    let mut out = Vec::new();
    while let Dispatch::Request(r) = s.dispatch(Nanos::from_us(1)) {
        out.push(r);
    }
    out.sort_by_key(|r| r.id.0);
    assert_eq!(out.len(), 4);
    for r in &out {
        s.complete(r, Nanos::from_us(10));
    }
    s.insert(write(5, 3, 0), Nanos::from_us(20));
    assert_eq!(bits_held(&s), vec![(5, Some(3))], "CPU 0's hint: bit 3");
    s.insert(write(6, 4, 1), Nanos::from_us(20));
    assert_eq!(bits_held(&s), vec![(5, Some(3)), (6, Some(0))]);
}

/// `sbitmap_queue_resize` (what lowering `nr_requests` calls) keeps the word size the map was
/// allocated with: 256 tags lowered to 8 are one word of 8 bits, where a sync write's depth
/// of 6 (`bfq_update_depths`' three quarters) is bits 0-5. A map allocated for the 8 tags
/// would have four 2-bit words, where depth 6 is bits 0-4 and 6 (`__map_depth_with_shallow`).
#[test]
fn sbitmap_queue_resize_keeps_the_words_of_the_depth_the_map_was_allocated_with() {
    let bits = |map_depth: i64| -> Vec<Option<u32>> {
        let mut s = Bfq::new(cfg_with(&[
            ("rotational", 0),
            ("nr_requests", 8),
            ("tag_map_depth", map_depth),
            ("tag_bits", 1),
        ]));
        for id in 1..=6 {
            let w = rq(id, 2).sync_write().sector(id * 2048).sectors(8).build();
            Scheduler::allocate(&mut s, w, Nanos::ZERO);
        }
        assert!(!s.tags.may_take(Depth::Shallow(6)));
        let mut b: Vec<_> = s.tag_wait.held.values().map(|e| e.2).collect();
        b.sort_unstable();
        b
    };
    assert_eq!(bits(256), (0..6).map(Some).collect::<Vec<_>>(), "one word");
    assert_eq!(
        bits(0),
        [0, 1, 2, 3, 4, 6].map(Some).to_vec(),
        "2-bit words"
    );
}

/// `__blk_mq_alloc_requests` runs `bfq_limit_depth` before `blk_mq_get_tag` sleeps and keeps
/// that depth for every retry (`data->shallow_depth`): a sync write whose task starts
/// allocating while no raised queue is busy keeps Linux 6.17's whole-map depth of 6 of 8
/// tags after a reader's raised queue turns busy (3 of 8 then), and takes no tag until its
/// task has one (`block_getrq` in the kernel's trace), though tags are free.
#[test]
fn bfq_limit_depth_runs_before_the_task_sleeps_for_its_tag() {
    let mut s = Bfq::new(cfg_with(&[
        ("rotational", 0),
        ("nr_requests", 8),
        ("whole_map_depths", 1),
    ]));
    assert!(Scheduler::allocate_sleeping(&mut s, write(0), Nanos::ZERO).is_none());
    assert_eq!((s.tags.held(), s.tag_wait.len()), (0, 1), "asleep: no tag");
    s.insert(rq(1, 1).sector(1 << 30).build(), Nanos::from_ms(1000));
    assert!(s.wr_busy_queues > 0);
    Scheduler::tag_got(&mut s, RequestId(1000), Nanos::from_ms(1001));
    assert_eq!(
        s.tags.held_shallow(6),
        1,
        "the depth of the allocation's start"
    );
    Scheduler::insert_allocated(&mut s, RequestId(1000), Nanos::from_ms(1002));
    assert_eq!((s.queued, s.tag_wait.len()), (2, 0));
}

/// blk-mq's tag sleepers (`blk_mq_get_tag`, `sbitmap_queue_clear`, `__sbitmap_queue_wake_up`
/// in Linux 6.18, `tag_sleepers`): 8 tags held by a raised reader's 7 reads and one async
/// write at depth 1 (`async_depths[1][0]` = 3 * 8 / 16); another async write (depth 1) and
/// a read (full depth) find no tag and sleep on wait queues 0 and 1 (`bt_wait_ptr`). A read
/// completes: its freed tag wakes only the write (wait queue 0 first, a wake batch of 1),
/// which still finds no tag within depth 1 and sleeps again (on queue 2), and the read, which
/// could take the free tag, sleeps on. The next completion wakes the read (queue 1, after the
/// `wake_index` moved past queue 0): it takes a tag. Without sleepers the first freed tag
/// goes to the oldest waiting request its depth allows, the read.
#[test]
fn a_freed_tag_wakes_one_sleeper_which_retries_at_its_own_depth() {
    let woken = |sleepers: i64| -> Vec<(bool, u32)> {
        let mut s = Bfq::new(cfg_with(&[
            ("rotational", 0),
            ("nr_requests", 8),
            ("whole_map_depths", 1),
            ("tag_sleepers", sleepers),
        ]));
        let t0 = Nanos::from_ms(1000);
        for id in 1..=7 {
            s.insert(rq(id, 1).sector(id << 20).sectors(8).build(), t0);
        }
        assert!(s.wr_busy_queues > 0, "the reader is raised");
        let async_write = |id: u64, ctx: u32| rq(id, ctx).write().sector(id << 24).build();
        assert_eq!(s.limit_depth(&async_write(20, 2)), Depth::Shallow(1));
        s.insert(async_write(20, 2), t0);
        assert_eq!((s.tags.held(), s.tags.held_shallow(1)), (8, 1));
        s.insert(async_write(30, 3), t0);
        s.insert(rq(40, 4).sector(1 << 33).sectors(8).build(), t0);
        assert!(s.waits_for_tag(30) && s.waits_for_tag(40));
        let mut reads = Vec::new();
        let mut t = t0;
        while reads.len() < 2 {
            match s.dispatch(t) {
                Dispatch::Request(r) if r.ctx == CtxId(1) => reads.push(r),
                Dispatch::Request(_) => {}
                Dispatch::Idle { until } => t = until,
                Dispatch::Empty => panic!("the reader has reads queued"),
            }
        }
        reads
            .iter()
            .map(|r| {
                s.complete(r, t);
                (s.waits_for_tag(40), s.tags.held())
            })
            .collect()
    };
    assert_eq!(woken(1), vec![(true, 7), (false, 7)]);
    assert_eq!(woken(0), vec![(false, 8), (false, 7)]);
}

/// 6.18's depths under a backlog deeper than the tags (`whole_map_depths`, `tag_sleepers`):
/// `/a` (weight 100) and `/b` (300), one process each with 20,000 reads wanting tags, 256
/// tags, a device one deep. A process whose group holds its share of the tags
/// (`bfqq_request_over_limit`: 64 for `/a`, 192 for `/b` while both are active) gets depth 1
/// (`bfq_limit_depth`) and keeps it while it sleeps (`blk_mq_get_tag` keeps
/// `data->shallow_depth`), so both sleep while the tags drain; the one that gets the single
/// tag depth 1 may take refills at full depth, up to all 256 while the other group, drained,
/// is off the trees. `/b` is not starved: its share of the sectors dispatched lies in the
/// range Linux 6.18 gave it in six rounds of one 128 KiB random reader 1024 deep per group on
/// a loop device, three with 128 driver tags and three with 4 (0.639-0.759; branch kfid43, 1
/// December 2026, docs/bfq.md); ours 0.686. Its
/// queue's `service_from_backlogged`, which the group test read before, restarts at each
/// refill (`bfq_bfqq_handle_idle_busy_switch`) and gave 0.38.
#[test]
fn from_linux_6_17_a_group_over_its_share_under_a_deep_backlog_gets_the_kernels_share() {
    let mut groups = GroupTree::new();
    let a = groups.add("/a", Some(100)).unwrap();
    let b = groups.add("/b", Some(300)).unwrap();
    let mut settings = Settings::new();
    settings.set("whole_map_depths", 1).set("tag_sleepers", 1);
    let mut h = Harness::new(Bfq::from_settings(&settings, &groups).unwrap(), 1, |r| {
        Nanos::from_us(u64::from(r.sectors) * 4)
    });
    for i in 0..20_000u64 {
        h.submit(rq(i, 1).sector(i * 512).sectors(256).group(a.0));
        h.submit(
            rq(100_000 + i, 2)
                .sector((1 << 32) + i * 512)
                .sectors(256)
                .group(b.0),
        );
    }
    h.run_until(Nanos::from_ms(20_000));
    let (out_a, out_b) = (served_sectors(&h, 1), served_sectors(&h, 2));
    let share = out_b as f64 / (out_a + out_b) as f64;
    assert!((0.639..=0.759).contains(&share), "share of /b {share}");
}

/// Linux 6.18's `blk_time_get_ns` (block/blk.h): a task's plug caches the time at its first
/// call and keeps it until the plug is flushed or the task sleeps (`blk_plug_invalidate_ts`);
/// `bfq_update_io_thinktime` and `bfq_check_waker` read it at the insertion, so a completion
/// of the queue's last request between the plug's first allocation and its flush makes their
/// `u64` elapsed time wrap (a think-time sample of `2 * slice_idle`). Two reads whose tasks
/// had their tags 2 us after their depths were decided (`bfq_limit_depth`; the replay's
/// `allocate_sleeping` / `tag_got`) did not sleep: the plug keeps the first one's time, not
/// the second's (kfid51: ours took the last allocation's, 15 us later, after a completion,
/// and kept a short think time where the kernel's was long, `bfqcg4-...-cpu0-nr32`). A task
/// that waited longer than a sleep's worth slept: its plug reads the time anew.
#[test]
fn blk_time_get_ns_keeps_the_plugs_first_time_across_allocations_without_a_sleep() {
    let mut s = Bfq::new(cfg_with(&[
        ("rotational", 0),
        ("nr_requests", 8),
        ("whole_map_depths", 1),
        ("tag_sleepers", 1),
    ]));
    let t = |us: u64| Nanos::from_us(100_000 + us);
    let read = |i: u64| rq(i, 1).sector(i << 20).build();
    assert!(Scheduler::allocate_sleeping(&mut s, read(1), t(0)).is_none());
    Scheduler::tag_got(&mut s, RequestId(1), t(2));
    assert!(Scheduler::allocate_sleeping(&mut s, read(2), t(5)).is_none());
    Scheduler::tag_got(&mut s, RequestId(2), t(7));
    assert_eq!(
        s.plug_clock(CtxId(1), t(10).0 as Tick),
        t(2).0 as Tick,
        "no sleep"
    );
    Scheduler::insert_allocated(&mut s, RequestId(1), t(10));
    Scheduler::insert_allocated(&mut s, RequestId(2), t(11));
    // The plug was flushed; the next task's tag comes 100 us after its depth: it slept.
    assert!(Scheduler::allocate_sleeping(&mut s, read(3), t(20)).is_none());
    Scheduler::tag_got(&mut s, RequestId(3), t(120));
    assert!(Scheduler::allocate_sleeping(&mut s, read(4), t(125)).is_none());
    Scheduler::tag_got(&mut s, RequestId(4), t(300));
    assert_eq!(
        s.plug_clock(CtxId(1), t(310).0 as Tick),
        t(300).0 as Tick,
        "slept"
    );
}
