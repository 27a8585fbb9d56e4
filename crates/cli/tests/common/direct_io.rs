//! Whether a directory's filesystem takes O_DIRECT (real-I/O tests need it).

use std::path::Path;

/// O_DIRECT is not available everywhere (tmpfs): false, with a printed notice, where `dir`
/// refuses it.
// The binaries that only need a scratch directory on disk do not probe O_DIRECT.
#[allow(dead_code)]
pub fn direct_io_works(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(dir.join("probe"))
        .is_ok();
    if !ok {
        eprintln!("skipping: {} does not support O_DIRECT", dir.display());
    }
    ok
}

/// A scratch directory under cargo's target directory, on disk: calibrate refuses a target
/// served from memory (tmpfs, ramfs: `elevator_real::fidelity`), and `/tmp` is tmpfs on many
/// systems.
// The binaries that probe O_DIRECT in a directory of their own do not use it.
#[allow(dead_code)]
pub fn on_disk_tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}
