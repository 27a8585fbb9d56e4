//! bfq's FIFO across the merge after a back merge (`bfq_requests_merged`), through the block
//! layer: decisions found unpinned by mutation testing (docs/mutation-testing.md, "Mutation testing,
//! the block layer and latency_guard").
//!
//! The FIFO is looked at only by `bfq_check_fifo`, once a service slot (its flag is cleared
//! by `__bfq_set_in_service_queue`), when `bfq_find_next_rq` replaces the queue's next
//! request at its first removal in the slot. So each situation gives the reader's queue a
//! fresh slot after its requests' FIFO times have passed: another process's async write
//! holds the one-request device until 130 ms (its queue cannot idle, so bfq moves to the
//! reader's queue at that completion), and the reader's first dispatch of the slot is its
//! positional next request; the request after it is the FIFO head if that has expired.

use elevator_core::bfq::Bfq;
use elevator_core::block::{Bio, BlockLayer, Limits};
use elevator_core::{CtxId, Nanos, Op};

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

fn read(sector: u64) -> Bio {
    Bio::new(CtxId(1), Op::Read, sector, 8).sync(true)
}

/// Under bfq (default settings) on a one-request device: process 2's async write at 1000
/// goes to the device at 0 ms, then process 1's reads `queued` (sector, submitted at) wait,
/// then at `merge_at` a read at 8 back-merges into 0+8 and makes it reach 16, which bfq
/// merges away. The write completes at 130 ms, every later request 1 ms after its dispatch
/// (the idle timer, if bfq arms one, fires when due). Returns the reads' (sector, sectors)
/// in dispatch order.
fn served_after_merging_16_into_0(queued: &[(u64, Nanos)], merge_at: Nanos) -> Vec<(u64, u32)> {
    let mut blk = BlockLayer::new(Bfq::new(Default::default()), Limits::depth(1));
    blk.keep_merged_away();
    blk.handle_submit(Bio::new(CtxId(2), Op::Write, 1000, 8), 1000u64, ms(0));
    let mut at_device = blk.poll_dispatch(ms(0));
    assert!(at_device.is_some(), "the write goes to the idle device");
    for &(sector, at) in queued {
        blk.handle_submit(read(sector), sector, at);
    }
    blk.handle_submit(read(8), 8, merge_at);
    assert_eq!(
        blk.take_merged_away(),
        [16],
        "0+16 reached 16 and merged it"
    );
    let (mut done, mut served, mut t) = (Vec::new(), Vec::new(), ms(130));
    while !blk.is_idle() {
        if let Some(r) = at_device.take() {
            blk.handle_complete(r.id, true, t, &mut done);
        }
        at_device = blk.poll_dispatch(t);
        match &at_device {
            Some(r) => {
                served.push((r.sector, r.sectors));
                t += ms(1);
            }
            None => {
                let next = blk.poll_timeout().expect("bfq waits for a timer");
                assert!(next > t, "time moves on");
                t = next;
                blk.handle_timeout(t);
            }
        }
    }
    served
}

/// `bfq_requests_merged`: the merged-away request (16, submitted at 1 ms) is older than the
/// grown one (0, at 40 ms), so the grown one takes its FIFO place and `fifo_time` (1 ms +
/// fifo_expire_sync, 126 ms). At the reader's first dispatch at 130 ms, bfq serves 2000 (its
/// next request by position from 1008, `bfq_choose_req`), then `bfq_check_fifo` finds the
/// grown request at the FIFO head and expired: 0+24 goes before 3100 (whose own time, and
/// the grown request's had it kept its own, is 165 ms).
#[test]
fn a_grown_request_takes_the_fifo_time_of_an_older_request_it_merges() {
    let queued = [(16, ms(1)), (2000, ms(40)), (3100, ms(40)), (0, ms(40))];
    let served = served_after_merging_16_into_0(&queued, ms(40));
    assert_eq!(served, [(2000, 8), (0, 24), (3100, 8)]);
}

/// `bfq_requests_merged` repositions only when the merged-away request is strictly older
/// (`next->fifo_time < rq->fifo_time`). Here 16, 2000, 0 and 1500 are all submitted at 1 ms
/// (equal FIFO times), so the grown 0+24 keeps its place behind 2000. At 130 ms bfq serves
/// 1500 (its next request by position from 1008), then `bfq_check_fifo` takes the FIFO
/// head, 2000, expired at 126 ms; had 0+24 taken 16's place it would be the head, and
/// served second.
#[test]
fn a_grown_request_keeps_its_fifo_place_beside_a_merged_request_of_the_same_time() {
    let queued = [(16, ms(1)), (2000, ms(1)), (0, ms(1)), (1500, ms(1))];
    let served = served_after_merging_16_into_0(&queued, ms(2));
    assert_eq!(served, [(1500, 8), (2000, 8), (0, 24)]);
}
