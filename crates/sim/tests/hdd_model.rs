//! Behaviour of the rotational drive model: geometry, rotation, seek, cache, specs.

use elevator_sim::hdd::geometry::Geometry;
use elevator_sim::hdd::spec::{Destage, Layout, Mapping, Sparing, WritePolicy, Zone};
use elevator_sim::hdd::{DriveSpec, Hdd};
use std::path::Path;

fn zone(first: u32, last: u32, spt: u32) -> Zone {
    Zone {
        first_cyl: first,
        last_cyl: last,
        sectors_per_track: spt,
        first_block_offset: 0,
        front_gap: 0,
        track_skew: 0,
        cyl_skew: 0,
        spares: 0,
        slips: vec![],
        defects: vec![],
    }
}

fn layout(sparing: Sparing, zones: Vec<Zone>) -> Layout {
    Layout {
        mapping: Mapping::Normal,
        sparing,
        range_size: 1,
        zones,
    }
}

#[test]
fn lbns_fill_tracks_then_heads_then_cylinders_zone_by_zone() {
    let g = Geometry::new(
        &layout(Sparing::None, vec![zone(0, 1, 10), zone(2, 3, 8)]),
        2,
    );
    assert_eq!(g.blocks, 2 * 2 * 10 + 2 * 2 * 8);
    let p = g.locate(0);
    assert_eq!((p.cyl, p.head, p.sector), (0, 0, 0));
    let p = g.locate(15);
    assert_eq!((p.cyl, p.head, p.sector), (0, 1, 5));
    let p = g.locate(20);
    assert_eq!((p.cyl, p.head, p.sector), (1, 0, 0));
    // First block of the second zone: cylinder 2, 8 sectors per track.
    let p = g.locate(40 + 9);
    assert_eq!((p.cyl, p.head, p.sector), (2, 1, 1));
}

#[test]
fn per_cylinder_spares_sit_at_the_end_of_each_cylinder_and_a_slip_uses_one() {
    let mut z = zone(0, 1, 10);
    z.spares = 2;
    z.slips = vec![3];
    let g = Geometry::new(&layout(Sparing::PerCylinder, vec![z]), 2);
    // 20 slots per cylinder, 18 LBNs each.
    assert_eq!(g.blocks, 36);
    // The slip at slot 3 moves LBN 3 to sector 4.
    assert_eq!(g.locate(2).sector, 2);
    assert_eq!(g.locate(3).sector, 4);
    // LBN 17 is the last of cylinder 0: slot 18 (one spare left unused at slot 19).
    let p = g.locate(17);
    assert_eq!((p.cyl, p.head, p.sector), (0, 1, 8));
    let p = g.locate(18);
    assert_eq!((p.cyl, p.head, p.sector), (1, 0, 0));
}

#[test]
fn zone_sparing_keeps_spares_at_the_zone_end_and_slips_shift_later_blocks() {
    let mut z = zone(0, 0, 10);
    z.spares = 3;
    z.slips = vec![12];
    let g = Geometry::new(&layout(Sparing::Zone, vec![z]), 2);
    assert_eq!(g.blocks, 17);
    assert_eq!(g.locate(11).sector, 1);
    assert_eq!(g.locate(12).sector, 3);
    assert_eq!(g.locate(16).sector, 7);
}

#[test]
fn track_sparing_skips_slipped_tracks() {
    let mut z = zone(0, 1, 10);
    z.spares = 1;
    z.slips = vec![1];
    let g = Geometry::new(&layout(Sparing::Tracks, vec![z]), 2);
    assert_eq!(g.blocks, 30);
    let p = g.locate(10);
    assert_eq!((p.cyl, p.head), (1, 0));
}

#[test]
fn serpentine_mapping_reverses_heads_on_odd_cylinders() {
    let mut l = layout(Sparing::None, vec![zone(0, 1, 10)]);
    l.mapping = Mapping::SerpentineZone;
    let g = Geometry::new(&l, 3);
    assert_eq!(g.locate(30).head, 2);
    assert_eq!(g.locate(50).head, 0);
}

