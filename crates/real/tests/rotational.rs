//! `target::rotational`: the flag the kernel's schedulers see, found for a block device, a
//! partition's disk and a regular file's filesystem, and `None` where no disk is under a path.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use elevator_real::target::rotational;

/// Every whole disk in /sys/block with its `MAJ:MIN` and rotational flag: found by name, not
/// through /sys/dev/block as the function under test does.
fn disks() -> Vec<(String, String, bool)> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let p = e.path();
            let dev = std::fs::read_to_string(p.join("dev")).ok()?;
            let rot = std::fs::read_to_string(p.join("queue/rotational")).ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                dev.trim().to_string(),
                rot.trim() == "1",
            ))
        })
        .collect()
}

#[test]
fn each_disk_node_in_dev_reports_its_own_queues_flag() {
    let disks = disks();
    let mut checked = 0;
    for (name, _, rot) in &disks {
        let node = PathBuf::from("/dev").join(name);
        let is_block = std::fs::metadata(&node).is_ok_and(|m| m.file_type().is_block_device());
        if is_block {
            assert_eq!(rotational(&node), Some(*rot), "{}", node.display());
            checked += 1;
        }
    }
    if checked == 0 {
        eprintln!("notice: no disk nodes in /dev with a /sys/block entry; nothing checked");
    }
}

#[test]
fn a_regular_file_reports_the_flag_of_the_disk_holding_its_filesystem() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let dev = std::fs::metadata(&file).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let here = format!("{major}:{minor}");
    // The filesystem's device is a whole disk or one of its partitions (MAJ:MIN listed under
    // the disk's folder).
    let disk = disks().into_iter().find(|(name, dev, _)| {
        *dev == here
            || std::fs::read_dir(Path::new("/sys/block").join(name)).is_ok_and(|d| {
                d.flatten().any(|e| {
                    std::fs::read_to_string(e.path().join("dev")).is_ok_and(|d| d.trim() == here)
                })
            })
    });
    match disk {
        Some((name, _, rot)) => assert_eq!(rotational(&file), Some(rot), "disk {name}"),
        None => {
            eprintln!("notice: the target dir is on {here}, no disk in /sys/block; expecting None");
            assert_eq!(rotational(&file), None);
        }
    }
}

#[test]
fn a_path_on_no_block_device_or_nowhere_tells_nothing() {
    assert_eq!(rotational(Path::new("/nonexistent/elevator/x")), None);
    assert_eq!(rotational(Path::new("/proc/self/status")), None);
}
