//! A fio job file built into jobs: what `elevator run` runs on a device and `elevator sim`
//! and the Python package run on a simulated drive.

use elevator_core::{GroupId, GroupTree, Nanos, SECTOR_BYTES};
use elevator_real::{ByteRange, RealJob};
use elevator_sim::work::{implied_ios, probe_scheduler, Span, PROBE_IOS};
use elevator_sim::{DriveModel, JobSlot, Simulation};
use elevator_workload::fio_file::{self, FioFile};
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
            let past = || {
                file.job_error(
                    def,
                    "offset_increment",
                    format!("clone {clone}'s region would start past 2^64 bytes"),
                )
            };
            let config = def.clone_config(clone, capacity).ok_or_else(past)?;
            let job = FioJob::new(config, &env).map_err(|e| {
                // A clone moved by offset_increment is told as such: its region is not the
                // one the job's own lines give.
                let moved = if def.offset_increment.is_some() && clone > 0 {
                    format!(
                        " (clone {clone}: its region starts {clone} x offset_increment after \
                         the job's offset)"
                    )
                } else {
                    String::new()
                };
                file.job_error(def, e.field, format!("{}{moved}", e.reason))
            })?;
            let r = job.region();
            // `startdelay`: a range is drawn per clone, seeded by the run and its name.
            let start_delay = def.start_delay.map_or(Nanos::ZERO, |(lo, hi)| {
                Nanos(lo + env.job_seed(None) % (hi - lo + 1))
            });
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
                start_delay,
                // fio's `sync=`: every direct write of an O_SYNC / O_DSYNC open is durable
                // before it completes; the executor asks it of each (`RWF_SYNC`/`RWF_DSYNC`).
                // Buffered, the job's own flush after each write stands for the sync.
                rw_flags: if def.config.direct {
                    elevator_real::rw_flags_of(def.config.sync_io)
                } else {
                    0
                },
            });
            groupids.push(groupid);
        }
    }
    Ok((jobs, groupids))
}

/// The simulator's slot for a job [`build_jobs`] built: its name, workload, group, priority
/// and start delay (fio's `startdelay`); the caller adds its phase and, with a host CPU
/// model, its cores. One place, so `sim`, the grid and the work probes run a job file alike.
pub fn job_slot(j: RealJob) -> JobSlot {
    JobSlot::new(j.name, j.job)
        .group(j.group)
        .prio(j.prio)
        .delay(j.start_delay)
}

/// The most I/Os a simulated run of a job file may imply, by its jobs' sizes (`size`,
/// `io_size`, `number_ios`: [`check_simulated_work`]) or by their `runtime` at the rate the
/// run starts at ([`check_simulated_time_work`]), unless the user raises the bound
/// (`elevator sim --max-ios`, the grid's `max_ios`). `size=900g bs=512` (1.9e9 I/Os) and a
/// day of `time_based` 512-byte reads (10^9) would compute for hours without a word. fio
/// runs such a job on a device, and so does `elevator run`, which does not call these.
pub use elevator_sim::work::MAX_SIMULATED_IOS;

/// Refuse a job file whose jobs ended by their size alone (no `runtime`, which
/// [`FioFile::check_simulated_time`] bounds) imply more than `max_ios` I/Os in all (every
/// `numjobs` clone counted) on a target of `capacity` bytes, naming the line of the job that
/// passes the bound and the field that sets its count. A job that does not build is left to
/// [`build_jobs`], which names its error. Returns the I/Os the sizes imply.
pub fn check_simulated_work(
    file: &FioFile,
    capacity: u64,
    max_ios: u64,
) -> Result<u64, InputError> {
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
        // As the run counts its work (`Simulation::work_done`): an I/O once per started
        // 64 KiB (`size=100g bs=1m`, 10^5 I/Os, computes as long as 1.6 x 10^6 of 4 KiB).
        // Its largest block (`bssplit`, `bsrange`), so as not to underestimate.
        let per_io = def
            .config
            .max_size()
            .div_ceil(elevator_sim::WORK_UNIT_SECTORS * SECTOR_BYTES)
            .max(1);
        total = total.saturating_add(
            ios.saturating_mul(per_io)
                .saturating_mul(u64::from(def.numjobs)),
        );
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
                    "{ios} I/Os of up to {} bytes{}: the job file's jobs imply more than {max_ios} \
                     I/Os in all (an I/O counted once per started 64 KiB; the simulator \
                     computes a few hundred thousand a second); \
                     bound it (runtime=, number_ios=, a smaller size=) or run it as asked \
                     with `elevator sim --max-ios N` (Python: `max_ios=N`; `elevator run` runs \
                     it on a device)",
                    def.config.max_size(),
                    if def.numjobs > 1 {
                        format!(" in each of {} clones", def.numjobs)
                    } else {
                        String::new()
                    }
                ),
            ));
        }
    }
    Ok(total)
}

