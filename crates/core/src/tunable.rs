//! Tunables: each policy's knobs, named as in sysfs, with unit, default, range and doc.
//!
//! A policy declares its tunables once, with the `tunables!` macro (the kernel's
//! `SHOW_FUNCTION`/`STORE_FUNCTION` macros and `DD_ATTR` tables are the model). One
//! declaration gives the `pub const TUNABLES: &[Tunable]` table that feeds `elevator list`,
//! scenario files, the CLI's `--set name=value` and the docs; the policy's `Config` with a
//! documented field per tunable; its `Default` (every tunable at its default); and the
//! checked conversions between sysfs integers and fields: `Config::from_settings` (build
//! time), `Config::set` (run time, what a policy's `set_tunable` does first) and `Config::get`.
//! Values are integers in the tunable's unit, as sysfs takes them; a [`Codec`] per unit turns
//! them into the field's type (ms into [`Nanos`], 0/1 into `bool` ...).
//!
//! ```ignore
//! tunables! {
//!     policy: "deadline";
//!     /// deadline's tunables.
//!     pub const TUNABLES;
//!     /// deadline's settings.
//!     #[derive(Clone, Debug, PartialEq, Eq)]
//!     pub struct Config {
//!         /// How long after its arrival a read expires.
//!         read_expire: Nanos = "read_expire" {
//!             unit: Ms, default: 500, min: 0, max: INT_MAX,
//!             doc: "deadline of a read, counted from its arrival",
//!         },
//!     }
//! }
//! ```
//!
//! An entry may also say `codec: C,` (a [`Codec`] other than its unit's), `store: custom,`
//! (the policy's own `store_custom`/`show_custom` on `Config` convert it: a value that sets
//! others too, as mq-deadline's `nr_requests` sets `async_depth`), and `set: build_only,` (it
//! can be given when the policy is built, not changed later). An entry without a field
//! (`= "slice_idle" { ... }`) is a second name for a field another entry declares and is
//! always custom. A header `policy: "name", finish: path;` names a `fn(&mut Config,
//! &Settings) -> Result<(), TunableError>` that `from_settings` runs last (the rules across
//! tunables). Given settings are stored onto the defaults in table order, so an entry that
//! sets others comes before them.

use std::collections::BTreeMap;
use std::fmt;

use crate::time::Nanos;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// How a tunable's sysfs integer becomes a configuration field of type `T` and back: the
/// conversion the kernel's `STORE_FUNCTION`/`SHOW_FUNCTION` take as their `__CONV` argument.
pub trait Codec<T> {
    /// The field's value for sysfs integer `v` (already range-checked).
    fn store(v: i64) -> T;
    /// The sysfs integer the field shows.
    fn show(field: &T) -> i64;
}

/// The codecs: one per [`Unit`], named as its variant, plus [`KiBSectors`](codec::KiBSectors).
pub mod codec {
    use super::{Codec, Nanos};

    /// Milliseconds: into [`Nanos`], or into nanoseconds as a plain `u64`.
    #[derive(Debug)]
    pub struct Ms;
    /// Microseconds, into [`Nanos`].
    #[derive(Debug)]
    pub struct Us;
    /// Nanoseconds, into [`Nanos`].
    #[derive(Debug)]
    pub struct Ns;
    /// A number of requests.
    #[derive(Debug)]
    pub struct Requests;
    /// 512-byte sectors.
    #[derive(Debug)]
    pub struct Sectors;
    /// KiB, kept in KiB.
    #[derive(Debug)]
    pub struct KiB;
    /// 0 or 1, into `bool`.
    #[derive(Debug)]
    pub struct Bool;
    /// A plain count or factor.
    #[derive(Debug)]
    pub struct Count;
    /// KiB, kept as 512-byte sectors.
    #[derive(Debug)]
    pub struct KiBSectors;

    const NS_PER_MS: u64 = 1_000_000;

