//! `elevator reproduce ssd-loo`: the Samsung 980 PRO model predicting what it was not fitted
//! to. Leave-one-configuration-out over the ICPE'24 figures in shared/data/nvme-980pro
//! (Ren, Doekemeijer, Tehrany, Trivedi, "BFQ, Multiqueue-Deadline, or Kyber?", ICPE 2024;
//! MIT): for every configuration, the model's free parameters are fitted to every other
//! configuration's figures by [`minimise`], and the configuration's figures are predicted with
//! them.
//!
//! Two fits, each over the parameters the figures can see:
//!
//! - **The drive's read side** (`samsung-980pro-1tb`): `host.command_us`, `host.firmware_us`,
//!   `flash.small_read_us`, `flash.read_step_us`, `flash.read_us`; everything else is the
//!   spec's (organisation, the class's write side). Figures: fig-1's 36 cells of 4 KiB random
//!   reads (1, 2, 4, 8 processes x QD 1..256, IOPS), fig-2's QD1 reader (mean and p99
//!   latency), and the 20 cells of fig-1's block-size set that tests/ssd_980pro.rs asserts
//!   (every size at QD 64 and 128, 8 KiB and up at QD1; why only those: docs/ssd-model.md).
//!   A configuration is one process count of the 4 KiB set, the QD1 reader, or one block size;
//!   its figures are held out together (13 configurations).
//! - **The host's per-I/O costs** (`icpe24-10core`), on the drive as built in: `io_us` for
//!   none and kyber; `lock_us` and `handoff_us` for mq-deadline and bfq, whose `io_us` is
//!   none's as fitted in the same fold (docs/ssd-model.md: one process's ceiling fixes only
//!   their sum). Figures: fig-7's total IOPS of 1..15 processes of QD128 4 KiB random reads
//!   under each scheduler. A configuration is one process count, held out under all four.
//!
//! Every fit starts from the same point ([`READ_START`], [`COST_START`]: round values, not
//! the spec's, which were set with every figure in view), so a held-out figure reaches its
//! prediction only through the others; and every fit also scans a fixed grid over the bounds
//! and searches from its best point, keeping the better end ([`scan_then_minimise`]). The objective is the sum of squared log errors
//! (`ln(model / measured)`) over the training figures. Targets (issue 28): every read figure
//! within +-15%, every fig-7 figure within +-25%.
//!
//! Not here: fig-11c's writers (the drive's `over_provisioning` is fitted to one published
//! figure, not in shared/data, and the other belongs to a state with its own fit: there is
//! no second figure to hold out against the same parameter; docs/ssd-model.md).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use elevator_core::{registry, GroupTree, Nanos, Settings};
use elevator_sim::cpu::{CpuSpec, SchedulerCost};
use elevator_sim::ssd::closed_loop::{closed_loop, requests, ClosedLoop};
use elevator_sim::ssd::{Ssd, SsdSpec};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::BuildEnv;
use rayon::prelude::*;
use serde::Serialize;

use crate::output::say;

/// Queue depths of fig-1.
const QDS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
/// Process counts of fig-1's 4 KiB set.
const PROCS: [u32; 4] = [1, 2, 4, 8];
/// fig-1's block-size set: the file name's size and the bytes.
const SIZES: [(&str, u64); 8] = [
    ("512", 512),
    ("1k", 1024),
    ("2k", 2048),
    ("4k", 4096),
    ("8k", 8192),
    ("16k", 16384),
    ("32k", 32768),
    ("64k", 65536),
];
/// fig-7's schedulers.
const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];
/// fig-7's process counts.
const TAPP_PROCS: u32 = 15;
/// fig-7 simulated ramp and run, ms (tests/ssd_980pro_tapp.rs's).
const TAPP_TIMES_MS: (u64, u64) = (10, 30);
/// Completions of the fig-2 QD1 reader's run.
const QD1_REQUESTS: u64 = 30_000;
/// The fits run each figure's closed loop for this share of its completions (at least
/// [`FIT_MIN_REQUESTS`]) and fig-7's runs for [`TAPP_FIT_TIMES_MS`]: the machine is shared,
/// and a fit takes a hundred evaluations. Every figure shown (fitted and predicted) is then
/// run at full length with the parameters found.
const FIT_SHARE: u64 = 4;
/// The shortest fitting run, completions.
const FIT_MIN_REQUESTS: u64 = 5_000;
/// fig-7 ramp and run while fitting, ms.
const TAPP_FIT_TIMES_MS: (u64, u64) = (10, 15);
/// Read figures' target.
pub const READ_TOLERANCE: f64 = 0.15;
/// fig-7 figures' target.
pub const TAPP_TOLERANCE: f64 = 0.25;

