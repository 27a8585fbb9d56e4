//! Property harness of issue 17 over scenario and drive files with random numeric fields:
//! every number of a valid scenario (drive, seed, times, group weights, tunables, every job
//! kind's fields) and of a valid drive spec is kept or replaced by an extreme value (0, -1,
//! 2^32, 2^63 - 1, 1e300, 1e-300, nan, inf ...) or a random one. The file must be refused
//! with an error naming the file, or accepted; an accepted scenario is run under two
//! schedulers with its simulated time capped at 50 ms, and an accepted drive serves requests
//! all over its surface with finite, increasing completion times. Work is bounded by the
//! simulated time cap and by the bounded jobs of the template, so each case ends.

use std::path::Path;
use std::time::{Duration, Instant};

use elevator_core::{Nanos, Settings};
use elevator_sim::hdd::spec::DriveSpec;
use elevator_sim::hdd::Hdd;
use elevator_sim::scenario::Scenario;
use elevator_sim::Device;
use proptest::prelude::*;

/// A scenario touching every numeric field the loader and the jobs read.
const SCENARIO: &str = r#"drive = "laptop-4200"
seed = 7
duration_s = 0.05
wakeup_us = 10
write_cache = true

[[group]]
path = "/a"
weight = 300

[tunables.deadline]
read_expire = 500
fifo_batch = 16

[tunables.bfq]
slice_idle = 8

[[job]]
name = "cat"
kind = "dependent-reader"
group = "/a"
start_s = 0.001
files = 4
file_size = 65536
gap = 4096
request_max = 131072
request_initial = 16384
think_us = 100
file_think_us = 200
loops = 1
size_frac = 0.5

[[job]]
name = "w"
kind = "stream-writer"
foreground = false
nr_requests = 32
batch = 4
request_bytes = 524288
rate = 10000000
total_bytes = 4194304
offset_frac = 0.6

[[job]]
name = "rr"
kind = "fio"
rw = "randrw"
rwmixread = 70
rw_skip = 0
bs = 4096
iodepth = 4
number_ios = 50
thinktime_us = 10
thinktime_blocks = 2
rate_iops = 1000
ramp_ms = 1
size = 104857600
offset = 1048576

[[job]]
name = "coop"
kind = "interleaved"
processes = 3
chunk = 16384
read_ahead_kb = 128
skip_extra_bytes = 0
size = 10485760

[[job]]
name = "make"
kind = "compile"
start_s = 0.01
files = 5
dirs = 2
sys_headers = 20
project_headers = 10
parallel = 2
page_cache_mib = 64
source_sigma = 0.5
include_zipf = 1.1
make_think_us = 100
"#;

/// Values tried in place of a number, as TOML literals.
const EXTREMES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "-0.5",
    "0.0",
    "-0.0",
    "4096",
    "65535",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "1e9",
    "1e16",
    "2e10",
    "3.4e38",
    "1e300",
    "-1e300",
    "1e-300",
    "nan",
    "inf",
    "-inf",
];

/// `text` cut into its numbers (values of `key = number` lines and of numeric arrays) and
/// the text between them.
fn numbers(text: &str) -> (Vec<String>, usize) {
    let mut pieces = vec![String::new()];
    let mut count = 0;
    for line in text.lines() {
        let value = line
            .split_once('=')
            .filter(|(k, v)| !k.trim_start().starts_with('#') && !v.trim().starts_with('"'));
        match value {
            Some((key, v)) => {
                pieces.last_mut().unwrap().push_str(key);
                pieces.last_mut().unwrap().push('=');
                // Tokens of the value: numbers become pieces of their own.
                let mut token = String::new();
                let flush = |token: &mut String, pieces: &mut Vec<String>, count: &mut usize| {
                    if token.is_empty() {
                        return;
                    }
                    if token.parse::<f64>().is_ok() {
                        pieces.push(std::mem::take(token));
                        pieces.push(String::new());
                        *count += 1;
                    } else {
                        pieces.last_mut().unwrap().push_str(token);
                        token.clear();
                    }
                };
                for c in v.chars() {
                    if c.is_ascii_alphanumeric() || "+-._".contains(c) {
                        token.push(c);
                    } else {
                        flush(&mut token, &mut pieces, &mut count);
                        pieces.last_mut().unwrap().push(c);
                    }
                }
                flush(&mut token, &mut pieces, &mut count);
            }
            None => pieces.last_mut().unwrap().push_str(line),
        }
        pieces.last_mut().unwrap().push('\n');
    }
    (pieces, count)
}

/// A replacement for one number: an extreme value, or a random integer or float.
#[derive(Clone, Debug)]
enum Choice {
    Extreme(usize),
    Int(i64),
    Float(f64),
}

