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
//! other deviation, is listed in docs/ssd-model.md. The one exception: with
//! `write_buffer.acknowledge = "programmed"` (write-through) a write completes with the program
//! of its program unit, placed when later writes fill it (or when `write_buffer.gather_us`
//! closes it padded), so its completion is reported then ([`Service::deferred`],
//! [`Device::poll_completion`], the drive's timer [`Device::poll_timeout`]).
//!
//! A deviation of ours, off unless a spec asks for it: firmware housekeeping stalls
//! (`[housekeeping]`, [`spec::Housekeeping`]). Host writes beyond a background drain rate start
//! drive-wide stalls in which no command is served, as the ICPE'24 study's 980 PROs stalled
//! beside sustained random writes (docs/ssd-model.md, "Issue 28, the drive's write tail");
//! MQSim's firmware never stops serving commands. Only writes start them, so runs without
//! writes are unchanged.

pub mod closed_loop;
pub mod cmt;
pub mod flash;
pub mod ftl;
pub mod gc;
pub mod host;
pub mod spec;
pub mod timeline;

pub use spec::{FrontEndScope, GcSchedule, GcUrgency, Precondition, SsdSpec, Suspend, WriteAck};

use std::collections::{HashMap, HashSet, VecDeque};

use elevator_core::{Nanos, Op, Request, RequestId};
use elevator_workload::InputError;
use rustc_hash::FxHashMap;

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
    /// Host program operations (each of `flash.program_pages` pages), joined ones included.
    pub host_programs: u64,
    /// Host programs that joined another as one multi-plane program (`flash.serial_planes`).
    pub multi_plane_joins: u64,
    /// Host programs of a unit closed before it was full (`write_buffer.gather_us` passed
    /// with writes waiting for it; `acknowledge = "programmed"` only).
    pub padded_programs: u64,
    /// Host programs that waited for the erase of the block they write (GC behind the host).
    pub block_waits: u64,
    /// Housekeeping stalls (`[housekeeping]`).
    pub stalls: u64,
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
    hot: HotFilter,
    multi: MultiPlane,
    through: WriteThrough,
    stalls: Stalls,
}

/// Firmware housekeeping stalls (`[housekeeping]`, [`spec::Housekeeping`]): host bytes
/// beyond the background drain, counted at each write's admission; each `every_bytes` of them
/// starts a stall in which no command is served.
#[derive(Clone, Debug, Default)]
struct Stalls {
    /// Bytes between stalls; 0: off.
    every: u64,
    /// One stall's length.
    length: Nanos,
    /// Bytes the background drain takes a nanosecond.
    drain_per_ns: f64,
    /// Bytes counted and not yet drained or paid for by a stall.
    level: f64,
    /// When `level` was last drained.
    drained_at: Nanos,
    /// The stalls not yet over, `[start, end)` in time order. A write is admitted ahead of
    /// the submissions when it waits for buffer room, so a stall can start after the
    /// submission that sees it placed.
    ahead: VecDeque<(Nanos, Nanos)>,
}

impl Stalls {
    fn new(spec: &spec::Housekeeping) -> Stalls {
        Stalls {
            every: spec.every_bytes,
            length: Nanos((spec.stall_us * 1000.0).round() as u64),
            drain_per_ns: spec.drain_mb_s * 1e6 / 1e9,
            ..Stalls::default()
        }
    }

    fn on(&self) -> bool {
        self.every > 0
    }

    /// Forgets the stalls over by `now`.
    fn advance(&mut self, now: Nanos) {
        while self.ahead.front().is_some_and(|&(_, end)| end <= now) {
            self.ahead.pop_front();
        }
    }

    /// `t`, or the end of the stall it falls in (of the last of back-to-back stalls): when a
    /// command arriving or completing at `t` is served or posted.
    fn hold(&self, mut t: Nanos) -> Nanos {
        for &(start, end) in &self.ahead {
            if start > t {
                break;
            }
            if t < end {
                t = end;
            }
        }
        t
    }

