//! DiskSim's ASCII trace format, and MQSim's variant of it.
//!
//! One request per line, five whitespace-separated fields:
//! `time devno blkno nsectors flags`: arrival time (milliseconds for DiskSim, nanoseconds for
//! MQSim), device number, first 512-byte block, length in blocks, flags (bit 0 set = read).
//! Arrival times must not decrease. Names in errors: `time`, `devno`, `blkno`, `nsectors`,
//! `flags`. [`AsciiTrace`] parses a whole file (scenarios' `trace` jobs); [`AsciiReader`]
//! streams one for `elevator replay`, with the same rules.

use std::path::Path;

use elevator_core::{Nanos, Op};
use serde::{Deserialize, Serialize};

use super::lines::field;
use super::lines::Lines;
use super::record::{RecordAt, RecordSource, TraceRecord};
use super::until_error::ReadUntilError;
use crate::input::{InputError, Position};

/// Which variant: the unit of the time column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AsciiFormat {
    /// DiskSim: times in milliseconds (decimals allowed).
    #[default]
    Disksim,
    /// MQSim: times in nanoseconds (integers).
    Mqsim,
}

/// One request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsciiRecord {
    /// Arrival time from the trace's zero.
    pub time: Nanos,
    /// Device number.
    pub devno: u32,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// A read (flags bit 0); otherwise a write.
    pub read: bool,
}

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsciiTrace {
    /// The file it came from.
    pub file: String,
    /// Requests in arrival order.
    pub records: Vec<AsciiRecord>,
}

impl AsciiTrace {
    /// Read and parse the trace at `path`, streaming it (lines of at most
    /// [`MAX_LINE`](super::lines::MAX_LINE) bytes); the records are kept.
    pub fn read(path: &Path, format: AsciiFormat) -> Result<AsciiTrace, InputError> {
        let reader = AsciiReader::new(Lines::open(path)?, format);
        let mut records = Vec::new();
        for r in reader {
            let r = r?;
            records.push(AsciiRecord {
                time: r.time,
                devno: r.device,
                sector: r.sector,
                sectors: r.sectors,
                read: r.op == Op::Read,
            });
        }
        if records.is_empty() {
            return Err(InputError::new(path, "the trace holds no request"));
        }
        Ok(AsciiTrace {
            file: path.display().to_string(),
            records,
        })
    }

    /// Parse trace text; `file` names it in errors.
    pub fn parse(text: &str, file: &str, format: AsciiFormat) -> Result<AsciiTrace, InputError> {
        let mut records: Vec<AsciiRecord> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let prev = records.last().map(|r| r.time);
            if let Some(r) = parse_line(line, file, i + 1, format, prev)? {
                records.push(r);
            }
        }
        if records.is_empty() {
            return Err(InputError::new(file, "the trace holds no request"));
        }
        Ok(AsciiTrace {
            file: file.to_string(),
            records,
        })
    }
}

/// One line: a record, `None` for a blank or `#` comment line. `prev` is the previous
/// record's time (times must not decrease).
fn parse_line(
    line: &str,
    file: &str,
    n: usize,
    format: AsciiFormat,
    prev: Option<Nanos>,
) -> Result<Option<AsciiRecord>, InputError> {
    let mut it = line.split_whitespace();
    let Some(t) = it.next() else {
        return Ok(None);
    };
    if t.starts_with('#') {
        return Ok(None);
    }
    let time = match format {
        AsciiFormat::Disksim => {
            let ms: f64 = field(file, n, "time", Some(t))?;
            if !(ms.is_finite() && (0.0..1.8e13).contains(&ms)) {
                // Said of 1e300 and inf too ("must be >= 0"): the bound is named.
                return Err(InputError::at_line(
                    file,
                    n,
                    "time",
                    format!(
                        "{} is not a time from 0 to 1.8e13 ms (2^64 ns)",
                        super::lines::show(t.as_bytes())
                    ),
                ));
            }
            Nanos::from_ms_f64(ms)
        }
        AsciiFormat::Mqsim => Nanos(field(file, n, "time", Some(t))?),
    };
    if prev.is_some_and(|p| p > time) {
        return Err(InputError::at_line(
            file,
            n,
            "time",
            "earlier than the previous request (arrival times must not decrease)",
        ));
    }
    let devno: u32 = field(file, n, "devno", it.next())?;
    let sector: u64 = field(file, n, "blkno", it.next())?;
    let sectors: u32 = field(file, n, "nsectors", it.next())?;
    if sectors == 0 {
        return Err(InputError::at_line(file, n, "nsectors", "must be positive"));
    }
    let flags: u32 = field(file, n, "flags", it.next())?;
    if let Some(extra) = it.next() {
        return Err(InputError::at_line(
            file,
            n,
            "",
            format!(
                "unexpected sixth field {}",
                super::lines::show(extra.as_bytes())
            ),
        ));
    }
    Ok(Some(AsciiRecord {
        time,
        devno,
        sector,
        sectors,
        read: flags & 1 == 1,
    }))
}

