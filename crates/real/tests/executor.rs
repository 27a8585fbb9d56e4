//! The executor against in-memory and real (temporary file) targets.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{fresh_target, noop, real, real_in, Walk, MIB};
use elevator_core::{Dispatch, Nanos, Op, Request, Scheduler, TunableError};
use elevator_real::{
    run, Backend, ByteRange, Fault, MemBackend, RunError, RunOptions, UringBackend,
    MAX_IN_FLIGHT_BYTES,
};

#[test]
fn executor_writes_then_reads_a_temporary_file_through_io_uring() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target");
    let Some(t) = fresh_target(&path) else {
        return;
    };
    assert!(t.laid_out);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), MIB);
    let mut backend = UringBackend::new(t.file, t.size, 64).unwrap();
    let mut sched = noop();
    // 128 writes of 4 KiB at depth 8 over the first half, then (next phase) a dependent
    // reader over the same half, with verification of everything it reads.
    let jobs = vec![
        real("writer", Walk::new(Op::Write, 0, 128, 8), 0),
        real("reader", Walk::new(Op::Read, 0, 128, 1), 1),
    ];
    let opts = RunOptions {
        verify: true,
        run_id: 42,
        ..Default::default()
    };
    let report = run(&mut backend, &mut sched, jobs, &opts).unwrap();
    let (w, r) = (&report.jobs[0].metrics, &report.jobs[1].metrics);
    assert_eq!((w.write.ios, w.write.bytes), (128, 128 * 4096));
    assert_eq!((r.read.ios, r.read.bytes), (128, 128 * 4096));
    assert!(
        r.started >= w.finished.unwrap(),
        "stonewall: the reader starts after the writer"
    );
    assert_eq!(report.verified_bytes, 128 * 4096);
    assert_eq!(backend.in_flight(), 0);
    assert!(!report.interrupted);
}

#[test]
fn verify_round_trip_reads_back_every_written_sector() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let jobs = vec![real("w", Walk::new(Op::Write, 64, 100, 4), 0)];
    let opts = RunOptions {
        verify: true,
        run_id: 7,
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), jobs, &opts).unwrap();
    assert_eq!(report.verified_bytes, 100 * 4096);
    // What is on the device is stamped with its own offset.
    let at = 64 * 512 + 4096;
    assert_eq!(&backend.data()[at + 8..at + 16], &(at as u64).to_le_bytes());
}

/// Sends every write one sector further than asked: the read-back must catch it.
struct Misdirecting(MemBackend);

impl Backend for Misdirecting {
    fn size_bytes(&self) -> u64 {
        self.0.size_bytes()
    }
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    fn in_flight(&self) -> usize {
        self.0.in_flight()
    }
    fn submit(&mut self, mut io: elevator_real::IoRequest) -> std::io::Result<()> {
        if io.kind == elevator_real::IoKind::Write {
            io.offset += 512;
        }
        self.0.submit(io)
    }
    fn wait(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<elevator_real::IoCompletion>,
    ) -> std::io::Result<()> {
        self.0.wait(timeout, out)
    }
}

#[test]
fn verify_catches_a_misdirected_write() {
    let mut backend = Misdirecting(MemBackend::new(MIB as usize, 32));
    let jobs = vec![real("w", Walk::new(Op::Write, 0, 4, 1), 0)];
    let opts = RunOptions {
        verify: true,
        ..Default::default()
    };
    let err = run(&mut backend, &mut noop(), jobs, &opts).unwrap_err();
    assert!(matches!(err.error, RunError::Verify(_)), "{err}");
    assert!(
        err.to_string().contains("verify failed at byte offset"),
        "{err}"
    );
}

#[test]
fn short_read_is_a_clear_error_and_leaves_nothing_in_flight() {
    let mut backend = MemBackend::new(MIB as usize, 32).inject(3, Fault::Short(512));
    let jobs = vec![real("reader", Walk::new(Op::Read, 0, 64, 8), 0)];
    let err = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("job reader: short read: 512 of 4096 bytes"),
        "{msg}"
    );
    assert_eq!(backend.in_flight(), 0);
    // The I/O completed before the fault is in the partial report.
    assert!(err.partial.jobs[0].metrics.read.ios >= 3);
}

