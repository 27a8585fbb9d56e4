//! The request log: each request's life as blktrace names its steps.
//!
//! The block layer reports every step to an [`Observer`] as it happens: queued by its process
//! (`Q`), merged into a queued request (`M`), inserted into the scheduler (`I`), dispatched to
//! the device (`D`), completed (`C`). The blktrace writer in `elevator-workload`, the
//! simulator's occupancy probes and the tests are observers.

use std::cell::RefCell;
use std::rc::Rc;

use crate::request::{CtxId, Request};
use crate::time::Nanos;

/// A step in a request's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The process submitted it (blktrace `Q`).
    Queue,
    /// It was merged into a queued request (`M`).
    Merge,
    /// It went into the scheduler (`I`).
    Insert,
    /// The device got it (`D`).
    Issue,
    /// The device finished it (`C`).
    Complete,
}

/// Sees every request's life in a run.
pub trait Observer {
    /// Context `ctx` is process `pid` named `name`; called once, before its first request.
    fn process(&mut self, ctx: CtxId, pid: u32, name: &str, now: Nanos);
    /// `rq` went through `event` at `now`.
    fn event(&mut self, event: Event, rq: &Request, now: Nanos);
}

impl<T: Observer> Observer for Rc<RefCell<T>> {
    fn process(&mut self, ctx: CtxId, pid: u32, name: &str, now: Nanos) {
        self.borrow_mut().process(ctx, pid, name, now);
    }
    fn event(&mut self, event: Event, rq: &Request, now: Nanos) {
        self.borrow_mut().event(event, rq, now);
    }
}
