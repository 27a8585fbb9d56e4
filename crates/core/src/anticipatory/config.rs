//! AS's tunables (sysfs names, 2.6.32 defaults at HZ = 1000) and its configuration, whose
//! times are whole jiffies of 1/`hz` s.

use crate::time::Nanos;

use super::types::SYNC;

/// The largest `antic_expire` accepted, in ms (ours: the kernel accepts any value).
pub const ANTIC_EXPIRE_MAX_MS: i64 = 1000;

crate::tunable::tunables! {
    policy: "anticipatory";
    /// The tunables, as under `/sys/block/<dev>/queue/iosched/`, after `hz`, which the others
    /// are counted in.
    pub const TUNABLES;
    /// AS's settings: times in nanoseconds, each a whole number of jiffies of 1/`hz` s. Build
    /// with [`Config::from_settings`] or `Default`: a time given in ms becomes whole jiffies
    /// (`msecs_to_jiffies`, rounding up); one not given takes its 2.6.32 default, a fraction of
    /// `hz` (`HZ/8`, `HZ/4`, `HZ/2`, `HZ/8`, `HZ/150` but at least 1).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Config {
        /// `CONFIG_HZ`: ticks per second. Storing it sets every time to its default.
        hz: u32 = "hz" {
            unit: Count,
            default: 1000,
            min: 100,
            max: 1000,
            store: custom,
            set: build_only,
            doc: "the kernel's timer frequency CONFIG_HZ (build time): AS counts time in jiffies of 1/hz s",
        },
        /// `read_expire`: FIFO deadline of a sync request.
        read_expire: Nanos = "read_expire" {
            unit: Ms,
            default: 125,
            min: 0,
            max: i32::MAX as i64,
            store: custom,
            doc: "FIFO deadline of a sync request (HZ/8)",
        },
        /// `write_expire`: FIFO deadline of an async write.
        write_expire: Nanos = "write_expire" {
            unit: Ms,
            default: 250,
            min: 0,
            max: i32::MAX as i64,
            store: custom,
            doc: "FIFO deadline of an async write (HZ/4)",
        },
        /// `read_batch_expire`: how long a read batch may run while writes wait.
        read_batch_expire: Nanos = "read_batch_expire" {
            unit: Ms,
            default: 500,
            min: 0,
            max: i32::MAX as i64,
            store: custom,
            doc: "how long a read batch may run while writes are pending (HZ/2)",
        },
        /// `write_batch_expire`: target length of a write batch.
        write_batch_expire: Nanos = "write_batch_expire" {
            unit: Ms,
            default: 125,
            min: 0,
            max: i32::MAX as i64,
            store: custom,
            doc: "target length of a write batch; the writes per batch autotune to it (HZ/8)",
        },
        /// `antic_expire`: longest anticipation after the anticipated request completed.
        antic_expire: Nanos = "antic_expire" {
            unit: Ms,
            default: 6,
            min: 0,
            max: ANTIC_EXPIRE_MAX_MS,
            store: custom,
            doc: "longest wait for the anticipated process after its request completed; 0 disables (HZ/150)",
        },
    }
}

/// `msecs_to_jiffies`: `ms` in jiffies at `hz`, rounded up.
pub(super) fn msecs_to_jiffies(ms: u64, hz: u64) -> u64 {
    (ms * hz).div_ceil(1000)
}

impl Config {
    /// `as_var_store` (times: `msecs_to_jiffies`), and `hz`, which sets every time to its
    /// default fraction of it.
    fn store_custom(&mut self, name: &str, value: i64) {
        if name == "hz" {
            let hz = value as u64;
            self.hz = hz as u32;
            let jiffy = self.jiffy().as_ns();
            let jiffies = |n: u64| Nanos(n * jiffy);
            self.read_expire = jiffies(hz / 8);
            self.write_expire = jiffies(hz / 4);
            self.read_batch_expire = jiffies(hz / 2);
            self.write_batch_expire = jiffies(hz / 8);
            self.antic_expire = jiffies((hz / 150).max(1));
            return;
        }
        let hz = u64::from(self.hz);
        let v = Nanos(msecs_to_jiffies(value as u64, hz) * self.jiffy().as_ns());
        match name {
            "read_expire" => self.read_expire = v,
            "write_expire" => self.write_expire = v,
            "read_batch_expire" => self.read_batch_expire = v,
            "write_batch_expire" => self.write_batch_expire = v,
            "antic_expire" => self.antic_expire = v,
            _ => unreachable!("{name} is not a time of AS's"),
        }
    }

    /// `as_var_show`: times in ms (`jiffies_to_msecs`).
    fn show_custom(&self, name: &str) -> i64 {
        let t = match name {
            "hz" => return i64::from(self.hz),
            "read_expire" => self.read_expire,
            "write_expire" => self.write_expire,
            "read_batch_expire" => self.read_batch_expire,
            "write_batch_expire" => self.write_batch_expire,
            "antic_expire" => self.antic_expire,
            _ => unreachable!("{name} is not a tunable of AS's"),
        };
        (self.jiffies(t) * 1000 / u64::from(self.hz)) as i64
    }

    /// One jiffy, in ns.
    pub fn jiffy(&self) -> Nanos {
        Nanos(1_000_000_000 / u64::from(self.hz))
    }

    /// `d` (a whole number of jiffies) in jiffies.
    pub(super) fn jiffies(&self, d: Nanos) -> u64 {
        d.as_ns() / self.jiffy().as_ns()
    }

    /// The FIFO deadline of direction `dir`.
    pub(super) fn fifo_expire(&self, dir: usize) -> Nanos {
        if dir == SYNC {
            self.read_expire
        } else {
            self.write_expire
        }
    }

    /// The batch length of direction `dir`.
    pub(super) fn batch_expire(&self, dir: usize) -> Nanos {
        if dir == SYNC {
            self.read_batch_expire
        } else {
            self.write_batch_expire
        }
    }
}
