//! The block layer's decisions that the hand-built situations in `tests.rs` left unpinned:
//! what each bio's [`Done`] reports, the observer's steps, the rq_qos hooks' calls, the
//! device's room, splitting against both limits, requeue, the idle timer's generations and the
//! scheduler switch. Each was found by mutation testing (docs/mutation-testing.md, "block/ and
//! latency_guard.rs").

use super::*;
use std::cell::RefCell;
use std::rc::Rc;

/// Noop (a FIFO that merges at its tail, like `none`) with knobs: a size limit of its own, a
/// switch between issuing directly and waiting in the scheduler, a hold that makes it idle,
/// and a record of the exits it was told of.
#[derive(Default)]
struct Probe {
    fifo: Noop,
    max: Option<u32>,
    queues: bool,
    /// Idle until this time while set.
    hold: Option<Nanos>,
    exits: Vec<CtxId>,
    /// The operations of the bios offered for merging.
    offered: Vec<Op>,
}

impl Scheduler for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        self.offered.push(rq.op);
        self.fifo.try_merge(rq, max_sectors, now)
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.fifo.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        match self.hold {
            Some(until) if self.fifo.queued() > 0 => Dispatch::Idle { until },
            _ => self.fifo.dispatch(now),
        }
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.fifo.complete(rq, now);
    }
    fn exit(&mut self, ctx: CtxId, _now: Nanos) {
        self.exits.push(ctx);
        self.hold = None;
    }
    fn queued(&self) -> usize {
        self.fifo.queued()
    }
    fn max_request_sectors(&self) -> Option<u32> {
        self.max
    }
    fn issues_directly(&self) -> bool {
        !self.queues
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), crate::TunableError> {
        self.fifo.set_tunable(name, value)
    }
}

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

fn read(sector: u64, sectors: u32) -> Bio {
    Bio::new(CtxId(1), Op::Read, sector, sectors)
}

fn write(sector: u64, sectors: u32) -> Bio {
    Bio::new(CtxId(1), Op::Write, sector, sectors).sync(true)
}

fn drain<S: Scheduler, T: Copy>(blk: &mut BlockLayer<S, T>, now: Nanos) -> Vec<Request> {
    std::iter::from_fn(|| blk.poll_dispatch(now)).collect()
}

fn extents(rqs: &[Request]) -> Vec<(u64, u32)> {
    rqs.iter().map(|r| (r.sector, r.sectors)).collect()
}

#[test]
fn limits_keep_a_device_of_at_least_one_request_and_one_sector() {
    assert_eq!(Limits::depth(0).queue_depth, 1);
    assert_eq!(Limits::depth(0).max_sectors(0).max_sectors, Some(1));
    assert_eq!(Limits::depth(3).max_sectors(64).max_sectors, Some(64));
    let l = Limits::depth(3).nomerges(NoMerges::None);
    assert_eq!((l.queue_depth, l.nomerges), (3, NoMerges::None));
    let mut blk: BlockLayer<Noop, ()> = BlockLayer::new(Noop::new(), Limits::depth(2));
    assert_eq!(blk.limits(), Limits::depth(2));
    blk.set_queue_depth(0);
    assert_eq!(blk.limits().queue_depth, 1);
}

#[test]
fn a_deeper_queue_takes_the_waiting_requests_at_once() {
    // blk_mq_update_nr_requests / a larger hardware queue: the dispatch list runs again.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(1));
    for i in 0..3 {
        blk.handle_submit(read(i * 100, 8), i, ms(0));
    }
    assert_eq!(drain(&mut blk, ms(0)).len(), 1);
    blk.set_queue_depth(3);
    assert_eq!(drain(&mut blk, ms(0)).len(), 2);
    assert_eq!(blk.in_flight(), 3);
}

