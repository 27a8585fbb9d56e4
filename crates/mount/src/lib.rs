//! # elevator-mount: real programs' I/O through elevator's schedulers
//!
//! A passthrough FUSE filesystem: every metadata operation goes straight to the backing
//! directory; every data read, write and fsync becomes a request in one of elevator's
//! schedulers, tagged with the calling process (its thread group), its group (cgroup, or a
//! group named on the command line) and its I/O priority, and is issued to the backing file
//! with O_DIRECT by the [submission engine](elevator_real::submit). Any unmodified program
//! (tar, cc, dd, SQLite, git) thereby runs under anticipatory, CFQ, BFQ ... on the machine in
//! front of you.
//!
//! **FUSE crate.** [`fuser`] (0.18): pure Rust (no libfuse to link; mounting goes through
//! `fusermount3` or, as root, mount(2)), the most used and most actively maintained FUSE crate,
//! with multi-threaded sessions and per-thread `/dev/fuse` clones; its replies are `Send`, so a
//! read is answered from the engine's completion without a thread waiting for it. The
//! alternatives: `fuse3` (async, tied to tokio, fewer users), `polyfuse` (unmaintained since
//! 2022), `fuse-backend-rs` (built for virtio-fs in VMMs, heavier), `easy_fuser` (a
//! higher-level layer over fuser).
//!
//! ## Layout
//! - [`fs`]: the filesystem (data path, classification of writes, alignment).
//! - [`inode`]: inodes held as O_PATH descriptors of the backing files.
//! - [`classify`]: pid -> context, group and priority.
//! - [`control`]: `MOUNTPOINT/.elevator/` (scheduler, iosched/, stat).
//!
//! With [`MountConfig::request_log`] the engine keeps a record of each request (Q, I, D, C
//! times, the issuing process) and [`Mounted::run`] hands the log back at unmount, each
//! process named ([`MountLog`]), for a blktrace or a report.
//!
//! Documentation for users: docs/mount.md.

#![deny(missing_docs)]

/// `eprintln!` that never panics: a line to stderr, dropped when stderr cannot be written (its
/// reader gone: `elevator mount ... 2>&1 | head -1`, or /dev/full). `eprintln!` panics on a
/// failed write, which in a FUSE thread left a dead mount.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use note;

pub mod classify;
pub mod control;
pub mod fs;
pub mod inode;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::Settings;
use elevator_real::mountinfo;
use elevator_real::submit::{Engine, EngineOptions, Handle, RequestLog};
use fuser::{Config, MountOption, SessionACL};

pub use classify::{GroupMode, GroupRule};
pub use fs::FsOptions;

/// What to mount and how.
#[derive(Clone, Debug)]
pub struct MountConfig {
    /// The directory whose contents the mount shows.
    pub backing: PathBuf,
    /// Where to mount.
    pub mountpoint: PathBuf,
    /// The scheduler's name (any name `elevator list` shows).
    pub scheduler: String,
    /// Its tunables.
    pub settings: Settings,
    /// Groups for processes no rule names.
    pub groups: GroupMode,
    /// Process-name -> group rules.
    pub rules: Vec<GroupRule>,
    /// Writes to the groups' cgroup v2 io files (io.max, io.latency, io.weight,
    /// io.bfq.weight; the root's io.cost.model and io.cost.qos): the controllers act at the
    /// submission engine's rq_qos position ([`elevator_core::qos::chain`]).
    pub io_files: Vec<elevator_core::group::CgroupFileWrite>,
    /// Let other users in (`allow_other`; needs `user_allow_other` in /etc/fuse.conf unless
    /// root). Permissions are checked by the kernel either way (`default_permissions`).
    pub allow_other: bool,
    /// Ask for the kernel's writeback cache.
    pub writeback_cache: bool,
    /// Threads reading /dev/fuse.
    pub threads: usize,
    /// Keep a record of at most this many of the latest requests (0: none), returned by
    /// [`Mounted::run`].
    pub request_log: usize,
    /// Serve the data as this emulated drive would ([`elevator_real::emulate`]): each request
    /// completes at the model's time on the real clock. `None`: the backing device's own time.
    pub emulate: Option<elevator_real::emulate::SharedModel>,
}

