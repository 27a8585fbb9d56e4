//! The submission API against real (buffered, temporary) files: what the scheduler is told,
//! what the caller gets back, and that shutdown and scheduler switches lose nothing.

use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

use elevator_core::{
    registry, CtxId, Dispatch, GroupId, GroupTree, IoClass, IoPrio, Nanos, Op, Request, Scheduler,
    Settings, TunableError,
};

use super::*;

/// Noop that records every request it is given and declares a largest request size.
struct Recorder {
    inner: Box<dyn Scheduler>,
    seen: Arc<Mutex<Vec<Request>>>,
    max: Option<u32>,
}

impl Scheduler for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.seen.lock().unwrap().push(rq.clone());
        self.inner.insert(rq, now)
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.inner.dispatch(now)
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.inner.complete(rq, now)
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn max_request_sectors(&self) -> Option<u32> {
        self.max
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.inner.set_tunable(name, value)
    }
}

fn build(name: &'static str) -> SchedFactory {
    Box::new(move || {
        registry::find(name)
            .unwrap()
            .build(&Settings::new(), &GroupTree::new())
    })
}

fn recorder(max: Option<u32>) -> (SchedFactory, Arc<Mutex<Vec<Request>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let theirs = Arc::clone(&seen);
    let f: SchedFactory = Box::new(move || {
        let inner = registry::find("noop")
            .unwrap()
            .build(&Settings::new(), &GroupTree::new())?;
        Ok(Box::new(Recorder {
            inner,
            seen: theirs,
            max,
        }) as Box<dyn Scheduler>)
    });
    (f, seen)
}

fn file_of(len: usize) -> File {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(&vec![0u8; len]).unwrap();
    f
}

fn filled(len: usize, byte: u8) -> AlignedBuf {
    let mut b = AlignedBuf::new(len);
    b.fill(byte);
    b
}

fn requests_carry_the_submitters_context_group_priority_and_sync_flag_with(path: Path) {
    let (f, seen) = recorder(None);
    let engine = Engine::start(f, opts(path)).unwrap();
    let h = engine.handle();
    let a = h.register(file_of(1 << 16));
    let b = h.register(file_of(1 << 16));
    let rt = IoPrio {
        class: IoClass::RealTime,
        level: 1,
    };
    let w = Io::write(b, 4096, filled(8192, 1))
        .ctx(CtxId(7))
        .group(GroupId(3));
    h.submit(w).wait().result.unwrap();
    let sw = Io::write(b, 0, filled(512, 2))
        .ctx(CtxId(7))
        .sync(true)
        .idle_hint(true);
    h.submit(sw).wait().result.unwrap();
    let r = Io::read(a, 1024, 2048).ctx(CtxId(9)).prio(rt).meta(true);
    h.submit(r).wait().result.unwrap();
    h.submit(Io::fsync(b, true).ctx(CtxId(7)))
        .wait()
        .result
        .unwrap();
    engine.shutdown().unwrap();
    let seen = seen.lock().unwrap();
    let brief: Vec<_> = seen
        .iter()
        .map(|r| {
            (
                r.op, r.ctx.0, r.group.0, r.sync, r.meta, r.sector, r.sectors,
            )
        })
        .collect();
    let b0 = 1u64 << 32; // the second file's first sector
    assert_eq!(
        brief,
        vec![
            (Op::Write, 7, 3, false, false, b0 + 8, 16),
            (Op::Write, 7, 0, true, false, b0, 1),
            (Op::Read, 9, 0, true, true, 2, 4),
            (Op::Flush, 7, 0, true, false, b0, 0),
        ]
    );
    assert_eq!(seen[2].prio, rt);
    assert_eq!(seen[0].prio, IoPrio::default());
}

