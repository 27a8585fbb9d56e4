//! noop: first in, first out, no reordering, no idling.
//!
//! Follows Linux's `noop-iosched.c` (2.6) and its blk-mq successor `none`: requests go to the
//! device in arrival order. It has no tunables. Deviation: Linux's noop still back-merges
//! adjacent requests through the generic merge code; ours merges nothing.

use std::collections::VecDeque;

use crate::request::Request;
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{self, Settings, Tunable, TunableError};

/// noop has no tunables.
pub const TUNABLES: &[Tunable] = &[];

/// The noop (FIFO) scheduler.
#[derive(Debug, Default)]
pub struct Noop {
    fifo: VecDeque<Request>,
}

impl Noop {
    /// An empty FIFO.
    pub fn new() -> Noop {
        Noop::default()
    }

    /// Build from settings (there are none to accept).
    pub fn from_settings(settings: &Settings) -> Result<Noop, TunableError> {
        settings.validate("noop", TUNABLES)?;
        Ok(Noop::new())
    }
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn insert(&mut self, rq: Request, _now: Nanos) {
        self.fifo.push_back(rq);
    }
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        match self.fifo.pop_front() {
            Some(rq) => Dispatch::Request(rq),
            None => Dispatch::Empty,
        }
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {}
    fn queued(&self) -> usize {
        self.fifo.len()
    }
    fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
        tunable::lookup("noop", TUNABLES, name).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{rq, Harness};

    #[test]
    fn noop_dispatches_in_arrival_order() {
        let mut h = Harness::new(Noop::new(), 1, |_| Nanos::from_ms(1));
        for (i, s) in [900u64, 10, 500].into_iter().enumerate() {
            h.submit(rq(i as u64, 0).sector(s).read());
        }
        let out = h.run();
        assert_eq!(out.dispatch_order(), vec![0, 1, 2]);
    }
}
