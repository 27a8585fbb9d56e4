//! `ReplayJob`: a recorded trace ([`RecordSource`], any format) replayed as the processes it
//! recorded, open or closed loop; what `elevator replay` runs.
//!
//! Each of the trace's processes (pids for blktrace, files for fio, volumes or disks for the
//! block-level traces) is one context of the job, so schedulers that work per process (AS,
//! CFQ, BFQ) see them as the trace saw them.
//!
//! **Open loop**: every request goes out at its recorded time divided by `speed`, whatever the
//! device does.
//!
//! **Closed loop**: a synchronous request of a process waits for that process's previous
//! synchronous request to complete, then for the think time the trace recorded between them:
//! `t(i) - (t(i-1) + s(i-1))` where `s` is the recorded service time (blktrace's D->C, MSR's
//! response time). Where the trace records no completion, the request goes out at its
//! recorded time or at the previous one's completion, whichever is later. Asynchronous
//! requests (writes not marked sync) keep their recorded timing. Times and think gaps are
//! divided by `speed`.
//!
//! The trace is read through a window of at most [`WINDOW`] records (a process whose next
//! request lies beyond it sees it when the window reaches it), so a trace of any length
//! replays in bounded memory. Sectors beyond the device wrap (`sector mod (capacity -
//! length)`); zero-length requests other than flushes are skipped, and so are flushes and
//! discards (the device models serve reads and writes). Figures per process are kept in
//! [`ReplayOutcome`], shared with the caller, with any error the trace hit mid-way.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::rc::Rc;

use elevator_core::{Nanos, Op, SECTOR_BYTES};

use crate::input::InputError;
use crate::job::{Action, IoSpec, Job};
use crate::metrics::JobMetrics;
use crate::traces::{RecordSource, TraceRecord};

/// Records read ahead of the replay at most.
pub const WINDOW: usize = 1 << 18;

/// Processes given their own context and figures at most; the trace's later processes share
/// one more ([`OTHERS_PID`]), so per-process state stays bounded whatever the trace holds.
pub const MAX_PROCESSES: usize = 4096;

/// The largest request replayed, in sectors (64 MiB): the block layer splits larger bios at
/// the device's max_sectors, and a real target's buffer is allocated per request, so a trace
/// of 2 TiB requests is refused (naming the request) instead of allocating 2 TiB.
pub const MAX_REQUEST_SECTORS: u32 = 1 << 17;

/// The most pids the replay remembers (about 20 MB): the processes past [`MAX_PROCESSES`] are
/// counted one by one ([`ReplayOutcome::merged_processes`]) while there is room; a pid past
/// this many cannot be told from one seen before, so its requests are counted instead
/// ([`ReplayOutcome::merged_untracked`]).
pub const MAX_TRACKED_PIDS: usize = 1 << 20;

/// The pid reported for the processes past [`MAX_PROCESSES`], which share one context.
pub const OTHERS_PID: u32 = u32::MAX;

/// Requests outstanding at most in an open-loop replay: a trace that arrives faster than the
/// device serves waits here (backpressure, counted in [`ReplayOutcome::held_back`]) instead of
/// queueing without bound.
pub const MAX_OUTSTANDING: usize = 1 << 16;

/// How to replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayOptions {
    /// Closed loop (see the module documentation); open loop otherwise.
    pub closed_loop: bool,
    /// Divide recorded times and gaps by this (> 0): 2 replays twice as fast.
    pub speed: f64,
    /// The device's size in sectors (requests beyond it wrap).
    pub capacity_sectors: u64,
    /// Replay at most this many requests.
    pub max_requests: Option<u64>,
}

/// One process of the trace, as replayed.
#[derive(Clone, Debug, Default)]
pub struct ProcessOutcome {
    /// Its id in the trace.
    pub pid: u32,
    /// Its command name, when the trace gives one.
    pub name: Option<String>,
    /// What it got.
    pub metrics: JobMetrics,
}

