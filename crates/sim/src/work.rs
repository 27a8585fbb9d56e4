//! The work a simulated run implies, told before it runs.
//!
//! A run is bounded by what it asks for: a job file's or a scenario's sizes and counts, or its
//! simulated time. Time alone says nothing of the work: a day of 512-byte reads at a drive's
//! cache rate is 10^9 I/Os, hours of real time at the simulator's few hundred thousand a
//! second. [`implied_ios`] runs the simulation itself for its first I/Os and extrapolates
//! their rate to the whole span, so a caller can refuse a run that implies more than
//! [`MAX_SIMULATED_IOS`] before computing it, naming the field that sets the span. The
//! estimate is the rate of the run's start: a run whose later part goes faster than its
//! first [`PROBE_IOS`] I/Os (a cache that warms, a phase of another pattern the probe does
//! not reach) can imply more than the estimate says.

use elevator_core::{registry, GroupTree, Nanos, Scheduler};

use crate::Simulation;

/// The most I/Os a simulated run may imply (by its sizes, or by its simulated time at the
/// rate it starts at) unless the user raises the bound (`elevator sim --max-ios`, Python
/// `max_ios`): 10^8, minutes of real time per scheduler.
pub const MAX_SIMULATED_IOS: u64 = 100_000_000;

/// I/Os a probe completes before its rate is extrapolated: a few milliseconds of real time.
pub const PROBE_IOS: u64 = 20_000;

/// The I/Os `sim` implies when it lasts `span` of simulated time: exact when it completes
/// fewer than `probe` I/Os by then (the probe ran it whole), else the rate of its first
/// `probe` I/Os times `span`.
pub fn implied_ios(sim: Simulation, span: Nanos, probe: u64) -> u64 {
    let p = sim.probe(Some(span), probe.max(1));
    if p.ended || p.end >= span {
        return p.ios;
    }
    let per_ns = p.ios as f64 / p.end.as_ns().max(1) as f64;
    let ios = per_ns * span.as_ns() as f64;
    if ios >= u64::MAX as f64 {
        u64::MAX
    } else {
        (ios as u64).max(p.ios)
    }
}

/// The scheduler a probe runs under: none (FIFO order; the scheduler changes the order of
/// the work, rarely its amount).
pub fn probe_scheduler(groups: &GroupTree) -> Box<dyn Scheduler> {
    registry::find("none")
        .expect("none is registered")
        .build(&Default::default(), groups)
        .expect("none has no tunables")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DriveModel, JobSlot};
    use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
    use elevator_workload::BuildEnv;

    fn day_of_reads(bs: u64, ios: Option<u64>) -> Simulation {
        let drive = DriveModel::builtin("cheetah9lp").expect("built in");
        let device = drive.device();
        let env = BuildEnv::new(device.capacity_sectors(), 1, "j");
        let cfg = FioJobConfig {
            rw: RwMode::Read,
            bs,
            time_based: ios.is_none(),
            runtime_ms: Some(86_400_000),
            number_ios: ios,
            ..FioJobConfig::default()
        };
        let job = FioJob::new(cfg, &env).expect("builds");
        let groups = GroupTree::new();
        let mut sim = Simulation::new(device, probe_scheduler(&groups), groups);
        sim.add_job(JobSlot::new("j", Box::new(job)));
        sim
    }

    #[test]
    fn a_day_of_512_byte_reads_implies_more_than_the_bound() {
        let day = Nanos::from_secs_f64(86_400.0);
        let ios = implied_ios(day_of_reads(512, None), day, PROBE_IOS);
        assert!(ios > MAX_SIMULATED_IOS, "{ios} I/Os implied");
    }

    #[test]
    fn a_run_shorter_than_the_probe_is_counted_exactly() {
        let day = Nanos::from_secs_f64(86_400.0);
        assert_eq!(
            implied_ios(day_of_reads(4096, Some(500)), day, PROBE_IOS),
            500
        );
    }
}
