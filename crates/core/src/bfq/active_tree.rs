//! A service tree's active tree as `bfq-wf2q.c` keeps it: a red-black tree of entities ordered
//! by finish time (an equal finish goes right, `bfq_insert`), balanced as Linux's
//! `lib/rbtree.c` balances it (`rb_insert_color`, `rb_erase`: the classic red-black rules,
//! a node with two children replaced by its successor), each node carrying the smallest start
//! time below it (`min_start`), refreshed only where bfq refreshes it
//! (`bfq_update_active_tree` from the node `bfq_active_insert` or `bfq_find_deepest` names).
//!
//! The shape matters because `bfq_first_active_entity` is not a search for the eligible
//! entity with the smallest finish: it walks from the root, remembers the last eligible node
//! it stood on, goes left whenever the left subtree holds an eligible start, and stops as soon
//! as it remembers one and cannot go left. So when the left child it went to is not eligible
//! and has no eligible left subtree, it returns the node above, even if that left child's
//! right subtree holds an eligible entity that finishes earlier. The kernel's choice among
//! eligible entities therefore depends on where they sit in the tree (recording
//! `tuned-budget-thinking-readers-and-writer-nr16-round2`, decision 11: the kernel serves
//! 27823, finish 1148610150, above an ineligible 27824 whose right child 27821 is eligible
//! with finish 928588397).

use super::wf2q::{Eid, Entity};

/// An entity's place in the active tree it is on (meaningless while it is on none).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Links {
    parent: Option<Eid>,
    left: Option<Eid>,
    right: Option<Eid>,
    red: bool,
    /// The smallest start time of this node and the nodes below it, as bfq last refreshed
    /// it (`entity->min_start`).
    min_start: u64,
}

/// The active entities of one service tree (`st->active`).
#[derive(Clone, Debug, Default)]
pub(super) struct ActiveTree {
    root: Option<Eid>,
    len: usize,
}

impl ActiveTree {
    /// Whether no entity is on the tree.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// The number of entities on the tree.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The root's `min_start` (`bfq_calc_vtime_jump` reads it), `None` when empty.
    pub fn min_start(&self, ents: &[Entity]) -> Option<u64> {
        self.root.map(|r| ents[r].rb.min_start)
    }

    /// `bfq_first_active_entity`: from the root, remember each eligible node stood on (start
    /// at most `vtime`), go left while the left child's `min_start` is at most `vtime`, and
    /// stop at the first node where one is remembered and the walk cannot go left; with none
    /// remembered, go right.
    pub fn first_eligible(&self, ents: &[Entity], vtime: u64) -> Option<Eid> {
        let mut first = None;
        let mut node = self.root;
        while let Some(n) = node {
            let mut at = n;
            loop {
                if ents[at].start <= vtime {
                    first = Some(at);
                }
                match ents[at].rb.left {
                    Some(l) if ents[l].rb.min_start <= vtime => at = l,
                    _ => break,
                }
            }
            if first.is_some() {
                break;
            }
            node = ents[at].rb.right;
        }
        first
    }

    /// `bfq_active_insert`'s tree part: `bfq_insert` (descend left past a larger finish,
    /// right otherwise), `rb_insert_color`, then `bfq_update_active_tree` from the new node's
    /// left child, else its right child, else itself.
    pub fn insert(&mut self, ents: &mut [Entity], e: Eid) {
        let f = ents[e].finish;
        let mut parent = None;
        let mut cur = self.root;
        let mut go_left = false;
        while let Some(c) = cur {
            parent = Some(c);
            go_left = ents[c].finish > f;
            cur = if go_left {
                ents[c].rb.left
            } else {
                ents[c].rb.right
            };
        }
        ents[e].rb = Links {
            parent,
            left: None,
            right: None,
            red: true,
            min_start: ents[e].start,
        };
        match parent {
            None => self.root = Some(e),
            Some(p) if go_left => ents[p].rb.left = Some(e),
            Some(p) => ents[p].rb.right = Some(e),
        }
        self.len += 1;
        self.insert_fixup(ents, e);
        let from = ents[e].rb.left.or(ents[e].rb.right).unwrap_or(e);
        update_active_tree(ents, from);
    }

    /// `bfq_active_extract`'s tree part: `bfq_find_deepest`, `rb_erase`, then
    /// `bfq_update_active_tree` from the deepest node found, if any.
    pub fn extract(&mut self, ents: &mut [Entity], e: Eid) {
        let deepest = find_deepest(ents, e);
        self.erase(ents, e);
        self.len -= 1;
        if let Some(d) = deepest {
            update_active_tree(ents, d);
        }
    }

    /// The entities in order of finish (ties in insertion order).
    #[cfg(test)]
    pub fn in_order(&self, ents: &[Entity]) -> Vec<Eid> {
        let mut out = Vec::new();
        let mut cur = self.root.map(|r| leftmost(ents, r));
        while let Some(c) = cur {
            out.push(c);
            cur = next(ents, c);
        }
        out
    }

