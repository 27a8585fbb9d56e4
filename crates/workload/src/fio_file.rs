//! fio job files: the subset `elevator run` understands, parsed into [`FioJobConfig`]s.
//!
//! The format is fio's INI: `[name]` starts a job, `[global]` sets defaults for the jobs that
//! follow it (a later `[global]` adds to them), `key=value` or a bare `key` sets an option,
//! and lines starting with `;` or `#` are comments. Sizes take fio's suffixes `k`, `m`, `g`,
//! `t` (also `KiB`, `KB` ...), base 1024; times take `us`, `ms`, `s`, `m` (minutes), `h`.
//!
//! Options understood (fio's meaning unless said otherwise):
//!
//! | option | value |
//! |---|---|
//! | `rw` / `readwrite` | read, write, randread, randwrite, rw / readwrite, randrw |
//! | `rwmixread`, `rwmixwrite` | percentage |
//! | `bs` / `blocksize` | size (one value for both directions) |
//! | `size`, `offset` | size, or `N%` of the target |
//! | `io_size` / `io_limit`, `number_ios` | size; count |
//! | `filename` | the target, when `--target` is not given (all jobs must agree) |
//! | `numjobs` | clones of the job, each its own context (named `job.0`, `job.1` ...) |
//! | `iodepth` | I/Os outstanding per clone |
//! | `ioengine` | `io_uring`, `libaio` (asynchronous, up to `iodepth`); `psync`, `sync`, `pvsync` (one synchronous request at a time) |
//! | `direct` | 0 or 1. The executor always does O_DIRECT I/O; `direct=0` marks the writes asynchronous, as page-cache writeback would issue them |
//! | `rate`, `rate_iops` | bytes/s (size suffixes), I/Os per second: one value for the job |
//! | `thinktime` (default unit us), `thinktime_blocks` | time; count |
//! | `runtime` (default unit s), `time_based` | time; flag |
//! | `ramp_time` (default unit s) | time run before `runtime` starts, left out of the figures |
//! | `stonewall` / `wait_for_previous`, `new_group` | flags: wait for all earlier jobs; start a new reporting group |
//! | `prio`, `prioclass` | 0..=7; 1 (real time), 2 (best effort), 3 (idle) |
//! | `randseed`, `norandommap` | number; flag |
//! | `elevator_cgroup` (alias `cgroup`), `elevator_weight` (alias `cgroup_weight`) | the job's group path (e.g. `/a`; fio's relative `cgroup=a` means `/a`) and that group's weight, in the scheduler's weight scale |
//!
//! Anything else (`group_reporting`, `verify`, `bssplit` ...) is an error naming the file, the
//! line and the option.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use elevator_core::{IoClass, IoPrio};

use crate::jobs::fio::{FioJobConfig, RwMode};

/// How a job submits its I/O (fio's `ioengine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `io_uring` or `libaio`: asynchronous, up to `iodepth` outstanding.
    Async,
    /// `psync`, `sync`, `pvsync`: one synchronous request at a time.
    Sync,
}

/// One `[job]` section, with `[global]` applied.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJobDef {
    /// The section's name.
    pub name: String,
    /// The line of its `[name]` header.
    pub line: usize,
    /// Its workload.
    pub config: FioJobConfig,
    /// `numjobs`: clones to run (default 1).
    pub numjobs: u32,
    /// `ioengine` (default io_uring's behaviour: asynchronous).
    pub engine: Engine,
    /// `filename`, if given.
    pub filename: Option<String>,
    /// `stonewall`: start only after every earlier job has finished.
    pub stonewall: bool,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `prio` / `prioclass`.
    pub prio: IoPrio,
    /// `elevator_cgroup`: group path, e.g. `/a` (default: the root).
    pub cgroup: Option<String>,
    /// `elevator_weight`: the group's weight (default: the scheduler's default).
    pub weight: Option<u32>,
    /// The line each option was last set on, by the name of the [`FioJobConfig`] field it
    /// set (e.g. `thinktime_us` for `thinktime`), so a later error on a field can name the line.
    pub lines: BTreeMap<&'static str, usize>,
}

