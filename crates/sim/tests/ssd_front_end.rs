//! The SSD controller's in-order front end (`host.front_end_slots`, `host.front_end_servers`):
//! reads wait for the writes fetched before them that wait for write-buffer room, at most a
//! slot count of them, less the writes the other servers hold; off, or with no writes,
//! nothing changes.

use elevator_core::harness::rq;
use elevator_core::Nanos;
use elevator_sim::ssd::{FrontEndScope, Precondition, Ssd, SsdSpec};
use elevator_sim::{Device, DriveModel};
use std::path::Path;

/// The 980 PRO with a write buffer of two pages (8 units), so writes soon wait for programs,
/// `slots` front-end slots and the front end's drive scope (a read waits for the writes of
/// every queue fetched before it; the built-in's scope is `queue`).
fn drive(slots: u32) -> Ssd {
    drive_served(slots, 1)
}

/// The same with `servers` front-end servers.
fn drive_served(slots: u32, servers: u32) -> Ssd {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.write_buffer.bytes = 2 * u64::from(spec.flash.page_bytes);
    spec.host.front_end_slots = slots;
    spec.host.front_end_servers = servers;
    spec.host.front_end_scope = FrontEndScope::Drive;
    Ssd::with_precondition(spec, Precondition::Steady).unwrap()
}

/// `n` 4 KiB writes from process 2 at time 0, then a read from process 1: the writes'
/// completions (their admissions to the buffer) and the read's.
fn writes_then_read(ssd: &mut Ssd, n: u64) -> (Vec<Nanos>, Nanos) {
    let t = Nanos::ZERO;
    let writes: Vec<Nanos> = (0..n)
        .map(|i| {
            ssd.submit(
                &rq(i, 2).sync_write().sector(8 * (1000 + i)).at(t).build(),
                t,
            )
            .done
        })
        .collect();
    let read = ssd
        .submit(&rq(n, 1).sector(8 * 5_000_000).at(t).build(), t)
        .done;
    (writes, read)
}

#[test]
fn without_the_stage_a_read_does_not_wait_for_writes_waiting_for_buffer_room() {
    let spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    // The generic default is off; the 980 PRO sets it.
    let text = spec.to_toml().replace("front_end_slots = 128\n", "");
    let parsed = DriveModel::parse(&text, Path::new("x.toml")).unwrap();
    assert_eq!(parsed.ssd().unwrap().host.front_end_slots, 0);
    assert_eq!(spec.host.front_end_slots, 128);

    let (writes, read) = writes_then_read(&mut drive(0), 40);
    // The ninth write finds the buffer's 8 units full and waits for a program (600 us).
    assert!(writes[8] > Nanos::from_us(600), "{:?}", writes[8]);
    assert!(read < Nanos::from_us(200), "{read:?}");
}

#[test]
fn with_the_stage_a_read_waits_for_the_writes_ahead_of_it_up_to_the_slots() {
    // Enough slots: the read waits for all 40 writes fetched before it.
    let (writes, read) = writes_then_read(&mut drive(64), 40);
    // Admitted in order, each past the buffer's 8 units once a program has made room.
    assert!(writes.windows(2).all(|w| w[0] <= w[1]));
    assert!(writes[8] > Nanos::from_us(600), "{:?}", writes[8]);
    assert!(read > writes[39], "{read:?} vs {:?}", writes[39]);
    // Four slots: it is fetched when the first write leaves the front end and waits behind the
    // three writes still in it, not behind the other 36.
    let (writes, read) = writes_then_read(&mut drive(4), 40);
    assert!(read > writes[3], "{read:?} vs {:?}", writes[3]);
    assert!(read < writes[39], "{read:?} vs {:?}", writes[39]);
}

#[test]
fn reads_alone_are_unchanged_by_the_stage() {
    let mut with = drive(128);
    let mut without = drive(0);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut t = Nanos::ZERO;
    for id in 0..5_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = rq(id, (x % 4) as u32)
            .sector((x % 200_000_000) * 8)
            .at(t)
            .build();
        let a = with.submit(&r, t).done;
        assert_eq!(a, without.submit(&r, t).done, "read {id}");
        t += Nanos(x % 20_000);
    }
}

