//! Our own requests written as a blktrace, so blkparse, btt and iowatcher read what a
//! scheduler did.
//!
//! A driver (the simulator, the real executor) reports each request's life to an
//! [`IoObserver`]: queued by its process (`Q`), merged into a queued request (`M`), inserted
//! into the scheduler (`I`), dispatched to the device (`D`), completed (`C`). [`BlktraceWriter`]
//! writes them as version-7 little-endian records into `<dir>/<device>.blktrace.0` (one CPU),
//! with a process notification (`BLK_TN_PROCESS`, the 16-byte command name) the first time a
//! process appears, so `blkparse -i <dir>/<device>` prints every line with its command. The
//! device number is 8,0 unless set; times are the driver's clock in nanoseconds.
//!
//! A process number past [`PID_MAX_LIMIT`] (a replayed trace's volume or disk number, the
//! replay's shared context of the processes past its 4096th, `u32::MAX`) is written as
//! `PID_MAX_LIMIT` itself, which no kernel hands out (pids are below `pid_max`, at most
//! `PID_MAX_LIMIT`): the file stays one a kernel could have written, so our reader (which
//! refuses larger pids: [`super::kernel_limits`]) reads it back, those processes as one.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use elevator_core::{CtxId, Nanos, Op, Request};

use super::blktrace::{cat, encode_v7, BlkAction, BlkEvent};
use super::kernel_limits::PID_MAX_LIMIT;

pub use elevator_core::block::{Event as IoEvent, Observer as IoObserver};

/// The blktrace action of a step.
fn action(event: IoEvent) -> BlkAction {
    match event {
        IoEvent::Queue => BlkAction::Queue,
        IoEvent::Merge => BlkAction::BackMerge,
        IoEvent::Insert => BlkAction::Insert,
        IoEvent::Issue => BlkAction::Issue,
        IoEvent::Complete => BlkAction::Complete,
    }
}

/// Writes a blktrace. See the module documentation.
pub struct BlktraceWriter {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    /// The temporary file beside `path` the trace is written to, renamed over it by
    /// [`finish`](BlktraceWriter::finish) (`None` for a FIFO or device, written in place).
    tmp: Option<crate::input::Temporary>,
    device: u32,
    sequence: u32,
    pids: HashMap<CtxId, u32>,
    buf: Vec<u8>,
    error: Option<std::io::Error>,
    /// Events written.
    pub events: u64,
}

impl BlktraceWriter {
    /// Create `<dir>/<device>.blktrace.0` (the directory too), replacing an older one when
    /// [`finish`](BlktraceWriter::finish) succeeds: the trace is written to a temporary file
    /// beside it (removed if the writer is dropped unfinished or a signal ends the process),
    /// so an interrupted run never leaves a cut trace under the promised name. A FIFO or a
    /// device there is written in place.
    pub fn create(dir: &Path, device: &str) -> std::io::Result<BlktraceWriter> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{device}.blktrace.0"));
        let target = crate::input::output_target(&path)?.unwrap_or_else(|| path.clone());
        let (f, tmp) = match std::fs::metadata(&target) {
            Ok(m) if !m.is_file() => (crate::input::create_output(&path)?, None),
            _ => {
                let (tmp, f) = crate::input::Temporary::create(
                    crate::input::temporary_beside(&target),
                    |p| File::create(p),
                )?;
                (f, Some(tmp))
            }
        };
        Ok(BlktraceWriter {
            path: target,
            out: Some(BufWriter::with_capacity(1 << 16, f)),
            tmp,
            device: 8 << 20,
            sequence: 0,
            pids: HashMap::new(),
            buf: Vec::with_capacity(128),
            error: None,
            events: 0,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, e: &BlkEvent, pdu: &[u8]) {
        self.buf.clear();
        encode_v7(e, pdu, &mut self.buf);
        if self.error.is_none() {
            if let Some(out) = self.out.as_mut() {
                if let Err(err) = out.write_all(&self.buf) {
                    self.error = Some(err);
                }
            }
        }
        self.events += 1;
    }

    /// Flush and close, then rename the trace into place; the first write error, if any
    /// (then the temporary file is removed and an older trace is left as it was).
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            self.out = None;
            self.tmp = None;
            return Err(e);
        }
        let done = match self.out.take() {
            Some(out) => {
                out.into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|f| match &self.tmp {
                        Some(_) => f.sync_all(),
                        None => Ok(()),
                    })
            }
            None => Ok(()),
        };
        match (done, self.tmp.take()) {
            (Ok(()), Some(tmp)) => tmp.commit(&self.path),
            (r, _) => r,
        }
    }
}

