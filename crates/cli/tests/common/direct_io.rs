//! Whether a directory's filesystem takes O_DIRECT (real-I/O tests need it).

use std::path::Path;

/// O_DIRECT is not available everywhere (tmpfs): false, with a printed notice, where `dir`
/// refuses it.
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
