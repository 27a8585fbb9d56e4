//! Garbage collection: greedy victim choice, relocation of valid units, erase.
//!
//! Follows MQSim's GC (`GC_and_WL_Unit_Page_Level.cpp`) with the greedy policy
//! (`GC_Block_Selection_Policy = GREEDY`): when a plane's free blocks fall below the
//! threshold, the full block with the fewest valid units is chosen, its valid units are read
//! and programmed into the plane's GC frontier (over the channel: no copyback), and the block
//! is erased. Deviations: the work is placed on the plane's timelines at once (it cannot be
//! reordered later, except that host reads preempt it when the spec says so, see
//! [`flash`](super::flash)); no wear levelling; one victim at a time until the plane is back
//! at its threshold, at most one plane's worth of blocks per trigger.

use elevator_core::Nanos;

use super::flash::{Flash, Origin};
use super::ftl::Ftl;

/// What GC did, over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Times a plane fell below its threshold.
    pub triggers: u64,
    /// Blocks collected.
    pub victims: u64,
}

/// Collect blocks on `plane` until it has `ftl.reserve()` free blocks again, starting at
/// `now`. `unit_bytes` and `page_bytes` size the transfers.
pub fn collect(
    ftl: &mut Ftl,
    flash: &mut Flash,
    plane: u32,
    now: Nanos,
    unit_bytes: u64,
    page_bytes: u64,
    stats: &mut GcStats,
) {
    stats.triggers += 1;
    for _ in 0..ftl.blocks_per_plane() {
        if ftl.free_blocks(plane) >= ftl.reserve() {
            break;
        }
        let Some(victim) = ftl.greedy_victim(plane) else {
            break;
        };
        stats.victims += 1;
        let units = ftl.valid_units(plane, victim);
        let mut copied = now;
        let mut i = 0;
        while i < units.len() {
            // One read per victim page that holds valid units.
            let page = ftl.page_of(units[i].0);
            let n = units[i..]
                .iter()
                .take_while(|(p, _)| ftl.page_of(*p) == page)
                .count();
            let in_block = ftl.page_in_block(units[i].0);
            let read = flash.read(plane, in_block, n as u64 * unit_bytes, now, Origin::Gc);
            copied = copied.max(read);
            for &(from, lpn) in &units[i..i + n] {
                let placed = ftl.relocate(lpn, from);
                if let Some(first) = placed.page_full {
                    let done = flash.program(plane, page_bytes, read, Origin::Gc);
                    ftl.set_programmed(first, done);
                }
            }
            i += n;
        }
        flash.erase(plane, copied, Origin::Gc);
        ftl.erase(plane, victim);
    }
}
