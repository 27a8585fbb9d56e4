//! A fio job file built into jobs: what `elevator run` runs on a device and `elevator sim`
//! and the Python package run on a simulated drive.

use elevator_core::{GroupId, GroupTree, SECTOR_BYTES};
use elevator_real::{ByteRange, RealJob};
use elevator_workload::fio_file::FioFile;
use elevator_workload::input::InputError;
use elevator_workload::jobs::fio::FioJob;
use elevator_workload::BuildEnv;

/// The jobs of `file` built for a target of `capacity` bytes (`numjobs` clones named
/// `NAME.I`, `stonewall` phases, `elevator_cgroup` groups added to `groups`), plus each one's
/// reporting group id (fio's `new_group` / `stonewall` numbering).
pub fn build_jobs(
    file: &FioFile,
    capacity: u64,
    seed: u64,
    groups: &mut GroupTree,
) -> Result<(Vec<RealJob>, Vec<u32>), InputError> {
    let mut jobs = Vec::new();
    let mut groupids = Vec::new();
    let (mut phase, mut groupid) = (0u32, 0u32);
    for (i, def) in file.jobs.iter().enumerate() {
        if i > 0 && def.stonewall {
            phase += 1;
        }
        if i > 0 && (def.stonewall || def.new_group) {
            groupid += 1;
        }
        if def.config.time_based && def.config.runtime_ms.is_none() {
            return Err(file.job_error(
                def,
                "time_based",
                "time_based needs a runtime above 0 (runtime=0, like none, sets no limit: it would never end)",
            ));
        }
        let group = match &def.cgroup {
            Some(path) => {
                let id = groups
                    .add(path, def.weight)
                    .map_err(|e| file.job_error(def, "", e))?;
                // Only the files this job sets; another job of the group may set the others.
                let io = groups.io_mut(id);
                let given = &def.io;
                if !given.max.is_unlimited() {
                    io.max = given.max;
                }
                io.latency_target = given.latency_target.or(io.latency_target);
                io.weight = given.weight.or(io.weight);
                io.bfq_weight = given.bfq_weight.or(io.bfq_weight);
                id
            }
            None if def.weight.is_some() || def.io != Default::default() => {
                return Err(file.job_error(
                    def,
                    "",
                    "elevator_weight and elevator_io_* need elevator_cgroup (the root's weight and io files are fixed)",
                ))
            }
            None => GroupId::ROOT,
        };
        for clone in 0..def.numjobs {
            let name = if def.numjobs == 1 {
                def.name.clone()
            } else {
                format!("{}.{clone}", def.name)
            };
            let env = BuildEnv::new(capacity / SECTOR_BYTES, seed, name.clone());
            let job = FioJob::new(def.config.clone(), &env)
                .map_err(|e| file.job_error(def, e.field, &e.reason))?;
            let r = job.region();
            jobs.push(RealJob {
                name,
                job: Box::new(job),
                group,
                group_path: groups.get(group).path.clone(),
                prio: def.prio,
                region: ByteRange {
                    start: r.start * SECTOR_BYTES,
                    end: r.end() * SECTOR_BYTES,
                },
                phase,
            });
            groupids.push(groupid);
        }
    }
    Ok((jobs, groupids))
}

/// The most I/Os a simulated run of a job file may imply by its jobs' sizes (`size`,
/// `io_size`, `number_ios`) unless the user raises the bound (`elevator sim --max-ios`, the
/// grid's `max_ios`): 10^8, minutes of real time per scheduler at the simulator's few
/// hundred thousand requests a second. `size=900g bs=512` (1.9e9 I/Os) would compute for
/// hours without a word, as a day of simulated time would (refused by
/// [`FioFile::check_simulated_time`]). fio runs such a job on a device, and so does
/// `elevator run`, which does not call this.
pub const MAX_SIMULATED_IOS: u64 = 100_000_000;

/// Refuse a job file whose jobs ended by their size alone (no `runtime`, which
/// [`FioFile::check_simulated_time`] bounds) imply more than `max_ios` I/Os in all (every
/// `numjobs` clone counted) on a target of `capacity` bytes, naming the line of the job that
/// passes the bound and the field that sets its count. A job that does not build is left to
/// [`build_jobs`], which names its error.
pub fn check_simulated_work(file: &FioFile, capacity: u64, max_ios: u64) -> Result<(), InputError> {
    let mut total = 0u64;
    for def in &file.jobs {
        if def.config.runtime_ms.is_some() {
            continue;
        }
        let env = BuildEnv::new(capacity / SECTOR_BYTES, 1, def.name.clone());
        let Some(ios) = FioJob::new(def.config.clone(), &env)
            .ok()
            .and_then(|j| j.io_limit())
        else {
            continue;
        };
        total = total.saturating_add(ios.saturating_mul(u64::from(def.numjobs)));
        if total > max_ios {
            let field = match (def.config.number_ios, def.config.io_size) {
                (Some(n), _) if n == ios => "number_ios",
                (_, Some(_)) => "io_size",
                _ => "size",
            };
            return Err(file.job_error(
                def,
                field,
                format!(
                    "{ios} I/Os of {} bytes{}: the job file's jobs imply more than {max_ios} \
                     I/Os in all (the simulator computes a few hundred thousand a second); \
                     bound it (runtime=, number_ios=, a smaller size=) or run it as asked \
                     with `elevator sim --max-ios N` (Python: `max_ios=N`; `elevator run` runs \
                     it on a device)",
                    def.config.bs,
                    if def.numjobs > 1 {
                        format!(" in each of {} clones", def.numjobs)
                    } else {
                        String::new()
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// The job file's `ramp_time`: one value for every job (the executor applies one ramp).
pub fn ramp_time(file: &FioFile) -> Result<std::time::Duration, InputError> {
    let first = file.jobs.first().map_or(0, |d| d.config.ramp_ms);
    if let Some(d) = file.jobs.iter().find(|d| d.config.ramp_ms != first) {
        return Err(file.job_error(
            d,
            "ramp_ms",
            format!(
                "ramp_time differs from the first job's ({first} ms); elevator run applies one ramp_time to every job"
            ),
        ));
    }
    Ok(std::time::Duration::from_millis(first))
}
