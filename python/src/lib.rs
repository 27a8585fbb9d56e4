//! `elevator._elevator`: the native half of the Python package (python/elevator/ is the
//! other half, and the API users see).
//!
//! A thin layer over `elevator_campaign`, the library under `elevator sim --sweep` too: a
//! `PyGrid` wraps a [`Grid`] built from a JSON [`GridSpec`]; running cells releases the GIL
//! and uses rayon; results cross to Python as Arrow record batches through Arrow's C data
//! interface (`ArrowExport`: pyarrow imports the arrays without copying them). Errors
//! become `elevator.InputError` (with `file`, `line`, `field`, `message`) or
//! `elevator.ElevatorError`.

use std::path::{Path, PathBuf};

use arrow_array::ffi::{to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use elevator_campaign::table::{jobs_batch, requests_batch, write_parquet};
use elevator_campaign::{CellResult, Coord, Error, Grid, GridSpec};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rayon::prelude::*;

create_exception!(
    _elevator,
    ElevatorError,
    PyException,
    "An elevator error: a bad argument, or a result file that could not be read or written."
);
create_exception!(
    _elevator,
    InputError,
    ElevatorError,
    "Bad input in a file (scenario, job file, trace, drive spec): `file`, `line` (or None), \
     `field` (or empty) and `message` say where and what."
);

/// An [`Error`] as a Python exception: [`InputError`] with its file, line, field and
/// message, or [`ElevatorError`] with `arg` / `path` and `message`.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    let text = e.to_string();
    let (err, attrs): (PyErr, Vec<(&str, Option<String>)>) = match e {
        Error::Input(ie) => (
            InputError::new_err(text),
            vec![
                ("file", Some(ie.file.clone())),
                ("line", ie.line().map(|l| l.to_string())),
                ("field", Some(ie.field.clone())),
                ("message", Some(ie.message.clone())),
            ],
        ),
        Error::Arg { arg, message } => (
            ElevatorError::new_err(text),
            vec![("field", Some(arg)), ("message", Some(message))],
        ),
        Error::Io { path, message } => (
            ElevatorError::new_err(text),
            vec![("file", Some(path)), ("message", Some(message))],
        ),
        other => (ElevatorError::new_err(other.to_string()), vec![]),
    };
    let v = err.value(py);
    for (k, val) in attrs {
        let res = match (k, val) {
            ("line", Some(l)) => v.setattr(k, l.parse::<u64>().unwrap_or(0)),
            (_, Some(s)) => v.setattr(k, s),
            (_, None) => v.setattr(k, py.None()),
        };
        // Setting an attribute on a fresh exception instance cannot fail.
        res.expect("set an exception attribute");
    }
    err
}

/// A RecordBatch exported through Arrow's C data interface, for
/// `pyarrow.RecordBatch._import_from_c(array_addr, schema_addr)`: pyarrow moves the arrays
/// out (no copy of the buffers) and releases them when its batch dies.
#[pyclass(module = "elevator._elevator")]
struct ArrowExport {
    array: Box<FFI_ArrowArray>,
    schema: Box<FFI_ArrowSchema>,
}

// SAFETY: the FFI structs are owned exclusively by this object and only touched by pyarrow
// under the GIL, through the addresses below.
unsafe impl Send for ArrowExport {}
unsafe impl Sync for ArrowExport {}

#[pymethods]
impl ArrowExport {
    /// The address of the `ArrowArray` struct.
    #[getter]
    fn array_addr(&self) -> usize {
        &*self.array as *const FFI_ArrowArray as usize
    }
    /// The address of the `ArrowSchema` struct.
    #[getter]
    fn schema_addr(&self) -> usize {
        &*self.schema as *const FFI_ArrowSchema as usize
    }
}

fn export(batch: RecordBatch) -> PyResult<ArrowExport> {
    let data = StructArray::from(batch).to_data();
    let (array, schema) = to_ffi(&data).map_err(|e| ElevatorError::new_err(e.to_string()))?;
    Ok(ArrowExport {
        array: Box::new(array),
        schema: Box::new(schema),
    })
}

/// A grid of cells (see `elevator_campaign::Grid`), built from a JSON `GridSpec`.
#[pyclass(name = "Grid", module = "elevator._elevator", frozen)]
struct PyGrid {
    grid: Grid,
}

/// Cells run: their results, exported as Arrow on request.
#[pyclass(module = "elevator._elevator")]
struct Output {
    grid: Grid,
    results: Vec<CellResult>,
}

