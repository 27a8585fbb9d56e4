//! The kernel's own block events as tracefs prints them: the text of
//! `/sys/kernel/tracing/trace` or `trace_pipe` (or an instance's), read event by event and
//! assembled into requests ([`requests`]) with the metadata of the recording ([`recording`]).
//!
//! This is how elevator takes the running kernel as its oracle: `elevator kernel-record` runs a
//! fio job on a loop device under one of the kernel's schedulers with the block tracepoints on,
//! and this module turns what the kernel printed into each request's arrival, size, flags,
//! process, priority, dispatch order and completion, ready to be replayed into our schedulers.
//!
//! ## The lines
//! With the default trace options an event line is
//!
//! ```text
//!              fio-13949   [000] ...1.   449.722742: block_rq_insert: 7,0 R 4096 () 3952 + 8 be,0,4 [fio]
//! ```
//!
//! the task's command and pid, the CPU in brackets, the irq/preempt flags (absent with
//! `noirq-info`), the timestamp (`seconds.microseconds` for the nanosecond clocks, a bare count
//! for `counter` and `x86-tsc`), the event's name and its payload. The payloads read here are
//! those of Linux 6.x (`include/trace/events/block.h`, `kyber.h`):
//!
//! | events | payload |
//! |---|---|
//! | `block_rq_insert`, `block_rq_issue`, `block_rq_merge` | `maj,min rwbs bytes (cmd) sector + sectors [prio] [comm]` |
//! | `block_rq_complete`, `block_rq_requeue`, `block_rq_error` | `maj,min rwbs (cmd) sector + sectors [prio] [error]` |
//! | `block_bio_queue`, `block_bio_backmerge`, `block_bio_frontmerge`, `block_getrq` | `maj,min rwbs sector + sectors [comm]` |
//! | `block_split` | `maj,min rwbs sector / new_sector [comm]` |
//! | `kyber_latency` | `maj,min domain type pNN numerator/denominator samples=N` |
//! | `kyber_adjust` | `maj,min domain depth` |
//! | `kyber_throttled` | `maj,min domain` |
//! | `tracing_mark_write` | free text |
//!
//! `prio` is `class,hint,level` (`be,0,4`), printed since Linux 6.10 and optional here.
//! The `blk` tracer's lines (its non-classic format) have no event name: after the timestamp
//! come `maj,min`, an optional cgroup `ino,gen`, the action and rwbs; its notes (action `m`,
//! bfq's `bfq_log_bfqq` messages) are read as [`EventBody::Message`], its other actions as
//! [`EventBody::Other`]. `CPU:N [LOST M EVENTS]` (trace_pipe's mark of an overrun) is
//! [`EventBody::Lost`]. Comment lines (`#`) and blank lines are skipped; events of other names
//! are [`EventBody::Other`], so a trace with more events enabled still reads.
//!
//! Errors name the file, the line and the field (`task`, `pid`, `cpu`, `time`, `event`,
//! `device`, `rwbs`, `bytes`, `cmd`, `sector`, `sectors`, `prio`, `comm`, `error`, `domain`,
//! `depth`, `percentile`, `latency`, `samples`); the reader stops at the first.

pub mod groups;
pub mod ioprio;
pub mod recording;
pub mod requests;

use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::Path;

use elevator_core::{IoClass, IoPrio, Nanos, Op};

use super::kernel_limits::{check_cpu, check_pid};
use super::lines::{parse_fixed, parse_u64, show, Lines};
use super::until_error::ReadUntilError;
use crate::input::InputError;

/// An error at 1-based `line` of `file` about `field` (line 0: the whole file).
pub(crate) fn located(
    file: &str,
    line: usize,
    field: &str,
    reason: impl Into<String>,
) -> InputError {
    if line == 0 {
        InputError::new(file, reason).in_field(field)
    } else {
        InputError::at_line(file, line, field, reason)
    }
}

pub use groups::{ContextGroups, GROUPS_FILE};

/// The `trace_marker` line `elevator kernel-record` writes as it starts fio.
pub const MARK_FIO_STARTS: &str = "elevator kernel-record: fio starts";
/// The `trace_marker` line `elevator kernel-record` writes once fio has ended, before it
/// stops tracing: a recording whose trace has [`MARK_FIO_STARTS`] and not this was cut.
pub const MARK_FIO_ENDED: &str = "elevator kernel-record: fio ended";

pub use recording::{FioJobPid, Recording, RecordingMeta};
pub use requests::{
    io_uring_owner, Assembly, Dispatch, KernelTrace, SchedBio, TaskOnCpu, TracedRequest,
};

/// A block device as the kernel prints it: `major,minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dev {
    /// Major number (7 for loop devices).
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl Dev {
    /// The kernel's `dev_t` encoding (`major << 20 | minor`), as tracepoint filters take it
    /// (`dev == 7340032` for 7,0).
    pub fn dev_t(self) -> u64 {
        (u64::from(self.major) << 20) | u64::from(self.minor)
    }
}

impl fmt::Display for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.major, self.minor)
    }
}

/// What a request does, from the letter of rwbs that names its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// `R`.
    Read,
    /// `W`.
    Write,
    /// `D` (discard; `DE` secure erase).
    Discard,
    /// `F` alone or after the preflush `F`: a cache flush (`REQ_OP_FLUSH`).
    Flush,
    /// `N`: an operation rwbs has no letter for (write-zeroes, zone management, driver ops).
    None,
}