/// The read side's free parameters, in this order.
pub const READ_PARAMS: [&str; 5] = [
    "host.command_us",
    "host.firmware_us",
    "flash.small_read_us",
    "flash.read_step_us",
    "flash.read_us",
];
/// Where every read-side fit starts: round values of the class (a per-command host cost of a
/// few us, a firmware latency of tens of us, a TLC 4 KiB sense of tens of us, steps between
/// page types of a few us, a full-page sense under 100 us), not the spec's fitted ones.
pub const READ_START: [f64; 5] = [2.0, 20.0, 40.0, 5.0, 80.0];
/// Bounds of the read-side parameters (us).
const READ_BOUNDS: [(f64, f64); 5] = [
    (0.2, 50.0),
    (0.5, 200.0),
    (2.0, 200.0),
    (0.1, 50.0),
    (10.0, 500.0),
];
/// Where every host-cost fit starts (us): `io_us` for none and kyber, `lock_us` and
/// `handoff_us` for mq-deadline and bfq.
pub const COST_START: [f64; 2] = [2.0, 1.0];
/// Bounds of the host costs (us).
const COST_BOUNDS: (f64, f64) = (0.05, 50.0);

/// What a figure is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Figure {
    /// fig-1: total IOPS of `procs` processes of 4 KiB random reads at `qd`.
    Read4k {
        /// Processes.
        procs: u32,
        /// Queue depth of each.
        qd: u32,
    },
    /// fig-2: the QD1 reader's mean (or p99) latency, us.
    Qd1 {
        /// The p99 rather than the mean.
        p99: bool,
    },
    /// fig-1's block-size set: one process's IOPS at `bs` bytes and `qd`.
    ReadBs {
        /// Block size, bytes.
        bs: u64,
        /// Queue depth.
        qd: u32,
    },
    /// fig-7: total IOPS of `procs` QD128 processes under `sched`.
    Tapp {
        /// Index into [`SCHEDULERS`].
        sched: usize,
        /// Processes.
        procs: u32,
    },
}

/// One measured figure and the configuration it belongs to.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// What it is.
    pub figure: Figure,
    /// Its configuration: the figures held out together.
    pub config: String,
    /// The measured value (IOPS or us).
    pub measured: f64,
}

impl Cell {
    fn tolerance(&self) -> f64 {
        match self.figure {
            Figure::Tapp { .. } => TAPP_TOLERANCE,
            _ => READ_TOLERANCE,
        }
    }

    /// A short name for tables.
    fn label(&self) -> String {
        match self.figure {
            Figure::Read4k { procs, qd } => format!("fig-1 4 KiB, {procs} proc x QD{qd}, kIOPS"),
            Figure::Qd1 { p99: false } => "fig-2 QD1 reader mean, us".into(),
            Figure::Qd1 { p99: true } => "fig-2 QD1 reader p99, us".into(),
            Figure::ReadBs { bs, qd } => format!("fig-1 {} B, QD{qd}, kIOPS", bs),
            Figure::Tapp { sched, procs } => {
                format!("fig-7 {} x{procs}, kIOPS", SCHEDULERS[sched])
            }
        }
    }

    /// The value as the tables show it (kIOPS or us).
    fn shown(&self, v: f64) -> f64 {
        match self.figure {
            Figure::Qd1 { .. } => v,
            _ => v / 1000.0,
        }
    }
}

/// A fio JSON output's field at `path` (`jobs`, index, ...), with the file and field named
/// when it is missing or not a number.
fn field<'a>(
    v: &'a serde_json::Value,
    file: &Path,
    path: &[&str],
) -> anyhow::Result<&'a serde_json::Value> {
    let mut at = v;
    for (i, key) in path.iter().enumerate() {
        let next = match key.parse::<usize>() {
            Ok(n) => at.get(n),
            Err(_) => at.get(*key),
        };
        at = next.with_context(|| {
            format!(
                "{}: field `{}`: missing",
                file.display(),
                path[..=i].join(".")
            )
        })?;
    }
    Ok(at)
}

fn number(v: &serde_json::Value, file: &Path, path: &[&str]) -> anyhow::Result<f64> {
    let f = field(v, file, path)?;
    f.as_f64().filter(|x| x.is_finite()).with_context(|| {
        format!(
            "{}: field `{}`: not a number: {f}",
            file.display(),
            path.join(".")
        )
    })
}

/// A fio JSON output (text before its first `{` skipped, as fio prints notices there).
fn fio_json(file: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(file).with_context(|| format!("{}", file.display()))?;
    let start = text
        .find('{')
        .with_context(|| format!("{}: no JSON object in the file", file.display()))?;
    serde_json::from_str(&text[start..]).map_err(|e| {
        // serde_json's line and column count from the object's start.
        let before = text[..start].matches('\n').count();
        anyhow::anyhow!(
            "{}:{}:{}: fio JSON: {e}",
            file.display(),
            e.line() + before,
            e.column()
        )
    })
}

