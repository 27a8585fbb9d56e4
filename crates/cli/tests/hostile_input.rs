//! Hostile cases of issue 17 through the `elevator` binary: each test is named after its
//! case and asserts a clean error (non-zero exit, no panic, the file, line or flag named, a
//! message under 1 KB) or the correct behaviour, within a bounded time.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of elevator gave.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run elevator with `args`, killing it (and failing) if it runs longer than `limit`.
fn elevator_within(args: &[&str], limit: Duration) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run elevator");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = Vec::new();
        out.read_to_end(&mut s).unwrap();
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).unwrap();
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("elevator {args:?} ran longer than {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = Out {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&e.join().unwrap()).into_owned(),
    };
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
}

fn elevator(args: &[&str]) -> Out {
    elevator_within(args, Duration::from_secs(120))
}

/// The run failed cleanly, and its message contains every one of `needles`.
fn clean_error(out: &Out, needles: &[&str]) {
    assert_ne!(out.code, 0, "expected a failure; stdout: {}", out.stdout);
    assert!(
        out.code == 1,
        "exit {} (a signal or abort?): {}",
        out.code,
        out.stderr
    );
    assert!(
        out.stderr.len() < 1024,
        "message of {} bytes",
        out.stderr.len()
    );
    for n in needles {
        assert!(out.stderr.contains(n), "{n:?} not in: {}", out.stderr);
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

// ----- hangs -----

#[test]
fn as_antic_expire_2147483647_is_refused_before_the_target_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[r]\nrw=read\nsize=1m\n");
    let target = dir.path().join("t.dat");
    let out = elevator(&[
        "run",
        &job,
        "--target",
        target.to_str().unwrap(),
        "--sched",
        "as",
        "--set",
        "antic_expire=2147483647",
    ]);
    clean_error(&out, &["--set", "antic_expire", "out of range 0..=1000"]);
    assert!(!target.exists(), "the target was created before the check");
}

#[test]
fn sim_sched_deadline_deadlin_fails_before_running() {
    let out = elevator(&["sim", "anticipatory", "--sched", "deadline,deadlin"]);
    clean_error(&out, &["--sched \"deadlin\"", "no such scheduler"]);
    assert!(out.stdout.is_empty(), "ran deadline first: {}", out.stdout);
}

#[test]
fn out_of_range_set_on_a_builtin_scenario_blames_set_not_the_scenario() {
    let out = elevator(&[
        "sim",
        "anticipatory",
        "--sched",
        "as",
        "--set",
        "antic_expire=5000",
    ]);
    clean_error(&out, &["--set", "antic_expire"]);
    assert!(!out.stderr.contains("field `sched`"), "{}", out.stderr);
}

#[test]
fn a_foreground_stream_writer_without_a_limit_is_refused_not_run_forever() {
    let dir = tempfile::tempdir().unwrap();
    let sc = write(
        dir.path(),
        "s.toml",
        "drive = \"laptop-4200\"\nseed = 1\n[[job]]\nname = \"w\"\nkind = \"stream-writer\"\n",
    );
    let out = elevator_within(&["sim", &sc], Duration::from_secs(60));
    clean_error(&out, &["s.toml:4", "job.total_bytes", "duration_s"]);
}

// ----- panics -----

/// Run elevator with stdout on /dev/full.
fn to_dev_full(args: &[&str]) -> Out {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdout(full)
        .output()
        .expect("run elevator");
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
}

#[test]
fn list_to_dev_full_is_an_error_not_a_panic() {
    let out = to_dev_full(&["list"]);
    clean_error(&out, &["writing to standard output", "No space left"]);
}

#[test]
fn sim_to_dev_full_is_an_error_not_a_panic() {
    let out = to_dev_full(&["sim", "anticipatory-no-write", "--sched", "noop"]);
    clean_error(&out, &["writing to standard output"]);
}

#[test]
fn run_to_dev_full_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[r]\nrw=read\nbs=4k\nsize=64k\n");
    let target = dir.path().join("t.dat");
    let out = to_dev_full(&["run", &job, "--target", target.to_str().unwrap()]);
    // Where O_DIRECT is unavailable the run fails earlier, still cleanly.
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.len() < 1024);
}
