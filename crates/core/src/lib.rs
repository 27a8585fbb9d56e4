//! # elevator-core: Linux block I/O schedulers as sans-IO state machines
//!
//! This crate holds every policy elevator implements (noop, the 2.4 elevator, deadline,
//! anticipatory, and more as they land), the [`Scheduler`] trait they share, and the request,
//! context and group types they speak. **It does no I/O, reads no clock and starts no thread.**
//! The driver (the simulator in `elevator-sim`, the io_uring executor in `elevator-real`, or a
//! test) passes `now` into every call and asks for the next dispatch when its device has room;
//! that is what lets one policy run unchanged on a simulated 2003 laptop disk and on the device
//! in front of you, and what makes every timing decision testable to the nanosecond.
//!
//! ## Driving a scheduler by hand
//!
//! ```
//! use elevator_core::{Dispatch, Nanos, Scheduler, deadline::Deadline};
//! use elevator_core::harness::rq;
//!
//! let mut s = Deadline::new(Default::default());
//! let t0 = Nanos::ZERO;
//! // Two reads and a write arrive at once.
//! s.insert(rq(1, 1).sector(5000).read().build(), t0);
//! s.insert(rq(2, 1).sector(100).read().build(), t0);
//! s.insert(rq(3, 2).sector(200).write().build(), t0);
//! // The device asks for work: deadline (2.6.32) starts a read batch at the oldest read.
//! let Dispatch::Request(first) = s.dispatch(t0) else { panic!() };
//! assert_eq!(first.id.0, 1);
//! s.complete(&first, Nanos::from_ms(5));
//! // Nothing above it: the next read batch starts at the (new) oldest read.
//! let Dispatch::Request(second) = s.dispatch(Nanos::from_ms(5)) else { panic!() };
//! assert_eq!(second.id.0, 2);
//! s.complete(&second, Nanos::from_ms(10));
//! let Dispatch::Request(third) = s.dispatch(Nanos::from_ms(10)) else { panic!() };
//! assert_eq!(third.id.0, 3);
//! s.complete(&third, Nanos::from_ms(15));
//! assert_eq!(s.dispatch(Nanos::from_ms(15)), Dispatch::Empty);
//! ```
//!
//! ## Layout
//! - [`time`], [`request`], [`group`]: the vocabulary.
//! - [`scheduler`]: the trait and [`Dispatch`]; [`counted`]: the conservation counters kept
//!   around any of them.
//! - [`block`]: the block layer every driver runs a scheduler through: splitting, merging,
//!   the device's queue depth, the stat counters, the request log, the rq_qos hook chain.
//! - [`qos`]: the cgroup v2 controllers at the rq_qos position (io.cost).
//! - [`tunable`] and [`registry`]: each policy's sysfs-named tunables and the list of policies.
//! - one module per policy, each opening with the kernel version it follows and its deviations.
//! - [`harness`]: a tiny deterministic driver with conservation checks, for the policies' tests
//!   and for a policy of your own (docs/extending.md).
//! - `fifo` and `sort_list` (internal): the FIFOs over one slab of queued requests (deadline,
//!   mq-deadline, kyber) and the sector-sorted list (anticipatory) the policies share.

#![deny(missing_docs)]

pub mod anticipatory;
pub mod bfq;
pub mod block;
pub mod cfq;
#[cfg(test)]
mod closed_loop;
pub mod counted;
pub mod deadline;
mod fifo;
pub mod group;
pub mod harness;
mod id_map;
pub mod ioband;
pub mod kyber;
pub mod latency_guard;
pub mod linus;
pub mod mq_deadline;
pub mod noop;
pub mod qos;
pub mod registry;
pub mod request;
pub mod scheduler;
mod sort_list;
pub mod tags;
pub mod time;
pub mod tunable;

pub use group::GroupTree;
pub use request::{CtxId, GroupId, IoClass, IoPrio, Op, Request, RequestId, SECTOR_BYTES};
pub use scheduler::{Dispatch, GrownBy, RequestsMerged, Scheduler};
pub use time::Nanos;
pub use tunable::{Settings, Tunable, TunableError, Unit};