impl FioJobDef {
    /// The line that set the config field `field`, else the job's header line.
    pub fn line_of(&self, field: &str) -> usize {
        self.lines.get(field).copied().unwrap_or(self.line)
    }
}

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct FioFile {
    /// The file it came from.
    pub path: PathBuf,
    /// Its jobs, in file order.
    pub jobs: Vec<FioJobDef>,
}

/// A job file could not be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioFileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The option (or section) at fault.
    pub option: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for FioFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: option `{}`: {}",
            self.path.display(),
            self.line,
            self.option,
            self.reason
        )
    }
}

impl std::error::Error for FioFileError {}

/// Read and parse the job file at `path`.
pub fn read(path: &Path) -> Result<FioFile, FioFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| FioFileError {
        path: path.to_path_buf(),
        line: 0,
        option: String::new(),
        reason: format!("cannot read the file: {e}"),
    })?;
    parse(path, &text)
}

struct Opt<'a> {
    key: &'a str,
    value: Option<&'a str>,
    line: usize,
}

/// Parse job-file `text`; `path` is only used in errors.
pub fn parse(path: &Path, text: &str) -> Result<FioFile, FioFileError> {
    let err = |line: usize, option: &str, reason: String| FioFileError {
        path: path.to_path_buf(),
        line,
        option: option.to_string(),
        reason,
    };
    let mut globals: Vec<Opt> = Vec::new();
    let mut sections: Vec<(String, usize, Vec<Opt>)> = Vec::new();
    let mut in_global = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(line, l, "a section header ends with ']'".into()));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(err(line, l, "a section needs a name".into()));
            }
            in_global = name == "global";
            if !in_global {
                if sections.iter().any(|(n, _, _)| n == name) {
                    return Err(err(line, name, "a job of this name already exists".into()));
                }
                sections.push((name.to_string(), line, Vec::new()));
            }
            continue;
        }
        let (key, value) = match l.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (l, None),
        };
        let opt = Opt { key, value, line };
        if in_global {
            globals.push(opt);
        } else if let Some((_, _, opts)) = sections.last_mut() {
            opts.push(opt);
        } else {
            return Err(err(line, key, "an option before any [section]".into()));
        }
    }
    // A [global] applies to the jobs after it only: each job takes the globals above it.
    let mut jobs = Vec::new();
    let mut global_so_far: Vec<&Opt> = Vec::new();
    let mut gi = 0;
    for (name, header, opts) in &sections {
        while gi < globals.len() && globals[gi].line < *header {
            global_so_far.push(&globals[gi]);
            gi += 1;
        }
        let mut def = FioJobDef {
            name: name.clone(),
            line: *header,
            config: FioJobConfig::default(),
            numjobs: 1,
            engine: Engine::Async,
            filename: None,
            stonewall: false,
            new_group: false,
            prio: IoPrio::default(),
            cgroup: None,
            weight: None,
            lines: BTreeMap::new(),
        };
        for o in global_so_far.iter().copied().chain(opts.iter()) {
            apply(&mut def, o).map_err(|reason| err(o.line, o.key, reason))?;
        }
        if def.engine == Engine::Sync {
            def.config.iodepth = 1;
        }
        jobs.push(def);
    }
    if jobs.is_empty() {
        return Err(err(
            text.lines().count().max(1),
            "",
            "the file defines no job".into(),
        ));
    }
    Ok(FioFile {
        path: path.to_path_buf(),
        jobs,
    })
}

fn need<'a>(o: &Opt<'a>) -> Result<&'a str, String> {
    match o.value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err("needs a value (key=value)".into()),
    }
}

fn flag(o: &Opt) -> Result<bool, String> {
    match o.value {
        None | Some("1") | Some("true") => Ok(true),
        Some("0") | Some("false") => Ok(false),
        Some(v) => Err(format!("{v:?} is not 0 or 1")),
    }
}

fn int<T: std::str::FromStr>(o: &Opt) -> Result<T, String> {
    let v = need(o)?;
    v.parse()
        .map_err(|_| format!("{v:?} is not a valid number here"))
}

