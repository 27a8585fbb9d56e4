//! The device interface the event engine drives.

use elevator_core::{Nanos, Request};

/// What the device says about a request it accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Service {
    /// When the request completes.
    pub done: Nanos,
    /// Whether the on-board cache served it without touching the media.
    pub cache_hit: bool,
}

/// A simulated device. It turns a dispatched request into a completion time from its own state
/// (head position, rotation, cache contents ...). It is handed requests in dispatch order and
/// never reorders them once accepted.
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
}
