//! The drive: mechanics, controller overheads, bus transfer and cache, as one [`Device`].
//!
//! Internally every time is `f64` milliseconds since the start of the run; the platter angle
//! is `frac(t / period)`, so rotation advances with absolute time whether the drive is busy
//! or idle. One request is served at a time (queue depth 1, FCFS, as in DiskSim's validated
//! models); background work (read-ahead, write-back of cached writes) continues after the
//! host has its completion and delays the next request only when the next request needs the
//! mechanism.

use super::cache::Buffer;
use super::geometry::Geometry;
use super::seek::SeekCurve;
use super::spec::{DriveSpec, ReadAhead, WritePolicy};
use crate::device::{Device, Service};
use elevator_core::{Nanos, Op, Request};

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
}

/// What a media access did.
struct Access {
    first_done: f64,
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
        Hdd {
            period: 60_000.0 / spec.rpm,
            bus_read: spec.bus.read_sector_ms,
            bus_write: spec.bus.write_sector_ms,
            buf: Buffer::new(segs + write_segs),
            write_segs,
            geo,
            seek,
            spec,
            cyl: 0,
            head: 0,
            hda_free: 0.0,
            background: Background::Idle,
            last_read: true,
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
        let mut first_done = f64::NAN;
        let mut ti = self.geo.track_of(lbn);
        while l < last {
            let tr = self.geo.tracks[ti];
            let on_track = (tr.first_lbn + u64::from(tr.lbns)).min(last) - l;
            let pos = self.position(tr.cyl, tr.head, write);
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
            let span = self.geo.span_sectors(ti, l, on_track as u32);
            let t_end = t_start + f64::from(span) * per;
            if t_end > stop {
                // Partial track: whole sectors done by `stop` (holes ignored here).
                let k = ((stop - t_start) / per).floor().max(0.0) as u64;
                let k = k.min(on_track);
                if k > 0 && first_done.is_nan() {
                    first_done = t_start + per;
                }
                l += k;
                t = t_start + k as f64 * per;
                break;
            }
            if first_done.is_nan() {
                first_done = t_start + per;
            }
            l += on_track;
            t = t_end;
            ti += 1;
        }
        Access {
            first_done,
            end: t,
            done_lbns: l - lbn,
        }
    }

    /// Lets background read-ahead run until `t` (stopping it there unless `keep` says the new
    /// request continues the stream), and waits for non-interruptible work.
    fn settle_background(&mut self, t: f64) {
        if let Background::ReadAhead {
            seg,
            next,
            limit,
            must_reach,
            at,
        } = self.background
        {
            // Read-ahead must at least reach `must_reach` before it can be interrupted.
            let stop = t.max(at);
            let a = self.access(next, limit - next, at, false, f64::INFINITY.min(stop));
            let mut reached = next + a.done_lbns;
            let mut end_t = a.end;
            if reached < must_reach {
                let b = self.access(reached, must_reach - reached, end_t, false, f64::INFINITY);
                reached += b.done_lbns;
                end_t = b.end;
            }
            self.buf.segs[seg].end = reached;
            self.hda_free = self.hda_free.max(end_t.min(t.max(end_t)));
            if reached < must_reach || end_t > t {
                self.hda_free = self.hda_free.max(end_t);
            }
            self.background = Background::Idle;
        }
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
    fn read(&mut self, lbn: u64, n: u64, t: f64) -> (f64, bool) {
        let c = self.spec.cache.clone();
        let o = self.spec.overheads.clone();
        let bus = n as f64 * self.bus_read;
        // A whole hit on data already in the buffer (read-ahead up to now included).
        if c.enabled {
            let progress = self.read_ahead_progress(t);
            if let Some(i) = self.buf.find_whole(lbn, n, c.read_hits_on_write_data) {
                let done =
                    t + self.overhead_read(true) + o.data_preparation + bus + o.read_completion;
                self.buf.touch(i);
                return (done, true);
            }
            // Served by the read-ahead in progress: the data arrives as the head passes.
            if let Some((seg, arrival_of)) = progress {
                let s = self.buf.segs[seg];
                if s.start <= lbn && lbn <= s.end && lbn + n <= arrival_of.1 {
                    let last_at = self.read_ahead_time_of(lbn + n - 1);
                    let start_xfer = t + self.overhead_read(true) + o.data_preparation;
                    let done = (start_xfer + bus).max(last_at + self.bus_read) + o.read_completion;
                    self.buf.touch(seg);
                    return (done, true);
                }
            }
        }
        // Miss: stop read-ahead, position, read, transfer.
        let over = self.overhead_read(false);
        self.settle_background(t + over);
        let start = (t + over).max(self.hda_free);
        let a = self.access(lbn, n, start, false, f64::INFINITY);
        let xfer_done = (a.first_done + bus).max(a.end + self.bus_read);
        let done = xfer_done + o.read_completion;
        self.hda_free = a.end;
        if c.enabled {
            let seg = self.buf.victim(|i| i >= self.write_segs);
            self.buf.invalidate(lbn, n, seg);
            self.buf.segs[seg].start = lbn;
            self.buf.segs[seg].end = lbn + n;
            self.buf.segs[seg].write = false;
            self.buf.touch(seg);
            self.start_read_ahead(seg, lbn, n, a.end);
        }
        (done, false)
    }

    /// Where the read-ahead would be at `t`: (segment, (next LBN, limit)).
    fn read_ahead_progress(&mut self, t: f64) -> Option<(usize, (u64, u64))> {
        if let Background::ReadAhead {
            seg,
            next,
            limit,
            must_reach,
            at,
        } = self.background
        {
            let (cyl, head) = (self.cyl, self.head);
            let a = self.access(next, limit - next, at, false, t);
            // Advance the background state to `t`.
            let reached = next + a.done_lbns;
            self.buf.segs[seg].end = reached;
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
                let _ = (cyl, head);
            }
            return Some((seg, (reached, limit)));
        }
        None
    }

