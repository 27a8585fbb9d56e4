//! The engine against an ideal device: conservation, ordering of time, determinism.

use elevator_core::registry;
use elevator_core::{GroupTree, Nanos, Op, Settings};
use elevator_sim::fixed::FixedLatency;
use elevator_sim::{JobSlot, Simulation};
use elevator_workload::{Action, IoSpec, Job};

/// Reads `n` 4 KiB blocks one at a time with `think` between them.
struct Dependent {
    n: u64,
    next: u64,
    waiting: bool,
    think: Nanos,
    base: u64,
    wake: Option<Nanos>,
}

impl Job for Dependent {
    fn name(&self) -> &str {
        "dependent"
    }
    fn poll(&mut self, now: Nanos) -> Action {
        if self.waiting {
            return Action::Wait;
        }
        if let Some(w) = self.wake {
            if now < w {
                return Action::Think { until: w };
            }
            self.wake = None;
        }
        if self.next == self.n {
            return Action::Done;
        }
        self.waiting = true;
        self.next += 1;
        Action::Issue(IoSpec {
            ctx: 0,
            op: Op::Read,
            sync: true,
            meta: false,
            idle_hint: false,
            sector: self.base + self.next * 8,
            sectors: 8,
            prio: None,
            tag: self.next,
        })
    }
    fn complete(&mut self, tag: u64, now: Nanos) {
        assert_eq!(tag, self.next, "completion for a tag not outstanding");
        self.waiting = false;
        self.wake = Some(now + self.think);
    }
}

/// Keeps `depth` async writes outstanding forever.
struct Flood {
    depth: u32,
    outstanding: u32,
    next: u64,
}

impl Job for Flood {
    fn name(&self) -> &str {
        "flood"
    }
    fn poll(&mut self, _now: Nanos) -> Action {
        if self.outstanding == self.depth {
            return Action::Wait;
        }
        self.outstanding += 1;
        self.next += 1;
        Action::Issue(IoSpec {
            ctx: 0,
            op: Op::Write,
            sync: false,
            meta: false,
            idle_hint: false,
            sector: 1_000_000 + self.next * 256,
            sectors: 256,
            prio: None,
            tag: self.next,
        })
    }
    fn complete(&mut self, _tag: u64, _now: Nanos) {
        self.outstanding -= 1;
    }
}

/// A [`Flood`] of 16 writes.
fn flood() -> Box<dyn Job> {
    Box::new(Flood {
        depth: 16,
        outstanding: 0,
        next: 0,
    })
}

fn run(sched: &str, seedless_reads: u64) -> (Nanos, u64, u64) {
    let r = run_with(sched, &Settings::new(), seedless_reads);
    (
        r.job("reader").unwrap().metrics.finished.unwrap(),
        r.job("writer").unwrap().metrics.write.ios,
        r.counters.dispatched,
    )
}

fn run_with(sched: &str, settings: &Settings, seedless_reads: u64) -> elevator_sim::RunReport {
    finish(setup(sched, settings, seedless_reads), seedless_reads)
}

/// A reader of `seedless_reads` dependent reads beside a writer keeping 16 writes queued.
fn setup(sched: &str, settings: &Settings, seedless_reads: u64) -> Simulation {
    let groups = GroupTree::new();
    let info = registry::find(sched).unwrap();
    let s = info.build(settings, &groups).unwrap();
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(2), 1, 1 << 30);
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    sim.add_job(JobSlot::new(
        "reader",
        Box::new(Dependent {
            n: seedless_reads,
            next: 0,
            waiting: false,
            think: Nanos::from_us(100),
            base: 0,
            wake: None,
        }),
    ));
    sim.add_job(JobSlot::new("writer", flood()).foreground(false));
    sim
}

fn finish(sim: Simulation, seedless_reads: u64) -> elevator_sim::RunReport {
    let r = sim.run(Some(Nanos::from_secs(600)));
    let reader = r.job("reader").unwrap();
    assert_eq!(reader.metrics.read.ios, seedless_reads);
    assert!(r.counters.completed <= r.counters.dispatched);
    assert!(r.ios_completed <= r.counters.inserted + r.counters.merged);
    assert!(r.counters.dispatched <= r.counters.inserted);
    r
}

