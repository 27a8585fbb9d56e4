//! Hostile cases of issue 17 against scenario files, drive specs and validation traces: each
//! test is named after its case and asserts a clean error (file, line and field named, a
//! message under 1 KB, nothing sized by the input allocated first) or the correct behaviour.

use std::path::Path;
use std::time::{Duration, Instant};

use elevator_sim::hdd::spec::DriveSpec;
use elevator_sim::scenario::Scenario;
use elevator_sim::validate;
use elevator_workload::InputError;

/// `body` after a drive line, as a scenario's text.
fn scenario(body: &str) -> String {
    format!("drive = \"laptop-4200\"\n{body}")
}

const READER: &str = "[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\nfiles = 2\n";

fn parse(text: &str) -> Result<Scenario, InputError> {
    Scenario::parse(text, "s.toml", None)
}

/// A clean refusal naming `line` (if given) and `field`; the message.
fn refused(text: &str, line: Option<usize>, field: &str) -> String {
    let e = parse(text).unwrap_err();
    let msg = e.to_string();
    assert!(msg.len() < 1024, "message of {} bytes", msg.len());
    assert_eq!(e.field, field, "{msg}");
    if line.is_some() {
        assert_eq!(e.line(), line, "{msg}");
    }
    msg
}

// ----- caps -----

#[test]
fn scenario_of_20000_jobs_is_refused_naming_the_limit() {
    let jobs: String = (0..20_000)
        .map(|i| format!("[[job]]\nname = \"r{i}\"\nkind = \"dependent-reader\"\n"))
        .collect();
    let msg = refused(&scenario(&jobs), None, "job");
    assert!(msg.contains("at most 10000"), "{msg}");
}

#[test]
fn scenario_of_10000_jobs_loads_in_linear_time() {
    let jobs: String = (0..10_000)
        .map(|i| format!("[[job]]\nname = \"r{i}\"\nkind = \"dependent-reader\"\nfiles = 1\n"))
        .collect();
    let t0 = Instant::now();
    let s = parse(&scenario(&jobs)).unwrap();
    assert_eq!(s.jobs.len(), 10_000);
    // A hang guard, not a speed figure: duplicate names were checked pairwise (100k jobs
    // took minutes); a set makes the load linear.
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    let dup = format!("{READER}[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\n");
    refused(&scenario(&dup), None, "job.name");
}

#[test]
fn dev_zero_as_scenario_or_drive_spec_is_refused_after_4_mib() {
    let e = Scenario::load(Path::new("/dev/zero")).unwrap_err();
    assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
    let e = DriveSpec::load("/dev/zero").unwrap_err();
    assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
    assert!(e.to_string().starts_with("/dev/zero"), "{e}");
    let e = elevator_sim::DriveModel::load("/dev/zero").unwrap_err();
    assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
    let e = elevator_sim::ssd::spec::SsdSpec::load("/dev/zero").unwrap_err();
    assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
}

#[test]
fn drive_spec_path_of_dev_zero_in_a_scenario_is_refused() {
    let e = parse("drive = \"/dev/zero\"\n[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\n")
        .unwrap_err();
    assert_eq!(e.field, "drive");
    assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
}

#[test]
fn sparse_1_gb_scenario_file_is_refused_with_a_short_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::File::create(&p).unwrap().set_len(1 << 30).unwrap();
    let e = Scenario::load(&p).unwrap_err().to_string();
    assert!(e.len() < 1024 && e.contains("larger than"), "{e}");
}

#[test]
fn job_name_of_a_megabyte_is_quoted_short() {
    let name = "n".repeat(1 << 20);
    let text = scenario(&format!(
        "[[job]]\nname = \"{name}\"\nkind = \"stream-writer\"\n"
    ));
    let msg = refused(&text, None, "job.total_bytes");
    assert!(msg.len() < 1024);
}

// ----- checked time -----

#[test]
fn wakeup_us_1e300_is_refused_naming_the_field() {
    let msg = refused(
        &scenario(&format!("wakeup_us = 1e300\n{READER}")),
        Some(2),
        "wakeup_us",
    );
    assert!(msg.contains("one day"), "{msg}");
}

#[test]
fn wakeup_us_1e16_is_refused_naming_the_field() {
    refused(
        &scenario(&format!("wakeup_us = 1e16\n{READER}")),
        Some(2),
        "wakeup_us",
    );
    assert!(parse(&scenario(&format!("wakeup_us = 8.64e10\n{READER}"))).is_ok());
}

#[test]
fn start_s_2e10_is_refused_naming_the_field() {
    let text = scenario(&format!("{READER}start_s = 2e10\n"));
    let msg = refused(&text, Some(6), "job.start_s");
    assert!(msg.contains("one day"), "{msg}");
}

#[test]
fn duration_s_past_a_day_is_refused_naming_the_field() {
    refused(
        &scenario(&format!("duration_s = 1e12\n{READER}")),
        Some(2),
        "duration_s",
    );
}

// ----- unclear errors -----

#[test]
fn write_cache_3_names_the_field_and_line() {
    let msg = refused(
        &scenario(&format!("write_cache = 3\n{READER}")),
        Some(2),
        "write_cache",
    );
    assert!(msg.contains("3 is not true, false"), "{msg}");
    assert!(!msg.contains("untagged"), "{msg}");
}