#[test]
fn the_request_log_records_every_piece_with_its_issuer_in_q_i_d_c_order() {
    let (f, _) = recorder(Some(16));
    let opts = EngineOptions {
        request_log: 100,
        ..EngineOptions::default()
    };
    let engine = Engine::start(f, opts).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(1 << 16));
    // 40 sectors cut into pieces of at most 16: three records for one write.
    let w = Io::write(file, 0, filled(40 * 512, 3)).ctx(CtxId(7));
    h.submit(w).wait().result.unwrap();
    h.submit(Io::read(file, 4096, 4096).ctx(CtxId(9)))
        .wait()
        .result
        .unwrap();
    h.submit(Io::fsync(file, false).ctx(CtxId(7)))
        .wait()
        .result
        .unwrap();
    engine.shutdown().unwrap();
    let log = h.take_request_log();
    assert_eq!(log.contexts, vec![CtxId(7), CtxId(9)]);
    assert_eq!(log.dropped, 0);
    let brief: Vec<_> = log
        .requests
        .iter()
        .map(|r| (r.job, r.op, r.sectors))
        .collect();
    let mut writes: Vec<_> = brief[..3].to_vec();
    writes.sort_by_key(|w| w.2);
    assert_eq!(
        writes,
        vec![(0, Op::Write, 8), (0, Op::Write, 16), (0, Op::Write, 16)]
    );
    assert_eq!(brief[3..], [(1, Op::Read, 8), (0, Op::Flush, 0)]);
    for r in &log.requests {
        assert!(r.queued <= r.inserted && r.inserted <= r.dispatched);
        assert!(r.dispatched <= r.completed, "{r:?}");
    }
    // The log was taken: nothing is left for a second look.
    assert!(h.take_request_log().requests.is_empty());
}

#[test]
fn without_request_log_the_engine_keeps_no_records() {
    let engine = Engine::start(build("noop"), EngineOptions::default()).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(8192));
    h.submit(Io::read(file, 0, 4096)).wait().result.unwrap();
    engine.shutdown().unwrap();
    assert_eq!(h.take_request_log(), RequestLog::default());
}

fn io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length_with(
    path: Path,
) {
    let (f, seen) = recorder(Some(16));
    let engine = Engine::start(f, opts(path)).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(1 << 16));
    let mut data = AlignedBuf::new(40 * 512);
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i / 512) as u8;
    }
    let c = h.submit(Io::write(file, 512, data)).wait();
    assert_eq!(c.result.unwrap(), 40 * 512);
    let c = h.submit(Io::read(file, 512, 40 * 512)).wait();
    assert_eq!(c.result.unwrap(), 40 * 512);
    assert!(c
        .buf
        .chunks(512)
        .enumerate()
        .all(|(i, s)| s.iter().all(|&b| b == i as u8)));
    let pieces: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.sector, r.sectors))
        .collect();
    assert_eq!(
        pieces,
        vec![(1, 16), (17, 16), (33, 8), (1, 16), (17, 16), (33, 8)]
    );
    let s = h.stats();
    assert_eq!(
        (s.write_ios, s.write_sectors, s.read_ios, s.read_sectors),
        (3, 40, 3, 40)
    );
    engine.shutdown().unwrap();
}

fn many_threads_write_and_read_back_their_own_blocks_with(path: Path) {
    let engine = Engine::start(build("cfq"), opts(path)).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(8 * 64 * 4096));
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let h = h.clone();
            std::thread::spawn(move || {
                for i in 0..64u64 {
                    let off = (u64::from(t) * 64 + i) * 4096;
                    let io = Io::write(file, off, filled(4096, t as u8 + 1)).ctx(CtxId(t));
                    assert_eq!(h.submit(io).wait().result.unwrap(), 4096);
                }
                for i in 0..64u64 {
                    let off = (u64::from(t) * 64 + i) * 4096;
                    let c = h.submit(Io::read(file, off, 4096).ctx(CtxId(t))).wait();
                    assert_eq!(c.result.unwrap(), 4096);
                    assert!(
                        c.buf.iter().all(|&b| b == t as u8 + 1),
                        "thread {t} block {i}"
                    );
                }
                h.exit_context(CtxId(t));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = h.stats();
    assert_eq!((s.write_ios, s.read_ios, s.in_flight), (512, 512, 0));
    assert_eq!(s.write_sectors, 512 * 8);
    engine.shutdown().unwrap();
}

fn bad_submissions_fail_with_errno_and_touch_nothing_with(path: Path) {
    let engine = Engine::start(build("noop"), opts(path)).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(8192));
    let errno = |io| h.submit(io).wait().result.unwrap_err().raw_os_error();
    assert_eq!(errno(Io::read(file, 100, 512)), Some(libc::EINVAL));
    assert_eq!(errno(Io::read(file, 0, 100)), Some(libc::EINVAL));
    assert_eq!(errno(Io::read(FileId(99), 0, 512)), Some(libc::EBADF));
    h.unregister(file);
    assert_eq!(errno(Io::write(file, 0, filled(512, 1))), Some(libc::EBADF));
    assert_eq!(h.stats(), DiskStats::default());
    engine.shutdown().unwrap();
}