#[test]
fn each_done_reports_its_bio_the_queue_and_the_device_as_they_were() {
    // Depth 2: three reads queue (1, 2, 3 in the scheduler as each is inserted), two go at
    // once (1 and 2 at the device), the third when the first completes (2 again).
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(2));
    for i in 0..3u64 {
        let bio = Bio::new(CtxId(i as u32 + 1), Op::Read, i * 100, 8);
        blk.handle_submit(bio, i, ms(i));
    }
    let first = drain(&mut blk, ms(3));
    assert_eq!(first.len(), 2);
    let mut done = Vec::new();
    blk.handle_complete(first[0].id, true, ms(5), &mut done);
    let third = drain(&mut blk, ms(6));
    blk.handle_complete(first[1].id, true, ms(7), &mut done);
    blk.handle_complete(third[0].id, false, ms(9), &mut done);
    let at = |ms_: u64| Nanos::from_ms(ms_);
    let expect = |i: u64, dispatched: u64, queued: u32, in_flight: u32, ok: bool| Done {
        token: i,
        op: Op::Read,
        ctx: CtxId(i as u32 + 1),
        sector: i * 100,
        sectors: 8,
        submitted: at(i),
        dispatched: at(dispatched),
        tagged: at(dispatched),
        queued,
        in_flight,
        merged: false,
        whole: Some(8 * 512),
        ok,
    };
    assert_eq!(
        done,
        [
            expect(0, 3, 1, 1, true),
            expect(1, 3, 2, 2, true),
            expect(2, 6, 3, 2, false)
        ]
    );
    assert_eq!(blk.counters().completed, 3);
    assert_eq!(blk.counters().dispatched, 3);
    assert_eq!(blk.counters().inserted, 3);
}

#[test]
fn a_merged_bio_reports_the_requests_queued_when_it_merged() {
    // blk_mq_sched_bio_merge: the bio allocates no request, so the queue it saw is the
    // requests already inserted and not yet dispatched.
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    blk.handle_submit(write(0, 8), 0u32, ms(0));
    let busy = drain(&mut blk, ms(0));
    blk.handle_submit(write(100, 8), 1, ms(1));
    blk.handle_submit(write(300, 8), 2, ms(1));
    blk.handle_submit(write(108, 8), 3, ms(2));
    assert_eq!(blk.counters().merged, 1);
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(3), &mut done);
    let next = drain(&mut blk, ms(3));
    assert_eq!(extents(&next), [(100, 16)]);
    done.clear();
    blk.handle_complete(next[0].id, true, ms(4), &mut done);
    let q: Vec<(u32, u32, bool, Nanos)> = done
        .iter()
        .map(|d| (d.token, d.queued, d.merged, d.submitted))
        .collect();
    assert_eq!(q, [(1, 1, false, ms(1)), (3, 2, true, ms(2))]);
    assert_eq!(blk.counters().completed, 2, "two requests");
    assert_eq!(blk.bios_completed(), 3, "two bios on one request");
}

/// Records every step the layer reports.
#[derive(Default)]
struct Log {
    steps: Vec<(Event, u64, u64, u32)>,
    procs: Vec<(CtxId, u32, String, Nanos)>,
}

impl Observer for Log {
    fn process(&mut self, ctx: CtxId, pid: u32, name: &str, now: Nanos) {
        self.procs.push((ctx, pid, name.to_string(), now));
    }
    fn event(&mut self, event: Event, rq: &Request, _now: Nanos) {
        self.steps.push((event, rq.id.0, rq.sector, rq.sectors));
    }
}

#[test]
fn the_observer_sees_queue_merge_insert_issue_and_complete_as_blktrace_names_them() {
    let log = Rc::new(RefCell::new(Log::default()));
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    assert!(!blk.observed());
    blk.set_observer(Box::new(log.clone()));
    assert!(blk.observed());
    blk.observe_process(CtxId(1), 4242, "dd", ms(0));
    blk.handle_submit(write(0, 8), (), ms(0));
    let a = drain(&mut blk, ms(0));
    blk.handle_submit(write(100, 8), (), ms(1));
    blk.handle_submit(write(108, 8), (), ms(1));
    let mut done = Vec::new();
    blk.handle_complete(a[0].id, true, ms(2), &mut done);
    use Event::*;
    assert_eq!(
        log.borrow().steps,
        [
            (Queue, 1, 0, 8),
            (Insert, 1, 0, 8),
            (Issue, 1, 0, 8),
            (Queue, 2, 100, 8),
            (Insert, 2, 100, 8),
            (Queue, 3, 108, 8),
            (Merge, 3, 108, 8),
            (Complete, 1, 0, 8),
        ]
    );
    assert_eq!(
        log.borrow().procs,
        [(CtxId(1), 4242, "dd".to_string(), ms(0))]
    );
}

#[test]
fn each_piece_of_a_split_bio_is_queued_and_inserted_as_a_request() {
    let log = Rc::new(RefCell::new(Log::default()));
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4).max_sectors(8));
    blk.set_observer(Box::new(log.clone()));
    blk.handle_submit(read(40, 12), (), ms(0));
    use Event::*;
    assert_eq!(
        log.borrow().steps,
        [
            (Queue, 1, 40, 8),
            (Insert, 1, 40, 8),
            (Queue, 2, 48, 4),
            (Insert, 2, 48, 4)
        ]
    );
}

