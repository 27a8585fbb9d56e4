//! The kernel corpus replayed into our schedulers (issue 27's `kernel-diff`): every recording
//! of tests/data/kernel/MIX/SCHED through our policy of the same name, without root. Prints
//! the agreement table (the one in docs/kernel-agreement.md) and the divergences, and fails when
//! agreement drops below what was measured.

use std::path::{Path, PathBuf};

use elevator_workload::kernel_diff::{diff_recording, divergences, find_recordings, markdown};
use elevator_workload::kernel_diff::{resolve, DiffOptions, Row};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel")
}

fn rows() -> Vec<Row> {
    find_recordings(&corpus())
        .unwrap()
        .iter()
        .map(|d| diff_recording(d, &DiffOptions::default()).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Issue 27's figures for one scheduler, in per cent of the kernel's dispatch decisions.
struct Bars {
    scheduler: &'static str,
    /// Issue 27's target over the corpus; a fresh recording's target is this less 2 points.
    target: f64,
    /// The corpus figure each fresh recording is held to within 2 points (measured over the
    /// first corpus when the fresh sets began).
    corpus_figure: f64,
    /// The floor over the whole `corpus` set: as measured less a point.
    corpus_floor: f64,
}

const BARS: [Bars; 4] = [
    Bars {
        scheduler: "none",
        target: 100.0,
        corpus_figure: 100.0,
        corpus_floor: 100.0,
    },
    Bars {
        scheduler: "mq-deadline",
        target: 99.0,
        corpus_figure: 99.0,
        corpus_floor: 99.0,
    },
    Bars {
        scheduler: "kyber",
        target: 97.0,
        corpus_figure: 99.6,
        corpus_floor: 99.0,
    },
    Bars {
        scheduler: "bfq",
        target: 90.0,
        corpus_figure: 97.8,
        corpus_floor: 96.8,
    },
];

fn bars(sched: &str) -> &'static Bars {
    BARS.iter()
        .find(|b| b.scheduler == sched)
        .unwrap_or_else(|| panic!("no figures for scheduler {sched}"))
}

/// One row of tests/data/kernel-floors.tsv.
struct Floor {
    mix: String,
    scheduler: String,
    floor: f64,
    set: String,
    reason: String,
}

impl Floor {
    fn fresh(&self) -> bool {
        self.set != "corpus"
    }

    /// What the recording is held to unless its row says why not: issue 27's target for a
    /// corpus recording, the corpus figure less 2 for a fresh one.
    fn bar(&self) -> f64 {
        if self.fresh() {
            bars(&self.scheduler).corpus_figure - 2.0
        } else {
            bars(&self.scheduler).target
        }
    }
}

/// The measured floors, one per recording, with the set each came in and the reason of each
/// known miss (tests/data/kernel-floors.tsv; docs/kernel-agreement.md has the history of each row).
fn floors() -> Vec<Floor> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel-floors.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            let at = format!("{}:{}", path.display(), i + 1);
            assert!(
                (4..=5).contains(&f.len()),
                "{at}: {} fields, want 4 or 5",
                f.len()
            );
            Floor {
                mix: f[0].to_string(),
                scheduler: f[1].to_string(),
                floor: f[2]
                    .parse()
                    .unwrap_or_else(|e| panic!("{at}: floor {:?}: {e}", f[2])),
                set: f[3].to_string(),
                reason: f.get(4).unwrap_or(&"").to_string(),
            }
        })
        .collect()
}

