//! blktrace's binary format (Linux `include/uapi/linux/blktrace_api.h`), read as a stream, and
//! the requests a block trace holds.
//!
//! ## Records
//! Each per-CPU file `<dev>.blktrace.<cpu>` is a sequence of records in the recording
//! machine's byte order (either order is accepted; the first record's magic decides, and every
//! record is checked):
//! - version 7, `struct blk_io_trace` (48 bytes): magic u32 (`0x656174 << 8 | 7`), sequence
//!   u32, time u64 (ns), sector u64, bytes u32, action u32, pid u32, device u32, cpu u32, error
//!   u16, pdu_len u16;
//! - version 8, `struct blk_io_trace2` (64 bytes, Linux 6.19): the same fields but pid before a
//!   64-bit action, and 12 bytes of padding after pdu_len.
//!
//! Then `pdu_len` bytes of payload: the 8-byte cgroup id first when the action carries the
//! cgroup flag (`__BLK_TA_CGROUP`, bit 8); for a remap (`A`) a big-endian
//! `blk_io_trace_remap` (device from, device to, sector from); for a process notification
//! (category NOTIFY, code 0) the command name, which names that pid from then on. Other
//! payloads (SCSI commands, messages, driver data) are skipped.
//!
//! The action is a code (low 16 bits, [`BlkAction`]) and category bits from bit 16
//! (`BLK_TC_READ` 1, `WRITE` 2, `FLUSH` 4, `SYNC` 8, ... `META` 0x1000, `DISCARD` 0x2000; version
//! 8 adds bits above 15 for zone commands, which this reader reports as [`BlkAction::Other`]
//! requests with no data direction).
//!
//! ## Requests ([`BlkRequests`])
//! The events become requests in one of two views ([`BlkView`]): the application's (every
//! `Q`: a bio as the issuer submitted it, before merging) or the device's (every `D`: a request
//! as the driver got it, merged, with its D->C service time once its `C` arrives). A
//! dispatched request is held until its completion (or for at most 10 s of trace time), so
//! memory is bounded by the device's queue.

use std::collections::{HashMap, VecDeque};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use elevator_core::{Nanos, Op};

use super::by_time::ByTime;
use super::kernel_limits::{check_cpu, check_pid};
use super::record::{RecordAt, RecordSource, TraceRecord};
use super::until_error::ReadUntilError;
use crate::input::{InputError, Position};

/// `BLK_IO_TRACE_MAGIC`: the top 24 bits of every record's first word.
pub const MAGIC: u32 = 0x6561_7400;
/// Size of a version-7 record's fixed part.
pub const V7_LEN: usize = 48;
/// Size of a version-8 record's fixed part.
pub const V8_LEN: usize = 64;

/// Category bits (`enum blktrace_cat`), as they sit above the 16-bit action code.
pub mod cat {
    /// A read.
    pub const READ: u64 = 1 << 0;
    /// A write.
    pub const WRITE: u64 = 1 << 1;
    /// A cache flush (preflush).
    pub const FLUSH: u64 = 1 << 2;
    /// REQ_SYNC.
    pub const SYNC: u64 = 1 << 3;
    /// Queueing and merging events.
    pub const QUEUE: u64 = 1 << 4;
    /// Requeue events.
    pub const REQUEUE: u64 = 1 << 5;
    /// Issue (dispatch) events.
    pub const ISSUE: u64 = 1 << 6;
    /// Completion events.
    pub const COMPLETE: u64 = 1 << 7;
    /// Filesystem requests.
    pub const FS: u64 = 1 << 8;
    /// Passthrough (SCSI) requests.
    pub const PC: u64 = 1 << 9;
    /// Notifications (process names, timestamps, messages).
    pub const NOTIFY: u64 = 1 << 10;
    /// Readahead.
    pub const AHEAD: u64 = 1 << 11;
    /// Metadata.
    pub const META: u64 = 1 << 12;
    /// Discard.
    pub const DISCARD: u64 = 1 << 13;
    /// Forced unit access.
    pub const FUA: u64 = 1 << 15;
}

/// `__BLK_TA_CGROUP`: the payload starts with an 8-byte cgroup id.
const CGROUP_FLAG: u16 = 1 << 8;

/// What happened (`enum blktrace_act`, the action's low byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlkAction {
    /// Q: a bio was queued.
    Queue,
    /// M: merged at the back of a queued request.
    BackMerge,
    /// F: merged at the front of a queued request.
    FrontMerge,
    /// G: a request was allocated.
    GetRq,
    /// S: the allocation slept.
    SleepRq,
    /// R: requeued by the driver.
    Requeue,
    /// D: issued to the driver.
    Issue,
    /// C: completed.
    Complete,
    /// P: the queue was plugged.
    Plug,
    /// U: unplugged by I/O.
    UnplugIo,
    /// UT: unplugged by the timer.
    UnplugTimer,
    /// I: inserted into the scheduler.
    Insert,
    /// X: a bio was split.
    Split,
    /// B: bounced.
    Bounce,
    /// A: remapped from another device.
    Remap,
    /// Aborted.
    Abort,
    /// Driver data.
    DriverData,
    /// A notification (category NOTIFY): 0 process name, 1 timestamp, 2 message.
    Notify(u8),
    /// Any other code.
    Other(u8),
}

