//! Hostile cases of issue 32, twelfth round: round 11's leftovers (a recording's meta.json
//! numbers past what the kernel has) and the newest surfaces (`kernel-diff` over corpus
//! layouts, `calibrate --measured` figures). Every run is bounded in time, so a hang fails
//! instead of waiting.

use std::path::Path;

mod common {
    pub mod bounded;
    pub mod child;
    pub mod recording;
}
use common::bounded::{clean_error, elevator_within, s, MINUTE};
use common::recording::recording;

// ----- kernel recordings: numbers at the input's edge -----

/// Round 11's leftover: a meta.json `device.hw_queue_depth` of 10^9 (under `u32`, past
/// blk-mq's `BLK_MQ_MAX_DEPTH` of 10,240) was replayed as the device's queue depth. Every
/// number of meta.json is checked where it is read (`Recording::open`): the error names the
/// file, the field and the value. So are groups.txt's: a group path of 500,000 levels (1 MB,
/// under the file's 1 MiB cap) aborted on memory (exit 134: the group tree holds every
/// ancestor's path, 2.5e11 bytes); paths are at most `PATH_MAX` bytes and 64 levels.
#[test]
fn a_recordings_hw_queue_depth_of_a_billion_is_refused_naming_file_field_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path(), |m| {
        m["device"]["hw_queue_depth"] = 1_000_000_000u64.into();
    });
    let o = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    clean_error(
        &o,
        &["meta.json", "device.hw_queue_depth", "1000000000", "10240"],
    );
    let other = tempfile::tempdir().unwrap();
    let rec = recording(other.path(), |_| {});
    std::fs::write(
        rec.join("groups.txt"),
        format!("group {} 100\n", "/a".repeat(500_000)),
    )
    .unwrap();
    let o = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    clean_error(&o, &["groups.txt:1", "group", "PATH_MAX"]);
}

/// `kernel-diff R R` (or a directory and a recording inside it, or a link to one) replayed
/// the recording twice and counted it twice in the totals without a word (700 decisions of a
/// 350-decision recording). Each recording now counts once, the repeat told on stderr.
#[test]
fn kernel_diff_counts_a_recording_given_twice_once_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path(), |_| {});
    let mix = rec.parent().unwrap();
    let once = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(once.code, 0, "{}", once.stderr);
    let twice = elevator_within(&["kernel-diff", s(&rec), s(mix), s(dir.path())], MINUTE);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("a recording already given"),
        "{}",
        twice.stderr
    );
    // The totals (the table after the blank line) are the single recording's.
    let totals = |out: &str| out.split("\n\n").nth(1).unwrap_or("").to_string();
    assert_eq!(totals(&twice.stdout), totals(&once.stdout));
}

/// A corpus directory whose mix holds a scheduler's directory without meta.json (what a
/// `kernel-record` killed mid-run leaves) was left out of the totals without a word; it is
/// now told as skipped, naming it.
#[test]
fn kernel_diff_tells_a_directory_without_meta_json_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path(), |_| {});
    let cut = rec.parent().unwrap().join("bfq");
    std::fs::create_dir(&cut).unwrap();
    std::fs::copy(rec.join("job.fio"), cut.join("job.fio")).unwrap();
    let o = elevator_within(&["kernel-diff", s(dir.path())], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains("without meta.json skipped") && o.stderr.contains("batches/bfq"),
        "{}",
        o.stderr
    );
    assert!(o.stdout.contains("| mq-deadline |"), "{}", o.stdout);
}

// ----- calibrate --measured -----

/// A `calibrate --json` file of the six io.cost points with `edit` applied to their
/// figures, written in `dir`.
fn iocost_points(dir: &Path, edit: impl Fn(&str, &mut serde_json::Value)) -> String {
    let points: Vec<serde_json::Value> = [
        ("read 1m qd32", 1 << 20),
        ("read 4k qd64", 4096),
        ("randread 4k qd64", 4096),
        ("write 1m qd32", 1 << 20),
        ("write 4k qd64", 4096),
        ("randwrite 4k qd64", 4096),
    ]
    .iter()
    .map(|&(label, bs)| {
        let mut m = serde_json::json!({
            "ios": 100000, "iops": 20000.0, "mb_s": 20000.0 * bs as f64 / 1e6,
            "mean_us": 1000.0, "p50_us": 900.0, "p99_us": 3000.0
        });
        edit(label, &mut m);
        serde_json::json!({"point": label, "measured": m})
    })
    .collect();
    let p = dir.join("measured.json");
    std::fs::write(
        &p,
        serde_json::json!({
            "region_bytes": 1u64 << 30, "duration_s": 120.0, "load_average": "1",
            "points": points
        })
        .to_string(),
    )
    .unwrap();
    s(&p).to_string()
}

/// `calibrate --measured --iocost` took a 1 MiB read point of 10^6 IOPS beside 200 MB/s (a
/// hand-edited file: the two figures of one measurement cannot disagree) and fitted
/// io.cost.model from one of them without a word. Refused now naming the point and the
/// field. A file of no points was refused blaming `duration_s`, and a `duration_s` of 1e300
/// was printed in 301 digits: both now say what is wrong, briefly.
#[test]
fn calibrate_refuses_a_point_whose_iops_and_bandwidth_disagree() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("never-opened.dat");
    let fit = |measured: &str| {
        elevator_within(
            &[
                "calibrate",
                "--target",
                s(&target),
                "--measured",
                measured,
                "--iocost",
                "--drive",
                "none",
            ],
            MINUTE,
        )
    };
    let good = iocost_points(dir.path(), |_, _| {});
    let text = std::fs::read_to_string(&good).unwrap();
    let o = fit(&good);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("rbps=20971520000 "), "{}", o.stdout);
    let bad = iocost_points(dir.path(), |label, m| {
        if label == "read 1m qd32" {
            m["iops"] = 1e6.into();
            m["mb_s"] = 200.0.into();
        }
    });
    let o = fit(&bad);
    clean_error(
        &o,
        &[
            "measured.json",
            "points[0]",
            "read 1m qd32",
            "mb_s",
            "disagrees",
        ],
    );
    assert!(!target.exists());
    let none = dir.path().join("none.json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut empty = v.clone();
    empty["points"] = serde_json::json!([]);
    std::fs::write(&none, empty.to_string()).unwrap();
    clean_error(&fit(s(&none)), &["none.json", "points: none"]);
    let mut long = v;
    long["duration_s"] = 1e300.into();
    std::fs::write(&none, long.to_string()).unwrap();
    let o = fit(s(&none));
    clean_error(&o, &["duration_s 1e300"]);
    assert!(o.stderr.len() < 300, "{}", o.stderr);
}

// ----- sim: the work bound -----

/// A scenario's fio job without a size (the whole 980 PRO: 2.4e8 reads of 4 KiB) under
/// `duration_s = 0.5` was refused by its size ("244281507 I/Os", blaming `job.size`, which
/// the file does not give), though the duration stops it after a few hundred thousand. The
/// duration now bounds it (`Scenario::check_work` probes the run over it).
#[test]
fn a_scenario_fio_job_of_the_whole_device_runs_for_its_duration() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("whole.toml");
    std::fs::write(
        &p,
        "drive = \"samsung-980pro-1tb\"\nduration_s = 0.5\n[[group]]\npath = \"/a\"\n\
         [[job]]\nname = \"a\"\ngroup = \"/a\"\nkind = \"fio\"\nrw = \"randread\"\nbs = 4096\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&p), "--sched", "bfq"], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("0.500 s simulated"), "{}", o.stdout);
}
