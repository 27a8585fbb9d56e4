//! Cell results as Arrow record batches, and Parquet files of them.
//!
//! Two tables:
//!
//! - **jobs** ([`jobs_batch`]): one row per job per cell. Columns: `cell` (u64), `scheduler`,
//!   one column per swept axis named by its key (`seed`, `drive`, `kyber.read_lat_nsec`,
//!   `job.writer.bs`; integers as i64, the rest as text), `seed` (when not swept), `device`,
//!   `end_s`, `job`, `group`, `finished`, `seconds`, and per direction (`read_`, `write_`)
//!   `ios`, `bytes`, `iops`, `mb_s`, `mean_ms`, `p50_ms`, `p90_ms`, `p99_ms`, `max_ms`. The
//!   latencies are null for a direction that completed no I/O (`ios` 0), whose rates are 0.
//! - **requests** ([`requests_batch`]): one row per request, in completion order per cell.
//!   Columns: `cell`, `job` (dictionary of the job names), `process` (the issuing context),
//!   `op` (dictionary: read, write, flush, discard), `sector`, `sectors` (512-byte units),
//!   `q_ns`, `i_ns`, `d_ns`, `c_ns` (blktrace's queue, insert, dispatch and completion times,
//!   ns of simulated time; the simulator queues and inserts at once, so `q_ns == i_ns`),
//!   `merged`, `queued` (requests in the scheduler after its insert), `in_flight` (at the
//!   device after its dispatch), `t_ns` (when it got its tag, blk-mq's `start_time_ns`: on a
//!   disk under `none` its host tag, at or after `i_ns`; otherwise `d_ns`; last, so the
//!   columns before it keep their places).
//!
//! Every column is built from a `Vec` moved into its Arrow buffer, without a copy. Parquet
//! files are written with fixed settings (no compression, a fixed `created_by`) to a
//! temporary name and renamed into place, so a file that exists is whole and the same cell
//! gives the same bytes wherever it ran.

use elevator_workload::input::Temporary;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::UInt32Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, RecordBatch,
    StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use elevator_core::Op;
use elevator_workload::metrics::DirSummary;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::{Axis, CellResult, Coord, Error, Grid};

/// The columns of each direction's figures, after `read_` or `write_`.
const DIR_COLUMNS: [&str; 9] = [
    "ios", "bytes", "iops", "mb_s", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms",
];

/// The schema of `grid`'s jobs table.
pub fn jobs_schema(grid: &Grid) -> SchemaRef {
    schema_for(grid.axes())
}

/// The jobs table's schema for a grid of `axes`.
fn schema_for(axes: &[Axis]) -> SchemaRef {
    let mut fields = vec![
        Field::new("cell", DataType::UInt64, false),
        Field::new("scheduler", DataType::Utf8, false),
    ];
    for a in axes {
        let t = if a.is_int() {
            DataType::Int64
        } else {
            DataType::Utf8
        };
        fields.push(Field::new(a.key(), t, false));
    }
    if !seed_swept(axes) {
        fields.push(Field::new("seed", DataType::Int64, false));
    }
    fields.push(Field::new("device", DataType::Utf8, false));
    fields.push(Field::new("end_s", DataType::Float64, false));
    fields.push(Field::new("job", DataType::Utf8, false));
    fields.push(Field::new("group", DataType::Utf8, false));
    fields.push(Field::new("finished", DataType::Boolean, false));
    fields.push(Field::new("seconds", DataType::Float64, false));
    for dir in ["read", "write"] {
        for c in DIR_COLUMNS {
            let (t, nullable) = match c {
                "ios" | "bytes" => (DataType::UInt64, false),
                "iops" | "mb_s" => (DataType::Float64, false),
                // A direction that completed no I/O has no latency: null, not 0 ms.
                _ => (DataType::Float64, true),
            };
            fields.push(Field::new(format!("{dir}_{c}"), t, nullable));
        }
    }
    Arc::new(Schema::new(fields))
}

fn seed_swept(axes: &[Axis]) -> bool {
    axes.iter().any(|a| matches!(a, Axis::Seed(_)))
}

/// The jobs table of `results` (cells of `grid`): one row per job per cell, in the order
/// given.
pub fn jobs_batch(grid: &Grid, results: &[CellResult]) -> RecordBatch {
    batch_for(grid.axes(), results)
}

