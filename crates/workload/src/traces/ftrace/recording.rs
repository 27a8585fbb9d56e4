//! A kernel recording on disk: the directory `elevator kernel-record` writes, with the trace,
//! the job file and `meta.json` saying what ran where (the kernel, the scheduler and its
//! tunables, the device and its queue settings, the tracing set-up, fio's processes).
//!
//! ```text
//! DIR/meta.json        RecordingMeta
//! DIR/job.fio          the fio job file as run
//! DIR/trace.txt[.gz]   the block and kyber events (tracefs text)
//! DIR/bfq-log.txt[.gz] the blk tracer's notes (bfq's log), when recorded
//! DIR/fio.out[.gz]    fio's output (normal, then JSON)
//! DIR/groups.txt       each process's cgroup and each group's bfq weight, when the
//!                      recording ran its processes in groups (super::groups)
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use elevator_core::IoPrio;

use serde::{Deserialize, Serialize};

use super::groups::{ContextGroups, GROUPS_FILE};
use super::{Dev, KernelTrace};
use crate::input::InputError;
use crate::traces::ftrace::located;
use crate::traces::kernel_limits::PID_MAX_LIMIT;

/// The version of [`RecordingMeta`]'s layout this code writes and reads.
pub const META_FORMAT: u32 = 1;

/// One fio job process: fio forks a process per job (per clone with `numjobs`), all named
/// `fio`, so the trace's pid says which job a request came from only through this.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FioJobPid {
    /// The job's name (its `[section]`).
    pub name: String,
    /// Its group (`stonewall` and `new_group` start a new one).
    pub groupid: u32,
    /// The process id.
    pub pid: u32,
}

/// The running kernel (`uname`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// `uname -r`.
    pub release: String,
    /// `uname -v`.
    pub version: String,
    /// `uname -m`.
    pub machine: String,
    /// The timer frequency it was built with (`CONFIG_HZ` in `/proc/config.gz`), when the
    /// recorder could read it; the recordings made before 29 November 2026 17:00 UTC lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
}

/// The device the job ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Its name in /sys/block (`loop0`).
    pub name: String,
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// What backs it: `tmpfs` (a file on a private tmpfs) or `file:PATH`.
    pub backing: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Whether the loop device does direct I/O on its backing file (`loop/dio`).
    pub direct_io: bool,
    /// The loop driver's hardware queue depth (module parameter `hw_queue_depth`).
    pub hw_queue_depth: Option<u32>,
}

/// How the events were traced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceInfo {
    /// The trace file, relative to the recording.
    pub file: String,
    /// The bfq log file, relative to the recording, when recorded.
    pub bfq_log: Option<String>,
    /// The tracefs instance the events were recorded in.
    pub instance: String,
    /// `trace_clock`.
    pub clock: String,
    /// The events enabled (`block/block_rq_insert` ...).
    pub events: Vec<String>,
    /// The ring buffer's size per CPU, KiB.
    pub buffer_size_kb: u64,
    /// Events the ring buffer overwrote or dropped, from `per_cpu/cpu*/stats`: 0 when the
    /// trace is whole.
    pub lost: u64,
}

/// fio's part.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FioInfo {
    /// `fio --version`.
    pub version: String,
    /// The arguments fio was run with.
    pub args: Vec<String>,
    /// The job file, relative to the recording.
    pub job_file: String,
    /// The job processes.
    pub jobs: Vec<FioJobPid>,
    /// fio's exit status.
    pub exit_code: Option<i32>,
}

/// What a recording says about itself (`meta.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordingMeta {
    /// [`META_FORMAT`].
    pub format: u32,
    /// The program that recorded it, with its version.
    pub recorder: String,
    /// When recording began, seconds since the Unix epoch.
    pub started_unix: u64,
    /// How long fio ran, seconds.
    pub seconds: f64,
    /// The kernel.
    pub kernel: KernelInfo,
    /// The kernel's scheduler on the device (`none`, `mq-deadline`, `kyber`, `bfq`).
    pub scheduler: String,
    /// The device.
    pub device: DeviceInfo,
    /// What the recorder was asked to set in the queue and the scheduler, by sysfs name.
    pub settings: BTreeMap<String, String>,
    /// Every readable file of `/sys/block/DEV/queue` during the run.
    pub queue: BTreeMap<String, String>,
    /// Every tunable of the scheduler (`/sys/block/DEV/queue/iosched`) during the run.
    pub iosched: BTreeMap<String, String>,
    /// The tracing set-up.
    pub trace: TraceInfo,
    /// fio.
    pub fio: FioInfo,
}

