//! Round 64: the project as a new user meets it (README's quick start and commands, every
//! file-reading command given a malformed file). Every run is bounded in time.

mod common {
    pub mod bounded;
    pub mod child;
    pub mod file;
}
use common::bounded::{clean_error, elevator_within, MINUTE};
use common::file::write;

/// A blkparse text trace whose last line was cut right after its RWBS (`Q R`, blkparse
/// killed mid-line) was read as an event of no sectors, skipped ("1 skipped"), and the replay
/// exited 0 as if the trace were whole. blkparse's `process_default` (blkparse_fmt.c) ends
/// every event it prints with a sector range, `[command]` or `(...)`: now refused, naming the
/// file, the line and the field.
#[test]
fn replay_refuses_a_blkparse_line_cut_after_its_rwbs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(
        dir.path(),
        "cut.txt",
        "  8,0    0        1     0.000000000  1234  Q   R 1000 + 8 [fio]\n\
         \x20 8,0    0        2     0.000001000  1234  Q   R\n\
         \x20 8,0    0        3     0.000002000  1234  Q   R 1016 + 8 [fio]\n",
    );
    let out = elevator_within(&["replay", &trace, "--sched", "none"], MINUTE);
    clean_error(&out, &["cut.txt:2", "field `sector`", "cut short"]);
    // A flush, which carries no sectors, still reads.
    let flush = write(
        dir.path(),
        "flush.txt",
        "  8,0    0        1     0.000000000  1234  Q   R 1000 + 8 [fio]\n\
         \x20 8,0    0        2     0.000001000  1234  Q FWS [kworker/0:1]\n",
    );
    let out = elevator_within(&["replay", &flush, "--sched", "none"], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
}
