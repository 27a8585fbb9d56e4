//! blk-mq scheduler tags, as mq-deadline, kyber and bfq use them: `nr_requests` tags that
//! every request holds from its allocation to its completion, of which throttled (asynchronous
//! or write) requests may hold only a *shallow depth*.
//!
//! In blk-mq every request takes a scheduler tag when it is allocated, just before it is
//! inserted into the scheduler, and frees it when it completes; there are `nr_requests` of
//! them. A scheduler's `limit_depth` hook gives some requests a shallow depth, so that they
//! find a tag only among the first bits of the tag bitmap: mq-deadline throttles everything
//! but synchronous reads to `async_depth` (`dd_limit_depth`; `dd_depth_updated` sets
//! `async_depth` to `nr_requests` whenever `nr_requests` changes), kyber throttles asynchronous
//! requests to 75% of `nr_requests` (`kyber_limit_depth`), bfq gives each request its own
//! depth (`bfq_limit_depth`: by direction and weight raising, and 1 for a queue over its share).
//! A request that finds no tag sleeps in tag allocation, outside the scheduler, until a tag
//! is freed; so a flood of writes that holds every tag makes a read wait for one.
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
//! A request comes with its [`Depth`]: any tag (`Full`), the throttled class's shallow depth
//! (`Throttled`, one settable `limit` shared by the class, as mq-deadline's and kyber's are),
//! or a shallow depth of its own (`Shallow(L)`, fixed when it arrives, as bfq's is: the kernel
//! computes `shallow_depth` once per allocation).
//!
//! Deviation: the shallow depth is counted. A throttled request is admitted while fewer than
//! `limit` throttled requests hold tags; a `Shallow(L)` one while fewer than `L` held requests
//! have a `Shallow` depth of at most `L` (those necessarily sit in the first bits it may take).
//! The kernel's shallow depth is a bit position in each word of the tag bitmap (`sbitmap`,
//! 64-bit words for 256 tags), so `L` here is the per-word depth times the words (with 256
//! tags, a per-word depth of 1 lets at most 4 such requests hold tags), deeper-limited or
//! unlimited requests that happen to sit in the first bits block it in the kernel but not
//! here, and throttled requests may briefly hold more after a change of limit.
//!
//! Optionally ([`SchedTags::set_bit_positions`]) the tags are also kept by bit position
//! ([`TagBits`], Linux 6.18's sbitmap, depths over the whole map, in the words of the depth
//! the map was allocated with: [`SchedTags::set_map_depth`]): then whether a `Full` or
//! `Shallow(L)` request may take a tag is whether a bit it may take is free, and
//! [`SchedTags::take_bit`] / [`SchedTags::release_bit`] place and free the bits.

mod bits;

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashSet;

pub use bits::TagBits;

use crate::request::{Request, RequestId};

/// How deep in the tags a request may take one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Depth {
    /// Any free tag.
    Full,
    /// The throttled class's shallow depth, [`SchedTags::limit`].
    Throttled,
    /// A shallow depth of its own: at most this many requests of this depth or shallower.
    Shallow(u32),
}

