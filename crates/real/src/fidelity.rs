//! Whether what a measurement of a target saw was the drive: a target whose I/O the kernel
//! serves from memory (a file on tmpfs, a RAM disk, a loop device reading its backing file
//! through the page cache, O_DIRECT that a file system quietly turns into buffered I/O), and a
//! target that was truncated, replaced or deleted while it was measured.
//!
//! `elevator calibrate` asks here before it measures ([`served_from_memory`]), around each
//! point that reads ([`drop_cached`] before it, [`cached_pages`] before and after), and after
//! each point ([`Watch::changed`]).
//!
//! Deviations: a device-mapper or md device is followed through its `slaves/` to the devices
//! under it (at most [`MAX_DEPTH`] levels); a file on overlayfs is judged by its upper layer,
//! where a file opened for writing is (copied up) and its I/O goes: the `upperdir=` of the
//! overlay mount whose device the file's directory is on (`/proc/self/mountinfo`), judged as
//! any path (an overlay's anonymous device has no sysfs entry, and `cachestat` on an overlay
//! file counts the overlay's own page cache, which is empty: the real file's pages are
//! another inode's); a file on FUSE or NFS (an anonymous device, whose backing no mount table
//! names) is judged only by [`cached_pages`]; a loop device's backing file is judged by its
//! file system (tmpfs) and the loop's `dio` setting, not by its own backing device.

use crate::mountinfo;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How many devices under a device-mapper or md device are followed.
pub const MAX_DEPTH: usize = 8;

/// `TMPFS_MAGIC` of include/uapi/linux/magic.h.
pub(crate) const TMPFS_MAGIC: u64 = 0x0102_1994;
/// `RAMFS_MAGIC` of include/uapi/linux/magic.h.
pub(crate) const RAMFS_MAGIC: u64 = 0x8584_58f6;
/// `OVERLAYFS_SUPER_MAGIC` of include/uapi/linux/magic.h.
const OVERLAYFS_SUPER_MAGIC: u64 = 0x794c_7630;

/// The file system type (`statfs`'s `f_type`) of the file system holding `path`.
pub(crate) fn fs_type(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed statfs is a valid buffer for the call to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path; the call writes only into `st`, which outlives it.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_type as u64)
}

/// Why I/O to `path` (a file or block device; a file that does not exist yet is judged by its
/// directory) is served from memory rather than by a drive, or `None` when nothing says so:
/// a file on tmpfs or ramfs; a RAM disk (`brd`'s `ramN`), `zram` or `null_blk` device; a loop
/// device whose backing file is on tmpfs or which reads and writes its backing file through
/// the page cache (`loop/dio` 0, the default of `losetup` without `--direct-io=on`: the loop
/// driver then serves a request by buffered I/O on the file, `lo_read_simple` and
/// `lo_write_simple`, where with direct I/O on `lo_rw_aio` issues it with `IOCB_DIRECT`); or
/// a device-mapper or md device over one of these. For a file, the device its file system is
/// on is judged; on overlayfs, its upper layer's.
pub fn served_from_memory(path: &Path) -> Option<String> {
    judge(path, 0)
}

/// [`served_from_memory`], `depth` overlays down.
fn judge(path: &Path, depth: usize) -> Option<String> {
    let at = match fs::metadata(path) {
        Ok(_) => path.to_path_buf(),
        Err(_) => match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        },
    };
    let meta = fs::metadata(&at).ok()?;
    if meta.file_type().is_block_device() {
        return device_in_memory(meta.rdev(), 0).map(|why| format!("the device {why}"));
    }
    match fs_type(&at)? {
        TMPFS_MAGIC => {
            return Some(
                "it is on tmpfs, which keeps files in memory (it takes O_DIRECT since Linux 6.6 \
                 and serves it from the page cache)"
                    .into(),
            )
        }
        RAMFS_MAGIC => return Some("it is on ramfs, which keeps files in memory".into()),
        OVERLAYFS_SUPER_MAGIC if depth < MAX_DEPTH => {
            let upper = overlay_upper(&at)?;
            return judge(&upper, depth + 1).map(|why| {
                format!(
                    "it is on overlayfs, whose upper layer {} (where its data is once it is \
                     written) is served from memory: {why}",
                    upper.display()
                )
            });
        }
        _ => {}
    }
    device_in_memory(meta.dev(), 0)
        .map(|why| format!("the file system it is on is on a device {why}"))
}

