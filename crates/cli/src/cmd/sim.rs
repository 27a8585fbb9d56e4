//! `elevator sim`: run a scenario under one or more schedulers and compare; a fio job file
//! goes to [`super::sim_job`].

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::Context;
use elevator_workload::traces::blktrace_out::BlktraceWriter;

use crate::output::say;

use elevator_core::Settings;
use serde::Serialize;

use crate::output;
use crate::report::Sink;
use crate::scenarios;

/// Arguments of `elevator sim`.
#[derive(clap::Args)]
pub struct Args {
    /// A scenario TOML file, the name of a built-in scenario (`elevator list scenarios`), or a
    /// fio job file (`.fio`, or fio's `key=value` lines), reported as `elevator run` reports it.
    scenario: String,
    /// fio job files only: the simulated drive, a built-in name or a drive TOML, rotational
    /// or SSD (default samsung-980pro-1tb, the NVMe SSD; a scenario names its own drive).
    #[arg(long, value_name = "NAME|FILE")]
    drive: Option<String>,
    /// fio job files only: charge each I/O the host CPU time this host spec gives the
    /// scheduler (a built-in name such as `icpe24-10core`, or a `kind = "host-cpu"` TOML):
    /// cores, per-I/O time, a scheduler's device-wide lock (docs/ssd-model.md). Default: none.
    #[arg(long, value_name = "NAME|FILE")]
    host: Option<String>,
    /// With --host: the host has N identical drives and every job spreads its I/O over all of
    /// them (fio's `filename=a:b:...`), the simulated drive one of them; per I/O here a core
    /// serves N - 1 more on the others, each costing what this one did (a mean field,
    /// docs/ssd-model.md). The job file gives what one drive sees (e.g. iodepth 16 for a job
    /// of iodepth 128 over eight drives). Default 1.
    #[arg(long, value_name = "N", requires = "host",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    host_drives: Option<u32>,
    /// The most I/Os the run may imply: by the jobs' sizes (`size`, `io_size`,
    /// `number_ios`), by a `runtime` (a scenario's `duration_s`) at the rate the run starts
    /// at, and by the share of their work a scenario's compile, dependent-reader and
    /// stream-writer jobs (and a trace job's requests) do in their first I/Os; a run that
    /// does more than that told is stopped at the bound with an error. With --sweep, also
    /// the most all the cells may imply together (each cell's I/Os, told cell by cell before
    /// any runs, and 1000 for its set-up). An I/O counts once per started 64 KiB, and a
    /// compile's page-cache operations once per 4 (what they cost the simulator). Default
    /// 100000000 (minutes of simulation); raise it to run a longer job or sweep as asked.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_ios: Option<u64>,
    /// fio job files only: report as fio-like text, or as fio-compatible JSON on stdout.
    #[arg(long, value_enum, default_value_t = super::run::Format::Normal)]
    output_format: super::run::Format,
    #[command(flatten)]
    scheds: super::common::SchedOpts,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Override the scenario's `wakeup_us`: microseconds between a completion and its job
    /// seeing it (the process wake-up latency; the scheduler dispatches first).
    #[arg(long, value_name = "US")]
    wakeup_us: Option<u32>,
    #[command(flatten)]
    out: super::common::OutputOpts,
    /// Sweep a parameter: `seed=1..5`, `drive=A,B`, `SCHED.TUNABLE=V,V`,
    /// `job.NAME.FIELD=V,V`, a group's cgroup v2 io file `/GROUP/io.weight=V,V` (also
    /// `io.bfq.weight`, `io.latency` in us, `io.max`), or `io.cost.qos=...` / `io.cost.model=...`;
    /// repeatable (the cross product, with every --sched), run on every core.
    #[arg(long, value_name = "AXIS=VALUES")]
    sweep: Vec<String>,
    /// The metric a sweep tables and plots: `end_s`, or `JOB.seconds`, `JOB.read_mb_s`,
    /// `JOB.read_mean_ms`, `JOB.read_p50_ms`, `_p90_ms`, `_p99_ms`, `_p999_ms` (p99.9), and
    /// the same of `write`.
    #[arg(long, default_value = "end_s", requires = "sweep")]
    metric: String,
    /// Draw a sweep's metric against the swept value to this SVG file.
    #[arg(long, value_name = "FILE", requires = "sweep")]
    plot: Option<PathBuf>,
    /// Write a sweep's results as Parquet: one row per job per cell, the cell's index, its
    /// scheduler and its value on every axis as columns, then every figure of the job
    /// (the table the Python package returns; docs/python.md).
    #[arg(long, value_name = "FILE", requires = "sweep")]
    parquet: Option<PathBuf>,
    /// Run one shard of a sweep: every N-th cell from cell I (0 <= I < N), so a batch system
    /// can spread a sweep (`--shard $SLURM_ARRAY_TASK_ID/N`); `elevator merge` joins the
    /// shards' `--parquet` files.
    #[arg(long, value_name = "I/N", requires = "sweep")]
    shard: Option<String>,
}

