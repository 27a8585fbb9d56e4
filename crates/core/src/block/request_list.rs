//! The legacy request list: how a request queue before blk-mq bounded the requests it held
//! (Linux 2.6.31, block/blk-core.c: `get_request`, `get_request_wait`, `freed_request`,
//! `ioc_batching`, `ioc_set_batching`).
//!
//! A 2.6 request queue allocates at most `nr_requests` requests (`BLKDEV_MAX_RQ`, 128) per
//! class, sync and async (`rw_is_sync`: reads and REQ_SYNC writes are sync), each held from
//! its allocation to its completion. A bio that merges into a queued request needs none. A
//! process whose bio needs one when its class is full sleeps in `get_request_wait`, on an
//! exclusive wait queue of that class, and sleeping it submits nothing else; each request
//! freed while the class is below `nr_requests` wakes one sleeper (`__freed_request`).
//!
//! Batching keeps a woken process from sleeping again at once: the first process to find
//! its class full, and every process that wakes, becomes a *batching* process
//! (`ioc_set_batching`) which may allocate past `nr_requests`, up to half as many again
//! (`3 * nr_requests / 2`), `BLK_BATCH_REQ` (32) requests within `BLK_BATCH_TIME` (20 ms).
//!
//! The policies that bound their requests themselves (mq-deadline, kyber and bfq with
//! blk-mq scheduler tags, [`crate::tags`]; dm-ioband with its `io_limit` above the queue)
//! and `none`, which issues directly, do not use this list; every other policy does (the
//! 2.4, 2.5 and 2.6 elevators, cfq, latency-guard).
//!
//! Deviations:
//! - A woken process runs at once, in the same step as the free that woke it (the kernel's
//!   wakes it and it runs when the CPU takes it, after other allocators may have run).
//! - `elv_may_queue`'s `ELV_MQUEUE_MUST` (cfq lets the queue it is serving allocate past a
//!   full class) is not modelled, nor the congestion thresholds (which only steer writeback).
//! - A split bio's pieces are allocated together, on one check (the kernel allocates each
//!   piece as it resubmits it).
//! - 2.4.20 and 2.5.59 had their own rules (2.4: 64 requests a direction, a sleeper woken
//!   only once 32 are free; 2.5: per-direction lists with a batch of 8); they get 2.6's.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::request::CtxId;
use crate::time::Nanos;

/// `BLKDEV_MAX_RQ`: the default `nr_requests` of a 2.6 request queue.
pub const BLKDEV_MAX_RQ: u32 = 128;
/// `BLK_BATCH_REQ`: requests a batching process may allocate past a full class.
const BLK_BATCH_REQ: u32 = 32;
/// `BLK_BATCH_TIME` (`HZ / 50`): how long a process stays batching.
const BLK_BATCH_TIME: Nanos = Nanos::from_ms(20);

/// The two classes of the list (`rw_is_sync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Async = 0,
    Sync = 1,
}

impl Class {
    pub(super) fn of(sync: bool) -> Class {
        if sync {
            Class::Sync
        } else {
            Class::Async
        }
    }
}

/// A process's batching state (`io_context`'s `nr_batch_requests` and `last_waited`).
#[derive(Clone, Copy, Debug, Default)]
struct Batch {
    left: u32,
    since: Nanos,
}

/// A process asleep in `get_request_wait` and what it would submit after.
#[derive(Debug)]
pub(super) struct Asleep<B> {
    /// Its bios in submission order; the first is the one that found no request.
    pub(super) bios: VecDeque<B>,
    /// It exited while asleep: tell the scheduler once its bios are in.
    pub(super) exited: bool,
}

/// The request list of one queue. `B` is what a sleeping process keeps to submit.
#[derive(Debug)]
pub(super) struct RequestList<B> {
    nr_requests: u32,
    count: [u32; 2],
    full: [bool; 2],
    batch: FxHashMap<CtxId, Batch>,
    /// Sleepers per class, in the order they went to sleep.
    sleepers: [VecDeque<CtxId>; 2],
    asleep: FxHashMap<CtxId, Asleep<B>>,
    pending: usize,
}

impl<B> RequestList<B> {
    pub(super) fn new(nr_requests: u32) -> RequestList<B> {
        RequestList {
            nr_requests: nr_requests.max(1),
            count: [0; 2],
            full: [false; 2],
            batch: FxHashMap::default(),
            sleepers: [VecDeque::new(), VecDeque::new()],
            asleep: FxHashMap::default(),
            pending: 0,
        }
    }

