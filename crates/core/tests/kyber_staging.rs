//! kyber's per-CPU staging lists (`kcq`), tested from outside the module: decisions found
//! unpinned by mutation testing (docs/mutation-testing.md, "Mutation testing, the block layer and
//! latency_guard").

use elevator_core::harness::rq;
use elevator_core::kyber::Kyber;
use elevator_core::{IoClass, Nanos, Op, RequestId, Scheduler};

/// `kyber_bio_merge` is asked only about reads and writes here: discards never merge (a
/// deviation the module documents), even into a discard staged on the same CPU that ends
/// where the new one starts; a write in the same place does merge into a staged write.
#[test]
fn kyber_bio_merge_never_merges_a_discard_into_a_staged_one() {
    let mut s = Kyber::default();
    let t = Nanos::ZERO;
    s.insert(rq(1, 1).sector(0).sectors(8).op(Op::Discard).build(), t);
    let next = rq(2, 1).sector(8).sectors(8).op(Op::Discard).build();
    assert_eq!(s.try_merge(&next, 256, t), None);
    s.insert(rq(3, 1).sector(1000).sectors(8).write().build(), t);
    let write = rq(4, 1).sector(1008).sectors(8).write().build();
    assert_eq!(s.try_merge(&write, 256, t), Some(RequestId(3)));
}

/// `blk_rq_merge_ok` (called by `blk_bio_list_merge` from `kyber_bio_merge`): a bio merges
/// only into a request of its own I/O priority (`bi_ioprio`). A write at idle priority that
/// starts where a staged best-effort write ends is not merged into it; a best-effort one in
/// the same place is.
#[test]
fn kyber_bio_merge_needs_the_staged_request_s_priority() {
    let mut s = Kyber::default();
    let t = Nanos::ZERO;
    let be = |id, sector| rq(id, 1).sector(sector).sectors(8).write();
    s.insert(be(1, 0).prio(IoClass::BestEffort, 4).build(), t);
    let idle = be(2, 8).prio(IoClass::Idle, 7).build();
    assert_eq!(s.try_merge(&idle, 256, t), None);
    let same = be(3, 8).prio(IoClass::BestEffort, 4).build();
    assert_eq!(s.try_merge(&same, 256, t), Some(RequestId(1)));
}
