//! Discards (fio's trims) through the executor: a hole punched in a file, the kernel's
//! discard on a loop device, the verify map, and the region a discard must stay in; and the
//! `RWF_*` flags of fio's `sync=` on a job's writes.

mod common;

use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;

use common::{fresh_target, noop, real, Walk, MIB};
use elevator_core::Op;
use elevator_real::{run, MemBackend, RunError, RunOptions, UringBackend};

/// 128 blocks of 4 KiB written at sector 0, then (next phase) 64 of them from block 32
/// discarded at depth 4.
fn write_then_discard() -> Vec<elevator_real::RealJob> {
    vec![
        real("writer", Walk::new(Op::Write, 0, 128, 8), 0),
        real("trimmer", Walk::new(Op::Discard, 32 * 8, 64, 4), 1),
    ]
}

/// Whether `data` is all zeroes.
fn zero(data: &[u8]) -> bool {
    data.iter().all(|&b| b == 0)
}

/// A discard on a file punches a hole (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`, as
/// fio's falloc engine trims): the range reads back as zeroes, the blocks around it keep
/// their data, the file keeps its size and its allocated blocks (`st_blocks`) fall by the
/// range; the discards count with the job's writes, outside the flushes.
#[test]
fn a_discard_on_a_file_punches_a_hole_that_reads_back_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target");
    let Some(t) = fresh_target(&path) else {
        return;
    };
    let mut backend = UringBackend::new(t.file, t.size, 64).unwrap();
    let jobs = vec![real("writer", Walk::new(Op::Write, 0, 128, 8), 0)];
    run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap();
    let before = std::fs::metadata(&path).unwrap().blocks();
    let jobs = vec![real("trimmer", Walk::new(Op::Discard, 32 * 8, 64, 4), 0)];
    let report = run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap();
    let m = &report.jobs[0].metrics;
    assert_eq!((m.write.ios, m.write.bytes, m.sync.ios), (64, 64 * 4096, 0));
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(after.len(), MIB, "the file keeps its size");
    // The file system may keep one block more for the extents the hole splits.
    assert!(
        after.blocks() + 64 * 8 - 8 <= before,
        "st_blocks {before} -> {}: the hole frees the 256 KiB discarded",
        after.blocks()
    );
    // Read buffered (a Vec is not aligned for the target's O_DIRECT handle).
    let data = std::fs::read(&path).unwrap();
    assert!(
        zero(&data[32 * 4096..96 * 4096]),
        "the hole reads back zero"
    );
    assert!(!zero(&data[..4096]) && !zero(&data[96 * 4096..97 * 4096]));
}

/// Where the kernel refuses io_uring's discard command the backend discards at once, as
/// fio falls back to `os_trim` (`async_trim_fail`): on a file, the hole is punched by
/// `fallocate` in `submit`, and its completion handed out at the next wait.
#[test]
fn a_synchronous_discard_punches_the_same_hole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target");
    let Some(t) = fresh_target(&path) else {
        return;
    };
    let mut backend = UringBackend::new(t.file, t.size, 64).unwrap();
    backend.set_sync_discard(true);
    let report = run(
        &mut backend,
        &mut noop(),
        write_then_discard(),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(report.jobs[1].metrics.write.ios, 64);
    let data = std::fs::read(&path).unwrap();
    assert!(zero(&data[32 * 4096..96 * 4096]));
    assert!(!zero(&data[96 * 4096..128 * 4096]));
}

/// With `--verify`, the sectors a discard covers are no longer checked (what they read back
/// is the device's business): a reader after the discard passes, and the read-back at the end
/// covers only the sectors still written.
#[test]
fn verify_leaves_discarded_sectors_out() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    let mut jobs = write_then_discard();
    jobs.push(real("reader", Walk::new(Op::Read, 0, 128, 4), 2));
    let opts = RunOptions {
        verify: true,
        run_id: 9,
        ..Default::default()
    };
    let report = run(&mut backend, &mut noop(), jobs, &opts).unwrap();
    assert_eq!(report.verified_bytes, 64 * 4096);
    assert!(zero(&backend.data()[32 * 4096..96 * 4096]));
    assert_eq!(report.jobs[2].metrics.read.ios, 128);
}

/// A discard is held to its job's region as a write is: one outside it fails the run
/// before anything reaches the device.
#[test]
fn a_discard_outside_its_region_is_refused_before_the_device() {
    let mut backend = MemBackend::new(MIB as usize, 32);
    backend_fill(&mut backend);
    let walk = Walk::new(Op::Discard, 0, 16, 1);
    let job = common::real_in(
        "stray",
        walk,
        0,
        elevator_real::ByteRange {
            start: 4096,
            end: MIB,
        },
    );
    let err = run(&mut backend, &mut noop(), vec![job], &RunOptions::default()).unwrap_err();
    assert!(
        matches!(err.error, RunError::OutOfRegion { .. }),
        "{}",
        err.error
    );
    assert!(!zero(&backend.data()[..4096]), "nothing was discarded");
}

/// Writes a pattern over the whole in-memory device.
fn backend_fill(b: &mut MemBackend) {
    let jobs = vec![real("fill", Walk::new(Op::Write, 0, MIB / 4096, 8), 0)];
    run(b, &mut noop(), jobs, &RunOptions::default()).unwrap();
}

