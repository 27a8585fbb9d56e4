//! Hostile cases of issue 32, fourteenth round: inputs well-formed but hostile in their
//! content, on the surfaces that grew since round 13 (kernel recordings edited by hand,
//! `reproduce all`'s derived outputs, `kernel-record`'s device size, a `run` days long at its
//! own settings, and the simulator's scheduler tags under a deep queue). Every run is
//! bounded in time, so a hang fails instead of waiting.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod direct_io;
    pub mod recording;
}
use common::bounded::{clean_error, elevator_within, s, Out, MINUTE};
use common::child::{wait_within, TerminalSignals};
use common::direct_io::direct_io_works;
use common::recording::recording;

/// A copy of the corpus's `batches/mq-deadline` recording in `dir` whose trace is plain text
/// (`trace.txt`), every line passed through `edit` (`None` drops it), and whose meta.json is
/// changed by `meta`. `None` (with a notice) where gzip is not installed.
fn edited(
    dir: &Path,
    edit: impl Fn(&str) -> Vec<String>,
    meta: impl FnOnce(&mut serde_json::Value),
) -> Option<PathBuf> {
    let rec = recording(dir, |m| {
        m["trace"]["file"] = "trace.txt".into();
        meta(m);
    });
    let Ok(out) = Command::new("gzip")
        .arg("-dc")
        .arg(rec.join("trace.txt.gz"))
        .output()
    else {
        eprintln!("skipping: gzip is not installed");
        return None;
    };
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<String> = text.lines().flat_map(&edit).collect();
    std::fs::write(rec.join("trace.txt"), lines.join("\n") + "\n").unwrap();
    std::fs::remove_file(rec.join("trace.txt.gz")).unwrap();
    Some(rec)
}

/// `sector + sectors` of a block event line rewritten by `f`.
fn extents(line: &str, f: impl Fn(u64, u64) -> (u64, u64)) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    match words.iter().position(|w| *w == "+") {
        Some(i) if i > 0 && i + 1 < words.len() => {
            let (a, b) = f(words[i - 1].parse().unwrap(), words[i + 1].parse().unwrap());
            let mut w: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            w[i - 1] = a.to_string();
            w[i + 1] = b.to_string();
            w.join(" ")
        }
        _ => line.to_string(),
    }
}

/// Requests a kernel cannot have issued on the recorded device: past its end (every
/// request moved up by 2^32 sectors, the device being 2^18), wrapping past 2^64
/// (`sector + sectors` overflowed in the block layer), and of 2^31 sectors (past the queue's
/// `max_sectors_kb` of 1280, and past the `u32` bytes a request carries). The first two
/// were replayed without a word (agreement printed); the third ran for minutes, the huge
/// requests split into millions of pieces each waiting for a scheduler tag. Now each is
/// refused naming the trace, the line of the request's dispatch and the field
/// (`kernel_diff::check_requests`, after `bio_check_eod` and `bio_split_to_limits`).
#[test]
fn kernel_diff_refuses_requests_past_the_device_or_its_queue_limits() {
    type Case = (&'static str, fn(u64, u64) -> (u64, u64), &'static str);
    let cases: [Case; 3] = [
        ("past-end", |a, n| (a + (1 << 32), n), "past the end"),
        ("wrap", |_, n| (u64::MAX - 8, n), "past the end"),
        ("huge", |a, _| (a, 1 << 31), "sectors"),
    ];
    for (name, f, needle) in cases {
        let dir = tempfile::tempdir().unwrap();
        let Some(rec) = edited(dir.path(), |l| vec![extents(l, f)], |_| {}) else {
            return;
        };
        let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
        clean_error(&out, &["trace.txt:", "field `sector", needle]);
        assert!(out.stdout.is_empty(), "{name}: {}", out.stdout);
    }
}

/// The same request issued twice (each `block_rq_issue` line repeated), or completed
/// without its issue (the issues dropped from a trace that keeps its other events): the
/// second issue became a dispatch of a request of its own, and 295 requests were compared
/// as 590 decisions (17.8 % agreed) without a word. The assembly counted them
/// (`Assembly::orphan_issues`), and nothing told them. Now a warning names the counts and the
/// first line of an event that fits no request's life.
#[test]
fn kernel_diff_tells_events_that_fit_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let Some(rec) = edited(
        dir.path(),
        |l| {
            if l.contains("block_rq_issue") {
                vec![l.to_string(), l.to_string()]
            } else {
                vec![l.to_string()]
            }
        },
        |_| {},
    ) else {
        return;
    };
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for n in [
        "warning",
        "batches/mq-deadline",
        "295 dispatches of no queued request",
        "the first at line 20",
    ] {
        assert!(out.stderr.contains(n), "{n:?} not in: {}", out.stderr);
    }
}

/// meta.json's `scheduler` says bfq while the queue's scheduler file it recorded during the
/// run shows `[mq-deadline]`: the mq-deadline trace was replayed into bfq without a word
/// (20.3 % agreed). Now refused naming meta.json and `scheduler` (`elv_iosched_show`
/// brackets the scheduler in use).
#[test]
fn kernel_diff_refuses_a_scheduler_its_own_queue_contradicts() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path(), |m| m["scheduler"] = "bfq".into());
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    clean_error(&out, &["meta.json", "field `scheduler`", "mq-deadline"]);
}

/// A groups.txt naming a process the recording never ran (another recording's groups
/// copied beside it): every process of the trace stayed in the root group, in silence. Now
/// refused naming groups.txt, the line and `pid`.
#[test]
fn kernel_diff_refuses_groups_of_processes_the_recording_never_ran() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path(), |_| {});
    std::fs::write(rec.join("groups.txt"), "group /g 100\npid 12345 /g\n").unwrap();
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    clean_error(&out, &["groups.txt:2", "field `pid`", "12345"]);
}

