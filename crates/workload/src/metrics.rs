//! Per-job figures: bytes, IOPS, latency histograms (hdrhistogram), wall time to finish.
//!
//! A job's latencies are kept at hdrhistogram's resolution (3 significant figures), first as a
//! sparse list of (bucket, count) pairs and, once a job has [`DENSE_AFTER`] distinct buckets, as
//! a dense hdrhistogram. A dense histogram costs about 8 KiB per power of two up to the largest
//! latency (about 170 KiB once latencies reach a second), which a scenario of 10,000 jobs of one
//! I/O each paid twice per job (2.3 GiB, issue 32); the sparse list costs 16 bytes a bucket.
//! Every figure is computed from a dense hdrhistogram built from the same bucket counts
//! ([`Latencies::histogram`]), so percentiles, mean, deviation, minimum and maximum are the
//! ones a dense histogram of the same latencies reports (`hdrhistogram` derives all of them
//! from bucket counts alone).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use elevator_core::{Nanos, Op};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::Job;

/// Significant figures of every latency histogram.
const SIGFIG: u8 = 3;

/// Distinct buckets a job's latencies keep sparsely before they move to a dense histogram
/// (16 KiB of pairs: the size of the smallest dense histogram at 3 significant figures).
pub const DENSE_AFTER: usize = 1024;

/// A histogram only used for its bucket arithmetic (`lowest_equivalent` depends on the
/// precision alone, not on the histogram's range or counts).
fn buckets() -> &'static Histogram<u64> {
    static H: OnceLock<Histogram<u64>> = OnceLock::new();
    H.get_or_init(|| Histogram::new(SIGFIG).expect("3 significant figures is valid"))
}

/// A fresh auto-resizing dense histogram.
fn dense() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("3 significant figures is valid")
}

/// Record `count` samples of `v` into a dense histogram. `record` grows the auto-resizing
/// histogram; `saturating_record` would clamp every value to the initial highest trackable
/// value (2 ns) instead, so it is only the fallback past what a histogram can grow to.
fn record_dense(h: &mut Histogram<u64>, v: u64, count: u64) {
    if h.record_n(v, count).is_err() {
        h.saturating_record_n(v, count);
    }
}

/// Completion latencies (ns) at hdrhistogram's resolution, stored sparsely while few.
#[derive(Clone, Debug)]
pub struct Latencies(Store);

#[derive(Clone, Debug)]
enum Store {
    /// (lowest value of the bucket, samples), sorted by bucket; at most [`DENSE_AFTER`].
    Sparse(Vec<(u64, u64)>),
    /// The dense histogram, once a job has more distinct buckets.
    Dense(Box<Histogram<u64>>),
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies(Store::Sparse(Vec::new()))
    }
}

impl Latencies {
    /// Record one latency of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        match &mut self.0 {
            Store::Dense(h) => record_dense(h, ns, 1),
            Store::Sparse(v) => {
                let key = buckets().lowest_equivalent(ns);
                match v.binary_search_by_key(&key, |&(k, _)| k) {
                    Ok(i) => v[i].1 += 1,
                    Err(i) if v.len() < DENSE_AFTER => v.insert(i, (key, 1)),
                    Err(_) => {
                        let mut h = dense();
                        for &(k, c) in v.iter() {
                            record_dense(&mut h, k, c);
                        }
                        record_dense(&mut h, ns, 1);
                        self.0 = Store::Dense(Box::new(h));
                    }
                }
            }
        }
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        match &self.0 {
            Store::Dense(h) => h.len(),
            Store::Sparse(v) => v.iter().map(|&(_, c)| c).sum(),
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the latencies are still kept sparsely (fewer than [`DENSE_AFTER`] buckets).
    pub fn is_sparse(&self) -> bool {
        matches!(self.0, Store::Sparse(_))
    }

    /// The latencies as a dense hdrhistogram: borrowed once dense, built from the sparse
    /// buckets otherwise (its figures are those of a histogram that recorded every latency).
    /// Ask for it once per report, not once per figure.
    pub fn histogram(&self) -> Cow<'_, Histogram<u64>> {
        match &self.0 {
            Store::Dense(h) => Cow::Borrowed(h),
            Store::Sparse(v) => {
                let mut h = dense();
                for &(k, c) in v {
                    record_dense(&mut h, k, c);
                }
                Cow::Owned(h)
            }
        }
    }

    /// The largest latency at the histogram's resolution (its bucket's highest value).
    pub fn max(&self) -> u64 {
        match &self.0 {
            Store::Dense(h) => h.max(),
            Store::Sparse(v) => v
                .last()
                .map_or(0, |&(k, _)| buckets().highest_equivalent(k)),
        }
    }

    /// The smallest latency at the histogram's resolution (its bucket's lowest value).
    pub fn min(&self) -> u64 {
        match &self.0 {
            Store::Dense(h) => h.min(),
            Store::Sparse(v) => v.first().map_or(0, |&(k, _)| k),
        }
    }

    /// The mean latency, ns (as hdrhistogram computes it: each bucket at its median).
    pub fn mean(&self) -> f64 {
        self.histogram().mean()
    }

    /// The latency at `quantile` (0..=1), ns.
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        self.histogram().value_at_quantile(quantile)
    }
}