fn a_read_across_end_of_file_returns_the_bytes_that_exist_with(path: Path) {
    let engine = Engine::start(build("deadline"), opts(path)).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(4096 + 512));
    let c = h.submit(Io::read(file, 4096, 4096)).wait();
    assert_eq!(c.result.unwrap(), 512);
    engine.shutdown().unwrap();
}

fn shutdown_completes_everything_submitted_before_it_with(path: Path) {
    let engine = Engine::start(build("anticipatory"), opts(path)).unwrap();
    let h = engine.handle();
    let mut f = file_of(256 * 4096);
    let file = h.register(f.try_clone().unwrap());
    let done = Arc::new(Mutex::new(0usize));
    for i in 0..256u64 {
        let d = Arc::clone(&done);
        let io = Io::write(file, i * 4096, filled(4096, (i % 251) as u8 + 1)).ctx(CtxId(1));
        h.submit_with(io, move |c| {
            assert_eq!(c.result.unwrap(), 4096);
            *d.lock().unwrap() += 1;
        });
    }
    engine.shutdown().unwrap();
    assert_eq!(*done.lock().unwrap(), 256);
    let after = h.submit(Io::read(file, 0, 512)).wait();
    assert_eq!(after.result.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    let mut all = Vec::new();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.read_to_end(&mut all).unwrap();
    for (i, block) in all.chunks(4096).enumerate() {
        assert!(block.iter().all(|&b| b == (i % 251) as u8 + 1), "block {i}");
    }
}

fn switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one_with(
    path: Path,
) {
    let engine = Engine::start(build("noop"), opts(path)).unwrap();
    let h = engine.handle();
    assert_eq!(h.scheduler(), "noop");
    let file = h.register(file_of(64 * 4096));
    let tickets: Vec<_> = (0..64u64)
        .map(|i| h.submit(Io::write(file, i * 4096, filled(4096, 3)).ctx(CtxId(2))))
        .collect();
    h.set_scheduler(build("deadline")).unwrap();
    assert_eq!(h.scheduler(), "deadline");
    let more: Vec<_> = (0..64u64)
        .map(|i| h.submit(Io::read(file, i * 4096, 4096).ctx(CtxId(3))))
        .collect();
    for t in tickets {
        assert_eq!(t.wait().result.unwrap(), 4096);
    }
    for t in more {
        let c = t.wait();
        assert_eq!(c.result.unwrap(), 4096);
        assert!(c.buf.iter().all(|&b| b == 3));
    }
    h.set_tunable("fifo_batch", 4).unwrap();
    assert!(matches!(
        h.set_tunable("no_such_knob", 1),
        Err(TunableError::Unknown { .. })
    ));
    assert!(matches!(
        h.set_tunable("fifo_batch", -5),
        Err(TunableError::OutOfRange { .. })
    ));
    let bad: SchedFactory = Box::new(|| {
        Err(TunableError::Invalid {
            reason: "no".into(),
        })
    });
    assert!(h.set_scheduler(bad).is_err());
    assert_eq!(h.scheduler(), "deadline");
    engine.shutdown().unwrap();
}

fn a_ticket_can_be_polled_until_its_io_completes_with(path: Path) {
    let engine = Engine::start(build("bfq"), opts(path)).unwrap();
    let h = engine.handle();
    let file = h.register(file_of(4096));
    let t = h.submit(Io::read(file, 0, 4096));
    let c = loop {
        if let Some(c) = t.poll() {
            break c;
        }
        std::thread::yield_now();
    };
    assert_eq!(c.result.unwrap(), 4096);
    assert!(t.poll().is_none(), "a completion is delivered once");
    engine.shutdown().unwrap();
}

/// How a submission reaches the engine (each test runs every way).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    /// Handed to the engine thread.
    Thread,
    /// Inline submission: the submitter drives the engine.
    Inline,
    /// Inline, and a request dispatched while nothing is in flight done by the submitter
    /// with pread (`sync_when_idle`).
    Sync,
}

