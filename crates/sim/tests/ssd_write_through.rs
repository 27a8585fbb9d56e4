//! Writes acknowledged when their data is programmed (`write_buffer.acknowledge =
//! "programmed"`, MQSim's `Caching_Mode::TURNED_OFF` path): a write completes with the program
//! of its program unit, which later writes fill, so the engine learns its completion after its
//! dispatch ([`elevator_sim::Service::deferred`]); a unit left partial is closed padded after
//! `write_buffer.gather_us`; and the drive's write rate then grows with the writes
//! outstanding, where with writes acknowledged in the buffer it does not.

use elevator_core::harness::rq;
use elevator_core::{registry, GroupTree, Nanos, RequestId, Settings};
use elevator_sim::ssd::{GcUrgency, Precondition, Ssd, SsdSpec, Suspend, WriteAck};
use elevator_sim::{Device, DriveModel, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::BuildEnv;
use std::path::Path;

/// The fig-11c 980 PRO (one-shot programs of 3 pages: 12 units a program) acknowledging
/// writes as `ack` says.
fn spec(ack: WriteAck) -> SsdSpec {
    let mut s = SsdSpec::builtin("samsung-980pro-1tb-fig11c").expect("built in");
    s.write_buffer.acknowledge = ack;
    s
}

/// A 4 KiB write of unit `lpn` at `t`.
fn write(ssd: &mut Ssd, id: u64, lpn: u64, t: Nanos) -> elevator_sim::Service {
    ssd.submit(&rq(id, 1).sync_write().sector(8 * lpn).at(t).build(), t)
}

fn settled(ssd: &mut Ssd) -> Vec<(RequestId, Nanos)> {
    std::iter::from_fn(|| ssd.poll_completion()).collect()
}

#[test]
fn a_write_acknowledged_when_programmed_completes_with_its_program_unit() {
    let t = Nanos::from_us(5);
    let program = Nanos::from_us(600);
    // Write-back (MQSim's write cache): every write completes once in the buffer.
    let mut back = Ssd::with_precondition(spec(WriteAck::Admitted), Precondition::None).unwrap();
    for i in 0..12 {
        let s = write(&mut back, i, 1000 + 97 * i, t);
        assert!(!s.deferred && s.done < t + Nanos::from_us(100), "{s:?}");
    }
    // Write-through: the first eleven wait for the twelfth, which fills the program unit
    // (Ftl::write_host) and completes with its program; the eleven are reported then.
    let mut through =
        Ssd::with_precondition(spec(WriteAck::Programmed), Precondition::None).unwrap();
    for i in 0..11 {
        assert!(
            write(&mut through, i, 1000 + 97 * i, t).deferred,
            "write {i}"
        );
        assert_eq!(through.poll_completion(), None);
    }
    let last = write(&mut through, 11, 1000 + 97 * 11, t);
    assert!(!last.deferred);
    assert!(last.done >= t + program, "{last:?}");
    let first = settled(&mut through);
    assert_eq!(first.len(), 11);
    for (i, &(id, done)) in first.iter().enumerate() {
        assert_eq!((id, done), (RequestId(i as u64), last.done));
    }
    assert_eq!(through.poll_timeout(), None);
    assert_eq!(through.stats().host_programs, 1);
    assert_eq!(through.stats().padded_programs, 0);
}

#[test]
fn a_program_unit_left_partial_is_closed_padded_after_gather_us() {
    let t = Nanos::from_us(5);
    let mut ssd = Ssd::with_precondition(spec(WriteAck::Programmed), Precondition::None).unwrap();
    let s = write(&mut ssd, 1, 4242, t);
    assert!(s.deferred);
    // One unit of twelve: nothing fills it, so the drive's timer closes it gather_us after
    // the write was admitted (s.done, the admission, for a deferred write).
    let deadline = s.done + Nanos::from_us(1000);
    assert_eq!(ssd.poll_timeout(), Some(deadline));
    ssd.handle_timeout(deadline - Nanos(1));
    assert_eq!(ssd.poll_completion(), None);
    ssd.handle_timeout(deadline);
    let done = settled(&mut ssd);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, RequestId(1));
    assert!(done[0].1 >= deadline + Nanos::from_us(600), "{done:?}");
    assert_eq!(ssd.poll_timeout(), None);
    assert_eq!(ssd.stats().padded_programs, 1);
    // The padding is eleven empty slots, never valid; the mapping stays consistent.
    assert_eq!(ssd.ftl().stats().padded_units, 11);
    ssd.ftl().check().expect("consistent after padding");
    // The next write opens a program unit of its own (the next plane), not the closed one.
    let next = write(&mut ssd, 2, 777, deadline);
    assert!(next.deferred);
    assert_eq!(ssd.poll_timeout(), Some(next.done + Nanos::from_us(1000)));
}

