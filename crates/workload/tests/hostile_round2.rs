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
                accept_unsorted: false,
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
        accept_unsorted: false,
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

/// A trace of `format` whose records are stamped at `times` (seconds from the trace's
/// epoch, one 4 KiB read each), and the 1-based line (or byte offset) of each record.
fn trace_at(dir: &Path, format: TraceFormat, times: &[u64]) -> (std::path::PathBuf, Vec<u64>) {
    use elevator_workload::traces::blktrace::{cat, encode_v7, BlkAction, BlkEvent};
    let path = dir.join(format!("t.{format}"));
    let mut at = Vec::new();
    if format == TraceFormat::Blktrace {
        let mut out = Vec::new();
        for (i, &t) in times.iter().enumerate() {
            at.push(out.len() as u64);
            let e = BlkEvent {
                time: elevator_core::Nanos::from_secs(t),
                sequence: i as u32,
                cpu: 0,
                device: 8 << 20,
                pid: 100,
                action: BlkAction::Queue,
                category: cat::READ,
                sector: i as u64 * 8,
                bytes: 4096,
                error: 0,
                cgroup: None,
                remap: None,
            };
            encode_v7(&e, &[], &mut out);
        }
        std::fs::write(&path, out).unwrap();
        return (path, at);
    }
    let mut text = String::new();
    let mut line = 0u64;
    let mut push = |text: &mut String, l: String, record: bool| {
        line += 1;
        text.push_str(&l);
        text.push('\n');
        if record {
            at.push(line);
        }
    };
    match format {
        TraceFormat::FioIolog => {
            push(&mut text, "fio version 3 iolog".into(), false);
            push(&mut text, "0 /dev/x add".into(), false);
        }
        TraceFormat::Msr => push(
            &mut text,
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime".into(),
            false,
        ),
        _ => {}
    }
    for (i, &t) in times.iter().enumerate() {
        let i = i as u64;
        let l = match format {
            TraceFormat::Blkparse => format!(
                "  8,0    0 {:>8} {:>5}.000000000   100  Q   R {} + 8 [dd]",
                i + 1,
                t,
                i * 8
            ),
            TraceFormat::FioIolog => format!("{} /dev/x read {} 4096", t * 1_000_000, i * 4096),
            TraceFormat::Msr => format!(
                "{},web,0,Read,{},4096,10",
                128_166_372_000_000_000 + t * 10_000_000,
                i * 4096
            ),
            TraceFormat::Spc => format!("0,{},4096,R,{t}.0", i * 8),
            TraceFormat::Alibaba => format!("0,R,{},4096,{}", i * 4096, t * 1_000_000),
            TraceFormat::Tencent => format!("{},{},8,0,1", 1_538_323_200 + t, i * 8),
            TraceFormat::Disksim => format!("{}.0 0 {} 8 1", t * 1000, i * 8),
            TraceFormat::Mqsim => format!("{} 0 {} 8 1", 2_000_000 + t * 1_000_000_000, i * 8),
            TraceFormat::Blktrace => unreachable!(),
        };
        push(&mut text, l, true);
    }
    std::fs::write(&path, text).unwrap();
    (path, at)
}

/// Records stamped earlier than one before them (later than the first, or before the first,
/// which was moved to 0): in every format, refused naming the file, the line (the byte for
/// binary blktrace) and the format's time field; `accept_unsorted` replays every record in
/// file order, counts them (records before the first included) and names the first.
#[test]
fn unsorted_records_are_refused_naming_line_and_field_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for format in TraceFormat::ALL {
        let time_field = match format {
            TraceFormat::Msr | TraceFormat::Spc | TraceFormat::Tencent => "Timestamp",
            TraceFormat::Alibaba | TraceFormat::FioIolog => "timestamp",
            _ => "time",
        };
        // Third record before the second; second record before the first.
        for (times, bad) in [(&[10u64, 30, 20, 40][..], 2usize), (&[10, 5, 20][..], 1)] {
            let (path, at) = trace_at(dir.path(), format, times);
            let opts = OpenOptions {
                format: Some(format),
                view: BlkView::Queue,
                accept_unsorted: false,
            };
            let got: Vec<_> = open(std::slice::from_ref(&path), opts).unwrap().collect();
            let e = got
                .iter()
                .find_map(|r| r.as_ref().err())
                .unwrap_or_else(|| panic!("{format} {times:?}: accepted {got:?}"));
            assert_eq!(e.field, time_field, "{format}: {e}");
            let here = if format == TraceFormat::Blktrace {
                e.byte()
            } else {
                e.line().map(|l| l as u64)
            };
            assert_eq!(here, Some(at[bad]), "{format} {times:?}: {e}");
            assert!(e.to_string().contains("t."), "{e}");
            assert!(e.message.contains("--accept-unsorted"), "{e}");
            assert_eq!(got.iter().filter(|r| r.is_ok()).count(), bad, "{format}");

            let opts = OpenOptions {
                accept_unsorted: true,
                ..opts
            };
            let mut s = open(std::slice::from_ref(&path), opts).unwrap();
            let mut n = 0;
            for r in s.by_ref() {
                r.unwrap();
                n += 1;
            }
            assert_eq!(n, times.len(), "{format}: every record replayed");
            assert_eq!(s.out_of_order(), 1, "{format} {times:?}");
            let first = s.first_out_of_order().expect("the first is named");
            assert_eq!(first.time_field, time_field);
            if format == TraceFormat::Blktrace {
                assert_eq!(first.at, elevator_workload::input::Position::Byte(at[bad]));
            } else {
                assert_eq!(
                    first.at,
                    elevator_workload::input::Position::Line(at[bad] as usize)
                );
            }
        }
    }
}
