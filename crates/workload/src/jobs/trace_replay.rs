//! `TraceReplay`: a DiskSim / MQSim ASCII trace ([`AsciiTrace`]) replayed against the device.
//!
//! **Open loop** (default): each request is issued at its recorded arrival time, relative to
//! the first request's (which goes out when the job starts), times `time_scale` (0.5 replays
//! twice as fast); the device's speed does not change when requests arrive. **Closed loop**
//! (`closed_loop = true`): timestamps are ignored and `depth` requests are kept outstanding,
//! the next issued as one completes; this measures how fast the device and the scheduler can
//! get through the trace.
//!
//! Sectors are mapped into the region `[offset, offset + size)` (default: the whole device) as
//! `region.start + blkno mod region.len`, moved back so the request ends inside the region.
//! `devno`, if given, keeps only that device's requests. All requests come from one context;
//! reads are synchronous, writes asynchronous unless `sync_writes`. Done when every request has
//! completed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use elevator_core::{Nanos, Op};
use serde::{Deserialize, Serialize};

use crate::input::InputError;
use crate::job::{Action, IoSpec, Job};
use crate::spec::{resolve_region, BuildEnv, BuildError, Region, REGION_FIELDS};
use crate::traces::disksim_ascii::{AsciiFormat, AsciiReader, AsciiRecord, AsciiTrace};
use crate::traces::lines::Lines;

/// The largest `time_scale` accepted.
pub const MAX_TIME_SCALE: f64 = 1000.0;

/// A trace replay's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceReplayConfig {
    /// The trace file (required).
    pub trace: PathBuf,
    /// `disksim` (times in ms) or `mqsim` (times in ns). Default `disksim`.
    pub format: AsciiFormat,
    /// Ignore timestamps and keep `depth` requests outstanding. Default false.
    pub closed_loop: bool,
    /// Requests outstanding in closed loop, >= 1. Default 1.
    pub depth: u32,
    /// Factor on inter-arrival times in open loop, in (0, 1000]. Default 1.0.
    pub time_scale: f64,
    /// Keep only this device's requests. Default: all.
    pub devno: Option<u32>,
    /// Replay at most this many requests. Default: all.
    pub max_requests: Option<u64>,
    /// Writes are synchronous, as fsync/O_SYNC writeback issues them (REQ_SYNC without
    /// REQ_IDLE: a trace does not say a write was O_DIRECT). Default false.
    pub sync_writes: bool,
    /// Start of the region, bytes. Default 0. Exclusive with `offset_frac`.
    pub offset: Option<u64>,
    /// Start of the region, fraction of the device.
    pub offset_frac: Option<f64>,
    /// Length of the region, bytes. Default: to the end of the device. Exclusive with
    /// `size_frac`.
    pub size: Option<u64>,
    /// Length of the region, fraction of the device.
    pub size_frac: Option<f64>,
}

impl Default for TraceReplayConfig {
    fn default() -> Self {
        TraceReplayConfig {
            trace: PathBuf::new(),
            format: AsciiFormat::Disksim,
            closed_loop: false,
            depth: 1,
            time_scale: 1.0,
            devno: None,
            max_requests: None,
            sync_writes: false,
            offset: None,
            offset_frac: None,
            size: None,
            size_frac: None,
        }
    }
}

/// Where the records come from.
enum Source {
    /// Parsed already ([`TraceReplay::from_trace`]).
    Memory {
        records: Vec<AsciiRecord>,
        pos: usize,
    },
    /// Streamed from the file, opened at the first request (so a built job holds no file
    /// open and no record in memory).
    File {
        path: PathBuf,
        format: AsciiFormat,
        reader: Option<AsciiReader>,
    },
}

impl Source {
    fn open(path: &Path, format: AsciiFormat) -> Result<AsciiReader, InputError> {
        Ok(AsciiReader::new(Lines::open(path)?, format))
    }

    /// The next record, kept or not.
    fn next(&mut self) -> Result<Option<AsciiRecord>, InputError> {
        match self {
            Source::Memory { records, pos } => {
                let r = records.get(*pos).copied();
                *pos += 1;
                Ok(r)
            }
            Source::File {
                path,
                format,
                reader,
            } => {
                if reader.is_none() {
                    *reader = Some(Source::open(path, *format)?);
                }
                let r = reader.as_mut().expect("opened above").next().transpose()?;
                Ok(r.map(|t| AsciiRecord {
                    time: t.time,
                    devno: t.device,
                    sector: t.sector,
                    sectors: t.sectors,
                    read: t.op == Op::Read,
                }))
            }
        }
    }
}

