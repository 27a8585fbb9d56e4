//! fio's per-I/O priorities: the `cmdprio_percentage`, `cmdprio_class`, `cmdprio` and
//! `cmdprio_bssplit` options of its io_uring and libaio engines (engines/cmdprio.c at fio
//! commit f534438, August 2026).
//!
//! Each direction (reads, writes) has a list of [`CmdPrioSplit`]s: with `cmdprio_percentage`
//! one that applies to every I/O size, with `cmdprio_bssplit` one per size. For each read or
//! write the job issues, the split of its size is looked up (fio's `fio_cmdprio_percentage`:
//! the first whose size equals the I/O's); if its shares add up to more than 0, a number is
//! drawn uniformly from 0..100 (fio's `rand_between(&td->prio_state, 0, 99)`) and the I/O takes
//! the priority of the share it falls in, counting the shares in order; past their sum, or with
//! no split for its size, it keeps the job's own (`prio`, `prioclass`), as fio leaves
//! `sqe->ioprio` / `aio_reqprio` at the job's then.
//!
//! Deviations: the draws come from a generator of the job's own seed (ChaCha8), not fio's
//! `prio_state`, so which I/Os are picked differs from fio's, their share does not; fio's
//! `cmdprio_hint` (priority hints) is refused; fio reports completion latencies per priority,
//! elevator per job. Flushes and trims keep the job's priority (fio's io_uring sets a
//! flush's and a trim's `sqe->ioprio` to 0, the submitter's).

use elevator_core::{IoClass, IoPrio};
use serde::{Deserialize, Serialize};

/// One priority and the share of a size's I/Os that take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CmdPrioShare {
    /// Percentage of the I/Os, 0..=100.
    pub percent: u32,
    /// fio's class: 1 real time, 2 best effort, 3 idle; 0 (the kernel's `IOPRIO_CLASS_NONE`)
    /// the issuer's own, as the kernel's `bio_set_ioprio` gives such a bio (only
    /// `cmdprio_bssplit` entries can say 0).
    pub class: u8,
    /// Level 0 (highest) ..= 7.
    pub level: u8,
}

impl CmdPrioShare {
    /// The priority an I/O of this share takes; `None` for the job's own (class 0).
    pub fn prio(&self) -> Option<IoPrio> {
        let class = match self.class {
            1 => IoClass::RealTime,
            2 => IoClass::BestEffort,
            3 => IoClass::Idle,
            _ => return None,
        };
        Some(IoPrio {
            class,
            level: self.level,
        })
    }
}

/// The shares of one I/O size (or of every size).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CmdPrioSplit {
    /// The I/O size, bytes, it applies to; `None`: every size (`cmdprio_percentage`).
    pub bs: Option<u64>,
    /// The shares, in order; their percentages add up to at most 100.
    pub shares: Vec<CmdPrioShare>,
}

/// A job's per-I/O priorities, per direction. Default: none (every I/O the job's own).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CmdPrio {
    /// Reads'.
    pub read: Vec<CmdPrioSplit>,
    /// Writes'.
    pub write: Vec<CmdPrioSplit>,
}

