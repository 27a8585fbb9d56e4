//! Scheduler cost: one request's insert + dispatch + complete, with 1,000, 10,000 and 100,000
//! requests queued; for the policy alone and through the block layer.
//!
//! For every policy in the registry (so a policy that lands later is measured without a change
//! here), built with default tunables, two benchmarks:
//!
//! - `NAME/QUEUED`, the policy alone: queue QUEUED requests, then repeat one step in steady
//!   state: a request arrives (offered to `try_merge`, inserted if not merged), the device asks
//!   for one request, and that request completes. A policy that answers `Idle` has time
//!   advanced to its `until` and is asked again. Requests beyond a policy's scheduler tags
//!   (`nr_requests`: mq-deadline, kyber, bfq) wait for a tag outside its queues, as blk-mq's
//!   allocating processes sleep; the other policies hold all QUEUED.
//! - `layer/NAME/QUEUED`, the same behind a [`BlockLayer`] for a device that holds one
//!   request (the layer's defaults otherwise: `nr_requests` 128, merges up to 256 sectors):
//!   QUEUED bios submitted, then one step is a bio submitted (merged, inserted, or kept while
//!   its process sleeps for a request), one request dispatched (time advanced to the layer's
//!   `poll_timeout` while the policy idles), and its completion. Under the elevators before
//!   blk-mq the layer's request list lets the policy hold at most `nr_requests` requests a
//!   class, as a 2.6 queue did, and the rest wait as sleeping processes' bios
//!   (`elevator_core::block::request_list`).
//!
//! Sectors are random over a 128 GiB disk, half reads and half async writes, from 8 processes;
//! requests are 4 to 64 KiB. The shapes are drawn once, before timing (16,384 of them,
//! cycled), so the timed loop draws no random numbers: besides the policy's (and the layer's)
//! own work it copies one request per step. Time advances 1 us before each of the three
//! calls, so no deadline expires, and timers and anticipation run as they would. The figure is
//! the time of one step, that is ns per request. A policy or layer whose cost grows faster
//! than the logarithm of the number queued shows it at 100,000.
//!
//! Time is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID` on Linux), so that other
//! processes on a shared machine do not inflate the figure by preempting it; on an idle machine
//! it equals wall time. Elsewhere it is wall time.
//!
//! Beside the policies, `memory-floor/QUEUED` measures what no policy can avoid: three
//! dependent reads of queued requests at random places in a slab of QUEUED requests (a step
//! touches at least the request it dispatches and that request's FIFO neighbours, as the
//! kernel's `list_del` does). Its growth from 1,000 to 100,000 is the memory hierarchy's, not
//! an algorithm's: a policy whose growth stays near the floor's grows logarithmically in its
//! own work.
//!
//! Run: `cargo bench -p elevator-core --bench sched_cost [-- NAME]` (ids are `NAME/QUEUED` and
//! `layer/NAME/QUEUED`).
//!
//! Instructions a request, which no other load on the machine changes: run the bench binary
//! under `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*Steady*step*'`
//! with `--bench ID --profile-time 1`; the instructions counted over the calls to `step` it
//! reports (or over the steps `SCHED_COST_STEPS=1` prints) are instructions a request, and
//! `--cache-sim=yes` adds the simulated cache misses (docs/speed.md).

use std::hint::black_box;
use std::time::Duration;
#[cfg(not(target_os = "linux"))]
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Bencher, Criterion, Throughput};
use elevator_core::block::{Bio, BlockLayer, Done, Limits};
use elevator_core::harness::rq;
use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::request::DEFAULT_MERGE_SECTORS;
use elevator_core::{CtxId, Dispatch, GroupTree, Nanos, Op, Request, Scheduler, Settings};
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

/// The policy alone: requests handed to it directly, as a driver without a block layer would.
struct Bare {
    sched: Box<dyn Scheduler>,
    pool: Vec<Request>,
    next: u64,
    now: Nanos,
}

/// A policy (alone or behind the layer) in steady state: one request arrives, one is
/// dispatched and completes, per step.
trait Steady {
    /// Requests waiting (in the policy, or in the layer).
    fn queued(&self) -> usize;
    /// One request arrives.
    fn arrive(&mut self);
    /// One step: an arrival, a dispatch and its completion. Each implementation is kept out
    /// of line (`#[inline(never)]`), so that an instruction count (`valgrind --tool=callgrind
    /// --toggle-collect='*Steady>::step'`) divides by the calls it reports into instructions a
    /// request.
    fn step(&mut self);
}

/// `st` with `queued` requests waiting; bounded, in case a policy holds requests it does not
/// count as queued.
fn fill<S: Steady>(mut st: S, queued: usize) -> S {
    for _ in 0..4 * queued {
        if st.queued() >= queued {
            break;
        }
        st.arrive();
    }
    st
}

