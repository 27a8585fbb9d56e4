//! Opening a target (a regular file or a block device) for O_DIRECT I/O, with the safety
//! checks of [`crate::safety`] applied first.
//!
//! A file that does not exist is created and laid out (written in full, so reads hit real
//! blocks rather than holes, as fio lays out its files); an empty file is grown and laid out
//! the same way. If the layout fails (ENOSPC) or is stopped (Ctrl-C, through
//! [`OpenSpec::stop`]), what we created is removed (a file that existed empty is truncated
//! back), so the next run does not meet a half-written file.
//!
//! Elevator remembers the files it laid out, so a rerun reuses them as fio does without
//! `--allow-overwrite`: a marker in the extended attribute `user.elevator.layout` records the
//! file's length and modification time when elevator last wrote it ([`Target::remember`] after
//! a run). A file whose marker no longer matches (another program wrote it, or a run was
//! killed) is refused like any other. On a filesystem without user extended attributes no
//! marker is kept and reruns need `--allow-overwrite`. An existing file or device shorter
//! than the jobs need is an error.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::buf::AlignedBuf;
use crate::holders;
use crate::safety::{self, Probe, Refusal};
use crate::ByteRange;

/// What kind of target it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// A regular file.
    File,
    /// A block device.
    BlockDevice,
}

/// An open target.
#[derive(Debug)]
pub struct Target {
    /// The file, opened with O_DIRECT.
    pub file: File,
    /// Usable size in bytes.
    pub size: u64,
    /// File or device.
    pub kind: TargetKind,
    /// The path given.
    pub path: PathBuf,
    /// Whether this open created or laid out the file (its contents are ours).
    pub laid_out: bool,
    /// Whether the file's contents are elevator's (laid out now, or marked by an earlier run):
    /// [`Target::remember`] re-marks only such files.
    pub ours: bool,
    /// Whether it was opened for writing (jobs that write, `--verify`, or a layout): a run
    /// that only read changed nothing, so [`Target::remember`] leaves it alone.
    pub writable: bool,
}

impl Target {
    /// After a run that wrote to a file elevator owns, record its new length and modification
    /// time in the marker so the next run reuses it. Does nothing for devices and files that
    /// are not ours; a filesystem without user extended attributes is not an error.
    pub fn remember(&self) -> Result<(), TargetError> {
        // A read-only run on a read-only filesystem failed here ("record elevator's layout
        // marker: Read-only file system"): reading is always allowed, and it changed nothing.
        if self.kind != TargetKind::File || !self.ours || !self.writable {
            return Ok(());
        }
        marker::write(&self.file).map_err(io_err(&self.path, "record elevator's layout marker"))
    }
}

/// How to open.
#[derive(Clone, Debug, Default)]
pub struct OpenSpec {
    /// Whether the run writes (jobs that write, or `--verify`).
    pub writes: bool,
    /// Write over data that is not ours (`--allow-overwrite`). Never lifts the refusal of a
    /// device that is mounted, used as swap or held by another device.
    pub allow_overwrite: bool,
    /// Bytes the jobs need: the end of the furthest job region.
    pub need_bytes: u64,
    /// The byte ranges the jobs write (empty: all of `[0, need_bytes)`); on a block device
    /// they must read as all zeroes unless `allow_overwrite`.
    pub write_regions: Vec<ByteRange>,
    /// Checked between the chunks of a layout: once set, the layout stops and what it
    /// created is removed ([`TargetError::Interrupted`]).
    pub stop: Option<&'static AtomicBool>,
}