fn choice() -> impl Strategy<Value = Choice> {
    prop_oneof![
        3 => (0..EXTREMES.len()).prop_map(Choice::Extreme),
        1 => any::<i64>().prop_map(Choice::Int),
        1 => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Choice::Float),
    ]
}

/// One to four numbers replaced (by their index among the text's numbers, taken modulo
/// their count): few enough that a case gets past the first refusal and runs.
fn replacements() -> impl Strategy<Value = Vec<(usize, Choice)>> {
    proptest::collection::vec((any::<usize>(), choice()), 1..=4)
}

/// The text with the numbers `changes` names replaced.
fn render(pieces: &[String], changes: &[(usize, Choice)]) -> String {
    let n = pieces.len() / 2;
    let mut out = String::new();
    for (i, p) in pieces.iter().enumerate() {
        if i % 2 == 0 {
            out.push_str(p);
            continue;
        }
        match changes.iter().rev().find(|(k, _)| k % n == i / 2) {
            None => out.push_str(p),
            Some((_, Choice::Extreme(k))) => out.push_str(EXTREMES[*k]),
            Some((_, Choice::Int(v))) => out.push_str(&v.to_string()),
            Some((_, Choice::Float(v))) => out.push_str(&format!("{v:e}")),
        }
    }
    out
}

/// Run an accepted scenario under two schedulers for at most 50 ms of simulated time.
fn run_capped(s: &Scenario) {
    let cap = Nanos::from_ms(50);
    let limit = s.limit.map_or(cap, |l| l.min(cap));
    for name in ["deadline", "bfq"] {
        // A scheduler may refuse the groups' weights or the tunables: an error, not a panic.
        let Ok(sched) = s.scheduler(name, &Settings::new()) else {
            continue;
        };
        // A job that does not build whole (a compile's tree past the drive): refused too.
        let Ok(sim) = s.simulation(sched, None) else {
            continue;
        };
        let report = sim.run(Some(limit));
        assert!(
            report.end <= limit,
            "{name}: ran to {} past {limit}",
            report.end
        );
    }
}

/// A clean refusal: the file named, a short message.
fn clean(msg: &str, file: &str) {
    assert!(msg.len() < 1024, "message of {} bytes", msg.len());
    assert!(msg.starts_with(file), "{msg}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn scenario_with_random_numbers_is_refused_or_runs_bounded(
        changes in replacements()
    ) {
        let (pieces, _) = numbers(SCENARIO);
        let text = render(&pieces, &changes);
        let t0 = Instant::now();
        match Scenario::parse(&text, "s.toml", None) {
            Ok(s) => run_capped(&s),
            Err(e) => clean(&e.to_string(), "s.toml"),
        }
        // A hang guard: each case is bounded by the 50 ms simulated cap.
        prop_assert!(t0.elapsed() < Duration::from_secs(60), "{:?}\n{text}", t0.elapsed());
    }

    #[test]
    fn drive_spec_with_random_numbers_is_refused_or_serves_requests(
        drive in prop_oneof![Just("laptop-4200"), Just("cheetah9lp"), Just("hp_c2490a")],
        seed in any::<u64>(),
        changes in replacements(),
    ) {
        let base = drive_text(drive);
        let (pieces, _) = numbers(&base);
        let text = render(&pieces, &changes);
        let path = Path::new("d.toml");
        match DriveSpec::parse(&text, path) {
            Err(e) => clean(&e.to_string(), "d.toml"),
            Ok(spec) => {
                let mut hdd = Hdd::new(spec);
                let cap = hdd.capacity_sectors();
                prop_assert!(cap > 0);
                let mut t = 0.0;
                let mut x = seed | 1;
                for i in 0..32 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let n = 1 + (x % 256) as u32;
                    let lbn = (x >> 8) % cap.saturating_sub(u64::from(n)).max(1);
                    let (done, _) = hdd.serve(i % 3 != 0, lbn, n.min(cap as u32), t);
                    prop_assert!(done.is_finite() && done >= t, "{done} at {t}\n{text}");
                    t = done;
                }
            }
        }
    }
}

/// The built-in drive `name`'s TOML text.
fn drive_text(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("drives/{name}.toml"));
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn the_templates_are_valid_and_every_number_is_varied() {
    let s = Scenario::parse(SCENARIO, "s.toml", None).unwrap();
    run_capped(&s);
    assert!(numbers(SCENARIO).1 >= 45, "{}", numbers(SCENARIO).1);
    for d in ["laptop-4200", "cheetah9lp", "hp_c2490a"] {
        let text = drive_text(d);
        DriveSpec::parse(&text, Path::new("d.toml")).unwrap();
        let (pieces, n) = numbers(&text);
        assert!(n >= 30, "{d}: {n} numbers");
        let mut whole = text.clone();
        if !whole.ends_with('\n') {
            whole.push('\n');
        }
        assert_eq!(render(&pieces, &[]), whole);
    }
}
