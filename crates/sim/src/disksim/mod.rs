//! Import of DiskSim 4.0 drive models.
//!
//! [`import`] reads a `.parv` file and what it includes (`.diskspecs`, `.model`, extracted
//! `.seek` curves; relative names resolve next to the `.parv`, as DiskSim's `valid/` runs do)
//! and produces a [`DriveSpec`]. It understands the `dm_disk` model with the `dm_layout_g1`
//! layout (all eleven sparing schemes, the three mapping schemes, slips and defects, skews in
//! sectors or revolutions) and the `dm_mech_g1` mechanics (seek types constant, linear, curve,
//! hpl, hplplus10 and extracted), and the `disksim_disk` controller and cache parameters.

pub mod parser;

use crate::hdd::spec::{
    Bus, Cache, Destage, DriveSpec, Layout, Mapping, Overheads, ReadAhead, Seek, SeekCurveSpec,
    Sparing, WritePolicy, Zone,
};
use elevator_workload::InputError;
use parser::{Block, Value};
use std::path::Path;

/// Imports the drive a DiskSim `.parv` file describes.
pub fn import(parv: impl AsRef<Path>) -> Result<DriveSpec, InputError> {
    let parv = parv.as_ref();
    let dir = parv.parent().unwrap_or(Path::new(".")).to_path_buf();
    let file = parser::parse_file(parv)?;
    let disks: Vec<&Block> = file
        .blocks
        .iter()
        .filter(|b| b.kind == "disksim_disk")
        .collect();
    let instantiated = |b: &&&Block| {
        b.name
            .as_ref()
            .is_some_and(|n| file.instances.iter().any(|(_, t)| t == n))
    };
    let disk = disks
        .iter()
        .find(instantiated)
        .or(disks.first())
        .ok_or_else(|| {
            InputError::new(parv, "no disksim_disk block found").in_field("disksim_disk")
        })?;
    let model = disk.block("Model")?;
    if model.kind != "dm_disk" {
        return Err(InputError::at_line(
            &model.file,
            model.line,
            "Model",
            format!("unsupported model type `{}` (only dm_disk)", model.kind),
        ));
    }
    let surfaces = model.u32("Number of data surfaces")?;
    let cylinders = model.u32("Number of cylinders")?;
    let layout_b = model.block("Layout Model")?;
    let mech = model.block("Mechanical Model")?;
    if mech.kind != "dm_mech_g1" {
        return Err(InputError::at_line(
            &mech.file,
            mech.line,
            "Mechanical Model",
            format!("unsupported mechanics `{}` (only dm_mech_g1)", mech.kind),
        ));
    }
    let layout = import_layout(layout_b)?;
    // DiskSim accepts zones that name cylinders past "Number of cylinders"; so do we.
    let cylinders = layout
        .zones
        .iter()
        .map(|z| z.last_cyl.saturating_add(1))
        .fold(cylinders, u32::max);
    let rpm = mech.num("Rotation speed (in rpms)")?;
    let seek = import_seek(mech, &dir)?;

    // Bus: the slowest of the disk's own per-sector time and the buses'.
    let bulk = disk.num_or("Bulk sector transfer time", 0.0)?;
    let mut bus = Bus {
        read_sector_ms: bulk,
        write_sector_ms: bulk,
        read_high_water: disk.num_or("High (read) water mark", 0.0)?,
        watermark_by_request: disk.uint_or("Set watermark by reqsize", 1)? != 0,
        extra_write_disconnect: disk.uint_or("Extra write disconnect", 0)? != 0,
    };
    for b in file.blocks.iter().filter(|b| b.kind == "disksim_bus") {
        bus.read_sector_ms = bus
            .read_sector_ms
            .max(b.num_or("Read block transfer time", 0.0)?);
        bus.write_sector_ms = bus
            .write_sector_ms
            .max(b.num_or("Write block transfer time", 0.0)?);
    }
    let scale = disk.num_or("Time scale for overheads", 1.0)?;
    let o = |k: &str| -> Result<f64, InputError> { Ok(disk.num_or(k, 0.0)? * scale) };
    let overheads = Overheads {
        read_hit_after_read: o("Read hit over. after read")?,
        read_hit_after_write: o("Read hit over. after write")?,
        read_miss_after_read: o("Read miss over. after read")?,
        read_miss_after_write: o("Read miss over. after write")?,
        write_hit_after_read: o("Write hit over. after read")?,
        write_hit_after_write: o("Write hit over. after write")?,
        write_miss_after_read: o("Write miss over. after read")?,
        write_miss_after_write: o("Write miss over. after write")?,
        read_completion: o("Read completion overhead")?,
        write_completion: o("Write completion overhead")?,
        data_preparation: o("Data preparation overhead")?,
        first_reselect: o("First reselect overhead")?,
        other_reselect: o("Other reselect overhead")?,
        read_disconnect_after_read: o("Read disconnect afterread")?,
        read_disconnect_after_write: o("Read disconnect afterwrite")?,
        write_disconnect: o("Write disconnect overhead")?,
        minimum_seek: o("Minimum seek delay")?,
    };
    let flag = |k: &str| -> Result<bool, InputError> { Ok(disk.uint_or(k, 0)? != 0) };
    let ra_mode = disk.uint_or("Buffer continuous read", 0)?;
    let read_ahead = match ra_mode {
        0 => ReadAhead::None,
        1 => ReadAhead::Track,
        2 => ReadAhead::Cylinder,
        3 => ReadAhead::FillSegment,
        4 => ReadAhead::Continuous,
        m => {
            let v = disk.get("Buffer continuous read").expect("present");
            return Err(v.err(
                "Buffer continuous read",
                format!("unknown mode {m} (0..=4)"),
            ));
        }
    };
    let fw = disk.uint_or("Fast write level", 0)?;
    let write_policy = match fw {
        0 => WritePolicy::WriteThrough,
        1 => WritePolicy::WriteBackSequential,
        2 => WritePolicy::WriteBack,
        m => {
            let v = disk.get("Fast write level").expect("present");
            return Err(v.err("Fast write level", format!("unknown level {m} (0..=2)")));
        }
    };
    let segments = disk.u32_or("Number of buffer segments", 1)?;
    let write_segments = disk.u32_or("Maximum number of write segments", segments.max(1))?;
    if write_segments == 0 || write_segments > segments.max(1) {
        let v = disk
            .get("Maximum number of write segments")
            .expect("present");
        return Err(v.err(
            "Maximum number of write segments",
            format!(
                "must be 1..={} (the buffer segments), got {write_segments}",
                segments.max(1)
            ),
        ));
    }
    let cache = Cache {
        enabled: disk.uint_or("Enable caching in buffer", 1)? != 0,
        segments,
        segment_sectors: disk.u32_or("Segment size (in blks)", 256)?,
        // DiskSim 4.0 parses "Use separate write segment" but never applies it (its modspec has
        // no INIT for it, so `dedicatedwriteseg` stays NULL): writes share the LRU segments.
        separate_write_segment: {
            flag("Use separate write segment")?;
            false
        },
        write_segments: Some(write_segments),
        read_ahead,
        min_read_ahead: disk.u32_or("Minimum read-ahead (blks)", 0)?,
        max_read_ahead: disk.u32_or("Maximum read-ahead (blks)", 0)?,
        // -1 (drop the request's data once sent) is taken as 1: both let read-ahead reuse it.
        read_ahead_over_requested: disk.num_or("Read-ahead over requested", 0.0)? != 0.0,
        read_ahead_on_idle_hit: flag("Read-ahead on idle hit")?,
        read_hits_on_write_data: flag("Allow read hits on write data")?,
        almost_read_hits: flag("Allow almost read hits")?,
        read_any_free_blocks: flag("Read any free blocks")?,
        write_policy,
        // DiskSim's own model.
        destage: Destage::BeforeNextCommand,
    };
    let name = disk
        .name
        .clone()
        .unwrap_or_else(|| "disksim-drive".into())
        .to_lowercase();
    let spec = DriveSpec {
        description: format!(
            "Imported from DiskSim 4.0 parameters {} ({})",
            parv.file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default(),
            disk.name.clone().unwrap_or_default()
        ),
        name,
        rpm,
        surfaces,
        cylinders,
        layout,
        seek,
        overheads,
        bus,
        cache,
    };
    spec.check().map_err(|e| {
        InputError::at_line(
            &model.file,
            model.line,
            &e.field,
            format!("imported model is inconsistent: {}", e.message),
        )
    })?;
    Ok(spec)
}

