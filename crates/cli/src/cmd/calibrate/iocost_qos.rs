//! `elevator calibrate --iocost`'s `io.cost.qos` proposal: simulated sweeps of io.cost's vrate
//! bounds against two scenarios on a simulated drive, with the `io.cost.model` measured.
//! Documentation: docs/iocost.md ("`elevator calibrate --iocost`").
//!
//! **The scenarios** (the calibration's own; on `--drive`, a built-in drive or the spec
//! `elevator calibrate -o` fitted for the device, under `--sched`: the scheduler the user runs
//! below io.cost, by default the device's current one, else `none`; the sweep asks how io.cost
//! behaves over *that* elevator, whose order and queueing change what the budgets buy):
//!
//! - *protection*: `/protected` (`io.weight` 500) reads 4 KiB at random at depth 4 over the
//!   drive's first GiB beside `/bulk` (`io.weight` 100) writing 1 MiB sequentially at depth 32
//!   over the second: the protected reader's 95th percentile and the writer's bandwidth;
//! - *saturation*: `/a` (`io.weight` 100) and `/b` (`io.weight` 300) each run n jobs of the
//!   model's random-read point ([`IOCOST_PLAN`]: 4 KiB random reads at depth 64, over the whole
//!   drive, as `iocost_coef_gen.py` measures `rrandiops`), n the fewest of 1, 2, 4 .. 16 with
//!   which one group alone gets within 10% of what twice as many get ([`saturating_jobs`]):
//!   each group alone saturates the drive, so either could use all of it (the script's own
//!   help: "On high performance devices, --numjobs > 1 is needed to achieve saturation"; on
//!   the 980 PRO model one job at depth 64 gets 53% of what 256 requests in flight get).
//!   `/b`'s share of the bytes read and the total.
//!
//! **The targets** come from the drive alone: `rpct=95`, `rlat` three times the protected
//! reader's 95th percentile without the writer (rounded up to 50 us); no write target (`wpct=0`,
//! as the kernel's defaults; `wlat` = `rlat`, so the period follows the read target:
//! `ioc_refresh_period_us` takes the larger latency).
//!
//! **The sweep.** First every max of [`MAXES`] with every min of [`MINS`] below it, and with
//! `min` = `max` (vrate held, as resctl-bench's `iocost-qos` runs every point); then, for each
//! kind of lower bound (each of [`MINS`], and held), the `max` between the largest one tried
//! under which the saturation keeps the weights and the next is bisected until the two are
//! [`FINE_STEP`] points apart: the band where the budgets bind yet run the drive near full is
//! narrow (on the 980 PRO model with resctl-demo's lines, 115..127%), and that is where a
//! coarse grid misses it.
//!
//! **The choice**, among every pair tried: under which the protected reader's 95th percentile
//! stays within `rlat` *and* `/b`'s share of the saturation is within [`WEIGHT_TOLERANCE`]
//! points of its weight, the most saturation throughput (then the most write bandwidth in the
//! protection, then the smaller `max`); if no pair does both but some keep the reader within
//! `rlat`, of those the one with the most write bandwidth; if no pair keeps the reader within
//! `rlat` (on the 980 PRO model the reader waits behind the writer's programs on its plane,
//! which no budget shortens), of the pairs that keep the weights the one with the most
//! saturation throughput; else the lowest reader percentile ([`choose`]).
//!
//! **Against resctl-bench's `iocost-tune`** (facebookexperimental/resctl-demo,
//! resctl-bench/src/bench/iocost_tune.rs, iocost_qos.rs), which solves the same problem on the
//! real device over hours:
//!
//! - its points are `iocost-qos` runs at held vrates (`min` = `max`, 25 steps up to 125% of the
//!   model, dithered) of rd-hashd's storage bench and a memory hog's protection bench; ours are
//!   simulated runs of the two scenarios above, at held and at ranged bounds;
//! - it fits piecewise-linear lines to each measured series (memory offloading factor, its
//!   adjusted value under the hog, isolation, latency percentiles) and solves each rule on the
//!   fitted lines ("bandwidth": the rightmost vrate with a valid adjusted factor; "isolation":
//!   the largest vrate at the least loss under the hog; "isolated-bandwidth" between them;
//!   "naive": `min=75 max=100` with `rpct=wpct=99` and the 99th percentiles at 100%; `rlat-99-q1`
//!   ..`q4`), moving a knee up to 10% toward the flat side when the data are noisy; ours
//!   chooses among the runs themselves by thresholds, with no fit and no margin (the simulation
//!   is deterministic);
//! - it writes a held vrate as the model scaled by it with `min=max=100`, `rpct=wpct=0` and
//!   `rlat`/`wlat` from the fitted 99th percentiles (they then set only the period); ours writes
//!   the measured model and the bounds, `rpct=95` and the protection's `rlat` (for a held vrate
//!   the same prices: `calc_lcoefs`'s costs are inverse to the model's figures, so the model
//!   scaled by s at 100% prices as the model at s%, to rounding).

