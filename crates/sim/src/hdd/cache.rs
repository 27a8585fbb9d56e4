//! The on-board buffer: segments holding runs of consecutive blocks.
//!
//! Each segment holds one run `[start, end)` of LBNs, either read from the media (and possibly
//! still growing by read-ahead) or written by the host. Replacement is least recently used.
//! The segment table is allocated once; lookups scan it (drives have 1 to 16 segments).
//!
//! With read-priority destaging (`cache.destage = "read-priority"`) a segment may also be
//! *dirty*: it holds written data that is not on the media yet. Dirty segments are never
//! emptied, cut or reused; they are destaged oldest first (by `since`).

/// One buffer segment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Segment {
    /// First LBN held.
    pub start: u64,
    /// One past the last LBN held (`start == end`: empty).
    pub end: u64,
    /// Holds host-written data.
    pub write: bool,
    /// Last use, for LRU replacement (a counter, not a time).
    pub used: u64,
    /// Holds written data not yet on the media (read-priority destaging only).
    pub dirty: bool,
    /// Destage order: when the segment became dirty (a counter, not a time).
    pub since: u64,
    /// When its written data are all in the buffer, ms (destaging starts no earlier).
    pub ready: f64,
    /// Until when its destage occupies it, ms (it cannot take new data before).
    pub busy_until: f64,
}

impl Segment {
    /// Whether `[start, end)` and `[lbn, lbn + n)` overlap as bounds: `start < lbn + n` and
    /// `lbn < end`. An empty segment (`start == end`) strictly inside the range passes too;
    /// [`Buffer::find_overlap`] leaves those out; a dirty segment is never empty, and emptying
    /// or cutting an empty one changes nothing.
    pub fn overlaps(&self, lbn: u64, n: u64) -> bool {
        self.start < lbn + n && lbn < self.end
    }
}

/// The segment table.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// The segments.
    pub segs: Vec<Segment>,
    clock: u64,
}

impl Buffer {
    /// A buffer of `n` empty segments.
    pub fn new(n: usize) -> Buffer {
        Buffer {
            segs: vec![Segment::default(); n],
            clock: 0,
        }
    }

    /// The segment holding all of `[lbn, lbn + n)`, if any (write data only if `writes_ok`).
    pub fn find_whole(&self, lbn: u64, n: u64, writes_ok: bool) -> Option<usize> {
        self.segs
            .iter()
            .position(|s| (writes_ok || !s.write) && s.start <= lbn && lbn + n <= s.end)
    }

    /// The segment holding `lbn` (possibly not the whole request).
    pub fn find_start(&self, lbn: u64, writes_ok: bool) -> Option<usize> {
        self.segs
            .iter()
            .position(|s| (writes_ok || !s.write) && s.start <= lbn && lbn < s.end)
    }

    /// The first non-empty segment sharing a block with `[lbn, lbn + n)`.
    pub fn find_overlap(&self, lbn: u64, n: u64) -> Option<usize> {
        self.segs
            .iter()
            .position(|s| s.start < s.end && s.overlaps(lbn, n))
    }

    /// The dirty segment to destage next (the oldest), if any.
    pub fn oldest_dirty(&self) -> Option<usize> {
        (0..self.segs.len())
            .filter(|&i| self.segs[i].dirty)
            .min_by_key(|&i| self.segs[i].since)
    }

    /// Whether a dirty segment shares a block with `[lbn, lbn + n)`.
    pub fn dirty_overlap(&self, lbn: u64, n: u64) -> bool {
        self.segs.iter().any(|s| s.dirty && s.overlaps(lbn, n))
    }

