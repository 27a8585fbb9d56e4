//! io.cost's parameters: the linear cost model (`io.cost.model`), the QoS targets and vrate
//! bounds (`io.cost.qos`), the built-in parameter sets the kernel picks by device class, and
//! the parsing of the lines a user writes into `/sys/fs/cgroup/io.cost.{model,qos}`.

use std::fmt;

/// One second of device time in vtime units (2^37, the kernel's `VTIME_PER_SEC`).
pub const VTIME_PER_SEC: u64 = 1 << 37;
/// One microsecond of device time in vtime units (the kernel's `VTIME_PER_USEC`, truncated).
pub const VTIME_PER_USEC: u64 = VTIME_PER_SEC / 1_000_000;
/// One nanosecond of device time in vtime units (`VTIME_PER_NSEC`, truncated).
pub const VTIME_PER_NSEC: u64 = VTIME_PER_SEC / 1_000_000_000;
/// Parts per million.
pub const MILLION: u64 = 1_000_000;
/// The lowest vrate `io.cost.qos` accepts: 1% (`VRATE_MIN_PPM`).
pub const VRATE_MIN_PPM: u32 = 10_000;
/// The highest vrate `io.cost.qos` accepts: 10000% (`VRATE_MAX_PPM`).
pub const VRATE_MAX_PPM: u32 = 100_000_000;
/// Bytes of a cost-model page (`IOC_PAGE_SIZE`, 4 KiB).
pub const PAGE_BYTES: u64 = 4096;
/// An I/O starting further than this many pages from the group's cursor is random (16 MiB,
/// `LCOEF_RANDIO_PAGES`).
pub const RANDIO_PAGES: u64 = 4096;

/// The six coefficients a user writes into `io.cost.model` (the kernel's `i_lcoefs`): the
/// device's sequential bandwidth and its sequential and random 4 KiB IOPS, per direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    /// Sequential read bandwidth, bytes per second.
    pub rbps: u64,
    /// Sequential 4 KiB reads per second.
    pub rseqiops: u64,
    /// Random 4 KiB reads per second.
    pub rrandiops: u64,
    /// Sequential write bandwidth, bytes per second.
    pub wbps: u64,
    /// Sequential 4 KiB writes per second.
    pub wseqiops: u64,
    /// Random 4 KiB writes per second.
    pub wrandiops: u64,
}

/// The per-page and per-I/O costs derived from a [`Model`], in vtime units (`lcoefs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lcoefs {
    /// Cost of one 4 KiB page read.
    pub rpage: u64,
    /// Base cost of a sequential read.
    pub rseqio: u64,
    /// Base cost of a random read.
    pub rrandio: u64,
    /// Cost of one 4 KiB page written.
    pub wpage: u64,
    /// Base cost of a sequential write.
    pub wseqio: u64,
    /// Base cost of a random write.
    pub wrandio: u64,
}