#[test]
fn the_corpus_agrees_with_the_kernel_as_measured() {
    let rows = rows();
    println!("{}", markdown(&rows));
    for r in &rows {
        for d in divergences(r, 3) {
            println!("{d}");
        }
    }
    let floors = floors();
    let floor_of = |mix: &str, sched: &str| {
        let mut found = floors
            .iter()
            .filter(|f| f.mix == mix && f.scheduler == sched);
        let f = found
            .next()
            .unwrap_or_else(|| panic!("{mix}/{sched}: recorded, but no row in kernel-floors.tsv"));
        assert!(
            found.next().is_none(),
            "{mix}/{sched}: two rows in kernel-floors.tsv"
        );
        f
    };
    for f in &floors {
        assert!(
            rows.iter()
                .any(|r| r.mix == f.mix && r.scheduler == f.scheduler),
            "{}/{}: in kernel-floors.tsv, not recorded",
            f.mix,
            f.scheduler
        );
        // A known miss is a row below its bar, and it says why; a row that reaches its bar
        // carries no reason (a fixed miss leaves the list).
        assert_eq!(
            f.floor < f.bar(),
            !f.reason.is_empty(),
            "{}/{}: floor {} against a bar of {}, reason {:?}",
            f.mix,
            f.scheduler,
            f.floor,
            f.bar(),
            f.reason
        );
    }
    for r in &rows {
        let f = floor_of(&r.mix, &r.scheduler);
        let share = 100.0 * r.kernel_pace.agreement.share();
        assert!(
            share >= f.floor - 1.0,
            "{}/{}: {share:.1}% of the kernel's decisions, measured {}%",
            r.mix,
            r.scheduler,
            f.floor
        );
        // The sets agree wherever the choices did: a divergence is a choice, never lost
        // requests.
        assert!(r.kernel_pace.agreement.same_set >= r.kernel_pace.agreement.same_choice);
        if r.scheduler == "none" {
            // blk-mq without an elevator dispatches each run's software queues CPU by CPU,
            // each in arrival order: exactly ours (since kfid22).
            assert_eq!(r.kernel_pace.agreement.first_divergence, None, "{}", r.mix);
        }
        if f.fresh() {
            // Issue 27: on every fresh recording (a job mix not in the corpus when it was
            // recorded) each scheduler's agreement is within 2 points of its corpus figure;
            // a known miss is held at its floor, and at issue 27's fresh target where it
            // reached it.
            let bar = if f.reason.is_empty() {
                f.bar()
            } else {
                let target = bars(&r.scheduler).target - 2.0;
                if f.floor >= target {
                    target
                } else {
                    0.0
                }
            };
            assert!(
                share >= bar,
                "{}/{}: {share:.1}%, bar {bar}% ({})",
                r.mix,
                r.scheduler,
                f.set
            );
        }
    }
    // Every fresh mix is recorded under all four schedulers (a `-rerun` records one of them
    // again: `mixed-sizes-rerun`, bfq with its log).
    for f in floors
        .iter()
        .filter(|f| f.fresh() && !f.mix.ends_with("-rerun"))
    {
        for b in &BARS {
            floor_of(&f.mix, b.scheduler);
        }
    }
    // Over the corpus, per scheduler, as measured less a point.
    for Bars {
        scheduler: sched,
        corpus_floor: floor,
        ..
    } in &BARS
    {
        let (n, a) = rows
            .iter()
            .filter(|r| r.scheduler == *sched && !floor_of(&r.mix, &r.scheduler).fresh())
            .fold((0, 0), |(n, a), r| {
                (
                    n + r.kernel_pace.agreement.decisions,
                    a + r.kernel_pace.agreement.same_choice,
                )
            });
        let share = 100.0 * a as f64 / n as f64;
        assert!(
            share >= *floor,
            "{sched}: {share:.1}% over the corpus, floor {floor}%"
        );
    }
}

/// `kernel-diff --divergences N` printed a divergence whose queued set on our side held a
/// request the kernel never had (an insertion merge ours did not make becomes a request of
/// its own, numbered past the kernel's) by indexing the kernel's requests with it, and
/// panicked: `batched-readers-writers-one-region-nr16`/bfq at N = 5000 (index 1280 of 1279).
/// Since the replay allocates at `block_getrq` (kfid19) ours makes every insertion merge
/// there; `prio-writers-deep-beside-rt-reader`/bfq held such a request until kfid58's bfq fix
/// made it agree throughout, and no corpus recording diverges with one since: the held-out
/// `deep-randrw70-numjobs2-...-defaults`/mq-deadline (689 of them) stood in until kfid63's
/// device slots made its divergences other ones; `deep-seq-readers-...-defaults`/mq-deadline
/// (2 of them) stands in.
#[test]
fn a_divergence_naming_a_request_only_ours_had_prints_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/deep-seq-readers-qd256-merging-beside-writer-defaults/mq-deadline",
    );
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let kernel_requests = row.requests.len();
    let all = divergences(&row, usize::MAX);
    assert!(all.len() > 100, "{} divergences", all.len());
    assert!(
        all.iter()
            .any(|d| d.contains("(ours only: not a kernel request)")),
        "no request of ours past the kernel's {kernel_requests}"
    );
}

