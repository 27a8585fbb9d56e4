//! The host's tags through the layer (`blk_mq_get_tag`, `blk_mq_put_tag`): decisions the
//! hand-built situations in `tests.rs` left unpinned, found by mutation testing
//! (docs/mutation-testing.md, "Mutation testing, the block layer and latency_guard").

use super::*;

/// A device of two requests behind a host of two tags, under none: A and B take both tags at
/// 0 ms and stay queued, then C is issued directly with no tag free and goes to the device
/// first, A after it. Returns the layer and what it dispatched at 0 ms (C, then A).
fn two_tags_held_and_one_issued_directly() -> (BlockLayer<Noop, char>, Vec<Request>) {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(2));
    blk.set_host_tags(2);
    blk.handle_submit(write(1, 0, 8), 'A', ms(0));
    blk.handle_submit(write(1, 1000, 8), 'B', ms(0));
    let mut c = write(2, 5000, 8);
    c.issue_directly = true;
    c.own_request = true;
    blk.handle_submit(c, 'C', ms(0));
    let first = drain(&mut blk, ms(0));
    (blk, first)
}

/// `blk_mq_get_tag` / `blk_mq_put_tag`: a request issued directly (`blk_mq_try_issue_directly`)
/// while every host tag is held by a request still queued reaches the device ahead of its turn
/// for a tag, and holds one from then to its completion. When it completes, the tag it frees
/// goes back to the set: the queued holders still hold theirs, so a request arriving then
/// waits for the next completion.
#[test]
fn a_request_issued_ahead_of_its_tag_holds_one_until_it_completes() {
    let (mut blk, first) = two_tags_held_and_one_issued_directly();
    assert_eq!(
        first.len(),
        2,
        "C and A fill the device; B waits with its tag"
    );
    let mut done = Vec::new();
    // C completes at 1 ms: A (at the device) and B (queued) still hold the two tags.
    blk.handle_complete(first[0].id, true, ms(1), &mut done);
    blk.handle_submit(write(3, 9000, 8), 'D', ms(1));
    let b = drain(&mut blk, ms(1));
    assert_eq!(b.len(), 1, "B takes the free device slot");
    // A completes at 2 ms: its tag goes to D, which asked for one at 1 ms.
    blk.handle_complete(first[1].id, true, ms(2), &mut done);
    let d = drain(&mut blk, ms(2));
    blk.handle_complete(b[0].id, true, ms(3), &mut done);
    blk.handle_complete(d[0].id, true, ms(4), &mut done);
    let tagged: Vec<(char, Nanos)> = done.iter().map(|d| (d.token, d.tagged)).collect();
    assert_eq!(
        tagged,
        [('C', ms(0)), ('A', ms(0)), ('B', ms(0)), ('D', ms(2))],
        "D waits for A's tag: C's freed the one it took out of turn"
    );
    assert!(blk.is_idle());
}

/// A request that reached the device ahead of its tag (issued directly) keeps its place among
/// the waiters for a tag, but a tag freed while it is at the device is not given to it again:
/// it already holds one since its dispatch (`start_time_ns` is set once, `blk_mq_rq_time_init`).
#[test]
fn a_request_holding_a_tag_taken_out_of_turn_is_not_given_a_second_one() {
    let (mut blk, first) = two_tags_held_and_one_issued_directly();
    let mut done = Vec::new();
    // A completes: B goes to the device beside C. B completes: C, still out, is skipped.
    blk.handle_complete(first[1].id, true, ms(1), &mut done);
    let b = drain(&mut blk, ms(1));
    blk.handle_complete(b[0].id, true, ms(2), &mut done);
    blk.handle_complete(first[0].id, true, ms(3), &mut done);
    let tagged: Vec<(char, Nanos)> = done.iter().map(|d| (d.token, d.tagged)).collect();
    assert_eq!(tagged, [('A', ms(0)), ('B', ms(0)), ('C', ms(0))]);
}

