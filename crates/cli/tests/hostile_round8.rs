//! Hostile cases of issue 32, eighth round: what round 7 left (a sweep's total work, scenario
//! jobs bounded only by their counts) and variants no round tried. Every run is bounded in
//! time, so a hang fails instead of waiting.

use std::path::Path;
use std::time::Duration;

mod common {
    pub mod bounded;
    pub mod child;
}
use common::bounded::{clean_error, elevator_within};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A minute: every case here is refused or run in well under a second.
const MINUTE: Duration = Duration::from_secs(60);

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
    let sc = dir.path().join("small.toml");
    std::fs::write(
        &sc,
        "name = \"small\"\ndrive = \"cheetah9lp\"\n[[job]]\nname = \"r\"\nkind = \"fio\"\n\
         rw = \"randread\"\nbs = 4096\nnumber_ios = 1000\n",
    )
    .unwrap();
    let o = elevator_within(
        &[
            "sim",
            s(&sc),
            "--sched",
            "noop",
            "--sweep",
            "seed=1..100000",
        ],
        MINUTE,
    );
    clean_error(&o, &["--sweep", "100000 cells", "--max-ios", "max_ios"]);
    // Schedulers count as cells: 50,000 seeds under two.
    let o = elevator_within(
        &[
            "sim",
            s(&sc),
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
        &["sim", s(&sc), "--sweep", "seed=1..10", "--max-ios", "5000"],
        MINUTE,
    );
    clean_error(&o, &["--sweep", "10 cells", "--max-ios"]);
    let o = elevator_within(&["sim", s(&sc), "--sweep", "seed=1..10"], MINUTE);
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
