//! The block layer's decisions in hand-built situations.

mod accounting;
mod allocation;
mod asked;
mod decisions;
mod kyber_tags;
mod merge_next;
mod plug;
mod request_list;
mod tags;

use super::*;
use crate::bfq::Bfq;
use crate::deadline::Deadline;
use crate::mq_deadline::MqDeadline;
use crate::noop::Noop;
use std::collections::VecDeque;

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

fn write(ctx: u32, sector: u64, sectors: u32) -> Bio {
    Bio::new(CtxId(ctx), Op::Write, sector, sectors).sync(true)
}

fn drain<S: Scheduler, T: Copy>(blk: &mut BlockLayer<S, T>, now: Nanos) -> Vec<Request> {
    std::iter::from_fn(|| blk.poll_dispatch(now)).collect()
}

#[test]
fn a_bio_larger_than_max_sectors_is_split_and_completes_with_its_last_piece() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(8).max_sectors(8));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 100, 20), 7u32, ms(0));
    let rqs = drain(&mut blk, ms(0));
    let extents: Vec<(u64, u32)> = rqs.iter().map(|r| (r.sector, r.sectors)).collect();
    assert_eq!(extents, [(100, 8), (108, 8), (116, 4)]);
    let mut done = Vec::new();
    // Out of order: the bio completes only when the last of its pieces does.
    blk.handle_complete(rqs[2].id, true, ms(1), &mut done);
    blk.handle_complete(rqs[0].id, true, ms(2), &mut done);
    assert!(done.iter().all(|d| d.whole.is_none()));
    blk.handle_complete(rqs[1].id, true, ms(3), &mut done);
    assert_eq!(done.len(), 3);
    assert_eq!(done[2].whole, Some(20 * 512));
    assert!(done[2].ok);
    assert_eq!(blk.stat().read.ios, 3);
    assert_eq!(blk.stat().read.sectors, 20);
    assert!(blk.is_idle());
}

#[test]
fn a_failed_piece_fails_the_whole_split_bio() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(8).max_sectors(8));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 16), (), ms(0));
    let rqs = drain(&mut blk, ms(0));
    let mut done = Vec::new();
    blk.handle_complete(rqs[0].id, false, ms(1), &mut done);
    blk.handle_complete(rqs[1].id, true, ms(2), &mut done);
    assert_eq!(done[1].whole, Some(16 * 512));
    assert!(!done[1].ok);
}

#[test]
fn back_and_front_merges_ride_on_the_queued_request_and_complete_with_it() {
    // The device is busy, so requests stay queued long enough to be merged into.
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    blk.handle_submit(write(1, 1000, 8), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    assert_eq!(busy.len(), 1);
    blk.handle_submit(write(1, 2000, 8), 1, ms(1));
    blk.handle_submit(write(1, 2008, 8), 2, ms(1)); // back merge
    blk.handle_submit(write(1, 1992, 8), 3, ms(1)); // front merge
    assert_eq!(blk.counters().merged, 2);
    assert_eq!(blk.stat().write.merges, 2);
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(2), &mut done);
    let next = drain(&mut blk, ms(2));
    assert_eq!((next[0].sector, next[0].sectors), (1992, 24));
    let segs: Vec<(u64, u32)> = blk
        .segments(next[0].id)
        .unwrap()
        .map(|s| (s.sector, s.sectors))
        .collect();
    assert_eq!(segs, [(2000, 8), (2008, 8), (1992, 8)]);
    done.clear();
    blk.handle_complete(next[0].id, true, ms(3), &mut done);
    let tokens: Vec<u32> = done.iter().map(|d| d.token).collect();
    assert_eq!(tokens, [1, 2, 3]);
    assert_eq!(
        done.iter().map(|d| d.merged).collect::<Vec<_>>(),
        [false, true, true]
    );
    // One request completed for three bios: the kernel's ios and merges.
    assert_eq!(blk.stat().write.ios, 2);
    assert_eq!(blk.stat().write.sectors, 32);
    assert_eq!(blk.counters().completed, 2, "two requests");
    assert_eq!(blk.bios_completed(), 4, "carrying four bios");
}

#[test]
fn a_back_merge_that_reaches_the_next_queued_request_merges_that_request_too() {
    // blk_mq_sched_try_merge: after bio_attempt_back_merge, attempt_back_merge merges the
    // request elv_latter_request finds (bfq's: the next in the queue's sort tree) when it
    // now continues the grown one (attempt_merge); bfq_requests_merged drops it.
    let mut blk = BlockLayer::new(Bfq::new(Default::default()), Limits::depth(1));
    blk.keep_merged_away();
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    blk.handle_submit(read(1000), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    assert_eq!(busy.len(), 1);
    blk.handle_submit(read(0), 1, ms(1));
    blk.handle_submit(read(16), 2, ms(1));
    assert!(blk.take_merged_away().is_empty());
    blk.handle_submit(read(8), 3, ms(1)); // back merge into 0+8, which reaches 16
    assert_eq!(blk.take_merged_away(), [2]);
    assert_eq!(blk.counters().merged, 2);
    assert_eq!(
        blk.counters().inserted,
        2,
        "16+8 counted merged, not inserted"
    );
    assert_eq!(blk.scheduler().queued(), 1);
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(2), &mut done);
    let next = drain(&mut blk, ms(2));
    assert_eq!((next[0].sector, next[0].sectors), (0, 24));
    let tokens: Vec<u32> = blk.segments(next[0].id).unwrap().map(|s| s.token).collect();
    assert_eq!(tokens, [1, 3, 2]);
    done.clear();
    blk.handle_complete(next[0].id, true, ms(3), &mut done);
    assert_eq!(done.len(), 3);
    assert!(blk.is_idle());
}

