//! `elevator sim JOB.fio --drive SPEC --sched a,b`: a fio job file on a simulated drive,
//! reported exactly as `elevator run` reports it on a device.
//!
//! The job file is parsed by the same parser and built into the same jobs as `elevator run`
//! ([`super::run::build_jobs`]: `numjobs` clones, `stonewall` phases, groups, priorities), and
//! the report is the executor's ([`elevator_real::report`]): fio-like text, or fio-compatible
//! JSON (`jobs[]` with `read` / `write` `iops`, `bw`, `clat_ns` / `lat_ns` percentiles ...),
//! so one job file gives two documents of one shape, the simulator's and the device's, to
//! compare field by field. What differs: the JSON's `elevator.target` is `sim:<drive>` and
//! `elevator.simulated` is true; `timestamp` is 0, so the same file and seed give the same
//! bytes. `ramp_time` leaves the ramp's completions out of the figures as the executor does.
//! `--host` charges every I/O the host CPU time a host spec gives its scheduler
//! ([`elevator_sim::cpu`]); `--host-drives N` makes the simulated drive one of N identical
//! drives every job spreads its I/O over, sharing the cores' time with the others. With
//! `--host`, a job's `cpus_allowed` (after `cpus_allowed_policy`) are the cores it runs on: a
//! job pinned to one core submits and reaps all its I/O there ([`JobSlot::cpus`]); a core the
//! host does not have is refused naming the line. Without `--host` there are no cores and
//! `cpus_allowed` changes nothing.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use anyhow::Context;
use elevator_core::{registry, GroupTree, Nanos, Settings, SECTOR_BYTES};
use elevator_real::report::{fio_json, fio_text};
use elevator_sim::cpu::CpuSpec;
use elevator_sim::{Device, DriveModel, Simulation};
use elevator_workload::fio_file;
use elevator_workload::traces::blktrace_out::BlktraceWriter;
use serde_json::Value;

use super::run::{build_jobs, ramp_time, Format};
use crate::output;

/// The drive a job file runs on when `--drive` is not given.
pub const DEFAULT_DRIVE: &str = "samsung-980pro-1tb";

/// Options of a job-file run (the `elevator sim` flags that apply).
pub struct Opts<'a> {
    /// The job file.
    pub job_file: &'a Path,
    /// `--drive`, if given.
    pub drive: Option<&'a str>,
    /// `--host`, if given: the host CPU model's spec.
    pub host: Option<&'a str>,
    /// `--host-drives`: the identical drives the host's jobs spread their I/O over.
    pub host_drives: std::num::NonZeroU32,
    /// `--sched`.
    pub sched: &'a [String],
    /// `--set`, parsed.
    pub extra: &'a Settings,
    /// `--seed` (default 1, as `elevator run`).
    pub seed: u64,
    /// `--wakeup-us`.
    pub wakeup: Nanos,
    /// `--json`.
    pub json: Option<&'a Path>,
    /// `--output-format`.
    pub format: Format,
    /// `--blktrace-out`.
    pub blktrace_out: Option<&'a Path>,
    /// `--max-ios` (default [`elevator_campaign::fio::MAX_SIMULATED_IOS`]).
    pub max_ios: u64,
}

/// Whether `arg` names a fio job file rather than a scenario: a `.fio`, `.job` or `.ini` file,
/// or an existing file (not `.toml`) written as fio's `key=value` lines with at least one of
/// fio's workload options (`rw`, `bs`, `iodepth`, `ioengine` ...) and nothing of TOML's
/// (`[[table]]`, quoted values).
pub fn is_job_file(arg: &str) -> bool {
    let path = Path::new(arg);
    match path.extension().and_then(|e| e.to_str()) {
        Some("fio" | "job" | "ini") => return true,
        Some("toml") => return false,
        _ => {}
    }
    const FIO_KEYS: [&str; 8] = [
        "rw",
        "readwrite",
        "bs",
        "blocksize",
        "iodepth",
        "ioengine",
        "numjobs",
        "time_based",
    ];
    // Bounded: `/dev/zero` or a 1 GB file is not read whole (then refused as a scenario).
    let Ok(bytes) = elevator_workload::fio_file::read_bytes(path) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut fio = false;
    for l in text.lines().map(str::trim) {
        if l.starts_with("[[") || l.contains("= \"") || l.contains("=\"") {
            return false;
        }
        let key = l.split_once('=').map_or(l, |(k, _)| k).trim();
        fio |= FIO_KEYS.contains(&key);
    }
    fio
}

