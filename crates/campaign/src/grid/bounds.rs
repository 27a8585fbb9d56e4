//! How big a grid may be: at most [`MAX_CELLS`] cells, and at most its bound on I/Os for all
//! its cells together ([`check_sweep_work`], then cell by cell as their axes change the work:
//! [`Grid::check_cells_work`]).

use std::collections::HashMap;

use elevator_core::SECTOR_BYTES;
use elevator_sim::DriveModel;
use elevator_workload::fio_file::FioFile;

use super::source::Source;
use super::{Axis, Grid, Plan};
use crate::Error;

/// Cells a grid may have at most (schedulers times every axis's values).
pub const MAX_CELLS: u64 = 100_000;

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

/// The I/Os a job file implies on `drive` (a built-in name or a drive file): by its sizes on
/// the drive's capacity plus by its simulated time at the drive's rate, each refused past
/// `max_ios`.
pub(super) fn fio_work(file: &FioFile, drive: &str, max_ios: u64) -> Result<u64, Error> {
    let model = DriveModel::resolve(drive)?;
    let capacity = model.device().capacity_sectors() * SECTOR_BYTES;
    let by_size = crate::fio::check_simulated_work(file, capacity, max_ios)?;
    let by_time = crate::fio::check_simulated_time_work(file, &model, max_ios)?;
    Ok(by_size.saturating_add(by_time))
}

impl Grid {
    /// The part of cell `p`'s plan that changes the work its run implies: its drive, its job
    /// fields and its io controls in a scenario, its drive for a job file; `None` when it
    /// changes nothing of the base's (a trace's requests are the trace's on any drive).
    fn work_key(&self, p: &Plan) -> Option<String> {
        match &self.source {
            Source::Scenario(_)
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
            Source::Scenario(s) => Ok(s.cell(p)?.check_work(max_ios)?),
            Source::Fio { file, drive } => {
                fio_work(file, p.drive.as_deref().unwrap_or(drive), max_ios)
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
    /// Returns the I/Os each kind implies, for [`Grid::implied_ios`].
    pub(super) fn check_cells_work(&self, base_ios: u64) -> Result<ImpliedWork, Error> {
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
        let mut work = ImpliedWork {
            base: base_ios,
            by_kind: HashMap::new(),
        };
        if kinds.is_empty() {
            return Ok(work); // every cell is the base's, counted by check_sweep_work
        }
        let mut total = base_cells.saturating_mul(cost(base_ios));
        for &(first, cells) in &kinds {
            let plan = self.plan(first);
            let ios = self.plan_work(&plan)?;
            if let Some(k) = self.work_key(&plan) {
                work.by_kind.insert(k, ios);
            }
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
        Ok(work)
    }

    /// The I/Os cell `cell` implies, as the grid's bound counted them when it was built (its
    /// source's sizes and simulated time, or a trace's requests, with its drive, job-field
    /// and io-control values applied), plus [`CELL_OVERHEAD_IOS`] for its set-up: what the
    /// cell costs, told before it runs (the Python package bounds a Ray task by it).
    /// `cell` must be below [`Grid::len`].
    pub fn implied_ios(&self, cell: u64) -> u64 {
        let ios = self
            .work_key(&self.plan(cell))
            .and_then(|k| self.work.by_kind.get(&k).copied())
            .unwrap_or(self.work.base);
        ios.saturating_add(CELL_OVERHEAD_IOS)
    }
}

/// The I/Os a cell of each kind of work implies (see [`Grid::check_cells_work`]): the base's,
/// and those of each drive, job-field and io-control combination that changes them.
#[derive(Clone, Debug, Default)]
pub(super) struct ImpliedWork {
    /// A cell of the source as given.
    base: u64,
    /// By [`Grid::work_key`].
    by_kind: HashMap<String, u64>,
}
