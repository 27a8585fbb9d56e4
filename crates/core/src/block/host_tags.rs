//! The host's tag set under a policy that issues directly (`none`), when it holds more
//! requests than the device: when each request got its tag.
//!
//! Linux's blk-mq gives every request a tag when it is allocated (`blk_mq_get_tag`, in
//! `__blk_mq_alloc_requests`); a submitter finding none free sleeps there. The request's
//! `start_time_ns` is set once it has its tag (`blk_mq_rq_time_init`), its `alloc_time_ns`
//! before the wait ("alloc_time includes depth and tag waits"), and io.cost counts the
//! difference as waiting to be issued (`ioc_rqos_done`: `rq_wait_ns = start_time_ns -
//! alloc_time_ns`). Under `none` the tag set is the driver's: an NVMe drive's is its queue, so
//! a request gets its tag when the drive has room (what the layer assumes by default). A SCSI
//! or SATA host tags as many requests as the host takes (`can_queue`; AHCI: 32,
//! `ATA_MAX_QUEUE`) whatever the disk holds; the requests beyond the disk's queue depth hold
//! their tags and wait on the hardware queue's dispatch list for the device's budget
//! (`scsi_mq_get_budget`), which io.cost does not count.
//!
//! Tags go in the order they were asked for, and `none` dispatches in that order, so a
//! request never reaches the device before it has a tag when the host holds at least as many
//! as the device ([`HostTags::new`] takes the larger).

use std::collections::VecDeque;

/// A disk's host tags under `none` in the simulator: AHCI's 32 (`ATA_MAX_QUEUE`); a SCSI
/// host's `can_queue` is as many or more.
pub const DISK_HOST_TAGS: usize = 32;

/// The tags of one host queue.
#[derive(Clone, Debug)]
pub(super) struct HostTags {
    depth: usize,
    held: usize,
    /// Requests that asked for a tag and have none yet, in order.
    waiting: VecDeque<u64>,
}

impl HostTags {
    /// `depth` tags, at least the device's `queue_depth`.
    pub(super) fn new(depth: usize, queue_depth: usize) -> HostTags {
        HostTags {
            depth: depth.max(queue_depth).max(1),
            held: 0,
            waiting: VecDeque::new(),
        }
    }

    /// The tags (the tag set's `queue_depth`).
    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    /// Request `id` asks for a tag: whether it got one at once (else it waits its turn).
    pub(super) fn get(&mut self, id: u64) -> bool {
        if self.held < self.depth && self.waiting.is_empty() {
            self.held += 1;
            true
        } else {
            self.waiting.push_back(id);
            false
        }
    }

    /// A request took a tag out of turn (it reached the device without one).
    pub(super) fn take(&mut self) {
        self.held += 1;
    }

    /// A holder completed: its tag is free. The waiters in order, until `grant` accepts one
    /// (a waiter that got a tag otherwise is refused and dropped), get it.
    pub(super) fn put(&mut self, mut grant: impl FnMut(u64) -> bool) {
        self.held = self.held.saturating_sub(1);
        while self.held < self.depth {
            let Some(id) = self.waiting.pop_front() else {
                return;
            };
            if grant(id) {
                self.held += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `blk_mq_get_tag`: two tags; the third and fourth requests wait and get the tags freed,
    /// in the order they asked.
    #[test]
    fn waiters_get_freed_tags_in_the_order_they_asked() {
        let mut t = HostTags::new(2, 1);
        assert!(t.get(1));
        assert!(t.get(2));
        assert!(!t.get(3));
        assert!(!t.get(4));
        let mut got = Vec::new();
        t.put(|id| {
            got.push(id);
            true
        });
        assert_eq!(got, vec![3]);
        // A waiter that already has a tag is skipped; the next one gets the freed tag.
        t.put(|id| {
            got.push(id);
            id != 4
        });
        assert_eq!(got, vec![3, 4]);
        assert_eq!(t.held, 1);
        // Never fewer tags than the device holds.
        assert_eq!(HostTags::new(1, 8).depth, 8);
    }
}