/// A user who writes `nr_requests` 2 gets 4 tags from the kernel (`queue_requests_store`
/// raises anything under `BLKDEV_MIN_RQ`), and the replay must give ours the 4 the queue kept,
/// not the 2 that was written: `mixed-4k-64k-randrw70-nr2` (branch kfresh18) was recorded with
/// `--set nr_requests=2`, which the recording's settings keep as written and its queue
/// snapshot shows as 4. (Our kyber has no `nr_requests`: its 256 tags are a named deviation,
/// crates/core/src/kyber.rs.)
#[test]
fn nr_requests_written_as_two_replays_as_the_four_the_kernel_kept() {
    for round in ["", "-round2"] {
        for sched in ["mq-deadline", "bfq"] {
            let dir = corpus().join(format!("mixed-4k-64k-randrw70-nr2{round}/{sched}"));
            let rec = elevator_workload::traces::ftrace::Recording::open(&dir).unwrap();
            assert_eq!(
                rec.meta.settings.get("nr_requests").map(String::as_str),
                Some("2"),
                "{}",
                dir.display()
            );
            let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
            assert!(
                row.kernel_pace
                    .settings
                    .contains(&("nr_requests".to_string(), 4)),
                "{}: {:?}",
                dir.display(),
                row.kernel_pace.settings
            );
        }
    }
}

/// A queue run that found nothing queued in bfq still expires its in-service queue, and the
/// replay asks ours there. On `rt-be-idle-classes-cmdprio-uring` fio-3190 dispatched its
/// idle-class queue's last read at 79406.328285; kworker's run, started on a stale
/// `bfq_has_work` (blk-mq's `__blk_mq_do_dispatch_sched` asks `bfq_dispatch_request` when
/// `bfqd->queued`, read without `bfqd->lock`, was not 0), found that queue empty in service
/// at .328286, and `bfq_select_queue` expired it (`bfq_bfqq_expire`,
/// `BFQQE_NO_MORE_REQUESTS`: an idle-class queue never idles, `bfq_better_to_idle`),
/// forgetting it (`del from busy`). Ours, not asked at a call with nothing queued, kept it in
/// service until 3189's read preempted it and requeued it busy; under 6.18's depths
/// (`whole_map_depths`, `tag_sleepers`) `bfq_limit_depth` then counted it beside the
/// real-time queue, gave the io-wq worker's read depth 1 where the kernel gave 8, and at
/// decision 1231 (.328400) a bio the kernel merged into that read became a request of its
/// own in ours (72.9% agreement from there).
#[test]
fn bfq_is_asked_at_a_dispatch_call_that_found_nothing_queued() {
    let src = corpus().join("rt-be-idle-classes-cmdprio-uring/bfq");
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
    }
    let meta = dir.path().join("meta.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    for t in ["whole_map_depths", "tag_sleepers"] {
        m["iosched"][t] = "1".into();
    }
    std::fs::write(&meta, m.to_string()).unwrap();
    let row = diff_recording(dir.path(), &DiffOptions::default()).unwrap();
    let d = &row.kernel_pace;
    for t in ["whole_map_depths", "tag_sleepers"] {
        assert!(d.settings.contains(&(t.to_string(), 1)), "{:?}", d.settings);
    }
    assert_eq!(
        d.agreement.first_divergence,
        None,
        "{}",
        divergences(&row, 1).join("\n")
    );
    assert_eq!(d.ours.get(1231), d.kernel.get(1231));
}

/// A plug's batch of insertions is followed by one queue run, and a run that finds every
/// driver tag taken takes the scheduler's next request then, not after the batch's first
/// insertion. On the held-out `deep-randrw70-numjobs2-qd200-beside-128k-reader-defaults`
/// (kfresh22, 256 scheduler tags over 128 driver tags, all 128 in flight) fio-12085 flushed
/// a plug of 15 requests at 28641.864449-.864453 with the tags taken: 6.18's
/// `blk_mq_dispatch_list` hands mq-deadline the whole list (`dd_insert_requests`) and then
/// runs the queue once (`blk_mq_run_hw_queue`); that run's `__blk_mq_do_dispatch_sched`
/// took mq-deadline's choice among the 15, the write 864120, and `blk_mq_dispatch_rq_list` parked it on
/// `hctx->dispatch` for the next free tag (issued first at .865848, decision 628). Ours ran
/// after the batch's first insertion and parked the read 918560, the only request then
/// inserted (18.5% agreement, first divergence 628).
#[test]
fn a_plugs_batch_is_inserted_whole_before_its_run_takes_a_request_to_wait_for_a_tag() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/deep-randrw70-numjobs2-qd200-beside-128k-reader-defaults/mq-deadline",
    );
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let d = &row.kernel_pace;
    assert_eq!(d.ours.get(628), d.kernel.get(628));
    assert!(
        d.agreement.first_divergence > Some(628),
        "{}",
        divergences(&row, 1).join("\n")
    );
}

