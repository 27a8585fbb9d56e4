//! The flash back end as busy-until timelines: one per channel, one per array unit (a plane
//! when planes run independently, else a die).
//!
//! An operation is placed at submission: it starts when its inputs are ready and its
//! resources are free, and moves their busy-until forward. This is MQSim's transaction
//! scheduling (`TSU_OutOfOrder`, `NVM_PHY_ONFI_NVDDR2`) reduced to first-come first-served per
//! resource: O(1) per operation and deterministic, at the cost of never reordering work that
//! was already placed (docs/ssd-model.md, "Deviations").
//!
//! A read senses the page (tR), then moves the bytes asked for over the channel; the array
//! stays busy until the page register is emptied. A program moves the page over the channel,
//! then programs it (tPROG). An erase holds the array for tBERS.
//!
//! With preemptible GC ([`Gc::preemptible`](super::spec::Gc)), GC work goes on a second
//! timeline per array unit that host reads do not wait for; a host read that overlaps GC work
//! pushes the rest of it later by the read's length (suspend and resume).

use elevator_core::Nanos;

use super::spec::SsdSpec;
use super::timeline::GapTimeline;

/// Where a plane is: its channel and its array unit (timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneLoc {
    /// Channel index.
    pub channel: u32,
    /// Array timeline index (the plane itself, or its die).
    pub array: u32,
}

/// Who asked for a flash operation: host work and GC work may use different timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A host read or write (or its mapping-table read).
    Host,
    /// Garbage collection.
    Gc,
}

/// Channels and arrays as busy-until timelines.
#[derive(Clone, Debug)]
pub struct Flash {
    channels: u32,
    chips: u32,
    dies: u32,
    independent_planes: bool,
    channels_busy: Vec<GapTimeline>,
    /// The current time: no work is placed before it.
    now: Nanos,
    array_free: Vec<Nanos>,
    gc_free: Vec<Nanos>,
    preemptible: bool,
    read_ns: u64,
    small_read_ns: u64,
    small_read_bytes: u32,
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
        let arrays = if f.independent_planes {
            dies * f.planes_per_die
        } else {
            dies
        } as usize;
        Flash {
            channels: f.channels,
            chips: f.chips_per_channel,
            dies: f.dies_per_chip,
            independent_planes: f.independent_planes,
            channels_busy: vec![GapTimeline::new(); f.channels as usize],
            now: Nanos::ZERO,
            array_free: vec![Nanos::ZERO; arrays],
            gc_free: vec![Nanos::ZERO; arrays],
            preemptible: spec.gc.preemptible,
            read_ns: us_to_ns(f.read_us),
            small_read_ns: us_to_ns(f.small_read_us),
            small_read_bytes: f.small_read_bytes,
            program_ns: us_to_ns(f.program_us),
            erase_ns: us_to_ns(f.erase_us),
            channel_ps_per_byte: ps_per_byte(f.channel_mb_s),
        }
    }

    /// Set the current time (a submission's): transfers are placed at or after it.
    pub fn set_now(&mut self, now: Nanos) {
        self.now = now;
    }

    /// Where plane `plane` is. Planes are numbered channel first, then chip (way), die and
    /// plane within the die (MQSim's CWDP order), so consecutive planes sit on different
    /// channels.
    pub fn locate(&self, plane: u32) -> PlaneLoc {
        let c = self.channels;
        let dies_total = c * self.chips * self.dies;
        let die = plane % dies_total;
        let array = if self.independent_planes { plane } else { die };
        PlaneLoc {
            channel: plane % c,
            array,
        }
    }

    fn xfer_ns(&self, bytes: u64) -> u64 {
        (bytes * self.channel_ps_per_byte).div_ceil(1000)
    }

    fn sense_ns(&self, bytes: u64) -> u64 {
        if self.small_read_ns > 0 && bytes <= u64::from(self.small_read_bytes) {
            self.small_read_ns
        } else {
            self.read_ns
        }
    }

    /// The time work of `origin` may start on array `a`.
    fn array_ready(&self, a: usize, origin: Origin) -> Nanos {
        match origin {
            Origin::Host => self.array_free[a],
            Origin::Gc => self.array_free[a].max(self.gc_free[a]),
        }
    }

    /// Record that `origin` holds array `a` over `[start, end)`.
    fn hold_array(&mut self, a: usize, origin: Origin, start: Nanos, end: Nanos) {
        if origin == Origin::Gc && self.preemptible {
            self.gc_free[a] = end;
            return;
        }
        self.array_free[a] = end;
        if self.preemptible && self.gc_free[a] > start {
            // GC on this array is suspended for the host's operation.
            self.gc_free[a] += end - start;
        }
    }

    /// Read `bytes` of a page on `plane`, inputs ready at `ready`; returns when the data is in
    /// the controller.
    pub fn read(&mut self, plane: u32, bytes: u64, ready: Nanos, origin: Origin) -> Nanos {
        let loc = self.locate(plane);
        let (a, c) = (loc.array as usize, loc.channel as usize);
        let start = ready.max(self.array_ready(a, origin));
        let sensed = start + Nanos(self.sense_ns(bytes));
        let (len, now) = (self.xfer_ns(bytes), self.now);
        let done = self.channels_busy[c].reserve(sensed, len, now);
        self.hold_array(a, origin, start, done);
        done
    }

    /// Program a page of `bytes` on `plane`, data ready at `ready`; returns when it is on flash.
    pub fn program(&mut self, plane: u32, bytes: u64, ready: Nanos, origin: Origin) -> Nanos {
        let loc = self.locate(plane);
        let (a, c) = (loc.array as usize, loc.channel as usize);
        // Host programs wait for GC too: GC is what makes room for them.
        let start = ready.max(self.array_free[a]).max(self.gc_free[a]);
        let (len, now) = (self.xfer_ns(bytes), self.now);
        let moved = self.channels_busy[c].reserve(start, len, now);
        let done = moved + Nanos(self.program_ns);
        self.hold_array(a, origin, start, done);
        done
    }

    /// Erase a block on `plane` once `ready`; returns when it is done.
    pub fn erase(&mut self, plane: u32, ready: Nanos, origin: Origin) -> Nanos {
        let a = self.locate(plane).array as usize;
        let start = ready.max(self.array_ready(a, origin));
        let done = start + Nanos(self.erase_ns);
        self.hold_array(a, origin, start, done);
        done
    }
}
