//! fio's iolog, versions 2 and 3 (fio `iolog.c`, `read_iolog`), the format `write_iolog`
//! writes and `read_iolog` replays.
//!
//! The first line is `fio version 2 iolog` or `fio version 3 iolog` (version 1 is not read, as
//! fio no longer reads it). Then one action per line:
//! - version 2: `file action [offset length]`; `file wait N` waits N microseconds, the only
//!   timing the format has (requests otherwise follow each other at once);
//! - version 3: `timestamp file action [offset length]`, the timestamp in microseconds since
//!   the log started (`wait` is ignored, as fio ignores it).
//!
//! Actions: `add`, `open`, `close` (files; each added file is one process of the replay, in
//! order of first appearance), `read`, `write`, `trim`, `sync`, `datasync` (both a flush).
//! Offsets and lengths are bytes. Names in errors: `header`, `timestamp`, `file`, `action`,
//! `offset`, `length`.
//!
//! Memory is bounded per distinct file, whatever its name's length: a file is known by a
//! 64-bit hash of its whole name, and only the first [`MAX_NAMES`] names are kept, cut to
//! `blktrace::MAX_NAME` bytes, for reports (15,000 files of 64 KiB names held 2 GB before).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use elevator_core::{Nanos, Op};

use super::blktrace::{short_name, MAX_NAMES};
use super::lines::{parse_u64, show, Lines};
use super::record::{RecordAt, RecordSource, TraceRecord};
use super::until_error::ReadUntilError;
use crate::input::{InputError, Position};

/// An fio iolog, request by request.
pub struct FioIologReader {
    lines: Lines,
    version: u8,
    clock: Nanos,
    /// Each file's process number, by a hash of its name.
    files: HashMap<u64, u32>,
    hasher: RandomState,
    /// The first [`MAX_NAMES`] files' names, cut to `blktrace::MAX_NAME` bytes, by process
    /// number.
    names: Vec<String>,
    done: bool,
}

impl FioIologReader {
    /// Read the header line of `lines`.
    pub fn new(mut lines: Lines) -> Result<FioIologReader, InputError> {
        let version = match lines.next_line()? {
            Some((l, _)) if l.starts_with(b"fio version 2 iolog") => 2,
            Some((l, _)) if l.starts_with(b"fio version 3 iolog") => 3,
            Some((l, at)) => {
                return Err(at.error(
                    "header",
                    format!(
                        "{} is not `fio version 2 iolog` or `fio version 3 iolog` (version 1 logs are not read)",
                        show(l)
                    ),
                ))
            }
            None => return Err(lines.error("header", "empty file: no iolog header")),
        };
        Ok(FioIologReader {
            lines,
            version,
            clock: Nanos::ZERO,
            files: HashMap::new(),
            hasher: RandomState::new(),
            names: Vec::new(),
            done: false,
        })
    }

    fn file_index(&mut self, name: &str) -> u32 {
        let key = self.hasher.hash_one(name);
        let next = self.files.len() as u32;
        let i = *self.files.entry(key).or_insert(next);
        if i == next && self.names.len() < MAX_NAMES {
            self.names.push(short_name(name.as_bytes()));
        }
        i
    }
}

impl ReadUntilError for FioIologReader {
    type Item = TraceRecord;

    fn done(&mut self) -> &mut bool {
        &mut self.done
    }

    fn read_next(&mut self) -> Result<Option<TraceRecord>, InputError> {
        loop {
            let Some((line, _)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let text = String::from_utf8_lossy(line).into_owned();
            let mut w = text.split_whitespace();
            let Some(first) = w.next() else { continue };
            if self.version == 3 {
                let us = parse_u64(first.as_bytes()).ok_or_else(|| {
                    self.lines.error(
                        "timestamp",
                        format!("cannot parse {}", show(first.as_bytes())),
                    )
                })?;
                let t = us
                    .checked_mul(1000)
                    .ok_or_else(|| self.lines.error("timestamp", "too large"))?;
                self.clock = Nanos(t);
            }
            let file = if self.version == 3 {
                w.next()
                    .ok_or_else(|| self.lines.error("file", "missing"))?
            } else {
                first
            };
            let action = w
                .next()
                .ok_or_else(|| self.lines.error("action", "missing"))?;
            let mut number = |field: &'static str, lines: &Lines| -> Result<u64, InputError> {
                let v = w.next().ok_or_else(|| lines.error(field, "missing"))?;
                parse_u64(v.as_bytes()).ok_or_else(|| {
                    lines.error(field, format!("cannot parse {}", show(v.as_bytes())))
                })
            };
            let op = match action {
                "add" | "open" | "close" => {
                    self.file_index(file);
                    continue;
                }
                "wait" if self.version == 3 => continue,
                "wait" => {
                    let us = number("offset", &self.lines)?;
                    self.clock = self.clock.saturating_add(Nanos(us.saturating_mul(1000)));
                    continue;
                }
                "read" => Op::Read,
                "write" => Op::Write,
                "trim" => Op::Discard,
                "sync" | "datasync" => Op::Flush,
                other => {
                    return Err(self.lines.error(
                        "action",
                        format!("unknown action {}", show(other.as_bytes())),
                    ))
                }
            };
            let (sector, sectors) = if op == Op::Flush {
                (0, 0)
            } else {
                let offset = number("offset", &self.lines)?;
                let length = number("length", &self.lines)?;
                let sectors = u32::try_from(length.div_ceil(512)).map_err(|_| {
                    self.lines
                        .error("length", format!("{length} bytes is too long"))
                })?;
                if sectors == 0 {
                    return Err(self.lines.error("length", "must be positive"));
                }
                (offset / 512, sectors)
            };
            let process = self.file_index(file);
            return Ok(Some(TraceRecord {
                time: self.clock,
                process,
                device: process,
                op,
                sync: op == Op::Read,
                meta: false,
                sector,
                sectors,
                service: None,
            }));
        }
    }
}