impl BlkAction {
    /// From the action code's low byte and whether the category is NOTIFY.
    pub fn from_code(code: u8, notify: bool) -> BlkAction {
        if notify {
            return BlkAction::Notify(code);
        }
        match code {
            1 => BlkAction::Queue,
            2 => BlkAction::BackMerge,
            3 => BlkAction::FrontMerge,
            4 => BlkAction::GetRq,
            5 => BlkAction::SleepRq,
            6 => BlkAction::Requeue,
            7 => BlkAction::Issue,
            8 => BlkAction::Complete,
            9 => BlkAction::Plug,
            10 => BlkAction::UnplugIo,
            11 => BlkAction::UnplugTimer,
            12 => BlkAction::Insert,
            13 => BlkAction::Split,
            14 => BlkAction::Bounce,
            15 => BlkAction::Remap,
            16 => BlkAction::Abort,
            17 => BlkAction::DriverData,
            c => BlkAction::Other(c),
        }
    }

    /// The code's low byte.
    pub fn code(self) -> u8 {
        match self {
            BlkAction::Queue => 1,
            BlkAction::BackMerge => 2,
            BlkAction::FrontMerge => 3,
            BlkAction::GetRq => 4,
            BlkAction::SleepRq => 5,
            BlkAction::Requeue => 6,
            BlkAction::Issue => 7,
            BlkAction::Complete => 8,
            BlkAction::Plug => 9,
            BlkAction::UnplugIo => 10,
            BlkAction::UnplugTimer => 11,
            BlkAction::Insert => 12,
            BlkAction::Split => 13,
            BlkAction::Bounce => 14,
            BlkAction::Remap => 15,
            BlkAction::Abort => 16,
            BlkAction::DriverData => 17,
            BlkAction::Notify(c) | BlkAction::Other(c) => c,
        }
    }

    /// blkparse's letters for it (`Q`, `M`, `D`, `UT` ...; `m` for notifications).
    pub fn letters(self) -> &'static str {
        match self {
            BlkAction::Queue => "Q",
            BlkAction::BackMerge => "M",
            BlkAction::FrontMerge => "F",
            BlkAction::GetRq => "G",
            BlkAction::SleepRq => "S",
            BlkAction::Requeue => "R",
            BlkAction::Issue => "D",
            BlkAction::Complete => "C",
            BlkAction::Plug => "P",
            BlkAction::UnplugIo => "U",
            BlkAction::UnplugTimer => "UT",
            BlkAction::Insert => "I",
            BlkAction::Split => "X",
            BlkAction::Bounce => "B",
            BlkAction::Remap => "A",
            BlkAction::Abort => "Ab",
            BlkAction::DriverData => "DD",
            BlkAction::Notify(_) => "m",
            BlkAction::Other(_) => "?",
        }
    }

    /// The category a kernel event of this kind carries besides the direction bits
    /// (`BLK_TA_*` in blktrace_api.h).
    pub fn category(self) -> u64 {
        match self {
            BlkAction::Requeue => cat::REQUEUE,
            BlkAction::Issue => cat::ISSUE,
            BlkAction::Complete => cat::COMPLETE,
            BlkAction::Split | BlkAction::Bounce | BlkAction::Other(_) => 0,
            BlkAction::DriverData => 1 << 14,
            BlkAction::Notify(_) => cat::NOTIFY,
            _ => cat::QUEUE,
        }
    }
}

/// A remap's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remap {
    /// The device the bio came from.
    pub device_from: u32,
    /// The device it went to.
    pub device_to: u32,
    /// Its sector on `device_from`.
    pub sector_from: u64,
}

/// One blktrace event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkEvent {
    /// Nanoseconds since tracing started.
    pub time: Nanos,
    /// Per-CPU event number.
    pub sequence: u32,
    /// The CPU that recorded it.
    pub cpu: u32,
    /// The device, kernel encoding (`major << 20 | minor`).
    pub device: u32,
    /// The process it ran in.
    pub pid: u32,
    /// What happened.
    pub action: BlkAction,
    /// Category bits ([`cat`]).
    pub category: u64,
    /// First sector.
    pub sector: u64,
    /// Length in bytes.
    pub bytes: u32,
    /// Completion error.
    pub error: u16,
    /// The cgroup id, when the event carries one.
    pub cgroup: Option<u64>,
    /// A remap's origin.
    pub remap: Option<Remap>,
}

impl BlkEvent {
    /// The request's operation, or `None` for events without a data direction or flush.
    pub fn op(&self) -> Option<Op> {
        let c = self.category;
        if c & cat::DISCARD != 0 {
            Some(Op::Discard)
        } else if c & cat::WRITE != 0 {
            Some(Op::Write)
        } else if c & cat::READ != 0 {
            Some(Op::Read)
        } else if c & cat::FLUSH != 0 {
            Some(Op::Flush)
        } else {
            None
        }
    }

