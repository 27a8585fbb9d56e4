//! How closely two dispatch sequences agree: the kernel's, recorded through tracefs
//! ([`crate::traces::ftrace`]), and ours, replaying the same requests. Pure functions over
//! request indices; no scheduler, no clock.
//!
//! - A scheduler's history is a [`QueueEvent`] log: requests arrive in its queue, leave it
//!   unserved (merged into another) or are dispatched. [`decisions`] turns the log into the
//!   [`Decision`]s it made: at each dispatch, the set it chose from and its choice.
//! - [`compare`] counts, decision by decision, where both chose the same request from the same
//!   queued set (the agreement figure), where the sets were already different (the runs had
//!   diverged), and the first decision that differs.
//! - [`kendall_distance`] is the normalized Kendall tau distance between two orders of the
//!   same requests (the share of pairs they order differently), and [`windowed_kendall`]
//!   takes it over consecutive windows of the first sequence, so one early divergence does
//!   not colour the whole run.

use std::collections::{BTreeSet, HashMap};

/// One event of a scheduler's queue, by request index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueEvent {
    /// The request enters the queue (insertion; again after a requeue).
    Arrive(usize),
    /// It leaves without being dispatched (merged into another request).
    Leave(usize),
    /// It is dispatched.
    Dispatch(usize),
}

/// One dispatch decision: what was queued, and what was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The requests queued when the choice was made, ascending (the chosen one among them).
    pub queued: Vec<usize>,
    /// The request dispatched.
    pub chosen: usize,
}

/// The decisions of a queue log, in order. A request dispatched without having arrived is
/// taken to arrive just before (a direct issue).
pub fn decisions(log: &[QueueEvent]) -> Vec<Decision> {
    let mut queued = BTreeSet::new();
    let mut out = Vec::new();
    for e in log {
        match *e {
            QueueEvent::Arrive(i) => {
                queued.insert(i);
            }
            QueueEvent::Leave(i) => {
                queued.remove(&i);
            }
            QueueEvent::Dispatch(i) => {
                queued.insert(i);
                out.push(Decision {
                    queued: queued.iter().copied().collect(),
                    chosen: i,
                });
                queued.remove(&i);
            }
        }
    }
    out
}

/// Two runs' decisions compared position by position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Agreement {
    /// The reference's decisions (the kernel's): the denominator.
    pub decisions: usize,
    /// Positions where both chose from the same queued set.
    pub same_set: usize,
    /// Of those, positions where both chose the same request: the agreement.
    pub same_choice: usize,
    /// Positions where both dispatched the same request, whatever was queued.
    pub same_request: usize,
    /// The first position where the two differ (queued set or choice), if any; a run shorter
    /// than the reference differs where it ends.
    pub first_divergence: Option<usize>,
}

impl Agreement {
    /// The share of the reference's decisions where the other run chose the same request
    /// from the same queued set (1 when there were none).
    pub fn share(&self) -> f64 {
        if self.decisions == 0 {
            1.0
        } else {
            self.same_choice as f64 / self.decisions as f64
        }
    }
}

/// Compare `ours` with the `reference` (the kernel's), decision by decision.
pub fn compare(reference: &[Decision], ours: &[Decision]) -> Agreement {
    let mut a = Agreement {
        decisions: reference.len(),
        ..Agreement::default()
    };
    for (k, (r, o)) in reference.iter().zip(ours).enumerate() {
        let set = r.queued == o.queued;
        let choice = r.chosen == o.chosen;
        a.same_set += usize::from(set);
        a.same_choice += usize::from(set && choice);
        a.same_request += usize::from(choice);
        if !(set && choice) && a.first_divergence.is_none() {
            a.first_divergence = Some(k);
        }
    }
    if a.first_divergence.is_none() && ours.len() != reference.len() {
        a.first_divergence = Some(ours.len().min(reference.len()));
    }
    a
}

/// Inversions of `v` (pairs `i < j` with `v[i] > v[j]`), by merge sort.
fn inversions(v: &mut [usize]) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut count = inversions(&mut v[..mid]) + inversions(&mut v[mid..]);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if v[i] <= v[j] {
            merged.push(v[i]);
            i += 1;
        } else {
            // v[j] comes before every element left in the first half.
            count += (mid - i) as u64;
            merged.push(v[j]);
            j += 1;
        }
    }
    merged.extend_from_slice(&v[i..mid]);
    merged.extend_from_slice(&v[j..n]);
    v.copy_from_slice(&merged);
    count
}