impl Dir {
    /// The scheduler's operation, when it has one.
    pub fn op(self) -> Option<Op> {
        match self {
            Dir::Read => Some(Op::Read),
            Dir::Write => Some(Op::Write),
            Dir::Discard => Some(Op::Discard),
            Dir::Flush => Some(Op::Flush),
            Dir::None => None,
        }
    }
}

/// rwbs, the kernel's summary of a request's or bio's flags (`blk_fill_rwbs`): an optional
/// preflush `F`, the operation, then `F` (FUA), `A` (readahead), `S` (sync), `M` (metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rwbs {
    /// The operation.
    pub dir: Dir,
    /// REQ_PREFLUSH: flush the cache before this request.
    pub preflush: bool,
    /// REQ_FUA: force unit access.
    pub fua: bool,
    /// REQ_RAHEAD: readahead.
    pub ahead: bool,
    /// REQ_SYNC.
    pub sync: bool,
    /// REQ_META: filesystem metadata.
    pub meta: bool,
}

impl Rwbs {
    /// Parse rwbs text (`RS`, `FWS`, `WFS`, `FF`, `DE`, `N` ...).
    pub fn parse(s: &str) -> Result<Rwbs, String> {
        let b = s.as_bytes();
        let mut i = 0;
        let mut preflush = false;
        if b.len() > 1 && b[0] == b'F' {
            preflush = true;
            i = 1;
        }
        let dir = match b.get(i) {
            Some(b'R') => Dir::Read,
            Some(b'W') => Dir::Write,
            Some(b'D') => Dir::Discard,
            Some(b'F') => Dir::Flush,
            Some(b'N') => Dir::None,
            _ => return Err(format!("{s:?} has no operation (R, W, D, F or N)")),
        };
        i += 1;
        if dir == Dir::Discard && b.get(i) == Some(&b'E') {
            i += 1;
        }
        let mut r = Rwbs {
            dir,
            preflush,
            fua: false,
            ahead: false,
            sync: false,
            meta: false,
        };
        for &c in &b[i..] {
            let flag = match c {
                b'F' => &mut r.fua,
                b'A' => &mut r.ahead,
                b'S' => &mut r.sync,
                b'M' => &mut r.meta,
                _ => return Err(format!("unknown flag {:?} in {s:?}", c as char)),
            };
            if *flag {
                return Err(format!("flag {:?} twice in {s:?}", c as char));
            }
            *flag = true;
        }
        Ok(r)
    }

    /// Whether the kernel counts it as synchronous (`op_is_sync`): reads, and anything with
    /// REQ_SYNC, REQ_FUA or REQ_PREFLUSH.
    pub fn is_sync(self) -> bool {
        self.dir == Dir::Read || self.sync || self.fua || self.preflush
    }
}

impl fmt::Display for Rwbs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        if self.preflush {
            s.push('F');
        }
        s.push(match self.dir {
            Dir::Read => 'R',
            Dir::Write => 'W',
            Dir::Discard => 'D',
            Dir::Flush => 'F',
            Dir::None => 'N',
        });
        for (on, c) in [
            (self.fua, 'F'),
            (self.ahead, 'A'),
            (self.sync, 'S'),
            (self.meta, 'M'),
        ] {
            if on {
                s.push(c);
            }
        }
        f.write_str(&s)
    }
}

/// The I/O priority class as the block events print it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrioClass {
    /// `none`: no priority was set; the scheduler derives one from the task's nice value.
    None,
    /// `rt`.
    RealTime,
    /// `be`.
    BestEffort,
    /// `idle`.
    Idle,
    /// `invalid`.
    Invalid,
}

/// A request's I/O priority from a block event's `class,hint,level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TracedPrio {
    /// The class.
    pub class: PrioClass,
    /// The priority hint (ioprio bits 3..12; 0 for none).
    pub hint: u16,
    /// The level within the class, 0 (highest) to 7.
    pub level: u8,
}

impl TracedPrio {
    /// The scheduler's priority: the class and level when one was set, `None` for class
    /// `none` (the kernel then takes it from the task's nice value, which the trace does not
    /// show) and `invalid`.
    pub fn io_prio(self) -> Option<IoPrio> {
        let class = match self.class {
            PrioClass::RealTime => IoClass::RealTime,
            PrioClass::BestEffort => IoClass::BestEffort,
            PrioClass::Idle => IoClass::Idle,
            PrioClass::None | PrioClass::Invalid => return None,
        };
        Some(IoPrio {
            class,
            level: self.level.min(7),
        })
    }

