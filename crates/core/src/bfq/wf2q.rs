//! B-WF2Q+: the budget-based worst-case fair queueing that orders BFQ's entities.
//!
//! An entity is a queue or a group. Each lives in one service tree of its parent's scheduling
//! data (one tree per I/O priority class). An entity has a virtual start time S and finish
//! time F = S + budget / weight; a tree has a virtual time V that advances by served / wsum
//! when any of its entities receives service. An entity is eligible when S <= V; the next
//! entity to serve is the eligible one with the smallest F. When no entity is eligible V jumps
//! to the smallest S. The idle tree keeps entities that went idle while F > V, so that an
//! entity coming back soon resumes from its old F instead of the (lower) current V; idle
//! entities are forgotten once V passes their F. Service is counted in sectors and the time
//! scale is shifted by [`SERVICE_SHIFT`] bits, as in `bfq-wf2q.c`.

use std::collections::BTreeSet;

use crate::time::Nanos;

/// Fixed-point shift of the virtual time scale.
pub(super) const SERVICE_SHIFT: u32 = 22;
/// How long the idle class may go unserved while other classes are busy (HZ / 5).
const CLASS_IDLE_TIMEOUT: Nanos = Nanos::from_ms(200);
/// Number of I/O priority classes: RT, BE, IDLE.
pub(super) const CLASSES: usize = 3;

/// Index of an entity in [`Wf2q::entities`].
pub(super) type Eid = usize;

/// Which tree an entity is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tree {
    /// Neither (inactive, or in service).
    None,
    /// Backlogged, waiting for service.
    Active,
    /// Recently idle, timestamps kept.
    Idle,
}

/// A schedulable entity: a queue or a group.
#[derive(Clone, Debug)]
pub(super) struct Entity {
    /// Virtual start time.
    pub start: u64,
    /// Virtual finish time.
    pub finish: u64,
    /// Budget in sectors for the current or next service slot.
    pub budget: u64,
    /// Service received in the current slot, in sectors.
    pub service: u64,
    /// Current weight (raised weight for weight-raised queues).
    pub weight: u64,
    /// Class index: 0 RT, 1 BE, 2 IDLE.
    pub class: usize,
    /// The scheduling data this entity is scheduled in.
    pub sd: usize,
    /// For a group: the scheduling data of its children.
    pub own_sd: Option<usize>,
    /// For a queue: its index.
    pub queue: Option<usize>,
    /// The tree it is on.
    pub tree: Tree,
    /// Counted in its tree's weight sum (active, idle or in service).
    pub on_st: bool,
}

/// One service tree: the active and idle entities of one class under one parent.
#[derive(Clone, Debug, Default)]
pub(super) struct ServiceTree {
    active: BTreeSet<(u64, Eid)>,
    starts: BTreeSet<(u64, Eid)>,
    idle: BTreeSet<(u64, Eid)>,
    /// Virtual time.
    pub vtime: u64,
    /// Sum of the weights of the entities on this tree or in service from it.
    pub wsum: u64,
}

impl ServiceTree {
    /// Whether no entity is backlogged here.
    pub fn active_is_empty(&self) -> bool {
        self.active.is_empty()
    }
}

/// The scheduling data of the root or of one group: three service trees and the entity in
/// service among them.
#[derive(Clone, Debug)]
pub(super) struct SchedData {
    /// One tree per class.
    pub trees: [ServiceTree; CLASSES],
    /// The entity in service from these trees, if any.
    pub in_service: Option<Eid>,
    /// Last time the idle class was served from here.
    pub idle_class_last_service: Nanos,
    /// The group entity that owns this data; `None` for the root.
    pub owner: Option<Eid>,
}

impl SchedData {
    fn new(owner: Option<Eid>) -> SchedData {
        SchedData {
            trees: Default::default(),
            in_service: None,
            idle_class_last_service: Nanos::ZERO,
            owner,
        }
    }

    /// Whether any entity is backlogged here.
    pub fn has_active(&self) -> bool {
        self.trees.iter().any(|t| !t.active_is_empty())
    }
}