    /// A host write of `bytes` admitted at `at`: drains the count up to `at`, adds the
    /// bytes, and starts a stall at `at` (after the last one placed, if that ends later) when
    /// the count reaches `every`. Returns whether it did.
    fn written(&mut self, bytes: u64, at: Nanos) -> bool {
        let since = at.0.saturating_sub(self.drained_at.0) as f64;
        self.level = (self.level - since * self.drain_per_ns).max(0.0) + bytes as f64;
        self.drained_at = self.drained_at.max(at);
        if self.level < self.every as f64 {
            return false;
        }
        self.level -= self.every as f64;
        let start = self.ahead.back().map_or(at, |&(_, end)| at.max(end));
        self.ahead.push_back((start, start + self.length));
        true
    }
}

/// Writes acknowledged when their data is programmed (`write_buffer.acknowledge =
/// "programmed"`): which wait for which plane's open program unit, and the completions
/// known since the engine last asked.
#[derive(Clone, Debug, Default)]
struct WriteThrough {
    on: bool,
    /// How long a program unit with writes waiting stays open.
    gather: Nanos,
    /// Per request waiting: its units not yet in a program placed, and the latest end of
    /// those placed.
    writes: FxHashMap<u64, (u32, Nanos)>,
    /// Per plane: the requests with a unit in its open host program unit (one entry a unit),
    /// and when the first of them was admitted.
    waiting: Vec<(Vec<u64>, Nanos)>,
    /// Completions known and not yet taken ([`Device::poll_completion`]).
    settled: VecDeque<(RequestId, Nanos)>,
}

impl WriteThrough {
    fn new(spec: &SsdSpec) -> WriteThrough {
        if spec.write_buffer.acknowledge != WriteAck::Programmed {
            return WriteThrough::default();
        }
        WriteThrough {
            on: true,
            gather: Nanos((spec.write_buffer.gather_us * 1000.0).round() as u64),
            waiting: vec![(Vec::new(), Nanos::ZERO); spec.planes() as usize],
            ..WriteThrough::default()
        }
    }

    /// A unit of request `id`, admitted at `at`, waits for `plane`'s open program unit.
    fn wait(&mut self, id: u64, plane: u32, at: Nanos) {
        self.writes.entry(id).or_insert((0, Nanos::ZERO)).0 += 1;
        let (ids, since) = &mut self.waiting[plane as usize];
        if ids.is_empty() {
            *since = at;
        }
        ids.push(id);
    }

    /// `plane`'s open program unit was placed, ending at `done`: its units are programmed
    /// then; a request with none left waiting completes at its latest (`current`, the request
    /// being submitted, is settled by its submission instead).
    fn programmed(&mut self, plane: u32, done: Nanos, current: u64) {
        for id in self.waiting[plane as usize].0.drain(..) {
            let e = self.writes.get_mut(&id).expect("a waiting unit's request");
            e.0 -= 1;
            e.1 = e.1.max(done);
            if e.0 == 0 && id != current {
                let (_, at) = self.writes.remove(&id).expect("just seen");
                self.settled.push_back((RequestId(id), at));
            }
        }
    }

    /// When the first program unit with writes waiting is to be closed.
    fn deadline(&self) -> Option<Nanos> {
        if !self.on || self.writes.is_empty() {
            return None;
        }
        self.waiting
            .iter()
            .filter(|(ids, _)| !ids.is_empty())
            .map(|&(_, since)| since + self.gather)
            .min()
    }
}

/// MQSim's hot/cold filter (`write_buffer.hot_filter_us`): which units a host write sends
/// to flash.
#[derive(Clone, Debug, Default)]
struct HotFilter {
    /// The filter's period; zero: off (every write goes to flash).
    period: Nanos,
    /// Units written since the filter was last emptied.
    seen: HashSet<u32>,
    /// The first write after this empties the filter (MQSim's
    /// `next_bloom_filter_reset_milestone`, 0 at the start).
    reset_after: Nanos,
    /// Units whose latest data is only in DRAM (written while hot).
    held: HashSet<u32>,
}

impl HotFilter {
    fn new(period_us: f64) -> HotFilter {
        HotFilter {
            period: Nanos((period_us * 1000.0).round() as u64),
            ..HotFilter::default()
        }
    }

    /// Whether a host write of `lpn` goes to flash (it is cold: not in the filter, which then
    /// holds it); a hot one stays in DRAM.
    fn cold(&mut self, lpn: u32) -> bool {
        if !self.on() {
            return true;
        }
        let cold = self.seen.insert(lpn);
        if cold {
            self.held.remove(&lpn);
        } else {
            self.held.insert(lpn);
        }
        cold
    }