/// A simulated drive, rotational or SSD, by built-in name or spec file.
pub fn device(name: &str) -> anyhow::Result<Box<dyn Device>> {
    let drive = DriveModel::resolve(name).map_err(|e| anyhow::anyhow!("--drive: {e}"))?;
    Ok(drive.device())
}

/// Refuse a job whose `cpus_allowed` names a core the host model does not have, as fio
/// refuses a CPU beyond the machine's ("CPU N too large").
fn check_cpus(file: &fio_file::FioFile, host: &CpuSpec) -> anyhow::Result<()> {
    for def in &file.jobs {
        if let Some(&c) = def.cpus_allowed.as_ref().and_then(|s| s.last()) {
            if c >= host.cores {
                return Err(file
                    .job_error(
                        def,
                        "cpus_allowed",
                        format!(
                            "CPU {c} is not one of host {}'s {} cores (0-{})",
                            host.name,
                            host.cores,
                            host.cores - 1
                        ),
                    )
                    .into());
            }
        }
    }
    Ok(())
}

/// Run the job file under each scheduler on the simulated drive.
pub fn run(o: Opts) -> anyhow::Result<()> {
    let file = fio_file::read(o.job_file)?;
    // Bounded as a scenario's simulated times are (a day): `runtime=1000h` ran for hours.
    file.check_simulated_time(elevator_sim::scenario::MAX_SIMULATED_S)?;
    let drive = o.drive.unwrap_or(DEFAULT_DRIVE);
    let probe = device(drive)?;
    let capacity = probe.capacity_sectors() * SECTOR_BYTES;
    // Bounded by the work it implies too: `size=900g bs=512` (1.9e9 I/Os) ran for hours.
    elevator_campaign::fio::check_simulated_work(&file, capacity, o.max_ios)?;
    // And by its simulated time at the rate it starts at: a day of `time_based` 512-byte
    // reads (10^9 I/Os) ran for hours.
    let model =
        elevator_sim::DriveModel::resolve(drive).map_err(|e| anyhow::anyhow!("--drive: {e}"))?;
    elevator_campaign::fio::check_simulated_time_work(&file, &model, o.max_ios)?;
    let target = format!("sim:{}", probe.name());
    let rotational = !probe.non_rotational();
    let host = o
        .host
        .map(CpuSpec::resolve)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--host: {e}"))?;
    if let Some(h) = &host {
        check_cpus(&file, h)?;
    }
    let infos = super::find_schedulers(o.sched)?;
    super::check_sets(o.extra, o.sched)?;
    let ramp = ramp_time(&file)?;
    // Build the jobs and every scheduler once before anything runs, so a bad job or an
    // out-of-range --set fails at once.
    build_jobs(&file, capacity, o.seed, &mut GroupTree::new())?;
    let settings =
        |info: &registry::SchedulerSpec| super::settings_on_device(info, o.extra, Some(rotational));
    for info in &infos {
        info.build(&settings(info), &GroupTree::new())
            .map_err(|e| super::blame_set(info.name, &super::settings_for(info, o.extra), e))?;
    }
    output::json_to_stdout(o.json);
    let mut text = String::new();
    let mut docs: Vec<Value> = Vec::new();
    let mut rows = Vec::new();
    // `sim` of a job file and `replay` default to different drives: the drive is said, and
    // whether it is the default (round 22's review).
    text.push_str(&format!(
        "drive: {}{}\n\n",
        probe.name(),
        match o.drive {
            // A spec file that keeps a built-in's name read as the built-in.
            Some(d) if std::path::Path::new(d).is_file() => format!(" (from {d})"),
            Some(_) => String::new(),
            None => format!(
                ", the default for a fio job (replay's is {}); --drive NAME for another \
                 (`elevator list`)",
                super::replay::DEFAULT_DRIVE
            ),
        }
    ));
    // One simulated run per scheduler, each up to minutes: a bar on a terminal.
    let bar = crate::progress::bar(infos.len(), "sim");
    for (label, info) in o.sched.iter().zip(&infos) {
        bar.set_message(format!("sim under {label}"));
        let mut groups = GroupTree::new();
        let (jobs, groupids) = build_jobs(&file, capacity, o.seed, &mut groups)?;
        let sched = info
            .build(&settings(info), &groups)
            .map_err(|e| anyhow::anyhow!("scheduler {}: {e}", label))?;
        let mut sim = Simulation::new(device(drive)?, sched, groups);
        // The time-implied work above is the pace of the run's start: a run doing more
        // stops at the bound.
        sim.bound_ios(o.max_ios);
        sim.set_ramp(Nanos(ramp.as_nanos() as u64));
        sim.set_wakeup_latency(o.wakeup);
        if let Some(h) = &host {
            sim.set_host_cpu(h);
            sim.set_host_drives(o.host_drives);
        }
        let writer = match o.blktrace_out {
            Some(dir) => {
                let w = BlktraceWriter::create(dir, label)
                    .with_context(|| format!("--blktrace-out {}", dir.display()))?;
                let w = Rc::new(RefCell::new(w));
                sim.set_observer(Box::new(w.clone()));
                Some(w)
            }
            None => None,
        };
        for (j, cpus) in jobs.into_iter().zip(file.clone_cpus()) {
            let phase = j.phase;
            let slot = elevator_campaign::fio::job_slot(j).cpus(cpus);
            sim.add_job_in_phase(slot, phase);
        }
        let report = sim.run(None);
        report
            .job_error()
            .map_err(|e| anyhow::anyhow!("{} under {}: {e}", o.job_file.display(), label))?;
        let mut report = as_run_report(report);
        // Named as the user named it (`none`, not our registry's `noop`).
        report.scheduler = label.clone();
        if let Some(w) = writer {
            super::common::finish_blktrace(&w)?;
        }
        text.push_str(&fio_text(&report, &groupids, None));
        text.push('\n');
        let mut doc = fio_json(&report, &groupids, &target);
        doc["timestamp"] = 0.into();
        doc["elevator"]["simulated"] = true.into();
        doc["elevator"]["seed"] = o.seed.into();
        docs.push(doc);
        super::run::table_rows(&report, &mut rows);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if infos.len() > 1 {
        text.push_str(&format!(
            "comparison (one simulated run per scheduler, {target}, seed {}):\n",
            o.seed
        ));
        text.push_str(&super::run::table(&rows));
    }
    let doc = if docs.len() == 1 {
        docs.pop().expect("one run")
    } else {
        serde_json::json!({ "runs": docs })
    };
    // JSON on stdout (`--output-format json`, `--json -`): the text goes to stderr, or nowhere
    // with `--output-format json`, as `elevator run` prints only the JSON.
    if o.format == Format::Json {
        output::json_to_stdout(Some(Path::new("-")));
        output::write_json(Path::new("-"), &doc)?;
    } else {
        output::say_str(&text);
    }
    match o.json {
        Some(p) if p.as_os_str() == "-" && o.format == Format::Json => {}
        Some(p) => output::write_json(p, &doc)?,
        None => {}
    }
    Ok(())
}

/// A simulated run in the shape of a run of the executor, for its reports.
fn as_run_report(r: elevator_sim::RunReport) -> elevator_real::RunReport {
    elevator_real::RunReport {
        scheduler: r.scheduler,
        jobs: r
            .jobs
            .into_iter()
            .map(|j| elevator_real::JobReport {
                name: j.name,
                group: j.group_path,
                phase: j.phase,
                metrics: j.metrics,
            })
            .collect(),
        elapsed: r.end,
        interrupted: false,
        abandoned: 0,
        verified_bytes: 0,
        requests: Vec::new(),
        disk: r.disk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The job files under `dir`, recursively.
    fn job_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                job_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "fio") {
                out.push(path);
            }
        }
    }

    /// Every job file the docs and benches name parses and builds into jobs for a drive of
    /// the 980 PRO's size, as `elevator sim` and `elevator run` build them: a documented
    /// command cannot fail on its own job file.
    #[test]
    fn every_job_file_in_docs_and_bench_builds() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["docs", "bench"] {
            job_files(&root.join(dir), &mut files);
        }
        assert!(files.len() >= 10, "{files:?}");
        for path in &files {
            let file = fio_file::read(path).unwrap_or_else(|e| panic!("{e}"));
            ramp_time(&file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let (jobs, _) = build_jobs(&file, 1_000_204_886_016, 1, &mut GroupTree::new())
                .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            assert!(!jobs.is_empty(), "{}", path.display());
        }
    }
}
