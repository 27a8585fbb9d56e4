//! fio's `random_distribution`: where a random job's random offsets fall, drawn as fio's
//! io_u.c (`get_next_rand_offset` and the `__get_next_rand_offset_*` it calls), lib/zipf.c,
//! lib/gauss.c, zone-dist.c and the option's parsing in options.c
//! (`str_random_distribution_cb`, `parse_zoned_distribution`, `zone_split_ddir`) draw them,
//! at fio commit f534438 (August 2026).
//!
//! - `random` (the default): uniform over the region's blocks (the job's random map, or with
//!   replacement under `norandommap`).
//! - `zipf:THETA` (default 1.1; 1 refused, as fio refuses it) and `pareto:H` (default 0.2,
//!   0 < H < 1): fio's generators over the region's blocks (`nranges`, counted in the job's
//!   smallest block size); `normal:DEV` (fio's gauss, 0 <= DEV < 100, default 0): the mean
//!   of 12 uniform draws, moved by up to `DEV` percent of the region (fio's `gauss_dev`).
//!   As in fio, each value is scattered over the region by fio's multiplicative hash
//!   (`__hash_u64`, the golden ratio) and rotated by an offset: a seeded 32-bit draw, or
//!   `CENTER * nranges` with `:CENTER` (0..=1; for `normal`, `(CENTER - 0.5) * nranges`,
//!   wrapping as fio's unsigned arithmetic does). fio disables the hash only when it picks
//!   files, not offsets.
//! - `zoned:A/S:...` and `zoned_abs:A/SIZE:...`: `A` percent of the accesses fall, uniformly,
//!   in a zone of `S` percent of the region (`zoned`) or of `SIZE` bytes (`zoned_abs`), zones
//!   laid end to end from the region's start. One list for both directions, or
//!   `reads,writes` (a third part, trims', is read and left out); a direction given no list
//!   draws uniformly. Access shares must add up to 100; a size left out (or 0) in `zoned` is
//!   an equal part of what the others leave (fio's fix-up); `zoned_abs` zones past the
//!   region are refused when the job is built (fio fails its first I/O there).
//!
//! As fio's `fixup_options` does, any distribution but `random` turns the random map off:
//! offsets are drawn with replacement.
//!
//! Deviations: the generators are seeded from the job's seed and draw from elevator's own
//! generator (ChaCha8), not fio's Tausworthe, so the offsets are not fio's bit for bit; fio's
//! zipf sums at most 10 million terms of its normalising constant, as here, but past the
//! first million this sums the rest by Euler-Maclaurin (the same to about 1e-12); gauss's
//! draws take values below 2^32 as fio's 32-bit generator does; and where fio's gauss would
//! halve its deviation forever (a sum at the region's last block) it stops at 0.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// fio's `ZONESPLIT_MAX`: the most zones one direction's list takes.
pub const ZONESPLIT_MAX: usize = 256;

/// fio's default zipf theta (`FIO_DEF_ZIPF`).
pub const DEFAULT_ZIPF_THETA: f64 = 1.1;
/// fio's default pareto h (`FIO_DEF_PARETO`).
pub const DEFAULT_PARETO_H: f64 = 0.2;

/// fio's cap on the terms of zipf's normalising sum (`ZIPF_MAX_GEN`).
const ZIPF_MAX_GEN: u64 = 10_000_000;
/// Terms of zipf's sum added one by one; the rest, to [`ZIPF_MAX_GEN`], in closed form.
const ZIPF_EXACT_TERMS: u64 = 1_000_000;

/// fio's `GOLDEN_RATIO_64` (hash.h), the multiplier of `__hash_u64`.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// One zone of a `zoned` or `zoned_abs` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zone {
    /// Percent of the direction's random accesses that fall in the zone.
    pub access: u32,
    /// The zone's size: percent of the region (`zoned`; 0 is an equal part of what the
    /// other zones leave), or bytes (`zoned_abs`).
    pub size: u64,
}

