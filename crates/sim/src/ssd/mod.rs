//! An MQSim-class NVMe SSD model.
//!
//! - [`spec`]: the TOML description ([`SsdSpec`]), its loader and checks, the built-in SSDs.
//! - [`host`]: submission queues, the controller front end (and its optional in-order
//!   stage), the host link, the DRAM write buffer.
//! - [`flash`]: channels and planes as gap-filling timelines; read, program, erase.
//! - [`timeline`]: the gap-filling timeline.
//! - [`ftl`]: the page-level mapping, block state, write frontiers and preconditioning.
//! - [`cmt`]: the cached mapping table.
//! - [`gc`]: greedy garbage collection, in step with host writes or a whole victim at once.
//! - [`closed_loop`]: fio's closed loop of random reads on the drive alone (the 980 PRO fit).
//! - [`Ssd`]: the [`Device`] that puts them together.
//!
//! The model follows MQSim (Tavakkol et al., "MQSim: A Framework for Enabling Realistic
//! Studies of Modern Multi-Queue SSD Devices", FAST 2018; CMU-SAFARI/MQSim): the same
//! resources (queues, channels, chips, dies, planes, DRAM cache, page-level FTL with a CMT,
//! GC with over-provisioning), but every request is placed on resource timelines when it is
//! submitted, so [`Device::submit`] returns its completion at once, in time proportional to the
//! request's units and the work already queued on its resources, and a run is deterministic with no event queue of its own. What that changes, and every
//! other deviation, is listed in docs/ssd-model.md.

pub mod closed_loop;
pub mod cmt;
pub mod flash;
pub mod ftl;
pub mod gc;
pub mod host;
pub mod spec;
pub mod timeline;

pub use spec::{GcSchedule, GcUrgency, Precondition, SsdSpec, Suspend};

use elevator_core::{Nanos, Op, Request};
use elevator_workload::InputError;

use crate::device::{Device, Service};
use cmt::Cmt;
use flash::{Flash, Origin};
use ftl::Ftl;
use gc::{Collector, GcStats};
use host::{FrontEnd, HostInterface, WriteBuffer};

/// What the drive did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SsdStats {
    /// Read commands.
    pub reads: u64,
    /// Write commands.
    pub writes: u64,
    /// Flash page reads for host data.
    pub flash_reads: u64,
    /// Units read from the write buffer instead of flash.
    pub buffer_hits: u64,
    /// Mapping-cache misses (each a translation-page read).
    pub cmt_misses: u64,
    /// Host program operations (each of `flash.program_pages` pages).
    pub host_programs: u64,
    /// Garbage collection.
    pub gc: GcStats,
}

/// A simulated SSD.
#[derive(Clone, Debug)]
pub struct Ssd {
    spec: SsdSpec,
    host: HostInterface,
    front: FrontEnd,
    buffer: WriteBuffer,
    flash: Flash,
    ftl: Ftl,
    cmt: Cmt,
    gc: Collector,
    unit_bytes: u64,
    page_bytes: u64,
    /// Bytes one program operation writes (`flash.program_pages` pages).
    program_bytes: u64,
    stats: SsdStats,
}

impl Ssd {
    /// The drive `spec` describes, in the state its `precondition` gives.
    pub fn new(spec: SsdSpec) -> Result<Ssd, InputError> {
        let pre = spec.precondition;
        Ssd::with_precondition(spec, pre)
    }