#[test]
fn the_smaller_of_the_device_and_scheduler_limits_splits_and_only_reads_and_writes() {
    // bio_split_to_limits cuts at the queue's max_sectors; a policy's own limit
    // (max_request_sectors) cuts the same way, and the smaller wins.
    let split = |sched: Option<u32>, dev: Option<u32>, bio: Bio| {
        let limits = match dev {
            Some(m) => Limits::depth(8).max_sectors(m),
            None => Limits::depth(8),
        };
        let probe = Probe {
            max: sched,
            ..Probe::default()
        };
        let mut blk = BlockLayer::new(probe, limits);
        blk.handle_submit(bio, (), ms(0));
        extents(&drain(&mut blk, ms(0)))
    };
    let eight = [(0, 8), (8, 8), (16, 4)];
    assert_eq!(split(Some(8), Some(16), read(0, 20)), eight);
    assert_eq!(split(Some(16), Some(8), read(0, 20)), eight);
    assert_eq!(split(Some(8), None, write(0, 20)), eight);
    assert_eq!(split(None, Some(8), write(0, 20)), eight);
    assert_eq!(split(Some(20), None, read(0, 20)), [(0, 20)], "fits");
    assert_eq!(split(Some(0), None, read(0, 20)), [(0, 20)], "0: no limit");
    let discard = Bio::new(CtxId(1), Op::Discard, 0, 20);
    assert_eq!(split(Some(8), Some(8), discard), [(0, 20)]);
}

#[test]
fn a_bio_that_fits_the_limit_is_offered_for_merging_and_a_split_ones_pieces_are_not() {
    // bio_split_to_limits leaves a bio of exactly max_sectors whole, and it goes on to
    // blk_mq_sched_bio_merge; the pieces of a split bio are inserted (the deviation the module
    // documentation names).
    let offered = |bio: Bio| {
        let probe = Probe {
            max: Some(8),
            queues: true,
            ..Probe::default()
        };
        let mut blk = BlockLayer::new(probe, Limits::depth(1));
        blk.handle_submit(bio, (), ms(0));
        blk.scheduler().offered.clone()
    };
    assert_eq!(offered(read(0, 8)), [Op::Read]);
    assert!(offered(read(0, 9)).is_empty());
}

#[test]
fn discards_and_flushes_are_never_offered_for_merging() {
    // blk_mq_sched_bio_merge / bio_mergeable: only reads and writes merge here.
    let mut blk = BlockLayer::new(
        Probe {
            queues: true,
            ..Probe::default()
        },
        Limits::depth(1),
    );
    blk.handle_submit(write(0, 8), (), ms(0));
    drain(&mut blk, ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Discard, 100, 8), (), ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Discard, 108, 8), (), ms(0));
    blk.handle_submit(Bio::new(CtxId(1), Op::Flush, 0, 0), (), ms(0));
    assert_eq!(blk.counters().merged, 0);
    assert_eq!(blk.scheduler().offered, [Op::Write]);
    blk.handle_submit(write(200, 8), (), ms(0));
    blk.handle_submit(write(208, 8), (), ms(0));
    assert_eq!(blk.counters().merged, 1, "a write still merges");
    assert_eq!(blk.scheduler().offered.len(), 3);
}

#[test]
fn under_none_a_bio_does_not_merge_while_the_device_has_room_for_the_queue() {
    // blk_mq_try_issue_directly: depth 2, one at the device, one queued: the queued one would
    // already be issued, so a bio adjacent to it finds nothing to merge into.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(2));
    blk.handle_submit(write(0, 8), (), ms(0));
    assert_eq!(drain(&mut blk, ms(0)).len(), 1);
    blk.handle_submit(write(100, 8), (), ms(0));
    blk.handle_submit(write(108, 8), (), ms(0));
    assert_eq!(blk.counters().merged, 0);
    // A policy that keeps requests merges whatever the device's room.
    let queues = Probe {
        queues: true,
        ..Probe::default()
    };
    let mut blk = BlockLayer::new(queues, Limits::depth(8));
    blk.handle_submit(write(100, 8), (), ms(0));
    blk.handle_submit(write(108, 8), (), ms(0));
    assert_eq!(blk.counters().merged, 1);
}

