//! fio job files (our subset) on arbitrary bytes: a job file or an error, never a panic; each
//! job's first clones' workloads (`offset_increment`) computed on a 1 GiB target, built, and
//! driven for up to 2,000 steps with each I/O completing 10 us after it is issued (the
//! batches, reaps, quiesces, flushes and sizes of `FioJob::poll`).
#![no_main]

use elevator_core::Nanos;
use elevator_workload::jobs::FioJob;
use elevator_workload::{Action, BuildEnv, Job};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = elevator_workload::fio_file::parse_bytes(std::path::Path::new("fuzz.fio"), data)
    else {
        return;
    };
    for def in &file.jobs {
        for clone in 0..def.numjobs.min(4) {
            let Some(config) = def.clone_config(clone, 1 << 30) else {
                continue;
            };
            let Ok(mut job) = FioJob::new(config, &BuildEnv::new((1 << 30) / 512, 1, "f")) else {
                continue;
            };
            drive(&mut job);
        }
    }
});

fn drive(job: &mut FioJob) {
    let mut now = Nanos::ZERO;
    let mut in_flight: Vec<u64> = Vec::new();
    for _ in 0..2_000 {
        match job.poll(now) {
            Action::Issue(io) => in_flight.push(io.tag),
            Action::Batch(ios) => in_flight.extend(ios.iter().map(|io| io.tag)),
            Action::Exit { .. } => {}
            Action::Think { until } => now = until.max(now),
            Action::Wait => {
                now = now + Nanos::from_us(10);
                // Waiting on nothing, the job could never be woken: a deadlock.
                assert!(!in_flight.is_empty(), "the job waits with nothing in flight");
                for tag in in_flight.drain(..) {
                    job.complete(tag, now);
                }
            }
            Action::Done => return,
        }
        let mut reaped = Vec::new();
        job.take_reaped(&mut reaped);
    }
}