    /// Requests allocated in `class`.
    #[cfg(test)]
    pub(super) fn allocated(&self, class: Class) -> u32 {
        self.count[class as usize]
    }

    /// Bios of sleeping processes.
    pub(super) fn pending(&self) -> usize {
        self.pending
    }

    /// Whether `ctx` is asleep (its bios wait behind the one that found no request).
    pub(super) fn is_asleep(&self, ctx: CtxId) -> bool {
        self.asleep.contains_key(&ctx)
    }

    /// `ioc_batching`.
    fn batching(&self, ctx: CtxId, now: Nanos) -> bool {
        self.batch.get(&ctx).is_some_and(|b| {
            b.left == BLK_BATCH_REQ || (b.left > 0 && now < b.since + BLK_BATCH_TIME)
        })
    }

    /// `ioc_set_batching`: a process that is not batching starts a batch.
    fn set_batching(&mut self, ctx: CtxId, now: Nanos) {
        if !self.batching(ctx, now) {
            self.batch.insert(
                ctx,
                Batch {
                    left: BLK_BATCH_REQ,
                    since: now,
                },
            );
        }
    }

    /// `get_request`: allocate `n` requests of `class` for `ctx`, or refuse (the process
    /// must sleep).
    pub(super) fn allocate(&mut self, ctx: CtxId, class: Class, n: u32, now: Nanos) -> bool {
        let c = class as usize;
        let mut counted_batch = false;
        if self.count[c] + 1 >= self.nr_requests {
            if !self.full[c] {
                self.set_batching(ctx, now);
                self.full[c] = true;
            } else if !self.batching(ctx, now) {
                return false;
            }
            counted_batch = true;
        }
        if self.count[c] >= 3 * self.nr_requests / 2 {
            return false;
        }
        self.count[c] += n;
        if counted_batch && self.batching(ctx, now) {
            if let Some(b) = self.batch.get_mut(&ctx) {
                b.left = b.left.saturating_sub(1);
            }
        }
        true
    }

    /// Put `ctx` to sleep on `class` with `bio` first (a process already asleep keeps its
    /// place and gets `bio` at the end of its list).
    pub(super) fn sleep(&mut self, ctx: CtxId, class: Class, bio: B) {
        self.pending += 1;
        match self.asleep.get_mut(&ctx) {
            Some(a) => a.bios.push_back(bio),
            None => {
                self.sleepers[class as usize].push_back(ctx);
                self.asleep.insert(
                    ctx,
                    Asleep {
                        bios: VecDeque::from([bio]),
                        exited: false,
                    },
                );
            }
        }
    }

    /// Put `ctx`, just woken, back to sleep at the tail of `class` with `bios` (its first
    /// refused again).
    pub(super) fn sleep_again(&mut self, ctx: CtxId, class: Class, asleep: Asleep<B>) {
        self.pending += asleep.bios.len();
        self.sleepers[class as usize].push_back(ctx);
        self.asleep.insert(ctx, asleep);
    }

    /// `ctx` exited; `true` if it is asleep (the exit waits for its bios).
    pub(super) fn defer_exit(&mut self, ctx: CtxId) -> bool {
        match self.asleep.get_mut(&ctx) {
            Some(a) => {
                a.exited = true;
                true
            }
            None => false,
        }
    }

