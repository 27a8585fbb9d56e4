//! Hostile cases of issue 32, seventh round: what round 6 left (a `sim` job long by its
//! simulated time, scenarios outside the I/O bound), and variants no round tried: fio's
//! global sections by prefix, think times past fio's 32 bits, values expanding to paths,
//! `include`, a clock driven past its range by a rate, `reproduce --seeds` at its limit. Every
//! run is bounded in time, so a hang fails instead of waiting.

mod common {
    pub mod bounded;
    pub mod child;
}
use common::bounded::{clean_error, elevator, elevator_within, s, MINUTE};

// ----- round 6's leftovers -----

/// `sim` of a day of `time_based` 512-byte reads passed both bounds (a day of simulated time;
/// no size-implied count) and computed for hours (5 x 10^8 I/Os on the Cheetah's cache, 10^9
/// on the SSD). Now a run with a `runtime` is probed for its first I/Os and their rate
/// extrapolated to the runtime (`check_simulated_time_work`), refused past 10^8 naming the
/// line of `runtime` and `--max-ios`; a short runtime still runs.
#[test]
fn sim_of_a_day_of_time_based_512_byte_reads_is_refused_naming_runtime_and_the_override() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("day.fio");
    std::fs::write(&job, "[j]\nrw=read\nbs=512\ntime_based\nruntime=86400\n").unwrap();
    for drive in ["cheetah9lp", "samsung-980pro-1tb"] {
        let o = elevator_within(&["sim", s(&job), "--drive", drive], MINUTE);
        clean_error(&o, &["day.fio:5", "runtime", drive, "--max-ios"]);
    }
    // Every stonewall phase counts: a short first phase does not hide a day after it.
    std::fs::write(
        &job,
        "[a]\nrw=randread\nbs=4k\nruntime=1\ntime_based\n\
         [b]\nrw=read\nbs=512\nruntime=86400\ntime_based\nstonewall\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    clean_error(&o, &["day.fio:9", "job b", "--max-ios"]);
    // The bound is the user's: lowered, a second of reads passes it; a second within it runs.
    std::fs::write(&job, "[j]\nrw=read\nbs=4k\ntime_based\nruntime=1\n").unwrap();
    let o = elevator_within(&["sim", s(&job), "--max-ios", "1000"], MINUTE);
    clean_error(&o, &["day.fio:5", "runtime", "--max-ios"]);
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// A scenario's `kind = "fio"` jobs were outside the I/O bound (only job files were under
/// it): `size = 900 GB` of 512-byte reads, or a `duration_s` of a day at a drive's cache
/// rate, computed for hours. Now `Scenario::check_work` counts the fio jobs' sizes and probes
/// the duration, naming the line and field; `sim --max-ios` applies to scenarios, and a
/// sweep checks before any cell runs.
#[test]
fn scenarios_are_under_the_io_bound_by_size_and_by_duration() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.toml");
    let head = "name = \"s\"\ndrive = \"samsung-980pro-1tb\"\n";
    std::fs::write(
        &sc,
        format!("{head}[[job]]\nname = \"r\"\nkind = \"fio\"\nrw = \"read\"\nbs = 512\nsize = 900000000000\n"),
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&sc)], MINUTE);
    clean_error(&o, &["s.toml:8", "job.size", "--max-ios"]);
    std::fs::write(
        &sc,
        format!("{head}duration_s = 86400\n[[job]]\nname = \"r\"\nkind = \"fio\"\nrw = \"read\"\nbs = 512\ntime_based = true\n"),
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&sc)], MINUTE);
    clean_error(&o, &["s.toml:3", "duration_s", "--max-ios"]);
    let o = elevator_within(&["sim", s(&sc), "--sweep", "seed=1,2"], MINUTE);
    clean_error(&o, &["s.toml:3", "duration_s"]);
    // A fio job's own runtime sets the span when the scenario has no duration.
    std::fs::write(
        &sc,
        format!("{head}[[job]]\nname = \"r\"\nkind = \"fio\"\nrw = \"read\"\nbs = 512\ntime_based = true\nruntime_ms = 86400000\n"),
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&sc)], MINUTE);
    clean_error(&o, &["s.toml:9", "job.runtime_ms"]);
    // `--max-ios` is the scenario's too: a tenth of a second of reads passes 10 I/Os.
    std::fs::write(
        &sc,
        format!("{head}duration_s = 0.1\n[[job]]\nname = \"r\"\nkind = \"fio\"\nrw = \"randread\"\ntime_based = true\n"),
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&sc), "--max-ios", "10"], MINUTE);
    clean_error(&o, &["s.toml:3", "duration_s", "--max-ios"]);
    let o = elevator_within(&["sim", s(&sc)], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ----- fio's reading of a job file -----

/// fio takes a section whose name starts with "global" as a global one (`parse_jobs_ini`:
/// `strncmp(name, "global", 6)`): `[globals]` sets defaults and runs no job. elevator ran it
/// as a job of its own (here 244 million 4 KiB reads of the whole drive, refused by the I/O
/// bound) and `rw=write` never reached `[j]`.
#[test]
fn fio_sections_named_like_global_are_global_as_in_fio() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("g.fio");
    std::fs::write(&job, "[globals]\nrw=write\n[j]\nsize=1m\n").unwrap();
    let o = elevator_within(&["sim", s(&job), "--output-format", "json"], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{v}");
    assert_eq!(jobs[0]["jobname"], "j");
    assert_eq!(jobs[0]["write"]["io_bytes"], 1 << 20, "{v}");
}

/// fio holds `thinktime` in 32 bits of microseconds; elevator took any 64-bit count and
/// turned it into nanoseconds, wrapping: `thinktime=18446744073709551` thought for a few
/// microseconds and reported 3000 IOPS. Now past 2^32 - 1 us is refused naming the line.
#[test]
fn a_thinktime_past_32_bits_of_microseconds_is_refused_not_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("t.fio");
    std::fs::write(
        &job,
        "[j]\nrw=read\nthinktime=18446744073709551\nnumber_ios=3\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    clean_error(&o, &["t.fio:3", "thinktime", "4294967295"]);
}

/// A value expanding to a path (`filename=${HOME}/f`) was refused as "arithmetic" because it
/// held a `/`; fio evaluates arithmetic only in parentheses. And `include` before any
/// section was "an option before any [section]" rather than unsupported.
#[test]
fn fio_values_expanding_to_paths_are_taken_and_include_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("e.fio");
    std::fs::write(
        &job,
        "[j]\nrw=read\nsize=1m\nfilename=${HOME}/elevator-never-written\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
    std::fs::write(&job, "[j]\nrw=read\nsize=(2*$ncpus)m\n").unwrap();
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    clean_error(&o, &["e.fio:3", "size", "arithmetic"]);
    std::fs::write(&job, "include other.fio\n[j]\nrw=read\nsize=1m\n").unwrap();
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    clean_error(&o, &["e.fio:1", "`include` is not supported"]);
}

// ----- time and counts at their limits -----

/// `rate=1` (byte per second) of 1 MiB reads, 20,000 of them: 664 years of simulated time,
/// past the 584 a 64-bit nanosecond clock holds. The clock saturated and the report gave
/// 19.5 GiB over 18446744073709 ms (1.1 B/s for a rate of 1). Now an event past 146 years
/// (`CLOCK_LIMIT`) ends the run as an error naming the cause.
#[test]
fn a_clock_driven_past_its_range_by_a_rate_is_an_error_not_saturated_figures() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("r.fio");
    std::fs::write(&job, "[j]\nrw=read\nbs=1m\nrate=1\nnumber_ios=20000\n").unwrap();
    let o = elevator_within(&["sim", s(&job)], MINUTE);
    clean_error(&o, &["r.fio", "simulated clock passed 146 years", "rate"]);
}

/// `reproduce anticipatory --seeds 4294967295` aborted on a 32 GiB allocation (exit 134);
/// 10^5 seeds would run for days. Now `--seeds` is 2 to 100, refused by the argument parser.
#[test]
fn reproduce_seeds_past_100_are_refused_not_an_abort() {
    for n in ["4294967295", "101"] {
        let o = elevator(&["reproduce", "anticipatory", "--seeds", n]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stderr.contains("--seeds"), "{}", o.stderr);
        assert!(o.stderr.contains("2..=100"), "{}", o.stderr);
    }
}
