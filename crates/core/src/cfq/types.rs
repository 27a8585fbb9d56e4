//! The vocabulary CFQ's parts share: queue and request handles, priority classes and
//! workload types, and which service tree a queue belongs on.

use crate::request::{IoClass, IoPrio};

/// A queue's index in the scheduler's queue table.
pub(super) type QId = usize;

/// Where a request sits in a queue's sector-sorted list: (first sector, request id).
pub(super) type SortKey = (u64, u64);

/// The priority class as CFQ indexes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Class {
    /// Real time.
    Rt,
    /// Best effort.
    Be,
    /// Idle.
    Idle,
}

/// The class CFQ serves a request of priority `prio` in.
pub(super) fn class_of(prio: IoPrio) -> Class {
    match prio.class {
        IoClass::RealTime => Class::Rt,
        IoClass::BestEffort => Class::Be,
        IoClass::Idle => Class::Idle,
    }
}

/// The workload type of a queue (`wl_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Workload {
    /// Async (writeback) queues.
    Async = 0,
    /// Sync queues that do not idle (seeky or thinking too long).
    SyncNoidle = 1,
    /// Sync queues that idle between requests.
    Sync = 2,
}

impl Workload {
    /// All three, in the kernel's index order.
    pub const ALL: [Workload; 3] = [Workload::Async, Workload::SyncNoidle, Workload::Sync];
}

/// Which of a group's seven trees: (group, class, workload). The idle class has one tree,
/// whose workload is always `Async` here.
pub(super) type StKey = (usize, Class, Workload);