/// The requests a mount logged ([`MountConfig::request_log`]) and who issued them.
#[derive(Clone, Debug)]
pub struct MountLog {
    /// The records; a record's `job` indexes `requests.contexts` (a context is a thread group:
    /// its id is the process id, 0 the flusher).
    pub requests: RequestLog,
    /// The name of each context in `requests.contexts`, as `/proc/PID/comm` showed it
    /// ([`classify::FLUSHER_NAME`] for writeback, `?` if the process was never seen alive).
    pub names: Vec<String>,
    /// The scheduler at unmount (it may have been switched through `.elevator/scheduler`).
    pub scheduler: &'static str,
    /// With an emulated drive: how late completions were against its model.
    pub emulation: Option<elevator_real::emulate::Summary>,
}

/// Why the mount could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum MountError {
    /// No such scheduler.
    UnknownScheduler(String),
    /// A tunable or group is wrong.
    Config(String),
    /// A path is unusable.
    Path {
        /// Which one.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The engine or the FUSE session could not start.
    Start(io::Error),
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::UnknownScheduler(n) => {
                write!(f, "no scheduler named {n:?} (see `elevator list`)")
            }
            MountError::Config(m) => f.write_str(m),
            MountError::Path { path, error } => write!(f, "{}: {error}", path.display()),
            MountError::Start(e) => write!(f, "could not mount: {e}"),
        }
    }
}

impl std::error::Error for MountError {}

/// A mounted filesystem, not yet serving.
pub struct Mounted {
    session: fuser::Session<fs::Passthrough>,
    engine: Engine,
    handle: Handle,
    classifier: Arc<classify::Classifier>,
}

impl fmt::Debug for Mounted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mounted")
            .field("engine", &self.engine)
            .finish()
    }
}

/// Mount `cfg.backing` on `cfg.mountpoint` under the registered scheduler
/// `cfg.scheduler`. Serve with [`Mounted::run`].
pub fn mount(cfg: &MountConfig) -> Result<Mounted, MountError> {
    let info = registry::find(&cfg.scheduler)
        .ok_or_else(|| MountError::UnknownScheduler(cfg.scheduler.clone()))?;
    mount_spec(cfg, info)
}

/// As [`mount`], under the scheduler `info` describes, registered or not (`cfg.scheduler` is
/// not read): a policy written outside elevator's registry gives its own
/// [`SchedulerInfo`](elevator_core::registry::SchedulerInfo) and mounts with its
/// [`spec`](elevator_core::registry::SchedulerInfo::spec) (docs/extending.md). Its tunables
/// are `.elevator/iosched/`'s files and `.elevator/scheduler` shows its name in brackets;
/// writing a registered name there switches to that one (and no name switches back to an
/// unregistered one).
pub fn mount_spec(cfg: &MountConfig, info: SchedulerSpec) -> Result<Mounted, MountError> {
    cfg.settings
        .validate(info.name, info.tunables)
        .map_err(|e| MountError::Config(format!("--set: {e}")))?;
    for p in [&cfg.backing, &cfg.mountpoint] {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => return Err(stale(p)),
            Ok(_) => {
                return Err(MountError::Path {
                    path: p.clone(),
                    error: io::Error::from_raw_os_error(libc::ENOTDIR),
                })
            }
            Err(error) => {
                return Err(MountError::Path {
                    path: p.clone(),
                    error,
                })
            }
        }
    }
    check_not_nested(&cfg.backing, &cfg.mountpoint)?;
    let mut classifier = classify::Classifier::new(cfg.groups, cfg.rules.clone(), &cfg.io_files)
        .map_err(MountError::Config)?;
    if cfg.request_log > 0 {
        classifier = classifier.with_names();
    }
    let classifier = Arc::new(classifier);
    // As the kernel's schedulers read `blk_queue_nonrot`, ours get the backing device's flag.
    // An emulated drive's flag is its model's.
    let rotational = match &cfg.emulate {
        Some(m) => m.rotational(),
        None => elevator_real::target::rotational(&cfg.backing),
    };
    let settings = info.on_device(cfg.settings.clone(), rotational);
    let build = control::factory(info, settings.clone(), classifier.tree());
    let opts = EngineOptions {
        request_log: cfg.request_log,
        groups: classifier.tree(),
        non_rotational: rotational == Some(false),
        emulate: cfg.emulate.clone(),
        // The FUSE thread that reads a request puts it through the scheduler into the ring
        // itself: no hand-off to the engine thread on the way in (the reply is sent from the
        // completion, on the engine thread).
        inline_submit: true,
        // A read the scheduler dispatches while nothing else is in flight is done by that
        // FUSE thread with one pread, and replied to from there: no wake-up of the engine
        // thread and no ring system calls for a reader at queue depth 1 (docs/mount.md,
        // "The floor under a small read").
        sync_when_idle: true,
        ..EngineOptions::default()
    };
    let engine = Engine::start(build, opts).map_err(MountError::Start)?;
    let handle = engine.handle();
    let ctl = Arc::new(control::Control::new(
        handle.clone(),
        Arc::clone(&classifier),
        info,
        settings,
        rotational,
    ));
    let opts = FsOptions {
        writeback_cache: cfg.writeback_cache,
        max_background: if cfg.emulate.is_some() {
            fs::MAX_BACKGROUND_EMULATED
        } else {
            fs::MAX_BACKGROUND
        },
    };
    let fs = fs::Passthrough::new(
        &cfg.backing,
        handle.clone(),
        Arc::clone(&classifier),
        ctl,
        opts,
    )
    .map_err(|error| MountError::Path {
        path: cfg.backing.clone(),
        error,
    })?;
    let mut config = Config::default();
    config.mount_options = vec![
        // The backing directory's canonical path: what `check_no_cycle` follows.
        MountOption::FSName(format!(
            "elevator:{}",
            std::fs::canonicalize(&cfg.backing)
                .unwrap_or_else(|_| cfg.backing.clone())
                .display()
        )),
        MountOption::Subtype("elevator".into()),
        MountOption::DefaultPermissions,
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // As root fuser mounts with mount(2) itself and gives the kernel no subtype (only
        // fusermount3 reads `Subtype`): pass it as the kernel's own option, so /proc/mounts
        // says `fuse.elevator` either way.
        config
            .mount_options
            .push(MountOption::CUSTOM("subtype=elevator".into()));
    }
    raise_fd_limit();
    config.acl = if cfg.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(cfg.threads.max(1));
    config.clone_fd = cfg.threads > 1;
    // Resolved before mounting: afterwards the path leads into the mount, which does not
    // answer until it serves.
    let canonical = std::fs::canonicalize(&cfg.mountpoint).map_err(|error| MountError::Path {
        path: cfg.mountpoint.clone(),
        error,
    })?;
    let session = fuser::Session::new(fs, &cfg.mountpoint, &config).map_err(MountError::Start)?;
    if cfg.emulate.is_none() {
        lift_fuse_dirty_limit(&canonical);
    }
    Ok(Mounted {
        session,
        engine,
        handle,
        classifier,
    })
}

