//! `elevator replay TRACE... --sched a,b [--drive SPEC | --target PATH] [--closed-loop]`: a
//! recorded block trace replayed through our schedulers, on a simulated drive or on a real
//! file or device, one run per scheduler, figures per process and in total side by side.
//!
//! The trace is streamed (`elevator_workload::traces::open`), once per scheduler; its format
//! is detected unless `--format` names it. Open loop by default (requests at their recorded
//! times divided by `--speed`); `--closed-loop` makes each process's synchronous requests
//! wait for the previous one plus the recorded think time (see
//! `elevator_workload::jobs::replay`). On a real target the executor's safety rules hold: a
//! trace with writes is refused on an existing non-empty file or a device carrying data unless
//! `--allow-overwrite`, and no request leaves the target's size.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::{bail, Context};
use elevator_core::{GroupId, GroupTree, IoPrio, SECTOR_BYTES};
use elevator_real::target::{self, OpenSpec};
use elevator_real::{ByteRange, RealJob, RunOptions, UringBackend};
use elevator_sim::engine::JobSlot;
use elevator_sim::{Device, DriveModel, Simulation};
use elevator_workload::jobs::replay::{ReplayJob, ReplayOptions, ReplayOutcome};
use elevator_workload::metrics::{JobMetrics, JobSummary};
use elevator_workload::traces::blktrace::BlkView;
use elevator_workload::traces::blktrace_out::BlktraceWriter;
use elevator_workload::traces::{open, OpenOptions, TraceFormat};
use serde::Serialize;

use crate::output::{self, say};

/// The drive a trace is replayed on when `--drive` names none (the Python API's trace default
/// too): the disk the DiskSim validation traces and docs/traces were made for.
pub const DEFAULT_DRIVE: &str = "cheetah9lp";

/// Which requests of a blktrace or blkparse trace to replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum View {
    /// The application's: every queued bio (Q), before merging.
    Queue,
    /// The device's: every dispatched request (D), with its measured D->C service time.
    Dispatch,
}

/// Arguments of `elevator replay`.
#[derive(clap::Args)]
pub struct Args {
    /// Trace files (one format; several are merged by time; a blktrace per-CPU file brings its
    /// siblings `<dev>.blktrace.<n>`). `-`, a pipe or a FIFO is read once into a temporary
    /// file, so every scheduler replays all of it.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// The trace format (default: detected): blktrace, blkparse, fio-iolog, msr, spc, alibaba,
    /// tencent, disksim, mqsim.
    #[arg(long)]
    format: Option<TraceFormat>,
    /// For blktrace and blkparse traces: replay the queue (Q) or the dispatch (D) view.
    #[arg(long, value_enum, default_value_t = View::Queue)]
    view: View,
    #[command(flatten)]
    scheds: super::common::SchedOpts,
    /// Simulated drive: a built-in name or a drive TOML (default cheetah9lp, the 1999 disk the
    /// DiskSim-era traces were made on; `sim` of a fio job defaults to samsung-980pro-1tb).
    /// The output names the drive used.
    #[arg(long, conflicts_with = "target")]
    drive: Option<String>,
    /// Replay on this real file or block device instead of a simulated drive.
    #[arg(long)]
    target: Option<PathBuf>,
    /// Allow writing over an existing file or a device carrying data (--target).
    #[arg(long)]
    allow_overwrite: bool,
    /// Closed loop: a process's synchronous request waits for its previous one plus the
    /// recorded think time.
    #[arg(long)]
    closed_loop: bool,
    /// Replay speed: recorded times and gaps are divided by it.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Replay at most this many requests.
    #[arg(long)]
    max_requests: Option<u64>,
    /// Replay a trace that is not in time order, in file order: a record stamped earlier
    /// than one before it is issued at once (at 0 if before the first record), and the run
    /// says how many there were and where the first is. Without it such a record is refused,
    /// naming its file, line and time field.
    #[arg(long)]
    accept_unsorted: bool,
    #[command(flatten)]
    out: super::common::OutputOpts,
}

