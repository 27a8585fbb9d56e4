//! blkparse's default text output (blktrace's `blkparse -i sda` without `-f`), read as
//! [`BlkEvent`]s so that text and binary traces go through the same request logic.
//!
//! Each event line starts `maj,min cpu sequence seconds.nanoseconds pid action rwbs` (blkparse's
//! default format `%D %2c %8s %5T.%9t %5p %2a %3d`), then depends on the action:
//! `sector + sectors [command]` for Q, G, I, D, M, F ...; `sector + sectors [error]` for C; a
//! bare `[command]` for plugs and flushes without data; `sector + sectors <- (maj,min) from` for
//! a remap; free text for notifications (`m`). rwbs is `F` (preflush), then one of `D`
//! (discard), `W`, `R`, `N` (none), then `F` (FUA), `A` (readahead), `S` (sync), `M` (metadata).
//! The per-CPU and total summary blkparse prints at the end (from the first line starting
//! `CPU` or `Total`) ends the events. Names in errors: `device`, `cpu`, `sequence`, `time`,
//! `pid`, `action`, `rwbs`, `sector`, `sectors`.

use std::collections::HashMap;
use std::path::Path;

use elevator_core::Nanos;

use super::blktrace::{cat, BlkAction, BlkEvent, EventSource};
use super::kernel_limits::{check_cpu, check_pid};
use super::lines::{parse_fixed, parse_u64, show, Lines};
use super::record::RecordAt;
use super::until_error::ReadUntilError;
use crate::input::{InputError, Position};

/// blkparse text, event by event.
pub struct BlkparseReader {
    lines: Lines,
    names: HashMap<u32, String>,
    done: bool,
}

impl BlkparseReader {
    /// Open a blkparse output file.
    pub fn open(path: &Path) -> Result<BlkparseReader, InputError> {
        Ok(BlkparseReader::new(Lines::open(path)?))
    }

    /// Read events from `lines`.
    pub fn new(lines: Lines) -> BlkparseReader {
        BlkparseReader {
            lines,
            names: HashMap::new(),
            done: false,
        }
    }
}

impl ReadUntilError for BlkparseReader {
    type Item = BlkEvent;

    fn done(&mut self) -> &mut bool {
        &mut self.done
    }

    fn read_next(&mut self) -> Result<Option<BlkEvent>, InputError> {
        loop {
            let Some((line, at)) = self.lines.next_line()? else {
                return Ok(None);
            };
            let text = std::str::from_utf8(line)
                .map_err(|_| at.error("", "not UTF-8 text"))?
                .trim();
            if text.is_empty() {
                continue;
            }
            if text.starts_with("CPU") || text.starts_with("Total") {
                return Ok(None);
            }
            let text = text.to_string();
            let (ev, comm) = parse_line(&text).map_err(|(f, r)| at.error(f, r))?;
            if let Some(c) = comm {
                let room = self.names.len() < super::blktrace::MAX_NAMES;
                if room && !matches!(ev.action, BlkAction::Complete) {
                    self.names
                        .entry(ev.pid)
                        .or_insert_with(|| super::blktrace::short_name(c.as_bytes()));
                }
            }
            return Ok(Some(ev));
        }
    }
}

