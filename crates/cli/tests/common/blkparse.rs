//! Debian's blkparse, for round trips of the blktraces we write.

use std::path::PathBuf;

/// blkparse's path, or `None` with a printed notice where it is not installed (.ci/run
/// installs it where it can).
pub fn blkparse() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("blkparse"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!("skipped: blkparse is absent (apt-get install blktrace)");
    }
    found
}
