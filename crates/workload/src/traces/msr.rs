//! MSR Cambridge block traces (SNIA IOTTA, "Write off-loading", FAST'08): CSV lines
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! Timestamp is a Windows FILETIME (100 ns ticks since 1601-01-01), Type `Read` or `Write`,
//! Offset and Size bytes, ResponseTime in 100 ns ticks (kept as the record's measured service
//! time). The disk number is the record's process and device. A header line (first field not a
//! number) is skipped; lines of size 0 are skipped. Names in errors: `Timestamp`, `DiskNumber`,
//! `Type`, `Offset`, `Size`, `ResponseTime`.

use elevator_core::{Nanos, Op};

use super::lines::{parse_u64, show, split_fields, Here, Lines};
use super::stream::{RecordSource, TraceRecord};
use super::TraceError;

/// An MSR Cambridge CSV trace, request by request.
pub struct MsrReader {
    lines: Lines,
    done: bool,
}

impl MsrReader {
    /// Read records from `lines`.
    pub fn new(lines: Lines) -> MsrReader {
        MsrReader { lines, done: false }
    }

    fn read_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            if line.is_empty() {
                continue;
            }
            let mut f: [&[u8]; 7] = [&[]; 7];
            let n = split_fields(line, b',', &mut f);
            if n != 7 {
                if at.line == 1 && parse_u64(f[0]).is_none() {
                    continue;
                }
                return Err(at.error("", format!("{n} fields, expected 7")));
            }
            let Some(ticks) = parse_u64(f[0]) else {
                if at.line == 1 {
                    continue; // the header
                }
                return Err(at.error("Timestamp", format!("cannot parse {}", show(f[0]))));
            };
            let num = |i: usize, name: &'static str, at: &Here| {
                parse_u64(f[i])
                    .ok_or_else(|| at.error(name, format!("cannot parse {}", show(f[i]))))
            };
            let disk = num(2, "DiskNumber", &at)?;
            let op = match f[3] {
                b"Read" | b"read" => Op::Read,
                b"Write" | b"write" => Op::Write,
                other => {
                    return Err(at.error("Type", format!("{} is not Read or Write", show(other))))
                }
            };
            let offset = num(4, "Offset", &at)?;
            let size = num(5, "Size", &at)?;
            let response = num(6, "ResponseTime", &at)?;
            if size == 0 {
                continue;
            }
            let time = ticks
                .checked_mul(100)
                .ok_or_else(|| at.error("Timestamp", "beyond year 2185"))?;
            let disk = u32::try_from(disk).map_err(|_| at.error("DiskNumber", "too large"))?;
            let sectors =
                u32::try_from(size.div_ceil(512)).map_err(|_| at.error("Size", "too large"))?;
            return Ok(Some(TraceRecord {
                time: Nanos(time),
                process: disk,
                device: disk,
                op,
                sync: op == Op::Read,
                meta: false,
                sector: offset / 512,
                sectors,
                service: Some(Nanos(response.saturating_mul(100))),
            }));
        }
    }
}

impl Iterator for MsrReader {
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

impl RecordSource for MsrReader {}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceRecord>, TraceError> {
        MsrReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "web_0.csv")).collect()
    }

    #[test]
    fn parses_filetime_bytes_and_response_time() {
        let r = read("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n128166372003061629,web,0,Read,3813654528,4096,1264\n128166372016382155,web,1,Write,1024,512,0\n128166372016382156,web,1,Write,1024,0,0\n").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].time, Nanos(12_816_637_200_306_162_900));
        assert_eq!(
            (r[0].op, r[0].sector, r[0].sectors),
            (Op::Read, 7_448_544, 8)
        );
        assert_eq!(r[0].service, Some(Nanos(126_400)));
        assert_eq!((r[1].process, r[1].op, r[1].sync), (1, Op::Write, false));
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = |t: &str| read(t).unwrap_err();
        let x = e("1,web,0,Read,0,512,1\n2,web,0,Erase,0,512,1\n");
        assert_eq!((x.line, x.field), (2, "Type"));
        assert_eq!(
            x.to_string(),
            "web_0.csv:2: field `Type`: \"Erase\" is not Read or Write"
        );
        assert_eq!(e("1,web,0,Read,0,512\n").reason, "6 fields, expected 7");
        assert_eq!(e("1,web,0,Read,-1,512,1\n").field, "Offset");
        assert_eq!(
            e("1,web,0,Read,0,512,1\nx,web,0,Read,0,512,1\n").field,
            "Timestamp"
        );
        assert_eq!(
            e("999999999999999999,web,0,Read,0,512,1\n").field,
            "Timestamp"
        );
        assert_eq!(e("1,web,0,Read,0,99999999999999,1\n").field, "Size");
    }
}
