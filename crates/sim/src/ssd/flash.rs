//! The flash back end as gap-filling timelines: one per channel, three per plane (host reads;
//! host programs; GC) and their union, and the plane's operations in order.
//!
//! An operation is placed at submission, in the first gap of its resources at or after the
//! time its inputs are ready. This is MQSim's transaction scheduling (`TSU_OutOfOrder`,
//! `NVM_PHY_ONFI_NVDDR2`) reduced to placement: deterministic and cheap, at the cost of never
//! moving work once placed (docs/ssd-model.md, "Deviations").
//!
//! Reads first, as MQSim's TSU serves a chip's read queue before its write and erase queues: a
//! host read waits for the reads placed on its plane and for the program or erase under way
//! there when it is ready, not for the programs queued behind that one. If the spec lets it
//! ([`Suspend`](super::spec::Suspend)), it suspends the program or erase under way instead, paying the suspend time
//! (MQSim's `Suspend_Program_Time`, `Suspend_Erase_Time`) when the operation has at least that
//! long left. The plane time a read takes from programs or GC placed over it is not lost: it is
//! reserved on their timeline at its first free gap, so the next work placed there starts that
//! much later (the work already placed keeps its times; docs/ssd-model.md, "Deviations").
//! Urgent GC is MQSim's non-preemptible GC: host reads wait for all of it. Preemptible GC
//! ([`Gc::preemptible`](super::spec::Gc)) host reads treat as they treat programs. Which GC
//! work is urgent is the caller's to say ([`Flash::set_gc_urgent`]): all of it when GC is not
//! preemptible, or (`gc.urgent = "behind"`) only the work placed while the flash is behind the
//! host; each kind keeps its own timeline. Programs, erases and GC keep clear of everything placed: they take the first gap
//! of the union of their plane's timelines, the start that trying each timeline in turn until
//! none moves it would find, in one search instead of one turn per interval in the way.
//!
//! A read senses the page (tR, by page type; a small read senses each unit asked for, one
//! after another), then moves the bytes asked for over the channel; the plane is held while it
//! senses and its register empties. A program moves its page (or `flash.program_pages` pages,
//! programmed in one shot) over the channel, then holds the plane for tPROG; an erase holds it
//! for tBERS. Programs and erases hold their plane only (the planes of a die program and erase
//! together, as multi-plane commands do); a read holds its whole die unless the spec lets it
//! overlap (`independent_plane_reads` for small reads, `multi_plane_reads` for full-page
//! reads). A read that holds its plane only waits for the program or erase under way on that
//! plane, or with `die_busy_programs` on any plane of its die (a die is busy for the whole of
//! a multi-plane program); the planes' programs are still placed independently, and a program
//! placed later on a plane the read waits on but does not hold may overlap the read.

use std::collections::VecDeque;

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

/// What a plane is busy with, as host reads see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Program,
    Erase,
    /// A GC read (only preemptible GC's are looked at: it cannot be suspended).
    GcRead,
}

/// A plane's timelines (urgent GC has its own, which host reads wait for in full).
#[derive(Clone, Debug, Default)]
struct Plane {
    /// Host reads (data and mapping pages).
    reads: GapTimeline,
    /// Host programs, and the plane time reads took from them.
    programs: GapTimeline,
    /// Preemptible GC reads, programs and erases, and the plane time reads took from them.
    gc: GapTimeline,
    /// Urgent GC work: host reads wait for all of it.
    urgent: GapTimeline,
    /// Programs, erases and GC reads not yet ended, in start order: (start, end, kind).
    ops: VecDeque<(Nanos, Nanos, Kind)>,
    /// The union of the three timelines, where program, erase and GC work looks for a gap at
    /// once instead of trying each timeline in turn (with a buffer's programs placed ahead,
    /// the turns went through every interval placed there).
    all: GapTimeline,
    /// The latest time its timelines forgot up to: before it, `all` may still hold time the
    /// lanes forgot.
    horizon: Nanos,
}

impl Plane {
    fn forget(&mut self, now: Nanos) {
        self.reads.forget(now);
        self.programs.forget(now);
        self.gc.forget(now);
        self.urgent.forget(now);
        self.all.forget(now);
        self.horizon = self.horizon.max(now);
        while self.ops.front().is_some_and(|&(_, e, _)| e <= now) {
            self.ops.pop_front();
        }
    }