/// At the kernel's pace ours' request takes the device slot of the request the kernel
/// issued at that decision, and leaves it when that request completed (the replay's
/// `completion_at`): the driver tag `blk_mq_dispatch_rq_list` took is held until the
/// kernel's completion frees it (`blk_mq_end_request`, `__blk_mq_free_request`), whichever
/// request ours sent. On the held-out `deep-randwriter-qd256-beside-qd1-reader-defaults`
/// (kfresh22, 128 driver tags) kblockd on CPU 1 issued 778496 and 779456 at
/// 28627.340244-.340272 while fio's run on CPU 0 held 774336 for a tag (issued at .344091):
/// ours issued 774336 at the first of those decisions and, timing it by its own service,
/// completed it at .347518, 3.8 ms before the kernel did. At .348477 ours then had 127
/// requests on the device where the kernel had all 128, so the writer's run after inserting
/// 334912 took nothing to wait for a tag (`__blk_mq_do_dispatch_sched`,
/// `blk_mq_get_driver_tag` failing) and ours, asked at the kernel's issue of 334912 at
/// .351488, chose 311552, inserted at .349312 after the kernel had parked 334912 (decision
/// 373; 19.4% agreement, 321 of 2617 real choices). Now ours too parks 334912 at .348484.
#[test]
fn a_request_holds_the_device_slot_of_the_kernels_decision_until_its_completion() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/deep-randwriter-qd256-beside-qd1-reader-defaults/mq-deadline",
    );
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let d = &row.kernel_pace;
    assert_eq!(
        d.ours.get(373),
        d.kernel.get(373),
        "{}",
        divergences(&row, 3).join("\n")
    );
    assert!(
        d.choices_agreed > 900,
        "{} real choices agreed",
        d.choices_agreed
    );
}

/// Two queue runs issuing their lists side by side took them from the scheduler in an
/// order the trace does not give: `__blk_mq_do_dispatch_sched` takes a run's whole list
/// (up to `nr_requests`, while driver tags last) before `blk_mq_dispatch_rq_list` issues
/// the first, and the two runs' `dd_dispatch_request` calls met only under `dd->lock`. On
/// the held-out `deep-randwriter-qd256-beside-qd1-reader-defaults` fio on CPU 0 and kblockd
/// on CPU 1 issued two lists of mq-deadline's one sorted pass interleaved for 65 us
/// (28627.351666-.351731: 401856, 622784, 402560, 632064 ...); ours, one run at a time,
/// took the pass in sector order, each CPU's own order kept, and every decision from 382
/// to about 500 counted as a divergence. Now a pair of the two CPUs' decisions is left
/// unordered when the later one's CPU was already issuing the burst it belongs to
/// (`kernel_diff::settle_unordered_pairs`).
#[test]
fn two_runs_issuing_their_lists_side_by_side_leave_their_order_open() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/deep-randwriter-qd256-beside-qd1-reader-defaults/mq-deadline",
    );
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let d = &row.kernel_pace;
    for k in [382, 400, 450] {
        assert_eq!(
            d.ours.get(k),
            d.kernel.get(k),
            "decision {k}: {}",
            divergences(&row, 3).join("\n")
        );
    }
}

/// A submitter's own queue run begins at its insertion and may take its list long before
/// its first issue, so another CPU's run issuing in between leaves the two runs' order open.
/// On `typical-three-iouring-randreaders-qd8-beside-libaio-16k-randwriter-qd32-defaults`
/// (set lead65, mq-deadline, round 1) fio-16619 inserted the read 577512 on CPU 0 at
/// 81459.527999 and issued it itself at .528033; fio-16620 on CPU 1 inserted and issued the
/// synchronous writes 1164640 (.528021-.528022) and 1190016 (.528029). mq-deadline's
/// `dd_dispatch_request` serves reads before writes here (neither FIFO expired,
/// `writes_starved` not reached): its run took the read before the writes were inserted, and
/// an interrupt kept it from `blk_mq_start_request` for 34 us. Read in issue order the kernel
/// took two writes with the read queued (decision 1953, 149/151 real choices agreed); ours
/// took the read, as the kernel's run did.
#[test]
fn a_submitters_run_begun_at_its_insertion_leaves_its_order_open_with_another_cpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel/typical-three-iouring-randreaders-qd8-beside-libaio-16k-randwriter-qd32-defaults/mq-deadline",
    );
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let d = &row.kernel_pace;
    for k in 1953..=1955 {
        assert_eq!(
            d.ours.get(k),
            d.kernel.get(k),
            "decision {k}: {}",
            divergences(&row, 3).join("\n")
        );
    }
    assert_eq!(d.agreement.first_divergence, None);
}

