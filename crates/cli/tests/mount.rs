//! `elevator mount` end to end, with clients nobody here wrote: coreutils, fio with
//! verify=crc32c, SQLite from several processes, git clone + fsck; the daemon SIGKILLed
//! under fsync-ing writes; a clean unmount with dirty pages; a non-owner refused a 0600 file.
//!
//! Each test skips with a printed notice where /dev/fuse or fusermount3 (or the client it
//! drives) is missing, or, for the permission test, where it does not run as root.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use elevator_core::Op;
use elevator_workload::traces::blkparse::BlkparseReader;
use elevator_workload::traces::blktrace::{BlkAction, BlkEvent, EventReader, EventSource};
use elevator_workload::traces::lines::Lines;

mod common {
    pub mod blkparse;
    pub mod child;
    pub mod mount;
    pub mod page;
}
use common::blkparse::blkparse;
use common::mount::{fuse_available, have, is_root, mounted, Mount};
use common::page::check_page;

fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh").arg("-c").arg(cmd).output().unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn files_pass_through_and_the_control_files_switch_and_tune_the_scheduler() {
    if !fuse_available("mount_control") {
        return;
    }
    let mut m = Mount::start("deadline", &["--set", "fifo_batch=4"]);
    std::fs::write(m.path("small"), b"hello\n").unwrap();
    std::fs::create_dir_all(m.path("a/b")).unwrap();
    std::fs::rename(m.path("small"), m.path("a/b/moved")).unwrap();
    assert_eq!(read(&m.back.join("a/b/moved")), "hello\n");
    assert_eq!(read(&m.path("a/b/moved")), "hello\n");
    let sched = m.path(".elevator/scheduler");
    assert!(read(&sched).contains("[deadline]"), "{}", read(&sched));
    assert_eq!(read(&m.path(".elevator/iosched/fifo_batch")), "4\n");
    // Direct reads reach the scheduler: the stat file counts them.
    let r = sh(&format!(
        "dd if=/dev/urandom of={0} bs=1M count=4 status=none && \
         dd if={0} of=/dev/null bs=64k iflag=direct status=none",
        m.path("data").display()
    ));
    assert!(r.status.success(), "{r:?}");
    let f = stat_fields(&m);
    assert!(f[2] >= 8192, "sectors read {} < 4 MiB: {f:?}", f[2]);
    assert!(f[6] >= 8192, "sectors written {} < 4 MiB: {f:?}", f[6]);
    // Switch: tunables are the new policy's, at its defaults; a bad name or value is refused.
    std::fs::write(&sched, "cfq\n").unwrap();
    assert!(read(&sched).contains("[cfq]"));
    assert_eq!(read(&m.path(".elevator/iosched/slice_idle")), "8\n");
    std::fs::write(m.path(".elevator/iosched/slice_idle"), "0").unwrap();
    assert_eq!(read(&m.path(".elevator/iosched/slice_idle")), "0\n");
    assert!(std::fs::write(&sched, "no-such-policy").is_err());
    assert!(std::fs::write(m.path(".elevator/iosched/slice_idle"), "x").is_err());
    assert!(std::fs::write(m.path(".elevator/iosched/slice_idle"), "-1").is_err());
    assert!(read(&sched).contains("[cfq]"));
    assert!(m.unmount(), "clean unmount");
}

#[test]
fn a_clean_unmount_writes_back_every_dirty_page_before_the_daemon_exits() {
    if !fuse_available("mount_unmount_drains") {
        return;
    }
    let src = tempfile::NamedTempFile::new().unwrap();
    let r = sh(&format!(
        "dd if=/dev/urandom of={} bs=1M count=48 status=none",
        src.path().display()
    ));
    assert!(r.status.success());
    let mut m = Mount::start("anticipatory", &[]);
    // Buffered copy, no fsync: the data sits in the page cache when the unmount starts.
    std::fs::copy(src.path(), m.path("copy")).unwrap();
    let back = m.back.join("copy");
    assert!(m.unmount(), "clean unmount");
    assert_eq!(
        std::fs::read(back).unwrap(),
        std::fs::read(src.path()).unwrap()
    );
}

