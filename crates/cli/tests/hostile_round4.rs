//! Hostile cases of issue 32, fourth round: what the earlier rounds never tried. Signals in
//! the middle of a run (SIGINT, SIGTERM), and files that change while elevator reads them.
//! Each test waits for an observable point of the run (a temporary file appearing), never for
//! a time, and bounds the whole run so a hang fails instead of waiting for ever.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod direct_io;
    pub mod stdin;
    pub mod traces;
}
use common::bounded::{clean_error, elevator, s, Out};
use common::child::{wait_within, TerminalSignals};
use common::direct_io::direct_io_works;
use common::stdin::with_stdin;
use common::traces::disksim_4k_trace;

/// A DiskSim ASCII trace of `n` 4 KiB requests, 1 ms apart (writes when `write`), over the
/// first 4 GB.
fn disksim_trace(path: &Path, n: u64, write: bool) {
    disksim_4k_trace(path, n, write, 1_000_000);
}

fn spawn(args: &[&str], tmpdir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .env("TMPDIR", tmpdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .with_terminal_signals()
        .spawn()
        .expect("run elevator")
}

/// Wait (at most two minutes: then the run is broken) until `ready` holds, polling.
fn wait_for(what: &str, child: &mut Child, mut ready: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("elevator ended ({s}) before {what}");
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "never saw {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Names in `dir` (none if it does not exist).
fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn has_temporary(dir: &Path) -> bool {
    names(dir).iter().any(|n| n.contains(".elevator-tmp-"))
}

/// Send `sig` to `child`, then wait for it at most 30 s (it must end promptly: a hang fails).
fn signal_and_wait(mut child: Child, sig: i32) -> Out {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let _ = &mut child;
    let done = wait_within(child, Duration::from_secs(30), |c| {
        let _ = c.kill();
    });
    let status = done
        .status
        .expect("elevator did not end within 30 s of the signal");
    Out::of(status, &done)
}

// ----- signals mid-run -----

/// SIGINT while `replay` writes a blktrace and will write `--json` over an older result: the
/// process ended at once by the default action, leaving `deadline.blktrace.0` cut mid-record
/// under the promised name. Now the trace is written beside its name and renamed when whole;
/// the signal watcher removes what is unfinished and exits 130 with a message; the older
/// JSON is intact and nothing else is left.
#[test]
fn sigint_during_a_replay_leaves_no_cut_blktrace_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("long.trace");
    disksim_trace(&trace, 1_000_000, false);
    let bt = dir.path().join("bt");
    let json = dir.path().join("out.json");
    std::fs::write(&json, "older result\n").unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = spawn(
        &[
            "replay",
            s(&trace),
            "--format",
            "disksim",
            "--sched",
            "deadline,noop,bfq",
            "--blktrace-out",
            s(&bt),
            "--json",
            s(&json),
        ],
        &tmp,
    );
    wait_for("the blktrace being written", &mut child, || {
        has_temporary(&bt)
    });
    let out = signal_and_wait(child, libc::SIGINT);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(
        out.stderr.contains("interrupted by SIGINT"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.len() < 1024, "{}", out.stderr);
    let left = names(&bt);
    assert!(
        left.iter().all(|n| !n.contains(".elevator-tmp-")),
        "a temporary file was left: {left:?}"
    );
    // Whatever trace is there is whole (a scheduler that finished): none was cut.
    assert_eq!(
        std::fs::read_to_string(&json).unwrap(),
        "older result\n",
        "--json was touched"
    );
    assert!(!has_temporary(dir.path()), "{:?}", names(dir.path()));
    assert!(names(&tmp).is_empty(), "left in TMPDIR: {:?}", names(&tmp));
}

/// SIGTERM while `replay` spools a trace from standard input (a pipe held open): the private
/// directory of the copy (`TMPDIR/elevator-replay-*`) was left behind, since the default
/// action runs no destructor. Now it is removed and the exit status is 143.
#[test]
fn sigterm_while_a_piped_trace_is_spooled_removes_the_copy_and_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "replay",
            "-",
            "--format",
            "disksim",
            "--sched",
            "deadline,noop",
        ])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .with_terminal_signals()
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"0.0 0 0 8 1\n1.0 0 8 8 1\n").unwrap();
    stdin.flush().unwrap();
    wait_for("the spool directory", &mut child, || {
        names(&tmp)
            .iter()
            .any(|n| n.starts_with("elevator-replay-"))
    });
    let out = signal_and_wait(child, libc::SIGTERM);
    drop(stdin);
    assert_eq!(out.code, 143, "{}", out.stderr);
    assert!(out.stderr.contains("SIGTERM"), "{}", out.stderr);
    assert!(names(&tmp).is_empty(), "left in TMPDIR: {:?}", names(&tmp));
}