fn import_layout(b: &Block) -> Result<Layout, InputError> {
    if b.kind != "dm_layout_g1" {
        return Err(InputError::at_line(
            &b.file,
            b.line,
            "Layout Model",
            format!("unsupported layout `{}` (only dm_layout_g1)", b.kind),
        ));
    }
    let map = b.uint_or("LBN-to-PBN mapping scheme", 0)?;
    let mapping = match map {
        0 => Mapping::Normal,
        1 => Mapping::SerpentineZone,
        2 => Mapping::Serpentine,
        m => {
            let v = b.get("LBN-to-PBN mapping scheme").expect("present");
            return Err(v.err(
                "LBN-to-PBN mapping scheme",
                format!("unknown scheme {m} (0..=2)"),
            ));
        }
    };
    let sp = b.uint_or("Sparing scheme used", 0)?;
    let sparing = match sp {
        0 => Sparing::None,
        1 => Sparing::Tracks,
        2 => Sparing::PerCylinder,
        3 => Sparing::PerTrack,
        4 => Sparing::PerCylinderSlipToEnd,
        5 => Sparing::PerCylinderAtFront,
        6 => Sparing::PerCylinderAtFrontSlipToEnd,
        7 => Sparing::AtEnd,
        8 => Sparing::Range,
        9 => Sparing::Zone,
        10 => Sparing::ZoneSlipToEnd,
        m => {
            let v = b.get("Sparing scheme used").expect("present");
            return Err(v.err(
                "Sparing scheme used",
                format!("unknown scheme {m} (0..=10)"),
            ));
        }
    };
    let revolutions = match b.get("Skew units") {
        Some(v) => match &v.value {
            Value::Word(w) if w == "revolutions" => true,
            Value::Word(w) if w == "sectors" => false,
            _ => return Err(v.err("Skew units", "expected `sectors` or `revolutions`")),
        },
        None => false,
    };
    let range_size = b.u32_or("Rangesize for sparing", 1)?.max(1);
    let (zones_l, zv) = b
        .list("Zones")
        .ok_or_else(|| InputError::at_line(&b.file, b.line, "Zones", "missing list of zones"))?;
    let mut zones = Vec::new();
    for z in zones_l {
        let Value::Block(zb) = &z.value else {
            return Err(z.err("Zones", "expected a dm_layout_g1_zone block"));
        };
        zones.push(import_zone(zb, revolutions)?);
    }
    if zones.is_empty() {
        return Err(zv.err("Zones", "no zones"));
    }
    Ok(Layout {
        mapping,
        sparing,
        range_size,
        zones,
    })
}

