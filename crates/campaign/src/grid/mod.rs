//! The grid: a source crossed with schedulers and axes, its cells numbered in one fixed
//! order, and one cell of it run.
//!
//! - [`axis`]: the swept axes, parsed from `KEY=VALUES`;
//! - [`bounds`]: how many cells, and how many I/Os, a grid may imply;
//! - [`settings`]: which `--set` tunables each scheduler takes;
//! - [`source`]: the scenario, job file or trace the cells run, with a cell's axes applied;
//! - [`run`]: running cells to [`CellResult`]s.
//!
//! This file holds the grid itself: its spec ([`GridSpec`]), loading and checking it
//! ([`Grid::new`]), and the numbering of its cells (scheduler first, the last axis turning
//! fastest), shards and each cell's [`Plan`].

mod axis;
mod bounds;
mod run;
mod settings;
mod source;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use elevator_core::registry;
use elevator_core::{Nanos, Settings};
use elevator_sim::DriveModel;
use elevator_workload::fio_file;
use elevator_workload::traces::blktrace::BlkView;
use elevator_workload::traces::{open, OpenOptions, TraceFormat};
use serde::{Deserialize, Serialize};

pub use axis::{parse_axis, Axis, Coord};
pub use bounds::{check_grid, check_sweep_work, CELL_OVERHEAD_IOS, MAX_CELLS};
use bounds::{fio_work, ImpliedWork};
pub use run::{CellResult, Requests};
pub(crate) use settings::check_sets;
pub use settings::settings_for;
use source::{check_control, ScenarioSource, Source};

use crate::Error;

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
    /// The I/Os each kind of cell implies, told by [`Grid::check_cells_work`].
    work: ImpliedWork,
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
            Source::Scenario(ScenarioSource::new(text, origin, dir, spec, &mut cell_ios)?)
        } else if let Some(text) = &spec.scenario_toml {
            Source::Scenario(ScenarioSource::new(
                text.clone(),
                origin,
                dir,
                spec,
                &mut cell_ios,
            )?)
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
            let max_ios = spec.max_ios.unwrap_or(crate::fio::MAX_SIMULATED_IOS);
            cell_ios = fio_work(&file, drive, max_ios)?;
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
        if matches!(source, Source::Scenario(_)) && spec.drive.is_some() {
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
                if !matches!(source, Source::Scenario(_)) {
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
            Source::Scenario(s) => s.base.seed,
            _ => 1,
        });
        let mut grid = Grid {
            spec: spec.clone(),
            source,
            sched,
            extra,
            seed,
            wakeup: spec.wakeup_us.map(|us| Nanos::from_us(u64::from(us))),
            axes,
            len,
            work: ImpliedWork::default(),
        };
        for name in &grid.sched {
            grid.check_scheduler(name)?;
        }
        grid.work = grid.check_cells_work(cell_ios)?;
        Ok(grid)
    }

    /// The spec the grid was made from, with a scenario file's or job file's text inlined
    /// (`scenario_toml`, `fio_text` and their `origin`), so another machine can run it
    /// without the file.
    pub fn portable_spec(&self) -> GridSpec {
        let mut s = self.spec.clone();
        match &self.source {
            Source::Scenario(sc) => {
                s.scenario = None;
                s.scenario_toml = Some(sc.text.clone());
                s.origin = Some(sc.origin.clone());
                s.dir = sc.dir.as_ref().map(|d| d.display().to_string());
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
            Source::Scenario(s) => s.base.name.clone(),
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
                Axis::Tunable { name, values, .. } => {
                    if axis.applies_to(sched) {
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
}
