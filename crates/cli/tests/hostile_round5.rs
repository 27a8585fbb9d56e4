//! Hostile cases of issue 32, fifth round (what round 4 left, and what no round tried): a
//! FIFO given as an input with nothing writing it, character devices and endless streams as
//! traces, empty traces, fio's size suffixes and `${VAR}` expansion, numbers at the edges of
//! the mount's options, a trace of a larger device, and signals during `calibrate`'s fit and
//! `compare`'s fio runs. Every run is bounded in time, so a hang fails instead of waiting.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod stdin;
}
use common::bounded::{clean_error, elevator, elevator_within, s, Out};
use common::child::{wait_within, TerminalSignals};
use common::stdin::with_stdin;

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(s(p)).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

const JOB: &str = "[global]\nrw=randread\nsize=16m\nruntime=1\n[j]\nbs=4k\n";

// ----- a FIFO that nothing writes -----

/// A FIFO given where a file is expected, with nothing writing it: opening it waited for a
/// writer for ever (`sim F`, `sim J --drive F`, `replay F`, `validate --trace F`, `drive show
/// F`, `drive import-disksim F`, `calibrate --measured F`, `merge F`, `run F`, `kernel-record
/// F`: every reader of a path). Now `elevator_workload::input::open` opens a FIFO without
/// waiting and refuses it at once when no writer comes within 2 s, naming it; Parquet, read
/// from its end, refuses any file that is not regular.
#[test]
fn a_fifo_input_with_no_writer_is_refused_at_once_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("input.fifo");
    mkfifo(&fifo);
    let job = dir.path().join("j.fio");
    std::fs::write(&job, JOB).unwrap();
    let f = s(&fifo);
    let out = dir.path().join("out");
    let cases: Vec<Vec<&str>> = vec![
        vec!["sim", f],
        vec!["sim", s(&job), "--drive", f],
        vec!["sim", s(&job), "--host", f],
        vec!["replay", f],
        vec!["replay", "--format", "msr", f],
        vec!["validate", "--drive", "cheetah9lp", "--trace", f],
        vec!["validate", "--drive", f, "--trace", f],
        vec!["drive", "show", f],
        vec!["drive", "import-disksim", f],
        vec!["calibrate", "--target", "x", "--measured", f],
        vec!["run", f, "--target", s(&out)],
        vec!["kernel-diff", s(dir.path())],
    ];
    for args in &cases {
        // Bounded: a wait for a writer that never comes fails the test at the limit.
        let o = elevator_within(args, Duration::from_secs(60));
        assert_ne!(o.code, 0, "{args:?} succeeded on a FIFO nothing writes");
        assert!(o.stderr.len() < 1024, "{args:?}: {}", o.stderr);
        if args[0] != "kernel-diff" {
            assert!(
                o.stderr.contains("input.fifo")
                    && (o.stderr.contains("nothing writes") || o.stderr.contains("not a trace")),
                "{args:?}: {}",
                o.stderr
            );
        }
    }
    let o = elevator(&["merge", "-o", s(&dir.path().join("m.parquet")), f]);
    clean_error(&o, &["input.fifo", "not a regular file"]);
}

/// A FIFO whose writer is waiting for a reader (`cat job.fio > F &` before elevator starts)
/// is read as a pipe: the check for a writer does not lose its bytes.
#[test]
fn a_fifo_input_with_a_waiting_writer_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("job.fifo");
    mkfifo(&fifo);
    let path = fifo.clone();
    // Blocks in open until elevator opens the FIFO for reading, then writes the job file.
    let writer = std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        w.write_all(JOB.as_bytes()).unwrap();
    });
    // Let the writer reach its open (it is counted as a writer from then on).
    std::thread::sleep(Duration::from_millis(200));
    let o = elevator(&["sim", s(&fifo)]);
    writer.join().unwrap();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("j:") || o.stdout.contains("j "),
        "{}",
        o.stdout
    );
}

// ----- endless and empty traces -----

