//! Issue 32, round 18: the process state a hostile shell hands over, on the surfaces round 17
//! did not put under it (`calibrate` and `run` measuring a real target, the sweeps,
//! `kernel-diff`), targets on file systems that refuse what elevator needs, and compressed
//! traces refused by one check. Every run is bounded in time, so a hang fails instead of
//! waiting.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common {
    pub mod bounded;
    pub mod calibrate;
    pub mod child;
    pub mod direct_io;
    pub mod traces;
}
use common::bounded::{clean_error, elevator_set_up, elevator_within, s, Out, MINUTE};
use common::calibrate::calibrate_16m;
use common::child::{rlimit, terminate_after, wait_within, TerminalSignals};
use common::direct_io::on_disk_tempdir;
use common::traces::disksim_trace;

/// A blktrace of noop replaying a 200-request DiskSim trace, written by `elevator replay
/// --blktrace-out` into `dir/bt`: the directory and its CPU 0 file.
fn noop_blktrace(dir: &Path) -> (PathBuf, PathBuf) {
    let trace = disksim_trace(dir, 200);
    let bt = dir.join("bt");
    let out = elevator_within(
        &[
            "replay",
            s(&trace),
            "--sched",
            "noop",
            "--blktrace-out",
            s(&bt),
        ],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cpu0 = bt.join("noop.blktrace.0");
    (bt, cpu0)
}

/// A fio job doing `rw` over 16 MiB of the target for `runtime` seconds.
fn job(dir: &Path, rw: &str, runtime: u32) -> PathBuf {
    let p = dir.join(format!("{rw}.fio"));
    std::fs::write(
        &p,
        format!(
            "[j]\nrw={rw}\nbs=4k\nsize=16m\nruntime={runtime}\ntime_based=1\n\
             ioengine=io_uring\ndirect=1\n"
        ),
    )
    .unwrap();
    p
}

/// Whether this test runs as root (mounts need it).
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A replayed blktrace whose per-CPU sibling (`noop.blktrace.1`, found and merged with the
/// `.0` the user named) is gzip-compressed: the compressed-trace refusal of round 17 looked
/// only at the paths given, so the sibling reached the blktrace reader as "byte 0: field
/// `magic`: 1f8b0808 is not blktrace's magic". Every trace file now opens through one check
/// (`traces::lines::open_trace`, the one `elevator replay -` passes its standard input
/// through too), which names the file, the compression and the command that decompresses it.
#[test]
fn a_compressed_blktrace_sibling_is_refused_by_the_one_check() {
    let dir = on_disk_tempdir();
    let (bt, cpu0) = noop_blktrace(dir.path());
    let cpu1 = bt.join("noop.blktrace.1");
    let mut gz = vec![0x1f, 0x8b, 0x08, 0x08, 0, 0, 0, 0, 0, 0x03];
    gz.extend(std::fs::read(&cpu0).unwrap());
    std::fs::write(&cpu1, gz).unwrap();
    for extra in [&[][..], &["--format", "blktrace"][..]] {
        let mut args = vec!["replay", s(&cpu0), "--sched", "noop"];
        args.extend(extra);
        let out = elevator_within(&args, MINUTE);
        clean_error(&out, &[s(&cpu1), "gzip-compressed", "gzip -dk"]);
    }
}

/// A pipe whose 64 KiB buffer is already full and whose reader never reads (`cmd | sleep
/// 1000` once the sleeper's pipe filled): the read end, kept open, and the write end.
fn full_pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which we then own.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) },
        0
    );
    // SAFETY: both were just made by pipe2 and are owned by nothing else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let chunk = [b'x'; 4096];
    use std::os::fd::AsRawFd;
    // SAFETY: writes from a live buffer to the pipe's write end until it is full (EAGAIN).
    while unsafe { libc::write(w.as_raw_fd(), chunk.as_ptr().cast(), chunk.len()) } > 0 {}
    // SAFETY: F_SETFL on a descriptor we own: blocking again, as a shell's pipe is.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, 0) };
    (r, w)
}

