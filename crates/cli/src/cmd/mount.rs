//! `elevator mount BACKING_DIR MOUNTPOINT --sched NAME`: a passthrough FUSE filesystem whose
//! data I/O our schedulers decide (crates/mount; docs/mount.md).
//!
//! Serves in the foreground until unmounted (`fusermount3 -u MOUNTPOINT`, `umount`) or
//! interrupted (Ctrl-C or SIGTERM: unmounts). Either way every queued and in-flight I/O
//! completes before the command exits.
//!
//! With `--blktrace-out DIR` or `--report DIR` the submission engine keeps a log of the
//! latest requests (`--log-limit`), written at unmount as `DIR/mount.blktrace.0`
//! ([`super::run_blktrace`]) and as an HTML page ([`crate::report::mount`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use elevator_mount::{GroupMode, GroupRule, MountConfig, MountLog};

/// Mount a directory through one of our schedulers.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory whose files the mount shows (on the device to schedule).
    pub backing: PathBuf,
    /// Where to mount it.
    pub mountpoint: PathBuf,
    /// The scheduler (see `elevator list`); change it later with
    /// `echo NAME > MOUNTPOINT/.elevator/scheduler`.
    #[arg(long, default_value = "none")]
    pub sched: String,
    /// Set a tunable (sysfs name and unit), e.g. `--set slice_idle=0`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Put processes named NAME (as /proc/PID/comm) in group PATH with WEIGHT (the
    /// scheduler's scale), e.g. `--group dd=/writer:100`. Repeatable.
    #[arg(long = "group", value_name = "NAME=/PATH[:WEIGHT]")]
    pub group: Vec<GroupRule>,
    /// Group every other process by its cgroup v2 path (default: the root group).
    #[arg(long)]
    pub cgroups: bool,
    /// Let other users use the mount (FUSE allow_other); permissions are still checked.
    #[arg(long)]
    pub allow_other: bool,
    /// Turn off the kernel's writeback cache: every write then reaches us at once, sync.
    #[arg(long)]
    pub no_writeback_cache: bool,
    /// Threads reading /dev/fuse.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// At unmount, write the requests as a blktrace, `DIR/mount.blktrace.0` (Q, I, D, C,
    /// each process under its pid and name), for blkparse, btt and iowatcher.
    #[arg(long, value_name = "DIR")]
    pub blktrace_out: Option<PathBuf>,
    /// At unmount, write a self-contained HTML page, `DIR/index.html` (per-process table,
    /// latency CDF, throughput and queue depth over time).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// With --blktrace-out or --report: keep the latest N requests (56 bytes each).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub log_limit: usize,
}

/// The device name of the blktrace: `DIR/mount.blktrace.0`.
pub const BLKTRACE_DEVICE: &str = "mount";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Run `elevator mount`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let settings = super::parse_sets(&a.set)?;
    let logging = a.blktrace_out.is_some() || a.report.is_some();
    if logging && a.log_limit == 0 {
        anyhow::bail!("--log-limit 0 keeps no request for --blktrace-out or --report");
    }
    // Fail before serving, not at unmount, if an output directory cannot be made.
    for (flag, dir) in [("--blktrace-out", &a.blktrace_out), ("--report", &a.report)] {
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).with_context(|| format!("{flag} {}", dir.display()))?;
        }
    }
    let cfg = MountConfig {
        backing: a.backing.clone(),
        mountpoint: a.mountpoint.clone(),
        scheduler: a.sched.clone(),
        settings,
        groups: if a.cgroups {
            GroupMode::Cgroup
        } else {
            GroupMode::Root
        },
        rules: a.group.clone(),
        allow_other: a.allow_other,
        writeback_cache: !a.no_writeback_cache,
        threads: a.threads,
        request_log: if logging { a.log_limit } else { 0 },
    };
    // Modes arrive from the kernel with the caller's umask applied; ours must not apply again.
    // SAFETY: umask cannot fail.
    let umask = unsafe { libc::umask(0) };
    let mut mounted = elevator_mount::mount(&cfg).with_context(|| {
        format!(
            "elevator mount {} {}",
            a.backing.display(),
            a.mountpoint.display()
        )
    })?;
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
    let mut unmounter = mounted.unmounter();
    std::thread::spawn(move || loop {
        if STOP.load(Ordering::SeqCst) {
            if let Err(e) = unmounter.unmount() {
                eprintln!("elevator mount: unmount failed: {e} (busy? retrying)");
                STOP.store(false, Ordering::SeqCst);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    });
    eprintln!(
        "elevator mount: {} on {} under {} (unmount with fusermount3 -u {})",
        a.backing.display(),
        a.mountpoint.display(),
        a.sched,
        a.mountpoint.display()
    );
    let log = mounted.run().context("serving the mount")?;
    eprintln!("elevator mount: unmounted; all I/O completed");
    // Our own files (trace, report) get the user's umask again.
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(umask) };
    if let Some(dir) = &a.blktrace_out {
        write_blktrace(dir, &log)?;
    }
    if a.report.is_some() {
        let title = format!(
            "elevator mount {} on {}",
            a.backing.display(),
            a.mountpoint.display()
        );
        let page = crate::report::Sink::new(true, &title);
        crate::report::mount::mount_page(&page, &title, &log)?;
        page.write(a.report.as_deref())?;
    }
    Ok(())
}

/// Write `log` as `dir/mount.blktrace.0`, each context under its pid and name.
fn write_blktrace(dir: &Path, log: &MountLog) -> anyhow::Result<()> {
    let processes: Vec<(u32, &str)> = log
        .requests
        .contexts
        .iter()
        .zip(&log.names)
        .map(|(ctx, name)| (ctx.0, name.as_str()))
        .collect();
    let events =
        super::run_blktrace::write_log(dir, BLKTRACE_DEVICE, &processes, &log.requests.requests)?;
    let mut note = format!(
        "elevator mount: wrote {} ({} requests, {events} events)",
        dir.join(format!("{BLKTRACE_DEVICE}.blktrace.0")).display(),
        log.requests.requests.len()
    );
    if log.requests.dropped > 0 {
        note.push_str(&format!(
            "; the {} oldest were not kept (--log-limit)",
            log.requests.dropped
        ));
    }
    eprintln!("{note}");
    Ok(())
}
