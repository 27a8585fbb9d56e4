//! The S suite's application start-up traces (`comm_startup_lat/*.trace`: xterm,
//! gnome-terminal, LibreOffice Writer start-up I/O recorded with blktrace on real machines).
//!
//! One request per line, ten whitespace-separated fields:
//!
//! | # | field (name in errors) | meaning |
//! |---|---|---|
//! | 1 | `process` | `name-pid` of the issuing process (the name may contain `-`) |
//! | 2 | `delta` | seconds since the previous line's request was issued (any process) |
//! | 3 | `sectors` | length, 512-byte sectors |
//! | 4 | `sector` | first sector on the recording machine's disk |
//! | 5 | `pattern` | `Seq` or `Rand` relative to the previous request |
//! | 6, 7 | (unused: distance and run length) | must be integers |
//! | 8 | `action` | `R` read, `RA` readahead (asynchronous), `RM` metadata read, `WS` sync write ... |
//! | 9 | `time` | seconds since recording began (cumulative) |
//! | 10 | `mark` | `START` (first request of a burst) or `C` |

use std::collections::HashMap;
use std::path::Path;

use super::lines::field;
use super::lines::Lines;
use crate::input::InputError;

/// The most requests a start-up trace may hold (the S suite's hold a few thousand): the
/// replay keeps every request in memory.
pub const MAX_REQUESTS: usize = 1 << 20;

/// One traced request.
#[derive(Clone, Debug, PartialEq)]
pub struct StartupRecord {
    /// Index into [`StartupTrace::processes`].
    pub process: usize,
    /// Seconds since the previous request (of any process) was issued.
    pub delta_s: f64,
    /// Length in sectors.
    pub sectors: u32,
    /// First sector on the original disk.
    pub sector: u64,
    /// `Seq` (true) or `Rand`.
    pub seq: bool,
    /// A write (`W...`) rather than a read (`R...`).
    pub write: bool,
    /// Readahead (`A` in the action): issued asynchronously.
    pub readahead: bool,
    /// Metadata (`M` in the action).
    pub meta: bool,
    /// Seconds since recording began.
    pub time_s: f64,
}

/// A parsed start-up trace.
#[derive(Clone, Debug, PartialEq)]
pub struct StartupTrace {
    /// The file it came from.
    pub file: String,
    /// Process names (`name-pid`) in order of first appearance.
    pub processes: Vec<String>,
    /// Requests in trace order.
    pub records: Vec<StartupRecord>,
}

impl StartupTrace {
    /// Read and parse the trace at `path`, streaming it (lines of at most
    /// [`MAX_LINE`](super::lines::MAX_LINE) bytes, at most [`MAX_REQUESTS`] requests).
    pub fn read(path: &Path) -> Result<StartupTrace, InputError> {
        StartupTrace::from_lines(Lines::open(path)?)
    }

