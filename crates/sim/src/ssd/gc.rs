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
//! Urgency: MQSim's GC yields to host reads while every plane of the chip is above
//! `GC_Hard_Threshold` and goes first below it (`GC_is_in_urgent_mode`), a level a plane
//! reaches when GC cannot keep up with the host. The spec says which rule: `gc.preemptible`
//! (never urgent), or not, with
//!
//! - `gc.urgent = "always"`, or `"behind"`: urgent only the work placed for a host write that
//!   waited for buffer room, i.e. while the flash is behind the host (the caller sets it,
//!   [`Flash::set_gc_urgent`]). Both place the work at once (in step, or the whole victim), so
//!   the free blocks the FTL counts stay level whatever the host's rate: not MQSim's rule.
//! - `gc.urgent = "free-blocks"` (MQSim's rule; lazy GC): the FTL's moves are still decided
//!   in step (or a whole victim at once), but their flash work (reads, programs, the erase)
//!   waits in the plane's backlog and is placed one operation at a time when the plane has no
//!   host work under way or queued (MQSim's TSU serves user transactions before GC's when GC
//!   is not urgent). A block GC freed joins the free pool when its erase ends
//!   ([`Ftl::free_erased_by`]), so a busy host runs the pool down; while a plane of the die
//!   has fewer erased free blocks than `gc.hard_threshold` of its blocks, the plane's backlog
//!   is placed as urgent work one victim at a time (through its next erase; the next once
//!   that erase has ended, if the die is still short), as MQSim's plane has one victim under
//!   way and its TSU serves that victim's transactions first while urgent; host reads wait
//!   for urgent work in full; and a host program whose block's erase is still in the backlog
//!   waits for the backlog through that erase (MQSim's `Stop_servicing_writes`), urgent too.
//!   (Before 2026-11-30, branch flash14, the whole backlog went at once: several victims the
//!   FTL had decided while the plane was busy, one stall of up to a second on a 980 PRO plane.) Deviations: the backlog is looked at when the drive
//!   receives a command or its timer fires (an idle drive does not collect until then); the
//!   die stands for MQSim's chip (the 980 PRO specs have one die a chip).

use std::collections::VecDeque;

use elevator_core::Nanos;

use super::flash::{Flash, Origin};
use super::ftl::{Ftl, Lpn, Ppa};
use super::spec::{GcSchedule, GcUrgency, SsdSpec};

/// What GC did, over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Times GC started on a plane that had none under way (it fell below its threshold).
    pub triggers: u64,
    /// Blocks collected (erased).
    pub victims: u64,
    /// Lazy GC (`gc.urgent = "free-blocks"`): operations placed as urgent work (a plane of the
    /// die short of erased free blocks, or a host program waiting for its block's erase).
    pub urgent_ops: u64,
    /// Lazy GC: operations placed in the plane's idle time, preemptible.
    pub idle_ops: u64,
}

/// A GC flash operation decided and not yet placed (lazy GC).
#[derive(Clone, Copy, Debug)]
enum Op {
    /// Read `bytes` of page `page` (its index in its block) of the victim.
    Read { page: u32, bytes: u64 },
    /// Program the GC program unit starting at `first`, once the reads before it are done.
    Program { first: Ppa },
    /// Erase block `block`, once the reads before it are done.
    Erase { block: u32 },
}

/// Lazy GC's state (`gc.urgent = "free-blocks"`).
#[derive(Clone, Debug, Default)]
struct Lazy {
    on: bool,
    /// Erased free blocks per plane below which the die's GC is urgent.
    hard: u32,
    /// Per plane: the operations decided and not placed, in order.
    backlog: Vec<VecDeque<Op>>,
    /// Per plane: when the data of the latest GC read placed is in the controller.
    read_done: Vec<Nanos>,
    /// Operations in all backlogs.
    queued: usize,
    /// Per plane: when the erase of the last victim placed as urgent work ends. Urgent GC
    /// serves one victim of a plane at a time, as MQSim's TSU serves the GC transactions of
    /// a plane's one victim under way before its user ones; the next is placed once it ends
    /// if the die is still short of erased free blocks.
    urgent_until: Vec<Nanos>,
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
    lazy: Lazy,
    stats: GcStats,
}

/// Free blocks a plane must keep for its host and GC frontiers.
const FLOOR: u32 = 2;