type LineError = (&'static str, String);

fn num<T: TryFrom<u64>>(field: &'static str, s: Option<&str>) -> Result<T, LineError> {
    let s = s.ok_or((field, "missing".to_string()))?;
    parse_u64(s.as_bytes())
        .and_then(|v| T::try_from(v).ok())
        .ok_or((field, format!("cannot parse {}", show(s.as_bytes()))))
}

/// Category bits from an rwbs string.
fn rwbs_category(rwbs: &str) -> Result<u64, LineError> {
    let b = rwbs.as_bytes();
    let mut c = 0;
    let mut i = 0;
    if b.len() > 1 && b[0] == b'F' {
        c |= cat::FLUSH;
        i = 1;
    }
    match b.get(i) {
        Some(b'D') => c |= cat::DISCARD,
        Some(b'W') => c |= cat::WRITE,
        Some(b'R') => c |= cat::READ,
        Some(b'N') => {}
        Some(b'F') if b.len() == 1 => c |= cat::FLUSH,
        _ => return Err(("rwbs", format!("{rwbs:?} has no direction (D, W, R or N)"))),
    }
    for &f in &b[i + 1..] {
        c |= match f {
            b'F' => cat::FUA,
            b'A' => cat::AHEAD,
            b'S' => cat::SYNC,
            b'M' => cat::META,
            b'E' => 0,
            _ => return Err(("rwbs", format!("unknown flag {:?} in {rwbs:?}", f as char))),
        };
    }
    Ok(c)
}

fn action_of(s: &str) -> Result<BlkAction, LineError> {
    Ok(match s {
        "Q" => BlkAction::Queue,
        "M" => BlkAction::BackMerge,
        "F" => BlkAction::FrontMerge,
        "G" => BlkAction::GetRq,
        "S" => BlkAction::SleepRq,
        "R" => BlkAction::Requeue,
        "D" => BlkAction::Issue,
        "C" => BlkAction::Complete,
        "P" => BlkAction::Plug,
        "U" => BlkAction::UnplugIo,
        "UT" => BlkAction::UnplugTimer,
        "I" => BlkAction::Insert,
        "X" => BlkAction::Split,
        "B" => BlkAction::Bounce,
        "A" => BlkAction::Remap,
        "m" => BlkAction::Notify(2),
        _ => return Err(("action", format!("unknown action {s:?}"))),
    })
}

/// One event line: the event and the bracketed command name, if any.
fn parse_line(text: &str) -> Result<(BlkEvent, Option<&str>), LineError> {
    let mut it = text.split_whitespace();
    let dev = it.next().unwrap_or("");
    let (maj, min) = dev
        .split_once(',')
        .ok_or(("device", format!("{dev:?} is not maj,min")))?;
    let maj: u32 = num("device", Some(maj))?;
    let min: u32 = num("device", Some(min))?;
    if maj >= 1 << 12 || min >= 1 << 20 {
        return Err(("device", format!("{dev} is out of range")));
    }
    let cpu = check_cpu(num("cpu", it.next())?).map_err(|r| ("cpu", r))?;
    let sequence: u32 = num("sequence", it.next())?;
    let t = it.next().ok_or(("time", "missing".to_string()))?;
    let time = parse_fixed(t.as_bytes(), 9)
        .filter(|_| t.contains('.'))
        .ok_or(("time", format!("cannot parse {t:?} as seconds.nanoseconds")))?;
    let pid = check_pid(num("pid", it.next())?).map_err(|r| ("pid", r))?;
    let action = action_of(it.next().ok_or(("action", "missing".to_string()))?)?;
    let rwbs = it.next().ok_or(("rwbs", "missing".to_string()))?;
    let mut ev = BlkEvent {
        time: Nanos(time),
        sequence,
        cpu,
        device: (maj << 20) | min,
        pid,
        action,
        category: action.category(),
        sector: 0,
        bytes: 0,
        error: 0,
        cgroup: None,
        remap: None,
    };
    if matches!(action, BlkAction::Notify(_)) {
        return Ok((ev, None));
    }
    ev.category |= rwbs_category(rwbs)?;
    let rest: Vec<&str> = it.collect();
    let mut k = 0;
    if rest.len() >= 3 && rest[1] == "+" {
        ev.sector = num("sector", Some(rest[0]))?;
        let n: u64 = num("sectors", Some(rest[2]))?;
        // Checked: `n * 512` wrapped for n >= 2^55 (2^55 + 8 sectors read as 4 KiB).
        ev.bytes = n
            .checked_mul(512)
            .and_then(|b| u32::try_from(b).ok())
            .ok_or_else(|| {
                (
                    "sectors",
                    format!("{n} sectors do not fit a 32-bit byte count"),
                )
            })?;
        k = 3;
    } else if rest.len() >= 3 && rest[1] == "/" && action == BlkAction::Split {
        ev.sector = num("sector", Some(rest[0]))?;
        k = 3;
    } else if matches!(rest[..], [w] | [w, "+"] if w.bytes().all(|b| b.is_ascii_digit())) {
        // A line cut after its sector (`Q R 16 +`, `Q R 16`: the last line of a trace
        // written when blkparse was killed) was read as a request of no sectors. blkparse
        // prints a bare number only before `[...]` or `(...)` (`C N 0 [0]`, a SCSI command's
        // bytes), which this leaves alone.
        return Err((
            "sectors",
            format!(
                "missing after sector {}: expected `sector + sectors` (is the line cut short?)",
                show(rest[0].as_bytes())
            ),
        ));
    }
    if rest.is_empty() {
        // A line cut right after its RWBS (`Q R`: the last line of a trace written when
        // blkparse was killed) was read as an event of no sectors and skipped, and the replay
        // went on as if the trace were whole. blkparse's default output (`process_default`
        // in blkparse_fmt.c) ends every event it prints, a flush's `Q FWS` included, with
        // `[command]`, `[error]`, a sector range or a SCSI command's `(...)`.
        return Err((
            "sector",
            format!(
                "missing after RWBS {}: expected `sector + sectors` or `[command]` (is the line cut short?)",
                show(rwbs.as_bytes())
            ),
        ));
    }
    let has_tail = rest.len() > k;
    let bracket = text
        .rfind('[')
        .and_then(|a| text.rfind(']').filter(|&b| b > a).map(|b| &text[a + 1..b]))
        .filter(|_| has_tail);
    let comm = match bracket {
        Some(e) if action == BlkAction::Complete => {
            // blkparse prints the error as a signed int.
            let v: i64 = e
                .trim()
                .parse()
                .map_err(|_| ("error", format!("cannot parse {e:?}")))?;
            ev.error = v as u16;
            None
        }
        other => other,
    };
    Ok((ev, comm))
}

impl Iterator for BlkparseReader {
    type Item = Result<BlkEvent, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_until_error()
    }
}

impl EventSource for BlkparseReader {
    fn process_name(&self, pid: u32) -> Option<String> {
        self.names.get(&pid).cloned()
    }

