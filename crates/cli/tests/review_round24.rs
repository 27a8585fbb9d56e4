//! Round 24: the rest of round 22's user review (docs/reliability.md). A share of no real
//! choice is shown as none, not as 100%; `none` is shown as `none`, the name asked for, not
//! as our registry's `noop`; the drive a run used is said, and whether it was the default;
//! `replay` gives fio's latency percentiles as `sim` does; io.max's cap reads in the unit of
//! the table's rates and in the one it is set in, as README quotes it. Every run is bounded
//! in time.

use std::path::{Path, PathBuf};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod file;
}
use common::bounded::{clean_error, elevator_within, Out, MINUTE};
use common::file::write;

/// A reader and a writer on the simulated SSD, a few hundred I/Os.
const JOB: &str = "[reader]\nrw=randread\nbs=4k\nsize=1m\n\n[writer]\nrw=write\nbs=64k\nsize=1m\n";

/// The repository's top directory.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `out`, which must have succeeded.
fn ok(out: Out) -> Out {
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// A recording of `none` beside one process has no real choice (never more than one request
/// queued): its total read "0/0 (100.0%)", a share of nothing. Now "0/0 (-)", and the legend
/// under the tables says what `-` means; its `ours` column said `noop`, now `none`.
#[test]
fn kernel_diff_gives_no_share_of_no_real_choice() {
    let rec = repo().join(
        "crates/workload/tests/data/kernel/bfqnoidle-lowlat0-strict-readers-writer-nr16/none",
    );
    let out = ok(elevator_within(
        &["kernel-diff", rec.to_str().unwrap()],
        MINUTE,
    ));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("| none | ") && l.contains(" | 0/0 (-) |")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("0/0 (100.0%)"), "{}", out.stdout);
    assert!(
        lines.iter().any(|l| l.contains("| none | none | 3200 |")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("`-` where there were none"),
        "{}",
        out.stdout
    );
}

/// `--sched none` was shown as `noop` (our registry's name for the FIFO) in every table and
/// JSON; Linux calls it `none` under blk-mq. Each run is now named as asked: `none` as
/// `none`, and `noop` (the 2.4-era name) still as `noop`.
#[test]
fn a_scheduler_is_shown_by_the_name_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let trace = repo().join("docs/traces/two-readers.trace");
    let trace = trace.to_str().unwrap();
    // sim of a fio job: fio's text, the comparison table, the JSON.
    let out = ok(elevator_within(
        &["sim", &job, "--sched", "none,deadline"],
        MINUTE,
    ));
    assert!(out.stdout.contains("scheduler: none\n"), "{}", out.stdout);
    assert!(
        out.stdout.lines().any(|l| l.starts_with("none ")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("noop"), "{}", out.stdout);
    // The same policy asked for by its 2.4-era name keeps that name; both names at once are
    // one scheduler twice.
    let out = ok(elevator_within(&["sim", &job, "--sched", "noop"], MINUTE));
    assert!(out.stdout.contains("scheduler: noop\n"), "{}", out.stdout);
    let out = elevator_within(&["sim", &job, "--sched", "none,noop"], MINUTE);
    clean_error(&out, &["\"none\" and \"noop\" name one scheduler"]);
    let out = ok(elevator_within(
        &["sim", &job, "--sched", "none", "--json", "-"],
        MINUTE,
    ));
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["elevator"]["scheduler"], "none", "{}", out.stdout);
    // replay: the run's heading, the table side by side, the JSON.
    let out = ok(elevator_within(
        &["replay", trace, "--sched", "none,deadline"],
        MINUTE,
    ));
    assert!(
        out.stdout.contains("== none on cheetah9lp:"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.lines().any(|l| l.starts_with("none ")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("noop"), "{}", out.stdout);
    let out = ok(elevator_within(
        &["replay", trace, "--sched", "none", "--json", "-"],
        MINUTE,
    ));
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["runs"][0]["scheduler"], "none", "{}", out.stdout);
    // sim of a scenario: the run's heading and the JSON.
    let out = ok(elevator_within(
        &[
            "sim",
            "anticipatory-no-write",
            "--sched",
            "none",
            "--json",
            "-",
        ],
        MINUTE,
    ));
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["runs"][0]["scheduler"], "none", "{}", out.stdout);
    assert!(out.stderr.contains("== none on "), "{}", out.stderr);
}

