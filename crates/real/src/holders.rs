//! Who holds a block device or a file: the loop devices that read and write it, the mounts of
//! it in every mount namespace, and the processes that have it open.
//!
//! The kernel refuses an exclusive open (EBUSY) of a device a filesystem, a device-mapper or
//! md array, or another exclusive opener holds, but does not say who; and a loop device does
//! not claim what backs it at all (`loop_configure` claims the loop device itself, never its
//! backing file or device, and sysfs `holders/` stays empty), so a file or a device behind an
//! attached loop device can be opened, even exclusively, and written under whatever uses the
//! loop device. This module finds them:
//!
//! - [`attached_loops`]: every bound loop device (`/sys/block/loopN/loop` exists only while
//!   one is attached) and the identity of its backing file as the kernel's `loop_get_status`
//!   reports it through `LOOP_GET_STATUS64` (the backing file's `st_dev`, `st_ino` and
//!   `st_rdev`, whatever mount namespace the path was given in, and deleted or not), or, where
//!   the device node cannot be opened, a `stat` of sysfs `loop/backing_file`;
//! - [`describe`]: for a set of device numbers, the mounts in every mount namespace
//!   (`/proc/PID/mountinfo`, one reader per namespace, matched by `major:minor`, which the
//!   source path in /proc/self/mounts may not name) and the processes with one of them open
//!   (`/proc/PID/fd`), each said once.
//!
//! Everything here only reads: a loop device's node is opened read-only for the ioctl.

use std::collections::HashSet;
use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// At most this many holders are named in one message.
pub const MAX_NAMED: usize = 8;

/// An attached loop device and the identity of the file (or device) it reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopBacking {
    /// The loop device's node, e.g. `/dev/loop4`.
    pub device: PathBuf,
    /// The loop device's own device number.
    pub devno: u64,
    /// `st_dev` of the backing file (the filesystem holding it).
    pub dev: u64,
    /// `st_ino` of the backing file.
    pub ino: u64,
    /// `st_rdev` of the backing file: the device number when it is a block device, else 0.
    pub rdev: u64,
}

/// `LOOP_GET_STATUS64` (include/uapi/linux/loop.h: `0x4C05`).
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// The size of `struct loop_info64` (include/uapi/linux/loop.h), in u64 words: five `__u64`
/// (`lo_device`, `lo_inode`, `lo_rdevice`, `lo_offset`, `lo_sizelimit`), four `__u32`, two
/// 64-byte names, a 32-byte key and two `__u64`: 232 bytes. Only the first three are read.
const LOOP_INFO64_WORDS: usize = 29;

/// A device number as the kernel's `huge_encode_dev` (`new_encode_dev`) writes it into
/// `loop_info64`, as the C library's `makedev` numbers it.
pub fn decode_huge_dev(v: u64) -> u64 {
    let major = ((v & 0xfff00) >> 8) as u32;
    let minor = ((v & 0xff) | ((v >> 12) & 0xfff00)) as u32;
    libc::makedev(major, minor)
}

/// A `MAJOR:MINOR` line (sysfs `dev`, mountinfo's third field) as a device number.
pub fn parse_devno(s: &str) -> Option<u64> {
    let (maj, min) = s.trim().split_once(':')?;
    Some(libc::makedev(maj.parse().ok()?, min.parse().ok()?))
}

fn via_ioctl(node: &Path, devno: u64) -> Option<LoopBacking> {
    let m = fs::metadata(node).ok()?;
    if !m.file_type().is_block_device() || m.rdev() != devno {
        return None;
    }
    let f = File::open(node).ok()?;
    let mut info = [0u64; LOOP_INFO64_WORDS];
    // SAFETY: LOOP_GET_STATUS64 writes one loop_info64 (232 bytes, 8-aligned) through the
    // pointer; `info` is that size and alignment and outlives the call.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64, info.as_mut_ptr()) };
    (r == 0).then(|| LoopBacking {
        device: node.to_path_buf(),
        devno,
        dev: decode_huge_dev(info[0]),
        ino: info[1],
        rdev: decode_huge_dev(info[2]),
    })
}

/// Every attached loop device of this machine and what backs it. A loop device whose
/// backing cannot be told (no node to open, and its `backing_file` path not reachable from
/// here) is left out.
pub fn attached_loops() -> Vec<LoopBacking> {
    let Ok(entries) = fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with("loop") {
            continue;
        }
        let sys = e.path();
        if !sys.join("loop").is_dir() {
            continue;
        }
        let Some(devno) = fs::read_to_string(sys.join("dev"))
            .ok()
            .and_then(|s| parse_devno(&s))
        else {
            continue;
        };
        let node = Path::new("/dev").join(name);
        if let Some(b) = via_ioctl(&node, devno) {
            out.push(b);
            continue;
        }
        let Ok(path) = fs::read_to_string(sys.join("loop/backing_file")) else {
            continue;
        };
        if let Ok(m) = fs::metadata(path.trim_end_matches('\n')) {
            out.push(LoopBacking {
                device: node,
                devno,
                dev: m.dev(),
                ino: m.ino(),
                rdev: if m.file_type().is_block_device() {
                    m.rdev()
                } else {
                    0
                },
            });
        }
    }
    out.sort_by(|a, b| a.device.cmp(&b.device));
    out
}