    /// (entity, its left child, its right child, red) of every node, in order: the shape.
    #[cfg(test)]
    pub fn shape(&self, ents: &[Entity]) -> Vec<(Eid, Option<Eid>, Option<Eid>, bool)> {
        self.in_order(ents)
            .into_iter()
            .map(|e| (e, ents[e].rb.left, ents[e].rb.right, ents[e].rb.red))
            .collect()
    }

    fn rotate_left(&mut self, ents: &mut [Entity], x: Eid) {
        let y = ents[x].rb.right.expect("a right child to rotate");
        let yl = ents[y].rb.left;
        ents[x].rb.right = yl;
        if let Some(b) = yl {
            ents[b].rb.parent = Some(x);
        }
        self.replace_child(ents, x, Some(y));
        ents[y].rb.left = Some(x);
        ents[x].rb.parent = Some(y);
    }

    fn rotate_right(&mut self, ents: &mut [Entity], x: Eid) {
        let y = ents[x].rb.left.expect("a left child to rotate");
        let yr = ents[y].rb.right;
        ents[x].rb.left = yr;
        if let Some(b) = yr {
            ents[b].rb.parent = Some(x);
        }
        self.replace_child(ents, x, Some(y));
        ents[y].rb.right = Some(x);
        ents[x].rb.parent = Some(y);
    }

    /// Put `new` where `old` hangs from its parent (or at the root).
    fn replace_child(&mut self, ents: &mut [Entity], old: Eid, new: Option<Eid>) {
        let p = ents[old].rb.parent;
        if let Some(n) = new {
            ents[n].rb.parent = p;
        }
        match p {
            None => self.root = new,
            Some(p) if ents[p].rb.left == Some(old) => ents[p].rb.left = new,
            Some(p) => ents[p].rb.right = new,
        }
    }

    /// `rb_insert_color`.
    fn insert_fixup(&mut self, ents: &mut [Entity], mut z: Eid) {
        while let Some(p) = ents[z].rb.parent.filter(|&p| ents[p].rb.red) {
            let g = ents[p].rb.parent.expect("a red node has a parent");
            let parent_is_left = ents[g].rb.left == Some(p);
            let uncle = if parent_is_left {
                ents[g].rb.right
            } else {
                ents[g].rb.left
            };
            if let Some(u) = uncle.filter(|&u| ents[u].rb.red) {
                ents[p].rb.red = false;
                ents[u].rb.red = false;
                ents[g].rb.red = true;
                z = g;
                continue;
            }
            if parent_is_left {
                let p = if ents[p].rb.right == Some(z) {
                    self.rotate_left(ents, p);
                    z
                } else {
                    p
                };
                ents[p].rb.red = false;
                ents[g].rb.red = true;
                self.rotate_right(ents, g);
            } else {
                let p = if ents[p].rb.left == Some(z) {
                    self.rotate_right(ents, p);
                    z
                } else {
                    p
                };
                ents[p].rb.red = false;
                ents[g].rb.red = true;
                self.rotate_left(ents, g);
            }
            break;
        }
        let root = self.root.expect("not empty after an insert");
        ents[root].rb.red = false;
    }

    /// `rb_erase`: a node with two children is replaced by its successor, which takes its
    /// colour; the tree is rebalanced from where a black node left.
    fn erase(&mut self, ents: &mut [Entity], z: Eid) {
        let (zl, zr) = (ents[z].rb.left, ents[z].rb.right);
        let (x, xp, removed_red) = match (zl, zr) {
            (None, _) | (_, None) => {
                let x = zl.or(zr);
                let xp = ents[z].rb.parent;
                let red = ents[z].rb.red;
                self.replace_child(ents, z, x);
                (x, xp, red)
            }
            (Some(l), Some(r)) => {
                let y = leftmost(ents, r);
                let y_red = ents[y].rb.red;
                let x = ents[y].rb.right;
                let xp = if y == r {
                    y
                } else {
                    let yp = ents[y].rb.parent.expect("below z");
                    ents[yp].rb.left = x;
                    if let Some(x) = x {
                        ents[x].rb.parent = Some(yp);
                    }
                    ents[y].rb.right = Some(r);
                    ents[r].rb.parent = Some(y);
                    yp
                };
                self.replace_child(ents, z, Some(y));
                ents[y].rb.left = Some(l);
                ents[l].rb.parent = Some(y);
                ents[y].rb.red = ents[z].rb.red;
                (x, Some(xp), y_red)
            }
        };
        ents[z].rb = Links::default();
        if !removed_red {
            self.erase_fixup(ents, x, xp);
        }
    }

