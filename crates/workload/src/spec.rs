//! Building jobs: the environment a job is built in, and what can go wrong.
//!
//! A job's configuration names places on the device either in bytes or as fractions of the
//! device's capacity (fields `offset` / `offset_frac`, `size` / `size_frac` ...); the capacity
//! is only known when the job is built for a device, so every job is built with
//! [`BuildEnv`] and resolves its positions then.

use std::fmt;

/// What a job needs to know about the run it is built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildEnv {
    /// The device's size in 512-byte sectors.
    pub capacity_sectors: u64,
    /// The run's seed. Jobs mix it with their [`name`](BuildEnv::name), so two jobs of one run
    /// draw different random streams and a run is reproducible from its seed alone.
    pub seed: u64,
    /// The job's name (unique within a run), as reports print it.
    pub name: String,
}

impl BuildEnv {
    /// An environment for a device of `capacity_sectors`, run seed `seed`, job `name`.
    pub fn new(capacity_sectors: u64, seed: u64, name: impl Into<String>) -> BuildEnv {
        BuildEnv {
            capacity_sectors,
            seed,
            name: name.into(),
        }
    }

    /// The seed this job should use: the run's seed mixed with the job's name (FNV-1a then a
    /// SplitMix64 finaliser), or `explicit` if the configuration pins one.
    pub fn job_seed(&self, explicit: Option<u64>) -> u64 {
        match explicit {
            Some(s) => s,
            None => self.named_seed(self.seed),
        }
    }

    /// `base` mixed with the job's name (FNV-1a then a SplitMix64 finaliser): a seed of its
    /// own for each job of a run or file seeded by `base`.
    pub fn named_seed(&self, base: u64) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.name.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        mix64(h ^ base)
    }

    /// The device's size in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_sectors * elevator_core::SECTOR_BYTES
    }
}

/// SplitMix64's finaliser: a cheap, well-spread 64-bit mix.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A job's configuration cannot be built into a job.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BuildError {
    /// The job's name.
    pub job: String,
    /// The configuration field at fault (as spelled in a scenario file).
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl BuildError {
    /// An error for job `env.name`, field `field`.
    pub fn new(env: &BuildEnv, field: &'static str, reason: impl Into<String>) -> BuildError {
        BuildError {
            job: env.name.clone(),
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job {:?}: field `{}`: {}",
            self.job, self.field, self.reason
        )
    }
}

impl std::error::Error for BuildError {}

/// Resolve a byte position given either in bytes (`bytes`, field `bytes_field`) or as a
/// fraction of the capacity (`frac`, field `frac_field`); giving both is an error. Returns
/// bytes, rounded down to a whole sector; `None` if neither was given.
pub(crate) fn resolve_bytes(
    env: &BuildEnv,
    bytes: Option<u64>,
    bytes_field: &'static str,
    frac: Option<f64>,
    frac_field: &'static str,
) -> Result<Option<u64>, BuildError> {
    match (bytes, frac) {
        (Some(_), Some(_)) => Err(BuildError::new(
            env,
            frac_field,
            format!("give either `{bytes_field}` or `{frac_field}`, not both"),
        )),
        (Some(b), None) => Ok(Some(
            b / elevator_core::SECTOR_BYTES * elevator_core::SECTOR_BYTES,
        )),
        (None, Some(f)) => {
            if !(0.0..=1.0).contains(&f) || f.is_nan() {
                return Err(BuildError::new(
                    env,
                    frac_field,
                    format!("{f} is not a fraction of the capacity in 0..=1"),
                ));
            }
            let sectors = (env.capacity_sectors as f64 * f).floor() as u64;
            Ok(Some(sectors * elevator_core::SECTOR_BYTES))
        }
        (None, None) => Ok(None),
    }
}

/// A region of the device in sectors, `[start, start + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First sector.
    pub start: u64,
    /// Length in sectors.
    pub len: u64,
}

impl Region {
    /// The sector just past the region.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }

