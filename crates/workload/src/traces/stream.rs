//! The streaming side of the trace readers: format detection, and [`open`], which turns files
//! into a time-ordered stream of requests.
//!
//! Every reader yields [`TraceRecord`]s (module [`record`](super::record), which the readers
//! share and this module alone dispatches to them). [`open`] merges several files by time (a k-way merge holding one record per file) and
//! rebases the result so the first request is at 0. Memory is bounded by the number of files
//! plus, for blktrace's device view, the requests in flight on the traced device.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use elevator_core::Nanos;

use super::blktrace::{BlkRequests, BlkView, EventReader};
use super::by_time::ByTime;
use super::duplicates::Duplicates;
use super::lines::head;
use super::record::{RecordAt, RecordSource, TraceRecord};
use crate::input::{InputError, Position};

/// The formats [`open`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// blktrace binary (`<dev>.blktrace.<cpu>`, versions 7 and 8, either byte order).
    Blktrace,
    /// blkparse's default text output.
    Blkparse,
    /// fio iolog, version 2 or 3.
    FioIolog,
    /// MSR Cambridge CSV (SNIA IOTTA).
    Msr,
    /// SPC / UMass (`ASU,LBA,Size,Opcode,Timestamp`).
    Spc,
    /// Alibaba block traces 2020.
    Alibaba,
    /// Tencent CBS 2018.
    Tencent,
    /// DiskSim ASCII (times in ms).
    Disksim,
    /// MQSim (DiskSim columns, times in ns).
    Mqsim,
}

impl TraceFormat {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [TraceFormat; 9] = [
        TraceFormat::Blktrace,
        TraceFormat::Blkparse,
        TraceFormat::FioIolog,
        TraceFormat::Msr,
        TraceFormat::Spc,
        TraceFormat::Alibaba,
        TraceFormat::Tencent,
        TraceFormat::Disksim,
        TraceFormat::Mqsim,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Blktrace => "blktrace",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::FioIolog => "fio-iolog",
            TraceFormat::Msr => "msr",
            TraceFormat::Spc => "spc",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Disksim => "disksim",
            TraceFormat::Mqsim => "mqsim",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = TraceFormat::ALL.iter().map(|f| f.name()).collect();
                format!("unknown trace format {s:?} (one of {})", names.join(", "))
            })
    }
}

/// How to open traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// The format; detected from the first file's first bytes when `None`.
    pub format: Option<TraceFormat>,
    /// For blktrace and blkparse: replay the application's view (Q) or the device's (D).
    pub view: BlkView,
    /// Records stamped earlier than one before them are passed on (counted, the first named:
    /// [`RecordSource::out_of_order`], [`RecordSource::first_out_of_order`]) instead of
    /// refused. Default false: such a record is refused naming its file, line (or byte) and
    /// time field, since replaying it means changing its time.
    pub accept_unsorted: bool,
}

/// Tell the format of a trace from its first bytes (up to 64 KiB): blktrace's magic, fio's
/// header, blkparse's `maj,min cpu seq time pid action` prefix, then by the shape of the first
/// data line (comma-separated fields and their types; DiskSim's five numbers, MQSim's when the
/// time column is a whole number above 10^6, i.e. nanoseconds).
pub fn detect(head: &[u8]) -> Option<TraceFormat> {
    judge(head).ok()
}

/// Why [`detect`] told no format from `head`, for the error: integer times from near 0 in
/// DiskSim's five columns (DiskSim in ms or MQSim in ns) are named as such.
pub fn undetected(head: &[u8]) -> &'static str {
    if head.iter().all(u8::is_ascii_whitespace) {
        return "the trace is empty";
    }
    // The block tracepoints as tracefs prints them (`elevator kernel-record`'s trace.txt):
    // each was told only "cannot tell the trace format".
    let text = String::from_utf8_lossy(head);
    if [
        "block_rq_",
        "block_bio_queue:",
        "tracing_mark_write:",
        "# tracer:",
    ]
    .iter()
    .any(|m| text.contains(m))
    {
        return "a tracefs trace of the block tracepoints (as `elevator kernel-record` \
                writes): `elevator kernel-diff DIR` compares a recording's directory with the \
                kernel's decisions; replay reads blktrace, blkparse, fio iolog, MSR, SPC, \
                Alibaba, Tencent, DiskSim and MQSim traces";
    }
    match judge(head) {
        Err(Undetected::IntegerTimesFromZero) => {
            "integer times from near 0 in five columns: DiskSim's milliseconds or MQSim's \
             nanoseconds, a factor of 10^6 apart; give --format disksim or --format mqsim"
        }
        _ => "cannot tell the trace format from the first bytes; give --format",
    }
}