fn import_zone(z: &Block, revolutions: bool) -> Result<Zone, InputError> {
    let spt = z.uint("Blocks per track")?;
    if spt == 0 || spt > 65535 {
        let v = z.get("Blocks per track").expect("present");
        return Err(v.err("Blocks per track", "must be 1..=65535"));
    }
    // DiskSim truncates skews given in sectors to whole sectors.
    let skew = |k: &str| -> Result<u32, InputError> {
        let x = z.num_or(k, 0.0)?;
        if x < 0.0 {
            let v = z.get(k).expect("present");
            return Err(v.err(k, "must be >= 0"));
        }
        if !revolutions && x > f64::from(u32::MAX) {
            let v = z.get(k).expect("present");
            return Err(v.err(k, format!("{x} is too large (at most {})", u32::MAX)));
        }
        Ok(if revolutions {
            ((x * spt as f64).round() as u64 % spt) as u32
        } else {
            x as u32
        })
    };
    let ints = |k: &str| -> Result<Vec<u64>, InputError> {
        let mut out = Vec::new();
        if let Some((l, _)) = z.list(k) {
            for v in l {
                out.push(v.as_uint(k)?);
            }
        }
        Ok(out)
    };
    let mut slips = ints("slips")?;
    slips.sort_unstable();
    slips.dedup();
    let d = ints("defects")?;
    if d.len() % 2 == 1 {
        let v = z.get("defects").expect("present");
        return Err(v.err("defects", "needs pairs: defective sector, spare sector"));
    }
    let defects = d.chunks(2).map(|c| [c[0], c[1]]).collect();
    let first_cyl = z.u32("First cylinder number")?;
    let last_cyl = z.u32("Last cylinder number")?;
    if last_cyl < first_cyl {
        let v = z.get("Last cylinder number").expect("present");
        return Err(v.err("Last cylinder number", "is below the first cylinder number"));
    }
    Ok(Zone {
        first_cyl,
        last_cyl,
        sectors_per_track: spt as u32,
        first_block_offset: skew("Offset of first block")?,
        front_gap: z.u32_or("Empty space at zone front", 0)?,
        track_skew: skew("Skew for track switch")?,
        cyl_skew: skew("Skew for cylinder switch")?,
        spares: z.u32_or("Number of spares", 0)?,
        slips,
        defects,
    })
}

