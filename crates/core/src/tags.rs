//! blk-mq scheduler tags, as mq-deadline and kyber use them: `nr_requests` tags that every
//! request holds from its allocation to its completion, of which throttled (asynchronous or
//! write) requests may hold only a *shallow depth*.
//!
//! In blk-mq every request takes a scheduler tag when it is allocated, just before it is
//! inserted into the scheduler, and frees it when it completes; there are `nr_requests` of
//! them. A scheduler's `limit_depth` hook gives some requests a shallow depth, so that they
//! find a tag only among the first bits of the tag bitmap: mq-deadline throttles everything
//! but synchronous reads to `async_depth` (`dd_limit_depth`; `dd_depth_updated` sets
//! `async_depth` to `nr_requests` whenever `nr_requests` changes), kyber throttles asynchronous
//! requests to 75% of `nr_requests` (`kyber_limit_depth`). A request that finds no tag sleeps
//! in tag allocation, outside the scheduler, until a tag is freed; so a flood of writes that
//! holds every tag makes a read wait for one.
//!
//! Our drivers have no tags and insert every request at once, so [`SchedTags`] stands in for
//! the tag allocator: a request is *admitted* into the policy's queues when fewer than `depth`
//! requests hold tags and, if it is throttled, fewer than `limit` throttled requests hold
//! them; otherwise it waits here, and is admitted when a tag it may take is freed (or a limit
//! is raised), with its arrival time in the policy being the admission time, as a request's
//! allocation time is in the kernel. Waiting requests are admitted in arrival order, except
//! that a request that is not throttled goes past throttled ones that are only waiting for the
//! shallow depth (in the kernel it may take a tag they may not). A request waiting here cannot
//! be merged into.
//!
//! Deviation: the shallow depth is counted (at most `limit` throttled requests hold tags); the
//! kernel's is a position in each bitmap word, so throttled requests may briefly hold more
//! after a change of limit, and fewer when unthrottled ones sit in the first bits.

use std::collections::VecDeque;

use crate::request::Request;

/// The scheduler tags, and the requests waiting for one.
#[derive(Debug)]
pub struct SchedTags {
    depth: u32,
    limit: u32,
    held: u32,
    held_throttled: u32,
    /// Requests waiting for a tag, in arrival order, each with whether it is throttled.
    waiting: VecDeque<(Request, bool)>,
}

impl SchedTags {
    /// `depth` tags (`nr_requests`), of which throttled requests may hold `limit` (the
    /// shallow depth). Either 0 acts as 1.
    pub fn new(depth: u32, limit: u32) -> SchedTags {
        SchedTags {
            depth: depth.max(1),
            limit: limit.max(1),
            held: 0,
            held_throttled: 0,
            waiting: VecDeque::new(),
        }
    }

    /// The number of tags (`nr_requests`).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The tags throttled requests may hold.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Change the number of tags; waiting requests are admitted by the next
    /// [`SchedTags::next_admitted`].
    pub fn set_depth(&mut self, depth: u32) {
        self.depth = depth.max(1);
    }

    /// Change the shallow depth; waiting requests are admitted by the next
    /// [`SchedTags::next_admitted`].
    pub fn set_limit(&mut self, limit: u32) {
        self.limit = limit.max(1);
    }

    /// Requests holding a tag (admitted and not completed).
    pub fn held(&self) -> u32 {
        self.held
    }

    /// Throttled requests holding a tag.
    pub fn held_throttled(&self) -> u32 {
        self.held_throttled
    }

    /// Requests waiting for a tag.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Whether a request, throttled or not, may take a tag now.
    fn fits(&self, throttled: bool) -> bool {
        self.held < self.depth && (!throttled || self.held_throttled < self.limit)
    }

    fn take(&mut self, throttled: bool) {
        self.held += 1;
        if throttled {
            self.held_throttled += 1;
        }
    }

    /// A request arrives: it waits here until [`SchedTags::next_admitted`] hands it out,
    /// at once if a tag it may take is free and no earlier request that may take one waits.
    pub fn arrive(&mut self, rq: Request, throttled: bool) {
        self.waiting.push_back((rq, throttled));
    }

    /// A request holding a tag completed: its tag is free.
    pub fn release(&mut self, throttled: bool) {
        self.held = self.held.saturating_sub(1);
        if throttled {
            self.held_throttled = self.held_throttled.saturating_sub(1);
        }
    }

    /// The oldest waiting request that may take a tag now, if any (it then holds the tag):
    /// callers take them all after every arrival, completion and change of depth.
    pub fn next_admitted(&mut self) -> Option<Request> {
        let i = self.waiting.iter().position(|&(_, t)| self.fits(t))?;
        let (rq, throttled) = self.waiting.remove(i).expect("position is in range");
        self.take(throttled);
        Some(rq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::rq;

    /// Arrive and take every request that may go now; their ids.
    fn arrive(t: &mut SchedTags, rq: Request, throttled: bool) -> Vec<u64> {
        t.arrive(rq, throttled);
        admitted(t)
    }

    fn admitted(t: &mut SchedTags) -> Vec<u64> {
        std::iter::from_fn(|| t.next_admitted())
            .map(|r| r.id.0)
            .collect()
    }

    #[test]
    fn throttled_requests_beyond_the_limit_wait_in_arrival_order_for_a_release() {
        let mut t = SchedTags::new(u32::MAX, 2);
        assert_eq!(arrive(&mut t, rq(1, 1).write().build(), true), vec![1]);
        assert_eq!(arrive(&mut t, rq(2, 1).write().build(), true), vec![2]);
        assert!(arrive(&mut t, rq(3, 1).write().build(), true).is_empty());
        assert!(arrive(&mut t, rq(4, 1).write().build(), true).is_empty());
        // Unthrottled requests pass the throttled ones waiting for the shallow depth.
        assert_eq!(arrive(&mut t, rq(5, 1).read().build(), false), vec![5]);
        assert_eq!((t.held(), t.held_throttled(), t.waiting()), (3, 2, 2));
        t.release(true);
        assert_eq!(admitted(&mut t), vec![3]);
        t.set_limit(3);
        assert_eq!(t.limit(), 3);
        assert_eq!(admitted(&mut t), vec![4]);
        assert_eq!((t.held(), t.held_throttled()), (4, 3));
        t.release(false);
        assert_eq!((t.held(), t.held_throttled()), (3, 3));
    }

    /// blk-mq tag allocation (`blk_mq_get_tag`): with every one of `nr_requests` tags held by
    /// writes, a read sleeps for a tag like anyone else, and takes the first one freed ahead
    /// of a write that arrived after it.
    #[test]
    fn a_read_waits_for_a_tag_when_writes_hold_them_all() {
        let mut t = SchedTags::new(2, 2);
        assert_eq!(t.depth(), 2);
        assert_eq!(arrive(&mut t, rq(1, 1).write().build(), true), vec![1]);
        assert_eq!(arrive(&mut t, rq(2, 1).write().build(), true), vec![2]);
        assert!(arrive(&mut t, rq(3, 2).read().build(), false).is_empty());
        assert!(arrive(&mut t, rq(4, 1).write().build(), true).is_empty());
        t.release(true);
        assert_eq!(admitted(&mut t), vec![3]);
        assert_eq!((t.held(), t.held_throttled(), t.waiting()), (2, 1, 1));
        assert!(arrive(&mut t, rq(5, 2).read().build(), false).is_empty());
        t.release(false);
        assert_eq!(admitted(&mut t), vec![4]);
        t.set_depth(4);
        assert_eq!(admitted(&mut t), vec![5]);
    }
}
