//! A policy of your own in the simulator, beside registry schedulers, on one fio job file.
//!
//! ```text
//! cargo run --release -p elevator-own-policy --example in_sim -- [JOB.fio] [DRIVE] [QUIET_MS]
//! ```
//!
//! Defaults: `examples/own-policy/jobs/reader-and-scrubber.fio` on the built-in
//! `laptop-4200` drive (`elevator list` names the others), the policy's tunables at their
//! defaults (`QUIET_MS` sets `quiet_ms`). Prints, per scheduler, each job's I/Os, throughput
//! and latency percentiles.

use std::path::{Path, PathBuf};

use elevator_campaign::fio::build_jobs;
use elevator_core::{registry, GroupTree, Scheduler, Settings, SECTOR_BYTES};
use elevator_own_policy::ForegroundFirst;
use elevator_sim::{DriveModel, JobSlot, Simulation};
use elevator_workload::fio_file;

/// One job's figures under one scheduler.
#[derive(Debug)]
struct Row {
    scheduler: String,
    job: String,
    ios: u64,
    mb_s: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// Run `job_file` on `drive` under `sched` (a scheduler of any origin) and summarise it.
fn simulate(
    job_file: &Path,
    drive: &DriveModel,
    sched: impl FnOnce(&GroupTree) -> Box<dyn Scheduler>,
) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let file = fio_file::read(job_file)?;
    let capacity = drive.capacity_sectors() * SECTOR_BYTES;
    // numjobs clones, stonewall phases and cgroups, as `elevator sim JOB.fio` builds them.
    let mut groups = GroupTree::new();
    let (jobs, _reporting_groups) = build_jobs(&file, capacity, 1, &mut groups)?;
    let sched = sched(&groups);
    let mut sim = Simulation::new(drive.device(), sched, groups);
    for j in jobs {
        let slot = JobSlot::new(j.name, j.job).group(j.group).prio(j.prio);
        sim.add_job_in_phase(slot, j.phase);
    }
    let report = sim.run(None);
    report.job_error()?;
    Ok(report
        .summaries()
        .into_iter()
        .map(|s| {
            let d = if s.read.ios > 0 { &s.read } else { &s.write };
            Row {
                scheduler: report.scheduler.clone(),
                job: s.name.clone(),
                ios: d.ios,
                mb_s: d.mb_s,
                p50_ms: d.lat_p50_ms,
                p99_ms: d.lat_p99_ms,
            }
        })
        .collect())
}

/// Our policy (with `settings`) and three registry schedulers on `job_file` and `drive`.
fn compare(
    job_file: &Path,
    drive_name: &str,
    settings: &Settings,
) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let drive = DriveModel::resolve(drive_name)?;
    let ours = ForegroundFirst::from_settings(settings)?;
    let mut rows = simulate(job_file, &drive, |_| Box::new(ours))?;
    for name in ["noop", "mq-deadline", "bfq"] {
        let spec = registry::find(name).expect("a registered scheduler");
        // The registry's schedulers take the device's rotational flag from the drive.
        let settings = spec.on_device(Settings::new(), Some(drive.hdd().is_some()));
        rows.extend(simulate(job_file, &drive, |groups| {
            spec.build(&settings, groups).expect("default tunables")
        })?);
    }
    Ok(rows)
}

fn main() -> std::process::ExitCode {
    elevator_own_policy::exit_code(try_main())
}

/// What `main` does, its error for `main` to print.
fn try_main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let job_file = args
        .next()
        .map_or_else(elevator_own_policy::reader_and_scrubber, PathBuf::from);
    let drive = args.next().unwrap_or_else(|| "laptop-4200".to_string());
    let mut settings = Settings::new();
    if let Some(q) = args.next() {
        let q = q.parse().map_err(|e| format!("QUIET_MS {q:?}: {e}"))?;
        settings.set("quiet_ms", q);
    }
    let rows = compare(&job_file, &drive, &settings)?;
    println!("{} on {drive} (simulated)", job_file.display());
    println!(
        "{:<18} {:<10} {:>6} {:>8} {:>9} {:>9}",
        "scheduler", "job", "ios", "MB/s", "p50 ms", "p99 ms"
    );
    for r in rows {
        println!(
            "{:<18} {:<10} {:>6} {:>8.2} {:>9.2} {:>9.2}",
            r.scheduler, r.job, r.ios, r.mb_s, r.p50_ms, r.p99_ms
        );
    }
    Ok(())
}

#[test]
fn the_policy_runs_in_the_simulator_beside_registry_schedulers() {
    let rows = compare(
        &elevator_own_policy::reader_and_scrubber(),
        "laptop-4200",
        &Settings::new(),
    )
    .unwrap();
    let of = |sched: &str, job: &str| {
        rows.iter()
            .find(|r| r.scheduler == sched && r.job == job)
            .unwrap_or_else(|| panic!("no row for {job} under {sched}: {rows:?}"))
    };
    for sched in ["foreground-first", "noop", "mq-deadline", "bfq"] {
        assert_eq!(
            of(sched, "reader").ios,
            100,
            "every read done under {sched}"
        );
        assert_eq!(
            of(sched, "scrubber").ios,
            128,
            "every read done under {sched}"
        );
    }
    // What the policy is for: the reader's tail latency below noop's, which lets the
    // scrubber's four-deep stream sit in front of each of the reader's reads.
    assert!(
        of("foreground-first", "reader").p99_ms < of("noop", "reader").p99_ms,
        "{rows:?}"
    );
}