use anyhow::Context;
use elevator_core::group::IoCostDevice;
use elevator_core::qos::iocost::{Model, Qos};
use elevator_core::{registry, GroupTree, Nanos, SECTOR_BYTES};
use elevator_sim::{DriveModel, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::metrics::JobSummary;
use elevator_workload::BuildEnv;
use rayon::prelude::*;
use serde::Serialize;

use super::measure::IOCOST_PLAN;

/// Lower vrate bounds tried below each `max`, percent (and `min` = `max`).
pub const MINS: [u32; 4] = [25, 50, 75, 100];
/// Upper vrate bounds tried first, percent.
pub const MAXES: [u32; 8] = [50, 75, 100, 125, 150, 200, 300, 500];
/// The bisection of `max` stops when the bounds that keep and lose the weights are this many
/// percentage points apart.
pub const FINE_STEP: u32 = 2;
/// The saturation scenario's `io.weight`s of `/a` and `/b`.
pub const SATURATION_WEIGHTS: (u32, u32) = (100, 300);
/// How far, in percentage points, `/b`'s share of the saturation may be from its weight.
pub const WEIGHT_TOLERANCE: f64 = 5.0;
/// `rlat` is this many times the protected reader's 95th percentile alone.
pub const RLAT_MULT: f64 = 3.0;

/// One simulated pair of vrate bounds, both scenarios.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Trial {
    /// Lower vrate bound, percent (0 and 0: io.cost off).
    pub min: u32,
    /// Upper bound, percent.
    pub max: u32,
    /// Protection: the protected reader's 95th percentile latency, microseconds.
    pub read_p95_us: f64,
    /// Protection: its IOPS.
    pub read_iops: f64,
    /// Protection: the bulk writer's bandwidth, MB/s.
    pub write_mb_s: f64,
    /// Saturation: `/b`'s share of the bytes read, percent.
    pub sat_b_share_pct: f64,
    /// Saturation: both groups, MB/s.
    pub sat_mb_s: f64,
}

/// Which rule of [`choose`] picked the proposal.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub enum Rule {
    /// The reader within `rlat` and the weights kept: the most saturation throughput.
    Both,
    /// No pair did both; the reader within `rlat`: the most write bandwidth.
    Protection,
    /// No pair kept the reader within `rlat`; the weights kept: the most saturation
    /// throughput.
    Weights,
    /// No pair kept the reader within `rlat` or the weights: the reader's lowest percentile.
    LowestP95,
}

/// What the sweep found.
#[derive(Clone, Debug, Serialize)]
pub struct Proposal {
    /// The proposed `io.cost.qos`.
    #[serde(skip)]
    pub qos: Qos,
    /// The pair chosen, as simulated.
    pub chosen: Trial,
    /// The rule that chose it.
    pub rule: Rule,
    /// The scheduler below io.cost in every run of the sweep.
    pub sched: String,
    /// `/b`'s weight in the saturation scenario, percent of both.
    pub weight_pct: f64,
    /// Jobs of the model's random-read point each saturation group runs.
    pub saturation_jobs: u32,
    /// The reader alone: 95th percentile, microseconds.
    pub read_alone_p95_us: f64,
    /// The writer alone: 95th percentile, microseconds.
    pub write_alone_p95_us: f64,
    /// The writer alone, MB/s.
    pub write_alone_mb_s: f64,
    /// Both scenarios without io.cost (under [`Proposal::sched`]).
    pub none: Trial,
    /// Every pair of bounds tried, in the order tried.
    pub trials: Vec<Trial>,
}

