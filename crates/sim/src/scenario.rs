//! Scenario files: a drive, groups, jobs, a seed, as TOML.
//!
//! ```toml
//! name = "dependent reads vs a streaming write"
//! drive = "laptop-4200"        # a built-in drive, or a drive TOML path relative to this file
//! seed = 1
//! duration_s = 600 # optional time limit (simulated seconds)
//! write_cache = false # optional: the drive's write cache on or off (hdparm -W);
//! # or "read-priority" / "before-next-command": on, with that
//! # destage mode (the drive's cache.destage)
//! wakeup_us = 0 # optional: a process sees its I/O complete this long
//! # after the drive finishes it (default 0)
//!
//! [[group]]
//! path = "/a" # nested groups: "/a/b" (missing parents are created)
//! weight = 500 # omitted: the policy's default (blkio.weight under cfq)
//! io_weight = 100 # cgroup v2 io.weight (io.cost), 1..=10000
//! io_bfq_weight = 100 # io.bfq.weight (bfq; over `weight`), 1..=1000
//! io_latency_us = 5000         # io.latency target=, microseconds
//! io_max = "rbps=2097152 wiops=120"  # io.max, as written after MAJ:MIN ("max" = no limit)
//!
//! io_cost_model = "ctrl=user model=linear rbps=..."  # optional, device-level io.cost.model
//! io_cost_qos = "enable=1 ctrl=user rpct=95 ..."     # optional, device-level io.cost.qos
//!
//! [tunables.anticipatory]      # per-policy tunables, sysfs names
//! antic_expire = 6
//!
//! [[job]]
//! name = "reader"
//! kind = "dependent-reader"    # the job's own fields follow (see elevator-workload)
//! group = "/a" # default "/"
//! prio = "be/4" # rt/N, be/N or idle; default be/4
//! start_s = 0.0
//! foreground = true # the run ends when every foreground job is done
//! ```
//!
//! Every error names the file, the line and the field. Paths (the drive, a job's `trace`)
//! resolve against the scenario file's directory. Hostile input (docs/reliability.md): the
//! file is read up to [`MAX_SPEC_BYTES`](crate::MAX_SPEC_BYTES), holds at most [`MAX_JOBS`]
//! jobs and [`MAX_GROUPS`] groups, and names no simulated time past [`MAX_SIMULATED_S`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use elevator_core::group::{IoCostDevice, IoMax};
use elevator_core::{
    registry, GroupId, GroupTree, IoClass, IoPrio, Nanos, Scheduler, Settings, TunableError,
};
use elevator_workload::jobs::fio::FioJob;
use elevator_workload::spec::BuildEnv;
use elevator_workload::{InputError, JobSpec};
use serde::Deserialize;

use crate::device::Device;
use crate::drive::DriveModel;
use crate::engine::{JobSlot, Simulation};
use crate::hdd::spec::{Destage, WritePolicy};
use crate::spec_file::{self, find_line};
use crate::work::Span;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: Option<String>,
    description: Option<String>,
    drive: String,
    #[serde(default = "default_seed")]
    seed: u64,
    duration_s: Option<f64>,
    wakeup_us: Option<f64>,
    write_cache: Option<toml::Value>,
    #[serde(default, rename = "group")]
    groups: Vec<GroupEntry>,
    io_cost_model: Option<String>,
    io_cost_qos: Option<String>,
    #[serde(default)]
    tunables: BTreeMap<String, BTreeMap<String, i64>>,
    #[serde(rename = "job")]
    jobs: Vec<JobEntry>,
}

/// The most `[[job]]` tables a scenario may hold.
pub const MAX_JOBS: usize = 10_000;
/// The most `[[group]]` tables a scenario may hold.
pub const MAX_GROUPS: usize = 10_000;
/// The latest simulated time a scenario may name (`start_s`, `duration_s`, `wakeup_us`),
/// seconds: one day.
pub const MAX_SIMULATED_S: f64 = 86_400.0;

fn default_seed() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupEntry {
    path: String,
    weight: Option<u32>,
    io_weight: Option<u32>,
    io_bfq_weight: Option<u32>,
    io_latency_us: Option<f64>,
    io_max: Option<String>,
}

#[derive(Debug, Deserialize)]
struct JobEntry {
    name: String,
    group: Option<String>,
    prio: Option<String>,
    start_s: Option<f64>,
    foreground: Option<bool>,
    #[serde(flatten)]
    spec: JobSpec,
}

/// Files of the sample a compile of more files is built at when loaded, and whose work tells
/// a floor of the whole's ([`Scenario::check_work`]).
pub const COMPILE_SAMPLE_FILES: u32 = 10_000;

/// What the sample's work a file is divided by to give a floor of the whole's: the measured
/// rate grows with the files (624 to 653 units a file from 10^3 to 10^5), and the sample's
/// is itself told from a probe of its start.
const COMPILE_SAMPLE_MARGIN: f64 = 2.0;

