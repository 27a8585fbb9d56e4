//! Issue 32, round 21: round 20's leftovers. A trace whose every line is written twice, a
//! latency of a direction without I/O in the replay's and the simulator's tables and JSON, a
//! recording's meta.json that is a loop of symbolic links, and a calibration target on
//! overlayfs whose upper layer is memory. Every run is bounded in time, so a hang fails
//! instead of waiting.

use std::path::Path;
use std::process::Command;

mod common {
    pub mod bounded;
    pub mod calibrate;
    pub mod child;
    pub mod direct_io;
    pub mod recording;
    pub mod traces;
}
use common::bounded::{clean_error, elevator_within, s, MINUTE};
use common::calibrate::calibrate_16m;
use common::direct_io::on_disk_tempdir;
use common::recording::recording;
use common::traces::{format_and_view, trace_of, FORMATS};

/// Every line of a trace written twice (the trace concatenated line by line with itself)
/// was replayed as twice the load without a word, in every format. Now each format's replay
/// says on stderr how many records repeat the one before them exactly and where the first is
/// (`traces::duplicates`), and still replays them (blkparse and fio keep such records too);
/// the same trace without its copies says nothing.
#[test]
fn a_trace_with_every_line_twice_is_replayed_with_a_warning_naming_the_first_copy() {
    let dir = on_disk_tempdir();
    const N: usize = 200;
    for format in FORMATS {
        let text = trace_of(format, N);
        let header = usize::from(format == "fio-iolog") * 3;
        let (head, body): (Vec<&str>, Vec<&str>) = {
            let lines: Vec<&str> = text.lines().collect();
            (lines[..header].to_vec(), lines[header..].to_vec())
        };
        let doubled: String = head
            .iter()
            .map(|l| format!("{l}\n"))
            .chain(
                body.iter()
                    .flat_map(|l| [format!("{l}\n"), format!("{l}\n")]),
            )
            .collect();
        let (fmt, view) = format_and_view(format);
        let once = dir.path().join(format!("{format}-once.txt"));
        let twice = dir.path().join(format!("{format}-twice.txt"));
        std::fs::write(&once, &text).unwrap();
        std::fs::write(&twice, doubled).unwrap();
        let replay = |p: &Path| {
            elevator_within(
                &[
                    "replay",
                    s(p),
                    "--format",
                    fmt,
                    "--view",
                    view,
                    "--sched",
                    "noop",
                ],
                MINUTE,
            )
        };
        let out = replay(&twice);
        assert_eq!(out.code, 0, "{format}: {}", out.stderr);
        assert!(
            out.stdout.contains(&format!("{} requests replayed", 2 * N)),
            "{format}: {}",
            out.stdout
        );
        let first = format!("{}:{}", s(&twice), header + 2);
        for needle in [&format!("{N} records"), "repeat", "exactly", &first] {
            assert!(
                out.stderr.contains(needle),
                "{format}: {needle:?} not in: {}",
                out.stderr
            );
        }
        let out = replay(&once);
        assert_eq!(out.code, 0, "{format}: {}", out.stderr);
        assert!(!out.stderr.contains("repeat"), "{format}: {}", out.stderr);
    }
}

