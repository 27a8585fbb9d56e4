//! Bad scenario files: an error naming file, line and field, a non-zero exit, no panic.

use std::process::Command;

fn sim(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["sim"])
        .arg(&p)
        .args(["--sched", "deadline"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code().unwrap_or(-1), err)
}

const GOOD_HEAD: &str = "drive = \"laptop-4200\"\nseed = 1\n";

#[test]
fn unknown_job_field_is_named_with_its_line() {
    let (code, err) = sim(&format!(
        "{GOOD_HEAD}\n[[job]]\nname = \"r\"\nkind = \"fio\"\nbs = 4096\nblocksize = 8\n"
    ));
    assert_ne!(code, 0);
    assert!(err.contains("bad.toml:8"), "{err}");
    assert!(err.contains("blocksize"), "{err}");
}

#[test]
fn unknown_drive_is_named_with_its_line() {
    let (code, err) = sim("seed = 1\ndrive = \"floppy\"\n[[job]]\nname = \"r\"\nkind = \"fio\"\n");
    assert_ne!(code, 0);
    assert!(err.contains("bad.toml:2"), "{err}");
    assert!(err.contains("`drive`"), "{err}");
}

#[test]
fn out_of_range_tunable_is_named_with_its_line() {
    let (code, err) = sim(&format!(
        "{GOOD_HEAD}[tunables.deadline]\nfifo_batch = -3\n[[job]]\nname = \"r\"\nkind = \"fio\"\n"
    ));
    assert_ne!(code, 0);
    assert!(err.contains("bad.toml:4"), "{err}");
    assert!(err.contains("fifo_batch"), "{err}");
}

#[test]
fn bad_prio_is_named_with_its_line() {
    let (code, err) = sim(&format!(
        "{GOOD_HEAD}[[job]]\nname = \"r\"\nkind = \"fio\"\nprio = \"urgent\"\n"
    ));
    assert_ne!(code, 0);
    assert!(err.contains("bad.toml:6"), "{err}");
    assert!(err.contains("prio"), "{err}");
}

#[test]
fn toml_syntax_error_is_located() {
    let (code, err) = sim(&format!("{GOOD_HEAD}[[job]\nname = \"r\"\n"));
    assert_ne!(code, 0);
    assert!(err.contains("bad.toml:3"), "{err}");
}
