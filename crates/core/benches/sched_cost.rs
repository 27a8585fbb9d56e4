//! Scheduler cost through the block layer: submit + dispatch + complete per request, with
//! 1,000, 10,000 and 100,000 requests queued.
//!
//! For every policy in the registry (so a policy that lands later is measured without a change
//! here): build it with default tunables behind a [`BlockLayer`] for a device that holds one
//! request (the layer's defaults otherwise: `nr_requests` 128, merges up to 256 sectors),
//! queue 1,000 (10,000, 100,000) bios, then repeat one step in steady state: a bio is
//! submitted (merged, inserted, or kept while its process sleeps for a request), the device
//! takes one request, and that request completes. Sectors are random over a 128 GiB disk,
//! half reads and half async writes, from 8 processes; bios are 4 to 64 KiB. The shapes are
//! drawn once, before timing (16,384 of them, cycled), so the timed loop draws no random
//! numbers: besides the layer's and the policy's own work it copies one bio per step. Time
//! advances 1 us before each of the three calls; a layer whose policy idles has time
//! advanced to its `poll_timeout` and is asked again. The figure is the time of one step,
//! that is ns per request.
//!
//! Time is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID` on Linux), so that other
//! processes on a shared machine do not inflate the figure by preempting it; on an idle machine
//! it equals wall time. Elsewhere it is wall time.
//!
//! As in the kernel, requests beyond what a queue may hold wait outside the policy's queues:
//! beyond a policy's scheduler tags (`nr_requests`: mq-deadline, kyber, bfq) a request waits
//! for a tag, as blk-mq's allocating processes sleep; under the elevators before blk-mq a
//! process sleeps for one of the request list's `nr_requests` requests per class
//! (`elevator_core::block::request_list`). The figure at 100,000 queued shows what that
//! waiting costs: a policy or layer whose cost grows faster than the logarithm of the number
//! queued shows it here.
//!
//! Beside the policies, `memory-floor/QUEUED` measures what no policy can avoid: three
//! dependent reads of queued requests at random places in a slab of QUEUED requests (a step
//! touches at least the request it dispatches and that request's FIFO neighbours, as the
//! kernel's `list_del` does). Its growth from 1,000 to 100,000 is the memory hierarchy's, not
//! an algorithm's: a policy whose growth stays near the floor's grows logarithmically in its
//! own work.
//!
//! Run: `cargo bench -p elevator-core --bench sched_cost [-- NAME]` (ids are `NAME/QUEUED`).

use std::hint::black_box;
use std::time::Duration;
#[cfg(not(target_os = "linux"))]
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::block::{Bio, BlockLayer, Done, Limits};
use elevator_core::harness::rq;
use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::{CtxId, GroupTree, Nanos, Op, Request, Scheduler, Settings};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Requests kept queued, one benchmark each.
const QUEUED: [usize; 3] = [1_000, 10_000, 100_000];
/// Time that passes before each call.
const STEP: Nanos = Nanos::from_us(1);
/// Distinct request shapes, cycled (a power of two).
const POOL: usize = 1 << 14;
/// Give up on a policy that keeps answering `Idle` for this many asks in one step.
const MAX_IDLE_ASKS: usize = 1_000;

struct Steady {
    blk: BlockLayer<Box<dyn Scheduler>, ()>,
    pool: Vec<Bio>,
    next: usize,
    now: Nanos,
    done: Vec<Done<()>>,
}

impl Steady {
    fn new(info: SchedulerSpec, queued: usize) -> Steady {
        let sched = info
            .build(&Settings::new(), &GroupTree::new())
            .unwrap_or_else(|e| panic!("{} does not build with defaults: {e}", info.name));
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
        let pool = (0..POOL)
            .map(|_| {
                let sector = rng.gen_range(0..(1u64 << 28)) & !7;
                let sectors = 8 << rng.gen_range(0..4u32);
                let ctx = CtxId(rng.gen_range(0..8u32));
                let op = if rng.gen_bool(0.5) {
                    Op::Read
                } else {
                    Op::Write
                };
                Bio::new(ctx, op, sector, sectors)
            })
            .collect();
        let mut st = Steady {
            blk: BlockLayer::new(sched, Limits::depth(1)),
            pool,
            next: 0,
            now: Nanos::ZERO,
            done: Vec::new(),
        };
        // Bounded, in case a policy holds requests it does not count as queued.
        for _ in 0..4 * queued {
            if st.blk.queued() >= queued {
                break;
            }
            st.arrive();
        }
        st
    }

