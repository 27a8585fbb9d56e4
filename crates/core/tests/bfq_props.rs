//! Property tests for BFQ: every request dispatched and completed exactly once under random
//! mixes of processes, groups, classes, sync and async I/O; long-run service shares of
//! always-backlogged queues in proportion to their weights.

use std::collections::BTreeMap;

use elevator_core::bfq::{Bfq, Config};
use elevator_core::harness::{rq, Harness};
use elevator_core::{CtxId, GroupTree, IoClass, Nanos, Settings};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Spec {
    ctx: u32,
    group: u32,
    sector: u64,
    sectors: u32,
    write: bool,
    class: u8,
    at_ms: u64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u32..6,
        0u32..3,
        0u64..2_000_000,
        1u32..256,
        any::<bool>(),
        0u8..6,
        0u64..1500,
    )
        .prop_map(|(ctx, group, sector, sectors, write, class, at_ms)| Spec {
            ctx,
            group,
            sector,
            sectors,
            write,
            class,
            at_ms,
        })
}

fn groups() -> GroupTree {
    let mut g = GroupTree::new();
    g.add("/a", Some(100)).unwrap();
    g.add("/b", Some(500)).unwrap();
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bfq_dispatches_and_completes_every_request_exactly_once(
        specs in prop::collection::vec(spec(), 1..300),
        depth in 1usize..5,
        low_latency in 0i64..2,
        merge_window in prop::sample::select(vec![0i64, 100]),
    ) {
        let mut s = Settings::new();
        s.set("low_latency", low_latency).set("merge_window_ms", merge_window);
        let sched = Bfq::with_groups(Config::from_settings(&s).unwrap(), &groups()).unwrap();
        let mut h = Harness::new(sched, depth, |r| Nanos::from_us(300 + u64::from(r.sectors) * 20));
        for (i, sp) in specs.iter().enumerate() {
            let class = match sp.class { 0 => IoClass::RealTime, 5 => IoClass::Idle, _ => IoClass::BestEffort };
            let b = rq(i as u64, sp.ctx)
                .sector(sp.sector)
                .sectors(sp.sectors)
                .group(sp.group)
                .prio(class, (sp.ctx % 8) as u8)
                .at(Nanos::from_ms(sp.at_ms));
            h.submit(if sp.write { b.write() } else { b.read() });
        }
        // The harness panics on any conservation failure and checks that the scheduler
        // ends empty with everything completed.
        let out = h.run();
        prop_assert!(out.served.len() <= specs.len());
    }

    #[test]
    fn bfq_shares_of_backlogged_queues_follow_their_weights(
        levels in prop::collection::vec(0u8..8, 2..4),
    ) {
        // Weight raising deliberately overrides weights for a while: measure without it.
        let mut s = Settings::new();
        s.set("low_latency", 0);
        let sched = Bfq::new(Config::from_settings(&s).unwrap());
        let mut h = Harness::new(sched, 1, |r| Nanos::from_us(200 + u64::from(r.sectors) * 4));
        // The processes start together: their requests arrive interleaved, so each has a
        // queue (and a share of the scheduler tags, `bfq_limit_depth`) before any of them
        // holds all the tags.
        for i in 0..3000u64 {
            for (c, &level) in levels.iter().enumerate() {
                h.submit(
                    rq(c as u64 * 100_000 + i, c as u32)
                        .sector(((c as u64) << 32) + i * 512)
                        .sectors(256)
                        .prio(IoClass::BestEffort, level),
                );
            }
        }
        let out = h.run();
        // Count service while every queue is still backlogged.
        let mut last: BTreeMap<CtxId, Nanos> = BTreeMap::new();
        for s in &out.served {
            last.insert(s.rq.ctx, s.dispatched);
        }
        let cutoff = *last.values().min().unwrap();
        let mut got: BTreeMap<u32, u64> = BTreeMap::new();
        for s in out.served.iter().filter(|s| s.dispatched < cutoff) {
            *got.entry(s.rq.ctx.0).or_default() += u64::from(s.rq.sectors);
        }
        let total: u64 = got.values().sum();
        let wsum: u64 = levels.iter().map(|&l| (8 - u64::from(l)) * 10).sum();
        for (c, &l) in levels.iter().enumerate() {
            let want = (8 - u64::from(l)) as f64 * 10.0 / wsum as f64;
            let share = got.get(&(c as u32)).copied().unwrap_or(0) as f64 / total as f64;
            prop_assert!((share - want).abs() <= 0.05, "levels {levels:?}: queue {c} share {share:.3} want {want:.3}");
        }
    }
}
