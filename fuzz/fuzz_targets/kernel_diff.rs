//! The kernel oracle's replay on arbitrary tracefs text: the trace assembled, then replayed
//! into each of our four policies the kernel has (none, mq-deadline, kyber, bfq) and
//! compared; a diff or an error, never a panic. The first byte picks the scheduler (low two
//! bits) and the hardware queue depth (the rest, 1 to 64); the remainder is the trace.
#![no_main]

use elevator_workload::kernel_diff::{diff, DiffOptions};
use elevator_workload::traces::ftrace::{FtraceReader, KernelTrace, RecordingMeta};
use elevator_workload::traces::lines::Lines;
use libfuzzer_sys::fuzz_target;

const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "kyber", "bfq"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let mut meta = RecordingMeta::default();
    meta.scheduler = SCHEDULERS[usize::from(pick & 3)].to_string();
    meta.device.major = 7;
    meta.device.hw_queue_depth = Some(u32::from(pick >> 2) + 1);
    let events = FtraceReader::new(Lines::from_bytes(text.to_vec(), "fuzz")).take(2_000);
    let Ok(trace) = KernelTrace::assemble(events, Some(meta.dev())) else {
        return;
    };
    let _ = diff(&trace, &meta, &DiffOptions::default());
});
