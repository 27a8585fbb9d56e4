//! The drive: mechanics, controller overheads, bus transfer and cache, as one [`Device`].
//!
//! Internally every time is `f64` milliseconds since the start of the run; the platter angle
//! is `frac(t / period)`, so rotation advances with absolute time whether the drive is busy
//! or idle. One request is served at a time (queue depth 1, FCFS, as in DiskSim's validated
//! models); background work (read-ahead, write-back of cached writes) continues after the
//! host has its completion and delays the next request only when the next request needs the
//! mechanism.
//!
//! Write-back comes in two kinds (`cache.destage`). DiskSim's (`before-next-command`) commits
//! each write's media work when the write arrives: the next command that needs the mechanism
//! waits for every write before it. A write is acknowledged once its data are in a segment,
//! and DiskSim lets written data not yet on the media hold at most `cache.write_segments`
//! segments, one run of consecutive writes each, no more than a segment of it ahead of the
//! media: a sector of a write that extends the newest run enters once the media have written
//! the sector a segment before it (times within a write's media access taken as evenly
//! spaced), and any other write waits for a free write segment (the oldest run on the media)
//! before it sends its data. `read-priority` keeps written data in dirty segments and
//! destages them in the background, oldest first, one whole segment per media access, once
//! the read-ahead is over: a command arriving at `t` finds committed every destage that could
//! start before `t`, so a read that misses waits for at most the one segment being written.
//! Destages are worked out lazily, when the next command (or flush) arrives. A destage is one
//! sequential media write the drive times itself from data already in its buffer: its track
//! and cylinder switches pay no write settle (the skew covers the switch), so a streaming
//! write drains at the media rate, as drives with write caching on stream one.

use super::cache::Buffer;
use super::geometry::Geometry;
use super::seek::SeekCurve;
use super::spec::{Destage, DriveSpec, ReadAhead, WritePolicy};
use crate::device::{Device, Service};
use elevator_core::{Nanos, Op, Request};
use std::collections::VecDeque;

/// Media work going on in the background after the host got its completion.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Background {
    /// Nothing.
    Idle,
    /// Read-ahead into segment `seg`: the next LBN, the limit, and the time the mechanism is
    /// positioned and reading sequentially from `next` (its start time).
    ReadAhead {
        seg: usize,
        next: u64,
        limit: u64,
        /// Read-ahead the host may not interrupt (minimum read-ahead), as an LBN.
        must_reach: u64,
        at: f64,
    },
}

/// A DiskSim-class rotational drive.
#[derive(Clone, Debug)]
pub struct Hdd {
    spec: DriveSpec,
    geo: Geometry,
    seek: SeekCurve,
    period: f64,
    bus_read: f64,
    bus_write: f64,
    buf: Buffer,
    write_segs: usize,
    cyl: u32,
    head: u16,
    /// When the mechanism finishes committed (non-interruptible) work.
    hda_free: f64,
    background: Background,
    last_read: bool,
    /// While writing: when the host's data transfer starts, its time per sector, and how many
    /// sectors must be in the buffer before the first goes to the media; the media cannot
    /// write a sector before it is in the buffer.
    feed: Option<(f64, f64, u64)>,
    /// Sector count whose completion time [`Access::mark_done`] reports.
    mark: u64,
    /// Write-back with read-priority destaging is in effect.
    read_priority: bool,
    /// A destage is being written (its switches after the first sector pay no write settle).
    destaging: bool,
    /// Counter giving dirty segments their destage order.
    dirty_seq: u64,
    /// Under `before-next-command` write-back: the segments holding written data not yet on
    /// the media, oldest first.
    unwritten: VecDeque<WriteRun>,
    /// Every destage as `(first LBN, end)`, in order.
    #[cfg(test)]
    destaged: Vec<(u64, u64)>,
}

/// A write segment under `before-next-command` write-back: a run of consecutive writes some
/// of which are not yet on the media.
#[derive(Clone, Debug)]
struct WriteRun {
    /// The LBN after the run's last write: a write starting here extends the run.
    next_lbn: u64,
    /// The run's writes not yet on the media, oldest first.
    writes: VecDeque<Unwritten>,
}

/// A write acknowledged whose media write has not ended.
#[derive(Clone, Copy, Debug)]
struct Unwritten {
    lbn: u64,
    n: u64,
    /// One of its sectors (0-based) and when the media wrote it.
    known: (u64, f64),
    /// When the media wrote its last sector.
    end: f64,
}

impl Unwritten {
    /// When the media write `lbn`, taking the sectors between the two known times as evenly
    /// spaced.
    fn done_at(&self, lbn: u64) -> f64 {
        let (k, t) = self.known;
        let last = self.n - 1;
        if last == k {
            return self.end;
        }
        let per = (self.end - t) / (last - k) as f64;
        t + per * ((lbn - self.lbn) as f64 - k as f64)
    }
}

impl WriteRun {
    /// When the run's last write is on the media (the segment is free then).
    fn end(&self) -> f64 {
        self.writes.back().map_or(f64::NEG_INFINITY, |w| w.end)
    }

