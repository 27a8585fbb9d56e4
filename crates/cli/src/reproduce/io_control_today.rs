//! The io-controller comparison extended to today's cgroup v2 controllers (issue 29): the
//! 2009 question (how do two groups share a disk?) asked of the controllers people configure
//! now, on the 2009-class disk (the IBM Ultrastar 18ES) and on the Samsung 980 PRO model.
//!
//! Two experiments, every setup on both drives:
//!
//! - **share**: Goyal's 16 sequential 4 KiB readers in `/a` against n in `/b` (n = 1, 16),
//!   equal weights: B's share of the bandwidth and the total, under cfq's and bfq's groups.
//! - **protection**: a latency-sensitive reader (random 4 KiB reads, one at a time) in
//!   `/interactive` beside a bulk writer (sequential 128 KiB O_DIRECT writes, 16 at a time) in
//!   `/bulk`: the reader's p99 latency, the writer's throughput and the total, with no
//!   control, under cfq's and bfq's groups (equal weights), io.latency (a target on
//!   `/interactive`: the scenario's, and one set as the kernel's documentation advises,
//!   [`LatencyTarget::FromAlone`]) over none and over mq-deadline, io.max (a write cap on
//!   `/bulk`) over none, and io.cost (`io.weight` 500 on `/interactive`, 100 on `/bulk`) over none and over
//!   mq-deadline; and with no control but the writer one at a time, the lowest depth
//!   io.latency can hold it to ([`Control::Floor`]).
//!
//! - **saturation** (io.cost's own case): in each group a workload that alone saturates the
//!   drive ([`saturation_workload`]: several random 4 KiB readers with a queue of their own),
//!   with no controller and under io.cost over none at 1:1, 2:1 and 3:1, with the kernel's
//!   QoS defaults for the device class, with the model and QoS resctl-demo applies
//!   ([`resctl_lines`]: resctl-bench's `iocost-params`), as it writes them and with the QoS's
//!   `max` raised to [`LIFTED_MAX`], and with the calibrated model and the QoS `calibrate
//!   --iocost` proposes for the drive ([`proposal_lines`]: its own sweep, whose scenarios are
//!   not this one); and the same over mq-deadline, the proposal from a sweep over
//!   mq-deadline (`--sched`): B's share and the total against none's and against the same
//!   scheduler alone.
//!
//! The share experiment also runs io.cost over none and over mq-deadline, with equal
//! `io.weight`s (Goyal's setting) and with `/b` weighted 2:1 and 3:1 ([`SHARE`]), with the
//! calibrated model and the QoS defaults, with resctl-demo's lines and with `calibrate
//! --iocost`'s proposal swept over the row's scheduler (as the saturation table's rows), and
//! over mq-deadline with the proposal's `min` lowered to [`OPENED_MIN`]: "B share" against
//! "weight %" (B's weight over both), and the total against none's and against the same
//! scheduler alone.
//!
//! io.cost's model ([`CostModel`]): the kernel's documentation tells users to measure their
//! device's `io.cost.model` (tools/cgroup/iocost_coef_gen.py); its rows run with the model
//! `elevator calibrate --iocost` measures, taken on the simulated drive itself
//! ([`calibrate::iocost::simulated_model`]), and the kernel's QoS defaults for the device
//! class (no latency targets: the busy signal is requests waiting to be issued, `rq_wait`).
//! The rows marked "built-in model" run with the kernel's built-in coefficients for the class
//! instead, to show what they do on these drives (docs/iocost.md).

use std::sync::LazyLock;

use anyhow::Context;
use elevator_core::qos::iocost::Model;
use elevator_core::Settings;
use elevator_sim::scenario::Scenario;
use rayon::prelude::*;
use serde::Serialize;

use crate::cmd::calibrate;
use crate::output::{self, say};
use crate::stats::Estimate;

/// The two drives: (name in the table, built-in drive).
pub static DRIVES: [(&str, &str); 2] = [
    ("2009 disk (IBM 18ES)", "ibm18es"),
    ("980 PRO model", "samsung-980pro-1tb"),
];

/// The drives a run covers: every one of [`DRIVES`], or the one built-in drive `only` names
/// (`reproduce io-control-today --drive`).
pub fn drives(only: Option<&str>) -> anyhow::Result<&'static [(&'static str, &'static str)]> {
    match only {
        None => Ok(&DRIVES),
        Some(name) => match DRIVES.iter().position(|d| d.1 == name) {
            Some(i) => Ok(&DRIVES[i..=i]),
            None => anyhow::bail!(
                "--drive {name}: io-control-today runs on {}",
                DRIVES.map(|d| d.1).join(" or ")
            ),
        },
    }
}

/// Simulated seconds per run.
pub const RUNTIME_S: u64 = 20;
/// The protection runs' figures leave out the first this many seconds (fio's `ramp_time`):
/// io.latency takes a few 500 ms scale steps to find the depth that meets the target.
pub const RAMP_S: u64 = 5;

/// One protection setup: (label, scheduler, controller).
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Shown in the table.
    pub label: &'static str,
    /// The scheduler below the controllers.
    pub sched: &'static str,
    /// The controller's group settings.
    pub control: Control,
}

/// Which io controller a setup configures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// No io controller.
    None,
    /// io.latency: `/interactive`'s target.
    Latency(LatencyTarget),
    /// io.max: `/bulk`'s write cap.
    Max,
    /// No io controller, `/bulk`'s writer one at a time instead of 16: the lowest depth
    /// io.latency can hold a data-only offender to (`scale_change` stops at 1, and v6.1's
    /// induced delay never grows for it), so the reader's latency here is what io.latency
    /// could at best achieve.
    Floor,
    /// io.cost: `io.weight` 500 on `/interactive`, 100 on `/bulk`, with this model.
    Cost(CostModel),
}

/// Which io.latency target `/interactive` gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyTarget {
    /// The scenario's own: 50 ms on the disk, 2 ms on the SSD ([`latency_target_us`]).
    Scenario,
    /// As Documentation/admin-guide/cgroup-v2.rst ("IO Latency") advises: the `avg_lat` the
    /// workload sees in normal operation, here the reader's mean latency alone on the drive,
    /// plus 15%; on an SSD, whose io.stat shows no `avg_lat` and whose windows are judged by
    /// their 90th percentile, the reader's p90 alone plus 15% ([`alone_target_us`]).
    FromAlone,
}

/// The `io.cost.model` an io.cost setup runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostModel {
    /// The kernel's built-in coefficients for the device class (`autop[]`).
    Builtin,
    /// The model `calibrate --iocost` measures on the simulated drive ([`drive_model`]).
    Calibrated,
}

/// The protection setups, in table order.
pub const SETUPS: [Setup; 11] = [
    Setup {
        label: "none",
        sched: "none",
        control: Control::None,
    },
    Setup {
        label: "cfq groups",
        sched: "cfq",
        control: Control::None,
    },
    Setup {
        label: "bfq groups",
        sched: "bfq",
        control: Control::None,
    },
    Setup {
        label: "io.latency / none",
        sched: "none",
        control: Control::Latency(LatencyTarget::Scenario),
    },
    Setup {
        label: "io.latency / none, target from the reader alone",
        sched: "none",
        control: Control::Latency(LatencyTarget::FromAlone),
    },
    Setup {
        label: "io.latency / mq-deadline",
        sched: "mq-deadline",
        control: Control::Latency(LatencyTarget::Scenario),
    },
    Setup {
        label: "none, /bulk at depth 1",
        sched: "none",
        control: Control::Floor,
    },
    Setup {
        label: "io.max / none",
        sched: "none",
        control: Control::Max,
    },
    Setup {
        label: "io.cost / none, built-in model",
        sched: "none",
        control: Control::Cost(CostModel::Builtin),
    },
    Setup {
        label: "io.cost / none",
        sched: "none",
        control: Control::Cost(CostModel::Calibrated),
    },
    Setup {
        label: "io.cost / mq-deadline",
        sched: "mq-deadline",
        control: Control::Cost(CostModel::Calibrated),
    },
];

/// The share setups: (label, scheduler, io.cost's `io.weight`s of /a and /b and its lines,
/// or none). io.cost with the calibrated model and the QoS defaults (rows without a recipe
/// named), with resctl-demo's lines and with `calibrate --iocost`'s proposal swept over the
/// row's scheduler, as in the saturation table ([`SATURATION`]), and over mq-deadline the
/// proposal with its `min` lowered to [`OPENED_MIN`]; each at equal weights and at 2:1 and
/// 3:1 ([`cost_rows`]). Each scheduler's row without a controller is its "alone".
pub static SHARE: LazyLock<Vec<CostRow>> = LazyLock::new(|| {
    let mut rows = vec![
        alone("none", "none"),
        alone("cfq groups", "cfq"),
        alone("bfq groups", "bfq"),
        (
            "io.cost / none, built-in model, b 3:1".to_string(),
            "none",
            Some((100, 300, QosSet::Builtin)),
        ),
    ];
    let recipes = [
        ("", QosSet::Defaults),
        (", resctl-demo recipe", QosSet::Resctl),
        (", calibrate --iocost's proposal", QosSet::Proposed),
    ];
    rows.extend(cost_rows("io.cost / none", "none", &recipes));
    rows.push(alone("mq-deadline", "mq-deadline"));
    rows.extend(cost_rows("io.cost / mq-deadline", "mq-deadline", &recipes));
    let opened = format!(", proposal with min={OPENED_MIN}");
    rows.extend(cost_rows(
        "io.cost / mq-deadline",
        "mq-deadline",
        &[(&opened, QosSet::ProposedMin(OPENED_MIN))],
    ));
    rows
});

/// How long each point of the simulated `calibrate --iocost` runs on `drive`: 20 simulated
/// seconds on a disk (a 128 MiB transfer takes seconds there), 2 on an SSD; a tenth more as
/// ramp.
fn model_span(drive: &elevator_sim::DriveModel) -> calibrate::measure::Span {
    let secs = if matches!(drive, elevator_sim::DriveModel::Hdd(_)) {
        20
    } else {
        2
    };
    calibrate::measure::Span::of_slice(std::time::Duration::from_millis(secs * 1100))
}