/// Why [`judge`] told no format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Undetected {
    /// Nothing in the head names or shapes a format.
    Unknown,
    /// DiskSim's five columns with integer times from near 0: DiskSim's milliseconds or
    /// MQSim's nanoseconds.
    IntegerTimesFromZero,
}

/// [`detect`]'s judgement, with why it told no format.
fn judge(head: &[u8]) -> Result<TraceFormat, Undetected> {
    let head = head.strip_prefix(super::lines::BOM).unwrap_or(head);
    if head.len() >= 4 {
        let m = [head[0], head[1], head[2], head[3]];
        if u32::from_le_bytes(m) >> 8 == 0x65_6174 || u32::from_be_bytes(m) >> 8 == 0x65_6174 {
            return Ok(TraceFormat::Blktrace);
        }
    }
    let text = std::str::from_utf8(head)
        .ok()
        .or_else(|| {
            // A head cut inside a multi-byte character: use what decodes.
            let e = std::str::from_utf8(head).unwrap_err().valid_up_to();
            std::str::from_utf8(&head[..e]).ok()
        })
        .ok_or(Undetected::Unknown)?;
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let first = lines.next().ok_or(Undetected::Unknown)?;
    if first.starts_with("fio version 2 iolog") || first.starts_with("fio version 3 iolog") {
        return Ok(TraceFormat::FioIolog);
    }
    if looks_like_blkparse(first) {
        return Ok(TraceFormat::Blkparse);
    }
    // A CSV header line names the format; otherwise judge the first data line.
    let lower = first.to_ascii_lowercase();
    if lower.starts_with("timestamp,hostname,disknumber") {
        return Ok(TraceFormat::Msr);
    }
    if lower.starts_with("asu,lba") {
        return Ok(TraceFormat::Spc);
    }
    if lower.starts_with("device_id,opcode") {
        return Ok(TraceFormat::Alibaba);
    }
    if lower.starts_with("timestamp,offset,size,iotype") {
        return Ok(TraceFormat::Tencent);
    }
    let is_int = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let is_num =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') && s != ".";
    let c: Vec<&str> = first.split(',').map(str::trim).collect();
    match c.len() {
        7 if is_int(c[0])
            && (c[3].eq_ignore_ascii_case("read") || c[3].eq_ignore_ascii_case("write")) =>
        {
            return Ok(TraceFormat::Msr)
        }
        5 if is_int(c[0]) && matches!(c[1], "R" | "W" | "r" | "w") => {
            return Ok(TraceFormat::Alibaba)
        }
        5 if is_int(c[0]) && matches!(c[3], "R" | "W" | "r" | "w") && is_num(c[4]) => {
            return Ok(TraceFormat::Spc)
        }
        5 if c.iter().all(|f| is_int(f)) && matches!(c[3], "0" | "1") => {
            return Ok(TraceFormat::Tencent)
        }
        _ => {}
    }
    let w: Vec<&str> = first.split_whitespace().collect();
    if w.len() == 5 && is_num(w[0]) && w[1..].iter().all(|f| is_int(f)) {
        // DiskSim's times are milliseconds with a fraction, MQSim's whole nanoseconds: a
        // decimal point, here or in a later line of the head, is DiskSim; a first time past
        // 10^6 whole units is MQSim (a published MQSim trace starts hundreds of ms in).
        // Integer times from near 0 could be either, a factor of 10^6 apart: an MQSim trace
        // starting at 0 was replayed as DiskSim milliseconds, without a word.
        if !is_int(w[0]) {
            return Ok(TraceFormat::Disksim);
        }
        if w[0].parse::<u64>().is_ok_and(|t| t > 1_000_000) {
            return Ok(TraceFormat::Mqsim);
        }
        let later_fraction =
            lines.any(|l| l.split_whitespace().next().is_some_and(|t| t.contains('.')));
        return if later_fraction {
            Ok(TraceFormat::Disksim)
        } else {
            Err(Undetected::IntegerTimesFromZero)
        };
    }
    Err(Undetected::Unknown)
}

