//! Property tests for the anticipatory scheduler: conservation (every request dispatched and
//! completed exactly once) and the anticipation bound (the disk is never kept idle past
//! antic_expire after the tick of the anticipated request's completion), under random open-loop arrivals
//! on the shared harness and random closed-loop processes with think times.

use super::tests_closed_loop::{self as as_closed_loop, Job, Step};
use super::{Anticipatory, Config};
use crate::harness::{rq, Harness};
use crate::request::{Op, Request};
use crate::time::Nanos;
use proptest::prelude::*;

fn cfg(antic_ms: u64, read_expire_ms: u64, read_batch_ms: u64) -> Config {
    Config {
        antic_expire: Nanos::from_ms(antic_ms),
        read_expire: Nanos::from_ms(read_expire_ms),
        read_batch_expire: Nanos::from_ms(read_batch_ms),
        ..Config::default()
    }
}

/// The start of the jiffy (1 ms at the default HZ = 1000) that `t` falls in.
fn tick(t: Nanos) -> Nanos {
    Nanos(t.as_ns() / 1_000_000 * 1_000_000)
}

/// A disk-ish service time without head state: size plus a position-dependent part.
fn cost(r: &Request) -> Nanos {
    Nanos::from_us(300 + u64::from(r.sectors) * 10 + (r.sector / 4096) % 5000)
}

#[derive(Clone, Debug)]
struct Arrival {
    ctx: u32,
    kind: u8,
    region: u64,
    offset: u64,
    sectors: u32,
    at_us: u64,
}

fn arrival() -> impl Strategy<Value = Arrival> {
    (
        0u32..5,
        0u8..4,
        0u64..4,
        0u64..20_000,
        1u32..64,
        0u64..300_000,
    )
        .prop_map(|(ctx, kind, region, offset, sectors, at_us)| Arrival {
            ctx,
            kind,
            region,
            offset,
            sectors,
            at_us,
        })
}

#[derive(Clone, Debug)]
struct ProcSpec {
    think_us: u64,
    jitter_us: u64,
    sequential: bool,
    write_every: u64,
    steps: usize,
    start_us: u64,
    base: u64,
}

fn proc_spec() -> impl Strategy<Value = ProcSpec> {
    (
        0u64..15_000,
        0u64..5_000,
        any::<bool>(),
        0u64..6,
        1usize..40,
        0u64..50_000,
        0u64..8,
    )
        .prop_map(
            |(think_us, jitter_us, sequential, write_every, steps, start_us, base)| ProcSpec {
                think_us,
                jitter_us,
                sequential,
                write_every,
                steps,
                start_us,
                base,
            },
        )
}