#[derive(Serialize)]
struct RunJson {
    scheduler: String,
    device: String,
    end_s: f64,
    issued: u64,
    skipped: u64,
    /// Records stamped earlier than one before them (accepted with --accept-unsorted).
    out_of_order: u64,
    /// Where the first of them is (`FILE:LINE` or `FILE: byte N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    first_out_of_order: Option<String>,
    /// Records that repeat one just before them exactly (same time, process, operation,
    /// sector and length), replayed as given.
    duplicates: u64,
    /// Where the first of them is (`FILE:LINE` or `FILE: byte N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    first_duplicate: Option<String>,
    /// Times the replay waited at its bound of outstanding requests.
    held_back: u64,
    /// Processes past the bound, replayed as one.
    merged_processes: u64,
    /// Requests of that shared context from pids past the ones the replay remembers.
    merged_untracked: u64,
    /// Requests beyond the device's end, wrapped into it (a trace of a larger device).
    wrapped: u64,
    /// Records of length 0 the trace's reader skipped (MSR, SPC, Alibaba, Tencent).
    zero_length: u64,
    /// fio's `disk_util` entry from the block layer's `/sys/block/DEV/stat` counters
    /// (requests and merges per direction, ticks, utilisation).
    disk_util: serde_json::Value,
    total: JobSummary,
    processes: Vec<JobSummary>,
}

#[derive(Serialize)]
struct ReplayJson {
    traces: Vec<String>,
    closed_loop: bool,
    speed: f64,
    runs: Vec<RunJson>,
}

/// The columns of the side-by-side table: fio's latency percentiles (p50, p90, p99, p99.9),
/// as `sim` and `run` give them.
fn compare_header() -> Vec<&'static str> {
    output::latency_header(&["scheduler", "seconds"], &["reads"], &["writes"])
}

/// The columns of a run's table of processes: [`compare_header`]'s, a process for a
/// scheduler and without the run's seconds.
fn process_header() -> Vec<&'static str> {
    output::latency_header(&["process"], &["reads"], &["writes"])
}

/// A row of counts and latencies under [`process_header`] (after its first cells): each
/// direction's requests, then its mean and fio's percentiles.
fn latency_row(s: &JobSummary) -> Vec<String> {
    let mut row = Vec::with_capacity(12);
    for d in [&s.read, &s.write] {
        row.push(format!("{}", d.ios));
        row.extend(output::latency_cells(d, 2));
    }
    row
}

/// Traces that are not regular files (a pipe, a FIFO, standard input, a character device)
/// can be read only once: format detection would consume their start and every scheduler
/// after the first would replay nothing. Each is copied once, as it streams (bounded memory),
/// into a private directory under the same file name, and the copies are replayed.
///
/// A stream is not a trace of unbounded length: its first 64 KiB must show a trace format
/// (unless `--format` names one), and the copy stops with an error before it takes more than
/// half of the space the temporary directory's file system has free (less 256 MiB), so
/// `replay /dev/zero` is refused at once and an endless stream of trace lines fills no disk.
struct Spooled {
    paths: Vec<PathBuf>,
    /// `(copy, original)` of each spooled stream, to name the original in errors.
    copies: Vec<(String, String)>,
    /// The private directory of the copies: removed when dropped, and by the signal watcher
    /// if Ctrl-C or SIGTERM ends the process mid-replay.
    _dir: Option<elevator_workload::input::Temporary>,
}

/// What a spooled stream leaves free on the temporary file system at least, beside half of
/// what was free.
const SPOOL_RESERVE: u64 = 256 << 20;
/// What format detection reads of a trace (as `traces::open` does).
const DETECT_BYTES: usize = 64 * 1024;

impl Spooled {
    /// `e` with each spooled copy's path replaced by the stream it was read from.
    /// The chain of causes is kept, so the error prints as any other (`caused by:` lines).
    fn unmask(&self, e: anyhow::Error) -> anyhow::Error {
        if self.copies.is_empty() {
            return e;
        }
        let unmasked = |cause: &dyn std::fmt::Display| {
            let mut text = cause.to_string();
            for (copy, original) in &self.copies {
                text = text.replace(copy.as_str(), original);
            }
            text
        };
        let mut causes: Vec<String> = e.chain().map(|c| unmasked(c)).collect();
        let mut out = anyhow::anyhow!(causes.pop().expect("an error has a message"));
        while let Some(outer) = causes.pop() {
            out = out.context(outer);
        }
        out
    }
}

/// Bytes the spool may write on the file system of `dir`.
fn spool_allowance(dir: &std::path::Path) -> anyhow::Result<u64> {
    let avail = elevator_real::target::free_bytes(dir)
        .with_context(|| format!("{}: free space", dir.display()))?;
    Ok(avail.saturating_sub(SPOOL_RESERVE) / 2)
}

