//! fio job files (our subset) on arbitrary text: a job file or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = elevator_workload::fio_file::parse(std::path::Path::new("fuzz.fio"), text);
    }
});
