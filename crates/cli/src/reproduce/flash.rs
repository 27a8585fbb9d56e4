//! A reader beside a random writer on flash, after the ICPE'24 study "BFQ, Multiqueue-Deadline,
//! or Kyber? Performance Characterization of Linux Storage Schedulers in the NVMe Era" (Ren,
//! Doekemeijer, Tehrany, Trivedi; Samsung 980 PRO; shared/data/nvme-980pro/, MIT).
//!
//! The study's pattern: under interference from throughput jobs, kyber and bfq cut a
//! latency-sensitive reader's p99, none and mq-deadline do not. Its data give the reader alone
//! (a QD1 4 KiB random reader under none: 14,443 IOPS, mean 66.0 us, p99 77.3 us;
//! fig-2's `qd_1_dev_1_sche_none.txt`); the pattern itself is qualitative here (the study's
//! interference runs are not in the shared data), so the table states it beside our numbers.
//!
//! Ours: the built-in `samsung-980pro-1tb` model (docs/ssd-model.md) in its steady state
//! (every page mapped, GC running from the first writes). A QD1
//! 4 KiB random reader over the first half of the drive beside a QD128 4 KiB random writer
//! over the second half (both O_DIRECT, fio's `norandommap`), for [`RUNTIME_MS`] simulated
//! after a [`RAMP_MS`] ramp, under none, mq-deadline, kyber (default `read_lat_nsec` 2 ms, and
//! 250 us) and bfq (`rotational = 0`, as the kernel sets it for an NVMe drive); plus the
//! reader alone. A scheduler "cuts the p99" when the reader's p99 under it is below
//! [`CUT`] times its p99 under none, seed by seed.

use elevator_core::{registry, GroupId, GroupTree, IoPrio, Nanos, Settings};
use elevator_sim::drive::DriveModel;
use elevator_sim::{JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::BuildEnv;
use rayon::prelude::*;
use serde::Serialize;

use crate::output::{self, say};
use crate::progress;
use crate::stats::Estimate;

/// The drive.
const DRIVE: &str = "samsung-980pro-1tb";
/// Measured time per run, simulated.
pub const RUNTIME_MS: u64 = 2000;
/// Lead-in left out of the figures.
pub const RAMP_MS: u64 = 500;
/// A p99 below this fraction of none's is "cut".
pub const CUT: f64 = 0.8;

/// The published reader alone (fig-2, QD1, none): IOPS, mean us, p99 us.
const ALONE: (f64, f64, f64) = (14_443.0, 66.0, 77.312);

/// One configuration: its label, scheduler, tunables, whether a writer runs, and the
/// published pattern (`Some(true)`: the study found it cuts the reader's p99).
struct Config {
    label: &'static str,
    sched: &'static str,
    tunables: &'static [(&'static str, i64)],
    writer: bool,
    cuts: Option<bool>,
}

const CONFIGS: [Config; 6] = [
    Config {
        label: "reader alone",
        sched: "none",
        tunables: &[],
        writer: false,
        cuts: None,
    },
    Config {
        label: "none",
        sched: "none",
        tunables: &[],
        writer: true,
        cuts: Some(false),
    },
    Config {
        label: "mq-deadline",
        sched: "mq-deadline",
        tunables: &[],
        writer: true,
        cuts: Some(false),
    },
    Config {
        label: "kyber",
        sched: "kyber",
        tunables: &[],
        writer: true,
        cuts: Some(true),
    },
    Config {
        label: "kyber read_lat_nsec=250000",
        sched: "kyber",
        tunables: &[("read_lat_nsec", 250_000)],
        writer: true,
        cuts: Some(true),
    },
    Config {
        label: "bfq",
        sched: "bfq",
        tunables: &[("rotational", 0)],
        writer: true,
        cuts: Some(true),
    },
];

/// One run's figures.
#[derive(Clone, Copy, Debug)]
struct Sample {
    reader_iops: f64,
    reader_mean_us: f64,
    reader_p99_us: f64,
    writer_iops: f64,
}

