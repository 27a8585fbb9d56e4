//! A scheduler embedded in a storage engine's own I/O loop, on the engine's own clock.
//!
//! ```text
//! cargo run --release -p elevator-own-policy --example embedded
//! ```
//!
//! The engine serves point reads ("gets": 4 KiB, one at a time, 2 ms apart) while a
//! compaction reads 256 KiB chunks two at a time in the background (the idle I/O class). It
//! owns the clock (here a virtual one, so the run is the same every time) and the device (here
//! a model: 80 us plus 400 MB/s, one request at a time); elevator's block layer, with the
//! policy in it, decides what goes to the device and when. The loop is the sans-IO contract
//! of `elevator_core::block::BlockLayer`:
//!
//! - `handle_submit` when the engine has I/O, `poll_dispatch` until `None` after every call;
//! - `handle_complete` when the device finishes a request: the bios it carried come back with
//!   the engine's tokens;
//! - `poll_timeout` is when to come back if nothing else happens (the policy keeping the
//!   device idle on purpose), `handle_timeout` when that time comes.
//!
//! The same loop runs noop for comparison: what the gets' latency and the compaction's
//! progress owe to the policy.

use std::collections::BTreeMap;

use elevator_core::block::{Bio, BlockLayer, Done, Limits};
use elevator_core::noop::Noop;
use elevator_core::{CtxId, IoClass, IoPrio, Nanos, Op, RequestId, Scheduler};
use elevator_own_policy::ForegroundFirst;

/// What the engine attaches to each I/O: the block layer hands it back on completion.
#[derive(Clone, Copy, Debug)]
enum Token {
    /// A point read.
    Get,
    /// A compaction read.
    Compaction,
}

const GETS: u64 = 500;
const GET_GAP: Nanos = Nanos::from_ms(2);
const CHUNKS: u64 = 400;
const CHUNK_SECTORS: u32 = 512;
const COMPACTION_DEPTH: u64 = 2;
const GET_CTX: CtxId = CtxId(1);
/// The compaction's first sector (512 MiB in).
const COMPACTION_START: u64 = 1 << 20;
const COMPACTION_CTX: CtxId = CtxId(2);

/// The device the engine runs on: 80 us plus the transfer at 400 MB/s.
fn service_time(sectors: u32) -> Nanos {
    Nanos::from_us(80) + Nanos::from_ns(u64::from(sectors) * 512 * 1_000_000_000 / 400_000_000)
}

/// The compaction's read of chunk `n`, in the idle I/O class: the policy's background.
fn compaction_read(n: u64) -> Bio {
    let sector = COMPACTION_START + n * u64::from(CHUNK_SECTORS);
    Bio::new(COMPACTION_CTX, Op::Read, sector, CHUNK_SECTORS).prio(IoPrio {
        class: IoClass::Idle,
        level: 7,
    })
}

/// What a run of the engine gave.
#[derive(Debug)]
struct EngineReport {
    scheduler: &'static str,
    /// Every get's latency (submission to completion), in completion order.
    get_latencies: Vec<Nanos>,
    /// When the compaction's last chunk completed.
    compaction_done: Nanos,
    /// How many times the loop woke for the scheduler's timer alone.
    timeouts: u64,
}

impl EngineReport {
    fn get_percentile(&self, p: f64) -> Nanos {
        let mut v = self.get_latencies.clone();
        v.sort_unstable();
        v[((v.len() - 1) as f64 * p / 100.0).round() as usize]
    }
}

