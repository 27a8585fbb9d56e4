//! Building jobs: the environment a job is built in, and what can go wrong.
//!
//! A job's configuration names places on the device either in bytes or as fractions of the
//! device's capacity (fields `offset` / `offset_frac`, `size` / `size_frac` ...); the capacity
//! is only known when the job is built for a device, so every job is built with
//! [`BuildEnv`] and resolves its positions then.

use std::fmt;

/// What a job needs to know about the run it is built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildEnv {
    /// The device's size in 512-byte sectors.
    pub capacity_sectors: u64,
    /// The run's seed. Jobs mix it with their [`name`](BuildEnv::name), so two jobs of one run
    /// draw different random streams and a run is reproducible from its seed alone.
    pub seed: u64,
    /// The job's name (unique within a run), as reports print it.
    pub name: String,
}

impl BuildEnv {
    /// An environment for a device of `capacity_sectors`, run seed `seed`, job `name`.
    pub fn new(capacity_sectors: u64, seed: u64, name: impl Into<String>) -> BuildEnv {
        BuildEnv {
            capacity_sectors,
            seed,
            name: name.into(),
        }
    }

    /// The seed this job should use: the run's seed mixed with the job's name (FNV-1a then a
    /// SplitMix64 finaliser), or `explicit` if the configuration pins one.
    pub fn job_seed(&self, explicit: Option<u64>) -> u64 {
        if let Some(s) = explicit {
            return s;
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.name.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        mix64(h ^ self.seed)
    }

    /// The device's size in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_sectors * elevator_core::SECTOR_BYTES
    }
}

/// SplitMix64's finaliser: a cheap, well-spread 64-bit mix.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A job's configuration cannot be built into a job.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BuildError {
    /// The job's name.
    pub job: String,
    /// The configuration field at fault (as spelled in a scenario file).
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl BuildError {
    /// An error for job `env.name`, field `field`.
    pub fn new(env: &BuildEnv, field: &'static str, reason: impl Into<String>) -> BuildError {
        BuildError {
            job: env.name.clone(),
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job {:?}: field `{}`: {}",
            self.job, self.field, self.reason
        )
    }
}

impl std::error::Error for BuildError {}

/// Resolve a byte position given either in bytes (`bytes`, field `bytes_field`) or as a
/// fraction of the capacity (`frac`, field `frac_field`); giving both is an error. Returns
/// bytes, rounded down to a whole sector; `None` if neither was given.
pub(crate) fn resolve_bytes(
    env: &BuildEnv,
    bytes: Option<u64>,
    bytes_field: &'static str,
    frac: Option<f64>,
    frac_field: &'static str,
) -> Result<Option<u64>, BuildError> {
    match (bytes, frac) {
        (Some(_), Some(_)) => Err(BuildError::new(
            env,
            frac_field,
            format!("give either `{bytes_field}` or `{frac_field}`, not both"),
        )),
        (Some(b), None) => Ok(Some(
            b / elevator_core::SECTOR_BYTES * elevator_core::SECTOR_BYTES,
        )),
        (None, Some(f)) => {
            if !(0.0..=1.0).contains(&f) || f.is_nan() {
                return Err(BuildError::new(
                    env,
                    frac_field,
                    format!("{f} is not a fraction of the capacity in 0..=1"),
                ));
            }
            let sectors = (env.capacity_sectors as f64 * f).floor() as u64;
            Ok(Some(sectors * elevator_core::SECTOR_BYTES))
        }
        (None, None) => Ok(None),
    }
}

/// A region of the device in sectors, `[start, start + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First sector.
    pub start: u64,
    /// Length in sectors.
    pub len: u64,
}

impl Region {
    /// The sector just past the region.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Resolve a region from an offset and a size, each in bytes or as a fraction (see
/// [`resolve_bytes`]). A missing offset is 0; a missing size runs to the end of the device.
/// The region must be non-empty and inside the device.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve_region(
    env: &BuildEnv,
    offset: Option<u64>,
    offset_frac: Option<f64>,
    size: Option<u64>,
    size_frac: Option<f64>,
    names: [&'static str; 4],
) -> Result<Region, BuildError> {
    let cap = env.capacity_bytes();
    let off = resolve_bytes(env, offset, names[0], offset_frac, names[1])?.unwrap_or(0);
    if off >= cap {
        return Err(BuildError::new(
            env,
            names[0],
            format!("offset {off} bytes is past the device's end ({cap} bytes)"),
        ));
    }
    let size = resolve_bytes(env, size, names[2], size_frac, names[3])?.unwrap_or(cap - off);
    if size == 0 {
        return Err(BuildError::new(env, names[2], "the region is empty"));
    }
    if off + size > cap {
        return Err(BuildError::new(
            env,
            names[2],
            format!("offset {off} + size {size} bytes runs past the device's end ({cap} bytes)"),
        ));
    }
    Ok(Region {
        start: off / elevator_core::SECTOR_BYTES,
        len: size / elevator_core::SECTOR_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_seed_differs_between_jobs_of_one_run_and_is_stable() {
        let a = BuildEnv::new(1000, 7, "a");
        let b = BuildEnv::new(1000, 7, "b");
        assert_ne!(a.job_seed(None), b.job_seed(None));
        assert_eq!(a.job_seed(None), BuildEnv::new(1000, 7, "a").job_seed(None));
        assert_eq!(a.job_seed(Some(3)), 3);
    }

    #[test]
    fn region_from_fractions_and_bytes() {
        let env = BuildEnv::new(1_000_000, 0, "j");
        let r = resolve_region(
            &env,
            None,
            Some(0.5),
            Some(4096),
            None,
            ["o", "of", "s", "sf"],
        )
        .unwrap();
        assert_eq!(
            r,
            Region {
                start: 500_000,
                len: 8
            }
        );
        let all = resolve_region(&env, None, None, None, None, ["o", "of", "s", "sf"]).unwrap();
        assert_eq!(
            all,
            Region {
                start: 0,
                len: 1_000_000
            }
        );
    }

    #[test]
    fn region_errors_name_the_field() {
        let env = BuildEnv::new(1000, 0, "j");
        let e = resolve_region(
            &env,
            Some(0),
            Some(0.1),
            None,
            None,
            ["offset", "offset_frac", "size", "size_frac"],
        )
        .unwrap_err();
        assert_eq!(e.field, "offset_frac");
        let e = resolve_region(
            &env,
            None,
            None,
            Some(1_000_000),
            None,
            ["offset", "offset_frac", "size", "size_frac"],
        )
        .unwrap_err();
        assert_eq!(e.field, "size");
        let e = resolve_region(
            &env,
            None,
            Some(1.5),
            None,
            None,
            ["offset", "offset_frac", "size", "size_frac"],
        )
        .unwrap_err();
        assert_eq!(e.field, "offset_frac");
    }
}
