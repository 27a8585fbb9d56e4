//! CFQ's decisions in hand-built situations, its invariants, and its weight shares.

use super::group::{SERVICE_SHIFT, SLICE_MODE_GROUP_DELAY};
use super::*;
use crate::closed_loop::{self, Proc};
use crate::harness::{rq, Harness, Outcome, RequestBuilder};
use crate::request::{IoClass, Op};
use proptest::prelude::*;

fn ms(n: u64) -> Nanos {
    Nanos::from_ms(n)
}

fn flat() -> Cfq {
    Cfq::new(Config::flat(), &GroupTree::new()).unwrap()
}

fn settings(pairs: &[(&str, i64)]) -> Settings {
    let mut s = Settings::new();
    for (k, v) in pairs {
        s.set(*k, *v);
    }
    s
}

fn with(pairs: &[(&str, i64)], groups: &GroupTree) -> Cfq {
    Cfq::from_settings(&settings(pairs), groups).unwrap()
}

/// cfq-flat (every request in the root group) with these settings.
fn flat_with(pairs: &[(&str, i64)]) -> Cfq {
    Cfq::flat_from_settings(&settings(pairs), &GroupTree::new()).unwrap()
}

impl Cfq {
    fn queue_of(&self, ctx: u32) -> Option<QId> {
        self.cics.get(&CtxId(ctx)).and_then(|c| c.queues[1])
    }
    fn idle_window_of(&self, ctx: u32) -> bool {
        self.queues[self.queue_of(ctx).expect("ctx has a sync queue")].idle_window
    }
}

/// Process `ctx`'s `n` sequential 4 KiB reads in a region of its own (from sector
/// `ctx x 90,000,000`), ids `ctx x 1000 + i`, in order.
fn sequential_reads(ctx: u32, n: u64) -> impl Iterator<Item = RequestBuilder> {
    (0..n).map(move |i| {
        rq(u64::from(ctx) * 1000 + i, ctx)
            .sector(u64::from(ctx) * 90_000_000 + i * 8)
            .read()
    })
}

/// Two groups `/a` and `/b` (ids 1 and 2) with the given weights.
fn two_groups(wa: Option<u32>, wb: Option<u32>) -> GroupTree {
    let mut t = GroupTree::new();
    t.add("/a", wa).unwrap();
    t.add("/b", wb).unwrap();
    t
}

// ----- idle window -------------------------------------------------------------------------

#[test]
fn idles_for_the_next_request_of_a_sequential_reader() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(1_000_000).read());
    // The reader's next request comes 1 ms after its first completes.
    h.submit(rq(3, 1).sector(8).read().at(ms(2)));
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 3, 2]);
    assert_eq!(
        out.idles.first(),
        Some(&(ms(1), ms(9))),
        "slice_idle = 8 ms after completion"
    );
}

#[test]
fn idle_window_closes_when_think_time_exceeds_slice_idle() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    // Each request is issued 20 ms after the previous one completed.
    for i in 0..5u64 {
        h.submit(rq(i, 1).sector(i * 8).read().at(ms(i * 21)));
    }
    h.run_until(ms(100));
    assert!(!h.sched.idle_window_of(1));
}

#[test]
fn idle_window_stays_open_for_a_fast_sequential_reader() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..5u64 {
        h.submit(rq(i, 1).sector(i * 8).read().at(ms(i * 2)));
    }
    h.run_until(ms(100));
    assert!(h.sched.idle_window_of(1));
}

#[test]
fn idle_window_closes_for_a_seeky_reader() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..6u64 {
        h.submit(
            rq(i, 1)
                .sector((i % 2) * 50_000_000 + i * 10_000)
                .read()
                .at(ms(i * 2)),
        );
    }
    h.run_until(ms(100));
    assert!(!h.sched.idle_window_of(1));
}

#[test]
fn no_idling_when_slice_idle_is_zero() {
    let mut s = flat();
    s.set_tunable("slice_idle", 0).unwrap();
    let mut h = Harness::new(s, 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(1_000_000).read());
    h.submit(rq(3, 1).sector(8).read().at(ms(2)));
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 2, 3]);
    assert!(out.idles.is_empty());
}

/// Three processes each writing its own region sequentially, 64 KiB at a time, the next write
/// issued as soon as the previous completes (`dd oflag=direct` when `idle_hint`, an fsync-ing
/// writer without it). Returns the issuing process of each dispatch over two seconds.
fn three_sync_writers(idle_hint: bool) -> Vec<u32> {
    let mut s = flat();
    let procs = (1..=3u32)
        .map(|ctx| {
            let mut p = Proc::seq_reader(ctx, 0, u64::from(ctx) * 10_000_000, 128);
            p.op = Op::Write;
            p.idle_hint = idle_hint;
            p
        })
        .collect();
    let run = closed_loop::run(&mut s, procs, 1, |_, _| ms(1), Nanos::from_secs(2));
    run.served.iter().map(|d| d.ctx.0).collect()
}

/// Lengths of the runs of equal values in `seq`.
fn run_lengths(seq: &[u32]) -> Vec<usize> {
    seq.chunk_by(|a, b| a == b).map(<[u32]>::len).collect()
}

/// `req_noidle` (4.19 cfq-iosched.c) is true only for a write with REQ_SYNC and without
/// REQ_IDLE; `cfq_update_idle_window` closes the idle window on it. O_DIRECT writes carry both
/// flags (`dio_bio_write_op`), so O_DIRECT writers keep their window and get time slices
/// (100 ms each here: three queues within `target_latency`).
#[test]
fn req_noidle_o_direct_writers_keep_their_idle_window_and_get_slices() {
    let order = three_sync_writers(true);
    let runs = run_lengths(&order);
    let inner = &runs[1..runs.len() - 1];
    assert!(
        inner.len() >= 10 && inner.iter().all(|&n| (90..=110).contains(&n)),
        "O_DIRECT writers should be served in slices of ~100 requests: {runs:?}"
    );
    for ctx in 1..=3 {
        let n = order.iter().filter(|&&c| c == ctx).count();
        assert!((600..=720).contains(&n), "writer {ctx}: {n} of 2000");
    }
}

/// Writers whose writes carry REQ_SYNC alone are `req_noidle`: their queues go to the
/// sync-noidle tree. When the serving queue empties, the next writer's request preempts it
/// (`cfq_should_preempt`: both on the sync-noidle tree, the active queue empty) and
/// `cfq_preempt_queue` puts the newcomer at the front of the tree, while the expired queue is
/// re-added at the back when its next request comes. Two writers leapfrog each other
/// (1, 3, 1, 3 ...) and the third starves: 4.19 does this too.
#[test]
fn cfq_preempt_queue_lets_two_noidle_writers_leapfrog_and_starve_a_third() {
    let order = three_sync_writers(false);
    // The first queue to go busy sits on the sync tree (its window closes only after it was
    // added there) and keeps the disk until it first empties.
    let runs = run_lengths(&order);
    assert!(runs[0] + runs[1] <= 110, "{:?}", &runs[..4]);
    let rest = &order[runs[0] + runs[1]..];
    assert!(rest.len() > 1800);
    let bad = rest.chunks_exact(2).position(|w| w != [rest[0], rest[1]]);
    assert!(
        bad.is_none() && rest[0] != rest[1],
        "two writers alternate: {:?} ... {:?}",
        &rest[..20],
        bad.map(|i| &rest[2 * i..(2 * i + 20).min(rest.len())])
    );
}

#[test]
fn idle_timer_expiry_hands_the_disk_to_the_next_queue() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(1_000_000).read());
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 2]);
    assert_eq!(
        out.of(2).dispatched,
        ms(9),
        "served when the 8 ms idle runs out"
    );
}

// ----- preemption --------------------------------------------------------------------------

#[test]
fn rt_request_preempts_a_best_effort_slice() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..10u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    h.submit(
        rq(100, 2)
            .sector(5_000_000)
            .read()
            .prio(IoClass::RealTime, 4)
            .at(Nanos::from_us(2500)),
    );
    let out = h.run();
    assert_eq!(out.of(100).dispatched, ms(3), "served at the next dispatch");
}

#[test]
fn best_effort_request_does_not_preempt_an_rt_slice() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..10u64 {
        h.submit(rq(i, 1).sector(i * 8).read().prio(IoClass::RealTime, 4));
    }
    h.submit(rq(100, 2).sector(5_000_000).read().at(Nanos::from_us(2500)));
    let out = h.run();
    assert_eq!(*out.dispatch_order().last().unwrap(), 100);
}

#[test]
fn sync_request_preempts_an_async_slice() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..10u64 {
        h.submit(rq(i, 1).sector(i * 8).write());
    }
    h.submit(rq(100, 2).sector(5_000_000).read().at(Nanos::from_us(2500)));
    let out = h.run();
    assert!(
        out.of(100).dispatched <= ms(3),
        "read waited for writes: {:?}",
        out.of(100)
    );
}

#[test]
fn close_request_from_another_process_is_served_during_the_idle_wait() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(100).read().at(ms(3)));
    let out = h.run();
    assert_eq!(out.of(2).dispatched, ms(3));
}

#[test]
fn far_request_from_another_process_waits_out_the_idle_window() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(10_000_000).read().at(ms(3)));
    let out = h.run();
    assert_eq!(out.of(2).dispatched, ms(9));
}

// ----- cooperating queues ------------------------------------------------------------------

/// Two processes reading one file in interleaved 8-sector chunks: ctx 1 the even chunks,
/// ctx 2 the odd ones.
fn interleaved(ctx: u32, first: u64) -> Proc {
    let mut p = Proc::seq_reader(ctx, 0, 0, 8);
    p.pattern = Box::new(move |n| (first + 2 * n) * 8);
    p
}

#[test]
fn cooperating_processes_are_merged_into_one_queue() {
    let mut s = flat();
    let procs = vec![interleaved(1, 0), interleaved(2, 1)];
    closed_loop::run(&mut s, procs, 1, |_, _| ms(1), ms(500));
    let (q1, q2) = (s.queue_of(1).unwrap(), s.queue_of(2).unwrap());
    assert_eq!(q1, q2, "the two processes share a queue");
    assert!(s.queues[q1].coop);
    assert_eq!(s.stats().queue_merges, 1);
}

#[test]
fn merged_queue_that_turns_seeky_is_split() {
    let s = merged_then_split();
    assert!(s.stats().queue_merges >= 1, "{:?}", s.stats());
    assert!(s.stats().queue_splits >= 1, "{:?}", s.stats());
    assert_ne!(s.queue_of(1), s.queue_of(2), "the shared queue was split");
}

#[test]
fn processes_far_apart_are_not_merged() {
    let mut s = flat();
    let procs = vec![
        Proc::seq_reader(1, 0, 0, 8),
        Proc::seq_reader(2, 0, 50_000_000, 8),
    ];
    closed_loop::run(&mut s, procs, 1, |_, _| ms(1), ms(500));
    assert_ne!(s.queue_of(1), s.queue_of(2));
}

// ----- groups ------------------------------------------------------------------------------

#[test]
fn group_idle_keeps_the_disk_for_a_group_with_one_queue() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[("slice_idle", 0)], &groups), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read().group(1));
    h.submit(rq(2, 2).sector(9_000_000).read().group(2));
    h.submit(rq(3, 1).sector(8).read().group(1).at(ms(3)));
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 3, 2]);
    assert_eq!(
        out.idles.first(),
        Some(&(ms(1), ms(9))),
        "group_idle = 8 ms"
    );
}

/// A request naming a group the tree does not hold (the first id past the last) is served in
/// the root group, as the kernel charges I/O of a cgroup without a blkg to the root.
#[test]
fn a_request_of_an_unknown_group_goes_to_the_root_group() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read().group(3));
    h.submit(rq(2, 1).sector(8).read().group(3).at(ms(2)));
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 2]);
}

#[test]
fn without_group_idle_the_other_group_gets_the_disk() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(
        with(&[("slice_idle", 0), ("group_idle", 0)], &groups),
        1,
        |_| ms(1),
    );
    h.submit(rq(1, 1).sector(0).read().group(1));
    h.submit(rq(2, 2).sector(9_000_000).read().group(2));
    h.submit(rq(3, 1).sector(8).read().group(1).at(ms(3)));
    let out = h.run();
    assert_eq!(out.dispatch_order(), vec![1, 2, 3]);
}

#[test]
fn flat_cfq_ignores_groups() {
    let groups = two_groups(Some(100), Some(1000));
    let mut s = Cfq::flat_from_settings(&Settings::new(), &groups).unwrap();
    s.insert(rq(1, 1).group(1).build(), Nanos::ZERO);
    s.insert(rq(2, 2).sector(1000).group(2).build(), Nanos::ZERO);
    assert_eq!(s.queues[0].group, 0);
    assert_eq!(s.queues[1].group, 0);
}

#[test]
fn group_weight_outside_blkio_range_is_refused() {
    let groups = two_groups(Some(5), None);
    let err = Cfq::from_settings(&Settings::new(), &groups).unwrap_err();
    assert!(err.to_string().contains("/a"), "{err}");
}

