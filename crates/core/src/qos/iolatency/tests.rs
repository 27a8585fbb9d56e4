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
        cpu: 0,
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

/// `/fast` (5 ms) beside `/slow` with its own, looser target (`slow_target`, or none).
fn fast_and(slow_target: Option<Nanos>) -> (GroupTree, GroupId, GroupId) {
    let mut t = GroupTree::new();
    let fast = t.add("/fast", None).unwrap();
    let slow = t.add("/slow", None).unwrap();
    t.io_mut(fast).latency_target = Some(ms(5));
    t.io_mut(slow).latency_target = slow_target;
    (t, fast, slow)
}

fn meta_bio(key: u64, g: GroupId) -> Request {
    Request {
        meta: true,
        ..bio(key, g)
    }
}

/// `n` bios of `g` from `key` on, submitted at `at` and completed `lat` later, one by one.
fn run_bios(l: &mut IoLatency, g: GroupId, key: u64, n: u64, at: Nanos, lat: Nanos) {
    for k in key..key + n {
        let t = at + Nanos((k - key) * 1_000_000);
        assert_eq!(l.throttle(&bio(k, g), t), Admit::Now);
        l.done_bio(&end(k, g, t), t + lat);
    }
}

#[test]
fn at_a_disks_32_host_tags_five_misses_take_the_offender_to_one_and_a_good_window_to_three() {
    // The simulated 2009 disk behind its host's 32 tags under none: q->nr_requests is 32.
    // scale_cookie_change lowers the cookie by 32/4 = 8 per missed window until it is 32
    // below the default, then by 1; scale_change halves the offender's depth from
    // min(unlimited, 32) each time: 16, 8, 4, 2, 1. A good window (HDD: mean within the
    // target, 5 samples) raises the cookie by 1 while it is more than 32 below the default
    // and the offender's depth by 32/16 = 2, to 3: not back to unlimited, which now takes
    // 7 + 16 more good windows.
    let (t, fast, slow) = fast_slow();
    let s = slow.0 as usize;
    let mut l = IoLatency::new(&t, false, 32);
    let mut depths = Vec::new();
    for miss in 0..5u64 {
        let at = ms(600 * miss);
        run_bios(&mut l, fast, 1 + miss, 1, at, ms(101));
        assert_eq!(
            l.throttle(&bio(1000 + miss, slow), at + ms(102)),
            Admit::Now
        );
        l.done_bio(&end(1000 + miss, slow, at + ms(102)), at + ms(103));
        depths.push(l.max_depth(s).unwrap());
    }
    assert_eq!(depths, [16, 8, 4, 2, 1]);
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 40);
    // Good windows from the group that scaled: one sample after the gap (kept), then five.
    run_bios(&mut l, fast, 100, 5, ms(3500), ms(1));
    run_bios(&mut l, fast, 105, 1, ms(3610), ms(1));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 39);
    assert_eq!(l.throttle(&bio(2000, slow), ms(3620)), Admit::Now);
    assert_eq!(l.max_depth(s), Some(3), "1 + nr_requests / 16");
}