/// Why a target could not be opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum TargetError {
    /// A safety refusal.
    Refused(Refusal),
    /// An operating-system error.
    Io {
        /// The target.
        path: PathBuf,
        /// What was being done.
        doing: &'static str,
        /// The error.
        error: io::Error,
    },
    /// The target is smaller than the jobs need, or not a file or block device.
    Unusable {
        /// The target.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The layout was stopped ([`OpenSpec::stop`]); what it created was removed.
    Interrupted {
        /// The target.
        path: PathBuf,
    },
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::Refused(r) => r.fmt(f),
            TargetError::Io { path, doing, error } => {
                write!(f, "{}: {doing}: {error}", path.display())
            }
            TargetError::Unusable { path, reason } => write!(f, "{}: {reason}", path.display()),
            TargetError::Interrupted { path } => write!(
                f,
                "{}: interrupted while laying out the file; the partial layout was removed",
                path.display()
            ),
        }
    }
}

impl std::error::Error for TargetError {}

fn io_err<'p>(path: &'p Path, doing: &'static str) -> impl FnOnce(io::Error) -> TargetError + 'p {
    move |error| TargetError::Io {
        path: path.to_path_buf(),
        doing,
        error,
    }
}

fn refused(path: &Path, reason: String) -> TargetError {
    TargetError::Refused(Refusal {
        path: path.to_path_buf(),
        reason,
    })
}

fn open_direct(path: &Path, write: bool, create: bool) -> Result<File, TargetError> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .create_new(create)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() != Some(libc::EINVAL) {
                return io_err(path, "open")(e);
            }
            if create {
                // The kernel made the file before it refused O_DIRECT (`lookup_open` creates
                // the inode; `do_dentry_open` then fails with EINVAL on a file system without
                // FMODE_CAN_ODIRECT): the empty file was left behind. O_EXCL made it ours.
                let _ = fs::remove_file(path);
            }
            TargetError::Unusable {
                path: path.to_path_buf(),
                reason: format!(
                    "the file system it is on ({}) refused O_DIRECT (EINVAL), which elevator \
                     needs to measure the device rather than the page cache: put the target on \
                     a disk's file system, or give a block device",
                    filesystem_name(path)
                ),
            }
        })
}

/// The kind of file system `path` (or, when it does not exist, its directory) is on, as
/// `statfs` tells it (`f_type`), for an error.
fn filesystem_name(path: &Path) -> String {
    let dir = match path.parent() {
        Some(d) if !path.exists() && !d.as_os_str().is_empty() => d,
        Some(_) if !path.exists() => Path::new("."),
        _ => path,
    };
    let Some(f_type) = crate::fidelity::fs_type(dir) else {
        return "unknown".into();
    };
    // The magic numbers of include/uapi/linux/magic.h.
    match f_type {
        crate::fidelity::RAMFS_MAGIC => "ramfs".into(),
        crate::fidelity::TMPFS_MAGIC => "tmpfs".into(),
        0x6573_5546 => "FUSE".into(),
        0x794c_7630 => "overlayfs".into(),
        0x0102_1997 => "9p".into(),
        0x6969 => "NFS".into(),
        t => format!("f_type {t:#x}"),
    }
}

/// Open the block device `path` (device number `rdev`) for writing with O_EXCL, as mkfs
/// does: the kernel then refuses (EBUSY) while anything holds the device, a filesystem
/// mounted in any mount namespace (which /proc/self/mounts does not show), a device-mapper or
/// md array, or another exclusive opener; and while this descriptor (or a duplicate) lives,
/// nothing else can claim the device. Done before any write, whatever the flags. The kernel
/// does not say who holds it: the refusal names what [`holders::describe`] finds (mounts in
/// every mount namespace, processes with the device or a partition open).
fn open_device_exclusive(path: &Path, rdev: u64) -> Result<File, TargetError> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT | libc::O_EXCL)
        .open(path)
    {
        Ok(f) => Ok(f),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            let who = holders::describe(&holders::related_devnos(rdev));
            let who = if who.is_empty() {
                "a filesystem on it is mounted (perhaps in another mount namespace or \
                 container), or a device-mapper, md or other program holds it"
                    .to_string()
            } else {
                who.join("; ")
            };
            Err(refused(
                path,
                format!(
                    "the device is in use: the kernel refused to open it exclusively (EBUSY): \
                     {who}; elevator never writes to a device in use, whatever the flags"
                ),
            ))
        }
        Err(e) => Err(io_err(path, "open exclusively (O_EXCL) for writing")(e)),
    }
}