impl RecordingMeta {
    /// The traced device.
    pub fn dev(&self) -> Dev {
        Dev {
            major: self.device.major,
            minor: self.device.minor,
        }
    }

    /// The fio job a process belongs to.
    pub fn job_of(&self, pid: u32) -> Option<&FioJobPid> {
        self.fio.jobs.iter().find(|j| j.pid == pid)
    }
}

/// The deepest hardware queue blk-mq allocates (`BLK_MQ_MAX_DEPTH`, include/linux/blk-mq.h).
pub const MAX_HW_QUEUE_DEPTH: u32 = 10_240;

/// The choice in use in the text of a kernel choice file, the bracketed word
/// (`queue/scheduler`'s `none [mq-deadline] kyber bfq`, `trace_clock`'s `[local] global`),
/// or `None` when none is bracketed.
pub fn bracketed_choice(text: &str) -> Option<&str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

/// Every choice a kernel choice file offers, in its order, the one in use unbracketed
/// (`none [mq-deadline] kyber` gives none, mq-deadline, kyber).
pub fn offered_choices(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|w| {
            w.strip_prefix('[')
                .and_then(|w| w.strip_suffix(']'))
                .unwrap_or(w)
        })
        .collect()
}

/// The timer frequencies a kernel is built with (`CONFIG_HZ`: kernel/Kconfig.hz's choices).
pub const KERNEL_HZ: [u32; 4] = [100, 250, 300, 1000];

/// The most fio job processes a recording names: the job-file reader's bound on a file's
/// clones (`fio_file::MAX_CLONES`).
const MAX_JOBS: usize = crate::fio_file::MAX_CLONES as usize;

/// The longest run a recording may say it took: a year (a trace's span is bounded the same,
/// `traces::stream::MAX_SPAN`).
const MAX_SECONDS: f64 = 366.0 * 86_400.0;

/// Check every number of `meta` against what the kernel (or fio) can have produced, so that
/// a hand-edited value is refused naming its field instead of being replayed: a hardware
/// queue depth of 10^9 was taken as the device's depth. Errors: the field and the message.
fn check_numbers(meta: &RecordingMeta) -> Result<(), (&'static str, String)> {
    if let Some(d) = meta.device.hw_queue_depth {
        // The loop driver refuses a depth below 1 (`loop_init`); blk-mq caps it at
        // BLK_MQ_MAX_DEPTH (`blk_mq_alloc_tag_set`).
        if !(1..=MAX_HW_QUEUE_DEPTH).contains(&d) {
            return Err((
                "device.hw_queue_depth",
                format!("{d} is not a queue depth blk-mq allocates (1 to {MAX_HW_QUEUE_DEPTH})"),
            ));
        }
    }
    // A device number is 12 bits of major and 20 of minor (`MINORBITS`, include/linux/kdev_t.h).
    if meta.device.major >= 1 << 12 {
        return Err((
            "device.major",
            format!("{} is not a major number (below 4096)", meta.device.major),
        ));
    }
    if meta.device.minor >= 1 << 20 {
        return Err((
            "device.minor",
            format!("{} is not a minor number (below 2^20)", meta.device.minor),
        ));
    }
    if let Some(hz) = meta.kernel.hz.filter(|hz| !KERNEL_HZ.contains(hz)) {
        return Err((
            "kernel.hz",
            format!("{hz} is not a CONFIG_HZ the kernel is built with ({KERNEL_HZ:?})"),
        ));
    }
    if !(0.0..=MAX_SECONDS).contains(&meta.seconds) {
        // In exponent form when huge: 1e308 printed as 309 digits.
        let shown = if meta.seconds.abs() < 1e12 {
            meta.seconds.to_string()
        } else {
            format!("{:e}", meta.seconds)
        };
        return Err((
            "seconds",
            format!("{shown} is not a run's length (0 to a year of seconds)"),
        ));
    }
    // The queue's `scheduler` file, read during the run, brackets the scheduler in use
    // (`elv_iosched_show`): a `scheduler` field that contradicts it (edited, or a meta.json
    // copied from another recording) replayed the trace under another policy in silence.
    if let Some(shown) = meta.queue.get("scheduler") {
        if let Some(in_use) = bracketed_choice(shown).filter(|&s| s != meta.scheduler) {
            return Err((
                "scheduler",
                format!(
                    "{:?}, but the queue's scheduler file recorded during the run \
                     (queue.scheduler) shows {in_use:?} in use",
                    crate::fio_file::excerpt(&meta.scheduler)
                ),
            ));
        }
    }
    if !meta.device.bytes.is_multiple_of(512) {
        return Err((
            "device.bytes",
            format!(
                "{} is not a whole number of 512-byte sectors",
                meta.device.bytes
            ),
        ));
    }
    if meta.fio.jobs.len() > MAX_JOBS {
        return Err((
            "fio.jobs",
            format!(
                "{} job processes: at most {MAX_JOBS} (a job file's clones)",
                meta.fio.jobs.len()
            ),
        ));
    }
    if let Some(j) = meta
        .fio
        .jobs
        .iter()
        .find(|j| j.pid == 0 || j.pid > PID_MAX_LIMIT)
    {
        return Err((
            "fio.jobs.pid",
            format!("{} is not a process id (1 to {PID_MAX_LIMIT})", j.pid),
        ));
    }
    Ok(())
}

