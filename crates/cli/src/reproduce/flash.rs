//! A reader beside a random writer on flash, after the ICPE'24 study "BFQ, Multiqueue-Deadline,
//! or Kyber? Performance Characterization of Linux Storage Schedulers in the NVMe Era" (Ren,
//! Doekemeijer, Tehrany, Trivedi; Samsung 980 PRO; shared/data/nvme-980pro/, MIT).
//!
//! The study's pattern: under interference from throughput jobs, kyber and bfq cut a
//! latency-sensitive reader's p99, none and mq-deadline do not. Published beside ours: the
//! reader alone (fig-2's QD1 4 KiB random reader under none: 14,443 IOPS, mean 66.0 us, p99
//! 77.3 us), and, per scheduler, the study's fig-11c run with 8 writer processes (a QD1 4 KiB
//! random reader beside 8 processes of QD128 4 KiB random writes spread over eight drives:
//! 128 writes outstanding per drive): the reader's mean and p99, the writers' IOPS per drive,
//! and the requests in each drive's block layer (its artifact's `results/fig-11-c-lapp-t4kbw-mix`,
//! `*_num_t_8*`; not in shared/data). That last figure is the drives' diskstats `in_queue`
//! over the run's time: a request's time counts from its allocation (just before the scheduler)
//! to its completion, so it is the mean number of requests in the scheduler and the drive. Under
//! none it is 108 of the 128 writes; under bfq 7: bfq's host path (one lock per device, eight
//! drives on ten cores) admitted writes no faster than the drive took them, so the reader found
//! no queue. docs/ssd-model.md gives the evidence.
//!
//! Ours, in three configurations ([`STATES`]), under none, mq-deadline, kyber (default
//! `read_lat_nsec` 2 ms, and 250 us) and bfq (`rotational = 0`, as the kernel sets it for an
//! NVMe drive), plus the reader alone; every drive in its steady state (every page mapped, GC
//! from the first writes; the study preconditioned its drives to a random-write steady state
//! too); 4 KiB, O_DIRECT, fio's `norandommap`:
//!
//! - "steady": the built-in `samsung-980pro-1tb` model (its write side not fitted: 21 K
//!   writes/s in steady state), no host CPU model, a QD1 random reader over the first half of
//!   the drive beside one QD128 random writer over the second half.
//! - "8 drives": what the study ran. Its host (`icpe24-10core`, the drive one of eight that
//!   every process spreads its I/O over: [`Simulation::set_host_drives`]), 8 writer processes
//!   of QD16 on this drive (the study's QD128 over eight) and the QD1 reader, all over the
//!   whole drive, on `samsung-980pro-1tb-fig11c` (the 980 PRO with its write side stated for
//!   sustained writes, one-shot TLC programs and urgent GC, and fitted to the rate the study's
//!   drives took writes at: 188 K a drive from its 16 writers).
//! - "8 drives, at 8w rate": the same with the drive fitted instead to the 131 K its 8
//!   writers pushed ([`STATES`] says why both). The study's reader was one QD1 job over the
//!   eight drives; ours is QD1 on this one (a QD1 reader's latency is its reads', whichever
//!   drive each goes to; its IOPS are 1 / its latency either way).
//!
//! Each runs [`State::runtime_ms`] simulated after a ramp long enough for kyber's depth control
//! (which with a slow QD1 reader gathers a read percentile about once a second and cuts the
//! write domain by a quarter each time; the study ran a 600 s ramp) to cut while the reads are
//! past its target. Not always long enough for a cut that waits on a rare window: in "8 drives"
//! the default's cut from 8 write tokens to 2 comes 1.8 to 11 s in, or later (docs/kyber.md,
//! "A knife-edge in `reproduce flash`"). A scheduler "cuts the
//! p99" when the reader's p99 under it is below [`CUT`] times its p99 under none in the same
//! state, seed by seed.

use std::cell::RefCell;
use std::rc::Rc;

use elevator_core::{registry, CtxId, GroupTree, Nanos, Request, Settings};
use std::num::NonZeroU32;