/// Open `path` per `spec`, refusing what [`safety`] refuses.
pub fn open(path: &Path, spec: OpenSpec) -> Result<Target, TargetError> {
    let meta = match fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path, "stat")(e)),
    };
    match meta {
        None if fs::symlink_metadata(path).is_ok() => Err(TargetError::Unusable {
            path: path.to_path_buf(),
            // Creating through it failed with only "File exists" (O_EXCL on a dangling link).
            reason: format!(
                "a symbolic link to {}, which does not exist: give the path it should name",
                fs::read_link(path)
                    .map(|t| t.display().to_string().chars().take(80).collect::<String>())
                    .unwrap_or_else(|_| "?".into())
            ),
        }),
        None => {
            check_file_size_limit(path, &spec)?;
            let file = open_direct(path, true, true)?;
            if let Err(e) = lay_out(&file, path, 0, spec.need_bytes, spec.stop) {
                drop(file);
                let _ = fs::remove_file(path);
                return Err(e);
            }
            mark_or_ignore(&file, path)?;
            Ok(Target {
                file,
                size: spec.need_bytes,
                kind: TargetKind::File,
                path: path.to_path_buf(),
                laid_out: true,
                ours: true,
                writable: true,
            })
        }
        Some(m) if m.file_type().is_block_device() => {
            if spec.writes {
                check_device_in_use(path, m.rdev())?;
            }
            let file = if spec.writes {
                open_device_exclusive(path, m.rdev())?
            } else {
                open_direct(path, false, false)?
            };
            let size = device_size(&file).map_err(io_err(path, "read the device size"))?;
            if size < spec.need_bytes {
                return Err(TargetError::Unusable {
                    path: path.to_path_buf(),
                    reason: format!(
                        "the device holds {size} bytes; the jobs need {}",
                        spec.need_bytes
                    ),
                });
            }
            if spec.writes && !spec.allow_overwrite {
                check_device_data(path, &spec)?;
            }
            Ok(Target {
                file,
                size,
                kind: TargetKind::BlockDevice,
                path: path.to_path_buf(),
                laid_out: false,
                ours: false,
                writable: spec.writes,
            })
        }
        Some(m) if m.file_type().is_file() => open_file(path, &m, &spec),
        Some(_) => Err(TargetError::Unusable {
            path: path.to_path_buf(),
            reason: "not a regular file or a block device".into(),
        }),
    }
}

/// An existing regular file: reused when empty or ours, refused for writing otherwise.
fn open_file(path: &Path, m: &Metadata, spec: &OpenSpec) -> Result<Target, TargetError> {
    let len = m.len();
    let mark = marker::read(path, m);
    let ours = len == 0 || mark == marker::State::Ours;
    let not_ours_why = || {
        match mark {
        marker::State::Changed => format!(
            "elevator laid the file out, but it changed since elevator last wrote it (another program wrote it, or a run was killed); it holds {len} bytes"
        ),
        _ => format!("the file exists and holds {len} bytes elevator did not write"),
    }
    };
    if spec.writes && !ours && !spec.allow_overwrite {
        return Err(refused(
            path,
            format!(
                "{} (use --allow-overwrite to write over it)",
                not_ours_why()
            ),
        ));
    }
    let grow = len < spec.need_bytes;
    if spec.writes || grow {
        check_file_backs_no_loop(path, m)?;
    }
    if grow && !ours && !spec.allow_overwrite {
        return Err(TargetError::Unusable {
            path: path.to_path_buf(),
            reason: format!(
                "the file holds {len} bytes; the jobs need {} (use --allow-overwrite to extend it)",
                spec.need_bytes
            ),
        });
    }
    let writable = spec.writes || grow;
    if writable {
        check_file_size_limit(path, spec)?;
    }
    let file = open_direct(path, writable, false)?;
    if grow {
        if let Err(e) = lay_out(&file, path, len, spec.need_bytes, spec.stop) {
            // Give back what we added: the file as it was.
            let _ = file.set_len(len);
            return Err(e);
        }
    }
    if grow && ours {
        mark_or_ignore(&file, path)?;
    }
    Ok(Target {
        file,
        size: len.max(spec.need_bytes),
        kind: TargetKind::File,
        path: path.to_path_buf(),
        laid_out: grow,
        ours,
        writable,
    })
}