/// One scheduler's run, as JSON.
#[derive(Serialize)]
struct RunJson {
    scheduler: String,
    device: String,
    end_s: f64,
    jobs: Vec<elevator_workload::metrics::JobSummary>,
    device_stats: elevator_sim::engine::DeviceStats,
    counters: elevator_sim::engine::Counters,
    ios_completed: u64,
    /// fio's `disk_util` entry from the block layer's `/sys/block/DEV/stat` counters
    /// (requests and merges per direction, ticks, utilisation).
    disk_util: serde_json::Value,
}

#[derive(Serialize)]
struct SimJson {
    scenario: String,
    seed: u64,
    runs: Vec<RunJson>,
}

/// The columns of a scenario run's table: per job, each direction's rate and its latency as
/// fio reports it, the mean beside the percentiles fio prints by default (p50, p90, p99,
/// p99.9; `--json` has the same figures, `lat_*_ms`).
fn job_header() -> Vec<&'static str> {
    crate::output::latency_header(
        &["job", "group", "seconds"],
        &["read MB/s", "read IOPS"],
        &["write MB/s", "write IOPS"],
    )
}

/// One job's row under [`job_header`].
fn job_row(j: &elevator_workload::metrics::JobSummary) -> Vec<String> {
    let mut row = vec![j.name.clone(), j.group.clone(), format!("{:.3}", j.seconds)];
    for d in [&j.read, &j.write] {
        row.push(format!("{:.2}", d.mb_s));
        row.push(format!("{:.1}", d.iops));
        row.extend(crate::output::latency_cells(d, 2));
    }
    row
}

/// The most bytes of a scenario, job file, drive or host spec read from a FIFO (each reader
/// then applies its own, smaller, cap).
const SPEC_CAP: u64 = 4 << 20;

