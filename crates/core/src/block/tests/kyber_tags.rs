//! kyber's scheduler tags through the layer ([`Scheduler::holds_sched_tag`]): when a request
//! starts, pinned by mutation testing (docs/testing.md, "Mutation testing, the block layer
//! and latency_guard").

use super::*;
use crate::kyber::{Kyber, ASYNC_DEPTH};

/// `__blk_mq_alloc_requests` with `RQF_SCHED_TAGS`, `blk_mq_rq_time_init`: under kyber an
/// async write holds a scheduler tag from its insertion while fewer than `ASYNC_DEPTH`
/// (192, `kyber_limit_depth`) do, and the 193rd waits for one. On a one-request device
/// the 193 writes arrive at 0 ms and the device serves one every 2 ms: the second starts
/// (`Done::tagged`) at 0 ms though dispatched at 2 ms, and the 193rd at 2 ms, when the
/// first completes and frees its tag, though dispatched at 384 ms.
#[test]
fn under_kyber_an_async_write_beyond_the_async_depth_starts_when_a_tag_is_freed() {
    let mut blk = BlockLayer::new(Kyber::default(), Limits::depth(1));
    let n = u64::from(ASYNC_DEPTH) + 1;
    for i in 0..n {
        let w = Bio::new(CtxId(1), Op::Write, i * 100, 8).sync(false);
        blk.handle_submit(w, i, ms(0));
    }
    let (mut done, mut t) = (Vec::new(), 0);
    let mut at_device = drain(&mut blk, ms(0));
    while let Some(r) = at_device.pop() {
        t += 2;
        blk.handle_complete(r.id, true, ms(t), &mut done);
        at_device = drain(&mut blk, ms(t));
    }
    assert_eq!(done.len() as u64, n);
    let of = |token| {
        let d = done.iter().find(|d| d.token == token).expect("completed");
        (d.tagged, d.dispatched)
    };
    assert_eq!(of(1), (ms(0), ms(2)));
    assert_eq!(of(n - 1), (ms(2), ms(2 * (n - 1))));
}