/// The count and the first copy are in `replay --json` too, beside the other counts.
#[test]
fn replay_json_counts_the_duplicates_and_names_the_first() {
    let dir = on_disk_tempdir();
    let t = dir.path().join("t.csv");
    let line = "128166372000000000,web,0,Read,8192,4096,100\n";
    std::fs::write(
        &t,
        format!("{line}{line}128166372000010000,web,0,Read,0,4096,100\n"),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = elevator_within(
        &["replay", s(&t), "--sched", "noop", "--json", s(&json)],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["runs"][0]["duplicates"], 1);
    assert_eq!(
        v["runs"][0]["first_duplicate"],
        format!("{}:2", s(&t)).as_str()
    );
}

/// A direction that completed no I/O (a trace of reads: no write) was shown with a latency of
/// 0.00 ms in the replay's tables and 0.0 in its JSON, beside a count of 0, and likewise in
/// `sim`'s table and JSON (the sweep's metric was fixed in round 19). Now `-` in every table
/// and `null` in every JSON; the rates stay 0.
#[test]
fn a_latency_of_a_direction_without_io_is_dash_in_tables_and_null_in_json() {
    let dir = on_disk_tempdir();
    let t = dir.path().join("reads.txt");
    std::fs::write(&t, trace_of("disksim", 100)).unwrap();
    let json = dir.path().join("r.json");
    let out = elevator_within(
        &[
            "replay",
            s(&t),
            "--sched",
            "noop,deadline",
            "--json",
            s(&json),
        ],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Every row of the per-process and the side-by-side tables: reads with figures, then
    // `0` writes and a `-` for each write latency (mean, p50, p90, p99, p99.9 since round 24).
    let rows: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("total") || l.starts_with("noop") || l.starts_with("deadline"))
        .collect();
    assert!(rows.len() >= 4, "{}", out.stdout);
    for row in rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells[cells.len() - 6..],
            ["0", "-", "-", "-", "-", "-"],
            "{row}"
        );
        assert!(!cells.contains(&"0.00"), "{row}");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for run in v["runs"].as_array().unwrap() {
        let w = &run["total"]["write"];
        assert_eq!(w["ios"], 0);
        assert_eq!(w["iops"], 0.0);
        for k in ["lat_mean_ms", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"] {
            assert!(w[k].is_null(), "{k}: {w}");
            assert!(run["total"]["read"][k].as_f64().unwrap() > 0.0, "{k}");
        }
    }
    // A scenario's JSON is ours; a fio job's is fio's format, which gives a direction
    // without I/O zeroes beside `"N": 0` as fio does.
    let scenario = dir.path().join("r.toml");
    std::fs::write(
        &scenario,
        "name = \"r\"\ndrive = \"samsung-980pro-1tb\"\n[[job]]\nname = \"reader\"\n\
         kind = \"fio\"\nrw = \"randread\"\nbs = 4096\nnumber_ios = 50\n",
    )
    .unwrap();
    let json = dir.path().join("s.json");
    let out = elevator_within(
        &["sim", s(&scenario), "--sched", "noop", "--json", s(&json)],
        MINUTE,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text: String = std::fs::read_to_string(&json)
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(text.contains("\"lat_mean_ms\":null"), "{text}");
    assert!(!text.contains("\"lat_mean_ms\":0.0,"), "{text}");
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("reader"))
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[cells.len() - 7..],
        ["0.00", "0.0", "-", "-", "-", "-", "-"],
        "{row}"
    );
}

/// A recording whose meta.json is a loop of symbolic links (or a link to nothing) read as
/// "no recording (meta.json) in it or below", the loop not named. Now kernel-diff names the
/// file and the loop (ELOOP), given the recording or a directory above it.
#[test]
fn kernel_diff_of_a_meta_json_link_loop_names_the_loop_and_its_path() {
    let dir = on_disk_tempdir();
    let rec = recording(dir.path(), |_| {});
    let meta = rec.join("meta.json");
    std::fs::remove_file(&meta).unwrap();
    std::os::unix::fs::symlink("meta.json", &meta).unwrap();
    for given in [rec.as_path(), dir.path()] {
        let out = elevator_within(&["kernel-diff", s(given)], MINUTE);
        clean_error(&out, &[s(&meta), "loop of symbolic links", "ELOOP"]);
    }
    std::fs::remove_file(&meta).unwrap();
    std::os::unix::fs::symlink("gone.json", &meta).unwrap();
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    clean_error(&out, &[s(&meta), "gone.json", "does not exist"]);
}

/// A kernel recording whose every event line is written twice was replayed (590 requests,
/// 19.3 % agreement) without a word (round 19). No request event but a completion repeats
/// its line in a recorded trace, so kernel-diff now says how many lines repeat the line
/// before them and where the first is; the unedited recording says nothing of it.
#[test]
fn kernel_diff_of_a_trace_with_every_line_twice_warns_naming_the_first_copy() {
    let dir = on_disk_tempdir();
    let rec = recording(dir.path(), |_| {});
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("repeat"), "{}", out.stderr);
    let gz = rec.join("trace.txt.gz");
    let text = Command::new("gzip").arg("-dc").arg(&gz).output().unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    // Completions are not counted: two of one microsecond and extents are two requests.
    let events = text
        .lines()
        .filter(|l| !l.contains("block_rq_complete:"))
        .count();
    let twice: String = text.lines().flat_map(|l| [l, "\n", l, "\n"]).collect();
    std::fs::remove_file(&gz).unwrap();
    std::fs::write(rec.join("trace.txt"), twice).unwrap();
    let zipped = Command::new("gzip").arg(rec.join("trace.txt")).status();
    assert!(zipped.unwrap().success());
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for needle in [
        &format!("{events} event lines"),
        "repeat the line before them exactly",
        "the first at line 2",
    ] {
        assert!(
            out.stderr.contains(needle),
            "{needle:?} not in: {}",
            out.stderr
        );
    }
}

