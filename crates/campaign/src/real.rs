//! Real I/O as data: a fio job file run on a file or block device by `elevator-real`'s
//! io_uring executor, under each scheduler in turn, with the results as [`CellResult`]s (one
//! "cell" per scheduler), so [`crate::table::real_jobs_batch`] gives the same table shape as a
//! simulated sweep.
//!
//! The checks made before the target is touched are the ones `elevator run` makes, and the
//! CLI calls the same functions: [`target_of`] (which file or device), [`check_buffer_memory`]
//! (the buffers fit in memory), [`bytes_for_new_target`] (a new file's size), [`write_regions`]
//! (what the jobs may write, for the safety checks of [`elevator_real::target::open`]).
//! [`run`] is the whole run for the Python package's `elevator.run`; the CLI keeps its own loop
//! over the same executor calls because it adds an emulated drive, a live progress line,
//! Ctrl-C handling, request logs and an HTML report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::{GroupTree, Settings};
use elevator_real::target::{self, OpenSpec};
use elevator_real::{ByteRange, RealJob, RunOptions, UringBackend};
use elevator_workload::fio_file::{self, FioFile, FioJobDef};
use serde::{Deserialize, Serialize};

use crate::fio::{build_jobs, ramp_time};
use crate::{settings_for, CellResult, Error, Requests};

/// A real run as data (what `elevator.run(...)` passes, as JSON). Exactly one of `fio` and
/// `fio_text` is given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RealSpec {
    /// A fio job file's path.
    pub fio: Option<String>,
    /// A fio job file's text.
    pub fio_text: Option<String>,
    /// Where `fio_text` came from, for errors (default `<input>`).
    pub origin: Option<String>,
    /// The file or block device (default: the job file's `filename`).
    pub target: Option<String>,
    /// Schedulers, run one after another on the same target (default `none`).
    pub sched: Vec<String>,
    /// Tunables for every scheduler that has them (`NAME`), or one (`SCHED.NAME`).
    pub set: BTreeMap<String, i64>,
    /// Seed of the jobs' random offsets (default 1, as `elevator run --seed`).
    pub seed: Option<u64>,
    /// Write over an existing file or a device carrying data (`--allow-overwrite`).
    pub allow_overwrite: bool,
    /// Stamp written sectors, check reads, read everything back at the end (`--verify`).
    pub verify: bool,
    /// Keep every request's record (Q, I, D, C, sector, size, process), as `sim` does.
    pub requests: bool,
}

/// Which file or device a run drives: `given` (`--target`), else the job file's one
/// `filename` (several distinct ones, or `a:b`, are refused: one run drives one target).
pub fn target_of(file: &FioFile, given: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(t) = given {
        return Ok(t.to_path_buf());
    }
    if let Some(d) = file.jobs.iter().find(|d| d.filenames.len() > 1) {
        return Err(file
            .job_error(
                d,
                "filename",
                format!(
                    "filename names {} files, as fio reads `a:b`; elevator run drives one target (give --target)",
                    d.filenames.len()
                ),
            )
            .into());
    }
    let names: Vec<&String> = file.jobs.iter().flat_map(|d| &d.filenames).collect();
    match names.first() {
        None => Err(Error::arg(
            "--target",
            "no target given and the job file names no filename",
        )),
        Some(first) if names.iter().any(|n| n != first) => Err(Error::arg(
            "--target",
            "the job file names several filenames; elevator run drives one target (give --target)",
        )),
        Some(first) => Ok(PathBuf::from(first.as_str())),
    }
}

