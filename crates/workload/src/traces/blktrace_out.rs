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

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use elevator_core::{CtxId, Nanos, Op, Request};

use super::blktrace::{cat, encode_v7, BlkAction, BlkEvent};

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
    device: u32,
    sequence: u32,
    pids: HashMap<CtxId, u32>,
    buf: Vec<u8>,
    error: Option<std::io::Error>,
    /// Events written.
    pub events: u64,
}

impl BlktraceWriter {
    /// Create `<dir>/<device>.blktrace.0` (the directory too), replacing an older one.
    pub fn create(dir: &Path, device: &str) -> std::io::Result<BlktraceWriter> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{device}.blktrace.0"));
        let f = crate::input::create_output(&path)?;
        Ok(BlktraceWriter {
            path,
            out: Some(BufWriter::with_capacity(1 << 16, f)),
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

    /// Flush and close; the first write error, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.out.take() {
            Some(mut out) => out.flush(),
            None => Ok(()),
        }
    }
}

impl IoObserver for BlktraceWriter {
    fn process(&mut self, ctx: CtxId, pid: u32, name: &str, now: Nanos) {
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
            pid: self.pids.get(&rq.ctx).copied().unwrap_or(rq.ctx.0),
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