#[test]
fn skew_moves_the_first_sector_of_each_track() {
    let mut z = zone(0, 1, 100);
    z.track_skew = 10;
    z.cyl_skew = 25;
    let g = Geometry::new(&layout(Sparing::None, vec![z]), 2);
    assert_eq!(g.angle(0, 0), 0.0);
    assert!((g.angle(1, 0) - 0.10).abs() < 1e-12);
    // Cylinder 1, head 0: one track switch plus one cylinder switch.
    assert!((g.angle(2, 0) - 0.35).abs() < 1e-12);
}

fn tiny_drive() -> DriveSpec {
    let text = r#"
name = "tiny"
rpm = 6000.0
surfaces = 2
cylinders = 100
[layout]
[[layout.zones]]
first_cyl = 0
last_cyl = 99
sectors_per_track = 100
[seek]
head_switch_ms = 0.5
write_settle_ms = 0.2
[seek.curve]
kind = "constant"
ms = 2.0
[bus]
read_sector_ms = 0.0
write_sector_ms = 0.0
[cache]
enabled = true
segments = 1
segment_sectors = 300
read_ahead = "fill-segment"
max_read_ahead = 200
read_ahead_over_requested = true
write_policy = "write-through"
"#;
    DriveSpec::parse(text, Path::new("tiny.toml")).expect("valid")
}

#[test]
fn rotational_latency_is_exact_from_the_platter_angle_at_absolute_time() {
    // 6000 rpm: 10 ms per revolution, 0.1 ms per sector; no overheads, no bus time, no
    // read-ahead (which would move the arm).
    let mut spec = tiny_drive();
    spec.cache.read_ahead = elevator_sim::hdd::spec::ReadAhead::None;
    let mut h = Hdd::new(spec);
    // At t = 0 the head is over sector 0 of track 0: reading sector 50 waits half a turn.
    let (done, hit) = h.serve(true, 50, 1, 0.0);
    assert!(!hit);
    assert!((done - 5.1).abs() < 1e-9, "{done}");
    // Sector 0 of the same track at t = 20 ms (angle 0 again): no latency, 0.1 ms transfer.
    let (done, hit) = h.serve(true, 0, 1, 20.0);
    assert!(!hit);
    assert!((done - 20.1).abs() < 1e-9, "{done}");
    // Sector 10 at t = 20.5: half a sector late, wait until 21.0.
    let (done, _) = h.serve(true, 10, 1, 20.55);
    assert!((done - 21.1).abs() < 1e-9, "{done}");
}

#[test]
fn seek_and_head_switch_take_the_longer_and_writes_add_settle() {
    let mut spec = tiny_drive();
    spec.cache.read_ahead = elevator_sim::hdd::spec::ReadAhead::None;
    let mut h = Hdd::new(spec);
    // Cylinder 5 (LBN 1000), sector 0: 2 ms seek then wait for angle 0 at t = 10 ms.
    let (done, _) = h.serve(true, 1000, 1, 0.0);
    assert!((done - 10.1).abs() < 1e-9, "{done}");
    // Write to cylinder 6 at t = 30: 2 ms seek + 0.2 settle, then angle 0 at 40 ms.
    let (done, _) = h.serve(false, 1200, 1, 30.0);
    assert!((done - 40.1).abs() < 1e-9, "{done}");
}

#[test]
fn a_bus_slower_than_the_media_sets_the_pace_after_a_head_switch() {
    // 0.1 ms per sector on the media, 0.3 ms on the bus. Sectors 98 and 99 of track 0 are
    // read at 9.8..10.0; the head switch (0.5 ms) misses sector 0 of track 1, read at
    // 20.0..20.2. The bus sends 98 and 99 long before; sector 0 goes at 20.1..20.4 and
    // sector 1, already buffered, at 20.4..20.7 (not 20.2..20.5).
    let mut spec = tiny_drive();
    spec.cache.read_ahead = elevator_sim::hdd::spec::ReadAhead::None;
    spec.bus.read_sector_ms = 0.3;
    let mut h = Hdd::new(spec);
    let (done, hit) = h.serve(true, 98, 4, 9.8);
    assert!(!hit);
    assert!((done - 20.7).abs() < 1e-9, "{done}");
}

