//! resctl-demo's io.cost recipe on a simulated drive: the `io.cost.model` and `io.cost.qos`
//! lines resctl-bench's `iocost-params` bench applies, as a user following resctl-demo gets
//! them. Documentation: docs/iocost.md ("resctl-demo's recipe").
//!
//! **Follows** facebookexperimental/resctl-demo at `a0b906e`: rd-agent's
//! `start_iocost_bench` runs its own copy of `iocost_coef_gen.py` (rd-agent/src/misc, last
//! changed in 5148a24) with `--json` and `--duration 60`, and `iocost-params` commits the
//! JSON's `model` and `qos` (after `IoCostQoSParams::sanitize`, which rounds the percentages to
//! two decimals). That copy is not the kernel tree's tools/cgroup/iocost_coef_gen.py:
//!
//! - the device class comes from `queue/rotational` (`is_ssd`): on an SSD every fio run has
//!   `--numjobs` 8 jobs, on a disk 1; each run's figure is the sum of every job's
//!   `bw_bytes` (`run_fio`);
//! - the model (`determine_model`): 128 MiB sequential reads and writes at depth 1 (the
//!   bandwidths), 4 KiB sequential reads and writes at `--seq-depth` 256 and random ones at
//!   `--rand-depth` 256 (the IOPS: bytes/s over 4096, rounded). The kernel's script: one job,
//!   depth 64;
//! - the QoS (`determine_qos`): `rpct` = `wpct` = 95 on an SSD, 50 on a disk; `rlat` (`wlat`)
//!   is 1.5 times that percentile of the first job's completion latency (`determine_lat`:
//!   fio's `clat_ns` of `jobs[0]`, the percentile nearest `pct`, in us, rounded) in a 4 KiB
//!   random read (write) run at depth 256 with every job's `--rate_iops` at 90% of the model's
//!   `rrandiops` (`wrandiops`); `min=60 max=100`. fio's `rate_iops` caps each job, so with 8
//!   jobs the caps add to 7.2 times the device's rate: on an SSD that run saturates the
//!   device.
//!
//! fio's `clat` runs from the moment `io_submit` returned, that is from when the request got
//! its tag (a submitter finding every tag taken waits inside `io_submit`, in `slat`:
//! `blk_mq_get_tag`), to the completion: here from the tag time the simulator's block layer
//! records (`RequestRecord::tagged`: an NVMe drive's tags are its queue, a disk's host tags
//! `DISK_HOST_TAGS`, more than the disk holds; docs/iocost.md, "The tags").
//!
//! The runs go to rd-agent's 16 GiB test file (`--testfile-dev`: not the whole device), here
//! the drive's first 16 GiB.
//!
//! Deviations: each 4 KiB run on an SSD lasts [`RUN_SSD_4K_S`] simulated seconds (the bench:
//! [`RUN_S`], as here the 128 MiB runs and every run on a disk); the script sets `nomerges=1`, and our `none` offers a bio for merging
//! once more requests wait than the device holds (only the sequential 4 KiB points can merge,
//! and they set only `rseqiops`/`wseqiops`); `--iodepth_batch_submit` (16 at depth 256) has no
//! counterpart: each simulated I/O is submitted when its job issues it.

use anyhow::Context;
use elevator_core::qos::iocost::{Model, Qos};

use elevator_core::Settings;
use elevator_sim::scenario::Scenario;