/// One row of the table and the JSON.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    /// The configuration: a scheduler and its tunables, or the reader alone.
    pub config: String,
    /// published or elevator.
    pub source: &'static str,
    /// The reader's IOPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_iops: Option<Estimate>,
    /// The reader's mean completion latency, us.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_mean_us: Option<Estimate>,
    /// The reader's 99th percentile completion latency, us.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_p99_us: Option<Estimate>,
    /// The reader's p99 over its p99 under none beside the writer (per seed, then over the
    /// seeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_over_none: Option<Estimate>,
    /// The writer's IOPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_iops: Option<Estimate>,
    /// Whether the scheduler cuts the reader's p99 under interference (published: the
    /// study's finding; ours: `p99_over_none` below [`CUT`] at every seed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuts_p99: Option<bool>,
}

#[derive(Serialize)]
struct Out {
    experiment: &'static str,
    drive: &'static str,
    runtime_ms: u64,
    ramp_ms: u64,
    /// The seeds every measured figure ran with, in the order of its `per_seed` values.
    seeds: Vec<u64>,
    rows: Vec<Row>,
}

fn job(cfg: FioJobConfig, capacity: u64, seed: u64, name: &str) -> anyhow::Result<FioJob> {
    FioJob::new(cfg, &BuildEnv::new(capacity, seed, name))
        .map_err(|e| anyhow::anyhow!("flash: job {name}: {}: {}", e.field, e.reason))
}

/// One configuration at one seed.
fn measure_one(c: &Config, drive: &DriveModel, wakeup: Nanos, seed: u64) -> anyhow::Result<Sample> {
    let info = registry::find(c.sched).expect("a registered scheduler");
    let mut settings = Settings::new();
    for &(k, v) in c.tunables {
        settings.set(k, v);
    }
    let sched = (info.build)(&settings, &GroupTree::new())
        .map_err(|e| anyhow::anyhow!("flash: {}: {e}", c.label))?;
    let device = drive.device();
    let capacity = device.capacity_sectors();
    let mut sim = Simulation::new(device, sched, GroupTree::new());
    sim.set_wakeup_latency(wakeup);
    sim.set_ramp(Nanos::from_ms(RAMP_MS));
    let base = FioJobConfig {
        bs: 4096,
        time_based: true,
        runtime_ms: Some(RUNTIME_MS),
        ramp_ms: RAMP_MS,
        direct: true,
        norandommap: true,
        size_frac: Some(0.5),
        ..FioJobConfig::default()
    };
    let mut jobs = vec![(
        "reader",
        FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 1,
            offset_frac: Some(0.0),
            ..base.clone()
        },
    )];
    if c.writer {
        jobs.push((
            "writer",
            FioJobConfig {
                rw: RwMode::RandWrite,
                iodepth: 128,
                offset_frac: Some(0.5),
                ..base
            },
        ));
    }
    for (name, cfg) in jobs {
        sim.add_job(JobSlot {
            name: name.into(),
            job: Box::new(job(cfg, capacity, seed, name)?),
            group: GroupId::ROOT,
            prio: IoPrio::default(),
            start: Nanos::ZERO,
            foreground: true,
        });
    }
    let r = sim.run(None);
    let summary = |name: &str| {
        r.job(name)
            .map(|j| j.metrics.summary(name, "/", r.end))
            .ok_or_else(|| anyhow::anyhow!("flash: no job {name} in the report"))
    };
    let reader = summary("reader")?;
    let writer_iops = match c.writer {
        true => summary("writer")?.write.iops,
        false => 0.0,
    };
    anyhow::ensure!(
        reader.read.ios > 0,
        "flash: {}: the reader read nothing",
        c.label
    );
    Ok(Sample {
        reader_iops: reader.read.iops,
        reader_mean_us: reader.read.lat_mean_ms * 1e3,
        reader_p99_us: reader.read.lat_p99_ms * 1e3,
        writer_iops,
    })
}