#[pymethods]
impl Output {
    /// The jobs table (one row per job per cell) as an [`ArrowExport`].
    fn jobs(&self, py: Python<'_>) -> PyResult<ArrowExport> {
        let batch = py.detach(|| jobs_batch(&self.grid, &self.results));
        export(batch)
    }

    /// The requests table (one row per request), as an [`ArrowExport`]; the records are
    /// moved out of this object (a second call gives an empty table).
    fn take_requests(&mut self, py: Python<'_>) -> PyResult<ArrowExport> {
        let results = &mut self.results;
        let batch = py.detach(|| {
            let b = requests_batch(results);
            for r in results.iter_mut() {
                if let Some(q) = &mut r.requests {
                    q.records = Vec::new();
                }
            }
            b
        });
        export(batch)
    }

    /// How many request records the cells kept.
    fn num_requests(&self) -> usize {
        self.results
            .iter()
            .filter_map(|r| r.requests.as_ref())
            .map(|q| q.records.len())
            .sum()
    }
}

/// The most threads a pool may have: more is a mistake (`threads=10**6` asked the system for
/// a million threads), refused naming the argument.
const MAX_THREADS: usize = 1024;

/// A rayon pool of `threads` threads (all cores when `None`); 0 or more than [`MAX_THREADS`]
/// is refused naming `threads`.
fn pool(threads: Option<usize>) -> PyResult<rayon::ThreadPool> {
    if let Some(n) = threads {
        if !(1..=MAX_THREADS).contains(&n) {
            return Err(ElevatorError::new_err(format!(
                "threads: {n} is out of range: expected 1 to {MAX_THREADS} (or None: every core)"
            )));
        }
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| ElevatorError::new_err(e.to_string()))
}

/// The Parquet files of cell `cell` in the store `dir`: its jobs table, and its requests.
fn cell_paths(dir: &Path, cell: u64) -> (PathBuf, PathBuf) {
    (
        dir.join("cells").join(format!("{cell:07}.parquet")),
        dir.join("requests").join(format!("{cell:07}.parquet")),
    )
}

impl PyGrid {
    /// Refuse a cell number past the grid, naming `cell` (what `coordinates` and
    /// `implied_ios` are asked).
    fn check_cell(&self, py: Python<'_>, cell: u64) -> PyResult<()> {
        if cell >= self.grid.len() {
            return Err(py_err(
                py,
                Error::arg(
                    "cell",
                    format!("{cell}: the grid has {} cells", self.grid.len()),
                ),
            ));
        }
        Ok(())
    }
}

#[pymethods]
impl PyGrid {
    /// Build the grid `spec_json` (a JSON `GridSpec`) describes; bad input raises
    /// `InputError` or `ElevatorError` before anything runs.
    #[new]
    fn new(py: Python<'_>, spec_json: &str) -> PyResult<PyGrid> {
        let spec: GridSpec = serde_json::from_str(spec_json)
            .map_err(|e| PyValueError::new_err(format!("grid spec: {e}")))?;
        let grid = py.detach(|| Grid::new(&spec)).map_err(|e| py_err(py, e))?;
        Ok(PyGrid { grid })
    }

    /// How many cells.
    fn __len__(&self) -> usize {
        self.grid.len() as usize
    }

    /// The spec as JSON, with scenario and job file texts inlined (runs anywhere).
    fn portable_spec_json(&self) -> String {
        serde_json::to_string(&self.grid.portable_spec()).expect("a spec serialises")
    }

    /// The axis keys (column names), in order.
    fn axes(&self) -> Vec<String> {
        self.grid.axes().iter().map(|a| a.key()).collect()
    }

    /// The schedulers, in cell order.
    fn schedulers(&self) -> Vec<String> {
        self.grid.schedulers().to_vec()
    }

