//! blk-throttle's decisions in hand-built situations, each citing the v6.18 function that
//! makes it, and the limit as a property.

use super::*;
use crate::group::{IoMax, IoSettings};
use crate::request::{CtxId, GroupId, IoPrio, RequestId};
use proptest::prelude::*;

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

/// A tree with `/a` limited by `max`.
fn tree_a(max: IoMax) -> (GroupTree, GroupId) {
    let mut t = GroupTree::new();
    let a = t.add("/a", None).unwrap();
    t.set_io(
        a,
        IoSettings {
            max,
            ..Default::default()
        },
    );
    (t, a)
}

fn bio(key: u64, group: GroupId, op: Op, bytes: u64) -> Request {
    Request {
        id: RequestId(key),
        ctx: CtxId(1),
        group,
        op,
        sync: true,
        meta: false,
        idle_hint: false,
        sector: key * 1024,
        sectors: (bytes / 512) as u32,
        prio: IoPrio::default(),
        submitted: Nanos::ZERO,
        cpu: 0,
    }
}

/// Fire the throttle's timer once at its time; the keys it releases.
fn fire(t: &mut Throttle) -> (Nanos, Vec<u64>) {
    let at = t.poll_timeout().expect("a timer is armed");
    t.handle_timeout(at);
    (at, std::iter::from_fn(|| t.poll_release(at)).collect())
}

