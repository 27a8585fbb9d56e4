//! Hostile cases of issue 32, sixth round: what round 5 left (zero-length records skipped
//! without a word, a `sim` job long by its size), and variants no round tried: SIGHUP, device
//! nodes as outputs, layouts larger than the free space. Every run is bounded in time, so a
//! hang fails instead of waiting.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod direct_io;
    pub mod mount;
    pub mod traces;
}
use common::bounded::{clean_error, elevator, elevator_within, s, Out};
use common::child::{wait_within, TerminalSignals};
use common::direct_io::direct_io_works;
use common::mount::{fuse_available, mounted};
use common::traces::disksim_4k_trace;

/// Whether the tests run as root.
fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

// ----- round 5's leftovers -----

/// MSR, SPC, Alibaba and Tencent lines of size 0 were skipped by the readers below the
/// replay, and nothing said so (`replay` printed "2 requests replayed (0 skipped)" for a trace
/// of four records). Now the readers count them (`RecordSource::zero_length`) and the replay
/// says how many (JSON `zero_length`); a trace of nothing else is refused saying so.
#[test]
fn zero_length_records_of_every_csv_format_are_counted_not_skipped_silently() {
    let dir = tempfile::tempdir().unwrap();
    // (format, two records of size 0 around two of 4 KiB, one record of size 0)
    let cases = [
        (
            "msr",
            "1,h,0,Read,0,0,1\n2,h,0,Read,0,4096,1\n3,h,0,Write,8192,4096,1\n4,h,0,Write,0,0,1\n",
            "1,h,0,Read,0,0,1\n",
        ),
        (
            "spc",
            "0,0,0,r,0.1\n0,8,4096,r,0.2\n0,16,4096,w,0.3\n0,24,0,w,0.4\n",
            "0,0,0,r,0.1\n",
        ),
        (
            "alibaba",
            "1,R,0,0,1\n1,R,0,4096,2\n1,W,8192,4096,3\n1,W,0,0,4\n",
            "1,R,0,0,1\n",
        ),
        (
            "tencent",
            "1,0,0,0,1\n2,0,8,0,1\n3,16,8,1,1\n4,0,0,1,1\n",
            "1,0,0,0,1\n",
        ),
    ];
    for (format, trace, zero_only) in cases {
        let t = dir.path().join(format!("{format}.csv"));
        std::fs::write(&t, trace).unwrap();
        let json = dir.path().join(format!("{format}.json"));
        let o = elevator(&["replay", "--format", format, s(&t), "--json", s(&json)]);
        assert_eq!(o.code, 0, "{format}: {}", o.stderr);
        assert!(
            o.stdout
                .contains("note: 2 records of the trace have length 0"),
            "{format}: {}",
            o.stdout
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["runs"][0]["zero_length"], 2, "{format}: {v}");
        assert_eq!(v["runs"][0]["issued"], 2, "{format}: {v}");
        let z = dir.path().join(format!("{format}-zero.csv"));
        std::fs::write(&z, zero_only).unwrap();
        let o = elevator(&["replay", "--format", format, s(&z)]);
        clean_error(&o, &[s(&z), "no request", "1 records all have length 0"]);
    }
}

