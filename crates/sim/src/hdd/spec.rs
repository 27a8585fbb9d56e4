//! Drive specifications: the TOML format, its loader and its checks.
//!
//! A spec is data only; [`Hdd::new`](super::Hdd::new) turns it into lookup tables. Every time is
//! in milliseconds, every angle or skew in sectors of the zone it belongs to, every size in
//! 512-byte sectors. The format mirrors the parameters of DiskSim 4.0 (`dm_layout_g1`,
//! `dm_mech_g1`, `disksim_disk`) under plain names; docs/disk-model.md documents each field.

use serde::{Deserialize, Serialize};
use std::path::Path;

use elevator_workload::InputError;

use crate::spec_file::{fault, placed, toml_error, BuiltinSpec};

/// Slowest spindle accepted, rpm.
pub const MIN_RPM: f64 = 60.0;
/// Fastest spindle accepted, rpm.
pub const MAX_RPM: f64 = 100_000.0;
/// Longest time any one field may give, ms (an hour).
pub const MAX_TIME_MS: f64 = 3_600_000.0;
/// Most cache segments accepted (drives have 1 to a few dozen).
pub const MAX_SEGMENTS: u32 = 1024;
/// Largest cache segment accepted, sectors (1 GiB).
pub const MAX_SEGMENT_SECTORS: u32 = 1 << 21;

/// A complete rotational drive description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriveSpec {
    /// Short name used on the command line (`cheetah9lp`).
    pub name: String,
    /// Free text: model, source of the figures.
    #[serde(default)]
    pub description: String,
    /// Spindle speed in revolutions per minute.
    pub rpm: f64,
    /// Number of recording surfaces (heads).
    pub surfaces: u32,
    /// Number of cylinders.
    pub cylinders: u32,
    /// Zones, sparing and the LBN-to-physical mapping.
    pub layout: Layout,
    /// Seek curve, head switch and write settle.
    pub seek: Seek,
    /// Controller overheads.
    #[serde(default)]
    pub overheads: Overheads,
    /// Interface (bus) transfer.
    #[serde(default)]
    pub bus: Bus,
    /// The on-board cache.
    #[serde(default)]
    pub cache: Cache,
}

/// How logical blocks are laid onto tracks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Track order within a cylinder.
    #[serde(default)]
    pub mapping: Mapping,
    /// Where spare sectors live and how slips move data.
    #[serde(default)]
    pub sparing: Sparing,
    /// Cylinders per sparing range (only for `sparing = "range"`).
    #[serde(default = "one")]
    pub range_size: u32,
    /// The zones (bands), in cylinder order.
    pub zones: Vec<Zone>,
}

fn one() -> u32 {
    1
}

/// Track order within a cylinder (DiskSim's "LBN-to-PBN mapping scheme").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mapping {
    /// Surfaces 0..n on every cylinder (scheme 0).
    #[default]
    Normal,
    /// Surfaces reversed on odd cylinders counted from the zone's first (scheme 1).
    SerpentineZone,
    /// Surfaces reversed on odd cylinders counted from cylinder 0 (scheme 2).
    Serpentine,
}

/// Sparing scheme (DiskSim's "Sparing scheme used", 0..10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sparing {
    /// No spares (0).
    #[default]
    None,
    /// `spares` whole tracks at the end of each zone; slips and defects name tracks (1).
    Tracks,
    /// `spares` sectors at the end of every track (3).
    PerTrack,
    /// `spares` sectors at the end of every cylinder; a slip uses one of them (2).
    PerCylinder,
    /// As per-cylinder, but a slip pushes every later block of the zone (4).
    PerCylinderSlipToEnd,
    /// `spares` sectors at the front of every cylinder (5).
    PerCylinderAtFront,
    /// At the front of every cylinder, slips push to the end (6).
    PerCylinderAtFrontSlipToEnd,
    /// Spares at the end of the zone's space; every slip pushes later blocks (7).
    AtEnd,
    /// `spares` sectors at the end of every `range_size` cylinders (8).
    Range,
    /// `spares` sectors at the end of the zone; slips use them (9).
    Zone,
    /// `spares` sectors at the end of the zone; slips push data and shrink the zone (10).
    ZoneSlipToEnd,
}