    /// When the media write `lbn`, if a write of the run not yet on the media holds it.
    fn done_at(&self, lbn: u64) -> Option<f64> {
        self.writes
            .iter()
            .find(|w| (w.lbn..w.lbn + w.n).contains(&lbn))
            .map(|w| w.done_at(lbn))
    }
}

/// When a write's first and last sectors have room in its segment.
#[derive(Clone, Copy, Debug)]
struct Room {
    first: f64,
    last: f64,
}

/// What a media access did.
struct Access {
    /// When the `mark`-th sector (see [`Hdd::mark`]) was done.
    mark_done: f64,
    /// The latest `done(i) - i * bus_read` over the sectors `i` (0-based) of the access: the
    /// host transfer, one sector per `bus_read` and never ahead of the media, ends at
    /// `max(start, lead) + n * bus_read`.
    lead: f64,
    /// Sectors of the first track, just before the first one accessed, that passed whole
    /// under the head while it waited for that one.
    free_before: u64,
    end: f64,
    done_lbns: u64,
}

impl Hdd {
    /// Builds the drive's tables from `spec` (which [`DriveSpec::check`] accepted).
    pub fn new(spec: DriveSpec) -> Hdd {
        let geo = Geometry::new(&spec.layout, spec.surfaces);
        let seek = SeekCurve::new(&spec.seek.curve);
        let segs = if spec.cache.enabled {
            spec.cache.segments.max(1) as usize
        } else {
            1
        };
        let write_segs = if spec.cache.separate_write_segment {
            1
        } else {
            0
        };
        let read_priority = spec.cache.enabled
            && spec.cache.write_policy == WritePolicy::WriteBack
            && spec.cache.destage == Destage::ReadPriority;
        Hdd {
            read_priority,
            destaging: false,
            dirty_seq: 0,
            unwritten: VecDeque::new(),
            #[cfg(test)]
            destaged: Vec::new(),
            period: 60_000.0 / spec.rpm,
            bus_read: spec.bus.read_sector_ms,
            bus_write: spec.bus.write_sector_ms,
            // The dedicated write segment is one of the drive's segments.
            buf: Buffer::new(segs.max(write_segs + 1)),
            write_segs,
            geo,
            seek,
            spec,
            cyl: 0,
            head: 0,
            hda_free: 0.0,
            background: Background::Idle,
            last_read: true,
            feed: None,
            mark: 1,
        }
    }

    /// The spec this drive was built from.
    pub fn spec(&self) -> &DriveSpec {
        &self.spec
    }

    /// The precomputed layout.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Time for one revolution, ms.
    pub fn period_ms(&self) -> f64 {
        self.period
    }

    /// Positioning time from the arm's place to `(cyl, head)`: seek or head switch, whichever
    /// is longer, plus write settle for a write that moves.
    #[inline]
    fn position(&self, cyl: u32, head: u16, write: bool) -> f64 {
        let dist = self.cyl.abs_diff(cyl);
        let mut t = self.seek.time(dist);
        if head != self.head && self.spec.seek.head_switch_ms > t {
            t = self.spec.seek.head_switch_ms;
        }
        if t > 0.0 && write {
            t = (t + self.spec.seek.write_settle_ms).max(0.0);
        }
        t
    }

    /// Time from `t` until the platter reaches `angle` under the head.
    #[inline]
    fn latency(&self, t: f64, angle: f64) -> f64 {
        let now = t / self.period;
        let now = now - now.floor();
        let mut d = angle - now;
        if d < 0.0 {
            d += 1.0;
        }
        // Angles within a billionth of a turn count as aligned (rounding of absolute time).
        if d >= 1.0 - 1e-9 {
            d = 0.0;
        }
        d * self.period
    }

