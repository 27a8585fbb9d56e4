//! Simulated requests per second of wall time: random 4 KiB reads on the Cheetah 9LP under
//! deadline, the yardstick (DiskSim replays about 16,500 requests per second on this
//! kind of machine). Criterion reports time per iteration of 100,000 requests; requests per
//! second = 100,000 / that time (throughput is printed as elements/s).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::{registry, GroupTree, Settings};
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::spec::BuildEnv;

const REQUESTS: u64 = 100_000;

fn run_once(sched: &str, iodepth: u32) -> u64 {
    let spec = DriveSpec::builtin("cheetah9lp").expect("built-in drive");
    let dev = Hdd::new(spec);
    let capacity = dev.capacity_sectors();
    let groups = GroupTree::new();
    let s = registry::find(sched)
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    let cfg = FioJobConfig {
        rw: RwMode::RandRead,
        bs: 4096,
        iodepth,
        number_ios: Some(REQUESTS),
        norandommap: true,
        ..FioJobConfig::default()
    };
    let job = FioJob::new(cfg, &BuildEnv::new(capacity, 1, "randread")).unwrap();
    sim.add_job(JobSlot::new("randread", Box::new(job)));
    let r = sim.run(None);
    r.ios_completed
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulated_requests");
    g.sample_size(10);
    g.throughput(Throughput::Elements(REQUESTS));
    for depth in [1u32, 32] {
        g.bench_function(
            format!("cheetah9lp_deadline_randread4k_iodepth{depth}"),
            |b| b.iter(|| assert_eq!(run_once("deadline", depth), REQUESTS)),
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