    /// The drive `spec` describes, preconditioned as `pre` says (overriding the spec's).
    pub fn with_precondition(spec: SsdSpec, pre: Precondition) -> Result<Ssd, InputError> {
        spec.validate()?;
        let page_bytes = u64::from(spec.flash.page_bytes);
        let program_bytes = page_bytes * u64::from(spec.flash.program_pages);
        Ok(Ssd {
            host: HostInterface::new(&spec.host),
            front: FrontEnd::new(spec.host.front_end_slots, spec.host.front_end_servers),
            buffer: WriteBuffer::new(spec.write_buffer.bytes, spec.write_buffer.mb_s),
            flash: Flash::new(&spec),
            ftl: Ftl::with_precondition(&spec, pre),
            cmt: Cmt::new(spec.ftl.cmt_entries, spec.flash.page_bytes / 4),
            gc: Collector::new(
                spec.planes() as u32,
                u64::from(spec.ftl.unit_bytes),
                program_bytes,
                spec.gc.schedule,
            ),
            unit_bytes: u64::from(spec.ftl.unit_bytes),
            page_bytes,
            program_bytes,
            stats: SsdStats::default(),
            spec,
        })
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &SsdSpec {
        &self.spec
    }

    /// The FTL (mapping and block state), for inspection.
    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    /// Counters.
    pub fn stats(&self) -> SsdStats {
        SsdStats {
            gc: self.gc.stats(),
            ..self.stats
        }
    }

    /// The mapping units a request covers, clamped to the drive.
    fn units(&self, rq: &Request) -> std::ops::Range<u32> {
        let last = self.ftl.logical_units();
        let start = rq.sector * 512 / self.unit_bytes;
        let end = ((rq.sector + u64::from(rq.sectors)) * 512).div_ceil(self.unit_bytes);
        (start.min(last) as u32)..(end.min(last) as u32)
    }

    /// Read the translation pages of `units` that the CMT misses, from `ready`; returns when
    /// the mapping is known.
    fn translate(&mut self, units: std::ops::Range<u32>, ready: Nanos, dirty: bool) -> Nanos {
        if self.cmt.holds_all() {
            return ready;
        }
        let mut known = ready;
        let mut last_page = None;
        for lpn in units {
            let a = self.cmt.access(lpn, dirty);
            let planes = self.ftl.planes();
            if let Some(tp) = a.write_back {
                self.flash
                    .program(tp % planes, self.page_bytes, ready, Origin::Host);
            }
            if a.hit {
                continue;
            }
            self.stats.cmt_misses += 1;
            let tp = self.cmt.page_of(lpn);
            if last_page != Some(tp) {
                last_page = Some(tp);
                let (plane, page) = (tp % planes, tp / planes);
                let done = self
                    .flash
                    .read(plane, page, self.page_bytes, ready, Origin::Host);
                known = known.max(done);
            }
        }
        known
    }

    fn read(&mut self, rq: &Request, now: Nanos, accepted: Nanos) -> Service {
        self.stats.reads += 1;
        let units = self.units(rq);
        let accepted = self.front.handoff(accepted, now);
        let ready = self.translate(units.clone(), accepted, false);
        let mut data = ready;
        let mut flash_reads = 0u64;
        // Consecutive units in the same flash page are one read.
        let mut run: Option<(u32, u64)> = None; // (page, units)
        let mut run_ppa = 0;
        for lpn in units {
            let Some(ppa) = self.ftl.lookup(lpn) else {
                continue;
            };
            if self.ftl.programmed_at(ppa) > now {
                self.stats.buffer_hits += 1;
                continue;
            }
            let page = self.ftl.page_of(ppa);
            match &mut run {
                Some((p, n)) if *p == page => *n += 1,
                _ => {
                    if let Some((_, n)) = run {
                        data = data.max(self.flash_read(run_ppa, n, ready));
                        flash_reads += 1;
                    }
                    run = Some((page, 1));
                    run_ppa = ppa;
                }
            }
        }
        if let Some((_, n)) = run {
            data = data.max(self.flash_read(run_ppa, n, ready));
            flash_reads += 1;
        }
        self.stats.flash_reads += flash_reads;
        let done = self.host.transfer(rq.bytes(), data, now);
        Service {
            done,
            cache_hit: flash_reads == 0,
        }
    }

    fn flash_read(&mut self, ppa: u32, units: u64, ready: Nanos) -> Nanos {
        let plane = self.ftl.plane_of(ppa);
        let page = self.ftl.page_in_block(ppa);
        self.flash
            .read(plane, page, units * self.unit_bytes, ready, Origin::Host)
    }

    fn write(&mut self, rq: &Request, now: Nanos, accepted: Nanos) -> Service {
        self.stats.writes += 1;
        let units = self.units(rq);
        // Its data comes over the link once the front end has a slot for it.
        let fetched = self.front.fetch_write(accepted, now);
        let arrived = self.host.transfer(rq.bytes(), fetched, now);
        // Its room in the buffer is the data it brings, not the whole units it touches: a
        // write covering part of a unit holds only its sectors (MQSim's advanced cache counts
        // its back-pressure depth in the sectors written, `write_to_destage_buffer`, and frees
        // a write-back's own sectors). The room comes back as pages are programmed, at most
        // what was admitted ([`WriteBuffer::scheduled`]).
        let admitted = self.buffer.admit(rq.bytes(), rq.bytes(), arrived);
        self.front.admitted(admitted);
        // With `gc.urgent = "behind"` the GC work this write brings is urgent only if the write
        // waited for room: the flash is then behind the host, as MQSim's GC is urgent only
        // once a plane's free blocks fall below its hard threshold.
        if self.spec.gc.urgent == GcUrgency::Behind {
            self.flash.set_gc_urgent(admitted > arrived);
        }
        // The mapping update needs the entries: their reads do not delay the completion, but
        // the data's program waits for them (it needs the entry to update).
        let known = self.translate(units.clone(), accepted, true);
        let ready = admitted.max(known);
        for lpn in units {
            let placed = self.ftl.write_host(lpn);
            let plane = self.ftl.plane_of(placed.ppa);
            if let Some(first) = placed.program {
                let done = self
                    .flash
                    .program(plane, self.program_bytes, ready, Origin::Host);
                self.ftl.set_programmed(first, done);
                self.buffer.scheduled(self.program_bytes, done);
                self.stats.host_programs += 1;
            }
            if placed.program.is_some() || placed.gc_needed {
                self.gc
                    .after_host_page(&mut self.ftl, &mut self.flash, plane, admitted);
            }
        }
        Service {
            done: admitted,
            cache_hit: true,
        }
    }
}

impl Device for Ssd {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn depth(&self) -> usize {
        self.spec.host.queue_depth as usize
    }
    fn capacity_sectors(&self) -> u64 {
        self.ftl.logical_units() * self.unit_bytes / 512
    }
    fn submit(&mut self, rq: &Request, now: Nanos) -> Service {
        self.flash.set_now(now);
        let accepted = self.host.accept(rq.ctx.0, now);
        match rq.op {
            Op::Read => self.read(rq, now, accepted),
            Op::Write => self.write(rq, now, accepted),
            Op::Flush => Service {
                done: self.front.handoff(accepted, now).max(self.buffer.drained()),
                cache_hit: false,
            },
            Op::Discard => {
                let accepted = self.front.handoff(accepted, now);
                // Only whole units are unmapped.
                let first = (rq.sector * 512).div_ceil(self.unit_bytes);
                let end = (rq.sector + u64::from(rq.sectors)) * 512 / self.unit_bytes;
                let end = end.min(self.ftl.logical_units());
                for lpn in first..end.max(first) {
                    self.ftl.trim(lpn as u32);
                }
                Service {
                    done: accepted,
                    cache_hit: false,
                }
            }
        }
    }
    fn non_rotational(&self) -> bool {
        true
    }
}