fn div_round_up(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

/// One direction's coefficients from its bandwidth and IOPS, as the kernel's `calc_lcoefs`:
/// a page costs a second over the bandwidth in pages; an I/O's base cost is a second over its
/// IOPS less one page (not below zero). Returns (page, seqio, randio).
pub fn calc_lcoefs(bps: u64, seqiops: u64, randiops: u64) -> (u64, u64, u64) {
    let sec = u128::from(VTIME_PER_SEC);
    let mut page = 0u64;
    if bps > 0 {
        let pages = div_round_up(u128::from(bps), u128::from(PAGE_BYTES));
        page = div_round_up(sec, pages) as u64;
    }
    let base = |iops: u64| -> u64 {
        if iops == 0 {
            return 0;
        }
        let v = div_round_up(sec, u128::from(iops)) as u64;
        v.saturating_sub(page)
    };
    (page, base(seqiops), base(randiops))
}

impl Model {
    /// The derived costs.
    pub fn lcoefs(&self) -> Lcoefs {
        let (rpage, rseqio, rrandio) = calc_lcoefs(self.rbps, self.rseqiops, self.rrandiops);
        let (wpage, wseqio, wrandio) = calc_lcoefs(self.wbps, self.wseqiops, self.wrandiops);
        Lcoefs {
            rpage,
            rseqio,
            rrandio,
            wpage,
            wseqio,
            wrandio,
        }
    }

    /// The line `io.cost.model` shows for device `dev` (`MAJ:MIN`), and accepts.
    pub fn line(&self, dev: &str) -> String {
        format!(
            "{dev} ctrl=user model=linear rbps={} rseqiops={} rrandiops={} wbps={} wseqiops={} \
             wrandiops={}",
            self.rbps, self.rseqiops, self.rrandiops, self.wbps, self.wseqiops, self.wrandiops
        )
    }

    /// Parse the body of an `io.cost.model` line over `self` (the fields not named keep their
    /// values), as `ioc_cost_model_write` does: an optional leading `MAJ:MIN`, `ctrl=user|auto`,
    /// `model=linear`, and `rbps=`, `rseqiops=`, `rrandiops=`, `wbps=`, `wseqiops=`,
    /// `wrandiops=` with unsigned integers. `ctrl=auto` alone returns `Ok(None)`: the built-in
    /// model.
    pub fn parse_over(&self, line: &str) -> Result<Option<Model>, ParamError> {
        let mut m = *self;
        let mut user = None;
        for (i, tok) in tokens(line) {
            if i == 0 && is_devno(tok) {
                continue;
            }
            let (key, val) = split_kv(tok, i)?;
            let field = match key {
                "ctrl" => {
                    user = Some(match val {
                        "user" => true,
                        "auto" => false,
                        _ => return Err(ParamError::bad(i, key, val, "ctrl is user or auto")),
                    });
                    continue;
                }
                "model" => {
                    if val != "linear" {
                        return Err(ParamError::bad(i, key, val, "the only model is linear"));
                    }
                    continue;
                }
                "rbps" => &mut m.rbps,
                "rseqiops" => &mut m.rseqiops,
                "rrandiops" => &mut m.rrandiops,
                "wbps" => &mut m.wbps,
                "wseqiops" => &mut m.wseqiops,
                "wrandiops" => &mut m.wrandiops,
                _ => return Err(ParamError::unknown(i, key, MODEL_KEYS)),
            };
            *field = val.parse::<u64>().map_err(|_| {
                ParamError::bad(
                    i,
                    key,
                    val,
                    "an unsigned integer (bytes or IOPS per second)",
                )
            })?;
            user.get_or_insert(true);
        }
        Ok(if user == Some(false) { None } else { Some(m) })
    }
}

const MODEL_KEYS: &str = "ctrl, model, rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops";
const QOS_KEYS: &str = "enable, ctrl, rpct, rlat, wpct, wlat, min, max";

/// `io.cost.qos`: the completion latency targets and the vrate bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Qos {
    /// Whether the controller is on (`enable=1`).
    pub enable: bool,
    /// Reads: the percentile (in parts per million, `rpct` x 10^4) that must complete within
    /// `rlat`; 0 disables the read latency target.
    pub rppm: u32,
    /// Read latency target, microseconds.
    pub rlat: u32,
    /// Writes: as `rppm`.
    pub wppm: u32,
    /// Write latency target, microseconds.
    pub wlat: u32,
    /// Lowest vrate, parts per million (`min` x 10^4).
    pub min_ppm: u32,
    /// Highest vrate, parts per million (`max` x 10^4).
    pub max_ppm: u32,
}

