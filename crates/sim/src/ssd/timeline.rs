//! A shared resource whose short transfers may fill gaps: a channel or the host link.
//!
//! Work is placed when a request is submitted, but its data is ready at different times (a
//! read's transfer waits for its die). A plain busy-until would make a transfer wait for one
//! placed earlier but ready later, serialising dies that share a channel. This timeline keeps
//! the reserved intervals still in the future and puts each transfer in the first gap, at or
//! after its ready time, that fits it.

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

    /// Reserve `len` ns at the earliest time at or after `ready` that is free; intervals that
    /// ended by `horizon` (the current time: nothing can be placed before it) are forgotten.
    /// Returns the end of the reservation.
    pub fn reserve(&mut self, ready: Nanos, len: u64, horizon: Nanos) -> Nanos {
        while self.busy.front().is_some_and(|&(_, e)| e <= horizon) {
            self.busy.pop_front();
        }
        let mut t = ready;
        let mut at = self.busy.len();
        for (i, &(s, e)) in self.busy.iter().enumerate() {
            if e <= t {
                continue;
            }
            if s >= t + Nanos(len) {
                at = i;
                break;
            }
            t = t.max(e);
        }
        let end = t + Nanos(len);
        if len > 0 {
            // Merge with neighbours it touches, keeping the list short.
            let touches_prev = at > 0 && self.busy[at - 1].1 == t;
            let touches_next = at < self.busy.len() && self.busy[at].0 == end;
            match (touches_prev, touches_next) {
                (true, true) => {
                    let next_end = self.busy[at].1;
                    self.busy[at - 1].1 = next_end;
                    self.busy.remove(at);
                }
                (true, false) => self.busy[at - 1].1 = end,
                (false, true) => self.busy[at].0 = t,
                (false, false) => self.busy.insert(at, (t, end)),
            }
        }
        end
    }
}