/// meta.json's `trace.bfq_log` of `/etc/passwd` or `../../x`: read from outside the
/// recording (the trace and job file names were checked, the log's not). Now refused as
/// theirs are, naming the field.
#[test]
fn kernel_diff_refuses_a_bfq_log_outside_the_recording() {
    for log in ["/etc/passwd", "../../../../etc/passwd"] {
        let dir = tempfile::tempdir().unwrap();
        let rec = recording(dir.path(), |m| m["trace"]["bfq_log"] = log.into());
        let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
        clean_error(
            &out,
            &["meta.json", "field `trace.bfq_log`", "inside the recording"],
        );
    }
}

/// A fio job of iodepth 4096 under mq-deadline (the tags 64 deep): each dispatch and
/// completion asked, for every request waiting for a scheduler tag, whether it waited, by a
/// scan of all of them (`SchedTags::is_waiting`): 100,000 reads at iodepth 512 took 22 s
/// and at 4096 did not end in 300 s. Now a look-up: both end in seconds.
#[test]
fn sim_of_a_job_4096_deep_under_mq_deadline_is_not_cubic_in_the_waiting_requests() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("deep.fio");
    std::fs::write(
        &job,
        "[r]\nrw=randread\nbs=4k\niodepth=4096\nnumber_ios=100000\nioengine=libaio\n",
    )
    .unwrap();
    let out = elevator_within(
        &[
            "sim",
            s(&job),
            "--sched",
            "mq-deadline,kyber",
            "--drive",
            "samsung-980pro-1tb",
        ],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// `reproduce all --json P` writes one file per experiment beside P (`P-anticipatory.json`
/// ...), and only P was checked: `--json /dev/null` created `/dev/null-anticipatory.json` and
/// three more files in /dev after minutes of runs, and a derived name that was a directory
/// failed after every experiment ran. Now both are refused before anything runs.
#[test]
fn reproduce_all_checks_the_json_files_it_derives_before_running() {
    let out = elevator_within(&["reproduce", "all", "--json", "/dev/null"], MINUTE);
    clean_error(&out, &["--json /dev/null", "not a regular file"]);
    assert!(!Path::new("/dev/null-anticipatory.json").exists());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out-flash.json")).unwrap();
    let json = dir.path().join("out.json");
    let out = elevator_within(&["reproduce", "all", "--json", s(&json)], MINUTE);
    clean_error(&out, &["out-flash.json", "is a directory"]);
}

/// Whether this test can record: root and fio (`kernel-record` needs both); a notice if not.
fn can_record() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !(root && fio) {
        eprintln!("skipping: kernel-record needs root and fio");
    }
    root && fio
}

/// `kernel-record --size` past where the device's data can live: the private tmpfs takes
/// what the job writes from memory (its `size=` bounds, it does not reserve), so `--size
/// 100T` of a writing job would exhaust memory with nothing said; a `--file` device larger
/// than its filesystem's free space failed mid-run as I/O errors. Now refused before anything
/// is set up, naming the size and the memory or space there is.
#[test]
fn kernel_record_refuses_a_device_larger_than_memory_or_free_space() {
    if !can_record() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("w.fio");
    std::fs::write(&job, "[w]\nrw=write\nbs=1m\nsize=1m\n").unwrap();
    let out_dir = dir.path().join("rec");
    let out = elevator_within(
        &[
            "kernel-record",
            s(&job),
            "--sched",
            "none",
            "--size",
            "100T",
            "-o",
            s(&out_dir),
        ],
        MINUTE,
    );
    clean_error(&out, &["device size", "memory"]);
    assert!(!out_dir.exists(), "the output directory was made");
    // A --file on a 16 MiB tmpfs, for a 64 MiB device.
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "h14-small"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipping the --file case: cannot mount a tmpfs");
        return;
    }
    let out = elevator_within(
        &[
            "kernel-record",
            s(&job),
            "--sched",
            "none",
            "--size",
            "64M",
            "--file",
            s(&small.join("dev.img")),
            "-o",
            s(&out_dir),
        ],
        MINUTE,
    );
    let _ = Command::new("umount").arg(&small).status();
    clean_error(&out, &["device size", "free"]);
}

/// `run` of a job whose own settings make it last days (`rate=1` with `size=4m`: 48 days),
/// with stdout and stderr not a terminal: nothing was printed at all until it ended, as
/// fio would run it (round 13's leftover). Now a line up front says how long at least, and
/// which setting makes it so, and that Ctrl-C stops it with the figures measured so far;
/// Ctrl-C then prints the partial table and exits 130.
#[test]
fn run_of_a_job_days_long_at_its_own_settings_says_so_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let job = dir.path().join("slow.fio");
    std::fs::write(&job, "[slow]\nrw=read\nbs=4k\nsize=4m\nrate=1\n").unwrap();
    let err = dir.path().join("stderr");
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", s(&job), "--target", s(&dir.path().join("t.img"))])
        .args(["--sched", "none"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap())
        .with_terminal_signals()
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let said = loop {
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        if text.contains("Ctrl-C") || t0.elapsed() > Duration::from_secs(20) {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Let a first I/O or two happen, then Ctrl-C.
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let done = wait_within(child, MINUTE, |c| {
        let _ = c.kill();
    });
    let status = done
        .status
        .expect("run did not stop on Ctrl-C within a minute");
    let out = Out::of(status, &done);
    for n in ["at least 48 d", "rate=1", "Ctrl-C"] {
        assert!(said.contains(n), "{n:?} not in: {said}");
    }
    assert_eq!(out.code, 130, "{}", std::fs::read_to_string(&err).unwrap());
    assert!(out.stdout.contains("slow"), "{}", out.stdout);
}
