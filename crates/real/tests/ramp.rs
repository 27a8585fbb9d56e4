//! fio's `ramp_time`: I/O that completes within the ramp is left out of the figures; the
//! request log (`RunOptions::request_log`).

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

#[test]
fn request_log_records_every_request_with_its_times_in_order() {
    let mut backend = MemBackend::new(1 << 20, 32);
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 16, 2), 0)];
    let opts = RunOptions {
        request_log: true,
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), jobs, &opts).unwrap();
    assert_eq!(report.requests.len(), 16);
    for r in &report.requests {
        assert!(
            r.inserted <= r.dispatched && r.dispatched <= r.completed,
            "{r:?}"
        );
        assert_eq!((r.job, r.op, r.sectors), (0, Op::Read, 8));
    }
    let csv = elevator_real::report::request_log_csv(&report);
    assert_eq!(csv.lines().count(), 17);
    assert!(csv.lines().nth(1).unwrap().starts_with("r,Read,"), "{csv}");
    // Off by default.
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 16, 2), 0)];
    let report = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap();
    assert!(report.requests.is_empty());
}