/// `value(drive)`, computed once a drive per process (`cache` holds what was).
fn cached<T: Clone>(
    cache: &std::sync::Mutex<Vec<(String, T)>>,
    drive: &str,
    value: impl FnOnce(&str) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    if let Some((_, v)) = cache
        .lock()
        .expect("the cache lock")
        .iter()
        .find(|(d, _)| d == drive)
    {
        return Ok(v.clone());
    }
    let v = value(drive)?;
    cache
        .lock()
        .expect("the cache lock")
        .push((drive.to_string(), v.clone()));
    Ok(v)
}

/// A line without its leading device number.
fn without_devno(line: String) -> String {
    line.split_once(' ')
        .map_or(line.clone(), |x| x.1.to_string())
}

/// The `io.cost.model` that `calibrate --iocost` measures on the simulated `drive` (a
/// built-in name), computed once a drive per process.
fn measured_model(drive: &str) -> anyhow::Result<Model> {
    static CACHE: std::sync::Mutex<Vec<(String, Model)>> = std::sync::Mutex::new(Vec::new());
    cached(&CACHE, drive, |drive| {
        let d = elevator_sim::DriveModel::resolve(drive)
            .map_err(|e| anyhow::anyhow!("{drive}: {e}"))?;
        calibrate::iocost::simulated_model(&d, model_span(&d))
            .with_context(|| format!("io.cost.model of {drive}"))
    })
}

/// The `io.cost.model` line (without the device number) that `calibrate --iocost` measures on
/// the simulated `drive` (a built-in name).
pub fn drive_model(drive: &str) -> anyhow::Result<String> {
    Ok(without_devno(measured_model(drive)?.line("0:0")))
}

/// The `io.cost.model` and `io.cost.qos` lines (without the device number) `calibrate
/// --iocost --sched SCHED` gives for the simulated `drive`: the measured model
/// ([`drive_model`]) and the QoS its sweep proposes on the same drive under `sched`
/// ([`calibrate::iocost_qos::propose`]), computed once a drive and scheduler per process.
pub fn proposal_lines(drive: &str, sched: &str) -> anyhow::Result<(String, String)> {
    static CACHE: std::sync::Mutex<Vec<(String, (String, String))>> =
        std::sync::Mutex::new(Vec::new());
    cached(&CACHE, &format!("{drive} {sched}"), |_| {
        let model = measured_model(drive)?;
        let d = elevator_sim::DriveModel::resolve(drive)
            .map_err(|e| anyhow::anyhow!("{drive}: {e}"))?;
        let p = calibrate::iocost_qos::propose(&model, &d, sched)
            .with_context(|| format!("io.cost.qos proposal for {drive} under {sched}"))?;
        Ok((
            without_devno(model.line("0:0")),
            without_devno(p.qos.line("0:0")),
        ))
    })
}

/// The top-level scenario line that gives io.cost `model` on `drive` (none for the built-in).
fn model_line(drive: &str, model: CostModel) -> anyhow::Result<String> {
    Ok(match model {
        CostModel::Builtin => String::new(),
        CostModel::Calibrated => format!("io_cost_model = \"{}\"\n", drive_model(drive)?),
    })
}

/// io.latency's target for `/interactive` on `drive` in the scenario, microseconds.
pub fn latency_target_us(drive: &str) -> u64 {
    if drive == "ibm18es" {
        50_000
    } else {
        2_000
    }
}

/// io.latency's target for `/interactive` on `drive` as the kernel's documentation advises
/// (cgroup-v2.rst, "IO Latency": watch the group's `avg_lat` in normal operation and set the
/// target 10-15% above it): the reader's mean latency alone on the drive (seed 1, the whole
/// run) plus 15%, rounded up to 100 us; computed once a drive per process. On the SSD
/// io.stat shows `missed` and `total` instead of `avg_lat` (`iolatency_ssd_stat`) and a
/// window is good while under a tenth of its bios miss (`latency_sum_ok`), so what the user
/// keeps within the target is the p90: there the reader's p90 alone plus 15%.
pub fn alone_target_us(drive: &str) -> anyhow::Result<u64> {
    static CACHE: std::sync::Mutex<Vec<(String, u64)>> = std::sync::Mutex::new(Vec::new());
    cached(&CACHE, drive, |drive| {
        let text = scenario_text(drive, Control::None, false)?;
        let scenario = Scenario::parse(&text, "builtin:io-control-reader-alone", None)
            .context("the io-control reader-alone scenario")?;
        let sched = scenario.scheduler("none", &Settings::new())?;
        let report = scenario.simulation(sched, Some(1))?.run(scenario.limit);
        let i = report
            .job("interactive")
            .context("job interactive missing from the report")?;
        let lat = i.metrics.read.latency.histogram();
        // io.latency's mode follows the queue's rotational flag (`blk_queue_nonrot`), as the
        // simulated drive's kind sets it.
        let us = if scenario.drive.hdd().is_some() {
            lat.mean() / 1e3
        } else {
            lat.value_at_quantile(0.90) as f64 / 1e3
        };
        Ok(((us * 1.15 / 100.0).ceil() as u64) * 100)
    })
}

/// io.latency's target of `control` on `drive`, microseconds (none without io.latency).
pub fn target_us(drive: &str, control: Control) -> anyhow::Result<Option<u64>> {
    Ok(match control {
        Control::Latency(LatencyTarget::Scenario) => Some(latency_target_us(drive)),
        Control::Latency(LatencyTarget::FromAlone) => Some(alone_target_us(drive)?),
        _ => None,
    })
}

/// io.max's write cap for `/bulk` on `drive`, bytes per second.
pub fn write_cap(drive: &str) -> u64 {
    if drive == "ibm18es" {
        2 << 20
    } else {
        100 << 20
    }
}

/// The protection scenario on `drive` under `control`, as scenario-file text.
pub fn protection_text(drive: &str, control: Control) -> anyhow::Result<String> {
    scenario_text(drive, control, true)
}

/// The protection scenario on `drive` under `control`, with /bulk's writer when `bulk`.
fn scenario_text(drive: &str, control: Control, bulk: bool) -> anyhow::Result<String> {
    let model = match control {
        Control::Cost(m) => model_line(drive, m)?,
        _ => String::new(),
    };
    let mut s = format!(
        "name = \"io-control-protection\"\ndrive = \"{drive}\"\nseed = 1\n\
         duration_s = {RUNTIME_S}\n{model}\n[[group]]\npath = \"/interactive\"\n"
    );
    if let Some(us) = target_us(drive, control)? {
        s.push_str(&format!("io_latency_us = {us}\n"));
    }
    if matches!(control, Control::Cost(_)) {
        s.push_str("io_weight = 500\n");
    }
    s.push_str("\n[[group]]\npath = \"/bulk\"\n");
    if control == Control::Max {
        s.push_str(&format!("io_max = \"wbps={}\"\n", write_cap(drive)));
    }
    if matches!(control, Control::Cost(_)) {
        s.push_str("io_weight = 100\n");
    }
    s.push_str(&format!(
        "\n[[job]]\nname = \"interactive\"\ngroup = \"/interactive\"\nkind = \"fio\"\n\
         rw = \"randread\"\nbs = 4096\ndirect = true\noffset_frac = 0.0\nsize_frac = 0.2\ntime_based = true\n\
         runtime_ms = {}\n",
        RUNTIME_S * 1000
    ));
    if !bulk {
        return Ok(s);
    }
    s.push_str(&format!(
        "\n[[job]]\nname = \"bulk\"\ngroup = \"/bulk\"\nkind = \"fio\"\nrw = \"write\"\n\
         bs = 131072\niodepth = {qd}\ndirect = true\noffset_frac = 0.5\nsize_frac = 0.4\ntime_based = true\n\
         runtime_ms = {ms}\n",
        ms = RUNTIME_S * 1000,
        qd = if control == Control::Floor { 1 } else { 16 },
    ));
    Ok(s)
}

/// One protection run's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Protection {
    /// The interactive reader's 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// Its 90th percentile, ms (io.latency's SSD mode keeps 90% of a window within target).
    pub p90_ms: f64,
    /// Its mean, ms (io.latency's HDD mode keeps a window's mean within target).
    pub mean_ms: f64,
    /// The interactive reader's throughput, MB/s.
    pub interactive_mb_s: f64,
    /// The bulk writer's throughput, MB/s.
    pub bulk_mb_s: f64,
}

/// Run one protection setup on `drive` with `seed`.
pub fn protection_one(drive: &str, setup: &Setup, seed: u64) -> anyhow::Result<Protection> {
    protection_run(&protection_text(drive, setup.control)?, setup.sched, seed)
}

/// Run the protection scenario `text` under `sched` with `seed`: the figures after the
/// [`RAMP_S`] ramp.
fn protection_run(text: &str, sched: &str, seed: u64) -> anyhow::Result<Protection> {
    let scenario = Scenario::parse(text, "builtin:io-control-protection", None)
        .context("the io-control protection scenario")?;
    let sched = scenario.scheduler(sched, &Settings::new())?;
    let mut sim = scenario.simulation(sched, Some(seed))?;
    sim.set_ramp(elevator_core::Nanos::from_secs(RAMP_S));
    let report = sim.run(scenario.limit);
    let secs = (report.end.as_ns() as f64 / 1e9 - RAMP_S as f64).max(1e-9);
    let job = |name: &str| {
        report
            .job(name)
            .with_context(|| format!("job {name} missing from the report"))
    };
    let i = job("interactive")?;
    let b = job("bulk")?;
    let lat = i.metrics.read.latency.histogram();
    Ok(Protection {
        p99_ms: lat.value_at_quantile(0.99) as f64 / 1e6,
        p90_ms: lat.value_at_quantile(0.90) as f64 / 1e6,
        mean_ms: lat.mean() / 1e6,
        interactive_mb_s: i.metrics.read.bytes as f64 / 1e6 / secs,
        bulk_mb_s: b.metrics.write.bytes as f64 / 1e6 / secs,
    })
}