/// fio's `random_distribution`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RandomDistribution {
    /// `random`: uniform.
    #[default]
    Random,
    /// `zipf:THETA[:CENTER]`.
    Zipf {
        /// Theta, positive and not 1.
        theta: f64,
        /// Where the hottest block goes, 0..=1 of the region (`None`: a seeded place).
        center: Option<f64>,
    },
    /// `pareto:H[:CENTER]`.
    Pareto {
        /// H, 0 < H < 1.
        h: f64,
        /// As zipf's.
        center: Option<f64>,
    },
    /// `normal:DEV[:CENTER]` (fio's gauss).
    Normal {
        /// The deviation, percent of the region, 0 <= DEV < 100.
        dev: f64,
        /// Where the mean goes, 0..=1 of the region (`None`: fio's 0 offset).
        center: Option<f64>,
    },
    /// `zoned:...`: zones sized in percent of the region, per direction ([reads, writes]).
    Zoned {
        /// Each direction's zones (empty: uniform).
        zones: [Vec<Zone>; 2],
    },
    /// `zoned_abs:...`: zones sized in bytes, per direction ([reads, writes]).
    ZonedAbs {
        /// Each direction's zones (empty: uniform).
        zones: [Vec<Zone>; 2],
    },
}

impl RandomDistribution {
    /// Whether offsets are drawn uniformly (`random`).
    pub fn is_uniform(&self) -> bool {
        matches!(self, RandomDistribution::Random)
    }

