//! `elevator sim SCENARIO --sweep AXIS=VALUES ...`: the cross product of schedulers and swept
//! values, run on every core.
//!
//! An axis is `seed=1..5` (integers, inclusive), `drive=NAME,NAME` (built-in drives or drive
//! files), `SCHED.TUNABLE=V,V` (a tunable of one scheduler, sysfs name; the other schedulers
//! run without it), `job.NAME.FIELD=V,V` (a field of a scenario job, as its TOML would set
//! it), `GROUP/FILE=V,V` (a cgroup v2 io file of a group, as under /sys/fs/cgroup:
//! `/a/io.weight`, `/a/io.bfq.weight`, `/a/io.latency` in microseconds, `/a/io.max` as written
//! after `MAJ:MIN`) or `io.cost.qos=...` / `io.cost.model=...` (the device's, on the root). Values
//! are a comma-separated list or an inclusive integer range `LO..HI`.
//!
//! The grid, its cells and each cell's run are the library's (`elevator_campaign::Grid`, which
//! the Python package runs too): cells are laid out in a fixed order (scheduler, then each axis
//! in the order given, each value in the order given) and run with rayon; results are
//! collected in that order, so the table, the JSON, the Parquet file and the plot are the same
//! bytes whatever the number of threads. Cells that would run the same simulation (a tunable
//! axis under a scheduler without that tunable) run once. `--shard I/N` runs every N-th cell
//! from cell I (0-based) and writes only those; `elevator merge` joins the shards' Parquet
//! files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use elevator_campaign::{Axis, CellResult, Grid};
use serde::Serialize;

use crate::output::{self, say};
use crate::plot::{self, Series};
use crate::report::Sink;

/// What a sweep runs with (from `elevator sim`'s arguments).
pub struct Opts<'a> {
    /// The grid: the scenario, schedulers, `--set`, seed and axes.
    pub grid: Grid,
    /// `--shard I/N`: run only every N-th cell from I.
    pub shard: Option<(u64, u64)>,
    /// The metric tabled and plotted.
    pub metric: &'a str,
    /// `--json`.
    pub json: Option<&'a Path>,
    /// `--parquet`: the jobs table (one row per job per cell).
    pub parquet: Option<&'a Path>,
    /// `--report`.
    pub report: Option<&'a Path>,
    /// `--plot`: the metric's SVG.
    pub plot: Option<&'a Path>,
}

/// One cell's result, as JSON.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Row {
    /// The cell's index in the grid.
    pub cell: u64,
    /// The scheduler.
    pub scheduler: String,
    /// Each axis's value, by axis key.
    pub coordinates: BTreeMap<String, String>,
    /// Every metric: `end_s`, and per job `JOB.seconds` and, of `read` and `write`,
    /// `JOB.read_mb_s`, `JOB.read_iops`, `JOB.read_mean_ms`, `JOB.read_p50_ms`, `_p90_ms`,
    /// `_p99_ms`, `_p999_ms` (campaign's `CellResult::metrics`); a latency of a direction
    /// the job completed no I/O in has no value (`null` in JSON, `-` in the table, no point in
    /// the plot).
    pub metrics: BTreeMap<String, Option<f64>>,
}

#[derive(Serialize)]
struct Out<'a> {
    scenario: &'a str,
    metric: &'a str,
    axes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<String>,
    rows: &'a [Row],
}

/// Parse `--shard I/N` (0 <= I < N).
pub fn parse_shard(text: &str) -> anyhow::Result<(u64, u64)> {
    let (i, n) = text
        .split_once('/')
        .with_context(|| format!("--shard {text:?}: expected I/N, e.g. 0/4"))?;
    let int = |s: &str| {
        s.trim()
            .parse::<u64>()
            .with_context(|| format!("--shard {text:?}: {s:?} is not a whole number"))
    };
    let (i, n) = (int(i)?, int(n)?);
    anyhow::ensure!(
        n > 0 && i < n,
        "--shard {text}: expected I/N with 0 <= I < N (shards are numbered from 0)"
    );
    Ok((i, n))
}

/// Run the cells (in parallel, each distinct simulation once); results in cell order.
pub fn results(grid: &Grid, cells: &[u64]) -> anyhow::Result<Vec<CellResult>> {
    let bar = crate::progress::bar(cells.len(), "sweep");
    let r = grid.run_cells_with(cells, || bar.inc(1));
    bar.finish_and_clear();
    Ok(r?)
}

