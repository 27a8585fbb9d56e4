//! An ideal device with fixed service times: for tests, and for "what if the disk cost
//! nothing but a constant" questions.

use elevator_core::{Nanos, Op, Request};

use crate::device::{Device, Service};

/// A device whose every request takes a fixed time, `depth` at a time, served in order.
#[derive(Clone, Debug)]
pub struct FixedLatency {
    /// Service time of a read.
    pub read: Nanos,
    /// Service time of a write (and of flush or discard).
    pub write: Nanos,
    /// Requests served at once.
    pub depth: usize,
    /// Size in sectors.
    pub capacity: u64,
    busy_until: Vec<Nanos>,
}

impl FixedLatency {
    /// A device taking `read` / `write` per request, `depth` requests in parallel.
    pub fn new(read: Nanos, write: Nanos, depth: usize, capacity: u64) -> FixedLatency {
        FixedLatency {
            read,
            write,
            depth: depth.max(1),
            capacity,
            busy_until: vec![Nanos::ZERO; depth.max(1)],
        }
    }
}

impl Device for FixedLatency {
    fn name(&self) -> &str {
        "fixed-latency"
    }
    fn depth(&self) -> usize {
        self.depth
    }
    fn capacity_sectors(&self) -> u64 {
        self.capacity
    }
    fn submit(&mut self, rq: &Request, now: Nanos) -> Service {
        let cost = if rq.op == Op::Read {
            self.read
        } else {
            self.write
        };
        let lane = (0..self.busy_until.len())
            .min_by_key(|&i| self.busy_until[i])
            .unwrap_or(0);
        let done = self.busy_until[lane].max(now) + cost;
        self.busy_until[lane] = done;
        Service {
            done,
            cache_hit: false,
            deferred: false,
        }
    }
    fn non_rotational(&self) -> bool {
        true
    }
}