#[test]
fn an_unmount_refused_as_busy_leaves_the_daemon_serving_until_a_later_one_succeeds() {
    if !fuse_available("mount_busy_unmount") {
        return;
    }
    let mut m = Mount::start("mq-deadline", &[]);
    // A process holds a file of the mount open for a second after writing to it: the kernel
    // refuses the unmount (EBUSY) meanwhile; the daemon must go on serving, and the retried
    // unmount complete with the write on the backing directory.
    let log = m.path("held");
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 3>>{}; echo held >&3; sleep 1.5",
            log.display()
        ))
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::read(&log).map_or(true, |d| d.is_empty()) {
        assert!(t0.elapsed() < Duration::from_secs(20), "holder never wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = Command::new("fusermount3")
        .arg("-u")
        .arg(&m.mnt)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!refused.success(), "the kernel unmounted a mount in use");
    assert_eq!(
        read(&log),
        "held\n",
        "the daemon still serves after a refusal"
    );
    let back = m.back.join("held");
    assert!(m.unmount(), "the retried unmount");
    assert!(holder.wait().unwrap().success());
    assert_eq!(read(&back), "held\n");
}

/// The stat file's 17 fields.
fn stat_fields(m: &Mount) -> Vec<u64> {
    let stat = read(&m.path(".elevator/stat"));
    let f: Vec<u64> = stat
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(f.len(), 17, "{stat}");
    f
}