/// The engine's options for a path.
fn opts(path: Path) -> EngineOptions {
    EngineOptions {
        inline_submit: path != Path::Thread,
        sync_when_idle: path == Path::Sync,
        ..EngineOptions::default()
    }
}

#[test]
fn requests_carry_the_submitters_context_group_priority_and_sync_flag() {
    requests_carry_the_submitters_context_group_priority_and_sync_flag_with(Path::Thread);
}

#[test]
fn requests_carry_the_submitters_context_group_priority_and_sync_flag_inline() {
    requests_carry_the_submitters_context_group_priority_and_sync_flag_with(Path::Inline);
}

#[test]
fn requests_carry_the_submitters_context_group_priority_and_sync_flag_sync() {
    requests_carry_the_submitters_context_group_priority_and_sync_flag_with(Path::Sync);
}

#[test]
fn io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length() {
    io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length_with(
        Path::Thread,
    );
}

#[test]
fn io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length_inline() {
    io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length_with(
        Path::Inline,
    );
}

#[test]
fn io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length_sync() {
    io_larger_than_the_policys_limit_is_split_and_completes_once_with_its_whole_length_with(
        Path::Sync,
    );
}

#[test]
fn many_threads_write_and_read_back_their_own_blocks() {
    many_threads_write_and_read_back_their_own_blocks_with(Path::Thread);
}

#[test]
fn many_threads_write_and_read_back_their_own_blocks_inline() {
    many_threads_write_and_read_back_their_own_blocks_with(Path::Inline);
}

#[test]
fn many_threads_write_and_read_back_their_own_blocks_sync() {
    many_threads_write_and_read_back_their_own_blocks_with(Path::Sync);
}

#[test]
fn bad_submissions_fail_with_errno_and_touch_nothing() {
    bad_submissions_fail_with_errno_and_touch_nothing_with(Path::Thread);
}

#[test]
fn bad_submissions_fail_with_errno_and_touch_nothing_inline() {
    bad_submissions_fail_with_errno_and_touch_nothing_with(Path::Inline);
}

#[test]
fn bad_submissions_fail_with_errno_and_touch_nothing_sync() {
    bad_submissions_fail_with_errno_and_touch_nothing_with(Path::Sync);
}

#[test]
fn a_read_across_end_of_file_returns_the_bytes_that_exist() {
    a_read_across_end_of_file_returns_the_bytes_that_exist_with(Path::Thread);
}

#[test]
fn a_read_across_end_of_file_returns_the_bytes_that_exist_inline() {
    a_read_across_end_of_file_returns_the_bytes_that_exist_with(Path::Inline);
}

#[test]
fn a_read_across_end_of_file_returns_the_bytes_that_exist_sync() {
    a_read_across_end_of_file_returns_the_bytes_that_exist_with(Path::Sync);
}

#[test]
fn shutdown_completes_everything_submitted_before_it() {
    shutdown_completes_everything_submitted_before_it_with(Path::Thread);
}

#[test]
fn shutdown_completes_everything_submitted_before_it_inline() {
    shutdown_completes_everything_submitted_before_it_with(Path::Inline);
}

#[test]
fn shutdown_completes_everything_submitted_before_it_sync() {
    shutdown_completes_everything_submitted_before_it_with(Path::Sync);
}

#[test]
fn switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one() {
    switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one_with(
        Path::Thread,
    );
}

#[test]
fn switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one_inline() {
    switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one_with(
        Path::Inline,
    );
}

#[test]
fn switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one_sync() {
    switching_the_scheduler_under_load_loses_nothing_and_tunables_reach_the_new_one_with(
        Path::Sync,
    );
}

#[test]
fn a_ticket_can_be_polled_until_its_io_completes() {
    a_ticket_can_be_polled_until_its_io_completes_with(Path::Thread);
}

