//! The io_uring backend: one ring, one file descriptor opened with O_DIRECT.
//!
//! The ring is sized generously ([`DEFAULT_ENTRIES`]); how many I/Os are outstanding is decided
//! above it, by the scheduler. Timeouts use `io_uring_enter`'s extended argument (Linux 5.11+),
//! so an idling scheduler costs one system call per wake-up.
//!
//! The ring is set up as fio's io_uring engine sets up its own (fio 3.33,
//! `fio_ioring_queue_init`): cooperative task running, one issuer and deferred task work, each
//! dropped in turn where the kernel refuses it. A completion then costs no inter-processor
//! interrupt of the submitting thread: its task work runs when that thread next enters the
//! kernel to wait, which the executor's loop does anyway. docs/real-io.md ("fio parity")
//! compares the two on the same file.
//!
//! With one issuer, the thread that first submits owns the ring. The ring is created disabled
//! and enabled on its first use, so a backend built on one thread and driven on another works.
//!
//! A discard (fio's trim) goes as fio's io_uring engine sends it: on a block device
//! io_uring's discard command (`IORING_OP_URING_CMD` with `BLOCK_URING_CMD_DISCARD`, Linux
//! 6.12), and where the kernel refuses that command (`EOPNOTSUPP`, `EINVAL`), as fio falls
//! back to its `os_trim`, the `BLKDISCARD` ioctl, synchronously, for that discard and every
//! later one: the loop waits for it, as fio's thread does (a deviation only in that every
//! job of the run waits). On a regular file, where fio's trim fails (`BLKDISCARD` is a block
//! device's ioctl), a hole is punched instead (`IORING_OP_FALLOCATE` with
//! `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`: the blocks are freed and read back as
//! zeroes, the file keeps its size), the filesystem's own discard.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use io_uring::{opcode, types, IoUring};

use crate::backend::{Backend, IoCompletion, IoKind, IoRequest};
use crate::buf::AlignedBuf;

/// Ring entries by default: room for far more I/O than any sensible queue depth.
pub const DEFAULT_ENTRIES: u32 = 256;

/// `BLOCK_URING_CMD_DISCARD` (include/uapi/linux/fs.h): `_IO(0x12, 0)`.
const BLOCK_URING_CMD_DISCARD: u32 = 0x12 << 8;
/// `BLKDISCARD` (include/uapi/linux/fs.h): `_IO(0x12, 119)`.
const BLKDISCARD: libc::c_ulong = (0x12 << 8) | 119;

/// Discard `len` bytes at `offset` of `file` at once and wait: `BLKDISCARD` on a block device
/// (fio's `os_trim`), a hole punched in a regular file.
pub fn discard_now(file: &File, block_device: bool, offset: u64, len: u64) -> io::Result<()> {
    let fd = file.as_raw_fd();
    let r = if block_device {
        let range = [offset, len];
        // SAFETY: BLKDISCARD reads two u64s from the pointer, which outlive the call.
        unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }
    } else {
        let (off, n) = (
            libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?,
            libc::off_t::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?,
        );
        // SAFETY: fallocate reads only its scalar arguments.
        unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                n,
            )
        }
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// An io_uring on one open file or block device.
pub struct UringBackend {
    ring: IoUring,
    file: File,
    size: u64,
    owned: HashMap<u64, AlignedBuf>,
    limits: crate::queue_limits::QueueLimits,
    /// Each I/O to the kernel as it is submitted ([`UringBackend::set_submit_each`]).
    submit_each: bool,
    /// Whether the ring still waits for `IORING_REGISTER_ENABLE_RINGS` from its issuer.
    disabled: bool,
    /// Whether the target is a block device (discards are the kernel's; else holes punched).
    block_device: bool,
    /// The discards in flight on the ring, by token: (offset, bytes), to retry one
    /// synchronously where the kernel refuses io_uring's discard command.
    discards: HashMap<u64, (u64, u64)>,
    /// The kernel refused io_uring's discard command: discards go by `BLKDISCARD`, at once.
    sync_discard: bool,
    /// Completions of I/Os done at once (synchronous discards), handed out at the next wait.
    ready: Vec<IoCompletion>,
}

/// The setups tried in turn, most capable first, as fio falls back on `EINVAL`: deferred task
/// work (Linux 6.1) needs one issuer (6.0); cooperative task running came in 5.19.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    DeferTaskrun,
    CoopTaskrun,
    Plain,
}