#[test]
fn at_depth_one_a_data_only_offender_is_not_delayed_and_two_good_windows_free_it() {
    // On a queue whose nr_requests is 1 (a disk with no host tags: its one slot), the
    // parent's cookie can fall only 2 below the default (scale_cookie_change: 1 while within
    // nr_requests, then not past 2 x nr_requests), and the offender's depth only to 1
    // (scale_change). A further miss makes check_scale_change count blkcg_use_delay instead,
    // but blkcg_maybe_throttle_blkg sleeps for the accumulated delay_nsec, which only
    // blkcg_add_delay raises, and only for bios issued as root: a data writer is not delayed.
    // Two good windows later the cookie is back at the default and the offender unlimited
    // (the first step up takes back the use_delay, scale_change's blkcg_unuse_delay).
    let (t, fast, slow) = fast_slow();
    let (f, s) = (fast.0 as usize, slow.0 as usize);
    let mut l = IoLatency::new(&t, false, 1);
    // A missed window (HDD: its mean, 101 ms, over the 5 ms target): cookie - 1.
    run_bios(&mut l, fast, 1, 1, ms(0), ms(101));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 1);
    assert_eq!(l.throttle(&bio(100, slow), ms(102)), Admit::Now);
    assert_eq!(
        l.max_depth(s),
        Some(1),
        "min(unlimited, 1) >> 1, at least 1"
    );
    l.done_bio(&end(100, slow, ms(102)), ms(103));
    // A second miss 500 ms on: cookie - 2; at depth 1 the offender counts a use_delay.
    run_bios(&mut l, fast, 2, 1, ms(600), ms(102));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 2);
    assert_eq!(
        l.throttle(&bio(101, slow), ms(703)),
        Admit::Now,
        "no delay to serve"
    );
    assert_eq!(
        (l.max_depth(s), l.use_delay(s), l.delay_nsec(s)),
        (Some(1), 1, 0)
    );
    l.done_bio(&end(101, slow, ms(703)), ms(704));
    // A third miss: the cookie stays 2 below the default (2 x nr_requests).
    run_bios(&mut l, fast, 3, 1, ms(1300), ms(102));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 2);
    // Good windows (mean 1 ms, at least 5 samples since the last scale event), 500 ms apart,
    // from the group that scaled: the first completion after a long gap checks a window of
    // one sample (too few: kept), the next window's five make it.
    run_bios(&mut l, fast, 10, 5, ms(2000), ms(1));
    run_bios(&mut l, fast, 15, 1, ms(2110), ms(1));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 1);
    assert_eq!(l.throttle(&bio(102, slow), ms(2120)), Admit::Now);
    assert_eq!(
        (l.max_depth(s), l.use_delay(s)),
        (Some(1), 0),
        "unuse_delay first"
    );
    l.done_bio(&end(102, slow, ms(2120)), ms(2121));
    run_bios(&mut l, fast, 20, 5, ms(2700), ms(1));
    run_bios(&mut l, fast, 25, 1, ms(2810), ms(1));
    assert_eq!(l.child_cookie(0), DEFAULT_SCALE_COOKIE);
    assert_eq!(l.throttle(&bio(103, slow), ms(2820)), Admit::Now);
    assert_eq!(l.max_depth(s), None, "back at the default: unthrottled");
    assert_eq!(l.max_depth(f), None);
}

#[test]
fn a_throttled_groups_meta_bio_within_its_target_delays_its_later_data_bios() {
    // iolatency_record_time: a bio issued as root (REQ_META) of a group that is throttled and
    // has a target is not counted; the time it had left of its group's target is added to the
    // group's delay (blkcg_add_delay). Once the group counts a use_delay, each submission
    // sleeps for the delay in force (blkcg_maybe_throttle_blkg), which blkcg_scale_delay
    // takes off again one second's charge at a time.
    let (t, fast, slow) = fast_and(Some(ms(10)));
    let s = slow.0 as usize;
    let mut l = IoLatency::new(&t, false, 1);
    // /slow's three bios (its window: 10 ms x 16 = 160 ms) and /fast's miss.
    for k in 100..103 {
        assert_eq!(l.throttle(&bio(k, slow), ms(0)), Admit::Now);
    }
    run_bios(&mut l, fast, 1, 1, ms(0), ms(101));
    l.done_bio(&end(100, slow, ms(0)), ms(150));
    l.done_bio(&end(101, slow, ms(0)), ms(155));
    l.done_bio(&end(102, slow, ms(0)), ms(1001));
    // /slow's target (10 ms) is looser than the one missed (5 ms) and it did more than 5% of
    // the I/O: it is throttled, to depth 1.
    assert_eq!(l.throttle(&meta_bio(103, slow), ms(1002)), Admit::Now);
    assert_eq!(l.max_depth(s), Some(1));
    // The meta bio completes in 2 ms: 8 ms of its target left become delay.
    l.done_bio(&end(103, slow, ms(1002)), ms(1004));
    assert_eq!(l.delay_nsec(s), ms(8).as_ns());
    // A second miss: /slow, at depth 1, counts a use_delay; its data bio sleeps 8 ms first.
    run_bios(&mut l, fast, 2, 1, ms(1100), ms(600));
    assert_eq!(
        l.throttle(&bio(104, slow), ms(1701)),
        Admit::Wait { until: ms(1709) }
    );
    assert_eq!(l.use_delay(s), 1);
    assert_eq!(
        l.throttle(&bio(104, slow), ms(1705)),
        Admit::Wait { until: ms(1709) },
        "asked early, it still waits"
    );
    assert_eq!(l.throttle(&bio(104, slow), ms(1709)), Admit::Now);
    l.done_bio(&end(104, slow, ms(1701)), ms(1712));
    // A second on, the delay charged meanwhile is taken off: the next scaling (more than a
    // second after the last, 1004 ms) keeps it, the one after removes what it charged.
    assert_eq!(
        l.throttle(&bio(105, slow), ms(2100)),
        Admit::Wait { until: ms(2108) }
    );
    assert_eq!(l.throttle(&bio(105, slow), ms(2108)), Admit::Now);
    l.done_bio(&end(105, slow, ms(2100)), ms(2110));
    assert_eq!(l.throttle(&bio(106, slow), ms(3200)), Admit::Now, "decayed");
    assert_eq!(l.delay_nsec(s), 0);
}