/// One zone (band) of cylinders with the same number of sectors per track.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zone {
    /// First cylinder of the zone.
    pub first_cyl: u32,
    /// Last cylinder of the zone (inclusive).
    pub last_cyl: u32,
    /// Physical sectors on each track.
    pub sectors_per_track: u32,
    /// Angular offset of the zone's first block, in sectors.
    #[serde(default)]
    pub first_block_offset: u32,
    /// Physical sectors left unused at the zone's front.
    #[serde(default)]
    pub front_gap: u32,
    /// Skew between consecutive tracks of a cylinder, in sectors.
    #[serde(default)]
    pub track_skew: u32,
    /// Extra skew at a cylinder switch, in sectors.
    #[serde(default)]
    pub cyl_skew: u32,
    /// Spare sectors (or tracks) per sparing unit, see [`Sparing`].
    #[serde(default)]
    pub spares: u32,
    /// Slipped sectors (tracks for `tracks` sparing), numbered from the zone's first physical
    /// sector in mapping order.
    #[serde(default)]
    pub slips: Vec<u64>,
    /// Remapped defects as `[defective, spare]` pairs, numbered like `slips`.
    #[serde(default)]
    pub defects: Vec<[u64; 2]>,
}

/// The seek model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seek {
    /// The curve.
    pub curve: SeekCurveSpec,
    /// Time to switch heads within a cylinder, ms.
    #[serde(default)]
    pub head_switch_ms: f64,
    /// Added to every write that moves the arm or switches heads, ms (may be negative).
    #[serde(default)]
    pub write_settle_ms: f64,
}

/// A seek curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SeekCurveSpec {
    /// Every non-zero seek takes the same time.
    Constant {
        /// The seek time, ms.
        ms: f64,
    },
    /// A measured table of `[distance, ms]`, linearly interpolated (and extrapolated past the
    /// last point from the last two).
    Extracted {
        /// `[cylinders, ms]` points in increasing distance; the first must be distance 1.
        points: Vec<[f64; 2]>,
    },
    /// Ruemmler and Wilkes: `a + b*sqrt(d)` below `boundary` cylinders, `c + e*d` from there;
    /// `single_cylinder_ms` for a one-cylinder seek when given.
    Hpl {
        /// Distance (cylinders) where the curve turns linear (DiskSim V1).
        boundary: f64,
        /// Constant of the square-root part (V2), ms.
        sqrt_base_ms: f64,
        /// Factor of the square root (V3), ms.
        sqrt_factor_ms: f64,
        /// Constant of the linear part (V4), ms.
        linear_base_ms: f64,
        /// Per-cylinder factor of the linear part (V5), ms.
        linear_factor_ms: f64,
        /// One-cylinder seek time (V6), ms; absent means use the formula.
        #[serde(default)]
        single_cylinder_ms: Option<f64>,
    },
    /// Ruemmler and Wilkes with a measured table for distances 1..=10.
    HplFirstTen {
        /// Distance (cylinders) where the curve turns linear (V1).
        boundary: f64,
        /// Constant of the square-root part (V2), ms.
        sqrt_base_ms: f64,
        /// Factor of the square root (V3), ms.
        sqrt_factor_ms: f64,
        /// Constant of the linear part (V4), ms.
        linear_base_ms: f64,
        /// Per-cylinder factor of the linear part (V5), ms.
        linear_factor_ms: f64,
        /// Seek times for distances 1 to 10, ms.
        first_ten_ms: [f64; 10],
    },
}

