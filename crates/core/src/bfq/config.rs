//! BFQ's tunables (sysfs names, mainline defaults) and their validated configuration.

use crate::time::Nanos;
use crate::tunable::{Settings, Tunable, TunableError, Unit};

/// BFQ's tunables: the sysfs ones with mainline defaults, then elevator's own switches.
pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "slice_idle",
        unit: Unit::Ms,
        default: 8,
        min: 0,
        max: 1_000,
        doc: "how long an empty sync queue may keep the device idle waiting for its next request",
    },
    Tunable {
        name: "slice_idle_us",
        unit: Unit::Us,
        default: 8_000,
        min: 0,
        max: 1_000_000,
        doc: "slice_idle in microseconds (when given, it wins over slice_idle)",
    },
    Tunable {
        name: "fifo_expire_sync",
        unit: Unit::Ms,
        default: 125,
        min: 1,
        max: 100_000,
        doc: "age after which a queue's oldest sync request is served next within its slot",
    },
    Tunable {
        name: "fifo_expire_async",
        unit: Unit::Ms,
        default: 250,
        min: 1,
        max: 100_000,
        doc: "age after which a queue's oldest async request is served next within its slot",
    },
    Tunable {
        name: "back_seek_max",
        unit: Unit::KiB,
        default: 16_384,
        min: 0,
        max: 1 << 30,
        doc: "longest backward seek still preferred to a forward one when picking a queue's next request",
    },
    Tunable {
        name: "back_seek_penalty",
        unit: Unit::Count,
        default: 2,
        min: 1,
        max: 1_000,
        doc: "cost factor of a backward seek relative to a forward one",
    },
    Tunable {
        name: "max_budget",
        unit: Unit::Sectors,
        default: 0,
        min: 0,
        max: i32::MAX as i64,
        doc: "largest budget a queue gets; 0 = autotuned to peak rate * timeout_sync",
    },
    Tunable {
        name: "timeout_sync",
        unit: Unit::Ms,
        default: 125,
        min: 1,
        max: 100_000,
        doc: "budget timeout: longest service slot of a queue (times its raising coefficient)",
    },
    Tunable {
        name: "strict_guarantees",
        unit: Unit::Bool,
        default: 0,
        min: 0,
        max: 1,
        doc: "always idle for an empty in-service sync queue and keep one request in the device",
    },
    Tunable {
        name: "low_latency",
        unit: Unit::Bool,
        default: 1,
        min: 0,
        max: 1,
        doc: "weight raising for interactive and soft real-time queues",
    },
    Tunable {
        name: "nr_requests",
        unit: Unit::Requests,
        default: 256,
        min: 4,
        max: 2048,
        doc: "scheduler tags (queue attribute), one per request from admission to completion; \
              bfq_limit_depth gives writes and over-limit queues a shallow depth of them",
    },
    Tunable {
        name: "merge_window_ms",
        unit: Unit::Ms,
        default: 100,
        min: 0,
        max: 1_000_000,
        doc: "elevator: a queue may be merged only this long after its first service since it \
              last became busy (the kernel's 100 ms rule); 0 = no time limit",
    },
    Tunable {
        name: "queue_merging",
        unit: Unit::Bool,
        default: 1,
        min: 0,
        max: 1,
        doc: "elevator: merge the queues of cooperating processes (early and stable merge); 0 = never",
    },
    Tunable {
        name: "rotational",
        unit: Unit::Bool,
        default: 1,
        min: 0,
        max: 1,
        doc: "elevator: the device is rotational (the kernel reads this from the queue flags)",
    },
];

/// BFQ's validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Idling time for an empty sync queue (`slice_idle`).
    pub slice_idle: Nanos,
    /// FIFO expiry of sync requests.
    pub fifo_expire_sync: Nanos,
    /// FIFO expiry of async requests.
    pub fifo_expire_async: Nanos,
    /// Longest preferred backward seek, KiB.
    pub back_seek_max_kib: u64,
    /// Backward seek cost factor.
    pub back_seek_penalty: u64,
    /// User max budget in sectors; 0 = autotuned.
    pub max_budget: u64,
    /// Budget timeout.
    pub timeout: Nanos,
    /// strict_guarantees.
    pub strict_guarantees: bool,
    /// low_latency (weight raising).
    pub low_latency: bool,
    /// Scheduler tags (`nr_requests`).
    pub nr_requests: u32,
    /// The merge window (100 ms in the kernel); zero disables the rule.
    pub merge_window: Nanos,
    /// Whether queues may be merged at all.
    pub queue_merging: bool,
    /// Rotational device.
    pub rotational: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config::from_settings(&Settings::new()).expect("defaults are valid")
    }
}

impl Config {
    /// Build from user settings, checking names and ranges.
    pub fn from_settings(s: &Settings) -> Result<Config, TunableError> {
        s.validate("bfq", TUNABLES)?;
        let g = |n| s.get(TUNABLES, n);
        let slice_idle_us = match (s.raw("slice_idle"), s.raw("slice_idle_us")) {
            (Some(ms), Some(us)) if ms * 1000 != us => {
                return Err(TunableError::Invalid {
                    reason: format!(
                        "bfq: slice_idle = {ms} ms and slice_idle_us = {us} us disagree; give one"
                    ),
                })
            }
            (_, Some(us)) => us,
            (Some(ms), None) => ms * 1000,
            (None, None) => g("slice_idle_us"),
        };
        let strict = g("strict_guarantees") == 1;
        // As the kernel does when strict_guarantees is switched on.
        let slice_idle_us = if strict {
            slice_idle_us.max(8_000)
        } else {
            slice_idle_us
        };
        Ok(Config {
            slice_idle: Nanos::from_us(slice_idle_us as u64),
            fifo_expire_sync: Nanos::from_ms(g("fifo_expire_sync") as u64),
            fifo_expire_async: Nanos::from_ms(g("fifo_expire_async") as u64),
            back_seek_max_kib: g("back_seek_max") as u64,
            back_seek_penalty: g("back_seek_penalty") as u64,
            max_budget: g("max_budget") as u64,
            timeout: Nanos::from_ms(g("timeout_sync") as u64),
            strict_guarantees: strict,
            low_latency: g("low_latency") == 1,
            nr_requests: g("nr_requests") as u32,
            merge_window: Nanos::from_ms(g("merge_window_ms") as u64),
            queue_merging: g("queue_merging") == 1,
            rotational: g("rotational") == 1,
        })
    }
}
