//! The merge after a back merge (`attempt_back_merge` in `blk_mq_sched_try_merge`,
//! [`Scheduler::merge_next`]) through the layer: decisions the hand-built situation in
//! `tests.rs` left unpinned, found by mutation testing (docs/mutation-testing.md, "Mutation testing,
//! the block layer and latency_guard").

use super::*;

/// `attempt_back_merge`, then `blk_account_io_merge_request`: under bfq on a one-request
/// device, reads at 0 and 16 wait behind a busy read; a read at 8 back-merges into 0+8 and
/// makes it reach 16, whose request bfq merges away (`bfq_requests_merged`). The merged-away
/// request's bio rides on the grown request: it completes with it as a merged bio, and the
/// disk's statistics count two read merges (the bio's and the request's), one read I/O for
/// the three bios.
#[test]
fn a_request_merged_after_a_back_merge_completes_its_bio_as_merged_and_counts_a_merge() {
    let mut blk = BlockLayer::new(Bfq::new(Default::default()), Limits::depth(1));
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    blk.handle_submit(read(1000), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    blk.handle_submit(read(0), 1, ms(1));
    blk.handle_submit(read(16), 2, ms(1));
    blk.handle_submit(read(8), 3, ms(1));
    assert_eq!(
        blk.stat().read.merges,
        2,
        "the bio's merge and the request's"
    );
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(2), &mut done);
    let next = drain(&mut blk, ms(2));
    assert_eq!(next.len(), 1);
    done.clear();
    blk.handle_complete(next[0].id, true, ms(3), &mut done);
    let seen: Vec<(u32, bool)> = done.iter().map(|d| (d.token, d.merged)).collect();
    assert_eq!(seen, [(1, false), (3, true), (2, true)]);
    assert_eq!(blk.stat().read.ios, 2, "the busy read and the merged one");
    assert_eq!(blk.bios_completed(), 4);
}