#[test]
fn mq_deadline_merges_the_next_request_after_a_back_merge_and_the_former_after_an_insertion() {
    // blk_mq_sched_try_merge -> attempt_back_merge (elv_rb_latter_request, dd_merged_requests)
    // for a bio; elv_attempt_insert_merge's loop (the request ending where the grown one
    // starts) for a request merged at its insertion.
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    for insertion in [false, true] {
        let mut blk = BlockLayer::new(MqDeadline::default(), Limits::depth(1));
        blk.keep_merged_away();
        blk.handle_submit(read(1000), 0u32, ms(0));
        let busy = drain(&mut blk, ms(0));
        for (token, sector) in [(1, 0), (2, 16), (3, 24)] {
            let mut own = read(sector);
            own.own_request = true;
            blk.handle_submit(own, token, ms(1));
        }
        let mut bio = read(8);
        bio.insertion_merge = insertion;
        // A back merge into 0+8: a bio's reaches 16+8 after it; an insertion's finds
        // nothing ending at 0. 24+8 was never contiguous with 0+8 before 16+8 joined.
        blk.handle_submit(bio, 4, ms(1));
        let gone = blk.take_merged_away();
        assert_eq!(gone, if insertion { vec![] } else { vec![2] });
        let mut bio = read(32);
        bio.insertion_merge = insertion;
        // A back merge into 24+8: a bio's finds nothing after it; an insertion's goes on
        // into 16+8, then into 0+16 (0+40 in all).
        blk.handle_submit(bio, 5, ms(1));
        let gone = blk.take_merged_away();
        assert_eq!(gone, if insertion { vec![3, 2] } else { vec![] });
        let (queued, whole, tokens) = if insertion {
            (1, (0, 40), vec![1, 4, 2, 3, 5])
        } else {
            (2, (0, 24), vec![1, 4, 2])
        };
        assert_eq!(blk.scheduler().queued(), queued, "{insertion}");
        assert_eq!(blk.counters().inserted, 1 + queued as u64, "{insertion}");
        let mut done = Vec::new();
        blk.handle_complete(busy[0].id, true, ms(2), &mut done);
        let next = drain(&mut blk, ms(2));
        assert_eq!((next[0].sector, next[0].sectors), whole, "{insertion}");
        let got: Vec<u32> = blk.segments(next[0].id).unwrap().map(|s| s.token).collect();
        assert_eq!(got, tokens, "{insertion}");
    }
}

#[test]
fn nomerges_none_inserts_every_bio() {
    let limits = Limits::depth(1).nomerges(NoMerges::None);
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), limits);
    blk.handle_submit(write(1, 0, 8), (), ms(0));
    drain(&mut blk, ms(0));
    blk.handle_submit(write(1, 100, 8), (), ms(0));
    blk.handle_submit(write(1, 108, 8), (), ms(0));
    assert_eq!(blk.counters().merged, 0);
    assert_eq!(blk.counters().inserted, 3);
}

/// A bio marked `own_request` (a replayed kernel request that `blk_attempt_plug_merge` and
/// the scheduler's `bio_merge` did not merge) is not offered for merging, while a later bio
/// still merges into its request.
#[test]
fn an_own_request_bio_is_inserted_and_later_bios_still_merge_into_it() {
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    blk.handle_submit(write(1, 0, 8), (), ms(0));
    drain(&mut blk, ms(0));
    blk.handle_submit(write(1, 100, 8), (), ms(0));
    let mut own = write(1, 108, 8);
    own.own_request = true;
    blk.handle_submit(own, (), ms(0));
    assert_eq!(blk.counters().merged, 0, "the own request merged");
    assert_eq!(blk.counters().inserted, 3);
    blk.handle_submit(write(1, 116, 8), (), ms(0));
    assert_eq!(blk.counters().merged, 1, "a later bio merges into it");
}

