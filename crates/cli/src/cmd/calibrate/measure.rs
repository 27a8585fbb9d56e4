//! What `elevator calibrate` measures, and how: a fixed grid of fio-like points (random and
//! sequential reads and writes at queue depths 1 to 128 and block sizes 4 KiB to 1 MiB), each
//! run for a slice of the time budget by the io_uring executor under `none`, as Seastar's
//! iotune and the kernel's iocost coefficient tool (`tools/cgroup/iocost_coef_gen.py`) measure
//! a device: saturating IOPS and bandwidth per direction, plus queue-depth-1 latency.
//!
//! The same points run on the simulator ([`simulate`]) to score a candidate spec, so the fit
//! compares like with like: the same job, the same figures.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use elevator_core::{registry, GroupId, GroupTree, IoPrio, Nanos, SECTOR_BYTES};
use elevator_real::{AioBackend, ByteRange, RealJob, RunOptions, UringBackend};
use elevator_sim::{Device, JobSlot, Simulation};
use elevator_workload::jobs::fio::{FioJob, FioJobConfig, RwMode};
use elevator_workload::metrics::JobMetrics;
use elevator_workload::BuildEnv;
use serde::{Deserialize, Serialize};

/// One measured configuration: a single fio-like job.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    /// Direction and pattern.
    pub rw: RwMode,
    /// Bytes per I/O.
    pub bs: u64,
    /// I/Os outstanding.
    pub qd: u32,
    /// The depth of the 1 MiB sequential writer run beside it ([`Point::writer`]; 0: none):
    /// the job then covers the second half of the region, the writer the first.
    pub beside: u32,
}

impl Point {
    const fn new(rw: RwMode, bs: u64, qd: u32) -> Point {
        Point {
            rw,
            bs,
            qd,
            beside: 0,
        }
    }

    /// The same, with the 1 MiB sequential writer at depth `qd` beside it.
    const fn beside_writer(self, qd: u32) -> Point {
        Point { beside: qd, ..self }
    }

    /// The writer beside a mixed point: 1 MiB sequential writes at its depth.
    pub const fn writer(&self) -> Point {
        Point::new(RwMode::Write, M, self.beside)
    }

    /// `randread 4k qd32`.
    pub fn label(&self) -> String {
        let rw = self.rw.name();
        let bs = if self.bs >= 1 << 20 {
            format!("{}m", self.bs >> 20)
        } else {
            format!("{}k", self.bs >> 10)
        };
        let beside = match self.beside {
            0 => String::new(),
            qd => format!(" + write 1m qd{qd}"),
        };
        format!("{rw} {bs} qd{}{beside}", self.qd)
    }

    /// Whether it writes.
    pub fn writes(&self) -> bool {
        matches!(self.rw, RwMode::Write | RwMode::RandWrite)
    }

    /// The job over `[offset, offset + size)`, for `span`.
    fn config(&self, offset: u64, size: u64, span: Span) -> FioJobConfig {
        FioJobConfig {
            rw: self.rw,
            bs: self.bs,
            iodepth: self.qd,
            offset: Some(offset),
            size: Some(size),
            time_based: true,
            runtime_ms: Some(span.runtime.as_millis().max(1) as u64),
            ramp_ms: span.ramp.as_millis() as u64,
            direct: true,
            ..FioJobConfig::default()
        }
    }
}

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

/// The jobs of point `p` over `[0, region)`: (name, job, its byte range), the point's own
/// first.
fn jobs(
    p: &Point,
    region: u64,
    capacity: u64,
    span: Span,
    seed: u64,
) -> anyhow::Result<Vec<(String, FioJob, ByteRange)>> {
    let half = region / 2 / M * M;
    let mut parts = vec![(*p, 0, region)];
    if p.beside > 0 {
        parts = vec![(*p, half, region - half), (p.writer(), 0, half)];
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, (q, offset, size))| {
            let name = if i == 0 { p.label() } else { "beside".into() };
            let env = BuildEnv::new(capacity / SECTOR_BYTES, seed, name.clone());
            let job = FioJob::new(q.config(offset, size, span), &env)
                .map_err(|e| anyhow::anyhow!("{name}: {}: {}", e.field, e.reason))?;
            let range = ByteRange {
                start: offset,
                end: offset + size,
            };
            Ok((name, job, range))
        })
        .collect()
}

