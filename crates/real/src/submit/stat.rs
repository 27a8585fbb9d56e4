//! The counters of `/sys/block/<dev>/stat`, kept by the submission engine.
//!
//! The kernel's file (Documentation/block/stat.rst) has 17 fields; we keep them with the same
//! meaning, counted by the block layer ([`elevator_core::block::stat`]) over the requests our
//! scheduler saw, merges included; discards are always 0 (the API has no discard). A request
//! is "in flight" from its insertion into the block layer to its completion, as blk-mq counts
//! it from allocation, so time queued in our scheduler counts in the ticks as it does in the
//! kernel's.

use std::fmt;
use std::time::Instant;

use elevator_core::block::DiskStat;
use elevator_core::Nanos;

/// The 17 counters of `/sys/block/<dev>/stat`, in its order. Ticks are milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Read requests completed.
    pub read_ios: u64,
    /// Read bios merged into a queued request.
    pub read_merges: u64,
    /// Sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent by reads, summed over requests.
    pub read_ticks: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Write bios merged into a queued request.
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

impl DiskStats {
    /// The counters from the 17 fields in the kernel's order (ticks in milliseconds).
    pub fn from_fields(f: [u64; 17]) -> DiskStats {
        DiskStats {
            read_ios: f[0],
            read_merges: f[1],
            read_sectors: f[2],
            read_ticks: f[3],
            write_ios: f[4],
            write_merges: f[5],
            write_sectors: f[6],
            write_ticks: f[7],
            in_flight: f[8],
            io_ticks: f[9],
            time_in_queue: f[10],
            discard_ios: f[11],
            discard_merges: f[12],
            discard_sectors: f[13],
            discard_ticks: f[14],
            flush_ios: f[15],
            flush_ticks: f[16],
        }
    }
}

/// The block layer's counters as the engine last published them, and the engine's start.
#[derive(Debug)]
pub(crate) struct StatView {
    stat: DiskStat,
    t0: Instant,
}

impl StatView {
    pub(crate) fn new(t0: Instant) -> StatView {
        StatView {
            stat: DiskStat::default(),
            t0,
        }
    }

    /// The engine publishes the layer's counters.
    pub(crate) fn publish(&mut self, stat: &DiskStat, t0: Instant) {
        self.stat = *stat;
        self.t0 = t0;
    }

    /// The counters as of `now`.
    pub(crate) fn snapshot(&self, now: Instant) -> DiskStats {
        let at = Nanos(now.saturating_duration_since(self.t0).as_nanos() as u64);
        DiskStats::from_fields(self.stat.fields(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::block::{Bio, BlockLayer, Limits};
    use elevator_core::noop::Noop;
    use elevator_core::{CtxId, Op};

    #[test]
    fn a_snapshot_is_the_layers_counters_with_the_open_busy_period_counted() {
        let t0 = Instant::now();
        let ms = Nanos::from_ms;
        let mut blk = BlockLayer::new(Noop::new(), Limits::depth(4));
        blk.handle_submit(Bio::new(CtxId(1), Op::Read, 0, 8), (), ms(0));
        let rq = blk.poll_dispatch(ms(0)).unwrap();
        let mut done = Vec::new();
        blk.handle_complete(rq.id, true, ms(20), &mut done);
        blk.handle_submit(Bio::new(CtxId(1), Op::Write, 80, 16), (), ms(30));
        let mut view = StatView::new(t0);
        view.publish(blk.stat(), t0);
        let s = view.snapshot(t0 + std::time::Duration::from_millis(40));
        assert_eq!((s.read_ios, s.read_sectors, s.read_ticks), (1, 8, 20));
        assert_eq!((s.in_flight, s.io_ticks), (1, 30));
        let line = s.to_string();
        assert_eq!(line.split_whitespace().count(), 17, "{line}");
        assert!(line.ends_with('\n'));
    }
}