/// Refuse, whatever the flags, a file an attached loop device reads and writes: writing it
/// writes under that device (a filesystem mounted from it, in this or another mount
/// namespace, is destroyed; `--allow-overwrite` was given for the file, not for the device).
/// The loop driver takes no lock on its backing file, so only the loop devices' own record
/// (`LOOP_GET_STATUS64`: the backing file's device and inode) tells.
fn check_file_backs_no_loop(path: &Path, m: &Metadata) -> Result<(), TargetError> {
    let loops: Vec<_> = holders::attached_loops()
        .into_iter()
        .filter(|l| l.rdev == 0 && l.dev == m.dev() && l.ino == m.ino())
        .collect();
    let Some(first) = loops.first() else {
        return Ok(());
    };
    let uses: Vec<String> = loops
        .iter()
        .map(|l| {
            let who = holders::describe(&holders::related_devnos(l.devno));
            if who.is_empty() {
                l.device.display().to_string()
            } else {
                format!("{} ({})", l.device.display(), who.join("; "))
            }
        })
        .take(holders::MAX_NAMED)
        .collect();
    Err(refused(
        path,
        format!(
            "the file backs loop device {}: writing it writes under that device; elevator \
             never writes under a device in use, whatever the flags (detach it first: \
             losetup -d {})",
            uses.join(", "),
            first.device.display()
        ),
    ))
}

fn mark_or_ignore(file: &File, path: &Path) -> Result<(), TargetError> {
    marker::write(file).map_err(io_err(path, "record elevator's layout marker"))
}

/// elevator's marker on the files it laid out: the extended attribute `user.elevator.layout`
/// holding the length and modification time (ns) the file had when elevator last wrote it.
mod marker {
    use std::ffi::CString;
    use std::fs::{File, Metadata};
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    const NAME: &[u8] = b"user.elevator.layout\0";

    /// What the marker says about a file.
    #[derive(Debug, PartialEq, Eq)]
    pub enum State {
        /// No marker (or unreadable).
        Absent,
        /// The marker matches: elevator wrote the file last.
        Ours,
        /// A marker, but the file changed since.
        Changed,
    }

    fn value(m: &Metadata) -> String {
        format!(
            "elevator-layout-v1 len={} mtime={}.{:09}",
            m.len(),
            m.mtime(),
            m.mtime_nsec()
        )
    }