#[test]
fn io_beyond_the_policys_largest_request_is_split_and_completes_as_a_whole() {
    // latency-guard takes at most 32 KiB: each 128 KiB write goes in as four pieces.
    let mut settings = Settings::new();
    settings.set("max_request_kb", 32);
    let r = run_with("latency-guard", &settings, 200);
    let w = &r.job("writer").unwrap().metrics.write;
    assert!(w.ios > 0);
    assert_eq!(
        w.bytes,
        w.ios * 128 * 1024,
        "whole writes counted, once each"
    );
    // 200 reads whole, every completed write as 4 pieces, plus pieces still queued at the end.
    assert!(r.counters.inserted >= 200 + 4 * w.ios, "{:?}", r.counters);
    assert!(r.counters.dispatched >= 200 + 4 * w.ios, "{:?}", r.counters);
}

#[test]
fn foreground_job_finishes_under_every_policy_beside_a_writer() {
    for info in registry::all() {
        // 1,000 reads of 1 ms each plus think time is the floor; a writer can only add to it.
        // The run outlasts every policy's read batch (AS: 500 ms), so writes get their turn.
        let (t, w, _) = run(info.name, 1000);
        assert!(t >= Nanos::from_ms(1000), "{}: {t}", info.name);
        assert!(w > 0, "{}: the writer made no progress", info.name);
    }
}

#[test]
fn same_inputs_give_the_same_run() {
    assert_eq!(run("deadline", 40), run("deadline", 40));
}

#[test]
fn fifo_reader_waits_behind_the_whole_write_queue() {
    // Under noop every read queues behind the 15 writes already waiting (2 ms each).
    let (t, _, _) = run("noop", 20);
    assert!(t >= Nanos::from_ms(20 * 15 * 2), "{t}");
}

/// Time for a reader without think time to do 200 dependent reads beside 16 outstanding
/// writes, when a completion reaches the reader `wakeup` after the device finishes it.
fn dependent_reads_beside_writes(sched: &str, wakeup: Nanos) -> Nanos {
    let groups = GroupTree::new();
    let s = registry::find(sched)
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(2), 1, 1 << 30);
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    sim.set_wakeup_latency(wakeup);
    sim.add_job(JobSlot::new("reader", dependent(200, 0)));
    sim.add_job(JobSlot::new("writer", flood()).foreground(false));
    let r = sim.run(Some(Nanos::from_secs(600)));
    let reader = r.job("reader").unwrap();
    assert_eq!(reader.metrics.read.ios, 200);
    reader.metrics.finished.unwrap()
}

#[test]
fn wakeup_latency_lets_deadline_dispatch_writes_before_the_next_dependent_read() {
    // Without a wake-up latency the next read is queued before deadline picks the next
    // request; with one, deadline finds only writes and serves them (deceptive idleness).
    let instant = dependent_reads_beside_writes("deadline", Nanos::ZERO);
    let woken = dependent_reads_beside_writes("deadline", Nanos::from_us(50));
    assert!(
        2 * woken.as_ns() >= 3 * instant.as_ns(),
        "deadline: {woken:?} with a 50 us wake-up vs {instant:?} without"
    );
    // The anticipatory scheduler waits for the reader through the wake-up latency.
    let instant = dependent_reads_beside_writes("anticipatory", Nanos::ZERO);
    let woken = dependent_reads_beside_writes("anticipatory", Nanos::from_us(50));
    assert!(
        10 * woken.as_ns() <= 11 * instant.as_ns(),
        "anticipatory: {woken:?} with a 50 us wake-up vs {instant:?} without"
    );
}

#[test]
fn every_policy_finishes_dependent_reads_when_completions_reach_the_reader_late() {
    // Idle timers and anticipation meet a next request that arrives after the dispatch
    // decision; no policy may stall on it.
    for info in registry::all() {
        let t = dependent_reads_beside_writes(info.name, Nanos::from_us(50));
        assert!(t >= Nanos::from_ms(200), "{}: {t}", info.name);
    }
}