/// Command processing overheads, ms. "after read"/"after write" name the previous command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Overheads {
    /// Read served from the cache, previous command a read.
    pub read_hit_after_read: f64,
    /// Read served from the cache, previous command a write.
    pub read_hit_after_write: f64,
    /// Read that goes to the media, previous command a read.
    pub read_miss_after_read: f64,
    /// Read that goes to the media, previous command a write.
    pub read_miss_after_write: f64,
    /// Write absorbed by the cache, previous command a read.
    pub write_hit_after_read: f64,
    /// Write absorbed by the cache, previous command a write.
    pub write_hit_after_write: f64,
    /// Write that waits for the media, previous command a read.
    pub write_miss_after_read: f64,
    /// Write that waits for the media, previous command a write.
    pub write_miss_after_write: f64,
    /// Status phase after a read, ms.
    pub read_completion: f64,
    /// Status phase after a write, ms.
    pub write_completion: f64,
    /// Preparing data before a reconnect, ms.
    pub data_preparation: f64,
    /// Reconnecting to the bus the first time, ms.
    pub first_reselect: f64,
    /// Reconnecting later, ms.
    pub other_reselect: f64,
    /// Disconnecting after a read command when the previous was a read, ms.
    pub read_disconnect_after_read: f64,
    /// Disconnecting after a read command when the previous was a write, ms.
    pub read_disconnect_after_write: f64,
    /// Disconnecting after a write's data, ms.
    pub write_disconnect: f64,
    /// Lower bound on positioning of any media access, ms.
    pub minimum_seek: f64,
}

/// The host interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bus {
    /// Time to move one sector from the drive's buffer to the host, ms.
    pub read_sector_ms: f64,
    /// Time to move one sector from the host into the drive's buffer, ms.
    pub write_sector_ms: f64,
    /// Fraction of a read (or of a segment) that must be in the buffer before the drive
    /// reconnects to send it (DiskSim's "High (read) water mark"); at least one sector.
    pub read_high_water: f64,
    /// Whether `read_high_water` is a fraction of the request (true) or of the segment.
    pub watermark_by_request: bool,
    /// DiskSim's "Extra write disconnect" controllers: a write-through write starts on the
    /// media only once `min(n, 10)` of its `n` sectors are in the buffer (15 when `n >= 45`),
    /// so a sequential write that finds its first sector under the head still loses a
    /// revolution.
    pub extra_write_disconnect: bool,
}

/// Read-ahead mode (DiskSim's "Buffer continuous read").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadAhead {
    /// No read-ahead beyond the minimum (0).
    None,
    /// To the end of the track (1).
    Track,
    /// To the end of the cylinder (2).
    Cylinder,
    /// Until the segment is full (3).
    #[default]
    FillSegment,
    /// Until the segment is full, the drive staying ahead of a sequential reader (4).
    Continuous,
}

/// When writes complete before reaching the media (DiskSim's "Fast write level").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    /// Every write waits for the media (0).
    #[default]
    WriteThrough,
    /// Limited write-back (1): a write completes from the buffer unless an earlier write is
    /// still going to the media, in which case it waits like write-through.
    WriteBackSequential,
    /// Every write completes once in the buffer; the media write follows (2).
    WriteBack,
}

/// When a write-back cache writes its dirty data to the media.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destage {
    /// DiskSim's model: each write goes to the media as soon as it is in the buffer and the
    /// mechanism is free, and every later command that needs the mechanism waits for all of
    /// it.
    #[default]
    BeforeNextCommand,
    /// Reads first: dirty segments are written in the background, oldest first, one whole
    /// segment at a time; a read that misses waits only for the segment being written. A write
    /// completes once in the buffer while fewer than `segments - 1` segments (the dedicated
    /// write segment, if any; `cache.write_segments` if fewer) hold data waiting for the media
    /// or being written; otherwise it waits for the next one to be written.
    ReadPriority,
}