#[test]
fn a_back_merge_keeps_the_requests_start_and_a_front_merge_moves_it() {
    // elv_merge: ELEVATOR_BACK_MERGE appends, ELEVATOR_FRONT_MERGE prepends (the request's
    // __sector moves to the bio's).
    let mut blk = BlockLayer::new(Deadline::new(Default::default()), Limits::depth(1));
    blk.handle_submit(write(0, 8), (), ms(0));
    let busy = drain(&mut blk, ms(0));
    blk.handle_submit(write(100, 8), (), ms(0));
    blk.handle_submit(write(108, 8), (), ms(0));
    let mut done = Vec::new();
    blk.handle_complete(busy[0].id, true, ms(1), &mut done);
    let back = drain(&mut blk, ms(1));
    assert_eq!(extents(&back), [(100, 16)]);
    blk.handle_submit(write(300, 8), (), ms(1));
    blk.handle_submit(write(292, 8), (), ms(1));
    blk.handle_complete(back[0].id, true, ms(2), &mut done);
    assert_eq!(extents(&drain(&mut blk, ms(2))), [(292, 16)]);
}

fn whole_ms(t: Nanos) -> u64 {
    t.as_ns() / 1_000_000
}

/// Records the hook calls it sees; lets everything through.
struct Rec {
    name: &'static str,
    log: Rc<RefCell<Vec<String>>>,
}

impl QosHook for Rec {
    fn name(&self) -> &'static str {
        self.name
    }
    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        self.log.borrow_mut().push(format!(
            "{} throttle {} @{}",
            self.name,
            bio.sector,
            whole_ms(now)
        ));
        Admit::Now
    }
    fn issue(&mut self, rq: &Request, now: Nanos) {
        self.log.borrow_mut().push(format!(
            "{} issue {} @{}",
            self.name,
            rq.sector,
            whole_ms(now)
        ));
    }
    fn done(&mut self, rq: &Request, dispatched: Nanos, now: Nanos) {
        self.log.borrow_mut().push(format!(
            "{} done {}+{} from {} @{}",
            self.name,
            rq.sector,
            rq.sectors,
            whole_ms(dispatched),
            whole_ms(now)
        ));
    }
    fn done_bio(&mut self, bio: &BioEnd, now: Nanos) {
        self.log.borrow_mut().push(format!(
            "{} done_bio key {} {} bytes ok {} since {} @{}",
            self.name,
            bio.key,
            bio.bytes,
            bio.ok,
            whole_ms(bio.submitted),
            whole_ms(now)
        ));
    }
}

#[test]
fn every_hook_in_order_sees_the_issue_the_completion_and_each_bios_end() {
    // rq_qos_issue, rq_qos_done, rq_qos_done_bio: each controller on the chain, in order;
    // a split bio ends once, with its last piece, with the whole bio's bytes.
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut chain = QosChain::default();
    for name in ["a", "b"] {
        chain.push(Box::new(Rec {
            name,
            log: log.clone(),
        }));
    }
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4).max_sectors(8));
    blk.set_qos(chain);
    assert_eq!(blk.qos().names(), ["a", "b"]);
    blk.handle_submit(read(0, 16), (), ms(1));
    let rqs = drain(&mut blk, ms(2));
    let mut done = Vec::new();
    blk.handle_complete(rqs[1].id, false, ms(3), &mut done);
    blk.handle_complete(rqs[0].id, true, ms(4), &mut done);
    assert_eq!(
        *log.borrow(),
        [
            "a throttle 0 @1",
            "b throttle 0 @1",
            "a issue 0 @2",
            "b issue 0 @2",
            "a issue 8 @2",
            "b issue 8 @2",
            "a done 8+8 from 2 @3",
            "b done 8+8 from 2 @3",
            "a done 0+8 from 2 @4",
            "b done 0+8 from 2 @4",
            "a done_bio key 1 8192 bytes ok false since 1 @4",
            "b done_bio key 1 8192 bytes ok false since 1 @4",
        ]
    );
    assert_eq!(done[0].whole, None, "the first piece back ends nothing");
    assert!(!done[0].ok, "the piece's own status");
    assert_eq!(done[1].whole, Some(8192));
    assert!(!done[1].ok, "a piece failed: the bio failed");
}

/// Keeps each bio until `poll_release`, which lets one go per call while `open`.
struct Gate {
    held: VecDeque<u64>,
    open: Rc<RefCell<bool>>,
    asked: Rc<RefCell<u32>>,
}

