//! B-WF2Q+: the budget-based worst-case fair queueing that orders BFQ's entities.
//!
//! An entity is a queue or a group. Each lives in one service tree of its parent's scheduling
//! data (one tree per I/O priority class). An entity has a virtual start time S and finish
//! time F = S + budget / weight; a tree has a virtual time V that advances by served / wsum
//! when any of its entities receives service. An entity is eligible when S <= V; the next
//! entity to serve is the eligible one with the smallest F, as far as the kernel's walk of its
//! red-black active tree finds it (`bfq_first_active_entity` may stop at an eligible node above
//! the one with the smallest F: `bfq/active_tree.rs`). When no entity is eligible V jumps
//! to the smallest S. The idle tree keeps entities that went idle while F > V, so that an
//! entity coming back soon resumes from its old F instead of the (lower) current V; idle
//! entities are forgotten once V passes their F. Service is counted in sectors and the time
//! scale is shifted by [`SERVICE_SHIFT`] bits, as in `bfq-wf2q.c`.
//!
//! As in the kernel, each scheduling data caches the entity it will serve next
//! (`sd->next_in_service`): the cache is refreshed where `bfq_update_next_in_service` runs
//! (after an activation, a requeue, the deactivation of the cached entity, and the setting in
//! service of a new entity), and [`Wf2q::get_next`] (`bfq_get_next_queue`) sets in service the
//! cached entity without a fresh lookup. So V jumps to the first start time
//! (`bfq_update_vtime`) only in the lookups that the kernel makes, not at every selection.

use std::collections::BTreeSet;

use super::active_tree::{ActiveTree, Links};
use crate::time::Nanos;

/// Fixed-point shift of the virtual time scale.
pub(super) const SERVICE_SHIFT: u32 = 22;
/// How long the idle class may go unserved while other classes are busy
/// (`BFQ_CL_IDLE_TIMEOUT`, HZ / 5 jiffies). The times bfq passes are starts of jiffies
/// (`Bfq::wf_now`), so `now > last + 200 ms` is the kernel's `jiffies > last + HZ / 5`
/// (`time_is_before_jiffies`) for HZ = 100, 250, 300 and 1000: HZ / 5 jiffies of
/// `1 s / HZ` (truncated to whole nanoseconds) are at most 200 ms and one more jiffy is
/// over it.
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
    /// Requests allocated to it or, for a group, to the queues below it, from admission to
    /// completion (`entity->allocated`).
    pub allocated: u32,
    /// When it was last put on an active tree, as a count of tree insertions: the kernel's
    /// `bfq_active_insert` puts a queue at the head of `bfqd->active_list` (and
    /// `bfq_active_extract` takes it off), so the list runs from the highest count down. It
    /// also orders the active tree among equal finish times (see [`ServiceTree`]).
    pub active_seq: u64,
    /// When it was last put on an idle tree, as a count of tree insertions: it orders the idle
    /// tree among equal finish times.
    pub idle_seq: u64,
    /// Its place in the active tree it is on ([`ActiveTree`]).
    pub rb: Links,
}

/// One service tree: the active and idle entities of one class under one parent.
///
/// Both trees are ordered by finish time and, among equal finish times, by insertion: the
/// kernel's `bfq_insert` descends right past an entry whose finish equals the new one, so an
/// entity joins a tree after every entity already there with its finish. The active tree is
/// the kernel's red-black tree, shape included ([`ActiveTree`]), because
/// `bfq_first_active_entity`'s walk over it decides which eligible entity is served.
#[derive(Clone, Debug, Default)]
pub(super) struct ServiceTree {
    /// The backlogged entities.
    active: ActiveTree,
    /// (finish, insertion stamp, entity) of the idle entities.
    idle: BTreeSet<(u64, u64, Eid)>,
    /// Virtual time.
    pub vtime: u64,
    /// Sum of the weights of the entities on this tree or in service from it.
    pub wsum: u64,
}

impl ServiceTree {
    /// Whether no entity is backlogged here.
    #[cfg(test)]
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
    /// The entity to set in service next (`sd->next_in_service`), kept by
    /// [`Wf2q::update_next_in_service`].
    pub next_in_service: Option<Eid>,
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
            next_in_service: None,
            idle_class_last_service: Nanos::ZERO,
            owner,
        }
    }

    /// Whether any entity is backlogged here.
    #[cfg(test)]
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
    /// Insertions into active and idle trees so far (stamps [`Entity::active_seq`] and
    /// [`Entity::idle_seq`]).
    pub tree_inserts: u64,
}