/// Raise the soft limit on open files to the hard limit: every open file through the mount
/// holds two descriptors of its backing file, and every inode the kernel remembers one, so a
/// tree of thousands of files (an untar, a `git clone`) would run out at the default 1,024.
/// Best effort: a refusal keeps the limit there was.
pub fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Let the mount's page cache hold dirty pages as a local filesystem's does. The kernel gives
/// every FUSE mount's writeback device a strict limit of 1% of the dirty threshold
/// (`fuse_bdi_init`: `BDI_CAP_STRICTLIMIT`, `bdi_set_max_ratio(.., 1)`), against an untrusted
/// daemon pinning memory; a buffered writer through the mount is therefore throttled to the
/// writeback's pace after a few MiB, where on the backing filesystem it fills the page cache
/// first. Our daemon is trusted by whoever mounted it as root, so as root we clear the strict
/// limit and the 1% cap through sysfs (`/sys/class/bdi/MAJ:MIN/`), as an administrator can;
/// not in front of an emulated drive, whose experiments keep FUSE's limit (docs/emulation.md).
/// Without root this is skipped, and said. `mountpoint` must be canonical (resolved before
/// mounting).
pub fn lift_fuse_dirty_limit(mountpoint: &std::path::Path) {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        note!(
            "elevator mount: not root: the kernel's dirty-page limit for FUSE (1% of the \
             threshold, strict) stays; buffered writers are throttled to the writeback's pace"
        );
        return;
    }
    // Not stat(2) of the mountpoint: that would wait for this very daemon, not serving yet.
    let Some(dev) = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|info| mount_device(&info, mountpoint))
    else {
        note!("elevator mount: the mount is not in /proc/self/mountinfo; FUSE's limit stays");
        return;
    };
    let bdi = format!("/sys/class/bdi/{dev}");
    for (file, value) in [("strict_limit", "0"), ("max_ratio", "100")] {
        if let Err(e) = std::fs::write(format!("{bdi}/{file}"), value) {
            note!("elevator mount: could not set {bdi}/{file} to {value}: {e}");
        }
    }
}