impl QosHook for Gate {
    fn name(&self) -> &'static str {
        "gate"
    }
    fn throttle(&mut self, bio: &Request, _now: Nanos) -> Admit {
        *self.asked.borrow_mut() += 1;
        self.held.push_back(bio.id.0);
        Admit::Hold
    }
    fn poll_release(&mut self, _now: Nanos) -> Option<u64> {
        if *self.open.borrow() {
            self.held.pop_front()
        } else {
            None
        }
    }
}

#[test]
fn a_released_bio_is_offered_only_to_the_hooks_after_the_one_that_held_it() {
    // blk-throttle's dispatch hands the bio on down the submission path, not back to itself.
    let open = Rc::new(RefCell::new(false));
    let asked = Rc::new(RefCell::new(0));
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    blk.add_qos(Box::new(Gate {
        held: VecDeque::new(),
        open: open.clone(),
        asked: asked.clone(),
    }));
    blk.add_qos(Box::new(Rec {
        name: "next",
        log: log.clone(),
    }));
    blk.handle_submit(read(0, 8), (), ms(0));
    blk.handle_submit(read(100, 8), (), ms(0));
    assert_eq!(blk.queued(), 2, "two held bios are queued");
    assert!(!blk.is_idle());
    assert!(drain(&mut blk, ms(0)).is_empty());
    assert!(log.borrow().is_empty(), "the next hook has not seen them");
    *open.borrow_mut() = true;
    // A completion or a timeout is when the layer asks the hooks what they release.
    blk.handle_qos_timeout(ms(1));
    assert_eq!(drain(&mut blk, ms(1)).len(), 2);
    assert_eq!(*asked.borrow(), 2, "the gate was asked once per bio");
    assert_eq!(
        *log.borrow(),
        [
            "next throttle 0 @1",
            "next throttle 100 @1",
            "next issue 0 @1",
            "next issue 100 @1"
        ]
    );
}

/// io.latency's shape: at most one bio at the device; others wait a second or until a
/// completion, whichever comes first. The second time a bio is asked about, it is handed to
/// `then` if set.
struct OneAtATime {
    in_flight: u32,
    wait: Nanos,
    then: Option<Admit>,
    asked: Vec<u64>,
    released: VecDeque<u64>,
}

impl QosHook for OneAtATime {
    fn name(&self) -> &'static str {
        "one"
    }
    fn throttle(&mut self, bio: &Request, now: Nanos) -> Admit {
        let again = self.asked.contains(&bio.id.0);
        self.asked.push(bio.id.0);
        if self.in_flight == 0 {
            self.in_flight += 1;
            return Admit::Now;
        }
        match self.then {
            Some(Admit::Hold) if again => {
                self.released.push_back(bio.id.0);
                Admit::Hold
            }
            _ => Admit::Wait {
                until: now + self.wait,
            },
        }
    }
    fn poll_release(&mut self, _now: Nanos) -> Option<u64> {
        self.released.pop_front()
    }
    fn done(&mut self, _rq: &Request, _dispatched: Nanos, _now: Nanos) {
        self.in_flight -= 1;
    }
}

fn one_at_a_time(then: Option<Admit>) -> OneAtATime {
    OneAtATime {
        in_flight: 0,
        wait: ms(1000),
        then,
        asked: Vec::new(),
        released: VecDeque::new(),
    }
}

#[test]
fn a_waiting_bio_is_asked_again_at_a_completion_before_its_time() {
    // rq_qos_wait: a throttled submitter is woken by a completion (rq_qos_done -> wake_up),
    // and otherwise sleeps.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    blk.add_qos(Box::new(one_at_a_time(None)));
    for i in 0..3 {
        blk.handle_submit(read(i * 100, 8), i, ms(0));
    }
    let a = drain(&mut blk, ms(0));
    assert_eq!(extents(&a), [(0, 8)]);
    assert_eq!(blk.queued(), 2, "two wait at the controller");
    assert_eq!(blk.qos_timeout(), Some(ms(1000)));
    assert_eq!(blk.poll_timeout(), Some(ms(1000)));
    // Before their time, a timeout does not ask again.
    blk.handle_timeout(ms(500));
    assert!(drain(&mut blk, ms(500)).is_empty());
    let mut done = Vec::new();
    blk.handle_complete(a[0].id, true, ms(600), &mut done);
    let b = drain(&mut blk, ms(600));
    assert_eq!(
        extents(&b),
        [(100, 8)],
        "the first waiter goes at the completion"
    );
    assert_eq!(
        b[0].submitted,
        ms(0),
        "its latency counts from its submission"
    );
    // The other was asked again and told to wait anew, from the completion.
    assert_eq!(blk.qos_timeout(), Some(ms(1600)));
    assert_eq!(blk.queued(), 1);
}

