//! The grid: a source crossed with schedulers and axes, and one cell of it run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::{GroupTree, Nanos, Settings, SECTOR_BYTES};
use elevator_sim::engine::{JobSlot, RequestRecord};
use elevator_sim::scenario::Scenario;
use elevator_sim::{DriveModel, RunReport, Simulation};
use elevator_workload::fio_file::{self, FioFile};
use elevator_workload::jobs::replay::{ReplayJob, ReplayOptions};
use elevator_workload::metrics::JobSummary;
use elevator_workload::traces::blktrace::BlkView;
use elevator_workload::traces::{open, OpenOptions, TraceFormat};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Error;

/// Cells a grid may have at most (schedulers times every axis's values).
pub const MAX_CELLS: u64 = 100_000;

/// The drive a fio job file runs on when the grid names none (the NVMe SSD).
pub const DEFAULT_FIO_DRIVE: &str = "samsung-980pro-1tb";

/// The drive a trace is replayed on when the grid names none.
pub const DEFAULT_TRACE_DRIVE: &str = "cheetah9lp";

/// A grid as data: what the CLI's flags and the Python API's arguments say, and what a
/// campaign stores beside its cells (JSON). Exactly one source is given: `scenario`,
/// `scenario_toml`, `fio`, `fio_text` or `trace`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GridSpec {
    /// A built-in scenario's name or a scenario file's path.
    pub scenario: Option<String>,
    /// A scenario's TOML text.
    pub scenario_toml: Option<String>,
    /// A fio job file's path.
    pub fio: Option<String>,
    /// A fio job file's text.
    pub fio_text: Option<String>,
    /// Block trace files (one format; several are merged by time).
    pub trace: Vec<String>,
    /// The trace format (`blktrace`, `msr` ...); detected when `None`.
    pub trace_format: Option<String>,
    /// Replay the trace closed loop (each process's synchronous requests wait for the
    /// previous one plus the recorded think time); open loop otherwise.
    pub closed_loop: bool,
    /// Replay at most this many requests of the trace.
    pub max_requests: Option<u64>,
    /// Divide the trace's recorded times and gaps by this (default 1: as recorded).
    pub speed: Option<f64>,
    /// Where `scenario_toml` or `fio_text` came from, for errors (default `<input>`).
    pub origin: Option<String>,
    /// The directory a scenario's drive paths resolve against.
    pub dir: Option<String>,
    /// The drive of a fio job file or a trace: a built-in name or a drive TOML (a scenario
    /// names its own; sweep `drive=` to change it).
    pub drive: Option<String>,
    /// Schedulers (default `deadline`).
    pub sched: Vec<String>,
    /// Tunables for every scheduler that has them (`NAME`), or one (`SCHED.NAME`).
    pub set: BTreeMap<String, i64>,
    /// The seed when no axis sweeps it (default: the scenario's, or 1).
    pub seed: Option<u64>,
    /// Microseconds between a completion and its job seeing it (a scenario's `wakeup_us`).
    pub wakeup_us: Option<u32>,
    /// Axes, `KEY=VALUES` as `elevator sim --sweep` takes them, in order.
    pub sweep: Vec<String>,
    /// Keep every request's record (Q, I, D, C times, sector, size, process).
    pub requests: bool,
}

/// One swept parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Axis {
    /// The seed.
    Seed(Vec<u64>),
    /// The drive (built-in names or drive files).
    Drive(Vec<String>),
    /// A tunable of scheduler `sched`.
    Tunable {
        /// The scheduler that has it.
        sched: String,
        /// Its sysfs name.
        name: String,
        /// The values.
        values: Vec<i64>,
    },
    /// A field of the scenario job named `job`.
    Job {
        /// The job's name.
        job: String,
        /// The field, as in the scenario file.
        field: String,
        /// The values, as TOML values.
        values: Vec<toml::Value>,
    },
}

/// A cell's value on one axis.
#[derive(Clone, Debug, PartialEq)]
pub enum Coord {
    /// A seed or a tunable's value.
    Int(i64),
    /// A drive, or a job field's value as a user would type it.
    Text(String),
}

impl std::fmt::Display for Coord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Coord::Int(i) => write!(f, "{i}"),
            Coord::Text(s) => f.write_str(s),
        }
    }
}

impl Axis {
    /// How the axis is written (`seed`, `drive`, `anticipatory.antic_expire`, `job.x.bs`):
    /// its column in tables.
    pub fn key(&self) -> String {
        match self {
            Axis::Seed(_) => "seed".into(),
            Axis::Drive(_) => "drive".into(),
            Axis::Tunable { sched, name, .. } => format!("{sched}.{name}"),
            Axis::Job { job, field, .. } => format!("job.{job}.{field}"),
        }
    }

    /// Whether its values are integers (seed, tunables) rather than text.
    pub fn is_int(&self) -> bool {
        matches!(self, Axis::Seed(_) | Axis::Tunable { .. })
    }

