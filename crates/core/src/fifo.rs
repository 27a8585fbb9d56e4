//! Several FIFOs of queued items over one slab: the elevators' `fifo_list`s and dispatch
//! queues.
//!
//! Each item sits in a slot of the slab and in exactly one list, linked to its neighbours
//! through the slots (an intrusive doubly linked list, as the kernel's `list_head` in a
//! request). A slot number stays valid while its item is queued, so a scheduler can also
//! index the item from other structures (a sector-sorted tree) and take it out of the middle
//! of its FIFO in `O(1)`. Freed slots are reused, so a queue that stays at about the same
//! size allocates nothing.
//!
//! The caller names the list of a slot it removes (it knows it: the request's direction,
//! level or domain), so a slot need not record its list and [`Fifos::append`] moves a whole
//! list in `O(1)`.

/// "No slot" in the links.
const NIL: u32 = u32::MAX;

/// A queued item and its links.
#[derive(Clone, Debug)]
struct Node<T> {
    item: T,
    prev: u32,
    next: u32,
}

/// One list's ends.
#[derive(Clone, Copy, Debug)]
struct Ends {
    head: u32,
    tail: u32,
}

impl Ends {
    const EMPTY: Ends = Ends {
        head: NIL,
        tail: NIL,
    };
}

/// A fixed number of FIFOs of `T` over one slab. See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct Fifos<T> {
    slots: Vec<Option<Node<T>>>,
    free: Vec<u32>,
    lists: Vec<Ends>,
}

impl<T> Fifos<T> {
    /// `lists` empty FIFOs, numbered from 0.
    pub(crate) fn new(lists: usize) -> Fifos<T> {
        Fifos {
            slots: Vec::new(),
            free: Vec::new(),
            lists: vec![Ends::EMPTY; lists],
        }
    }

    /// One more empty FIFO; its number.
    pub(crate) fn add_list(&mut self) -> usize {
        self.lists.push(Ends::EMPTY);
        self.lists.len() - 1
    }

    fn node(&self, slot: u32) -> &Node<T> {
        self.slots[slot as usize]
            .as_ref()
            .expect("fifo: a linked slot is occupied")
    }

    fn node_mut(&mut self, slot: u32) -> &mut Node<T> {
        self.slots[slot as usize]
            .as_mut()
            .expect("fifo: a linked slot is occupied")
    }

