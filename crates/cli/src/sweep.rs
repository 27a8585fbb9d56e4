//! `elevator sim SCENARIO --sweep AXIS=VALUES ...`: the cross product of schedulers and swept
//! values, run on every core.
//!
//! An axis is `seed=1..5` (integers, inclusive), `drive=NAME,NAME` (built-in drives or drive
//! files), `SCHED.TUNABLE=V,V` (a tunable of one scheduler, sysfs name; the other schedulers
//! run without it) or `job.NAME.FIELD=V,V` (a field of a scenario job, as its TOML would set
//! it). Values are a comma-separated list or an inclusive integer range `LO..HI`.
//!
//! Cells are laid out in a fixed order (scheduler, then each axis in the order given, each
//! value in the order given) and run with rayon; results are collected in that order, so the
//! table, the JSON and the plot are the same bytes whatever the number of threads. Cells that
//! would run the same simulation (a tunable axis under a scheduler without that tunable) run
//! once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use elevator_core::Settings;
use elevator_sim::scenario::Scenario;
use rayon::prelude::*;
use serde::Serialize;

use crate::output::{self, say};
use crate::plot::{self, Series};
use crate::report::Sink;

/// One swept parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Axis {
    /// The scenario's seed.
    Seed(Vec<u64>),
    /// The drive.
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

impl Axis {
    /// How the axis is written (`seed`, `drive`, `anticipatory.antic_expire`, `job.x.bs`).
    pub fn key(&self) -> String {
        match self {
            Axis::Seed(_) => "seed".into(),
            Axis::Drive(_) => "drive".into(),
            Axis::Tunable { sched, name, .. } => format!("{sched}.{name}"),
            Axis::Job { job, field, .. } => format!("job.{job}.{field}"),
        }
    }

    /// The values, as text.
    fn labels(&self) -> Vec<String> {
        match self {
            Axis::Seed(v) => v.iter().map(u64::to_string).collect(),
            Axis::Drive(v) => v.clone(),
            Axis::Tunable { values, .. } => values.iter().map(i64::to_string).collect(),
            Axis::Job { values, .. } => values.iter().map(show).collect(),
        }
    }

    /// How many values (counted, not rendered: the odometer asks at every cell).
    fn len(&self) -> usize {
        match self {
            Axis::Seed(v) => v.len(),
            Axis::Drive(v) => v.len(),
            Axis::Tunable { values, .. } => values.len(),
            Axis::Job { values, .. } => values.len(),
        }
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
fn integers(key: &str, text: &str) -> anyhow::Result<Vec<i64>> {
    let int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .with_context(|| format!("--sweep {key}: {s:?} is not an integer"))
    };
    if let Some((lo, hi)) = text.split_once("..") {
        let (lo, hi) = (int(lo)?, int(hi)?);
        anyhow::ensure!(lo <= hi, "--sweep {key}: empty range {lo}..{hi}");
        anyhow::ensure!(
            hi - lo < 100_000,
            "--sweep {key}: {lo}..{hi} is too many values"
        );
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

/// Parse one `--sweep KEY=VALUES`.
pub fn parse_axis(arg: &str) -> anyhow::Result<Axis> {
    let (key, values) = arg
        .split_once('=')
        .with_context(|| format!("--sweep {arg:?}: expected KEY=VALUES"))?;
    let key = key.trim();
    anyhow::ensure!(!values.trim().is_empty(), "--sweep {key}: no values");
    if key == "seed" {
        let v = integers(key, values)?;
        if let Some(bad) = v.iter().find(|&&s| s < 0) {
            bail!("--sweep seed: {bad} is negative");
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
            let info = elevator_core::registry::find(sched)
                .with_context(|| format!("--sweep {key}: no scheduler named {sched:?}"))?;
            anyhow::ensure!(
                info.has_tunable(name),
                "--sweep {key}: {sched} has no tunable {name:?} (elevator list shows them)"
            );
            Ok(Axis::Tunable {
                sched: sched.to_string(),
                name: name.to_string(),
                values: integers(key, values)?,
            })
        }
        _ => bail!("--sweep {key}: expected seed, drive, SCHED.TUNABLE or job.NAME.FIELD"),
    }
}

/// What a sweep runs with (from `elevator sim`'s arguments).
pub struct Opts<'a> {
    /// The scenario's name or path, as given.
    pub scenario: &'a str,
    /// The scenario, loaded, with `--wakeup-us` applied.
    pub base: Scenario,
    /// Schedulers.
    pub sched: &'a [String],
    /// `--set` for every scheduler that has the tunable.
    pub extra: &'a Settings,
    /// The seed when no axis sweeps it.
    pub seed: u64,
    /// The axes, in the order given.
    pub axes: Vec<Axis>,
    /// The metric tabled and plotted.
    pub metric: &'a str,
    /// `--json`.
    pub json: Option<&'a Path>,
    /// `--report`.
    pub report: Option<&'a Path>,
    /// `--plot`: the metric's SVG.
    pub plot: Option<&'a Path>,
}

/// One cell's coordinates: its scheduler and one value index per axis.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cell {
    sched: usize,
    at: Vec<usize>,
}

/// One cell's result, as JSON.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Row {
    /// The scheduler.
    pub scheduler: String,
    /// Each axis's value, by axis key.
    pub coordinates: BTreeMap<String, String>,
    /// Every metric: `end_s`, and per job `JOB.seconds`, `JOB.read_mb_s`, `JOB.read_iops`,
    /// `JOB.read_mean_ms`, `JOB.read_p99_ms`, `JOB.write_mb_s`, `JOB.write_p99_ms`.
    pub metrics: BTreeMap<String, f64>,
}

