//! The SSD model against MQSim itself (CMU-SAFARI/MQSim at commit 7ec40e3, built outside the
//! repository): four workloads on MQSim's default `ssdconfig.xml`, expressed in our format as
//! docs/ssd-xcheck/mqsim-default.toml, each compared on mean response time with the figure
//! MQSim printed for it (its flow's "device response time"; docs/ssd-model.md gives the
//! commands, the workload files and the wall times).
//!
//! The two traces are MQSim's examples (shared/data/traces/mqsim, found where the 980 PRO data
//! is looked for); without them their rows print a notice and are skipped. The synthetic
//! workloads need no data. Run with `--nocapture` to see the table.

use std::path::{Path, PathBuf};

use elevator_core::{registry, GroupTree, Settings};
use elevator_sim::ssd::{Ssd, SsdSpec};
use elevator_sim::{JobSlot, RunReport, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::jobs::replay::{ReplayJob, ReplayOptions};
use elevator_workload::traces::{open, shared_data_dir, OpenOptions, TraceFormat};
use elevator_workload::{BuildEnv, Job};

const TOLERANCE: f64 = 0.25;

/// A workload both simulators ran.
#[derive(Clone, Copy)]
enum Workload {
    /// One of MQSim's example traces, replayed open loop at its recorded times.
    Trace(&'static str),
    /// MQSim's synthetic QUEUE_DEPTH flow: 50,000 aligned random 8 KiB requests, this share of
    /// reads (percent), this many outstanding.
    Synthetic { reads: u32, depth: u32 },
}

/// Each workload and MQSim's mean response time for it, us (MQSim at 7ec40e3 on its default
/// ssdconfig.xml; docs/ssd-model.md gives the workload files), and whether it is asserted.
const WORKLOADS: [(&str, Workload, f64, bool); 8] = [
    ("wsrch-small", Workload::Trace("wsrch-small"), 181.0, true),
    ("tpcc-small", Workload::Trace("tpcc-small"), 3458.0, true),
    (
        "8 KiB random reads, QD1",
        Workload::Synthetic {
            reads: 100,
            depth: 1,
        },
        179.0,
        true,
    ),
    (
        "8 KiB random reads, QD16",
        Workload::Synthetic {
            reads: 100,
            depth: 16,
        },
        247.0,
        true,
    ),
    (
        "8 KiB random reads, QD64",
        Workload::Synthetic {
            reads: 100,
            depth: 64,
        },
        581.0,
        true,
    ),
    (
        "8 KiB random writes, QD1",
        Workload::Synthetic { reads: 0, depth: 1 },
        43.0,
        true,
    ),
    (
        "8 KiB random writes, QD16",
        Workload::Synthetic {
            reads: 0,
            depth: 16,
        },
        655.0,
        true,
    ),
    (
        "8 KiB random 70% reads, QD16",
        Workload::Synthetic {
            reads: 70,
            depth: 16,
        },
        375.0,
        true,
    ),
];

fn spec() -> SsdSpec {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ssd-xcheck/mqsim-default.toml");
    SsdSpec::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn traces() -> Option<PathBuf> {
    let found = shared_data_dir()
        .map(|d| d.join("traces/mqsim"))
        .filter(|d| d.join("tpcc-small.trace").is_file());
    if found.is_none() {
        eprintln!("notice: shared/data/traces/mqsim not found; the trace rows are skipped");
    }
    found
}

/// One job alone on the MQSim-default drive under noop; the report.
fn run(job: Box<dyn Job>) -> RunReport {
    let device = Ssd::new(spec()).expect("valid spec");
    let groups = GroupTree::new();
    let noop = registry::find("noop").expect("registered");
    let sched = noop
        .build(&Settings::new(), &groups)
        .expect("default settings");
    let mut sim = Simulation::new(Box::new(device), sched, groups);
    sim.add_job(JobSlot::new("w", job));
    sim.run(None)
}

/// Mean response time over every request of the run, and of its reads and of its writes, us.
fn mean_us(report: &RunReport) -> (f64, f64, f64) {
    let s = &report.summaries()[0];
    let (r, w) = (s.read.ios as f64, s.write.ios as f64);
    let (rm, wm) = (s.read.lat_mean_ms * 1000.0, s.write.lat_mean_ms * 1000.0);
    ((rm * r + wm * w) / (r + w), rm, wm)
}

/// An MQSim trace replayed open loop at its recorded times, as MQSim replays it.
fn trace(dir: &Path, name: &str) -> (f64, f64, f64) {
    let capacity = spec().capacity_sectors();
    let source = open(
        &[dir.join(format!("{name}.trace"))],
        OpenOptions {
            format: Some(TraceFormat::Mqsim),
            ..OpenOptions::default()
        },
    )
    .expect("trace");
    let (job, _) = ReplayJob::new(
        name,
        source,
        ReplayOptions {
            closed_loop: false,
            speed: 1.0,
            capacity_sectors: capacity,
            max_requests: None,
        },
    )
    .expect("replay");
    mean_us(&run(Box::new(job)))
}

/// MQSim's synthetic QUEUE_DEPTH flow: 50,000 aligned random 8 KiB requests, `reads`
/// percent of them reads, `depth` outstanding.
fn synthetic(reads: u32, depth: u32) -> (f64, f64, f64) {
    let cfg = FioJobConfig {
        rw: match reads {
            100 => RwMode::RandRead,
            0 => RwMode::RandWrite,
            _ => RwMode::RandRw,
        },
        rwmixread: reads,
        bs: 8192,
        iodepth: depth,
        number_ios: Some(50_000),
        norandommap: true,
        ..FioJobConfig::default()
    };
    let env = BuildEnv::new(spec().capacity_sectors(), 1, "synthetic");
    mean_us(&run(Box::new(FioJob::new(cfg, &env).expect("valid job"))))
}

#[test]
fn mean_response_time_within_25_percent_of_mqsim() {
    let dir = traces();
    println!(
        "\n| workload | MQSim mean response | ours (reads, writes) | difference | checked | our wall time |"
    );
    println!("|---|---:|---:|---:|---|---:|");
    let mut bad = Vec::new();
    for (name, workload, mqsim, asserted) in WORKLOADS {
        let started = std::time::Instant::now();
        let (ours, reads, writes) = match workload {
            Workload::Synthetic { reads, depth } => synthetic(reads, depth),
            Workload::Trace(t) => match &dir {
                Some(d) => trace(d, t),
                None => continue,
            },
        };
        // Shown, never asserted: the machine is shared.
        let wall = started.elapsed().as_secs_f64();
        let err = ours / mqsim - 1.0;
        println!(
            "| {name} | {mqsim:.0} us | {ours:.0} us ({reads:.0}, {writes:.0}) | {:+.0}% | {} | {wall:.2} s |",
            err * 100.0,
            if asserted { "+-25%" } else { "shown" }
        );
        if asserted && err.abs() > TOLERANCE {
            bad.push(format!("{name}: MQSim {mqsim:.0} us, ours {ours:.0} us"));
        }
    }
    assert!(bad.is_empty(), "outside +-25%: {bad:?}");
}