#[test]
fn tg_within_bps_limit_allows_one_slice_of_bytes_at_once_then_waits_for_the_excess() {
    // rbps = 1 MiB/s, HZ = 250: a slice is 25 jiffies (100 ms) and allows 104857 bytes.
    let (tree, a) = tree_a(IoMax {
        rbps: Some(1 << 20),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    assert_eq!(t.slice_jiffies(), 25);
    assert_eq!(t.throttle(&bio(1, a, Op::Read, 65536), ms(0)), Admit::Now);
    assert_eq!(t.throttle(&bio(2, a, Op::Read, 65536), ms(0)), Admit::Hold);
    // 131072 - 104857 = 26215 bytes too many: 26215 * 250 / 2^20 = 6 jiffies, plus the
    // 25 the elapsed time was rounded up by: disptime = jiffy 31 = 124 ms.
    let (at, keys) = fire(&mut t);
    assert_eq!((at, keys), (ms(124), vec![2]));
    assert_eq!(t.poll_timeout(), None);
}

#[test]
fn tg_within_iops_limit_waits_at_least_one_io_time() {
    // riops = 10, HZ = 250: the first slice allows 10 * 25 / 250 = 1 I/O; the next waits the
    // rest of the slice (25 jiffies) or HZ / iops + 1 = 26 jiffies, whichever is longer.
    let (tree, a) = tree_a(IoMax {
        riops: Some(10),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    assert_eq!(t.throttle(&bio(1, a, Op::Read, 4096), ms(0)), Admit::Now);
    assert_eq!(t.throttle(&bio(2, a, Op::Read, 4096), ms(0)), Admit::Hold);
    assert_eq!(fire(&mut t), (ms(104), vec![2]));
}

#[test]
fn throttling_is_fifo_per_direction_and_directions_are_independent() {
    // __blk_throtl_bio / tg_within_limit: a bio behind a queued one queues, even if it would
    // fit; a write is not held behind reads.
    let (tree, a) = tree_a(IoMax {
        rbps: Some(1 << 20),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    assert_eq!(t.throttle(&bio(1, a, Op::Read, 102_400), ms(0)), Admit::Now);
    assert_eq!(t.throttle(&bio(2, a, Op::Read, 65536), ms(0)), Admit::Hold);
    assert_eq!(t.throttle(&bio(3, a, Op::Read, 512), ms(0)), Admit::Hold);
    assert_eq!(
        t.throttle(&bio(4, a, Op::Write, 1 << 20), ms(0)),
        Admit::Now
    );
    let mut released = Vec::new();
    while t.poll_timeout().is_some() {
        released.extend(fire(&mut t).1);
    }
    assert_eq!(released, vec![2, 3]);
}

#[test]
fn throtl_trim_slice_drops_whole_slices_but_keeps_the_last() {
    let (tree, a) = tree_a(IoMax {
        rbps: Some(1 << 20),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    let i = a.0 as usize + 1;
    t.nodes[i].slice_start[READ] = 0;
    t.nodes[i].slice_end[READ] = 100;
    t.nodes[i].bytes_disp[READ] = 500_000;
    // 40 jiffies in: less than two whole slices used, nothing trimmed; the slice end moves
    // to the slice boundary after now + one slice.
    t.trim_slice(i, READ, 40);
    assert_eq!(t.nodes[i].bytes_disp[READ], 500_000);
    assert_eq!(t.nodes[i].slice_end[READ], 75);
    // 80 jiffies in: 3 whole slices, one kept: 50 jiffies' bytes (2^20 * 50 / 250) go.
    t.nodes[i].slice_end[READ] = 100;
    t.trim_slice(i, READ, 80);
    assert_eq!(t.nodes[i].slice_start[READ], 50);
    assert_eq!(t.nodes[i].bytes_disp[READ], 500_000 - 209_715);
    assert_eq!(t.nodes[i].slice_end[READ], 125);
}

#[test]
fn throtl_trim_slice_forgets_the_bio_it_trims_after_and_three_slices_can_go_at_once() {
    // riops = 30 at HZ 250: a slice is 25 jiffies (100 ms) and allows 3 I/Os. Eight I/Os
    // pass in jiffies 75 and 76 (300-304 ms): more than two slices' budget (6) plus one.
    let (tree, a) = tree_a(IoMax {
        riops: Some(30),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    let i = a.0 as usize + 1;
    let mut key = 0;
    let mut submit = |t: &mut Throttle, at: u64, n: u32| -> u32 {
        (0..n)
            .filter(|_| {
                key += 1;
                t.throttle(&bio(key, a, Op::Read, 4096), ms(at)) == Admit::Now
            })
            .count() as u32
    };
    // Jiffy 1: a new slice (tg_update_slice), roundup(0 + 1, 25) = 25 jiffies allow 3;
    // throtl_trim_slice moves the slice end to roundup(1 + 25, 25) = 50.
    assert_eq!(submit(&mut t, 4, 3), 3);
    assert_eq!(t.nodes[i].slice_end[READ], 50);
    // Jiffy 26: roundup(26, 25) = 50 jiffies allow 6, one goes; 25 jiffies round down to
    // less than two slices, nothing trimmed; the slice now ends at roundup(51, 25) = 75.
    assert_eq!(submit(&mut t, 104, 1), 1);
    let n = &t.nodes[i];
    assert_eq!(
        (n.slice_start[READ], n.io_disp[READ], n.slice_end[READ]),
        (1, 4, 75)
    );
    // Jiffy 75, still in the slice: roundup(75, 25) = 75 jiffies allow 9, a 5th I/O goes;
    // throtl_trim_slice: 74 jiffies round down to 50, one slice kept, 25 jiffies (3 I/Os)
    // trimmed, slice_start 26; then roundup(50, 25) = 50 jiffies allow 6 over a count of
    // 2: four more at once.
    assert_eq!(submit(&mut t, 300, 5), 5);
    assert_eq!(
        (t.nodes[i].slice_start[READ], t.nodes[i].io_disp[READ]),
        (26, 6)
    );
    // Jiffy 76: roundup(51, 25) = 75 allow 9 over 6, one goes; the trim takes 25 more
    // jiffies (count 7 -> 4, slice_start 51) and roundup(26, 25) = 50 allow 6: two more.
    assert_eq!(submit(&mut t, 304, 3), 3);
    assert_eq!(submit(&mut t, 304, 1), 0);
    assert_eq!(
        (t.nodes[i].slice_start[READ], t.nodes[i].io_disp[READ]),
        (51, 6)
    );
    // Forgetting (throtl_trim_iops: `io_disp < io_trim` clears the count): a count of 1 at
    // jiffy 100 with slice_start 26 trims 25 jiffies (3 I/Os), so the count goes to 0, the
    // I/O just charged included, and slice_start to 51; 49 jiffies since then round up to
    // 50: six more may go at once.
    let mut t = Throttle::new(&tree, Config::default());
    let n = &mut t.nodes[i];
    n.slice_start[READ] = 26;
    n.slice_end[READ] = 125;
    n.io_disp[READ] = 0;
    assert_eq!(t.within_iops_limit(i, READ, 30, 100), 0);
    let mut tb = Tb {
        key: 1,
        size: 4096,
        bps_throttled: false,
        tg_bps: false,
        meta: false,
    };
    t.charge_iops(i, &mut tb, READ);
    t.trim_slice(i, READ, 100);
    assert_eq!(
        (t.nodes[i].slice_start[READ], t.nodes[i].io_disp[READ]),
        (51, 0)
    );
    assert_eq!(t.io_allowed(30, roundup(100 - 51 + 1, 25)), 6);
}

#[test]
fn a_child_is_limited_by_its_parent() {
    // On cgroup v2 a bio climbs (__blk_throtl_bio) and is charged at every level: /p's
    // limit holds for /p/c, which has none of its own (tg_update_has_rules inherits it).
    let mut tree = GroupTree::new();
    let p = tree.add("/p", None).unwrap();
    let c = tree.add("/p/c", None).unwrap();
    tree.io_mut(p).max.rbps = Some(1 << 20);
    let mut t = Throttle::new(&tree, Config::default());
    assert_eq!(t.throttle(&bio(1, c, Op::Read, 65536), ms(0)), Admit::Now);
    assert_eq!(t.throttle(&bio(2, c, Op::Read, 65536), ms(0)), Admit::Hold);
    let (at, keys) = fire(&mut t);
    assert_eq!(keys, vec![2]);
    assert_eq!(at, ms(124));
}

#[test]
fn a_group_without_rules_is_not_throttled_and_the_root_has_no_limits() {
    // blk_should_throtl: no limit on the group or an ancestor in that direction.
    let (tree, a) = tree_a(IoMax {
        wiops: Some(1),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    for k in 0..100 {
        assert_eq!(t.throttle(&bio(k, a, Op::Read, 1 << 20), ms(0)), Admit::Now);
        assert_eq!(
            t.throttle(&bio(1000 + k, GroupId::ROOT, Op::Write, 1 << 20), ms(0)),
            Admit::Now
        );
    }
    assert_eq!(t.throttled_bios(), 0);
}

#[test]
fn a_meta_bio_goes_through_over_the_limit_and_is_charged() {
    // bio_issue_as_root_blkg: REQ_META is issued as the root; the debt delays later bios.
    let (tree, a) = tree_a(IoMax {
        rbps: Some(1 << 20),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    let mut m = bio(1, a, Op::Read, 1 << 20);
    m.meta = true;
    assert_eq!(t.throttle(&m, ms(0)), Admit::Now);
    assert_eq!(t.throttle(&bio(2, a, Op::Read, 4096), ms(0)), Admit::Hold);
    // (2^20 + 4096 - 104857) bytes at 2^20 B/s: 225 jiffies (rounded down) + 25 of
    // rounding = jiffy 250; the timer is never armed more than 8 slices ahead
    // (throtl_schedule_pending_timer), so it fires at 800 ms first, then at 1000 ms, when
    // the division's rounding leaves the bio 4096 bytes short: one jiffy more.
    let fires: Vec<(Nanos, Vec<u64>)> =
        std::iter::from_fn(|| t.poll_timeout().map(|_| fire(&mut t))).collect();
    assert_eq!(
        fires,
        vec![(ms(800), vec![]), (ms(1000), vec![]), (ms(1004), vec![2])]
    );
}

/// Drive the throttle alone: bios arrive at their times (sorted), the timer fires when due;
/// the (time, bytes) of each bio as it passes.
fn passes(t: &mut Throttle, a: GroupId, arrivals: &[(u64, u64)]) -> Vec<(Nanos, u64)> {
    let mut out = Vec::new();
    let mut sizes = std::collections::HashMap::new();
    let mut i = 0;
    loop {
        let next_arrival = arrivals.get(i).map(|&(at, _)| Nanos::from_us(at));
        let next_timer = t.poll_timeout();
        let now = match (next_arrival, next_timer) {
            (None, None) => break,
            (Some(x), Some(y)) if y < x => y,
            (Some(x), _) => x,
            (None, Some(y)) => y,
        };
        if next_timer.is_some_and(|y| y <= now) {
            t.handle_timeout(now);
        }
        while let Some(&(at, bytes)) = arrivals.get(i) {
            if Nanos::from_us(at) > now {
                break;
            }
            let key = i as u64 + 1;
            sizes.insert(key, bytes);
            if t.throttle(&bio(key, a, Op::Read, bytes), now) == Admit::Now {
                out.push((now, bytes));
            }
            i += 1;
        }
        while let Some(k) = t.poll_release(now) {
            out.push((now, sizes[&k]));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// io.max is never exceeded by more than the kernel's slack: over any window, the bytes
    /// (I/Os) let through are at most the limit times (the window + three slices) plus one
    /// bio. The bound follows from v6.18's rules (see
    /// throtl_trim_slice_forgets_the_bio_it_trims_after_and_three_slices_can_go_at_once):
    /// a bio passes when the count since `slice_start` plus itself fits the elapsed time
    /// rounded up to a whole slice (tg_within_iops_limit rounds `elapsed + 1`,
    /// tg_within_bps_limit `elapsed`: up to one slice ahead); throtl_trim_slice, run after
    /// each bio, leaves `slice_start` less than two slices behind (it trims only when two
    /// whole slices have passed and keeps one "for deviation"), and when the count is
    /// smaller than what it trims it clears the count, the bio just charged included. So
    /// from the first bio of a window on, the group may spend one slice ahead plus up to
    /// two slices minus a jiffy behind: three slices less a jiffy, and that first bio. A
    /// window measured in nanoseconds between passes can be up to a jiffy shorter than the
    /// jiffies between them, which the missing jiffy covers. Two slices are not enough:
    /// proptest found 124 I/Os in 3.864 s at riops=30 against 123. IOPS limits under 10
    /// are left out: the kernel exceeds them (see
    /// an_iops_limit_under_ten_per_second_is_exceeded_as_in_the_kernel).
    #[test]
    fn limits_are_never_exceeded_by_more_than_three_slices_and_one_bio(
        rbps_kib in 64u64..4096,
        riops in 10u32..400,
        gaps in prop::collection::vec((0u64..20_000, 1u64..64), 20..300),
    ) {
        let rbps = rbps_kib * 1024;
        let (tree, a) = tree_a(IoMax { rbps: Some(rbps), riops: Some(riops), ..Default::default() });
        let mut t = Throttle::new(&tree, Config::default());
        let mut at = 0;
        let arrivals: Vec<(u64, u64)> = gaps.iter().map(|&(gap, kib)| { at += gap; (at, kib * 4096) }).collect();
        let out = passes(&mut t, a, &arrivals);
        prop_assert_eq!(out.len(), arrivals.len(), "every bio passes in the end");
        let slices_ns = 3 * 100_000_000u128;
        let max_bio = 64 * 4096u128;
        for i in 0..out.len() {
            let mut bytes = 0u128;
            for (j, &(tj, bj)) in out.iter().enumerate().skip(i) {
                bytes += u128::from(bj);
                let ios = (j - i + 1) as u128;
                let window = u128::from((tj - out[i].0).as_ns());
                let byte_cap = u128::from(rbps) * (window + slices_ns) / 1_000_000_000 + max_bio;
                let io_cap = u128::from(riops) * (window + slices_ns) / 1_000_000_000 + 1;
                prop_assert!(bytes <= byte_cap, "{} bytes in {} ns, cap {}", bytes, window, byte_cap);
                prop_assert!(ios <= io_cap, "{} I/Os in {} ns, cap {}", ios, window, io_cap);
            }
        }
    }
}

#[test]
fn an_iops_limit_under_ten_per_second_is_exceeded_as_in_the_kernel() {
    // throtl_trim_iops: one slice (100 ms) of a limit under 10 IOPS allows 0 I/Os, and a trim
    // that computes 0 clears io_disp ("io_trim <= 0": the overflow guard also catches 0),
    // so every other bio finds a clean count and goes with the one before it: 20 bios at
    // riops=7 pass in 1.872 s, 10.7 per second. (The bps trim of the same slice is what
    // moves slice_start and lets the trim happen.)
    let (tree, a) = tree_a(IoMax {
        rbps: Some(798 * 1024),
        riops: Some(7),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    let arrivals: Vec<(u64, u64)> = (0..20).map(|_| (0, 4096)).collect();
    let out = passes(&mut t, a, &arrivals);
    let at: Vec<u64> = out.iter().map(|(t, _)| t.as_ns() / 1_000_000).collect();
    assert_eq!(
        at,
        [
            144, 288, 288, 432, 576, 576, 720, 864, 864, 1008, 1152, 1152, 1296, 1296, 1440, 1584,
            1584, 1728, 1872, 1872
        ]
    );
}

/// `throtl_dispatch_tg`: a round moves at most `THROTL_GRP_QUANTUM` (8) bios of a group, 6
/// reads and 2 writes; `throtl_select_dispatch` runs rounds while the group stays due, up to
/// `THROTL_QUANTUM` (32) bios a firing. Four rounds: 24 reads and 8 writes.
#[test]
fn throtl_dispatch_tg_moves_six_reads_and_two_writes_a_round_and_32_bios_a_firing() {
    // A write limit high enough never to bind: every bio is due at once.
    let (tree, a) = tree_a(IoMax {
        wbps: Some(1 << 40),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    let i = a.0 as usize + 1;
    for k in 0..40 {
        for rw in [READ, WRITE] {
            let tb = Tb {
                key: 2 * k + rw as u64,
                size: 4096,
                bps_throttled: false,
                tg_bps: false,
                meta: false,
            };
            t.add_bio_tg(tb, None, i, rw);
        }
    }
    t.update_disptime(i, 0);
    assert_eq!(t.dispatch_tg(i, 0), 8);
    assert_eq!((t.sq_queued(i, READ), t.sq_queued(i, WRITE)), (34, 38));
    t.update_disptime(i, 0);
    // The group's parent (the root group's service queue) runs the rounds.
    let parent = t.nodes[i].parent.unwrap();
    assert_eq!(t.select_dispatch(parent, 0), 32);
    assert_eq!((t.sq_queued(i, READ), t.sq_queued(i, WRITE)), (10, 30));
}

/// The counts blk-throttle shows: bios that were queued over a limit
/// (`throtl_stats`' throttled count) and bios waiting now, over both directions and both
/// lists of a qnode: on the bps lists under rbps and wbps of 1 MiB/s (a slice allows 104857
/// bytes, one 64 KiB bio each), on the iops lists under riops and wiops of 10 (one I/O a
/// slice); and, released to the device level but not yet taken by the block layer, still
/// counted.
#[test]
fn throttled_and_queued_bios_are_counted() {
    let bps = IoMax {
        rbps: Some(1 << 20),
        wbps: Some(1 << 20),
        ..Default::default()
    };
    let iops = IoMax {
        riops: Some(10),
        wiops: Some(10),
        ..Default::default()
    };
    for max in [bps, iops] {
        let (tree, a) = tree_a(max);
        let mut t = Throttle::new(&tree, Config::default());
        let kib64 = 65536;
        assert_eq!(t.throttle(&bio(1, a, Op::Read, kib64), ms(0)), Admit::Now);
        assert_eq!(t.throttle(&bio(9, a, Op::Write, kib64), ms(0)), Admit::Now);
        for k in 2..5 {
            assert_eq!(t.throttle(&bio(k, a, Op::Read, kib64), ms(0)), Admit::Hold);
        }
        for k in 10..12 {
            assert_eq!(t.throttle(&bio(k, a, Op::Write, kib64), ms(0)), Admit::Hold);
        }
        assert_eq!((t.throttled_bios(), t.queued()), (5, 5), "{max:?}");
        let at = t.poll_timeout().expect("a timer is armed");
        t.handle_timeout(at);
        assert_eq!(t.queued(), 5, "{max:?}");
        let keys: Vec<u64> = std::iter::from_fn(|| t.poll_release(at)).collect();
        assert!(!keys.is_empty());
        assert_eq!(t.queued(), 5 - keys.len(), "{max:?}");
    }
}

/// `throtl_start_new_slice_with_credit` (a child's bio reaching a parent whose slice is
/// used): the parent's counts are cleared and its slice starts at the child's slice start
/// when that is later than its own, so the parent is credited the time since; an earlier
/// child start leaves the parent's start.
#[test]
fn a_parents_new_slice_starts_at_the_childs_when_that_is_later() {
    let (tree, a) = tree_a(IoMax {
        rbps: Some(1 << 20),
        ..Default::default()
    });
    let mut t = Throttle::new(&tree, Config::default());
    let p = a.0 as usize + 1;
    for (child_start, want) in [(50, 50), (5, 10)] {
        t.nodes[p].slice_start[READ] = 10;
        t.nodes[p].bytes_disp[READ] = 4096;
        t.nodes[p].io_disp[READ] = 1;
        t.start_new_slice_with_credit(p, READ, child_start, 100);
        let n = &t.nodes[p];
        assert_eq!(
            (n.slice_start[READ], n.slice_end[READ]),
            (want, 125),
            "child's slice from {child_start}"
        );
        assert_eq!((n.bytes_disp[READ], n.io_disp[READ]), (0, 0));
    }
}