/// The share scenario on `drive`: Goyal's 16 sequential readers in /a against `n` in /b,
/// with io.cost's weights and lines if `cost` (a proposal: the one swept over `sched`), as
/// scenario-file text.
pub fn share_text(drive: &str, sched: &str, cost: CostSet, n: u32) -> anyhow::Result<String> {
    let lines = cost_lines(drive, sched, cost)?;
    let mut text = super::io_controller::scenario_text(n).replace(
        "drive = \"ibm18es\"",
        &format!("drive = \"{drive}\"\nduration_s = {RUNTIME_S}\n{lines}"),
    );
    if let Some((wa, wb, _)) = cost {
        text = text
            .replace(
                "path = \"/a\"\n",
                &format!("path = \"/a\"\nio_weight = {wa}\n"),
            )
            .replace(
                "path = \"/b\"\n",
                &format!("path = \"/b\"\nio_weight = {wb}\n"),
            );
    }
    Ok(text.replace(
        &format!("runtime_ms = {}", super::io_controller::RUNTIME_S * 1000),
        &format!("runtime_ms = {}", RUNTIME_S * 1000),
    ))
}

/// The share runs' figures at each of `seeds`, in their order, after the [`RAMP_S`] ramp
/// (both groups busy throughout): B's share and the total, MB/s; with `cost`, io.cost with
/// those `io.weight`s on /a and /b and those lines. The scenario's text is built once. A
/// scenario whose jobs draw nothing from the seed (Goyal's sequential readers:
/// [`elevator_sim::Simulation::draws_from_seed`]) runs the same at every seed, so it runs
/// once, at the first, and its figures stand for each.
pub fn share_seeds(
    drive: &str,
    sched: &str,
    cost: CostSet,
    n: u32,
    seeds: &[u64],
) -> anyhow::Result<Vec<(f64, f64)>> {
    let text = share_text(drive, sched, cost, n)?;
    let Some((&first, rest)) = seeds.split_first() else {
        return Ok(Vec::new());
    };
    let (figures, draws) = b_share_and_total_of(&text, "share", sched, first)?;
    if !draws {
        return Ok(vec![figures; seeds.len()]);
    }
    let rest: Vec<(f64, f64)> = rest
        .par_iter()
        .map(|&seed| b_share_and_total(&text, "share", sched, seed))
        .collect::<anyhow::Result<_>>()?;
    Ok(std::iter::once(figures).chain(rest).collect())
}

/// Run the two-group scenario `text` (/a and /b reading) under `sched` and give, after the
/// [`RAMP_S`] ramp, B's share of the bytes read and the total, MB/s.
fn b_share_and_total(text: &str, name: &str, sched: &str, seed: u64) -> anyhow::Result<(f64, f64)> {
    Ok(b_share_and_total_of(text, name, sched, seed)?.0)
}

/// [`b_share_and_total`], and whether the run depended on its seed
/// ([`elevator_sim::Simulation::draws_from_seed`]).
fn b_share_and_total_of(
    text: &str,
    name: &str,
    sched: &str,
    seed: u64,
) -> anyhow::Result<((f64, f64), bool)> {
    let scenario = Scenario::parse(text, &format!("builtin:io-control-{name}"), None)
        .with_context(|| format!("the io-control {name} scenario"))?;
    let s = scenario.scheduler(sched, &Settings::new())?;
    let mut sim = scenario.simulation(s, Some(seed))?;
    sim.set_ramp(elevator_core::Nanos::from_secs(RAMP_S));
    let draws = sim.draws_from_seed();
    let report = sim.run(scenario.limit);
    let bytes = |g: &str| -> u64 {
        report
            .jobs
            .iter()
            .filter(|j| j.group_path == g)
            .map(|j| j.metrics.read.bytes)
            .sum()
    };
    let (a, b) = (bytes("/a") as f64, bytes("/b") as f64);
    let secs = (report.end.as_ns() as f64 / 1e9 - RAMP_S as f64).max(1e-9);
    Ok(((b / (a + b).max(1.0), (a + b) / 1e6 / secs), draws))
}

/// The saturation experiment's workload on `drive`: (random 4 KiB readers per group, each
/// one's iodepth). On the 980 PRO model 4 x 32 per group (256 in flight, near the drive's
/// random-read peak: each group alone saturates it); on the 2009 disk, which serves one
/// request at a time, 4 x 4 per group (32 waiting: the disk is never idle).
pub fn saturation_workload(drive: &str) -> (u32, u32) {
    if drive == "ibm18es" {
        (4, 4)
    } else {
        (4, 32)
    }
}

/// Which `io.cost.qos` a saturation setup runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosSet {
    /// The kernel's built-in model and QoS for the device class (`autop[]`): no io.cost
    /// lines at all.
    Builtin,
    /// The calibrated model ([`drive_model`]) and the kernel's QoS defaults for the device
    /// class (`autop[]`: no latency target, vrate 1%..10000%).
    Defaults,
    /// The `io.cost.model` and `io.cost.qos` resctl-demo applies ([`resctl_lines`]) instead
    /// of the calibrated model.
    Resctl,
    /// resctl-demo's lines with the QoS's `max` raised to this percentage: on the 980 PRO
    /// model its `max=100` holds io.cost at the model's `rbps` of 4 KiB reads, below the
    /// drive's random-read rate (docs/iocost.md, "The pair of targets"); [`LIFTED_MAX`].
    ResctlMax(u32),
    /// The calibrated model and the `io.cost.qos` `calibrate --iocost` proposes for the
    /// drive under the setup's scheduler (`--sched`: [`proposal_lines`]).
    Proposed,
    /// The proposal's lines with the QoS's `min` lowered to this percentage: its held
    /// vrate opened downward ([`OPENED_MIN`]).
    ProposedMin(u32),
}

/// The `min` of the share table's "proposal with min=105" rows, percent. The proposal over
/// mq-deadline on the disk holds vrate at 125% (`min` = `max`), which `ioc_adjust_base_vrate` reaches from
/// its start at 100% in 4% steps within 4 s, while a group's lone reader streams at
/// sequential prices from the start; with `min` at 100..105 vrate waits there, the
/// streaming group's budget binds, the stream breaks, and vrate climbs to 125% with every
/// read priced random (docs/io-control.md, "The share table on the disk"). No recipe
/// derives it: at 110 streams come back over 80 s and more.
pub const OPENED_MIN: u32 = 105;

/// The `max` of the "max raised" rows, percent: on the 980 PRO model the budgets at vrate
/// `max` (`max` x `rbps` of 4 KiB reads) must stay below what the drive serves the
/// saturation workload, or the weights stop acting, and above 90% of it; 115..127% does both
/// (docs/iocost.md). Neither recipe derives it: the kernel documentation's example and
/// resctl-demo's script before May 2021 say 150, past the band.
pub const LIFTED_MAX: u32 = 120;

/// io.cost's `io.weight`s of /a and /b in a saturation setup, and its QoS; none: no controller.
pub type CostSet = Option<(u32, u32, QosSet)>;