#[test]
fn vfraction_compounds_weights_up_the_hierarchy() {
    let mut t = GroupTree::new();
    let a = t.add("/a", Some(500)).unwrap();
    let ab = t.add("/a/b", Some(300)).unwrap();
    let c = t.add("/c", Some(500)).unwrap();
    let mut s = with(&[], &t);
    s.insert(rq(1, 1).group(ab.0).build(), Nanos::ZERO);
    s.insert(rq(2, 2).sector(1000).group(c.0).build(), Nanos::ZERO);
    // /a/b is /a's only active child: all of /a's half; /c the other half.
    let vfr_ab = s.groups[ab.0 as usize].vfraction;
    assert_eq!(s.groups[a.0 as usize].nr_active, 1);
    assert_eq!(
        vfr_ab, 4096,
        "first active group owns everything when it is added"
    );
    s.insert(rq(3, 3).sector(5000).group(a.0).build(), Nanos::ZERO);
    // /a's own queues: leaf_weight 500 against /a/b's 300, inside /a's half.
    let vfr_a = s.groups[a.0 as usize].vfraction;
    assert_eq!(vfr_a, 4096 * 500 / 1000 * 500 / 800);
}

// ----- slices and FIFO ---------------------------------------------------------------------

/// How many requests a queue of priority `level` dispatches in its first turn against a
/// competing queue, both with plenty queued (low_latency off).
fn first_turn(level: u8) -> usize {
    let mut s = flat();
    s.set_tunable("low_latency", 0).unwrap();
    let mut h = Harness::new(s, 1, |_| ms(1));
    for i in 0..400u64 {
        h.submit(
            rq(i, 1)
                .sector(i * 8)
                .read()
                .prio(IoClass::BestEffort, level),
        );
        h.submit(rq(1000 + i, 2).sector(90_000_000 + i * 8).read());
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    order.iter().take_while(|&&c| c == order[0]).count()
}

#[test]
fn sync_slice_scales_with_priority() {
    // Slice = 100 ms + 20 ms per level above 4; it starts at the first completion (1 ms).
    assert_eq!(first_turn(0), 181);
    assert_eq!(first_turn(4), 101);
    assert_eq!(first_turn(7), 41);
}

/// 4.19 `cfq_scaled_cfqq_slice` with `cfq_group_get_avg_queues`: under low_latency the
/// averaged count of busy sync queues (4 here) reaches 3 for the first slice (4 x 3/4 rounded)
/// and 4 for the next; 4 x 100 ms exceeds target_latency (300 ms), so from the second turn on
/// a slice shrinks to 100 x 300 / 400 = 75 ms.
#[test]
fn low_latency_shrinks_slices_by_the_averaged_busy_queue_count() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..300u64 {
        for ctx in 1..=4u32 {
            let base = u64::from(ctx) * 90_000_000;
            h.submit(
                rq(u64::from(ctx) * 1000 + i, ctx)
                    .sector(base + i * 8)
                    .read(),
            );
        }
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let mut turns: Vec<usize> = Vec::new();
    for (i, c) in order.iter().enumerate() {
        if i == 0 || order[i - 1] != *c {
            turns.push(0);
        }
        *turns.last_mut().unwrap() += 1;
    }
    // The slice starts at the first completion (1 ms), as in sync_slice_scales_with_priority.
    assert_eq!(&turns[..3], &[101, 76, 76]);
}

/// 4.19 `cfq_may_dispatch`: only an async queue waits for sync requests in flight; the only
/// busy sync queue may put every request it has at the device at once (past `quantum / 2`,
/// `promote_sync`).
#[test]
fn may_dispatch_lets_the_only_sync_queue_fill_the_device() {
    let mut h = Harness::new(flat(), 8, |_| ms(1));
    for i in 0..8u64 {
        h.submit(rq(i, 1).sector(i * 1_000).read());
    }
    let out = h.run();
    let at_once = out
        .served
        .iter()
        .filter(|s| s.dispatched == Nanos::ZERO)
        .count();
    assert_eq!(at_once, 8);
}

#[test]
fn fifo_expired_request_is_served_out_of_sector_order() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    // The far request is the oldest queued one; sector order would serve it last.
    h.submit(rq(1, 1).sector(8).read());
    h.submit(rq(0, 1).sector(100_000_000).read().at(Nanos::from_ns(1)));
    for i in 2..400u64 {
        h.submit(rq(i, 1).sector(i * 8).read().at(Nanos::from_ns(2)));
    }
    let out = h.run();
    let far = out.of(0).dispatched;
    assert!(far >= ms(125), "served before it expired: {far}");
    assert!(far < ms(399), "never served ahead of sector order: {far}");
}