#[test]
fn toml_integer_overflow_names_the_line_and_field() {
    let msg = refused(
        &scenario(&format!("seed = 99999999999999999999\n{READER}")),
        Some(2),
        "seed",
    );
    assert!(msg.contains("s.toml:2"), "{msg}");
    let e = parse(&scenario(&format!(
        "[[group]]\npath = \"/a\"\nweight = 4294967296\n{READER}"
    )))
    .unwrap_err();
    assert_eq!(e.line(), Some(4), "{e}");
    let e = parse(&scenario(&format!(
        "{READER}file_size = 99999999999999999999\n"
    )))
    .unwrap_err();
    assert_eq!(e.line(), Some(6), "{e}");
    assert!(e.to_string().contains("file_size"), "{e}");
}

#[test]
fn group_weight_0_is_blamed_on_the_group_weight_not_sched() {
    let text = scenario(&format!("[[group]]\npath = \"/a\"\nweight = 0\n{READER}"));
    let msg = refused(&text, Some(4), "group.weight");
    assert!(msg.contains("\"/a\""), "{msg}");
}

#[test]
fn max_requests_0_is_blamed_on_max_requests_not_devno() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.trace"), "0.5 0 100 8 1\n").unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(
        &p,
        scenario(
            "[[job]]\nname = \"t\"\nkind = \"trace\"\ntrace = \"t.trace\"\nmax_requests = 0\n",
        ),
    )
    .unwrap();
    let e = Scenario::load(&p).unwrap_err();
    assert_eq!(e.field, "job.max_requests", "{e}");
}

// ----- paths -----

#[test]
fn scenario_paths_resolve_against_the_scenario_file_not_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("t.trace"), "0.5 0 100 8 1\n1.0 0 200 8 0\n").unwrap();
    std::fs::write(
        sub.join("s.trace"),
        "app-1 0 8 1000 Rand 0 0 R 1.0 START\napp-1 .01 8 1008 Seq 0 0 R 1.01 C\n",
    )
    .unwrap();
    let drive = DriveSpec::builtin("laptop-4200").unwrap();
    std::fs::write(sub.join("d.toml"), toml::to_string(&drive).unwrap()).unwrap();
    let p = sub.join("s.toml");
    std::fs::write(
        &p,
        "drive = \"d.toml\"\n[[job]]\nname = \"t\"\nkind = \"trace\"\ntrace = \"t.trace\"\n\
         [[job]]\nname = \"s\"\nkind = \"startup\"\ntrace = \"s.trace\"\n",
    )
    .unwrap();
    // The test runs in the crate's directory: the files are only found next to s.toml.
    let s = Scenario::load(&p).unwrap();
    let sched = s.scheduler("noop", &Default::default()).unwrap();
    let report = s.simulation(sched, None).unwrap().run(None);
    assert_eq!(report.jobs.len(), 2);
}

// ----- validation traces -----

#[test]
fn validation_trace_comment_lines_are_accepted() {
    let t = "# DiskSim validation trace\nR Miss 100 8 5000 100\n  # another\nW Hit 200 8 300 0\n";
    let r = validate::parse_trace(t, Path::new("v.trace")).unwrap();
    assert_eq!(r.len(), 2);
}

#[test]
fn validation_trace_block_past_the_drives_end_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.trace");
    std::fs::write(&p, "R Miss 100 8 5000 100\nR Miss 99999999999 8 5000 100\n").unwrap();
    let e = validate::read_trace_within(&p, Some(1_000_000)).unwrap_err();
    assert_eq!((e.line(), e.field.as_str()), (Some(2), "blkno"), "{e}");
    assert!(e.to_string().contains("past the drive's end"), "{e}");
    assert_eq!(validate::read_trace(&p).unwrap().len(), 2);
}

#[test]
fn validation_trace_dev_zero_is_refused() {
    let e = validate::read_trace("/dev/zero").unwrap_err();
    assert!(e.to_string().len() < 1024);
    assert!(e.to_string().contains("larger than"), "{e}");
}

#[test]
fn scenario_with_a_utf8_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, format!("\u{feff}{}", scenario(READER))).unwrap();
    assert_eq!(Scenario::load(&p).unwrap().jobs.len(), 1);
}

// ----- found by the property harness (hostile_numbers.rs) -----

#[test]
fn dependent_reader_files_4294967295_is_refused_before_a_68_gb_allocation() {
    let msg = refused(
        &scenario("[[job]]\nname = \"r\"\nkind = \"dependent-reader\"\nfiles = 4294967295\n"),
        Some(5),
        "job.files",
    );
    assert!(msg.contains("more than 1000000"), "{msg}");
}

#[test]
fn compile_parallel_4294967295_is_refused_before_a_618_gb_allocation() {
    let msg = refused(
        &scenario("[[job]]\nname = \"m\"\nkind = \"compile\"\nparallel = 4294967295\n"),
        Some(5),
        "job.parallel",
    );
    assert!(msg.contains("more than 4096"), "{msg}");
    refused(
        &scenario("[[job]]\nname = \"m\"\nkind = \"compile\"\nfiles = 4294967295\n"),
        Some(5),
        "job.files",
    );
}

#[test]
fn drive_seek_point_at_distance_nan_is_refused_not_served_at_minus_infinity() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("drives/hp_c2490a.toml");
    let text = std::fs::read_to_string(p)
        .unwrap()
        .replace("[2.0, 1.4696841]", "[nan, 1.4696841]");
    assert!(text.contains("[nan, 1.4696841]"));
    let e = DriveSpec::parse(&text, Path::new("d.toml")).unwrap_err();
    assert_eq!(e.field, "seek.curve.points", "{e}");
    assert!(e.to_string().contains("finite"), "{e}");
}