/// A plug expecting several requests allocates their scheduler tags at once when its first
/// request gets no shallow depth (`blk_mq_get_new_requests` with the plug's `nr_ios`,
/// `__blk_mq_alloc_requests_batch`; `blk_mq_get_tags` refuses a batch under a shallow
/// depth), and the requests after the first come from the plug's cache without meeting
/// `bfq_limit_depth`. On the held-out `deep-iouring-randrw50-two-procs-qd256-nr64` (kfid44,
/// 64 scheduler tags) fio-23153 submitted 32 bios in one io_uring call at
/// 35614.903779-.903880, a read first: bfq's log has one `[bfq_limit_depth]` note (the read's,
/// depth 64) and none for the 31 after it, and the kernel served the batch from 3184 up
/// (`bfq_choose_req` from the last position, 1680: decision 58). Ours gave each write its
/// own depth (24 of 64 tags with a weight-raised queue busy, the depth the log shows for
/// the writes allocated one by one before), and served 7328 first: 3184, nearer, was not
/// in bfq, waiting for a tag (10.0% agreement, first divergence 58).
#[test]
fn requests_from_a_plugs_batch_of_tags_have_no_depth_limit_of_their_own() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/kernel/deep-iouring-randrw50-two-procs-qd256-nr64/bfq");
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    let d = &row.kernel_pace;
    assert_eq!(d.ours.get(58), d.kernel.get(58));
    assert_eq!(
        d.agreement.first_divergence,
        None,
        "{}",
        divergences(&row, 1).join("\n")
    );
}

/// A decision the trace cannot order with another CPU's insertion. On the held-out
/// `asyncdepth-12-be-levels-writers-beside-rt-reader-nr64` (kfid45, first round) fio-28074
/// inserted its idle-class 64 KiB write 107904 on CPU 0 at 46516.763734 and fio-28072 a
/// best-effort write 50960 on CPU 1 at .763735; CPU 0 issued 107904 at .763735 and CPU 1
/// 50960 at .763736. `block_rq_insert` fires under `dd->lock` (`dd_insert_request`),
/// `block_rq_issue` after the run released it (`blk_mq_start_request` in `loop_queue_rq`):
/// CPU 0's `dd_dispatch_request` took 107904 before 50960 was inserted, else
/// `dd_dispatch_prio_aged_requests`' level order would have given it the best-effort write.
/// Ours, asked at the issue event, saw both and took 50960. Until 4 December 2026 that was
/// decision 757, the first divergence (21.3% agreement from there), which only `kernel-diff
/// --resolve` (`kernel_diff::resolve`: the decision moved before that insertion) settled;
/// since fio-28074's own run is taken to begin at its insertion (`unordered`'s
/// `burst_starts`), the replay leaves the two runs' order open and agrees there, and
/// `--resolve` has nothing left to move before the recording's first real miss.
#[test]
fn a_choice_made_before_another_cpus_insertion_the_trace_shows_first_is_settled() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/asyncdepth-12-be-levels-writers-beside-rt-reader-nr64/mq-deadline",
    );
    let r = resolve(&dir, &DiffOptions::default(), 50).unwrap();
    assert_eq!(r.before.ours.get(757), r.before.kernel.get(757));
    assert!(r.before.agreement.first_divergence > Some(757));
    assert!(r.after.agreement.share() > 0.99, "{:?}", r.after.agreement);
    assert!(r.unresolved.first() > Some(&757));
}

