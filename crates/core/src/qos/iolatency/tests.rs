//! blk-iolatency's decisions in hand-built situations, each citing the kernel function that
//! makes it.

use super::*;
use crate::request::{CtxId, GroupId, IoPrio, Op, RequestId};

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

/// `/fast` with a 5 ms target beside `/slow` without one.
fn fast_slow() -> (GroupTree, GroupId, GroupId) {
    let mut t = GroupTree::new();
    let fast = t.add("/fast", None).unwrap();
    let slow = t.add("/slow", None).unwrap();
    t.io_mut(fast).latency_target = Some(ms(5));
    (t, fast, slow)
}

fn bio(key: u64, g: GroupId) -> Request {
    Request {
        id: RequestId(key),
        ctx: CtxId(1),
        group: g,
        op: Op::Read,
        sync: true,
        meta: false,
        idle_hint: false,
        sector: key * 8,
        sectors: 8,
        prio: IoPrio::default(),
        submitted: Nanos::ZERO,
    }
}

fn end(key: u64, g: GroupId, submitted: Nanos) -> BioEnd {
    BioEnd {
        key,
        group: g,
        op: Op::Read,
        bytes: 4096,
        submitted,
        ok: true,
    }
}

#[test]
fn scale_cookie_change_steps_down_by_a_quarter_queue_then_by_one_and_stops_at_twice_the_queue() {
    let (t, _, _) = fast_slow();
    let mut l = IoLatency::new(&t, false, 32);
    let mut seen = Vec::new();
    for _ in 0..40 {
        l.scale_cookie_change(0, false);
        seen.push(DEFAULT_SCALE_COOKIE - l.child_cookie(0));
    }
    // 32 >> 2 = 8 while within nr_requests of the default, then 1 at a time, to 2 x 32.
    assert_eq!(&seen[..6], &[8, 16, 24, 32, 40, 41]);
    assert_eq!(*seen.last().unwrap(), 64);
    // Up: 32 >> 4 = 2 while within nr_requests, else 1; never past the default.
    let mut l = IoLatency::new(&t, false, 32);
    for _ in 0..4 {
        l.scale_cookie_change(0, false);
    }
    l.scale_cookie_change(0, true);
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 30);
    for _ in 0..20 {
        l.scale_cookie_change(0, true);
    }
    assert_eq!(l.child_cookie(0), DEFAULT_SCALE_COOKIE);
}

#[test]
fn a_missed_window_halves_the_siblings_depth_at_its_next_submission() {
    // iolatency_check_latencies (HDD: the window's mean against the target) lowers the
    // parent's cookie; check_scale_change makes /slow follow it at its next bio;
    // scale_change halves min(max_depth, nr_requests).
    let (t, fast, slow) = fast_slow();
    let mut l = IoLatency::new(&t, false, 32);
    assert_eq!(l.throttle(&bio(1, fast), ms(0)), Admit::Now);
    // The window is max(5 ms x 16, 100 ms) = 100 ms; a completion after it checks it.
    l.done_bio(&end(1, fast, ms(0)), ms(101));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 8);
    assert_eq!(l.max_depth(slow.0 as usize), None, "not until it submits");
    assert_eq!(l.throttle(&bio(2, slow), ms(102)), Admit::Now);
    assert_eq!(l.max_depth(slow.0 as usize), Some(16));
    assert_eq!(
        l.max_depth(fast.0 as usize),
        None,
        "the group that missed is not throttled"
    );
    // Its 17th bio in flight waits (rq_qos_wait) and goes when one completes.
    for k in 3..18 {
        assert_eq!(l.throttle(&bio(k, slow), ms(102)), Admit::Now);
    }
    assert_eq!(l.throttle(&bio(18, slow), ms(102)), Admit::Hold);
    assert_eq!(l.throttle(&bio(19, slow), ms(102)), Admit::Hold);
    assert_eq!(l.poll_release(ms(103)), None);
    l.done_bio(&end(2, slow, ms(102)), ms(110));
    assert_eq!(l.poll_release(ms(110)), Some(18), "FIFO");
    assert_eq!(l.poll_release(ms(110)), None);
}

#[test]
fn scale_events_are_half_a_second_apart() {
    // BLKIOLATENCY_MIN_ADJUST_TIME: a second miss 200 ms after the first does not scale.
    let (t, fast, _) = fast_slow();
    let mut l = IoLatency::new(&t, false, 32);
    l.throttle(&bio(1, fast), ms(0));
    l.done_bio(&end(1, fast, ms(0)), ms(101));
    l.throttle(&bio(2, fast), ms(150));
    l.done_bio(&end(2, fast, ms(150)), ms(301));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 8);
    l.throttle(&bio(3, fast), ms(550));
    l.done_bio(&end(3, fast, ms(550)), ms(610));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 16);
}

#[test]
fn on_an_ssd_a_window_is_good_while_under_a_tenth_of_its_bios_miss() {
    // latency_sum_ok in percentile mode: missed < max(total / 10, 1).
    let (t, fast, _) = fast_slow();
    let mut l = IoLatency::new(&t, true, 32);
    let mut key = 0;
    let mut window = |l: &mut IoLatency, start: u64, n: u64, slow: u64| {
        for i in 0..n {
            key += 1;
            l.throttle(&bio(key, fast), ms(start));
            let lat = if i < slow { 6 } else { 1 };
            l.done_bio(&end(key, fast, ms(start)), ms(start + lat));
        }
    };
    // 19 fast + 1 slow in the first window: 1 < 2, good; the check at the next window's
    // first completion finds nothing to do.
    window(&mut l, 10, 20, 1);
    window(&mut l, 120, 1, 0);
    assert_eq!(l.child_cookie(0), DEFAULT_SCALE_COOKIE);
    // 9 fast + 1 slow: 1 < max(1, 1) is false, a miss.
    window(&mut l, 130, 10, 1);
    window(&mut l, 240, 1, 0);
    assert!(l.child_cookie(0) < DEFAULT_SCALE_COOKIE);
}

#[test]
fn a_sibling_with_a_tighter_target_is_spared() {
    // check_scale_change: a group whose own target is at or below the missed one is not
    // scaled down.
    let (mut t, fast, _) = fast_slow();
    let tight = t.add("/tight", None).unwrap();
    t.io_mut(tight).latency_target = Some(ms(2));
    let mut l = IoLatency::new(&t, false, 32);
    l.throttle(&bio(1, fast), ms(0));
    l.done_bio(&end(1, fast, ms(0)), ms(101));
    l.throttle(&bio(2, tight), ms(102));
    assert_eq!(l.max_depth(tight.0 as usize), None);
}

#[test]
fn the_timer_raises_a_cookie_nobody_is_blamed_for() {
    // blkiolatency_timer_fn: no scale_grp -> scale up; the blamed group is forgotten after
    // 5 s without scale events.
    let (t, fast, _) = fast_slow();
    let mut l = IoLatency::new(&t, false, 32);
    l.throttle(&bio(1, fast), ms(0));
    assert_eq!(l.poll_timeout(), Some(ms(1000)));
    l.done_bio(&end(1, fast, ms(0)), ms(101));
    l.handle_timeout(ms(1000));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 8, "blamed: kept");
    l.throttle(&bio(2, fast), ms(5200));
    l.handle_timeout(ms(6200));
    l.throttle(&bio(3, fast), ms(6300));
    l.handle_timeout(ms(7300));
    assert_eq!(
        DEFAULT_SCALE_COOKIE - l.child_cookie(0),
        6,
        "forgotten, then raised by 2"
    );
}