    /// After a host write at `now`: the filter is emptied by the first write past its
    /// milestone, and the next milestone is a period from then (MQSim checks after the
    /// write's transactions, so the write that empties it is not remembered).
    fn after_write(&mut self, now: Nanos) {
        if self.on() && now > self.reset_after {
            self.seen.clear();
            self.reset_after = now + self.period;
        }
    }

    fn on(&self) -> bool {
        self.period > Nanos::ZERO
    }

    /// Whether `lpn`'s data is in DRAM only (a read of it is served there).
    fn holds(&self, lpn: u32) -> bool {
        !self.held.is_empty() && self.held.contains(&lpn)
    }
}

/// Multi-plane host programs on chips of several planes executing one command at a time
/// (`flash.serial_dies`, `flash.serial_planes`).
#[derive(Clone, Debug, Default)]
struct MultiPlane {
    /// The spec's planes (MQSim's chips); 0: off.
    chips: u32,
    dies: u32,
    planes: u32,
    /// Units per flash page (the LPN's page-level address is `lpn / upp`).
    upp: u32,
    /// Programs per block on each of a chip's planes.
    programs_per_block: u32,
    /// The next program's page on each plane of each chip, `chip * dies * planes + sub`.
    next: Vec<u32>,
    /// Programs placed and not joined, by (chip, die, page): (plane, start, done).
    open: HashMap<(u32, u32, u32), (u32, Nanos, Nanos)>,
    /// Units given a page in this run (written, or read first while unwritten).
    mapped: HashSet<u32>,
}

impl MultiPlane {
    fn new(spec: &SsdSpec) -> MultiPlane {
        let f = &spec.flash;
        let (dies, planes) = (f.serial_dies, f.serial_planes);
        if dies * planes <= 1 {
            return MultiPlane::default();
        }
        let chips = spec.planes() as u32;
        MultiPlane {
            chips,
            dies,
            planes,
            upp: (f.page_bytes / spec.ftl.unit_bytes).max(1),
            programs_per_block: (f.pages_per_block / f.program_pages).max(1),
            next: vec![0; (chips * dies * planes) as usize],
            open: HashMap::new(),
            mapped: HashSet::new(),
        }
    }

    /// The chip of `lpn`, and its plane's index among the chip's (CWDP: die, then plane).
    fn place_of(&self, lpn: u32) -> (u32, u32) {
        let page = lpn / self.upp;
        (
            page % self.chips,
            (page / self.chips) % (self.dies * self.planes),
        )
    }

    /// Takes the next page of `lpn`'s plane; returns it.
    fn take_page(&mut self, chip: u32, sub: u32) -> u32 {
        let slot = &mut self.next[(chip * self.dies * self.planes + sub) as usize];
        let page = *slot;
        *slot = (*slot + 1) % self.programs_per_block;
        page
    }

    /// A host read of `lpn`: the first read of a unit never written takes a page of its
    /// plane (MQSim's `online_create_entry_for_reads` gives an unwritten LPA a physical page
    /// from the plane's write frontier), as MQSim does on a drive without preconditioning.
    fn read(&mut self, lpn: u32) {
        if self.chips > 0 && self.mapped.insert(lpn) {
            let (chip, sub) = self.place_of(lpn);
            self.take_page(chip, sub);
        }
    }

    /// A host program of `lpn`'s page on `chip`, ready at `ready`: its (chip, die, page) and
    /// plane, and the completion of the program it joins, if one of another plane of that
    /// die at that page is placed and not yet started (MQSim's CWDP: die, then plane, from
    /// the LPN after channel and chip).
    fn join(&mut self, lpn: u32, chip: u32, ready: Nanos) -> Option<Result<Nanos, Key>> {
        if self.chips == 0 {
            return None;
        }
        self.mapped.insert(lpn);
        let (of, sub) = self.place_of(lpn);
        debug_assert_eq!(of, chip);
        let (die, plane) = (sub % self.dies, sub / self.dies);
        let page = self.take_page(chip, sub);
        let key = (chip, die, page);
        match self.open.get(&key) {
            Some(&(other, start, done)) if other != plane && start >= ready => {
                self.open.remove(&key);
                Some(Ok(done))
            }
            _ => Some(Err(Key { key, plane })),
        }
    }