    /// The value at index `i`.
    pub fn coord(&self, i: usize) -> Coord {
        match self {
            Axis::Seed(v) => Coord::Int(v[i] as i64),
            Axis::Drive(v) => Coord::Text(v[i].clone()),
            Axis::Tunable { values, .. } => Coord::Int(values[i]),
            Axis::Job { values, .. } => Coord::Text(show(&values[i])),
        }
    }

    /// How many values.
    pub fn len(&self) -> usize {
        match self {
            Axis::Seed(v) => v.len(),
            Axis::Drive(v) => v.len(),
            Axis::Tunable { values, .. } => values.len(),
            Axis::Job { values, .. } => values.len(),
        }
    }

    /// Whether it has no values (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A TOML value as a user would type it.
fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `LO..HI` (inclusive) or a comma-separated list, as integers.
fn integers(key: &str, text: &str) -> Result<Vec<i64>, Error> {
    let arg = || format!("--sweep {key}");
    let int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| Error::arg(arg(), format!("{s:?} is not an integer")))
    };
    if let Some((lo, hi)) = text.split_once("..") {
        let (lo, hi) = (int(lo)?, int(hi)?);
        if lo > hi {
            return Err(Error::arg(arg(), format!("empty range {lo}..{hi}")));
        }
        // Counted without overflow (i64::MIN..i64::MAX once wrapped to a short range and
        // was then collected: 2^64 values).
        if hi.abs_diff(lo) >= 100_000 {
            return Err(Error::arg(arg(), format!("{lo}..{hi} is too many values")));
        }
        return Ok((lo..=hi).collect());
    }
    text.split(',').map(int).collect()
}

/// A value of a job field: an integer, a float, a boolean, or else a string.
fn toml_value(s: &str) -> toml::Value {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = s.parse::<f64>() {
        toml::Value::Float(f)
    } else if let Ok(b) = s.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(s.to_string())
    }
}

/// Parse one axis, `KEY=VALUES`: `seed=1..5`, `drive=A,B`, `SCHED.TUNABLE=V,V` or
/// `job.NAME.FIELD=V,V`. Values are a comma-separated list or an inclusive integer range.
pub fn parse_axis(text: &str) -> Result<Axis, Error> {
    let (key, values) = text
        .split_once('=')
        .ok_or_else(|| Error::arg(format!("--sweep {text:?}"), "expected KEY=VALUES"))?;
    let key = key.trim();
    let arg = format!("--sweep {key}");
    if values.trim().is_empty() {
        return Err(Error::arg(arg, "no values"));
    }
    if key == "seed" {
        let v = integers(key, values)?;
        if let Some(bad) = v.iter().find(|&&s| s < 0) {
            return Err(Error::arg(arg, format!("{bad} is negative")));
        }
        return Ok(Axis::Seed(v.into_iter().map(|s| s as u64).collect()));
    }
    if key == "drive" {
        return Ok(Axis::Drive(
            values.split(',').map(|s| s.trim().to_string()).collect(),
        ));
    }
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        ["job", job, field] => Ok(Axis::Job {
            job: job.to_string(),
            field: field.to_string(),
            values: values.split(',').map(toml_value).collect(),
        }),
        [sched, name] => {
            let info = registry::find(sched)
                .ok_or_else(|| Error::arg(&arg, format!("no scheduler named {sched:?}")))?;
            if !info.has_tunable(name) {
                return Err(Error::arg(
                    arg,
                    format!("{sched} has no tunable {name:?} (elevator list shows them)"),
                ));
            }
            Ok(Axis::Tunable {
                sched: sched.to_string(),
                name: name.to_string(),
                values: integers(key, values)?,
            })
        }
        _ => Err(Error::arg(
            arg,
            "expected seed, drive, SCHED.TUNABLE or job.NAME.FIELD",
        )),
    }
}

/// Refuse a grid of more than [`MAX_CELLS`] cells, counted without building it (a product
/// that overflows is refused too).
pub fn check_grid(n_sched: usize, axes: &[Axis]) -> Result<u64, Error> {
    let mut cells = n_sched as u64;
    let mut sizes = vec![format!("{n_sched} schedulers")];
    for a in axes {
        cells = cells.saturating_mul(a.len() as u64);
        sizes.push(format!("{} values of {}", a.len(), a.key()));
    }
    if cells > MAX_CELLS {
        return Err(Error::arg(
            "--sweep",
            format!(
                "{} cells ({}) is more than the {MAX_CELLS} a sweep runs; sweep fewer values",
                if cells == u64::MAX {
                    "more than 2^64".to_string()
                } else {
                    cells.to_string()
                },
                sizes.join(" x ")
            ),
        ));
    }
    Ok(cells)
}