/// Refuse a job file whose buffers (iodepth x bs for every job) exceed the memory available,
/// as fio fails to allocate them (ENOMEM), instead of aborting mid-run. The error names the
/// job with the largest share and its `iodepth` line.
pub fn check_buffer_memory(file: &FioFile) -> Result<(), Error> {
    let mut need: u128 = 0;
    let mut biggest: Option<(&FioJobDef, u128)> = None;
    for def in &file.jobs {
        // fio allocates its largest block (`td_max_bs`) per I/O of the depth.
        let all = u128::from(def.config.iodepth)
            * u128::from(def.config.max_size())
            * u128::from(def.numjobs);
        need += all;
        if biggest.is_none_or(|(_, b)| all > b) {
            biggest = Some((def, all));
        }
    }
    let available = elevator_real::target::mem_available().map(u128::from);
    if let (Some(avail), Some((def, all))) = (available, biggest) {
        if need > avail {
            return Err(file
                .job_error(
                    def,
                    "iodepth",
                    format!(
                        "iodepth {} x bs {} x numjobs {} needs {} MiB of I/O buffers ({} MiB for \
                         every job of the file) but {} MiB of memory is available (fio fails the \
                         same way: ENOMEM); lower iodepth or bs",
                        def.config.iodepth,
                        def.config.max_size(),
                        def.numjobs,
                        all >> 20,
                        need >> 20,
                        avail >> 20
                    ),
                )
                .into());
        }
    }
    Ok(())
}

/// The bytes the jobs' regions are resolved against on `path`: a block device's size; a new
/// file's [`bytes_for_new_target`]; an existing file's length, or more when every job gives
/// its region in bytes and one reaches past the end (fio extends such a file; the target's
/// open then lays out the rest, and asks for `--allow-overwrite` on a file elevator did not
/// lay out). A file of 6 bytes under a job of `size=1m` was refused as "past the device's
/// end (0 bytes)", `--allow-overwrite` or not.
pub fn target_capacity(path: &Path, file: &FioFile) -> Result<u64, Error> {
    let tgt_err = |e: target::TargetError| Error::arg("target", e.to_string());
    let existing = target::existing_size(path).map_err(tgt_err)?;
    let is_file = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    match existing {
        None => bytes_for_new_target(file),
        Some(size) if is_file => Ok(bytes_for_new_target(file).map_or(size, |n| n.max(size))),
        Some(size) => Ok(size),
    }
}

/// How many bytes a new target must hold: every job must give its region in bytes.
pub fn bytes_for_new_target(file: &FioFile) -> Result<u64, Error> {
    let mut need = 0u64;
    for def in &file.jobs {
        let c = &def.config;
        // fio reads `size=0` as no size given.
        let (Some(size @ 1..), None, None) = (c.size, c.size_frac, c.offset_frac) else {
            return Err(file
                .job_error(
                    def,
                    "",
                    "the target does not exist yet, so `size` (and `offset`) must be given in bytes",
                )
                .into());
        };
        // The last `numjobs` clone reaches furthest (`offset_increment`).
        if matches!(def.offset_increment, Some(fio_file::Increment::Fraction(_))) {
            return Err(file
                .job_error(
                    def,
                    "offset_increment",
                    "the target does not exist yet, so `offset_increment` must be given in bytes",
                )
                .into());
        }
        let start = def
            .clone_config(def.numjobs - 1, 0)
            .map_or(u64::MAX, |last| last.offset.unwrap_or(0));
        need = need.max(start.saturating_add(size));
    }
    Ok(need)
}

/// Whether the job changes data on the target: it writes, or trims (a discard destroys data
/// as surely as a write, so it asks the same permission).
fn def_writes(d: &FioJobDef) -> bool {
    d.config.rw.changes_data(d.config.rwmixread)
}

/// The regions of the jobs that write or trim (`jobs` as [`build_jobs`] returns them: each
/// definition's `numjobs` clones in order).
pub fn write_regions(file: &FioFile, jobs: &[RealJob]) -> Vec<ByteRange> {
    let writes = file
        .jobs
        .iter()
        .flat_map(|d| (0..d.numjobs).map(move |_| def_writes(d)));
    jobs.iter()
        .zip(writes)
        .filter(|(_, w)| *w)
        .map(|(j, _)| j.region)
        .collect()
}

/// The scheduler `name` names, or an error naming `--sched`.
fn find(name: &str) -> Result<SchedulerSpec, Error> {
    registry::find(name).ok_or_else(|| {
        let known: Vec<&str> = registry::all().iter().map(|i| i.name).collect();
        Error::arg(
            "--sched",
            format!(
                "{name:?}: no such scheduler{} (known: {})",
                elevator_workload::suggest::scheduler(name),
                known.join(", ")
            ),
        )
    })
}

