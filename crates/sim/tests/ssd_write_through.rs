//! Writes acknowledged when their data is programmed (`write_buffer.acknowledge =
//! "programmed"`, MQSim's `Caching_Mode::TURNED_OFF` path): a write completes with the program
//! of its program unit, which later writes fill, so the engine learns its completion after its
//! dispatch ([`elevator_sim::Service::deferred`]); a unit left partial is closed padded after
//! `write_buffer.gather_us`; and the drive's write rate then grows with the writes
//! outstanding, where with writes acknowledged in the buffer it does not.

use elevator_core::harness::rq;
use elevator_core::{registry, GroupTree, Nanos, RequestId, Settings};
use elevator_sim::ssd::{Precondition, Ssd, SsdSpec, WriteAck};
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
