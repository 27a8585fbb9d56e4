//! The scheduler tags by bit position, as Linux 6.18 allocates them (lib/sbitmap.c after
//! "convert shallow_depth from one word to the whole sbitmap", patch v4, merged for 6.17 and
//! run unchanged by 6.18 but for `sbitmap_deferred_clear`'s retry, which only matters under
//! concurrency).
//!
//! The tags are a bitmap of `nr_requests` bits in words of `1 << shift` bits, the shift being
//! the one `sbitmap_calculate_shift` chose for the depth the map was *allocated* with
//! ([`TagBits::with_shift`]): `sbitmap_queue_resize`, which lowering `nr_requests` calls,
//! keeps it, so a loop device's 256 scheduler tags lowered to 8 are one word of 8 bits, not
//! four of 2 (the last word may be partial, `__map_depth`). A request of shallow depth `d` (a
//! count over the whole map) may take, in word `i`, only the first
//! `word_bits(i) * d / nr_requests` bits, one more where the remainder of that division is at
//! least `(i + 1) * word_bits(i)` (`__map_depth_with_shallow`): with 8 tags in 2-bit words a
//! depth of 1 allows bit 0 of word 0 only, a depth of 6 the first bit of every word and the
//! second of words 0 and 1; in one 8-bit word a depth of `d` allows bits 0 to `d - 1`.
//! Whether such a bit is free depends on where the other requests sit, so positions are kept:
//!
//! - Each CPU has an allocation hint (`sb->alloc_hint`, per CPU), keyed here by the CPU a
//!   request is allocated on (its software queue, `rq->mq_ctx`: [`Request::cpu`](crate::Request::cpu)).
//!   `update_alloc_hint_before_get` resets a hint beyond the map; the search starts in the
//!   hint's word (`SB_NR_TO_INDEX`) and goes on through the next words with wrap
//!   (`sbitmap_find_bit`). A full-depth request (`__sbitmap_get`, blk-mq tags not being
//!   round-robin) searches each word from bit 0; a shallow one (`__sbitmap_get_shallow`)
//!   searches the hint's word from the hint's bit, wrapping to 0 (`__sbitmap_get_word`).
//!   `update_alloc_hint_after_get` moves the hint one past the bit taken only when that bit is
//!   the hint itself (to 0 at the map's last two bits), and to 0 when nothing was found.
//! - A freed tag is not cleared at once: its bit goes to the word's `cleared` mask
//!   (`sbitmap_deferred_clear_bit`) and is folded back only when a search of that word finds
//!   nothing (`sbitmap_deferred_clear`), so a freed bit is reused after the word's other free
//!   bits. Freeing sets the hint of the CPU the request was allocated on to the freed bit
//!   (`blk_mq_put_tag` passes `rq->mq_ctx->cpu` to `sbitmap_queue_clear`, which calls
//!   `sbitmap_update_cpu_hint`): the allocating CPU's, not the completing one's.
//!
//! Deviations: a hint starts at 0, where the kernel draws each CPU's at random
//! (`init_alloc_hint`, and again in `update_alloc_hint_before_get` when the map has shrunk
//! below it); no tracepoint shows it, and 0 is what the kernel itself writes after a failed
//! search. A change of `nr_requests` starts an empty map (tags held then are freed without
//! effect).

use std::collections::BTreeMap;

/// One word of the map: the bits taken, and those freed but not yet folded back.
#[derive(Clone, Copy, Debug, Default)]
struct Word {
    taken: u64,
    cleared: u64,
}

/// A tag bitmap with sbitmap's word layout, search order and allocation hints.
#[derive(Clone, Debug)]
pub struct TagBits {
    depth: u32,
    shift: u32,
    words: Vec<Word>,
    hints: BTreeMap<u32, u32>,
}