/// Run `spec`: its job file on its target under each scheduler in turn (as `elevator run`
/// does), one [`CellResult`] per scheduler (`cell` its index, `device` the target's path,
/// `end_s` the run's wall time). Everything that can be checked (the job file, the
/// schedulers and their tunables, the buffers' memory, the target's safety) is checked before
/// the first I/O; a run that fails part way returns the error naming its scheduler. `stop`,
/// once set, ends the layout or the run early (the run's figures are then partial).
pub fn run(spec: &RealSpec, stop: Option<&'static AtomicBool>) -> Result<Vec<CellResult>, Error> {
    run_under(spec, stop, None)
}

/// As [`run`], under `scheds` instead of `spec.sched`'s registered names: any
/// [`SchedulerSpec`], registered or not (a policy written outside the registry gives its own
/// [`SchedulerInfo`](elevator_core::registry::SchedulerInfo)'s `spec()`;
/// docs/extending.md). `spec.sched` is not read. `spec.set` takes unscoped names only
/// (`quiet_ms`, set for every scheduler that has it, and each must apply to one); a
/// `SCHED.NAME` key is refused, since it names a registered scheduler.
pub fn run_specs(
    spec: &RealSpec,
    stop: Option<&'static AtomicBool>,
    scheds: &[SchedulerSpec],
) -> Result<Vec<CellResult>, Error> {
    if scheds.is_empty() {
        return Err(Error::arg("sched", "no scheduler given"));
    }
    run_under(spec, stop, Some(scheds))
}

/// Every key of `extra` is unscoped and a tunable of one of `infos` (for [`run_specs`]).
fn check_own_sets(extra: &Settings, infos: &[SchedulerSpec]) -> Result<(), Error> {
    for k in extra.names() {
        let arg = format!("set {k}");
        if k.contains('.') {
            return Err(Error::arg(
                arg,
                "a SCHED.NAME setting names a registered scheduler: give NAME alone",
            ));
        }
        if !infos.iter().any(|i| i.has_tunable(k)) {
            let names: Vec<&str> = infos.iter().map(|i| i.name).collect();
            return Err(Error::arg(
                arg,
                format!("none of the schedulers {names:?} has a tunable of that name"),
            ));
        }
    }
    Ok(())
}

