//! Hostile cases of issue 32, third round: variants of the classes on other formats,
//! commands and flags than round 2 tried (`hostile_round2.rs`). One test per class, named
//! after its example; each asserts a clean error (exit 1, a short message naming the file,
//! line or flag at fault, the input intact) or the correct behaviour, within a bounded time.

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

/// The "N requests replayed" figure of a replay's output.
fn replayed(out: &Out) -> u64 {
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("requests replayed"))
        .unwrap_or_else(|| panic!("no summary in: {}{}", out.stdout, out.stderr));
    let before = line.split(" requests replayed").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

const MSR_READ: &str = "128166372000000000,web,0,Read,0,4096,100\n";

// ----- silent wrong values: a first line dropped as a header -----

/// A first line that starts with a UTF-8 byte-order mark (`--format msr`) was skipped as a
/// header: "0 requests replayed", exit 0. A first data line with one bad field (`NaN` for the
/// time in MSR, a letter for SPC's ASU) was skipped the same way: `csv::is_header` takes a
/// line as a header only when no field of it starts with a digit, and `Lines` drops the BOM.
#[test]
fn a_bom_or_a_bad_first_field_in_a_csv_trace_is_not_dropped_as_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(MSR_READ.as_bytes());
    let t = write(dir.path(), "bom.csv", &bom);
    for format in [&["--format", "msr"][..], &[]] {
        let mut args = vec!["replay", &t];
        args.extend_from_slice(format);
        let out = elevator(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(replayed(&out), 1, "{}", out.stdout);
    }
    // A BOM before a DiskSim or blkparse first line too.
    let ds = write(dir.path(), "bom.txt", b"\xef\xbb\xbf0.0 0 0 8 1\n");
    let out = elevator(&["replay", &ds]);
    assert_eq!(replayed(&out), 1, "{}{}", out.stdout, out.stderr);

    let t = write(
        dir.path(),
        "nan.csv",
        b"NaN,web,0,Read,0,4096,100\n128166372000010000,web,0,Write,8192,4096,100\n",
    );
    let out = elevator(&["replay", "--format", "msr", &t]);
    clean_error(&out, &["nan.csv:1", "Timestamp", "NaN"]);
    let t = write(dir.path(), "spc.csv", b"x,0,4096,R,0.0\n0,0,4096,R,0.1\n");
    let out = elevator(&["replay", "--format", "spc", &t]);
    clean_error(&out, &["spc.csv:1", "ASU"]);
    // A real header is still skipped.
    let mut text = b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n".to_vec();
    text.extend_from_slice(MSR_READ.as_bytes());
    let t = write(dir.path(), "hdr.csv", &text);
    assert_eq!(replayed(&elevator(&["replay", &t])), 1);
}

/// A request above the replay's 64 MiB bound was refused as "the trace: field `sectors`",
/// naming neither the file nor the line; now the record's file and line (or byte) are named.
#[test]
fn an_oversized_request_is_refused_naming_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(
        dir.path(),
        "big.csv",
        b"128166372000000000,web,0,Read,0,4096,100\n\
          128166372000010000,web,0,Write,8192,1073741824,100\n",
    );
    let out = elevator(&["replay", &t]);
    clean_error(&out, &["big.csv:2", "size", "1024 MiB"]);
}

// ----- unsafe writes: an output or a target that is an input -----

