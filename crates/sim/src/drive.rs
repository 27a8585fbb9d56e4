//! Any drive a simulation can run on: a rotational drive ([`DriveSpec`]) or an SSD
//! ([`SsdSpec`]), by built-in name or TOML file. An SSD spec says `kind = "ssd"`; every other
//! file is read as a rotational drive.

use std::path::Path;

use elevator_workload::InputError;

use crate::device::Device;
use crate::hdd::{DriveSpec, Hdd};
use crate::ssd::{Ssd, SsdSpec};

/// A drive spec of either kind.
#[derive(Clone, Debug, PartialEq)]
pub enum DriveModel {
    /// A DiskSim-class rotational drive.
    Hdd(Box<DriveSpec>),
    /// An MQSim-class SSD.
    Ssd(Box<SsdSpec>),
}

impl DriveModel {
    /// Names of every built-in drive, rotational first.
    pub fn builtin_names() -> Vec<&'static str> {
        let mut v = DriveSpec::builtin_names();
        v.extend(SsdSpec::builtin_names());
        v
    }

    /// A built-in drive by name (case-insensitive).
    pub fn builtin(name: &str) -> Option<DriveModel> {
        DriveSpec::builtin(name)
            .map(|s| DriveModel::Hdd(Box::new(s)))
            .or_else(|| SsdSpec::builtin(name).map(|s| DriveModel::Ssd(Box::new(s))))
    }

    /// Reads and checks a drive TOML of either kind.
    pub fn load(path: impl AsRef<Path>) -> Result<DriveModel, InputError> {
        let path = path.as_ref();
        DriveModel::parse(&crate::spec_file::read(path)?, path)
    }

    /// Parses and checks drive TOML text of either kind; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<DriveModel, InputError> {
        if is_ssd(text) {
            SsdSpec::parse(text, path).map(|s| DriveModel::Ssd(Box::new(s)))
        } else {
            DriveSpec::parse(text, path).map(|s| DriveModel::Hdd(Box::new(s)))
        }
    }

    /// A built-in name or, failing that, a TOML file path.
    pub fn resolve(name_or_path: &str) -> Result<DriveModel, InputError> {
        match DriveModel::builtin(name_or_path) {
            Some(d) => Ok(d),
            // A link to itself or to nowhere is read and told as such, not as missing.
            None if Path::new(name_or_path).symlink_metadata().is_err() => Err(
                crate::spec_file::not_found(name_or_path, "drive", &DriveModel::builtin_names()),
            ),
            None => DriveModel::load(name_or_path),
        }
    }

    /// The drive's short name.
    pub fn name(&self) -> &str {
        match self {
            DriveModel::Hdd(s) => &s.name,
            DriveModel::Ssd(s) => &s.name,
        }
    }

    /// The drive's one-line description.
    pub fn description(&self) -> &str {
        match self {
            DriveModel::Hdd(s) => &s.description,
            DriveModel::Ssd(s) => &s.description,
        }
    }

    /// A fresh device (in the state the spec gives) to simulate.
    pub fn device(&self) -> Box<dyn Device> {
        self.device_send()
    }

    /// [`device`](Self::device), for a thread of its own (an emulated drive's engine).
    pub fn device_send(&self) -> Box<dyn Device + Send> {
        match self {
            DriveModel::Hdd(s) => Box::new(Hdd::new((**s).clone())),
            // The spec was checked when it was loaded.
            DriveModel::Ssd(s) => Box::new(Ssd::new((**s).clone()).expect("a checked SSD spec")),
        }
    }

    /// Capacity in 512-byte sectors.
    pub fn capacity_sectors(&self) -> u64 {
        match self {
            DriveModel::Hdd(s) => Hdd::new((**s).clone()).capacity_sectors(),
            DriveModel::Ssd(s) => s.capacity_sectors(),
        }
    }

    /// The rotational spec, if it is one.
    pub fn hdd(&self) -> Option<&DriveSpec> {
        match self {
            DriveModel::Hdd(s) => Some(s),
            DriveModel::Ssd(_) => None,
        }
    }

    /// The SSD spec, if it is one.
    pub fn ssd(&self) -> Option<&SsdSpec> {
        match self {
            DriveModel::Ssd(s) => Some(s),
            DriveModel::Hdd(_) => None,
        }
    }

    /// Writes the spec as TOML.
    pub fn to_toml(&self) -> String {
        match self {
            DriveModel::Hdd(s) => s.to_toml(),
            DriveModel::Ssd(s) => s.to_toml(),
        }
    }
}

/// Whether TOML text is an SSD spec (a top-level `kind = "ssd"`).
fn is_ssd(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .any(|(k, v)| {
            k.trim() == "kind"
                && v.split('#').next().unwrap_or("").trim().trim_matches('"') == "ssd"
        })
}
