//! The page-level FTL: logical-to-physical mapping, block state and write frontiers.
//!
//! Follows MQSim's page-level mapping (`Address_Mapping_Unit_Page_Level.cpp`) and block
//! manager (`Flash_Block_Manager.cpp`): a mapping unit (logical page, 4 KiB by default) maps
//! to one unit slot of a flash page; writes go to an open block per plane (one frontier for
//! host writes, one for GC), pages striped over planes channel first (CWDP), a plane taking
//! `flash.program_pages` pages (one program operation) before the next; a block is reused only
//! after GC erased it.
//!
//! Addresses: an LPN is a logical unit number; a PPA is a global unit slot,
//! `(plane * blocks_per_plane + block) * slots_per_block + slot`, slot = page * units_per_page
//! + unit within the page.
//!
//! Preconditioning is a formula, not a history: the preconditioned ("base") layout puts
//! logical unit `l` of page group `g = l / units_per_page` on plane `g mod planes`, at unit
//! `k = (g / planes) * units_per_page + l mod units_per_page` of that plane, and the plane's
//! first blocks hold those units in order, `base_len[b]` of them in block `b`. Only what
//! changes after it is stored: an override map for the LPNs written, trimmed or moved since,
//! a dead bit per overwritten base slot, and the reverse map of blocks written during the run.
//! So a 1 TB drive is preconditioned in microseconds and holds memory in proportion to what a
//! run writes (about 16 bytes per LPN written).

use std::collections::VecDeque;

use elevator_core::Nanos;
use rustc_hash::FxHashMap;

use super::spec::{Precondition, SsdSpec};

/// A logical mapping unit number.
pub type Lpn = u32;
/// A physical unit slot (see the module doc).
pub type Ppa = u32;
/// "No unit": an unwritten slot, an unmapped LPN.
pub const NONE: u32 = u32::MAX;

/// The life of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Erased, in the plane's free pool.
    Free,
    /// A write frontier.
    Open,
    /// Written to its end (or preconditioned); a GC candidate.
    Full,
}

/// A block written during the run: what each slot holds and when each page was programmed.
#[derive(Clone, Debug)]
struct Written {
    /// LPN per slot; [`NONE`] when unwritten or no longer valid.
    lpn: Box<[Lpn]>,
    /// When each page's program completes ([`Nanos::MAX`] while the page is still open).
    page_done: Box<[Nanos]>,
}

/// A write frontier: an open block and its next free slot.
#[derive(Clone, Copy, Debug)]
struct Frontier {
    block: u32,
    next: u32,
}

/// Which frontier a write uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Host writes.
    Host,
    /// GC relocations.
    Gc,
}

/// Where a unit went, and whether it completed a program unit.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    /// Its slot.
    pub ppa: Ppa,
    /// Set when this unit filled its program unit (`flash.program_pages` pages): the unit's
    /// first slot; its pages are to be programmed together.
    pub program: Option<Ppa>,
    /// Set when taking a new block left the plane below the GC threshold.
    pub gc_needed: bool,
}

/// Counters the FTL keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlStats {
    /// Units written by the host.
    pub host_units: u64,
    /// Units relocated by GC.
    pub gc_units: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Slots left empty by program units closed before they were full ([`Ftl::pad_host`]).
    pub padded_units: u64,
}

/// The mapping and block state of a drive.
#[derive(Clone, Debug)]
pub struct Ftl {
    planes: u32,
    blocks: u32,
    slots: u32,
    upp: u32,
    /// Units one program operation writes (`upp * flash.program_pages`).
    program_units: u32,
    logical: u64,
    reserve: u32,
    /// Units of the base layout per base block (shared by every plane).
    base_len: Vec<u32>,
    /// Prefix sums of `base_len`, `blocks + 1` entries.
    base_prefix: Vec<u64>,
    /// Base units per plane (the plane's share of the logical space).
    plane_units: Vec<u64>,
    has_base: bool,
    overrides: FxHashMap<Lpn, Ppa>,
    valid: Vec<u32>,
    state: Vec<BlockState>,
    base: Vec<bool>,
    base_dead: FxHashMap<u32, Box<[u64]>>,
    written: Vec<Option<Box<Written>>>,
    /// Whether any block has been opened for writing in the run (else `written` is empty).
    any_written: bool,
    free: Vec<VecDeque<u32>>,
    /// Per block (global id): when its last erase ends ([`Nanos::ZERO`] for blocks free from
    /// the start; [`Nanos::MAX`] while its erase is not placed yet, with lazy GC).
    erased_at: Vec<Nanos>,
    host_frontier: Vec<Option<Frontier>>,
    gc_frontier: Vec<Option<Frontier>>,
    host_plane: u32,
    static_allocation: bool,
    stats: FtlStats,
}

