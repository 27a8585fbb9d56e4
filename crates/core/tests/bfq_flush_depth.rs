//! bfq's depth for a flush (`bfq_limit_depth` is not asked for one), tested from outside the
//! module: a decision found unpinned by mutation testing (docs/mutation-testing.md, "Mutation testing,
//! the block layer and latency_guard").

use elevator_core::bfq::{Bfq, Config};
use elevator_core::harness::rq;
use elevator_core::{Dispatch, Nanos, Op, Request, Scheduler};

/// What `s` dispatches at `now` before it has nothing more or idles.
fn dispatch_all(s: &mut Bfq, now: Nanos) -> Vec<Request> {
    std::iter::from_fn(|| match s.dispatch(now) {
        Dispatch::Request(r) => Some(r),
        _ => None,
    })
    .collect()
}

/// `__blk_mq_alloc_requests` calls the scheduler's `limit_depth` only for a request that is
/// neither a flush nor passthrough: a flush may take any free tag. With the tags kept by bit
/// position (`tag_bits`, Linux 6.17's whole-map depths) and 4 tags in 1-bit words, two async
/// writes (depth 2 of 4, `bfq_update_depths`) take bits 0 and 1 and a sync write (depth 3)
/// bit 2, which leaves no bit to a request of any shallow depth; the flush, sync or not,
/// takes bit 3 and is dispatched with them.
#[test]
fn a_flush_takes_any_free_tag_by_bit_position() {
    for sync in [false, true] {
        let mut s = Bfq::new(Config::default());
        for (name, value) in [("nr_requests", 4), ("tag_bits", 1), ("slice_idle", 0)] {
            s.set_tunable(name, value).expect(name);
        }
        let t = Nanos::ZERO;
        s.insert(rq(1, 2).sector(0).write().build(), t);
        s.insert(rq(2, 2).sector(100_000).write().build(), t);
        s.insert(rq(3, 2).sector(200_000).sync_write().build(), t);
        let flush = rq(4, 3).op(Op::Flush).sync(sync).sectors(0).build();
        s.insert(flush, t);
        let mut ids: Vec<u64> = dispatch_all(&mut s, t).iter().map(|r| r.id.0).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 3, 4], "sync flush: {sync}");
    }
}
