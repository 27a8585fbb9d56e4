//! Per-job figures: bytes, IOPS, latency histograms (hdrhistogram), wall time to finish.

use elevator_core::{Nanos, Op};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Figures for one direction (reads or writes) of one job.
#[derive(Clone, Debug)]
pub struct DirMetrics {
    /// Completed I/Os.
    pub ios: u64,
    /// Completed bytes.
    pub bytes: u64,
    /// Completion latency (submit to complete), ns.
    pub latency: Histogram<u64>,
}

impl Default for DirMetrics {
    fn default() -> Self {
        DirMetrics {
            ios: 0,
            bytes: 0,
            latency: Histogram::new(3).expect("3 significant figures is valid"),
        }
    }
}

impl DirMetrics {
    /// Record one completed I/O.
    pub fn record(&mut self, bytes: u64, latency: Nanos) {
        self.ios += 1;
        self.bytes += bytes;
        // `record` grows the auto-resizing histogram; `saturating_record` would clamp every
        // value to the initial highest trackable value (2 ns) instead.
        let v = latency.as_ns().max(1);
        if self.latency.record(v).is_err() {
            self.latency.saturating_record(v);
        }
    }
    /// A summary for reports, over `elapsed`.
    pub fn summary(&self, elapsed: Nanos) -> DirSummary {
        let secs = elapsed.as_secs_f64().max(1e-12);
        let ms = |ns: u64| ns as f64 / 1e6;
        let empty = self.ios == 0;
        DirSummary {
            ios: self.ios,
            bytes: self.bytes,
            iops: self.ios as f64 / secs,
            mb_s: self.bytes as f64 / 1e6 / secs,
            lat_mean_ms: if empty {
                0.0
            } else {
                self.latency.mean() / 1e6
            },
            lat_p50_ms: ms(self.latency.value_at_quantile(0.50)),
            lat_p90_ms: ms(self.latency.value_at_quantile(0.90)),
            lat_p95_ms: ms(self.latency.value_at_quantile(0.95)),
            lat_p99_ms: ms(self.latency.value_at_quantile(0.99)),
            lat_p999_ms: ms(self.latency.value_at_quantile(0.999)),
            lat_max_ms: ms(self.latency.max()),
        }
    }
}

/// Figures for one job.
#[derive(Clone, Debug, Default)]
pub struct JobMetrics {
    /// Reads.
    pub read: DirMetrics,
    /// Writes (and flushes, discards).
    pub write: DirMetrics,
    /// When the job started.
    pub started: Nanos,
    /// When it said `Done`, if it did.
    pub finished: Option<Nanos>,
}

impl JobMetrics {
    /// Record a completion of `op`.
    pub fn record(&mut self, op: Op, bytes: u64, latency: Nanos) {
        match op {
            Op::Read => self.read.record(bytes, latency),
            _ => self.write.record(bytes, latency),
        }
    }
    /// A summary; rates are over the job's own run time (start to finish, or to `end`).
    pub fn summary(&self, name: &str, group: &str, end: Nanos) -> JobSummary {
        let stop = self.finished.unwrap_or(end);
        let elapsed = stop.saturating_sub(self.started);
        JobSummary {
            name: name.to_string(),
            group: group.to_string(),
            seconds: elapsed.as_secs_f64(),
            finished: self.finished.is_some(),
            read: self.read.summary(elapsed),
            write: self.write.summary(elapsed),
        }
    }
}

/// One direction, summarised.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DirSummary {
    /// Completed I/Os.
    pub ios: u64,
    /// Completed bytes.
    pub bytes: u64,
    /// I/Os per second over the job's run time.
    pub iops: f64,
    /// Megabytes (10^6) per second over the job's run time.
    pub mb_s: f64,
    /// Mean latency, ms.
    pub lat_mean_ms: f64,
    /// Median latency, ms.
    pub lat_p50_ms: f64,
    /// 90th percentile latency, ms (kyber's congestion test looks at a domain's p90).
    pub lat_p90_ms: f64,
    /// 95th percentile latency, ms.
    pub lat_p95_ms: f64,
    /// 99th percentile latency, ms.
    pub lat_p99_ms: f64,
    /// 99.9th percentile latency, ms.
    pub lat_p999_ms: f64,
    /// Maximum latency, ms.
    pub lat_max_ms: f64,
}

/// One job, summarised.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct JobSummary {
    /// Job name.
    pub name: String,
    /// Group path.
    pub group: String,
    /// Wall time from start to finish (or to the end of the run), seconds.
    pub seconds: f64,
    /// Whether it finished before the run ended.
    pub finished: bool,
    /// Reads.
    pub read: DirSummary,
    /// Writes.
    pub write: DirSummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_above_the_histograms_initial_range_are_recorded_not_clamped() {
        let mut d = DirMetrics::default();
        d.record(4096, Nanos::from_ms(20));
        d.record(4096, Nanos::from_us(40));
        let max = d.latency.max();
        assert!((19_990_000..=20_020_000).contains(&max), "{max}");
        assert!((39_000..=40_100).contains(&d.latency.min()));
    }
}
