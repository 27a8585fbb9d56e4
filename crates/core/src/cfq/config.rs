//! CFQ's tunables (sysfs names, 4.19 defaults) and its configuration, in nanoseconds where
//! the sysfs unit is ms.

use crate::tunable::{Settings, Tunable, TunableError};

const U32MAX: i64 = u32::MAX as i64;

crate::tunable::tunables! {
    policy: "cfq";
    /// CFQ's tunables, with 4.19's defaults.
    pub const TUNABLES;
    /// CFQ's configuration, in nanoseconds where the sysfs unit is ms.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// `quantum`.
        quantum: u32 = "quantum" {
            unit: Requests,
            default: 8,
            min: 1,
            max: U32MAX,
            doc: "requests a queue may have in flight per round (doubled early in a slice)",
        },
        /// `fifo_expire_sync`, ns.
        fifo_expire_sync: u64 = "fifo_expire_sync" {
            unit: Ms,
            default: 125,
            min: 1,
            max: U32MAX,
            doc: "age at which a sync request is served ahead of sector order",
        },
        /// `fifo_expire_async`, ns.
        fifo_expire_async: u64 = "fifo_expire_async" {
            unit: Ms,
            default: 250,
            min: 1,
            max: U32MAX,
            doc: "age at which an async request is served ahead of sector order",
        },
        /// `back_seek_max`, KiB.
        back_seek_max: u64 = "back_seek_max" {
            unit: KiB,
            default: 16384,
            min: 0,
            max: U32MAX,
            doc: "longest backward seek still preferred to a forward one",
        },
        /// `back_seek_penalty`.
        back_seek_penalty: u64 = "back_seek_penalty" {
            unit: Count,
            default: 2,
            min: 1,
            max: U32MAX,
            doc: "cost factor of a backward seek against a forward one",
        },
        /// `slice_sync`, ns.
        slice_sync: u64 = "slice_sync" {
            unit: Ms,
            default: 100,
            min: 1,
            max: U32MAX,
            doc: "base time slice of a sync queue at priority 4",
        },
        /// `slice_async`, ns.
        slice_async: u64 = "slice_async" {
            unit: Ms,
            default: 40,
            min: 1,
            max: U32MAX,
            doc: "base time slice of an async queue at priority 4",
        },
        /// `slice_async_rq`.
        slice_async_rq: u32 = "slice_async_rq" {
            unit: Requests,
            default: 2,
            min: 1,
            max: U32MAX,
            doc: "base of an async queue's dispatch budget per slice",
        },
        /// `slice_idle`, ns.
        slice_idle: u64 = "slice_idle" {
            unit: Ms,
            default: 8,
            min: 0,
            max: U32MAX,
            doc: "how long to idle for a sync queue's next request",
        },
        /// `low_latency`.
        low_latency: bool = "low_latency" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "scale slices down so busy queues fit target_latency",
        },
        /// `target_latency`, ns.
        target_latency: u64 = "target_latency" {
            unit: Ms,
            default: 300,
            min: 1,
            max: U32MAX,
            doc: "latency target of low_latency",
        },
        /// The device is rotational.
        rotational: bool = "rotational" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "the device's queue/rotational (0: SSD: no idling, seekiness by size)",
        },
        // The two below differ in cfq-flat ([`FLAT_TUNABLES`]); keep them last.
        /// `group_idle`, ns.
        group_idle: u64 = "group_idle" {
            unit: Ms,
            default: 8,
            min: 0,
            max: U32MAX,
            doc: "how long to idle for the next request of a group with one queue",
        },
        /// Group scheduling on.
        groups: bool = "groups" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            set: build_only,
            doc: "group scheduling on (1) or every request in the root group (0, vanilla CFQ)",
        },
    }
}

const N: usize = TUNABLES.len();

/// cfq-flat's table: [`TUNABLES`] with `group_idle = 0` and `groups = 0`.
const fn flat_table() -> [Tunable; N] {
    let mut table = [TUNABLES[0]; N];
    let mut i = 0;
    while i < N {
        table[i] = TUNABLES[i];
        i += 1;
    }
    table[N - 2].default = 0;
    table[N - 1].default = 0;
    table
}
const FLAT_TABLE: [Tunable; N] = flat_table();

/// The tunables of `cfq-flat`: as [`TUNABLES`] but `groups = 0` and `group_idle = 0`.
pub const FLAT_TUNABLES: &[Tunable] = &FLAT_TABLE;

impl Config {
    /// Vanilla CFQ: no group scheduling, no group idling.
    pub fn flat() -> Config {
        Config::defaults_in(FLAT_TUNABLES)
    }

    /// Validate `settings` against cfq-flat's table and build with its defaults.
    pub fn flat_from_settings(settings: &Settings) -> Result<Config, TunableError> {
        Config::from_settings_in("cfq-flat", FLAT_TUNABLES, settings)
    }

    pub(super) fn fifo_expire(&self, sync: bool) -> u64 {
        if sync {
            self.fifo_expire_sync
        } else {
            self.fifo_expire_async
        }
    }

    pub(super) fn slice(&self, sync: bool) -> u64 {
        if sync {
            self.slice_sync
        } else {
            self.slice_async
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfq_flat_differs_only_in_group_idle_and_groups() {
        let flat = FLAT_TUNABLES.iter().map(|t| (t.name, t.default));
        let changed: Vec<&str> = TUNABLES
            .iter()
            .zip(flat)
            .filter(|(t, (name, default))| {
                assert_eq!(t.name, *name);
                t.default != *default
            })
            .map(|(t, _)| t.name)
            .collect();
        assert_eq!(changed, ["group_idle", "groups"]);
        assert!(!Config::flat().groups && Config::flat().group_idle == 0);
    }
}
