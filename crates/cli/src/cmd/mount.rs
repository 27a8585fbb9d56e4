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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    /// The scheduler and its tunables (`--sched`'s help is the mount's own, set in main.rs:
    /// one scheduler, default none).
    #[command(flatten)]
    pub scheds: super::common::SchedOpts,
    /// Put processes named NAME (as /proc/PID/comm) in group PATH with WEIGHT (the
    /// scheduler's scale), e.g. `--group dd=/writer:100`. Repeatable.
    #[arg(long = "group", value_name = "NAME=/PATH[:WEIGHT]")]
    pub group: Vec<GroupRule>,
    /// Group every other process by its cgroup v2 path (default: the root group).
    #[arg(long)]
    pub cgroups: bool,
    /// Write a group's cgroup v2 io file as `echo VALUE > /sys/fs/cgroup/PATH/FILE` would,
    /// the device's MAJ:MIN left out: `io.max` (e.g. `--cgroup-file
    /// '/bulk/io.max=wbps=10485760'`), `io.latency` (`target=MICROSECONDS`), `io.weight`,
    /// `io.bfq.weight`, and the root's `io.cost.model` and `io.cost.qos`
    /// (`--cgroup-file '/io.cost.qos=enable=1 ...'`). The group is added if no `--group`
    /// names it (with --cgroups, processes in that cgroup reach it). Repeatable; in order.
    #[arg(long = "cgroup-file", value_name = "/PATH/FILE=VALUE")]
    pub cgroup_file: Vec<elevator_core::group::CgroupFileWrite>,
    /// Let other users use the mount (FUSE allow_other); permissions are still checked.
    #[arg(long)]
    pub allow_other: bool,
    /// Turn off the kernel's writeback cache: every write then reaches us at once, sync.
    #[arg(long)]
    pub no_writeback_cache: bool,
    /// Threads reading /dev/fuse (1 to 1024).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// At unmount: `--blktrace-out DIR` writes the requests as `DIR/mount.blktrace.0` (each
    /// process under its pid and name), `--report DIR` a self-contained HTML page.
    #[command(flatten)]
    pub out: super::common::OutputOpts,
    /// With --blktrace-out or --report: keep the latest N requests (56 bytes each; at most
    /// 100,000,000, 5.6 GB).
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub log_limit: u64,
    /// Emulate this drive (a built-in name, see `elevator list`, or a drive TOML): each data
    /// request completes at the time the drive's model says, on the real clock; the backing
    /// directory only holds the data (put it on a fast filesystem, e.g. tmpfs). Files lie on
    /// the drive in the order their data is first touched. At unmount it says how late
    /// completions were against the model.
    #[arg(long, value_name = "NAME|FILE")]
    pub drive: Option<String>,
}

/// The device name of the blktrace: `DIR/mount.blktrace.0`.
pub const BLKTRACE_DEVICE: &str = "mount";

/// Signals (SIGINT, SIGTERM, SIGHUP) received so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);
/// Whether the mount is still being served (the unmount watcher stops when it is not).
static SERVING: AtomicBool = AtomicBool::new(true);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Whether `path` is (still) a FUSE mount: its filesystem's magic is FUSE's.
fn is_fuse_mount(path: &Path) -> bool {
    const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a zeroed statfs is a valid buffer; the path is NUL-terminated.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == FUSE_SUPER_MAGIC
    }
}

/// Unmount `path` ourselves (fuser's unmounter tries once only): umount2 as root, else
/// `fusermount3 -u`; `lazy` detaches it even while files are open (`umount -l`).
fn unmount_path(path: &Path, lazy: bool) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(std::io::Error::other)?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: the path is NUL-terminated.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EPERM) {
        return Err(e);
    }
    let mut cmd = std::process::Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd.arg(path).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

/// Watch for SIGINT / SIGTERM / SIGHUP: the first unmounts; while the mount is busy the unmount is
/// retried every second, and a second signal detaches it lazily (the mount then ends when the
/// last file under it closes).
/// While the mount serves an emulated drive: every 10 s, warn (at most once a minute) if the
/// host has not kept up with the model so far.
fn watch_emulation(
    probe: impl Fn() -> Option<elevator_real::emulate::Summary> + Send + 'static,
    drive: String,
) {
    std::thread::spawn(move || {
        let mut last_warned: Option<std::time::Instant> = None;
        while SERVING.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_secs(10));
            let Some(s) = probe() else {
                return;
            };
            if let elevator_real::emulate::Verdict::Behind(w) = s.verdict() {
                if last_warned.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    crate::output::tell!("elevator mount: warning: emulated {drive}: {w}");
                    last_warned = Some(std::time::Instant::now());
                }
            }
        }
    });
}

fn watch_signals(
    mut unmount: impl FnMut() -> std::io::Result<()> + Send + 'static,
    mountpoint: PathBuf,
) {
    std::thread::spawn(move || {
        let mut first_done = false;
        let mut lazy_done = false;
        let mut told = false;
        while SERVING.load(Ordering::SeqCst) {
            let n = SIGNALS.load(Ordering::SeqCst);
            if n > 0 && !first_done {
                first_done = true;
                if let Err(e) = unmount() {
                    crate::output::tell!(
                        "elevator mount: unmount failed: {e} (busy: files open under {}?); \
                         retrying every second; signal again to detach it lazily",
                        mountpoint.display()
                    );
                    told = true;
                }
            } else if n > 0 && is_fuse_mount(&mountpoint) {
                let lazy = n >= 2;
                if lazy && lazy_done {
                    // Detached already: the mount ends when its last file closes.
                } else {
                    match unmount_path(&mountpoint, lazy) {
                        Ok(()) if lazy => {
                            lazy_done = true;
                            crate::output::tell!(
                                "elevator mount: detached {} (lazy unmount); serving the files \
                                 still open until they close",
                                mountpoint.display()
                            );
                        }
                        Ok(()) => {}
                        Err(e) if !told => {
                            crate::output::tell!(
                                "elevator mount: unmount failed: {e}; retrying every second; \
                                 signal again to detach it lazily"
                            );
                            told = true;
                        }
                        Err(_) => {}
                    }
                }
            }
            let pause = if n > 0 { 1000 } else { 100 };
            std::thread::sleep(Duration::from_millis(pause));
        }
    });
}

