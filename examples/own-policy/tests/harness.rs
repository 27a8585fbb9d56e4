//! elevator-core's test harness on a policy of our own: it holds every request dispatched
//! and completed exactly once, and its outcome bounds how long any request waited. Each
//! check is shown catching a policy broken on purpose.

use elevator_core::harness::{rq, Harness, Outcome};
use elevator_core::{Dispatch, IoClass, Nanos, Request, Scheduler, Settings, TunableError};
use elevator_own_policy::ForegroundFirst;

/// A foreground read every 1 ms for 200 ms on a device that takes 1.5 ms for each: the
/// foreground never goes quiet (its own backlog grows to 100 ms). Eight background reads
/// arrive at 10 ms, none adjacent to another (no merges).
fn busy_foreground() -> Vec<Request> {
    let mut v: Vec<Request> = (0..200)
        .map(|i| rq(i, 1).sector(i * 64).at(Nanos::from_ms(i)).build())
        .collect();
    v.extend((0..8).map(|i| {
        rq(1000 + i, 2)
            .sector((1 << 20) + i * 64)
            .prio(IoClass::Idle, 7)
            .at(Nanos::from_ms(10))
            .build()
    }));
    v
}

fn is_background(r: &Request) -> bool {
    r.prio.class == IoClass::Idle
}

fn run<S: Scheduler>(sched: S, reqs: Vec<Request>) -> Outcome {
    let mut h = Harness::new(sched, 1, |_| Nanos::from_us(1500));
    for r in reqs {
        h.submit(r);
    }
    h.run()
}

fn with_max_wait(ms: i64) -> ForegroundFirst {
    let mut s = Settings::new();
    s.set("max_wait_ms", ms);
    ForegroundFirst::from_settings(&s).unwrap()
}

/// No background request waits much past `max_wait_ms`: once it expires it goes next, after
/// the one request at the device (1.5 ms) and the expired ones before it.
#[test]
fn the_aging_bound_holds_under_a_foreground_that_never_goes_quiet() {
    let out = run(with_max_wait(50), busy_foreground());
    let (_, wait) = out.longest_wait(is_background).unwrap();
    let bound = Nanos::from_ms(50) + Nanos::from_us(1500 * 8);
    assert!(wait <= bound, "waited {wait:?}, bound {bound:?}");
}

/// The same check catches a policy without aging: the background waits for the whole
/// foreground stream.
#[test]
fn the_starvation_check_catches_a_policy_without_aging() {
    let out = run(with_max_wait(600_000), busy_foreground());
    let (_, wait) = out.longest_wait(is_background).unwrap();
    assert!(
        wait > Nanos::from_ms(200),
        "starved until the foreground ended: {wait:?}"
    );
}

/// Our policy with a bug put in: every `every`-th dispatch hands out the previous request
/// again (`Twice`), or every `every`-th insert is dropped (`Loses`).
enum Bug {
    Twice,
    Loses,
}

struct Broken {
    inner: ForegroundFirst,
    bug: Bug,
    every: usize,
    calls: usize,
    last: Option<Request>,
}

impl Broken {
    fn new(bug: Bug) -> Broken {
        Broken {
            inner: ForegroundFirst::new(),
            bug,
            every: 10,
            calls: 0,
            last: None,
        }
    }
}

impl Scheduler for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.calls += 1;
        if matches!(self.bug, Bug::Loses) && self.calls.is_multiple_of(self.every) {
            return;
        }
        self.inner.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        if matches!(self.bug, Bug::Twice) {
            self.calls += 1;
            if self.calls.is_multiple_of(self.every) {
                if let Some(r) = self.last.clone() {
                    return Dispatch::Request(r);
                }
            }
        }
        let d = self.inner.dispatch(now);
        if let Dispatch::Request(r) = &d {
            self.last = Some(r.clone());
        }
        d
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.inner.complete(rq, now);
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.inner.set_tunable(name, value)
    }
}

#[test]
fn the_unbroken_policy_passes_the_conservation_checks() {
    let out = run(ForegroundFirst::new(), busy_foreground());
    assert_eq!(out.served.len(), 208);
}

#[test]
#[should_panic(expected = "dispatched twice")]
fn the_harness_catches_a_request_dispatched_twice() {
    run(Broken::new(Bug::Twice), busy_foreground());
}

#[test]
#[should_panic(expected = "inserted but never completed")]
fn the_harness_catches_a_lost_request() {
    run(Broken::new(Bug::Loses), busy_foreground());
}