/// `service` scaled into virtual time by `weight`.
pub(super) fn delta(service: u64, weight: u64) -> u64 {
    (service << SERVICE_SHIFT) / weight.max(1)
}

/// The entity arena and every scheduling data (index 0 is the root).
#[derive(Clone, Debug)]
pub(super) struct Wf2q {
    /// All entities ever created.
    pub entities: Vec<Entity>,
    /// All scheduling data; 0 is the root.
    pub sds: Vec<SchedData>,
}

impl Wf2q {
    /// Just the root scheduling data.
    pub fn new() -> Wf2q {
        Wf2q {
            entities: Vec::new(),
            sds: vec![SchedData::new(None)],
        }
    }

    /// A new inactive entity scheduled in `sd`.
    pub fn add_entity(
        &mut self,
        sd: usize,
        class: usize,
        weight: u64,
        queue: Option<usize>,
    ) -> Eid {
        self.entities.push(Entity {
            start: 0,
            finish: 0,
            budget: 0,
            service: 0,
            weight,
            class,
            sd,
            own_sd: None,
            queue,
            tree: Tree::None,
            on_st: false,
        });
        self.entities.len() - 1
    }

    /// A new group entity in `parent_sd`, with its own scheduling data. Returns (entity, sd).
    pub fn add_group(&mut self, parent_sd: usize, weight: u64) -> (Eid, usize) {
        let e = self.add_entity(parent_sd, 1, weight, None);
        self.sds.push(SchedData::new(Some(e)));
        let sd = self.sds.len() - 1;
        self.entities[e].own_sd = Some(sd);
        (e, sd)
    }

    fn st(&mut self, e: Eid) -> &mut ServiceTree {
        let en = &self.entities[e];
        let (sd, class) = (en.sd, en.class);
        &mut self.sds[sd].trees[class]
    }

    /// The virtual time of the tree `e` is scheduled in.
    pub fn vtime_of(&self, e: Eid) -> u64 {
        let en = &self.entities[e];
        self.sds[en.sd].trees[en.class].vtime
    }

    fn calc_finish(&mut self, e: Eid, service: u64) {
        let en = &mut self.entities[e];
        en.finish = en.start + delta(service, en.weight);
    }

    fn active_insert(&mut self, e: Eid) {
        let (s, f) = (self.entities[e].start, self.entities[e].finish);
        self.entities[e].tree = Tree::Active;
        let st = self.st(e);
        st.active.insert((f, e));
        st.starts.insert((s, e));
    }

    fn active_extract(&mut self, e: Eid) {
        let (s, f) = (self.entities[e].start, self.entities[e].finish);
        self.entities[e].tree = Tree::None;
        let st = self.st(e);
        st.active.remove(&(f, e));
        st.starts.remove(&(s, e));
    }

    fn idle_insert(&mut self, e: Eid) {
        let f = self.entities[e].finish;
        self.entities[e].tree = Tree::Idle;
        self.st(e).idle.insert((f, e));
    }

    fn idle_extract(&mut self, e: Eid) {
        let f = self.entities[e].finish;
        self.entities[e].tree = Tree::None;
        self.st(e).idle.remove(&(f, e));
    }

    fn forget_entity(&mut self, e: Eid) {
        let w = self.entities[e].weight;
        self.entities[e].on_st = false;
        let st = self.st(e);
        st.wsum = st.wsum.saturating_sub(w);
    }

    /// Drop idle entities whose finish time the virtual time has passed.
    fn forget_idle(&mut self, sd: usize, class: usize) {
        let st = &mut self.sds[sd].trees[class];
        if st.active.is_empty() {
            if let Some(&(last_f, _)) = st.idle.last() {
                if last_f <= st.vtime {
                    st.vtime = last_f;
                }
            }
        }
        let first = st.idle.first().copied();
        if let Some((f, e)) = first {
            if f <= self.sds[sd].trees[class].vtime {
                self.idle_extract(e);
                self.forget_entity(e);
            }
        }
    }