impl Ftl {
    /// The FTL of `spec`, preconditioned as the spec says.
    pub fn new(spec: &SsdSpec) -> Ftl {
        Ftl::with_precondition(spec, spec.precondition)
    }

    /// The FTL of `spec`, preconditioned as `pre` says.
    pub fn with_precondition(spec: &SsdSpec, pre: Precondition) -> Ftl {
        let planes = spec.planes() as u32;
        let blocks = spec.flash.blocks_per_plane;
        let upp = spec.units_per_page();
        let slots = spec.flash.pages_per_block * upp;
        let logical = spec.logical_units();
        let reserve = spec.gc.reserve_blocks(blocks);
        let groups = logical.div_ceil(u64::from(upp));
        let plane_units: Vec<u64> = (0..u64::from(planes))
            .map(|p| {
                let n = if p < groups {
                    (groups - p).div_ceil(u64::from(planes))
                } else {
                    0
                };
                let mut u = n * u64::from(upp);
                // The last group may be partial.
                if groups > 0 && (groups - 1) % u64::from(planes) == p {
                    u -= groups * u64::from(upp) - logical;
                }
                u
            })
            .collect();
        let most = plane_units.iter().copied().max().unwrap_or(0);
        let base_len = base_profile(pre, blocks, slots, upp, reserve, most);
        let mut base_prefix = Vec::with_capacity(base_len.len() + 1);
        base_prefix.push(0u64);
        for &l in &base_len {
            base_prefix.push(base_prefix.last().copied().unwrap_or(0) + u64::from(l));
        }
        let total = (planes * blocks) as usize;
        let mut ftl = Ftl {
            planes,
            blocks,
            slots,
            upp,
            program_units: upp * spec.flash.program_pages,
            logical,
            reserve,
            has_base: pre != Precondition::None,
            base_len,
            base_prefix,
            plane_units,
            overrides: FxHashMap::default(),
            valid: vec![0; total],
            state: vec![BlockState::Free; total],
            base: vec![false; total],
            base_dead: FxHashMap::default(),
            written: vec![None; total],
            any_written: false,
            free: vec![VecDeque::new(); planes as usize],
            erased_at: vec![Nanos::ZERO; total],
            host_frontier: vec![None; planes as usize],
            gc_frontier: vec![None; planes as usize],
            host_plane: 0,
            static_allocation: spec.ftl.static_allocation,
            stats: FtlStats::default(),
        };
        for p in 0..planes {
            for b in 0..blocks {
                let gid = (p * blocks + b) as usize;
                let len = ftl.base_len.get(b as usize).copied().unwrap_or(0);
                if ftl.has_base && len > 0 {
                    ftl.state[gid] = BlockState::Full;
                    ftl.base[gid] = true;
                    let start = ftl.base_prefix[b as usize];
                    let here = ftl.plane_units[p as usize];
                    ftl.valid[gid] = here.saturating_sub(start).min(u64::from(len)) as u32;
                } else {
                    ftl.free[p as usize].push_back(b);
                }
            }
        }
        ftl
    }