#[test]
fn async_queue_expires_after_its_request_budget() {
    // Writeback at levels 4 and 0 goes to two shared async queues; each turn ends after
    // 2 * slice_async_rq * (8 - level) requests while the other has work.
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..100u64 {
        h.submit(rq(i, 1).sector(i * 8).write());
        h.submit(
            rq(1000 + i, 2)
                .sector(90_000_000 + i * 8)
                .write()
                .prio(IoClass::BestEffort, 0),
        );
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let mut runs: Vec<(u32, usize)> = Vec::new();
    for c in order {
        match runs.last_mut() {
            Some((last, n)) if *last == c => *n += 1,
            _ => runs.push((c, 1)),
        }
    }
    // The last run is the survivor alone, without a budget.
    runs.pop();
    let longest = |ctx| {
        runs.iter()
            .filter(|r| r.0 == ctx)
            .map(|r| r.1)
            .max()
            .unwrap()
    };
    assert_eq!(longest(1), 16, "level 4: 2 * 2 * (8 - 4)");
    assert_eq!(longest(2), 32, "level 0: 2 * 2 * (8 - 0)");
}

// ----- invariants --------------------------------------------------------------------------

fn arb_request() -> impl Strategy<Value = (u64, u32, u64, u8, u8, u64, u32)> {
    (
        0u64..2_000,     // arrival, 100 us units
        1u32..6,         // ctx
        0u64..1_000_000, // sector
        0u8..4,          // kind: read, write, sync write, meta read
        0u8..3,          // class
        0u64..3,         // group
        1u32..256,       // sectors
    )
}

fn build(reqs: &[(u64, u32, u64, u8, u8, u64, u32)]) -> Vec<Request> {
    reqs.iter()
        .enumerate()
        .map(|(i, &(at, ctx, sector, kind, class, group, sectors))| {
            let class = [IoClass::RealTime, IoClass::BestEffort, IoClass::Idle][class as usize];
            let b = rq(i as u64, ctx)
                .sector(sector)
                .sectors(sectors)
                .group(group as u32)
                .prio(class, (ctx % 8) as u8)
                .at(Nanos::from_us(at * 100));
            match kind {
                0 => b.read(),
                1 => b.write(),
                2 => b.sync_write(),
                _ => b.read().meta(),
            }
            .build()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_request_is_dispatched_and_completed_exactly_once(
        reqs in proptest::collection::vec(arb_request(), 1..120),
        depth in 1usize..4,
        groups_on in any::<bool>(),
        exits in proptest::collection::vec((1u32..6, 0u64..2_000), 0..3),
    ) {
        let groups = two_groups(Some(100), Some(700));
        let mut s = if groups_on { with(&[], &groups) } else { Cfq::flat_from_settings(&Settings::new(), &groups).unwrap() };
        let _ = &mut s;
        let mut h = Harness::new(s, depth, |r: &Request| Nanos::from_us(200 + u64::from(r.sectors) * 10));
        for r in build(&reqs) {
            h.submit(r);
        }
        let mut exits = exits;
        exits.sort_by_key(|e| e.1);
        for (ctx, at) in exits {
            h.run_until(Nanos::from_us(at * 100));
            h.exit(ctx);
        }
        h.run();
    }

    #[test]
    fn no_group_with_pending_io_waits_longer_than_a_round(
        per_group in proptest::collection::vec((1usize..4, 0u64..4), 2..4),
        weights in proptest::collection::vec(100u32..1000, 3),
    ) {
        let mut t = GroupTree::new();
        for (g, w) in weights.iter().enumerate() {
            t.add(&format!("/g{g}"), Some(*w)).unwrap();
        }
        let mut s = with(&[], &t);
        let mut procs = Vec::new();
        let mut ctx = 0;
        for (g, &(n, think)) in per_group.iter().enumerate() {
            for _ in 0..n {
                ctx += 1;
                let mut p = Proc::seq_reader(ctx, g as u32 + 1, u64::from(ctx) * 10_000_000, 16);
                p.think = ms(think);
                procs.push(p);
            }
        }
        let cost = |r: &Request, head: u64| {
            if r.sector.abs_diff(head) > 2048 { ms(8) } else { ms(1) }
        };
        let run = closed_loop::run(&mut s, procs, 1, cost, Nanos::from_secs(5));
        // A group's longest gap between dispatches while it is backlogged (its processes
        // never think longer than 3 ms, so it always is): at most one round, every group's
        // longest slice (180 ms at priority 0, far more than the 100 ms here) plus idling and
        // a request's service, plus its own. Sequential readers with think times here; seeky
        // sync-noidle queues break it in 4.19 (see the test on their one-jiffy charge).
        let groups = per_group.len();
        let bound = ms((groups as u64 + 1) * (180 + 2 * 8 + 8 + 8));
        for g in 1..=groups as u32 {
            let times: Vec<Nanos> = run.served.iter().filter(|s| s.group.0 == g).map(|s| s.at).collect();
            prop_assert!(!times.is_empty(), "group {} never served", g);
            let mut last = Nanos::ZERO;
            for t in times {
                prop_assert!(t - last <= bound, "group {} waited {} (bound {})", g, t - last, bound);
                last = t;
            }
        }
    }
}

// ----- weights -----------------------------------------------------------------------------

#[test]
fn weights_100_200_400_give_shares_of_one_two_and_four_sevenths() {
    let mut t = GroupTree::new();
    for (g, w) in [100u32, 200, 400].iter().enumerate() {
        t.add(&format!("/w{g}"), Some(*w)).unwrap();
    }
    let mut s = with(&[], &t);
    let mut procs = Vec::new();
    let mut groups_of = Vec::new();
    for g in 1..=3u32 {
        for r in 0..4u32 {
            let ctx = g * 10 + r;
            procs.push(Proc::seq_reader(ctx, g, u64::from(ctx) * 20_000_000, 256));
            groups_of.push(g);
        }
    }
    let run = closed_loop::run(&mut s, procs, 1, |_, _| ms(1), Nanos::from_secs(60));
    let total: u64 = run.bytes.iter().sum();
    for (g, want) in [(1u32, 1.0 / 7.0), (2, 2.0 / 7.0), (3, 4.0 / 7.0)] {
        let share = run.group_bytes(&groups_of, g) as f64 / total as f64;
        assert!(
            (share - want).abs() <= 0.05,
            "group {g}: share {share:.3}, want {want:.3}"
        );
    }
}

#[test]
fn preempted_seeky_queues_are_charged_one_jiffy_each() {
    // 4.19's weakness, kept on purpose: two seeky readers of one group preempt each other on
    // the sync-noidle tree right after each dispatch, and each preempted queue is charged
    // max(time since it became active, 1 jiffy). Eight-millisecond seeks are billed as one,
    // so their group gets several times its weight (see docs/cfq.md).
    let mut t = GroupTree::new();
    t.add("/seq", None).unwrap();
    t.add("/seeky", None).unwrap();
    let mut s = with(&[], &t);
    let mut procs = vec![Proc::seq_reader(1, 1, 10_000_000, 16)];
    for ctx in [2u32, 3] {
        let mut p = Proc::seq_reader(ctx, 2, 0, 16);
        let c = u64::from(ctx);
        p.pattern = Box::new(move |i| (i * 7_919 + c * 104_729) % 5_000 * 20_000);
        procs.push(p);
    }
    let cost = |r: &Request, head: u64| {
        if r.sector.abs_diff(head) > 2048 {
            ms(8)
        } else {
            ms(1)
        }
    };
    let run = closed_loop::run(&mut s, procs, 1, cost, Nanos::from_secs(5));
    let time_of = |g: u32| {
        run.served.iter().filter(|s| s.group.0 == g).count() as u64 * if g == 1 { 1 } else { 8 }
    };
    assert!(
        time_of(2) > 4 * time_of(1),
        "seeky group {} ms, sequential {} ms",
        time_of(2),
        time_of(1)
    );
    assert!(s.stats().preemptions > 100);
}

// ----- the 2009 IO-controller comparison, in miniature ---------------------------------------

/// Share of group /b's bytes, and /b's worst latency, with 16 sequential readers in /a and `n`
/// in /b (equal weights) under `policy`, on a device that streams at 60 MB/s and pays 12 ms
/// for any non-contiguous request.
fn b_share(policy: &str, n: u32) -> (f64, Nanos) {
    let mut t = GroupTree::new();
    t.add("/a", None).unwrap();
    t.add("/b", None).unwrap();
    let none = Settings::new();
    let mut s: Box<dyn Scheduler> = match policy {
        "cfq" => Box::new(Cfq::from_settings(&none, &t).unwrap()),
        "cfq-flat" => Box::new(Cfq::flat_from_settings(&none, &t).unwrap()),
        "ioband+cfq-flat" => {
            let inner = Box::new(Cfq::flat_from_settings(&none, &t).unwrap());
            Box::new(crate::ioband::IoBand::from_settings(&none, &t, inner).unwrap())
        }
        other => panic!("no policy {other}"),
    };
    let mut procs = Vec::new();
    let mut groups_of = Vec::new();
    for (g, count) in [(1u32, 16u32), (2, n)] {
        for r in 0..count {
            let ctx = g * 100 + r;
            procs.push(Proc::seq_reader(ctx, g, u64::from(ctx) * 4_000_000, 128));
            groups_of.push(g);
        }
    }
    let cost = |r: &Request, head: u64| {
        let xfer = Nanos::from_us(u64::from(r.sectors) * 512 / 60);
        if r.sector == head {
            xfer
        } else {
            xfer + ms(12)
        }
    };
    let run = closed_loop::run(s.as_mut(), procs, 1, cost, Nanos::from_secs(30));
    let (a, b) = (
        run.group_bytes(&groups_of, 1),
        run.group_bytes(&groups_of, 2),
    );
    let lat_b = run
        .max_latency
        .iter()
        .zip(&groups_of)
        .filter(|(_, g)| **g == 2)
        .map(|(l, _)| *l)
        .max()
        .unwrap();
    (b as f64 / (a + b) as f64, lat_b)
}

#[test]
fn io_controller_shape_on_a_seek_cost_device() {
    let (flat1, flat1_lat) = b_share("cfq-flat", 1);
    let (flat16, _) = b_share("cfq-flat", 16);
    assert!(flat1 <= 0.15, "vanilla n=1: {flat1:.2}");
    assert!(flat16 >= 0.40, "vanilla n=16: {flat16:.2}");
    let (grp1, grp1_lat) = b_share("cfq", 1);
    let (grp16, _) = b_share("cfq", 16);
    for share in [grp1, grp16] {
        assert!((0.45..=0.55).contains(&share), "groups: {share:.2}");
    }
    assert!(
        grp1_lat < flat1_lat,
        "groups {grp1_lat} vs vanilla {flat1_lat}"
    );
    let (band1, _) = b_share("ioband+cfq-flat", 1);
    assert!(flat1 < band1 && band1 < grp1, "ioband n=1: {band1:.2}");
}

/// Every prio-tree entry points at a queue that knows it is there, under that key.
fn prio_trees_consistent(s: &Cfq) -> bool {
    s.prio_trees.iter().enumerate().all(|(level, tree)| {
        tree.iter()
            .all(|(&pos, &q)| s.queues[q].prio_tree_pos == Some((level, pos)))
    })
}

#[test]
fn a_queue_whose_priority_changed_leaves_the_prio_tree_it_was_keyed_in() {
    // The kernel removes a queue from the prio tree it was inserted in (cfqq->p_root), not
    // from the tree of its current level. A process that turns idle-class moves its queue to
    // level 7; the entry in level 5's tree must go, or a later close-cooperator lookup finds
    // the queue empty, makes it active and stalls (a proptest found this).
    let mut s = with(&[], &GroupTree::new());
    let t0 = Nanos::ZERO;
    s.insert(
        rq(1, 1)
            .sector(1000)
            .prio(IoClass::BestEffort, 5)
            .read()
            .build(),
        t0,
    );
    assert!(prio_trees_consistent(&s));
    s.insert(
        rq(2, 1).sector(9000).prio(IoClass::Idle, 0).read().build(),
        t0,
    );
    assert!(
        prio_trees_consistent(&s),
        "stale entry left in the old level's tree"
    );
    let mut now = t0;
    for _ in 0..2 {
        let rq = loop {
            match s.dispatch(now) {
                Dispatch::Request(rq) => break rq,
                Dispatch::Idle { until } => now = until,
                Dispatch::Empty => panic!("cfq holds {} requests and dispatches none", s.queued()),
            }
        };
        now += Nanos::from_ms(1);
        s.complete(&rq, now);
        assert!(prio_trees_consistent(&s));
    }
    assert_eq!(s.queued(), 0);
    assert!(s.prio_trees.iter().all(|t| t.is_empty()));
}

// ----- service tree placement and workload slices --------------------------------------------

/// Turns of the queues in `order` (the issuing context of each dispatch): (ctx, dispatches).
fn turns(order: &[u32]) -> Vec<(u32, usize)> {
    order
        .chunk_by(|a, b| a == b)
        .map(|run| (run[0], run.len()))
        .collect()
}

/// 4.19 `cfq_service_tree_add` keys a queue joining the tree at now + `cfq_slice_offset`,
/// `(nr_cfqq - 1) x (cfq_prio_slice(sync, 0) - cfq_prio_slice(sync, ioprio))`: the busy
/// queues of its group times how much shorter its slice is than a priority-0 slice. With three
/// priority-0 readers busy, a priority-4 reader joining at 1 ms is keyed 2 x 80 ms later, at
/// 161 ms; a priority-0 reader joining at 121 ms is keyed at 121 ms and served first (with
/// `nr_cfqq - 1 + 80 ms` the priority-4 reader would be keyed at 81 ms).
#[test]
fn cfq_slice_offset_scales_a_short_slice_by_the_busy_queue_count() {
    let mut s = flat();
    s.set_tunable("low_latency", 0).unwrap();
    let mut h = Harness::new(s, 1, |_| ms(1));
    for ctx in 1..=3u32 {
        for r in sequential_reads(ctx, 400) {
            h.submit(r.prio(IoClass::BestEffort, 0));
        }
    }
    let (late_prio4, later_prio0) = (4u32, 5u32);
    for i in 0..50u64 {
        h.submit(
            rq(4000 + i, late_prio4)
                .sector(400_000_000 + i * 8)
                .read()
                .prio(IoClass::BestEffort, 4)
                .at(ms(1)),
        );
        h.submit(
            rq(5000 + i, later_prio0)
                .sector(500_000_000 + i * 8)
                .read()
                .prio(IoClass::BestEffort, 0)
                .at(ms(121)),
        );
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let first = |ctx| order.iter().position(|&c| c == ctx).unwrap();
    assert!(
        first(later_prio0) < first(late_prio4),
        "turns: {:?}",
        turns(&order)
    );
}

/// 4.19 `choose_wl_class_and_type` divides the group's slice among the serving class's
/// workloads by `max(busy_queues_avg[class], busy queues of the class)`, the average of the
/// serving class (`cfq_group_get_avg_queues` keeps one per class, updated as slices are
/// scaled). Four best-effort readers and a writer raise the best-effort average; once three
/// readers are done, the average (not the two busy queues) still sets the sync workload's
/// slice, so the writer gets the disk after each of the last reader's slices. The real-time
/// average, never raised, would give the sync workload 300 / 2 ms, two reader slices in a row.
#[test]
fn choose_wl_class_and_type_divides_by_the_serving_classs_average() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for ctx in 1..=4u32 {
        let n = if ctx == 1 { 1000 } else { 100 };
        for i in 0..n {
            h.submit(
                rq(u64::from(ctx) * 10_000 + i, ctx)
                    .sector(u64::from(ctx) * 90_000_000 + i * 8)
                    .read(),
            );
        }
    }
    for i in 0..400u64 {
        h.submit(rq(50_000 + i, 5).sector(500_000_000 + i * 8).write());
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let t = turns(&order);
    // Once readers 2 to 4 are done, the best-effort busy count is 2 (reader 1 and the writer),
    // its average stays at 4 ((3 x 4 + 2 + 2) / 4), so the sync workload gets 300 / 4 = 75 ms:
    // one slice of reader 1 (scaled to 75 ms too), 76 dispatches as its slice starts at the
    // first completion. The last turn ends when reader 1 runs out.
    let last_of_others = t.iter().rposition(|&(c, _)| (2..=4).contains(&c)).unwrap();
    let after_writer: Vec<usize> = t[last_of_others..t.len() - 2]
        .windows(2)
        .filter(|w| w[0].0 == 5 && w[1].0 == 1)
        .map(|w| w[1].1)
        .collect();
    assert!(
        after_writer.len() >= 5 && after_writer.iter().all(|&n| n == 76),
        "reader 1's turns between the writer's: {after_writer:?} in {t:?}"
    );
    // The async workload gets min(75 ms, 300 ms x 1 async / 2 busy) x slice_async / slice_sync
    // = 30 ms: two of the writer's turns of 2 x slice_async_rq x (8 - 4) = 16 requests.
    let writer: Vec<usize> = t[last_of_others..t.len() - 2]
        .windows(2)
        .filter(|w| w[0].0 == 1 && w[1].0 == 5)
        .map(|w| w[1].1)
        .collect();
    assert!(
        writer.len() >= 5 && writer.iter().all(|&n| n == 32),
        "{writer:?}"
    );
}

/// A seeky reader queues six requests at once (deep, so its idle window stays open) beside a
/// sequential reader; the first four go at once, the first completes at 1 ms and starts its
/// 100 ms slice, and the last two go at `at`, emptying the queue with three in flight. Returns
/// what CFQ dispatches next at `at` and whether the seeky reader's idle window is still open.
fn seeky_reader_empties_at(at: Nanos) -> (Option<u64>, bool) {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    let seeky: Vec<Request> = (0..6u64)
        .map(|i| rq(i, 1).sector(i * 10_000_000).read().build())
        .collect();
    for r in &seeky {
        s.insert(r.clone(), t0);
    }
    for i in 0..4u64 {
        s.insert(
            rq(100 + i, 2).sector(900_000_000 + i * 8).read().build(),
            t0,
        );
    }
    let next = |s: &mut Cfq, now: Nanos| match s.dispatch(now) {
        Dispatch::Request(r) => Some(r.id.0),
        Dispatch::Idle { .. } | Dispatch::Empty => None,
    };
    // 4.19 `cfq_may_dispatch`: quantum / 2 while the slice is new and another queue is busy.
    let first: Vec<_> = (0..5).map(|_| next(&mut s, t0)).collect();
    assert_eq!(first, [Some(0), Some(1), Some(2), Some(3), None]);
    s.complete(&seeky[0], ms(1));
    let a = s.queue_of(1).unwrap();
    assert_eq!(
        (s.queues[a].slice_start, s.queues[a].slice_end),
        (Some(ms(1).as_ns()), ms(101).as_ns())
    );
    assert!(s.queues[a].seeky() && s.idle_window_of(1));
    assert_eq!([next(&mut s, at), next(&mut s, at)], [Some(4), Some(5)]);
    (next(&mut s, at), s.idle_window_of(1))
}

/// 4.19 `cfq_select_queue` stops idling for a deep seeky queue ("the device is much faster
/// than the queue can deliver") only while more of its slice remains than it has used,
/// `slice_end - now > now - slice_start`. Emptied at 50 ms (49 ms used, 51 left) the seeky
/// reader loses its idle window and the other reader gets the disk; emptied at 51 ms,
/// exactly halfway, it keeps the window and CFQ waits for its requests in flight.
#[test]
fn cfq_select_queue_keeps_a_deep_seeky_queues_window_from_mid_slice_on() {
    assert_eq!(seeky_reader_empties_at(ms(50)), (Some(100), false));
    assert_eq!(seeky_reader_empties_at(ms(51)), (None, true));
}

// ----- tunables ----------------------------------------------------------------------------

/// Each sysfs file written at run time sets what building with it sets, in the units of
/// [`Config`] (ms become ns).
#[test]
fn set_tunable_sets_what_building_with_the_setting_sets() {
    let values = [
        ("quantum", 5),
        ("fifo_expire_sync", 50),
        ("fifo_expire_async", 60),
        ("back_seek_max", 100),
        ("back_seek_penalty", 3),
        ("slice_sync", 70),
        ("slice_async", 30),
        ("slice_async_rq", 4),
        ("slice_idle", 2),
        ("group_idle", 3),
        ("low_latency", 0),
        ("target_latency", 200),
        ("rotational", 0),
    ];
    let mut live = with(&[], &GroupTree::new());
    for (k, v) in values {
        live.set_tunable(k, v).unwrap();
    }
    let want = Config {
        quantum: 5,
        fifo_expire_sync: 50 * MS,
        fifo_expire_async: 60 * MS,
        back_seek_max: 100,
        back_seek_penalty: 3,
        slice_sync: 70 * MS,
        slice_async: 30 * MS,
        slice_async_rq: 4,
        slice_idle: 2 * MS,
        group_idle: 3 * MS,
        low_latency: false,
        target_latency: 200 * MS,
        rotational: false,
        groups: true,
    };
    assert_eq!(live.config(), &want);
    assert_eq!(with(&values, &GroupTree::new()).config(), &want);
}

// ----- request order within a queue ----------------------------------------------------------

/// Dispatch order of one process's requests at `sectors`, all queued while its request at
/// `head` (8 sectors) is at the device.
fn queue_order(head: u64, sectors: &[u64]) -> Vec<u64> {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(0, 1).sector(head).read());
    for (i, &sector) in sectors.iter().enumerate() {
        h.submit(
            rq(i as u64 + 1, 1)
                .sector(sector)
                .read()
                .at(Nanos::from_us(500)),
        );
    }
    let out = h.run();
    out.served.iter().skip(1).map(|s| s.rq.sector).collect()
}

/// 4.19 `cfq_find_next_rq` / `cfq_choose_req`: a queue's requests are served upwards from the
/// head whatever order they arrived in.
#[test]
fn cfq_choose_req_serves_a_queue_upwards_from_the_head() {
    assert_eq!(
        queue_order(0, &[30_000, 10_000, 20_000]),
        [10_000, 20_000, 30_000]
    );
}

/// 4.19 `cfq_choose_req`: a request behind the head within `back_seek_max` (16 MiB) costs its
/// distance times `back_seek_penalty` (2): 500 sectors back (cost 1000) beats 1500 ahead.
#[test]
fn cfq_choose_req_takes_a_short_backward_seek_at_twice_its_distance() {
    assert_eq!(queue_order(9_992, &[11_500, 9_500])[0], 9_500);
}

/// 4.19 `cfq_choose_req`: at equal cost (1000 sectors back, 2000 ahead) the request at the
/// higher sector wins, whichever was queued first.
#[test]
fn cfq_choose_req_breaks_a_cost_tie_for_the_higher_sector() {
    assert_eq!(queue_order(9_992, &[9_000, 12_000])[0], 12_000);
    assert_eq!(queue_order(9_992, &[12_000, 9_000])[0], 12_000);
}

// ----- non-rotational devices ----------------------------------------------------------------

/// On a one-deep SSD under cfq-flat: a reader with `n` requests of 64 KiB queued at once
/// (and its next one 2 ms after they are done) beside another reader with one request.
/// Returns when that other request and the reader's late one were dispatched.
fn one_deep_ssd(n: u64) -> (Nanos, Nanos) {
    let s = flat_with(&[("rotational", 0)]);
    let mut h = Harness::new(s, 1, |_| ms(1));
    for i in 0..n {
        h.submit(rq(i, 1).sector(i * 128).sectors(128).read());
    }
    h.submit(rq(1000, 2).sector(900_000_000).sectors(128).read());
    h.submit(rq(n, 1).sector(n * 128).sectors(128).read().at(ms(n + 2)));
    let out = h.run();
    (out.of(1000).dispatched, out.of(n).dispatched)
}

/// 4.19 `cfq_update_hw_tag` learns whether the device queues (`hw_tag`) from 50 completions
/// made while more than `CFQ_HW_QUEUE_MIN` (5) requests were queued or in the driver; until
/// then `hw_tag` is -1, and on a non-rotational device `cfq_arm_slice_timer` does not idle.
/// After 60 requests one at a time it knows the SSD does not queue (0) and idles for the
/// reader's next request as on a disk; after 20 it does not know yet and serves the other
/// reader at once.
#[test]
fn cfq_update_hw_tag_learns_that_an_ssd_does_not_queue_and_idles_on_it() {
    let (other, late) = one_deep_ssd(60);
    assert_eq!(late, ms(62), "idled for the reader's next request");
    assert!(other > late);
    let (other, late) = one_deep_ssd(20);
    assert_eq!(other, ms(20), "no idling while hw_tag is unknown");
    assert!(late > other);
}

// ----- slices --------------------------------------------------------------------------------

/// 4.19 `cfq_preempt_queue` expires the preempted queue as timed out, so `__cfq_slice_expired`
/// keeps the rest of its slice (`slice_resid`) and `cfq_service_tree_add` keys it that much
/// earlier. A real-time request preempts a best-effort reader 20 ms into its slice; once it is
/// served the preempted reader resumes, ahead of a reader that was queued before it was
/// preempted (all at priority 0, so no slice offset).
#[test]
fn cfq_preempt_queue_keeps_the_preempted_queues_unused_slice() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for ctx in 1..=2u32 {
        for r in sequential_reads(ctx, 300) {
            h.submit(r.prio(IoClass::BestEffort, 0));
        }
    }
    h.submit(
        rq(9000, 3)
            .sector(500_000_000)
            .read()
            .prio(IoClass::RealTime, 4)
            .at(Nanos::from_us(20_500)),
    );
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let t = turns(&order);
    assert_eq!(t[..3], [(1, 21), (3, 1), (1, t[2].1)], "{t:?}");
}

/// 4.19 `cfq_scaled_cfqq_slice`: under low_latency a slice shrinks so the busy queues fit
/// target_latency, but not below `2 x slice_idle` (16 ms, scaled by the queue's share of a
/// base sync slice). Twenty-four sequential readers: 300 ms / 24 is 12.5 ms, so each turn is
/// the 16 ms floor, 17 dispatches counting the first completion.
#[test]
fn cfq_scaled_cfqq_slice_floors_a_slice_at_two_slice_idles() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for ctx in 1..=24u32 {
        sequential_reads(ctx, 100).for_each(|r| h.submit(r));
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let t = turns(&order);
    assert!(t[30..60].iter().all(|&(_, n)| n == 17), "{t:?}");
}

/// 4.19 `cfq_may_dispatch` under low_latency: an async queue may have one request in flight
/// per whole `slice_sync` (100 ms) since a sync request last completed later than
/// `fifo_expire_sync` after its submission (at least one). A read that took 130 ms completes
/// at 130 ms; writeback then goes one request at a time until 330 ms, two after that, on a
/// device that takes eight.
#[test]
fn cfq_may_dispatch_holds_writeback_to_one_request_after_a_delayed_read() {
    let mut h = Harness::new(
        flat(),
        8,
        |r: &Request| {
            if r.is_sync() {
                ms(130)
            } else {
                ms(1)
            }
        },
    );
    h.submit(rq(0, 1).sector(0).read());
    for i in 0..300u64 {
        h.submit(rq(1 + i, 2).sector(90_000_000 + i * 8).write().at(ms(1)));
    }
    let out = h.run();
    let writes: Vec<&crate::harness::Served> =
        out.served.iter().filter(|s| !s.rq.is_sync()).collect();
    let most_in_flight = |from: Nanos, to: Nanos| {
        writes
            .iter()
            .filter(|s| s.dispatched >= from && s.dispatched < to)
            .map(|s| {
                writes
                    .iter()
                    .filter(|o| o.dispatched <= s.dispatched && o.completed > s.dispatched)
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    let per_50ms: Vec<usize> = (0..5)
        .map(|i| most_in_flight(ms(130 + 50 * i), ms(180 + 50 * i)))
        .collect();
    assert_eq!(per_50ms, [1, 1, 1, 1, 2]);
}

// ----- seekiness and think time ----------------------------------------------------------------

/// Whether a process's queue counts as seeky after it queued requests at `sectors`, each
/// `len` sectors long, on a rotational device or not.
fn seeky_after(sectors: &[u64], len: u32, rotational: bool) -> bool {
    let mut s = flat_with(&[("rotational", i64::from(rotational))]);
    for (i, &sector) in sectors.iter().enumerate() {
        s.insert(
            rq(i as u64, 1).sector(sector).sectors(len).read().build(),
            Nanos::ZERO,
        );
    }
    s.queues[s.queue_of(1).unwrap()].seeky()
}

/// 4.19 `CFQQ_SEEKY`: more than 32 / 8 of the last 32 requests were seeks
/// (`cfq_update_io_seektime`: more than `CFQQ_SEEK_THR`, 800 sectors, from the previous
/// request's end). Four seeks are not enough, five are.
#[test]
fn cfqq_seeky_takes_more_than_four_seeks_in_the_last_32_requests() {
    let jumps = |n: u64| -> Vec<u64> { (0..=n).map(|i| i * 10_000).collect() };
    assert!(!seeky_after(&jumps(4), 8, true));
    assert!(seeky_after(&jumps(5), 8, true));
    let contiguous: Vec<u64> = (0..10).map(|i| i * 8).collect();
    assert!(!seeky_after(&contiguous, 8, true));
}

/// 4.19 `cfq_update_io_seektime` on a non-rotational device: a request shorter than
/// `CFQQ_SECT_THR_NONROT` (64 sectors, 32 KiB) counts as a seek wherever it is.
#[test]
fn cfq_update_io_seektime_counts_requests_under_32_kib_as_seeks_on_an_ssd() {
    let contiguous = |len: u64| -> Vec<u64> { (0..10).map(|i| i * len).collect() };
    assert!(seeky_after(&contiguous(8), 8, false));
    assert!(seeky_after(&contiguous(63), 63, false));
    assert!(!seeky_after(&contiguous(64), 64, false));
}

/// 4.19 `cfq_should_idle` and `cfq_arm_slice_timer`: no idling, for the queue or its group,
/// once the mean think time of the queue's service tree is above `slice_idle` and
/// `group_idle` (`cfq_io_thinktime_big`; each sample is capped at twice the idle time, so the
/// means here are 16 ms). Two groups; the reader of /a thinks 20 ms between requests, the one
/// of /b not at all. After /a's first five requests (while the means gather samples) CFQ
/// stops waiting 8 ms after each of /a's requests and serves /b at its completion.
#[test]
fn cfq_io_thinktime_big_stops_idling_for_a_slow_thinker() {
    let groups = two_groups(None, None);
    let mut s = with(&[], &groups);
    let mut slow = Proc::seq_reader(1, 1, 0, 8);
    slow.think = ms(20);
    let procs = vec![slow, Proc::seq_reader(2, 2, 90_000_000, 8)];
    let run = closed_loop::run(&mut s, procs, 1, |_, _| ms(1), Nanos::from_secs(2));
    let waited: Vec<Nanos> = run
        .served
        .windows(2)
        .filter(|w| w[0].ctx.0 == 1)
        .map(|w| w[1].at - w[0].at)
        .collect();
    assert!(waited.len() >= 20, "{waited:?}");
    assert!(
        waited[5..].iter().all(|&w| w == ms(1)),
        "gaps after /a's requests: {waited:?}"
    );
}

// ----- groups on the group service tree ------------------------------------------------------

/// 4.19 `cfq_group_notify_queue_add`: a group becoming busy goes `CFQ_SLICE_MODE_GROUP_DELAY`
/// behind the last busy group's vdisktime, not at the tree's minimum.
#[test]
fn cfq_group_notify_queue_add_puts_a_newly_busy_group_behind_the_last() {
    let groups = two_groups(None, None);
    let mut s = with(&[], &groups);
    s.insert(rq(1, 1).sector(0).read().group(1).build(), Nanos::ZERO);
    s.insert(
        rq(2, 2).sector(9_000_000).read().group(2).build(),
        Nanos::ZERO,
    );
    assert_eq!(
        s.groups[2].vdisktime,
        s.groups[1].vdisktime + SLICE_MODE_GROUP_DELAY
    );
}

/// 4.19 `cfq_group_service_tree_del` takes an idle group's weight out of its parent's
/// `children_weight`: once /b has nothing queued, /a becoming busy again alone owns the whole
/// disk (`vfraction` 1 << 12), not its share beside /b.
#[test]
fn cfq_group_service_tree_del_gives_an_idle_groups_share_back() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[("group_idle", 0)], &groups), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read().group(1));
    h.submit(rq(2, 2).sector(9_000_000).read().group(2));
    h.run_until(ms(100));
    let mut s = h.sched;
    assert_eq!(s.queued(), 0);
    s.insert(rq(3, 1).sector(8).read().group(1).build(), ms(100));
    assert_eq!(s.groups[1].vfraction, 1 << SERVICE_SHIFT);
}

/// Requests of `out` that match `pred` and were dispatched before `until`.
fn served_by(out: &Outcome, pred: impl Fn(&Request) -> bool, until: Nanos) -> usize {
    out.served
        .iter()
        .filter(|s| s.dispatched < until && pred(&s.rq))
        .count()
}

/// Requests of groups /a and /b dispatched in the first two seconds: /a's requests take 1 ms,
/// /b's 4 ms, each group has a reader with plenty queued, the device takes eight at once.
fn cheap_and_dear_groups(slice_idle: i64) -> (usize, usize) {
    let groups = two_groups(None, None);
    let s = with(&[("slice_idle", slice_idle)], &groups);
    let mut h = Harness::new(
        s,
        8,
        |r: &Request| {
            if r.group.0 == 1 {
                ms(1)
            } else {
                ms(4)
            }
        },
    );
    for g in 1..=2u32 {
        for i in 0..20_000u64 {
            h.submit(
                rq(u64::from(g) * 100_000 + i, g)
                    .sector(u64::from(g) * 90_000_000 + i * 8)
                    .read()
                    .group(g),
            );
        }
    }
    let out = h.run();
    let of_group = |g: u32| served_by(&out, |r| r.group.0 == g, Nanos::from_secs(2));
    (of_group(1), of_group(2))
}

/// 4.19 `iops_mode`: with `slice_idle` 0 on a queueing device (`hw_tag` not 0),
/// `cfq_group_served` charges a group the requests its queue dispatched, not the time. Charged
/// by time (slice_idle 8 ms) the two groups get equal disk time, so /a four times /b's
/// requests (6324 and 1583); charged by requests /a's cheap ones cost it as much as /b's dear
/// ones and the counts come close (4024 and 2972: a queue's turn is still a time slice).
#[test]
fn iops_mode_charges_groups_by_requests_without_slice_idle_on_a_queueing_device() {
    let (a, b) = cheap_and_dear_groups(8);
    assert!(a > 3 * b, "by time: {a} and {b}");
    let (a, b) = cheap_and_dear_groups(0);
    assert!(a < 2 * b, "by requests: {a} and {b}");
}

/// 4.19 `cfq_select_queue`: a queue whose slice is used up but which is its group's only queue,
/// empty, with requests still in flight and worth idling for, keeps the disk until they
/// complete ("it should be ok to wait for this request to complete"). /a's reader puts four
/// requests on the device at once; the first completes at 1 ms (its slice runs to 101 ms), the
/// others at 150 ms. /b's request arriving at 120 ms waits for them (group_idle 0, so only
/// this rule holds it back).
#[test]
fn cfq_select_queue_waits_for_a_used_slices_requests_in_flight() {
    let groups = two_groups(None, None);
    let s = with(&[("group_idle", 0)], &groups);
    let mut h = Harness::new(
        s,
        4,
        |r: &Request| {
            if r.id.0 == 0 {
                ms(1)
            } else {
                ms(150)
            }
        },
    );
    for i in 0..4u64 {
        h.submit(rq(i, 1).sector(i * 8).read().group(1));
    }
    h.submit(rq(10, 2).sector(90_000_000).read().group(2).at(ms(120)));
    let out = h.run();
    assert_eq!(out.of(10).dispatched, ms(150));
}

// ----- fourth sample's survivors (shard 5/10) ----------------------------------------------------

/// 4.19 `choose_wl_class_and_type`: a workload's slice is at least `CFQ_MIN_TT` (two jiffies,
/// 2 ms). With `slice_idle` 0 and `target_latency` 1 ms the sync workload's share is 1 ms (its
/// reader was alone when it started), so only the floor makes it 2 ms. The first reader's
/// slice, scaled to 0.5 ms, ends at 1.2 ms, inside the workload, so the second sync reader
/// follows it, although the writer's queue has the lowest key (it joined with no slice
/// offset) and would be chosen if the workload had expired.
#[test]
fn choose_wl_class_and_type_gives_a_workload_at_least_cfq_min_tt() {
    let mut s = flat();
    s.set_tunable("slice_idle", 0).unwrap();
    s.set_tunable("target_latency", 1).unwrap();
    let mut h = Harness::new(s, 1, |_| Nanos::from_us(600));
    // Queued in this order at 0: the first reader's requests, the writer's, the other reader's.
    for i in 0..10u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    for i in 0..10u64 {
        h.submit(rq(100 + i, 2).sector(90_000_000 + i * 8).write());
    }
    for i in 0..10u64 {
        h.submit(rq(200 + i, 3).sector(180_000_000 + i * 8).read());
    }
    let out = h.run();
    let first: Vec<u32> = out.served.iter().take(3).map(|s| s.rq.ctx.0).collect();
    assert_eq!(
        first,
        [1, 1, 3],
        "{:?}",
        turns(&out.served.iter().map(|s| s.rq.ctx.0).collect::<Vec<_>>())
    );
}

/// 4.19 `cfq_find_next_rq` wraps to the queue's lowest request when none lies above the one
/// just dispatched, and `cfq_choose_req`, of two requests both further behind the head than
/// `back_seek_max` (16 MiB), takes the one further behind ("only one back seek").
#[test]
fn cfq_choose_req_starts_with_the_lowest_of_two_requests_far_behind_the_head() {
    assert_eq!(
        queue_order(1_000_000, &[1_000_100, 100, 200]),
        [1_000_100, 100, 200]
    );
    assert_eq!(
        queue_order(1_000_000, &[1_000_100, 200, 100]),
        [1_000_100, 100, 200]
    );
}

/// 4.19 `cfq_dispatch_requests` expires an idle-class queue after each request while other
/// queues are busy, and `cfq_service_tree_add` puts it back `CFQ_IDLE_DELAY` behind the last
/// queue of the idle tree; `cfq_may_dispatch` allows an idle-class queue one request in
/// flight. Two idle-class readers thus take turns of one request: on a device that takes
/// several at once, each has one request dispatched at once, and no more.
#[test]
fn idle_class_queues_take_turns_of_one_request_behind_the_last() {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    for ctx in 1..=2u32 {
        for i in 0..3u64 {
            let c = u64::from(ctx);
            s.insert(
                rq(c * 10 + i, ctx)
                    .sector(c * 90_000_000 + i * 8)
                    .read()
                    .prio(IoClass::Idle, 0)
                    .build(),
                t0,
            );
        }
    }
    let ids: Vec<Option<u64>> = (0..3)
        .map(|_| match s.dispatch(t0) {
            Dispatch::Request(r) => Some(r.id.0),
            Dispatch::Idle { .. } | Dispatch::Empty => None,
        })
        .collect();
    assert_eq!(ids, [Some(10), Some(20), None]);
}

/// 4.19 `cfq_select_queue` (`check_group_idle`): with `group_idle` on, when a group's only
/// queue has emptied with requests still in flight, CFQ waits for them (and then idles
/// `group_idle` for the group's next request) before serving another group. /a's reader puts
/// two requests on the device at once, with `slice_idle` 0 so only group idling holds the
/// disk; /b's request, queued at the same time, goes when the 8 ms group idle after their
/// completion at 1 ms runs out.
#[test]
fn cfq_select_queue_waits_for_a_one_queue_groups_requests_in_flight() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[("slice_idle", 0)], &groups), 2, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read().group(1));
    h.submit(rq(2, 1).sector(8).read().group(1));
    h.submit(rq(3, 2).sector(9_000_000).read().group(2));
    let out = h.run();
    assert_eq!(out.of(3).dispatched, ms(9));
}