/// Three `fio --direct=1 --rw=write` jobs under CFQ: their writes reach the scheduler with
/// REQ_SYNC | REQ_IDLE (the job sets the hint, the engine passes it on), so CFQ keeps each
/// writer's idle window (`req_noidle`, 4.19) and serves the three in time slices: most writes
/// take just the device's 2 ms, and one per slice waits out the other two's slices (~200 ms).
/// Without the hint the writers would be sync-noidle and two of them would preempt each other
/// forever while the third starves (see the CFQ unit test on `req_noidle`).
#[test]
fn o_direct_writers_reach_cfq_with_the_idle_hint_and_get_slices() {
    use elevator_workload::jobs::{FioJob, FioJobConfig, RwMode};
    use elevator_workload::BuildEnv;
    let groups = GroupTree::new();
    let s = registry::find("cfq")
        .unwrap()
        .build(&Settings::new(), &groups)
        .unwrap();
    let capacity = 1u64 << 30;
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(2), 1, capacity);
    let mut sim = Simulation::new(Box::new(dev), s, groups);
    // A writer's next write reaches the scheduler after the device has been offered the
    // next request, as when the kernel wakes the writer after the completion interrupt.
    sim.set_wakeup_latency(Nanos::from_us(20));
    for i in 0..3u64 {
        let name = format!("w{i}");
        let cfg = FioJobConfig {
            rw: RwMode::Write,
            bs: 64 * 1024,
            direct: true,
            offset: Some(i * (64 << 20)),
            size: Some(32 << 20),
            runtime_ms: Some(2000),
            time_based: true,
            ..FioJobConfig::default()
        };
        let job = FioJob::new(cfg, &BuildEnv::new(capacity, 1, name.clone())).unwrap();
        sim.add_job(JobSlot::new(name, Box::new(job)));
    }
    let r = sim.run(Some(Nanos::from_secs(3)));
    for j in &r.jobs {
        let w = j.metrics.write.summary(r.end);
        assert!(w.ios > 200, "{}: {} writes", j.name, w.ios);
        assert!(
            w.lat_p50_ms < 2.1 && (150.0..=250.0).contains(&w.lat_max_ms),
            "{}: median write {} ms, longest {} ms; want 2 ms and the other two's slices",
            j.name,
            w.lat_p50_ms,
            w.lat_max_ms
        );
    }
}

fn dependent(n: u64, base: u64) -> Box<dyn Job> {
    Box::new(Dependent {
        n,
        next: 0,
        waiting: false,
        think: Nanos::ZERO,
        base,
        wake: None,
    })
}

#[test]
fn a_later_phase_starts_when_every_job_of_the_earlier_one_is_done() {
    // 1 ms per read, one at a time: phase 0's jobs do 10 and 20 reads side by side (30 ms
    // on a depth-1 device); phase 1's job starts then, whatever its own `start` says.
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(1), 1, 1 << 30);
    let sched = registry::find("noop")
        .unwrap()
        .build(&Settings::new(), &GroupTree::new())
        .unwrap();
    let mut sim = Simulation::new(Box::new(dev), sched, GroupTree::new());
    sim.add_job(JobSlot::new("a", dependent(10, 0)));
    sim.add_job(JobSlot::new("b", dependent(20, 1 << 20)));
    sim.add_job_in_phase(JobSlot::new("c", dependent(5, 1 << 21)), 1);
    let r = sim.run(None);
    let c = r.job("c").unwrap();
    assert_eq!(c.phase, 1);
    assert_eq!(c.metrics.started, Nanos::from_ms(30));
    assert_eq!(c.metrics.finished, Some(Nanos::from_ms(35)));
    assert_eq!(c.metrics.read.ios, 5);
    // Every read of c waited for nothing: phase 0 was over.
    assert!(c.metrics.read.latency.max() < 1_001_000);
    assert_eq!(r.end, Nanos::from_ms(35));
}

#[test]
fn completions_within_the_ramp_are_left_out_of_the_figures() {
    let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(1), 1, 1 << 30);
    let sched = registry::find("noop")
        .unwrap()
        .build(&Settings::new(), &GroupTree::new())
        .unwrap();
    let mut sim = Simulation::new(Box::new(dev), sched, GroupTree::new());
    sim.set_ramp(Nanos::from_us(3_500));
    sim.add_job(JobSlot::new("a", dependent(10, 0)));
    let r = sim.run(None);
    let a = &r.job("a").unwrap().metrics;
    // Completions at 1, 2, 3 ms fall in the ramp; 4..=10 ms count, over 6.5 ms.
    assert_eq!(a.read.ios, 7);
    assert_eq!(a.started, Nanos::from_us(3_500));
    let s = a.summary("a", "/", r.end);
    assert!((s.seconds - 0.0065).abs() < 1e-12, "{}", s.seconds);
}