    /// Logical units (the host's capacity in mapping units).
    pub fn logical_units(&self) -> u64 {
        self.logical
    }
    /// Planes.
    pub fn planes(&self) -> u32 {
        self.planes
    }
    /// Blocks per plane.
    pub fn blocks_per_plane(&self) -> u32 {
        self.blocks
    }
    /// Unit slots per block.
    pub fn slots_per_block(&self) -> u32 {
        self.slots
    }
    /// Units per flash page.
    pub fn units_per_page(&self) -> u32 {
        self.upp
    }
    /// Units one program operation writes (`flash.program_pages` pages).
    pub fn units_per_program(&self) -> u32 {
        self.program_units
    }
    /// Free blocks per plane below which GC runs.
    pub fn reserve(&self) -> u32 {
        self.reserve
    }
    /// Free blocks of `plane`.
    pub fn free_blocks(&self, plane: u32) -> u32 {
        self.free[plane as usize].len() as u32
    }
    /// Free blocks of `plane` whose erase has ended by `t` (MQSim's free block pool: a block
    /// joins it when its erase transaction is serviced).
    pub fn free_erased_by(&self, plane: u32, t: Nanos) -> u32 {
        let first = plane * self.blocks;
        self.free[plane as usize]
            .iter()
            .filter(|&&b| self.erased_at[(first + b) as usize] <= t)
            .count() as u32
    }
    /// When the erase of the block holding `ppa` ends (before it, nothing can be programmed
    /// there); [`Nanos::MAX`] while that erase is not placed.
    pub fn erased_at(&self, ppa: Ppa) -> Nanos {
        self.erased_at[(ppa / self.slots) as usize]
    }
    /// When the erase of block `block` of `plane` ends ([`Nanos::MAX`] while not placed).
    pub fn block_erased_at(&self, plane: u32, block: u32) -> Nanos {
        self.erased_at[(plane * self.blocks + block) as usize]
    }
    /// Record when the erase of block `block` of `plane` ends (placed after the block was
    /// returned to the pool by [`Ftl::erase`] with [`Nanos::MAX`]).
    pub fn set_erased_at(&mut self, plane: u32, block: u32, at: Nanos) {
        self.erased_at[(plane * self.blocks + block) as usize] = at;
    }
    /// Counters.
    pub fn stats(&self) -> FtlStats {
        self.stats
    }
    /// Valid units of block `block` of `plane`.
    pub fn valid(&self, plane: u32, block: u32) -> u32 {
        self.valid[(plane * self.blocks + block) as usize]
    }
    /// State of block `block` of `plane`.
    pub fn state(&self, plane: u32, block: u32) -> BlockState {
        self.state[(plane * self.blocks + block) as usize]
    }

    /// The plane of a PPA.
    pub fn plane_of(&self, ppa: Ppa) -> u32 {
        ppa / (self.blocks * self.slots)
    }
    /// The global block id of a PPA (`plane * blocks_per_plane + block`).
    pub fn block_of(&self, ppa: Ppa) -> u32 {
        ppa / self.slots
    }
    /// The global page id of a PPA (units of the same page share it).
    pub fn page_of(&self, ppa: Ppa) -> u32 {
        ppa / self.upp
    }

    /// The index within its block of the page holding a PPA.
    pub fn page_in_block(&self, ppa: Ppa) -> u32 {
        (ppa % self.slots) / self.upp
    }

    fn ppa(&self, plane: u32, block: u32, slot: u32) -> Ppa {
        (plane * self.blocks + block) * self.slots + slot
    }

    /// Where the base layout puts `lpn`.
    fn base_ppa(&self, lpn: Lpn) -> Ppa {
        let upp = u64::from(self.upp);
        let g = u64::from(lpn) / upp;
        let plane = (g % u64::from(self.planes)) as u32;
        let k = (g / u64::from(self.planes)) * upp + u64::from(lpn) % upp;
        // The last block whose prefix is <= k.
        let b = self.base_prefix.partition_point(|&s| s <= k) - 1;
        self.ppa(plane, b as u32, (k - self.base_prefix[b]) as u32)
    }

    /// The LPN the base layout put at (`plane`, `block`, `slot`), if any.
    fn base_lpn(&self, plane: u32, block: u32, slot: u32) -> Option<Lpn> {
        let len = *self.base_len.get(block as usize)?;
        if slot >= len {
            return None;
        }
        let k = self.base_prefix[block as usize] + u64::from(slot);
        if k >= self.plane_units[plane as usize] {
            return None;
        }
        let upp = u64::from(self.upp);
        let g = (k / upp) * u64::from(self.planes) + u64::from(plane);
        Some((g * upp + k % upp) as Lpn)
    }

    fn dead(&self, gid: u32, slot: u32) -> bool {
        self.base_dead
            .get(&gid)
            .is_some_and(|bits| bits[(slot / 64) as usize] >> (slot % 64) & 1 == 1)
    }

    /// Where `lpn` lives, if mapped.
    pub fn lookup(&self, lpn: Lpn) -> Option<Ppa> {
        // Reads of a drive not written in the run skip the hash.
        let moved = match self.overrides.is_empty() {
            true => None,
            false => self.overrides.get(&lpn),
        };
        match moved {
            Some(&NONE) => None,
            Some(&p) => Some(p),
            None if self.has_base && u64::from(lpn) < self.logical => Some(self.base_ppa(lpn)),
            None => None,
        }
    }