impl Qos {
    /// The line `io.cost.qos` shows for device `dev`, and accepts.
    pub fn line(&self, dev: &str) -> String {
        let pct = |ppm: u32| format!("{}.{:02}", ppm / 10_000, ppm % 10_000 / 100);
        format!(
            "{dev} enable={} ctrl=user rpct={} rlat={} wpct={} wlat={} min={} max={}",
            u8::from(self.enable),
            pct(self.rppm),
            self.rlat,
            pct(self.wppm),
            self.wlat,
            pct(self.min_ppm),
            pct(self.max_ppm)
        )
    }

    /// Parse the body of an `io.cost.qos` line over `self`, as `ioc_qos_write` does: an
    /// optional leading `MAJ:MIN`, `enable=0|1`, `ctrl=user|auto`, `rpct=`/`wpct=` (percent, two
    /// decimals, 0 to 100), `rlat=`/`wlat=` (microseconds), `min=`/`max=` (percent, two decimals,
    /// clamped to 1..10000); min above max is refused. Returns the parameters and whether they
    /// are the user's (`ctrl=auto` without other fields: the built-in ones).
    pub fn parse_over(&self, line: &str) -> Result<(Qos, bool), ParamError> {
        let mut q = *self;
        let mut user = None;
        for (i, tok) in tokens(line) {
            if i == 0 && is_devno(tok) {
                continue;
            }
            let (key, val) = split_kv(tok, i)?;
            match key {
                "enable" => {
                    q.enable = match val.parse::<u64>() {
                        Ok(v) => v != 0,
                        Err(_) => return Err(ParamError::bad(i, key, val, "0 or 1")),
                    };
                    continue;
                }
                "ctrl" => {
                    user = Some(match val {
                        "user" => true,
                        "auto" => false,
                        _ => return Err(ParamError::bad(i, key, val, "ctrl is user or auto")),
                    });
                    continue;
                }
                "rpct" | "wpct" => {
                    let v = parse_centi(val)
                        .filter(|v| (0..=10_000).contains(v))
                        .ok_or_else(|| {
                            ParamError::bad(i, key, val, "a percentage from 0 to 100, two decimals")
                        })?;
                    let ppm = (v * 100) as u32;
                    if key == "rpct" {
                        q.rppm = ppm;
                    } else {
                        q.wppm = ppm;
                    }
                }
                "rlat" | "wlat" => {
                    let v = val.parse::<u32>().map_err(|_| {
                        ParamError::bad(i, key, val, "microseconds, an unsigned integer")
                    })?;
                    if key == "rlat" {
                        q.rlat = v;
                    } else {
                        q.wlat = v;
                    }
                }
                "min" | "max" => {
                    let v = parse_centi(val).filter(|v| *v >= 0).ok_or_else(|| {
                        ParamError::bad(i, key, val, "a percentage of at least 0, two decimals")
                    })?;
                    let ppm = (v.saturating_mul(100))
                        .clamp(i64::from(VRATE_MIN_PPM), i64::from(VRATE_MAX_PPM))
                        as u32;
                    if key == "min" {
                        q.min_ppm = ppm;
                    } else {
                        q.max_ppm = ppm;
                    }
                }
                _ => return Err(ParamError::unknown(i, key, QOS_KEYS)),
            }
            user.get_or_insert(true);
        }
        if q.min_ppm > q.max_ppm {
            return Err(ParamError {
                token: 0,
                field: "min".into(),
                reason: format!(
                    "min {}% is above max {}%",
                    f64::from(q.min_ppm) / 1e4,
                    f64::from(q.max_ppm) / 1e4
                ),
            });
        }
        Ok((q, user.unwrap_or(false)))
    }
}

/// The kernel's built-in parameter sets (`autop[]`), chosen by device class in
/// `ioc_autop_idx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Autop {
    /// A rotational disk.
    Hdd,
    /// An SSD with a queue depth of 1 (SATA with broken NCQ).
    SsdQd1,
    /// Any other SSD, to start with.
    SsdDfl,
    /// A fast SSD: chosen after vrate stays at or above 500% for 10 s on `SsdDfl`.
    SsdFast,
}

