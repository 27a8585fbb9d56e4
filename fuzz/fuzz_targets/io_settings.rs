//! The cgroup v2 io settings on arbitrary text, through every way in: an `io.max` line
//! (`IoMax::parse`); the device's `io.cost.model` and `io.cost.qos` lines (the input's first
//! and second lines, checked by `qos::validate`, the chain then built); a scenario's
//! `[[group]]` `io_max`, `io_weight`, `io_bfq_weight`, `io_latency_us`, `io_cost_model` and
//! `io_cost_qos`, an accepted scenario run for 20 ms of simulated time under mq-deadline and
//! bfq; and a fio job's `elevator_io_*` options. A value or an error, never a panic, and an
//! accepted scenario never runs past its cap.
#![no_main]

use elevator_core::group::{GroupTree, IoCostDevice, IoMax};
use elevator_core::qos::{chain, validate, QosDevice};
use elevator_core::Nanos;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = IoMax::parse(text);
    let mut lines = text.lines();
    let (first, second) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));

    // The device's io.cost lines on a tree with one weighted, limited group.
    let mut tree = GroupTree::new();
    if let Ok(id) = tree.add("/a", None) {
        let io = tree.io_mut(id);
        io.weight = Some(100);
        io.max = IoMax::parse(first).unwrap_or_default();
    }
    tree.set_io_cost(IoCostDevice {
        model: Some(first.to_string()),
        qos: Some(second.to_string()),
    });
    if validate(&tree).is_ok() {
        let _ = chain(&tree, &QosDevice::default());
    }

    // A scenario's group keys, each line's text as a TOML string and the numbers as written.
    let quoted = |s: &str| format!("{:?}", s);
    let number = |s: &str| {
        let s = s.trim();
        if s.is_empty() || s.contains(['\n', '"', '[', ']', '=', '#']) {
            "1".to_string()
        } else {
            s.to_string()
        }
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let w = |i: usize| words.get(i).copied().unwrap_or("1");
    let scenario = format!(
        "drive = \"laptop-4200\"\nduration_s = 0.02\nio_cost_model = {}\nio_cost_qos = {}\n\n\
         [[group]]\npath = \"/a\"\nio_max = {}\nio_weight = {}\nio_bfq_weight = {}\n\
         io_latency_us = {}\n\n[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\ngroup = \"/a\"\n",
        quoted(first),
        quoted(second),
        quoted(first),
        number(w(0)),
        number(w(1)),
        number(w(2)),
    );
    if let Ok(s) = elevator_sim::scenario::Scenario::parse(&scenario, "fuzz.toml", None) {
        let cap = Nanos::from_ms(20);
        for name in ["mq-deadline", "bfq"] {
            let Ok(sched) = s.scheduler(name, &Default::default()) else {
                continue;
            };
            let Ok(sim) = s.simulation(sched, None) else {
                continue;
            };
            let report = sim.run(Some(cap));
            assert!(report.end <= cap, "{name} ran to {} past {cap}", report.end);
        }
    }

    // A fio job's options.
    let job = format!(
        "[j]\nrw=randread\nbs=4k\nsize=1m\nelevator_io_max={}\nelevator_io_latency_us={}\n\
         elevator_io_weight={}\nelevator_io_bfq_weight={}\n",
        first.replace(['\r', '\n'], " "),
        w(0),
        w(1),
        w(2)
    );
    let _ =
        elevator_workload::fio_file::parse_bytes(std::path::Path::new("fuzz.fio"), job.as_bytes());
});
