//! `StreamWriter`: a continuous streaming write as kernel writeback delivers it to the block
//! layer (a `dd if=/dev/zero of=big` whose dirty pages the flusher pushes out).
//!
//! One context (the flusher). It keeps up to `nr_requests` asynchronous writes of
//! `request_bytes` outstanding (the request queue's `nr_requests`, 128 by default, and requests
//! of 128 KiB, the `max_sectors_kb` limit of 2.6-era IDE disks), walking its region upward and
//! wrapping at the end. It runs until the run ends, or until it has written `total_bytes` if given. With
//! `rate` (bytes per second) it issues the k-th request (from 0) no earlier than
//! `start + k * request_bytes / rate`; the S suite caps its writers at 4000 KB/s in total, so
//! each of its writers gets its share.
//!
//! Deviation: real writeback refills the queue in bursts as the flusher wakes and as
//! `balance_dirty_pages` throttles the writer; this job refills it at once, which is the
//! worst case a scheduler must withstand and what Morton's "continuous streaming write" meant.

use std::collections::BTreeSet;

use elevator_core::{Nanos, Op, SECTOR_BYTES};
use serde::{Deserialize, Serialize};

use crate::job::{Action, IoSpec, Job};
use crate::spec::{resolve_region, BuildEnv, BuildError, Region, REGION_FIELDS};

/// A streaming writer's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamWriterConfig {
    /// Start of the written region, bytes. Exclusive with `offset_frac`.
    pub offset: Option<u64>,
    /// Start of the written region as a fraction 0..=1 of the device. Default 0.5 (used only
    /// when `offset` is not given): far from readers that sit low on the disk.
    pub offset_frac: Option<f64>,
    /// Length of the region, bytes. Default: to the end of the device. Exclusive with
    /// `size_frac`.
    pub size: Option<u64>,
    /// Length of the region as a fraction 0..=1 of the device.
    pub size_frac: Option<f64>,
    /// Writes outstanding at most (the queue's `nr_requests`). Default 128.
    pub nr_requests: u32,
    /// Once `nr_requests` are outstanding, wait until this many have completed before
    /// writing again (2.4's `batch_requests`: a process waiting for a request is woken only
    /// when that many are free). Default 1: write again as soon as one completes.
    pub batch: u32,
    /// Bytes per write request, a positive multiple of 512. Default 131072 (128 KiB).
    pub request_bytes: u64,
    /// Cap on bytes per second. Default none (as fast as the device takes them).
    pub rate: Option<u64>,
    /// Stop after writing this many bytes. Default none (runs until the run ends).
    pub total_bytes: Option<u64>,
}

impl Default for StreamWriterConfig {
    fn default() -> Self {
        StreamWriterConfig {
            offset: None,
            offset_frac: None,
            size: None,
            size_frac: None,
            nr_requests: 128,
            batch: 1,
            request_bytes: 128 * 1024,
            rate: None,
            total_bytes: None,
        }
    }
}

impl StreamWriterConfig {
    /// Check the configuration against the device of `env`; returns the written region.
    pub fn validate(&self, env: &BuildEnv) -> Result<Region, BuildError> {
        if self.nr_requests == 0 {
            return Err(BuildError::new(env, "nr_requests", "must be at least 1"));
        }
        if self.batch == 0 || self.batch > self.nr_requests {
            return Err(BuildError::new(
                env,
                "batch",
                format!("must be 1 to nr_requests ({})", self.nr_requests),
            ));
        }
        if self.request_bytes == 0
            || !self.request_bytes.is_multiple_of(SECTOR_BYTES)
            || self.request_bytes / SECTOR_BYTES > u64::from(u32::MAX)
        {
            return Err(BuildError::new(
                env,
                "request_bytes",
                format!("{} is not a positive multiple of 512", self.request_bytes),
            ));
        }
        if self.rate == Some(0) {
            return Err(BuildError::new(env, "rate", "must be positive"));
        }
        if self.total_bytes == Some(0) {
            return Err(BuildError::new(env, "total_bytes", "must be positive"));
        }
        let offset_frac = match (self.offset, self.offset_frac) {
            (None, None) => Some(0.5),
            (_, f) => f,
        };
        let region = resolve_region(
            env,
            self.offset,
            offset_frac,
            self.size,
            self.size_frac,
            REGION_FIELDS,
        )?;
        if region.len * SECTOR_BYTES < self.request_bytes {
            return Err(BuildError::new(
                env,
                "size",
                "the region is smaller than one request",
            ));
        }
        Ok(region)
    }
}

/// A continuous streaming writer. See the module documentation.
#[derive(Clone, Debug)]
pub struct StreamWriter {
    name: String,
    cfg: StreamWriterConfig,
    region: Region,
    req_sectors: u64,
    /// Next sector to write, relative to the region's start.
    cursor: u64,
    issued: u64,
    limit: Option<u64>,
    outstanding: BTreeSet<u64>,
    /// The queue filled up: waiting for `batch` completions.
    throttled: bool,
    start: Option<Nanos>,
}

impl StreamWriter {
    /// Build the writer for the device and run of `env`.
    pub fn new(cfg: StreamWriterConfig, env: &BuildEnv) -> Result<StreamWriter, BuildError> {
        let region = cfg.validate(env)?;
        Ok(StreamWriter {
            name: env.name.clone(),
            req_sectors: cfg.request_bytes / SECTOR_BYTES,
            limit: cfg.total_bytes.map(|b| b.div_ceil(cfg.request_bytes)),
            cfg,
            region,
            cursor: 0,
            issued: 0,
            outstanding: BTreeSet::new(),
            throttled: false,
            start: None,
        })
    }

    /// The region it writes.
    pub fn region(&self) -> Region {
        self.region
    }
}