/// The scheduler tags, and the requests waiting for one.
#[derive(Clone, Debug)]
pub struct SchedTags {
    depth: u32,
    limit: u32,
    held: u32,
    held_throttled: u32,
    /// Requests holding a tag with a `Shallow` depth: (depth, count), sorted by depth, no
    /// zero counts. A policy uses a handful of depths, so a scan beats a tree here.
    held_shallow: Vec<(u32, u32)>,
    /// Requests waiting for a tag: one line per depth, each in arrival order with its arrival
    /// number. All requests of a line may take a tag exactly when its head may, so the oldest
    /// that may take one is the oldest of the admissible heads: finding it costs the number of
    /// distinct depths (a handful), not the number waiting.
    waiting: BTreeMap<Depth, VecDeque<(u64, Request)>>,
    /// The ids of the requests waiting, over all lines (their count is the number waiting),
    /// so that [`SchedTags::is_waiting`] is one look-up:
    /// a scan of the lines, asked for every untagged request after every dispatch and
    /// completion, made a fio job of iodepth 4096 under mq-deadline run for minutes
    /// (cubic in the requests waiting; issue 32, round 14).
    waiting_ids: FxHashSet<RequestId>,
    /// Requests handed out by [`SchedTags::next_admitted_at`] so far.
    admitted: u64,
    /// Arrivals so far, numbering the waiting requests.
    arrivals: u64,
    /// Changes of what [`SchedTags::may_take`] answers from (see [`SchedTags::generation`]).
    generation: u64,
    /// The tags by bit position, when kept ([`SchedTags::set_bit_positions`]).
    bits: Option<TagBits>,
    /// The depth the bitmap was allocated with, whose word size it keeps
    /// ([`SchedTags::set_map_depth`]); at most `depth` means `depth`.
    map_depth: u32,
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
            held_shallow: Vec::new(),
            waiting: BTreeMap::new(),
            waiting_ids: FxHashSet::default(),
            admitted: 0,
            arrivals: 0,
            generation: 0,
            bits: None,
            map_depth: 0,
        }
    }

    /// The bit map for the current depth, in the words of the depth it was allocated with.
    fn new_bits(&self) -> TagBits {
        TagBits::with_shift(self.depth, word_shift(self.map_depth.max(self.depth)))
    }

    /// The bitmap was allocated for `map_depth` tags and resized to the current depth since:
    /// it keeps the word size `sbitmap_calculate_shift` chose for `map_depth`
    /// (`sbitmap_queue_resize`, which 6.18's `blk_mq_update_nr_requests` calls when
    /// `nr_requests` is lowered; raised past the allocation it allocates new tags for the new
    /// depth). Below the current depth, or 0, the words are the current depth's. A map kept
    /// by bit position starts anew when its words change.
    pub fn set_map_depth(&mut self, map_depth: u32) {
        let before = word_shift(self.map_depth.max(self.depth));
        self.map_depth = map_depth;
        if self.bits.is_some() && word_shift(map_depth.max(self.depth)) != before {
            self.bits = Some(self.new_bits());
            self.generation += 1;
        }
    }

    /// Keep the tags by bit position ([`TagBits`], Linux 6.17 on) or only count them. A map
    /// kept anew starts empty: requests holding tags then are not in it.
    pub fn set_bit_positions(&mut self, on: bool) {
        if on != self.bits.is_some() {
            self.bits = on.then(|| self.new_bits());
            self.generation += 1;
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
        self.generation += 1;
        if self.bits.is_some() {
            self.bits = Some(self.new_bits());
        }
    }

    /// Change the shallow depth; waiting requests are admitted by the next
    /// [`SchedTags::next_admitted`].
    pub fn set_limit(&mut self, limit: u32) {
        self.limit = limit.max(1);
        self.generation += 1;
    }

    /// A number that changes whenever a tag is taken or freed or a depth or limit is set: while
    /// it stays the same, [`SchedTags::may_take`] answers the same for every depth, so a
    /// caller keeping its own waiting lines need not ask again for the same heads.
    pub fn generation(&self) -> u64 {
        self.generation
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
        self.waiting_ids.len()
    }

    /// Requests that waited here and were handed a tag, so far (a caller keeping its own
    /// list of the waiting ones looks for that many since it last looked).
    pub fn admitted(&self) -> u64 {
        self.admitted
    }

    /// Whether request `id` is among those waiting for a tag.
    pub fn is_waiting(&self, id: RequestId) -> bool {
        self.waiting_ids.contains(&id)
    }

    /// Requests holding a tag with a `Shallow` depth of at most `depth`.
    pub fn held_shallow(&self, depth: u32) -> u32 {
        self.held_shallow
            .iter()
            .take_while(|&&(d, _)| d <= depth)
            .map(|&(_, n)| n)
            .sum()
    }

    /// Whether a request of this depth may take a tag now.
    pub fn may_take(&self, depth: Depth) -> bool {
        self.held < self.depth
            && match (depth, &self.bits) {
                (Depth::Throttled, _) => self.held_throttled < self.limit,
                (Depth::Full, None) => true,
                (Depth::Shallow(l), None) => self.held_shallow(l) < l.max(1),
                (Depth::Full, Some(b)) => b.may_take(None),
                (Depth::Shallow(l), Some(b)) => b.may_take(Some(l.max(1))),
            }
    }

    /// As [`SchedTags::take`], for a request allocated on CPU `cpu` (its software queue's,
    /// whose allocation hint the search starts from): the bit it takes when the tags are kept
    /// by bit position.
    pub fn take_bit(&mut self, depth: Depth, cpu: u32) -> Option<u32> {
        self.take(depth);
        let shallow = match depth {
            Depth::Full | Depth::Throttled => None,
            Depth::Shallow(l) => Some(l.max(1)),
        };
        self.bits.as_mut().and_then(|b| b.take(shallow, cpu))
    }

    /// As [`SchedTags::release_at`], for a request allocated on CPU `cpu` that took `bit`
    /// ([`SchedTags::take_bit`]): `cpu`'s hint becomes the bit.
    pub fn release_bit(&mut self, depth: Depth, bit: Option<u32>, cpu: u32) {
        self.release_at(depth);
        if let (Some(b), Some(bit)) = (self.bits.as_mut(), bit) {
            b.release(bit, cpu);
        }
    }

    /// A request of this depth takes a tag (for a caller keeping its own waiting lines; check
    /// [`SchedTags::may_take`] first).
    pub fn take(&mut self, depth: Depth) {
        self.generation += 1;
        self.held += 1;
        match depth {
            Depth::Full => {}
            Depth::Throttled => self.held_throttled += 1,
            Depth::Shallow(l) => match self.held_shallow.binary_search_by_key(&l, |&(d, _)| d) {
                Ok(i) => self.held_shallow[i].1 += 1,
                Err(i) => self.held_shallow.insert(i, (l, 1)),
            },
        }
    }

    /// A request arrives, throttled or not: see [`SchedTags::arrive_at`].
    pub fn arrive(&mut self, rq: Request, throttled: bool) {
        self.arrive_at(rq, throttled_depth(throttled));
    }

    /// A request arrives with its depth: it waits here until [`SchedTags::next_admitted`]
    /// hands it out, at once if a tag it may take is free and no earlier request that may take
    /// one waits.
    pub fn arrive_at(&mut self, rq: Request, depth: Depth) {
        self.arrivals += 1;
        self.waiting_ids.insert(rq.id);
        self.waiting
            .entry(depth)
            .or_default()
            .push_back((self.arrivals, rq));
    }

    /// A request holding a tag completed, throttled or not: its tag is free.
    pub fn release(&mut self, throttled: bool) {
        self.release_at(throttled_depth(throttled));
    }

    /// A request holding a tag, admitted with `depth`, completed: its tag is free.
    pub fn release_at(&mut self, depth: Depth) {
        self.generation += 1;
        self.held = self.held.saturating_sub(1);
        match depth {
            Depth::Full => {}
            Depth::Throttled => self.held_throttled = self.held_throttled.saturating_sub(1),
            Depth::Shallow(l) => {
                if let Ok(i) = self.held_shallow.binary_search_by_key(&l, |&(d, _)| d) {
                    self.held_shallow[i].1 -= 1;
                    if self.held_shallow[i].1 == 0 {
                        self.held_shallow.remove(i);
                    }
                }
            }
        }
    }

    /// The oldest waiting request that may take a tag now, if any (it then holds the tag):
    /// callers take them all after every arrival, completion and change of depth.
    pub fn next_admitted(&mut self) -> Option<Request> {
        self.next_admitted_at().map(|(rq, _)| rq)
    }

    /// As [`SchedTags::next_admitted`], with the depth the request was admitted at (to give
    /// back to [`SchedTags::release_at`]).
    pub fn next_admitted_at(&mut self) -> Option<(Request, Depth)> {
        if self.waiting_ids.is_empty() || self.held >= self.depth {
            return None;
        }
        let depth = self
            .waiting
            .iter()
            .filter(|&(&d, _)| self.may_take(d))
            .filter_map(|(&d, line)| line.front().map(|&(n, _)| (n, d)))
            .min()
            .map(|(_, d)| d)?;
        let line = self.waiting.get_mut(&depth).expect("the depth has a line");
        let (_, rq) = line.pop_front().expect("the line has a head");
        if line.is_empty() {
            self.waiting.remove(&depth);
        }
        self.waiting_ids.remove(&rq.id);
        self.admitted += 1;
        self.take(depth);
        Some((rq, depth))
    }
}

