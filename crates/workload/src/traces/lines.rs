//! Streaming line input for the text trace formats: one reused buffer, line numbers, a cap on
//! line length (a 4 GB file without a newline is an error, not 4 GB of memory), and byte-level
//! number parsing that reports the field at fault.

use std::io::{BufRead, BufReader, Chain, Cursor, Read};
use std::path::Path;

use crate::input::InputError;

/// The longest line any text format may have, bytes.
pub const MAX_LINE: usize = 64 * 1024;

/// The UTF-8 byte-order mark, dropped from the start of a file's first line.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A text trace read line by line.
pub struct Lines {
    reader: Box<dyn BufRead>,
    buf: Vec<u8>,
    /// The file's name, as errors give it.
    pub file: String,
    /// The 1-based number of the line last returned (0 before the first).
    pub line: usize,
}

impl Lines {
    /// Open `path` for reading ([`open_trace`]: a compressed file is refused).
    pub fn open(path: &Path) -> Result<Lines, InputError> {
        let name = path.display().to_string();
        Ok(Lines::new(
            Box::new(BufReader::with_capacity(1 << 18, open_trace(path)?)),
            &name,
        ))
    }

    /// Read lines from any reader; `file` names it in errors. The reader's start is not
    /// checked for a compression: give one [`checked`] made where it may hold one.
    pub fn new(reader: Box<dyn BufRead>, file: &str) -> Lines {
        Lines {
            reader,
            buf: Vec::with_capacity(256),
            file: file.to_string(),
            line: 0,
        }
    }

    /// Lines from bytes in memory (tests, fuzzing).
    pub fn from_bytes(bytes: Vec<u8>, file: &str) -> Lines {
        Lines::new(Box::new(std::io::Cursor::new(bytes)), file)
    }

    /// The next line without its `\n` or `\r\n` (nor, on the first line, a UTF-8 byte-order
    /// mark) and where it is, or `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<(&[u8], Here<'_>)>, InputError> {
        self.buf.clear();
        self.line += 1;
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.error("", e.to_string())),
            };
            if avail.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                break;
            }
            match avail.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let take = i.min(MAX_LINE + 1 - self.buf.len().min(MAX_LINE + 1));
                    self.buf.extend_from_slice(&avail[..take]);
                    self.reader.consume(i + 1);
                    break;
                }
                None => {
                    let n = avail.len();
                    let take = n.min(MAX_LINE + 1 - self.buf.len().min(MAX_LINE + 1));
                    self.buf.extend_from_slice(&avail[..take]);
                    self.reader.consume(n);
                }
            }
            if self.buf.len() > MAX_LINE {
                return Err(self.error("", format!("line longer than {MAX_LINE} bytes")));
            }
        }
        if self.buf.len() > MAX_LINE {
            return Err(self.error("", format!("line longer than {MAX_LINE} bytes")));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        if self.line == 1 && self.buf.starts_with(BOM) {
            // A UTF-8 byte-order mark (editors on Windows write one) is not part of the
            // first field: left there, it made a record unreadable or a header of it.
            self.buf.drain(..BOM.len());
        }
        let this = &*self;
        Ok(Some((
            &this.buf,
            Here {
                file: &this.file,
                line: this.line,
            },
        )))
    }

    /// An error about the current line.
    pub fn error(&self, field: &'static str, reason: impl Into<String>) -> InputError {
        InputError::at_line(&self.file, self.line, field, reason)
    }
}

/// Where a line is: for errors while its text is borrowed.
#[derive(Clone, Copy, Debug)]
pub struct Here<'a> {
    /// The file's name.
    pub file: &'a str,
    /// The 1-based line number.
    pub line: usize,
}

impl Here<'_> {
    /// An error about this line.
    pub fn error(&self, field: &'static str, reason: impl Into<String>) -> InputError {
        InputError::at_line(self.file, self.line, field, reason)
    }
}

/// Parse one whitespace-separated field as `T`, or an error naming it.
pub(crate) fn field<T: std::str::FromStr>(
    file: &str,
    line: usize,
    name: &'static str,
    value: Option<&str>,
) -> Result<T, InputError> {
    let v = value.ok_or_else(|| InputError::at_line(file, line, name, "missing"))?;
    v.parse().map_err(|_| {
        InputError::at_line(
            file,
            line,
            name,
            format!("cannot parse {}", show(v.as_bytes())),
        )
    })
}

/// A compression format, told by its magic number. Traces are read uncompressed: read as
/// text, a compressed file failed at some line with a message that said nothing of why
/// (`msr.gz:2: 6 fields, expected 7`), and format detection said only that it could not tell
/// the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compression {
    /// Its name (`gzip`, `zstd` ...).
    pub name: &'static str,
    /// The command that decompresses a file of it, keeping the original.
    pub undo: &'static str,
    /// The command that writes a file of it decompressed to standard output (with `-c`).
    pub stream: &'static str,
}

impl Compression {
    /// The compression `head` (a file's first bytes) starts with, if any: gzip (RFC 1952's
    /// `1f 8b`), zstd (`28 b5 2f fd`), xz (`fd 37 7a 58 5a 00`), bzip2 (`BZh` and a block
    /// size digit) or an lz4 frame (`04 22 4d 18`).
    pub fn of(head: &[u8]) -> Option<Compression> {
        let c = |name, undo, stream| Some(Compression { name, undo, stream });
        if head.starts_with(b"\x1f\x8b") {
            c("gzip", "gzip -dk", "gzip -d")
        } else if head.starts_with(b"\x28\xb5\x2f\xfd") {
            c("zstd", "zstd -d", "zstd -d")
        } else if head.starts_with(b"\xfd7zXZ\x00") {
            c("xz", "xz -dk", "xz -d")
        } else if head.starts_with(b"BZh") && head.get(3).is_some_and(|d| (b'1'..=b'9').contains(d))
        {
            c("bzip2", "bzip2 -dk", "bzip2 -d")
        } else if head.starts_with(b"\x04\x22\x4d\x18") {
            c("lz4", "lz4 -d", "lz4 -d")
        } else {
            None
        }
    }