/// A size with fio's suffixes, base 1024.
pub fn parse_size(v: &str) -> Result<u64, String> {
    let s = v.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return Err(format!("{v:?} is not a size"));
    }
    let n: u64 = s[..digits]
        .parse()
        .map_err(|_| format!("{v:?} is too large"))?;
    let mult: u64 = match s[digits..].to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        other => return Err(format!("unknown size suffix {other:?} in {v:?}")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{v:?} is too large"))
}

/// A time with fio's suffixes; a bare number is in `default_unit_ns`. Returns nanoseconds.
pub fn parse_time(v: &str, default_unit_ns: u64) -> Result<u64, String> {
    let s = v.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return Err(format!("{v:?} is not a time"));
    }
    let n: u64 = s[..digits]
        .parse()
        .map_err(|_| format!("{v:?} is too large"))?;
    let unit: u64 = match s[digits..].to_ascii_lowercase().as_str() {
        "" => default_unit_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        other => return Err(format!("unknown time suffix {other:?} in {v:?}")),
    };
    n.checked_mul(unit)
        .ok_or_else(|| format!("{v:?} is too large"))
}

/// A size, or `N%` of the target (returned as a fraction).
fn size_or_percent(v: &str) -> Result<Result<u64, f64>, String> {
    if let Some(p) = v.strip_suffix('%') {
        let f: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("{v:?} is not a percentage"))?;
        if !(0.0..=100.0).contains(&f) {
            return Err(format!("{v:?} is not within 0%..=100%"));
        }
        return Ok(Err(f / 100.0));
    }
    parse_size(v).map(Ok)
}