/// fio jobs a run on an SSD (`--numjobs`); a disk gets 1.
pub const SSD_NUMJOBS: u32 = 8;
/// `--seq-depth` and `--rand-depth`.
pub const DEPTH: u32 = 256;
/// The sequential bandwidth runs' block, bytes (`--seqio-block-mb` 128), at depth 1.
pub const SEQ_BLOCK: u64 = 128 << 20;
/// The latency runs cap each job at this fraction of the model's random IOPS.
pub const LAT_RATE: f64 = 0.9;
/// `rlat` / `wlat` are this many times the measured percentile.
pub const LAT_MULT: f64 = 1.5;
/// `min` and `max`, percent.
pub const VRATE: (u32, u32) = (60, 100);
/// Simulated seconds a 4 KiB run on an SSD (hundreds of thousands of I/Os a second).
pub const RUN_SSD_4K_S: u64 = 2;
/// Simulated seconds of every other run: the bench's `--duration`. fio counts the I/Os
/// completed, so a run of 128 MiB transfers must last many of them: on the 980 PRO model 8
/// jobs complete about 35 reads in 2 s, and `rbps` came out 2.7% low (2,281,701,376 B/s
/// against 2,344,336,316 in 30 s).
pub const RUN_S: u64 = 60;

/// The test file rd-agent's runs go to (`--testfile-size-gb` 16; `--testfile-dev` names the
/// device), bytes.
pub const TESTFILE_BYTES: u64 = 16 << 30;

/// One fio run of the recipe: `numjobs` identical jobs over the test file (the drive's first
/// [`TESTFILE_BYTES`], or all of a smaller one).
#[derive(Clone, Copy, Debug)]
struct Run {
    rw: &'static str,
    bs: u64,
    depth: u32,
    rate_iops: Option<u64>,
}

/// What one run gives: the sum of every job's bytes a second, and the first job's
/// completion latency at percentile `pct`, microseconds.
struct Measured {
    bytes_s: f64,
    job0_clat_us: f64,
}

/// The two lines and what they came from.
#[derive(Clone, Debug)]
pub struct Recipe {
    /// `io.cost.model`.
    pub model: Model,
    /// `io.cost.qos`.
    pub qos: Qos,
}

impl Recipe {
    /// The two lines without the device number.
    pub fn lines(&self) -> (String, String) {
        let strip = |l: String| l.split_once(' ').map_or(l.clone(), |x| x.1.to_string());
        (strip(self.model.line("0:0")), strip(self.qos.line("0:0")))
    }
}

/// Simulate `run` with `numjobs` jobs on `drive` for `secs`, under `none`.
fn simulate(
    drive: &str,
    run: Run,
    numjobs: u32,
    secs: u64,
    pct: u32,
    size: u64,
) -> anyhow::Result<Measured> {
    let ms = secs * 1000;
    let mut text =
        format!("name = \"resctl-coef\"\ndrive = \"{drive}\"\nseed = 1\nduration_s = {secs}\n");
    for j in 0..numjobs {
        text.push_str(&format!(
            "\n[[job]]\nname = \"coef.{j}\"\nkind = \"fio\"\nrw = \"{}\"\nbs = {}\n\
             iodepth = {}\ndirect = true\nsize = {size}\ntime_based = true\nruntime_ms = {ms}\n",
            run.rw, run.bs, run.depth
        ));
        if let Some(r) = run.rate_iops {
            text.push_str(&format!("rate_iops = {r}\n"));
        }
    }
    let scenario = Scenario::parse(&text, "builtin:resctl-coef", None)
        .context("the resctl-demo recipe's run")?;
    let sched = scenario.scheduler("none", &Settings::new())?;
    let mut sim = scenario.simulation(sched, Some(1))?;
    if run.rate_iops.is_some() {
        sim.record_requests();
    }
    let report = sim.run(scenario.limit);
    let secs_run = (report.end.as_ns() as f64 / 1e9).max(1e-9);
    let writes = run.rw.contains("write");
    let bytes: u64 = report
        .jobs
        .iter()
        .map(|j| {
            if writes {
                j.metrics.write.bytes
            } else {
                j.metrics.read.bytes
            }
        })
        .sum();
    // A merged bio's request may have got its tag before the bio was submitted.
    let mut clat: Vec<u64> = report
        .requests
        .iter()
        .filter(|r| r.job == 0)
        .map(|r| (r.completed - r.tagged.max(r.inserted)).as_ns())
        .collect();
    clat.sort_unstable();
    let job0_clat_us = if clat.is_empty() {
        0.0
    } else {
        let i = ((clat.len() as f64 * f64::from(pct) / 100.0).ceil() as usize).clamp(1, clat.len());
        clat[i - 1] as f64 / 1000.0
    };
    Ok(Measured {
        bytes_s: bytes as f64 / secs_run,
        job0_clat_us,
    })
}