/// `/dev/zero` and `/dev/urandom` as traces (`replay --format msr /dev/zero`, `--format
/// blktrace /dev/urandom`): a character device was copied like a pipe into a temporary file
/// until half the disk was full (6 GB here) before anything was said. Now a character device
/// is refused at once as no trace, and so is standard input that is one.
#[test]
fn character_devices_are_refused_as_traces_at_once() {
    for (fmt, dev) in [
        ("msr", "/dev/zero"),
        ("blktrace", "/dev/urandom"),
        ("disksim", "/dev/null"),
    ] {
        let o = elevator_within(&["replay", "--format", fmt, dev], Duration::from_secs(30));
        clean_error(&o, &[dev, "character device"]);
    }
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["replay", "--format", "msr", "-"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_within(child, Duration::from_secs(30), |c| {
        let _ = c.kill();
    });
    let o = Out::of(done.status.expect("replay - < /dev/zero hung"), &done);
    clean_error(&o, &["standard input", "character device"]);
}

/// An endless stream on a pipe (`cat /dev/zero | elevator replay --format msr -`, or
/// `--format blktrace`): copied until half the disk was full. Now a text trace's line past
/// the readers' 64 KiB bound, or a blktrace stream without blktrace's magic, ends the copy
/// at once, naming the stream.
#[test]
fn an_endless_stream_of_zeroes_on_a_pipe_is_refused_at_once() {
    for fmt in ["msr", "blktrace", "disksim"] {
        let dir = tempfile::tempdir().unwrap();
        let tmp = [("TMPDIR", dir.path().as_os_str())];
        let args = ["replay", "--format", fmt, "-"];
        // Writes zeroes until elevator closes the pipe (or 4 GiB, far past any bound here).
        let o = with_stdin(&args, &tmp, Duration::from_secs(60), |mut pipe| {
            let zeroes = vec![0u8; 1 << 20];
            for _ in 0..4096 {
                if pipe.write_all(&zeroes).is_err() {
                    return;
                }
            }
        });
        clean_error(&o, &["standard input"]);
        let left: u64 = walk_bytes(dir.path());
        assert!(left == 0, "{left} bytes left in TMPDIR");
    }
}

fn walk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => walk_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A trace that holds no request (an MSR file of its header only, records of length 0 only,
/// or `--max-requests 0`): replayed as "0 requests replayed", every figure 0, exit 0. Now
/// refused, naming the trace (or the flag).
#[test]
fn an_empty_trace_is_refused_not_replayed_as_zeroes() {
    let dir = tempfile::tempdir().unwrap();
    let header = dir.path().join("header.csv");
    std::fs::write(
        &header,
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n",
    )
    .unwrap();
    let zero = dir.path().join("zero.csv");
    std::fs::write(&zero, "128166372003061629,hm,0,Read,0,0,100\n").unwrap();
    for t in [&header, &zero] {
        let o = elevator(&["replay", "--format", "msr", s(t)]);
        clean_error(&o, &[s(t), "no request"]);
    }
    let one = dir.path().join("one.disksim");
    std::fs::write(&one, "0.000 0 0 8 1\n").unwrap();
    let o = elevator(&["replay", s(&one), "--max-requests", "0"]);
    clean_error(&o, &["--max-requests 0"]);
}

/// Sectors beyond the simulated drive's end (a trace of a larger device): wrapped into the
/// drive without a word. Now the replay says how many (`ReplayOutcome::wrapped`, JSON
/// `wrapped`).
#[test]
fn a_trace_of_a_larger_device_says_its_requests_were_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("big.disksim");
    std::fs::write(&t, "0.000 0 0 8 1\n1.000 0 99999999999 8 1\n").unwrap();
    let json = dir.path().join("r.json");
    let o = elevator(&["replay", s(&t), "--json", s(&json)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("1 requests of the trace lie beyond the end"),
        "{}",
        o.stdout
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v.to_string().contains("\"wrapped\":1"), "{v}");
}

// ----- fio's own reading of job files -----

/// fio reads `4KiB` as 4000 bytes under its default `kb_base=1024` (checked with `fio
/// --debug=parse --parse-only`: `bs=4KiB` gives out=4000, `bs=4KB` out=4096); elevator read
/// 4096, running another job than fio without a word. Now the IEC spellings are powers of
/// 1000 as in fio, and a block size that is then not a multiple of 512 is refused saying why.
#[test]
fn fio_kib_is_1000_bytes_as_fio_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("kib.fio");
    std::fs::write(&job, "[global]\nrw=randread\nsize=16m\n[j]\nbs=4KiB\n").unwrap();
    let o = elevator(&["sim", s(&job)]);
    clean_error(&o, &["kib.fio:5", "4000 bytes", "kb_base"]);
    // size=1024000KiB is 1,024,000,000 bytes as fio reads it (`fio --debug=parse`: out=
    // 1024000000), 250,000 reads of 4 KiB; 1024000 x 1024 bytes would be 256,000.
    std::fs::write(&job, "[global]\nrw=read\nsize=1024000KiB\n[j]\nbs=4k\n").unwrap();
    let o = elevator(&["sim", s(&job), "--output-format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        v["jobs"][0]["read"]["io_bytes"].as_u64(),
        Some(1_024_000_000)
    );
    assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(250_000));
}

/// fio expands `${VAR}` from the environment and its keywords `$ncpus`, `$mb_memory`,
/// `$pagesize` in a job file's values; elevator said `"${BS}" is not a size`. Now expanded as
/// fio does; an unset variable is an error naming it (fio fails to parse the option), and
/// arithmetic is refused as unsupported.
#[test]
fn fio_environment_variables_are_expanded_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("env.fio");
    std::fs::write(
        &job,
        "[global]\nrw=randread\nsize=${ELEVATOR_TEST_SIZE}\n[j]\nbs=${ELEVATOR_TEST_BS}\n\
         iodepth=$ncpus\n",
    )
    .unwrap();
    let run = |envs: &[(&str, &str)]| {
        let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args(["sim", s(&job), "--output-format", "json"])
            .env_remove("ELEVATOR_TEST_SIZE")
            .env_remove("ELEVATOR_TEST_BS")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let done = wait_within(child, Duration::from_secs(120), |c| {
            let _ = c.kill();
        });
        Out::of(done.status.expect("hung"), &done)
    };
    let o = run(&[("ELEVATOR_TEST_SIZE", "8m"), ("ELEVATOR_TEST_BS", "8k")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(8 << 20));
    assert_eq!(
        v["jobs"][0]["read"]["total_ios"].as_u64(),
        Some((8 << 20) / 8192)
    );
    let o = run(&[("ELEVATOR_TEST_SIZE", "8m")]);
    clean_error(&o, &["env.fio:5", "ELEVATOR_TEST_BS", "not set"]);
    std::fs::write(&job, "[j]\nrw=read\nsize=(2*$mb_memory)m\n").unwrap();
    let o = run(&[]);
    clean_error(&o, &["env.fio:3", "arithmetic"]);
}

// ----- numbers at the edges -----

/// `mount --threads 18446744073709551615` panicked (exit 101: a pool of 2^64 threads asked
/// for) and `--threads 0` mounted with none; `--log-limit 2^64 - 1` let the request log grow
/// without bound. Now refused by the argument parser (1 to 1024 threads, at most 10^8
/// requests logged), before anything is mounted.
#[test]
fn mount_thread_and_log_counts_at_the_edges_are_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (b, m) = (dir.path().join("b"), dir.path().join("m"));
    std::fs::create_dir(&b).unwrap();
    std::fs::create_dir(&m).unwrap();
    for (flag, v) in [
        ("--threads", "18446744073709551615"),
        ("--threads", "0"),
        ("--threads", "1025"),
        ("--log-limit", "18446744073709551615"),
    ] {
        let o = elevator_within(&["mount", s(&b), s(&m), flag, v], Duration::from_secs(30));
        assert_eq!(o.code, 2, "{flag} {v}: {}", o.stderr);
        assert!(o.stderr.contains(flag), "{}", o.stderr);
    }
}

