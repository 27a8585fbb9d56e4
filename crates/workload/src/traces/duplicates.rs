//! Exact duplicates in a trace: a record equal in time, process, operation, sector and
//! length to one just before it at the same time, the mark of a trace whose lines were
//! written twice (a file concatenated line by line with itself, a collector that logged each
//! event twice).
//!
//! Neither blkparse nor fio drops such a record (tried on 2026-12-02 with blkparse 1.2.0 and
//! fio 3.33): blkparse prints both copies of a binary trace's every event, the same sequence
//! number twice, and counts both in its totals ("Reads Queued: 6" for 3 requests); fio's
//! `read_iolog` of a log whose every line is twice issues each (`issued rwts: total=4` for
//! 2). Each is a request a kernel could issue
//! (two reads of the same sectors in the same microsecond), so a replay keeps them too, but
//! says how many there were and where the first is ([`Duplicates::note`]), so that the
//! doubled load is never replayed without a word.
//!
//! Memory is bounded: a record is compared with the last [`WINDOW`] records of its time
//! stamp only (a doubled trace repeats each record next to itself, or within the few records
//! of one instant).

use std::collections::VecDeque;

use elevator_core::{Nanos, Op};

use super::record::{RecordAt, TraceRecord};

/// How many records of one time stamp a record is compared with.
pub const WINDOW: usize = 16;

/// What makes two records the same request.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    process: u32,
    device: u32,
    op: Op,
    sector: u64,
    sectors: u32,
}

/// Counts exact duplicates in a stream of records, naming the first.
#[derive(Default)]
pub struct Duplicates {
    /// The time stamp of the records in `recent`.
    time: Option<Nanos>,
    /// The last records stamped `time`, at most [`WINDOW`].
    recent: VecDeque<Key>,
    count: u64,
    first: Option<RecordAt>,
}

impl Duplicates {
    /// Look at the next record `r`, as the trace stamps it; `at` says where it was read
    /// (asked only for the first duplicate).
    pub fn note(&mut self, r: &TraceRecord, at: impl FnOnce() -> RecordAt) {
        let key = Key {
            process: r.process,
            device: r.device,
            op: r.op,
            sector: r.sector,
            sectors: r.sectors,
        };
        if self.time != Some(r.time) {
            self.time = Some(r.time);
            self.recent.clear();
        } else if self.recent.contains(&key) {
            self.count += 1;
            if self.first.is_none() {
                self.first = Some(at());
            }
            return;
        }
        if self.recent.len() == WINDOW {
            self.recent.pop_front();
        }
        self.recent.push_back(key);
    }

    /// Records so far that repeat one before them exactly.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Where the first of them is.
    pub fn first(&self) -> Option<RecordAt> {
        self.first.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Position;

    fn read(time: u64, sector: u64) -> TraceRecord {
        TraceRecord {
            time: Nanos::from_ns(time),
            process: 1,
            device: 0,
            op: Op::Read,
            sync: true,
            meta: false,
            sector,
            sectors: 8,
            service: None,
        }
    }

    fn at(line: usize) -> RecordAt {
        RecordAt {
            file: "t".into(),
            at: Position::Line(line),
            time_field: "time",
        }
    }

    /// Every record twice: half of them counted, the first named at its line.
    #[test]
    fn every_record_twice_counts_each_second_copy_and_names_the_first() {
        let mut d = Duplicates::default();
        let recs: Vec<_> = (0..100).flat_map(|i| [read(i, i * 8); 2]).collect();
        for (i, r) in recs.iter().enumerate() {
            d.note(r, || at(i + 1));
        }
        assert_eq!(d.count(), 100);
        assert_eq!(d.first(), Some(at(2)));
    }

    /// Records of one instant repeated as a group (A B A B) are found; the same request at
    /// another time, or another request at the same time, is not a duplicate.
    #[test]
    fn a_group_of_one_instant_repeated_is_found_and_distinct_requests_are_not() {
        let mut d = Duplicates::default();
        for r in [read(5, 0), read(5, 8), read(5, 0), read(5, 8)] {
            d.note(&r, || at(0));
        }
        assert_eq!(d.count(), 2);
        let mut d = Duplicates::default();
        let mut write = read(1, 0);
        write.op = Op::Write;
        for r in [read(0, 0), read(1, 0), write, read(1, 16), read(2, 0)] {
            d.note(&r, || at(0));
        }
        assert_eq!(d.count(), 0);
        assert_eq!(d.first(), None);
    }
}