/// Under bfq on a one-request device with `max_sectors` `max`: a read at 1000 busy at the
/// device, read 0+8 and `next` queued in process 1's sync queue (`next` later in its sort
/// tree), then a read at 8 back-merges into 0+8. Returns the tokens merged away and the
/// requests dispatched after the busy read completes (sector, sectors), sorted (bfq serves
/// the one nearer the head first, `bfq_choose_req`).
fn after_a_back_merge_before(next: Bio, max: u32) -> (Vec<u32>, Vec<(u64, u32)>) {
    let mut blk = BlockLayer::new(
        Bfq::new(Default::default()),
        Limits::depth(1).max_sectors(max),
    );
    blk.keep_merged_away();
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    blk.handle_submit(read(1000), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    blk.handle_submit(read(0), 1, ms(1));
    blk.handle_submit(next, 2, ms(1));
    blk.handle_submit(read(8), 3, ms(1));
    let gone = blk.take_merged_away();
    let mut done = Vec::new();
    let mut t = 2;
    let mut at_device = busy;
    let mut served = Vec::new();
    while let Some(r) = at_device.pop() {
        blk.handle_complete(r.id, true, ms(t), &mut done);
        at_device = drain(&mut blk, ms(t));
        served.extend(at_device.iter().map(|r| (r.sector, r.sectors)));
        t += 1;
    }
    assert!(blk.is_idle());
    served.sort_unstable();
    (gone, served)
}

/// `attempt_merge` (after `attempt_back_merge`): the next request merges only when it starts
/// where the grown one ends (`blk_rq_pos(req) + blk_rq_sectors(req) != blk_rq_pos(next)`).
#[test]
fn a_back_merge_does_not_merge_a_next_request_it_does_not_reach() {
    let next = Bio::new(CtxId(1), Op::Read, 24, 8).sync(true);
    let (gone, served) = after_a_back_merge_before(next, 1024);
    assert!(gone.is_empty());
    assert_eq!(served, [(0, 16), (24, 8)]);
}

/// `attempt_merge`: a next request of another operation (`req_op`) does not merge, however
/// contiguous: here a sync write, in the reader's sync queue, right after the grown read.
#[test]
fn a_back_merge_does_not_merge_a_contiguous_next_request_of_another_operation() {
    let next = Bio::new(CtxId(1), Op::Write, 16, 8).sync(true);
    let (gone, served) = after_a_back_merge_before(next, 1024);
    assert!(gone.is_empty());
    assert_eq!(served, [(0, 16), (16, 8)]);
}

/// `attempt_merge`: a next request of another I/O priority (`bi_ioprio`) does not merge,
/// however contiguous (bfq keeps both in the process's sync queue, which keeps the class of
/// its first request: the module's deviation).
#[test]
fn a_back_merge_does_not_merge_a_contiguous_next_request_of_another_priority() {
    let high = IoPrio {
        class: crate::request::IoClass::BestEffort,
        level: 0,
    };
    let next = Bio::new(CtxId(1), Op::Read, 16, 8).sync(true).prio(high);
    let (gone, served) = after_a_back_merge_before(next, 1024);
    assert!(gone.is_empty());
    assert_eq!(served, [(0, 16), (16, 8)]);
}

/// `attempt_merge` (`ll_merge_requests_fn`): the two merge only while together they fit in
/// the queue's `max_sectors` (`blk_rq_get_max_sectors`): 16 + 8 sectors merge under a
/// limit of 24, not under 16.
#[test]
fn a_back_merge_merges_the_next_request_only_within_max_sectors() {
    let next = || Bio::new(CtxId(1), Op::Read, 16, 8).sync(true);
    let (gone, served) = after_a_back_merge_before(next(), 24);
    assert_eq!(gone, [2], "exactly max_sectors together");
    assert_eq!(served, [(0, 24)]);
    let (gone, served) = after_a_back_merge_before(next(), 16);
    assert!(gone.is_empty(), "one sector over");
    assert_eq!(served, [(0, 16), (16, 8)]);
}

/// Under bfq (default settings) on a one-request device: a read at 1000 busy at the device
/// from 0 ms, then process 1's reads `queued` (sector, submitted at), then at `merge_at` a
/// read at 8 back-merges into 0+8 and reaches 16, which merges away. The busy read completes
/// at `done_at`; returns the sectors dispatched after it, in order.
fn served_after_merging_16_into_0(
    queued: &[(u64, Nanos)],
    merge_at: Nanos,
    done_at: Nanos,
) -> Vec<(u64, u32)> {
    let mut blk = BlockLayer::new(Bfq::new(Default::default()), Limits::depth(1));
    blk.keep_merged_away();
    let read = |sector| Bio::new(CtxId(1), Op::Read, sector, 8).sync(true);
    blk.handle_submit(read(1000), 1000u64, ms(0));
    let mut at_device = drain(&mut blk, ms(0));
    for &(sector, at) in queued {
        blk.handle_submit(read(sector), sector, at);
    }
    blk.handle_submit(read(8), 8, merge_at);
    assert_eq!(blk.take_merged_away(), [16]);
    let (mut done, mut served, mut t) = (Vec::new(), Vec::new(), done_at);
    while let Some(r) = at_device.pop() {
        blk.handle_complete(r.id, true, t, &mut done);
        at_device = drain(&mut blk, t);
        served.extend(at_device.iter().map(|r| (r.sector, r.sectors)));
        t += ms(1);
    }
    assert!(blk.is_idle());
    served
}

/// `bfq_requests_merged`: the grown request takes the queue's next-request place only if the
/// merged-away one held it (`bfqq->next_rq == next`). Here the next request is the read at
/// 2000, ahead of the head (1008), so it stays so: bfq serves 2000, then 3000 (nearer than
/// 0+24, `bfq_choose_req`), then 0+24.
#[test]
fn bfq_requests_merged_keeps_the_queue_s_next_request_when_another_one_merges_away() {
    let queued = [(0, ms(1)), (16, ms(1)), (2000, ms(1)), (3000, ms(1))];
    let served = served_after_merging_16_into_0(&queued, ms(1), ms(2));
    assert_eq!(served, [(2000, 8), (3000, 8), (0, 24)]);
}
