//! Property tests for noop, linus, deadline (2.6.32 and 2.5.59), mq-deadline and kyber:
//! conservation (every request dispatched and completed exactly once, no sector lost or
//! invented by merging), determinism, and the deadlines' and mq-deadline's expiry bound.
//!
//! The expiry bound proved here, for a read `H` and a dispatch index `j` at which `H` is the
//! head of the read FIFO and its deadline has passed (deadline: `now > arrival + read_expire`,
//! `time_after`; mq-deadline: `now >= arrival + read_expire`, `time_after_eq`):
//! - when reads are always preferred (`writes_starved` never reached), `H` is dispatched at
//!   index `j + fifo_batch - 1` at the latest: the batch under way may take at most
//!   `fifo_batch - 1` more requests, and the next batch starts at `H`;
//! - with `writes_starved >= 1`, at index `j + 2 * fifo_batch - 1` at the latest: one write
//!   batch may come in between, after which the starvation count is back to zero.

use elevator_core::deadline::v2_5::Deadline25;
use elevator_core::deadline::{Config, Deadline};
use elevator_core::harness::{rq, Harness, Outcome};
use elevator_core::mq_deadline::{self, MqDeadline};
use elevator_core::{registry, GroupTree, Nanos, Request, Scheduler, Settings};
use proptest::prelude::*;

/// One arrival: gap after the previous one (us), sector slot, size in 4 KiB units, read?, ctx.
type Arrival = (u64, u64, u32, bool, u32);

fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    prop::collection::vec(
        (0u64..3_000, 0u64..200, 1u32..=4, any::<bool>(), 0u32..4),
        1..150,
    )
}

/// Requests with ids in arrival order (so FIFO order is id order) and their times.
fn requests(arr: &[Arrival]) -> Vec<Request> {
    let mut t = 0;
    arr.iter()
        .enumerate()
        .map(|(i, &(gap, slot, size, read, ctx))| {
            t += gap;
            let b = rq(i as u64, ctx)
                .sector(slot * 8)
                .sectors(size * 8)
                .at(Nanos::from_us(t));
            if read {
                b.read().build()
            } else {
                b.write().build()
            }
        })
        .collect()
}

/// A device whose service time depends only on the request.
fn cost(r: &Request) -> Nanos {
    Nanos::from_us(300 + (r.sector % 13) * 250 + u64::from(r.sectors) * 10)
}

fn run<S: Scheduler>(sched: S, depth: usize, reqs: &[Request]) -> Outcome {
    let mut h = Harness::new(sched, depth, cost);
    for r in reqs {
        h.submit(r.clone());
    }
    // `run` itself asserts: no request dispatched twice or never inserted, every inserted or
    // merged request completed exactly once, nothing left queued.
    h.run()
}

fn build(name: &str) -> Box<dyn Scheduler> {
    let info = registry::find(name).expect("registered");
    info.build(&Settings::new(), &GroupTree::new())
        .expect("defaults build")
}

fn assert_conserved(out: &Outcome, reqs: &[Request]) {
    let submitted: u64 = reqs.iter().map(|r| u64::from(r.sectors)).sum();
    let served: u64 = out.served.iter().map(|s| u64::from(s.rq.sectors)).sum();
    assert_eq!(served, submitted, "merging lost or invented sectors");
    let mut ids: Vec<u64> = out.dispatch_order();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids.len(),
        out.served.len(),
        "a request was dispatched twice"
    );
}

/// The two deadline versions, built from one configuration.
fn deadlines(cfg: Config) -> [Box<dyn Scheduler>; 2] {
    [
        Box::new(Deadline::new(cfg.clone())),
        Box::new(Deadline25::new(cfg)),
    ]
}

/// For each read, the dispatch index from which it is an expired FIFO head, and its own.
/// `strict`: expired strictly after the deadline (`time_after`), else at it.
fn expiry_lags(out: &Outcome, read_expire: Nanos, strict: bool) -> Vec<(u64, usize, usize)> {
    let mut reads: Vec<(u64, usize)> = out
        .served
        .iter()
        .enumerate()
        .filter(|(_, s)| s.rq.op.is_read())
        .map(|(k, s)| (s.rq.id.0, k))
        .collect();
    reads.sort_unstable(); // FIFO order = id order
    let mut lags = Vec::new();
    // Highest dispatch index among the reads ahead of this one in the FIFO.
    let mut ahead_done: Option<usize> = None;
    for &(id, k) in &reads {
        let s = &out.served[k];
        let deadline = s.rq.submitted + read_expire;
        let first = ahead_done.map_or(0, |a| a + 1);
        // The first dispatch at or after `first` made once the deadline has passed.
        let expired = |at: Nanos| at > deadline || (!strict && at == deadline);
        if let Some(j) = (first..out.served.len()).find(|&j| expired(out.served[j].dispatched)) {
            lags.push((id, j, k));
        }
        ahead_done = Some(ahead_done.map_or(k, |a| a.max(k)));
    }
    lags
}

fn deadline_config(
    read_expire_ms: u64,
    fifo_batch: u32,
    writes_starved: u32,
    front: bool,
) -> Config {
    Config {
        read_expire: Nanos::from_ms(read_expire_ms),
        write_expire: Nanos::from_ms(read_expire_ms * 3),
        fifo_batch,
        writes_starved,
        front_merges: front,
    }
}

