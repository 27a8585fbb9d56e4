//! Morton's 2.5.59-mm5 experiment (shared/seeds/000_*): time to compile a source tree on a
//! 2003 laptop drive while a continuous streaming write runs, under the 2.4 elevator,
//! deadline and anticipatory, and with no writer at all.
//!
//! Published (seconds): 2.4.20 538, 2.5.59 deadline 400, 2.5.59-mm5 AS 70, no write 48.
//! The scenario files are scenarios/anticipatory.toml (2.5.59: deadline, AS),
//! scenarios/anticipatory-2.4.toml (2.4.20's request limits: linus) and
//! scenarios/anticipatory-no-write.toml; the compile job's parameters are the same in all
//! three, for every scheduler.

use std::path::Path;

use anyhow::Context;
use elevator_core::{Nanos, Settings};
use serde::Serialize;

use crate::output;
use crate::scenarios;

/// Morton's figures: (system, kernel, seconds).
const PUBLISHED: [(&str, &str, f64); 4] = [
    ("linus", "linux-2.4.20 (elevator_linus)", 538.0),
    ("deadline", "linux-2.5.59 (deadline)", 400.0),
    ("anticipatory", "linux-2.5.59-mm5 (anticipatory)", 70.0),
    ("no-write", "no streaming write", 48.0),
];

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
    /// Compile time, seconds.
    pub seconds: f64,
    /// The streaming writer's throughput during the compile, MB/s (ours only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_mb_s: Option<f64>,
}

#[derive(Serialize)]
struct Out {
    experiment: &'static str,
    rows: Vec<Row>,
}

/// Run the four cases and return our rows (system, seconds, writer MB/s).
pub fn measure(wakeup: Nanos) -> anyhow::Result<Vec<Row>> {
    let load = |name: &str| -> anyhow::Result<elevator_sim::scenario::Scenario> {
        let mut s = scenarios::builtin(name).expect("built in")?;
        s.wakeup = wakeup;
        Ok(s)
    };
    let with = load("anticipatory")?;
    let without = load("anticipatory-no-write")?;
    let linux_2_4 = load("anticipatory-2.4")?;
    let cases: Vec<(&str, &elevator_sim::scenario::Scenario, &str)> = vec![
        ("linus", &linux_2_4, "linus"),
        ("deadline", &with, "deadline"),
        ("anticipatory", &with, "anticipatory"),
        ("no-write", &without, NO_WRITE_SCHED),
    ];
    let results: Vec<anyhow::Result<Row>> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|&(system, scenario, sched)| {
                s.spawn(move || -> anyhow::Result<Row> {
                    let policy = scenario.scheduler(sched, &Settings::new())?;
                    let report = scenario.simulation(policy, None).run(scenario.limit);
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
                    Ok(Row {
                        system: system.to_string(),
                        source: "elevator",
                        seconds,
                        writer_mb_s,
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("simulation thread panicked"))
            .collect()
    });
    results.into_iter().collect()
}

/// Print the table (and write JSON if asked).
pub fn run(json: Option<&Path>, wakeup: Nanos) -> anyhow::Result<()> {
    println!("Anticipatory scheduling (Morton, 2.5.59-mm5, Jan 2003): compile while a");
    println!("streaming write runs, on a 2003-class 4200 rpm laptop drive (simulated).\n");
    super::note_wakeup(wakeup);
    let ours = measure(wakeup)?;
    let base_pub = PUBLISHED[3].2;
    let base_ours = ours
        .iter()
        .find(|r| r.system == "no-write")
        .map(|r| r.seconds)
        .unwrap_or(f64::NAN);
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    for (system, kernel, published) in PUBLISHED {
        let r = ours.iter().find(|r| r.system == system).expect("measured");
        rows.push(vec![
            system.to_string(),
            kernel.to_string(),
            format!("{published:.0}"),
            format!("{:.1}", r.seconds),
            format!("{:.2}", published / base_pub),
            format!("{:.2}", r.seconds / base_ours),
            r.writer_mb_s
                .map(|w| format!("{w:.2}"))
                .unwrap_or_else(|| "-".into()),
        ]);
        json_rows.push(Row {
            system: system.to_string(),
            source: "published",
            seconds: published,
            writer_mb_s: None,
        });
        json_rows.push(r.clone());
    }
    print!(
        "{}",
        output::table(
            &[
                "system",
                "kernel",
                "published s",
                "elevator s",
                "pub / no-write",
                "ours / no-write",
                "writer MB/s"
            ],
            &rows
        )
    );
    if let Some(p) = json {
        output::write_json(
            p,
            &Out {
                experiment: "anticipatory",
                rows: json_rows,
            },
        )?;
        println!("\nwrote {}", p.display());
    }
    Ok(())
}
