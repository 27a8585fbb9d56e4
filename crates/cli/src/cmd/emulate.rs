//! The emulated drive: the simulator's device models (every built-in and imported drive, HDD
//! and SSD) on the real clock, behind `elevator run --drive` and `elevator mount --drive`
//! ([`elevator_real::emulate`]).

use elevator_core::{Nanos, Request, SECTOR_BYTES};
use elevator_real::emulate::{ServiceModel, Summary, Verdict};
use elevator_sim::{Device, DriveModel};
use serde_json::{json, Value};

/// A simulated device as an emulated drive's model.
pub struct Model {
    dev: Box<dyn Device + Send>,
    name: String,
}

impl ServiceModel for Model {
    fn name(&self) -> &str {
        &self.name
    }
    fn depth(&self) -> usize {
        self.dev.depth()
    }
    fn capacity_bytes(&self) -> u64 {
        self.dev.capacity_sectors() * SECTOR_BYTES
    }
    fn non_rotational(&self) -> bool {
        self.dev.non_rotational()
    }
    fn service(&mut self, rq: &Request, now: Nanos) -> Nanos {
        self.dev.submit(rq, now).done
    }
}

/// The model of the drive `name` (built-in name or spec file), in its initial state.
pub fn model(name: &str) -> anyhow::Result<Box<dyn ServiceModel>> {
    let drive = DriveModel::resolve(name).map_err(|e| anyhow::anyhow!("--drive: {e}"))?;
    Ok(Box::new(Model {
        name: drive.name().to_string(),
        dev: drive.device_send(),
    }))
}

/// The line a report prints about the emulation, and the verdict's warning if any.
pub fn describe(drive: &str, s: &Summary) -> (String, Option<String>) {
    let line = format!("emulated {drive}: {s}");
    let warn = match s.verdict() {
        Verdict::Faithful => None,
        Verdict::Imprecise(w) | Verdict::Behind(w) => Some(w),
    };
    (line, warn)
}

