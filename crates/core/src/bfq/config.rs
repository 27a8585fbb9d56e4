//! BFQ's tunables (sysfs names, mainline defaults) and their validated configuration.

use crate::time::Nanos;
use crate::tunable::{Settings, TunableError};

/// The idling time `strict_guarantees` raises `slice_idle` to at least, as the kernel does
/// when it is switched on.
const STRICT_SLICE_IDLE: Nanos = Nanos::from_ms(8);

crate::tunable::tunables! {
    policy: "bfq", finish: Config::finish;
    /// BFQ's tunables: the sysfs ones with mainline defaults, then elevator's own switches.
    pub const TUNABLES;
    /// BFQ's validated configuration.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        // `slice_idle` in ms: the field is `slice_idle_us`'s.
        = "slice_idle" {
            unit: Ms,
            default: 8,
            min: 0,
            max: 1_000,
            doc: "how long an empty sync queue may keep the device idle waiting for its next request",
        },
        /// Idling time for an empty sync queue (`slice_idle`, `slice_idle_us`).
        slice_idle: Nanos = "slice_idle_us" {
            unit: Us,
            default: 8_000,
            min: 0,
            max: 1_000_000,
            doc: "slice_idle in microseconds (when given, it wins over slice_idle)",
        },
        /// FIFO expiry of sync requests.
        fifo_expire_sync: Nanos = "fifo_expire_sync" {
            unit: Ms,
            default: 125,
            min: 1,
            max: 100_000,
            doc: "age after which a queue's oldest sync request is served next within its slot",
        },
        /// FIFO expiry of async requests.
        fifo_expire_async: Nanos = "fifo_expire_async" {
            unit: Ms,
            default: 250,
            min: 1,
            max: 100_000,
            doc: "age after which a queue's oldest async request is served next within its slot",
        },
        /// Longest preferred backward seek, KiB.
        back_seek_max_kib: u64 = "back_seek_max" {
            unit: KiB,
            default: 16_384,
            min: 0,
            max: 1 << 30,
            doc: "longest backward seek still preferred to a forward one when picking a queue's next request",
        },
        /// Backward seek cost factor.
        back_seek_penalty: u64 = "back_seek_penalty" {
            unit: Count,
            default: 2,
            min: 1,
            max: 1_000,
            doc: "cost factor of a backward seek relative to a forward one",
        },
        /// User max budget in sectors; 0 = autotuned.
        max_budget: u64 = "max_budget" {
            unit: Sectors,
            default: 0,
            min: 0,
            max: i32::MAX as i64,
            doc: "largest budget a queue gets; 0 = autotuned to peak rate * timeout_sync",
        },
        /// Budget timeout.
        timeout: Nanos = "timeout_sync" {
            unit: Ms,
            default: 125,
            min: 1,
            max: 100_000,
            doc: "budget timeout: longest service slot of a queue (times its raising coefficient)",
        },
        /// strict_guarantees.
        strict_guarantees: bool = "strict_guarantees" {
            unit: Bool,
            default: 0,
            min: 0,
            max: 1,
            doc: "always idle for an empty in-service sync queue and keep one request in the device",
        },
        /// low_latency (weight raising).
        low_latency: bool = "low_latency" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "weight raising for interactive and soft real-time queues",
        },
        /// Scheduler tags (`nr_requests`).
        nr_requests: u32 = "nr_requests" {
            unit: Requests,
            default: 256,
            min: 4,
            max: 2048,
            doc: "scheduler tags (queue attribute), one per request from admission to completion; \
                  bfq_limit_depth gives writes and over-limit queues a shallow depth of them",
        },
        /// The merge window (100 ms in the kernel); zero disables the rule.
        merge_window: Nanos = "merge_window_ms" {
            unit: Ms,
            default: 100,
            min: 0,
            max: 1_000_000,
            doc: "elevator: a queue may be merged only this long after its first service since it \
                  last became busy (the kernel's 100 ms rule); 0 = no time limit",
        },
        /// Whether queues may be merged at all.
        queue_merging: bool = "queue_merging" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "elevator: merge the queues of cooperating processes (early and stable merge); 0 = never",
        },
        /// Depth limits over the whole tag bitmap (Linux 6.17 and later).
        whole_map_depths: bool = "whole_map_depths" {
            unit: Bool,
            default: 0,
            min: 0,
            max: 1,
            doc: "elevator: bfq_limit_depth's depths count tags of the whole bitmap (async_depths, \
                  Linux 6.17 on) instead of bits of each word (word_depths, 6.9); 0 = per word",
        },
        /// Tags by bit position, with whole-map depths (Linux 6.18's sbitmap).
        tag_bits: bool = "tag_bits" {
            unit: Bool,
            default: 0,
            min: 0,
            max: 1,
            doc: "elevator: keep the scheduler tags by bit position as Linux 6.18's sbitmap \
                  places them (per-CPU hints, a shallow depth split over the words by \
                  __map_depth_with_shallow), with whole_map_depths' depths; 0 = counted",
        },
        /// Tag sleepers woken as blk-mq wakes them (one per freed tag, wait queues in turn).
        tag_sleepers: bool = "tag_sleepers" {
            unit: Bool,
            default: 0,
            min: 0,
            max: 1,
            doc: "elevator: a request finding no tag sleeps on one of 8 wait queues and a freed \
                  tag wakes one sleeper, queues in turn, which retries at its own depth and sleeps \
                  again (blk_mq_get_tag, sbitmap_queue_wake_up, wake batch 1); 0 = a freed tag \
                  goes to the oldest waiting request its depth allows",
        },
        /// The scheduler tags the tag bitmap was allocated with (0: `nr_requests`).
        tag_map_depth: u32 = "tag_map_depth" {
            unit: Requests,
            default: 0,
            min: 0,
            max: 2048,
            doc: "elevator: with tag_bits, the scheduler tags the bitmap was allocated with (2 x \
                  min(queue depth, 128) when the scheduler started); lowering nr_requests below \
                  it keeps its word size (sbitmap_queue_resize); 0 = nr_requests",
        },
        /// The kernel's timer frequency (`CONFIG_HZ`): the length of a jiffy, in which bfq
        /// keeps the times its soft real-time test compares.
        hz: u64 = "hz" {
            unit: Count,
            default: 1000,
            min: 100,
            max: 1000,
            doc: "elevator: the kernel's CONFIG_HZ (100, 250, 300 or 1000); bfq's soft real-time \
                  test counts in jiffies of 1/hz s (the kernel's build option, not a sysfs file)",
        },
        /// Rotational device.
        rotational: bool = "rotational" {
            unit: Bool,
            default: 1,
            min: 0,
            max: 1,
            doc: "elevator: the device is rotational (the kernel reads this from the queue flags)",
        },
        /// The queue's rotational flag when bfq started: 0 non-rotational, 1 rotational, 2 the
        /// same as `rotational`. `bfq_init_queue` reads the flag once, for
        /// `nonrot_with_queueing` (until the first `hw_tag` decision) and the reference peak
        /// rate; a flag written after the scheduler was set counts there only later.
        rotational_at_init: u32 = "rotational_at_init" {
            unit: Count,
            default: 2,
            min: 0,
            max: 2,
            doc: "elevator: the queue's rotational flag when bfq started (0 or 1; 2 = as \
                  rotational): bfq_init_queue reads it once for nonrot_with_queueing, until the \
                  first hw_tag decision, and the reference peak rate",
        },
    }
}