/// The on-board cache.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cache {
    /// Whether reads are served from the buffer at all.
    pub enabled: bool,
    /// Number of segments.
    pub segments: u32,
    /// Sectors per segment.
    pub segment_sectors: u32,
    /// Whether one segment is reserved for writes.
    pub separate_write_segment: bool,
    /// DiskSim's "Maximum number of write segments": under `before-next-command` write-back,
    /// how many segments may hold written data not yet on the media at once (each holds one
    /// run of consecutive writes, at most `segment_sectors` of it ahead of the media); absent,
    /// every segment may (one, with a separate write segment). Under `read-priority` it
    /// bounds the dirty segments too, which are at most every segment but one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_segments: Option<u32>,
    /// Read-ahead mode.
    pub read_ahead: ReadAhead,
    /// Read-ahead the drive always does after a miss, sectors.
    pub min_read_ahead: u32,
    /// Cap on read-ahead, sectors.
    pub max_read_ahead: u32,
    /// Whether prefetched data may replace the request's own in the segment (DiskSim's
    /// "Read-ahead over requested" = 1). Without a `max_read_ahead`, read-ahead then fills a
    /// whole segment after the request's end; otherwise it stops once the segment, counted
    /// from the request's start, is full.
    pub read_ahead_over_requested: bool,
    /// Whether a read hit restarts read-ahead.
    pub read_ahead_on_idle_hit: bool,
    /// Whether reads may hit data left by writes.
    pub read_hits_on_write_data: bool,
    /// DiskSim's "Allow almost read hits": a read whose first block is the one the read-ahead
    /// in progress is about to bring in is a partial hit (served from the read-ahead) rather
    /// than a miss that stops it. Without it, a process reading sequentially with no gap
    /// between a completion and its next request loses a revolution per request.
    pub almost_read_hits: bool,
    /// Whether the sectors of the target track that pass under the head before a missed
    /// read's first sector are kept in its segment (DiskSim's "Read any free blocks").
    pub read_any_free_blocks: bool,
    /// Write caching.
    pub write_policy: WritePolicy,
    /// When a write-back cache destages (only with `write_policy = "write-back"`).
    pub destage: Destage,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            enabled: true,
            segments: 1,
            segment_sectors: 256,
            separate_write_segment: false,
            write_segments: None,
            read_ahead: ReadAhead::FillSegment,
            min_read_ahead: 0,
            max_read_ahead: 256,
            read_ahead_over_requested: true,
            read_ahead_on_idle_hit: false,
            read_hits_on_write_data: true,
            almost_read_hits: false,
            read_any_free_blocks: false,
            write_policy: WritePolicy::WriteThrough,
            destage: Destage::BeforeNextCommand,
        }
    }
}

const BUILTINS: &[(&str, &str)] = &[
    ("laptop-4200", include_str!("../../drives/laptop-4200.toml")),
    ("cheetah9lp", include_str!("../../drives/cheetah9lp.toml")),
    ("atlas10k", include_str!("../../drives/atlas10k.toml")),
    ("ibm18es", include_str!("../../drives/ibm18es.toml")),
    ("hp_c2247a", include_str!("../../drives/hp_c2247a.toml")),
    ("hp_c2490a", include_str!("../../drives/hp_c2490a.toml")),
];

impl BuiltinSpec for DriveSpec {
    const WHAT: &'static str = "drive";
    const FILES: &'static [(&'static str, &'static str)] = BUILTINS;
    fn parse(text: &str, path: &Path) -> Result<DriveSpec, InputError> {
        DriveSpec::parse(text, path)
    }
}