/// One row of the share or the saturation table: (label, scheduler, io.cost's weights and
/// QoS, or none).
pub type CostRow = (String, &'static str, CostSet);

/// Scheduler `sched`'s row without a controller, labelled `label`.
fn alone(label: &str, sched: &'static str) -> CostRow {
    (label.to_string(), sched, None)
}

/// io.cost's rows under `sched` for each of `recipes` (a label suffix and a QoS): `/a` at
/// weight 100 and `/b` at 100, 200 and 300, labelled `PREFIXSUFFIX`, `PREFIXSUFFIX, b 2:1`
/// and `PREFIXSUFFIX, b 3:1`.
fn cost_rows(prefix: &str, sched: &'static str, recipes: &[(&str, QosSet)]) -> Vec<CostRow> {
    let mut rows = Vec::new();
    for &(suffix, qos) in recipes {
        for b in 1..=3u32 {
            let label = match b {
                1 => format!("{prefix}{suffix}"),
                _ => format!("{prefix}{suffix}, b {b}:1"),
            };
            rows.push((label, sched, Some((100, 100 * b, qos))));
        }
    }
    rows
}

/// The saturation setups: (label, scheduler, weights and QoS). The QoS defaults with the
/// calibrated model, resctl-demo's QoS with its own model (over none also with its `max`
/// raised to [`LIFTED_MAX`]), and `calibrate --iocost`'s proposal; each at equal weights and
/// at 2:1 and 3:1 ([`cost_rows`]). The rows over `none` come first; each scheduler's row
/// without a controller is its "alone" in the table.
pub static SATURATION: LazyLock<Vec<CostRow>> = LazyLock::new(|| {
    let lifted = format!(", resctl-demo recipe, max={LIFTED_MAX}");
    let mut rows = vec![alone("none", "none")];
    rows.extend(cost_rows(
        "io.cost",
        "none",
        &[
            (", QoS defaults", QosSet::Defaults),
            (", resctl-demo recipe", QosSet::Resctl),
            (&lifted, QosSet::ResctlMax(LIFTED_MAX)),
            (", calibrate --iocost's proposal", QosSet::Proposed),
        ],
    ));
    rows.push(alone("mq-deadline", "mq-deadline"));
    rows.extend(cost_rows(
        "io.cost / mq-deadline",
        "mq-deadline",
        &[
            (", QoS defaults", QosSet::Defaults),
            (", resctl-demo recipe", QosSet::Resctl),
            (", calibrate --iocost's proposal", QosSet::Proposed),
        ],
    ));
    rows
});

/// The `io.cost.model` and `io.cost.qos` lines (without the device number) resctl-demo
/// applies on `drive` (a built-in name): [`calibrate::resctl::derive`], computed once a drive
/// per process.
pub fn resctl_lines(drive: &str) -> anyhow::Result<(String, String)> {
    static CACHE: std::sync::Mutex<Vec<(String, (String, String))>> =
        std::sync::Mutex::new(Vec::new());
    cached(&CACHE, drive, |drive| {
        Ok(calibrate::resctl::derive(drive)?.lines())
    })
}

/// The top-level scenario lines that give io.cost the model and QoS of `cost` on `drive`
/// under `sched` (a proposal: the one swept over `sched`); empty without a controller or
/// with the built-in set.
fn cost_lines(drive: &str, sched: &str, cost: CostSet) -> anyhow::Result<String> {
    let lines = match cost {
        None | Some((_, _, QosSet::Builtin)) => return Ok(String::new()),
        Some((_, _, QosSet::Defaults)) => return model_line(drive, CostModel::Calibrated),
        Some((_, _, set @ (QosSet::Resctl | QosSet::ResctlMax(_)))) => {
            let (model, mut qos) = resctl_lines(drive)?;
            if let QosSet::ResctlMax(max) = set {
                let was = format!("max={}.00", calibrate::resctl::VRATE.1);
                anyhow::ensure!(qos.contains(&was), "{drive}: no {was} in {qos}");
                qos = qos.replace(&was, &format!("max={max}.00"));
            }
            (model, qos)
        }
        Some((_, _, QosSet::Proposed)) => proposal_lines(drive, sched)?,
        Some((_, _, QosSet::ProposedMin(min))) => {
            let (model, qos) = proposal_lines(drive, sched)?;
            let was = qos
                .split(' ')
                .find(|w| w.starts_with("min="))
                .with_context(|| format!("{drive}: no min= in {qos}"))?
                .to_string();
            let qos = qos.replace(&was, &format!("min={min}.00"));
            (model, qos)
        }
    };
    Ok(format!(
        "io_cost_model = \"{}\"\nio_cost_qos = \"{}\"\n",
        lines.0, lines.1
    ))
}

/// The saturation scenario on `drive` (see [`saturation_workload`]), with io.cost's weights
/// and QoS if `cost` (a proposal: the one for `sched`), as scenario-file text.
pub fn saturation_text(drive: &str, sched: &str, cost: CostSet) -> anyhow::Result<String> {
    let (jobs, depth) = saturation_workload(drive);
    let mut s = format!(
        "name = \"io-control-saturation\"\ndrive = \"{drive}\"\nseed = 1\n\
         duration_s = {RUNTIME_S}\n"
    );
    s.push_str(&cost_lines(drive, sched, cost)?);
    for (g, w) in [("a", cost.map(|c| c.0)), ("b", cost.map(|c| c.1))] {
        s.push_str(&format!("\n[[group]]\npath = \"/{g}\"\n"));
        if let Some(w) = w {
            s.push_str(&format!("io_weight = {w}\n"));
        }
    }
    let n = 2 * jobs;
    for (k, (g, i)) in ["a", "b"]
        .into_iter()
        .flat_map(|g| (0..jobs).map(move |i| (g, i)))
        .enumerate()
    {
        s.push_str(&format!(
            "\n[[job]]\nname = \"{g}{i}\"\ngroup = \"/{g}\"\nkind = \"fio\"\nrw = \"randread\"\n\
             bs = 4096\niodepth = {depth}\ndirect = true\noffset_frac = {:.6}\nsize_frac = {:.6}\n\
             time_based = true\nruntime_ms = {}\n",
            k as f64 / f64::from(n),
            1.0 / f64::from(n),
            RUNTIME_S * 1000
        ));
    }
    Ok(s)
}

/// One saturation run's figures under `sched` after the [`RAMP_S`] ramp: B's share and the
/// total, MB/s.
pub fn saturation_one(
    drive: &str,
    sched: &str,
    cost: CostSet,
    seed: u64,
) -> anyhow::Result<(f64, f64)> {
    let text = saturation_text(drive, sched, cost)?;
    b_share_and_total(&text, "saturation", sched, seed)
}

/// The figures of a row of the share or the saturation table (a [`CostRow`] run at every
/// seed), against none's and its scheduler's "alone" on the same drive (and, in the share
/// table, the same n) and seed.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct CostFigures {
    /// B's io.weight over both groups', % (io.cost rows).
    pub weight_pct: Option<f64>,
    /// B's share of the bandwidth, %.
    pub b_share_pct: Estimate,
    /// Total MB/s.
    pub total_mb_s: Estimate,
    /// The total over none's.
    pub total_over_none: Estimate,
    /// The total over that of the same scheduler without a controller.
    pub total_over_alone: Estimate,
}

impl CostFigures {
    /// Row `s` of `table` (whose first row is none), its runs at each seed (B's share and
    /// the total, MB/s) given by `runs_of` for any row of `table` on the same drive (and n).
    fn of<'a>(
        table: &[CostRow],
        s: usize,
        runs_of: impl Fn(usize) -> &'a [(f64, f64)],
    ) -> CostFigures {
        let runs = runs_of(s);
        let none = runs_of(0);
        let alone = table
            .iter()
            .position(|x| x.1 == table[s].1 && x.2.is_none())
            .map_or(none, &runs_of);
        let over = |base: &[(f64, f64)]| {
            Estimate::of(runs.iter().zip(base).map(|(x, b)| x.1 / b.1).collect())
        };
        CostFigures {
            weight_pct: table[s]
                .2
                .map(|(a, b, _)| 100.0 * f64::from(b) / f64::from(a + b)),
            b_share_pct: Estimate::of(runs.iter().map(|x| 100.0 * x.0).collect()),
            total_mb_s: Estimate::of(runs.iter().map(|x| x.1).collect()),
            total_over_none: over(none),
            total_over_alone: over(alone),
        }
    }

    /// The table columns ([`CostFigures::HEADERS`]).
    fn columns(&self) -> [String; 5] {
        [
            self.weight_pct.map_or("-".into(), |w| format!("{w:.1}")),
            self.b_share_pct.show(1),
            self.total_mb_s.show(2),
            self.total_over_none.show(3),
            self.total_over_alone.show(3),
        ]
    }

    /// The columns' headers.
    const HEADERS: [&'static str; 5] = [
        "weight %",
        "B share %",
        "total MB/s",
        "total / none",
        "total / alone",
    ];
}

/// One row of the saturation table.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SaturationRow {
    /// The drive.
    pub drive: String,
    /// The setup.
    pub setup: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: CostFigures,
}

/// One row of the protection table.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ProtectionRow {
    /// The drive.
    pub drive: String,
    /// The setup.
    pub setup: String,
    /// io.latency's target, ms (io.latency rows).
    pub target_ms: Option<f64>,
    /// io.max's write cap, MB/s (io.max rows).
    pub cap_mb_s: Option<f64>,
    /// The interactive reader's p99, ms.
    pub p99_ms: Estimate,
    /// Its p90, ms.
    pub p90_ms: Estimate,
    /// Its mean, ms.
    pub mean_ms: Estimate,
    /// The bulk writer's MB/s over io.max's cap (io.max rows).
    pub bulk_over_cap: Option<Estimate>,
    /// The bulk writer's MB/s.
    pub bulk_mb_s: Estimate,
    /// Both groups' MB/s.
    pub total_mb_s: Estimate,
}

/// One row of the share table.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ShareRow {
    /// The drive.
    pub drive: String,
    /// The setup.
    pub setup: String,
    /// Readers in /b.
    pub n: u32,
    /// Its figures (against none's and its alone's with the same n).
    #[serde(flatten)]
    pub figures: CostFigures,
}

/// Both tables, for the JSON.
#[derive(Serialize, Clone, Debug)]
pub struct Today {
    /// Simulated seconds per run.
    pub runtime_s: u64,
    /// The protection rows.
    pub protection: Vec<ProtectionRow>,
    /// The share rows.
    pub share: Vec<ShareRow>,
    /// The saturation rows.
    pub saturation: Vec<SaturationRow>,
    /// The io.cost.model lines the io.cost rows ran with, by drive (the built-in drive's
    /// name), as `calibrate --iocost` measured them on the simulated drive.
    pub io_cost_models: Vec<(String, String)>,
    /// The io.cost.model and io.cost.qos lines of the "resctl-demo recipe" rows, by drive
    /// ([`resctl_lines`]).
    pub resctl: Vec<(String, (String, String))>,
    /// The io.cost.model and io.cost.qos lines of the "calibrate --iocost's proposal" rows,
    /// by drive and scheduler ("DRIVE / SCHED": [`proposal_lines`]).
    pub proposals: Vec<(String, (String, String))>,
}

