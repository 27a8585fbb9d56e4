//! fio's job options through the simulator: a submission batch of more than two I/Os is
//! plugged in the block layer (`blk_start_plug` in io_uring's and aio's submission); a job
//! that reaps several completions at once has its latencies stamped when it reaps them, as
//! fio's `clat` is; flushes (`fsync`, `end_fsync`) are counted as fio's `sync` figures; a
//! job's `startdelay` holds its start (and its figures') after its phase's.

use elevator_core::{registry, GroupTree, Nanos, Settings};
use elevator_sim::fixed::FixedLatency;
use elevator_sim::{JobSlot, RunReport, Simulation};
use elevator_workload::jobs::{FioJob, FioJobConfig, RwMode};
use elevator_workload::BuildEnv;

const CAPACITY: u64 = 1 << 30;

fn run(sched: &str, depth: usize, cfg: FioJobConfig) -> RunReport {
    let groups = GroupTree::new();
    let s = registry::find(sched)
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(1), depth, CAPACITY);
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    let job = FioJob::new(cfg, &BuildEnv::new(CAPACITY, 1, "j")).unwrap();
    sim.add_job(JobSlot::new("j", Box::new(job)));
    sim.run(None)
}

/// Sequential 4 KiB writes 32 deep under none on a device with room for all: submitted one
/// by one, each is its own request (none merges only while the device is full); submitted
/// in calls of 32, the plug merges each call into one request (`blk_attempt_plug_merge`),
/// so the 256 writes take 8 requests.
#[test]
fn a_batch_of_sequential_writes_is_merged_in_the_plug_under_none() {
    let cfg = |batch| FioJobConfig {
        rw: RwMode::Write,
        direct: true,
        iodepth: 32,
        iodepth_batch_submit: batch,
        iodepth_batch_complete_min: batch,
        number_ios: Some(256),
        ..FioJobConfig::default()
    };
    let one = run("noop", 32, cfg(1));
    assert_eq!((one.disk.write.ios, one.disk.write.merges), (256, 0));
    let batched = run("noop", 32, cfg(32));
    assert_eq!(
        (batched.disk.write.ios, batched.disk.write.merges),
        (8, 248)
    );
    assert_eq!(batched.ios_completed, 256);
    let w = batched.jobs[0].metrics.write.summary(batched.end);
    assert_eq!(
        (w.ios, w.bytes),
        (256, 256 * 4096),
        "every write counted once, at its own size"
    );
}

/// `iodepth_batch_complete_min` 4 on a one-slot device of 1 ms: four writes leave at 0 and
/// complete at 1, 2, 3 and 4 ms; fio reaps them together at 4 ms and stamps each then, so
/// every latency is 4 ms (stamped at their completions they would be 1 to 4 ms, 2.5 on
/// average).
#[test]
fn latencies_run_to_the_reap_when_the_job_reaps_several_at_once() {
    let cfg = |min| FioJobConfig {
        rw: RwMode::RandWrite,
        direct: true,
        iodepth: 4,
        iodepth_batch_complete_min: min,
        number_ios: Some(64),
        ..FioJobConfig::default()
    };
    let r = run("noop", 1, cfg(4));
    let w = r.jobs[0].metrics.write.summary(r.end);
    assert_eq!(w.ios, 64);
    assert!((w.lat_mean_ms - 4.0).abs() < 0.01, "mean {}", w.lat_mean_ms);
    assert!((w.lat_p50_ms - 4.0).abs() < 0.05, "p50 {}", w.lat_p50_ms);
    // Each reap waits for the device to drain: 16 rounds of 4 ms.
    assert_eq!(r.end, Nanos::from_ms(64));
    // Reaping one at a time keeps the device busy; the first three writes see 1-3 ms.
    let r = run("noop", 1, cfg(1));
    let w = r.jobs[0].metrics.write.summary(r.end);
    assert!(w.lat_mean_ms < 4.0, "mean {}", w.lat_mean_ms);
    assert_eq!(r.end, Nanos::from_ms(64));
}

