//! Property: every job, whatever its settings and the device's speed, issues each tag once,
//! stays on the device, never breaks its own concurrency bound, and finishes once its
//! completions arrive.

use std::collections::BTreeSet;

use elevator_core::{Nanos, Op};
use elevator_workload::jobs::*;
use elevator_workload::testkit::{HandDriver, Record};
use elevator_workload::{BuildEnv, Job, JobSpec};
use proptest::prelude::*;

const CAPACITY: u64 = 40_000_000; // 20 GB

fn drive(job: &mut dyn Job, depth: usize, base_us: u64) -> Record {
    // Service time varies with position, so completions arrive out of issue order.
    let cost = move |s: &elevator_workload::IoSpec| {
        Nanos::from_us(base_us + (s.sector.wrapping_mul(2_654_435_761) % 7) * base_us)
    };
    HandDriver::with_cost(depth, cost, Nanos::from_secs(100_000)).run(job)
}

fn check(rec: &Record) -> Result<(), TestCaseError> {
    let tags: BTreeSet<u64> = rec.tags().into_iter().collect();
    prop_assert_eq!(tags.len(), rec.issued.len(), "a tag was issued twice");
    prop_assert!(!rec.stuck, "the job waited with nothing to wait for");
    prop_assert!(rec.done_at.is_some(), "the job did not finish");
    prop_assert!(rec.issue_after_exit.is_none());
    for i in &rec.issued {
        prop_assert!(i.spec.sectors > 0);
        prop_assert!(i.spec.sector + u64::from(i.spec.sectors) <= CAPACITY);
        prop_assert!(i.spec.op != Op::Read || i.spec.ctx != u32::MAX);
    }
    Ok(())
}

