//! Tests written for the survivors of mutation testing the kernel oracle's replay
//! (docs/mutation-testing.md, "The kernel oracle's replay (mutants36)", "the kernel replay, shard
//! 3/6 first half" (mutants39), "second half" (mutants40) and "shard 1/12" (mutants41)):
//! each pins a rule of the replay or of `--resolve`, the matching of bfq's log, the loading
//! of a recording or the agreement figures that no other test read.

use std::path::PathBuf;

use super::bfq_log::batch_allocated;
use super::corpus::{check_requests, MAX_REQUEST_SECTORS};
use super::resolve::{moves_of, run_start};
use super::tests::{meta, read, BATCH, ISSUED_LATE};
use super::*;
use crate::traces::ftrace::Recording;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Without the loop device's `hw_queue_depth` in the recording, the device replayed holds
/// the most requests the kernel had issued (`block_rq_issue`) and not yet completed
/// (`block_rq_complete`) at once: BATCH's three reads are issued at 10-11 us and the first
/// completes at 20 us. A completion and an issue in the same microsecond free the slot
/// first: two reads served one after the other were never two in flight.
#[test]
fn without_the_hardware_queue_depth_the_device_holds_what_the_kernel_had_in_flight() {
    let t = read(BATCH);
    assert_eq!(max_in_flight(&t), 3);
    let mut m = meta("mq-deadline");
    m.device.hw_queue_depth = None;
    let d = diff(&t, &m, &DiffOptions::default()).unwrap();
    assert_eq!(d.depth, 3);
    let serial = read(
        "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ..... 1.000002: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 fio-10 [000] ..... 1.000020: block_getrq: 7,0 R 108 + 8 [fio]
 fio-10 [000] ..... 1.000020: block_rq_issue: 7,0 R 4096 () 108 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000040: block_rq_complete: 7,0 R () 108 + 8 be,0,4 [0]
",
    );
    assert_eq!(max_in_flight(&serial), 1);
}

/// The share of real choices agreed: BATCH's second and third reads were chosen with more
/// than one queued. mq-deadline takes 100, then 300 before 500 (`deadline_from_pos`, the
/// sorted order from the last position) as the kernel did: 2 of 2. `none` (our noop) takes
/// 100 and then 500, in arrival order: 1 of 2. A recording without a real choice counts as
/// agreeing on all of them.
#[test]
fn the_share_of_real_choices_counts_only_decisions_among_several_requests() {
    let t = read(BATCH);
    let d = diff(&t, &meta("mq-deadline"), &DiffOptions::default()).unwrap();
    assert_eq!((d.choices, d.choices_agreed, d.choice_share()), (2, 2, 1.0));
    let n = diff(&t, &meta("none"), &DiffOptions::default()).unwrap();
    assert_eq!((n.choices, n.choices_agreed, n.choice_share()), (2, 1, 0.5));
    let one = read(
        "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
",
    );
    let d = diff(&one, &meta("mq-deadline"), &DiffOptions::default()).unwrap();
    assert_eq!((d.choices, d.choice_share()), (0, 1.0));
}

/// The recordings under a directory: mixes by name, and in each mix the kernel's
/// schedulers in the table's order (none, mq-deadline, kyber, bfq), any other after them
/// by name; a directory without `meta.json` is not a recording; a recording given itself
/// is the only one; a tree without any is refused naming it.
#[test]
fn recordings_are_found_mix_by_mix_in_the_tables_scheduler_order() {
    let root = tempfile::tempdir().unwrap();
    let put = |rel: &str| {
        let d = root.path().join(rel);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("meta.json"), "{}").unwrap();
    };
    for s in ["bfq", "cfq", "kyber", "mq-deadline", "none"] {
        put(&format!("b-mix/{s}"));
    }
    put("a-mix/bfq");
    put("c-solo");
    std::fs::create_dir_all(root.path().join("a-mix/notes")).unwrap();
    let found: Vec<String> = find_recordings(root.path())
        .unwrap()
        .iter()
        .map(|p| p.strip_prefix(root.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        found,
        [
            "a-mix/bfq",
            "b-mix/none",
            "b-mix/mq-deadline",
            "b-mix/kyber",
            "b-mix/bfq",
            "b-mix/cfq",
            "c-solo"
        ]
    );
    let one = root.path().join("b-mix/kyber");
    let found = find_recordings(&one).unwrap();
    assert_eq!(found, [one]);
    let empty = tempfile::tempdir().unwrap();
    let e = find_recordings(empty.path()).unwrap_err();
    assert!(e.contains("no recording (meta.json)"), "{e}");
}

/// One write of as many sectors as a request can carry (`u32::MAX` bytes rounded down to a
/// sector: a request's `__data_len` is an `unsigned int`) ending exactly at the device's
/// last sector is a request the kernel can have made (`bio_check_eod` refuses only a bio
/// past the end), and the replay takes it; one sector less of device, and it is refused
/// naming the trace's line of its dispatch and the field.
#[test]
fn a_request_as_large_as_the_kernel_allows_ending_at_the_last_sector_is_taken() {
    const LARGEST: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 W 0 + 8388607 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 W 4294966784 () 0 + 8388607 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 W 4294966784 () 0 + 8388607 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 W () 0 + 8388607 be,0,4 [0]
";
    let t = read(LARGEST);
    assert_eq!(t.requests[0].sectors as u64, MAX_REQUEST_SECTORS);
    let mut rec = Recording {
        dir: PathBuf::from("rec"),
        meta: meta("mq-deadline"),
    };
    rec.meta.trace.file = "trace.txt".into();
    rec.meta.device.bytes = MAX_REQUEST_SECTORS * 512;
    assert_eq!(check_requests(&rec, &t), Ok(()));
    rec.meta.device.bytes -= 512;
    let e = check_requests(&rec, &t).unwrap_err();
    assert!(
        e.contains("trace.txt:3") && e.contains("sector") && e.contains("past the end"),
        "{e}"
    );
}

/// Both of a recording's tables: per recording the kernel's decisions and the share agreed,
/// and per scheduler the totals, each share of its own count (BATCH under `none`: 1 of 3
/// decisions, 1 of 2 real choices).
#[test]
fn the_agreement_table_totals_each_scheduler_over_its_own_decisions() {
    let table = markdown(&[row("mq-deadline"), row("none")]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("| batch | none | none | 3 | 33.3% | 1/2 | 0 | 1 |")),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("| mq-deadline | 3 | 100.0% | 2/2 (100.0%) |")),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("| none | 3 | 33.3% | 1/2 (50.0%) |")),
        "{table}"
    );
}

/// A divergence shows both sides' queued requests with the one each chose in brackets:
/// at BATCH's decision 1 the kernel took 300 (#2) and `none` 500 (#1); at most `limit` are
/// shown.
#[test]
fn a_divergence_brackets_the_request_each_side_chose() {
    let r = row("none");
    let all = divergences(&r, 10);
    assert_eq!(all.len(), 2, "{all:?}");
    let first = &all[0];
    assert!(first.starts_with("batch/none decision 1:"), "{first}");
    let (kernel, ours) = first.split_once("\n  ours:").unwrap();
    assert!(
        kernel.contains("#1 fio:10 R 500+8") && kernel.contains("[#2 fio:10 R 300+8"),
        "{first}"
    );
    assert!(
        ours.contains("[#1 fio:10 R 500+8") && !ours.contains("[#2"),
        "{first}"
    );
    assert_eq!(divergences(&r, 1).len(), 1);
}