/// `sim SCENARIO --json TRACE` where TRACE is the file the scenario's `trace` job replays (or
/// its drive spec): the trace was overwritten with the results. Every file the scenario names
/// is now an input no output may be.
#[test]
fn an_output_onto_a_file_the_scenario_names_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace_text = b"0.0 0 0 8 1\n1.0 0 16 8 0\n";
    let trace = write(dir.path(), "t.trace", trace_text);
    let scenario = write(
        dir.path(),
        "s.toml",
        b"name = \"t\"\ndrive = \"cheetah9lp\"\n[[job]]\nname = \"tr\"\nkind = \"trace\"\n\
          trace = \"t.trace\"\nformat = \"disksim\"\n",
    );
    let out = elevator(&["sim", &scenario, "--json", &trace]);
    clean_error(&out, &["--json", "the scenario names"]);
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        trace_text,
        "the trace changed"
    );
    // Spelt another way, and through a drive sweep's spec.
    let other = format!("{}/./t.trace", dir.path().display());
    let out = elevator(&["sim", &scenario, "--json", &other]);
    clean_error(&out, &["--json"]);
    let drive = dir.path().join("d.toml");
    let spec = elevator(&["drive", "show", "cheetah9lp"]).stdout;
    std::fs::write(&drive, &spec).unwrap();
    let d = drive.to_str().unwrap();
    let out = elevator(&[
        "sim",
        &scenario,
        "--sweep",
        &format!("drive={d}"),
        "--json",
        d,
    ]);
    clean_error(&out, &["--json", "drive spec"]);
    assert_eq!(std::fs::read_to_string(&drive).unwrap(), spec);
}

/// `run JOB --target JOB --allow-overwrite` wrote its first 512 bytes over the job file, and
/// `replay TRACE --target TRACE` over the trace it was reading (and then replayed what it had
/// written). `--allow-overwrite` covers data on the target, not the command's own inputs:
/// refused whatever the flags, before the target is opened.
#[test]
fn a_target_that_is_an_input_is_refused_even_with_allow_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let mut job = String::from("[j]\nrw=write\nbs=512\nsize=512\n");
    for i in 0..60 {
        job.push_str(&format!("# padding line {i}\n"));
    }
    let j = write(dir.path(), "j.fio", job.as_bytes());
    let same = format!("{}/./j.fio", dir.path().display());
    let out = elevator(&["run", &j, "--target", &same, "--allow-overwrite"]);
    clean_error(&out, &["target", "the job file"]);
    assert_eq!(
        std::fs::read_to_string(&j).unwrap(),
        job,
        "the job file changed"
    );

    let mut trace = String::new();
    for i in 0..200u64 {
        trace.push_str(&format!(
            "{},web,0,Write,{},4096,100\n",
            128_166_372_000_000_000 + i * 10_000,
            i * 4096
        ));
    }
    let t = write(dir.path(), "t.csv", trace.as_bytes());
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink(&t, &link).unwrap();
    let out = elevator(&[
        "replay",
        &t,
        "--target",
        link.to_str().unwrap(),
        "--allow-overwrite",
    ]);
    clean_error(&out, &["target", "a trace"]);
    assert_eq!(
        std::fs::read_to_string(&t).unwrap(),
        trace,
        "the trace changed"
    );
}

/// `calibrate -o F --json ./F` wrote the spec and the JSON to one file, each over the other.
#[test]
fn calibrate_output_and_json_naming_one_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "m.json", b"{}");
    let o = dir.path().join("o.toml");
    let o2 = format!("{}/./o.toml", dir.path().display());
    let out = elevator(&[
        "calibrate",
        "--target",
        "x",
        "--measured",
        &m,
        "-o",
        o.to_str().unwrap(),
        "--json",
        &o2,
    ]);
    clean_error(&out, &["--output", "--json", "one file"]);
    assert!(!o.exists());
}

// ----- silent wrong values: a sweep axis given twice -----

/// `--sweep seed=1,2 --sweep seed=3,4` ran seeds 3 and 4 twice each, tabled as four cells
/// with both `seed` columns showing the second axis's value: refused, naming the axis.
#[test]
fn a_sweep_axis_given_twice_is_refused() {
    let out = elevator(&[
        "sim",
        "anticipatory",
        "--sweep",
        "seed=1,2",
        "--sweep",
        "seed=3,4",
    ]);
    clean_error(&out, &["--sweep seed", "twice"]);
    // A seed past i64 is named as out of range, not as "not an integer".
    let out = elevator(&[
        "sim",
        "anticipatory",
        "--sweep",
        "seed=18446744073709551615",
    ]);
    clean_error(&out, &["--sweep seed", "past the integers"]);
}

// ----- hangs -----

