//! `elevator reproduce anticipatory`: Morton's ordering and ratios, and byte-identical reruns.

use std::process::Command;

/// Run `elevator ARGS --json JSON` and read the JSON it wrote.
fn elevator_json(args: &[&str], json: &std::path::Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .expect("run elevator");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

fn reproduce(json: &std::path::Path) -> serde_json::Value {
    elevator_json(&["reproduce", "anticipatory"], json)
}

fn ours(v: &serde_json::Value, system: &str) -> f64 {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["system"] == system && r["source"] == "elevator")
        .unwrap_or_else(|| panic!("no elevator row for {system}"))["seconds"]
        .as_f64()
        .unwrap()
}

#[test]
fn morton_ordering_and_ratios_hold() {
    let dir = tempfile::tempdir().unwrap();
    let v = reproduce(&dir.path().join("a.json"));
    assert_eq!(v["experiment"], "anticipatory");
    let (linus, deadline, anticipatory, no_write) = (
        ours(&v, "linus"),
        ours(&v, "deadline"),
        ours(&v, "anticipatory"),
        ours(&v, "no-write"),
    );
    assert!(linus >= deadline, "linus {linus} < deadline {deadline}");
    assert!(
        deadline > anticipatory,
        "deadline {deadline} <= AS {anticipatory}"
    );
    assert!(
        anticipatory > no_write,
        "AS {anticipatory} <= no-write {no_write}"
    );
    assert!(
        deadline / no_write >= 4.0,
        "deadline / no-write = {}",
        deadline / no_write
    );
    assert!(
        anticipatory / no_write <= 2.0,
        "anticipatory / no-write = {}",
        anticipatory / no_write
    );
    // The calibration target: the compile alone takes about Morton's 48 s.
    assert!((40.0..=56.0).contains(&no_write), "no-write {no_write}");
    for r in v["rows"].as_array().unwrap() {
        if r["source"] == "elevator" && r["system"] != "no-write" {
            assert!(r["writer_mb_s"].as_f64().unwrap() > 0.5, "{r}");
        }
    }
}

#[test]
fn same_scenario_and_seed_give_identical_json() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    reproduce(&a);
    reproduce(&b);
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

/// Seconds `elevator sim anticipatory --sched SCHED` simulates, with extra arguments.
fn sim_seconds(sched: &str, extra: &[&str]) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["sim", "anticipatory", "--sched", sched];
    args.extend_from_slice(extra);
    let v = elevator_json(&args, &dir.path().join("s.json"));
    v["runs"][0]["end_s"].as_f64().unwrap()
}

#[test]
fn a_wake_up_latency_costs_deadline_more_than_anticipatory() {
    // With the kernel's order (dispatch before the woken compile's next read) deadline sends
    // writes into every gap between dependent reads; AS waits for the read.
    let (d0, d20) = (
        sim_seconds("deadline", &[]),
        sim_seconds("deadline", &["--wakeup-us", "20"]),
    );
    let (a0, a20) = (
        sim_seconds("anticipatory", &[]),
        sim_seconds("anticipatory", &["--wakeup-us", "20"]),
    );
    assert!(d20 > 1.15 * d0, "deadline {d0} -> {d20}");
    assert!(a20 < 1.10 * a0, "anticipatory {a0} -> {a20}");
}
