//! # elevator-sim: a deterministic discrete-event simulator and DiskSim-class device models
//!
//! The engine drives jobs (from `elevator-workload`) through a scheduler (from
//! `elevator-core`) onto a [`Device`]. Everything random comes from the scenario's seed, and
//! events at the same instant are ordered by a sequence number, so the same scenario and seed
//! give the same result, byte for byte.

#![deny(missing_docs)]

pub mod device;
pub mod disksim;
pub mod hdd;
pub mod validate;

pub use device::{Device, Service};
