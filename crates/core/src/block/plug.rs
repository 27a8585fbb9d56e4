//! A submitter's plug (`blk_start_plug` .. `blk_finish_plug`, Linux 6.18 block/blk-mq.c,
//! blk-core.c): the requests a process builds while it submits a batch of bios wait in its
//! plug, and go to the scheduler together when the batch ends.
//!
//! What the kernel does, and what [`BlockLayer::handle_plug`] / [`BlockLayer::handle_unplug`]
//! follow: io_uring plugs a submission of more than two entries (`io_submit_state_start`'s
//! `need_plug`), `io_submit` more than `AIO_PLUG_THRESHOLD` (2). Inside the plug each bio is
//! offered first to the request at the plug's tail (`blk_attempt_plug_merge`: a back or front
//! merge of the same operation, priority and group, within the device's size limit), then to
//! the scheduler's queued requests (`blk_mq_sched_bio_merge`); a bio that merges into neither
//! becomes a request added to the plug (`blk_add_rq_to_plug`), which first flushes the plug
//! when it already holds `BLK_MAX_REQUEST_COUNT` (32) requests or the request `rq_list_peek`
//! gives, the list's head (its oldest since 6.13's `rq_list_add_tail`; the merge above looks
//! at the tail, `plug->mq_list.tail`), is `BLK_PLUG_FLUSH_SIZE` (128 KiB) or more (merges
//! allowed). `blk_finish_plug` flushes the
//! rest (`blk_mq_flush_plug_list`): the requests enter the scheduler in the order they were
//! added (the plug list has kept its order since 6.13's `rq_list_add_tail`), then the queue
//! runs.
//!
//! Deviations, named:
//! - A plugged request takes its scheduler tag at the flush, not when it is built
//!   (`blk_mq_get_new_requests`): a plug never sleeps for a tag here.
//! - At the flush no insertion merge is tried (`blk_mq_sched_try_insert_merge` in the
//!   policies' `insert_requests`); the bio merges above are.
//! - A bio that a controller ([`QosHook`](super::QosHook)) holds, that must be split at the
//!   device's limits, or that a legacy policy's request list bounds, takes the whole way at
//!   once as if unplugged (the kernel puts split pieces in the plug too, and flushes the plug
//!   before a throttled task sleeps).

use super::*;

/// A submission call of more bios than this is plugged: io_uring's `io_submit_state_start`
/// sets `need_plug` for more than two entries, and `io_submit` starts a plug above
/// `AIO_PLUG_THRESHOLD` (2).
pub const PLUG_THRESHOLD: usize = 2;

/// Requests a plug holds before adding another flushes it (`BLK_MAX_REQUEST_COUNT`, one
/// queue).
pub const BLK_MAX_REQUEST_COUNT: usize = 32;

/// A plug whose first request is this large or larger is flushed before another request is
/// added (`BLK_PLUG_FLUSH_SIZE`, 128 KiB), unless the queue merges nothing.
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;

/// A request built in a plug, with the bios merged into it there.
pub(super) struct Plugged<T> {
    rq: Request,
    /// The first bio's own extent (sector, sectors): the request grows past it.
    first: (u64, u32),
    token: T,
    key: u64,
    more: Vec<Segment<T>>,
}

impl<S: Scheduler, T: Copy> BlockLayer<S, T> {
    /// Context `ctx` starts a plug (`blk_start_plug`): the requests its bios build wait in
    /// it until [`handle_unplug`](Self::handle_unplug). A plug already open stays as it is.
    /// Only blk-mq policies plug: under a policy the request list bounds (the legacy
    /// queue's `get_request`) this does nothing.
    pub fn handle_plug(&mut self, ctx: CtxId) {
        if !self.listed() {
            self.plugs.entry(ctx).or_default();
        }
    }

    /// The bios of one submission call (one `io_uring_enter` or `io_submit` for them all),
    /// in order, each with its token: in a plug of each submitter when there are more than
    /// [`PLUG_THRESHOLD`], as [`handle_submit`](Self::handle_submit) otherwise.
    pub fn handle_submit_call(&mut self, bios: Vec<(Bio, T)>, now: Nanos) {
        let plug = bios.len() > PLUG_THRESHOLD;
        let mut plugged: Vec<CtxId> = Vec::new();
        for (bio, token) in bios {
            if plug && !plugged.contains(&bio.ctx) {
                self.handle_plug(bio.ctx);
                plugged.push(bio.ctx);
            }
            self.handle_submit(bio, token, now);
        }
        for ctx in plugged {
            self.handle_unplug(ctx, now);
        }
    }

    /// Context `ctx` ends its plug now (`blk_finish_plug`): its requests enter the
    /// scheduler in the order they were built. Without an open plug, nothing happens.
    pub fn handle_unplug(&mut self, ctx: CtxId, now: Nanos) {
        if let Some(plug) = self.plugs.remove(&ctx) {
            self.flush_plug(plug, now);
        }
    }

