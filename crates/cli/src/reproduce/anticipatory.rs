//! Morton's 2.5.59-mm5 experiment (shared/seeds/000_*): time to compile a source tree on a
//! 2003 laptop drive while a continuous streaming write runs, under the 2.4 elevator,
//! deadline and anticipatory, and with no writer at all.
//!
//! Published (seconds): 2.4.20 538, 2.5.59 deadline 400, 2.5.59-mm5 AS 70, no write 48.
//! The scenario files are scenarios/anticipatory.toml (2.5.59: deadline-2.5, AS),
//! scenarios/anticipatory-2.4.toml (2.4.20's request limits: linus) and
//! scenarios/anticipatory-no-write.toml; the compile job's parameters are the same in all
//! three, for every scheduler.

use anyhow::Context;
use elevator_core::{Nanos, Settings};
use elevator_sim::scenario::Scenario;
use elevator_sim::RunReport;
use rayon::prelude::*;
use serde::Serialize;

use crate::output::{self, say};
use crate::progress;
use crate::report::{self, Sink};
use crate::scenarios;
use crate::stats::Estimate;

/// Morton's figures: (system, kernel, seconds).
const PUBLISHED: [(&str, &str, f64); 4] = [
    ("linus", "linux-2.4.20 (elevator_linus)", 538.0),
    ("deadline", "linux-2.5.59 (deadline)", 400.0),
    ("anticipatory", "linux-2.5.59-mm5 (anticipatory)", 70.0),
    ("no-write", "no streaming write", 48.0),
];

/// The scheduler of Morton's deadline row: the deadline of 2.5.59, which he measured (a seek
/// ends its batches and its sweep wraps to the lowest sector), not 2.6.32's.
const DEADLINE_SCHED: &str = "deadline-2.5";

/// The scheduler the no-write baseline runs under (Morton's figure was taken on the -mm5
/// kernel, i.e. under AS).
const NO_WRITE_SCHED: &str = "anticipatory";

/// One row of the JSON output.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    /// linus, deadline, anticipatory or no-write.
    pub system: String,
    /// published or elevator.
    pub source: &'static str,
    /// Compile time, seconds (ours: over the seeds).
    pub seconds: Estimate,
    /// Compile time over the no-write compile time (ours: per seed, then over the seeds).
    pub over_no_write: Estimate,
    /// The streaming writer's throughput during the compile, MB/s (ours only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_mb_s: Option<Estimate>,
}

#[derive(Serialize)]
struct Out {
    experiment: &'static str,
    /// The seeds every measured figure ran with, in the order of its `per_seed` values.
    seeds: Vec<u64>,
    rows: Vec<Row>,
}

/// One case's figures at one seed: compile seconds, writer MB/s.
type Figures = (f64, Option<f64>);

/// One case at one seed: its [`Figures`], and the run itself with its requests
/// recorded when `record` (the report's pictures are drawn from it; recording changes nothing
/// in the run).
fn measure_one(
    scenario: &elevator_sim::scenario::Scenario,
    sched: &str,
    seed: u64,
    record: bool,
) -> anyhow::Result<(Figures, Option<RunReport>)> {
    let policy = scenario.scheduler(sched, &Settings::new())?;
    let mut sim = scenario.simulation(policy, Some(seed))?;
    if record {
        sim.record_requests();
    }
    let report = sim.run(scenario.limit);
    let compile = report
        .job("compile")
        .context("the scenario has no job named compile")?;
    let finished = compile
        .metrics
        .finished
        .context("the compile did not finish within the scenario's limit")?;
    let seconds = (finished - compile.metrics.started).as_secs_f64();
    let writer_mb_s = report
        .job("writer")
        .map(|w| w.metrics.write.bytes as f64 / 1e6 / seconds.max(1e-9));
    Ok(((seconds, writer_mb_s), record.then_some(report)))
}

/// The four cases in the published order: (system, scenario, scheduler).
fn cases(wakeup: Nanos) -> anyhow::Result<Vec<(&'static str, Scenario, &'static str)>> {
    let load = |name: &str| -> anyhow::Result<Scenario> {
        let mut s = scenarios::builtin(name).expect("built in")?;
        s.wakeup = wakeup;
        Ok(s)
    };
    Ok(vec![
        ("linus", load("anticipatory-2.4")?, "linus"),
        ("deadline", load("anticipatory")?, DEADLINE_SCHED),
        ("anticipatory", load("anticipatory")?, "anticipatory"),
        ("no-write", load("anticipatory-no-write")?, NO_WRITE_SCHED),
    ])
}