    /// `freed_request`: a request of `class` completed. Returns the process it wakes, if any,
    /// with its bios; it is batching from now.
    pub(super) fn free(&mut self, class: Class, now: Nanos) -> Option<(CtxId, Asleep<B>)> {
        let c = class as usize;
        self.count[c] = self.count[c].saturating_sub(1);
        if self.count[c] + 1 > self.nr_requests {
            return None;
        }
        self.full[c] = false;
        let ctx = self.sleepers[c].pop_front()?;
        let asleep = self
            .asleep
            .remove(&ctx)
            .expect("a sleeper has its bios kept");
        self.pending -= asleep.bios.len();
        // `get_request_wait`: after sleeping the process is a batching one.
        self.set_batching(ctx, now);
        Some((ctx, asleep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: CtxId = CtxId(1);
    const B: CtxId = CtxId(2);

    #[test]
    fn a_class_allocates_nr_requests_then_the_first_to_find_it_full_batches_past_it() {
        // get_request: below nr_requests - 1 anyone allocates; the first process to find the
        // class full sets it full and becomes batching (ioc_set_batching), so it may go on.
        let mut l: RequestList<u32> = RequestList::new(4);
        let t = Nanos::ZERO;
        for _ in 0..3 {
            assert!(l.allocate(B, Class::Async, 1, t));
        }
        assert!(l.allocate(A, Class::Async, 1, t), "A finds it full first");
        assert!(!l.allocate(B, Class::Async, 1, t), "B is not batching");
        assert!(l.allocate(A, Class::Async, 1, t), "A is batching");
        assert!(l.allocate(A, Class::Async, 1, t), "up to 3 * 4 / 2 = 6");
        assert!(
            !l.allocate(A, Class::Async, 1, t),
            "never past 3/2 nr_requests"
        );
        assert_eq!(l.allocated(Class::Async), 6);
        // The other class is counted apart.
        assert!(l.allocate(B, Class::Sync, 1, t));
    }

    #[test]
    fn batching_ends_after_20_ms_or_32_requests() {
        // ioc_batching: nr_batch_requests == nr_batching, or some left within BLK_BATCH_TIME.
        let mut l: RequestList<u32> = RequestList::new(2);
        let t = Nanos::ZERO;
        assert!(l.allocate(A, Class::Async, 1, t));
        assert!(
            l.allocate(A, Class::Async, 1, t),
            "full at 1 + 1: A batches"
        );
        assert!(
            l.allocate(A, Class::Async, 1, Nanos::from_ms(19)),
            "within 20 ms"
        );
        assert!(l.free(Class::Async, t).is_none());
        assert!(
            !l.allocate(A, Class::Async, 1, Nanos::from_ms(20)),
            "time_before(jiffies, last_waited + BLK_BATCH_TIME) is strict: at 20 ms it is over"
        );
        assert!(
            !l.allocate(A, Class::Async, 1, Nanos::from_ms(21)),
            "20 ms after the batch began A is an ordinary process again"
        );

        // Within the 20 ms, BLK_BATCH_REQ (32) requests past the full mark and no more: the
        // one that set the queue full is the first of them (get_request decrements
        // nr_batch_requests for it too).
        let mut l: RequestList<u32> = RequestList::new(100);
        for _ in 0..99 {
            assert!(l.allocate(B, Class::Async, 1, t));
        }
        let mut granted = 0;
        while l.allocate(A, Class::Async, 1, Nanos::from_ms(1)) {
            granted += 1;
        }
        assert_eq!(granted, BLK_BATCH_REQ, "32, with room up to 150 left");
        assert_eq!(l.allocated(Class::Async), 99 + BLK_BATCH_REQ);
    }

    #[test]
    fn a_batch_is_spent_only_by_allocations_past_the_full_mark() {
        // get_request takes the io_context (and decrements nr_batch_requests) only when the
        // class is at nr_requests; ioc_set_batching leaves a batching process's batch as it is.
        let mut l: RequestList<u32> = RequestList::new(100);
        let t = Nanos::from_ms(1);
        for _ in 0..99 {
            assert!(l.allocate(B, Class::Async, 1, t));
        }
        assert!(l.allocate(A, Class::Async, 1, t), "A sets it full: 31 left");
        for _ in 0..50 {
            assert!(l.free(Class::Async, t).is_none());
        }
        for _ in 0..49 {
            assert!(
                l.allocate(A, Class::Async, 1, t),
                "below the mark: the batch untouched"
            );
        }
        let mut granted = 0;
        while l.allocate(A, Class::Async, 1, t) {
            granted += 1;
        }
        assert_eq!(
            granted,
            BLK_BATCH_REQ - 1,
            "the 31 left of A's batch, not a new one of 32"
        );
    }

    #[test]
    fn a_free_below_nr_requests_wakes_one_sleeper_in_the_order_they_slept() {
        // __freed_request: count + 1 <= nr_requests wakes the wait queue (exclusive: one).
        let mut l: RequestList<u32> = RequestList::new(2);
        let t = Nanos::ZERO;
        assert!(l.allocate(A, Class::Sync, 1, t));
        assert!(l.allocate(A, Class::Sync, 1, t));
        assert!(l.allocate(A, Class::Sync, 1, t));
        assert!(!l.allocate(B, Class::Sync, 1, t));
        l.sleep(B, Class::Sync, 10);
        l.sleep(B, Class::Sync, 11);
        l.sleep(CtxId(3), Class::Sync, 20);
        assert_eq!(l.pending(), 3);
        assert!(l.free(Class::Sync, t).is_none(), "3 -> 2: still full");
        let (ctx, asleep) = l.free(Class::Sync, t).expect("2 -> 1 wakes one");
        assert_eq!(ctx, B);
        assert_eq!(asleep.bios, [10, 11]);
        assert_eq!(l.pending(), 1);
        assert!(
            l.allocate(B, Class::Sync, 1, t),
            "the woken process is batching"
        );
    }
}