/// Copy `input` to `out`, refusing a start that shows no trace format (without `format`) and
/// a stream longer than `allowance`. `shown` names the stream in errors.
fn spool_one(
    input: impl std::io::Read,
    out: &mut std::fs::File,
    shown: &str,
    format: Option<TraceFormat>,
    allowance: u64,
    dir: &std::path::Path,
) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let read = || format!("{shown}: read the stream");
    let keep = || format!("{shown}: keep the stream in {}", dir.display());
    // The start, as detection would read it from a file.
    // A compressed stream is refused before a byte is kept, by the check every trace file
    // passes (`traces::lines::checked`).
    let mut input = elevator_workload::traces::lines::checked(input, shown)?;
    let mut head = Vec::with_capacity(DETECT_BYTES);
    (&mut input)
        .take(DETECT_BYTES as u64)
        .read_to_end(&mut head)
        .with_context(read)?;
    anyhow::ensure!(
        format.is_some() || elevator_workload::traces::detect(&head).is_some(),
        "{shown}: {}",
        elevator_workload::traces::undetected(&head)
    );
    let too_long = |passed: u64| {
        anyhow::anyhow!(
            "{shown}: the stream passed {passed} bytes, half of what {dir} had free (less 256 \
             MiB): a trace read from a pipe is kept in a temporary file for every scheduler to \
             replay; replay a file instead (or set TMPDIR to a larger file system)",
            dir = dir.display(),
        )
    };
    let head_len = head.len() as u64;
    if head_len > allowance {
        return Err(too_long(head_len));
    }
    let blktrace = match format {
        Some(f) => f == TraceFormat::Blktrace,
        None => elevator_workload::traces::detect(&head) == Some(TraceFormat::Blktrace),
    };
    // A blktrace stream must start with blktrace's magic: anything else (`/dev/zero` piped
    // in) is refused at once, not after copying it to the allowance.
    anyhow::ensure!(
        !blktrace
            || head.is_empty()
            || elevator_workload::traces::detect(&head) == Some(TraceFormat::Blktrace),
        "{shown}: byte 0: field `magic`: not a blktrace record (no blktrace magic at its start)"
    );
    // Text traces: a line past the readers' bound ends the copy at once (`cat /dev/zero |
    // elevator replay --format msr -` was copied until half the disk was full).
    let mut lines = LineBound::default();
    if !blktrace {
        lines.check(&head, shown)?;
    }
    out.write_all(&head).with_context(keep)?;
    // The rest up to the allowance, then one byte more tells whether the stream goes on.
    let mut rest = (&mut input).take(allowance - head_len);
    let mut copied = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match rest.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(read),
        };
        if !blktrace {
            lines.check(&buf[..n], shown)?;
        }
        out.write_all(&buf[..n])
            .with_context(|| format!("{shown}: copy the stream into {}", dir.display()))?;
        copied += n as u64;
    }
    let mut more = Vec::new();
    input.take(1).read_to_end(&mut more).with_context(read)?;
    if !more.is_empty() {
        return Err(too_long(head_len + copied + 1));
    }
    Ok(())
}

/// The length of the line a text stream is in, checked against the trace readers' bound
/// ([`elevator_workload::traces::lines::MAX_LINE`]) as the stream is copied.
#[derive(Default)]
struct LineBound {
    /// Bytes since the last newline.
    open: usize,
    /// Newlines seen.
    lines: usize,
}

impl LineBound {
    fn check(&mut self, bytes: &[u8], shown: &str) -> anyhow::Result<()> {
        let max = elevator_workload::traces::lines::MAX_LINE;
        for chunk in bytes.split_inclusive(|&b| b == b'\n') {
            let ended = chunk.last() == Some(&b'\n');
            self.open += chunk.len() - usize::from(ended);
            anyhow::ensure!(
                self.open <= max,
                "{shown}:{}: a line longer than {} KiB: not a text trace (the readers' bound)",
                self.lines + 1,
                max >> 10
            );
            if ended {
                self.lines += 1;
                self.open = 0;
            }
        }
        Ok(())
    }
}