/// BATCH compared at each pace, as [`diff_recording`] gives a row.
fn row(sched: &str) -> Row {
    row_of(BATCH, "batch", sched)
}

/// `trace` compared at each pace under `sched`, as [`diff_recording`] gives mix `mix`'s row.
fn row_of(trace: &str, mix: &str, sched: &str) -> Row {
    let t = read(trace);
    let at = |pace| {
        let opts = DiffOptions {
            pace,
            ..DiffOptions::default()
        };
        diff(&t, &meta(sched), &opts).unwrap()
    };
    Row {
        mix: mix.into(),
        scheduler: sched.into(),
        kernel_pace: at(Pace::Kernel),
        device_pace: at(Pace::Device),
        early: at(Pace::Early),
        requests: t.requests.clone(),
        assembly: t.stats.clone(),
    }
}

/// A recording's row holds its replay at each of the three paces, each as
/// [`diff_with_log`] gives it at that pace: on the corpus's `batches/mq-deadline` the
/// device's pace (every arrival dispatched at once, up to the depth) decides otherwise than
/// the kernel's. Our policy's notes are kept for the kernel's pace only.
#[test]
fn a_recordings_row_replays_it_at_each_pace() {
    let dir = corpus().join("kernel/batches/mq-deadline");
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let l = load(&dir).unwrap();
    let at = |pace| {
        let opts = DiffOptions {
            pace,
            ..DiffOptions::default()
        };
        diff_with_log(
            &l.trace,
            &l.rec.meta,
            &opts,
            &l.bfq_log,
            &l.prios,
            &l.groups,
        )
        .unwrap()
    };
    assert_eq!(row.kernel_pace.ours, at(Pace::Kernel).ours);
    assert_eq!(row.device_pace.ours, at(Pace::Device).ours);
    assert_eq!(row.early.kernel, at(Pace::Early).kernel);
    assert_ne!(row.device_pace.ours, row.kernel_pace.ours);
    assert_ne!(row.early.kernel, row.kernel_pace.kernel);
    // Our policy's notes, when asked for, are of the agreement's replay only: bfq's inject
    // limit's history at the kernel's pace.
    let notes = DiffOptions {
        notes: true,
        ..DiffOptions::default()
    };
    let row = diff_recording(&corpus().join("kernel/batches/bfq"), &notes).unwrap();
    assert!(!row.kernel_pace.notes.is_empty());
    assert!(row.device_pace.notes.is_empty() && row.early.notes.is_empty());
}

/// The SCSI disk majors (include/uapi/linux/major.h: `SCSI_DISK0_MAJOR` 8,
/// `SCSI_DISK1_MAJOR`..`SCSI_DISK7_MAJOR` 65-71, `SCSI_DISK8_MAJOR`..`SCSI_DISK15_MAJOR`
/// 128-135), whose driver hands out a dispatch budget (`scsi_mq_get_budget`) before blk-mq
/// asks the scheduler; the loop device (7) and NVMe (259) are not among them.
#[test]
fn the_scsi_disk_majors_are_the_ones_with_a_dispatch_budget() {
    for major in [8, 65, 68, 71, 128, 131, 135] {
        assert!(scsi_major(major), "{major}");
    }
    for major in [0, 7, 9, 64, 72, 127, 136, 259] {
        assert!(!scsi_major(major), "{major}");
    }
}

/// `--resolve`'s search stops at its budget of replays, the recorded order's included, and
/// says so: on the held-out `deep-seq-readers-qd256-merging-beside-writer-defaults` round 2
/// mq-deadline recording the whole search makes three replays (the recorded order, one move
/// kept, one tried after it); a budget of three is then enough, one stops before the move.
/// (Until 4 December 2026 this was `asyncdepth-12`'s, whose one move the replay no longer
/// needs: a submitter's own run is taken to begin at its insertion, `unordered`.)
#[test]
fn resolve_stops_at_its_budget_of_replays() {
    let dir = corpus().join(
        "kernel-pending/deep-seq-readers-qd256-merging-beside-writer-defaults-round2/mq-deadline",
    );
    let r = resolve(&dir, &DiffOptions::default(), 50).unwrap();
    assert_eq!((r.replays, r.exhausted, r.moves.len()), (3, false, 1));
    let r = resolve(&dir, &DiffOptions::default(), 3).unwrap();
    assert_eq!((r.replays, r.exhausted, r.moves.len()), (3, false, 1));
    let r = resolve(&dir, &DiffOptions::default(), 1).unwrap();
    assert_eq!((r.replays, r.exhausted, r.moves.len()), (1, true, 0));
}

/// bfq charges an async queue out of weight raising three times a request's sectors
/// (`bfq_serv_to_charge`, `bfq_async_charge_factor`), a sync queue the sectors: the async
/// queue's note `bfqq_served 24 secs` is the 8-sector write's, not the 24-sector read the
/// same CPU issued first, which a sync queue would have been charged 24 for.
#[test]
fn an_async_queues_charge_is_three_times_its_requests_sectors() {
    const TRACE: &str = "\
 fio-11 [000] ..... 1.000001: block_getrq: 7,0 R 5000 + 24 [fio]
 fio-11 [000] d..1. 1.000002: block_rq_insert: 7,0 R 12288 () 5000 + 24 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_getrq: 7,0 W 100 + 8 [fio]
 fio-10 [000] d..1. 1.000004: block_rq_insert: 7,0 W 4096 () 100 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000020: block_rq_issue: 7,0 R 12288 () 5000 + 24 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000021: block_rq_issue: 7,0 W 4096 () 100 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000040: block_rq_complete: 7,0 R () 5000 + 24 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000041: block_rq_complete: 7,0 W () 100 + 8 be,0,4 [0]
";
    const LOG: &str = "\
 kworker/0:1H-58 [000] d..1. 1.000010: 7,0 1,0 m N bfq dispatch requests: 2 busy queues
 kworker/0:1H-58 [000] d..1. 1.000010: 7,0 1,0 m N bfq10A select_queue: returned this queue
 kworker/0:1H-58 [000] d..1. 1.000010: 7,0 1,0 m N bfq10A bfqq_served 24 secs
";
    let t = read(TRACE);
    let order = BfqLogTimes::read(&t, &read(LOG))
        .order
        .expect("the log shows a choice");
    let write = t.requests.iter().position(|r| r.sector == 100).unwrap();
    let read_rq = t.requests.iter().position(|r| r.sector == 5000).unwrap();
    assert_eq!(order.matched, 1);
    assert_eq!(order.decided[write], Some(Nanos(1_000_010_000)));
    assert_eq!(order.decided[read_rq], None);
}