#[test]
fn extra_write_disconnect_holds_the_media_write_until_ten_sectors_are_buffered() {
    // 0.1 ms per sector on the media, 0.02 ms per sector on the bus. A 20-sector write to
    // sector 0 arrives at 9.9 ms, a sector before sector 0 comes under the head.
    let mut spec = tiny_drive();
    spec.cache.read_ahead = elevator_sim::hdd::spec::ReadAhead::None;
    spec.bus.write_sector_ms = 0.02;
    let mut h = Hdd::new(spec.clone());
    // Each sector's data is in by the time its slot arrives: written at once, 10.0..12.0.
    let (done, _) = h.serve(false, 0, 20, 9.9);
    assert!((done - 12.0).abs() < 1e-9, "{done}");
    // With the rule, the media waits for 10 sectors (10.1 ms) and misses sector 0 at 10.0:
    // one revolution more.
    spec.bus.extra_write_disconnect = true;
    let mut h = Hdd::new(spec);
    let (done, _) = h.serve(false, 0, 20, 9.9);
    assert!((done - 22.0).abs() < 1e-9, "{done}");
}

#[test]
fn read_any_free_blocks_keeps_the_sectors_passed_during_rotational_latency() {
    // Sector 50 read at t = 0 with the head over sector 0: sectors 0..50 pass under the head
    // during the 5 ms latency. With the flag a later read of 10..14 is a hit.
    let mut spec = tiny_drive();
    spec.cache.read_ahead = elevator_sim::hdd::spec::ReadAhead::None;
    for (free, want_hit) in [(false, false), (true, true)] {
        spec.cache.read_any_free_blocks = free;
        let mut h = Hdd::new(spec.clone());
        let (done, hit) = h.serve(true, 50, 1, 0.0);
        assert!(!hit && (done - 5.1).abs() < 1e-9, "{done}");
        let (_, hit) = h.serve(true, 10, 4, 20.0);
        assert_eq!(hit, want_hit, "read_any_free_blocks = {free}");
    }
}

#[test]
fn read_ahead_turns_the_next_sequential_read_into_a_hit() {
    let mut h = Hdd::new(tiny_drive());
    let (d1, hit1) = h.serve(true, 0, 8, 0.0);
    assert!(!hit1);
    // 8 ms later the read-ahead has passed sectors 8..16.
    let (d2, hit2) = h.serve(true, 8, 8, d1 + 8.0);
    assert!(hit2);
    assert!((d2 - (d1 + 8.0)).abs() < 1e-9);
    // Far away: a miss.
    let (_, hit3) = h.serve(true, 10_000, 8, d2 + 1.0);
    assert!(!hit3);
}

#[test]
fn almost_read_hit_serves_the_block_read_ahead_is_about_to_read() {
    // The next sequential read arrives the instant the previous one completes: no block of
    // the read-ahead is in the buffer yet.
    let back_to_back = |almost: bool| {
        let mut spec = tiny_drive();
        spec.cache.almost_read_hits = almost;
        // A miss costs 0.2 ms of command overhead (a hit none).
        spec.overheads.read_miss_after_read = 0.2;
        let mut h = Hdd::new(spec);
        let (d1, _) = h.serve(true, 0, 8, 0.0);
        let (d2, hit) = h.serve(true, 8, 8, d1);
        (d2 - d1, hit)
    };
    // DiskSim's default: a miss that stops the read-ahead; by the end of the miss overhead
    // the head has passed sector 8, so it waits almost a revolution (10 ms).
    let (took, hit) = back_to_back(false);
    assert!(!hit);
    assert!(took > 9.0, "{took}");
    // Allowed: served by the read-ahead as it reads sectors 8..16 (0.1 ms each).
    let (took, hit) = back_to_back(true);
    assert!(hit);
    assert!((took - 0.8).abs() < 1e-9, "{took}");
}