    impl Codec<Nanos> for Ms {
        fn store(v: i64) -> Nanos {
            Nanos::from_ms(v as u64)
        }
        fn show(t: &Nanos) -> i64 {
            t.as_ms() as i64
        }
    }
    impl Codec<u64> for Ms {
        fn store(v: i64) -> u64 {
            v as u64 * NS_PER_MS
        }
        fn show(t: &u64) -> i64 {
            (t / NS_PER_MS) as i64
        }
    }
    impl Codec<Nanos> for Us {
        fn store(v: i64) -> Nanos {
            Nanos::from_us(v as u64)
        }
        fn show(t: &Nanos) -> i64 {
            t.as_us() as i64
        }
    }
    impl Codec<Nanos> for Ns {
        fn store(v: i64) -> Nanos {
            Nanos(v as u64)
        }
        fn show(t: &Nanos) -> i64 {
            t.as_ns() as i64
        }
    }
    impl Codec<bool> for Bool {
        fn store(v: i64) -> bool {
            v != 0
        }
        fn show(t: &bool) -> i64 {
            i64::from(*t)
        }
    }
    impl Codec<u64> for KiBSectors {
        fn store(v: i64) -> u64 {
            v as u64 * 2
        }
        fn show(t: &u64) -> i64 {
            (t / 2) as i64
        }
    }
    impl Codec<u32> for KiBSectors {
        fn store(v: i64) -> u32 {
            (v * 2) as u32
        }
        fn show(t: &u32) -> i64 {
            i64::from(t / 2)
        }
    }

    /// Integer units: the value as it is, in `u32`, `u64` or `i64`.
    macro_rules! integers {
        ($($unit:ident),*) => {$(
            impl Codec<u32> for $unit {
                fn store(v: i64) -> u32 {
                    v as u32
                }
                fn show(t: &u32) -> i64 {
                    i64::from(*t)
                }
            }
            impl Codec<u64> for $unit {
                fn store(v: i64) -> u64 {
                    v as u64
                }
                fn show(t: &u64) -> i64 {
                    *t as i64
                }
            }
            impl Codec<i64> for $unit {
                fn store(v: i64) -> i64 {
                    v
                }
                fn show(t: &i64) -> i64 {
                    *t
                }
            }
        )*};
    }
    integers!(Requests, Sectors, KiB, Count);
}