/// A choice bfq's log shows in the same microsecond as an insertion the trace shows is
/// placed after it (the trace's events of a time come first, [`LogOrder::queue_log`]): the
/// read at 200 inserted at 12 us is queued at the choice of 1000 noted at 12 us.
#[test]
fn a_choice_noted_in_an_insertions_microsecond_comes_after_it() {
    const TRACE: &str = "\
 fio-10 [000] ..... 1.000009: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-10 [000] d..1. 1.000010: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000011: block_getrq: 7,0 R 200 + 8 [fio]
 fio-11 [001] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 200 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000030: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000031: block_rq_issue: 7,0 R 4096 () 200 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000051: block_rq_complete: 7,0 R () 200 + 8 be,0,4 [0]
";
    const LOG: &str = "\
 kworker/0:1H-58 [000] d..1. 1.000012: 7,0 1,0 m N bfq dispatch requests: 2 busy queues
 kworker/0:1H-58 [000] d..1. 1.000012: 7,0 1,0 m N bfq10S select_queue: returned this queue
 kworker/0:1H-58 [000] d..1. 1.000012: 7,0 1,0 m N bfq10S bfqq_served 8 secs
";
    let t = read(TRACE);
    let order = BfqLogTimes::read(&t, &read(LOG))
        .order
        .expect("the log shows a choice");
    assert_eq!(
        order.queue_log,
        [
            QueueEvent::Arrive(0),
            QueueEvent::Arrive(1),
            QueueEvent::Dispatch(0),
            QueueEvent::Dispatch(1)
        ]
    );
}

/// A task slept for a scheduler tag when its request's `block_getrq` (which fires once
/// `blk_mq_get_tag` returned one) came more than 30 us after its bio's `block_bio_queue`;
/// otherwise the two are the few microseconds `__blk_mq_alloc_requests` takes. The replay
/// then starts the allocation at the bio and hands the tag over at `block_getrq`
/// (`Allocation::Sleeping`).
#[test]
fn a_task_slept_for_its_tag_when_getrq_came_over_30_us_after_its_bio() {
    let q = Nanos(1_000_000_000);
    assert!(!replay::slept(q, q + Nanos::from_us(3)));
    assert!(!replay::slept(q, q + Nanos::from_us(30)));
    assert!(replay::slept(q, q + Nanos(30_001)));
    assert!(replay::slept(q, q + Nanos::from_us(1000)));
    assert!(!replay::slept(q + Nanos::from_us(5), q));
}

/// A request inserted on its own (the next insertion is another task's) is followed by its
/// own queue run (`blk_mq_run_hw_queue` after `blk_mq_insert_request`), and with the loop
/// device's one driver tag taken that run still takes mq-deadline's choice, the only request
/// queued, to wait on `hctx->dispatch` (`__blk_mq_do_dispatch_sched`, then
/// `blk_mq_dispatch_rq_list` finds no driver tag): the write at 5000 goes out first when
/// the tag comes back, though by then the write at 2000, nearer the head after 1000
/// (`deadline_from_pos`), is queued. The write at 2000 was allocated (`block_getrq`) before
/// 5000's insertion, by another task on another CPU: the replay must tell the lone
/// insertion from a batch's first when the next event is already an insertion. Only a plug's
/// batch of one task's insertions waits for its last one before its run (`a_plugs_batch_is_inserted_whole_before_its_run_takes_a_request_to_wait_for_a_tag`
/// in tests/kernel_diff.rs).
#[test]
fn a_lone_insertion_with_the_driver_tags_taken_parks_its_request_at_once() {
    const PARKED: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 W 1000 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 W 4096 () 1000 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 W 4096 () 1000 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000004: block_getrq: 7,0 W 5000 + 8 [fio]
 fio-12 [000] ..... 1.000005: block_getrq: 7,0 W 2000 + 8 [fio]
 fio-11 [001] ...1. 1.000006: block_rq_insert: 7,0 W 4096 () 5000 + 8 be,0,4 [fio]
 fio-12 [000] ...1. 1.000007: block_rq_insert: 7,0 W 4096 () 2000 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 W () 1000 + 8 be,0,4 [0]
 kworker/0:1H-58 [000] ..... 1.000052: block_rq_issue: 7,0 W 4096 () 5000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000090: block_rq_complete: 7,0 W () 5000 + 8 be,0,4 [0]
 kworker/0:1H-58 [000] ..... 1.000092: block_rq_issue: 7,0 W 4096 () 2000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000130: block_rq_complete: 7,0 W () 2000 + 8 be,0,4 [0]
";
    let t = read(PARKED);
    let mut m = meta("mq-deadline");
    m.iosched.remove("read_expire");
    m.device.hw_queue_depth = Some(1);
    let d = diff(&t, &m, &DiffOptions::default()).unwrap();
    assert_eq!(
        d.kernel[1],
        Decision {
            queued: vec![1, 2],
            chosen: 1
        }
    );
    assert_eq!(d.agreement.first_divergence, None, "{:?}", d.ours);
    // With a second driver tag nothing is parked, and ours takes 2000 first.
    m.device.hw_queue_depth = Some(2);
    let d = diff(&t, &m, &DiffOptions::default()).unwrap();
    assert_eq!(d.ours[1].chosen, 2);
}

/// Two reads of one task, each inserted and issued alone, the second after the first
/// completed: a choice of one request at any pace.
const SERIAL: &str = "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
 fio-10 [000] ..... 1.000030: block_getrq: 7,0 R 108 + 8 [fio]
 fio-10 [000] ...1. 1.000031: block_rq_insert: 7,0 R 4096 () 108 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000032: block_rq_issue: 7,0 R 4096 () 108 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 108 + 8 be,0,4 [0]
";

/// The per-scheduler totals sum each column over the scheduler's recordings: BATCH and
/// SERIAL under `none` are 5 decisions, 1 + 2 agreed at the kernel's pace. At the device's
/// pace ours dispatches each read as it arrives: BATCH's three, which the kernel's run
/// found queued together, are never its sets (0 of 3), SERIAL's two, each alone, are
/// (2 of 2), so 40.0%. Decided earliest (each dispatch moved back to just after its
/// request's insertion, [`Pace::Early`]), BATCH's 500 and 300 are queued together, the
/// kernel takes 300 and `none` 500 (1 of 3), SERIAL agrees (2 of 2): 60.0%. mq-deadline,
/// which takes 300 (`deadline_from_pos`), agrees on BATCH's 3 at both the kernel's pace and
/// decided earliest.
#[test]
fn the_agreement_tables_totals_sum_each_pace_over_the_schedulers_recordings() {
    let table = markdown(&[
        row("mq-deadline"),
        row("none"),
        row_of(SERIAL, "serial", "none"),
    ]);
    let totals: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("| scheduler |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(
        totals,
        [
            "| mq-deadline | 3 | 100.0% | 2/2 (100.0%) | 0 | 0.0% | 100.0% |",
            "| none | 5 | 60.0% | 1/2 (50.0%) | 0 | 40.0% | 60.0% |",
        ],
        "{table}"
    );
}

/// A recording's directory whose `meta.json` cannot be looked up for another reason than
/// its absence is an error naming the file and why, not "no recording": a directory reached
/// through a loop of symbolic links (ELOOP) or through a regular file (ENOTDIR). A
/// directory without one, or not there at all, is not a recording.
#[test]
fn a_meta_json_that_cannot_be_looked_up_is_an_error_not_no_recording() {
    let root = tempfile::tempdir().unwrap();
    let looped = root.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let file = root.path().join("trace.txt");
    std::fs::write(&file, "").unwrap();
    for (dir, why) in [(&looped, "symbolic links"), (&file, "directory")] {
        let e = has_meta(dir).unwrap_err();
        let named = dir.join("meta.json").display().to_string();
        assert!(
            e.starts_with(&format!("{named}: cannot look it up")) && e.contains(why),
            "{e}"
        );
    }
    assert_eq!(has_meta(root.path()), Ok(false));
    assert_eq!(has_meta(&root.path().join("gone")), Ok(false));
}

