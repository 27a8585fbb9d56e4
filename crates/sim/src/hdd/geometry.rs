//! Zoned geometry: logical block numbers to (cylinder, head, sector) and platter angles.
//!
//! Built once from a [`Layout`]: a table with one entry per track holding the first LBN on it,
//! how many LBNs it carries, where they start, and the holes (slipped sectors) among them. A
//! lookup is a binary search over that table; nothing is allocated per request.
//!
//! Slots are numbered within a zone in mapping order: `(cyl - first_cyl) * surfaces *
//! sectors_per_track + surface * sectors_per_track + sector`, where `surface` is the logical
//! surface (serpentine mappings reverse the physical head on odd cylinders). Sparing follows
//! DiskSim's `dm_layout_g1`: in every sparing unit (track, cylinder, range, zone), slipped
//! slots hold nothing, then the spares take the unit's last (or first) usable slots; "slip to
//! end" schemes let slips push data on instead of using up spares.

use super::spec::{Layout, Mapping, Sparing};

/// One physical track.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Track {
    /// First LBN stored on the track.
    pub first_lbn: u64,
    /// Number of LBNs on the track (0 for spare or slipped tracks).
    pub lbns: u32,
    /// Cylinder.
    pub cyl: u32,
    /// Physical head.
    pub head: u16,
    /// Physical sectors on the track.
    pub spt: u16,
    /// Physical sector holding `first_lbn`.
    pub first_sector: u16,
    /// Number of slipped sectors between the first and last LBN on the track.
    pub holes_len: u16,
    /// Index of this track's holes in [`Geometry::holes`].
    pub holes_at: u32,
    /// Angle of physical sector 0, as a fraction of a revolution.
    pub angle0: f64,
}

/// Where an LBN lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pbn {
    /// Index of the track in [`Geometry::tracks`].
    pub track: usize,
    /// Cylinder.
    pub cyl: u32,
    /// Physical head.
    pub head: u16,
    /// Physical sector on the track.
    pub sector: u32,
}

/// The precomputed layout of a drive.
#[derive(Clone, Debug)]
pub struct Geometry {
    /// Tracks carrying data, in LBN order.
    pub tracks: Vec<Track>,
    /// Slipped sector numbers of all tracks, grouped per track.
    pub holes: Vec<u16>,
    /// Total LBNs.
    pub blocks: u64,
    /// First LBN of each track (the search key, kept apart for cache locality).
    first_lbns: Vec<u64>,
    /// `index[k]`: the track holding LBN `k << INDEX_SHIFT`.
    index: Vec<u32>,
}

/// LBNs per entry of the coarse index in front of the track search.
const INDEX_SHIFT: u32 = 10;