/// `8,0    1        1     0.000000000  1234  Q   R 100 + 8 [dd]`.
fn looks_like_blkparse(line: &str) -> bool {
    let w: Vec<&str> = line.split_whitespace().take(6).collect();
    if w.len() < 6 {
        return false;
    }
    let dev = w[0].split_once(',').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && (a.to_owned() + b).bytes().all(|c| c.is_ascii_digit())
    });
    let int = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let time = w[3].split_once('.').is_some_and(|(s, n)| int(s) && int(n));
    dev && int(w[1]) && int(w[2]) && time && int(w[4])
}

/// The per-CPU siblings of a blktrace file: for `dir/sda.blktrace.0`, every
/// `dir/sda.blktrace.<n>` (sorted by CPU); any other name is returned alone.
pub fn blktrace_siblings(path: &Path) -> Vec<PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(i) = name.rfind(".blktrace.") else {
        return vec![path.to_path_buf()];
    };
    let prefix = &name[..i + ".blktrace.".len()];
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let cpu: u32 = n.strip_prefix(prefix)?.parse().ok()?;
            Some((cpu, dir.join(n)))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        return vec![path.to_path_buf()];
    }
    found.into_iter().map(|(_, p)| p).collect()
}

/// Open `paths` as one time-ordered stream of requests rebased to start at 0. blktrace files
/// bring their per-CPU siblings along (events merged before requests are formed, so a
/// dispatch and its completion on different CPUs still pair up).
pub fn open(paths: &[PathBuf], opts: OpenOptions) -> Result<Box<dyn RecordSource>, InputError> {
    let Some(first) = paths.first() else {
        return Err(InputError::new("<none>", "no trace file given"));
    };
    let format = match opts.format {
        Some(f) => f,
        None => {
            let head = head(first, 64 * 1024)?;
            detect(&head).ok_or_else(|| InputError::new(first, undetected(&head)))?
        }
    };
    let source: Box<dyn RecordSource> = match format {
        TraceFormat::Blktrace => {
            let mut files: Vec<PathBuf> = Vec::new();
            for p in paths {
                for s in blktrace_siblings(p) {
                    if !files.contains(&s) {
                        files.push(s);
                    }
                }
            }
            let events = EventReader::open_merged(&files)?;
            blk_requests(events, opts)
        }
        TraceFormat::Blkparse if paths.len() == 1 => {
            blk_requests(super::blkparse::BlkparseReader::open(first)?, opts)
        }
        TraceFormat::Blkparse => {
            let mut parts = Vec::new();
            for p in paths {
                parts.push(super::blkparse::BlkparseReader::open(p)?);
            }
            let merged = super::blktrace::merge_events(parts)?;
            blk_requests(merged, opts)
        }
        _ => {
            let mut parts: Vec<Box<dyn RecordSource>> = Vec::new();
            for p in paths {
                parts.push(open_one(p, format)?);
            }
            if parts.len() == 1 {
                parts.pop().expect("one part")
            } else {
                Box::new(Merge::new(parts, |r| r.time, |p| p.last_position())?)
            }
        }
    };
    Ok(Box::new(Rebase {
        inner: source,
        file: first.display().to_string(),
        t0: None,
        latest: Nanos::ZERO,
        out_of_order: 0,
        first_out_of_order: None,
        accept_unsorted: opts.accept_unsorted,
        duplicates: Default::default(),
        read: 0,
        failed: false,
    }))
}