    /// Queue `item` at the tail of `list`; its slot.
    pub(crate) fn push_back(&mut self, list: usize, item: T) -> u32 {
        let tail = self.lists[list].tail;
        let node = Node {
            item,
            prev: tail,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(node);
                s
            }
            None => {
                self.slots.push(Some(node));
                (self.slots.len() - 1) as u32
            }
        };
        if tail == NIL {
            self.lists[list].head = slot;
        } else {
            self.node_mut(tail).next = slot;
        }
        self.lists[list].tail = slot;
        slot
    }

    /// Take the item in `slot` out of `list` (the list it is in) and hand it back.
    pub(crate) fn remove(&mut self, list: usize, slot: u32) -> T {
        let node = self.slots[slot as usize]
            .take()
            .expect("fifo: a removed slot is occupied");
        if node.prev == NIL {
            debug_assert_eq!(self.lists[list].head, slot, "fifo: slot in another list");
            self.lists[list].head = node.next;
        } else {
            self.node_mut(node.prev).next = node.next;
        }
        if node.next == NIL {
            debug_assert_eq!(self.lists[list].tail, slot, "fifo: slot in another list");
            self.lists[list].tail = node.prev;
        } else {
            self.node_mut(node.next).prev = node.prev;
        }
        self.free.push(slot);
        node.item
    }

    /// Take the oldest item of `list`, if any.
    pub(crate) fn pop_front(&mut self, list: usize) -> Option<T> {
        let head = self.front(list)?;
        Some(self.remove(list, head))
    }

    /// Move every item of `from` to the tail of `to`, in order (slots unchanged).
    pub(crate) fn append(&mut self, from: usize, to: usize) {
        let moved = std::mem::replace(&mut self.lists[from], Ends::EMPTY);
        if moved.head == NIL {
            return;
        }
        let tail = self.lists[to].tail;
        if tail == NIL {
            self.lists[to] = moved;
            return;
        }
        self.node_mut(tail).next = moved.head;
        self.node_mut(moved.head).prev = tail;
        self.lists[to].tail = moved.tail;
    }

    /// The slot of the oldest item of `list`, if any.
    pub(crate) fn front(&self, list: usize) -> Option<u32> {
        Some(self.lists[list].head).filter(|&s| s != NIL)
    }

    /// The slot of the newest item of `list`, if any.
    pub(crate) fn back(&self, list: usize) -> Option<u32> {
        Some(self.lists[list].tail).filter(|&s| s != NIL)
    }

    /// The slot queued just before `slot` in its list (older), if any.
    pub(crate) fn prev(&self, slot: u32) -> Option<u32> {
        Some(self.node(slot).prev).filter(|&s| s != NIL)
    }

    /// How many items are queued, over all lists.
    pub(crate) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether `list` is empty.
    pub(crate) fn is_empty(&self, list: usize) -> bool {
        self.lists[list].head == NIL
    }

    /// The item in `slot` (queued).
    pub(crate) fn get(&self, slot: u32) -> &T {
        &self.node(slot).item
    }

    /// The item in `slot` (queued), to change in place.
    pub(crate) fn get_mut(&mut self, slot: u32) -> &mut T {
        &mut self.node_mut(slot).item
    }

    /// Exchange the items of two queued slots, each keeping its place in its list: the
    /// item of `a` takes `b`'s place and the other way round (the kernel's `list_move` of
    /// one request to another's position, that one then removed, is a swap and a removal).
    pub(crate) fn swap_items(&mut self, a: u32, b: u32) {
        if a == b {
            return;
        }
        let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
        let (left, right) = self.slots.split_at_mut(hi);
        let (x, y) = (left[lo].as_mut(), right[0].as_mut());
        let (x, y) = (
            x.expect("fifo: a swapped slot is occupied"),
            y.expect("fifo: a swapped slot is occupied"),
        );
        std::mem::swap(&mut x.item, &mut y.item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The items of `list`, oldest first, walked from the newest through the `prev` links
    /// (the tests pop from the front to check the `next` links).
    fn items(f: &Fifos<u32>, list: usize) -> Vec<u32> {
        let mut back = Vec::new();
        let mut s = f.back(list);
        while let Some(slot) = s {
            back.push(*f.get(slot));
            s = f.prev(slot);
        }
        back.reverse();
        back
    }

    #[test]
    fn items_leave_in_arrival_order_from_the_front_or_the_middle() {
        let mut f = Fifos::new(2);
        let a = f.push_back(0, 1);
        let b = f.push_back(0, 2);
        f.push_back(1, 10);
        let c = f.push_back(0, 3);
        assert_eq!(items(&f, 0), vec![1, 2, 3]);
        assert_eq!(f.remove(0, b), 2);
        assert_eq!(items(&f, 0), vec![1, 3]);
        assert_eq!(f.front(0), Some(a));
        assert_eq!(f.back(0), Some(c));
        *f.get_mut(c) = 30;
        assert_eq!(f.pop_front(0), Some(1));
        assert_eq!(f.pop_front(0), Some(30));
        assert_eq!(f.pop_front(0), None);
        assert!(f.is_empty(0) && !f.is_empty(1));
        assert_eq!(f.len(), 1);
        assert_eq!(items(&f, 1), vec![10]);
    }

    #[test]
    fn swapped_items_take_each_others_places() {
        let mut f = Fifos::new(1);
        let a = f.push_back(0, 10);
        f.push_back(0, 20);
        let c = f.push_back(0, 30);
        f.swap_items(c, a);
        assert_eq!(items(&f, 0), [30, 20, 10]);
        f.remove(0, c);
        assert_eq!(items(&f, 0), [30, 20]);
    }

    #[test]
    fn freed_slots_are_reused() {
        let mut f = Fifos::new(1);
        let a = f.push_back(0, 1);
        f.remove(0, a);
        assert_eq!(f.len(), 0);
        assert_eq!(f.push_back(0, 2), a);
        assert_eq!(f.slots.len(), 1);
    }

    #[test]
    fn an_added_list_starts_empty_and_holds_its_own_items() {
        let mut f = Fifos::new(1);
        f.push_back(0, 1);
        let l = f.add_list();
        assert_eq!(l, 1);
        assert!(f.is_empty(l));
        f.push_back(l, 2);
        assert_eq!((items(&f, 0), items(&f, l)), (vec![1], vec![2]));
    }

    #[test]
    fn append_moves_a_whole_list_behind_another_in_order() {
        let mut f = Fifos::new(2);
        for i in 0..3 {
            f.push_back(1, i);
        }
        f.append(1, 0);
        assert!(f.is_empty(1));
        assert_eq!(items(&f, 0), vec![0, 1, 2]);
        f.push_back(1, 7);
        f.push_back(1, 8);
        f.append(1, 0);
        f.append(1, 0);
        assert_eq!(items(&f, 0), vec![0, 1, 2, 7, 8]);
        assert_eq!(f.pop_front(0), Some(0));
        let last = f.back(0).unwrap();
        assert_eq!(f.remove(0, last), 8);
        assert_eq!(items(&f, 0), vec![1, 2, 7]);
    }
}
