//! `elevator run JOB.fio --target PATH --sched NAME[,NAME...]`: real I/O through our schedulers.
//!
//! The job file (a fio subset, see `elevator_workload::fio_file`) is run once per scheduler,
//! one after another, on the same target, by the io_uring executor of `elevator-real`: the
//! scheduler decides every dispatch, including how much is outstanding. Each run prints a
//! fio-like report (or fio-compatible JSON); several schedulers end with a comparison table.
//!
//! Safety (see `elevator_real::safety` and docs/reliability.md): a block device that is
//! mounted, used as swap or held by another device is refused for writing, always; one that
//! carries a signature blkid recognises, or whose written regions are not all zeroes, and an
//! existing non-empty file that elevator did not lay out, are refused for writing unless
//! `--allow-overwrite`. No job writes outside its declared region. Ctrl-C stops cleanly: during
//! the layout of a new file the partial file is removed; during the run the I/O in flight
//! completes, the partial report prints, the exit code is non-zero.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use elevator_core::GroupTree;
use elevator_real::report::{fio_json, fio_json_failed, fio_text};
use elevator_real::target::{self, OpenSpec};
use elevator_real::{RunOptions, RunReport, UringBackend};
use elevator_workload::fio_file::{self, FioFile};
use serde_json::Value;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// fio-like text.
    Normal,
    /// fio-compatible JSON.
    Json,
}

/// Run a fio job file on a real file or block device under one or more of our schedulers.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The fio job file, in the subset of fio's options `sim` and `run` read (rw, bs, size,
    /// offset, filename, numjobs, iodepth, ioengine, direct, rate, rate_iops, thinktime,
    /// runtime, time_based, stonewall, prio, cgroup ... : an option outside it is refused
    /// with the whole list, or with the one it most likely meant).
    pub job_file: PathBuf,
    /// The file or block device to run against (default: the job file's `filename`).
    #[arg(long)]
    pub target: Option<PathBuf>,
    #[command(flatten)]
    pub scheds: super::common::SchedOpts,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Normal)]
    pub output_format: Format,
    /// Write the report here instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Allow writing over an existing file or a device carrying data.
    #[arg(long)]
    pub allow_overwrite: bool,
    /// Stamp every written sector with a checksum, check reads, and read everything written
    /// back at the end.
    #[arg(long)]
    pub verify: bool,
    /// Seed for the jobs' random offsets.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Emulate this drive (a built-in name, see `elevator list`, or a drive TOML): the data
    /// lives in the target (opened buffered), and each request completes at the time the
    /// drive's model says, on the real clock. The report adds how late completions were
    /// against the model; the run fails if the host could not keep up.
    #[arg(long, value_name = "NAME|FILE")]
    pub drive: Option<String>,
    #[command(flatten)]
    pub out: super::common::OutputOpts,
}

pub(crate) use crate::signals::STOP;

/// Ctrl-C (and SIGTERM) set [`STOP`] once (what is in flight completes, the report of what
/// ran is written, and the exit status is 128 + the signal); a second one ends the process.
pub(crate) fn install_stop_handler() {
    crate::signals::cooperate(true);
}

pub(crate) use elevator_campaign::fio::{build_jobs, ramp_time};

// The checks before the target is touched are the library's, shared with the Python
// package's `elevator.run` (elevator_campaign::real).
use elevator_campaign::real::{check_buffer_memory, target_capacity, write_regions};

/// Re-marks a target elevator owns when dropped ([`target::Target::remember`]); errors are
/// reported by the explicit call on the normal path.
pub(crate) struct RememberOnDrop<'a>(pub(crate) &'a target::Target);

impl Drop for RememberOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.remember();
    }
}

/// How long a run of `file` lasts if every job is time-based: the ramp plus the longest
/// runtime of each phase (jobs after a `stonewall` start when the earlier ones are done),
/// which is then exactly what [`least_length`] finds.
fn expected_length(file: &FioFile, ramp: Duration) -> Option<Duration> {
    let timed = file
        .jobs
        .iter()
        .all(|d| d.config.time_based && d.config.runtime_ms.is_some());
    timed
        .then(|| least_length(file, ramp))
        .flatten()
        .map(|(len, _)| len)
}

