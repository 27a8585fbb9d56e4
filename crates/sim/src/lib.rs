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
//! - [`disksim`]: DiskSim 4.0 drive import; [`validate`]: replaying DiskSim's validation
//!   traces against a model.
//!
//! Every reader of an input file here (scenarios, drive, SSD and host specs, DiskSim parameter
//! files and validation traces) reports bad input as one
//! [`InputError`](elevator_workload::InputError): file, line, field and message.

#![deny(missing_docs)]

pub mod cpu;
pub mod device;
pub mod disksim;
pub mod drive;
pub mod engine;
pub mod fixed;
pub mod hdd;
pub mod scenario;
mod spec_file;
pub mod ssd;
pub mod validate;
pub mod work;

pub use device::{Device, Service};
pub use drive::DriveModel;
pub use engine::{
    JobSlot, Probe, RunReport, Simulation, CLOCK_LIMIT, STEPS_PER_IO, WORK_UNIT_SECTORS,
};
pub use spec_file::MAX_SPEC_BYTES;