    /// Whether the issuer waits for it: reads always (`op_is_sync`), others when REQ_SYNC.
    pub fn sync(&self) -> bool {
        self.category & cat::SYNC != 0 || self.op() == Some(Op::Read)
    }

    /// Length in sectors, rounded up.
    pub fn sectors(&self) -> u32 {
        self.bytes.div_ceil(512)
    }
}

/// A stream of blktrace events (binary or blkparse text).
pub trait EventSource: Iterator<Item = Result<BlkEvent, InputError>> {
    /// The command name the trace gave `pid`.
    fn process_name(&self, pid: u32) -> Option<String>;

    /// Where the event returned last was read, when the source knows.
    fn last_at(&self) -> Option<RecordAt> {
        None
    }

    /// [`last_at`](Self::last_at)'s position alone (no file name to copy).
    fn last_position(&self) -> Option<Position> {
        self.last_at().map(|a| a.at)
    }
}

/// Byte order of a binary trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Little,
    Big,
}

impl Order {
    fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        match self {
            Order::Little => u16::from_le_bytes(a),
            Order::Big => u16::from_be_bytes(a),
        }
    }
    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            Order::Little => u32::from_le_bytes(a),
            Order::Big => u32::from_be_bytes(a),
        }
    }
    fn u64(self, b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        match self {
            Order::Little => u64::from_le_bytes(a),
            Order::Big => u64::from_be_bytes(a),
        }
    }
}

/// The read buffer of one blktrace file read alone, bytes.
const MAX_BUFFER: usize = 256 << 10;
/// The smallest read buffer of one of many per-CPU files merged, bytes.
const MIN_BUFFER: usize = 8 << 10;
/// The read buffers of the per-CPU files merged into one stream, together, bytes.
const BUFFERS_BUDGET: usize = 16 << 20;

/// One binary blktrace file, read record by record.
pub struct EventReader {
    file: String,
    input: Box<dyn Read>,
    offset: u64,
    /// Where the record returned last starts.
    record_start: u64,
    order: Option<Order>,
    pdu: Vec<u8>,
    names: HashMap<u32, String>,
    done: bool,
}

impl EventReader {
    /// Open one per-CPU file (a compressed one is refused: [`super::lines::open_trace`]).
    pub fn open(path: &Path) -> Result<EventReader, InputError> {
        EventReader::open_buffered(path, MAX_BUFFER)
    }

    /// [`EventReader::open`] with a read buffer of `capacity` bytes.
    fn open_buffered(path: &Path, capacity: usize) -> Result<EventReader, InputError> {
        let name = path.display().to_string();
        let f = super::lines::open_trace(path)?;
        Ok(EventReader::new(
            Box::new(BufReader::with_capacity(capacity, f)),
            &name,
        ))
    }

    /// Read records from `input`; `file` names it in errors.
    pub fn new(input: Box<dyn Read>, file: &str) -> EventReader {
        EventReader {
            file: file.to_string(),
            input,
            offset: 0,
            record_start: 0,
            order: None,
            pdu: Vec::new(),
            names: HashMap::new(),
            done: false,
        }
    }

    /// Open several per-CPU files as one stream merged by time.
    pub fn open_merged(paths: &[PathBuf]) -> Result<MergedEvents<EventReader>, InputError> {
        let mut parts = Vec::new();
        // The read buffers share one budget: 256 KiB each held 2000 per-CPU files (a
        // recording of a 2000-CPU machine, or copies named so) in 598 MB, and a trace may
        // have up to 8192 (NR_CPUS) of them.
        let capacity = (BUFFERS_BUDGET / paths.len().max(1)).clamp(MIN_BUFFER, MAX_BUFFER);
        for p in paths {
            parts.push(EventReader::open_buffered(p, capacity)?);
        }
        merge_events(parts)
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, InputError> {
        let mut n = 0;
        while n < buf.len() {
            match self.input.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(InputError::at_byte(
                        &self.file,
                        self.offset,
                        "",
                        e.to_string(),
                    ))
                }
            }
        }
        Ok(n)
    }

    fn truncated(&self, what: &str, got: usize, want: usize) -> InputError {
        InputError::at_byte(
            &self.file,
            self.offset,
            "",
            format!("truncated record: {got} of the {want} bytes of its {what}"),
        )
    }
}

impl ReadUntilError for EventReader {
    type Item = BlkEvent;

    fn done(&mut self) -> &mut bool {
        &mut self.done
    }

