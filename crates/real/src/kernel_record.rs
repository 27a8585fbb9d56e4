//! Recording the kernel's own scheduler: a fio job run on a loop device under one of the
//! kernel's I/O schedulers, with the block layer's tracepoints on, saved as a recording
//! directory ([`elevator_workload::traces::ftrace::recording`]) whose requests the ftrace
//! reader puts together. What `elevator kernel-record` runs; needs root, tracefs and fio.
//!
//! ## What it does, and undoes
//! 1. Creates the backing file: on a private tmpfs mounted under the temporary directory (a
//!    fast, steady device), or at a path given (which must not exist; on the disk with direct
//!    I/O, a second kind of device).
//! 2. Attaches a loop device to it (`losetup --find --show [--direct-io=on]`).
//! 3. Gives the device all of its driver tags (under `none`, `nr_requests` one less than the
//!    depth, then the depth: an earlier `nr_requests` under `none` shrinks them for good,
//!    `regrow_driver_tags`), then sets the kernel's scheduler, then `nr_requests` and any
//!    other queue or scheduler attribute asked for. The loop driver's hardware queue depth (its `hw_queue_depth`
//!    module parameter, 128 here) is read-only once the driver is loaded, and the loop driver
//!    never refuses a request, so the device itself never makes requests wait: the scheduler
//!    chooses among what is inserted before the hardware queue is run (a plugged batch, an
//!    asynchronous run of the queue), and bfq and kyber also hold requests back by their own
//!    rules (bfq's idling and budgets, kyber's domain tokens). `nr_requests` bounds the
//!    scheduler's tags (4 at the least), which also sets mq-deadline's and kyber's
//!    `async_depth` and bfq's per-queue limits.
//! 4. Makes its own tracefs instance (`instances/elevator-record-PID`: its own ring buffer,
//!    so nobody else's tracing is touched), sets its clock to `mono`, and enables the block
//!    and kyber events filtered to the device. Under bfq (unless [`BfqLog::Off`]), bfq's
//!    `bfq_log_bfqq` notes come through the `blk` tracer, which only the top-level buffer
//!    has: the recorder takes it only when nothing else is traced there (`current_tracer` is
//!    `nop`; otherwise it records without the log and says so, or with
//!    [`BfqLog::Required`] fails), limits the
//!    device's blktrace to notes (`act_mask` `notify`), sets the tracer's `blk_cgroup`
//!    option (each note then carries its queue's group's cgroup id, which `groups.txt`'s
//!    `cgroup` lines name), and restores it all after.
//! 5. Streams the instance's `trace_pipe` (and the top level's, for the bfq log) to files
//!    while fio runs the job file against the loop device, with `--filename` set to it.
//! 6. Reads the ring buffers' overrun counts (a trace that lost events says so in its
//!    metadata, and the recording fails unless told to keep it), snapshots the queue's and
//!    the scheduler's sysfs attributes, writes groups.txt, then `meta.json` last, whole
//!    (written aside and renamed): a directory without it is a cut recording, which the
//!    next run refuses by name and `kernel-diff` tells skipped.
//!
//! Every step that changed something pushes its undo; on success, error or interruption
//! they run in reverse: tracing off and the instance removed, the top-level tracer, clock,
//! buffer size and the device's blktrace restored, the scheduler and queue attributes put
//! back, the loop device detached, the tmpfs unmounted and its directory removed (or the
//! backing file removed), tracefs unmounted if the recorder mounted it.
//!
//! ## Where it writes
//! Only in the output directory it is given (which must be new or empty), the backing file
//! (its own tmpfs, or the path it is given, which it creates and removes), and the loop
//! device it created. The job file is checked first: options that name other files or run
//! programs (`filename`, `directory`, `opendir`, `include`, `exec_*`, `write_*_log`,
//! `write_iolog`, `cgroup_weight`, `ioengine`s other than the plain ones ...) are refused, fio
//! runs in the output directory with `verify_state_save=0`, and fio's own output goes there.
//!
//! ## Jobs in cgroups
//! A job may run in a cgroup that exists already, with the bfq weight its maker gave it
//! (fio's `cgroup`, with `cgroup_nodelete=1`: fio moves the job's process there before its
//! first I/O and leaves the group): the recording's `groups.txt` then gives each job process
//! its group and each group its weight, which the block tracepoints do not carry
//! ([`cgroups`]).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use elevator_workload::traces::ftrace::recording::{
    fio_job_pids, DeviceInfo, FioInfo, KernelInfo, RecordingMeta, TraceInfo, META_FORMAT,
};
use elevator_workload::traces::ftrace::{KernelTrace, MARK_FIO_ENDED, MARK_FIO_STARTS};

use crate::leftovers::{self, Claim, Item};
use crate::tool::output_of;

pub mod cgroups;

/// Where tracefs is (or is mounted).
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The events recorded by default: every block event a request passes through, and kyber's.
pub const DEFAULT_EVENTS: &[&str] = &[
    "block/block_bio_queue",
    "block/block_getrq",
    "block/block_bio_backmerge",
    "block/block_bio_frontmerge",
    "block/block_rq_insert",
    "block/block_rq_merge",
    "block/block_rq_issue",
    "block/block_rq_requeue",
    "block/block_rq_complete",
    "block/block_rq_error",
    "block/block_split",
    "kyber/kyber_latency",
    "kyber/kyber_adjust",
    "kyber/kyber_throttled",
];

/// The ioengines a recorded job may use: each does its I/O on the job's file and nothing else
/// (`mmap` maps the device and its page faults and writeback make the requests; `splice`
/// moves the data through a pipe of its own).
const ENGINES: &[&str] = &[
    "psync", "sync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap",
    "splice",
];

/// Job options that name files or directories, run programs or touch other parts of the
/// system: a recorded job may not set them.
const REFUSED_OPTIONS: &[&str] = &[
    "filename",
    "directory",
    "filename_format",
    "unique_filename",
    "opendir",
    "exec_prerun",
    "exec_postrun",
    "write_iolog",
    "read_iolog",
    "replay_redirect",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "per_job_logs",
    "verify_state_save",
    "verify_state_load",
    "trigger",
    "trigger_file",
    "trigger_remote",
    "cgroup_weight",
    "ioscheduler",
    "pre_read",
    "create_on_open",
    "lockfile",
    "exitall_on_error",
    "mem",
    "iomem",
    "mmap",
    "hugepage-size",
];

/// What backs the loop device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A file on a private tmpfs mounted for the recording under the temporary directory.
    Tmpfs,
    /// A new file at this path (refused if it exists), removed at the end.
    File(PathBuf),
}

/// What to record, and how.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The fio job file to run (checked by [`check_job`]).
    pub job: PathBuf,
    /// The kernel scheduler: `none`, `mq-deadline`, `kyber`, `bfq`.
    pub scheduler: String,
    /// The recording directory: created, or an existing empty one.
    pub out: PathBuf,
    /// What backs the loop device.
    pub backing: Backing,
    /// The device's size, bytes.
    pub bytes: u64,
    /// `losetup --direct-io=on`.
    pub direct_io: bool,
    /// The loop device's logical sector size, bytes (512 or 4096).
    pub sector_size: u32,
    /// `queue/nr_requests` to set after the scheduler.
    pub nr_requests: Option<u32>,
    /// Other attributes to set after the scheduler: `queue/iosched/NAME` if the scheduler
    /// has it, else `queue/NAME`.
    pub set: Vec<(String, String)>,
    /// Whether to record bfq's log through the top-level blk tracer (bfq only).
    pub bfq_log: BfqLog,
    /// The events to enable (`system/name`); [`DEFAULT_EVENTS`] by default.
    pub events: Vec<String>,
    /// The tracefs instance's ring buffer per CPU, KiB.
    pub buffer_size_kb: u64,
    /// Compress the trace files and fio's output (`trace.txt.gz`, `fio.out.gz`) once the run
    /// is over.
    pub gzip: bool,
    /// Keep a recording whose ring buffer lost events (it fails otherwise).
    pub allow_lost: bool,
    /// The fio program.
    pub fio: PathBuf,
    /// Stop fio (SIGINT, then SIGKILL 10 s later) after this long.
    pub timeout: Option<Duration>,
}