/// The block layer merges under the mount as it does in the simulator: 4 KiB sequential
/// direct writes kept 32 deep (`fio --ioengine=libaio --iodepth=32`) in front of a busy
/// device (the emulated laptop-4200, whose queue is its model's few slots) reach the
/// scheduler while earlier ones wait, and mq-deadline merges them (`dd_bio_merge` through
/// `blk_mq_sched_try_merge`): the stat file counts write merges, and far fewer requests than
/// writes. A `dd` of 4 KiB writes does not show it: buffered, the page cache hands FUSE
/// 1 MiB writes before we see them; with `oflag=direct`, dd waits for each write, so nothing
/// is queued to merge with. Nor does the VM's own disk: there the device queue is the
/// ring's 255 entries and each FUSE thread dispatches its request as it arrives (inline
/// submission), as blk-mq dispatches while a tag is free, so nothing waits to be merged
/// (docs/mount.md, "Merging").
#[test]
fn four_kib_writes_kept_deep_become_merged_requests() {
    if !fuse_available("mount_merges") {
        return;
    }
    if !have("fio") {
        eprintln!("mount_merges: skipped: fio not installed");
        return;
    }
    let mut m = Mount::start("mq-deadline", &["--drive", "laptop-4200"]);
    let out = Command::new("fio")
        .args([
            "--name=merge",
            &format!("--filename={}", m.path("merge.dat").display()),
            "--size=8m",
            "--bs=4k",
            "--rw=write",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=32",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let f = stat_fields(&m);
    let (ios, merges, sectors) = (f[4], f[5], f[6]);
    assert_eq!(sectors, 8 << 11, "every 4 KiB write reached the scheduler");
    assert_eq!(ios + merges, 2048, "each write is a request or a merge");
    assert!(
        merges > 2048 / 4,
        "write merges {merges}, requests {ios}: 4 KiB writes 32 deep should merge"
    );
    assert!(m.unmount());
}

#[test]
fn fio_verify_crc32c_through_the_mount_finds_no_corruption() {
    if !fuse_available("mount_fio_verify") {
        return;
    }
    if !have("fio") {
        eprintln!("mount_fio_verify: skipped: fio not installed");
        return;
    }
    let mut m = Mount::start("bfq", &[]);
    for (engine, direct, bs, rw) in [
        ("psync", 0, "4k", "randwrite"),
        ("libaio", 1, "64k", "randwrite"),
        ("psync", 0, "1m", "write"),
    ] {
        let out = Command::new("fio")
            .args([
                "--name=verify",
                &format!("--filename={}", m.path("fio.dat").display()),
                "--size=32m",
                &format!("--bs={bs}"),
                &format!("--rw={rw}"),
                &format!("--ioengine={engine}"),
                &format!("--direct={direct}"),
                "--iodepth=8",
                "--verify=crc32c",
                "--do_verify=1",
                "--verify_fatal=1",
                // No local-*-verify.state left in the working directory.
                "--verify_state_save=0",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "fio {engine} {rw} {bs}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains("verify: bad"), "{text}");
    }
    assert!(m.unmount());
}

#[test]
fn sqlite_written_by_several_processes_passes_integrity_check() {
    if !fuse_available("mount_sqlite") {
        return;
    }
    if !have("python3") || !sh("python3 -c 'import sqlite3'").status.success() {
        eprintln!("mount_sqlite: skipped: python3 with sqlite3 not installed");
        return;
    }
    let mut m = Mount::start("cfq", &[]);
    let db = m.path("t.db");
    // SQLite's busy handler is not fair: a writer polling for the lock can lose it to the
    // others for their whole run (each writer's longest wait was the time the writers before
    // it took to finish: 9.4 s of a 12 s run at load 11 under cfq), so a busy timeout on one
    // transaction fails on a loaded machine with no fault in the mount. A writer waits while
    // any writer commits and fails once none has for 60 s (a lock never released, a request
    // the mount never answers). The progress file is outside the mount.
    let script = r#"
import os, sqlite3, subprocess, sys, time
db = sys.argv[1]
progress = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "sqlite_progress")
if len(sys.argv) > 2:
    w = int(sys.argv[2])
    c = sqlite3.connect(db, timeout=1)
    for i in range(150):
        while True:
            try:
                with c:
                    c.execute("insert into t(w, i, pad) values (?, ?, ?)", (w, i, os.urandom(300)))
                break
            except sqlite3.OperationalError as e:
                if c.in_transaction:
                    c.rollback()
                if "locked" not in str(e):
                    raise
                if time.time() - os.stat(progress).st_mtime > 60:
                    sys.exit(f"writer {w}: no writer committed for 60 s: {e}")
        os.utime(progress)
    c.close()
    sys.exit(0)
c = sqlite3.connect(db)
c.execute("pragma journal_mode=" + os.environ.get("MODE", "delete"))
c.execute("create table t(w int, i int, pad blob)")
c.commit()
c.close()
open(progress, "w").close()
ps = [subprocess.Popen([sys.executable, sys.argv[0], db, str(w)]) for w in range(4)]
assert all(p.wait() == 0 for p in ps)
c = sqlite3.connect(db)
print(c.execute("pragma integrity_check").fetchone()[0], c.execute("select count(*) from t").fetchone()[0])
"#;
    let file = m.back.parent().unwrap().join("sqlite_test.py");
    std::fs::write(&file, script).unwrap();
    for mode in ["delete", "wal"] {
        let _ = std::fs::remove_file(&db);
        let out = Command::new("python3")
            .arg(&file)
            .arg(&db)
            .env("MODE", mode)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{mode}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(text.trim(), "ok 600", "journal_mode={mode}");
    }
    assert!(m.unmount());
    // The backing file, read without FUSE, is as sound.
    let out = Command::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('pragma integrity_check').fetchone()[0])")
        .arg(m.back.join("t.db"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

#[test]
fn git_clone_into_the_mount_passes_fsck() {
    if !fuse_available("mount_git") {
        return;
    }
    if !have("git") {
        eprintln!("mount_git: skipped: git not installed");
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let s = src.path().display();
    let r = sh(&format!(
        "cd {s} && git init -q && for i in $(seq 1 200); do \
           mkdir -p d$((i % 10)); head -c $((i * 97)) /dev/urandom > d$((i % 10))/f$i; done && \
         git add -A && git -c user.name=t -c user.email=t@t commit -qm one && \
         for i in $(seq 1 50); do echo $i >> d1/f1; git -c user.name=t -c user.email=t@t commit -qam c$i; done"
    ));
    assert!(r.status.success(), "{r:?}");
    let mut m = Mount::start("latency-guard", &[]);
    let dst = m.path("clone");
    let r = sh(&format!(
        "git clone -q --no-local {s} {0} && git -C {0} fsck --full --strict && git -C {0} status --porcelain",
        dst.display()
    ));
    assert!(
        r.status.success(),
        "{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(r.stdout.is_empty(), "the checkout differs from HEAD");
    assert!(m.unmount());
}

#[test]
fn every_fsync_acknowledged_write_survives_the_daemon_being_killed() {
    if !fuse_available("mount_sigkill") {
        return;
    }
    if !have("python3") {
        eprintln!("mount_sigkill: skipped: python3 not installed");
        return;
    }
    let mut m = Mount::start("deadline", &[]);
    // Records of 4 KiB (aligned: through the scheduler) and 100 bytes (unaligned: the buffered
    // path) alternate; each is fsync-ed, then its number printed.
    let script = r#"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
off = 0
for i in range(100000):
    n = 4096 if i % 2 == 0 else 100
    rec = (b"%08d" % i) * (n // 8) + b"=" * (n % 8)
    os.pwrite(fd, rec, off)
    os.fsync(fd)
    off += n
    print(i, off - n, n, flush=True)
"#;
    let mut writer = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(m.path("log"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(writer.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let v: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        acked.push((v[0], v[1], v[2]));
        if acked.len() == 300 {
            m.kill();
            break;
        }
    }
    let _ = writer.kill();
    let _ = writer.wait();
    let data = std::fs::read(m.back.join("log")).unwrap();
    for &(i, off, n) in &acked {
        let rec = &data[off as usize..(off + n) as usize];
        let want: Vec<u8> = format!("{i:08}")
            .repeat((n / 8) as usize)
            .into_bytes()
            .into_iter()
            .chain(std::iter::repeat_n(b'=', (n % 8) as usize))
            .collect();
        assert_eq!(rec, &want[..], "record {i} at {off} lost or torn");
    }
    assert_eq!(acked.len(), 300);
}

#[test]
fn a_non_owner_cannot_read_another_users_0600_file() {
    if !fuse_available("mount_permissions") {
        return;
    }
    if !is_root() || !have("setpriv") {
        eprintln!("mount_permissions: skipped: needs root and setpriv to act as another user");
        return;
    }
    let as_nobody = |cmd: &str| {
        sh(&format!(
            "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '{cmd}'"
        ))
    };
    // Without allow_other, another user cannot even look.
    let mut m = Mount::start("none", &[]);
    sh(&format!("chmod 755 {}", m.mnt.parent().unwrap().display()));
    std::fs::write(m.path("public"), "p").unwrap();
    assert!(!as_nobody(&format!("cat {}", m.path("public").display()))
        .status
        .success());
    assert!(m.unmount());
    // With allow_other, the kernel checks modes (default_permissions).
    let mut m = Mount::start("none", &["--allow-other"]);
    sh(&format!("chmod 755 {}", m.mnt.parent().unwrap().display()));
    sh(&format!("chmod 755 {}", m.mnt.display()));
    std::fs::write(m.path("public"), "p").unwrap();
    std::fs::write(m.path("secret"), "s").unwrap();
    sh(&format!("chmod 644 {}", m.path("public").display()));
    sh(&format!("chmod 600 {}", m.path("secret").display()));
    let ok = as_nobody(&format!("cat {}", m.path("public").display()));
    assert!(ok.status.success(), "{ok:?}");
    assert_eq!(ok.stdout, b"p");
    let denied = as_nobody(&format!("cat {}", m.path("secret").display()));
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Permission denied"),
        "{denied:?}"
    );
    // A file another user creates is theirs.
    sh(&format!("chmod 1777 {}", m.mnt.display()));
    let made = as_nobody(&format!("echo n > {}", m.path("theirs").display()));
    assert!(made.status.success(), "{made:?}");
    let owner = sh(&format!("stat -c %u {}", m.back.join("theirs").display()));
    assert_eq!(String::from_utf8_lossy(&owner.stdout).trim(), "65534");
    assert!(m.unmount());
}

/// What [`two_dd_processes`] did: the writer's and the reader's pids, and the mount's
/// `.elevator/stat` counters (read and write requests) just before the unmount.
struct DdRun {
    writer: u32,
    reader: u32,
    read_ios: u64,
    write_ios: u64,
}

/// Mount with `extra` flags; one dd writes 1 MiB with O_DIRECT in 64 KiB blocks, another
/// reads it back the same way; unmount.
fn two_dd_processes(extra: &[&str]) -> DdRun {
    let mut m = Mount::start("mq-deadline", extra);
    let dd = |args: &[String]| {
        let mut c = Command::new("dd").args(args).spawn().unwrap();
        let pid = c.id();
        assert!(c.wait().unwrap().success());
        pid
    };
    let f = m.path("f").display().to_string();
    let writer = dd(&[
        "if=/dev/urandom".into(),
        format!("of={f}"),
        "bs=64k".into(),
        "count=16".into(),
        "oflag=direct".into(),
        "status=none".into(),
    ]);
    let reader = dd(&[
        format!("if={f}"),
        "of=/dev/null".into(),
        "bs=64k".into(),
        "iflag=direct".into(),
        "status=none".into(),
    ]);
    let stat: Vec<u64> = read(&m.path(".elevator/stat"))
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(m.unmount(), "clean unmount");
    DdRun {
        writer,
        reader,
        read_ios: stat[0],
        write_ios: stat[4],
    }
}

/// The count and KiB blkparse's summary gives after `label` ("Reads Queued:").
fn summary(text: &str, label: &str) -> (u64, u64) {
    let rest = text
        .lines()
        .find_map(|l| l.split(label).nth(1))
        .unwrap_or_else(|| panic!("{label} in blkparse's summary"));
    let mut it = rest.split(',').map(|s| s.trim());
    let n = it.next().unwrap().parse().unwrap();
    let kib = it.next().unwrap();
    let kib = kib[..kib.find("KiB").unwrap()].parse().unwrap();
    (n, kib)
}

#[test]
fn blkparse_reads_the_mounts_blktrace_with_every_request_under_its_process() {
    if !fuse_available("mount_blktrace") {
        return;
    }
    let Some(blkparse) = blkparse() else { return };
    let out = tempfile::tempdir().unwrap();
    let bt = out.path().join("bt");
    let run = two_dd_processes(&["--blktrace-out", bt.to_str().unwrap()]);
    let text = out.path().join("parsed.txt");
    let st = Command::new(blkparse)
        .arg("-i")
        .arg(bt.join("mount"))
        .arg("-o")
        .arg(&text)
        .status()
        .unwrap();
    assert!(st.success());
    let parsed = read(&text);
    // blkparse counts what the engine counted, queued and completed alike.
    for (label, ios) in [
        ("Reads Queued:", run.read_ios),
        ("Reads Completed:", run.read_ios),
        ("Writes Queued:", run.write_ios),
        ("Writes Completed:", run.write_ios),
    ] {
        assert_eq!(summary(&parsed, label).0, ios, "{label}\n{parsed}");
    }
    // Every request went through Q, I, D and C; the writer queued its 1 MiB of writes and
    // the reader its 1 MiB of reads, each under its own pid and name.
    let ours: Vec<BlkEvent> = EventReader::open(&bt.join("mount.blktrace.0"))
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| !matches!(e.action, BlkAction::Notify(_)))
        .collect();
    let n = |a: BlkAction| ours.iter().filter(|e| e.action == a).count();
    assert!(n(BlkAction::Queue) as u64 >= run.read_ios + run.write_ios);
    for a in [BlkAction::Insert, BlkAction::Issue, BlkAction::Complete] {
        assert_eq!(n(a), n(BlkAction::Queue), "{a:?}");
    }
    assert!(ours.windows(2).all(|w| w[0].time <= w[1].time));
    let queued_bytes = |pid: u32, write: bool| -> u64 {
        ours.iter()
            .filter(|e| e.action == BlkAction::Queue && e.pid == pid)
            .filter(|e| (e.op() == Some(Op::Write)) == write)
            .map(|e| u64::from(e.bytes))
            .sum()
    };
    assert_eq!(queued_bytes(run.writer, true), 1 << 20);
    assert_eq!(queued_bytes(run.reader, false), 1 << 20);
    assert_eq!(queued_bytes(run.writer, false), 0);
    let mut theirs = BlkparseReader::new(Lines::open(&text).unwrap());
    let theirs_n = theirs.by_ref().map(Result::unwrap).count();
    assert_eq!(theirs_n, ours.len());
    for pid in [run.writer, run.reader] {
        assert_eq!(theirs.process_name(pid).as_deref(), Some("dd"));
    }
}

#[test]
fn the_mounts_report_shows_each_process_in_its_table_and_plots() {
    if !fuse_available("mount_report") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("r");
    let run = two_dd_processes(&["--report", report.to_str().unwrap()]);
    let (tables, images) = check_page(&report);
    assert_eq!(tables, 1);
    // Latency CDF, seek map, queue depth and throughput.
    assert_eq!(images.len(), 4, "{images:?}");
    let html = read(&report.join("index.html"));
    for pid in [run.writer, run.reader] {
        assert!(html.contains(&format!("<td>dd ({pid})</td>")), "{html}");
    }
    let cdf = read(&report.join("latency-cdf.svg"));
    assert!(
        cdf.contains(&format!("dd ({})", run.reader)),
        "the CDF's legend"
    );
}

#[test]
fn an_output_directory_that_cannot_be_made_is_refused_before_mounting() {
    let dirs = tempfile::tempdir().unwrap();
    // No backing directory: were the flags checked only after mounting, the error would
    // name the backing directory instead (and nothing would be mounted either way).
    let (back, mnt) = (dirs.path().join("absent"), dirs.path().join("mnt"));
    std::fs::create_dir(&mnt).unwrap();
    // A regular file where the directory should go.
    let file = dirs.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for flag in ["--blktrace-out", "--report"] {
        let bad = file.join("sub");
        let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .arg("mount")
            .arg(&back)
            .arg(&mnt)
            .arg(flag)
            .arg(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains(flag) && err.contains(bad.to_str().unwrap()),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(!mounted(&mnt));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("mount")
        .arg(&back)
        .arg(&mnt)
        .args(["--report", dirs.path().join("r").to_str().unwrap()])
        .args(["--log-limit", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log-limit"));
}

/// A scratch ext4 filesystem on a loop device whose request queue says `rotational`,
/// unmounted and detached on drop.
struct ScratchFs {
    dir: tempfile::TempDir,
    loopdev: String,
}

impl ScratchFs {
    fn new(rotational: bool) -> ScratchFs {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("fs.img");
        let mnt = dir.path().join("fs");
        std::fs::create_dir(&mnt).unwrap();
        std::fs::File::create(&img)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let out = sh(&format!("losetup -f --show {}", img.display()));
        assert!(out.status.success(), "{out:?}");
        let loopdev = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let name = loopdev.trim_start_matches("/dev/");
        let r = sh(&format!(
            "echo {} > /sys/block/{name}/queue/rotational && mkfs.ext4 -q {loopdev} && mount {loopdev} {}",
            u8::from(rotational),
            mnt.display()
        ));
        assert!(r.status.success(), "{r:?}");
        ScratchFs { dir, loopdev }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("fs")
    }
}

impl Drop for ScratchFs {
    fn drop(&mut self) {
        let _ = sh(&format!("umount {}", self.root().display()));
        let _ = sh(&format!("losetup -d {}", self.loopdev));
    }
}

#[test]
fn bfq_and_cfq_see_the_backing_devices_rotational_flag_across_a_switch() {
    if !fuse_available("mount_rotational") {
        return;
    }
    if !is_root() || !have("mkfs.ext4") || !have("losetup") {
        eprintln!("mount_rotational: skipped: needs root, losetup and mkfs.ext4");
        return;
    }
    // Non-rotational, against the policies' default of 1: as the kernel's bfq and cfq read
    // blk_queue_nonrot from the queue, ours take the backing device's flag.
    let fs = ScratchFs::new(false);
    let back = fs.root().join("back");
    std::fs::create_dir(&back).unwrap();
    let mut m = Mount::start_over(back, tempfile::tempdir().unwrap(), "bfq", &[]);
    let tunable = m.path(".elevator/iosched/rotational");
    assert_eq!(read(&tunable), "0\n", "bfq at mount");
    // A switch resets the tunables to the new policy's defaults, but not the device's flag.
    std::fs::write(m.path(".elevator/scheduler"), "cfq\n").unwrap();
    assert_eq!(read(&tunable), "0\n", "cfq after a switch");
    assert!(m.unmount(), "clean unmount");
    // --set still wins over the device.
    let back = fs.root().join("back");
    let mut m = Mount::start_over(
        back,
        tempfile::tempdir().unwrap(),
        "bfq",
        &["--set", "rotational=1"],
    );
    assert_eq!(
        read(&m.path(".elevator/iosched/rotational")),
        "1\n",
        "--set"
    );
    assert!(m.unmount(), "clean unmount");
}

/// `--cgroup-file /bulk/io.max=wbps=...` caps dd's direct writes in /bulk at the
/// submission engine's blk-throttle, as `echo wbps=... > /sys/fs/cgroup/bulk/io.max` would
/// the kernel's: 2 MiB at 1 MiB/s cannot finish before about two seconds less the first
/// slice's budget (`tg_within_bps_limit`), where unthrottled it takes milliseconds here.
#[test]
fn a_cgroup_files_io_max_caps_the_groups_writes_through_the_mount() {
    if !fuse_available("mount_io_max") || !have("dd") {
        return;
    }
    let cap = 1u64 << 20;
    let mut m = Mount::start(
        "none",
        &[
            "--no-writeback-cache",
            "--group",
            "dd=/bulk",
            "--cgroup-file",
            &format!("/bulk/io.max=wbps={cap}"),
        ],
    );
    let f = m.path("f").display().to_string();
    let start = Instant::now();
    let ok = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={f}"),
            "bs=64k",
            "count=32",
            "oflag=direct",
            "status=none",
        ])
        .status()
        .unwrap()
        .success();
    let took = start.elapsed();
    assert!(ok, "dd wrote through the mount");
    assert!(m.unmount(), "clean unmount");
    // One slice of budget (100 ms at most) may go at once; the rest at the cap.
    assert!(
        took >= Duration::from_millis(1700),
        "2 MiB under a 1 MiB/s io.max took {took:?}"
    );
}