/// Simulated time of one run, after its ramp: long enough for a few hundred of io.cost's
/// periods (2 x `rlat`) on an SSD; a disk's `rlat` is tens of milliseconds and its reads a
/// hundred a second, so its runs are longer.
fn span(drive: &DriveModel) -> (Nanos, Nanos) {
    if drive.ssd().is_some() {
        (Nanos::from_ms(300), Nanos::from_ms(1500))
    } else {
        (Nanos::from_secs(5), Nanos::from_secs(20))
    }
}

const GIB: u64 = 1 << 30;

/// One job of a sweep scenario: its group (0 or 1), direction, block, depth and region.
#[derive(Clone, Copy)]
struct Spec {
    group: usize,
    rw: RwMode,
    bs: u64,
    qd: u32,
    offset: u64,
    size: u64,
}

/// Run `jobs` on `drive` under `sched` (a registered scheduler, its defaults), the groups
/// `groups` (path, `io.weight`), with io.cost (`lines`) or without; each job's summary after
/// the ramp.
fn simulate(
    drive: &DriveModel,
    sched: &str,
    groups: [(&str, u32); 2],
    jobs: &[Spec],
    lines: Option<(&Model, &Qos)>,
) -> anyhow::Result<Vec<JobSummary>> {
    // The sweep simulates a hundred runs or more (about a minute and a half): Ctrl-C or
    // SIGTERM stops it at the next one, as the SSD fit stops (`fit::predict`), and nothing
    // is written. Before, the signal waited for the whole sweep.
    anyhow::ensure!(
        !crate::signals::STOP.load(std::sync::atomic::Ordering::SeqCst),
        "interrupted while sweeping io.cost.qos"
    );
    let capacity = drive.capacity_sectors() * SECTOR_BYTES;
    anyhow::ensure!(
        capacity >= 2 * GIB,
        "the drive holds less than the 2 GiB the sweep uses"
    );
    let (ramp, run) = span(drive);
    let mut tree = GroupTree::new();
    let mut ids = Vec::new();
    for (path, weight) in groups {
        let id = tree.add(path, None).map_err(|e| anyhow::anyhow!("{e}"))?;
        if lines.is_some() {
            tree.io_mut(id).weight = Some(weight);
        }
        ids.push(id);
    }
    if let Some((m, q)) = lines {
        let strip = |l: String| l.split_once(' ').map(|x| x.1.to_string()).unwrap_or(l);
        tree.set_io_cost(IoCostDevice {
            model: Some(strip(m.line("0:0"))),
            qos: Some(strip(q.line("0:0"))),
        });
    }
    let sched = registry::find(sched)
        .with_context(|| format!("no scheduler named {sched}"))?
        .build(&Default::default(), &tree)
        .map_err(|e| anyhow::anyhow!("{sched}: {e}"))?;
    let mut sim = Simulation::new(drive.device(), sched, tree);
    sim.set_ramp(ramp);
    for (k, s) in jobs.iter().enumerate() {
        let name = format!("job{k}");
        let cfg = FioJobConfig {
            rw: s.rw,
            bs: s.bs,
            iodepth: s.qd,
            offset: Some(s.offset),
            size: Some(s.size),
            time_based: true,
            runtime_ms: Some(run.as_ms()),
            ramp_ms: ramp.as_ms(),
            direct: true,
            ..FioJobConfig::default()
        };
        let env = BuildEnv::new(capacity / SECTOR_BYTES, 1, name.clone());
        let job = FioJob::new(cfg, &env)
            .map_err(|e| anyhow::anyhow!("{name}: {}: {}", e.field, e.reason))?;
        sim.add_job(JobSlot::new(name, Box::new(job)).group(ids[s.group]));
    }
    let r = sim.run(Some(ramp + run + Nanos::from_ms(10)));
    Ok(r.jobs
        .iter()
        .map(|j| j.metrics.summary("", "", r.end))
        .collect())
}