/// fio's job processes from its normal output, whose per-job heading is
/// `NAME: (groupid=G, jobs=1): err= 0: pid=PID: DATE` (not printed with `group_reporting`).
pub fn fio_job_pids(output: &str) -> Vec<FioJobPid> {
    let mut out = Vec::new();
    for line in output.lines() {
        let Some(at) = line.find(": (groupid=") else {
            continue;
        };
        let name = &line[..at];
        let rest = &line[at + ": (groupid=".len()..];
        let Some((g, rest)) = rest.split_once(',') else {
            continue;
        };
        let Some(p) = rest.find("pid=") else {
            continue;
        };
        let pid: String = rest[p + 4..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let (Ok(groupid), Ok(pid)) = (g.trim().parse(), pid.parse()) {
            out.push(FioJobPid {
                name: name.to_string(),
                groupid,
                pid,
            });
        }
    }
    out
}

/// A meta.json that does not parse as one, naming its line and the key whose value is wrong
/// (the last `"KEY":` before the error's column on its line). serde_json's message named
/// neither the field nor anything but the position ("invalid type: integer `500`, expected a
/// string at line 79 column 20 (column 20)" for `"read_expire": 500`).
fn json_error(name: &str, text: &str, e: &serde_json::Error) -> InputError {
    let shown = e.to_string();
    let message = match shown.rsplit_once(" at line ") {
        Some((m, _)) => m.to_string(),
        None => shown,
    };
    let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
    let upto = line
        .char_indices()
        .nth(e.column())
        .map_or(line, |(i, _)| &line[..i]);
    let key = upto
        .rsplit_once("\":")
        .and_then(|(before, _)| before.rsplit_once('"'))
        .map(|(_, k)| k)
        .filter(|k| !k.is_empty() && k.len() <= 64)
        .unwrap_or("");
    let at = format!("column {}: {message}", e.column());
    located(name, e.line(), key, at)
}

/// A recording directory, opened.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Its directory.
    pub dir: PathBuf,
    /// Its `meta.json`.
    pub meta: RecordingMeta,
}