/// What [`measure`] returns: our rows in the published order, and each case's run at the
/// recorded seed (in the same order; empty when none was asked for).
type Measured = (Vec<Row>, Vec<(&'static str, RunReport)>);

/// Run the four cases at every seed (in parallel) and return our rows, in the published
/// order, with each case's run at `record_seed` (its requests recorded), if given: the
/// report's pictures come from those runs, which the figures need anyway (a second run of the
/// same case and seed, only to record it, doubled the runs at that seed).
pub fn measure(wakeup: Nanos, seeds: &[u64], record_seed: Option<u64>) -> anyhow::Result<Measured> {
    let cases = cases(wakeup)?;
    let runs: Vec<(usize, u64)> = (0..cases.len())
        .flat_map(|c| seeds.iter().map(move |&s| (c, s)))
        .collect();
    let bar = progress::bar(runs.len(), "anticipatory");
    let measured: Vec<(Figures, Option<RunReport>)> = runs
        .par_iter()
        .map(|&(c, seed)| {
            let (_, scenario, sched) = &cases[c];
            let r = measure_one(scenario, sched, seed, record_seed == Some(seed));
            bar.inc(1);
            r
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    let mut recorded = Vec::new();
    let mut results = Vec::with_capacity(measured.len());
    for (&(c, _), (figures, run)) in runs.iter().zip(measured) {
        results.push(figures);
        if let Some(run) = run {
            recorded.push((cases[c].0, run));
        }
    }
    let per_case: Vec<&[Figures]> = results.chunks(seeds.len()).collect();
    let no_write = Estimate::of(per_case[3].iter().map(|r| r.0).collect());
    let rows = cases
        .iter()
        .zip(per_case)
        .map(|(&(system, _, _), rs)| {
            let seconds = Estimate::of(rs.iter().map(|r| r.0).collect());
            let writer: Option<Vec<f64>> = rs.iter().map(|r| r.1).collect();
            Row {
                system: system.to_string(),
                source: "elevator",
                over_no_write: seconds.zip(&no_write, |a, b| a / b),
                seconds,
                writer_mb_s: writer.map(Estimate::of),
            }
        })
        .collect();
    Ok((rows, recorded))
}

/// The report's pictures, from the recorded run of each case at `seed` (`runs`, in the
/// published order): the seek map, queue depth and throughput under deadline and
/// anticipatory, and the compile's read latency CDF under every case.
fn plots(report: &Sink, runs: &[(&str, RunReport)], seed: u64) -> anyhow::Result<()> {
    if !report.is_on() {
        return Ok(());
    }
    for (system, run) in runs {
        if matches!(*system, "deadline" | "anticipatory") {
            let title = format!("compile + streaming write under {system} (seed {seed})");
            report::sim::run_plots(report, &format!("anticipatory-{system}"), &title, run)?;
        }
    }
    let labelled: Vec<(&str, &RunReport)> = runs.iter().map(|(s, r)| (*s, r)).collect();
    report::sim::latency_cdf(
        report,
        "anticipatory-compile-read-cdf",
        &format!("the compile's reads under each policy (seed {seed})"),
        &labelled,
        &["compile"],
        true,
    )
}

/// Print the table; return the JSON.
pub fn run(opts: &super::Opts) -> anyhow::Result<serde_json::Value> {
    say!("Anticipatory scheduling (Morton, 2.5.59-mm5, Jan 2003): compile while a");
    say!("streaming write runs, on a 2003-class 4200 rpm laptop drive (simulated).");
    say!("{}\n", super::seeds_note(&opts.seeds));
    super::note_wakeup(opts.wakeup);
    let seed = opts.seeds[0];
    let (ours, recorded) = measure(
        opts.wakeup,
        &opts.seeds,
        opts.report.is_on().then_some(seed),
    )?;
    let base_pub = PUBLISHED[3].2;
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    for (system, kernel, published) in PUBLISHED {
        let r = ours.iter().find(|r| r.system == system).expect("measured");
        rows.push(vec![
            system.to_string(),
            kernel.to_string(),
            format!("{published:.0}"),
            r.seconds.show(1),
            format!("{:.2}", published / base_pub),
            r.over_no_write.show(2),
            r.writer_mb_s
                .as_ref()
                .map(|w| w.show(2))
                .unwrap_or_else(|| "-".into()),
        ]);
        json_rows.push(Row {
            system: system.to_string(),
            source: "published",
            seconds: Estimate::published(published),
            over_no_write: Estimate::published(published / base_pub),
            writer_mb_s: None,
        });
        json_rows.push(r.clone());
    }
    let header = [
        "system",
        "kernel",
        "published s",
        "elevator s",
        "pub / no-write",
        "ours / no-write",
        "writer MB/s",
    ];
    output::say_str(&output::figures_table(&header, &rows));
    let report = &opts.report;
    report.heading("Anticipatory scheduling (Morton, 2.5.59-mm5, Jan 2003)");
    report.para(
        "A compile (dependent reads) while a streaming writer keeps the queue full, on a \
         simulated 2003 4200 rpm laptop drive. Published seconds beside ours.",
    );
    report.table(
        &format!("Compile time. {}", super::seeds_note(&opts.seeds)),
        &header,
        &rows,
    );
    plots(report, &recorded, seed)?;
    Ok(serde_json::to_value(Out {
        experiment: "anticipatory",
        seeds: opts.seeds.clone(),
        rows: json_rows,
    })?)
}