    /// Reads or writes `[lbn, lbn + n)` starting at `t`, track by track, moving the arm.
    /// With `stop`, stops at the last whole sector done by then (read-ahead).
    fn access(&mut self, lbn: u64, n: u64, t: f64, write: bool, stop: f64) -> Access {
        let mut t = t;
        let mut l = lbn;
        let last = lbn + n;
        let mut mark_done = f64::NAN;
        let mut lead = f64::NEG_INFINITY;
        let mut free_before = 0;
        let mut ti = self.geo.track_of(lbn);
        while l < last {
            let tr = self.geo.tracks[ti];
            let on_track = (tr.first_lbn + u64::from(tr.lbns)).min(last) - l;
            // Within a destage only the first positioning is a write settle's seek; the
            // switches that follow are part of one streaming media write.
            let mut pos = self.position(tr.cyl, tr.head, write && !(self.destaging && l > lbn));
            if write && l == lbn {
                // DiskSim's "Minimum seek delay" bounds the positioning of a write.
                pos = pos.max(self.spec.overheads.minimum_seek);
            }
            let t_on = t + pos;
            if t_on >= stop {
                break;
            }
            self.cyl = tr.cyl;
            self.head = tr.head;
            let s0 = self.geo.sector_on(ti, l);
            let lat = self.latency(t_on, self.geo.angle(ti, s0));
            let per = self.period / f64::from(tr.spt);
            let t_start = t_on + lat;
            if l == lbn {
                free_before = ((lat / per) as u64).min(lbn - tr.first_lbn);
            }
            let span = self.geo.span_sectors(ti, l, on_track as u32);
            let mut t_end = t_start + f64::from(span) * per;
            if let (true, Some((d0, each, first))) = (write, self.feed) {
                // Sector by sector: a sector whose data has not arrived waits a revolution.
                let mut cur = t_start;
                for k in 0..on_track {
                    let ready = d0 + ((l - lbn + k + 1).max(first) as f64) * each;
                    if ready > cur {
                        cur += ((ready - cur) / self.period).ceil() * self.period;
                    }
                    cur += per;
                }
                t_end = cur + f64::from(span - on_track as u32) * per;
            }
            if t_end > stop {
                // Partial track: whole sectors done by `stop` (holes ignored here).
                let k = ((stop - t_start) / per).floor().max(0.0) as u64;
                let k = k.min(on_track);
                l += k;
                t = t_start + k as f64 * per;
                break;
            }
            // The first and last sectors of the piece bound `done(i) - i * bus` within it.
            let i0 = (l - lbn) as f64;
            lead = lead
                .max(t_start + per - i0 * self.bus_read)
                .max(t_end - (i0 + on_track as f64 - 1.0) * self.bus_read);
            let k = self.mark.max(1);
            if mark_done.is_nan() && l - lbn + on_track >= k {
                mark_done = t_start + (k - (l - lbn)) as f64 * per;
            }
            l += on_track;
            t = t_end;
            ti += 1;
        }
        Access {
            mark_done: if mark_done.is_nan() { t } else { mark_done },
            lead,
            free_before,
            end: t,
            done_lbns: l - lbn,
        }
    }

    /// Stops the read-ahead in progress at `t` (at a sector boundary), after it has reached
    /// its minimum; the mechanism is free from then on, but for the destages that start
    /// before `t` (read-priority write-back), which are committed.
    fn settle_background(&mut self, t: f64) {
        self.read_ahead_progress(t);
        if let Background::ReadAhead {
            seg,
            next,
            must_reach,
            at,
            ..
        } = self.background
        {
            let mut free = at;
            if next < must_reach {
                let a = self.access(next, must_reach - next, at, false, f64::INFINITY);
                self.set_segment_end(seg, must_reach);
                free = a.end;
            }
            self.hda_free = self.hda_free.max(free.min(t.max(free)));
            self.background = Background::Idle;
        }
        self.destage_progress(t);
    }

    /// Commits, oldest first, the destages that start before `t`: each once the read-ahead
    /// is over, the mechanism free and the segment's data in the buffer.
    fn destage_progress(&mut self, t: f64) {
        if !self.read_priority {
            return;
        }
        while self.background == Background::Idle {
            match self.buf.oldest_dirty() {
                Some(i) if self.hda_free.max(self.buf.segs[i].ready) < t => {
                    self.destage_next();
                }
                _ => break,
            }
        }
    }

    /// Writes the oldest dirty segment to the media, in one access starting once the
    /// mechanism is free and its data are in; the segment is clean from then on and occupied
    /// until the access ends. False when nothing is dirty. The read-ahead must be stopped.
    fn destage_next(&mut self) -> bool {
        let Some(i) = self.buf.oldest_dirty() else {
            return false;
        };
        let s = self.buf.segs[i];
        let start = self.hda_free.max(s.ready);
        self.destaging = true;
        let a = self.access(s.start, s.end - s.start, start, true, f64::INFINITY);
        self.destaging = false;
        #[cfg(test)]
        self.destaged.push((s.start, s.end));
        self.hda_free = a.end;
        let seg = &mut self.buf.segs[i];
        seg.dirty = false;
        seg.busy_until = a.end;
        true
    }

    /// Destages everything dirty (a flush); the mechanism is free at `hda_free`.
    fn destage_all(&mut self, t: f64) {
        self.settle_background(t);
        while self.destage_next() {}
    }

    fn overhead_read(&self, hit: bool) -> f64 {
        let o = &self.spec.overheads;
        match (hit, self.last_read) {
            (true, true) => o.read_hit_after_read,
            (true, false) => o.read_hit_after_write,
            (false, true) => o.read_miss_after_read,
            (false, false) => o.read_miss_after_write,
        }
    }

    fn overhead_write(&self, hit: bool) -> f64 {
        let o = &self.spec.overheads;
        match (hit, self.last_read) {
            (true, true) => o.write_hit_after_read,
            (true, false) => o.write_hit_after_write,
            (false, true) => o.write_miss_after_read,
            (false, false) => o.write_miss_after_write,
        }
    }