    /// Cell `cell`'s coordinates: a dict with `scheduler` and each axis's value.
    fn coordinates<'py>(&self, py: Python<'py>, cell: u64) -> PyResult<Bound<'py, PyDict>> {
        self.check_cell(py, cell)?;
        let (sched, coords) = self.grid.coordinates(cell);
        let d = PyDict::new(py);
        d.set_item("scheduler", sched)?;
        for (a, c) in self.grid.axes().iter().zip(coords) {
            match c {
                Coord::Int(i) => d.set_item(a.key(), i)?,
                Coord::Text(s) => d.set_item(a.key(), s)?,
            }
        }
        Ok(d)
    }

    /// The I/Os cell `cell` implies, told before it runs (its source's sizes and simulated
    /// time or a trace's requests, its axes applied, and its set-up's): what it costs, by
    /// which `Campaign.run(engine="ray")` bounds a task before any has finished.
    fn implied_ios(&self, py: Python<'_>, cell: u64) -> PyResult<u64> {
        self.check_cell(py, cell)?;
        Ok(self.grid.implied_ios(cell))
    }

    /// The cells of shard `index` of `count`.
    fn shard(&self, py: Python<'_>, index: u64, count: u64) -> PyResult<Vec<u64>> {
        self.grid.shard(index, count).map_err(|e| py_err(py, e))
    }

    /// Run `cells` (every cell when `None`) on `threads` threads (all cores when `None`),
    /// each distinct simulation once, without the GIL.
    #[pyo3(signature = (cells=None, threads=None))]
    fn run(
        &self,
        py: Python<'_>,
        cells: Option<Vec<u64>>,
        threads: Option<usize>,
    ) -> PyResult<Output> {
        let cells = cells.unwrap_or_else(|| (0..self.grid.len()).collect());
        let pool = pool(threads)?;
        let grid = self.grid.clone();
        let results = interruptible(py, move |stop| {
            pool.install(|| grid.run_cells_until(&cells, || {}, stop))
        })?
        .map_err(|e| py_err(py, e))?;
        Ok(Output {
            grid: self.grid.clone(),
            results,
        })
    }

    /// Run `cells` and store each in the campaign directory `store` as it finishes
    /// (`cells/NNNNNNN.parquet`, and `requests/NNNNNNN.parquet` when the grid keeps
    /// requests; each written whole or not at all). Returns the cells written, in order.
    #[pyo3(signature = (cells, store, threads=None))]
    fn write_cells(
        &self,
        py: Python<'_>,
        cells: Vec<u64>,
        store: PathBuf,
        threads: Option<usize>,
    ) -> PyResult<Vec<u64>> {
        // A cell given twice was written by two threads through one temporary file, and the
        // second found it renamed away ("No such file or directory").
        let mut seen = std::collections::HashSet::new();
        if let Some(c) = cells.iter().find(|&&c| !seen.insert(c)) {
            return Err(py_err(
                py,
                Error::arg(
                    "cells",
                    format!("cell {c} is given twice: each is written once"),
                ),
            ));
        }
        for sub in ["cells", "requests"] {
            std::fs::create_dir_all(store.join(sub))
                .map_err(|e| py_err(py, Error::io(store.join(sub), e)))?;
        }
        let pool = pool(threads)?;
        let grid = self.grid.clone();
        interruptible(py, move |stop| {
            pool.install(|| {
                cells
                    .par_iter()
                    .map(|&c| {
                        // Ctrl-C: no new cell starts; the cells written stay (whole).
                        if stop.load(std::sync::atomic::Ordering::SeqCst) {
                            return Err(Error::arg("cells", "interrupted"));
                        }
                        let r = grid.run_cell(c)?;
                        let (jobs, reqs) = cell_paths(&store, c);
                        if grid.keeps_requests() {
                            write_parquet(&reqs, &requests_batch(std::slice::from_ref(&r)))?;
                        }
                        write_parquet(&jobs, &jobs_batch(&grid, std::slice::from_ref(&r)))?;
                        Ok(c)
                    })
                    .collect::<Result<Vec<u64>, Error>>()
            })
        })?
        .map_err(|e| py_err(py, e))
    }
}

/// Every scheduler: name, aliases, summary and tunables (name, unit, default, min, max, doc).
#[pyfunction]
fn schedulers(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for s in elevator_core::registry::all() {
        let d = PyDict::new(py);
        d.set_item("name", s.name)?;
        d.set_item("aliases", s.aliases.to_vec())?;
        d.set_item("summary", s.summary)?;
        let t = PyList::empty(py);
        for tun in s.tunables {
            let td = PyDict::new(py);
            td.set_item("name", tun.name)?;
            td.set_item("unit", format!("{:?}", tun.unit).to_lowercase())?;
            td.set_item("default", tun.default)?;
            td.set_item("min", tun.min)?;
            td.set_item("max", tun.max)?;
            td.set_item("doc", tun.doc)?;
            t.append(td)?;
        }
        d.set_item("tunables", t)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The built-in drives' names.
#[pyfunction]
fn drives() -> Vec<&'static str> {
    elevator_sim::DriveModel::builtin_names()
}

/// The built-in scenarios: name -> TOML text.
#[pyfunction]
fn scenarios() -> Vec<(&'static str, &'static str)> {
    elevator_campaign::scenarios::BUILTIN.to_vec()
}

/// A scenario's summary (name, description, drive, seed, jobs) from its TOML text; `origin`
/// names it in errors and `dir` resolves its drive path.
#[pyfunction]
#[pyo3(signature = (text, origin, dir=None))]
fn scenario_info<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
    dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let s = elevator_sim::scenario::Scenario::parse(text, origin, dir.as_deref())
        .map_err(|e| py_err(py, e.into()))?;
    let d = PyDict::new(py);
    d.set_item("name", &s.name)?;
    d.set_item("description", &s.description)?;
    d.set_item("drive", s.drive.name())?;
    d.set_item("seed", s.seed)?;
    d.set_item(
        "jobs",
        s.jobs.iter().map(|j| j.name.clone()).collect::<Vec<_>>(),
    )?;
    Ok(d)
}

