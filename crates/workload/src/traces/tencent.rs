//! Tencent Cloud Block Storage traces (2018, "OSCA: An Online-Model Based Cache Allocation
//! Scheme in Cloud Block Storage Systems", ATC'20): CSV lines
//! `Timestamp,Offset,Size,IOType,VolumeID`.
//!
//! Timestamp whole seconds since the Unix epoch, Offset and Size 512-byte sectors, IOType 0
//! (read) or 1 (write). The volume is the record's process and device. Lines of size 0 are
//! skipped and counted (`RecordSource::zero_length`). Names in errors: `Timestamp`, `Offset`, `Size`, `IOType`, `VolumeID`.

use elevator_core::Op;

use super::csv::{narrow, number, scaled, volume_request, CsvFormat, CsvReader};
use super::lines::{show, Here};
use super::record::TraceRecord;
use crate::input::InputError;

/// The Tencent CBS CSV format.
pub struct Tencent;

/// A Tencent CBS trace, request by request.
pub type TencentReader = CsvReader<Tencent>;

impl CsvFormat for Tencent {
    const FIELDS: usize = 5;
    const TIME_FIELD: &'static str = "Timestamp";

    fn record(f: &[&[u8]], at: &Here) -> Result<Option<TraceRecord>, InputError> {
        let secs = number(f, 0, "Timestamp", at)?;
        let offset = number(f, 1, "Offset", at)?;
        let size = number(f, 2, "Size", at)?;
        let op = match f[3] {
            b"0" => Op::Read,
            b"1" => Op::Write,
            o => return Err(at.error("IOType", format!("{} is not 0 or 1", show(o)))),
        };
        let vol = number(f, 4, "VolumeID", at)?;
        if size == 0 {
            return Ok(None);
        }
        let vol = narrow(vol, "VolumeID", at)?;
        let sectors = narrow(size, "Size", at)?;
        let time = scaled(secs, 1_000_000_000, "Timestamp", at)?;
        Ok(Some(volume_request(time, vol, op, offset, sectors)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::lines::Lines;

    fn read(text: &str) -> Result<Vec<TraceRecord>, InputError> {
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
        assert_eq!(e("1,0,8,1\n").message, "4 fields, expected 5");
    }
}