/// At most 2^20 front-end slots: that many is accepted, one more refused naming the field.
#[test]
fn too_many_slots_is_refused_naming_the_field() {
    let text = SsdSpec::builtin("samsung-980pro-1tb")
        .unwrap()
        .to_toml()
        .replace("front_end_slots = 128", "front_end_slots = 2000000");
    let e = DriveModel::parse(&text, Path::new("y.toml")).unwrap_err();
    assert_eq!(e.field, "host.front_end_slots");
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.host.front_end_slots = 1 << 20;
    assert_eq!(spec.validate(), Ok(()));
    spec.host.front_end_slots += 1;
    assert_eq!(spec.validate().unwrap_err().field, "host.front_end_slots");
}

#[test]
fn one_server_is_the_default_and_zero_is_refused_naming_the_field() {
    let spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    assert_eq!(spec.host.front_end_servers, 1);
    let text = spec.to_toml();
    assert!(text.contains("front_end_servers = 1\n"), "{text}");
    let parsed = DriveModel::parse(
        &text.replace("front_end_servers = 1\n", ""),
        Path::new("z.toml"),
    );
    assert_eq!(parsed.unwrap().ssd().unwrap().host.front_end_servers, 1);
    let e = DriveModel::parse(
        &text.replace("front_end_servers = 1", "front_end_servers = 0"),
        Path::new("z.toml"),
    )
    .unwrap_err();
    assert_eq!(e.field, "host.front_end_servers");
}

#[test]
fn with_servers_a_read_waits_for_all_but_the_last_servers_minus_one_writes_ahead() {
    // 40 writes into a two-page buffer: all but the first 8 wait for programs. A read after
    // them, with 64 slots (all 40 writes ahead of it):
    for servers in [1usize, 2, 3, 8] {
        let (writes, read) = writes_then_read(&mut drive_served(64, servers as u32), 40);
        // It is handed over once write 40 - servers is admitted: no earlier, and it is served
        // beside the servers - 1 after it (a read takes about 70 us on the 980 PRO).
        let last = writes[40 - servers];
        assert!(read > last, "{servers}: {read:?} vs {last:?}");
        assert!(
            read < last + Nanos::from_us(200),
            "{servers}: {read:?} vs {last:?}"
        );
    }
}

#[test]
fn with_as_many_servers_as_writes_ahead_a_read_does_not_wait_for_them() {
    // One write waiting for room (the ninth of nine into a two-page buffer) and two servers:
    // the read goes beside it, as with no stage at all.
    let (writes, read) = writes_then_read(&mut drive_served(64, 2), 9);
    assert!(writes[8] > Nanos::from_us(600), "{:?}", writes[8]);
    let (_, alone) = writes_then_read(&mut drive(0), 9);
    assert_eq!(read, alone);
    // One server: it waits for that write.
    let (writes, read) = writes_then_read(&mut drive(64), 9);
    assert!(read > writes[8], "{read:?} vs {:?}", writes[8]);
}

#[test]
fn servers_shorten_the_reads_beside_a_writer_and_leave_reads_alone_as_they_were() {
    // A mixed stream (a third writes) from three processes: the reads' total latency is less
    // with 4 servers than with 1 (a read is handed over no later; where the flash places it
    // may move a single completion a little either way, so this is not checked per read or
    // per server added), and a read stream alone is the same with 1 server as with 4.
    let stream = |writes: bool| {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut t = Nanos::ZERO;
        (0..3_000u64)
            .map(|id| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let b = rq(id, (x % 3) as u32).sector((x % 50_000_000) * 8).at(t);
                let r = if writes && x.is_multiple_of(3) {
                    b.sync_write()
                } else {
                    b
                }
                .build();
                t += Nanos(x % 30_000);
                r
            })
            .collect::<Vec<_>>()
    };
    let read_time = |servers: u32, writes: bool| -> u64 {
        let mut d = drive_served(16, servers);
        stream(writes)
            .iter()
            .map(|r| {
                let done = d.submit(r, r.submitted).done;
                if r.op == elevator_core::Op::Read {
                    (done - r.submitted).0
                } else {
                    0
                }
            })
            .sum()
    };
    let mixed: Vec<u64> = [1, 4].map(|s| read_time(s, true)).to_vec();
    assert!(mixed[1] < mixed[0], "{mixed:?}");
    assert_eq!(read_time(1, false), read_time(4, false));
}