    fn read_next(&mut self) -> Result<Option<BlkEvent>, InputError> {
        let mut h = [0u8; V8_LEN];
        self.record_start = self.offset;
        let got = self.fill(&mut h[..V7_LEN])?;
        if got == 0 {
            return Ok(None);
        }
        if got < 4 {
            return Err(self.truncated("header", got, V7_LEN));
        }
        let order = match self.order {
            Some(o) => o,
            None => {
                let o = if u32::from_le_bytes([h[0], h[1], h[2], h[3]]) & 0xffff_ff00 == MAGIC {
                    Order::Little
                } else if u32::from_be_bytes([h[0], h[1], h[2], h[3]]) & 0xffff_ff00 == MAGIC {
                    Order::Big
                } else {
                    return Err(InputError::at_byte(
                        &self.file,
                        self.offset,
                        "magic",
                        format!(
                            "{:02x}{:02x}{:02x}{:02x} is not blktrace's magic (0x656174 then the version)",
                            h[0], h[1], h[2], h[3]
                        ),
                    ));
                };
                self.order = Some(o);
                o
            }
        };
        let magic = order.u32(&h[0..4]);
        if magic & 0xffff_ff00 != MAGIC {
            return Err(InputError::at_byte(
                &self.file,
                self.offset,
                "magic",
                format!("{magic:#010x} is not blktrace's magic (a corrupt or misaligned record)"),
            ));
        }
        let version = magic & 0xff;
        let len = match version {
            7 => V7_LEN,
            8 => V8_LEN,
            v => {
                return Err(InputError::at_byte(
                    &self.file,
                    self.offset,
                    "version",
                    format!("version {v} is not supported (7 and 8 are)"),
                ))
            }
        };
        if got < V7_LEN {
            return Err(self.truncated("header", got, len));
        }
        if len > V7_LEN {
            let more = self.fill(&mut h[V7_LEN..len])?;
            if more < len - V7_LEN {
                return Err(self.truncated("header", V7_LEN + more, len));
            }
        }
        let o = order;
        let (action, pid, device, cpu, error, pdu_len) = if version == 7 {
            (
                u64::from(o.u32(&h[28..])),
                o.u32(&h[32..]),
                o.u32(&h[36..]),
                o.u32(&h[40..]),
                o.u16(&h[44..]),
                o.u16(&h[46..]),
            )
        } else {
            (
                o.u64(&h[32..]),
                o.u32(&h[28..]),
                o.u32(&h[40..]),
                o.u32(&h[44..]),
                o.u16(&h[48..]),
                o.u16(&h[50..]),
            )
        };
        // A kernel stamps its own pid and CPU (`__blk_add_trace`): past their ranges the file
        // is not a kernel's record (kernel_limits).
        let bad = |field, r| InputError::at_byte(&self.file, self.offset, field, r);
        check_pid(pid).map_err(|r| bad("pid", r))?;
        check_cpu(cpu).map_err(|r| bad("cpu", r))?;
        let pdu_len = usize::from(pdu_len);
        self.pdu.resize(pdu_len, 0);
        let mut pdu = std::mem::take(&mut self.pdu);
        let got_pdu = self.fill(&mut pdu)?;
        self.pdu = pdu;
        if got_pdu < pdu_len {
            return Err(self.truncated("payload", got_pdu, pdu_len));
        }
        let code = (action & 0xffff) as u16;
        let category = action >> 16;
        let blk_action = BlkAction::from_code(code as u8, category & cat::NOTIFY != 0);
        let mut payload = &self.pdu[..];
        let cgroup = if code & CGROUP_FLAG != 0 {
            if payload.len() < 8 {
                return Err(InputError::at_byte(
                    &self.file,
                    self.offset,
                    "pdu_len",
                    format!("{pdu_len} bytes cannot hold the cgroup id the action announces"),
                ));
            }
            let id = o.u64(payload);
            payload = &payload[8..];
            Some(id)
        } else {
            None
        };
        let remap = if blk_action == BlkAction::Remap && payload.len() >= 16 {
            Some(Remap {
                device_from: u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]),
                device_to: u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]),
                sector_from: Order::Big.u64(&payload[8..16]),
            })
        } else {
            None
        };
        let pid_ = pid;
        if blk_action == BlkAction::Notify(0) {
            let end = payload
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(payload.len());
            if self.names.len() < MAX_NAMES || self.names.contains_key(&pid_) {
                self.names.insert(pid_, short_name(&payload[..end]));
            }
        }
        let ev = BlkEvent {
            time: Nanos(o.u64(&h[8..])),
            sequence: o.u32(&h[4..]),
            cpu,
            device,
            pid,
            action: blk_action,
            category,
            sector: o.u64(&h[16..]),
            bytes: o.u32(&h[24..]),
            error,
            cgroup,
            remap,
        };
        self.offset += (len + pdu_len) as u64;
        Ok(Some(ev))
    }
}

impl Iterator for EventReader {
    type Item = Result<BlkEvent, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_until_error()
    }
}

impl EventSource for EventReader {
    fn process_name(&self, pid: u32) -> Option<String> {
        self.names.get(&pid).cloned()
    }

    fn last_at(&self) -> Option<RecordAt> {
        Some(RecordAt {
            file: self.file.clone(),
            at: Position::Byte(self.record_start),
            time_field: "time",
        })
    }

    fn last_position(&self) -> Option<Position> {
        Some(Position::Byte(self.record_start))
    }
}

/// Event streams (one per CPU) merged by time; ties go to the earlier stream.
pub type MergedEvents<S> = ByTime<S, BlkEvent>;

/// Merge per-CPU event streams by time.
pub fn merge_events<S: EventSource>(parts: Vec<S>) -> Result<MergedEvents<S>, InputError> {
    ByTime::new(parts, |e| e.time, |p| p.last_position())
}

