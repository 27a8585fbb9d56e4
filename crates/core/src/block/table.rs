//! The layer's requests by id: a slab whose freed slots are taken again first, so a new
//! request lands where the last completed one was (warm in the cache), with a small index
//! from id to slot. A map of whole requests by id touched a cold bucket of a table of every
//! request at each insertion, dispatch and completion.

use rustc_hash::FxHashMap;

/// Values by `u64` id, stored in reused slots.
pub(super) struct Table<V> {
    slots: Vec<Option<V>>,
    free: Vec<u32>,
    index: FxHashMap<u64, u32>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table {
            slots: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
        }
    }
}

impl<V> Table<V> {
    pub(super) fn insert(&mut self, id: u64, value: V) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(value);
                s
            }
            None => {
                self.slots.push(Some(value));
                (self.slots.len() - 1) as u32
            }
        };
        if let Some(old) = self.index.insert(id, slot) {
            self.slots[old as usize] = None;
            self.free.push(old);
        }
    }

    pub(super) fn get(&self, id: &u64) -> Option<&V> {
        let s = *self.index.get(id)?;
        self.slots[s as usize].as_ref()
    }

    pub(super) fn get_mut(&mut self, id: &u64) -> Option<&mut V> {
        let s = *self.index.get(id)?;
        self.slots[s as usize].as_mut()
    }

    pub(super) fn remove(&mut self, id: &u64) -> Option<V> {
        let s = self.index.remove(id)?;
        self.free.push(s);
        self.slots[s as usize].take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_by_id_and_a_freed_slot_is_taken_again_first() {
        let mut t: Table<&str> = Table::default();
        t.insert(10, "a");
        t.insert(11, "b");
        assert_eq!(t.remove(&10), Some("a"));
        assert_eq!(t.get(&10), None);
        t.insert(12, "c");
        assert_eq!(t.slots.len(), 2, "12 took 10's slot");
        assert_eq!((t.get(&11), t.get(&12)), (Some(&"b"), Some(&"c")));
        *t.get_mut(&12).expect("held") = "d";
        assert_eq!(t.remove(&12), Some("d"));
        assert_eq!(t.remove(&12), None);
        t.insert(11, "e");
        assert_eq!(
            t.get(&11),
            Some(&"e"),
            "an id inserted again replaces its value"
        );
        assert_eq!(t.remove(&11), Some("e"));
        assert_eq!(t.get(&11), None);
    }
}