/// The same drive with the front end's `queue` scope (the built-in's).
fn drive_queue_scope(slots: u32) -> Ssd {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    assert_eq!(spec.host.front_end_scope, FrontEndScope::Queue);
    spec.write_buffer.bytes = 2 * u64::from(spec.flash.page_bytes);
    spec.host.front_end_slots = slots;
    Ssd::with_precondition(spec, Precondition::Steady).unwrap()
}

#[test]
fn with_the_queue_scope_a_read_of_another_queue_waits_for_a_slot_not_for_the_writes() {
    // The built-in 980 PRO states the queue scope (NVMe's and Linux's: the spec's comment);
    // `drive` parses, and is the default of a spec that does not say.
    let spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    assert_eq!(spec.host.front_end_scope, FrontEndScope::Queue);
    let text = spec.to_toml();
    assert!(text.contains("front_end_scope = \"queue\"\n"), "{text}");
    let parsed = DriveModel::parse(
        &text.replace("front_end_scope = \"queue\"", "front_end_scope = \"drive\""),
        Path::new("q.toml"),
    )
    .unwrap();
    assert_eq!(
        parsed.ssd().unwrap().host.front_end_scope,
        FrontEndScope::Drive
    );
    let parsed = DriveModel::parse(
        &text.replace("front_end_scope = \"queue\"\n", ""),
        Path::new("q.toml"),
    )
    .unwrap();
    assert_eq!(
        parsed.ssd().unwrap().host.front_end_scope,
        FrontEndScope::Drive
    );
    let e = DriveModel::parse(
        &text.replace("front_end_scope = \"queue\"", "front_end_scope = \"sq\""),
        Path::new("q.toml"),
    )
    .unwrap_err();
    assert!(e.field.ends_with("front_end_scope"), "{e:?}");
    assert!(e.at.is_some(), "{e:?}");

    // Process 2's 40 writes into a two-page buffer, then process 1's read (another NVMe
    // queue): with slots to spare it goes as if there were no stage, where the drive scope
    // holds it behind all 40; with 4 slots, all held, it is fetched when the first write
    // leaves (a slot) and is then served, no later than behind the three still there.
    let (_, alone) = writes_then_read(&mut drive(0), 40);
    let (writes, read) = writes_then_read(&mut drive_queue_scope(64), 40);
    assert_eq!(read, alone);
    let (_, behind_all) = writes_then_read(&mut drive(64), 40);
    assert!(
        behind_all > writes[39],
        "{behind_all:?} vs {:?}",
        writes[39]
    );
    let (writes, read) = writes_then_read(&mut drive_queue_scope(4), 40);
    let (_, behind_three) = writes_then_read(&mut drive(4), 40);
    assert!(read > writes[0], "{read:?} vs {:?}", writes[0]);
    assert!(read <= behind_three, "{read:?} vs {behind_three:?}");
    assert!(read < writes[39], "{read:?} vs {:?}", writes[39]);

    // A read of the writes' own queue (process 66: queue 66 mod 64 = 2) waits for all of
    // them, as with the drive scope.
    let mut ssd = drive_queue_scope(64);
    let (writes, _) = writes_then_read(&mut ssd, 40);
    let t = Nanos::ZERO;
    let own = ssd
        .submit(&rq(99, 66).sector(8 * 6_000_000).at(t).build(), t)
        .done;
    assert!(own > writes[39], "{own:?} vs {:?}", writes[39]);
}