/// Whether a recording under bfq also records bfq's log (`bfq_log_bfqq`'s notes through the
/// top-level `blk` tracer, `bfq-log.txt`). `kernel-diff` reads from it when bfq learned of
/// each completion, which of its dispatch calls returned nothing, the order it chose its
/// requests in and where processes exited; without it the replay infers them and agrees
/// less (docs/kernel-agreement.md, "Without bfq's log").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BfqLog {
    /// Not recorded.
    Off,
    /// Recorded under bfq when the top-level tracer is free (`nop`) and the kernel has the
    /// `blk` tracer; otherwise the recording goes on without it and says why.
    WhereFree,
    /// Recorded, or the recording fails (under bfq only).
    Required,
}

impl RecordOptions {
    /// Recording `job` under `scheduler` into `out` on a 256 MiB tmpfs-backed direct-I/O loop
    /// device with 512-byte sectors, the default events, 128 MiB of buffer per CPU, and bfq's
    /// log where the top-level tracer is free ([`BfqLog::WhereFree`]) under bfq.
    pub fn new(job: &Path, scheduler: &str, out: &Path) -> RecordOptions {
        RecordOptions {
            job: job.to_path_buf(),
            scheduler: scheduler.to_string(),
            out: out.to_path_buf(),
            backing: Backing::Tmpfs,
            bytes: 256 << 20,
            direct_io: true,
            sector_size: 512,
            nr_requests: None,
            set: Vec::new(),
            bfq_log: if scheduler == "bfq" {
                BfqLog::WhereFree
            } else {
                BfqLog::Off
            },
            events: DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect(),
            buffer_size_kb: 128 << 10,
            gzip: false,
            allow_lost: false,
            fio: PathBuf::from("fio"),
            timeout: None,
        }
    }
}

/// A recording that could not be made (the undo steps have run; their own failures are in
/// `cleanup`).
#[derive(Debug)]
pub struct RecordError {
    /// The step that failed.
    pub step: String,
    /// What went wrong.
    pub reason: String,
    /// Undo steps that failed after it.
    pub cleanup: Vec<String>,
}

impl RecordError {
    fn new(step: impl Into<String>, reason: impl fmt::Display) -> RecordError {
        RecordError {
            step: step.into(),
            reason: reason.to_string(),
            cleanup: Vec::new(),
        }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.reason)?;
        for c in &self.cleanup {
            write!(f, "; then, undoing: {c}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RecordError {}

type Result<T> = std::result::Result<T, RecordError>;

/// What a finished recording holds.
#[derive(Clone, Debug)]
pub struct RecordSummary {
    /// The recording directory.
    pub dir: PathBuf,
    /// Its metadata, as written.
    pub meta: RecordingMeta,
    /// Requests put together from the trace.
    pub requests: usize,
    /// Dispatches.
    pub dispatches: usize,
    /// Requests completed.
    pub completed: usize,
    /// Events in the trace.
    pub events: usize,
    /// Undo steps that failed (the recording itself is complete).
    pub cleanup: Vec<String>,
}

/// Check that a job file only does I/O on the file it is given: no option of
/// `REFUSED_OPTIONS`, no `include`, ioengines among the plain ones, and that it has a job
/// section besides `[global]` (fio runs nothing otherwise, and says only `No job(s)
/// defined`). Returns the reasons it is refused, each with its line, or nothing.
pub fn check_job(text: &str) -> Vec<String> {
    let mut refused = Vec::new();
    let mut jobs = 0;
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(section) = l.strip_prefix('[') {
            let name = section.split(']').next().unwrap_or("").trim();
            if !name.eq_ignore_ascii_case("global") {
                jobs += 1;
            }
            continue;
        }
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if l.starts_with("include ") || l == "include" {
            refused.push(format!(
                "line {}: `include` (the job must be one file)",
                n + 1
            ));
            continue;
        }
        let (key, value) = match l.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (l, None),
        };
        // fio expands `${VAR}` anywhere in a line, the option's name too: `${K}=/etc/x`
        // with K=filename in the environment wrote /etc/x, past every check of the name.
        if key.contains('$') {
            refused.push(format!(
                "line {}: an option named through an environment variable ({}): write the name",
                n + 1,
                elevator_workload::fio_file::excerpt(key)
            ));
            continue;
        }
        let key = key.to_ascii_lowercase();
        if REFUSED_OPTIONS.contains(&key.as_str()) {
            refused.push(format!(
                "line {}: `{key}` (a recorded job runs only on the recorder's loop device)",
                n + 1
            ));
        } else if key == "ioengine" {
            let engine = value.unwrap_or("");
            if !ENGINES.contains(&engine) {
                refused.push(format!(
                    "line {}: ioengine={engine} (allowed: {})",
                    n + 1,
                    ENGINES.join(", ")
                ));
            }
        } else if value.is_some_and(|v| v.contains("$")) {
            refused.push(format!(
                "line {}: `{key}` takes an environment variable; write the value",
                n + 1
            ));
        }
    }
    if jobs == 0 {
        refused.push("no job section, only [global] or none (fio would run nothing)".into());
    }
    refused
}

/// What fio said of a job file it refused (`fio --parse-only`, or its run): its message
/// lines joined, each `Bad option <OPT>` prefixed with the job file's line holding OPT
/// (fio names neither the file nor the line).
pub fn fio_refusal(text: &str, stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let said: Vec<String> = lines
        .iter()
        .rev()
        .take(6)
        .rev()
        .map(|l| {
            let bad = l
                .strip_prefix("Bad option <")
                .and_then(|r| r.strip_suffix('>'));
            let at = bad.and_then(|opt| {
                text.lines()
                    .position(|t| t.trim() == opt)
                    .map(|n| format!("line {}: ", n + 1))
            });
            format!("{}{l}", at.unwrap_or_default())
        })
        .collect();
    if said.is_empty() {
        "(fio said nothing on stderr)".into()
    } else {
        said.join("; ")
    }
}

/// One undo step: what it undoes, and how.
type UndoStep = (String, Box<dyn FnOnce() -> std::result::Result<(), String>>);

/// Undo steps, run in reverse.
struct Undo {
    steps: Vec<UndoStep>,
    /// The output directory once the checks found it new or empty (and whether the recorder
    /// created it): a recording that fails or is interrupted leaves it as it found it, so no
    /// cut recording (a trace.txt without meta.json) stays behind and the same `-o` works
    /// again.
    out: Option<(PathBuf, bool)>,
    /// The marker of what this run creates ([`crate::leftovers`]), taken once the checks
    /// pass; dropped after the steps ran, kept if one failed.
    claim: Option<Claim>,
}

impl Undo {
    fn push(
        &mut self,
        what: impl Into<String>,
        f: impl FnOnce() -> std::result::Result<(), String> + 'static,
    ) {
        self.steps.push((what.into(), Box::new(f)));
    }

