//! The counters of `/sys/block/<dev>/stat`, kept by the submission engine.
//!
//! The kernel's file (Documentation/block/stat.rst) has 17 fields; we keep them with the same
//! meaning, counted over the requests our scheduler saw. Merges are always 0 (the engine does
//! not merge), discards are always 0 (the API has no discard). A request is "in flight" from its
//! insertion into the scheduler to its completion, as blk-mq counts it from allocation, so time
//! queued in our scheduler counts in the ticks as it does in the kernel's.

use std::fmt;
use std::time::{Duration, Instant};

/// The 17 counters of `/sys/block/<dev>/stat`, in its order. Ticks are milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Read requests completed.
    pub read_ios: u64,
    /// Read requests merged (always 0 here).
    pub read_merges: u64,
    /// Sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent by reads, summed over requests.
    pub read_ticks: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Write requests merged (always 0 here).
    pub write_merges: u64,
    /// Sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent by writes, summed over requests.
    pub write_ticks: u64,
    /// Requests inserted and not yet completed.
    pub in_flight: u64,
    /// Milliseconds during which at least one request was in flight.
    pub io_ticks: u64,
    /// Milliseconds spent by all requests, summed (the weighted queue time).
    pub time_in_queue: u64,
    /// Discard requests completed (always 0 here).
    pub discard_ios: u64,
    /// Discard requests merged (always 0 here).
    pub discard_merges: u64,
    /// Sectors discarded (always 0 here).
    pub discard_sectors: u64,
    /// Milliseconds spent by discards (always 0 here).
    pub discard_ticks: u64,
    /// Flush requests completed.
    pub flush_ios: u64,
    /// Milliseconds spent by flushes, summed over requests.
    pub flush_ticks: u64,
}

impl fmt::Display for DiskStats {
    /// One line laid out as the kernel's `part_stat_show` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = [
            self.read_ios,
            self.read_merges,
            self.read_sectors,
            self.read_ticks,
            self.write_ios,
            self.write_merges,
            self.write_sectors,
            self.write_ticks,
            self.in_flight,
            self.io_ticks,
            self.time_in_queue,
            self.discard_ios,
            self.discard_merges,
            self.discard_sectors,
            self.discard_ticks,
            self.flush_ios,
            self.flush_ticks,
        ];
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{x:>8}")?;
        }
        writeln!(f)
    }
}

/// What kind of request a completion counts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatKind {
    Read,
    Write,
    Flush,
}

/// The counters plus what is needed to advance `io_ticks`.
#[derive(Debug)]
pub(crate) struct StatKeeper {
    stats: DiskStats,
    busy_since: Option<Instant>,
    busy_before: Duration,
}

impl StatKeeper {
    pub(crate) fn new() -> StatKeeper {
        StatKeeper {
            stats: DiskStats::default(),
            busy_since: None,
            busy_before: Duration::ZERO,
        }
    }

    /// A request entered the scheduler at `now`.
    pub(crate) fn inserted(&mut self, now: Instant) {
        if self.stats.in_flight == 0 {
            self.busy_since = Some(now);
        }
        self.stats.in_flight += 1;
    }

    /// A request of `sectors` completed at `now` after `spent` in flight.
    pub(crate) fn completed(
        &mut self,
        kind: StatKind,
        sectors: u64,
        spent: Duration,
        now: Instant,
    ) {
        let ms = spent.as_millis() as u64;
        let s = &mut self.stats;
        match kind {
            StatKind::Read => {
                s.read_ios += 1;
                s.read_sectors += sectors;
                s.read_ticks += ms;
            }
            StatKind::Write => {
                s.write_ios += 1;
                s.write_sectors += sectors;
                s.write_ticks += ms;
            }
            StatKind::Flush => {
                s.flush_ios += 1;
                s.flush_ticks += ms;
            }
        }
        s.time_in_queue += ms;
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            if let Some(t) = self.busy_since.take() {
                self.busy_before += now.saturating_duration_since(t);
            }
        }
    }

    /// The counters as of `now`.
    pub(crate) fn snapshot(&self, now: Instant) -> DiskStats {
        let busy = self.busy_before
            + self
                .busy_since
                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        DiskStats {
            io_ticks: busy.as_millis() as u64,
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_follow_the_kernel_fields_and_io_ticks_counts_busy_time_once() {
        let t0 = Instant::now();
        let mut k = StatKeeper::new();
        // Two overlapping requests: busy for 30 ms, though 50 ms of request time is summed.
        k.inserted(t0);
        k.inserted(t0 + Duration::from_millis(10));
        k.completed(
            StatKind::Read,
            8,
            Duration::from_millis(20),
            t0 + Duration::from_millis(20),
        );
        assert_eq!(k.snapshot(t0 + Duration::from_millis(25)).in_flight, 1);
        k.completed(
            StatKind::Write,
            16,
            Duration::from_millis(20),
            t0 + Duration::from_millis(30),
        );
        let s = k.snapshot(t0 + Duration::from_millis(100));
        assert_eq!((s.read_ios, s.read_sectors, s.read_ticks), (1, 8, 20));
        assert_eq!((s.write_ios, s.write_sectors, s.write_ticks), (1, 16, 20));
        assert_eq!((s.in_flight, s.io_ticks, s.time_in_queue), (0, 30, 40));
        let line = s.to_string();
        assert_eq!(line.split_whitespace().count(), 17, "{line}");
        assert!(line.ends_with('\n'));
    }
}