    fn parse(s: &str) -> Result<TracedPrio, String> {
        let mut it = s.split(',');
        let (Some(c), Some(h), Some(l), None) = (it.next(), it.next(), it.next(), it.next()) else {
            return Err(format!("{s:?} is not class,hint,level"));
        };
        let class = match c {
            "none" => PrioClass::None,
            "rt" => PrioClass::RealTime,
            "be" => PrioClass::BestEffort,
            "idle" => PrioClass::Idle,
            "invalid" => PrioClass::Invalid,
            _ => return Err(format!("unknown class {c:?} in {s:?}")),
        };
        // IOPRIO_HINT_NR_BITS (include/uapi/linux/ioprio.h): the events print
        // IOPRIO_PRIO_HINT, ten bits.
        let hint = parse_u64(h.as_bytes())
            .and_then(|v| u16::try_from(v).ok())
            .filter(|&v| v < 1 << 10)
            .ok_or_else(|| format!("cannot parse the hint {h:?} in {s:?} (0 to 1023)"))?;
        let level = parse_u64(l.as_bytes())
            .and_then(|v| u8::try_from(v).ok())
            .filter(|&v| v < 8)
            .ok_or_else(|| format!("cannot parse the level {l:?} in {s:?} (0 to 7)"))?;
        Ok(TracedPrio { class, hint, level })
    }
}

/// Which request event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RqAction {
    /// `block_rq_insert`: the request enters the scheduler (or the dispatch list).
    Insert,
    /// `block_rq_issue`: the request is handed to the driver; the dispatch.
    Issue,
    /// `block_rq_merge`: the request is merged into the one before it and goes away.
    Merge,
    /// `block_rq_requeue`: the driver gave the request back; it will be dispatched again.
    Requeue,
    /// `block_rq_complete`.
    Complete,
    /// `block_rq_error`: completed with an error.
    Error,
}

/// A `block_rq_*` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RqEvent {
    /// Which event.
    pub action: RqAction,
    /// The device.
    pub dev: Dev,
    /// The request's flags.
    pub rwbs: Rwbs,
    /// Its bytes (insert, issue and merge print them).
    pub bytes: Option<u32>,
    /// First sector (`u64::MAX` for a flush's completion: the flush request has no position).
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// I/O priority, where the kernel prints it (6.10 on).
    pub prio: Option<TracedPrio>,
    /// The command of the task in whose context the event fired (insert, issue, merge).
    pub comm: Option<String>,
    /// The completion's error (complete, requeue, error; 0 for success).
    pub error: Option<i32>,
}

/// Which bio event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BioAction {
    /// `block_bio_queue`: a bio is submitted to the device's queue.
    Queue,
    /// `block_bio_backmerge`: the bio is appended to a request not yet dispatched.
    BackMerge,
    /// `block_bio_frontmerge`: the bio is prepended to a request not yet dispatched.
    FrontMerge,
    /// `block_getrq`: a new request is allocated for the bio.
    GetRq,
}

/// A bio event (`block_bio_queue`, `block_bio_backmerge`, `block_bio_frontmerge`,
/// `block_getrq`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BioEvent {
    /// Which event.
    pub action: BioAction,
    /// The device.
    pub dev: Dev,
    /// The bio's flags.
    pub rwbs: Rwbs,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// The submitting task's command.
    pub comm: String,
}

/// A kyber tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KyberEvent {
    /// `kyber_latency`: a domain's latency percentile at the timer (`kyber_timer_fn`), in
    /// buckets of its target: `numerator/denominator`.
    Latency {
        /// The device.
        dev: Dev,
        /// `READ`, `WRITE`, `DISCARD` or `OTHER`.
        domain: String,
        /// `I/O` (device time) or `total` (including time in the scheduler).
        kind: String,
        /// The percentile (90 or 99).
        percentile: u32,
        /// The bucket.
        numerator: u32,
        /// The buckets per target.
        denominator: u32,
        /// Samples behind it.
        samples: u32,
    },
    /// `kyber_adjust`: a domain's queue depth changed.
    Adjust {
        /// The device.
        dev: Dev,
        /// The domain.
        domain: String,
        /// The new depth.
        depth: u32,
    },
    /// `kyber_throttled`: a domain had no token for a request.
    Throttled {
        /// The device.
        dev: Dev,
        /// The domain.
        domain: String,
    },
}

/// What an event line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventBody {
    /// A request event.
    Rq(RqEvent),
    /// A bio event.
    Bio(BioEvent),
    /// `block_split`: a bio split at `new_sector`.
    Split {
        /// The device.
        dev: Dev,
        /// The bio's flags.
        rwbs: Rwbs,
        /// The bio's first sector.
        sector: u64,
        /// Where the second part starts.
        new_sector: u64,
    },
    /// A kyber tracepoint.
    Kyber(KyberEvent),
    /// A note of the `blk` tracer (bfq's `bfq_log_bfqq` lines): `maj,min [ino,gen] m N text`.
    Message {
        /// The device.
        dev: Dev,
        /// The cgroup id the note carries (the `ino` of `ino,gen`, hexadecimal in the line):
        /// with the tracer's `blk_cgroup` option, the cgroup of the group whose queue bfq
        /// logs (`bfq_log_bfqq` -> `blk_add_cgroup_trace_msg`); without it, 1 for every note
        /// (`__blk_trace_note_message`). `None` for a line without the field.
        cgroup: Option<u64>,
        /// The text after `m N`.
        text: String,
    },
    /// `tracing_mark_write`: a line written to `trace_marker`.
    Marker(String),
    /// `CPU:N [LOST M EVENTS]`: the ring buffer overflowed; events are missing here.
    Lost {
        /// The CPU whose buffer lost them.
        cpu: u32,
        /// How many.
        events: u64,
    },
    /// Any other event (or `blk` tracer action), by name, not read further.
    Other(String),
}

