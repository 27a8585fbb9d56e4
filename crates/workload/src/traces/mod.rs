//! Trace readers: block traces turned into records ([`record`]), with errors that name the
//! file, the line (or, for binary traces, the byte offset) and the field at fault
//! ([`InputError`](crate::InputError)).
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
pub mod by_time;
pub mod csv;
pub mod disksim_ascii;
pub mod duplicates;
pub mod fio_iolog;
pub mod ftrace;
pub mod kernel_limits;
pub mod lines;
pub mod msr;
pub mod record;
pub mod s_startup;
pub mod spc;
pub mod stream;
pub mod tencent;
mod until_error;

pub use record::{RecordAt, RecordSource, TraceRecord};
pub use stream::{detect, open, undetected, OpenOptions, TraceFormat};

use std::path::Path;

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
