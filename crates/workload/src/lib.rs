//! # elevator-workload: what the processes do, and what they got
//!
//! Workloads are sans-IO, like the schedulers: a [`Job`] says what it issues next given
//! completions and `now` (issue a request, think until t, wait, exit a context, or finish).
//! The simulator and the real executor both drive the same jobs and fill the same
//! [`metrics`], so a workload measured on a simulated disk and on a real device is the same
//! workload.
//!
//! ## Driving a job by hand
//!
//! ```
//! use elevator_core::{Nanos, Op};
//! use elevator_workload::{Action, BuildEnv, Job, JobSpec};
//!
//! // A scenario's `[[job]]` table: a dependent reader of two 8 KiB files.
//! let spec: JobSpec = toml::from_str(
//!     "kind = \"dependent-reader\"\nfiles = 2\nfile_size = 8192\nthink_us = 500\n",
//! ).unwrap();
//! let mut job = spec.build(&BuildEnv::new(1 << 21, 7, "cat")).unwrap();
//! let mut now = Nanos::ZERO;
//! for _ in 0..2 {
//!     // It issues one synchronous read, then waits for it.
//!     let Action::Issue(io) = job.poll(now) else { panic!() };
//!     assert!(io.op == Op::Read && io.sync && io.sectors == 16);
//!     assert_eq!(job.poll(now), Action::Wait);
//!     // The read completes 10 ms later; the job thinks 0.5 ms before the next file.
//!     now = now + Nanos::from_ms(10);
//!     job.complete(io.tag, now);
//!     assert_eq!(job.poll(now), Action::Think { until: now + Nanos::from_us(500) });
//!     now = now + Nanos::from_us(500);
//! }
//! assert_eq!(job.poll(now), Action::Done);
//! ```
//!
//! ## Layout
//! - [`job`]: the interface; [`spec`]: building jobs from scenario tables ([`JobSpec`]).
//! - [`jobs`]: the process models and replayers, one file each.
//! - [`traces`]: trace readers; [`fio_file`]: fio job files onto [`jobs::FioJobConfig`];
//!   [`input`]: the one error every reader of an input file returns ([`InputError`]: file,
//!   line or byte, field, message), and bounded reads.
//! - [`page_cache`]: the LRU page cache the compile job reads through.
//! - [`metrics`]: per-job figures; [`testkit`]: a tiny driver for jobs' tests.
//! - [`agreement`]: how closely two dispatch sequences agree (the kernel's and ours).
//! - [`suggest`]: the known name nearest a misspelt one, for errors ("did you mean ...?").

#![deny(missing_docs)]

pub mod agreement;
pub mod fio_file;
pub mod fio_ini;
pub mod input;
pub mod job;
pub mod jobs;
pub mod kernel_diff;
pub mod metrics;
pub mod page_cache;
pub mod spec;
pub mod suggest;
pub mod testkit;
pub mod traces;

pub use input::InputError;
pub use job::{Action, IoSpec, Job};
pub use spec::{BuildEnv, BuildError, JobSpec, Region};
