//! Block requests as a scheduler sees them.

use crate::time::Nanos;

/// Bytes in a sector: every position and length a scheduler sees is in 512-byte units.
pub const SECTOR_BYTES: u64 = 512;

/// A request's identity, unique within one run. Assigned by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// An I/O context: the process (or thread, or writeback flusher) that issued a request.
/// Linux keys per-process state (AS's statistics, CFQ's and BFQ's queues) on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CtxId(pub u32);

/// A group (cgroup) in the [`GroupTree`](crate::group::GroupTree); `GroupId::ROOT` is the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId(pub u32);

impl GroupId {
    /// The root group, to which every context belongs unless a scenario says otherwise.
    pub const ROOT: GroupId = GroupId(0);
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read from the device.
    Read,
    /// Write to the device.
    Write,
    /// Flush the device's volatile cache.
    Flush,
    /// Discard (trim) a range.
    Discard,
}

impl Op {
    /// Whether this is a read (Linux's `rq_data_dir() == READ`).
    pub fn is_read(self) -> bool {
        matches!(self, Op::Read)
    }
}

/// The I/O priority class (ioprio_set(2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoClass {
    /// Real time: served before everything else.
    RealTime,
    /// Best effort: the default.
    BestEffort,
    /// Idle: served only when nothing else wants the disk.
    Idle,
}

/// An I/O priority: class plus level 0 (highest) ..= 7 (lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoPrio {
    /// The priority class.
    pub class: IoClass,
    /// Level within the class, 0 (highest) to 7 (lowest); 4 is the default.
    pub level: u8,
}

impl Default for IoPrio {
    fn default() -> Self {
        IoPrio {
            class: IoClass::BestEffort,
            level: 4,
        }
    }
}

/// One block request.
///
/// Positions and lengths are in 512-byte sectors. `sync` follows Linux: reads are always sync;
/// writes are sync only when the issuer waits for them (O_DIRECT, fsync); writeback is async.
/// `idle_hint` is Linux's REQ_IDLE, which the direct-I/O paths put on every O_DIRECT write
/// beside REQ_SYNC (`dio_bio_write_op` in block/fops.c, formerly fs/block_dev.c;
/// `iomap_dio_bio_actor`; fs/direct-io.c): "more I/O follows from this issuer".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Identity, unique within the run.
    pub id: RequestId,
    /// The issuing context (process).
    pub ctx: CtxId,
    /// The issuing context's group.
    pub group: GroupId,
    /// Read, write, flush or discard.
    pub op: Op,
    /// Whether the issuer waits for this request (reads always do).
    pub sync: bool,
    /// Filesystem metadata (Linux REQ_META); some policies favour it.
    pub meta: bool,
    /// Linux REQ_IDLE: the issuer will send more I/O right after this one. Set on O_DIRECT
    /// writes (with `sync`); false for reads, writeback and fsync/O_SYNC writes. CFQ keeps
    /// idling for a sync writer only when its writes carry it (`req_noidle`, 4.19).
    pub idle_hint: bool,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// The issuer's I/O priority.
    pub prio: IoPrio,
    /// When the request entered the scheduler.
    pub submitted: Nanos,
    /// The CPU whose software queue it is staged in: blk-mq's `rq->mq_ctx`, the CPU its
    /// submitter ran on when the request was allocated (`blk_mq_get_new_requests`). Under
    /// `none` and kyber a queue run takes the staged requests CPU by CPU
    /// (`blk_mq_flush_busy_ctxs`, `kyber_flush_busy_kcqs`). 0 for every request of the
    /// simulator and the executors; a kernel trace's replay gives each its recorded CPU.
    pub cpu: u32,
}

impl Request {
    /// The sector just past this request.
    pub fn end(&self) -> u64 {
        self.sector + u64::from(self.sectors)
    }
    /// Length in bytes.
    pub fn bytes(&self) -> u64 {
        u64::from(self.sectors) * SECTOR_BYTES
    }
    /// This request cut into consecutive pieces of at most `max` sectors (itself alone when
    /// it fits), as a driver splits I/O beyond a policy's
    /// [`Scheduler::max_request_sectors`](crate::Scheduler::max_request_sectors). Every piece
    /// keeps this request's id: the driver gives each its own.
    pub fn pieces(&self, max: u32) -> impl Iterator<Item = Request> + '_ {
        let max = max.max(1);
        (0..self.sectors)
            .step_by(max as usize)
            .map(move |start| Request {
                sector: self.sector + u64::from(start),
                sectors: max.min(self.sectors - start),
                ..self.clone()
            })
    }
    /// A sync read or sync write: the issuer is blocked on it.
    pub fn is_sync(&self) -> bool {
        self.sync || self.op.is_read()
    }
}

/// The largest request a merge may build on a device that states no limit of its own, in
/// sectors: 256 sectors = 128 KiB, libata's `ATA_MAX_SECTORS` for the LBA28 disks of the
/// seeds' years. A device that states `max_sectors` or `max_segments`
/// ([`Limits`](crate::block::Limits)) merges up to those instead; the block layer passes the
/// limit to [`Scheduler::try_merge`](crate::Scheduler::try_merge).
pub const DEFAULT_MERGE_SECTORS: u32 = 256;
