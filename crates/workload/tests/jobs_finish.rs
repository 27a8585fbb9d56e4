//! Property: every job, whatever its settings (and, for replayers, its trace) and the device's
//! speed, issues each tag once, stays on the device, never breaks its own concurrency bound,
//! and finishes once its completions arrive.

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

/// A synthetic S-suite trace: (process, gap in us, sectors, sector, action) per line.
fn startup_text(lines: &[(u8, u32, u32, u64, u8)]) -> String {
    let mut t = 1.0f64;
    let mut out = String::new();
    for &(p, gap_us, sectors, sector, action) in lines {
        t += f64::from(gap_us) / 1e6;
        let action = ["R", "RA", "RM", "WS"][action as usize];
        out.push_str(&format!(
            "proc{p}-{} {:.6} {sectors} {sector} Rand 0 0 {action} {t:.6} C\n",
            100 + u32::from(p),
            f64::from(gap_us) / 1e6
        ));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn startup_replays_finish_and_keep_processes_dependent(
        lines in prop::collection::vec(
            (0u8..4, 0u32..20_000, 1u32..512, 0u64..100_000_000, 0u8..4), 1..120),
        process_order in any::<bool>(),
        s_files in any::<bool>(),
        think_scale in prop_oneof![Just(0.0), Just(1.0)],
        depth in 1usize..=4,
        base_us in 50u64..5000,
    ) {
        let trace = elevator_workload::traces::s_startup::StartupTrace::parse(
            &startup_text(&lines), "synthetic").unwrap();
        let cfg = StartupConfig {
            order: if process_order { StartupOrder::Process } else { StartupOrder::Trace },
            placement: if s_files { StartupPlacement::SFiles } else { StartupPlacement::Trace },
            think_scale,
            ..Default::default()
        };
        let mut job = StartupJob::from_trace(&trace, &cfg, &BuildEnv::new(CAPACITY, 1, "s")).unwrap();
        let rec = drive(&mut job, depth, base_us);
        check(&rec)?;
        prop_assert_eq!(rec.issued.len(), lines.len());
        prop_assert_eq!(rec.outstanding_at_done, 0);
        prop_assert_eq!(rec.exits.len(), trace.processes.len());
        prop_assert!(rec.max_sync_outstanding_per_ctx.values().all(|&m| m == 1));
        if !process_order {
            // Trace order: no request is issued while an earlier synchronous one is in flight.
            for (i, a) in rec.issued.iter().enumerate() {
                if a.spec.sync {
                    for b in &rec.issued[i + 1..] {
                        prop_assert!(b.at >= a.done.unwrap());
                    }
                }
            }
        }
        prop_assert_eq!(job.startup_time(), rec.done_at);
    }

    #[test]
    fn open_loop_replays_issue_on_time_and_finish(
        gaps in prop::collection::vec((0u64..50_000, 1u32..256, any::<bool>()), 1..200),
        closed_loop in any::<bool>(),
        depth in 1usize..=8,
        base_us in 50u64..5000,
    ) {
        let mut t = 0u64;
        let mut text = String::new();
        for (i, (gap, sectors, read)) in gaps.iter().enumerate() {
            t += gap;
            text.push_str(&format!("{t} 0 {} {sectors} {}\n", i as u64 * 977, u8::from(*read)));
        }
        let trace = elevator_workload::traces::disksim_ascii::AsciiTrace::parse(
            &text, "synthetic", elevator_workload::traces::disksim_ascii::AsciiFormat::Mqsim).unwrap();
        let cfg = TraceReplayConfig { closed_loop, depth: 3, ..Default::default() };
        let mut job = TraceReplay::from_trace(&trace, &cfg, &BuildEnv::new(CAPACITY, 1, "t")).unwrap();
        let rec = drive(&mut job, depth, base_us);
        check(&rec)?;
        prop_assert_eq!(rec.issued.len(), gaps.len());
        prop_assert_eq!(rec.outstanding_at_done, 0);
        if closed_loop {
            prop_assert!(rec.max_outstanding <= 3);
        } else {
            let t0 = trace.records[0].time;
            for (i, r) in trace.records.iter().enumerate() {
                prop_assert_eq!(rec.issued[i].at, r.time - t0);
            }
        }
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
