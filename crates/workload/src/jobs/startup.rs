//! `StartupJob`: an application's start-up I/O replayed from an S-suite trace
//! ([`StartupTrace`]), measuring its start-up time (the job's wall time).
//!
//! The S suite's `replay-startup-io` replays the trace **in trace order**, one thread per
//! original process: each thread issues its run of consecutive requests, then hands over to the
//! thread of the next request. `RA` (readahead) requests are submitted asynchronously; any other
//! request is a synchronous read, issued after the same thread's pending readaheads have
//! completed, and the replay goes on only once it has completed. The last request of the trace
//! is always synchronous. This job does the same, with one context per original process
//! (contexts numbered in order of first appearance) and [`Action::Exit`] for a process once all
//! its requests have completed. `order = "process"` instead lets every process replay its own
//! requests concurrently (each still dependent within its process).
//!
//! **Think time.** Before each request the job thinks `think_scale` × the recorded time since the
//! previous request of its stream (the previous line in trace order; the same process's
//! previous request with `order = "process"`). The recorded gaps include the recording
//! machine's own service times, so `think_scale = 1` over-counts a little. Note: the suite's
//! replayer, as published, converts the gap into a `timespec` with seconds and nanoseconds
//! swapped, so it effectively never sleeps; `think_scale = 0` reproduces that.
//!
//! **Placement.** `placement = "trace"` (default) maps the recorded sectors into the region
//! `[offset, offset + size)` (default: the whole device): `region.start + (sector - lowest
//! sector of the trace) mod region.len`, moved back so the request ends inside the region.
//! Relative distances are kept wherever the trace's span fits the region. `placement =
//! "s-files"` does what the suite does on its test machine: each process reads its own 20 MB
//! file (20,000,000 bytes, files back to back from the region's start); `Seq` requests continue
//! where that process's previous request ended (wrapping to the file's start), `Rand` requests
//! go to a seeded random sector of the file.
//!
//! The job is done when every request has completed.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::path::PathBuf;

use elevator_core::{Nanos, Op, SECTOR_BYTES};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::job::{Action, IoSpec, Job};
use crate::spec::{resolve_region, BuildEnv, BuildError, REGION_FIELDS};
use crate::traces::s_startup::StartupTrace;

/// The largest `think_scale` accepted.
pub const MAX_THINK_SCALE: f64 = 1000.0;

/// The per-process file size of the suite's replayer, bytes.
pub const S_FILE_BYTES: u64 = 20_000_000;

/// Which requests wait for which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartupOrder {
    /// Trace order across processes, as the S suite replays.
    #[default]
    Trace,
    /// Each process replays its own requests, concurrently with the others.
    Process,
}

/// Where the requests go on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartupPlacement {
    /// The recorded sectors, offset and wrapped into the region.
    #[default]
    Trace,
    /// One 20 MB file per process, as the suite's replayer reads.
    SFiles,
}

/// A start-up replay's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StartupConfig {
    /// The trace file (required).
    pub trace: PathBuf,
    /// Replay order. Default `trace`.
    pub order: StartupOrder,
    /// Factor on the recorded gaps used as think time, in 0..=1000. Default 1.0.
    pub think_scale: f64,
    /// Placement of the requests. Default `trace`.
    pub placement: StartupPlacement,
    /// Start of the region, bytes. Default 0. Exclusive with `offset_frac`.
    pub offset: Option<u64>,
    /// Start of the region, fraction of the device.
    pub offset_frac: Option<f64>,
    /// Length of the region, bytes. Default: to the end of the device. Exclusive with
    /// `size_frac`.
    pub size: Option<u64>,
    /// Length of the region, fraction of the device.
    pub size_frac: Option<f64>,
    /// Seed for `Rand` offsets under `s-files`. Default: from the run's seed and the job's name.
    pub seed: Option<u64>,
}