/// Set to stop a real run early (Ctrl-C while `run_real` waits); cleared when a run starts.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Run `work` on a thread of its own while this one waits without the GIL, looking for
/// signals every 50 ms, so Ctrl-C (KeyboardInterrupt) is raised within 50 ms of the signal
/// instead of after the whole grid: `work` is told through the flag it gets (it starts no
/// new cell), and what it still computes is dropped. A panic in `work` is an
/// `ElevatorError`, never an abort.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce(&std::sync::atomic::AtomicBool) -> T + Send + 'static,
) -> PyResult<T> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&flag)));
        let _ = tx.send(r);
    });
    // In a mutex: a receiver is not Sync, and the wait below runs without the GIL.
    let rx = std::sync::Mutex::new(rx);
    loop {
        let got = py.detach(|| {
            rx.lock()
                .unwrap_or_else(|e| e.into_inner())
                .recv_timeout(std::time::Duration::from_millis(50))
        });
        match got {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(_)) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ElevatorError::new_err(
                    "a cell panicked (a bug: please report it)",
                ))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Err(e) = py.check_signals() {
            stop.store(true, Ordering::SeqCst);
            // The worker finishes the cells it has started on its own; nothing waits for it.
            return Err(e);
        }
    }
}

/// Run a fio job file on a real file or device (`spec_json`: a JSON
/// `elevator_campaign::real::RealSpec`) through `elevator-real`'s io_uring executor, as
/// `elevator run` does, and return its jobs table (the simulator's columns, one "cell" per
/// scheduler). The run goes on a thread of its own while this one waits without the GIL,
/// looking for signals every 50 ms: Ctrl-C stops the run (no new I/O, what is in flight
/// completes) and raises `KeyboardInterrupt`.
#[pyfunction]
fn run_real(py: Python<'_>, spec_json: &str) -> PyResult<(ArrowExport, Option<ArrowExport>)> {
    use std::sync::atomic::Ordering;
    let spec: elevator_campaign::real::RealSpec = serde_json::from_str(spec_json)
        .map_err(|e| PyValueError::new_err(format!("run spec: {e}")))?;
    STOP.store(false, Ordering::SeqCst);
    let worker = std::thread::spawn(move || elevator_campaign::real::run(&spec, Some(&STOP)));
    let mut interrupted = None;
    while !worker.is_finished() {
        py.detach(|| std::thread::sleep(std::time::Duration::from_millis(50)));
        if interrupted.is_none() {
            if let Err(e) = py.check_signals() {
                STOP.store(true, Ordering::SeqCst);
                interrupted = Some(e);
            }
        }
    }
    let result = worker
        .join()
        .map_err(|_| ElevatorError::new_err("the real run panicked"))?;
    if let Some(e) = interrupted {
        return Err(e);
    }
    let results = result.map_err(|e| py_err(py, e))?;
    let jobs = export(elevator_campaign::table::real_jobs_batch(&results))?;
    let kept = results.iter().any(|r| r.requests.is_some());
    let requests = if kept {
        Some(export(elevator_campaign::table::requests_batch(&results))?)
    } else {
        None
    };
    Ok((jobs, requests))
}

/// Join the Parquet shards `inputs` of one sweep into `out`, sorted by cell.
#[pyfunction]
fn merge(py: Python<'_>, inputs: Vec<PathBuf>, out: PathBuf) -> PyResult<()> {
    py.detach(|| {
        let b = elevator_campaign::table::merge(&inputs)?;
        write_parquet(&out, &b)
    })
    .map_err(|e| py_err(py, e))
}

/// The native module.
#[pymodule]
fn _elevator(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ElevatorError", py.get_type::<ElevatorError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add_class::<PyGrid>()?;
    m.add_class::<Output>()?;
    m.add_class::<ArrowExport>()?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(drives, m)?)?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_info, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(run_real, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