    /// Note in the run's marker what is about to be created.
    fn note(&mut self, item: Item) -> Result<()> {
        match self.claim.as_mut() {
            Some(c) => c.note(item).map_err(|e| RecordError::new("leftovers", e)),
            None => Ok(()),
        }
    }

    fn run(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        while let Some((what, f)) = self.steps.pop() {
            if let Err(e) = f() {
                failed.push(format!("{what}: {e}"));
            }
        }
        failed
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        for f in self.run() {
            // Not `eprintln!`: its panic (stderr gone) would lose the lines after it, and abort the
            // process while unwinding.
            let _ = writeln!(std::io::stderr(), "elevator kernel-record: undoing: {f}");
        }
    }
}

fn write_attr(path: &Path, value: &str) -> std::result::Result<(), String> {
    fs::write(path, value).map_err(|e| format!("write {value:?} to {}: {e}", path.display()))
}

fn read_attr(path: &Path) -> std::result::Result<String, String> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("read {}: {e}", path.display()))
}

/// A job that made no request on the device: fio says nothing of a job whose offset lies
/// past the end of a block device (it does no I/O and exits 0), and the recording it would
/// have pointed at is removed, so the message names the likely cause (kfid57's user path).
fn no_request(dev: &Path, bytes: u64) -> String {
    format!(
        "the job made no request on {} (fio did no I/O: is every job's offset inside the \
         device's {} MiB, --size?)",
        dev.display(),
        bytes >> 20
    )
}

/// Why the queue refused `--nr-requests NR`: under `none` the queue's requests are the
/// driver's tags, and more than the tag set holds is refused (`EINVAL`), which the kernel's
/// error alone does not say.
fn nr_requests_refused(sched: &str, nr: u32, driver_tags: u32, e: impl fmt::Display) -> String {
    if sched == "none" && nr > driver_tags {
        format!(
            "{e}: under none the queue has the driver's {driver_tags} tags and no more \
             (--nr-requests {nr}; leave it out to keep them all)"
        )
    } else {
        e.to_string()
    }
}

/// The queue's least `nr_requests` (`BLKDEV_MIN_RQ`: `queue_requests_store` raises anything
/// under it).
const BLKDEV_MIN_RQ: u32 = 4;

/// Give the device all of its driver tags back, as the loop driver made them, by writing
/// through the queue's attributes (`write`, `read`: an attribute of `queue/` by name).
///
/// Under `none`, `nr_requests` is the driver's tag depth, and writing it resizes the
/// hardware queue's tag bitmap (6.18: `blk_mq_update_nr_requests`, `sbitmap_queue_resize`
/// of `hctx->tags->bitmap_tags`). Switching to a scheduler and back to `none` does not resize
/// it again: `elevator_switch` only sets `q->nr_requests` to the tag set's depth. So after
/// one recording under `none` with `nr_requests` 8, the loop device (which outlives its
/// backing file: `losetup -d` keeps the queue) dispatched at most 8 requests at a time under
/// every scheduler while `nr_requests` showed 128 or 256 (branch kfresh19: a recording at the
/// recorder's defaults had 8 in flight, its requests waiting in the scheduler for a driver
/// tag). Writing the depth `nr_requests` shows under `none` is a no-op
/// (`queue_requests_store` returns early when the value is unchanged), so one less is
/// written first, then the depth. Returns the depth.
fn regrow_driver_tags(
    read: &dyn Fn(&str) -> std::result::Result<String, String>,
    write: &mut dyn FnMut(&str, &str) -> std::result::Result<(), String>,
) -> std::result::Result<u32, String> {
    write("scheduler", "none")?;
    let shown = read("nr_requests")?;
    let depth: u32 = shown
        .parse()
        .map_err(|_| format!("nr_requests under none: {shown:?} is not a number"))?;
    if depth > BLKDEV_MIN_RQ {
        write("nr_requests", &(depth - 1).to_string())?;
        write("nr_requests", &depth.to_string())?;
    }
    Ok(depth)
}

/// The scheduler in brackets of a `queue/scheduler` file (or the clock of `trace_clock`).
fn current_scheduler(text: &str) -> Option<String> {
    elevator_workload::traces::ftrace::recording::bracketed_choice(text).map(str::to_string)
}

/// Every readable regular file of `dir`, by name.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if !p.is_file() {
            continue;
        }
        if let Ok(v) = fs::read_to_string(&p) {
            out.insert(
                e.file_name().to_string_lossy().into_owned(),
                v.trim().to_string(),
            );
        }
    }
    out
}

fn uname() -> KernelInfo {
    // SAFETY: uname fills the zeroed struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return KernelInfo::default();
    }
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    KernelInfo {
        release: s(&u.release),
        version: s(&u.version),
        machine: s(&u.machine),
        hz: config_hz(),
    }
}