/// The jobs table of a real run's results ([`crate::real::run`]: one "cell" per scheduler,
/// no axes): the same columns as a simulated grid's without axes, `device` the target's path
/// and `end_s` the run's wall time in seconds.
pub fn real_jobs_batch(results: &[CellResult]) -> RecordBatch {
    batch_for(&[], results)
}

fn batch_for(axes: &[Axis], results: &[CellResult]) -> RecordBatch {
    let rows: Vec<(&CellResult, &elevator_workload::metrics::JobSummary)> = results
        .iter()
        .flat_map(|r| r.jobs.iter().map(move |j| (r, j)))
        .collect();
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(
            rows.iter().map(|(r, _)| r.cell).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            rows.iter()
                .map(|(r, _)| r.scheduler.as_str())
                .collect::<Vec<_>>(),
        )),
    ];
    for (i, a) in axes.iter().enumerate() {
        if a.is_int() {
            cols.push(Arc::new(Int64Array::from(
                rows.iter()
                    .map(|(r, _)| match &r.coordinates[i] {
                        Coord::Int(v) => *v,
                        Coord::Text(_) => unreachable!("an integer axis"),
                    })
                    .collect::<Vec<_>>(),
            )));
        } else {
            cols.push(Arc::new(StringArray::from(
                rows.iter()
                    .map(|(r, _)| r.coordinates[i].to_string())
                    .collect::<Vec<_>>(),
            )));
        }
    }
    if !seed_swept(axes) {
        cols.push(Arc::new(Int64Array::from(
            rows.iter().map(|(r, _)| r.seed as i64).collect::<Vec<_>>(),
        )));
    }
    let text = |f: &dyn Fn(&(&CellResult, &elevator_workload::metrics::JobSummary)) -> String| {
        Arc::new(StringArray::from(rows.iter().map(f).collect::<Vec<_>>())) as ArrayRef
    };
    let float = |f: &dyn Fn(&(&CellResult, &elevator_workload::metrics::JobSummary)) -> f64| {
        Arc::new(Float64Array::from(rows.iter().map(f).collect::<Vec<_>>())) as ArrayRef
    };
    cols.push(text(&|(r, _)| r.device.clone()));
    cols.push(float(&|(r, _)| r.end_s));
    cols.push(text(&|(_, j)| j.name.clone()));
    cols.push(text(&|(_, j)| j.group.clone()));
    cols.push(Arc::new(BooleanArray::from(
        rows.iter().map(|(_, j)| j.finished).collect::<Vec<_>>(),
    )));
    cols.push(float(&|(_, j)| j.seconds));
    let dirs: [fn(&elevator_workload::metrics::JobSummary) -> &DirSummary; 2] =
        [|j| &j.read, |j| &j.write];
    for dir in dirs {
        let ds: Vec<&DirSummary> = rows.iter().map(|r| dir(r.1)).collect();
        cols.push(Arc::new(UInt64Array::from(
            ds.iter().map(|d| d.ios).collect::<Vec<_>>(),
        )));
        cols.push(Arc::new(UInt64Array::from(
            ds.iter().map(|d| d.bytes).collect::<Vec<_>>(),
        )));
        let figures: [fn(&DirSummary) -> Option<f64>; 7] = [
            |s| Some(s.iops),
            |s| Some(s.mb_s),
            |s| s.latency(s.lat_mean_ms),
            |s| s.latency(s.lat_p50_ms),
            |s| s.latency(s.lat_p90_ms),
            |s| s.latency(s.lat_p99_ms),
            |s| s.latency(s.lat_max_ms),
        ];
        for f in figures {
            cols.push(Arc::new(Float64Array::from(
                ds.iter().map(|d| f(d)).collect::<Vec<_>>(),
            )));
        }
    }
    RecordBatch::try_new(schema_for(axes), cols).expect("columns match the schema")
}

/// The schema of the requests table.
pub fn requests_schema() -> SchemaRef {
    let dict = || DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
    let mut fields = vec![
        Field::new("cell", DataType::UInt64, false),
        Field::new("job", dict(), false),
        Field::new("process", DataType::UInt32, false),
        Field::new("op", dict(), false),
        Field::new("sector", DataType::UInt64, false),
        Field::new("sectors", DataType::UInt32, false),
    ];
    for t in ["q_ns", "i_ns", "d_ns", "c_ns"] {
        fields.push(Field::new(t, DataType::Int64, false));
    }
    fields.push(Field::new("merged", DataType::Boolean, false));
    fields.push(Field::new("queued", DataType::UInt32, false));
    fields.push(Field::new("in_flight", DataType::UInt32, false));
    fields.push(Field::new("t_ns", DataType::Int64, false));
    Arc::new(Schema::new(fields))
}