#[test]
fn request_records_are_off_by_default() {
    let r = run_with("deadline", &Settings::new(), 50);
    assert!(r.requests.is_empty());
}

#[test]
fn request_records_account_for_every_request_in_time_order() {
    for info in registry::all() {
        let mut sim = setup(info.name, &Settings::new(), 200);
        sim.record_requests();
        let r = finish(sim, 200);
        let recs = &r.requests;
        // One record per request completed, merged ones included.
        assert_eq!(recs.len() as u64, r.ios_completed, "{}", info.name);
        // Merged requests still queued when the run ended have no record.
        assert!(recs.iter().filter(|q| q.merged).count() as u64 <= r.counters.merged);
        let reads = recs.iter().filter(|q| q.job == 0).count() as u64;
        assert_eq!(reads, 200, "{}: the reader's records", info.name);
        for q in recs {
            assert!(
                q.inserted <= q.dispatched && q.dispatched <= q.completed,
                "{q:?}"
            );
            assert!(q.queued >= 1 || q.merged, "{q:?}");
            // The ideal device holds one request at a time.
            assert_eq!(q.in_flight, 1, "{}: {q:?}", info.name);
            let op = if q.job == 0 { Op::Read } else { Op::Write };
            assert_eq!(q.op, op, "{q:?}");
        }
        // Completion order: the device serves one request at a time.
        assert!(recs.windows(2).all(|w| w[0].completed <= w[1].completed));
        // The writer keeps 16 writes queued: the scheduler's queue holds more than one.
        assert!(recs.iter().any(|q| q.queued > 1), "{}", info.name);
    }
}

#[test]
fn recording_requests_changes_nothing_else() {
    let plain = run_with("anticipatory", &Settings::new(), 300);
    let mut sim = setup("anticipatory", &Settings::new(), 300);
    sim.record_requests();
    let recorded = finish(sim, 300);
    assert_eq!(plain.end, recorded.end);
    assert_eq!(plain.counters, recorded.counters);
    assert_eq!(plain.summaries(), recorded.summaries());
}

/// The ideal device as a disk (rotational): the simulator puts it behind a host with
/// `DISK_HOST_TAGS` tags.
struct Spinning(FixedLatency);

impl elevator_sim::Device for Spinning {
    fn name(&self) -> &str {
        "spinning"
    }
    fn depth(&self) -> usize {
        self.0.depth
    }
    fn capacity_sectors(&self) -> u64 {
        self.0.capacity
    }
    fn submit(&mut self, rq: &elevator_core::Request, now: Nanos) -> elevator_sim::Service {
        self.0.submit(rq, now)
    }
    fn non_rotational(&self) -> bool {
        false
    }
}

#[test]
fn a_record_is_tagged_at_insertion_while_a_host_tag_is_free_else_when_a_holder_completes() {
    // blk_mq_get_tag under none: 40 readers at depth 1 on a one-request disk behind 32 host
    // tags. A read finding a tag free has it at insertion (rq_wait 0 in ioc_rqos_done:
    // start_time_ns = alloc_time_ns); the others get one when a holder completes, so their tag
    // time is another read's completion. Under an elevator the tag is the device's slot: the
    // record's dispatch.
    for sched in ["none", "deadline"] {
        let groups = GroupTree::new();
        let s = registry::find(sched)
            .unwrap()
            .build(&Settings::new(), &groups)
            .unwrap();
        let dev = FixedLatency::new(Nanos::from_ms(1), Nanos::from_ms(1), 1, 1 << 30);
        let mut sim = Simulation::new(Box::new(Spinning(dev)), s, groups);
        for i in 0..40u64 {
            sim.add_job(JobSlot::new(
                "reader",
                Box::new(Dependent {
                    n: 5,
                    next: 0,
                    waiting: false,
                    think: Nanos::from_us(100),
                    base: i << 20,
                    wake: None,
                }),
            ));
        }
        sim.record_requests();
        let r = sim.run(Some(Nanos::from_secs(60)));
        let recs = &r.requests;
        assert_eq!(recs.len(), 200, "{sched}");
        let freed: std::collections::HashSet<Nanos> = recs.iter().map(|q| q.completed).collect();
        let mut waited = 0;
        for q in recs {
            assert!(
                q.inserted <= q.tagged && q.tagged <= q.dispatched,
                "{sched}: {q:?}"
            );
            if sched == "deadline" {
                assert_eq!(q.tagged, q.dispatched, "{q:?}");
            } else if q.tagged > q.inserted {
                assert!(freed.contains(&q.tagged), "{q:?}");
                waited += 1;
            }
        }
        if sched == "none" {
            assert!(waited > 0, "some reads wait for a tag");
            assert!(
                recs.iter()
                    .any(|q| q.tagged == q.inserted && q.dispatched > q.inserted),
                "some reads hold a free tag while they wait for the disk"
            );
        }
    }
}

