//! The one error of the crate.

use std::fmt;

use elevator_workload::input::{shown_message, shown_name, InputError};

/// What went wrong: bad input in a file (with its file, line and field), a bad argument, or
/// a result file that could not be read or written.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A scenario, job file, trace or drive spec is wrong: file, position, field, message.
    Input(InputError),
    /// An argument is wrong: which one (`sweep seed`, `sched`, `shard` ...) and why.
    Arg {
        /// The argument, as the CLI or the Python API names it.
        arg: String,
        /// What is wrong.
        message: String,
    },
    /// A result file could not be read or written.
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// An [`Error::Arg`].
    pub fn arg(arg: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Arg {
            arg: arg.into(),
            message: message.into(),
        }
    }

    /// An [`Error::Io`].
    pub fn io(path: impl AsRef<std::path::Path>, message: impl fmt::Display) -> Error {
        Error::Io {
            path: path.as_ref().display().to_string(),
            message: message.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(e) => write!(f, "{e}"),
            // Both quote what they were given, which can be any length (a 60 KB scheduler
            // name or path given to the Python API): shown as an InputError's parts are.
            Error::Arg { arg, message } => {
                write!(f, "{}: {}", shown_name(arg), shown_message(message))
            }
            Error::Io { path, message } => {
                write!(f, "{}: {}", shown_name(path), shown_message(message))
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<InputError> for Error {
    fn from(e: InputError) -> Error {
        Error::Input(e)
    }
}
