//! What every trace reader yields: one record type for every format, and the stream of them.
//!
//! Times are in nanoseconds from the format's own epoch (blktrace: trace start; MSR: 1601;
//! Alibaba/Tencent: 1970; fio, SPC, DiskSim: trace start); [`open`](super::open) rebases a
//! stream so its first request is at 0.

use elevator_core::{Nanos, Op};

use crate::input::InputError;

/// One request of a trace, whatever the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// When it was issued (queued, or dispatched in blktrace's device view).
    pub time: Nanos,
    /// The issuer: a pid for blktrace, the file for fio, the volume / disk / ASU for the
    /// block-level traces that have no processes.
    pub process: u32,
    /// The device (blktrace's `dev_t`, MSR's disk number, a volume id ...).
    pub device: u32,
    /// What it does.
    pub op: Op,
    /// The issuer waits for it (reads always; writes when the trace marks them sync).
    pub sync: bool,
    /// Filesystem metadata.
    pub meta: bool,
    /// First 512-byte sector.
    pub sector: u64,
    /// Length in sectors (0 for a flush).
    pub sectors: u32,
    /// Service (or response) time the trace measured: D->C for blktrace's device view, the
    /// response time for MSR; `None` where the trace has none.
    pub service: Option<Nanos>,
}

/// A stream of requests in time order.
pub trait RecordSource: Iterator<Item = Result<TraceRecord, InputError>> {
    /// The command name the trace gives process `pid`, if any.
    fn process_name(&self, _pid: u32) -> Option<String> {
        None
    }

    /// Records so far stamped earlier than the one before them (replayed at the earlier
    /// record's time, not re-sorted): a count, so that a replay can say so instead of
    /// re-timing them silently. 0 where the source does not count.
    fn out_of_order(&self) -> u64 {
        0
    }
}
