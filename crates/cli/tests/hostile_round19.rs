//! Issue 32, round 19: a calibration target that changes or is memory, `calibrate --iocost`
//! stopped while it sweeps, `kernel-diff` over a directory of many recordings, and a sweep's
//! latency metric of a direction a job did no I/O in. Every run is bounded in time, so a hang
//! fails instead of waiting.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common {
    pub mod bounded;
    pub mod calibrate;
    pub mod child;
    pub mod direct_io;
    pub mod measured;
}
use common::bounded::{clean_error, elevator_within, s, Out, MINUTE};
use common::calibrate::calibrate_16m;
use common::child::{terminate_after, wait_within, TerminalSignals};
use common::direct_io::on_disk_tempdir;
use common::measured::measured;

/// Whether this test runs as root (loop devices need it).
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A calibration of `target` (16 MiB, 20 points of a second each) started in the
/// background; after 3 s `act` runs on the target, and the run must end within a minute.
fn calibrate_while(target: &Path, act: impl FnOnce(&Path)) -> Out {
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(calibrate_16m(target, &["--duration", "20"]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    act(target);
    let done = wait_within(child, MINUTE, |c| {
        let _ = c.kill();
    });
    let status = done.status.expect("the calibration ended within a minute");
    Out::of(status, &done)
}

/// The calibration target truncated, replaced (renamed over) or deleted while it is
/// measured: truncated, the next read past the new end came back short and the error named
/// the point and an offset ("short read: 0 of 4096 bytes at offset 13660160"), neither the
/// file nor that it shrank; replaced or deleted, the calibration measured the old inode to
/// the end and wrote a spec of a file the user no longer has (exit 0). Now each stops at the
/// end of the point it happened in (`fidelity::Watch::changed`), naming the file and what
/// happened to it; no spec is written.
#[test]
fn a_calibrate_target_truncated_replaced_or_deleted_mid_run_fails_naming_it() {
    let dir = on_disk_tempdir();
    let target = dir.path().join("t");
    type Act = fn(&Path);
    let cases: [(&str, Act); 3] = [
        ("truncated to 1048576 bytes", |t| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(t)
                .unwrap()
                .set_len(1 << 20)
                .unwrap();
        }),
        ("replaced by another file", |t| {
            let other = t.with_extension("other");
            std::fs::write(&other, b"someone else's").unwrap();
            std::fs::rename(&other, t).unwrap();
        }),
        ("was deleted", |t| std::fs::remove_file(t).unwrap()),
    ];
    for (what, act) in cases {
        let _ = std::fs::remove_file(&target);
        let out = calibrate_while(&target, act);
        if out.stderr.contains("--allow-memory") {
            eprintln!("notice: the temporary directory is in memory; skipped");
            return;
        }
        clean_error(&out, &[s(&target), what, "no spec written"]);
        assert!(out.stdout.is_empty(), "a spec was written: {}", out.stdout);
    }
}

/// A target whose I/O the kernel serves from memory: a file on tmpfs (which takes O_DIRECT
/// since Linux 6.6), and a loop device reading its backing file through the page cache
/// (`losetup` without `--direct-io=on`: the loop driver issues buffered I/O on the file).
/// Both were measured and fitted without a word, a spec of memory's speed written as the
/// drive's. Now refused before anything is laid out, naming why, unless `--allow-memory`,
/// which measures and says so. The loop device needs root and losetup (skipped otherwise).
#[test]
fn calibrate_on_tmpfs_or_a_loop_device_without_direct_io_is_refused_without_allow_memory() {
    let shm = Path::new("/dev/shm");
    let on_tmpfs = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/dev/shm") && l.contains(" tmpfs "));
    if on_tmpfs {
        let dir = tempfile::tempdir_in(shm).unwrap();
        let target = dir.path().join("t");
        let args = calibrate_16m(&target, &["--duration", "1", "--iocost", "--drive", "none"]);
        let out = elevator_within(&args, MINUTE);
        clean_error(&out, &[s(&target), "tmpfs", "--allow-memory"]);
        assert!(!target.exists(), "the refused target was laid out");
        let mut allowed = args.clone();
        allowed.push("--allow-memory");
        let out = elevator_within(&allowed, MINUTE);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stderr.contains("model memory"), "{}", out.stderr);
    } else {
        eprintln!("notice: /dev/shm is not tmpfs; its case skipped");
    }
    if !root() {
        eprintln!("notice: needs root and losetup for a loop device; its case skipped");
        return;
    }
    let (_dir, image) = sparse_image(32 << 20);
    let Some(dev) = Loop::attach(&image, &[]) else {
        eprintln!("notice: losetup failed; the loop device case skipped");
        return;
    };
    let out = elevator_within(&calibrate_16m(&dev.0, &["--duration", "1"]), MINUTE);
    clean_error(
        &out,
        &[s(&dev.0), "page cache", "--direct-io=on", "--allow-memory"],
    );
}

