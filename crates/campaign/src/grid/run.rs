//! Running a grid's cells: each a deterministic simulation of its plan, its result a
//! [`CellResult`]; many cells on the rayon pool, each distinct simulation once.

use std::collections::{BTreeMap, HashMap};

use elevator_core::registry;
use elevator_core::{GroupTree, Nanos, Settings, SECTOR_BYTES};
use elevator_sim::engine::{JobSlot, RequestRecord};
use elevator_sim::{DriveModel, RunReport, Simulation};
use elevator_workload::jobs::replay::{ReplayJob, ReplayOptions};
use elevator_workload::metrics::JobSummary;
use elevator_workload::traces::open;
use rayon::prelude::*;

use super::source::{apply_controls, Source};
use super::{settings_for, Coord, Grid, Plan};
use crate::Error;

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
                let lat = |v: f64| d.latency(v);
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

impl Grid {
    /// Build scheduler `name` once with the grid's tunables for it, as [`Grid::new`] checks
    /// it: with the scenario's groups, or on the job file's or trace's drive (its rotational
    /// flag set) over no groups.
    pub(super) fn check_scheduler(&self, name: &str) -> Result<(), Error> {
        if registry::find(name).is_none() {
            let known: Vec<&str> = registry::all().iter().map(|i| i.name).collect();
            return Err(Error::arg(
                "--sched",
                format!(
                    "{name:?}: no such scheduler{} (known: {})",
                    elevator_workload::suggest::scheduler(name),
                    known.join(", ")
                ),
            ));
        }
        let none = Settings::new();
        match &self.source {
            Source::Scenario(s) => s
                .base
                .scheduler(name, &self.settings(name, &none))
                .map(|_| ())
                .map_err(|e| Error::arg(format!("scheduler {name}"), e.message)),
            Source::Fio { drive, .. } | Source::Trace { drive, .. } => {
                let model = DriveModel::resolve(drive)?;
                self.build_scheduler_on(name, &none, &GroupTree::new(), &model)
                    .map(|_| ())
            }
        }
    }

    /// The grid's tunables for scheduler `name` ([`settings_for`]), a cell's `more` over them.
    fn settings(&self, name: &str, more: &Settings) -> Settings {
        let mut settings = registry::find(name)
            .map_or_else(Settings::new, |info| settings_for(&info, &self.extra));
        for k in more.names() {
            settings.set(k, more.raw(k).unwrap_or_default());
        }
        settings
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
            Source::Scenario(s) => {
                // Its work was told with every other cell's (`check_cells_work`).
                let mut scenario = s.cell(p)?;
                if let Some(w) = self.wakeup {
                    scenario.wakeup = w;
                }
                let policy = scenario
                    .scheduler(name, &self.settings(name, &more))
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
                    let phase = j.phase;
                    sim.add_job_in_phase(crate::fio::job_slot(j), phase);
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
        let info = registry::find(name).ok_or_else(|| {
            let hint = elevator_workload::suggest::scheduler(name);
            Error::arg("--sched", format!("{name:?}: no such scheduler{hint}"))
        })?;
        let rotational = !model.device().non_rotational();
        let settings = info.on_device(self.settings(name, more), Some(rotational));
        info.build(&settings, groups)
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
