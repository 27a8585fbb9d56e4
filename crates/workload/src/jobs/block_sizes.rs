//! fio's block sizes beyond one `bs`: `bsrange` and `bssplit`, drawn per I/O as fio's
//! `get_next_buflen` (io_u.c) draws them, with its option parsing's fix-ups (`bssplit_ddir`
//! in options.c; fio commit f534438, August 2026).
//!
//! - `bsrange=min-max`: a size of `min + max * u` for `u` uniform in [0, 1), aligned down to
//!   `min` and capped at `max` (fio's formula, which favours `max`: `min` .. `max` is not
//!   uniform).
//! - `bssplit=4k/10:64k/90`: each size with its share in percent. A share left out (or 0) is
//!   an equal part of what the others leave; a share over 100 counts as 100. The entries are
//!   kept in ascending order of share, and a draw walks them adding shares until the
//!   cumulative share covers it, as fio does.
//! - Either way a size that would run past the region's end is drawn again; the smallest
//!   always fits where an I/O may start. The draws come from a generator of their own, so
//!   the offsets a job visits do not depend on its sizes' draws (fio keeps `bsrange_state`
//!   apart too).

use serde::{Deserialize, Serialize};

/// The most entries fio's `bssplit` takes (`BSSPLIT_MAX`).
pub const BSSPLIT_MAX: usize = 64;

/// A job's block sizes beyond one `bs`, per direction (`None`: that direction's I/Os are
/// all `bs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlockSizes {
    /// The reads'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<SizeMix>,
    /// The writes'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<SizeMix>,
}

impl BlockSizes {
    /// Direction `d`'s (0 reads, 1 writes).
    pub fn of(&self, d: usize) -> Option<&SizeMix> {
        if d == 0 {
            self.read.as_ref()
        } else {
            self.write.as_ref()
        }
    }

    /// Both directions' that are given.
    pub fn given(&self) -> impl Iterator<Item = &SizeMix> {
        self.read.iter().chain(self.write.iter())
    }
}

/// The block sizes of one direction, beyond one `bs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum SizeMix {
    /// fio `bsrange=min-max`: sizes between `min` and `max` bytes.
    Range {
        /// Smallest size, bytes.
        min: u64,
        /// Largest size, bytes.
        max: u64,
    },
    /// fio `bssplit`: (size in bytes, share in percent; 0 for "an equal part of the rest").
    Split(Vec<(u64, u32)>),
}

impl SizeMix {
    /// Every size it may draw, bytes.
    pub fn sizes(&self) -> Vec<u64> {
        match self {
            SizeMix::Range { min, max } => vec![*min, *max],
            SizeMix::Split(v) => v.iter().map(|&(bs, _)| bs).collect(),
        }
    }