/// `CONFIG_HZ` from the running kernel's `/proc/config.gz`, when it has one: bfq keeps
/// several of its times in jiffies, so the replay needs the jiffy's length.
fn config_hz() -> Option<u32> {
    use std::io::Read;
    let f = std::fs::File::open("/proc/config.gz").ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut text)
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// Copy `pipe` (a tracefs `trace_pipe`, opened non-blocking) to `out` until `stop` is set and
/// the pipe is empty.
fn stream(
    pipe: PathBuf,
    out: PathBuf,
    stop: Arc<AtomicBool>,
) -> JoinHandle<std::result::Result<u64, String>> {
    std::thread::spawn(move || {
        let mut src = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&pipe)
            .map_err(|e| format!("open {}: {e}", pipe.display()))?;
        let mut dst = File::create(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            match src.read(&mut buf) {
                Ok(0) => {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(n) => {
                    dst.write_all(&buf[..n])
                        .map_err(|e| format!("write {}: {e}", out.display()))?;
                    total += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read {}: {e}", pipe.display())),
            }
        }
        dst.flush()
            .map_err(|e| format!("write {}: {e}", out.display()))?;
        Ok(total)
    })
}

fn gzip_file(path: &Path) -> std::result::Result<PathBuf, String> {
    let gz = PathBuf::from(format!("{}.gz", path.display()));
    let mut src = File::open(path).map_err(|e| format!("open {}: {e}", path.display()))?;
    let dst = File::create(&gz).map_err(|e| format!("create {}: {e}", gz.display()))?;
    let mut enc = flate2::write::GzEncoder::new(dst, flate2::Compression::best());
    std::io::copy(&mut src, &mut enc).map_err(|e| format!("compress {}: {e}", path.display()))?;
    enc.finish()
        .map_err(|e| format!("compress {}: {e}", path.display()))?;
    fs::remove_file(path).map_err(|e| format!("remove {}: {e}", path.display()))?;
    Ok(gz)
}

/// Events the ring buffer of `instance` overwrote or dropped, summed over its CPUs.
fn lost_events(instance: &Path) -> u64 {
    let mut lost = 0;
    let Ok(rd) = fs::read_dir(instance.join("per_cpu")) else {
        return 0;
    };
    for cpu in rd.flatten() {
        let Ok(text) = fs::read_to_string(cpu.path().join("stats")) else {
            continue;
        };
        for line in text.lines() {
            let (k, v) = line.split_once(':').unwrap_or(("", ""));
            if k.trim() == "overrun" || k.trim() == "dropped events" {
                lost += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    lost
}

/// Why bfq's log cannot be recorded through `tracefs` (the mounted tracefs): the top-level
/// tracer in use by someone else, or no `blk` tracer in this kernel; `None` if it can.
fn bfq_log_refusal(tracefs: &Path) -> Option<String> {
    let cur = match read_attr(&tracefs.join("current_tracer")) {
        Ok(c) => c,
        Err(e) => return Some(format!("reading the top-level tracer: {e}")),
    };
    if cur != "nop" {
        return Some(format!(
            "the top-level tracer is {cur:?}, in use: the bfq log needs it free"
        ));
    }
    let has_blk = read_attr(&tracefs.join("available_tracers"))
        .map(|t| t.split_whitespace().any(|t| t == "blk"))
        .unwrap_or(false);
    (!has_blk).then(|| "this kernel has no blk tracer for the bfq log".to_string())
}

/// Record `opts.job` under the kernel's `opts.scheduler` into `opts.out`; see the module
/// docs. `stop`, once set (by a signal handler), stops fio and ends the recording with an
/// error after undoing everything. `progress` hears each step.
pub fn record(
    opts: &RecordOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str),
) -> Result<RecordSummary> {
    let mut undo = Undo {
        steps: Vec::new(),
        out: None,
        claim: None,
    };
    let result = record_inner(opts, stop, progress, &mut undo);
    let out = undo.out.take();
    let mut cleanup = undo.run();
    if let (false, Some(c)) = (cleanup.is_empty(), undo.claim.as_mut()) {
        c.keep();
    }
    if let (Err(_), Some((dir, created))) = (&result, out) {
        // Everything in it is the recorder's (it was new or empty).
        let emptied = if created {
            fs::remove_dir_all(&dir)
        } else {
            fs::read_dir(&dir).and_then(|rd| {
                rd.flatten().try_for_each(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => fs::remove_dir_all(e.path()),
                    _ => fs::remove_file(e.path()),
                })
            })
        };
        if let Err(e) = emptied {
            cleanup.push(format!(
                "remove the unfinished recording in {}: {e}",
                dir.display()
            ));
        }
    }
    match result {
        Ok(mut s) => {
            s.cleanup = cleanup;
            Ok(s)
        }
        Err(mut e) => {
            e.cleanup = cleanup;
            Err(e)
        }
    }
}

/// The device must fit where its data will live, before anything is set up (issue 32,
/// round 14). The private tmpfs holds every byte the job writes in memory, whatever its
/// `size=` mount option says (it bounds, it does not reserve), and this machine may have no
/// swap: `--size 64G` of a writing job would exhaust memory and wake the OOM killer among
/// other programs. So a tmpfs device is at most half the memory available (the kernel's own
/// default bound of a tmpfs, `shmem_default_max_blocks`, is half of RAM). A `--file` device
/// is sparse: writes past the free space of its filesystem would fail as I/O errors in the
/// middle of the recording, so it is at most the space available there.
fn check_space(opts: &RecordOptions) -> Result<()> {
    let mib = |b: u64| b >> 20;
    match &opts.backing {
        Backing::Tmpfs => {
            if let Some(avail) = crate::target::mem_available() {
                if opts.bytes > avail / 2 {
                    return Err(RecordError::new(
                        "check",
                        format!(
                            "device size {} MiB: its private tmpfs holds in memory what the \
                             job writes, and only {} MiB of memory is available (a tmpfs \
                             device is at most half of it); give a smaller --size, or --file \
                             PATH on a disk",
                            mib(opts.bytes),
                            mib(avail)
                        ),
                    ));
                }
            }
        }
        Backing::File(p) => {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if let Ok(free) = crate::target::free_bytes(dir) {
                if opts.bytes > free {
                    return Err(RecordError::new(
                        "check",
                        format!(
                            "device size {} MiB: more than the {} MiB free in {} for the \
                             backing file (writes past it would fail as I/O errors mid-run); \
                             give a smaller --size or another --file",
                            mib(opts.bytes),
                            mib(free),
                            dir.display()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Why a non-empty output directory is refused: a cut recording (what a `kernel-record` killed
/// outright leaves: its job.fio and trace without the meta.json written last) is named as one,
/// with how to remove it, never reused or mixed with a new one.
fn not_empty(out: &Path) -> String {
    let has = |name: &str| out.join(name).exists();
    let cut = !has("meta.json")
        && [
            "job.fio",
            "trace.txt",
            "trace.txt.gz",
            "fio.out",
            "meta.json.partial",
        ]
        .iter()
        .any(|n| has(n));
    if cut {
        format!(
            "{}: holds a cut recording (job.fio or a trace, no meta.json: a kernel-record killed \
             before it finished, or a power cut); nothing of it is reused: remove it (`rm -r {}`) \
             or record into another --out",
            out.display(),
            out.display()
        )
    } else {
        format!(
            "{}: not empty (each recording goes to a new or empty directory)",
            out.display()
        )
    }
}

fn record_inner(
    opts: &RecordOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str),
    undo: &mut Undo,
) -> Result<RecordSummary> {
    // Checks first: nothing is changed until they pass.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(RecordError::new(
            "check",
            "recording the kernel needs root (tracefs, sysfs, losetup)",
        ));
    }
    let sched = opts.scheduler.as_str();
    if sched.is_empty() || !sched.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(RecordError::new(
            "check",
            format!("scheduler {sched:?}: not a scheduler name"),
        ));
    }
    if opts.bfq_log == BfqLog::Required && sched != "bfq" {
        return Err(RecordError::new("check", "the bfq log needs --sched bfq"));
    }
    if opts.bytes < 1 << 20
        || !opts
            .bytes
            .is_multiple_of(u64::from(opts.sector_size.max(512)))
    {
        return Err(RecordError::new(
            "check",
            format!(
                "device size {} bytes: at least 1 MiB, in whole sectors",
                opts.bytes
            ),
        ));
    }
    check_space(opts)?;
    if ![512, 1024, 2048, 4096].contains(&opts.sector_size) {
        return Err(RecordError::new(
            "check",
            format!("sector size {}: 512, 1024, 2048 or 4096", opts.sector_size),
        ));
    }
    for (k, _) in &opts.set {
        if k.is_empty() || k.contains('/') || k.starts_with('.') || k == "scheduler" {
            return Err(RecordError::new(
                "check",
                format!("--set {k:?}: not a queue or scheduler attribute"),
            ));
        }
    }
    for e in &opts.events {
        let ok = e.split_once('/').is_some_and(|(s, n)| {
            !s.is_empty() && !n.is_empty() && !e.contains("..") && !n.contains('/')
        });
        if !ok {
            return Err(RecordError::new(
                "check",
                format!("event {e:?}: not system/name"),
            ));
        }
    }
    // Through the job-file reader's cap (1 MiB): /dev/zero or a FIFO is refused, not read
    // without bound.
    let job_text = elevator_workload::input::read_text(
        &opts.job,
        elevator_workload::fio_file::MAX_FILE_BYTES,
        "fio job file",
    )
    .map_err(|e| RecordError::new("check", format!("read the job file: {e}")))?;
    let refused = check_job(&job_text);
    if !refused.is_empty() {
        return Err(RecordError::new(
            "check",
            format!("{}: {}", opts.job.display(), refused.join("; ")),
        ));
    }
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    let job_groups = cgroups::check(&job_text, &mounts)
        .map_err(|e| RecordError::new("check", format!("{}: {e}", opts.job.display())))?;
    let fio_version = output_of(Command::new(&opts.fio).arg("--version"))
        .map_err(|e| RecordError::new("check", format!("fio is needed: {e}")))?;
    // fio's own parse, before anything is changed: a misspelt option is refused here with
    // its line, not after the device and tracing are set up with fio's last line only.
    let parsed = Command::new(&opts.fio)
        .arg("--parse-only")
        .arg(&opts.job)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| RecordError::new("check", format!("run {}: {e}", opts.fio.display())))?;
    if !parsed.status.success() {
        return Err(RecordError::new(
            "check",
            format!(
                "{}: fio refuses the job: {}",
                opts.job.display(),
                fio_refusal(&job_text, &String::from_utf8_lossy(&parsed.stderr))
            ),
        ));
    }
    if let Backing::File(p) = &opts.backing {
        // `lstat`, not `exists` (which follows links): a dangling symbolic link got as far as
        // the create, which failed with only "File exists" (O_EXCL does not follow it).
        if let Ok(m) = fs::symlink_metadata(p) {
            let what = if m.file_type().is_symlink() {
                let to = fs::read_link(p).map(|t| t.display().to_string());
                format!(
                    "a symbolic link (to {}); the backing file must be new: give the path it \
                     should be created at",
                    to.as_deref()
                        .unwrap_or("?")
                        .chars()
                        .take(120)
                        .collect::<String>()
                )
            } else {
                "exists; the backing file must be new".to_string()
            };
            return Err(RecordError::new(
                "check",
                format!("{}: {what}", p.display()),
            ));
        }
    }
    // What a killed earlier run left (its loop device, tmpfs, tracefs instance, top-level
    // tracer), cleaned before the output directory is looked at: a run refused for the cut
    // recording that killed run left still leaves the system clean.
    leftovers::clean_dead(&mut |m| progress(m)).map_err(|e| RecordError::new("leftovers", e))?;
    match fs::read_dir(&opts.out) {
        Ok(mut rd) => {
            if rd.next().is_some() {
                return Err(RecordError::new("check", not_empty(&opts.out)));
            }
            undo.out = Some((opts.out.clone(), false));
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(&opts.out).map_err(|e| {
                RecordError::new("check", format!("create {}: {e}", opts.out.display()))
            })?;
            undo.out = Some((opts.out.clone(), true));
        }
        Err(e) => {
            return Err(RecordError::new(
                "check",
                format!("{}: {e}", opts.out.display()),
            ))
        }
    }
    let out = fs::canonicalize(&opts.out)
        .map_err(|e| RecordError::new("check", format!("{}: {e}", opts.out.display())))?;
    let job_copy = out.join("job.fio");
    fs::write(&job_copy, &job_text)
        .map_err(|e| RecordError::new("check", format!("write {}: {e}", job_copy.display())))?;

    // What this run creates, noted first.
    undo.claim = Some(Claim::take("kernel-record").map_err(|e| RecordError::new("leftovers", e))?);

    // tracefs.
    let tracefs = PathBuf::from(TRACEFS);
    if !tracefs.join("instances").is_dir() {
        progress(&format!("mounting tracefs on {TRACEFS}"));
        output_of(Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]))
            .map_err(|e| RecordError::new("tracefs", e))?;
        undo.push("unmount tracefs", || {
            output_of(Command::new("umount").arg(TRACEFS)).map(drop)
        });
    }

    // The backing file.
    let backing_file = match &opts.backing {
        Backing::Tmpfs => {
            let dir = std::env::temp_dir().join(format!(
                "elevator-kernel-record.{}.{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0)
            ));
            undo.note(Item::Tmpfs {
                path: dir.clone(),
                source: "elevator-record".into(),
            })?;
            fs::create_dir(&dir).map_err(|e| {
                RecordError::new("backing", format!("create {}: {e}", dir.display()))
            })?;
            let d = dir.clone();
            undo.push(format!("remove {}", dir.display()), move || {
                fs::remove_dir(&d).map_err(|e| e.to_string())
            });
            let size = opts.bytes + (4 << 20);
            output_of(
                Command::new("mount")
                    .args([
                        "-t",
                        "tmpfs",
                        "-o",
                        &format!("size={size},mode=0700"),
                        "elevator-record",
                    ])
                    .arg(&dir),
            )
            .map_err(|e| RecordError::new("backing", e))?;
            let d = dir.clone();
            undo.push(format!("unmount {}", dir.display()), move || {
                output_of(Command::new("umount").arg(&d)).map(drop)
            });
            dir.join("device.img")
        }
        Backing::File(p) => p.clone(),
    };
    // Noted by its absolute path, as the loop device shows its backing file.
    let backing_file = match backing_file.parent().map(fs::canonicalize) {
        Some(Ok(d)) => d.join(backing_file.file_name().unwrap_or_default()),
        _ => backing_file,
    };
    undo.note(Item::Image {
        path: backing_file.clone(),
        id: None,
    })?;
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&backing_file)
        .map_err(|e| {
            RecordError::new("backing", format!("create {}: {e}", backing_file.display()))
        })?;
    if let Some(c) = undo.claim.as_mut() {
        c.created(&backing_file)
            .map_err(|e| RecordError::new("leftovers", e))?;
    }
    if let Backing::File(_) = opts.backing {
        let p = backing_file.clone();
        undo.push(format!("remove {}", p.display()), move || {
            fs::remove_file(&p).map_err(|e| e.to_string())
        });
    }
    f.set_len(opts.bytes).map_err(|e| {
        RecordError::new("backing", format!("size {}: {e}", backing_file.display()))
    })?;
    drop(f);

    // The loop device.
    let mut args = vec!["--find".to_string(), "--show".to_string()];
    if opts.direct_io {
        args.push("--direct-io=on".into());
    }
    args.push("--sector-size".into());
    args.push(opts.sector_size.to_string());
    let loop_dev = PathBuf::from(
        output_of(Command::new("losetup").args(&args).arg(&backing_file))
            .map_err(|e| RecordError::new("losetup", e))?,
    );
    {
        let l = loop_dev.clone();
        undo.push(format!("detach {}", l.display()), move || {
            output_of(Command::new("losetup").arg("-d").arg(&l)).map(drop)
        });
    }
    let name = loop_dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sys = Path::new("/sys/block").join(&name);
    let queue = sys.join("queue");
    let devno = read_attr(&sys.join("dev")).map_err(|e| RecordError::new("losetup", e))?;
    let (major, minor) = devno
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| RecordError::new("losetup", format!("{}/dev: {devno:?}", sys.display())))?;
    let dio = read_attr(&sys.join("loop/dio")).unwrap_or_default() == "1";
    if opts.direct_io && !dio {
        return Err(RecordError::new(
            "losetup",
            format!(
                "{}: not doing direct I/O (the backing file system may not support O_DIRECT)",
                loop_dev.display()
            ),
        ));
    }
    progress(&format!(
        "{} ({major}:{minor}) over {}",
        loop_dev.display(),
        backing_file.display()
    ));

    // The scheduler and the queue's settings.
    let sched_file = queue.join("scheduler");
    let before = read_attr(&sched_file).map_err(|e| RecordError::new("scheduler", e))?;
    let old_sched = current_scheduler(&before).unwrap_or_else(|| "none".into());
    let old_nr = read_attr(&queue.join("nr_requests")).ok();
    {
        let (f, q, s, nr) = (
            sched_file.clone(),
            queue.clone(),
            old_sched.clone(),
            old_nr.clone(),
        );
        undo.push(
            format!("put back {} and nr_requests", f.display()),
            move || {
                // Leave the driver's tags whole, whatever this recording wrote under none.
                regrow_driver_tags(&|a| read_attr(&q.join(a)), &mut |a, v| {
                    write_attr(&q.join(a), v)
                })?;
                write_attr(&f, &s)?;
                match nr {
                    Some(nr) => write_attr(&q.join("nr_requests"), &nr),
                    None => Ok(()),
                }
            },
        );
    }
    let driver_tags = regrow_driver_tags(&|a| read_attr(&queue.join(a)), &mut |a, v| {
        write_attr(&queue.join(a), v)
    })
    .map_err(|e| RecordError::new("driver tags", e))?;
    progress(&format!("{driver_tags} driver tags (regrown under none)"));
    // A scheduler the kernel lacks (bfq is a module some kernels are built without) was told
    // only as the write's EINVAL.
    let offered = elevator_workload::traces::ftrace::recording::offered_choices(&before);
    if !offered.contains(&sched) {
        return Err(RecordError::new(
            "scheduler",
            format!(
                "{} offers {} and not {sched} (modprobe {sched}, or a kernel built with it)",
                queue.display(),
                offered.join(", ")
            ),
        ));
    }
    write_attr(&sched_file, sched).map_err(|e| RecordError::new("scheduler", e))?;
    let now = current_scheduler(&read_attr(&sched_file).unwrap_or_default());
    if now.as_deref() != Some(sched) {
        return Err(RecordError::new(
            "scheduler",
            format!(
                "asked for {sched}, {} shows {now:?} (offered: {before})",
                sched_file.display()
            ),
        ));
    }
    let mut settings = BTreeMap::new();
    if let Some(nr) = opts.nr_requests {
        write_attr(&queue.join("nr_requests"), &nr.to_string()).map_err(|e| {
            RecordError::new(
                "nr_requests",
                nr_requests_refused(sched, nr, driver_tags, e),
            )
        })?;
        let got = read_attr(&queue.join("nr_requests")).unwrap_or_default();
        if got != nr.to_string() {
            return Err(RecordError::new(
                "nr_requests",
                format!("asked for {nr}, the queue shows {got}"),
            ));
        }
        settings.insert("nr_requests".to_string(), nr.to_string());
    }
    for (k, v) in &opts.set {
        let p = if queue.join("iosched").join(k).is_file() {
            queue.join("iosched").join(k)
        } else if queue.join(k).is_file() {
            queue.join(k)
        } else {
            return Err(RecordError::new(
                "--set",
                format!("{k}: neither {sched} nor the queue has it"),
            ));
        };
        let old = read_attr(&p).map_err(|e| RecordError::new("--set", e))?;
        write_attr(&p, v).map_err(|e| RecordError::new("--set", e))?;
        let q = p.clone();
        undo.push(format!("put back {}", p.display()), move || {
            write_attr(&q, &old)
        });
        settings.insert(k.clone(), v.clone());
    }

    // The tracefs instance.
    let inst = tracefs
        .join("instances")
        .join(format!("elevator-record-{}", std::process::id()));
    undo.note(Item::TraceInstance { path: inst.clone() })?;
    fs::create_dir(&inst).map_err(|e| {
        RecordError::new(
            "tracefs",
            format!("create the instance {}: {e}", inst.display()),
        )
    })?;
    {
        let i = inst.clone();
        undo.push(format!("remove {}", inst.display()), move || {
            let _ = write_attr(&i.join("tracing_on"), "0");
            let _ = write_attr(&i.join("events/enable"), "0");
            fs::remove_dir(&i).map_err(|e| e.to_string())
        });
    }
    let tr = |e: String| RecordError::new("tracefs", e);
    write_attr(&inst.join("tracing_on"), "0").map_err(tr)?;
    write_attr(
        &inst.join("buffer_size_kb"),
        &opts.buffer_size_kb.to_string(),
    )
    .map_err(tr)?;
    write_attr(&inst.join("trace_clock"), "mono").map_err(tr)?;
    let dev_t = (u64::from(major) << 20) | u64::from(minor);
    let mut enabled = Vec::new();
    for e in &opts.events {
        let dir = inst.join("events").join(e);
        if !dir.is_dir() {
            if e.starts_with("kyber/") {
                continue;
            }
            return Err(tr(format!("this kernel has no event {e}")));
        }
        let has_dev =
            fs::read_to_string(dir.join("format")).is_ok_and(|f| f.contains("dev_t dev;"));
        if has_dev {
            write_attr(&dir.join("filter"), &format!("dev == {dev_t}")).map_err(tr)?;
        }
        write_attr(&dir.join("enable"), "1").map_err(tr)?;
        enabled.push(e.clone());
    }
    write_attr(&inst.join("trace"), "").map_err(tr)?;

    // bfq's log through the top-level blk tracer.
    let mut bfq_pipe = None;
    let wanted = if sched == "bfq" {
        opts.bfq_log
    } else {
        BfqLog::Off
    };
    let refusal = (wanted != BfqLog::Off)
        .then(|| bfq_log_refusal(&tracefs))
        .flatten();
    let bfq_log = match (wanted, refusal) {
        (BfqLog::Off, _) => false,
        (_, None) => true,
        (BfqLog::Required, Some(why)) => return Err(tr(why)),
        (BfqLog::WhereFree, Some(why)) => {
            progress(&format!(
                "recording without bfq's log ({why}): kernel-diff agrees less without it"
            ));
            false
        }
    };
    if bfq_log {
        let clock = read_attr(&tracefs.join("trace_clock")).map_err(tr)?;
        let clock = current_scheduler(&clock).unwrap_or_else(|| "local".into());
        let size = read_attr(&tracefs.join("buffer_size_kb")).map_err(tr)?;
        let size = size.split_whitespace().next().unwrap_or("1408").to_string();
        let on = read_attr(&tracefs.join("tracing_on")).map_err(tr)?;
        // Noted before it is changed: a run killed outright leaves it `blk`, and the next
        // one puts it back (`leftovers::clean_dead`) instead of finding it in use.
        undo.note(Item::TopTracer {
            tracefs: tracefs.clone(),
            clock: clock.clone(),
            size_kb: size.clone(),
            on: on.clone(),
        })?;
        {
            let t = tracefs.clone();
            undo.push("put back the top-level tracer", move || {
                // The blk tracer's option, set below; shown only while the tracer is current.
                let _ = write_attr(&t.join("trace_options"), "noblk_cgroup");
                write_attr(&t.join("current_tracer"), "nop")?;
                write_attr(&t.join("trace_clock"), &clock)?;
                write_attr(&t.join("buffer_size_kb"), &size)?;
                write_attr(&t.join("tracing_on"), &on)
            });
        }
        let t = sys.join("trace");
        write_attr(&t.join("act_mask"), "notify").map_err(tr)?;
        write_attr(&t.join("enable"), "1").map_err(tr)?;
        undo.push(format!("switch off {}", t.display()), move || {
            write_attr(&t.join("enable"), "0")
        });
        write_attr(&tracefs.join("tracing_on"), "0").map_err(tr)?;
        write_attr(&tracefs.join("trace_clock"), "mono").map_err(tr)?;
        write_attr(
            &tracefs.join("buffer_size_kb"),
            &opts.buffer_size_kb.to_string(),
        )
        .map_err(tr)?;
        write_attr(&tracefs.join("trace"), "").map_err(tr)?;
        write_attr(&tracefs.join("current_tracer"), "blk").map_err(tr)?;
        // Each of bfq's notes then carries its queue's group's cgroup id
        // (`blk_add_cgroup_trace_msg`), which groups.txt's `cgroup` lines name: the replay
        // finds the group blk-throttle's kworker was served in. A kernel without the option
        // (no CONFIG_BLK_CGROUP) records as before.
        if write_attr(&tracefs.join("trace_options"), "blk_cgroup").is_err() {
            progress("the blk tracer has no blk_cgroup option: bfq's notes name no group");
        }
        bfq_pipe = Some(tracefs.join("trace_pipe"));
    }

    // Snapshots of what the run sees.
    let queue_attrs = snapshot(&queue);
    let iosched = snapshot(&queue.join("iosched"));
    let hw_queue_depth = read_attr(Path::new("/sys/module/loop/parameters/hw_queue_depth"))
        .ok()
        .and_then(|v| v.parse().ok());

    // Record.
    let stop_readers = Arc::new(AtomicBool::new(false));
    let trace_file = out.join("trace.txt");
    let reader = stream(
        inst.join("trace_pipe"),
        trace_file.clone(),
        stop_readers.clone(),
    );
    let bfq_file = out.join("bfq-log.txt");
    let bfq_reader = bfq_pipe.map(|p| stream(p, bfq_file.clone(), stop_readers.clone()));
    let tracing = [Some(inst.clone()), bfq_log.then(|| tracefs.clone())];
    for t in tracing.iter().flatten() {
        write_attr(&t.join("tracing_on"), "1").map_err(tr)?;
    }
    let _ = write_attr(&inst.join("trace_marker"), MARK_FIO_STARTS);
    let fio_args: Vec<String> = vec![
        "--output-format=normal,json".into(),
        "--output=fio.out".into(),
        "--eta=never".into(),
        format!("--filename={}", loop_dev.display()),
        "--verify_state_save=0".into(),
        "job.fio".into(),
    ];
    progress(&format!(
        "fio {} (in {})",
        fio_args.join(" "),
        out.display()
    ));
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let t0 = Instant::now();
    let fio_result = (|| -> Result<Option<i32>> {
        let mut child = leftovers::die_with_parent(&mut Command::new(&opts.fio))
            .args(&fio_args)
            .current_dir(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RecordError::new("fio", format!("run {}: {e}", opts.fio.display())))?;
        let mut stderr = child.stderr.take();
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(e) = stderr.as_mut() {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let mut signalled: Option<Instant> = None;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => return Err(RecordError::new("fio", format!("wait: {e}"))),
            }
            let late = opts.timeout.is_some_and(|t| t0.elapsed() > t);
            if signalled.is_none() && (stop.load(Ordering::SeqCst) || late) {
                // SAFETY: signalling our own child by its pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
                signalled = Some(Instant::now());
            }
            if signalled.is_some_and(|s| s.elapsed() > Duration::from_secs(10)) {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let err_text = err_reader.join().unwrap_or_default();
        if !err_text.trim().is_empty() {
            let _ = fs::write(out.join("fio.stderr"), &err_text);
        }
        if stop.load(Ordering::SeqCst) {
            return Err(RecordError::new("fio", "interrupted"));
        }
        if signalled.is_some() {
            return Err(RecordError::new(
                "fio",
                format!(
                    "stopped after the timeout of {:?}",
                    opts.timeout.unwrap_or_default()
                ),
            ));
        }
        if !status.success() {
            return Err(RecordError::new(
                "fio",
                format!("{status}: {}", fio_refusal(&job_text, &err_text)),
            ));
        }
        Ok(status.code())
    })();
    let seconds = t0.elapsed().as_secs_f64();
    let _ = write_attr(&inst.join("trace_marker"), MARK_FIO_ENDED);
    for t in tracing.iter().flatten() {
        let _ = write_attr(&t.join("tracing_on"), "0");
    }
    stop_readers.store(true, Ordering::SeqCst);
    let read = reader
        .join()
        .map_err(|_| RecordError::new("trace", "the reader thread panicked"))
        .and_then(|r| r.map_err(|e| RecordError::new("trace", e)));
    let bfq_read = bfq_reader.map(|h| {
        h.join()
            .map_err(|_| RecordError::new("bfq log", "the reader thread panicked"))
            .and_then(|r| r.map_err(|e| RecordError::new("bfq log", e)))
    });
    let exit_code = fio_result?;
    read?;
    if let Some(r) = bfq_read {
        r?;
    }
    let mut lost = lost_events(&inst);
    if bfq_log {
        lost += lost_events(&tracefs);
    }
    let fio_out = fs::read_to_string(out.join("fio.out")).unwrap_or_default();

    let (mut trace_name, mut bfq_name) = (
        "trace.txt".to_string(),
        bfq_log.then(|| "bfq-log.txt".to_string()),
    );
    if opts.gzip {
        gzip_file(&trace_file).map_err(|e| RecordError::new("gzip", e))?;
        trace_name.push_str(".gz");
        if let Some(b) = bfq_name.as_mut() {
            gzip_file(&bfq_file).map_err(|e| RecordError::new("gzip", e))?;
            b.push_str(".gz");
        }
        if out.join("fio.out").is_file() {
            gzip_file(&out.join("fio.out")).map_err(|e| RecordError::new("gzip", e))?;
        }
    }
    let meta = RecordingMeta {
        format: META_FORMAT,
        recorder: format!("elevator {} kernel-record", env!("CARGO_PKG_VERSION")),
        started_unix,
        seconds,
        kernel: uname(),
        scheduler: sched.to_string(),
        device: DeviceInfo {
            name: name.clone(),
            major,
            minor,
            backing: match &opts.backing {
                Backing::Tmpfs => "tmpfs".into(),
                Backing::File(p) => format!("file:{}", p.display()),
            },
            bytes: opts.bytes,
            direct_io: dio,
            hw_queue_depth,
        },
        settings,
        queue: queue_attrs,
        iosched,
        trace: TraceInfo {
            file: trace_name,
            bfq_log: bfq_name,
            instance: inst
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            clock: "mono".into(),
            events: enabled,
            buffer_size_kb: opts.buffer_size_kb,
            lost,
        },
        fio: FioInfo {
            version: fio_version,
            args: fio_args,
            job_file: "job.fio".into(),
            jobs: fio_job_pids(&fio_out),
            exit_code,
        },
    };
    // meta.json last, whole or not at all (written aside, then renamed): a recording killed
    // at any moment (SIGKILL, a power cut) is one without meta.json, which the next run and
    // kernel-diff tell as cut, never one that looks whole but lacks its groups.txt or half
    // its meta.json.
    cgroups::write(&out, &job_text, &job_groups, &meta.fio.jobs)
        .map_err(|e| RecordError::new("groups.txt", format!("write: {e}")))?;
    let json = serde_json::to_string_pretty(&meta).map_err(|e| RecordError::new("meta.json", e))?;
    let aside = out.join("meta.json.partial");
    fs::write(&aside, json + "\n")
        .and_then(|()| File::open(&aside)?.sync_all())
        .and_then(|()| fs::rename(&aside, out.join("meta.json")))
        .map_err(|e| RecordError::new("meta.json", format!("write: {e}")))?;
    if lost > 0 && !opts.allow_lost {
        return Err(RecordError::new(
            "trace",
            format!("the ring buffer lost {lost} events (a larger --buffer-kb, fewer events or a shorter job, or --allow-lost to keep it); the incomplete recording in {} is not kept", out.display()),
        ));
    }
    let trace = KernelTrace::read(&out.join(&meta.trace.file), Some(meta.dev()))
        .map_err(|e| RecordError::new("read the trace back", e))?;
    if trace.requests.is_empty() {
        return Err(RecordError::new("trace", no_request(&loop_dev, opts.bytes)));
    }
    Ok(RecordSummary {
        dir: out,
        requests: trace.requests.len(),
        dispatches: trace.dispatches.len(),
        completed: trace
            .requests
            .iter()
            .filter(|r| r.completed.is_some())
            .count(),
        events: trace.stats.events,
        meta,
        cleanup: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_may_only_do_io_on_its_device() {
        let ok = "[global]\ndirect=1\nioengine=libaio\n; comment\n# comment\n[a]\nrw=randread\nprio=7\nprioclass=2\n";
        assert!(check_job(ok).is_empty());
        let bad = "[a]\nfilename=/etc/passwd\nDirectory = /tmp\nioengine=exec\ninclude other.fio\nwrite_lat_log=x\nexec_prerun=rm -rf /\nsize=${SIZE}\ncgroup_weight=100\n";
        let r = check_job(bad);
        assert_eq!(r.len(), 8, "{r:?}");
        assert!(r[0].starts_with("line 2: `filename`"), "{r:?}");
        assert!(r[1].starts_with("line 3: `directory`"), "{r:?}");
        assert!(r[2].starts_with("line 4: ioengine=exec"), "{r:?}");
    }

    /// A job file of `[global]` alone ran fio, which printed `No job(s) defined` to its
    /// normal output and exited 1, and the recording failed with `fio: exit status: 1: `
    /// and nothing after (kfid54's user path).
    /// The mmap and splice engines do their I/O on the job's file alone: a user's job using
    /// them is recorded (kfid57: both were refused, `ioengine=mmap (allowed: ...)`).
    #[test]
    fn the_mmap_and_splice_engines_are_recorded() {
        let job = "[m]\nioengine=mmap\nrw=randread\n[s]\nioengine=splice\nrw=read\n";
        assert!(check_job(job).is_empty(), "{:?}", check_job(job));
    }

    /// More requests than the driver's tags under none: the kernel says only `Invalid
    /// argument`; the message gives the limit and the way out (kfid57's user path).
    /// A job past the device's end: the message names offsets and the device's size, not a
    /// fio.out that the failed recording's removal takes with it.
    #[test]
    fn a_job_with_no_request_names_the_devices_size() {
        let e = no_request(Path::new("/dev/loop0"), 256 << 20);
        assert!(e.contains("offset inside the device's 256 MiB"), "{e}");
        assert!(!e.contains("fio.out"), "{e}");
    }

    #[test]
    fn nr_requests_past_nones_tags_names_the_limit() {
        let e = nr_requests_refused("none", 1024, 128, "Invalid argument (os error 22)");
        assert!(
            e.contains("the driver's 128 tags") && e.contains("--nr-requests 1024"),
            "{e}"
        );
        let e = nr_requests_refused("bfq", 1024, 128, "Invalid argument (os error 22)");
        assert_eq!(e, "Invalid argument (os error 22)");
    }

    #[test]
    fn a_job_file_without_a_job_section_is_refused() {
        let r = check_job("[global]\nrw=read\nbs=4k\n");
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].starts_with("no job section"), "{r:?}");
        assert!(check_job("; nothing\n")
            .iter()
            .any(|m| m.starts_with("no job section")));
        assert!(check_job("[GLOBAL]\n[reader]\nrw=read\n").is_empty());
    }

    /// fio's refusal of a misspelt option, as fio 3.33 prints it: the recorder used to give
    /// only its last line (`fio: job a dropped`), after setting up the device and tracing.
    #[test]
    fn fios_refusal_names_the_job_files_line_of_a_bad_option() {
        let job = "[a]\nrw=read\nbs=4k\niodepht=4\n";
        let said = "Bad option <iodepht=4>\nDid you mean iodepth?\nfio: job a dropped\n";
        assert_eq!(
            fio_refusal(job, said),
            "line 4: Bad option <iodepht=4>; Did you mean iodepth?; fio: job a dropped"
        );
        assert_eq!(fio_refusal(job, "\n"), "(fio said nothing on stderr)");
    }

    /// fio expands `${VAR}` in an option's name as in its value (issue 32, round 14):
    /// `${KEYX}=/tmp/x` with KEYX=filename in the environment made fio write /tmp/x, and
    /// only values were looked at for `$`.
    #[test]
    fn a_job_naming_an_option_through_an_environment_variable_is_refused() {
        let r = check_job("[a]\n${KEYX}=/etc/passwd\nfile${E}name=/etc/x\nsize=1m\n");
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].starts_with("line 2: an option named through"), "{r:?}");
        assert!(r[1].starts_with("line 3: an option named through"), "{r:?}");
    }

    #[test]
    fn the_current_scheduler_is_the_bracketed_one() {
        assert_eq!(
            current_scheduler("none [mq-deadline] kyber bfq").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            current_scheduler("[none] mq-deadline").as_deref(),
            Some("none")
        );
        assert_eq!(current_scheduler("none"), None);
    }

    #[test]
    fn the_driver_tags_regrow_under_none_one_less_first() {
        // `blk_mq_update_nr_requests` under none resizes the driver tags' bitmap;
        // `queue_requests_store` ignores a write of the value shown, and `elevator_switch`
        // back to none shows the tag set's depth without resizing: a bitmap left at 8 by an
        // earlier recording only grows back by a write of another value first.
        let mut writes = Vec::new();
        let depth = regrow_driver_tags(
            &|a| Ok(if a == "nr_requests" { "128" } else { "" }.into()),
            &mut |a, v| {
                writes.push(format!("{a}={v}"));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(depth, 128);
        assert_eq!(
            writes,
            ["scheduler=none", "nr_requests=127", "nr_requests=128"]
        );
        // At BLKDEV_MIN_RQ there is nothing under it to write.
        let mut writes = Vec::new();
        regrow_driver_tags(&|_| Ok("4".into()), &mut |a, v| {
            writes.push(format!("{a}={v}"));
            Ok(())
        })
        .unwrap();
        assert_eq!(writes, ["scheduler=none"]);
        let e = regrow_driver_tags(&|_| Ok("x".into()), &mut |_, _| Ok(())).unwrap_err();
        assert!(e.contains("nr_requests under none"), "{e}");
    }

    #[test]
    fn undo_steps_run_in_reverse_and_report_failures() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut u = Undo {
            steps: Vec::new(),
            out: None,
            claim: None,
        };
        for i in 0..3 {
            let l = log.clone();
            u.push(format!("step {i}"), move || {
                l.borrow_mut().push(i);
                if i == 1 {
                    Err("no".into())
                } else {
                    Ok(())
                }
            });
        }
        assert_eq!(u.run(), ["step 1: no"]);
        assert_eq!(*log.borrow(), [2, 1, 0]);
    }

    #[test]
    fn recording_refuses_before_changing_anything() {
        let d = tempfile::tempdir().unwrap();
        let job = d.path().join("j.fio");
        std::fs::write(&job, "[a]\nfilename=/dev/sda\n").unwrap();
        let out = d.path().join("rec");
        let stop = AtomicBool::new(false);
        let e = record(&RecordOptions::new(&job, "none", &out), &stop, &mut |_| {}).unwrap_err();
        assert_eq!(e.step, "check");
        // Refused before the output directory was made, root or not.
        assert!(!out.exists());
    }
}
