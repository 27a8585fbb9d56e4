//! `--blktrace-out DIR` on real I/O (`run`, `replay --target`, `mount`): a request log as a
//! blktrace (version 7), so blkparse, btt and iowatcher read what our scheduler did on the
//! real device.
//!
//! Each request of the log becomes `Q` (its process issued it; the executor inserts at once,
//! so there `I` carries the same time, while the submission engine of `mount` inserts when it
//! takes the request from its queue, or after a scheduler switch), `I` (into our scheduler),
//! `D` (our scheduler dispatched it to the device) and `C` (its completion was reaped). Events
//! are written in time order, as blktrace's per-CPU files are.

use std::path::Path;

use anyhow::Context;
use elevator_core::{CtxId, GroupId, IoPrio, Nanos, Request, RequestId};
use elevator_real::{RequestRecord, RunReport};
use elevator_workload::traces::blktrace_out::{BlktraceWriter, IoEvent, IoObserver};

/// Write `report`'s request log to `<dir>/<device>.blktrace.0`, each job a process (pid = job
/// index + 1, the job's name as its command); the number of events.
pub fn write(dir: &Path, device: &str, report: &RunReport) -> anyhow::Result<u64> {
    let processes: Vec<(u32, &str)> = report
        .jobs
        .iter()
        .enumerate()
        .map(|(i, job)| (i as u32 + 1, job.name.as_str()))
        .collect();
    write_log(dir, device, &processes, &report.requests)
}

/// Write `requests` to `<dir>/<device>.blktrace.0`: a record's `job` indexes `processes`,
/// (pid, command name); the number of events.
pub fn write_log(
    dir: &Path,
    device: &str,
    processes: &[(u32, &str)],
    requests: &[RequestRecord],
) -> anyhow::Result<u64> {
    let mut w = BlktraceWriter::create(dir, device)
        .with_context(|| format!("--blktrace-out {}", dir.display()))?;
    for (i, (pid, name)) in processes.iter().enumerate() {
        w.process(CtxId(i as u32), *pid, name, Nanos::ZERO);
    }
    let mut events: Vec<(Nanos, u8, usize, IoEvent)> = Vec::with_capacity(requests.len() * 4);
    for (n, r) in requests.iter().enumerate() {
        events.push((r.queued, 0, n, IoEvent::Queue));
        events.push((r.inserted, 1, n, IoEvent::Insert));
        events.push((r.dispatched, 2, n, IoEvent::Issue));
        events.push((r.completed, 3, n, IoEvent::Complete));
    }
    // By time; at one instant a request's own events in Q, I, D, C order.
    events.sort_by_key(|&(t, stage, n, _)| (t, n, stage));
    for (t, _, n, ev) in events {
        let r = &requests[n];
        let rq = Request {
            id: RequestId(n as u64),
            ctx: CtxId(r.job as u32),
            group: GroupId::ROOT,
            op: r.op,
            sync: r.op.is_read(),
            meta: false,
            idle_hint: false,
            sector: r.sector,
            sectors: r.sectors,
            prio: IoPrio::default(),
            submitted: r.queued,
            cpu: 0,
        };
        w.event(ev, &rq, t);
    }
    let events = w.events;
    w.finish()
        .with_context(|| format!("--blktrace-out: write {}", w.path().display()))?;
    Ok(events)
}