fn rw() -> impl Strategy<Value = RwMode> {
    prop_oneof![
        Just(RwMode::Read),
        Just(RwMode::Write),
        Just(RwMode::RandRead),
        Just(RwMode::RandWrite),
        Just(RwMode::Rw),
        Just(RwMode::RandRw),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn fio_jobs_finish_with_bounded_depth(
        rw in rw(),
        bs_kib in 1u64..=256,
        iodepth in 1u32..=32,
        number_ios in 1u64..=300,
        thinktime_us in prop_oneof![Just(0u64), 1u64..5000],
        rate in prop_oneof![Just(None), (1_000_000u64..100_000_000).prop_map(Some)],
        depth in 1usize..=8,
        base_us in 50u64..5000,
        seed in any::<u64>(),
    ) {
        let cfg = FioJobConfig {
            rw, bs: bs_kib * 1024, iodepth, number_ios: Some(number_ios), thinktime_us, rate,
            size: Some(64 << 20), ..Default::default()
        };
        let mut job = FioJob::new(cfg, &BuildEnv::new(CAPACITY, seed, "fio")).unwrap();
        let rec = drive(&mut job, depth, base_us);
        check(&rec)?;
        // Without time_based, one pass over the 64 MiB region ends the job too (fio's size).
        prop_assert_eq!(rec.issued.len() as u64, number_ios.min((64 << 20) / (bs_kib * 1024)));
        prop_assert!(rec.max_outstanding <= iodepth as usize);
        prop_assert_eq!(rec.outstanding_at_done, 0);
    }

    #[test]
    fn dependent_readers_finish_one_request_at_a_time(
        files in 1u32..40,
        size_kib in 1u64..600,
        initial_kib in prop_oneof![Just(4u64), Just(16), Just(128)],
        think_us in 0u64..3000,
        depth in 1usize..=8,
        base_us in 50u64..5000,
        seed in any::<u64>(),
    ) {
        let cfg = DependentReaderConfig {
            files, file_size: 1024, file_size_max: Some(size_kib * 1024),
            request_initial: initial_kib * 1024, think_us, ..Default::default()
        };
        let mut job = DependentReader::new(cfg, &BuildEnv::new(CAPACITY, seed, "cat")).unwrap();
        let rec = drive(&mut job, depth, base_us);
        check(&rec)?;
        prop_assert_eq!(rec.max_outstanding, 1);
    }

    #[test]
    fn stream_writers_with_a_total_finish_within_nr_requests(
        nr_requests in 1u32..=256,
        req_kib in 4u64..=512,
        total_mib in 1u64..=64,
        depth in 1usize..=8,
        base_us in 50u64..5000,
        seed in any::<u64>(),
    ) {
        let cfg = StreamWriterConfig {
            nr_requests, request_bytes: req_kib * 1024, total_bytes: Some(total_mib << 20),
            ..Default::default()
        };
        let mut job = StreamWriter::new(cfg, &BuildEnv::new(CAPACITY, seed, "w")).unwrap();
        let rec = drive(&mut job, depth, base_us);
        check(&rec)?;
        prop_assert!(rec.max_outstanding <= nr_requests as usize);
        prop_assert_eq!(rec.outstanding_at_done, 0);
    }

    #[test]
    fn compile_jobs_exit_every_gcc_and_finish(
        files in 1u32..60,
        dirs in 1u32..6,
        parallel in 1u32..4,
        page_cache_mib in prop_oneof![Just(1u64), Just(200)],
        depth in 1usize..=4,
        base_us in 100u64..20_000,
        seed in any::<u64>(),
    ) {
        let cfg = CompileConfig {
            files, dirs, parallel, page_cache_mib, sys_headers: 50, project_headers: 5,
            toolchain_bytes: 512 * 1024, dirty_background_bytes: 256 * 1024,
            ..Default::default()
        };
        let mut job = CompileJob::new(cfg, &BuildEnv::new(CAPACITY, seed, "make")).unwrap();
        let rec = drive(&mut job, depth, base_us);
        check(&rec)?;
        let exits: BTreeSet<u32> = rec.exits.iter().map(|e| e.0).collect();
        prop_assert_eq!(exits.len(), files as usize);
        prop_assert_eq!(rec.exits.len(), files as usize);
        prop_assert!(rec.max_sync_outstanding_per_ctx.values().all(|&m| m == 1));
    }

    #[test]
    fn scenario_specs_build_into_jobs_that_finish(
        kind in 0usize..3,
        seed in any::<u64>(),
    ) {
        let text = [
            "kind = \"fio\"\nrw = \"randrw\"\nnumber_ios = 50\niodepth = 4\n",
            "kind = \"dependent-reader\"\nfiles = 10\noffset_frac = 0.2\n",
            "kind = \"stream-writer\"\ntotal_bytes = 4194304\nrate = 8192000\n",
        ][kind];
        let spec: JobSpec = toml::from_str(text).unwrap();
        let mut job = spec.build(&BuildEnv::new(CAPACITY, seed, "j")).unwrap();
        let rec = drive(job.as_mut(), 2, 500);
        check(&rec)?;
    }
}

#[test]
fn startup_and_trace_replays_finish_on_the_shared_traces() {
    let Some(dir) = elevator_workload::traces::shared_data_dir() else {
        eprintln!("skipped: shared/data is absent");
        return;
    };
    let xterm = dir.join("traces/s-startup/xterm.trace");
    let tpcc = dir.join("traces/mqsim/tpcc-small.trace");
    if !xterm.exists() || !tpcc.exists() {
        eprintln!("skipped: the traces are absent");
        return;
    }
    for order in [StartupOrder::Trace, StartupOrder::Process] {
        for placement in [StartupPlacement::Trace, StartupPlacement::SFiles] {
            let cfg = StartupConfig {
                trace: xterm.clone(),
                order,
                placement,
                think_scale: 0.0,
                ..Default::default()
            };
            let mut job = StartupJob::new(cfg, &BuildEnv::new(CAPACITY, 1, "xterm")).unwrap();
            let rec = drive(&mut job, 2, 1000);
            check(&rec).unwrap();
            assert_eq!(rec.issued.len(), 718);
            assert_eq!(rec.outstanding_at_done, 0);
        }
    }
    let cfg = TraceReplayConfig {
        trace: tpcc,
        format: elevator_workload::traces::disksim_ascii::AsciiFormat::Mqsim,
        ..Default::default()
    };
    let mut job = TraceReplay::new(cfg, &BuildEnv::new(CAPACITY, 1, "tpcc")).unwrap();
    let rec = drive(&mut job, 4, 200);
    check(&rec).unwrap();
}