impl Default for StartupConfig {
    fn default() -> Self {
        StartupConfig {
            trace: PathBuf::new(),
            order: StartupOrder::Trace,
            think_scale: 1.0,
            placement: StartupPlacement::Trace,
            offset: None,
            offset_frac: None,
            size: None,
            size_frac: None,
            seed: None,
        }
    }
}

#[derive(Clone, Debug)]
struct Req {
    ctx: u32,
    gap: Nanos,
    sector: u64,
    sectors: u32,
    op: Op,
    sync: bool,
    meta: bool,
}

#[derive(Clone, Debug, Default)]
struct Stream {
    reqs: Vec<usize>,
    pos: usize,
    blocked: Option<u64>,
    thought: bool,
}

/// A start-up replay. See the module documentation.
///
/// Every step costs O(log n) whatever the number of processes: streams that may issue wait
/// in `ready` (by index, the order a scan would find them), thinking ones in `timers`, ones
/// whose synchronous request waits for its process's readaheads in `waiting`.
#[derive(Clone, Debug)]
pub struct StartupJob {
    name: String,
    reqs: Vec<Req>,
    streams: Vec<Stream>,
    /// Streams to look at in the next poll, by index.
    ready: BTreeSet<usize>,
    /// Thinking streams: (until, stream).
    timers: BinaryHeap<Reverse<(Nanos, usize)>>,
    /// Per context: streams waiting for the context's asynchronous requests.
    waiting: Vec<Vec<usize>>,
    /// Streams with requests left to issue.
    streams_left: usize,
    /// Per context: asynchronous requests outstanding.
    pending_async: Vec<BTreeSet<u64>>,
    /// Per context: requests not yet completed.
    remaining: Vec<usize>,
    /// Contexts whose requests have all completed and that have not exited yet.
    exits: BTreeSet<usize>,
    /// tag -> (request index, stream).
    in_flight: std::collections::BTreeMap<u64, (usize, usize)>,
    next_tag: u64,
    start: Option<Nanos>,
    finished: Option<Nanos>,
}

impl StartupJob {
    /// Read the configured trace and build the job.
    pub fn new(cfg: StartupConfig, env: &BuildEnv) -> Result<StartupJob, BuildError> {
        if cfg.trace.as_os_str().is_empty() {
            return Err(BuildError::new(
                env,
                "trace",
                "missing: give the trace file",
            ));
        }
        super::trace_replay::require_regular_file(&cfg.trace, env)?;
        let trace = StartupTrace::read(&cfg.trace)
            .map_err(|e| BuildError::new(env, "trace", e.to_string()))?;
        StartupJob::from_trace(&trace, &cfg, env)
    }

