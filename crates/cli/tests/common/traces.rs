//! Small traces the hostile tests replay.

use std::io::Write;

use std::path::{Path, PathBuf};

/// `dir/t.trace`: a DiskSim ASCII trace of `n` reads and writes, 1 ms apart (a fraction in
/// every time, so its format is told from its first line).
#[allow(dead_code)] // not every test file replays a DiskSim trace
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

/// Every format [`trace_of`] writes (`blkparse-dispatch`: blkparse's dispatch view).
#[allow(dead_code)] // not every test file replays every format
pub const FORMATS: [&str; 9] = [
    "msr",
    "spc",
    "alibaba",
    "tencent",
    "disksim",
    "mqsim",
    "fio-iolog",
    "blkparse",
    "blkparse-dispatch",
];

/// `replay`'s `--format` and `--view` for one of [`FORMATS`].
#[allow(dead_code)] // not every test file replays every format
pub fn format_and_view(format: &str) -> (&str, &str) {
    match format {
        "blkparse-dispatch" => ("blkparse", "dispatch"),
        f => (f, "queue"),
    }
}

/// `n` records of one of [`FORMATS`], one per line after fio's header, 1 ms apart, 4 KiB
/// reads walking the disk.
#[allow(dead_code)] // not every test file replays every format
pub fn trace_of(format: &str, n: usize) -> String {
    let mut t = String::with_capacity(n * 48);
    if format == "fio-iolog" {
        t.push_str("fio version 2 iolog\n/dev/x add\n/dev/x open\n");
    }
    for i in 0..n as u64 {
        let line = match format {
            "msr" => format!(
                "{},web,{},Read,{},4096,100\n",
                128_166_372_000_000_000 + i * 10_000,
                i % 7,
                i * 8192
            ),
            "spc" => format!("{},{},4096,R,{}.{:03}\n", i % 3, i * 16, i / 1000, i % 1000),
            "alibaba" => format!(
                "{},R,{},4096,{}\n",
                i % 5,
                i * 8192,
                1_577_808_000_000_000 + i * 1000
            ),
            "tencent" => format!("{},{},8,0,{}\n", 1_538_323_200 + i / 1000, i * 16, i % 9),
            "disksim" => format!("{}.0 0 {} 8 1\n", i, i * 16),
            "mqsim" => format!("{} 0 {} 8 1\n", 2_000_000 + i * 1_000_000, i * 16),
            "fio-iolog" => format!("/dev/x read {} 4096\n", i * 8192),
            "blkparse" => format!(
                "  8,0    0 {:>8} {:>5}.{:09}  {:>4}  Q   R {} + 8 [p{}]\n",
                i + 1,
                i / 1000,
                (i % 1000) * 1_000_000,
                100 + i % 50,
                i * 16,
                i % 50
            ),
            "blkparse-dispatch" => format!(
                "  8,0    0 {:>8} {:>5}.{:09}  {:>4}  D   R {} + 8 [p]\n",
                i + 1,
                i / 1000,
                (i % 1000) * 1_000_000,
                100,
                i * 16
            ),
            other => panic!("{other}"),
        };
        t.push_str(&line);
    }
    t
}