impl<S: EventSource> EventSource for MergedEvents<S> {
    fn process_name(&self, pid: u32) -> Option<String> {
        ByTime::process_name(self, pid, |p, pid| p.process_name(pid))
    }

    fn last_at(&self) -> Option<RecordAt> {
        ByTime::last_at(self, |p| p.last_at())
    }

    fn last_position(&self) -> Option<Position> {
        ByTime::last_position(self)
    }
}

/// Which requests of a block trace to replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlkView {
    /// The application's view: every `Q` (bios as submitted, before merging).
    #[default]
    Queue,
    /// The device's view: every `D` (requests as dispatched), with D->C service times.
    Dispatch,
}

/// Events of each kind seen, by action code (index = code, 0..=31; notifications under 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlkCounts {
    counts: [u64; 32],
}

impl BlkCounts {
    /// Count `e`.
    pub fn add(&mut self, e: &BlkEvent) {
        let i = match e.action {
            BlkAction::Notify(_) => 0,
            a => usize::from(a.code()).min(31),
        };
        self.counts[i] += 1;
    }
    /// How many events of kind `a` (all notifications for any `Notify`).
    pub fn get(&self, a: BlkAction) -> u64 {
        match a {
            BlkAction::Notify(_) => self.counts[0],
            a => self.counts[usize::from(a.code()).min(31)],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Waiting,
    Done,
    Cancelled,
}

/// A block trace's events turned into requests. See the module documentation.
pub struct BlkRequests<S> {
    events: S,
    view: BlkView,
    /// Dispatched requests waiting for their completions, each with where its `D` was read.
    pending: VecDeque<(TraceRecord, Slot, Option<RecordAt>)>,
    /// Where the `D` of the record returned last was read (the dispatch view).
    returned_at: Option<RecordAt>,
    /// Absolute index of `pending[0]`.
    base: u64,
    in_flight: HashMap<(u32, u64), u64>,
    owners: HashMap<(u32, u64), u32>,
    last_time: Nanos,
    /// The latest stamp of an event that is not a note, for the order check.
    latest: Nanos,
    ended: bool,
    counts: BlkCounts,
    /// Events stamped earlier than the one before them are passed on (the records they make
    /// are then out of order, counted by [`open`](super::open)) instead of refused.
    accept_unsorted: bool,
}

/// How long a dispatched request waits for its completion before it is replayed without a
/// service time.
const COMPLETION_HORIZON: Nanos = Nanos::from_secs(10);

impl<S: EventSource> BlkRequests<S> {
    /// Requests of `events` in `view`.
    pub fn new(events: S, view: BlkView) -> BlkRequests<S> {
        BlkRequests {
            events,
            view,
            pending: VecDeque::new(),
            returned_at: None,
            base: 0,
            in_flight: HashMap::new(),
            owners: HashMap::new(),
            last_time: Nanos::ZERO,
            latest: Nanos::ZERO,
            ended: false,
            counts: BlkCounts::default(),
            accept_unsorted: false,
        }
    }

    /// Pass on events stamped earlier than the one before them instead of refusing them.
    pub fn accepting_unsorted(self) -> BlkRequests<S> {
        BlkRequests {
            accept_unsorted: true,
            ..self
        }
    }

    /// Events seen so far, by kind.
    pub fn counts(&self) -> &BlkCounts {
        &self.counts
    }

    fn record(e: &BlkEvent, op: Op, process: u32) -> TraceRecord {
        TraceRecord {
            time: e.time,
            process,
            device: e.device,
            op,
            sync: e.sync(),
            meta: e.category & cat::META != 0,
            sector: e.sector,
            sectors: e.sectors(),
            service: None,
        }
    }

    /// Take in one event; returns a record ready at once (the queue view).
    fn take(&mut self, e: BlkEvent) -> Option<TraceRecord> {
        self.counts.add(&e);
        self.last_time = self.last_time.max(e.time);
        let key = (e.device, e.sector);
        match (self.view, e.action) {
            (BlkView::Queue, BlkAction::Queue) => {
                return e.op().map(|op| Self::record(&e, op, e.pid));
            }
            (BlkView::Dispatch, BlkAction::GetRq | BlkAction::Insert) => {
                self.owners.entry(key).or_insert(e.pid);
            }
            (BlkView::Dispatch, BlkAction::Issue) => {
                if let Some(op) = e.op() {
                    let pid = self.owners.remove(&key).unwrap_or(e.pid);
                    let idx = self.base + self.pending.len() as u64;
                    let at = self.events.last_at();
                    self.pending
                        .push_back((Self::record(&e, op, pid), Slot::Waiting, at));
                    self.in_flight.insert(key, idx);
                }
            }
            (BlkView::Dispatch, BlkAction::Complete | BlkAction::Requeue) => {
                if let Some(idx) = self.in_flight.remove(&key) {
                    if let Some(slot) = idx
                        .checked_sub(self.base)
                        .and_then(|i| self.pending.get_mut(i as usize))
                    {
                        if e.action == BlkAction::Complete {
                            slot.0.service = Some(e.time.saturating_sub(slot.0.time));
                            slot.1 = Slot::Done;
                        } else {
                            slot.1 = Slot::Cancelled;
                        }
                    }
                }
            }
            _ => {}
        }
        None
    }

    fn pop_ready(&mut self) -> Option<TraceRecord> {
        while let Some(&(r, s, _)) = self.pending.front() {
            let stale = r.time.saturating_add(COMPLETION_HORIZON) < self.last_time;
            if s == Slot::Waiting && !stale && !self.ended {
                return None;
            }
            let (_, _, at) = self.pending.pop_front().expect("a front");
            self.base += 1;
            if s == Slot::Waiting {
                // Forget its dispatch, unless a later one at the same place replaced it: one
                // look-up (a scan of every request in flight here made a trace without
                // completions quadratic).
                let key = (r.device, r.sector);
                if self.in_flight.get(&key) == Some(&(self.base - 1)) {
                    self.in_flight.remove(&key);
                }
            }
            if s != Slot::Cancelled {
                self.returned_at = at;
                return Some(r);
            }
        }
        None
    }
}

impl<S: EventSource> Iterator for BlkRequests<S> {
    type Item = Result<TraceRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pop_ready() {
                return Some(Ok(r));
            }
            if self.ended {
                return None;
            }
            match self.events.next() {
                None => self.ended = true,
                Some(Err(e)) => {
                    self.ended = true;
                    self.pending.clear();
                    return Some(Err(e));
                }
                Some(Ok(e)) => {
                    // blktrace stamps each CPU's events in the order it writes them
                    // (__blk_add_trace, interrupts off), and the CPUs are merged by time, as
                    // blkparse sorts its output: an event earlier than the one before it is a
                    // damaged or hand-edited trace. Notes (process names) are not checked.
                    let note = matches!(e.action, BlkAction::Notify(_));
                    if !note && !self.accept_unsorted && e.time < self.latest {
                        self.ended = true;
                        self.pending.clear();
                        let msg = unsorted_message(e.time, self.latest);
                        return Some(Err(match self.events.last_at() {
                            Some(at) => at.error(msg),
                            None => InputError::new("<trace>", msg).in_field("time"),
                        }));
                    }
                    if !note {
                        self.latest = self.latest.max(e.time);
                    }
                    if let Some(r) = self.take(e) {
                        return Some(Ok(r));
                    }
                }
            }
        }
    }
}