/// A compile of more than [`COMPILE_SAMPLE_FILES`] files at that many (its directories at
/// most that many too); `None` for any other job, and for counts past the compile's bound
/// (`MAX_COUNT`), which its own build refuses before laying anything out.
fn compile_sample(spec: &JobSpec) -> Option<JobSpec> {
    use elevator_workload::jobs::compile::MAX_COUNT;
    match spec {
        JobSpec::Compile(c)
            if c.files > COMPILE_SAMPLE_FILES && c.files <= MAX_COUNT && c.dirs <= MAX_COUNT =>
        {
            let mut c = c.clone();
            c.files = COMPILE_SAMPLE_FILES;
            c.dirs = c.dirs.min(COMPILE_SAMPLE_FILES);
            Some(JobSpec::Compile(c))
        }
        _ => None,
    }
}

/// A job of a scenario, ready to build.
#[derive(Clone, Debug)]
pub struct ScenarioJob {
    /// Unique name.
    pub name: String,
    /// Group path.
    pub group: String,
    /// Default priority.
    pub prio: IoPrio,
    /// Start time.
    pub start: Nanos,
    /// Whether the run waits for it.
    pub foreground: bool,
    /// What it does.
    pub spec: JobSpec,
}

/// A loaded scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Where it came from (a path, or `builtin:NAME`).
    pub origin: String,
    /// Its name.
    pub name: String,
    /// One paragraph on what it shows.
    pub description: String,
    /// The drive (rotational or SSD).
    pub drive: DriveModel,
    /// Seed for every random choice of the jobs.
    pub seed: u64,
    /// Time limit, if any.
    pub limit: Option<Nanos>,
    /// Delay between a completion and its job seeing it
    /// ([`Simulation::set_wakeup_latency`]).
    pub wakeup: Nanos,
    /// The group tree.
    pub groups: GroupTree,
    /// Tunables per policy name.
    pub tunables: BTreeMap<String, Settings>,
    /// The jobs.
    pub jobs: Vec<ScenarioJob>,
    /// The text it was parsed from, to name lines in [`Scenario::check_work`]'s errors.
    text: std::sync::Arc<str>,
}

