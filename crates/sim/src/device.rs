//! The device interface the event engine drives.

use elevator_core::{Nanos, Request, RequestId};

/// What the device says about a request it accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Service {
    /// When the request completes; with `deferred`, not yet known (the device reports the
    /// completion later, [`Device::poll_completion`]).
    pub done: Nanos,
    /// Whether the on-board cache served it without touching the media.
    pub cache_hit: bool,
    /// Whether the completion is reported later rather than at `done`: the device learns it
    /// from what happens after the dispatch (a write acknowledged when its data is
    /// programmed, its program unit filled by later writes).
    pub deferred: bool,
}

/// A simulated device. It turns a dispatched request into a completion time from its own state
/// (head position, rotation, cache contents ...). It is handed requests in dispatch order and
/// never reorders them once accepted.
///
/// The driver's order: [`Device::submit`] each dispatched request; after the submissions of an
/// instant, take every [`Device::poll_completion`] and ask [`Device::poll_timeout`]; call
/// [`Device::handle_timeout`] once the time it gave is reached, then poll again. A device that
/// always knows a completion at submission (every device but an SSD acknowledging writes when
/// programmed) keeps the defaults: no deferred completions, no timeout, and
/// [`Device::defers`] false, so the driver never asks.
pub trait Device {
    /// A short name for reports, e.g. the drive model.
    fn name(&self) -> &str;
    /// How many requests it holds at once (1 for the validated rotational drives).
    fn depth(&self) -> usize;
    /// Size in 512-byte sectors.
    fn capacity_sectors(&self) -> u64;
    /// Accept `rq` at `now` (fewer than `depth()` requests are outstanding).
    fn submit(&mut self, rq: &Request, now: Nanos) -> Service;
    /// Whether the device needs no mechanical positioning (SSD): policies such as AS and CFQ
    /// behave differently on such devices (Linux's `blk_queue_nonrot`).
    fn non_rotational(&self) -> bool {
        false
    }
    /// Whether it may answer [`Service::deferred`] or keep a timer: asked once, when the
    /// engine is built; a device that says no is never polled for either (default: no).
    fn defers(&self) -> bool {
        false
    }
    /// A completion the device has come to know since the last call, of a request it
    /// accepted as [`Service::deferred`]: its id and when it completes (not before the call).
    fn poll_completion(&mut self) -> Option<(RequestId, Nanos)> {
        None
    }
    /// When the device next needs [`Device::handle_timeout`] (its own timer), if ever.
    /// Changed only by [`Device::submit`] and [`Device::handle_timeout`].
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    /// The time [`Device::poll_timeout`] gave (or a later one) has come: act on it; the
    /// completions it settles come out of [`Device::poll_completion`].
    fn handle_timeout(&mut self, now: Nanos) {
        let _ = now;
    }
}