/// The word size (log2 of bits per word) of a tag bitmap of `depth` tags, as the kernel's
/// `sbitmap_calculate_shift` picks it: 64-bit words, halved until there are at least 4 words.
pub fn word_shift(depth: u32) -> u32 {
    let mut shift = u64::BITS.ilog2();
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

/// The tags a request with a shallow depth of `per_word` bits in each word may reach, over
/// `depth` tags in words of `1 << shift` bits (the last word may be partial).
pub fn shallow_tags(depth: u32, shift: u32, per_word: u32) -> u32 {
    let bits = 1u32 << shift;
    let full_words = depth >> shift;
    let rest = depth & (bits - 1);
    full_words * per_word.min(bits) + per_word.min(rest)
}

fn throttled_depth(throttled: bool) -> Depth {
    if throttled {
        Depth::Throttled
    } else {
        Depth::Full
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

    /// `bfq_limit_depth` gives each request its own shallow depth; a deeper one is not held
    /// back by shallower ones beyond its own count, a shallower one is by the deeper ones
    /// only through the total, and a request with full depth goes past both.
    #[test]
    fn shallow_requests_count_only_those_as_shallow_or_shallower() {
        let mut t = SchedTags::new(8, 1);
        let one = Depth::Shallow(2);
        let wide = Depth::Shallow(4);
        for id in 1..=2 {
            t.arrive_at(rq(id, 1).write().build(), one);
        }
        assert_eq!(admitted(&mut t), vec![1, 2]);
        t.arrive_at(rq(3, 1).write().build(), one);
        assert!(admitted(&mut t).is_empty(), "two of depth 2 hold tags");
        for id in 4..=6 {
            t.arrive_at(rq(id, 1).write().build(), wide);
        }
        // Depth 4 counts the two of depth 2: two more.
        assert_eq!(admitted(&mut t), vec![4, 5]);
        assert_eq!((t.held_shallow(2), t.held_shallow(4)), (2, 4));
        t.arrive_at(rq(7, 2).read().build(), Depth::Full);
        assert_eq!(admitted(&mut t), vec![7]);
        // A depth-4 request leaving frees nothing for depth 2.
        t.release_at(wide);
        assert_eq!(admitted(&mut t), vec![6]);
        t.release_at(one);
        assert_eq!(admitted(&mut t), vec![3]);
        assert_eq!((t.held(), t.waiting()), (5, 0));
    }

    /// `sbitmap_calculate_shift`: 64-bit words down to at least four words; the shallow
    /// depth is per word.
    #[test]
    fn word_shift_and_shallow_tags_follow_sbitmap() {
        assert_eq!(word_shift(256), 6);
        assert_eq!(word_shift(2048), 6);
        assert_eq!(word_shift(128), 5);
        assert_eq!(word_shift(64), 4);
        assert_eq!(word_shift(4), 0);
        assert_eq!(word_shift(3), 6);
        assert_eq!(shallow_tags(256, 6, 1), 4);
        assert_eq!(shallow_tags(256, 6, 48), 192);
        assert_eq!(shallow_tags(100, 4, 12), 6 * 12 + 4);
        assert_eq!(shallow_tags(256, 6, 100), 256);
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