    /// Build the job from an already parsed trace (`cfg.trace` is ignored).
    pub fn from_trace(
        trace: &StartupTrace,
        cfg: &StartupConfig,
        env: &BuildEnv,
    ) -> Result<StartupJob, BuildError> {
        if !(0.0..=MAX_THINK_SCALE).contains(&cfg.think_scale) {
            return Err(BuildError::new(
                env,
                "think_scale",
                format!("must be a number in 0..={MAX_THINK_SCALE}"),
            ));
        }
        let region = resolve_region(
            env,
            cfg.offset,
            cfg.offset_frac,
            cfg.size,
            cfg.size_frac,
            REGION_FIELDS,
        )?;
        let n_proc = trace.processes.len();
        let file_sectors = S_FILE_BYTES / SECTOR_BYTES;
        let max_len = trace
            .records
            .iter()
            .map(|r| u64::from(r.sectors))
            .max()
            .unwrap_or(1);
        match cfg.placement {
            StartupPlacement::Trace if max_len > region.len => {
                return Err(BuildError::new(
                    env,
                    "size",
                    "the region is smaller than a request",
                ));
            }
            StartupPlacement::SFiles if n_proc as u64 * file_sectors > region.len => {
                return Err(BuildError::new(
                    env,
                    "size",
                    format!("{n_proc} files of 20 MB do not fit in the region"),
                ));
            }
            StartupPlacement::SFiles if max_len >= file_sectors => {
                return Err(BuildError::new(
                    env,
                    "trace",
                    "a request is larger than a 20 MB file",
                ));
            }
            _ => {}
        }
        let lowest = trace.records.iter().map(|r| r.sector).min().unwrap_or(0);
        let mut rng = ChaCha8Rng::seed_from_u64(env.job_seed(cfg.seed));
        let mut s_offset = vec![0u64; n_proc];
        let mut last_time: Vec<Option<f64>> = vec![None; n_proc];
        let mut prev_time: Option<f64> = None;
        let last = trace.records.len() - 1;
        let mut reqs = Vec::with_capacity(trace.records.len());
        for (i, r) in trace.records.iter().enumerate() {
            let len = u64::from(r.sectors);
            let sector = match cfg.placement {
                StartupPlacement::Trace => region.wrap(r.sector - lowest, len),
                StartupPlacement::SFiles => {
                    let off = &mut s_offset[r.process];
                    if r.seq {
                        if *off + len > file_sectors {
                            *off = 0;
                        }
                    } else {
                        *off = rng.gen_range(0..file_sectors - len);
                    }
                    let s = region.start + r.process as u64 * file_sectors + *off;
                    *off += len;
                    s
                }
            };
            let since = match cfg.order {
                StartupOrder::Trace => prev_time,
                StartupOrder::Process => last_time[r.process],
            };
            let gap_s = since.map_or(0.0, |t| (r.time_s - t).max(0.0)) * cfg.think_scale;
            prev_time = Some(r.time_s);
            last_time[r.process] = Some(r.time_s);
            reqs.push(Req {
                ctx: r.process as u32,
                gap: Nanos::from_secs_f64(gap_s),
                sector,
                sectors: r.sectors,
                op: if r.write { Op::Write } else { Op::Read },
                sync: !(r.readahead && i != last),
                meta: r.meta,
            });
        }
        let streams: Vec<Stream> = match cfg.order {
            StartupOrder::Trace => vec![Stream {
                reqs: (0..reqs.len()).collect(),
                ..Default::default()
            }],
            StartupOrder::Process => {
                let mut per = vec![Vec::new(); n_proc];
                for (i, r) in reqs.iter().enumerate() {
                    per[r.ctx as usize].push(i);
                }
                per.into_iter()
                    .map(|reqs| Stream {
                        reqs,
                        ..Default::default()
                    })
                    .collect()
            }
        };
        let mut remaining = vec![0; n_proc];
        for r in &reqs {
            remaining[r.ctx as usize] += 1;
        }
        let ready: BTreeSet<usize> = (0..streams.len())
            .filter(|&i| !streams[i].reqs.is_empty())
            .collect();
        Ok(StartupJob {
            name: env.name.clone(),
            reqs,
            streams_left: ready.len(),
            ready,
            streams,
            timers: BinaryHeap::new(),
            waiting: vec![Vec::new(); n_proc],
            pending_async: vec![BTreeSet::new(); n_proc],
            remaining,
            exits: BTreeSet::new(),
            in_flight: Default::default(),
            next_tag: 0,
            start: None,
            finished: None,
        })
    }

    /// The start-up time: from the job's first poll to the completion of its last request.
    pub fn startup_time(&self) -> Option<Nanos> {
        Some(self.finished?.saturating_sub(self.start?))
    }

    /// Number of contexts (original processes).
    pub fn processes(&self) -> usize {
        self.remaining.len()
    }
}