#[test]
fn laptop_drive_streams_a_reader_without_gaps_between_requests() {
    let mut h = Hdd::new(DriveSpec::builtin("laptop-4200").expect("laptop"));
    let mut t = 0.0;
    let mut hits = 0;
    for i in 0..100u64 {
        let (done, hit) = h.serve(true, 1_000_000 + 32 * i, 32, t);
        hits += u32::from(hit);
        t = done;
    }
    assert_eq!(hits, 99);
    // 100 x 16 KiB at no less than 20 MB/s (the outer zone's media rate is about 27 MB/s).
    let mb_s = 100.0 * 16384.0 / 1e6 / (t / 1e3);
    assert!(mb_s > 20.0, "{mb_s}");
}

/// MB/s of one reader reading every `stride`-th 16 KiB chunk back to back on the laptop drive.
fn laptop_strided_reader_mb_s(stride: u64) -> f64 {
    let mut h = Hdd::new(DriveSpec::builtin("laptop-4200").expect("laptop"));
    let mut t = 0.0;
    for i in 0..400u64 {
        let (done, _) = h.serve(true, 1_000_000 + 32 * stride * i, 32, t);
        t = done;
    }
    400.0 * 16384.0 / 1e6 / (t / 1e3)
}

#[test]
fn a_reader_of_every_nth_chunk_gets_one_nth_of_the_media_rate() {
    // The drive reads through the chunks it skips: a lone queue of one of N interleaved
    // readers moves 1/N of what the merged stream moves (docs/bfq.md, cooperating readers).
    let all = laptop_strided_reader_mb_s(1);
    for n in [2u64, 4] {
        let ratio = all / laptop_strided_reader_mb_s(n);
        assert!(
            (ratio - n as f64).abs() < 0.1 * n as f64,
            "stride {n}: {ratio:.2}x slower than sequential"
        );
    }
}

#[test]
fn builtin_drives_load_and_have_their_capacity() {
    for name in DriveSpec::builtin_names() {
        let s = DriveSpec::builtin(name).unwrap_or_else(|| panic!("{name} does not load"));
        let h = Hdd::new(s);
        assert!(h.geometry().blocks > 1_000_000, "{name}");
    }
    let laptop = Hdd::new(DriveSpec::builtin("laptop-4200").expect("laptop"));
    let gb = laptop.geometry().blocks as f64 * 512.0 / 1e9;
    assert!((20.0..=40.0).contains(&gb), "{gb}");
    assert_eq!(laptop.period_ms(), 60_000.0 / 4200.0);
    let cheetah = Hdd::new(DriveSpec::builtin("cheetah9lp").expect("cheetah"));
    // DiskSim sums its zones the same way (its layout_g1 replaces the model's "Block count"
    // of 17,783,240 by this sum).
    assert_eq!(cheetah.geometry().blocks, 17_918_387);
}

#[test]
fn laptop_average_seek_is_about_twelve_ms() {
    let s = DriveSpec::builtin("laptop-4200").expect("laptop");
    let c = elevator_sim::hdd::seek::SeekCurve::new(&s.seek.curve);
    let avg = c.average(s.cylinders);
    assert!((11.0..=13.0).contains(&avg), "{avg}");
    assert!((c.time(s.cylinders - 1) - 23.0).abs() < 1.5);
}