/// Under an elevator the tag a request takes at its allocation is a scheduler tag
/// (`__blk_mq_alloc_requests` with `RQF_SCHED_TAGS`), and the moment it has it is its
/// `start_time_ns` (`blk_mq_rq_time_init`), which io.cost's `ioc_rqos_done` counts `rq_wait`
/// to; the time it then spends queued in the elevator is not waiting to be issued.
/// mq-deadline with four scheduler tags (`nr_requests`' least) on a one-request device:
/// reads 0 to 3 take the tags at 0 to 3 ms, read 4 (4 ms) waits for read 0's, freed when it
/// completes at 5 ms; the device then serves one read every 3 ms. So `Done::tagged` is 0, 1,
/// 2, 3 and 5 ms, whatever the dispatches (0, 5, 8, 11, 14 ms). Under a policy from before
/// blk-mq (deadline) it stays the dispatch.
#[test]
fn under_mq_deadline_a_request_starts_when_it_gets_its_scheduler_tag_not_at_dispatch() {
    let mut set = crate::Settings::new();
    set.set("nr_requests", 4);
    let dd = crate::mq_deadline::MqDeadline::from_settings(&set).expect("nr_requests 4");
    let mut blk = BlockLayer::new(dd, Limits::depth(1));
    let mut out = Vec::new();
    for i in 0..5u64 {
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, i * 100, 8), i, ms(i));
        out.extend(drain(&mut blk, ms(i)));
    }
    let mut done = Vec::new();
    let mut t = 5;
    while let Some(rq) = out.pop() {
        blk.handle_complete(rq.id, true, ms(t), &mut done);
        out.extend(drain(&mut blk, ms(t)));
        t += 3;
    }
    let seen: Vec<(u64, Nanos, Nanos)> = done
        .iter()
        .map(|d| (d.token, d.tagged, d.dispatched))
        .collect();
    assert_eq!(
        seen,
        [
            (0, ms(0), ms(0)),
            (1, ms(1), ms(5)),
            (2, ms(2), ms(8)),
            (3, ms(3), ms(11)),
            (4, ms(5), ms(14)),
        ]
    );
    assert_eq!(
        second_of_two_reads_tagged_at(Deadline::new(Default::default())),
        ms(5)
    );
}

/// bfq as mq-deadline: the request starts (`start_time_ns`, `blk_mq_rq_time_init`) when it gets
/// its scheduler tag at allocation (`__blk_mq_alloc_requests`), the moment io.cost's
/// `ioc_rqos_done` counts `rq_wait` to; and bfq's `bfq_limit_depth` gives async requests a
/// shallow depth of those tags. With 8 scheduler tags (2-bit words, `bfq_update_depths`) an
/// async write may take one bit of each word: 4 tags. On a one-request device ctx 1 writes
/// five async writes at 0 ms: four take tags at once, the fifth waits outside bfq with four
/// tags free, until the first write completes at 5 ms. A read of ctx 2 at 1 ms (sync: the full
/// depth) takes a free tag at once. So `Done::tagged` is 0 ms for writes 0 to 3, 1 ms for the
/// read and 5 ms for write 4, whenever bfq dispatches them (from 0 ms, then every 3 ms).
#[test]
fn under_bfq_a_request_starts_when_it_gets_its_scheduler_tag_and_async_writes_get_a_shallow_depth()
{
    let mut set = crate::Settings::new();
    set.set("nr_requests", 8);
    let bfq = Bfq::from_settings(&set, &crate::GroupTree::new()).expect("nr_requests 8");
    let mut blk = BlockLayer::new(bfq, Limits::depth(1));
    for i in 0..5u64 {
        let w = Bio::new(CtxId(1), Op::Write, i * 1000, 8).sync(false);
        blk.handle_submit(w, i, ms(0));
    }
    let mut out: Vec<(Request, Nanos)> = drain(&mut blk, ms(0))
        .into_iter()
        .map(|rq| (rq, ms(5)))
        .collect();
    blk.handle_submit(Bio::new(CtxId(2), Op::Read, 50_000, 8), 9, ms(1));
    assert!(
        drain(&mut blk, ms(1)).is_empty(),
        "the device holds one request"
    );
    let mut done = Vec::new();
    // The device serves the next request 3 ms after its dispatch; while bfq idles, its timer.
    while done.len() < 6 {
        let now = match out.pop() {
            Some((rq, at)) => {
                blk.handle_complete(rq.id, true, at, &mut done);
                at
            }
            None => {
                let at = blk.poll_timeout().expect("bfq idles, then dispatches");
                blk.handle_timeout(at);
                at
            }
        };
        let next = drain(&mut blk, now);
        out.extend(next.into_iter().map(|rq| (rq, now + ms(3))));
    }
    let mut tagged: Vec<(u64, Nanos)> = done.iter().map(|d| (d.token, d.tagged)).collect();
    tagged.sort();
    assert_eq!(
        tagged,
        [
            (0, ms(0)),
            (1, ms(0)),
            (2, ms(0)),
            (3, ms(0)),
            (4, ms(5)),
            (9, ms(1)),
        ]
    );
    let dispatched: Vec<(u64, Nanos)> = done.iter().map(|d| (d.token, d.dispatched)).collect();
    assert_eq!(dispatched[0], (0, ms(0)), "{dispatched:?}");
    assert!(
        done.iter().skip(1).all(|d| d.dispatched >= ms(5)),
        "{dispatched:?}"
    );
}