/// The upper layer (`upperdir=`) of the overlay mount `at` is on: the mount whose device is
/// that of `at`'s directory (an overlay file may report its real file's device; a directory
/// reports the overlay's), or `None` for a read-only overlay (no upper layer) or when the
/// mount table does not say.
fn overlay_upper(at: &Path) -> Option<PathBuf> {
    let dir = if at.is_dir() { at } else { at.parent()? };
    let dev = fs::metadata(dir).ok()?.dev();
    let want = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let table = fs::read_to_string("/proc/self/mountinfo").ok()?;
    table
        .lines()
        .rev()
        .filter_map(mountinfo::parse)
        .find(|m| m.devno == want && m.fstype == "overlay")?
        .super_options
        .split(',')
        .find_map(|o| o.strip_prefix("upperdir="))
        .map(|upper| PathBuf::from(mountinfo::unescape(upper)))
}

/// Why the block device `devno` is memory (see [`served_from_memory`]), following a stacked
/// device to the devices under it.
fn device_in_memory(devno: u64, depth: usize) -> Option<String> {
    let mut dir = crate::target::sysfs_dir(devno)?;
    if dir.join("partition").exists() {
        dir = dir.parent()?.to_path_buf();
    }
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let digits = |p: &str| {
        name.strip_prefix(p)
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty())
    };
    if digits("ram") {
        return Some(format!("({name}) that is a RAM disk (brd)"));
    }
    if digits("zram") {
        return Some(format!("({name}) that is a compressed RAM disk (zram)"));
    }
    if digits("nullb") {
        return Some(format!(
            "({name}) that is null_blk, which stores nothing or stores in memory"
        ));
    }
    if digits("loop") {
        let backing = fs::read_to_string(dir.join("loop/backing_file")).ok()?;
        let backing = backing.trim_end_matches('\n');
        if fs_type(Path::new(backing)) == Some(TMPFS_MAGIC) {
            return Some(format!(
                "(/dev/{name}) whose backing file {backing} is on tmpfs, in memory"
            ));
        }
        let dio = fs::read_to_string(dir.join("loop/dio")).ok()?;
        if dio.trim() == "0" {
            return Some(format!(
                "(/dev/{name}) that reads and writes its backing file {backing} through the page \
                 cache (direct I/O off: `losetup --direct-io=on` sets it)"
            ));
        }
        return None;
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    let slaves = fs::read_dir(dir.join("slaves")).ok()?;
    for s in slaves.flatten() {
        let Some(dev) = fs::read_to_string(s.path().join("dev"))
            .ok()
            .and_then(|d| crate::holders::parse_devno(&d))
        else {
            continue;
        };
        if let Some(why) = device_in_memory(dev, depth + 1) {
            return Some(format!("({name}) over a device {why}"));
        }
    }
    None
}

/// The pages of `[start, start + len)` of `file` in the page cache, by `cachestat(2)` (Linux
/// 6.5; its number is 451 on every architecture but alpha), or `None` where the kernel has no
/// such call. A direct read never adds a page to the cache (`iomap_dio_rw` and
/// `__blockdev_direct_IO` bypass it), so pages that appear while only O_DIRECT reads ran were
/// put there by a file system that served them buffered.
pub fn cached_pages(file: &File, start: u64, len: u64) -> Option<u64> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    const SYS_CACHESTAT: libc::c_long = 451;
    let range = Range { off: start, len };
    let mut st = Stat::default();
    // SAFETY: cachestat reads one range and writes one cachestat struct, both of the kernel's
    // layout (include/uapi/linux/mman.h) and alive for the call; its flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut st as *mut Stat,
            0u32,
        )
    };
    (r == 0).then_some(st.nr_cache)
}

