//! Hostile cases of issue 17, "hangs", in the simulator: what cannot end is refused at load
//! time, and a finished job's contexts exit so no scheduler idles for them.

use elevator_core::Settings;
use elevator_sim::scenario::Scenario;

fn parse(text: &str) -> Result<Scenario, String> {
    Scenario::parse(text, "s.toml", None).map_err(|e| e.to_string())
}

const HEAD: &str = "drive = \"laptop-4200\"\nseed = 1\n";

fn refused(job: &str, field: &str) {
    let msg = parse(&format!("{HEAD}[[job]]\nname = \"j\"\n{job}"))
        .err()
        .unwrap_or_else(|| panic!("accepted a job that never ends: {job}"));
    assert!(msg.contains("s.toml:4"), "{msg}");
    assert!(msg.contains(&format!("job.{field}")), "{msg}");
    assert!(msg.contains("never finishes by itself"), "{msg}");
    assert!(msg.len() < 1024);
}

#[test]
fn a_foreground_stream_writer_without_total_bytes_or_duration_is_refused() {
    refused("kind = \"stream-writer\"\n", "total_bytes");
    // With a limit, or in the background beside a job that ends, it is fine.
    parse(&format!(
        "{HEAD}duration_s = 1\n[[job]]\nname = \"j\"\nkind = \"stream-writer\"\n"
    ))
    .unwrap();
    parse(&format!(
        "{HEAD}[[job]]\nname = \"j\"\nkind = \"stream-writer\"\nforeground = false\n[[job]]\nname = \"r\"\nkind = \"fio\"\nnumber_ios = 4\n"
    ))
    .unwrap();
}

#[test]
fn a_foreground_dependent_reader_with_loops_zero_is_refused() {
    refused("kind = \"dependent-reader\"\nloops = 0\n", "loops");
}

#[test]
fn a_time_based_fio_job_without_runtime_is_refused() {
    refused("kind = \"fio\"\ntime_based = true\n", "time_based");
}

/// The simulated time at which job `name` finished under CFQ with `slice_idle` in ms.
fn finish_under_cfq(text: &str, slice_idle: i64, name: &str) -> f64 {
    let sc = parse(text).unwrap();
    let mut extra = Settings::new();
    extra.set("slice_idle", slice_idle);
    let sched = sc.scheduler("cfq", &extra).unwrap();
    let report = sc.simulation(sched, None).unwrap().run(sc.limit);
    let j = report.jobs.iter().find(|j| j.name == name).unwrap();
    j.metrics.finished.expect("finished").as_secs_f64()
}

#[test]
fn a_finished_jobs_context_exits_so_cfq_does_not_idle_for_it() {
    // "a" reads once and is done; "b" has its reads queued meanwhile. CFQ idles on a's queue
    // after its read (slice_idle) unless a's context exits, which ends the slice
    // (cfq_exit_cfqq). With slice_idle = 1000 ms, b must not wait a second.
    let text = format!(
        "{HEAD}[[job]]\nname = \"a\"\nkind = \"fio\"\nrw = \"read\"\nnumber_ios = 1\n\
         [[job]]\nname = \"b\"\nkind = \"fio\"\nrw = \"randread\"\nnumber_ios = 4\niodepth = 4\noffset_frac = 0.5\nstart_s = 0.0001\n"
    );
    let b = finish_under_cfq(&text, 1000, "b");
    assert!(
        b < 0.5,
        "b finished at {b} s: CFQ idled for an exited context"
    );
}
