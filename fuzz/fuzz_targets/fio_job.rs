//! fio job files (our subset) on arbitrary bytes: a job file or an error, never a panic; each
//! job's first clones' workloads (`offset_increment`) computed on a 1 GiB target.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = elevator_workload::fio_file::parse_bytes(std::path::Path::new("fuzz.fio"), data)
    else {
        return;
    };
    for def in &file.jobs {
        for clone in 0..def.numjobs.min(4) {
            let _ = def.clone_config(clone, 1 << 30);
        }
    }
});