/// Measure the tables over `seeds` on `drives` (in parallel).
pub fn measure(seeds: &[u64], drives: &[(&str, &str)]) -> anyhow::Result<Today> {
    let io_cost_models = drives
        .par_iter()
        .map(|(_, d)| Ok((d.to_string(), drive_model(d)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // The lines first, each computed once: the share and saturation runs then find them in
    // the caches (the two tables' recipe and proposal rows run over the same schedulers).
    // The protection runs need none of them and go beside them: a proposal is a chain of
    // runs, each waiting for the one before ([`calibrate::iocost_qos::propose`]), and four
    // chains left a core idle at their ends. The share and saturation runs go side by side
    // too. Every run is independent of the others and results keep their order, so the
    // figures are the same as one after the other.
    let (protection, lines) = rayon::join(
        || protection_rows(seeds, drives),
        || lines_by_drive(drives, &SATURATION),
    );
    let (protection, (resctl, proposals)) = (protection?, lines?);
    let (share, saturation) = rayon::join(
        || share_rows(seeds, drives),
        || saturation_rows(seeds, drives),
    );
    let (share, saturation) = (share?, saturation?);
    Ok(Today {
        runtime_s: RUNTIME_S,
        protection,
        share,
        saturation,
        io_cost_models,
        resctl,
        proposals,
    })
}

/// The protection table over `seeds` on `drives` (in parallel).
pub fn protection_rows(
    seeds: &[u64],
    drives: &[(&str, &str)],
) -> anyhow::Result<Vec<ProtectionRow>> {
    let cases: Vec<(usize, usize, u64)> = (0..drives.len())
        .flat_map(|d| (0..SETUPS.len()).flat_map(move |s| seeds.iter().map(move |&x| (d, s, x))))
        .collect();
    let prot: Vec<Protection> = cases
        .par_iter()
        .map(|&(d, s, seed)| protection_one(drives[d].1, &SETUPS[s], seed))
        .collect::<anyhow::Result<_>>()?;
    let mut protection = Vec::new();
    for (k, chunk) in prot.chunks(seeds.len()).enumerate() {
        let (d, s, _) = cases[k * seeds.len()];
        let drive = drives[d].1;
        let setup = &SETUPS[s];
        let e = |f: fn(&Protection) -> f64| Estimate::of(chunk.iter().map(f).collect());
        protection.push(ProtectionRow {
            drive: drives[d].0.to_string(),
            setup: setup.label.to_string(),
            target_ms: target_us(drive, setup.control)?.map(|us| us as f64 / 1000.0),
            cap_mb_s: (setup.control == Control::Max).then(|| write_cap(drive) as f64 / 1e6),
            p99_ms: e(|p| p.p99_ms),
            p90_ms: e(|p| p.p90_ms),
            mean_ms: e(|p| p.mean_ms),
            bulk_over_cap: (setup.control == Control::Max).then(|| {
                let cap = write_cap(drive) as f64 / 1e6;
                Estimate::of(chunk.iter().map(|p| p.bulk_mb_s / cap).collect())
            }),
            bulk_mb_s: e(|p| p.bulk_mb_s),
            total_mb_s: e(|p| p.bulk_mb_s + p.interactive_mb_s),
        });
    }
    Ok(protection)
}

/// The share table over `seeds` on `drives` (in parallel).
pub fn share_rows(seeds: &[u64], drives: &[(&str, &str)]) -> anyhow::Result<Vec<ShareRow>> {
    const NS: [u32; 2] = [1, 16];
    let scases: Vec<(usize, usize, usize, u64)> = (0..drives.len())
        .flat_map(|d| {
            (0..SHARE.len()).flat_map(move |s| {
                (0..NS.len()).flat_map(move |n| seeds.iter().map(move |&x| (d, s, n, x)))
            })
        })
        .collect();
    // Each case at every seed ([`share_seeds`]: once where the seed changes nothing), the
    // figures in the order of `scases`.
    let per_case: Vec<Vec<(f64, f64)>> = scases
        .par_chunks(seeds.len())
        .map(|c| {
            let (d, s, n, _) = c[0];
            share_seeds(drives[d].1, SHARE[s].1, SHARE[s].2, NS[n], seeds)
        })
        .collect::<anyhow::Result<_>>()?;
    let shares: Vec<(f64, f64)> = per_case.into_iter().flatten().collect();
    let mut share = Vec::new();
    for k in 0..shares.len() / seeds.len() {
        let (d, s, n, _) = scases[k * seeds.len()];
        let runs_of = |setup: usize| {
            &shares[((d * SHARE.len() + setup) * NS.len() + n) * seeds.len()..][..seeds.len()]
        };
        share.push(ShareRow {
            drive: drives[d].0.to_string(),
            setup: SHARE[s].0.clone(),
            n: NS[n],
            figures: CostFigures::of(&SHARE, s, runs_of),
        });
    }
    Ok(share)
}

/// Two lines (`io.cost.model`, `io.cost.qos`) by drive.
type LinesByDrive = Vec<(String, (String, String))>;

/// The schedulers the proposal rows of `setups` (the saturation or the share table) run
/// over (each with the proposal of a sweep over it).
fn proposal_scheds(setups: &[CostRow]) -> Vec<&'static str> {
    let mut scheds: Vec<&str> = setups
        .iter()
        .filter(|s| matches!(s.2, Some((_, _, QosSet::Proposed | QosSet::ProposedMin(_)))))
        .map(|s| s.1)
        .collect();
    scheds.dedup();
    scheds
}

/// The lines of the resctl-demo rows of `setups` (the saturation or the share table) by
/// drive, and of its proposal rows by drive and scheduler ("DRIVE / SCHED"), on `drives`, in
/// parallel.
fn lines_by_drive(
    drives: &[(&str, &str)],
    setups: &[CostRow],
) -> anyhow::Result<(LinesByDrive, LinesByDrive)> {
    let resctl = drives
        .par_iter()
        .map(|(_, d)| Ok((d.to_string(), resctl_lines(d)?)))
        .collect::<anyhow::Result<LinesByDrive>>()?;
    let pairs: Vec<(&str, &str)> = drives
        .iter()
        .flat_map(|(_, d)| proposal_scheds(setups).into_iter().map(move |s| (*d, s)))
        .collect();
    let proposals = pairs
        .par_iter()
        .map(|&(d, s)| Ok((format!("{d} / {s}"), proposal_lines(d, s)?)))
        .collect::<anyhow::Result<LinesByDrive>>()?;
    Ok((resctl, proposals))
}

/// The saturation table over `seeds` on `drives` (in parallel).
pub fn saturation_rows(
    seeds: &[u64],
    drives: &[(&str, &str)],
) -> anyhow::Result<Vec<SaturationRow>> {
    let cases: Vec<(usize, usize, u64)> = (0..drives.len())
        .flat_map(|d| {
            (0..SATURATION.len()).flat_map(move |s| seeds.iter().map(move |&x| (d, s, x)))
        })
        .collect();
    let runs: Vec<(f64, f64)> = cases
        .par_iter()
        .map(|&(d, s, seed)| saturation_one(drives[d].1, SATURATION[s].1, SATURATION[s].2, seed))
        .collect::<anyhow::Result<_>>()?;
    let mut rows = Vec::new();
    for k in 0..runs.len() / seeds.len() {
        let (d, s, _) = cases[k * seeds.len()];
        let runs_of =
            |setup: usize| &runs[(d * SATURATION.len() + setup) * seeds.len()..][..seeds.len()];
        rows.push(SaturationRow {
            drive: drives[d].0.to_string(),
            setup: SATURATION[s].0.clone(),
            figures: CostFigures::of(&SATURATION, s, runs_of),
        });
    }
    Ok(rows)
}

/// Print the tables on `drives` (`--drive`: one of [`DRIVES`]); return them.
pub fn run(seeds: &[u64], drives: &[(&str, &str)]) -> anyhow::Result<Today> {
    say!("Today's io controllers (issue 29): the 2009 question on the 2009 disk and on a");
    say!(
        "Samsung 980 PRO model, {RUNTIME_S} simulated s a run. {}",
        super::seeds_note(seeds)
    );
    say!();
    say!("io.cost's model on each drive (`calibrate --iocost`'s six points, simulated):");
    for (_, d) in drives {
        say!("  {d}: {}", drive_model(d)?);
    }
    say!();
    let t = measure(seeds, drives)?;
    print_protection(&t.protection);
    print_share(&t.share, &t.resctl, &t.proposals);
    print_saturation(&t.saturation, &t.resctl, &t.proposals);
    Ok(t)
}

/// Print `resctl`'s and `proposals`' lines (the recipe and proposal rows').
fn print_lines(resctl: &[(String, (String, String))], proposals: &[(String, (String, String))]) {
    for (what, lines) in [
        ("resctl-demo's", resctl),
        ("calibrate --iocost's", proposals),
    ] {
        say!("{what} lines:");
        for (d, (m, q)) in lines {
            say!("  {d}: io.cost.model {m}");
            say!("  {d}: io.cost.qos   {q}");
        }
    }
}

/// Print the share table and the lines of its recipe and proposal rows.
fn print_share(
    rows: &[ShareRow],
    resctl: &[(String, (String, String))],
    proposals: &[(String, (String, String))],
) {
    say!(
        "Share: 16 sequential readers in /a, n in /b, equal weights unless io.cost's B 2:1 or 3:1;"
    );
    say!("io.cost with the calibrated model and the QoS defaults unless a recipe is named;");
    say!("figures after a {RAMP_S} s ramp.");
    print_lines(resctl, proposals);
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let row = [r.drive.clone(), r.setup.clone(), r.n.to_string()];
            row.into_iter().chain(r.figures.columns()).collect()
        })
        .collect();
    let headers: Vec<&str> = ["drive", "setup", "n"]
        .into_iter()
        .chain(CostFigures::HEADERS)
        .collect();
    output::say_str(&output::figures_table(&headers, &rows));
    say!();
}

/// The io.cost lines a share or saturation table ran with.
#[derive(Serialize, Clone, Debug)]
pub struct CostLines {
    /// The io.cost.model lines of the rows with the calibrated model, by drive.
    pub io_cost_models: Vec<(String, String)>,
    /// The io.cost.model and io.cost.qos lines of the "resctl-demo recipe" rows, by drive.
    pub resctl: LinesByDrive,
    /// The io.cost.model and io.cost.qos lines of the "calibrate --iocost's proposal" rows,
    /// by drive and scheduler ("DRIVE / SCHED").
    pub proposals: LinesByDrive,
}

impl CostLines {
    /// The lines of `table`'s rows on `drives`: each drive's calibrated model (printed as it
    /// comes), and the recipe and proposal lines ([`lines_by_drive`]).
    fn measure(drives: &[(&str, &str)], table: &[CostRow]) -> anyhow::Result<CostLines> {
        let mut io_cost_models = Vec::new();
        for (_, d) in drives {
            io_cost_models.push((d.to_string(), drive_model(d)?));
            say!("  {d}: {}", io_cost_models.last().expect("pushed").1);
        }
        let (resctl, proposals) = lines_by_drive(drives, table)?;
        Ok(CostLines {
            io_cost_models,
            resctl,
            proposals,
        })
    }
}

/// The share table and the lines it ran with.
#[derive(Serialize, Clone, Debug)]
pub struct Share {
    /// Simulated seconds per run.
    pub runtime_s: u64,
    /// The rows.
    pub share: Vec<ShareRow>,
    /// The lines.
    #[serde(flatten)]
    pub lines: CostLines,
}

/// The share table alone (`reproduce io-control-today --part share`): print it and return it.
pub fn run_share(seeds: &[u64], drives: &[(&str, &str)]) -> anyhow::Result<Share> {
    say!("Two groups sharing a drive under today's io.cost (issue 29), {RUNTIME_S} simulated s a run.");
    say!("{}", super::seeds_note(seeds));
    say!();
    let lines = CostLines::measure(drives, &SHARE)?;
    let share = share_rows(seeds, drives)?;
    print_share(&share, &lines.resctl, &lines.proposals);
    Ok(Share {
        runtime_s: RUNTIME_S,
        share,
        lines,
    })
}