impl Job for StreamWriter {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, now: Nanos) -> Action {
        let start = *self.start.get_or_insert(now);
        if self.limit.is_some_and(|l| self.issued >= l) {
            return if self.outstanding.is_empty() {
                Action::Done
            } else {
                Action::Wait
            };
        }
        if self.outstanding.len() >= self.cfg.nr_requests as usize {
            self.throttled = true;
        }
        if self.throttled {
            return Action::Wait;
        }
        if let Some(rate) = self.cfg.rate {
            let ns = u128::from(self.issued) * u128::from(self.cfg.request_bytes) * 1_000_000_000
                / u128::from(rate);
            let gate = start.saturating_add(Nanos(ns.min(u128::from(u64::MAX)) as u64));
            if now < gate {
                return Action::Think { until: gate };
            }
        }
        if self.cursor + self.req_sectors > self.region.len {
            self.cursor = 0;
        }
        let tag = self.issued;
        self.issued += 1;
        self.outstanding.insert(tag);
        let sector = self.region.start + self.cursor;
        self.cursor += self.req_sectors;
        Action::Issue(IoSpec {
            ctx: 0,
            op: Op::Write,
            sync: false,
            meta: false,
            idle_hint: false,
            sector,
            sectors: self.req_sectors as u32,
            prio: None,
            tag,
        })
    }

    fn progress(&self) -> Option<(u64, u64)> {
        self.limit.map(|l| (self.issued, l))
    }

    fn complete(&mut self, tag: u64, _now: Nanos) {
        self.outstanding.remove(&tag);
        if self.outstanding.len() + self.cfg.batch as usize <= self.cfg.nr_requests as usize {
            self.throttled = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::HandDriver;

    fn env() -> BuildEnv {
        BuildEnv::new(1 << 21, 1, "writer") // 1 GiB
    }

    #[test]
    fn writer_keeps_the_queue_full_but_never_past_nr_requests() {
        let mut w = StreamWriter::new(StreamWriterConfig::default(), &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(2), Nanos::from_secs(2)).run(&mut w);
        assert_eq!(rec.max_outstanding, 128);
        assert!(rec.done_at.is_none(), "a background writer never finishes");
        assert!(rec.issued.len() > 1000);
        assert!(rec
            .issued
            .iter()
            .all(|i| i.spec.op == Op::Write && !i.spec.sync && i.spec.sectors == 256));
    }

    #[test]
    fn a_writer_with_a_batch_refills_only_after_that_many_complete() {
        // 2.4's batch_requests: with 8 of 8 outstanding it waits for 4 completions, then
        // writes 4 more at once.
        let cfg = StreamWriterConfig {
            nr_requests: 8,
            batch: 4,
            ..Default::default()
        };
        let mut w = StreamWriter::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_ms(20)).run(&mut w);
        let at: Vec<u64> = rec
            .issued
            .iter()
            .map(|i| i.at.as_ns() / 1_000_000)
            .collect();
        // Eight at 0, then four at 4 ms (after four 1 ms services), four at 8 ms, ...
        assert_eq!(&at[..16], &[0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8]);
        assert_eq!(rec.max_outstanding, 8);
        let bad = StreamWriterConfig {
            nr_requests: 8,
            batch: 9,
            ..Default::default()
        };
        assert_eq!(StreamWriter::new(bad, &env()).unwrap_err().field, "batch");
    }

    #[test]
    fn writer_stays_in_its_region_and_wraps_sequentially() {
        let cfg = StreamWriterConfig {
            offset: Some(1 << 20),
            size: Some(1 << 20),
            nr_requests: 4,
            total_bytes: Some(3 << 20),
            ..Default::default()
        };
        let mut w = StreamWriter::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut w);
        let sectors: Vec<u64> = rec.issued.iter().map(|i| i.spec.sector).collect();
        assert_eq!(sectors.len(), 24);
        for (i, s) in sectors.iter().enumerate() {
            assert_eq!(*s, 2048 + (i as u64 % 8) * 256);
        }
        assert_eq!(rec.outstanding_at_done, 0);
        assert!(rec.done_at.is_some());
    }

    #[test]
    fn rate_cap_limits_throughput() {
        let cfg = StreamWriterConfig {
            rate: Some(4_000 * 1024),
            request_bytes: 64 * 1024,
            ..Default::default()
        };
        let mut w = StreamWriter::new(cfg, &env()).unwrap();
        let rec = HandDriver::new(1, Nanos::from_ms(1), Nanos::from_secs(10)).run(&mut w);
        let bytes: u64 = rec
            .issued
            .iter()
            .filter(|i| i.done.is_some())
            .map(|i| u64::from(i.spec.sectors) * 512)
            .sum();
        let kb_s = bytes as f64 / 1024.0 / 10.0;
        assert!((3900.0..=4100.0).contains(&kb_s), "{kb_s} KB/s");
        assert_eq!(rec.max_outstanding, 1);
    }

    #[test]
    fn default_region_is_the_upper_half() {
        let w = StreamWriter::new(StreamWriterConfig::default(), &env()).unwrap();
        assert_eq!(
            w.region(),
            Region {
                start: 1 << 20,
                len: 1 << 20
            }
        );
    }

    #[test]
    fn bad_settings_name_their_field() {
        let e = |cfg| StreamWriter::new(cfg, &env()).unwrap_err().field;
        assert_eq!(
            e(StreamWriterConfig {
                nr_requests: 0,
                ..Default::default()
            }),
            "nr_requests"
        );
        assert_eq!(
            e(StreamWriterConfig {
                request_bytes: 100,
                ..Default::default()
            }),
            "request_bytes"
        );
        assert_eq!(
            e(StreamWriterConfig {
                offset_frac: Some(2.0),
                ..Default::default()
            }),
            "offset_frac"
        );
    }
}
