//! Simulated requests per second of wall time on the SSD model: 4 KiB random reads at queue
//! depth 32 on the samsung-980pro-1tb spec, the device alone (a closed loop of 32 reads
//! driving `Ssd::submit`) and through the engine under the noop scheduler (a fio job). The
//! issue's yardstick is 1 million simulated requests per second on one core. Criterion
//! reports time per iteration of 200,000 requests (elements/s is requests per second).
//!
//! And the placement of a large write buffer's programs: 4 KiB random writes at queue depth
//! 128, the device alone, on samsung-980pro-1tb-fig11c (steady state, GC under way) with its
//! 32 MiB buffer raised to 256 MiB, as calibrated specs fit tens of MB to GB: once the buffer
//! is full every write waits for room, and the programs of a quarter GB are placed ahead of
//! the time now.
//!
//! And the same reads from two groups under io.cost through the engine (`reproduce
//! io-control-today`'s saturation rows in small): two jobs of 4 KiB random reads at queue
//! depth 32, one in `/a` (`io.weight` 100) and one in `/b` (300), with the model `calibrate
//! --iocost` measures on the drive and a QoS whose `max` holds vrate below the drive's rate,
//! so the budgets bind and bios wait in io.cost's queues; criterion's time is per 200,000
//! requests of both jobs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::group::IoCostDevice;
use elevator_core::harness::rq;
use elevator_core::{registry, GroupTree, Nanos, Request};
use elevator_sim::ssd::{Ssd, SsdSpec};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::spec::BuildEnv;

const REQUESTS: u64 = 200_000;
const DEPTH: u32 = 32;
const WRITE_DEPTH: u32 = 128;
const LARGE_BUFFER: u64 = 256 << 20;

fn spec() -> SsdSpec {
    SsdSpec::builtin("samsung-980pro-1tb").expect("built-in drive")
}

fn large_buffer_spec() -> SsdSpec {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb-fig11c").expect("built-in drive");
    spec.write_buffer.bytes = LARGE_BUFFER;
    spec
}

/// `REQUESTS` 4 KiB requests at random blocks, `depth` outstanding, each submitted when the
/// last completes, on the device alone; returns how many completed.
fn device_alone(spec: &SsdSpec, depth: u32, write: bool) -> u64 {
    let mut dev = Ssd::new(spec.clone()).expect("valid");
    let blocks = dev.capacity_sectors() / 8;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut heap = BinaryHeap::with_capacity(depth as usize);
    let mut submit = |dev: &mut Ssd, id: u64, now: Nanos| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let builder = rq(id, 1).sector((x % blocks) * 8).at(now);
        let request: Request = if write { builder.write() } else { builder }.build();
        Reverse(dev.submit(&request, now).done)
    };
    for id in 0..u64::from(depth) {
        heap.push(submit(&mut dev, id, Nanos::ZERO));
    }
    let mut done = 0;
    for id in u64::from(depth)..REQUESTS {
        let Reverse(t) = heap.pop().expect("outstanding");
        done += 1;
        heap.push(submit(&mut dev, id, t));
    }
    done + heap.len() as u64
}

fn through_engine(spec: &SsdSpec) -> u64 {
    let dev = Ssd::new(spec.clone()).expect("valid");
    let capacity = dev.capacity_sectors();
    let groups = GroupTree::new();
    let noop = registry::find("noop")
        .expect("noop")
        .build(&Default::default(), &groups)
        .expect("noop builds");
    let mut sim = Simulation::new(Box::new(dev), noop, groups);
    let cfg = FioJobConfig {
        rw: RwMode::RandRead,
        bs: 4096,
        iodepth: DEPTH,
        number_ios: Some(REQUESTS),
        norandommap: true,
        ..FioJobConfig::default()
    };
    let job = FioJob::new(cfg, &BuildEnv::new(capacity, 1, "randread")).expect("job");
    sim.add_job(JobSlot::new("randread", Box::new(job)));
    sim.run(None).ios_completed
}

/// The io.cost model `calibrate --iocost` measures on samsung-980pro-1tb (`reproduce
/// io-control-today`'s calibrated rows) and a QoS that holds vrate at 50..75%.
const IOCOST_MODEL: &str = "ctrl=user model=linear rbps=2348071096 rseqiops=384602 \
     rrandiops=384609 wbps=105300452 wseqiops=26866 wrandiops=19960";
const IOCOST_QOS: &str = "enable=1 ctrl=user rpct=95.00 rlat=250 wpct=0.00 wlat=250 \
     min=50.00 max=75.00";

fn two_groups_iocost(spec: &SsdSpec) -> u64 {
    let dev = Ssd::new(spec.clone()).expect("valid");
    let capacity = dev.capacity_sectors();
    let mut groups = GroupTree::new();
    let mut ids = Vec::new();
    for (path, weight) in [("/a", 100), ("/b", 300)] {
        let id = groups.add(path, None).expect("a new group");
        groups.io_mut(id).weight = Some(weight);
        ids.push(id);
    }
    groups.set_io_cost(IoCostDevice {
        model: Some(IOCOST_MODEL.to_string()),
        qos: Some(IOCOST_QOS.to_string()),
    });
    let none = registry::find("none")
        .expect("none")
        .build(&Default::default(), &groups)
        .expect("none builds");
    let mut sim = Simulation::new(Box::new(dev), none, groups);
    for (k, id) in ids.into_iter().enumerate() {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            bs: 4096,
            iodepth: DEPTH,
            number_ios: Some(REQUESTS / 2),
            ..FioJobConfig::default()
        };
        let name = format!("randread{k}");
        let job = FioJob::new(cfg, &BuildEnv::new(capacity, 1, name.clone())).expect("job");
        sim.add_job(JobSlot::new(name, Box::new(job)).group(id));
    }
    sim.run(None).ios_completed
}

fn bench(c: &mut Criterion) {
    let spec = spec();
    let mut g = c.benchmark_group("ssd_simulated_requests");
    g.sample_size(10);
    g.throughput(Throughput::Elements(REQUESTS));
    g.bench_function("980pro_randread4k_qd32_device", |b| {
        b.iter(|| assert_eq!(device_alone(&spec, DEPTH, false), REQUESTS))
    });
    g.bench_function("980pro_randread4k_qd32_engine_noop", |b| {
        b.iter(|| assert_eq!(through_engine(&spec), REQUESTS))
    });
    let large = large_buffer_spec();
    g.bench_function(
        "980pro_fig11c_256mib_buffer_randwrite4k_qd128_device",
        |b| b.iter(|| assert_eq!(device_alone(&large, WRITE_DEPTH, true), REQUESTS)),
    );
    g.bench_function("980pro_randread4k_two_groups_iocost_engine_none", |b| {
        b.iter(|| assert_eq!(two_groups_iocost(&spec), REQUESTS))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
