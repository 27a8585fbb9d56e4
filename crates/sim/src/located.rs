//! The one shape of every input error in this crate: `file:line: field `x`: message`.

use std::fmt;

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
        write!(f, ": field `{field}`")?;
    }
    write!(f, ": {message}")
}
