//! The counters of `/sys/block/<dev>/stat`, kept by the block layer.
//!
//! The kernel's file (Documentation/block/stat.rst) has 17 fields; [`DiskStat`] keeps them with
//! the same meaning and order. As in blk-mq, a request counts as in flight from its allocation
//! (its insertion into the block layer, so time queued in the scheduler counts) to its
//! completion (`blk_account_io_start` .. `blk_account_io_done`); `ios`, sectors and ticks are
//! added when a request completes, a merge when a bio is merged into a queued request
//! (`blk_account_io_merge_bio`). Ticks are kept in nanoseconds and shown in milliseconds.

use std::fmt;

use crate::request::Op;
use crate::time::Nanos;

/// The counters of one direction (read, write, discard) or of flushes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirStat {
    /// Requests completed.
    pub ios: u64,
    /// Bios merged into a queued request.
    pub merges: u64,
    /// Sectors transferred.
    pub sectors: u64,
    /// Time spent by requests, from allocation to completion, summed; nanoseconds.
    pub ticks_ns: u64,
}

/// The 17 counters of `/sys/block/<dev>/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStat {
    /// Reads.
    pub read: DirStat,
    /// Writes.
    pub write: DirStat,
    /// Discards.
    pub discard: DirStat,
    /// Flushes (`merges` and `sectors` stay 0, as in the kernel).
    pub flush: DirStat,
    /// Requests allocated and not yet completed.
    pub in_flight: u64,
    /// Time with at least one request in flight, nanoseconds.
    pub io_ticks_ns: u64,
    /// Time in flight summed over requests (the weighted queue time), nanoseconds.
    pub time_in_queue_ns: u64,
    busy_since: Option<Nanos>,
}

impl DiskStat {
    fn dir_mut(&mut self, op: Op) -> &mut DirStat {
        match op {
            Op::Read => &mut self.read,
            Op::Write => &mut self.write,
            Op::Discard => &mut self.discard,
            Op::Flush => &mut self.flush,
        }
    }

    /// A request was allocated at `now`.
    pub(crate) fn started(&mut self, now: Nanos) {
        if self.in_flight == 0 {
            self.busy_since = Some(now);
        }
        self.in_flight += 1;
    }

    /// A bio of `op` was merged into a queued request.
    pub(crate) fn merged(&mut self, op: Op) {
        self.dir_mut(op).merges += 1;
    }

    /// A request of `op` and `sectors`, allocated at `started`, completed at `now`.
    pub(crate) fn done(&mut self, op: Op, sectors: u32, started: Nanos, now: Nanos) {
        let spent = now.saturating_sub(started).as_ns();
        let d = self.dir_mut(op);
        d.ios += 1;
        if op != Op::Flush {
            d.sectors += u64::from(sectors);
        }
        d.ticks_ns += spent;
        self.time_in_queue_ns += spent;
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.in_flight == 0 {
            if let Some(t) = self.busy_since.take() {
                self.io_ticks_ns += now.saturating_sub(t).as_ns();
            }
        }
    }

    /// `io_ticks` including the current busy period up to `now`.
    pub fn io_ticks_at(&self, now: Nanos) -> Nanos {
        let open = self.busy_since.map_or(0, |t| now.saturating_sub(t).as_ns());
        Nanos(self.io_ticks_ns + open)
    }

    /// The 17 fields in the kernel's order, ticks in milliseconds, as of `now`.
    pub fn fields(&self, now: Nanos) -> [u64; 17] {
        let ms = |ns: u64| ns / 1_000_000;
        [
            self.read.ios,
            self.read.merges,
            self.read.sectors,
            ms(self.read.ticks_ns),
            self.write.ios,
            self.write.merges,
            self.write.sectors,
            ms(self.write.ticks_ns),
            self.in_flight,
            ms(self.io_ticks_at(now).as_ns()),
            ms(self.time_in_queue_ns),
            self.discard.ios,
            self.discard.merges,
            self.discard.sectors,
            ms(self.discard.ticks_ns),
            self.flush.ios,
            ms(self.flush.ticks_ns),
        ]
    }

    /// Parse one line of `/sys/block/<dev>/stat` (11, 15 or 17 fields; ticks in ms).
    pub fn parse(line: &str) -> Result<DiskStat, String> {
        let v: Vec<u64> = line
            .split_whitespace()
            .enumerate()
            .map(|(i, f)| {
                f.parse::<u64>()
                    .map_err(|e| format!("field {}: {f:?}: {e}", i + 1))
            })
            .collect::<Result<_, _>>()?;
        if v.len() < 11 {
            return Err(format!("{} fields, expected 11, 15 or 17", v.len()));
        }
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        let ns = |i: usize| get(i) * 1_000_000;
        let dir = |a: usize| DirStat {
            ios: get(a),
            merges: get(a + 1),
            sectors: get(a + 2),
            ticks_ns: ns(a + 3),
        };
        Ok(DiskStat {
            read: dir(0),
            write: dir(4),
            discard: dir(11),
            flush: DirStat {
                ios: get(15),
                merges: 0,
                sectors: 0,
                ticks_ns: ns(16),
            },
            in_flight: get(8),
            io_ticks_ns: ns(9),
            time_in_queue_ns: ns(10),
            busy_since: None,
        })
    }

    /// The difference `self - earlier` of the cumulative fields (in flight is `self`'s).
    pub fn since(&self, earlier: &DiskStat) -> DiskStat {
        let d = |a: &DirStat, b: &DirStat| DirStat {
            ios: a.ios.saturating_sub(b.ios),
            merges: a.merges.saturating_sub(b.merges),
            sectors: a.sectors.saturating_sub(b.sectors),
            ticks_ns: a.ticks_ns.saturating_sub(b.ticks_ns),
        };
        DiskStat {
            read: d(&self.read, &earlier.read),
            write: d(&self.write, &earlier.write),
            discard: d(&self.discard, &earlier.discard),
            flush: d(&self.flush, &earlier.flush),
            in_flight: self.in_flight,
            io_ticks_ns: self.io_ticks_ns.saturating_sub(earlier.io_ticks_ns),
            time_in_queue_ns: self
                .time_in_queue_ns
                .saturating_sub(earlier.time_in_queue_ns),
            busy_since: None,
        }
    }
}

impl fmt::Display for DiskStat {
    /// One line laid out as the kernel's `part_stat_show` prints it (open busy period not
    /// counted: use [`DiskStat::fields`] for a reading at a given time).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let now = self.busy_since.unwrap_or(Nanos::ZERO);
        for (i, x) in self.fields(now).iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{x:>8}")?;
        }
        writeln!(f)
    }
}