/// What a replay produced, filled while it runs.
#[derive(Clone, Debug, Default)]
pub struct ReplayOutcome {
    /// Per process, in order of first appearance.
    pub processes: Vec<ProcessOutcome>,
    /// Requests issued.
    pub issued: u64,
    /// Records the replay skipped: flushes, discards and requests of no sectors that the
    /// reader passed on (blktrace's).
    pub skipped: u64,
    /// Records of length 0 the reader skipped below the replay (MSR, SPC, Alibaba, Tencent
    /// lines of size 0: [`RecordSource::zero_length`]), counted so that a replay can say so.
    pub zero_length: u64,
    /// The error that cut the trace short, if any.
    pub error: Option<InputError>,
    /// Processes past [`MAX_PROCESSES`], replayed in one shared context, each counted once
    /// (a lower bound when [`merged_untracked`](Self::merged_untracked) is not 0).
    pub merged_processes: u64,
    /// Requests of the shared context from pids past [`MAX_TRACKED_PIDS`], which cannot be
    /// told from pids seen before (the processes they came from are not counted).
    pub merged_untracked: u64,
    /// Records stamped earlier than the record before them (the trace is not in time
    /// order; they went out at once, behind the later one).
    pub out_of_order: u64,
    /// Where the first of them is in the trace.
    pub first_out_of_order: Option<crate::traces::RecordAt>,
    /// Records that repeat one just before them exactly
    /// ([`RecordSource::duplicates`]): replayed, counted so that a replay can say so.
    pub duplicates: u64,
    /// Where the first of them is in the trace.
    pub first_duplicate: Option<crate::traces::RecordAt>,
    /// Times the replay waited because [`MAX_OUTSTANDING`] requests were outstanding (the
    /// device fell behind the trace; those requests went out later than recorded).
    pub held_back: u64,
    /// Requests that lay (wholly or partly) beyond the device's end and were wrapped into it
    /// (`sector mod (capacity - length + 1)`), or cut to the device's size: the trace was
    /// recorded on a larger device. Counted so a replay can say so.
    pub wrapped: u64,
}

impl ReplayOutcome {
    /// A process's label for reports: `pid` or `pid (name)`, the name cut to 32 characters
    /// (a trace's command name can be any length; a table row must not be).
    /// Control characters in the name (a NUL, an escape sequence a trace's `[comm]` carries)
    /// are shown escaped (`\u{1b}`), never sent raw to the terminal the table is printed on.
    pub fn label(p: &ProcessOutcome) -> String {
        let Some(n) = &p.name else {
            return p.pid.to_string();
        };
        let mut shown: String = n
            .chars()
            .take(32)
            .flat_map(|c| {
                let escaped = c.is_control().then(|| c.escape_debug().to_string());
                escaped
                    .unwrap_or_else(|| c.to_string())
                    .chars()
                    .collect::<Vec<_>>()
            })
            .collect();
        if n.chars().nth(32).is_some() {
            shown.push_str("...");
        }
        format!("{} ({shown})", p.pid)
    }
}

#[derive(Default)]
struct Proc {
    /// Synchronous requests waiting their turn (closed loop).
    queue: VecDeque<TraceRecord>,
    /// A synchronous request of this process is outstanding.
    busy: bool,
    /// The previous synchronous request: its completion here, its recorded time and service.
    last: Option<(Nanos, Nanos, Option<Nanos>)>,
    /// Whether it has an entry in the ready heap.
    armed: bool,
}

struct InFlight {
    ctx: u32,
    op: Op,
    bytes: u64,
    issued: Nanos,
    sync_in_closed_loop: bool,
    record: TraceRecord,
}

/// A trace replay. See the module documentation.
pub struct ReplayJob {
    name: String,
    source: Box<dyn RecordSource>,
    opts: ReplayOptions,
    start: Option<Nanos>,
    exhausted: bool,
    read: u64,
    /// Requests due at their recorded time (all of them in open loop).
    timed: VecDeque<(u32, TraceRecord)>,
    buffered: usize,
    procs: Vec<Proc>,
    ctx_of: HashMap<u32, u32>,
    /// Closed loop: processes whose head request is due at a time: (due, seq, ctx).
    ready: BinaryHeap<Reverse<(Nanos, u64, u32)>>,
    seq: u64,
    in_flight: HashMap<u64, InFlight>,
    next_tag: u64,
    out: Rc<RefCell<ReplayOutcome>>,
}