    /// Serves a read arriving at `t`; returns (completion, hit).
    ///
    /// As DiskSim: the read-ahead in progress runs up to the arrival; a request whose first
    /// block is in a segment (or, with almost read hits, is the next block the read-ahead in
    /// progress will read) is a (whole or partial) hit: hit overhead, then the blocks go to
    /// the host as they are (or become) available, the read-ahead continuing behind. Anything
    /// else is a miss: miss overhead, the read-ahead stops, the arm moves, the data go to the
    /// host as they come off the media (one sector is enough to reconnect), then read-ahead.
    fn read(&mut self, lbn: u64, n: u64, t: f64) -> (f64, bool) {
        let c = self.spec.cache;
        let o = self.spec.overheads;
        let bus = n as f64 * self.bus_read;
        let end = lbn + n;
        if c.enabled {
            self.read_ahead_progress(t);
            if self.read_priority
                && self.buf.dirty_overlap(lbn, n)
                && !self
                    .buf
                    .segs
                    .iter()
                    .any(|s| s.dirty && s.start <= lbn && end <= s.end)
            {
                // Dirty data no one segment holds whole: written out first (oldest first).
                self.settle_background(t + self.overhead_read(false));
                while self.buf.dirty_overlap(lbn, n) {
                    self.destage_next();
                }
            }
            let almost = match self.background {
                Background::ReadAhead { seg, next, .. }
                    if c.almost_read_hits && next == lbn && self.buf.segs[seg].end == lbn =>
                {
                    Some(seg)
                }
                _ => None,
            };
            // Dirty data are the only valid copy: a segment holding the whole request wins.
            let whole = if self.read_priority {
                self.buf.find_whole(lbn, n, true)
            } else {
                None
            };
            if let Some(i) = whole
                .or_else(|| self.buf.find_start(lbn, c.read_hits_on_write_data))
                .or(almost)
            {
                let seg = self.buf.segs[i];
                let xfer_start = t + self.overhead_read(true) + o.data_preparation;
                self.buf.touch(i);
                let ra_here =
                    matches!(self.background, Background::ReadAhead { seg, .. } if seg == i);
                if end <= seg.end {
                    // Whole hit.
                    if ra_here {
                        self.extend_read_ahead(lbn, n, seg.start);
                    } else if c.read_ahead_on_idle_hit && !seg.write {
                        self.settle_background(t);
                        let at = (t + self.overhead_read(false)).max(self.hda_free);
                        self.start_read_ahead(i, lbn, n, seg.start, at);
                    }
                    return (xfer_start + bus + o.read_completion, true);
                }
                // Partial hit: the rest comes from the read-ahead in progress or the media.
                // `lead` as in `Access`, over the request's sectors that come off the media.
                let lead = if ra_here && {
                    self.extend_read_ahead(lbn, n, seg.start);
                    self.read_ahead_limit() >= end
                } {
                    self.read_ahead_lead(lbn, end)
                } else {
                    let over = self.overhead_read(false);
                    self.settle_background(t + over);
                    let start = (t + over).max(self.hda_free);
                    let from = self.buf.segs[i].end.max(lbn);
                    let a = self.access(from, end - from, start, false, f64::INFINITY);
                    self.hda_free = a.end;
                    self.buf.segs[i].end = end;
                    self.start_read_ahead(i, lbn, n, self.buf.segs[i].start, a.end);
                    a.lead - (from - lbn) as f64 * self.bus_read
                };
                let done = xfer_start.max(lead) + bus + o.read_completion;
                return (done, true);
            }
        }
        // Miss: stop read-ahead, position, read, transfer.
        let over = self.overhead_read(false);
        self.settle_background(t + over);
        let start = (t + over).max(self.hda_free);
        // The drive reconnects once the high-water mark is in the buffer.
        let b = self.spec.bus;
        let base = if b.watermark_by_request {
            n.min(u64::from(c.segment_sectors.max(1)))
        } else {
            u64::from(c.segment_sectors)
        };
        let water = if b.watermark_by_request {
            ((base as f64 * b.read_high_water) as u64).max(1)
        } else {
            ((base as f64 * b.read_high_water + 0.9999999999) as u64).max(1)
        };
        self.mark = water.min(n);
        let a = self.access(lbn, n, start, false, f64::INFINITY);
        self.mark = 1;
        let xfer_start = a.mark_done + o.first_reselect + o.data_preparation;
        // Sector by sector at the bus rate, each once it is off the media: a bus slower than
        // the media falls behind and catches up during head switches; the sectors read after
        // one then set the pace.
        let xfer_done = xfer_start.max(a.lead) + bus;
        let done = xfer_done + o.read_completion;
        self.hda_free = a.end;
        if c.enabled {
            let ws = self.write_segs;
            let segs = &self.buf.segs;
            let seg = self.buf.victim(|i| i >= ws && !segs[i].dirty);
            // With "read any free blocks" the segment keeps what passed under the head while
            // the drive waited for the first sector.
            let first = if c.read_any_free_blocks {
                (lbn - a.free_before).max(end.saturating_sub(u64::from(c.segment_sectors)))
            } else {
                lbn
            };
            self.buf.invalidate(first, end - first, seg);
            self.buf.segs[seg].start = first;
            self.buf.segs[seg].end = end;
            self.buf.segs[seg].write = false;
            self.buf.touch(seg);
            self.start_read_ahead(seg, lbn, n, lbn, a.end);
        }
        (done, false)
    }

