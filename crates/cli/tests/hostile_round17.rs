//! Hostile cases of issue 32, seventeenth round: the process state a user's shell hands over
//! (signals ignored, blocked, a file-size limit, a reader of standard output gone), traces
//! compressed or of a format their first line cannot tell, and outputs whose errors must name
//! the flag and the path. Every run is bounded in time, so a hang fails instead of waiting.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod mount;
    pub mod traces;
}
use common::bounded::{clean_error, elevator_set_up, elevator_within, s, Out, MINUTE};
use common::child::{rlimit, wait_within};
use common::mount::{fuse_available, mounted, Mount};
use common::traces::disksim_trace;

/// A fio job reading `dir/t` at random for `runtime` seconds (after laying out 8 MiB).
fn reading_job(dir: &Path, runtime: u32) -> PathBuf {
    let p = dir.join("r.fio");
    std::fs::write(
        &p,
        format!(
            "[r]\nrw=randread\nbs=4k\nsize=8m\nruntime={runtime}\ntime_based=1\n\
             ioengine=io_uring\ndirect=1\n"
        ),
    )
    .unwrap();
    p
}

/// Set `sig`'s disposition to ignored in the child before it execs `elevator`, as a shell
/// does for `trap '' SIG`, `nohup` (SIGHUP) and a background command of a script (SIGINT).
/// The kernel keeps an ignored disposition through `execve` (`flush_signal_handlers` resets
/// only handled signals to SIG_DFL).
fn ignoring(cmd: &mut Command, sig: libc::c_int) {
    // SAFETY: signal(2) is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(sig, libc::SIG_IGN);
            Ok(())
        });
    }
}

/// Block `sig` in the child before it execs `elevator`: the kernel keeps the blocked mask
/// through `execve` (`begin_new_exec` leaves `current->blocked` as it was).
fn blocking(cmd: &mut Command, sig: libc::c_int) {
    // SAFETY: sigemptyset, sigaddset and sigprocmask are async-signal-safe; they run in the
    // child before exec, on a set local to the closure.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
}

/// Limit the child's file size to `bytes` (`ulimit -f`, RLIMIT_FSIZE).
fn file_size_limit(cmd: &mut Command, bytes: u64) {
    rlimit(cmd, libc::RLIMIT_FSIZE, bytes);
}

/// `elevator ARGS`, set up by `set_up`, running (its output piped).
fn spawn(args: &[&str], set_up: impl FnOnce(&mut Command)) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_elevator"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    set_up(&mut cmd);
    cmd.spawn().expect("run elevator")
}

/// Send `sig` to `child`.
fn send(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) of our own child's pid; it has not been reaped yet.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

/// The `.NAME.elevator-tmp-PID` files left in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("elevator-tmp"))
                .collect()
        })
        .unwrap_or_default()
}

/// `run` started with SIGINT ignored, as a shell without job control starts a background
/// command (`elevator run J --target F &` in a script): the terminal's Ctrl-C goes to the
/// whole process group, script and background command alike, and POSIX has the shell ignore
/// SIGINT for the background one so that only the script ends. elevator caught SIGINT
/// whatever it inherited (as fio's `set_sig_handlers` does), so the script's Ctrl-C stopped
/// the background run at once (exit 130). Now a signal ignored at start stays ignored (as
/// mkfs, which installs no handler, Python and coreutils' `sort` keep it), and SIGTERM, which
/// the shell leaves alone, still stops the run cooperatively (exit 143).
#[test]
fn run_started_with_sigint_ignored_keeps_it_ignored_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let job = reading_job(dir.path(), 20);
    let target = dir.path().join("t");
    let child = spawn(
        &["run", s(&job), "--target", s(&target), "--sched", "none"],
        |c| ignoring(c, libc::SIGINT),
    );
    std::thread::sleep(Duration::from_secs(3));
    send(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_secs(2));
    let mut child = child;
    let still = child.try_wait().unwrap().is_none();
    if still {
        send(&child, libc::SIGTERM);
    }
    let done = wait_within(child, MINUTE, |c| {
        let _ = c.kill();
    });
    let out = Out::of(done.status.expect("run ended"), &done);
    assert!(
        still,
        "SIGINT, ignored when elevator started, stopped the run (exit {}): {}",
        out.code, out.stderr
    );
    assert_eq!(out.code, 143, "{}", out.stderr);
}