/// The summary as the JSON report's `elevator.emulation`.
pub fn json(drive: &str, s: &Summary) -> Value {
    let verdict = match s.verdict() {
        Verdict::Faithful => "faithful",
        Verdict::Imprecise(_) => "imprecise",
        Verdict::Behind(_) => "behind",
    };
    json!({
        "drive": drive,
        "completions": s.completions,
        "late_median_ns": s.median.as_ns(),
        "late_p99_ns": s.p99.as_ns(),
        "late_max_ns": s.max.as_ns(),
        "host_slower_than_model": s.host_slow,
        "mean_service_ns": s.mean_service.as_ns(),
        "verdict": verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{registry, GroupTree, Settings};
    use elevator_real::{Emulated, MonotonicClock, RunOptions, UringBackend};
    use elevator_sim::{JobSlot, Simulation};
    use elevator_workload::fio_file;
    use std::path::Path;

    use crate::cmd::run::build_jobs;

    /// A dependent 4 KiB reader beside a streaming writer's writeback, 3 s.
    const JOB: &str = "\
[global]
runtime=3
time_based

[reader]
rw=randread
bs=4k
ioengine=psync
direct=1
size=64m

[writer]
rw=write
bs=128k
ioengine=libaio
iodepth=16
direct=0
offset=256m
size=64m
";

    /// (job, mean latency in ms, bytes) of each job and direction that moved data.
    fn figures(
        jobs: &[(String, elevator_workload::metrics::JobMetrics)],
    ) -> Vec<(String, f64, u64)> {
        let mut v = Vec::new();
        for (name, m) in jobs {
            for (d, x) in [("read", &m.read), ("write", &m.write)] {
                if x.ios > 0 {
                    v.push((format!("{name} {d}"), x.latency.mean() / 1e6, x.bytes));
                }
            }
        }
        v
    }

    /// The same job file on the simulated laptop drive and on the emulated one gives the same
    /// figures, within a tolerance wide enough for a busy host (the bench, bench/emu-fidelity.sh,
    /// measures the real agreement); a host that could not keep up is reported, not failed.
    #[test]
    fn the_emulated_drive_gives_the_simulators_figures() {
        let file = fio_file::parse(Path::new("emu.fio"), JOB).unwrap();
        let drive = DriveModel::resolve("laptop-4200").unwrap();
        let capacity = drive.capacity_sectors() * SECTOR_BYTES;
        let info = registry::find("deadline").unwrap();
        let settings = info.on_device(Settings::new(), Some(true));

        let mut groups = GroupTree::new();
        let (jobs, _) = build_jobs(&file, capacity, 1, &mut groups).unwrap();
        let mut sim = Simulation::new(
            drive.device(),
            info.build(&settings, &groups).unwrap(),
            groups,
        );
        for j in jobs {
            sim.add_job_in_phase(
                JobSlot::new(j.name, j.job).group(j.group).prio(j.prio),
                j.phase,
            );
        }
        let simulated: Vec<_> = sim
            .run(None)
            .jobs
            .into_iter()
            .map(|j| (j.name, j.metrics))
            .collect();

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(320 << 20).unwrap();
        drop(f);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let clock = MonotonicClock::start();
        let ring = match UringBackend::new(f, 320 << 20, 64) {
            Ok(r) => r,
            Err(e) => {
                crate::output::tell!("skipped: no io_uring here ({e})");
                return;
            }
        };
        let mut backend = Emulated::new(ring, model("laptop-4200").unwrap(), clock)
            .with_spin(elevator_real::emulate::SPIN);
        let mut groups = GroupTree::new();
        let (jobs, _) = build_jobs(&file, capacity, 1, &mut groups).unwrap();
        let mut sched = info.build(&settings, &groups).unwrap();
        let report = elevator_real::run_with_clock(
            &mut backend,
            &clock,
            sched.as_mut(),
            jobs,
            // As `elevator run --drive` runs it: ties in job order, as the simulator's.
            &RunOptions {
                ties_in_job_order: true,
                ..RunOptions::default()
            },
        )
        .unwrap_or_else(|f| panic!("{}", f.error));
        let emulated: Vec<_> = report
            .jobs
            .into_iter()
            .map(|j| (j.name, j.metrics))
            .collect();
        let late = backend.lateness().summary();
        let total: u64 = emulated.iter().map(|(_, m)| m.read.ios + m.write.ios).sum();
        // Every completion was delivered through the model, and counted.
        assert!(late.completions >= total, "{late:?} vs {total}");
        if let Verdict::Behind(w) = late.verdict() {
            crate::output::tell!("the host did not keep up, figures not compared: {w}");
            return;
        }
        let (s, e) = (figures(&simulated), figures(&emulated));
        assert_eq!(
            s.iter().map(|x| &x.0).collect::<Vec<_>>(),
            e.iter().map(|x| &x.0).collect::<Vec<_>>()
        );
        for (a, b) in s.iter().zip(&e) {
            let lat = b.1 / a.1;
            let bytes = b.2 as f64 / a.2 as f64;
            assert!(
                (0.75..=1.33).contains(&lat) && (0.75..=1.33).contains(&bytes),
                "{}: simulated {:.2} ms {} B, emulated {:.2} ms {} B ({late})",
                a.0,
                a.1,
                a.2,
                b.1,
                b.2
            );
        }
    }

    #[test]
    fn every_builtin_drive_can_be_emulated() {
        for name in DriveModel::builtin_names() {
            let m = model(name).unwrap();
            assert!(m.depth() >= 1, "{name}");
            assert!(m.capacity_bytes() > 0, "{name}");
        }
    }

    #[test]
    fn an_unknown_drive_is_a_clear_error() {
        let e = model("no-such-drive").err().unwrap().to_string();
        assert!(e.contains("--drive") && e.contains("no-such-drive"), "{e}");
    }
}
