//! The DiskSim importer (`.parv` parameter files, which name their `.model`, `.diskspecs` and
//! `.seek` companions) on arbitrary text written to a scratch file, and the seek-curve and
//! validation-trace readers on the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("elevator-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let parv = dir.join("fuzz.parv");
    if std::fs::write(&parv, data).is_err() {
        return;
    }
    let _ = elevator_sim::disksim::import(&parv);
    let _ = elevator_sim::disksim::read_seek_file(&parv);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = elevator_sim::validate::parse_trace(text, &parv);
    }
});
