//! The SSD model: specs, drive resolution, and the device's basic promises.

use elevator_core::harness::rq;
use elevator_core::{Nanos, Op};
use elevator_sim::ssd::{Precondition, Ssd, SsdSpec};
use elevator_sim::{Device, DriveModel};
use std::path::Path;

#[test]
fn builtin_980pro_loads_by_name_everywhere_drives_are_looked_up() {
    let spec = SsdSpec::builtin("samsung-980pro-1tb").expect("built in");
    assert_eq!(spec.validate(), Ok(()));
    // About 1 TB of user capacity.
    let gb = spec.capacity_sectors() as f64 * 512.0 / 1e9;
    assert!((990.0..1100.0).contains(&gb), "{gb} GB");
    let any = DriveModel::resolve("samsung-980pro-1tb").expect("resolves");
    assert!(any.ssd().is_some());
    assert!(DriveModel::builtin_names().contains(&"samsung-980pro-1tb"));
    let dev = any.device();
    assert!(dev.non_rotational());
    assert_eq!(dev.capacity_sectors(), spec.capacity_sectors());
    // Rotational drives still resolve to rotational specs.
    assert!(DriveModel::resolve("cheetah9lp").unwrap().hdd().is_some());
}

#[test]
fn the_fig11c_980pro_differs_from_the_980pro_in_its_write_side_only() {
    let base = SsdSpec::builtin("samsung-980pro-1tb").expect("built in");
    let fitted = SsdSpec::builtin("samsung-980pro-1tb-fig11c").expect("built in");
    assert_eq!(fitted.validate(), Ok(()));
    // One-shot programs of a TLC wordline (the page types) in the 980 PRO's program time, GC
    // urgent, more spare.
    assert_eq!(fitted.flash.program_pages, base.flash.page_types);
    assert_eq!(fitted.flash.program_us, base.flash.program_us);
    assert!(!fitted.gc.preemptible && base.gc.preemptible);
    // ... while the flash is behind the host (writes waiting for buffer room).
    assert_eq!(fitted.gc.urgent, elevator_sim::ssd::GcUrgency::Behind);
    assert!(fitted.ftl.over_provisioning > base.ftl.over_provisioning);
    // Both order the front end per submission queue (NVMe's order, Linux's queue pair a CPU).
    assert_eq!(
        fitted.host.front_end_scope,
        elevator_sim::ssd::spec::FrontEndScope::Queue
    );
    // Everything else is the 980 PRO's: its read fits hold on this drive too (reads alone
    // never wait in the front end, whatever its scope).
    let same = SsdSpec {
        name: base.name.clone(),
        description: base.description.clone(),
        flash: elevator_sim::ssd::spec::Flash {
            program_pages: base.flash.program_pages,
            ..fitted.flash
        },
        ftl: elevator_sim::ssd::spec::Ftl {
            over_provisioning: base.ftl.over_provisioning,
            ..fitted.ftl
        },
        gc: elevator_sim::ssd::spec::Gc {
            preemptible: base.gc.preemptible,
            urgent: base.gc.urgent,
            ..fitted.gc
        },
        ..fitted
    };
    assert_eq!(same, base);
}