/// The `MAJ:MIN` of the filesystem mounted last on `mountpoint`, from /proc/self/mountinfo's
/// text ([`mountinfo::last_on`]).
pub fn mount_device(table: &str, mountpoint: &std::path::Path) -> Option<String> {
    mountinfo::last_on(table, mountpoint).map(|m| m.devno.to_string())
}

/// The filesystem type (`fuse.elevator`, `ext4` ...) mounted last on `mountpoint`, from
/// /proc/self/mountinfo's text ([`mountinfo::last_on`]).
pub fn mount_fs_type(table: &str, mountpoint: &std::path::Path) -> Option<String> {
    mountinfo::last_on(table, mountpoint).map(|m| m.fstype.to_string())
}

/// Refuse a mountpoint where a FUSE filesystem is already mounted (another `elevator mount`
/// on the same point): the second mount hid the first, whose daemon went on serving nobody,
/// and its figures then counted nothing. A stale one (its daemon killed) is named as such,
/// with how to unmount it.
pub fn check_not_mounted(mountpoint: &std::path::Path) -> Result<(), MountError> {
    let Ok(canon) = std::fs::canonicalize(mountpoint) else {
        return Ok(());
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Ok(());
    };
    match mount_fs_type(&info, &canon) {
        // A dead one (its daemon killed): its own message and hint.
        Some(t)
            if (t == "fuse" || t.starts_with("fuse."))
                && std::fs::metadata(mountpoint)
                    .is_err_and(|e| e.raw_os_error() == Some(libc::ENOTCONN)) =>
        {
            Err(stale(mountpoint))
        }
        Some(t) if t == "fuse" || t.starts_with("fuse.") => Err(MountError::Config(format!(
            "{} is already the mountpoint of a FUSE filesystem ({t}): a second mount would \
             hide it; unmount it first (fusermount3 -u {})",
            mountpoint.display(),
            mountpoint.display()
        ))),
        _ => Ok(()),
    }
}

/// The error for a path on a FUSE mount whose daemon died: what it is and how to clear it.
fn stale(p: &std::path::Path) -> MountError {
    MountError::Config(format!(
        "{}: a FUSE mount whose daemon died (kill -9, a crash) is still there (\"Transport \
         endpoint is not connected\"); unmount it first: fusermount3 -u {} (or, as root, \
         umount -l {})",
        p.display(),
        p.display(),
        p.display()
    ))
}

/// Refuse a mountpoint inside the backing directory (or the backing directory itself), or a
/// backing directory inside the mountpoint: every lookup of the mountpoint through the
/// backing directory (or of the backing directory under the mount) would come back into the
/// mount, and each FUSE thread would wait on itself (a deadlock of the whole mount). The same
/// through other `elevator mount`s ([`check_no_cycle`]): a backing directory on an elevator
/// mount whose own backing directory holds the new mountpoint.
pub fn check_not_nested(
    backing: &std::path::Path,
    mountpoint: &std::path::Path,
) -> Result<(), MountError> {
    let canon = |p: &std::path::Path| {
        std::fs::canonicalize(p).map_err(|error| match error.raw_os_error() {
            Some(libc::ENOTCONN) => stale(p),
            _ => MountError::Path {
                path: p.to_path_buf(),
                error,
            },
        })
    };
    let (b, m) = (canon(backing)?, canon(mountpoint)?);
    if m.starts_with(&b) {
        return Err(MountError::Config(format!(
            "the mountpoint {} is inside the backing directory {} (it would serve itself: every \
             FUSE thread would wait on the mount); choose a mountpoint outside it",
            mountpoint.display(),
            backing.display()
        )));
    }
    if b.starts_with(&m) {
        // The mirror case: mounted over its own backing directory's parent, the mount hides
        // the directory it serves; every path under it then resolves into the mount itself
        // (`elevator mount m/x m` hung every FUSE thread, leaving a dead mount).
        return Err(MountError::Config(format!(
            "the backing directory {} is inside the mountpoint {} (the mount would hide it and \
             serve itself: every FUSE thread would wait on the mount); choose a mountpoint \
             outside it",
            backing.display(),
            mountpoint.display()
        )));
    }
    // The same directory under another name: a bind mount (`mount --bind B BB`, then a
    // mountpoint BB/sub) keeps the directory's device and inode. Where the mounts propagate
    // (a shared mount, systemd's default), the new mount appears at B/sub too, inside what it
    // serves: every FUSE thread waited on the mount, and the daemon could not be killed.
    if let Some(a) = same_directory_above(&m, &b) {
        return Err(MountError::Config(format!(
            "the mountpoint {} is inside {}, which is the backing directory {} under another \
             name (a bind mount of it: the same device and inode; where mounts propagate the \
             mount would appear inside what it serves, and every FUSE thread would wait on \
             it); choose a mountpoint outside it",
            mountpoint.display(),
            a.display(),
            backing.display()
        )));
    }
    if let Some(a) = same_directory_above(&b, &m) {
        return Err(MountError::Config(format!(
            "the backing directory {} is inside {}, which is the mountpoint {} under another \
             name (a bind mount of it: the same device and inode; the mount would hide it and \
             serve itself); choose a mountpoint outside it",
            backing.display(),
            a.display(),
            mountpoint.display()
        )));
    }
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    check_no_cycle(&info, &b, &m).map_err(|chain| {
        MountError::Config(format!(
            "the backing directory {} is served by another elevator mount whose backing \
             directory holds the mountpoint {} ({}): each mount would wait on the other (a \
             deadlock of both, whose daemons then cannot even be killed); choose a \
             mountpoint outside it",
            backing.display(),
            mountpoint.display(),
            chain
        ))
    })
}