#[test]
fn a_ticket_can_be_polled_until_its_io_completes_inline() {
    a_ticket_can_be_polled_until_its_io_completes_with(Path::Inline);
}

#[test]
fn a_ticket_can_be_polled_until_its_io_completes_sync() {
    a_ticket_can_be_polled_until_its_io_completes_with(Path::Sync);
}

#[test]
fn with_inline_submission_the_submitter_drives_the_engine_without_a_hand_off() {
    // A submission the engine refuses (an unknown file) is answered by whichever thread ran
    // the engine's step for it: with inline submission the caller's, before submit_with
    // returns; without, the engine thread's.
    for (inline, path) in [(false, Path::Thread), (true, Path::Inline)] {
        let engine = Engine::start(build("noop"), opts(path)).unwrap();
        let h = engine.handle();
        let (tx, rx) = std::sync::mpsc::channel();
        h.submit_with(Io::read(FileId(9_999), 0, 4096), move |c| {
            let _ = tx.send((std::thread::current().id(), c.result.is_err()));
        });
        let (answered_on, refused) = rx.recv().unwrap();
        assert!(refused);
        assert_eq!(answered_on == std::thread::current().id(), inline);
        engine.shutdown().unwrap();
    }
}

#[test]
fn with_sync_when_idle_a_request_dispatched_to_an_idle_device_is_done_by_its_submitter() {
    // Core::submit: the request noop's poll_dispatch gives while nothing is in flight is read
    // with pread on the submitter's thread and completed there, so its callback runs before
    // submit_with returns, on the caller's thread; the block layer still counts it. Without
    // sync_when_idle the completion is reaped by the engine thread.
    for (path, on_caller) in [(Path::Inline, false), (Path::Sync, true)] {
        let engine = Engine::start(build("noop"), opts(path)).unwrap();
        let h = engine.handle();
        let mut f = file_of(4 * 4096);
        f.seek(SeekFrom::Start(4096)).unwrap();
        f.write_all(&[7u8; 4096]).unwrap();
        let file = h.register(f);
        for _ in 0..3 {
            let (tx, rx) = std::sync::mpsc::channel();
            h.submit_with(Io::read(file, 4096, 4096), move |c| {
                let ok = c.result.as_ref().ok() == Some(&4096) && c.buf.iter().all(|&b| b == 7);
                let _ = tx.send((std::thread::current().id(), ok));
            });
            let (answered_on, ok) = rx.recv().unwrap();
            assert!(ok, "{path:?}: the read returns the file's bytes");
            assert_eq!(
                answered_on == std::thread::current().id(),
                on_caller,
                "{path:?}"
            );
        }
        let s = h.stats();
        assert_eq!(
            (s.read_ios, s.read_sectors, s.in_flight),
            (3, 24, 0),
            "{path:?}"
        );
        engine.shutdown().unwrap();
    }
}

#[test]
fn with_sync_when_idle_concurrent_readers_get_their_own_blocks_and_are_all_counted() {
    // Eight threads read at once: one finds the device idle and reads on its own thread, the
    // others find it busy (in_ring > 0) and go through the ring, or find it idle in turn;
    // whichever path each took, every read returns its block and the layer counts all 64.
    let engine = Engine::start(build("deadline"), opts(Path::Sync)).unwrap();
    let h = engine.handle();
    let mut f = file_of(64 * 4096);
    for i in 0..64u64 {
        f.seek(SeekFrom::Start(i * 4096)).unwrap();
        f.write_all(&[i as u8 + 1; 4096]).unwrap();
    }
    let file = h.register(f);
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let h = h.clone();
            std::thread::spawn(move || {
                for i in (t..64).step_by(8) {
                    let io = Io::read(file, i * 4096, 4096).ctx(CtxId(t as u32));
                    let c = h.submit(io).wait();
                    assert_eq!(c.result.unwrap(), 4096);
                    assert!(c.buf.iter().all(|&b| b == i as u8 + 1), "block {i}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = h.stats();
    assert_eq!((s.read_ios, s.in_flight), (64, 0));
    engine.shutdown().unwrap();
}