/// A reader with five requests queued at once beside another busy reader: four go at once
/// (`cfq_may_dispatch`: quantum / 2 while the slice is new), the first completes at 1 ms and
/// starts a 100 ms slice, the fifth goes then. Its sixth request arrives at `at` with four in
/// flight (they take 150 ms); returns whether CFQ dispatches it at once.
fn fifth_in_flight_at(at: Nanos) -> bool {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    let reqs: Vec<Request> = (0..6u64)
        .map(|i| {
            rq(i, 1)
                .sector(i * 8)
                .read()
                .at(if i == 5 { at } else { t0 })
                .build()
        })
        .collect();
    for r in &reqs[..5] {
        s.insert(r.clone(), t0);
    }
    s.insert(rq(100, 2).sector(900_000_000).read().build(), t0);
    let next = |s: &mut Cfq, now: Nanos| match s.dispatch(now) {
        Dispatch::Request(r) => Some(r.id.0),
        Dispatch::Idle { .. } | Dispatch::Empty => None,
    };
    let first: Vec<_> = (0..5).map(|_| next(&mut s, t0)).collect();
    assert_eq!(first, [Some(0), Some(1), Some(2), Some(3), None]);
    s.complete(&reqs[0], ms(1));
    let a = s.queue_of(1).unwrap();
    assert_eq!(s.queues[a].slice_end, ms(101).as_ns());
    assert_eq!([next(&mut s, ms(1)), next(&mut s, ms(1))], [Some(4), None]);
    s.insert(reqs[5].clone(), at);
    next(&mut s, at) == Some(5)
}