/// One event line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtraceEvent {
    /// The 1-based line it was read from.
    pub line: usize,
    /// The command of the task in whose context it fired (`<...>` when tracefs did not know).
    pub task: String,
    /// That task's pid (0 for the idle task and for [`EventBody::Lost`]).
    pub pid: u32,
    /// The CPU it fired on.
    pub cpu: u32,
    /// The trace clock's time.
    pub time: Nanos,
    /// What it says.
    pub body: EventBody,
}

type LineError = (&'static str, String);

fn err(field: &'static str, reason: impl Into<String>) -> LineError {
    (field, reason.into())
}

fn num<T: TryFrom<u64>>(field: &'static str, s: Option<&str>) -> Result<T, LineError> {
    let s = s.ok_or_else(|| err(field, "missing"))?;
    parse_u64(s.as_bytes())
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| err(field, format!("cannot parse {}", show(s.as_bytes()))))
}

/// A CPU column: a number below [`MAX_CPUS`](crate::traces::kernel_limits::MAX_CPUS).
fn cpu_num(s: Option<&str>) -> Result<u32, LineError> {
    check_cpu(num("cpu", s)?).map_err(|r| err("cpu", r))
}

fn parse_dev(s: Option<&str>) -> Result<Dev, LineError> {
    let s = s.ok_or_else(|| err("device", "missing"))?;
    let (a, b) = s.split_once(',').ok_or_else(|| {
        err(
            "device",
            format!("{} is not major,minor", show(s.as_bytes())),
        )
    })?;
    let major: u32 = num("device", Some(a))?;
    let minor: u32 = num("device", Some(b))?;
    if major >= 1 << 12 || minor >= 1 << 20 {
        return Err(err("device", format!("{s} is out of range")));
    }
    Ok(Dev { major, minor })
}

fn parse_rwbs(s: Option<&str>) -> Result<Rwbs, LineError> {
    let s = s.ok_or_else(|| err("rwbs", "missing"))?;
    Rwbs::parse(s).map_err(|r| err("rwbs", r))
}

/// Split off the next whitespace-separated token.
fn token(s: &str) -> (Option<&str>, &str) {
    let s = s.trim_start();
    if s.is_empty() {
        return (None, s);
    }
    match s.find(char::is_whitespace) {
        Some(i) => (Some(&s[..i]), &s[i..]),
        None => (Some(s), ""),
    }
}

/// `sector + sectors` at the start of `s`; the rest.
fn sector_range(s: &str) -> Result<(u64, u32, &str), LineError> {
    let (sec, rest) = token(s);
    let sector: u64 = num("sector", sec)?;
    let (plus, rest) = token(rest);
    if plus != Some("+") {
        return Err(err(
            "sectors",
            format!("expected `+` after the sector, found {plus:?}"),
        ));
    }
    let (n, rest) = token(rest);
    let sectors: u32 = num("sectors", n)?;
    Ok((sector, sectors, rest))
}

/// The text in the last `[...]` of `s`, which must be all that is left.
fn bracketed<'a>(field: &'static str, s: &'a str) -> Result<&'a str, LineError> {
    let t = s.trim();
    t.strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| {
            err(
                field,
                format!("expected [...], found {}", show(t.as_bytes())),
            )
        })
}

fn rq_event(action: RqAction, payload: &str) -> Result<RqEvent, LineError> {
    let (d, rest) = token(payload);
    let dev = parse_dev(d)?;
    let (r, rest) = token(rest);
    let rwbs = parse_rwbs(r)?;
    let with_bytes = matches!(action, RqAction::Insert | RqAction::Issue | RqAction::Merge);
    let (bytes, rest) = if with_bytes {
        let (b, rest) = token(rest);
        (Some(num::<u32>("bytes", b)?), rest)
    } else {
        (None, rest)
    };
    let rest = rest.trim_start();
    let rest = rest
        .strip_prefix('(')
        .and_then(|r| r.find(')').map(|i| &r[i + 1..]))
        .ok_or_else(|| {
            err(
                "cmd",
                format!("expected (...), found {}", show(rest.as_bytes())),
            )
        })?;
    let (sector, sectors, rest) = sector_range(rest)?;
    let rest = rest.trim_start();
    let (prio, rest) = if rest.starts_with('[') {
        (None, rest)
    } else {
        let (p, rest) = token(rest);
        let p = p.ok_or_else(|| err("prio", "missing"))?;
        (
            Some(TracedPrio::parse(p).map_err(|r| err("prio", r))?),
            rest,
        )
    };
    let (comm, error) = if with_bytes {
        (Some(bracketed("comm", rest)?.to_string()), None)
    } else {
        let e = bracketed("error", rest)?;
        let v: i32 = e
            .trim()
            .parse()
            .map_err(|_| err("error", format!("cannot parse {}", show(e.as_bytes()))))?;
        (None, Some(v))
    };
    Ok(RqEvent {
        action,
        dev,
        rwbs,
        bytes,
        sector,
        sectors,
        prio,
        comm,
        error,
    })
}

fn bio_event(action: BioAction, payload: &str) -> Result<BioEvent, LineError> {
    let (d, rest) = token(payload);
    let dev = parse_dev(d)?;
    let (r, rest) = token(rest);
    let rwbs = parse_rwbs(r)?;
    let (sector, sectors, rest) = sector_range(rest)?;
    let comm = bracketed("comm", rest)?.to_string();
    Ok(BioEvent {
        action,
        dev,
        rwbs,
        sector,
        sectors,
        comm,
    })
}