use elevator_sim::cpu::CpuSpec;
use elevator_sim::ssd::{Ssd, SsdSpec};
use elevator_sim::{JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::traces::blktrace_out::{IoEvent, IoObserver};
use elevator_workload::BuildEnv;
use rayon::prelude::*;
use serde::Serialize;

use crate::output::{self, say};
use crate::progress;
use crate::stats::Estimate;

/// A p99 below this fraction of none's is "cut".
pub const CUT: f64 = 0.8;

/// The published reader alone (fig-2, QD1, none): IOPS, mean us, p90 us, p99 us.
const ALONE: [f64; 4] = [14_443.0, 66.0, 76.288, 77.312];

/// The study's fig-11c with 8 writer processes (128 writes outstanding per drive), by
/// scheduler: the reader's IOPS, mean, p90 and p99 (us), the writers' IOPS per drive (their total
/// over the eight drives / 8), and the requests in a drive's block layer (the reader's job's
/// `disk_util`: `in_queue` ms over the 1,200 s of ramp and run, the mean of the eight drives).
const BESIDE_WRITERS: [(&str, [f64; 6]); 4] = [
    ("none", [763.0, 1308.4, 2310.1, 14_352.4, 131_181.0, 108.5]),
    (
        "mq-deadline",
        [881.0, 1133.8, 2089.0, 13_303.8, 117_448.0, 81.2],
    ),
    ("kyber", [2568.0, 388.2, 1269.8, 2605.1, 165_641.0, 59.0]),
    ("bfq", [2941.0, 339.0, 1155.1, 2244.6, 131_586.0, 7.2]),
];

/// A configuration of the experiment: the drive, the host, the writers.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct State {
    /// Its name in the table and the JSON.
    pub name: &'static str,
    /// The built-in drive spec (every one preconditioned to its steady state).
    pub drive: &'static str,
    /// The drive's `ftl.over_provisioning`, where not its spec's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_provisioning: Option<f64>,
    /// The host CPU model, if any: a built-in host spec.
    pub host: Option<&'static str>,
    /// Drives the host's processes spread their I/O over, the simulated one among them (with
    /// `host`).
    pub host_drives: u32,
    /// Writer processes.
    pub writers: u32,
    /// Writes each writer keeps outstanding on this drive.
    pub writer_iodepth: u32,
    /// Whether the reader and the writers each cover the whole drive (else the reader the
    /// first half and the writers the second).
    pub whole_drive: bool,
    /// Lead-in left out of the figures, simulated.
    pub ramp_ms: u64,
    /// Measured time per run, simulated.
    pub runtime_ms: u64,
}

/// The study's host, drives and writers, on the drive fitted to its 16 writers' rate.
const EIGHT_DRIVES: State = State {
    name: "8 drives",
    drive: "samsung-980pro-1tb-fig11c",
    over_provisioning: None,
    host: Some("icpe24-10core"),
    host_drives: 8,
    writers: 8,
    writer_iodepth: 16,
    whole_drive: true,
    ramp_ms: 10_000,
    runtime_ms: 5_000,
};

/// The configurations we run: the built-in drive's steady state with one writer; the study's
/// host and 8 writers on `samsung-980pro-1tb-fig11c`, whose over-provisioning is fitted to the
/// rate the study's drives took writes at from 16 writers (187,783 writes/s per drive; the
/// spec gives 190 K with 16 writers of QD16, 186 K with 8); and the same with the drive's
/// over-provisioning fitted instead to what its 8 writers pushed (131,181; 0.16 gives
/// 129 K). Our drive takes writes at one rate however deep its queue once GC
/// binds, where the study's took 43% more with twice the writers: it can match one of the two
/// figures, not both, and which decides bfq's row.
pub const STATES: [State; 3] = [
    State {
        name: "steady",
        drive: "samsung-980pro-1tb",
        over_provisioning: None,
        host: None,
        host_drives: 1,
        writers: 1,
        writer_iodepth: 128,
        whole_drive: false,
        ramp_ms: 20_000,
        runtime_ms: 10_000,
    },
    EIGHT_DRIVES,
    State {
        name: "8 drives, at 8w rate",
        over_provisioning: Some(0.16),
        ..EIGHT_DRIVES
    },
];

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
    reader_p90_us: f64,
    reader_p99_us: f64,
    writer_iops: f64,
    writer_mean_us: f64,
    in_block_layer: f64,
    in_drive: f64,
}

