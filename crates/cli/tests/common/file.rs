//! Input files the tests write.

use std::path::Path;

/// Write `contents` to `dir/name`; its path, as an argument of `elevator`.
pub fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p.to_str().unwrap().to_string()
}