    /// The program of `key` was placed from `start` to `done`: later ones may join it.
    fn placed(&mut self, key: Key, start: Nanos, done: Nanos) {
        self.open.insert(key.key, (key.plane, start, done));
    }
}

/// A program not joined to another: where later ones would look for it.
#[derive(Clone, Copy, Debug)]
struct Key {
    key: (u32, u32, u32),
    plane: u32,
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
            front: FrontEnd::new(
                spec.host.front_end_slots,
                spec.host.front_end_servers,
                spec.host.front_end_scope,
                spec.host.queues,
            ),
            buffer: WriteBuffer::new(spec.write_buffer.bytes, spec.write_buffer.mb_s),
            flash: Flash::new(&spec),
            ftl: Ftl::with_precondition(&spec, pre),
            cmt: Cmt::new(spec.ftl.cmt_entries, spec.flash.page_bytes / 4),
            gc: Collector::new(&spec),
            unit_bytes: u64::from(spec.ftl.unit_bytes),
            page_bytes,
            program_bytes,
            stats: SsdStats::default(),
            hot: HotFilter::new(spec.write_buffer.hot_filter_us),
            multi: MultiPlane::new(&spec),
            through: WriteThrough::new(&spec),
            stalls: Stalls::new(&spec.housekeeping),
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
        let accepted = self.front.handoff(rq.ctx.0, accepted, now);
        let ready = self.translate(units.clone(), accepted, false);
        let mut data = ready;
        let mut flash_reads = 0u64;
        // Consecutive units in the same flash page are one read.
        let mut run: Option<(u32, u64)> = None; // (page, units)
        let mut run_ppa = 0;
        for lpn in units {
            if self.hot.holds(lpn) {
                self.stats.buffer_hits += 1;
                continue;
            }
            self.multi.read(lpn);
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
            deferred: false,
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
        // A unit written again while the hot/cold filter holds it stays in DRAM: no room, no
        // program (MQSim counts back-pressure room only for the data it writes back).
        let (first, end) = (rq.sector * 512, (rq.sector + u64::from(rq.sectors)) * 512);
        let mut room = 0;
        let mut cold = Vec::with_capacity(units.len());
        for lpn in units.clone() {
            if self.hot.cold(lpn) {
                let lo = (u64::from(lpn) * self.unit_bytes).max(first);
                let hi = (u64::from(lpn + 1) * self.unit_bytes).min(end);
                room += hi.saturating_sub(lo);
                cold.push(lpn);
            }
        }
        self.hot.after_write(now);
        if !self.hot.on() {
            room = rq.bytes();
        }
        let admitted = self.buffer.admit(room, rq.bytes(), arrived);
        self.front.admitted(rq.ctx.0, admitted);
        if self.stalls.on() && self.stalls.written(rq.bytes(), admitted) {
            self.stats.stalls += 1;
        }
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
        let id = rq.id.0;
        let through = self.through.on;
        if through {
            self.through.writes.insert(id, (0, admitted));
        }
        for lpn in cold {
            let placed = self.ftl.write_host(lpn);
            let plane = self.ftl.plane_of(placed.ppa);
            if let Some(first) = placed.program {
                let ready = self.block_erased(first, plane, ready, now);
                let done = match self.multi.join(lpn, plane, ready) {
                    Some(Ok(done)) => {
                        self.stats.multi_plane_joins += 1;
                        done
                    }
                    joined => {
                        let done =
                            self.flash
                                .program(plane, self.program_bytes, ready, Origin::Host);
                        if let Some(Err(key)) = joined {
                            let start = done - self.flash.program_hold(self.program_bytes);
                            self.multi.placed(key, start, done);
                        }
                        done
                    }
                };
                self.ftl.set_programmed(first, done);
                self.buffer.scheduled(self.program_bytes, done);
                self.stats.host_programs += 1;
                if through {
                    self.through.wait(id, plane, admitted);
                    self.through.programmed(plane, done, id);
                }
            } else if through {
                self.through.wait(id, plane, admitted);
            }
            if placed.program.is_some() || placed.gc_needed {
                self.gc
                    .after_host_page(&mut self.ftl, &mut self.flash, plane, admitted);
            }
        }
        if through {
            match self.through.writes.remove(&id) {
                Some((0, done)) => {
                    return Service {
                        done,
                        cache_hit: false,
                        deferred: false,
                    }
                }
                Some(e) => {
                    self.through.writes.insert(id, e);
                    return Service {
                        done: admitted,
                        cache_hit: false,
                        deferred: true,
                    };
                }
                None => unreachable!("inserted above"),
            }
        }
        Service {
            done: admitted,
            cache_hit: true,
            deferred: false,
        }
    }