/// A trace replay. See the module documentation.
///
/// Built from a file, it reads the trace twice as a stream: once when built, to check every
/// kept request (so errors surface at load time), then while it runs; it never holds more
/// than one record, whatever the trace's length. If the file cannot be read the second time
/// as it was the first (another program changed it), the replay ends there and
/// [`error`](TraceReplay::error) says why.
pub struct TraceReplay {
    name: String,
    source: Source,
    region: Region,
    devno: Option<u32>,
    sync_writes: bool,
    time_scale: f64,
    /// The first kept request's time.
    t0: Nanos,
    /// Requests to replay.
    total: u64,
    /// Requests issued so far.
    issued: u64,
    /// The next request, read ahead.
    ahead: Option<(Nanos, IoSpec)>,
    closed_loop: bool,
    depth: usize,
    outstanding: BTreeSet<u64>,
    start: Option<Nanos>,
    error: Option<InputError>,
}

impl std::fmt::Debug for TraceReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReplay")
            .field("name", &self.name)
            .field("total", &self.total)
            .field("issued", &self.issued)
            .finish_non_exhaustive()
    }
}

/// Refuse a scenario's trace that is not a regular file: a scenario's job is built once per
/// scheduler (and checked before), so its trace is opened more than once, and a pipe, FIFO or
/// device is consumed by the first open (a FIFO's next open blocks for ever).
pub(crate) fn require_regular_file(path: &Path, env: &BuildEnv) -> Result<(), BuildError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(BuildError::new(
            env,
            "trace",
            format!(
                "{}: not a regular file (a pipe, FIFO or device can be read once; a scenario \
                 reads its trace more than once): copy it to a file",
                path.display()
            ),
        )),
        _ => Ok(()),
    }
}

impl TraceReplay {
    /// Check the configured trace (streaming it once) and build the job.
    pub fn new(cfg: TraceReplayConfig, env: &BuildEnv) -> Result<TraceReplay, BuildError> {
        if cfg.trace.as_os_str().is_empty() {
            return Err(BuildError::new(
                env,
                "trace",
                "missing: give the trace file",
            ));
        }
        // The file is streamed once to check it and again by each run: a pipe or FIFO would
        // be consumed by the check and the second open would block for ever.
        require_regular_file(&cfg.trace, env)?;
        let source = Source::File {
            path: cfg.trace.clone(),
            format: cfg.format,
            reader: None,
        };
        TraceReplay::build(source, &cfg, env)
    }

    /// Build the job from an already parsed trace (`cfg.trace` and `cfg.format` are ignored).
    pub fn from_trace(
        trace: &AsciiTrace,
        cfg: &TraceReplayConfig,
        env: &BuildEnv,
    ) -> Result<TraceReplay, BuildError> {
        let source = Source::Memory {
            records: trace.records.clone(),
            pos: 0,
        };
        TraceReplay::build(source, cfg, env)
    }

