//! `elevator reproduce flash`: a QD1 reader beside a QD128 random writer on the simulated
//! 980 PRO, against the ICPE'24 pattern and its fig-11c figures.

use serde_json::Value;

mod common {
    pub mod elevator;
}
use common::elevator::elevator;

fn reproduce(seeds: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("flash.json");
    let (ok, _, err) = elevator(&[
        "reproduce",
        "flash",
        "--seeds",
        seeds,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn published<'a>(v: &'a Value, config: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"] == config && r["source"] == "published")
        .unwrap_or_else(|| panic!("no published row for {config}"))
}

fn ours<'a>(v: &'a Value, config: &str, state: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"] == config && r["source"] == "elevator" && r["state"] == state)
        .unwrap_or_else(|| panic!("no {state} row for {config}"))
}

fn mean(r: &Value, field: &str) -> f64 {
    r[field]["mean"].as_f64().unwrap()
}

#[test]
fn the_reader_waits_behind_the_writes_in_the_drive_and_only_a_scheduler_that_holds_them_back_cuts_its_p99(
) {
    let v = reproduce("2");
    assert_eq!(v["seeds"], serde_json::json!([1, 2]));
    // Every seed is kept, and a rerun is identical.
    let none = ours(&v, "none", "sequential");
    assert_eq!(
        none["reader_p99_us"]["per_seed"].as_array().unwrap().len(),
        2
    );
    assert_eq!(v, reproduce("2"));

    // The reader alone beside the published figure (fig-2, QD1 under none: 66 us mean).
    let alone = ours(&v, "reader alone", "sequential");
    assert_eq!(mean(published(&v, "reader alone"), "reader_mean_us"), 66.0);
    let m = mean(alone, "reader_mean_us");
    assert!((m / 66.0 - 1.0).abs() < 0.15, "{m} us");

    // Filled in order, the writer runs near the rate the study measured with 128 writes
    // outstanding per drive (fig-11c, none: 131 K IOPS per drive).
    let theirs = mean(published(&v, "none"), "writer_iops");
    let w = mean(none, "writer_iops");
    assert!((w / theirs - 1.0).abs() < 0.25, "{w} vs {theirs} IOPS");
    // Interference: each read waits for the writes ahead of it in the drive's front end.
    assert!(mean(none, "reader_p99_us") > 5.0 * mean(alone, "reader_p99_us"));
    assert!(mean(none, "reader_mean_us") > mean(none, "writer_mean_us"));

    // The published pattern, where ours follows it: none and mq-deadline do not cut the
    // reader's p99; kyber does once its read target is below what the reader gets beside the
    // writer (250 us): it holds the writes back in the scheduler.
    for config in ["none", "mq-deadline"] {
        assert_eq!(published(&v, config)["cuts_p99"], false);
        assert_eq!(
            ours(&v, config, "sequential")["cuts_p99"],
            false,
            "{config}"
        );
    }
    let tight = ours(&v, "kyber read_lat_nsec=250000", "sequential");
    assert_eq!(tight["cuts_p99"], true);
    assert!(mean(tight, "reader_mean_us") < 0.25 * mean(none, "reader_mean_us"));
    // Where it does not (docs/ssd-model.md says why): kyber at its default 2 ms target finds
    // no congestion, as the reader beside the writer stays under it (the study's reader under
    // none had a p90 of 2.3 ms and a p99 of 14 ms; ours has no such tail), and bfq protects
    // the reader only while it is weight-raised. Reported against the published pattern.
    for config in ["kyber", "bfq"] {
        assert_eq!(published(&v, config)["cuts_p99"], true);
        assert!(ours(&v, config, "sequential")["cuts_p99"].is_boolean());
    }
    assert!(mean(none, "reader_p99_us") < 2000.0);

    // In the steady state the model's GC lets the writer run at about a tenth of the study's
    // rate; its writes then take more than kyber's 10 ms write target, so kyber only ever
    // deepens the write domain and cuts nothing, whatever the read target.
    let steady = ours(&v, "none", "steady");
    assert!(mean(steady, "writer_iops") < 0.2 * theirs);
    assert!(mean(steady, "writer_mean_us") > 10_000.0);
    for config in ["kyber", "kyber read_lat_nsec=250000"] {
        assert_eq!(ours(&v, config, "steady")["cuts_p99"], false, "{config}");
    }
}
