//! An allocation whose task sleeps for its tag, through the layer (`handle_allocate_sleeping`,
//! `handle_tag_got`): the two moments kernel-diff's replay drives, found unpinned by mutation
//! testing (docs/mutation-testing.md, "Mutation testing, the block layer and latency_guard").

use super::*;
use crate::bfq::Bfq;

fn read(ctx: u32, sector: u64) -> Bio {
    let mut bio = Bio::new(CtxId(ctx), Op::Read, sector, 8);
    bio.own_request = true;
    bio
}

/// bfq with its fewest scheduler tags (4) and no idling.
fn bfq_of_four_tags() -> Bfq {
    let mut bfq = Bfq::new(crate::bfq::Config::default());
    bfq.set_tunable("nr_requests", 4).expect("nr_requests");
    bfq.set_tunable("slice_idle", 0).expect("slice_idle");
    bfq
}

/// `__blk_mq_alloc_requests`: `bfq_limit_depth` runs, then `blk_mq_get_tag` sleeps; the task
/// holds no tag until it wakes with one (`block_getrq` in the kernel's trace). With four
/// tags: A's task starts allocating at 0 ms and sleeps, so B's four reads, submitted at 1 ms,
/// take the four tags and reach the device while A holds none. A's task is told it has its
/// tag at 2 ms, when B's reads hold them all: A waits for their completion (`blk_mq_put_tag`
/// at 3 ms), is inserted at 4 ms and dispatched then.
#[test]
fn a_request_whose_task_sleeps_for_its_tag_takes_one_only_when_its_task_has_it() {
    let mut blk = BlockLayer::new(bfq_of_four_tags(), Limits::depth(8));
    let a = blk
        .handle_allocate_sleeping(read(1, 0), 'A', ms(0))
        .expect("held for its insertion");
    assert!(drain(&mut blk, ms(0)).is_empty());
    for i in 1..=4 {
        blk.handle_submit(read(2, i * 100_000), 'B', ms(1));
    }
    let b = drain(&mut blk, ms(1));
    assert_eq!(
        b.len(),
        4,
        "B takes the tags A's sleeping task does not hold"
    );
    blk.handle_tag_got(a, ms(2));
    let mut done = Vec::new();
    for r in &b {
        blk.handle_complete(r.id, true, ms(3), &mut done);
    }
    blk.handle_insert(a, ms(4));
    let rqs = drain(&mut blk, ms(4));
    assert_eq!(
        rqs.iter().map(|r| r.id).collect::<Vec<_>>(),
        [a],
        "A, its task woken with one of B's tags, reaches the device at its insertion"
    );
    blk.handle_complete(a, true, ms(5), &mut done);
    assert_eq!(done.iter().map(|d| d.token).collect::<String>(), "BBBBA");
    assert!(blk.is_idle());
}

/// `blk_time_get_ns` (block/blk.h, 6.9 on): a task's plug caches the time of its first
/// allocation and keeps it until it is flushed, so every request it allocated ahead is
/// stamped with that time at its insertion, the last one too (`rq->fifo_time` in
/// `__bfq_insert_request`). One process allocates A and B into its plug at 0 ms; A is
/// inserted and served at once (its queue then expires, empty, with no idling), B is
/// inserted only at 200 ms, with the plug's time of 0 ms: its FIFO deadline
/// (`fifo_expire_sync`, 125 ms) has passed. D and E, submitted at 200 ms, are nearer the head
/// than B; in the queue's new service slot bfq serves D first (`bfq_choose_req`), then the
/// expired B (`bfq_check_fifo`, once a slot), not E.
#[test]
fn a_plug_stamps_each_request_it_allocated_ahead_with_its_first_allocation_s_time() {
    let mut blk = BlockLayer::new(bfq_of_four_tags(), Limits::depth(2));
    let a = blk.handle_allocate(read(1, 100), 'A', ms(0)).expect("A");
    let b = blk
        .handle_allocate(read(1, 900_000), 'B', ms(0))
        .expect("B");
    blk.handle_insert(a, ms(0));
    let served = drain(&mut blk, ms(0));
    assert_eq!(served.iter().map(|r| r.id).collect::<Vec<_>>(), [a]);
    let mut done = Vec::new();
    blk.handle_complete(a, true, ms(100), &mut done);
    blk.handle_insert(b, ms(200));
    blk.handle_submit(read(1, 200), 'D', ms(200));
    blk.handle_submit(read(1, 300), 'E', ms(200));
    let sectors: Vec<u64> = drain(&mut blk, ms(200)).iter().map(|r| r.sector).collect();
    assert_eq!(sectors, [200, 900_000], "D, then B past its FIFO deadline");
}

/// An async write of 16 KiB at `sector` by process `ctx`, its own request.
fn async_write(ctx: u32, sector: u64) -> Bio {
    let mut bio = Bio::new(CtxId(ctx), Op::Write, sector, 32);
    bio.own_request = true;
    bio
}

/// bfq with 16 scheduler tags (4-bit words) and no idling: an async write's shallow depth
/// (`bfq_limit_depth`: half of each word without a weight-raised queue busy, 3/16 with one)
/// is at most 8 of the 16 tags.
fn bfq_of_sixteen_tags() -> Bfq {
    let mut bfq = Bfq::new(crate::bfq::Config::default());
    bfq.set_tunable("nr_requests", 16).expect("nr_requests");
    bfq.set_tunable("slice_idle", 0).expect("slice_idle");
    bfq
}

/// `blk_mq_get_new_requests` with a plug expecting 12 requests: when the first request's
/// `limit_depth` sets no shallow depth (a sync read's), `__blk_mq_alloc_requests_batch` takes
/// the tags for the plug's next requests at once (`blk_mq_get_tags`), and those requests,
/// taken from the plug's cache (`blk_mq_get_cached_request`), never meet `bfq_limit_depth`.
/// Twelve async writes allocated one by one get at most the 8 tags of their depth; the four
/// left wait outside bfq and reach the device only after completions. From the plug's batch
/// (`handle_allocate_batched`) all twelve hold tags and reach the device at their insertion.
/// (Linux 6.18's bfq log shows it: one `[bfq_limit_depth]` note for a read and none for the
/// 31 requests after it in the same io_uring submission.)
#[test]
fn requests_from_a_plugs_batch_of_tags_take_them_past_bfq_s_depth_limit() {
    let dispatched_at_insertion = |batched: bool| {
        let mut blk = BlockLayer::new(bfq_of_sixteen_tags(), Limits::depth(32));
        let ids: Vec<RequestId> = (0..12u64)
            .map(|i| {
                let bio = async_write(1, i * 1000);
                let id = if batched {
                    blk.handle_allocate_batched(bio, i as u32, ms(0))
                } else {
                    blk.handle_allocate(bio, i as u32, ms(0))
                };
                id.expect("held for its insertion")
            })
            .collect();
        for &id in &ids {
            blk.handle_insert(id, ms(1));
        }
        drain(&mut blk, ms(1)).len()
    };
    assert!(
        dispatched_at_insertion(false) <= 8,
        "one by one, each at bfq_limit_depth's depth"
    );
    assert_eq!(
        dispatched_at_insertion(true),
        12,
        "from the plug's batch, with no depth of their own"
    );
}