    /// `____rb_erase_color` (a red node left in `x`'s place is simply painted black).
    fn erase_fixup(&mut self, ents: &mut [Entity], mut x: Option<Eid>, mut xp: Option<Eid>) {
        let red = |ents: &[Entity], n: Option<Eid>| n.is_some_and(|n| ents[n].rb.red);
        while x != self.root && !red(ents, x) {
            let p = xp.expect("a non-root node has a parent");
            if ents[p].rb.left == x {
                let mut w = ents[p].rb.right.expect("a black-height sibling");
                if ents[w].rb.red {
                    ents[w].rb.red = false;
                    ents[p].rb.red = true;
                    self.rotate_left(ents, p);
                    w = ents[p].rb.right.expect("sibling");
                }
                if !red(ents, ents[w].rb.left) && !red(ents, ents[w].rb.right) {
                    ents[w].rb.red = true;
                    x = Some(p);
                    xp = ents[p].rb.parent;
                } else {
                    if !red(ents, ents[w].rb.right) {
                        let wl = ents[w].rb.left.expect("red");
                        ents[wl].rb.red = false;
                        ents[w].rb.red = true;
                        self.rotate_right(ents, w);
                        w = ents[p].rb.right.expect("sibling");
                    }
                    ents[w].rb.red = ents[p].rb.red;
                    ents[p].rb.red = false;
                    let wr = ents[w].rb.right.expect("red");
                    ents[wr].rb.red = false;
                    self.rotate_left(ents, p);
                    x = self.root;
                    xp = None;
                }
            } else {
                let mut w = ents[p].rb.left.expect("a black-height sibling");
                if ents[w].rb.red {
                    ents[w].rb.red = false;
                    ents[p].rb.red = true;
                    self.rotate_right(ents, p);
                    w = ents[p].rb.left.expect("sibling");
                }
                if !red(ents, ents[w].rb.left) && !red(ents, ents[w].rb.right) {
                    ents[w].rb.red = true;
                    x = Some(p);
                    xp = ents[p].rb.parent;
                } else {
                    if !red(ents, ents[w].rb.left) {
                        let wr = ents[w].rb.right.expect("red");
                        ents[wr].rb.red = false;
                        ents[w].rb.red = true;
                        self.rotate_left(ents, w);
                        w = ents[p].rb.left.expect("sibling");
                    }
                    ents[w].rb.red = ents[p].rb.red;
                    ents[p].rb.red = false;
                    let wl = ents[w].rb.left.expect("red");
                    ents[wl].rb.red = false;
                    self.rotate_right(ents, p);
                    x = self.root;
                    xp = None;
                }
            }
        }
        if let Some(x) = x {
            ents[x].rb.red = false;
        }
    }
}

/// The leftmost node below `n` (itself included).
fn leftmost(ents: &[Entity], mut n: Eid) -> Eid {
    while let Some(l) = ents[n].rb.left {
        n = l;
    }
    n
}

/// `rb_next`: the node after `n` in order.
fn next(ents: &[Entity], n: Eid) -> Option<Eid> {
    if let Some(r) = ents[n].rb.right {
        return Some(leftmost(ents, r));
    }
    let mut n = n;
    while let Some(p) = ents[n].rb.parent {
        if ents[p].rb.left == Some(n) {
            return Some(p);
        }
        n = p;
    }
    None
}

/// `bfq_find_deepest`: the deepest node whose `min_start` may change when `n` is erased.
fn find_deepest(ents: &[Entity], n: Eid) -> Option<Eid> {
    let l = &ents[n].rb;
    match (l.left, l.right) {
        (None, None) => l.parent,
        (Some(left), None) => Some(left),
        (None, Some(right)) => Some(right),
        (Some(_), Some(_)) => {
            let d = next(ents, n).expect("a node with a right child has a successor");
            match ents[d].rb.right {
                Some(r) => Some(r),
                None if ents[d].rb.parent != Some(n) => ents[d].rb.parent,
                None => Some(d),
            }
        }
    }
}

/// `bfq_update_active_node`: `n`'s `min_start` from its start and its children's.
fn update_active_node(ents: &mut [Entity], n: Eid) {
    let mut m = ents[n].start;
    for c in [ents[n].rb.right, ents[n].rb.left].into_iter().flatten() {
        m = m.min(ents[c].rb.min_start);
    }
    ents[n].rb.min_start = m;
}

/// `bfq_update_active_tree`: refresh `n`, then up to the root each parent and the sibling
/// of the node come from (only those: a stale `min_start` elsewhere stays, as in the kernel).
fn update_active_tree(ents: &mut [Entity], mut n: Eid) {
    loop {
        update_active_node(ents, n);
        let Some(p) = ents[n].rb.parent else {
            return;
        };
        match (ents[p].rb.left, ents[p].rb.right) {
            (Some(l), Some(r)) if l == n => update_active_node(ents, r),
            (Some(l), _) => update_active_node(ents, l),
            _ => {}
        }
        n = p;
    }
}