/// Under none, a bio marked `issue_directly` (its submitter's `blk_mq_try_issue_directly`)
/// goes to the device at the next dispatch ahead of a request already queued; under a policy
/// that does not issue directly the mark is ignored.
#[test]
fn a_direct_issue_passes_the_queued_requests_under_none_only() {
    fn order<S: Scheduler>(sched: S) -> Vec<u64> {
        let mut blk = BlockLayer::new(sched, Limits::depth(4));
        blk.handle_submit(write(1, 100, 8), (), ms(0));
        let mut direct = write(2, 900, 8);
        direct.issue_directly = true;
        blk.handle_submit(direct, (), ms(0));
        assert_eq!(blk.queued(), 2);
        drain(&mut blk, ms(0)).iter().map(|r| r.sector).collect()
    }
    assert_eq!(order(Noop::new()), [900, 100]);
    assert_eq!(order(Deadline::new(Default::default())), [100, 900]);
}

/// The queue's `nr_requests`, whose fractions are blk-iolatency's scale steps
/// (`scale_cookie_change`, `scale_change` read `q->nr_requests` in v6.1): without an elevator
/// the tag set's depth (`blk_mq_init_allocated_queue`), with one twice that, at most 256
/// (`blk_mq_init_sched`), and the request list's 128 (`BLKDEV_MAX_RQ`) under a policy from
/// before blk-mq. A disk holding one request behind a host's 32 tags has 32 and 64, not 1.
#[test]
fn nr_requests_is_the_tag_sets_depth_under_none_and_twice_it_at_most_256_under_an_elevator() {
    fn of<S: Scheduler>(sched: S, depth: usize, host_tags: Option<usize>) -> usize {
        let mut blk: BlockLayer<S, ()> = BlockLayer::new(sched, Limits::depth(depth));
        if let Some(t) = host_tags {
            blk.set_host_tags(t);
        }
        blk.nr_requests()
    }
    let mq = || crate::mq_deadline::MqDeadline::new(Default::default());
    assert_eq!(of(Noop::new(), 1, Some(DISK_HOST_TAGS)), 32);
    assert_eq!(of(mq(), 1, Some(DISK_HOST_TAGS)), 64);
    assert_eq!(of(Noop::new(), 1024, None), 1024);
    assert_eq!(of(mq(), 1024, None), 256);
    assert_eq!(
        of(Noop::new(), 1, None),
        1,
        "a device's own queue as the tag set"
    );
    let legacy = Deadline::new(Default::default());
    assert_eq!(of(legacy, 1, Some(DISK_HOST_TAGS)), BLKDEV_MAX_RQ as usize);
}

#[test]
fn the_device_never_holds_more_than_its_queue_depth() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(2));
    for i in 0..5 {
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, i * 100, 8), i, ms(0));
    }
    let first = drain(&mut blk, ms(0));
    assert_eq!(first.len(), 2);
    assert_eq!(blk.in_flight(), 2);
    assert_eq!(blk.queued(), 3);
    let mut done = Vec::new();
    blk.handle_complete(first[0].id, true, ms(1), &mut done);
    assert_eq!(drain(&mut blk, ms(1)).len(), 1);
    assert_eq!(blk.in_flight(), 2);
}

#[test]
fn a_requeued_request_goes_before_the_schedulers_next_choice() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(1));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), 0u8, ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 80, 8), 1, ms(0));
    let a = drain(&mut blk, ms(0));
    blk.handle_requeue(a[0].id, ms(1));
    assert_eq!(blk.in_flight(), 0);
    let again = drain(&mut blk, ms(1));
    assert_eq!(again[0].id, a[0].id);
    assert_eq!(
        blk.counters().dispatched,
        1,
        "a requeue is not a new dispatch"
    );
}

#[test]
fn a_run_with_every_driver_tag_taken_takes_the_schedulers_next_choice_to_wait_for_one() {
    // blk-mq over a driver without a dispatch budget (loop, NVMe): `__blk_mq_do_dispatch_sched`
    // takes the scheduler's request before `blk_mq_get_driver_tag` fails, and
    // `blk_mq_dispatch_rq_list` parks it on `hctx->dispatch`, issued first at the next free
    // tag; a later run finds `hctx->dispatch` busy and does not ask the scheduler
    // (`__blk_mq_sched_dispatch_requests`). So mq-deadline chooses 5000 while it is alone,
    // before 2000 (nearer the head, `deadline_next_request`) arrives.
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    let order = |parks: bool| {
        let limits = Limits::depth(1).dequeues_without_driver_tag(parks);
        let mut blk = BlockLayer::new(MqDeadline::default(), limits);
        blk.handle_submit(read(1000), 0u32, ms(0));
        let busy = drain(&mut blk, ms(0));
        assert!(blk.device_full());
        blk.handle_submit(read(5000), 1, ms(1));
        assert!(drain(&mut blk, ms(1)).is_empty());
        blk.handle_submit(read(2000), 2, ms(2));
        assert!(drain(&mut blk, ms(2)).is_empty());
        assert_eq!(blk.in_flight(), 1);
        assert_eq!(blk.queued(), 2);
        let mut done = Vec::new();
        blk.handle_complete(busy[0].id, true, ms(3), &mut done);
        let mut sectors = Vec::new();
        while let Some(rq) = blk.poll_dispatch(ms(3)) {
            sectors.push(rq.sector);
            blk.handle_complete(rq.id, true, ms(4), &mut done);
        }
        assert_eq!(blk.counters().dispatched, 3, "each request dispatched once");
        assert!(blk.is_idle());
        sectors
    };
    assert_eq!(order(true), [5000, 2000]);
    assert_eq!(order(false), [2000, 5000]);
}

