//! A submitter's plug (`blk_start_plug` .. `blk_finish_plug`, block/plug.rs): the kernel's
//! decisions in hand-built situations.

use super::*;

/// `blk_attempt_plug_merge`: under none, with the device idle and room for all, eight
/// sequential 4 KiB writes in one plug leave as one request of 64 sectors (unplugged, none
/// offers a bio for merging only while the device is full, so each is its own request); the
/// eight bios complete with it, seven of them as merged, and the disk counts seven merges.
#[test]
fn a_plug_merges_sequential_bios_into_its_tail_even_under_none_with_room() {
    let run = |plugged: bool| {
        let mut blk = BlockLayer::new(Noop::new(), Limits::depth(32));
        if plugged {
            blk.handle_plug(CtxId(1));
        }
        for i in 0..8u32 {
            blk.handle_submit(write(1, 1000 + 8 * u64::from(i), 8), i, ms(0));
        }
        if plugged {
            assert!(
                drain(&mut blk, ms(0)).is_empty(),
                "nothing leaves an open plug"
            );
            blk.handle_unplug(CtxId(1), ms(0));
        }
        (blk.stat().write.merges, blk)
    };
    let (merges, mut blk) = run(true);
    assert_eq!(merges, 7);
    let rqs = drain(&mut blk, ms(0));
    assert_eq!(
        rqs.iter()
            .map(|r| (r.sector, r.sectors))
            .collect::<Vec<_>>(),
        [(1000, 64)]
    );
    // Each bio rides on the request as its own extent.
    let segs: Vec<(u64, u32)> = blk
        .segments(rqs[0].id)
        .unwrap()
        .map(|s| (s.sector, s.sectors))
        .collect();
    assert_eq!(segs, (0..8).map(|i| (1000 + 8 * i, 8)).collect::<Vec<_>>());
    let mut done = Vec::new();
    blk.handle_complete(rqs[0].id, true, ms(1), &mut done);
    let seen: Vec<(u32, bool, u32)> = done
        .iter()
        .map(|d| (d.token, d.merged, d.sectors))
        .collect();
    assert_eq!(seen, (0..8).map(|i| (i, i > 0, 8)).collect::<Vec<_>>());
    assert_eq!(blk.bios_completed(), 8);
    assert!(blk.is_idle());

    let (merges, mut blk) = run(false);
    assert_eq!(merges, 0, "unplugged under none with room, nothing merges");
    assert_eq!(drain(&mut blk, ms(0)).len(), 8);
}

/// `blk_attempt_plug_merge` looks at the plug's tail only, and `blk_rq_merge_ok` wants the
/// same operation and priority: a bio that ends where the tail starts front-merges; one that
/// continues an earlier request of the plug, a read after a write, or another priority
/// does not.
#[test]
fn a_plug_merges_only_into_its_tail_and_only_alike_bios() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(32));
    blk.handle_plug(CtxId(1));
    blk.handle_submit(write(1, 100, 8), 0u32, ms(0));
    blk.handle_submit(write(1, 500, 8), 1, ms(0));
    blk.handle_submit(write(1, 492, 8), 2, ms(0)); // front merge into the tail (500)
    blk.handle_submit(write(1, 108, 8), 3, ms(0)); // continues 100, not the tail
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 116, 8), 4, ms(0)); // another op
    let idle = IoPrio {
        class: crate::IoClass::Idle,
        level: 7,
    };
    blk.handle_submit(Bio::new(CtxId(1), Op::Read, 124, 8).prio(idle), 5, ms(0));
    blk.handle_unplug(CtxId(1), ms(0));
    let rqs = drain(&mut blk, ms(0));
    let extents: Vec<(u64, u32)> = rqs.iter().map(|r| (r.sector, r.sectors)).collect();
    assert_eq!(extents, [(100, 8), (492, 16), (108, 8), (116, 8), (124, 8)]);
    assert_eq!(blk.stat().write.merges, 1);
    let segs: Vec<(u64, u32)> = blk
        .segments(rqs[1].id)
        .unwrap()
        .map(|s| (s.sector, s.sectors))
        .collect();
    assert_eq!(
        segs,
        [(500, 8), (492, 8)],
        "the front-merged bio rides as its own extent"
    );
}