/// io.max's write cap as the protection table shows it: in MB/s (10^6 bytes a second), the
/// unit of the table's other rates, then in MiB/s, the unit the cap is set in (2 MiB/s read
/// "2.1 MB/s" beside README's "2 MiB/s"); both, as fio's "BW=2048KiB/s (2097kB/s)".
fn cap_cell(mb_s: f64) -> String {
    let mib_s = mb_s * 1e6 / f64::from(1u32 << 20);
    let mib = if (mib_s - mib_s.round()).abs() < 0.005 {
        format!("{mib_s:.0}")
    } else {
        format!("{mib_s:.2}")
    };
    format!("wbps {mb_s:.2} MB/s ({mib} MiB/s)")
}

/// Print the protection table.
fn print_protection(rows: &[ProtectionRow]) {
    say!("Protection: random 4 KiB reader (1 at a time) in /interactive beside a sequential");
    say!("128 KiB O_DIRECT writer (16 at a time) in /bulk; figures after a {RAMP_S} s ramp.");
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let control = match (r.target_ms, r.cap_mb_s) {
                (Some(ms), _) => format!("target {ms} ms"),
                (_, Some(c)) => cap_cell(c),
                _ if r.setup == "none, /bulk at depth 1" => "bulk qd 1".to_string(),
                _ => "-".to_string(),
            };
            vec![
                r.drive.clone(),
                r.setup.clone(),
                control,
                r.mean_ms.show(2),
                r.p90_ms.show(2),
                r.p99_ms.show(2),
                r.bulk_mb_s.show(2),
                r.bulk_over_cap.as_ref().map_or("-".into(), |e| e.show(3)),
                r.total_mb_s.show(2),
            ]
        })
        .collect();
    output::say_str(&output::figures_table(
        &[
            "drive",
            "setup",
            "control",
            "interactive mean ms",
            "p90 ms",
            "p99 ms",
            "bulk MB/s",
            "bulk / cap",
            "total MB/s",
        ],
        &rows,
    ));
    say!();
}

/// The protection table alone (`reproduce io-control-today --part protection`): print it and
/// return it.
pub fn run_protection(
    seeds: &[u64],
    drives: &[(&str, &str)],
) -> anyhow::Result<Vec<ProtectionRow>> {
    say!("Today's io controllers protecting a reader (issue 29), {RUNTIME_S} simulated s a run.");
    say!("{}", super::seeds_note(seeds));
    say!();
    let rows = protection_rows(seeds, drives)?;
    print_protection(&rows);
    Ok(rows)
}

/// The saturation table and the QoS lines it ran with.
#[derive(Serialize, Clone, Debug)]
pub struct Saturation {
    /// Simulated seconds per run.
    pub runtime_s: u64,
    /// The rows.
    pub saturation: Vec<SaturationRow>,
    /// The lines.
    #[serde(flatten)]
    pub lines: CostLines,
}

/// The saturation table alone (`reproduce io-control-today --part saturation`): print it and
/// return it.
pub fn run_saturation(seeds: &[u64], drives: &[(&str, &str)]) -> anyhow::Result<Saturation> {
    say!(
        "io.cost with both groups saturating the drive (issue 29), {RUNTIME_S} simulated s a run."
    );
    say!("{}", super::seeds_note(seeds));
    say!();
    let lines = CostLines::measure(drives, &SATURATION)?;
    let saturation = saturation_rows(seeds, drives)?;
    print_saturation(&saturation, &lines.resctl, &lines.proposals);
    Ok(Saturation {
        runtime_s: RUNTIME_S,
        saturation,
        lines,
    })
}