/// `replay` simulates on `cheetah9lp` by default and `sim` of a fio job on the 980 PRO
/// model: a workload moved from one to the other changed drive unsaid (a run with one
/// scheduler named no drive at all). Each now says the drive, and that it is the default.
#[test]
fn the_drive_used_is_said_and_whether_it_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let trace = repo().join("docs/traces/two-readers.trace");
    let trace = trace.to_str().unwrap();
    let out = ok(elevator_within(&["replay", trace], MINUTE));
    assert!(
        out.stdout
            .starts_with("drive: cheetah9lp, replay's default (a 1999 disk; `sim` of a fio job defaults to samsung-980pro-1tb)"),
        "{}",
        out.stdout
    );
    let out = ok(elevator_within(&["sim", &job], MINUTE));
    assert!(
        out.stdout.starts_with(
            "drive: samsung-980pro-1tb, the default for a fio job (replay's is cheetah9lp)"
        ),
        "{}",
        out.stdout
    );
    // Named: said, without "default".
    let out = ok(elevator_within(
        &["sim", &job, "--drive", "laptop-4200"],
        MINUTE,
    ));
    assert!(
        out.stdout.starts_with("drive: laptop-4200\n"),
        "{}",
        out.stdout
    );
    let out = ok(elevator_within(
        &["replay", trace, "--drive", "samsung-980pro-1tb"],
        MINUTE,
    ));
    assert!(!out.stdout.contains("default"), "{}", out.stdout);
    assert!(
        out.stdout.contains("== deadline on samsung-980pro-1tb:"),
        "{}",
        out.stdout
    );
}

/// The cells of the header `name` in a table of `text` whose header starts with `first`.
fn header<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("no table headed {first:?} in {text}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// `replay`'s tables gave mean, p50, p95 and p99 (reads) and mean, p99 (writes) where `sim`
/// gives fio's p50, p90, p99 and p99.9 for both: now `replay` gives `sim`'s columns, and the
/// total row's figures are the JSON's.
#[test]
fn replay_gives_fios_percentiles_as_sim_does() {
    let trace = repo().join("docs/traces/two-readers.trace");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = ok(elevator_within(
        &[
            "replay",
            trace.to_str().unwrap(),
            "--sched",
            "deadline,anticipatory",
            "--json",
            json.to_str().unwrap(),
        ],
        MINUTE,
    ));
    let fio = [
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
    ];
    for first in ["process ", "scheduler "] {
        let cells = header(&out.stdout, first);
        let latencies: Vec<&str> = cells
            .iter()
            .copied()
            .filter(|c| c.ends_with(" ms"))
            .collect();
        assert_eq!(latencies, fio, "{}", out.stdout);
    }
    assert!(!out.stdout.contains("p95"), "{}", out.stdout);
    // The side-by-side row of deadline: its read p90 and p99.9 are the JSON's.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let read = &v["runs"][0]["total"]["read"];
    let row: Vec<&str> = out
        .stdout
        .lines()
        .find(|l| l.starts_with("deadline "))
        .unwrap()
        .split_whitespace()
        .collect();
    let cells = header(&out.stdout, "scheduler ");
    let at = |name: &str| row[cells.iter().position(|c| *c == name).unwrap()];
    for (column, key) in [("rd p90 ms", "lat_p90_ms"), ("rd p99.9 ms", "lat_p999_ms")] {
        assert_eq!(
            at(column),
            format!("{:.2}", read[key].as_f64().unwrap()),
            "{column}: {}",
            out.stdout
        );
    }
}

/// io.max's cap read "wbps 2.1 MB/s" in `reproduce io-control-today`'s table and "wbps 2 MiB/s"
/// in README's for the same 2,097,152 B/s. The table now gives both, as fio does
/// ("BW=2048KiB/s (2097kB/s)"): MB/s, the unit of its rates, then the MiB/s the cap is set in;
/// README quotes the cells as the tool prints them.
#[test]
fn io_max_reads_alike_in_the_tool_and_readme() {
    let out = ok(elevator_within(
        &[
            "reproduce",
            "io-control-today",
            "--drive",
            "ibm18es",
            "--part",
            "protection",
            "--seeds",
            "2",
        ],
        MINUTE,
    ));
    assert!(
        out.stdout.contains("wbps 2.10 MB/s (2 MiB/s)"),
        "{}",
        out.stdout
    );
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for cell in ["wbps 2.10 MB/s (2 MiB/s)", "wbps 104.86 MB/s (100 MiB/s)"] {
        assert!(readme.contains(cell), "README lacks {cell:?}");
    }
    assert!(
        !readme.contains("(wbps 2 MiB/s)"),
        "README keeps the old cell"
    );
}