fn import_seek(m: &Block, dir: &Path) -> Result<Seek, InputError> {
    let (kind, kv) = m.word("Seek type")?;
    if let Some(v) = m.get("Access time type") {
        match &v.value {
            Value::Word(w) if w == "trackSwitchPlusRotation" => {}
            _ => return Err(v.err(
                "Access time type",
                "only trackSwitchPlusRotation is modelled (constant and averageRotation are not)",
            )),
        }
    }
    let single = m.num_or("Single cylinder seek time", 0.0)?;
    let hpl = |need_ten: bool| -> Result<SeekCurveSpec, InputError> {
        let (l, lv) = m.list("HPL seek equation values").ok_or_else(|| {
            InputError::at_line(
                &m.file,
                m.line,
                "HPL seek equation values",
                "missing (six values)",
            )
        })?;
        if l.len() < 6 {
            return Err(lv.err(
                "HPL seek equation values",
                format!("needs 6 values, found {}", l.len()),
            ));
        }
        let v: Vec<f64> = l
            .iter()
            .map(|x| x.as_num("HPL seek equation values"))
            .collect::<Result<_, _>>()?;
        if need_ten {
            let (t, tv) = m.list("First ten seek times").ok_or_else(|| {
                InputError::at_line(
                    &m.file,
                    m.line,
                    "First ten seek times",
                    "missing (ten values)",
                )
            })?;
            if t.len() < 10 {
                return Err(tv.err(
                    "First ten seek times",
                    format!("needs 10 values, found {}", t.len()),
                ));
            }
            let mut ten = [0.0; 10];
            for (i, x) in t.iter().take(10).enumerate() {
                ten[i] = x.as_num("First ten seek times")?;
            }
            Ok(SeekCurveSpec::HplFirstTen {
                boundary: v[0],
                sqrt_base_ms: v[1],
                sqrt_factor_ms: v[2],
                linear_base_ms: v[3],
                linear_factor_ms: v[4],
                first_ten_ms: ten,
            })
        } else {
            Ok(SeekCurveSpec::Hpl {
                boundary: v[0],
                sqrt_base_ms: v[1],
                sqrt_factor_ms: v[2],
                linear_base_ms: v[3],
                linear_factor_ms: v[4],
                single_cylinder_ms: (v[5] != -1.0).then_some(single),
            })
        }
    };
    let curve = match kind {
        "constant" => SeekCurveSpec::Constant {
            ms: m.num("Constant seek time")?,
        },
        "hpl" => hpl(false)?,
        "hplplus10" => hpl(true)?,
        "extracted" => {
            let (f, _) = m.word("Full seek curve")?;
            let path = dir.join(f);
            SeekCurveSpec::Extracted {
                points: read_seek_file(&path)?,
            }
        }
        "linear" | "curve" => {
            return Err(kv.err(
                "Seek type",
                format!("`{kind}` (three-point) seek curves are not supported; use extracted, hpl or hplplus10"),
            ));
        }
        other => {
            return Err(kv.err(
                "Seek type",
                format!(
                "unknown seek type `{other}` (constant, linear, curve, hpl, hplplus10, extracted)"
            ),
            ))
        }
    };
    Ok(Seek {
        curve,
        head_switch_ms: m.num_or("Head switch time", 0.0)?,
        write_settle_ms: m.num_or("Add. write settling delay", 0.0)?,
    })
}

/// Reads an extracted seek curve: an optional `Seek distances measured: N` line, then
/// `distance, ms[, stddev]` lines.
pub fn read_seek_file(path: &Path) -> Result<Vec<[f64; 2]>, InputError> {
    let text = parser::read(path)?;
    let mut pts: Vec<[f64; 2]> = Vec::new();
    let mut declared = None;
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix("Seek distances measured:") {
            declared = Some(rest.trim().parse::<usize>().map_err(|_| {
                InputError::at_line(path, n + 1, "Seek distances measured", "expected a count")
            })?);
            continue;
        }
        let mut it = l.split(',').map(str::trim);
        let d = it.next().unwrap_or("");
        let t = it.next().ok_or_else(|| {
            InputError::at_line(
                path,
                n + 1,
                "distance, time",
                format!("expected `distance, ms`, found `{l}`"),
            )
        })?;
        let d: f64 = d.parse().map_err(|_| {
            InputError::at_line(path, n + 1, "distance", format!("not a number: `{d}`"))
        })?;
        let t: f64 = t.parse().map_err(|_| {
            InputError::at_line(path, n + 1, "time", format!("not a number: `{t}`"))
        })?;
        if d < 1.0 || d.fract() != 0.0 {
            return Err(InputError::at_line(
                path,
                n + 1,
                "distance",
                format!("must be a whole number >= 1, got {d}"),
            ));
        }
        if let Some(last) = pts.last() {
            if d <= last[0] {
                return Err(InputError::at_line(
                    path,
                    n + 1,
                    "distance",
                    "distances must increase",
                ));
            }
        }
        if !(t.is_finite() && t >= 0.0) {
            return Err(InputError::at_line(path, n + 1, "time", "must be >= 0"));
        }
        pts.push([d, t]);
    }
    if pts.is_empty() {
        return Err(InputError::new(path, "no `distance, ms` lines").in_field("Full seek curve"));
    }
    if let Some(c) = declared {
        if c != pts.len() {
            return Err(InputError::at_line(
                path,
                1,
                "Seek distances measured",
                format!("declares {c} points but the file has {}", pts.len()),
            ));
        }
    }
    Ok(pts)
}