    /// The LPN whose valid data is at `ppa`, if any.
    pub fn lpn_at(&self, ppa: Ppa) -> Option<Lpn> {
        let gid = ppa / self.slots;
        let slot = ppa % self.slots;
        if let Some(w) = &self.written[gid as usize] {
            let l = w.lpn[slot as usize];
            return (l != NONE).then_some(l);
        }
        if !self.base[gid as usize] || self.dead(gid, slot) {
            return None;
        }
        self.base_lpn(gid / self.blocks, gid % self.blocks, slot)
    }

    /// When the page holding `ppa` is (or will be) on flash; [`Nanos::MAX`] while it is open.
    pub fn programmed_at(&self, ppa: Ppa) -> Nanos {
        if !self.any_written {
            return Nanos::ZERO;
        }
        match &self.written[(ppa / self.slots) as usize] {
            Some(w) => w.page_done[((ppa % self.slots) / self.upp) as usize],
            None => Nanos::ZERO,
        }
    }

    /// Record when the program unit starting at `ppa` (one page, or `flash.program_pages`) is
    /// programmed.
    pub fn set_programmed(&mut self, ppa: Ppa, at: Nanos) {
        let (slots, upp) = (self.slots, self.upp);
        if let Some(w) = &mut self.written[(ppa / slots) as usize] {
            let first = ((ppa % slots) / upp) as usize;
            let pages = (self.program_units / upp) as usize;
            w.page_done[first..first + pages].fill(at);
        }
    }

    /// Drop the data at `ppa` (overwritten, trimmed or moved).
    fn invalidate(&mut self, ppa: Ppa) {
        let gid = ppa / self.slots;
        let slot = ppa % self.slots;
        self.valid[gid as usize] -= 1;
        if let Some(w) = &mut self.written[gid as usize] {
            w.lpn[slot as usize] = NONE;
        } else {
            let words = self.slots.div_ceil(64) as usize;
            let bits = self
                .base_dead
                .entry(gid)
                .or_insert_with(|| vec![0u64; words].into_boxed_slice());
            bits[(slot / 64) as usize] |= 1 << (slot % 64);
        }
    }

    /// Unmap `lpn` (a trim); returns whether it was mapped.
    pub fn trim(&mut self, lpn: Lpn) -> bool {
        match self.lookup(lpn) {
            Some(p) => {
                self.invalidate(p);
                self.overrides.insert(lpn, NONE);
                true
            }
            None => false,
        }
    }

    /// Write `lpn` through the host frontier; the old copy, if any, is invalidated.
    pub fn write_host(&mut self, lpn: Lpn) -> Placed {
        if let Some(old) = self.lookup(lpn) {
            self.invalidate(old);
        }
        let plane = if self.static_allocation {
            (lpn / self.upp) % self.planes
        } else {
            self.host_plane
        };
        let placed = self.place(lpn, plane, Stream::Host);
        if placed.program.is_some() && !self.static_allocation {
            self.host_plane = (self.host_plane + 1) % self.planes;
        }
        self.stats.host_units += 1;
        placed
    }

    /// Close the host program unit open on `plane` with the units it holds, the rest of its
    /// slots left empty (padding, never valid): returns its first slot, to be programmed, or
    /// `None` if no unit of it is written. The next host write goes to the next plane, as
    /// after a full program unit.
    pub fn pad_host(&mut self, plane: u32) -> Option<Ppa> {
        let mut f = self.host_frontier[plane as usize]?;
        let held = f.next % self.program_units;
        if held == 0 {
            return None;
        }
        let gid = plane * self.blocks + f.block;
        f.next += self.program_units - held;
        let first = gid * self.slots + f.next - self.program_units;
        self.host_frontier[plane as usize] = if f.next == self.slots {
            self.state[gid as usize] = BlockState::Full;
            None
        } else {
            Some(f)
        };
        if !self.static_allocation {
            self.host_plane = (self.host_plane + 1) % self.planes;
        }
        self.stats.padded_units += u64::from(self.program_units - held);
        Some(first)
    }