/// A bfq log is taken as the trace's when its notes lie within the trace's dispatches, the
/// first and last included: a note in the microsecond of the first `block_rq_issue` (bfq
/// notes its choice in `bfq_dispatch_request`, and the driver issues the request in the
/// same microsecond) or of the last is the trace's; one a microsecond before the first or
/// after the last is another run's, refused naming the log.
#[test]
fn a_bfq_logs_notes_may_start_and_end_at_the_traces_dispatches() {
    let source = corpus().join("kernel/batches/bfq");
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    for f in ["trace.txt.gz", "job.fio", "fio.out.gz"] {
        std::fs::copy(source.join(f), dir.join(f)).unwrap();
    }
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(source.join("meta.json")).unwrap()).unwrap();
    meta["trace"]["bfq_log"] = "bfq-log.txt".into();
    std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    let trace = Recording::open(&dir).unwrap().trace().unwrap();
    let first = trace.dispatches.iter().map(|d| d.time).min().unwrap();
    let last = trace.dispatches.iter().map(|d| d.time).max().unwrap();
    let with_note_at = |t: Nanos| {
        let note = format!(
            " kworker/0:1H-58 [000] d..1. {}.{:06}: 7,0 1,0 m N bfq dispatch requests: 1 busy queues\n",
            t.0 / 1_000_000_000,
            t.0 % 1_000_000_000 / 1000
        );
        std::fs::write(dir.join("bfq-log.txt"), note).unwrap();
        load(&dir).map(|_| ())
    };
    let us = Nanos::from_us(1);
    assert_eq!(with_note_at(first), Ok(()));
    assert_eq!(with_note_at(last), Ok(()));
    for outside in [first - us, last + us] {
        let e = with_note_at(outside).unwrap_err();
        assert!(
            e.contains("bfq-log.txt") && e.contains("a log of another run"),
            "{e}"
        );
    }
}

/// `--resolve` reads a queue run as starting at the earliest of its task's issues on its CPU
/// just before the one moved, with no insertion by that task between: one run's
/// `__blk_mq_do_dispatch_sched` dequeues its requests before `blk_mq_dispatch_rq_list`
/// issues them one by one, while a task that inserts again (`blk_mq_insert_request`) runs
/// the queue again after it (`blk_mq_run_hw_queue`), a new run. fio-10 on CPU 0 issues 100,
/// inserts and issues 200 (a run of its own, from 200's issue), inserts 300 and 400 and
/// issues both (one run, from 300's issue; CPU 1's issue between them is another run's);
/// kblockd's issues are never chained.
#[test]
fn a_queue_run_starts_at_its_tasks_issues_since_its_last_insertion() {
    let t = read(
        "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000004: block_getrq: 7,0 R 200 + 8 [fio]
 fio-10 [000] ...1. 1.000005: block_rq_insert: 7,0 R 4096 () 200 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000006: block_rq_issue: 7,0 R 4096 () 200 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000008: block_getrq: 7,0 R 300 + 8 [fio]
 fio-10 [000] ..... 1.000009: block_getrq: 7,0 R 400 + 8 [fio]
 fio-10 [000] ...1. 1.000010: block_rq_insert: 7,0 R 4096 () 300 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000011: block_rq_insert: 7,0 R 4096 () 400 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000011: block_getrq: 7,0 R 900 + 8 [fio]
 fio-11 [001] ...1. 1.000011: block_rq_insert: 7,0 R 4096 () 900 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000012: block_rq_issue: 7,0 R 4096 () 300 + 8 be,0,4 [fio]
 fio-11 [001] ..... 1.000012: block_rq_issue: 7,0 R 4096 () 900 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000013: block_rq_issue: 7,0 R 4096 () 400 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000020: block_getrq: 7,0 R 500 + 8 [fio]
 fio-10 [000] ..... 1.000021: block_getrq: 7,0 R 600 + 8 [fio]
 fio-10 [000] ...1. 1.000022: block_rq_insert: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-10 [000] ...1. 1.000022: block_rq_insert: 7,0 R 4096 () 600 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000030: block_rq_issue: 7,0 R 4096 () 500 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000031: block_rq_issue: 7,0 R 4096 () 600 + 8 be,0,4 [kworker/0:1H]
",
    );
    let start = |sector: u64| {
        let i = t.requests.iter().position(|r| r.sector == sector).unwrap();
        let issue = t.first_dispatch(i).unwrap();
        (run_start(&t, issue).0 - 1_000_000_000) / 1000
    };
    assert_eq!(
        [100, 200, 300, 400, 900, 500, 600].map(start),
        [3, 6, 12, 12, 12, 30, 31]
    );
}

/// A `meta.json` that is there but leads to no file is an error naming it and saying why,
/// each case in its own words: a symbolic link to itself (ELOOP from `stat`) a loop to point
/// at the recording's `meta.json`, a link to nothing the missing target, a directory not a
/// file. A `meta.json` that is a file, or a link to one, is a recording.
#[test]
fn a_meta_json_leading_to_no_file_is_an_error_saying_why() {
    let root = tempfile::tempdir().unwrap();
    let rec = |name: &str| {
        let d = root.path().join(name);
        std::fs::create_dir(&d).unwrap();
        (d.join("meta.json"), d)
    };
    let (meta, looped) = rec("looped");
    std::os::unix::fs::symlink(&meta, &meta).unwrap();
    let (meta, dangling) = rec("dangling");
    std::os::unix::fs::symlink(root.path().join("gone.json"), &meta).unwrap();
    let (meta, directory) = rec("directory");
    std::fs::create_dir(&meta).unwrap();
    for (dir, why) in [
        (&looped, "a loop of symbolic links"),
        (&dangling, "gone.json, which does not exist"),
        (&directory, "not a file"),
    ] {
        let e = has_meta(dir).unwrap_err();
        let named = dir.join("meta.json").display().to_string();
        assert!(
            e.starts_with(&format!("{named}: ")) && e.contains(why),
            "{e}"
        );
    }
    let (meta, file) = rec("file");
    std::fs::write(&meta, "{}").unwrap();
    let (meta, linked) = rec("linked");
    std::os::unix::fs::symlink(file.join("meta.json"), &meta).unwrap();
    assert_eq!((has_meta(&file), has_meta(&linked)), (Ok(true), Ok(true)));
}

