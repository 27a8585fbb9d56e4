//! kyber's scheduler tags through the layer ([`Scheduler::holds_sched_tag`]): when a request
//! starts, pinned by mutation testing (docs/mutation-testing.md, "Mutation testing, the block layer
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

/// `__blk_mq_do_dispatch_sched` asks the scheduler only while it `has_work`, so a run that
/// finds every driver tag taken and kyber empty makes no `kyber_dispatch_request` call, and
/// kyber's write batch (`kyber_batch_size`, 8) goes on counting. Four writes fill a
/// four-request device in one run and kyber is empty; eight more writes and a read arrive;
/// as the device completes one request at a time, kyber serves four more writes (the eighth
/// of the batch the last), then the read. A call on the empty kyber would have reset its
/// batch (`khd->batching = 0` before it looks for another domain) and served eight writes
/// before the read (kfresh22's `deep-randwriter-qd256-beside-qd1-reader-defaults-round2`,
/// decision 397).
#[test]
fn a_run_with_the_driver_tags_taken_asks_no_empty_scheduler() {
    let limits = Limits::depth(4).dequeues_without_driver_tag(true);
    let mut blk = BlockLayer::new(Kyber::default(), limits);
    for i in 0..4u64 {
        blk.handle_submit(write(1, i * 1000, 8), 'W', ms(0));
    }
    let mut at_device: VecDeque<Request> = drain(&mut blk, ms(0)).into();
    assert_eq!(at_device.len(), 4, "the device is full, kyber empty");
    for i in 4..12u64 {
        blk.handle_submit(write(1, i * 1000, 8), 'W', ms(1));
    }
    blk.handle_submit(Bio::new(CtxId(2), Op::Read, 900_000, 8), 'R', ms(1));
    let mut served = Vec::new();
    let mut done = Vec::new();
    for t in 2..8 {
        let r = at_device.pop_front().expect("in flight");
        blk.handle_complete(r.id, true, ms(t), &mut done);
        let next = drain(&mut blk, ms(t));
        served.extend(next.iter().map(|r| r.op));
        at_device.extend(next);
    }
    assert_eq!(
        served,
        [
            Op::Write,
            Op::Write,
            Op::Write,
            Op::Write,
            Op::Read,
            Op::Write
        ],
        "the batch's last four writes, then the read"
    );
}