/// A loop device, detached when dropped.
struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// A loop device over `backing`, or why not.
fn attach(backing: &Path) -> Result<Loop, String> {
    // SAFETY: geteuid reads the caller's id.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(backing)
        .output()
        .map_err(|e| format!("losetup: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Loop(
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

/// On a block device the discard is the kernel's (io_uring's discard command, else
/// BLKDISCARD): a loop device passes it to its backing file as a punched hole, so the range
/// reads back zero through the device and the backing file's blocks fall. Skipped, with a
/// notice, without root or loop devices.
#[test]
fn a_discard_on_a_loop_device_is_the_kernels_discard() {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("backing");
    let f = std::fs::File::create(&backing).unwrap();
    f.write_all_at(&vec![0xa5u8; 4 * MIB as usize], 0).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let dev = match attach(&backing) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("skipping the loop-device discard test: {why}");
            return;
        }
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&dev.0)
        .unwrap();
    let before = std::fs::metadata(&backing).unwrap().blocks();
    let mut backend = UringBackend::new(file, 4 * MIB, 64).unwrap();
    // 256 discards of 4 KiB: the second MiB.
    let jobs = vec![real("trimmer", Walk::new(Op::Discard, 2048, 256, 4), 0)];
    let report = run(&mut backend, &mut noop(), jobs, &RunOptions::default());
    let report = match report {
        Ok(r) => r,
        Err(e) if e.error.to_string().contains("not supported") => {
            eprintln!("skipping: {} does not discard: {}", dev.0, e.error);
            return;
        }
        Err(e) => panic!("{}", e.error),
    };
    assert_eq!(report.jobs[0].metrics.write.ios, 256);
    if backend.sync_discard() {
        eprintln!("note: this kernel refused io_uring's discard command; BLKDISCARD was used");
    }
    drop(backend);
    // Read through the device itself (buffered: a Vec is not aligned for O_DIRECT).
    let mut data = vec![0u8; 2 * MIB as usize];
    let check = std::fs::File::open(&dev.0).unwrap();
    check.read_exact_at(&mut data, 0).unwrap();
    drop(check);
    assert!(!zero(&data[..MIB as usize]), "the first MiB kept");
    assert!(zero(&data[MIB as usize..]), "the second MiB discarded");
    let after = std::fs::metadata(&backing).unwrap().blocks();
    assert!(
        after + 2048 - 8 <= before,
        "backing st_blocks {before} -> {after}"
    );
}

/// Records each I/O's kind and `rw_flags` on the way to a [`MemBackend`].
struct Flags(MemBackend, Vec<(elevator_real::IoKind, i32)>);

impl elevator_real::Backend for Flags {
    fn size_bytes(&self) -> u64 {
        self.0.size_bytes()
    }
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    fn in_flight(&self) -> usize {
        self.0.in_flight()
    }
    fn submit(&mut self, io: elevator_real::IoRequest) -> std::io::Result<()> {
        self.1.push((io.kind, io.rw_flags));
        self.0.submit(io)
    }
    fn wait(
        &mut self,
        timeout: Option<std::time::Duration>,
        out: &mut Vec<elevator_real::IoCompletion>,
    ) -> std::io::Result<()> {
        self.0.wait(timeout, out)
    }
}

/// fio's `sync=dsync` opens the job's file O_DSYNC, so every write it does is durable before
/// it completes: the executor asks that of each of the job's writes (`RWF_DSYNC`), of no
/// other job's writes and of none of its reads; a real write with the flag goes through.
#[test]
fn a_sync_jobs_writes_carry_its_rw_flags() {
    let mut backend = Flags(MemBackend::new(MIB as usize, 32), Vec::new());
    let mut dsync = real("dsync", Walk::new(Op::Write, 0, 16, 1), 0);
    dsync.rw_flags = libc::RWF_DSYNC;
    let jobs = vec![
        dsync,
        real("plain", Walk::new(Op::Write, 1024, 16, 1), 1),
        real("reader", Walk::new(Op::Read, 0, 16, 1), 2),
    ];
    run(&mut backend, &mut noop(), jobs, &RunOptions::default()).unwrap();
    use elevator_real::IoKind::{Read, Write};
    let seen = &backend.1;
    assert_eq!(seen.len(), 48);
    assert!(seen[..16].iter().all(|&s| s == (Write, libc::RWF_DSYNC)));
    assert!(seen[16..32].iter().all(|&s| s == (Write, 0)));
    assert!(seen[32..].iter().all(|&s| s == (Read, 0)));
    assert_eq!(
        elevator_real::rw_flags_of(elevator_workload::jobs::fio::SyncIo::Sync),
        libc::RWF_SYNC
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target");
    let Some(t) = fresh_target(&path) else {
        return;
    };
    let mut backend = UringBackend::new(t.file, t.size, 64).unwrap();
    let mut job = real("dsync", Walk::new(Op::Write, 0, 32, 4), 0);
    job.rw_flags = libc::RWF_DSYNC;
    let report = run(&mut backend, &mut noop(), vec![job], &RunOptions::default()).unwrap();
    assert_eq!(report.jobs[0].metrics.write.ios, 32);
}
