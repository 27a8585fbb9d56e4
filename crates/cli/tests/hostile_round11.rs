//! Hostile cases of issue 32, eleventh round: round 10's leftovers (a run killed outright and
//! what it left; a compile too large for the work bound, refused from its counts) and the
//! surfaces rounds 9 and 10 swept least (`kernel-diff`, `kernel-record`, `report`, the trace
//! readers). Every run is bounded in time, so a hang fails instead of waiting.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common {
    pub mod bounded;
    pub mod child;
    pub mod mount;
    pub mod recording;
}
use common::bounded::{clean_error, compile, elevator, elevator_within, s, MINUTE};
use common::mount::{have, is_root};
use common::recording::recording;

/// The loop devices whose backing file is `img` (the kernel adds ` (deleted)` once unlinked).
fn loops_over(img: &Path) -> Vec<String> {
    let want = img.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let b = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        let b = b.trim_end();
        if b == want || b.strip_suffix(" (deleted)") == Some(&want) {
            found.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// Wait up to a minute for `ok`, polling.
fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < MINUTE, "waited a minute for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ----- a run killed outright -----

/// Held by each test that kills a run: the next run of either command cleans every dead
/// run's leftovers, so one test's would be cleaned (and reported) by the other's.
static KILLING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `compare` killed with SIGKILL left its loop device and its scratch image (8 GiB under
/// /var/tmp by default), and the fio it had started went on writing to the device; the next
/// run neither knew nor cleaned them. A run now notes what it creates before creating it
/// (`elevator_real::leftovers::Claim`, a marker naming its pid and start time), fio dies with
/// it (`PR_SET_PDEATHSIG`), and the next run undoes what a dead run's marker names
/// (`leftovers::clean_dead`), while a loop device nobody's marker names is left alone. Needs
/// root, losetup and fio (skipped with a notice otherwise); uses only loop devices and files
/// it creates.
#[test]
fn a_compare_killed_with_sigkill_is_cleaned_up_by_the_next_run() {
    if !is_root() || !have("fio") || !have("losetup") {
        eprintln!("a_compare_killed_with_sigkill_...: skipped: needs root, fio and losetup");
        return;
    }
    let _one = KILLING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let wd = dir.join("wd");
    std::fs::create_dir(&wd).unwrap();
    let job = dir.join("w.fio");
    std::fs::write(&job, "[w]\nrw=randread\nbs=4k\nsize=4m\n").unwrap();
    // Someone else's loop device, over a file named as ours would be: never touched.
    let other = wd.join("elevator-compare.1.img");
    std::fs::write(&other, vec![0u8; 1 << 20]).unwrap();
    let other_loop = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(other_loop.status.success());
    let other_loop = String::from_utf8(other_loop.stdout).unwrap();
    let other_loop = other_loop.trim();
    let err = dir.join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["compare", s(&job), "--workdir", s(&wd), "--rounds", "1"])
        .args([
            "--runtime",
            "60",
            "--ramp",
            "0",
            "--json-dir",
            s(&dir.join("j")),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let img = wd.join(format!("elevator-compare.{}.img", child.id()));
    // Killed while fio runs on the loop device.
    wait_for("the first fio run", || {
        std::fs::read_to_string(&err).is_ok_and(|e| e.contains("round 1/1"))
    });
    std::thread::sleep(Duration::from_millis(500));
    let loops = loops_over(&img);
    assert_eq!(loops.len(), 1, "{loops:?}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let dev = format!("/dev/{}", loops[0]);
    wait_for("fio to end with elevator", || {
        !Command::new("pgrep")
            .args(["-f", "--", &format!("--filename={dev} ")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    assert!(img.exists(), "the killed run left its image");
    let o = elevator_within(
        &[
            "compare",
            s(&job),
            "--workdir",
            s(&wd),
            "--kernel",
            "nosuch",
            "--json-dir",
            s(&dir.join("j2")),
        ],
        MINUTE,
    );
    let left = loops_over(&img);
    let others = loops_over(&other);
    let _ = Command::new("losetup").args(["-d", other_loop]).status();
    clean_error(&o, &["--kernel nosuch"]);
    assert!(
        o.stderr.contains(&format!("detached {dev}")) && o.stderr.contains("removed"),
        "{}",
        o.stderr
    );
    assert!(
        left.is_empty(),
        "loop devices left over the image: {left:?}"
    );
    assert!(!img.exists(), "the image is removed");
    assert!(other.exists(), "a file no marker names is left");
    assert_eq!(
        others.len(),
        1,
        "a loop device no marker names is left: {others:?}"
    );
}

/// `kernel-record` killed with SIGKILL left its tmpfs mounted under the temporary directory,
/// the loop device over its image and its tracefs instance; the next recording cleans all
/// three (the same markers as `compare`'s) before it records. Needs root, fio, losetup and
/// tracefs (skipped with a notice otherwise).
#[test]
fn a_kernel_record_killed_with_sigkill_is_cleaned_up_by_the_next_one() {
    if !is_root() || !have("fio") || !have("losetup") || !Path::new("/sys/kernel/tracing").is_dir()
    {
        eprintln!("a_kernel_record_killed_...: skipped: needs root, fio, losetup and tracefs");
        return;
    }
    let _one = KILLING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let job = |name: &str, runtime: u32| {
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            format!("[w]\nrw=randread\nbs=4k\nsize=4m\ndirect=1\nruntime={runtime}\ntime_based\n"),
        )
        .unwrap();
        p
    };
    let long = job("long.fio", 60);
    let err = dir.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "kernel-record",
            s(&long),
            "--sched",
            "mq-deadline",
            "--size",
            "16M",
        ])
        .args(["-o", s(&dir.path().join("r1"))])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    wait_for("fio to start", || {
        std::fs::read_to_string(&err).is_ok_and(|e| e.contains("# mq-deadline: fio "))
    });
    let pid = child.id();
    let instance = format!("/sys/kernel/tracing/instances/elevator-record-{pid}");
    let tmpfs = format!("/elevator-kernel-record.{pid}.");
    let mounted = || {
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&tmpfs)
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        Path::new(&instance).exists() && mounted(),
        "the killed run left them"
    );
    let o = elevator_within(
        &[
            "kernel-record",
            s(&job("short.fio", 1)),
            "--sched",
            "mq-deadline",
            "--size",
            "16M",
            "-o",
            s(&dir.path().join("r2")),
        ],
        MINUTE,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("(pid {pid}) left: detached")),
        "{}",
        o.stderr
    );
    assert!(!Path::new(&instance).exists(), "{}", o.stderr);
    assert!(!mounted(), "{}", o.stderr);
}

// ----- the work bound, from a compile's counts -----

/// A compile of 10^6 files (a 1 MiB page cache, the 980 PRO model) was refused naming
/// `job.files` and `--max-ios` only after laying out its tree twice and probing it (42 s,
/// 754 MiB at its peak). Its work is now told at load from a compile of 10^4 files of its
/// settings (`Scenario::check_work`, `COMPILE_SAMPLE_FILES`): a file's share grows with the
/// tree, so half the sample's rate times the files is a floor, and 10^6 files are refused at
/// once; a bound that admits them still builds and checks the whole tree.
#[test]
fn a_compile_of_a_million_files_is_refused_from_its_counts_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = compile(dir.path(), 1_000_000);
    let o = elevator_within(&["sim", s(&p), "--sched", "none"], Duration::from_secs(20));
    clean_error(
        &o,
        &[
            "make-1000000.toml:6",
            "job.files",
            "1000000 files",
            "--max-ios",
        ],
    );
}

// ----- kernel-diff -----

/// A recording whose meta.json gives tunables no kernel accepts (`read_expire = -1`,
/// `writes_starved = 4294967296`) replayed our mq-deadline at its defaults and printed 100 %
/// agreement without a word (`kernel_diff::policy_settings` lists them in
/// `TraceDiff::skipped`, which nothing printed); one whose ring buffer lost events
/// (`trace.lost`) was compared as if whole. Both are now said on stderr, naming the
/// recording, the field and the value; `--depth 18446744073709551615` is refused past the
/// kernel's `BLK_MQ_MAX_DEPTH` (10,240).
#[test]
fn kernel_diff_says_which_recorded_tunables_it_could_not_use_and_lost_events() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path(), |m| {
        m["iosched"]["read_expire"] = "-1".into();
        m["iosched"]["writes_starved"] = "4294967296".into();
        m["trace"]["lost"] = 12.into();
    });
    let o = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for n in [
        "read_expire = \"-1\" not used",
        "writes_starved = \"4294967296\" not used",
        "lost 12 events",
    ] {
        assert!(o.stderr.contains(n), "{n:?} not in {}", o.stderr);
    }
    assert!(o.stdout.contains("| mq-deadline |"), "{}", o.stdout);
    // A flag's depth no device has was taken as given.
    let o = elevator(&["kernel-diff", s(&rec), "--depth", "18446744073709551615"]);
    clean_error(&o, &["--depth 18446744073709551615", "BLK_MQ_MAX_DEPTH"]);
}
