//! Insertion and merging: a request joins its sort list, FIFO and the merge hash
//! (`as_add_request`), may end the anticipation (`as_update_rq`), or merges into a queued
//! request.

use crate::request::{Request, RequestId};
use crate::time::Nanos;

use super::types::{dir_of, AnticState, Candidate};
use super::Anticipatory;

impl Anticipatory {
    /// `as_add_rq_rb`: file a request in `dir`'s sort list. A queued request starting at the
    /// same sector (an alias) goes to the dispatch list first.
    pub(super) fn add_rq_rb(&mut self, dir: usize, sector: u64, slot: u32) {
        if let Err(alias) = self.sort[dir].insert(sector, slot) {
            let alias = self.move_to_dispatch(dir, (sector, alias));
            self.forced.push_back(alias);
            self.antic_stop();
            self.sort[dir]
                .insert(sector, slot)
                .expect("the alias left the sort list");
        }
    }

    /// `as_update_rq`: keep the next-request cache and check whether `rq` ends anticipation.
    pub(super) fn update_rq(&mut self, dir: usize, c: Candidate, slot: u32, now: Nanos) {
        self.next_rq[dir] = self.choose_req(dir, Some((c.sector, slot)), self.next_rq[dir]);
        if matches!(
            self.antic_status,
            AnticState::WaitReq | AnticState::WaitNext
        ) && self.can_break(Some(c), now)
        {
            self.antic_stop();
        }
    }

    /// Try to grow a queued request of list `dir` by `rq` (back merge at its end, or front
    /// merge at its start). Returns the grown request's id.
    pub(super) fn merge_into(&mut self, rq: &Request, max_sectors: u32) -> Option<RequestId> {
        let fits = |q: &Request| q.op == rq.op && q.sectors + rq.sectors <= max_sectors;
        // Back merge: a queued request (of either sync class) ending where `rq` starts.
        if let Some(&slot) = self.by_end.get(&rq.sector) {
            if fits(self.request_in(slot)) {
                self.by_end.remove(&rq.sector);
                self.by_end.insert(rq.end(), slot);
                let q = &mut self.fifos.get_mut(slot).rq;
                q.sectors += rq.sectors;
                return Some(q.id);
            }
        }
        // Front merge: a request of the same list starting where `rq` ends; it moves in the
        // sort list.
        let dir = dir_of(rq);
        let old = rq.end();
        let slot = self.sort[dir].get(old)?;
        if !fits(self.request_in(slot)) {
            return None;
        }
        self.sort[dir].remove(old);
        let id = {
            let q = &mut self.fifos.get_mut(slot).rq;
            q.sector = rq.sector;
            q.sectors += rq.sectors;
            q.id
        };
        if self.next_rq[dir] == Some((old, slot)) {
            self.next_rq[dir] = Some((rq.sector, slot));
        }
        self.add_rq_rb(dir, rq.sector, slot);
        Some(id)
    }
}