/// Declare a policy's tunables once: the table, the `Config` and its conversions (see the
/// module documentation).
macro_rules! tunables {
    (
        policy: $policy:literal $(, finish: $finish:path)?;
        $(#[$tmeta:meta])*
        $tvis:vis const $table:ident;
        $(#[$cmeta:meta])*
        $cvis:vis struct $config:ident {
            $(
                $( $(#[$fmeta:meta])* $field:ident : $fty:ty )? = $name:literal {
                    unit: $unit:ident,
                    default: $default:expr,
                    min: $min:expr,
                    max: $max:expr,
                    $( codec: $codec:ty, )?
                    $( store: $custom:ident, )?
                    $( set: $fixed:ident, )?
                    doc: $doc:expr $(,)?
                }
            ),* $(,)?
        }
    ) => {
        $(#[$tmeta])*
        $tvis const $table: &[$crate::tunable::Tunable] = &[ $( $crate::tunable::Tunable {
            name: $name,
            unit: $crate::tunable::Unit::$unit,
            default: $default,
            min: $min,
            max: $max,
            doc: $doc,
        } ),* ];

        $(#[$cmeta])*
        $cvis struct $config {
            $( $( $(#[$fmeta])* pub $field: $fty, )? )*
        }

        impl ::core::default::Default for $config {
            fn default() -> Self {
                Self::defaults_in($table)
            }
        }

        impl $config {
            #[doc = concat!("Every tunable at its default in `table` (`", stringify!($table),
                "`, or a table of the same names with other defaults).")]
            pub fn defaults_in(table: &[$crate::tunable::Tunable]) -> Self {
                #[allow(unused_mut)]
                let mut c = $config { $( $( $field: ::core::default::Default::default(), )? )* };
                for t in table {
                    c.store(t.name, t.default);
                }
                c
            }

            #[doc = concat!("Build from user settings: every name must be one of [`",
                stringify!($table), "`] and in range; each given value is stored onto the ",
                "defaults, in table order.")]
            pub fn from_settings(
                settings: &$crate::tunable::Settings,
            ) -> Result<Self, $crate::tunable::TunableError> {
                Self::from_settings_in($policy, $table, settings)
            }

            /// As `from_settings`, for `scheduler` with `table`'s defaults (a table of the
            /// same names: cfq-flat's).
            pub fn from_settings_in(
                scheduler: &str,
                table: &[$crate::tunable::Tunable],
                settings: &$crate::tunable::Settings,
            ) -> Result<Self, $crate::tunable::TunableError> {
                settings.validate(scheduler, table)?;
                let mut c = Self::defaults_in(table);
                for t in table {
                    if let Some(v) = settings.raw(t.name) {
                        c.store(t.name, v);
                    }
                }
                $( $finish(&mut c, settings)?; )?
                Ok(c)
            }

            /// Set tunable `name` of `scheduler` at run time, as a write to its sysfs file
            /// would: an unknown name, a value out of range or a tunable fixed when the
            /// policy was built is refused and changes nothing.
            pub fn set(
                &mut self,
                scheduler: &str,
                name: &str,
                value: i64,
            ) -> Result<(), $crate::tunable::TunableError> {
                let t = $crate::tunable::lookup(scheduler, $table, name)?;
                $crate::tunable::check_range(t, value)?;
                match name {
                    $( $name => $crate::tunable::tunables!(@fixed scheduler, name, $($fixed)?), )*
                    _ => {}
                }
                self.store(name, value);
                Ok(())
            }

            /// The value of tunable `name` as its sysfs file shows it, if it is one.
            pub fn get(&self, name: &str) -> Option<i64> {
                let c = self;
                match name {
                    $( $name => Some($crate::tunable::tunables!(@show c, name,
                        [$($field)?], [$($fty)?], $unit, [$($codec)?], [$($custom)?])), )*
                    _ => {
                        let _ = c;
                        None
                    }
                }
            }

            /// Store the range-checked sysfs `value` of `name` (`STORE_FUNCTION`).
            #[allow(unused_variables)]
            fn store(&mut self, name: &str, value: i64) {
                let c = self;
                match name {
                    $( $name => $crate::tunable::tunables!(@store c, name, value,
                        [$($field)?], [$($fty)?], $unit, [$($codec)?], [$($custom)?]), )*
                    _ => unreachable!("{name} is not in {}'s table", $policy),
                }
            }
        }
    };
    (@fixed $s:ident, $n:ident, ) => {{}};
    (@fixed $s:ident, $n:ident, build_only) => {
        return Err($crate::tunable::TunableError::Invalid {
            reason: format!("{} can only be set when {} is built", $n, $s),
        })
    };
    (@store $c:ident, $n:ident, $v:ident, [$f:ident], [$t:ty], $unit:ident, [], []) => {
        $c.$f = <$crate::tunable::codec::$unit as $crate::tunable::Codec<$t>>::store($v)
    };
    (@store $c:ident, $n:ident, $v:ident, [$f:ident], [$t:ty], $unit:ident, [$codec:ty], []) => {
        $c.$f = <$codec as $crate::tunable::Codec<$t>>::store($v)
    };
    (@store $c:ident, $n:ident, $v:ident, $f:tt, $t:tt, $unit:ident, $codec:tt, [custom]) => {
        $c.store_custom($n, $v)
    };
    (@store $c:ident, $n:ident, $v:ident, [], [], $unit:ident, $codec:tt, []) => {
        $c.store_custom($n, $v)
    };
    (@show $c:ident, $n:ident, [$f:ident], [$t:ty], $unit:ident, [], []) => {
        <$crate::tunable::codec::$unit as $crate::tunable::Codec<$t>>::show(&$c.$f)
    };
    (@show $c:ident, $n:ident, [$f:ident], [$t:ty], $unit:ident, [$codec:ty], []) => {
        <$codec as $crate::tunable::Codec<$t>>::show(&$c.$f)
    };
    (@show $c:ident, $n:ident, $f:tt, $t:tt, $unit:ident, $codec:tt, [custom]) => {
        $c.show_custom($n)
    };
    (@show $c:ident, $n:ident, [], [], $unit:ident, $codec:tt, []) => {
        $c.show_custom($n)
    };
}
pub(crate) use tunables;
