//! `elevator run` end to end on temporary files (no root needed).

mod common {
    pub mod direct_io;
    pub mod elevator;
    pub mod file;
    pub mod fio_job;
}
use common::direct_io::direct_io_works;
use common::elevator::elevator;
use common::file::write;
use common::fio_job::{run_on_a_file, MIXED};

#[test]
fn run_reports_fio_compatible_json_for_each_job() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let (ok, out, err) = run_on_a_file(
        dir.path(),
        MIXED,
        &["--sched", "none", "--output-format", "json"],
    );
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs[0]["jobname"], "writer");
    assert_eq!(jobs[0]["write"]["io_bytes"], 2 << 20);
    assert_eq!(jobs[1]["read"]["total_ios"], 50);
    assert!(
        jobs[1]["read"]["clat_ns"]["percentile"]["99.000000"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Named as asked (round 24; our registry's name for it is `noop`).
    assert_eq!(v["elevator"]["scheduler"], "none");
}

#[test]
fn several_schedulers_run_one_after_another_and_print_a_comparison() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let (ok, out, err) = run_on_a_file(dir.path(), MIXED, &["--sched", "none,latency-guard"]);
    assert!(ok, "{err}");
    assert!(out.contains("comparison"), "{out}");
    assert!(out.contains("latency-guard  reader"), "{out}");
}

#[test]
fn verify_writes_checksummed_blocks_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let (ok, out, err) = run_on_a_file(
        dir.path(),
        "[w]\nrw=randwrite\nbs=4k\niodepth=8\nsize=1m\n",
        &["--verify"],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("verify: read back and checked 1.0MiB"),
        "{out}"
    );
}

#[test]
fn an_unsupported_option_is_refused_naming_file_line_and_option() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "job.fio",
        "[j]\nrw=read\nsize=1m\nverify=crc32c\n",
    );
    let (ok, _, err) = elevator(&["run", &job, "--target", "/nonexistent/x"]);
    assert!(!ok);
    assert!(err.contains("job.fio:4: field `verify`"), "{err}");
}

#[test]
fn writing_over_an_existing_file_is_refused_without_allow_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("data");
    std::fs::write(&target, vec![7u8; 1 << 20]).unwrap();
    let job = write(dir.path(), "job.fio", "[w]\nrw=write\nsize=1m\n");
    let (ok, _, err) = elevator(&["run", &job, "--target", target.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("refusing to write to"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), vec![7u8; 1 << 20]);
}

#[test]
fn an_unknown_scheduler_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "job.fio", "[r]\nrw=read\nsize=1m\n");
    let (ok, _, err) = elevator(&[
        "run",
        &job,
        "--target",
        "/nonexistent/x",
        "--sched",
        "elvis",
    ]);
    assert!(!ok);
    assert!(
        err.contains("--sched \"elvis\": no such scheduler"),
        "{err}"
    );
}

#[test]
fn run_writes_a_blktrace_of_every_request_with_jobs_as_processes() {
    use elevator_workload::traces::blktrace::{BlkAction, BlkEvent, EventReader, EventSource};
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let bt = dir.path().join("bt");
    let (ok, _, err) = run_on_a_file(
        dir.path(),
        MIXED,
        &[
            "--sched",
            "mq-deadline",
            "--blktrace-out",
            bt.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let mut r = EventReader::open(&bt.join("mq-deadline.blktrace.0")).unwrap();
    let ev: Vec<BlkEvent> = r.by_ref().map(Result::unwrap).collect();
    let n = |a: BlkAction| ev.iter().filter(|e| e.action == a).count();
    // The writer's 2 MiB in 64 KiB writes and the reader's 50 reads, each queued, inserted,
    // dispatched and completed once.
    assert_eq!(n(BlkAction::Queue), 32 + 50);
    for a in [BlkAction::Insert, BlkAction::Issue, BlkAction::Complete] {
        assert_eq!(n(a), 32 + 50, "{a:?}");
    }
    assert!(
        ev.windows(2).all(|w| w[0].time <= w[1].time),
        "in time order"
    );
    let reads = ev
        .iter()
        .filter(|e| e.action == BlkAction::Complete && e.op() == Some(elevator_core::Op::Read))
        .count();
    assert_eq!(reads, 50);
    let names: Vec<_> = (1..=2).filter_map(|p| r.process_name(p)).collect();
    assert_eq!(names, ["writer", "reader"]);
}