impl CmdPrio {
    /// Whether any I/O may take a priority of its own.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.write.is_empty()
    }

    /// Direction `dir`'s splits (0 reads, 1 writes).
    pub fn of(&self, dir: usize) -> &[CmdPrioSplit] {
        if dir == 0 {
            &self.read
        } else {
            &self.write
        }
    }

    /// Why these priorities are not valid, if they are not: a class past 3, a level past 7,
    /// a size's shares past 100% (fio's `fio_cmdprio_fill_bsprio`), a size given twice.
    pub fn check(&self) -> Result<(), String> {
        for (name, splits) in [("reads", &self.read), ("writes", &self.write)] {
            for (i, s) in splits.iter().enumerate() {
                let total: u32 = s.shares.iter().map(|p| p.percent).sum();
                let of = s.bs.map_or(String::new(), |b| format!(" of {b}-byte I/Os"));
                if total > 100 {
                    return Err(format!(
                        "{name}: the shares{of} add up to {total}% (over 100)"
                    ));
                }
                if let Some(p) = s.shares.iter().find(|p| p.class > 3 || p.level > 7) {
                    return Err(format!(
                        "{name}: class {} level {} is not a priority (class 0..=3, level 0..=7)",
                        p.class, p.level
                    ));
                }
                if splits[..i].iter().any(|t| t.bs == s.bs) {
                    return Err(format!("{name}: a size given twice{of}"));
                }
            }
        }
        Ok(())
    }

    /// The priority of a `dir` I/O of `bytes` (0 reads, 1 writes): `Some(Some(p))` it takes
    /// `p`, `Some(None)` the job's own by a share of class 0, `None` the job's own. `draw`
    /// gives a number in 0..100 and is called only when the size has shares (fio draws only
    /// then).
    pub fn pick(
        &self,
        dir: usize,
        bytes: u64,
        draw: impl FnOnce() -> u32,
    ) -> Option<Option<IoPrio>> {
        let split = self
            .of(dir)
            .iter()
            .find(|s| s.bs.is_none_or(|b| b == bytes))?;
        let total: u32 = split.shares.iter().map(|p| p.percent).sum();
        if total == 0 {
            return None;
        }
        let r = draw();
        let mut upto = 0;
        for share in &split.shares {
            upto += share.percent;
            if r < upto {
                return Some(share.prio());
            }
        }
        None
    }
}

/// One `cmdprio_bssplit` entry: its I/O size (bytes), percentage, and class and level if
/// given.
pub type CmdPrioEntry = (u64, u32, Option<(u8, u8)>);

/// fio's cmdprio options as a job file gives them, before they are resolved into a
/// [`CmdPrio`] ([`CmdPrioOptions::resolve`]): a later `cmdprio_class` still applies to an
/// earlier `cmdprio_bssplit`'s entries without a class, as in fio, which resolves them when
/// the engine starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdPrioOptions {
    /// `cmdprio_percentage`, per direction (0: none).
    pub percentage: [u32; 2],
    /// `cmdprio_class`, per direction (0: not given, real time).
    pub class: [u8; 2],
    /// `cmdprio`: the level, per direction (default 0).
    pub level: [u8; 2],
    /// `cmdprio_bssplit`, per direction.
    pub bssplit: Option<[Vec<CmdPrioEntry>; 2]>,
}

impl CmdPrioOptions {
    /// Whether any option was given that picks I/Os.
    pub fn given(&self) -> bool {
        self.percentage.iter().any(|&p| p > 0) || self.bssplit.is_some()
    }