    /// Parse trace text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<StartupTrace, InputError> {
        StartupTrace::from_lines(Lines::from_bytes(text.as_bytes().to_vec(), file))
    }

    fn from_lines(mut lines: Lines) -> Result<StartupTrace, InputError> {
        let name = lines.file.clone();
        let file = name.as_str();
        let mut processes: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut records = Vec::new();
        while let Some((raw, at)) = lines.next_line()? {
            let n = at.line;
            let line = std::str::from_utf8(raw).map_err(|_| at.error("", "not UTF-8 text"))?;
            let mut it = line.split_whitespace();
            let Some(proc_name) = it.next() else {
                continue;
            };
            if proc_name.starts_with('#') {
                continue;
            }
            if proc_name.rsplit_once('-').is_none_or(|(name, pid)| {
                name.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit())
            }) {
                return Err(InputError::at_line(
                    file,
                    n,
                    "process",
                    format!(
                        "{} is not name-pid",
                        super::lines::show(proc_name.as_bytes())
                    ),
                ));
            }
            let delta_s: f64 = field(file, n, "delta", it.next())?;
            if !(delta_s.is_finite() && delta_s >= 0.0) {
                return Err(InputError::at_line(file, n, "delta", "must be a time >= 0"));
            }
            let sectors: u32 = field(file, n, "sectors", it.next())?;
            if sectors == 0 {
                return Err(InputError::at_line(file, n, "sectors", "must be positive"));
            }
            let sector: u64 = field(file, n, "sector", it.next())?;
            let seq = match it.next() {
                Some("Seq") => true,
                Some("Rand") => false,
                Some(v) => {
                    return Err(InputError::at_line(
                        file,
                        n,
                        "pattern",
                        format!(
                            "{} is neither Seq nor Rand",
                            super::lines::show(v.as_bytes())
                        ),
                    ))
                }
                None => return Err(InputError::at_line(file, n, "pattern", "missing")),
            };
            let _: i64 = field(file, n, "distance", it.next())?;
            let _: i64 = field(file, n, "run", it.next())?;
            let action: String = field(file, n, "action", it.next())?;
            let write = match action.as_bytes()[0] {
                b'R' => false,
                b'W' => true,
                _ => {
                    return Err(InputError::at_line(
                        file,
                        n,
                        "action",
                        format!(
                            "{} is neither a read (R...) nor a write (W...)",
                            super::lines::show(action.as_bytes())
                        ),
                    ))
                }
            };
            if !action[1..].bytes().all(|b| b"ASMFDN".contains(&b)) {
                return Err(InputError::at_line(
                    file,
                    n,
                    "action",
                    format!(
                        "{} has flags other than A, S, M, F, D, N",
                        super::lines::show(action.as_bytes())
                    ),
                ));
            }
            let time_s: f64 = field(file, n, "time", it.next())?;
            if !time_s.is_finite() {
                return Err(InputError::at_line(
                    file,
                    n,
                    "time",
                    "must be a finite time",
                ));
            }
            match it.next() {
                Some("START" | "C") => {}
                Some(v) => {
                    return Err(InputError::at_line(
                        file,
                        n,
                        "mark",
                        format!(
                            "{} is neither START nor C",
                            super::lines::show(v.as_bytes())
                        ),
                    ))
                }
                None => return Err(InputError::at_line(file, n, "mark", "missing")),
            }
            if let Some(extra) = it.next() {
                return Err(InputError::at_line(
                    file,
                    n,
                    "",
                    format!(
                        "unexpected 11th field {}",
                        super::lines::show(extra.as_bytes())
                    ),
                ));
            }
            if records.len() == MAX_REQUESTS {
                return Err(InputError::at_line(
                    file,
                    n,
                    "",
                    format!("more than {MAX_REQUESTS} requests: not a start-up trace"),
                ));
            }
            let process = match index.get(proc_name) {
                Some(&p) => p,
                None => {
                    processes.push(proc_name.to_string());
                    index.insert(proc_name.to_string(), processes.len() - 1);
                    processes.len() - 1
                }
            };
            records.push(StartupRecord {
                process,
                delta_s,
                sectors,
                sector,
                seq,
                write,
                readahead: !write && action[1..].contains('A'),
                meta: action[1..].contains('M'),
                time_s,
            });
        }
        if records.is_empty() {
            return Err(InputError::new(file, "the trace holds no request"));
        }
        Ok(StartupTrace {
            file: file.to_string(),
            processes,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "\
xterm-31657 \t   0     8   113314048  Rand    -427336      0        RM   4.666589 START
Xorg-925  .029161     8   109119744  Rand   16556008      0        RA   4.695750   C
jbd2/sdb1-8-268  .008011    88   247752088  Rand      23880      0        WS    .335377   C
";

    #[test]
    fn parses_processes_actions_and_times() {
        let t = StartupTrace::parse(TWO, "t").unwrap();
        assert_eq!(
            t.processes,
            vec!["xterm-31657", "Xorg-925", "jbd2/sdb1-8-268"]
        );
        let r = &t.records;
        assert!(r[0].meta && !r[0].readahead && !r[0].write);
        assert!(r[1].readahead && r[1].process == 1);
        assert!((r[1].delta_s - 0.029161).abs() < 1e-12);
        assert!(r[2].write && !r[2].readahead && r[2].sectors == 88);
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let bad = |line: &str| {
            let text = format!("{}{line}\n", TWO);
            StartupTrace::parse(&text, "x.trace").unwrap_err()
        };
        let e = bad("xterm-1 .1 8 abc Rand 0 0 R 1.0 C");
        assert_eq!((e.line(), e.field.as_str()), (Some(4), "sector"));
        assert_eq!(
            e.to_string(),
            "x.trace:4: field `sector`: cannot parse \"abc\""
        );
        assert_eq!(bad("xterm-1 .1 8 9 Sideways 0 0 R 1.0 C").field, "pattern");
        assert_eq!(bad("xterm-1 .1 8 9 Seq 0 0 X 1.0 C").field, "action");
        assert_eq!(bad("xterm-1 .1 8 9 Seq 0 0 RQ 1.0 C").field, "action");
        assert_eq!(bad("xterm .1 8 9 Seq 0 0 R 1.0 C").field, "process");
        assert_eq!(bad("xterm-1 -1 8 9 Seq 0 0 R 1.0 C").field, "delta");
        assert_eq!(bad("xterm-1 .1 0 9 Seq 0 0 R 1.0 C").field, "sectors");
        assert_eq!(bad("xterm-1 .1 8 9 Seq 0 0 R 1.0").field, "mark");
        assert_eq!(bad("xterm-1 .1 8 9 Seq 0 0 R 1.0 C extra").line(), Some(4));
        assert_eq!(
            StartupTrace::parse("", "e").unwrap_err().to_string(),
            "e: the trace holds no request"
        );
    }

    #[test]
    fn the_shared_traces_parse() {
        let Some(dir) = crate::traces::shared_data_dir() else {
            eprintln!("skipped: shared/data is absent");
            return;
        };
        let dir = dir.join("traces/s-startup");
        for (name, requests, processes) in [
            ("xterm", 718, 2),
            ("gnometerm", 2781, 7),
            ("lowriter", 1268, 4),
        ] {
            let path = dir.join(format!("{name}.trace"));
            if !path.exists() {
                eprintln!("skipped: {} is absent", path.display());
                continue;
            }
            let t = StartupTrace::read(&path).unwrap();
            assert_eq!(t.records.len(), requests, "{name}");
            assert_eq!(t.processes.len(), processes, "{name}");
            assert!(t.records.iter().any(|r| r.readahead));
        }
    }
}
