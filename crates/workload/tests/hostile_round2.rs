//! Hostile cases of issue 32 (hardening, round 2) against the trace readers: one test per
//! class, named after its example.

use std::path::Path;
use std::time::{Duration, Instant};

use elevator_workload::traces::blktrace::BlkView;
use elevator_workload::traces::{open, OpenOptions, TraceFormat};

/// blkparse text of `n` dispatches (D) and no completions, 1 us apart, of pid 100.
fn dispatches_without_completions(path: &Path, n: usize) {
    use std::fmt::Write;
    let mut t = String::with_capacity(n * 64);
    for i in 0..n {
        let ns = i as u64 * 1_000;
        writeln!(
            t,
            "  8,0    0 {:>8} {:>5}.{:09}   100  D   R {} + 8 [dd]",
            i + 1,
            ns / 1_000_000_000,
            ns % 1_000_000_000,
            i as u64 * 8
        )
        .unwrap();
    }
    std::fs::write(path, t).unwrap();
}

/// The shortest of three reads of the trace's dispatch view (all `n` records must come out).
fn read_dispatch_view(path: &Path, n: usize) -> Duration {
    (0..3)
        .map(|_| {
            let t0 = Instant::now();
            let opts = OpenOptions {
                format: Some(TraceFormat::Blkparse),
                view: BlkView::Dispatch,
            };
            let mut count = 0;
            for r in open(&[path.to_path_buf()], opts).unwrap() {
                r.unwrap();
                count += 1;
            }
            assert_eq!(count, n);
            t0.elapsed()
        })
        .min()
        .unwrap()
}

/// Dispatch-view blkparse without completions was quadratic in the requests (each one
/// released scanned every request in flight). Ten times the requests must take well under
/// the hundred times a quadratic reader takes: a generous bound of 40 (n log n gives about
/// 12), on the best of three runs each, so a loaded machine does not fail it.
#[test]
fn dispatch_view_blkparse_without_completions_is_not_quadratic() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (10_000, 100_000);
    let (a, b) = (dir.path().join("small.txt"), dir.path().join("large.txt"));
    dispatches_without_completions(&a, small);
    dispatches_without_completions(&b, large);
    let t_small = read_dispatch_view(&a, small);
    let t_large = read_dispatch_view(&b, large);
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-4);
    assert!(
        ratio < 40.0,
        "10x the requests took {ratio:.1}x the time ({t_small:?} -> {t_large:?})"
    );
}

/// A record stamped near 2^64 ns after the first would saturate the replay's clock (1 ns
/// latencies): refused naming the file, the record and the field.
#[test]
fn a_record_a_century_after_the_first_is_refused_not_saturated() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("far.csv");
    // MSR: FILETIME ticks of 100 ns; the second record 2^60 ticks later.
    std::fs::write(
        &p,
        "128166372003061629,web,0,Read,0,4096,10\n180000000000000000,web,0,Read,4096,4096,10\n",
    )
    .unwrap();
    let opts = OpenOptions {
        format: Some(TraceFormat::Msr),
        view: BlkView::Queue,
    };
    let got: Vec<_> = open(&[p], opts).unwrap().collect();
    assert!(got[0].is_ok());
    let e = got[1].clone().unwrap_err();
    assert_eq!(e.field, "time");
    assert!(
        e.to_string().contains("far.csv") && e.message.contains("record 2"),
        "{e}"
    );
}

/// A scenario's trace on a FIFO: the job is built (and checked) once per scheduler, so its
/// trace is opened more than once, and a FIFO's second open blocks for ever. Refused naming
/// the field, for both kinds of trace job.
#[test]
fn a_scenario_trace_on_a_fifo_is_refused_not_opened_twice() {
    use elevator_workload::jobs::{StartupConfig, StartupJob, TraceReplay, TraceReplayConfig};
    use elevator_workload::BuildEnv;
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("t.trace");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipping: mkfifo failed");
        return;
    }
    // A writer, so that a reader that opens the FIFO does not block (and the test cannot hang).
    let w = fifo.clone();
    let writer = std::thread::spawn(move || {
        let _ = std::fs::write(&w, "0.0 0 100 8 1\n");
    });
    let env = BuildEnv::new(1 << 30, 1, "t");
    let Err(e) = TraceReplay::new(
        TraceReplayConfig {
            trace: fifo.clone(),
            ..Default::default()
        },
        &env,
    ) else {
        panic!("a FIFO trace was accepted");
    };
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let Err(e) = StartupJob::new(
        StartupConfig {
            trace: fifo.clone(),
            ..Default::default()
        },
        &env,
    ) else {
        panic!("a FIFO start-up trace was accepted");
    };
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // Release the writer.
    let mut rest = String::new();
    std::fs::File::open(&fifo)
        .unwrap()
        .read_to_string(&mut rest)
        .unwrap();
    writer.join().unwrap();
}
