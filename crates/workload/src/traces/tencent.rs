//! Tencent Cloud Block Storage traces (2018, "OSCA: An Online-Model Based Cache Allocation
//! Scheme in Cloud Block Storage Systems", ATC'20): CSV lines
//! `Timestamp,Offset,Size,IOType,VolumeID`.
//!
//! Timestamp whole seconds since the Unix epoch, Offset and Size 512-byte sectors, IOType 0
//! (read) or 1 (write). The volume is the record's process and device. Lines of size 0 are
//! skipped. Names in errors: `Timestamp`, `Offset`, `Size`, `IOType`, `VolumeID`.

use elevator_core::{Nanos, Op};

use super::lines::{parse_u64, show, split_fields, Here, Lines};
use super::stream::{RecordSource, TraceRecord};
use super::TraceError;

/// A Tencent CBS trace, request by request.
pub struct TencentReader {
    lines: Lines,
    done: bool,
}

impl TencentReader {
    /// Read records from `lines`.
    pub fn new(lines: Lines) -> TencentReader {
        TencentReader { lines, done: false }
    }

    fn read_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            if line.is_empty() {
                continue;
            }
            let mut f: [&[u8]; 5] = [&[]; 5];
            let n = split_fields(line, b',', &mut f);
            if at.line == 1 && parse_u64(f[0]).is_none() {
                continue; // a header
            }
            if n != 5 {
                return Err(at.error("", format!("{n} fields, expected 5")));
            }
            let num = |i: usize, name: &'static str, at: &Here| {
                parse_u64(f[i])
                    .ok_or_else(|| at.error(name, format!("cannot parse {}", show(f[i]))))
            };
            let secs = num(0, "Timestamp", &at)?;
            let offset = num(1, "Offset", &at)?;
            let size = num(2, "Size", &at)?;
            let op = match f[3] {
                b"0" => Op::Read,
                b"1" => Op::Write,
                o => return Err(at.error("IOType", format!("{} is not 0 or 1", show(o)))),
            };
            let vol = num(4, "VolumeID", &at)?;
            if size == 0 {
                continue;
            }
            let vol = u32::try_from(vol).map_err(|_| at.error("VolumeID", "too large"))?;
            let sectors = u32::try_from(size).map_err(|_| at.error("Size", "too large"))?;
            let time = secs
                .checked_mul(1_000_000_000)
                .ok_or_else(|| at.error("Timestamp", "too large"))?;
            return Ok(Some(TraceRecord {
                time: Nanos(time),
                process: vol,
                device: vol,
                op,
                sync: op == Op::Read,
                meta: false,
                sector: offset,
                sectors,
                service: None,
            }));
        }
    }
}

impl Iterator for TencentReader {
    type Item = Result<TraceRecord, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.read_record().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

impl RecordSource for TencentReader {}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceRecord>, TraceError> {
        TencentReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "cbs.csv")).collect()
    }

    #[test]
    fn parses_seconds_sectors_and_iotype() {
        let r = read("1538323200,12551232,8,1,1063\n1538323201,100,16,0,7\n").unwrap();
        assert_eq!(
            (r[0].process, r[0].op, r[0].sector, r[0].sectors),
            (1063, Op::Write, 12_551_232, 8)
        );
        assert_eq!(
            (r[1].op, r[1].time.as_ns() - r[0].time.as_ns()),
            (Op::Read, 1_000_000_000)
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = |t: &str| read(t).unwrap_err();
        assert_eq!(e("1,0,8,1,1\n1,0,8,2,1\n").field, "IOType");
        assert_eq!(e("1,0,8,1,1\n1,0,8,1,99999999999\n").field, "VolumeID");
        assert_eq!(e("99999999999999,0,8,1,1\n").field, "Timestamp");
        assert_eq!(e("1,0,8,1\n").reason, "4 fields, expected 5");
    }
}