impl ReplayJob {
    /// A replay of `source`; the returned outcome fills as it runs.
    pub fn new(
        name: &str,
        source: Box<dyn RecordSource>,
        opts: ReplayOptions,
    ) -> Result<(ReplayJob, Rc<RefCell<ReplayOutcome>>), String> {
        if !(opts.speed.is_finite() && opts.speed > 0.0) {
            return Err(format!("speed {} must be a finite number > 0", opts.speed));
        }
        if opts.capacity_sectors == 0 {
            return Err("the device has no capacity".into());
        }
        let out = Rc::new(RefCell::new(ReplayOutcome::default()));
        Ok((
            ReplayJob {
                name: name.to_string(),
                source,
                opts,
                start: None,
                exhausted: false,
                read: 0,
                timed: VecDeque::new(),
                buffered: 0,
                procs: Vec::new(),
                ctx_of: HashMap::new(),
                ready: BinaryHeap::new(),
                seq: 0,
                in_flight: HashMap::new(),
                next_tag: 0,
                out: out.clone(),
            },
            out,
        ))
    }

    fn scaled(&self, t: Nanos) -> Nanos {
        if self.opts.speed == 1.0 {
            t
        } else {
            Nanos((t.as_ns() as f64 / self.opts.speed) as u64)
        }
    }

    fn ctx(&mut self, pid: u32) -> u32 {
        if let Some(&c) = self.ctx_of.get(&pid) {
            return c;
        }
        if self.procs.len() > MAX_PROCESSES {
            // The shared context of the processes past the limit (the last one made). A pid
            // is counted once: remembered while there is room (each request of a pid not
            // remembered was counted as one more process: 27,713 for 15,904).
            let c = MAX_PROCESSES as u32;
            let mut out = self.out.borrow_mut();
            if self.ctx_of.len() < MAX_TRACKED_PIDS {
                self.ctx_of.insert(pid, c);
                out.merged_processes += 1;
            } else {
                out.merged_untracked += 1;
            }
            return c;
        }
        let c = self.procs.len() as u32;
        self.procs.push(Proc::default());
        if self.procs.len() > MAX_PROCESSES {
            self.out.borrow_mut().processes.push(ProcessOutcome {
                pid: OTHERS_PID,
                name: Some(format!("processes past the first {MAX_PROCESSES}")),
                ..Default::default()
            });
            self.out.borrow_mut().merged_processes += 1;
            self.ctx_of.insert(pid, c);
        } else {
            self.ctx_of.insert(pid, c);
            self.out.borrow_mut().processes.push(ProcessOutcome {
                pid,
                ..Default::default()
            });
        }
        c
    }

    /// Read records into the window.
    fn refill(&mut self, now: Nanos) {
        while !self.exhausted && self.buffered < WINDOW {
            if self.opts.max_requests.is_some_and(|m| self.read >= m) {
                self.exhausted = true;
                break;
            }
            match self.source.next() {
                None => self.exhausted = true,
                Some(Err(e)) => {
                    self.out.borrow_mut().error = Some(e);
                    self.exhausted = true;
                }
                Some(Ok(r)) => {
                    if !matches!(r.op, Op::Read | Op::Write) || r.sectors == 0 {
                        self.out.borrow_mut().skipped += 1;
                        continue;
                    }
                    if r.sectors > MAX_REQUEST_SECTORS {
                        // Not in whole MiB alone: 131,073 sectors read "64 MiB; at most 64".
                        let mib = match r.sectors % 2048 {
                            0 => format!("{}", r.sectors / 2048),
                            _ => format!("{:.4}", f64::from(r.sectors) / 2048.0),
                        };
                        let message = format!(
                            "request {} (at sector {}) is {} sectors ({mib} MiB); elevator \
                             replays requests of at most {MAX_REQUEST_SECTORS} sectors, {} MiB \
                             (the block layer splits larger ones)",
                            self.read + 1,
                            r.sector,
                            r.sectors,
                            MAX_REQUEST_SECTORS >> 11
                        );
                        // Named by its file and line (or byte), as every other bad record is.
                        let e = match self.source.last_at() {
                            Some(at) => at.error_in("size", message),
                            None => InputError::new("the trace", message).in_field("size"),
                        };
                        self.out.borrow_mut().error = Some(e);
                        self.exhausted = true;
                        break;
                    }
                    self.read += 1;
                    self.buffered += 1;
                    let ctx = self.ctx(r.process);
                    if self.opts.closed_loop && r.sync {
                        self.procs[ctx as usize].queue.push_back(r);
                        self.arm(ctx, now);
                    } else {
                        self.timed.push_back((ctx, r));
                    }
                }
            }
        }
        // Counted however the reading ended (the trace's end, an error, --max-requests).
        let mut out = self.out.borrow_mut();
        out.zero_length = self.source.zero_length();
        out.out_of_order = self.source.out_of_order();
        if out.first_out_of_order.is_none() && out.out_of_order > 0 {
            out.first_out_of_order = self.source.first_out_of_order();
        }
        out.duplicates = self.source.duplicates();
        if out.first_duplicate.is_none() && out.duplicates > 0 {
            out.first_duplicate = self.source.first_duplicate();
        }
    }