/// `blk_add_rq_to_plug`: a plug holding `BLK_MAX_REQUEST_COUNT` (32) requests is flushed
/// before the 33rd is added, so the first 32 reach the device while the plug is still open.
#[test]
fn a_plug_of_thirty_two_requests_is_flushed_before_the_next() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(64));
    blk.handle_plug(CtxId(1));
    for i in 0..33u32 {
        blk.handle_submit(write(1, 10_000 * u64::from(i), 8), i, ms(0));
    }
    assert_eq!(drain(&mut blk, ms(0)).len(), BLK_MAX_REQUEST_COUNT);
    assert_eq!(blk.queued(), 1, "the 33rd waits in the plug");
    blk.handle_unplug(CtxId(1), ms(0));
    assert_eq!(drain(&mut blk, ms(0)).len(), 1);
}

/// `blk_add_rq_to_plug`: a tail of `BLK_PLUG_FLUSH_SIZE` (128 KiB) or more flushes the plug
/// before a new request is added, unless the queue merges nothing (`nomerges` 2).
#[test]
fn a_plug_whose_tail_reached_128_kib_is_flushed_before_a_new_request() {
    for (nomerges, flushed) in [(NoMerges::All, 1), (NoMerges::None, 0)] {
        let mut blk = BlockLayer::new(Noop::new(), Limits::depth(64).nomerges(nomerges));
        blk.handle_plug(CtxId(1));
        blk.handle_submit(write(1, 0, 256), 0u32, ms(0)); // 128 KiB
        blk.handle_submit(write(1, 90_000, 8), 1, ms(0));
        assert_eq!(drain(&mut blk, ms(0)).len(), flushed, "{nomerges:?}");
        blk.handle_unplug(CtxId(1), ms(0));
        assert_eq!(drain(&mut blk, ms(0)).len(), 2 - flushed);
    }
}

/// `blk_add_rq_to_plug` looks at `rq_list_peek`, the plug's head (its oldest request): a
/// small first request and a 128 KiB second one do not flush the plug when a third comes;
/// a 128 KiB first one flushes it when the second comes (and not again at the third).
#[test]
fn the_128_kib_flush_looks_at_the_plugs_first_request() {
    for (first, second, flushed) in [(8, 256, 0), (256, 8, 1)] {
        let mut blk = BlockLayer::new(Noop::new(), Limits::depth(64));
        blk.handle_plug(CtxId(1));
        blk.handle_submit(write(1, 0, first), 0u32, ms(0));
        blk.handle_submit(write(1, 10_000, second), 1, ms(0));
        blk.handle_submit(write(1, 90_000, 8), 2, ms(0));
        assert_eq!(
            drain(&mut blk, ms(0)).len(),
            flushed,
            "{first} then {second}"
        );
        blk.handle_unplug(CtxId(1), ms(0));
        assert_eq!(drain(&mut blk, ms(0)).len(), 3 - flushed);
    }
}

/// A plug grows its tail only to the device's size limit (`ll_back_merge_fn`): at
/// `max_sectors` 16, three sequential 4 KiB writes make a request of 16 sectors and one of 8.
#[test]
fn a_plug_merge_stops_at_the_devices_size_limit() {
    let mut blk = BlockLayer::new(Noop::new(), Limits::depth(8).max_sectors(16));
    blk.handle_plug(CtxId(1));
    for i in 0..3u32 {
        blk.handle_submit(write(1, 8 * u64::from(i), 8), i, ms(0));
    }
    blk.handle_unplug(CtxId(1), ms(0));
    let extents: Vec<(u64, u32)> = drain(&mut blk, ms(0))
        .iter()
        .map(|r| (r.sector, r.sectors))
        .collect();
    assert_eq!(extents, [(0, 16), (16, 8)]);
}

/// Under mq-deadline the plugged requests enter the scheduler together at the flush, in the
/// order they were built (`blk_mq_dispatch_plug_list` -> `insert_requests`), and another
/// process's bios are not plugged.
#[test]
fn a_plug_holds_only_its_submitters_requests_and_inserts_them_in_order() {
    let mut blk = BlockLayer::new(MqDeadline::new(Default::default()), Limits::depth(1));
    blk.handle_plug(CtxId(1));
    blk.handle_submit(write(1, 800, 8), 0u32, ms(0));
    blk.handle_submit(write(2, 5000, 8), 1, ms(0));
    assert_eq!(blk.queued(), 2, "one in the plug, one in the scheduler");
    let first = drain(&mut blk, ms(0));
    assert_eq!(first.iter().map(|r| r.sector).collect::<Vec<_>>(), [5000]);
    blk.handle_unplug(CtxId(1), ms(0));
    assert_eq!(blk.counters().inserted, 2);
    blk.handle_unplug(CtxId(1), ms(0)); // no plug open: nothing happens
    assert_eq!(blk.counters().inserted, 2);
}