    /// The fio option it stands for.
    pub fn option(&self) -> &'static str {
        match self {
            SizeMix::Range { .. } => "bsrange",
            SizeMix::Split(_) => "bssplit",
        }
    }

    /// Why it cannot be drawn from, if it cannot (sizes are checked by the caller).
    pub fn check(&self) -> Result<(), String> {
        match self {
            SizeMix::Range { min, max } if min > max => Err(format!(
                "the smallest size ({min} bytes) is larger than the largest ({max} bytes)"
            )),
            SizeMix::Range { .. } => Ok(()),
            SizeMix::Split(v) if v.is_empty() => Err("no block size given".into()),
            SizeMix::Split(v) if v.len() > BSSPLIT_MAX => Err(format!(
                "{} sizes: fio takes at most {BSSPLIT_MAX}",
                v.len()
            )),
            SizeMix::Split(v) => {
                let given: u32 = v.iter().map(|&(_, p)| p.min(100)).sum();
                if given > 100 {
                    Err(format!("the shares add up to {given}%, more than 100%"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// How one direction's sizes are drawn.
#[derive(Clone, Debug)]
pub(crate) struct SizeDraw {
    /// Smallest size, bytes (what offsets are aligned to).
    pub min: u64,
    max: u64,
    /// For `bssplit`: (size, share), fixed up and in ascending order of share.
    split: Vec<(u64, u32)>,
}

impl SizeDraw {
    /// Every I/O of `bs` bytes.
    pub fn fixed(bs: u64) -> SizeDraw {
        SizeDraw {
            min: bs,
            max: bs,
            split: Vec::new(),
        }
    }

    /// The draw `mix` gives (checked with [`SizeMix::check`]).
    pub fn of(mix: &SizeMix) -> SizeDraw {
        match mix {
            SizeMix::Range { min, max } => SizeDraw {
                min: *min,
                max: *max,
                split: Vec::new(),
            },
            SizeMix::Split(v) => {
                let mut split: Vec<(u64, u32)> =
                    v.iter().map(|&(bs, p)| (bs, p.min(100))).collect();
                let missing = split.iter().filter(|&&(_, p)| p == 0).count() as u32;
                if missing > 0 {
                    let given: u32 = split.iter().map(|&(_, p)| p).sum();
                    let share = if missing == 1 && split.len() == 1 {
                        100
                    } else {
                        (100 - given) / missing
                    };
                    for e in split.iter_mut().filter(|e| e.1 == 0) {
                        e.1 = share;
                    }
                }
                split.sort_by_key(|&(_, p)| p);
                SizeDraw {
                    min: v.iter().map(|&(bs, _)| bs).min().unwrap_or(512),
                    max: v.iter().map(|&(bs, _)| bs).max().unwrap_or(512),
                    split,
                }
            }
        }
    }

    /// Whether every I/O has the same size.
    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }

    /// A size for an I/O with `room` bytes before the region's end (at least `min`), drawn
    /// with `next_u32`.
    pub fn draw(&self, room: u64, mut next_u32: impl FnMut() -> u32) -> u64 {
        if self.is_fixed() {
            return self.min;
        }
        let fits = |len: u64| len <= room;
        let rand_max = u64::from(u32::MAX);
        // fio draws until a size fits; bounded here, where a split that gives its smallest
        // size no share could draw forever (the smallest fits, the loop's last resort).
        for _ in 0..1024 {
            let r = u64::from(next_u32());
            let mut len = if self.split.is_empty() {
                self.min + (self.max as f64 * (r as f64 / (rand_max as f64 + 1.0))) as u64
            } else {
                let mut len = 0;
                let mut cumulative = 0u64;
                for &(bs, share) in &self.split {
                    if share == 0 {
                        continue;
                    }
                    len = bs;
                    cumulative += u64::from(share);
                    if r / cumulative <= rand_max / 100 && fits(bs) {
                        break;
                    }
                }
                len
            };
            if self.min.is_power_of_two() {
                len &= !(self.min - 1);
            } else {
                len -= len % self.min;
            }
            len = len.min(self.max);
            if len > 0 && fits(len) {
                return len;
            }
        }
        self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn shares(draw: &SizeDraw, room: u64, n: usize) -> std::collections::BTreeMap<u64, f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..n {
            *counts
                .entry(draw.draw(room, || rng.next_u32()))
                .or_insert(0.0) += 1.0;
        }
        counts.values_mut().for_each(|c| *c /= n as f64);
        counts
    }

    /// `bssplit=4k/10:64k/50:32k/40`: each size about as often as its share.
    #[test]
    fn a_split_draws_each_size_as_often_as_its_share() {
        let d = SizeDraw::of(&SizeMix::Split(vec![(4096, 10), (65536, 50), (32768, 40)]));
        let s = shares(&d, u64::MAX, 100_000);
        for (bs, want) in [(4096, 0.10), (32768, 0.40), (65536, 0.50)] {
            assert!((s[&bs] - want).abs() < 0.01, "{bs}: {} want {want}", s[&bs]);
        }
    }

    /// `bssplit_ddir`: shares left out split what the given ones leave; one size alone with
    /// none is 100%; a share over 100 counts as 100; entries sorted by share.
    #[test]
    fn shares_left_out_split_the_rest_as_fio_fixes_them_up() {
        let d = SizeDraw::of(&SizeMix::Split(vec![(4096, 0), (8192, 40), (16384, 0)]));
        assert_eq!(d.split, [(4096, 30), (16384, 30), (8192, 40)]);
        let d = SizeDraw::of(&SizeMix::Split(vec![(8192, 0)]));
        assert_eq!(d.split, [(8192, 100)]);
        assert_eq!((d.min, d.max), (8192, 8192));
        assert!(d.is_fixed());
        let d = SizeDraw::of(&SizeMix::Split(vec![(4096, 250)]));
        assert_eq!(d.split, [(4096, 100)]);
        assert!(SizeMix::Split(vec![(4096, 60), (8192, 60)])
            .check()
            .is_err());
        assert!(SizeMix::Split(vec![]).check().is_err());
        assert!(SizeMix::Range {
            min: 8192,
            max: 4096
        }
        .check()
        .is_err());
    }

    /// `bsrange=4k-16k`: `min + max * u` aligned down to `min` and capped at `max`, so 4k
    /// comes a quarter of the time, 8k and 12k a quarter each, and 16k the last quarter
    /// (everything from 16k up).
    #[test]
    fn a_range_draws_min_plus_a_fraction_of_max_as_fio_does() {
        let d = SizeDraw::of(&SizeMix::Range {
            min: 4096,
            max: 16384,
        });
        let s = shares(&d, u64::MAX, 100_000);
        for (bs, want) in [(4096, 0.25), (8192, 0.25), (12288, 0.25), (16384, 0.25)] {
            assert!((s[&bs] - want).abs() < 0.01, "{bs}: {} want {want}", s[&bs]);
        }
    }

    /// Near the region's end a size that would run past it is drawn again: with 8 KiB left
    /// only 4k and 8k come.
    #[test]
    fn a_size_that_runs_past_the_end_is_drawn_again() {
        let d = SizeDraw::of(&SizeMix::Split(vec![(4096, 50), (8192, 25), (65536, 25)]));
        let s = shares(&d, 8192, 10_000);
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), [4096, 8192]);
    }
}