/// The requests of blktrace events, as `opts` asks.
fn blk_requests<S: super::blktrace::EventSource + 'static>(
    events: S,
    opts: OpenOptions,
) -> Box<dyn RecordSource> {
    let r = BlkRequests::new(events, opts.view);
    Box::new(if opts.accept_unsorted {
        r.accepting_unsorted()
    } else {
        r
    })
}

/// One file of a line-based format.
fn open_one(path: &Path, format: TraceFormat) -> Result<Box<dyn RecordSource>, InputError> {
    use super::disksim_ascii::{AsciiFormat, AsciiReader};
    use super::lines::Lines;
    let lines = Lines::open(path)?;
    // The reader's own order check (a scenario's trace job relies on it) is left to
    // [`Rebase`] here, whose refusal says how to replay the trace anyway.
    let ascii = |lines, format| AsciiReader::new(lines, format).accepting_unsorted();
    Ok(match format {
        TraceFormat::FioIolog => Box::new(super::fio_iolog::FioIologReader::new(lines)?),
        TraceFormat::Msr => Box::new(super::msr::MsrReader::new(lines)),
        TraceFormat::Spc => Box::new(super::spc::SpcReader::new(lines)),
        TraceFormat::Alibaba => Box::new(super::alibaba::AlibabaReader::new(lines)),
        TraceFormat::Tencent => Box::new(super::tencent::TencentReader::new(lines)),
        TraceFormat::Disksim => Box::new(ascii(lines, AsciiFormat::Disksim)),
        TraceFormat::Mqsim => Box::new(ascii(lines, AsciiFormat::Mqsim)),
        TraceFormat::Blktrace | TraceFormat::Blkparse => unreachable!("handled by open"),
    })
}

/// Shift times so the first record is at 0, and refuse a record stamped earlier than one
/// before it (naming its file, line and time field), or, when unsorted traces are accepted,
/// count such records ([`RecordSource::out_of_order`]) and name the first: one stamped
/// before the first record is put at 0, any other is issued at once, behind the later ones.
/// Exact duplicates are counted and the first named ([`Duplicates`]), whatever the format.
struct Rebase {
    inner: Box<dyn RecordSource>,
    /// The (first) file, for errors.
    file: String,
    t0: Option<Nanos>,
    /// The latest stamp so far, as the trace gives it.
    latest: Nanos,
    out_of_order: u64,
    first_out_of_order: Option<RecordAt>,
    accept_unsorted: bool,
    duplicates: Duplicates,
    /// Records read so far.
    read: u64,
    /// A record was refused: the stream has ended (as every reader's does at its first
    /// error).
    failed: bool,
}

/// The longest a trace may span from its first record: a year. Times near 2^64 ns would
/// saturate the replay's clock and give 1 ns latencies; no block trace spans this long.
pub const MAX_SPAN: Nanos = Nanos::from_secs(366 * 86_400);

impl Iterator for Rebase {
    type Item = Result<TraceRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.inner.next()?;
        let r = self.check(r);
        self.failed = r.is_err();
        Some(r)
    }
}

impl Rebase {
    /// Rebase `r`, or refuse it.
    fn check(&mut self, r: Result<TraceRecord, InputError>) -> Result<TraceRecord, InputError> {
        let mut r = r?;
        let t0 = *self.t0.get_or_insert(r.time);
        self.read += 1;
        if r.time < self.latest {
            if !self.accept_unsorted {
                let msg = super::blktrace::unsorted_message(r.time, self.latest);
                let msg = format!("record {}: {msg}", self.read);
                return Err(match self.inner.last_at() {
                    Some(at) => at.error(msg),
                    None => InputError::new(&self.file, msg).in_field("time"),
                });
            }
            self.out_of_order += 1;
            if self.first_out_of_order.is_none() {
                self.first_out_of_order = Some(read_at(&*self.inner, &self.file));
            }
        }
        self.latest = self.latest.max(r.time);
        let (inner, file) = (&*self.inner, &self.file);
        self.duplicates.note(&r, || read_at(inner, file));
        r.time = r.time.saturating_sub(t0);
        if r.time > MAX_SPAN {
            return Err(InputError::new(
                &self.file,
                format!(
                    "record {} is stamped {} s after the first record, more than a year: not a \
                     block trace's span (a time near 2^64 ns would saturate the replay's clock)",
                    self.read,
                    r.time.as_ns() / 1_000_000_000
                ),
            )
            .in_field("time"));
        }
        Ok(r)
    }
}

