//! The hook chain between a bio's submission and the scheduler, and at its completion: the
//! position of Linux's `rq_qos` (block/blk-rq-qos.h), where blk-iolatency (io.latency),
//! blk-iocost (io.cost) and writeback throttling sit, and of blk-throttle (io.max), which the
//! kernel calls just before it (`blk_throtl_bio` in `submit_bio_noacct`).
//!
//! Each [`QosHook`] sees every bio as it is submitted ([`QosHook::throttle`], Linux's
//! `rq_qos_throttle` / `blk_throtl_bio`) and either lets it through, asks to be asked again at
//! a time ([`Admit::Wait`]), or keeps it in its own queue ([`Admit::Hold`]) and gives it back
//! later from [`QosHook::poll_release`] (blk-throttle's dispatch timer, io.cost's wait-queue
//! timer, io.latency's wake-up at a completion). It then sees the request issued to the device
//! (`rq_qos_issue`) and completed (`rq_qos_done`), and each bio's end (`rq_qos_done_bio`).
//! A hook may keep a timer ([`QosHook::poll_timeout`] / [`QosHook::handle_timeout`]): the
//! block layer folds it into its own `poll_timeout`.
//!
//! Hooks run in the order they were added; a bio held by one is offered to the next only once
//! released. The chain is empty unless a controller is added, and an empty chain costs a
//! branch per call.
//!
//! Deviation: every hook sees a bio before the layer splits it or offers it for merging. The
//! kernel calls blk-throttle there too, but `rq_qos_throttle` only for a bio that did not
//! merge, after splitting; here a bio that later merges was throttled like any other, and its
//! end is reported to [`QosHook::done_bio`] like any other's.

use crate::request::{GroupId, Op, Request};
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
    /// The hook queued the bio under its key (`bio.id`) and will give that key back from
    /// [`QosHook::poll_release`]; the layer keeps the bio meanwhile and asks nothing more.
    Hold,
}

/// A bio's end as `rq_qos_done_bio` sees it: once per bio, merged or split ones included
/// (a split bio when its last piece completes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioEnd {
    /// The key the bio had at [`QosHook::throttle`] (its `id` there).
    pub key: u64,
    /// Its group.
    pub group: GroupId,
    /// What it did.
    pub op: Op,
    /// Its size, bytes.
    pub bytes: u64,
    /// When it was submitted (before any hook held it).
    pub submitted: Nanos,
    /// Whether it succeeded.
    pub ok: bool,
}

/// A controller at the rq_qos position. Every method but `name` has a default that does
/// nothing.
///
/// Call order, as the block layer drives it: `throttle` for each bio submitted (and again for
/// a bio it answered `Wait` for, at that time or at a completion); `poll_release` after every
/// submission, completion and `handle_timeout` until it answers `None`; `issue` when a
/// request goes to the device; `done` when it completes, then `done_bio` for each bio that
/// completion ends; `handle_timeout(now)` once `now` reaches `poll_timeout()`. Which calls
/// change `poll_timeout`: any of them.
pub trait QosHook {
    /// The controller's name, e.g. `"io.max"`.
    fn name(&self) -> &'static str;
    /// `bio` asks to be queued at `now`. Its `id` is a key unique among the bios this chain
    /// sees (not the request id it will get); its `group` is its cgroup.
    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        let _ = (bio, now);
        Admit::Now
    }
    /// The key of a bio this hook answered [`Admit::Hold`] for and now lets go at `now`, if
    /// any; the layer calls again until `None`.
    fn poll_release(&mut self, now: Nanos) -> Option<u64> {
        let _ = now;
        None
    }
    /// `rq` went to the device at `now`.
    fn issue(&mut self, rq: &Request, now: Nanos) {
        let _ = (rq, now);
    }
    /// `rq` completed at `now`; it started (got its tag: `start_time_ns`) at `started`, its
    /// dispatch unless the host tags more requests than the device holds
    /// ([`BlockLayer::set_host_tags`](super::BlockLayer::set_host_tags)).
    fn done(&mut self, rq: &Request, started: Nanos, now: Nanos) {
        let _ = (rq, started, now);
    }
    /// A bio ended at `now` (after [`done`](Self::done) of the request carrying it).
    fn done_bio(&mut self, bio: &BioEnd, now: Nanos) {
        let _ = (bio, now);
    }
    /// When this hook's timer fires, if armed.
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    /// Time reached `now`, at or past [`poll_timeout`](Self::poll_timeout).
    fn handle_timeout(&mut self, now: Nanos) {
        let _ = now;
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

/// Where a bio stands after the chain was asked about it.
pub(crate) enum Verdict {
    /// Every hook from the one asked on let it through.
    Pass,
    /// Hook `.0` asks to be asked again at `.1`.
    Wait(usize, Nanos),
    /// Hook `.0` keeps it.
    Hold(usize),
}

impl QosChain {
    /// Append `hook` to the chain.
    pub fn push(&mut self, hook: Box<dyn QosHook>) {
        self.hooks.push(hook);
    }

    /// Append every hook of `other`, in its order.
    pub fn append(&mut self, mut other: QosChain) {
        self.hooks.append(&mut other.hooks);
    }

    /// Whether no hook is installed.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.hooks.iter().map(|h| h.name()).collect()
    }

    /// Number of hooks.
    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    /// Ask each hook from `from` on.
    pub(crate) fn throttle(&mut self, from: usize, bio: &Request, now: Nanos) -> Verdict {
        for (i, h) in self.hooks.iter_mut().enumerate().skip(from) {
            match h.throttle(bio, now) {
                Admit::Now => {}
                Admit::Wait { until } => return Verdict::Wait(i, until),
                Admit::Hold => return Verdict::Hold(i),
            }
        }
        Verdict::Pass
    }

    /// A key hook `i` releases now.
    pub(crate) fn poll_release(&mut self, i: usize, now: Nanos) -> Option<u64> {
        self.hooks[i].poll_release(now)
    }

    pub(crate) fn issue(&mut self, rq: &Request, now: Nanos) {
        for h in &mut self.hooks {
            h.issue(rq, now);
        }
    }

    pub(crate) fn done(&mut self, rq: &Request, started: Nanos, now: Nanos) {
        for h in &mut self.hooks {
            h.done(rq, started, now);
        }
    }

    pub(crate) fn done_bio(&mut self, bio: &BioEnd, now: Nanos) {
        for h in &mut self.hooks {
            h.done_bio(bio, now);
        }
    }

    /// The earliest of the hooks' timers.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.hooks.iter().filter_map(|h| h.poll_timeout()).min()
    }

    /// Fire every hook whose timer is due at `now`.
    pub(crate) fn handle_timeout(&mut self, now: Nanos) {
        for h in &mut self.hooks {
            if h.poll_timeout().is_some_and(|t| t <= now) {
                h.handle_timeout(now);
            }
        }
    }
}