#[test]
fn bad_acknowledge_or_gather_us_names_the_line_and_field() {
    let text = spec(WriteAck::Admitted).to_toml();
    let ack = text.replace("acknowledge = \"admitted\"", "acknowledge = \"later\"");
    assert_ne!(ack, text, "the spec serialises its acknowledge");
    let e = DriveModel::parse(&ack, Path::new("w.toml")).unwrap_err();
    let line = ack.lines().position(|l| l.contains("later")).unwrap() + 1;
    assert_eq!(e.line(), Some(line), "{e}");
    assert!(e.to_string().contains("programmed"), "{e}");
    let gather = text.replace("gather_us = 1000.0", "gather_us = -1.0");
    assert_ne!(gather, text, "the spec serialises its gather_us");
    let e = DriveModel::parse(&gather, Path::new("w.toml")).unwrap_err();
    assert_eq!(e.field, "write_buffer.gather_us", "{e}");
}

/// Writes a second of one 4 KiB random writer keeping `depth` writes outstanding (none, no
/// host model) completes on `spec`'s steady-state drive, after 200 ms of ramp.
fn writer_iops(spec: SsdSpec, depth: u32) -> f64 {
    let device = Ssd::new(spec).expect("valid spec");
    let capacity = device.capacity_sectors();
    let groups = GroupTree::new();
    let sched = registry::find("none")
        .expect("registered")
        .build(&Settings::new(), &groups)
        .expect("valid settings");
    let mut sim = Simulation::new(Box::new(device), sched, groups);
    let (ramp_ms, runtime_ms) = (200, 300);
    sim.set_ramp(Nanos::from_ms(ramp_ms));
    let cfg = FioJobConfig {
        rw: RwMode::RandWrite,
        bs: 4096,
        iodepth: depth,
        direct: true,
        norandommap: true,
        time_based: true,
        ramp_ms,
        runtime_ms: Some(runtime_ms),
        ..FioJobConfig::default()
    };
    let job = FioJob::new(cfg, &BuildEnv::new(capacity, 1, "writer")).expect("valid job");
    sim.add_job(JobSlot::new("writer", Box::new(job)));
    let r = sim.run(None);
    r.job_error().expect("a whole run");
    let s = &r.summaries()[0];
    s.write.iops
}

#[test]
fn written_through_the_drives_write_rate_grows_with_the_writes_outstanding() {
    // Little's law: with writes acknowledged when programmed the writes in flight are the
    // host's, so 16 outstanding give about 16 / (one 600 us program and its gather) and 128
    // give several times that, up to what the planes and GC allow; acknowledged in the
    // buffer, both depths run at the drive's GC-bound drain rate.
    let back = [16, 128].map(|d| writer_iops(spec(WriteAck::Admitted), d));
    let through = [16, 128].map(|d| writer_iops(spec(WriteAck::Programmed), d));
    eprintln!("write-back {back:?}, write-through {through:?} writes/s");
    assert!((back[1] / back[0] - 1.0).abs() < 0.05, "{back:?}");
    assert!(through[0] < 30_000.0, "{through:?}");
    assert!(through[1] > 4.0 * through[0], "{through:?}");
    assert!(through[1] <= 1.02 * back[1], "{through:?} {back:?}");
}

/// A one-plane drive of 64 blocks of two program units (24 units) each, written through, GC
/// not preemptible with urgency `urgent`, reads suspending programs and erases (not urgent
/// GC, which they wait for in full): steady-state preconditioning leaves
/// `gc.threshold` (4 blocks) free, the hard threshold is 2 erased free blocks.
fn one_plane(urgent: GcUrgency) -> SsdSpec {
    one_plane_hard(urgent, 1.0 / 32.0)
}

