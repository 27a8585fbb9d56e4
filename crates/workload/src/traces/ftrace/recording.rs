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
        let meta: RecordingMeta = serde_json::from_str(&text)
            .map_err(|e| located(&name, e.line(), "", format!("{e} (column {})", e.column())))?;
        if meta.format != META_FORMAT {
            return Err(located(
                &name,
                0,
                "format",
                format!("format {} (this elevator reads {META_FORMAT})", meta.format),
            ));
        }
        for (field, file) in [
            ("trace.file", &meta.trace.file),
            ("fio.job_file", &meta.fio.job_file),
        ] {
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
}
