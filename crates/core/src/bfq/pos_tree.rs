//! The per-group position tree: queues keyed by the sector of their next request, in a
//! red-black tree balanced as Linux's `lib/rbtree.c` balances it (insertion and erasure by
//! the classic red-black rules, erasure of a node with two children through its successor).
//! Its shape matters: `bfqq_find_close` looks at the last node of the search path for a
//! sector, then at one neighbour of it, so which queue is found depends on where the nodes
//! sit, not only on their keys.

/// A node's index in the arena.
type Idx = u32;

#[derive(Clone, Debug)]
struct Node {
    key: u64,
    queue: usize,
    parent: Option<Idx>,
    left: Option<Idx>,
    right: Option<Idx>,
    red: bool,
}

/// Where a lookup ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// A node holds the key: its queue.
    Found(usize),
    /// No node holds it: the (key, queue) of the last node on the search path, if any.
    Parent(Option<(u64, usize)>),
}

/// A red-black tree of (sector, queue) with unique sectors.
#[derive(Clone, Debug, Default)]
pub(super) struct PosTree {
    nodes: Vec<Node>,
    free: Vec<Idx>,
    root: Option<Idx>,
}

impl PosTree {
    fn n(&self, i: Idx) -> &Node {
        &self.nodes[i as usize]
    }

    fn m(&mut self, i: Idx) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    fn is_red(&self, i: Option<Idx>) -> bool {
        i.is_some_and(|i| self.n(i).red)
    }

    /// Search for `key`: the node holding it, or the last node visited.
    fn search(&self, key: u64) -> (Option<Idx>, Option<Idx>) {
        let mut parent = None;
        let mut cur = self.root;
        while let Some(c) = cur {
            let k = self.n(c).key;
            if key == k {
                return (Some(c), parent);
            }
            parent = Some(c);
            cur = if key < k {
                self.n(c).left
            } else {
                self.n(c).right
            };
        }
        (None, parent)
    }

    /// Look `key` up as `bfq_rq_pos_tree_lookup` does.
    pub fn lookup(&self, key: u64) -> Lookup {
        match self.search(key) {
            (Some(n), _) => Lookup::Found(self.n(n).queue),
            (None, p) => Lookup::Parent(p.map(|p| (self.n(p).key, self.n(p).queue))),
        }
    }

    /// The (key, queue) next after `key` in order (`rb_next`), `key` being in the tree.
    pub fn next_after(&self, key: u64) -> Option<(u64, usize)> {
        let (n, _) = self.search(key);
        let mut i = n?;
        let found = if let Some(mut r) = self.n(i).right {
            while let Some(l) = self.n(r).left {
                r = l;
            }
            Some(r)
        } else {
            loop {
                match self.n(i).parent {
                    Some(p) if self.n(p).right == Some(i) => i = p,
                    p => break p,
                }
            }
        };
        found.map(|f| (self.n(f).key, self.n(f).queue))
    }

    /// The (key, queue) just before `key` in order (`rb_prev`), `key` being in the tree.
    pub fn prev_before(&self, key: u64) -> Option<(u64, usize)> {
        let (n, _) = self.search(key);
        let mut i = n?;
        let found = if let Some(mut l) = self.n(i).left {
            while let Some(r) = self.n(l).right {
                l = r;
            }
            Some(l)
        } else {
            loop {
                match self.n(i).parent {
                    Some(p) if self.n(p).left == Some(i) => i = p,
                    p => break p,
                }
            }
        };
        found.map(|f| (self.n(f).key, self.n(f).queue))
    }