    /// Runs the read-ahead in progress up to `t` (it keeps going afterwards).
    fn read_ahead_progress(&mut self, t: f64) {
        if let Background::ReadAhead {
            seg,
            next,
            limit,
            must_reach,
            at,
        } = self.background
        {
            if t <= at {
                return;
            }
            let a = self.access(next, limit - next, at, false, t);
            let reached = next + a.done_lbns;
            self.set_segment_end(seg, reached);
            if reached >= limit {
                self.background = Background::Idle;
                self.hda_free = self.hda_free.max(a.end);
            } else {
                self.background = Background::ReadAhead {
                    seg,
                    next: reached,
                    limit,
                    must_reach,
                    at: a.end.max(at),
                };
            }
        }
    }

    /// Grows segment `seg` to `end`; a segment that may overwrite the request's data keeps
    /// only its last `segment_sectors` blocks.
    fn set_segment_end(&mut self, seg: usize, end: u64) {
        let size = u64::from(self.spec.cache.segment_sectors);
        let s = &mut self.buf.segs[seg];
        s.end = end;
        if s.end - s.start > size {
            s.start = s.end - size;
        }
    }

    fn read_ahead_limit(&self) -> u64 {
        match self.background {
            Background::ReadAhead { limit, .. } => limit,
            Background::Idle => 0,
        }
    }

    /// The read-ahead in progress will read `[next, end)`: the latest `done(i) - i * bus_read`
    /// over those sectors, `i` counted from `first` (state unchanged).
    fn read_ahead_lead(&mut self, first: u64, end: u64) -> f64 {
        if let Background::ReadAhead { next, at, .. } = self.background {
            if end <= next {
                return f64::NEG_INFINITY;
            }
            let saved = (self.cyl, self.head);
            let a = self.access(next, end - next, at, false, f64::INFINITY);
            self.cyl = saved.0;
            self.head = saved.1;
            return a.lead - next.saturating_sub(first) as f64 * self.bus_read;
        }
        f64::NEG_INFINITY
    }

    /// DiskSim's `disk_buffer_get_max_readahead`: where read-ahead after the request
    /// `[lbn, lbn + n)` held in a segment starting at `seg_start` stops.
    fn max_read_ahead(&self, lbn: u64, n: u64, seg_start: u64) -> u64 {
        let c = &self.spec.cache;
        let end = lbn + n;
        let size = u64::from(c.segment_sectors);
        let limit = match c.read_ahead {
            ReadAhead::None => end,
            ReadAhead::Continuous => {
                if end >= self.geo.blocks {
                    end
                } else {
                    // To the end of the track holding the next block; one track more when the
                    // segment already held the previous track (a sequential stream).
                    let tr = self.geo.tracks[self.geo.track_of(end)];
                    let track_end = tr.first_lbn + u64::from(tr.lbns);
                    if seg_start < tr.first_lbn {
                        track_end + u64::from(tr.spt)
                    } else {
                        track_end
                    }
                }
            }
            ReadAhead::Track | ReadAhead::Cylinder | ReadAhead::FillSegment => {
                if c.max_read_ahead > 0 {
                    end + u64::from(c.max_read_ahead)
                } else if !c.read_ahead_over_requested {
                    let min = u64::from(c.min_read_ahead);
                    if n >= size || size - n < min {
                        end + min
                    } else {
                        lbn + size
                    }
                } else {
                    end + size
                }
            }
        };
        let mut limit = limit.min(self.geo.blocks);
        // Track and cylinder modes never switch heads (track) or seek (cylinder).
        let ti = self.geo.track_of(end - 1);
        let tr = self.geo.tracks[ti];
        match c.read_ahead {
            ReadAhead::Track => limit = limit.min(tr.first_lbn + u64::from(tr.lbns)),
            ReadAhead::Cylinder => {
                let mut j = ti;
                while j + 1 < self.geo.tracks.len() && self.geo.tracks[j + 1].cyl == tr.cyl {
                    j += 1;
                }
                let last = self.geo.tracks[j];
                limit = limit.min(last.first_lbn + u64::from(last.lbns));
            }
            _ => {}
        }
        limit.max(end)
    }

    /// A hit on the segment being read ahead moves its limit on.
    fn extend_read_ahead(&mut self, lbn: u64, n: u64, seg_start: u64) {
        let new = self.max_read_ahead(lbn, n, seg_start);
        if let Background::ReadAhead { ref mut limit, .. } = self.background {
            *limit = (*limit).max(new);
        }
    }

    fn start_read_ahead(&mut self, seg: usize, lbn: u64, n: u64, seg_start: u64, at: f64) {
        let end = lbn + n;
        let from = self.buf.segs[seg].end.max(end);
        let limit = self.max_read_ahead(lbn, n, seg_start);
        let must_reach = (end + u64::from(self.spec.cache.min_read_ahead)).min(limit);
        if limit > from {
            self.background = Background::ReadAhead {
                seg,
                next: from,
                limit,
                must_reach,
                at,
            };
        }
    }