impl DriveSpec {
    /// Names of the built-in drives.
    pub fn builtin_names() -> Vec<&'static str> {
        <DriveSpec as BuiltinSpec>::builtin_names()
    }

    /// A built-in drive by name (case-insensitive).
    pub fn builtin(name: &str) -> Option<DriveSpec> {
        <DriveSpec as BuiltinSpec>::builtin(name)
    }

    /// A built-in name or, failing that, a TOML file path.
    pub fn resolve(name_or_path: &str) -> Result<DriveSpec, InputError> {
        <DriveSpec as BuiltinSpec>::resolve(name_or_path)
    }

    /// Reads and checks a TOML drive spec.
    pub fn load(path: impl AsRef<Path>) -> Result<DriveSpec, InputError> {
        <DriveSpec as BuiltinSpec>::load(path.as_ref())
    }

    /// Parses and checks TOML text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<DriveSpec, InputError> {
        let spec: DriveSpec = toml::from_str(text).map_err(|e| toml_error(&e, text, path))?;
        spec.check().map_err(|e| placed(e, text, path))?;
        Ok(spec)
    }

    /// Writes the spec as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Every time of the spec in ms, with its field path (the seek curve's, the overheads,
    /// head switch, settle and bus times).
    fn times_ms(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = Vec::new();
        let o = &self.overheads;
        for (n, x) in [
            ("read_hit_after_read", o.read_hit_after_read),
            ("read_hit_after_write", o.read_hit_after_write),
            ("read_miss_after_read", o.read_miss_after_read),
            ("read_miss_after_write", o.read_miss_after_write),
            ("write_hit_after_read", o.write_hit_after_read),
            ("write_hit_after_write", o.write_hit_after_write),
            ("write_miss_after_read", o.write_miss_after_read),
            ("write_miss_after_write", o.write_miss_after_write),
            ("read_completion", o.read_completion),
            ("write_completion", o.write_completion),
            ("data_preparation", o.data_preparation),
            ("first_reselect", o.first_reselect),
            ("other_reselect", o.other_reselect),
            ("read_disconnect_after_read", o.read_disconnect_after_read),
            ("read_disconnect_after_write", o.read_disconnect_after_write),
            ("write_disconnect", o.write_disconnect),
            ("minimum_seek", o.minimum_seek),
        ] {
            v.push((format!("overheads.{n}"), x));
        }
        v.push(("seek.head_switch_ms".into(), self.seek.head_switch_ms));
        v.push(("seek.write_settle_ms".into(), self.seek.write_settle_ms));
        v.push(("bus.read_sector_ms".into(), self.bus.read_sector_ms));
        v.push(("bus.write_sector_ms".into(), self.bus.write_sector_ms));
        match &self.seek.curve {
            SeekCurveSpec::Constant { ms } => v.push(("seek.curve.ms".into(), *ms)),
            SeekCurveSpec::Extracted { points } => {
                for p in points {
                    v.push(("seek.curve.points".into(), p[1]));
                }
            }
            SeekCurveSpec::Hpl {
                sqrt_base_ms,
                sqrt_factor_ms,
                linear_base_ms,
                linear_factor_ms,
                single_cylinder_ms,
                ..
            } => {
                v.push(("seek.curve.sqrt_base_ms".into(), *sqrt_base_ms));
                v.push(("seek.curve.sqrt_factor_ms".into(), *sqrt_factor_ms));
                v.push(("seek.curve.linear_base_ms".into(), *linear_base_ms));
                v.push(("seek.curve.linear_factor_ms".into(), *linear_factor_ms));
                if let Some(x) = single_cylinder_ms {
                    v.push(("seek.curve.single_cylinder_ms".into(), *x));
                }
            }
            SeekCurveSpec::HplFirstTen {
                sqrt_base_ms,
                sqrt_factor_ms,
                linear_base_ms,
                linear_factor_ms,
                first_ten_ms,
                ..
            } => {
                v.push(("seek.curve.sqrt_base_ms".into(), *sqrt_base_ms));
                v.push(("seek.curve.sqrt_factor_ms".into(), *sqrt_factor_ms));
                v.push(("seek.curve.linear_base_ms".into(), *linear_base_ms));
                v.push(("seek.curve.linear_factor_ms".into(), *linear_factor_ms));
                for x in first_ten_ms {
                    v.push(("seek.curve.first_ten_ms".into(), *x));
                }
            }
        }
        v
    }

    /// Semantic checks; the error names the field path (`layout.zones[3].first_cyl`) and the
    /// drive (`drive NAME`), not yet its file ([`DriveSpec::parse`] places it there).
    pub fn check(&self) -> Result<(), InputError> {
        let bad = |f: &str, m: String| Err(fault("drive", &self.name, f, m));
        if !(MIN_RPM..=MAX_RPM).contains(&self.rpm) {
            return bad(
                "rpm",
                format!("must be {MIN_RPM}..={MAX_RPM}, got {}", self.rpm),
            );
        }
        // Every time in the spec: finite, and within what a drive could take.
        for (field, ms) in self.times_ms() {
            let ok = if field == "seek.write_settle_ms" {
                ms.is_finite() && ms.abs() <= MAX_TIME_MS
            } else {
                ms.is_finite() && (0.0..=MAX_TIME_MS).contains(&ms)
            };
            if !ok {
                return bad(
                    &field,
                    format!("must be a time of 0..={MAX_TIME_MS} ms, got {ms}"),
                );
            }
        }
        let hw = self.bus.read_high_water;
        if !(hw.is_finite() && (0.0..=1.0).contains(&hw)) {
            return bad(
                "bus.read_high_water",
                format!("must be a fraction in 0..=1, got {hw}"),
            );
        }
        if self.cache.segments > MAX_SEGMENTS {
            return bad(
                "cache.segments",
                format!(
                    "must be at most {MAX_SEGMENTS}, got {}",
                    self.cache.segments
                ),
            );
        }
        if self.cache.segment_sectors > MAX_SEGMENT_SECTORS {
            return bad(
                "cache.segment_sectors",
                format!(
                    "must be at most {MAX_SEGMENT_SECTORS} (1 GiB), got {}",
                    self.cache.segment_sectors
                ),
            );
        }
        if self.surfaces == 0 || self.surfaces > 255 {
            return bad(
                "surfaces",
                format!("must be 1..=255, got {}", self.surfaces),
            );
        }
        if self.cylinders == 0 {
            return bad("cylinders", "must be > 0".into());
        }
        let zones = &self.layout.zones;
        if zones.is_empty() {
            return bad("layout.zones", "at least one zone is needed".into());
        }
        if self.layout.range_size == 0 {
            return bad("layout.range_size", "must be > 0".into());
        }
        let mut prev_last: Option<u32> = None;
        for (i, z) in zones.iter().enumerate() {
            let f = |n: &str| format!("layout.zones[{i}].{n}");
            if z.last_cyl < z.first_cyl {
                return bad(
                    &f("last_cyl"),
                    format!("{} is below first_cyl {}", z.last_cyl, z.first_cyl),
                );
            }
            if z.last_cyl >= self.cylinders {
                return bad(
                    &f("last_cyl"),
                    format!(
                        "{} is past the last cylinder {}",
                        z.last_cyl,
                        self.cylinders - 1
                    ),
                );
            }
            if let Some(p) = prev_last {
                if z.first_cyl <= p {
                    return bad(
                        &f("first_cyl"),
                        format!("zone overlaps the previous one, which ends at cylinder {p}"),
                    );
                }
            }
            prev_last = Some(z.last_cyl);
            if z.sectors_per_track == 0 || z.sectors_per_track > 65535 {
                return bad(&f("sectors_per_track"), "must be 1..=65535".into());
            }
            let tracks = u64::from(z.last_cyl - z.first_cyl + 1) * u64::from(self.surfaces);
            let slots = tracks * u64::from(z.sectors_per_track);
            let unit_max = if self.layout.sparing == Sparing::Tracks {
                tracks
            } else {
                slots
            };
            if let Some(s) = z.slips.iter().find(|&&s| s >= unit_max) {
                return bad(
                    &f("slips"),
                    format!("slip {s} is outside the zone ({unit_max})"),
                );
            }
            if z.slips.windows(2).any(|w| w[0] >= w[1]) {
                return bad(&f("slips"), "must be strictly increasing".into());
            }
            if let Some(d) = z
                .defects
                .iter()
                .find(|d| d[0] >= unit_max || d[1] >= unit_max)
            {
                return bad(&f("defects"), format!("defect {d:?} is outside the zone"));
            }
            if u64::from(z.front_gap) >= slots {
                return bad(&f("front_gap"), "is larger than the zone".into());
            }
        }
        match &self.seek.curve {
            SeekCurveSpec::Constant { ms } if !(ms.is_finite() && *ms >= 0.0) => {
                return bad("seek.curve.ms", "must be >= 0".into());
            }
            SeekCurveSpec::Extracted { points } => {
                if points.is_empty() {
                    return bad("seek.curve.points", "needs at least one point".into());
                }
                if points.iter().any(|p| !p[0].is_finite()) {
                    return bad(
                        "seek.curve.points",
                        "distances must be finite numbers".into(),
                    );
                }
                if points.windows(2).any(|w| w[0][0] >= w[1][0]) {
                    return bad(
                        "seek.curve.points",
                        "distances must be strictly increasing".into(),
                    );
                }
                let last = points[points.len() - 1][0];
                if !(last.is_finite() && last <= f64::from(self.cylinders)) {
                    return bad(
                        "seek.curve.points",
                        format!(
                            "distance {last} is beyond the drive's {} cylinders",
                            self.cylinders
                        ),
                    );
                }
                if points[0][0] < 1.0 {
                    return bad(
                        "seek.curve.points",
                        "the first distance must be >= 1".into(),
                    );
                }
                if points.iter().any(|p| !p[1].is_finite() || p[1] < 0.0) {
                    return bad("seek.curve.points", "times must be >= 0".into());
                }
            }
            SeekCurveSpec::Hpl { boundary, .. } | SeekCurveSpec::HplFirstTen { boundary, .. }
                if !(boundary.is_finite() && *boundary >= 0.0) =>
            {
                return bad("seek.curve.boundary", "must be >= 0".into());
            }
            _ => {}
        }
        if !(self.seek.head_switch_ms.is_finite() && self.seek.head_switch_ms >= 0.0) {
            return bad("seek.head_switch_ms", "must be >= 0".into());
        }
        if !(self.bus.read_sector_ms.is_finite() && self.bus.read_sector_ms >= 0.0) {
            return bad("bus.read_sector_ms", "must be >= 0".into());
        }
        if !(self.bus.write_sector_ms.is_finite() && self.bus.write_sector_ms >= 0.0) {
            return bad("bus.write_sector_ms", "must be >= 0".into());
        }
        let c = &self.cache;
        if c.enabled && (c.segments == 0 || c.segment_sectors == 0) {
            return bad(
                "cache.segments",
                "an enabled cache needs segments of > 0 sectors".into(),
            );
        }
        if let Some(w) = c.write_segments {
            if w == 0 || w > c.segments.max(1) {
                return bad(
                    "cache.write_segments",
                    format!("must be 1..={} (the segments), got {w}", c.segments.max(1)),
                );
            }
        }
        if c.destage == Destage::ReadPriority {
            if !c.enabled || (c.segments < 2 && !c.separate_write_segment) {
                return bad(
                    "cache.destage",
                    "read-priority needs an enabled cache of at least 2 segments (one stays \
                     free for reads)"
                        .into(),
                );
            }
            if !c.read_hits_on_write_data {
                return bad(
                    "cache.destage",
                    "read-priority needs read_hits_on_write_data = true (reads of data still \
                     waiting for the media are served from the buffer)"
                        .into(),
                );
            }
        }
        Ok(())
    }
}
