//! A policy of your own under real programs: the FUSE mount with the policy deciding its
//! data I/O.
//!
//! ```text
//! cargo run --release -p elevator-own-policy --example in_mount
//! ```
//!
//! Mounts a new temporary directory through FUSE (needs /dev/fuse and fusermount3) under
//! [`ForegroundFirst`], writes and reads back 4 MiB through the mount, prints the control
//! directory's `scheduler` and `stat` files, and unmounts.

use std::path::Path;

use elevator_core::Settings;
use elevator_mount::{mount_spec, GroupMode, MountConfig};
use elevator_own_policy::foreground_first::INFO;

/// What the mount showed.
struct Seen {
    /// `.elevator/scheduler`.
    scheduler: String,
    /// `.elevator/stat`: the 17 counters of `/sys/block/<dev>/stat`.
    stat: Vec<u64>,
    /// Whether the data read back through the mount, and the backing file, are what was
    /// written.
    round_trip: bool,
}

/// Mount `dir/backing` on `dir/mnt` under the policy, do I/O through it, unmount.
fn mount_and_copy(dir: &Path) -> Result<Seen, Box<dyn std::error::Error>> {
    let (backing, mnt) = (dir.join("backing"), dir.join("mnt"));
    std::fs::create_dir(&backing)?;
    std::fs::create_dir(&mnt)?;
    let cfg = MountConfig {
        backing: backing.clone(),
        mountpoint: mnt.clone(),
        // Not read by mount_spec: the spec names the scheduler.
        scheduler: String::new(),
        settings: Settings::new(),
        groups: GroupMode::Root,
        rules: Vec::new(),
        io_files: Vec::new(),
        allow_other: false,
        writeback_cache: false,
        threads: 2,
        request_log: 0,
        emulate: None,
    };
    let mut mounted = mount_spec(&cfg, INFO.spec())?;
    let mut unmounter = mounted.unmounter();
    let server = std::thread::spawn(move || mounted.run());
    let io = || -> std::io::Result<Seen> {
        let data: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(mnt.join("data"), &data)?;
        let read_back = std::fs::read(mnt.join("data"))?;
        let scheduler = std::fs::read_to_string(mnt.join(".elevator/scheduler"))?;
        let stat = std::fs::read_to_string(mnt.join(".elevator/stat"))?
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        Ok(Seen {
            scheduler,
            stat,
            round_trip: read_back == data,
        })
    };
    // Unmount whatever the I/O gave, so no mount outlives the run.
    let seen = io();
    unmounter.unmount()?;
    server.join().expect("the mount's thread")?;
    let mut seen = seen?;
    let data: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
    seen.round_trip &= std::fs::read(backing.join("data"))? == data;
    Ok(seen)
}

fn main() -> std::process::ExitCode {
    elevator_own_policy::exit_code(try_main())
}

/// What `main` does, its error for `main` to print.
fn try_main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let seen = mount_and_copy(dir.path())?;
    print!(".elevator/scheduler: {}", seen.scheduler);
    println!(".elevator/stat: {:?}", seen.stat);
    println!("4 MiB written and read back intact: {}", seen.round_trip);
    Ok(())
}

#[test]
fn the_policy_decides_the_mounts_io() {
    let dir = tempfile::tempdir().unwrap();
    let seen = match mount_and_copy(dir.path()) {
        Ok(s) => s,
        // No FUSE here (no /dev/fuse, no fusermount3, or not allowed to mount).
        Err(e) if e.to_string().contains("could not mount") => {
            eprintln!("skipping: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(seen.round_trip);
    assert!(
        seen.scheduler.trim_end().ends_with("[foreground-first]"),
        "{:?}",
        seen.scheduler
    );
    // Reads and writes went through the block layer (stat's fields 1 and 5: ios completed).
    assert!(seen.stat[0] > 0 && seen.stat[4] > 0, "{:?}", seen.stat);
}
