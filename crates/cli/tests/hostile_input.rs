//! Hostile cases of issue 17 through the `elevator` binary: each test is named after its
//! case and asserts a clean error (non-zero exit, no panic, the file, line or flag named, a
//! message under 1 KB) or the correct behaviour, within a bounded time.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common {
    pub mod bounded;
    pub mod child;
    pub mod file;
}
use common::bounded::{clean_error, elevator, elevator_within, Out};
use common::file::write;

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

// ----- unclear errors -----

#[test]
fn validate_plot_to_a_directory_names_the_path_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "v.trace", "R Miss 100 8 5000 100\n");
    let plot = dir.path().join("plots");
    std::fs::create_dir(&plot).unwrap();
    let out = elevator(&[
        "validate",
        "--drive",
        "laptop-4200",
        "--trace",
        &trace,
        "--plot",
        plot.to_str().unwrap(),
    ]);
    clean_error(&out, &["--plot", plot.to_str().unwrap(), "is a directory"]);
    assert!(out.stdout.is_empty(), "ran first: {}", out.stdout);
}

#[test]
fn validate_trace_block_past_the_drives_end_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(
        dir.path(),
        "v.trace",
        "# measured on the drive\nR Miss 100 8 5000 100\nR Miss 999999999999 8 5000 100\n",
    );
    let out = elevator(&["validate", "--drive", "laptop-4200", "--trace", &trace]);
    clean_error(&out, &["v.trace:3", "blkno", "past the drive's end"]);
}

#[test]
fn run_filename_a_colon_b_is_two_files_and_refused_without_target() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        "[r]\nrw=read\nsize=1m\nfilename=/tmp/elevator-a:/tmp/elevator-b\n",
    );
    let out = elevator(&["run", &job]);
    clean_error(&out, &["j.fio:4", "2 files", "--target"]);
    assert!(!Path::new("/tmp/elevator-a:/tmp/elevator-b").exists());
}

#[test]
fn run_job_file_of_1_gb_sparse_nuls_gives_a_short_message() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("sparse.fio");
    std::fs::File::create(&job)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let target = dir.path().join("t.dat");
    // Refused after reading 1 MiB of it: nothing sized by the file is allocated.
    let out = elevator(&[
        "run",
        job.to_str().unwrap(),
        "--target",
        target.to_str().unwrap(),
    ]);
    clean_error(&out, &["sparse.fio", "larger than 1 MiB"]);
}

#[test]
fn run_job_file_dev_zero_is_refused_quickly() {
    let out = elevator_within(
        &["run", "/dev/zero", "--target", "/tmp/elevator-never"],
        Duration::from_secs(60),
    );
    clean_error(&out, &["/dev/zero", "larger than"]);
}

#[test]
fn sim_scenario_dev_zero_is_refused_quickly() {
    let out = elevator_within(&["sim", "/dev/zero"], Duration::from_secs(60));
    clean_error(&out, &["/dev/zero", "larger than 4 MiB"]);
}

// ----- ENOSPC in the JSON report -----

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let r = unsafe { libc::geteuid() } == 0;
    if !r {
        eprintln!("skipping: loop devices need root");
    }
    r
}

/// A 16 MiB ext4 on a loop device mounted on `mnt`; detached and unmounted on drop.
struct SmallFs {
    dev: String,
    mnt: std::path::PathBuf,
}

impl SmallFs {
    fn new(dir: &Path) -> Option<SmallFs> {
        if !root() {
            return None;
        }
        let img = dir.join("fs.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("skipping: losetup failed");
            return None;
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let fs = SmallFs { dev, mnt };
        let ok = Command::new("mkfs.ext4")
            .args(["-q", "-F", &fs.dev])
            .status()
            .is_ok_and(|s| s.success())
            && Command::new("mount")
                .arg(&fs.dev)
                .arg(&fs.mnt)
                .status()
                .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipping: mkfs.ext4 or mount failed");
            return None;
        }
        Some(fs)
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn run_enospc_mid_run_with_json_output_carries_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = SmallFs::new(dir.path()) else {
        return;
    };
    // A sparse 64 MiB file on a 16 MiB filesystem: the writes run out of space mid-run.
    let target = fs.mnt.join("t.dat");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let job = write(dir.path(), "w.fio", "[w]\nrw=write\nbs=1m\nsize=64m\n");
    let out = elevator(&[
        "run",
        &job,
        "--target",
        target.to_str().unwrap(),
        "--allow-overwrite",
        "--output-format",
        "json",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("No space left"), "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("the JSON report");
    assert_eq!(v["jobs"][0]["error"], libc::ENOSPC, "{v}");
    let msg = v["jobs"][0]["elevator"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(msg.contains("No space left"), "{v}");
    assert!(v["elevator"]["error"].is_string(), "{v}");
}