    /// Serves a write arriving at `t`; returns (completion, hit).
    fn write(&mut self, lbn: u64, n: u64, t: f64) -> (f64, bool) {
        if self.read_priority {
            return self.write_buffered(lbn, n, t);
        }
        let c = self.spec.cache;
        let o = self.spec.overheads;
        let bus = n as f64 * self.bus_write;
        let back = c.enabled
            && match c.write_policy {
                WritePolicy::WriteBack => true,
                // DiskSim's limited fast write: from the buffer unless an earlier write is
                // still on its way to the media.
                WritePolicy::WriteBackSequential => self.hda_free <= t,
                WritePolicy::WriteThrough => false,
            };
        let over = self.overhead_write(back);
        self.settle_background(t + over);
        if c.enabled {
            // A segment holding any of the written blocks takes the write (DiskSim never keeps
            // two copies); otherwise the dedicated write segment or the least recently used.
            let seg = if self.write_segs > 0 {
                0
            } else {
                match self.buf.find_overlap(lbn, n) {
                    Some(i) => i,
                    None => self.buf.victim(|_| true),
                }
            };
            // Other segments holding any written block are emptied, not just cut.
            self.buf.drop_overlapping(lbn, n, seg);
            self.buf.segs[seg].start = lbn;
            self.buf.segs[seg].end = lbn + n;
            self.buf.segs[seg].write = true;
            self.buf.touch(seg);
        }
        // Under write-back the data go to a segment as it has room for them.
        let room = if back {
            self.take_write_segment(lbn, n, t + over)
        } else {
            Room {
                first: f64::NEG_INFINITY,
                last: f64::NEG_INFINITY,
            }
        };
        let xfer_start = (t + over).max(room.first) + o.data_preparation;
        let data_in = xfer_start + bus;
        // The arm may move once the command is decoded; sectors are written as their data
        // arrive.
        let start = (t + over).max(self.hda_free);
        // DiskSim's extra-write-disconnect controllers hold the media back until a first batch
        // of sectors is buffered (`disk_buffer_block_available`).
        let first = match (self.spec.bus.extra_write_disconnect, n) {
            (false, _) => 1,
            (true, n) if n < 45 => n.min(10),
            (true, _) => 15,
        };
        // A write longer than a segment has room for its last sector once the media have
        // taken all but a segment of it.
        let size = u64::from(c.segment_sectors);
        let longer = back && n > size;
        if longer {
            self.mark = n - size;
        }
        self.feed = Some((xfer_start, self.bus_write, first));
        let a = self.access(lbn, n, start, true, f64::INFINITY);
        self.feed = None;
        self.mark = 1;
        self.hda_free = a.end;
        if back {
            // Complete once in the buffer; the media write follows.
            let last_room = if longer { a.mark_done } else { room.last };
            let in_buffer = data_in.max(last_room + self.bus_write);
            if let Some(run) = self.unwritten.back_mut() {
                run.writes.push_back(Unwritten {
                    lbn,
                    n,
                    known: (if longer { n - size - 1 } else { 0 }, a.mark_done),
                    end: a.end,
                });
            }
            (in_buffer + o.write_completion, true)
        } else {
            // The drive reconnects to report completion.
            (
                a.end.max(data_in) + o.first_reselect + o.write_completion,
                false,
            )
        }
    }

    /// Under `before-next-command` write-back, finds the write at `lbn` of `n` sectors,
    /// decoded at `now`, a segment (DiskSim's `disk_buffer_select_write_segment` and the
    /// enablement test on appends): the newest run if the write extends it, where each of
    /// its sectors has room once the media have written the sector a segment before it;
    /// else a segment of its own, once fewer than the write segments hold data not yet on
    /// the media (the oldest run's media write ended). Returns when its first and its last
    /// sector have room.
    fn take_write_segment(&mut self, lbn: u64, n: u64, now: f64) -> Room {
        for run in &mut self.unwritten {
            while run.writes.front().is_some_and(|w| w.end <= now) {
                run.writes.pop_front();
            }
        }
        self.unwritten.retain(|run| !run.writes.is_empty());
        let size = u64::from(self.spec.cache.segment_sectors);
        match self.unwritten.back_mut() {
            Some(run) if run.next_lbn == lbn => {
                let behind = |run: &WriteRun, sector: u64| {
                    sector
                        .checked_sub(size)
                        .and_then(|b| run.done_at(b))
                        .unwrap_or(now)
                        .max(now)
                };
                let room = Room {
                    first: behind(run, lbn),
                    last: behind(run, lbn + n - 1),
                };
                run.next_lbn = lbn + n;
                room
            }
            _ => {
                let mut free = now;
                while self.unwritten.len() >= self.write_segment_limit() {
                    if let Some(run) = self.unwritten.pop_front() {
                        free = free.max(run.end());
                    }
                }
                self.unwritten.push_back(WriteRun {
                    next_lbn: lbn + n,
                    writes: VecDeque::new(),
                });
                Room {
                    first: free,
                    last: free,
                }
            }
        }
    }