#[test]
fn the_delay_a_submitter_serves_is_at_most_a_quarter_second() {
    // blkcg_maybe_throttle_blkg clamps the sleep at 250 ms while use_delay is positive.
    let (t, _, slow) = fast_slow();
    let s = slow.0 as usize;
    let mut l = IoLatency::new(&t, false, 1);
    l.grps[s].delay.use_delay = 1;
    l.add_delay(s, ms(10), ms(900).as_ns());
    assert_eq!(
        l.throttle(&bio(1, slow), ms(20)),
        Admit::Wait { until: ms(270) }
    );
}

/// One step of the property test's random history.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A bio of group 1 (`/fast`) or 2 (`/slow`), meta or not, after `gap_us`.
    Submit { slow: bool, meta: bool, gap_us: u64 },
    /// The oldest bio in flight completes, `lat_us` after its submission at the earliest.
    Complete { lat_us: u64 },
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<bool>(), proptest::bool::weighted(0.1), 0u64..50_000)
            .prop_map(|(slow, meta, gap_us)| Step::Submit { slow, meta, gap_us }),
        (100u64..300_000).prop_map(|lat_us| Step::Complete { lat_us }),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Over any history of submissions and completions, on a disk or an SSD of any depth:
    /// a group's data bio is let go only while fewer of the group's bios than its
    /// `max_depth` are in flight (`iolat_acquire_inflight`), and no bio starves: once the
    /// device drains, every bio held for a slot or a delay is let go and completes.
    #[test]
    fn depth_limits_hold_and_no_bio_starves(
        steps in proptest::collection::vec(step(), 1..400),
        ssd in proptest::prelude::any::<bool>(),
        nr_requests in 1usize..64,
    ) {
        let (t, fast, slow) = fast_and(Some(ms(20)));
        let mut l = IoLatency::new(&t, ssd, nr_requests);
        let mut now = Nanos::ZERO;
        let mut key = 0u64;
        // In flight: (key, group, submitted); waiting for a time: (key, group, meta, submitted).
        let mut flight: VecDeque<(u64, GroupId, Nanos)> = VecDeque::new();
        let mut waits: Vec<(u64, GroupId, bool, Nanos, Nanos)> = Vec::new();
        let mut held: rustc_hash::FxHashMap<u64, (GroupId, Nanos)> = Default::default();
        let mut completed = 0u64;
        let inflight = |f: &VecDeque<(u64, GroupId, Nanos)>, g: GroupId| {
            f.iter().filter(|x| x.1 == g).count() as u64
        };
        let admit = |l: &IoLatency, f: &VecDeque<(u64, GroupId, Nanos)>, g: GroupId, meta: bool| {
            let limit = l.max_depth(g.0 as usize).unwrap_or(u64::MAX);
            meta || inflight(f, g) < limit
        };
        // Offer bio `k` of `g`; returns an error when a depth limit is broken.
        let offer = |l: &mut IoLatency, f: &mut VecDeque<(u64, GroupId, Nanos)>,
                     w: &mut Vec<(u64, GroupId, bool, Nanos, Nanos)>,
                     h: &mut rustc_hash::FxHashMap<u64, (GroupId, Nanos)>,
                     k: u64, g: GroupId, meta: bool, sub: Nanos, now: Nanos| -> Result<(), String> {
            let rq = Request { meta, submitted: sub, ..bio(k, g) };
            match l.throttle(&rq, now) {
                Admit::Now => {
                    if !admit(l, f, g, meta) {
                        return Err(format!("bio {k} of {g:?} let go over its depth"));
                    }
                    f.push_back((k, g, sub));
                }
                Admit::Wait { until } => w.push((k, g, meta, sub, until.max(now))),
                Admit::Hold => {
                    h.insert(k, (g, sub));
                }
            }
            Ok(())
        };
        let release = |l: &mut IoLatency, f: &mut VecDeque<(u64, GroupId, Nanos)>,
                       h: &mut rustc_hash::FxHashMap<u64, (GroupId, Nanos)>, now: Nanos| -> Result<(), String> {
            while let Some(k) = l.poll_release(now) {
                let (g, sub) = h.remove(&k).ok_or(format!("released {k}, not held"))?;
                if !admit(l, f, g, false) {
                    return Err(format!("held bio {k} of {g:?} released over its depth"));
                }
                f.push_back((k, g, sub));
            }
            Ok(())
        };
        for s in steps {
            match s {
                Step::Submit { slow: is_slow, meta, gap_us } => {
                    now += Nanos(gap_us * 1000);
                    let g = if is_slow { slow } else { fast };
                    key += 1;
                    offer(&mut l, &mut flight, &mut waits, &mut held, key, g, meta, now, now)
                        .map_err(proptest::test_runner::TestCaseError::fail)?;
                    release(&mut l, &mut flight, &mut held, now)
                        .map_err(proptest::test_runner::TestCaseError::fail)?;
                }
                Step::Complete { lat_us } => {
                    if let Some((k, g, sub)) = flight.pop_front() {
                        now = now.max(sub + Nanos(lat_us * 1000));
                        l.done_bio(&end(k, g, sub), now);
                        completed += 1;
                        release(&mut l, &mut flight, &mut held, now)
                            .map_err(proptest::test_runner::TestCaseError::fail)?;
                    }
                }
            }
            // Bios whose wait is over are offered again; timers that are due run.
            let due: Vec<_> = waits.iter().copied().filter(|w| w.4 <= now).collect();
            waits.retain(|w| w.4 > now);
            for (k, g, meta, sub, _) in due {
                offer(&mut l, &mut flight, &mut waits, &mut held, k, g, meta, sub, now)
                    .map_err(proptest::test_runner::TestCaseError::fail)?;
                release(&mut l, &mut flight, &mut held, now)
                    .map_err(proptest::test_runner::TestCaseError::fail)?;
            }
            if l.poll_timeout().is_some_and(|t| t <= now) {
                l.handle_timeout(now);
            }
        }
        // Drain: complete everything, offer the waiting again at their time, until empty.
        let mut rounds = 0;
        while !(flight.is_empty() && waits.is_empty() && held.is_empty()) {
            rounds += 1;
            proptest::prop_assert!(rounds < 100_000, "no progress: {} held, {} waiting", held.len(), waits.len());
            if let Some((k, g, sub)) = flight.pop_front() {
                now = now.max(sub) + Nanos::from_ms(1);
                l.done_bio(&end(k, g, sub), now);
                completed += 1;
                release(&mut l, &mut flight, &mut held, now)
                    .map_err(proptest::test_runner::TestCaseError::fail)?;
                continue;
            }
            if let Some(at) = waits.iter().map(|w| w.4).min() {
                now = now.max(at);
                let due: Vec<_> = waits.iter().copied().filter(|w| w.4 <= now).collect();
                waits.retain(|w| w.4 > now);
                for (k, g, meta, sub, _) in due {
                    offer(&mut l, &mut flight, &mut waits, &mut held, k, g, meta, sub, now)
                        .map_err(proptest::test_runner::TestCaseError::fail)?;
                    release(&mut l, &mut flight, &mut held, now)
                        .map_err(proptest::test_runner::TestCaseError::fail)?;
                }
                continue;
            }
            proptest::prop_assert!(false, "{} bios held with nothing in flight: starved", held.len());
        }
        proptest::prop_assert_eq!(completed, key);
    }
}

