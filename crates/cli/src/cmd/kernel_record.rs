//! `elevator kernel-record`: run a fio job under the kernel's own schedulers on a loop device
//! and record every block event (a thin shell over `elevator_real::kernel_record`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use elevator_real::kernel_record::{self, Backing, BfqLog, RecordOptions};

use crate::output::say;

/// Record the kernel's schedulers deciding a fio job (needs root, tracefs and fio).
///
/// For each scheduler: a loop device over a file on a private tmpfs (or `--file`), the
/// scheduler set with `--nr-requests` and `--set`, the block and kyber tracepoints recorded in
/// a tracefs instance of its own while fio runs JOB against the device; the recording
/// (trace, job file, fio's output, meta.json with the kernel, the queue's and scheduler's
/// sysfs attributes and fio's job pids) goes to OUT/SCHED. Everything set up is undone at
/// the end, on error and on Ctrl-C.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The fio job file. It may not name files (filename, directory ...), run programs or
    /// log to files: fio runs it against the loop device only.
    pub job: PathBuf,
    /// The kernel schedulers, comma-separated: none, mq-deadline, kyber, bfq.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,mq-deadline,kyber,bfq"
    )]
    pub sched: Vec<String>,
    /// The recordings go to OUT/SCHED (each new or empty).
    #[arg(long, short = 'o', value_name = "OUT")]
    pub out: PathBuf,
    /// Back the loop device with a new file at this path (with direct I/O: a file on the
    /// disk), removed at the end, instead of a private tmpfs.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// The device's size (K, M, G suffixes).
    #[arg(long, default_value = "256M")]
    pub size: String,
    /// Attach the loop device without direct I/O (through the backing file's page cache).
    #[arg(long)]
    pub no_direct_io: bool,
    /// The loop device's logical sector size, bytes.
    #[arg(long, default_value_t = 512)]
    pub sector_size: u32,
    /// The queue's nr_requests (scheduler tags; 4 at the least) after the scheduler is set.
    #[arg(long, value_name = "N")]
    pub nr_requests: Option<u32>,
    /// Set a scheduler tunable or queue attribute after the scheduler (NAME=VALUE, sysfs
    /// names: fifo_batch=4, slice_idle=0, wbt_lat_usec=0 ...); repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Require bfq's log (bfq_log_bfqq, through the top-level blk tracer) in bfq-log.txt:
    /// fail if the tracer is in use. Without this flag bfq's log is recorded under bfq
    /// wherever the top-level tracer is free, and left out with a notice where it is not
    /// (kernel-diff agrees less without it).
    #[arg(long, conflicts_with = "no_bfq_log")]
    pub bfq_log: bool,
    /// Do not record bfq's log.
    #[arg(long)]
    pub no_bfq_log: bool,
    /// The events to record (system/name, comma-separated) instead of the block and kyber
    /// defaults.
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
    /// The trace ring buffer per CPU, KiB (128 MiB: a few seconds of a job at 150,000 IOPS
    /// under a loaded machine, whose reader falls behind; kfid57).
    #[arg(long, default_value_t = 131072)]
    pub buffer_kb: u64,
    /// Compress the trace files with gzip (trace.txt.gz) once recorded.
    #[arg(long)]
    pub gzip: bool,
    /// Keep a recording whose ring buffer lost events instead of failing.
    #[arg(long)]
    pub allow_lost: bool,
    /// The fio program.
    #[arg(long, default_value = "fio")]
    pub fio: PathBuf,
    /// Stop fio after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
}

use crate::signals::STOP;

/// The kernel's schedulers a recording can be made under (the blk-mq elevators Linux ships:
/// block/mq-deadline.c, kyber-iosched.c, bfq-iosched.c, and `none`), the names `kernel-diff`
/// replays into ours.
const KERNEL_SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

/// Refuse, before anything on the machine is touched, a `--sched` the recorder cannot make a
/// recording under, or one named twice. The kernel's own refusal (`elv_iosched_store`:
/// EINVAL for a name `elevator_find_get` does not know) came only after a tmpfs, a loop device
/// and its queue were set up, as "write "foo" to /sys/block/loopN/queue/scheduler: Invalid
/// argument"; a scheduler named twice was recorded a second time, into the directory its
/// first recording filled, and refused only then (`OUT/SCHED` must be new or empty).
fn check_scheds(scheds: &[String]) -> Result<()> {
    for (i, s) in scheds.iter().enumerate() {
        if !KERNEL_SCHEDULERS.contains(&s.as_str()) {
            bail!(
                "--sched {s:?}: not a kernel scheduler a recording is made under (one of {})",
                KERNEL_SCHEDULERS.join(", ")
            );
        }
        if scheds[..i].contains(s) {
            bail!("--sched: {s} named twice (each is recorded once, into OUT/{s})");
        }
    }
    Ok(())
}

/// Ctrl-C and SIGTERM set [`STOP`]: fio is stopped and everything undone before exiting
/// (every later signal is absorbed too, so the undoing finishes).
fn install_stop_handler() {
    crate::signals::cooperate(false);
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let bytes = elevator_workload::fio_file::parse_size(&args.size)
        .map_err(|e| anyhow::anyhow!("--size {:?}: {e}", args.size))?;
    let mut set = Vec::new();
    for kv in &args.set {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--set {kv:?}: expected NAME=VALUE"))?;
        set.push((k.trim().to_string(), v.trim().to_string()));
    }
    if args.sched.is_empty() {
        bail!("--sched: name at least one scheduler");
    }
    check_scheds(&args.sched)?;
    if args.file.is_some() && args.sched.len() > 1 {
        // One path, created and removed per scheduler: fine, but say so.
        say!(
            "# the backing file {} is made anew for each scheduler",
            args.file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
    }
    install_stop_handler();
    for sched in &args.sched {
        let out = args.out.join(sched);
        let mut opts = RecordOptions::new(&args.job, sched, &out);
        opts.backing = match &args.file {
            Some(p) => Backing::File(p.clone()),
            None => Backing::Tmpfs,
        };
        opts.bytes = bytes;
        opts.direct_io = !args.no_direct_io;
        opts.sector_size = args.sector_size;
        opts.nr_requests = args.nr_requests;
        opts.set = set.clone();
        opts.bfq_log = match (sched.as_str(), args.bfq_log, args.no_bfq_log) {
            ("bfq", true, _) => BfqLog::Required,
            ("bfq", false, false) => BfqLog::WhereFree,
            _ => BfqLog::Off,
        };
        if !args.events.is_empty() {
            opts.events = args.events.clone();
        }
        opts.buffer_size_kb = args.buffer_kb;
        opts.gzip = args.gzip;
        opts.allow_lost = args.allow_lost;
        opts.fio = args.fio.clone();
        opts.timeout = args.timeout.map(Duration::from_secs);
        let s = kernel_record::record(&opts, &STOP, &mut |m| {
            crate::output::tell!("# {sched}: {m}")
        })
        .with_context(|| format!("recording {} under {sched}", args.job.display()))?;
        say!(
            "{sched}: {} requests, {} dispatches, {} completed, {} events in {:.1} s; kernel {}; {} lost; {}",
            s.requests,
            s.dispatches,
            s.completed,
            s.events,
            s.meta.seconds,
            s.meta.kernel.release,
            s.meta.trace.lost,
            s.dir.display()
        );
        for c in &s.cleanup {
            crate::output::tell!("elevator kernel-record: warning: undoing: {c}");
        }
    }
    Ok(())
}