/// `mount` started with SIGINT ignored (`elevator mount B M &` in a script): SIGINT unmounted
/// it. Now it stays mounted through SIGINT, and SIGTERM unmounts it (exit 0, the mount's
/// documented status once every I/O completed).
#[test]
fn mount_started_with_sigint_ignored_keeps_it_ignored_and_unmounts_on_sigterm() {
    let test = "mount_started_with_sigint_ignored_keeps_it_ignored_and_unmounts_on_sigterm";
    if !fuse_available(test) {
        return;
    }
    let dirs = tempfile::tempdir().unwrap();
    let back = dirs.path().join("back");
    std::fs::create_dir(&back).unwrap();
    let mut m = Mount::start_set_up(back, dirs, "none", &[], |c| ignoring(c, libc::SIGINT));
    std::fs::write(m.path("f"), b"data").unwrap();
    // SAFETY: kill(2) of the daemon, our child, not reaped.
    unsafe { libc::kill(m.pid() as libc::pid_t, libc::SIGINT) };
    let after_int = m.exited_within(Duration::from_secs(3));
    assert!(
        after_int.is_none() && mounted(&m.mnt),
        "SIGINT, ignored when elevator started, ended the mount: {after_int:?}"
    );
    // SAFETY: as above.
    unsafe { libc::kill(m.pid() as libc::pid_t, libc::SIGTERM) };
    let status = m
        .exited_within(Duration::from_secs(30))
        .expect("SIGTERM ended the mount");
    assert!(status.success(), "{status:?}");
    assert!(!mounted(&m.mnt), "still mounted after SIGTERM");
    assert_eq!(std::fs::read(m.back.join("f")).unwrap(), b"data");
}

/// `run` started with SIGTERM blocked (a mask inherited through exec: a parent that blocked
/// it in the thread that forked us): the signal stayed pending for the whole run, so `kill`
/// did nothing (the 20 s job ran to its end, exit 0; a mount could only be SIGKILLed, leaving
/// it dead). Now the caught signals are unblocked at start: SIGTERM stops the run at once.
#[test]
fn run_started_with_sigterm_blocked_still_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let job = reading_job(dir.path(), 20);
    let target = dir.path().join("t");
    let child = spawn(
        &["run", s(&job), "--target", s(&target), "--sched", "none"],
        |c| blocking(c, libc::SIGTERM),
    );
    std::thread::sleep(Duration::from_secs(3));
    send(&child, libc::SIGTERM);
    let sent = Instant::now();
    let done = wait_within(child, MINUTE, |c| {
        let _ = c.kill();
    });
    let out = Out::of(done.status.expect("run ended"), &done);
    let took = sent.elapsed();
    assert_eq!(out.code, 143, "{}", out.stderr);
    assert!(
        took < Duration::from_secs(10),
        "stopped {took:?} after SIGTERM"
    );
}

