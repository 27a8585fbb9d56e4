//! `elevator calibrate --iocost`: the `io.cost.model` line of the device measured, and an
//! `io.cost.qos` proposal found by simulated sweeps of the vrate bounds against a protection
//! scenario.
//!
//! **The model** comes from [`IOCOST_PLAN`]: the six figures `io.cost.model` takes, measured
//! as the kernel tree's `tools/cgroup/iocost_coef_gen.py` measures them, with two differences
//! it is compared against (bench/iocost-coef.sh, docs/iocost.md): the sequential bandwidth is
//! that of 1 MiB I/Os at depth 32 (the script: 128 MiB I/Os at depth 1, which the block layer
//! splits at `max_sectors_kb` anyway), and a tenth of each point is ramp (the script has
//! none). The four 4 KiB points run at the script's depth 64. Every point goes through Linux
//! native AIO ([`elevator_real::AioBackend`]), each I/O in its own `io_submit` with completions
//! collected between submissions, as the script's fio (`run_fio`: `--ioengine=libaio`, default
//! `iodepth_batch` 1) submits them: no batch for the kernel's plug to merge, and no io_uring
//! worker threads (on a loop device io_uring hands most I/O to io-wq workers, and fio's own
//! io_uring engine measured it 1.3-2.0x faster than its libaio engine). The script also sets the device's scheduler to `none` and `nomerges` to 1 while it
//! runs; calibrate leaves the device's queue settings alone (bench/iocost-coef.sh sets the
//! script's for both).
//!
//! **The QoS proposal** is searched on a simulated device (`--drive`: a built-in drive or the
//! spec `elevator calibrate -o` fitted for the device; io.cost's model is the one measured):
//! a protected group (`io.weight` 500, 4 KiB random reads at depth 4) beside a bulk group
//! (`io.weight` 100, 1 MiB sequential writes at depth 32), under `none`. The read target comes
//! from the device alone: `rpct=95`, `rlat` three times the reader's 95th percentile without
//! the writer (rounded up to 50 us); no write target (`wpct=0`, as the kernel's defaults;
//! `wlat` = `rlat`, so the period follows the read target: `ioc_refresh_period_us` takes the
//! larger latency). Then
//! every pair of vrate bounds of [`MINS`] x [`MAXES`] (min <= max) is simulated, and the
//! proposal is the pair under which the reader's 95th percentile stays within `rlat` with the
//! most write bandwidth (the smaller `max` on a tie); if none keeps it, the pair with the
//! lowest reader percentile. resctl-bench's iocost-tune solves the same problem on the real
//! device over hours; this searches a model of it in seconds, and is only as good as the model.

use anyhow::Context;
use elevator_core::group::IoCostDevice;
use elevator_core::qos::iocost::{Model, Qos};
use elevator_core::{registry, GroupTree, Nanos, SECTOR_BYTES};
use elevator_sim::{DriveModel, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::BuildEnv;
use rayon::prelude::*;
use serde::Serialize;

use super::measure::{Figures, Point, IOCOST_PLAN};

/// Lower vrate bounds tried, percent.
pub const MINS: [u32; 4] = [25, 50, 75, 100];
/// Upper vrate bounds tried, percent.
pub const MAXES: [u32; 6] = [100, 125, 150, 200, 300, 500];

/// The six figures of `io.cost.model` from the measured points (each must be present).
pub fn model(points: &[(Point, Figures)]) -> anyhow::Result<Model> {
    let get = |i: usize| -> anyhow::Result<Figures> {
        let p = IOCOST_PLAN[i];
        points
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, f)| *f)
            .with_context(|| format!("no measurement of {} (io.cost.model needs it)", p.label()))
    };
    let bps = |f: Figures| (f.mb_s * 1e6).round() as u64;
    let iops = |f: Figures| f.iops.round() as u64;
    Ok(Model {
        rbps: bps(get(0)?),
        rseqiops: iops(get(1)?),
        rrandiops: iops(get(2)?),
        wbps: bps(get(3)?),
        wseqiops: iops(get(4)?),
        wrandiops: iops(get(5)?),
    })
}

/// The `io.cost.model` that `calibrate --iocost` measures, measured on a simulated `drive`
/// instead of a real device: the six points of [`IOCOST_PLAN`], each run on the simulator over
/// the whole drive (as iocost_coef_gen.py `--testdev` runs fio over the whole device) for
/// `span` ([`super::measure::simulate`], the same jobs and figures), then [`model`]. What a
/// user of the drive would write into io.cost.model after running the kernel's tool on it.
pub fn simulated_model(drive: &DriveModel, span: super::measure::Span) -> anyhow::Result<Model> {
    let points = IOCOST_PLAN
        .par_iter()
        .map(|p| {
            let whole = drive.capacity_sectors() * SECTOR_BYTES;
            let f = super::measure::simulate(p, drive.device(), whole, span)?;
            anyhow::ensure!(
                f.ios > 0,
                "{}: no I/O completed in {:?} simulated on {}",
                p.label(),
                span.runtime,
                drive.name()
            );
            Ok((*p, f))
        })
        .collect::<anyhow::Result<Vec<(Point, Figures)>>>()?;
    model(&points)
}