/// The total read IOPS over a fio output's jobs.
fn total_read_iops(v: &serde_json::Value, file: &Path) -> anyhow::Result<f64> {
    let jobs = field(v, file, &["jobs"])?
        .as_array()
        .with_context(|| format!("{}: field `jobs`: not a list", file.display()))?;
    if jobs.is_empty() {
        anyhow::bail!("{}: field `jobs`: empty", file.display());
    }
    let mut sum = 0.0;
    for i in 0..jobs.len() {
        sum += number(v, file, &["jobs", &i.to_string(), "read", "iops"])?;
    }
    Ok(sum)
}

/// Every figure of shared/data/nvme-980pro the fits use, read from `dir`.
pub fn load(dir: &Path) -> anyhow::Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for procs in PROCS {
        for qd in QDS {
            let f = dir.join(format!(
                "fig-1-samsung-baseline/results_qd_iops_inc_proc_4kb/bs_4_proc_{procs}_qd_{qd}.txt"
            ));
            let v = fio_json(&f)?;
            cells.push(Cell {
                figure: Figure::Read4k { procs, qd },
                config: format!("fig-1 4 KiB, {procs} proc"),
                measured: total_read_iops(&v, &f)?,
            });
        }
    }
    let f = dir.join(
        "fig-2-4a-6a-intra-proc-scal/results_lapp_cdf_inc_qd_1_dev_1_core/qd_1_dev_1_sche_none.txt",
    );
    let v = fio_json(&f)?;
    for p99 in [false, true] {
        let ns = if p99 {
            number(
                &v,
                &f,
                &["jobs", "0", "read", "clat_ns", "percentile", "99.000000"],
            )?
        } else {
            number(&v, &f, &["jobs", "0", "read", "clat_ns", "mean"])?
        };
        cells.push(Cell {
            figure: Figure::Qd1 { p99 },
            config: "fig-2 QD1 reader".into(),
            measured: ns / 1000.0,
        });
    }
    for (name, bs) in SIZES {
        for qd in QDS {
            // The cells tests/ssd_980pro.rs asserts (docs/ssd-model.md says why only these).
            if !(qd == 64 || qd == 128 || (qd == 1 && bs >= 8192)) {
                continue;
            }
            let f = dir.join(format!(
                "fig-1-samsung-baseline/results_qd_iops_vary_bs/bs_{name}_qd_{qd}.txt"
            ));
            let v = fio_json(&f)?;
            cells.push(Cell {
                figure: Figure::ReadBs { bs, qd },
                config: format!("fig-1 block size {name}"),
                measured: total_read_iops(&v, &f)?,
            });
        }
    }
    for procs in 1..=TAPP_PROCS {
        for (sched, name) in SCHEDULERS.iter().enumerate() {
            let f = dir.join(format!(
                "fig-7-tapp-scal-1-ssd/results_tapp_inc_proc_1_dev_10_core/proc_{procs}_dev_1_sche_{name}.txt"
            ));
            let v = fio_json(&f)?;
            let opts = field(&v, &f, &["global options"])?;
            let got = |key: &str| opts.get(key).and_then(|x| x.as_str()).unwrap_or("");
            if got("ioscheduler") != *name
                || got("numjobs") != procs.to_string()
                || got("iodepth") != "128"
                || got("rw") != "randread"
                || got("bs") != "4kb"
            {
                anyhow::bail!(
                    "{}: field `global options`: not {procs} jobs of QD128 4 KiB random reads under {name}",
                    f.display()
                );
            }
            cells.push(Cell {
                figure: Figure::Tapp { sched, procs },
                config: format!("fig-7 {procs} proc"),
                measured: total_read_iops(&v, &f)?,
            });
        }
    }
    Ok(cells)
}

/// A deterministic coarse scan before the pattern search: `start` and every point of a grid
/// of `levels[i]` values per coordinate, spaced evenly in the logarithm over its bounds (the
/// centres of `levels[i]` equal cells of `[ln lo, ln hi]`), evaluated in a fixed order; returns
/// the best (the first found on a tie, `start` first). What it is for: the objective can be
/// flat where the search starts (fig-7's `io_us` below the drive's `command_us`, where one
/// process's ceiling is the drive's whatever the cost), and the pattern search's first steps
/// from a flat region find nothing and stay there.
pub fn coarse_scan(
    f: &(dyn Fn(&[f64]) -> f64 + Sync),
    start: &[f64],
    bounds: &[(f64, f64)],
    levels: &[usize],
) -> (Vec<f64>, f64) {
    let mut best = start.to_vec();
    let mut fbest = f(start);
    let total: usize = levels.iter().product();
    for n in 0..total {
        let mut k = n;
        let point: Vec<f64> = levels
            .iter()
            .zip(bounds)
            .map(|(&l, &(lo, hi))| {
                let i = k % l;
                k /= l;
                let (a, b) = (lo.ln(), hi.ln());
                (a + (b - a) * (i as f64 + 0.5) / l as f64).exp()
            })
            .collect();
        let fp = f(&point);
        if fp < fbest {
            best = point;
            fbest = fp;
        }
    }
    (best, fbest)
}