/// `elevator mount M/x M`: the mount hid its own backing directory and every FUSE thread
/// waited on the mount (a hang, then a dead mount). Refused before mounting, also through a
/// symlink to the backing directory.
#[test]
fn a_backing_directory_inside_the_mountpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    let m = dir.path().to_str().unwrap();
    let out = elevator_within(
        &["mount", inner.to_str().unwrap(), m],
        Duration::from_secs(30),
    );
    clean_error(&out, &["inside the mountpoint"]);
    let link = tempfile::tempdir().unwrap();
    let l = link.path().join("b");
    std::os::unix::fs::symlink(&inner, &l).unwrap();
    let out = elevator_within(&["mount", l.to_str().unwrap(), m], Duration::from_secs(30));
    clean_error(&out, &["inside the mountpoint"]);
}

/// An output that is a FIFO nothing reads (`--json`, `--plot`, a `--blktrace-out` file,
/// `drive import-disksim -o`) hung for ever, at the check or at the write; a FIFO with a
/// reader had its reader's input ended by the check's probe, then hung. Now a FIFO without a
/// reader fails at once naming it (the tables still printed), and one with a reader gets the
/// results.
#[test]
fn an_output_fifo_without_a_reader_fails_at_once_and_one_with_a_reader_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.csv", MSR_READ.as_bytes());
    let fifo = dir.path().join("out.fifo");
    let mkfifo = |p: &Path| {
        assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    };
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let limit = Duration::from_secs(60);
    let out = elevator_within(&["replay", &t, "--json", f], limit);
    clean_error(&out, &["FIFO", "nothing reads"]);
    assert!(out.stdout.contains("requests replayed"), "{}", out.stdout);
    let out = elevator_within(
        &["sim", "anticipatory", "--sweep", "seed=1", "--plot", f],
        Duration::from_secs(300),
    );
    clean_error(&out, &["--plot", "FIFO"]);
    let bt = dir.path().join("bt");
    std::fs::create_dir(&bt).unwrap();
    mkfifo(&bt.join("deadline.blktrace.0"));
    let out = elevator_within(
        &["replay", &t, "--blktrace-out", bt.to_str().unwrap()],
        limit,
    );
    clean_error(&out, &["--blktrace-out", "FIFO"]);

    // With a reader: the JSON arrives whole. The reader opens the FIFO first without waiting
    // for a writer (so nothing here depends on timing); the JSON fits the pipe's buffer.
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let out = elevator_within(&["replay", &t, "--json", f], limit);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut got = String::new();
    reader.read_to_string(&mut got).unwrap();
    let v: serde_json::Value = serde_json::from_str(&got).expect("whole JSON");
    assert!(v.is_object());
}

// ----- lost data: a full disk -----

/// `--json F` on a full filesystem truncated F (an older result destroyed) and left it empty;
/// a `--parquet` that failed left `F.tmp.PID` behind. Outputs are now written whole or not
/// at all: the older file is intact and nothing else is left. A 64 KiB tmpfs filled up
/// (root needed to mount it; skipped with a notice otherwise).
#[test]
fn a_json_output_on_a_full_disk_keeps_the_older_file_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let fs = dir.path().join("fs");
    std::fs::create_dir(&fs).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&fs)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&fs);
    let old = fs.join("out.json");
    std::fs::write(&old, "{\"old\": 1}\n").unwrap();
    // Fill it: writes stop at ENOSPC.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(fs.join("fill")).unwrap();
        while f.write_all(&[0u8; 4096]).is_ok() {}
    }
    let t = write(dir.path(), "t.csv", MSR_READ.as_bytes());
    let out = elevator(&["replay", &t, "--json", old.to_str().unwrap()]);
    clean_error(&out, &["out.json", "No space left"]);
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "{\"old\": 1}\n");
    let out = elevator(&[
        "sim",
        "anticipatory",
        "--sweep",
        "seed=1",
        "--parquet",
        fs.join("x.parquet").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let mut left: Vec<String> = std::fs::read_dir(&fs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["fill", "out.json"], "files left behind");
}