#[test]
fn a_timeout_asks_again_only_about_the_bios_whose_time_has_come() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    blk.add_qos(Box::new(one_at_a_time(None)));
    blk.handle_submit(read(0, 8), (), ms(0));
    blk.handle_submit(read(100, 8), (), ms(0));
    blk.handle_submit(read(200, 8), (), ms(500));
    assert_eq!(blk.qos_timeout(), Some(ms(1000)));
    blk.handle_qos_timeout(ms(1000));
    // The first waiter was asked again (and waits until 2000 ms); the second, due at 1500 ms,
    // was not.
    assert_eq!(blk.qos_timeout(), Some(ms(1500)));
    blk.handle_qos_timeout(ms(1500));
    assert_eq!(blk.qos_timeout(), Some(ms(2000)));
    assert_eq!(blk.queued(), 3, "the first in the scheduler, two waiting");
}

#[test]
fn a_waiting_bio_the_hook_then_keeps_is_released_from_its_queue() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
    blk.add_qos(Box::new(one_at_a_time(Some(Admit::Hold))));
    blk.handle_submit(read(0, 8), (), ms(0));
    blk.handle_submit(read(100, 8), (), ms(0));
    let a = drain(&mut blk, ms(0));
    assert_eq!(a.len(), 1);
    // At its time, asked again: the hook queues it and releases it at once.
    blk.handle_qos_timeout(ms(1000));
    assert_eq!(extents(&drain(&mut blk, ms(1000))), [(100, 8)]);
    assert_eq!(blk.queued(), 0);
    assert_eq!(blk.qos_timeout(), None);
}

#[test]
fn the_layers_timeout_is_the_earlier_of_the_schedulers_and_the_controllers() {
    let run = |idle: u64, wait: u64| {
        let mut hook = one_at_a_time(None);
        hook.wait = ms(wait);
        let probe = Probe {
            hold: Some(ms(idle)),
            ..Probe::default()
        };
        let mut blk = BlockLayer::new(probe, Limits::depth(4));
        blk.add_qos(Box::new(hook));
        blk.handle_submit(read(0, 8), (), ms(0));
        blk.handle_submit(read(100, 8), (), ms(0));
        assert!(drain(&mut blk, ms(0)).is_empty());
        assert_eq!(blk.timer().map(|t| t.0), Some(ms(idle)));
        assert_eq!(blk.qos_timeout(), Some(ms(wait)));
        blk.poll_timeout()
    };
    assert_eq!(run(10, 5), Some(ms(5)));
    assert_eq!(run(5, 10), Some(ms(5)));
}

/// Idles until the next of its deadlines, one per call, then dispatches.
struct Deadlines(Noop, VecDeque<Nanos>);

impl Scheduler for Deadlines {
    fn name(&self) -> &'static str {
        "deadlines"
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.0.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        match self.1.pop_front() {
            Some(until) => Dispatch::Idle { until },
            None => self.0.dispatch(now),
        }
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.0.complete(rq, now);
    }
    fn queued(&self) -> usize {
        self.0.queued()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), crate::TunableError> {
        self.0.set_tunable(name, value)
    }
}