/// `iolatency_record_time`: a root-issued bio of a throttled group adds delay only when it
/// completed within the target (`req_time < min_lat_nsec`), through `blkcg_add_delay`, which
/// first takes off the last second's charge (`blkcg_scale_delay`); one that took the whole
/// target leaves the delay as it was, undecayed.
#[test]
fn a_root_issued_bio_that_took_its_whole_target_leaves_the_delay_alone() {
    for (took, left) in [(ms(5), ms(8)), (ms(4), ms(1))] {
        let (t, fast, _) = fast_slow();
        let f = fast.0 as usize;
        let mut l = IoLatency::new(&t, false, 32);
        l.grps[f].max_depth = 4;
        l.grps[f].delay = Delay {
            delay_nsec: ms(8).as_ns(),
            last_delay: ms(8).as_ns(),
            ..Delay::default()
        };
        assert_eq!(l.throttle(&meta_bio(1, fast), ms(2000)), Admit::Now);
        l.done_bio(&end(1, fast, ms(2000)), ms(2000) + took);
        assert_eq!(l.delay_nsec(f), left.as_ns(), "took {took:?}");
    }
}

#[test]
fn on_a_disk_a_good_window_is_judged_by_its_own_mean_the_kept_mean_being_zero() {
    // iolatency_check_latencies adds each window's stat to cur_stat with latency_stat_sum,
    // which on a rotational device is blk_rq_stat_sum: the new mean is (src->batch +
    // dst->mean x dst->nr_samples) / (the two counts), and the window's stat, itself a sum
    // over the CPUs, has batch 0. So cur_stat's mean is 0 from the first window on and
    // latency_sum_ok(cur_stat) always holds: a good window after bad ones kept within the
    // 500 ms hold scales up (scale_cookie_change(.., true)) once 5 samples are kept, where the
    // kept windows' true mean (8.4 ms here, over the 5 ms target) would scale down again.
    let (t, fast, _) = fast_slow();
    let mut l = IoLatency::new(&t, false, 32);
    run_bios(&mut l, fast, 1, 1, ms(0), ms(101));
    assert_eq!(
        DEFAULT_SCALE_COOKIE - l.child_cookie(0),
        8,
        "a miss at 101 ms"
    );
    // Within the hold: a bad window (60 ms) at 210 ms and a good one (1 ms) at 321 ms are
    // kept in cur_stat, counted but not judged.
    run_bios(&mut l, fast, 2, 1, ms(150), ms(60));
    run_bios(&mut l, fast, 3, 1, ms(320), ms(1));
    assert_eq!(DEFAULT_SCALE_COOKIE - l.child_cookie(0), 8);
    // Past the hold, a window of six 1 ms bios: 8 samples kept, the window's mean within.
    run_bios(&mut l, fast, 4, 5, ms(400), ms(1));
    run_bios(&mut l, fast, 9, 1, ms(700), ms(1));
    assert_eq!(
        DEFAULT_SCALE_COOKIE - l.child_cookie(0),
        6,
        "up by 32 / 16, not down by 8"
    );
}