/// Where `inner` read its last record, or `file` alone (line 0) if it cannot say.
fn read_at(inner: &dyn RecordSource, file: &str) -> RecordAt {
    inner.last_at().unwrap_or(RecordAt {
        file: file.to_string(),
        at: Position::Line(0),
        time_field: "time",
    })
}

impl RecordSource for Rebase {
    fn process_name(&self, pid: u32) -> Option<String> {
        self.inner.process_name(pid)
    }

    fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    fn zero_length(&self) -> u64 {
        self.inner.zero_length()
    }

    fn first_out_of_order(&self) -> Option<RecordAt> {
        self.first_out_of_order.clone()
    }

    fn duplicates(&self) -> u64 {
        self.duplicates.count()
    }

    fn first_duplicate(&self) -> Option<RecordAt> {
        self.duplicates.first()
    }

    fn last_at(&self) -> Option<RecordAt> {
        self.inner.last_at()
    }
}

/// A k-way merge of record streams by time (ties: the earlier file first).
pub type Merge = ByTime<Box<dyn RecordSource>, TraceRecord>;

impl RecordSource for Merge {
    fn process_name(&self, pid: u32) -> Option<String> {
        ByTime::process_name(self, pid, |p, pid| p.process_name(pid))
    }

    fn last_at(&self) -> Option<RecordAt> {
        ByTime::last_at(self, |p| p.last_at())
    }

    fn zero_length(&self) -> u64 {
        self.parts().iter().map(|p| p.zero_length()).sum()
    }

    fn last_position(&self) -> Option<Position> {
        ByTime::last_position(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_from_its_first_line() {
        let d = |s: &[u8]| detect(s);
        assert_eq!(
            d(&[0x07, 0x74, 0x61, 0x65, 0, 0]),
            Some(TraceFormat::Blktrace)
        );
        assert_eq!(d(&[0x65, 0x61, 0x74, 0x08]), Some(TraceFormat::Blktrace));
        assert_eq!(
            d(b"  8,0    1        1     0.000000000  4162  Q   R 2048 + 8 [dd]\n"),
            Some(TraceFormat::Blkparse)
        );
        assert_eq!(d(b"fio version 2 iolog\n"), Some(TraceFormat::FioIolog));
        assert_eq!(d(b"fio version 3 iolog\n"), Some(TraceFormat::FioIolog));
        assert_eq!(
            d(b"128166372003061629,web,0,Read,3813654528,4096,1264\n"),
            Some(TraceFormat::Msr)
        );
        assert_eq!(d(b"0,20941264,8192,W,0.551706\n"), Some(TraceFormat::Spc));
        assert_eq!(
            d(b"419,W,8637440,4096,1577808000000003\n"),
            Some(TraceFormat::Alibaba)
        );
        assert_eq!(
            d(b"1538323200,12551232,8,1,1063\n"),
            Some(TraceFormat::Tencent)
        );
        assert_eq!(d(b"0.5 0 100 8 1\n"), Some(TraceFormat::Disksim));
        assert_eq!(d(b"938513000 4 264719034 16 0\n"), Some(TraceFormat::Mqsim));
        assert_eq!(d(b"0 0 100 8 1\n2 0 108 8 1\n"), None);
        assert_eq!(
            d(b"0 0 100 8 1\n2.5 0 108 8 1\n"),
            Some(TraceFormat::Disksim)
        );
        assert_eq!(d(b""), None);
        assert_eq!(d(&[0u8; 4096]), None);
        assert_eq!(d(b"hello world\n"), None);
    }

    #[test]
    fn format_names_round_trip() {
        for f in TraceFormat::ALL {
            assert_eq!(f.name().parse::<TraceFormat>(), Ok(f));
        }
        assert!("csv"
            .parse::<TraceFormat>()
            .unwrap_err()
            .contains("fio-iolog"));
    }
}