/// A file on ext4 mounted with `data=journal`, which takes O_DIRECT and serves it buffered
/// (`ext4_dio_alignment` is 0 with data journalling, so `ext4_should_use_dio` falls back to
/// buffered I/O, through the page cache), on a loop device with direct I/O on: calibrate
/// measured the page cache (reads at 2 GB/s from a loop device) and wrote its spec. Now the
/// region's cached pages are dropped before each reading point (as fio's `invalidate`) and
/// counted after it (`cachestat`): the pages that came back stop the calibration unless
/// `--allow-memory`. Needs root, losetup, mkfs.ext4 and mount (skipped otherwise).
#[test]
fn calibrate_on_a_file_system_that_buffers_o_direct_is_refused_without_allow_memory() {
    if !root() {
        eprintln!("notice: needs root, losetup, mkfs.ext4 and mount; skipped");
        return;
    }
    let (dir, image) = sparse_image(64 << 20);
    let Some(dev) = Loop::attach(&image, &["--direct-io=on"]) else {
        eprintln!("notice: losetup --direct-io=on failed; skipped");
        return;
    };
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let made = Command::new("mkfs.ext4")
        .args(["-q", "-F", s(&dev.0)])
        .status()
        .is_ok_and(|st| st.success());
    let mounted = made
        && Command::new("mount")
            .args(["-o", "data=journal", s(&dev.0), s(&mnt)])
            .status()
            .is_ok_and(|st| st.success());
    if !mounted {
        eprintln!("notice: mkfs.ext4 or mount -o data=journal failed; skipped");
        return;
    }
    let _unmount = Unmount(mnt.clone());
    let target = mnt.join("t");
    let out = elevator_within(
        &calibrate_16m(&target, &["--duration", "2", "--iocost", "--drive", "none"]),
        MINUTE,
    );
    clean_error(
        &out,
        &[
            s(&target),
            "O_DIRECT buffered",
            "page cache",
            "--allow-memory",
        ],
    );
}

/// A mount point unmounted when dropped (before the loop device under it is detached).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A loop device attached over an image, detached when dropped.
struct Loop(PathBuf);