/// [`minimise`] from `start` and from the best point of [`coarse_scan`]; the better of the
/// two ends (the one from `start` on a tie). Both: the scan's best cell can lie in another
/// basin than the one the search from `start` reaches, and end higher (the read side's 3^5
/// grid did: objective 0.116 against 0.098 from the start over every figure, 2026-11-29).
pub fn scan_then_minimise(
    f: &(dyn Fn(&[f64]) -> f64 + Sync),
    start: &[f64],
    bounds: &[(f64, f64)],
    levels: &[usize],
) -> (Vec<f64>, f64) {
    let from_start = minimise(f, start, bounds, STEP, MIN_STEP);
    let (from, _) = coarse_scan(f, start, bounds, levels);
    let from_scan = minimise(f, &from, bounds, STEP, MIN_STEP);
    if from_scan.1 < from_start.1 {
        from_scan
    } else {
        from_start
    }
}

/// A deterministic pattern search (Hooke and Jeeves, 1961) in the logarithms of the
/// parameters: from `start`, try each coordinate up and down by `step` (a factor
/// `e^step`), keep the first improvement, and after a sweep that improved try the same move
/// again (the pattern move); when a sweep improves nothing, halve the step, down to
/// `min_step`. Bounds clamp each coordinate. Returns the best point and its value.
pub fn minimise(
    f: &(dyn Fn(&[f64]) -> f64 + Sync),
    start: &[f64],
    bounds: &[(f64, f64)],
    step: f64,
    min_step: f64,
) -> (Vec<f64>, f64) {
    let clamp = |x: &mut Vec<f64>| {
        for (v, (lo, hi)) in x.iter_mut().zip(bounds) {
            *v = v.clamp(lo.ln(), hi.ln());
        }
    };
    let value = |x: &[f64]| f(&x.iter().map(|v| v.exp()).collect::<Vec<_>>());
    let mut x: Vec<f64> = start.iter().map(|v| v.ln()).collect();
    clamp(&mut x);
    let mut fx = value(&x);
    let mut step = step;
    while step >= min_step {
        let before = x.clone();
        for i in 0..x.len() {
            for dir in [1.0, -1.0] {
                let mut y = x.clone();
                y[i] += dir * step;
                clamp(&mut y);
                if y == x {
                    continue;
                }
                let fy = value(&y);
                if fy < fx {
                    x = y;
                    fx = fy;
                    break;
                }
            }
        }
        if x == before {
            step /= 2.0;
            continue;
        }
        // Pattern moves: repeat the sweep's move while it keeps improving.
        loop {
            let mut y: Vec<f64> = x.iter().zip(&before).map(|(a, b)| a + (a - b)).collect();
            clamp(&mut y);
            if y == x {
                break;
            }
            let fy = value(&y);
            if fy < fx {
                x = y;
                fx = fy;
            } else {
                break;
            }
        }
    }
    (x.iter().map(|v| v.exp()).collect(), fx)
}

/// A read figure's run: processes, queue depth, block size, I/Os, and the parameters' bits.
type ReadKey = (u32, u32, u64, u64, Vec<u64>);
/// A throughput-app figure's run: scheduler, processes, and the bits of its host costs and run times.
type TappKey = (usize, u32, Vec<u64>);

/// The model's runs, memoised by figure and parameters (folds start from the same point, so
/// their first steps are the same runs).
struct Model {
    drive: SsdSpec,
    host: CpuSpec,
    reads: Mutex<HashMap<ReadKey, ClosedLoop>>,
    tapp: Mutex<HashMap<TappKey, f64>>,
}

fn bits(p: &[f64]) -> Vec<u64> {
    p.iter().map(|v| v.to_bits()).collect()
}

impl Model {
    fn drive_with(&self, p: &[f64]) -> SsdSpec {
        let mut s = self.drive.clone();
        s.host.command_us = p[0];
        s.host.firmware_us = p[1];
        s.flash.small_read_us = p[2];
        s.flash.read_step_us = p[3];
        s.flash.read_us = p[4];
        s
    }

    fn read_run(&self, p: &[f64], procs: u32, qd: u32, bs: u64, n: u64) -> ClosedLoop {
        let key = (procs, qd, bs, n, bits(p));
        if let Some(r) = self.reads.lock().expect("memo").get(&key) {
            return *r;
        }
        let r = closed_loop(&self.drive_with(p), procs, qd, bs, n).unwrap_or(ClosedLoop {
            iops: 0.0,
            mean_us: 0.0,
            p99_us: 0.0,
        });
        self.reads.lock().expect("memo").insert(key, r);
        r
    }