/// Refuse a job file whose jobs with a `runtime` imply more than `max_ios` I/Os in all on
/// `drive`: each `stonewall` phase holding such a job is run alone (under none, seed 1) for
/// its first I/Os ([`elevator_sim::work::implied_ios`], at most
/// [`elevator_sim::work::PROBE_IOS`] shared among the phases) and their rate extrapolated to
/// the phase's longest `ramp_time` + `runtime`. Names the line of the phase's longest-running
/// job and `runtime`. A day of `time_based` 512-byte reads (`runtime=86400`, which
/// [`FioFile::check_simulated_time`] lets pass) implies 10^9 I/Os on a disk's cache.
/// Returns the I/Os the timed phases imply.
pub fn check_simulated_time_work(
    file: &FioFile,
    drive: &DriveModel,
    max_ios: u64,
) -> Result<u64, InputError> {
    // Each job's phase, as build_jobs numbers them; the longest-running timed job of each.
    let mut phase = 0u32;
    let mut longest: Vec<(u32, usize, u64)> = Vec::new();
    for (i, def) in file.jobs.iter().enumerate() {
        if i > 0 && def.stonewall {
            phase += 1;
        }
        let Some(runtime) = def.config.runtime_ms else {
            continue;
        };
        // The job runs its ramp and runtime after its start delay (the longest it may draw).
        let delay_ms = def.start_delay.map_or(0, |(_, hi)| hi / 1_000_000);
        let span = runtime
            .saturating_add(def.config.ramp_ms)
            .saturating_add(delay_ms);
        match longest.last_mut() {
            Some(l) if l.0 == phase => {
                if span > l.2 {
                    *l = (phase, i, span);
                }
            }
            _ => longest.push((phase, i, span)),
        }
    }
    if longest.is_empty() {
        return Ok(0);
    }
    let capacity = drive.device().capacity_sectors() * SECTOR_BYTES;
    let mut groups = GroupTree::new();
    let Ok((jobs, _)) = build_jobs(file, capacity, 1, &mut groups) else {
        return Ok(0); // build_jobs names the error where the run builds its jobs
    };
    let mut by_phase: Vec<Vec<RealJob>> = Vec::new();
    for j in jobs {
        let p = j.phase as usize;
        if by_phase.len() <= p {
            by_phase.resize_with(p + 1, Vec::new);
        }
        by_phase[p].push(j);
    }
    let probe = (PROBE_IOS / longest.len() as u64).max(MIN_PROBE_IOS);
    let mut total = 0u64;
    for (phase, i, span_ms) in longest {
        let jobs = std::mem::take(&mut by_phase[phase as usize]);
        let mut sim = Simulation::new(drive.device(), probe_scheduler(&groups), groups.clone());
        for j in jobs {
            sim.add_job(job_slot(j));
        }
        let span = Nanos::from_ms_f64(span_ms as f64);
        let ios = implied_ios(sim, Span::Until(span), probe).ios;
        total = total.saturating_add(ios);
        if total > max_ios {
            let def = &file.jobs[i];
            return Err(InputError::at_line(
                &file.path,
                def.line_of("runtime_ms"),
                "runtime",
                format!(
                    "job {}: {:.0} s of {} I/Os of {} bytes on {} imply about {ios} I/Os at the rate \
                     the run starts at; the job file's jobs imply more than {max_ios} I/Os in \
                     all (the simulator computes a few hundred thousand a second); bound it \
                     (a shorter runtime=, rate_iops=, number_ios=) or run it as asked with \
                     `elevator sim --max-ios N` (Python: `max_ios=N`; `elevator run` runs it \
                     on a device)",
                    fio_file::excerpt(&def.name),
                    span.as_secs_f64(),
                    format!("{:?}", def.config.rw).to_lowercase(),
                    def.config.bs,
                    drive.name(),
                ),
            ));
        }
    }
    Ok(total)
}

/// The fewest I/Os each phase's probe runs, however many phases share
/// [`elevator_sim::work::PROBE_IOS`].
const MIN_PROBE_IOS: u64 = 256;

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