#[test]
fn eio_is_a_clear_error_and_the_run_does_not_hang() {
    let mut backend = MemBackend::new(MIB as usize, 32).inject(0, Fault::Errno(libc::EIO));
    let jobs = vec![
        real("writer", Walk::new(Op::Write, 0, 32, 4), 0),
        real("other", Walk::new(Op::Read, 1024, 32, 1), 0),
    ];
    let err = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap_err();
    let msg = err.to_string();
    // The first I/O submitted fails: whichever job the seeded start order put first.
    assert!(
        msg.contains("job writer: write of 4096 bytes at offset 0 failed: Input/output error")
            || msg.contains(
                "job other: read of 4096 bytes at offset 524288 failed: Input/output error"
            ),
        "{msg}"
    );
    assert_eq!(backend.in_flight(), 0);
}

#[test]
fn an_io_outside_the_declared_region_is_refused_and_never_submitted() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let walk = Walk::new(Op::Write, 0, 16, 1);
    // Declared: only the first 8 blocks.
    let region = ByteRange {
        start: 0,
        end: 8 * 4096,
    };
    let jobs = vec![real_in("w", walk, 0, region)];
    let err = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap_err();
    assert!(
        matches!(err.error, RunError::OutOfRegion { offset, .. } if offset == 8 * 4096),
        "{err}"
    );
    assert!(backend.data()[8 * 4096..].iter().all(|&b| b == 0));
}

#[test]
fn an_io_past_the_end_of_the_target_is_refused() {
    let mut backend = MemBackend::new(64 * 1024, 32);
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 32, 1), 0)];
    let err = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap_err();
    assert!(matches!(err.error, RunError::OutOfRegion { .. }), "{err}");
}

#[test]
fn stop_request_ends_the_run_with_a_partial_report_and_nothing_in_flight() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let mut walk = Walk::new(Op::Read, 0, 64, 16);
    walk.forever = true;
    static STOP: AtomicBool = AtomicBool::new(false);
    let t = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        STOP.store(true, Ordering::SeqCst);
    });
    let opts = RunOptions {
        stop: Some(&STOP),
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), vec![real("r", walk, 0)], &opts).unwrap();
    t.join().unwrap();
    assert!(report.interrupted);
    assert!(report.jobs[0].metrics.read.ios > 0);
    assert_eq!(backend.in_flight(), 0);
}

/// Holds the first request back until 20 ms after it arrived, then is FIFO.
#[derive(Default)]
struct HoldFirst {
    q: std::collections::VecDeque<Request>,
    released: bool,
}

impl Scheduler for HoldFirst {
    fn name(&self) -> &'static str {
        "hold-first"
    }
    fn insert(&mut self, rq: Request, _now: Nanos) {
        self.q.push_back(rq);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        match self.q.front() {
            None => Dispatch::Empty,
            Some(rq) if !self.released && now < rq.submitted + Nanos::from_ms(20) => {
                Dispatch::Idle {
                    until: rq.submitted + Nanos::from_ms(20),
                }
            }
            Some(_) => {
                self.released = true;
                Dispatch::Request(self.q.pop_front().unwrap())
            }
        }
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {}
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
        Err(TunableError::Unknown {
            scheduler: "hold-first".into(),
            name: name.into(),
        })
    }
}

#[test]
fn idle_until_is_honoured_with_a_timer() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 4, 1), 0)];
    let report = run(
        &mut backend,
        &mut HoldFirst::default(),
        jobs,
        &RunOptions::default(),
    )
    .unwrap();
    let m = &report.jobs[0].metrics;
    assert_eq!(m.read.ios, 4);
    // The first read waited out the idle period: its latency is at least 20 ms.
    assert!(m.read.latency.max() >= Nanos::from_ms(20).as_ns());
}

/// Accepts requests and never dispatches them.
#[derive(Default)]
struct BlackHole(usize);

impl Scheduler for BlackHole {
    fn name(&self) -> &'static str {
        "black-hole"
    }
    fn insert(&mut self, _rq: Request, _now: Nanos) {
        self.0 += 1;
    }
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        Dispatch::Empty
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {}
    fn queued(&self) -> usize {
        self.0
    }
    fn set_tunable(&mut self, _name: &str, _value: i64) -> Result<(), TunableError> {
        Ok(())
    }
}

#[test]
fn a_scheduler_that_never_dispatches_is_reported_not_waited_for() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 4, 1), 0)];
    let err = run(
        &mut backend,
        &mut BlackHole::default(),
        jobs,
        &RunOptions::default(),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("black-hole holds 1 request(s) and dispatches none"),
        "{msg}"
    );
}