/// 4.19 `cfq_slice_used_soon`: past quantum / 2 requests in flight, a queue may go on
/// dispatching (up to `quantum`) while `now + slice_idle x dispatched` does not pass its slice
/// end, each request in flight counted as a `slice_idle` (8 ms) still to come. With four in
/// flight and the slice ending at 101 ms: at 69 ms they fit exactly (101 ms), at 70 ms they
/// do not.
#[test]
fn cfq_slice_used_soon_counts_slice_idle_per_request_in_flight() {
    assert!(fifth_in_flight_at(ms(69)));
    assert!(!fifth_in_flight_at(ms(70)));
}

/// 4.19 `cfq_may_dispatch`: the only busy queue has no dispatch limit ("sole queue user, no
/// limit"), an async one too (`promote_sync` is for sync queues). Under low_latency an async
/// queue may still have only one request in flight per `slice_sync` since a sync request was
/// last delayed, which the kernel starts a second in the past: ten.
#[test]
fn cfq_may_dispatch_puts_no_limit_on_the_only_busy_queue() {
    let at_once = |low_latency: i64| {
        let mut s = flat();
        s.set_tunable("low_latency", low_latency).unwrap();
        let mut h = Harness::new(s, 32, |_| ms(1));
        for i in 0..20u64 {
            h.submit(rq(i, 1).sector(i * 8).write());
        }
        let out = h.run();
        out.served
            .iter()
            .filter(|s| s.dispatched == Nanos::ZERO)
            .count()
    };
    assert_eq!(at_once(0), 20);
    assert_eq!(at_once(1), 10);
}

/// 4.19 `cfq_should_preempt`: a metadata request (REQ_PRIO) preempts a queue doing regular
/// I/O, one with no metadata request pending (`prio_pending`, counted down by
/// `cfq_remove_request` as its metadata requests leave). Reader 1 starts with a metadata read
/// and reads on; reader 2's metadata read at 5.5 ms is served at the next dispatch, 6 ms.
#[test]
fn cfq_should_preempt_lets_metadata_in_once_the_active_queues_own_is_served() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(0, 1).sector(0).read().meta());
    for i in 1..20u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    h.submit(
        rq(100, 2)
            .sector(90_000_000)
            .read()
            .meta()
            .at(Nanos::from_us(5500)),
    );
    let out = h.run();
    assert_eq!(out.of(100).dispatched, ms(6));
}

/// 4.19 `cfqq_boost_on_prio`: a metadata request lifts an idle-class queue to best effort (at
/// most level 4), so it may preempt as a best-effort queue would (`cfq_should_preempt`: a
/// metadata request against a queue with none pending) instead of waiting for the disk to
/// fall idle. The kernel boosts an existing queue (in `cfq_may_queue`), so the idle-class
/// process first queues a plain read.
#[test]
fn cfqq_boost_on_prio_lifts_an_idle_class_queue_for_its_metadata() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..300u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    let idle = |id, sector| rq(id, 2).sector(sector).read().prio(IoClass::Idle, 0);
    h.submit(idle(1000, 90_000_000).at(Nanos::from_us(2500)));
    h.submit(idle(1001, 90_000_008).meta().at(Nanos::from_us(5500)));
    let out = h.run();
    assert_eq!(out.of(1001).dispatched, ms(6));
}

/// 4.19 boosts in `cfq_may_queue`, which finds no queue for a process's first request of a
/// direction: an idle-class process whose very first request is a metadata read stays in the
/// idle class and waits for the disk to fall idle.
#[test]
fn cfqq_boost_on_prio_leaves_a_processs_first_request_alone() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..300u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    h.submit(
        rq(1001, 2)
            .sector(90_000_000)
            .read()
            .meta()
            .prio(IoClass::Idle, 0)
            .at(Nanos::from_us(5500)),
    );
    let out = h.run();
    assert!(out.of(1001).dispatched > ms(300), "{:?}", out.of(1001));
}

/// 4.19 `cfq_should_preempt` lets a sync-noidle queue's request preempt an empty active queue
/// only while CFQ serves the sync-noidle workload ("allow preemption only if we are idling on
/// sync-noidle tree"). A sync write without REQ_IDLE (`req_noidle`) makes its writer a
/// sync-noidle queue; arriving far from the head while a sequential reader (sync workload)
/// idles, it waits out the reader's 8 ms idle window.
#[test]
fn cfq_should_preempt_lets_a_noidle_queue_in_only_on_the_sync_noidle_workload() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(10_000_000).sync_write().at(ms(3)));
    let out = h.run();
    assert_eq!(out.of(2).dispatched, ms(9));
}

/// A lone reader's first request (`sectors` long) completes at 1 ms and CFQ idles until 9 ms;
/// its second arrives at 2 ms and takes 10 ms; another reader's request arrives at 10 ms.
/// Returns when that one is dispatched.
fn second_reader_served_at(sectors: u32) -> Nanos {
    let mut h = Harness::new(
        flat(),
        2,
        |r: &Request| if r.id.0 == 1 { ms(10) } else { ms(1) },
    );
    let len = u64::from(sectors);
    h.submit(rq(0, 1).sector(0).sectors(sectors).read());
    h.submit(rq(1, 1).sector(len).sectors(sectors).read().at(ms(2)));
    h.submit(rq(2, 2).sector(90_000_000).read().at(ms(10)));
    h.run().of(2).dispatched
}

/// 4.19 `cfq_rq_enqueued`: a request arriving while CFQ idles for its queue cancels the idle
/// timer if it is larger than a page or other queues are busy ("let it rip"); a one-page
/// request is let through (`must_dispatch`) but the timer runs on, and firing with the queue
/// empty it ends the slice (`cfq_idle_slice_timer`). After a 4 KiB request the slice ends at
/// 9 ms and the other reader is served on arrival; after an 8 KiB one the queue keeps its
/// slice, waits for the request in flight and idles after it, until 20 ms.
#[test]
fn cfq_rq_enqueued_lets_a_request_over_a_page_cancel_the_idle_timer() {
    assert_eq!(second_reader_served_at(8), ms(10));
    assert_eq!(second_reader_served_at(16), ms(20));
}

/// 4.19 `cfq_completed_request` arms the idle timer only for a queue with nothing queued
/// (`cfq_arm_slice_timer` waits for a process's next request), and `cfq_should_preempt` lets a
/// close request of another process in only while the active queue waits (`wait_request`).
/// Reader 1 has 20 requests queued; reader 2's request, 1000 sectors from the head at
/// 1.5 ms, waits for all of them and then goes as a close cooperator.
#[test]
fn cfq_completed_request_arms_the_idle_timer_only_for_an_empty_queue() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..20u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    h.submit(rq(100, 2).sector(1000).read().at(Nanos::from_us(1500)));
    let out = h.run();
    assert_eq!(out.of(100).dispatched, ms(20));
}

// ----- fifth sample's survivors (shard 7/10) -----------------------------------------------------

/// 4.19 `cfq_choose_req`: `back_seek_max` is in KiB, two sectors each, so the default 16 MiB
/// reaches 32768 sectors behind the head. A request 20,000 sectors behind (cost 40,000) beats
/// one 50,000 ahead; 40,000 behind, it is out of reach and the one ahead goes first.
#[test]
fn cfq_choose_req_reaches_back_seek_max_kib_behind_the_head() {
    assert_eq!(queue_order(100_000, &[150_008, 80_008])[0], 80_008);
    assert_eq!(queue_order(100_000, &[150_008, 60_008])[0], 150_008);
}