impl Wf2q {
    /// Just the root scheduling data.
    pub fn new() -> Wf2q {
        Wf2q {
            entities: Vec::new(),
            sds: vec![SchedData::new(None)],
            tree_inserts: 0,
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
            allocated: 0,
            active_seq: 0,
            idle_seq: 0,
            rb: Links::default(),
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
        self.entities[e].tree = Tree::Active;
        self.tree_inserts += 1;
        self.entities[e].active_seq = self.tree_inserts;
        let (sd, class) = (self.entities[e].sd, self.entities[e].class);
        self.sds[sd].trees[class]
            .active
            .insert(&mut self.entities, e);
    }

    fn active_extract(&mut self, e: Eid) {
        self.entities[e].tree = Tree::None;
        let (sd, class) = (self.entities[e].sd, self.entities[e].class);
        self.sds[sd].trees[class]
            .active
            .extract(&mut self.entities, e);
    }

    fn idle_insert(&mut self, e: Eid) {
        let f = self.entities[e].finish;
        self.entities[e].tree = Tree::Idle;
        self.tree_inserts += 1;
        let seq = self.tree_inserts;
        self.entities[e].idle_seq = seq;
        self.st(e).idle.insert((f, seq, e));
    }

    fn idle_extract(&mut self, e: Eid) {
        let (f, seq) = (self.entities[e].finish, self.entities[e].idle_seq);
        self.entities[e].tree = Tree::None;
        self.st(e).idle.remove(&(f, seq, e));
    }

    fn forget_entity(&mut self, e: Eid) {
        let w = self.entities[e].weight;
        self.entities[e].on_st = false;
        let st = self.st(e);
        st.wsum = st.wsum.saturating_sub(w);
    }

    /// `bfq_put_idle_entity`: take `e` off its idle tree and out of its tree's weight sum.
    pub fn put_idle_entity(&mut self, e: Eid) {
        if self.entities[e].tree == Tree::Idle {
            self.idle_extract(e);
        }
        if self.entities[e].on_st {
            self.forget_entity(e);
        }
    }

    /// Drop idle entities whose finish time the virtual time has passed.
    fn forget_idle(&mut self, sd: usize, class: usize) {
        let st = &mut self.sds[sd].trees[class];
        if st.active.is_empty() {
            if let Some(&(last_f, _, _)) = st.idle.last() {
                if last_f <= st.vtime {
                    st.vtime = last_f;
                }
            }
        }
        let first = st.idle.first().copied();
        if let Some((f, _, e)) = first {
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
        self.requeue_weighted(e, None);
    }

    /// [`Self::requeue`] applying a pending weight change after the in-service charge
    /// (`__bfq_requeue_entity`, then `bfq_update_fin_time_enqueue`).
    fn requeue_weighted(&mut self, e: Eid, weight: Option<u64>) {
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
        if let Some(w) = weight {
            self.set_weight(e, w);
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

    /// `bfq_lookup_next_entity`: the eligible entity `bfq_first_active_entity` finds in
    /// `sd`'s highest backlogged class (the smallest finish among the eligible, unless the
    /// tree's shape hides it: [`ActiveTree::first_eligible`]), the idle class first once it
    /// has waited [`CLASS_IDLE_TIMEOUT`] (every lookup checks that timestamp, and a lookup
    /// past the timeout moves it to `now`, the start of the current jiffy). Eligibility is
    /// judged against the virtual time jumped forward to the root's `min_start`
    /// (`bfq_calc_vtime_jump`); the tree's V takes that value (`bfq_update_vtime`) only when
    /// `sd` has no entity in service or the in-service one is being expired (`expiration`).
    pub fn lookup_next(&mut self, sd: usize, now: Nanos, expiration: bool) -> Option<Eid> {
        let mut from = 0;
        if now > self.sds[sd].idle_class_last_service + CLASS_IDLE_TIMEOUT {
            if !self.sds[sd].trees[CLASSES - 1].active.is_empty() {
                from = CLASSES - 1;
            }
            self.sds[sd].idle_class_last_service = now;
        }
        let update = self.sds[sd].in_service.is_none() || expiration;
        for class in from..CLASSES {
            let st = &self.sds[sd].trees[class];
            let Some(min_start) = st.active.min_start(&self.entities) else {
                continue;
            };
            let v = st.vtime.max(min_start);
            if update && v > st.vtime {
                self.sds[sd].trees[class].vtime = v;
                self.forget_idle(sd, class);
            }
            let st = &self.sds[sd].trees[class];
            let found = st.active.first_eligible(&self.entities, v);
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// `bfq_update_next_in_service`: refresh `sd`'s cached next entity after `new` (if any)
    /// was activated, requeued or repositioned. A `new` other than the cached entity replaces
    /// it without a lookup if there is none, or if `new` is of the same class, eligible and
    /// finishes first; otherwise [`Wf2q::lookup_next`] decides. Returns whether the parent's
    /// schedule may change: the cache was empty, or the owning group's budget (set to that of
    /// its next child, `bfq_update_parent_budget`) shrank.
    pub fn update_next_in_service(
        &mut self,
        sd: usize,
        new: Option<Eid>,
        expiration: bool,
        now: Nanos,
    ) -> bool {
        let cached = self.sds[sd].next_in_service;
        let mut next = cached;
        let mut without_lookup = false;
        if let Some(n) = new.filter(|&n| Some(n) != cached) {
            without_lookup = match cached {
                None => true,
                Some(c) => {
                    let (en, ec) = (&self.entities[n], &self.entities[c]);
                    en.class == ec.class
                        && en.start <= self.sds[sd].trees[en.class].vtime
                        && ec.finish > en.finish
                }
            };
            if without_lookup {
                next = Some(n);
            }
        }
        if !without_lookup {
            next = self.lookup_next(sd, now, expiration);
        }
        let mut parent_may_change = false;
        if let Some(n) = next {
            let budget_shrank = self.update_parent_budget(n);
            parent_may_change = cached.is_none() || budget_shrank;
        }
        self.sds[sd].next_in_service = next;
        parent_may_change
    }

    /// `bfq_update_parent_budget`: the group owning `next`'s scheduling data takes `next`'s
    /// budget. Returns whether that budget shrank.
    fn update_parent_budget(&mut self, next: Eid) -> bool {
        let Some(g) = self.sds[self.entities[next].sd].owner else {
            return false;
        };
        let b = self.entities[next].budget;
        let shrank = self.entities[g].budget > b;
        self.entities[g].budget = b;
        shrank
    }

    /// `bfq_activate_requeue_entity`: activate `e` (requeue it if it is in service or active),
    /// then its ancestors, refreshing each level's next entity; the walk stops at the first
    /// level whose parent's schedule cannot change, unless `requeue` (the in-service queue is
    /// being expired, so every ancestor leaves service). `push_divisor` applies to `e` only
    /// (a queue's raising coefficient); groups are pushed by the whole gap.
    pub fn activate_requeue(
        &mut self,
        e: Eid,
        non_blocking: bool,
        push_divisor: u64,
        requeue: bool,
        expiration: bool,
        now: Nanos,
    ) {
        self.activate_requeue_weighted(
            e,
            None,
            non_blocking,
            push_divisor,
            requeue,
            expiration,
            now,
        );
    }

    /// [`Self::activate_requeue`] with a weight change pending on `e` (`entity->prio_changed`):
    /// it takes effect where `bfq_update_fin_time_enqueue` applies it
    /// (`__bfq_entity_update_weight_prio`), after `__bfq_requeue_entity` has charged an
    /// in-service `e` the service it received at its old weight and before its new budget's
    /// finish time is computed.
    #[allow(clippy::too_many_arguments)]
    pub fn activate_requeue_weighted(
        &mut self,
        e: Eid,
        weight: Option<u64>,
        non_blocking: bool,
        push_divisor: u64,
        requeue: bool,
        expiration: bool,
        now: Nanos,
    ) {
        let mut cur = Some(e);
        while let Some(x) = cur {
            let sd = self.entities[x].sd;
            let weight = if x == e { weight } else { None };
            if self.sds[sd].in_service == Some(x) || self.entities[x].tree == Tree::Active {
                self.requeue_weighted(x, weight);
            } else {
                if let Some(w) = weight {
                    self.set_weight(x, w);
                }
                let push = if x == e { push_divisor } else { 1 };
                self.activate(x, non_blocking, push);
            }
            if !self.update_next_in_service(sd, Some(x), expiration, now) && !requeue {
                break;
            }
            cur = self.sds[sd].owner;
        }
    }

    /// `bfq_deactivate_entity`: deactivate `e` and every ancestor left with nothing to serve
    /// (these go to the idle tree); the remaining ancestors are requeued, or repositioned, up
    /// to the first level whose next entity does not change the level above, unless
    /// `expiration`.
    pub fn deactivate_entity(
        &mut self,
        e: Eid,
        ins_into_idle_tree: bool,
        expiration: bool,
        now: Nanos,
    ) {
        let mut cur = e;
        let mut ins = ins_into_idle_tree;
        let parent = loop {
            let sd = self.entities[cur].sd;
            if !self.deactivate(cur, ins) {
                return;
            }
            if self.sds[sd].next_in_service == Some(cur) {
                self.update_next_in_service(sd, None, expiration, now);
            }
            if self.sds[sd].next_in_service.is_some() || self.sds[sd].in_service.is_some() {
                break self.sds[sd].owner;
            }
            match self.sds[sd].owner {
                Some(g) => cur = g,
                None => return,
            }
            ins = true;
        };
        let mut cur = parent;
        while let Some(x) = cur {
            self.requeue(x);
            let sd = self.entities[x].sd;
            if !self.update_next_in_service(sd, Some(x), expiration, now) && !expiration {
                break;
            }
            cur = self.sds[sd].owner;
        }
    }

    /// Put `e`, the next entity of `sd`, in service there. A queue leaves the active tree; a
    /// group does only if it has a single active child (`bfq_no_longer_next_in_service`): with
    /// more, it may still be the next for its parent. Its service counter is left as it is
    /// (mainline no longer resets it here: a queue expired empty keeps the service of its
    /// slot, `bfq_bfqq_expire`, until `bfq_bfqq_update_budg_for_activation`; the recorded bfq
    /// log shows a queue set in service with its whole budget used, then expired as
    /// exhausted).
    pub fn set_in_service(&mut self, sd: usize, e: Eid) {
        self.sds[sd].in_service = Some(e);
        let leaves = match self.entities[e].own_sd {
            None => true,
            Some(own) => {
                self.sds[own]
                    .trees
                    .iter()
                    .map(|t| t.active.len())
                    .sum::<usize>()
                    == 1
            }
        };
        if leaves && self.entities[e].tree == Tree::Active {
            self.active_extract(e);
        }
    }

    /// `bfq_get_next_queue`: from the root down, set in service each level's cached next
    /// entity (no lookup), then refresh the next entity of each level from the leaf up while
    /// the level above may change. Returns the leaf, or `None` if the root has nothing cached.
    pub fn get_next(&mut self, now: Nanos) -> Option<Eid> {
        let mut sd = 0;
        let leaf = loop {
            let e = self.sds[sd].next_in_service?;
            self.set_in_service(sd, e);
            match self.entities[e].own_sd {
                Some(child) => sd = child,
                None => break e,
            }
        };
        let mut cur = Some(leaf);
        while let Some(x) = cur {
            let sd = self.entities[x].sd;
            if !self.update_next_in_service(sd, None, false, now) {
                break;
            }
            cur = self.sds[sd].owner;
        }
        Some(leaf)
    }

    /// `__bfq_bfqd_reset_in_service`: nothing is in service any more on the path from `e` to
    /// the root.
    pub fn reset_in_service(&mut self, e: Eid) {
        let mut sd = self.entities[e].sd;
        loop {
            self.sds[sd].in_service = None;
            match self.sds[sd].owner {
                Some(g) => sd = self.entities[g].sd,
                None => return,
            }
        }
    }

    /// `next_queue_may_preempt`: whether the root would serve another entity than the one in
    /// service there.
    pub fn next_may_preempt(&self) -> bool {
        self.sds[0].next_in_service != self.sds[0].in_service
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

    // Exact timestamps, as bfq-wf2q.c (Linux 6.9) computes them: bfq_delta is
    // (service << WFQ_SERVICE_SHIFT) / weight, truncated.

    /// The best-effort tree of the root.
    fn be(w: &mut Wf2q) -> &mut ServiceTree {
        &mut w.sds[0].trees[1]
    }

    /// A best-effort entity of `weight` with `budget` in the root.
    fn entity(w: &mut Wf2q, weight: u64, budget: u64) -> Eid {
        let e = w.add_entity(0, 1, weight, None);
        w.entities[e].budget = budget;
        e
    }

    #[test]
    fn bfq_delta_shifts_service_by_22_bits_and_truncates() {
        assert_eq!(delta(1000, 100), 41_943_040);
        assert_eq!(delta(1000, 300), 13_981_013);
        assert_eq!(delta(1, 1), 1 << 22);
        assert_eq!(delta(7, 0), 7 << 22, "a zero weight counts as 1");
    }

    #[test]
    fn bfq_activate_entity_starts_a_new_entity_at_the_tree_vtime() {
        // __bfq_activate_entity: an entity on no tree starts at st->vtime, joins wsum, and
        // bfq_calc_finish sets F = S + delta(budget, weight).
        let mut w = Wf2q::new();
        let e = entity(&mut w, 300, 1000);
        be(&mut w).vtime = 5 << 22;
        assert_eq!(w.vtime_of(e), 5 << 22);
        w.activate(e, false, 1);
        let en = &w.entities[e];
        assert_eq!((en.start, en.finish), (5 << 22, (5 << 22) + 13_981_013));
        assert_eq!((en.tree, en.on_st), (Tree::Active, true));
        assert_eq!(be(&mut w).wsum, 300);
        assert_eq!(w.sds[0].trees[0].wsum, 0, "only its class's tree");
        // A second entity adds its weight.
        let f = entity(&mut w, 100, 10);
        w.activate(f, false, 1);
        assert_eq!(be(&mut w).wsum, 400);
        // Activated again while active (a requeue with a new budget): the start stays.
        w.entities[e].budget = 2000;
        w.activate(e, false, 1);
        let en = &w.entities[e];
        assert_eq!((en.start, en.finish), (5 << 22, (5 << 22) + 27_962_026));
        assert_eq!(be(&mut w).wsum, 400, "counted once");
    }

    /// An entity of weight 100 and budget 1000 that started at 0 and received 500 sectors,
    /// then went inactive (finish = delta(500, 100)); the tree's vtime is then `vtime`.
    fn backshift_scene(vtime: u64) -> (Wf2q, Eid) {
        let mut w = Wf2q::new();
        let e = entity(&mut w, 100, 1000);
        w.activate(e, false, 1);
        w.entities[e].service = 500;
        assert!(w.deactivate(e, false));
        assert_eq!(w.entities[e].finish, 20_971_520);
        assert_eq!(
            (w.entities[e].tree, w.entities[e].on_st),
            (Tree::None, false)
        );
        assert_eq!(be(&mut w).wsum, 0);
        assert_eq!(
            w.entities[e].service, 0,
            "not in service: its service is dropped"
        );
        be(&mut w).vtime = vtime;
        (w, e)
    }

    #[test]
    fn bfq_update_fin_time_enqueue_pushes_backshifted_timestamps_up_to_vtime() {
        // __bfq_activate_entity with non_blocking_wait_rq and V > F: the entity restarts
        // from its old finish (backshifted); bfq_update_fin_time_enqueue then pushes S and
        // F up by (V - F), so that F = V, divided by wr_coeff for a raised queue.
        let v = 100 << 22;
        let (mut w, e) = backshift_scene(v);
        w.activate(e, true, 1);
        let en = &w.entities[e];
        assert_eq!((en.start, en.finish), (v - 41_943_040, v));
        assert_eq!(be(&mut w).wsum, 100);
        // Raised 30 times: pushed by (V - F) / 30 only.
        let (mut w, e) = backshift_scene(v);
        w.activate(e, true, 30);
        let en = &w.entities[e];
        let d = (v - 62_914_560) / 30;
        assert_eq!(d, 11_883_861);
        assert_eq!((en.start, en.finish), (20_971_520 + d, 62_914_560 + d));
        // Without non_blocking_wait_rq it starts at V.
        let (mut w, e) = backshift_scene(v);
        w.activate(e, false, 1);
        assert_eq!(w.entities[e].start, v);
        // Backshifted, but the new finish is beyond V: no push.
        let (mut w, e) = backshift_scene(20_971_521);
        w.activate(e, true, 1);
        let en = &w.entities[e];
        assert_eq!((en.start, en.finish), (20_971_520, 62_914_560));
        // V not beyond the old finish: no backshifting, start at V.
        let (mut w, e) = backshift_scene(20_971_519);
        w.activate(e, true, 1);
        assert_eq!(w.entities[e].start, 20_971_519);
    }

    #[test]
    fn bfq_activate_requeue_entity_divides_the_push_by_wr_coeff_for_the_queue_only() {
        // bfq_activate_requeue_entity walks the queue's entity and its ancestors with the
        // same non_blocking_wait_rq; __bfq_activate_entity divides a backshifted entity's
        // push up to V by wr_coeff only when the entity is a queue (`if (bfqq) delta /=
        // bfqq->wr_coeff`): its group is pushed by the whole gap. A queue raised 30 times in
        // group g, both with finish times behind V (0 against V = 100 << 22), budget 1000 at
        // weight 100 (delta 41_943_040).
        let now = Nanos::ZERO;
        let mut w = Wf2q::new();
        let (g, gsd) = w.add_group(0, 100);
        let q = w.add_entity(gsd, 1, 100, None);
        for e in [q, g] {
            w.entities[e].budget = 1000;
        }
        let v = 100 << 22;
        w.sds[gsd].trees[1].vtime = v;
        be(&mut w).vtime = v;
        w.activate_requeue(q, true, 30, false, false, now);
        let d = (v - 41_943_040) / 30;
        assert_eq!(
            w.entities[q].finish,
            41_943_040 + d,
            "the queue: (V - F) / 30"
        );
        assert_eq!(w.entities[g].finish, v, "the group: up to V");
    }

    #[test]
    fn bfq_activate_entity_restarts_an_idle_entity_from_the_later_of_vtime_and_its_finish() {
        // __bfq_activate_entity: an entity on the idle tree leaves it and starts at
        // max(V, F); it stays counted in wsum.
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let b = entity(&mut w, 100, 1000);
        let c = entity(&mut w, 200, 1000);
        for e in [a, b, c] {
            w.activate(e, false, 1);
        }
        for (e, served) in [(a, 200), (b, 300)] {
            w.set_in_service(0, e);
            w.served(e, served);
            assert!(w.deactivate(e, true));
            assert_eq!(w.entities[e].tree, Tree::Idle);
        }
        // V = delta(200, 400) + delta(300, 400); F = delta(service, 100) from 0.
        assert_eq!(be(&mut w).vtime, 2_097_152 + 3_145_728);
        assert_eq!(w.entities[a].finish, 8_388_608);
        assert_eq!(w.entities[b].finish, 12_582_912);
        assert_eq!(
            be(&mut w).wsum,
            400,
            "idle entities keep their weight in wsum"
        );
        w.activate(b, false, 1);
        assert_eq!(w.entities[b].start, 12_582_912, "F > V: from F");
        assert_eq!(w.entities[b].finish, 12_582_912 + 41_943_040);
        assert_eq!(w.entities[b].tree, Tree::Active);
        be(&mut w).vtime = 9_000_000;
        w.activate(a, false, 1);
        assert_eq!(w.entities[a].start, 9_000_000, "V > F: from V");
        assert_eq!(be(&mut w).wsum, 400);
    }

    #[test]
    fn bfq_requeue_entity_moves_the_start_of_the_in_service_entity_past_its_service() {
        // __bfq_requeue_entity: for the in-service entity, bfq_calc_finish(service), then
        // S = F, then F = S + delta(budget).
        let mut w = Wf2q::new();
        let e = entity(&mut w, 100, 1000);
        let other = entity(&mut w, 100, 1000);
        w.activate(e, false, 1);
        w.activate(other, false, 1);
        w.set_in_service(0, e);
        assert_eq!(w.sds[0].in_service, Some(e));
        assert_eq!(
            w.entities[e].tree,
            Tree::None,
            "in service: off the active tree"
        );
        w.served(e, 250);
        w.requeue(e);
        let en = &w.entities[e];
        assert_eq!((en.start, en.finish), (10_485_760, 52_428_800));
        assert_eq!(en.tree, Tree::Active);
        assert_eq!(be(&mut w).wsum, 200);
        // Requeued while active and not in service (a budget change): the start stays.
        w.sds[0].in_service = None;
        w.entities[other].budget = 500;
        w.requeue(other);
        let en = &w.entities[other];
        assert_eq!((en.start, en.finish), (0, 20_971_520));
        // An entity on no tree is requeued from V and counted.
        let n = entity(&mut w, 50, 100);
        be(&mut w).vtime = 3 << 22;
        w.requeue(n);
        let en = &w.entities[n];
        assert_eq!(
            (en.start, en.finish, en.on_st),
            (3 << 22, (3 << 22) + 8_388_608, true)
        );
        assert_eq!(be(&mut w).wsum, 250);
    }

    #[test]
    fn bfq_deactivate_entity_keeps_an_entity_on_the_idle_tree_only_while_its_finish_is_ahead() {
        // __bfq_deactivate_entity: the in-service entity's finish becomes S + delta(service);
        // it goes to the idle tree if F > V (and the caller allows), else it is forgotten
        // (bfq_forget_entity: off wsum).
        let mut w = Wf2q::new();
        let e = entity(&mut w, 100, 1000);
        assert!(!w.deactivate(e, true), "never activated");
        assert_eq!(be(&mut w).wsum, 0);
        w.activate(e, false, 1);
        w.set_in_service(0, e);
        // Alone: V advances as fast as its finish: F = V, forgotten.
        w.served(e, 250);
        assert_eq!(be(&mut w).vtime, 10_485_760);
        assert!(w.deactivate(e, true));
        let en = &w.entities[e];
        assert_eq!(
            (en.finish, en.tree, en.on_st),
            (10_485_760, Tree::None, false)
        );
        assert_eq!(en.service, 250, "the in-service entity keeps its service");
        assert_eq!(w.sds[0].in_service, None);
        assert_eq!(be(&mut w).wsum, 0);
        // Beside a second entity V advances half as fast: F > V, idle.
        let f = entity(&mut w, 100, 1000);
        w.entities[e].service = 0;
        w.activate(e, false, 1);
        w.activate(f, false, 1);
        w.set_in_service(0, e);
        w.served(e, 250);
        assert!(w.deactivate(e, true));
        let en = &w.entities[e];
        assert_eq!(
            (en.finish, en.tree, en.on_st),
            (20_971_520, Tree::Idle, true)
        );
        assert_eq!(be(&mut w).wsum, 200);
        // The same without the idle tree: forgotten at once.
        w.activate(e, false, 1);
        w.set_in_service(0, e);
        assert!(w.deactivate(e, false));
        assert_eq!(
            (w.entities[e].tree, w.entities[e].on_st),
            (Tree::None, false)
        );
        assert_eq!(be(&mut w).wsum, 100);
    }

    #[test]
    fn bfq_bfqq_served_advances_each_level_by_service_over_its_trees_wsum() {
        // bfq_bfqq_served: for the entity and each ancestor, service += served and
        // st->vtime += delta(served, st->wsum).
        let mut w = Wf2q::new();
        let (g, gsd) = w.add_group(0, 100);
        let q = w.add_entity(gsd, 1, 40, None);
        let r = w.add_entity(gsd, 1, 40, None);
        let s = entity(&mut w, 300, 1000);
        for e in [q, r, g, s] {
            w.entities[e].budget = 1000;
            w.activate(e, false, 1);
        }
        assert_eq!(w.sds[gsd].trees[1].wsum, 80);
        assert_eq!(be(&mut w).wsum, 400);
        w.set_in_service(0, g);
        w.set_in_service(gsd, q);
        w.served(q, 64);
        assert_eq!(w.sds[gsd].trees[1].vtime, 3_355_443, "delta(64, 80)");
        assert_eq!(be(&mut w).vtime, 671_088, "delta(64, 400)");
        assert_eq!((w.entities[q].service, w.entities[g].service), (64, 64));
        assert_eq!((w.entities[r].service, w.entities[s].service), (0, 0));
        w.served(q, 64);
        assert_eq!(w.sds[gsd].trees[1].vtime, 6_710_886);
        assert_eq!(be(&mut w).vtime, 1_342_176);
        assert_eq!(w.entities[g].service, 128);
    }

    #[test]
    fn bfq_forget_idle_drops_the_first_idle_entity_once_vtime_reaches_its_finish() {
        // bfq_forget_idle: with the active tree empty and the last idle finish <= V, V is set
        // to that finish; then the first idle entity is forgotten if its finish <= V (one per
        // call).
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let b = entity(&mut w, 100, 1000);
        for (e, start) in [(a, 10), (b, 20)] {
            w.activate(e, false, 1);
            w.active_extract(e);
            w.entities[e].finish = start;
            w.idle_insert(e);
        }
        assert_eq!(be(&mut w).wsum, 200);
        be(&mut w).vtime = 15;
        w.forget_idle(0, 1);
        assert_eq!(
            be(&mut w).vtime,
            15,
            "the last idle finish is ahead: V stays"
        );
        assert_eq!(
            (w.entities[a].tree, w.entities[a].on_st),
            (Tree::None, false)
        );
        assert_eq!(w.entities[b].tree, Tree::Idle);
        assert_eq!(be(&mut w).wsum, 100);
        be(&mut w).vtime = 20;
        w.forget_idle(0, 1);
        assert_eq!(be(&mut w).vtime, 20);
        assert_eq!(
            (w.entities[b].tree, w.entities[b].on_st),
            (Tree::None, false)
        );
        assert_eq!(be(&mut w).wsum, 0);
        // With an active entity, V stays where it is, the due idle entity still goes.
        let c = entity(&mut w, 100, 1000);
        w.activate(c, false, 1);
        w.activate(a, false, 1);
        w.active_extract(a);
        w.entities[a].finish = 5;
        w.idle_insert(a);
        w.forget_idle(0, 1);
        assert_eq!(be(&mut w).vtime, 20, "not moved back to the idle finish");
        assert_eq!(w.entities[a].tree, Tree::None);
        // Active tree empty, V beyond every idle finish: V moves to the last one.
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let b = entity(&mut w, 100, 1000);
        for (e, f) in [(a, 10), (b, 30)] {
            w.activate(e, false, 1);
            w.active_extract(e);
            w.entities[e].finish = f;
            w.idle_insert(e);
        }
        be(&mut w).vtime = 40;
        w.forget_idle(0, 1);
        assert_eq!(be(&mut w).vtime, 30);
        assert_eq!(w.entities[a].tree, Tree::None);
        assert_eq!(w.entities[b].tree, Tree::Idle, "one per call");
    }

    #[test]
    fn bfq_entity_update_weight_prio_moves_the_weight_sum_with_the_weight() {
        // __bfq_entity_update_weight_prio: wsum -= old weight, += new weight, for an entity
        // on a tree; an entity on none only changes its weight.
        let mut w = Wf2q::new();
        let a = entity(&mut w, 40, 1000);
        let b = entity(&mut w, 100, 1000);
        w.activate(a, false, 1);
        w.set_weight(b, 300);
        assert_eq!((w.entities[b].weight, be(&mut w).wsum), (300, 40));
        w.set_weight(a, 1200);
        assert_eq!((w.entities[a].weight, be(&mut w).wsum), (1200, 1200));
        w.activate(b, false, 1);
        w.set_weight(a, 40);
        assert_eq!(be(&mut w).wsum, 340);
        w.set_weight(a, 40);
        assert_eq!(be(&mut w).wsum, 340);
    }

    #[test]
    fn bfq_lookup_next_entity_serves_the_eligible_entity_with_the_smallest_finish() {
        // __bfq_lookup_next_entity and bfq_first_active_entity: among entities with S <= V
        // the smallest F; bfq_calc_vtime_jump moves V up to the smallest S when none is
        // eligible, but only when the scheduling data has no entity in service.
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let b = entity(&mut w, 100, 10);
        assert!(!w.sds[0].has_active() && be(&mut w).active_is_empty());
        w.activate(a, false, 1);
        assert!(w.sds[0].has_active() && !be(&mut w).active_is_empty());
        be(&mut w).vtime = 1000;
        w.activate(b, false, 1);
        be(&mut w).vtime = 0;
        // a: S 0, F 41943040; b: S 1000, F 1000 + 419430. b finishes first but is not
        // eligible.
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(a));
        assert_eq!(be(&mut w).vtime, 0, "a is eligible: no jump");
        // Only b left: V jumps to its start.
        w.set_in_service(0, a);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, false), Some(b));
        assert_eq!(be(&mut w).vtime, 0, "no update without `update`");
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(b));
        assert_eq!(be(&mut w).vtime, 1000);
        // Both eligible: the smaller finish.
        w.requeue(a);
        w.sds[0].in_service = None;
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(b));
        // set_in_service takes the chosen entity off the active tree.
        w.set_in_service(0, b);
        assert_eq!(w.entities[b].tree, Tree::None);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(a));
        w.set_in_service(0, a);
        assert!(!w.sds[0].has_active(), "both in service or off the trees");
    }

    #[test]
    fn bfq_first_active_entity_serves_the_first_inserted_of_equal_finish_times() {
        // bfq_insert descends right past an entry whose finish equals the new one's, so
        // equal finish times sit in the active tree in insertion order, and
        // bfq_first_active_entity (the in-order first eligible entity) returns the one
        // inserted first, whatever the queues' creation order. Recorded on 6.18
        // (prio-aging-rt-beside-idle-writers-file): two idle-class writers requeued at the
        // same V with the same budget and weight; the one requeued first was served.
        let mut w = Wf2q::new();
        let a = entity(&mut w, 10, 16384);
        let b = entity(&mut w, 10, 16384);
        w.activate(b, false, 1);
        w.activate(a, false, 1);
        assert_eq!(w.entities[a].finish, w.entities[b].finish);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(b));
        // Set in service and requeued unserved (same timestamps), b goes behind a.
        w.set_in_service(0, b);
        w.requeue(b);
        w.sds[0].in_service = None;
        assert_eq!(w.entities[a].finish, w.entities[b].finish);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(a));
        // And a put back again goes behind b.
        w.active_extract(a);
        w.active_insert(a);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(b));
    }

    #[test]
    fn bfq_first_active_entity_returns_the_eligible_node_above_an_ineligible_left_child() {
        // bfq_first_active_entity walks the red-black tree from the root: it remembers an
        // eligible node, goes left when the left subtree's min_start is eligible, and stops
        // as soon as it remembers one and cannot go left. Recorded on 6.18.44
        // (tuned-budget-thinking-readers-and-writer-nr16-round2, 57047.038327-.050106): the
        // five queues' timestamps as bfq's calc_finish lines print them, inserted and taken
        // out (bfq_active_insert, bfq_active_extract when set in service) in the log's order.
        // The tree is then 27823 at the root, 27824 (not eligible) its left child with 27821
        // (eligible, the smallest finish of the eligible) as that child's right child, and
        // 27822 on the right: the walk goes left to 27824, finds it ineligible with no left
        // child and returns 27823, as the kernel set 27823 in service after 27820's idle
        // timeout. A search for the smallest eligible finish gives 27821.
        let mut w = Wf2q::new();
        let mut q = |start: u64, finish: u64| {
            let e = entity(&mut w, 10, 0);
            w.entities[e].start = start;
            w.entities[e].finish = finish;
            e
        };
        let q20 = q(12_384_632, 585_011_985);
        let q21 = q(12_384_632, 928_588_397);
        let q22 = q(8_724_149, 4_589_742_977);
        let q23 = q(3_355_443, 1_148_610_150);
        let q24 = q(3_355_440, 766_858_578);
        w.active_insert(q24);
        w.active_insert(q23);
        w.active_extract(q24); // set in service at .038337
        w.active_insert(q22);
        w.active_insert(q21);
        w.active_insert(q20); // preempts 27824 at .038679
        w.entities[q24].start = 19_014_174;
        w.entities[q24].finish = 782_517_312;
        w.active_insert(q24); // 27824 requeued
        w.active_extract(q20); // set in service at .038686
        let tree = &w.sds[0].trees[1].active;
        assert_eq!(
            tree.shape(&w.entities),
            vec![
                (q24, None, Some(q21), false),
                (q21, None, None, true),
                (q23, Some(q24), Some(q22), false),
                (q22, None, None, false),
            ],
            "(entity, left, right, red) in finish order"
        );
        assert_eq!(tree.min_start(&w.entities), Some(3_355_443));
        w.sds[0].in_service = Some(q20);
        be(&mut w).vtime = 12_384_632;
        assert_eq!(w.lookup_next(0, Nanos::ZERO, false), Some(q23));
        // 27820's 48 sectors over the weight sum 240 leave 27821 eligible and hidden.
        be(&mut w).vtime += delta(48, 240);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(q23));
        // With 27823 gone the walk reaches 27824's subtree again and finds 27821.
        w.active_extract(q23);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(q21));
    }

    #[test]
    fn bfq_forget_idle_forgets_the_first_inserted_of_equal_idle_finish_times() {
        // bfq_idle_insert moves first_idle only to a strictly smaller finish, and
        // bfq_idle_extract moves it to the in-order next entity: of equal finish times the
        // entity that went idle first is forgotten first (one per bfq_forget_idle).
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let b = entity(&mut w, 100, 1000);
        let c = entity(&mut w, 100, 1000);
        for e in [c, b, a] {
            w.activate(e, false, 1);
        }
        for e in [b, a] {
            w.active_extract(e);
            w.entities[e].finish = 10;
            w.idle_insert(e);
        }
        be(&mut w).vtime = 10;
        w.forget_idle(0, 1);
        assert_eq!(w.entities[b].tree, Tree::None, "b went idle first");
        assert_eq!(w.entities[a].tree, Tree::Idle);
        w.forget_idle(0, 1);
        assert_eq!(w.entities[a].tree, Tree::None);
    }

    #[test]
    fn bfq_update_vtime_forgets_idle_entities_only_when_vtime_moves() {
        // bfq_update_vtime: V changes (and bfq_forget_idle runs) only if the jump target is
        // beyond V.
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let i = entity(&mut w, 100, 1000);
        w.activate(i, false, 1);
        w.active_extract(i);
        w.entities[i].finish = 10;
        w.idle_insert(i);
        be(&mut w).vtime = 50;
        w.activate(a, false, 1);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(a));
        assert_eq!(
            w.entities[i].tree,
            Tree::Idle,
            "V did not move: nothing forgotten"
        );
        assert_eq!(be(&mut w).wsum, 200);
        // Now a starts beyond V: the jump forgets the idle entity.
        w.active_extract(a);
        w.entities[a].start = 60;
        w.active_insert(a);
        assert_eq!(w.lookup_next(0, Nanos::ZERO, true), Some(a));
        assert_eq!(be(&mut w).vtime, 60);
        assert_eq!(w.entities[i].tree, Tree::None);
        assert_eq!(be(&mut w).wsum, 100);
    }

    #[test]
    fn bfq_lookup_next_entity_serves_higher_classes_first_and_the_idle_class_every_200_ms() {
        // bfq_lookup_next_entity: classes in order RT, BE, IDLE, except that once
        // BFQ_CL_IDLE_TIMEOUT (HZ / 5) has passed since the idle class was last considered,
        // the idle class goes first if backlogged; the timestamp moves either way, in every
        // lookup.
        let mut w = Wf2q::new();
        let idle = w.add_entity(0, 2, 10, None);
        let be_e = w.add_entity(0, 1, 40, None);
        let rt = w.add_entity(0, 0, 40, None);
        for e in [idle, be_e, rt] {
            w.entities[e].budget = 100;
            w.activate(e, false, 1);
        }
        assert_eq!(w.lookup_next(0, Nanos::from_ms(200), false), Some(rt));
        assert_eq!(w.sds[0].idle_class_last_service, Nanos::ZERO);
        // Every lookup checks the stamp, whatever triggered it.
        assert_eq!(w.lookup_next(0, Nanos(200_000_001), false), Some(idle));
        assert_eq!(w.sds[0].idle_class_last_service, Nanos(200_000_001));
        assert_eq!(w.lookup_next(0, Nanos::from_ms(300), true), Some(rt));
        w.set_in_service(0, rt);
        assert_eq!(w.lookup_next(0, Nanos::from_ms(300), true), Some(be_e));
        // The idle class empty when the timeout passes: the stamp still moves.
        w.set_in_service(0, idle);
        assert_eq!(w.lookup_next(0, Nanos::from_ms(500), true), Some(be_e));
        assert_eq!(w.sds[0].idle_class_last_service, Nanos::from_ms(500));
    }

    #[test]
    fn bfq_requeue_entity_charges_the_in_service_service_at_the_old_weight_before_a_pending_change()
    {
        // __bfq_requeue_entity charges the in-service entity the service it received at its
        // current weight (bfq_calc_finish(entity, entity->service), start = finish); only then
        // does bfq_update_fin_time_enqueue apply a pending weight change
        // (__bfq_entity_update_weight_prio) and compute the new budget's finish. A queue whose
        // soft real-time raising ends (its weight 3000 -> 30)
        // is so charged at the raised weight: charged at the new one, its start would move
        // 100 times as far and another group would be served first.
        let now = Nanos::ZERO;
        let mut w = Wf2q::new();
        let a = entity(&mut w, 3000, 1000);
        w.activate_requeue(a, false, 1, false, false, now);
        assert_eq!(w.get_next(now), Some(a));
        w.served(a, 1000);
        let start = w.entities[a].start;
        w.activate_requeue_weighted(a, Some(30), false, 1, true, true, now);
        assert_eq!(w.entities[a].weight, 30);
        assert_eq!(w.entities[a].start, start + delta(1000, 3000));
        assert_eq!(
            w.entities[a].finish,
            start + delta(1000, 3000) + delta(1000, 30)
        );
        assert_eq!(
            be(&mut w).wsum,
            30,
            "the tree's weight sum follows the change"
        );
    }

    #[test]
    fn bfq_update_next_in_service_caches_without_a_lookup_so_v_does_not_jump() {
        // bfq_get_next_queue sets in service sd->next_in_service as cached, without calling
        // bfq_lookup_next_entity; bfq_update_next_in_service fills an empty cache with the
        // newly activated entity without a lookup. So an entity activated while another is in
        // service, with its start beyond V, is served without bfq_update_vtime jumping V to
        // its start (a lookup at the selection would).
        let now = Nanos::ZERO;
        let mut w = Wf2q::new();
        let a = entity(&mut w, 100, 1000);
        let b = entity(&mut w, 100, 4000);
        w.activate_requeue(a, false, 1, false, false, now);
        w.activate_requeue(b, false, 1, false, false, now);
        assert_eq!(
            w.sds[0].next_in_service,
            Some(a),
            "F 41943040 before 167772160"
        );
        // a uses up its budget and is requeued on expiration; b is next.
        assert_eq!(w.get_next(now), Some(a));
        w.served(a, 1000);
        w.activate_requeue(a, false, 1, true, true, now);
        w.reset_in_service(a);
        assert_eq!(w.sds[0].next_in_service, Some(b));
        // b is served 3000 sectors and goes idle with F ahead of V.
        assert_eq!(w.get_next(now), Some(b));
        assert_eq!(
            w.sds[0].next_in_service,
            Some(a),
            "looked up after b was set"
        );
        w.served(b, 3000);
        w.deactivate_entity(b, true, true, now);
        w.reset_in_service(b);
        assert_eq!(w.entities[b].tree, Tree::Idle);
        assert_eq!(w.entities[b].finish, 125_829_120);
        assert_eq!(be(&mut w).vtime, 20_971_520 + 62_914_560);
        // a in service (nothing else active: nothing cached), served a little.
        assert_eq!(w.get_next(now), Some(a));
        assert_eq!(w.sds[0].next_in_service, None);
        w.served(a, 100);
        let v = be(&mut w).vtime;
        assert_eq!(v, 83_886_080 + 2_097_152);
        // b comes back from the idle tree at S = its old F > V: cached without a lookup.
        w.activate_requeue(b, false, 1, false, false, now);
        assert_eq!(w.entities[b].start, 125_829_120);
        assert_eq!(w.sds[0].next_in_service, Some(b));
        assert_eq!(be(&mut w).vtime, v);
        // a empties and leaves; b was not a, so no lookup on the deactivation either.
        w.deactivate_entity(a, true, true, now);
        w.reset_in_service(a);
        assert_eq!(w.get_next(now), Some(b));
        assert_eq!(be(&mut w).vtime, v, "V does not jump to b's start");
        assert!(w.entities[b].start > be(&mut w).vtime);
        // A lookup, as the selection used to make, would have jumped it.
        w.sds[0].in_service = None;
        w.active_insert(b);
        assert_eq!(w.lookup_next(0, now, false), Some(b));
        assert_eq!(be(&mut w).vtime, 125_829_120);
    }
}