/// Write back and drop the clean pages of `[start, start + len)` of `file` from the page
/// cache (`fdatasync`, then `posix_fadvise(POSIX_FADV_DONTNEED)`), as fio's `invalidate`
/// (on by default) does before a job: a read then finds in the cache only what it put there,
/// which [`cached_pages`] counts.
pub fn drop_cached(file: &File, start: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    file.sync_data()?;
    let (Ok(start), Ok(len)) = (i64::try_from(start), i64::try_from(len)) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    // SAFETY: posix_fadvise only reads its arguments; the descriptor is open.
    match unsafe { libc::posix_fadvise(file.as_raw_fd(), start, len, libc::POSIX_FADV_DONTNEED) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// What a target was when a measurement started, to tell whether it was truncated, replaced
/// or deleted since.
#[derive(Clone, Debug)]
pub struct Watch {
    path: PathBuf,
    dev: u64,
    ino: u64,
    device: bool,
    need: u64,
}

impl Watch {
    /// Watch `path`, open as `file`, of which the measurement uses the first `need` bytes.
    pub fn new(path: &Path, file: &File, need: u64) -> io::Result<Watch> {
        let m = file.metadata()?;
        Ok(Watch {
            path: path.to_path_buf(),
            dev: m.dev(),
            ino: m.ino(),
            device: m.file_type().is_block_device(),
            need,
        })
    }

    /// What happened to the target since [`Watch::new`], if anything a measurement cannot
    /// stand: the path deleted or naming another file (a measurement of an unlinked or
    /// renamed-over inode is of nothing the user will find again), or the open file or device
    /// now shorter than the bytes measured (its reads past the end come back short).
    pub fn changed(&self, file: &File) -> Option<String> {
        match fs::metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Some("was deleted while it was measured".into())
            }
            Err(e) => {
                return Some(format!(
                    "can no longer be looked up ({e}) while it was measured"
                ))
            }
            Ok(m) if (m.dev(), m.ino()) != (self.dev, self.ino) => {
                return Some("was replaced by another file while it was measured".into())
            }
            Ok(_) => {}
        }
        let size = if self.device {
            crate::target::device_size(file).ok()?
        } else {
            file.metadata().ok()?.len()
        };
        (size < self.need).then(|| {
            format!(
                "was truncated to {size} bytes while it was measured (the measurement covers \
                 its first {} bytes)",
                self.need
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file on /dev/shm (tmpfs on every distribution) is memory; one in the crate's own
    /// directory (a disk's file system here) is not said to be.
    #[test]
    fn a_file_on_tmpfs_is_served_from_memory() {
        if fs_type(Path::new("/dev/shm")) == Some(TMPFS_MAGIC) {
            let why = served_from_memory(Path::new("/dev/shm/elevator-not-there")).unwrap();
            assert!(why.contains("tmpfs"), "{why}");
        }
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        if fs_type(here) != Some(TMPFS_MAGIC) && fs_type(here) != Some(RAMFS_MAGIC) {
            let why = served_from_memory(here);
            assert!(
                why.is_none() || why.as_deref().unwrap().contains("loop"),
                "{why:?}"
            );
        }
    }

    /// Truncating, deleting and replacing a watched file are each told apart.
    #[test]
    fn a_watched_file_truncated_deleted_or_replaced_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        fs::write(&p, vec![1u8; 8192]).unwrap();
        let f = File::open(&p).unwrap();
        let w = Watch::new(&p, &f, 8192).unwrap();
        assert_eq!(w.changed(&f), None);
        fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(4096)
            .unwrap();
        assert!(w.changed(&f).unwrap().contains("truncated to 4096 bytes"));
        let other = dir.path().join("o");
        fs::write(&other, vec![1u8; 8192]).unwrap();
        fs::rename(&other, &p).unwrap();
        assert!(w.changed(&f).unwrap().contains("replaced"));
        fs::remove_file(&p).unwrap();
        assert!(w.changed(&f).unwrap().contains("deleted"));
    }
}