impl IoObserver for BlktraceWriter {
    fn process(&mut self, ctx: CtxId, pid: u32, name: &str, now: Nanos) {
        let pid = pid.min(PID_MAX_LIMIT);
        self.pids.insert(ctx, pid);
        // TASK_COMM_LEN: 16 bytes, NUL padded, at most 15 characters.
        let mut comm = [0u8; 16];
        let n = name.len().min(15);
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        let e = BlkEvent {
            time: now,
            sequence: 0,
            cpu: 0,
            device: self.device,
            pid,
            action: BlkAction::Notify(0),
            category: cat::NOTIFY,
            sector: 0,
            bytes: 0,
            error: 0,
            cgroup: None,
            remap: None,
        };
        self.write(&e, &comm);
    }

    fn event(&mut self, event: IoEvent, rq: &Request, now: Nanos) {
        let action = action(event);
        let mut category = action.category()
            | match rq.op {
                Op::Read => cat::READ,
                Op::Write => cat::WRITE,
                Op::Flush => cat::FLUSH,
                Op::Discard => cat::WRITE | cat::DISCARD,
            };
        if rq.sync && rq.op != Op::Read {
            category |= cat::SYNC;
        }
        if rq.meta {
            category |= cat::META;
        }
        self.sequence += 1;
        let e = BlkEvent {
            time: now,
            sequence: self.sequence,
            cpu: 0,
            device: self.device,
            pid: self
                .pids
                .get(&rq.ctx)
                .copied()
                .unwrap_or(rq.ctx.0.min(PID_MAX_LIMIT)),
            action,
            category,
            sector: rq.sector,
            bytes: rq.sectors.saturating_mul(512),
            error: 0,
            cgroup: None,
            remap: None,
        };
        self.write(&e, &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::blktrace::{BlkRequests, BlkView, EventReader, EventSource};
    use elevator_core::harness::rq;

    /// A writer dropped before `finish` (the run failed, or a signal's watcher removed its
    /// temporary) leaves no cut trace under the name and the older trace intact; `finish`
    /// renames the whole trace into place and leaves no temporary file.
    #[test]
    fn an_unfinished_trace_never_replaces_the_older_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sim.blktrace.0");
        std::fs::write(&path, b"older").unwrap();
        let mut w = BlktraceWriter::create(dir.path(), "sim").unwrap();
        w.process(CtxId(1), 1, "p", Nanos(0));
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), b"older");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "a temporary file was left");
        let mut w = BlktraceWriter::create(dir.path(), "sim").unwrap();
        w.process(CtxId(1), 1, "p", Nanos(0));
        w.finish().unwrap();
        assert_ne!(std::fs::read(&path).unwrap(), b"older");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "a temporary file was left");
    }

    #[test]
    fn what_we_write_our_reader_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = BlktraceWriter::create(dir.path(), "sim").unwrap();
        let read = rq(1, 3).sector(4096).at(Nanos(10)).build();
        w.process(CtxId(3), 4242, "a-rather-long-process-name", Nanos(0));
        for (ev, t) in [
            (IoEvent::Queue, 10),
            (IoEvent::Insert, 11),
            (IoEvent::Issue, 20),
            (IoEvent::Complete, 5020),
        ] {
            w.event(ev, &read, Nanos(t));
        }
        w.finish().unwrap();
        let path = dir.path().join("sim.blktrace.0");
        let mut events = EventReader::open(&path).unwrap();
        let all: Vec<BlkEvent> = events.by_ref().map(Result::unwrap).collect();
        assert_eq!(all.len(), 5);
        assert_eq!(
            events.process_name(4242).as_deref(),
            Some("a-rather-long-p")
        );
        assert!(all[1..]
            .iter()
            .all(|e| e.pid == 4242 && e.sector == 4096 && e.bytes == 4096));
        let d: Vec<_> = BlkRequests::new(EventReader::open(&path).unwrap(), BlkView::Dispatch)
            .map(Result::unwrap)
            .collect();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].service, Some(Nanos(5000)));
    }
}
