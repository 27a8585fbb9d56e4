//! A grid's axes: what `--sweep KEY=VALUES` names (`seed`, `drive`, `SCHED.TUNABLE`,
//! `job.NAME.FIELD`, a cgroup v2 io file), its values parsed and checked, and a cell's value on
//! each ([`Coord`]).

use elevator_core::registry;

use crate::Error;

/// One swept parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Axis {
    /// The seed.
    Seed(Vec<u64>),
    /// The drive (built-in names or drive files).
    Drive(Vec<String>),
    /// A tunable of scheduler `sched`.
    Tunable {
        /// The scheduler that has it.
        sched: String,
        /// Its sysfs name.
        name: String,
        /// The values.
        values: Vec<i64>,
    },
    /// A cgroup v2 io file of the group at `path` (`io.weight`, `io.bfq.weight`, `io.latency`
    /// as its target in microseconds, `io.max` as written after `MAJ:MIN`), or the device's
    /// `io.cost.qos` / `io.cost.model` (which live on the root, `path` `/`). Every scheduler's
    /// cells take it: the controllers sit at the block layer's rq_qos position, under any
    /// scheduler.
    Control {
        /// The group's path (`/` for io.cost's files).
        path: String,
        /// The file: one of `CONTROL_FILES`.
        file: String,
        /// The values: integers for `io.weight`, `io.bfq.weight` and `io.latency`, text for
        /// `io.max` and `io.cost.*`.
        values: Vec<toml::Value>,
    },
    /// A field of the scenario job named `job`.
    Job {
        /// The job's name.
        job: String,
        /// The field, as in the scenario file.
        field: String,
        /// The values, as TOML values.
        values: Vec<toml::Value>,
    },
}

/// A cell's value on one axis.
#[derive(Clone, Debug, PartialEq)]
pub enum Coord {
    /// A seed or a tunable's value.
    Int(i64),
    /// A drive, or a job field's value as a user would type it.
    Text(String),
}

impl std::fmt::Display for Coord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Coord::Int(i) => write!(f, "{i}"),
            Coord::Text(s) => f.write_str(s),
        }
    }
}

impl Axis {
    /// Whether the axis's values reach a cell run under `sched` (as `--sched` names it): a
    /// tunable axis only under its own scheduler, every other axis under all.
    pub fn applies_to(&self, sched: &str) -> bool {
        match self {
            Axis::Tunable { sched: owner, .. } => owner == sched,
            _ => true,
        }
    }

    /// How the axis is written (`seed`, `drive`, `anticipatory.antic_expire`, `job.x.bs`):
    /// its column in tables.
    pub fn key(&self) -> String {
        match self {
            Axis::Seed(_) => "seed".into(),
            Axis::Drive(_) => "drive".into(),
            Axis::Tunable { sched, name, .. } => format!("{sched}.{name}"),
            Axis::Job { job, field, .. } => format!("job.{job}.{field}"),
            Axis::Control { path, file, .. } => control_key(path, file),
        }
    }

    /// Whether its values are integers (seed, tunables) rather than text.
    pub fn is_int(&self) -> bool {
        match self {
            Axis::Seed(_) | Axis::Tunable { .. } => true,
            Axis::Control { file, .. } => control_is_int(file),
            Axis::Drive(_) | Axis::Job { .. } => false,
        }
    }

    /// The value at index `i`.
    pub fn coord(&self, i: usize) -> Coord {
        match self {
            Axis::Seed(v) => Coord::Int(v[i] as i64),
            Axis::Drive(v) => Coord::Text(v[i].clone()),
            Axis::Tunable { values, .. } => Coord::Int(values[i]),
            Axis::Job { values, .. } => Coord::Text(show(&values[i])),
            Axis::Control { values, .. } => match &values[i] {
                toml::Value::Integer(v) => Coord::Int(*v),
                other => Coord::Text(show(other)),
            },
        }
    }

    /// How many values.
    pub fn len(&self) -> usize {
        match self {
            Axis::Seed(v) => v.len(),
            Axis::Drive(v) => v.len(),
            Axis::Tunable { values, .. } => values.len(),
            Axis::Job { values, .. } => values.len(),
            Axis::Control { values, .. } => values.len(),
        }
    }