/// A discard is held to the recorded queue's `discard_max_bytes` (the larger of it and
/// `discard_max_hw_bytes`), in sectors of 512 bytes: `bio_split_discard` splits a discard
/// at that many bytes. With 1 MiB recorded, a discard of 2048 sectors is taken, one of 2056
/// is refused naming the trace's line of its dispatch, the field and the limit in sectors.
#[test]
fn a_discard_is_held_to_the_queues_discard_max_bytes_in_sectors() {
    let discard = |sectors: u32| {
        read(&format!(
            "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 D 0 + {sectors} [fio]
 fio-10 [000] ...1. 1.000002: block_rq_insert: 7,0 D {bytes} () 0 + {sectors} be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 D {bytes} () 0 + {sectors} be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 D () 0 + {sectors} be,0,4 [0]
",
            bytes = sectors * 512
        ))
    };
    let mut rec = Recording {
        dir: PathBuf::from("rec"),
        meta: meta("mq-deadline"),
    };
    rec.meta.trace.file = "trace.txt".into();
    rec.meta.device.bytes = 1 << 30;
    for key in ["discard_max_bytes", "discard_max_hw_bytes"] {
        rec.meta.queue.insert(key.into(), "1048576".into());
    }
    assert_eq!(check_requests(&rec, &discard(2048)), Ok(()));
    let e = check_requests(&rec, &discard(2056)).unwrap_err();
    assert!(
        e.contains("trace.txt:3") && e.contains("sectors") && e.contains("limit of 2048 sectors"),
        "{e}"
    );
}