/// The requests table of `results` (those that kept their records; the others add no rows).
pub fn requests_batch(results: &[CellResult]) -> RecordBatch {
    let n: usize = results
        .iter()
        .filter_map(|r| r.requests.as_ref())
        .map(|q| q.records.len())
        .sum();
    let mut cell = Vec::with_capacity(n);
    let mut job = Vec::with_capacity(n);
    let mut process = Vec::with_capacity(n);
    let mut op = Vec::with_capacity(n);
    let mut sector = Vec::with_capacity(n);
    let mut sectors = Vec::with_capacity(n);
    let mut q = Vec::with_capacity(n);
    let mut d = Vec::with_capacity(n);
    let mut c = Vec::with_capacity(n);
    let mut merged = Vec::with_capacity(n);
    let mut queued = Vec::with_capacity(n);
    let mut in_flight = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    let mut names: Vec<&str> = Vec::new();
    let mut key_of: HashMap<&str, u32> = HashMap::new();
    for r in results {
        let Some(reqs) = &r.requests else { continue };
        let keys: Vec<u32> = reqs
            .jobs
            .iter()
            .map(|name| {
                *key_of.entry(name.as_str()).or_insert_with(|| {
                    names.push(name.as_str());
                    names.len() as u32 - 1
                })
            })
            .collect();
        for rec in &reqs.records {
            cell.push(r.cell);
            job.push(keys.get(rec.job as usize).copied().unwrap_or(0));
            process.push(rec.ctx);
            op.push(match rec.op {
                Op::Read => 0u32,
                Op::Write => 1,
                Op::Flush => 2,
                Op::Discard => 3,
            });
            sector.push(rec.sector);
            sectors.push(rec.sectors);
            q.push(rec.inserted.0 as i64);
            d.push(rec.dispatched.0 as i64);
            c.push(rec.completed.0 as i64);
            merged.push(rec.merged);
            queued.push(rec.queued);
            in_flight.push(rec.in_flight);
            t.push(rec.tagged.0 as i64);
        }
    }
    let dict = |keys: Vec<u32>, values: Vec<&str>| -> ArrayRef {
        Arc::new(
            DictionaryArray::<UInt32Type>::try_new(
                UInt32Array::from(keys),
                Arc::new(StringArray::from(values)),
            )
            .expect("keys index the values"),
        )
    };
    let i = Int64Array::from(q.clone());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(cell)),
        dict(job, names),
        Arc::new(UInt32Array::from(process)),
        dict(op, vec!["read", "write", "flush", "discard"]),
        Arc::new(UInt64Array::from(sector)),
        Arc::new(UInt32Array::from(sectors)),
        Arc::new(Int64Array::from(q)),
        Arc::new(i),
        Arc::new(Int64Array::from(d)),
        Arc::new(Int64Array::from(c)),
        Arc::new(BooleanArray::from(merged)),
        Arc::new(UInt32Array::from(queued)),
        Arc::new(UInt32Array::from(in_flight)),
        Arc::new(Int64Array::from(t)),
    ];
    RecordBatch::try_new(requests_schema(), cols).expect("columns match the schema")
}

/// Write `batch` to `path` as Parquet: to a temporary file beside it, then renamed into
/// place (a file that exists is whole). Fixed writer settings: the same batch gives the same
/// bytes.
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<(), Error> {
    let io = |e: &dyn std::fmt::Display| Error::io(path, e);
    // The file is written beside and renamed over the path: over a device node, a FIFO or a
    // directory that would replace it (as root, `/dev/null` itself). Refused; a symlink is
    // followed, so the file it points to is replaced, not the link.
    let path = &match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| io(&e))?,
        _ => path.to_path_buf(),
    };
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() {
            return Err(io(
                &"not a regular file: a Parquet table is written only to a file",
            ));
        }
    }
    // Listed as a temporary (`elevator_workload::input::Temporary`): removed on failure
    // (ENOSPC leaves no `PATH.tmp.PID` behind) and when a signal ends the process.
    let (tmp, file) =
        Temporary::create(tmp_path(path), |p| std::fs::File::create(p)).map_err(|e| io(&e))?;
    let props = WriterProperties::builder()
        .set_created_by(format!("elevator-campaign {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| io(&e))?;
    w.write(batch).map_err(|e| io(&e))?;
    let file = w.into_inner().map_err(|e| io(&e))?;
    file.sync_all().map_err(|e| io(&e))?;
    drop(file);
    tmp.commit(path).map_err(|e| io(&e))
}

/// `PATH` -> `PATH.tmp.PID`: unique per process, ignored by readers of a store.
fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".tmp.{}", std::process::id()));
    PathBuf::from(s)
}