impl Collector {
    /// No GC under way on any of `spec`'s planes: its units size a read's transfer and its
    /// program unit (`flash.program_pages` pages) a program's; `gc.schedule` says when a
    /// victim's work is decided and `gc.urgent` whether it is placed at once or lazily.
    pub fn new(spec: &SsdSpec) -> Collector {
        let planes = spec.planes() as usize;
        let program_bytes = u64::from(spec.flash.page_bytes) * u64::from(spec.flash.program_pages);
        let lazy = match (spec.gc.preemptible, spec.gc.urgent) {
            (false, GcUrgency::FreeBlocks) => Lazy {
                on: true,
                hard: spec.gc.hard_reserve_blocks(spec.flash.blocks_per_plane),
                backlog: vec![VecDeque::new(); planes],
                read_done: vec![Nanos::ZERO; planes],
                queued: 0,
                urgent_until: vec![Nanos::ZERO; planes],
            },
            _ => Lazy::default(),
        };
        Collector {
            victims: vec![None; planes],
            unit_bytes: u64::from(spec.ftl.unit_bytes),
            program_bytes,
            schedule: spec.gc.schedule,
            chosen: false,
            lazy,
            stats: GcStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> GcStats {
        self.stats
    }

    /// Lazy GC: place what is due at `now` on every plane with a backlog: where a plane of
    /// the die is short of erased free blocks, its next victim's work through its erase,
    /// urgent, unless the urgent victim placed before is still under way; else its next
    /// operation, if the plane has no host work under way or queued.
    pub fn run(&mut self, ftl: &mut Ftl, flash: &mut Flash, now: Nanos) {
        if self.lazy.queued == 0 {
            return;
        }
        for plane in 0..self.lazy.backlog.len() as u32 {
            if self.lazy.backlog[plane as usize].is_empty() {
                continue;
            }
            if self.urgent(ftl, flash, plane, now) {
                if self.lazy.urgent_until[plane as usize] <= now {
                    self.place_victim(ftl, flash, plane, now);
                }
            } else if flash.host_idle(plane, now) {
                self.place(ftl, flash, plane, false, 1, now);
            }
        }
    }

    /// Lazy GC: a host program on `plane` needs block `block`, whose erase is still in the
    /// backlog: place the backlog through that erase, urgent (MQSim stops servicing the
    /// plane's writes until GC frees a block).
    pub fn free_block_for_host(
        &mut self,
        ftl: &mut Ftl,
        flash: &mut Flash,
        plane: u32,
        block: u32,
        now: Nanos,
    ) {
        let (n, _) = self.through_erase(plane, Some(block));
        self.place(ftl, flash, plane, true, n, now);
    }

    /// Lazy GC, urgent: place `plane`'s backlog through its next erase (one victim's work,
    /// or what is left of it) and note when that erase ends.
    fn place_victim(&mut self, ftl: &mut Ftl, flash: &mut Flash, plane: u32, now: Nanos) {
        let (n, erase) = self.through_erase(plane, None);
        self.place(ftl, flash, plane, true, n, now);
        if let Some(block) = erase {
            self.lazy.urgent_until[plane as usize] = ftl.block_erased_at(plane, block);
        }
    }

    /// How many operations of `plane`'s backlog go up to and including the erase of `block`
    /// (any block: `None`), and that erase's block; all of them, and `None`, if there is none.
    fn through_erase(&self, plane: u32, block: Option<u32>) -> (usize, Option<u32>) {
        let backlog = &self.lazy.backlog[plane as usize];
        backlog
            .iter()
            .enumerate()
            .find_map(|(i, op)| match op {
                Op::Erase { block: b } if block.is_none() || block == Some(*b) => {
                    Some((i + 1, Some(*b)))
                }
                _ => None,
            })
            .unwrap_or((backlog.len(), None))
    }

    /// Whether `plane`'s GC is urgent at `now`: a plane of its die has fewer free blocks
    /// erased by then than the hard threshold (MQSim's `GC_is_in_urgent_mode`).
    fn urgent(&self, ftl: &Ftl, flash: &Flash, plane: u32, now: Nanos) -> bool {
        flash
            .die_planes(plane)
            .any(|p| ftl.free_erased_by(p, now) < self.lazy.hard)
    }

    /// Place up to `n` operations of `plane`'s backlog from `now`, urgent or preemptible.
    fn place(
        &mut self,
        ftl: &mut Ftl,
        flash: &mut Flash,
        plane: u32,
        urgent: bool,
        n: usize,
        now: Nanos,
    ) {
        let lazy = &mut self.lazy;
        let backlog = &mut lazy.backlog[plane as usize];
        let n = n.min(backlog.len());
        if n == 0 {
            return;
        }
        flash.set_gc_urgent(urgent);
        // Programs and erases wait for every read placed before them (a program unit holds
        // units of several victim pages).
        let mut read_done = lazy.read_done[plane as usize].max(now);
        for op in backlog.drain(..n) {
            match op {
                Op::Read { page, bytes } => {
                    read_done = read_done.max(flash.read(plane, page, bytes, now, Origin::Gc));
                }
                Op::Program { first } => {
                    let done = flash.program(plane, self.program_bytes, read_done, Origin::Gc);
                    ftl.set_programmed(first, done);
                }
                Op::Erase { block } => {
                    let done = flash.erase(plane, read_done, Origin::Gc);
                    ftl.set_erased_at(plane, block, done);
                }
            }
        }
        lazy.read_done[plane as usize] = read_done;
        lazy.queued -= n;
        if urgent {
            self.stats.urgent_ops += n as u64;
        } else {
            self.stats.idle_ops += n as u64;
        }
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
        if self.lazy.on
            && !self.lazy.backlog[plane as usize].is_empty()
            && self.lazy.urgent_until[plane as usize] <= now
            && self.urgent(ftl, flash, plane, now)
        {
            self.place_victim(ftl, flash, plane, now);
        }
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
            let lazy = &mut self.lazy;
            let read = if lazy.on {
                lazy.backlog[plane as usize].push_back(Op::Read {
                    page: in_block,
                    bytes,
                });
                lazy.queued += 1;
                now
            } else {
                flash.read(plane, in_block, bytes, now, Origin::Gc)
            };
            copied = copied.max(read);
            for &(from, lpn) in &live {
                let placed = ftl.relocate(lpn, from);
                if let Some(first) = placed.program {
                    if lazy.on {
                        lazy.backlog[plane as usize].push_back(Op::Program { first });
                        lazy.queued += 1;
                    } else {
                        let done = flash.program(plane, self.program_bytes, read, Origin::Gc);
                        ftl.set_programmed(first, done);
                    }
                }
            }
            moved += live.len();
        }
        if v.next >= v.units.len() {
            let block = v.block;
            self.victims[plane as usize] = None;
            let erased = if self.lazy.on {
                self.lazy.backlog[plane as usize].push_back(Op::Erase { block });
                self.lazy.queued += 1;
                Nanos::MAX
            } else {
                flash.erase(plane, copied, Origin::Gc)
            };
            ftl.erase(plane, block, erased);
            self.stats.victims += 1;
        }
    }
}
