//! Trace readers: text block traces turned into records, with errors that name the file, the
//! line and the field at fault.

pub mod disksim_ascii;
pub mod s_startup;

use std::fmt;
use std::path::Path;

/// A trace could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceError {
    /// The file (as given), or `<input>` for text parsed from memory.
    pub file: String,
    /// 1-based line number; 0 when the error is about the whole file.
    pub line: usize,
    /// The field at fault (`"sector"`, `"action"` ...), or `""` for the whole line or file.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl TraceError {
    pub(crate) fn new(
        file: &str,
        line: usize,
        field: &'static str,
        reason: impl Into<String>,
    ) -> TraceError {
        TraceError {
            file: file.to_string(),
            line,
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.field) {
            (0, _) => write!(f, "{}: {}", self.file, self.reason),
            (l, "") => write!(f, "{}:{}: {}", self.file, l, self.reason),
            (l, field) => write!(f, "{}:{}: field `{}`: {}", self.file, l, field, self.reason),
        }
    }
}

impl std::error::Error for TraceError {}

/// Read a whole trace file as text, mapping I/O errors to a [`TraceError`] naming the file.
pub(crate) fn read_text(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path)
        .map_err(|e| TraceError::new(&path.display().to_string(), 0, "", e.to_string()))
}

/// Parse one whitespace-separated field as `T`, or an error naming it.
pub(crate) fn field<T: std::str::FromStr>(
    file: &str,
    line: usize,
    name: &'static str,
    value: Option<&str>,
) -> Result<T, TraceError> {
    let v = value.ok_or_else(|| TraceError::new(file, line, name, "missing"))?;
    v.parse()
        .map_err(|_| TraceError::new(file, line, name, format!("cannot parse {v:?}")))
}

/// The directory holding the project's shared data (`shared/data`), if present: the
/// `ELEVATOR_DATA` environment variable, else `../shared/data` from the workspace root, else
/// `/work/shared/data`. Tests use it to find the traces, and skip when it is absent.
pub fn shared_data_dir() -> Option<std::path::PathBuf> {
    let candidates = [
        std::env::var_os("ELEVATOR_DATA").map(std::path::PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")),
        Some(std::path::PathBuf::from("/work/shared/data")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_dir())
}