    /// A read figure's model value at read parameters `p`, from a run of full length or,
    /// `fitting`, of [`FIT_SHARE`].
    fn read_figure(&self, fig: Figure, p: &[f64], fitting: bool) -> f64 {
        let n = |full: u64| match fitting {
            true => (full / FIT_SHARE).max(FIT_MIN_REQUESTS),
            false => full,
        };
        match fig {
            Figure::Read4k { procs, qd } => {
                self.read_run(p, procs, qd, 4096, n(requests(procs, qd)))
                    .iops
            }
            Figure::Qd1 { p99 } => {
                let r = self.read_run(p, 1, 1, 4096, n(QD1_REQUESTS));
                if p99 {
                    r.p99_us
                } else {
                    r.mean_us
                }
            }
            Figure::ReadBs { bs, qd } => self.read_run(p, 1, qd, bs, n(requests(1, qd))).iops,
            Figure::Tapp { .. } => unreachable!("not a read figure"),
        }
    }

    /// fig-7's total IOPS of `procs` processes under `sched` with its cost `cost`, on the
    /// drive as built in, through the engine (as tests/ssd_980pro_tapp.rs runs it).
    fn tapp_figure(&self, sched: usize, procs: u32, cost: SchedulerCost, fitting: bool) -> f64 {
        let times = if fitting {
            TAPP_FIT_TIMES_MS
        } else {
            TAPP_TIMES_MS
        };
        let key = (
            sched,
            procs,
            bits(&[cost.io_us, cost.lock_us, cost.handoff_us, times.1 as f64]),
        );
        if let Some(r) = self.tapp.lock().expect("memo").get(&key) {
            return *r;
        }
        let r = simulate_tapp(
            &self.drive,
            &self.host,
            SCHEDULERS[sched],
            cost,
            procs,
            times,
        )
        .unwrap_or(0.0);
        self.tapp.lock().expect("memo").insert(key, r);
        r
    }
}

/// One fig-7 run: `procs` fio jobs of QD128 4 KiB random reads under `sched` with the host
/// model's cost for it set to `cost`.
fn simulate_tapp(
    drive: &SsdSpec,
    host: &CpuSpec,
    sched: &str,
    cost: SchedulerCost,
    procs: u32,
    (ramp_ms, runtime_ms): (u64, u64),
) -> anyhow::Result<f64> {
    let mut host = host.clone();
    host.scheduler.insert(sched.to_string(), cost);
    let device = Ssd::new(drive.clone())?;
    let capacity = device.capacity_sectors();
    let info = registry::find(sched).with_context(|| format!("scheduler {sched}"))?;
    let mut settings = Settings::new();
    if info.has_tunable("rotational") {
        settings.set("rotational", 0);
    }
    let groups = GroupTree::new();
    let scheduler = info.build(&settings, &groups)?;
    let mut sim = Simulation::new(Box::new(device), scheduler, groups);
    sim.set_host_cpu(&host);
    sim.set_host_drives(NonZeroU32::MIN);
    sim.set_ramp(Nanos::from_ms(ramp_ms));
    for p in 0..procs {
        let cfg = FioJobConfig {
            rw: RwMode::RandRead,
            bs: 4096,
            iodepth: 128,
            direct: true,
            norandommap: true,
            time_based: true,
            ramp_ms,
            runtime_ms: Some(runtime_ms),
            ..FioJobConfig::default()
        };
        let env = BuildEnv::new(capacity, 1, format!("tapp.{p}"));
        let job = FioJob::new(cfg, &env)?;
        sim.add_job(JobSlot::new(format!("tapp.{p}"), Box::new(job)));
    }
    let report = sim.run(None);
    Ok(report.summaries().iter().map(|s| s.read.iops).sum())
}

fn log_error(model: f64, measured: f64) -> f64 {
    if model > 0.0 && measured > 0.0 {
        (model / measured).ln().powi(2)
    } else {
        1e6
    }
}

/// One configuration's fit and what it predicts.
#[derive(Clone, Debug, Serialize)]
pub struct Fold {
    /// The configuration held out (`all`: the fit to every figure).
    pub held_out: String,
    /// The parameters fitted without it, by name.
    pub params: Vec<(String, f64)>,
    /// The training objective reached (sum of squared log errors).
    pub objective: f64,
}

/// One figure: measured, fitted with every figure, predicted without its configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The figure.
    pub cell: Cell,
    /// Its short name.
    pub label: String,
    /// The model fitted to every figure (its own included).
    pub fitted: f64,
    /// The model fitted without the figure's configuration.
    pub predicted: f64,
    /// `predicted / measured - 1`.
    pub error: f64,
    /// The target (+-).
    pub tolerance: f64,
    /// Whether the prediction is within the target.
    pub within: bool,
}

/// The whole leave-one-out: the folds and every figure's row.
#[derive(Clone, Debug, Serialize)]
pub struct Loo {
    /// Read-side fits: every figure, then each configuration held out.
    pub read_folds: Vec<Fold>,
    /// Host-cost fits, per scheduler: every figure, then each process count held out.
    pub cost_folds: Vec<(String, Vec<Fold>)>,
    /// Every figure.
    pub rows: Vec<Row>,
}