/// A DiskSim or MQSim trace read as a stream. The device number is the record's process and
/// device; reads are synchronous, writes not.
pub struct AsciiReader {
    lines: Lines,
    format: AsciiFormat,
    prev: Option<Nanos>,
    done: bool,
    /// Records earlier than the one before them are returned (not refused); the stream's
    /// [`open`](super::open) counts them and names the first.
    accept_unsorted: bool,
}

impl AsciiReader {
    /// Read records from `lines`.
    pub fn new(lines: Lines, format: AsciiFormat) -> AsciiReader {
        AsciiReader {
            lines,
            format,
            prev: None,
            done: false,
            accept_unsorted: false,
        }
    }

    /// Return records stamped earlier than the one before them instead of refusing them.
    pub fn accepting_unsorted(self) -> AsciiReader {
        AsciiReader {
            accept_unsorted: true,
            ..self
        }
    }
}

impl ReadUntilError for AsciiReader {
    type Item = TraceRecord;

    fn done(&mut self) -> &mut bool {
        &mut self.done
    }

    fn read_next(&mut self) -> Result<Option<TraceRecord>, InputError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let text = std::str::from_utf8(line).map_err(|_| at.error("", "not UTF-8 text"))?;
            let file = at.file;
            let prev = if self.accept_unsorted {
                None
            } else {
                self.prev
            };
            let Some(r) = parse_line(text, file, at.line, self.format, prev)? else {
                continue;
            };
            self.prev = Some(r.time);
            let op = if r.read { Op::Read } else { Op::Write };
            return Ok(Some(TraceRecord {
                time: r.time,
                process: r.devno,
                device: r.devno,
                op,
                sync: r.read,
                meta: false,
                sector: r.sector,
                sectors: r.sectors,
                service: None,
            }));
        }
    }
}

impl Iterator for AsciiReader {
    type Item = Result<TraceRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_until_error()
    }
}

impl RecordSource for AsciiReader {
    fn last_at(&self) -> Option<RecordAt> {
        Some(RecordAt {
            file: self.lines.file.clone(),
            at: Position::Line(self.lines.line),
            time_field: "time",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_time_units() {
        let d = AsciiTrace::parse(
            "0.5 0 100 8 1\n1.25 1 200 16 0\n",
            "d",
            AsciiFormat::Disksim,
        )
        .unwrap();
        assert_eq!(d.records[0].time, Nanos::from_us(500));
        assert!(d.records[0].read && !d.records[1].read);
        assert_eq!(d.records[1].devno, 1);
        let m = AsciiTrace::parse("938513000 4 264719034 16 0\n", "m", AsciiFormat::Mqsim).unwrap();
        assert_eq!(m.records[0].time, Nanos(938_513_000));
        assert_eq!(m.records[0].sector, 264_719_034);
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let e = |text: &str| AsciiTrace::parse(text, "t.trace", AsciiFormat::Disksim).unwrap_err();
        let err = e("1 0 100 8 1\n2 0 x 8 1\n");
        assert_eq!((err.line(), err.field.as_str()), (Some(2), "blkno"));
        assert_eq!(
            err.to_string(),
            "t.trace:2: field `blkno`: cannot parse \"x\""
        );
        assert_eq!(e("1 0 100 8\n").field, "flags");
        assert_eq!(e("1 0 100 0 1\n").field, "nsectors");
        assert_eq!(e("2 0 100 8 1\n1 0 100 8 1\n").field, "time");
        assert_eq!(e("1 0 100 8 1 9\n").line(), Some(1));
        assert_eq!(e("-1 0 100 8 1\n").field, "time");
        let err = AsciiTrace::parse("1.5 0 1 1 1\n", "m", AsciiFormat::Mqsim).unwrap_err();
        assert_eq!(err.field, "time");
    }

    #[test]
    fn the_shared_mqsim_traces_parse() {
        let Some(dir) = crate::traces::shared_data_dir() else {
            eprintln!("skipped: shared/data is absent");
            return;
        };
        // The README counts 24,782 websearch requests; the file holds 24,783 lines (the last has
        // no newline).
        for (name, n) in [("tpcc-small", 6999), ("wsrch-small", 24783)] {
            let path = dir.join(format!("traces/mqsim/{name}.trace"));
            if !path.exists() {
                eprintln!("skipped: {} is absent", path.display());
                continue;
            }
            let t = AsciiTrace::read(&path, AsciiFormat::Mqsim).unwrap();
            assert_eq!(t.records.len(), n, "{name}");
        }
    }
}