#[test]
fn spec_errors_name_file_line_and_field() {
    let good = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/drives/laptop-4200.toml"
    ))
    .expect("laptop file");
    let bad = good.replace("rpm = 4200.0", "rpm = -1.0");
    let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert_eq!(e.field, "rpm");
    assert_eq!(
        e.line(),
        Some(bad.lines().position(|l| l.starts_with("rpm")).unwrap() + 1)
    );
    assert!(e.to_string().starts_with("x.toml:"));

    // Overlapping zones: the second zone's first_cyl.
    let bad = good.replacen("first_cyl = 3093", "first_cyl = 3000", 1);
    let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert_eq!(e.field, "layout.zones[1].first_cyl");
    let line = bad.lines().position(|l| l == "first_cyl = 3000").unwrap() + 1;
    assert_eq!(e.line(), Some(line));

    // A misspelt key: toml's own error with the line, named with its table and the key
    // it most likely meant.
    let bad = good.replace("head_switch_ms", "head_swich_ms");
    let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert_eq!(e.field, "seek.head_swich_ms");
    assert!(
        e.to_string().contains("did you mean `head_switch_ms`?"),
        "{e}"
    );
    assert!(e.line().is_some());

    // A wrong type.
    let bad = good.replace("surfaces = 4", "surfaces = \"four\"");
    let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert_eq!(
        e.line(),
        Some(bad.lines().position(|l| l.starts_with("surfaces")).unwrap() + 1)
    );

    // More write segments than segments, and none.
    for w in ["write_segments = 5", "write_segments = 0"] {
        let bad = good.replace("write_segments = 3", w);
        let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
        assert_eq!(e.field, "cache.write_segments", "{w}");
        assert_eq!(
            e.line(),
            Some(bad.lines().position(|l| l == w).unwrap() + 1)
        );
    }
}

#[test]
fn the_same_requests_give_the_same_times() {
    let run = || {
        let mut h = Hdd::new(DriveSpec::builtin("cheetah9lp").expect("cheetah"));
        let mut t = 0.0;
        let mut out = Vec::new();
        let mut x = 12345u64;
        for i in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lbn = (x >> 20) % 17_000_000;
            let (d, hit) = h.serve(i % 3 != 0, lbn, 8, t);
            out.push((d, hit));
            t = d + 1.0;
        }
        out
    };
    assert_eq!(run(), run());
}

/// The tiny drive with a write-back cache of four 300-sector segments destaged read-first.
fn read_priority_drive() -> DriveSpec {
    let mut s = tiny_drive();
    s.cache.segments = 4;
    s.cache.segment_sectors = 300;
    s.cache.max_read_ahead = 100;
    s.cache.write_policy = WritePolicy::WriteBack;
    s.cache.destage = Destage::ReadPriority;
    s.bus.write_sector_ms = 0.001;
    s
}

/// `count` sequential 100-sector writes from LBN 10,000, each issued when the previous
/// completes, from t = 0; how long each took.
fn sequential_writes(h: &mut Hdd, count: u64) -> (Vec<f64>, f64) {
    let mut t = 0.0;
    let mut took = Vec::new();
    for i in 0..count {
        let (done, hit) = h.serve(false, 10_000 + 100 * i, 100, t);
        assert!(hit, "write {i} went through to the media");
        took.push(done - t);
        t = done;
    }
    (took, t)
}

#[test]
fn read_priority_read_behind_a_full_dirty_buffer_waits_for_one_segment_destage() {
    // Nine writes fill three segments (the fourth stays for reads); the first one's destage
    // has started when a far read arrives at 1 ms.
    let mut full = Hdd::new(read_priority_drive());
    sequential_writes(&mut full, 9);
    let (behind_full, hit) = full.serve(true, 0, 8, 1.0);
    assert!(!hit);
    // The same read behind that first segment alone.
    let mut one = Hdd::new(read_priority_drive());
    sequential_writes(&mut one, 3);
    let (behind_one, _) = one.serve(true, 0, 8, 1.0);
    assert_eq!(behind_full, behind_one);
    // It did wait for that segment: 300 sectors are three revolutions at least.
    assert!(behind_full > 1.0 + 30.0, "{behind_full}");
    // DiskSim's write-back makes it wait for all 900 sectors (six revolutions more).
    let mut spec = read_priority_drive();
    spec.cache.destage = Destage::BeforeNextCommand;
    let mut disksim = Hdd::new(spec);
    sequential_writes(&mut disksim, 9);
    let (behind_all, _) = disksim.serve(true, 0, 8, 1.0);
    assert!(
        behind_all > behind_full + 60.0,
        "{behind_all} vs {behind_full}"
    );
}

