//! # elevator-real: the io_uring executor
//!
//! Runs the same [`Job`](elevator_workload::Job)s through the same
//! [`Scheduler`](elevator_core::Scheduler)s as the simulator, against a real file or block
//! device: the jobs issue, the scheduler decides every dispatch (including how many requests
//! are outstanding, and when to keep the device idle), and an io_uring performs the I/O with
//! O_DIRECT from page-aligned buffers. Completions go back to the scheduler and the jobs with
//! their real times, measured from the executor's start on a monotonic clock.
//!
//! **This crate holds no policy.** Everything a policy decides is decided in `elevator-core`;
//! the executor only moves requests between the jobs, the scheduler and the device.
//!
//! ## Layout
//! - [`exec`]: the run loop ([`run`]), its options and reports.
//! - [`submit`]: the submission API: a cloneable [`Handle`](submit::Handle) through which any
//!   thread submits reads, writes and fsyncs tagged with process, group and priority, served by
//!   one engine thread that owns the io_uring and the scheduler (what `elevator mount` uses).
//! - [`backend`]: the device interface; [`uring`] the io_uring backend; [`aio`] the Linux
//!   native AIO backend (fio's libaio engine's system calls, for `calibrate --iocost`); [`mem`]
//!   an in-memory backend with fault injection for tests.
//! - [`target`] and [`safety`]: opening files and devices, and the refusals that keep the
//!   executor from writing over data it was not given; [`holders`] names what holds a
//!   device or a file (loop devices over it, mounts in any mount namespace, openers);
//!   [`mountinfo`] reads the mount table's lines.
//! - [`emulate`]: an emulated device: a device model's timing on the real clock over a
//!   backing file ([`emulate::Emulated`]), and the lateness it reports.
//! - [`verify`]: checksummed sector stamps for `--verify`.
//! - [`report`]: fio-like text and fio-compatible JSON.
//! - [`kernel_record`]: the kernel's own scheduler recorded: a fio job on a loop device with
//!   the block tracepoints on, for `elevator kernel-record`.
//! - [`tool`]: a system tool's output (losetup, mount, fio), or an error naming it.
//! - [`buf`]: aligned buffers.

#![deny(missing_docs)]

pub mod aio;
pub mod backend;
pub mod buf;
pub mod emulate;
pub mod exec;
pub mod fidelity;
pub mod holders;
pub mod kernel_record;
pub mod leftovers;
pub mod mem;
pub mod mountinfo;
pub mod queue_limits;
pub mod report;
pub mod safety;
pub mod submit;
pub mod target;
pub mod tool;
pub mod uring;
pub mod verify;

pub use aio::AioBackend;
pub use backend::{rw_flags_of, Backend, IoCompletion, IoKind, IoRequest};
pub use emulate::{Emulated, ServiceModel};
pub use exec::{
    run, run_with_clock, ByteRange, Clock, JobReport, MonotonicClock, RealJob, RequestRecord,
    RunError, RunFailure, RunOptions, RunReport, MAX_IN_FLIGHT_BYTES,
};
pub use mem::{Fault, MemBackend};
pub use target::{OpenSpec, Target, TargetError, TargetKind};
pub use uring::UringBackend;
