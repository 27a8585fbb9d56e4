//! The host side of the drive: NVMe submission queues, the controller's front end, the host
//! link and the DRAM write buffer, as timelines and a release schedule.
//!
//! Follows MQSim's NVMe host interface (`Host_Interface_NVMe.cpp`: per-flow submission
//! queues, commands fetched in order) and its write cache (`Data_Cache_Manager_Flash_Simple`:
//! a write completes once in DRAM when there is room). Deviations: a queue's commands are
//! served one at a time for `command_us` each and queues are independent (no fetch-size
//! limit, no arbitration weights); the PCIe link is one shared pipe of `link_mb_s` with no
//! per-message overhead.
//!
//! [`FrontEnd`] is ours, not MQSim's (whose reads never wait for writes before the flash): a
//! controller that hands commands to its back end in the order it fetched them, with a bounded
//! number of command slots, serving a few of them at once, where a write is served until its
//! data is admitted to the write buffer. NVMe's default arbitration is round robin over the
//! submission queues, so a queue with a command waiting gets the next slot freed; once
//! fetched, the command waits until all but `servers - 1` of the writes fetched before it are
//! admitted (with `front_end_scope = "queue"`, only those of its own submission queue: NVMe
//! orders no queue behind another). docs/ssd-model.md says what it models and what is assumed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use elevator_core::Nanos;

use super::flash::{ps_per_byte, us_to_ns};
use super::spec::{FrontEndScope, Host as HostSpec};
use super::timeline::GapTimeline;

/// Submission queues, front end and link.
#[derive(Clone, Debug)]
pub struct HostInterface {
    sq_free: Vec<Nanos>,
    command_ns: u64,
    front_free: Nanos,
    front_ns: u64,
    firmware_ns: u64,
    link: GapTimeline,
    link_ps_per_byte: u64,
}

impl HostInterface {
    /// Idle queues for `spec`.
    pub fn new(spec: &HostSpec) -> HostInterface {
        HostInterface {
            sq_free: vec![Nanos::ZERO; spec.queues as usize],
            command_ns: us_to_ns(spec.command_us),
            front_free: Nanos::ZERO,
            front_ns: us_to_ns(spec.controller_command_us),
            firmware_ns: us_to_ns(spec.firmware_us),
            link: GapTimeline::new(),
            link_ps_per_byte: ps_per_byte(spec.link_mb_s),
        }
    }

    /// A command on queue `queue` submitted at `now`: when the controller has it decoded and
    /// may start its work.
    pub fn accept(&mut self, queue: u32, now: Nanos) -> Nanos {
        let n = self.sq_free.len();
        let q = &mut self.sq_free[queue as usize % n];
        let fetched = now.max(*q) + Nanos(self.command_ns);
        *q = fetched;
        let front = fetched.max(self.front_free) + Nanos(self.front_ns);
        self.front_free = front;
        front + Nanos(self.firmware_ns)
    }

    /// Move `bytes` over the host link once `ready` (no earlier than `now`); returns when they
    /// are across.
    pub fn transfer(&mut self, bytes: u64, ready: Nanos, now: Nanos) -> Nanos {
        let len = (bytes * self.link_ps_per_byte).div_ceil(1000);
        self.link.reserve(ready, len, now)
    }
}

/// The DRAM write buffer: bytes held until their flash page is programmed.
#[derive(Clone, Debug)]
pub struct WriteBuffer {
    capacity: u64,
    /// Bytes admitted and not yet released (including those whose release is scheduled).
    used: u64,
    /// Bytes whose page is not full yet, so not yet scheduled for programming.
    open: u64,
    /// Scheduled releases: (page programmed, bytes).
    releases: BinaryHeap<Reverse<(Nanos, u64)>>,
    /// When everything scheduled so far is on flash.
    drained: Nanos,
    /// DRAM transfer time per byte, picoseconds (0: instant), and when the DRAM is free.
    dram_ps_per_byte: u64,
    dram_free: Nanos,
    /// When the last write was admitted.
    last: Nanos,
}

impl WriteBuffer {
    /// An empty buffer of `capacity` bytes filled at `mb_s` (0: instantly).
    pub fn new(capacity: u64, mb_s: f64) -> WriteBuffer {
        WriteBuffer {
            capacity,
            used: 0,
            open: 0,
            releases: BinaryHeap::new(),
            drained: Nanos::ZERO,
            dram_ps_per_byte: if mb_s > 0.0 { ps_per_byte(mb_s) } else { 0 },
            dram_free: Nanos::ZERO,
            last: Nanos::ZERO,
        }
    }