/// The grid, in the order it runs: reads first (they leave the device as they found it), then
/// writes, the sequential writer at depth 32 last of them (it fills the drive's write buffer),
/// then a 4 KiB random reader beside that writer (what the write backlog costs a read), and
/// beside the writer at depths 1 and 4 (how many writes a read is served beside at once).
pub const PLAN: [Point; 20] = [
    Point::new(RwMode::RandRead, 4 * K, 1),
    Point::new(RwMode::RandRead, 4 * K, 2),
    Point::new(RwMode::RandRead, 4 * K, 4),
    Point::new(RwMode::RandRead, 4 * K, 8),
    Point::new(RwMode::RandRead, 4 * K, 16),
    Point::new(RwMode::RandRead, 4 * K, 32),
    Point::new(RwMode::RandRead, 4 * K, 64),
    Point::new(RwMode::RandRead, 4 * K, 128),
    Point::new(RwMode::RandRead, 16 * K, 32),
    Point::new(RwMode::RandRead, 64 * K, 32),
    Point::new(RwMode::RandRead, 256 * K, 32),
    Point::new(RwMode::RandRead, M, 32),
    Point::new(RwMode::Read, M, 32),
    Point::new(RwMode::RandWrite, 4 * K, 1),
    Point::new(RwMode::RandWrite, 4 * K, 32),
    Point::new(RwMode::Write, M, 1),
    Point::new(RwMode::Write, M, 32),
    Point::new(RwMode::RandRead, 4 * K, 1).beside_writer(32),
    Point::new(RwMode::RandRead, 4 * K, 1).beside_writer(1),
    Point::new(RwMode::RandRead, 4 * K, 1).beside_writer(4),
];

/// What `calibrate --iocost` measures: the six figures of the kernel's `io.cost.model`
/// (tools/cgroup/iocost_coef_gen.py measures the same six): sequential bandwidth (1 MiB reads
/// and writes at depth 32, points of [`PLAN`]; the script: 128 MiB at depth 1, which needs
/// minutes a point on a slow device), sequential 4 KiB IOPS (depth 64) and random 4 KiB IOPS
/// (reads and writes at depth 64, the script's `--rand-depth`). `calibrate --iocost` measures
/// them through [`Engine::Aio`], as the script's fio does.
pub const IOCOST_PLAN: [Point; 6] = [
    Point::new(RwMode::Read, M, 32),
    Point::new(RwMode::Read, 4 * K, 64),
    Point::new(RwMode::RandRead, 4 * K, 64),
    Point::new(RwMode::Write, M, 32),
    Point::new(RwMode::Write, 4 * K, 64),
    Point::new(RwMode::RandWrite, 4 * K, 64),
];

/// How long one point runs: a ramp, then the time it is measured over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// Run before the figures start.
    pub ramp: Duration,
    /// Measured.
    pub runtime: Duration,
}

impl Span {
    /// A point's `slice` of `calibrate`'s budget: a tenth of it ramp, the rest measured.
    pub fn of_slice(slice: Duration) -> Span {
        let ramp = slice / 10;
        Span {
            ramp,
            runtime: slice - ramp,
        }
    }
}

/// What one point gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Completed I/Os.
    pub ios: u64,
    /// I/Os per second.
    pub iops: f64,
    /// Megabytes (10^6 bytes) per second.
    pub mb_s: f64,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
}

