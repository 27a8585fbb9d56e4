//! # elevator-workload: what the processes do, and what they got
//!
//! Workloads are sans-IO, like the schedulers: a [`Job`] says what it issues next given
//! completions and `now` (issue a request, think until t, wait, exit a context, or finish).
//! The simulator and the real executor both drive the same jobs and fill the same
//! [`metrics`], so a workload measured on a simulated disk and on a real device is the same
//! workload.

#![deny(missing_docs)]

pub mod fio_file;
pub mod job;
pub mod jobs;
pub mod metrics;
pub mod page_cache;
pub mod spec;
pub mod testkit;
pub mod traces;

pub use job::{Action, IoSpec, Job};
pub use spec::{BuildEnv, BuildError, JobSpec, Region};
