//! Trace parsing speed on one core: blktrace binary events and MSR Cambridge CSV lines per
//! second (the issue's target: 5 million records per second each). The traces are generated in
//! memory (1,000,000 records each) so the figure is the parser's, not the disk's; throughput is
//! printed as elements/s.

use std::io::Cursor;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::Nanos;
use elevator_workload::traces::blktrace::{
    cat, encode_v7, BlkAction, BlkEvent, BlkRequests, BlkView, EventReader,
};
use elevator_workload::traces::lines::Lines;
use elevator_workload::traces::msr::MsrReader;

const RECORDS: u64 = 1_000_000;

/// Q, D and C for each of RECORDS / 3 requests.
fn blktrace_bytes() -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORDS as usize * 48);
    let mut t = 0u64;
    for i in 0..RECORDS / 3 {
        let sector = (i * 7919) % 100_000_000;
        for (action, dt) in [
            (BlkAction::Queue, 1_000),
            (BlkAction::Issue, 2_000),
            (BlkAction::Complete, 50_000),
        ] {
            t += dt;
            let e = BlkEvent {
                time: Nanos(t),
                sequence: i as u32,
                cpu: 0,
                device: 8 << 20,
                pid: 1000 + (i % 8) as u32,
                action,
                category: action.category() | cat::READ,
                sector,
                bytes: 4096,
                error: 0,
                cgroup: None,
                remap: None,
            };
            encode_v7(&e, &[], &mut out);
        }
    }
    out
}

fn msr_bytes() -> Vec<u8> {
    let mut s = String::with_capacity(RECORDS as usize * 56);
    for i in 0..RECORDS {
        let op = if i % 3 == 0 { "Write" } else { "Read" };
        s.push_str(&format!(
            "{},web,{},{op},{},{},{}\n",
            128_166_372_003_061_629u64 + i * 1000,
            i % 4,
            (i * 7919 % 1_000_000) * 4096,
            4096 * (1 + i % 16),
            1000 + i % 5000
        ));
    }
    s.into_bytes()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("trace_records");
    g.sample_size(10);
    g.throughput(Throughput::Elements(RECORDS - RECORDS % 3));
    let bin: &'static [u8] = Box::leak(blktrace_bytes().into_boxed_slice());
    g.bench_function("blktrace_v7_events", |b| {
        b.iter(|| {
            let r = EventReader::new(Box::new(Cursor::new(bin)), "bench");
            assert_eq!(
                r.filter(Result::is_ok).count() as u64,
                RECORDS - RECORDS % 3
            );
        })
    });
    g.bench_function("blktrace_v7_dispatch_view", |b| {
        b.iter(|| {
            let r = EventReader::new(Box::new(Cursor::new(bin)), "bench");
            let n = BlkRequests::new(r, BlkView::Dispatch)
                .filter(Result::is_ok)
                .count();
            assert_eq!(n as u64, RECORDS / 3);
        })
    });
    g.throughput(Throughput::Elements(RECORDS));
    let csv: &'static [u8] = Box::leak(msr_bytes().into_boxed_slice());
    g.bench_function("msr_csv_lines", |b| {
        b.iter(|| {
            let lines = Lines::new(Box::new(Cursor::new(csv)), "bench");
            assert_eq!(
                MsrReader::new(lines).filter(Result::is_ok).count() as u64,
                RECORDS
            );
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
