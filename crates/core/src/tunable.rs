//! Tunables: each policy's knobs, named as in sysfs, with unit, default, range and doc.
//!
//! A policy declares a `pub const TUNABLES: &[Tunable]` table; that one table feeds
//! `elevator list`, scenario files, the CLI's `--set name=value` and the docs. Values are
//! integers in the tunable's unit, as sysfs takes them.

use std::collections::BTreeMap;
use std::fmt;

/// The unit a tunable's integer value is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
    /// A number of requests.
    Requests,
    /// 512-byte sectors.
    Sectors,
    /// KiB.
    KiB,
    /// 0 or 1.
    Bool,
    /// A plain count or factor.
    Count,
}

impl Unit {
    /// The unit as printed after a value.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Us => "us",
            Unit::Ns => "ns",
            Unit::Requests => "requests",
            Unit::Sectors => "sectors",
            Unit::KiB => "KiB",
            Unit::Bool => "bool",
            Unit::Count => "",
        }
    }
}

/// One tunable's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Tunable {
    /// The sysfs name, e.g. `"read_expire"`.
    pub name: &'static str,
    /// The unit of the value.
    pub unit: Unit,
    /// The kernel's default.
    pub default: i64,
    /// Smallest accepted value.
    pub min: i64,
    /// Largest accepted value.
    pub max: i64,
    /// One line on what it does.
    pub doc: &'static str,
}

/// A tunable could not be set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TunableError {
    /// The policy has no tunable of that name.
    Unknown {
        /// The policy.
        scheduler: String,
        /// The name given.
        name: String,
    },
    /// The value is outside the tunable's range.
    OutOfRange {
        /// The tunable.
        name: String,
        /// The value given.
        value: i64,
        /// Smallest accepted.
        min: i64,
        /// Largest accepted.
        max: i64,
    },
    /// A cross-field rule failed.
    Invalid {
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for TunableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunableError::Unknown { scheduler, name } => {
                write!(f, "scheduler {scheduler} has no tunable named {name:?}")
            }
            TunableError::OutOfRange {
                name,
                value,
                min,
                max,
            } => write!(f, "{name} = {value} is out of range {min}..={max}"),
            TunableError::Invalid { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for TunableError {}

/// Tunable values a user asked for, by name; everything not named takes its default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings(BTreeMap<String, i64>);

impl Settings {
    /// No settings: every tunable at its default.
    pub fn new() -> Settings {
        Settings::default()
    }
    /// Set `name` to `value` (checked later against a table).
    pub fn set(&mut self, name: impl Into<String>, value: i64) -> &mut Settings {
        self.0.insert(name.into(), value);
        self
    }
    /// The value given for `name`, if any.
    pub fn raw(&self, name: &str) -> Option<i64> {
        self.0.get(name).copied()
    }
    /// Every name given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
    /// Check that every name given is in `table` and every value is in range.
    pub fn validate(&self, scheduler: &str, table: &[Tunable]) -> Result<(), TunableError> {
        for (name, &value) in &self.0 {
            let t = lookup(scheduler, table, name)?;
            check_range(t, value)?;
        }
        Ok(())
    }
    /// The value of `name`: as given, else the table's default. Panics if `name` is not in
    /// `table` (a programming error in the policy, not a user error).
    pub fn get(&self, table: &[Tunable], name: &str) -> i64 {
        let t = table
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("tunable {name} missing from its own table"));
        self.raw(name).unwrap_or(t.default)
    }
}

/// Find `name` in `table`.
pub fn lookup<'a>(
    scheduler: &str,
    table: &'a [Tunable],
    name: &str,
) -> Result<&'a Tunable, TunableError> {
    table
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| TunableError::Unknown {
            scheduler: scheduler.to_string(),
            name: name.to_string(),
        })
}

/// Check `value` against `t`'s range.
pub fn check_range(t: &Tunable, value: i64) -> Result<(), TunableError> {
    if value < t.min || value > t.max {
        return Err(TunableError::OutOfRange {
            name: t.name.to_string(),
            value,
            min: t.min,
            max: t.max,
        });
    }
    Ok(())
}