/// Figures for one direction (reads or writes) of one job.
#[derive(Clone, Debug, Default)]
pub struct DirMetrics {
    /// Completed I/Os.
    pub ios: u64,
    /// Completed bytes.
    pub bytes: u64,
    /// Completion latency (submit to complete), ns.
    pub latency: Latencies,
}

impl DirMetrics {
    /// Record one completed I/O.
    pub fn record(&mut self, bytes: u64, latency: Nanos) {
        self.ios += 1;
        self.bytes += bytes;
        self.latency.record(latency.as_ns().max(1));
    }
    /// A summary for reports, over `elapsed`.
    pub fn summary(&self, elapsed: Nanos) -> DirSummary {
        let secs = elapsed.as_secs_f64().max(1e-12);
        let ms = |ns: u64| ns as f64 / 1e6;
        let empty = self.ios == 0;
        let h = self.latency.histogram();
        DirSummary {
            ios: self.ios,
            bytes: self.bytes,
            iops: self.ios as f64 / secs,
            mb_s: self.bytes as f64 / 1e6 / secs,
            lat_mean_ms: if empty { 0.0 } else { h.mean() / 1e6 },
            lat_p50_ms: ms(h.value_at_quantile(0.50)),
            lat_p90_ms: ms(h.value_at_quantile(0.90)),
            lat_p95_ms: ms(h.value_at_quantile(0.95)),
            lat_p99_ms: ms(h.value_at_quantile(0.99)),
            lat_p999_ms: ms(h.value_at_quantile(0.999)),
            lat_max_ms: ms(h.max()),
        }
    }
}

/// How a driver (the simulator's engine, the real executor) records a job's completed I/Os
/// in its [`JobMetrics`], one recorder per job: at the completion, or, for a job that
/// [reaps late](Job::reaps_late) (fio reaping `iodepth_batch_complete_min` at a time), when
/// the job hands the I/O back ([`Job::take_reaped`]), as fio stamps `clat` when it reaps.
/// I/Os outside the job's figures ([`Job::counts_in_figures`]) and completions before the
/// job's start (fio's `ramp_time`) are not recorded.
#[derive(Debug, Default)]
pub struct CompletionRecorder {
    /// The job's [`Job::reaps_late`], asked once: it is fixed at the job's build.
    late: bool,
    /// Complete and not yet reaped: by tag, what the I/O did, its bytes, when submitted.
    unreaped: HashMap<u64, (Op, u64, Nanos)>,
    /// A buffer for the tags the job reaped.
    tags: Vec<u64>,
}

impl CompletionRecorder {
    /// A recorder for `job`.
    pub fn new(job: &dyn Job) -> CompletionRecorder {
        CompletionRecorder {
            late: job.reaps_late(),
            ..CompletionRecorder::default()
        }
    }

    /// The job's I/O `tag` (`op`, `bytes`, submitted at `submitted`) completed at `now`.
    #[allow(clippy::too_many_arguments)]
    pub fn completed(
        &mut self,
        metrics: &mut JobMetrics,
        job: &dyn Job,
        tag: u64,
        op: Op,
        bytes: u64,
        submitted: Nanos,
        now: Nanos,
    ) {
        if !job.counts_in_figures(tag) {
            return;
        }
        if self.late {
            self.unreaped.insert(tag, (op, bytes, submitted));
        } else if now >= metrics.started {
            metrics.record(op, bytes, now.saturating_sub(submitted));
        }
    }

