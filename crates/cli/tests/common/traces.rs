//! Small traces the hostile tests replay.

use std::path::{Path, PathBuf};

/// `dir/t.trace`: a DiskSim ASCII trace of `n` reads and writes, 1 ms apart (a fraction in
/// every time, so its format is told from its first line).
pub fn disksim_trace(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join("t.trace");
    let text: String = (0..n)
        .map(|i| format!("{}.000 0 {} 8 {}\n", i, (i * 977) % 1_000_000, i % 2))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}