/// `--resolve` moves a decision back past at most eight of the events the trace does not
/// order with its issue (`MOST_PASSED`), one more at a time: fio-10 on CPU 0 inserted 100
/// and issued it at 12 us, while fio-11 on CPU 1 inserted ten requests at 2-11 us, all
/// within 10 us of the issue (`UNORDERED_ISSUE_GAP`); the moves pass 1 to 8 of them, the
/// nearest first, and none passes nine or ten.
#[test]
fn a_decision_is_moved_back_past_at_most_eight_unordered_insertions() {
    let mut text = String::from(
        " fio-10 [000] ..... 1.000000: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] ...1. 1.000001: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
",
    );
    for k in 0..10u64 {
        let sector = 1000 + 8 * k;
        text += &format!(
            " fio-11 [001] ..... 1.{:06}: block_getrq: 7,0 R {sector} + 8 [fio]
 fio-11 [001] ...1. 1.{:06}: block_rq_insert: 7,0 R 4096 () {sector} + 8 be,0,4 [fio]
",
            2 + k,
            2 + k
        );
    }
    text += " fio-10 [000] ..... 1.000012: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]\n";
    let t = read(&text);
    let issued = t.requests.iter().position(|r| r.sector == 100).unwrap();
    let p = t
        .queue_log
        .iter()
        .position(|e| *e == QueueEvent::Dispatch(issued))
        .unwrap();
    assert_eq!(p, 11);
    let moves = moves_of(&t, &[], &t.queue_log, 0);
    assert_eq!(
        moves.iter().map(|(passed, _)| *passed).collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    for (passed, log) in &moves {
        assert_eq!(log[p - passed], QueueEvent::Dispatch(issued), "{passed}");
    }
}

/// The Kendall distance the table prints per recording, windowed over the kernel's order:
/// BATCH under `none` dispatches 100, 500, 300 where the kernel took 100, 300, 500, one pair
/// of three inverted in its one window of 32, so both the mean and the largest windowed
/// distance are 1/3; mq-deadline's order is the kernel's, 0.
#[test]
fn the_largest_windowed_kendall_distance_is_the_windows_inversions() {
    let t = read(BATCH);
    let n = diff(&t, &meta("none"), &DiffOptions::default()).unwrap();
    assert_eq!(n.kendall, [1.0 / 3.0]);
    assert_eq!((n.kendall_mean(), n.kendall_max()), (1.0 / 3.0, 1.0 / 3.0));
    let d = diff(&t, &meta("mq-deadline"), &DiffOptions::default()).unwrap();
    assert_eq!((d.kendall.as_slice(), d.kendall_max()), (&[0.0][..], 0.0));
}

/// A task's `[bfq_limit_depth]` note in the microsecond of its bio's `block_bio_queue` is
/// that bio's own (`__blk_mq_alloc_requests` runs `bfq_limit_depth` after the bio is
/// queued): its request was not taken from a plug's batch of tags. Only a request whose
/// task's last note came before its bio was queued is one: here the write after the read.
#[test]
fn a_depth_note_in_the_microsecond_of_the_bios_queueing_is_its_own() {
    let t = read(
        " fio-10 [000] ..... 1.000779: block_bio_queue: 7,0 R 58000 + 16 [fio]
 fio-10 [000] ..... 1.000787: block_getrq: 7,0 R 58000 + 16 [fio]
 fio-10 [000] ..... 1.000790: block_bio_queue: 7,0 WS 40896 + 16 [fio]
 fio-10 [000] ..... 1.000791: block_getrq: 7,0 WS 40896 + 16 [fio]
",
    );
    let note = |us: u64| {
        (
            Nanos::from_us(1_000_000 + us),
            "7,0 1,0 m N bfq [bfq_limit_depth] wr_busy 1 sync 1 depth 64".to_string(),
        )
    };
    assert_eq!(batch_allocated(&t, &[note(779)], &[10]), [false, true]);
    assert_eq!(batch_allocated(&t, &[note(778)], &[10]), [true, true]);
}

/// mq-deadline, an insertion below a busy priority level whose queue run came after the
/// busy level's request completed (kblockd's run 9 us after the insertion, the real-time
/// read completing between): the run found one level with requests (`dd_queued`), so
/// `dd_dispatch_request` (6.18) made no aged probe (`dd_dispatch_prio_aged_requests` asks
/// only when two levels have requests) and chose a direction once, in the run that
/// dispatched. With `writes_starved` 1, that first choice between the best-effort read 1000
/// and write 200 is the read (`dd->starved++ >= writes_starved` is 0 >= 1: false), then
/// the write. The replay takes a dispatch within 20 us of an insertion as that insertion's run
/// and asks ours only there; asked at the insertion as well (the real-time read still in
/// flight there), ours would probe best effort, count one read batch passing the write
/// (`starved` 1) and then take the write first.
#[test]
fn an_insertions_run_that_dispatches_within_20_us_is_not_also_an_empty_run() {
    const COMPLETED_BETWEEN: &str = "\
 fio-21 [000] ..... 1.000010: block_getrq: 7,0 R 9000 + 8 [fio]
 fio-21 [000] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
 fio-21 [000] ..... 1.000013: block_rq_issue: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 9000 + 8 be,0,4 [0]
 fio-20 [001] ..... 1.000100: block_getrq: 7,0 R 5000 + 8 [fio]
 fio-20 [001] d..1. 1.000101: block_rq_insert: 7,0 R 4096 () 5000 + 8 rt,0,0 [fio]
 fio-20 [001] ..... 1.000102: block_rq_issue: 7,0 R 4096 () 5000 + 8 rt,0,0 [fio]
 fio-21 [000] ..... 1.000198: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-21 [000] ..... 1.000199: block_getrq: 7,0 W 200 + 8 [fio]
 fio-21 [000] d..1. 1.000200: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-21 [000] d..1. 1.000201: block_rq_insert: 7,0 W 4096 () 200 + 8 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000205: block_rq_complete: 7,0 R () 5000 + 8 rt,0,0 [0]
 kworker/0:1H-58 [000] ..... 1.000210: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000211: block_rq_issue: 7,0 W 4096 () 200 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000300: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000301: block_rq_complete: 7,0 W () 200 + 8 be,0,4 [0]
";
    let t = read(COMPLETED_BETWEEN);
    let mut m = meta("mq-deadline");
    m.iosched.insert("read_expire".into(), "500".into());
    m.iosched.insert("writes_starved".into(), "1".into());
    let d = diff(&t, &m, &DiffOptions::default()).unwrap();
    let order: Vec<u64> = d.ours.iter().map(|o| t.requests[o.chosen].sector).collect();
    assert_eq!(order, [9000, 5000, 1000, 200]);
    assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
}

/// mq-deadline's idle level waits behind a busy best-effort level as best effort waits
/// behind real time (`dd_rq_ioclass`: IOPRIO_CLASS_IDLE is the third level, DD_IDLE_PRIO):
/// the idle write 200, inserted while the best-effort read 5000 is in flight, gets a run
/// that returns nothing, whose aged probe (`dd_dispatch_prio_aged_requests`, two levels
/// with requests) starts a write batch at the idle level and refuses the young write. When
/// the read has completed, the kernel continues that batch: 200, then the idle reads 1000
/// and 1100. Taken for best effort, the idle insertion would be the busy level's own, its
/// run not replayed, and ours would take 1000 first (its last direction the reads').
#[test]
fn an_idle_insertion_waits_behind_a_busy_best_effort_level() {
    super::tests::blocked_below_a_busy_level("be,0,4", "idle,0,0");
}

/// A request the driver gave back (`block_rq_requeue`) and kblockd inserted again is one
/// arrival for ours, and its second insertion is no queue run of ours: `blk_mq_requeue_work`
/// inserts it at the head (`BLK_MQ_INSERT_AT_HEAD`), into its level's dispatch list with
/// `fifo_time` now, and the run after it (the real-time read 5000 still in flight) asks
/// `dd_dispatch_prio_aged_requests`, whose best-effort step (`__dd_dispatch_request`, 6.18)
/// takes that list's head first, refuses it as young (`started_after`) and returns before
/// choosing a direction: `starved` stays as the run after 1000 and 200's insertion left it
/// (1, one read batch passing the write). When the read has completed, the kernel issues
/// the requeued 3000 again from the dispatch list, then 1000 (`starved` 1 < 2) and 200.
/// Ours, which dispatched 3000 once and holds only 1000 and 200 then, takes 1000 and 200 in
/// that order; asked at the second insertion as well, ours would count a second read batch
/// passing the write (`starved` 2) and take 200 first.
#[test]
fn a_requeued_requests_second_insertion_is_no_arrival_and_no_run_of_ours() {
    const REQUEUED: &str = "\
 fio-22 [000] ..... 1.000005: block_getrq: 7,0 W 9500 + 8 [fio]
 fio-22 [000] d..1. 1.000006: block_rq_insert: 7,0 W 4096 () 9500 + 8 be,0,4 [fio]
 fio-22 [000] ..... 1.000007: block_rq_issue: 7,0 W 4096 () 9500 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000008: block_rq_complete: 7,0 W () 9500 + 8 be,0,4 [0]
 fio-21 [000] ..... 1.000010: block_getrq: 7,0 R 9000 + 8 [fio]
 fio-21 [000] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
 fio-21 [000] ..... 1.000013: block_rq_issue: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 9000 + 8 be,0,4 [0]
 fio-23 [000] ..... 1.000089: block_getrq: 7,0 R 3000 + 8 [fio]
 fio-23 [000] d..1. 1.000090: block_rq_insert: 7,0 R 4096 () 3000 + 8 be,0,4 [fio]
 fio-23 [000] ..... 1.000091: block_rq_issue: 7,0 R 4096 () 3000 + 8 be,0,4 [fio]
 fio-20 [001] ..... 1.000100: block_getrq: 7,0 R 5000 + 8 [fio]
 fio-20 [001] d..1. 1.000101: block_rq_insert: 7,0 R 4096 () 5000 + 8 rt,0,0 [fio]
 fio-20 [001] ..... 1.000102: block_rq_issue: 7,0 R 4096 () 5000 + 8 rt,0,0 [fio]
 fio-21 [000] ..... 1.000298: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-21 [000] ..... 1.000299: block_getrq: 7,0 W 200 + 8 [fio]
 fio-21 [000] d..1. 1.000300: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-21 [000] d..1. 1.000301: block_rq_insert: 7,0 W 4096 () 200 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..s.. 1.000350: block_rq_requeue: 7,0 R () 3000 + 8 be,0,4 [0]
 kworker/0:1H-58 [000] d..1. 1.000351: block_rq_insert: 7,0 R 4096 () 3000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/1-22 [001] ..s.. 1.000500: block_rq_complete: 7,0 R () 5000 + 8 rt,0,0 [0]
 kworker/0:1H-58 [000] ..... 1.000510: block_rq_issue: 7,0 R 4096 () 3000 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000511: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000512: block_rq_issue: 7,0 W 4096 () 200 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000600: block_rq_complete: 7,0 R () 3000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000601: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000602: block_rq_complete: 7,0 W () 200 + 8 be,0,4 [0]
";
    let t = read(REQUEUED);
    let x = t.requests.iter().position(|r| r.sector == 3000).unwrap();
    assert_eq!(t.requests[x].requeues, 1);
    let arrivals = |log: &[QueueEvent]| log.iter().filter(|e| **e == QueueEvent::Arrive(x)).count();
    assert_eq!(arrivals(&t.queue_log), 2);
    let mut m = meta("mq-deadline");
    m.iosched.insert("read_expire".into(), "500".into());
    let d = diff(&t, &m, &DiffOptions::default()).unwrap();
    let order: Vec<u64> = d.ours.iter().map(|o| t.requests[o.chosen].sector).collect();
    assert_eq!(order, [9500, 9000, 3000, 5000, 1000, 200]);
    let kernel: Vec<u64> = d
        .kernel
        .iter()
        .map(|o| t.requests[o.chosen].sector)
        .collect();
    assert_eq!(kernel, [9500, 9000, 3000, 5000, 3000, 1000, 200]);
}

/// `--resolve` replays at the kernel's pace and keeps no notes, whatever the options ask:
/// on `batches/bfq`, whose replay at the kernel's pace notes bfq's inject limit when asked,
/// a resolution asked at the device's pace with notes has the decisions of the kernel's
/// pace in the recorded order and no notes, before and after.
#[test]
fn resolve_replays_at_the_kernels_pace_without_notes_whatever_it_is_asked() {
    let dir = corpus().join("kernel/batches/bfq");
    let asked = DiffOptions {
        pace: Pace::Device,
        notes: true,
        ..DiffOptions::default()
    };
    // The search starts from the recorded order (no decision set aside, kfid55).
    let recorded = DiffOptions {
        set_aside: false,
        ..asked.clone()
    };
    let row = diff_recording(&dir, &recorded).unwrap();
    assert!(!row.kernel_pace.notes.is_empty());
    assert_ne!(row.device_pace.ours, row.kernel_pace.ours);
    let r = resolve(&dir, &asked, 1).unwrap();
    assert_eq!(r.before.ours, row.kernel_pace.ours);
    assert!(r.before.notes.is_empty() && r.after.notes.is_empty());
}

/// `--resolve` chains a run back over at most eight of its task's earlier issues
/// (`MOST_PASSED`): fio-10 on CPU 0 inserts ten reads in a row and issues them one by one
/// with no insertion between, and the tenth's run is read as starting at the second's
/// issue, eight back; the ninth's, eight back too, at the first's.
#[test]
fn a_queue_run_is_chained_back_over_at_most_eight_issues() {
    let mut text = String::new();
    for k in 0..10u64 {
        text += &format!(
            " fio-10 [000] ..... 1.{:06}: block_getrq: 7,0 R {} + 8 [fio]\n",
            1 + k,
            100 * (k + 1)
        );
    }
    for k in 0..10u64 {
        text += &format!(
            " fio-10 [000] ...1. 1.{:06}: block_rq_insert: 7,0 R 4096 () {} + 8 be,0,4 [fio]\n",
            11 + k,
            100 * (k + 1)
        );
    }
    for k in 0..10u64 {
        text += &format!(
            " fio-10 [000] ..... 1.{:06}: block_rq_issue: 7,0 R 4096 () {} + 8 be,0,4 [fio]\n",
            31 + k,
            100 * (k + 1)
        );
    }
    let t = read(&text);
    let start = |sector: u64| {
        let i = t.requests.iter().position(|r| r.sector == sector).unwrap();
        (run_start(&t, t.first_dispatch(i).unwrap()).0 - 1_000_000_000) / 1000
    };
    assert_eq!([100, 200, 900, 1000].map(start), [31, 31, 31, 32]);
}

/// A `meta.json` linked to a path that cannot be followed for another reason than a
/// missing target is not read as a link to nothing: a link through a regular file
/// (`plain/meta.json`, ENOTDIR from `stat`) says it cannot be followed and why, naming the
/// file; "does not exist" is kept for a target that is not there (ENOENT).
#[test]
fn a_meta_json_linked_through_a_file_cannot_be_followed_and_says_why() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("plain"), "").unwrap();
    let dir = root.path().join("through-a-file");
    std::fs::create_dir(&dir).unwrap();
    let meta = dir.join("meta.json");
    std::os::unix::fs::symlink(root.path().join("plain/meta.json"), &meta).unwrap();
    let e = has_meta(&dir).unwrap_err();
    assert!(
        e.starts_with(&format!("{}: cannot follow it: ", meta.display()))
            && !e.contains("does not exist"),
        "{e}"
    );
}

