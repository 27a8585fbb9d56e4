//! A k-way merge of time-stamped streams (a blktrace's per-CPU files, several trace files)
//! into one stream in time order; ties go to the earlier stream. Both block events and trace
//! records merge through it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use elevator_core::Nanos;

use super::record::RecordAt;
use crate::input::{InputError, Position};

/// Streams of `T` merged by time, remembering which stream and where each item came from.
pub struct ByTime<S, T> {
    parts: Vec<S>,
    heads: BinaryHeap<Reverse<(Nanos, usize)>>,
    pending: Vec<Option<(T, Option<Position>)>>,
    failed: Option<InputError>,
    /// The part and position of the item returned last.
    last: Option<(usize, Option<Position>)>,
    time: fn(&T) -> Nanos,
    position: fn(&S) -> Option<Position>,
}

impl<S, T> ByTime<S, T>
where
    S: Iterator<Item = Result<T, InputError>>,
{
    /// Merge `parts`, reading one item of each: `time` stamps an item, `position` says where
    /// a part read the item it returned last.
    pub fn new(
        mut parts: Vec<S>,
        time: fn(&T) -> Nanos,
        position: fn(&S) -> Option<Position>,
    ) -> Result<ByTime<S, T>, InputError> {
        let mut heads = BinaryHeap::new();
        let mut pending = Vec::new();
        for (i, p) in parts.iter_mut().enumerate() {
            let item = p.next().transpose()?;
            if let Some(item) = &item {
                heads.push(Reverse((time(item), i)));
            }
            pending.push(item.map(|item| (item, position(p))));
        }
        Ok(ByTime {
            parts,
            heads,
            pending,
            failed: None,
            last: None,
            time,
            position,
        })
    }

    /// The merged streams, in the order given.
    pub fn parts(&self) -> &[S] {
        &self.parts
    }

    /// The first name any part gives `pid`.
    pub fn process_name(
        &self,
        pid: u32,
        name: impl Fn(&S, u32) -> Option<String>,
    ) -> Option<String> {
        self.parts.iter().find_map(|p| name(p, pid))
    }

    /// Where the item returned last was read: its part's file and line, at the position it
    /// had when read (the part has read on since).
    pub fn last_at(&self, at: impl Fn(&S) -> Option<RecordAt>) -> Option<RecordAt> {
        let (i, pos) = self.last?;
        Some(RecordAt {
            at: pos?,
            ..at(&self.parts[i])?
        })
    }

    /// [`last_at`](Self::last_at)'s position alone.
    pub fn last_position(&self) -> Option<Position> {
        self.last?.1
    }
}

impl<S, T> Iterator for ByTime<S, T>
where
    S: Iterator<Item = Result<T, InputError>>,
{
    type Item = Result<T, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        let Reverse((_, i)) = self.heads.pop()?;
        let (out, at) = self.pending[i].take().expect("a head has its item");
        self.last = Some((i, at));
        match self.parts[i].next() {
            Some(Ok(item)) => {
                self.heads.push(Reverse(((self.time)(&item), i)));
                self.pending[i] = Some((item, (self.position)(&self.parts[i])));
            }
            Some(Err(e)) => self.failed = Some(e),
            None => {}
        }
        Some(Ok(out))
    }
}
