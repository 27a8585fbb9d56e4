//! Garbage collection: greedy victim choice, relocation of valid units (in step with host
//! writes, or the whole victim at once), erase.
//!
//! Follows MQSim's GC (`GC_and_WL_Unit_Page_Level.cpp`) with the greedy policy
//! (`GC_Block_Selection_Policy = GREEDY`): when a plane's free blocks fall below the
//! threshold, the full block with the fewest valid units is chosen, its valid units are read
//! and programmed into the plane's GC frontier (over the channel: no copyback), and the block
//! is erased; as in MQSim, a plane collects one victim at a time and starts the next while it
//! is still below the threshold.
//!
//! The work is placed on the plane's timelines when host writes are placed, as
//! [`GcSchedule`] says:
//!
//! - `in-step` (the default; a deviation): in step with the host writes: each host program
//!   (a page, or `flash.program_pages`) on a plane with a victim under way moves the share of
//!   the victim that keeps the plane's free blocks level (`units_per_program * valid /
//!   invalid` of the victim's units), so GC's cost is spread over the host writes that need
//!   it instead of landing on one write (MQSim spreads it by event timing). No write stalls.
//! - `whole-victim` (MQSim's): the whole victim at the host program that finds the plane below
//!   the threshold: all its reads, programs and the erase are placed at once on the plane's GC
//!   timeline, as MQSim submits all of a victim's transactions to the TSU together; the
//!   plane's next host programs find no gap there and wait behind it. Deviation: MQSim lets
//!   queued host writes go before GC's while the plane is above its hard threshold
//!   (`GC_Hard_Threshold`); here the victim's work is placed first.
//!
//! Under either, a plane down to the two blocks its frontiers need collects at once until it
//! is not. No wear levelling.
//!
//! Urgency is not a free-block level (a deviation): MQSim's GC yields to host reads while every
//! plane of the chip is above `GC_Hard_Threshold` and goes first below it
//! (`GC_is_in_urgent_mode`), a level a plane reaches when GC cannot keep up with the host.
//! In-step GC keeps a plane's free blocks at the threshold whatever the host's rate, so the
//! spec says: `gc.preemptible` (never urgent), or not, with `gc.urgent = "always"` or
//! `"behind"`: urgent only the work placed for a host write that waited for buffer room, i.e.
//! while the flash is behind the host (the caller sets it, [`Flash::set_gc_urgent`]).
//! `samsung-980pro-1tb-fig11c` is `"behind"` (docs/ssd-model.md, "A reader beside a random
//! writer").

use elevator_core::Nanos;

use super::flash::{Flash, Origin};
use super::ftl::{Ftl, Lpn, Ppa};
use super::spec::GcSchedule;

/// What GC did, over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Times GC started on a plane that had none under way (it fell below its threshold).
    pub triggers: u64,
    /// Blocks collected (erased).
    pub victims: u64,
}

/// The block a plane is collecting.
#[derive(Clone, Debug)]
struct Victim {
    block: u32,
    /// Its valid units when chosen, as (slot, LPN), in slot order.
    units: Vec<(Ppa, Lpn)>,
    /// How many of `units` have been dealt with.
    next: usize,
    /// Units to move per host program on the plane (all of them: `usize::MAX`).
    per_page: usize,
}

/// Per-plane GC state.
#[derive(Clone, Debug)]
pub struct Collector {
    victims: Vec<Option<Victim>>,
    unit_bytes: u64,
    program_bytes: u64,
    schedule: GcSchedule,
    /// Whether the current call chose a victim.
    chosen: bool,
    stats: GcStats,
}

/// Free blocks a plane must keep for its host and GC frontiers.
const FLOOR: u32 = 2;

impl Collector {
    /// No GC under way on any of `planes`; `unit_bytes` sizes a read's transfer and
    /// `program_bytes` a program's (`flash.program_pages` pages); `schedule` says when a
    /// victim's work is done.
    pub fn new(
        planes: u32,
        unit_bytes: u64,
        program_bytes: u64,
        schedule: GcSchedule,
    ) -> Collector {
        Collector {
            victims: vec![None; planes as usize],
            unit_bytes,
            program_bytes,
            schedule,
            chosen: false,
            stats: GcStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> GcStats {
        self.stats
    }

    /// A host program was placed on `plane` (or the plane took a block) at `now`: do the GC
    /// work that is due there.
    pub fn after_host_page(&mut self, ftl: &mut Ftl, flash: &mut Flash, plane: u32, now: Nanos) {
        let idle = self.victims[plane as usize].is_none();
        if idle && ftl.free_blocks(plane) < ftl.reserve() {
            self.choose(ftl, plane);
        }
        if let Some(v) = &self.victims[plane as usize] {
            let n = v.per_page;
            self.advance(ftl, flash, plane, n, now);
        }
        while ftl.free_blocks(plane) < FLOOR {
            if self.victims[plane as usize].is_none() && !self.choose(ftl, plane) {
                break;
            }
            self.advance(ftl, flash, plane, usize::MAX, now);
        }
        if idle && self.chosen {
            self.stats.triggers += 1;
        }
        self.chosen = false;
    }

    /// Choose the greedy victim of `plane`; returns whether there was one.
    fn choose(&mut self, ftl: &Ftl, plane: u32) -> bool {
        let Some(block) = ftl.greedy_victim(plane) else {
            return false;
        };
        self.chosen = true;
        let units = ftl.valid_units(plane, block);
        let slots = ftl.slots_per_block() as usize;
        let invalid = (slots - units.len()).max(1);
        let per_page = match self.schedule {
            GcSchedule::InStep => {
                (ftl.units_per_program() as usize * units.len()).div_ceil(invalid)
            }
            GcSchedule::WholeVictim => usize::MAX,
        };
        self.victims[plane as usize] = Some(Victim {
            block,
            units,
            next: 0,
            per_page: per_page.max(1),
        });
        true
    }

    /// Move up to `budget` units of `plane`'s victim, from `now`; erase it when it is empty.
    fn advance(&mut self, ftl: &mut Ftl, flash: &mut Flash, plane: u32, budget: usize, now: Nanos) {
        let Some(v) = self.victims[plane as usize].as_mut() else {
            return;
        };
        let mut moved = 0;
        let mut copied = now;
        while v.next < v.units.len() && moved < budget {
            // One read per victim page that holds valid units (those the host has not
            // overwritten since the victim was chosen).
            let page = ftl.page_of(v.units[v.next].0);
            let end = v.next
                + v.units[v.next..]
                    .iter()
                    .take_while(|(p, _)| ftl.page_of(*p) == page)
                    .count();
            let live: Vec<(Ppa, Lpn)> = v.units[v.next..end]
                .iter()
                .copied()
                .filter(|&(p, l)| ftl.lpn_at(p) == Some(l))
                .collect();
            v.next = end;
            if live.is_empty() {
                continue;
            }
            let in_block = ftl.page_in_block(live[0].0);
            let bytes = live.len() as u64 * self.unit_bytes;
            let read = flash.read(plane, in_block, bytes, now, Origin::Gc);
            copied = copied.max(read);
            for &(from, lpn) in &live {
                let placed = ftl.relocate(lpn, from);
                if let Some(first) = placed.program {
                    let done = flash.program(plane, self.program_bytes, read, Origin::Gc);
                    ftl.set_programmed(first, done);
                }
            }
            moved += live.len();
        }
        if v.next >= v.units.len() {
            let block = v.block;
            self.victims[plane as usize] = None;
            flash.erase(plane, copied, Origin::Gc);
            ftl.erase(plane, block);
            self.stats.victims += 1;
        }
    }
}
