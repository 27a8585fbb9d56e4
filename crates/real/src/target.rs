//! Opening a target (a regular file or a block device) for O_DIRECT I/O, with the safety
//! checks of [`safety`](crate::safety) applied first.
//!
//! A file that does not exist is created and laid out (written in full, so reads hit real
//! blocks rather than holes, as fio lays out its files); an empty file is grown and laid out
//! the same way. An existing file or device shorter than the jobs need is an error.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::buf::AlignedBuf;
use crate::safety::{self, Refusal};

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
}

/// How to open.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenSpec {
    /// Whether the run writes (jobs that write, or `--verify`).
    pub writes: bool,
    /// Skip the refusals (`--allow-overwrite`).
    pub allow_overwrite: bool,
    /// Bytes the jobs need: the end of the furthest job region.
    pub need_bytes: u64,
}

/// Why a target could not be opened.
#[derive(Debug)]
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
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::Refused(r) => r.fmt(f),
            TargetError::Io { path, doing, error } => {
                write!(f, "{}: {doing}: {error}", path.display())
            }
            TargetError::Unusable { path, reason } => write!(f, "{}: {reason}", path.display()),
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

fn open_direct(path: &Path, write: bool, create: bool) -> Result<File, TargetError> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .create(create)
        .truncate(false)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| {
            let doing = if e.raw_os_error() == Some(libc::EINVAL) {
                "open with O_DIRECT (the filesystem may not support it; tmpfs does not)"
            } else {
                "open"
            };
            io_err(path, doing)(e)
        })
}

/// Open `path` per `spec`, refusing what [`safety`] refuses.
pub fn open(path: &Path, spec: OpenSpec) -> Result<Target, TargetError> {
    let meta = match fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path, "stat")(e)),
    };
    match meta {
        None => {
            let file = open_direct(path, true, true)?;
            lay_out(&file, path, 0, spec.need_bytes)?;
            Ok(Target {
                file,
                size: spec.need_bytes,
                kind: TargetKind::File,
                path: path.to_path_buf(),
                laid_out: true,
            })
        }
        Some(m) if m.file_type().is_block_device() => {
            if spec.writes && !spec.allow_overwrite {
                check_device(path, m.rdev())?;
            }
            let file = open_direct(path, spec.writes, false)?;
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
            Ok(Target {
                file,
                size,
                kind: TargetKind::BlockDevice,
                path: path.to_path_buf(),
                laid_out: false,
            })
        }
        Some(m) if m.file_type().is_file() => {
            let len = m.len();
            if spec.writes && len > 0 && !spec.allow_overwrite {
                return Err(TargetError::Refused(Refusal {
                    path: path.to_path_buf(),
                    reason: format!(
                        "the file exists and holds {len} bytes (use --allow-overwrite to write over it)"
                    ),
                }));
            }
            let file = open_direct(path, spec.writes || len < spec.need_bytes, false)?;
            let mut laid_out = false;
            if len < spec.need_bytes {
                if len > 0 && !spec.allow_overwrite {
                    return Err(TargetError::Unusable {
                        path: path.to_path_buf(),
                        reason: format!(
                            "the file holds {len} bytes; the jobs need {} (use --allow-overwrite to extend it)",
                            spec.need_bytes
                        ),
                    });
                }
                lay_out(&file, path, len, spec.need_bytes)?;
                laid_out = true;
            }
            Ok(Target {
                file,
                size: len.max(spec.need_bytes),
                kind: TargetKind::File,
                path: path.to_path_buf(),
                laid_out,
            })
        }
        Some(_) => Err(TargetError::Unusable {
            path: path.to_path_buf(),
            reason: "not a regular file or a block device".into(),
        }),
    }
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

/// Write `[from, to)` of a file with a fixed non-zero pattern, 1 MiB at a time.
fn lay_out(file: &File, path: &Path, from: u64, to: u64) -> Result<(), TargetError> {
    const CHUNK: u64 = 1 << 20;
    let align = crate::buf::ALIGN as u64;
    let mut buf = AlignedBuf::new(CHUNK as usize);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8 ^ 0x5a;
    }
    let mut off = from / align * align;
    let end = to.div_ceil(align) * align;
    while off < end {
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

fn device_size(file: &File) -> io::Result<u64> {
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
fn sysfs_dir(rdev: u64) -> Option<PathBuf> {
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    fs::canonicalize(format!("/sys/dev/block/{maj}:{min}")).ok()
}

/// Refuse a device that is in use or carries a signature.
fn check_device(path: &Path, rdev: u64) -> Result<(), TargetError> {
    let refuse = |reason: String| {
        Err(TargetError::Refused(Refusal {
            path: path.to_path_buf(),
            reason: format!("{reason} (use --allow-overwrite to write anyway)"),
        }))
    };
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
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        busy.extend(safety::swaps_on(&swaps, is_ours));
    }
    if let Some(dir) = &ours_dir {
        if let Ok(holders) = fs::read_dir(dir.join("holders")) {
            for h in holders.flatten() {
                busy.push(format!("held by {}", h.file_name().to_string_lossy()));
            }
        }
    }
    if !busy.is_empty() {
        return refuse(format!("the device is in use: {}", busy.join("; ")));
    }
    let mut head = Vec::with_capacity(safety::SIGNATURE_BYTES);
    File::open(path)
        .and_then(|f| {
            f.take(safety::SIGNATURE_BYTES as u64)
                .read_to_end(&mut head)
        })
        .map_err(io_err(path, "read the device's first blocks"))?;
    if let Some(what) = safety::detect_signature(&head) {
        return refuse(format!("the device carries {what}"));
    }
    Ok(())
}