#[test]
fn a_run_that_finds_a_request_waiting_for_a_driver_tag_leaves_the_scheduler_alone() {
    // `__blk_mq_sched_dispatch_requests` issues what waits on `hctx->dispatch` first and, when
    // `blk_mq_dispatch_rq_list` issues none of it (no driver tag), returns without asking the
    // scheduler. So one request waits for a tag, not one per run: 5000 waits, 6000 and 5500
    // stay with mq-deadline, which takes 5500 first (the nearer one from 5000's end,
    // `deadline_from_pos`) once 5000 is issued.
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    let limits = Limits::depth(1).dequeues_without_driver_tag(true);
    let mut blk = BlockLayer::new(MqDeadline::default(), limits);
    blk.handle_submit(read(1000), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    for (t, sector) in [(1, 5000), (2, 6000), (3, 5500)] {
        blk.handle_submit(read(sector), t, ms(t.into()));
        assert!(drain(&mut blk, ms(t.into())).is_empty());
    }
    assert_eq!(blk.scheduler().queued(), 2, "only 5000 left the scheduler");
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(4), &mut done);
    let mut sectors = Vec::new();
    while let Some(rq) = blk.poll_dispatch(ms(4)) {
        sectors.push(rq.sector);
        blk.handle_complete(rq.id, true, ms(5), &mut done);
    }
    assert_eq!(sectors, [5000, 5500, 6000]);
}

#[test]
fn a_driver_that_keeps_parked_requests_learns_each_once_in_the_order_parked() {
    // A replay logging the policy's choices when they are made (bfq's log notes a choice in
    // `bfq_dispatch_request`, before `blk_mq_get_driver_tag` fails) asks for the requests
    // parked on `hctx->dispatch`: 5000 is parked at its run, and the head of the requeued
    // list is what `poll_dispatch` issues at the next free tag.
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    let limits = Limits::depth(1).dequeues_without_driver_tag(true);
    let mut blk = BlockLayer::new(MqDeadline::default(), limits);
    blk.handle_submit(read(1000), 0u32, ms(0));
    assert_eq!(drain(&mut blk, ms(0)).len(), 1);
    blk.handle_submit(read(5000), 1, ms(1));
    assert!(drain(&mut blk, ms(1)).is_empty());
    assert!(blk.take_parked().is_empty(), "kept only when asked");
    let parked = blk.next_requeued().expect("5000 waits for a tag");
    assert_eq!(blk.segments(parked).map(|s| s.count()), Some(1));

    let mut blk = BlockLayer::new(MqDeadline::default(), limits);
    blk.keep_parked();
    blk.handle_submit(read(1000), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    assert!(
        blk.take_parked().is_empty(),
        "a request issued at once is not parked"
    );
    assert_eq!(blk.next_requeued(), None);
    blk.handle_submit(read(5000), 1, ms(1));
    assert!(drain(&mut blk, ms(1)).is_empty());
    let parked = blk.take_parked();
    assert_eq!(parked.len(), 1);
    assert_eq!(blk.next_requeued(), Some(parked[0]));
    assert!(
        blk.take_parked().is_empty(),
        "each parked request is given once"
    );
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(2), &mut done);
    let rq = blk.poll_dispatch(ms(2)).expect("the tag is free");
    assert_eq!((rq.id, rq.sector), (parked[0], 5000));
    assert_eq!(blk.next_requeued(), None);
}

/// A scheduler that idles until 10 ms once, then dispatches.
struct IdleOnce(Noop, bool);

impl Scheduler for IdleOnce {
    fn name(&self) -> &'static str {
        "idle-once"
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.0.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        if !self.1 && now < ms(10) {
            return Dispatch::Idle { until: ms(10) };
        }
        self.1 = true;
        self.0.dispatch(now)
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.0.complete(rq, now);
    }
    fn queued(&self) -> usize {
        self.0.queued()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), crate::TunableError> {
        self.0.set_tunable(name, value)
    }
}

#[test]
fn the_schedulers_idle_deadline_is_the_layers_timeout() {
    let mut blk = BlockLayer::new(IdleOnce(Noop::new(), false), Limits::depth(4));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    assert_eq!(blk.poll_timeout(), Some(ms(10)));
    let (_, gen) = blk.timer().unwrap();
    // Asked again before the deadline (an insert): same deadline, same generation.
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 50, 8), (), ms(5));
    assert!(drain(&mut blk, ms(5)).is_empty());
    assert_eq!(blk.timer(), Some((ms(10), gen)));
    blk.handle_timeout(ms(9));
    assert!(drain(&mut blk, ms(9)).is_empty());
    blk.handle_timeout(ms(10));
    assert_eq!(drain(&mut blk, ms(10)).len(), 2);
    assert_eq!(blk.poll_timeout(), None);
}

