//! The comma-separated block-trace formats (MSR Cambridge, SPC / UMass, Alibaba, Tencent CBS)
//! read by one streaming reader: each format says only how many fields a line has and how
//! those fields become a record; header lines, blank lines, field counts and numbers are
//! handled here once (the stop at the first error, as for every streaming reader, in
//! `until_error`).

use std::marker::PhantomData;

use elevator_core::{Nanos, Op};

use super::lines::{parse_u64, show, split_fields, trim, Here, Lines};
use super::record::{RecordAt, RecordSource, TraceRecord};
use super::until_error::ReadUntilError;
use crate::input::{InputError, Position};

/// The most fields a line may have that a format reads; later ones are counted, not kept.
const MAX_FIELDS: usize = 8;

/// One comma-separated trace format.
pub trait CsvFormat {
    /// How many fields a line has.
    const FIELDS: usize;
    /// Whether more than [`Self::FIELDS`] fields are allowed (and ignored).
    const EXTRA_FIELDS_OK: bool = false;
    /// The name of the time column, as errors name it.
    const TIME_FIELD: &'static str;
    /// The record one line's fields (spaces trimmed) describe, or `None` for a request of
    /// size 0, which the reader skips and counts ([`RecordSource::zero_length`]).
    fn record(f: &[&[u8]], at: &Here) -> Result<Option<TraceRecord>, InputError>;
}

/// Whether a first line is a header: no field of it starts with a digit (`Timestamp,Hostname,
/// DiskNumber,...`). A first line of data with one bad field (`NaN,web,0,Read,...`, or a first
/// field that is not a number) is a record, refused naming the field; skipping it as a header
/// dropped a request without a word.
fn is_header(fields: &[&[u8]]) -> bool {
    !fields
        .iter()
        .any(|f| f.first().is_some_and(|b| b.is_ascii_digit()))
}

/// A comma-separated trace read request by request until its end or its first error. A first
/// line none of whose fields starts with a digit is a header and skipped; blank lines are
/// skipped; records of size 0 are skipped and counted.
pub struct CsvReader<F> {
    lines: Lines,
    done: bool,
    /// Records of size 0 read so far (skipped: a request of no bytes).
    zero_length: u64,
    format: PhantomData<F>,
}

impl<F: CsvFormat> CsvReader<F> {
    /// Read records from `lines`.
    pub fn new(lines: Lines) -> CsvReader<F> {
        CsvReader {
            lines,
            done: false,
            zero_length: 0,
            format: PhantomData,
        }
    }
}

impl<F: CsvFormat> ReadUntilError for CsvReader<F> {
    type Item = TraceRecord;

    fn done(&mut self) -> &mut bool {
        &mut self.done
    }

    fn read_next(&mut self) -> Result<Option<TraceRecord>, InputError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let line = trim(line);
            if line.is_empty() {
                continue;
            }
            let mut f: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
            let n = split_fields(line, b',', &mut f);
            for x in f.iter_mut().take(n) {
                *x = trim(x);
            }
            if at.line == 1 && is_header(&f[..n.min(MAX_FIELDS)]) {
                continue;
            }
            let count_ok = n == F::FIELDS || (F::EXTRA_FIELDS_OK && n > F::FIELDS);
            if !count_ok {
                return Err(at.error("", format!("{n} fields, expected {}", F::FIELDS)));
            }
            match F::record(&f[..F::FIELDS], &at)? {
                Some(r) => return Ok(Some(r)),
                None => self.zero_length += 1,
            }
        }
    }
}

impl<F: CsvFormat> Iterator for CsvReader<F> {
    type Item = Result<TraceRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_until_error()
    }
}

impl<F: CsvFormat> RecordSource for CsvReader<F> {
    fn zero_length(&self) -> u64 {
        self.zero_length
    }

    fn last_at(&self) -> Option<RecordAt> {
        Some(RecordAt {
            file: self.lines.file.clone(),
            at: Position::Line(self.lines.line),
            time_field: F::TIME_FIELD,
        })
    }
}

/// Field `i` as an unsigned integer, or an error naming it.
pub(crate) fn number(
    f: &[&[u8]],
    i: usize,
    name: &'static str,
    at: &Here,
) -> Result<u64, InputError> {
    parse_u64(f[i]).ok_or_else(|| at.error(name, format!("cannot parse {}", show(f[i]))))
}

/// `v` as a `u32`, or "too large" naming field `name`.
pub(crate) fn narrow(v: u64, name: &'static str, at: &Here) -> Result<u32, InputError> {
    u32::try_from(v).map_err(|_| at.error(name, "too large"))
}

/// `v` times `scale`, or "too large" naming field `name` (time unit conversions).
pub(crate) fn scaled(v: u64, scale: u64, name: &'static str, at: &Here) -> Result<u64, InputError> {
    v.checked_mul(scale)
        .ok_or_else(|| at.error(name, "too large"))
}

/// The record of a request from a volume (process and device both `volume`), synchronous
/// when it is a read, as the CSV formats carry no flags.
pub(crate) fn volume_request(
    time: u64,
    volume: u32,
    op: Op,
    sector: u64,
    sectors: u32,
) -> TraceRecord {
    TraceRecord {
        time: Nanos(time),
        process: volume,
        device: volume,
        op,
        sync: op == Op::Read,
        meta: false,
        sector,
        sectors,
        service: None,
    }
}