/// `sim` of a job long by its size (`size=900g bs=512`: 1.9e9 I/Os, no runtime) computed for
/// hours without a word, where one long by its time (`runtime=1000h`) is refused. Now the
/// I/Os the job file implies by its sizes are bounded (10^8, `--max-ios` raises it), naming
/// the job's line and field and the override; a job with a `runtime` is bounded by it.
#[test]
fn sim_of_a_job_long_by_its_size_is_refused_naming_the_line_and_the_override() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("big.fio");
    std::fs::write(&job, "[j]\nrw=read\nbs=512\nsize=900g\n").unwrap();
    let o = elevator_within(&["sim", s(&job)], Duration::from_secs(60));
    clean_error(&o, &["big.fio:4", "size", "1887436800 I/Os", "--max-ios"]);
    // Every clone counts: 4096 clones of 1 GiB of 4 KiB reads are 1.1e9 I/Os.
    std::fs::write(&job, "[j]\nrw=randread\nbs=4k\nsize=1g\nnumjobs=4096\n").unwrap();
    let o = elevator_within(&["sim", s(&job)], Duration::from_secs(60));
    clean_error(&o, &["big.fio:", "4096 clones", "--max-ios"]);
    // The bound is the user's to raise (or lower); a runtime bounds the job instead.
    std::fs::write(&job, "[j]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=300\n").unwrap();
    let o = elevator(&["sim", s(&job), "--max-ios", "299"]);
    clean_error(&o, &["big.fio:5", "number_ios", "--max-ios"]);
    let o = elevator(&["sim", s(&job), "--max-ios", "300"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    std::fs::write(&job, "[j]\nrw=read\nbs=512\nsize=900g\nruntime=50ms\n").unwrap();
    let o = elevator_within(&["sim", s(&job)], Duration::from_secs(60));
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ----- SIGHUP -----

fn spawn(args: &[&str], ignore_hup: bool) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_elevator"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.with_terminal_signals();
    if ignore_hup {
        // As `nohup` starts a command (after the defaults: pre_exec hooks run in order).
        // SAFETY: only signal(2), async-signal-safe, between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    cmd.spawn().expect("run elevator")
}

/// A DiskSim ASCII trace of `n` 4 KiB writes, 1 ms apart, over the first 400 MB.
fn writes_trace(path: &Path, n: u64) {
    disksim_4k_trace(path, n, true, 100_000);
}

/// SIGHUP (the terminal a command runs in closed) took the default action: `replay --target`
/// died mid-write, its target's marker not refreshed, so the next replay on the file was
/// refused ("changed since elevator last wrote it"); any command left its
/// `.NAME.elevator-tmp-PID` files; a mount was left dead. Now SIGHUP is caught as SIGTERM is
/// (exit 129 after stopping cooperatively), and left ignored under `nohup`.
#[test]
fn sighup_stops_a_replay_on_a_target_like_sigterm_and_nohup_still_ignores_it() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_works(dir.path()) {
        return;
    }
    let trace = dir.path().join("writes.trace");
    // 600 writes 1 ms apart, at --speed 0.01: 60 s of real time.
    writes_trace(&trace, 600);
    let target = dir.path().join("target.img");
    let args = [
        "replay",
        s(&trace),
        "--format",
        "disksim",
        "--speed",
        "0.01",
        "--target",
        s(&target),
    ];
    for ignore_hup in [false, true] {
        let _ = std::fs::remove_file(&target);
        let mut child = spawn(&args, ignore_hup);
        let t0 = Instant::now();
        while !std::fs::metadata(&target).is_ok_and(|m| m.len() > 0) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "ended before its layout"
            );
            assert!(t0.elapsed() < Duration::from_secs(120), "never laid out");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) };
        if ignore_hup {
            std::thread::sleep(Duration::from_millis(500));
            assert!(
                child.try_wait().unwrap().is_none(),
                "nohup's SIGHUP ended it"
            );
            // SAFETY: as above.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        }
        let done = wait_within(child, Duration::from_secs(30), |c| {
            let _ = c.kill();
        });
        let out = Out::of(done.status.expect("no end after the signal"), &done);
        let want = if ignore_hup { 143 } else { 129 };
        assert_eq!(out.code, want, "{}{}", out.stdout, out.stderr);
        // The file is still elevator's: a short replay on it is not refused.
        let short = dir.path().join("short.trace");
        writes_trace(&short, 3);
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
}

