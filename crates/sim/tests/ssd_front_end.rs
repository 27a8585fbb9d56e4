//! The SSD controller's in-order front end (`host.front_end_slots`): reads wait for the writes
//! fetched before them that wait for write-buffer room, at most a slot count of them; off, or
//! with no writes, nothing changes.

use elevator_core::harness::rq;
use elevator_core::Nanos;
use elevator_sim::ssd::{Precondition, Ssd, SsdSpec};
use elevator_sim::{Device, DriveModel};
use std::path::Path;

/// The 980 PRO with a write buffer of two pages (8 units), so writes soon wait for programs,
/// and `slots` front-end slots.
fn drive(slots: u32) -> Ssd {
    let mut spec = SsdSpec::builtin("samsung-980pro-1tb").unwrap();
    spec.write_buffer.bytes = 2 * u64::from(spec.flash.page_bytes);
    spec.host.front_end_slots = slots;
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

#[test]
fn too_many_slots_is_refused_naming_the_field() {
    let text = SsdSpec::builtin("samsung-980pro-1tb")
        .unwrap()
        .to_toml()
        .replace("front_end_slots = 128", "front_end_slots = 2000000");
    let e = DriveModel::parse(&text, Path::new("y.toml")).unwrap_err();
    assert_eq!(e.field, "host.front_end_slots");
}