    pub fn read(path: &Path, m: &Metadata) -> State {
        let Ok(cpath) = CString::new(path.as_os_str().as_bytes()) else {
            return State::Absent;
        };
        let mut buf = [0u8; 128];
        // SAFETY: both names are NUL-terminated; the kernel writes at most buf.len() bytes.
        let n = unsafe {
            libc::getxattr(
                cpath.as_ptr(),
                NAME.as_ptr().cast(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return State::Absent;
        }
        let got = &buf[..n as usize];
        if got == value(m).as_bytes() {
            State::Ours
        } else if got.starts_with(b"elevator-layout-") {
            State::Changed
        } else {
            State::Absent
        }
    }

    /// Mark `file` as elevator's as it is now. A filesystem without user extended attributes
    /// is not an error (no marker is kept).
    pub fn write(file: &File) -> io::Result<()> {
        let v = value(&file.metadata()?);
        // SAFETY: the name is NUL-terminated; the value is passed with its length.
        let r = unsafe {
            libc::fsetxattr(
                file.as_raw_fd(),
                NAME.as_ptr().cast(),
                v.as_ptr().cast(),
                v.len(),
                0,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOTSUP) {
                return Ok(());
            }
            return Err(e);
        }
        Ok(())
    }
}

/// Whether the disk under `path` is rotational as the kernel's schedulers see it: its request
/// queue's `rotational` flag (`/sys/dev/block/MAJ:MIN/queue/rotational`, the whole disk's for
/// a partition; for a regular file, the disk holding its filesystem). `None` where it cannot be
/// told (no sysfs, or a filesystem on no block device, such as tmpfs or overlay).
pub fn rotational(path: &Path) -> Option<bool> {
    let m = fs::metadata(path).ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let base = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ));
    [
        base.join("queue/rotational"),
        base.join("../queue/rotational"),
    ]
    .iter()
    .find_map(|q| fs::read_to_string(q).ok())
    .and_then(|flag| match flag.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    })
}

/// The size of what is at `path` now: a block device's size, a regular file's length, or
/// `None` when nothing is there yet (or an empty file), so the jobs must say how much they need.
pub fn existing_size(path: &Path) -> Result<Option<u64>, TargetError> {
    match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, "stat")(e)),
        Ok(m) if m.file_type().is_block_device() => {
            let f = File::open(path).map_err(io_err(path, "open"))?;
            device_size(&f)
                .map(Some)
                .map_err(io_err(path, "read the device size"))
        }
        Ok(m) if m.is_file() => Ok((m.len() > 0).then_some(m.len())),
        Ok(_) => Err(TargetError::Unusable {
            path: path.to_path_buf(),
            reason: "not a regular file or a block device".into(),
        }),
    }
}

/// Write `[from, to)` of a file with a fixed non-zero pattern, 1 MiB at a time, checking
/// `stop` between chunks.
fn lay_out(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
    stop: Option<&AtomicBool>,
) -> Result<(), TargetError> {
    const CHUNK: u64 = 1 << 20;
    let align = crate::buf::ALIGN as u64;
    reserve(file, path, from, to)?;
    let mut buf = AlignedBuf::new(CHUNK as usize);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8 ^ 0x5a;
    }
    let mut off = from / align * align;
    let end = to.div_ceil(align) * align;
    while off < end {
        if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(TargetError::Interrupted {
                path: path.to_path_buf(),
            });
        }
        let n = CHUNK.min(end - off) as usize;
        file.write_all_at(&buf[..n], off)
            .map_err(io_err(path, "lay out the file"))?;
        off += n as u64;
    }
    file.set_len(to.max(from))
        .map_err(io_err(path, "set the file's length"))?;
    file.sync_all()
        .map_err(io_err(path, "sync the laid-out file"))
}

/// Reserve bytes `from..to` of `file` before writing them, as fio does (`fallocate`): a
/// layout larger than the free space failed only after filling the filesystem (`size=100t`
/// wrote until ENOSPC, every other writer of that filesystem failing meanwhile); now it fails
/// at once and nothing is written. Where the filesystem cannot reserve (EOPNOTSUPP), its free
/// space is compared instead.
fn reserve(file: &File, path: &Path, from: u64, to: u64) -> Result<(), TargetError> {
    use std::os::fd::AsRawFd;
    if to <= from {
        return Ok(());
    }
    let no_room = |free: Option<u64>| TargetError::Unusable {
        path: path.to_path_buf(),
        reason: format!(
            "the jobs need {to} bytes, {} more than the file holds, and the filesystem has {} \
             free: nothing was written",
            to - from,
            free.map_or("less room".to_string(), |f| format!("{f} bytes"))
        ),
    };
    let free = || free_bytes(path).ok();
    let (Ok(off), Ok(len)) = (i64::try_from(from), i64::try_from(to - from)) else {
        return Err(no_room(free()));
    };
    // SAFETY: fallocate on a descriptor `file` owns; mode 0 allocates and may extend it.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, off, len) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSPC) => Err(no_room(free())),
        Some(libc::EFBIG) => Err(TargetError::Unusable {
            path: path.to_path_buf(),
            reason: too_big(to),
        }),
        Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => match free() {
            Some(f) if f < to - from => Err(no_room(Some(f))),
            _ => Ok(()),
        },
        _ => Err(io_err(path, "reserve space for the file (fallocate)")(e)),
    }
}