impl Autop {
    /// The class the kernel starts a device in: rotational -> `Hdd`; depth 1 -> `SsdQd1`;
    /// else `SsdDfl`.
    pub fn for_device(rotational: bool, queue_depth: usize) -> Autop {
        if rotational {
            Autop::Hdd
        } else if queue_depth == 1 {
            Autop::SsdQd1
        } else {
            Autop::SsdDfl
        }
    }

    /// Its cost model.
    pub fn model(self) -> Model {
        let m = |rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops| Model {
            rbps,
            rseqiops,
            rrandiops,
            wbps,
            wseqiops,
            wrandiops,
        };
        match self {
            Autop::Hdd => m(174_019_176, 41_708, 370, 178_075_866, 42_705, 378),
            Autop::SsdQd1 => m(245_855_193, 61_575, 6_946, 141_365_009, 33_716, 26_796),
            Autop::SsdDfl => m(488_636_629, 8_932, 8_518, 427_891_549, 28_755, 21_940),
            Autop::SsdFast => m(
                3_102_524_156,
                724_816,
                778_122,
                1_742_780_862,
                425_702,
                443_193,
            ),
        }
    }

    /// Its QoS: no percentile targets (rpct = wpct = 0), latencies of 250 ms (HDD), 25 ms
    /// (SSD) or 5 ms (fast SSD), vrate from 1% to 10000%.
    pub fn qos(self) -> Qos {
        let lat = match self {
            Autop::Hdd => 250_000,
            Autop::SsdQd1 | Autop::SsdDfl => 25_000,
            Autop::SsdFast => 5_000,
        };
        Qos {
            enable: true,
            rppm: 0,
            rlat: lat,
            wppm: 0,
            wlat: lat,
            min_ppm: VRATE_MIN_PPM,
            max_ppm: VRATE_MAX_PPM,
        }
    }

    /// vrate (percent) at or above which the next faster set is tried (`too_fast_vrate_pct`).
    pub fn too_fast_vrate_pct(self) -> Option<u64> {
        (self == Autop::SsdDfl).then_some(500)
    }

    /// vrate (percent) at or below which the slower set is tried (`too_slow_vrate_pct`).
    pub fn too_slow_vrate_pct(self) -> Option<u64> {
        (self == Autop::SsdFast).then_some(10)
    }
}

/// A line of `io.cost.model` or `io.cost.qos` could not be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// Which whitespace-separated token (0-based) is wrong.
    pub token: usize,
    /// The field (`rbps`, `rlat`, ...), or the token itself when it is not `key=value`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl ParamError {
    fn bad(token: usize, key: &str, val: &str, want: &str) -> ParamError {
        ParamError {
            token,
            field: key.into(),
            reason: format!("{val:?}: want {want}"),
        }
    }
    fn unknown(token: usize, key: &str, keys: &str) -> ParamError {
        ParamError {
            token,
            field: key.into(),
            reason: format!("unknown field (known: {keys})"),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "token {}, field {}: {}",
            self.token + 1,
            self.field,
            self.reason
        )
    }
}

impl std::error::Error for ParamError {}

fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    line.split_whitespace().enumerate()
}