/// The engine's loop: its clock, its device, its I/O, and a scheduler it does not know.
fn run_engine<S: Scheduler>(sched: S) -> EngineReport {
    let mut blk: BlockLayer<S, Token> = BlockLayer::new(sched, Limits::depth(1));
    let scheduler = blk.scheduler().name();
    let mut now = Nanos::ZERO;
    // At the device: completion time -> request.
    let mut device: BTreeMap<(Nanos, u64), RequestId> = BTreeMap::new();
    let mut done: Vec<Done<Token>> = Vec::new();
    let mut next_get = Some(Nanos::ZERO);
    let (mut gets_issued, mut next_chunk) = (0u64, 0u64);
    let mut report = EngineReport {
        scheduler,
        get_latencies: Vec::new(),
        compaction_done: Nanos::ZERO,
        timeouts: 0,
    };
    let mut chunks_done = 0;
    // The compaction starts with its first chunks in flight.
    while next_chunk < COMPACTION_DEPTH {
        blk.handle_submit(compaction_read(next_chunk), Token::Compaction, now);
        next_chunk += 1;
    }
    loop {
        // A get is due: submit it (4 KiB somewhere in the first GiB).
        if next_get.is_some_and(|t| t <= now) {
            let sector = (gets_issued * 7919 % 262_144) * 8;
            blk.handle_submit(Bio::new(GET_CTX, Op::Read, sector, 8), Token::Get, now);
            gets_issued += 1;
            next_get = None;
        }
        // Whatever the scheduler lets go now goes to the device.
        while let Some(rq) = blk.poll_dispatch(now) {
            device.insert((now + service_time(rq.sectors), rq.id.0), rq.id);
        }
        // The next thing to happen: a completion, a get, or the scheduler's timer.
        let completion = device.keys().next().map(|k| k.0);
        let timer = blk.poll_timeout();
        let Some(next) = [completion, next_get, timer].into_iter().flatten().min() else {
            break;
        };
        now = now.max(next);
        if completion == Some(next) {
            let (_, id) = device.pop_first().expect("a request at the device");
            blk.handle_complete(id, true, now, &mut done);
            for d in done.drain(..) {
                match d.token {
                    Token::Get => {
                        report.get_latencies.push(now.saturating_sub(d.submitted));
                        if gets_issued < GETS {
                            next_get = Some(now + GET_GAP);
                        }
                    }
                    Token::Compaction => {
                        chunks_done += 1;
                        report.compaction_done = now;
                        if next_chunk < CHUNKS {
                            blk.handle_submit(compaction_read(next_chunk), Token::Compaction, now);
                            next_chunk += 1;
                        }
                    }
                }
            }
        } else if next_get != Some(next) {
            report.timeouts += 1;
            blk.handle_timeout(now);
        }
    }
    assert!(
        blk.is_idle(),
        "the loop ends with nothing queued or at the device"
    );
    assert_eq!(
        (report.get_latencies.len() as u64, chunks_done),
        (GETS, CHUNKS)
    );
    report
}

/// The engine under the policy (background after 1 ms of quiet) and under noop.
fn compare() -> [EngineReport; 2] {
    let mut policy = ForegroundFirst::new();
    // Tunables change at run time, as sysfs writes would.
    policy.set_tunable("quiet_ms", 1).expect("in range");
    [run_engine(policy), run_engine(Noop::new())]
}

fn main() {
    println!("{GETS} gets 2 ms apart, {CHUNKS} compaction reads of 256 KiB two at a time");
    for r in compare() {
        println!(
            "{:<18} gets p50 {:>6} us  p99 {:>6} us  compaction done at {:>7.1} ms  \
             timer wake-ups {}",
            r.scheduler,
            r.get_percentile(50.0).as_us(),
            r.get_percentile(99.0).as_us(),
            r.compaction_done.as_ms_f64(),
            r.timeouts
        );
    }
}

#[test]
fn an_engine_loop_drives_the_policy_and_its_timers() {
    let [ours, noop] = compare();
    assert_eq!(ours.scheduler, "foreground-first");
    // The policy kept the device idle for the quiet time, and the loop woke for it.
    assert!(ours.timeouts > 0, "{ours:?}");
    assert_eq!(noop.timeouts, 0, "noop never idles");
    // Gets no longer queue behind two 256 KiB reads...
    assert!(
        ours.get_percentile(99.0) < noop.get_percentile(99.0),
        "{:?} vs {:?}",
        ours.get_percentile(99.0),
        noop.get_percentile(99.0)
    );
    // ...and the compaction still finishes, within the gets' run plus its own work.
    let gets_span = GET_GAP.as_ns() * GETS;
    let own_work = service_time(CHUNK_SECTORS).as_ns() * CHUNKS;
    assert!(
        ours.compaction_done.as_ns() < gets_span + own_work,
        "{ours:?}"
    );
}
