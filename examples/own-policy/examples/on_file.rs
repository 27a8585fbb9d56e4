//! A policy of your own on real I/O: a fio job file on a temporary file through the io_uring
//! executor, O_DIRECT, the policy deciding every dispatch.
//!
//! ```text
//! cargo run --release -p elevator-own-policy --example on_file -- [JOB.fio] [DIR]
//! ```
//!
//! Defaults: `examples/own-policy/jobs/reader-and-scrubber.fio`, in a new temporary
//! directory under `$TMPDIR` (or `/tmp`), removed at the end (give `DIR` to put it on
//! another file system: it must take O_DIRECT, which tmpfs does not).

use std::path::{Path, PathBuf};

use elevator_campaign::fio::build_jobs;
use elevator_campaign::real::{bytes_for_new_target, write_regions};
use elevator_core::GroupTree;
use elevator_own_policy::ForegroundFirst;
use elevator_real::target::{self, OpenSpec};
use elevator_real::uring::DEFAULT_ENTRIES;
use elevator_real::{run, RunOptions, RunReport, UringBackend};
use elevator_workload::fio_file;

/// Run `job_file` under [`ForegroundFirst`] on a new file at `path` (laid out to the jobs'
/// size first).
fn run_on_file(job_file: &Path, path: &Path) -> Result<RunReport, Box<dyn std::error::Error>> {
    let file = fio_file::read(job_file)?;
    let capacity = bytes_for_new_target(&file)?;
    let mut groups = GroupTree::new();
    let (jobs, _reporting_groups) = build_jobs(&file, capacity, 1, &mut groups)?;
    let need_bytes = jobs.iter().map(|j| j.region.end).max().unwrap_or(0);
    let write_regions = write_regions(&file, &jobs);
    // The executor's safety checks: a new file is laid out and marked as ours; an existing
    // file or device elevator did not write is refused for writing.
    let t = target::open(
        path,
        OpenSpec {
            writes: !write_regions.is_empty(),
            need_bytes,
            write_regions,
            ..OpenSpec::default()
        },
    )?;
    let non_rotational = target::rotational(path) == Some(false);
    let mut backend = UringBackend::new(t.file, t.size, DEFAULT_ENTRIES)
        .map_err(|e| format!("set up io_uring (is kernel.io_uring_disabled set?): {e}"))?;
    let mut sched = ForegroundFirst::new();
    let opts = RunOptions {
        groups,
        non_rotational,
        ..RunOptions::default()
    };
    Ok(run(&mut backend, &mut sched, jobs, &opts)?)
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
    let dir = match args.next() {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let path = dir.path().join("target");
    let report = run_on_file(&job_file, &path)?;
    println!(
        "{} on {} under {} ({:.2} s)",
        job_file.display(),
        path.display(),
        report.scheduler,
        report.elapsed.as_secs_f64()
    );
    for j in &report.jobs {
        let s = j.metrics.summary(&j.name, &j.group, report.elapsed);
        println!(
            "{:<10} {:>6} reads {:>8.2} MB/s  p50 {:>7.3} ms  p99 {:>7.3} ms",
            s.name, s.read.ios, s.read.mb_s, s.read.lat_p50_ms, s.read.lat_p99_ms
        );
    }
    Ok(())
}

#[test]
fn the_policy_runs_on_a_temporary_file_through_io_uring() {
    let dir = tempfile::tempdir().unwrap();
    let report = match run_on_file(
        &elevator_own_policy::reader_and_scrubber(),
        &dir.path().join("target"),
    ) {
        Ok(r) => r,
        // A file system without O_DIRECT, or io_uring disabled: nothing to run on here.
        Err(e) if e.to_string().contains("O_DIRECT") || e.to_string().contains("io_uring") => {
            eprintln!("skipping: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(report.scheduler, "foreground-first");
    let ios: Vec<(&str, u64)> = report
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.metrics.read.ios))
        .collect();
    assert_eq!(ios, [("reader", 100), ("scrubber", 128)]);
    assert!(!report.interrupted);
}
