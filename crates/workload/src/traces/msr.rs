//! MSR Cambridge block traces (SNIA IOTTA, "Write off-loading", FAST'08): CSV lines
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! Timestamp is a Windows FILETIME (100 ns ticks since 1601-01-01), Type `Read` or `Write`,
//! Offset and Size bytes, ResponseTime in 100 ns ticks (kept as the record's measured service
//! time). The disk number is the record's process and device. A first line none of whose fields
//! starts with a digit is a header and skipped; lines of size 0 are skipped and counted
//! (`RecordSource::zero_length`). Names in errors: `Timestamp`, `DiskNumber`, `Type`,
//! `Offset`, `Size`, `ResponseTime`.

use elevator_core::{Nanos, Op};

use super::csv::{narrow, number, volume_request, CsvFormat, CsvReader};
use super::lines::{show, Here};
use super::record::TraceRecord;
use crate::input::InputError;

/// The MSR Cambridge CSV format.
pub struct Msr;

/// An MSR Cambridge CSV trace, request by request.
pub type MsrReader = CsvReader<Msr>;

impl CsvFormat for Msr {
    const FIELDS: usize = 7;
    const TIME_FIELD: &'static str = "Timestamp";

    fn record(f: &[&[u8]], at: &Here) -> Result<Option<TraceRecord>, InputError> {
        let ticks = number(f, 0, "Timestamp", at)?;
        let disk = number(f, 2, "DiskNumber", at)?;
        let op = match f[3] {
            b"Read" | b"read" => Op::Read,
            b"Write" | b"write" => Op::Write,
            other => return Err(at.error("Type", format!("{} is not Read or Write", show(other)))),
        };
        let offset = number(f, 4, "Offset", at)?;
        let size = number(f, 5, "Size", at)?;
        let response = number(f, 6, "ResponseTime", at)?;
        if size == 0 {
            return Ok(None);
        }
        let time = ticks
            .checked_mul(100)
            .ok_or_else(|| at.error("Timestamp", "beyond year 2185"))?;
        let disk = narrow(disk, "DiskNumber", at)?;
        let sectors = narrow(size.div_ceil(512), "Size", at)?;
        Ok(Some(TraceRecord {
            service: Some(Nanos(response.saturating_mul(100))),
            ..volume_request(time, disk, op, offset / 512, sectors)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::lines::Lines;

    fn read(text: &str) -> Result<Vec<TraceRecord>, InputError> {
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

    /// Lines of size 0 were skipped without a trace (round 5's leftover): now the reader
    /// counts them, and the count reaches the replay's report.
    #[test]
    fn records_of_size_0_are_skipped_and_counted() {
        use crate::traces::RecordSource;
        let text = "1,web,0,Read,0,0,1\n2,web,0,Read,0,512,1\n3,web,0,Write,0,0,1\n";
        let mut r = MsrReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "z.csv"));
        let records: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(r.zero_length(), 2);
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = |t: &str| read(t).unwrap_err();
        let x = e("1,web,0,Read,0,512,1\n2,web,0,Erase,0,512,1\n");
        assert_eq!((x.line(), x.field.as_str()), (Some(2), "Type"));
        assert_eq!(
            x.to_string(),
            "web_0.csv:2: field `Type`: \"Erase\" is not Read or Write"
        );
        assert_eq!(e("1,web,0,Read,0,512\n").message, "6 fields, expected 7");
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