/// One simulated run of the protection scenario.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Trial {
    /// vrate bounds, percent (0, 0: io.cost off).
    pub min: u32,
    /// Upper bound, percent.
    pub max: u32,
    /// The protected reader's 95th percentile latency, microseconds.
    pub read_p95_us: f64,
    /// Its IOPS.
    pub read_iops: f64,
    /// The bulk writer's bandwidth, MB/s.
    pub write_mb_s: f64,
}

/// What the sweep found.
#[derive(Clone, Debug, Serialize)]
pub struct Proposal {
    /// The proposed `io.cost.qos`.
    #[serde(skip)]
    pub qos: Qos,
    /// The reader alone: 95th percentile, microseconds.
    pub read_alone_p95_us: f64,
    /// The writer alone: 95th percentile, microseconds, and MB/s.
    pub write_alone_p95_us: f64,
    /// The writer alone, MB/s.
    pub write_alone_mb_s: f64,
    /// Both without io.cost.
    pub none: Trial,
    /// Every pair of bounds tried.
    pub trials: Vec<Trial>,
}

/// Simulated time of one trial, after its ramp.
const RUN: Nanos = Nanos::from_ms(1500);
const RAMP: Nanos = Nanos::from_ms(300);
const GIB: u64 = 1 << 30;

fn job(
    rw: RwMode,
    bs: u64,
    qd: u32,
    offset: u64,
    capacity: u64,
    name: &str,
) -> anyhow::Result<FioJob> {
    let cfg = FioJobConfig {
        rw,
        bs,
        iodepth: qd,
        offset: Some(offset),
        size: Some(GIB),
        time_based: true,
        runtime_ms: Some(RUN.as_ms()),
        ramp_ms: RAMP.as_ms(),
        direct: true,
        ..FioJobConfig::default()
    };
    let env = BuildEnv::new(capacity / SECTOR_BYTES, 1, name.to_string());
    FioJob::new(cfg, &env).map_err(|e| anyhow::anyhow!("{name}: {}: {}", e.field, e.reason))
}