    /// Whether it has no values (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The cgroup v2 io files a sweep takes: per group `io.weight` (io.cost's weight, 1..=10000),
/// `io.bfq.weight` (1..=1000), `io.latency` (the target, microseconds), `io.max` (as written
/// after `MAJ:MIN`: `rbps=2097152 wiops=120`, `max`); on the root `io.cost.qos` and
/// `io.cost.model` (as written after `MAJ:MIN`).
pub const CONTROL_FILES: [&str; 6] = [
    "io.weight",
    "io.bfq.weight",
    "io.latency",
    "io.max",
    "io.cost.qos",
    "io.cost.model",
];

/// An io controller axis's key: `PATH/FILE` as under /sys/fs/cgroup (`/a/io.weight`), and
/// the root's `io.cost.*` files by their name alone.
pub(super) fn control_key(path: &str, file: &str) -> String {
    if file.starts_with("io.cost.") {
        file.to_string()
    } else {
        format!("{}/{file}", path.trim_end_matches('/'))
    }
}

pub(super) fn control_is_int(file: &str) -> bool {
    matches!(file, "io.weight" | "io.bfq.weight" | "io.latency")
}

/// A TOML value as a user would type it.
pub(super) fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `LO..HI` (inclusive) or a comma-separated list, as integers.
fn integers(key: &str, text: &str) -> Result<Vec<i64>, Error> {
    let arg = || format!("--sweep {key}");
    let int = |s: &str| {
        let s = s.trim();
        s.parse::<i64>().map_err(|_| {
            let why = if !s.is_empty()
                && s.trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            {
                "is past the integers an axis takes (-2^63 to 2^63 - 1)"
            } else {
                "is not an integer (values: LO..HI, or V,V,...)"
            };
            let shown: String = s.chars().take(40).collect();
            Error::arg(arg(), format!("{shown:?} {why}"))
        })
    };
    if let Some((lo, hi)) = text.split_once("..") {
        let (lo, hi) = (int(lo)?, int(hi)?);
        if lo > hi {
            return Err(Error::arg(arg(), format!("empty range {lo}..{hi}")));
        }
        // Counted without overflow (i64::MIN..i64::MAX once wrapped to a short range and
        // was then collected: 2^64 values).
        if hi.abs_diff(lo) >= 100_000 {
            return Err(Error::arg(arg(), format!("{lo}..{hi} is too many values")));
        }
        return Ok((lo..=hi).collect());
    }
    text.split(',').map(int).collect()
}

/// A value of a job field: an integer, a float, a boolean, or else a string.
fn toml_value(s: &str) -> toml::Value {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = s.parse::<f64>() {
        toml::Value::Float(f)
    } else if let Ok(b) = s.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(s.to_string())
    }
}

/// Parse one axis, `KEY=VALUES`: `seed=1..5`, `drive=A,B`, `SCHED.TUNABLE=V,V` or
/// `job.NAME.FIELD=V,V`. Values are a comma-separated list or an inclusive integer range.
pub fn parse_axis(text: &str) -> Result<Axis, Error> {
    let (key, values) = text
        .split_once('=')
        .ok_or_else(|| Error::arg(format!("--sweep {text:?}"), "expected KEY=VALUES"))?;
    let key = key.trim();
    let arg = format!("--sweep {key}");
    if values.trim().is_empty() {
        return Err(Error::arg(arg, "no values"));
    }
    if key == "seed" {
        let v = integers(key, values)?;
        if let Some(bad) = v.iter().find(|&&s| s < 0) {
            return Err(Error::arg(arg, format!("{bad} is negative")));
        }
        return Ok(Axis::Seed(v.into_iter().map(|s| s as u64).collect()));
    }
    if key == "drive" {
        return Ok(Axis::Drive(
            values.split(',').map(|s| s.trim().to_string()).collect(),
        ));
    }
    if key.starts_with('/') || key.starts_with("io.") {
        let (path, file) = match key.rsplit_once('/') {
            Some(("", file)) => ("/", file),
            Some((path, file)) => (path, file),
            None => ("/", key),
        };
        if !CONTROL_FILES.contains(&file) {
            return Err(Error::arg(
                arg,
                format!(
                    "{file:?} is not a swept io file (expected GROUP/FILE with FILE one of {})",
                    CONTROL_FILES.join(", ")
                ),
            ));
        }
        let cost = file.starts_with("io.cost.");
        if cost && path != "/" {
            return Err(Error::arg(
                arg,
                format!("{file} is the device's, on the root: sweep `{file}=...`"),
            ));
        }
        if !cost && path == "/" {
            return Err(Error::arg(
                arg,
                format!("the root's {file} is fixed (as in the kernel): name a group, `/a/{file}`"),
            ));
        }
        let values = if control_is_int(file) {
            let v = integers(key, values)?;
            if let Some(bad) = v.iter().find(|&&x| x < 1) {
                return Err(Error::arg(arg, format!("{bad} is below 1")));
            }
            v.into_iter().map(toml::Value::Integer).collect()
        } else {
            values
                .split(',')
                .map(|s| toml::Value::String(s.trim().to_string()))
                .collect()
        };
        return Ok(Axis::Control {
            path: path.to_string(),
            file: file.to_string(),
            values,
        });
    }
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        ["job", job, field] => Ok(Axis::Job {
            job: job.to_string(),
            field: field.to_string(),
            values: values.split(',').map(toml_value).collect(),
        }),
        [sched, name] => {
            let info = registry::find(sched)
                .ok_or_else(|| Error::arg(&arg, format!("no scheduler named {sched:?}")))?;
            if !info.has_tunable(name) {
                return Err(Error::arg(
                    arg,
                    format!("{sched} has no tunable {name:?} (elevator list shows them)"),
                ));
            }
            Ok(Axis::Tunable {
                sched: sched.to_string(),
                name: name.to_string(),
                values: integers(key, values)?,
            })
        }
        _ => Err(Error::arg(
            arg,
            "expected seed, drive, SCHED.TUNABLE, job.NAME.FIELD, GROUP/io.FILE or io.cost.FILE",
        )),
    }
}