#[test]
fn each_job_gets_its_own_context() {
    /// Records the contexts it sees.
    #[derive(Default)]
    struct Spy(std::collections::BTreeSet<u32>, elevator_core::noop::Noop);
    impl Scheduler for Spy {
        fn name(&self) -> &'static str {
            "spy"
        }
        fn insert(&mut self, rq: Request, now: Nanos) {
            self.0.insert(rq.ctx.0);
            self.1.insert(rq, now);
        }
        fn dispatch(&mut self, now: Nanos) -> Dispatch {
            self.1.dispatch(now)
        }
        fn complete(&mut self, rq: &Request, now: Nanos) {
            self.1.complete(rq, now)
        }
        fn queued(&self) -> usize {
            self.1.queued()
        }
        fn set_tunable(&mut self, _name: &str, _value: i64) -> Result<(), TunableError> {
            Ok(())
        }
    }
    let mut backend = MemBackend::new(MIB as usize, 32);
    let jobs = vec![
        real("a", Walk::new(Op::Read, 0, 4, 1), 0),
        real("b", Walk::new(Op::Read, 0, 4, 1), 0),
        real("c", Walk::new(Op::Read, 0, 4, 1), 0),
    ];
    let mut spy = Spy::default();
    run(&mut backend, &mut spy, jobs, &RunOptions::default()).unwrap();
    assert_eq!(spy.0.len(), 3);
}

/// FIFO that takes requests of at most `max` sectors and remembers the sizes it was given;
/// after its first completion the limit becomes `then`, if set.
struct Splitting {
    max: u32,
    q: std::collections::VecDeque<Request>,
    sizes: Vec<u32>,
    then: Option<u32>,
}

impl Scheduler for Splitting {
    fn name(&self) -> &'static str {
        "splitting"
    }
    fn insert(&mut self, rq: Request, _now: Nanos) {
        self.sizes.push(rq.sectors);
        self.q.push_back(rq);
    }
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        self.q
            .pop_front()
            .map_or(Dispatch::Empty, Dispatch::Request)
    }
    fn complete(&mut self, _rq: &Request, _now: Nanos) {
        if let Some(m) = self.then.take() {
            self.max = m;
        }
    }
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn max_request_sectors(&self) -> Option<u32> {
        Some(self.max)
    }
    fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
        Err(TunableError::Unknown {
            scheduler: "splitting".into(),
            name: name.into(),
        })
    }
}

#[test]
fn io_larger_than_the_policy_takes_is_split_and_completes_once_as_a_whole() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let mut walk = Walk::new(Op::Write, 0, 10, 2);
    walk.block_sectors = 40; // 20 KiB: pieces of 8, 8 and 4 KiB
    let jobs = vec![real("w", walk, 0)];
    let mut sched = Splitting {
        max: 16,
        q: Default::default(),
        sizes: Vec::new(),
        then: None,
    };
    let opts = RunOptions {
        verify: true,
        ..Default::default()
    };
    let report = run(&mut backend, &mut sched, jobs, &opts).unwrap();
    let w = &report.jobs[0].metrics.write;
    assert_eq!((w.ios, w.bytes), (10, 10 * 40 * 512), "one I/O per job I/O");
    assert_eq!(sched.sizes.len(), 30);
    assert!(
        sched.sizes.chunks(3).all(|c| c == [16, 16, 8]),
        "{:?}",
        sched.sizes
    );
    // Every piece went to its own place: the read-back finds every sector stamped.
    assert_eq!(report.verified_bytes, 10 * 40 * 512);
    assert_eq!(backend.in_flight(), 0);
}

#[test]
fn each_io_is_split_by_the_limit_the_policy_declares_when_it_is_issued() {
    // latency-guard sizes its pieces from its budget: the limit may change during a run.
    let mut backend = MemBackend::new(MIB as usize, 32);
    let mut walk = Walk::new(Op::Write, 0, 4, 1);
    walk.block_sectors = 32;
    let jobs = vec![real("w", walk, 0)];
    let mut sched = Splitting {
        max: 8,
        q: Default::default(),
        sizes: Vec::new(),
        then: Some(32),
    };
    let report = run(&mut backend, &mut sched, jobs, &RunOptions::default()).unwrap();
    assert_eq!(report.jobs[0].metrics.write.ios, 4);
    assert_eq!(
        sched.sizes,
        [8, 8, 8, 8, 32, 32, 32],
        "the first I/O in four pieces, the rest whole after the limit grew"
    );
}

