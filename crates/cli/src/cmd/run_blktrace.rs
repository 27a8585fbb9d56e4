//! `elevator run --blktrace-out DIR`: the executor's request log as a blktrace (version 7),
//! so blkparse, btt and iowatcher read what our scheduler did on the real device.
//!
//! Each request of the log becomes `Q` (its job issued it: the executor inserts at once, so
//! `I` carries the same time), `D` (our scheduler dispatched it to the device) and `C` (its
//! completion was reaped), with the job as the process: pid = job index + 1, the job's name as
//! its command. Events are written in time order, as blktrace's per-CPU files are.

use std::path::Path;

use anyhow::Context;
use elevator_core::{CtxId, GroupId, IoPrio, Nanos, Request, RequestId};
use elevator_real::RunReport;
use elevator_workload::traces::blktrace_out::{BlktraceWriter, IoEvent, IoObserver};

/// Write `report`'s request log to `<dir>/<device>.blktrace.0`; the number of events.
pub fn write(dir: &Path, device: &str, report: &RunReport) -> anyhow::Result<u64> {
    let mut w = BlktraceWriter::create(dir, device)
        .with_context(|| format!("--blktrace-out {}", dir.display()))?;
    for (i, job) in report.jobs.iter().enumerate() {
        w.process(CtxId(i as u32 + 1), i as u32 + 1, &job.name, Nanos::ZERO);
    }
    let mut events: Vec<(Nanos, u8, usize, IoEvent)> =
        Vec::with_capacity(report.requests.len() * 4);
    for (n, r) in report.requests.iter().enumerate() {
        events.push((r.inserted, 0, n, IoEvent::Queue));
        events.push((r.inserted, 1, n, IoEvent::Insert));
        events.push((r.dispatched, 2, n, IoEvent::Issue));
        events.push((r.completed, 3, n, IoEvent::Complete));
    }
    // By time; at one instant a request's own events in Q, I, D, C order.
    events.sort_by_key(|&(t, stage, n, _)| (t, n, stage));
    for (t, _, n, ev) in events {
        let r = &report.requests[n];
        let rq = Request {
            id: RequestId(n as u64),
            ctx: CtxId(r.job as u32 + 1),
            group: GroupId::ROOT,
            op: r.op,
            sync: r.op.is_read(),
            meta: false,
            idle_hint: false,
            sector: r.sector,
            sectors: r.sectors,
            prio: IoPrio::default(),
            submitted: r.inserted,
        };
        w.event(ev, &rq, t);
    }
    let events = w.events;
    w.finish()
        .with_context(|| format!("--blktrace-out: write {}", w.path().display()))?;
    Ok(events)
}