/// A write past the file-size limit (`ulimit -f`): the kernel sends SIGXFSZ
/// (`generic_write_check_limits`), whose default action killed elevator mid-write (exit by
/// signal 25, 153 in a shell): `--blktrace-out`'s temporary file left beside its name and the
/// `--json` computed beside it never written, without a word. Now SIGXFSZ is ignored, the
/// write fails with EFBIG, and the output that made it is an error naming the flag and the
/// path; every other output is still written and nothing is left behind.
#[test]
fn a_write_past_the_file_size_limit_is_an_error_of_its_output_not_sigxfsz() {
    let dir = tempfile::tempdir().unwrap();
    let trace = disksim_trace(dir.path(), 2000);
    let bt = dir.path().join("bt");
    let json = dir.path().join("r.json");
    let out = elevator_set_up(
        &[
            "replay",
            s(&trace),
            "--sched",
            "noop,deadline",
            "--blktrace-out",
            s(&bt),
            "--json",
            s(&json),
        ],
        MINUTE,
        |c| file_size_limit(c, 64 * 1024),
    );
    clean_error(
        &out,
        &["--blktrace-out", "noop.blktrace.0", "File too large"],
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    assert_eq!(j["runs"].as_array().unwrap().len(), 2);
    assert!(temporaries(&bt).is_empty(), "{:?}", temporaries(&bt));
}

/// The same limit under `run`'s layout of a new 8 MiB target: killed by SIGXFSZ, the file
/// elevator created was left half laid out. Now the layout fails with EFBIG, naming the
/// target, and the file it created is removed, as after ENOSPC.
#[test]
fn a_layout_past_the_file_size_limit_fails_and_removes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("w.fio");
    std::fs::write(&job, "[w]\nrw=randwrite\nbs=4k\nsize=8m\n").unwrap();
    let target = dir.path().join("t");
    let out = elevator_set_up(
        &["run", s(&job), "--target", s(&target), "--sched", "none"],
        MINUTE,
        |c| file_size_limit(c, 1 << 20),
    );
    clean_error(&out, &[s(&target), "File too large"]);
    assert!(!target.exists(), "the half laid-out target was left");
}