/// The tunables of `extra` that scheduler `info` takes: each plain `NAME` it has a tunable
/// of, and each `SCHED.NAME` whose `SCHED` is it (by name or alias; these win).
pub fn settings_for(info: &SchedulerSpec, extra: &Settings) -> Settings {
    let scoped = |key: &str| -> Option<(SchedulerSpec, String)> {
        let (sched, name) = key.split_once('.')?;
        Some((registry::find(sched)?, name.to_string()))
    };
    let mut out = Settings::new();
    for k in extra
        .names()
        .filter(|k| scoped(k).is_none() && info.has_tunable(k))
    {
        out.set(k, extra.raw(k).unwrap_or_default());
    }
    for k in extra.names() {
        if let Some((i, name)) = scoped(k) {
            if i.name == info.name {
                out.set(&name, extra.raw(k).unwrap_or_default());
            }
        }
    }
    out
}

/// Where a grid's cells get their jobs.
#[derive(Clone, Debug)]
enum Source {
    /// A scenario: its text (edited per cell by drive and job axes) and the parsed base.
    Scenario {
        text: String,
        origin: String,
        dir: Option<PathBuf>,
        base: Box<Scenario>,
    },
    /// A fio job file on a simulated drive.
    Fio { file: Box<FioFile>, drive: String },
    /// A block trace replayed on a simulated drive.
    Trace {
        paths: Vec<PathBuf>,
        opts: OpenOptions,
        drive: String,
    },
}

/// A grid ready to run: its source loaded and checked, its axes parsed, its schedulers known.
#[derive(Clone, Debug)]
pub struct Grid {
    spec: GridSpec,
    source: Source,
    sched: Vec<String>,
    extra: Settings,
    seed: u64,
    wakeup: Option<Nanos>,
    axes: Vec<Axis>,
    len: u64,
}

/// One cell's per-request records (the simulator's request log) and the names of the jobs
/// they refer to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requests {
    /// Job names, indexed by [`RequestRecord::job`].
    pub jobs: Vec<String>,
    /// Every request, in completion order.
    pub records: Vec<RequestRecord>,
}

/// One cell's result.
#[derive(Clone, Debug, PartialEq)]
pub struct CellResult {
    /// The cell's index in the grid.
    pub cell: u64,
    /// The scheduler.
    pub scheduler: String,
    /// The value on each axis, in the grid's axis order.
    pub coordinates: Vec<Coord>,
    /// The seed the cell ran with.
    pub seed: u64,
    /// The simulated device's name.
    pub device: String,
    /// When the run ended, seconds of simulated time.
    pub end_s: f64,
    /// Every job's figures, in the order the jobs were added.
    pub jobs: Vec<JobSummary>,
    /// Per-request records, when the grid keeps them.
    pub requests: Option<Requests>,
}

impl CellResult {
    /// The metrics the CLI's sweep tables: `end_s`, and per job `JOB.seconds`,
    /// `JOB.read_mb_s`, `JOB.read_iops`, `JOB.read_mean_ms`, `JOB.read_p99_ms`,
    /// `JOB.write_mb_s`, `JOB.write_p99_ms`.
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        m.insert("end_s".to_string(), self.end_s);
        for j in &self.jobs {
            let n = &j.name;
            m.insert(format!("{n}.seconds"), j.seconds);
            m.insert(format!("{n}.read_mb_s"), j.read.mb_s);
            m.insert(format!("{n}.read_iops"), j.read.iops);
            m.insert(format!("{n}.read_mean_ms"), j.read.lat_mean_ms);
            m.insert(format!("{n}.read_p99_ms"), j.read.lat_p99_ms);
            m.insert(format!("{n}.write_mb_s"), j.write.mb_s);
            m.insert(format!("{n}.write_p99_ms"), j.write.lat_p99_ms);
        }
        m
    }
}

/// What one cell runs. Two cells with equal plans give the same result.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    sched: usize,
    settings: Vec<(String, i64)>,
    seed: u64,
    drive: Option<String>,
    job_fields: Vec<(String, String, toml::Value)>,
}