    /// Marks segment `i` as just used.
    pub fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.segs[i].used = self.clock;
    }

    /// The least recently used segment among those `allowed` (by index), to be reused.
    pub fn victim(&self, allowed: impl Fn(usize) -> bool) -> usize {
        let mut best = 0;
        let mut best_used = u64::MAX;
        for (i, s) in self.segs.iter().enumerate() {
            if allowed(i) && s.used < best_used {
                best = i;
                best_used = s.used;
            }
        }
        best
    }

    /// The clean segments other than `keep` that share a block with `[lbn, lbn + n)`.
    fn clean_overlapping(
        &mut self,
        lbn: u64,
        n: u64,
        keep: usize,
    ) -> impl Iterator<Item = &mut Segment> {
        self.segs
            .iter_mut()
            .enumerate()
            .filter(move |(i, s)| *i != keep && !s.dirty && s.overlaps(lbn, n))
            .map(|(_, s)| s)
    }

    /// Empties every clean segment other than `keep` that shares a block with `[lbn, lbn + n)`,
    /// as a write does to the clean segments it overlaps (DiskSim's `disk_buffer_set_segment`).
    pub fn drop_overlapping(&mut self, lbn: u64, n: u64, keep: usize) {
        for s in self.clean_overlapping(lbn, n, keep) {
            s.end = s.start;
        }
    }

    /// Drops any cached copy of `[lbn, lbn + n)` from clean segments other than `keep`,
    /// keeping the part before the overlap, if any.
    pub fn invalidate(&mut self, lbn: u64, n: u64, keep: usize) {
        for s in self.clean_overlapping(lbn, n, keep) {
            s.end = if s.start < lbn { lbn } else { s.start };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clean segment holding `[start, end)`, read from the media.
    fn held(start: u64, end: u64) -> Segment {
        Segment {
            start,
            end,
            ..Segment::default()
        }
    }

    /// A dirty segment holding `[start, end)`, dirty since `since`.
    fn dirty(start: u64, end: u64, since: u64) -> Segment {
        Segment {
            dirty: true,
            since,
            ..held(start, end)
        }
    }

    #[test]
    fn whole_hit_needs_every_block_in_one_segment() {
        let mut b = Buffer::new(2);
        b.segs[0] = Segment {
            used: 1,
            ..held(100, 110)
        };
        assert_eq!(b.find_whole(100, 10, true), Some(0));
        assert_eq!(b.find_whole(105, 6, true), None);
        assert_eq!(b.find_start(109, true), Some(0));
        assert_eq!(b.find_start(110, true), None);
    }

    #[test]
    fn lru_victim_is_the_least_recently_touched() {
        let mut b = Buffer::new(3);
        b.touch(0);
        b.touch(2);
        b.touch(1);
        assert_eq!(b.victim(|_| true), 0);
        assert_eq!(b.victim(|i| i != 0), 2);
    }

    #[test]
    fn invalidate_cuts_overlapping_segments() {
        let mut b = Buffer::new(2);
        b.segs[1] = held(10, 30);
        b.invalidate(20, 4, 0);
        assert_eq!((b.segs[1].start, b.segs[1].end), (10, 20));
    }

    #[test]
    fn a_write_empties_the_whole_segment_it_overlaps() {
        let mut b = Buffer::new(3);
        b.segs[1] = held(10, 30);
        b.segs[2] = held(40, 50);
        b.drop_overlapping(20, 4, 0);
        assert_eq!(b.find_start(12, true), None);
        assert_eq!(b.find_start(45, true), Some(2));
    }

    #[test]
    fn dirty_segments_survive_writes_and_reads_and_go_oldest_first() {
        let mut b = Buffer::new(3);
        b.segs[0] = dirty(10, 30, 2);
        b.segs[2] = dirty(50, 60, 1);
        b.drop_overlapping(0, 100, 1);
        b.invalidate(0, 100, 1);
        assert_eq!((b.segs[0].start, b.segs[0].end), (10, 30));
        assert_eq!((b.segs[2].start, b.segs[2].end), (50, 60));
        assert!(b.dirty_overlap(29, 5) && !b.dirty_overlap(30, 20));
        assert_eq!(b.oldest_dirty(), Some(2));
    }
}