/// This process's file-size limit (`ulimit -f`, RLIMIT_FSIZE), if it has one.
fn file_size_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } == 0;
    (known && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// Refuse, before anything is written, a regular file the jobs write past this process's
/// file-size limit (`ulimit -f`): the kernel fails every write at or past it with EFBIG
/// (`generic_write_check_limits`, for regular files; a block device has no such limit), so
/// the run measured its points up to the first such write and then failed with "File too
/// large" naming neither the target nor the limit.
fn check_file_size_limit(path: &Path, spec: &OpenSpec) -> Result<(), TargetError> {
    let Some(limit) = file_size_limit() else {
        return Ok(());
    };
    let end = match spec.write_regions.iter().map(|r| r.end).max() {
        Some(end) if spec.writes => end,
        _ => spec.need_bytes,
    };
    if end <= limit {
        return Ok(());
    }
    Err(TargetError::Unusable {
        path: path.to_path_buf(),
        reason: format!(
            "the jobs write up to byte {end}, past this process's file-size limit of {limit} \
             bytes (`ulimit -f`), where every write fails with File too large (EFBIG); raise \
             the limit or shrink the jobs' region; nothing was written"
        ),
    })
}

/// Why a file cannot grow to `to` bytes (EFBIG from `fallocate`): past this process's
/// file-size limit (`ulimit -f`; the kernel's `inode_newsize_ok` refuses, and SIGXFSZ, which
/// it also sends, is ignored by the CLI so the refusal arrives as this error), else past the
/// largest file the filesystem holds. It was told as a lack of free space beside a figure of
/// gigabytes free.
fn too_big(to: u64) -> String {
    match file_size_limit() {
        Some(limit) if to > limit => format!(
            "the jobs need a file of {to} bytes, past this process's file-size limit of {limit} \
             bytes (`ulimit -f`): File too large (EFBIG); nothing was written"
        ),
        _ => format!(
            "the jobs need a file of {to} bytes, past the largest file the filesystem holds: \
             File too large (EFBIG); nothing was written"
        ),
    }
}

/// The bytes of the open block device `file` (`BLKGETSIZE64`).
pub fn device_size(file: &File) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// The sysfs directory of the block device `rdev`.
pub(crate) fn sysfs_dir(rdev: u64) -> Option<PathBuf> {
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    fs::canonicalize(format!("/sys/dev/block/{maj}:{min}")).ok()
}

/// Refuse, whatever the flags, a device that is mounted, used as swap or held by another
/// device (its own or its partitions').
fn check_device_in_use(path: &Path, rdev: u64) -> Result<(), TargetError> {
    let ours_dir = sysfs_dir(rdev);
    // A source is ours if it is the device or a partition of it (its sysfs directory sits
    // inside the device's).
    let is_ours = |src: &Path| -> bool {
        let Ok(m) = fs::metadata(src) else {
            return false;
        };
        if !m.file_type().is_block_device() {
            return false;
        }
        if m.rdev() == rdev {
            return true;
        }
        match (&ours_dir, sysfs_dir(m.rdev())) {
            (Some(ours), Some(theirs)) => theirs.starts_with(ours),
            _ => false,
        }
    };
    let mounts = fs::read_to_string("/proc/self/mounts")
        .map_err(io_err(Path::new("/proc/self/mounts"), "read"))?;
    let mut busy = safety::mounted_on(&mounts, is_ours);
    // A loop device does not claim what backs it (no holders/ entry, and an exclusive open
    // of the backing device succeeds): one attached over the device, a partition of it or
    // its whole disk reads and writes these blocks.
    let related = holders::related_devnos(rdev);
    busy.extend(
        holders::attached_loops()
            .iter()
            .filter(|l| related.contains(&l.rdev))
            .map(|l| {
                format!(
                    "the backing device of loop device {} (detach it: losetup -d {})",
                    l.device.display(),
                    l.device.display()
                )
            }),
    );
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        busy.extend(safety::swaps_on(&swaps, is_ours));
    }
    if let Some(dir) = &ours_dir {
        let mut dirs = vec![dir.clone()];
        // The partitions' holders too (LVM on sda1 holds sda1, not sda).
        if let Ok(entries) = fs::read_dir(dir) {
            dirs.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.join("partition").exists()),
            );
        }
        for d in dirs {
            if let Ok(holders) = fs::read_dir(d.join("holders")) {
                for h in holders.flatten() {
                    busy.push(format!("held by {}", h.file_name().to_string_lossy()));
                }
            }
        }
    }
    if busy.is_empty() {
        return Ok(());
    }
    busy.truncate(8);
    Err(refused(
        path,
        format!(
            "the device is in use: {}; elevator never writes to a device in use, whatever the flags (unmount it, swapoff it or stop what holds it first)",
            busy.join("; ")
        ),
    ))
}