/// [`one_plane`] with GC urgent below `hard` of the plane's blocks erased and free.
fn one_plane_hard(urgent: GcUrgency, hard: f64) -> SsdSpec {
    let mut s = spec(WriteAck::Programmed);
    let f = &mut s.flash;
    (
        f.channels,
        f.chips_per_channel,
        f.dies_per_chip,
        f.planes_per_die,
    ) = (1, 1, 1, 1);
    (f.blocks_per_plane, f.pages_per_block) = (64, 6);
    f.suspend = Suspend::ProgramErase;
    s.ftl.over_provisioning = 0.25;
    s.gc.threshold = 1.0 / 16.0;
    s.gc.hard_threshold = hard;
    s.gc.preemptible = false;
    s.gc.urgent = urgent;
    s
}

/// MQSim's GC urgency from the free block pool (`GC_and_WL_Unit_Page_Level::
/// GC_is_in_urgent_mode`, `Stop_servicing_writes`) under write-through, where the write
/// buffer never fills: a burst of host writes keeps the plane busy, so GC's work (which yields
/// to queued host programs) waits and the erased free blocks run down; below the hard
/// threshold the plane's GC is placed as urgent work, no host program starts on a block before
/// that block's erase ends, and reads on the plane wait for the urgent GC in full. With
/// urgency from the buffer's fill (`behind`) the same burst never makes GC urgent, and the
/// read suspends what is under way.
#[test]
fn written_through_gc_is_urgent_when_the_planes_free_blocks_run_low_and_host_programs_wait_for_its_erases(
) {
    let burst = |urgent: GcUrgency| {
        let mut ssd = Ssd::with_precondition(one_plane(urgent), Precondition::Steady).unwrap();
        let units = ssd.ftl().logical_units();
        // 240 distinct units (10 blocks' worth of host programs), one a microsecond: far
        // faster than the plane programs them.
        let lpns: Vec<u64> = (0..240).map(|i| (i * 37) % units).collect();
        let mut done = std::collections::HashMap::new();
        for (i, &lpn) in lpns.iter().enumerate() {
            let t = Nanos::from_us(1 + i as u64);
            let s = write(&mut ssd, i as u64, lpn, t);
            if !s.deferred {
                done.insert(RequestId(i as u64), s.done);
            }
            done.extend(settled(&mut ssd));
        }
        assert_eq!(done.len(), lpns.len(), "every program unit filled");
        // Reads of a unit not written, one every 200 us from just after the burst to past
        // its programs: the longest wait.
        let mut longest = Nanos::ZERO;
        for k in 0..100 {
            let at = Nanos::from_us(250 + 200 * k);
            let read = ssd.submit(&rq(1000 + k, 2).read().sector(8 * 5).at(at).build(), at);
            longest = longest.max(read.done - at);
        }
        (ssd, lpns, done, longest)
    };
    let (ssd, lpns, done, read_wait) = burst(GcUrgency::FreeBlocks);
    let gc = ssd.stats().gc;
    eprintln!(
        "free-blocks: {:?}, block waits {}, read {read_wait:?}",
        gc,
        ssd.stats().block_waits
    );
    assert!(gc.victims > 0 && gc.urgent_ops > 0, "{gc:?}");
    assert!(ssd.stats().block_waits > 0, "{:?}", ssd.stats());
    // No unit's program ends before its block's erase plus a program.
    let program = Nanos::from_us(600);
    let mut reused = 0;
    for (i, &lpn) in lpns.iter().enumerate() {
        let ppa = ssd.ftl().lookup(lpn as u32).expect("written");
        let erased = ssd.ftl().erased_at(ppa);
        if erased > Nanos::ZERO {
            reused += 1;
            assert!(
                done[&RequestId(i as u64)] >= erased + program,
                "write {i} done {:?}, its block erased at {erased:?}",
                done[&RequestId(i as u64)]
            );
        }
    }
    assert!(
        reused > 0,
        "some writes went to blocks GC erased in the run"
    );
    ssd.ftl().check().expect("consistent");
    // Some read waits for urgent GC in full: more than two erases (3.5 ms each).
    assert!(read_wait > Nanos::from_ms(10), "{read_wait:?}");
    let (behind, _, _, behind_wait) = burst(GcUrgency::Behind);
    eprintln!("behind: {:?}, read {behind_wait:?}", behind.stats().gc);
    assert_eq!(behind.stats().gc.urgent_ops, 0);
    // There reads suspend what is under way (their suspensions queue, up to 2.8 ms), and
    // never wait out an erase.
    assert!(behind_wait < Nanos::from_us(3500), "{behind_wait:?}");
}