/// A scheduler with a timer of its own, armed for 10 ms by an insertion, counting its
/// firings (as bfq's idle slice timer, `bfq_arm_slice_timer`'s hrtimer, armed at a completion).
struct OwnTimer(Noop, Option<Nanos>, u32);

impl Scheduler for OwnTimer {
    fn name(&self) -> &'static str {
        "own-timer"
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.0.insert(rq, now);
        self.1 = Some(ms(10));
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.0.dispatch(now)
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.0.complete(rq, now);
    }
    fn next_timer(&self) -> Option<Nanos> {
        self.1
    }
    fn fire_timer(&mut self, _now: Nanos) {
        self.1 = None;
        self.2 += 1;
    }
    fn queued(&self) -> usize {
        self.0.queued()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), crate::TunableError> {
        self.0.set_tunable(name, value)
    }
}

/// A kernel scheduler's timer acts at its own time (bfq's `bfq_idle_slice_timer` expires the
/// queue it idled for whether or not the queue runs then): the layer reports it as its
/// timeout and fires it there, with no dispatch asked in between.
#[test]
fn the_schedulers_own_timer_fires_at_the_layers_timeout_without_a_dispatch() {
    let mut blk = BlockLayer::new(OwnTimer(Noop::new(), None, 0), Limits::depth(4));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    assert_eq!(blk.poll_timeout(), Some(ms(10)));
    blk.handle_timeout(ms(9));
    assert_eq!(blk.scheduler().2, 0, "not yet");
    blk.handle_timeout(ms(10));
    assert_eq!(blk.scheduler().2, 1);
    assert_eq!(blk.poll_timeout(), None);
    assert_eq!(drain(&mut blk, ms(10)).len(), 1, "the run it schedules");
}

/// bfq has one idle timer per device (`bfqd->idle_slice_timer`, armed by
/// `bfq_arm_slice_timer`); its handler `bfq_idle_slice_timer_body` runs once the hrtimer
/// interrupt does, a few microseconds to tens of them after the deadline. Where a replay
/// knows when the kernel's handler ran, the scheduler's own timer fires then, if that falls
/// between its deadline and the modelled latency, and a full latency late otherwise.
#[test]
fn the_schedulers_own_timer_fires_when_the_recorded_kernel_timer_did() {
    let us = Nanos::from_us;
    let fired_at = |fires: Vec<Nanos>| {
        let mut blk = BlockLayer::new(OwnTimer(Noop::new(), None, 0), Limits::depth(4));
        blk.set_timer_latency(us(30));
        blk.set_timer_fires(fires);
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
        blk.poll_timeout()
    };
    let deadline = ms(10);
    assert_eq!(
        fired_at(vec![]),
        Some(deadline + us(30)),
        "no record: the latency"
    );
    assert_eq!(
        fired_at(vec![deadline - us(1), deadline + us(5), deadline + us(9)]),
        Some(deadline + us(5)),
        "the first recorded firing from the deadline on"
    );
    assert_eq!(
        fired_at(vec![deadline + us(40)]),
        Some(deadline + us(30)),
        "a firing past the latency is another arming's"
    );
    let mut blk = BlockLayer::new(OwnTimer(Noop::new(), None, 0), Limits::depth(4));
    blk.set_timer_latency(us(30));
    blk.set_timer_fires(vec![deadline + us(5)]);
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    blk.handle_timeout(deadline + us(4));
    assert_eq!(blk.scheduler().2, 0, "not yet");
    blk.handle_timeout(deadline + us(5));
    assert_eq!(blk.scheduler().2, 1, "fired at the recorded time");
}

/// An hrtimer runs its handler once the clock has reached its expiry
/// (`__hrtimer_run_queues` takes every timer whose soft expiry is at or before `now`), so a
/// recorded firing of bfq's idle slice timer exactly at the deadline belongs to this arming:
/// the scheduler's own timer fires then, not a full latency later.
#[test]
fn a_recorded_timer_firing_exactly_at_the_deadline_is_this_armings() {
    let us = Nanos::from_us;
    let mut blk = BlockLayer::new(OwnTimer(Noop::new(), None, 0), Limits::depth(4));
    blk.set_timer_latency(us(30));
    blk.set_timer_fires(vec![ms(10)]);
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    assert_eq!(blk.poll_timeout(), Some(ms(10)));
    blk.handle_timeout(ms(10));
    assert_eq!(blk.scheduler().2, 1, "fired at the deadline");
}

/// Holds every bio until 5 ms.
struct HoldUntil5;

impl QosHook for HoldUntil5 {
    fn name(&self) -> &'static str {
        "hold"
    }
    fn throttle(&mut self, _bio: &Request, now: Nanos) -> Admit {
        if now < ms(5) {
            Admit::Wait { until: ms(5) }
        } else {
            Admit::Now
        }
    }
}