impl Figures {
    /// The figures of one job's metrics over its run.
    fn of(m: &JobMetrics, end: Nanos, writes: bool) -> Figures {
        let s = m.summary("", "", end);
        let d = if writes { &s.write } else { &s.read };
        Figures {
            ios: d.ios,
            iops: d.iops,
            mb_s: d.mb_s,
            mean_us: d.lat_mean_ms * 1e3,
            p50_us: d.lat_p50_ms * 1e3,
            p99_us: d.lat_p99_ms * 1e3,
        }
    }
}

fn noop() -> Box<dyn elevator_core::Scheduler> {
    let info = registry::find("none").expect("none is registered");
    info.build(&Default::default(), &GroupTree::new())
        .expect("none has no tunables")
}

/// How a point's I/O reaches the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// io_uring, what has queued up going to the kernel in one `io_uring_enter` (the
    /// executor's default elsewhere; [`UringBackend::set_submit_each`] off).
    Uring,
    /// Linux native AIO, each I/O in its own `io_submit` from the executor's thread
    /// ([`AioBackend`]): fio's `libaio` engine at its default `iodepth_batch` of 1, which is
    /// what the kernel tree's `tools/cgroup/iocost_coef_gen.py` runs (`run_fio`). On a device
    /// whose submission blocks (a loop device) io_uring hands the I/O to worker threads that
    /// submit several at once, and measures it faster than libaio does (docs/iocost.md).
    Aio,
}

/// Run point `p` on the open target `file` (`size` bytes) for `span`, over its first `region`
/// bytes, through `engine`; the figures are the point's own job's.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    p: &Point,
    file: &std::fs::File,
    size: u64,
    region: u64,
    span: Span,
    stop: &'static AtomicBool,
    seed: u64,
    engine: Engine,
) -> anyhow::Result<Figures> {
    let jobs = jobs(p, region, size, span, seed)?
        .into_iter()
        .map(|(name, job, region)| RealJob {
            name,
            job: Box::new(job),
            group: GroupId::ROOT,
            group_path: "/".into(),
            prio: IoPrio::default(),
            region,
            phase: 0,
            start_delay: Nanos::ZERO,
            rw_flags: 0,
        })
        .collect();
    let handle = file.try_clone().context("duplicate the target's handle")?;
    let opts = RunOptions {
        stop: Some(stop),
        ramp: span.ramp,
        seed,
        run_id: seed,
        ..RunOptions::default()
    };
    let mut sched = noop();
    let report = match engine {
        Engine::Uring => {
            let mut backend =
                UringBackend::new(handle, size, elevator_real::uring::DEFAULT_ENTRIES)
                    .context("set up io_uring (is it disabled by kernel.io_uring_disabled?)")?;
            backend.set_submit_each(false);
            elevator_real::run(&mut backend, sched.as_mut(), jobs, &opts)
        }
        Engine::Aio => {
            let mut backend = AioBackend::new(handle, size, elevator_real::uring::DEFAULT_ENTRIES)
                .context("set up a Linux AIO context (io_setup; see fs.aio-max-nr)")?;
            elevator_real::run(&mut backend, sched.as_mut(), jobs, &opts)
        }
    }
    .map_err(|f| anyhow::anyhow!("{}: {}", p.label(), f.error))?;
    anyhow::ensure!(!report.interrupted, "interrupted");
    Ok(Figures::of(
        &report.jobs[0].metrics,
        report.elapsed,
        p.writes(),
    ))
}

/// Run point `p` on `device` for `span` simulated, over its first `region` bytes.
pub fn simulate(
    p: &Point,
    device: Box<dyn Device>,
    region: u64,
    span: Span,
) -> anyhow::Result<Figures> {
    let capacity = device.capacity_sectors() * SECTOR_BYTES;
    let region = region.min(capacity);
    let mut sim = Simulation::new(device, noop(), GroupTree::new());
    sim.set_ramp(Nanos(span.ramp.as_nanos() as u64));
    for (name, job, _) in jobs(p, region, capacity, span, 1)? {
        sim.add_job(JobSlot::new(name, Box::new(job)));
    }
    let r = sim.run(None);
    Ok(Figures::of(&r.jobs[0].metrics, r.end, p.writes()))
}