    /// Move the valid unit `lpn` from `from` to the GC frontier of the same plane.
    pub fn relocate(&mut self, lpn: Lpn, from: Ppa) -> Placed {
        self.invalidate(from);
        self.stats.gc_units += 1;
        self.place(lpn, self.plane_of(from), Stream::Gc)
    }

    fn place(&mut self, lpn: Lpn, plane: u32, stream: Stream) -> Placed {
        let mut gc_needed = false;
        let frontier = match stream {
            Stream::Host => self.host_frontier[plane as usize],
            Stream::Gc => self.gc_frontier[plane as usize],
        };
        let mut f = match frontier {
            Some(f) => f,
            None => {
                let block = self.take_free(plane);
                gc_needed = self.free_blocks(plane) < self.reserve;
                Frontier { block, next: 0 }
            }
        };
        let gid = plane * self.blocks + f.block;
        let slot = f.next;
        let ppa = gid * self.slots + slot;
        if let Some(w) = &mut self.written[gid as usize] {
            w.lpn[slot as usize] = lpn;
        }
        self.valid[gid as usize] += 1;
        self.overrides.insert(lpn, ppa);
        f.next += 1;
        // `then`, not `then_some`: the start is only a slot when the operation's last unit is
        // this one (eagerly, the first slot of a block's first plane underflows).
        let program = (f.next % self.program_units == 0).then(|| ppa + 1 - self.program_units);
        let next = if f.next == self.slots {
            self.state[gid as usize] = BlockState::Full;
            None
        } else {
            Some(f)
        };
        match stream {
            Stream::Host => self.host_frontier[plane as usize] = next,
            Stream::Gc => self.gc_frontier[plane as usize] = next,
        }
        Placed {
            ppa,
            program,
            gc_needed,
        }
    }

    /// Open a free block of `plane` for writing.
    fn take_free(&mut self, plane: u32) -> u32 {
        let block = self.free[plane as usize]
            .pop_front()
            .expect("GC keeps a free block on every plane (spec checked)");
        let gid = (plane * self.blocks + block) as usize;
        self.state[gid] = BlockState::Open;
        self.any_written = true;
        let (slots, pages) = (self.slots as usize, (self.slots / self.upp) as usize);
        match &mut self.written[gid] {
            Some(w) => {
                w.lpn.fill(NONE);
                w.page_done.fill(Nanos::MAX);
            }
            None => {
                self.written[gid] = Some(Box::new(Written {
                    lpn: vec![NONE; slots].into_boxed_slice(),
                    page_done: vec![Nanos::MAX; pages].into_boxed_slice(),
                }))
            }
        }
        block
    }

    /// The full block of `plane` with the fewest valid units (greedy), if one has any invalid.
    pub fn greedy_victim(&self, plane: u32) -> Option<u32> {
        let first = (plane * self.blocks) as usize;
        let mut best: Option<(u32, u32)> = None;
        for b in 0..self.blocks {
            let gid = first + b as usize;
            if self.state[gid] != BlockState::Full {
                continue;
            }
            let v = self.valid[gid];
            if v < self.slots && best.is_none_or(|(_, bv)| v < bv) {
                best = Some((b, v));
            }
        }
        best.map(|(b, _)| b)
    }

    /// The valid units of a block, as (slot PPA, LPN), in slot order.
    pub fn valid_units(&self, plane: u32, block: u32) -> Vec<(Ppa, Lpn)> {
        let first = self.ppa(plane, block, 0);
        (0..self.slots)
            .filter_map(|s| self.lpn_at(first + s).map(|l| (first + s, l)))
            .collect()
    }

    /// Return an emptied block to its plane's free pool, its erase ending at `at`
    /// ([`Nanos::MAX`]: not placed yet; [`Ftl::set_erased_at`] when it is).
    pub fn erase(&mut self, plane: u32, block: u32, at: Nanos) {
        let gid = (plane * self.blocks + block) as usize;
        self.erased_at[gid] = at;
        debug_assert_eq!(self.valid[gid], 0, "erasing a block with valid data");
        self.state[gid] = BlockState::Free;
        self.base[gid] = false;
        self.base_dead.remove(&(gid as u32));
        self.free[plane as usize].push_back(block);
        self.stats.erases += 1;
    }

