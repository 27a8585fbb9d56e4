//! fio job files (our subset) on arbitrary bytes: a job file or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = elevator_workload::fio_file::parse_bytes(std::path::Path::new("fuzz.fio"), data);
});