    fn build(
        source: Source,
        cfg: &TraceReplayConfig,
        env: &BuildEnv,
    ) -> Result<TraceReplay, BuildError> {
        if cfg.depth == 0 {
            return Err(BuildError::new(env, "depth", "must be at least 1"));
        }
        if !(cfg.time_scale > 0.0 && cfg.time_scale <= MAX_TIME_SCALE) {
            return Err(BuildError::new(
                env,
                "time_scale",
                format!("must be a number in (0, {MAX_TIME_SCALE}]"),
            ));
        }
        if cfg.max_requests == Some(0) {
            return Err(BuildError::new(
                env,
                "max_requests",
                "must be at least 1 (leave it out to replay every request)",
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
        // The checking pass: every kept request, streamed.
        let mut check = match &source {
            Source::Memory { records, .. } => Source::Memory {
                records: records.clone(),
                pos: 0,
            },
            Source::File { path, format, .. } => Source::File {
                path: path.clone(),
                format: *format,
                reader: None,
            },
        };
        let max = cfg.max_requests.unwrap_or(u64::MAX);
        let (mut total, mut t0) = (0u64, None);
        while total < max {
            let Some(r) = check
                .next()
                .map_err(|e| BuildError::new(env, "trace", e.to_string()))?
            else {
                break;
            };
            if cfg.devno.is_some_and(|d| d != r.devno) {
                continue;
            }
            if u64::from(r.sectors) > region.len {
                return Err(BuildError::new(
                    env,
                    "size",
                    format!("the region is smaller than a {}-sector request", r.sectors),
                ));
            }
            t0.get_or_insert(r.time);
            total += 1;
        }
        drop(check);
        let Some(t0) = t0 else {
            return Err(match cfg.devno {
                Some(d) => BuildError::new(
                    env,
                    "devno",
                    format!("no request of the trace is on device {d}"),
                ),
                None => BuildError::new(env, "trace", "the trace holds no request"),
            });
        };
        Ok(TraceReplay {
            name: env.name.clone(),
            source,
            region,
            devno: cfg.devno,
            sync_writes: cfg.sync_writes,
            time_scale: cfg.time_scale,
            t0,
            total,
            issued: 0,
            ahead: None,
            closed_loop: cfg.closed_loop,
            depth: cfg.depth as usize,
            outstanding: BTreeSet::new(),
            start: None,
            error: None,
        })
    }

    /// Requests to replay.
    pub fn len(&self) -> usize {
        self.total as usize
    }

    /// Whether there is nothing to replay (never true for a built job).
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Why the replay ended before its last request, if it did (the trace file changed
    /// between the checking pass and the replay).
    pub fn error(&self) -> Option<&InputError> {
        self.error.as_ref()
    }

    /// The next request to issue and its time from the start, read ahead; `None` at the end.
    fn peek(&mut self) -> Option<&(Nanos, IoSpec)> {
        if self.ahead.is_none() && self.issued < self.total && self.error.is_none() {
            loop {
                let r = match self.source.next() {
                    Ok(Some(r)) => r,
                    Ok(None) => {
                        self.error = Some(InputError::new(&self.name, format!(
                                "the trace ended after {} of its {} requests (changed since the job was built?)",
                                self.issued, self.total
                            )).in_field("trace"));
                        break;
                    }
                    Err(e) => {
                        self.error = Some(e);
                        break;
                    }
                };
                if self.devno.is_some_and(|d| d != r.devno) {
                    continue;
                }
                let region = self.region;
                let len = u64::from(r.sectors).min(region.len);
                let at = Nanos::from_secs_f64(
                    (r.time.saturating_sub(self.t0)).as_secs_f64() * self.time_scale,
                );
                let sector = region.wrap(r.sector, len);
                let io = IoSpec {
                    ctx: 0,
                    op: if r.read { Op::Read } else { Op::Write },
                    sync: r.read || self.sync_writes,
                    meta: false,
                    idle_hint: false,
                    sector,
                    sectors: len as u32,
                    prio: None,
                    tag: self.issued,
                };
                self.ahead = Some((at, io));
                break;
            }
        }
        self.ahead.as_ref()
    }
}

impl Job for TraceReplay {
    fn name(&self) -> &str {
        &self.name
    }

    /// Requests issued of those the checking pass counted: a scenario's trace of 10^9
    /// requests is its work, told before it runs as a compile's is.
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.issued, self.total))
    }

    fn poll(&mut self, now: Nanos) -> Action {
        let start = *self.start.get_or_insert(now);
        let closed_loop = self.closed_loop;
        let full = self.outstanding.len() >= self.depth;
        let Some((at, _)) = self.peek() else {
            return if self.outstanding.is_empty() {
                Action::Done
            } else {
                Action::Wait
            };
        };
        if closed_loop {
            if full {
                return Action::Wait;
            }
        } else {
            let at = start.saturating_add(*at);
            if now < at {
                return Action::Think { until: at };
            }
        }
        let (_, io) = self.ahead.take().expect("peeked above");
        self.issued += 1;
        self.outstanding.insert(io.tag);
        Action::Issue(io)
    }

    fn complete(&mut self, tag: u64, _now: Nanos) {
        self.outstanding.remove(&tag);
    }

    fn error(&self) -> Option<String> {
        self.error.as_ref().map(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::HandDriver;

    const TEXT: &str = "10.0 0 100 8 1\n10.0 1 200 8 0\n12.5 0 300 16 1\n20.0 0 5000000 8 1\n";

    fn build(cfg: TraceReplayConfig) -> TraceReplay {
        let t = AsciiTrace::parse(TEXT, "t", AsciiFormat::Disksim).unwrap();
        TraceReplay::from_trace(&t, &cfg, &BuildEnv::new(1 << 21, 0, "replay")).unwrap()
    }

    #[test]
    fn open_loop_issues_at_recorded_times_whatever_the_device_does() {
        let mut j = build(TraceReplayConfig::default());
        let rec = HandDriver::new(1, Nanos::from_ms(50), Nanos::from_secs(10)).run(&mut j);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_us()).collect();
        assert_eq!(at, vec![0, 0, 2500, 10_000]);
        assert_eq!(rec.max_outstanding, 4);
        assert_eq!(rec.done_at, Some(Nanos::from_ms(200)));
        // 5,000,000 wraps into the 1 GiB (2,097,152-sector) device.
        assert_eq!(rec.issued[3].spec.sector, 5_000_000 % (1 << 21));
        assert!(!rec.issued[1].spec.sync && rec.issued[1].spec.op == Op::Write);
    }

    #[test]
    fn time_scale_compresses_arrivals() {
        let mut j = build(TraceReplayConfig {
            time_scale: 0.5,
            ..Default::default()
        });
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut j);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_us()).collect();
        assert_eq!(at, vec![0, 0, 1250, 5000]);
    }

