//! The request list through the layer (blk-core.c of 2.6.31: `get_request`,
//! `get_request_wait`, `freed_request`).

use super::*;
use crate::mq_deadline::MqDeadline;

fn read(ctx: u32, sector: u64) -> Bio {
    Bio::new(CtxId(ctx), Op::Read, sector, 8)
}

/// Deadline over a device of depth 1 whose queue holds `nr` requests per class.
fn layer(nr: u32) -> BlockLayer<Deadline, u32> {
    BlockLayer::new(
        Deadline::new(Default::default()),
        Limits::depth(1).nr_requests(Some(nr)),
    )
}

#[test]
fn a_process_that_finds_its_class_full_sleeps_and_a_completion_wakes_it() {
    let mut blk = layer(2);
    // Context 1 allocates 2 (nr_requests - 1, then the first to find it full batches
    // past it, up to 3 * 2 / 2 = 3); context 2 then finds the class full and sleeps.
    for i in 0..3 {
        blk.handle_submit(read(1, i * 1000), i as u32, ms(0));
    }
    blk.handle_submit(read(2, 50_000), 10, ms(0));
    assert_eq!(
        blk.scheduler().queued(),
        3,
        "the sleeper's bio is not inserted"
    );
    assert_eq!(blk.queued(), 4, "but it is counted as queued");
    let first = blk.poll_dispatch(ms(0)).expect("a request");
    let mut done = Vec::new();
    // 3 -> 2 allocated: still at nr_requests, no wake-up (__freed_request: count + 1 <= nr).
    blk.handle_complete(first.id, true, ms(1), &mut done);
    assert_eq!(blk.scheduler().queued(), 2);
    let second = blk.poll_dispatch(ms(1)).expect("a request");
    blk.handle_complete(second.id, true, ms(2), &mut done);
    assert_eq!(
        blk.scheduler().queued(),
        2,
        "2 -> 1 wakes the sleeper, whose bio is inserted at once"
    );
    let mut rest = Vec::new();
    while let Some(rq) = blk.poll_dispatch(ms(3)) {
        blk.handle_complete(rq.id, true, ms(3), &mut done);
        rest.push(rq);
    }
    assert!(rest.iter().any(|r| r.ctx == CtxId(2)));
    assert_eq!(done.len(), 4, "every bio completes once");
    assert!(blk.is_idle());
}

#[test]
fn a_sleeping_process_submits_nothing_so_its_later_bios_neither_merge_nor_pass_it() {
    let mut blk = layer(1);
    // nr_requests 1: context 1 takes the only request (and, finding the class full, one
    // more as a batching process: 3 * 1 / 2 = 1, so no more).
    blk.handle_submit(read(1, 0), 0, ms(0));
    blk.handle_submit(read(2, 1000), 1, ms(0));
    // Context 2 sleeps; its next bio would back-merge into the first if it were submitted.
    blk.handle_submit(read(2, 1008), 2, ms(0));
    assert_eq!(
        blk.stat().read.merges,
        0,
        "a sleeping process submits nothing"
    );
    assert_eq!(blk.queued(), 3);
    let rq = blk.poll_dispatch(ms(0)).expect("context 1's request");
    assert_eq!(rq.ctx, CtxId(1));
    let mut done = Vec::new();
    blk.handle_complete(rq.id, true, ms(1), &mut done);
    // Woken (and batching), context 2 gets its request; its second bio, submitted now,
    // merges into it.
    let rq = blk.poll_dispatch(ms(1)).expect("context 2's request");
    assert_eq!((rq.ctx, rq.sector, rq.sectors), (CtxId(2), 1000, 16));
    assert_eq!(blk.stat().read.merges, 1);
    blk.handle_complete(rq.id, true, ms(2), &mut done);
    assert_eq!(
        done.iter().map(|d| d.token).collect::<Vec<_>>(),
        [0, 1, 2],
        "each bio once"
    );
    assert!(blk.is_idle());
}