/// [`run`] under `given`, or under `spec.sched`'s registered names when `None`.
fn run_under(
    spec: &RealSpec,
    stop: Option<&'static AtomicBool>,
    given: Option<&[SchedulerSpec]>,
) -> Result<Vec<CellResult>, Error> {
    let file = match (&spec.fio, &spec.fio_text) {
        (Some(p), None) => fio_file::read(Path::new(p))?,
        (None, Some(t)) => {
            fio_file::parse(Path::new(spec.origin.as_deref().unwrap_or("<input>")), t)?
        }
        _ => {
            return Err(Error::arg(
                "job",
                "give exactly one of a job file's path or its text",
            ))
        }
    };
    let target_path = target_of(&file, spec.target.as_deref().map(Path::new))?;
    // The job file as its own target was refused by `elevator run` only: here, with the
    // target's capacity now its jobs' sizes, `allow_overwrite=True` would have extended the
    // job file and written over it.
    if let Some(job) = &spec.fio {
        use std::os::unix::fs::MetadataExt;
        let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        if id(&target_path).is_some() && id(&target_path) == id(Path::new(job)) {
            return Err(Error::arg(
                "target",
                format!(
                    "{} is the job file this run reads: the target is written, which would \
                     destroy it (allow_overwrite does not cover an input); choose another target",
                    target_path.display()
                ),
            ));
        }
    }
    let (names, infos): (Vec<String>, Vec<SchedulerSpec>) = match given {
        Some(specs) => (
            specs.iter().map(|i| i.name.to_string()).collect(),
            specs.to_vec(),
        ),
        None => {
            let names = if spec.sched.is_empty() {
                vec!["none".to_string()]
            } else {
                spec.sched.clone()
            };
            let infos = names.iter().map(|n| find(n)).collect::<Result<_, _>>()?;
            (names, infos)
        }
    };
    // Each scheduler once, by name or alias (`["none", "noop"]` ran one twice), as
    // `elevator run --sched` since round 9.
    for (i, a) in infos.iter().enumerate() {
        if let Some(j) = infos[..i].iter().position(|b| b.name == a.name) {
            return Err(Error::arg(
                "sched",
                format!(
                    "{:?} and {:?} name one scheduler ({}): give each once",
                    elevator_workload::fio_file::excerpt(&names[j]),
                    elevator_workload::fio_file::excerpt(&names[i]),
                    a.name
                ),
            ));
        }
    }
    let mut extra = Settings::new();
    for (k, v) in &spec.set {
        extra.set(k, *v);
    }
    match given {
        Some(_) => check_own_sets(&extra, &infos)?,
        None => crate::grid::check_sets(&extra, &names)?,
    }
    check_buffer_memory(&file)?;
    let ramp = ramp_time(&file)?;
    let seed = spec.seed.unwrap_or(1);
    let tgt_err = |e: target::TargetError| Error::arg("target", e.to_string());
    let capacity = target_capacity(&target_path, &file)?;
    let mut groups = GroupTree::new();
    let (probe, _) = build_jobs(&file, capacity, seed, &mut groups)?;
    let rotational = target::rotational(&target_path);
    for info in &infos {
        let settings = info.on_device(settings_for(info, &extra), rotational);
        info.build(&settings, &groups)
            .map_err(|e| Error::arg(format!("scheduler {}", info.name), e.to_string()))?;
    }
    let need = probe.iter().map(|j| j.region.end).max().unwrap_or(0);
    let regions = write_regions(&file, &probe);
    drop(probe);
    let writes = !regions.is_empty() || spec.verify;
    let tgt = target::open(
        &target_path,
        OpenSpec {
            writes,
            allow_overwrite: spec.allow_overwrite,
            need_bytes: need,
            write_regions: regions,
            stop,
        },
    )
    .map_err(tgt_err)?;
    let name = target_path.display().to_string();
    let mut out = Vec::new();
    let result: Result<(), Error> = (|| {
        for (n, info) in infos.iter().enumerate() {
            let settings = info.on_device(settings_for(info, &extra), rotational);
            let mut groups = GroupTree::new();
            let (jobs, _) = build_jobs(&file, capacity, seed, &mut groups)?;
            let mut sched = info
                .build(&settings, &groups)
                .map_err(|e| Error::arg(format!("scheduler {}", info.name), e.to_string()))?;
            let handle = tgt
                .file
                .try_clone()
                .map_err(|e| Error::io(&target_path, format!("duplicate the handle: {e}")))?;
            let mut backend =
                UringBackend::new(handle, tgt.size, elevator_real::uring::DEFAULT_ENTRIES)
                    .map_err(|e| {
                        Error::io(
                            &target_path,
                            format!(
                                "set up io_uring (is it disabled by kernel.io_uring_disabled?): {e}"
                            ),
                        )
                    })?;
            let clock = elevator_real::MonotonicClock::start();
            let opts = RunOptions {
                verify: spec.verify,
                stop,
                time_limit: None,
                // As `elevator run`: the verify stamps differ from run to run.
                run_id: seed ^ (n as u64) << 48 ^ 0x5eed,
                seed,
                ramp,
                request_log: spec.requests,
                progress: None,
                ties_in_job_order: false,
                groups: groups.clone(),
                non_rotational: rotational == Some(false),
            };
            let report =
                elevator_real::run_with_clock(&mut backend, &clock, sched.as_mut(), jobs, &opts)
                    .map_err(|f| {
                        Error::arg(format!("scheduler {}", info.name), f.error.to_string())
                    })?;
            out.push(CellResult {
                cell: n as u64,
                // As the grid's cells: the name as given (`none`, not its canonical `noop`).
                scheduler: names[n].clone(),
                coordinates: Vec::new(),
                seed,
                device: name.clone(),
                end_s: report.elapsed.as_secs_f64(),
                jobs: report
                    .jobs
                    .iter()
                    .map(|j| j.metrics.summary(&j.name, &j.group, report.elapsed))
                    .collect(),
                requests: spec.requests.then(|| Requests {
                    jobs: report.jobs.iter().map(|j| j.name.clone()).collect(),
                    records: report.requests.iter().map(sim_record).collect(),
                }),
            });
        }
        Ok(())
    })();
    // The file is still ours (only our jobs wrote it): the next run reuses it.
    let remembered = tgt.remember();
    result?;
    remembered.map_err(tgt_err)?;
    Ok(out)
}

