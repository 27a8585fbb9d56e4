//! Hostile cases of issue 32, eighth round: what round 7 left (a sweep's total work, scenario
//! jobs bounded only by their counts) and variants no round tried. Every run is bounded in
//! time, so a hang fails instead of waiting.

use std::path::Path;

mod common {
    pub mod bounded;
    pub mod child;
    pub mod file;
    pub mod scenario;
}
use common::bounded::{clean_error, elevator, elevator_within, s, MINUTE};
use common::scenario::small_scenario;

// ----- round 7's leftovers -----

/// A sweep's cells were each bounded (10^8 I/Os) and so was their count (10^5), not their
/// product: `--sweep seed=1..100000` of a scenario of 1000 reads ran for minutes (10^5
/// cells of 10^3 I/Os, 1.4 ms of set-up each besides). Now the grid
/// (`elevator_campaign::check_sweep_work`) refuses cells x (a cell's I/Os + 1000 for its
/// set-up) past `--max-ios`, naming `--sweep` and the override, before any cell runs; a
/// raised `--max-ios` or a smaller sweep runs.
#[test]
fn a_sweep_of_100000_cells_of_1000_ios_is_refused_naming_the_sweep_and_the_override() {
    let dir = tempfile::tempdir().unwrap();
    let sc = small_scenario(dir.path(), 1000);
    let o = elevator_within(
        &["sim", &sc, "--sched", "noop", "--sweep", "seed=1..100000"],
        MINUTE,
    );
    clean_error(&o, &["--sweep", "100000 cells", "--max-ios", "max_ios"]);
    // Schedulers count as cells: 50,000 seeds under two.
    let o = elevator_within(
        &[
            "sim",
            &sc,
            "--sched",
            "noop,deadline",
            "--sweep",
            "seed=1..50000",
        ],
        MINUTE,
    );
    clean_error(&o, &["--sweep", "100000 cells", "--max-ios"]);
    // The bound is the user's: lowered, ten cells pass it; within it they run.
    let o = elevator_within(
        &["sim", &sc, "--sweep", "seed=1..10", "--max-ios", "5000"],
        MINUTE,
    );
    clean_error(&o, &["--sweep", "10 cells", "--max-ios"]);
    let o = elevator_within(&["sim", &sc, "--sweep", "seed=1..10"], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// A scenario's compile, dependent-reader and stream-writer jobs without a `duration_s` were
/// bounded only by their counts: a stream writer of `total_bytes = 10^12` in 512-byte writes
/// (2 x 10^9 I/Os) or a dependent reader of `loops = 4294967295` computed for hours. Now
/// each job counts its own work (`Job::progress`: writes, sectors, files read), a probe of
/// the run's first I/Os extrapolates the least share done to the whole
/// (`elevator_sim::work::implied_ios`, `Span::Done`), and `Scenario::check_work` refuses
/// past `--max-ios`, naming the job's line and the field that sets its work.
#[test]
fn scenario_jobs_bounded_only_by_their_counts_are_under_the_io_bound() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.toml");
    let head = "name = \"s\"\ndrive = \"laptop-4200\"\n[[job]]\nname = \"j\"\n";
    for (job, want) in [
        (
            "kind = \"stream-writer\"\nrequest_bytes = 512\ntotal_bytes = 1000000000000\n",
            ["s.toml:7", "job.total_bytes", "stream-writer"],
        ),
        (
            "kind = \"dependent-reader\"\nfiles = 1000\nfile_size = 4096\nloops = 4294967295\n",
            ["s.toml:8", "job.loops", "dependent-reader"],
        ),
        (
            "kind = \"dependent-reader\"\nfiles = 1000000\nfile_size = 4096\ngap = 0\n",
            ["s.toml:6", "job.files", "dependent-reader"],
        ),
    ] {
        std::fs::write(&sc, format!("{head}{job}")).unwrap();
        let o = elevator_within(&["sim", s(&sc), "--max-ios", "100000"], MINUTE);
        clean_error(&o, &[want[0], want[1], want[2], "--max-ios"]);
    }
    // A compile of 2000 files through a page cache of 1 MiB: about 2 x 10^5 I/Os, refused
    // below that and run at the default bound.
    std::fs::write(
        &sc,
        "name = \"s\"\ndrive = \"samsung-980pro-1tb\"\n[[job]]\nname = \"make\"\n\
         kind = \"compile\"\nfiles = 2000\ndirs = 100\npage_cache_mib = 1\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&sc), "--max-ios", "50000"], MINUTE);
    clean_error(&o, &["s.toml:6", "job.files", "compile", "--max-ios"]);
    // Within the bound they run: a small writer, reader and compile together.
    std::fs::write(
        &sc,
        "name = \"s\"\ndrive = \"laptop-4200\"\n[[job]]\nname = \"w\"\nkind = \"stream-writer\"\n\
         total_bytes = 10000000\n[[job]]\nname = \"cat\"\nkind = \"dependent-reader\"\n\
         files = 50\n[[job]]\nname = \"make\"\nkind = \"compile\"\nfiles = 50\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&sc), "--sched", "noop"], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ----- kernel-diff of hostile recordings -----

/// A copy of the corpus's interleaved-readers recording under `sched`, its trace rewritten
/// by `edit` (the text of `trace.txt.gz`, gzipped again by `gzip`).
fn recording(dir: &Path, name: &str, sched: &str, edit: impl Fn(String) -> String) -> String {
    use std::process::Command;
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/kernel/interleaved-readers")
        .join(sched);
    let rec = dir.join(name);
    std::fs::create_dir_all(&rec).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), rec.join(f.file_name())).unwrap();
    }
    let gz = rec.join("trace.txt.gz");
    let text = Command::new("gzip").arg("-dc").arg(&gz).output().unwrap();
    assert!(text.status.success());
    let plain = rec.join("trace.txt");
    std::fs::write(&plain, edit(String::from_utf8(text.stdout).unwrap())).unwrap();
    assert!(Command::new("gzip")
        .arg("-f")
        .arg(&plain)
        .status()
        .unwrap()
        .success());
    s(&rec).to_string()
}

/// `kernel-diff` of recordings no kernel wrote: the trace's lines reversed (each CPU's
/// events going back in time) diffed at 6.9% agreement, sorted back without a word; an
/// empty trace, or one whose `block_rq_issue` events were renamed, printed "0 decisions,
/// 100.0% agree"; a bfq log copied from another run matched no process and was used
/// silently. Now a CPU's event earlier than its previous one is refused naming the file, line
/// and `time` (`FtraceReader`: a CPU's ring buffer records in time order; CPUs interleave
/// and are still sorted back); a recording without a dispatch of its device, and a bfq log
/// whose notes lie outside the trace's dispatches, are refused naming the file.
#[test]
fn kernel_recordings_reordered_emptied_or_mismatched_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let rev = recording(dir.path(), "rev", "mq-deadline", |t| {
        let mut lines: Vec<&str> = t.lines().collect();
        lines.reverse();
        lines.join("\n")
    });
    let o = elevator_within(&["kernel-diff", &rev], MINUTE);
    clean_error(&o, &["trace.txt.gz:2", "time", "CPU"]);
    let empty = recording(dir.path(), "empty", "mq-deadline", |_| String::new());
    let o = elevator_within(&["kernel-diff", &empty], MINUTE);
    clean_error(&o, &["empty/trace.txt.gz", "block_rq_issue", "7,0"]);
    let renamed = recording(dir.path(), "renamed", "mq-deadline", |t| {
        t.replace("block_rq_issue", "block_rq_frobnicate")
    });
    let o = elevator_within(&["kernel-diff", &renamed], MINUTE);
    clean_error(&o, &["renamed/trace.txt.gz", "block_rq_issue"]);
    // The bfq log of twelve-procs-mixed-prio beside interleaved-readers' trace.
    let other = recording(dir.path(), "other", "bfq", |t| t);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../workload/tests/data/kernel/twelve-procs-mixed-prio/bfq/bfq-log.txt.gz"),
        Path::new(&other).join("bfq-log.txt.gz"),
    )
    .unwrap();
    let o = elevator_within(&["kernel-diff", &other], MINUTE);
    clean_error(&o, &["other/bfq-log.txt.gz", "another run"]);
    // The recordings as recorded still diff.
    let as_recorded = recording(dir.path(), "same", "bfq", |t| t);
    let o = elevator(&["kernel-diff", &as_recorded]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}