impl<S: EventSource> RecordSource for BlkRequests<S> {
    fn process_name(&self, pid: u32) -> Option<String> {
        self.events.process_name(pid)
    }

    fn last_at(&self) -> Option<RecordAt> {
        // The queue view returns a record as its Q event is read; the dispatch view returns
        // records later, when their completions have been read: where its D was read.
        match self.view {
            BlkView::Queue => self.events.last_at(),
            BlkView::Dispatch => self.returned_at.clone(),
        }
    }
}

/// The longest process name kept, bytes: the kernel's are 16 (TASK_COMM_LEN, with its NUL);
/// a trace's longer names (up to a 64 KiB payload or line) are cut, so that the names a trace
/// holds take memory by the process, not by the byte.
pub const MAX_NAME: usize = 64;

/// The most process names kept from one trace (the replay gives at most
/// `jobs::replay::MAX_PROCESSES` processes their own figures; the rest go unnamed).
pub const MAX_NAMES: usize = 65_536;

/// `name` (bytes of a trace) as text, cut to [`MAX_NAME`] bytes.
pub fn short_name(name: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(&name[..name.len().min(MAX_NAME)]).into_owned();
    while s.len() > MAX_NAME {
        s.pop();
    }
    s
}

/// The message refusing a record or event stamped `time`, earlier than `before`, the latest
/// stamp before it (times as the trace gives them).
pub fn unsorted_message(time: Nanos, before: Nanos) -> String {
    format!(
        "stamped {:.9} s earlier than a record before it: the trace is not in time order (sort \
         it by time, or give --accept-unsorted to replay it in file order, each such record \
         issued at once)",
        before.saturating_sub(time).as_secs_f64(),
    )
}