/// The normalized Kendall tau distance between the orders `a` and `b` give the requests
/// they share: the share of their pairs ordered differently, 0 (same order) to 1 (reversed).
/// `None` when they share fewer than two. A request listed twice (dispatched again after a
/// requeue) counts at its first place.
pub fn kendall_distance(a: &[usize], b: &[usize]) -> Option<f64> {
    let mut pos_b = HashMap::with_capacity(b.len());
    for (k, &x) in b.iter().enumerate() {
        pos_b.entry(x).or_insert(k);
    }
    let mut seen = std::collections::HashSet::with_capacity(a.len());
    let mut p: Vec<usize> = a
        .iter()
        .filter(|x| seen.insert(**x))
        .filter_map(|x| pos_b.get(x).copied())
        .collect();
    let n = p.len() as u64;
    if n < 2 {
        return None;
    }
    Some(inversions(&mut p) as f64 / (n * (n - 1) / 2) as f64)
}

/// [`kendall_distance`] over consecutive windows of `window` requests of `a` (the last may
/// be shorter), each against the order `b` gives the same requests; windows sharing fewer
/// than two requests with `b` are left out.
pub fn windowed_kendall(a: &[usize], b: &[usize], window: usize) -> Vec<f64> {
    let window = window.max(2);
    let mut pos_b = HashMap::with_capacity(b.len());
    for (k, &x) in b.iter().enumerate() {
        pos_b.entry(x).or_insert(k);
    }
    a.chunks(window)
        .filter_map(|w| {
            let mut seen = std::collections::HashSet::with_capacity(w.len());
            let mut p: Vec<usize> = w
                .iter()
                .filter(|x| seen.insert(**x))
                .filter_map(|x| pos_b.get(x).copied())
                .collect();
            let n = p.len() as u64;
            (n >= 2).then(|| inversions(&mut p) as f64 / (n * (n - 1) / 2) as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use QueueEvent::{Arrive, Dispatch, Leave};

    #[test]
    fn a_log_gives_each_dispatch_its_queued_set() {
        let log = [
            Arrive(0),
            Arrive(1),
            Arrive(2),
            Dispatch(1),
            Leave(2),
            Dispatch(0),
            Dispatch(3),
        ];
        assert_eq!(
            decisions(&log),
            [
                Decision {
                    queued: vec![0, 1, 2],
                    chosen: 1
                },
                Decision {
                    queued: vec![0],
                    chosen: 0
                },
                Decision {
                    queued: vec![3],
                    chosen: 3
                },
            ]
        );
    }

    #[test]
    fn agreement_counts_the_same_choice_from_the_same_set() {
        let d = |q: &[usize], c| Decision {
            queued: q.to_vec(),
            chosen: c,
        };
        let kernel = [d(&[1, 2], 1), d(&[2, 3], 3), d(&[2], 2), d(&[4], 4)];
        let ours = [d(&[1, 2], 1), d(&[2, 3], 2), d(&[3], 3)];
        let a = compare(&kernel, &ours);
        assert_eq!(
            a,
            Agreement {
                decisions: 4,
                same_set: 2,
                same_choice: 1,
                same_request: 1,
                first_divergence: Some(1)
            }
        );
        assert_eq!(a.share(), 0.25);
        let same = compare(&kernel, &kernel);
        assert_eq!((same.share(), same.first_divergence), (1.0, None));
        assert_eq!(compare(&kernel, &kernel[..3]).first_divergence, Some(3));
        assert_eq!(compare(&[], &[]).share(), 1.0);
    }

    #[test]
    fn kendall_distance_is_the_share_of_pairs_ordered_differently() {
        assert_eq!(kendall_distance(&[1, 2, 3, 4], &[1, 2, 3, 4]), Some(0.0));
        assert_eq!(kendall_distance(&[1, 2, 3, 4], &[4, 3, 2, 1]), Some(1.0));
        // One swap of neighbours: 1 pair of 6.
        assert_eq!(
            kendall_distance(&[1, 2, 3, 4], &[2, 1, 3, 4]),
            Some(1.0 / 6.0)
        );
        // Only the shared requests count; a repeat counts once.
        assert_eq!(kendall_distance(&[1, 9, 2, 3, 1], &[3, 2, 1, 8]), Some(1.0));
        assert_eq!(kendall_distance(&[1, 2], &[2, 7]), None);
    }

    #[test]
    fn inversions_match_counting_every_pair() {
        let mut x: u64 = 12345;
        for n in [0usize, 1, 2, 3, 10, 97] {
            let v: Vec<usize> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 33) as usize % 50
                })
                .collect();
            let slow = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| v[i] > v[j])
                .count() as u64;
            assert_eq!(inversions(&mut v.clone()), slow, "{v:?}");
        }
    }

    #[test]
    fn windows_localize_a_divergence() {
        let a: Vec<usize> = (0..12).collect();
        let mut b = a.clone();
        b.swap(8, 9);
        assert_eq!(windowed_kendall(&a, &b, 4), [0.0, 0.0, 1.0 / 6.0]);
        // A last window of one request has no pair.
        assert_eq!(windowed_kendall(&a[..9], &b, 4), [0.0, 0.0]);
    }
}
