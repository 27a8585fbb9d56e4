//! A resource whose work may fill gaps: a channel, the host link, a flash plane.
//!
//! Work is placed when a request is submitted, but it is ready at different times (a read's
//! transfer waits for its die; a write's program waits for room in the buffer). A plain
//! busy-until would make work wait for work placed earlier but starting later: dies sharing a
//! channel would be serialised, and a read would wait behind a program placed in the future.
//! This timeline keeps the reserved intervals still in the future and puts each piece of work
//! in the first gap, at or after its ready time, that fits it.

use std::collections::VecDeque;

use elevator_core::Nanos;

/// Reserved, non-overlapping intervals in start order.
#[derive(Clone, Debug, Default)]
pub struct GapTimeline {
    busy: VecDeque<(Nanos, Nanos)>,
}

impl GapTimeline {
    /// An idle resource.
    pub fn new() -> GapTimeline {
        GapTimeline::default()
    }

    /// Forget the intervals that ended by `horizon` (the current time: nothing can be placed
    /// before it).
    pub fn forget(&mut self, horizon: Nanos) {
        while self.busy.front().is_some_and(|&(_, e)| e <= horizon) {
            self.busy.pop_front();
        }
    }

    /// The earliest start at or after `ready` of a free interval of `len` ns.
    pub fn fit(&self, ready: Nanos, len: u64) -> Nanos {
        let mut t = ready;
        // Intervals do not overlap, so their ends are in order too: skip those ended by `t`.
        let first = self.busy.partition_point(|&(_, e)| e <= t);
        for &(s, e) in self.busy.range(first..) {
            if s >= t + Nanos(len) {
                break;
            }
            t = t.max(e);
        }
        t
    }

    /// The start of the run of busy time that ends exactly at `t` (touching intervals are
    /// merged), or `t` when none does.
    pub fn run_start(&self, t: Nanos) -> Nanos {
        let at = self.busy.partition_point(|&(s, _)| s < t);
        match at.checked_sub(1).map(|i| self.busy[i]) {
            Some((s, e)) if e == t => s,
            _ => t,
        }
    }

    /// Mark `[start, start + len)` busy; it must be free (found by [`GapTimeline::fit`]).
    pub fn insert(&mut self, start: Nanos, len: u64) {
        if len == 0 {
            return;
        }
        let end = start + Nanos(len);
        let at = self.busy.partition_point(|&(s, _)| s < start);
        // Merge with neighbours it touches, keeping the list short.
        let touches_prev = at > 0 && self.busy[at - 1].1 == start;
        let touches_next = at < self.busy.len() && self.busy[at].0 == end;
        match (touches_prev, touches_next) {
            (true, true) => {
                let next_end = self.busy[at].1;
                self.busy[at - 1].1 = next_end;
                self.busy.remove(at);
            }
            (true, false) => self.busy[at - 1].1 = end,
            (false, true) => self.busy[at].0 = start,
            (false, false) => self.busy.insert(at, (start, end)),
        }
    }

    /// Reserve `len` ns at the earliest free time at or after `ready`, forgetting what ended
    /// by `horizon`; returns the end of the reservation.
    pub fn reserve(&mut self, ready: Nanos, len: u64, horizon: Nanos) -> Nanos {
        self.forget(horizon);
        let t = self.fit(ready, len);
        self.insert(t, len);
        t + Nanos(len)
    }
}