fn is_devno(tok: &str) -> bool {
    tok.split_once(':').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

fn split_kv(tok: &str, i: usize) -> Result<(&str, &str), ParamError> {
    tok.split_once('=').ok_or_else(|| ParamError {
        token: i,
        field: tok.chars().take(40).collect(),
        reason: "not key=value".into(),
    })
}

/// A decimal with at most two fractional digits, in hundredths (`cgroup_parse_float(.., 2)`).
fn parse_centi(s: &str) -> Option<i64> {
    let (int, frac) = match s.split_once('.') {
        Some((a, b)) => (a, b),
        None => (s, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let neg = int.starts_with('-');
    let digits = int.trim_start_matches('-');
    if !digits.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 2 || digits.len() > 12 {
        return None;
    }
    let whole: i64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let mut f: i64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    if frac.len() == 1 {
        f *= 10;
    }
    let v = whole * 100 + f;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `calc_lcoefs`: a page costs 1 s over the bandwidth in pages, an I/O a second over its
    /// IOPS less a page. The HDD set: 174 MB/s is 42486 pages/s (rounded up), so a page is 2^37/42485 vtime
    /// (23.5 us); a random read costs 1/370 s less a page.
    #[test]
    fn calc_lcoefs_follows_the_kernel_on_the_hdd_set() {
        let c = Autop::Hdd.model().lcoefs();
        let pages = 174_019_176u64.div_ceil(4096);
        assert_eq!(pages, 42_486);
        assert_eq!(c.rpage, VTIME_PER_SEC.div_ceil(pages));
        assert_eq!(c.rrandio, VTIME_PER_SEC.div_ceil(370) - c.rpage);
        assert_eq!(c.rseqio, VTIME_PER_SEC.div_ceil(41_708) - c.rpage);
        // An IOPS figure cheaper than a page gives a base cost of 0, not a wrap.
        let (page, seq, rand) = calc_lcoefs(4096, 2, 1);
        assert_eq!((page, seq, rand), (VTIME_PER_SEC, 0, 0));
        assert_eq!(calc_lcoefs(0, 0, 0), (0, 0, 0));
    }

    #[test]
    fn model_lines_round_trip_and_name_the_bad_field() {
        let m = Autop::SsdDfl.model();
        let line = m.line("7:0");
        assert_eq!(Autop::Hdd.model().parse_over(&line).unwrap(), Some(m));
        let e = m.parse_over("7:0 rbps=12 wrandiops=fast").unwrap_err();
        assert_eq!((e.token, e.field.as_str()), (2, "wrandiops"));
        let e = m.parse_over("rbps=1 speed=3").unwrap_err();
        assert!(
            e.to_string().contains("speed") && e.to_string().contains("known"),
            "{e}"
        );
        assert_eq!(m.parse_over("8:16 ctrl=auto").unwrap(), None);
        let e = m.parse_over("model=quadratic").unwrap_err();
        assert_eq!(e.field, "model");
    }

    #[test]
    fn qos_lines_round_trip_clamp_and_refuse_min_above_max() {
        let q = Qos {
            enable: true,
            rppm: 950_000,
            rlat: 5000,
            wppm: 950_000,
            wlat: 10_000,
            min_ppm: 500_000,
            max_ppm: 1_250_000,
        };
        let line = q.line("259:0");
        assert!(
            line.contains("rpct=95.00") && line.contains("max=125.00"),
            "{line}"
        );
        assert_eq!(Autop::SsdDfl.qos().parse_over(&line).unwrap(), (q, true));
        // min/max clamp to 1%..10000% as ioc_qos_write does.
        let (c, _) = q.parse_over("min=0.5 max=20000").unwrap();
        assert_eq!((c.min_ppm, c.max_ppm), (VRATE_MIN_PPM, VRATE_MAX_PPM));
        let e = q.parse_over("min=90 max=80").unwrap_err();
        assert_eq!(e.field, "min");
        let e = q.parse_over("rpct=101").unwrap_err();
        assert_eq!((e.token, e.field.as_str()), (0, "rpct"));
        let e = q.parse_over("rpct=9.999").unwrap_err();
        assert_eq!(e.field, "rpct");
        // cgroup_parse_float: one decimal is tenths, two are hundredths.
        let (c, _) = q.parse_over("rpct=95.5 wpct=95.05 min=.5 max=1.5").unwrap();
        assert_eq!((c.rppm, c.wppm), (955_000, 950_500));
        assert_eq!((c.min_ppm, c.max_ppm), (VRATE_MIN_PPM, 15_000));
        let e = q.parse_over("rlat").unwrap_err();
        assert!(e.to_string().contains("key=value"), "{e}");
    }
}