    #[test]
    fn closed_loop_keeps_depth_outstanding_and_ignores_time() {
        let mut j = build(TraceReplayConfig {
            closed_loop: true,
            depth: 2,
            ..Default::default()
        });
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut j);
        assert_eq!(rec.max_outstanding, 2);
        let at: Vec<u64> = rec.issued.iter().map(|i| i.at.as_ms()).collect();
        assert_eq!(at, vec![0, 0, 1, 2]);
    }

    #[test]
    fn devno_filter_and_region() {
        let mut j = build(TraceReplayConfig {
            devno: Some(0),
            offset: Some(1 << 20),
            size: Some(1 << 20),
            ..Default::default()
        });
        assert_eq!(j.len(), 3);
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut j);
        assert_eq!(rec.issued[0].spec.sector, 2048 + 100);
        assert!(rec
            .issued
            .iter()
            .all(|i| (2048..4096).contains(&i.spec.sector)));
    }

    #[test]
    fn errors_name_the_field() {
        let t = AsciiTrace::parse(TEXT, "t", AsciiFormat::Disksim).unwrap();
        let env = BuildEnv::new(1 << 21, 0, "r");
        let e = |cfg: TraceReplayConfig| TraceReplay::from_trace(&t, &cfg, &env).unwrap_err().field;
        assert_eq!(
            e(TraceReplayConfig {
                depth: 0,
                ..Default::default()
            }),
            "depth"
        );
        assert_eq!(
            e(TraceReplayConfig {
                devno: Some(9),
                ..Default::default()
            }),
            "devno"
        );
        assert_eq!(
            e(TraceReplayConfig {
                time_scale: 0.0,
                ..Default::default()
            }),
            "time_scale"
        );
        let bad = TraceReplayConfig {
            trace: "/nonexistent.trace".into(),
            ..Default::default()
        };
        assert_eq!(TraceReplay::new(bad, &env).unwrap_err().field, "trace");
    }

    #[test]
    fn the_shared_tpcc_trace_replays_to_completion() {
        let Some(dir) = crate::traces::shared_data_dir() else {
            eprintln!("skipped: shared/data is absent");
            return;
        };
        let path = dir.join("traces/mqsim/tpcc-small.trace");
        if !path.exists() {
            eprintln!("skipped: {} is absent", path.display());
            return;
        }
        let cfg = TraceReplayConfig {
            trace: path,
            format: AsciiFormat::Mqsim,
            ..Default::default()
        };
        let mut j = TraceReplay::new(cfg, &BuildEnv::new(1 << 30, 0, "tpcc")).unwrap();
        let rec = HandDriver::new(8, Nanos::from_us(100), Nanos::from_secs(100_000)).run(&mut j);
        assert_eq!(rec.issued.len(), 6999);
        assert!(rec.done_at.is_some());
    }
}