const STEP: f64 = 0.25;
/// The coarse scan's values per read-side parameter (3^5 = 243 points: cells a factor of
/// 2.4-6.3 wide over the bounds; the memo makes every fold after the first reuse them).
const READ_LEVELS: usize = 3;
/// The coarse scan's values of a one-parameter host cost (cells a factor of 1.33 wide over
/// 0.05-50 us: the kyber and none `io_us` plateau below `command_us` is crossed).
const COST_LEVELS_1D: usize = 24;
/// The coarse scan's values per parameter of a two-parameter host cost (12 x 12, cells a
/// factor of 1.78 wide).
const COST_LEVELS_2D: usize = 12;
const MIN_STEP: f64 = 0.01;

/// Fit the read side to `train`; returns the parameters and objective.
fn fit_reads(model: &Model, train: &[&Cell]) -> (Vec<f64>, f64) {
    let f = |p: &[f64]| -> f64 {
        train
            .par_iter()
            .map(|c| log_error(model.read_figure(c.figure, p, true), c.measured))
            .sum()
    };
    scan_then_minimise(&f, &READ_START, &READ_BOUNDS, &[READ_LEVELS; 5])
}

/// The cost under `sched` from its fitted parameters `p` and none's `io_us`.
fn cost(sched: usize, p: &[f64], none_io_us: f64) -> SchedulerCost {
    match SCHEDULERS[sched] {
        "none" | "kyber" => SchedulerCost {
            io_us: p[0],
            lock_us: 0.0,
            handoff_us: 0.0,
        },
        _ => SchedulerCost {
            io_us: none_io_us,
            lock_us: p[0],
            handoff_us: p[1],
        },
    }
}

fn cost_names(sched: usize) -> Vec<&'static str> {
    match SCHEDULERS[sched] {
        "none" | "kyber" => vec!["io_us"],
        _ => vec!["lock_us", "handoff_us"],
    }
}

/// Fit `sched`'s cost to `train` (its fig-7 figures) with none's `io_us` given.
fn fit_cost(model: &Model, sched: usize, train: &[&Cell], none_io_us: f64) -> (Vec<f64>, f64) {
    let f = |p: &[f64]| -> f64 {
        let c = cost(sched, p, none_io_us);
        train
            .par_iter()
            .map(|cell| match cell.figure {
                Figure::Tapp { procs, .. } => {
                    log_error(model.tapp_figure(sched, procs, c, true), cell.measured)
                }
                _ => unreachable!("fig-7 figures only"),
            })
            .sum()
    };
    let n = cost_names(sched).len();
    let bounds = vec![COST_BOUNDS; n];
    let start = match n {
        1 => vec![COST_START[0]],
        _ => vec![COST_START[1], COST_START[1]],
    };
    let levels = match n {
        1 => vec![COST_LEVELS_1D],
        _ => vec![COST_LEVELS_2D; n],
    };
    scan_then_minimise(&f, &start, &bounds, &levels)
}