fn kyber_event(name: &str, payload: &str) -> Result<KyberEvent, LineError> {
    let (d, rest) = token(payload);
    let dev = parse_dev(d)?;
    let (domain, rest) = token(rest);
    let domain = domain.ok_or_else(|| err("domain", "missing"))?.to_string();
    let extra = |rest: &str| -> Result<(), LineError> {
        match token(rest).0 {
            Some(t) => Err(err(
                "",
                format!("unexpected {} at the end", show(t.as_bytes())),
            )),
            None => Ok(()),
        }
    };
    match name {
        "kyber_adjust" => {
            let (depth, rest) = token(rest);
            let depth = num("depth", depth)?;
            extra(rest)?;
            Ok(KyberEvent::Adjust { dev, domain, depth })
        }
        "kyber_throttled" => {
            extra(rest)?;
            Ok(KyberEvent::Throttled { dev, domain })
        }
        _ => {
            let (kind, rest) = token(rest);
            let kind = kind.ok_or_else(|| err("type", "missing"))?.to_string();
            let (p, rest) = token(rest);
            let percentile = num("percentile", p.and_then(|p| p.strip_prefix('p')))?;
            let (frac, rest) = token(rest);
            let frac = frac.ok_or_else(|| err("latency", "missing"))?;
            let (a, b) = frac
                .split_once('/')
                .ok_or_else(|| err("latency", format!("{frac:?} is not N/M")))?;
            let numerator = num("latency", Some(a))?;
            let denominator = num("latency", Some(b))?;
            let (s, rest) = token(rest);
            let samples = num("samples", s.and_then(|s| s.strip_prefix("samples=")))?;
            extra(rest)?;
            Ok(KyberEvent::Latency {
                dev,
                domain,
                kind,
                percentile,
                numerator,
                denominator,
                samples,
            })
        }
    }
}

/// A `blk` tracer line's payload (after the timestamp): `maj,min [ino,gen] action rwbs ...`.
fn blk_tracer_line(payload: &str) -> Result<EventBody, LineError> {
    let (d, rest) = token(payload);
    let dev = parse_dev(d)?;
    let (mut action, mut rest) = token(rest);
    let mut cgroup_field = None;
    if let Some(id) = action.filter(|a| a.contains(',')) {
        cgroup_field = Some(id);
        (action, rest) = token(rest);
    }
    let action = action.ok_or_else(|| err("action", "missing"))?;
    if action != "m" {
        return Ok(EventBody::Other(format!("blk {action}")));
    }
    let cgroup = cgroup_field
        .map(|f| {
            let ino = f.split(',').next().unwrap_or("");
            u64::from_str_radix(ino, 16).map_err(|_| {
                err(
                    "cgroup",
                    format!("{f:?} is not the tracer's hexadecimal ino,gen"),
                )
            })
        })
        .transpose()?;
    let (r, rest) = token(rest);
    parse_rwbs(r)?;
    Ok(EventBody::Message {
        dev,
        cgroup,
        text: rest.trim().to_string(),
    })
}

/// `CPU:N [LOST M EVENTS]`.
fn lost_line(text: &str) -> Option<Result<(u32, u64), LineError>> {
    let rest = text.strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let n = rest
        .trim()
        .strip_prefix("[LOST ")?
        .strip_suffix(" EVENTS]")?;
    Some((|| Ok((cpu_num(Some(cpu))?, num("lost", Some(n))?)))())
}