/// The recipe on the built-in or spec-file `drive`.
pub fn derive(drive: &str) -> anyhow::Result<Recipe> {
    let d =
        elevator_sim::DriveModel::resolve(drive).map_err(|e| anyhow::anyhow!("{drive}: {e}"))?;
    let ssd = d.ssd().is_some();
    let numjobs = if ssd { SSD_NUMJOBS } else { 1 };
    let secs = |bs: u64| {
        if ssd && bs == 4096 {
            RUN_SSD_4K_S
        } else {
            RUN_S
        }
    };
    let pct = if ssd { 95 } else { 50 };
    let size = TESTFILE_BYTES.min(d.capacity_sectors() * elevator_core::SECTOR_BYTES);
    let go = |rw, bs, depth, rate_iops| {
        simulate(
            drive,
            Run {
                rw,
                bs,
                depth,
                rate_iops,
            },
            numjobs,
            secs(bs),
            pct,
            size,
        )
        .with_context(|| format!("{drive}: {rw} {bs} qd{depth}"))
    };
    let iops = |m: Measured| (m.bytes_s / 4096.0).round() as u64;
    // determine_model's order: writes first.
    let wbps = go("write", SEQ_BLOCK, 1, None)?.bytes_s.round() as u64;
    let rbps = go("read", SEQ_BLOCK, 1, None)?.bytes_s.round() as u64;
    let wseqiops = iops(go("write", 4096, DEPTH, None)?);
    let rseqiops = iops(go("read", 4096, DEPTH, None)?);
    let wrandiops = iops(go("randwrite", 4096, DEPTH, None)?);
    let rrandiops = iops(go("randread", 4096, DEPTH, None)?);
    let model = Model {
        rbps,
        rseqiops,
        rrandiops,
        wbps,
        wseqiops,
        wrandiops,
    };
    let cap = |randiops: u64| Some(((randiops as f64 * LAT_RATE) as u64).max(1));
    let lat = |m: Measured| (m.job0_clat_us * LAT_MULT).round() as u32;
    let rlat = lat(go("randread", 4096, DEPTH, cap(rrandiops))?);
    let wlat = lat(go("randwrite", 4096, DEPTH, cap(wrandiops))?);
    let qos = Qos {
        enable: true,
        rppm: pct * 10_000,
        rlat,
        wppm: pct * 10_000,
        wlat,
        min_ppm: VRATE.0 * 10_000,
        max_ppm: VRATE.1 * 10_000,
    };
    Ok(Recipe { model, qos })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rd-agent's `iocost_coef_gen.py` on a rotational device (`is_ssd` false): the 50th
    /// percentile for both directions, `min=60 max=100`, and `rlat` 1.5 times the median
    /// completion latency of random reads capped at 90% of `rrandiops`, counted from the
    /// tag: more than one service time (`1 / rrandiops`) and far under a second.
    #[test]
    fn on_a_disk_determine_qos_takes_the_median_of_one_job() {
        let r = derive("ibm18es").unwrap();
        assert_eq!((r.qos.rppm, r.qos.wppm), (500_000, 500_000), "{r:?}");
        assert_eq!(
            (r.qos.min_ppm, r.qos.max_ppm),
            (600_000, 1_000_000),
            "{r:?}"
        );
        let service_us = 1e6 / r.model.rrandiops as f64;
        assert!(
            f64::from(r.qos.rlat) > service_us && r.qos.rlat < 1_000_000,
            "{r:?}"
        );
    }
}