/// Our rows, one per configuration, over `seeds` (runs in parallel, collected in order).
pub fn measure(wakeup: Nanos, seeds: &[u64]) -> anyhow::Result<Vec<Row>> {
    let drive = DriveModel::builtin(DRIVE).expect("the built-in 980 PRO");
    let runs: Vec<(usize, u64)> = (0..CONFIGS.len())
        .flat_map(|c| seeds.iter().map(move |&s| (c, s)))
        .collect();
    let bar = progress::bar(runs.len(), "flash");
    let samples: Vec<Sample> = runs
        .par_iter()
        .map(|&(c, seed)| {
            let s = measure_one(&CONFIGS[c], &drive, wakeup, seed);
            bar.inc(1);
            s
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    let per: Vec<&[Sample]> = samples.chunks(seeds.len()).collect();
    let none_p99 = Estimate::of(per[1].iter().map(|s| s.reader_p99_us).collect());
    Ok(CONFIGS
        .iter()
        .zip(per)
        .map(|(c, s)| {
            let e = |f: fn(&Sample) -> f64| Estimate::of(s.iter().map(f).collect());
            let p99 = e(|s| s.reader_p99_us);
            let over = c.writer.then(|| p99.zip(&none_p99, |a, b| a / b));
            Row {
                config: c.label.to_string(),
                source: "elevator",
                reader_iops: Some(e(|s| s.reader_iops)),
                reader_mean_us: Some(e(|s| s.reader_mean_us)),
                cuts_p99: over
                    .as_ref()
                    .and_then(|o| c.cuts.map(|_| o.per_seed.iter().all(|&r| r < CUT))),
                p99_over_none: over,
                reader_p99_us: Some(p99),
                writer_iops: c.writer.then(|| e(|s| s.writer_iops)),
            }
        })
        .collect())
}

fn published(c: &Config) -> Row {
    let alone = !c.writer;
    let e = |x: f64| alone.then(|| Estimate::published(x));
    Row {
        config: c.label.to_string(),
        source: "published",
        reader_iops: e(ALONE.0),
        reader_mean_us: e(ALONE.1),
        reader_p99_us: e(ALONE.2),
        p99_over_none: None,
        writer_iops: None,
        cuts_p99: c.cuts,
    }
}

/// Print the table; return the JSON.
pub fn run(opts: &super::Opts) -> anyhow::Result<serde_json::Value> {
    say!("A reader beside a random writer on flash (ICPE'24, Samsung 980 PRO): a QD1 4 KiB");
    say!("random reader beside a QD128 4 KiB random writer on the simulated 980 PRO (steady");
    say!(
        "state), {RUNTIME_MS} ms after a {RAMP_MS} ms ramp. Published: the reader alone (fig-2) and"
    );
    say!("the study's pattern (kyber and bfq cut the reader's p99 under interference; none and");
    say!(
        "mq-deadline do not). \"cuts\": p99 below {CUT} x none's at every seed. {}\n",
        super::seeds_note(&opts.seeds)
    );
    super::note_wakeup(opts.wakeup);
    let ours = measure(opts.wakeup, &opts.seeds)?;
    let show = |e: &Option<Estimate>, d: usize| e.as_ref().map_or("-".into(), |e| e.show(d));
    let yes_no = |b: Option<bool>| match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    };
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    for (c, r) in CONFIGS.iter().zip(&ours) {
        let p = published(c);
        let theirs = if c.writer {
            format!("cuts p99: {}", yes_no(p.cuts_p99))
        } else {
            format!(
                "{} IOPS, {} / {} us",
                show(&p.reader_iops, 0),
                show(&p.reader_mean_us, 1),
                show(&p.reader_p99_us, 1)
            )
        };
        let ours_cut = match (c.cuts, r.cuts_p99) {
            (Some(_), Some(v)) => yes_no(Some(v)).to_string(),
            _ => "-".into(),
        };
        rows.push(vec![
            c.label.to_string(),
            theirs,
            show(&r.reader_iops, 0),
            show(&r.reader_mean_us, 1),
            show(&r.reader_p99_us, 1),
            show(&r.p99_over_none, 2),
            ours_cut,
            show(&r.writer_iops, 0),
        ]);
        json_rows.push(p);
        json_rows.push(r.clone());
    }
    output::say_str(&output::table(
        &[
            "configuration",
            "published",
            "reader IOPS",
            "mean us",
            "p99 us",
            "p99 / none",
            "cuts p99",
            "writer IOPS",
        ],
        &rows,
    ));
    Ok(serde_json::to_value(Out {
        experiment: "flash",
        drive: DRIVE,
        runtime_ms: RUNTIME_MS,
        ramp_ms: RAMP_MS,
        seeds: opts.seeds.clone(),
        rows: json_rows,
    })?)
}
