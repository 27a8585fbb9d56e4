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

    /// Whether nothing is reserved (after [`GapTimeline::forget`]: nothing after the horizon).
    pub fn is_empty(&self) -> bool {
        self.busy.is_empty()
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

    /// Mark `[start, start + len)` busy, merged with the intervals it overlaps or touches.
    /// A resource's own work goes in a free interval (found by [`GapTimeline::fit`]); a
    /// timeline that is the union of several (a plane's lanes) takes intervals that overlap.
    pub fn insert(&mut self, start: Nanos, len: u64) {
        if len == 0 {
            return;
        }
        let end = start + Nanos(len);
        // Most work goes after everything placed (a buffer's next program): no search.
        match self.busy.back_mut() {
            Some(last) if last.1 > start => {}
            Some(last) if last.1 == start => {
                last.1 = end;
                return;
            }
            _ => {
                self.busy.push_back((start, end));
                return;
            }
        }
        // The intervals it overlaps or touches: those ending at or after `start` and starting
        // at or before `end`.
        let first = self.busy.partition_point(|&(_, e)| e < start);
        let last = self.busy.partition_point(|&(s, _)| s <= end);
        if first == last {
            self.busy.insert(first, (start, end));
            return;
        }
        let merged = (
            start.min(self.busy[first].0),
            end.max(self.busy[last - 1].1),
        );
        self.busy[first] = merged;
        self.busy.drain(first + 1..last);
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn timeline(busy: &[(u64, u64)]) -> GapTimeline {
        let mut t = GapTimeline::new();
        for &(s, e) in busy {
            t.insert(Nanos(s), e - s);
        }
        t
    }

    fn intervals(t: &GapTimeline) -> Vec<(u64, u64)> {
        t.busy.iter().map(|&(s, e)| (s.0, e.0)).collect()
    }

    #[test]
    fn fit_returns_the_first_gap_long_enough_at_or_after_ready() {
        let t = timeline(&[(10, 20), (25, 40), (50, 60)]);
        assert_eq!(t.fit(Nanos(0), 10), Nanos(0));
        // From 5 the gap before 10 is 5 long, the one at 20 5 long: the first fit is at 40.
        assert_eq!(t.fit(Nanos(5), 6), Nanos(40));
        assert_eq!(t.fit(Nanos(15), 5), Nanos(20));
        assert_eq!(t.fit(Nanos(12), 11), Nanos(60));
        assert_eq!(t.fit(Nanos(45), 5), Nanos(45));
        assert_eq!(t.fit(Nanos(45), 6), Nanos(60));
    }

    #[test]
    fn insert_merges_what_it_touches_or_overlaps() {
        let mut t = timeline(&[(0, 10), (20, 30)]);
        t.insert(Nanos(10), 5);
        assert_eq!(intervals(&t), [(0, 15), (20, 30)]);
        t.insert(Nanos(15), 5);
        assert_eq!(intervals(&t), [(0, 30)]);
        t.insert(Nanos(40), 10);
        t.insert(Nanos(60), 10);
        t.insert(Nanos(35), 30);
        assert_eq!(intervals(&t), [(0, 30), (35, 70)]);
        t.insert(Nanos(36), 2);
        assert_eq!(intervals(&t), [(0, 30), (35, 70)]);
        t.insert(Nanos(0), 0);
        assert_eq!(intervals(&t), [(0, 30), (35, 70)]);
    }

    #[test]
    fn forget_drops_the_intervals_ended_by_the_horizon_only() {
        let mut t = timeline(&[(0, 10), (20, 30), (40, 50)]);
        t.forget(Nanos(25));
        assert_eq!(intervals(&t), [(20, 30), (40, 50)]);
        t.forget(Nanos(30));
        assert_eq!(intervals(&t), [(40, 50)]);
    }

    /// The reference: busy nanoseconds one by one.
    #[derive(Default)]
    struct Slots(std::collections::BTreeSet<u64>);

    impl Slots {
        /// No busy nanosecond in `[t, t + len)`; for no time at all, not within a run.
        fn fit(&self, ready: u64, len: u64) -> u64 {
            let busy = |t: u64| self.0.contains(&t);
            (ready..)
                .find(|&t| match len {
                    0 => t == 0 || !busy(t - 1) || !busy(t),
                    _ => self.0.range(t..t + len).next().is_none(),
                })
                .expect("a gap after the last interval")
        }
        fn insert(&mut self, start: u64, len: u64) {
            self.0.extend(start..start + len);
        }
        /// Runs of busy time, touching ones as one.
        fn runs(&self) -> Vec<(u64, u64)> {
            let mut runs: Vec<(u64, u64)> = Vec::new();
            for &t in &self.0 {
                match runs.last_mut() {
                    Some((_, e)) if *e == t => *e += 1,
                    _ => runs.push((t, t + 1)),
                }
            }
            runs
        }
        fn forget(&mut self, horizon: u64) {
            for (s, e) in self.runs() {
                if e <= horizon {
                    self.0.retain(|&t| t < s || t >= e);
                }
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Reserve at the first gap, as a resource's own work does.
        Reserve {
            ready: u64,
            len: u64,
        },
        /// Insert anywhere, overlapping or not, as a union of timelines takes its parts.
        Cover {
            start: u64,
            len: u64,
        },
        Forget {
            horizon: u64,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..300u64, 0..40u64).prop_map(|(ready, len)| Op::Reserve { ready, len }),
            (0..300u64, 0..40u64).prop_map(|(start, len)| Op::Cover { start, len }),
            (0..300u64).prop_map(|horizon| Op::Forget { horizon }),
        ]
    }

    proptest! {
        #[test]
        fn matches_busy_nanoseconds_one_by_one(
            ops in proptest::collection::vec(op(), 1..60),
            queries in proptest::collection::vec((0..400u64, 1..50u64), 1..20),
        ) {
            let (mut t, mut reference) = (GapTimeline::new(), Slots::default());
            for op in ops {
                match op {
                    Op::Reserve { ready, len } => {
                        let start = t.fit(Nanos(ready), len);
                        prop_assert_eq!(start.0, reference.fit(ready, len));
                        t.insert(start, len);
                        reference.insert(start.0, len);
                    }
                    Op::Cover { start, len } => {
                        t.insert(Nanos(start), len);
                        reference.insert(start, len);
                    }
                    Op::Forget { horizon } => {
                        t.forget(Nanos(horizon));
                        reference.forget(horizon);
                    }
                }
                prop_assert_eq!(intervals(&t), reference.runs());
            }
            for (ready, len) in queries {
                prop_assert_eq!(t.fit(Nanos(ready), len).0, reference.fit(ready, len));
            }
        }

        /// A plane's program, erase and GC work looks for its gap in the union of its three
        /// timelines: at or after the horizon they all forgot up to, the union's first gap is
        /// where trying each timeline in turn until none moves the start ends.
        #[test]
        fn the_union_fits_where_the_parts_in_turn_do(
            lanes in proptest::collection::vec(
                proptest::collection::vec((0..300u64, 1..40u64), 0..15), 3),
            horizon in 0..200u64,
            queries in proptest::collection::vec((0..400u64, 1..50u64), 1..20),
        ) {
            let mut parts = vec![GapTimeline::new(); 3];
            let mut all = GapTimeline::new();
            for (part, work) in parts.iter_mut().zip(&lanes) {
                for &(ready, len) in work {
                    let start = part.fit(Nanos(ready), len);
                    part.insert(start, len);
                    all.insert(start, len);
                }
            }
            for part in parts.iter_mut().chain([&mut all]) {
                part.forget(Nanos(horizon));
            }
            for (ready, len) in queries {
                let mut t = Nanos(ready.max(horizon));
                loop {
                    let next = parts.iter().map(|p| p.fit(t, len)).max().unwrap();
                    if next == t {
                        break;
                    }
                    t = next;
                }
                prop_assert_eq!(all.fit(Nanos(ready.max(horizon)), len), t);
            }
        }
    }
}