/// The record batches of the Parquet file at `path`.
pub fn read_parquet(path: &Path) -> Result<Vec<RecordBatch>, Error> {
    let io = |e: &dyn std::fmt::Display| Error::io(path, e);
    // Parquet is read from its end (the footer): only a regular file can be. Checked before
    // the open, which on a FIFO nothing writes would wait for ever, and on `/dev/zero` read
    // without end.
    let meta = std::fs::metadata(path).map_err(|e| io(&e))?;
    if !meta.is_file() {
        return Err(io(&if meta.is_dir() {
            "a directory, not a Parquet file"
        } else {
            "not a regular file: a Parquet table is read from a file (its footer is at the end)"
        }));
    }
    let file = std::fs::File::open(path).map_err(|e| io(&e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| io(&e))?
        .build()
        .map_err(|e| io(&e))?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| io(&e))
}

/// Join Parquet files of one grid's tables (the shards of `--shard I/N`) into one batch
/// sorted by `cell` (rows of one cell keep their order). Every file must have the same
/// schema, and no cell may come from two files.
pub fn merge(inputs: &[PathBuf]) -> Result<RecordBatch, Error> {
    let first = inputs
        .first()
        .ok_or_else(|| Error::arg("merge", "no input files"))?;
    let mut batches: Vec<RecordBatch> = Vec::new();
    let mut owner: HashMap<u64, usize> = HashMap::new();
    let mut schema: Option<SchemaRef> = None;
    for (f, path) in inputs.iter().enumerate() {
        let bs = read_parquet(path)?;
        for b in bs {
            match &schema {
                None => schema = Some(b.schema()),
                Some(s) if s.fields() != b.schema().fields() => {
                    return Err(Error::io(
                        path,
                        format!(
                            "its columns differ from {}'s: not a shard of the same sweep",
                            first.display()
                        ),
                    ))
                }
                Some(_) => {}
            }
            let cells = cell_column(&b, path)?;
            for c in cells.values().iter() {
                if let Some(&other) = owner.get(c) {
                    if other != f {
                        return Err(Error::io(
                            path,
                            format!(
                                "cell {c} is also in {}: shards overlap",
                                inputs[other].display()
                            ),
                        ));
                    }
                }
                owner.insert(*c, f);
            }
            batches.push(b);
        }
    }
    let schema = schema.ok_or_else(|| Error::io(first, "no rows"))?;
    let mut order: Vec<(u64, usize, usize)> = Vec::new();
    for (bi, b) in batches.iter().enumerate() {
        let cells = cell_column(b, first)?;
        order.extend(cells.values().iter().enumerate().map(|(r, &c)| (c, bi, r)));
    }
    // Stable: rows of one cell keep their file order.
    order.sort_by_key(|&(c, _, _)| c);
    let indices: Vec<(usize, usize)> = order.iter().map(|&(_, b, r)| (b, r)).collect();
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    if refs.is_empty() {
        return Ok(RecordBatch::new_empty(schema));
    }
    arrow_select::interleave::interleave_record_batch(&refs, &indices)
        .map_err(|e| Error::io(first, e))
}

/// The cells missing below the highest in a table of a grid (a shard not merged): how many,
/// and the first. Cells above the highest cannot be told from the table (a last shard absent).
pub fn missing_cells(batch: &RecordBatch) -> (u64, Option<u64>) {
    let Some(cells) = batch
        .column_by_name("cell")
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
    else {
        return (0, None);
    };
    let mut seen: Vec<u64> = cells.values().to_vec();
    seen.sort_unstable();
    seen.dedup();
    let mut missing = 0u64;
    let mut first = None;
    let mut expect = 0u64;
    for &c in &seen {
        if c > expect {
            missing += c - expect;
            first.get_or_insert(expect);
        }
        expect = c.saturating_add(1);
    }
    (missing, first)
}

