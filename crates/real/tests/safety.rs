//! The refusals, on regular files (block devices need root; their checks are unit-tested on
//! buffers in src/safety.rs).

use std::io::Write;

use elevator_real::target::{self, OpenSpec, TargetError};

fn spec(writes: bool, allow: bool, need: u64) -> OpenSpec {
    OpenSpec {
        writes,
        allow_overwrite: allow,
        need_bytes: need,
        ..OpenSpec::default()
    }
}

#[test]
fn writing_over_a_non_empty_file_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("precious");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&[1u8; 8192])
        .unwrap();
    let err = target::open(&path, spec(true, false, 8192)).unwrap_err();
    assert!(matches!(err, TargetError::Refused(_)), "{err}");
    assert!(
        err.to_string().contains("exists and holds 8192 bytes"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), vec![1u8; 8192]);
    // Reading it is fine; writing with --allow-overwrite is too.
    match target::open(&path, spec(false, false, 8192)) {
        Ok(t) => assert!(!t.laid_out),
        Err(e) => eprintln!("skipping the O_DIRECT part: {e}"),
    }
    if let Err(e) = target::open(&path, spec(true, true, 8192)) {
        eprintln!("skipping the O_DIRECT part: {e}");
    }
}

#[test]
fn a_new_file_is_created_and_laid_out_to_the_size_the_jobs_need() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new");
    match target::open(&path, spec(false, false, 3 << 20)) {
        Ok(t) => {
            assert!(t.laid_out);
            assert_eq!(t.size, 3 << 20);
            let data = std::fs::read(&path).unwrap();
            assert_eq!(data.len(), 3 << 20);
            assert!(data.iter().any(|&b| b != 0), "laid out, not a hole");
        }
        Err(e) => eprintln!("skipping: {e}"),
    }
}

#[test]
fn a_file_too_small_for_the_jobs_is_an_error_naming_both_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small");
    std::fs::write(&path, [0u8; 4096]).unwrap();
    let err = target::open(&path, spec(false, false, 8192)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("holds 4096 bytes; the jobs need 8192"),
        "{msg}"
    );
}

#[test]
fn a_directory_is_not_a_target() {
    let dir = tempfile::tempdir().unwrap();
    let err = target::open(dir.path(), spec(false, false, 4096)).unwrap_err();
    assert!(
        err.to_string()
            .contains("not a regular file or a block device"),
        "{err}"
    );
}