/// The first of `path` and its ancestors (canonical paths) that is the directory `dir` (the
/// same device and inode), if any.
fn same_directory_above(
    path: &std::path::Path,
    dir: &std::path::Path,
) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let want = id(dir)?;
    path.ancestors()
        .find(|a| id(a) == Some(want))
        .map(std::path::Path::to_path_buf)
}

/// The most elevator mounts followed from a backing directory to the directory that holds
/// its data (a chain of mounts each backed by the next one's mountpoint).
const MAX_CHAIN: usize = 16;

/// The elevator mount (`fuse.elevator`, its source `elevator:BACKING` with the backing
/// directory's canonical path, as [`mount`] names it) under which `path` lies, the deepest
/// (and of mounts on one point the last, which hides the others), from /proc/self/mountinfo's
/// text: its mountpoint and its backing directory.
pub fn elevator_mount_of(
    table: &str,
    path: &std::path::Path,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    use std::os::unix::ffi::OsStrExt;
    let mut best: Option<(std::path::PathBuf, std::path::PathBuf)> = None;
    for m in table.lines().filter_map(mountinfo::parse) {
        if m.fstype != "fuse.elevator" {
            continue;
        }
        let source = mountinfo::unescape(m.source);
        let Some(back) = source.as_bytes().strip_prefix(b"elevator:") else {
            continue;
        };
        let mp = std::path::PathBuf::from(m.point);
        let back = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(back));
        if !back.is_absolute() || !path.starts_with(&mp) {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(b, _)| mp.components().count() >= b.components().count())
        {
            best = Some((mp, back));
        }
    }
    best
}

/// Follow the canonical backing directory `backing` through the elevator mounts it lies
/// under ([`elevator_mount_of`]) to where its data is; if on the way it reaches a directory
/// that holds the canonical mountpoint `mountpoint` (or lies under it), the new mount would
/// serve a path that leads back into itself: `Err` with the chain, `a on b (backing c)`.
pub fn check_no_cycle(
    table: &str,
    backing: &std::path::Path,
    mountpoint: &std::path::Path,
) -> Result<(), String> {
    let mut p = backing.to_path_buf();
    let mut chain = Vec::new();
    for _ in 0..MAX_CHAIN {
        let Some((mp, back)) = elevator_mount_of(table, &p) else {
            return Ok(());
        };
        let rest = p.strip_prefix(&mp).unwrap_or(std::path::Path::new(""));
        chain.push(format!(
            "{} is on the elevator mount {} of {}",
            p.display(),
            mp.display(),
            back.display()
        ));
        p = back.join(rest);
        if mountpoint.starts_with(&p) || p.starts_with(mountpoint) {
            return Err(chain.join("; "));
        }
    }
    Ok(())
}

