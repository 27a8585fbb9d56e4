//! The controllers' common entry points: [`validate`]'s ranges (the kernel's cgroup files
//! refuse the same values) and [`chain`]'s order (`blk_throtl_bio` in `submit_bio_noacct`
//! before the rq_qos list, on which `rq_qos_add` puts io.cost ahead of io.latency).

use super::*;
use crate::group::{IoCostDevice, IoMax, IoSettings};
use crate::request::GroupId;
use crate::time::Nanos;

/// A tree with `/a` set to `io`.
fn with_a(io: IoSettings) -> GroupTree {
    let mut t = GroupTree::new();
    let a = t.add("/a", None).unwrap();
    t.set_io(a, io);
    t
}

fn refused(t: &GroupTree) -> (String, &'static str) {
    let e = validate(t).expect_err("refused");
    (e.group, e.field)
}

/// `io.weight` takes 1..=10000 (`CGROUP_WEIGHT_MIN`, `CGROUP_WEIGHT_MAX` in
/// `ioc_weight_write`), `io.bfq.weight` 1..=1000 (`bfq_io_set_weight`), `io.latency` a target
/// above 0 (`iolatency_set_limit` takes 0 as removing it; here a group without a target has
/// none), and `io.max` is not offered on the root (`CFTYPE_NOT_ON_ROOT`).
#[test]
fn validate_refuses_what_the_kernels_io_files_refuse_and_names_the_file() {
    let w = |weight| IoSettings {
        weight: Some(weight),
        ..Default::default()
    };
    let bw = |weight| IoSettings {
        bfq_weight: Some(weight),
        ..Default::default()
    };
    // A tree with nothing set, and groups at every bound, pass.
    assert_eq!(validate(&GroupTree::new()), Ok(()));
    assert_eq!(validate(&with_a(IoSettings::default())), Ok(()));
    for ok in [w(1), w(10_000), bw(1), bw(1000)] {
        assert_eq!(validate(&with_a(ok)), Ok(()));
    }
    let target = IoSettings {
        latency_target: Some(Nanos::from_ms(5)),
        max: IoMax {
            rbps: Some(1 << 20),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(validate(&with_a(target)), Ok(()));
    // Past either bound, the group and the file are named.
    for (bad, field) in [
        (w(0), "io.weight"),
        (w(10_001), "io.weight"),
        (bw(0), "io.bfq.weight"),
        (bw(1001), "io.bfq.weight"),
        (
            IoSettings {
                latency_target: Some(Nanos::ZERO),
                ..Default::default()
            },
            "io.latency",
        ),
    ] {
        assert_eq!(refused(&with_a(bad)), ("/a".to_string(), field));
    }
    let mut root = GroupTree::new();
    root.io_mut(GroupId::ROOT).max.wiops = Some(10);
    assert_eq!(refused(&root), ("/".to_string(), "io.max"));
    // The device's io.cost lines are checked too (`ioc_qos_write`: min above max).
    let mut cost = GroupTree::new();
    cost.set_io_cost(IoCostDevice {
        model: None,
        qos: Some("min=90 max=80".into()),
    });
    assert_eq!(refused(&cost), ("/".to_string(), "io.cost.qos"));
}

/// The error reads as the group, the file and the reason, for the CLI to put after the
/// scenario's file and line.
#[test]
fn a_refused_setting_prints_its_group_file_and_reason() {
    let e = validate(&with_a(IoSettings {
        weight: Some(0),
        ..Default::default()
    }))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "group \"/a\": io.weight: 0 is not in 1..=10000"
    );
}

/// `chain` installs only the controllers some group asks for, in the kernel's order:
/// blk-throttle (`blk_throtl_bio`, called from `submit_bio_noacct`) ahead of the rq_qos
/// list, where io.cost (`blk_iocost_init`, at its files' first write) sits ahead of
/// io.latency (`blk_iolatency_init`, at the disk's setup) since `rq_qos_add` adds at the head.
#[test]
fn chain_installs_the_controllers_asked_for_in_the_kernels_order() {
    let dev = QosDevice::default();
    assert!(chain(&GroupTree::new(), &dev).is_empty());
    let latency_only = with_a(IoSettings {
        latency_target: Some(Nanos::from_ms(5)),
        ..Default::default()
    });
    assert_eq!(chain(&latency_only, &dev).names(), vec!["io.latency"]);
    let mut all = GroupTree::new();
    let a = all.add("/a", None).unwrap();
    let b = all.add("/b", None).unwrap();
    let c = all.add("/c", None).unwrap();
    all.io_mut(a).max.rbps = Some(1 << 20);
    all.io_mut(b).weight = Some(200);
    all.io_mut(c).latency_target = Some(Nanos::from_ms(5));
    assert_eq!(
        chain(&all, &dev).names(),
        vec!["io.max", "io.cost", "io.latency"]
    );
}
