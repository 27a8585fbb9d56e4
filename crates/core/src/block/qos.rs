//! The hook chain between a bio's submission and the scheduler, and at its completion: the
//! position of Linux's `rq_qos` (block/blk-rq-qos.h), where blk-throttle (io.max),
//! blk-iolatency (io.latency), blk-iocost (io.cost) and writeback throttling sit.
//!
//! Each [`QosHook`] sees every bio as it is submitted ([`QosHook::throttle`], Linux's
//! `rq_qos_throttle`) and may hold it back until a given time; it then sees the request issued
//! to the device (`rq_qos_issue`) and completed (`rq_qos_done`). Hooks run in the order they
//! were added; a bio held by one is offered to the next only once released. The chain is empty
//! unless a controller is added, and an empty chain costs a branch per call.

use crate::request::Request;
use crate::time::Nanos;

/// What a hook says about a bio being submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Let it through now.
    Now,
    /// Hold it; ask again at this time (or at the next completion, whichever comes first).
    Wait {
        /// When to ask again at the latest.
        until: Nanos,
    },
}

/// A controller at the rq_qos position. Every method has a default that does nothing.
pub trait QosHook {
    /// The controller's name, e.g. `"io.max"`.
    fn name(&self) -> &'static str;
    /// `bio` (its `id` not yet assigned) asks to be queued at `now`.
    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        let _ = (bio, now);
        Admit::Now
    }
    /// `rq` went to the device at `now`.
    fn issue(&mut self, rq: &Request, now: Nanos) {
        let _ = (rq, now);
    }
    /// `rq` completed at `now`.
    fn done(&mut self, rq: &Request, now: Nanos) {
        let _ = (rq, now);
    }
}

/// The chain of hooks, in order.
#[derive(Default)]
pub struct QosChain {
    hooks: Vec<Box<dyn QosHook>>,
}

impl std::fmt::Debug for QosChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.hooks.iter().map(|h| h.name()))
            .finish()
    }
}

impl QosChain {
    /// Append `hook` to the chain.
    pub fn push(&mut self, hook: Box<dyn QosHook>) {
        self.hooks.push(hook);
    }

    /// Whether no hook is installed.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Ask each hook from `from` on; `Ok(())` once all admit, or the index of the hook that
    /// holds the bio and until when.
    pub(crate) fn throttle(
        &mut self,
        from: usize,
        bio: &Request,
        now: Nanos,
    ) -> Result<(), (usize, Nanos)> {
        for (i, h) in self.hooks.iter_mut().enumerate().skip(from) {
            if let Admit::Wait { until } = h.throttle(bio, now) {
                return Err((i, until));
            }
        }
        Ok(())
    }

    pub(crate) fn issue(&mut self, rq: &Request, now: Nanos) {
        for h in &mut self.hooks {
            h.issue(rq, now);
        }
    }

    pub(crate) fn done(&mut self, rq: &Request, now: Nanos) {
        for h in &mut self.hooks {
            h.done(rq, now);
        }
    }
}
