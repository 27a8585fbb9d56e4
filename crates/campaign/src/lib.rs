//! Sweeps as data: the grid of cells a sweep runs, each cell run to an Arrow table, and the
//! Parquet files a campaign keeps.
//!
//! This is the library under both `elevator sim --sweep` (the CLI) and the Python package
//! (python/): a [`Grid`] is a source (a scenario, a fio job file, or a block trace) crossed
//! with schedulers and swept axes (`seed`, `drive`, `SCHED.TUNABLE`, `job.NAME.FIELD`); its
//! cells are numbered in one fixed order (scheduler, then each axis in the order given, the
//! last axis turning fastest) and each cell is an independent, deterministic simulation:
//! [`Grid::run_cell`] gives the same [`CellResult`] on any machine, in any process, at any
//! number of threads. [`table`] turns results into Arrow record batches (one row per job per
//! cell, the sweep's coordinates as columns; per-request records on request) and writes them
//! as Parquet with fixed writer settings, so the same cell gives the same bytes wherever it
//! ran. A shard ([`Grid::shard`]) is every N-th cell, for batch systems; [`table::merge`]
//! joins the shards' Parquet files back into cell order.
//!
//! A grid runs simulations only: no real I/O, no clock, nothing random beyond the seeds the
//! grid gives each cell. [`real`] runs a fio job file on a real file or device through
//! `elevator-real`'s executor (what `elevator run` and the Python package's `elevator.run`
//! call), its results in the same table shape ([`table::real_jobs_batch`]).
//!
//! ```
//! use elevator_campaign::{Grid, GridSpec};
//!
//! let spec = GridSpec {
//!     scenario: Some("anticipatory-no-write".into()),
//!     sched: vec!["deadline".into(), "noop".into()],
//!     sweep: vec!["seed=1..2".into()],
//!     ..GridSpec::default()
//! };
//! let grid = Grid::new(&spec).unwrap();
//! assert_eq!(grid.len(), 4);
//! let cell = grid.run_cell(1).unwrap();
//! assert_eq!((cell.scheduler.as_str(), cell.seed), ("deadline", 2));
//! assert!(cell.jobs.iter().any(|j| j.name == "compile"));
//! ```

#![deny(missing_docs)]

mod error;
pub mod fio;
mod grid;
pub mod real;
pub mod scenarios;
pub mod table;

pub use error::Error;
pub use grid::{
    check_grid, check_sweep_work, parse_axis, settings_for, Axis, CellResult, Coord, Grid,
    GridSpec, Requests, CELL_OVERHEAD_IOS, MAX_CELLS,
};