impl Grid {
    /// Load and check the grid `spec` describes: its source read and parsed, every scheduler
    /// built once (so a misspelt name or an out-of-range tunable fails here), its axes parsed
    /// and its size bounded by [`MAX_CELLS`].
    pub fn new(spec: &GridSpec) -> Result<Grid, Error> {
        let sources = [
            spec.scenario.is_some(),
            spec.scenario_toml.is_some(),
            spec.fio.is_some(),
            spec.fio_text.is_some(),
            !spec.trace.is_empty(),
        ];
        if sources.iter().filter(|&&s| s).count() != 1 {
            return Err(Error::arg(
                "source",
                "give exactly one of a scenario, a fio job file (path or text) or a trace",
            ));
        }
        let origin = spec.origin.clone().unwrap_or_else(|| "<input>".into());
        let dir = spec.dir.as_ref().map(PathBuf::from);
        let source = if let Some(name) = &spec.scenario {
            let (text, origin, dir) = crate::scenarios::source(name)?;
            scenario_source(text, origin, dir, spec)?
        } else if let Some(text) = &spec.scenario_toml {
            scenario_source(text.clone(), origin, dir, spec)?
        } else if spec.fio.is_some() || spec.fio_text.is_some() {
            let file = match (&spec.fio, &spec.fio_text) {
                (Some(p), _) => fio_file::read(Path::new(p))?,
                (None, Some(t)) => fio_file::parse(Path::new(&origin), t)?,
                _ => unreachable!("one source"),
            };
            crate::fio::ramp_time(&file)?;
            Source::Fio {
                file: Box::new(file),
                drive: spec.drive.clone().unwrap_or(DEFAULT_FIO_DRIVE.into()),
            }
        } else {
            let format = spec
                .trace_format
                .as_deref()
                .map(|f| {
                    f.parse::<TraceFormat>()
                        .map_err(|e| Error::arg("trace_format", e.to_string()))
                })
                .transpose()?;
            let opts = OpenOptions {
                format,
                view: BlkView::Queue,
                accept_unsorted: false,
            };
            if let Some(x) = spec.speed {
                if !(0.001..=1e6).contains(&x) {
                    return Err(Error::arg(
                        "speed",
                        format!("{x}: not a factor from 0.001 to 1000000"),
                    ));
                }
            }
            let paths: Vec<PathBuf> = spec.trace.iter().map(PathBuf::from).collect();
            open(&paths, opts)?;
            Source::Trace {
                paths,
                opts,
                drive: spec.drive.clone().unwrap_or(DEFAULT_TRACE_DRIVE.into()),
            }
        };
        if matches!(source, Source::Scenario { .. }) && spec.drive.is_some() {
            return Err(Error::arg(
                "drive",
                "a scenario names its drive; sweep `drive=NAME` to change it",
            ));
        }
        if let Source::Fio { drive, .. } | Source::Trace { drive, .. } = &source {
            DriveModel::resolve(drive)?;
        }
        let sched = if spec.sched.is_empty() {
            vec!["deadline".to_string()]
        } else {
            spec.sched.clone()
        };
        let mut extra = Settings::new();
        for (k, v) in &spec.set {
            extra.set(k, *v);
        }
        check_sets(&extra, &sched)?;
        let axes: Vec<Axis> = spec
            .sweep
            .iter()
            .map(|a| parse_axis(a))
            .collect::<Result<_, _>>()?;
        for a in &axes {
            if let Axis::Job { .. } = a {
                if !matches!(source, Source::Scenario { .. }) {
                    return Err(Error::arg(
                        format!("--sweep {}", a.key()),
                        "job fields are swept in scenarios only",
                    ));
                }
            }
        }
        let len = check_grid(sched.len(), &axes)?;
        let seed = spec.seed.unwrap_or(match &source {
            Source::Scenario { base, .. } => base.seed,
            _ => 1,
        });
        let grid = Grid {
            spec: spec.clone(),
            source,
            sched,
            extra,
            seed,
            wakeup: spec.wakeup_us.map(|us| Nanos::from_us(u64::from(us))),
            axes,
            len,
        };
        for name in &grid.sched {
            grid.build_scheduler(name, &Settings::new(), None)?;
        }
        Ok(grid)
    }

    /// The spec the grid was made from, with a scenario file's or job file's text inlined
    /// (`scenario_toml`, `fio_text` and their `origin`), so another machine can run it
    /// without the file.
    pub fn portable_spec(&self) -> GridSpec {
        let mut s = self.spec.clone();
        match &self.source {
            Source::Scenario {
                text, origin, dir, ..
            } => {
                s.scenario = None;
                s.scenario_toml = Some(text.clone());
                s.origin = Some(origin.clone());
                s.dir = dir.as_ref().map(|d| d.display().to_string());
            }
            Source::Fio { .. } => {
                if let Some(p) = s.fio.take() {
                    if let Ok(bytes) = fio_file::read_bytes(Path::new(&p)) {
                        s.fio_text = Some(String::from_utf8_lossy(&bytes).into_owned());
                        s.origin = Some(p);
                    } else {
                        s.fio = Some(p);
                    }
                }
            }
            Source::Trace { .. } => {}
        }
        s
    }

    /// How many cells.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the grid has no cells (never: it has at least one scheduler).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The schedulers, in cell order.
    pub fn schedulers(&self) -> &[String] {
        &self.sched
    }

    /// The axes, in the order given.
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// Whether each cell keeps its per-request records.
    pub fn keeps_requests(&self) -> bool {
        self.spec.requests
    }