    /// Put process `ctx` in the ready heap if its head request may be scheduled.
    fn arm(&mut self, ctx: u32, now: Nanos) {
        let start = self.start.unwrap_or(now);
        let p = &self.procs[ctx as usize];
        if p.busy || p.armed {
            return;
        }
        let Some(head) = p.queue.front() else { return };
        let recorded = start + self.scaled(head.time);
        let due = match p.last {
            None => recorded,
            Some((done, t_prev, Some(s_prev))) => {
                let think = head.time.saturating_sub(t_prev.saturating_add(s_prev));
                done + self.scaled(think)
            }
            Some((done, _, None)) => recorded.max(done),
        };
        self.seq += 1;
        self.ready.push(Reverse((due, self.seq, ctx)));
        self.procs[ctx as usize].armed = true;
    }

    fn issue(&mut self, ctx: u32, r: TraceRecord, now: Nanos, closed: bool) -> Action {
        self.buffered -= 1;
        let cap = self.opts.capacity_sectors;
        let len = u64::from(r.sectors).min(cap);
        // Checked: a sector at the top of the address space must wrap like any other past
        // the device's end, not overflow into a small in-range sector.
        let sector = if r.sector.checked_add(len).is_some_and(|end| end <= cap) {
            r.sector
        } else {
            r.sector % (cap - len + 1)
        };
        if sector != r.sector || len != u64::from(r.sectors) {
            self.out.borrow_mut().wrapped += 1;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        self.in_flight.insert(
            tag,
            InFlight {
                ctx,
                op: r.op,
                bytes: len * SECTOR_BYTES,
                issued: now,
                sync_in_closed_loop: closed,
                record: r,
            },
        );
        self.out.borrow_mut().issued += 1;
        Action::Issue(IoSpec {
            ctx,
            op: r.op,
            sync: r.sync,
            meta: r.meta,
            idle_hint: false,
            sector,
            sectors: len as u32,
            prio: None,
            tag,
        })
    }
}

impl Job for ReplayJob {
    fn name(&self) -> &str {
        &self.name
    }

    fn error(&self) -> Option<String> {
        self.out.borrow().error.as_ref().map(|e| e.to_string())
    }

    fn poll(&mut self, now: Nanos) -> Action {
        let start = *self.start.get_or_insert(now);
        self.refill(now);
        if self.in_flight.len() >= MAX_OUTSTANDING {
            // Backpressure: the device is this far behind the trace.
            self.out.borrow_mut().held_back += 1;
            return Action::Wait;
        }
        if let Some(&(ctx, r)) = self.timed.front() {
            if start + self.scaled(r.time) <= now {
                self.timed.pop_front();
                return self.issue(ctx, r, now, false);
            }
        }
        if let Some(&Reverse((due, _, ctx))) = self.ready.peek() {
            if due <= now {
                self.ready.pop();
                let p = &mut self.procs[ctx as usize];
                p.armed = false;
                p.busy = true;
                let r = p.queue.pop_front().expect("an armed process has a request");
                return self.issue(ctx, r, now, true);
            }
        }
        let next_timed = self
            .timed
            .front()
            .map(|&(_, r)| start + self.scaled(r.time));
        let next_ready = self.ready.peek().map(|&Reverse((d, _, _))| d);
        match (next_timed, next_ready) {
            (Some(a), Some(b)) => Action::Think { until: a.min(b) },
            (Some(a), None) | (None, Some(a)) => Action::Think { until: a },
            (None, None) if !self.in_flight.is_empty() => Action::Wait,
            (None, None) if self.exhausted => Action::Done,
            // The window is full of requests of busy processes: wait for a completion.
            (None, None) => Action::Wait,
        }
    }

