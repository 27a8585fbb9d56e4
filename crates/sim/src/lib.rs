//! # elevator-sim: a deterministic discrete-event simulator and DiskSim-class device models
//!
//! The [`engine`] drives jobs (from `elevator-workload`) through a scheduler (from
//! `elevator-core`) onto a [`Device`]. Everything random comes from the scenario's seed, and
//! events at the same instant are ordered by a sequence number, so the same scenario and seed
//! give the same result, byte for byte.
//!
//! - [`engine`]: the event loop, [`engine::Simulation`].
//! - [`device`]: the device interface; [`fixed`]: an ideal fixed-latency device.
//! - [`scenario`]: scenario files (TOML): drive, groups, jobs.

#![deny(missing_docs)]

pub mod device;
pub mod disksim;
pub mod engine;
pub mod fixed;
pub mod hdd;
mod located;
pub mod scenario;
pub mod validate;

pub use device::{Device, Service};
pub use engine::{JobSlot, RunReport, Simulation};