    fn last_at(&self) -> Option<RecordAt> {
        Some(RecordAt {
            file: self.lines.file.clone(),
            at: Position::Line(self.lines.line),
            time_field: "time",
        })
    }

    fn last_position(&self) -> Option<Position> {
        Some(Position::Line(self.lines.line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::Op;

    const TEXT: &str = "\
  8,16   1        1     0.000000000  4162  Q  WS 2048 + 8 [dd]
  8,16   1        2     0.000001500  4162  G  WS 2048 + 8 [dd]
  8,16   1        3     0.000002000  4162  P   N [dd]
  8,16   1        4     0.000003000  4162  I  WS 2048 + 8 [dd]
  8,16   1        0     0.000003100     0  m   N cfq4162S / insert_request
  8,16   1        5     0.000004000  4162  D  WS 2048 + 8 [dd]
  8,16   0        1     0.000104000     0  C  WS 2048 + 8 [0]
  8,16   1        6     0.000200000  4162  Q FWS [dd]
  8,16   1        7     0.000300000   99  A   R 4096 + 16 <- (8,17) 2048
  8,16   1        8     0.000400000  100  Q  RA 4096 + 16 [Web Content]
CPU0 (8,16):
 Reads Queued:           0,        0KiB\t Writes Queued:           0,        0KiB
";

    fn events(text: &str) -> (Vec<Result<BlkEvent, InputError>>, BlkparseReader) {
        let mut r = BlkparseReader::new(Lines::from_bytes(text.as_bytes().to_vec(), "t.txt"));
        let v = r.by_ref().collect();
        (v, r)
    }

    #[test]
    fn reads_events_names_and_stops_at_the_summary() {
        let (v, r) = events(TEXT);
        let v: Vec<BlkEvent> = v.into_iter().map(Result::unwrap).collect();
        assert_eq!(v.len(), 10);
        assert_eq!(v[0].action, BlkAction::Queue);
        assert_eq!(v[0].device, (8 << 20) | 16);
        assert_eq!(
            (v[0].sector, v[0].bytes, v[0].op(), v[0].sync()),
            (2048, 4096, Some(Op::Write), true)
        );
        assert_eq!(v[6].action, BlkAction::Complete);
        assert_eq!(v[6].time, Nanos(104_000));
        assert_eq!(v[7].op(), Some(Op::Write));
        assert_eq!(v[7].category & cat::FLUSH, cat::FLUSH);
        assert_eq!(v[8].action, BlkAction::Remap);
        assert_eq!(v[9].category & cat::AHEAD, cat::AHEAD);
        assert_eq!(r.process_name(4162).as_deref(), Some("dd"));
        assert_eq!(r.process_name(100).as_deref(), Some("Web Content"));
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let e = |t: &str| events(t).0.pop().unwrap().unwrap_err();
        assert_eq!(
            e("8,0 1 1 0.5 1 Q R 1 + 8 [a]\n8,0 1 2 x 1 Q R 1 + 8 [a]\n").line(),
            Some(2)
        );
        assert_eq!(e("8,0 1 2 x 1 Q R 1 + 8 [a]\n").field, "time");
        assert_eq!(e("8;0 1 2 0.1 1 Q R 1 + 8 [a]\n").field, "device");
        assert_eq!(e("8,0 1 2 0.1 1 Z R 1 + 8 [a]\n").field, "action");
        assert_eq!(e("8,0 1 2 0.1 1 Q Y 1 + 8 [a]\n").field, "rwbs");
        assert_eq!(e("8,0 1 2 0.1 1 Q R x + 8 [a]\n").field, "sector");
        assert_eq!(
            e("8,0 1 2 0.1 1 Q R 1 + 99999999999 [a]\n").field,
            "sectors"
        );
        assert_eq!(e("8,0 1 2 0.1 -1 Q R 1 + 8 [a]\n").field, "pid");
        assert_eq!(e("8,0 1 2 0.1 1 C R 1 + 8 [x]\n").field, "error");
        // Cut short (the last line of a killed blkparse), or a count that wrapped `* 512`:
        // each was read as a request of no sectors, or of 4 KiB.
        assert_eq!(e("8,0 1 2 0.1 1 Q R 16 +").field, "sectors");
        assert_eq!(e("8,0 1 2 0.1 1 Q R 16\n").field, "sectors");
        assert!(events("8,0 1 2 0.1 1 C N 0 [0]\n").0[0].is_ok());
        // Cut right after the RWBS: read as an event of no sectors and skipped before.
        assert_eq!(e("8,0 1 2 0.1 1 Q R\n").field, "sector");
        assert_eq!(e("8,0 1 2 0.1 1 C WS").field, "sector");
        assert!(events("8,0 1 2 0.1 1 Q FWS [kworker/0:1]\n").0[0].is_ok());
        assert_eq!(
            e("8,0 1 2 0.1 1 Q R 1 + 36028797018963976 [a]\n").field,
            "sectors"
        );
        let err = e("8,0 1 2 0.1 1 Q R x + 8 [a]\n");
        assert_eq!(
            err.to_string(),
            "t.txt:1: field `sector`: cannot parse \"x\""
        );
    }
}