impl Scenario {
    /// Load a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, InputError> {
        let text = crate::spec_file::read(path)?;
        Scenario::parse(&text, &path.display().to_string(), path.parent())
    }

    /// Parse scenario text; `origin` names it in errors; drive paths resolve against `dir`.
    pub fn parse(text: &str, origin: &str, dir: Option<&Path>) -> Result<Scenario, InputError> {
        let err = |line: Option<usize>, field: Option<String>, message: String| {
            InputError::new(origin, message)
                .on_line(line)
                .in_field(field.as_deref().unwrap_or(""))
        };
        let file: ScenarioFile =
            toml::from_str(text).map_err(|e| spec_file::toml_error(&e, text, origin))?;
        let line_of = |key: &str, value: &str| find_line(text, key, value);
        if file.jobs.len() > MAX_JOBS {
            return Err(err(
                None,
                Some("job".into()),
                format!(
                    "{} jobs: a scenario holds at most {MAX_JOBS}",
                    file.jobs.len()
                ),
            ));
        }
        if file.groups.len() > MAX_GROUPS {
            return Err(err(
                None,
                Some("group".into()),
                format!(
                    "{} groups: a scenario holds at most {MAX_GROUPS}",
                    file.groups.len()
                ),
            ));
        }

        let drive = if let Some(d) = DriveModel::builtin(&file.drive) {
            d
        } else {
            let p = match dir {
                Some(d) => d.join(&file.drive),
                None => PathBuf::from(&file.drive),
            };
            // A link to itself or to nowhere is read and told as such, not as missing.
            if p.symlink_metadata().is_err() {
                return Err(err(
                    line_of("drive", &file.drive),
                    Some("drive".into()),
                    format!(
                        "{:?} is neither a built-in drive ({}) nor a drive file{}",
                        file.drive,
                        DriveModel::builtin_names().join(", "),
                        elevator_workload::suggest::did_you_mean(
                            &file.drive,
                            DriveModel::builtin_names().iter().copied()
                        )
                    ),
                ));
            }
            DriveModel::load(&p).map_err(|e| {
                err(
                    line_of("drive", &file.drive),
                    Some("drive".into()),
                    e.to_string(),
                )
            })?
        };

        let mut drive = drive;
        let ssd_cache = |line: Option<usize>, name: &str| {
            err(
                line,
                Some("write_cache".into()),
                format!("drive {name:?} is an SSD: write_cache applies to rotational drives"),
            )
        };
        match (&file.write_cache, &mut drive) {
            (None, _) => {}
            (Some(_), DriveModel::Ssd(s)) => {
                return Err(ssd_cache(find_line(text, "write_cache", ""), &s.name));
            }
            (Some(wc), DriveModel::Hdd(drive)) => match wc {
                toml::Value::Boolean(false) => drive.cache.write_policy = WritePolicy::WriteThrough,
                toml::Value::Boolean(true) => drive.cache.write_policy = WritePolicy::WriteBack,
                toml::Value::String(m) => {
                    drive.cache.destage = match m.as_str() {
                        "read-priority" => Destage::ReadPriority,
                        "before-next-command" => Destage::BeforeNextCommand,
                        _ => {
                            return Err(err(
                                line_of("write_cache", m),
                                Some("write_cache".into()),
                                format!(
                                    "{:?} is not true, false, \"read-priority\" or \
                                     \"before-next-command\"",
                                    short(m)
                                ),
                            ))
                        }
                    };
                    drive.cache.write_policy = WritePolicy::WriteBack;
                    drive.check().map_err(|e| {
                        err(
                            line_of("write_cache", m),
                            Some("write_cache".into()),
                            e.to_string(),
                        )
                    })?;
                }
                other => {
                    return Err(err(
                        line_of("write_cache", ""),
                        Some("write_cache".into()),
                        format!(
                            "{} is not true, false, \"read-priority\" or \"before-next-command\"",
                            short(&other.to_string())
                        ),
                    ))
                }
            },
        }

        let mut groups = GroupTree::new();
        for g in &file.groups {
            if g.weight == Some(0) {
                return Err(err(
                    find_assignment(text, "weight", "0").or_else(|| line_of("path", &g.path)),
                    Some("group.weight".into()),
                    format!("group {:?}: a weight is at least 1", short(&g.path)),
                ));
            }
            let id = groups.add(&g.path, g.weight).map_err(|e| {
                err(
                    line_of("path", &g.path),
                    Some("group.path".into()),
                    e.to_string(),
                )
            })?;
            let field_err = |key: &str, message: String| {
                // Looked up only for an error: a scan of the text per group made loading
                // 1,000 groups of 4 KB paths take 35 s (groups x file size).
                let at = line_of("path", &g.path);
                err(
                    at.and_then(|l| find_in_table(text, l, key)).or(at),
                    Some(format!("group.{key}")),
                    format!("group {:?}: {message}", short(&g.path)),
                )
            };
            let io = groups.io_mut(id);
            io.weight = g.io_weight;
            io.bfq_weight = g.io_bfq_weight;
            if let Some(us) = g.io_latency_us {
                // io.latency's target is written in whole microseconds (1e-300 became a
                // 0 ns target, refused as "not above 0" although it was given above 0).
                if !(1.0..=MAX_SIMULATED_S * 1e6).contains(&us) {
                    return Err(field_err(
                        "io_latency_us",
                        format!(
                            "{us:?} is not a target in [1, {:e}] microseconds",
                            MAX_SIMULATED_S * 1e6
                        ),
                    ));
                }
                io.latency_target = Some(Nanos::from_secs_f64(us / 1e6));
            }
            if let Some(m) = &g.io_max {
                io.max = IoMax::parse(m).map_err(|e| field_err("io_max", e))?;
            }
            if let Err(e) = elevator_core::qos::validate(&groups) {
                let key = match e.field {
                    "io.weight" => "io_weight",
                    "io.bfq.weight" => "io_bfq_weight",
                    "io.latency" => "io_latency_us",
                    _ => "io_max",
                };
                return Err(field_err(key, format!("{}: {}", e.field, e.reason)));
            }
        }
        if file.io_cost_model.is_some() || file.io_cost_qos.is_some() {
            groups.set_io_cost(IoCostDevice {
                model: file.io_cost_model.clone(),
                qos: file.io_cost_qos.clone(),
            });
            elevator_core::qos::validate(&groups).map_err(|e| {
                let key = if e.field == "io.cost.model" {
                    "io_cost_model"
                } else {
                    "io_cost_qos"
                };
                err(find_line(text, key, ""), Some(key.into()), e.to_string())
            })?;
        }

        let mut tunables = BTreeMap::new();
        for (sched, values) in &file.tunables {
            let info = registry::find(sched).ok_or_else(|| {
                err(
                    find_line(text, &format!("[tunables.{sched}]"), ""),
                    Some(format!("tunables.{sched}")),
                    format!("no scheduler named {sched:?} (see `elevator list`)"),
                )
            })?;
            let mut s = Settings::new();
            for (k, v) in values {
                s.set(k.clone(), *v);
            }
            info.validate(&s).map_err(|e| {
                let field = match &e {
                    TunableError::Unknown { name, .. } | TunableError::OutOfRange { name, .. } => {
                        Some(format!("tunables.{sched}.{name}"))
                    }
                    _ => Some(format!("tunables.{sched}")),
                };
                let key = field
                    .as_deref()
                    .unwrap_or("")
                    .rsplit('.')
                    .next()
                    .unwrap_or("");
                err(find_line(text, key, ""), field, e.to_string())
            })?;
            tunables.insert(info.name.to_string(), s);
        }

        let mut jobs = Vec::with_capacity(file.jobs.len());
        let mut names = std::collections::HashSet::new();
        for mut j in file.jobs {
            if !names.insert(j.name.clone()) {
                return Err(err(
                    line_of("name", &j.name),
                    Some("job.name".into()),
                    format!("two jobs are named {:?}", j.name),
                ));
            }
            let group = j.group.unwrap_or_else(|| "/".to_string());
            if groups.lookup(&group).is_none() {
                groups.add(&group, None).map_err(|e| {
                    err(
                        line_of("group", &group),
                        Some("job.group".into()),
                        e.to_string(),
                    )
                })?;
            }
            let prio = match &j.prio {
                None => IoPrio::default(),
                Some(p) => parse_prio(p).ok_or_else(|| {
                    err(
                        line_of("prio", p),
                        Some("job.prio".into()),
                        format!("{p:?} is not rt/N, be/N or idle (N in 0..=7)"),
                    )
                })?,
            };
            let start = match j.start_s {
                Some(s) if !(0.0..=MAX_SIMULATED_S).contains(&s) => {
                    return Err(err(
                        find_line(text, "start_s", &s.to_string())
                            .or_else(|| find_line(text, "start_s", "")),
                        Some("job.start_s".into()),
                        format!(
                        "{s} is not a time in 0..={MAX_SIMULATED_S} s (one day of simulated time)"
                    ),
                    ))
                }
                Some(s) => Nanos::from_secs_f64(s),
                None => Nanos::ZERO,
            };
            if let Some(d) = dir {
                j.spec.resolve_paths(d);
            }
            jobs.push(ScenarioJob {
                name: j.name,
                group,
                prio,
                start,
                foreground: j.foreground.unwrap_or(true),
                spec: j.spec,
            });
        }
        if jobs.is_empty() {
            return Err(err(
                None,
                Some("job".into()),
                "a scenario needs at least one [[job]]".into(),
            ));
        }
        let limit = match file.duration_s {
            Some(d) if !(d > 0.0 && d <= MAX_SIMULATED_S) => {
                return Err(err(
                    find_line(text, "duration_s", ""),
                    Some("duration_s".into()),
                    format!(
                        "{d} is not a number of seconds in (0, {MAX_SIMULATED_S}] (one day of simulated time)"
                    ),
                ))
            }
            Some(d) => Some(Nanos::from_secs_f64(d)),
            None => None,
        };
        let wakeup = match file.wakeup_us {
            Some(w) if !(0.0..=MAX_SIMULATED_S * 1e6).contains(&w) => {
                return Err(err(
                    find_line(text, "wakeup_us", ""),
                    Some("wakeup_us".into()),
                    format!(
                        "{w} is not a time in 0..={:e} microseconds (one day of simulated time)",
                        MAX_SIMULATED_S * 1e6
                    ),
                ))
            }
            Some(w) => Nanos::from_secs_f64(w / 1e6),
            None => Nanos::ZERO,
        };
        if limit.is_none() {
            // A foreground job that never finishes by itself would keep the run going forever.
            if let Some((j, field)) = jobs
                .iter()
                .filter(|j| j.foreground)
                .find_map(|j| j.spec.endless_by().map(|f| (j, f)))
            {
                return Err(err(
                    line_of("name", &j.name),
                    Some(format!("job.{field}")),
                    format!(
                        "job {:?} never finishes by itself (`{field}`) and the scenario has no duration_s: give duration_s, bound the job, or make it foreground = false",
                        j.name
                    ),
                ));
            }
        }
        if limit.is_none() && jobs.iter().all(|j| !j.foreground) {
            return Err(err(
                None,
                Some("duration_s".into()),
                "every job is in the background: give duration_s".into(),
            ));
        }
        // Build every job once now so configuration errors surface at load time; a compile
        // of more than COMPILE_SAMPLE_FILES files is built at that size here (its tree of
        // 10^6 files takes 20 s to lay out), and whole by `check_work` once its work, told
        // from the sample, is within the bound.
        let capacity = drive.capacity_sectors();
        for j in &jobs {
            let spec = compile_sample(&j.spec);
            spec.as_ref()
                .unwrap_or(&j.spec)
                .build(&BuildEnv::new(capacity, file.seed, j.name.clone()))
                .map_err(|e| {
                    let at = line_of("name", &j.name);
                    err(
                        at.and_then(|l| find_in_table(text, l, e.field)).or(at),
                        Some(format!("job.{}", e.field)),
                        format!("job {:?}: {}", j.name, e.reason),
                    )
                })?;
        }
        Ok(Scenario {
            origin: origin.to_string(),
            name: file.name.unwrap_or_else(|| origin.to_string()),
            description: file.description.unwrap_or_default(),
            drive,
            seed: file.seed,
            limit,
            wakeup,
            groups,
            tunables,
            jobs,
            text: text.into(),
        })
    }

    /// Refuse a scenario whose run implies more than `max_ios` I/Os ([`crate::work`]), naming
    /// the line and field that set the work: the sizes of its `kind = "fio"` jobs without a
    /// `runtime_ms` (`number_ios`, `io_size`, else a pass over `size`, as a job file's are
    /// counted), then its simulated span (`duration_s`, else the latest end a fio job's
    /// `start_s` + `ramp_ms` + `runtime_ms` sets) at the rate a probe of its start runs
    /// under none, and the work of its compile, dependent-reader and stream-writer jobs at the
    /// share of it their first I/Os did ([`crate::work::implied_ios`]). A day of 512-byte
    /// reads at a drive's cache rate implies 10^9 I/Os, hours of real time; so do a million
    /// compiled files through a small page cache, or a stream writer's `total_bytes` of
    /// petabytes; so does a `trace` job of 10^9 requests (counted when it was built).
    /// Start-up jobs are bounded by their inputs (2^20 requests). Returns the I/Os implied (0
    /// when neither sizes, a span nor a counting job implies any). The estimate is the pace of
    /// the run's start: a run that does more is stopped at `max_ios` by
    /// [`Simulation::bound_ios`], which every caller of this sets.
    pub fn check_work(&self, max_ios: u64) -> Result<u64, InputError> {
        let err = |job: Option<&ScenarioJob>, key: &str, message: String| {
            self.error_at(job, key, message)
        };
        let how = |max_ios: u64| {
            format!(
                "the scenario implies more than {max_ios} I/Os (the simulator computes a few \
                 hundred thousand a second); bound it, or run it as asked with `elevator sim \
                 --max-ios N` (Python: `max_ios=N`)"
            )
        };
        let capacity = self.drive.capacity_sectors();
        let mut total = 0u64;
        let mut span: Option<(Nanos, Option<&ScenarioJob>)> = self.limit.map(|l| (l, None));
        for j in &self.jobs {
            let JobSpec::Fio(cfg) = &j.spec else { continue };
            if let Some(runtime) = cfg.runtime_ms {
                let end = j.start + Nanos::from_ms_f64(runtime.saturating_add(cfg.ramp_ms) as f64);
                if self.limit.is_none() && span.is_none_or(|(s, _)| end > s) {
                    span = Some((end, Some(j)));
                }
                continue;
            }
            // The scenario's `duration_s` stops every job: the probe below tells the work
            // within it. Counted by its size, a fio job of the whole device under
            // `duration_s = 0.5` was refused blaming `job.size`, which it did not give.
            if self.limit.is_some() {
                continue;
            }
            let env = BuildEnv::new(capacity, self.seed, j.name.clone());
            let Some(ios) = FioJob::new(cfg.clone(), &env)
                .ok()
                .and_then(|f| f.io_limit())
            else {
                continue;
            };
            total = total.saturating_add(ios);
            if total > max_ios {
                let key = match (cfg.number_ios, cfg.io_size) {
                    (Some(n), _) if n == ios => "number_ios",
                    (_, Some(_)) => "io_size",
                    _ => "size",
                };
                return Err(err(
                    Some(j),
                    key,
                    format!(
                        "job {:?}: {ios} I/Os of {} bytes: {}",
                        j.name,
                        cfg.bs,
                        how(max_ios)
                    ),
                ));
            }
        }
        let work = match span {
            Some((t, None)) => Span::Until(t),
            Some((t, Some(_))) => Span::AtLeast(t),
            None => Span::Done,
        };
        // A large compile's work from a sample of it, before its tree is laid out: a file's
        // share of the work grows with the tree (measured: 624, 653 and 650 units a file at
        // 10^3, 10^4 and 10^5 files through a 1 MiB page cache on the 980 PRO model), so
        // half the sample's rate times the files is a floor of the whole. Only where nothing
        // stops the compile early: no duration_s, and the run waits for it.
        for j in self
            .jobs
            .iter()
            .filter(|j| j.foreground && self.limit.is_none())
        {
            let (JobSpec::Compile(c), Some(sample)) = (&j.spec, compile_sample(&j.spec)) else {
                continue;
            };
            let mut alone = self.clone();
            alone.jobs = vec![ScenarioJob {
                spec: sample,
                ..j.clone()
            }];
            let sim = alone.simulation(crate::work::probe_scheduler(&self.groups), None)?;
            let units = crate::work::implied_ios(sim, Span::Done, crate::work::PROBE_IOS).ios;
            let per_file = units as f64 / f64::from(COMPILE_SAMPLE_FILES);
            let floor = (per_file * f64::from(c.files) / COMPILE_SAMPLE_MARGIN) as u64;
            if total.saturating_add(floor) > max_ios {
                return Err(err(
                    Some(j),
                    "files",
                    format!(
                        "job {:?} (compile) of {} files implies at least {floor} I/Os on {}: \
                         about {per_file:.0} a file in a compile of {COMPILE_SAMPLE_FILES} of its \
                         settings, halved, times its files: {}",
                        j.name,
                        c.files,
                        self.drive.name(),
                        how(max_ios)
                    ),
                ));
            }
        }
        // Within it: the probe's simulation builds the jobs built at a sample's size at load
        // whole, so their errors surface here, before a run.
        let sim = self.simulation(crate::work::probe_scheduler(&self.groups), None)?;
        let implied = crate::work::implied_ios(sim, work, crate::work::PROBE_IOS);
        let ios = implied.ios;
        if total.saturating_add(ios) <= max_ios {
            return Ok(total.saturating_add(ios));
        }
        if let Some(j) = implied.job.and_then(|i| self.jobs.get(i)) {
            // The job whose share of its own work in the probe set the count: the field
            // that sets that work.
            let key = match &j.spec {
                JobSpec::StreamWriter(_) => "total_bytes",
                JobSpec::DependentReader(c) if c.loops > 1 => "loops",
                JobSpec::DependentReader(c) if c.extents.is_some() => "extents",
                JobSpec::Trace(c) if c.max_requests.is_some() => "max_requests",
                JobSpec::Trace(_) => "trace",
                _ => "files",
            };
            return Err(err(
                Some(j),
                key,
                format!(
                    "job {:?} ({}) implies about {ios} I/Os on {}: the share of its work its \
                     first I/Os did, extrapolated to the whole: {}",
                    j.name,
                    j.spec.kind(),
                    self.drive.name(),
                    how(max_ios)
                ),
            ));
        }
        let (span, job) = match span {
            Some(s) => s,
            None => (Nanos::ZERO, None),
        };
        let key = if job.is_some() {
            "runtime_ms"
        } else {
            "duration_s"
        };
        Err(err(
            job,
            key,
            format!(
                "{:.0} s of simulated time on {} imply about {ios} I/Os at the rate the run \
                 starts at: {}",
                span.as_secs_f64(),
                self.drive.name(),
                how(max_ios)
            ),
        ))
    }

    /// The settings this scenario gives policy `name` (empty if none).
    pub fn settings_for(&self, name: &str) -> Settings {
        self.tunables.get(name).cloned().unwrap_or_default()
    }

    /// Build the policy `name` with this scenario's tunables for it plus `extra` (which win).
    pub fn scheduler(
        &self,
        name: &str,
        extra: &Settings,
    ) -> Result<Box<dyn Scheduler>, InputError> {
        let err = |message: String| InputError::new(&self.origin, message).in_field("sched");
        let info = registry::find(name)
            .ok_or_else(|| err(format!("no scheduler named {name:?} (see `elevator list`)")))?;
        let mut s = self.settings_for(info.name);
        for k in extra.names() {
            s.set(k, extra.raw(k).unwrap_or_default());
        }
        info.build(&s, &self.groups)
            .map_err(|e| err(format!("{}: {e}", info.name)))
    }

    /// An error about `key` of `job` (a scenario-wide key when `None`), on the line that
    /// sets it: in the job's own `[[job]]` table (jobs are kept in file order), else the
    /// table's header line.
    fn error_at(&self, job: Option<&ScenarioJob>, key: &str, message: String) -> InputError {
        let text = &*self.text;
        let at = job.and_then(|j| {
            let n = self.jobs.iter().position(|o| std::ptr::eq(o, j))?;
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.trim() == "[[job]]")
                .nth(n)
                .map(|(i, _)| i + 1)
        });
        let line = match at {
            Some(l) => find_in_table(text, l, key).or(at),
            None => find_line(text, key, ""),
        };
        let field = match job {
            Some(_) => format!("job.{key}"),
            None => key.to_string(),
        };
        InputError::new(&self.origin, message)
            .on_line(line)
            .in_field(&field)
    }

    /// A ready-to-run simulation of this scenario under `sched`, with `seed` (or the
    /// scenario's own). Every job is built here: a job the load built only at a sample's size
    /// (a compile of more than [`COMPILE_SAMPLE_FILES`] files) is laid out whole now, and a
    /// job that fails to build (its tree does not fit the drive, or another seed lays it out
    /// differently) is an error naming the job's line and field, whether or not
    /// [`Scenario::check_work`] was called first.
    pub fn simulation(
        &self,
        sched: Box<dyn Scheduler>,
        seed: Option<u64>,
    ) -> Result<Simulation, InputError> {
        let device: Box<dyn Device> = self.drive.device();
        let capacity = device.capacity_sectors();
        let seed = seed.unwrap_or(self.seed);
        let mut sim = Simulation::new(device, sched, self.groups.clone());
        sim.set_wakeup_latency(self.wakeup);
        for j in &self.jobs {
            let job = j
                .spec
                .build(&BuildEnv::new(capacity, seed, j.name.clone()))
                .map_err(|e| {
                    self.error_at(Some(j), e.field, format!("job {:?}: {}", j.name, e.reason))
                })?;
            sim.add_job(JobSlot {
                name: j.name.clone(),
                job,
                group: self.groups.lookup(&j.group).unwrap_or(GroupId::ROOT),
                prio: j.prio,
                start: j.start,
                delay: Nanos::ZERO,
                foreground: j.foreground,
                cpus: None,
            });
        }
        Ok(sim)
    }
}