/// Turn specs into jobs deterministically (a small LCG seeded by the index for jitter).
fn jobs(specs: &[ProcSpec]) -> Vec<Job> {
    specs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut x = 0x9e37_79b9_u64.wrapping_mul(i as u64 + 1);
            let mut next = || {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                x >> 33
            };
            let mut sector = p.base * 10_000_000 + (i as u64) * 100_000;
            let steps = (0..p.steps)
                .map(|k| {
                    let think = Nanos::from_us(p.think_us + next() % (p.jitter_us + 1));
                    sector = if p.sequential {
                        sector + 8
                    } else {
                        (next() % 80) * 1_000_000 + (next() % 1000) * 8
                    };
                    if p.write_every > 0 && k as u64 % p.write_every == p.write_every - 1 {
                        Step::write(think, 200_000_000 + sector)
                    } else {
                        Step::read(think, sector)
                    }
                })
                .collect();
            Job {
                ctx: i as u32 + 1,
                start: Nanos::from_us(p.start_us),
                steps,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn as_dispatches_and_completes_every_request_exactly_once_under_random_arrivals(
        arrivals in prop::collection::vec(arrival(), 1..120),
        depth in 1usize..4,
        antic_ms in 0u64..12,
        read_expire_ms in 0u64..200,
        read_batch_ms in 0u64..600,
    ) {
        let s = Anticipatory::new(cfg(antic_ms, read_expire_ms, read_batch_ms));
        let mut h = Harness::new(s, depth, cost);
        for (i, a) in arrivals.iter().enumerate() {
            let b = rq(i as u64 + 1, a.ctx)
                .sector(a.region * 30_000_000 + a.offset * 8)
                .sectors(a.sectors)
                .at(Nanos::from_us(a.at_us));
            let b = match a.kind {
                0 | 1 => b.read(),
                2 => b.write(),
                _ => b.sync_write(),
            };
            h.submit(b);
        }
        // Harness::run asserts exactly-once dispatch and completion and an empty queue.
        let out = h.run();
        let antic = Nanos::from_ms(antic_ms);
        for &(at, until) in &out.idles {
            prop_assert!(antic > Nanos::ZERO, "idled with anticipation off");
            // The wait ends exactly antic_expire after the tick (1 ms at HZ = 1000) of a
            // completion that happened before it.
            let start = until.saturating_sub(antic);
            prop_assert!(
                out.served.iter().any(|s| tick(s.completed) == start && s.completed <= at),
                "idle ({at}, {until}) does not end antic_expire after a completion's tick"
            );
        }
    }

    #[test]
    fn as_never_idles_past_antic_expire_after_the_anticipated_completion(
        specs in prop::collection::vec(proc_spec(), 1..6),
        depth in 1usize..3,
        antic_ms in 1u64..12,
        read_batch_ms in 50u64..600,
    ) {
        let mut s = Anticipatory::new(cfg(antic_ms, 125, read_batch_ms));
        let jobs = jobs(&specs);
        let total: usize = jobs.iter().map(|j| j.steps.len()).sum();
        // run() asserts exactly-once dispatch and completion of every request.
        let out = as_closed_loop::run(&mut s, jobs, depth, cost);
        prop_assert_eq!(out.issued, total);
        prop_assert_eq!(out.served.len() + out.merged, total);
        let antic = Nanos::from_ms(antic_ms);
        for idle in &out.idles {
            let ctx = idle.anticipated.expect("anticipating someone");
            let start = idle.until.saturating_sub(antic);
            prop_assert!(
                out.completions.iter().any(|&(t, c)| tick(t) == start && c == ctx && t <= idle.at),
                "idle {idle:?} does not end antic_expire after a completion tick of {ctx:?}"
            );
        }
    }

    #[test]
    fn as_is_deterministic(specs in prop::collection::vec(proc_spec(), 1..5)) {
        let order = |specs: &[ProcSpec]| {
            let mut s = Anticipatory::default();
            let out = as_closed_loop::run(&mut s, jobs(specs), 2, cost);
            out.served.iter().map(|r| (r.rq.id, r.dispatched)).collect::<Vec<_>>()
        };
        prop_assert_eq!(order(&specs), order(&specs));
    }
}

#[test]
fn as_keeps_a_dependent_reader_going_against_a_streaming_writer() {
    // The case AS exists for: one process reading a file block by block (think 0.2 ms),
    // while writeback keeps the queue full of writes far away. With anticipation the reader
    // keeps the disk between its reads; with antic_expire = 0 (deadline-like) it loses it.
    let run = |antic_ms| {
        let mut s = Anticipatory::new(cfg(antic_ms, 125, 500));
        let reader = Job {
            ctx: 1,
            start: Nanos::ZERO,
            steps: (0..300)
                .map(|i| Step::read(Nanos::from_us(200), 1_000_000 + 8 * i))
                .collect(),
        };
        let writer = Job {
            ctx: 2,
            start: Nanos::ZERO,
            steps: (0..3000)
                .map(|i| Step::write(Nanos::from_us(100), 150_000_000 + 8 * i))
                .collect(),
        };
        let seek = |r: &Request| Nanos::from_us(if r.op == Op::Read { 500 } else { 400 });
        let out = as_closed_loop::run(&mut s, vec![reader, writer], 1, seek);
        out.of_ctx(1).last().expect("reader ran").completed
    };
    let with = run(6);
    let without = run(0);
    assert!(
        with < without,
        "reader done at {with} with AS, {without} without"
    );
}