/// 4.19 `cfq_may_dispatch` (`promote_sync`): the only busy sync queue is not limited by the
/// async queues beside it: with writeback queued it still puts all its requests at the
/// device at once, where a sync queue sharing the device with another gets quantum / 2
/// while its slice is new. "Only" counts the sync queues busy now: a reader that finished
/// earlier has left the count (`cfq_del_cfqq_rr`). The reads wait for the writes in flight
/// ("drain async requests before we start sync IO") and all go at 11 ms.
#[test]
fn cfq_may_dispatch_promotes_the_only_busy_sync_queue_beside_writeback() {
    let mut h = Harness::new(flat(), 64, |_| ms(1));
    // An earlier reader, done (and its idle wait over) by 9 ms.
    h.submit(rq(1000, 3).sector(500_000_000).read());
    for i in 0..20u64 {
        h.submit(rq(100 + i, 2).sector(90_000_000 + i * 8).write().at(ms(10)));
    }
    for i in 0..16u64 {
        h.submit(rq(i, 1).sector(i * 8).read().at(ms(10)));
    }
    let out = h.run();
    let reads_at_11 = out
        .served
        .iter()
        .filter(|s| s.rq.ctx.0 == 1 && s.dispatched == ms(11))
        .count();
    assert_eq!(reads_at_11, 16);
}

/// 4.19 `choose_wl_class_and_type` caps the async workload's slice at `target_latency` x the
/// group's busy async queues / all busy queues of the device ("async queues are currently
/// system wide"), idle-class queues included, then scales it by `slice_async / slice_sync`.
/// A writer, a reader and an idle-class reader: min(300 / 2, 300 x 1 / 3) x 40 / 100 = 40 ms,
/// so the writer's turns are three budgets of 16 writes (the workload is checked as each
/// budget runs out: at 16 and 32 ms it goes on, at 48 it is over).
#[test]
fn choose_wl_class_and_type_caps_writeback_by_its_share_of_all_busy_queues() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..2000u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    for i in 0..600u64 {
        h.submit(rq(10_000 + i, 2).sector(90_000_000 + i * 8).write());
    }
    for i in 0..10u64 {
        h.submit(
            rq(20_000 + i, 3)
                .sector(180_000_000 + i * 8)
                .read()
                .prio(IoClass::Idle, 0),
        );
    }
    let out = h.run();
    let order: Vec<u32> = out.served.iter().map(|s| s.rq.ctx.0).collect();
    let t = turns(&order);
    let writer: Vec<usize> = t[..t.len() - 3]
        .iter()
        .filter(|&&(c, _)| c == 2)
        .map(|&(_, n)| n)
        .collect();
    assert!(
        writer.len() >= 5 && writer[1..].iter().all(|&n| n == 48),
        "{t:?}"
    );
}

/// 4.19 `cfq_arm_slice_timer` counts each idle wait it starts (blktrace's `arm_idle`): a
/// sequential reader whose next request comes 2 ms after each completion, beside another
/// reader, gets one idle wait per request.
#[test]
fn cfq_arm_slice_timer_counts_each_idle_wait() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..3u64 {
        h.submit(rq(i, 1).sector(i * 8).read().at(ms(3 * i)));
    }
    h.submit(rq(100, 2).sector(90_000_000).read());
    h.run_until(ms(8));
    assert_eq!(h.sched.stats().idle_arms, 3);
}

/// 4.19 `cfq_close_cooperator` looks for a cooperator of sync queues only. When writeback
/// (the async workload, chosen first for its lower key) runs out, the next queue is chosen
/// by workload and key (the reader that queued first), not the reader whose request lies
/// next to the writes.
#[test]
fn cfq_close_cooperator_serves_sync_queues_only() {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    let writes: Vec<Request> = (0..2u64)
        .map(|i| rq(100 + i, 3).sector(50_000_000 + i * 8).write().build())
        .collect();
    for w in &writes {
        s.insert(w.clone(), t0);
    }
    s.insert(rq(1, 1).sector(900_000_000).read().build(), t0);
    s.insert(rq(2, 2).sector(50_000_016).read().build(), t0);
    let next = |s: &mut Cfq, now: Nanos| match s.dispatch(now) {
        Dispatch::Request(r) => Some(r.id.0),
        Dispatch::Idle { .. } | Dispatch::Empty => None,
    };
    // The reads wait for the writes in flight (`cfq_may_dispatch`).
    let first: Vec<_> = (0..3).map(|_| next(&mut s, t0)).collect();
    assert_eq!(first, [Some(100), Some(101), None]);
    for w in &writes {
        s.complete(w, ms(1));
    }
    assert_eq!(next(&mut s, ms(1)), Some(1));
}

/// 4.19 `cfq_setup_merge`: of two cooperating queues with one process each, the expiring
/// (active) queue is merged into its cooperator ("merge in the direction of the lesser
/// amount of work", `new_process_refs >= process_refs`). Reader 1 empties with reader 2's
/// request 92 sectors from the head: reader 2's queue takes over, and reader 1's next
/// request joins it (`cfq_merge_cfqqs`).
#[test]
fn cfq_setup_merge_moves_the_expiring_queue_into_its_cooperator() {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    s.insert(rq(1, 1).sector(0).read().build(), t0);
    assert!(matches!(s.dispatch(t0), Dispatch::Request(r) if r.id.0 == 1));
    s.insert(rq(2, 2).sector(100).read().build(), t0);
    assert!(matches!(s.dispatch(t0), Dispatch::Request(r) if r.id.0 == 2));
    let cooperator = s.queue_of(2);
    s.insert(rq(3, 1).sector(8).read().build(), t0);
    assert_eq!(s.queue_of(1), cooperator);
    assert_eq!(s.stats().queue_merges, 1);
}

/// 4.19 `cfq_update_io_seektime`: a request counts as a seek only if it starts more than
/// `CFQQ_SEEK_THR` (800 sectors) from where the queue's previous request ended: five gaps of
/// 800 sectors are no seeks, five of 801 make the queue seeky.
#[test]
fn cfq_update_io_seektime_takes_a_seek_as_more_than_800_sectors() {
    let gaps = |gap: u64| -> Vec<u64> { (0..=5).map(|i| i * (8 + gap)).collect() };
    assert!(!seeky_after(&gaps(800), 8, true));
    assert!(seeky_after(&gaps(801), 8, true));
}

/// 4.19 `cfq_exit_icq` -> `cfq_exit_cfqq`: when a process exits, its queue, if active, is
/// expired at once (`__cfq_slice_expired`): CFQ stops idling for it and serves the other
/// process then, not when the idle wait would have run out (9 ms).
#[test]
fn cfq_exit_cfqq_ends_the_slice_of_an_exiting_process() {
    let mut s = flat();
    let first = rq(1, 1).sector(0).read().build();
    s.insert(first.clone(), Nanos::ZERO);
    s.insert(rq(2, 2).sector(10_000_000).read().build(), Nanos::ZERO);
    assert!(matches!(s.dispatch(Nanos::ZERO), Dispatch::Request(r) if r.id.0 == 1));
    s.complete(&first, ms(1));
    assert_eq!(s.dispatch(ms(1)), Dispatch::Idle { until: ms(9) });
    s.exit(CtxId(1), ms(3));
    assert!(matches!(s.dispatch(ms(3)), Dispatch::Request(r) if r.id.0 == 2));
}

/// `hw_tag` after 60 requests of ctx 1 issued one at a time (each as the previous
/// completes), with `backlog` idle-class requests of ctx 2 queued all along (never served
/// while the reader keeps the disk).
fn hw_tag_after_light_load(write: bool, backlog: u64) -> i8 {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..60u64 {
        let r = rq(i, 1).sector(i * 128).sectors(128).at(ms(i));
        h.submit(if write { r.write() } else { r.read() });
    }
    for i in 0..backlog {
        h.submit(
            rq(1000 + i, 2)
                .sector(900_000_000 + i * 128)
                .sectors(128)
                .read()
                .prio(IoClass::Idle, 0),
        );
    }
    h.run_until(ms(60));
    h.sched.hw_tag
}

/// 4.19 `cfq_update_hw_tag` takes a sample only under load that could show a queueing
/// device: more than `CFQ_HW_QUEUE_MIN` (5) requests queued or in the driver, and, when the
/// active queue idles, enough of its own (5 dispatched or queued) or 5 in the driver. Sixty
/// writes one at a time, or sixty reads one at a time beside a backlog that is never served
/// (idle class), are no samples: `hw_tag` stays unknown (-1).
#[test]
fn cfq_update_hw_tag_takes_no_samples_under_light_load() {
    assert_eq!(hw_tag_after_light_load(true, 0), -1);
    assert_eq!(hw_tag_after_light_load(false, 20), -1);
}

/// Requests of /a's writer and /b's reader dispatched in the first two seconds, each with
/// plenty queued (1 ms each), and in /a also an idle-class reader if `idle_reader` (never
/// served then: the writer keeps /a's best-effort class busy).
fn writer_and_reader_groups(idle_reader: bool) -> (usize, usize) {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    for i in 0..3000u64 {
        h.submit(rq(i, 1).sector(i * 8).write().group(1));
        h.submit(rq(10_000 + i, 2).sector(90_000_000 + i * 8).read().group(2));
    }
    if idle_reader {
        for i in 0..10u64 {
            h.submit(
                rq(20_000 + i, 3)
                    .sector(180_000_000 + i * 8)
                    .read()
                    .prio(IoClass::Idle, 0)
                    .group(1),
            );
        }
    }
    let out = h.run();
    let of_ctx = |ctx: u32| served_by(&out, |r| r.ctx.0 == ctx, Nanos::from_secs(2));
    (of_ctx(1), of_ctx(2))
}

/// 4.19 `cfq_group_served` charges an async queue its whole allocated slice, not the time it
/// used, when its group has no sync queue busy (`nr_sync`: the group's busy queues less its
/// async and idle-class ones). An idle-class reader in the writer's group is no sync queue:
/// the writer's group is charged alike with it or without it.
#[test]
fn cfq_group_served_charges_writeback_a_whole_slice_beside_idle_class_queues() {
    let (w, r) = writer_and_reader_groups(false);
    let (w_idle, r_idle) = writer_and_reader_groups(true);
    assert_eq!((w_idle, r_idle), (w, r));
    // Charged 40 ms a turn of 16 writes (15 used), the writer gets well under half the reads.
    assert!(2 * w < r, "{w} writes, {r} reads");
}

/// 4.19 `cfq_group_service_tree_del` takes a leaving group's weight out of its parent's
/// `children_weight`, so when it comes back its share is again its weight over its busy
/// siblings' (`cfq_group_service_tree_add`): /b (weight 500) leaves at 1 ms while /a (500)
/// stays busy, and back at 50 ms it has half of the disk, vfraction 2048 of 4096.
#[test]
fn cfq_group_service_tree_del_takes_a_leaving_groups_weight_from_its_parent() {
    let groups = two_groups(None, None);
    let s = with(&[("slice_idle", 0), ("group_idle", 0)], &groups);
    let mut h = Harness::new(s, 1, |_| ms(1));
    h.submit(rq(1000, 2).sector(90_000_000).read().group(2));
    for i in 0..100u64 {
        h.submit(rq(i, 1).sector(i * 8).read().group(1));
    }
    h.submit(rq(1001, 2).sector(90_000_008).read().group(2).at(ms(50)));
    h.run_until(ms(2));
    assert_eq!(h.sched.groups[2].tree_seq, None, "/b has left");
    h.run_until(ms(50));
    assert_eq!(h.sched.groups[2].vfraction, 2048);
}

/// 4.19 `cfq_group_service_tree_del` propagates a deactivation up the hierarchy while it
/// leaves a parent with no active entity (`nr_active`): when /a/b, the only busy group under
/// /a, leaves at 1 ms, /a leaves its parent too, and /c, charged at the end of its slice
/// (about 100 ms), comes back alone with the whole disk (vfraction 4096, not 2048 beside a
/// stale /a).
#[test]
fn cfq_group_service_tree_del_deactivates_a_parent_left_without_busy_children() {
    let mut t = GroupTree::new();
    t.add("/a", None).unwrap();
    let ab = t.add("/a/b", None).unwrap();
    let c = t.add("/c", None).unwrap();
    let s = with(&[("slice_idle", 0), ("group_idle", 0)], &t);
    let mut h = Harness::new(s, 1, |_| ms(1));
    h.submit(rq(1000, 2).sector(90_000_000).read().group(ab.0));
    for i in 0..300u64 {
        h.submit(rq(i, 1).sector(i * 8).read().group(c.0));
    }
    h.run_until(ms(2));
    let c = c.0 as usize;
    assert_eq!(h.sched.groups[c].vfraction, 2048, "beside /a at first");
    h.run_until(ms(150));
    assert_eq!(h.sched.groups[c].vfraction, 4096);
}

// ----- sixth sample's survivors (shard 9/10) -----------------------------------------------------

/// The queues of `s`'s two processes after a run where they read one file in interleaved
/// chunks for 200 requests each and then seek around the disk (merged, then split).
fn merged_then_split() -> Cfq {
    let mut s = flat();
    let procs: Vec<Proc> = [(1u32, 0u64), (2, 1)]
        .into_iter()
        .map(|(ctx, first)| {
            let mut p = Proc::seq_reader(ctx, 0, 0, 8);
            p.pattern = Box::new(move |n| {
                if n < 200 {
                    (first + 2 * n) * 8
                } else {
                    (n * 7_919 + first * 3_571) % 1_000 * 100_000
                }
            });
            p
        })
        .collect();
    closed_loop::run(&mut s, procs, 1, |_, _| ms(1), ms(1500));
    s
}