    /// The operation under way for a read that arrived at `arrived` and would start at `t`
    /// (an operation started before both, not ended by `t`), if any. An operation placed to
    /// start after the read arrived, or within the run of reads that ends at `t`, has not
    /// started: the read goes first, as a chip serves its queued reads before its next program
    /// (so a read holding a die's planes waits for what was under way on each when it came,
    /// not for programs its planes start in turn while it waits).
    fn under_way(&self, t: Nanos, arrived: Nanos) -> Option<(Nanos, Kind)> {
        let from = self.reads.run_start(t).min(arrived);
        let i = self.ops.partition_point(|&(s, _, _)| s < from);
        let &(_, end, kind) = self.ops.get(i.checked_sub(1)?)?;
        (end > t).then_some((end, kind))
    }

    /// The earliest start at or after `t` of `len` ns free of every kind of work. From the
    /// union when it is exact there (at or after the horizon, and for work that takes time);
    /// else the latest of the three timelines' fits, which the caller repeats until it stays:
    /// either way the first start free on all three.
    fn fit_all(&self, t: Nanos, len: u64) -> Nanos {
        if t >= self.horizon && len > 0 {
            return self.all.fit(t, len);
        }
        self.reads
            .fit(t, len)
            .max(self.programs.fit(t, len))
            .max(self.gc.fit(t, len))
            .max(self.urgent.fit(t, len))
    }

    fn lane(&mut self, lane: Lane) -> &mut GapTimeline {
        match lane {
            Lane::Reads => &mut self.reads,
            Lane::Programs => &mut self.programs,
            Lane::Gc => &mut self.gc,
            Lane::Urgent => &mut self.urgent,
        }
    }

    /// Mark `[start, start + len)` busy on `lane` (and in the union).
    fn insert(&mut self, lane: Lane, start: Nanos, len: u64) {
        self.lane(lane).insert(start, len);
        self.all.insert(start, len);
    }

    /// Reserve `len` ns on `lane` at its first gap at or after `ready` (and in the union).
    fn reserve(&mut self, lane: Lane, ready: Nanos, len: u64) {
        let start = self.lane(lane).fit(ready, len);
        self.insert(lane, start, len);
    }

    fn record(&mut self, start: Nanos, len: u64, kind: Kind) {
        // Most operations start after every one recorded: no search.
        let i = match self.ops.back() {
            Some(&(s, _, _)) if s >= start => self.ops.partition_point(|&(s, _, _)| s < start),
            _ => self.ops.len(),
        };
        self.ops.insert(i, (start, start + Nanos(len), kind));
    }
}