/// mq-deadline, an insertion two levels below requests that wait in the lists: fio-20's
/// plug inserts the real-time read 5000 and the idle write 200 while the best-effort read
/// 9000 is in flight, and its run comes from kblockd 27 us later, after fio-21 inserted the
/// real-time read 4000. `dd_dispatch_request`'s priority loop (6.18) stops at the first
/// level with requests (`dd_queued`), the real-time one, which has requests to dispatch:
/// the run after the idle insertion is not one that returns nothing, so ours is asked at
/// kblockd's issues only and takes 4000 then 5000 (`deadline_from_pos` from the start), as
/// the kernel did. Asked at the idle insertion as well (the real-time level read as not
/// busy, the best-effort level's read in flight as blocking it), ours would dispatch 5000
/// there, alone, and 4000 after it.
#[test]
fn an_insertion_below_a_level_with_listed_requests_is_not_an_empty_run() {
    const LISTED_ABOVE: &str = "\
 fio-30 [001] ..... 1.000001: block_getrq: 7,0 R 9000 + 8 [fio]
 fio-30 [001] d..1. 1.000002: block_rq_insert: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
 fio-30 [001] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
 fio-20 [000] ..... 1.000100: block_getrq: 7,0 R 5000 + 8 [fio]
 fio-20 [000] ..... 1.000101: block_getrq: 7,0 W 200 + 8 [fio]
 fio-20 [000] d..1. 1.000102: block_rq_insert: 7,0 R 4096 () 5000 + 8 rt,0,0 [fio]
 fio-20 [000] d..1. 1.000103: block_rq_insert: 7,0 W 4096 () 200 + 8 idle,0,0 [fio]
 fio-21 [000] ..... 1.000112: block_getrq: 7,0 R 4000 + 8 [fio]
 fio-21 [000] d..1. 1.000113: block_rq_insert: 7,0 R 4096 () 4000 + 8 rt,0,0 [fio]
 kworker/0:1H-58 [000] ..... 1.000130: block_rq_issue: 7,0 R 4096 () 4000 + 8 rt,0,0 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000131: block_rq_issue: 7,0 R 4096 () 5000 + 8 rt,0,0 [kworker/0:1H]
 ksoftirqd/1-22 [001] ..s.. 1.000200: block_rq_complete: 7,0 R () 9000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000201: block_rq_complete: 7,0 R () 4000 + 8 rt,0,0 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000202: block_rq_complete: 7,0 R () 5000 + 8 rt,0,0 [0]
 kworker/0:1H-58 [000] ..... 1.000210: block_rq_issue: 7,0 W 4096 () 200 + 8 idle,0,0 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000300: block_rq_complete: 7,0 W () 200 + 8 idle,0,0 [0]
";
    let t = read(LISTED_ABOVE);
    let mut m = meta("mq-deadline");
    m.iosched.insert("read_expire".into(), "500".into());
    let d = diff(&t, &m, &DiffOptions::default()).unwrap();
    let order: Vec<u64> = d.ours.iter().map(|o| t.requests[o.chosen].sector).collect();
    assert_eq!(order, [9000, 4000, 5000, 200]);
    assert_eq!(d.agreement.share(), 1.0, "{:?} vs {:?}", d.kernel, d.ours);
}

// ---- mutants42 (the kernel replay, shard 2/12) ----

/// A decision bfq's log places is ordered by the log and never moved before another CPU's
/// insertion (`cross_cpu`'s `movable_decision`): the run on CPU 1 notes `bfqq_served` for
/// the read at 1000 at 1.000013, after fio-10 on CPU 0 inserted the read at 200 (.000012;
/// `bfq_insert_request` and `bfq_dispatch_request` both run under `bfqd->lock`, so the log's
/// order is the kernel's), and issues it at .000031. The kernel chose 1000 with both queued;
/// ours (`bfq_choose_req`, the nearer to the head at 0) takes 200: a miss that counts,
/// though ours would agree with the choice taken before 200's insertion, as the issue
/// events alone allow (`bfqs_choices_are_taken_in_its_logs_order_at_its_logs_times`).
#[test]
fn a_decision_bfqs_log_places_after_another_cpus_insertion_is_not_set_aside() {
    const LOG: &str = "\
 fio-10 [000] d..1. 1.000010: 7,0 1,0 m N bfq10S add_request 1
 fio-10 [000] d..1. 1.000012: 7,0 1,0 m N bfq10S add_request 2
 kworker/1:1H-58 [001] d..1. 1.000013: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 kworker/1:1H-58 [001] d..1. 1.000013: 7,0 1,0 m N bfq10S select_queue: returned this queue
 kworker/1:1H-58 [001] d..1. 1.000013: 7,0 1,0 m N bfq10S bfqq_served 8 secs
 fio-10 [000] d..1. 1.000014: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 fio-10 [000] d..1. 1.000014: 7,0 1,0 m N bfq10S select_queue: returned this queue
 fio-10 [000] d..1. 1.000014: 7,0 1,0 m N bfq10S bfqq_served 8 secs
";
    let (t, log) = (read(ISSUED_LATE), read(LOG));
    let times = BfqLogTimes::read(&t, &log);
    let us = |u: u64| Some(Nanos(1_000_000_000 + u * 1000));
    let order = times.order.as_ref().expect("the log shows bfq's choices");
    assert_eq!(order.decided, [us(13), us(14)]);
    let (prios, groups) = (HashMap::new(), ContextGroups::default());
    let d = diff_with_log(
        &t,
        &meta("bfq"),
        &DiffOptions::default(),
        &times,
        &prios,
        &groups,
    )
    .unwrap();
    assert_eq!(d.set_aside, Vec::<usize>::new());
    assert_eq!(d.kernel[0].queued, [0, 1]);
    assert_eq!(d.agreement.first_divergence, Some(0), "{:?}", d.ours);
    assert_eq!((d.agreement.decisions, d.agreement.same_choice), (2, 0));
}

