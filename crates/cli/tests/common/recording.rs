//! Kernel recordings for tests: a copy of one of the corpus's, edited.

use std::path::{Path, PathBuf};

/// A copy of the corpus's `batches/mq-deadline` recording in `dir` (as
/// `dir/batches/mq-deadline`), its meta.json changed by `edit`.
pub fn recording(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/kernel/batches/mq-deadline");
    let rec = dir.join("batches/mq-deadline");
    std::fs::create_dir_all(&rec).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        std::fs::copy(e.path(), rec.join(e.file_name())).unwrap();
    }
    let meta = rec.join("meta.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    edit(&mut m);
    std::fs::write(&meta, m.to_string()).unwrap();
    rec
}
