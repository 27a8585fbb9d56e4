//! Writing results: JSON (to a file, or to stdout with `-`), aligned text tables, and the
//! human-readable text around them.
//!
//! When JSON goes to stdout (`--json -`), stdout carries nothing else: [`say!`] sends the
//! tables and notes to stderr instead ([`json_to_stdout`] switches it).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use anyhow::Context;
use serde::Serialize;

static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// The first error writing to stdout (`elevator list > /dev/full`): later writes are skipped
/// and `main` reports it, instead of the panic `print!` would raise.
static STDOUT_ERROR: OnceLock<std::io::Error> = OnceLock::new();

/// Write `s` to stdout; a failure is remembered for [`stdout_result`], never a panic.
pub fn out_str(s: &str) {
    if STDOUT_ERROR.get().is_some() {
        return;
    }
    // Std's lock keeps whole messages of several threads apart; nothing is written through
    // its buffer.
    let _one_at_a_time = std::io::stdout().lock();
    if let Err(e) = write_fd(libc::STDOUT_FILENO, s.as_bytes()) {
        let _ = STDOUT_ERROR.set(e);
    }
}

/// Write all of `bytes` to the descriptor `fd` (standard output or error), unbuffered (each
/// call is one message: a line, a table, a JSON document). A write a signal interrupts (EINTR:
/// the caught signals are installed without `SA_RESTART`) is retried, unless the signal asked
/// the command to stop ([`crate::signals::STOP`]): a write blocked on a pipe nobody reads (its
/// 64 KiB full) then ends with an error, and the command goes on to write its other outputs
/// and exit. `std::io::stdout` retried every EINTR itself (`write_all`, and `BufWriter` under
/// its `LineWriter`), so a `run` or `calibrate` in the stopping mode blocked on a full pipe
/// took the one SIGTERM that was meant to stop it and went on waiting for ever.
fn write_fd(fd: libc::c_int, mut bytes: &[u8]) -> std::io::Result<()> {
    use std::os::fd::FromRawFd;
    // SAFETY: descriptors 1 and 2 are open for the life of the process (Rust's runtime
    // reopens a closed one on /dev/null before `main`); `ManuallyDrop` never closes it.
    let out = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    while !bytes.is_empty() {
        match (&*out).write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                if crate::signals::STOP.load(Ordering::SeqCst) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Interrupted,
                        "stopped by a signal while waiting for its reader (a pipe nobody reads, \
                         full)",
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The first error any write to stdout met, if one did (writes are unbuffered: [`out_str`]).
pub fn stdout_result() -> anyhow::Result<()> {
    match STDOUT_ERROR.get() {
        Some(e) => anyhow::bail!("writing to standard output: {e}"),
        None => Ok(()),
    }
}

/// Whether stdout's reader went away (EPIPE: `elevator list | head`), found by a write or by
/// the final flush. SIGPIPE is ignored (signals.rs), so the command wrote its other outputs.
pub fn stdout_broken() -> bool {
    let _ = stdout_result();
    STDOUT_ERROR
        .get()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Whether JSON goes to stdout (`path` is `-`); if so, human-readable text goes to stderr
/// from now on.
pub fn json_to_stdout(path: Option<&Path>) -> bool {
    let on = path.is_some_and(|p| p.as_os_str() == "-");
    if on {
        TEXT_TO_STDERR.store(true, Ordering::Relaxed);
    }
    on
}

/// Whether human-readable text goes to stderr (stdout carries JSON).
pub fn text_to_stderr() -> bool {
    TEXT_TO_STDERR.load(Ordering::Relaxed)
}

/// `println!` for human-readable text: stdout, or stderr when stdout carries JSON.
macro_rules! say {
    () => { $crate::output::say_str("\n") };
    ($($arg:tt)*) => { $crate::output::say_str(&(format!($($arg)*) + "\n")) };
}
pub(crate) use say;

/// `eprintln!` that never panics: a line to stderr, lost when stderr cannot be written
/// (`2>/dev/full`: `eprintln!` panicked, exit 101, where the exit status must tell).
macro_rules! tell {
    ($($arg:tt)*) => { $crate::output::tell_str(&(format!($($arg)*) + "\n")) };
}
pub(crate) use tell;

/// Write `s` to stderr as [`tell!`] does, ignoring a failed write (one a stop interrupts
/// too: [`write_fd`]).
pub fn tell_str(s: &str) {
    let _one_at_a_time = std::io::stderr().lock();
    let _ = write_fd(libc::STDERR_FILENO, s.as_bytes());
}

/// Print `s` as [`say!`] does, without adding a newline.
pub fn say_str(s: &str) {
    if text_to_stderr() {
        tell_str(s);
    } else {
        out_str(s);
    }
}

/// Write `value` as pretty JSON to `path` (`-`: stdout), the output of a `--json` flag (its
/// error names the flag and the path).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising results")?;
    if path.as_os_str() == "-" {
        out_str(&(text + "\n"));
        return Ok(());
    }
    elevator_workload::input::write_output(path, text + "\n")
        .with_context(|| format!("--json: writing {}", path.display()))?;
    say!("wrote {}", path.display());
    Ok(())
}

/// A latency figure of a direction `d` for a table: `ms` with `decimals` places, or `-` when
/// the direction completed no I/O (it has no latency; 0.00 would read as an instant one).
pub fn latency_cell(
    d: &elevator_workload::metrics::DirSummary,
    ms: f64,
    decimals: usize,
) -> String {
    d.latency(ms)
        .map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

/// The read latency columns' names, in [`latency_cells`]' order: the mean beside the
/// percentiles fio prints by default, each with its unit.
pub const READ_LATENCY_COLUMNS: [&str; 5] = [
    "rd mean ms",
    "rd p50 ms",
    "rd p90 ms",
    "rd p99 ms",
    "rd p99.9 ms",
];

/// The write latency columns' names, as [`READ_LATENCY_COLUMNS`].
pub const WRITE_LATENCY_COLUMNS: [&str; 5] = [
    "wr mean ms",
    "wr p50 ms",
    "wr p90 ms",
    "wr p99 ms",
    "wr p99.9 ms",
];

/// A table's header of a row's leading columns, then per direction its own columns
/// (`read`, `write`) each followed by that direction's latency columns: the one shape of
/// `sim`'s, `run`'s and `replay`'s tables.
pub fn latency_header(
    lead: &[&'static str],
    read: &[&'static str],
    write: &[&'static str],
) -> Vec<&'static str> {
    [
        lead,
        read,
        &READ_LATENCY_COLUMNS,
        write,
        &WRITE_LATENCY_COLUMNS,
    ]
    .concat()
}

/// A direction's mean, p50, p90, p99 and p99.9 latency cells, as [`latency_cell`] writes each.
pub fn latency_cells(d: &elevator_workload::metrics::DirSummary, decimals: usize) -> [String; 5] {
    [
        d.lat_mean_ms,
        d.lat_p50_ms,
        d.lat_p90_ms,
        d.lat_p99_ms,
        d.lat_p999_ms,
    ]
    .map(|ms| latency_cell(d, ms, decimals))
}

/// The most characters a table cell shows: a name from the input (a scenario's job, a fio
/// job, a group, a trace's command) can be any length, and every row is padded to the widest
/// cell (a 60 KB job name made each row 60 KB: issue 32).
pub const MAX_CELL: usize = 64;

/// `s` as a table cell: control characters escaped (`\u{1b}`: a name's escape sequence never
/// reaches the terminal raw) and at most `max` characters ([`MAX_CELL`] in [`table`]), a
/// longer one cut with `...` at its end.
fn cell(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let plain = !s.chars().any(char::is_control);
    if plain && s.chars().nth(max).is_none() {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::new();
    let mut shown = 0;
    for c in s.chars() {
        let piece = if c.is_control() {
            c.escape_debug().to_string()
        } else {
            c.to_string()
        };
        let n = piece.chars().count();
        if shown + n > max.saturating_sub(3) {
            out.push_str("...");
            return std::borrow::Cow::Owned(out);
        }
        out.push_str(&piece);
        shown += n;
    }
    std::borrow::Cow::Owned(out)
}

/// A plain text table: a header row, a rule and data rows, columns padded to their widest
/// cell; the first column is left-aligned, the others right-aligned. Every cell is shown
/// through `cell`, cut at [`MAX_CELL`] characters.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    table_with(header, rows, 1, true)
}

/// [`table`] with its first `left` columns left-aligned (the rest right-aligned) and the rule
/// under the header only when `rule`.
pub fn table_with(header: &[&str], rows: &[Vec<String>], left: usize, rule: bool) -> String {
    layout(header, rows, left, rule, MAX_CELL)
}

/// A table of figures elevator made itself, no cell from the input (`reproduce`'s published
/// and measured columns): as [`table`], but no cell is cut. Round 15's cut of every cell at
/// [`MAX_CELL`] characters, meant for names from the input, cut `reproduce flash`'s published
/// column ("1308.4 / 2310.1 / 14352.4 us, 131181 IOPS, 108.5 in block lay...": the block
/// layer's figure and the "cuts" verdict lost).
pub fn figures_table(header: &[&str], rows: &[Vec<String>]) -> String {
    layout(header, rows, 1, true, usize::MAX)
}

fn layout(
    header: &[&str],
    rows: &[Vec<String>],
    left: usize,
    rule: bool,
    max_cell: usize,
) -> String {
    let n = header.len();
    let len = |s: &str| s.chars().count();
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| cell(c, max_cell)).collect())
        .collect();
    let mut width: Vec<usize> = header.iter().map(|h| len(h)).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(n) {
            width[i] = width[i].max(len(c));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(width[i].saturating_sub(len(c)));
            if i > 0 {
                s.push_str("  ");
            }
            if i < left {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    if rule {
        let rules: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
        out.push_str(&line(rules.iter().map(String::as_str).collect()));
    }
    for r in &rows {
        out.push_str(&line(r.iter().map(|c| c.as_ref()).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_by_characters_not_bytes() {
        let t = table(
            &["a", "b"],
            &[
                vec!["x".into(), "1.0 ± 0.1".into()],
                vec!["y".into(), "10".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[2].chars().count(), lines[3].chars().count(), "{t}");
        assert!(lines[3].ends_with("       10"), "{t}");
    }

    #[test]
    fn a_published_figure_longer_than_a_cell_is_whole_in_a_figures_table() {
        let published = "1308.4 / 2310.1 / 14352.4 us, 131181 IOPS, 108.5 in block layer, cuts: no";
        let rows = vec![vec!["none".to_string(), published.to_string()]];
        assert!(figures_table(&["configuration", "published"], &rows).contains(published));
        // A table of names from the input still cuts them.
        let cut = table(&["configuration", "published"], &rows);
        assert!(!cut.contains(published) && cut.contains("..."), "{cut}");
        // Control characters are escaped in both.
        let rows = vec![vec!["a\u{1b}[2J".to_string()]];
        assert!(!figures_table(&["x"], &rows).contains('\u{1b}'));
    }
}
