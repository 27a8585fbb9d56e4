//! The built-in samsung-980pro-1tb spec against the ICPE'24 fio measurements
//! (shared/data/nvme-980pro, MIT): random reads run closed loop as fio runs them (each
//! process keeps `iodepth` reads outstanding and issues the next as one completes), and the
//! measured and simulated IOPS and latencies compared within +-15%.
//!
//! The data is read where it lies (nvme-980pro under `ELEVATOR_DATA` or the shared/data
//! next to the repository); without it the tests print a notice and pass. Run with `--nocapture` to
//! see the tables (docs/ssd-model.md has them).

use std::path::{Path, PathBuf};

use elevator_sim::ssd::SsdSpec;
use elevator_workload::traces::shared_data_dir;

const QDS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const TOLERANCE: f64 = 0.15;

fn data() -> Option<PathBuf> {
    let found = shared_data_dir()
        .map(|d| d.join("nvme-980pro"))
        .filter(|d| d.join("fig-1-samsung-baseline").is_dir());
    if found.is_none() {
        eprintln!("notice: shared/data/nvme-980pro not found; 980 PRO fit tests skipped");
    }
    found
}

/// A fio JSON result: (total read IOPS, mean completion latency us, p99 us).
fn fio(path: &Path) -> (f64, f64, f64) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let start = text.find('{').expect("fio JSON");
    let v: serde_json::Value = serde_json::from_str(&text[start..]).expect("fio JSON");
    let jobs = v["jobs"].as_array().expect("jobs");
    let iops: f64 = jobs
        .iter()
        .map(|j| j["read"]["iops"].as_f64().unwrap())
        .sum();
    let clat = &jobs[0]["read"]["clat_ns"];
    let mean = clat["mean"].as_f64().unwrap() / 1000.0;
    let p99 = clat["percentile"]["99.000000"].as_f64().unwrap() / 1000.0;
    (iops, mean, p99)
}

/// What the model gives for `procs` processes each keeping `qd` random reads of `bs` bytes
/// outstanding: (IOPS, mean latency us, p99 us) over `n` completions after a fifth as warm-up.
fn closed_loop(spec: &SsdSpec, procs: u32, qd: u32, bs: u64, n: u64) -> (f64, f64, f64) {
    let r =
        elevator_sim::ssd::closed_loop::closed_loop(spec, procs, qd, bs, n).expect("valid spec");
    assert!(
        r.iops > 0.0 && r.mean_us > 0.0,
        "reads complete after they are submitted"
    );
    (r.iops, r.mean_us, r.p99_us)
}

fn requests(procs: u32, qd: u32) -> u64 {
    elevator_sim::ssd::closed_loop::requests(procs, qd)
}

fn spec() -> SsdSpec {
    SsdSpec::builtin("samsung-980pro-1tb").expect("built in")
}

/// One compared figure; `asserted` says whether it must be within the tolerance.
struct Row {
    what: String,
    measured: f64,
    model: f64,
    asserted: bool,
}

fn report(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!("| figure | measured | model | error | checked |");
    println!("|---|---:|---:|---:|---|");
    for r in rows {
        println!(
            "| {} | {:.1} | {:.1} | {:+.1}% | {} |",
            r.what,
            r.measured,
            r.model,
            (r.model / r.measured - 1.0) * 100.0,
            if r.asserted { "+-15%" } else { "shown" }
        );
    }
    let bad: Vec<&Row> = rows
        .iter()
        .filter(|r| r.asserted && (r.model / r.measured - 1.0).abs() > TOLERANCE)
        .collect();
    assert!(
        bad.is_empty(),
        "{title}: outside +-15%: {:?}",
        bad.iter()
            .map(|r| format!("{} measured {:.1} model {:.1}", r.what, r.measured, r.model))
            .collect::<Vec<_>>()
    );
}

#[test]
fn iops_at_every_queue_depth_and_process_count_within_15_percent() {
    let Some(dir) = data() else { return };
    let spec = spec();
    let mut rows = Vec::new();
    for procs in [1u32, 2, 4, 8] {
        for qd in QDS {
            let f = dir.join(format!(
                "fig-1-samsung-baseline/results_qd_iops_inc_proc_4kb/bs_4_proc_{procs}_qd_{qd}.txt"
            ));
            let (iops, _, _) = fio(&f);
            let (model, _, _) = closed_loop(&spec, procs, qd, 4096, requests(procs, qd));
            rows.push(Row {
                what: format!("4 KiB kIOPS, {procs} proc x QD{qd}"),
                measured: iops / 1000.0,
                model: model / 1000.0,
                asserted: true,
            });
        }
    }
    report(
        "fig-1 results_qd_iops_inc_proc_4kb (random 4 KiB reads, none)",
        &rows,
    );
}

#[test]
fn qd1_reader_mean_and_p99_latency_within_15_percent() {
    let Some(dir) = data() else { return };
    let f = dir.join(
        "fig-2-4a-6a-intra-proc-scal/results_lapp_cdf_inc_qd_1_dev_1_core/qd_1_dev_1_sche_none.txt",
    );
    let (_, mean, p99) = fio(&f);
    let (_, m_mean, m_p99) = closed_loop(&spec(), 1, 1, 4096, 30_000);
    report(
        "fig-2 QD1 4 KiB random reader under none: completion latency (us)",
        &[
            Row {
                what: "mean".into(),
                measured: mean,
                model: m_mean,
                asserted: true,
            },
            Row {
                what: "p99".into(),
                measured: p99,
                model: m_p99,
                asserted: true,
            },
        ],
    );
}

#[test]
fn iops_at_every_block_size_within_15_percent_where_saturated() {
    let Some(dir) = data() else { return };
    let spec = spec();
    let mut rows = Vec::new();
    for (name, bs) in [
        ("512", 512u64),
        ("1k", 1024),
        ("2k", 2048),
        ("4k", 4096),
        ("8k", 8192),
        ("16k", 16384),
        ("32k", 32768),
        ("64k", 65536),
    ] {
        for qd in QDS {
            let f = dir.join(format!(
                "fig-1-samsung-baseline/results_qd_iops_vary_bs/bs_{name}_qd_{qd}.txt"
            ));
            let (iops, _, _) = fio(&f);
            let (model, _, _) = closed_loop(&spec, 1, qd, bs, requests(1, qd));
            // This set was measured in another session than fig-1's QD set and fig-2: there
            // a third of the reads of 4 KiB and less completed in about 20 us (no flash
            // read), and 4 KiB at QD 2..32 differs from the QD set by -32%..+36%. What both
            // sets agree on is checked: every size where the drive is saturated (QD 64 and
            // 128), and the QD1 latency of the sizes that always read flash (8 KiB up).
            let asserted = qd == 64 || qd == 128 || (qd == 1 && bs >= 8192);
            rows.push(Row {
                what: format!("{name} kIOPS, QD{qd}"),
                measured: iops / 1000.0,
                model: model / 1000.0,
                asserted,
            });
        }
    }
    report(
        "fig-1 results_qd_iops_vary_bs (random reads, one process, none)",
        &rows,
    );
}