    /// Change the weight of `e`, keeping its tree's weight sum right.
    pub fn set_weight(&mut self, e: Eid, w: u64) {
        let old = self.entities[e].weight;
        if old == w {
            return;
        }
        if self.entities[e].on_st {
            let st = self.st(e);
            st.wsum = st.wsum + w - old.min(st.wsum);
        }
        self.entities[e].weight = w;
    }

    /// Activate an inactive (or idle) entity with its current budget. With `non_blocking`,
    /// an entity whose old finish time is behind V restarts from that finish time
    /// (back-shifting, to let a queue recover a service hole); the shift is bounded so that its
    /// finish is pushed up to V, by `1/push_divisor` of the gap (the raising coefficient).
    pub fn activate(&mut self, e: Eid, non_blocking: bool, push_divisor: u64) {
        let vtime = self.vtime_of(e);
        let en = &self.entities[e];
        let (backshifted, min_vstart) = if non_blocking && vtime > en.finish {
            (true, en.finish)
        } else {
            (false, vtime)
        };
        if en.tree == Tree::Idle {
            self.idle_extract(e);
            let en = &mut self.entities[e];
            en.start = min_vstart.max(en.finish);
        } else if en.tree == Tree::Active {
            self.active_extract(e);
        } else {
            let w = en.weight;
            self.entities[e].start = min_vstart;
            if !self.entities[e].on_st {
                self.entities[e].on_st = true;
                self.st(e).wsum += w;
            }
        }
        let b = self.entities[e].budget;
        self.calc_finish(e, b);
        let en = &mut self.entities[e];
        if backshifted && vtime > en.finish {
            let d = (vtime - en.finish) / push_divisor.max(1);
            en.start += d;
            en.finish += d;
        }
        self.active_insert(e);
    }

    /// Requeue `e` (in service, or active with a changed budget) with its current budget. An
    /// in-service entity first moves its start past the service it received.
    pub fn requeue(&mut self, e: Eid) {
        match self.entities[e].tree {
            Tree::Active => self.active_extract(e),
            Tree::Idle => self.idle_extract(e),
            Tree::None => {}
        }
        let sd = self.entities[e].sd;
        if !self.entities[e].on_st {
            let (w, v) = (self.entities[e].weight, self.vtime_of(e));
            self.entities[e].on_st = true;
            self.entities[e].start = v;
            self.st(e).wsum += w;
        } else if self.sds[sd].in_service == Some(e) {
            let s = self.entities[e].service;
            self.calc_finish(e, s);
            self.entities[e].start = self.entities[e].finish;
        }
        let b = self.entities[e].budget;
        self.calc_finish(e, b);
        self.active_insert(e);
    }

    /// Deactivate `e`: its finish reflects the service it actually received; it goes to the
    /// idle tree if `to_idle_tree` and its finish is still ahead of V, else it is forgotten.
    /// Returns false if it was not active.
    pub fn deactivate(&mut self, e: Eid, to_idle_tree: bool) -> bool {
        if !self.entities[e].on_st {
            return false;
        }
        let sd = self.entities[e].sd;
        let in_service = self.sds[sd].in_service == Some(e);
        // Leave the trees first: they are keyed by the timestamps about to change.
        match self.entities[e].tree {
            Tree::Active => self.active_extract(e),
            Tree::Idle => self.idle_extract(e),
            Tree::None => {}
        }
        let s = self.entities[e].service;
        self.calc_finish(e, s);
        if in_service {
            self.sds[sd].in_service = None;
        } else {
            self.entities[e].service = 0;
        }
        if !to_idle_tree || self.entities[e].finish <= self.vtime_of(e) {
            self.forget_entity(e);
        } else {
            self.idle_insert(e);
        }
        true
    }

