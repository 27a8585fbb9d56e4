//! The layer's requests by id: a window of slots indexed by `id - base`, as blk-mq finds a
//! request from its tag in an array (`blk_mq_tag_to_rq`).
//!
//! The layer numbers its requests in arrival order, so a new request goes at the back of the
//! window, next to the last one inserted (warm in the cache), and the requests a FIFO-like
//! policy dispatches and completes are near its front: both ends are walked in order, which
//! the hardware prefetches, where a hash of ids touched a cold bucket at every insertion,
//! dispatch and completion, and a slab whose freed slots were taken again scattered requests
//! inserted one after another over the whole slab.
//!
//! Completed requests leave holes (`None`); the front's holes are dropped as they appear.
//! So that one request held for ever (a policy that starves it, a device that never answers)
//! cannot stretch the window over every id since, the window holds at most twice its live
//! requests plus [`SLACK`]: past that its oldest requests move to a map on the side, as do
//! ids that arrive out of order (a request built before its process slept for a request,
//! inserted after it woke) below the window's base or far beyond its end.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

/// Holes the window may hold beyond as many as its live requests.
const SLACK: usize = 64;

/// Values by `u64` id, stored in a window of slots by id, or on the side.
pub(super) struct Table<V> {
    /// The value of id `base + i` at `i`, if held here.
    window: VecDeque<Option<V>>,
    /// The id of `window[0]`.
    base: u64,
    /// Values held in the window.
    live: usize,
    /// Values whose id is not in the window's range, or was moved out of it.
    side: FxHashMap<u64, V>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table {
            window: VecDeque::new(),
            base: 0,
            live: 0,
            side: FxHashMap::default(),
        }
    }
}

impl<V> Table<V> {
    /// The window's index of `id`, if within its range.
    fn at(&self, id: u64) -> Option<usize> {
        let i = id.checked_sub(self.base)?;
        (i < self.window.len() as u64).then_some(i as usize)
    }

    /// Hold `value` under `id`, replacing any value it had.
    pub(super) fn insert(&mut self, id: u64, value: V) {
        if !self.side.is_empty() {
            self.side.remove(&id);
        }
        if self.window.is_empty() {
            // The short window's fast path (a device of depth 1 holds one request at a time):
            // what the general path below does for an empty window, without its walks.
            self.base = id;
            self.window.push_back(Some(value));
            self.live = 1;
            return;
        }
        match self.at(id) {
            Some(i) => {
                if self.window[i].is_none() {
                    self.live += 1;
                }
                self.window[i] = Some(value);
            }
            None if id >= self.base => {
                let gap = (id - self.base) as usize - self.window.len();
                if gap > self.window.len() + SLACK {
                    self.side.insert(id, value);
                    return;
                }
                if gap > 0 {
                    self.window
                        .extend(std::iter::repeat_with(|| None).take(gap));
                }
                self.window.push_back(Some(value));
                self.live += 1;
                self.bound();
            }
            None => {
                self.side.insert(id, value);
            }
        }
    }

    /// Keep the window within twice its live values and [`SLACK`] (checked as it grows, so
    /// removals may leave it longer until the next insertion): move its oldest to the side.
    fn bound(&mut self) {
        while self.window.len() > 2 * self.live + SLACK {
            if let Some(v) = self.window.pop_front().flatten() {
                self.side.insert(self.base, v);
                self.live -= 1;
            }
            self.base += 1;
        }
        self.trim();
    }

    /// Drop the holes at the window's front.
    fn trim(&mut self) {
        while let Some(None) = self.window.front() {
            self.window.pop_front();
            self.base += 1;
        }
    }

    pub(super) fn get(&self, id: &u64) -> Option<&V> {
        if let Some(v) = self.at(*id).and_then(|i| self.window[i].as_ref()) {
            return Some(v);
        }
        self.side.get(id)
    }

    pub(super) fn get_mut(&mut self, id: &u64) -> Option<&mut V> {
        match self.at(*id) {
            Some(i) if self.window[i].is_some() => self.window[i].as_mut(),
            _ => self.side.get_mut(id),
        }
    }

    pub(super) fn remove(&mut self, id: &u64) -> Option<V> {
        // The short window's fast path: its one value goes, and the window is empty.
        if self.window.len() == 1 && *id == self.base {
            if let Some(v) = self.window.pop_front().flatten() {
                self.live -= 1;
                return Some(v);
            }
        }
        if let Some(i) = self.at(*id) {
            if let Some(v) = self.window[i].take() {
                self.live -= 1;
                if self.live == 0 {
                    // Only holes left: drop them in place (the next insertion sets the base).
                    self.window.clear();
                } else if i == 0 {
                    self.trim();
                }
                return Some(v);
            }
        }
        if self.side.is_empty() {
            return None;
        }
        self.side.remove(id)
    }

