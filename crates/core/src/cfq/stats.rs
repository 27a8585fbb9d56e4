//! Statistics CFQ steers by: think times (`cfq_ttime`), seek history and seekiness, the
//! device's queueing depth estimate (`hw_tag`), and the counters of its decisions.

use crate::request::{CtxId, Op, Request};

use super::types::{Class, QId};
use super::Cfq;

/// `CFQ_HW_QUEUE_MIN`.
const HW_QUEUE_MIN: u32 = 5;

/// Sectors of seek distance above which a request counts as a seek (`CFQQ_SEEK_THR`).
pub(super) const SEEK_THR: u64 = 8 * 100;
/// Below this request size (sectors) a request counts as seeky on a non-rotational device
/// (`CFQQ_SECT_THR_NONROT`).
pub(super) const SECT_THR_NONROT: u64 = 2 * 32;

/// Think-time statistics (`cfq_ttime`), in nanoseconds with the kernel's 7/8 decay and
/// 256-based fixed point for the sample count.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TTime {
    /// When the owner's last sync request completed.
    pub last_end: u64,
    total: u64,
    samples: u64,
    /// The decayed mean think time, ns.
    pub mean: u64,
}

impl TTime {
    /// Fresh statistics whose clock starts at `now`.
    pub fn new(now: u64) -> TTime {
        TTime {
            last_end: now,
            ..TTime::default()
        }
    }

    /// Account one new request arriving at `now`; the gap since the last completion is
    /// capped at `2 * slice`.
    pub fn update(&mut self, now: u64, slice: u64) {
        let elapsed = now.saturating_sub(self.last_end).min(2 * slice);
        self.samples = (7 * self.samples + 256) / 8;
        self.total = (7 * self.total + 256 * elapsed) / 8;
        self.mean = (self.total + 128) / self.samples;
    }

    /// Enough samples to trust the mean (`sample_valid`: more than 80 in 256ths).
    pub fn valid(&self) -> bool {
        self.samples > 80
    }

    /// `cfq_io_thinktime_big`: a trusted mean above `slice`.
    pub fn big(&self, slice: u64) -> bool {
        self.valid() && self.mean > slice
    }
}

/// Counters of CFQ's decisions since it was built (what blktrace would show).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CfqStats {
    /// A process's queue was merged into a cooperating process's queue.
    pub queue_merges: u64,
    /// A shared queue was broken apart for a process.
    pub queue_splits: u64,
    /// An arriving request preempted the active queue.
    pub preemptions: u64,
    /// The slice-idle or group-idle timer was armed.
    pub idle_arms: u64,
}

impl Cfq {
    /// `cfq_update_io_seektime`.
    pub(super) fn update_io_seektime(&mut self, q: QId, rq: &Request) {
        let nonrot = self.nonrot();
        let cq = &mut self.queues[q];
        let sdist = if cq.last_request_pos != 0 {
            cq.last_request_pos.abs_diff(rq.sector)
        } else {
            0
        };
        cq.seek_history <<= 1;
        let seek = if nonrot {
            u64::from(rq.sectors) < SECT_THR_NONROT
        } else {
            sdist > SEEK_THR
        };
        cq.seek_history |= u32::from(seek);
    }

    /// `cfq_update_idle_window`.
    pub(super) fn update_idle_window(&mut self, q: QId, ctx: CtxId) {
        let cq = &self.queues[q];
        if !cq.sync || cq.class == Class::Idle {
            return;
        }
        let mut enable = cq.idle_window;
        let deep = cq.deep || cq.queued[0] + cq.queued[1] >= 4;
        // `req_noidle`: a sync write without REQ_IDLE (fsync, O_SYNC writeback). O_DIRECT
        // writes carry REQ_IDLE and keep their idle window.
        let noidle = cq.next_rq.is_some_and(|(_, slot)| {
            let r = cq.at(slot);
            r.op == Op::Write && r.sync && !r.idle_hint
        });
        let cic = &self.cics[&ctx];
        if noidle || cic.exited || self.cfg.slice_idle == 0 || (!deep && cq.seeky()) {
            enable = false;
        } else if cic.ttime.valid() {
            enable = cic.ttime.mean <= self.cfg.slice_idle;
        }
        let cq = &mut self.queues[q];
        cq.deep = deep;
        cq.idle_window = enable;
    }

    /// `cfq_update_hw_tag`, at each completion.
    pub(super) fn update_hw_tag(&mut self) {
        self.hw_tag_est_depth = self.hw_tag_est_depth.max(self.rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_queued <= HW_QUEUE_MIN && self.rq_in_driver <= HW_QUEUE_MIN {
            return;
        }
        if let Some(a) = self.active_queue {
            let cq = &self.queues[a];
            if cq.idle_window
                && cq.dispatched + cq.queued[0] + cq.queued[1] < HW_QUEUE_MIN
                && self.rq_in_driver < HW_QUEUE_MIN
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= 50 {
            return;
        }
        self.hw_tag = i8::from(self.hw_tag_est_depth >= HW_QUEUE_MIN);
    }
}