    /// After a [`Job::poll`] at `now`: record the I/Os the job reaped (none unless it reaps
    /// late).
    pub fn reaped(&mut self, metrics: &mut JobMetrics, job: &mut dyn Job, now: Nanos) {
        if !self.late {
            return;
        }
        job.take_reaped(&mut self.tags);
        for tag in self.tags.drain(..) {
            let Some((op, bytes, submitted)) = self.unreaped.remove(&tag) else {
                continue;
            };
            if now >= metrics.started {
                metrics.record(op, bytes, now.saturating_sub(submitted));
            }
        }
    }
}

/// Figures for one job.
#[derive(Clone, Debug, Default)]
pub struct JobMetrics {
    /// Reads.
    pub read: DirMetrics,
    /// Writes (and discards).
    pub write: DirMetrics,
    /// Flushes: fio's `fsync`, `fdatasync` (its `sync` figures); no bytes.
    pub sync: DirMetrics,
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
            Op::Flush => self.sync.record(bytes, latency),
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
            sync: self.sync.summary(elapsed),
        }
    }
}

/// One direction, summarised.
///
/// A direction that completed no I/O has no latency: its latency fields hold 0 only as a
/// placeholder, serialised as `null` and shown as `-` in tables (read them through
/// [`latency`](Self::latency)); its rates are 0.
#[derive(Clone, Debug, PartialEq)]
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

impl DirSummary {
    /// `ms`, one of this direction's latency figures, or `None` when it completed no I/O
    /// (there is no latency to report, and 0 ms would read as an instant one).
    pub fn latency(&self, ms: f64) -> Option<f64> {
        (self.ios > 0).then_some(ms)
    }
}

