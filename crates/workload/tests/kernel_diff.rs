//! The kernel corpus replayed into our schedulers (issue 27's `kernel-diff`): every recording
//! of tests/data/kernel/MIX/SCHED through our policy of the same name, without root. Prints
//! the agreement table (the one in docs/testing.md) and the divergences, and fails when
//! agreement drops below what was measured.

use std::path::{Path, PathBuf};

use elevator_workload::kernel_diff::{diff_recording, divergences, find_recordings, markdown};
use elevator_workload::kernel_diff::{DiffOptions, Row};

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

/// The fresh recording (issue 27: a job mix not in the first corpus, recorded on the day the
/// seed rows were worked, Linux 6.18.44), and bfq's second recording of the same job
/// (`mixed-sizes-rerun`, with the bfq log): kept apart from the corpus-wide figures below.
const FRESH: &str = "mixed-sizes";

/// Agreement at the kernel's pace as measured (per cent of decisions), one point under.
const FLOOR: [(&str, &str, f64); 25] = [
    ("batches", "none", 100.0),
    ("batches", "mq-deadline", 100.0),
    ("batches", "kyber", 100.0),
    ("batches", "bfq", 88.1),
    ("interleaved-readers", "none", 100.0),
    ("interleaved-readers", "mq-deadline", 98.3),
    ("interleaved-readers", "kyber", 98.3),
    ("interleaved-readers", "bfq", 98.9),
    // The fresh recording. bfq agrees on 26.3% only: from decision 4 on, ours serves another
    // request of the same bfq_queue first (bfq_add_request's bfq_choose_req against
    // bfqd->last_position; docs/bfq.md, "The fresh recording"). Open.
    ("mixed-sizes", "none", 100.0),
    ("mixed-sizes", "mq-deadline", 98.5),
    ("mixed-sizes", "kyber", 100.0),
    ("mixed-sizes", "bfq", 26.3),
    // The same job under bfq again, minutes later: 96.4%. bfq's agreement on this mix depends
    // on the run (docs/testing.md).
    ("mixed-sizes-rerun", "bfq", 96.4),
    ("prio-classes", "none", 100.0),
    ("prio-classes", "mq-deadline", 96.9),
    ("prio-classes", "kyber", 100.0),
    ("prio-classes", "bfq", 98.8),
    ("process-burst", "none", 100.0),
    ("process-burst", "mq-deadline", 100.0),
    ("process-burst", "kyber", 100.0),
    ("process-burst", "bfq", 97.9),
    ("readers-writers", "none", 100.0),
    ("readers-writers", "mq-deadline", 100.0),
    ("readers-writers", "kyber", 100.0),
    ("readers-writers", "bfq", 93.9),
];

#[test]
fn the_corpus_agrees_with_the_kernel_as_measured() {
    let rows = rows();
    println!("{}", markdown(&rows));
    for r in &rows {
        for d in divergences(r, 3) {
            println!("{d}");
        }
    }
    assert_eq!(rows.len(), FLOOR.len());
    for (r, (mix, sched, floor)) in rows.iter().zip(FLOOR) {
        assert_eq!((r.mix.as_str(), r.scheduler.as_str()), (mix, sched));
        let share = 100.0 * r.kernel_pace.agreement.share();
        assert!(
            share >= floor - 1.0,
            "{mix}/{sched}: {share:.1}% of the kernel's decisions, measured {floor}%"
        );
        // The sets agree wherever the choices did: a divergence is a choice, never lost
        // requests.
        assert!(r.kernel_pace.agreement.same_set >= r.kernel_pace.agreement.same_choice);
        if sched == "none" {
            // blk-mq without an elevator dispatches in arrival order: exactly ours.
            assert_eq!(r.kernel_pace.agreement.first_divergence, None, "{mix}");
        }
    }
    // Over the corpus, per scheduler, as measured minus a point (measured: none 100%,
    // mq-deadline 99.0%, kyber 99.6%, bfq 95.7%; issue 27's targets 100, 99, 97 and 90).
    for (sched, floor) in [
        ("none", 100.0),
        ("mq-deadline", 98.0),
        ("kyber", 98.6),
        ("bfq", 94.7),
    ] {
        let (n, a) = rows
            .iter()
            .filter(|r| r.scheduler == sched && !r.mix.starts_with(FRESH))
            .fold((0, 0), |(n, a), r| {
                (
                    n + r.kernel_pace.agreement.decisions,
                    a + r.kernel_pace.agreement.same_choice,
                )
            });
        let share = 100.0 * a as f64 / n as f64;
        assert!(
            share >= floor,
            "{sched}: {share:.1}% over the corpus, floor {floor}%"
        );
    }
    // Issue 27: on the fresh recording the corpus figures hold within 2 points for none,
    // mq-deadline and kyber (measured 100%, 98.5%, 100%); bfq does not (26.3%, above).
    for (sched, corpus) in [("none", 100.0), ("mq-deadline", 99.0), ("kyber", 99.6)] {
        let r = rows
            .iter()
            .find(|r| r.mix == FRESH && r.scheduler == sched)
            .expect("the fresh recording");
        let share = 100.0 * r.kernel_pace.agreement.share();
        assert!(
            share >= corpus - 2.0,
            "{FRESH}/{sched}: {share:.1}%, corpus {corpus}%"
        );
    }
}
