//! The ICPE'24 study's fig. 7 (shared/data/nvme-980pro/fig-7-tapp-scal-1-ssd, MIT): 1..15
//! processes, each a fio job of 4 KiB random reads at QD 128 (`io_uring`, direct, 10 cores),
//! under none, mq-deadline, kyber and bfq on a Samsung 980 PRO. The simulator runs the same
//! jobs through the engine, each scheduler and the `samsung-980pro-1tb` drive with the
//! `icpe24-10core` host CPU model (crates/sim/src/cpu.rs), and every total IOPS must be within
//! +-25% of the measured one.
//!
//! The data is read where it lies (nvme-980pro under `ELEVATOR_DATA` or the shared/data
//! next to the repository); without it the test prints a notice and passes. Run with `--nocapture` to
//! see the table (docs/ssd-model.md has it).

use std::path::{Path, PathBuf};

use elevator_core::{registry, GroupTree, Nanos, Settings};
use elevator_sim::cpu::CpuSpec;
use elevator_sim::ssd::{Ssd, SsdSpec};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::traces::shared_data_dir;
use elevator_workload::BuildEnv;

const TOLERANCE: f64 = 0.25;
const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
const PROCESSES: u32 = 15;

fn data() -> Option<PathBuf> {
    let found = shared_data_dir()
        .map(|d| d.join("nvme-980pro"))
        .filter(|d| d.join("fig-7-tapp-scal-1-ssd").is_dir());
    if found.is_none() {
        eprintln!(
            "notice: shared/data/nvme-980pro/fig-7-tapp-scal-1-ssd not found; fig-7 test skipped"
        );
    }
    found
}

/// A fio JSON result's total read IOPS and the job's options (numjobs, iodepth, bs, rw).
fn fio(path: &Path) -> (f64, serde_json::Value) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let start = text.find('{').expect("fio JSON");
    let v: serde_json::Value = serde_json::from_str(&text[start..]).expect("fio JSON");
    let iops = v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["read"]["iops"].as_f64().expect("read iops"))
        .sum();
    (iops, v["global options"].clone())
}

/// Total read IOPS of `procs` processes each keeping `qd` random 4 KiB reads outstanding
/// under `sched`, with the host CPU model on, over `runtime` after `ramp`.
fn simulate(sched: &str, procs: u32, qd: u32) -> f64 {
    let drive = SsdSpec::builtin("samsung-980pro-1tb").expect("built in");
    let host = CpuSpec::builtin("icpe24-10core").expect("built in");
    let device = Ssd::new(drive).expect("valid spec");
    let capacity = device.capacity_sectors();
    let info = registry::find(sched).expect("registered");
    let mut settings = Settings::new();
    // The kernel reads `rotational` from the device: 0 for an NVMe drive.
    if info.tunables.iter().any(|t| t.name == "rotational") {
        settings.set("rotational", 0);
    }

    let groups = GroupTree::new();
    let scheduler = (info.build)(&settings, &groups).expect("default settings");
    let mut sim = Simulation::new(Box::new(device), scheduler, groups);
    sim.set_host_cpu(&host);
    // Long enough for every process's queue to turn over several times at the slowest rate.
    let (ramp_ms, runtime_ms) = (10, 30);
    sim.set_ramp(Nanos::from_ms(ramp_ms));
    for p in 0..procs {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            bs: 4096,
            iodepth: qd,
            direct: true,
            norandommap: true,
            time_based: true,
            ramp_ms,
            runtime_ms: Some(runtime_ms),
            ..FioJobConfig::default()
        };
        let env = BuildEnv::new(capacity, 1, format!("tapp.{p}"));
        let job = FioJob::new(cfg, &env).expect("valid job");
        sim.add_job(JobSlot::new(format!("tapp.{p}"), Box::new(job)));
    }
    let report = sim.run(None);
    report.summaries().iter().map(|s| s.read.iops).sum()
}

#[test]
fn throughput_app_scaling_within_25_percent_under_every_scheduler() {
    let Some(dir) = data() else { return };
    let dir = dir.join("fig-7-tapp-scal-1-ssd/results_tapp_inc_proc_1_dev_10_core");
    let mut bad = Vec::new();
    println!("\nfig-7 total kIOPS, measured / model (error), 4 KiB random reads, QD 128 per process, 10 cores");
    println!("| processes | {} |", SCHEDULERS.join(" | "));
    println!("|---:|{}", "---:|".repeat(SCHEDULERS.len()));
    for procs in 1..=PROCESSES {
        let mut row = format!("| {procs} |");
        for sched in SCHEDULERS {
            let (measured, opts) = fio(&dir.join(format!("proc_{procs}_dev_1_sche_{sched}.txt")));
            assert_eq!(opts["ioscheduler"], sched);
            assert_eq!(opts["numjobs"], procs.to_string());
            assert_eq!(opts["rw"], "randread");
            assert_eq!(opts["bs"], "4kb");
            let qd: u32 = opts["iodepth"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("iodepth");
            let model = simulate(sched, procs, qd);
            let err = model / measured - 1.0;
            row.push_str(&format!(
                " {:.0} / {:.0} ({:+.0}%) |",
                measured / 1000.0,
                model / 1000.0,
                err * 100.0
            ));
            if err.abs() > TOLERANCE {
                bad.push(format!(
                    "{sched} x{procs}: measured {measured:.0}, model {model:.0}"
                ));
            }
        }
        println!("{row}");
    }
    assert!(bad.is_empty(), "outside +-25%: {bad:?}");
}
