//! BFQ's cost per request with 64 busy queues: one insert, one dispatch and one completion,
//! in steady state (every queue keeps requests queued, so every slot sees 64 competitors).
//! The kernel's documentation quotes 1.9 us per request for BFQ on its reference machine.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use elevator_core::bfq::{Bfq, Config};
use elevator_core::harness::rq;
use elevator_core::{Dispatch, Nanos, Scheduler};

const QUEUES: u64 = 64;
const DEPTH: u64 = 4;

fn bench(c: &mut Criterion) {
    let mut s = Bfq::new(Config::default());
    let mut next_id = 0u64;
    let mut pos = vec![0u64; QUEUES as usize];
    let mut now = Nanos::ZERO;
    for ctx in 0..QUEUES {
        for _ in 0..DEPTH {
            let p = &mut pos[ctx as usize];
            s.insert(
                rq(next_id, ctx as u32).sector((ctx << 28) + *p).build(),
                now,
            );
            *p += 16;
            next_id += 1;
        }
    }
    c.bench_function("bfq insert+dispatch+complete, 64 busy queues", |b| {
        b.iter(|| {
            now += Nanos::from_us(100);
            let rq_out = match s.dispatch(now) {
                Dispatch::Request(r) => r,
                other => panic!("64 backlogged queues, got {other:?}"),
            };
            s.complete(&rq_out, now);
            let ctx = u64::from(rq_out.ctx.0);
            let p = &mut pos[ctx as usize];
            s.insert(
                rq(next_id, ctx as u32).sector((ctx << 28) + *p).build(),
                now,
            );
            *p += 16;
            next_id += 1;
            black_box(s.queued())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
