//! The discrete-event engine: jobs -> scheduler -> device, one clock.
//!
//! Events are kept in a binary heap ordered by (time, sequence number): two events at the same
//! nanosecond are handled in the order they were scheduled, so a run depends only on its
//! inputs and seeds. The engine is the only place in a simulation that knows what time it is;
//! it passes `now` to the jobs, the scheduler and the device.
//!
//! The driver contract of [`elevator_core::Scheduler`] is followed exactly:
//! `dispatch` is asked whenever the device has room after an insert, a completion or an idle
//! deadline, repeatedly until it answers `Idle` or `Empty`.
//!
//! A completion reaches its job after the wake-up latency
//! ([`Simulation::set_wakeup_latency`], 0 by default). With 0 the job sees the completion at
//! the same nanosecond and its next request is inserted before the scheduler is asked to
//! dispatch: a process without think time never leaves the scheduler empty. With a latency
//! the scheduler dispatches first, as the kernel does: it refills the device from the
//! completion path, and the woken process issues its next request later (the "deceptive
//! idleness" the anticipatory scheduler was written for).
//!
//! With a host CPU model ([`Simulation::set_host_cpu`], none by default) an issued I/O reaches
//! the scheduler once its core (and the scheduler's lock, if it has one) is done with it
//! ([`crate::cpu`]); its latency counts from when it was issued. On a host of several drives
//! ([`Simulation::set_host_drives`]) the simulated drive is one of them, the cores' time
//! shared with the others.
//!
//! A device reports a request's completion when it is dispatched, or later
//! ([`crate::device::Service::deferred`]: an SSD acknowledging a write once a program unit
//! that later writes fill is programmed); the engine takes such completions after each
//! instant's dispatches and keeps the device's own timer as an event
//! ([`Device::poll_timeout`]). A device without them schedules exactly the events it did
//! before they existed.
//!
//! On request ([`Simulation::record_requests`], off by default) the engine keeps a
//! [`RequestRecord`] of every request: who issued it, where, and when it was inserted,
//! dispatched and completed, for plots (seek maps, latency CDFs, queue depth over time).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU32;

use rustc_hash::FxHashMap;

use elevator_core::block::{Bio, BlockLayer, DiskStat, Done, Limits};
use elevator_core::qos::QosDevice;
use elevator_core::{CtxId, GroupId, GroupTree, IoPrio, Nanos, Op, RequestId, Scheduler};
use elevator_workload::metrics::{CompletionRecorder, JobMetrics, JobSummary};
use elevator_workload::traces::blktrace_out::IoObserver;
use elevator_workload::{Action, Job};
use serde::Serialize;

use crate::cpu::{CpuSpec, HostCpu};
use crate::device::Device;

/// A job placed in a simulation.
pub struct JobSlot {
    /// Name for reports.
    pub name: String,
    /// The process model.
    pub job: Box<dyn Job>,
    /// The group its I/O is charged to.
    pub group: GroupId,
    /// Default priority of its I/O.
    pub prio: IoPrio,
    /// When it starts.
    pub start: Nanos,
    /// fio's `startdelay`: it starts this long after its phase does (after `start` in the
    /// first phase); its figures count from then.
    pub delay: Nanos,
    /// Whether the run waits for it: a run ends when every foreground job is done (or at the
    /// time limit). Background jobs (a streaming writer) run until then.
    pub foreground: bool,
    /// The host cores it may run on (fio's `cpus_allowed`, after `cpus_allowed_policy`);
    /// `None`: the host CPU model's default placement. Used only with a host CPU model
    /// ([`Simulation::set_host_cpu`]).
    pub cpus: Option<Vec<u32>>,
}

impl JobSlot {
    /// The common case: a foreground job in the root group at the default priority, starting
    /// at time zero. The methods below change one of those; a slot whose every field is chosen
    /// (a scenario's job) is written out as a struct.
    pub fn new(name: impl Into<String>, job: Box<dyn Job>) -> JobSlot {
        JobSlot {
            name: name.into(),
            job,
            group: GroupId::ROOT,
            prio: IoPrio::default(),
            start: Nanos::ZERO,
            delay: Nanos::ZERO,
            foreground: true,
            cpus: None,
        }
    }

    /// Start it `delay` after its phase starts (fio's `startdelay`).
    pub fn delay(mut self, delay: Nanos) -> JobSlot {
        self.delay = delay;
        self
    }

    /// Run it on the host cores `cpus` (fio's `cpus_allowed`; `None`: anywhere): with a host
    /// CPU model its I/O is submitted, and its completions reaped, on whichever of them is
    /// free first; a job pinned to one core uses that core alone.
    pub fn cpus(mut self, cpus: Option<Vec<u32>>) -> JobSlot {
        self.cpus = cpus;
        self
    }

    /// Charge its I/O to `group`.
    pub fn group(mut self, group: GroupId) -> JobSlot {
        self.group = group;
        self
    }

    /// Give its I/O the priority `prio` by default.
    pub fn prio(mut self, prio: IoPrio) -> JobSlot {
        self.prio = prio;
        self
    }

