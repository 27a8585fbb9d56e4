//! Cost of the drive model: validating a 10,000-request trace, and one random 4 KiB read.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::validate::{self, TraceRecord};

/// A 10,000-request trace shaped like DiskSim's Cheetah 9LP validation trace (66 % reads,
/// 4-16 sectors, about 45 ms between requests), from a fixed seed.
fn synthetic_trace(blocks: u64) -> Vec<TraceRecord> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..10_000)
        .map(|_| {
            let r = next();
            TraceRecord {
                read: r % 100 < 66,
                hit: false,
                blkno: (next() % (blocks - 64)) & !3,
                sectors: 4 * (1 + (r >> 8) % 4) as u32,
                service_ms: 5.0,
                gap_ms: (next() % 90_000) as f64 / 1000.0,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let spec = DriveSpec::builtin("cheetah9lp").expect("built-in");
    let blocks = Hdd::new(spec.clone()).geometry().blocks;
    let trace = synthetic_trace(blocks);
    c.bench_function("validate_10k_requests_cheetah9lp", |b| {
        b.iter(|| {
            let mut hdd = Hdd::new(spec.clone());
            black_box(validate::replay(&mut hdd, &trace).demerit_ms)
        })
    });
    c.bench_function("hdd_new_cheetah9lp", |b| {
        b.iter(|| black_box(Hdd::new(spec.clone()).geometry().blocks))
    });
    c.bench_function("random_4k_read_cheetah9lp", |b| {
        let mut x = 88172645463325252u64;
        b.iter_batched_ref(
            || Hdd::new(spec.clone()),
            |hdd| {
                let mut t = 0.0;
                for _ in 0..1000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (done, _) = hdd.serve(true, (x % (blocks - 8)) & !7, 8, t);
                    t = done;
                }
                black_box(t)
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
