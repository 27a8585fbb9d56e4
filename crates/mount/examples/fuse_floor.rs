//! The floor under `elevator mount`'s small reads: the least a FUSE daemon built on the same
//! crate (fuser 0.18) can do for a read, with no scheduler, no engine and no io_uring.
//!
//!     fuse_floor BACKING_FILE MOUNTPOINT [--mode pread|memory] [--threads N] [--async-dio]
//!
//! The mount holds one file, `f`, the size of BACKING_FILE. Its reads are answered on the
//! FUSE thread that read the request:
//! - `pread` (the default): one `pread` of the backing file opened with O_DIRECT into an
//!   aligned buffer (the read widened to 4 KiB as the mount widens it), then the reply;
//! - `memory`: zeros from memory, no backing I/O: what FUSE's round trip alone costs
//!   (the application's system call, the kernel's request, our /dev/fuse read, the reply's
//!   writev and the wake-ups between them).
//!
//! The init flags and open flags are the mount's (crates/mount/src/fs.rs) where they touch a
//! read: FUSE_ASYNC_READ, FUSE_MAX_PAGES, max_readahead 1 MiB, FOPEN_KEEP_CACHE (an O_DIRECT
//! read bypasses the page cache either way), and with `--async-dio` FUSE_ASYNC_DIO (the
//! mount's: the kernel then sends even a synchronous O_DIRECT read as a background request
//! and waits for it, `fuse_direct_IO`). bench/mount-floor.sh runs fio against the
//! backing file, this daemon in both modes and `elevator mount`, round by round.
//!
//! Serves in the foreground until unmounted (`fusermount3 -u MOUNTPOINT`).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use elevator_real::buf::AlignedBuf;
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData,
    ReplyDirectory, ReplyEntry, ReplyOpen, Request, SessionACL,
};

const ROOT: u64 = 1;
const FILE: u64 = 2;
const ALIGN: u64 = 4096;
const TTL: Duration = Duration::from_secs(3600);

/// How a read is answered.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// One O_DIRECT pread of the backing file on the FUSE thread.
    Pread,
    /// Zeros, no backing I/O.
    Memory,
}

struct Floor {
    file: File,
    size: u64,
    uid: u32,
    gid: u32,
    mode: Mode,
    async_dio: bool,
}

impl Floor {
    fn attr(&self, ino: u64) -> FileAttr {
        let (kind, perm, size, nlink) = if ino == ROOT {
            (FileType::Directory, 0o755, 0, 2)
        } else {
            (FileType::RegularFile, 0o644, self.size, 1)
        };
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

impl Filesystem for Floor {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let mut want = InitFlags::FUSE_ASYNC_READ | InitFlags::FUSE_MAX_PAGES;
        if self.async_dio {
            want |= InitFlags::FUSE_ASYNC_DIO;
        }
        let _ = config.add_capabilities(want & config.capabilities());
        let _ = config.set_max_readahead(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent.0 == ROOT && name == "f" {
            reply.entry(&TTL, &self.attr(FILE), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino.0 {
            ROOT | FILE => reply.attr(&TTL, &self.attr(ino.0)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match ino.0 {
            FILE => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let start = offset / ALIGN * ALIGN;
        let end = (offset + u64::from(size)).div_ceil(ALIGN) * ALIGN;
        let mut buf = AlignedBuf::new((end - start) as usize);
        let skip = (offset - start) as usize;
        let n = match self.mode {
            Mode::Memory => (self.size.saturating_sub(start) as usize).min(buf.len()),
            Mode::Pread => match self.file.read_at(&mut buf, start) {
                Ok(n) => n,
                Err(e) => return reply.error(Errno::from(e)),
            },
        };
        let from = skip.min(n);
        let to = (skip + size as usize).min(n);
        reply.data(&buf[from..to]);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino.0 != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (FILE, FileType::RegularFile, "f"),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

fn usage(msg: &str) -> ! {
    eprintln!("fuse_floor: {msg}");
    eprintln!(
        "usage: fuse_floor BACKING_FILE MOUNTPOINT [--mode pread|memory] [--threads N] \
         [--async-dio]"
    );
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut pos: Vec<PathBuf> = Vec::new();
    let mut mode = Mode::Pread;
    let mut threads = 4usize;
    let mut async_dio = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mode" => {
                mode = match args.next().as_deref() {
                    Some("pread") => Mode::Pread,
                    Some("memory") => Mode::Memory,
                    other => usage(&format!("--mode: expected pread or memory, got {other:?}")),
                }
            }
            "--async-dio" => async_dio = true,
            "--threads" => {
                threads = match args.next().and_then(|n| n.parse().ok()) {
                    Some(n) if n >= 1 => n,
                    _ => usage("--threads: expected a number of at least 1"),
                }
            }
            _ => pos.push(a.into()),
        }
    }
    let [backing, mountpoint] = match <[PathBuf; 2]>::try_from(pos) {
        Ok(p) => p,
        Err(_) => usage("expected BACKING_FILE and MOUNTPOINT"),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&backing)
        .unwrap_or_else(|e| usage(&format!("{}: {e}", backing.display())));
    let meta = file
        .metadata()
        .unwrap_or_else(|e| usage(&format!("{}: {e}", backing.display())));
    let fs = Floor {
        file,
        size: meta.len(),
        uid: meta.uid(),
        gid: meta.gid(),
        mode,
        async_dio,
    };
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("fuse_floor".into()),
        MountOption::DefaultPermissions,
    ];
    config.acl = SessionACL::Owner;
    config.n_threads = Some(threads);
    config.clone_fd = threads > 1;
    if let Err(e) = fuser::Session::new(fs, &mountpoint, &config).and_then(|s| s.run()) {
        eprintln!("fuse_floor: {}: {e}", mountpoint.display());
        std::process::exit(1);
    }
}