/// SIGINT while `replay` drives a real target: the process died mid-write, so the file it
/// had laid out no longer matched its marker and the next replay on it was refused ("changed
/// since"). Now the replay stops (what is in flight completes), re-marks the target and exits
/// 130; the next replay on the file runs without `--allow-overwrite`.
#[test]
fn sigint_during_a_replay_on_a_target_stops_it_and_keeps_the_target_reusable() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let trace = dir.path().join("writes.trace");
    // 600 writes 1 ms apart in recorded time, at --speed 0.01: 60 s of real time.
    disksim_trace(&trace, 600, true);
    let target = dir.path().join("target.img");
    let mut child = spawn(
        &[
            "replay",
            s(&trace),
            "--format",
            "disksim",
            "--speed",
            "0.01",
            "--target",
            s(&target),
        ],
        dir.path(),
    );
    wait_for("the target laid out", &mut child, || {
        std::fs::metadata(&target).is_ok_and(|m| m.len() > 0)
    });
    // Let the first writes land (a few of its 100 ms gaps).
    std::thread::sleep(Duration::from_millis(300));
    let out = signal_and_wait(child, libc::SIGINT);
    assert_eq!(out.code, 130, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("interrupted"), "{}", out.stderr);
    // The file is still elevator's: a short replay on it is not refused.
    let short = dir.path().join("short.trace");
    disksim_trace(&short, 3, true);
    let again = elevator(&[
        "replay",
        s(&short),
        "--format",
        "disksim",
        "--target",
        s(&target),
    ]);
    assert_eq!(again.code, 0, "{}", again.stderr);
}

/// A replay that writes a target it laid out, run twice: the second was refused, the file
/// "changed since elevator laid it out" by the first replay's own writes (`replay` never
/// re-marked its target, as `run` does). Now it is re-marked on every way out.
#[test]
fn a_second_replay_on_a_target_the_first_wrote_is_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let trace = dir.path().join("writes.trace");
    disksim_trace(&trace, 20, true);
    let target = dir.path().join("target.img");
    for round in 0..2 {
        let out = elevator(&[
            "replay",
            s(&trace),
            "--format",
            "disksim",
            "--speed",
            "1000",
            "--target",
            s(&target),
        ]);
        assert_eq!(out.code, 0, "round {round}: {}", out.stderr);
    }
}

// ----- files that change while read -----

/// A trace appended to while `replay` compares schedulers: each scheduler opens the trace
/// again, so the later ones replayed more requests than the first and the table set them
/// side by side as one input. Now every input is stamped (device, inode, size, times) before
/// it is read and checked after each scheduler: the run fails naming the trace, and no
/// output is written.
#[test]
fn a_trace_that_grows_between_schedulers_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("growing.trace");
    disksim_trace(&trace, 1_000_000, false);
    let bt = dir.path().join("bt");
    let json = dir.path().join("out.json");
    let mut child = spawn(
        &[
            "replay",
            s(&trace),
            "--format",
            "disksim",
            "--sched",
            "deadline,noop",
            "--blktrace-out",
            s(&bt),
            "--json",
            s(&json),
        ],
        dir.path(),
    );
    wait_for("the first scheduler's run", &mut child, || {
        has_temporary(&bt)
    });
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&trace)
        .unwrap();
    f.write_all(b"1000000.000 0 8 8 1\n").unwrap();
    drop(f);
    let done = wait_within(child, Duration::from_secs(300), |c| {
        let _ = c.kill();
    });
    let code = done.status.expect("hung").code();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("growing.trace"), "{stderr}");
    assert!(
        stderr.contains("changed while elevator read it"),
        "{stderr}"
    );
    assert!(!json.exists(), "results of two inputs were written");
}

/// A scenario's `trace` job whose file is cut while the simulation runs: the job's second
/// pass ended early, recorded why in `TraceReplay::error`, and nothing read it: `sim` printed
/// the figures of part of the trace with exit 0. Now a job that ended before its input is an
/// error of the run (`RunReport::job_error`), and the scenario's files are stamped too.
#[test]
fn a_scenario_trace_cut_mid_run_is_an_error_not_partial_figures() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("cut.trace");
    disksim_trace(&trace, 1_000_000, false);
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"cut\"\ndrive = \"cheetah9lp\"\n\n[[job]]\nname = \"t\"\nkind = \"trace\"\n\
             trace = \"{}\"\n",
            trace.display()
        ),
    )
    .unwrap();
    let bt = dir.path().join("bt");
    let mut child = spawn(&["sim", s(&scenario), "--blktrace-out", s(&bt)], dir.path());
    wait_for("the run", &mut child, || has_temporary(&bt));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&trace)
        .unwrap()
        .set_len(1000)
        .unwrap();
    let done = wait_within(child, Duration::from_secs(300), |c| {
        let _ = c.kill();
    });
    let code = done.status.expect("hung").code();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cut.trace"), "{stderr}");
    assert!(stderr.len() < 1024, "{stderr}");
    assert!(names(&bt).is_empty(), "{:?}", names(&bt));
}