/// The policy `info` with its default tunables.
fn with_defaults(info: &SchedulerSpec) -> Box<dyn Scheduler> {
    info.build(&Settings::new(), &GroupTree::new())
        .unwrap_or_else(|e| panic!("{} does not build with defaults: {e}", info.name))
}

/// One request shape of the pool.
struct Shape {
    sector: u64,
    sectors: u32,
    ctx: u32,
    read: bool,
}

/// The `POOL` request shapes, drawn from one seed: the same for every policy, alone or behind
/// the layer.
fn shapes() -> impl Iterator<Item = Shape> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    (0..POOL).map(move |_| Shape {
        sector: rng.gen_range(0..(1u64 << 28)) & !7,
        sectors: 8 << rng.gen_range(0..4u32),
        ctx: rng.gen_range(0..8u32),
        read: rng.gen_bool(0.5),
    })
}

impl Bare {
    fn new(info: SchedulerSpec, queued: usize) -> Bare {
        let sched = with_defaults(&info);
        let pool = shapes()
            .map(|s| {
                let b = rq(0, s.ctx).sector(s.sector).sectors(s.sectors);
                if s.read {
                    b.read().build()
                } else {
                    b.write().build()
                }
            })
            .collect();
        fill(
            Bare {
                sched,
                pool,
                next: 0,
                now: Nanos::ZERO,
            },
            queued,
        )
    }
}

impl Steady for Bare {
    fn queued(&self) -> usize {
        self.sched.queued()
    }

    fn arrive(&mut self) {
        self.now += STEP;
        let mut r = self.pool[self.next as usize & (POOL - 1)].clone();
        r.id.0 = self.next;
        r.submitted = self.now;
        self.next += 1;
        if self
            .sched
            .try_merge(&r, DEFAULT_MERGE_SECTORS, self.now)
            .is_none()
        {
            self.sched.insert(r, self.now);
        }
    }

    #[inline(never)]
    fn step(&mut self) {
        self.arrive();
        self.now += STEP;
        let mut done = None;
        for _ in 0..MAX_IDLE_ASKS {
            match self.sched.dispatch(self.now) {
                Dispatch::Request(r) => {
                    done = Some(r);
                    break;
                }
                Dispatch::Idle { until } => self.now = until.max(self.now + STEP),
                Dispatch::Empty => break,
            }
        }
        self.now += STEP;
        if let Some(r) = done {
            self.sched.complete(black_box(&r), self.now);
        }
    }
}

/// The policy behind the block layer, whose request list or tags keep what waits outside it.
struct Layered {
    blk: BlockLayer<Box<dyn Scheduler>, ()>,
    pool: Vec<Bio>,
    next: usize,
    now: Nanos,
    done: Vec<Done<()>>,
}

impl Layered {
    fn new(info: SchedulerSpec, queued: usize) -> Layered {
        let sched = with_defaults(&info);
        let pool = shapes()
            .map(|s| {
                let op = if s.read { Op::Read } else { Op::Write };
                Bio::new(CtxId(s.ctx), op, s.sector, s.sectors)
            })
            .collect();
        fill(
            Layered {
                blk: BlockLayer::new(sched, Limits::depth(1)),
                pool,
                next: 0,
                now: Nanos::ZERO,
                done: Vec::new(),
            },
            queued,
        )
    }
}

impl Steady for Layered {
    fn queued(&self) -> usize {
        self.blk.queued()
    }

    fn arrive(&mut self) {
        self.now += STEP;
        let bio = self.pool[self.next & (POOL - 1)].clone();
        self.next += 1;
        self.blk.handle_submit(bio, (), self.now);
    }

    #[inline(never)]
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
            let name = info.name;
            group.bench_function(format!("{name}/{queued}"), |b| {
                measure(b, Bare::new(info.spec(), queued), queued, name)
            });
            group.bench_function(format!("layer/{name}/{queued}"), |b| {
                let what = format!("the layer over {name}");
                measure(b, Layered::new(info.spec(), queued), queued, &what)
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

/// Time `st`'s steps in thread CPU time; say so if `what` ends the run holding far more than
/// `queued` (it dispatched less than one request a step).
/// With `SCHED_COST_STEPS` set in the environment, also say how many steps ran (what an
/// instruction count over the whole run divides by).
fn measure<S: Steady>(b: &mut Bencher, mut st: S, queued: usize, what: &str) {
    let mut steps = 0u64;
    b.iter_custom(|iters| {
        steps += iters;
        let start = Clock::now();
        for _ in 0..iters {
            st.step();
        }
        start.elapsed()
    });
    if std::env::var_os("SCHED_COST_STEPS").is_some() {
        eprintln!("steps: {what} at {queued} queued: {steps}");
    }
    if st.queued() > 2 * queued {
        eprintln!(
            "note: {what} held {} requests after the run (it dispatches less than one per \
             step), so its figure is not at {queued} queued",
            st.queued()
        );
    }
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
