//! The executor polls jobs as fio's independent threads would issue, never by their place in
//! the job file: jobs started together in a seeded order, jobs woken by completions in the
//! order of those completions.

mod common;

use common::{real, Walk};
use elevator_core::{Dispatch, Nanos, Op, Request, Scheduler, TunableError};
use elevator_real::{run, MemBackend, RunOptions};

const MIB: usize = 1 << 20;

/// Records which job (by the first sector of its region) each inserted request came from, and
/// dispatches last-in first-out.
#[derive(Default)]
struct Lifo {
    q: Vec<Request>,
    inserted: Vec<u64>,
}

impl Scheduler for Lifo {
    fn name(&self) -> &'static str {
        "lifo"
    }
    fn insert(&mut self, rq: Request, _now: Nanos) {
        self.inserted.push(rq.sector / 1024);
        self.q.push(rq);
    }
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        self.q.pop().map_or(Dispatch::Empty, Dispatch::Request)
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {}
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
        Err(TunableError::Unknown {
            scheduler: "lifo".to_string(),
            name: name.to_string(),
        })
    }
}

/// Two dependent jobs, "a" first in the file (region from sector 0), "b" second (from sector
/// 1024), two I/Os each; returns the job of each insert in order (0 = a, 1 = b).
fn insert_order(seed: u64) -> Vec<u64> {
    let mut backend = MemBackend::new(MIB, 32);
    let jobs = vec![
        real("a", Walk::new(Op::Read, 0, 2, 1), 0),
        real("b", Walk::new(Op::Read, 1024, 2, 1), 0),
    ];
    let mut sched = Lifo::default();
    let opts = RunOptions {
        seed,
        ..Default::default()
    };
    run(&mut backend, &mut sched, jobs, &opts).unwrap();
    sched.inserted
}

#[test]
fn jobs_started_together_are_not_polled_in_file_order() {
    let firsts: Vec<u64> = (0..32).map(|seed| insert_order(seed)[0]).collect();
    assert!(
        firsts.contains(&0) && firsts.contains(&1),
        "over 32 seeds the first request always came from job {}: file order decides",
        firsts[0]
    );
}

#[test]
fn job_order_is_reproducible_for_a_seed() {
    for seed in 0..8 {
        assert_eq!(insert_order(seed), insert_order(seed), "seed {seed}");
    }
}

#[test]
fn jobs_woken_by_completions_issue_in_completion_order() {
    // Each job's I/O is dispatched as soon as the job has issued it (a submitter runs the
    // hardware queue in the kernel), the in-memory device completes in submission order, so
    // the job that issued first (which the seed decides) is woken first and must issue its next
    // I/O first, whatever its place in the file.
    let mut firsts = Vec::new();
    for seed in 0..16 {
        let order = insert_order(seed);
        assert_eq!(order.len(), 4, "seed {seed}: {order:?}");
        assert_eq!(
            (order[2], order[3]),
            (order[0], order[1]),
            "seed {seed}: inserts {order:?}"
        );
        firsts.push(order[0]);
    }
    assert!(firsts.contains(&0) && firsts.contains(&1), "{firsts:?}");
}