impl Config {
    /// The queue's rotational flag when bfq started (`rotational_at_init`, else `rotational`).
    pub fn started_rotational(&self) -> bool {
        match self.rotational_at_init {
            0 => false,
            1 => true,
            _ => self.rotational,
        }
    }

    /// `slice_idle` in ms, the second name of the `slice_idle` field.
    fn store_custom(&mut self, name: &str, value: i64) {
        debug_assert_eq!(name, "slice_idle");
        self.slice_idle = Nanos::from_ms(value as u64);
    }

    fn show_custom(&self, name: &str) -> i64 {
        debug_assert_eq!(name, "slice_idle");
        self.slice_idle.as_ms() as i64
    }

    /// `slice_idle` and `slice_idle_us` given together must agree; then
    /// [`apply_strict_guarantees`](Self::apply_strict_guarantees).
    fn finish(&mut self, given: &Settings) -> Result<(), TunableError> {
        if let (Some(ms), Some(us)) = (given.raw("slice_idle"), given.raw("slice_idle_us")) {
            if ms * 1000 != us {
                return Err(TunableError::Invalid {
                    reason: format!(
                        "bfq: slice_idle = {ms} ms and slice_idle_us = {us} us disagree; give one"
                    ),
                });
            }
        }
        self.apply_strict_guarantees();
        Ok(())
    }

    /// As the kernel does when `strict_guarantees` is switched on: `slice_idle` at least 8 ms.
    pub(super) fn apply_strict_guarantees(&mut self) {
        if self.strict_guarantees {
            self.slice_idle = self.slice_idle.max(STRICT_SLICE_IDLE);
        }
    }
}