impl Serialize for DirSummary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("DirSummary", 11)?;
        st.serialize_field("ios", &self.ios)?;
        st.serialize_field("bytes", &self.bytes)?;
        st.serialize_field("iops", &self.iops)?;
        st.serialize_field("mb_s", &self.mb_s)?;
        let lat = |v| self.latency(v);
        st.serialize_field("lat_mean_ms", &lat(self.lat_mean_ms))?;
        st.serialize_field("lat_p50_ms", &lat(self.lat_p50_ms))?;
        st.serialize_field("lat_p90_ms", &lat(self.lat_p90_ms))?;
        st.serialize_field("lat_p95_ms", &lat(self.lat_p95_ms))?;
        st.serialize_field("lat_p99_ms", &lat(self.lat_p99_ms))?;
        st.serialize_field("lat_p999_ms", &lat(self.lat_p999_ms))?;
        st.serialize_field("lat_max_ms", &lat(self.lat_max_ms))?;
        st.end()
    }
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
    /// Flushes (fio's `sync`).
    pub sync: DirSummary,
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

    /// Every figure of the sparse store, before and after it turns dense, is the figure a dense
    /// hdrhistogram (what every job kept before issue 32) reports for the same latencies.
    #[test]
    fn sparse_latencies_report_what_a_dense_histogram_reports() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(32);
        let qs = [
            0.0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1.0,
        ];
        for n in [0usize, 1, 2, 17, 1000, 1023, 1024, 1025, 5000, 50_000] {
            let mut ours = Latencies::default();
            let mut theirs = dense();
            for _ in 0..n {
                // Log-uniform from 1 ns to 100 s, with repeats of a few hot values.
                let v = if rng.gen_bool(0.2) {
                    [4_000_000u64, 8_100_000, 120][rng.gen_range(0..3)]
                } else {
                    (10f64.powf(rng.gen_range(0.0..11.0)) as u64).max(1)
                };
                ours.record(v);
                record_dense(&mut theirs, v, 1);
            }
            let h = ours.histogram();
            assert_eq!(ours.len(), theirs.len(), "n {n}");
            assert_eq!(ours.min(), theirs.min(), "n {n}");
            assert_eq!(ours.max(), theirs.max(), "n {n}");
            assert_eq!(h.min(), theirs.min(), "n {n}");
            assert_eq!(h.max(), theirs.max(), "n {n}");
            assert_eq!(ours.mean().to_bits(), theirs.mean().to_bits(), "n {n}");
            assert_eq!(h.stdev().to_bits(), theirs.stdev().to_bits(), "n {n}");
            for q in qs {
                assert_eq!(
                    ours.value_at_quantile(q),
                    theirs.value_at_quantile(q),
                    "n {n} q {q}"
                );
            }
            // Few latencies stay sparse: 16 bytes a bucket, not a dense histogram.
            if n < DENSE_AFTER {
                assert!(ours.is_sparse(), "n {n}");
            }
            if n >= 5000 {
                assert!(!ours.is_sparse(), "n {n}");
            }
        }
    }

    /// One I/O of a second costs a job one pair, where the dense histogram held about 170 KiB
    /// (10,000 such jobs took 2.3 GiB with two histograms each).
    #[test]
    fn one_latency_of_a_second_is_kept_in_one_pair() {
        let mut d = JobMetrics::default();
        d.record(Op::Read, 4096, Nanos::from_ms(1500));
        assert!(d.read.latency.is_sparse() && d.write.latency.is_sparse());
        match &d.read.latency.0 {
            Store::Sparse(v) => assert_eq!(v.len(), 1),
            Store::Dense(_) => unreachable!(),
        }
        let mut reference = dense();
        record_dense(&mut reference, 1_500_000_000, 1);
        assert!(reference.distinct_values() * 8 > 100_000);
        let s = d.summary("j", "/", Nanos::from_ms(2000));
        assert_eq!(
            s.read.lat_p50_ms,
            reference.value_at_quantile(0.5) as f64 / 1e6
        );
        assert_eq!(s.read.lat_max_ms, reference.max() as f64 / 1e6);
    }

    /// A job that reaps late, its reaped tags handed back when the test says; tag 9 is
    /// outside its figures (as fio's `end_fsync`).
    struct LateReaper {
        late: bool,
        reaped: Vec<u64>,
    }

    impl Job for LateReaper {
        fn name(&self) -> &str {
            "late"
        }
        fn poll(&mut self, _now: Nanos) -> crate::Action {
            crate::Action::Wait
        }
        fn complete(&mut self, _tag: u64, _now: Nanos) {}
        fn reaps_late(&self) -> bool {
            self.late
        }
        fn take_reaped(&mut self, out: &mut Vec<u64>) {
            out.append(&mut self.reaped);
        }
        fn counts_in_figures(&self, tag: u64) -> bool {
            tag != 9
        }
    }

    /// fio stamps `clat` when it reaps (`io_completed` from `io_u_queued_complete`): a late
    /// reaper's I/O counts to its reap, once; an early one to its completion; neither counts
    /// an I/O outside its figures or one completed before the job's start (`ramp_time`).
    #[test]
    fn the_recorder_counts_a_late_reapers_latency_to_its_reap_and_once() {
        let ms = Nanos::from_ms;
        let mut metrics = JobMetrics {
            started: ms(1),
            ..JobMetrics::default()
        };
        let mut job = LateReaper {
            late: true,
            reaped: Vec::new(),
        };
        let mut r = CompletionRecorder::new(&job);
        r.completed(&mut metrics, &job, 1, Op::Read, 4096, ms(2), ms(3));
        r.completed(&mut metrics, &job, 9, Op::Flush, 0, ms(2), ms(3));
        assert_eq!(metrics.read.ios, 0, "not reaped yet");
        job.reaped = vec![1, 9];
        r.reaped(&mut metrics, &mut job, ms(7));
        r.reaped(&mut metrics, &mut job, ms(8));
        assert_eq!((metrics.read.ios, metrics.sync.ios), (1, 0));
        let lat = metrics.read.latency.max();
        assert!(
            (4_999_000..=5_006_000).contains(&lat),
            "to the reap at 7 ms: {lat}"
        );

        let mut early = LateReaper {
            late: false,
            reaped: vec![1],
        };
        let mut metrics = JobMetrics {
            started: ms(1),
            ..JobMetrics::default()
        };
        let mut r = CompletionRecorder::new(&early);
        r.completed(&mut metrics, &early, 1, Op::Write, 4096, ms(0), ms(0));
        r.completed(&mut metrics, &early, 2, Op::Write, 4096, ms(2), ms(3));
        r.reaped(&mut metrics, &mut early, ms(9));
        assert_eq!(metrics.write.ios, 1, "the one before the start is left out");
        assert!((999_000..=1_001_000).contains(&metrics.write.latency.max()));
    }
}