    /// Start it at `start`.
    pub fn start(mut self, start: Nanos) -> JobSlot {
        self.start = start;
        self
    }

    /// Whether the run waits for it (the field of that name); `false` for a background job
    /// such as a streaming writer.
    pub fn foreground(mut self, foreground: bool) -> JobSlot {
        self.foreground = foreground;
        self
    }
}

/// What the device did over a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DeviceStats {
    /// Requests the device served.
    pub requests: u64,
    /// Of those, served from the on-board cache.
    pub cache_hits: u64,
    /// Time with at least one request outstanding, seconds.
    pub busy_s: f64,
}

pub use elevator_core::counted::Counters;

/// One request's life ([`Simulation::record_requests`]): one record per request the job
/// issued, including those merged into another (which share its dispatch and completion) and
/// each piece of a split I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// Index of the issuing job in the order jobs were added.
    pub job: u32,
    /// The context (process) that issued it.
    pub ctx: u32,
    /// What it did.
    pub op: Op,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Queued by its job and inserted into the scheduler (the engine does both at once).
    pub inserted: Nanos,
    /// Handed to the device (for a merged request: the request it was merged into).
    pub dispatched: Nanos,
    /// Got its tag (blk-mq's `start_time_ns`; [`elevator_core::block::Done::tagged`]): on a
    /// disk, its host tag ([`elevator_core::block::DISK_HOST_TAGS`] under `none`), at insertion
    /// while one is free, else when a holder completed; under mq-deadline and kyber, its
    /// scheduler tag, likewise; on an SSD under `none`, and under the other elevators, its
    /// dispatch. For a merged request, that of the request it was merged into.
    pub tagged: Nanos,
    /// Completed by the device.
    pub completed: Nanos,
    /// Requests in the scheduler (inserted, not yet dispatched) just after it was inserted,
    /// itself included; for a merged request, those when it was merged.
    pub queued: u32,
    /// Requests at the device just after it (or its host) was dispatched, itself included.
    pub in_flight: u32,
    /// Whether it was merged into a queued request instead of being inserted.
    pub merged: bool,
}

/// One job's result.
pub struct JobReport {
    /// Name.
    pub name: String,
    /// Group.
    pub group: GroupId,
    /// Group path.
    pub group_path: String,
    /// Whether it was a foreground job.
    pub foreground: bool,
    /// Its phase ([`Simulation::add_job_in_phase`]).
    pub phase: u32,
    /// Its figures.
    pub metrics: JobMetrics,
    /// Why it ended before its input did ([`Job::error`]): then its figures are not its
    /// input's, and [`RunReport::job_error`] refuses the run.
    pub error: Option<String>,
}

/// The latest simulated time a run reaches: 2^62 ns, about 146 years. An event later than
/// this ends the run with [`RunReport::clock_overflow`] set (then [`RunReport::job_error`]
/// refuses it): such a time was saturated or wrapped on its way to the clock.
pub const CLOCK_LIMIT: Nanos = Nanos(1 << 62);

/// The span of one I/O in the work a run counts ([`Simulation::work_done`]): 64 KiB, in
/// sectors. A larger I/O counts once per started span.
pub const WORK_UNIT_SECTORS: u64 = 128;

/// A job's own steps ([`elevator_workload::Job::model_steps`]) that count as one I/O in the
/// work of a run ([`Simulation::work_done`]).
pub const STEPS_PER_IO: u64 = 4;

/// Events between two sums of the jobs' own steps (each sum visits every job).
const STEPS_EVERY: u32 = 1024;

/// How far [`Simulation::probe`] got.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// I/Os completed.
    pub ios: u64,
    /// The simulated time it stopped at.
    pub end: Nanos,
    /// Whether the run ended by itself (its jobs done, its limit reached, nothing left to
    /// happen) before the probe's count of I/Os.
    pub ended: bool,
    /// The foreground job least far through the work it counts, and the fraction it did
    /// ([`Simulation::progress`]).
    pub progress: Option<(usize, f64)>,
}

/// The result of [`Simulation::run`].
pub struct RunReport {
    /// The scheduler's name.
    pub scheduler: String,
    /// The device's name.
    pub device: String,
    /// When the run ended.
    pub end: Nanos,
    /// Per job, in the order they were added.
    pub jobs: Vec<JobReport>,
    /// Device figures.
    pub device_stats: DeviceStats,
    /// Conservation counters (requests, as the scheduler saw them).
    pub counters: Counters,
    /// I/Os completed as the jobs saw them: each request, each bio merged into one, each
    /// piece of a split one.
    pub ios_completed: u64,
    /// The `/sys/block/<dev>/stat` counters of the run (merges included).
    pub disk: DiskStat,
    /// Every request, in completion order ([`Simulation::record_requests`] only; empty
    /// otherwise).
    pub requests: Vec<RequestRecord>,
    /// Whether the run stopped at an event past [`CLOCK_LIMIT`].
    pub clock_overflow: bool,
    /// The bound on its I/Os ([`Simulation::bound_ios`]) when the run passed it and was
    /// stopped there, its jobs not done.
    pub io_bound_passed: Option<u64>,
}

