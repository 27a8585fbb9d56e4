//! kyber's per-CPU staging lists (`kcq`), tested from outside the module: decisions found
//! unpinned by mutation testing (docs/testing.md, "Mutation testing, the block layer and
//! latency_guard").

use elevator_core::harness::rq;
use elevator_core::kyber::Kyber;
use elevator_core::{Nanos, Op, RequestId, Scheduler};

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