/// 4.19 `split_cfqq`: when a shared queue is broken apart, each process but the last gets a
/// new queue and drops its reference (`cfq_put_queue`); the last one, the only reference
/// left, keeps the old queue. Two processes merged into one queue end with three queues
/// between them, not four.
#[test]
fn split_cfqq_leaves_the_shared_queue_to_its_last_process() {
    let s = merged_then_split();
    assert!(s.stats().queue_splits >= 1, "{:?}", s.stats());
    let (q1, q2) = (s.queue_of(1).unwrap(), s.queue_of(2).unwrap());
    assert_ne!(q1, q2);
    assert_eq!(s.queues.len(), 3, "queues made: {}", s.queues.len());
}

/// 4.19 `cfq_arm_slice_timer` does not idle when the process's mean think time is longer
/// than what is left of its slice. A reader thinking 5 ms between 1 ms reads keeps the disk
/// through its 100 ms slice (1 to 101 ms), CFQ idling after each read; after the read that
/// completes at 97 ms only 4 ms are left, so the other reader is served at once, not after
/// the 5 ms wait.
#[test]
fn cfq_arm_slice_timer_does_not_idle_past_the_slice_for_a_thinking_process() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for k in 0..30u64 {
        h.submit(rq(k, 1).sector(k * 8).read().at(ms(6 * k)));
    }
    for i in 0..50u64 {
        h.submit(rq(1000 + i, 2).sector(90_000_000 + i * 8).read());
    }
    let out = h.run();
    assert_eq!(out.of(1000).dispatched, ms(97));
}

/// Writes dispatched between two of the reader's turns, in the middle of a run with a reader
/// and writeback at levels 4 and 0 (budgets of 16 and 32 writes).
fn writes_between_reads() -> Vec<usize> {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..3000u64 {
        h.submit(rq(i, 1).sector(i * 8).read());
    }
    for i in 0..600u64 {
        h.submit(rq(10_000 + i, 2).sector(90_000_000 + i * 8).write());
        h.submit(
            rq(20_000 + i, 3)
                .sector(180_000_000 + i * 8)
                .write()
                .prio(IoClass::BestEffort, 0),
        );
    }
    let out = h.run();
    let mut between = Vec::new();
    let mut writes = 0;
    for s in &out.served {
        if s.rq.is_sync() {
            if writes > 0 {
                between.push(writes);
            }
            writes = 0;
        } else {
            writes += 1;
        }
    }
    between
}

/// 4.19 `choose_wl_class_and_type`: the async workload's cap is `target_latency` x the
/// group's busy async queues / all busy queues, with two writers 300 x 2 / 3 = 200 ms, not
/// below the workload's share of the group slice (300 x 2 / 3): 200 x 40 / 100 = 80 ms of
/// writeback between the reader's turns, checked as each writer's budget runs out, so 96 or
/// 112 writes (with `/` for the first `x`, 300 / 2 / 3 = 50 ms: 20 ms, one or two budgets).
#[test]
fn choose_wl_class_and_type_caps_writeback_by_all_its_async_queues() {
    let between = writes_between_reads();
    assert_eq!(between[..6], [96, 112, 96, 112, 96, 112], "{between:?}");
}

// ----- the second sample's last survivors (shard 1/10) --------------------------------------

/// 4.19 `cfq_cfqq_slice_usage`: a queue expired at the instant its slice starts (its first
/// completion) is charged the time since it was made active (`dispatch_start`), at least a
/// jiffy, not the 0 its slice has run. /a's idle-class reader is alone on the device, so its
/// 10 ms request is dispatched without expiring it (`cfq_dispatch_requests` expires an
/// idle-class queue at dispatch only beside other busy queues) and it is expired at that
/// request's completion (`cfq_completed_request`). /b's idle-class reader arrived at 5 ms
/// and went `CFQ_SLICE_MODE_GROUP_DELAY` (200 ms) of vdisktime behind /a
/// (`cfq_group_notify_queue_add`); /a's charge of 10 ms at its whole share is 40,960 ms of
/// vdisktime (`cfqg_scale_charge`), so /b is served next, at 10 ms (charged 0, /a would go
/// first and /b follow at 20 ms).
#[test]
fn cfq_cfqq_slice_usage_charges_a_queue_expired_at_its_first_completion_since_its_dispatch() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(10));
    for i in 0..3u64 {
        h.submit(
            rq(i, 1)
                .sector(i * 8)
                .read()
                .prio(IoClass::Idle, 0)
                .group(1),
        );
    }
    h.submit(
        rq(100, 2)
            .sector(90_000_000)
            .read()
            .prio(IoClass::Idle, 0)
            .group(2)
            .at(ms(5)),
    );
    let out = h.run();
    assert_eq!(out.of(0).completed, ms(10));
    assert_eq!(out.of(100).dispatched, ms(10));
}

/// Requests of /a (a reader, ctx 1, and a writer, ctx 2) and of /b (a reader, ctx 3)
/// dispatched in the first two seconds, each with plenty queued, 1 ms each.
fn reader_and_writer_beside_a_reader() -> (usize, usize) {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    for i in 0..3000u64 {
        h.submit(rq(i, 1).sector(i * 8).read().group(1));
        h.submit(
            rq(10_000 + i, 2)
                .sector(90_000_000 + i * 8)
                .write()
                .group(1),
        );
        h.submit(
            rq(20_000 + i, 3)
                .sector(180_000_000 + i * 8)
                .read()
                .group(2),
        );
    }
    let out = h.run();
    let of_group = |g: u32| served_by(&out, |r| r.group.0 == g, Nanos::from_secs(2));
    (of_group(1), of_group(2))
}

/// 4.19 `cfq_group_served` charges an async queue its whole allocated slice only when its
/// group has no busy sync queue (`!cfq_cfqq_sync(cfqq) && !nr_sync`); beside a busy reader
/// in its group the writer is charged the time it used, as every sync queue is. /a (reader
/// and writer) and /b (a reader) then get the disk about equally: requests of 1 ms each,
/// so about as many requests each.
#[test]
fn cfq_group_served_charges_writeback_its_used_time_beside_a_busy_reader() {
    let (a, b) = reader_and_writer_beside_a_reader();
    assert!(a.abs_diff(b) * 20 < a + b, "/a {a}, /b {b}");
}

/// The dispatch time of reader 2's first request when reader 1, thinking 5 ms between 1 ms
/// reads from 0 ms (slice 1 to 101 ms), sends its 16th and last read at 90 ms and that read
/// takes `last`; and reader 1's mean think time then (`cic->ttime.ttime_mean`, ns).
fn reader_2_after_a_thinking_reader(last: Nanos) -> (Nanos, u64) {
    let mut h = Harness::new(
        flat(),
        1,
        move |r: &Request| {
            if r.id.0 == 15 {
                last
            } else {
                ms(1)
            }
        },
    );
    for k in 0..16u64 {
        h.submit(rq(k, 1).sector(k * 8).read().at(ms(6 * k)));
    }
    for i in 0..50u64 {
        h.submit(rq(1000 + i, 2).sector(90_000_000 + i * 8).read());
    }
    h.run_until(ms(90));
    let mean = h.sched.cics[&CtxId(1)].ttime.mean;
    let out = h.run();
    (out.of(1000).dispatched, mean)
}

/// 4.19 `cfq_arm_slice_timer` still idles when what is left of the slice equals the
/// process's mean think time (it gives up only when `slice_end - now < ttime_mean`, to the
/// nanosecond: 4.19 keeps both in ns). Reader 1's last read completes exactly its mean think
/// time before its slice ends at 101 ms: CFQ idles `slice_idle` (8 ms) for it, and reader 2
/// is served when the wait runs out; completing 1 ns later, reader 2 goes at once.
#[test]
fn cfq_arm_slice_timer_idles_when_the_slice_left_equals_the_mean_think_time() {
    let (_, mean) = reader_2_after_a_thinking_reader(ms(1));
    // 5 ms think times after a first one of 0: a little under 5 ms.
    assert!(
        (ms(4).as_ns()..ms(5).as_ns()).contains(&mean),
        "mean {mean}"
    );
    let last_done = ms(101) - Nanos(mean);
    let (at, _) = reader_2_after_a_thinking_reader(last_done - ms(90));
    assert_eq!(at, last_done + ms(8));
    let (at, _) = reader_2_after_a_thinking_reader(last_done - ms(90) + Nanos(1));
    assert_eq!(at, last_done + Nanos(1));
}

/// 4.19 `cfq_setup_merge`: when the expiring queue has more processes than its cooperator,
/// the cooperator is scheduled to merge into it and the expiring queue takes the
/// cooperator's process references (`cfqq->ref += new_process_refs`). Readers 1 and 2 share
/// a queue (merged at 1 ms); reader 3 queues a request close by, and when the shared queue
/// empties at 3 ms reader 3's queue is merged into it, which then holds three references.
/// Five far requests make it seeky, and after reader 4's turn each reader's next request
/// breaks it apart (`split_cfqq`): every process but the last gets a new queue, so the three
/// end in three queues (one reference short, the second to split would keep the shared
/// queue and the third would stay in it with the second).
#[test]
fn cfq_setup_merge_gives_a_shared_queue_its_cooperators_references() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read());
    h.submit(rq(2, 2).sector(100).read());
    h.submit(rq(3, 1).sector(8).read().at(ms(1)));
    h.submit(rq(4, 3).sector(300).read().at(Nanos::from_us(1500)));
    h.submit(rq(5, 3).sector(308).read().at(ms(3)));
    for k in 1..=5u64 {
        h.submit(rq(5 + k, 1).sector(k * 10_000_000).read().at(ms(3)));
    }
    for i in 0..50u64 {
        h.submit(rq(100 + i, 4).sector(900_000_000 + i * 8).read().at(ms(20)));
    }
    h.run_until(ms(4));
    let shared = h.sched.queue_of(2).unwrap();
    assert_eq!(
        (1..=3).map(|c| h.sched.queue_of(c)).collect::<Vec<_>>(),
        [Some(shared); 3]
    );
    for c in 1..=3u32 {
        let far = u64::from(c) * 100_000_000;
        h.submit(rq(1000 + u64::from(c), c).sector(far).read().at(ms(500)));
    }
    h.run_until(ms(1000));
    let s = &h.sched;
    assert_eq!(s.stats().queue_merges, 2, "{:?}", s.stats());
    let queues: Vec<QId> = (1..=3).map(|c| s.queue_of(c).unwrap()).collect();
    assert!(
        queues[0] != queues[1] && queues[1] != queues[2] && queues[0] != queues[2],
        "{queues:?}"
    );
}

// ----- survivors of session 23's fresh samples (shards 6/10 and 2/10) -----------------------

/// The id of the request `s` dispatches at `now`, if it dispatches one.
fn dispatched_id(s: &mut Cfq, now: Nanos) -> Option<u64> {
    match s.dispatch(now) {
        Dispatch::Request(r) => Some(r.id.0),
        Dispatch::Idle { .. } | Dispatch::Empty => None,
    }
}

/// Whether reader 2's request at `sector` is served as a cooperator (`cfq_close_cooperator`)
/// the moment reader 1's queue empties with its read of sectors 0..8 in flight, instead of
/// reader 1's queue keeping the disk for its idle wait.
fn cooperator_served(sector: u64) -> bool {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    s.insert(rq(1, 1).sector(0).read().build(), t0);
    assert_eq!(dispatched_id(&mut s, t0), Some(1));
    s.insert(rq(2, 2).sector(sector).read().build(), t0);
    dispatched_id(&mut s, t0) == Some(2)
}

/// 4.19 `cfq_rq_close`: a request is close to the head within `CFQQ_CLOSE_THR`, 8 x 1024
/// sectors (4 MiB) of `last_position`, inclusive; only a close queue is a cooperator
/// (`cfqq_close`). With the head at sector 8, a request at 8 + 8192 is close, one at
/// 8 + 8193 is not.
#[test]
fn cfq_rq_close_takes_a_request_within_8192_sectors_of_the_head() {
    assert!(cooperator_served(8 + 8192));
    assert!(!cooperator_served(8 + 8193));
}

/// 4.19 `cfq_service_tree_add` puts a queue after the queues already on the tree with an
/// equal key (the rb-tree walk goes right on equality). Two readers at level 0 (whose
/// `cfq_slice_offset` is 0) join the tree at 20 ms with the same key: reader 2's queue,
/// new, joins first and is served first, although reader 1's queue is older.
#[test]
fn cfq_service_tree_add_puts_a_queue_after_those_with_an_equal_key() {
    let mut s = flat();
    let level0 = |r: crate::harness::RequestBuilder| r.read().prio(IoClass::BestEffort, 0);
    let first = level0(rq(1, 1).sector(0)).build();
    s.insert(first.clone(), Nanos::ZERO);
    assert_eq!(dispatched_id(&mut s, Nanos::ZERO), Some(1));
    s.complete(&first, ms(1));
    // Reader 1's idle wait runs out at 9 ms and its queue leaves the tree.
    assert_eq!(dispatched_id(&mut s, ms(9)), None);
    s.insert(
        level0(rq(2, 2).sector(100_000_000)).at(ms(20)).build(),
        ms(20),
    );
    s.insert(level0(rq(3, 1).sector(8)).at(ms(20)).build(), ms(20));
    assert_eq!(dispatched_id(&mut s, ms(20)), Some(2));
}

