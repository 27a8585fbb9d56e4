//! # A policy of your own, outside elevator's registry
//!
//! This crate is what a researcher or a storage-engine builder writes on top of elevator:
//! a scheduling policy ([`ForegroundFirst`]) that implements
//! [`elevator_core::Scheduler`] and depends on nothing but `elevator-core`. It is not in
//! `elevator_core::registry`, and needs not be: the simulator, the io_uring executor and the
//! block layer take any `Box<dyn Scheduler>` / `&mut dyn Scheduler`.
//!
//! The examples run it three ways (docs/extending.md walks through each):
//! - `cargo run --release -p elevator-own-policy --example in_sim`: a fio job file on a
//!   simulated drive, beside registry schedulers;
//! - `cargo run --release -p elevator-own-policy --example on_file`: the same job file on a
//!   temporary file through io_uring;
//! - `cargo run --release -p elevator-own-policy --example embedded`: a storage engine's own
//!   loop and clock driving the block layer with the policy in it.

#![deny(missing_docs)]

pub mod foreground_first;

pub use foreground_first::ForegroundFirst;
