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
    /// The bound on the I/Os a run may imply, a job file's or a scenario's, and on those all
    /// the grid's cells imply together ([`check_sweep_work`]; default
    /// [`crate::fio::MAX_SIMULATED_IOS`]).
    pub max_ios: Option<u64>,
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
    /// A cgroup v2 io file of the group at `path` (`io.weight`, `io.bfq.weight`, `io.latency`
    /// as its target in microseconds, `io.max` as written after `MAJ:MIN`), or the device's
    /// `io.cost.qos` / `io.cost.model` (which live on the root, `path` `/`). Every scheduler's
    /// cells take it: the controllers sit at the block layer's rq_qos position, under any
    /// scheduler.
    Control {
        /// The group's path (`/` for io.cost's files).
        path: String,
        /// The file: one of `CONTROL_FILES`.
        file: String,
        /// The values: integers for `io.weight`, `io.bfq.weight` and `io.latency`, text for
        /// `io.max` and `io.cost.*`.
        values: Vec<toml::Value>,
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
            Axis::Control { path, file, .. } => control_key(path, file),
        }
    }

    /// Whether its values are integers (seed, tunables) rather than text.
    pub fn is_int(&self) -> bool {
        match self {
            Axis::Seed(_) | Axis::Tunable { .. } => true,
            Axis::Control { file, .. } => control_is_int(file),
            Axis::Drive(_) | Axis::Job { .. } => false,
        }
    }

    /// The value at index `i`.
    pub fn coord(&self, i: usize) -> Coord {
        match self {
            Axis::Seed(v) => Coord::Int(v[i] as i64),
            Axis::Drive(v) => Coord::Text(v[i].clone()),
            Axis::Tunable { values, .. } => Coord::Int(values[i]),
            Axis::Job { values, .. } => Coord::Text(show(&values[i])),
            Axis::Control { values, .. } => match &values[i] {
                toml::Value::Integer(v) => Coord::Int(*v),
                other => Coord::Text(show(other)),
            },
        }
    }

    /// How many values.
    pub fn len(&self) -> usize {
        match self {
            Axis::Seed(v) => v.len(),
            Axis::Drive(v) => v.len(),
            Axis::Tunable { values, .. } => values.len(),
            Axis::Job { values, .. } => values.len(),
            Axis::Control { values, .. } => values.len(),
        }
    }

    /// Whether it has no values (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The cgroup v2 io files a sweep takes: per group `io.weight` (io.cost's weight, 1..=10000),
/// `io.bfq.weight` (1..=1000), `io.latency` (the target, microseconds), `io.max` (as written
/// after `MAJ:MIN`: `rbps=2097152 wiops=120`, `max`); on the root `io.cost.qos` and
/// `io.cost.model` (as written after `MAJ:MIN`).
pub const CONTROL_FILES: [&str; 6] = [
    "io.weight",
    "io.bfq.weight",
    "io.latency",
    "io.max",
    "io.cost.qos",
    "io.cost.model",
];

/// An io controller axis's key: `PATH/FILE` as under /sys/fs/cgroup (`/a/io.weight`), and
/// the root's `io.cost.*` files by their name alone.
fn control_key(path: &str, file: &str) -> String {
    if file.starts_with("io.cost.") {
        file.to_string()
    } else {
        format!("{}/{file}", path.trim_end_matches('/'))
    }
}