impl Mounted {
    /// With an emulated drive: something another thread can call for how late completions
    /// have been so far (see [`elevator_real::submit::Handle::emulation`]).
    pub fn emulation_probe(
        &self,
    ) -> impl Fn() -> Option<elevator_real::emulate::Summary> + Send + 'static {
        let h = self.handle.clone();
        move || h.emulation()
    }

    /// Something another thread (a signal watcher) can call to unmount.
    pub fn unmounter(&mut self) -> fuser::SessionUnmounter {
        self.session.unmount_callable()
    }

    /// Serve until unmounted (`fusermount3 -u MOUNTPOINT`, `umount`, or the unmounter), then
    /// complete every queued and in-flight I/O and stop the engine. Returns the request log
    /// (empty unless [`MountConfig::request_log`]).
    pub fn run(self) -> io::Result<MountLog> {
        let served = self.session.run();
        let drained = self.engine.shutdown();
        served.and(drained)?;
        let requests = self.handle.take_request_log();
        let names = requests
            .contexts
            .iter()
            .map(|&c| self.classifier.name_of(c).unwrap_or_else(|| "?".into()))
            .collect();
        Ok(MountLog {
            requests,
            names,
            scheduler: self.handle.scheduler(),
            emulation: self.handle.emulation(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backing_directory_on_an_elevator_mount_of_the_mountpoints_parent_is_a_cycle() {
        use std::path::Path;
        // /t/b is served on /t/m1; a second mount of /t/m1 on /t/b/x would serve itself.
        let info = "22 1 253:0 / / rw - ext4 /dev/vda rw\n\
                    90 22 0:41 / /t/m1 rw - fuse.elevator elevator:/t/b rw\n\
                    91 22 0:42 / /t/m2 rw - fuse.elevator elevator:/t/m1/sub rw\n\
                    93 22 0:44 / /t/rel rw - fuse.elevator elevator:b rw\n";
        assert_eq!(
            elevator_mount_of(info, Path::new("/t/m1/sub/d")),
            Some(("/t/m1".into(), "/t/b".into()))
        );
        let chain = check_no_cycle(info, Path::new("/t/m1"), Path::new("/t/b/x")).unwrap_err();
        assert!(chain.contains("elevator mount /t/m1 of /t/b"), "{chain}");
        // Two hops: /t/m2 is /t/m1/sub is /t/b/sub.
        let chain =
            check_no_cycle(info, Path::new("/t/m2/d"), Path::new("/t/b/sub/d/e")).unwrap_err();
        assert!(
            chain.contains("/t/m2/d is on the elevator mount /t/m2"),
            "{chain}"
        );
        // The mountpoint's parent served elsewhere: no cycle; a stacked mount is fine.
        assert!(check_no_cycle(info, Path::new("/t/m1/sub"), Path::new("/t/other")).is_ok());
        assert!(check_no_cycle(info, Path::new("/t/b"), Path::new("/t/other")).is_ok());
        // A relative source (an older daemon's) is not followed.
        assert!(check_no_cycle(info, Path::new("/t/rel"), Path::new("/t/b/x")).is_ok());
    }

    #[test]
    fn the_device_of_the_last_mount_on_a_path_is_read_from_mountinfo() {
        let info = "22 1 253:0 / / rw - ext4 /dev/vda rw\n\
                    90 22 0:41 / /tmp/a\\040b rw - fuse.elevator x rw\n\
                    91 22 0:52 / /tmp/c rw - fuse.elevator x rw\n\
                    92 90 0:53 / /tmp/a\\040b rw - fuse.elevator y rw\n";
        assert_eq!(
            mount_device(info, std::path::Path::new("/tmp/a b")).as_deref(),
            Some("0:53")
        );
        assert_eq!(
            mount_device(info, std::path::Path::new("/tmp/c")).as_deref(),
            Some("0:52")
        );
        assert_eq!(mount_device(info, std::path::Path::new("/tmp/d")), None);
    }

    /// A second `elevator mount` on one point is told by the type of what is mounted there
    /// last (`check_not_mounted`); a path where nothing is mounted has none.
    #[test]
    fn the_type_of_the_last_mount_on_a_path_is_read_from_mountinfo() {
        let info = "22 1 253:0 / / rw - ext4 /dev/vda rw\n\
                    90 22 0:41 / /tmp/a\\040b rw shared:1 - fuse.elevator x rw\n\
                    91 22 0:52 / /tmp/c rw - tmpfs tmpfs rw\n";
        let t = |p: &str| mount_fs_type(info, std::path::Path::new(p));
        assert_eq!(t("/tmp/a b").as_deref(), Some("fuse.elevator"));
        assert_eq!(t("/tmp/c").as_deref(), Some("tmpfs"));
        assert_eq!(t("/"), Some("ext4".into()));
        assert_eq!(t("/tmp/d"), None);
    }
}
