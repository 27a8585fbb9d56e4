//! fio's `ramp_time`: I/O that completes within the ramp is left out of the figures.

mod common;

use std::time::Duration;

use common::{noop, real, Walk};
use elevator_core::Op;
use elevator_real::{run, MemBackend, RunOptions};

fn reads_counted(ramp: Duration) -> u64 {
    let mut backend = MemBackend::new(1 << 20, 32);
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 64, 4), 0)];
    let opts = RunOptions {
        ramp,
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), jobs, &opts).unwrap();
    report.jobs[0].metrics.read.ios
}

#[test]
fn io_completed_within_the_ramp_is_not_counted() {
    assert_eq!(reads_counted(Duration::ZERO), 64);
    // The in-memory device finishes all 64 reads long before an hour has passed.
    assert_eq!(reads_counted(Duration::from_secs(3600)), 0);
}