    /// Where a request of `len` sectors (at most the region's length) at `offset` sectors
    /// into a recorded span goes: `start + offset mod len`, moved back so it ends inside the
    /// region.
    pub fn wrap(&self, offset: u64, len: u64) -> u64 {
        (self.start + offset % self.len).min(self.end() - len)
    }
}

/// The fields a job gives its region in, as [`resolve_region`] takes their names: `offset`,
/// `offset_frac`, `size` and `size_frac`.
pub(crate) const REGION_FIELDS: [&str; 4] = ["offset", "offset_frac", "size", "size_frac"];

/// Resolve a region from an offset and a size, each in bytes or as a fraction (see
/// [`resolve_bytes`]). A missing offset is 0; a missing size runs to the end of the device.
/// The region must be non-empty and inside the device.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve_region(
    env: &BuildEnv,
    offset: Option<u64>,
    offset_frac: Option<f64>,
    size: Option<u64>,
    size_frac: Option<f64>,
    names: [&'static str; 4],
) -> Result<Region, BuildError> {
    let cap = env.capacity_bytes();
    let off = resolve_bytes(env, offset, names[0], offset_frac, names[1])?.unwrap_or(0);
    if off >= cap {
        return Err(BuildError::new(
            env,
            names[0],
            format!("offset {off} bytes is past the device's end ({cap} bytes)"),
        ));
    }
    let size = resolve_bytes(env, size, names[2], size_frac, names[3])?.unwrap_or(cap - off);
    if size == 0 {
        return Err(BuildError::new(env, names[2], "the region is empty"));
    }
    if size > cap - off {
        return Err(BuildError::new(
            env,
            names[2],
            format!("offset {off} + size {size} bytes runs past the device's end ({cap} bytes)"),
        ));
    }
    Ok(Region {
        start: off / elevator_core::SECTOR_BYTES,
        len: size / elevator_core::SECTOR_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_seed_differs_between_jobs_of_one_run_and_is_stable() {
        let a = BuildEnv::new(1000, 7, "a");
        let b = BuildEnv::new(1000, 7, "b");
        assert_ne!(a.job_seed(None), b.job_seed(None));
        assert_eq!(a.job_seed(None), BuildEnv::new(1000, 7, "a").job_seed(None));
        assert_eq!(a.job_seed(Some(3)), 3);
    }

    #[test]
    fn region_from_fractions_and_bytes() {
        let env = BuildEnv::new(1_000_000, 0, "j");
        let r = resolve_region(
            &env,
            None,
            Some(0.5),
            Some(4096),
            None,
            ["o", "of", "s", "sf"],
        )
        .unwrap();
        assert_eq!(
            r,
            Region {
                start: 500_000,
                len: 8
            }
        );
        let all = resolve_region(&env, None, None, None, None, ["o", "of", "s", "sf"]).unwrap();
        assert_eq!(
            all,
            Region {
                start: 0,
                len: 1_000_000
            }
        );
    }

    #[test]
    fn wrap_folds_an_offset_into_the_region_and_keeps_the_request_inside() {
        // A region of 4096 sectors folds 8000 back in.
        let r = Region {
            start: 100,
            len: 4096,
        };
        assert_eq!(r.wrap(8000, 8), 100 + 8000 % 4096);
        let r = Region {
            start: 0,
            len: 4096,
        };
        assert_eq!(r.wrap(4095, 8), 4088);
    }

    #[test]
    fn region_errors_name_the_field() {
        let env = BuildEnv::new(1000, 0, "j");
        let e = resolve_region(&env, Some(0), Some(0.1), None, None, REGION_FIELDS).unwrap_err();
        assert_eq!(e.field, "offset_frac");
        let e = resolve_region(&env, None, None, Some(1_000_000), None, REGION_FIELDS).unwrap_err();
        assert_eq!(e.field, "size");
        let e = resolve_region(&env, None, Some(1.5), None, None, REGION_FIELDS).unwrap_err();
        assert_eq!(e.field, "offset_frac");
    }
}

/// Any job, as a scenario file describes it: a `[[job]]` table whose `kind` names the job and
/// whose other keys are that job's configuration fields. Unknown keys are errors naming the key.
///
/// ```
/// use elevator_workload::spec::{BuildEnv, JobSpec};
/// let spec: JobSpec = serde_json::from_str(
///     r#"{"kind": "fio", "rw": "randread", "bs": 4096, "number_ios": 10}"#,
/// ).unwrap();
/// let job = spec.build(&BuildEnv::new(1 << 21, 1, "reader")).unwrap();
/// assert_eq!(job.name(), "reader");
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum JobSpec {
    /// [`DependentReader`](crate::jobs::DependentReader): the `cat` of many files.
    DependentReader(crate::jobs::DependentReaderConfig),
    /// [`StreamWriter`](crate::jobs::StreamWriter): continuous streaming writeback.
    StreamWriter(crate::jobs::StreamWriterConfig),
    /// [`CompileJob`](crate::jobs::CompileJob): `make` over a C source tree.
    Compile(crate::jobs::CompileConfig),
    /// [`FioJob`](crate::jobs::FioJob): fio-like reader or writer.
    Fio(crate::jobs::FioJobConfig),
    /// [`StartupJob`](crate::jobs::StartupJob): an S-suite application start-up.
    Startup(crate::jobs::StartupConfig),
    /// [`TraceReplay`](crate::jobs::TraceReplay): a DiskSim or MQSim ASCII trace.
    Trace(crate::jobs::TraceReplayConfig),
    /// [`InterleavedReaders`](crate::jobs::InterleavedReaders): N processes reading one file
    /// in interleaved chunks through the page cache (the S suite's `interleaved_io`).
    Interleaved(crate::jobs::InterleavedReadersConfig),
}

impl JobSpec {
    /// The `kind` as spelled in scenario files.
    pub fn kind(&self) -> &'static str {
        match self {
            JobSpec::DependentReader(_) => "dependent-reader",
            JobSpec::StreamWriter(_) => "stream-writer",
            JobSpec::Compile(_) => "compile",
            JobSpec::Fio(_) => "fio",
            JobSpec::Startup(_) => "startup",
            JobSpec::Trace(_) => "trace",
            JobSpec::Interleaved(_) => "interleaved",
        }
    }

    /// Build the job for the device and run of `env`.
    pub fn build(&self, env: &BuildEnv) -> Result<Box<dyn crate::Job>, BuildError> {
        use crate::jobs::*;
        Ok(match self {
            JobSpec::DependentReader(c) => Box::new(DependentReader::new(c.clone(), env)?),
            JobSpec::StreamWriter(c) => Box::new(StreamWriter::new(c.clone(), env)?),
            JobSpec::Compile(c) => Box::new(CompileJob::new(c.clone(), env)?),
            JobSpec::Fio(c) => Box::new(FioJob::new(c.clone(), env)?),
            JobSpec::Startup(c) => Box::new(StartupJob::new(c.clone(), env)?),
            JobSpec::Trace(c) => Box::new(TraceReplay::new(c.clone(), env)?),
            JobSpec::Interleaved(c) => Box::new(InterleavedReaders::new(c.clone(), env)?),
        })
    }

    /// The field that keeps this job going until the run ends (it never finishes by itself),
    /// if any: a stream writer without `total_bytes`, a dependent reader with `loops = 0`, a
    /// `time_based` fio job without `runtime_ms` or `number_ios`.
    pub fn endless_by(&self) -> Option<&'static str> {
        match self {
            JobSpec::DependentReader(c) if c.loops == 0 => Some("loops"),
            JobSpec::StreamWriter(c) if c.total_bytes.is_none() => Some("total_bytes"),
            JobSpec::Fio(c) if c.time_based && c.runtime_ms.is_none() && c.number_ios.is_none() => {
                Some("time_based")
            }
            _ => None,
        }
    }

    /// Make a relative trace path relative to `base` (the scenario file's directory), as a
    /// scenario loader should before building.
    pub fn resolve_paths(&mut self, base: &std::path::Path) {
        let path = match self {
            JobSpec::Startup(c) => &mut c.trace,
            JobSpec::Trace(c) => &mut c.trace,
            _ => return,
        };
        if path.is_relative() && !path.as_os_str().is_empty() {
            *path = base.join(&*path);
        }
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;
    use crate::jobs::{FioJobConfig, RwMode};

    /// What a scenario loader embeds: engine fields beside the flattened job.
    #[derive(Debug, serde::Deserialize)]
    struct ScenarioJob {
        name: String,
        #[serde(default)]
        group: Option<String>,
        #[serde(flatten)]
        job: JobSpec,
    }

    #[derive(Debug, serde::Deserialize)]
    struct Scenario {
        job: Vec<ScenarioJob>,
    }

    #[test]
    fn scenario_tables_deserialize_every_kind() {
        let text = r#"
[[job]]
name = "make"
kind = "compile"
files = 10

[[job]]
name = "writer"
group = "/b"
kind = "stream-writer"
offset_frac = 0.6
rate = 4096000

[[job]]
name = "cat"
kind = "dependent-reader"
files = 5

[[job]]
name = "rr"
kind = "fio"
rw = "randread"
iodepth = 4

[[job]]
name = "xterm"
kind = "startup"
trace = "xterm.trace"
order = "process"
placement = "s-files"

[[job]]
name = "tpcc"
kind = "trace"
trace = "t.trace"
format = "mqsim"
closed_loop = true

[[job]]
name = "coop"
kind = "interleaved"
processes = 4
chunk = 16384
"#;
        let s: Scenario = toml::from_str(text).unwrap();
        let kinds: Vec<&str> = s.job.iter().map(|j| j.job.kind()).collect();
        assert_eq!(
            kinds,
            [
                "compile",
                "stream-writer",
                "dependent-reader",
                "fio",
                "startup",
                "trace",
                "interleaved"
            ]
        );
        assert_eq!(s.job[1].group.as_deref(), Some("/b"));
        assert_eq!(s.job[0].name, "make");
        match &s.job[3].job {
            JobSpec::Fio(c) => assert_eq!((c.rw, c.iodepth, c.bs), (RwMode::RandRead, 4, 4096)),
            other => panic!("{other:?}"),
        }
        // Built jobs run under their names.
        let env = BuildEnv::new(40_000_000, 1, "make");
        assert_eq!(s.job[0].job.build(&env).unwrap().name(), "make");
    }

    #[test]
    fn a_typo_is_an_error_naming_the_field_and_line() {
        let text = "[[job]]\nname = \"rr\"\nkind = \"fio\"\nrw = \"read\"\niodepht = 4\n";
        let e = toml::from_str::<Scenario>(text).unwrap_err().to_string();
        eprintln!("{e}");
        assert!(e.contains("iodepht"), "{e}");
        assert!(
            e.contains("line 1") || e.contains("line 5") || e.contains('|'),
            "{e}"
        );
        let e = toml::from_str::<Scenario>("[[job]]\nname = \"x\"\nkind = \"fiio\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("fiio"), "{e}");
    }

    #[test]
    fn specs_round_trip_through_toml() {
        let spec = JobSpec::Fio(FioJobConfig {
            rw: RwMode::RandRw,
            rate: Some(1000),
            ..Default::default()
        });
        let text = toml::to_string(&spec).unwrap();
        let back: JobSpec = toml::from_str(&text).unwrap();
        assert_eq!(spec, back);
    }

    #[test]
    fn relative_trace_paths_resolve_against_the_scenario() {
        let mut spec: JobSpec =
            toml::from_str("kind = \"startup\"\ntrace = \"x.trace\"\n").unwrap();
        spec.resolve_paths(std::path::Path::new("/s"));
        match spec {
            JobSpec::Startup(c) => assert_eq!(c.trace, std::path::PathBuf::from("/s/x.trace")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn build_errors_name_job_and_field() {
        let spec: JobSpec = toml::from_str("kind = \"fio\"\nbs = 1000\n").unwrap();
        let e = spec.build(&BuildEnv::new(1 << 21, 0, "bad")).err().unwrap();
        assert_eq!(
            e.to_string(),
            "job \"bad\": field `bs`: 1000 is not a positive multiple of 512"
        );
    }
}
