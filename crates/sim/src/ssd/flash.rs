//! The flash back end as gap-filling timelines: one per channel, one per plane.
//!
//! An operation is placed at submission, in the first gap of its resources at or after the
//! time its inputs are ready (a read of a plane idle now goes before a program placed later
//! on it, as MQSim's TSU would serve it). This is MQSim's transaction scheduling
//! (`TSU_OutOfOrder`, `NVM_PHY_ONFI_NVDDR2`) reduced to placement: deterministic and cheap, at
//! the cost of never moving work once placed (docs/ssd-model.md, "Deviations").
//!
//! A read senses the page (tR, by page type; a small read senses each unit asked for, one
//! after another), then moves the bytes asked for over the channel; the plane is held while it
//! senses and its register empties. A program moves the page over the channel, then holds the
//! plane for tPROG; an erase holds it for tBERS. Programs and erases hold their plane only (the
//! planes of a die program and erase together, as multi-plane commands do); a read holds its
//! whole die unless the spec lets it overlap (`independent_plane_reads` for small reads,
//! `multi_plane_reads` for full-page reads).
//!
//! With preemptible GC ([`Gc::preemptible`](super::spec::Gc)), GC work goes on a second
//! timeline per plane that host reads ignore (they run as if GC were suspended for them);
//! host programs and GC keep clear of both.

use elevator_core::Nanos;

use super::spec::SsdSpec;
use super::timeline::GapTimeline;

/// Who asked for a flash operation: host work and GC work may use different timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A host read or write (or its mapping-table read).
    Host,
    /// Garbage collection.
    Gc,
}

/// Channels and planes as timelines.
#[derive(Clone, Debug)]
pub struct Flash {
    channels: u32,
    /// Dies in the drive; plane `p` is on die `p mod dies`.
    dies: u32,
    planes_per_die: u32,
    independent_plane_reads: bool,
    multi_plane_reads: bool,
    channels_busy: Vec<GapTimeline>,
    /// The current time: no work is placed before it.
    now: Nanos,
    planes_busy: Vec<GapTimeline>,
    gc_busy: Vec<GapTimeline>,
    preemptible: bool,
    read_ns: u64,
    small_read_ns: u64,
    small_read_bytes: u32,
    unit_bytes: u64,
    read_step_ns: u64,
    page_types: u32,
    program_ns: u64,
    erase_ns: u64,
    /// Channel transfer time per byte, picoseconds.
    channel_ps_per_byte: u64,
}

/// Microseconds (f64) to whole nanoseconds.
pub(crate) fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// Picoseconds per byte of a bandwidth in MB/s.
pub(crate) fn ps_per_byte(mb_s: f64) -> u64 {
    (1e6 / mb_s).round().max(1.0) as u64
}

impl Flash {
    /// Idle timelines for `spec`'s back end.
    pub fn new(spec: &SsdSpec) -> Flash {
        let f = &spec.flash;
        let dies = f.channels * f.chips_per_channel * f.dies_per_chip;
        let planes = (dies * f.planes_per_die) as usize;
        Flash {
            channels: f.channels,
            dies,
            planes_per_die: f.planes_per_die,
            independent_plane_reads: f.independent_plane_reads,
            multi_plane_reads: f.multi_plane_reads,
            channels_busy: vec![GapTimeline::new(); f.channels as usize],
            now: Nanos::ZERO,
            planes_busy: vec![GapTimeline::new(); planes],
            gc_busy: vec![GapTimeline::new(); planes],
            preemptible: spec.gc.preemptible,
            read_ns: us_to_ns(f.read_us),
            small_read_ns: us_to_ns(f.small_read_us),
            small_read_bytes: f.small_read_bytes,
            unit_bytes: u64::from(spec.ftl.unit_bytes),
            read_step_ns: us_to_ns(f.read_step_us),
            page_types: f.page_types.max(1),
            program_ns: us_to_ns(f.program_us),
            erase_ns: us_to_ns(f.erase_us),
            channel_ps_per_byte: ps_per_byte(f.channel_mb_s),
        }
    }

    /// Set the current time (a submission's): transfers are placed at or after it.
    pub fn set_now(&mut self, now: Nanos) {
        self.now = now;
    }

    /// The channel of plane `plane`. Planes are numbered channel first, then chip (way), die
    /// and plane within the die (MQSim's CWDP order), so consecutive planes sit on different
    /// channels and plane `p` is on die `p mod dies`.
    pub fn channel_of(&self, plane: u32) -> u32 {
        plane % self.channels
    }