    /// Admit a write of `data` bytes taking `bytes` of room (the data it brings) that
    /// arrived at `at`: returns when it is in the buffer (once there is room, earlier data
    /// having been programmed, and the DRAM has taken its data). Writes are admitted in the
    /// order they come, each no earlier than the one before it (MQSim's writes waiting for
    /// DRAM room wait in one list, served in order).
    pub fn admit(&mut self, bytes: u64, data: u64, at: Nanos) -> Nanos {
        let mut t = at.max(self.last);
        while let Some(&Reverse((done, b))) = self.releases.peek() {
            if done > t && self.used + bytes <= self.capacity {
                break;
            }
            self.releases.pop();
            self.used -= b;
            t = t.max(done);
        }
        self.used += bytes;
        self.open += bytes;
        if self.dram_ps_per_byte > 0 {
            let start = t.max(self.dram_free);
            t = start + Nanos((data * self.dram_ps_per_byte).div_ceil(1000));
            self.dram_free = t;
        }
        self.last = t;
        t
    }

    /// `bytes` of admitted data go to flash in a page programmed at `done`.
    pub fn scheduled(&mut self, bytes: u64, done: Nanos) {
        let bytes = bytes.min(self.open);
        self.open -= bytes;
        self.releases.push(Reverse((done, bytes)));
        self.drained = self.drained.max(done);
    }

    /// When every byte scheduled so far is on flash (a flush's completion).
    pub fn drained(&self) -> Nanos {
        self.drained
    }
}

/// The controller's in-order front end (`host.front_end_slots`, `host.front_end_servers`,
/// `host.front_end_scope`): commands are served in fetch order, `servers` at a time, and a
/// write is served until its data is in the write buffer.
///
/// Kept as the admission times of the writes fetched and not yet admitted, in fetch order
/// (admission is in order too, so they never decrease), for the whole drive and, with the
/// `queue` scope, for each submission queue. A command other than a write is fetched when it
/// is submitted if a slot is free, else at the next admission (round robin gives its queue the
/// next slot); it is then served once fewer than `servers` of the writes ahead of it are not
/// yet admitted: those in the slots (`drive` scope), or those of its own submission queue
/// (`queue` scope: NVMe fetches a queue in order, and orders no queue behind another).
#[derive(Clone, Debug, Default)]
pub struct FrontEnd {
    /// Command slots; 0: no in-order stage.
    slots: usize,
    /// Commands served at once (at least 1).
    servers: usize,
    /// Admission times of the writes in the front end, in fetch order.
    pending: VecDeque<Nanos>,
    /// With the `queue` scope, the same per submission queue (`context id mod queues`);
    /// empty with the `drive` scope.
    per_queue: Vec<VecDeque<Nanos>>,
}

impl FrontEnd {
    /// A front end of `slots` command slots (0: none) serving `servers` commands at once, its
    /// commands waiting for the writes of the whole drive or of their own queue (`scope`), of
    /// `queues` submission queues.
    pub fn new(slots: u32, servers: u32, scope: FrontEndScope, queues: u32) -> FrontEnd {
        let per_queue = match scope {
            FrontEndScope::Drive => Vec::new(),
            FrontEndScope::Queue => vec![VecDeque::new(); queues.max(1) as usize],
        };
        FrontEnd {
            slots: slots as usize,
            servers: servers.max(1) as usize,
            pending: VecDeque::new(),
            per_queue,
        }
    }

    fn forget(&mut self, now: Nanos) {
        while self.pending.front().is_some_and(|&a| a <= now) {
            self.pending.pop_front();
        }
        for q in &mut self.per_queue {
            while q.front().is_some_and(|&a| a <= now) {
                q.pop_front();
            }
        }
    }

    /// A write decoded at `accepted` (submitted at `now`): when it holds a slot (its data is
    /// then admitted after the writes before it, as the buffer admits in order).
    pub fn fetch_write(&mut self, accepted: Nanos, now: Nanos) -> Nanos {
        if self.slots == 0 {
            return accepted;
        }
        self.forget(now);
        // Its own queue's writes take the slots in order: it gets the one freed by the write
        // `slots` places ahead of it.
        match self.pending.len().checked_sub(self.slots) {
            Some(i) => accepted.max(self.pending[i]),
            None => accepted,
        }
    }

    /// The write of context `ctx` placed by the last [`FrontEnd::fetch_write`] is admitted at
    /// `at` (no earlier than the writes before it: the buffer admits in order).
    pub fn admitted(&mut self, ctx: u32, at: Nanos) {
        if self.slots > 0 {
            debug_assert!(self.pending.back().is_none_or(|&a| a <= at));
            self.pending.push_back(at);
            let n = self.per_queue.len();
            if n > 0 {
                self.per_queue[ctx as usize % n].push_back(at);
            }
        }
    }