    /// Read fio's spelling: `random`, `zipf[:THETA[:CENTER]]`, `pareto[:H[:CENTER]]`,
    /// `normal[:DEV[:CENTER]]`, `zoned:A/S:...[,A/S:...]`, `zoned_abs:A/SIZE:...[,...]`;
    /// `parse_size` reads `zoned_abs`'s sizes.
    pub fn parse(
        v: &str,
        parse_size: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<RandomDistribution, String> {
        let v = v.trim();
        let (kind, rest) = match v.split_once(':') {
            Some((k, r)) => (k.trim(), Some(r)),
            None => (v, None),
        };
        let float = |s: &str, what: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| format!("{s:?} is not a number (the {what}, in {v:?})"))
        };
        // fio's `split_parse_distr`: `VALUE[:CENTER]`.
        let value_center = |default: f64, what: &str| -> Result<(f64, Option<f64>), String> {
            let Some(rest) = rest else {
                return Ok((default, None));
            };
            let (val, center) = match rest.split_once(':') {
                Some((a, c)) => (float(a, what)?, Some(float(c, "center")?)),
                None => (float(rest, what)?, None),
            };
            Ok((val, center))
        };
        let dist = match kind {
            "random" => {
                if rest.is_some() {
                    return Err(format!("{v:?}: `random` takes no value"));
                }
                RandomDistribution::Random
            }
            "zipf" => {
                let (theta, center) = value_center(DEFAULT_ZIPF_THETA, "theta")?;
                RandomDistribution::Zipf { theta, center }
            }
            "pareto" => {
                let (h, center) = value_center(DEFAULT_PARETO_H, "h")?;
                RandomDistribution::Pareto { h, center }
            }
            "normal" => {
                let (dev, center) = value_center(0.0, "deviation")?;
                RandomDistribution::Normal { dev, center }
            }
            "zoned" | "zoned_abs" => {
                let abs = kind == "zoned_abs";
                let Some(rest) = rest else {
                    return Err(format!(
                        "{v:?}: {kind} takes its zones (`{kind}:60/10:40/90`)"
                    ));
                };
                let zones = zones_per_direction(rest, abs, &parse_size)
                    .map_err(|e| format!("{v:?}: {e}"))?;
                if abs {
                    RandomDistribution::ZonedAbs { zones }
                } else {
                    RandomDistribution::Zoned { zones }
                }
            }
            "sequence" => {
                return Err(format!(
                    "{v:?}: the `sequence` distribution is not supported (random, zipf, pareto, \
                     normal, zoned, zoned_abs)"
                ))
            }
            other => {
                return Err(format!(
                    "{other:?} is not a distribution: random, zipf, pareto, normal, zoned or \
                     zoned_abs"
                ))
            }
        };
        dist.check().map_err(|e| format!("{v:?}: {e}"))?;
        Ok(dist)
    }

    /// Check the values as fio's `str_random_distribution_cb` and `zone_split_ddir` do: zipf's
    /// theta not 1 (and, here, positive, at most 100), pareto's h in (0, 1), normal's
    /// deviation in [0, 100), a center in [0, 1]; a direction's zones (at most
    /// [`ZONESPLIT_MAX`]) take 100% of its accesses, and `zoned` sizes at most 100%.
    pub fn check(&self) -> Result<(), String> {
        let center_ok = |c: Option<f64>| match c {
            Some(c) if !(0.0..=1.0).contains(&c) => {
                Err(format!("a center {c} is not within 0..=1"))
            }
            _ => Ok(()),
        };
        match self {
            RandomDistribution::Random => {}
            &RandomDistribution::Zipf { theta, center } => {
                if theta == 1.0 {
                    return Err("zipf's theta must not be 1 (as fio says)".into());
                }
                if !(theta > 0.0 && theta <= 100.0) {
                    return Err(format!(
                        "zipf's theta {theta} is not in (0, 100] (fio's generator is meant for \
                         a positive one)"
                    ));
                }
                center_ok(center)?;
            }
            &RandomDistribution::Pareto { h, center } => {
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!("pareto's h {h} is not within 0 < h < 1"));
                }
                center_ok(center)?;
            }
            &RandomDistribution::Normal { dev, center } => {
                if !(0.0..100.0).contains(&dev) {
                    return Err(format!(
                        "normal's deviation {dev} is not within 0 <= dev < 100"
                    ));
                }
                center_ok(center)?;
            }
            RandomDistribution::Zoned { zones } | RandomDistribution::ZonedAbs { zones } => {
                let abs = matches!(self, RandomDistribution::ZonedAbs { .. });
                for list in zones.iter().filter(|l| !l.is_empty()) {
                    if list.len() > ZONESPLIT_MAX {
                        return Err(format!("more than {ZONESPLIT_MAX} zones"));
                    }
                    let access: u64 = list.iter().map(|z| u64::from(z.access)).sum();
                    if access != 100 {
                        return Err(format!(
                            "the zones' access percentages add up to {access}, not 100 (as fio \
                             requires)"
                        ));
                    }
                    let size = list
                        .iter()
                        .try_fold(0u64, |a, z| a.checked_add(z.size))
                        .ok_or("the zones' sizes add up past 2^64 bytes")?;
                    if !abs && size > 100 {
                        return Err(format!("the zones' sizes add up to {size}%, over 100%"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// fio's `str_split_parse` for zones: one list for both directions, or `reads,writes[,trims]`
/// (trims' read and left out).
fn zones_per_direction(
    v: &str,
    abs: bool,
    parse_size: &impl Fn(&str) -> Result<u64, String>,
) -> Result<[Vec<Zone>; 2], String> {
    match v.split_once(',') {
        None => {
            let both = zone_list(v, abs, parse_size)?;
            Ok([both.clone(), both])
        }
        Some((read, rest)) => {
            let (write, trim) = rest.split_once(',').unwrap_or((rest, ""));
            zone_list(trim, abs, parse_size)?;
            Ok([
                zone_list(read, abs, parse_size)?,
                zone_list(write, abs, parse_size)?,
            ])
        }
    }
}

/// One direction's zones as fio's `zone_split_ddir` reads them (empty: none).
fn zone_list(
    v: &str,
    abs: bool,
    parse_size: &impl Fn(&str) -> Result<u64, String>,
) -> Result<Vec<Zone>, String> {
    let mut zones = Vec::new();
    // fio's `split_parse_ddir`: entries separated by `:`, up to the first empty one.
    for entry in v.trim().split(':').take_while(|e| !e.trim().is_empty()) {
        if zones.len() == ZONESPLIT_MAX {
            return Err(format!("more than {ZONESPLIT_MAX} zones"));
        }
        let (access, size) = match entry.split_once('/') {
            Some((a, s)) => (a.trim(), Some(s.trim())),
            None => (entry.trim(), None),
        };
        let access: u32 = access
            .parse()
            .ok()
            .filter(|&a| a <= 100)
            .ok_or_else(|| format!("{access:?} in {entry:?} is not an access percentage"))?;
        let size = match (size, abs) {
            (None, _) => 0,
            (Some(s), true) => parse_size(s)?,
            // fio's `atoi`, over 100 taken as 100, 0 (or nothing) as left out.
            (Some(""), false) => 0,
            (Some(s), false) => s
                .parse::<u64>()
                .map_err(|_| format!("{s:?} in {entry:?} is not a size percentage"))?
                .min(100),
        };
        zones.push(Zone { access, size });
    }
    if zones.is_empty() {
        return Ok(zones);
    }
    if !abs {
        let given: u64 = zones.iter().map(|z| z.size).sum();
        if given > 100 {
            return Err(format!("the zones' sizes add up to {given}%, over 100%"));
        }
        let missing = zones.iter().filter(|z| z.size == 0).count() as u64;
        if missing > 0 {
            let share = if missing == 1 && zones.len() == 1 {
                100
            } else {
                (100 - given) / missing
            };
            for z in zones.iter_mut().filter(|z| z.size == 0) {
                z.size = share;
            }
        }
    }
    Ok(zones)
}

/// fio's `__hash_u64`.
fn hash_u64(v: u64) -> u64 {
    v.wrapping_mul(GOLDEN_RATIO_64)
}

/// zipf's normalising sum over `n` blocks as fio's `zipf_update` computes it: at most
/// [`ZIPF_MAX_GEN`] terms of `1 / i^theta`.
fn zipf_zetan(n: u64, theta: f64) -> f64 {
    let terms = n.min(ZIPF_MAX_GEN);
    let exact = terms.min(ZIPF_EXACT_TERMS);
    let mut sum: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
    if terms > exact {
        // Euler-Maclaurin for the terms a+1 ..= b.
        let (a, b) = ((exact + 1) as f64, terms as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(a) + f(b)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

/// Where the values of a zone list fall: fio's `zone_state_index`, one (start, end) per
/// percent of the accesses, in percent of the region (`zoned`) or bytes (`zoned_abs`).
fn zone_index(zones: &[Zone]) -> Vec<(u64, u64)> {
    let mut index = Vec::with_capacity(100);
    let mut prev = 0;
    for z in zones {
        for _ in 0..z.access {
            index.push((prev, prev + z.size));
        }
        prev += z.size;
    }
    index
}

/// A job's offsets under a non-uniform distribution: the generator and its state (fio's
/// `zipf_state`, `gauss_state`, `zone_state_index`).
#[derive(Clone, Debug)]
pub struct OffsetDraw {
    gen: Gen,
    rng: ChaCha8Rng,
}

#[derive(Clone, Debug)]
enum Gen {
    Zipf {
        n: u64,
        theta: f64,
        zetan: f64,
        zeta2: f64,
        rand_off: u64,
    },
    Pareto {
        n: u64,
        pow: f64,
        rand_off: u64,
    },
    Gauss {
        n: u64,
        stddev: u64,
        rand_off: u64,
    },
    Zoned {
        abs: bool,
        index: [Vec<(u64, u64)>; 2],
    },
}

impl OffsetDraw {
    /// The draw of `dist` (not `random`) over `nranges` blocks (fio's count: the region over
    /// the job's smallest block size), seeded with `seed`. `None` for `random`.
    pub fn new(dist: &RandomDistribution, nranges: u64, seed: u64) -> Option<OffsetDraw> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = nranges.max(1);
        // fio's `shared_rand_init`: a 32-bit draw, or the center's share of the blocks.
        let mut rotate = |center: Option<f64>| match center {
            Some(c) => (n as f64 * c) as u64,
            None => u64::from(rng.next_u32()),
        };
        let gen = match dist {
            RandomDistribution::Random => return None,
            &RandomDistribution::Zipf { theta, center } => Gen::Zipf {
                n,
                theta,
                zetan: zipf_zetan(n, theta),
                zeta2: 1.0 + 0.5f64.powf(theta),
                rand_off: rotate(center),
            },
            &RandomDistribution::Pareto { h, center } => Gen::Pareto {
                n,
                pow: h.ln() / (1.0 - h).ln(),
                rand_off: rotate(center),
            },
            &RandomDistribution::Normal { dev, center } => Gen::Gauss {
                n,
                // fio's `gauss_init`: DEV percent of the blocks, rounded up, at most half.
                stddev: if dev == 0.0 {
                    0
                } else {
                    ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2)
                },
                // `nranges * (center - 0.5)` into an unsigned offset: wraps below 0.5.
                rand_off: center.map_or(0, |c| (n as f64 * (c - 0.5)) as i64 as u64),
            },
            RandomDistribution::Zoned { zones } => Gen::Zoned {
                abs: false,
                index: [zone_index(&zones[0]), zone_index(&zones[1])],
            },
            RandomDistribution::ZonedAbs { zones } => Gen::Zoned {
                abs: true,
                index: [zone_index(&zones[0]), zone_index(&zones[1])],
            },
        };
        Some(OffsetDraw { gen, rng })
    }

    /// The next block for direction `dir` (0 reads, 1 writes): for zipf, pareto and normal
    /// one of `nranges`; for the zoned ones one of `lastb` blocks of `unit` bytes (fio's
    /// `last_block` and the direction's alignment).
    pub fn next(&mut self, dir: usize, lastb: u64, unit: u64) -> u64 {
        let rng = &mut self.rng;
        match &self.gen {
            &Gen::Zipf {
                n,
                theta,
                zetan,
                zeta2,
                rand_off,
            } => {
                let raw = zipf_raw(n, theta, zetan, zeta2, rng.next_u32());
                hash_u64(raw).wrapping_add(rand_off) % n
            }
            &Gen::Pareto { n, pow, rand_off } => {
                let raw = pareto_raw(n, pow, rng.next_u32());
                hash_u64(raw).wrapping_add(rand_off) % n
            }
            &Gen::Gauss {
                n,
                stddev,
                rand_off,
            } => {
                let raw = gauss_raw(n, stddev, || rng.next_u32());
                hash_u64(raw).wrapping_add(rand_off) % n
            }
            Gen::Zoned { abs, index } => {
                let index = &index[dir];
                if index.is_empty() {
                    // fio's `bail`: no zones for this direction, uniform.
                    return rng.gen_range(0..lastb.max(1));
                }
                // fio's `rand_between(zone_state, 1, 100)`.
                let (start, end) = index[rng.gen_range(0..index.len())];
                let (first, width) = if *abs {
                    (start / unit, end / unit - start / unit)
                } else {
                    (start * lastb / 100, lastb * (end - start) / 100)
                };
                first
                    + if width == 0 {
                        0
                    } else {
                        rng.gen_range(0..width)
                    }
            }
        }
    }

    /// Whether `zoned_abs` zones fit in `lastb` blocks of `unit` bytes for direction `dir`
    /// (fio fails the first I/O whose zone ends past them).
    pub fn zones_fit(dist: &RandomDistribution, dir: usize, lastb: u64, unit: u64) -> bool {
        match dist {
            RandomDistribution::ZonedAbs { zones } => {
                zones[dir].iter().map(|z| z.size).sum::<u64>() / unit <= lastb
            }
            _ => true,
        }
    }
}

/// fio's `zipf_next` before its hash: a value in `0..=n` (0 the hottest) from the 32-bit draw
/// `r` (Gray et al.'s method, as fio has it).
fn zipf_raw(n: u64, theta: f64, zetan: f64, zeta2: f64, r: u32) -> u64 {
    let nf = n as f64;
    let alpha = 1.0 / (1.0 - theta);
    let eta = (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let uni = f64::from(r) / f64::from(u32::MAX);
    let z = uni * zetan;
    let val = if z < 1.0 {
        1
    } else if z < 1.0 + 0.5f64.powf(theta) {
        2
    } else {
        1 + (nf * (eta * uni - eta + 1.0).powf(alpha)) as u64
    };
    val - 1
}

/// fio's `pareto_next` before its hash: `(n - 1) * u^pow`.
fn pareto_raw(n: u64, pow: f64, r: u32) -> u64 {
    let uni = f64::from(r) / f64::from(u32::MAX);
    ((n - 1) as f64 * uni.powf(pow)) as u64
}

/// fio's `gauss_next` before its hash: the mean (rounded up) of 12 draws in `0..=n`, moved by
/// `gauss_dev` (uniform in about `-stddev/2 .. stddev/2`), halved until it stays below `n`.
fn gauss_raw(n: u64, stddev: u64, mut next_u32: impl FnMut() -> u32) -> u64 {
    const ITERS: u64 = 12;
    let sum: u64 = (0..ITERS)
        .map(|_| u64::from(next_u32()) % (n + 1))
        .sum::<u64>();
    let mut sum = sum.div_ceil(ITERS);
    if stddev > 0 {
        let r = f64::from(next_u32());
        let vr = (stddev as f64 * (r / (f64::from(u32::MAX) + 1.0))) as i64;
        let mut dev = vr - (stddev / 2) as i64;
        while (dev as u64).wrapping_add(sum) >= n && dev != 0 {
            dev /= 2;
        }
        sum = sum.wrapping_add(dev as u64);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(s: &str) -> Result<u64, String> {
        crate::fio_file::parse_size(s)
    }

    fn parse(v: &str) -> Result<RandomDistribution, String> {
        RandomDistribution::parse(v, size)
    }

    /// `str_random_distribution_cb`: defaults (zipf 1.1, pareto 0.2, normal 0), `:CENTER`,
    /// and the ranges fio checks (theta 1, h outside (0, 1), dev outside [0, 100), a center
    /// outside [0, 1]).
    #[test]
    fn distributions_are_read_with_fios_defaults_and_ranges() {
        assert_eq!(parse("random"), Ok(RandomDistribution::Random));
        assert_eq!(
            parse("zipf"),
            Ok(RandomDistribution::Zipf {
                theta: 1.1,
                center: None
            })
        );
        assert_eq!(
            parse("pareto:0.9:0.25"),
            Ok(RandomDistribution::Pareto {
                h: 0.9,
                center: Some(0.25)
            })
        );
        assert_eq!(
            parse("normal:10"),
            Ok(RandomDistribution::Normal {
                dev: 10.0,
                center: None
            })
        );
        for bad in [
            "zipf:1",
            "zipf:x",
            "pareto:1",
            "pareto:0",
            "normal:100",
            "normal:-1",
            "zipf:1.2:1.5",
            "uniform",
            "sequence:1,2",
            "random:3",
            "zipf:nan",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// `zone_split_ddir`: per direction (`reads,writes`), a size left out shares what is
    /// left, access shares adding to anything but 100 refused; `zoned_abs` sizes with fio's
    /// suffixes.
    #[test]
    fn zone_lists_are_read_per_direction_with_fios_fixups() {
        let z = |access, size| Zone { access, size };
        assert_eq!(
            parse("zoned:60/10:30/30:10/60"),
            Ok(RandomDistribution::Zoned {
                zones: [
                    vec![z(60, 10), z(30, 30), z(10, 60)],
                    vec![z(60, 10), z(30, 30), z(10, 60)]
                ]
            })
        );
        assert_eq!(
            parse("zoned:50/20:50,100/"),
            Ok(RandomDistribution::Zoned {
                zones: [vec![z(50, 20), z(50, 80)], vec![z(100, 100)]]
            })
        );
        assert_eq!(
            parse("zoned_abs:90/4M:10/28M,"),
            Ok(RandomDistribution::ZonedAbs {
                zones: [vec![z(90, 4 << 20), z(10, 28 << 20)], vec![]]
            })
        );
        for bad in [
            "zoned",
            "zoned:60/10:30/30",
            "zoned:60/10:50/30",
            "zoned:50/60:50/60",
            "zoned_abs:100/4q",
            "zoned:x/10",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// fio's zipf (lib/zipf.c) with theta 1.2 over 100,000 blocks: over 200,000 draws the
    /// hottest tenth of the blocks takes at least the share zipf's law gives them
    /// (H(n/10, theta) / H(n, theta)), the hash scattering the values (the hottest block
    /// is not the first), and every block inside the range.
    #[test]
    fn zipf_puts_its_hot_tenth_above_zipfs_share() {
        let (n, theta) = (100_000u64, 1.2);
        let mut d = OffsetDraw::new(
            &RandomDistribution::Zipf {
                theta,
                center: None,
            },
            n,
            7,
        )
        .expect("non-uniform");
        let mut hits = vec![0u32; n as usize];
        let draws = 200_000;
        for _ in 0..draws {
            let b = d.next(0, n, 4096);
            hits[b as usize] += 1;
        }
        let h = |k: u64| (1..=k).map(|i| (i as f64).powf(-theta)).sum::<f64>();
        let law = h(n / 10) / h(n);
        let mut sorted = hits.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let hot: u32 = sorted[..(n / 10) as usize].iter().sum();
        let share = f64::from(hot) / f64::from(draws);
        assert!(
            share >= law - 0.01,
            "hot tenth {share:.3} < zipf's {law:.3}"
        );
        let hottest = (0..n as usize).max_by_key(|&i| hits[i]).unwrap();
        assert_ne!(hottest, 0, "the hash scatters the hottest value");
        // Without the hash the hottest values are the lowest (0 first).
        let zetan = zipf_zetan(n, theta);
        let raw0 = zipf_raw(n, theta, zetan, 1.0 + 0.5f64.powf(theta), 0);
        assert_eq!(raw0, 0);
    }

    /// Summed term by term past a million, zipf's constant is what the closed form gives.
    #[test]
    fn zipfs_constant_in_closed_form_matches_the_sum() {
        for theta in [0.8, 1.2, 2.0] {
            let n = 3_000_000u64;
            let direct: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
            let fast = zipf_zetan(n, theta);
            assert!(
                ((fast - direct) / direct).abs() < 1e-9,
                "{theta}: {fast} vs {direct}"
            );
        }
    }

    /// fio's pareto with h = 0.2 is the 80/20 rule: the hottest fifth of the blocks takes
    /// about 80% of the accesses (fio's `pareto_pow = ln h / ln (1 - h)`; with the hash
    /// merging a few values it is no less).
    #[test]
    fn pareto_0_2_puts_80_percent_in_the_hot_fifth() {
        let n = 50_000u64;
        let mut d = OffsetDraw::new(
            &RandomDistribution::Pareto {
                h: 0.2,
                center: None,
            },
            n,
            3,
        )
        .unwrap();
        let mut hits = vec![0u32; n as usize];
        let draws = 200_000;
        for _ in 0..draws {
            hits[d.next(1, n, 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let hot: u32 = hits[..(n / 5) as usize].iter().sum();
        let share = f64::from(hot) / f64::from(draws);
        assert!((0.78..0.86).contains(&share), "hot fifth took {share:.3}");
        // Before the hash the hot values are the low ones: 80% below n/5.
        let below = (0..10_000u32)
            .map(|i| pareto_raw(n, 0.2f64.ln() / 0.8f64.ln(), i.wrapping_mul(429_497)))
            .filter(|&v| v < n / 5)
            .count();
        assert!((7_800..8_200).contains(&below), "{below} of 10000");
    }

    /// fio's gauss (lib/gauss.c) before its hash: the mean of 12 uniform draws over
    /// `0..=n` (mean n/2, deviation n/12, the Irwin-Hall spread), and `normal:10` adds a
    /// uniform move of 10% of the blocks (variance (n/10)^2 / 12 more).
    #[test]
    fn normal_spreads_as_fios_mean_of_twelve() {
        let n = 120_000u64;
        let spread = |stddev: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(11);
            let v: Vec<f64> = (0..100_000)
                .map(|_| gauss_raw(n, stddev, || rng.next_u32()) as f64)
                .collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
            (mean, var.sqrt())
        };
        let nf = n as f64;
        let (mean, sd) = spread(0);
        assert!((mean - nf / 2.0).abs() < nf * 0.002, "{mean}");
        assert!((sd / (nf / 12.0) - 1.0).abs() < 0.02, "{sd}");
        let (_, sd10) = spread((nf * 0.1) as u64);
        let want = ((nf / 12.0).powi(2) + (nf / 10.0).powi(2) / 12.0).sqrt();
        assert!((sd10 / want - 1.0).abs() < 0.02, "{sd10} vs {want}");
        // Through the generator: every value in range, the same for the same seed.
        let dist = RandomDistribution::Normal {
            dev: 10.0,
            center: Some(0.5),
        };
        let draw = |seed| {
            let mut d = OffsetDraw::new(&dist, n, seed).unwrap();
            (0..1000).map(|_| d.next(0, n, 4096)).collect::<Vec<_>>()
        };
        assert!(draw(1).iter().all(|&b| b < n));
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }

    /// fio's `__get_next_rand_offset_zoned`: each zone takes its share of the accesses,
    /// uniformly over its blocks; `zoned_abs` zones in bytes over the direction's unit.
    #[test]
    fn zoned_zones_take_their_shares() {
        let dist = parse("zoned:60/10:30/30:10/60,zoned").err();
        assert!(dist.is_some(), "a zone list's entries are numbers");
        let dist = parse("zoned:60/10:30/30:10/60,100/").unwrap();
        let mut d = OffsetDraw::new(&dist, 0, 5).unwrap();
        let lastb = 10_000;
        let mut zone = [0u32; 3];
        let draws = 50_000;
        for _ in 0..draws {
            let b = d.next(0, lastb, 4096);
            assert!(b < lastb);
            zone[if b < 1_000 {
                0
            } else if b < 4_000 {
                1
            } else {
                2
            }] += 1;
        }
        for (got, want) in zone.iter().zip([0.6, 0.3, 0.1]) {
            let share = f64::from(*got) / f64::from(draws);
            assert!((share - want).abs() < 0.01, "{zone:?}");
        }
        // Writes: one zone of everything.
        let writes: Vec<u64> = (0..2000).map(|_| d.next(1, lastb, 4096)).collect();
        assert!(writes.iter().any(|&b| b >= 9_000) && writes.iter().all(|&b| b < lastb));
        let abs = parse("zoned_abs:90/4M:10/28M").unwrap();
        let mut d = OffsetDraw::new(&abs, 0, 5).unwrap();
        let first = (0..draws).filter(|_| d.next(1, 8192, 4096) < 1024).count() as f64;
        assert!((first / f64::from(draws) - 0.9).abs() < 0.01, "{first}");
        assert!(OffsetDraw::zones_fit(&abs, 0, 8192, 4096));
        assert!(!OffsetDraw::zones_fit(&abs, 0, 8191, 4096));
    }

    /// A job's distribution, blockalign and the rest of the new options go through a
    /// scenario's TOML and back.
    #[test]
    fn a_distribution_round_trips_through_toml() {
        use crate::jobs::FioJobConfig;
        for dist in [
            "zipf:1.2",
            "pareto:0.3:0.5",
            "normal:5",
            "zoned:60/10:40/90,100/",
            "zoned_abs:90/4M:10/28M",
        ] {
            let cfg = FioJobConfig {
                random_distribution: parse(dist).unwrap(),
                blockalign: [512, 0],
                percentage_random: [50, 100],
                ..Default::default()
            };
            let text = toml::to_string(&cfg).unwrap();
            let back: FioJobConfig = toml::from_str(&text).unwrap();
            assert_eq!(cfg, back, "{dist}: {text}");
        }
    }
}
