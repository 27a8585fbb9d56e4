//! `elevator reproduce ssd-loo`: the 980 PRO model fitted without each ICPE'24 configuration
//! in shared/data/nvme-980pro predicts it: every read figure within +-15%, every fig-7
//! (throughput app) figure within +-25% (issue 28). Without the data the test prints a
//! notice and passes. Slow (20-40 minutes of fits on a shared 2-core machine: every
//! configuration is a fit of its own), so ignored by default: `cargo test --release -p
//! elevator --test ssd_loo -- --ignored`. Before the coarse scan (2026-11-29) it failed on one
//! figure, kyber at one process (+26.4%): the cost search stopped below the drive's
//! `command_us` plateau; with it the read part gives 58 of 58 and the fig-7 part 60 of 60
//! (kyber x1 +2.9%, the largest mq-deadline x1 +24.0%), each run alone with `elevator
//! reproduce ssd-loo --part`; the whole test has not been run end to end since
//! (docs/ssd-model.md, "Leave-one-configuration-out").

use serde_json::Value;

mod common {
    pub mod elevator;
}
use common::elevator::elevator;

#[test]
#[ignore = "20-40 min of fits; run with --ignored"]
fn every_held_out_figure_is_predicted_within_its_target() {
    let found = elevator_workload::traces::shared_data_dir()
        .map(|d| d.join("nvme-980pro"))
        .filter(|d| d.join("fig-1-samsung-baseline").is_dir());
    if found.is_none() {
        eprintln!("notice: shared/data/nvme-980pro not found; leave-one-out test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("loo.json");
    let (ok, _, err) = elevator(&["reproduce", "ssd-loo", "--json", json.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // 36 + 2 + 20 read figures, 60 fig-7 figures.
    assert_eq!(rows.len(), 118);
    let missed: Vec<String> = rows
        .iter()
        .filter(|r| r["within"] != true)
        .map(|r| {
            format!(
                "{} {:+.1}%",
                r["label"],
                r["error"].as_f64().unwrap() * 100.0
            )
        })
        .collect();
    assert!(
        missed.is_empty(),
        "held-out figures outside their target: {missed:?}"
    );
    // Every configuration has its own fit, and the held-out figure is not in it.
    let folds = v["read_folds"].as_array().unwrap();
    assert_eq!(folds.len(), 1 + 4 + 1 + 8);
}