    /// Checks the mapping against the block state, for tests: every mapped LPN's slot holds
    /// that LPN; every valid slot is the mapped home of its LPN; every block's valid count is
    /// its number of valid slots. Costs a pass over every LPN and every slot.
    pub fn check(&self) -> Result<u64, String> {
        let mut mapped = 0u64;
        for lpn in 0..self.logical as Lpn {
            if let Some(p) = self.lookup(lpn) {
                mapped += 1;
                match self.lpn_at(p) {
                    Some(l) if l == lpn => {}
                    other => return Err(format!("lpn {lpn} maps to {p}, which holds {other:?}")),
                }
            }
        }
        let mut total = 0u64;
        for gid in 0..self.planes * self.blocks {
            let mut n = 0;
            for s in 0..self.slots {
                let p = gid * self.slots + s;
                if let Some(l) = self.lpn_at(p) {
                    if self.lookup(l) != Some(p) {
                        return Err(format!("slot {p} holds lpn {l}, mapped elsewhere"));
                    }
                    n += 1;
                }
            }
            if n != self.valid[gid as usize] {
                return Err(format!(
                    "block {gid}: valid count {} but {n} valid slots",
                    self.valid[gid as usize]
                ));
            }
            if self.state[gid as usize] == BlockState::Free && n > 0 {
                return Err(format!("free block {gid} holds {n} valid units"));
            }
            total += u64::from(n);
        }
        if total != mapped {
            return Err(format!("{mapped} LPNs mapped but {total} valid slots"));
        }
        Ok(mapped)
    }
}

/// Units of the base layout per block of a plane, for `most` units per plane.
fn base_profile(
    pre: Precondition,
    blocks: u32,
    slots: u32,
    upp: u32,
    reserve: u32,
    most: u64,
) -> Vec<u32> {
    let mut len = vec![0u32; blocks as usize];
    match pre {
        Precondition::None => {}
        Precondition::Sequential => {
            let mut left = most;
            for l in &mut len {
                let n = left.min(u64::from(slots));
                *l = n as u32;
                left -= n;
            }
        }
        Precondition::Steady => {
            // Blocks written longest ago hold the fewest valid units: valid counts fall
            // linearly from full to `low` over the blocks in use, which the spec's check keeps
            // able to hold every unit with `reserve` blocks left free.
            let used = blocks.saturating_sub(reserve).max(1);
            let s = f64::from(slots);
            let low = (2.0 * most as f64 / f64::from(used) - s).clamp(0.0, s);
            let mut left = most;
            for (b, l) in len.iter_mut().take(used as usize).enumerate() {
                let frac = if used > 1 {
                    b as f64 / f64::from(used - 1)
                } else {
                    0.0
                };
                // Whole pages, so a page group of the base layout is one flash page.
                let want =
                    ((s - (s - low) * frac) / f64::from(upp)).round() as u64 * u64::from(upp);
                let n = left.min(want);
                *l = n as u32;
                left -= n;
            }
            // Rounding may leave a few units: top up the fullest-first blocks.
            for l in len.iter_mut().take(used as usize) {
                if left == 0 {
                    break;
                }
                let add = left.min(u64::from(slots - *l));
                *l += add as u32;
                left -= add;
            }
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::{BlockState, Ftl};
    use crate::ssd::spec::{Precondition, SsdSpec};

    /// [`Ftl::check`] refuses a block marked free that still holds valid units (one returned
    /// to the pool before GC moved its data), naming the block: the mapping and the valid
    /// counts agree there, so this is the only check that sees it.
    #[test]
    fn check_refuses_a_free_block_holding_valid_units() {
        let mut spec = SsdSpec::builtin("samsung-980pro-1tb").expect("built in");
        spec.flash.channels = 1;
        spec.flash.chips_per_channel = 1;
        spec.flash.dies_per_chip = 1;
        spec.flash.planes_per_die = 1;
        spec.flash.blocks_per_plane = 16;
        spec.flash.pages_per_block = 8;
        spec.ftl.over_provisioning = 0.5;
        spec.validate().expect("a one-plane drive of 16 blocks");
        let mut ftl = Ftl::with_precondition(&spec, Precondition::None);
        for lpn in 0..ftl.slots_per_block() {
            ftl.write_host(lpn);
        }
        assert_eq!(ftl.state(0, 0), BlockState::Full);
        assert_eq!(ftl.check(), Ok(u64::from(ftl.slots_per_block())));
        ftl.state[0] = BlockState::Free;
        let e = ftl.check().expect_err("a free block holding data");
        assert!(e.starts_with("free block 0 holds "), "{e}");
    }
}