#[test]
fn a_failed_piece_fails_the_run_and_leaves_nothing_in_flight() {
    let mut backend = MemBackend::new(MIB as usize, 32).inject(4, Fault::Errno(libc::EIO));
    let mut walk = Walk::new(Op::Read, 0, 10, 2);
    walk.block_sectors = 32;
    let jobs = vec![real("r", walk, 0)];
    let mut sched = Splitting {
        max: 8,
        q: Default::default(),
        sizes: Vec::new(),
        then: None,
    };
    let err = run(&mut backend, &mut sched, jobs, &RunOptions::default()).unwrap_err();
    assert!(err.to_string().contains("job r: read"), "{err}");
    assert_eq!(backend.in_flight(), 0);
    // The I/O whose piece failed is not counted; the one before it is.
    assert_eq!(err.partial.jobs[0].metrics.read.ios, 1);
}

/// Records the order of `submit` and `wait` calls, and asks for bursts of one
/// (`Backend::submit_burst`), as the AIO backend does.
struct OneAtATime {
    inner: MemBackend,
    calls: Vec<(char, Option<Duration>)>,
}

impl Backend for OneAtATime {
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }
    fn capacity(&self) -> usize {
        self.inner.capacity()
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn submit_burst(&self) -> Option<usize> {
        Some(1)
    }
    fn submit(&mut self, io: elevator_real::IoRequest) -> std::io::Result<()> {
        self.calls.push(('s', None));
        self.inner.submit(io)
    }
    fn wait(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<elevator_real::IoCompletion>,
    ) -> std::io::Result<()> {
        self.calls.push(('w', timeout));
        self.inner.wait(timeout, out)
    }
}

/// A backend whose submission blocks is handed one request at a time, with completions
/// collected (without waiting) in between, as fio alternates `io_submit` and
/// `io_getevents`: every job's I/O still completes, no two submissions come without a
/// collection between them, and the collections made while more was ready to go did not wait.
#[test]
fn a_backend_that_asks_for_bursts_of_one_gets_a_collection_between_submissions() {
    let mut backend = OneAtATime {
        inner: MemBackend::new(MIB as usize, 32),
        calls: Vec::new(),
    };
    let jobs = vec![real("r", Walk::new(Op::Read, 0, 64, 16), 0)];
    let report = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap();
    assert_eq!(report.jobs[0].metrics.read.ios, 64);
    let c = &backend.calls;
    assert_eq!(c.iter().filter(|x| x.0 == 's').count(), 64);
    assert!(
        c.windows(2).all(|w| !(w[0].0 == 's' && w[1].0 == 's')),
        "two submissions in a row: {c:?}"
    );
    // The first 16 go out one by one, each followed by a collection that does not wait.
    for i in 0..15 {
        assert_eq!(c[2 * i], ('s', None), "{c:?}");
        assert_eq!(c[2 * i + 1], ('w', Some(Duration::ZERO)), "{c:?}");
    }
}

/// The same executor through Linux native AIO on a temporary file (what `calibrate --iocost`
/// measures with): writes, then a dependent reader that verifies them.
#[test]
fn executor_writes_then_reads_a_temporary_file_through_linux_aio() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target");
    let Some(t) = fresh_target(&path) else {
        return;
    };
    let mut backend = elevator_real::AioBackend::new(t.file, t.size, 64).unwrap();
    let jobs = vec![
        real("writer", Walk::new(Op::Write, 0, 128, 8), 0),
        real("reader", Walk::new(Op::Read, 0, 128, 4), 1),
    ];
    let opts = RunOptions {
        verify: true,
        run_id: 9,
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), jobs, &opts).unwrap();
    assert_eq!(report.jobs[0].metrics.write.ios, 128);
    assert_eq!(report.jobs[1].metrics.read.ios, 128);
    assert_eq!(report.verified_bytes, 128 * 4096);
    assert_eq!(backend.in_flight(), 0);
}

/// A device as large as asked that keeps nothing: each I/O completes whole at the next wait.
/// It records the most bytes of buffers it held at once.
struct Sink {
    size: u64,
    held: Vec<elevator_real::IoRequest>,
    peak_bytes: usize,
}

