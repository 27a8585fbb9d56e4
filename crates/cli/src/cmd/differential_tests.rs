//! The simulator and the executor drive one block layer: the same fio job file run through
//! both, with the executor's device completing each request after the service time the
//! simulator's device gave it, makes every scheduler see the identical sequence of calls
//! (merge offers, inserts, dispatches, completions, exits), compared call by call.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use elevator_core::block::{Event, Observer};
use elevator_core::{
    registry, CtxId, Dispatch, GroupTree, GrownBy, Nanos, Request, RequestId, RequestsMerged,
    Scheduler, Settings, TunableError, SECTOR_BYTES,
};
use elevator_real::{Backend, Clock, IoCompletion, IoKind, IoRequest, RunOptions};
use elevator_sim::{JobSlot, Simulation};
use elevator_workload::fio_file;

use super::run::build_jobs;
use super::sim_job::device;

/// Several processes, sequential and random, reads and writes, sync and async; no think
/// time (a think time ending at the instant of a completion is ordered by the simulator's
/// event sequence, which the executor's loop does not see).
const JOB_FILE: &str = "\
[global]
size=8m
bs=4k
ioengine=io_uring
direct=1
number_ios=300

[seq-read]
rw=read
iodepth=8

[rand-read]
rw=randread
offset=8m
iodepth=2

[seq-write-async]
rw=write
offset=16m
direct=0
iodepth=16

[rand-write-sync]
rw=randwrite
offset=24m
iodepth=4

[big-read]
rw=read
bs=256k
offset=32m
iodepth=2
number_ios=40
";

/// One call a scheduler received.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Merge {
        id: u64,
        sector: u64,
        sectors: u32,
        now: Nanos,
        into: Option<u64>,
    },
    Insert {
        id: u64,
        ctx: CtxId,
        sector: u64,
        sectors: u32,
        sync: bool,
        now: Nanos,
    },
    Dispatch {
        now: Nanos,
        out: String,
    },
    Complete {
        id: u64,
        sector: u64,
        sectors: u32,
        now: Nanos,
    },
    Exit {
        ctx: CtxId,
        now: Nanos,
    },
}

/// A scheduler that writes down every call it gets.
struct Recording {
    inner: Box<dyn Scheduler>,
    calls: Rc<RefCell<Vec<Call>>>,
}

impl Scheduler for Recording {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn try_merge(&mut self, rq: &Request, max_sectors: u32, now: Nanos) -> Option<RequestId> {
        let into = self.inner.try_merge(rq, max_sectors, now);
        self.calls.borrow_mut().push(Call::Merge {
            id: rq.id.0,
            sector: rq.sector,
            sectors: rq.sectors,
            now,
            into: into.map(|i| i.0),
        });
        into
    }
    fn bio_not_merged(&mut self, bio: &Request, now: Nanos) {
        self.inner.bio_not_merged(bio, now);
    }
    fn merge_next(
        &mut self,
        into: RequestId,
        grown: GrownBy,
        max_sectors: u32,
        now: Nanos,
    ) -> Option<RequestsMerged> {
        self.inner.merge_next(into, grown, max_sectors, now)
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.calls.borrow_mut().push(Call::Insert {
            id: rq.id.0,
            ctx: rq.ctx,
            sector: rq.sector,
            sectors: rq.sectors,
            sync: rq.sync,
            now,
        });
        self.inner.insert(rq, now);
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let d = self.inner.dispatch(now);
        let out = match &d {
            Dispatch::Request(rq) => format!("request {} at {}+{}", rq.id.0, rq.sector, rq.sectors),
            Dispatch::Idle { until } => format!("idle until {}", until.as_ns()),
            Dispatch::Empty => "empty".into(),
        };
        self.calls.borrow_mut().push(Call::Dispatch { now, out });
        d
    }
    fn complete(&mut self, rq: &Request, now: Nanos) {
        self.calls.borrow_mut().push(Call::Complete {
            id: rq.id.0,
            sector: rq.sector,
            sectors: rq.sectors,
            now,
        });
        self.inner.complete(rq, now);
    }
    fn exit(&mut self, ctx: CtxId, now: Nanos) {
        self.calls.borrow_mut().push(Call::Exit { ctx, now });
        self.inner.exit(ctx, now);
    }
    fn bounds_own_requests(&self) -> bool {
        self.inner.bounds_own_requests()
    }
    fn holds_sched_tag(&self, id: RequestId) -> Option<bool> {
        self.inner.holds_sched_tag(id)
    }
    fn sched_tags_admitted(&self) -> Option<u64> {
        self.inner.sched_tags_admitted()
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn max_request_sectors(&self) -> Option<u32> {
        self.inner.max_request_sectors()
    }
    fn issues_directly(&self) -> bool {
        self.inner.issues_directly()
    }
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        self.inner.set_tunable(name, value)
    }
}