    /// Charge `served` sectors to `e` and to every ancestor: their service grows and their
    /// trees' virtual times advance by served / wsum.
    pub fn served(&mut self, e: Eid, served: u64) {
        let mut cur = Some(e);
        while let Some(x) = cur {
            self.entities[x].service += served;
            let (sd, class) = (self.entities[x].sd, self.entities[x].class);
            let st = &mut self.sds[sd].trees[class];
            st.vtime += delta(served, st.wsum);
            self.forget_idle(sd, class);
            cur = self.sds[sd].owner;
        }
    }

    /// The eligible entity with the smallest finish in `sd`'s highest backlogged class (the
    /// idle class first if it has waited [`CLASS_IDLE_TIMEOUT`]). With `update`, the trees'
    /// virtual time jumps forward to make an entity eligible, as when a new entity is chosen.
    pub fn lookup_next(&mut self, sd: usize, now: Nanos, update: bool) -> Option<Eid> {
        let mut from = 0;
        if update && now > self.sds[sd].idle_class_last_service + CLASS_IDLE_TIMEOUT {
            if !self.sds[sd].trees[CLASSES - 1].active.is_empty() {
                from = CLASSES - 1;
            }
            self.sds[sd].idle_class_last_service = now;
        }
        for class in from..CLASSES {
            let st = &self.sds[sd].trees[class];
            let Some(&(min_start, _)) = st.starts.first() else {
                continue;
            };
            let v = st.vtime.max(min_start);
            if update && v > st.vtime {
                self.sds[sd].trees[class].vtime = v;
                self.forget_idle(sd, class);
            }
            let st = &self.sds[sd].trees[class];
            let found = st
                .active
                .iter()
                .find(|&&(_, e)| self.entities[e].start <= v)
                .map(|&(_, e)| e);
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Put `e`, chosen from `sd`, in service there: it leaves the active tree.
    pub fn set_in_service(&mut self, sd: usize, e: Eid) {
        self.sds[sd].in_service = Some(e);
        if self.entities[e].tree == Tree::Active {
            self.active_extract(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served_order(weights: &[u64], budget: u64, rounds: usize) -> Vec<u64> {
        let mut w = Wf2q::new();
        let es: Vec<Eid> = weights
            .iter()
            .map(|&wt| {
                let e = w.add_entity(0, 1, wt, None);
                w.entities[e].budget = budget;
                w.activate(e, false, 1);
                e
            })
            .collect();
        let mut got = vec![0u64; es.len()];
        for _ in 0..rounds {
            let e = w.lookup_next(0, Nanos::ZERO, true).unwrap();
            w.sds[0].in_service = Some(e);
            w.active_extract(e);
            w.served(e, budget);
            got[es.iter().position(|&x| x == e).unwrap()] += budget;
            w.requeue(e);
            w.entities[e].service = 0;
            w.sds[0].in_service = None;
        }
        got
    }

    #[test]
    fn wf2q_serves_backlogged_entities_in_proportion_to_weight() {
        let got = served_order(&[100, 200, 400], 64, 700);
        let total: u64 = got.iter().sum();
        for (g, w) in got.iter().zip([1.0, 2.0, 4.0]) {
            let share = *g as f64 / total as f64;
            assert!((share - w / 7.0).abs() < 0.01, "{got:?}");
        }
    }

    #[test]
    fn wf2q_idle_entity_resumes_from_its_old_finish_time() {
        let mut w = Wf2q::new();
        let a = w.add_entity(0, 1, 100, None);
        let b = w.add_entity(0, 1, 100, None);
        for e in [a, b] {
            w.entities[e].budget = 100;
            w.activate(e, false, 1);
        }
        // a is served a full budget, then goes idle: its finish is ahead of V.
        w.sds[0].in_service = Some(a);
        w.active_extract(a);
        w.served(a, 100);
        assert!(w.deactivate(a, true));
        assert_eq!(w.entities[a].tree, Tree::Idle);
        let old_finish = w.entities[a].finish;
        w.activate(a, false, 1);
        assert_eq!(w.entities[a].start, old_finish);
        // b, which has not been served, goes first.
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(b));
    }
}
