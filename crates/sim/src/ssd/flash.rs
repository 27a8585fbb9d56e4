//! The flash back end as timelines: a gap-filling one per channel, a busy-until per plane.
//!
//! An operation is placed at submission: it starts when its inputs are ready and its
//! resources are free, and moves their busy-until forward. This is MQSim's transaction
//! scheduling (`TSU_OutOfOrder`, `NVM_PHY_ONFI_NVDDR2`) reduced to first-come first-served per
//! die: O(1) per operation and deterministic, at the cost of never reordering work that was
//! already placed (docs/ssd-model.md, "Deviations").
//!
//! A read senses the page (tR, by page type), then moves the bytes asked for over the
//! channel; the array stays busy until the page register is emptied. A program moves the page
//! over the channel, then programs it (tPROG). An erase holds the array for tBERS. Programs
//! and erases hold their plane only (the planes of a die program and erase together, as
//! multi-plane commands do); a read holds its whole die unless the spec lets it overlap
//! (`independent_plane_reads` for small reads, `multi_plane_reads` for full-page reads).
//!
//! With preemptible GC ([`Gc::preemptible`](super::spec::Gc)), GC work goes on a second
//! timeline per plane that host reads do not wait for; a host read that overlaps GC work
//! pushes the rest of it later by the read's length (suspend and resume).

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
    plane_free: Vec<Nanos>,
    gc_free: Vec<Nanos>,
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
            plane_free: vec![Nanos::ZERO; planes],
            gc_free: vec![Nanos::ZERO; planes],
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

    /// The time work of `origin` may start on the planes `own_only` selects.
    fn ready_at(&self, plane: u32, own_only: bool, origin: Origin) -> Nanos {
        let (first, n, stride) = self.held(plane, own_only);
        let mut t = Nanos::ZERO;
        for p in (first..).step_by(stride).take(n) {
            t = t.max(self.plane_free[p]);
            if origin == Origin::Gc {
                t = t.max(self.gc_free[p]);
            }
        }
        t
    }

    /// Record that `origin` holds the selected planes over `[start, end)`.
    fn hold(&mut self, plane: u32, own_only: bool, origin: Origin, start: Nanos, end: Nanos) {
        let (first, n, stride) = self.held(plane, own_only);
        for p in (first..).step_by(stride).take(n) {
            if origin == Origin::Gc && self.preemptible {
                self.gc_free[p] = end;
                continue;
            }
            self.plane_free[p] = end;
            if self.preemptible && self.gc_free[p] > start {
                // GC on this plane is suspended for the host's operation.
                self.gc_free[p] += end - start;
            }
        }
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
        let start = ready.max(self.ready_at(plane, own_only, origin));
        let step = u64::from(page % self.page_types) * self.read_step_ns;
        let sense = if small {
            bytes.div_ceil(self.unit_bytes).max(1) * (self.small_read_ns + step)
        } else {
            self.read_ns + step
        };
        let (c, len, now) = (
            self.channel_of(plane) as usize,
            self.xfer_ns(bytes),
            self.now,
        );
        let done = self.channels_busy[c].reserve(start + Nanos(sense), len, now);
        self.hold(plane, own_only, origin, start, done);
        done
    }

    /// Program a page of `bytes` on `plane`, data ready at `ready`; returns when it is on flash.
    pub fn program(&mut self, plane: u32, bytes: u64, ready: Nanos, origin: Origin) -> Nanos {
        // Host programs wait for GC too: GC is what makes room for them.
        let start = ready.max(self.ready_at(plane, true, Origin::Gc));
        let (c, len, now) = (
            self.channel_of(plane) as usize,
            self.xfer_ns(bytes),
            self.now,
        );
        let moved = self.channels_busy[c].reserve(start, len, now);
        let done = moved + Nanos(self.program_ns);
        self.hold(plane, true, origin, start, done);
        done
    }

    /// Erase a block on `plane` once `ready`; returns when it is done.
    pub fn erase(&mut self, plane: u32, ready: Nanos, origin: Origin) -> Nanos {
        let start = ready.max(self.ready_at(plane, true, origin));
        let done = start + Nanos(self.erase_ns);
        self.hold(plane, true, origin, start, done);
        done
    }
}
