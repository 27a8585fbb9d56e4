//! Simulated and real time, in nanoseconds.
//!
//! Schedulers never read a clock: every call takes `now: Nanos` from the driver. In the
//! simulator `Nanos` counts from the start of the run; in the real executor it counts from the
//! executor's start (a monotonic clock), so the same policy code runs in both worlds.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time or a duration, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero: the start of a run, or an empty duration.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable time; used as "never".
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `n` nanoseconds.
    pub const fn from_ns(n: u64) -> Nanos {
        Nanos(n)
    }
    /// `us` microseconds.
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }
    /// `ms` milliseconds.
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }
    /// Fractional milliseconds, rounded to the nearest nanosecond (negative clamps to zero).
    pub fn from_ms_f64(ms: f64) -> Nanos {
        Nanos((ms * 1e6).round().max(0.0) as u64)
    }
    /// Fractional seconds, rounded to the nearest nanosecond (negative clamps to zero).
    pub fn from_secs_f64(s: f64) -> Nanos {
        Nanos((s * 1e9).round().max(0.0) as u64)
    }
    /// The raw nanosecond count.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Whole microseconds (truncated).
    pub const fn as_us(self) -> u64 {
        self.0 / 1_000
    }
    /// Whole milliseconds (truncated).
    pub const fn as_ms(self) -> u64 {
        self.0 / 1_000_000
    }
    /// Milliseconds as a float.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Seconds as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// `self - other`, or zero if `other` is later.
    pub const fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
    /// `self + other`, saturating at [`Nanos::MAX`].
    pub const fn saturating_add(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(other.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    /// Panics in debug builds if `rhs` is later; use [`Nanos::saturating_sub`] where that can happen.
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 - rhs.0)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.as_ms_f64())
    }
}
