//! The cached mapping table (CMT): which mapping entries are in the controller's DRAM.
//!
//! Follows MQSim's CMT (`Address_Mapping_Unit_Page_Level.cpp`, DFTL-style entry cache): a
//! miss reads the entry's translation page from flash before the data access; a dirty entry
//! written back on eviction programs its translation page. Deviations: CLOCK instead of LRU
//! (O(1), close to LRU); translation pages live at fixed places (plane = translation page
//! number mod planes) and take no part in GC.

use rustc_hash::FxHashMap;

/// What an access to the CMT did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The entry was cached.
    pub hit: bool,
    /// A dirty entry of this translation page was evicted and must be written back.
    pub write_back: Option<u32>,
}

/// A CLOCK cache of mapping entries.
#[derive(Clone, Debug)]
pub struct Cmt {
    capacity: usize,
    entries_per_page: u32,
    map: FxHashMap<u32, usize>,
    /// (lpn, referenced, dirty) per slot.
    slots: Vec<(u32, bool, bool)>,
    hand: usize,
}

impl Cmt {
    /// A cache of `capacity` entries (0: every entry always cached) of `entries_per_page`
    /// entries per translation page.
    pub fn new(capacity: u32, entries_per_page: u32) -> Cmt {
        Cmt {
            capacity: capacity as usize,
            entries_per_page: entries_per_page.max(1),
            map: FxHashMap::default(),
            slots: Vec::new(),
            hand: 0,
        }
    }

    /// Whether every entry is always cached (no accesses to make).
    pub fn holds_all(&self) -> bool {
        self.capacity == 0
    }

    /// The translation page holding `lpn`'s entry.
    pub fn page_of(&self, lpn: u32) -> u32 {
        lpn / self.entries_per_page
    }

    /// Look `lpn` up (and mark it dirty for a write), loading it on a miss.
    pub fn access(&mut self, lpn: u32, dirty: bool) -> Access {
        if self.capacity == 0 {
            return Access {
                hit: true,
                write_back: None,
            };
        }
        if let Some(&i) = self.map.get(&lpn) {
            let s = &mut self.slots[i];
            s.1 = true;
            s.2 |= dirty;
            return Access {
                hit: true,
                write_back: None,
            };
        }
        if self.slots.len() < self.capacity {
            self.map.insert(lpn, self.slots.len());
            self.slots.push((lpn, true, dirty));
            return Access {
                hit: false,
                write_back: None,
            };
        }
        loop {
            let i = self.hand;
            self.hand = (self.hand + 1) % self.slots.len();
            let s = &mut self.slots[i];
            if s.1 {
                s.1 = false;
                continue;
            }
            let (old, _, was_dirty) = *s;
            *s = (lpn, true, dirty);
            self.map.remove(&old);
            self.map.insert(lpn, i);
            return Access {
                hit: false,
                write_back: was_dirty.then(|| old / self.entries_per_page),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cmt;

    /// CLOCK: the hand sweeps the slots in turn, clearing the referenced bit of each it
    /// passes and evicting the first without it, then stays past the slot it filled. Two
    /// slots holding 1 and 2: 3 clears both and evicts 1 (slot 0); 4 then evicts 2 (slot 1,
    /// where the hand stands), not 3; so 3 is still cached and 2 is not. A dirty entry
    /// evicted names its translation page (entry / entries per page).
    #[test]
    fn the_clock_hand_moves_on_past_the_slot_it_filled() {
        let mut cmt = Cmt::new(2, 10);
        assert!(!cmt.access(1, false).hit);
        assert!(!cmt.access(12, true).hit);
        assert_eq!(cmt.access(3, false).write_back, None);
        assert_eq!(cmt.access(40, false).write_back, Some(1));
        assert!(cmt.access(3, false).hit);
        assert!(!cmt.access(12, false).hit);
    }
}
