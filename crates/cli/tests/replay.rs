//! `elevator replay` and `--blktrace-out`: schedulers side by side with per-process figures,
//! open vs closed loop, and round trips through Debian's blkparse (skipped with a notice when
//! blkparse is absent; .ci/run installs it where it can).

use std::path::{Path, PathBuf};
use std::process::Command;

use elevator_workload::traces::blkparse::BlkparseReader;
use elevator_workload::traces::blktrace::{BlkAction, BlkEvent, EventReader, EventSource};
use elevator_workload::traces::lines::Lines;

mod common {
    pub mod blkparse;
    pub mod direct_io;
}
use common::blkparse::blkparse;
use common::direct_io::direct_io_works;

fn elevator(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .output()
        .expect("run elevator")
}

fn ok(args: &[&str]) -> String {
    let out = elevator(args);
    assert!(
        out.status.success(),
        "elevator {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A DiskSim trace: process 0 reads sequentially every 4 ms, process 1 reads far away every
/// 5 ms: the two-reader case where anticipation pays off in closed loop.
fn two_readers(dir: &Path) -> PathBuf {
    let mut text = String::new();
    let mut reqs: Vec<(f64, u32, u64)> = Vec::new();
    for i in 0..200u64 {
        reqs.push((i as f64 * 4.0, 0, 1000 + i * 8));
        reqs.push((i as f64 * 5.0 + 0.5, 1, 8_000_000 + i * 8));
    }
    reqs.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (t, dev, sector) in reqs {
        text.push_str(&format!("{t:.3} {dev} {sector} 8 1\n"));
    }
    let p = dir.join("two.trace");
    std::fs::write(&p, text).unwrap();
    p
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn replay_compares_schedulers_with_per_process_figures() {
    let dir = tempfile::tempdir().unwrap();
    let trace = two_readers(dir.path());
    let j = dir.path().join("out.json");
    let out = ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--sched",
        "deadline,anticipatory",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(out.contains("schedulers side by side"), "{out}");
    let v = json(&j);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["issued"], 400);
        assert_eq!(r["total"]["read"]["ios"], 400);
        let procs = r["processes"].as_array().unwrap();
        assert_eq!(procs.len(), 2);
        assert!(procs.iter().all(|p| p["read"]["ios"] == 200));
    }
}

#[test]
fn closed_loop_lets_anticipation_pay_off_where_open_loop_cannot() {
    // Two sequential readers far apart, replayed 4x faster than recorded. Open loop piles the
    // requests up whatever the scheduler does; closed loop lets each reader wait for its
    // previous read, and anticipatory's waiting for the reader that just completed keeps the
    // head on its stream (Iyer & Druschel's deceptive idleness).
    let dir = tempfile::tempdir().unwrap();
    let trace = two_readers(dir.path());
    let mean = |closed: bool, sched: &str| {
        let j = dir.path().join(format!("{sched}-{closed}.json"));
        let mut args = vec![
            "replay",
            trace.to_str().unwrap(),
            "--sched",
            sched,
            "--speed",
            "4",
            "--json",
            j.to_str().unwrap(),
        ];
        if closed {
            args.push("--closed-loop");
        }
        ok(&args);
        json(&j)["runs"][0]["total"]["read"]["lat_mean_ms"]
            .as_f64()
            .unwrap()
    };
    let (open_dl, open_as) = (mean(false, "deadline"), mean(false, "anticipatory"));
    let (closed_dl, closed_as) = (mean(true, "deadline"), mean(true, "anticipatory"));
    assert!(
        closed_as < 0.8 * closed_dl,
        "closed: as {closed_as} vs deadline {closed_dl}"
    );
    assert!(
        open_as > 0.9 * open_dl,
        "open: as {open_as} vs deadline {open_dl}"
    );
    assert!(
        closed_dl < open_dl / 5.0,
        "closed loop does not pile requests up"
    );
}

#[test]
fn bad_traces_and_options_fail_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "1,h,0,Read,0,512,1\n2,h,0,Read,zero,512,1\n").unwrap();
    let out = elevator(&["replay", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv:2: field `Offset`"), "{err}");
    let trace = two_readers(dir.path());
    let out = elevator(&["replay", trace.to_str().unwrap(), "--speed", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("speed"));
    let out = elevator(&["replay", trace.to_str().unwrap(), "--format", "nope"]);
    assert!(!out.status.success());
}

/// Every event with what blkparse prints of it.
fn key(e: &BlkEvent) -> (String, u64, u64, u32, u32) {
    let bytes = if matches!(e.action, BlkAction::Notify(_)) {
        0
    } else {
        e.bytes
    };
    (
        e.action.letters().to_string(),
        e.time.as_ns(),
        e.sector,
        bytes,
        e.pid,
    )
}

#[test]
fn blkparse_reads_our_blktrace_with_the_same_events_and_counts() {
    let Some(blkparse) = blkparse() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace = two_readers(dir.path());
    let bt = dir.path().join("bt");
    let j = dir.path().join("out.json");
    ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--sched",
        "anticipatory",
        "--closed-loop",
        "--blktrace-out",
        bt.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
    ]);
    let text = dir.path().join("parsed.txt");
    let st = Command::new(blkparse)
        .arg("-i")
        .arg(bt.join("anticipatory"))
        .arg("-o")
        .arg(&text)
        .status()
        .unwrap();
    assert!(st.success());
    // Our binary reader and blkparse's text, read back by our text reader: the same events.
    let ours: Vec<BlkEvent> = EventReader::open(&bt.join("anticipatory.blktrace.0"))
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| !matches!(e.action, BlkAction::Notify(_)))
        .collect();
    let mut theirs_reader = BlkparseReader::new(Lines::open(&text).unwrap());
    let theirs: Vec<BlkEvent> = theirs_reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(key(a), key(b));
    }
    // blkparse learned the process names from our notifications.
    assert_eq!(theirs_reader.process_name(0).as_deref(), Some("replay.0"));
    // Its summary counts the requests the replay issued.
    let summary = std::fs::read_to_string(&text).unwrap();
    let queued: u64 = summary
        .lines()
        .find(|l| l.contains("Reads Queued:"))
        .and_then(|l| l.split("Reads Queued:").nth(1))
        .and_then(|s| s.split(',').next())
        .map(|s| s.trim().parse().unwrap())
        .unwrap();
    assert_eq!(
        queued,
        json(&j)["runs"][0]["total"]["read"]["ios"]
            .as_u64()
            .unwrap()
    );
    let completed = ours
        .iter()
        .filter(|e| e.action == BlkAction::Complete)
        .count();
    let dispatched = ours.iter().filter(|e| e.action == BlkAction::Issue).count();
    assert_eq!(completed, dispatched);
}