/// Two writes of one hot sector completed in the same microsecond print as two identical
/// lines (`zipf-hot-randrw-three-procs-one-region/none`: lines 52 and 53), and kyber notes a
/// domain throttled at each failed attempt: each was told as a trace "edited or
/// concatenated" (22 corpus recordings, up to 4,929 lines). Such repeats are now silent.
#[test]
fn kernel_diff_is_silent_on_repeated_lines_that_are_two_requests() {
    let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/kernel/zipf-hot-randrw-three-procs-one-region/none");
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("repeat"), "{}", out.stderr);
    assert!(!out.stderr.contains("edited"), "{}", out.stderr);
}

/// A recording whose trace was cut (its first 700 lines kept) was compared as a whole one:
/// 132 decisions at 100%, not a word. kernel-record marks fio's start and end in the trace;
/// without the end mark kernel-diff says the trace was cut.
#[test]
fn kernel_diff_of_a_trace_cut_before_fio_ended_says_so() {
    let dir = on_disk_tempdir();
    let rec = recording(dir.path(), |_| {});
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("cut"), "{}", out.stderr);
    let gz = rec.join("trace.txt.gz");
    let text = Command::new("gzip").arg("-dc").arg(&gz).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let head: String = text.lines().take(700).flat_map(|l| [l, "\n"]).collect();
    std::fs::remove_file(&gz).unwrap();
    std::fs::write(rec.join("trace.txt"), head).unwrap();
    assert!(Command::new("gzip")
        .arg(rec.join("trace.txt"))
        .status()
        .unwrap()
        .success());
    let out = elevator_within(&["kernel-diff", s(&rec)], MINUTE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for needle in ["it was cut before fio ended", "fio ended\""] {
        assert!(
            out.stderr.contains(needle),
            "{needle:?} not in: {}",
            out.stderr
        );
    }
}

/// A recording's meta.json named in place of its directory was read as a directory
/// ("rec/meta.json/meta.json: Not a directory"); the error now says to name the directory.
#[test]
fn kernel_diff_of_a_file_asks_for_the_recordings_directory() {
    let dir = on_disk_tempdir();
    let rec = recording(dir.path(), |_| {});
    let meta = rec.join("meta.json");
    let out = elevator_within(&["kernel-diff", s(&meta)], MINUTE);
    clean_error(&out, &[s(&meta), "a file", "recording's directory"]);
}

/// Runs `program args`, true if it succeeded.
fn ran(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A calibration target on overlayfs whose upper layer is on tmpfs: the overlay's device
/// has no sysfs entry and `cachestat` on the overlay file counts the overlay's own (empty)
/// page cache, so the calibration measured memory and wrote a spec (exit 0). Now the upper
/// layer is judged (`fidelity`: mountinfo's `upperdir=`), and the target refused without
/// `--allow-memory`, naming overlayfs, the upper layer and tmpfs. Needs root (mount).
#[test]
fn calibrate_on_overlayfs_over_tmpfs_is_refused_without_allow_memory() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("notice: needs root to mount an overlay; skipped");
        return;
    }
    let dir = on_disk_tempdir();
    let (mem, lower, ovl) = (
        dir.path().join("mem"),
        dir.path().join("lower"),
        dir.path().join("ovl"),
    );
    for d in [&mem, &lower, &ovl] {
        std::fs::create_dir(d).unwrap();
    }
    if !ran(
        "mount",
        &["-t", "tmpfs", "-o", "size=64m", "h23mem", s(&mem)],
    ) {
        eprintln!("notice: mount -t tmpfs failed; skipped");
        return;
    }
    let (upper, work) = (mem.join("upper"), mem.join("work"));
    std::fs::create_dir(&upper).unwrap();
    std::fs::create_dir(&work).unwrap();
    let options = format!(
        "lowerdir={},upperdir={},workdir={}",
        s(&lower),
        s(&upper),
        s(&work)
    );
    let mounted = ran(
        "mount",
        &["-t", "overlay", "h23ovl", "-o", &options, s(&ovl)],
    );
    let out = mounted.then(|| {
        let target = ovl.join("t");
        let out = elevator_within(
            &calibrate_16m(&target, &["--duration", "1", "--iocost", "--drive", "none"]),
            MINUTE,
        );
        (out, target.exists())
    });
    if mounted {
        ran("umount", &[s(&ovl)]);
    }
    ran("umount", &[s(&mem)]);
    let Some((out, laid_out)) = out else {
        eprintln!("notice: mount -t overlay failed; skipped");
        return;
    };
    clean_error(&out, &["overlayfs", s(&upper), "tmpfs", "--allow-memory"]);
    assert!(!laid_out, "the refused target was laid out");
}
