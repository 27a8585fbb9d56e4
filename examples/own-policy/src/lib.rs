//! # A policy of your own, outside elevator's registry
//!
//! This crate is what a researcher or a storage-engine builder writes on top of elevator:
//! a scheduling policy ([`ForegroundFirst`]) that implements
//! [`elevator_core::Scheduler`] and depends on nothing but `elevator-core`. It is not in
//! `elevator_core::registry`, and needs not be: the simulator, the io_uring executor and the
//! block layer take any `Box<dyn Scheduler>` / `&mut dyn Scheduler`, and the FUSE mount any
//! [`SchedulerSpec`](elevator_core::registry::SchedulerSpec) ([`foreground_first::INFO`]).
//!
//! The examples run it four ways (docs/extending.md walks through each):
//! - `cargo run --release -p elevator-own-policy --example in_sim`: a fio job file on a
//!   simulated drive, beside registry schedulers;
//! - `cargo run --release -p elevator-own-policy --example on_file`: the same job file on a
//!   temporary file through io_uring;
//! - `cargo run --release -p elevator-own-policy --example embedded`: a storage engine's own
//!   loop and clock driving the block layer with the policy in it;
//! - `cargo run --release -p elevator-own-policy --example in_mount`: the FUSE mount, real
//!   programs' reads and writes decided by the policy.

#![deny(missing_docs)]

pub mod foreground_first;

pub use foreground_first::ForegroundFirst;

/// The job file the examples run by default: a reader beside a background scrubber
/// (`jobs/reader-and-scrubber.fio` in this crate).
pub fn reader_and_scrubber() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs/reader-and-scrubber.fio")
}

/// An example's exit: success, or its error printed as text (not as a `Debug` dump) and
/// exit status 1.
pub fn exit_code(result: Result<(), Box<dyn std::error::Error>>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