    /// The refusal of a file compressed so, with the way out.
    pub fn refusal(self) -> String {
        format!(
            "a {}-compressed file: traces are read uncompressed; decompress it first (`{} \
             FILE`), or stream it (`{} -c FILE | elevator replay - --format FORMAT`)",
            self.name, self.undo, self.stream
        )
    }
}

/// The bytes [`Compression::of`] needs to tell every compression it knows.
const MAGIC_BYTES: u64 = 8;

/// A trace's bytes whose start has been checked: the bytes read to check it, then the rest.
pub type Checked<R> = Chain<Cursor<Vec<u8>>, R>;

/// The one check of a trace's start: `input`'s first bytes are read, and a compressed trace
/// ([`Compression`]) is refused naming `file`, the compression and the command that
/// decompresses it. Every trace file is opened through it ([`open_trace`]: format detection,
/// the text readers, blktrace's per-CPU files), and `elevator replay -` passes its standard
/// input through it before keeping a byte, so a file and a stream are refused alike, by the
/// same words, before anything else reads them.
pub fn checked<R: Read>(mut input: R, file: &str) -> Result<Checked<R>, InputError> {
    let mut start = Vec::with_capacity(MAGIC_BYTES as usize);
    (&mut input)
        .take(MAGIC_BYTES)
        .read_to_end(&mut start)
        .map_err(|e| InputError::new(file, e.to_string()))?;
    if let Some(c) = Compression::of(&start) {
        return Err(InputError::new(file, c.refusal()));
    }
    Ok(Cursor::new(start).chain(input))
}

/// Open the trace file `path` for reading ([`crate::input::open`]), refused if it is
/// compressed ([`checked`]).
pub fn open_trace(path: &Path) -> Result<Checked<crate::input::Input>, InputError> {
    let name = path.display().to_string();
    let f = crate::input::open(path).map_err(|e| InputError::new(&name, e.to_string()))?;
    checked(f, &name)
}

/// Read the first `n` bytes of `path` (fewer if it is shorter), for format detection; a
/// compressed file is refused ([`open_trace`]).
pub fn head(path: &Path, n: usize) -> Result<Vec<u8>, InputError> {
    let name = path.display().to_string();
    let mut out = Vec::with_capacity(n);
    open_trace(path)?
        .take(n as u64)
        .read_to_end(&mut out)
        .map_err(|e| InputError::new(&name, e.to_string()))?;
    Ok(out)
}

/// Parse an unsigned decimal integer (no sign, no spaces), or `None`.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// Parse a non-negative decimal number with an optional fraction (`12`, `0.5`, `.015820`) into
/// whole units times `10^scale` (so `parse_fixed(b"1.25", 3)` is 1250), truncating extra
/// digits; `None` if malformed or too large.
pub fn parse_fixed(s: &[u8], scale: u32) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let whole = if int.is_empty() { 0 } else { parse_u64(int)? };
    let mut v = whole.checked_mul(10u64.checked_pow(scale)?)?;
    let mut unit = 10u64.pow(scale);
    for &b in frac {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        unit /= 10;
        v = v.checked_add(u64::from(d) * unit)?;
    }
    Some(v)
}

/// Split `line` at `sep` into at most `N` fields; returns how many there were (a count above
/// `N` means extra fields).
#[inline]
pub fn split_fields<'a, const N: usize>(line: &'a [u8], sep: u8, out: &mut [&'a [u8]; N]) -> usize {
    let mut n = 0;
    for f in line.split(|&b| b == sep) {
        if n < N {
            out[n] = f;
        }
        n += 1;
    }
    n
}

/// Trim ASCII spaces and tabs at both ends.
#[inline]
pub fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// The printable form of a field, for error messages (at most 40 characters).
pub fn show(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(&s[..s.len().min(40)]).into_owned();
    if s.len() > 40 {
        format!("{t:?}...")
    } else {
        format!("{t:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_exactly_or_not_at_all() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_fixed(b"1.25", 3), Some(1250));
        assert_eq!(parse_fixed(b".015820", 9), Some(15_820_000));
        assert_eq!(parse_fixed(b"7", 6), Some(7_000_000));
        assert_eq!(parse_fixed(b"0.1234567891", 9), Some(123_456_789));
        assert_eq!(parse_fixed(b".", 3), None);
        assert_eq!(parse_fixed(b"1.2x", 3), None);
        assert_eq!(parse_fixed(b"99999999999999999999", 9), None);
    }

    #[test]
    fn lines_are_numbered_crlf_stripped_and_capped() {
        let mut l = Lines::from_bytes(b"a\r\nb\n\nc".to_vec(), "t");
        let mut next = || l.next_line().unwrap().map(|(t, at)| (t.to_vec(), at.line));
        assert_eq!(next(), Some((b"a".to_vec(), 1)));
        assert_eq!(next(), Some((b"b".to_vec(), 2)));
        assert_eq!(next(), Some((b"".to_vec(), 3)));
        assert_eq!(next(), Some((b"c".to_vec(), 4)));
        assert_eq!(next(), None);
        let mut long = Lines::from_bytes(vec![b'x'; MAX_LINE + 10], "big");
        let e = long.next_line().unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert!(e.to_string().starts_with("big:1: line longer"), "{e}");
    }
}