/// The mask of the first `bits` bits of a word.
fn first_bits(bits: u32) -> u64 {
    if bits >= u64::BITS {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl TagBits {
    /// An empty map of `depth` tags (at least 1), in the words `sbitmap_calculate_shift`
    /// picks for that depth.
    pub fn new(depth: u32) -> TagBits {
        TagBits::with_shift(depth, super::word_shift(depth.max(1)))
    }

    /// An empty map of `depth` tags (at least 1) in words of `1 << shift` bits (at most 64):
    /// a map allocated for more tags and resized to `depth` keeps its words
    /// (`sbitmap_queue_resize`).
    pub fn with_shift(depth: u32, shift: u32) -> TagBits {
        let depth = depth.max(1);
        let shift = shift.min(u64::BITS.ilog2());
        let words = depth.div_ceil(1 << shift) as usize;
        TagBits {
            depth,
            shift,
            words: vec![Word::default(); words],
            hints: BTreeMap::new(),
        }
    }

    /// `__map_depth`: the bits of word `index` (the last may be partial).
    fn map_depth(&self, index: usize) -> u32 {
        let bits = 1u32 << self.shift;
        if index + 1 == self.words.len() {
            self.depth - ((index as u32) << self.shift)
        } else {
            bits
        }
    }

    /// `__map_depth_with_shallow`: the first bits of word `index` a request of shallow depth
    /// `shallow` (over the whole map) may take.
    pub fn shallow_word_depth(&self, index: usize, shallow: u32) -> u32 {
        let word = self.map_depth(index);
        if shallow >= self.depth {
            return word;
        }
        let share = u64::from(word) * u64::from(shallow);
        let (bits, rest) = (share / u64::from(self.depth), share % u64::from(self.depth));
        let extra = rest >= (index as u64 + 1) * u64::from(word);
        bits as u32 + u32::from(extra)
    }

    /// Whether a request of this shallow depth (`None`: any tag) finds a free bit, freed
    /// ones waiting to be folded back included.
    pub fn may_take(&self, shallow: Option<u32>) -> bool {
        let shallow = shallow.unwrap_or(u32::MAX);
        self.words.iter().enumerate().any(|(i, w)| {
            let allowed = first_bits(self.shallow_word_depth(i, shallow));
            allowed & !(w.taken & !w.cleared) != 0
        })
    }

    /// `__sbitmap_get_word`: the first clear bit of `taken` below `depth` from `hint`, then
    /// from 0. blk-mq's tags are not round-robin, so the kernel always passes `wrap`; it
    /// skips the second search when the hint is 0, which would find nothing new.
    fn find_in_word(taken: u64, depth: u32, hint: u32) -> Option<u32> {
        let free = !taken & first_bits(depth);
        let from = |h: u32| {
            let above = free & !first_bits(h);
            (above != 0).then(|| above.trailing_zeros())
        };
        from(hint).or_else(|| from(0))
    }

    /// `sbitmap_find_bit_in_word` with `sbitmap_deferred_clear`: search, and when nothing is
    /// found fold the freed bits back and search again.
    fn take_in_word(&mut self, index: usize, depth: u32, hint: u32) -> Option<u32> {
        loop {
            let w = &mut self.words[index];
            if let Some(nr) = Self::find_in_word(w.taken, depth, hint) {
                w.taken |= 1 << nr;
                return Some(nr);
            }
            if w.cleared == 0 {
                return None;
            }
            w.taken &= !w.cleared;
            w.cleared = 0;
        }
    }

    /// A request allocated on CPU `cpu` takes a tag at this shallow depth (`None`: any tag):
    /// the bit taken, if any (`sbitmap_get` / `sbitmap_get_shallow`, with `cpu`'s hint).
    pub fn take(&mut self, shallow: Option<u32>, cpu: u32) -> Option<u32> {
        let mut hint = self.hints.get(&cpu).copied().unwrap_or(0);
        if hint >= self.depth {
            hint = 0;
        }
        let mut index = (hint >> self.shift) as usize;
        let (limit, mut bit) = match shallow {
            None => (u32::MAX, 0),
            Some(d) => (d, hint & ((1 << self.shift) - 1)),
        };
        let mut nr = None;
        for _ in 0..self.words.len() {
            let depth = self.shallow_word_depth(index, limit);
            if depth > 0 {
                if let Some(b) = self.take_in_word(index, depth, bit) {
                    nr = Some(((index as u32) << self.shift) + b);
                    break;
                }
            }
            bit = 0;
            index = (index + 1) % self.words.len();
        }
        let next = match nr {
            None => 0,
            Some(n) if n == hint => {
                if n + 1 >= self.depth.saturating_sub(1) {
                    0
                } else {
                    n + 1
                }
            }
            Some(_) => hint,
        };
        self.hints.insert(cpu, next);
        nr
    }

    /// A request allocated on CPU `cpu` frees the tag at `bit` (`sbitmap_queue_clear`): the
    /// bit waits in its word's cleared mask, and `cpu`'s hint becomes the bit.
    pub fn release(&mut self, bit: u32, cpu: u32) {
        if bit >= self.depth {
            return;
        }
        let w = &mut self.words[(bit >> self.shift) as usize];
        w.cleared |= 1 << (bit & ((1 << self.shift) - 1));
        self.hints.insert(cpu, bit);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Depth, SchedTags};
    use super::*;

    /// `__map_depth_with_shallow` (6.17): 8 tags are four 2-bit words; a shallow depth over
    /// the whole map is split into the first bits of each word, the remainder to the first
    /// words (`rem >= (index + 1) * word bits`).
    #[test]
    fn map_depth_with_shallow_splits_a_whole_map_depth_over_the_words() {
        let b = TagBits::new(8);
        let split = |d: u32| -> Vec<u32> { (0..4).map(|i| b.shallow_word_depth(i, d)).collect() };
        assert_eq!(split(1), vec![1, 0, 0, 0]);
        assert_eq!(split(3), vec![1, 1, 1, 0]);
        assert_eq!(split(4), vec![1, 1, 1, 1]);
        assert_eq!(split(6), vec![2, 2, 1, 1]);
        assert_eq!(split(8), vec![2, 2, 2, 2]);
    }

    /// `__sbitmap_get` / `sbitmap_find_bit`: a full-depth request with hint 0 takes bit 0,
    /// the only bit depth 1 may take, so a depth-1 request (an over-limit queue's,
    /// `bfq_limit_depth`) finds no tag though no shallow request holds one (the counted model
    /// admits it), and a depth-6 one does. `sbitmap_queue_clear` defers the freed bit
    /// (`sbitmap_deferred_clear_bit`): the next full-depth search takes bit 1 of word 0, and
    /// only once that word is full are the freed bits folded back (`sbitmap_deferred_clear`).
    #[test]
    fn sbitmap_places_tags_and_a_shallow_depth_takes_only_its_bits() {
        let mut t = SchedTags::new(8, 8);
        t.set_bit_positions(true);
        assert_eq!(t.take_bit(Depth::Full, 1), Some(0));
        assert!(!t.may_take(Depth::Shallow(1)), "bit 0 is held");
        assert!(t.may_take(Depth::Shallow(6)));
        t.release_bit(Depth::Full, Some(0), 1);
        assert!(
            t.may_take(Depth::Shallow(1)),
            "a freed bit may be taken again"
        );
        assert_eq!(
            t.take_bit(Depth::Full, 1),
            Some(1),
            "bit 0 waits in cleared"
        );
        assert_eq!(
            t.take_bit(Depth::Full, 1),
            Some(0),
            "word 0 full: cleared folded back"
        );
        assert_eq!(t.take_bit(Depth::Full, 1), Some(2));
        assert!(!t.may_take(Depth::Shallow(1)));
        assert_eq!(
            t.take_bit(Depth::Shallow(6), 2),
            Some(3),
            "word 1's two bits"
        );
        assert_eq!(
            t.take_bit(Depth::Shallow(6), 2),
            Some(4),
            "then word 2's first"
        );
        assert_eq!(
            t.take_bit(Depth::Shallow(6), 2),
            Some(6),
            "and word 3's first"
        );
        assert!(
            !t.may_take(Depth::Shallow(6)),
            "bits 5 and 7 are beyond depth 6"
        );
        assert!(t.may_take(Depth::Full));
        assert_eq!(t.held(), 6);
    }
}