/// The protection scenario's groups.
const PROTECTION: [(&str, u32); 2] = [("/protected", 500), ("/bulk", 100)];

/// The protection scenario's reader and writer.
fn protection_jobs(reader: bool, writer: bool) -> Vec<Spec> {
    let mut jobs = Vec::new();
    if reader {
        jobs.push(Spec {
            group: 0,
            rw: RwMode::RandRead,
            bs: 4096,
            qd: 4,
            offset: 0,
            size: GIB,
        });
    }
    if writer {
        jobs.push(Spec {
            group: 1,
            rw: RwMode::Write,
            bs: 1 << 20,
            qd: 32,
            offset: GIB,
            size: GIB,
        });
    }
    jobs
}

/// The saturation scenario's groups.
const SATURATION: [(&str, u32); 2] = [("/a", SATURATION_WEIGHTS.0), ("/b", SATURATION_WEIGHTS.1)];

/// `n` jobs of the model's random-read point over the whole drive in each of `groups`.
fn saturation_jobs(drive: &DriveModel, groups: &[usize], n: u32) -> Vec<Spec> {
    let p = IOCOST_PLAN[2];
    debug_assert_eq!(p.rw, RwMode::RandRead);
    let whole = drive.capacity_sectors() * SECTOR_BYTES;
    groups
        .iter()
        .flat_map(|&group| {
            (0..n).map(move |_| Spec {
                group,
                rw: p.rw,
                bs: p.bs,
                qd: p.qd,
                offset: 0,
                size: whole,
            })
        })
        .collect()
}

/// The most jobs a saturation group runs.
const MAX_SATURATION_JOBS: u32 = 16;

/// How many jobs of the model's random-read point one group needs to saturate `drive` alone
/// under `sched`: the fewest of 1, 2, 4 .. [`MAX_SATURATION_JOBS`] with which it gets within
/// 10% of what twice as many get (no io.cost).
pub fn saturating_jobs(drive: &DriveModel, sched: &str) -> anyhow::Result<u32> {
    let alone = |n: u32| -> anyhow::Result<f64> {
        let s = simulate(
            drive,
            sched,
            SATURATION,
            &saturation_jobs(drive, &[1], n),
            None,
        )?;
        Ok(s.iter().map(|j| j.read.mb_s).sum())
    };
    let mut n = 1;
    let mut got = alone(n)?;
    while n < MAX_SATURATION_JOBS {
        let more = alone(2 * n)?;
        if more < got * 1.1 {
            break;
        }
        n *= 2;
        got = more;
    }
    Ok(n)
}

/// Both scenarios on `drive` under `sched` (`n` jobs a saturation group) with io.cost
/// (`lines`) or without, as a [`Trial`] at `min`, `max`.
fn trial(
    drive: &DriveModel,
    sched: &str,
    n: u32,
    lines: Option<(&Model, &Qos)>,
    min: u32,
    max: u32,
) -> anyhow::Result<Trial> {
    let p = simulate(
        drive,
        sched,
        PROTECTION,
        &protection_jobs(true, true),
        lines,
    )?;
    let s = simulate(
        drive,
        sched,
        SATURATION,
        &saturation_jobs(drive, &[0, 1], n),
        lines,
    )?;
    let (a, b) = s.split_at(n as usize);
    let bytes = |js: &[JobSummary]| js.iter().map(|j| j.read.bytes as f64).sum::<f64>();
    let (ab, bb) = (bytes(a), bytes(b));
    Ok(Trial {
        min,
        max,
        read_p95_us: p[0].read.lat_p95_ms * 1e3,
        read_iops: p[0].read.iops,
        write_mb_s: p[1].write.mb_s,
        sat_b_share_pct: 100.0 * bb / (ab + bb).max(1.0),
        sat_mb_s: s.iter().map(|j| j.read.mb_s).sum(),
    })
}

