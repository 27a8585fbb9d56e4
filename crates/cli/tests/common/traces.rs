//! Small traces the hostile tests replay.

use std::io::Write;

use std::path::{Path, PathBuf};

/// `dir/t.trace`: a DiskSim ASCII trace of `n` reads and writes, 1 ms apart (a fraction in
/// every time, so its format is told from its first line).
// The binaries that write their own request mix (`disksim_4k_trace`) do not use it.
#[allow(dead_code)]
pub fn disksim_trace(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join("t.trace");
    let text: String = (0..n)
        .map(|i| format!("{}.000 0 {} 8 {}\n", i, (i * 977) % 1_000_000, i % 2))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

/// `path`: a DiskSim ASCII trace of `n` 4 KiB requests, 1 ms apart (writes when `write`), 7919
/// blocks apart modulo the first `blocks` 4 KiB blocks.
// The binaries that replay `disksim_trace`'s mix do not use it.
#[allow(dead_code)]
pub fn disksim_4k_trace(path: &Path, n: u64, write: bool, blocks: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let flag = if write { 0 } else { 1 };
    for i in 0..n {
        writeln!(f, "{i}.000 0 {} 8 {flag}", (i * 7919) % blocks * 8).unwrap();
    }
    f.flush().unwrap();
}
