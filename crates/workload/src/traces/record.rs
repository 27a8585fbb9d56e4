//! What every trace reader yields: one record type for every format, and the stream of them.
//!
//! Times are in nanoseconds from the format's own epoch (blktrace: trace start; MSR: 1601;
//! Alibaba/Tencent: 1970; fio, SPC, DiskSim: trace start); [`open`](super::open) rebases a
//! stream so its first request is at 0.

use elevator_core::{Nanos, Op};

use crate::input::{InputError, Position};

/// Where a reader found the record it returned last: for an error about that record once the
/// reader has moved on (a record out of time order is found only against the one before it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordAt {
    /// The file, as errors name it.
    pub file: String,
    /// Its line (text formats) or byte offset (binary blktrace).
    pub at: Position,
    /// The name of the format's time column (`Timestamp` for MSR, `time` for DiskSim ...).
    pub time_field: &'static str,
}

impl RecordAt {
    /// An error about this record's time.
    pub fn error(&self, message: impl Into<String>) -> InputError {
        self.error_in(self.time_field, message)
    }

    /// An error about this record's field `field`.
    pub fn error_in(&self, field: &'static str, message: impl Into<String>) -> InputError {
        match self.at {
            Position::Line(l) => InputError::at_line(&self.file, l, field, message),
            Position::Byte(b) => InputError::at_byte(&self.file, b, field, message),
        }
    }
}

impl std::fmt::Display for RecordAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.at {
            Position::Line(l) => write!(f, "{}:{l}", self.file),
            Position::Byte(b) => write!(f, "{}: byte {b}", self.file),
        }
    }
}

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

    /// Records of length 0 read so far, which the reader skips (MSR, SPC, Alibaba and
    /// Tencent lines of size 0: a request of no bytes): a count, so that a replay can say
    /// how many records it did not replay. 0 where the source does not skip any.
    fn zero_length(&self) -> u64 {
        0
    }

    /// Where the record returned last was read, when the source knows.
    fn last_at(&self) -> Option<RecordAt> {
        None
    }

    /// [`last_at`](Self::last_at)'s position alone (no file name to copy).
    fn last_position(&self) -> Option<Position> {
        self.last_at().map(|a| a.at)
    }

    /// The first record stamped earlier than the one before it, when the source counts them
    /// ([`out_of_order`](Self::out_of_order)).
    fn first_out_of_order(&self) -> Option<RecordAt> {
        None
    }

    /// Records so far that repeat one just before them exactly (same time, process, device,
    /// operation, sector and length: [`duplicates`](super::duplicates)), replayed as given:
    /// a count, so that a replay can say so. 0 where the source does not count.
    fn duplicates(&self) -> u64 {
        0
    }

    /// The first of them, when the source counts them ([`duplicates`](Self::duplicates)).
    fn first_duplicate(&self) -> Option<RecordAt> {
        None
    }
}