/// The device numbers that share blocks with the block device `rdev`: itself, its
/// partitions, and the whole disk when it is a partition (from sysfs).
pub fn related_devnos(rdev: u64) -> HashSet<u64> {
    let mut set = HashSet::from([rdev]);
    let Some(dir) = crate::target::sysfs_dir(rdev) else {
        return set;
    };
    let devno_of = |d: &Path| {
        fs::read_to_string(d.join("dev"))
            .ok()
            .and_then(|s| parse_devno(&s))
    };
    if let Ok(entries) = fs::read_dir(&dir) {
        set.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("partition").exists())
                .filter_map(|p| devno_of(&p)),
        );
    }
    if dir.join("partition").exists() {
        if let Some(parent) = dir.parent().and_then(devno_of) {
            set.insert(parent);
        }
    }
    set
}

fn comm(pid: &str) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().chars().take(16).collect())
        .unwrap_or_else(|_| "?".into())
}

fn pids() -> Vec<String> {
    let mut v: Vec<(u32, String)> = fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().into_string().ok()?;
                    Some((n.parse::<u32>().ok()?, n))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

/// The mounts of any of `devnos` in every mount namespace, as `mounted on DIR` (this
/// process's namespace) or `mounted on DIR in the mount namespace of pid N (COMM)`.
pub fn mounts_of(devnos: &HashSet<u64>) -> Vec<String> {
    let own_ns = fs::read_link("/proc/self/ns/mnt").ok();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for pid in pids() {
        let Ok(ns) = fs::read_link(format!("/proc/{pid}/ns/mnt")) else {
            continue;
        };
        if !seen.insert(ns.clone()) {
            continue;
        }
        let Ok(info) = fs::read_to_string(format!("/proc/{pid}/mountinfo")) else {
            continue;
        };
        for m in info.lines().filter_map(crate::mountinfo::parse) {
            if !parse_devno(m.devno).is_some_and(|d| devnos.contains(&d)) {
                continue;
            }
            let dir: String = m.point.to_string_lossy().chars().take(120).collect();
            out.push(if Some(&ns) == own_ns.as_ref() {
                format!("mounted on {dir}")
            } else {
                format!(
                    "mounted on {dir} in the mount namespace of pid {pid} ({})",
                    comm(&pid)
                )
            });
            if out.len() >= MAX_NAMED {
                return out;
            }
        }
    }
    out
}

/// The processes other than this one with any of the block devices `devnos` open, as
/// `open by pid N (COMM)`.
pub fn openers_of(devnos: &HashSet<u64>) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for pid in pids() {
        if pid == me {
            continue;
        }
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            fs::metadata(fd.path())
                .is_ok_and(|m| m.file_type().is_block_device() && devnos.contains(&m.rdev()))
        });
        if holds {
            out.push(format!("open by pid {pid} ({})", comm(&pid)));
            if out.len() >= MAX_NAMED {
                break;
            }
        }
    }
    out
}

/// What holds any of `devnos`: the loop devices they back, their mounts in every mount
/// namespace, the processes with one open; at most [`MAX_NAMED`], each once.
pub fn describe(devnos: &HashSet<u64>) -> Vec<String> {
    let mut v: Vec<String> = attached_loops()
        .into_iter()
        .filter(|l| devnos.contains(&l.rdev))
        .map(|l| {
            format!(
                "the backing device of loop device {} (detach it: losetup -d {})",
                l.device.display(),
                l.device.display()
            )
        })
        .collect();
    v.extend(mounts_of(devnos));
    v.extend(openers_of(devnos));
    let mut seen = HashSet::new();
    v.retain(|s| seen.insert(s.clone()));
    v.truncate(MAX_NAMED);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_encoded_device_numbers_decode_as_makedev() {
        // new_encode_dev(MKDEV(7, 4)) and of a minor past 255 (partitions of blkext, 259:300).
        assert_eq!(decode_huge_dev(0x704), libc::makedev(7, 4));
        let enc = (300u64 & 0xff) | (259 << 8) | ((300u64 & !0xff) << 12);
        assert_eq!(decode_huge_dev(enc), libc::makedev(259, 300));
        assert_eq!(parse_devno("259:300\n"), Some(libc::makedev(259, 300)));
        assert_eq!(parse_devno("7"), None);
    }
}