// ----- signals -----

/// The points of `calibrate`'s plan, as its `--json` names them.
const PLAN_LABELS: [&str; 20] = [
    "randread 4k qd1",
    "randread 4k qd2",
    "randread 4k qd4",
    "randread 4k qd8",
    "randread 4k qd16",
    "randread 4k qd32",
    "randread 4k qd64",
    "randread 4k qd128",
    "randread 16k qd32",
    "randread 64k qd32",
    "randread 256k qd32",
    "randread 1m qd32",
    "read 1m qd32",
    "randwrite 4k qd1",
    "randwrite 4k qd32",
    "write 1m qd1",
    "write 1m qd32",
    "randread 4k qd1 + write 1m qd32",
    "randread 4k qd1 + write 1m qd1",
    "randread 4k qd1 + write 1m qd4",
];

/// SIGINT while `calibrate --measured` fits (the fit simulates every point as long as it was
/// measured: about a minute): the process ends at once (exit 130), no spec, no `--json`, and
/// no temporary file is left.
#[test]
fn sigint_during_calibrates_fit_writes_no_spec_and_no_json() {
    let dir = tempfile::tempdir().unwrap();
    let measured = dir.path().join("measured.json");
    // A `calibrate --json` of the 20 points of the plan, 120 s in all (6 s a point, so the
    // fit simulates each writing point for 6 s); plausible figures of a small SSD.
    let points: Vec<String> = PLAN_LABELS
        .iter()
        .map(|label| {
            let bs: f64 = if label.contains("1m") && !label.contains("+") {
                1048576.0
            } else if label.contains("256k") {
                262144.0
            } else if label.contains("64k") {
                65536.0
            } else if label.contains("16k") {
                16384.0
            } else {
                4096.0
            };
            let iops = if bs > 4096.0 { 2000.0 } else { 20000.0 };
            format!(
                r#"{{"point": "{label}", "measured": {{"ios": 100000, "iops": {iops}, "mb_s": {}, "mean_us": 200.0, "p50_us": 150.0, "p99_us": 900.0}}}}"#,
                iops * bs / 1e6
            )
        })
        .collect();
    std::fs::write(
        &measured,
        format!(
            r#"{{"target": "/dev/loop0", "region_bytes": 1073741824, "duration_s": 120.0, "load_average": "1.0 1.0 1.0", "points": [{}]}}"#,
            points.join(",")
        ),
    )
    .unwrap();
    let (spec, json) = (dir.path().join("spec.toml"), dir.path().join("fit.json"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "calibrate",
            "--target",
            "x",
            "--measured",
            s(&measured),
            "-o",
            s(&spec),
            "--json",
            s(&json),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .with_terminal_signals()
        .spawn()
        .unwrap();
    // The fit runs once it says so (on stdout: the spec goes to -o); read that, then signal.
    let mut err = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let t0 = Instant::now();
    while !String::from_utf8_lossy(&seen).contains("fitting the SSD model") {
        let mut b = [0u8; 256];
        let n = std::io::Read::read(&mut err, &mut b).unwrap();
        assert!(n > 0, "calibrate ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&b[..n]);
        assert!(t0.elapsed() < Duration::from_secs(60));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let done = wait_within(child, Duration::from_secs(30), |c| {
        let _ = c.kill();
    });
    let status = done.status.expect("calibrate did not stop within 30 s");
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["measured.json".to_string()], "{names:?}");
}

/// SIGTERM to `compare` while fio runs: elevator waited out fio's ramp and runtime (SIGTERM
/// reaches elevator alone, not fio) before stopping. Now fio is told to stop; the command
/// ends within seconds (exit 143), the loop device detached and its scratch file removed.
/// Root, fio and losetup needed; skipped with a notice otherwise.
#[test]
fn sigterm_during_compare_stops_fio_and_cleans_up() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0
        || Command::new("fio").arg("--version").output().is_err()
        || Command::new("losetup").arg("--version").output().is_err()
    {
        eprintln!("skipped: needs root, fio and losetup");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let json_dir = dir.path().join("json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "compare",
            "w1",
            "--rounds",
            "1",
            "--ramp",
            "0",
            "--runtime",
            "120",
            "--kernel",
            "none",
            "--ours",
            "none",
            "--workdir",
            s(dir.path()),
            "--json-dir",
            s(&json_dir),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .with_terminal_signals()
        .spawn()
        .unwrap();
    // Wait for fio to be running under elevator (a child process named fio).
    let t0 = Instant::now();
    let pid = child.id();
    // A process named fio whose parent is elevator (whatever thread spawned it).
    let fio_running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
            status.lines().any(|l| l == "Name:\tfio")
                && status.lines().any(|l| {
                    l.split_whitespace().collect::<Vec<_>>() == ["PPid:", &pid.to_string()]
                })
        })
    };
    while !fio_running() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("compare ended ({st}) before fio ran");
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "fio never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    // fio was to run 120 s: a compare that waits out fio's runtime fails at this limit.
    let done = wait_within(child, Duration::from_secs(60), |c| {
        let _ = c.kill();
    });
    let status = done
        .status
        .expect("compare did not stop within 60 s of SIGTERM");
    let o = Out::of(status, &done);
    assert_eq!(o.code, 143, "{}", o.stderr);
    let scratch: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != &json_dir)
        .collect();
    assert!(scratch.is_empty(), "left behind: {scratch:?}");
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    assert!(
        !String::from_utf8_lossy(&loops.stdout).contains(s(dir.path())),
        "a loop device over the scratch file is still attached"
    );
}