/// Requests in the block layer and in the drive, each as a mean over the time from `from` on.
/// The block layer is what diskstats' `in_queue` over the run's time gives in the kernel, where
/// a request's time counts from its allocation to its completion; ours counts from the
/// engine's insertion, so a request waiting in a scheduler for a tag (bfq's `bfq_limit_depth`)
/// is counted, which the kernel's is not until it gets one. The drive: dispatched, not
/// completed.
struct Occupancy {
    from: Nanos,
    last: Nanos,
    /// Now in the block layer, in the drive.
    now_in: [u64; 2],
    /// Their integrals over time since `from`, request-nanoseconds.
    area_ns: [u128; 2],
}

impl Occupancy {
    fn new(from: Nanos) -> Occupancy {
        Occupancy {
            from,
            last: Nanos::ZERO,
            now_in: [0; 2],
            area_ns: [0; 2],
        }
    }

    fn advance(&mut self, now: Nanos) {
        let start = self.last.max(self.from);
        if now > start {
            for (area, &n) in self.area_ns.iter_mut().zip(&self.now_in) {
                *area += u128::from(n) * u128::from((now - start).0);
            }
        }
        self.last = self.last.max(now);
    }

    /// The means over `from..end`: in the block layer, in the drive.
    fn means(&mut self, end: Nanos) -> [f64; 2] {
        self.advance(end);
        let span = end.0.saturating_sub(self.from.0);
        self.area_ns.map(|a| {
            if span > 0 {
                a as f64 / span as f64
            } else {
                0.0
            }
        })
    }
}

impl IoObserver for Occupancy {
    fn process(&mut self, _: CtxId, _: u32, _: &str, _: Nanos) {}

    fn event(&mut self, event: IoEvent, _: &Request, now: Nanos) {
        let (layer, drive): (i64, i64) = match event {
            IoEvent::Insert => (1, 0),
            IoEvent::Issue => (0, 1),
            IoEvent::Complete => (-1, -1),
            IoEvent::Queue | IoEvent::Merge => return,
        };
        self.advance(now);
        for (n, d) in self.now_in.iter_mut().zip([layer, drive]) {
            *n = n.saturating_add_signed(d);
        }
    }
}

/// One row of the table and the JSON.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    /// The configuration: a scheduler and its tunables, or the reader alone.
    pub config: String,
    /// published or elevator.
    pub source: &'static str,
    /// Ours: the configuration's [`State::name`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
    /// The reader's IOPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_iops: Option<Estimate>,
    /// The reader's mean completion latency, us.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_mean_us: Option<Estimate>,
    /// The reader's 90th percentile completion latency, us (kyber finds congestion when a
    /// domain's p90 passes its target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_p90_us: Option<Estimate>,
    /// The reader's 99th percentile completion latency, us.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_p99_us: Option<Estimate>,
    /// The reader's p99 over its p99 under none beside the writer (per seed, then over the
    /// seeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_over_none: Option<Estimate>,
    /// The writers' IOPS on the drive, summed (published: the writers' per drive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_iops: Option<Estimate>,
    /// The writer's mean completion latency, us (ours only: kyber throttles writes only while
    /// theirs is within its 10 ms write target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_mean_us: Option<Estimate>,
    /// The requests in the block layer (scheduler and drive), a mean over time (published:
    /// per drive, from the drives' diskstats; ours from the engine's insertion, so including
    /// requests a scheduler holds waiting for a tag, which the kernel's count leaves out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_block_layer: Option<Estimate>,
    /// The requests in the drive (dispatched, not completed), a mean over time (ours only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_drive: Option<Estimate>,
    /// Whether the scheduler cuts the reader's p99 under interference (published: the
    /// study's finding; ours: `p99_over_none` below [`CUT`] at every seed, in its state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuts_p99: Option<bool>,
}

#[derive(Serialize)]
struct Out {
    experiment: &'static str,
    /// The configurations, by the name each row's `state` gives.
    states: &'static [State],
    /// The seeds every measured figure ran with, in the order of its `per_seed` values.
    seeds: Vec<u64>,
    rows: Vec<Row>,
}