/// Run `elevator mount`.
pub fn run(a: Args) -> anyhow::Result<()> {
    use super::common::Supported;
    let sched = a.scheds.names("none")?;
    anyhow::ensure!(
        sched.len() == 1,
        "--sched {}: a mount runs one scheduler at a time (switch it later through \
         MOUNTPOINT/.elevator/scheduler)",
        sched.join(",")
    );
    let sched = sched[0].clone();
    let settings = super::parse_sets(&a.scheds.set)?;
    let logging = a.out.blktrace_out.is_some() || a.out.report.is_some();
    if logging && a.log_limit == 0 {
        anyhow::bail!("--log-limit 0 keeps no request for --blktrace-out or --report");
    }
    // Fail before serving, not at unmount, if an output cannot be written; and never write
    // an output inside what the mount serves.
    a.out.check(
        "mount",
        Supported {
            report: true,
            blktrace_out: true,
            ..Supported::default()
        },
        &[BLKTRACE_DEVICE.to_string()],
        &[],
        &[],
    )?;
    elevator_mount::check_not_nested(&a.backing, &a.mountpoint)
        .and_then(|()| elevator_mount::check_not_mounted(&a.mountpoint))
        .map_err(|e| {
            anyhow::anyhow!(
                "elevator mount {} {}: {e}",
                a.backing.display(),
                a.mountpoint.display()
            )
        })?;
    for dir in [&a.out.blktrace_out, &a.out.report].into_iter().flatten() {
        if let (Ok(d), Ok(m)) = (
            std::fs::canonicalize(dir),
            std::fs::canonicalize(&a.mountpoint),
        ) {
            anyhow::ensure!(
                !d.starts_with(&m),
                "{}: an output inside the mountpoint would be written through the mount at \
                 unmount, when it is gone; choose a directory outside {}",
                dir.display(),
                a.mountpoint.display()
            );
        }
    }
    let model = a.drive.as_deref().map(super::emulate::model).transpose()?;
    let drive_name = model.as_ref().map(|m| m.name().to_string());
    let cfg = MountConfig {
        backing: a.backing.clone(),
        mountpoint: a.mountpoint.clone(),
        scheduler: sched.clone(),
        settings,
        groups: if a.cgroups {
            GroupMode::Cgroup
        } else {
            GroupMode::Root
        },
        rules: a.group.clone(),
        io_files: a.cgroup_file.clone(),
        allow_other: a.allow_other,
        writeback_cache: !a.no_writeback_cache,
        threads: usize::from(a.threads),
        request_log: if logging { a.log_limit as usize } else { 0 },
        emulate: model.map(elevator_real::emulate::SharedModel::new),
    };
    // Modes arrive from the kernel with the caller's umask applied; ours must not apply again.
    // SAFETY: umask cannot fail.
    let umask = unsafe { libc::umask(0) };
    // The mount's own handler, before mounting: a signal while the mount is set up is seen
    // by the watcher, which unmounts at once (the process-wide handler would end the process
    // with the mount left behind).
    // The handler only adds to an atomic (async-signal-safe). SIGHUP too: the terminal
    // closing left a dead mount ("Transport endpoint is not connected").
    crate::signals::catch(on_signal, 0);
    let mut mounted = elevator_mount::mount(&cfg).with_context(|| {
        format!(
            "elevator mount {} {}",
            a.backing.display(),
            a.mountpoint.display()
        )
    })?;
    if let Some(d) = &drive_name {
        watch_emulation(mounted.emulation_probe(), d.clone());
    }
    let mut unmounter = mounted.unmounter();
    watch_signals(move || unmounter.unmount(), a.mountpoint.clone());
    crate::output::tell!(
        "elevator mount: {} on {} under {}{} (unmount with fusermount3 -u {})",
        a.backing.display(),
        a.mountpoint.display(),
        sched,
        drive_name
            .as_deref()
            .map(|d| format!(", emulating {d}"))
            .unwrap_or_default(),
        a.mountpoint.display()
    );
    let log = mounted.run();
    SERVING.store(false, Ordering::SeqCst);
    let log = log.context("serving the mount")?;
    crate::output::tell!("elevator mount: unmounted; all I/O completed");
    if let (Some(d), Some(s)) = (&drive_name, &log.emulation) {
        let (line, warn) = super::emulate::describe(d, s);
        crate::output::tell!("elevator mount: {line}");
        if let Some(w) = warn {
            crate::output::tell!("elevator mount: warning: {w}");
        }
    }
    // Our own files (trace, report) get the user's umask again.
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(umask) };
    let mut outcomes = super::common::Outcomes::default();
    if let Some(dir) = &a.out.blktrace_out {
        outcomes.keep(write_blktrace(dir, &log));
    }
    if a.out.report.is_some() {
        let title = format!(
            "elevator mount {} on {}",
            a.backing.display(),
            a.mountpoint.display()
        );
        let page = crate::report::Sink::new(true, &title);
        outcomes.keep(crate::report::mount::mount_page(&page, &title, &log));
        outcomes.keep(page.write(a.out.report.as_deref()));
    }
    outcomes.finish()
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
    crate::output::tell!("{note}");
    Ok(())
}
