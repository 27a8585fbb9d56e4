//! The one shape of every input error in this crate: `file:line: field `x`: message`; and
//! the one bounded way to read a spec file.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The largest scenario or drive spec file read, bytes: `/dev/zero` or a 1 GB sparse file
/// given as a spec is refused after reading this much.
pub const MAX_SPEC_BYTES: u64 = 4 << 20;

/// The text of the spec file at `path`, read up to [`MAX_SPEC_BYTES`]; the error says why not
/// (without the path, which the caller's error names). A UTF-8 byte-order mark is skipped.
pub(crate) fn read_spec(path: &Path) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SPEC_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(format!(
            "larger than {} MiB: not a spec file",
            MAX_SPEC_BYTES >> 20
        ));
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    match std::str::from_utf8(body) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => {
            let at = e.valid_up_to();
            let line = body[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(format!("line {line}: not UTF-8 text (byte offset {at})"))
        }
    }
}

/// Write `file[:line][: field `field`]: message`; an empty `field` is left out.
pub(crate) fn write_located(
    f: &mut fmt::Formatter<'_>,
    file: impl fmt::Display,
    line: Option<usize>,
    field: &str,
    message: &str,
) -> fmt::Result {
    write!(f, "{file}")?;
    if let Some(l) = line {
        write!(f, ":{l}")?;
    }
    if !field.is_empty() {
        write!(f, ": field `{}`", capped(field, 80))?;
    }
    write!(f, ": {}", capped(message, 600))
}

/// At most `n` characters of `s` (then `...`): an error quotes input, and input can be huge.
fn capped(s: &str, n: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]).into(),
        None => s.into(),
    }
}