/// `GC_is_in_urgent_mode`'s rule alone: one block's worth of host writes, fewer than the four
/// erased free blocks, so no host program needs a block GC has not erased yet. With the hard
/// threshold at the GC threshold (4 blocks) the erased free blocks fall below it as soon as the
/// host and GC frontiers take blocks and GC's erases wait behind the host's programs: GC turns
/// urgent, and a read and the host's next program on the plane wait for it in full (its reads,
/// programs and a 3.5 ms erase). With the hard threshold at one block the same burst leaves GC
/// to the plane's idle time: nothing urgent, the read suspends what is under way and the host's
/// programs go first.
#[test]
fn written_through_gc_turns_urgent_when_the_erased_free_blocks_fall_below_the_hard_threshold() {
    let run = |hard: f64| {
        let spec = one_plane_hard(GcUrgency::FreeBlocks, hard);
        let mut ssd = Ssd::with_precondition(spec, Precondition::Steady).unwrap();
        let units = ssd.ftl().logical_units();
        let mut last = Nanos::ZERO;
        for i in 0..24u64 {
            let s = write(&mut ssd, i, (i * 37) % units, Nanos::from_us(1 + i));
            if !s.deferred {
                last = last.max(s.done);
            }
        }
        last = settled(&mut ssd).iter().fold(last, |l, &(_, t)| l.max(t));
        let at = Nanos::from_us(100);
        let read = ssd.submit(&rq(999, 2).read().sector(8 * 5).at(at).build(), at);
        (ssd.stats(), read.done - at, last)
    };
    let (urgent, urgent_wait, urgent_last) = run(1.0 / 16.0);
    let (idle, idle_wait, idle_last) = run(1.0 / 64.0);
    eprintln!(
        "hard 4: {urgent:?} read {urgent_wait:?} writes done {urgent_last:?}; \
         hard 1: {idle:?} read {idle_wait:?} writes done {idle_last:?}"
    );
    // The host's second program waits for the urgent GC on its plane (at least its erase).
    assert!(
        urgent_last > idle_last + Nanos::from_us(3500),
        "{urgent_last:?} {idle_last:?}"
    );
    assert!(urgent.gc.urgent_ops > 0, "{urgent:?}");
    assert_eq!(urgent.block_waits, 0, "{urgent:?}");
    assert!(urgent_wait > Nanos::from_us(3500), "{urgent_wait:?}");
    assert_eq!(idle.gc.urgent_ops, 0, "{idle:?}");
    assert!(idle_wait < Nanos::from_us(1000), "{idle_wait:?}");
}

/// Urgent lazy GC serves one victim of a plane at a time (MQSim: a plane has one victim under
/// way, and `GC_is_in_urgent_mode` puts that victim's transactions first until the erase that
/// returns its block to the pool), not every victim the FTL has decided: with the hard
/// threshold at two blocks, the burst of 240 writes lets the plane's backlog grow to several
/// victims while host programs keep it busy, then turns urgent. A read then waits for the
/// victim under way (and a host program for the erase it needs), not for the whole backlog:
/// the longest wait of the reads through the burst is 19.0 ms here, where placing the whole
/// backlog at once held one for 36.7 ms.
#[test]
fn urgent_lazy_gc_places_one_victim_of_a_plane_at_a_time_not_its_whole_backlog() {
    let mut ssd = Ssd::with_precondition(
        one_plane_hard(GcUrgency::FreeBlocks, 1.0 / 32.0),
        Precondition::Steady,
    )
    .unwrap();
    let units = ssd.ftl().logical_units();
    for i in 0..240u64 {
        write(&mut ssd, i, (i * 37) % units, Nanos::from_us(1 + i));
        settled(&mut ssd);
    }
    let mut longest = Nanos::ZERO;
    for k in 0..100 {
        let at = Nanos::from_us(250 + 200 * k);
        let read = ssd.submit(&rq(1000 + k, 2).read().sector(8 * 5).at(at).build(), at);
        longest = longest.max(read.done - at);
    }
    let gc = ssd.stats().gc;
    eprintln!("{gc:?}, longest read {longest:?}");
    assert!(gc.urgent_ops > 0, "{gc:?}");
    // It waits for urgent GC (more than an erase) ...
    assert!(longest > Nanos::from_us(3500), "{longest:?}");
    // ... but not for every victim decided.
    assert!(longest < Nanos::from_ms(25), "{longest:?}");
    ssd.ftl().check().expect("consistent");
}