/// 4.19 `cfq_should_wait_busy`: the only queue of its group, emptied with less of its slice
/// left than its process's mean think time, has its slice extended by `slice_idle` and
/// waits for its next request (`wait_busy`), so its group stays busy instead of giving the
/// disk away at once. /a's reader thinks 5 ms between 1 ms reads (slice 1 to 101 ms); its
/// read completing at 97 ms leaves 4 ms: the slice runs on until its next read arrives at
/// 102 ms, when it expires (`cfq_select_queue`, `wait_busy` with a request queued) and /b's
/// reader is served.
#[test]
fn cfq_should_wait_busy_extends_a_lone_queues_slice_past_a_think_time_longer_than_is_left() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    for k in 0..30u64 {
        h.submit(rq(k, 1).sector(k * 8).read().group(1).at(ms(6 * k)));
    }
    for i in 0..50u64 {
        h.submit(rq(1000 + i, 2).sector(90_000_000 + i * 8).read().group(2));
    }
    let out = h.run();
    assert_eq!(out.of(1000).dispatched, ms(102));
}

/// When the read of a process of `class` arriving at 2.5 ms is dispatched, while a real-time
/// writeback queue with 20 writes of 1 ms holds the disk.
fn read_beside_rt_writeback(class: IoClass) -> (Nanos, Vec<u64>) {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..20u64 {
        h.submit(rq(i, 1).sector(i * 8).write().prio(IoClass::RealTime, 4));
    }
    h.submit(
        rq(100, 2)
            .sector(5_000_000)
            .read()
            .prio(class, 4)
            .at(Nanos::from_us(2500)),
    );
    let out = h.run();
    (out.of(100).dispatched, out.dispatch_order())
}

/// 4.19 `cfq_should_preempt`: a real-time queue is never preempted by a queue of a lower
/// class, not even real-time writeback by a best-effort read (that test comes before the
/// one letting a sync request preempt an async queue); a real-time read preempts it at once.
#[test]
fn cfq_should_preempt_lets_only_a_real_time_read_preempt_real_time_writeback() {
    let (at, _) = read_beside_rt_writeback(IoClass::RealTime);
    assert_eq!(at, ms(3));
    let (_, order) = read_beside_rt_writeback(IoClass::BestEffort);
    assert_eq!(order.last(), Some(&100), "{order:?}");
}

/// 4.19 `cfq_update_idle_window` trusts a process's mean think time only once it is
/// `sample_valid` (more than 80 samples in 256ths: from its third request, the first
/// counting as 0 ms): a reader thinking 20 ms (16 ms counted, twice `slice_idle`) keeps its
/// idle window through its second request and loses it at its third.
#[test]
fn cfq_update_idle_window_trusts_the_mean_think_time_from_the_third_request() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for i in 0..3u64 {
        h.submit(rq(i, 1).sector(i * 8).read().at(ms(i * 21)));
    }
    h.run_until(ms(21));
    assert!(h.sched.idle_window_of(1), "after two requests");
    h.run_until(ms(42));
    assert!(!h.sched.idle_window_of(1), "after three");
}

/// 4.19 `cfq_group_notify_queue_add` (slice mode): a group becoming busy goes
/// `CFQ_SLICE_MODE_GROUP_DELAY`, 200 ms of vdisktime, behind the last busy group. /b's
/// reader arrives at 0.5 ms, behind /a (at 0); /a's reader is preempted 10 us into its
/// slice by a real-time read of its own group (`cfq_should_preempt`) and charged those 10 us
/// at its whole share, 40.96 ms of vdisktime (`cfqg_scale_charge`): /a is still first, and
/// the real-time read is served at once (a delay of 1 ms would put /b first).
#[test]
fn cfq_group_notify_queue_add_puts_a_newly_busy_group_200_ms_of_vdisktime_behind() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read().group(1));
    h.submit(
        rq(2, 2)
            .sector(90_000_000)
            .read()
            .group(2)
            .at(Nanos::from_us(500)),
    );
    let preempt_at = Nanos::from_us(1010);
    h.submit(
        rq(3, 3)
            .sector(50_000_000)
            .read()
            .prio(IoClass::RealTime, 4)
            .group(1)
            .at(preempt_at),
    );
    let out = h.run();
    assert_eq!(out.of(3).dispatched, preempt_at);
}

/// 4.19 `cfq_arm_slice_timer` never idles on a non-rotational device that queues (`hw_tag`,
/// which counts as set until it is measured) when `group_idle` is 0: a lone reader on an
/// SSD under cfq-flat gets no idle wait between its reads.
#[test]
fn cfq_arm_slice_timer_does_not_idle_on_a_queueing_ssd_without_group_idle() {
    let s = flat_with(&[("rotational", 0)]);
    let mut h = Harness::new(s, 1, |_| ms(1));
    for k in 0..5u64 {
        h.submit(rq(k, 1).sector(k * 8).read().at(ms(2 * k)));
    }
    let out = h.run();
    assert_eq!(out.idles, []);
}

/// 4.19 `cfq_idle_slice_timer` clears a queue's `deep` flag when its idle wait runs out with
/// slice time left and the queue still empty ("queue depth flag is reset only when the idle
/// didn't succeed"). A seeky reader that queued six requests at once keeps its idle window
/// for being deep (`cfq_update_idle_window`); its wait after them runs out, so its next
/// request, alone, finds it seeky and not deep, and its idle window closes.
#[test]
fn cfq_idle_slice_timer_clears_deep_when_the_wait_runs_out() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for k in 0..6u64 {
        h.submit(rq(k, 1).sector((k + 1) * 10_000_000).read());
    }
    h.submit(rq(6, 1).sector(90_000_000).read().at(ms(20)));
    h.run_until(ms(10));
    assert!(h.sched.idle_window_of(1), "deep");
    h.run_until(ms(20));
    assert!(!h.sched.idle_window_of(1));
}

/// 4.19 `cfq_close_cooperator` refuses a seeky queue as a cooperator (`CFQQ_SEEKY(cfqq)`),
/// however close its next request: reader 1's queue empties at 31 ms with seeky reader 2's
/// request 92 sectors from the head, and idles for reader 1 (to 39 ms) instead of serving it.
#[test]
fn cfq_close_cooperator_refuses_a_seeky_queue() {
    let mut h = Harness::new(flat(), 1, |_| ms(1));
    for k in 0..6u64 {
        h.submit(rq(k, 2).sector((k + 1) * 10_000_000).read());
    }
    h.submit(rq(100, 1).sector(0).read().at(ms(30)));
    h.submit(rq(6, 2).sector(100).read().at(Nanos::from_us(30_500)));
    let out = h.run();
    assert_eq!(out.of(6).dispatched, ms(39));
}

/// 4.19 `cfq_exit_cfqq` -> `cfq_put_cooperator`: a process that exits with its queue
/// scheduled to merge gives back the reference the merge took on the other queue. Reader 1's
/// queue is scheduled into reader 2's, and reader 1 exits; when reader 2's queue (one
/// process again) empties beside reader 3's close request, it is the one merged
/// (`cfq_setup_merge`: into the queue with as many processes or more), so reader 2 moves to
/// reader 3's queue (holding the extra reference, reader 2's queue would take reader 3 in).
#[test]
fn cfq_put_cooperator_gives_back_a_merges_reference_at_exit() {
    let mut s = flat();
    let t0 = Nanos::ZERO;
    s.insert(rq(1, 1).sector(0).read().build(), t0);
    assert_eq!(dispatched_id(&mut s, t0), Some(1));
    s.insert(rq(2, 2).sector(100).read().build(), t0);
    assert_eq!(dispatched_id(&mut s, t0), Some(2));
    s.exit(CtxId(1), t0);
    s.insert(rq(3, 3).sector(200).read().build(), t0);
    let third = s.queue_of(3);
    assert_eq!(dispatched_id(&mut s, t0), Some(3));
    s.insert(rq(4, 2).sector(108).read().build(), t0);
    assert_eq!(s.queue_of(2), third);
}

/// 4.19 `cfq_select_queue`: a used slice keeps the disk only while its queue, its group's
/// only one, waits for requests in flight; with none in flight it expires at once, idle
/// wait or not. /a's reader (thinking 3 ms, slice 1 to 101 ms) idles after its last read
/// completes at 97 ms (until 105 ms); /b's reader arrives at 102 ms, after the slice ended,
/// and is served then.
#[test]
fn cfq_select_queue_expires_a_used_slice_with_nothing_in_flight() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    for k in 0..25u64 {
        h.submit(rq(k, 1).sector(k * 8).read().group(1).at(ms(4 * k)));
    }
    h.submit(rq(1000, 2).sector(90_000_000).read().group(2).at(ms(102)));
    let out = h.run();
    assert_eq!(out.of(1000).dispatched, ms(102));
}

/// 4.19 `cfq_may_dispatch`: no async request is dispatched while sync requests are in
/// flight. With `slice_idle` 0 the reader's queue expires as soon as its only read (10 ms)
/// is dispatched, and writeback takes the slice, but its first write waits for the read.
#[test]
fn cfq_may_dispatch_holds_writes_while_a_read_is_in_flight() {
    let s = with(&[("slice_idle", 0)], &GroupTree::new());
    let mut h = Harness::new(s, 4, |r: &Request| if r.is_sync() { ms(10) } else { ms(1) });
    h.submit(rq(1, 1).sector(0).read());
    for i in 0..4u64 {
        h.submit(rq(10 + i, 2).sector(90_000_000 + i * 8).write());
    }
    let out = h.run();
    assert_eq!(out.of(10).dispatched, ms(10));
}

/// 4.19 `cfq_update_idle_window` leaves async queues alone: writeback never gets an idle
/// window, even from a process whose reads made its think time short. Reader 1's three
/// reads (0 to 5 ms) give it a valid mean think time of about 1 ms; its ten writes at 10 ms
/// wait for its idle wait to run out (13 ms) and then go to the 8-deep device together,
/// not one at a time as for a queue worth idling for (`cfq_may_dispatch`).
#[test]
fn cfq_update_idle_window_gives_writeback_no_idle_window() {
    let mut h = Harness::new(flat(), 8, |_| ms(1));
    for k in 0..3u64 {
        h.submit(rq(k, 1).sector(k * 8).read().at(ms(2 * k)));
    }
    for i in 0..10u64 {
        h.submit(rq(10 + i, 1).sector(90_000_000 + i * 8).write().at(ms(10)));
    }
    let out = h.run();
    let writes_at_13 = out
        .served
        .iter()
        .filter(|s| !s.rq.is_sync() && s.dispatched == ms(13))
        .count();
    assert_eq!(writes_at_13, 8);
}

/// 4.19 `cfq_completed_request`: a queue that waits busy (`cfq_should_wait_busy`) has its
/// slice extended by `slice_idle`, and by `group_idle` only when `slice_idle` is 0. With
/// `slice_idle` 20 ms, reader 1 (thinking 5 ms, slice 1 to 101 ms) waits busy after its last
/// read completes at 97 ms: its slice now ends at 117 ms, so reader 3's far request at 110
/// ms does not preempt it (`cfq_should_preempt`: slice not used) and is served when the
/// idle wait ends at 117 ms.
#[test]
fn cfq_completed_request_extends_a_busy_wait_by_slice_idle() {
    let s = flat_with(&[("slice_idle", 20)]);
    let mut h = Harness::new(s, 1, |_| ms(1));
    for k in 0..17u64 {
        h.submit(rq(k, 1).sector(k * 8).read().at(ms(6 * k)));
    }
    h.submit(rq(100, 3).sector(90_000_000).read().at(ms(110)));
    let out = h.run();
    assert_eq!(out.of(100).dispatched, ms(117));
}

/// `cfqd->rq_queued`, which `Scheduler::queued` reports: requests inserted and not yet
/// dispatched.
#[test]
fn cfq_counts_the_requests_it_holds_until_they_are_dispatched() {
    let mut s = flat();
    for i in 0..3u64 {
        s.insert(rq(i, 1).sector(i * 8).read().build(), Nanos::ZERO);
    }
    assert_eq!(s.queued(), 3);
    assert_eq!(dispatched_id(&mut s, Nanos::ZERO), Some(0));
    assert_eq!(s.queued(), 2);
}

/// 4.19 `cfq_close_cooperator` takes a cooperator only from the queue's own group
/// (`cur_cfqq->cfqg != cfqq->cfqg`), though the prio trees it searches hold every group's
/// queues. /a's reader empties at 1 ms beside /a's second, far reader; /b's reader has a
/// request 92 sectors from the head, but /a's reader idles for its next request (to 9 ms)
/// instead of handing the disk to /b at once.
#[test]
fn cfq_close_cooperator_stays_within_the_group() {
    let groups = two_groups(None, None);
    let mut h = Harness::new(with(&[], &groups), 1, |_| ms(1));
    h.submit(rq(1, 1).sector(0).read().group(1));
    h.submit(rq(2, 2).sector(500_000_000).read().group(1));
    h.submit(rq(3, 3).sector(100).read().group(2).at(Nanos::from_us(500)));
    let out = h.run();
    assert_eq!(out.of(3).dispatched, ms(9));
}