#[derive(Serialize)]
struct Out<'a> {
    scenario: &'a str,
    metric: &'a str,
    axes: Vec<String>,
    rows: &'a [Row],
}

/// Every cell of the cross product, in order.
fn cells(n_sched: usize, axes: &[Axis]) -> Vec<Cell> {
    let mut out = Vec::new();
    for sched in 0..n_sched {
        let mut at = vec![0; axes.len()];
        loop {
            out.push(Cell {
                sched,
                at: at.clone(),
            });
            // Odometer: the last axis turns fastest.
            let mut i = axes.len();
            loop {
                if i == 0 {
                    break;
                }
                i -= 1;
                at[i] += 1;
                if at[i] < axes[i].len() {
                    break;
                }
                at[i] = 0;
            }
            if at.iter().all(|&a| a == 0) {
                break;
            }
        }
    }
    out
}

/// The scenario text of `name_or_path` (built in or a file) and the directory its drive
/// paths resolve against.
fn source(name_or_path: &str) -> anyhow::Result<(String, Option<PathBuf>)> {
    if let Some((_, text)) = crate::scenarios::BUILTIN
        .iter()
        .find(|(n, _)| *n == name_or_path)
    {
        return Ok((text.to_string(), None));
    }
    let p = Path::new(name_or_path);
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    Ok((text, p.parent().map(Path::to_path_buf)))
}

/// What one cell runs: the scenario (with its job fields and drive), the scheduler's
/// settings and the seed. Two cells with equal `Plan`s give the same result.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    sched: usize,
    settings: Vec<(String, i64)>,
    seed: u64,
    drive: Option<String>,
    job_fields: Vec<(String, String, toml::Value)>,
}