/// Each request's service time on the simulated device: dispatch to completion.
#[derive(Default)]
struct ServiceTimes {
    issued: HashMap<u64, Nanos>,
    service: HashMap<u64, Nanos>,
}

impl Observer for ServiceTimes {
    fn process(&mut self, _: CtxId, _: u32, _: &str, _: Nanos) {}
    fn event(&mut self, event: Event, rq: &Request, now: Nanos) {
        match event {
            Event::Issue => {
                self.issued.insert(rq.id.0, now);
            }
            Event::Complete => {
                let t = now - self.issued[&rq.id.0];
                self.service.insert(rq.id.0, t);
            }
            _ => {}
        }
    }
}

/// A clock the scripted device advances.
struct Virtual(Rc<Cell<Nanos>>);

impl Clock for Virtual {
    fn now(&self) -> Nanos {
        self.0.get()
    }
}

/// A memory device that completes each request after the simulator's service time for it,
/// on a virtual clock: one completion per wait, in (time, submission) order, as the
/// simulator's events come.
struct Scripted {
    clock: Rc<Cell<Nanos>>,
    service: HashMap<u64, Nanos>,
    depth: usize,
    size: u64,
    seq: u64,
    pending: Vec<(Nanos, u64, IoCompletion)>,
}

impl Backend for Scripted {
    fn size_bytes(&self) -> u64 {
        self.size
    }
    fn capacity(&self) -> usize {
        self.depth
    }
    fn in_flight(&self) -> usize {
        self.pending.len()
    }
    fn submit(&mut self, io: IoRequest) -> io::Result<()> {
        let service = *self.service.get(&io.token).ok_or_else(|| {
            io::Error::other(format!(
                "request {} was never dispatched in the simulator",
                io.token
            ))
        })?;
        let len = if matches!(io.kind, IoKind::Flush | IoKind::Discard { .. }) {
            0
        } else {
            io.buf.len()
        };
        let done = self.clock.get() + service;
        self.seq += 1;
        let c = IoCompletion {
            token: io.token,
            result: Ok(len),
            buf: io.buf,
        };
        self.pending.push((done, self.seq, c));
        Ok(())
    }
    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<IoCompletion>) -> io::Result<()> {
        let now = self.clock.get();
        let deadline = timeout.map(|t| now + Nanos(t.as_nanos() as u64));
        let next = (0..self.pending.len()).min_by_key(|&i| (self.pending[i].0, self.pending[i].1));
        let due = next.filter(|&i| deadline.is_none_or(|d| self.pending[i].0 <= d));
        if let Some(i) = due {
            let (t, _, c) = self.pending.swap_remove(i);
            self.clock.set(t.max(now));
            out.push(c);
        } else if let Some(d) = deadline {
            self.clock.set(d);
        }
        Ok(())
    }
}

fn build(
    sched: &str,
    calls: &Rc<RefCell<Vec<Call>>>,
    groups: &GroupTree,
    rotational: bool,
) -> Recording {
    let info = registry::find(sched).unwrap();
    let settings = info.on_device(Settings::new(), Some(rotational));
    Recording {
        inner: info.build(&settings, groups).unwrap(),
        calls: Rc::clone(calls),
    }
}