/// Each result as a JSON row.
pub fn rows(grid: &Grid, results: &[CellResult]) -> Vec<Row> {
    results
        .iter()
        .map(|r| Row {
            cell: r.cell,
            scheduler: r.scheduler.clone(),
            coordinates: grid
                .axes()
                .iter()
                .zip(&r.coordinates)
                .map(|(a, c)| (a.key(), c.to_string()))
                .collect(),
            metrics: r.metrics(),
        })
        .collect()
}

/// A point of a line: x and the metric at every seed.
type XYs = (f64, Vec<f64>);

/// An axis's values, as text.
fn labels(a: &Axis) -> Vec<String> {
    (0..a.len()).map(|i| a.coord(i).to_string()).collect()
}

/// The plotted lines: the metric's mean over seeds against the first axis other than seed,
/// one line per scheduler (and per value of any further axes).
pub fn series(axes: &[Axis], rows: &[Row], metric: &str) -> (String, Vec<Series>) {
    let x_axis = axes.iter().find(|a| !matches!(a, Axis::Seed(_)));
    let x_key = x_axis.map_or("seed".to_string(), Axis::key);
    let x_labels = x_axis.map_or_else(|| axes.first().map(labels).unwrap_or_default(), labels);
    let x_of = |row: &Row| -> f64 {
        let label = row.coordinates.get(&x_key).map_or("", String::as_str);
        label
            .parse::<f64>()
            .unwrap_or_else(|_| x_labels.iter().position(|l| l == label).unwrap_or(0) as f64)
    };
    // Lines keyed by scheduler and the axes neither x nor seed, in first-seen order.
    let mut lines: Vec<(String, Vec<XYs>)> = Vec::new();
    for row in rows {
        let mut label = row.scheduler.clone();
        for (k, v) in &row.coordinates {
            if *k != x_key && k != "seed" {
                label.push_str(&format!(" {k}={v}"));
            }
        }
        let Some(&Some(y)) = row.metrics.get(metric) else {
            continue;
        };
        let x = x_of(row);
        let line = match lines.iter().position(|l| l.0 == label) {
            Some(i) => &mut lines[i].1,
            None => {
                lines.push((label, Vec::new()));
                &mut lines.last_mut().expect("pushed").1
            }
        };
        match line.iter_mut().find(|p| p.0 == x) {
            Some(p) => p.1.push(y),
            None => line.push((x, vec![y])),
        }
    }
    let series = lines
        .into_iter()
        .map(|(label, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label,
                points: pts
                    .into_iter()
                    .map(|(x, ys)| (x, ys.iter().sum::<f64>() / ys.len() as f64))
                    .collect(),
            }
        })
        .collect();
    (x_key, series)
}