/// Refuse a device that carries a signature blkid (or our list) recognises, or whose written
/// regions do not read as all zeroes.
fn check_device_data(path: &Path, spec: &OpenSpec) -> Result<(), TargetError> {
    let why = |what: String| {
        Err(refused(
            path,
            format!("the device holds {what} (use --allow-overwrite to write over it)"),
        ))
    };
    match safety::blkid_probe(path) {
        Probe::Found(what) => return why(format!("data blkid recognises: {what}")),
        Probe::Nothing => {}
        Probe::Unavailable(_) => {
            let mut head = vec![0u8; safety::SIGNATURE_BYTES];
            let f = File::open(path).map_err(io_err(path, "open to read its first blocks"))?;
            let n = read_up_to(&f, &mut head).map_err(io_err(path, "read the first blocks"))?;
            if let Some(what) = safety::detect_signature(&head[..n]) {
                return why(format!("{what} (blkid is not installed; our own list)"));
            }
        }
    }
    let regions = if spec.write_regions.is_empty() {
        vec![ByteRange {
            start: 0,
            end: spec.need_bytes,
        }]
    } else {
        spec.write_regions.clone()
    };
    let f = File::open(path).map_err(io_err(path, "open to check it is blank"))?;
    if let Some(at) =
        safety::first_nonzero(&f, &regions).map_err(io_err(path, "read where the jobs write"))?
    {
        return why(format!(
            "data where the jobs would write (byte {at} is not zero) that blkid does not recognise"
        ));
    }
    Ok(())
}

fn read_up_to(f: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The bytes a new file may take on the filesystem holding `path` (a file or a directory):
/// `statvfs`'s blocks available to an unprivileged writer (`f_bavail`: root's reserve is not
/// for scratch data) times its fragment size. The one reader of free space: a target's
/// layout, `kernel-record`'s backing file and `replay`'s spool of a stream all ask here.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a zeroed statvfs is a valid buffer for the call to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path; the call writes only into `st`, which outlives it.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The memory available to new work (`MemAvailable` of /proc/meminfo), bytes, when it can be
/// read: what a job's buffers and a recording's tmpfs are checked against.
pub fn mem_available() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    })
}