    fn xfer_ns(&self, bytes: u64) -> u64 {
        (bytes * self.channel_ps_per_byte).div_ceil(1000)
    }

    fn small(&self, bytes: u64) -> bool {
        self.small_read_ns > 0 && bytes <= u64::from(self.small_read_bytes)
    }

    /// The planes an operation on `plane` holds, as (first, count, stride): its own for a
    /// small independent read, else every plane of its die.
    fn held(&self, plane: u32, own_only: bool) -> (usize, usize, usize) {
        if own_only {
            (plane as usize, 1, 1)
        } else {
            let die = plane % self.dies;
            (
                die as usize,
                self.planes_per_die as usize,
                self.dies as usize,
            )
        }
    }

    /// Whether `origin`'s work goes on the GC timelines (preemptible GC), and whether it must
    /// also keep clear of them (everything but host reads).
    fn lanes(&self, origin: Origin, read: bool) -> (bool, bool) {
        let on_gc = origin == Origin::Gc && self.preemptible;
        let avoids_gc = self.preemptible && !(origin == Origin::Host && read);
        (on_gc, avoids_gc)
    }

    /// Place `len` ns of `origin`'s work on the planes `own_only` selects, at the earliest
    /// time at or after `ready` when all of them are free; returns its start.
    fn place(
        &mut self,
        plane: u32,
        own_only: bool,
        origin: Origin,
        read: bool,
        ready: Nanos,
        len: u64,
    ) -> Nanos {
        let (first, n, stride) = self.held(plane, own_only);
        let (on_gc, avoids_gc) = self.lanes(origin, read);
        let now = self.now;
        let mut t = ready;
        loop {
            let mut next = t;
            for p in (first..).step_by(stride).take(n) {
                self.planes_busy[p].forget(now);
                next = next.max(self.planes_busy[p].fit(t, len));
                if avoids_gc {
                    self.gc_busy[p].forget(now);
                    next = next.max(self.gc_busy[p].fit(t, len));
                }
            }
            if next == t {
                break;
            }
            t = next;
        }
        for p in (first..).step_by(stride).take(n) {
            if on_gc {
                self.gc_busy[p].insert(t, len);
            } else {
                self.planes_busy[p].insert(t, len);
            }
        }
        t
    }

    /// Read `bytes` of page `page` (its index within its block) on `plane`, inputs ready at
    /// `ready`; returns when the data is in the controller.
    pub fn read(
        &mut self,
        plane: u32,
        page: u32,
        bytes: u64,
        ready: Nanos,
        origin: Origin,
    ) -> Nanos {
        let small = self.small(bytes);
        let own_only = if small {
            self.independent_plane_reads
        } else {
            self.multi_plane_reads
        };
        let step = u64::from(page % self.page_types) * self.read_step_ns;
        let sense = if small {
            bytes.div_ceil(self.unit_bytes).max(1) * (self.small_read_ns + step)
        } else {
            self.read_ns + step
        };
        let xfer = self.xfer_ns(bytes);
        // The plane is held while it senses and while its register empties over the channel
        // (a wait for the channel beyond that is not held).
        let start = self.place(plane, own_only, origin, true, ready, sense + xfer);
        let (c, now) = (self.channel_of(plane) as usize, self.now);
        self.channels_busy[c].reserve(start + Nanos(sense), xfer, now)
    }

    /// Program a page of `bytes` on `plane`, data ready at `ready`; returns when it is on flash.
    pub fn program(&mut self, plane: u32, bytes: u64, ready: Nanos, origin: Origin) -> Nanos {
        // Host programs keep clear of GC too: GC is what makes room for them. The data moves
        // over the channel first; the plane is held from then until the program ends.
        let (c, len, now) = (
            self.channel_of(plane) as usize,
            self.xfer_ns(bytes),
            self.now,
        );
        let moved = self.channels_busy[c].reserve(ready, len, now);
        let start = self.place(plane, true, origin, false, moved, self.program_ns);
        start + Nanos(self.program_ns)
    }

    /// Erase a block on `plane` once `ready`; returns when it is done.
    pub fn erase(&mut self, plane: u32, ready: Nanos, origin: Origin) -> Nanos {
        let start = self.place(plane, true, origin, false, ready, self.erase_ns);
        start + Nanos(self.erase_ns)
    }
}