impl Geometry {
    /// Lays out `layout` on a drive with `surfaces` heads.
    pub fn new(layout: &Layout, surfaces: u32) -> Geometry {
        let mut tracks = Vec::new();
        let mut holes = Vec::new();
        let mut next_lbn = 0u64;
        for z in &layout.zones {
            let spt = u64::from(z.sectors_per_track);
            let ncyl = u64::from(z.last_cyl - z.first_cyl + 1);
            let surf = u64::from(surfaces);
            let ntracks = ncyl * surf;
            let zone_slots = ntracks * spt;
            // The sparing unit, in slots, and spare slots per unit.
            let (unit, spares, at_front, slip_to_end) = match layout.sparing {
                Sparing::None | Sparing::Tracks => (zone_slots, 0, false, false),
                Sparing::PerTrack => (spt, u64::from(z.spares), false, false),
                Sparing::PerCylinder => (spt * surf, u64::from(z.spares), false, false),
                Sparing::PerCylinderSlipToEnd => (spt * surf, u64::from(z.spares), false, true),
                Sparing::PerCylinderAtFront => (spt * surf, u64::from(z.spares), true, false),
                Sparing::PerCylinderAtFrontSlipToEnd => {
                    (spt * surf, u64::from(z.spares), true, true)
                }
                Sparing::AtEnd => (zone_slots, 0, false, true),
                Sparing::Range => (
                    spt * surf * u64::from(layout.range_size),
                    u64::from(z.spares),
                    false,
                    false,
                ),
                Sparing::Zone => (zone_slots, u64::from(z.spares), false, false),
                Sparing::ZoneSlipToEnd => (zone_slots, u64::from(z.spares), false, true),
            };
            // Slips as slots (track sparing slips whole tracks).
            let track_sparing = layout.sparing == Sparing::Tracks;
            let mut slips: Vec<u64> = if track_sparing {
                Vec::new()
            } else {
                z.slips.clone()
            };
            slips.sort_unstable();
            // Track sparing: data tracks are the non-slipped tracks, minus `spares` at the end.
            let data_tracks = if track_sparing {
                ntracks.saturating_sub(u64::from(z.spares))
            } else {
                ntracks
            };
            let mut track_no_data = 0u64; // data tracks used so far (track sparing)
            let mut skip = u64::from(z.front_gap); // leading data slots that hold no LBN
            let mut slip_i = 0usize;
            // Per unit: usable (non-slipped) slots seen, and the quota of data slots.
            let mut unit_seen = 0u64;
            // Slips before each track push the skew on in per-cylinder and per-track schemes.
            let slips_push_skew = matches!(
                layout.sparing,
                Sparing::PerTrack
                    | Sparing::PerCylinder
                    | Sparing::PerCylinderSlipToEnd
                    | Sparing::PerCylinderAtFront
                    | Sparing::PerCylinderAtFrontSlipToEnd
            );
            for t in 0..ntracks {
                let cyl_rel = t / surf;
                let surf_logical = t % surf;
                let cyl = z.first_cyl + cyl_rel as u32;
                let reversed = match layout.mapping {
                    Mapping::Normal => false,
                    Mapping::SerpentineZone => cyl_rel % 2 == 1,
                    Mapping::Serpentine => cyl % 2 == 1,
                };
                let head = if reversed {
                    surf - 1 - surf_logical
                } else {
                    surf_logical
                } as u16;
                // Skew of sector 0, in sectors.
                let switches = surf_logical + (surf - 1) * cyl_rel;
                let mut skew = u64::from(z.first_block_offset)
                    + switches * u64::from(z.track_skew)
                    + cyl_rel * u64::from(z.cyl_skew);
                if slips_push_skew {
                    let mut cutoff = cyl_rel * surf * spt;
                    if layout.sparing == Sparing::PerTrack {
                        cutoff += surf_logical * spt;
                    }
                    skew += slips.partition_point(|&s| s < cutoff) as u64;
                }
                let angle0 = (skew % spt) as f64 / spt as f64;
                let mut entry = Track {
                    first_lbn: next_lbn,
                    lbns: 0,
                    cyl,
                    head,
                    spt: spt as u16,
                    first_sector: 0,
                    holes_len: 0,
                    holes_at: holes.len() as u32,
                    angle0,
                };
                if track_sparing {
                    let slipped = z.slips.binary_search(&t).is_ok();
                    if !slipped && track_no_data < data_tracks {
                        track_no_data += 1;
                        let lead = skip.min(spt);
                        skip -= lead;
                        entry.first_sector = lead as u16;
                        entry.lbns = (spt - lead) as u32;
                    }
                    next_lbn += u64::from(entry.lbns);
                    tracks.push(entry);
                    continue;
                }
                // This track's slots are [first_slot, first_slot + spt); units are whole tracks.
                let first_slot = t * spt;
                if first_slot % unit == 0 {
                    unit_seen = 0;
                }
                let hole_start = holes.len();
                let slip_from = slip_i;
                while slip_i < slips.len() && slips[slip_i] < first_slot + spt {
                    slip_i += 1;
                }
                let track_slips = &slips[slip_from..slip_i];
                let free = spt - track_slips.len() as u64;
                // Usable (non-slipped) slots of this track are unit indices
                // [unit_seen, unit_seen + free); data are those within [lo, hi).
                let slips_here = if slip_to_end && unit == zone_slots {
                    slips.len() as u64
                } else {
                    0
                };
                let (lo, hi) = if at_front {
                    (spares, u64::MAX)
                } else {
                    (0, unit.saturating_sub(spares + slips_here))
                };
                let from = lo.max(unit_seen);
                let to = hi.min(unit_seen + free);
                unit_seen += free;
                if from < to {
                    // Indices among this track's free slots.
                    let mut j0 = from - (unit_seen - free);
                    let j1 = to - (unit_seen - free);
                    let lead = skip.min(j1 - j0);
                    skip -= lead;
                    j0 += lead;
                    if j0 < j1 {
                        let nth_free = |j: u64| {
                            let mut s = j;
                            for &sl in track_slips {
                                if sl - first_slot <= s {
                                    s += 1;
                                } else {
                                    break;
                                }
                            }
                            s
                        };
                        let p0 = nth_free(j0);
                        let p1 = nth_free(j1 - 1);
                        for &sl in track_slips {
                            let r = sl - first_slot;
                            if r > p0 && r < p1 {
                                holes.push(r as u16);
                            }
                        }
                        entry.first_sector = p0 as u16;
                        entry.lbns = (j1 - j0) as u32;
                    }
                }
                entry.holes_len = (holes.len() - hole_start) as u16;
                next_lbn += u64::from(entry.lbns);
                tracks.push(entry);
            }
        }
        tracks.retain(|t| t.lbns > 0);
        let first_lbns: Vec<u64> = tracks.iter().map(|t| t.first_lbn).collect();
        let mut index = Vec::with_capacity((next_lbn >> INDEX_SHIFT) as usize + 2);
        let mut ti = 0usize;
        let mut k = 0u64;
        while (k << INDEX_SHIFT) < next_lbn {
            let lbn = k << INDEX_SHIFT;
            while ti + 1 < first_lbns.len() && first_lbns[ti + 1] <= lbn {
                ti += 1;
            }
            index.push(ti as u32);
            k += 1;
        }
        index.push(first_lbns.len().saturating_sub(1) as u32);
        Geometry {
            tracks,
            holes,
            blocks: next_lbn,
            first_lbns,
            index,
        }
    }