    /// How many segments may hold written data not yet on the media: the dedicated write
    /// segment, else `cache.write_segments` (every segment when absent).
    fn write_segment_limit(&self) -> usize {
        if self.write_segs > 0 {
            1
        } else {
            let segments = self.spec.cache.segments.max(1);
            self.spec.cache.write_segments.unwrap_or(segments).max(1) as usize
        }
    }

    /// A write under read-priority write-back: it joins the dirty segment it overlaps or
    /// extends when the run still fits a segment, else takes a free segment, waiting for a
    /// destage to free one when the dirty segments are at their limit (the dedicated write
    /// segment, else `cache.write_segments` and at most all but one); completes once its
    /// data are in the buffer. Data it overlaps that are being destaged, or dirty in a
    /// segment it cannot join, reach the media first.
    fn write_buffered(&mut self, lbn: u64, n: u64, t: f64) -> (f64, bool) {
        let o = self.spec.overheads;
        let size = u64::from(self.spec.cache.segment_sectors);
        let end = lbn + n;
        let mut now = t + self.overhead_write(true);
        self.settle_background(now);
        let overlaps = |s: &super::cache::Segment| s.start < end && lbn < s.end;
        if let Some(b) = self
            .buf
            .segs
            .iter()
            .filter(|s| !s.dirty && s.busy_until > now && overlaps(s))
            .map(|s| s.busy_until)
            .reduce(f64::max)
        {
            now = b;
        }
        let joins = |s: &super::cache::Segment| {
            s.dirty && s.start <= end && lbn <= s.end && s.end.max(end) - s.start.min(lbn) <= size
        };
        let dirty_hits = self
            .buf
            .segs
            .iter()
            .filter(|s| s.dirty && overlaps(s))
            .count();
        let mut target = match dirty_hits {
            0 => None,
            1 => self.buf.segs.iter().position(|s| overlaps(s) && joins(s)),
            _ => None,
        };
        if target.is_none() && dirty_hits > 0 {
            while self.buf.dirty_overlap(lbn, n) {
                self.destage_next();
            }
            now = now.max(self.hda_free);
        }
        if target.is_none() {
            // Appending to a run (a sequential writer fills a segment before it is destaged).
            target = self.buf.segs.iter().position(|s| joins(s) && s.end == lbn);
        }
        let seg = match target {
            Some(i) => {
                let s = &mut self.buf.segs[i];
                s.start = s.start.min(lbn);
                s.end = s.end.max(end);
                i
            }
            None => {
                // The dedicated write segment, or any but one (kept for reads).
                let ws = self.write_segs;
                let allowed = |i: usize| ws == 0 || i == 0;
                // DiskSim's mode's limit, and one segment always kept for reads.
                let limit = if ws > 0 {
                    1
                } else {
                    self.write_segment_limit().min(self.buf.segs.len() - 1)
                };
                loop {
                    let taken = |s: &super::cache::Segment| s.dirty || s.busy_until > now;
                    let occupied = (0..self.buf.segs.len())
                        .filter(|&i| allowed(i) && taken(&self.buf.segs[i]))
                        .count();
                    if occupied < limit {
                        break;
                    }
                    let busy = (0..self.buf.segs.len())
                        .filter(|&i| allowed(i) && self.buf.segs[i].busy_until > now)
                        .map(|i| self.buf.segs[i].busy_until)
                        .reduce(f64::min);
                    match busy {
                        Some(b) => now = b,
                        None => {
                            self.destage_next();
                        }
                    }
                }
                let segs = &self.buf.segs;
                let i = self
                    .buf
                    .victim(|i| allowed(i) && !segs[i].dirty && segs[i].busy_until <= now);
                self.dirty_seq += 1;
                let s = &mut self.buf.segs[i];
                s.start = lbn;
                s.end = end;
                s.dirty = true;
                s.since = self.dirty_seq;
                s.ready = 0.0;
                i
            }
        };
        self.buf.drop_overlapping(lbn, n, seg);
        self.buf.touch(seg);
        let data_in = now + o.data_preparation + n as f64 * self.bus_write;
        let s = &mut self.buf.segs[seg];
        s.write = true;
        s.ready = s.ready.max(data_in);
        (data_in + o.write_completion, true)
    }

    /// Serves a cache flush arriving at `t_ms`: it completes once every write before it is on
    /// the media (the write-back in progress, and with read-priority destaging every dirty
    /// segment). Returns the completion time in ms.
    pub fn flush(&mut self, t_ms: f64) -> f64 {
        self.destage_all(t_ms);
        self.hda_free.max(t_ms)
    }

    /// Serves one request of `n` sectors at `lbn` arriving at `t_ms`; returns the completion
    /// time in ms and whether the cache served it. Requests past the end wrap around.
    pub fn serve(&mut self, read: bool, lbn: u64, n: u32, t_ms: f64) -> (f64, bool) {
        let blocks = self.geo.blocks;
        let n = u64::from(n.max(1)).min(blocks);
        let lbn = if lbn + n > blocks {
            lbn % (blocks - n + 1)
        } else {
            lbn
        };
        let r = if read {
            self.read(lbn, n, t_ms)
        } else {
            self.write(lbn, n, t_ms)
        };
        self.last_read = read;
        r
    }
}