#[test]
fn a_woken_process_whose_next_bio_finds_no_request_sleeps_again_and_is_woken_again() {
    // get_request_wait: the woken process allocates as a batching one, up to 3/2
    // nr_requests; its next bio past that sleeps again (its later ones behind it).
    let mut blk = layer(2);
    for i in 0..3 {
        blk.handle_submit(read(1, i * 1000), i as u32, ms(0));
    }
    for i in 0..3 {
        blk.handle_submit(read(2, 50_000 + i * 1000), 10 + i as u32, ms(0));
    }
    assert_eq!((blk.scheduler().queued(), blk.queued()), (3, 6));
    let mut done = Vec::new();
    for t in 1..=2 {
        let rq = blk.poll_dispatch(ms(t)).expect("a request");
        blk.handle_complete(rq.id, true, ms(t), &mut done);
    }
    // 3 -> 1 allocated woke context 2: two of its bios got requests (2 and 3 allocated),
    // the third found 3 * 2 / 2 = 3 and sleeps again.
    assert_eq!(blk.scheduler().queued(), 3);
    assert_eq!(blk.queued(), 4, "the bio asleep again is still counted");
    let mut t = 3;
    while let Some(rq) = blk.poll_dispatch(ms(t)) {
        blk.handle_complete(rq.id, true, ms(t), &mut done);
        t += 1;
    }
    let mut tokens: Vec<u32> = done.iter().map(|d| d.token).collect();
    tokens.sort_unstable();
    assert_eq!(tokens, [0, 1, 2, 10, 11, 12], "every bio completes once");
    assert!(blk.is_idle());
}

#[test]
fn sync_and_async_requests_are_counted_apart() {
    // rw_is_sync: a full async class does not make a read sleep.
    let mut blk = layer(1);
    blk.handle_submit(Bio::new(CtxId(1), Op::Write, 0, 8), 0, ms(0));
    blk.handle_submit(Bio::new(CtxId(2), Op::Write, 5000, 8), 1, ms(0));
    assert_eq!(blk.scheduler().queued(), 1, "the second writer sleeps");
    blk.handle_submit(read(3, 9000), 2, ms(0));
    assert_eq!(blk.scheduler().queued(), 2, "the reader does not");
}

#[test]
fn an_exit_while_asleep_reaches_the_scheduler_after_the_bios() {
    let mut blk = layer(1);
    blk.handle_submit(read(1, 0), 0, ms(0));
    blk.handle_submit(read(2, 1000), 1, ms(0));
    blk.handle_exit(CtxId(2), ms(0));
    assert_eq!(blk.queued(), 2, "the exited process's bio is still to come");
    let mut done = Vec::new();
    let rq = blk.poll_dispatch(ms(0)).expect("a request");
    blk.handle_complete(rq.id, true, ms(1), &mut done);
    let rq = blk.poll_dispatch(ms(1)).expect("the sleeper's request");
    assert_eq!(rq.ctx, CtxId(2));
    blk.handle_complete(rq.id, true, ms(2), &mut done);
    assert_eq!(done.len(), 2);
    assert!(blk.is_idle());

    // What the scheduler is told, in order: context 2's insert, then its exit.
    let mut blk = BlockLayer::new(Told::default(), Limits::depth(1).nr_requests(Some(1)));
    blk.handle_submit(read(1, 0), 0u32, ms(0));
    blk.handle_submit(read(2, 1000), 1, ms(0));
    blk.handle_exit(CtxId(2), ms(0));
    assert_eq!(
        blk.scheduler().log,
        ["insert 1"],
        "no exit while its bio sleeps"
    );
    let rq = blk.poll_dispatch(ms(0)).expect("a request");
    blk.handle_complete(rq.id, true, ms(1), &mut Vec::new());
    assert_eq!(blk.scheduler().log, ["insert 1", "insert 2", "exit 2"]);
}

/// Deadline, with a log of the inserts and exits it is told of (by context).
#[derive(Default)]
struct Told {
    inner: Deadline,
    log: Vec<String>,
}

impl Scheduler for Told {
    fn name(&self) -> &'static str {
        "told"
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.log.push(format!("insert {}", rq.ctx.0));
        self.inner.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.inner.dispatch(now)
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.inner.complete(rq, now);
    }
    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        self.log.push(format!("exit {}", ctx.0));
        self.inner.exit(ctx, now);
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), crate::TunableError> {
        self.inner.set_tunable(name, value)
    }
}

#[test]
fn a_policy_with_its_own_scheduler_tags_is_not_bounded_by_the_list() {
    // mq-deadline keeps nr_requests tags itself (blk-mq has no request list).
    let mut blk: BlockLayer<MqDeadline, u32> =
        BlockLayer::new(MqDeadline::default(), Limits::depth(1).nr_requests(Some(1)));
    for i in 0..5 {
        blk.handle_submit(read(i + 1, u64::from(i) * 1000), i, ms(0));
    }
    assert_eq!(blk.scheduler().queued(), 5);
}

#[test]
fn without_nr_requests_nothing_sleeps() {
    let mut blk: BlockLayer<Deadline, u32> = BlockLayer::new(
        Deadline::new(Default::default()),
        Limits::depth(1).nr_requests(None),
    );
    for i in 0..500 {
        blk.handle_submit(read(i % 3, u64::from(i) * 1000), i, ms(0));
    }
    assert_eq!(blk.scheduler().queued(), 500);
}
