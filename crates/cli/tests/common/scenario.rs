//! Scenario files the tests write.

use std::path::Path;

use super::file::write;

/// `dir/small.toml`: one fio job of `number_ios` random 4 KiB reads on the Cheetah 9LP; its
/// path.
pub fn small_scenario(dir: &Path, number_ios: u32) -> String {
    write(
        dir,
        "small.toml",
        format!(
            "name = \"small\"\ndrive = \"cheetah9lp\"\n\n[[job]]\nkind = \"fio\"\nname = \"r\"\n\
             rw = \"randread\"\nbs = 4096\nnumber_ios = {number_ios}\n"
        ),
    )
}