/// SIGHUP to `elevator mount` (the terminal it was started from closed) killed the daemon and
/// left the mountpoint dead ("Transport endpoint is not connected"). Now it unmounts, as on
/// SIGTERM, and the daemon exits 0.
#[test]
fn sighup_unmounts_the_mount_instead_of_leaving_it_dead() {
    if !fuse_available("sighup_unmounts_the_mount_instead_of_leaving_it_dead") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (back, mnt) = (dir.path().join("back"), dir.path().join("mnt"));
    std::fs::create_dir(&back).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let child = spawn(&["mount", s(&back), s(&mnt)], false);
    let t0 = Instant::now();
    while !mounted(&mnt) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the mount did not appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) };
    let done = wait_within(child, Duration::from_secs(30), |c| {
        let _ = c.kill();
    });
    let dead = mounted(&mnt);
    if dead {
        let _ = Command::new("fusermount3").arg("-uz").arg(&mnt).status();
    }
    let status = done.status.expect("the daemon did not end after SIGHUP");
    assert!(!dead, "SIGHUP left the mount behind ({status:?})");
    assert!(status.success(), "{status:?}");
}

// ----- outputs on device nodes -----

/// `--json /dev/urandom` (any output flag, any command) opened the device to check it and
/// wrote the results into it; so would `/dev/port` (I/O ports), `/dev/mem` or `/dev/kmsg`, and
/// merely opening `/dev/watchdog` arms it. Now an output that is a block device, or a
/// character device other than /dev/null, /dev/zero, /dev/full or a terminal, is refused
/// before any work and without being opened; /dev/null still takes results.
#[test]
fn an_output_on_a_device_node_is_refused_without_opening_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("j.fio");
    std::fs::write(&job, "[j]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=50\n").unwrap();
    let trace = dir.path().join("t.disksim");
    std::fs::write(&trace, "0.0 0 0 8 1\n1.0 0 8 8 1\n").unwrap();
    let dev = "/dev/urandom";
    for args in [
        vec!["sim", s(&job), "--json", dev],
        vec!["replay", s(&trace), "--json", dev],
        vec![
            "validate",
            "--drive",
            "cheetah9lp",
            "--trace",
            s(&trace),
            "--json",
            dev,
        ],
    ] {
        let o = elevator(&args);
        clean_error(&o, &[dev, "character device (1:9)"]);
    }
    // A blktrace written into a directory whose entry is a link to the device.
    let bt = dir.path().join("bt");
    std::fs::create_dir(&bt).unwrap();
    std::os::unix::fs::symlink(dev, bt.join("deadline.blktrace.0")).unwrap();
    let o = elevator(&["replay", s(&trace), "--blktrace-out", s(&bt)]);
    clean_error(&o, &["--blktrace-out", "character device (1:9)"]);
    let o = elevator(&["replay", s(&trace), "--json", "/dev/null"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ----- layouts larger than the free space -----

/// `run` of a job larger than the target's filesystem wrote until ENOSPC (`size=100t` would
/// fill the machine's disk, every other writer failing meanwhile), then removed the file. Now
/// the space is reserved first (`fallocate`, as fio does): refused at once, nothing written.
#[test]
fn a_layout_larger_than_the_free_space_is_refused_before_writing() {
    if !is_root() {
        eprintln!("skipped: needs root to mount a 16 MiB ext4 (tmpfs takes no O_DIRECT)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("small.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let run = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|st| st.success())
    };
    if !run("mkfs.ext4", &["-q", "-F", s(&img)]) || !run("mount", &["-o", "loop", s(&img), s(&mnt)])
    {
        eprintln!("skipped: cannot make and mount a 16 MiB ext4 (mkfs.ext4, loop devices)");
        return;
    }
    let job = dir.path().join("w.fio");
    std::fs::write(&job, "[w]\nrw=write\nbs=64k\nsize=64m\n").unwrap();
    let target = mnt.join("f");
    let o = elevator(&["run", s(&job), "--target", s(&target), "--sched", "none"]);
    run("umount", &[s(&mnt)]);
    clean_error(&o, &[s(&target), "nothing was written", "free"]);
}
