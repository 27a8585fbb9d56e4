//! Replaying a trace of 1,000,000 requests on the simulator (the target: under 2 s):
//! eight processes issuing synchronous 4 KiB reads and writes over the Cheetah 9LP under
//! deadline, closed loop (each process's request waits for its previous one; no think time,
//! so at most eight are queued), generated
//! in memory so the figure is the replay's and the simulator's. Criterion prints the time per
//! replay; throughput is requests per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::{registry, GroupTree, Nanos, Op, Settings};
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::replay::{ReplayJob, ReplayOptions};
use elevator_workload::traces::{RecordSource, TraceRecord};
use elevator_workload::InputError;

const REQUESTS: u64 = 1_000_000;

/// A generated trace: request i from process i % 8, sector from a multiplicative hash.
struct Generated(u64);

impl Iterator for Generated {
    type Item = Result<TraceRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        let i = self.0;
        if i == REQUESTS {
            return None;
        }
        self.0 += 1;
        let write = i % 4 == 3;
        Some(Ok(TraceRecord {
            time: Nanos::from_us(i * 50),
            process: (i % 8) as u32,
            device: 0,
            op: if write { Op::Write } else { Op::Read },
            sync: true,
            meta: false,
            sector: (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) * 8,
            sectors: 8,
            service: Some(Nanos::ZERO),
        }))
    }
}

impl RecordSource for Generated {}

fn replay_once() -> u64 {
    let dev = Hdd::new(DriveSpec::builtin("cheetah9lp").expect("built-in drive"));
    let capacity = dev.capacity_sectors();
    let groups = GroupTree::new();
    let sched = registry::find("deadline")
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let mut sim = Simulation::new(Box::new(dev), sched, groups);
    let (job, out) = ReplayJob::new(
        "replay",
        Box::new(Generated(0)),
        ReplayOptions {
            closed_loop: true,
            speed: 1.0,
            capacity_sectors: capacity,
            max_requests: None,
        },
    )
    .unwrap();
    sim.add_job(JobSlot::new("replay", Box::new(job)));
    sim.run(None);
    let issued = out.borrow().issued;
    issued
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    g.throughput(Throughput::Elements(REQUESTS));
    g.bench_function("1M_requests_cheetah9lp_deadline_closed_loop", |b| {
        b.iter(|| assert_eq!(replay_once(), REQUESTS))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
