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

/// What ends a run whose work [`implied_ios`] tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Span {
    /// It stops at this simulated time (a scenario's `duration_s`, a job file's `runtime`),
    /// or sooner when its jobs are done.
    Until(Nanos),
    /// It lasts at least this long (the latest end a timed job sets) and until its other
    /// foreground jobs are done.
    AtLeast(Nanos),
    /// It ends when its foreground jobs are done, by their own counts.
    Done,
}

/// The work a run implies ([`implied_ios`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Implied {
    /// I/Os.
    pub ios: u64,
    /// The job (by its index among those added) whose share of its own work done set the
    /// count, when that did rather than the span's time.
    pub job: Option<usize>,
}

/// The I/Os `sim` implies when it runs for `span`: exact when it completes fewer than `probe`
/// I/Os (the probe ran it whole), else the count of its first `probe` I/Os extrapolated by
/// their simulated time to the span's, and by the least share of their own work the
/// foreground jobs did ([`elevator_workload::Job::progress`]: a compile job's steps, a
/// dependent reader's sectors, a stream writer's writes) to the whole of it. A run ended
/// by its jobs ([`Span::Done`]) none of which counts its work implies nothing here (its
/// work is counted by its sizes, or is its input's) and is not probed.
pub fn implied_ios(sim: Simulation, span: Span, probe: u64) -> Implied {
    let limit = match span {
        Span::Until(t) => Some(t),
        Span::AtLeast(_) | Span::Done => None,
    };
    if span == Span::Done && sim.progress().is_none() {
        return Implied { ios: 0, job: None };
    }
    let p = sim.probe(limit, probe.max(1));
    let exact = Implied {
        ios: p.ios,
        job: None,
    };
    if p.ended || limit.is_some_and(|l| p.end >= l) {
        return exact;
    }
    let scaled = |by: f64| {
        let ios = p.ios as f64 * by;
        if ios.is_nan() || ios >= u64::MAX as f64 {
            u64::MAX
        } else {
            (ios as u64).max(p.ios)
        }
    };
    let by_time = |t: Nanos| Implied {
        ios: scaled(t.as_ns() as f64 / p.end.as_ns().max(1) as f64),
        job: None,
    };
    let by_progress = p.progress.map(|(job, f)| Implied {
        ios: scaled(1.0 / f),
        job: Some(job),
    });
    match (span, by_progress) {
        (Span::Until(t), Some(w)) => std::cmp::min_by_key(by_time(t), w, |i| i.ios),
        (Span::Until(t), None) => by_time(t),
        (Span::AtLeast(t), Some(w)) => std::cmp::max_by_key(by_time(t), w, |i| i.ios),
        (Span::AtLeast(t), None) => by_time(t),
        (Span::Done, w) => w.unwrap_or(exact),
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
        let ios = implied_ios(day_of_reads(512, None), Span::Until(day), PROBE_IOS).ios;
        assert!(ios > MAX_SIMULATED_IOS, "{ios} I/Os implied");
    }

    /// A run's work is told from its start (`implied_ios`); one that does more stops at its
    /// bound (`Simulation::bound_ios`) and its report refuses it, rather than computing on.
    #[test]
    fn a_run_past_its_io_bound_stops_there_and_its_report_says_so() {
        let mut sim = day_of_reads(4096, Some(5000));
        sim.bound_ios(1000);
        let report = sim.run(None);
        assert_eq!(report.io_bound_passed, Some(1000));
        assert!(report.ios_completed > 1000 && report.ios_completed < 1100);
        let e = report.job_error().unwrap_err();
        assert!(
            e.contains("passed 1000 I/Os") && e.contains("--max-ios"),
            "{e}"
        );
        // Within its bound it runs whole.
        let mut sim = day_of_reads(4096, Some(5000));
        sim.bound_ios(5000);
        let report = sim.run(None);
        assert_eq!(report.io_bound_passed, None);
        assert_eq!(report.ios_completed, 5000);
        assert!(report.job_error().is_ok());
    }

    /// Round 10 (issue 32): a run's work counts an I/O once per started 64 KiB
    /// (`Simulation::work_done`), what a large I/O costs the simulator (a 1 MiB read, 16
    /// times a 4 KiB one on the SSD model's page map): 100 reads of 1 MiB count 1600, and
    /// stop a run bounded at 1000 after about 63 of them.
    #[test]
    fn a_large_io_counts_once_per_64_kib_of_it() {
        let day = Nanos::from_secs_f64(86_400.0);
        let ios = implied_ios(
            day_of_reads(1 << 20, Some(100)),
            Span::Until(day),
            PROBE_IOS,
        )
        .ios;
        assert_eq!(ios, 1600);
        let ios = implied_ios(day_of_reads(4096, Some(100)), Span::Until(day), PROBE_IOS).ios;
        assert_eq!(ios, 100);
        let mut sim = day_of_reads(1 << 20, Some(100));
        sim.bound_ios(1000);
        let report = sim.run(None);
        assert_eq!(report.io_bound_passed, Some(1000));
    }

    #[test]
    fn a_run_shorter_than_the_probe_is_counted_exactly() {
        let day = Nanos::from_secs_f64(86_400.0);
        assert_eq!(
            implied_ios(day_of_reads(4096, Some(500)), Span::Until(day), PROBE_IOS).ios,
            500
        );
    }
}