/// A device that learns a request's completion only from what comes after it: requests are
/// served in pairs, the first of a pair completing with the second, 100 us after the second
/// arrives; one left alone for 1 ms completes then (its own timer). The shape of an SSD that
/// acknowledges a write when the program unit later writes fill is programmed.
struct Pairs {
    /// The first of a pair, waiting: its id and when its timer runs out.
    alone: Option<(elevator_core::RequestId, Nanos)>,
    settled: Vec<(elevator_core::RequestId, Nanos)>,
}

impl Pairs {
    const PAIR: Nanos = Nanos(100_000);
    const ALONE: Nanos = Nanos(1_000_000);
}

impl elevator_sim::Device for Pairs {
    fn name(&self) -> &str {
        "pairs"
    }
    fn depth(&self) -> usize {
        8
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 30
    }
    fn submit(&mut self, rq: &elevator_core::Request, now: Nanos) -> elevator_sim::Service {
        let (done, deferred) = match self.alone.take() {
            Some((first, _)) => {
                self.settled.push((first, now + Self::PAIR));
                (now + Self::PAIR, false)
            }
            None => {
                self.alone = Some((rq.id, now + Self::ALONE));
                (now, true)
            }
        };
        elevator_sim::Service {
            done,
            cache_hit: false,
            deferred,
        }
    }
    fn non_rotational(&self) -> bool {
        true
    }
    fn defers(&self) -> bool {
        true
    }
    fn poll_completion(&mut self) -> Option<(elevator_core::RequestId, Nanos)> {
        self.settled.pop()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.alone.map(|(_, at)| at)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        if let Some((id, at)) = self.alone {
            if at <= now {
                self.alone = None;
                self.settled.push((id, at));
            }
        }
    }
}

#[test]
fn a_completion_the_device_learns_after_the_dispatch_reaches_its_job() {
    // Two readers, one read at a time each (blk_mq_end_request reaches the job whenever the
    // device reports it): while both read, each read pairs with the other's and both complete
    // 100 us later (the first of each pair deferred, reported at the second's dispatch); once
    // the 5-read job is done the other's reads are alone and complete by the device's timer,
    // 1 ms after their dispatch.
    let sched = registry::find("noop")
        .unwrap()
        .build(&Settings::new(), &GroupTree::new())
        .unwrap();
    let dev = Pairs {
        alone: None,
        settled: Vec::new(),
    };
    let mut sim = Simulation::new(Box::new(dev), sched, GroupTree::new());
    sim.record_requests();
    sim.add_job(JobSlot::new("five", dependent(5, 0)));
    sim.add_job(JobSlot::new("ten", dependent(10, 1 << 20)));
    let r = sim.run(None);
    assert_eq!(r.ios_completed, 15);
    assert_eq!(r.end, Nanos(5 * 100_000 + 5 * 1_000_000));
    for q in &r.requests {
        let waited = q.completed - q.dispatched;
        let expected = if q.completed <= Nanos(500_000) {
            Pairs::PAIR
        } else {
            Pairs::ALONE
        };
        assert_eq!(waited, expected, "{q:?}");
    }
    assert_eq!(
        r.requests
            .iter()
            .filter(|q| q.completed <= Nanos(500_000))
            .count(),
        10
    );
}