impl RunReport {
    /// Summaries of every job, for tables and JSON.
    pub fn summaries(&self) -> Vec<JobSummary> {
        self.jobs
            .iter()
            .map(|j| j.metrics.summary(&j.name, &j.group_path, self.end))
            .collect()
    }
    /// The first job that ended before its input did ([`JobReport::error`]), named, as an
    /// error: a run whose trace changed under it must fail, not print figures of part of it.
    pub fn job_error(&self) -> Result<(), String> {
        if self.clock_overflow {
            return Err(format!(
                "the simulated clock passed {:.0} years (a rate, think time or start that far \
                 off): times saturate at 584 years (2^64 ns), where the figures would be those \
                 of a stopped clock; bound the job (a higher rate, fewer I/Os)",
                CLOCK_LIMIT.as_secs_f64() / (365.25 * 86_400.0)
            ));
        }
        if let Some(max) = self.io_bound_passed {
            return Err(format!(
                "the run passed {max} I/Os, its bound, with its jobs not done, and was stopped \
                 there ({:.3} s simulated): the work told before it ran (the pace of its first \
                 I/Os) fell short of what it does, as a compile's later files miss a small page \
                 cache more than its first (an I/O counts once per started 64 KiB, a job's \
                 page-cache steps once per 4); bound the jobs, or run it whole with \
                 `elevator sim --max-ios N` (Python: `max_ios=N`)",
                self.end.as_secs_f64()
            ));
        }
        match self.jobs.iter().find_map(|j| Some((j, j.error.as_ref()?))) {
            Some((j, e)) => Err(format!("job {}: {e}", j.name)),
            None => Ok(()),
        }
    }
    /// The job named `name`.
    pub fn job(&self, name: &str) -> Option<&JobReport> {
        self.jobs.iter().find(|j| j.name == name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Complete {
        id: u64,
    },
    SchedTimer {
        gen: u64,
    },
    JobWake {
        job: u32,
        gen: u64,
    },
    /// A completion reaches its job after the wake-up latency.
    Notify {
        job: u32,
        tag: u64,
    },
    /// An issued I/O is through the host CPU ([`Simulation::cpu_pending`]).
    Submit {
        key: u64,
    },
    /// A submission call of several I/Os is through the host CPU
    /// ([`Simulation::cpu_batches`]).
    SubmitBatch {
        key: u64,
    },
    /// The rq_qos controllers' timer ([`BlockLayer::qos_timeout`]).
    QosTimer,
    /// The device's own timer ([`Device::poll_timeout`]).
    DeviceTimer,
}

struct JobState {
    slot: JobSlot,
    metrics: JobMetrics,
    wake_gen: u64,
    done: bool,
    runnable: bool,
    /// The local ids of the contexts it has used: those not exited when it is done exit then.
    ctxs: Vec<u32>,
    /// It starts once every job of the earlier phases is done.
    phase: u32,
    /// Records its completions in `metrics`.
    recorder: CompletionRecorder,
}

/// A simulation: one device, one scheduler (possibly a stack), any number of jobs.
pub struct Simulation {
    now: Nanos,
    device: Box<dyn Device>,
    /// The block layer and the scheduler in it; a bio's token is (job, its tag).
    blk: BlockLayer<Box<dyn Scheduler>, (u32, u64)>,
    groups: GroupTree,
    jobs: Vec<JobState>,
    events: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    seq: u64,
    /// Each (job, local context id)'s global id, and whether it is live (not exited).
    ctx_ids: FxHashMap<(u32, u32), (CtxId, bool)>,
    /// The generation of the scheduler's idle timer last scheduled as an event.
    timer_seen: u64,
    /// The rq_qos controllers' time last scheduled as an event.
    qos_seen: Option<Nanos>,
    /// The device's timer last scheduled as an event.
    device_seen: Option<Nanos>,
    /// Whether the device may defer completions or keep a timer ([`Device::defers`]).
    device_defers: bool,
    /// Bios the last completion finished (kept to reuse its allocation).
    done: Vec<Done<(u32, u64)>>,
    busy_since: Option<Nanos>,
    stats: DeviceStats,
    busy_ns: u64,
    wakeup: Nanos,
    /// The phase whose jobs may run.
    phase: u32,
    /// Set when a job finished: the phase may be over.
    phase_check: bool,
    /// Completions this long after a job's start are left out of its figures.
    ramp: Nanos,
    /// Every request's record, when asked for.
    records: Option<Vec<RequestRecord>>,
    /// Requests completed, counted for a progress display on another thread.
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The host's cores and the scheduler's lock, when modelled.
    cpu: Option<HostCpu>,
    /// The identical drives the host's processes spread their I/O over, this one among them.
    host_drives: NonZeroU32,
    /// I/O issued and still on the host CPU, by key: (job, what, when issued).
    cpu_pending: FxHashMap<u64, (u32, elevator_workload::IoSpec, Nanos)>,
    /// Submission calls of several I/Os still on the host CPU, by key: (job, what, when
    /// issued).
    cpu_batches: FxHashMap<u64, (u32, Vec<elevator_workload::IoSpec>, Nanos)>,
    /// Set when an event past [`CLOCK_LIMIT`] ended the run.
    clock_overflow: bool,
    /// The most I/Os [`Simulation::run`] completes ([`Simulation::bound_ios`]), counted as
    /// [`Simulation::work_done`] counts them.
    io_bound: Option<u64>,
    /// What completed I/Os count past one each in [`Simulation::work_done`]: an I/O (or a
    /// piece of a split one) of more than [`WORK_UNIT_SECTORS`] counts once per such span.
    big_io_extra: u64,
    /// The jobs' own steps ([`elevator_workload::Job::model_steps`]) summed when last looked
    /// at (every [`STEPS_EVERY`] events: the sum visits every job).
    steps_seen: u64,
    /// Events since the jobs' steps were last summed.
    events_since_steps: u32,
    /// Set when the run passed [`Simulation::io_bound`] and was stopped.
    io_bound_passed: bool,
    /// Jobs marked runnable since the last [`Simulation::poll_jobs`], least index first.
    ready: BinaryHeap<Reverse<u32>>,
    /// Foreground jobs not yet done.
    foreground_left: usize,
}

impl Simulation {
    /// A simulation of `device` under `sched`. `groups` names the groups jobs belong to; the
    /// io controllers its groups configure (io.max, io.latency, io.cost) are installed at the
    /// block layer's rq_qos position ([`elevator_core::qos::chain`]).
    pub fn new(device: Box<dyn Device>, sched: Box<dyn Scheduler>, groups: GroupTree) -> Self {
        let limits = Limits::depth(device.depth());
        let mut blk = BlockLayer::new(sched, limits);
        // A disk sits behind a SCSI or SATA host that tags more requests than the disk holds;
        // an SSD model stands for an NVMe drive, whose tag set is its queue.
        if !device.non_rotational() {
            blk.set_host_tags(elevator_core::block::DISK_HOST_TAGS);
        }
        let dev = QosDevice {
            non_rotational: device.non_rotational(),
            queue_depth: device.depth(),
            nr_requests: blk.nr_requests(),
        };
        blk.set_qos(elevator_core::qos::chain(&groups, &dev));
        let device_defers = device.defers();
        Simulation {
            now: Nanos::ZERO,
            device,
            blk,
            groups,
            jobs: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            ctx_ids: FxHashMap::default(),
            timer_seen: 0,
            qos_seen: None,
            device_seen: None,
            device_defers,
            done: Vec::new(),
            busy_since: None,
            stats: DeviceStats::default(),
            busy_ns: 0,
            wakeup: Nanos::ZERO,
            phase: 0,
            phase_check: false,
            ramp: Nanos::ZERO,
            records: None,
            progress: None,
            cpu: None,
            host_drives: NonZeroU32::MIN,
            cpu_pending: FxHashMap::default(),
            cpu_batches: FxHashMap::default(),
            clock_overflow: false,
            io_bound: None,
            io_bound_passed: false,
            big_io_extra: 0,
            steps_seen: 0,
            events_since_steps: 0,
            ready: BinaryHeap::new(),
            foreground_left: 0,
        }
    }

    /// Charge every I/O the host CPU time `spec` gives the simulation's scheduler
    /// ([`crate::cpu`]): an I/O reaches the scheduler when its core and the scheduler's lock
    /// are done with it. Off by default (I/O reaches the scheduler when issued).
    pub fn set_host_cpu(&mut self, spec: &CpuSpec) {
        let mut cpu = HostCpu::new(spec, self.blk.scheduler().name());
        cpu.set_drives(self.host_drives);
        self.cpu = Some(cpu);
    }

    /// The host's processes spread their I/O evenly over `drives` identical drives, the
    /// simulated one among them: per I/O here, the submitting core serves `drives - 1` more
    /// on the others ([`crate::cpu`]'s mean field; 1 by default). Takes effect with the host
    /// CPU model ([`Simulation::set_host_cpu`], before or after this); without it there is no
    /// CPU to share.
    pub fn set_host_drives(&mut self, drives: NonZeroU32) {
        self.host_drives = drives;
        if let Some(cpu) = &mut self.cpu {
            cpu.set_drives(drives);
        }
    }

    /// Count every request completed in `counter` as the run goes (read it from another
    /// thread to show progress); off by default.
    pub fn count_completions(&mut self, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        self.progress = Some(counter);
    }

    /// Stop [`Simulation::run`] once it has completed more than `max` I/Os, its jobs not
    /// done; the report's [`RunReport::job_error`] then says so. The bound a caller checked the
    /// run's implied work against ([`crate::work`]) before running it: that is an estimate
    /// from the run's start, and a run that does more than it said (a compile's later files
    /// missing a small page cache more than its first) stops at the bound instead of
    /// computing on for as long as it takes. Off by default.
    pub fn bound_ios(&mut self, max: u64) {
        self.io_bound = Some(max);
    }

    /// Keep a [`RequestRecord`] of every request in [`RunReport::requests`] (off by default:
    /// a run that does not ask keeps nothing per request).
    pub fn record_requests(&mut self) {
        self.records = Some(Vec::new());
    }

    /// Report every request's life (queue, merge, insert, dispatch, completion) to `observer`,
    /// e.g. a [`BlktraceWriter`](elevator_workload::traces::blktrace_out::BlktraceWriter).
    pub fn set_observer(&mut self, observer: Box<dyn IoObserver>) {
        self.blk.set_observer(observer);
    }

    /// Delay between a request's completion and its job seeing it (the process's wake-up
    /// latency); 0 by default. The job's latency figures still end at the completion.
    pub fn set_wakeup_latency(&mut self, latency: Nanos) {
        self.wakeup = latency;
    }

    /// fio's `ramp_time`: I/O completed within `ramp` of a job's start is left out of its
    /// figures, and its rates are over the time after it. 0 by default.
    pub fn set_ramp(&mut self, ramp: Nanos) {
        self.ramp = ramp;
    }

    /// Add a job; returns its index.
    pub fn add_job(&mut self, slot: JobSlot) -> usize {
        self.add_job_in_phase(slot, 0)
    }

    /// Add a job that starts once every job of the earlier phases is done (fio's
    /// `stonewall`); jobs of the first phase start at their `start`, the others when their
    /// phase begins (their `start` is then ignored), each `delay` later. Returns its index.
    pub fn add_job_in_phase(&mut self, slot: JobSlot, phase: u32) -> usize {
        let i = self.jobs.len();
        let start = slot.start.saturating_add(slot.delay);
        let recorder = CompletionRecorder::new(slot.job.as_ref());
        self.jobs.push(JobState {
            metrics: JobMetrics {
                started: start,
                ..JobMetrics::default()
            },
            slot,
            wake_gen: 0,
            done: false,
            runnable: false,
            ctxs: Vec::new(),
            phase,
            recorder,
        });
        self.push(
            start,
            Event::JobWake {
                job: i as u32,
                gen: 0,
            },
        );
        i
    }

    fn push(&mut self, t: Nanos, e: Event) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, e)));
    }

    /// Whether the run depends on the seed its jobs were built with: whether any job draws
    /// from it ([`Job::draws_from_seed`]). The engine and the device models take no seed, so
    /// when none does, the same jobs, drive and scheduler built at another seed run the same.
    pub fn draws_from_seed(&self) -> bool {
        self.jobs.iter().any(|j| j.slot.job.draws_from_seed())
    }

    /// Run until every foreground job is done, or until `limit` (simulated time), or until
    /// nothing is left to happen, or until it passes its bound on I/Os
    /// ([`Simulation::bound_ios`]).
    pub fn run(mut self, limit: Option<Nanos>) -> RunReport {
        let max_ios = self.io_bound.map_or(u64::MAX, |m| m.saturating_add(1));
        self.io_bound_passed = self.drive(limit.unwrap_or(Nanos::MAX), max_ios);
        self.finish()
    }

    /// Run as [`Simulation::run`] would, but stop once `ios` I/Os have completed: how far the
    /// run got, to tell the work a whole run implies before doing it ([`crate::work`]).
    pub fn probe(mut self, limit: Option<Nanos>, ios: u64) -> Probe {
        let stopped = self.drive(limit.unwrap_or(Nanos::MAX), ios);
        self.steps_seen = self.job_steps();
        Probe {
            ios: self.work_done(),
            end: self.now,
            ended: !stopped,
            progress: self.progress(),
        }
    }

    /// The foreground job not done that is least far through the work it counts
    /// ([`Job::progress`]), by its index among the jobs added, with the fraction (0 to 1) it
    /// did; `None` when no such job counts its work.
    pub fn progress(&self) -> Option<(usize, f64)> {
        self.jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.slot.foreground && !j.done)
            .filter_map(|(i, j)| Some((i, j.slot.job.progress()?)))
            .map(|(i, (done, total))| match total {
                0 => (i, 1.0),
                t => (i, (done as f64 / t as f64).min(1.0)),
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The work done so far, in I/Os as the bound on a run counts them
    /// ([`Simulation::bound_ios`], `elevator_sim::work`): each completed I/O (or piece of a
    /// split one) once per started [`WORK_UNIT_SECTORS`] (a 1 MiB read costs the SSD model's
    /// page map 16 times a 4 KiB one: 24 us against 1.6 us a read), plus the jobs' own steps
    /// ([`elevator_workload::Job::model_steps`]: a compile's page-cache pages) once per
    /// [`STEPS_PER_IO`]. Bounding I/Os alone let a compile of 10^6 files, or 1 MiB reads on
    /// the SSD model, run 15 to 40 minutes under a bound meant as minutes.
    pub fn work_done(&self) -> u64 {
        self.blk
            .bios_completed()
            .saturating_add(self.big_io_extra)
            .saturating_add(self.steps_seen / STEPS_PER_IO)
    }

    fn job_steps(&self) -> u64 {
        self.jobs
            .iter()
            .fold(0u64, |a, j| a.saturating_add(j.slot.job.model_steps()))
    }

    /// The event loop of [`Simulation::run`] up to `limit`, stopping early (and returning
    /// true) once `max_ios` I/Os have completed ([`Simulation::work_done`]).
    fn drive(&mut self, limit: Nanos, max_ios: u64) -> bool {
        self.foreground_left = self
            .jobs
            .iter()
            .filter(|j| j.slot.foreground && !j.done)
            .count();
        let any_foreground = self.jobs.iter().any(|j| j.slot.foreground);
        self.phase = self.jobs.iter().map(|j| j.phase).min().unwrap_or(0);
        for j in &mut self.jobs {
            j.metrics.started = j
                .slot
                .start
                .saturating_add(j.slot.delay)
                .saturating_add(self.ramp);
        }
        while let Some(Reverse((t, _, ev))) = self.events.pop() {
            if t > limit {
                self.now = limit;
                break;
            }
            self.events_since_steps += 1;
            if self.events_since_steps >= STEPS_EVERY {
                self.events_since_steps = 0;
                self.steps_seen = self.job_steps();
            }
            if self.work_done() >= max_ios {
                return true;
            }
            // A time this far off was saturated or wrapped on its way (a think time, a rate
            // or a start of centuries): what follows would be figures of a clock stuck at
            // its end. Timers of the scheduler and the io controllers may say "never".
            if t >= CLOCK_LIMIT && !matches!(ev, Event::SchedTimer { .. } | Event::QosTimer) {
                self.clock_overflow = true;
                self.now = t.min(limit);
                break;
            }
            debug_assert!(t >= self.now);
            self.now = t;
            match ev {
                Event::Complete { id } => self.handle_completion(id),
                Event::SchedTimer { gen } => self.blk.handle_timer(gen),
                Event::QosTimer => {
                    if self.qos_seen.is_some_and(|t| t <= self.now) {
                        self.qos_seen = None;
                    }
                    self.blk.handle_qos_timeout(self.now);
                }
                Event::DeviceTimer => {
                    if self.device_seen.is_some_and(|t| t <= self.now) {
                        self.device_seen = None;
                    }
                    self.device.handle_timeout(self.now);
                }
                Event::JobWake { job, gen } => {
                    let j = &self.jobs[job as usize];
                    if j.wake_gen == gen && !j.done && j.phase <= self.phase {
                        self.make_runnable(job);
                    }
                }
                Event::Notify { job, tag } => self.notify(job, tag),
                Event::Submit { key } => {
                    let (job, spec, issued) = self
                        .cpu_pending
                        .remove(&key)
                        .expect("an I/O on the host CPU is pending");
                    self.issue(job, spec, issued);
                }
                Event::SubmitBatch { key } => {
                    let (job, specs, issued) = self
                        .cpu_batches
                        .remove(&key)
                        .expect("a batch on the host CPU is pending");
                    self.issue_batch(job, specs, issued);
                }
            }
            self.poll_jobs();
            if std::mem::take(&mut self.phase_check) {
                self.next_phase();
            }
            self.pump();
            if any_foreground && self.foreground_left == 0 {
                break;
            }
        }
        false
    }

    /// Once every job of the current phase is done, start the next phase's jobs now.
    fn next_phase(&mut self) {
        let current = self.phase;
        if self.jobs.iter().any(|j| j.phase == current && !j.done) {
            return;
        }
        let Some(next) = self
            .jobs
            .iter()
            .map(|j| j.phase)
            .filter(|&p| p > current)
            .min()
        else {
            return;
        };
        self.phase = next;
        let now = self.now;
        for i in 0..self.jobs.len() {
            let j = &mut self.jobs[i];
            if j.phase != next {
                continue;
            }
            let at = now.saturating_add(j.slot.delay);
            j.metrics.started = at.saturating_add(self.ramp);
            j.wake_gen += 1;
            let gen = j.wake_gen;
            self.push(at, Event::JobWake { job: i as u32, gen });
        }
    }

    fn handle_completion(&mut self, id: u64) {
        let now = self.now;
        let mut done = std::mem::take(&mut self.done);
        self.blk
            .handle_complete(RequestId(id), true, now, &mut done);
        if self.blk.in_flight() == 0 {
            if let Some(since) = self.busy_since.take() {
                self.busy_ns += (now - since).as_ns();
            }
        }
        if let Some(p) = &self.progress {
            p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        for d in done.drain(..) {
            self.big_io_extra += u64::from(d.sectors)
                .div_ceil(WORK_UNIT_SECTORS)
                .saturating_sub(1);
            let (job, tag) = d.token;
            if let Some(records) = self.records.as_mut() {
                records.push(RequestRecord {
                    job,
                    ctx: d.ctx.0,
                    op: d.op,
                    sector: d.sector,
                    sectors: d.sectors,
                    inserted: d.submitted,
                    dispatched: d.dispatched,
                    tagged: d.tagged,
                    completed: now,
                    queued: d.queued,
                    in_flight: d.in_flight,
                    merged: d.merged,
                });
            }
            // A piece of a split I/O completes the job's I/O only as its last piece.
            let Some(bytes) = d.whole else {
                continue;
            };
            let j = &mut self.jobs[job as usize];
            j.recorder.completed(
                &mut j.metrics,
                j.slot.job.as_ref(),
                tag,
                d.op,
                bytes,
                d.submitted,
                now,
            );
            if self.wakeup == Nanos::ZERO {
                self.notify(job, tag);
            } else {
                self.push(now + self.wakeup, Event::Notify { job, tag });
            }
        }
        self.done = done;
    }

    /// Tell `job` that its I/O `tag` completed.
    fn notify(&mut self, job: u32, tag: u64) {
        let j = &mut self.jobs[job as usize];
        j.slot.job.complete(tag, self.now);
        if !j.done {
            self.make_runnable(job);
        }
    }

    /// Mark job `i` runnable: [`Simulation::poll_jobs`] polls it.
    fn make_runnable(&mut self, i: u32) {
        let j = &mut self.jobs[i as usize];
        if !std::mem::replace(&mut j.runnable, true) {
            self.ready.push(Reverse(i));
        }
    }

    /// Poll every runnable job, in the order of their indices; a job made runnable meanwhile
    /// at or below the index being polled waits for the next call. Only the runnable jobs
    /// are visited (a scan of every job at every event made a job file of 4096 `stonewall`
    /// sections quadratic).
    fn poll_jobs(&mut self) {
        let mut next = 0u32;
        let mut deferred = Vec::new();
        while let Some(Reverse(idx)) = self.ready.pop() {
            if idx < next {
                deferred.push(Reverse(idx));
                continue;
            }
            next = idx + 1;
            let i = idx as usize;
            if !self.jobs[i].runnable {
                continue;
            }
            self.jobs[i].runnable = false;
            loop {
                let j = &mut self.jobs[i];
                let action = j.slot.job.poll(self.now);
                j.recorder
                    .reaped(&mut j.metrics, j.slot.job.as_mut(), self.now);
                match action {
                    Action::Issue(spec) => self.submit(i as u32, spec),
                    Action::Batch(specs) => self.submit_batch(i as u32, specs),
                    Action::Exit { ctx } => {
                        let c = self.ctx(i as u32, ctx);
                        if let Some(e) = self.ctx_ids.get_mut(&(i as u32, ctx)) {
                            e.1 = false;
                        }
                        self.blk.handle_exit(c, self.now);
                    }
                    Action::Think { until } => {
                        let j = &mut self.jobs[i];
                        j.wake_gen += 1;
                        let gen = j.wake_gen;
                        let until = until.max(self.now);
                        self.push(until, Event::JobWake { job: i as u32, gen });
                        break;
                    }
                    Action::Wait => {
                        self.jobs[i].wake_gen += 1;
                        break;
                    }
                    Action::Done => {
                        let j = &mut self.jobs[i];
                        j.done = true;
                        if j.slot.foreground {
                            self.foreground_left -= 1;
                        }
                        j.wake_gen += 1;
                        j.metrics.finished = Some(self.now);
                        self.phase_check = true;
                        // A finished job's contexts exit, as its processes would.
                        for local in std::mem::take(&mut j.ctxs) {
                            if let Some((c, live)) = self.ctx_ids.get_mut(&(i as u32, local)) {
                                if std::mem::replace(live, false) {
                                    self.blk.handle_exit(*c, self.now);
                                }
                            }
                        }
                        break;
                    }
                }
            }
        }
        self.ready.extend(deferred);
    }

    fn ctx(&mut self, job: u32, local: u32) -> CtxId {
        let next = CtxId(self.ctx_ids.len() as u32 + 1);
        let e = self.ctx_ids.entry((job, local)).or_insert((next, false));
        let fresh = e.0 == next;
        // Issuing again after an exit makes it live again.
        e.1 = true;
        let id = e.0;
        if fresh {
            self.jobs[job as usize].ctxs.push(local);
            if self.blk.observed() {
                let slot = &self.jobs[job as usize].slot;
                let (pid, name) = slot.job.ctx_label(local).unwrap_or_else(|| {
                    let name = if local == 0 {
                        slot.name.clone()
                    } else {
                        format!("{}.{local}", slot.name)
                    };
                    (id.0, name)
                });
                self.blk.observe_process(id, pid, &name, self.now);
            }
        }
        id
    }

    /// `job` issues `spec` now: to the scheduler at once, or through the host CPU first.
    fn submit(&mut self, job: u32, spec: elevator_workload::IoSpec) {
        if self.cpu.is_none() {
            self.issue(job, spec, self.now);
            return;
        }
        let ctx = self.ctx(job, spec.ctx);
        let cpu = self.cpu.as_mut().expect("checked above");
        let cpus = self.jobs[job as usize].slot.cpus.as_deref();
        let at = cpu.submit_on(ctx, cpus, self.now);
        self.seq += 1;
        let key = self.seq;
        self.cpu_pending.insert(key, (job, spec, self.now));
        self.push(at, Event::Submit { key });
    }

    /// `job` issues `specs` now in one submission call: to the block layer at once, or when
    /// the host CPU is through with the last of them (the kernel's plug holds the first until
    /// then). Each I/O costs the CPU what it costs alone: the call's own cost is not
    /// separated from the I/Os' (the fitted costs are per I/O).
    fn submit_batch(&mut self, job: u32, specs: Vec<elevator_workload::IoSpec>) {
        if self.cpu.is_none() {
            self.issue_batch(job, specs, self.now);
            return;
        }
        let mut at = self.now;
        for spec in &specs {
            let ctx = self.ctx(job, spec.ctx);
            let cpu = self.cpu.as_mut().expect("checked above");
            let cpus = self.jobs[job as usize].slot.cpus.as_deref();
            at = at.max(cpu.submit_on(ctx, cpus, self.now));
        }
        self.seq += 1;
        let key = self.seq;
        self.cpu_batches.insert(key, (job, specs, self.now));
        self.push(at, Event::SubmitBatch { key });
    }

    /// Queue the I/Os of one submission call of `job` (issued at `submitted`) at the block
    /// layer ([`BlockLayer::handle_submit_call`]: plugged when there are several).
    fn issue_batch(&mut self, job: u32, specs: Vec<elevator_workload::IoSpec>, submitted: Nanos) {
        let bios = specs
            .into_iter()
            .map(|spec| self.bio_of(job, spec, submitted))
            .collect();
        self.blk.handle_submit_call(bios, self.now);
    }

    /// Queue `spec` of `job` (issued at `submitted`) at the block layer.
    fn issue(&mut self, job: u32, spec: elevator_workload::IoSpec, submitted: Nanos) {
        let (bio, token) = self.bio_of(job, spec, submitted);
        self.blk.handle_submit(bio, token, self.now);
    }

    /// The bio `spec` of `job` (issued at `submitted`) is, with its token.
    fn bio_of(
        &mut self,
        job: u32,
        spec: elevator_workload::IoSpec,
        submitted: Nanos,
    ) -> (Bio, (u32, u64)) {
        let ctx = self.ctx(job, spec.ctx);
        let slot = &self.jobs[job as usize].slot;
        let mut bio = spec.bio(ctx, slot.group, slot.prio);
        bio.submitted = Some(submitted);
        (bio, (job, spec.tag))
    }

    /// Start what the block layer dispatches while the device has room, and schedule the
    /// scheduler's idle timer when it asks for a new one.
    fn pump(&mut self) {
        let now = self.now;
        while let Some(rq) = self.blk.poll_dispatch(now) {
            let svc = self.device.submit(&rq, now);
            self.stats.requests += 1;
            self.stats.cache_hits += u64::from(svc.cache_hit);
            if self.blk.in_flight() == 1 {
                self.busy_since = Some(now);
            }
            if !svc.deferred {
                self.push(svc.done.max(now), Event::Complete { id: rq.id.0 });
            }
        }
        if self.device_defers {
            self.poll_device(now);
        }
        if let Some((until, gen)) = self.blk.timer() {
            if gen != self.timer_seen {
                self.timer_seen = gen;
                self.push(until.max(now), Event::SchedTimer { gen });
            }
        }
        if let Some(t) = self.blk.qos_timeout() {
            let t = t.max(now);
            if !matches!(self.qos_seen, Some(seen) if seen <= t) {
                self.qos_seen = Some(t);
                self.push(t, Event::QosTimer);
            }
        }
    }

    /// Schedule the completions the device came to know after their dispatch, and its own
    /// timer when it asks for a new one.
    fn poll_device(&mut self, now: Nanos) {
        while let Some((id, t)) = self.device.poll_completion() {
            self.push(t.max(now), Event::Complete { id: id.0 });
        }
        if let Some(t) = self.device.poll_timeout() {
            let t = t.max(now);
            if !matches!(self.device_seen, Some(seen) if seen <= t) {
                self.device_seen = Some(t);
                self.push(t, Event::DeviceTimer);
            }
        }
    }

    fn finish(mut self) -> RunReport {
        if let Some(since) = self.busy_since.take() {
            self.busy_ns += (self.now - since).as_ns();
        }
        self.stats.busy_s = self.busy_ns as f64 / 1e9;
        let groups = &self.groups;
        let c = self.blk.counters();
        RunReport {
            scheduler: self.blk.scheduler().name().to_string(),
            device: self.device.name().to_string(),
            end: self.now,
            jobs: self
                .jobs
                .into_iter()
                .map(|j| JobReport {
                    error: j.slot.job.error(),
                    group_path: groups.get(j.slot.group).path.clone(),
                    name: j.slot.name,
                    group: j.slot.group,
                    foreground: j.slot.foreground,
                    phase: j.phase,
                    metrics: j.metrics,
                })
                .collect(),
            device_stats: self.stats,
            counters: c,
            ios_completed: self.blk.bios_completed(),
            disk: *self.blk.stat(),
            requests: self.records.unwrap_or_default(),
            clock_overflow: self.clock_overflow,
            io_bound_passed: self.io_bound.filter(|_| self.io_bound_passed),
        }
    }
}