#[test]
fn a_bio_held_by_a_controller_reaches_the_scheduler_when_released() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    blk.add_qos(Box::new(HoldUntil5));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    assert_eq!(blk.queued(), 1);
    assert_eq!(blk.poll_timeout(), Some(ms(5)));
    blk.handle_timeout(ms(5));
    let rqs = drain(&mut blk, ms(5));
    assert_eq!(rqs.len(), 1);
    assert_eq!(
        rqs[0].submitted,
        ms(0),
        "its latency counts from its submission"
    );
}

#[test]
fn a_switch_drains_the_old_scheduler_then_gives_the_new_one_the_held_bios() {
    let mut blk: BlockLayer<Box<dyn Scheduler>, u32> =
        BlockLayer::new(Box::new(Noop::new()), Limits::depth(1));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), 0, ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 8, 8), 1, ms(0));
    let a = drain(&mut blk, ms(0));
    assert!(blk
        .switch_scheduler(Box::new(Deadline::new(Default::default())))
        .is_none());
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 800, 8), 2, ms(1));
    assert_eq!(blk.scheduler().name(), "noop");
    let mut done = Vec::new();
    blk.handle_complete(a[0].id, true, ms(2), &mut done);
    let b = drain(&mut blk, ms(2));
    assert_eq!(b[0].sector, 8, "the old scheduler drains first");
    blk.handle_complete(b[0].id, true, ms(3), &mut done);
    let c = drain(&mut blk, ms(3));
    assert_eq!(blk.scheduler().name(), "deadline");
    assert_eq!(c[0].sector, 800);
    assert!(!blk.switching());
}

#[test]
fn stat_counts_time_from_allocation_and_busy_time_once() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(1));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
    blk.handle_submit(Bio::new(CtxId(2), Op::Read, 80, 8), (), ms(0));
    let mut done = Vec::new();
    let a = drain(&mut blk, ms(0));
    blk.handle_complete(a[0].id, true, ms(4), &mut done);
    let b = drain(&mut blk, ms(4));
    blk.handle_complete(b[0].id, true, ms(10), &mut done);
    let f = blk.stat().fields(ms(10));
    assert_eq!(f[0], 2, "reads completed");
    assert_eq!(
        f[3],
        4 + 10,
        "read ticks count the second's wait in the scheduler"
    );
    assert_eq!(f[9], 10, "io_ticks: busy from 0 to 10 ms");
    assert_eq!(f[10], 14);
    let line = blk.stat().to_string();
    let back = DiskStat::parse(&line).unwrap();
    assert_eq!(back.fields(ms(10)), f);
}

#[test]
fn reads_are_sync_whatever_the_bio_says() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(1));
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8).sync(false), (), ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Write, 80, 8), (), ms(0));
    let a = drain(&mut blk, ms(0));
    assert!(a[0].sync);
    let mut done = Vec::new();
    blk.handle_complete(a[0].id, true, ms(1), &mut done);
    assert!(!drain(&mut blk, ms(1))[0].sync);
}

#[test]
fn under_none_a_bio_merges_only_while_the_device_is_full() {
    // blk_mq_try_issue_directly: with room at the device the request it would merge into is
    // already there; only a full device leaves requests waiting in the software queue.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(2));
    blk.handle_submit(write(1, 0, 8), (), ms(0));
    blk.handle_submit(write(1, 8, 8), (), ms(0));
    assert_eq!(blk.counters().merged, 0, "the device had room for both");
    assert_eq!(drain(&mut blk, ms(0)).len(), 2);
    blk.handle_submit(write(1, 16, 8), (), ms(0));
    blk.handle_submit(write(1, 24, 8), (), ms(0));
    assert_eq!(
        blk.counters().merged,
        1,
        "the device is full: the second rides on the first"
    );
    assert_eq!(blk.stat().write.merges, 1);
}

/// Keeps every bio in its own queue and lets one go at each 10 ms tick; records each bio's
/// end.
#[derive(Default)]
struct Ticker {
    queue: VecDeque<u64>,
    out: VecDeque<u64>,
    next: Option<Nanos>,
    ended: std::rc::Rc<std::cell::RefCell<Vec<(u64, GroupId, u64)>>>,
}

impl QosHook for Ticker {
    fn name(&self) -> &'static str {
        "ticker"
    }
    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        self.queue.push_back(bio.id.0);
        self.next.get_or_insert(now + ms(10));
        Admit::Hold
    }
    fn poll_release(&mut self, _now: Nanos) -> Option<u64> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.next
    }
    fn handle_timeout(&mut self, now: Nanos) {
        self.out.extend(self.queue.pop_front());
        self.next = (!self.queue.is_empty()).then_some(now + ms(10));
    }
    fn done_bio(&mut self, bio: &BioEnd, _now: Nanos) {
        self.ended
            .borrow_mut()
            .push((bio.key, bio.group, bio.bytes));
    }
}