#[test]
fn read_priority_writes_complete_at_bus_speed_until_the_buffer_is_full_then_at_media_speed() {
    let mut h = Hdd::new(read_priority_drive());
    let (took, end) = sequential_writes(&mut h, 39);
    // 100 sectors at 1 us each: 0.1 ms while there is room (three segments of 300 sectors).
    for (i, x) in took[..9].iter().enumerate() {
        assert!((x - 0.1).abs() < 1e-9, "write {i}: {x}");
    }
    // The tenth waits until the first segment is on the media.
    assert!(took[9] > 30.0, "{}", took[9]);
    // From then on the writer goes at the media's pace: at most 100 sectors per 10 ms turn,
    // with a revolution lost at most track switches (no skew on this drive).
    let from = took[..9].iter().sum::<f64>();
    let rate = 30.0 * 100.0 / (end - from);
    assert!((4.0..=10.0).contains(&rate), "{rate} sectors/ms");
}

#[test]
fn read_priority_holds_no_more_dirty_segments_than_its_write_segments() {
    // Three segments may be dirty by default (every one but the read's); with
    // `write_segments = 1` the fourth 100-sector write (a second segment's first) waits for
    // the first segment's destage, and with 2 the seventh does.
    for (w, first_to_wait) in [(None, 9), (Some(2), 6), (Some(1), 3)] {
        let mut spec = read_priority_drive();
        spec.cache.write_segments = w;
        let mut h = Hdd::new(spec);
        let (took, _) = sequential_writes(&mut h, 10);
        for (i, x) in took[..first_to_wait].iter().enumerate() {
            assert!((x - 0.1).abs() < 1e-9, "{w:?}: write {i}: {x}");
        }
        assert!(
            took[first_to_wait] > 30.0,
            "{w:?}: write {first_to_wait} did not wait for a destage: {}",
            took[first_to_wait]
        );
    }
}

#[test]
fn read_priority_read_of_dirty_data_is_served_from_the_buffer() {
    let mut h = Hdd::new(read_priority_drive());
    sequential_writes(&mut h, 3);
    let (done, hit) = h.serve(true, 10_050, 8, 0.5);
    assert!(hit);
    assert!(done - 0.5 < 0.01, "{done}");
}

#[test]
fn read_priority_flush_waits_until_everything_dirty_is_on_the_media() {
    let mut h = Hdd::new(read_priority_drive());
    let (_, t) = sequential_writes(&mut h, 9);
    let flushed = h.flush(t);
    // 900 sectors: nine revolutions at least.
    assert!(flushed > t + 90.0, "{flushed}");
    // Nothing is left: a second flush returns at once, a read waits for no destage (a seek,
    // at most a revolution, the transfer).
    assert_eq!(h.flush(flushed), flushed);
    let (done, _) = h.serve(true, 0, 8, flushed);
    assert!(
        done - flushed <= 2.0 + 10.0 + 0.8 + 1e-9,
        "{}",
        done - flushed
    );
}

#[test]
fn builtin_drives_keep_disksims_destage_and_read_priority_needs_two_segments() {
    for name in DriveSpec::builtin_names() {
        let s = DriveSpec::builtin(name).expect("built in");
        assert_eq!(s.cache.destage, Destage::BeforeNextCommand, "{name}");
    }
    let good = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/drives/laptop-4200.toml"
    ))
    .expect("laptop file");
    let ok = good.replace(
        "write_policy = \"write-back\"",
        "write_policy = \"write-back\"\ndestage = \"read-priority\"",
    );
    assert!(DriveSpec::parse(&ok, Path::new("x.toml")).is_ok());
    let bad = ok
        .replace("segments = 4", "segments = 1")
        .replace("write_segments = 3", "write_segments = 1");
    let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert_eq!(e.field, "cache.destage");
    assert_eq!(
        e.line(),
        Some(bad.lines().position(|l| l.starts_with("destage")).unwrap() + 1)
    );
    let bad = ok.replace("destage = \"read-priority\"", "destage = \"lazy\"");
    let e = DriveSpec::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert!(
        e.line().is_some() && e.to_string().starts_with("x.toml:"),
        "{e}"
    );
}