/// Standard output's reader gone after the first table (`elevator replay T --json F | head
/// -1`): SIGPIPE's default action (restored at start) ended elevator at its next write,
/// losing `--json` and every later output (exit by signal 13). Now SIGPIPE stays ignored:
/// the failed write is an error of standard output only, every other output is written, and
/// the exit is 141, as a shell reports SIGPIPE's end, without a message.
#[test]
fn a_reader_of_stdout_gone_still_gets_every_other_output_written() {
    let dir = tempfile::tempdir().unwrap();
    let trace = disksim_trace(dir.path(), 400);
    let json = dir.path().join("r.json");
    let mut child = spawn(
        &[
            "replay",
            s(&trace),
            "--sched",
            "noop,deadline,bfq,cfq",
            "--json",
            s(&json),
        ],
        |_| {},
    );
    // The reader goes away before elevator writes anything.
    drop(child.stdout.take());
    let done = wait_within(child, MINUTE, |c| {
        let _ = c.kill();
    });
    let status = done.status.expect("replay ended");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(
        (status.code(), status.signal()),
        (Some(141), None),
        "{stderr}"
    );
    assert!(!stderr.contains("error"), "{stderr}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    assert_eq!(j["runs"].as_array().unwrap().len(), 4);
}

/// A compressed trace (an MSR Cambridge trace as published, `.csv.gz`; zstd alike): format
/// detection said only "cannot tell the trace format", and with `--format msr` the
/// compressed bytes were read as text: "msr.gz:2: 6 fields, expected 7". Now refused by its
/// magic number, whatever the format given and on standard input too, naming the file, the
/// compression and the way out.
#[test]
fn a_compressed_trace_is_refused_naming_its_compression() {
    let dir = tempfile::tempdir().unwrap();
    // RFC 1952's header (magic 1f 8b, deflate) and zstd's frame magic, then bytes.
    let gz = dir.path().join("msr.csv.gz");
    let mut bytes = vec![0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03];
    bytes.extend((0..4000u32).map(|i| (i * 7919 % 251) as u8));
    std::fs::write(&gz, &bytes).unwrap();
    let zst = dir.path().join("spc.zst");
    let mut bytes = vec![0x28, 0xb5, 0x2f, 0xfd];
    bytes.extend((0..4000u32).map(|i| (i * 104_729 % 253) as u8));
    std::fs::write(&zst, &bytes).unwrap();
    for (file, name, format) in [(&gz, "gzip", "msr"), (&zst, "zstd", "spc")] {
        for args in [
            vec!["replay", s(file), "--sched", "noop"],
            vec!["replay", s(file), "--sched", "noop", "--format", format],
        ] {
            let out = elevator_within(&args, MINUTE);
            clean_error(
                &out,
                &[s(file), &format!("{name}-compressed"), "decompress"],
            );
        }
    }
    let out = elevator_set_up(&["replay", "-", "--sched", "noop"], MINUTE, |c| {
        c.stdin(std::fs::File::open(&gz).unwrap());
    });
    clean_error(&out, &["gzip-compressed", "decompress"]);
}

/// An MQSim trace starting at time 0 (nanoseconds): its first line, `0 0 100 8 1`, was told
/// DiskSim (milliseconds) because its time was not past 10^6, and the replay ran with every
/// gap 10^6 times too long: figures of an idle drive, exit 0. Now integer times from near 0
/// in five columns are refused as either, naming both formats; `--format mqsim` replays it,
/// and a DiskSim trace whose later lines carry a fraction is still told DiskSim.
#[test]
fn an_mqsim_trace_from_time_0_is_not_replayed_as_disksim_milliseconds() {
    let dir = tempfile::tempdir().unwrap();
    let mq = dir.path().join("mq.trace");
    let text: String = (0..2000u64)
        .map(|i| format!("{} 0 {} 8 {}\n", i * 500_000, (i * 977) % 1_000_000, i % 2))
        .collect();
    std::fs::write(&mq, text).unwrap();
    let out = elevator_within(&["replay", s(&mq), "--sched", "noop"], MINUTE);
    clean_error(&out, &[s(&mq), "DiskSim", "MQSim", "--format"]);
    let out = elevator_within(
        &["replay", s(&mq), "--sched", "noop", "--format", "mqsim"],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // 2000 requests 0.5 ms apart: the replay spans about a second, not 10^6 s.
    let span: f64 = out
        .stdout
        .split("skipped), ")
        .nth(1)
        .and_then(|r| r.split(" s").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no span in: {}", out.stdout));
    assert!((0.9..60.0).contains(&span), "span {span} s: {}", out.stdout);
    let ds = dir.path().join("ds.trace");
    std::fs::write(&ds, "0 0 100 8 1\n2.5 0 108 8 1\n5 0 116 8 0\n").unwrap();
    let out = elevator_within(&["replay", s(&ds), "--sched", "noop"], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// An output that fails after the work names its flag and its path: `--json /dev/full` said
/// "writing /dev/full" (no flag), and `--blktrace-out` onto a full filesystem "--blktrace-out:
/// write the trace: No space left on device" (no path). The other outputs and the tables are
/// still written.
#[test]
fn a_failed_output_names_its_flag_and_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let trace = disksim_trace(dir.path(), 400);
    let out = elevator_within(
        &[
            "replay",
            s(&trace),
            "--sched",
            "noop",
            "--json",
            "/dev/full",
        ],
        MINUTE,
    );
    clean_error(&out, &["--json", "/dev/full", "No space left"]);
    assert!(out.stdout.contains("total"), "{}", out.stdout);
    // A full filesystem of our own (root: a 64 KiB tmpfs).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "a_failed_output_names_its_flag_and_its_path: full filesystem skipped: needs root"
        );
        return;
    }
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let mounted_ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs", s(&full)])
        .status()
        .is_ok_and(|st| st.success());
    if !mounted_ok {
        eprintln!("a_failed_output_names_its_flag_and_its_path: full filesystem skipped: no tmpfs");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(full.clone());
    let json = dir.path().join("r.json");
    let bt = full.join("bt");
    let out = elevator_within(
        &[
            "replay",
            s(&trace),
            "--sched",
            "noop",
            "--blktrace-out",
            s(&bt),
            "--json",
            s(&json),
        ],
        MINUTE,
    );
    clean_error(
        &out,
        &[
            "--blktrace-out",
            &format!("{}/noop.blktrace.0", s(&bt)),
            "No space left",
        ],
    );
    assert!(json.exists(), "--json was not written");
    assert!(temporaries(&bt).is_empty(), "{:?}", temporaries(&bt));
}
