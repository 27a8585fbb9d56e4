//! Anticipation: the timer that keeps the disk idle for the process whose request just
//! completed (`as_antic_timeout`), and the heuristics that decide to wait for it or to stop
//! waiting (`as_can_break_anticipation`, `as_can_anticipate`, `as_close_req`).

use crate::time::Nanos;

use super::stats::{decay, update_iohist, Aic, ONE};
use super::types::{AnticState, Candidate, Key};
use super::Anticipatory;

/// The close window right after the anticipated request completed, in sectors.
pub(super) const CLOSE_BASE: u64 = 8192;

impl Anticipatory {
    /// `as_antic_timeout`, run lazily: the timer fires at the first call at or after it.
    pub(super) fn run_timer(&mut self, now: Nanos) {
        if self.antic_status != AnticState::WaitNext || now < self.antic_deadline {
            return;
        }
        self.antic_status = AnticState::Finished;
        let Some(aic) = self.io_context.and_then(|c| self.aics.get(&c)) else {
            return;
        };
        if aic.ttime_samples == 0 {
            // The anticipated process has exited or timed out.
            self.g.exit_prob = decay(self.g.exit_prob, ONE);
        }
        if !aic.running {
            // Not saved by a cooperating request.
            self.g.exit_no_coop = decay(self.g.exit_no_coop, ONE);
        }
    }

    pub(super) fn antic_waitnext(&mut self) {
        debug_assert!(matches!(
            self.antic_status,
            AnticState::Off | AnticState::WaitReq
        ));
        self.antic_deadline = self.antic_start.saturating_add(self.cfg.antic_expire);
        self.antic_status = AnticState::WaitNext;
    }

    pub(super) fn antic_waitreq(&mut self) {
        if self.antic_status == AnticState::Off {
            if self.io_context.is_none() || self.ioc_finished {
                self.antic_waitnext();
            } else {
                self.antic_status = AnticState::WaitReq;
            }
        }
    }

    pub(super) fn antic_stop(&mut self) {
        if matches!(
            self.antic_status,
            AnticState::WaitReq | AnticState::WaitNext
        ) {
            self.antic_status = AnticState::Finished;
        }
    }

    /// `as_antic_expired`: whole jiffies since the completion >= `antic_expire`.
    pub(super) fn antic_expired(&self, now: Nanos) -> bool {
        self.tick(now).saturating_sub(self.antic_start) >= self.cfg.antic_expire
    }

    /// `as_close_req`: is a sync request at `next` close to where the anticipated process
    /// left the head, given how long we have waited?
    pub(super) fn close_req(&self, aic: &Aic, next: u64, now: Nanos) -> bool {
        let last = self.last_sector[self.batch_dir];
        // Jiffies since the anticipated request completed.
        let delay = if self.antic_status == AnticState::Off || !self.ioc_finished {
            0
        } else {
            self.cfg
                .jiffies(self.tick(now).saturating_sub(self.antic_start))
        };
        let max_delay = 20 * u64::from(self.cfg.hz) / 1000;
        let delta = if delay == 0 {
            CLOSE_BASE
        } else if delay <= max_delay && delay <= self.cfg.jiffies(self.cfg.antic_expire) {
            CLOSE_BASE << delay
        } else {
            return true;
        };
        if last <= next.saturating_add(delta / 2) && next <= last.saturating_add(delta) {
            return true;
        }
        let s = last.abs_diff(next);
        let expected = if aic.seek_samples == 0 {
            self.g.new_seek_mean
        } else {
            aic.seek_mean
        };
        // Better than what we expect from the anticipated process anyway.
        expected > s
    }

    /// `as_can_break_anticipation`: should we stop waiting for the anticipated process,
    /// given `rq` (a candidate: an arriving request, or the next in elevator order)?
    pub(super) fn can_break(&mut self, rq: Option<Candidate>, now: Nanos) -> bool {
        let Some(ioc) = self.io_context else {
            return false;
        };
        // 1. The request is from the anticipated process (a write too: an fsync, say).
        if rq.is_some_and(|c| c.ctx == ioc) {
            return true;
        }
        // 2. Its request completed and antic_expire has passed (the timer is due).
        if self.ioc_finished && self.antic_expired(now) {
            return true;
        }
        let Some(aic) = self.aics.get(&ioc) else {
            return false;
        };
        // 3. It already has requests queued (dispatched-unactivated is always 0 here).
        if aic.nr_queued > 0 {
            return true;
        }
        // 4. A close sync request from another process: take it, and let it feed the
        //    anticipated process's history (cooperating processes).
        if let Some(c) = rq.filter(|c| c.sync) {
            if self.close_req(aic, c.sector, now) {
                let (jiffies, hz) = (self.jiffies(now), self.cfg.hz);
                let aic = self.aics.get_mut(&ioc).expect("looked up above");
                if !aic.running {
                    if aic.ttime_samples == 0 {
                        self.g.exit_prob = decay(self.g.exit_prob, ONE);
                    }
                    self.g.exit_no_coop = decay(self.g.exit_no_coop, 0);
                }
                update_iohist(&mut self.g, aic, (c.sector, c.end), jiffies, hz);
                return true;
            }
        }
        let (running, samples, mean) = (aic.running, aic.ttime_samples, aic.ttime_mean);
        // 5. It has exited, and exited processes are rarely followed by cooperators.
        if !running {
            if samples == 0 {
                self.g.exit_prob = decay(self.g.exit_prob, ONE);
            }
            if self.g.exit_no_coop > ONE / 2 {
                return true;
            }
        }
        // Think times are means in jiffies, as is antic_expire.
        let antic_expire = self.cfg.jiffies(self.cfg.antic_expire);
        if samples == 0 {
            // 6. No history: judge by new processes in general.
            if self.g.new_ttime_mean > antic_expire {
                return true;
            }
            if self.g.exit_prob * self.g.exit_no_coop > (ONE / 2) * ONE {
                return true;
            }
        } else if mean > antic_expire {
            // 7. It thinks too long between requests.
            return true;
        }
        false
    }

    /// `as_can_anticipate`: keep the disk idle for the anticipated process instead of
    /// dispatching the next request (`next`, possibly none)?
    pub(super) fn can_anticipate(&mut self, next: Option<Key>, now: Nanos) -> bool {
        if self.io_context.is_none() {
            // The last request dispatched was an async write.
            return false;
        }
        if self.antic_status == AnticState::Finished {
            // Just finished: run the next request.
            return false;
        }
        let candidate = next.map(|(_, slot)| Candidate::of(self.request_in(slot)));
        !self.can_break(candidate, now)
    }
}