/// DiskSim's write-back (`before-next-command`) acknowledges a write once its data are in a
/// segment, and a run of consecutive writes holds one segment, no more than a segment of it
/// ahead of the media: a streaming writer goes at bus speed while its run fits, then at the
/// media's pace, however many segments the drive has. Before 2026-12-02 the buffer had no
/// bound, and a streaming writer was acknowledged at bus speed for ever (laptop-4200:
/// 82.7 MiB/s for 5 s on a disk whose media take about 13 MB/s of such writes; a read after
/// it waited 27 s).
#[test]
fn disksims_write_back_keeps_a_streaming_writer_within_a_segment_of_the_media() {
    let mut spec = read_priority_drive();
    spec.cache.destage = Destage::BeforeNextCommand;
    let mut h = Hdd::new(spec);
    let (took, end) = sequential_writes(&mut h, 39);
    // One segment of 300 sectors holds three writes: those complete at bus speed.
    for (i, x) in took[..3].iter().enumerate() {
        assert!((x - 0.1).abs() < 1e-9, "write {i}: {x}");
    }
    // The fourth waits for the first write's media work, although three segments are free.
    assert!(took[3] > 5.0, "{}", took[3]);
    // From then on at most the media's 100 sectors per 10 ms turn, not the bus's 1 per us.
    let from = took[..3].iter().sum::<f64>();
    let rate = 36.0 * 100.0 / (end - from);
    assert!((2.0..=10.0).contains(&rate), "{rate} sectors/ms");
}

/// Room in a segment comes back sector by sector, as in DiskSim's circular segment: a
/// stream of writes longer than half a segment, sent by a bus slower than the media, goes at
/// the bus's pace (each write's sectors enter as the media take the previous one's), not at
/// a write's media time plus its bus time.
#[test]
fn disksims_write_back_takes_a_write_longer_than_half_a_segment_as_the_media_free_room() {
    let mut spec = read_priority_drive();
    spec.cache.destage = Destage::BeforeNextCommand;
    spec.cache.segment_sectors = 150;
    spec.cache.write_segments = Some(1);
    // 0.2 ms a sector over the bus, twice the media's 0.1 ms.
    spec.bus.write_sector_ms = 0.2;
    let mut h = Hdd::new(spec);
    let (took, _) = sequential_writes(&mut h, 10);
    for (i, x) in took.iter().enumerate() {
        assert!((x - 20.0).abs() < 0.5, "write {i}: {x}");
    }
}

/// Writes that do not extend the newest run take a segment each, and DiskSim lets no more
/// than `write_segments` segments hold data not yet on the media: with `w` of them, `w`
/// scattered writes complete at bus speed, the next waits until the first is on the media,
/// and a read after a stream of them waits for the `w` still in the buffer.
#[test]
fn disksims_write_back_holds_no_more_scattered_writes_than_its_write_segments() {
    let mut read_waits = Vec::new();
    for w in [1u32, 2, 4] {
        let mut spec = read_priority_drive();
        spec.cache.destage = Destage::BeforeNextCommand;
        spec.cache.write_segments = Some(w);
        let mut h = Hdd::new(spec);
        let mut t = 0.0;
        let mut took = Vec::new();
        for i in 0..12u64 {
            let (done, hit) = h.serve(false, 1_000 + (i * 7_919) % 18_000, 8, t);
            assert!(hit, "write {i} went through to the media");
            took.push(done - t);
            t = done;
        }
        let w = w as usize;
        for (i, x) in took[..w].iter().enumerate() {
            assert!((x - 0.008).abs() < 1e-9, "{w} segments, write {i}: {x}");
        }
        // The first write's media work takes a 2 ms seek at least.
        assert!(took[w] > 2.0, "{w} segments: {}", took[w]);
        let (done, _) = h.serve(true, 5, 8, t);
        read_waits.push(done - t);
    }
    assert!(
        read_waits[0] < read_waits[1] && read_waits[1] < read_waits[2],
        "{read_waits:?}"
    );
}