fn plan(opts: &Opts, cell: &Cell) -> Plan {
    let sched = &opts.sched[cell.sched];
    let mut p = Plan {
        sched: cell.sched,
        settings: Vec::new(),
        seed: opts.seed,
        drive: None,
        job_fields: Vec::new(),
    };
    for (axis, &i) in opts.axes.iter().zip(&cell.at) {
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

/// The scenario with its `drive` replaced and `fields` set in its jobs, parsed again from
/// its edited text (so the scenario's own drive settings, such as `write_cache`, still apply).
fn edited(
    text: &str,
    dir: Option<&Path>,
    origin: &str,
    drive: Option<&str>,
    fields: &[(String, String, toml::Value)],
) -> anyhow::Result<Scenario> {
    let mut doc: toml::Table = toml::from_str(text).with_context(|| origin.to_string())?;
    let mut what: Vec<String> = Vec::new();
    if let Some(d) = drive {
        doc.insert("drive".into(), toml::Value::String(d.to_string()));
        what.push(format!("drive={d}"));
    }
    for (job, field, value) in fields {
        let jobs = doc
            .get_mut("job")
            .and_then(toml::Value::as_array_mut)
            .with_context(|| format!("--sweep job.{job}.{field}: {origin} has no jobs"))?;
        let t = jobs
            .iter_mut()
            .filter_map(toml::Value::as_table_mut)
            .find(|t| t.get("name").and_then(toml::Value::as_str) == Some(job.as_str()))
            .with_context(|| format!("--sweep job.{job}.{field}: {origin} has no job {job:?}"))?;
        t.insert(field.clone(), value.clone());
    }
    what.extend(
        fields
            .iter()
            .map(|(j, f, v)| format!("job.{j}.{f}={}", show(v))),
    );
    let text = toml::to_string(&doc).context("re-writing the scenario")?;
    Scenario::parse(&text, &format!("{origin} with {}", what.join(", ")), dir)
        .map_err(anyhow::Error::from)
}

/// Run one plan; its metrics.
fn measure(
    opts: &Opts,
    source: &Option<(String, Option<PathBuf>)>,
    p: &Plan,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let scenario = match source {
        Some((text, dir)) if !p.job_fields.is_empty() || p.drive.is_some() => {
            let origin = &opts.base.origin;
            let drive = p.drive.as_deref();
            let mut s = edited(text, dir.as_deref(), origin, drive, &p.job_fields)?;
            s.wakeup = opts.base.wakeup;
            s
        }
        _ => opts.base.clone(),
    };
    let name = &opts.sched[p.sched];
    let info = elevator_core::registry::find(name).context("a known scheduler")?;
    let mut settings = crate::cmd::settings_for(&info, opts.extra);
    for (k, v) in &p.settings {
        settings.set(k, *v);
    }
    let policy = scenario
        .scheduler(name, &settings)
        .map_err(|e| anyhow::anyhow!("--sweep under {name}: {}", e.message))?;
    let report = scenario
        .simulation(policy, Some(p.seed))
        .run(scenario.limit);
    let mut m = BTreeMap::new();
    m.insert("end_s".to_string(), report.end.as_secs_f64());
    for j in report.summaries() {
        let n = &j.name;
        m.insert(format!("{n}.seconds"), j.seconds);
        m.insert(format!("{n}.read_mb_s"), j.read.mb_s);
        m.insert(format!("{n}.read_iops"), j.read.iops);
        m.insert(format!("{n}.read_mean_ms"), j.read.lat_mean_ms);
        m.insert(format!("{n}.read_p99_ms"), j.read.lat_p99_ms);
        m.insert(format!("{n}.write_mb_s"), j.write.mb_s);
        m.insert(format!("{n}.write_p99_ms"), j.write.lat_p99_ms);
    }
    Ok(m)
}

/// Cells a sweep may have at most (schedulers times every axis's values).
pub const MAX_CELLS: u64 = 100_000;

/// Refuse a grid of more than [`MAX_CELLS`] cells, counted without building it (a product
/// that overflows is refused too).
pub fn check_grid(n_sched: usize, axes: &[Axis]) -> anyhow::Result<()> {
    let mut cells = n_sched as u64;
    let mut sizes = vec![format!("{n_sched} schedulers")];
    for a in axes {
        cells = cells.saturating_mul(a.len() as u64);
        sizes.push(format!("{} values of {}", a.len(), a.key()));
    }
    anyhow::ensure!(
        cells <= MAX_CELLS,
        "--sweep: {} cells ({}) is more than the {MAX_CELLS} a sweep runs; sweep fewer values",
        if cells == u64::MAX {
            "more than 2^64".to_string()
        } else {
            cells.to_string()
        },
        sizes.join(" x ")
    );
    Ok(())
}

/// Run every cell (in parallel, each distinct simulation once); rows in cell order.
pub fn rows(opts: &Opts) -> anyhow::Result<Vec<Row>> {
    let needs_source = opts
        .axes
        .iter()
        .any(|a| matches!(a, Axis::Job { .. } | Axis::Drive(_)));
    let source = needs_source.then(|| source(opts.scenario)).transpose()?;
    check_grid(opts.sched.len(), &opts.axes)?;
    let cells = cells(opts.sched.len(), &opts.axes);
    let plans: Vec<Plan> = cells.iter().map(|c| plan(opts, c)).collect();
    // Equal plans found through a hash of their text: linear in the cells, not quadratic.
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
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
    let bar = crate::progress::bar(distinct.len(), "sweep");
    let results: Vec<BTreeMap<String, f64>> = distinct
        .par_iter()
        .map(|p| {
            let r = measure(opts, &source, p);
            bar.inc(1);
            r
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    Ok(cells
        .iter()
        .zip(index)
        .map(|(c, i)| Row {
            scheduler: opts.sched[c.sched].clone(),
            coordinates: opts
                .axes
                .iter()
                .zip(&c.at)
                .map(|(a, &k)| (a.key(), a.labels()[k].clone()))
                .collect(),
            metrics: results[i].clone(),
        })
        .collect())
}

/// A point of a line: x and the metric at every seed.
type XYs = (f64, Vec<f64>);

/// The plotted lines: the metric's mean over seeds against the first axis other than seed,
/// one line per scheduler (and per value of any further axes).
pub fn series(axes: &[Axis], rows: &[Row], metric: &str) -> (String, Vec<Series>) {
    let x_axis = axes.iter().find(|a| !matches!(a, Axis::Seed(_)));
    let x_key = x_axis.map_or("seed".to_string(), Axis::key);
    let x_labels = x_axis.map_or_else(
        || axes.first().map(Axis::labels).unwrap_or_default(),
        Axis::labels,
    );
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
        let Some(&y) = row.metrics.get(metric) else {
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
    anyhow::ensure!(!opts.axes.is_empty(), "--sweep: no axis");
    let rows = rows(&opts)?;
    if !rows.iter().any(|r| r.metrics.contains_key(opts.metric)) {
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
    let keys: Vec<String> = opts.axes.iter().map(Axis::key).collect();
    let mut header: Vec<&str> = vec!["scheduler"];
    header.extend(keys.iter().map(String::as_str));
    header.push(opts.metric);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut line = vec![r.scheduler.clone()];
            line.extend(keys.iter().map(|k| r.coordinates[k].clone()));
            line.push(
                r.metrics
                    .get(opts.metric)
                    .map_or("-".into(), |v| format!("{v:.4}")),
            );
            line
        })
        .collect();
    say!(
        "== sweep of {} over {} cells ({})",
        opts.base.name,
        rows.len(),
        keys.join(" x ")
    );
    output::say_str(&output::table(&header, &table));
    let (x_key, series) = series(&opts.axes, &rows, opts.metric);
    let title = format!("{}: {} (mean over seeds)", opts.base.name, opts.metric);
    let svg = || plot::lines::lines(&title, &x_key, opts.metric, &series);
    if let Some(p) = opts.plot {
        std::fs::write(p, svg()?).with_context(|| format!("writing {}", p.display()))?;
        say!("wrote {}", p.display());
    }
    let page = Sink::new(
        opts.report.is_some(),
        &format!("elevator sim {} --sweep", opts.base.name),
    );
    page.table(
        &format!("{} over {}", opts.metric, keys.join(" x ")),
        &header,
        &table,
    );
    page.plot(&format!("sweep-{}", opts.metric), &title, svg)?;
    page.write(opts.report)?;
    if let Some(path) = opts.json {
        output::write_json(
            path,
            &Out {
                scenario: &opts.base.name,
                metric: opts.metric,
                axes: keys,
                rows: &rows,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn cells_cover_the_cross_product_in_order() {
        let axes = vec![
            Axis::Seed(vec![1, 2]),
            Axis::Drive(vec!["a".into(), "b".into(), "c".into()]),
        ];
        let c = cells(2, &axes);
        assert_eq!(c.len(), 12);
        assert_eq!(
            c[0],
            Cell {
                sched: 0,
                at: vec![0, 0]
            }
        );
        assert_eq!(
            c[1],
            Cell {
                sched: 0,
                at: vec![0, 1]
            }
        );
        assert_eq!(
            c[3],
            Cell {
                sched: 0,
                at: vec![1, 0]
            }
        );
        assert_eq!(
            c[6],
            Cell {
                sched: 1,
                at: vec![0, 0]
            }
        );
        let mut sorted = c.clone();
        sorted.sort();
        assert_eq!(sorted, c, "cells come sorted by their coordinates");
    }

    #[test]
    fn series_average_over_seeds_one_line_per_scheduler() {
        let row = |s: &str, v: &str, seed: &str, y: f64| Row {
            scheduler: s.into(),
            coordinates: [
                ("as.x".to_string(), v.to_string()),
                ("seed".to_string(), seed.to_string()),
            ]
            .into_iter()
            .collect(),
            metrics: [("end_s".to_string(), y)].into_iter().collect(),
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
