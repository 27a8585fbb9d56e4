//! Trace readers: block traces turned into records, with errors that name the file, the line
//! (or, for binary traces, the byte offset) and the field at fault.
//!
//! Two families live here:
//! - whole-file readers for the small traces scenarios embed ([`disksim_ascii`] as a parsed
//!   table, [`s_startup`]);
//! - streaming readers behind [`open`] (module [`stream`]): every format `elevator replay`
//!   accepts, each reading a bounded window of its file, so a 10 GB trace is never held in
//!   memory. [`TraceFormat`] names them and [`detect`] tells them apart by their first bytes.
//!   Each yields its records until the end of its file or its first error, then nothing more
//!   (one rule, in the private module `until_error`).

pub mod alibaba;
pub mod blkparse;
pub mod blktrace;
pub mod blktrace_out;
pub mod csv;
pub mod disksim_ascii;
pub mod fio_iolog;
pub mod ftrace;
pub mod lines;
pub mod msr;
pub mod s_startup;
pub mod spc;
pub mod stream;
pub mod tencent;
mod until_error;

pub use stream::{detect, open, OpenOptions, RecordSource, TraceFormat, TraceRecord};

use std::fmt;
use std::path::Path;

/// A trace could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceError {
    /// The file (as given), or `<input>` for text parsed from memory.
    pub file: String,
    /// 1-based line number; 0 when the error is about the whole file or a binary record.
    pub line: usize,
    /// For binary traces: the byte offset of the record at fault.
    pub byte: Option<u64>,
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
            byte: None,
            field,
            reason: reason.into(),
        }
    }

    /// An error about the binary record at byte offset `byte` of `file`.
    pub(crate) fn at_byte(
        file: &str,
        byte: u64,
        field: &'static str,
        reason: impl Into<String>,
    ) -> TraceError {
        TraceError {
            byte: Some(byte),
            ..TraceError::new(file, 0, field, reason)
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A reason quotes input at most in short excerpts; cap it anyway.
        let reason = match self.reason.char_indices().nth(600) {
            Some((i, _)) => format!("{}...", &self.reason[..i]),
            None => self.reason.clone(),
        };
        if let Some(b) = self.byte {
            return match self.field {
                "" => write!(f, "{}: byte {}: {}", self.file, b, reason),
                field => write!(
                    f,
                    "{}: byte {}: field `{}`: {}",
                    self.file, b, field, reason
                ),
            };
        }
        match (self.line, self.field) {
            (0, _) => write!(f, "{}: {}", self.file, reason),
            (l, "") => write!(f, "{}:{}: {}", self.file, l, reason),
            (l, field) => write!(f, "{}:{}: field `{}`: {}", self.file, l, field, reason),
        }
    }
}

impl std::error::Error for TraceError {}

/// Parse one whitespace-separated field as `T`, or an error naming it.
pub(crate) fn field<T: std::str::FromStr>(
    file: &str,
    line: usize,
    name: &'static str,
    value: Option<&str>,
) -> Result<T, TraceError> {
    let v = value.ok_or_else(|| TraceError::new(file, line, name, "missing"))?;
    v.parse().map_err(|_| {
        TraceError::new(
            file,
            line,
            name,
            format!("cannot parse {}", lines::show(v.as_bytes())),
        )
    })
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