fn spool_streams(traces: &[PathBuf], format: Option<TraceFormat>) -> anyhow::Result<Spooled> {
    use std::os::unix::fs::FileTypeExt;
    let mut dir: Option<elevator_workload::input::Temporary> = None;
    let mut paths = Vec::new();
    let mut copies = Vec::new();
    for (i, p) in traces.iter().enumerate() {
        // `-` is standard input, as for any Unix filter.
        let stdin = p.as_os_str() == "-";
        if !stdin {
            let meta = std::fs::metadata(p)
                .map_err(|e| anyhow::anyhow!("{}: cannot read the trace: {e}", p.display()))?;
            let ft = meta.file_type();
            if ft.is_file() {
                paths.push(p.clone());
                continue;
            }
            anyhow::ensure!(
                ft.is_fifo() || ft.is_socket(),
                "{}: not a trace file ({}): give a file, a pipe or `-`",
                p.display(),
                if ft.is_dir() {
                    "a directory"
                } else if ft.is_char_device() {
                    "a character device, such as /dev/zero or a terminal"
                } else {
                    "a block device"
                }
            );
        } else {
            // Standard input that is a terminal or /dev/null holds no trace (nor does a
            // character device such as /dev/zero, which never ends).
            // SAFETY: fstat fills the zeroed stat it is given.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above; descriptor 0 may be closed, which fstat reports.
            let r = unsafe { libc::fstat(0, &mut st) };
            anyhow::ensure!(
                r != 0 || st.st_mode & libc::S_IFMT != libc::S_IFCHR,
                "standard input is a character device (a terminal, /dev/null or /dev/zero), \
                 not a trace: pipe the trace in or give its file"
            );
        }
        if dir.is_none() {
            dir = Some(
                super::common::private_dir("elevator-replay")
                    .context("a temporary directory for a trace read from a pipe")?,
            );
        }
        let d = dir.as_ref().expect("made above");
        let name = match p.file_name() {
            Some(n) if !stdin => n.to_os_string(),
            _ => "stdin".into(),
        };
        let sub = d.path().join(i.to_string());
        std::fs::create_dir(&sub)?;
        let copy = sub.join(name);
        let shown = if stdin {
            "standard input".to_string()
        } else {
            p.display().to_string()
        };
        let input: Box<dyn std::io::Read> = if stdin {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(elevator_workload::input::open(p).with_context(|| format!("{shown}: open"))?)
        };
        let mut out = std::fs::File::create(&copy)
            .with_context(|| format!("{shown}: spool to {}", copy.display()))?;
        let allowance = spool_allowance(d.path())?;
        spool_one(input, &mut out, &shown, format, allowance, d.path())?;
        copies.push((copy.display().to_string(), shown));
        paths.push(copy);
    }
    Ok(Spooled {
        paths,
        copies,
        _dir: dir,
    })
}

/// Replay under each scheduler.
pub fn run(mut args: Args) -> anyhow::Result<()> {
    use super::common::{Input, Supported};
    let sched = args.scheds.names("deadline")?;
    let mut inputs: Vec<Input> = Vec::new();
    for t in &args.traces {
        for s in elevator_workload::traces::stream::blktrace_siblings(t) {
            inputs.push(Input::new("a trace", s));
        }
    }
    if let Some(d) = &args.drive {
        inputs.push(Input::new("the drive spec", d));
    }
    if let Some(t) = &args.target {
        super::common::check_target(t, &inputs)?;
        inputs.push(Input::new("the target", t));
    }
    args.out.check(
        "replay",
        Supported {
            request_log: args.target.is_some(),
            ..Supported::ALL
        },
        &sched,
        &inputs,
        &[],
    )?;
    anyhow::ensure!(
        (0.001..=1e6).contains(&args.speed),
        // `{:?}` prints 1e-300 as written, where `{}` printed 300 digits.
        "--speed {:?}: not a factor from 0.001 to 1000000 (recorded times are divided by it)",
        args.speed
    );
    output::json_to_stdout(args.out.json.as_deref());
    let extra = super::parse_sets(&args.scheds.set)?;
    // Each run is named as the user named its scheduler (`none`, not our registry's `noop`).
    let infos: Vec<_> = sched
        .iter()
        .cloned()
        .zip(super::find_schedulers(&sched)?)
        .collect();
    super::check_sets(&extra, &sched)?;
    let opts = OpenOptions {
        format: args.format,
        view: match args.view {
            View::Queue => BlkView::Queue,
            View::Dispatch => BlkView::Dispatch,
        },
        accept_unsorted: args.accept_unsorted,
    };
    // A pipe or FIFO is read once, into a file every scheduler then replays.
    let unchanged = super::common::Unchanged::take(&inputs);
    let spooled = spool_streams(&args.traces, args.format)?;
    let shown = args.traces.clone();
    args.traces = spooled.paths.clone();
    replay_spooled(args, opts, shown, infos, extra, &unchanged).map_err(|e| spooled.unmask(e))
}