impl Recording {
    /// Open the recording in `dir`: read and check its `meta.json`.
    pub fn open(dir: &Path) -> Result<Recording, InputError> {
        let path = dir.join("meta.json");
        let name = path.display().to_string();
        // A recording's meta.json is a few KB: 4 MiB is far more.
        let text = crate::input::read_text(&path, 4 << 20, "recording's meta.json")?;
        let meta: RecordingMeta =
            serde_json::from_str(&text).map_err(|e| json_error(&name, &text, &e))?;
        if meta.format != META_FORMAT {
            return Err(located(
                &name,
                0,
                "format",
                format!("format {} (this elevator reads {META_FORMAT})", meta.format),
            ));
        }
        check_numbers(&meta).map_err(|(field, message)| located(&name, 0, field, message))?;
        // The bfq log's name is checked as the others are: an absolute path or `..` read a
        // file outside the recording (/etc/passwd was read as a bfq log).
        let bfq_log = meta.trace.bfq_log.as_ref();
        for (field, file) in [
            ("trace.file", Some(&meta.trace.file)),
            ("fio.job_file", Some(&meta.fio.job_file)),
            ("trace.bfq_log", bfq_log),
        ]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p?)))
        {
            let p = Path::new(file);
            if file.is_empty() || p.is_absolute() || p.components().any(|c| c.as_os_str() == "..") {
                return Err(located(
                    &name,
                    0,
                    field,
                    format!("{file:?} is not a file name inside the recording"),
                ));
            }
        }
        Ok(Recording {
            dir: dir.to_path_buf(),
            meta,
        })
    }

    /// The trace file.
    pub fn trace_path(&self) -> PathBuf {
        self.dir.join(&self.meta.trace.file)
    }

    /// The job file.
    pub fn job_path(&self) -> PathBuf {
        self.dir.join(&self.meta.fio.job_file)
    }

    /// The requests of the recorded device.
    pub fn trace(&self) -> Result<KernelTrace, InputError> {
        KernelTrace::read(&self.trace_path(), Some(self.meta.dev()))
    }

    /// The I/O priority of each fio job process's io_context, by pid: its job's `prioclass`
    /// and `prio` ([`super::ioprio::job_priorities`]); a process whose job sets neither is
    /// left out.
    pub fn context_priorities(&self) -> Result<HashMap<u32, IoPrio>, InputError> {
        let path = self.job_path();
        // A job file is a few KB: 1 MiB is far more.
        let text = crate::input::read_text(&path, 1 << 20, "recording's job file")?;
        // A job file cut, emptied or copied from another recording would lose its jobs'
        // priorities without a word: every job fio ran has its section.
        let sections = super::ioprio::job_sections(&text);
        if let Some(j) = self
            .meta
            .fio
            .jobs
            .iter()
            .find(|j| !sections.contains(&j.name))
        {
            return Err(InputError::new(
                &path,
                format!(
                    "no section [{}] for the job of that name fio ran (pid {}, in meta.json): \
                     not this recording's job file (cut, emptied or another's), whose \
                     priorities the replay would lose",
                    crate::fio_file::excerpt(&j.name),
                    j.pid
                ),
            ));
        }
        let by_job = super::ioprio::job_priorities(&path, &text)?;
        Ok(self
            .meta
            .fio
            .jobs
            .iter()
            .filter_map(|j| Some((j.pid, *by_job.get(&j.name)?)))
            .collect())
    }

    /// The recording's groups ([`super::groups::GROUPS_FILE`]): each process's cgroup and each
    /// group's bfq weight; every process in the root group when the file is absent.
    pub fn context_groups(&self) -> Result<ContextGroups, InputError> {
        let path = self.dir.join(GROUPS_FILE);
        if !path.exists() {
            return Ok(ContextGroups::default());
        }
        // A groups file is a line a process: 1 MiB is far more.
        let text = crate::input::read_text(&path, 1 << 20, "recording's groups file")?;
        ContextGroups::parse(&path, &text)
    }

    /// The bfq log's notes with their times, when it was recorded.
    pub fn bfq_log(&self) -> Result<Option<KernelTrace>, InputError> {
        match &self.meta.trace.bfq_log {
            Some(f) => KernelTrace::read(&self.dir.join(f), Some(self.meta.dev())).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue/scheduler file offers each word, the one in use bracketed.
    #[test]
    fn a_choice_file_offers_every_word_and_brackets_the_one_in_use() {
        let text = "none [mq-deadline] kyber\n";
        assert_eq!(offered_choices(text), ["none", "mq-deadline", "kyber"]);
        assert_eq!(bracketed_choice(text), Some("mq-deadline"));
        assert_eq!(offered_choices(""), Vec::<&str>::new());
    }

    #[test]
    fn fio_headings_give_each_jobs_pid() {
        let out = "\
seqr: (g=0): rw=read, bs=(R) 4096B-4096B, ioengine=psync, iodepth=1
seqr: (groupid=0, jobs=1): err= 0: pid=10911: Sun Nov 29 03:30:17 2026
  read: IOPS=1, BW=4KiB/s
my job: name: (groupid=2, jobs=1): err= 0: pid=77: Sun Nov 29 03:30:17 2026
broken: (groupid=x, jobs=1): err= 0: pid=5
";
        assert_eq!(
            fio_job_pids(out),
            [
                FioJobPid {
                    name: "seqr".into(),
                    groupid: 0,
                    pid: 10911
                },
                FioJobPid {
                    name: "my job: name".into(),
                    groupid: 2,
                    pid: 77
                },
            ]
        );
    }

    #[test]
    fn a_bad_meta_json_is_named_with_its_line() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("meta.json"),
            "{\n\"format\": 1,\n\"scheduler\": 3\n}",
        )
        .unwrap();
        let e = Recording::open(d.path()).unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(e.file.ends_with("meta.json"));
        let mut meta = RecordingMeta {
            format: META_FORMAT,
            ..RecordingMeta::default()
        };
        meta.trace.file = "../elsewhere".into();
        meta.fio.job_file = "job.fio".into();
        std::fs::write(
            d.path().join("meta.json"),
            serde_json::to_string(&meta).unwrap(),
        )
        .unwrap();
        let e = Recording::open(d.path()).unwrap_err();
        assert_eq!(e.field, "trace.file");
    }

    /// Round 11's leftover: a `hw_queue_depth` of 10^9 (under `u32`, past blk-mq's
    /// `BLK_MQ_MAX_DEPTH`) was replayed as the device's depth. Every number of meta.json is
    /// now checked where it is read, the error naming the file, the field and the value.
    #[test]
    fn meta_json_numbers_past_what_the_kernel_has_are_refused_naming_the_field() {
        let d = tempfile::tempdir().unwrap();
        let good = || {
            let mut m = RecordingMeta {
                format: META_FORMAT,
                seconds: 2.0,
                ..RecordingMeta::default()
            };
            m.trace.file = "trace.txt".into();
            m.fio.job_file = "job.fio".into();
            m.device.hw_queue_depth = Some(128);
            m.device.major = 7;
            m.device.bytes = 1 << 30;
            m.kernel.hz = Some(250);
            m.fio.jobs.push(FioJobPid {
                name: "r".into(),
                groupid: 0,
                pid: 4000,
            });
            m
        };
        // A field, the value the error must show, and the edit that sets it.
        type Case = (&'static str, &'static str, fn(&mut RecordingMeta));
        let cases: [Case; 9] = [
            ("device.hw_queue_depth", "1000000000", |m| {
                m.device.hw_queue_depth = Some(1_000_000_000)
            }),
            ("device.hw_queue_depth", "0", |m| {
                m.device.hw_queue_depth = Some(0)
            }),
            ("device.major", "4096", |m| m.device.major = 4096),
            ("device.minor", "1048576", |m| m.device.minor = 1 << 20),
            ("kernel.hz", "4294967295", |m| m.kernel.hz = Some(u32::MAX)),
            ("seconds", "-1", |m| m.seconds = -1.0),
            ("device.bytes", "1000", |m| m.device.bytes = 1000),
            ("fio.jobs.pid", "4294967295", |m| {
                m.fio.jobs[0].pid = u32::MAX
            }),
            ("fio.jobs", "4097", |m| {
                let j = m.fio.jobs[0].clone();
                m.fio.jobs = vec![j; 4097];
            }),
        ];
        let write = |m: &RecordingMeta| {
            std::fs::write(
                d.path().join("meta.json"),
                serde_json::to_string(m).unwrap(),
            )
            .unwrap()
        };
        write(&good());
        Recording::open(d.path()).expect("the values the kernel has");
        for (field, value, edit) in cases {
            let mut m = good();
            edit(&mut m);
            write(&m);
            let e = Recording::open(d.path()).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            let shown = e.to_string();
            assert!(
                shown.contains("meta.json") && shown.contains(value),
                "{shown}"
            );
        }
    }
}
