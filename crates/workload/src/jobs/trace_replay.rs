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
use std::path::PathBuf;

use elevator_core::{Nanos, Op};
use serde::{Deserialize, Serialize};

use crate::job::{Action, IoSpec, Job};
use crate::spec::{resolve_region, BuildEnv, BuildError};
use crate::traces::disksim_ascii::{AsciiFormat, AsciiRecord, AsciiTrace};

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
    /// Factor on inter-arrival times in open loop, > 0. Default 1.0.
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

/// A trace replay. See the module documentation.
#[derive(Clone, Debug)]
pub struct TraceReplay {
    name: String,
    ios: Vec<(Nanos, IoSpec)>,
    next: usize,
    closed_loop: bool,
    depth: usize,
    outstanding: BTreeSet<u64>,
    start: Option<Nanos>,
}

impl TraceReplay {
    /// Read the configured trace and build the job.
    pub fn new(cfg: TraceReplayConfig, env: &BuildEnv) -> Result<TraceReplay, BuildError> {
        if cfg.trace.as_os_str().is_empty() {
            return Err(BuildError::new(
                env,
                "trace",
                "missing: give the trace file",
            ));
        }
        let trace = AsciiTrace::read(&cfg.trace, cfg.format)
            .map_err(|e| BuildError::new(env, "trace", e.to_string()))?;
        TraceReplay::from_trace(&trace, &cfg, env)
    }

    /// Build the job from an already parsed trace (`cfg.trace` and `cfg.format` are ignored).
    pub fn from_trace(
        trace: &AsciiTrace,
        cfg: &TraceReplayConfig,
        env: &BuildEnv,
    ) -> Result<TraceReplay, BuildError> {
        if cfg.depth == 0 {
            return Err(BuildError::new(env, "depth", "must be at least 1"));
        }
        if !(cfg.time_scale.is_finite() && cfg.time_scale > 0.0) {
            return Err(BuildError::new(
                env,
                "time_scale",
                "must be a finite number > 0",
            ));
        }
        let region = resolve_region(
            env,
            cfg.offset,
            cfg.offset_frac,
            cfg.size,
            cfg.size_frac,
            ["offset", "offset_frac", "size", "size_frac"],
        )?;
        let kept: Vec<&AsciiRecord> = trace
            .records
            .iter()
            .filter(|r| cfg.devno.is_none_or(|d| d == r.devno))
            .take(cfg.max_requests.map_or(usize::MAX, |m| m as usize))
            .collect();
        if kept.is_empty() {
            return Err(BuildError::new(
                env,
                "devno",
                "no request of the trace is kept",
            ));
        }
        if let Some(r) = kept.iter().find(|r| u64::from(r.sectors) > region.len) {
            return Err(BuildError::new(
                env,
                "size",
                format!("the region is smaller than a {}-sector request", r.sectors),
            ));
        }
        let t0 = kept[0].time;
        let ios = kept
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let at = Nanos::from_secs_f64((r.time - t0).as_secs_f64() * cfg.time_scale);
                let len = u64::from(r.sectors);
                let sector = (region.start + r.sector % region.len).min(region.end() - len);
                let io = IoSpec {
                    ctx: 0,
                    op: if r.read { Op::Read } else { Op::Write },
                    sync: r.read || cfg.sync_writes,
                    meta: false,
                    idle_hint: false,
                    sector,
                    sectors: r.sectors,
                    prio: None,
                    tag: i as u64,
                };
                (at, io)
            })
            .collect();
        Ok(TraceReplay {
            name: env.name.clone(),
            ios,
            next: 0,
            closed_loop: cfg.closed_loop,
            depth: cfg.depth as usize,
            outstanding: BTreeSet::new(),
            start: None,
        })
    }

    /// Requests to replay.
    pub fn len(&self) -> usize {
        self.ios.len()
    }

    /// Whether there is nothing to replay (never true for a built job).
    pub fn is_empty(&self) -> bool {
        self.ios.is_empty()
    }
}

impl Job for TraceReplay {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Nanos) -> Action {
        let start = *self.start.get_or_insert(now);
        if self.next == self.ios.len() {
            return if self.outstanding.is_empty() {
                Action::Done
            } else {
                Action::Wait
            };
        }
        if self.closed_loop {
            if self.outstanding.len() >= self.depth {
                return Action::Wait;
            }
        } else {
            let at = start + self.ios[self.next].0;
            if now < at {
                return Action::Think { until: at };
            }
        }
        let io = self.ios[self.next].1.clone();
        self.next += 1;
        self.outstanding.insert(io.tag);
        Action::Issue(io)
    }

    fn complete(&mut self, tag: u64, _now: Nanos) {
        self.outstanding.remove(&tag);
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