/// What a run's own settings say of its length, at the least: a time-based job its ramp and
/// runtime; another its I/Os (`number_ios`, else `io_size` or `size` over `bs`) at its
/// `rate` (bytes a second), `rate_iops`, and think time (`thinktime` after every
/// `thinktime_blocks`), capped by its `runtime`. A phase lasts as its longest job; phases
/// (`stonewall`) add. The job and the setting that make the bound, or `None` when nothing
/// bounds it from below (a job's speed is then the target's).
fn least_length(file: &FioFile, ramp: Duration) -> Option<(Duration, String)> {
    let mut total = Duration::ZERO;
    let mut phase: Option<(Duration, String)> = None;
    let mut longest: Option<(Duration, String)> = None;
    for (i, d) in file.jobs.iter().enumerate() {
        if i > 0 && d.stonewall {
            total += phase.take().map_or(Duration::ZERO, |p| p.0);
        }
        let c = &d.config;
        let runtime = c.runtime_ms.map(Duration::from_millis);
        let job = if c.time_based {
            runtime.map(|r| (r, format!("time_based with runtime={} s", r.as_secs())))
        } else {
            let bytes = c.io_size.or(c.size);
            let ios = c
                .number_ios
                .or_else(|| bytes.map(|b| b.div_ceil(c.max_size().max(1))));
            let secs = |n: f64, per_s: u64| n / per_s.max(1) as f64;
            let mut bounds: Vec<(f64, String)> = Vec::new();
            if let (Some(rate), Some(n)) = (c.rate, ios) {
                let b = n as f64 * c.min_size() as f64;
                bounds.push((secs(b, rate), format!("{b} bytes at rate={rate} B/s")));
            }
            if let (Some(rate), Some(n)) = (c.rate_iops, ios) {
                bounds.push((
                    secs(n as f64, rate),
                    format!("{n} I/Os at rate_iops={rate}"),
                ));
            }
            if let (true, Some(n)) = (c.thinktime_us > 0, ios) {
                let thinks = (n / u64::from(c.thinktime_blocks.max(1))) as f64;
                bounds.push((
                    thinks * c.thinktime_us as f64 / 1e6,
                    format!("{n} I/Os with thinktime={} us", c.thinktime_us),
                ));
            }
            bounds
                .into_iter()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(s, why)| {
                    // At most a runtime, which stops a job that is not time-based too.
                    let d = Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
                    match runtime {
                        Some(r) if r < d => (r, format!("{why}, stopped by runtime")),
                        _ => (d, why),
                    }
                })
        };
        // `startdelay`: the job starts at least its shortest delay after its phase.
        let delay = Duration::from_nanos(d.start_delay.map_or(0, |(lo, _)| lo));
        let job = job.map(|(len, why)| (len.saturating_add(delay), why));
        if let Some((len, why)) = job {
            let why = format!("job {}: {why}", d.name);
            if phase.as_ref().is_none_or(|p| len > p.0) {
                phase = Some((len, why.clone()));
            }
            if longest.as_ref().is_none_or(|l| len > l.0) {
                longest = Some((len, why));
            }
        }
    }
    total = total.saturating_add(phase.map_or(Duration::ZERO, |p| p.0));
    let (_, why) = longest?;
    Some((ramp.saturating_add(total), why))
}

/// A run this long at its own settings gets a line up front ([`long_run_note`]).
const LONG_RUN: Duration = Duration::from_secs(60);

/// The line `run` prints before a run that its own settings make last at least [`LONG_RUN`]
/// (issue 32, round 14): `rate=1` with `size=4m` runs for 48 days and `time_based` with
/// `runtime=100000000` for three years, as fio would run them, and a run whose output is
/// not a terminal showed nothing at all meanwhile. The run is not refused (fio runs it too):
/// the line says how long, and that Ctrl-C stops it with the figures measured so far.
fn long_run_note(file: &FioFile, ramp: Duration) -> Option<String> {
    let (len, why) = least_length(file, ramp)?;
    (len >= LONG_RUN).then(|| {
        format!(
            "at its own settings this job file runs for at least {} per scheduler ({why}); \
             Ctrl-C stops it and prints the figures measured so far",
            human_duration(len)
        )
    })
}

/// A duration as days, hours, minutes and seconds (`48 d 13 h`, `2 h 5 min`, `90 s`).
fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (days, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match (days, h, m) {
        (0, 0, 0) => format!("{sec} s"),
        (0, 0, _) => format!("{m} min {sec} s"),
        (0, _, _) => format!("{h} h {m} min"),
        _ => format!("{days} d {h} h"),
    }
}