fn control_is_int(file: &str) -> bool {
    matches!(file, "io.weight" | "io.bfq.weight" | "io.latency")
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
        let s = s.trim();
        s.parse::<i64>().map_err(|_| {
            let why = if !s.is_empty()
                && s.trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            {
                "is past the integers an axis takes (-2^63 to 2^63 - 1)"
            } else {
                "is not an integer (values: LO..HI, or V,V,...)"
            };
            let shown: String = s.chars().take(40).collect();
            Error::arg(arg(), format!("{shown:?} {why}"))
        })
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
    if key.starts_with('/') || key.starts_with("io.") {
        let (path, file) = match key.rsplit_once('/') {
            Some(("", file)) => ("/", file),
            Some((path, file)) => (path, file),
            None => ("/", key),
        };
        if !CONTROL_FILES.contains(&file) {
            return Err(Error::arg(
                arg,
                format!(
                    "{file:?} is not a swept io file (expected GROUP/FILE with FILE one of {})",
                    CONTROL_FILES.join(", ")
                ),
            ));
        }
        let cost = file.starts_with("io.cost.");
        if cost && path != "/" {
            return Err(Error::arg(
                arg,
                format!("{file} is the device's, on the root: sweep `{file}=...`"),
            ));
        }
        if !cost && path == "/" {
            return Err(Error::arg(
                arg,
                format!("the root's {file} is fixed (as in the kernel): name a group, `/a/{file}`"),
            ));
        }
        let values = if control_is_int(file) {
            let v = integers(key, values)?;
            if let Some(bad) = v.iter().find(|&&x| x < 1) {
                return Err(Error::arg(arg, format!("{bad} is below 1")));
            }
            v.into_iter().map(toml::Value::Integer).collect()
        } else {
            values
                .split(',')
                .map(|s| toml::Value::String(s.trim().to_string()))
                .collect()
        };
        return Ok(Axis::Control {
            path: path.to_string(),
            file: file.to_string(),
            values,
        });
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
            "expected seed, drive, SCHED.TUNABLE, job.NAME.FIELD, GROUP/io.FILE or io.cost.FILE",
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

/// The I/Os a cell costs at least beside those its run implies (its scheduler and jobs
/// built, its figures gathered and tabled), so a sweep of many small cells is bounded too.
pub const CELL_OVERHEAD_IOS: u64 = 1000;

/// Refuse a grid whose cells imply more than `max_ios` I/Os in all: `cells` times the I/Os
/// one cell implies (`cell_ios`, its source's: a job file's or a scenario's sizes and
/// simulated time, a trace's requests; other cells may differ by their axes) plus
/// `CELL_OVERHEAD_IOS` each. Each cell is bounded by its own run's bound; this bounds
/// their product, which neither [`MAX_CELLS`] nor a cell's bound does.
pub fn check_sweep_work(cells: u64, cell_ios: u64, max_ios: u64) -> Result<(), Error> {
    let total = cells.saturating_mul(cell_ios.saturating_add(CELL_OVERHEAD_IOS));
    if cells > 1 && total > max_ios {
        return Err(Error::arg(
            "--sweep",
            format!(
                "{cells} cells of about {cell_ios} I/Os each (and {CELL_OVERHEAD_IOS} for each \
                 cell's set-up) imply {} I/Os in all, more than {max_ios} (the simulator \
                 computes a few hundred thousand a second); sweep fewer values, or run it as \
                 asked with `elevator sim --max-ios N` (Python: `max_ios=N`), the bound of \
                 the whole grid and of each cell, shards too",
                if total == u64::MAX {
                    "more than 2^64".to_string()
                } else {
                    total.to_string()
                }
            ),
        ));
    }
    Ok(())
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
    /// The metrics the CLI's sweep tables: `end_s`, and per job `JOB.seconds` and, for
    /// `read` and `write` each, `JOB.read_mb_s`, `JOB.read_iops`, `JOB.read_mean_ms` and fio's
    /// default percentiles `JOB.read_p50_ms`, `_p90_ms`, `_p99_ms`, `_p999_ms` (p99.9).
    /// A latency of a direction the job completed no I/O in is `None`: there is none (the
    /// summary's 0 was tabled and plotted as a 0 ms p99, issue 32 round 19); its rates are 0.
    pub fn metrics(&self) -> BTreeMap<String, Option<f64>> {
        let mut m = BTreeMap::new();
        m.insert("end_s".to_string(), Some(self.end_s));
        for j in &self.jobs {
            let n = &j.name;
            m.insert(format!("{n}.seconds"), Some(j.seconds));
            for (dir, d) in [("read", &j.read), ("write", &j.write)] {
                let lat = |v: f64| (d.ios > 0).then_some(v);
                for (what, v) in [
                    ("mb_s", Some(d.mb_s)),
                    ("iops", Some(d.iops)),
                    ("mean_ms", lat(d.lat_mean_ms)),
                    ("p50_ms", lat(d.lat_p50_ms)),
                    ("p90_ms", lat(d.lat_p90_ms)),
                    ("p99_ms", lat(d.lat_p99_ms)),
                    ("p999_ms", lat(d.lat_p999_ms)),
                ] {
                    m.insert(format!("{n}.{dir}_{what}"), v);
                }
            }
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
    /// Io controller settings: group path, file, value.
    controls: Vec<(String, String, toml::Value)>,
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
        // The I/Os one cell implies (its source's; a trace's counted below).
        let mut cell_ios = 0;
        let source = if let Some(name) = &spec.scenario {
            let (text, origin, dir) = crate::scenarios::source(name)?;
            scenario_source(text, origin, dir, spec, &mut cell_ios)?
        } else if let Some(text) = &spec.scenario_toml {
            scenario_source(text.clone(), origin, dir, spec, &mut cell_ios)?
        } else if spec.fio.is_some() || spec.fio_text.is_some() {
            let file = match (&spec.fio, &spec.fio_text) {
                (Some(p), _) => fio_file::read(Path::new(p))?,
                (None, Some(t)) => fio_file::parse(Path::new(&origin), t)?,
                _ => unreachable!("one source"),
            };
            crate::fio::ramp_time(&file)?;
            file.check_simulated_time(elevator_sim::scenario::MAX_SIMULATED_S)?;
            // On the grid's drive now (a `drive=` axis's drives when their cells run).
            let drive = spec.drive.as_deref().unwrap_or(DEFAULT_FIO_DRIVE);
            let model = DriveModel::resolve(drive)?;
            let capacity = model.device().capacity_sectors() * SECTOR_BYTES;
            let max_ios = spec.max_ios.unwrap_or(crate::fio::MAX_SIMULATED_IOS);
            let by_size = crate::fio::check_simulated_work(&file, capacity, max_ios)?;
            let by_time = crate::fio::check_simulated_time_work(&file, &model, max_ios)?;
            cell_ios = by_size.saturating_add(by_time);
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
                        format!("{x:?}: not a factor from 0.001 to 1000000"),
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
        // Each scheduler once (by name or alias): twice ran and tabled it twice.
        let mut seen = HashMap::new();
        for name in &sched {
            let canonical = registry::find(name).map_or(name.as_str(), |i| i.name);
            if let Some(first) = seen.insert(canonical, name) {
                return Err(Error::arg(
                    "sched",
                    format!(
                        "{:?} and {:?} name one scheduler ({canonical}): give each once",
                        fio_file::excerpt(first),
                        fio_file::excerpt(name)
                    ),
                ));
            }
        }
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
        // An axis given twice: the later one's values replaced the earlier one's in every
        // cell, while the table showed both columns (`--sweep seed=1,2 --sweep seed=3,4` ran
        // seeds 3 and 4 twice each, labelled as four cells).
        let mut keys = std::collections::HashSet::new();
        for a in &axes {
            if !keys.insert(a.key()) {
                return Err(Error::arg(
                    format!("--sweep {}", a.key()),
                    "this axis is given twice: give all its values in one --sweep",
                ));
            }
        }
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
        for a in &axes {
            if let Axis::Control { path, file, values } = a {
                for v in values {
                    check_control(&source, spec, path, file, v)?;
                }
            }
        }
        let len = check_grid(sched.len(), &axes)?;
        let max_ios = spec.max_ios.unwrap_or(crate::fio::MAX_SIMULATED_IOS);
        if let Source::Trace { paths, opts, .. } = &source {
            // Counted only as far as the bound needs: a cell replays the whole trace.
            let enough = (max_ios / len.max(1)).saturating_add(1);
            let counted = open(paths, *opts)?.take(enough as usize).count() as u64;
            cell_ios = spec.max_requests.map_or(counted, |m| counted.min(m));
        }
        check_sweep_work(len, cell_ios, max_ios)?;
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
        grid.check_cells_work(cell_ios)?;
        Ok(grid)
    }

    /// The part of cell `p`'s plan that changes the work its run implies: its drive, its job
    /// fields and its io controls in a scenario, its drive for a job file; `None` when it
    /// changes nothing of the base's (a trace's requests are the trace's on any drive).
    fn work_key(&self, p: &Plan) -> Option<String> {
        match &self.source {
            Source::Scenario { .. }
                if p.drive.is_some() || !p.job_fields.is_empty() || !p.controls.is_empty() =>
            {
                Some(format!("{:?} {:?} {:?}", p.drive, p.job_fields, p.controls))
            }
            Source::Fio { .. } => p.drive.clone(),
            _ => None,
        }
    }

    /// The I/Os a cell of plan `p` implies, its drive, job and control axes applied
    /// (`Scenario::check_work`, or a job file's sizes and simulated time on the cell's drive),
    /// refused past the bound as the base is.
    fn plan_work(&self, p: &Plan) -> Result<u64, Error> {
        let max_ios = self.max_ios();
        match &self.source {
            Source::Scenario {
                text,
                origin,
                dir,
                base,
            } => {
                let s = cell_scenario(text, dir.as_deref(), origin, base, p)?;
                Ok(s.check_work(max_ios)?)
            }
            Source::Fio { file, drive } => {
                let model = DriveModel::resolve(p.drive.as_deref().unwrap_or(drive))?;
                let capacity = model.device().capacity_sectors() * SECTOR_BYTES;
                let by_size = crate::fio::check_simulated_work(file, capacity, max_ios)?;
                let by_time = crate::fio::check_simulated_time_work(file, &model, max_ios)?;
                Ok(by_size.saturating_add(by_time))
            }
            Source::Trace { .. } => Ok(0),
        }
    }

    /// Refuse a grid whose cells imply more than its bound on I/Os together, every cell's
    /// work told before any runs: a drive, job-field or io-control axis changes what a cell
    /// implies (`job.r.size=` from 1 MiB to 1 TiB), so the cells alike in those axes are
    /// counted together and each kind is told once ([`Grid::plan_work`]), the first kind to
    /// pass the bound named. The telling costs at most what it bounds (each kind's probe runs
    /// at most its own cells' work, and the count stops at the bound). `base_ios` is a cell
    /// of the source as given.
    fn check_cells_work(&self, base_ios: u64) -> Result<(), Error> {
        let max_ios = self.max_ios();
        let cost = |ios: u64| ios.saturating_add(CELL_OVERHEAD_IOS);
        // Cells counted by kind of work, each kind by its first cell.
        let mut kinds: Vec<(u64, u64)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut base_cells = 0u64;
        for cell in 0..self.len {
            match self.work_key(&self.plan(cell)) {
                None => base_cells += 1,
                Some(k) => {
                    let i = *index.entry(k).or_insert_with(|| {
                        kinds.push((cell, 0));
                        kinds.len() - 1
                    });
                    kinds[i].1 += 1;
                }
            }
        }
        if kinds.is_empty() {
            return Ok(()); // every cell is the base's, counted by check_sweep_work
        }
        let mut total = base_cells.saturating_mul(cost(base_ios));
        for &(first, cells) in &kinds {
            let plan = self.plan(first);
            let ios = self.plan_work(&plan)?;
            total = total.saturating_add(cells.saturating_mul(cost(ios)));
            if self.len > 1 && total > max_ios {
                let (_, coords) = self.coordinates(first);
                let at: Vec<String> = self
                    .axes
                    .iter()
                    .zip(&coords)
                    .filter(|(a, _)| {
                        matches!(a, Axis::Drive(_) | Axis::Job { .. } | Axis::Control { .. })
                    })
                    .map(|(a, c)| format!("{}={c}", a.key()))
                    .collect();
                return Err(Error::arg(
                    "--sweep",
                    format!(
                        "{} cells imply more than {max_ios} I/Os in all, counted cell by cell \
                         before any runs: the {cells} with {} imply about {ios} I/Os each (and \
                         {CELL_OVERHEAD_IOS} for each cell's set-up); sweep fewer or smaller \
                         values, or run it as asked with `elevator sim --max-ios N` (Python: \
                         `max_ios=N`), the bound of the whole grid and of each cell, shards too",
                        self.len,
                        at.join(" ")
                    ),
                ));
            }
        }
        Ok(())
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

    /// The bound on the I/Os a cell's run may imply (a job file's or a scenario's).
    fn max_ios(&self) -> u64 {
        self.spec.max_ios.unwrap_or(crate::fio::MAX_SIMULATED_IOS)
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
            controls: Vec::new(),
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
                Axis::Control { path, file, values } => {
                    p.controls
                        .push((path.clone(), file.clone(), values[i].clone()))
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
        self.run_cells_until(cells, done, &std::sync::atomic::AtomicBool::new(false))
    }

    /// [`Grid::run_cells_with`], starting no new simulation once `stop` is set (Ctrl-C in the
    /// Python package): then the error is `Error::Arg` for `cells`, "interrupted".
    pub fn run_cells_until(
        &self,
        cells: &[u64],
        done: impl Fn() + Sync,
        stop: &std::sync::atomic::AtomicBool,
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
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(Error::arg("cells", "interrupted"));
                }
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
                // Its work was told with every other cell's (`check_cells_work`).
                let mut scenario = cell_scenario(text, dir.as_deref(), origin, base, p)?;
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
                let mut sim = scenario.simulation(policy, Some(p.seed))?;
                sim.bound_ios(self.max_ios());
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
                apply_controls(&mut groups, &p.controls, "the job file")?;
                let sched = self.build_scheduler_on(name, &more, &groups, &model)?;
                let mut sim = Simulation::new(model.device(), sched, groups);
                sim.bound_ios(self.max_ios());
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
                let mut groups = GroupTree::new();
                apply_controls(&mut groups, &p.controls, "a trace (replayed in the root)")?;
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
        // A job that ended before its input (a trace that failed part-way, or changed since
        // it was checked) did not run the cell's input: an error, not a row of partial figures.
        report.job_error().map_err(|e| match &self.source {
            Source::Trace { .. } => Error::arg("trace", e),
            _ => Error::arg(self.name(), e),
        })?;
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
pub(crate) fn check_sets(extra: &Settings, scheds: &[String]) -> Result<(), Error> {
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
    ios: &mut u64,
) -> Result<Source, Error> {
    let mut base = Scenario::parse(&text, &origin, dir.as_deref())?;
    *ios = base.check_work(spec.max_ios.unwrap_or(crate::fio::MAX_SIMULATED_IOS))?;
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

/// Set the io controller files `controls` (group path, file, value) in `groups`, whose
/// groups came from `what` (named in errors), and check the tree as a scenario's is checked
/// ([`elevator_core::qos::validate`]).
fn apply_controls(
    groups: &mut GroupTree,
    controls: &[(String, String, toml::Value)],
    what: &str,
) -> Result<(), Error> {
    for (path, file, value) in controls {
        let arg = || format!("--sweep {}", control_key(path, file));
        let text = show(value);
        let int = || -> Result<u32, Error> {
            value
                .as_integer()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| Error::arg(arg(), format!("{text}: not a count")))
        };
        if file.starts_with("io.cost.") {
            let mut cost = groups.io_cost().clone();
            if file == "io.cost.qos" {
                cost.qos = Some(text.clone());
            } else {
                cost.model = Some(text.clone());
            }
            groups.set_io_cost(cost);
            continue;
        }
        let id = groups
            .lookup(path)
            .ok_or_else(|| Error::arg(arg(), format!("{what} has no group {path:?}")))?;
        let io = groups.io_mut(id);
        match file.as_str() {
            "io.weight" => io.weight = Some(int()?),
            "io.bfq.weight" => io.bfq_weight = Some(int()?),
            "io.latency" => io.latency_target = Some(Nanos::from_us(u64::from(int()?))),
            "io.max" => {
                io.max = elevator_core::group::IoMax::parse(&text)
                    .map_err(|e| Error::arg(arg(), format!("{text:?}: {e}")))?
            }
            other => unreachable!("parse_axis takes no {other}"),
        }
    }
    elevator_core::qos::validate(groups).map_err(|e| Error::arg("--sweep", e.to_string()))
}

/// Check one value of an io controller axis before any cell runs: the group exists in the
/// source, and the value is one its controller takes.
fn check_control(
    source: &Source,
    spec: &GridSpec,
    path: &str,
    file: &str,
    value: &toml::Value,
) -> Result<(), Error> {
    let one = [(path.to_string(), file.to_string(), value.clone())];
    match source {
        Source::Scenario {
            text,
            origin,
            dir,
            base,
        } => {
            if !file.starts_with("io.cost.") && base.groups.lookup(path).is_none() {
                return Err(Error::arg(
                    format!("--sweep {}", control_key(path, file)),
                    format!("{origin} has no group {path:?}"),
                ));
            }
            edited(text, dir.as_deref(), origin, None, &[], &one).map(|_| ())
        }
        Source::Fio { file: f, drive } => {
            let model = DriveModel::resolve(drive)?;
            let capacity = model.device().capacity_sectors() * SECTOR_BYTES;
            let mut groups = GroupTree::new();
            crate::fio::build_jobs(f, capacity, spec.seed.unwrap_or(1), &mut groups)?;
            apply_controls(&mut groups, &one, "the job file")
        }
        Source::Trace { .. } => apply_controls(
            &mut GroupTree::new(),
            &one,
            "a trace (replayed in the root)",
        ),
    }
}

/// Cell `p`'s scenario: the base's when `p` changes none of its drive, job fields and
/// controls, else its text parsed again with them ([`edited`]), keeping the base's wake-up.
fn cell_scenario(
    text: &str,
    dir: Option<&Path>,
    origin: &str,
    base: &Scenario,
    p: &Plan,
) -> Result<Scenario, Error> {
    if p.job_fields.is_empty() && p.drive.is_none() && p.controls.is_empty() {
        return Ok(base.clone());
    }
    let mut s = edited(
        text,
        dir,
        origin,
        p.drive.as_deref(),
        &p.job_fields,
        &p.controls,
    )?;
    s.wakeup = base.wakeup;
    Ok(s)
}

/// The scenario with its `drive` replaced, `fields` set in its jobs and `controls` (group
/// path, io file, value) set in its groups (a `[[group]]` table added for a group only its
/// jobs name) or on the root (`io.cost.*`), parsed again from its edited text (so the
/// scenario's own drive settings, such as `write_cache`, still apply, and a bad value is
/// reported as the scenario's own would be).
fn edited(
    text: &str,
    dir: Option<&Path>,
    origin: &str,
    drive: Option<&str>,
    fields: &[(String, String, toml::Value)],
    controls: &[(String, String, toml::Value)],
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
    for (path, file, value) in controls {
        what.push(format!("{}={}", control_key(path, file), show(value)));
        let (key, v) = match file.as_str() {
            "io.cost.qos" => ("io_cost_qos", value.clone()),
            "io.cost.model" => ("io_cost_model", value.clone()),
            "io.weight" => ("io_weight", value.clone()),
            "io.bfq.weight" => ("io_bfq_weight", value.clone()),
            "io.latency" => (
                "io_latency_us",
                toml::Value::Float(value.as_integer().unwrap_or(0) as f64),
            ),
            _ => ("io_max", value.clone()),
        };
        if file.starts_with("io.cost.") {
            doc.insert(key.into(), v);
            continue;
        }
        let groups = doc
            .entry("group")
            .or_insert_with(|| toml::Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| Error::arg(origin, "`group` is not an array of tables"))?;
        let at = groups
            .iter()
            .position(|g| g.get("path").and_then(toml::Value::as_str) == Some(path.as_str()));
        let at = match at {
            Some(i) => i,
            None => {
                let mut t = toml::Table::new();
                t.insert("path".into(), toml::Value::String(path.clone()));
                groups.push(toml::Value::Table(t));
                groups.len() - 1
            }
        };
        if let Some(t) = groups[at].as_table_mut() {
            t.insert(key.into(), v);
        }
    }
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

    /// A job file's work depends on its drive: 4 KiB reads of the whole device are 2.2 x 10^6
    /// I/Os on the Cheetah 9LP and 2.4 x 10^8 on the 980 PRO. A `drive=` axis was bounded by
    /// the base drive's cell only; now every cell's drive is told before any runs.
    #[test]
    fn a_drive_axis_is_bounded_by_every_cell_not_the_first() {
        let whole = GridSpec {
            fio_text: Some("[whole]\nrw=read\nbs=4k\n".into()),
            drive: Some("cheetah9lp".into()),
            sched: vec!["noop".into()],
            ..GridSpec::default()
        };
        let one = Grid::new(&whole).expect("2.2 x 10^6 I/Os on the Cheetah: under the bound");
        assert_eq!(one.len(), 1);
        let swept = GridSpec {
            sweep: vec!["drive=cheetah9lp,samsung-980pro-1tb".into()],
            ..whole
        };
        let e = Grid::new(&swept).unwrap_err().to_string();
        assert!(e.contains("size") && e.contains("--max-ios"), "{e}");
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
        // 99,999 seeds on each of three drives: past MAX_CELLS, refused before any is built.
        let big = spec(&["seed=1..99999", "drive=cheetah9lp,ibm18es,atlas10k"]);
        assert!(e(big).contains("cells"));
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
    fn io_controller_axes_parse_as_cgroup_files() {
        let a = parse_axis("/a/b/io.weight=100,500").unwrap();
        assert_eq!(a.key(), "/a/b/io.weight");
        assert!(a.is_int());
        assert_eq!(a.coord(1), Coord::Int(500));
        let a = parse_axis("/a/io.max=rbps=1048576 wiops=50,rbps=max").unwrap();
        assert_eq!(a.key(), "/a/io.max");
        assert!(!a.is_int());
        assert_eq!(a.coord(0), Coord::Text("rbps=1048576 wiops=50".into()));
        assert_eq!(a.coord(1), Coord::Text("rbps=max".into()));
        let a = parse_axis("io.cost.qos=enable=1 ctrl=user min=50.00 max=100.00").unwrap();
        assert_eq!(a.key(), "io.cost.qos");
        assert_eq!(
            a,
            parse_axis("/io.cost.qos=enable=1 ctrl=user min=50.00 max=100.00").unwrap()
        );
        assert_eq!(parse_axis("/a/io.latency=2000..2001").unwrap().len(), 2);
        for (bad, says) in [
            ("/io.weight=100", "root"),
            ("/a/io.cost.qos=enable=1", "root"),
            ("/a/io.prio=1", "not a swept io file"),
            ("/a/io.weight=0", "below 1"),
            ("/a/io.latency=soon", "not an integer"),
        ] {
            let e = parse_axis(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// Two sequential readers in groups /a and /b of a fio job file on the SSD.
    fn two_groups(sweep: &[&str]) -> GridSpec {
        GridSpec {
            fio_text: Some(
                "[a]\nrw=read\nbs=64k\nsize=4m\nelevator_cgroup=/a\n\
                 [b]\nrw=read\nbs=64k\nsize=4m\noffset=1g\nelevator_cgroup=/b\n"
                    .into(),
            ),
            sched: vec!["none".into(), "mq-deadline".into()],
            sweep: sweep.iter().map(|s| s.to_string()).collect(),
            ..GridSpec::default()
        }
    }

    #[test]
    fn an_io_max_axis_throttles_its_group_under_every_scheduler() {
        let g = Grid::new(&two_groups(&["/a/io.max=rbps=1048576,rbps=max"])).unwrap();
        assert_eq!(g.len(), 4);
        let all = g.run_cells(&[0, 1, 2, 3]).unwrap();
        let mb_s =
            |r: &CellResult, job: &str| r.jobs.iter().find(|j| j.name == job).unwrap().read.mb_s;
        for (limited, free) in [(&all[0], &all[1]), (&all[2], &all[3])] {
            // blk-throttle (tg_may_dispatch): /a's reads wait for their bytes-per-second budget;
            // 4 MiB at 1 MiB/s take about 4 s (the first slice's budget is spent at once).
            let a = mb_s(limited, "a");
            assert!(a < 1.2 * 1.048_576, "{} /a at {a} MB/s", limited.scheduler);
            assert!(
                mb_s(free, "a") > 20.0 * a,
                "unlimited /a: {}",
                mb_s(free, "a")
            );
            // /b has no limit in either cell.
            assert!(mb_s(limited, "b") > 20.0 * a);
        }
    }

    #[test]
    fn io_controller_axes_are_checked_before_any_cell_runs() {
        let e = |sweep: &[&str]| Grid::new(&two_groups(sweep)).unwrap_err().to_string();
        assert!(e(&["/c/io.weight=100"]).contains("no group \"/c\""));
        assert!(e(&["/a/io.max=rbps=fast"]).contains("rbps=fast"));
        assert!(e(&["/a/io.weight=20000"]).contains("io.weight"));
        // A scenario: its own parser checks the value, naming the scenario and the axis.
        let s = GridSpec {
            scenario_toml: Some(
                "name = \"x\"\ndrive = \"laptop-4200\"\nduration_s = 2\n\n[[group]]\npath = \"/a\"\n\n\
                 [[job]]\nname = \"r\"\nkind = \"dependent-reader\"\ngroup = \"/a\"\n"
                    .into(),
            ),
            origin: Some("mine.toml".into()),
            sched: vec!["deadline".into()],
            sweep: vec!["/a/io.bfq.weight=5000".into()],
            ..GridSpec::default()
        };
        let Err(Error::Input(ie)) = Grid::new(&s) else {
            panic!("an input error")
        };
        assert!(
            ie.file.starts_with("mine.toml with /a/io.bfq.weight=5000"),
            "{}",
            ie.file
        );
        assert_eq!(ie.field, "group.io_bfq_weight");
        let mut s2 = s.clone();
        s2.sweep = vec!["/b/io.weight=100".into()];
        assert!(Grid::new(&s2)
            .unwrap_err()
            .to_string()
            .contains("no group \"/b\""));
    }

    #[test]
    fn a_scenario_io_max_axis_limits_its_group() {
        let s = GridSpec {
            scenario_toml: Some(
                "name = \"x\"\ndrive = \"laptop-4200\"\nduration_s = 4\n\n\
                 [[job]]\nname = \"r\"\nkind = \"dependent-reader\"\ngroup = \"/a\"\n"
                    .into(),
            ),
            sched: vec!["deadline".into()],
            sweep: vec!["/a/io.max=riops=10,riops=max".into()],
            ..GridSpec::default()
        };
        // /a has no [[group]] table: the axis adds one.
        let g = Grid::new(&s).unwrap();
        let r = g.run_cells(&[0, 1]).unwrap();
        let ios = |c: &CellResult| c.jobs[0].read.ios;
        // blk-throttle's IOPS budget (tg_within_iops_limit): 10 per second over a 4 s run.
        assert!(ios(&r[0]) <= 60, "{} reads at riops=10", ios(&r[0]));
        assert!(
            ios(&r[1]) > 2 * ios(&r[0]),
            "{} reads unlimited",
            ios(&r[1])
        );
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