#[test]
fn a_hook_releases_a_held_bio_at_its_own_timer_and_sees_every_bio_end() {
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    let t = Ticker::default();
    let ended = t.ended.clone();
    blk.add_qos(Box::new(t));
    let g = GroupId(3);
    blk.handle_submit(write(1, 0, 8).group(g), 0u32, ms(0));
    blk.handle_submit(write(1, 8, 8).group(g), 1, ms(0));
    assert_eq!(blk.queued(), 2);
    assert!(drain(&mut blk, ms(0)).is_empty());
    // The layer's timeout is the hook's timer.
    assert_eq!(blk.poll_timeout(), Some(ms(10)));
    assert_eq!(blk.qos_timeout(), Some(ms(10)));
    blk.handle_timeout(ms(10));
    let first = drain(&mut blk, ms(10));
    assert_eq!(first.len(), 1, "one bio per tick");
    assert_eq!(
        first[0].submitted,
        ms(0),
        "its latency counts from submission"
    );
    assert_eq!(blk.poll_timeout(), Some(ms(20)));
    let mut done = Vec::new();
    blk.handle_complete(first[0].id, true, ms(15), &mut done);
    assert!(
        drain(&mut blk, ms(15)).is_empty(),
        "a completion does not release it"
    );
    blk.handle_qos_timeout(ms(20));
    let second = drain(&mut blk, ms(20));
    assert_eq!(second.len(), 1);
    blk.handle_complete(second[0].id, true, ms(25), &mut done);
    assert_eq!(blk.poll_timeout(), None);
    assert!(blk.is_idle());
    assert_eq!(*ended.borrow(), vec![(1, g, 4096), (2, g, 4096)]);
}

#[test]
fn the_device_bounds_merges_and_splits_with_its_segment_limit() {
    // ll_back_merge_fn: a merge may not take the request past the queue's segment limit;
    // bio_split_rw cuts a bio at it. Two segments of a page here: 16 sectors.
    let limits = Limits::depth(1).max_segments(2);
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), limits);
    blk.handle_submit(write(1, 0, 8), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    blk.handle_submit(write(1, 100, 8), 1, ms(1));
    blk.handle_submit(write(1, 108, 8), 2, ms(1));
    blk.handle_submit(write(1, 116, 8), 3, ms(1));
    assert_eq!(
        blk.counters().merged,
        1,
        "the third page would be a third segment"
    );
    assert_eq!(blk.counters().inserted, 3);
    blk.handle_submit(write(1, 1000, 24), 4, ms(1));
    assert_eq!(blk.counters().inserted, 5, "24 sectors split at 16");
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(2), &mut done);
    let next = drain(&mut blk, ms(2));
    assert_eq!((next[0].sector, next[0].sectors), (100, 16));
}

#[test]
fn a_device_that_states_no_limit_merges_up_to_256_sectors() {
    // With no max_sectors or max_segments, merges stop at DEFAULT_MERGE_SECTORS (ATA's
    // 128 KiB), whatever the policy; a device stating more lets them grow further.
    for (limits, largest) in [
        (Limits::depth(1), DEFAULT_MERGE_SECTORS),
        (Limits::depth(1).max_segments(128), 1024),
        (Limits::depth(1).max_sectors(2560).max_segments(64), 512),
    ] {
        let mut blk = BlockLayer::new(Deadline::new(Default::default()), limits);
        blk.handle_submit(write(1, 0, 8), 0u32, ms(0));
        let busy = drain(&mut blk, ms(0));
        for i in 0..200u32 {
            blk.handle_submit(write(1, 10_000 + u64::from(i) * 8, 8), i + 1, ms(1));
        }
        let mut done = Vec::new();
        blk.handle_complete(busy[0].id, true, ms(2), &mut done);
        let next = drain(&mut blk, ms(2));
        assert_eq!(next[0].sectors, largest.min(1600), "{limits:?}");
    }
}

#[test]
fn a_request_is_tagged_at_insertion_while_a_host_tag_is_free_else_when_one_is_freed() {
    // blk_mq_get_tag: a request allocated while a tag is free takes it at once; otherwise it
    // waits for a holder to complete (the tags go in the order they were asked for). io.cost's
    // ioc_rqos_done counts rq_wait = start_time_ns - alloc_time_ns, start_time_ns being the
    // moment it got its tag: `Done::tagged`. A one-request device behind a host of two tags:
    // reads 0 and 1 take the tags at 0 and 1 ms, read 2 (2 ms) waits for read 0's tag, freed at
    // 5 ms; read 1 waits at the device with its tag until 5 ms, read 2 until 8 ms.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(1));
    blk.set_host_tags(2);
    let mut first = Vec::new();
    for i in 0..3u64 {
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, i * 100, 8), i, ms(i));
        first.extend(drain(&mut blk, ms(i)));
    }
    let mut done = Vec::new();
    blk.handle_complete(first[0].id, true, ms(5), &mut done);
    let second = drain(&mut blk, ms(5));
    blk.handle_complete(second[0].id, true, ms(8), &mut done);
    let third = drain(&mut blk, ms(8));
    blk.handle_complete(third[0].id, true, ms(9), &mut done);
    let seen: Vec<(u64, Nanos, Nanos, Nanos)> = done
        .iter()
        .map(|d| (d.token, d.submitted, d.tagged, d.dispatched))
        .collect();
    assert_eq!(
        seen,
        [
            (0, ms(0), ms(0), ms(0)),
            (1, ms(1), ms(1), ms(5)),
            (2, ms(2), ms(5), ms(8)),
        ]
    );
    // Without host tags the tag is the device's slot: tagged at dispatch.
    assert_eq!(second_of_two_reads_tagged_at(Noop::new()), ms(5));
}