fn job(cfg: FioJobConfig, capacity: u64, seed: u64, name: &str) -> anyhow::Result<FioJob> {
    FioJob::new(cfg, &BuildEnv::new(capacity, seed, name))
        .map_err(|e| anyhow::anyhow!("flash: job {name}: {}: {}", e.field, e.reason))
}

/// One configuration at one seed in `state`, on `drive` (its spec) with `host` (its spec).
fn measure_one(
    c: &Config,
    state: &State,
    (drive, host): (&SsdSpec, Option<&CpuSpec>),
    wakeup: Nanos,
    seed: u64,
) -> anyhow::Result<Sample> {
    let info = registry::find(c.sched).expect("a registered scheduler");
    let mut settings = Settings::new();
    for &(k, v) in c.tunables {
        settings.set(k, v);
    }
    let sched = info
        .build(&settings, &GroupTree::new())
        .map_err(|e| anyhow::anyhow!("flash: {}: {e}", c.label))?;
    let device = Box::new(
        Ssd::new(drive.clone()).map_err(|e| anyhow::anyhow!("flash: {}: {e}", drive.name))?,
    );
    let capacity = drive.capacity_sectors();
    let mut sim = Simulation::new(device, sched, GroupTree::new());
    sim.set_wakeup_latency(wakeup);
    if let Some(h) = host {
        sim.set_host_cpu(h);
        sim.set_host_drives(NonZeroU32::new(state.host_drives).expect("a drive at least"));
    }
    let ramp = Nanos::from_ms(state.ramp_ms);
    sim.set_ramp(ramp);
    let occupancy = Rc::new(RefCell::new(Occupancy::new(ramp)));
    sim.set_observer(Box::new(Rc::clone(&occupancy)));
    let (reader_span, writer_span) = match state.whole_drive {
        true => ((None, None), (None, None)),
        false => ((Some(0.0), Some(0.5)), (Some(0.5), Some(0.5))),
    };
    let base = FioJobConfig {
        bs: 4096,
        time_based: true,
        runtime_ms: Some(state.runtime_ms),
        ramp_ms: state.ramp_ms,
        direct: true,
        norandommap: true,
        ..FioJobConfig::default()
    };
    // The reader first: context 0, on core 0 of a modelled host; writer i on core i + 1.
    let mut jobs = vec![(
        "reader".to_string(),
        FioJobConfig {
            rw: RwMode::RandRead,
            iodepth: 1,
            offset_frac: reader_span.0,
            size_frac: reader_span.1,
            ..base.clone()
        },
    )];
    let writers: Vec<String> = match (c.writer, state.writers) {
        (false, _) => Vec::new(),
        (true, 1) => vec!["writer".into()],
        (true, n) => (0..n).map(|i| format!("writer.{i}")).collect(),
    };
    for name in &writers {
        jobs.push((
            name.clone(),
            FioJobConfig {
                rw: RwMode::RandWrite,
                iodepth: state.writer_iodepth,
                offset_frac: writer_span.0,
                size_frac: writer_span.1,
                ..base.clone()
            },
        ));
    }
    for (name, cfg) in jobs {
        let job = job(cfg, capacity, seed, &name)?;
        sim.add_job(JobSlot::new(name, Box::new(job)));
    }
    let r = sim.run(None);
    let summary = |name: &str| {
        r.job(name)
            .map(|j| j.metrics.summary(name, "/", r.end))
            .ok_or_else(|| anyhow::anyhow!("flash: no job {name} in the report"))
    };
    let reader = summary("reader")?;
    // The writers' IOPS summed, their mean latency weighted by their IOPS.
    let (mut writer_iops, mut writer_lat) = (0.0, 0.0);
    for name in &writers {
        let w = summary(name)?.write;
        writer_iops += w.iops;
        writer_lat += w.iops * w.lat_mean_ms * 1e3;
    }
    let writer_mean_us = if writer_iops > 0.0 {
        writer_lat / writer_iops
    } else {
        0.0
    };
    anyhow::ensure!(
        reader.read.ios > 0,
        "flash: {}: the reader read nothing",
        c.label
    );
    let [in_block_layer, in_drive] = occupancy.borrow_mut().means(r.end);
    Ok(Sample {
        reader_iops: reader.read.iops,
        reader_mean_us: reader.read.lat_mean_ms * 1e3,
        reader_p90_us: reader.read.lat_p90_ms * 1e3,
        reader_p99_us: reader.read.lat_p99_ms * 1e3,
        writer_iops,
        writer_mean_us,
        in_block_layer,
        in_drive,
    })
}

