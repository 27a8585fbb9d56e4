//! The passthrough filesystem: metadata straight to the backing directory, file data through
//! the submission engine and its scheduler.
//!
//! Data path. A file opened through the mount is opened in the backing directory twice: with
//! O_DIRECT, registered with the engine, for the scheduled I/O; and buffered, for the edges
//! O_DIRECT cannot take. A read is widened to [`DIO_ALIGN`] boundaries, read through the engine
//! and cut back to what was asked. A write whose offset and length are multiples of
//! [`DIO_ALIGN`] goes through the engine; any other write (a file's unaligned tail, an
//! application's own unaligned O_DIRECT write) is written with `pwrite` on the buffered
//! descriptor, outside the scheduler, and counted in the log at unmount. Linux keeps the two
//! coherent: a direct read first writes back dirty cached pages in its range, a direct write
//! invalidates them. fsync goes through the engine (its flush reaches the whole file, both
//! descriptors' data). If the backing filesystem refuses O_DIRECT (EINVAL), the file is
//! registered buffered and still scheduled, but the figures then include the backing page
//! cache.
//!
//! Classification ([`crate::classify`]): a write marked FUSE_WRITE_CACHE comes from page-cache
//! writeback and is async, from the flusher's context, charged to the group of the process that
//! opened the handle; every other write (O_DIRECT, or any write with the writeback cache off)
//! and every write of a file opened O_SYNC/O_DSYNC is sync; reads and fsync are sync; all from
//! the calling process's thread group. With the writeback cache, an O_SYNC/O_DSYNC file's
//! writes also arrive as writeback with pid 0 and so are sync from the flusher's context in the
//! root group: the kernel sends no writeback with its writer's pid (docs/mount.md,
//! "Classification").
//!
//! Deviation: the writeback an fsync forces is sync in the kernel (WB_SYNC_ALL writes carry
//! REQ_SYNC) and issued by the fsyncing process; FUSE sends it as FUSE_WRITE_CACHE writes with
//! pid 0, like the flusher's, so here it is async from the flusher, and under an idling
//! scheduler it waits out the fsyncing process's idle window first (docs/mount.md,
//! "Classification", has what that costs under cfq).
//! `--no-writeback-cache` makes every write sync, from its process.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use elevator_core::GroupId;
use elevator_real::buf::AlignedBuf;
use elevator_real::submit::{FileId, Handle, Io};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::classify::{Classifier, Tag};
use crate::control::{self, Control, Node as CtlNode};
use crate::inode::{check, cname, out_of_fds, stat_at, Held, Inodes, ROOT};

/// Alignment of scheduled I/O: a page, which satisfies O_DIRECT on any logical block size up
/// to 4 KiB.
pub const DIO_ALIGN: u64 = 4096;

/// How long the kernel may cache attributes and names of backing files.
const TTL: Duration = Duration::from_secs(1);

/// Largest read or write the kernel is asked to send (max_write, readahead window).
pub const MAX_IO: u32 = 1 << 20;

/// Async requests (readahead, writeback) the kernel may have outstanding to us at once
/// (FUSE's `max_background`, 12 by default): 64, as a block queue's `nr_requests`.
pub const MAX_BACKGROUND: u16 = 64;

/// [`MAX_BACKGROUND`] in front of an emulated drive. FUSE queues readahead (a program's
/// reads) and writeback in one FIFO of background requests; in front of a drive as slow as
/// the laptop-4200, 64 writebacks of up to 1 MiB hold all its slots for seconds, and a read
/// that finds them taken waits there, behind a streaming writer's writes, where no scheduler
/// sees it. The legacy block layer gave sync and async requests separate pools of
/// `nr_requests`; here the writeback is bounded by FUSE's dirty-page limit instead, and
/// everything reaches the scheduler.
pub const MAX_BACKGROUND_EMULATED: u16 = 4096;

/// Options of the filesystem itself.
#[derive(Clone, Copy, Debug)]
pub struct FsOptions {
    /// Ask the kernel for the writeback cache (FUSE_WRITEBACK_CACHE): buffered writes return
    /// at once and reach us later as async writeback, as on a local filesystem.
    pub writeback_cache: bool,
    /// FUSE's `max_background` ([`MAX_BACKGROUND`], or [`MAX_BACKGROUND_EMULATED`]).
    pub max_background: u16,
}

/// One open file.
struct Open {
    /// The O_DIRECT descriptor, registered with the engine.
    file: FileId,
    /// The buffered descriptor, for unaligned writes, truncate and fallocate.
    buffered: File,
    /// The opener's group, charged for writeback through this handle.
    group: GroupId,
    /// Open flags as the application gave them.
    flags: i32,
    /// The backing file's (device, inode) while this handle may write (see `writers`).
    writing: Option<(u64, u64)>,
}