/// `run` whose standard output is a pipe nobody reads (full): the run measured, then blocked
/// writing its first table, and `kill PID` did nothing: the stopping mode took the SIGTERM as
/// "stop the I/O", and `std::io::stdout` retried the interrupted write (EINTR) for ever; only
/// SIGKILL ended it, and `--json` was never written. Now a write a stop interrupts ends with
/// an error of standard output (`output::write_fd`), and the run writes `--json` and exits
/// 143, as a signal's end is reported.
#[test]
fn run_blocked_on_a_full_stdout_pipe_stops_on_one_sigterm_and_writes_its_json() {
    let dir = on_disk_tempdir();
    let job = job(dir.path(), "randread", 1);
    let target = dir.path().join("t");
    let json = dir.path().join("o.json");
    let (_reader, writer) = full_pipe();
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "run",
            s(&job),
            "--target",
            s(&target),
            "--sched",
            "none",
            "--json",
            s(&json),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .with_terminal_signals()
        .spawn()
        .unwrap();
    // The layout and the 1 s run are over well before this; the first table then blocks.
    let done = terminate_after(child, Duration::from_secs(6), Duration::from_secs(20));
    let Some(status) = done.status else {
        panic!(
            "one SIGTERM did not end a run blocked on a full standard output: {}",
            String::from_utf8_lossy(&done.stderr)
        );
    };
    let out = Out::of(status, &done);
    assert_eq!(out.code, 143, "{}", out.stderr);
    assert!(out.stderr.contains("standard output"), "{}", out.stderr);
    let text = std::fs::read_to_string(&json).expect("--json written");
    assert!(text.contains("\"jobs\""), "{text}");
}