    /// The name of what the grid runs (the scenario's name, or the job file or trace).
    pub fn name(&self) -> String {
        match &self.source {
            Source::Scenario { base, .. } => base.name.clone(),
            Source::Fio { file, .. } => file.path.display().to_string(),
            Source::Trace { paths, .. } => paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Cell `cell`'s scheduler index and value index on every axis (the last axis turns
    /// fastest).
    fn at(&self, cell: u64) -> (usize, Vec<usize>) {
        let mut rest = cell;
        let mut at = vec![0; self.axes.len()];
        for (i, a) in self.axes.iter().enumerate().rev() {
            let n = a.len() as u64;
            at[i] = (rest % n) as usize;
            rest /= n;
        }
        (rest as usize, at)
    }

    /// Cell `cell`'s scheduler and its value on each axis.
    pub fn coordinates(&self, cell: u64) -> (String, Vec<Coord>) {
        let (s, at) = self.at(cell);
        (
            self.sched[s].clone(),
            self.axes
                .iter()
                .zip(&at)
                .map(|(a, &i)| a.coord(i))
                .collect(),
        )
    }

    /// The cells of shard `index` of `count` (0-based): every `count`-th cell from `index`,
    /// so each shard gets a share of every scheduler.
    pub fn shard(&self, index: u64, count: u64) -> Result<Vec<u64>, Error> {
        if count == 0 || index >= count {
            return Err(Error::arg(
                "--shard",
                format!("{index}/{count}: expected I/N with 0 <= I < N"),
            ));
        }
        Ok((index..self.len).step_by(count as usize).collect())
    }

    fn plan(&self, cell: u64) -> Plan {
        let (s, at) = self.at(cell);
        let sched = &self.sched[s];
        let mut p = Plan {
            sched: s,
            settings: Vec::new(),
            seed: self.seed,
            drive: None,
            job_fields: Vec::new(),
        };
        for (axis, &i) in self.axes.iter().zip(&at) {
            match axis {
                Axis::Seed(v) => p.seed = v[i],
                Axis::Drive(v) => p.drive = Some(v[i].clone()),
                Axis::Tunable {
                    sched: s,
                    name,
                    values,
                } => {
                    if s == sched {
                        p.settings.push((name.clone(), values[i]));
                    }
                }
                Axis::Job { job, field, values } => {
                    p.job_fields
                        .push((job.clone(), field.clone(), values[i].clone()))
                }
            }
        }
        p
    }

    /// Scheduler `name` with the grid's tunables for it plus `more`, for a device whose
    /// rotational flag is `rotational` (fio and trace sources) or the scenario's groups.
    fn build_scheduler(
        &self,
        name: &str,
        more: &Settings,
        groups: Option<&GroupTree>,
    ) -> Result<Box<dyn elevator_core::Scheduler>, Error> {
        let info = registry::find(name).ok_or_else(|| {
            let known: Vec<&str> = registry::all().iter().map(|i| i.name).collect();
            Error::arg(
                "--sched",
                format!("{name:?}: no such scheduler (known: {})", known.join(", ")),
            )
        })?;
        let mut settings = settings_for(&info, &self.extra);
        for k in more.names() {
            settings.set(k, more.raw(k).unwrap_or_default());
        }
        match &self.source {
            Source::Scenario { base, .. } => base
                .scheduler(name, &settings)
                .map_err(|e| Error::arg(format!("scheduler {name}"), e.message)),
            Source::Fio { drive, .. } | Source::Trace { drive, .. } => {
                let rotational = !DriveModel::resolve(drive)?.device().non_rotational();
                let settings = info.on_device(settings, Some(rotational));
                let empty = GroupTree::new();
                info.build(&settings, groups.unwrap_or(&empty))
                    .map_err(|e| Error::arg(format!("scheduler {name}"), e.to_string()))
            }
        }
    }

    /// Run cell `cell` (a simulation, deterministic in the cell alone).
    pub fn run_cell(&self, cell: u64) -> Result<CellResult, Error> {
        if cell >= self.len {
            return Err(Error::arg(
                "cell",
                format!("{cell}: the grid has {} cells", self.len),
            ));
        }
        let plan = self.plan(cell);
        self.run_plan(&plan).map(|r| self.label(cell, r))
    }

    /// Run `cells` on the rayon pool, each distinct simulation once (a tunable axis under a
    /// scheduler without that tunable runs once for all its values); results in the order of
    /// `cells`.
    pub fn run_cells(&self, cells: &[u64]) -> Result<Vec<CellResult>, Error> {
        self.run_cells_with(cells, || {})
    }

    /// [`Grid::run_cells`], calling `done` as each distinct simulation finishes (a progress
    /// bar's tick).
    pub fn run_cells_with(
        &self,
        cells: &[u64],
        done: impl Fn() + Sync,
    ) -> Result<Vec<CellResult>, Error> {
        if let Some(&bad) = cells.iter().find(|&&c| c >= self.len) {
            return Err(Error::arg(
                "cell",
                format!("{bad}: the grid has {} cells", self.len),
            ));
        }
        let plans: Vec<Plan> = cells.iter().map(|&c| self.plan(c)).collect();
        // Equal plans found through a hash of their text: linear in the cells.
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut distinct: Vec<&Plan> = Vec::new();
        let index: Vec<usize> = plans
            .iter()
            .map(|p| {
                *seen.entry(format!("{p:?}")).or_insert_with(|| {
                    distinct.push(p);
                    distinct.len() - 1
                })
            })
            .collect();
        let results: Vec<CellResult> = distinct
            .par_iter()
            .map(|p| {
                let r = self.run_plan(p);
                done();
                r
            })
            .collect::<Result<_, _>>()?;
        Ok(cells
            .iter()
            .zip(index)
            .map(|(&c, i)| self.label(c, results[i].clone()))
            .collect())
    }

    /// `r` with cell `cell`'s index and coordinates.
    fn label(&self, cell: u64, mut r: CellResult) -> CellResult {
        let (sched, coords) = self.coordinates(cell);
        r.cell = cell;
        r.scheduler = sched;
        r.coordinates = coords;
        r
    }

    fn run_plan(&self, p: &Plan) -> Result<CellResult, Error> {
        let name = &self.sched[p.sched];
        let mut more = Settings::new();
        for (k, v) in &p.settings {
            more.set(k, *v);
        }
        let report = match &self.source {
            Source::Scenario {
                text,
                origin,
                dir,
                base,
            } => {
                let mut scenario = if p.job_fields.is_empty() && p.drive.is_none() {
                    (**base).clone()
                } else {
                    let mut s = edited(
                        text,
                        dir.as_deref(),
                        origin,
                        p.drive.as_deref(),
                        &p.job_fields,
                    )?;
                    s.wakeup = base.wakeup;
                    s
                };
                if let Some(w) = self.wakeup {
                    scenario.wakeup = w;
                }
                let mut settings = match registry::find(name) {
                    Some(info) => settings_for(&info, &self.extra),
                    None => Settings::new(),
                };
                for k in more.names() {
                    settings.set(k, more.raw(k).unwrap_or_default());
                }
                let policy = scenario
                    .scheduler(name, &settings)
                    .map_err(|e| Error::arg(format!("--sweep under {name}"), e.message))?;
                let mut sim = scenario.simulation(policy, Some(p.seed));
                if self.spec.requests {
                    sim.record_requests();
                }
                sim.run(scenario.limit)
            }
            Source::Fio { file, drive } => {
                let drive = p.drive.as_deref().unwrap_or(drive);
                let model = DriveModel::resolve(drive)?;
                let capacity = model.device().capacity_sectors() * SECTOR_BYTES;
                let mut groups = GroupTree::new();
                let (jobs, _) = crate::fio::build_jobs(file, capacity, p.seed, &mut groups)?;
                let sched = self.build_scheduler_on(name, &more, &groups, &model)?;
                let mut sim = Simulation::new(model.device(), sched, groups);
                let ramp = crate::fio::ramp_time(file)?;
                sim.set_ramp(Nanos(ramp.as_nanos() as u64));
                sim.set_wakeup_latency(self.wakeup.unwrap_or(Nanos(0)));
                if self.spec.requests {
                    sim.record_requests();
                }
                for j in jobs {
                    let slot = JobSlot::new(j.name, j.job).group(j.group).prio(j.prio);
                    sim.add_job_in_phase(slot, j.phase);
                }
                sim.run(None)
            }
            Source::Trace { paths, opts, drive } => {
                let drive = p.drive.as_deref().unwrap_or(drive);
                let model = DriveModel::resolve(drive)?;
                let device = model.device();
                let capacity = device.capacity_sectors();
                let groups = GroupTree::new();
                let sched = self.build_scheduler_on(name, &more, &groups, &model)?;
                let source = open(paths, *opts)?;
                let (job, _) = ReplayJob::new(
                    "replay",
                    source,
                    ReplayOptions {
                        closed_loop: self.spec.closed_loop,
                        speed: self.spec.speed.unwrap_or(1.0),
                        capacity_sectors: capacity,
                        max_requests: self.spec.max_requests,
                    },
                )
                .map_err(|e| Error::arg("trace", e))?;
                let mut sim = Simulation::new(device, sched, groups);
                sim.set_wakeup_latency(self.wakeup.unwrap_or(Nanos(0)));
                if self.spec.requests {
                    sim.record_requests();
                }
                sim.add_job(JobSlot::new("replay", Box::new(job)));
                sim.run(None)
            }
        };
        Ok(result(report, p.seed, self.spec.requests))
    }

    /// Scheduler `name` for a run on `model` (its rotational flag set) over `groups`.
    fn build_scheduler_on(
        &self,
        name: &str,
        more: &Settings,
        groups: &GroupTree,
        model: &DriveModel,
    ) -> Result<Box<dyn elevator_core::Scheduler>, Error> {
        let info = registry::find(name)
            .ok_or_else(|| Error::arg("--sched", format!("{name:?}: no such scheduler")))?;
        let mut settings = settings_for(&info, &self.extra);
        for k in more.names() {
            settings.set(k, more.raw(k).unwrap_or_default());
        }
        let rotational = !model.device().non_rotational();
        info.build(&info.on_device(settings, Some(rotational)), groups)
            .map_err(|e| Error::arg(format!("scheduler {name}"), e.to_string()))
    }
}

/// A run's report as a cell result (cell index and coordinates set by the caller).
fn result(report: RunReport, seed: u64, requests: bool) -> CellResult {
    let jobs = report.summaries();
    CellResult {
        cell: 0,
        scheduler: String::new(),
        coordinates: Vec::new(),
        seed,
        device: report.device.clone(),
        end_s: report.end.as_secs_f64(),
        requests: requests.then(|| Requests {
            jobs: report.jobs.iter().map(|j| j.name.clone()).collect(),
            records: report.requests,
        }),
        jobs,
    }
}

/// Every `set` must apply to at least one of `scheds`.
fn check_sets(extra: &Settings, scheds: &[String]) -> Result<(), Error> {
    let infos: Vec<SchedulerSpec> = scheds.iter().filter_map(|n| registry::find(n)).collect();
    for k in extra.names() {
        let arg = format!("--set {k}");
        match k.split_once('.') {
            Some((sched, name)) => {
                let info = registry::find(sched)
                    .ok_or_else(|| Error::arg(&arg, format!("no scheduler named {sched:?}")))?;
                if !infos.iter().any(|i| i.name == info.name) {
                    return Err(Error::arg(
                        arg,
                        format!("{} is not among the schedulers {scheds:?}", info.name),
                    ));
                }
                if !info.has_tunable(name) {
                    return Err(Error::arg(
                        arg,
                        format!("{} has no tunable {name:?}", info.name),
                    ));
                }
            }
            None => {
                if !infos.iter().any(|i| i.has_tunable(k)) {
                    return Err(Error::arg(
                        arg,
                        format!("none of the schedulers {scheds:?} has a tunable of that name"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A scenario source: the text parsed once (with the spec's wakeup), so a bad scenario
/// fails before any cell runs.
fn scenario_source(
    text: String,
    origin: String,
    dir: Option<PathBuf>,
    spec: &GridSpec,
) -> Result<Source, Error> {
    let mut base = Scenario::parse(&text, &origin, dir.as_deref())?;
    if let Some(us) = spec.wakeup_us {
        base.wakeup = Nanos::from_us(u64::from(us));
    }
    Ok(Source::Scenario {
        text,
        origin,
        dir,
        base: Box::new(base),
    })
}

/// The scenario with its `drive` replaced and `fields` set in its jobs, parsed again from
/// its edited text (so the scenario's own drive settings, such as `write_cache`, still apply).
fn edited(
    text: &str,
    dir: Option<&Path>,
    origin: &str,
    drive: Option<&str>,
    fields: &[(String, String, toml::Value)],
) -> Result<Scenario, Error> {
    let mut doc: toml::Table =
        toml::from_str(text).map_err(|e| Error::arg(origin, e.to_string()))?;
    let mut what: Vec<String> = Vec::new();
    if let Some(d) = drive {
        doc.insert("drive".into(), toml::Value::String(d.to_string()));
        what.push(format!("drive={d}"));
    }
    for (job, field, value) in fields {
        let arg = format!("--sweep job.{job}.{field}");
        let jobs = doc
            .get_mut("job")
            .and_then(toml::Value::as_array_mut)
            .ok_or_else(|| Error::arg(&arg, format!("{origin} has no jobs")))?;
        let t = jobs
            .iter_mut()
            .filter_map(toml::Value::as_table_mut)
            .find(|t| t.get("name").and_then(toml::Value::as_str) == Some(job.as_str()))
            .ok_or_else(|| Error::arg(&arg, format!("{origin} has no job {job:?}")))?;
        t.insert(field.clone(), value.clone());
    }
    what.extend(
        fields
            .iter()
            .map(|(j, f, v)| format!("job.{j}.{f}={}", show(v))),
    );
    let text = toml::to_string(&doc).map_err(|e| Error::arg(origin, e.to_string()))?;
    Ok(Scenario::parse(
        &text,
        &format!("{origin} with {}", what.join(", ")),
        dir,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sweep: &[&str]) -> GridSpec {
        GridSpec {
            scenario: Some("anticipatory-no-write".into()),
            sched: vec!["anticipatory".into(), "deadline".into()],
            sweep: sweep.iter().map(|s| s.to_string()).collect(),
            ..GridSpec::default()
        }
    }

    #[test]
    fn axes_parse_ranges_lists_tunables_and_job_fields() {
        assert_eq!(parse_axis("seed=1..3").unwrap(), Axis::Seed(vec![1, 2, 3]));
        assert_eq!(
            parse_axis("anticipatory.antic_expire=0,2,4,8").unwrap(),
            Axis::Tunable {
                sched: "anticipatory".into(),
                name: "antic_expire".into(),
                values: vec![0, 2, 4, 8]
            }
        );
        let Axis::Job { job, field, values } = parse_axis("job.writer.nr_requests=64,128").unwrap()
        else {
            panic!("a job axis");
        };
        assert_eq!((job.as_str(), field.as_str()), ("writer", "nr_requests"));
        assert_eq!(
            values,
            vec![toml::Value::Integer(64), toml::Value::Integer(128)]
        );
        for bad in [
            "seed",
            "seed=5..1",
            "seed=a",
            "anticipatory.no_such=1",
            "nosuch.antic_expire=1",
            "a.b.c.d=1",
            "seed=",
        ] {
            assert!(parse_axis(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cells_are_numbered_scheduler_first_last_axis_fastest() {
        let g = Grid::new(&spec(&["seed=1..2", "drive=cheetah9lp,ibm18es,atlas10k"])).unwrap();
        assert_eq!(g.len(), 12);
        let c = |i| g.coordinates(i);
        assert_eq!(
            c(0),
            (
                "anticipatory".into(),
                vec![Coord::Int(1), Coord::Text("cheetah9lp".into())]
            )
        );
        assert_eq!(c(1).1[1], Coord::Text("ibm18es".into()));
        assert_eq!(c(3).1[0], Coord::Int(2));
        assert_eq!(c(6).0, "deadline");
        assert_eq!(c(11).1, vec![Coord::Int(2), Coord::Text("atlas10k".into())]);
    }

    #[test]
    fn shards_partition_the_grid() {
        let g = Grid::new(&spec(&["seed=1..5"])).unwrap();
        let mut all: Vec<u64> = (0..3).flat_map(|i| g.shard(i, 3).unwrap()).collect();
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(g.shard(1, 3).unwrap(), vec![1, 4, 7]);
        assert!(g.shard(3, 3).is_err());
        assert!(g.shard(0, 0).is_err());
    }

    #[test]
    fn a_cell_runs_the_same_alone_or_among_others() {
        let g = Grid::new(&spec(&["anticipatory.antic_expire=0,6", "seed=1..2"])).unwrap();
        let all = g.run_cells(&(0..g.len()).collect::<Vec<_>>()).unwrap();
        for i in [0, 3, 5] {
            assert_eq!(g.run_cell(i).unwrap(), all[i as usize]);
        }
        // Deadline has no antic_expire: the same run for both values.
        assert_eq!(all[4].jobs, all[6].jobs);
        assert_ne!(all[0].jobs, all[2].jobs, "antic_expire changes AS");
    }

    #[test]
    fn bad_grids_are_refused_naming_the_argument() {
        let e = |s: GridSpec| Grid::new(&s).unwrap_err().to_string();
        assert!(e(spec(&["seed=1..99999", "seed=1..99999"])).contains("cells"));
        let mut s = spec(&[]);
        s.sched = vec!["nosuch".into()];
        assert!(e(s).contains("nosuch"));
        let mut s = spec(&[]);
        s.set.insert("antic_expire".into(), -5);
        assert!(e(s).contains("antic_expire"), "an out-of-range tunable");
        let s = GridSpec {
            fio_text: Some("[a]\nrw=randread\nbs=4k\nsize=1m\n".into()),
            sweep: vec!["job.a.bs=1".into()],
            ..GridSpec::default()
        };
        assert!(e(s).contains("scenarios only"));
        let s = GridSpec {
            scenario_toml: Some(
                "name = \"x\"\ndrive = \"nosuch\"\n\n[[job]]\nname = \"c\"\nkind = \"compile\"\n"
                    .into(),
            ),
            origin: Some("mine.toml".into()),
            ..GridSpec::default()
        };
        let Err(Error::Input(ie)) = Grid::new(&s) else {
            panic!("an input error")
        };
        assert_eq!(ie.file, "mine.toml");
        assert_eq!(ie.field, "drive");
        assert_eq!(ie.line(), Some(2));
    }

    #[test]
    fn fio_text_runs_on_the_default_ssd_with_requests_kept() {
        let s = GridSpec {
            fio_text: Some("[r]\nrw=randread\nbs=4k\nsize=4m\nnumber_ios=200\n".into()),
            sched: vec!["none".into(), "kyber".into()],
            requests: true,
            ..GridSpec::default()
        };
        let g = Grid::new(&s).unwrap();
        let r = g.run_cell(1).unwrap();
        assert_eq!(r.scheduler, "kyber");
        let req = r.requests.unwrap();
        assert_eq!(req.records.len(), 200);
        assert_eq!(req.jobs, vec!["r".to_string()]);
        assert!(req
            .records
            .iter()
            .all(|q| q.inserted <= q.dispatched && q.dispatched <= q.completed));
    }
}