/// One open directory: its entries, read once at opendir.
type Listing = Vec<(u64, FileType, OsString)>;

/// The filesystem.
pub struct Passthrough {
    inodes: Inodes,
    handle: Handle,
    classifier: Arc<Classifier>,
    control: Arc<Control>,
    opts: FsOptions,
    files: Mutex<HashMap<u64, Arc<Open>>>,
    /// Handles open for writing, per backing file: while there is one, the kernel may hold
    /// dirty pages of the file that the backing file does not have yet (SEEK_DATA, SEEK_HOLE).
    writers: Mutex<HashMap<(u64, u64), usize>>,
    dirs: Mutex<HashMap<u64, Arc<Listing>>>,
    next_fh: AtomicU64,
    /// Writes that went around the scheduler (unaligned), and their bytes.
    unaligned: AtomicU64,
    unaligned_bytes: AtomicU64,
    running_as_root: bool,
}

/// The mode a write or truncate by a process without CAP_FSETID leaves on a file of mode
/// `mode` owned by group `file_gid`, the caller's group being `caller_gid`: setuid cleared,
/// and setgid where the group may execute or the caller is not in the file's group
/// (`setattr_should_drop_suidgid`, Linux 6.x). `None` when nothing is to be dropped.
/// Deviation: the kernel's `in_group_p` also counts the caller's supplementary groups and
/// CAP_FSETID in the file's namespace; FUSE gives us only the caller's primary group.
pub fn killed_mode(mode: u32, file_gid: u32, caller_gid: u32) -> Option<u32> {
    let mut kill = mode & libc::S_ISUID;
    if mode & libc::S_ISGID != 0 && (mode & libc::S_IXGRP != 0 || file_gid != caller_gid) {
        kill |= libc::S_ISGID;
    }
    (kill != 0).then_some(mode & 0o7777 & !kill)
}

/// Drop the setuid and setgid bits of the file of descriptor `fd` (any kind, O_PATH too)
/// as [`killed_mode`] says for a caller of group `caller_gid`. Under FUSE_HANDLE_KILLPRIV_V2 this is ours
/// to do: the daemon writes as root, with CAP_FSETID, so the backing filesystem would keep
/// them (it does drop security.capability itself).
fn kill_suidgid(fd: RawFd, caller_gid: u32) -> io::Result<()> {
    let st = stat_at(fd, c"")?;
    if let Some(mode) = killed_mode(st.st_mode, st.st_gid, caller_gid) {
        let path = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
        // SAFETY: valid C string.
        check(unsafe { libc::chmod(path.as_ptr(), mode) })?;
    }
    Ok(())
}

fn errno(e: io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn time(sec: i64, nsec: i64) -> SystemTime {
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs())
    }
}