fn cell_column<'a>(b: &'a RecordBatch, path: &Path) -> Result<&'a UInt64Array, Error> {
    b.column_by_name("cell")
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .ok_or_else(|| Error::io(path, "no `cell` column of u64: not an elevator table"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GridSpec;

    fn grid(requests: bool) -> Grid {
        Grid::new(&GridSpec {
            fio_text: Some("[r]\nrw=randread\nbs=4k\nsize=4m\nnumber_ios=50\n".into()),
            sched: vec!["none".into(), "kyber".into()],
            sweep: vec![
                "seed=1..3".into(),
                "kyber.read_lat_nsec=1000000,2000000".into(),
            ],
            requests,
            ..GridSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn the_jobs_table_has_a_row_per_job_per_cell_and_the_axes_as_columns() {
        let g = grid(false);
        let results = g.run_cells(&[0, 7, 11]).unwrap();
        let b = jobs_batch(&g, &results);
        assert_eq!(b.num_rows(), 3);
        let s = b.schema();
        assert_eq!(s.field(2).name(), "seed");
        assert_eq!(s.field(3).name(), "kyber.read_lat_nsec");
        assert_eq!(s.field(2).data_type(), &DataType::Int64);
        let cells = cell_column(&b, Path::new("x")).unwrap();
        assert_eq!(cells.values().to_vec(), vec![0, 7, 11]);
        let ios = b
            .column_by_name("read_ios")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap();
        assert_eq!(ios.value(0), 50);
    }

    /// A reader's write latencies (no write completed) are null in the table and in its
    /// Parquet file, not 0 ms; its rates are 0 and its read latencies are figures (issue 32,
    /// round 21).
    #[test]
    fn a_direction_without_io_has_null_latencies_and_zero_rates() {
        let dir = tempfile::tempdir().unwrap();
        let g = grid(false);
        let b = jobs_batch(&g, &[g.run_cell(0).unwrap()]);
        let p = dir.path().join("j.parquet");
        write_parquet(&p, &b).unwrap();
        for b in [&b, &read_parquet(&p).unwrap()[0]] {
            for c in ["mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"] {
                let w = b.column_by_name(&format!("write_{c}")).unwrap();
                assert_eq!(w.null_count(), 1, "write_{c}");
                let r = b.column_by_name(&format!("read_{c}")).unwrap();
                assert_eq!(r.null_count(), 0, "read_{c}");
            }
            let iops = b.column_by_name("write_iops").unwrap();
            let iops = iops.as_any().downcast_ref::<Float64Array>().unwrap();
            assert_eq!((iops.null_count(), iops.value(0)), (0, 0.0));
        }
    }

    #[test]
    fn parquet_round_trips_and_the_same_cell_gives_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let g = grid(true);
        let a = dir.path().join("a.parquet");
        let b = dir.path().join("b.parquet");
        write_parquet(&a, &jobs_batch(&g, &[g.run_cell(4).unwrap()])).unwrap();
        let again = g.run_cells(&[3, 4]).unwrap();
        write_parquet(&b, &jobs_batch(&g, &again[1..])).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        let back = read_parquet(&a).unwrap();
        assert_eq!(back[0], jobs_batch(&g, &again[1..]));
        let reqs = requests_batch(&again);
        assert_eq!(reqs.num_rows(), 100);
        let r = dir.path().join("r.parquet");
        write_parquet(&r, &reqs).unwrap();
        assert_eq!(read_parquet(&r).unwrap()[0], reqs);
        assert!(!std::fs::read_dir(dir.path()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp.")));
    }

    #[test]
    fn merging_shards_gives_the_whole_grid_in_cell_order() {
        let dir = tempfile::tempdir().unwrap();
        let g = grid(false);
        let whole = jobs_batch(&g, &g.run_cells(&(0..g.len()).collect::<Vec<_>>()).unwrap());
        let mut paths = Vec::new();
        for i in 0..3 {
            let p = dir.path().join(format!("s{i}.parquet"));
            let cells = g.shard(i, 3).unwrap();
            write_parquet(&p, &jobs_batch(&g, &g.run_cells(&cells).unwrap())).unwrap();
            paths.push(p);
        }
        paths.reverse();
        assert_eq!(merge(&paths).unwrap(), whole);
        paths.push(paths[0].clone());
        assert!(merge(&paths).unwrap_err().to_string().contains("overlap"));
    }
}