/// One row per job of one run for the comparison table.
pub(crate) fn table_rows(r: &RunReport, rows: &mut Vec<Vec<String>>) {
    for j in &r.jobs {
        let s = j.metrics.summary(&j.name, &j.group, r.elapsed);
        let mut row = vec![r.scheduler.clone(), j.name.clone()];
        for d in [&s.read, &s.write] {
            row.push(format!("{:.1}", d.iops));
            row.push(format!("{:.1}", d.mb_s));
            row.extend(crate::output::latency_cells(d, 3));
        }
        rows.push(row);
    }
}

/// The comparison table's columns: per direction the rate, then the mean latency beside
/// fio's p50, p90, p99 and p99.9 (the completion latencies fio prints by default include
/// these), each latency with its unit as a scenario's table names it (`rd p99 ms`).
fn table_header() -> Vec<&'static str> {
    crate::output::latency_header(
        &["scheduler", "job"],
        &["read IOPS", "read MB/s"],
        &["write IOPS", "write MB/s"],
    )
}

/// The comparison table of [`table_rows`]' rows: the run and the job left-aligned, no rule.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    crate::output::table_with(&table_header(), rows, 2, false)
}

/// Run the subcommand.
pub fn run(mut args: Args) -> anyhow::Result<()> {
    use super::common::{read_once, Input, Supported};
    // A job file or drive spec from a FIFO is copied once: the drive is read per scheduler.
    let given = read_once("job file", &args.job_file, 4 << 20)?;
    args.job_file = given.path.clone();
    let drive = match &args.drive {
        Some(d) => Some(read_once("drive spec", std::path::Path::new(d), 4 << 20)?),
        None => None,
    };
    if let Some(d) = &drive {
        args.drive = Some(d.path.display().to_string());
    }
    let sched = args.scheds.names("none")?;
    let file = fio_file::read(&args.job_file)?;
    let target_path = elevator_campaign::real::target_of(&file, args.target.as_deref())?;
    let extra = super::parse_sets(&args.scheds.set)?;
    let infos = super::find_schedulers(&sched)?;
    super::check_sets(&extra, &sched)?;
    // Every output is checked before the target is touched: writable, and none of them the
    // job file or the target.
    let own: Vec<(&str, &std::path::Path)> = args
        .output
        .as_deref()
        .map(|p| ("--output", p))
        .into_iter()
        .collect();
    let mut read = vec![Input::new("the job file", &args.job_file)];
    if let Some(d) = &args.drive {
        read.push(Input::new("the drive spec", d));
    }
    super::common::check_target(&target_path, &read)?;
    read.push(Input::new("the target", &target_path));
    args.out.check("run", Supported::ALL, &sched, &read, &own)?;
    // The drive spec is read again for each scheduler's run: all must run on one drive.
    let unchanged = super::common::Unchanged::take(&read);
    check_buffer_memory(&file)?;
    // The drive to emulate, checked before the target is touched.
    let drive_probe = args
        .drive
        .as_deref()
        .map(super::emulate::model)
        .transpose()?;
    let capacity = target_capacity(&target_path, &file)?;
    // Build once to learn the regions (and report job errors before touching the target).
    let mut groups = GroupTree::new();
    let (probe, _) = build_jobs(&file, capacity, args.seed, &mut groups)?;
    // Build every scheduler once too: an out-of-range --set fails before the target is
    // touched.
    for info in &infos {
        info.build(&super::settings_for(info, &extra), &groups)
            .map_err(|e| super::blame_set(info.name, &super::settings_for(info, &extra), e))?;
    }
    let need = probe.iter().map(|j| j.region.end).max().unwrap_or(0);
    if let Some(m) = &drive_probe {
        anyhow::ensure!(
            need <= m.capacity_bytes(),
            "--drive {}: the jobs need {need} bytes, the drive holds {}",
            m.name(),
            m.capacity_bytes()
        );
    }
    let write_regions = write_regions(&file, &probe);
    drop(probe);
    // Before the layout, so Ctrl-C during it removes the partial file instead of leaving it.
    install_stop_handler();
    let writes = !write_regions.is_empty() || args.verify;
    let tgt = target::open(
        &target_path,
        OpenSpec {
            writes,
            allow_overwrite: args.allow_overwrite,
            need_bytes: need,
            write_regions: write_regions.clone(),
            stop: Some(&STOP),
        },
    )?;
    // Whatever way this function returns from here, the file is re-marked as elevator's (only
    // our jobs wrote it), so an early error does not get the next run refused.
    let _remember = RememberOnDrop(&tgt);
    let ramp = ramp_time(&file)?;
    if let Some(note) = long_run_note(&file, ramp) {
        crate::output::tell!("elevator run: {note}");
    }
    let rotational = match &drive_probe {
        Some(m) => Some(!m.non_rotational()),
        None => elevator_real::target::rotational(&target_path),
    };
    let drive_name = drive_probe.as_ref().map(|m| m.name().to_string());
    drop(drive_probe);
    let target_name = target_path.display().to_string();
    let mut text = String::new();
    let mut json_runs: Vec<Value> = Vec::new();
    let mut rows = Vec::new();
    let mut failure = None;
    let mut outcomes = super::common::Outcomes::default();
    let json_stdout = (args.output_format == Format::Json && args.output.is_none())
        || args
            .out
            .json
            .as_deref()
            .is_some_and(|p| p.as_os_str() == "-");
    if json_stdout {
        // JSON on stdout: notes (the report's path) go to stderr.
        crate::output::json_to_stdout(Some(std::path::Path::new("-")));
    }
    let page = crate::report::Sink::new(
        args.out.report.is_some(),
        &format!("elevator run {}", args.job_file.display()),
    );
    let mut recorded = Vec::new();
    for (n, (label, info)) in sched.iter().zip(&infos).enumerate() {
        let label = label.as_str();
        let settings = super::settings_on_device(info, &extra, rotational);
        let mut groups = GroupTree::new();
        let (jobs, groupids) = build_jobs(&file, capacity, args.seed, &mut groups)?;
        let mut sched = info
            .build(&settings, &groups)
            .map_err(|e| anyhow::anyhow!("scheduler {}: {e}", label))?;
        let file_handle = tgt
            .file
            .try_clone()
            .with_context(|| format!("{target_name}: duplicate the file handle"))?;
        let file_handle = match &args.drive {
            // An emulated drive's data is served from the page cache: the model, not the
            // host's disk, gives the time.
            Some(_) => std::fs::OpenOptions::new()
                .read(true)
                .write(writes)
                .open(&target_path)
                .with_context(|| format!("{target_name}: open buffered for the emulated drive"))?,
            None => file_handle,
        };
        let backend =
            UringBackend::new(file_handle, tgt.size, elevator_real::uring::DEFAULT_ENTRIES)
                .context("set up io_uring (is it disabled by kernel.io_uring_disabled?)")?;
        let clock = elevator_real::MonotonicClock::start();
        let mut backend = match &args.drive {
            Some(d) => Device::Emulated(Box::new(
                elevator_real::Emulated::new(backend, super::emulate::model(d)?, clock)
                    .with_spin(elevator_real::emulate::SPIN),
            )),
            None => Device::Real(Box::new(backend)),
        };
        let opts = RunOptions {
            verify: args.verify,
            stop: Some(&STOP),
            time_limit: None,
            run_id: args.seed ^ (n as u64) << 48 ^ 0x5eed,
            seed: args.seed,
            ramp,
            request_log: args.out.request_log.is_some()
                || args.out.blktrace_out.is_some()
                || page.is_on(),
            progress: None,
            // An emulated drive is the simulator's device on the real clock: jobs woken at the
            // same instant (every job at the start) go in job order, as `sim` polls them, so
            // the two runs differ only by the clock. On a real device the seeded draw stands
            // for independent threads racing.
            ties_in_job_order: args.drive.is_some(),
            groups: groups.clone(),
            non_rotational: rotational == Some(false),
        };
        let live = crate::progress::Live::start(label, expected_length(&file, ramp));
        let opts = RunOptions {
            progress: Some(live.counter()),
            ..opts
        };
        let result = match &mut backend {
            Device::Real(b) => {
                elevator_real::run_with_clock(b.as_mut(), &clock, sched.as_mut(), jobs, &opts)
            }
            Device::Emulated(b) => {
                elevator_real::run_with_clock(b.as_mut(), &clock, sched.as_mut(), jobs, &opts)
            }
        };
        let (mut report, err) = match result {
            Ok(r) => (r, None),
            Err(f) => (*f.partial, Some(f.error)),
        };
        // Named as the user named it (`none`, not our registry's `noop`).
        report.scheduler = label.to_string();
        live.finish();
        // A job file or drive spec changed mid-run: the runs are not of one input.
        unchanged.check()?;
        let emulation = match (&backend, &drive_name) {
            (Device::Emulated(b), Some(d)) => Some((d.clone(), b.lateness().summary())),
            _ => None,
        };
        drop(backend);
        // A failed output is reported with the others at the end; the results are kept.
        outcomes.keep(args.out.write_request_log(label, &report));
        if let Some(dir) = &args.out.blktrace_out {
            outcomes.keep(super::run_blktrace::write(dir, label, &report));
        }
        text.push_str(&fio_text(&report, &groupids, err.as_ref()));
        let mut behind = None;
        if let Some((d, s)) = &emulation {
            let (line, warn) = super::emulate::describe(d, s);
            text.push_str(&format!("  {line}\n"));
            if let Some(w) = warn {
                crate::output::say_str(&format!("warning: {}: {w}\n", label));
                if matches!(s.verdict(), elevator_real::emulate::Verdict::Behind(_)) {
                    behind = Some(w);
                }
            }
        }
        text.push('\n');
        let mut v = fio_json(&report, &groupids, &target_name);
        if let Some(e) = &err {
            fio_json_failed(&mut v, e);
        }
        if let (Some((d, s)), Some(obj)) = (&emulation, v.get_mut("elevator")) {
            obj["emulation"] = super::emulate::json(d, s);
        }
        json_runs.push(v);
        table_rows(&report, &mut rows);
        outcomes.keep(crate::report::real::run_plots(&page, &target_name, &report));
        let interrupted = report.interrupted;
        if page.is_on() {
            recorded.push(report);
        }
        if let Some(e) = err {
            failure = Some(anyhow::anyhow!("scheduler {}: {e}", label));
            break;
        }
        if interrupted {
            failure = Some(anyhow::anyhow!(
                "interrupted: the report above is partial (no I/O was left in flight)"
            ));
            break;
        }
        if let Some(w) = behind {
            failure = Some(anyhow::anyhow!("scheduler {}: {w}", label));
            break;
        }
    }
    // The file is still ours (only our jobs wrote it): the next run reuses it. Re-marked even
    // when an output failed, so the next run is not refused for a file only we wrote.
    outcomes.keep(tgt.remember().map_err(anyhow::Error::from));
    page.table(
        &format!("{} on {target_name}", args.job_file.display()),
        &table_header(),
        &rows,
    );
    outcomes.keep(crate::report::real::latency_cdf(&page, &recorded));
    let json_doc = || -> anyhow::Result<String> {
        let v = if json_runs.len() == 1 {
            json_runs[0].clone()
        } else {
            serde_json::json!({ "runs": json_runs })
        };
        Ok(serde_json::to_string_pretty(&v)? + "\n")
    };
    let out = match args.output_format {
        Format::Normal => {
            if infos.len() > 1 {
                text.push_str(
                    "comparison (one run per scheduler, same target, one after another):\n",
                );
                text.push_str(&table(&rows));
            }
            text
        }
        Format::Json => json_doc()?,
    };
    let printed = match &args.output {
        Some(p) => elevator_workload::input::write_output(p, &out)
            .with_context(|| format!("--output: write {}", p.display())),
        None => {
            if !(args.output_format == Format::Normal && json_stdout) {
                crate::output::out_str(&out);
            } else {
                crate::output::say_str(&out);
            }
            Ok(())
        }
    };
    if printed.is_err() && args.output.is_some() {
        // The report could not be written where asked: print it rather than lose it.
        crate::output::say_str(&out);
    }
    outcomes.keep(printed);
    if let Some(p) = &args.out.json {
        let doc = json_doc()?;
        if p.as_os_str() == "-" {
            if !(args.output_format == Format::Json && args.output.is_none()) {
                crate::output::out_str(&doc);
            }
        } else {
            outcomes.keep(
                elevator_workload::input::write_output(p, doc)
                    .with_context(|| format!("--json: write {}", p.display())),
            );
        }
    }
    outcomes.keep(page.write(args.out.report.as_deref()));
    match failure {
        Some(e) => {
            outcomes.keep::<()>(Err(e));
            outcomes.finish()
        }
        None => outcomes.finish(),
    }
}

/// The device a run drives: the target itself, or a drive emulated over it.
enum Device {
    Real(Box<UringBackend>),
    Emulated(Box<elevator_real::Emulated<UringBackend, elevator_real::MonotonicClock>>),
}