/// `x` rounded up to a multiple of `step`.
fn round_up(x: f64, step: u32) -> u32 {
    let s = f64::from(step);
    ((x / s).ceil() * s).max(s) as u32
}

/// `/b`'s weight in the saturation scenario, percent.
pub fn weight_pct() -> f64 {
    let (a, b) = SATURATION_WEIGHTS;
    100.0 * f64::from(b) / f64::from(a + b)
}

/// Whether `t` kept the saturation's shares within [`WEIGHT_TOLERANCE`] of `weight_pct`.
fn keeps_weights(t: &Trial, weight_pct: f64) -> bool {
    (t.sat_b_share_pct - weight_pct).abs() <= WEIGHT_TOLERANCE
}

/// The pair the proposal takes from `trials` (see the module documentation), and the rule
/// that took it; `None` if there are no trials.
pub fn choose(trials: &[Trial], rlat_us: f64, weight_pct: f64) -> Option<(Trial, Rule)> {
    let within = |t: &&Trial| t.read_p95_us <= rlat_us;
    let both = trials
        .iter()
        .filter(within)
        .filter(|t| keeps_weights(t, weight_pct))
        .max_by(|a, b| {
            a.sat_mb_s
                .total_cmp(&b.sat_mb_s)
                .then(a.write_mb_s.total_cmp(&b.write_mb_s))
                .then(b.max.cmp(&a.max))
        });
    if let Some(t) = both {
        return Some((*t, Rule::Both));
    }
    let protected = trials.iter().filter(within).max_by(|a, b| {
        a.write_mb_s
            .total_cmp(&b.write_mb_s)
            .then(b.max.cmp(&a.max))
    });
    if let Some(t) = protected {
        return Some((*t, Rule::Protection));
    }
    let weights = trials
        .iter()
        .filter(|t| keeps_weights(t, weight_pct))
        .max_by(|a, b| {
            a.sat_mb_s
                .total_cmp(&b.sat_mb_s)
                .then(b.read_p95_us.total_cmp(&a.read_p95_us))
                .then(b.max.cmp(&a.max))
        });
    if let Some(t) = weights {
        return Some((*t, Rule::Weights));
    }
    trials
        .iter()
        .min_by(|a, b| a.read_p95_us.total_cmp(&b.read_p95_us))
        .map(|t| (*t, Rule::LowestP95))
}

/// A kind of lower bound: a fixed `min`, or `min` = `max` (vrate held).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Low {
    Fixed(u32),
    Held,
}

impl Low {
    fn of(t: &Trial) -> Low {
        if t.min == t.max {
            Low::Held
        } else {
            Low::Fixed(t.min)
        }
    }

    fn pair(self, max: u32) -> (u32, u32) {
        match self {
            Low::Fixed(min) => (min, max),
            Low::Held => (max, max),
        }
    }
}

/// The first pairs tried: every max of [`MAXES`] with every min of [`MINS`] below it, and held.
fn coarse_pairs() -> Vec<(u32, u32)> {
    MAXES
        .iter()
        .flat_map(|&max| {
            MINS.iter()
                .filter(move |&&min| min < max)
                .map(move |&min| (min, max))
                .chain(std::iter::once((max, max)))
        })
        .collect()
}

/// For each kind of lower bound, the `max` tried under which the saturation keeps the weights
/// and the next one tried above it, under which it loses them, if they are more than
/// [`FINE_STEP`] apart.
fn open_brackets(trials: &[Trial], weight_pct: f64) -> Vec<(Low, u32, u32)> {
    let mut lows: Vec<Low> = MINS.iter().map(|&m| Low::Fixed(m)).collect();
    lows.push(Low::Held);
    lows.into_iter()
        .filter_map(|low| {
            let mut mine: Vec<&Trial> = trials.iter().filter(|t| Low::of(t) == low).collect();
            mine.sort_by_key(|t| t.max);
            let keep = mine.iter().rposition(|t| keeps_weights(t, weight_pct))?;
            let lose = mine.get(keep + 1)?;
            (lose.max - mine[keep].max > FINE_STEP).then(|| (low, mine[keep].max, lose.max))
        })
        .collect()
}