/// Parse one event line (not a comment, not blank).
pub fn parse_line(text: &str, line: usize) -> Result<FtraceEvent, LineError> {
    if let Some(lost) = lost_line(text.trim()) {
        let (cpu, events) = lost?;
        return Ok(FtraceEvent {
            line,
            task: String::new(),
            pid: 0,
            cpu,
            time: Nanos::ZERO,
            body: EventBody::Lost { cpu, events },
        });
    }
    // The CPU column, ` [NNN] `, ends the task; a command may hold spaces and dashes.
    let bytes = text.as_bytes();
    let at = (0..bytes.len())
        .find(|&i| {
            bytes[i] == b'['
                && i > 0
                && bytes[i - 1] == b' '
                && bytes[i + 1..]
                    .iter()
                    .position(|&b| b == b']')
                    .is_some_and(|e| {
                        e > 0 && bytes[i + 1..i + 1 + e].iter().all(u8::is_ascii_digit)
                    })
        })
        .ok_or_else(|| err("cpu", "no [CPU] column: not a tracefs event line"))?;
    let close = at + 1 + text[at + 1..].find(']').unwrap_or(0);
    let cpu = cpu_num(Some(&text[at + 1..close]))?;
    let left = text[..at].trim();
    // With record-tgid a `(tgid)` follows the task.
    let left = match left.rfind(" (") {
        Some(i) if left.ends_with(')') => left[..i].trim_end(),
        _ => left,
    };
    let (task, pid) = left.rsplit_once('-').ok_or_else(|| {
        err(
            "task",
            format!("{} is not command-pid", show(left.as_bytes())),
        )
    })?;
    let pid = check_pid(num("pid", Some(pid))?).map_err(|r| err("pid", r))?;
    let mut rest = &text[close + 1..];
    // The irq/preempt flags, unless noirq-info; then the timestamp and its colon.
    let mut time = None;
    for _ in 0..2 {
        let (t, r) = token(rest);
        let t = t.ok_or_else(|| err("time", "missing"))?;
        rest = r;
        if let Some(ts) = t.strip_suffix(':') {
            let ns = if ts.contains('.') {
                let digits = ts.len() - ts.find('.').unwrap_or(0) - 1;
                parse_fixed(ts.as_bytes(), 9).filter(|_| digits <= 9)
            } else {
                parse_u64(ts.as_bytes())
            };
            time = Some(ns.ok_or_else(|| {
                err(
                    "time",
                    format!("cannot parse {} as a time", show(ts.as_bytes())),
                )
            })?);
            break;
        }
    }
    let time = time.ok_or_else(|| err("time", "no `time:` after the CPU"))?;
    let payload_start = rest;
    let (name, after) = token(rest);
    let name = name.ok_or_else(|| err("event", "missing"))?;
    let body = match name.strip_suffix(':') {
        None => blk_tracer_line(payload_start)?,
        Some(name) => {
            let p = after;
            match name {
                "block_rq_insert" => EventBody::Rq(rq_event(RqAction::Insert, p)?),
                "block_rq_issue" => EventBody::Rq(rq_event(RqAction::Issue, p)?),
                "block_rq_merge" => EventBody::Rq(rq_event(RqAction::Merge, p)?),
                "block_rq_requeue" => EventBody::Rq(rq_event(RqAction::Requeue, p)?),
                "block_rq_complete" => EventBody::Rq(rq_event(RqAction::Complete, p)?),
                "block_rq_error" => EventBody::Rq(rq_event(RqAction::Error, p)?),
                "block_bio_queue" => EventBody::Bio(bio_event(BioAction::Queue, p)?),
                "block_bio_backmerge" => EventBody::Bio(bio_event(BioAction::BackMerge, p)?),
                "block_bio_frontmerge" => EventBody::Bio(bio_event(BioAction::FrontMerge, p)?),
                "block_getrq" => EventBody::Bio(bio_event(BioAction::GetRq, p)?),
                "block_split" => {
                    let (d, rest) = token(p);
                    let dev = parse_dev(d)?;
                    let (r, rest) = token(rest);
                    let rwbs = parse_rwbs(r)?;
                    let (s, rest) = token(rest);
                    let sector = num("sector", s)?;
                    let (slash, rest) = token(rest);
                    if slash != Some("/") {
                        return Err(err("sector", format!("expected `/`, found {slash:?}")));
                    }
                    let (n, rest) = token(rest);
                    let new_sector = num("sector", n)?;
                    bracketed("comm", rest)?;
                    EventBody::Split {
                        dev,
                        rwbs,
                        sector,
                        new_sector,
                    }
                }
                "kyber_latency" | "kyber_adjust" | "kyber_throttled" => {
                    EventBody::Kyber(kyber_event(name, p)?)
                }
                "tracing_mark_write" => EventBody::Marker(p.trim().to_string()),
                "" => return Err(err("event", "empty event name")),
                other => EventBody::Other(other.to_string()),
            }
        }
    };
    Ok(FtraceEvent {
        line,
        task: task.to_string(),
        pid,
        cpu,
        time: Nanos(time),
        body,
    })
}

/// tracefs text, event by event: each [`FtraceEvent`] until the end of the file or the first
/// error. An event earlier than the one before it on the same CPU is an error: each CPU's
/// ring buffer records its events in time order (`ring_buffer_lock_reserve` stamps them as
/// written), so such a file was reordered or edited. CPUs interleave: events of different
/// CPUs may come out of time order and are sorted back by the reader of the whole trace.
pub struct FtraceReader {
    lines: Lines,
    done: bool,
    /// Each CPU's latest event: its time and line.
    latest: std::collections::HashMap<u32, (Nanos, usize)>,
}

impl FtraceReader {
    /// Open a trace file; a name ending `.gz` is read through gzip.
    pub fn open(path: &Path) -> Result<FtraceReader, InputError> {
        Ok(FtraceReader::new(open_lines(path)?))
    }

    /// Read events from `lines`.
    pub fn new(lines: Lines) -> FtraceReader {
        FtraceReader {
            lines,
            done: false,
            latest: std::collections::HashMap::new(),
        }
    }
}

/// `path` as lines, through gzip when its name ends `.gz`.
pub fn open_lines(path: &Path) -> Result<Lines, InputError> {
    let name = path.display().to_string();
    if path.extension().is_some_and(|e| e == "gz") {
        let f = crate::input::open(path).map_err(|e| located(&name, 0, "", e.to_string()))?;
        let gz = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, f));
        let r: Box<dyn BufRead> = Box::new(BufReader::with_capacity(1 << 18, gz));
        Ok(Lines::new(r, &name))
    } else {
        Lines::open(path)
    }
}

impl ReadUntilError for FtraceReader {
    type Item = FtraceEvent;

    fn done(&mut self) -> &mut bool {
        &mut self.done
    }

