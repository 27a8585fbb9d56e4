//! Alibaba Cloud block traces (2020, "An In-Depth Analysis of Cloud Block Storage Workloads in
//! Large-Scale Production", IISWC'20): CSV lines `device_id,opcode,offset,length,timestamp`.
//!
//! opcode `R` or `W`, offset and length bytes, timestamp microseconds since the Unix epoch. The
//! volume (`device_id`) is the record's process and device; the volume sizes, published in a
//! separate file, are not needed. Lines of length 0 are skipped. Names in errors:
//! `device_id`, `opcode`, `offset`, `length`, `timestamp`.

use elevator_core::{Nanos, Op};

use super::lines::{parse_u64, show, split_fields, Here, Lines};
use super::stream::{RecordSource, TraceRecord};
use super::TraceError;

/// An Alibaba block trace, request by request.
pub struct AlibabaReader {
    lines: Lines,
    done: bool,
}

impl AlibabaReader {
    /// Read records from `lines`.
    pub fn new(lines: Lines) -> AlibabaReader {
        AlibabaReader { lines, done: false }
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
            let dev = num(0, "device_id", &at)?;
            let op = match f[1] {
                b"R" | b"r" => Op::Read,
                b"W" | b"w" => Op::Write,
                o => return Err(at.error("opcode", format!("{} is not R or W", show(o)))),
            };
            let offset = num(2, "offset", &at)?;
            let length = num(3, "length", &at)?;
            let us = num(4, "timestamp", &at)?;
            if length == 0 {
                continue;
            }
            let dev = u32::try_from(dev).map_err(|_| at.error("device_id", "too large"))?;
            let sectors =
                u32::try_from(length.div_ceil(512)).map_err(|_| at.error("length", "too large"))?;
            let time = us
                .checked_mul(1000)
                .ok_or_else(|| at.error("timestamp", "too large"))?;
            return Ok(Some(TraceRecord {
                time: Nanos(time),
                process: dev,
                device: dev,
                op,
                sync: op == Op::Read,
                meta: false,
                sector: offset / 512,
                sectors,
                service: None,
            }));
        }
    }
}

impl Iterator for AlibabaReader {
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

impl RecordSource for AlibabaReader {}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceRecord>, TraceError> {
        AlibabaReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "io_traces.csv")).collect()
    }

    #[test]
    fn parses_volume_bytes_and_microseconds() {
        let r =
            read("419,W,8637440,4096,1577808000000003\n419,R,0,512,1577808000000010\n").unwrap();
        assert_eq!(
            (r[0].process, r[0].op, r[0].sector, r[0].sectors),
            (419, Op::Write, 16_870, 8)
        );
        assert_eq!(r[1].time.as_ns() - r[0].time.as_ns(), 7_000);
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = |t: &str| read(t).unwrap_err();
        assert_eq!(e("1,W,0,512,1\n1,X,0,512,1\n").field, "opcode");
        assert_eq!(e("1,W,0,512,1\n1,W,0,5a,1\n").field, "length");
        assert_eq!(e("1,W,0,512,99999999999999999\n").field, "timestamp");
        assert_eq!(e("1,W,0,512\n").line, 1);
    }
}