impl Loop {
    /// `losetup -f --show OPTIONS IMAGE`: the device, detached when dropped.
    fn attach(image: &Path, options: &[&str]) -> Option<Loop> {
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .args(options)
            .arg(image)
            .output()
            .ok()?;
        out.status.success().then(|| {
            Loop(PathBuf::from(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            ))
        })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

/// A sparse file of `len` bytes named `img` in a scratch directory on disk (kept while the
/// directory is held).
fn sparse_image(len: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = on_disk_tempdir();
    let image = dir.path().join("img");
    std::fs::File::create(&image).unwrap().set_len(len).unwrap();
    (dir, image)
}

/// `calibrate --iocost` stopped by one SIGTERM while it sweeps io.cost.qos's bounds by
/// simulation (a hundred runs, about a minute and a half at the default drive): the signal
/// only asked the measuring to stop, and the sweep ran to its end before the "interrupted"
/// (with standard output a full pipe, SIGTERM seemed to do nothing for 90 s). Now each of
/// the sweep's runs checks the stop first, as the SSD fit's do (`fit::predict`): it ends
/// within seconds, exit 143, nothing written.
#[test]
fn calibrate_iocost_stops_on_one_sigterm_while_it_sweeps() {
    let dir = on_disk_tempdir();
    let target = dir.path().join("t");
    let json = dir.path().join("o.json");
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(calibrate_16m(
            &target,
            &["--iocost", "--duration", "1", "--json", s(&json)],
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .with_terminal_signals()
        .spawn()
        .unwrap();
    // The layout of 16 MiB and the 1 s of measuring are over; the sweep has begun.
    let done = terminate_after(child, Duration::from_secs(8), Duration::from_secs(20));
    let Some(status) = done.status else {
        panic!(
            "one SIGTERM did not stop the io.cost.qos sweep within 20 s: {}",
            String::from_utf8_lossy(&done.stderr)
        );
    };
    let out = Out::of(status, &done);
    if out.stderr.contains("--allow-memory") {
        eprintln!("notice: the temporary directory is in memory; skipped");
        return;
    }
    assert_eq!(out.code, 143, "{}", out.stderr);
    assert!(out.stderr.contains("interrupted"), "{}", out.stderr);
    assert!(
        !json.exists(),
        "--json written by an interrupted calibration"
    );
}

/// `kernel-diff` of a directory of many recordings (links to one of the corpus): every
/// recording's requests and decisions were kept until the table was printed, 300 KB a
/// recording (1000: 317 MB peak; 3000: 935 MB, and 10^4 past 3 GB). Now a row keeps only its
/// figures once its divergences and notes are rendered (`figures_only`): 1000 recordings
/// stay under 64 MiB, and the totals are those of one recording times 1000.
#[test]
fn kernel_diff_of_a_directory_of_1000_recordings_runs_in_bounded_memory() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/kernel/batches/mq-deadline");
    let dir = on_disk_tempdir();
    for i in 0..1000 {
        std::os::unix::fs::symlink(&corpus, dir.path().join(format!("r{i:04}"))).unwrap();
    }
    // A link to one recording counts once (by its canonical path): give each its own copy of
    // the files, as links.
    for i in 0..1000 {
        let d = dir.path().join(format!("r{i:04}"));
        std::fs::remove_file(&d).unwrap();
        std::fs::create_dir(&d).unwrap();
        for f in std::fs::read_dir(&corpus).unwrap() {
            let f = f.unwrap().path();
            std::fs::hard_link(&f, d.join(f.file_name().unwrap()))
                .or_else(|_| std::fs::copy(&f, d.join(f.file_name().unwrap())).map(|_| ()))
                .unwrap();
        }
    }
    let (ok, took, peak) = measured(&["kernel-diff", s(dir.path())]);
    assert!(ok, "kernel-diff of 1000 recordings failed");
    assert!(
        peak < 64 << 20,
        "1000 recordings held {} MiB at the peak ({took:?})",
        peak >> 20
    );
    let out = elevator_within(&["kernel-diff", s(dir.path())], Duration::from_secs(300));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("| mq-deadline | 295000 | 100.0% | 165000/165000 (100.0%)"),
        "{}",
        out.stdout
    );
}

/// A sweep's latency metric of a direction the job completed no I/O in (`writer.read_p99_ms`
/// of a stream writer): tabled as 0.0000 in every cell, plotted as a line at 0 ms and written
/// as 0.0 in `--json`, a latency nobody measured. Now it has no value: `-` in the table,
/// `null` in the JSON, no point in the plot, and a note says how many cells lack it.
#[test]
fn a_sweep_latency_of_a_direction_without_io_has_no_value_not_0() {
    let dir = on_disk_tempdir();
    let scenario = dir.path().join("w.toml");
    std::fs::write(
        &scenario,
        "name = \"w\"\ndrive = \"laptop-4200\"\nseed = 1\nduration_s = 2\n\n[[job]]\n\
         name = \"writer\"\nkind = \"stream-writer\"\noffset_frac = 0.6\nsize_frac = 0.3\n\
         nr_requests = 64\nrequest_bytes = 4096\nbatch = 16\ntotal_bytes = 1048576\n",
    )
    .unwrap();
    let json = dir.path().join("o.json");
    let out = elevator_within(
        &[
            "sim",
            s(&scenario),
            "--sched",
            "deadline,noop",
            "--sweep",
            "seed=1..2",
            "--metric",
            "writer.read_p99_ms",
            "--json",
            s(&json),
        ],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("4 of 4 cells have no value"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("0.0000"), "{}", out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for row in v["rows"].as_array().unwrap() {
        assert!(row["metrics"]["writer.read_p99_ms"].is_null(), "{row}");
        assert!(row["metrics"]["writer.write_p99_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(row["metrics"]["writer.read_iops"].as_f64(), Some(0.0));
    }
}

/// A copy of the corpus's mq-deadline recording in `dir/NAME`, its meta.json's text passed
/// through `edit`.
fn edited_recording(dir: &Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/kernel/batches/mq-deadline");
    let rec = dir.join(name);
    std::fs::create_dir(&rec).unwrap();
    for f in std::fs::read_dir(&corpus).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, rec.join(f.file_name().unwrap())).unwrap();
    }
    let meta = rec.join("meta.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, edit(&text)).unwrap();
    rec
}

/// A recording's meta.json with a value of the wrong type (`"read_expire": 500`, sysfs text
/// being strings) or past its type (`"hw_queue_depth": 4294967296`): the error was serde's,
/// "invalid type: integer `500`, expected a string at line 79 column 20 (column 20)", naming
/// no field and the column twice. Now the key on that line is named as the field, the line
/// once. And a `max_sectors_kb` above the recorded `max_hw_sectors_kb` (4294967295 beside
/// 1280), which `queue_max_sectors_store` refuses, was replayed without a word: refused
/// naming the field.
#[test]
fn kernel_diff_of_a_meta_json_of_wrong_types_and_limits_names_the_field() {
    let dir = on_disk_tempdir();
    type Case<'a> = (&'a str, &'a str, &'a str, &'a [&'a str]);
    let cases: [Case; 3] = [
        (
            "read_expire",
            "\"read_expire\": \"500\"",
            "\"read_expire\": 500",
            &["field `read_expire`", "expected a string"],
        ),
        (
            "depth",
            "\"hw_queue_depth\": 128",
            "\"hw_queue_depth\": 4294967296",
            &["field `hw_queue_depth`", "4294967296"],
        ),
        (
            "max_sectors",
            "\"max_sectors_kb\": \"1280\"",
            "\"max_sectors_kb\": \"4294967295\"",
            &["field `queue.max_sectors_kb`", "max_hw_sectors_kb 1280"],
        ),
    ];
    for (name, from, to, needles) in cases {
        let rec = edited_recording(dir.path(), name, |t| {
            assert!(t.contains(from), "{from} not in the corpus's meta.json");
            t.replacen(from, to, 1)
        });
        let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
        clean_error(&out, needles);
        assert!(out.stderr.contains("meta.json"), "{}", out.stderr);
        assert!(!out.stderr.contains("(column"), "{}", out.stderr);
    }
}

/// `calibrate --json L` where L is a hard link to the target: refused before any write, but
/// the message called the `--json` output a file "this command reads". Now it names the flag
/// as an output that is the target.
#[test]
fn calibrate_json_onto_its_own_target_is_refused_as_an_output() {
    let dir = on_disk_tempdir();
    let target = dir.path().join("t");
    std::fs::write(&target, b"").unwrap();
    let link = dir.path().join("l");
    std::fs::hard_link(&target, &link).unwrap();
    let out = elevator_within(&calibrate_16m(&target, &["--json", s(&link)]), MINUTE);
    clean_error(
        &out,
        &["--json", s(&link), "is the target", "measures and writes"],
    );
    assert!(!out.stderr.contains("reads"), "{}", out.stderr);
}