fn kind_of(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn attr(ino: u64, st: &libc::stat) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: time(st.st_atime, st.st_atime_nsec),
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        crtime: UNIX_EPOCH,
        kind: kind_of(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

fn ctl_attr(ino: u64, node: CtlNode) -> FileAttr {
    let now = SystemTime::now();
    let (kind, perm, size, nlink) = match node {
        CtlNode::Dir => (FileType::Directory, 0o755, 0, 2),
        CtlNode::File { writable: true } => (FileType::RegularFile, 0o644, 4096, 1),
        CtlNode::File { writable: false } => (FileType::RegularFile, 0o444, 4096, 1),
    };
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: 0,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind,
        perm,
        nlink,
        // SAFETY: getuid/getgid cannot fail.
        uid: unsafe { libc::getuid() },
        gid: unsafe { libc::getgid() },
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// Open `node` (reopening its O_PATH descriptor) with `flags`.
fn reopen(node: &Held, flags: i32) -> io::Result<File> {
    let p = node.proc_path();
    // SAFETY: valid C string; checked; the descriptor is then owned by the File.
    let fd = check(unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC) })?;
    Ok(unsafe { File::from_raw_fd(fd) })
}

impl Passthrough {
    /// A filesystem over `backing`, sending data I/O to `handle`.
    pub fn new(
        backing: &Path,
        handle: Handle,
        classifier: Arc<Classifier>,
        control: Arc<Control>,
        opts: FsOptions,
    ) -> io::Result<Passthrough> {
        Ok(Passthrough {
            inodes: Inodes::new(backing)?,
            handle,
            classifier,
            control,
            opts,
            files: Mutex::new(HashMap::new()),
            writers: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            unaligned: AtomicU64::new(0),
            unaligned_bytes: AtomicU64::new(0),
            // SAFETY: geteuid cannot fail.
            running_as_root: unsafe { libc::geteuid() } == 0,
        })
    }

    /// The listing `opendir` took for handle `fh`, if it is still open.
    fn listing(&self, fh: FileHandle) -> Option<Arc<Listing>> {
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh.0)
            .cloned()
    }

    /// The node `ino` with its descriptor, or ESTALE (or why it could not be reopened).
    fn node(&self, ino: INodeNo) -> Result<Held, Errno> {
        self.inodes.hold(ino.0).map_err(errno)
    }

    /// Reopen `node` with `flags`; out of descriptors, close some of the inode table's and
    /// try once more.
    fn reopen(&self, node: &Held, flags: i32) -> io::Result<File> {
        match reopen(node, flags) {
            Err(e) if out_of_fds(&e) => {
                self.inodes.relieve();
                reopen(node, flags)
            }
            r => r,
        }
    }

    fn open_file(&self, fh: FileHandle) -> Result<Arc<Open>, Errno> {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::EBADF)
    }

    /// The tag for a request from `req`, telling the scheduler of exits and new groups.
    fn tag(&self, req: &Request) -> Tag {
        for ctx in self.classifier.exited() {
            self.handle.exit_context(ctx);
        }
        let (tag, grew) = self.classifier.classify(req.pid());
        if grew {
            if let Err(e) = self.control.rebuild() {
                crate::note!("elevator mount: could not add a group to the scheduler: {e}");
            }
        }
        tag
    }

    /// Give a new backing file to the caller when we run as root (the kernel checked the
    /// caller's right to create it; the file must be theirs, not ours).
    fn chown_new(&self, parent: &Held, name: &CStr, req: &Request) {
        if self.running_as_root && (req.uid() != 0 || req.gid() != 0) {
            // SAFETY: valid descriptor and C string.
            unsafe {
                libc::fchownat(
                    parent.fd.as_raw_fd(),
                    name.as_ptr(),
                    req.uid(),
                    req.gid(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
        }
    }

    fn entry_of(&self, parent: &Held, name: &CStr) -> Result<FileAttr, Errno> {
        let (ino, st) = self.inodes.lookup(parent, name).map_err(errno)?;
        Ok(attr(ino, &st))
    }

    /// mknod, mkdir, symlink: make `name` in `parent` with `make(parent's descriptor, name)`,
    /// give it to the caller and reply with its entry.
    fn make_entry(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        reply: ReplyEntry,
        make: impl FnOnce(RawFd, &CStr) -> io::Result<libc::c_int>,
    ) {
        let r = (|| {
            let p = self.node(parent)?;
            let c = cname(name).map_err(errno)?;
            make(p.fd.as_raw_fd(), &c).map_err(errno)?;
            self.chown_new(&p, &c, req);
            self.entry_of(&p, &c)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    /// Register an open of `node` with `flags`; returns the handle number.
    fn do_open(&self, node: &Held, flags: i32, req: &Request) -> io::Result<u64> {
        // O_NOFOLLOW would refuse the /proc/self/fd magic link we reopen through; the kernel
        // has already resolved the name.
        let mut flags = flags
            & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY | libc::O_TRUNC | libc::O_NOFOLLOW);
        if self.opts.writeback_cache {
            // The kernel reads pages to complete partial writes even of a write-only file,
            // and keeps O_APPEND itself (it knows the size): as libfuse's passthrough does.
            if flags & libc::O_ACCMODE == libc::O_WRONLY {
                flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR;
            }
            flags &= !libc::O_APPEND;
        }
        let plain = flags & !libc::O_DIRECT;
        let direct = match self.reopen(node, plain | libc::O_DIRECT) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.reopen(node, plain)?,
            r => r?,
        };
        let buffered = self.reopen(node, plain & !(libc::O_SYNC | libc::O_DSYNC))?;
        let writing = if flags & libc::O_ACCMODE != libc::O_RDONLY {
            let st = stat_at(node.fd.as_raw_fd(), c"")?;
            let key = (st.st_dev, st.st_ino);
            *self
                .writers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(key)
                .or_default() += 1;
            Some(key)
        } else {
            None
        };
        let file = self.handle.register(direct);
        let group = self.tag(req).group;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.files.lock().unwrap_or_else(|e| e.into_inner()).insert(
            fh,
            Arc::new(Open {
                file,
                buffered,
                group,
                flags,
                writing,
            }),
        );
        Ok(fh)
    }

    fn ctl_lookup(&self, parent: u64, name: &OsStr) -> Option<u64> {
        if parent == ROOT {
            return (name == control::DIR_NAME).then_some(control::INO_DIR);
        }
        self.control.lookup(parent, name.to_str()?)
    }

    /// Writes that bypassed the scheduler because they were not aligned: (count, bytes).
    pub fn unaligned_writes(&self) -> (u64, u64) {
        (
            self.unaligned.load(Ordering::Relaxed),
            self.unaligned_bytes.load(Ordering::Relaxed),
        )
    }
}

impl Filesystem for Passthrough {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let mut want = InitFlags::FUSE_ASYNC_READ
            | InitFlags::FUSE_PARALLEL_DIROPS
            | InitFlags::FUSE_BIG_WRITES
            | InitFlags::FUSE_MAX_PAGES
            | InitFlags::FUSE_ASYNC_DIO
            // With FOPEN_KEEP_CACHE at open: a file's cached pages survive its reopening (a
            // header read by every compile is read from the device once, as on a local
            // filesystem), and are dropped when its size or mtime changes in the backing
            // directory behind our back.
            | InitFlags::FUSE_AUTO_INVAL_DATA
            // A directory listing carries each entry's attributes (readdirplus), so a walk
            // (`git status`, `find`, `ls -l`) needs no lookup per name; the kernel chooses
            // per listing whether to ask for them.
            | InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_READDIRPLUS_AUTO
            // The setuid, setgid and security.capability bits a write, truncate or chown must
            // drop are dropped by the backing filesystem itself, since every one of those
            // reaches it as the same system call from us. Saying so lets the kernel mark the
            // superblock SB_NOSEC (`process_init_reply`), so `file_remove_privs` stops asking
            // us for security.capability (one GETXATTR round trip before every write) once an
            // inode is known to have none.
            | InitFlags::FUSE_HANDLE_KILLPRIV_V2;
        if self.opts.writeback_cache {
            want |= InitFlags::FUSE_WRITEBACK_CACHE;
        }
        let available = want & config.capabilities();
        if self.opts.writeback_cache && !available.contains(InitFlags::FUSE_WRITEBACK_CACHE) {
            crate::note!("elevator mount: the kernel offers no writeback cache; writes are sync");
        }
        let _ = config.add_capabilities(available);
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_readahead(MAX_IO);
        // FUSE keeps at most max_background async requests (readahead and writeback) in
        // flight to us and queues the rest itself, in FIFO order, where our scheduler cannot
        // see them. Let through as many as a block queue would hold; the scheduler decides.
        let bg = self.opts.max_background.max(1);
        let _ = config.set_max_background(bg);
        let _ = config.set_congestion_threshold(bg / 4 * 3);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if let Some(ino) = self.ctl_lookup(parent.0, name) {
            if let Some(n) = self.control.node(ino) {
                return reply.entry(&Duration::ZERO, &ctl_attr(ino, n), Generation(0));
            }
        }
        if control::is_control(parent.0) {
            return reply.error(Errno::ENOENT);
        }
        let r = (|| {
            let p = self.node(parent)?;
            let c = cname(name).map_err(errno)?;
            self.entry_of(&p, &c)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if let Some(n) = self.control.node(ino.0) {
            return reply.attr(&Duration::ZERO, &ctl_attr(ino.0, n));
        }
        match self
            .node(ino)
            .and_then(|n| stat_at(n.fd.as_raw_fd(), c"").map_err(errno))
        {
            Ok(st) => reply.attr(&TTL, &attr(ino.0, &st)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(n) = self.control.node(ino.0) {
            // `echo x > file` truncates first: accept and ignore, as sysfs does.
            return reply.attr(&Duration::ZERO, &ctl_attr(ino.0, n));
        }
        let r = (|| -> Result<libc::stat, Errno> {
            let node = self.node(ino)?;
            let st = stat_at(node.fd.as_raw_fd(), c"").map_err(errno)?;
            let is_link = st.st_mode & libc::S_IFMT == libc::S_IFLNK;
            let path = node.proc_path();
            if let Some(m) = mode {
                if !is_link {
                    // SAFETY: valid C string.
                    check(unsafe { libc::chmod(path.as_ptr(), m & 0o7777) }).map_err(errno)?;
                }
            }
            if uid.is_some() || gid.is_some() {
                let u = uid.unwrap_or(u32::MAX);
                let g = gid.unwrap_or(u32::MAX);
                // SAFETY: valid descriptor and empty C string with AT_EMPTY_PATH.
                check(unsafe {
                    libc::fchownat(
                        node.fd.as_raw_fd(),
                        c"".as_ptr(),
                        u,
                        g,
                        libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
                    )
                })
                .map_err(errno)?;
            }
            if let Some(len) = size {
                // Deviation: the kernel asks us to drop setuid/setgid on a truncate by a
                // process without CAP_FSETID (FATTR_KILL_SUIDGID), but fuser does not pass
                // that flag on; a caller other than root stands for it here.
                if req.uid() != 0 && !is_link {
                    kill_suidgid(node.fd.as_raw_fd(), req.gid()).map_err(errno)?;
                }
                match fh.and_then(|h| self.open_file(h).ok()) {
                    Some(open) => open.buffered.set_len(len).map_err(errno)?,
                    // SAFETY: valid C string.
                    None => check(unsafe { libc::truncate(path.as_ptr(), len as i64) })
                        .map(|_| ())
                        .map_err(errno)?,
                }
            }
            if atime.is_some() || mtime.is_some() {
                let ts = |t: Option<TimeOrNow>| match t {
                    None => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_OMIT,
                    },
                    Some(TimeOrNow::Now) => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_NOW,
                    },
                    Some(TimeOrNow::SpecificTime(t)) => {
                        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
                        libc::timespec {
                            tv_sec: d.as_secs() as i64,
                            tv_nsec: i64::from(d.subsec_nanos()),
                        }
                    }
                };
                let times = [ts(atime), ts(mtime)];
                // On the node's own descriptor (AT_EMPTY_PATH, Linux 5.8+), so that a
                // symlink's times are its own, as `touch -h` and `tar` set them.
                // SAFETY: valid descriptor, empty C string and two timespecs.
                check(unsafe {
                    libc::utimensat(
                        node.fd.as_raw_fd(),
                        c"".as_ptr(),
                        times.as_ptr(),
                        libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
                    )
                })
                .map_err(errno)?;
            }
            stat_at(node.fd.as_raw_fd(), c"").map_err(errno)
        })();
        match r {
            Ok(st) => reply.attr(&TTL, &attr(ino.0, &st)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = self.node(ino).and_then(|n| {
            let mut buf = vec![0u8; libc::PATH_MAX as usize];
            // SAFETY: valid descriptor, empty path, and a buffer of the length given.
            let len = unsafe {
                libc::readlinkat(
                    n.fd.as_raw_fd(),
                    c"".as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            if len < 0 {
                return Err(errno(io::Error::last_os_error()));
            }
            buf.truncate(len as usize);
            Ok(buf)
        });
        match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        self.make_entry(req, parent, name, reply, |dir, c| {
            // SAFETY: valid descriptor and C string.
            check(unsafe { libc::mknodat(dir, c.as_ptr(), mode, libc::dev_t::from(rdev)) })
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        if control::is_control(parent.0) {
            return reply.error(Errno::EPERM);
        }
        self.make_entry(req, parent, name, reply, |dir, c| {
            // SAFETY: valid descriptor and C string.
            check(unsafe { libc::mkdirat(dir, c.as_ptr(), mode) })
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, 0, reply)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, libc::AT_REMOVEDIR, reply)
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        self.make_entry(req, parent, link_name, reply, |dir, c| {
            let t = cname(target.as_os_str())?;
            // SAFETY: valid descriptor and C strings.
            check(unsafe { libc::symlinkat(t.as_ptr(), dir, c.as_ptr()) })
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if control::is_control(parent.0) || control::is_control(newparent.0) {
            return reply.error(Errno::EPERM);
        }
        let r = (|| {
            let p = self.node(parent)?;
            let np = self.node(newparent)?;
            let a = cname(name).map_err(errno)?;
            let b = cname(newname).map_err(errno)?;
            self.inodes
                .rename(&p, &a, &np, &b, || {
                    // SAFETY: valid descriptors and C strings.
                    check(unsafe {
                        libc::renameat2(
                            p.fd.as_raw_fd(),
                            a.as_ptr(),
                            np.fd.as_raw_fd(),
                            b.as_ptr(),
                            flags.bits(),
                        )
                    })
                })
                .map_err(errno)
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            let n = self.node(ino)?;
            let np = self.node(newparent)?;
            let b = cname(newname).map_err(errno)?;
            let from = n.proc_path();
            // SAFETY: valid C strings and descriptor.
            check(unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    from.as_ptr(),
                    np.fd.as_raw_fd(),
                    b.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            })
            .map_err(errno)?;
            self.entry_of(&np, &b)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if let Some(n) = self.control.node(ino.0) {
            return match n {
                CtlNode::Dir => reply.error(Errno::EISDIR),
                CtlNode::File { .. } => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            };
        }
        match self
            .node(ino)
            .and_then(|n| self.do_open(&n, flags.0, req).map_err(errno))
        {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_KEEP_CACHE),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        if control::is_control(parent.0) {
            return reply.error(Errno::EPERM);
        }
        let r = (|| {
            let p = self.node(parent)?;
            let c = cname(name).map_err(errno)?;
            // SAFETY: valid descriptor and C string; the descriptor is closed at once.
            let fd = check(unsafe {
                libc::openat(
                    p.fd.as_raw_fd(),
                    c.as_ptr(),
                    (flags | libc::O_CREAT | libc::O_CLOEXEC) & !libc::O_DIRECT,
                    mode,
                )
            })
            .map_err(errno)?;
            // SAFETY: just opened by us.
            drop(unsafe { File::from_raw_fd(fd) });
            self.chown_new(&p, &c, req);
            let (ino, st) = self.inodes.lookup(&p, &c).map_err(errno)?;
            let node = self.inodes.hold(ino).map_err(errno)?;
            let fh = self.do_open(&node, flags, req).map_err(errno)?;
            Ok((attr(ino, &st), fh))
        })();
        match r {
            Ok((a, fh)) => reply.created(
                &TTL,
                &a,
                Generation(0),
                FileHandle(fh),
                FopenFlags::FOPEN_KEEP_CACHE,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if control::is_control(ino.0) {
            return match self.control.read(ino.0) {
                Some(text) => {
                    let b = text.as_bytes();
                    let start = (offset as usize).min(b.len());
                    let end = (start + size as usize).min(b.len());
                    reply.data(&b[start..end])
                }
                None => reply.error(Errno::ENOENT),
            };
        }
        let open = match self.open_file(fh) {
            Ok(o) => o,
            Err(e) => return reply.error(e),
        };
        let start = offset / DIO_ALIGN * DIO_ALIGN;
        let end = (offset + u64::from(size)).div_ceil(DIO_ALIGN) * DIO_ALIGN;
        let skip = (offset - start) as usize;
        let tag = self.tag(req);
        let io = Io::read(open.file, start, (end - start) as usize)
            .ctx(tag.ctx)
            .group(tag.group)
            .prio(tag.prio);
        self.handle.submit_with(io, move |c| match c.result {
            Ok(n) => {
                let from = skip.min(n);
                let to = (skip + size as usize).min(n);
                reply.data(&c.buf[from..to]);
            }
            Err(e) => reply.error(errno(e)),
        });
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if control::is_control(ino.0) {
            return match self.control.write(ino.0, data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(r) => {
                    crate::note!("elevator mount: .elevator: {}", r.message);
                    reply.error(Errno::from_i32(r.errno))
                }
            };
        }
        let open = match self.open_file(fh) {
            Ok(o) => o,
            Err(e) => return reply.error(e),
        };
        if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID) {
            // The kernel asks for it (FUSE_HANDLE_KILLPRIV_V2) when the writer lacks
            // CAP_FSETID and the file has the bits; the kernel drops them before the data.
            let fd = open.buffered.as_raw_fd();
            if let Err(e) = kill_suidgid(fd, req.gid()) {
                return reply.error(errno(e));
            }
        }
        let o_sync = (flags.0 | open.flags) & (libc::O_SYNC | libc::O_DSYNC) != 0;
        let writeback = write_flags.contains(WriteFlags::FUSE_WRITE_CACHE);
        let len = data.len() as u64;
        if !offset.is_multiple_of(DIO_ALIGN) || !len.is_multiple_of(DIO_ALIGN) {
            self.unaligned.fetch_add(1, Ordering::Relaxed);
            self.unaligned_bytes.fetch_add(len, Ordering::Relaxed);
            let r = open.buffered.write_all_at(data, offset).and_then(|()| {
                if o_sync {
                    open.buffered.sync_data()
                } else {
                    Ok(())
                }
            });
            return match r {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(errno(e)),
            };
        }
        let (tag, sync) = if writeback && !o_sync {
            let mut t = self.tag(req);
            t.ctx = crate::classify::FLUSHER;
            t.group = open.group;
            (t, false)
        } else {
            (self.tag(req), true)
        };
        let mut buf = AlignedBuf::new(data.len());
        buf.copy_from_slice(data);
        let io = Io::write(open.file, offset, buf)
            .ctx(tag.ctx)
            .group(tag.group)
            .prio(tag.prio)
            .sync(sync);
        let want = data.len();
        self.handle.submit_with(io, move |c| match c.result {
            Ok(n) if n == want => reply.written(n as u32),
            Ok(_) => reply.error(Errno::EIO),
            Err(e) => reply.error(errno(e)),
        });
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let open = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        if let Some(o) = open {
            self.handle.unregister(o.file);
            if let Some(key) = o.writing {
                let mut w = self.writers.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(n) = w.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        w.remove(&key);
                    }
                }
            }
        }
        reply.ok();
    }

    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        if control::is_control(ino.0) {
            return reply.ok();
        }
        let open = match self.open_file(fh) {
            Ok(o) => o,
            Err(e) => return reply.error(e),
        };
        let tag = self.tag(req);
        let io = Io::fsync(open.file, datasync)
            .ctx(tag.ctx)
            .group(tag.group)
            .prio(tag.prio);
        self.handle.submit_with(io, move |c| match c.result {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let mut listing: Listing = vec![
            (ino.0, FileType::Directory, ".".into()),
            (ROOT, FileType::Directory, "..".into()),
        ];
        if control::is_control(ino.0) {
            for (i, name) in self.control.entries(ino.0) {
                let kind = match self.control.node(i) {
                    Some(CtlNode::Dir) => FileType::Directory,
                    _ => FileType::RegularFile,
                };
                listing.push((i, kind, name.into()));
            }
        } else {
            let node = match self.node(ino) {
                Ok(n) => n,
                Err(e) => return reply.error(e),
            };
            let path = OsStr::from_bytes(node.proc_path().to_bytes()).to_owned();
            let entries = match std::fs::read_dir(&path) {
                Ok(d) => d,
                Err(e) => return reply.error(errno(e)),
            };
            for e in entries.flatten() {
                use std::os::unix::fs::DirEntryExt;
                let kind = e
                    .file_type()
                    .ok()
                    .and_then(FileType::from_std)
                    .unwrap_or(FileType::RegularFile);
                if ino.0 == ROOT && e.file_name() == control::DIR_NAME {
                    continue;
                }
                listing.push((e.ino(), kind, e.file_name()));
            }
            if ino.0 == ROOT {
                listing.push((
                    control::INO_DIR,
                    FileType::Directory,
                    control::DIR_NAME.into(),
                ));
            }
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, Arc::new(listing));
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(listing) = self.listing(fh) else {
            return reply.error(Errno::EBADF);
        };
        for (i, (ino, kind, name)) in listing.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let Some(listing) = self.listing(fh) else {
            return reply.error(Errno::EBADF);
        };
        let dir = if control::is_control(ino.0) {
            None
        } else {
            match self.node(ino) {
                Ok(d) => Some(d),
                Err(e) => return reply.error(e),
            }
        };
        for (i, (e_ino, kind, name)) in listing.iter().enumerate().skip(offset as usize) {
            let next = i as u64 + 1;
            // "." and ".." come without a lookup (the kernel takes no reference to them from
            // a listing: fuse_direntplus_link skips the dots), the control files with their
            // own attributes and no lifetime, as their lookups give them.
            let without_lookup = if name == "." || name == ".." {
                let mut a = ctl_attr(*e_ino, CtlNode::Dir);
                a.kind = *kind;
                Some(a)
            } else if dir.is_none() || (ino.0 == ROOT && name == control::DIR_NAME) {
                let Some(n) = self.control.node(*e_ino) else {
                    continue;
                };
                Some(ctl_attr(*e_ino, n))
            } else {
                None
            };
            if let Some(a) = without_lookup {
                if reply.add(
                    INodeNo(*e_ino),
                    next,
                    name,
                    &Duration::ZERO,
                    &a,
                    Generation(0),
                ) {
                    break;
                }
                continue;
            }
            let Some(d) = dir.as_ref() else { break };
            let Ok(c) = cname(name) else { continue };
            // Each entry is a lookup: the kernel will forget it as it forgets a looked-up
            // name. One gone since opendir is left out.
            let Ok((n, st)) = self.inodes.lookup(d, &c) else {
                continue;
            };
            if reply.add(INodeNo(n), next, name, &TTL, &attr(n, &st), Generation(0)) {
                // Did not fit: the kernel never saw it, so it will not forget it either.
                self.inodes.forget(n, 1);
                break;
            }
        }
        reply.ok();
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        if control::is_control(ino.0) {
            return reply.error(Errno::ENOTSUP);
        }
        let r = self.node(ino).and_then(|n| {
            let c = cname(name).map_err(errno)?;
            let p = n.proc_path();
            // SAFETY: valid C strings and a buffer of the length given. Through
            // /proc/self/fd the call reaches the node itself, a symlink included.
            check(unsafe {
                libc::setxattr(
                    p.as_ptr(),
                    c.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    flags,
                )
            })
            .map_err(errno)
        });
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if control::is_control(ino.0) {
            return reply.error(Errno::ENODATA);
        }
        let r = self.node(ino).and_then(|n| {
            let c = cname(name).map_err(errno)?;
            let p = n.proc_path();
            xattr_call(size, |buf, len| {
                // SAFETY: valid C strings and a buffer of the length given (or none).
                unsafe { libc::getxattr(p.as_ptr(), c.as_ptr(), buf.cast(), len) }
            })
        });
        reply_xattr(reply, size, r);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if control::is_control(ino.0) {
            return reply_xattr(reply, size, Ok(Vec::new()));
        }
        let r = self.node(ino).and_then(|n| {
            let p = n.proc_path();
            xattr_call(size, |buf, len| {
                // SAFETY: valid C string and a buffer of the length given (or none).
                unsafe { libc::listxattr(p.as_ptr(), buf.cast(), len) }
            })
        });
        reply_xattr(reply, size, r);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if control::is_control(ino.0) {
            return reply.error(Errno::ENOTSUP);
        }
        let r = self.node(ino).and_then(|n| {
            let c = cname(name).map_err(errno)?;
            let p = n.proc_path();
            // SAFETY: valid C strings.
            check(unsafe { libc::removexattr(p.as_ptr(), c.as_ptr()) }).map_err(errno)
        });
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        // The kernel asks only for SEEK_DATA and SEEK_HOLE (fuse_file_llseek), and does not
        // write back the file's dirty pages first (fuse_lseek): while a handle may write the
        // file, the backing file can lack data the kernel holds, and a hole reported there
        // would make `cp --sparse` drop it. Then we answer ENOSYS, on which the kernel
        // answers this and every later SEEK_DATA / SEEK_HOLE of the mount itself (all data
        // up to the end of the file): never wrong, only not sparse.
        let open = match self.open_file(fh) {
            Ok(o) => o,
            Err(e) => return reply.error(e),
        };
        if whence != libc::SEEK_DATA && whence != libc::SEEK_HOLE {
            return reply.error(Errno::EINVAL);
        }
        let dirty = match stat_at(open.buffered.as_raw_fd(), c"") {
            Ok(st) => self
                .writers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&(st.st_dev, st.st_ino)),
            Err(e) => return reply.error(errno(e)),
        };
        if dirty && self.opts.writeback_cache {
            return reply.error(Errno::ENOSYS);
        }
        // SAFETY: valid descriptor; lseek moves only this descriptor's own offset.
        let r = unsafe { libc::lseek(open.buffered.as_raw_fd(), offset, whence) };
        if r < 0 {
            reply.error(errno(io::Error::last_os_error()))
        } else {
            reply.offset(r)
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        if control::is_control(ino.0) {
            return reply.ok();
        }
        let r = self.node(ino).and_then(|n| {
            let d = reopen(&n, libc::O_RDONLY | libc::O_DIRECTORY).map_err(errno)?;
            if datasync {
                d.sync_data().map_err(errno)
            } else {
                d.sync_all().map_err(errno)
            }
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let r = self.node(INodeNo(ROOT)).and_then(|n| {
            let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: valid descriptor and a buffer we own.
            check(unsafe { libc::fstatvfs(n.fd.as_raw_fd(), &mut s) }).map_err(errno)?;
            Ok(s)
        });
        match r {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = self.open_file(fh).and_then(|o| {
            // SAFETY: valid descriptor.
            check(unsafe {
                libc::fallocate(o.buffered.as_raw_fd(), mode, offset as i64, length as i64)
            })
            .map_err(errno)
        });
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

impl Passthrough {
    fn remove(&self, parent: INodeNo, name: &OsStr, flags: i32, reply: ReplyEmpty) {
        if control::is_control(parent.0) || (parent.0 == ROOT && name == control::DIR_NAME) {
            return reply.error(Errno::EPERM);
        }
        let r = (|| {
            let p = self.node(parent)?;
            let c = cname(name).map_err(errno)?;
            if flags == 0 {
                self.inodes.before_unlink(&p, &c);
            }
            // SAFETY: valid descriptor and C string.
            check(unsafe { libc::unlinkat(p.fd.as_raw_fd(), c.as_ptr(), flags) }).map_err(errno)
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

/// Run an xattr call that fills `buf` of `len` bytes (or, with `size` 0, says how large the
/// value is): the value, or its length as zeros when only the length was asked for.
fn xattr_call(size: u32, call: impl Fn(*mut u8, usize) -> isize) -> Result<Vec<u8>, Errno> {
    if size == 0 {
        let n = call(std::ptr::null_mut(), 0);
        if n < 0 {
            return Err(errno(io::Error::last_os_error()));
        }
        return Ok(vec![0; n as usize]);
    }
    let mut buf = vec![0u8; size as usize];
    let n = call(buf.as_mut_ptr(), buf.len());
    if n < 0 {
        return Err(errno(io::Error::last_os_error()));
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// Answer an xattr request of `size`: the length when 0 was asked, else the bytes.
fn reply_xattr(reply: ReplyXattr, size: u32, r: Result<Vec<u8>, Errno>) {
    match r {
        Ok(v) if size == 0 => reply.size(v.len() as u32),
        Ok(v) if v.len() > size as usize => reply.error(Errno::ERANGE),
        Ok(v) => reply.data(&v),
        Err(e) => reply.error(e),
    }
}