/// Both runs of the job file under `sched` on `drive`: the calls the simulator's scheduler
/// got, then the executor's.
fn both(sched: &str, drive: &str) -> (Vec<Call>, Vec<Call>) {
    let file = fio_file::parse(Path::new("differential.fio"), JOB_FILE).unwrap();
    let probe = device(drive).unwrap();
    let capacity = probe.capacity_sectors() * SECTOR_BYTES;
    let rotational = !probe.non_rotational();
    let depth = probe.depth();

    let sim_calls = Rc::new(RefCell::new(Vec::new()));
    let times = Rc::new(RefCell::new(ServiceTimes::default()));
    let mut groups = GroupTree::new();
    let (jobs, _) = build_jobs(&file, capacity, 1, &mut groups).unwrap();
    let sched_box = Box::new(build(sched, &sim_calls, &groups, rotational));
    let mut sim = Simulation::new(device(drive).unwrap(), sched_box, groups);
    sim.set_observer(Box::new(Rc::clone(&times)));
    for j in jobs {
        let slot = JobSlot::new(j.name, j.job).group(j.group).prio(j.prio);
        sim.add_job_in_phase(slot, j.phase);
    }
    let report = sim.run(None);
    assert!(report.counters.completed > 0);

    let real_calls = Rc::new(RefCell::new(Vec::new()));
    let mut groups = GroupTree::new();
    let (jobs, _) = build_jobs(&file, capacity, 1, &mut groups).unwrap();
    let mut sched = build(sched, &real_calls, &groups, rotational);
    let clock = Rc::new(Cell::new(Nanos::ZERO));
    let mut backend = Scripted {
        clock: Rc::clone(&clock),
        service: std::mem::take(&mut times.borrow_mut().service),
        depth,
        size: capacity,
        seq: 0,
        pending: Vec::new(),
    };
    let opts = RunOptions {
        ties_in_job_order: true,
        ..RunOptions::default()
    };
    let run = elevator_real::run_with_clock(&mut backend, &Virtual(clock), &mut sched, jobs, &opts);
    if let Err(e) = &run {
        panic!(
            "{sched}: the executor's run failed: {e}",
            sched = sched.name()
        );
    }
    let sim_calls = sim_calls.borrow().clone();
    let real_calls = real_calls.borrow().clone();
    (sim_calls, real_calls)
}

fn assert_identical(sched: &str, drive: &str) {
    let (sim, real) = both(sched, drive);
    let merges = sim
        .iter()
        .filter(|c| matches!(c, Call::Merge { into: Some(_), .. }))
        .count();
    crate::output::tell!(
        "{sched} on {drive}: {} calls, {merges} merges, {} dispatches",
        sim.len(),
        sim.iter()
            .filter(|c| matches!(c, Call::Dispatch { .. }))
            .count()
    );
    if let Some(i) = (0..sim.len().min(real.len())).find(|&i| sim[i] != real[i]) {
        let from = i.saturating_sub(3);
        panic!(
            "{sched} on {drive}: call {i} differs\nsimulator: {:#?}\nexecutor:  {:#?}",
            &sim[from..(i + 2).min(sim.len())],
            &real[from..(i + 2).min(real.len())]
        );
    }
    assert_eq!(
        sim.len(),
        real.len(),
        "{sched} on {drive}: one run has calls the other has not"
    );
}

#[test]
fn every_scheduler_sees_the_same_calls_in_the_simulator_and_the_executor_on_an_hdd() {
    for info in registry::all() {
        assert_identical(info.name, "laptop-4200");
    }
}

#[test]
fn every_scheduler_sees_the_same_calls_in_the_simulator_and_the_executor_on_an_ssd() {
    for info in registry::all() {
        assert_identical(info.name, "samsung-980pro-1tb");
    }
}

#[test]
fn the_differential_job_merges_and_splits() {
    // The comparison means something only if the runs merge and split requests.
    let (sim, _) = both("mq-deadline", "laptop-4200");
    assert!(sim
        .iter()
        .any(|c| matches!(c, Call::Merge { into: Some(_), .. })));
    assert!(sim.iter().any(|c| matches!(c, Call::Exit { .. })));
    // 2.4's elevator asks for requests of at most max_sectors (256): the 256 KiB reads split.
    let (sim, _) = both("linus", "laptop-4200");
    let split = sim
        .iter()
        .any(|c| matches!(c, Call::Insert { sectors: 256, .. }));
    assert!(
        split,
        "the 256 KiB reads are split into requests of 256 sectors"
    );
}