    /// The priorities these options give, as fio's `fio_cmdprio_init` resolves them: a class
    /// not given is real time; `cmdprio_percentage` and `cmdprio_bssplit` are exclusive; a
    /// `cmdprio_bssplit` entry without class and level takes `cmdprio_class` and `cmdprio`;
    /// entries of 0% are dropped; entries of one size are that size's shares, in order.
    pub fn resolve(&self) -> Result<CmdPrio, String> {
        let has_perc = self.percentage.iter().any(|&p| p > 0);
        let class = |d: usize| if self.class[d] == 0 { 1 } else { self.class[d] };
        let mut out = CmdPrio::default();
        match &self.bssplit {
            Some(_) if has_perc => {
                return Err(
                    "cmdprio_percentage and cmdprio_bssplit are mutually exclusive (as in fio)"
                        .into(),
                )
            }
            Some(entries) => {
                for (d, entries) in entries.iter().enumerate() {
                    let mut sorted: Vec<_> = entries.iter().filter(|e| e.1 > 0).collect();
                    // fio sorts the entries by size (stable here; qsort's order among equal
                    // sizes is unspecified).
                    sorted.sort_by_key(|e| e.0);
                    let splits = if d == 0 {
                        &mut out.read
                    } else {
                        &mut out.write
                    };
                    for &&(bs, percent, prio) in &sorted {
                        let (class, level) = prio.unwrap_or((class(d), self.level[d]));
                        let share = CmdPrioShare {
                            percent,
                            class,
                            level,
                        };
                        match splits.last_mut() {
                            Some(s) if s.bs == Some(bs) => s.shares.push(share),
                            _ => splits.push(CmdPrioSplit {
                                bs: Some(bs),
                                shares: vec![share],
                            }),
                        }
                    }
                }
            }
            None => {
                for d in 0..2 {
                    if self.percentage[d] > 0 {
                        let split = CmdPrioSplit {
                            bs: None,
                            shares: vec![CmdPrioShare {
                                percent: self.percentage[d],
                                class: class(d),
                                level: self.level[d],
                            }],
                        };
                        if d == 0 {
                            out.read.push(split);
                        } else {
                            out.write.push(split);
                        }
                    }
                }
            }
        }
        out.check()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(percent: u32, class: u8, level: u8) -> CmdPrioShare {
        CmdPrioShare {
            percent,
            class,
            level,
        }
    }

    /// fio's `fio_cmdprio_set_ioprio`: the draw falls in the shares in order; past their sum,
    /// or for a size without shares, the job's own; no draw where there are none.
    #[test]
    fn a_draw_picks_the_share_it_falls_in_as_fios_fio_cmdprio_set_ioprio() {
        let p = CmdPrio {
            read: vec![CmdPrioSplit {
                bs: Some(4096),
                shares: vec![share(20, 1, 0), share(30, 3, 7), share(10, 0, 0)],
            }],
            write: vec![],
        };
        let rt = IoPrio {
            class: IoClass::RealTime,
            level: 0,
        };
        let idle = IoPrio {
            class: IoClass::Idle,
            level: 7,
        };
        assert_eq!(p.pick(0, 4096, || 0), Some(Some(rt)));
        assert_eq!(p.pick(0, 4096, || 19), Some(Some(rt)));
        assert_eq!(p.pick(0, 4096, || 20), Some(Some(idle)));
        assert_eq!(p.pick(0, 4096, || 55), Some(None), "class 0: the issuer's");
        assert_eq!(p.pick(0, 4096, || 60), None);
        assert_eq!(p.pick(0, 8192, || unreachable!()), None);
        assert_eq!(p.pick(1, 4096, || unreachable!()), None);
    }

    /// fio's `fio_cmdprio_init`: percentage and bssplit exclusive, class default real time,
    /// bssplit entries without a priority take `cmdprio_class`/`cmdprio`, 0% entries dropped,
    /// a size's shares over 100% refused.
    #[test]
    fn options_resolve_as_fios_fio_cmdprio_init() {
        let o = CmdPrioOptions {
            percentage: [30, 0],
            level: [2, 2],
            ..Default::default()
        };
        let p = o.resolve().unwrap();
        assert_eq!(
            p.read,
            [CmdPrioSplit {
                bs: None,
                shares: vec![share(30, 1, 2)]
            }]
        );
        assert!(p.write.is_empty());
        let o = CmdPrioOptions {
            class: [3, 3],
            bssplit: Some([
                vec![
                    (65536, 100, Some((3, 0))),
                    (4096, 50, None),
                    (8192, 0, None),
                    (4096, 25, Some((1, 2))),
                ],
                vec![],
            ]),
            ..Default::default()
        };
        let p = o.resolve().unwrap();
        assert_eq!(
            p.read,
            [
                CmdPrioSplit {
                    bs: Some(4096),
                    shares: vec![share(50, 3, 0), share(25, 1, 2)]
                },
                CmdPrioSplit {
                    bs: Some(65536),
                    shares: vec![share(100, 3, 0)]
                }
            ]
        );
        let both = CmdPrioOptions {
            percentage: [10, 10],
            ..o.clone()
        };
        assert!(both.resolve().unwrap_err().contains("mutually exclusive"));
        let over = CmdPrioOptions {
            bssplit: Some([vec![(4096, 60, None), (4096, 50, None)], vec![]]),
            ..Default::default()
        };
        assert!(over.resolve().unwrap_err().contains("110%"));
    }
}
