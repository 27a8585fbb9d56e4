//! SPC / UMass trace repository traces (Financial1/2, WebSearch1-3): CSV lines
//! `ASU,LBA,Size,Opcode,Timestamp[,...]`.
//!
//! ASU is the application storage unit (the record's process and device), LBA a 512-byte block
//! number, Size bytes, Opcode `r`/`R` or `w`/`W`, Timestamp seconds (with decimals) since the
//! trace began; fields after the fifth are ignored. Lines of size 0 are skipped and counted
//! (`RecordSource::zero_length`). Names in errors: `ASU`, `LBA`, `Size`, `Opcode`, `Timestamp`.

use elevator_core::Op;

use super::csv::{narrow, number, volume_request, CsvFormat, CsvReader};
use super::lines::{parse_fixed, show, Here};
use super::record::TraceRecord;
use crate::input::InputError;

/// The SPC / UMass CSV format.
pub struct Spc;

/// An SPC trace, request by request.
pub type SpcReader = CsvReader<Spc>;

impl CsvFormat for Spc {
    const FIELDS: usize = 5;
    const TIME_FIELD: &'static str = "Timestamp";
    const EXTRA_FIELDS_OK: bool = true;

    fn record(f: &[&[u8]], at: &Here) -> Result<Option<TraceRecord>, InputError> {
        let asu = number(f, 0, "ASU", at)?;
        let lba = number(f, 1, "LBA", at)?;
        let size = number(f, 2, "Size", at)?;
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
            return Ok(None);
        }
        let asu = narrow(asu, "ASU", at)?;
        let sectors = narrow(size.div_ceil(512), "Size", at)?;
        Ok(Some(volume_request(time, asu, op, lba, sectors)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::lines::Lines;
    use elevator_core::Nanos;

    fn read(text: &str) -> Result<Vec<TraceRecord>, InputError> {
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
        assert_eq!(e("0,1,512,w,0.1\n0,1,512\n").line(), Some(2));
    }
}
