//! Round 22: a user's review (docs/reliability.md). A storage engineer new to elevator used
//! every subcommand as fio, blkparse and DiskSim users would; what follows is what they
//! tripped on and is now told plainly: a misspelt name answered with the name meant, the
//! fio-job comparison table's latency columns with their unit, `validate`'s usage naming
//! `--all`, `kernel-diff` away from the repository, a missing trace, and help texts that
//! named no bound or the wrong arity. Every run is bounded in time.

use std::process::Command;

mod common {
    pub mod bounded;
    pub mod child;
    pub mod file;
}
use common::bounded::{clean_error, elevator_set_up, elevator_within, MINUTE};
use common::file::write;

/// A reader and a writer on the simulated SSD, a few hundred I/Os.
const JOB: &str = "[reader]\nrw=randread\nbs=4k\nsize=1m\n\n[writer]\nrw=write\nbs=64k\nsize=1m\n";

/// A slip in a scheduler's, a drive's, a host's, a scenario's or a fio option's name was
/// answered with the list of names (or, for the option, with "see `elevator run --help`",
/// whose list ended in "..."); now with the name most likely meant.
#[test]
fn a_misspelt_name_is_answered_with_the_name_meant() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let typo = write(
        dir.path(),
        "t.fio",
        "[j]\nrw=randread\nbs=4k\nsize=1m\niodeph=4\n",
    );
    for (args, needles) in [
        (
            vec!["sim", &job, "--sched", "noop,bqf"],
            vec!["--sched \"bqf\": no such scheduler (did you mean `bfq`?)"],
        ),
        (
            vec!["sim", &job, "--drive", "laptop4200"],
            vec!["laptop4200", "(did you mean `laptop-4200`?)"],
        ),
        (
            vec!["sim", &job, "--host", "icpe24-10cor"],
            vec!["(did you mean `icpe24-10core`?)"],
        ),
        (
            vec!["sim", "anticipatry"],
            vec!["\"anticipatry\"", "(did you mean `anticipatory`?)"],
        ),
        (
            vec!["sim", &typo],
            vec!["t.fio:5: field `iodeph`", "(did you mean `iodepth`?)"],
        ),
        (
            vec!["replay", &job, "--sched", "kybre"],
            vec!["(did you mean `kyber`?)"],
        ),
    ] {
        let out = elevator_within(&args, MINUTE);
        clean_error(&out, &needles);
    }
    // A name far from every known one gets the list alone, no guess.
    let out = elevator_within(&["sim", &job, "--sched", "elvis"], MINUTE);
    clean_error(&out, &["no such scheduler (known: noop"]);
    assert!(!out.stderr.contains("did you mean"), "{}", out.stderr);
}

/// `sim JOB.fio` and `run` with several schedulers end in a comparison table whose latency
/// columns were headed `p50`, `p90`, `p99`, `p99.9` with no unit (a scenario's table says
/// `rd p50 ms`); they are milliseconds, and now say so, read and write alike.
#[test]
fn the_fio_jobs_comparison_table_names_its_latency_unit() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let out = elevator_within(&["sim", &job, "--sched", "noop,deadline"], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let header = out
        .stdout
        .lines()
        .find(|l| l.starts_with("scheduler ") && l.contains(" job "))
        .unwrap_or_else(|| panic!("no comparison table in {}", out.stdout));
    let columns: Vec<&str> = header
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    for c in &columns[2..] {
        assert!(
            c.ends_with(" ms") || c.ends_with(" IOPS") || c.ends_with(" MB/s"),
            "column {c:?} names no unit: {header}"
        );
    }
    for c in ["rd mean ms", "rd p99.9 ms", "wr p50 ms", "wr p99.9 ms"] {
        assert!(columns.contains(&c), "{c:?} not in {header}");
    }
}

/// `elevator validate` alone said only that `--drive` and `--trace` were required; its
/// usage now gives the other form, `--all`, too.
#[test]
fn validate_without_arguments_names_both_of_its_forms() {
    let out = elevator_within(&["validate"], MINUTE);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("elevator validate --all"),
        "{}",
        out.stderr
    );
}

/// `kernel-diff` with no recordings reads the repository's corpus by a relative path: run
/// anywhere else it failed with "crates/workload/tests/data/kernel: No such file or
/// directory", as if the user had named it. It now says what the default is and what to give.
#[test]
fn kernel_diff_away_from_the_repository_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let out = elevator_set_up(&["kernel-diff"], MINUTE, |c: &mut Command| {
        c.current_dir(dir.path());
    });
    clean_error(
        &out,
        &[
            "no recordings given",
            "crates/workload/tests/data/kernel",
            "elevator kernel-diff DIR",
        ],
    );
}

/// A trace that is not there was told as its name alone, the reason on a line below it
/// ("caused by: No such file or directory"); now as the job file's is: the name, what could
/// not be done, and why, on one line.
#[test]
fn a_missing_trace_is_named_with_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nosuch.trace");
    let out = elevator_within(&["replay", missing.to_str().unwrap()], MINUTE);
    clean_error(
        &out,
        &["nosuch.trace: cannot read the trace: No such file or directory"],
    );
    assert!(!out.stderr.contains("caused by"), "{}", out.stderr);
}

/// Help texts: `reproduce --seeds` named its upper bound only (1 was refused as "not in
/// 2..=100"); `mount --sched` read "Schedulers to compare, comma-separated ... default:
/// deadline for `sim` and `replay`" for a command that takes one and defaults to none, its
/// `--blktrace-out` promised `DIR/<scheduler>.blktrace.0`, and it and `sim` offered outputs
/// they refuse.
#[test]
fn help_names_the_seed_bounds_and_the_mounts_one_scheduler() {
    let out = elevator_within(&["reproduce", "--help"], MINUTE);
    assert!(
        out.stdout.contains("From 2 (an interval needs two) to 100"),
        "{}",
        out.stdout
    );
    let out = elevator_within(&["mount", "--help"], MINUTE);
    assert!(out.stdout.contains("--sched <NAME>"), "{}", out.stdout);
    assert!(out.stdout.contains("The scheduler, one"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("Schedulers to compare"),
        "{}",
        out.stdout
    );
}

/// `elevator list drives` printed the SSDs' longer names in a 14-character column, which
/// pushed their kind and size out of line with the disks' rows; every row now lines up.
#[test]
fn the_drive_list_lines_up_every_row() {
    let out = elevator_within(&["list", "drives"], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<&str> = out.stdout.lines().filter(|l| l.contains(" GB  ")).collect();
    assert!(rows.len() >= 8, "{}", out.stdout);
    let at: Vec<usize> = rows.iter().map(|r| r.find(" GB  ").unwrap()).collect();
    assert!(
        at.iter().all(|&a| a == at[0]),
        "sizes end at {at:?}:\n{}",
        out.stdout
    );
}

/// A `--set` for a scheduler not run named the ones run as a Rust list
/// (`["deadline"]`); now as a user writes them.
#[test]
fn a_set_for_a_scheduler_not_run_names_the_ones_run_as_written() {
    let out = elevator_within(
        &[
            "sim",
            "anticipatory-no-write",
            "--sched",
            "deadline,noop",
            "--set",
            "bfq.slice_idle=1",
        ],
        MINUTE,
    );
    clean_error(
        &out,
        &["--set bfq.slice_idle: bfq is not among the schedulers run (deadline, noop)"],
    );
    assert!(!out.stderr.contains("[\""), "{}", out.stderr);
}