#[test]
fn a_completion_that_took_no_time_still_checks_the_window() {
    // blkcg_iolatency_done_bio checks the window after iolatency_record_time whether or not
    // that recorded anything; iolatency_record_time returns early when now <= start.
    let (t, fast, _) = fast_slow();
    let mut l = IoLatency::new(&t, false, 32);
    run_bios(&mut l, fast, 1, 1, ms(0), ms(50));
    assert_eq!(
        l.child_cookie(0),
        DEFAULT_SCALE_COOKIE,
        "the window is 100 ms"
    );
    run_bios(&mut l, fast, 2, 1, ms(120), Nanos::ZERO);
    assert_eq!(
        DEFAULT_SCALE_COOKIE - l.child_cookie(0),
        8,
        "the window's one sample, 50 ms, missed"
    );
}

#[test]
fn a_bio_that_waited_below_follows_a_cookie_that_moved_meanwhile_before_it_climbs() {
    // blkcg_iolatency_throttle walks up from the bio's group calling check_scale_change and
    // then waiting (rq_qos_wait) at each level in turn: a bio that waited at /slow/bulk
    // checks /slow's cookie only when it gets there, so a miss of /fast meanwhile halves
    // /slow's depth before the bio takes a slot at /slow.
    let mut t = GroupTree::new();
    let fast = t.add("/fast", None).unwrap();
    let slow = t.add("/slow", None).unwrap();
    let prot = t.add("/slow/prot", None).unwrap();
    let bulk = t.add("/slow/bulk", None).unwrap();
    t.io_mut(fast).latency_target = Some(ms(5));
    t.io_mut(prot).latency_target = Some(ms(5));
    // nr_requests 2: a step down is 1 in the cookie, a halving of min(depth, 2) in depth.
    let mut l = IoLatency::new(&t, false, 2);
    // /slow/prot misses: /slow's cookie falls, and /slow/bulk goes to depth 1.
    run_bios(&mut l, prot, 1, 1, ms(0), ms(101));
    assert_eq!(l.throttle(&bio(10, bulk), ms(102)), Admit::Now);
    assert_eq!(l.max_depth(bulk.0 as usize), Some(1));
    assert_eq!(l.throttle(&bio(11, bulk), ms(103)), Admit::Hold);
    // A bio of /slow/prot (spared: its target is the one missed) holds a slot at /slow.
    assert_eq!(l.throttle(&bio(2, prot), ms(104)), Admit::Now);
    // /fast misses: the root's cookie falls; /slow has not submitted since.
    run_bios(&mut l, fast, 3, 1, ms(105), ms(101));
    assert_eq!(l.max_depth(slow.0 as usize), None);
    // Bio 10's completion lets bio 11 past /slow/bulk; at /slow it follows the cookie
    // (depth 2 -> 1) and waits behind /slow/prot's bio.
    l.done_bio(&end(10, bulk, ms(102)), ms(210));
    assert_eq!(l.max_depth(slow.0 as usize), Some(1));
    assert_eq!(l.poll_release(ms(210)), None);
    l.done_bio(&end(2, prot, ms(104)), ms(220));
    assert_eq!(l.poll_release(ms(220)), Some(11));
}
