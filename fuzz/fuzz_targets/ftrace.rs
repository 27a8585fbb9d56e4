//! The tracefs reader and the request assembly (with the decisions and the arrival order
//! derived from it) on arbitrary bytes: requests or an error, never a panic.
#![no_main]

use elevator_workload::traces::ftrace::{FtraceReader, KernelTrace};
use elevator_workload::traces::lines::Lines;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let events = FtraceReader::new(Lines::from_bytes(data.to_vec(), "fuzz")).take(10_000);
    if let Ok(t) = KernelTrace::assemble(events, None) {
        let _ = t.decisions();
        let _ = t.arrivals();
    }
});