/// With the host CPU model (one core, 10 us an I/O), a call of four sequential writes
/// reaches the block layer when the core is through with the last of them, 40 us on, as the
/// plug holds the first until the call ends; there they merge into one request. Submitted
/// one by one they arrive 10 us apart, each a request of its own.
#[test]
fn a_batch_reaches_the_block_layer_when_the_cpu_is_through_with_its_last_io() {
    let host = elevator_sim::cpu::CpuSpec {
        kind: "host-cpu".into(),
        name: "one-core".into(),
        description: String::new(),
        cores: 1,
        io_us: 10.0,
        scheduler: Default::default(),
    };
    let run_on_cpu = |batch: u32| {
        let groups = GroupTree::new();
        let s = registry::find("noop")
            .unwrap()
            .build(&Settings::new(), &groups)
            .unwrap();
        let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(1), 4, CAPACITY);
        let mut sim = Simulation::new(Box::new(dev), s, groups);
        sim.set_host_cpu(&host);
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            direct: true,
            iodepth: 4,
            iodepth_batch_submit: batch,
            iodepth_batch_complete_min: batch,
            number_ios: Some(8),
            ..FioJobConfig::default()
        };
        let job = FioJob::new(cfg, &BuildEnv::new(CAPACITY, 1, "j")).unwrap();
        sim.add_job(JobSlot::new("j", Box::new(job)));
        sim.record_requests();
        sim.run(None)
    };
    let batched = run_on_cpu(4);
    assert_eq!((batched.disk.write.ios, batched.disk.write.merges), (2, 6));
    // A record per write: each of a call's four left with its request.
    let starts: Vec<u64> = batched
        .requests
        .iter()
        .map(|r| r.dispatched.as_us())
        .collect();
    assert_eq!(starts, [40, 40, 40, 40, 1080, 1080, 1080, 1080]);
    assert_eq!(batched.end, Nanos::from_us(2080));
    let one = run_on_cpu(1);
    assert_eq!((one.disk.write.ios, one.disk.write.merges), (8, 0));
    let first: Vec<Nanos> = one.requests.iter().take(4).map(|r| r.dispatched).collect();
    let want: Vec<Nanos> = (1..=4).map(|k| Nanos::from_us(10 * k)).collect();
    assert_eq!(first, want);
}

/// `fsync=4` with `end_fsync` over 8 writes: two flushes (after the fourth write, and at the
/// end) reach the device and the disk's flush counter; the first is counted in the job's
/// `sync` figures, not among its writes, and the end's is left out of them, as fio runs it
/// outside its accounting (`TD_FSYNCING`).
#[test]
fn flushes_count_as_syncs_not_writes() {
    let cfg = FioJobConfig {
        rw: RwMode::Write,
        direct: true,
        fsync_blocks: 4,
        end_fsync: true,
        number_ios: Some(8),
        ..FioJobConfig::default()
    };
    let r = run("mq-deadline", 1, cfg);
    let m = &r.jobs[0].metrics;
    assert_eq!((m.write.ios, m.write.bytes), (8, 8 * 4096));
    assert_eq!((m.sync.ios, m.sync.bytes), (1, 0));
    assert_eq!(r.disk.flush.ios, 2);
}

/// `startdelay` (`JobSlot::delay`): a job delayed 10 ms issues nothing before then, in the
/// first phase and in a later one (after the phase starts), and its figures count from its
/// own start.
#[test]
fn a_delayed_job_starts_that_long_after_its_phase() {
    let groups = GroupTree::new();
    let s = registry::find("noop")
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(1), 1, CAPACITY);
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    sim.record_requests();
    let reads = |n| FioJobConfig {
        rw: RwMode::Read,
        number_ios: Some(n),
        ..FioJobConfig::default()
    };
    for (name, phase, delay_ms) in [("a", 0, 10), ("b", 1, 5)] {
        let job = FioJob::new(reads(4), &BuildEnv::new(CAPACITY, 1, name)).unwrap();
        let slot = JobSlot::new(name, Box::new(job)).delay(Nanos::from_ms(delay_ms));
        sim.add_job_in_phase(slot, phase);
    }
    let r = sim.run(None);
    let first = |job: u32| {
        r.requests
            .iter()
            .filter(|q| q.job == job)
            .map(|q| q.inserted)
            .min()
            .unwrap()
    };
    assert_eq!(first(0), Nanos::from_ms(10));
    // Phase 0 ends when a's four reads are done, at 14 ms; b starts 5 ms later.
    assert_eq!(first(1), Nanos::from_ms(19));
    assert_eq!(r.end, Nanos::from_ms(23));
    let a = r.jobs[0].metrics.read.summary(Nanos::from_ms(4));
    assert_eq!(a.ios, 4);
    assert_eq!(r.jobs[0].metrics.started, Nanos::from_ms(10));
    assert_eq!(r.jobs[1].metrics.started, Nanos::from_ms(19));
}

/// A quiesce (`thinktime`) reaps as completions come, up to `iodepth_batch_complete_max` at
/// a time (`io_u_quiesce` loops `io_u_queued_complete(td, 1)`), even for a job that waits
/// for four at a time when full: four writes on a one-slot device of 1 ms complete at 1 to
/// 4 ms and are stamped then (2.5 ms on average), not all at the last (4 ms).
#[test]
fn a_quiesce_reaps_completions_as_they_come() {
    let cfg = FioJobConfig {
        rw: RwMode::RandWrite,
        direct: true,
        iodepth: 8,
        iodepth_batch_complete_min: 4,
        thinktime_us: 1000,
        thinktime_blocks: 4,
        number_ios: Some(8),
        ..FioJobConfig::default()
    };
    let r = run("noop", 1, cfg);
    let w = r.jobs[0].metrics.write.summary(r.end);
    assert_eq!(w.ios, 8);
    assert!((w.lat_mean_ms - 2.5).abs() < 0.01, "mean {}", w.lat_mean_ms);
}