fn build_ring(entries: u32, setup: Setup) -> io::Result<IoUring> {
    let mut b = IoUring::builder();
    b.setup_cqsize(entries.saturating_mul(2));
    match setup {
        Setup::DeferTaskrun => {
            b.setup_coop_taskrun()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_r_disabled();
        }
        Setup::CoopTaskrun => {
            b.setup_coop_taskrun();
        }
        Setup::Plain => {}
    }
    b.build(entries)
}

impl UringBackend {
    /// A ring of `entries` (a power of two) over `file`, whose usable size is `size` bytes.
    /// `file` should be opened with O_DIRECT for the figures to mean anything.
    pub fn new(file: File, size: u64, entries: u32) -> io::Result<UringBackend> {
        let mut setup = Setup::DeferTaskrun;
        let ring = loop {
            match build_ring(entries, setup) {
                Ok(ring) => break ring,
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && setup != Setup::Plain => {
                    setup = match setup {
                        Setup::DeferTaskrun => Setup::CoopTaskrun,
                        _ => Setup::Plain,
                    };
                }
                Err(e) => return Err(e),
            }
        };
        // On a device that cannot take I/O without blocking (a loop device, many virtual
        // disks), io_uring hands every request to its bounded io-wq workers, by default at most
        // min(entries, 4 x CPUs); a request beyond that waits in io-wq's own FIFO, where a read
        // would queue behind writes our scheduler already let go. Allow as many workers as the
        // ring has entries, so what is outstanding is what the scheduler decided. (Older
        // kernels without this registration keep their default.)
        let mut max = [entries, 0];
        let _ = ring.submitter().register_iowq_max_workers(&mut max);
        let limits = crate::queue_limits::of(&file);
        use std::os::unix::fs::FileTypeExt;
        let block_device = file.metadata()?.file_type().is_block_device();
        Ok(UringBackend {
            ring,
            file,
            size,
            owned: HashMap::with_capacity(entries as usize),
            limits,
            submit_each: true,
            disabled: setup == Setup::DeferTaskrun,
            block_device,
            discards: HashMap::new(),
            sync_discard: false,
            ready: Vec::new(),
        })
    }

    /// Whether discards go synchronously (`BLKDISCARD`, or a hole punched by `fallocate`),
    /// done at once in `submit`: after the kernel refused io_uring's discard command, or as
    /// set by [`UringBackend::set_sync_discard`].
    pub fn sync_discard(&self) -> bool {
        self.sync_discard
    }

    /// Discard synchronously from now on (`yes`), as the backend does by itself once the
    /// kernel refuses io_uring's discard command (fio's `async_trim_fail`), or through the
    /// ring again (`false`).
    pub fn set_sync_discard(&mut self, yes: bool) {
        self.sync_discard = yes;
    }

    /// Enable a ring created disabled, making the calling thread its one issuer.
    fn enable(&mut self) -> io::Result<()> {
        if self.disabled {
            self.ring.submitter().register_enable_rings()?;
            self.disabled = false;
        }
        Ok(())
    }

    /// Whether each I/O goes to the kernel in its own `io_uring_enter` as it is submitted
    /// (the default), as blk-mq hands each dispatched request to the driver (`queue_rq`) and
    /// as fio submits with its default `iodepth_batch_submit` of 1. With `false` the backend
    /// submits what has queued up when it next waits, in one call: the kernel then plugs the
    /// batch (`blk_start_plug` in io_uring's submission of more than two entries), contiguous
    /// small I/Os of one batch merge in the plug (`blk_attempt_plug_merge`), and the first
    /// I/O of a batch waits for the last. Submitting each brought 4 KiB random reads at
    /// iodepth 32 from 0.83 to 1.05 of fio's IOPS (docs/real-io.md, "fio parity").
    pub fn set_submit_each(&mut self, yes: bool) {
        self.submit_each = yes;
    }

    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the entry's buffer lives in `self.owned` until its completion is reaped,
            // and Drop waits for every outstanding completion.
            let pushed = unsafe { self.ring.submission().push(&entry).is_ok() };
            if pushed {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    fn reap(&mut self, out: &mut Vec<IoCompletion>) {
        for cqe in self.ring.completion() {
            let token = cqe.user_data();
            let Some(buf) = self.owned.remove(&token) else {
                continue;
            };
            let res = cqe.result();
            let mut result = if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else {
                Ok(res as usize)
            };
            if let Some((offset, len)) = self.discards.remove(&token) {
                // A kernel without io_uring's discard command (before 6.12): as fio's
                // `async_trim_fail`, this discard and the later ones by BLKDISCARD.
                if self.block_device && matches!(-res, libc::EOPNOTSUPP | libc::EINVAL) {
                    self.sync_discard = true;
                    result = discard_now(&self.file, true, offset, len).map(|()| 0);
                }
            }
            out.push(IoCompletion { token, result, buf });
        }
    }
}

impl Backend for UringBackend {
    fn size_bytes(&self) -> u64 {
        self.size
    }

