//! Selection and batches: the elevator that picks the next request of a direction
//! (`as_choose_req`, `as_find_next_rq` with [`MAXBACK`] and [`BACK_PENALTY`]), FIFO and batch
//! expiry, the write-batch autotuning, and `as_dispatch_request`.

use std::collections::hash_map::Entry;

use crate::request::Request;
use crate::scheduler::Dispatch;
use crate::sort_list::Pos;
use crate::time::Nanos;

use super::types::{AnticState, Key, ASYNC, SYNC};
use super::Anticipatory;

/// The farthest the elevator goes backwards for a request, in sectors (512 MiB).
pub const MAXBACK: u64 = 1024 * 1024;
/// A backward seek counts this many times its distance when choosing the next request.
pub const BACK_PENALTY: u64 = 2;

impl Anticipatory {
    pub(super) fn request_in(&self, slot: u32) -> &Request {
        &self.fifos.get(slot).rq
    }

    /// `as_choose_req`: the better of two requests of direction `dir` from the head position,
    /// one-way with short backward seeks at [`BACK_PENALTY`].
    pub(super) fn choose_req(&self, dir: usize, a: Option<Key>, b: Option<Key>) -> Option<Key> {
        let (s1, s2) = match (a, b) {
            (None, _) => return b,
            (Some(_), None) => return a,
            (Some(k1), Some(k2)) if k1 == k2 => return b,
            (Some((s1, _)), Some((s2, _))) => (s1, s2),
        };
        let last = self.last_sector[dir];
        // Distance, or None when behind the head beyond MAXBACK (wraps to the next sweep).
        let dist = |s: u64| {
            if s >= last {
                Some(s - last)
            } else if s + MAXBACK >= last {
                Some((last - s) * BACK_PENALTY)
            } else {
                None
            }
        };
        match (dist(s1), dist(s2)) {
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if s1 <= s2 {
                    a
                } else {
                    b
                }
            }
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    a
                } else {
                    b
                }
            }
        }
    }

    /// `as_find_next_rq`: the request to follow the one at `last` (still queued, at `at`) in elevator
    /// order: the better of its neighbours in the sort list, the one above (or, past the top,
    /// the lowest) and the one below. The head, `last_sector[dir]`, is already at its end.
    pub(super) fn find_next_rq(&self, dir: usize, last: u64, at: Pos) -> Option<Key> {
        let list = &self.sort[dir];
        let next = list
            .after(at)
            .or_else(|| list.first().filter(|&(s, _)| s != last));
        self.choose_req(dir, next, list.before(at))
    }

    /// The oldest request in `dir`'s FIFO.
    pub(super) fn fifo_head(&self, dir: usize) -> Option<Key> {
        let head = self.fifos.front(dir)?;
        Some((self.request_in(head).sector, head))
    }

    /// `as_fifo_expired`, rate-limited to one look per `fifo_expire` interval (in jiffies).
    pub(super) fn fifo_expired(&mut self, dir: usize, now: Nanos) -> bool {
        let now = self.tick(now);
        if now.saturating_sub(self.last_check_fifo[dir]) < self.cfg.fifo_expire(dir) {
            return false;
        }
        self.last_check_fifo[dir] = now;
        self.fifos
            .front(dir)
            .is_some_and(|head| now > self.fifos.get(head).fifo_time)
    }

    /// `as_batch_expired` (`time_after(jiffies, current_batch_expires)`).
    pub(super) fn batch_expired(&self, now: Nanos) -> bool {
        if self.changed_batch || self.new_batch {
            return false;
        }
        let now = self.tick(now);
        if self.batch_dir == SYNC {
            now > self.current_batch_expires
        } else {
            now > self.current_batch_expires || self.current_write_count == 0
        }
    }

    /// `update_write_batch`: resize the write batch from how long the last one took.
    pub(super) fn update_write_batch(&mut self, now: Nanos) {
        let batch = self.cfg.write_batch_expire;
        let write_time = (self.tick(now) + batch).saturating_sub(self.current_batch_expires);
        if write_time > batch && !self.write_batch_idled {
            if write_time.as_ns() > batch.as_ns().saturating_mul(3) {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count -= 1;
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch.as_ns() > write_time.as_ns().saturating_mul(3) {
                self.write_batch_count *= 2;
            } else {
                self.write_batch_count += 1;
            }
        }
        self.write_batch_count = self.write_batch_count.max(1);
    }

    /// `as_move_to_dispatch` (with `as_remove_queued_request`): take the request at `sector`
    /// off `dir`'s lists and hand it to the driver.
    pub(super) fn move_to_dispatch(&mut self, dir: usize, (sector, slot): Key) -> Request {
        self.antic_stop();
        self.antic_status = AnticState::Off;
        let (ctx, end) = {
            let rq = self.request_in(slot);
            (rq.ctx, rq.end())
        };
        self.last_sector[dir] = end;
        let previous = if dir == SYNC {
            self.io_context.replace(ctx)
        } else {
            if self.current_write_count != 0 {
                self.current_write_count -= 1;
            }
            self.io_context.take()
        };
        self.ioc_finished = false;
        let at = self.sort[dir]
            .find(sector)
            .expect("a queued request is in its sort list");
        self.next_rq[dir] = self.find_next_rq(dir, sector, at);

        if let Some(aic) = self.aics.get_mut(&ctx) {
            aic.nr_queued -= 1;
        }
        self.sort[dir].remove_at(at);
        if let Entry::Occupied(e) = self.by_end.entry(end) {
            if *e.get() == slot {
                e.remove();
            }
        }
        let rq = self.fifos.remove(dir, slot).rq;
        self.nr_dispatched += 1;

        if let Some(old) = previous.filter(|&old| old != ctx) {
            self.forget_if_done(old);
        }
        self.forget_if_done(ctx);
        rq
    }

    /// Forced dispatch of everything queued (`as_dispatch_request(q, 1)`), for a barrier.
    pub(super) fn drain(&mut self, now: Nanos) {
        self.batch_dir = SYNC;
        self.changed_batch = false;
        self.new_batch = false;
        for dir in [SYNC, ASYNC] {
            while let Some(key) = self.next_rq[dir] {
                let rq = self.move_to_dispatch(dir, key);
                self.forced.push_back(rq);
            }
            self.last_check_fifo[dir] = self.tick(now);
        }
    }

    /// The body of `as_dispatch_request` (not forced): the sector key and direction of the
    /// request to dispatch, or what to tell the driver instead.
    pub(super) fn select(&mut self, now: Nanos) -> Result<(usize, Key), Dispatch> {
        let reads = !self.fifos.is_empty(SYNC);
        let writes = !self.fifos.is_empty(ASYNC);

        // The write batch ran out of work: it cannot be timed.
        if self.batch_dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_batch_idled = true;
        }
        if !(reads || writes) {
            return Err(Dispatch::Empty);
        }
        match self.antic_status {
            AnticState::WaitReq => return Err(Dispatch::Empty),
            AnticState::WaitNext => {
                return Err(Dispatch::Idle {
                    until: self.antic_deadline,
                })
            }
            _ => {}
        }
        if self.changed_batch {
            return Err(Dispatch::Empty);
        }

        let mut chosen = None;
        let mut fifo_checked = false;
        if !(reads && writes && self.batch_expired(now)) {
            // The batch continues (or there is only one kind of request).
            let next = self.next_rq[self.batch_dir];
            if self.batch_dir == SYNC && self.cfg.antic_expire > Nanos::ZERO {
                if self.fifo_expired(SYNC, now) {
                    chosen = self.fifo_head(SYNC);
                    fifo_checked = true;
                } else if self.can_anticipate(next, now) {
                    self.antic_waitreq();
                    return Err(match self.antic_status {
                        AnticState::WaitNext => Dispatch::Idle {
                            until: self.antic_deadline,
                        },
                        _ => Dispatch::Empty,
                    });
                }
            }
            if chosen.is_none() {
                if let Some(key) = next {
                    if reads && !writes {
                        // The read batch clock only runs down while writes wait.
                        self.current_batch_expires = self.tick(now) + self.cfg.read_batch_expire;
                    }
                    chosen = Some(key);
                }
            }
        }

        if chosen.is_none() {
            // Start a new batch.
            if reads && !(writes && self.batch_dir == SYNC) {
                if self.batch_dir == ASYNC {
                    self.changed_batch = true;
                }
                self.batch_dir = SYNC;
            } else {
                // Writes: either there are no reads, or the last batch was a read batch.
                if self.batch_dir == SYNC {
                    self.changed_batch = true;
                    // The queue may have run out of reads before the first one completed.
                    self.new_batch = false;
                }
                self.batch_dir = ASYNC;
                self.current_write_count = self.write_batch_count;
                self.write_batch_idled = false;
            }
            chosen = self.fifo_head(self.batch_dir);
            self.last_check_fifo[self.batch_dir] = self.tick(now);
        }

        // An expired request is served first.
        if !fifo_checked && self.fifo_expired(self.batch_dir, now) {
            chosen = self.fifo_head(self.batch_dir);
        }

        if self.changed_batch {
            // Wait for the old batch's requests to complete before starting the new one.
            if self.nr_dispatched > 0 {
                return Err(Dispatch::Empty);
            }
            if self.batch_dir == ASYNC {
                self.current_batch_expires = self.tick(now) + self.cfg.write_batch_expire;
            } else {
                self.new_batch = true;
            }
            self.changed_batch = false;
        }
        let key = chosen.expect("a non-empty list has a request");
        Ok((self.batch_dir, key))
    }
}