/// Two reads submitted at 0 and 1 ms to a one-slot device under `policy`, the first completing
/// at 5 ms: when the second got its tag.
fn second_of_two_reads_tagged_at<S: Scheduler>(policy: S) -> Nanos {
    let mut blk = BlockLayer::new(policy, Limits::depth(1));
    for i in 0..2u64 {
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, i * 100, 8), i, ms(i));
    }
    let mut done = Vec::new();
    let first = drain(&mut blk, ms(1));
    blk.handle_complete(first[0].id, true, ms(5), &mut done);
    let second = drain(&mut blk, ms(5));
    blk.handle_complete(second[0].id, true, ms(8), &mut done);
    done[1].tagged
}

/// blk-mq's two steps under a policy that takes requests at their insertion only
/// (mq-deadline):
/// a request allocated (`__blk_mq_alloc_requests`, `block_getrq`) waits in the layer, counted
/// as queued, and reaches the policy, dispatchable, only at its insertion (`block_rq_insert`,
/// after the submitter's plug is flushed); a request submitted meanwhile goes first.
#[test]
fn an_allocated_request_reaches_the_policy_at_its_insertion() {
    let mut blk = BlockLayer::new(crate::mq_deadline::MqDeadline::default(), Limits::depth(8));
    let mut plugged = write(1, 0, 8);
    plugged.own_request = true;
    let id = blk
        .handle_allocate(plugged, 1u32, ms(0))
        .expect("allocated ahead");
    assert_eq!((blk.queued(), blk.counters().inserted), (1, 0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    blk.handle_submit(write(2, 5000, 8), 2, ms(1));
    assert_eq!(drain(&mut blk, ms(1)).len(), 1);
    blk.handle_insert(id, ms(2));
    let rqs = drain(&mut blk, ms(2));
    assert_eq!(rqs.len(), 1);
    assert_eq!(rqs[0].id, id);
    let mut done = Vec::new();
    blk.handle_complete(id, true, ms(3), &mut done);
    assert_eq!(done[0].token, 1);
    // Inserted with the other write gone: itself alone in the scheduler.
    assert_eq!(done[0].queued, 1);
    assert_eq!(blk.queued(), 0);
}

/// `blk_mq_try_issue_directly`: under none a bio the kernel issued without inserting it goes
/// the whole way at its allocation (`handle_allocate` holds no request for a later insertion),
/// while one the kernel inserted later is held, tag and all, until `handle_insert`.
#[test]
fn under_none_a_directly_issued_bio_is_not_held_for_a_later_insertion() {
    let mut blk = BlockLayer::new(Noop::default(), Limits::depth(8));
    let mut direct = write(1, 0, 8);
    direct.own_request = true;
    direct.issue_directly = true;
    assert_eq!(blk.handle_allocate(direct, 1u32, ms(0)), None);
    assert_eq!(drain(&mut blk, ms(0)).len(), 1);
    let mut plugged = write(2, 5000, 8);
    plugged.own_request = true;
    let id = blk
        .handle_allocate(plugged, 2u32, ms(1))
        .expect("held until its insertion");
    assert!(drain(&mut blk, ms(1)).is_empty());
    blk.handle_insert(id, ms(2));
    assert_eq!(drain(&mut blk, ms(2)).len(), 1);
}

/// A bio passing an rq_qos controller (`rq_qos_throttle` in `blk_mq_submit_bio`, before the
/// allocation) is not held for a later insertion: `handle_allocate` takes it the whole way, as
/// `handle_submit`, and the controller releases it to the scheduler.
#[test]
fn a_bio_behind_a_controller_is_not_held_for_a_later_insertion() {
    let mut blk = BlockLayer::new(crate::mq_deadline::MqDeadline::default(), Limits::depth(8));
    blk.add_qos(Box::new(HoldUntil5));
    let mut plugged = write(1, 0, 8);
    plugged.own_request = true;
    assert_eq!(blk.handle_allocate(plugged, 1u32, ms(0)), None);
    assert!(drain(&mut blk, ms(0)).is_empty());
    blk.handle_timeout(ms(5));
    assert_eq!(drain(&mut blk, ms(5)).len(), 1);
}
