//! The cgroup v2 io controllers that sit above the scheduler, at the block layer's rq_qos
//! position ([`crate::block::qos`]): blk-throttle (`io.max`, [`throttle`]), blk-iolatency
//! (`io.latency`) and blk-iocost (`io.cost`, [`iocost`]).
//!
//! They are configured per group in the [`GroupTree`] ([`crate::group::IoSettings`]: `io.max`,
//! `io.latency`'s target, `io.weight`; the device's `io.cost.model` / `io.cost.qos` lines in
//! [`crate::group::IoCostDevice`]), and installed by one function, [`chain`], which the
//! simulator, the io_uring executor and the mount's submission engine all call with the same
//! tree, so one configuration gives the same controllers in all three loops.
//!
//! Order in the chain: blk-throttle first (the kernel calls `blk_throtl_bio` from
//! `submit_bio_noacct`, before any rq_qos policy), then io.cost, then io.latency (the rq_qos
//! list is walked from its head and `rq_qos_add` puts the latest added there: io.cost, set up
//! when its files are first written, runs before io.latency, set up with the disk).

use crate::block::QosChain;
use crate::group::GroupTree;
use std::fmt;

pub mod iocost;
pub mod iolatency;
pub mod throttle;

/// What the controllers need to know about the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosDevice {
    /// `blk_queue_nonrot`: an SSD (io.latency's percentile mode; io.cost's default model).
    pub non_rotational: bool,
    /// The device's queue depth (`blk_queue_depth`: requests the device holds at once; io.cost's
    /// device class).
    pub queue_depth: usize,
    /// The queue's `nr_requests`, which io.latency's scale steps are fractions of
    /// ([`crate::block::BlockLayer::nr_requests`]: the tag set's depth under `none`, twice it,
    /// at most 256, under a blk-mq elevator).
    pub nr_requests: usize,
}

impl Default for QosDevice {
    fn default() -> Self {
        QosDevice {
            non_rotational: false,
            queue_depth: 32,
            nr_requests: 32,
        }
    }
}

/// A group's io controller setting the controllers refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosError {
    /// The group's path (`/` for a device-level line).
    pub group: String,
    /// The file, as in cgroup v2: `io.max`, `io.latency`, `io.weight`, `io.bfq.weight`,
    /// `io.cost.model`, `io.cost.qos`.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for QosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "group {:?}: {}: {}", self.group, self.field, self.reason)
    }
}

impl std::error::Error for QosError {}

/// Check every group's io controller settings against the kernel's ranges: `io.weight`
/// 1..=10000 (`CGROUP_WEIGHT_MIN..=MAX`), `io.bfq.weight` 1..=1000, an `io.latency` target
/// above zero, and `io.max` not set on the root (`CFTYPE_NOT_ON_ROOT`). Call it where the
/// tree is read (scenario, job file) so the error can name the file and line; [`chain`]
/// assumes it passed.
pub fn validate(tree: &GroupTree) -> Result<(), QosError> {
    for id in tree.ids() {
        let g = tree.get(id);
        let err = |field, reason: String| QosError {
            group: g.path.clone(),
            field,
            reason,
        };
        if let Some(w) = g.io.weight {
            if !(1..=10_000).contains(&w) {
                return Err(err("io.weight", format!("{w} is not in 1..=10000")));
            }
        }
        if let Some(w) = g.io.bfq_weight {
            if !(1..=1000).contains(&w) {
                return Err(err("io.bfq.weight", format!("{w} is not in 1..=1000")));
            }
        }
        if g.io.latency_target.is_some_and(|t| t.as_ns() == 0) {
            return Err(err("io.latency", "a target is above 0".into()));
        }
        if g.parent.is_none() && !g.io.max.is_unlimited() {
            return Err(err(
                "io.max",
                "the root group has no io.max (the kernel offers it only below the root)".into(),
            ));
        }
    }
    iocost::check_lines(tree).map_err(|(field, e)| QosError {
        group: "/".into(),
        field,
        reason: e.to_string(),
    })?;
    Ok(())
}

/// The controllers `tree` asks for on a device like `dev`, in the kernel's order (see the
/// module documentation). Empty when no group sets an io controller file.
pub fn chain(tree: &GroupTree, dev: &QosDevice) -> QosChain {
    let mut c = QosChain::default();
    if tree.ids().any(|id| !tree.get(id).io.max.is_unlimited()) {
        c.push(Box::new(throttle::Throttle::new(
            tree,
            throttle::Config::default(),
        )));
    }
    // io.cost (blk-iocost): when the device has io.cost lines or a group sets io.weight.
    if let Some(ioc) = iocost::from_tree(tree, dev) {
        c.push(Box::new(ioc));
    }
    // io.latency (blk-iolatency): when a group sets a target.
    if tree
        .ids()
        .any(|id| tree.get(id).io.latency_target.is_some())
    {
        c.push(Box::new(iolatency::IoLatency::new(
            tree,
            dev.non_rotational,
            dev.nr_requests,
        )));
    }
    c
}

#[cfg(test)]
mod tests;