// ----- a partial merge -----

/// `merge` of shards 0/3 and 2/3 of a sweep (1/3 not given): a table missing cell 1, with
/// "merged 4 rows from 2 files" and nothing more. A partial merge stays allowed (to look at
/// while the batch runs), but now says which cells below the highest are absent.
#[test]
fn a_merge_missing_a_shard_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/anticipatory.toml");
    let mut shards = Vec::new();
    for i in [0, 2] {
        let p = dir.path().join(format!("s{i}.parquet"));
        let o = elevator(&[
            "sim",
            s(&scenario),
            "--sweep",
            "seed=1,2,3",
            "--shard",
            &format!("{i}/3"),
            "--parquet",
            s(&p),
        ]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        shards.push(p);
    }
    let out = dir.path().join("m.parquet");
    let o = elevator(&["merge", "-o", s(&out), s(&shards[0]), s(&shards[1])]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("1 cells below the highest merged are absent (the first is cell 1)"),
        "{}",
        o.stdout
    );
}

// ----- outputs checked before the work -----

/// `reproduce all --json /missing/x.json` (or `--json DIR`, `--report FILE`): every
/// experiment ran (minutes) before the output was found unwritable, and the results were
/// lost. Now both are checked before the first experiment: the refusal comes at once (the
/// 60 s bound is far below what `all` takes), naming the flag.
#[test]
fn reproduce_checks_its_outputs_before_the_experiments_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let missing = dir.path().join("missing/x.json");
    for args in [
        vec!["reproduce", "all", "--json", s(&missing)],
        vec!["reproduce", "all", "--json", s(dir.path())],
        vec!["reproduce", "all", "--report", s(&file)],
    ] {
        let o = elevator_within(&args, Duration::from_secs(60));
        clean_error(&o, &[args[2]]);
    }
}

/// `sim` of a job with `runtime=1000h` and `time_based`: the simulator computed hours of
/// real time for 1000 simulated hours, without a word (killed at 20 s when tried). Now
/// refused naming the line, as a scenario's simulated times are bounded (a day).
#[test]
fn sim_of_a_job_running_1000_hours_is_refused_not_computed_for_hours() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("long.fio");
    std::fs::write(
        &job,
        "[j]\nrw=randread\nbs=4k\nsize=16m\nruntime=1000h\ntime_based\n",
    )
    .unwrap();
    let o = elevator_within(&["sim", s(&job)], Duration::from_secs(60));
    clean_error(&o, &["long.fio:5", "runtime", "a day"]);
}
