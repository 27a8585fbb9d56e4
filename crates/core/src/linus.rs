//! linus: PLACEHOLDER (a FIFO) until the real policy lands.

use std::collections::VecDeque;

use crate::request::Request;
use crate::scheduler::{Dispatch, Scheduler};
use crate::time::Nanos;
use crate::tunable::{self, Settings, Tunable, TunableError};

/// Tunables.
pub const TUNABLES: &[Tunable] = &[];

/// Configuration.
#[derive(Clone, Debug, Default)]
pub struct Config {}

/// The policy.
#[derive(Debug, Default)]
pub struct Linus {
    fifo: VecDeque<Request>,
}

impl Linus {
    /// New.
    pub fn new(_config: Config) -> Linus {
        Linus::default()
    }
    /// From settings.
    pub fn from_settings(settings: &Settings) -> Result<Linus, TunableError> {
        settings.validate("linus", TUNABLES)?;
        Ok(Linus::default())
    }
}

impl Scheduler for Linus {
    fn name(&self) -> &'static str {
        "linus"
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
        tunable::lookup("linus", TUNABLES, name).map(|_| ())
    }
}
