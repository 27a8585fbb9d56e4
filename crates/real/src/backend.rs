//! The device side of the executor: where dispatched requests go and completions come from.
//!
//! The executor holds no file descriptor of its own; it talks to a [`Backend`]. The real one is
//! [`UringBackend`](crate::uring::UringBackend) (io_uring on a file or block device opened with
//! O_DIRECT); [`MemBackend`](crate::mem::MemBackend) keeps the "device" in memory and can inject
//! faults (short reads and writes, EIO), so the executor's error paths are tested without root.

use std::io;
use std::time::Duration;

use elevator_core::{Nanos, Request};

use crate::buf::AlignedBuf;

/// What an I/O does at the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// Read `buf.len()` bytes at `offset` into `buf`.
    Read,
    /// Write `buf` at `offset`.
    Write,
    /// Make earlier completed writes durable (fdatasync).
    Flush,
    /// Discard `len` bytes at `offset` (fio's trim): on a block device the kernel's discard
    /// (`BLKDISCARD`, or io_uring's discard command), on a file a hole punched
    /// (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`). The buffer is empty; a success
    /// completes with 0 bytes. It destroys data as a write does: the executor issues it only
    /// where it may write.
    Discard {
        /// Bytes discarded.
        len: u64,
    },
}

/// The `RWF_*` flags (`pwritev2`) a write carries when its file is opened as fio's `sync=`
/// opens it: `RWF_SYNC` for O_SYNC, `RWF_DSYNC` for O_DSYNC (the kernel sets the same
/// `IOCB_SYNC`/`IOCB_DSYNC` from either), 0 for none.
pub fn rw_flags_of(sync: elevator_workload::jobs::fio::SyncIo) -> i32 {
    use elevator_workload::jobs::fio::SyncIo;
    match sync {
        SyncIo::None => 0,
        SyncIo::Sync => libc::RWF_SYNC,
        SyncIo::Dsync => libc::RWF_DSYNC,
    }
}

/// One I/O handed to a backend. The backend owns `buf` until it returns it in the completion.
#[derive(Debug)]
pub struct IoRequest {
    /// The executor's label, returned in the completion.
    pub token: u64,
    /// Read, write, flush or discard.
    pub kind: IoKind,
    /// Byte offset on the target.
    pub offset: u64,
    /// The data (writes) or room for it (reads); empty for a flush or a discard.
    pub buf: AlignedBuf,
    /// A write's `RWF_*` flags (`pwritev2`): `RWF_DSYNC` or `RWF_SYNC` for a write the
    /// issuer opened O_DSYNC or O_SYNC (fio's `sync=`), which the kernel then completes only
    /// once durable (on a block device, REQ_FUA). 0 otherwise, and for anything else.
    pub rw_flags: i32,
}

/// A finished I/O.
#[derive(Debug)]
pub struct IoCompletion {
    /// The token of the request.
    pub token: u64,
    /// Bytes transferred, or the error the device returned.
    pub result: io::Result<usize>,
    /// The buffer handed in with the request.
    pub buf: AlignedBuf,
}

/// A device the executor can drive.
///
/// Contract: [`submit`](Backend::submit) queues (it may send at once or at the next
/// [`wait`](Backend::wait)); `wait` sends what is queued, then blocks until at least one I/O
/// has completed or `timeout` passes (`None`: no limit), and appends every completion available
/// to `out`. A signal may end the wait early with no completion. Dropping a backend must not
/// return while the kernel still owns one of its buffers.
pub trait Backend {
    /// The target's size in bytes.
    fn size_bytes(&self) -> u64;
    /// How many I/Os it can hold at once.
    fn capacity(&self) -> usize;
    /// I/Os submitted and not yet returned by `wait`.
    fn in_flight(&self) -> usize;
    /// The largest I/O the target takes in one request (a block device's `max_sectors_kb`
    /// and `max_segments`): the block layer splits larger I/O and merges no further. The
    /// default: no limit of the target's own.
    fn queue_limits(&self) -> crate::queue_limits::QueueLimits {
        crate::queue_limits::QueueLimits::default()
    }
    /// Queue one I/O. Fails only if the backend itself is broken (the ring is gone ...);
    /// a device error comes back in the completion.
    fn submit(&mut self, io: IoRequest) -> io::Result<()>;
    /// Queue one I/O that carries the block layer's request `rq` (a device model needs its
    /// sector, op and issuer). The default ignores `rq`.
    fn submit_request(&mut self, io: IoRequest, rq: &Request) -> io::Result<()> {
        let _ = rq;
        self.submit(io)
    }
    /// The most I/Os the executor hands over before it collects completions again (`None`:
    /// no limit, the default). A backend whose `submit` may block the calling thread says
    /// `Some(1)`: the executor then submits one request, collects what completed without
    /// waiting, lets the jobs issue again and submits the next, as fio's loop alternates
    /// `io_submit` and `io_getevents`; otherwise a burst of blocking submissions would hold
    /// every completion back until its end, and the device would see the queue drain and
    /// refill in waves.
    fn submit_burst(&self) -> Option<usize> {
        None
    }

    /// The executor's time zero, the instant its jobs start (`now` on the executor's clock).
    /// A backend whose behaviour depends on time (an emulated drive's rotation, cache and
    /// queue) counts from here, as the simulator counts from its run's start. The default
    /// ignores it.
    fn begin(&mut self, now: Nanos) {
        let _ = now;
    }

    /// Send queued I/O and collect completions; see the trait's contract.
    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()>;
}