    fn complete(&mut self, tag: u64, now: Nanos) {
        let Some(f) = self.in_flight.remove(&tag) else {
            return;
        };
        {
            let mut out = self.out.borrow_mut();
            let p = &mut out.processes[f.ctx as usize];
            if p.metrics.read.ios + p.metrics.write.ios == 0 {
                p.metrics.started = f.issued;
            }
            p.metrics
                .record(f.op, f.bytes, now.saturating_sub(f.issued));
            p.metrics.finished = Some(now);
            if p.name.is_none() {
                p.name = self.source.process_name(p.pid);
            }
        }
        if f.sync_in_closed_loop {
            let p = &mut self.procs[f.ctx as usize];
            p.busy = false;
            p.last = Some((now, f.record.time, f.record.service));
            self.arm(f.ctx, now);
        }
    }

    fn ctx_label(&self, ctx: u32) -> Option<(u32, String)> {
        let out = self.out.borrow();
        let p = out.processes.get(ctx as usize)?;
        let name = self
            .source
            .process_name(p.pid)
            .unwrap_or_else(|| format!("{}.{}", self.name, p.pid));
        Some((p.pid, name))
    }
}

/// The handle on a running replay's figures.
pub type SharedOutcome = Rc<RefCell<ReplayOutcome>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::HandDriver;

    struct Records(std::vec::IntoIter<TraceRecord>);
    impl Iterator for Records {
        type Item = Result<TraceRecord, InputError>;
        fn next(&mut self) -> Option<Self::Item> {
            self.0.next().map(Ok)
        }
    }
    impl RecordSource for Records {}

    fn rec(t_ms: u64, pid: u32, op: Op, sync: bool, service_ms: Option<u64>) -> TraceRecord {
        TraceRecord {
            time: Nanos::from_ms(t_ms),
            process: pid,
            device: 0,
            op,
            sync,
            meta: false,
            sector: 1000 * t_ms,
            sectors: 8,
            service: service_ms.map(Nanos::from_ms),
        }
    }

    fn job(recs: Vec<TraceRecord>, closed_loop: bool, speed: f64) -> (ReplayJob, SharedOutcome) {
        ReplayJob::new(
            "r",
            Box::new(Records(recs.into_iter())),
            ReplayOptions {
                closed_loop,
                speed,
                capacity_sectors: 1 << 30,
                max_requests: None,
            },
        )
        .unwrap()
    }

    fn issue_times(
        recs: Vec<TraceRecord>,
        closed: bool,
        speed: f64,
        service_ms: u64,
    ) -> Vec<(u64, u32)> {
        let (mut j, _) = job(recs, closed, speed);
        let rec = HandDriver::new(8, Nanos::from_ms(service_ms), Nanos::from_secs(100)).run(&mut j);
        rec.issued
            .iter()
            .map(|i| (i.at.as_ms(), i.spec.ctx))
            .collect()
    }

    #[test]
    fn open_loop_keeps_recorded_times_scaled_by_speed() {
        let recs = vec![
            rec(0, 7, Op::Read, true, None),
            rec(2, 7, Op::Read, true, None),
            rec(4, 9, Op::Write, false, None),
        ];
        assert_eq!(
            issue_times(recs.clone(), false, 1.0, 10),
            vec![(0, 0), (2, 0), (4, 1)]
        );
        assert_eq!(
            issue_times(recs, false, 2.0, 10),
            vec![(0, 0), (1, 0), (2, 1)]
        );
    }

    #[test]
    fn closed_loop_waits_for_completion_plus_the_recorded_think_time() {
        // pid 7: reads at 0 and 10 ms, the first served in 4 ms on the traced device: 6 ms of
        // think. Our device takes 20 ms, so the second read goes out at 20 + 6 = 26 ms.
        // pid 9's asynchronous write keeps its time (5 ms); pid 8's read is independent (3 ms).
        let recs = vec![
            rec(0, 7, Op::Read, true, Some(4)),
            rec(3, 8, Op::Read, true, None),
            rec(5, 9, Op::Write, false, None),
            rec(10, 7, Op::Read, true, Some(4)),
        ];
        assert_eq!(
            issue_times(recs.clone(), true, 1.0, 20),
            vec![(0, 0), (3, 1), (5, 2), (26, 0)]
        );
        // Without a recorded service time: the recorded time or the completion, the later.
        let mut no_s = recs.clone();
        no_s[0].service = None;
        assert_eq!(issue_times(no_s.clone(), true, 1.0, 20)[3], (20, 0));
        assert_eq!(issue_times(no_s, true, 1.0, 1)[3], (10, 0));
        // Speed divides the think time too: 26 -> 20 + 3.
        assert_eq!(issue_times(recs, true, 2.0, 20)[3], (23, 0));
    }