    /// When a host program of the unit at `first` on `plane`, its data ready at `ready`, may
    /// start: not before its block's erase ends. With lazy GC an erase still in the plane's
    /// backlog is placed first, urgent (the host's writes to the plane wait for GC).
    fn block_erased(&mut self, first: u32, plane: u32, ready: Nanos, now: Nanos) -> Nanos {
        if self.ftl.erased_at(first) == Nanos::MAX {
            let block = self.ftl.block_of(first) % self.spec.flash.blocks_per_plane;
            self.gc
                .free_block_for_host(&mut self.ftl, &mut self.flash, plane, block, now);
        }
        let erased = self.ftl.erased_at(first);
        if erased > ready {
            self.stats.block_waits += 1;
        }
        ready.max(erased)
    }

    /// Close every program unit whose writes have waited `write_buffer.gather_us`, padded
    /// ([`Ftl::pad_host`]), and program it at `now`.
    fn close_gathered(&mut self, now: Nanos) {
        for plane in 0..self.through.waiting.len() as u32 {
            let (ids, since) = &self.through.waiting[plane as usize];
            if ids.is_empty() || *since + self.through.gather > now {
                continue;
            }
            let held = ids.len() as u64;
            let first = self
                .ftl
                .pad_host(plane)
                .expect("a unit with writes waiting is open");
            self.flash.set_now(now);
            let ready = self.block_erased(first, plane, now, now);
            let done = self
                .flash
                .program(plane, self.program_bytes, ready, Origin::Host);
            self.ftl.set_programmed(first, done);
            self.buffer.scheduled(held * self.unit_bytes, done);
            self.stats.host_programs += 1;
            self.stats.padded_programs += 1;
            self.through.programmed(plane, done, u64::MAX);
            self.gc
                .after_host_page(&mut self.ftl, &mut self.flash, plane, now);
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
        self.gc.run(&mut self.ftl, &mut self.flash, now);
        if self.stalls.on() {
            self.stalls.advance(now);
            // A command arriving in a housekeeping stall is served at its end; one completing
            // in a stall (its own write's, or one started since) is posted at its end.
            let arrival = self.stalls.hold(now);
            let accepted = self.host.accept(rq.ctx.0, arrival);
            let mut service = self.serve(rq, now, accepted);
            service.done = self.stalls.hold(service.done);
            return service;
        }
        let accepted = self.host.accept(rq.ctx.0, now);
        self.serve(rq, now, accepted)
    }
    fn non_rotational(&self) -> bool {
        true
    }
    fn defers(&self) -> bool {
        self.through.on
    }
    fn poll_completion(&mut self) -> Option<(RequestId, Nanos)> {
        self.through.settled.pop_front()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.through.deadline()
    }
    fn handle_timeout(&mut self, now: Nanos) {
        if self.through.on {
            self.flash.set_now(now);
            self.gc.run(&mut self.ftl, &mut self.flash, now);
            self.close_gathered(now);
        }
    }
}

impl Ssd {
    /// A command the host interface accepted at `accepted`, by its operation.
    fn serve(&mut self, rq: &Request, now: Nanos, accepted: Nanos) -> Service {
        match rq.op {
            Op::Read => self.read(rq, now, accepted),
            Op::Write => self.write(rq, now, accepted),
            Op::Flush => Service {
                done: self
                    .front
                    .handoff(rq.ctx.0, accepted, now)
                    .max(self.buffer.drained()),
                cache_hit: false,
                deferred: false,
            },
            Op::Discard => {
                let accepted = self.front.handoff(rq.ctx.0, accepted, now);
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
                    deferred: false,
                }
            }
        }
    }
}