impl Backend for Sink {
    fn size_bytes(&self) -> u64 {
        self.size
    }
    fn capacity(&self) -> usize {
        64
    }
    fn in_flight(&self) -> usize {
        self.held.len()
    }
    fn submit(&mut self, io: elevator_real::IoRequest) -> std::io::Result<()> {
        self.held.push(io);
        let bytes = self.held.iter().map(|io| io.buf.len()).sum();
        self.peak_bytes = self.peak_bytes.max(bytes);
        Ok(())
    }
    fn wait(
        &mut self,
        _timeout: Option<Duration>,
        out: &mut Vec<elevator_real::IoCompletion>,
    ) -> std::io::Result<()> {
        out.extend(self.held.drain(..).map(|io| elevator_real::IoCompletion {
            token: io.token,
            result: Ok(io.buf.len()),
            buf: io.buf,
        }));
        Ok(())
    }
}

#[test]
fn the_executor_holds_at_most_its_byte_bound_of_buffers_in_flight_however_deep_the_device() {
    // 24 writes of 64 MiB all at once on a device 64 deep: 1.5 GiB if all went together
    // (round 21: a trace of such writes aborted when memory ran out).
    const BLOCK: u64 = 64 * MIB;
    let mut sink = Sink {
        size: 24 * BLOCK,
        held: Vec::new(),
        peak_bytes: 0,
    };
    let mut walk = Walk::new(Op::Write, 0, 24, 24);
    walk.block_sectors = (BLOCK / 512) as u32;
    let report = run(
        &mut sink,
        &mut noop(),
        vec![real("w", walk, 0)],
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(report.jobs[0].metrics.write.ios, 24, "every write done");
    let peak = sink.peak_bytes as u64;
    assert!(peak <= MAX_IN_FLIGHT_BYTES, "{peak} bytes held at once");
    assert!(
        peak >= MAX_IN_FLIGHT_BYTES - BLOCK,
        "the bound is reached: {peak}"
    );
}

/// A job's submission call of eight sequential 4 KiB writes (fio's `iodepth_batch_submit` 8)
/// is plugged in the executor's block layer as in the simulator's: the eight merge into one
/// request of 32 KiB, each write rides on it at its own place (verified by reading back),
/// and each is counted once at its own size.
#[test]
fn a_batch_of_sequential_writes_is_plugged_and_merged_on_real_io() {
    use elevator_workload::jobs::{FioJob, FioJobConfig, RwMode};
    use elevator_workload::BuildEnv;
    let mut backend = MemBackend::new(MIB as usize, 32);
    let cfg = FioJobConfig {
        rw: RwMode::Write,
        direct: true,
        size: Some(64 * 1024),
        iodepth: 8,
        iodepth_batch_submit: 8,
        iodepth_batch_complete_min: 8,
        ..FioJobConfig::default()
    };
    let fio = FioJob::new(cfg, &BuildEnv::new(MIB / 512, 1, "w")).unwrap();
    let mut job = real("w", Walk::new(Op::Write, 0, 16, 1), 0);
    job.job = Box::new(fio);
    job.region = ByteRange {
        start: 0,
        end: 64 * 1024,
    };
    let opts = RunOptions {
        verify: true,
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), vec![job], &opts).unwrap();
    assert_eq!((report.disk.write.ios, report.disk.write.merges), (2, 14));
    let w = &report.jobs[0].metrics.write;
    assert_eq!((w.ios, w.bytes), (16, 64 * 1024));
    assert_eq!(report.verified_bytes, 64 * 1024);
}

/// A job's `start_delay` (fio's `startdelay`) holds its first I/O that long after its phase
/// starts, on the real clock, and its figures count from then.
#[test]
fn a_delayed_job_starts_that_long_after_its_phase_on_the_real_clock() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let mut job = real("r", Walk::new(Op::Read, 0, 4, 1), 0);
    job.start_delay = Nanos::from_ms(30);
    let report = run(&mut backend, &mut noop(), vec![job], &RunOptions::default()).unwrap();
    assert!(report.elapsed >= Nanos::from_ms(30), "{:?}", report.elapsed);
    let started = report.jobs[0].metrics.started;
    assert!(started >= Nanos::from_ms(30), "{started:?}");
    assert_eq!(report.jobs[0].metrics.read.ios, 4);
}