impl Device for Hdd {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn depth(&self) -> usize {
        1
    }
    fn capacity_sectors(&self) -> u64 {
        self.geo.blocks
    }
    fn submit(&mut self, rq: &Request, now: Nanos) -> Service {
        let t = now.as_ns() as f64 / 1e6;
        let (done, hit) = match rq.op {
            Op::Read | Op::Write => self.serve(rq.op.is_read(), rq.sector, rq.sectors, t),
            Op::Flush => (self.flush(t), false),
            Op::Discard => (t, false),
        };
        let done_ns = (done * 1e6).ceil() as u64;
        Service {
            done: Nanos(done_ns.max(now.as_ns())),
            cache_hit: hit,
            deferred: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// 6000 rpm, 100 sectors per track, 2 ms seeks, 4 segments of 300 sectors, read-priority.
    fn drive() -> Hdd {
        let text = r#"
name = "tiny"
rpm = 6000.0
surfaces = 2
cylinders = 100
[layout]
[[layout.zones]]
first_cyl = 0
last_cyl = 99
sectors_per_track = 100
[seek.curve]
kind = "constant"
ms = 2.0
[bus]
read_sector_ms = 0.001
write_sector_ms = 0.001
[cache]
segments = 4
segment_sectors = 300
max_read_ahead = 100
write_policy = "write-back"
destage = "read-priority"
"#;
        Hdd::new(DriveSpec::parse(text, Path::new("tiny.toml")).expect("valid"))
    }

    /// A destage crossing track switches that the skew covers for a read but not with the
    /// write settle added streams at the media rate: no revolution lost per switch. A
    /// write-through write over the same sectors still pays the settle at each switch.
    #[test]
    fn a_destage_streams_across_track_switches_without_the_write_settle() {
        let text = r#"
name = "skewed"
rpm = 6000.0
surfaces = 2
cylinders = 100
[layout]
[[layout.zones]]
first_cyl = 0
last_cyl = 99
sectors_per_track = 100
track_skew = 11
cyl_skew = 11
[seek]
head_switch_ms = 1.0
write_settle_ms = 0.5
[seek.curve]
kind = "constant"
ms = 1.0
[bus]
read_sector_ms = 0.001
write_sector_ms = 0.001
[cache]
segments = 4
segment_sectors = 300
max_read_ahead = 100
write_policy = "write-back"
destage = "read-priority"
"#;
        let spec = DriveSpec::parse(text, Path::new("skewed.toml")).expect("valid");
        // 300 sectors from the start of a track: three tracks, two switches, 10 ms a turn.
        let mut h = Hdd::new(spec.clone());
        let t = h.serve(false, 1_000, 300, 0.0).0;
        let start = h.hda_free.max(t);
        h.destage_all(t);
        let took = h.hda_free - start;
        // Three turns of data plus the two skews (1.1 ms each) and the first positioning.
        assert!(took < 30.0 + 2.2 + 10.0 + 1.5 + 1e-6, "{took}");
        // Written through, each switch misses its first sector by the settle: a lost turn.
        let mut wt = spec;
        wt.cache.write_policy = WritePolicy::WriteThrough;
        let mut h = Hdd::new(wt);
        let done = h.serve(false, 1_000, 300, 0.0).0;
        assert!(done > 30.0 + 2.0 * 10.0, "{done}");
    }

    #[test]
    fn dirty_segments_are_destaged_oldest_first_not_in_lbn_order() {
        let mut h = drive();
        let mut t = 0.0;
        for lbn in [15_000, 200, 9_000] {
            t = h.serve(false, lbn, 50, t).0;
        }
        h.destage_all(t);
        assert_eq!(
            h.destaged,
            vec![(15_000, 15_050), (200, 250), (9_000, 9_050)]
        );
    }

    #[test]
    fn every_written_block_reaches_the_media_by_a_flush() {
        // Overlapping, sequential and scattered writes mixed with reads (some of dirty data).
        let mut h = drive();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut written = std::collections::BTreeSet::new();
        let mut t = 0.0;
        for _ in 0..400 {
            let lbn = next() % 4_000;
            let n = 1 + next() % 120;
            let read = next() % 3 == 0;
            t = h.serve(read, lbn, n as u32, t + (next() % 5) as f64).0;
            if !read {
                written.extend(lbn..lbn + n);
            }
        }
        let done = h.flush(t);
        assert!(h.buf.segs.iter().all(|s| !s.dirty));
        assert!(h.hda_free <= done);
        let on_media: std::collections::BTreeSet<u64> =
            h.destaged.iter().flat_map(|&(a, b)| a..b).collect();
        assert!(written.is_subset(&on_media));
        // A second flush finds nothing to do.
        assert_eq!(h.flush(done), done);
    }
}