/// Our rows, one per state and configuration, over `seeds` (runs in parallel, collected in
/// order).
pub fn measure(wakeup: Nanos, seeds: &[u64]) -> anyhow::Result<Vec<Row>> {
    let specs: Vec<(SsdSpec, Option<CpuSpec>)> = STATES
        .iter()
        .map(|s| {
            let mut drive = SsdSpec::builtin(s.drive).expect("a built-in drive");
            if let Some(op) = s.over_provisioning {
                drive.ftl.over_provisioning = op;
            }
            let host = s
                .host
                .map(|h| CpuSpec::builtin(h).expect("a built-in host"));
            (drive, host)
        })
        .collect();
    let runs: Vec<(usize, usize, u64)> = (0..STATES.len())
        .flat_map(|d| (0..CONFIGS.len()).flat_map(move |c| seeds.iter().map(move |&s| (d, c, s))))
        .collect();
    let bar = progress::bar(runs.len(), "flash");
    let samples: Vec<Sample> = runs
        .par_iter()
        .map(|&(d, c, seed)| {
            let (drive, host) = &specs[d];
            let s = measure_one(
                &CONFIGS[c],
                &STATES[d],
                (drive, host.as_ref()),
                wakeup,
                seed,
            );
            bar.inc(1);
            s
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    let mut rows = Vec::new();
    for (per_state, state) in samples.chunks(CONFIGS.len() * seeds.len()).zip(&STATES) {
        let per: Vec<&[Sample]> = per_state.chunks(seeds.len()).collect();
        let none_p99 = Estimate::of(per[1].iter().map(|s| s.reader_p99_us).collect());
        for (c, s) in CONFIGS.iter().zip(per) {
            let e = |f: fn(&Sample) -> f64| Estimate::of(s.iter().map(f).collect());
            let p99 = e(|s| s.reader_p99_us);
            let over = c.writer.then(|| p99.zip(&none_p99, |a, b| a / b));
            rows.push(Row {
                config: c.label.to_string(),
                source: "elevator",
                state: Some(state.name),
                reader_iops: Some(e(|s| s.reader_iops)),
                reader_mean_us: Some(e(|s| s.reader_mean_us)),
                reader_p90_us: Some(e(|s| s.reader_p90_us)),
                cuts_p99: over
                    .as_ref()
                    .and_then(|o| c.cuts.map(|_| o.per_seed.iter().all(|&r| r < CUT))),
                p99_over_none: over,
                reader_p99_us: Some(p99),
                writer_iops: c.writer.then(|| e(|s| s.writer_iops)),
                writer_mean_us: c.writer.then(|| e(|s| s.writer_mean_us)),
                in_block_layer: Some(e(|s| s.in_block_layer)),
                in_drive: Some(e(|s| s.in_drive)),
            });
        }
    }
    Ok(rows)
}

fn published(c: &Config) -> Row {
    let measured = match c.writer {
        false => Some([ALONE[0], ALONE[1], ALONE[2], ALONE[3], f64::NAN, f64::NAN]),
        true => BESIDE_WRITERS
            .iter()
            .find(|(s, _)| *s == c.label)
            .map(|&(_, v)| v),
    };
    let e = |i: usize| {
        measured
            .filter(|v| v[i].is_finite())
            .map(|v| Estimate::published(v[i]))
    };
    let none = BESIDE_WRITERS[0].1[3];
    Row {
        config: c.label.to_string(),
        source: "published",
        state: None,
        reader_iops: e(0),
        reader_mean_us: e(1),
        reader_p90_us: e(2),
        reader_p99_us: e(3),
        p99_over_none: (c.writer && measured.is_some())
            .then(|| Estimate::published(measured.map_or(f64::NAN, |v| v[3]) / none)),
        writer_iops: e(4),
        writer_mean_us: None,
        in_block_layer: e(5),
        in_drive: None,
        cuts_p99: c.cuts,
    }
}

/// Print the table; return the JSON.
pub fn run(opts: &super::Opts) -> anyhow::Result<serde_json::Value> {
    say!("A reader beside random writers on flash (ICPE'24, Samsung 980 PRO): a QD1 4 KiB");
    say!("random reader beside 4 KiB random writers on the simulated 980 PRO in its steady");
    say!("state, in each of these configurations (\"drive\" column):");
    for s in &STATES {
        say!(
            "  {}: {}{}, {} writer(s) of QD{}{}, {}; {} ms after a {} ms ramp.",
            s.name,
            s.drive,
            s.over_provisioning
                .map_or(String::new(), |op| format!(" (over_provisioning {op})")),
            s.writers,
            s.writer_iodepth,
            match s.whole_drive {
                true => " and the reader over the whole drive",
                false => " over the second half, the reader the first",
            },
            match s.host {
                Some(h) => format!("host {h}, one of {} drives", s.host_drives),
                None => "no host CPU model".into(),
            },
            s.runtime_ms,
            s.ramp_ms
        );
    }
    say!("Published: the reader alone (fig-2), the study's fig-11c with 8 writers (128 writes");
    say!(
        "outstanding per drive: the reader's mean / p90 / p99 us, the writers' IOPS per drive, the"
    );
    say!("requests in a drive's block layer) and its pattern (kyber and bfq cut the reader's p99");
    say!("under interference; none and mq-deadline do not). \"block layer\": requests in the");
    say!("scheduler and the drive, a mean over time (published: the drives' diskstats; ours");
    say!("counts requests waiting in a scheduler for a tag too); \"drive\": in the drive alone.");
    say!(
        "\"cuts\": p99 below {CUT} x none's at every seed. {}\n",
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
    let published: Vec<Row> = CONFIGS.iter().map(published).collect();
    let mut rows = Vec::new();
    for (i, r) in ours.iter().enumerate() {
        let c = &CONFIGS[i % CONFIGS.len()];
        let p = &published[i % CONFIGS.len()];
        let theirs = match (&p.reader_mean_us, c.writer) {
            (Some(_), _) => format!(
                "{} / {} / {} us{}{}{}",
                show(&p.reader_mean_us, 1),
                show(&p.reader_p90_us, 1),
                show(&p.reader_p99_us, 1),
                p.writer_iops
                    .as_ref()
                    .map_or(String::new(), |w| format!(", {} IOPS", w.show(0))),
                p.in_block_layer
                    .as_ref()
                    .map_or(String::new(), |l| format!(", {} in block layer", l.show(1))),
                match c.writer {
                    true => format!(", cuts: {}", yes_no(p.cuts_p99)),
                    false => String::new(),
                }
            ),
            (None, true) => format!("cuts p99: {}", yes_no(p.cuts_p99)),
            (None, false) => "-".into(),
        };
        let ours_cut = match (c.cuts, r.cuts_p99) {
            (Some(_), Some(v)) => yes_no(Some(v)).to_string(),
            _ => "-".into(),
        };
        rows.push(vec![
            c.label.to_string(),
            theirs,
            r.state.unwrap_or("-").to_string(),
            show(&r.reader_iops, 0),
            show(&r.reader_mean_us, 1),
            show(&r.reader_p90_us, 1),
            show(&r.reader_p99_us, 1),
            show(&r.p99_over_none, 2),
            ours_cut,
            show(&r.writer_iops, 0),
            show(&r.writer_mean_us, 0),
            show(&r.in_block_layer, 1),
            show(&r.in_drive, 1),
        ]);
    }
    output::say_str(&output::figures_table(
        &[
            "configuration",
            "published",
            "drive",
            "reader IOPS",
            "mean us",
            "p90 us",
            "p99 us",
            "p99 / none",
            "cuts p99",
            "writer IOPS",
            "writer mean us",
            "block layer",
            "drive",
        ],
        &rows,
    ));
    let mut json_rows = published;
    json_rows.extend(ours);
    Ok(serde_json::to_value(Out {
        experiment: "flash",
        states: &STATES,
        seeds: opts.seeds.clone(),
        rows: json_rows,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::harness::rq;

    fn occupancy(from: u64, events: &[(IoEvent, u64)], end: u64) -> [f64; 2] {
        let mut o = Occupancy::new(Nanos(from));
        let r = rq(1, 0).build();
        for &(e, at) in events {
            o.event(e, &r, Nanos(at));
        }
        o.means(Nanos(end))
    }

    #[test]
    fn occupancy_is_the_time_mean_of_requests_in_the_block_layer_and_in_the_drive_from_the_ramp_on()
    {
        use IoEvent::*;
        // From 10 ns: a request inserted at 0 and issued at 5 (in both from 10 on), a second
        // inserted at 12 (queued and merged bios count nothing: only inserted requests are in
        // the block layer, as diskstats' in_queue counts requests); the first completes at
        // 20; the second is issued at 30 and completes at 40. Block layer: 1 x 2 + 2 x 8 +
        // 1 x 10 + 1 x 10 = 38 request-ns; drive: 1 x 2 + 1 x 8 + 1 x 10 = 20; over 40 ns.
        let events = [
            (Insert, 0),
            (Issue, 5),
            (Queue, 11),
            (Insert, 12),
            (Merge, 15),
            (Complete, 20),
            (Issue, 30),
            (Complete, 40),
        ];
        assert_eq!(occupancy(10, &events, 50), [38.0 / 40.0, 20.0 / 40.0]);
        // Nothing measured yet (the run ended at the ramp's end): no requests, not NaN.
        assert_eq!(occupancy(10, &events[..2], 10), [0.0, 0.0]);
    }

    #[test]
    fn every_state_has_its_own_name_and_drive_setup() {
        // The rows name their state (and the JSON lists the states by name), so two states
        // with one name, or two states that run the same drive, host and writers, would be
        // one configuration reported twice.
        for (i, a) in STATES.iter().enumerate() {
            for b in &STATES[..i] {
                assert_ne!(a.name, b.name);
                let setup = |s: &State| State { name: "", ..*s };
                assert_ne!(
                    format!("{:?}", setup(a)),
                    format!("{:?}", setup(b)),
                    "{}",
                    a.name
                );
            }
        }
    }

    #[test]
    fn published_rows_carry_their_schedulers_fig11c_figures_and_p99_over_nones() {
        let row = |label: &str| {
            let c = CONFIGS.iter().find(|c| c.label == label).expect("a config");
            published(c)
        };
        let mean = |e: &Option<Estimate>| e.as_ref().map(|e| e.mean);
        // The reader alone: fig-2's figures, no writers, nothing to compare with none.
        let alone = row("reader alone");
        assert_eq!(
            [
                &alone.reader_iops,
                &alone.reader_mean_us,
                &alone.reader_p90_us,
                &alone.reader_p99_us
            ]
            .map(mean),
            ALONE.map(Some)
        );
        assert_eq!(mean(&alone.writer_iops), None);
        assert_eq!(mean(&alone.in_block_layer), None);
        assert!(alone.p99_over_none.is_none());
        // kyber: its own fig-11c figures (not none's, listed first), its p99 over none's.
        let kyber = row("kyber");
        assert_eq!(mean(&kyber.reader_p90_us), Some(1269.8));
        assert_eq!(mean(&kyber.reader_p99_us), Some(2605.1));
        assert_eq!(mean(&kyber.writer_iops), Some(165_641.0));
        assert_eq!(mean(&kyber.in_block_layer), Some(59.0));
        assert_eq!(mean(&kyber.p99_over_none), Some(2605.1 / 14_352.4));
        assert_eq!(kyber.cuts_p99, Some(true));
        // A configuration the study did not run: its finding only.
        let tuned = row("kyber read_lat_nsec=250000");
        assert!(tuned.reader_p99_us.is_none() && tuned.p99_over_none.is_none());
        assert_eq!(tuned.cuts_p99, Some(true));
    }
}