/// A drive spec given as a symlink, swapped to another drive between two schedulers of one
/// `replay`: the second ran on another drive, side by side with the first. Stamped through
/// the link (the file it names), the swap is found.
#[test]
fn a_drive_spec_symlink_swapped_mid_run_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    disksim_trace(&trace, 1_000_000, false);
    let drives = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/drives");
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::copy(drives.join("cheetah9lp.toml"), &a).unwrap();
    std::fs::copy(drives.join("atlas10k.toml"), &b).unwrap();
    let link = dir.path().join("drive.toml");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let bt = dir.path().join("bt");
    let mut child = spawn(
        &[
            "replay",
            s(&trace),
            "--format",
            "disksim",
            "--sched",
            "deadline,noop",
            "--drive",
            s(&link),
            "--blktrace-out",
            s(&bt),
        ],
        dir.path(),
    );
    wait_for("the first scheduler's run", &mut child, || {
        has_temporary(&bt)
    });
    let tmp_link: PathBuf = dir.path().join("drive.toml.new");
    std::os::unix::fs::symlink(&b, &tmp_link).unwrap();
    std::fs::rename(&tmp_link, &link).unwrap();
    let done = wait_within(child, Duration::from_secs(300), |c| {
        let _ = c.kill();
    });
    let code = done.status.expect("hung").code();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("drive.toml"), "{stderr}");
    assert!(stderr.contains("replaced"), "{stderr}");
}

/// Run elevator with `bytes` on its standard input (a pipe), bounded in time.
fn with_bytes(args: &[&str], bytes: Vec<u8>) -> Out {
    with_stdin(args, &[], Duration::from_secs(120), move |mut pipe| {
        // Elevator may stop reading early (a refusal): the write then just fails.
        let _ = pipe.write_all(&bytes);
    })
}

/// A job file (or scenario, or drive spec) given as a pipe (`sim <(cat job.fio)`,
/// `/dev/stdin`): `sim` read it once to learn whether it is a job file or a scenario, and the
/// second read found the pipe empty: "the file defines no job" or "missing field `drive`"
/// for a valid input. Now an input on a FIFO or pipe is copied once (`common::read_once`,
/// errors naming it as given) and read from the copy; one past 4 MiB is refused.
#[test]
fn a_job_file_on_a_pipe_is_read_once_not_found_empty() {
    let job = b"[r]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=100\n".to_vec();
    let out = with_bytes(&["sim", "/dev/stdin", "--sched", "deadline,noop"], job);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("noop"), "{}", out.stdout);
    let mut huge = b"[r]\nrw=randread\n".to_vec();
    huge.extend(std::iter::repeat_n(b'#', 5 << 20));
    let out = with_bytes(&["sim", "/dev/stdin"], huge);
    clean_error(&out, &["/dev/stdin", "larger than"]);
}

// ----- unsafe writes on commands not tried before -----

/// `validate --json` onto the validation trace it reads overwrote the trace with the results
/// (exit 0), `--plot` onto the drive spec alike, and `drive import-disksim -o` onto the
/// `.parv` (or the `.diskspecs`, `.model`, `.seek` beside it) overwrote the model it
/// imports. Each is refused before anything is read or written, compared by device and inode
/// (`OutputOpts::check`), and the input is intact.
#[test]
fn validate_and_import_disksim_refuse_an_output_that_is_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("v.trace");
    std::fs::write(&trace, "R Miss 0 8 5000 0\nR Miss 800 8 5000 0\n").unwrap();
    let drive = dir.path().join("d.toml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/drives/cheetah9lp.toml"),
        &drive,
    )
    .unwrap();
    let before = (
        std::fs::read(&trace).unwrap(),
        std::fs::read(&drive).unwrap(),
    );
    for (flag, out) in [("--json", &trace), ("--plot", &drive), ("--json", &drive)] {
        let r = elevator(&[
            "validate",
            "--drive",
            s(&drive),
            "--trace",
            s(&trace),
            flag,
            s(out),
        ]);
        clean_error(&r, &[flag]);
    }
    assert_eq!(
        (
            std::fs::read(&trace).unwrap(),
            std::fs::read(&drive).unwrap()
        ),
        before
    );
    let parv = dir.path().join("m.parv");
    let seek = dir.path().join("m.seek");
    std::fs::write(&parv, "disksim parameters\n").unwrap();
    std::fs::write(&seek, "seek curve\n").unwrap();
    for out in [&parv, &seek] {
        let r = elevator(&["drive", "import-disksim", s(&parv), "-o", s(out)]);
        clean_error(&r, &["--output"]);
    }
    assert_eq!(std::fs::read(&parv).unwrap(), b"disksim parameters\n");
    assert_eq!(std::fs::read(&seek).unwrap(), b"seek curve\n");
}
