//! blk-mq scheduler tags, as far as mq-deadline and kyber use them: a cap on the tags that
//! throttled (asynchronous or write) requests may hold.
//!
//! In blk-mq every request holds a scheduler tag from its allocation, just before it is
//! inserted into the scheduler, until it completes; a scheduler's `limit_depth` hook gives
//! some requests a *shallow depth*, so that at most that many of them hold tags and the rest
//! wait in tag allocation, outside the scheduler, until a tag is freed. mq-deadline throttles
//! everything but synchronous reads to `async_depth`; kyber throttles asynchronous requests to
//! 75% of `nr_requests`.
//!
//! Our drivers have no tags and insert every request at once, so [`AsyncTags`] stands in for
//! the tag allocator: a throttled request is *admitted* into the policy's queues while fewer
//! than `limit` throttled requests are admitted and not yet completed; otherwise it waits here,
//! in arrival order, and is admitted when a throttled request completes (or the limit is
//! raised), with its arrival time in the policy being the admission time, as a request's
//! allocation time is in the kernel. A request waiting here cannot be merged into. Requests
//! that are not throttled are admitted at once and hold no count: the total tag depth
//! (`nr_requests`) is not modelled, the driver's own queue depth bounds them.

use std::collections::VecDeque;

use crate::request::Request;

/// The cap on tags held by throttled requests, and the requests waiting for one.
#[derive(Debug)]
pub struct AsyncTags {
    limit: u32,
    held: u32,
    waiting: VecDeque<Request>,
}

impl AsyncTags {
    /// At most `limit` throttled requests hold tags at once (`limit` 0 acts as 1).
    pub fn new(limit: u32) -> AsyncTags {
        AsyncTags {
            limit: limit.max(1),
            held: 0,
            waiting: VecDeque::new(),
        }
    }

    /// The cap in force.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Change the cap; requests waiting are admitted by the next [`AsyncTags::next_admitted`].
    pub fn set_limit(&mut self, limit: u32) {
        self.limit = limit.max(1);
    }

    /// Throttled requests holding a tag (admitted and not completed).
    pub fn held(&self) -> u32 {
        self.held
    }

    /// Requests waiting for a tag.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// A request arrives: returns it if it may enter the policy's queues now, or keeps it until
    /// a tag is free. A request is admitted at once if it is not `throttled`, or if no earlier
    /// throttled request is waiting and a tag is free.
    pub fn admit(&mut self, rq: Request, throttled: bool) -> Option<Request> {
        if !throttled {
            return Some(rq);
        }
        if self.waiting.is_empty() && self.held < self.limit {
            self.held += 1;
            return Some(rq);
        }
        self.waiting.push_back(rq);
        None
    }

    /// A throttled request completed: its tag is free.
    pub fn release(&mut self) {
        self.held = self.held.saturating_sub(1);
    }

    /// The oldest waiting request, if a tag is free for it now (it then holds the tag).
    pub fn next_admitted(&mut self) -> Option<Request> {
        if self.held >= self.limit {
            return None;
        }
        let rq = self.waiting.pop_front()?;
        self.held += 1;
        Some(rq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::rq;

    #[test]
    fn throttled_requests_beyond_the_limit_wait_in_arrival_order_for_a_release() {
        let mut t = AsyncTags::new(2);
        assert!(t.admit(rq(1, 1).write().build(), true).is_some());
        assert!(t.admit(rq(2, 1).write().build(), true).is_some());
        assert!(t.admit(rq(3, 1).write().build(), true).is_none());
        assert!(t.admit(rq(4, 1).write().build(), true).is_none());
        // Unthrottled requests pass regardless.
        assert!(t.admit(rq(5, 1).read().build(), false).is_some());
        assert_eq!((t.held(), t.waiting()), (2, 2));
        assert!(t.next_admitted().is_none());
        t.release();
        assert_eq!(t.next_admitted().map(|r| r.id.0), Some(3));
        assert!(t.next_admitted().is_none());
        t.set_limit(3);
        assert_eq!(t.next_admitted().map(|r| r.id.0), Some(4));
        assert_eq!(t.held(), 3);
    }
}