#[test]
fn a_new_idle_deadline_is_a_new_timer_generation_and_a_stale_one_is_ignored() {
    // The kernel re-arms one timer (mod_timer / hrtimer_start); a discrete-event driver sees
    // each new deadline as a new generation and drops the events of older ones.
    let sched = Deadlines(Noop::new(), [ms(10), ms(20), ms(20)].into());
    let mut blk = BlockLayer::new(sched, Limits::depth(4));
    blk.handle_submit(read(0, 8), (), ms(0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    let (t1, g1) = blk.timer().unwrap();
    assert_eq!(t1, ms(10));
    blk.handle_timer(g1 + 1);
    assert_eq!(
        blk.timer(),
        Some((ms(10), g1)),
        "not this timer's generation"
    );
    assert!(drain(&mut blk, ms(1)).is_empty());
    blk.handle_timer(g1);
    assert_eq!(blk.timer(), None);
    assert!(
        drain(&mut blk, ms(10)).is_empty(),
        "asked again: idles to 20 ms"
    );
    let (t2, g2) = blk.timer().unwrap();
    assert_eq!(t2, ms(20));
    assert_ne!(g2, g1);
    blk.handle_timer(g1);
    assert_eq!(blk.timer(), Some((ms(20), g2)), "a stale generation");
    assert!(drain(&mut blk, ms(11)).is_empty(), "and no dispatch");
    blk.handle_timeout(ms(19));
    assert_eq!(blk.timer(), Some((ms(20), g2)), "not due yet");
    assert!(drain(&mut blk, ms(19)).is_empty());
    blk.handle_timeout(ms(20));
    assert_eq!(blk.timer(), None, "due");
    assert!(
        drain(&mut blk, ms(20)).is_empty(),
        "idles to 20 ms once more"
    );
    let (t3, g3) = blk.timer().unwrap();
    assert_eq!(t3, ms(20));
    assert_ne!(g3, g2, "re-armed after it fired: a new generation");
    blk.handle_timer(g3);
    assert_eq!(drain(&mut blk, ms(20)).len(), 1);
    assert_eq!(blk.timer(), None);
}

#[test]
fn a_dispatch_disarms_the_idle_timer() {
    // The scheduler stops idling when it dispatches (as AS and CFQ del_timer on dispatch).
    let sched = Deadlines(Noop::new(), [ms(10)].into());
    let mut blk = BlockLayer::new(sched, Limits::depth(4));
    blk.handle_submit(read(0, 8), (), ms(0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    assert!(blk.timer().is_some());
    blk.handle_submit(read(100, 8), (), ms(2));
    assert_eq!(drain(&mut blk, ms(2)).len(), 2);
    assert_eq!(blk.timer(), None);
    assert_eq!(blk.poll_timeout(), None);
}

#[test]
fn a_request_taken_to_wait_for_a_driver_tag_disarms_the_idle_timer() {
    // `__blk_mq_do_dispatch_sched` calls the scheduler's `dispatch_request` before
    // `blk_mq_get_driver_tag` fails (a driver without a dispatch budget): the scheduler gave a
    // request, so it stopped idling then, though the request waits on `hctx->dispatch`.
    let limits = Limits::depth(1).dequeues_without_driver_tag(true);
    let probe = Probe {
        queues: true,
        ..Probe::default()
    };
    let mut blk = BlockLayer::new(probe, limits);
    blk.handle_submit(read(0, 8), (), ms(0));
    assert_eq!(drain(&mut blk, ms(0)).len(), 1);
    blk.scheduler_mut().hold = Some(ms(50));
    blk.handle_submit(read(100, 8), (), ms(1));
    assert!(drain(&mut blk, ms(1)).is_empty());
    assert_eq!(
        blk.poll_timeout(),
        Some(ms(50)),
        "idling with every tag taken"
    );
    blk.scheduler_mut().hold = None;
    blk.handle_submit(read(200, 8), (), ms(2));
    assert!(drain(&mut blk, ms(2)).is_empty());
    assert_eq!(blk.scheduler().queued(), 1, "100 left to wait for the tag");
    assert_eq!(blk.timer(), None);
    assert_eq!(blk.poll_timeout(), None);
}

#[test]
fn an_exit_reaches_the_scheduler_and_ends_its_idling() {
    // exit_io_context -> the elevator's exit_icq: AS stops anticipating a process that exited.
    let probe = Probe {
        hold: Some(ms(100)),
        ..Probe::default()
    };
    let mut blk = BlockLayer::new(probe, Limits::depth(4));
    blk.handle_submit(read(0, 8), (), ms(0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    blk.handle_exit(CtxId(7), ms(1));
    assert_eq!(blk.scheduler().exits, [CtxId(7)]);
    assert_eq!(drain(&mut blk, ms(1)).len(), 1);
}

#[test]
fn changing_a_tunable_runs_the_queue_again() {
    // elv_attr_store: a sysfs write to the scheduler; the queue is run on its next poll.
    let probe = Probe {
        hold: Some(ms(100)),
        ..Probe::default()
    };
    let mut blk = BlockLayer::new(probe, Limits::depth(4));
    blk.handle_submit(read(0, 8), (), ms(0));
    assert!(drain(&mut blk, ms(0)).is_empty());
    assert!(drain(&mut blk, ms(0)).is_empty(), "nothing new: not asked");
    blk.scheduler_mut().hold = None;
    assert_eq!(drain(&mut blk, ms(1)).len(), 1);
}

#[test]
fn a_requeue_is_taken_only_for_a_request_at_the_device_and_waits_for_room() {
    // blk_mq_requeue_request: only a started request goes back; it waits in the dispatch list
    // until the device has a free tag again.
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(1));
    blk.handle_submit(read(0, 8), (), ms(0));
    blk.handle_submit(read(100, 8), (), ms(0));
    let a = drain(&mut blk, ms(0));
    let queued_id = RequestId(a[0].id.0 + 1);
    blk.handle_requeue(queued_id, ms(1));
    blk.handle_requeue(RequestId(99), ms(1));
    assert_eq!((blk.in_flight(), blk.queued()), (1, 1), "both ignored");
    assert!(drain(&mut blk, ms(1)).is_empty());
    blk.handle_requeue(a[0].id, ms(1));
    assert_eq!((blk.in_flight(), blk.queued()), (0, 2));
    let again = drain(&mut blk, ms(2));
    assert_eq!(again.iter().map(|r| r.id).collect::<Vec<_>>(), [a[0].id]);
    // Requeued again: it goes first, then the device is full for the scheduler's next.
    blk.handle_requeue(a[0].id, ms(3));
    let mut done = Vec::new();
    let b = blk.poll_dispatch(ms(3)).expect("the requeued one first");
    assert_eq!(b.id, a[0].id);
    assert!(blk.poll_dispatch(ms(3)).is_none(), "the device is full");
    blk.handle_complete(b.id, true, ms(4), &mut done);
    assert_eq!(extents(&drain(&mut blk, ms(4))), [(100, 8)]);
}

#[test]
fn an_unknown_or_repeated_completion_is_ignored() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(2));
    blk.handle_submit(read(0, 8), (), ms(0));
    let a = drain(&mut blk, ms(0));
    let mut done = Vec::new();
    blk.handle_complete(RequestId(77), true, ms(1), &mut done);
    assert!(done.is_empty());
    assert_eq!(blk.in_flight(), 1);
    blk.handle_complete(a[0].id, true, ms(1), &mut done);
    blk.handle_complete(a[0].id, true, ms(2), &mut done);
    assert_eq!(done.len(), 1);
    assert_eq!(blk.in_flight(), 0);
    assert_eq!(blk.counters().completed, 1);
    assert!(blk.segments(a[0].id).is_none(), "forgotten once complete");
}

#[test]
fn a_switch_waits_for_the_device_and_the_requeued_then_replays_the_held_bios() {
    // elevator_switch: blk_mq_freeze_queue waits for every request to complete, requeued
    // ones included; a second switch before the first finished replaces its target.
    let mut blk: BlockLayer<Box<dyn Scheduler>, u32> =
        BlockLayer::new(Box::new(Noop::new()), Limits::depth(2));
    blk.handle_submit(read(0, 8), 0, ms(0));
    blk.handle_submit(read(100, 8), 1, ms(0));
    let a = drain(&mut blk, ms(0));
    assert_eq!(a.len(), 2);
    assert!(blk
        .switch_scheduler(Box::new(Deadline::new(Default::default())))
        .is_none());
    let replaced = blk
        .switch_scheduler(Box::new(IdleOnce(Noop::new(), true)))
        .expect("the pending one comes back");
    assert_eq!(replaced.name(), "deadline");
    blk.handle_submit(read(800, 8), 2, ms(1));
    assert_eq!(blk.queued(), 1, "held by the switch");
    let mut done = Vec::new();
    blk.handle_requeue(a[1].id, ms(1));
    blk.handle_complete(a[0].id, true, ms(2), &mut done);
    assert!(
        blk.switching(),
        "a requeued request is still the old scheduler's"
    );
    let b = drain(&mut blk, ms(2));
    assert_eq!(b[0].id, a[1].id);
    assert!(blk.switching(), "and at the device");
    blk.handle_complete(b[0].id, true, ms(3), &mut done);
    let c = drain(&mut blk, ms(3));
    assert!(!blk.switching());
    assert_eq!(blk.scheduler().name(), "idle-once");
    assert_eq!(extents(&c), [(800, 8)]);
    blk.handle_complete(c[0].id, true, ms(4), &mut done);
    let (sched, counters, stat) = blk.into_parts();
    assert_eq!(sched.name(), "idle-once");
    assert_eq!(counters.completed, 3);
    assert_eq!(stat.read.ios, 3);
}