/// At most 60 characters of `s`, for error messages.
fn short(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The line assigning `key` in the table holding line `from` (1-based), searched from
/// there to the next table header.
fn find_in_table(text: &str, from: usize, key: &str) -> Option<usize> {
    let start = text.lines().take(from).collect::<Vec<_>>();
    let header = start
        .iter()
        .rposition(|l| l.trim_start().starts_with('['))?;
    text.lines()
        .enumerate()
        .skip(header + 1)
        .take_while(|(_, l)| !l.trim_start().starts_with('['))
        .find(|(_, l)| l.split_once('=').is_some_and(|(k, _)| k.trim() == key))
        .map(|(i, _)| i + 1)
}

/// The first line that assigns exactly `value` to `key` (`key = value`, spaces aside).
fn find_assignment(text: &str, key: &str, value: &str) -> Option<usize> {
    text.lines().enumerate().find_map(|(i, l)| {
        let (k, v) = l.split_once('=')?;
        let v = v.split('#').next().unwrap_or("");
        (k.trim() == key && v.trim() == value).then_some(i + 1)
    })
}

/// Parse `rt/N`, `be/N`, `idle`.
pub fn parse_prio(s: &str) -> Option<IoPrio> {
    let s = s.trim().to_ascii_lowercase();
    if s == "idle" {
        return Some(IoPrio {
            class: IoClass::Idle,
            level: 7,
        });
    }
    let (class, level) = s.split_once('/')?;
    let class = match class {
        "rt" => IoClass::RealTime,
        "be" => IoClass::BestEffort,
        _ => return None,
    };
    let level: u8 = level.parse().ok()?;
    (level <= 7).then_some(IoPrio { class, level })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prio_strings_parse_like_ionice() {
        assert_eq!(
            parse_prio("rt/0"),
            Some(IoPrio {
                class: IoClass::RealTime,
                level: 0
            })
        );
        assert_eq!(parse_prio("be/4"), Some(IoPrio::default()));
        assert_eq!(parse_prio("idle").map(|p| p.class), Some(IoClass::Idle));
        assert_eq!(parse_prio("be/8"), None);
        assert_eq!(parse_prio("fast"), None);
    }

    /// A fio job without a size (the whole 980 PRO: 2.4e8 reads of 4 KiB) in a scenario of
    /// `duration_s = 0.5` was refused by its size, blaming `job.size`, though the duration
    /// stops it after a few hundred thousand: its work is now the probe's over the duration.
    #[test]
    fn a_fio_job_of_the_whole_device_is_bounded_by_the_scenarios_duration_not_refused() {
        let text = "drive = \"samsung-980pro-1tb\"\nduration_s = 0.5\n\n[[job]]\n\
                    name = \"a\"\nkind = \"fio\"\nrw = \"randread\"\nbs = 4096\n";
        let s = Scenario::parse(text, "whole.toml", None).unwrap();
        let ios = s.check_work(10_000_000).expect("half a second of reads");
        assert!(ios > 1000 && ios < 10_000_000, "{ios}");
    }

    /// A compile of 20,000 directories of 48 MiB block groups loads (its sample of 10,000
    /// fits on the 980 PRO's terabyte) but its whole tree does not fit. `simulation`
    /// `expect`ed the whole build that only `check_work` made: a library caller skipping
    /// `check_work` (round 11's leftover) panicked. Now the build's error (the compile's
    /// `CompileConfig::layout`) comes back naming the job's line and field.
    #[test]
    fn simulation_of_a_compile_that_only_fits_as_a_sample_is_an_error_not_a_panic() {
        let text = "drive = \"samsung-980pro-1tb\"\n\n[[job]]\nname = \"make\"\n\
                    kind = \"compile\"\nfiles = 20000\ndirs = 20000\n\
                    block_group_bytes = 50331648\n";
        let s = Scenario::parse(text, "make.toml", None).expect("the sample fits: loaded");
        let sched = s.scheduler("none", &Settings::new()).unwrap();
        let e = s
            .simulation(sched, None)
            .err()
            .expect("the whole tree does not fit: an error");
        let shown = e.to_string();
        assert!(shown.starts_with("make.toml:3"), "{shown}");
        assert!(
            shown.contains("job.tree_offset_frac") && shown.contains("does not fit"),
            "{shown}"
        );
        let e = s
            .check_work(u64::MAX)
            .expect_err("check_work builds it too");
        assert!(e.to_string().contains("does not fit"), "{e}");
    }
}

#[cfg(test)]
mod setting_tests {
    use super::*;

    /// A one-job scenario with `line` (say `write_cache = true`) as its second line.
    fn with(line: &str) -> Result<Scenario, InputError> {
        let text = format!(
            "drive = \"laptop-4200\"\n{line}\n\n[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\n"
        );
        Scenario::parse(&text, "s.toml", None)
    }

    #[test]
    fn write_cache_switches_the_policy_or_picks_a_destage_mode() {
        let cache = |value: &str| {
            with(&format!("write_cache = {value}"))
                .unwrap()
                .drive
                .hdd()
                .expect("a rotational drive")
                .cache
        };
        let off = cache("false");
        assert_eq!(off.write_policy, WritePolicy::WriteThrough);
        let on = cache("true");
        assert_eq!(
            (on.write_policy, on.destage),
            (WritePolicy::WriteBack, Destage::BeforeNextCommand)
        );
        let rp = cache("\"read-priority\"");
        assert_eq!(
            (rp.write_policy, rp.destage),
            (WritePolicy::WriteBack, Destage::ReadPriority)
        );
    }

    #[test]
    fn unknown_write_cache_mode_names_file_line_and_field() {
        let e = with("write_cache = \"lazy\"").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(2), "write_cache"));
        assert!(e.to_string().starts_with("s.toml:2:"), "{e}");
    }

    #[test]
    fn wakeup_is_read_in_microseconds_and_defaults_to_zero() {
        assert_eq!(with("wakeup_us = 25").unwrap().wakeup, Nanos::from_us(25));
        assert_eq!(with("wakeup_us = 0.5").unwrap().wakeup, Nanos(500));
        assert_eq!(with("").unwrap().wakeup, Nanos::ZERO);
    }

    /// A scenario with one group table holding `line` (say `io_max = "rbps=1"`).
    fn with_group(line: &str) -> Result<Scenario, InputError> {
        let text = format!(
            "drive = \"laptop-4200\"\n\n[[group]]\npath = \"/a/b\"\n{line}\n\n[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\ngroup = \"/a/b\"\n"
        );
        Scenario::parse(&text, "s.toml", None)
    }

    #[test]
    fn group_io_files_are_read_into_the_tree() {
        let s = with_group("io_max = \"rbps=1048576 wiops=50\"\nio_latency_us = 2500\nio_weight = 300\nio_bfq_weight = 200").unwrap();
        let b = s.groups.lookup("/a/b").unwrap();
        let io = &s.groups.get(b).io;
        assert_eq!(io.max.rbps, Some(1_048_576));
        assert_eq!(io.max.wiops, Some(50));
        assert_eq!(io.latency_target, Some(Nanos::from_us(2500)));
        assert_eq!((io.weight, io.bfq_weight), (Some(300), Some(200)));
        assert!(s.groups.has_io_control());
    }

    /// Hostile io.latency targets (issue 32): below a microsecond (1e-300 once became a 0 ns
    /// target refused as "not above 0"), absurd (1e300 was printed as 301 digits), NaN.
    #[test]
    fn hostile_io_latency_targets_are_refused_naming_the_field_briefly() {
        for v in ["1e-300", "0.5", "1e300", "nan", "-1.0", "inf"] {
            let e = with_group(&format!("io_latency_us = {v}")).unwrap_err();
            assert_eq!(e.field, "group.io_latency_us", "{v}: {e}");
            assert!(e.message.contains("[1, "), "{v}: {e}");
            assert!(e.to_string().len() < 200, "{v}: {e}");
        }
        assert!(with_group("io_latency_us = 1.0").is_ok());
    }

    #[test]
    fn a_bad_io_max_names_file_line_and_field() {
        let e = with_group("io_max = \"rbps=fast\"").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(5), "group.io_max"));
        assert!(e.to_string().contains("rbps"), "{e}");
        let e = with_group("io_weight = 0").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(5), "group.io_weight"));
        let e = with_group("io_latency_us = -1").unwrap_err();
        assert_eq!(
            (e.line(), e.field.as_str()),
            (Some(5), "group.io_latency_us")
        );
    }

    #[test]
    fn negative_wakeup_names_file_line_and_field() {
        let e = with("wakeup_us = -3").unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(2), "wakeup_us"));
    }
}