/// Run the sweep: table, JSON, plot.
pub fn run(opts: Opts) -> anyhow::Result<()> {
    output::json_to_stdout(opts.json);
    let grid = &opts.grid;
    anyhow::ensure!(!grid.axes().is_empty(), "--sweep: no axis");
    let cells: Vec<u64> = match opts.shard {
        Some((i, n)) => grid.shard(i, n)?,
        None => (0..grid.len()).collect(),
    };
    let results = results(grid, &cells)?;
    let rows = rows(grid, &results);
    if !rows.is_empty() && !rows.iter().any(|r| r.metrics.contains_key(opts.metric)) {
        let known: Vec<&String> = rows
            .first()
            .map(|r| r.metrics.keys().collect())
            .unwrap_or_default();
        bail!(
            "--metric {:?}: no such metric (known: {})",
            opts.metric,
            known
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let valued = rows
        .iter()
        .filter(|r| matches!(r.metrics.get(opts.metric), Some(Some(_))))
        .count();
    if valued < rows.len() {
        say!(
            "note: --metric {}: {} of {} cells have no value (the job completed no I/O in that \
             direction, so it has no latency): shown as -, with no point in the plot",
            opts.metric,
            rows.len() - valued,
            rows.len()
        );
    }
    let keys: Vec<String> = grid.axes().iter().map(Axis::key).collect();
    let mut header: Vec<&str> = vec!["scheduler"];
    header.extend(keys.iter().map(String::as_str));
    header.push(opts.metric);
    // A tunable axis does not apply to the other schedulers: their cells ran once whatever
    // its value, so the table shows `-` there and each such run once (it listed a row per
    // value, as if the value had been used).
    let mut shown = std::collections::HashSet::new();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut line = vec![r.scheduler.clone()];
            line.extend(grid.axes().iter().zip(&keys).map(|(a, k)| {
                if a.applies_to(&r.scheduler) {
                    r.coordinates[k].clone()
                } else {
                    "-".into()
                }
            }));
            line.push(
                r.metrics
                    .get(opts.metric)
                    .copied()
                    .flatten()
                    .map_or("-".into(), |v| format!("{v:.4}")),
            );
            line
        })
        .filter(|line| shown.insert(line.clone()))
        .collect();
    let name = grid.name();
    let shard = opts.shard.map(|(i, n)| format!("{i}/{n}"));
    say!(
        "== sweep of {name} over {} cells ({}){}",
        rows.len(),
        keys.join(" x "),
        shard.as_ref().map_or(String::new(), |s| format!(
            ", shard {s} of {} cells",
            grid.len()
        ))
    );
    output::say_str(&output::table(&header, &table));
    let (x_key, series) = series(grid.axes(), &rows, opts.metric);
    let title = format!("{name}: {} (mean over seeds)", opts.metric);
    let svg = || plot::lines::lines(&title, &x_key, opts.metric, &series);
    // Every output is attempted whatever the others do: a failed one does not lose the
    // results the others hold (they were all checked before the cells ran).
    let mut outcomes = crate::cmd::common::Outcomes::default();
    if let Some(p) = opts.plot {
        let r = svg().and_then(|s| {
            elevator_workload::input::write_output(p, s)
                .with_context(|| format!("--plot: writing {}", p.display()))
        });
        if outcomes.keep(r).is_some() {
            say!("wrote {}", p.display());
        }
    }
    let page = Sink::new(
        opts.report.is_some(),
        &format!("elevator sim {name} --sweep"),
    );
    page.table(
        &format!("{} over {}", opts.metric, keys.join(" x ")),
        &header,
        &table,
    );
    outcomes.keep(
        page.plot(&format!("sweep-{}", opts.metric), &title, svg)
            .and_then(|()| page.write(opts.report)),
    );
    if let Some(path) = opts.json {
        outcomes.keep(output::write_json(
            path,
            &Out {
                scenario: &name,
                metric: opts.metric,
                axes: keys,
                shard,
                rows: &rows,
            },
        ));
    }
    if let Some(path) = opts.parquet {
        let batch = elevator_campaign::table::jobs_batch(grid, &results);
        let r = elevator_campaign::table::write_parquet(path, &batch)
            .with_context(|| format!("--parquet {}", path.display()));
        if outcomes.keep(r).is_some() {
            say!("wrote {}", path.display());
        }
    }
    outcomes.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_as_i_of_n_from_zero() {
        assert_eq!(parse_shard("0/4").unwrap(), (0, 4));
        assert_eq!(parse_shard(" 3 / 4 ").unwrap(), (3, 4));
        for bad in ["4/4", "1/0", "a/2", "1", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn series_average_over_seeds_one_line_per_scheduler() {
        let row = |s: &str, v: &str, seed: &str, y: f64| Row {
            cell: 0,
            scheduler: s.into(),
            coordinates: [
                ("as.x".to_string(), v.to_string()),
                ("seed".to_string(), seed.to_string()),
            ]
            .into_iter()
            .collect(),
            metrics: [("end_s".to_string(), Some(y))].into_iter().collect(),
        };
        let axes = vec![
            Axis::Tunable {
                sched: "as".into(),
                name: "x".into(),
                values: vec![0, 2],
            },
            Axis::Seed(vec![1, 2]),
        ];
        let rows = vec![
            row("as", "0", "1", 10.0),
            row("as", "0", "2", 20.0),
            row("as", "2", "1", 1.0),
            row("as", "2", "2", 3.0),
            row("deadline", "0", "1", 5.0),
            row("deadline", "2", "1", 5.0),
        ];
        let (x, s) = series(&axes, &rows, "end_s");
        assert_eq!(x, "as.x");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].points, vec![(0.0, 15.0), (2.0, 2.0)]);
        assert_eq!(s[1].label, "deadline");
    }
}
