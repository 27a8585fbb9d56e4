//! The completion's clock (`Scheduler::complete_clocked`): which completions take the clock
//! read before bfq's log note, pinned by mutation testing (docs/mutation-testing.md, "Mutation
//! testing, the block layer and latency_guard").

use super::tests::cfg_with;
use super::*;
use crate::harness::rq;

/// `bfq_completed_request` reads its clock (`last_completion`, `last_end_request`) before
/// `bfq_arm_slice_timer` arms the idle timer, which happens only for the in-service queue
/// left with no request queued or in the driver (`bfqq->dispatched == 0`) that must idle.
/// Here the in-service queue has two reads in the driver and none queued: the first
/// completion leaves one in the driver, so no timer is armed and the completion is stamped
/// when it reaches bfq (`now`), not at the earlier clock.
#[test]
fn bfq_completed_request_with_a_read_still_in_the_driver_is_stamped_when_it_reaches_bfq() {
    let mut s = Bfq::new(cfg_with(&[("low_latency", 0)]));
    s.insert(rq(1, 1).sector(1000).build(), Nanos::ZERO);
    s.insert(rq(2, 1).sector(900_000).build(), Nanos::ZERO);
    let mut out = Vec::new();
    while let Dispatch::Request(r) = s.dispatch(Nanos::ZERO) {
        out.push(r);
    }
    let q = s.bics[&CtxId(1)].sync_q.unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!((s.in_service, s.queues[q].dispatched), (Some(q), 2));
    assert!(
        s.must_idle(q),
        "empty, and it would idle once the driver is"
    );
    let (clock, now) = (Nanos(100 * MS as u64), Nanos(100 * MS as u64 + 16_000));
    Scheduler::complete_clocked(&mut s, &out[0], clock, now);
    assert_eq!(s.last_completion, 100 * MS + 16_000);
    assert_eq!(s.queues[q].last_end_request, 100 * MS + 16_000);
}