/// Search the vrate bounds for `model` on `drive` under `sched` (see the module
/// documentation).
pub fn propose(model: &Model, drive: &DriveModel, sched: &str) -> anyhow::Result<Proposal> {
    // The reader alone, the writer alone, and the saturation search with its run without
    // io.cost are independent runs: side by side (each a chain the sweep below waits for).
    let ((alone_r, alone_w), saturation) = rayon::join(
        || {
            rayon::join(
                || {
                    simulate(
                        drive,
                        sched,
                        PROTECTION,
                        &protection_jobs(true, false),
                        None,
                    )
                },
                || {
                    simulate(
                        drive,
                        sched,
                        PROTECTION,
                        &protection_jobs(false, true),
                        None,
                    )
                },
            )
        },
        || -> anyhow::Result<(u32, Trial)> {
            let n = saturating_jobs(drive, sched)?;
            Ok((n, trial(drive, sched, n, None, 0, 0)?))
        },
    );
    let (alone_r, alone_w, (n, none)) = (alone_r?, alone_w?, saturation?);
    let read_alone_p95_us = alone_r[0].read.lat_p95_ms * 1e3;
    let rlat = round_up(read_alone_p95_us * RLAT_MULT, 50);
    let qos_of = |min: u32, max: u32| Qos {
        enable: true,
        rppm: 950_000,
        rlat,
        wppm: 0,
        wlat: rlat,
        min_ppm: min * 10_000,
        max_ppm: max * 10_000,
    };
    let run = |pairs: &[(u32, u32)]| -> anyhow::Result<Vec<Trial>> {
        pairs
            .par_iter()
            .map(|&(min, max)| trial(drive, sched, n, Some((model, &qos_of(min, max))), min, max))
            .collect()
    };
    let weight_pct = weight_pct();
    let mut trials = run(&coarse_pairs())?;
    loop {
        let open = open_brackets(&trials, weight_pct);
        if open.is_empty() {
            break;
        }
        let pairs: Vec<(u32, u32)> = open
            .iter()
            .map(|&(low, keep, lose)| low.pair((keep + lose) / 2))
            .collect();
        trials.extend(run(&pairs)?);
    }
    let (chosen, rule) =
        choose(&trials, f64::from(rlat), weight_pct).context("no pair of bounds was tried")?;
    Ok(Proposal {
        qos: qos_of(chosen.min, chosen.max),
        sched: sched.to_string(),
        chosen,
        rule,
        weight_pct,
        saturation_jobs: n,
        read_alone_p95_us,
        write_alone_p95_us: alone_w[0].write.lat_p95_ms * 1e3,
        write_alone_mb_s: alone_w[0].write.mb_s,
        none,
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(min: u32, max: u32, p95: f64, write: f64, share: f64, sat: f64) -> Trial {
        Trial {
            min,
            max,
            read_p95_us: p95,
            read_iops: 1000.0,
            write_mb_s: write,
            sat_b_share_pct: share,
            sat_mb_s: sat,
        }
    }

    #[test]
    fn bounds_are_rounded_up_to_the_step() {
        assert_eq!(round_up(101.0, 50), 150);
        assert_eq!(round_up(0.0, 50), 50);
        assert_eq!(round_up(150.0, 50), 150);
    }

    /// The proposal is the pair that keeps both the reader within `rlat` and the saturation's
    /// shares within 5 points, with the most saturation throughput, over one that gives the
    /// writer more but lets the weights go (`ioc_timer_fn` then finds nobody short of budget:
    /// both groups get what they ask); without such a pair, the protection alone decides.
    #[test]
    fn the_proposal_keeps_the_weights_of_a_saturated_drive_before_write_bandwidth() {
        let trials = [
            t(25, 500, 200.0, 900.0, 50.0, 3000.0),
            t(25, 150, 250.0, 500.0, 74.0, 2500.0),
            t(170, 170, 280.0, 400.0, 73.0, 2900.0),
            t(180, 180, 290.0, 450.0, 68.0, 2950.0),
            t(200, 200, 400.0, 450.0, 75.0, 2990.0),
        ];
        let (c, rule) = choose(&trials, 300.0, 75.0).unwrap();
        assert_eq!((c.min, c.max, rule), (170, 170, Rule::Both));
        let (c, rule) = choose(&trials[..1], 300.0, 75.0).unwrap();
        assert_eq!((c.min, c.max, rule), (25, 500, Rule::Protection));
        let (c, rule) = choose(&trials[1..], 200.0, 75.0).unwrap();
        assert_eq!((c.min, c.max, rule), (200, 200, Rule::Weights));
        let (c, rule) = choose(&trials[..1], 100.0, 75.0).unwrap();
        assert_eq!((c.min, c.max, rule), (25, 500, Rule::LowestP95));
    }

    /// The bisection brackets, for each kind of lower bound, the last `max` that keeps the
    /// weights and the next, and closes when they are `FINE_STEP` apart.
    #[test]
    fn the_bisection_brackets_the_last_max_that_keeps_the_weights() {
        let trials = [
            t(25, 100, 0.0, 0.0, 75.0, 0.0),
            t(25, 125, 0.0, 0.0, 74.0, 0.0),
            t(25, 150, 0.0, 0.0, 50.0, 0.0),
            t(125, 125, 0.0, 0.0, 75.0, 0.0),
            t(126, 126, 0.0, 0.0, 50.0, 0.0),
            t(50, 500, 0.0, 0.0, 75.0, 0.0),
        ];
        let open = open_brackets(&trials, 75.0);
        assert_eq!(open, vec![(Low::Fixed(25), 125, 150)]);
        assert_eq!(Low::Fixed(25).pair(137), (25, 137));
        assert_eq!(Low::Held.pair(137), (137, 137));
        assert!(coarse_pairs().contains(&(100, 100)));
        assert!(coarse_pairs().contains(&(75, 125)));
        assert!(!coarse_pairs().contains(&(100, 75)));
    }

    /// The model `calibrate --iocost` measures on the simulated `drive`, as
    /// `reproduce io-control-today` takes it.
    fn measured(drive: &DriveModel) -> Model {
        let secs = if drive.ssd().is_some() { 2 } else { 20 };
        let span =
            super::super::measure::Span::of_slice(std::time::Duration::from_millis(secs * 1100));
        super::super::iocost::simulated_model(drive, span).unwrap()
    }

    /// On the 980 PRO model, with the model `calibrate --iocost` measures there: no pair of
    /// bounds keeps the protected reader within `rlat` (it waits behind the writer's programs on
    /// its plane, whatever the writer's budget), so the proposal is the one that keeps the
    /// saturated drive's shares within 5 points with the most throughput: a held vrate just
    /// below where the budgets stop binding (`ioc_timer_fn` finds no group short of budget
    /// above it and the weights go), within 10% of the drive without io.cost. The sweep of
    /// the protection alone proposed `min=25 max=100` here: shares kept but half the drive.
    #[test]
    fn on_the_980pro_model_the_proposal_keeps_the_weights_of_two_saturating_groups() {
        let d = DriveModel::resolve("samsung-980pro-1tb").unwrap();
        let m = measured(&d);
        let p = propose(&m, &d, "none").unwrap();
        let c = p.chosen;
        assert_eq!(p.qos.min_ppm, c.min * 10_000, "{p:?}");
        assert!(
            (c.sat_b_share_pct - p.weight_pct).abs() <= WEIGHT_TOLERANCE,
            "{c:?} {p:?}"
        );
        assert!(
            c.sat_mb_s >= 0.9 * p.none.sat_mb_s,
            "{c:?} none {:?}",
            p.none
        );
        assert!(
            p.trials
                .iter()
                .all(|t| t.read_p95_us > f64::from(p.qos.rlat)),
            "{p:?}"
        );
        assert_eq!(p.rule, Rule::Weights);
    }

    /// The sweep's runs go through the scheduler it is given: on the 2009 disk one job of the
    /// model's random-read point (depth 64, behind the host's 32 tags under `none`) reads
    /// faster under mq-deadline, which serves its queued reads in sector order
    /// (`deadline_next_request` from the sort tree), than under `none`'s FIFO. Before
    /// `--sched` every run was under `none` and the two were one.
    #[test]
    fn the_sweeps_runs_go_through_the_scheduler_it_is_given() {
        let d = DriveModel::resolve("ibm18es").unwrap();
        let none = trial(&d, "none", 1, None, 0, 0).unwrap();
        let dd = trial(&d, "mq-deadline", 1, None, 0, 0).unwrap();
        assert!(dd.sat_mb_s > 1.1 * none.sat_mb_s, "{dd:?} none {none:?}");
        assert!(simulate(&d, "cfq2", SATURATION, &[], None).is_err());
    }

    /// qos13 found (docs/iocost.md, "io.cost over mq-deadline on the 2009 disk") that over
    /// mq-deadline a held vrate of 120-135% of the calibrated model keeps both the weights and
    /// the throughput of the 2009 disk saturated by random readers, and that the sweep over
    /// `none` holds 107%. The sweep over mq-deadline (`calibrate --iocost --sched
    /// mq-deadline`) holds vrate inside that band (125%): the protected reader within `rlat`
    /// and /b within 5 points of its 75%. In the sweep's own saturation scenario (one job of
    /// 64 random reads a group over the whole disk) that costs a fifth of mq-deadline alone's
    /// reads (0.80), where the reproduce's (four readers at depth 4 a group, each in its own
    /// eighth) lost none at 120-135%; why the two scenarios differ is not traced yet.
    #[test]
    fn on_the_2009_disk_the_sweep_over_mq_deadline_holds_vrate_in_the_band_that_keeps_the_weights()
    {
        let d = DriveModel::resolve("ibm18es").unwrap();
        let m = measured(&d);
        let brief = |p: &Proposal| {
            format!(
                "chosen {:?} rule {:?} none {:?} rlat {}",
                p.chosen, p.rule, p.none, p.qos.rlat
            )
        };
        let p = propose(&m, &d, "mq-deadline").unwrap();
        let c = p.chosen;
        assert_eq!((p.sched.as_str(), p.rule), ("mq-deadline", Rule::Both));
        assert!(
            (c.sat_b_share_pct - p.weight_pct).abs() <= WEIGHT_TOLERANCE,
            "{}",
            brief(&p)
        );
        assert!(
            c.min == c.max && (120..=135).contains(&c.max),
            "{}",
            brief(&p)
        );
        assert!(c.sat_mb_s >= 0.75 * p.none.sat_mb_s, "{}", brief(&p));
        let over_none = propose(&m, &d, "none").unwrap();
        assert!(over_none.chosen.max < 120, "{}", brief(&over_none));
    }

    #[test]
    #[ignore = "prints every trial of the sweep on both drives; run by hand"]
    fn print_sweeps() {
        for name in ["samsung-980pro-1tb", "ibm18es"] {
            let d = DriveModel::resolve(name).unwrap();
            let m = measured(&d);
            let p = propose(&m, &d, "none").unwrap();
            crate::output::tell!("{name}: {}", m.line("0:0"));
            crate::output::tell!("  rlat {} none {:?}", p.qos.rlat, p.none);
            let mut ts = p.trials.clone();
            ts.sort_by_key(|t| (t.max, t.min));
            for t in ts {
                crate::output::tell!("  {t:?}");
            }
            crate::output::tell!(
                "  chosen {:?} {:?}: {}",
                p.rule,
                p.chosen,
                p.qos.line("0:0")
            );
        }
    }
}
