//! `elevator mount BACKING_DIR MOUNTPOINT --sched NAME`: a passthrough FUSE filesystem whose
//! data I/O our schedulers decide (crates/mount; docs/mount.md).
//!
//! Serves in the foreground until unmounted (`fusermount3 -u MOUNTPOINT`, `umount`) or
//! interrupted (Ctrl-C or SIGTERM: unmounts). Either way every queued and in-flight I/O
//! completes before the command exits.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use elevator_mount::{GroupMode, GroupRule, MountConfig};

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
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Run `elevator mount`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let settings = super::parse_sets(&a.set)?;
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
    };
    // Modes arrive from the kernel with the caller's umask applied; ours must not apply again.
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(0) };
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
    mounted.run().context("serving the mount")?;
    eprintln!("elevator mount: unmounted; all I/O completed");
    Ok(())
}
