//! Alibaba Cloud block traces (2020, "An In-Depth Analysis of Cloud Block Storage Workloads in
//! Large-Scale Production", IISWC'20): CSV lines `device_id,opcode,offset,length,timestamp`.
//!
//! opcode `R` or `W`, offset and length bytes, timestamp microseconds since the Unix epoch. The
//! volume (`device_id`) is the record's process and device; the volume sizes, published in a
//! separate file, are not needed. Lines of length 0 are skipped and counted
//! (`RecordSource::zero_length`). Names in errors:
//! `device_id`, `opcode`, `offset`, `length`, `timestamp`.

use elevator_core::Op;

use super::csv::{narrow, number, scaled, volume_request, CsvFormat, CsvReader};
use super::lines::{show, Here};
use super::record::TraceRecord;
use crate::input::InputError;

/// The Alibaba block-trace CSV format.
pub struct Alibaba;

/// An Alibaba block trace, request by request.
pub type AlibabaReader = CsvReader<Alibaba>;

impl CsvFormat for Alibaba {
    const FIELDS: usize = 5;
    const TIME_FIELD: &'static str = "timestamp";

    fn record(f: &[&[u8]], at: &Here) -> Result<Option<TraceRecord>, InputError> {
        let dev = number(f, 0, "device_id", at)?;
        let op = match f[1] {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            o => return Err(at.error("opcode", format!("{} is not R or W", show(o)))),
        };
        let offset = number(f, 2, "offset", at)?;
        let length = number(f, 3, "length", at)?;
        let us = number(f, 4, "timestamp", at)?;
        if length == 0 {
            return Ok(None);
        }
        let dev = narrow(dev, "device_id", at)?;
        let sectors = narrow(length.div_ceil(512), "length", at)?;
        let time = scaled(us, 1000, "timestamp", at)?;
        Ok(Some(volume_request(time, dev, op, offset / 512, sectors)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::lines::Lines;

    fn read(text: &str) -> Result<Vec<TraceRecord>, InputError> {
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
        assert_eq!(e("1,W,0,512\n").line(), Some(1));
    }
}
