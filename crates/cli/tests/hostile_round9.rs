//! Hostile cases of issue 32, ninth round: what round 8 left (work told from a run's start
//! that falls short of what it does; a sweep bounded by its first cell) and variants no round
//! tried. Every run is bounded in time, so a hang fails instead of waiting.

use std::path::Path;

mod common {
    pub mod bounded;
    pub mod child;
    pub mod file;
    pub mod scenario;
}
use common::bounded::{clean_error, elevator, elevator_within, s, MINUTE};
use common::scenario::small_scenario;

// ----- round 8's leftovers -----

/// A compile job's work is told from the pace of its first I/Os (`implied_ios`), and its
/// later files miss a small page cache more: 1000 files through a 1 MiB cache were told at
/// 130,631 I/Os and did 134,762, so with `--max-ios 132000` the check passed and the run went
/// on past the bound (10^6 files, told at 8.1 x 10^7, computed for about 40 minutes). Now the
/// run counts its I/Os as it goes (`Simulation::bound_ios`) and stops at the bound, refused by
/// `RunReport::job_error` naming it and the override; within the bound it runs whole. (Since
/// round 10 the bound counts work, not I/Os alone: the same build is told 638,493 and does
/// between 650,000 and 660,000; the bounds below are those figures'.)
#[test]
fn a_compile_doing_more_than_its_told_work_stops_at_the_io_bound() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("make.toml");
    std::fs::write(
        &sc,
        "name = \"make\"\ndrive = \"samsung-980pro-1tb\"\n[[job]]\nname = \"make\"\n\
         kind = \"compile\"\nfiles = 1000\ndirs = 100\npage_cache_mib = 1\n",
    )
    .unwrap();
    let o = elevator_within(
        &["sim", s(&sc), "--sched", "none", "--max-ios", "645000"],
        MINUTE,
    );
    clean_error(&o, &["under none", "passed 645000 I/Os", "--max-ios"]);
    // The same through a sweep's cells (the grid bounds each run alike).
    let o = elevator_within(
        &[
            "sim",
            s(&sc),
            "--sched",
            "none",
            "--sweep",
            "seed=1",
            "--max-ios",
            "645000",
        ],
        MINUTE,
    );
    clean_error(&o, &["passed 645000 I/Os", "--max-ios"]);
    let o = elevator_within(
        &["sim", s(&sc), "--sched", "none", "--max-ios", "670000"],
        MINUTE,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// A scenario's `trace` job was left out of the work told before a run ("bounded by its
/// input"), so a trace of more requests than `--max-ios` ran whole (and, now that a run stops
/// at its bound, would run up to the bound and then fail). Now the job counts its work
/// (`TraceReplay::progress`: requests issued of those its checking pass counted) and the
/// scenario is refused before it runs, naming `job.trace`.
#[test]
fn a_scenario_trace_longer_than_the_io_bound_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let trace: String = (0..30_000u64)
        .map(|i| format!("{}.5 0 {} 8 1\n", i, (i * 7919) % 10_000_000))
        .collect();
    std::fs::write(dir.path().join("ds.trace"), trace).unwrap();
    let sc = dir.path().join("t.toml");
    std::fs::write(
        &sc,
        "name = \"t\"\ndrive = \"cheetah9lp\"\n[[job]]\nname = \"rep\"\nkind = \"trace\"\n\
         trace = \"ds.trace\"\nclosed_loop = true\n",
    )
    .unwrap();
    let o = elevator_within(
        &["sim", s(&sc), "--sched", "noop", "--max-ios", "10000"],
        MINUTE,
    );
    clean_error(&o, &["t.toml:6", "job.trace", "--max-ios"]);
    let o = elevator_within(
        &["sim", s(&sc), "--sched", "noop", "--max-ios", "40000"],
        MINUTE,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// A sweep's total work was the base cell's times the cells: an axis that enlarges a cell
/// (`job.r.number_ios=1000,900000` under `--max-ios 1000000`) passed as four cells of 1000
/// I/Os, and each cell of 900,000 I/Os was under the per-cell bound, so the sweep ran 1.8 x
/// 10^6 I/Os, past its bound (at the default bound, 10^8 times what a cell may imply: hours
/// of computing). Now every
/// cell's work is told before any runs (`Grid::check_cells_work`: cells alike in their drive,
/// job and control axes told once) and the sweep is refused naming the cells that pass it.
#[test]
fn a_sweep_axis_enlarging_its_cells_is_bounded_by_every_cell_before_any_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sc = small_scenario(dir.path(), 1000);
    let o = elevator_within(
        &[
            "sim",
            &sc,
            "--sched",
            "noop",
            "--sweep",
            "seed=1,2",
            "--sweep",
            "job.r.number_ios=1000,900000",
            "--max-ios",
            "1000000",
        ],
        MINUTE,
    );
    clean_error(
        &o,
        &[
            "--sweep",
            "job.r.number_ios=900000",
            "--max-ios",
            "before any runs",
        ],
    );
    // Smaller values run.
    let o = elevator_within(
        &[
            "sim",
            &sc,
            "--sched",
            "noop",
            "--sweep",
            "seed=1,2",
            "--sweep",
            "job.r.number_ios=100,2000",
        ],
        MINUTE,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ----- a fresh sweep -----

/// Every error was printed with `eprintln!`, which panics when stderr cannot be written:
/// `elevator sim nosuch 2>/dev/full` exited 101 (a panic, its message lost too), not 1.
/// Now every line to stderr goes through `output::tell!`, which drops a failed write; the
/// exit status still tells.
#[test]
fn an_error_with_stderr_on_dev_full_exits_1_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        println!("skipped: no /dev/full here");
        return;
    };
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["sim", "no-such-scenario"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}");
}

/// `kernel-diff` of a recording whose `job.fio` was emptied or cut diffed without a word,
/// its jobs' priorities (bfq's queues take the context's) lost. Now every job fio ran
/// (meta.json's `fio.jobs`) must have its section in the job file, or the recording is
/// refused naming the job file and the job (`Recording::context_priorities`).
#[test]
fn a_recording_whose_job_file_lost_its_jobs_is_refused_naming_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/kernel/interleaved-readers/bfq");
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir_all(&rec).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), rec.join(f.file_name())).unwrap();
    }
    let job = std::fs::read_to_string(rec.join("job.fio")).unwrap();
    for cut in [
        String::new(),
        job.lines().take(3).collect::<Vec<_>>().join("\n"),
    ] {
        std::fs::write(rec.join("job.fio"), &cut).unwrap();
        let o = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
        clean_error(&o, &["job.fio", "no section", "meta.json"]);
    }
    std::fs::write(rec.join("job.fio"), &job).unwrap();
    let o = elevator(&["kernel-diff", s(&rec)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// `--sched` took any list: `deadline,deadline` (or `noop,none`, one scheduler by its alias)
/// ran and tabled it twice under one name, and 10,000 names ran the scenario 10,000 times
/// (past `timeout 30`). Now a scheduler named twice is refused naming both spellings
/// (`SchedOpts::names`; the grid alike), which bounds the list by the registry.
#[test]
fn a_scheduler_named_twice_in_sched_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let sc = small_scenario(dir.path(), 200);
    let o = elevator_within(&["sim", &sc, "--sched", "deadline,deadline"], MINUTE);
    clean_error(&o, &["--sched", "\"deadline\" and \"deadline\""]);
    let o = elevator_within(&["sim", &sc, "--sched", "noop,none"], MINUTE);
    clean_error(&o, &["--sched", "\"noop\" and \"none\""]);
    let many = vec!["noop"; 10_000].join(",");
    let o = elevator_within(&["sim", &sc, "--sched", &many], MINUTE);
    clean_error(&o, &["--sched", "give each once"]);
    let o = elevator_within(&["sim", &sc, "--sched", "noop,deadline"], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
}