fn apply(def: &mut FioJobDef, o: &Opt) -> Result<(), String> {
    let c = &mut def.config;
    let field: &'static str = match o.key {
        "rw" | "readwrite" => {
            let v = need(o)?;
            c.rw = RwMode::parse(v).ok_or_else(|| {
                format!("{v:?} is not one of read, write, randread, randwrite, rw, randrw")
            })?;
            "rw"
        }
        "rwmixread" | "rwmixwrite" => {
            let p: u32 = int(o)?;
            if p > 100 {
                return Err(format!("{p} is not a percentage"));
            }
            c.rwmixread = if o.key == "rwmixread" { p } else { 100 - p };
            "rwmixread"
        }
        "bs" | "blocksize" => {
            let v = need(o)?;
            if v.contains(',') || v.contains(':') {
                return Err("one block size for both directions only".into());
            }
            c.bs = parse_size(v)?;
            "bs"
        }
        "size" => match size_or_percent(need(o)?)? {
            Ok(b) => {
                (c.size, c.size_frac) = (Some(b), None);
                "size"
            }
            Err(f) => {
                (c.size, c.size_frac) = (None, Some(f));
                "size_frac"
            }
        },
        "offset" => match size_or_percent(need(o)?)? {
            Ok(b) => {
                (c.offset, c.offset_frac) = (Some(b), None);
                "offset"
            }
            Err(f) => {
                (c.offset, c.offset_frac) = (None, Some(f));
                "offset_frac"
            }
        },
        "io_size" | "io_limit" => {
            c.io_size = Some(parse_size(need(o)?)?);
            "io_size"
        }
        "number_ios" => {
            c.number_ios = Some(int(o)?);
            "number_ios"
        }
        "filename" => {
            def.filename = Some(need(o)?.to_string());
            return Ok(());
        }
        "numjobs" => {
            let n: u32 = int(o)?;
            if n == 0 {
                return Err("must be at least 1".into());
            }
            def.numjobs = n;
            return Ok(());
        }
        "iodepth" => {
            c.iodepth = int(o)?;
            "iodepth"
        }
        "ioengine" => {
            def.engine = match need(o)? {
                "io_uring" | "libaio" => Engine::Async,
                "psync" | "sync" | "pvsync" => Engine::Sync,
                v => {
                    return Err(format!(
                        "{v:?} is not supported (io_uring, libaio, psync, sync, pvsync)"
                    ))
                }
            };
            return Ok(());
        }
        "direct" => {
            c.direct = flag(o)?;
            "direct"
        }
        "rate" => {
            let v = need(o)?;
            if v.contains(',') {
                return Err("one rate for both directions only".into());
            }
            c.rate = Some(parse_size(v)?);
            "rate"
        }
        "rate_iops" => {
            let v = need(o)?;
            if v.contains(',') {
                return Err("one rate for both directions only".into());
            }
            c.rate_iops = Some(int(o)?);
            "rate_iops"
        }
        "thinktime" => {
            c.thinktime_us = parse_time(need(o)?, 1_000)? / 1_000;
            "thinktime_us"
        }
        "thinktime_blocks" => {
            c.thinktime_blocks = int(o)?;
            "thinktime_blocks"
        }
        "runtime" | "timeout" => {
            let ns = parse_time(need(o)?, 1_000_000_000)?;
            c.runtime_ms = Some((ns / 1_000_000).max(1));
            "runtime_ms"
        }
        "ramp_time" => {
            c.ramp_ms = parse_time(need(o)?, 1_000_000_000)? / 1_000_000;
            "ramp_ms"
        }
        "time_based" => {
            c.time_based = flag(o)?;
            "time_based"
        }
        "norandommap" => {
            c.norandommap = flag(o)?;
            "norandommap"
        }
        "randseed" => {
            c.randseed = Some(int(o)?);
            "randseed"
        }
        "stonewall" | "wait_for_previous" => {
            def.stonewall = flag(o)?;
            return Ok(());
        }
        "new_group" => {
            def.new_group = flag(o)?;
            return Ok(());
        }
        "prio" => {
            let p: u8 = int(o)?;
            if p > 7 {
                return Err(format!("{p} is not a level 0..=7"));
            }
            def.prio.level = p;
            return Ok(());
        }
        "prioclass" => {
            def.prio.class = match int::<u8>(o)? {
                1 => IoClass::RealTime,
                2 => IoClass::BestEffort,
                3 => IoClass::Idle,
                p => return Err(format!("{p} is not a class: 1 (rt), 2 (be) or 3 (idle)")),
            };
            return Ok(());
        }
        "elevator_cgroup" | "cgroup" => {
            let v = need(o)?;
            def.cgroup = Some(if v.starts_with('/') {
                v.to_string()
            } else {
                format!("/{v}")
            });
            return Ok(());
        }
        "elevator_weight" | "cgroup_weight" => {
            let w: u32 = int(o)?;
            if w == 0 {
                return Err("a weight is at least 1".into());
            }
            def.weight = Some(w);
            return Ok(());
        }
        other => {
            return Err(format!(
            "{other:?} is not supported by elevator run (see `elevator run --help` for the subset)"
        ))
        }
    };
    def.lines.insert(field, o.line);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<FioFile, FioFileError> {
        parse(Path::new("t.fio"), text)
    }

    #[test]
    fn globals_apply_to_following_jobs_and_jobs_override_them() {
        let f = p("; a comment\n[global]\nbs=64k\ndirect=1\nioengine=io_uring\n\n# another\n\
                   [writer]\nrw=write\nbs=1m\niodepth=32\nsize=1g\n\
                   [reader]\nrw=randread\nioengine=psync\niodepth=8\nthinktime=2ms\nruntime=10\ntime_based\nramp_time=1500ms\n")
            .unwrap();
        let (w, r) = (&f.jobs[0], &f.jobs[1]);
        assert_eq!((w.name.as_str(), w.line), ("writer", 8));
        assert_eq!(w.config.rw, RwMode::Write);
        assert_eq!(w.config.bs, 1 << 20);
        assert_eq!(w.config.size, Some(1 << 30));
        assert_eq!(w.config.iodepth, 32);
        assert!(w.config.direct);
        assert_eq!(r.config.bs, 64 << 10);
        assert_eq!(r.engine, Engine::Sync);
        assert_eq!(r.config.iodepth, 1, "psync is one request at a time");
        assert_eq!(r.config.thinktime_us, 2000);
        assert_eq!(r.config.runtime_ms, Some(10_000));
        assert_eq!(r.config.ramp_ms, 1500);
        assert_eq!(w.config.ramp_ms, 0);
        assert!(r.config.time_based);
        assert_eq!(r.line_of("thinktime_us"), 17);
    }

    #[test]
    fn a_later_global_section_applies_only_to_later_jobs() {
        let f = p("[a]\n[global]\nbs=8k\n[b]\n").unwrap();
        assert_eq!(f.jobs[0].config.bs, 4096);
        assert_eq!(f.jobs[1].config.bs, 8192);
    }

    #[test]
    fn sizes_use_base_1024_and_percentages_become_fractions() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("4q").is_err());
        let f = p("[j]\nsize=50%\noffset=25%\n").unwrap();
        assert_eq!(f.jobs[0].config.size_frac, Some(0.5));
        assert_eq!(f.jobs[0].config.offset_frac, Some(0.25));
    }

    #[test]
    fn times_take_fio_units() {
        assert_eq!(parse_time("100", 1_000), Ok(100_000));
        assert_eq!(parse_time("5ms", 1_000), Ok(5_000_000));
        assert_eq!(parse_time("2m", 1_000_000_000), Ok(120_000_000_000));
    }

    #[test]
    fn every_supported_option_is_applied() {
        let f = p(
            "[j]\nrw=randrw\nrwmixwrite=30\nnumjobs=4\nrate=10m\nrate_iops=500\n\
                   thinktime_blocks=4\nstonewall\nnew_group\nprio=2\nprioclass=1\n\
                   elevator_cgroup=/fast\nelevator_weight=300\nfilename=/dev/loop0\n\
                   io_size=8m\nnumber_ios=100\nnorandommap\nrandseed=9\n",
        )
        .unwrap();
        let j = &f.jobs[0];
        assert_eq!(j.config.rwmixread, 70);
        assert_eq!(j.numjobs, 4);
        assert_eq!(j.config.rate, Some(10 << 20));
        assert_eq!(j.config.rate_iops, Some(500));
        assert_eq!(j.config.thinktime_blocks, 4);
        assert!(j.stonewall && j.new_group);
        assert_eq!(
            j.prio,
            IoPrio {
                class: IoClass::RealTime,
                level: 2
            }
        );
        assert_eq!(j.cgroup.as_deref(), Some("/fast"));
        assert_eq!(j.weight, Some(300));
        assert_eq!(j.filename.as_deref(), Some("/dev/loop0"));
        assert_eq!(j.config.io_size, Some(8 << 20));
        assert_eq!(j.config.number_ios, Some(100));
        assert!(j.config.norandommap);
        assert_eq!(j.config.randseed, Some(9));
        // fio's relative cgroup names are under the root.
        assert_eq!(
            p("[j]\ncgroup=a\n").unwrap().jobs[0].cgroup.as_deref(),
            Some("/a")
        );
    }

    #[test]
    fn an_unsupported_option_names_file_line_and_option() {
        let e = p("[global]\nbs=4k\n\n[j]\nrw=read\nverify=md5\n").unwrap_err();
        assert_eq!((e.line, e.option.as_str()), (6, "verify"));
        let msg = e.to_string();
        assert!(msg.starts_with("t.fio:6: option `verify`:"), "{msg}");
        assert!(msg.contains("not supported"), "{msg}");
    }

    #[test]
    fn bad_values_name_their_line() {
        let cases = [
            ("[j]\nrw=sideways\n", 2, "rw"),
            ("[j]\n\nbs=4x\n", 3, "bs"),
            ("[j]\niodepth=many\n", 2, "iodepth"),
            ("[j]\nioengine=mmap\n", 2, "ioengine"),
            ("[j]\nprio=9\n", 2, "prio"),
            ("[j]\nprioclass=0\n", 2, "prioclass"),
            ("[j]\nnumjobs=0\n", 2, "numjobs"),
            ("[j]\nsize=120%\n", 2, "size"),
            ("[j]\nbs=4k,64k\n", 2, "bs"),
            ("[j]\ndirect=yes\n", 2, "direct"),
            ("[j]\nrwmixread=101\n", 2, "rwmixread"),
            ("[j]\nrate\n", 2, "rate"),
            ("bs=4k\n", 1, "bs"),
            ("[j\n", 1, "[j"),
            ("[j]\n[j]\n", 2, "j"),
        ];
        for (text, line, option) in cases {
            let e = p(text).unwrap_err();
            assert_eq!((e.line, e.option.as_str()), (line, option), "{text:?}: {e}");
        }
        assert!(p("; nothing\n").unwrap_err().reason.contains("no job"));
    }
}