/// Run the leave-one-out over `cells`: the read side's unless `read` is false, the host
/// costs' unless `tapp` is false (a part not run leaves its rows out).
pub fn leave_one_out(cells: &[Cell], read: bool, tapp: bool) -> anyhow::Result<Loo> {
    let model = Model {
        drive: SsdSpec::builtin("samsung-980pro-1tb").context("built-in drive")?,
        host: CpuSpec::builtin("icpe24-10core").context("built-in host")?,
        reads: Mutex::new(HashMap::new()),
        tapp: Mutex::new(HashMap::new()),
    };
    let mut rows: Vec<Option<(f64, f64)>> = vec![None; cells.len()];

    // The read side.
    let reads: Vec<usize> = (0..cells.len())
        .filter(|&i| read && !matches!(cells[i].figure, Figure::Tapp { .. }))
        .collect();
    let mut configs: Vec<String> = Vec::new();
    for &i in &reads {
        if !configs.contains(&cells[i].config) {
            configs.push(cells[i].config.clone());
        }
    }
    let named = |p: &[f64], names: &[&str]| -> Vec<(String, f64)> {
        names
            .iter()
            .map(|n| n.to_string())
            .zip(p.iter().copied())
            .collect()
    };
    let all: Vec<&Cell> = reads.iter().map(|&i| &cells[i]).collect();
    let mut read_folds = Vec::new();
    if read {
        let (full, objective) = fit_reads(&model, &all);
        say!(
            "read side, every figure: {:?} (objective {objective:.4})",
            full
        );
        read_folds.push(Fold {
            held_out: "all".into(),
            params: named(&full, &READ_PARAMS),
            objective,
        });
        for &i in &reads {
            rows[i] = Some((model.read_figure(cells[i].figure, &full, false), 0.0));
        }
        for config in &configs {
            let train: Vec<&Cell> = all
                .iter()
                .copied()
                .filter(|c| &c.config != config)
                .collect();
            let (p, objective) = fit_reads(&model, &train);
            say!("read side without {config}: {p:?} (objective {objective:.4})");
            for &i in &reads {
                if &cells[i].config == config {
                    let fitted = rows[i].map_or(0.0, |r| r.0);
                    let predicted = model.read_figure(cells[i].figure, &p, false);
                    // As each fold ends: a long run can be followed, and cut short, as it goes.
                    say!(
                        "  {}: measured {:.1}, predicted {:.1} ({:+.1}%)",
                        cells[i].label(),
                        cells[i].shown(cells[i].measured),
                        cells[i].shown(predicted),
                        (predicted / cells[i].measured - 1.0) * 100.0
                    );
                    rows[i] = Some((fitted, predicted));
                }
            }
            read_folds.push(Fold {
                held_out: config.clone(),
                params: named(&p, &READ_PARAMS),
                objective,
            });
        }
    }

    // The host's costs: none first (mq-deadline and bfq take its io_us, fold by fold).
    let mut cost_folds = Vec::new();
    let tapp_of = |sched: usize| -> Vec<usize> {
        (0..cells.len())
            .filter(|&i| matches!(cells[i].figure, Figure::Tapp { sched: s, .. } if s == sched))
            .collect()
    };
    let mut none_io: HashMap<String, f64> = HashMap::new();
    let order: &[usize] = if tapp { &[0, 2, 1, 3] } else { &[] };
    for &sched in order {
        let mine = tapp_of(sched);
        let mut folds = Vec::new();
        let mut held: Vec<String> = vec!["all".into()];
        held.extend(mine.iter().map(|&i| cells[i].config.clone()));
        for h in held {
            let train: Vec<&Cell> = mine
                .iter()
                .map(|&i| &cells[i])
                .filter(|c| c.config != h)
                .collect();
            let none_io_us = none_io.get(&h).copied().unwrap_or(0.0);
            let (p, objective) = fit_cost(&model, sched, &train, none_io_us);
            if sched == 0 {
                none_io.insert(h.clone(), p[0]);
            }
            let c = cost(sched, &p, none_io_us);
            for &i in &mine {
                let Figure::Tapp { procs, .. } = cells[i].figure else {
                    continue;
                };
                if h == "all" {
                    rows[i] = Some((model.tapp_figure(sched, procs, c, false), 0.0));
                } else if cells[i].config == h {
                    let fitted = rows[i].map_or(0.0, |r| r.0);
                    rows[i] = Some((fitted, model.tapp_figure(sched, procs, c, false)));
                }
            }
            let mut params = named(&p, &cost_names(sched));
            if sched == 1 || sched == 3 {
                params.insert(0, ("io_us (none's)".into(), none_io_us));
            }
            folds.push(Fold {
                held_out: h,
                params,
                objective,
            });
        }
        say!("{}: every figure {:?}", SCHEDULERS[sched], folds[0].params);
        cost_folds.push((SCHEDULERS[sched].to_string(), folds));
    }

    let rows = cells
        .iter()
        .zip(rows)
        .filter_map(|(c, r)| {
            let (fitted, predicted) = r?;
            let error = predicted / c.measured - 1.0;
            Some(Row {
                label: c.label(),
                cell: c.clone(),
                fitted,
                predicted,
                error,
                tolerance: c.tolerance(),
                within: error.abs() <= c.tolerance(),
            })
        })
        .collect();
    Ok(Loo {
        read_folds,
        cost_folds,
        rows,
    })
}

/// Where the data lies: `--data DIR`'s nvme-980pro, or shared/data's.
fn data_dir() -> Option<PathBuf> {
    elevator_workload::traces::shared_data_dir()
        .map(|d| d.join("nvme-980pro"))
        .filter(|d| d.join("fig-1-samsung-baseline").is_dir())
}

/// Print the table; return the JSON. `part`: `read` or `tapp` alone.
pub fn run(part: Option<&str>) -> anyhow::Result<serde_json::Value> {
    let dir = data_dir().context(
        "shared/data/nvme-980pro not found (set ELEVATOR_DATA to the directory holding it)",
    )?;
    say!(
        "Leave-one-configuration-out on the ICPE'24 980 PRO figures ({}):",
        dir.display()
    );
    say!("each configuration's figures predicted by the model fitted to all the others.\n");
    let cells = load(&dir)?;
    let loo = leave_one_out(&cells, part != Some("tapp"), part != Some("read"))?;
    say!();
    say!("| figure | measured | fitted to all | predicted, held out | error | target |");
    say!("|---|---:|---:|---:|---:|---|");
    for r in &loo.rows {
        say!(
            "| {} | {:.1} | {:.1} | {:.1} | {:+.1}% | +-{:.0}%{} |",
            r.label,
            r.cell.shown(r.cell.measured),
            r.cell.shown(r.fitted),
            r.cell.shown(r.predicted),
            r.error * 100.0,
            r.tolerance * 100.0,
            if r.within { "" } else { " **missed**" }
        );
    }
    let missed = loo.rows.iter().filter(|r| !r.within).count();
    let worst = |tapp: bool| {
        loo.rows
            .iter()
            .filter(|r| matches!(r.cell.figure, Figure::Tapp { .. }) == tapp)
            .map(|r| r.error.abs())
            .fold(0.0, f64::max)
    };
    say!(
        "\n{} of {} figures within their target; largest read error {:.1}%, largest fig-7 error {:.1}%.",
        loo.rows.len() - missed,
        loo.rows.len(),
        worst(false) * 100.0,
        worst(true) * 100.0
    );
    say!("\nFitted parameters, read side (held out: params):");
    for f in &loo.read_folds {
        say!(
            "  {}: {} (objective {:.4})",
            f.held_out,
            fmt_params(&f.params),
            f.objective
        );
    }
    for (sched, folds) in &loo.cost_folds {
        say!("Fitted host costs, {sched}:");
        for f in folds {
            say!(
                "  {}: {} (objective {:.4})",
                f.held_out,
                fmt_params(&f.params),
                f.objective
            );
        }
    }
    Ok(serde_json::to_value(&loo)?)
}