impl Job for StartupJob {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Nanos) -> Action {
        self.start.get_or_insert(now);
        if let Some(ctx) = self.exits.pop_first() {
            return Action::Exit { ctx: ctx as u32 };
        }
        while let Some(&Reverse((until, si))) = self.timers.peek() {
            if until > now {
                break;
            }
            self.timers.pop();
            self.ready.insert(si);
        }
        while let Some(si) = self.ready.pop_first() {
            let s = &mut self.streams[si];
            let ri = s.reqs[s.pos];
            let r = &self.reqs[ri];
            if !s.thought {
                s.thought = true;
                if r.gap > Nanos::ZERO {
                    let until = now.saturating_add(r.gap);
                    self.timers.push(Reverse((until, si)));
                    continue;
                }
            }
            let ctx = r.ctx as usize;
            if r.sync && !self.pending_async[ctx].is_empty() {
                self.waiting[ctx].push(si);
                continue;
            }
            let tag = self.next_tag;
            self.next_tag += 1;
            s.pos += 1;
            s.thought = false;
            let more = s.pos < s.reqs.len();
            if r.sync {
                s.blocked = Some(tag);
            } else {
                self.pending_async[ctx].insert(tag);
                if more {
                    self.ready.insert(si);
                }
            }
            if !more {
                self.streams_left -= 1;
            }
            self.in_flight.insert(tag, (ri, si));
            return Action::Issue(IoSpec {
                ctx: r.ctx,
                op: r.op,
                sync: r.sync,
                meta: r.meta,
                idle_hint: false,
                sector: r.sector,
                sectors: r.sectors,
                prio: None,
                tag,
            });
        }
        if self.streams_left == 0 && self.in_flight.is_empty() {
            self.finished.get_or_insert(now);
            return Action::Done;
        }
        match self.timers.peek() {
            Some(&Reverse((until, _))) => Action::Think { until },
            None => Action::Wait,
        }
    }

    fn complete(&mut self, tag: u64, now: Nanos) {
        let Some((ri, si)) = self.in_flight.remove(&tag) else {
            return;
        };
        let ctx = self.reqs[ri].ctx as usize;
        if self.pending_async[ctx].remove(&tag) && self.pending_async[ctx].is_empty() {
            self.ready.extend(self.waiting[ctx].drain(..));
        }
        self.remaining[ctx] -= 1;
        if self.remaining[ctx] == 0 {
            self.exits.insert(ctx);
        }
        let s = &mut self.streams[si];
        if s.blocked == Some(tag) {
            s.blocked = None;
            if s.pos < s.reqs.len() {
                self.ready.insert(si);
            }
        }
        if self.in_flight.is_empty() && self.streams_left == 0 {
            self.finished = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::HandDriver;

    const TRACE: &str = "\
a-1 0 8 1000 Rand 0 0 RM 1.0 START
a-1 .010 8 1008 Seq 0 0 RA 1.010 C
a-1 .001 8 1016 Seq 0 0 RA 1.011 C
b-2 .004 16 5000 Rand 0 0 R 1.015 START
a-1 .005 8 2000 Rand 0 0 R 1.020 C
b-2 .001 8 9000 Rand 0 0 RA 1.021 C
";

    fn env() -> BuildEnv {
        BuildEnv::new(1 << 21, 3, "xterm")
    }

    fn job(cfg: StartupConfig) -> StartupJob {
        let t = StartupTrace::parse(TRACE, "t").unwrap();
        StartupJob::from_trace(&t, &cfg, &env()).unwrap()
    }

    #[test]
    fn trace_order_replay_is_dependent_except_readahead() {
        let mut j = job(StartupConfig {
            think_scale: 0.0,
            ..Default::default()
        });
        let rec = HandDriver::new(4, Nanos::from_ms(10), Nanos::from_secs(10)).run(&mut j);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        // RM (sync) 0-10; two RAs at 10; b's R at 10 (other process: no wait for a's RAs),
        // completes at 20; a's R waits for a's RAs (done at 20) and b's R: 20; the last RA is
        // sync because it is last: 30.
        assert_eq!(at, vec![0, 10, 10, 10, 20, 30]);
        let sync: Vec<bool> = rec.issued.iter().map(|i| i.spec.sync).collect();
        assert_eq!(sync, vec![true, false, false, true, true, true]);
        assert!(rec.issued[0].spec.meta);
        let ctx: Vec<u32> = rec.issued.iter().map(|i| i.spec.ctx).collect();
        assert_eq!(ctx, vec![0, 0, 0, 1, 0, 1]);
        assert_eq!(rec.done_at, Some(Nanos::from_ms(40)));
        assert_eq!(j.startup_time(), Some(Nanos::from_ms(40)));
        let mut exits: Vec<u32> = rec.exits.iter().map(|e| e.0).collect();
        exits.sort();
        assert_eq!(exits, vec![0, 1]);
    }

    #[test]
    fn recorded_gaps_become_think_time() {
        let mut j = job(StartupConfig::default());
        let rec = HandDriver::new(4, Nanos::from_ms(10), Nanos::from_secs(10)).run(&mut j);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_us()).collect();
        // 10 ms think after the RM completes at 10, 1 ms more, then 4 ms ...
        assert_eq!(at[..4], [0, 20_000, 21_000, 25_000]);
    }

    #[test]
    fn process_order_lets_processes_overlap() {
        let mut j = job(StartupConfig {
            order: StartupOrder::Process,
            think_scale: 0.0,
            ..Default::default()
        });
        let rec = HandDriver::new(4, Nanos::from_ms(10), Nanos::from_secs(10)).run(&mut j);
        // b's first request goes out at once, beside a's first.
        assert_eq!(rec.issued[1].spec.ctx, 1);
        assert_eq!(rec.issued[1].at, Nanos::ZERO);
        assert!(rec.max_sync_outstanding_per_ctx.values().all(|&m| m == 1));
    }

    #[test]
    fn trace_placement_keeps_distances_inside_the_region() {
        let mut j = job(StartupConfig {
            think_scale: 0.0,
            offset: Some(1 << 20),
            ..Default::default()
        });
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut j);
        let s: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        assert_eq!(s, vec![2048, 2056, 2064, 6048, 3048, 10048]);
    }

    #[test]
    fn s_files_placement_reads_one_file_per_process() {
        let mut j = job(StartupConfig {
            think_scale: 0.0,
            placement: StartupPlacement::SFiles,
            ..Default::default()
        });
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut j);
        let file = S_FILE_BYTES / 512;
        for i in &rec.issued {
            let f = i.spec.sector / file;
            assert_eq!(f, u64::from(i.spec.ctx));
        }
        // Seq continues where the previous request of the process ended.
        assert_eq!(rec.issued[1].spec.sector, rec.issued[0].spec.sector + 8);
        assert_eq!(rec.issued[2].spec.sector, rec.issued[1].spec.sector + 8);
    }

    #[test]
    fn missing_trace_is_an_error_naming_the_file() {
        let cfg = StartupConfig {
            trace: "/nonexistent/x.trace".into(),
            ..Default::default()
        };
        let e = StartupJob::new(cfg, &env()).unwrap_err();
        assert_eq!(e.field, "trace");
        assert!(e.reason.contains("/nonexistent/x.trace"), "{e}");
    }

    #[test]
    fn the_shared_traces_replay_to_completion() {
        let Some(dir) = crate::traces::shared_data_dir() else {
            eprintln!("skipped: shared/data is absent");
            return;
        };
        for name in ["xterm", "gnometerm", "lowriter"] {
            let path = dir.join(format!("traces/s-startup/{name}.trace"));
            if !path.exists() {
                eprintln!("skipped: {} is absent", path.display());
                continue;
            }
            let cfg = StartupConfig {
                trace: path,
                ..Default::default()
            };
            let mut j = StartupJob::new(cfg, &BuildEnv::new(80_000_000, 1, name)).unwrap();
            let n = j.reqs.len();
            let rec = HandDriver::new(1, Nanos::from_ms(5), Nanos::from_secs(1000)).run(&mut j);
            assert_eq!(rec.issued.len(), n);
            assert_eq!(rec.outstanding_at_done, 0);
            assert_eq!(rec.exits.len(), j.processes());
            eprintln!(
                "{name}: {n} requests, {:.2} s at 5 ms each",
                j.startup_time().unwrap().as_secs_f64()
            );
        }
    }
}