#[test]
fn sim_writes_a_blktrace_whose_counts_balance() {
    let dir = tempfile::tempdir().unwrap();
    let bt = dir.path().join("bt");
    ok(&[
        "sim",
        "anticipatory-no-write",
        "--sched",
        "deadline",
        "--blktrace-out",
        bt.to_str().unwrap(),
    ]);
    let mut r = EventReader::open(&bt.join("deadline.blktrace.0")).unwrap();
    let ev: Vec<BlkEvent> = r.by_ref().map(Result::unwrap).collect();
    let n = |a: BlkAction| ev.iter().filter(|e| e.action == a).count();
    assert!(n(BlkAction::Queue) > 1000);
    assert_eq!(
        n(BlkAction::Queue),
        n(BlkAction::Insert) + n(BlkAction::BackMerge)
    );
    assert_eq!(n(BlkAction::Issue), n(BlkAction::Complete));
    assert_eq!(n(BlkAction::Insert), n(BlkAction::Issue));
    assert!(ev.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(r.process_name(1).is_some());
}

#[test]
fn replay_on_a_real_target_writes_a_blktrace_of_every_request() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let target = dir.path().join("target.img");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let mut text = String::new();
    for i in 0..50u64 {
        text.push_str(&format!("{:.3} 0 {} 8 1\n", i as f64 * 0.1, i * 64));
    }
    let trace = dir.path().join("reads.trace");
    std::fs::write(&trace, text).unwrap();
    let bt = dir.path().join("bt");
    ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--format",
        "disksim",
        "--sched",
        "deadline",
        "--target",
        target.to_str().unwrap(),
        "--blktrace-out",
        bt.to_str().unwrap(),
    ]);
    let mut r = EventReader::open(&bt.join("deadline.blktrace.0")).unwrap();
    let ev: Vec<BlkEvent> = r.by_ref().map(Result::unwrap).collect();
    let n = |a: BlkAction| ev.iter().filter(|e| e.action == a).count();
    for a in [
        BlkAction::Queue,
        BlkAction::Insert,
        BlkAction::Issue,
        BlkAction::Complete,
    ] {
        assert_eq!(n(a), 50, "{a:?}");
    }
    assert!(ev.windows(2).all(|w| w[0].time <= w[1].time));
    assert_eq!(r.process_name(1).as_deref(), Some("replay"));
}

#[test]
fn replay_json_reports_merges_per_direction_as_fios_disk_util() {
    // 64 contiguous 4 KiB reads of one process, all stamped at 0: the first goes to the
    // disk, the rest wait in deadline's queue and back-merge (elv_merge), up to the 256
    // sectors a device that states no limit takes. The JSON carries them as fio's disk_util.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..64u64 {
        text.push_str(&format!("0.000 0 {} 8 1\n", 1000 + i * 8));
    }
    let trace = dir.path().join("burst.trace");
    std::fs::write(&trace, text).unwrap();
    let j = dir.path().join("out.json");
    ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--sched",
        "deadline",
        "--json",
        j.to_str().unwrap(),
    ]);
    let d = &json(&j)["runs"][0]["disk_util"];
    let (ios, merges) = (
        d["read_ios"].as_u64().unwrap(),
        d["read_merges"].as_u64().unwrap(),
    );
    assert_eq!(ios + merges, 64, "{d}");
    assert!(merges >= 48, "most of the burst merges: {d}");
    assert!(ios >= 64 * 8 / 256, "no request above 256 sectors: {d}");
    assert_eq!(d["write_ios"], 0);
    assert_eq!(d["read_sectors"], 512);
}
