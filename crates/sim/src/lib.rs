//! # elevator-sim: a deterministic discrete-event simulator and DiskSim-class device models
//!
//! The [`engine`] drives jobs (from `elevator-workload`) through a scheduler (from
//! `elevator-core`) onto a [`Device`]. Everything random comes from the scenario's seed, and
//! events at the same instant are ordered by a sequence number, so the same scenario and seed
//! give the same result, byte for byte.
//!
//! - [`engine`]: the event loop, [`engine::Simulation`].
//! - [`cpu`]: the host's processors on the submission path (per-scheduler CPU and lock
//!   costs), optional.
//! - [`device`]: the device interface; [`fixed`]: an ideal fixed-latency device.
//! - [`scenario`]: scenario files (TOML): drive, groups, jobs.
//! - [`hdd`]: the DiskSim-class rotational model; [`ssd`]: the MQSim-class SSD model;
//!   [`drive`]: either, by built-in name or file.

#![deny(missing_docs)]

pub mod cpu;
pub mod device;
pub mod disksim;
pub mod drive;
pub mod engine;
pub mod fixed;
pub mod hdd;
mod located;
pub mod scenario;
pub mod ssd;
pub mod validate;

pub use device::{Device, Service};
pub use drive::DriveModel;
pub use engine::{JobSlot, RunReport, Simulation};
pub use located::MAX_SPEC_BYTES;