    /// When the read-ahead in progress finishes reading `lbn` (arm state unchanged).
    fn read_ahead_time_of(&mut self, lbn: u64) -> f64 {
        if let Background::ReadAhead { next, at, .. } = self.background {
            if lbn < next {
                return at;
            }
            let saved = (self.cyl, self.head);
            let a = self.access(next, lbn + 1 - next, at, false, f64::INFINITY);
            self.cyl = saved.0;
            self.head = saved.1;
            return a.end;
        }
        0.0
    }

    fn start_read_ahead(&mut self, seg: usize, lbn: u64, n: u64, at: f64) {
        let c = &self.spec.cache;
        let end = lbn + n;
        let mut limit = if c.read_ahead_over_requested {
            end + u64::from(c.max_read_ahead)
        } else {
            end.max(lbn + u64::from(c.max_read_ahead))
        };
        limit = limit.min(lbn + u64::from(c.segment_sectors).max(n));
        let ti = self.geo.track_of(end - 1);
        let tr = self.geo.tracks[ti];
        match c.read_ahead {
            ReadAhead::None => limit = end,
            ReadAhead::Track => limit = limit.min(tr.first_lbn + u64::from(tr.lbns)),
            ReadAhead::Cylinder => {
                let mut j = ti;
                while j + 1 < self.geo.tracks.len() && self.geo.tracks[j + 1].cyl == tr.cyl {
                    j += 1;
                }
                let last = self.geo.tracks[j];
                limit = limit.min(last.first_lbn + u64::from(last.lbns));
            }
            ReadAhead::FillSegment | ReadAhead::Continuous => {}
        }
        let must_reach = (end + u64::from(c.min_read_ahead)).min(limit);
        let limit = limit.min(self.geo.blocks);
        if limit > end {
            self.background = Background::ReadAhead {
                seg,
                next: end,
                limit,
                must_reach: must_reach.min(limit),
                at,
            };
        }
    }

    /// Serves a write arriving at `t`; returns (completion, hit).
    fn write(&mut self, lbn: u64, n: u64, t: f64) -> (f64, bool) {
        let c = self.spec.cache.clone();
        let o = self.spec.overheads.clone();
        let bus = n as f64 * self.bus_write;
        let back = c.enabled && c.write_policy == WritePolicy::WriteBack;
        let over = self.overhead_write(back);
        self.settle_background(t + over);
        if c.enabled {
            let seg = if self.write_segs > 0 {
                0
            } else {
                self.buf.victim(|_| true)
            };
            self.buf.invalidate(lbn, n, seg);
            self.buf.segs[seg].start = lbn;
            self.buf.segs[seg].end = lbn + n;
            self.buf.segs[seg].write = true;
            self.buf.touch(seg);
        }
        let data_in = t + over + o.data_preparation + bus;
        if back {
            // Complete once in the buffer; the media write follows.
            let start = data_in.max(self.hda_free);
            let a = self.access(lbn, n, start, true, f64::INFINITY);
            self.hda_free = a.end;
            (data_in + o.write_completion, true)
        } else {
            let start = (t + over).max(self.hda_free);
            let a = self.access(lbn, n, start, true, f64::INFINITY);
            // The media cannot write a sector before the host has sent it.
            let end = a.end.max(data_in + self.bus_write);
            self.hda_free = end;
            (end + o.write_completion, false)
        }
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
            // A cache flush waits for the write-back in progress.
            Op::Flush => {
                self.settle_background(t);
                (self.hda_free.max(t), false)
            }
            Op::Discard => (t, false),
        };
        let done_ns = (done * 1e6).ceil() as u64;
        Service {
            done: Nanos(done_ns.max(now.as_ns())),
            cache_hit: hit,
        }
    }
}