    /// Index of the track holding `lbn` (`lbn < blocks`).
    #[inline]
    pub fn track_of(&self, lbn: u64) -> usize {
        let k = (lbn >> INDEX_SHIFT) as usize;
        let lo = self.index[k.min(self.index.len() - 1)] as usize;
        let hi =
            (self.index[(k + 1).min(self.index.len() - 1)] as usize + 1).min(self.first_lbns.len());
        lo + self.first_lbns[lo..hi].partition_point(|&f| f <= lbn) - 1
    }

    /// The physical sector of `lbn` on track `ti`.
    #[inline]
    pub fn sector_on(&self, ti: usize, lbn: u64) -> u32 {
        let t = &self.tracks[ti];
        let mut s = u32::from(t.first_sector) + (lbn - t.first_lbn) as u32;
        let h = t.holes_at as usize;
        for &hole in &self.holes[h..h + t.holes_len as usize] {
            if u32::from(hole) <= s {
                s += 1;
            } else {
                break;
            }
        }
        s
    }

    /// Where `lbn` lives (`lbn < blocks`).
    pub fn locate(&self, lbn: u64) -> Pbn {
        let ti = self.track_of(lbn);
        let t = &self.tracks[ti];
        Pbn {
            track: ti,
            cyl: t.cyl,
            head: t.head,
            sector: self.sector_on(ti, lbn),
        }
    }

    /// Angle (fraction of a revolution) at which physical `sector` of track `ti` begins.
    #[inline]
    pub fn angle(&self, ti: usize, sector: u32) -> f64 {
        let t = &self.tracks[ti];
        let a = t.angle0 + f64::from(sector) / f64::from(t.spt);
        a - a.floor()
    }

    /// Number of physical sectors from the first to the last LBN on track `ti` within
    /// `[lbn, lbn + n)`, holes included: what the head passes over.
    #[inline]
    pub fn span_sectors(&self, ti: usize, lbn: u64, n: u32) -> u32 {
        let first = self.sector_on(ti, lbn);
        let last = self.sector_on(ti, lbn + u64::from(n) - 1);
        last - first + 1
    }
}