/// Replay the traces (regular files, or the spooled copies of streams) under each scheduler.
fn replay_spooled(
    args: Args,
    opts: OpenOptions,
    shown: Vec<PathBuf>,
    infos: Vec<(String, elevator_core::registry::SchedulerSpec)>,
    extra: elevator_core::Settings,
    unchanged: &super::common::Unchanged,
) -> anyhow::Result<()> {
    // Open once up front so a bad trace fails before anything runs, and an empty one (no
    // request: only a header, only zero-length records, /dev/null) is refused rather than
    // reported as a replay of nothing, figures of zeroes beside an exit status of 0.
    anyhow::ensure!(
        args.max_requests != Some(0),
        "--max-requests 0: would replay nothing (give at least 1, or leave it out for the \
         whole trace)"
    );
    let mut probe = open(&args.traces, opts)?;
    if let Some(first) = probe.next() {
        first?;
    } else {
        let zero = match probe.zero_length() {
            0 => String::new(),
            n => format!(" (its {n} records all have length 0)"),
        };
        bail!(
            "{}: the trace holds no request{zero}: nothing to replay",
            args.traces
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    drop(probe);
    let real = match &args.target {
        Some(path) => {
            // On a real target Ctrl-C stops the replay: what is in flight completes and the
            // target is re-marked as elevator's (a kill mid-write would get the next replay
            // refused for a file only elevator wrote).
            crate::signals::cooperate(true);
            Some(open_target(path, &args, opts)?)
        }
        None => None,
    };
    // Whatever way this returns, a file elevator laid out and then wrote is re-marked as its
    // own (as `run` does), so the next replay on it is not refused.
    let _remember = real
        .as_ref()
        .map(|(tgt, _)| super::run::RememberOnDrop(tgt));
    let spec = match (&args.target, &args.drive) {
        (Some(_), _) => None,
        (None, d) => Some(
            DriveModel::resolve(d.as_deref().unwrap_or(DEFAULT_DRIVE))
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        ),
    };
    // `sim` of a fio job runs on the SSD model by default, `replay` on this disk: a workload
    // moved from one to the other changed drive unsaid (round 22's review).
    if args.target.is_none() && args.drive.is_none() {
        say!(
            "drive: {DEFAULT_DRIVE}, replay's default (a 1999 disk; `sim` of a fio job defaults \
             to {}); --drive NAME for another (`elevator list`)",
            super::sim_job::DEFAULT_DRIVE
        );
    }
    // The schedulers see the device's `rotational` flag, as the kernel's read it from the queue.
    let rotational = match (&args.target, &spec) {
        (Some(path), _) => target::rotational(path),
        (None, Some(drive)) => Some(!drive.device().non_rotational()),
        (None, None) => None,
    };
    let mut runs = Vec::new();
    let mut compare = Vec::new();
    let mut outcomes = super::common::Outcomes::default();
    let page = crate::report::Sink::new(
        args.out.report.is_some(),
        &format!("elevator replay {}", shown[0].display()),
    );
    let mut latencies = Vec::new();
    for (nth, (label, info)) in infos.iter().enumerate() {
        let label = label.as_str();
        let settings = super::settings_on_device(info, &extra, rotational);
        let groups = GroupTree::new();
        let sched = info
            .build(&settings, &groups)
            .map_err(|e| anyhow::anyhow!("scheduler {}: {e}", label))?;
        // On the simulator the trace is written as the requests go; on a real target, from the
        // executor's request log after the run.
        let writer = match (&args.out.blktrace_out, &spec) {
            (Some(dir), Some(_)) => outcomes
                .keep(
                    BlktraceWriter::create(dir, label)
                        .with_context(|| format!("--blktrace-out {}", dir.display())),
                )
                .map(|w| Rc::new(RefCell::new(w))),
            _ => None,
        };
        let source = open(&args.traces, opts)?;
        let (total, end, device, outcome, disk) = match (&spec, &real) {
            (Some(spec), _) => {
                let device: Box<dyn Device> = spec.device();
                let capacity = device.capacity_sectors();
                let (job, outcome) =
                    ReplayJob::new("replay", source, replay_options(&args, capacity))
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                let mut sim = Simulation::new(device, sched, groups);
                if let Some(w) = &writer {
                    sim.set_observer(Box::new(w.clone()));
                }
                sim.add_job(JobSlot::new("replay", Box::new(job)));
                let live = crate::progress::Live::start(label, None);
                sim.count_completions(live.counter());
                if page.is_on() {
                    sim.record_requests();
                }
                let report = sim.run(None);
                live.finish();
                let title = format!("replay under {} on {}", label, report.device);
                outcomes.keep(crate::report::sim::run_plots(&page, label, &title, &report));
                latencies.push(crate::plot::latencies(
                    label,
                    &crate::plot::ios_from_sim(&report.requests),
                ));
                let total = report.jobs[0].metrics.clone();
                (
                    total,
                    report.end,
                    report.device.clone(),
                    outcome,
                    report.disk,
                )
            }
            (None, Some((tgt, name))) => {
                let capacity = tgt.size / SECTOR_BYTES;
                let (job, outcome) =
                    ReplayJob::new("replay", source, replay_options(&args, capacity))
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                let mut sched = sched;
                let file = tgt
                    .file
                    .try_clone()
                    .with_context(|| format!("{name}: duplicate the file handle"))?;
                let mut backend =
                    UringBackend::new(file, tgt.size, elevator_real::uring::DEFAULT_ENTRIES)
                        .context("set up io_uring (is it disabled by kernel.io_uring_disabled?)")?;
                let jobs = vec![RealJob {
                    name: "replay".into(),
                    job: Box::new(job),
                    group: GroupId::ROOT,
                    group_path: "/".into(),
                    prio: IoPrio::default(),
                    region: ByteRange {
                        start: 0,
                        end: capacity * SECTOR_BYTES,
                    },
                    phase: 0,
                    start_delay: elevator_core::Nanos::ZERO,
                    rw_flags: 0,
                }];
                let live = crate::progress::Live::start(label, None);
                let run_opts = RunOptions {
                    progress: Some(live.counter()),
                    stop: Some(&crate::signals::STOP),
                    request_log: page.is_on()
                        || args.out.blktrace_out.is_some()
                        || args.out.request_log.is_some(),
                    ..RunOptions::default()
                };
                let report = elevator_real::run(&mut backend, sched.as_mut(), jobs, &run_opts);
                live.finish();
                let report = match report {
                    Ok(r) => r,
                    Err(f) => bail!("scheduler {}: {}", label, f.error),
                };
                if report.interrupted {
                    bail!(
                        "scheduler {}: interrupted (what was in flight completed; the target \
                         is re-marked; no output written)",
                        label
                    );
                }
                if let Some(dir) = &args.out.blktrace_out {
                    outcomes.keep(super::run_blktrace::write(dir, label, &report));
                }
                outcomes.keep(args.out.write_request_log(label, &report));
                outcomes.keep(crate::report::real::run_plots(&page, name, &report));
                latencies.push(crate::plot::latencies(
                    label,
                    &crate::plot::ios_from_real(&report.requests),
                ));
                let total = report.jobs[0].metrics.clone();
                (total, report.elapsed, name.clone(), outcome, report.disk)
            }
            _ => unreachable!("either a drive or a target"),
        };
        let outcome = outcome.borrow();
        if let Some(e) = &outcome.error {
            bail!("{e}");
        }
        // Each scheduler reads the traces again: all must have replayed the same ones. Before
        // the blktrace is renamed into place: a failed run leaves none (the writer is dropped).
        unchanged.check()?;
        if let Some(w) = &writer {
            outcomes.keep(super::common::finish_blktrace(w));
        }
        let total_summary = total.summary("total", "/", end);
        if nth == 0 {
            // Each scheduler reads the same records: told once.
            warn_duplicates(&outcome);
        }
        print_run(label, &device, end, &outcome, &total_summary);
        let mut row = vec![label.to_string(), format!("{:.3}", end.as_secs_f64())];
        row.extend(latency_row(&total_summary));
        compare.push(row);
        runs.push(RunJson {
            scheduler: label.to_string(),
            device,
            end_s: end.as_secs_f64(),
            issued: outcome.issued,
            skipped: outcome.skipped,
            out_of_order: outcome.out_of_order,
            first_out_of_order: outcome.first_out_of_order.as_ref().map(|a| a.to_string()),
            duplicates: outcome.duplicates,
            first_duplicate: outcome.first_duplicate.as_ref().map(|a| a.to_string()),
            held_back: outcome.held_back,
            merged_processes: outcome.merged_processes,
            merged_untracked: outcome.merged_untracked,
            wrapped: outcome.wrapped,
            zero_length: outcome.zero_length,
            disk_util: elevator_real::report::disk_util_json(&disk, "elevator", end),
            total: total_summary,
            processes: outcome
                .processes
                .iter()
                .map(|p| summary(&ReplayOutcome::label(p), &p.metrics, end))
                .collect(),
        });
    }
    if infos.len() > 1 {
        say!(
            "== {} loop, speed {}: schedulers side by side (all processes)",
            if args.closed_loop { "closed" } else { "open" },
            args.speed
        );
        output::say_str(&output::table(&compare_header(), &compare));
    }
    let what = format!(
        "{} loop, speed {}",
        if args.closed_loop { "closed" } else { "open" },
        args.speed
    );
    page.table(
        &format!("Schedulers side by side ({what})"),
        &compare_header(),
        &compare,
    );
    outcomes.keep(page.plot(
        "latency-cdf",
        "Latency CDF: every request under every scheduler",
        || crate::plot::cdf::latency_cdf(&what, &latencies),
    ));
    if let Some(path) = &args.out.json {
        outcomes.keep(output::write_json(
            path,
            &ReplayJson {
                traces: shown.iter().map(|p| p.display().to_string()).collect(),
                closed_loop: args.closed_loop,
                speed: args.speed,
                runs,
            },
        ));
    }
    outcomes.keep(page.write(args.out.report.as_deref()));
    outcomes.finish()
}

fn replay_options(args: &Args, capacity_sectors: u64) -> ReplayOptions {
    ReplayOptions {
        closed_loop: args.closed_loop,
        speed: args.speed,
        capacity_sectors,
        max_requests: args.max_requests,
    }
}

fn summary(name: &str, m: &JobMetrics, end: elevator_core::Nanos) -> JobSummary {
    m.summary(name, "/", end)
}

/// Open the real target, refusing writes over data unless allowed (the trace is scanned once
/// to learn whether it writes and how far it reaches).
fn open_target(
    path: &std::path::Path,
    args: &Args,
    opts: OpenOptions,
) -> anyhow::Result<(target::Target, String)> {
    let mut writes = false;
    let mut reach = 0u64;
    let records =
        open(&args.traces, opts)?.take(args.max_requests.map_or(usize::MAX, |m| m as usize));
    for (n, r) in records.enumerate() {
        let r = r?;
        writes |= matches!(r.op, elevator_core::Op::Write);
        // Checked: a request at the top of the address space must not wrap to a small reach.
        let end = r
            .sector
            .checked_add(u64::from(r.sectors))
            .and_then(|e| e.checked_mul(SECTOR_BYTES));
        let Some(end) = end else {
            bail!(
                "{}: request {} (sector {} + {} sectors) ends past the top of the 64-bit byte \
                 address space",
                args.traces[0].display(),
                n + 1,
                r.sector,
                r.sectors
            );
        };
        reach = reach.max(end);
    }
    let need = match target::existing_size(path)? {
        Some(size) if size > 0 => size.min(reach.max(SECTOR_BYTES)),
        _ => reach,
    };
    let tgt = target::open(
        path,
        OpenSpec {
            writes,
            allow_overwrite: args.allow_overwrite,
            need_bytes: need,
            // Empty: the whole of [0, need) counts as written (a trace may write anywhere).
            write_regions: Vec::new(),
            stop: Some(&crate::signals::STOP),
        },
    )?;
    Ok((tgt, path.display().to_string()))
}

/// Say on stderr how many records of the trace repeat one just before them exactly, and
/// where the first is (a trace whose lines were written twice replays at twice its load).
fn warn_duplicates(outcome: &ReplayOutcome) {
    if outcome.duplicates > 0 {
        let first = match &outcome.first_duplicate {
            Some(at) => format!("; the first at {at}"),
            None => String::new(),
        };
        crate::output::tell!(
            "elevator replay: warning: {} records of the trace repeat a record just before them \
             exactly (same time, process, operation, sector and length){first}: each was \
             replayed as its own request, as blkparse and fio would; a trace whose lines were \
             written twice doubles its load (remove the copies to replay the recording)",
            outcome.duplicates
        );
    }
}

fn print_run(
    sched: &str,
    device: &str,
    end: elevator_core::Nanos,
    outcome: &ReplayOutcome,
    total: &JobSummary,
) {
    const MAX_ROWS: usize = 30;
    say!(
        "== {sched} on {device}: {} requests replayed ({} skipped), {:.3} s",
        outcome.issued,
        outcome.skipped,
        end.as_secs_f64()
    );
    if outcome.merged_processes > 0 {
        use elevator_workload::jobs::replay::{MAX_PROCESSES, MAX_TRACKED_PIDS, OTHERS_PID};
        let untracked = match outcome.merged_untracked {
            0 => String::new(),
            n => format!(
                "; past {MAX_TRACKED_PIDS} pids they are not told apart: {n} more requests came \
                 from pids not counted"
            ),
        };
        say!(
            "note: the trace has more than {MAX_PROCESSES} processes; the {} past them were \
             replayed as one (pid {OTHERS_PID}){untracked}",
            outcome.merged_processes,
        );
    }
    if outcome.out_of_order > 0 {
        let first = match &outcome.first_out_of_order {
            Some(at) => format!(", the first at {at} (field `{}`)", at.time_field),
            None => String::new(),
        };
        say!(
            "note (--accept-unsorted): {} records of the trace are stamped earlier than a record \
             before them{first}; each went out at once, behind the later one (at 0 if before \
             the first record)",
            outcome.out_of_order
        );
    }
    if outcome.wrapped > 0 {
        say!(
            "note: {} requests of the trace lie beyond the end of the device ({device}): each \
             was wrapped into it (sector modulo the device's size), so their positions are not \
             the recorded ones; replay on a drive as large as the recorded one to keep them",
            outcome.wrapped
        );
    }
    if outcome.zero_length > 0 {
        say!(
            "note: {} records of the trace have length 0 (a request of no bytes): the reader \
             skipped them, so they are not among the requests replayed",
            outcome.zero_length
        );
    }
    if outcome.held_back > 0 {
        say!(
            "note: the device fell behind the trace: {} times the replay waited with {} \
             requests outstanding, so later requests went out after their recorded times",
            outcome.held_back,
            elevator_workload::jobs::replay::MAX_OUTSTANDING
        );
    }
    let mut procs: Vec<_> = outcome.processes.iter().collect();
    procs.sort_by_key(|p| std::cmp::Reverse(p.metrics.read.ios + p.metrics.write.ios));
    let row = |name: String, s: &JobSummary| {
        let mut row = vec![name];
        row.extend(latency_row(s));
        row
    };
    let mut rows: Vec<Vec<String>> = procs
        .iter()
        .take(MAX_ROWS)
        .map(|p| {
            let label = ReplayOutcome::label(p);
            row(label.clone(), &summary(&label, &p.metrics, end))
        })
        .collect();
    if procs.len() > MAX_ROWS {
        rows.push(vec![format!(
            "... {} more (see --json)",
            procs.len() - MAX_ROWS
        )]);
    }
    rows.push(row("total".into(), total));
    output::say_str(&output::table(&process_header(), &rows));
    say!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// An endless stream of valid trace lines stops at the allowance with an error naming
    /// the stream, having written no more than the allowance.
    #[test]
    fn an_endless_stream_of_trace_lines_stops_at_the_spool_allowance() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        let mut out = std::fs::File::create(&path).unwrap();
        let reader = Bytes(Box::new(b"0.5 0 100 8 1\n".iter().copied().cycle()));
        let allowance = 1 << 20;
        let e = spool_one(reader, &mut out, "the pipe", None, allowance, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("the pipe: the stream passed"), "{e}");
        let written = std::fs::metadata(&path).unwrap().len();
        assert!(written <= allowance, "{written} bytes written");
        assert!(written > allowance / 2, "{written} bytes written");
    }

    /// A stream that shows no trace format is refused before anything is written; with
    /// `--format` it is copied whole.
    #[test]
    fn a_stream_without_a_trace_format_is_refused_before_it_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        let mut out = std::fs::File::create(&path).unwrap();
        let zeros = std::io::repeat(0).take(1 << 20);
        let e = spool_one(zeros, &mut out, "/dev/zero", None, u64::MAX, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot tell the trace format"), "{e}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        // With `--format`, lines are copied whole; one line longer than a trace's lines
        // (zeros without a newline, as /dev/zero gives) is refused (round 5).
        let lines = std::io::repeat(b'\n').take(100_000);
        let format = Some(TraceFormat::Msr);
        spool_one(lines, &mut out, "-", format, u64::MAX, dir.path()).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100_000);
        let zeros = std::io::repeat(0).take(100_000);
        let e = spool_one(zeros, &mut out, "/dev/zero", format, u64::MAX, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero"), "{e}");
    }

    /// A reader over an iterator of bytes.
    struct Bytes(Box<dyn Iterator<Item = u8>>);

    impl Read for Bytes {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let mut n = 0;
            for slot in buf.iter_mut() {
                match self.0.next() {
                    Some(b) => *slot = b,
                    None => break,
                }
                n += 1;
            }
            Ok(n)
        }
    }
}