fn fmt_params(p: &[(String, f64)]) -> String {
    p.iter()
        .map(|(n, v)| format!("{n} {v:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_search_finds_a_bowls_bottom_from_far_away() {
        // (ln x - ln 3)^2 + (ln y - ln 0.5)^2: minimum at (3, 0.5).
        let f = |p: &[f64]| (p[0].ln() - 3f64.ln()).powi(2) + (p[1].ln() - 0.5f64.ln()).powi(2);
        let (x, fx) = minimise(&f, &[40.0, 40.0], &[(0.01, 100.0); 2], 0.25, 1e-4);
        assert!((x[0] / 3.0 - 1.0).abs() < 1e-3, "{x:?}");
        assert!((x[1] / 0.5 - 1.0).abs() < 1e-3, "{x:?}");
        assert!(fx < 1e-6);
    }

    /// fig-7's kyber shape: flat at 1 below 2.6 (one process's ceiling is the drive's
    /// whatever the cost), a bowl with its bottom at 3.29 above it. From 2.0 the pattern
    /// search alone stays on the plateau; the scan finds the bowl.
    #[test]
    fn the_coarse_scan_takes_the_search_off_a_plateau() {
        let f = |p: &[f64]| {
            if p[0] < 2.6 {
                1.0
            } else {
                (p[0].ln() - 3.29f64.ln()).powi(2).min(1.0)
            }
        };
        let bounds = [COST_BOUNDS];
        let (stuck, _) = minimise(&f, &[2.0], &bounds, STEP, MIN_STEP);
        assert!(stuck[0] < 2.6, "{stuck:?}");
        let (x, fx) = scan_then_minimise(&f, &[2.0], &bounds, &[COST_LEVELS_1D]);
        assert!((x[0] / 3.29 - 1.0).abs() < 0.02, "{x:?}");
        assert!(fx < 1e-3);
    }

    #[test]
    fn the_coarse_scan_visits_cell_centres_in_order_and_keeps_start_on_ties() {
        let seen = Mutex::new(Vec::new());
        let f = |p: &[f64]| {
            seen.lock().unwrap().push(p.to_vec());
            0.0
        };
        let (best, _) = coarse_scan(&f, &[5.0, 5.0], &[(1.0, 100.0), (1.0, 10000.0)], &[2, 2]);
        assert_eq!(best, vec![5.0, 5.0]);
        let seen = seen.into_inner().unwrap();
        let want = [
            [5.0, 5.0],
            [10f64.powf(0.5), 10.0],
            [10f64.powf(1.5), 10.0],
            [10f64.powf(0.5), 1000.0],
            [10f64.powf(1.5), 1000.0],
        ];
        assert_eq!(seen.len(), want.len());
        for (s, w) in seen.iter().zip(want) {
            assert!(
                (s[0] / w[0] - 1.0).abs() < 1e-12 && (s[1] / w[1] - 1.0).abs() < 1e-12,
                "{seen:?}"
            );
        }
    }

    #[test]
    fn the_pattern_search_stops_at_a_bound() {
        let f = |p: &[f64]| (p[0] - 1000.0).abs();
        let (x, _) = minimise(&f, &[1.0], &[(0.5, 10.0)], 0.25, 1e-3);
        assert!((x[0] - 10.0).abs() < 1e-9, "{x:?}");
    }

    #[test]
    fn a_missing_fio_field_is_named_with_its_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let f = dir.path().join("x.txt");
        std::fs::write(&f, "notice\n{\"jobs\": [{\"read\": {}}]}").expect("write");
        let v = fio_json(&f).expect("JSON");
        let e = total_read_iops(&v, &f).unwrap_err().to_string();
        assert!(e.contains("x.txt") && e.contains("jobs.0.read.iops"), "{e}");
        std::fs::write(&f, "notice\n{\"jobs\": [\n{\"read\": }]}").expect("write");
        let e = fio_json(&f).unwrap_err().to_string();
        assert!(e.contains("x.txt:3:"), "{e}");
    }
}
