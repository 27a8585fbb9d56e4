//! SPC / UMass trace repository traces (Financial1/2, WebSearch1-3): CSV lines
//! `ASU,LBA,Size,Opcode,Timestamp[,...]`.
//!
//! ASU is the application storage unit (the record's process and device), LBA a 512-byte block
//! number, Size bytes, Opcode `r`/`R` or `w`/`W`, Timestamp seconds (with decimals) since the
//! trace began; fields after the fifth are ignored. Lines of size 0 are skipped. Names in
//! errors: `ASU`, `LBA`, `Size`, `Opcode`, `Timestamp`.

use elevator_core::{Nanos, Op};

use super::lines::{parse_fixed, parse_u64, show, split_fields, trim, Here, Lines};
use super::stream::{RecordSource, TraceRecord};
use super::TraceError;

/// An SPC trace, request by request.
pub struct SpcReader {
    lines: Lines,
    done: bool,
}

impl SpcReader {
    /// Read records from `lines`.
    pub fn new(lines: Lines) -> SpcReader {
        SpcReader { lines, done: false }
    }

    fn read_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let line = trim(line);
            if line.is_empty() {
                continue;
            }
            let mut f: [&[u8]; 5] = [&[]; 5];
            let n = split_fields(line, b',', &mut f);
            for x in f.iter_mut() {
                *x = trim(x);
            }
            if at.line == 1 && parse_u64(f[0]).is_none() {
                continue; // a header
            }
            if n < 5 {
                return Err(at.error("", format!("{n} fields, expected 5")));
            }
            let num = |i: usize, name: &'static str, at: &Here| {
                parse_u64(f[i])
                    .ok_or_else(|| at.error(name, format!("cannot parse {}", show(f[i]))))
            };
            let asu = num(0, "ASU", &at)?;
            let lba = num(1, "LBA", &at)?;
            let size = num(2, "Size", &at)?;
            let op = match f[3] {
                b"r" | b"R" => Op::Read,
                b"w" | b"W" => Op::Write,
                o => return Err(at.error("Opcode", format!("{} is not r or w", show(o)))),
            };
            let time = parse_fixed(f[4], 9).ok_or_else(|| {
                at.error(
                    "Timestamp",
                    format!("cannot parse {} as seconds", show(f[4])),
                )
            })?;
            if size == 0 {
                continue;
            }
            let asu = u32::try_from(asu).map_err(|_| at.error("ASU", "too large"))?;
            let sectors =
                u32::try_from(size.div_ceil(512)).map_err(|_| at.error("Size", "too large"))?;
            return Ok(Some(TraceRecord {
                time: Nanos(time),
                process: asu,
                device: asu,
                op,
                sync: op == Op::Read,
                meta: false,
                sector: lba,
                sectors,
                service: None,
            }));
        }
    }
}

impl Iterator for SpcReader {
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

impl RecordSource for SpcReader {}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceRecord>, TraceError> {
        SpcReader::new(Lines::from_bytes(
            text.as_bytes().to_vec(),
            "Financial1.spc",
        ))
        .collect()
    }

    #[test]
    fn parses_asu_blocks_bytes_and_seconds() {
        let r = read("0,303567,3584,w,0.000000\n1,55596,3072,r,0.078643\n").unwrap();
        assert_eq!(
            (r[0].process, r[0].op, r[0].sector, r[0].sectors),
            (0, Op::Write, 303_567, 7)
        );
        assert_eq!((r[1].op, r[1].time), (Op::Read, Nanos(78_643_000)));
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = |t: &str| read(t).unwrap_err();
        assert_eq!(e("0,1,512,w,0.1\n0,1,512,x,0.2\n").field, "Opcode");
        assert_eq!(e("0,1,512,w,0.1\n0,1,512,w,-2\n").field, "Timestamp");
        assert_eq!(e("0,1,512,w,0.1\n0,z,512,w,2\n").field, "LBA");
        assert_eq!(e("0,1,512,w,0.1\n0,1,512\n").line, 2);
    }
}