/// A spec that leaves out the suspension times takes MQSim's defaults
/// (`Suspend_Program_Time` 100 us, `Suspend_Erase_Time` 700 us), as the built-in drives do.
#[test]
fn suspension_times_left_out_are_mqsims_defaults() {
    let text = SsdSpec::builtin("samsung-980pro-1tb")
        .expect("built in")
        .to_toml();
    let left_out: String = text
        .lines()
        .filter(|l| !l.starts_with("suspend_program_us") && !l.starts_with("suspend_erase_us"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(left_out.lines().count() + 2, text.lines().count());
    let Ok(DriveModel::Ssd(spec)) = DriveModel::parse(&left_out, Path::new("d.toml")) else {
        panic!("an SSD spec");
    };
    assert_eq!(spec.flash.suspend_program_us, 100.0);
    assert_eq!(spec.flash.suspend_erase_us, 700.0);
}

#[test]
fn bad_ssd_spec_names_file_line_and_field() {
    let text = SsdSpec::builtin("samsung-980pro-1tb").unwrap().to_toml();
    let bad: String = text
        .lines()
        .map(|l| {
            if l.starts_with("read_us = ") {
                "read_us = -1.0"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(bad, text, "the spec has a read_us line");
    let e = DriveModel::parse(&bad, Path::new("x.toml")).unwrap_err();
    assert_eq!(e.field, "flash.read_us");
    let line = bad.lines().position(|l| l.starts_with("read_us")).unwrap() + 1;
    assert_eq!(e.line(), Some(line));
    assert!(e
        .to_string()
        .starts_with(&format!("x.toml:{line}: field `flash.read_us`")));
    let unknown = text.replace("[flash]", "[flash]\nspeed = 3");
    let e = DriveModel::parse(&unknown, Path::new("y.toml")).unwrap_err();
    // Named with its table, as a range error names `flash.read_us`.
    assert_eq!(e.field, "flash.speed");
    let one_shot = text.replace("program_pages = 1", "program_pages = 5");
    assert_ne!(one_shot, text, "the spec has a flash.program_pages line");
    let e = DriveModel::parse(&one_shot, Path::new("w.toml")).unwrap_err();
    assert_eq!(e.field, "flash.program_pages");
    assert!(e.to_string().contains("must divide pages_per_block"), "{e}");
    let schedule = text.replace("schedule = \"in-step\"", "schedule = \"lazy\"");
    assert_ne!(schedule, text, "the spec has a gc.schedule line");
    let e = DriveModel::parse(&schedule, Path::new("z.toml")).unwrap_err();
    let line = schedule.lines().position(|l| l.contains("lazy")).unwrap() + 1;
    assert_eq!(e.line(), Some(line), "{e}");
    assert!(e.to_string().contains("whole-victim"), "{e}");
}

/// A chip of several planes executing one command at a time (`flash.serial_dies` or
/// `flash.serial_planes` above 1, MQSim's multi-plane programs) pairs programs by the plane
/// the LPN fixes, so it needs `ftl.static_allocation` (MQSim's CWDP static allocation): a
/// spec with either above 1 and dynamic allocation is refused, naming `flash.serial_planes`
/// and its line; one of each, or static allocation, is accepted.
#[test]
fn planes_within_a_chip_need_static_allocation_and_the_refusal_names_the_field() {
    let base = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    assert!(!base.ftl.static_allocation);
    let with = |dies: u32, planes: u32, fixed: bool| {
        let mut spec = base.clone();
        spec.flash.serial_dies = dies;
        spec.flash.serial_planes = planes;
        spec.ftl.static_allocation = fixed;
        spec
    };
    for (dies, planes) in [(1, 2), (2, 1), (2, 2)] {
        let e = with(dies, planes, false).validate().unwrap_err();
        assert_eq!(e.field, "flash.serial_planes", "{dies} x {planes}: {e}");
        assert_eq!(with(dies, planes, true).validate(), Ok(()));
    }
    assert_eq!(with(1, 1, false).validate(), Ok(()));
    let text = with(1, 2, false).to_toml();
    let e = SsdSpec::parse(&text, Path::new("p.toml")).unwrap_err();
    let line = text
        .lines()
        .position(|l| l.starts_with("serial_planes"))
        .unwrap()
        + 1;
    assert_eq!(e.line(), Some(line), "{e}");
}

/// NVMe queue identifiers are 16 bits: at most 65,536 submission queues. `host.queues` up to
/// that is accepted, one more refused naming the field and its line.
#[test]
fn more_submission_queues_than_nvme_numbers_are_refused_naming_the_field() {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.host.queues = 65_536;
    assert_eq!(spec.validate(), Ok(()));
    spec.host.queues = 65_537;
    let text = spec.to_toml();
    let e = SsdSpec::parse(&text, Path::new("q.toml")).unwrap_err();
    assert_eq!(e.field, "host.queues");
    let line = text.lines().position(|l| l.starts_with("queues")).unwrap() + 1;
    assert_eq!(e.line(), Some(line), "{e}");
}

/// Slots are numbered in a `u32` with `u32::MAX` meaning "no unit": a drive of up to
/// `MAX_UNITS` (2^32 - 2) mapping units is accepted, a larger one refused naming
/// `flash.blocks_per_plane`. One plane of 2^31 - 1 one-page blocks of two units is exactly
/// `MAX_UNITS`; one block more is over.
#[test]
fn a_drive_of_at_most_max_units_mapping_units_is_accepted_one_block_more_refused() {
    use elevator_sim::ssd::spec::MAX_UNITS;
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.flash.channels = 1;
    spec.flash.chips_per_channel = 1;
    spec.flash.dies_per_chip = 1;
    spec.flash.planes_per_die = 1;
    spec.flash.pages_per_block = 1;
    spec.flash.page_bytes = 8192;
    spec.flash.blocks_per_plane = (1 << 31) - 1;
    assert_eq!(spec.physical_units(), MAX_UNITS);
    assert_eq!(spec.validate(), Ok(()));
    spec.flash.blocks_per_plane += 1;
    let e = spec.validate().unwrap_err();
    assert_eq!(e.field, "flash.blocks_per_plane", "{e}");
}

/// A mapping unit is a multiple of 512 bytes up to 1 MiB (`ftl.unit_bytes`): 1 MiB (in pages
/// of 1 MiB) is accepted, 1 MiB and one sector more refused naming the field.
#[test]
fn a_mapping_unit_of_up_to_1_mib_is_accepted_one_sector_more_refused() {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.flash.page_bytes = 1 << 20;
    spec.ftl.unit_bytes = 1 << 20;
    assert_eq!(spec.validate(), Ok(()));
    spec.ftl.unit_bytes = (1 << 20) + 512;
    spec.flash.page_bytes = spec.ftl.unit_bytes;
    let e = spec.validate().unwrap_err();
    assert_eq!(e.field, "ftl.unit_bytes", "{e}");
}

/// `gc.hard_threshold` (MQSim's `GC_Hard_Threshold`, the free blocks below which GC is
/// urgent) is a fraction no larger than `gc.threshold` (where GC starts): equal is accepted,
/// above it refused naming the field, as is a value that is not a number.
#[test]
fn a_hard_threshold_above_the_gc_threshold_is_refused_naming_the_field() {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.gc.hard_threshold = spec.gc.threshold;
    assert_eq!(spec.validate(), Ok(()));
    for bad in [spec.gc.threshold + 0.001, f64::NAN, -0.001] {
        spec.gc.hard_threshold = bad;
        let e = spec.validate().unwrap_err();
        assert_eq!(e.field, "gc.hard_threshold", "{bad}: {e}");
    }
}

#[test]
fn reads_and_writes_complete_after_submission_and_reads_pay_the_flash() {
    let spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    let mut ssd = Ssd::with_precondition(spec.clone(), Precondition::Steady).unwrap();
    let now = Nanos::from_us(5);
    let r = ssd.submit(&rq(1, 1).sector(8 * 1000).at(now).build(), now);
    assert!(r.done > now + Nanos::from_us(spec.flash.small_read_us as u64));
    let w = ssd.submit(&rq(2, 1).sync_write().sector(8 * 77).at(now).build(), now);
    assert!(w.done >= now);
    // Reading what is still in the write buffer does not touch flash.
    let r2 = ssd.submit(&rq(3, 1).sector(8 * 77).at(now).build(), now);
    assert!(r2.cache_hit);
    assert!(r2.done < r.done);
}

#[test]
fn a_read_goes_before_queued_programs_and_suspends_one_only_when_the_spec_lets_it() {
    use elevator_sim::ssd::flash::{Flash, Origin};
    use elevator_sim::ssd::Suspend;
    // Five programs queued on plane 0 (about 3 ms of work); a 4 KiB read of that plane ready
    // 100 us in. Returns the read's completion and the end of a program placed after it.
    let run = |suspend: Suspend| {
        let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
        spec.flash.suspend = suspend;
        let mut flash = Flash::new(&spec);
        let mut last = Nanos::ZERO;
        for _ in 0..5 {
            last = flash.program(0, 16384, Nanos::ZERO, Origin::Host);
        }
        let read = flash.read(0, 0, 4096, Nanos::from_us(100), Origin::Host);
        let after = flash.program(0, 16384, Nanos::ZERO, Origin::Host);
        (last, read, after)
    };
    let (queued, read, after) = run(Suspend::Erase);
    let program = queued.as_ns() / 5;
    // Without program suspension the read waits for the program under way, not the queue ...
    assert!(
        read.as_ns() > program && read.as_ns() < program + 60_000,
        "{read:?}"
    );
    // ... and the plane time it takes is not lost: the next program ends that much later.
    let taken = after.as_ns() - queued.as_ns() - program;
    assert!((30_000..60_000).contains(&taken), "{taken} ns");
    // With program suspension it waits the suspend time (100 us) instead.
    let (_, read, _) = run(Suspend::Program);
    assert!(read.as_ns() > 200_000 && read.as_ns() < 260_000, "{read:?}");
}

/// A write covering parts of two mapping units holds its data's bytes of write-buffer room,
/// not two whole units (MQSim's `Data_Cache_Manager_Flash_Advanced::write_to_destage_buffer`
/// counts the sectors written against its back-pressure depth). The 980 PRO with a buffer of
/// two pages (32 KiB): eight 4 KiB writes, each starting 2 KiB into a unit (so over two
/// units, as most of MQSim's tpcc trace's 8 KiB writes lie over two of its 8 KiB pages), are
/// 32 KiB of data and all fit; the ninth waits for a program (600 us). Charged two whole
/// units each (before 2026-11-29), the fifth already waited.
#[test]
fn a_write_over_parts_of_two_units_takes_its_bytes_of_buffer_room() {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.write_buffer.bytes = 2 * u64::from(spec.flash.page_bytes);
    spec.host.front_end_slots = 0;
    let mut ssd = Ssd::with_precondition(spec, Precondition::Steady).unwrap();
    let t = Nanos::ZERO;
    let done: Vec<Nanos> = (0..9u64)
        .map(|i| {
            let r = rq(i, 2)
                .sync_write()
                .sector(8 * (1000 + 2 * i) + 4)
                .sectors(8)
                .at(t)
                .build();
            ssd.submit(&r, t).done
        })
        .collect();
    for (i, d) in done[..8].iter().enumerate() {
        assert!(*d < Nanos::from_us(100), "write {i}: {d:?} ({done:?})");
    }
    assert!(done[8] > Nanos::from_us(600), "{done:?}");
}

/// MQSim's default drive as docs/ssd-xcheck/mqsim-default.toml gives it.
fn mqsim_default() -> SsdSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/ssd-xcheck/mqsim-default.toml");
    SsdSpec::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// An 8 KiB write of mapping unit `lpn` (MQSim's page) at `t`; its completion.
fn write_unit(ssd: &mut Ssd, id: u64, lpn: u64, t: Nanos) -> Nanos {
    let r = rq(id, 0)
        .sync_write()
        .sector(16 * lpn)
        .sectors(16)
        .at(t)
        .build();
    ssd.submit(&r, t).done
}

#[test]
fn a_unit_written_again_while_the_hot_filter_holds_it_stays_in_dram() {
    // MQSim's write_to_destage_buffer: a unit already in its bloom filter is hot and is not
    // written back; the filter is emptied by the first write past its milestone (0 at the
    // start, then a bloom_filter_reset_step of 1 s after the write that emptied it).
    let spec = mqsim_default();
    assert_eq!(spec.write_buffer.hot_filter_us, 1e6);
    let mut ssd = Ssd::new(spec.clone()).unwrap();
    let us = Nanos::from_us;
    let programs = |ssd: &Ssd| ssd.stats().host_programs;
    write_unit(&mut ssd, 0, 7, us(1)); // cold; then past milestone 0: the filter is emptied
    assert_eq!(programs(&ssd), 1);
    write_unit(&mut ssd, 1, 7, us(2)); // cold again (the filter was emptied after the first)
    assert_eq!(programs(&ssd), 2);
    write_unit(&mut ssd, 2, 7, us(3)); // hot: stays in DRAM
    assert_eq!(programs(&ssd), 2);
    // A read of it long after its last program is served from DRAM, not flash.
    let flash_reads = ssd.stats().flash_reads;
    let r = rq(3, 0)
        .read()
        .sector(16 * 7)
        .sectors(16)
        .at(us(50_000))
        .build();
    ssd.submit(&r, us(50_000));
    assert_eq!(ssd.stats().flash_reads, flash_reads);
    write_unit(&mut ssd, 4, 7, us(1_500_000)); // hot still; past the milestone: emptied
    assert_eq!(programs(&ssd), 2);
    write_unit(&mut ssd, 5, 7, us(1_600_000)); // cold: written back
    assert_eq!(programs(&ssd), 3);
    let r = rq(6, 0)
        .read()
        .sector(16 * 7)
        .sectors(16)
        .at(us(2_000_000))
        .build();
    ssd.submit(&r, us(2_000_000));
    assert_eq!(ssd.stats().flash_reads, flash_reads + 1);

    // Off (the default), every write is programmed.
    let mut off = spec;
    off.write_buffer.hot_filter_us = 0.0;
    let mut ssd = Ssd::new(off).unwrap();
    for i in 0..3 {
        write_unit(&mut ssd, i, 7, us(1 + i));
    }
    assert_eq!(programs(&ssd), 3);
}

#[test]
fn programs_of_two_planes_of_a_die_at_the_same_page_go_as_one_when_the_second_is_queued() {
    // MQSim's TSU_Base::issue_command_to_chip: for the die of the command it issues, one
    // ready transaction per plane at the same page, as one multi-plane command. One chip of
    // 2 dies x 2 planes; CWDP puts LPN n on die n % 2, plane (n / 2) % 2.
    let mut spec = mqsim_default();
    spec.flash.channels = 1;
    spec.flash.chips_per_channel = 1;
    spec.write_buffer.hot_filter_us = 0.0;
    spec.ftl.cmt_entries = 0; // every mapping entry cached: no translation reads
    let us = Nanos::from_us;
    let drained = |spec: &SsdSpec, lpns: &[u64]| {
        let mut ssd = Ssd::new(spec.clone()).unwrap();
        for (i, &lpn) in lpns.iter().enumerate() {
            write_unit(&mut ssd, i as u64, lpn, Nanos::ZERO);
        }
        let mut flush = rq(99, 0).at(us(1)).build();
        flush.op = Op::Flush;
        (
            ssd.submit(&flush, us(1)).done,
            ssd.stats().multi_plane_joins,
        )
    };
    // LPN 1 (die 1) holds the chip; LPN 0 (die 0, plane 0, page 0) queues behind it and
    // LPN 2 (die 0, plane 1, page 0) joins it: two programs' time.
    let (joined, joins) = drained(&spec, &[1, 0, 2]);
    assert_eq!(joins, 1);
    // LPN 4 is die 0's plane 0 again (page 1): three programs' time.
    let (same_plane, none) = drained(&spec, &[1, 0, 4]);
    assert_eq!(none, 0);
    // LPN 3 is die 1, plane 1, page 0: its partner (LPN 1) is under way, so it waits.
    let (started, none_either) = drained(&spec, &[1, 0, 3]);
    assert_eq!(none_either, 0);
    // A program holds the chip for its transfer (25 us) and tPROG (750 us).
    let programs = |n: u64| Nanos::from_us(775 * n);
    assert!(joined < programs(2) + us(100), "{joined:?}");
    assert!(same_plane > programs(3), "{same_plane:?}");
    assert!(started > programs(3), "{started:?}");
    // Without the chip's planes (`serial_planes = 1`, `serial_dies = 1`) there is no joining.
    spec.flash.serial_dies = 1;
    spec.flash.serial_planes = 1;
    assert_eq!(drained(&spec, &[1, 0, 2]).1, 0);
}

/// The built-in 980 PRO with `[housekeeping]` stalls of `stall_us` every `every_bytes` host
/// bytes beyond a background drain of `drain_mb_s`.
fn housekeeping_980pro(every_bytes: u64, stall_us: f64, drain_mb_s: f64) -> SsdSpec {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.housekeeping = elevator_sim::ssd::spec::Housekeeping {
        every_bytes,
        stall_us,
        drain_mb_s,
    };
    spec
}

/// A 4 KiB read of unit `lpn` at `t`; its completion.
fn read_unit(ssd: &mut Ssd, id: u64, lpn: u64, t: Nanos) -> Nanos {
    ssd.submit(&rq(id, 1).sector(8 * lpn).at(t).build(), t).done
}

/// A 4 KiB write of unit `lpn` at `t` from context 0; its completion.
fn write_4k(ssd: &mut Ssd, id: u64, lpn: u64, t: Nanos) -> Nanos {
    let r = rq(id, 0).sync_write().sector(8 * lpn).at(t).build();
    ssd.submit(&r, t).done
}

#[test]
fn a_housekeeping_stall_holds_the_drives_reads_and_writes_until_it_ends() {
    // Stalls of 5 ms every 8 KiB written (no drain): the second 4 KiB write starts one at its
    // admission and is acknowledged at its end; a read and a write arriving in it wait for its
    // end; a read after it is served at once.
    let spec = housekeeping_980pro(8192, 5000.0, 0.0);
    let mut ssd = Ssd::with_precondition(spec.clone(), Precondition::Steady).unwrap();
    let mut plain = Ssd::with_precondition(
        SsdSpec::builtin("samsung-980pro-1tb").unwrap(),
        Precondition::Steady,
    )
    .unwrap();
    let t0 = Nanos::from_us(10);
    let w1 = write_4k(&mut ssd, 1, 100, t0);
    assert_eq!(
        w1,
        write_4k(&mut plain, 1, 100, t0),
        "4 KiB counted: no stall yet"
    );
    let w2 = write_4k(&mut ssd, 2, 200, t0);
    let admitted = write_4k(&mut plain, 2, 200, t0);
    assert_eq!(
        w2,
        admitted + Nanos::from_us(5000),
        "the write that starts it waits it out"
    );
    assert_eq!(ssd.stats().stalls, 1);
    let during = admitted + Nanos::from_us(1000);
    let r = read_unit(&mut ssd, 3, 5_000_000, during);
    assert!(
        r > admitted + Nanos::from_us(5000),
        "a read in the stall: {r:?}"
    );
    assert!(
        r < admitted + Nanos::from_us(5000 + 200),
        "then served as usual: {r:?}"
    );
    let w3 = write_4k(&mut ssd, 4, 300, during);
    assert!(
        w3 >= admitted + Nanos::from_us(5000),
        "a write in the stall: {w3:?}"
    );
    // 4 KiB counted since: no second stall; a read well after is not held.
    let after = admitted + Nanos::from_us(20_000);
    let alone = read_unit(&mut plain, 3, 7_000_000, after);
    assert_eq!(read_unit(&mut ssd, 5, 7_000_000, after), alone);
    assert_eq!(ssd.stats().stalls, 1);
}

#[test]
fn housekeeping_never_stalls_reads_alone_nor_writes_within_the_drain() {
    // Reads never count (ssd.rs `Stalls::written` is called from the write path only): the
    // same completions with and without stalls, run after run.
    let on = housekeeping_980pro(4096, 5000.0, 0.0);
    let off = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    let run = |spec: &SsdSpec| {
        let mut ssd = Ssd::with_precondition(spec.clone(), Precondition::Steady).unwrap();
        let done: Vec<Nanos> = (0..2000u64)
            .map(|i| read_unit(&mut ssd, i, (i * 7919) % 1_000_000, Nanos::from_us(20 * i)))
            .collect();
        (done, ssd.stats().stalls)
    };
    let (with, stalls) = run(&on);
    assert_eq!(stalls, 0);
    assert_eq!(with, run(&off).0);
    assert_eq!(with, run(&on).0, "deterministic");
    // 4 KiB every 100 us is 41 MB/s: within a 50 MB/s drain nothing accumulates to 64 KiB;
    // without the drain 16 writes do.
    let writes = |drain: f64| {
        let mut ssd = Ssd::with_precondition(
            housekeeping_980pro(65536, 5000.0, drain),
            Precondition::Steady,
        )
        .unwrap();
        for i in 0..200u64 {
            write_4k(&mut ssd, i, i * 13, Nanos::from_us(100 * i));
        }
        ssd.stats().stalls
    };
    assert_eq!(writes(50.0), 0);
    assert_eq!(writes(0.0), 200 / 16);
    // Without `[housekeeping]` (`every_bytes` 0, `Stalls::on` false) no write is counted at
    // all: 200 writes, no stall.
    let mut plain = Ssd::with_precondition(off, Precondition::Steady).unwrap();
    for i in 0..200u64 {
        write_4k(&mut plain, i, i * 13, Nanos::from_us(100 * i));
    }
    assert_eq!(plain.stats().stalls, 0);
}

/// With a cached mapping table (`ftl.cmt_entries` > 0) a read whose entry misses first reads
/// its translation page, which holds `page_bytes / 4` entries (MQSim's
/// `Address_Mapping_Unit_Page_Level::get_MVPN`: LPN / entries per translation page) and lives
/// on plane `page mod planes`, at page `page / planes` of it (ssd/cmt.rs's fixed places). So
/// the miss costs that page's read: its sensing time by page type (`read_step_us` per type
/// past the first) and its 16 KiB over the channel, before the data read starts.
#[test]
fn a_cmt_miss_reads_the_entrys_translation_page_at_its_place_before_the_data() {
    let spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    let planes = spec.planes();
    let per_page = u64::from(spec.flash.page_bytes / 4);
    let read = |cmt_entries: u32, lpn: u64| {
        let mut spec = spec.clone();
        spec.ftl.cmt_entries = cmt_entries;
        let mut ssd = Ssd::with_precondition(spec, Precondition::Steady).unwrap();
        let done = read_unit(&mut ssd, 1, lpn, Nanos::ZERO);
        assert_eq!(ssd.stats().cmt_misses, u64::from(cmt_entries > 0));
        done
    };
    // 16 KiB over the 1200 MB/s channel: 833 ps a byte.
    let xfer = (16384 * 833u64).div_ceil(1000);
    let sense = |page: u64| 91_000 + 7_000 * (page % 3);
    // Translation pages 0, `planes` and `2 * planes`: pages 0, 1 and 2 of plane 0, one of
    // each type.
    for page in 0..3 {
        let lpn = page * planes * per_page;
        let miss = read(64, lpn) - read(0, lpn);
        assert_eq!(
            miss.as_ns(),
            sense(page) + xfer,
            "translation page {page} of plane 0"
        );
    }
}

#[test]
fn a_bad_housekeeping_field_is_named() {
    let text = housekeeping_980pro(1 << 20, 1000.0, 300.0).to_toml();
    assert!(text.contains("[housekeeping]"), "{text}");
    assert_eq!(
        SsdSpec::parse(&text, Path::new("h.toml"))
            .unwrap()
            .housekeeping
            .every_bytes,
        1 << 20
    );
    let zero = text.replace("stall_us = 1000.0", "stall_us = 0.0");
    assert_ne!(zero, text);
    let e = SsdSpec::parse(&zero, Path::new("h.toml")).unwrap_err();
    assert_eq!(e.field, "housekeeping.stall_us");
    let line = zero
        .lines()
        .position(|l| l.starts_with("stall_us"))
        .unwrap()
        + 1;
    assert_eq!(e.line(), Some(line), "{e}");
    let drain = text.replace("drain_mb_s = 300.0", "drain_mb_s = -1.0");
    let e = SsdSpec::parse(&drain, Path::new("h.toml")).unwrap_err();
    assert_eq!(e.field, "housekeeping.drain_mb_s");
    let unknown = text.replace("[housekeeping]", "[housekeeping]\nevery_ms = 3");
    let e = SsdSpec::parse(&unknown, Path::new("h.toml")).unwrap_err();
    assert_eq!(e.field, "housekeeping.every_ms");
    // Off by default: the built-in specs have no such section.
    let plain = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    assert!(plain.housekeeping.is_off() && !plain.to_toml().contains("housekeeping"));
}

/// A dirty mapping entry evicted from the CMT is written back by programming its translation
/// page at that page's place, plane = translation page mod planes (the module's fixed
/// placement; MQSim writes the evicted entry's MVPN back). With one cached entry, a 4 KiB
/// write of a unit of translation page 65 (plane 1, page 2 of the 980 PRO's 32 planes) makes
/// its entry dirty; a read of unit 0 long after evicts it, so plane 1 starts a program. A
/// read 20 us later that misses translation page 1 (plane 1) waits for that program; one that
/// misses translation page 2 (plane 2) does not. Each is measured against the same sequence
/// with a read in place of the write (a clean entry: no write-back).
#[test]
fn a_dirty_cmt_entry_evicted_programs_its_translation_page_on_its_plane() {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.ftl.cmt_entries = 1;
    let planes = spec.planes();
    assert_eq!(planes, 32);
    let per_page = u64::from(spec.flash.page_bytes / 4);
    let written = (2 * planes + 1) * per_page;
    let evict_at = Nanos::from_ms(10);
    let probe_at = evict_at + Nanos::from_us(20);
    // The latency of a read of the first unit of translation page `probe`, after the entry
    // of `written` was made dirty (or only read) and evicted.
    let probe = |dirty: bool, probe: u64| {
        let mut ssd = Ssd::with_precondition(spec.clone(), Precondition::Steady).unwrap();
        if dirty {
            write_4k(&mut ssd, 1, written, Nanos::ZERO);
        } else {
            read_unit(&mut ssd, 1, written, Nanos::ZERO);
        }
        read_unit(&mut ssd, 2, 0, evict_at);
        (read_unit(&mut ssd, 3, probe * per_page, probe_at) - probe_at).as_ns() as i64
    };
    let program_ns = (spec.flash.program_us * 1000.0) as i64;
    let on_plane_1 = probe(true, 1) - probe(false, 1);
    assert!(
        on_plane_1 > program_ns / 2,
        "plane 1's read waited {on_plane_1} ns more for the write-back"
    );
    assert_eq!(
        probe(true, 2),
        probe(false, 2),
        "plane 2 has no write-back to wait for"
    );
}

/// With the hot/cold filter on, a write takes room in the write buffer for the bytes of its
/// cold units only, each unit's share of the write's sectors (MQSim's
/// `write_to_destage_buffer` counts the sectors it writes back), and a hot unit none. MQSim's
/// default drive without its DRAM rate (`write_buffer.mb_s = 0`): 1 MiB of buffer, 128 units
/// of 8 KiB. After a first write (which empties the filter) and 126 more whole units, the
/// buffer holds 127 units; a hot rewrite takes no room, two half-unit writes of cold units
/// fill it exactly, and a third waits for the first program (750 us of tPROG) to free room.
#[test]
fn with_the_hot_filter_on_a_write_takes_buffer_room_for_its_cold_sectors_only() {
    let mut spec = mqsim_default();
    spec.write_buffer.mb_s = 0.0;
    assert_eq!(spec.write_buffer.bytes, 128 * 8192);
    let mut ssd = Ssd::new(spec).unwrap();
    let us = Nanos::from_us;
    let half_unit = |ssd: &mut Ssd, id: u64, lpn: u64| {
        let r = rq(id, 0)
            .sync_write()
            .sector(16 * lpn)
            .sectors(8)
            .at(us(2))
            .build();
        ssd.submit(&r, us(2)).done
    };
    write_unit(&mut ssd, 0, 1000, us(1));
    let mut last = Nanos::ZERO;
    for lpn in 1..=126 {
        last = write_unit(&mut ssd, lpn, lpn, us(2));
    }
    assert!(last < us(500), "127 units fit: {last:?}");
    let hot = write_unit(&mut ssd, 200, 1, us(2));
    let fills = [half_unit(&mut ssd, 201, 500), half_unit(&mut ssd, 202, 501)];
    assert!(
        hot < us(500) && fills.iter().all(|&t| t < us(500)),
        "a hot unit and two halves fit: {hot:?} {fills:?}"
    );
    let over = half_unit(&mut ssd, 203, 502);
    assert!(over > us(750), "the buffer is full: {over:?}");
}

/// A read's sensing time is its flash page's (by the page's type, its index in the block mod
/// `flash.page_types`), whichever of the page's mapping units it reads. On the preconditioned
/// 980 PRO (16 KiB pages of four 4 KiB units, TLC: 91, 98 and 105 us), units 0 to 3 are page
/// 0 of plane 0's first block and units 4 x 32 planes to that + 3 its page 1: a 4 KiB read of
/// each of the four units of a page takes the same time, and page 1's reads 7 us more than
/// page 0's.
#[test]
fn every_unit_of_a_flash_page_reads_in_that_pages_sensing_time() {
    let spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    let units_per_page = u64::from(spec.flash.page_bytes / spec.ftl.unit_bytes);
    assert_eq!(units_per_page, 4);
    let first_of_page_1 = units_per_page * spec.planes();
    let latency = |lpn: u64| {
        let mut ssd = Ssd::with_precondition(spec.clone(), Precondition::Steady).unwrap();
        read_unit(&mut ssd, 1, lpn, Nanos::ZERO).as_ns()
    };
    for (page, first) in [(0, 0), (1, first_of_page_1)] {
        let times: Vec<u64> = (first..first + units_per_page).map(latency).collect();
        assert!(
            times.iter().all(|&t| t == times[0]),
            "page {page}'s units: {times:?}"
        );
    }
    assert_eq!(latency(first_of_page_1) - latency(0), 7_000);
}

/// At most `MAX_PLANES` (2^16) flash planes (channels x chips x dies x planes): a drive of
/// exactly that many is accepted, one of more refused naming `flash.planes_per_die`. 256
/// channels of 16 chips of 4 dies of 4 planes, 400 blocks of 32 pages a plane (3.4 x 10^9
/// mapping units, under `MAX_UNITS`; 7% of 400 blocks spare, enough for GC's reserve).
#[test]
fn a_drive_of_at_most_max_planes_planes_is_accepted_one_channel_more_refused() {
    use elevator_sim::ssd::spec::MAX_PLANES;
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.flash.channels = 256;
    spec.flash.chips_per_channel = 16;
    spec.flash.dies_per_chip = 4;
    spec.flash.planes_per_die = 4;
    spec.flash.blocks_per_plane = 400;
    spec.flash.pages_per_block = 32;
    assert_eq!(spec.planes(), MAX_PLANES);
    assert_eq!(spec.validate(), Ok(()));
    spec.flash.channels += 1;
    let e = spec.validate().unwrap_err();
    assert_eq!(e.field, "flash.planes_per_die", "{e}");
}