/// Which timeline of a plane takes an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Reads,
    Programs,
    Gc,
    Urgent,
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
    /// Whether a host read waits for the programs and erases under way on every plane of its
    /// die, not only on the planes it holds (`flash.die_busy_programs`).
    die_busy_programs: bool,
    channels_busy: Vec<GapTimeline>,
    /// The current time: no work is placed before it.
    now: Nanos,
    planes: Vec<Plane>,
    /// Whether GC work placed now is urgent ([`Flash::set_gc_urgent`]).
    gc_urgent: bool,
    /// Whether any GC work can be urgent (reads then look at the urgent timelines).
    urgent_possible: bool,
    read_ns: u64,
    small_read_ns: u64,
    small_read_bytes: u32,
    unit_bytes: u64,
    read_step_ns: u64,
    page_types: u32,
    program_ns: u64,
    erase_ns: u64,
    /// Suspend times, ns; `None` where the spec does not let reads suspend.
    suspend_program_ns: Option<u64>,
    suspend_erase_ns: Option<u64>,
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
            die_busy_programs: f.die_busy_programs,
            channels_busy: vec![GapTimeline::new(); f.channels as usize],
            now: Nanos::ZERO,
            planes: vec![Plane::default(); planes],
            gc_urgent: !spec.gc.preemptible,
            urgent_possible: !spec.gc.preemptible,
            read_ns: us_to_ns(f.read_us),
            small_read_ns: us_to_ns(f.small_read_us),
            small_read_bytes: f.small_read_bytes,
            unit_bytes: u64::from(spec.ftl.unit_bytes),
            read_step_ns: us_to_ns(f.read_step_us),
            page_types: f.page_types.max(1),
            program_ns: us_to_ns(f.program_us),
            erase_ns: us_to_ns(f.erase_us),
            suspend_program_ns: f.suspend.programs().then(|| us_to_ns(f.suspend_program_us)),
            suspend_erase_ns: f.suspend.erases().then(|| us_to_ns(f.suspend_erase_us)),
            channel_ps_per_byte: ps_per_byte(f.channel_mb_s),
        }
    }

    /// Whether the GC work placed from now on is urgent (host reads wait for all of it) or
    /// preemptible. Starts as the spec's `!gc.preemptible`; with a preemptible spec it stays
    /// preemptible.
    pub fn set_gc_urgent(&mut self, urgent: bool) {
        self.gc_urgent = urgent && self.urgent_possible;
    }

    fn gc_lane(&self) -> Lane {
        if self.gc_urgent {
            Lane::Urgent
        } else {
            Lane::Gc
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

    /// The planes an operation on `plane` holds, as (first, count, stride): its own, or every
    /// plane of its die.
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

    /// Place `len` ns of program, erase or GC work on the planes `own_only` selects, on `lane`,
    /// at the earliest time at or after `ready` when all of them are free of every kind of
    /// work; returns its start.
    fn place_work(
        &mut self,
        plane: u32,
        own_only: bool,
        lane: Lane,
        kind: Kind,
        ready: Nanos,
        len: u64,
    ) -> Nanos {
        let (first, n, stride) = self.held(plane, own_only);
        let now = self.now;
        let mut t = ready;
        loop {
            let mut next = t;
            for p in (first..).step_by(stride).take(n) {
                let pl = &mut self.planes[p];
                pl.forget(now);
                next = next.max(pl.fit_all(t, len));
            }
            if next == t {
                break;
            }
            t = next;
        }
        for p in (first..).step_by(stride).take(n) {
            let pl = &mut self.planes[p];
            pl.insert(lane, t, len);
            if lane != Lane::Urgent {
                pl.record(t, len, kind);
            }
        }
        t
    }

    /// Place a host read of `len` ns on the planes `own_only` selects, ready at `ready`
    /// (module doc: reads first, suspension); returns when it starts sensing. The program,
    /// erase and urgent GC work it waits for (or suspends) is that of the planes it holds, or
    /// with `die_busy_programs` of every plane of its die.
    fn place_read(&mut self, plane: u32, own_only: bool, ready: Nanos, len: u64) -> Nanos {
        let (first, n, stride) = self.held(plane, own_only);
        let (wfirst, wn, wstride) = self.held(plane, own_only && !self.die_busy_programs);
        let now = self.now;
        for p in (wfirst..).step_by(wstride).take(wn) {
            self.planes[p].forget(now);
        }
        let mut t = ready;
        // Suspend time paid before the read, when it suspends what is under way.
        let mut suspend = 0;
        loop {
            let total = suspend + len;
            let mut next = t;
            for p in (first..).step_by(stride).take(n) {
                next = next.max(self.planes[p].reads.fit(t, total));
            }
            if self.urgent_possible {
                for p in (wfirst..).step_by(wstride).take(wn) {
                    next = next.max(self.planes[p].urgent.fit(t, total));
                }
            }
            if next != t {
                t = next;
                continue;
            }
            // [t, t + total) is free of reads: what is under way at t?
            let mut wait = t;
            let mut want = 0;
            for p in (wfirst..).step_by(wstride).take(wn) {
                let Some((end, kind)) = self.planes[p].under_way(t, ready) else {
                    continue;
                };
                let cost = match kind {
                    Kind::Program => self.suspend_program_ns,
                    Kind::Erase => self.suspend_erase_ns,
                    Kind::GcRead => None,
                };
                match cost {
                    Some(c) if end.0 - t.0 >= c => want = want.max(c),
                    _ => wait = wait.max(end),
                }
            }
            if wait > t {
                t = wait;
                suspend = 0;
            } else if want != suspend {
                suspend = want;
            } else {
                break;
            }
        }
        let total = suspend + len;
        for p in (first..).step_by(stride).take(n) {
            self.planes[p].insert(Lane::Reads, t, total);
        }
        // The time taken from programs or GC placed over the read (on the planes it holds,
        // or with `die_busy_programs` on its die's) goes to the next gap on their timeline.
        for p in (wfirst..).step_by(wstride).take(wn) {
            let pl = &mut self.planes[p];
            if pl.programs.fit(t, total) != t {
                pl.reserve(Lane::Programs, t, total);
            } else if pl.gc.fit(t, total) != t {
                pl.reserve(Lane::Gc, t, total);
            }
        }
        t + Nanos(suspend)
    }

    /// The planes of `plane`'s die (MQSim's chip, for GC's urgency).
    pub fn die_planes(&self, plane: u32) -> impl Iterator<Item = u32> {
        let (first, n, stride) = self.held(plane, false);
        (first as u32..).step_by(stride).take(n)
    }

    /// Whether `plane` has no host work under way or queued at `now`, nor anything else under
    /// way: lazy GC's next operation may go (MQSim's TSU serves a chip's GC transactions
    /// after its user ones when GC is not urgent).
    pub fn host_idle(&mut self, plane: u32, now: Nanos) -> bool {
        let pl = &mut self.planes[plane as usize];
        pl.forget(now);
        pl.reads.is_empty() && pl.programs.is_empty() && pl.all.fit(now, 1) == now
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
        let start = match origin {
            Origin::Host => self.place_read(plane, own_only, ready, sense + xfer),
            // A GC read holds its own plane only: a copy within the plane, as multi-plane work.
            Origin::Gc => {
                let lane = self.gc_lane();
                self.place_work(plane, true, lane, Kind::GcRead, ready, sense + xfer)
            }
        };
        let (c, now) = (self.channel_of(plane) as usize, self.now);
        self.channels_busy[c].reserve(start + Nanos(sense), xfer, now)
    }

    /// Program a page of `bytes` on `plane`, data ready at `ready`; returns when it is on flash.
    pub fn program(&mut self, plane: u32, bytes: u64, ready: Nanos, origin: Origin) -> Nanos {
        // The data moves over the channel first; the plane is held from then (or, if it is
        // busy then, for as long from when it is free) until the program ends.
        let (c, len, now) = (
            self.channel_of(plane) as usize,
            self.xfer_ns(bytes),
            self.now,
        );
        let moved = self.channels_busy[c].reserve(ready, len, now);
        let lane = match origin {
            Origin::Host => Lane::Programs,
            Origin::Gc => self.gc_lane(),
        };
        let hold = len + self.program_ns;
        let start = self.place_work(plane, true, lane, Kind::Program, moved - Nanos(len), hold);
        start + Nanos(hold)
    }

    /// How long a program of `bytes` holds its plane: its channel transfer and tPROG (a
    /// program placed to end at `done` started at `done` less this).
    pub fn program_hold(&self, bytes: u64) -> Nanos {
        Nanos(self.xfer_ns(bytes) + self.program_ns)
    }

    /// Erase a block on `plane` once `ready`; returns when it is done.
    pub fn erase(&mut self, plane: u32, ready: Nanos, origin: Origin) -> Nanos {
        let lane = match origin {
            Origin::Host => Lane::Programs,
            Origin::Gc => self.gc_lane(),
        };
        let start = self.place_work(plane, true, lane, Kind::Erase, ready, self.erase_ns);
        start + Nanos(self.erase_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssd::Suspend;

    /// A program placed in a gap before one already placed (a buffer's programs go ahead of
    /// a read's) is recorded in start order, so a read during it finds it under way.
    #[test]
    fn an_operation_placed_before_the_last_one_is_found_under_way() {
        let mut plane = Plane::default();
        plane.record(Nanos(1_000), 500, Kind::Erase);
        plane.record(Nanos(0), 300, Kind::Program);
        let starts: Vec<Nanos> = plane.ops.iter().map(|&(s, _, _)| s).collect();
        assert_eq!(starts, [Nanos(0), Nanos(1_000)]);
        assert_eq!(
            plane.under_way(Nanos(100), Nanos(100)),
            Some((Nanos(300), Kind::Program))
        );
        assert_eq!(
            plane.under_way(Nanos(1_200), Nanos(1_100)),
            Some((Nanos(1_500), Kind::Erase))
        );
    }

    /// A program placed to start within a run of host reads (two reads back to back, 0 to
    /// 1 us) has not started when a read that came during the run goes next, at the run's
    /// end: the chip serves its queued reads first. One placed before the run is under way.
    #[test]
    fn a_program_placed_within_a_run_of_reads_is_not_under_way_for_the_next_read() {
        let mut plane = Plane::default();
        plane.insert(Lane::Reads, Nanos(0), 400);
        plane.insert(Lane::Reads, Nanos(400), 600);
        plane.record(Nanos(500), 1_500, Kind::Program);
        assert_eq!(plane.under_way(Nanos(1_000), Nanos(800)), None);
        let mut before = Plane::default();
        before.record(Nanos(0), 2_000, Kind::Program);
        before.insert(Lane::Reads, Nanos(100), 900);
        assert_eq!(
            before.under_way(Nanos(1_000), Nanos(800)),
            Some((Nanos(2_000), Kind::Program))
        );
    }

    /// Urgent GC (MQSim's `GC_is_in_urgent_mode`: its TSU serves a chip's GC before host
    /// reads) holds a host read for all of it; preemptible GC only for the operation under way
    /// when the read comes (no suspension here). With a spec whose GC is preemptible, asking
    /// for urgency changes nothing.
    #[test]
    fn urgent_gc_holds_a_read_for_all_of_it_preemptible_gc_only_for_what_is_under_way() {
        let read_after_gc = |preemptible: bool, urgent: bool| {
            let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
            spec.flash.suspend = Suspend::None;
            spec.gc.preemptible = preemptible;
            let mut f = Flash::new(&spec);
            f.set_gc_urgent(urgent);
            let page = u64::from(spec.flash.page_bytes);
            // Five GC programs back to back on plane 0 from 0; a 4 KiB read comes during the
            // first.
            let mut end = Nanos::ZERO;
            for _ in 0..5 {
                end = f.program(0, page, Nanos::ZERO, Origin::Gc);
            }
            let first = Nanos(f.xfer_ns(page) + f.program_ns);
            (
                f.read(0, 0, 4096, Nanos(first.0 / 2), Origin::Host),
                first,
                end,
            )
        };
        let (held, _, end) = read_after_gc(false, true);
        assert!(held > end, "urgent: {held:?}, GC ends {end:?}");
        let (yielded, first, _) = read_after_gc(false, false);
        assert!(
            yielded > first && yielded < first + Nanos::from_us(100),
            "{yielded:?}"
        );
        assert_eq!(read_after_gc(true, true).0, yielded);
    }

    /// A die is busy for the whole of a program on any of its planes (ONFI's LUN busy; MQSim
    /// starts a read only on an idle chip): with `die_busy_programs` a 4 KiB read of the
    /// die's other plane waits for the program, or with `suspend` only for its suspension;
    /// without it the read's own idle plane serves it at once. A read of another die is not
    /// held either way.
    #[test]
    fn with_die_busy_programs_a_read_waits_for_a_program_on_its_dies_other_plane() {
        let read_beside = |die_busy: bool, suspend: Suspend, other_die: bool| {
            let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
            assert!(spec.flash.independent_plane_reads);
            spec.flash.suspend = suspend;
            spec.flash.die_busy_programs = die_busy;
            let mut f = Flash::new(&spec);
            let page = u64::from(spec.flash.page_bytes);
            let end = f.program(0, page, Nanos::ZERO, Origin::Host);
            // Plane `dies` is plane 0's die's second plane; plane 1 is on another die.
            let plane = if other_die { 1 } else { f.dies };
            let ready = Nanos(end.0 / 2);
            (f.read(plane, 0, 4096, ready, Origin::Host), ready, end)
        };
        let quick = Nanos::from_us(100);
        let (free, ready, end) = read_beside(false, Suspend::None, false);
        assert!(free < ready + quick, "{free:?} from {ready:?}");
        let (held, _, end_held) = read_beside(true, Suspend::None, false);
        assert_eq!(end_held, end);
        assert!(held > end && held < end + quick, "{held:?} vs {end:?}");
        let (suspended, ..) = read_beside(true, Suspend::ProgramErase, false);
        let suspend = Nanos::from_us(100);
        assert!(
            suspended > ready + suspend && suspended < ready + suspend + quick,
            "{suspended:?} from {ready:?}"
        );
        assert_eq!(read_beside(true, Suspend::None, true).0, free);
    }

    #[test]
    fn a_read_holding_a_die_waits_for_what_was_under_way_not_for_programs_started_in_turn() {
        // Full-page reads hold the whole die; nothing is suspended. The die's two planes (0 and
        // 0 + dies) run chains of back-to-back programs, the second a third of a program
        // behind the first, so one of them is always programming.
        let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
        spec.flash.multi_plane_reads = false;
        spec.flash.suspend = Suspend::None;
        let mut f = Flash::new(&spec);
        let other = f.dies;
        let page = u64::from(spec.flash.page_bytes);
        let prog = us_to_ns(spec.flash.program_us);
        let mut ends = Vec::new();
        for _ in 0..20 {
            ends.push(f.program(0, page, Nanos::ZERO, Origin::Host));
            f.program(other, page, Nanos(prog / 3), Origin::Host);
        }
        assert!(ends[19] > Nanos(19 * prog), "{ends:?}");
        // A read arriving during plane 0's first program waits for it and for the program
        // under way on plane `other` when it came (none: that chain starts later), then goes
        // before every program started while it waited.
        let ready = Nanos(prog / 6);
        let done = f.read(0, 0, page, ready, Origin::Host);
        assert!(done > ends[0], "{done:?} vs {:?}", ends[0]);
        assert!(done < ends[1], "{done:?} vs {:?}", ends[1]);
    }
}
