//! The cgroup v2 I/O controllers that sit at the block layer's rq_qos position
//! ([`crate::block::QosChain`]): each is a sans-IO state machine fed the bios and requests the
//! layer sees, and answering whether a bio may go on now.
//!
//! - [`iocost`]: blk-iocost (`io.cost.model`, `io.cost.qos`, `io.weight`), proportional
//!   control of device time through a linear cost model and per-group virtual time.

pub mod iocost;