/// `run` and `calibrate` on a file the jobs write past the process's file-size limit
/// (`ulimit -f 64`): the kernel fails every write at or past the limit with EFBIG
/// (`generic_write_check_limits`), so `calibrate` measured its read points for 15 s and then
/// failed with "randwrite 4k qd1: ... write of 4096 bytes at offset 9543680 failed: File too
/// large", naming neither the target nor the limit (`run` alike). Refused before any I/O now,
/// naming both; a reading job on the same file still runs.
#[test]
fn a_target_written_past_the_file_size_limit_is_refused_before_any_io() {
    let dir = on_disk_tempdir();
    let target = dir.path().join("t");
    let read = job(dir.path(), "randread", 1);
    // Laid out by elevator without a limit first, so the refusal is the limit's alone.
    let out = elevator_within(&["run", s(&read), "--target", s(&target)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let write = job(dir.path(), "randwrite", 1);
    let limited = |c: &mut Command| rlimit(c, libc::RLIMIT_FSIZE, 64 << 10);
    let cases: [Vec<&str>; 2] = [
        vec!["run", s(&write), "--target", s(&target), "--sched", "none"],
        calibrate_16m(&target, &["--duration", "20"]),
    ];
    for args in &cases {
        let t0 = std::time::Instant::now();
        let out = elevator_set_up(args, MINUTE, limited);
        clean_error(&out, &[s(&target), "ulimit -f", "65536"]);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{args:?} refused only after {:?} of I/O",
            t0.elapsed()
        );
    }
    let out = elevator_set_up(
        &["run", s(&read), "--target", s(&target), "--sched", "none"],
        MINUTE,
        limited,
    );
    assert_eq!(out.code, 0, "a reading job was refused: {}", out.stderr);
}

/// A target that does not exist on a file system that refuses O_DIRECT (ramfs): the open
/// (`O_CREAT | O_EXCL | O_DIRECT`) made the file before the kernel refused the flag
/// (`lookup_open` creates the inode; `do_dentry_open` then returns EINVAL without
/// FMODE_CAN_ODIRECT), so an empty file was left, and the message blamed tmpfs, which takes
/// O_DIRECT since Linux 6.6. Now the file is removed and the message names the file system.
/// Needs root (a ramfs mount in a private mount namespace); skipped otherwise.
#[test]
fn a_new_target_on_a_file_system_without_o_direct_is_refused_naming_it_and_not_left() {
    if !root() || Command::new("unshare").arg("--version").output().is_err() {
        eprintln!("notice: needs root and unshare(1) for a ramfs mount; skipped");
        return;
    }
    let dir = on_disk_tempdir();
    let job = job(dir.path(), "randread", 1);
    let mnt = dir.path().join("ram");
    std::fs::create_dir(&mnt).unwrap();
    let target = mnt.join("t");
    // The mount lives in the child's own mount namespace and goes with it.
    let script = format!(
        "mount -t ramfs ramfs {m} && {e} run {j} --target {t}; rc=$?; ls -A {m}; exit $rc",
        m = s(&mnt),
        e = env!("CARGO_BIN_EXE_elevator"),
        j = s(&job),
        t = s(&target),
    );
    let child = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_within(child, MINUTE, |c| {
        let _ = c.kill();
    });
    let out = Out::of(done.status.expect("ended"), &done);
    clean_error(&out, &[s(&target), "ramfs", "O_DIRECT"]);
    assert!(
        out.stdout.trim().is_empty(),
        "left in the file system: {}",
        out.stdout
    );
}

/// `kernel-record --sched foo` (or `--sched none,none`): the name was checked only for its
/// characters, so the recorder made its tmpfs, attached a loop device and wrote "foo" to its
/// queue's scheduler file before the kernel refused it (`elv_iosched_store`: EINVAL), told as
/// "scheduler: write "foo" to /sys/block/loop2/queue/scheduler: Invalid argument". Now
/// refused first, naming `--sched` and the four names a recording is made under, before the
/// root check, the job file or the output directory are looked at. Nothing is recorded: the
/// job file does not exist, so no version of elevator could start fio.
#[test]
fn kernel_record_refuses_an_unknown_or_repeated_scheduler_before_touching_anything() {
    let dir = on_disk_tempdir();
    let out_dir = dir.path().join("rec");
    let job = dir.path().join("absent.fio");
    for (sched, needles) in [
        ("foo", &["--sched", "foo", "mq-deadline, kyber, bfq"][..]),
        ("none,none", &["--sched", "none", "twice"][..]),
        ("bfq,BFQ", &["--sched", "BFQ", "none, mq-deadline"][..]),
    ] {
        let out = elevator_within(
            &[
                "kernel-record",
                s(&job),
                "--out",
                s(&out_dir),
                "--sched",
                sched,
            ],
            MINUTE,
        );
        clean_error(&out, needles);
        assert!(!out_dir.exists(), "{sched}: the output directory was made");
    }
}

/// A scenario's fio job with `bs = "4k"` (fio's spelling; the scenario takes bytes), or any
/// wrong value in a `[[job]]`, whose kind picks its fields: toml points such an error at the
/// table's header, so the message was "sw.toml:4: invalid type: string "4k", expected u64",
/// naming neither the field nor its line. Now the line that assigns the quoted value in that
/// table is named, with its key (`spec_file::toml_error`).
#[test]
fn a_wrong_value_in_a_scenario_job_names_its_line_and_field() {
    let dir = on_disk_tempdir();
    let p = dir.path().join("sw.toml");
    for (value, shown) in [("\"4k\"", "4k"), ("-4096", "-4096"), ("true", "true")] {
        std::fs::write(
            &p,
            format!(
                "seed = 1\ndrive = \"samsung-980pro-1tb\"\nduration_s = 0.05\n\n[[job]]\n\
                 name = \"r\"\nkind = \"fio\"\nrw = \"randread\"\nbs = {value}\niodepth = 4\n"
            ),
        )
        .unwrap();
        let out = elevator_within(&["sim", s(&p), "--sched", "none"], MINUTE);
        clean_error(&out, &[&format!("{}:9", s(&p)), "`bs`", shown]);
    }
}

/// `run` of a 512-byte `bs` on a loop device of 4096-byte logical sectors (`losetup
/// --sector-size 4096`): the kernel refuses each such direct I/O with EINVAL
/// (`blkdev_dio_invalid`: offset or length not a multiple of the logical block size), and
/// the run said only "read of 512 bytes at offset 16029696 failed: Invalid argument (os error
/// 22)". Now the error names the device's logical block size and what to change; the
/// report's errno stays EINVAL (22). Needs root and losetup; skipped otherwise.
#[test]
fn a_512_byte_io_on_a_4096_byte_sector_device_names_the_logical_block_size() {
    if !root() || Command::new("losetup").arg("--version").output().is_err() {
        eprintln!("notice: needs root and losetup for a loop device; skipped");
        return;
    }
    let dir = on_disk_tempdir();
    let img = dir.path().join("img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show", "--sector-size", "4096", s(&img)])
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "notice: losetup --sector-size 4096 failed ({}); skipped",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    /// Detaches the loop device however the test ends.
    struct Detach(String);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").args(["-d", &self.0]).status();
        }
    }
    let dev = Detach(String::from_utf8_lossy(&out.stdout).trim().to_string());
    let job = dir.path().join("r512.fio");
    std::fs::write(
        &job,
        "[r]\nrw=randread\nbs=512\nsize=16m\nruntime=1\ntime_based=1\nioengine=io_uring\n\
         direct=1\n",
    )
    .unwrap();
    let json = dir.path().join("o.json");
    let out = elevator_within(
        &[
            "run",
            s(&job),
            "--target",
            &dev.0,
            "--sched",
            "none",
            "--output-format",
            "json",
            "--output",
            s(&json),
        ],
        MINUTE,
    );
    clean_error(&out, &["logical block size is 4096", "multiples of 4096"]);
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    assert!(report.contains("\"error\": 22"), "{report}");
}