    fn read_next(&mut self) -> Result<Option<FtraceEvent>, InputError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let text = std::str::from_utf8(line).map_err(|_| at.error("", "not UTF-8 text"))?;
            let t = text.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let n = at.line;
            let ev = parse_line(text, n).map_err(|(f, r)| located(&self.lines.file, n, f, r))?;
            if !matches!(ev.body, EventBody::Lost { .. }) {
                if let Some((t, line)) = self.latest.insert(ev.cpu, (ev.time, n)) {
                    if ev.time < t {
                        return Err(located(
                            &self.lines.file,
                            n,
                            "time",
                            format!(
                                "earlier than line {line}, the event before it on CPU {}: a \
                                 CPU's events are recorded in time order, so the file was \
                                 reordered or edited",
                                ev.cpu
                            ),
                        ));
                    }
                }
            }
            return Ok(Some(ev));
        }
    }
}

impl Iterator for FtraceReader {
    type Item = Result<FtraceEvent, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_until_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> FtraceEvent {
        parse_line(text, 1).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn fails(text: &str) -> LineError {
        parse_line(text, 1).expect_err(text)
    }

    #[test]
    fn an_insert_with_its_priority_and_command() {
        let e = one("             fio-13949   [000] ...1.   449.722742: block_rq_insert: 7,0 R 4096 () 3952 + 8 be,0,4 [fio]");
        assert_eq!((e.task.as_str(), e.pid, e.cpu), ("fio", 13949, 0));
        assert_eq!(e.time, Nanos(449_722_742_000));
        let EventBody::Rq(rq) = e.body else { panic!() };
        assert_eq!(rq.action, RqAction::Insert);
        assert_eq!(rq.dev, Dev { major: 7, minor: 0 });
        assert_eq!((rq.sector, rq.sectors, rq.bytes), (3952, 8, Some(4096)));
        assert_eq!(rq.rwbs.dir, Dir::Read);
        assert!(!rq.rwbs.sync && rq.rwbs.is_sync());
        assert_eq!(
            rq.prio.and_then(TracedPrio::io_prio),
            Some(IoPrio {
                class: IoClass::BestEffort,
                level: 4
            })
        );
        assert_eq!(rq.comm.as_deref(), Some("fio"));
    }

    #[test]
    fn a_flush_completion_has_no_position_and_a_kworker_task() {
        let e = one("     ksoftirqd/1-22      [001] ..s..   370.500283: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]");
        assert_eq!((e.task.as_str(), e.pid, e.cpu), ("ksoftirqd/1", 22, 1));
        let EventBody::Rq(rq) = e.body else { panic!() };
        assert_eq!(rq.rwbs.dir, Dir::Flush);
        assert!(rq.rwbs.preflush);
        assert_eq!((rq.sector, rq.sectors, rq.error), (u64::MAX, 0, Some(0)));
        assert_eq!(rq.prio.and_then(TracedPrio::io_prio), None);
        let e = one("    kworker/0:1H-58      [000] .....   370.500092: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]");
        let EventBody::Rq(rq) = e.body else { panic!() };
        assert_eq!(rq.comm.as_deref(), Some("kworker/0:1H"));
    }

    #[test]
    fn commands_with_spaces_and_dashes_and_old_kernels_without_priority() {
        let e = one(" Web Content-a-9-77 [001] d..1. 1.000001: block_rq_issue: 8,16 WSM 8192 () 100 + 16 [Web Content-a]");
        assert_eq!((e.task.as_str(), e.pid), ("Web Content-a-9", 77));
        let EventBody::Rq(rq) = e.body else { panic!() };
        assert_eq!(rq.prio, None);
        assert!(rq.rwbs.sync && rq.rwbs.meta);
        assert_eq!(rq.comm.as_deref(), Some("Web Content-a"));
        // noirq-info and a tgid column.
        let e = one("  <...>-5 (    5) [003] 2.5: block_getrq: 7,1 WS 8 + 8 [dd]");
        assert_eq!(
            (e.task.as_str(), e.pid, e.cpu, e.time),
            ("<...>", 5, 3, Nanos(2_500_000_000))
        );
        assert!(matches!(
            e.body,
            EventBody::Bio(BioEvent {
                action: BioAction::GetRq,
                ..
            })
        ));
    }

    #[test]
    fn bio_split_kyber_marker_lost_and_blk_tracer_lines() {
        let e = one("fio-1 [000] ..... 1.000000: block_bio_backmerge: 7,0 WS 131080 + 8 [fio]");
        assert!(matches!(
            e.body,
            EventBody::Bio(BioEvent {
                action: BioAction::BackMerge,
                sector: 131080,
                sectors: 8,
                ..
            })
        ));
        let e = one("fio-1 [000] ..... 1.000000: block_split: 7,0 W 100 / 108 [fio]");
        assert!(matches!(
            e.body,
            EventBody::Split {
                sector: 100,
                new_sector: 108,
                ..
            }
        ));
        let e = one("readlink-14062 [000] .Ns3. 450.748071: kyber_latency: 7,0 READ I/O p90 2/4 samples=600");
        assert_eq!(
            e.body,
            EventBody::Kyber(KyberEvent::Latency {
                dev: Dev { major: 7, minor: 0 },
                domain: "READ".into(),
                kind: "I/O".into(),
                percentile: 90,
                numerator: 2,
                denominator: 4,
                samples: 600
            })
        );
        let e = one("kworker-3 [001] ..... 2.000000: kyber_adjust: 7,0 WRITE 32");
        assert!(matches!(
            e.body,
            EventBody::Kyber(KyberEvent::Adjust { depth: 32, .. })
        ));
        let e = one("fio-3 [001] ..... 2.000000: kyber_throttled: 7,0 OTHER");
        assert!(matches!(
            e.body,
            EventBody::Kyber(KyberEvent::Throttled { .. })
        ));
        let e = one("elevator-9 [001] ..... 2.000000: tracing_mark_write: start mono_ns=5");
        assert_eq!(e.body, EventBody::Marker("start mono_ns=5".into()));
        let e = one("fio-12314   [000] d..1.   359.639502:   7,0   1,0  m   N bfq12314S allocated");
        assert_eq!(
            e.body,
            EventBody::Message {
                dev: Dev { major: 7, minor: 0 },
                cgroup: Some(1),
                text: "bfq12314S allocated".into()
            }
        );
        // With `blk_cgroup`: the logged queue's group, its cgroup id (kernfs ino) in hex.
        let e = one(
            "kworker/1:0-14391 [001] d..1. 55726.312141:   7,0   26d,0  m   N bfq14391S allocated",
        );
        assert!(
            matches!(
                e.body,
                EventBody::Message {
                    cgroup: Some(0x26d),
                    ..
                }
            ),
            "{e:?}"
        );
        let e = one("fio-1 [000] d..1. 359.6:   7,0    m   N bfq1S allocated");
        assert!(
            matches!(e.body, EventBody::Message { cgroup: None, .. }),
            "{e:?}"
        );
        let e = one("fio-1 [000] d..1. 359.6:   7,0    Q  WS 2048 + 8 [fio]");
        assert_eq!(e.body, EventBody::Other("blk Q".into()));
        let e = one("CPU:1 [LOST 123 EVENTS]");
        assert_eq!(
            e.body,
            EventBody::Lost {
                cpu: 1,
                events: 123
            }
        );
        let e = one("fio-1 [000] ..... 1.000000: block_plug: [fio]");
        assert_eq!(e.body, EventBody::Other("block_plug".into()));
    }

    #[test]
    fn bad_fields_are_named() {
        assert_eq!(fails("no cpu column here").0, "cpu");
        assert_eq!(
            fails("fio-x [000] ..... 1.0: block_getrq: 7,0 R 1 + 8 [f]").0,
            "pid"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0x: block_getrq: 7,0 R 1 + 8 [f]").0,
            "time"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0000000001: block_getrq: 7,0 R 1 + 8 [f]").0,
            "time"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_getrq: 7;0 R 1 + 8 [f]").0,
            "device"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_getrq: 7,0 Q 1 + 8 [f]").0,
            "rwbs"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_getrq: 7,0 RSS 1 + 8 [f]").0,
            "rwbs"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_getrq: 7,0 R x + 8 [f]").0,
            "sector"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_getrq: 7,0 R 1 - 8 [f]").0,
            "sectors"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_getrq: 7,0 R 1 + 8 f").0,
            "comm"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_rq_issue: 7,0 R x () 1 + 8 [f]").0,
            "bytes"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_rq_issue: 7,0 R 4096 1 + 8 [f]").0,
            "cmd"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_rq_issue: 7,0 R 4096 () 1 + 8 be,0,9 [f]").0,
            "prio"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_rq_issue: 7,0 R 4096 () 1 + 8 xx,0,1 [f]").0,
            "prio"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: block_rq_complete: 7,0 R () 1 + 8 be,0,1 [x]").0,
            "error"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: kyber_adjust: 7,0 READ deep").0,
            "depth"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: kyber_latency: 7,0 READ I/O 90 2/4 samples=1").0,
            "percentile"
        );
        assert_eq!(
            fails("fio-1 [000] ..... 1.0: kyber_latency: 7,0 READ I/O p90 2-4 samples=1").0,
            "latency"
        );
        assert_eq!(fails("fio-1 [000] ..... 1.0:").0, "event");
    }

    #[test]
    fn the_reader_skips_comments_and_stops_at_the_first_error_with_its_line() {
        let text = "# tracer: nop\n#\n\n fio-1 [000] ..... 1.000000: block_getrq: 7,0 R 8 + 8 [fio]\n fio-1 [000] ..... 1.000001: block_getrq: 7,0 R 8 + x [fio]\n fio-1 [000] ..... 1.000002: block_getrq: 7,0 R 8 + 8 [fio]\n";
        let r = FtraceReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "t.trace"));
        let all: Vec<_> = r.collect();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].as_ref().unwrap().line, 4);
        let e = all[1].as_ref().unwrap_err();
        assert_eq!((e.line(), e.field.as_str()), (Some(5), "sectors"));
        assert!(
            e.to_string().starts_with("t.trace:5: field `sectors`"),
            "{e}"
        );
    }

    #[test]
    fn rwbs_round_trips() {
        for s in [
            "R", "RS", "RA", "W", "WS", "WFS", "FWS", "FWFSM", "FF", "F", "D", "N", "RSM",
        ] {
            assert_eq!(Rwbs::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(Rwbs::parse("DE").unwrap().dir, Dir::Discard);
        assert!(Rwbs::parse("").is_err());
        assert!(Rwbs::parse("X").is_err());
    }
}