    /// Insert `queue` under `key`; false (and nothing changes) if `key` is taken, as the
    /// kernel leaves a queue out of the tree when another one's next request starts there.
    pub fn insert(&mut self, key: u64, queue: usize) -> bool {
        let (found, parent) = self.search(key);
        if found.is_some() {
            return false;
        }
        let node = Node {
            key,
            queue,
            parent,
            left: None,
            right: None,
            red: true,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as Idx
            }
        };
        match parent {
            None => self.root = Some(i),
            Some(p) if key < self.n(p).key => self.m(p).left = Some(i),
            Some(p) => self.m(p).right = Some(i),
        }
        self.insert_fixup(i);
        true
    }

    fn rotate_left(&mut self, x: Idx) {
        let y = self.n(x).right.expect("a right child to rotate");
        let yl = self.n(y).left;
        self.m(x).right = yl;
        if let Some(b) = yl {
            self.m(b).parent = Some(x);
        }
        self.replace_child(x, Some(y));
        self.m(y).left = Some(x);
        self.m(x).parent = Some(y);
    }

    fn rotate_right(&mut self, x: Idx) {
        let y = self.n(x).left.expect("a left child to rotate");
        let yr = self.n(y).right;
        self.m(x).left = yr;
        if let Some(b) = yr {
            self.m(b).parent = Some(x);
        }
        self.replace_child(x, Some(y));
        self.m(y).right = Some(x);
        self.m(x).parent = Some(y);
    }

    /// Put `new` where `old` hangs from its parent (or at the root).
    fn replace_child(&mut self, old: Idx, new: Option<Idx>) {
        let p = self.n(old).parent;
        if let Some(n) = new {
            self.m(n).parent = p;
        }
        match p {
            None => self.root = new,
            Some(p) if self.n(p).left == Some(old) => self.m(p).left = new,
            Some(p) => self.m(p).right = new,
        }
    }

    fn insert_fixup(&mut self, mut z: Idx) {
        while let Some(p) = self.n(z).parent.filter(|&p| self.n(p).red) {
            let g = self.n(p).parent.expect("a red node has a parent");
            let parent_is_left = self.n(g).left == Some(p);
            let uncle = if parent_is_left {
                self.n(g).right
            } else {
                self.n(g).left
            };
            if self.is_red(uncle) {
                self.m(p).red = false;
                self.m(uncle.expect("red")).red = false;
                self.m(g).red = true;
                z = g;
                continue;
            }
            if parent_is_left {
                let p = if self.n(p).right == Some(z) {
                    self.rotate_left(p);
                    z
                } else {
                    p
                };
                self.m(p).red = false;
                self.m(g).red = true;
                self.rotate_right(g);
            } else {
                let p = if self.n(p).left == Some(z) {
                    self.rotate_right(p);
                    z
                } else {
                    p
                };
                self.m(p).red = false;
                self.m(g).red = true;
                self.rotate_left(g);
            }
            break;
        }
        let root = self.root.expect("not empty after an insert");
        self.m(root).red = false;
    }

    /// Remove the node holding `key`, if any.
    pub fn remove(&mut self, key: u64) {
        let (Some(z), _) = self.search(key) else {
            return;
        };
        let (zl, zr) = (self.n(z).left, self.n(z).right);
        // `x` takes the place of the node that leaves its position; `xp` is x's parent then.
        let (x, xp, removed_red) = match (zl, zr) {
            (None, _) | (_, None) => {
                let x = zl.or(zr);
                let xp = self.n(z).parent;
                let red = self.n(z).red;
                self.replace_child(z, x);
                (x, xp, red)
            }
            (Some(l), Some(r)) => {
                let mut y = r;
                while let Some(yl) = self.n(y).left {
                    y = yl;
                }
                let y_red = self.n(y).red;
                let x = self.n(y).right;
                let xp = if y == r {
                    y
                } else {
                    let yp = self.n(y).parent.expect("below z");
                    self.m(yp).left = x;
                    if let Some(x) = x {
                        self.m(x).parent = Some(yp);
                    }
                    self.m(y).right = Some(r);
                    self.m(r).parent = Some(y);
                    yp
                };
                self.replace_child(z, Some(y));
                self.m(y).left = Some(l);
                self.m(l).parent = Some(y);
                let z_red = self.n(z).red;
                self.m(y).red = z_red;
                (x, Some(xp), y_red)
            }
        };
        self.free.push(z);
        if !removed_red {
            self.erase_fixup(x, xp);
        }
    }

    fn erase_fixup(&mut self, mut x: Option<Idx>, mut xp: Option<Idx>) {
        while x != self.root && !self.is_red(x) {
            let p = xp.expect("a non-root node has a parent");
            if self.n(p).left == x {
                let mut w = self.n(p).right.expect("a black-height sibling");
                if self.n(w).red {
                    self.m(w).red = false;
                    self.m(p).red = true;
                    self.rotate_left(p);
                    w = self.n(p).right.expect("sibling");
                }
                if !self.is_red(self.n(w).left) && !self.is_red(self.n(w).right) {
                    self.m(w).red = true;
                    x = Some(p);
                    xp = self.n(p).parent;
                } else {
                    if !self.is_red(self.n(w).right) {
                        let wl = self.n(w).left.expect("red");
                        self.m(wl).red = false;
                        self.m(w).red = true;
                        self.rotate_right(w);
                        w = self.n(p).right.expect("sibling");
                    }
                    let p_red = self.n(p).red;
                    self.m(w).red = p_red;
                    self.m(p).red = false;
                    let wr = self.n(w).right.expect("red");
                    self.m(wr).red = false;
                    self.rotate_left(p);
                    x = self.root;
                    xp = None;
                }
            } else {
                let mut w = self.n(p).left.expect("a black-height sibling");
                if self.n(w).red {
                    self.m(w).red = false;
                    self.m(p).red = true;
                    self.rotate_right(p);
                    w = self.n(p).left.expect("sibling");
                }
                if !self.is_red(self.n(w).left) && !self.is_red(self.n(w).right) {
                    self.m(w).red = true;
                    x = Some(p);
                    xp = self.n(p).parent;
                } else {
                    if !self.is_red(self.n(w).left) {
                        let wr = self.n(w).right.expect("red");
                        self.m(wr).red = false;
                        self.m(w).red = true;
                        self.rotate_left(w);
                        w = self.n(p).left.expect("sibling");
                    }
                    let p_red = self.n(p).red;
                    self.m(w).red = p_red;
                    self.m(p).red = false;
                    let wl = self.n(w).left.expect("red");
                    self.m(wl).red = false;
                    self.rotate_right(p);
                    x = self.root;
                    xp = None;
                }
            }
        }
        if let Some(x) = x {
            self.m(x).red = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A node as (key, red, left child's key, right child's key).
    type NodeShape = (u64, bool, Option<u64>, Option<u64>);

    impl PosTree {
        /// The root key and every node in key order.
        fn shape(&self) -> (Option<u64>, Vec<NodeShape>) {
            let mut out = Vec::new();
            fn walk(t: &PosTree, i: Option<Idx>, out: &mut Vec<NodeShape>) {
                let Some(i) = i else { return };
                let n = t.n(i);
                walk(t, n.left, out);
                out.push((
                    n.key,
                    n.red,
                    n.left.map(|l| t.n(l).key),
                    n.right.map(|r| t.n(r).key),
                ));
                walk(t, n.right, out);
            }
            walk(self, self.root, &mut out);
            (self.root.map(|r| self.n(r).key), out)
        }

        /// Check the red-black and search-tree invariants and the parent links; returns the
        /// black height.
        fn check(&self) -> usize {
            fn walk(t: &PosTree, i: Option<Idx>, lo: Option<u64>, hi: Option<u64>) -> usize {
                let Some(i) = i else { return 1 };
                let n = t.n(i);
                assert!(lo.is_none_or(|lo| n.key > lo) && hi.is_none_or(|hi| n.key < hi));
                for c in [n.left, n.right].into_iter().flatten() {
                    assert_eq!(t.n(c).parent, Some(i), "parent link of {}", t.n(c).key);
                    assert!(!(n.red && t.n(c).red), "red {} has a red child", n.key);
                }
                let l = walk(t, n.left, lo, Some(n.key));
                let r = walk(t, n.right, Some(n.key), hi);
                assert_eq!(l, r, "black heights differ below {}", n.key);
                l + usize::from(!n.red)
            }
            if let Some(r) = self.root {
                assert!(!self.n(r).red, "red root");
                assert_eq!(self.n(r).parent, None);
            }
            walk(self, self.root, None, None)
        }
    }

    #[test]
    fn ascending_inserts_give_the_linux_rbtree_shape() {
        // lib/rbtree.c __rb_insert on keys 1..=7 in order: root 2, black 1, red 4 with black
        // 3 and 6, and 6's children 5 and 7 red.
        let mut t = PosTree::default();
        for k in 1..=7 {
            assert!(t.insert(k, k as usize));
        }
        let (root, nodes) = t.shape();
        assert_eq!(root, Some(2));
        assert_eq!(
            nodes,
            vec![
                (1, false, None, None),
                (2, false, Some(1), Some(4)),
                (3, false, None, None),
                (4, true, Some(3), Some(6)),
                (5, true, None, None),
                (6, false, Some(5), Some(7)),
                (7, true, None, None),
            ]
        );
        assert!(!t.insert(4, 99), "a taken sector keeps its queue");
        assert_eq!(t.lookup(4), Lookup::Found(4));
        assert_eq!(t.lookup(0), Lookup::Parent(Some((1, 1))));
        assert_eq!(t.lookup(8), Lookup::Parent(Some((7, 7))));
        assert_eq!(PosTree::default().lookup(8), Lookup::Parent(None));
    }

    #[test]
    fn erasing_a_node_with_two_children_moves_its_successor_up() {
        // Erase 4 from the tree above: successor 5 (red leaf) takes its place and colour.
        let mut t = PosTree::default();
        for k in 1..=7 {
            t.insert(k, k as usize);
        }
        t.remove(4);
        t.check();
        let (root, nodes) = t.shape();
        assert_eq!(root, Some(2));
        assert_eq!(nodes[3], (5, true, Some(3), Some(6)));
        assert_eq!(nodes[4], (6, false, None, Some(7)));
        // Erasing the black leaf 1: its red sibling 5 rotates up (case 1), then 3 turns red
        // and the now red 2 turns black (case 2).
        t.remove(1);
        t.check();
        assert_eq!(
            t.shape(),
            (
                Some(5),
                vec![
                    (2, false, None, Some(3)),
                    (3, true, None, None),
                    (5, false, Some(2), Some(6)),
                    (6, false, None, Some(7)),
                    (7, true, None, None),
                ]
            )
        );
    }

    #[test]
    fn neighbours_follow_key_order() {
        let mut t = PosTree::default();
        for k in [50, 20, 80, 10, 30, 70, 90, 60] {
            t.insert(k, k as usize);
        }
        assert_eq!(t.next_after(30), Some((50, 50)));
        assert_eq!(t.prev_before(50), Some((30, 30)));
        assert_eq!(t.next_after(90), None);
        assert_eq!(t.prev_before(10), None);
        assert_eq!(t.next_after(60), Some((70, 70)));
        assert_eq!(t.prev_before(60), Some((50, 50)));
        assert_eq!(t.next_after(55), None, "not in the tree");
    }

    #[test]
    fn random_inserts_and_removals_keep_the_red_black_invariants() {
        // A deterministic pseudo-random walk against a BTreeMap.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut t = PosTree::default();
        let mut model = BTreeMap::new();
        for step in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = x % 200;
            if x.is_multiple_of(3) {
                t.remove(key);
                model.remove(&key);
            } else {
                let inserted = t.insert(key, step);
                assert_eq!(inserted, !model.contains_key(&key));
                model.entry(key).or_insert(step);
            }
            t.check();
            let keys: Vec<(u64, usize)> = t.shape().1.iter().map(|n| (n.0, 0)).collect();
            assert_eq!(keys.len(), model.len());
            for (k, q) in &model {
                assert_eq!(t.lookup(*k), Lookup::Found(*q));
            }
            if let Some((&lo, _)) = model.iter().next() {
                assert_eq!(t.prev_before(lo), None);
                let second = model.keys().nth(1).map(|&k| (k, model[&k]));
                assert_eq!(t.next_after(lo), second);
            }
        }
    }

    #[test]
    fn descending_inserts_and_right_side_erasures_give_the_linux_rbtree_shapes() {
        // The mirror cases of __rb_insert and ____rb_erase_color: keys 7..=1 in descending
        // order give the mirror image of the ascending tree.
        let mut t = PosTree::default();
        for k in (1..=7).rev() {
            assert!(t.insert(k, k as usize));
        }
        assert_eq!(
            t.shape(),
            (
                Some(6),
                vec![
                    (1, true, None, None),
                    (2, false, Some(1), Some(3)),
                    (3, true, None, None),
                    (4, true, Some(2), Some(5)),
                    (5, false, None, None),
                    (6, false, Some(4), Some(7)),
                    (7, false, None, None),
                ]
            )
        );
        // Erasing the black right leaf 7: its red sibling 4 rotates up (case 1), then 5
        // turns red and 6 black (case 2).
        t.remove(7);
        t.check();
        assert_eq!(t.shape().0, Some(4));
        assert_eq!(
            t.shape().1[3..],
            [
                (4, false, Some(2), Some(6)),
                (5, true, None, None),
                (6, false, Some(5), None)
            ]
        );
        // 6 has one child: 5 takes its place and colour.
        t.remove(6);
        t.check();
        assert_eq!(
            t.shape().1[3..],
            [(4, false, Some(2), Some(5)), (5, false, None, None)]
        );
        // Erasing 5: sibling 2 has a red left child: a right rotation at 4 (case 4).
        t.remove(5);
        t.check();
        assert_eq!(
            t.shape(),
            (
                Some(2),
                vec![
                    (1, false, None, None),
                    (2, false, Some(1), Some(4)),
                    (3, true, None, None),
                    (4, false, Some(3), None),
                ]
            )
        );
        // Sibling with only a red right child: case 3 (left rotation at the sibling), then 4.
        let mut t = PosTree::default();
        for k in [10, 5, 15, 7] {
            t.insert(k, k as usize);
        }
        assert_eq!(t.shape().1[0], (5, false, None, Some(7)));
        t.remove(15);
        t.check();
        assert_eq!(
            t.shape(),
            (
                Some(7),
                vec![
                    (5, false, None, None),
                    (7, false, Some(5), Some(10)),
                    (10, false, None, None),
                ]
            )
        );
    }

    #[test]
    fn zigzag_inserts_rotate_twice() {
        // __rb_insert, parent and new node on opposite sides: a rotation at the parent, then
        // at the grandparent; both orders end with the middle key black at the root.
        for keys in [[1, 3, 2], [3, 1, 2]] {
            let mut t = PosTree::default();
            for k in keys {
                t.insert(k, k as usize);
            }
            assert_eq!(
                t.shape(),
                (
                    Some(2),
                    vec![
                        (1, true, None, None),
                        (2, false, Some(1), Some(3)),
                        (3, true, None, None),
                    ]
                )
            );
        }
    }

    #[test]
    fn lookups_and_neighbours_match_a_btreemap_model() {
        // bfq_rq_pos_tree_lookup: a missing key's search ends at its in-order predecessor or
        // successor; rb_next and rb_prev give the model's neighbours; erased nodes' slots
        // are reused.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut t = PosTree::default();
        let mut model: BTreeMap<u64, usize> = BTreeMap::new();
        let mut peak = 0;
        for step in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = x % 64;
            if x % 5 < 2 {
                t.remove(key);
                model.remove(&key);
            } else if t.insert(key, step) {
                assert!(model.insert(key, step).is_none());
            } else {
                assert!(model.contains_key(&key));
            }
            peak = peak.max(model.len());
            assert!(t.nodes.len() <= peak, "free slots are reused");
            if step % 7 != 0 {
                continue;
            }
            for k in 0..66 {
                let below = model.range(..k).next_back().map(|(&k, &q)| (k, q));
                let above = model.range(k + 1..).next().map(|(&k, &q)| (k, q));
                match (model.get(&k), t.lookup(k)) {
                    (Some(&q), got) => {
                        assert_eq!(got, Lookup::Found(q));
                        assert_eq!(t.next_after(k), above);
                        assert_eq!(t.prev_before(k), below);
                    }
                    (None, Lookup::Parent(p)) => {
                        assert!(p == below || p == above, "{k}: {p:?}");
                        assert_eq!(p.is_none(), model.is_empty());
                        assert_eq!((t.next_after(k), t.prev_before(k)), (None, None));
                    }
                    (None, got) => panic!("{k} is not in the tree: {got:?}"),
                }
            }
        }
    }
}