const NAMES: [&str; 6] = [
    "noop",
    "linus",
    "deadline",
    "deadline-2.5",
    "mq-deadline",
    "kyber",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_request_is_dispatched_and_completed_exactly_once(
        arr in arrivals(),
        depth in 1usize..=4,
        which in 0usize..NAMES.len(),
    ) {
        let name = NAMES[which];
        let reqs = requests(&arr);
        let out = run(build(name), depth, &reqs);
        assert_conserved(&out, &reqs);
    }

    #[test]
    fn deadline_with_any_tunables_dispatches_everything_once(
        arr in arrivals(),
        depth in 1usize..=4,
        read_expire_ms in 0u64..50,
        fifo_batch in 0u32..20,
        writes_starved in 0u32..4,
        front in any::<bool>(),
    ) {
        let reqs = requests(&arr);
        let cfg = deadline_config(read_expire_ms, fifo_batch, writes_starved, front);
        for sched in deadlines(cfg) {
            let out = run(sched, depth, &reqs);
            assert_conserved(&out, &reqs);
        }
    }

    #[test]
    fn the_same_arrivals_give_the_same_dispatches(
        arr in arrivals(),
        depth in 1usize..=4,
        which in 0usize..NAMES.len(),
    ) {
        let name = NAMES[which];
        let reqs = requests(&arr);
        let a = run(build(name), depth, &reqs);
        let b = run(build(name), depth, &reqs);
        prop_assert_eq!(a.served, b.served);
    }

    #[test]
    fn deadline_serves_an_expired_read_fifo_head_within_one_batch_when_reads_are_preferred(
        arr in arrivals(),
        depth in 1usize..=4,
        read_expire_ms in 1u64..40,
        fifo_batch in 1u32..20,
        front in any::<bool>(),
    ) {
        let reqs = requests(&arr);
        let cfg = deadline_config(read_expire_ms, fifo_batch, u32::MAX, front);
        for sched in deadlines(cfg) {
            let name = sched.name();
            let out = run(sched, depth, &reqs);
            for (id, j, k) in expiry_lags(&out, Nanos::from_ms(read_expire_ms), true) {
                prop_assert!(
                    k < j + fifo_batch as usize, // at index j + fifo_batch - 1 at the latest
                    "{}: read {} expired as FIFO head at dispatch {} but went out at {} \
                     (fifo_batch {})",
                    name, id, j, k, fifo_batch
                );
            }
        }
    }

    #[test]
    fn mq_deadline_serves_an_expired_read_fifo_head_within_one_batch_when_reads_are_preferred(
        arr in arrivals(),
        depth in 1usize..=4,
        read_expire_ms in 1u64..40,
        fifo_batch in 1u32..20,
        front in any::<bool>(),
    ) {
        let reqs = requests(&arr);
        let cfg = mq_deadline::Config {
            read_expire: Nanos::from_ms(read_expire_ms),
            write_expire: Nanos::from_ms(read_expire_ms * 3),
            writes_starved: u32::MAX,
            fifo_batch,
            front_merges: front,
            ..mq_deadline::Config::default()
        };
        let out = run(MqDeadline::new(cfg), depth, &reqs);
        for (id, j, k) in expiry_lags(&out, Nanos::from_ms(read_expire_ms), false) {
            prop_assert!(
                k < j + fifo_batch as usize,
                "read {} expired as FIFO head at dispatch {} but went out at {} (fifo_batch {})",
                id, j, k, fifo_batch
            );
        }
    }

    #[test]
    fn deadline_serves_an_expired_read_fifo_head_within_two_batches_when_writes_starve(
        arr in arrivals(),
        depth in 1usize..=4,
        read_expire_ms in 1u64..40,
        fifo_batch in 1u32..20,
        writes_starved in 1u32..4,
    ) {
        let reqs = requests(&arr);
        let cfg = deadline_config(read_expire_ms, fifo_batch, writes_starved, true);
        for sched in deadlines(cfg) {
            let name = sched.name();
            let out = run(sched, depth, &reqs);
            for (id, j, k) in expiry_lags(&out, Nanos::from_ms(read_expire_ms), true) {
                prop_assert!(
                    k < j + 2 * fifo_batch as usize, // at j + 2 * fifo_batch - 1 at the latest
                    "{}: read {} expired as FIFO head at dispatch {} but went out at {} \
                     (fifo_batch {})",
                    name, id, j, k, fifo_batch
                );
            }
        }
    }
}

/// The bound is tight (2.6.32): a batch that has just gone on from the next request runs its
/// course before the expired head is served.
#[test]
fn deadline_expired_head_may_wait_for_the_rest_of_the_batch() {
    let cfg = deadline_config(10, 4, u32::MAX, true);
    let mut s = Deadline::new(cfg);
    // A low read, the head-to-be far up the disk, then a run of reads just above the first.
    s.insert(rq(0, 1).sector(50).read().build(), Nanos::ZERO);
    s.insert(rq(100, 1).sector(1_000_000).read().build(), Nanos::ZERO);
    for id in 1..=8 {
        s.insert(rq(id, 2).sector(100 + id * 100).read().build(), Nanos::ZERO);
    }
    let mut order = Vec::new();
    let mut step = |s: &mut Deadline, now: Nanos| {
        let elevator_core::Dispatch::Request(r) = s.dispatch(now) else {
            panic!()
        };
        order.push(r.id.0);
    };
    // Before the deadline: one batch from the FIFO head (0, 1, 2, 3), the next goes on from
    // the next request (4); read 100 expires right after.
    for _ in 0..5 {
        step(&mut s, Nanos::from_ms(9));
    }
    for _ in 0..4 {
        step(&mut s, Nanos::from_ms(11));
    }
    // Three more of the batch (fifo_batch - 1), then the expired head.
    assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6, 7, 100]);
}