/// bfq learns of a completion at its context's first note at or after it, the completion's
/// own microsecond included: `block_rq_complete` fires in `blk_update_request`, before
/// `blk_mq_free_request` calls `bfq_finish_requeue_request` (6.18), so a note of the same
/// softirq in that microsecond came after it. The read at 100 completes at 1.000010 on CPU
/// 1, whose `schedule dispatch` note is in the same microsecond and whose `put_queue`
/// follows at .000011: bfq saw it at .000010, not at the next note.
#[test]
fn bfq_sees_a_completion_at_a_note_in_the_completions_own_microsecond() {
    let trace = read(
        "\
 fio-10 [000] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [000] d..1. 1.000002: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/1-22 [001] ..s.. 1.000010: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
",
    );
    let log = read(
        "\
 ksoftirqd/1-22 [001] d.s1. 1.000010: 7,0 1,0 m N bfq schedule dispatch
 ksoftirqd/1-22 [001] d.s1. 1.000011: 7,0 1,0 m N bfq10S put_queue: 00000000b 2
",
    );
    let us = |u: u64| Some(Nanos(1_000_000_000 + u * 1000));
    assert_eq!(completions_seen_by_bfq(&trace, &log), [us(10)]);
}

// ---- mutants43 (the kernel replay, shard 4/12) ----

/// Two reads inserted 1 us apart on two CPUs and issued 1 us apart in the other order:
/// which queue run asked mq-deadline first (`dd_dispatch_request` under `dd->lock`, before
/// `block_rq_issue`) is not in the trace, so the pair is settled in ours' order
/// ([`settle_unordered_pairs`]). `cpu` is the CPU that issues 500; on CPU 1 the two issues
/// come from one CPU and are ordered.
fn two_cpus_pair(cpu: u32) -> String {
    format!(
        "\
 fio-10 [001] ..... 1.000001: block_getrq: 7,0 R 100 + 8 [fio]
 fio-10 [001] ...1. 1.000001: block_rq_insert: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 fio-11 [000] ..... 1.000002: block_getrq: 7,0 R 500 + 8 [fio]
 fio-11 [000] ...1. 1.000002: block_rq_insert: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-11 [{cpu:03}] ..... 1.000003: block_rq_issue: 7,0 R 4096 () 500 + 8 be,0,4 [fio]
 fio-10 [001] ..... 1.000004: block_rq_issue: 7,0 R 4096 () 100 + 8 be,0,4 [fio]
 ksoftirqd/0-14 [000] ..s.. 1.000020: block_rq_complete: 7,0 R () 500 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000022: block_rq_complete: 7,0 R () 100 + 8 be,0,4 [0]
"
    )
}

/// `--divergences` says how many pairs were settled in ours' order, and under what gap,
/// before the decisions it lists, and only where there are any: issued by two CPUs the pair
/// is one line and no divergence; issued by one CPU there is no such line, and decisions 0
/// and 1 are listed (the kernel took 500 first, ours' sorted pass 100).
#[test]
fn the_divergences_count_the_pairs_settled_in_ours_order_where_there_are_any() {
    let two = divergences(&row_of(&two_cpus_pair(0), "pair", "mq-deadline"), 5);
    assert_eq!(
        two,
        [
            "pair/mq-deadline: 1 pair(s) of decisions issued by two CPUs within 10 us taken in \
          our order (the trace cannot order them)"
        ]
    );
    let one = divergences(&row_of(&two_cpus_pair(1), "pair", "mq-deadline"), 5);
    assert_eq!(one.len(), 2, "{one:?}");
    assert!(
        one[0].starts_with("pair/mq-deadline decision 0:"),
        "{one:?}"
    );
    assert!(
        one[1].starts_with("pair/mq-deadline decision 1:"),
        "{one:?}"
    );
}

/// A choice of bfq's noted in the microsecond of its CPU's next issue is that issue's
/// request ([`LogOrder::read`]: the request the note's CPU issued first at or after the
/// note): `blk_mq_start_request` fires `block_rq_issue` once `__blk_mq_do_dispatch_sched`
/// has taken the request under `bfqd->lock`, the note's lock, within the same microsecond
/// when the round took one request. fio-10's note at 30 us is its read at 1000, issued at
/// 30 us, not its read at 2000 issued at 31 us, which no note placed.
#[test]
fn a_choice_noted_in_its_issues_microsecond_is_that_issues_request() {
    const TRACE: &str = "\
 fio-10 [000] ..... 1.000009: block_getrq: 7,0 R 1000 + 8 [fio]
 fio-10 [000] d..1. 1.000010: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
 fio-10 [000] ..... 1.000011: block_getrq: 7,0 R 2000 + 8 [fio]
 fio-10 [000] d..1. 1.000012: block_rq_insert: 7,0 R 4096 () 2000 + 8 be,0,4 [fio]
 kworker/0:1H-58 [000] ..... 1.000030: block_rq_issue: 7,0 R 4096 () 1000 + 8 be,0,4 [kworker/0:1H]
 kworker/0:1H-58 [000] ..... 1.000031: block_rq_issue: 7,0 R 4096 () 2000 + 8 be,0,4 [kworker/0:1H]
 ksoftirqd/0-14 [000] ..s.. 1.000050: block_rq_complete: 7,0 R () 1000 + 8 be,0,4 [0]
 ksoftirqd/0-14 [000] ..s.. 1.000051: block_rq_complete: 7,0 R () 2000 + 8 be,0,4 [0]
";
    const LOG: &str = "\
 kworker/0:1H-58 [000] d..1. 1.000030: 7,0 1,0 m N bfq dispatch requests: 1 busy queues
 kworker/0:1H-58 [000] d..1. 1.000030: 7,0 1,0 m N bfq10S select_queue: returned this queue
 kworker/0:1H-58 [000] d..1. 1.000030: 7,0 1,0 m N bfq10S bfqq_served 8 secs
";
    let t = read(TRACE);
    let order = BfqLogTimes::read(&t, &read(LOG))
        .order
        .expect("the log shows a choice");
    assert_eq!((order.notes, order.matched), (1, 1));
    assert_eq!(order.decided, [Some(Nanos::from_us(1_000_030)), None]);
}