    #[test]
    fn per_process_figures_and_skipped_records() {
        let mut flush = rec(1, 7, Op::Flush, true, None);
        flush.sectors = 0;
        let recs = vec![
            rec(0, 7, Op::Read, true, None),
            flush,
            rec(2, 9, Op::Write, false, None),
        ];
        let (mut j, out) = job(recs, false, 1.0);
        HandDriver::new(8, Nanos::from_ms(5), Nanos::from_secs(100)).run(&mut j);
        let out = out.borrow();
        assert_eq!((out.issued, out.skipped), (2, 1));
        assert_eq!(out.processes.len(), 2);
        assert_eq!(out.processes[0].metrics.read.ios, 1);
        assert_eq!(out.processes[1].metrics.write.ios, 1);
        assert_eq!(out.processes[1].pid, 9);
    }

    #[test]
    fn sectors_beyond_the_device_wrap_inside_it() {
        let mut r = rec(0, 1, Op::Read, true, None);
        r.sector = (1 << 30) - 4;
        let (mut j, _) = job(vec![r], false, 1.0);
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(1)).run(&mut j);
        let s = &rec.issued[0].spec;
        assert!(s.sector + u64::from(s.sectors) <= 1 << 30);
    }

    /// Sectors beyond the device's end (a trace of a larger device) are wrapped, and counted
    /// so the replay says so instead of replaying other positions without a word; a request
    /// inside the device is not counted.
    #[test]
    fn sectors_beyond_the_device_are_counted_as_wrapped_not_silent() {
        let mut beyond = rec(0, 1, Op::Read, true, None);
        beyond.sector = 99_999_999_999;
        let inside = rec(1, 1, Op::Read, true, None);
        let (mut j, out) = job(vec![beyond, inside], false, 1.0);
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(1)).run(&mut j);
        assert_eq!(rec.issued.len(), 2);
        assert_eq!(out.borrow().wrapped, 1);
    }

    #[test]
    fn bad_speed_is_refused() {
        let bad = ReplayJob::new(
            "r",
            Box::new(Records(vec![].into_iter())),
            ReplayOptions {
                closed_loop: false,
                speed: 0.0,
                capacity_sectors: 1,
                max_requests: None,
            },
        );
        assert!(bad.is_err());
    }

    /// A request whose sector + length overflows 64 bits wraps onto the device like any other
    /// request past its end: it never reaches the model outside the device.
    #[test]
    fn a_request_at_the_top_of_the_address_space_wraps_inside_the_device() {
        let recs = vec![TraceRecord {
            time: Nanos::ZERO,
            process: 1,
            device: 0,
            op: Op::Read,
            sync: true,
            meta: false,
            sector: u64::MAX - 3,
            sectors: 8,
            service: None,
        }];
        let source: Box<dyn RecordSource> = Box::new(Records(recs.into_iter()));
        let (mut job, _) = ReplayJob::new(
            "r",
            source,
            ReplayOptions {
                closed_loop: false,
                speed: 1.0,
                capacity_sectors: 1000,
                max_requests: None,
            },
        )
        .unwrap();
        match job.poll(Nanos::ZERO) {
            Action::Issue(io) => assert!(io.sector + u64::from(io.sectors) <= 1000, "{io:?}"),
            other => panic!("{other:?}"),
        }
    }

    fn open_loop(recs: Vec<TraceRecord>) -> (ReplayJob, Rc<RefCell<ReplayOutcome>>) {
        let source: Box<dyn RecordSource> = Box::new(Records(recs.into_iter()));
        ReplayJob::new(
            "r",
            source,
            ReplayOptions {
                closed_loop: false,
                speed: 1.0,
                capacity_sectors: 1 << 30,
                max_requests: None,
            },
        )
        .unwrap()
    }

    fn read_by(pid: u32, i: u64) -> TraceRecord {
        TraceRecord {
            time: Nanos::ZERO,
            process: pid,
            device: 0,
            op: Op::Read,
            sync: true,
            meta: false,
            sector: i * 8,
            sectors: 8,
            service: None,
        }
    }

    /// Tens of thousands of processes in a trace do not each get a context and two
    /// histograms: past MAX_PROCESSES they share one, and the outcome says how many.
    #[test]
    fn a_trace_of_20000_processes_keeps_bounded_per_process_state() {
        let recs: Vec<TraceRecord> = (0..20_000u32).map(|p| read_by(p, u64::from(p))).collect();
        let (mut job, out) = open_loop(recs);
        let mut tags = Vec::new();
        loop {
            match job.poll(Nanos::ZERO) {
                Action::Issue(io) => {
                    assert!(io.ctx as usize <= MAX_PROCESSES, "{io:?}");
                    tags.push(io.tag);
                }
                Action::Done => break,
                _ => {
                    for t in tags.drain(..) {
                        job.complete(t, Nanos(1000));
                    }
                }
            }
        }
        let out = out.borrow();
        assert_eq!(out.processes.len(), MAX_PROCESSES + 1);
        assert_eq!(out.processes[MAX_PROCESSES].pid, OTHERS_PID);
        assert_eq!(out.merged_processes, 20_000 - MAX_PROCESSES as u64);
        assert_eq!(out.issued, 20_000);
    }

    /// Processes past the bound that issue more than one request were counted once per
    /// request past the 8192nd pid (20,000 processes of two requests each: 27,713 "processes
    /// replayed as one" for 15,904): now each pid is counted once.
    #[test]
    fn processes_past_the_bound_are_counted_once_each_not_per_request() {
        let recs: Vec<TraceRecord> = (0..40_000u64).map(|i| read_by((i / 2) as u32, i)).collect();
        let (mut job, out) = open_loop(recs);
        let mut tags = Vec::new();
        loop {
            match job.poll(Nanos::ZERO) {
                Action::Issue(io) => tags.push(io.tag),
                Action::Done => break,
                _ => {
                    for t in tags.drain(..) {
                        job.complete(t, Nanos(1000));
                    }
                }
            }
        }
        let out = out.borrow();
        assert_eq!(out.merged_processes, 20_000 - MAX_PROCESSES as u64);
        assert_eq!(out.merged_untracked, 0);
        assert_eq!(out.issued, 40_000);
    }

    /// An open-loop replay that arrives faster than the device serves holds at most
    /// MAX_OUTSTANDING requests, then waits (counted), instead of queueing without bound.
    #[test]
    fn an_open_loop_replay_faster_than_the_device_applies_backpressure() {
        let n = MAX_OUTSTANDING as u64 + 100;
        let recs: Vec<TraceRecord> = (0..n).map(|i| read_by(1, i)).collect();
        let (mut job, out) = open_loop(recs);
        let mut issued = Vec::new();
        loop {
            match job.poll(Nanos::ZERO) {
                Action::Issue(io) => issued.push(io.tag),
                Action::Wait => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(issued.len(), MAX_OUTSTANDING);
        assert_eq!(out.borrow().held_back, 1);
        job.complete(issued[0], Nanos(10));
        assert!(matches!(job.poll(Nanos(10)), Action::Issue(_)));
    }

    #[test]
    fn a_60_kb_command_name_is_cut_in_labels() {
        let p = ProcessOutcome {
            pid: 7,
            name: Some("x".repeat(60_000)),
            ..Default::default()
        };
        assert!(ReplayOutcome::label(&p).len() < 64);
    }

    /// A name with an escape sequence (`[\x1b]2;title\x07]` in a blkparse `[comm]`) or a NUL
    /// was printed raw into the table: the terminal ran the sequence. Now shown escaped.
    #[test]
    fn control_characters_in_a_name_are_escaped_in_labels() {
        let p = ProcessOutcome {
            pid: 7,
            name: Some("a\u{1b}]2;x\u{7}\0b".into()),
            ..Default::default()
        };
        let l = ReplayOutcome::label(&p);
        assert!(!l.chars().any(char::is_control), "{l:?}");
        assert_eq!(l, "7 (a\\u{1b}]2;x\\u{7}\\0b)");
    }

    /// A trace of 2 TiB reads is refused naming the request, not allocated per request.
    #[test]
    fn a_request_of_2_tib_is_refused_naming_it() {
        let mut r = read_by(1, 0);
        r.sectors = u32::MAX;
        let (mut job, out) = open_loop(vec![read_by(1, 1), r]);
        assert!(matches!(job.poll(Nanos::ZERO), Action::Issue(_)));
        let e = out.borrow().error.clone().expect("an error");
        assert_eq!(e.field, "size");
        assert!(e.message.contains("request 2"), "{e}");
    }
}