/// Run the scenario under each scheduler.
pub fn run(mut args: Args) -> anyhow::Result<()> {
    use super::common::{read_once, Input, Supported};
    // Read more than once (what it is, then loaded; a drive spec per run): a FIFO is copied.
    let given = read_once(
        "scenario or job file",
        std::path::Path::new(&args.scenario),
        SPEC_CAP,
    )?;
    args.scenario = given.path.display().to_string();
    let drive = match &args.drive {
        Some(d) => Some(read_once("drive spec", std::path::Path::new(d), SPEC_CAP)?),
        None => None,
    };
    if let Some(d) = &drive {
        args.drive = Some(d.path.display().to_string());
    }
    let host = match &args.host {
        Some(h) => Some(read_once("host spec", std::path::Path::new(h), SPEC_CAP)?),
        None => None,
    };
    if let Some(h) = &host {
        args.host = Some(h.path.display().to_string());
    }
    let job_file = super::sim_job::is_job_file(&args.scenario);
    // A job file runs under the scheduler `run` gives it by default, so the two reports of
    // one file compare like with like (sim gave deadline, run none).
    let sched = args
        .scheds
        .names(if job_file { "none" } else { "deadline" })?;
    let mut inputs = vec![Input::new("the scenario or job file", &args.scenario)];
    if !job_file {
        // The drive spec, host spec and traces the scenario names are inputs too, and so
        // are the drive specs a `--sweep drive=...` axis names.
        inputs.extend(super::common::files_named_in_toml(
            "a file the scenario names",
            std::path::Path::new(&args.scenario),
        ));
        for a in &args.sweep {
            if let Some(drives) = a.trim_start().strip_prefix("drive=") {
                for d in drives.split(',').map(str::trim) {
                    if std::fs::metadata(d).is_ok_and(|m| m.is_file()) {
                        inputs.push(Input::new("a drive spec the sweep names", d));
                    }
                }
            }
        }
    }
    for (what, p) in [
        ("the drive spec", &args.drive),
        ("the host spec", &args.host),
    ] {
        if let Some(p) = p {
            inputs.push(Input::new(what, p));
        }
    }
    if job_file {
        // What a job file's run does not do is refused, not ignored.
        anyhow::ensure!(
            args.sweep.is_empty(),
            "--sweep (and --metric, --plot) sweep a scenario; {} is a fio job file (run it once \
             per value instead)",
            args.scenario
        );
        args.out.check(
            "sim of a fio job file",
            Supported {
                json: true,
                blktrace_out: true,
                ..Supported::default()
            },
            &sched,
            &inputs,
            &[],
        )?;
        return super::sim_job::run(super::sim_job::Opts {
            job_file: std::path::Path::new(&args.scenario),
            drive: args.drive.as_deref(),
            host: args.host.as_deref(),
            host_drives: args
                .host_drives
                .and_then(std::num::NonZeroU32::new)
                .unwrap_or(std::num::NonZeroU32::MIN),
            sched: &sched,
            extra: &super::parse_sets(&args.scheds.set)?,
            seed: args.seed.unwrap_or(1),
            wakeup: elevator_core::Nanos::from_us(u64::from(args.wakeup_us.unwrap_or(0))),
            json: args.out.json.as_deref(),
            format: args.output_format,
            blktrace_out: args.out.blktrace_out.as_deref(),
            max_ios: args
                .max_ios
                .unwrap_or(elevator_campaign::fio::MAX_SIMULATED_IOS),
        });
    }
    // Name only the flags given (an error listing all three blamed flags the user did not
    // give), each with why a scenario does without it (each was told "a scenario names its
    // own drive").
    let given: Vec<&str> = [
        (
            "--drive (a scenario names its own drive)",
            args.drive.is_some(),
        ),
        (
            "--host (a scenario runs without the host CPU model)",
            args.host.is_some(),
        ),
        (
            "--output-format (a scenario has its own report; --json writes it as JSON)",
            args.output_format != super::run::Format::Normal,
        ),
    ]
    .into_iter()
    .filter_map(|(flag, on)| on.then_some(flag))
    .collect();
    anyhow::ensure!(
        given.is_empty(),
        "{}: {} to fio job files only",
        given.join(", "),
        if given.len() == 1 { "applies" } else { "apply" }
    );
    let plot: Vec<(&str, &std::path::Path)> =
        [("--plot", &args.plot), ("--parquet", &args.parquet)]
            .into_iter()
            .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
            .collect();
    let sweep = !args.sweep.is_empty();
    if let Some(p) = &args.parquet {
        super::common::check_table_file("--parquet", p)?;
    }
    args.out.check(
        if sweep { "sim --sweep" } else { "sim" },
        Supported {
            request_log: false,
            // A sweep keeps no request trace (a cell's requests: the Python API's
            // `requests=True`).
            blktrace_out: !sweep,
            ..Supported::ALL
        },
        &sched,
        &inputs,
        &plot,
    )?;
    output::json_to_stdout(args.out.json.as_deref());
    // Stamped before the first read: each scheduler's run reads the scenario's traces again.
    let unchanged = super::common::Unchanged::take(&inputs);
    let mut scenario = scenarios::load(&args.scenario)?;
    // Bounded by the work it implies, as a job file is: a day of `duration_s` at a drive's
    // cache rate, or a fio job's `size=900g bs=512`, computed for hours.
    let max_ios = args
        .max_ios
        .unwrap_or(elevator_campaign::fio::MAX_SIMULATED_IOS);
    scenario.check_work(max_ios)?;
    if let Some(us) = args.wakeup_us {
        scenario.wakeup = elevator_core::Nanos::from_us(u64::from(us));
    }
    let extra = super::parse_sets(&args.scheds.set)?;
    let seed = args.seed.unwrap_or(scenario.seed);
    super::check_sets(&extra, &sched)?;
    // Every scheduler is built before any runs, so a misspelt name or an out-of-range --set
    // fails at once, and each error names whose fault it is.
    let mut scheds = Vec::new();
    for name in &sched {
        let info = super::find_scheduler(name)?;
        scenario.scheduler(name, &Settings::new())?;
        let sched = scenario
            .scheduler(name, &super::settings_for(&info, &extra))
            .map_err(|e| anyhow::anyhow!("--set: {}", e.message))?;
        scheds.push(sched);
    }
    if !args.sweep.is_empty() {
        let spec = elevator_campaign::GridSpec {
            scenario: Some(args.scenario.clone()),
            sched: sched.clone(),
            set: extra
                .names()
                .map(|k| (k.to_string(), extra.raw(k).unwrap_or_default()))
                .collect(),
            seed: Some(seed),
            wakeup_us: args.wakeup_us,
            sweep: args.sweep.clone(),
            max_ios: args.max_ios,
            ..Default::default()
        };
        return crate::sweep::run(crate::sweep::Opts {
            grid: elevator_campaign::Grid::new(&spec)?,
            shard: args
                .shard
                .as_deref()
                .map(crate::sweep::parse_shard)
                .transpose()?,
            metric: &args.metric,
            json: args.out.json.as_deref(),
            parquet: args.parquet.as_deref(),
            report: args.out.report.as_deref(),
            plot: args.plot.as_deref(),
        });
    }
    let mut runs = Vec::new();
    let mut outcomes = super::common::Outcomes::default();
    let page = Sink::new(
        args.out.report.is_some(),
        &format!("elevator sim {}", scenario.name),
    );
    let mut recorded = Vec::new();
    for (name, sched) in sched.iter().zip(scheds) {
        let mut sim = scenario.simulation(sched, Some(seed))?;
        // The work told above is an estimate from the run's start: a run doing more stops
        // at the bound (`RunReport::job_error`) instead of computing on.
        sim.bound_ios(max_ios);
        if page.is_on() {
            sim.record_requests();
        }
        let writer = match &args.out.blktrace_out {
            Some(dir) => outcomes
                .keep(
                    BlktraceWriter::create(dir, name)
                        .with_context(|| format!("--blktrace-out {}", dir.display())),
                )
                .map(|w| {
                    let w = Rc::new(RefCell::new(w));
                    sim.set_observer(Box::new(w.clone()));
                    w
                }),
            None => None,
        };
        let mut report = sim.run(scenario.limit);
        // Named as the user named it (`none`, not our registry's `noop`).
        report.scheduler = name.clone();
        // A trace that changed or failed part-way: the figures are not the scenario's.
        unchanged.check()?;
        report
            .job_error()
            .map_err(|e| anyhow::anyhow!("under {name}: {e}"))?;
        if let Some(w) = writer {
            outcomes.keep(super::common::finish_blktrace(&w));
        }
        say!(
            "== {} on {} ({}): {:.3} s simulated",
            report.scheduler,
            report.device,
            scenario.name,
            report.end.as_secs_f64()
        );
        let rows: Vec<Vec<String>> = report.summaries().iter().map(job_row).collect();
        let header = job_header();
        output::say_str(&output::table(&header, &rows));
        say!();
        let title = format!("{} under {name} (seed {seed})", scenario.name);
        page.table(&title, &header, &rows);
        outcomes.keep(crate::report::sim::run_plots(&page, name, &title, &report));
        runs.push(RunJson {
            scheduler: report.scheduler.clone(),
            device: report.device.clone(),
            end_s: report.end.as_secs_f64(),
            jobs: report.summaries(),
            device_stats: report.device_stats.clone(),
            counters: report.counters,
            ios_completed: report.ios_completed,
            disk_util: elevator_real::report::disk_util_json(&report.disk, "elevator", report.end),
        });
        if page.is_on() {
            recorded.push((name.as_str(), report));
        }
    }
    let labelled: Vec<(&str, &elevator_sim::RunReport)> =
        recorded.iter().map(|(n, r)| (*n, r)).collect();
    let title = format!("{} (seed {seed}), every job", scenario.name);
    outcomes.keep(crate::report::sim::latency_cdf(
        &page,
        "latency-cdf",
        &title,
        &labelled,
        &[],
        false,
    ));
    if let Some(path) = &args.out.json {
        outcomes.keep(output::write_json(
            path,
            &SimJson {
                scenario: scenario.name.clone(),
                seed,
                runs,
            },
        ));
    }
    outcomes.keep(page.write(args.out.report.as_deref()));
    outcomes.finish()
}