    /// Whether `bio` goes to its submitter's open plug.
    pub(super) fn plugs_bio(&self, bio: &Bio) -> bool {
        !self.plugs.is_empty()
            && self.plugs.contains_key(&bio.ctx)
            && matches!(bio.op, Op::Read | Op::Write)
            && !bio.issue_directly
            && !self.listed()
    }

    /// `bio` of a plugged submitter: into the plug's tail, into a queued request, or a new
    /// request in the plug (`blk_mq_submit_bio` under a plug).
    pub(super) fn plug_bio(&mut self, bio: Bio, token: T, key: u64, now: Nanos) {
        let limit = self
            .limits
            .request_sectors(self.sched.max_request_sectors());
        if limit.is_some_and(|m| m > 0 && bio.sectors > m) {
            // Split at the device's limits: the whole way now (a deviation, above).
            self.queue_now(bio, token, key, now);
            return;
        }
        let room = limit.unwrap_or(DEFAULT_MERGE_SECTORS);
        if self.limits.nomerges != NoMerges::None && self.plug_merge(&bio, token, key, room, now) {
            return;
        }
        let rq = match self.build(bio, token, key, now) {
            Built::Merged => return,
            Built::Split(..) => unreachable!("a bio past the limit was queued above"),
            Built::One(rq) => rq,
        };
        let plug = self.plugs.get_mut(&rq.ctx).expect("plugs_bio checked");
        let full = plug.len() >= BLK_MAX_REQUEST_COUNT
            || (self.limits.nomerges != NoMerges::None
                && plug
                    .first()
                    .is_some_and(|p| p.rq.bytes() >= BLK_PLUG_FLUSH_SIZE));
        if full {
            let flushed = std::mem::take(plug);
            self.flush_plug(flushed, now);
        }
        self.plugs
            .get_mut(&rq.ctx)
            .expect("still open")
            .push(Plugged {
                first: (rq.sector, rq.sectors),
                rq,
                token,
                key,
                more: Vec::new(),
            });
    }

    /// `blk_attempt_plug_merge`: `bio` joins the request at its plug's tail if it continues
    /// it (back) or ends where it starts (front), of the same operation, priority and group,
    /// and the result stays within `room` sectors.
    fn plug_merge(&mut self, bio: &Bio, token: T, key: u64, room: u32, now: Nanos) -> bool {
        let Some(tail) = self.plugs.get(&bio.ctx).and_then(|p| p.last()) else {
            return false;
        };
        let t = &tail.rq;
        let compatible = t.op == bio.op && t.prio == bio.prio && t.group == bio.group;
        let back = t.end() == bio.sector;
        let front = bio.sector + u64::from(bio.sectors) == t.sector;
        let fits = u64::from(t.sectors) + u64::from(bio.sectors) <= u64::from(room);
        if !(compatible && fits && (back || front)) {
            return false;
        }
        let mut rq = bio.request(now);
        self.next_id += 1;
        rq.id = RequestId(self.next_id);
        self.observe(Event::Queue, &rq, now);
        self.observe(Event::Merge, &rq, now);
        self.stat.merged(rq.op);
        self.counters.merged += 1;
        let tail = self
            .plugs
            .get_mut(&bio.ctx)
            .and_then(|p| p.last_mut())
            .expect("looked at above");
        if front {
            tail.rq.sector = bio.sector;
        }
        tail.rq.sectors += bio.sectors;
        // Its queue position is stamped at the flush.
        tail.more.push(Segment::merged(&rq, token, key, 0));
        true
    }

    /// `blk_mq_flush_plug_list`: each request of `plug` enters the scheduler, in order, with
    /// the bios merged into it in the plug.
    fn flush_plug(&mut self, plug: Vec<Plugged<T>>, now: Nanos) {
        for p in plug {
            let id = p.rq.id.0;
            if let Err(w) = self.allocate_and_insert(p.rq, p.token, p.key, None, false, now) {
                // Not where a plug opens (only where the request list does not bound): a
                // refused request could not carry the bios merged into it here.
                assert!(
                    p.more.is_empty(),
                    "the request list refused a request grown in a plug"
                );
                self.sleep_refused(w);
                continue;
            }
            if p.more.is_empty() {
                continue;
            }
            let queued = (self.counters.inserted - self.counters.dispatched) as u32;
            let r = self
                .requests
                .get_mut(&id)
                .expect("a request just inserted is known");
            // The request was recorded grown: its first segment is its first bio's own.
            (r.segs.first.sector, r.segs.first.sectors) = p.first;
            r.segs
                .more
                .extend(p.more.into_iter().map(|s| Segment { queued, ..s }));
        }
        self.kick = true;
    }

    /// Requests waiting in open plugs.
    pub(super) fn plugged(&self) -> usize {
        self.plugs.values().map(Vec::len).sum()
    }
}