/// A real request's record in the simulator's shape, so that `run` and `sim` give one
/// requests table: the times are the executor's clock from the run's start.
fn sim_record(r: &elevator_real::exec::RequestRecord) -> elevator_sim::engine::RequestRecord {
    elevator_sim::engine::RequestRecord {
        job: u32::try_from(r.job).unwrap_or(u32::MAX),
        ctx: r.ctx,
        op: r.op,
        sector: r.sector,
        sectors: r.sectors,
        inserted: r.inserted,
        dispatched: r.dispatched,
        tagged: r.tagged,
        completed: r.completed,
        queued: r.waiting,
        in_flight: r.in_flight,
        merged: r.merged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::registry::{Kind, SchedulerInfo};
    use elevator_core::TunableError;

    fn parse(text: &str) -> FioFile {
        fio_file::parse(Path::new("t.fio"), text).unwrap()
    }

    #[test]
    fn the_target_is_the_given_one_else_the_one_filename() {
        let f = parse("[a]\nrw=read\nbs=4k\nsize=1m\nfilename=/tmp/x\n");
        assert_eq!(target_of(&f, None).unwrap(), PathBuf::from("/tmp/x"));
        assert_eq!(
            target_of(&f, Some(Path::new("/tmp/y"))).unwrap(),
            PathBuf::from("/tmp/y")
        );
        let f = parse("[a]\nrw=read\nbs=4k\nsize=1m\nfilename=/tmp/x:/tmp/y\n");
        let Err(Error::Input(e)) = target_of(&f, None) else {
            panic!("a located error")
        };
        assert_eq!((e.line(), e.field.as_str()), (Some(5), "filename"));
        let f = parse("[a]\nrw=read\nbs=4k\nsize=1m\n");
        assert!(target_of(&f, None)
            .unwrap_err()
            .to_string()
            .contains("no filename"));
    }

    /// fio's `sync=` opens a job's file O_SYNC / O_DSYNC: its direct writes carry `RWF_SYNC`
    /// / `RWF_DSYNC` to the executor (buffered, the job's own flushes stand for it); buffered
    /// and more than one deep, the job is refused on its `sync` line.
    #[test]
    fn sync_jobs_write_with_their_rw_flags() {
        let f = parse(
            "[global]\ndirect=1\nrw=randwrite\nbs=4k\nsize=1m\n[a]\nsync=dsync\n\
             [b]\nsync=1\n[c]\n[d]\nsync=1\ndirect=0\n",
        );
        let mut groups = GroupTree::new();
        let (jobs, _) = build_jobs(&f, 1 << 20, 1, &mut groups).unwrap();
        let flags: Vec<i32> = jobs.iter().map(|j| j.rw_flags).collect();
        // RWF_DSYNC (2) and RWF_SYNC (4), as include/uapi/linux/fs.h numbers them.
        assert_eq!(flags, [2, 4, 0, 0]);
        let f = parse("[a]\nrw=write\nsize=1m\nsync=1\niodepth=4\n");
        let e = build_jobs(&f, 1 << 20, 1, &mut GroupTree::new())
            .err()
            .unwrap();
        assert_eq!((e.line(), e.field.as_str()), (Some(4), "sync"), "{e}");
    }

    /// A trim destroys data as a write does: a trimming job's region asks the same write
    /// permission (and overwrite checks) as a writer's.
    #[test]
    fn trimming_jobs_have_write_regions_as_writers_do() {
        let f = parse(
            "[r]\nrw=randread\nbs=4k\nsize=1m\n[t]\nrw=randtrim\nbs=4k\nsize=1m\noffset=1m\n\
             [tw]\nrw=trimwrite\nbs=4k\nsize=1m\noffset=2m\n",
        );
        let mut groups = GroupTree::new();
        let (jobs, _) = build_jobs(&f, 3 << 20, 1, &mut groups).unwrap();
        let r = |start: u64| ByteRange {
            start: start << 20,
            end: (start + 1) << 20,
        };
        assert_eq!(write_regions(&f, &jobs), vec![r(1), r(2)]);
    }

    #[test]
    fn a_new_target_needs_sizes_in_bytes_and_only_writers_have_write_regions() {
        let f = parse("[r]\nrw=read\nbs=4k\nsize=1m\n[w]\nrw=write\nbs=4k\nsize=1m\noffset=1m\n");
        assert_eq!(bytes_for_new_target(&f).unwrap(), 2 << 20);
        let mut groups = GroupTree::new();
        let (jobs, _) = build_jobs(&f, 2 << 20, 1, &mut groups).unwrap();
        assert_eq!(
            write_regions(&f, &jobs),
            vec![ByteRange {
                start: 1 << 20,
                end: 2 << 20
            }]
        );
        let f = parse("[r]\nrw=read\nbs=4k\nsize=50%\n");
        let Err(Error::Input(e)) = bytes_for_new_target(&f) else {
            panic!("a located error")
        };
        assert_eq!(e.line(), Some(1));
        // `offset_increment`: the last clone's region ends furthest, and each clone's
        // region starts that much after the one before.
        let f = parse("[w]\nrw=write\nbs=4k\nsize=1m\nnumjobs=3\noffset_increment=2m\n");
        assert_eq!(bytes_for_new_target(&f).unwrap(), 5 << 20);
        let (jobs, _) = build_jobs(&f, 5 << 20, 1, &mut GroupTree::new()).unwrap();
        let starts: Vec<u64> = jobs.iter().map(|j| j.region.start).collect();
        assert_eq!(starts, [0, 2 << 20, 4 << 20]);
        let f = parse("[w]\nrw=write\nbs=4k\nsize=1m\nnumjobs=2\noffset_increment=10%\n");
        let Err(Error::Input(e)) = bytes_for_new_target(&f) else {
            panic!("a located error")
        };
        assert_eq!((e.line(), e.field.as_str()), (Some(6), "offset_increment"));
    }

    /// Round 10 (issue 32): a file smaller than its jobs is sized by them (it was "past the
    /// device's end (0 bytes)"), and `size=0` is no size, as fio reads it.
    #[test]
    fn an_existing_file_is_sized_by_its_jobs_when_they_reach_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        std::fs::write(&t, "hello\n").unwrap();
        let f = parse("[w]\nrw=write\nbs=4k\nsize=1m\n");
        assert_eq!(target_capacity(&t, &f).unwrap(), 1 << 20);
        std::fs::write(&t, vec![1u8; 4 << 20]).unwrap();
        assert_eq!(target_capacity(&t, &f).unwrap(), 4 << 20);
        let f = parse("[w]\nrw=write\nbs=4k\nsize=50%\n");
        assert_eq!(target_capacity(&t, &f).unwrap(), 4 << 20);
        let f = parse("[w]\nrw=write\nbs=4k\nsize=0\n");
        assert!(bytes_for_new_target(&f).is_err(), "size=0 is no size");
    }

    /// A policy outside the registry: noop's decisions under a name of its own.
    struct OwnFifo(elevator_core::noop::Noop);

    impl elevator_core::Scheduler for OwnFifo {
        fn name(&self) -> &'static str {
            "own-fifo"
        }
        fn insert(&mut self, rq: elevator_core::Request, now: elevator_core::Nanos) {
            self.0.insert(rq, now)
        }
        fn dispatch(&mut self, now: elevator_core::Nanos) -> elevator_core::Dispatch {
            self.0.dispatch(now)
        }
        fn complete(&mut self, rq: &elevator_core::Request, now: elevator_core::Nanos) {
            self.0.complete(rq, now)
        }
        fn queued(&self) -> usize {
            self.0.queued()
        }
        fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
            self.0.set_tunable(name, value)
        }
    }

    static OWN_FIFO: SchedulerInfo = SchedulerInfo {
        name: "own-fifo",
        aliases: &[],
        summary: "noop under another name, outside the registry",
        tunables: &[],
        kind: Kind::Policy(|s, _| {
            Ok(Box::new(OwnFifo(elevator_core::noop::Noop::from_settings(
                s,
            )?)))
        }),
    };

    #[test]
    fn run_specs_runs_a_policy_outside_the_registry_on_a_temporary_file() {
        assert!(registry::find("own-fifo").is_none());
        let dir = tempfile::tempdir().unwrap();
        let spec = RealSpec {
            fio_text: Some("[r]\nrw=read\nbs=4k\nsize=256k\n".into()),
            target: Some(dir.path().join("t").to_str().unwrap().into()),
            ..RealSpec::default()
        };
        let by_name = RealSpec {
            sched: vec!["own-fifo".into()],
            ..spec.clone()
        };
        let e = run(&by_name, None).unwrap_err().to_string();
        assert!(e.contains("no such scheduler"), "{e}");
        let mut scoped = spec.clone();
        scoped.set.insert("own-fifo.x".into(), 1);
        let e = run_specs(&scoped, None, &[OWN_FIFO.spec()]).unwrap_err();
        assert!(e.to_string().contains("SCHED.NAME"), "{e}");
        let mut unknown = spec.clone();
        unknown.set.insert("quantum".into(), 1);
        let e = run_specs(&unknown, None, &[OWN_FIFO.spec()]).unwrap_err();
        assert!(e.to_string().contains("has a tunable"), "{e}");
        let cells = match run_specs(&spec, None, &[OWN_FIFO.spec()]) {
            Ok(c) => c,
            Err(e) if e.to_string().contains("O_DIRECT") || e.to_string().contains("io_uring") => {
                eprintln!("skipping: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].scheduler, "own-fifo");
        assert_eq!(cells[0].jobs[0].read.ios, 64);
    }

    /// Round 10: `elevator.run` of a job file onto itself, or of one scheduler twice (by
    /// its alias), is refused before the target is touched.
    #[test]
    fn run_refuses_its_job_file_as_target_and_a_scheduler_twice() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("w.fio");
        std::fs::write(&job, "[w]\nrw=write\nbs=4k\nsize=1m\n").unwrap();
        let p = |p: &Path| p.to_str().unwrap().to_string();
        let spec = RealSpec {
            fio: Some(p(&job)),
            target: Some(p(&job)),
            allow_overwrite: true,
            ..RealSpec::default()
        };
        let e = run(&spec, None).unwrap_err().to_string();
        assert!(e.contains("job file"), "{e}");
        assert!(std::fs::read_to_string(&job).unwrap().starts_with("[w]"));
        let t = dir.path().join("t");
        let spec = RealSpec {
            fio: Some(p(&job)),
            target: Some(p(&t)),
            sched: vec!["none".into(), "noop".into()],
            ..RealSpec::default()
        };
        let e = run(&spec, None).unwrap_err().to_string();
        assert!(e.contains("name one scheduler"), "{e}");
        assert!(!t.exists(), "refused before the target was made");
    }

    #[test]
    fn buffers_larger_than_memory_are_refused_at_the_iodepth_line() {
        let f = parse("[big]\nrw=randread\nbs=1g\niodepth=4096\nsize=1m\n");
        let Err(Error::Input(e)) = check_buffer_memory(&f) else {
            panic!("4 TiB of buffers refused")
        };
        assert_eq!((e.line(), e.field.as_str()), (Some(4), "iodepth"));
    }
}