/// Print the saturation table.
fn print_saturation(
    rows: &[SaturationRow],
    resctl: &[(String, (String, String))],
    proposals: &[(String, (String, String))],
) {
    say!("Saturation: in each group random 4 KiB readers that alone saturate the drive (980 PRO");
    say!("model: 4 a group at iodepth 32; 2009 disk: 4 a group at iodepth 4), under none or");
    say!("mq-deadline (\"alone\": the same scheduler without a controller); io.cost");
    say!("with the calibrated model and the QoS defaults, or with resctl-demo's model and QoS");
    say!("(resctl-bench iocost-params), as it writes them and with max={LIFTED_MAX},");
    say!("and with the calibrated model and calibrate --iocost's proposed QoS; figures after a");
    say!("{RAMP_S} s ramp.");
    print_lines(resctl, proposals);
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let row = [r.drive.clone(), r.setup.clone()];
            row.into_iter().chain(r.figures.columns()).collect()
        })
        .collect();
    let headers: Vec<&str> = ["drive", "setup"]
        .into_iter()
        .chain(CostFigures::HEADERS)
        .collect();
    output::say_str(&output::figures_table(&headers, &rows));
    say!();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One share run's figures (B's share and the total, MB/s) at `seed`.
    fn share_one(
        drive: &str,
        sched: &str,
        cost: CostSet,
        n: u32,
        seed: u64,
    ) -> anyhow::Result<(f64, f64)> {
        b_share_and_total(&share_text(drive, sched, cost, n)?, "share", sched, seed)
    }

    /// What /bulk's depth does to the reader on the 980 PRO model: nothing. The reader and the
    /// writer are different processes, so different NVMe submission queues (Linux's
    /// `nvme_pci_map_queues`: a queue pair per CPU), and the model's front end orders commands
    /// per queue (`front_end_scope = "queue"`): 16 writes of 128 KiB hold 16 of its 128 slots,
    /// and a read waits for none of them, only for the program under way on its plane
    /// (tPROG 600 us, not suspended: `flash.suspend` is `erase`). So with /bulk at depth 1 or
    /// at 16 the writer writes at the same rate and the reader's p99 is the same, within the
    /// 2 ms target and above half a program's time (docs/io-control.md). With the drive-wide
    /// order (before 2026-11-30) reads waited behind /bulk's writes and missed 2 ms even at
    /// depth 1 (3.06 ms).
    #[test]
    fn on_the_980pro_model_the_reader_waits_for_its_planes_program_not_for_bulks_depth() {
        let drive = "samsung-980pro-1tb";
        let setup = |c| SETUPS.iter().find(|s| s.control == c).unwrap();
        let none = protection_one(drive, setup(Control::None), 1).unwrap();
        let floor = protection_one(drive, setup(Control::Floor), 1).unwrap();
        assert!(
            (floor.bulk_mb_s / none.bulk_mb_s - 1.0).abs() < 0.05,
            "depth 1 {floor:?} vs 16 {none:?}"
        );
        assert!(
            (floor.p99_ms / none.p99_ms - 1.0).abs() < 0.05,
            "depth 1 {floor:?} vs 16 {none:?}"
        );
        let target_ms = latency_target_us(drive) as f64 / 1000.0;
        for p in [&none, &floor] {
            assert!(p.p99_ms < target_ms, "{p:?}");
            assert!(p.p99_ms > 0.3, "{p:?}");
        }
    }

    /// io.latency on the 2009 disk, with its steps from the queue's `nr_requests` as v6.1
    /// reads it (`scale_cookie_change`, `scale_change`): under none the host's 32 tags, not
    /// the disk's one slot. Missed windows halve the writer from 32 to 1; a good window
    /// (HDD: the window's mean within 50 ms) lifts it by 32/16 = 2, to 3, and the cookie,
    /// more than 32 below the default, comes back one step a window, so the writer is never
    /// unlimited again after the ramp: the reader's p99 is a wait behind at most three
    /// 128 KiB writes, under a quarter of the unprotected one's (with one slot as
    /// `nr_requests` two good windows freed the writer, and the p99 stayed at the
    /// unprotected 438 ms). But not within the target: the mean, which the HDD mode
    /// judges, sits above it (at depth 3 a window misses, at 1 it is good), and the p99 is
    /// twice the depth-1 floor's.
    #[test]
    fn on_the_2009_disk_io_latency_holds_the_writer_at_one_to_three_writes_not_within_50_ms() {
        let drive = "ibm18es";
        let setup = |c| SETUPS.iter().find(|s| s.control == c).unwrap();
        let none = protection_one(drive, setup(Control::None), 1).unwrap();
        let floor = protection_one(drive, setup(Control::Floor), 1).unwrap();
        let lat = Control::Latency(LatencyTarget::Scenario);
        let p = protection_one(drive, setup(lat), 1).unwrap();
        assert!(p.p99_ms < none.p99_ms / 4.0, "{p:?} vs none {none:?}");
        assert!(p.bulk_mb_s < 0.8 * none.bulk_mb_s, "{p:?} vs none {none:?}");
        let target_ms = latency_target_us(drive) as f64 / 1000.0;
        assert!(p.mean_ms > target_ms, "{p:?}");
        assert!(p.p99_ms > 1.5 * floor.p99_ms, "{p:?} vs floor {floor:?}");
    }

    /// With the target the kernel's documentation advises (the reader's mean alone, 9.6 ms,
    /// plus 15%: 11 ms), below the mean the reader gets even with the writer at depth 1
    /// (42.5 ms), every window misses: `scale_change` takes the writer to depth 1 and
    /// `check_scale_change` then only counts `use_delay`s (no delay grows for data bios), so
    /// after the ramp the reader sees the depth-1 floor, the best io.latency can give it on
    /// this disk, and its p99 is four times the target.
    #[test]
    fn on_the_2009_disk_the_documented_target_pins_the_writer_at_depth_one() {
        let drive = "ibm18es";
        let setup = |c| SETUPS.iter().find(|s| s.control == c).unwrap();
        let floor = protection_one(drive, setup(Control::Floor), 1).unwrap();
        let lat = Control::Latency(LatencyTarget::FromAlone);
        let target_ms = alone_target_us(drive).unwrap() as f64 / 1000.0;
        assert!((10.0..13.0).contains(&target_ms), "{target_ms}");
        let p = protection_one(drive, setup(lat), 1).unwrap();
        assert!(
            (p.mean_ms / floor.mean_ms - 1.0).abs() < 0.03,
            "{p:?} vs {floor:?}"
        );
        assert!(
            (p.p99_ms / floor.p99_ms - 1.0).abs() < 0.1,
            "{p:?} vs {floor:?}"
        );
        assert!(
            (p.bulk_mb_s / floor.bulk_mb_s - 1.0).abs() < 0.02,
            "{p:?} vs {floor:?}"
        );
        assert!(p.p99_ms > 4.0 * target_ms, "{p:?}");
    }

    /// Goyal's readers are sequential: the share scenario draws nothing from its seed
    /// (`Simulation::draws_from_seed`), so `share_seeds` runs it once and gives that run's
    /// figures for every seed; they are the figures of a run at each seed. The protection
    /// scenario's random reader does draw from it.
    #[test]
    fn a_share_case_runs_once_for_all_seeds_with_each_seeds_figures() {
        let seeds = [1, 2, 3];
        for (drive, sched, cost) in [
            ("ibm18es", "none", None),
            ("ibm18es", "mq-deadline", Some((100, 200, QosSet::Defaults))),
        ] {
            let got = share_seeds(drive, sched, cost, 1, &seeds).unwrap();
            let text = share_text(drive, sched, cost, 1).unwrap();
            let each: Vec<(f64, f64)> = seeds
                .iter()
                .map(|&seed| b_share_and_total(&text, "share", sched, seed).unwrap())
                .collect();
            assert_eq!(got, each, "{drive} {sched} {cost:?}");
            assert!(!b_share_and_total_of(&text, "share", sched, 1).unwrap().1);
        }
        let text = protection_text("ibm18es", Control::None).unwrap();
        let scenario = Scenario::parse(&text, "protection", None).unwrap();
        let sched = scenario.scheduler("none", &Settings::new()).unwrap();
        assert!(scenario
            .simulation(sched, Some(1))
            .unwrap()
            .draws_from_seed());
    }

    /// `--drive` runs one drive's rows; no `--drive`, both; a name not in the table is an
    /// error naming the two.
    #[test]
    fn drive_selects_one_drives_rows() {
        assert_eq!(drives(None).unwrap(), &DRIVES[..]);
        assert_eq!(
            drives(Some("ibm18es")).unwrap(),
            &[("2009 disk (IBM 18ES)", "ibm18es")]
        );
        let e = drives(Some("atlas10k")).unwrap_err().to_string();
        assert!(e.contains("ibm18es or samsung-980pro-1tb"), "{e}");
    }

    /// The protection scenario on `drive` under io.latency over none with `/interactive`'s
    /// target at `us`, seed 1.
    fn protection_at_target(drive: &str, us: u64) -> Protection {
        let lat = Control::Latency(LatencyTarget::Scenario);
        let text = protection_text(drive, lat).unwrap().replace(
            &format!("io_latency_us = {}\n", latency_target_us(drive)),
            &format!("io_latency_us = {us}\n"),
        );
        assert!(text.contains(&format!("io_latency_us = {us}\n")), "{text}");
        protection_run(&text, "none", 1).unwrap()
    }

    /// Issue 29 asks io.latency to keep the protected group's p99 within its target while
    /// the other group's throughput falls. On the 2009 disk no target does both. v6.1's HDD
    /// mode judges a window by its mean (`latency_sum_ok`: `rqs.mean <= min_lat_nsec`), and a
    /// good window with enough samples steps the offender up (`iolatency_check_latencies` ->
    /// `scale_cookie_change(.., true)`, by `nr_requests / 16` = 2 writes here), so the writer
    /// settles where the reader's *mean* meets the target, and the reads behind the deeper
    /// windows' writes sit above it: from 100 to 400 ms the mean is within the target and the
    /// writer falls by 1-15% (the mode's own promise), the p99 1.1-1.4 times the target (at
    /// 80 ms: mean 87, p99 127 ms). Below the depth-1 floor's mean (42.5 ms) every window
    /// misses and the writer is pinned at depth 1, whose p99 (50 ms) is the floor's; from
    /// 440 ms the writer is free and the p99 (441 ms) is the unprotected one. Fails if a good
    /// window never scales the writer up (checked by hand: at 80 ms the p99 is then 75.6 ms
    /// with /bulk at 3.79 MB/s).
    #[test]
    fn on_the_2009_disk_no_io_latency_target_keeps_the_p99_within_it_while_bulk_falls() {
        let drive = "ibm18es";
        let setup = |c| SETUPS.iter().find(|s| s.control == c).unwrap();
        let none = protection_one(drive, setup(Control::None), 1).unwrap();
        for ms in [
            11, 30, 42, 45, 50, 60, 80, 100, 150, 200, 300, 400, 440, 500,
        ] {
            let p = protection_at_target(drive, ms * 1000);
            let target = ms as f64;
            let falls = p.bulk_mb_s < 0.99 * none.bulk_mb_s;
            assert!(
                !(p.p99_ms <= target && falls),
                "{ms} ms: {p:?} vs none {none:?}"
            );
            if (100..=300).contains(&ms) {
                assert!(p.mean_ms <= target && falls, "{ms} ms: {p:?}");
            }
        }
    }

    /// On the 980 PRO model no io.latency target makes /bulk's throughput fall: the lowest
    /// depth `scale_change` holds a data-only writer to is 1, and the writer writes as fast at
    /// depth 1 as at 16 (the model's write buffer takes each write at once); the reader, on
    /// its own NVMe queue, waits for no write of /bulk's
    /// (`on_the_980pro_model_the_reader_waits_for_its_planes_program_not_for_bulks_depth`),
    /// so its p99 is none's at every target: within the target from 0.7 ms on, above it below.
    #[test]
    fn on_the_980pro_model_no_io_latency_target_makes_bulk_fall() {
        let drive = "samsung-980pro-1tb";
        let setup = |c| SETUPS.iter().find(|s| s.control == c).unwrap();
        let none = protection_one(drive, setup(Control::None), 1).unwrap();
        for us in [100, 300, 500, 700, 1_000, 2_000, 5_000] {
            let p = protection_at_target(drive, us);
            assert!(
                p.bulk_mb_s > 0.99 * none.bulk_mb_s,
                "{us} us: {p:?} vs {none:?}"
            );
            assert!(
                (p.p99_ms / none.p99_ms - 1.0).abs() < 0.02,
                "{us} us: {p:?} vs {none:?}"
            );
        }
    }

    /// The protection scenario on `drive` with no controller and /bulk's writer `qd` at a
    /// time, seed 1.
    fn protection_at_bulk_depth(drive: &str, qd: u32) -> Protection {
        let text = protection_text(drive, Control::None)
            .unwrap()
            .replace("iodepth = 16\n", &format!("iodepth = {qd}\n"));
        assert!(text.contains(&format!("iodepth = {qd}\n")), "{text}");
        protection_run(&text, "none", 1).unwrap()
    }

    /// Why no io.latency target makes /bulk fall on the 980 PRO model: with no controller,
    /// /bulk's writer writes at one rate at every depth from 1 to 256. A write completes once
    /// the drive's DRAM buffer admits it (`write_buffer.acknowledge = "admitted"`, MQSim's
    /// write cache); with the buffer full it is admitted as programs free room, so the
    /// writer's rate is the flash's drain rate whether one write or 256 wait for room.
    /// io.latency's lever on a data-only group is its depth, down to 1 (`scale_change`; past
    /// it `check_scale_change` counts a `use_delay`, whose `delay_nsec` only root-issued bios
    /// raise, `iolatency_record_time` -> `blkcg_add_delay`), so it cannot lower that rate.
    /// The reader, on its own NVMe queue (`front_end_scope = "queue"`), waits for no write of
    /// /bulk's and sees one latency while the writer holds fewer than the front end's 128
    /// slots (`front_end_slots`): the program under way on its plane (tPROG 600 us) and its
    /// own read. With all 128 held, each read first waits for a slot to free: its latency
    /// rises (p99 3 ms at 128) while the writer's rate does not move.
    #[test]
    fn on_the_980pro_model_the_writers_rate_does_not_depend_on_its_depth_nor_the_reader_below_the_slots(
    ) {
        let drive = "samsung-980pro-1tb";
        let at16 = protection_at_bulk_depth(drive, 16);
        let show = |qd: u32, p: &Protection| {
            eprintln!(
                "qd {qd:3}: reader mean {:.3} p90 {:.3} p99 {:.3} ms, bulk {:.2} MB/s",
                p.mean_ms, p.p90_ms, p.p99_ms, p.bulk_mb_s
            )
        };
        show(16, &at16);
        for qd in [1, 2, 4, 8, 32, 64, 127, 128, 256] {
            let p = protection_at_bulk_depth(drive, qd);
            show(qd, &p);
            assert!(
                (p.bulk_mb_s / at16.bulk_mb_s - 1.0).abs() < 0.01,
                "qd {qd}: {p:?} vs 16 {at16:?}"
            );
            if qd < 128 {
                for (a, b) in [
                    (p.p99_ms, at16.p99_ms),
                    (p.p90_ms, at16.p90_ms),
                    (p.mean_ms, at16.mean_ms),
                ] {
                    assert!((a / b - 1.0).abs() < 0.05, "qd {qd}: {p:?} vs 16 {at16:?}");
                }
            } else {
                assert!(
                    p.p99_ms > 3.0 * at16.p99_ms,
                    "qd {qd}: {p:?} vs 16 {at16:?}"
                );
            }
        }
    }

    /// The 980 PRO model with /bulk's writer 256 deep, past the front end's 128 slots, so
    /// that its depth does reach the reader (unprotected p99 3.6 ms): io.latency then
    /// protects the reader, and still no target gives a p99 within it while /bulk falls. At
    /// the target a user derives from the reader alone (its p90 alone plus 15%, 0.1 ms:
    /// `alone_target_us`), and at any target below the reader's p90 beside a shallow writer
    /// (0.62 ms), every window misses, `scale_change` halves the writer from `nr_requests`
    /// (1024 under none) to 1, and the reader gets the depth-1 floor (p99 0.68 ms, a program
    /// under way on its plane), above the target. With a looser target good windows
    /// (`latency_sum_ok`: fewer than a tenth missed, the p90 within) step the writer up by
    /// 1024 / 16 = 64 at a time (`scale_cookie_change`, `scale_change`) back past the slots,
    /// and the p99 (1.9-2.2 ms from 0.7 to 2 ms) stays above the target; from the unprotected
    /// p99 on it is within, as it is with no controller. At every target /bulk writes at the
    /// drain rate, the unprotected one.
    #[test]
    fn on_the_980pro_model_io_latency_keeps_a_deep_writer_below_the_slots_but_bulk_never_falls() {
        let drive = "samsung-980pro-1tb";
        let deep = |us: Option<u64>| {
            let mut text = protection_text(drive, Control::None)
                .unwrap()
                .replace("iodepth = 16\n", "iodepth = 256\n");
            if let Some(us) = us {
                text = text.replace(
                    "path = \"/interactive\"\n",
                    &format!("path = \"/interactive\"\nio_latency_us = {us}\n"),
                );
                assert!(text.contains(&format!("io_latency_us = {us}\n")), "{text}");
            }
            protection_run(&text, "none", 1).unwrap()
        };
        let none = deep(None);
        let floor = protection_at_bulk_depth(drive, 1);
        eprintln!("unprotected: {none:?}\nfloor: {floor:?}");
        let documented = alone_target_us(drive).unwrap();
        assert_eq!(documented, 100);
        for us in [100, 500, 700, 1_000, 2_000, 5_000, 10_000] {
            let p = deep(Some(us));
            eprintln!("{us} us: {p:?}");
            assert!(
                p.bulk_mb_s > 0.99 * none.bulk_mb_s,
                "{us} us: {p:?} vs {none:?}"
            );
            if (us as f64 / 1000.0) < none.p99_ms {
                assert!(p.p99_ms > us as f64 / 1000.0, "{us} us: {p:?}");
            }
            if us == documented {
                assert!(
                    (p.p99_ms / floor.p99_ms - 1.0).abs() < 0.05,
                    "{p:?} vs {floor:?}"
                );
                assert!(p.p99_ms < none.p99_ms / 3.0, "{p:?} vs {none:?}");
            }
        }
    }

    /// The saturation scenario's resctl-demo rows carry both of resctl-demo's lines (its
    /// model replaces the calibrated one) and parse, both groups weighted, four readers each.
    #[test]
    fn the_resctl_rows_run_resctl_demos_model_and_qos() {
        let (model, qos) = resctl_lines("ibm18es").unwrap();
        let text = saturation_text("ibm18es", "none", Some((100, 300, QosSet::Resctl))).unwrap();
        let sc = Scenario::parse(&text, "test", None).unwrap();
        assert_eq!(sc.jobs.len(), 8);
        assert!(
            text.contains(&format!("io_cost_model = \"{model}\"")),
            "{text}"
        );
        assert!(text.contains(&format!("io_cost_qos = \"{qos}\"")), "{text}");
        assert!(!text.contains(&drive_model("ibm18es").unwrap()), "{text}");
        // The "max raised" rows: the same lines but for `max`.
        let set = Some((100, 300, QosSet::ResctlMax(LIFTED_MAX)));
        let lifted = saturation_text("ibm18es", "none", set).unwrap();
        let raised = qos.replace("max=100.00", &format!("max={LIFTED_MAX}.00"));
        assert_ne!(raised, qos);
        assert!(
            lifted.contains(&format!("io_cost_qos = \"{raised}\"")),
            "{lifted}"
        );
        assert!(lifted.contains(&format!("io_cost_model = \"{model}\"")));
        let label = &SATURATION.iter().find(|s| s.2 == set).unwrap().0;
        assert!(label.contains(&format!("max={LIFTED_MAX}")), "{label}");
    }

    /// The proposal rows carry the calibrated model and the QoS `calibrate --iocost`'s sweep
    /// proposes on the same drive (a held vrate there), not resctl-demo's lines.
    #[test]
    fn the_proposal_rows_run_the_calibrated_model_and_calibrates_proposed_qos() {
        let (model, qos) = proposal_lines("ibm18es", "none").unwrap();
        assert_eq!(model, drive_model("ibm18es").unwrap());
        let text = saturation_text("ibm18es", "none", Some((100, 300, QosSet::Proposed))).unwrap();
        assert!(
            text.contains(&format!("io_cost_model = \"{model}\"")),
            "{text}"
        );
        assert!(text.contains(&format!("io_cost_qos = \"{qos}\"")), "{text}");
        assert!(
            !text.contains(&resctl_lines("ibm18es").unwrap().1),
            "{text}"
        );
        assert!(qos.starts_with("enable=1 ctrl=user rpct=95.00"), "{qos}");
    }

    /// The share scenario on the 2009 disk at n = 16, /b weighted `wb` to /a's 100, io.cost
    /// with the calibrated model and the `io.cost.qos` line `qos`, under `sched`, seed 1:
    /// B's share and the total after the ramp.
    fn disk_share_with_qos(sched: &str, wb: u32, qos: &str) -> (f64, f64) {
        let drive = "ibm18es";
        let model = model_line(drive, CostModel::Calibrated).unwrap();
        let text = share_text(drive, sched, Some((100, wb, QosSet::Defaults)), 16)
            .unwrap()
            .replace(&model, &format!("{model}io_cost_qos = \"{qos}\"\n"));
        assert!(text.contains(qos), "{text}");
        b_share_and_total(&text, "share", sched, 1).unwrap()
    }

    /// The disk's share table, 16 sequential readers a group at 3:1, io.cost over
    /// mq-deadline with `calibrate --iocost --sched mq-deadline`'s QoS at held vrates (its own
    /// is 125%). `calc_vtime_cost_builtin` prices a bio sequential when it starts within
    /// 16 MiB of `iocg->cursor`, the end of the group's last bio, which
    /// `ioc_rqos_throttle` sets at submission: while a group's readers wait for budget,
    /// `iocg_kick_waitq` wakes them in order, each read follows a sibling's 230 MB away and
    /// costs the random price (1/79 s at 100%); the budgets then bind, and at 110% /b gets
    /// its 75% but the total is 0.82 of none's. From 115% /b, with 75% of the budget, has
    /// budget to spare: a reader whose read completes submits the next one adjacent to the
    /// group's cursor, priced sequential (1/15.6 of the random price), mq-deadline
    /// dispatches it at once (sector order from the last position), and the reader streams;
    /// the budgets no longer bind and the split is mq-deadline's (/b 50-91%, the total 5-6
    /// times none's). No held vrate gives both at 3:1; at 2:1 the proposal's 125% does
    /// (nobody has budget to spare). Fails with every bio priced random (checked by hand:
    /// /b then keeps 75% at 115-150%).
    #[test]
    fn on_the_2009_disk_no_held_vrate_over_mq_deadline_keeps_3_to_1_and_the_total() {
        let (_, none) = share_one("ibm18es", "none", None, 16, 1).unwrap();
        let (_, qos) = proposal_lines("ibm18es", "mq-deadline").unwrap();
        assert!(qos.ends_with("min=125.00 max=125.00"), "{qos}");
        let held = |v: u32| qos.replace("min=125.00 max=125.00", &format!("min={v}.00 max={v}.00"));
        for v in [100, 110] {
            let (b, t) = disk_share_with_qos("mq-deadline", 300, &held(v));
            assert!((b - 0.75).abs() < 0.05, "{v}%: /b {b:.3}");
            assert!(t < 0.9 * none, "{v}%: {t:.3} vs none's {none:.3}");
        }
        for v in [115, 120, 125, 130, 150] {
            let (b, t) = disk_share_with_qos("mq-deadline", 300, &held(v));
            assert!((b - 0.75).abs() >= 0.05, "{v}%: /b {b:.3}");
            assert!(t > 3.0 * none, "{v}%: {t:.3} vs none's {none:.3}");
        }
        let (b, t) = disk_share_with_qos("mq-deadline", 200, &held(125));
        assert!((b - 2.0 / 3.0).abs() < 0.05, "2:1 at 125%: /b {b:.3}");
        assert!(t > 0.9 * none, "2:1 at 125%: {t:.3} vs none's {none:.3}");
    }

    /// The same with the proposal's `min` lowered to [`OPENED_MIN`] (vrate 105..125%). At
    /// the start every group's readers pass on the half period of budget `iocg_activate`
    /// gives, and /b's lone reader that finds nobody waiting streams at sequential prices.
    /// vrate starts at 100%; below `min`, `ioc_adjust_base_vrate` lifts it 4% a period
    /// (`VRATE_CLAMP_ADJ_PCT`), so held at 125% it gets there within 4 s with /b still
    /// streaming, and the stream never runs out of budget (the test above). With `min` at
    /// 105 the lift stops there, and inside the range vrate does not rise while reads miss
    /// the target (busy_level above 0: /a's reads wait behind the stream in mq-deadline)
    /// nor in the first three periods of shortage (`vrate_adj_pct` is 0 below 4): at 105%
    /// /b's budget binds, its readers queue, `iocg_kick_waitq` wakes them in order, the
    /// stream breaks, and vrate then climbs 1% a period to 125% with every read priced
    /// random and both groups short (no budget to spare, no stream). /b within 5 points of
    /// its weight at 1:1, 2:1 and 3:1, the total within 10% of none's. Fails when neither
    /// holds vrate at `min` (checked by hand: missed reads not counted and a shortage
    /// stepping 16% a period: /b 50.5% at 3:1).
    #[test]
    fn on_the_2009_disk_the_proposal_with_room_below_keeps_the_weights_and_the_total() {
        let (_, none) = share_one("ibm18es", "none", None, 16, 1).unwrap();
        for (wb, w) in [(100, 0.5), (200, 2.0 / 3.0), (300, 0.75)] {
            let set = Some((100, wb, QosSet::ProposedMin(OPENED_MIN)));
            let (b, t) = share_one("ibm18es", "mq-deadline", set, 16, 1).unwrap();
            assert!((b - w).abs() < 0.05, "/b {wb}: {b:.3}");
            assert!(t >= 0.9 * none, "/b {wb}: {t:.3} vs none's {none:.3}");
        }
    }

    #[test]
    #[ignore = "prints the protection figures; run by hand"]
    fn print_protection() {
        for (_, drive) in DRIVES {
            for s in &SETUPS {
                let p = protection_one(drive, s, 1).unwrap();
                crate::output::tell!("{drive} {:28} {:?}", s.label, p);
            }
        }
    }
}