    /// The ring's entries, or on a block device its hardware queue's tags if fewer: requests
    /// beyond those would wait in the kernel's queue, where our scheduler no longer decides.
    fn capacity(&self) -> usize {
        let ring = self.ring.params().sq_entries() as usize;
        self.limits
            .depth
            .map_or(ring, |d| ring.min(d.max(1) as usize))
    }

    fn queue_limits(&self) -> crate::queue_limits::QueueLimits {
        self.limits
    }

    fn in_flight(&self) -> usize {
        self.owned.len() + self.ready.len()
    }

    fn submit(&mut self, mut io: IoRequest) -> io::Result<()> {
        self.enable()?;
        let fd = types::Fd(self.file.as_raw_fd());
        let len = u32::try_from(io.buf.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "I/O larger than 4 GiB"))?;
        if self.owned.contains_key(&io.token) || self.ready.iter().any(|c| c.token == io.token) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("token {} is already in flight", io.token),
            ));
        }
        let entry = match io.kind {
            IoKind::Read => opcode::Read::new(fd, io.buf.as_mut_ptr(), len)
                .offset(io.offset)
                .build(),
            IoKind::Write => opcode::Write::new(fd, io.buf.as_mut_ptr(), len)
                .offset(io.offset)
                .rw_flags(io.rw_flags)
                .build(),
            IoKind::Flush => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
            IoKind::Discard { len } if self.sync_discard => {
                let result = discard_now(&self.file, self.block_device, io.offset, len);
                self.ready.push(IoCompletion {
                    token: io.token,
                    result: result.map(|()| 0),
                    buf: io.buf,
                });
                return Ok(());
            }
            IoKind::Discard { len } if self.block_device => {
                // `blkdev_uring_cmd`: the range's start in `addr`, its length in `addr3`
                // (the first 8 bytes of the command area).
                let mut cmd = [0u8; 16];
                cmd[..8].copy_from_slice(&len.to_ne_bytes());
                self.discards.insert(io.token, (io.offset, len));
                opcode::UringCmd16::new(fd, BLOCK_URING_CMD_DISCARD)
                    .addr(Some(io.offset))
                    .cmd(cmd)
                    .build()
            }
            IoKind::Discard { len } => opcode::Fallocate::new(fd, len)
                .offset(io.offset)
                .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                .build(),
        }
        .user_data(io.token);
        self.owned.insert(io.token, io.buf);
        self.push(entry)?;
        if self.submit_each {
            self.ring.submit()?;
        }
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()> {
        self.enable()?;
        let before = out.len();
        out.append(&mut self.ready);
        self.reap(out);
        let want = usize::from(out.len() == before);
        enter(&self.ring, want, timeout)?;
        self.reap(out);
        Ok(())
    }
}

/// One `io_uring_enter`: submit what is queued and wait for `want` completions, or until
/// `timeout`. An expired timeout, a signal and a full completion queue (ETIME, EINTR, EBUSY)
/// are not errors: the caller reaps what there is and decides again.
pub(crate) fn enter(ring: &IoUring, want: usize, timeout: Option<Duration>) -> io::Result<()> {
    let r = match timeout {
        Some(t) => {
            let ts = types::Timespec::new()
                .sec(t.as_secs())
                .nsec(t.subsec_nanos());
            let args = types::SubmitArgs::new().timespec(&ts);
            ring.submitter().submit_with_args(want, &args)
        }
        None => ring.submitter().submit_and_wait(want),
    };
    match r {
        Err(e)
            if !matches!(
                e.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EBUSY)
            ) =>
        {
            Err(e)
        }
        _ => Ok(()),
    }
}

impl Drop for UringBackend {
    fn drop(&mut self) {
        // The kernel may still write into buffers we own: wait for every completion first.
        let mut sink = Vec::new();
        while !self.owned.is_empty() {
            if self.ring.submit_and_wait(1).is_err() && self.ring.completion().is_empty() {
                // The ring is unusable; leaking the buffers is the only safe choice.
                std::mem::forget(std::mem::take(&mut self.owned));
                break;
            }
            self.reap(&mut sink);
            sink.clear();
        }
    }
}