/// A run's later dequeues, issued after another CPU inserted and issued a request of a higher
/// level, resolved the kernel's way by moving the decision after the divergence. On the
/// held-out `cgroup-weights-ionice-classes-inside-groups` (kfid46, round 2, mq-deadline)
/// CPU 0 issued the best-effort-7 read 61672 at 50978.732430 and the best-effort-0 reads
/// 103120, 132024, 138560, 145984 at .732439-.732441; CPU 1 inserted the real-time read 6256
/// at .732432 and issued it at .732433. `dd_dispatch_request` takes no lower level while
/// `dd_queued` of a higher one is non-zero (in flight counts), and 6256 completed at .732479:
/// the four were dequeued with 61672 in one run (`__blk_mq_do_dispatch_sched`) before 6256
/// was inserted. Read in issue order, the kernel's decision 178 is 6256 and ours 103120 (10.6%
/// agreement from there); with the decision after it (103120) moved before 6256's insertion,
/// and then each of the run's others, ours agrees past 178 and on 99% of the recording.
#[test]
fn a_runs_later_issues_after_another_cpus_request_are_resolved() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/cgroup-weights-ionice-classes-inside-groups-round2/mq-deadline",
    );
    let r = resolve(&dir, &DiffOptions::default(), 300).unwrap();
    assert_eq!(r.before.agreement.first_divergence, Some(178));
    let first = r.moves.first().expect("a move kept");
    assert_eq!((first.decision, first.passed), (179, 2));
    assert_eq!(r.after.ours.get(178), r.after.kernel.get(178));
    assert!(r.before.agreement.share() < 0.15);
    assert!(r.after.agreement.share() > 0.98, "{:?}", r.after.agreement);
    assert!(r.unresolved.first() > Some(&178), "{:?}", r.unresolved);
}

/// A run's later dequeues issued more than 10 us after another CPU's request, resolved by
/// reading the run as starting at its first issue. On the held-out
/// `prioaging5-rt-deep-reader-beside-be-writer-idle-reader-round2` (kfid47, mq-deadline,
/// `prio_aging_expire` 5 ms) fio-24839's run on CPU 1 issued the best-effort write 184320 at
/// 58193.015591 and 120256, 132448, 112064 at .015609-.015613; CPU 0 inserted the real-time
/// read 42392 at .015592 and issued it at .015593 (completed at .015660).
/// `dd_dispatch_request` takes no best-effort request while `dd_queued` of the real-time
/// level is above 0, so the three writes were dequeued with 184320 (`__blk_mq_do_dispatch_sched`)
/// before 42392's insertion and issued after it (`blk_mq_dispatch_rq_list`). Their issues
/// are 16-20 us after 42392's, beyond the 10 us `--resolve` passed, so decision 1071 (the
/// kernel's 42392 read in issue order, ours 120256) stayed unsettled and the recording at
/// 88.8%; moving each write before 42392's insertion, ours agrees there and on 99.9%.
#[test]
fn a_runs_issues_long_after_another_cpus_request_are_resolved_from_the_runs_first_issue() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/prioaging5-rt-deep-reader-beside-be-writer-idle-reader-round2/mq-deadline",
    );
    let r = resolve(&dir, &DiffOptions::default(), 300).unwrap();
    let moved: Vec<(usize, usize)> = r.moves.iter().map(|m| (m.decision, m.passed)).collect();
    for d in [1072, 1073, 1074] {
        assert!(moved.contains(&(d, 2)), "{moved:?}");
    }
    assert!(!r.unresolved.contains(&1071), "{:?}", r.unresolved);
    assert_eq!(r.after.ours.get(1071), r.after.kernel.get(1071));
    assert!(r.after.agreement.share() > 0.99, "{:?}", r.after.agreement);
}

/// Two requests of the same extents at two priorities, told apart by the flags and priority
/// each trace event prints. On the held-out `asyncdepth-12-be-levels-writers-beside-rt-reader-nr64`
/// (kfid45, first round, bfq) the best-effort reader fio-28131's `R` of 227368 + 8 waited
/// in bfq from 46520.336523 while the real-time reader fio-28130's `RS` of the same block
/// was inserted and issued at .344189-.344195; the trace reader took that issue for the
/// oldest request of the extents, fio-28131's, so the kernel's decision 368 was the
/// best-effort read and every later decision compared a request off (10.4%, first
/// divergence 368). Taken by its `RS rt,0,4`, the issue is the real-time request's, and
/// ours agrees on every decision.
#[test]
fn requests_of_one_block_at_two_priorities_are_the_ones_their_events_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/kernel-pending/asyncdepth-12-be-levels-writers-beside-rt-reader-nr64/bfq",
    );
    let row = diff_recording(&dir, &DiffOptions::default()).unwrap();
    assert_eq!(
        row.kernel_pace.agreement.first_divergence,
        None,
        "{}",
        divergences(&row, 1).join("\n")
    );
}