impl Iterator for FioIologReader {
    type Item = Result<TraceRecord, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_until_error()
    }
}

impl RecordSource for FioIologReader {
    fn last_at(&self) -> Option<RecordAt> {
        Some(RecordAt {
            file: self.lines.file.clone(),
            at: Position::Line(self.lines.line),
            time_field: "timestamp",
        })
    }

    fn process_name(&self, pid: u32) -> Option<String> {
        self.names.get(pid as usize).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceRecord>, InputError> {
        FioIologReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "log"))?.collect()
    }

    #[test]
    fn version_2_times_come_from_waits() {
        let r = read("fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n/dev/sdb wait 250\n/dev/sdb write 8192 512\n/dev/sdb sync 0 0\n/dev/sdb close\n").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].op, r[0].sector, r[0].sectors, r[0].time),
            (Op::Read, 0, 8, Nanos::ZERO)
        );
        assert_eq!((r[1].op, r[1].sector, r[1].sectors), (Op::Write, 16, 1));
        assert_eq!(r[1].time, Nanos::from_us(250));
        assert_eq!(r[2].op, Op::Flush);
    }

    #[test]
    fn version_3_times_and_files_as_processes() {
        let mut rd = FioIologReader::new(Lines::from_bytes(
            b"fio version 3 iolog\n2 a add\n3 b add\n878 a write 0 16384\n900 b trim 4096 4096\n"
                .to_vec(),
            "log",
        ))
        .unwrap();
        let r: Vec<TraceRecord> = rd.by_ref().map(Result::unwrap).collect();
        assert_eq!(
            (r[0].time, r[0].process, r[0].sectors),
            (Nanos::from_us(878), 0, 32)
        );
        assert_eq!((r[1].op, r[1].process), (Op::Discard, 1));
        assert_eq!(rd.process_name(1).as_deref(), Some("b"));
    }

    /// 15,000 files of 64 KiB names held two copies of every name (2 GB); now a file costs
    /// its hash and number, and a name at most `MAX_NAME` bytes.
    #[test]
    fn long_file_names_are_kept_cut_and_files_told_apart_by_their_whole_name() {
        let a = "a".repeat(60_000);
        let text =
            format!("fio version 2 iolog\n{a}x add\n{a}y add\n{a}y read 0 512\n{a}x read 0 512\n");
        let mut rd = FioIologReader::new(Lines::from_bytes(text.into_bytes(), "log")).unwrap();
        let r: Vec<TraceRecord> = rd.by_ref().map(Result::unwrap).collect();
        assert_eq!((r[0].process, r[1].process), (1, 0));
        use crate::traces::blktrace::MAX_NAME;
        assert_eq!(rd.process_name(0).unwrap().len(), MAX_NAME);
        assert!(rd.names.iter().all(|n| n.len() <= MAX_NAME));
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = |t: &str| read(t).unwrap_err();
        assert_eq!(e("").field, "header");
        assert_eq!(e("fio version 1 iolog\n").field, "header");
        let x = e("fio version 2 iolog\na read x 4096\n");
        assert_eq!((x.line(), x.field.as_str()), (Some(2), "offset"));
        assert_eq!(e("fio version 2 iolog\na read 0\n").field, "length");
        assert_eq!(e("fio version 2 iolog\na read 0 0\n").field, "length");
        assert_eq!(e("fio version 2 iolog\na jump 0 1\n").field, "action");
        assert_eq!(e("fio version 3 iolog\n-5 a read 0 1\n").field, "timestamp");
        assert_eq!(
            e("fio version 3 iolog\n99999999999999999 a read 0 1\n").field,
            "timestamp"
        );
        assert_eq!(e("fio version 3 iolog\n5\n").field, "file");
    }
}