/// Run the reader and/or the writer on `drive`, with io.cost (`lines`) or without.
fn run(
    drive: &DriveModel,
    reader: bool,
    writer: bool,
    lines: Option<(&Model, &Qos)>,
) -> anyhow::Result<(f64, f64, f64, f64)> {
    let capacity = drive.capacity_sectors() * SECTOR_BYTES;
    anyhow::ensure!(
        capacity >= 2 * GIB,
        "the drive holds less than the 2 GiB the sweep uses"
    );
    let mut tree = GroupTree::new();
    let hi = tree
        .add("/protected", None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let lo = tree
        .add("/bulk", None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some((m, q)) = lines {
        tree.io_mut(hi).weight = Some(500);
        tree.io_mut(lo).weight = Some(100);
        let strip = |l: String| l.split_once(' ').map(|x| x.1.to_string()).unwrap_or(l);
        tree.set_io_cost(IoCostDevice {
            model: Some(strip(m.line("0:0"))),
            qos: Some(strip(q.line("0:0"))),
        });
    }
    let none = registry::find("none").context("none is registered")?;
    let sched = none
        .build(&Default::default(), &tree)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut sim = Simulation::new(drive.device(), sched, tree);
    sim.set_ramp(RAMP);
    let mut idx = Vec::new();
    if reader {
        let j = job(RwMode::RandRead, 4096, 4, 0, capacity, "reader")?;
        idx.push((
            "r",
            sim.add_job(JobSlot::new("reader", Box::new(j)).group(hi)),
        ));
    }
    if writer {
        let j = job(RwMode::Write, 1 << 20, 32, GIB, capacity, "writer")?;
        idx.push((
            "w",
            sim.add_job(JobSlot::new("writer", Box::new(j)).group(lo)),
        ));
    }
    let r = sim.run(Some(RAMP + RUN + Nanos::from_ms(10)));
    let mut out = (0.0, 0.0, 0.0, 0.0);
    for (what, i) in idx {
        let s = r.jobs[i].metrics.summary("", "", r.end);
        if what == "r" {
            out.0 = s.read.lat_p95_ms * 1e3;
            out.1 = s.read.iops;
        } else {
            out.2 = s.write.lat_p95_ms * 1e3;
            out.3 = s.write.mb_s;
        }
    }
    Ok(out)
}

/// `x` rounded up to a multiple of `step`.
fn round_up(x: f64, step: u32) -> u32 {
    let s = f64::from(step);
    ((x / s).ceil() * s).max(s) as u32
}

/// Search the vrate bounds for `model` on `drive` (see the module documentation).
pub fn propose(model: &Model, drive: &DriveModel) -> anyhow::Result<Proposal> {
    let (read_alone_p95_us, _, _, _) = run(drive, true, false, None)?;
    let (_, _, write_alone_p95_us, write_alone_mb_s) = run(drive, false, true, None)?;
    let (rp, ri, _, wm) = run(drive, true, true, None)?;
    let none = Trial {
        min: 0,
        max: 0,
        read_p95_us: rp,
        read_iops: ri,
        write_mb_s: wm,
    };
    let qos_of = |min: u32, max: u32| Qos {
        enable: true,
        rppm: 950_000,
        rlat: round_up(read_alone_p95_us * 3.0, 50),
        wppm: 0,
        wlat: round_up(read_alone_p95_us * 3.0, 50),
        min_ppm: min * 10_000,
        max_ppm: max * 10_000,
    };
    let pairs: Vec<(u32, u32)> = MINS
        .iter()
        .flat_map(|&min| {
            MAXES
                .iter()
                .filter(move |&&max| max >= min)
                .map(move |&max| (min, max))
        })
        .collect();
    let trials = pairs
        .par_iter()
        .map(|&(min, max)| {
            let q = qos_of(min, max);
            let (rp, ri, _, wm) = run(drive, true, true, Some((model, &q)))?;
            Ok(Trial {
                min,
                max,
                read_p95_us: rp,
                read_iops: ri,
                write_mb_s: wm,
            })
        })
        .collect::<anyhow::Result<Vec<Trial>>>()?;
    let rlat = f64::from(qos_of(0, 0).rlat);
    let keeps: Vec<&Trial> = trials.iter().filter(|t| t.read_p95_us <= rlat).collect();
    let best = if keeps.is_empty() {
        trials
            .iter()
            .min_by(|a, b| a.read_p95_us.total_cmp(&b.read_p95_us))
            .expect("pairs were tried")
    } else {
        keeps
            .into_iter()
            .max_by(|a, b| {
                a.write_mb_s
                    .total_cmp(&b.write_mb_s)
                    .then(b.max.cmp(&a.max))
            })
            .expect("one keeps the target")
    };
    Ok(Proposal {
        qos: qos_of(best.min, best.max),
        read_alone_p95_us,
        write_alone_p95_us,
        write_alone_mb_s,
        none,
        trials,
    })
}

/// The device number a user writes before the fields: the block device's own, or the one
/// the file lives on.
pub fn devno(path: &std::path::Path) -> String {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    match std::fs::metadata(path) {
        Ok(m) => {
            let d = if m.file_type().is_block_device() {
                m.rdev()
            } else {
                m.dev()
            };
            // glibc's gnu_dev_major / gnu_dev_minor.
            let major = ((d >> 32) & 0xffff_f000) | ((d >> 8) & 0x0000_0fff);
            let minor = ((d >> 12) & 0xffff_ff00) | (d & 0x0000_00ff);
            format!("{major}:{minor}")
        }
        Err(_) => "MAJ:MIN".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(iops: f64, mb_s: f64) -> Figures {
        Figures {
            ios: 1000,
            iops,
            mb_s,
            mean_us: 100.0,
            p50_us: 90.0,
            p99_us: 300.0,
        }
    }

    /// Each figure of the model line comes from its own point: bandwidths in bytes per second
    /// from the 1 MiB sequential points, IOPS from the 4 KiB points.
    #[test]
    fn the_model_line_takes_each_figure_from_its_point() {
        let figs = [
            f(1000.0, 1048.6),
            f(50_000.0, 204.8),
            f(30_000.0, 122.9),
            f(800.0, 838.9),
            f(40_000.0, 163.8),
            f(20_000.0, 81.9),
        ];
        let points: Vec<(Point, Figures)> = IOCOST_PLAN.iter().copied().zip(figs).collect();
        let m = model(&points).unwrap();
        assert_eq!(
            (
                m.rbps,
                m.rseqiops,
                m.rrandiops,
                m.wbps,
                m.wseqiops,
                m.wrandiops
            ),
            (1_048_600_000, 50_000, 30_000, 838_900_000, 40_000, 20_000)
        );
        let e = model(&points[1..]).unwrap_err().to_string();
        assert!(e.contains("read 1m qd32"), "{e}");
    }

    #[test]
    fn bounds_are_rounded_up_to_the_step() {
        assert_eq!(round_up(101.0, 50), 150);
        assert_eq!(round_up(0.0, 50), 50);
        assert_eq!(round_up(150.0, 50), 150);
    }
}