/// Encode `e` as a version-7 record in little-endian order (what x86 and arm64 record), with
/// the payload `pdu` (which must already hold the cgroup id if the action carries the flag).
pub fn encode_v7(e: &BlkEvent, pdu: &[u8], out: &mut Vec<u8>) {
    let action = (e.category << 16) as u32 | u32::from(e.action.code());
    out.extend_from_slice(&(MAGIC | 7).to_le_bytes());
    out.extend_from_slice(&e.sequence.to_le_bytes());
    out.extend_from_slice(&e.time.as_ns().to_le_bytes());
    out.extend_from_slice(&e.sector.to_le_bytes());
    out.extend_from_slice(&e.bytes.to_le_bytes());
    out.extend_from_slice(&action.to_le_bytes());
    out.extend_from_slice(&e.pid.to_le_bytes());
    out.extend_from_slice(&e.device.to_le_bytes());
    out.extend_from_slice(&e.cpu.to_le_bytes());
    out.extend_from_slice(&e.error.to_le_bytes());
    out.extend_from_slice(&(pdu.len() as u16).to_le_bytes());
    out.extend_from_slice(pdu);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(
        action: BlkAction,
        category: u64,
        time: u64,
        sector: u64,
        bytes: u32,
        pid: u32,
    ) -> BlkEvent {
        BlkEvent {
            time: Nanos(time),
            sequence: 0,
            cpu: 0,
            device: (8 << 20) | 16,
            pid,
            action,
            category: category | action.category(),
            sector,
            bytes,
            error: 0,
            cgroup: None,
            remap: None,
        }
    }

    /// A version-8 or big-endian record, built field by field as blk_io_trace2 lays them out.
    fn encode(e: &BlkEvent, pdu: &[u8], version: u8, big: bool) -> Vec<u8> {
        let action = (e.category << 16) | u64::from(e.action.code());
        let mut out = Vec::new();
        macro_rules! put {
            ($v:expr) => {
                if big {
                    out.extend_from_slice(&$v.to_be_bytes())
                } else {
                    out.extend_from_slice(&$v.to_le_bytes())
                }
            };
        }
        put!(MAGIC | u32::from(version));
        put!(e.sequence);
        put!(e.time.as_ns());
        put!(e.sector);
        put!(e.bytes);
        if version == 7 {
            put!(action as u32);
            put!(e.pid);
        } else {
            put!(e.pid);
            put!(action);
        }
        put!(e.device);
        put!(e.cpu);
        put!(e.error);
        put!(pdu.len() as u16);
        if version == 8 {
            out.extend_from_slice(&[0u8; 12]);
        }
        out.extend_from_slice(pdu);
        out
    }

    fn read_all(bytes: Vec<u8>) -> (Vec<Result<BlkEvent, InputError>>, EventReader) {
        let mut r = EventReader::new(Box::new(std::io::Cursor::new(bytes)), "t.blktrace.0");
        let v: Vec<_> = r.by_ref().collect();
        (v, r)
    }

    #[test]
    fn v7_little_endian_round_trips_through_encode() {
        let q = ev(
            BlkAction::Queue,
            cat::WRITE | cat::SYNC,
            1000,
            2048,
            4096,
            42,
        );
        let mut bytes = Vec::new();
        encode_v7(&q, &[], &mut bytes);
        assert_eq!(bytes.len(), V7_LEN);
        let (v, _) = read_all(bytes);
        assert_eq!(v, vec![Ok(q)]);
        assert_eq!(q.op(), Some(Op::Write));
        assert!(q.sync());
        assert_eq!(q.sectors(), 8);
    }

    #[test]
    fn v8_and_big_endian_read_the_same_event() {
        let d = ev(BlkAction::Issue, cat::READ, 5, 99, 512, 7);
        for (version, big) in [(7, true), (8, false), (8, true)] {
            let (v, _) = read_all(encode(&d, &[], version, big));
            assert_eq!(v, vec![Ok(d)], "version {version} big {big}");
        }
    }

    #[test]
    fn payloads_give_cgroup_remap_and_process_names() {
        let mut bytes = Vec::new();
        // A process notification: category NOTIFY, code 0, payload the command name.
        let note = BlkEvent {
            category: cat::NOTIFY,
            ..ev(BlkAction::Notify(0), 0, 0, 0, 0, 4242)
        };
        encode_v7(&note, b"postgres\0", &mut bytes);
        // A queue event from a cgroup: the flag in the code, the id first in the payload.
        let mut q = ev(BlkAction::Queue, cat::READ, 10, 8, 4096, 4242);
        let mut rec = encode(&q, &77u64.to_le_bytes(), 7, false);
        rec[29] |= 1; // bit 8 of the action code: __BLK_TA_CGROUP
        bytes.extend_from_slice(&rec);
        // A remap with its big-endian payload.
        let a = ev(BlkAction::Remap, cat::READ, 20, 1000, 4096, 4242);
        let mut pdu = Vec::new();
        pdu.extend_from_slice(&((8u32 << 20) | 1).to_be_bytes());
        pdu.extend_from_slice(&((8u32 << 20) | 16).to_be_bytes());
        pdu.extend_from_slice(&500u64.to_be_bytes());
        encode_v7(&a, &pdu, &mut bytes);
        let (v, r) = read_all(bytes);
        let v: Vec<BlkEvent> = v.into_iter().map(Result::unwrap).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(r.process_name(4242).as_deref(), Some("postgres"));
        q.cgroup = Some(77);
        assert_eq!(v[1], q);
        assert_eq!(
            v[2].remap,
            Some(Remap {
                device_from: (8 << 20) | 1,
                device_to: (8 << 20) | 16,
                sector_from: 500
            })
        );
    }

    #[test]
    fn bad_records_name_the_byte_offset() {
        let q = ev(BlkAction::Queue, cat::READ, 1, 2, 512, 3);
        let mut good = Vec::new();
        encode_v7(&q, &[], &mut good);
        // Truncated second record.
        let mut b = good.clone();
        b.extend_from_slice(&good[..30]);
        let (v, _) = read_all(b);
        let e = v[1].clone().unwrap_err();
        assert_eq!(e.byte(), Some(48));
        assert!(
            e.to_string().contains("truncated record: 30 of the 48"),
            "{e}"
        );
        // Wrong magic.
        let (v, _) = read_all(vec![0u8; 100]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].clone().unwrap_err().field, "magic");
        // Wrong version.
        let mut b = good.clone();
        b[0] = 6;
        let (v, _) = read_all(b);
        let e = v[0].clone().unwrap_err();
        assert_eq!(e.field, "version");
        assert_eq!(
            e.to_string(),
            "t.blktrace.0: byte 0: field `version`: version 6 is not supported (7 and 8 are)"
        );
        // A payload shorter than its length, and a cgroup flag without room for the id.
        let mut b = good.clone();
        b[46] = 10;
        let (v, _) = read_all(b);
        assert!(v[0].clone().unwrap_err().to_string().contains("payload"));
        let mut b = good.clone();
        b[29] |= 1;
        b[46] = 4;
        b.extend_from_slice(&[0; 4]);
        let (v, _) = read_all(b);
        assert_eq!(v[0].clone().unwrap_err().field, "pdu_len");
        // Empty file: no events, no error.
        let (v, _) = read_all(Vec::new());
        assert!(v.is_empty());
    }

    struct Events(std::vec::IntoIter<BlkEvent>);
    impl Iterator for Events {
        type Item = Result<BlkEvent, InputError>;
        fn next(&mut self) -> Option<Self::Item> {
            self.0.next().map(Ok)
        }
    }
    impl EventSource for Events {
        fn process_name(&self, _: u32) -> Option<String> {
            None
        }
    }

    #[test]
    fn the_two_views_and_measured_service_times() {
        // Two bios from pid 10 merge into one request; a read from pid 11 is dispatched after
        // it and completes first.
        let w = cat::WRITE;
        let events = vec![
            ev(BlkAction::Queue, w, 0, 100, 4096, 10),
            ev(BlkAction::GetRq, w, 1, 100, 4096, 10),
            ev(BlkAction::Queue, w, 2, 108, 4096, 10),
            ev(BlkAction::BackMerge, w, 3, 108, 4096, 10),
            ev(BlkAction::Insert, w, 4, 100, 8192, 10),
            ev(BlkAction::Queue, cat::READ, 5, 900, 512, 11),
            ev(BlkAction::Insert, cat::READ, 6, 900, 512, 11),
            ev(BlkAction::Issue, w, 10, 100, 8192, 0),
            ev(BlkAction::Issue, cat::READ, 12, 900, 512, 0),
            ev(BlkAction::Complete, cat::READ, 20, 900, 512, 0),
            ev(BlkAction::Complete, w, 40, 100, 8192, 0),
        ];
        let q: Vec<TraceRecord> =
            BlkRequests::new(Events(events.clone().into_iter()), BlkView::Queue)
                .map(Result::unwrap)
                .collect();
        assert_eq!(q.len(), 3);
        assert_eq!((q[1].sector, q[1].sectors, q[1].process), (108, 8, 10));
        let mut d = BlkRequests::new(Events(events.into_iter()), BlkView::Dispatch);
        let recs: Vec<TraceRecord> = d.by_ref().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 2);
        // In dispatch order, each with the pid that allocated or inserted it.
        assert_eq!(
            (recs[0].sector, recs[0].sectors, recs[0].process),
            (100, 16, 10)
        );
        assert_eq!(recs[0].service, Some(Nanos(30)));
        assert_eq!((recs[1].process, recs[1].service), (11, Some(Nanos(8))));
        assert_eq!(d.counts().get(BlkAction::Queue), 3);
        assert_eq!(d.counts().get(BlkAction::BackMerge), 1);
        assert_eq!(d.counts().get(BlkAction::Complete), 2);
    }

    #[test]
    fn a_dispatch_without_completion_is_released_after_the_horizon() {
        let events = vec![
            ev(BlkAction::Issue, cat::READ, 0, 1, 512, 1),
            ev(BlkAction::Issue, cat::READ, 1, 2, 512, 1),
            ev(BlkAction::Complete, cat::READ, 2, 2, 512, 1),
            ev(BlkAction::Queue, cat::READ, 20_000_000_000, 3, 512, 1),
        ];
        let mut d = BlkRequests::new(Events(events.into_iter()), BlkView::Dispatch);
        let a = d.next().unwrap().unwrap();
        assert_eq!((a.sector, a.service), (1, None));
        let b = d.next().unwrap().unwrap();
        assert_eq!((b.sector, b.service), (2, Some(Nanos(1))));
        assert!(d.next().is_none());
    }

    #[test]
    fn per_cpu_streams_merge_by_time() {
        let a = Events(
            vec![
                ev(BlkAction::Queue, cat::READ, 5, 1, 512, 1),
                ev(BlkAction::Queue, cat::READ, 30, 3, 512, 1),
            ]
            .into_iter(),
        );
        let b = Events(vec![ev(BlkAction::Queue, cat::READ, 10, 2, 512, 1)].into_iter());
        let m = merge_events(vec![a, b]).unwrap();
        let t: Vec<u64> = m.map(|e| e.unwrap().time.as_ns()).collect();
        assert_eq!(t, vec![5, 10, 30]);
    }
}