/// 10^4 requests of one process to one sector, 10 us apart (a DiskSim trace), under bfq:
/// the drive falls behind, the requests wait for bfq's scheduler tags, and the block layer
/// asked bfq after every call whether each waiting request had its tag, which bfq answered
/// by scanning every waiting line (`Bfq::waits_for_tag`): cubic, 225 s for 10^4 requests
/// (2.6 s for 2000), 10^6 not done in 10 minutes. Now bfq keeps the waiting ids in a set and
/// counts its admissions (`Scheduler::sched_tags_admitted`, as mq-deadline and kyber do
/// since round 14): 0.07 s, the same figures.
#[test]
fn bfq_replays_ten_thousand_requests_waiting_for_tags_in_linear_time() {
    let dir = on_disk_tempdir();
    let p = dir.path().join("same.trace");
    let text: String = (0..10_000)
        .map(|i| format!("{}.{:02}0 0 1000 8 {}\n", i / 100, i % 100, i % 2))
        .collect();
    std::fs::write(&p, text).unwrap();
    let out = elevator_within(&["replay", s(&p), "--sched", "bfq"], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("10000 requests replayed"),
        "{}",
        out.stdout
    );
}

/// A blktrace of 2000 per-CPU files (`noop.blktrace.0` to `.1999`, found and merged when the
/// first is named; a trace may have up to 8192, NR_CPUS): each file's reader kept a 256 KiB
/// buffer, 598 MB in all, and under `ulimit -v 524288` (512 MiB) the replay aborted (exit
/// 134, "memory allocation failed"). The merged files' buffers now share 16 MiB (8 KiB at
/// the least each): 99 MB peak, and the replay runs under the limit.
#[test]
fn two_thousand_per_cpu_blktrace_files_replay_in_bounded_memory() {
    let dir = on_disk_tempdir();
    let (bt, cpu0) = noop_blktrace(dir.path());
    for cpu in 1..2000 {
        std::fs::copy(&cpu0, bt.join(format!("noop.blktrace.{cpu}"))).unwrap();
    }
    let out = elevator_set_up(
        &["replay", s(&cpu0), "--sched", "noop"],
        Duration::from_secs(120),
        |c| {
            rlimit(c, libc::RLIMIT_AS, 512 << 20);
            rlimit(c, libc::RLIMIT_NOFILE, 4096);
        },
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("requests replayed"), "{}", out.stdout);
}
