//! `elevator sim --sweep`: the cross product, the same bytes whatever the number of threads,
//! only JSON on stdout with `--json -`, and no progress text when stderr is not a terminal.

use std::process::Command;

/// Run a sweep of Morton's scenario on `threads` threads; (stdout, stderr).
fn sweep(threads: &str, extra: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "sim",
            "anticipatory",
            "--sched",
            "anticipatory,deadline",
            "--sweep",
            "anticipatory.antic_expire=0,4,8",
            "--sweep",
            "seed=1..2",
            "--metric",
            "compile.seconds",
            "--json",
            "-",
        ])
        .args(extra)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("run elevator");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_sweep_gives_the_same_bytes_on_one_thread_and_on_many() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("sweep.svg");
    let (one, err) = sweep("1", &["--plot", plot.to_str().unwrap()]);
    let (many, _) = sweep("4", &[]);
    assert_eq!(one, many, "results depend on the number of threads");

    // --json -: stdout is one JSON document; the table went to stderr, no progress did.
    let v: serde_json::Value = serde_json::from_str(&one).expect("only JSON on stdout");
    assert!(
        err.contains("compile.seconds"),
        "the table on stderr: {err}"
    );
    // The table: deadline has no antic_expire, so its cells are one run per seed, shown
    // once each with `-` for the value (it listed a row per value).
    let starting = |w: &str| {
        err.lines()
            .filter(|l| l.trim_start().starts_with(w))
            .count()
    };
    assert_eq!(starting("anticipatory "), 6, "{err}");
    assert_eq!(starting("deadline "), 2, "{err}");
    assert!(
        err.lines()
            .filter(|l| l.trim_start().starts_with("deadline "))
            .all(|l| l.split_whitespace().nth(1) == Some("-")),
        "{err}"
    );
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}') && !err.contains(" runs,"),
        "progress text on a stderr that is not a terminal: {err:?}"
    );

    // 2 schedulers x 3 values x 2 seeds, sorted by coordinates.
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    let coord = |r: &serde_json::Value, k: &str| r["coordinates"][k].as_str().unwrap().to_string();
    let keys: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["scheduler"].as_str().unwrap().to_string(),
                coord(r, "anticipatory.antic_expire"),
                coord(r, "seed"),
            )
        })
        .collect();
    assert_eq!(keys[0], ("anticipatory".into(), "0".into(), "1".into()));
    assert_eq!(keys[1], ("anticipatory".into(), "0".into(), "2".into()));
    assert_eq!(keys[11], ("deadline".into(), "8".into(), "2".into()));
    let secs = |i: usize| rows[i]["metrics"]["compile.seconds"].as_f64().unwrap();
    // Deadline has no antic_expire: the same run for every value.
    assert_eq!(secs(6), secs(8));
    assert_eq!(secs(7), secs(11));
    // A seed changes the compile; antic_expire changes AS.
    assert_ne!(secs(0), secs(1));
    assert_ne!(secs(0), secs(4));
    // AS at its default-sized window beats deadline by far (Morton's point).
    assert!(secs(4) * 2.0 < secs(10), "{} vs {}", secs(4), secs(10));

    // The plot: one line per scheduler, a point per value.
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("anticipatory.antic_expire"));
    assert_eq!(svg.matches("<circle").count(), 6, "3 values x 2 schedulers");
}

#[test]
fn a_bad_axis_or_metric_is_named() {
    for (axis, metric, want) in [
        ("anticipatory.no_such=1", "end_s", "no tunable \"no_such\""),
        ("job.nobody.size=1", "end_s", "no job \"nobody\""),
        ("seed=1", "bogus", "--metric \"bogus\""),
        ("drive=no-such-drive", "end_s", "no-such-drive"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args(["sim", "anticipatory", "--sweep", axis, "--metric", metric])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{axis}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{axis}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn shards_merge_into_the_whole_sweeps_parquet_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args([
                "sim",
                "anticipatory-no-write",
                "--sched",
                "deadline,anticipatory",
                "--sweep",
                "seed=1..3",
            ])
            .args(extra)
            .output()
            .expect("run elevator");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    run(&["--parquet", &p("whole.parquet"), "--json", &p("whole.json")]);
    for i in 0..3 {
        let shard = format!("{i}/3");
        run(&["--shard", &shard, "--parquet", &p(&format!("s{i}.parquet"))]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["merge", "-o", &p("merged.parquet")])
        .args([p("s2.parquet"), p("s0.parquet"), p("s1.parquet")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = std::fs::read(p("whole.parquet")).unwrap();
    assert_eq!(whole, std::fs::read(p("merged.parquet")).unwrap());
    assert_eq!(&whole[..4], b"PAR1");
    // The JSON rows carry the cell index the Parquet rows are sorted by.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("whole.json")).unwrap()).unwrap();
    let cells: Vec<u64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cell"].as_u64().unwrap())
        .collect();
    assert_eq!(cells, (0..6).collect::<Vec<_>>());

    // Overlapping shards and a bad --shard are refused by name.
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "merge",
            "-o",
            &p("bad.parquet"),
            &p("s0.parquet"),
            &p("s0.parquet"),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("overlap"));
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "sim",
            "anticipatory-no-write",
            "--sweep",
            "seed=1..3",
            "--shard",
            "3/3",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shard"));
}

/// `elevator sim` reports each job's latency as fio does: the mean beside fio's default
/// percentiles (p50, p90, p99, p99.9), in the table, in the JSON and among a sweep's metrics
/// (before, the table had the read mean and p99 and the write p99 only, a sweep p99 only).
#[test]
fn a_run_reports_fios_percentiles_beside_the_mean() {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["sim", "anticipatory", "--sched", "deadline", "--json", "-"])
        .output()
        .expect("run elevator");
    assert!(out.status.success());
    let table = String::from_utf8(out.stderr).unwrap();
    for column in [
        "rd mean ms",
        "rd p50 ms",
        "rd p90 ms",
        "rd p99 ms",
        "rd p99.9 ms",
        "wr mean ms",
        "wr p50 ms",
        "wr p90 ms",
        "wr p99 ms",
        "wr p99.9 ms",
    ] {
        assert!(table.contains(column), "no `{column}` in {table}");
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let read = &v["runs"][0]["jobs"][0]["read"];
    let ms = |k: &str| {
        read[k]
            .as_f64()
            .unwrap_or_else(|| panic!("no {k} in {read}"))
    };
    assert!(ms("lat_p50_ms") <= ms("lat_p90_ms"));
    assert!(ms("lat_p90_ms") <= ms("lat_p99_ms"));
    assert!(ms("lat_p99_ms") <= ms("lat_p999_ms"));

    let (swept, _) = sweep("1", &[]);
    let v: serde_json::Value = serde_json::from_str(&swept).unwrap();
    let metrics = &v["rows"][0]["metrics"];
    for dir in ["read", "write"] {
        for m in ["iops", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms"] {
            let key = format!("compile.{dir}_{m}");
            assert!(metrics[&key].is_number(), "no {key} in {metrics}");
        }
    }
}