    fn arrive(&mut self) {
        self.now += STEP;
        let bio = self.pool[self.next & (POOL - 1)].clone();
        self.next += 1;
        self.blk.handle_submit(bio, (), self.now);
    }

    fn step(&mut self) {
        self.arrive();
        self.now += STEP;
        let mut started = None;
        for _ in 0..MAX_IDLE_ASKS {
            if let Some(rq) = self.blk.poll_dispatch(self.now) {
                started = Some(rq);
                break;
            }
            match self.blk.poll_timeout() {
                Some(until) => {
                    self.now = until.max(self.now + STEP);
                    self.blk.handle_timeout(self.now);
                }
                None => break,
            }
        }
        self.now += STEP;
        if let Some(rq) = started {
            self.done.clear();
            self.blk
                .handle_complete(black_box(rq.id), true, self.now, &mut self.done);
        }
    }
}

/// The thread's CPU clock on Linux, wall time elsewhere.
struct Clock {
    #[cfg(target_os = "linux")]
    start: Duration,
    #[cfg(not(target_os = "linux"))]
    start: Instant,
}

impl Clock {
    #[cfg(target_os = "linux")]
    fn now() -> Clock {
        Clock {
            start: thread_cpu_time(),
        }
    }
    #[cfg(target_os = "linux")]
    fn elapsed(&self) -> Duration {
        thread_cpu_time() - self.start
    }
    #[cfg(not(target_os = "linux"))]
    fn now() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn sched_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("sched_cost");
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(4));
    for queued in QUEUED {
        for info in registry::all() {
            // Built inside the closure, which criterion calls only for a benchmark its filter
            // selects: queueing 100,000 requests for every policy is not free.
            group.bench_function(format!("{}/{queued}", info.name), |b| {
                let mut st = Steady::new(info.spec(), queued);
                b.iter_custom(|iters| {
                    let start = Clock::now();
                    for _ in 0..iters {
                        st.step();
                    }
                    start.elapsed()
                });
                if st.blk.queued() > 2 * queued {
                    eprintln!(
                        "note: {} held {} requests after the run (it dispatches less than one \
                         per step), so its figure is not at {queued} queued",
                        info.name,
                        st.blk.queued()
                    );
                }
            });
        }
    }
    for queued in QUEUED {
        group.bench_function(format!("memory-floor/{queued}"), |b| {
            let mut floor = Floor::new(queued);
            b.iter_custom(|iters| {
                let start = Clock::now();
                for _ in 0..iters {
                    floor.step();
                }
                start.elapsed()
            });
        });
    }
    group.finish();
}

/// `queued` requests in a slab, each naming the next of one random cycle through all of them
/// (Sattolo's shuffle) in its id, so every read depends on the one before and none can be
/// prefetched.
struct Floor {
    slab: Vec<Request>,
    at: usize,
}

impl Floor {
    fn new(queued: usize) -> Floor {
        let mut rng = ChaCha8Rng::seed_from_u64(0xf100);
        let mut order: Vec<usize> = (0..queued).collect();
        for i in (1..queued).rev() {
            order.swap(i, rng.gen_range(0..i));
        }
        let mut slab: Vec<Request> = (0..queued)
            .map(|_| rq(0, 0).sector(rng.gen_range(0..1u64 << 28)).build())
            .collect();
        for i in 0..queued {
            slab[order[i]].id.0 = order[(i + 1) % queued] as u64;
        }
        Floor { slab, at: 0 }
    }

    /// Three dependent reads and a write to the last request read.
    fn step(&mut self) {
        for _ in 0..3 {
            self.at = black_box(self.slab[self.at].id.0) as usize;
        }
        self.slab[self.at].sectors ^= 1;
    }
}

criterion_group!(benches, sched_cost);
criterion_main!(benches);