    /// A command of context `ctx` other than a write, decoded at `accepted` (submitted at
    /// `now`): when the front end hands it to the back end.
    pub fn handoff(&mut self, ctx: u32, accepted: Nanos, now: Nanos) -> Nanos {
        if self.slots == 0 || self.pending.is_empty() {
            return accepted;
        }
        self.forget(now);
        // The writes still in the front end when it is decoded.
        let first = self.pending.partition_point(|&a| a <= accepted);
        let ahead = self.pending.len() - first;
        if ahead == 0 {
            return accepted;
        }
        let n = self.per_queue.len();
        if n > 0 {
            // `queue` scope: fetched at once if a slot is free, else at the first admission;
            // then served once all but `servers - 1` of its own queue's writes submitted
            // before it are admitted (fetched before it, in order).
            let fetched = if ahead >= self.slots {
                self.pending[first]
            } else {
                accepted
            };
            let own = &self.per_queue[ctx as usize % n];
            let own_first = own.partition_point(|&a| a <= accepted);
            let served = match (own.len() - own_first).checked_sub(self.servers) {
                Some(i) => own[own_first + i],
                None => accepted,
            };
            return fetched.max(served);
        }
        // With every slot held it is fetched at the first admission and then has the
        // `slots - 1` writes after it ahead of it; else all of them. It is served when all but
        // `servers - 1` of those are admitted.
        if ahead >= self.slots {
            self.pending[first + self.slots.saturating_sub(self.servers)]
        } else {
            match ahead.checked_sub(self.servers) {
                Some(i) => self.pending[first + i],
                None => accepted,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A front end of `slots` slots and `servers` servers holding five writes fetched at 0,
    /// admitted at 10, 20, 30, 40 and 50 ns: when a read decoded at 1 ns is handed over.
    fn handoff(slots: u32, servers: u32) -> u64 {
        let mut f = FrontEnd::new(slots, servers, FrontEndScope::Drive, 64);
        for a in [10, 20, 30, 40, 50] {
            f.fetch_write(Nanos(0), Nanos(0));
            f.admitted(2, Nanos(a));
        }
        f.handoff(1, Nanos(1), Nanos(0)).0
    }

    #[test]
    fn a_read_waits_for_all_but_servers_minus_one_of_the_writes_ahead() {
        // Eight slots: all five writes are ahead of it.
        assert_eq!(
            [1, 2, 3, 5, 6, 9].map(|s| handoff(8, s)),
            [50, 40, 30, 10, 1, 1]
        );
        // Three slots, all held: it is fetched at the first admission (10) and then has the
        // two writes after it ahead of it.
        assert_eq!([1, 2, 3, 4].map(|s| handoff(3, s)), [30, 20, 10, 10]);
        // No stage: no wait.
        assert_eq!(handoff(0, 1), 1);
    }

    /// The `queue` scope: writes of contexts `queues[i]` fetched at 0 and admitted at 10, 20,
    /// 30, 40, 50 ns; when a read of context `ctx` decoded at 1 ns is handed over.
    fn handoff_queue(slots: u32, servers: u32, queues: [u32; 5], ctx: u32) -> u64 {
        let mut f = FrontEnd::new(slots, servers, FrontEndScope::Queue, 64);
        for (a, q) in [10, 20, 30, 40, 50].into_iter().zip(queues) {
            f.fetch_write(Nanos(0), Nanos(0));
            f.admitted(q, Nanos(a));
        }
        f.handoff(ctx, Nanos(1), Nanos(0)).0
    }

    #[test]
    fn with_the_queue_scope_a_read_waits_only_for_its_own_queues_writes_and_a_slot() {
        // Another queue's five writes: with a free slot no wait, with all three held the first
        // admission (10), never the writes after it.
        assert_eq!(handoff_queue(8, 1, [2; 5], 1), 1);
        assert_eq!(handoff_queue(3, 1, [2; 5], 1), 10);
        // Its own queue's: all of them, as the drive scope (in order within a queue).
        assert_eq!(handoff_queue(8, 1, [2; 5], 2), 50);
        assert_eq!(handoff_queue(8, 2, [2; 5], 2), 40);
        // Mixed: only its own queue's (20 and 40), whatever the other's.
        assert_eq!(handoff_queue(8, 1, [2, 1, 2, 1, 2], 1), 40);
        assert_eq!(handoff_queue(8, 1, [2, 1, 2, 1, 2], 2), 50);
        // Queues are context ids modulo the drive's 64: context 65 is queue 1.
        assert_eq!(handoff_queue(8, 1, [2, 1, 2, 1, 2], 65), 40);
    }
}