    /// Values held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.live + self.side.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_by_id_in_and_out_of_order() {
        let mut t: Table<&str> = Table::default();
        t.insert(10, "a");
        t.insert(11, "b");
        assert_eq!(t.remove(&10), Some("a"));
        assert_eq!(t.get(&10), None);
        t.insert(13, "c");
        assert_eq!(
            (t.get(&11), t.get(&12), t.get(&13)),
            (Some(&"b"), None, Some(&"c"))
        );
        *t.get_mut(&13).expect("held") = "d";
        assert_eq!(t.remove(&13), Some("d"));
        assert_eq!(t.remove(&13), None);
        t.insert(11, "e");
        assert_eq!(
            t.get(&11),
            Some(&"e"),
            "an id inserted again replaces its value"
        );
        // Below the window's base and far beyond its end: on the side, found all the same.
        t.insert(3, "low");
        t.insert(1_000_000, "far");
        t.insert(12, "f");
        assert_eq!(t.len(), 4);
        assert_eq!(t.get(&3), Some(&"low"));
        assert_eq!(t.get_mut(&1_000_000).map(|v| *v), Some("far"));
        assert_eq!(t.remove(&3), Some("low"));
        assert_eq!(t.remove(&1_000_000), Some("far"));
        assert_eq!(t.remove(&11), Some("e"));
        assert_eq!(t.remove(&12), Some("f"));
        assert_eq!(t.len(), 0);
        assert!(
            t.window.is_empty(),
            "the holes left went with the last value"
        );
    }

    #[test]
    fn one_value_held_for_ever_does_not_stretch_the_window() {
        // Request 0 never completes while a million pass one at a time behind it: the window
        // stays within twice its live values and the slack, and 0 is still found.
        let mut t: Table<u64> = Table::default();
        t.insert(0, 0);
        for id in 1..1_000_000u64 {
            t.insert(id, id);
            assert!(
                t.window.len() <= 2 * t.live + SLACK,
                "window {}",
                t.window.len()
            );
            assert_eq!(t.remove(&id), Some(id));
        }
        assert_eq!(t.get(&0), Some(&0));
        assert_eq!(t.remove(&0), Some(0));
        assert_eq!(t.len(), 0);
    }

    /// The window's own count of values and its front, against what it holds.
    fn check_window<V>(t: &Table<V>) {
        let held = t.window.iter().filter(|v| v.is_some()).count();
        assert_eq!(t.live, held, "live counts the window's values");
        assert!(
            t.window.front().is_none_or(|v| v.is_some()),
            "the window's front is never a hole"
        );
    }

    #[test]
    fn the_window_holds_twice_its_live_values_and_the_slack_then_moves_the_oldest_aside() {
        // `held` values never complete while others pass one at a time behind them: the
        // window reaches exactly 2 * live + SLACK slots (live: the held ones and the one
        // passing) with every held value still in it; the next insertion moves them aside
        // and drops the holes behind them.
        for held in [1u64, 10] {
            let mut t: Table<u64> = Table::default();
            for id in 0..held {
                t.insert(id, id);
            }
            let live = held as usize + 1;
            let last_in = (2 * live + SLACK) as u64 - 1;
            for id in held..=last_in {
                t.insert(id, id);
                check_window(&t);
                if id < last_in {
                    assert_eq!(t.remove(&id), Some(id));
                    check_window(&t);
                }
            }
            assert_eq!(
                t.window.len(),
                2 * live + SLACK,
                "held {held}: full, not cut"
            );
            assert!(t.side.is_empty(), "held {held}: nothing aside yet");
            assert_eq!(t.remove(&last_in), Some(last_in));
            t.insert(last_in + 1, last_in + 1);
            check_window(&t);
            // Each value moved aside tightens the bound by two slots and frees one: the
            // held values all go, and the holes behind them.
            assert!(
                (0..held).all(|id| t.side.contains_key(&id)),
                "held {held}: aside"
            );
            assert_eq!(
                t.side.len(),
                held as usize,
                "held {held}: only the held values"
            );
            assert_eq!(
                t.base,
                last_in + 1,
                "held {held}: the window starts at the newest"
            );
            assert_eq!(t.window.len(), 1);
            for id in (0..held).chain([last_in + 1]) {
                assert_eq!(t.remove(&id), Some(id));
                check_window(&t);
            }
            assert_eq!(t.len(), 0);
        }
    }

    #[test]
    fn live_counts_the_windows_values_and_its_front_is_never_a_hole() {
        // Requests in id order, most completing soon and out of order, one in 50 held for
        // long, a few built early and inserted late (below the base): after every step the
        // count and the front hold, and every value is found until it is removed.
        let mut t: Table<u64> = Table::default();
        let mut held: Vec<u64> = Vec::new();
        let mut late: Vec<u64> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for id in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(97) {
                late.push(id);
                continue;
            }
            t.insert(id, id);
            held.push(id);
            check_window(&t);
            // Bounded as it grows (removals may leave it longer until the next insertion).
            assert!(t.window.len() <= 2 * t.live + SLACK);
            if x.is_multiple_of(13) {
                if let Some(l) = late.pop() {
                    t.insert(l, l);
                    held.push(l);
                    check_window(&t);
                }
            }
            while held.len() > 8 {
                let keep_long = held[0].is_multiple_of(50) && id < held[0] + 500;
                let at = if keep_long {
                    1 + (x as usize % (held.len() - 1))
                } else {
                    0
                };
                let done = held.remove(at);
                assert_eq!(t.remove(&done), Some(done));
                check_window(&t);
            }
        }
        for id in held {
            assert_eq!(t.get(&id), Some(&id));
            assert_eq!(t.remove(&id), Some(id));
            check_window(&t);
        }
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn an_id_held_on_the_side_and_inserted_again_in_the_window_leaves_no_stale_copy() {
        // 5 arrives below the window's base (on the side); the window empties; 5 comes again
        // and starts the new window: its side copy must go, or removing it would leave the
        // old value to be found.
        let mut t: Table<&str> = Table::default();
        t.insert(10, "a");
        t.insert(5, "old");
        assert_eq!(t.remove(&10), Some("a"));
        assert!(t.window.is_empty());
        t.insert(5, "new");
        assert_eq!(t.len(), 1);
        assert_eq!(t.remove(&5), Some("new"));
        assert_eq!(t.get(&5), None, "no stale copy on the side");
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn an_id_past_the_windows_end_joins_it_up_to_the_slack_and_goes_aside_beyond() {
        // Window [0]: an id SLACK + 1 past its end (a gap of exactly len + SLACK) still
        // joins the window; one further away goes on the side and leaves the window as it
        // was, rather than stretching it (and pushing 0 out) for one far request.
        let mut t: Table<u64> = Table::default();
        t.insert(0, 0);
        let edge = 1 + SLACK as u64 + 1;
        t.insert(edge, edge);
        assert!(
            t.at(edge).is_some(),
            "a gap of len + SLACK joins the window"
        );
        assert!(t.side.is_empty());
        let far = edge + 1 + t.window.len() as u64 + SLACK as u64 + 1;
        t.insert(far, far);
        assert!(t.side.contains_key(&far), "beyond the slack: aside");
        assert_eq!(t.window.len() as u64, edge + 1, "the window untouched");
        assert!(t.at(0).is_some(), "0 still in the window");
        for id in [0, edge, far] {
            assert_eq!(t.remove(&id), Some(id));
        }
    }

    #[test]
    fn a_far_id_held_aside_is_found_by_get_mut_once_the_window_grows_over_it() {
        // far goes aside (beyond the slack); the window then grows id by id past it, so far's
        // slot in the window is a hole while its value is on the side: get_mut must look
        // there, as get does.
        let mut t: Table<u64> = Table::default();
        t.insert(0, 0);
        let far = 2 + SLACK as u64 + 1;
        t.insert(far, far);
        assert!(t.side.contains_key(&far));
        for id in (1..far).chain([far + 1]) {
            t.insert(id, id);
        }
        assert!(t.at(far).is_some(), "the window covers far's id");
        *t.get_mut(&far).expect("far is held") += 1;
        assert_eq!(t.get(&far), Some(&(far + 1)));
        assert_eq!(t.remove(&far), Some(far + 1));
    }

    #[test]
    fn a_request_refused_then_inserted_late_lands_in_the_window_it_falls_in() {
        // Ids 1..=4 given, 2 kept back (its process slept) and inserted after 4.
        let mut t: Table<u64> = Table::default();
        for id in [1, 3, 4, 2] {
            t.insert(id, id * 10);
        }
        assert!(t.side.is_empty(), "2 fell in the window's range");
        for id in 1..=4 {
            assert_eq!(t.remove(&id), Some(id * 10));
        }
        assert_eq!(t.len(), 0);
    }
}
