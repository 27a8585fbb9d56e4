//! Refusals: the executor writes only where it was asked to and never over data it did not
//! create, unless told so (`--allow-overwrite`).
//!
//! A block device is refused for writing, always (no flag lifts it), when it or one of its
//! partitions is mounted, used as swap or held by another device (LVM, dm, md), and when the
//! kernel refuses to open it exclusively (O_EXCL, as mkfs opens: a mount in another mount
//! namespace, which /proc/self/mounts does not show, holds it too); the exclusive open is
//! kept while the target is open, so nothing claims the device during a run. Without
//! `--allow-overwrite` it is also refused when anything recognises a signature on it (blkid's
//! low-level probe, [`blkid_probe`], or where the `blkid` binary is absent our own shorter list,
//! [`detect_signature`]), and when the byte ranges the jobs write do not read as all zeroes
//! ([`first_nonzero`]): data nobody recognises is still data. A regular file is refused for
//! writing when it exists, is not empty and is not one elevator laid out and last wrote
//! ([`crate::target`] keeps that marker). Reading is always allowed.
//!
//! We run the `blkid` binary (util-linux) rather than bind libblkid: the binding crates need
//! libblkid's headers and bindgen at build time, and `blkid -p` is the same probe.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ByteRange;

/// Why a target was refused.
#[derive(Debug)]
pub struct Refusal {
    /// The target.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refusing to write to {}: {}",
            self.path.display(),
            self.reason
        )
    }
}

impl std::error::Error for Refusal {}

/// Bytes of a device's start that [`detect_signature`] looks at.
pub const SIGNATURE_BYTES: usize = 68 * 1024;

fn at(head: &[u8], offset: usize, magic: &[u8]) -> bool {
    head.get(offset..offset + magic.len()) == Some(magic)
}

/// The partition table or filesystem whose signature starts `head` (the first
/// [`SIGNATURE_BYTES`] of a device, or fewer), if any.
pub fn detect_signature(head: &[u8]) -> Option<&'static str> {
    const CHECKS: &[(usize, &[u8], &str)] = &[
        (512, b"EFI PART", "a GPT partition table"),
        (4096, b"EFI PART", "a GPT partition table (4 KiB sectors)"),
        (1080, &[0x53, 0xef], "an ext2/ext3/ext4 filesystem"),
        (0, b"XFSB", "an XFS filesystem"),
        (0x10040, b"_BHRfS_M", "a btrfs filesystem"),
        (4086, b"SWAPSPACE2", "a swap area"),
        (4086, b"SWAP-SPACE", "a swap area"),
        (512, b"LABELONE", "an LVM2 physical volume"),
        (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
        (3, b"NTFS    ", "an NTFS filesystem"),
        (82, b"FAT32   ", "a FAT32 filesystem"),
        (54, b"FAT1", "a FAT12/FAT16 filesystem"),
        (0x8001, b"CD001", "an ISO 9660 filesystem"),
        (0x400, b"\x10\x20\xf5\xf2", "an F2FS filesystem"),
        (0, b"hsqs", "a squashfs filesystem"),
        (
            4096,
            &[0xfc, 0x4e, 0x2b, 0xa9],
            "an md RAID member (superblock 1.2)",
        ),
        (
            0,
            &[0xfc, 0x4e, 0x2b, 0xa9],
            "an md RAID member (superblock 1.1)",
        ),
        (0x1018, &[0xc6, 0x85, 0x73, 0xf6], "a bcache device"),
    ];
    for &(offset, magic, what) in CHECKS {
        if at(head, offset, magic) {
            return Some(what);
        }
    }
    if at(head, 510, &[0x55, 0xaa]) {
        return Some("an MBR partition table or boot sector");
    }
    None
}

/// What blkid's low-level probe says about a device.
#[derive(Debug, PartialEq, Eq)]
pub enum Probe {
    /// A signature, described (`TYPE`, `PTTYPE`, `USAGE`, `LABEL`).
    Found(String),
    /// blkid looked and recognised nothing.
    Nothing,
    /// blkid could not be run (absent, or failed); why.
    Unavailable(String),
}

/// Run `blkid -p -o export PATH` (the low-level superblock and partition-table probe, which
/// reads the device and not blkid's cache) and describe what it recognises.
pub fn blkid_probe(path: &Path) -> Probe {
    let out = match Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(e) => return Probe::Unavailable(format!("blkid: {e}")),
    };
    match out.status.code() {
        Some(0) => Probe::Found(describe_blkid_export(&String::from_utf8_lossy(&out.stdout))),
        // blkid's exit status 2: nothing identified.
        Some(2) => Probe::Nothing,
        // 8: an ambivalent result (several signatures that exclude one another).
        Some(8) => Probe::Found("several conflicting signatures (blkid: ambivalent probe)".into()),
        _ => Probe::Unavailable(format!(
            "blkid failed: {}",
            excerpt(String::from_utf8_lossy(&out.stderr).trim(), 200)
        )),
    }
}

/// A one-line description of `blkid -o export` output.
pub fn describe_blkid_export(export: &str) -> String {
    let get = |key: &str| {
        export.lines().find_map(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix('='))
                .map(|v| excerpt(v, 64))
        })
    };
    let mut what = match (get("TYPE"), get("PTTYPE")) {
        (Some(t), Some(pt)) => format!("{t} (and a {pt} partition table)"),
        (Some(t), None) => t,
        (None, Some(pt)) => format!("a {pt} partition table"),
        (None, None) => "a signature".into(),
    };
    let extra: Vec<String> = [("USAGE", "usage"), ("LABEL", "label")]
        .iter()
        .filter_map(|(k, name)| get(k).map(|v| format!("{name} {v}")))
        .collect();
    if !extra.is_empty() {
        what = format!("{what} ({})", extra.join(", "));
    }
    what
}

/// At most `max` characters of `s`, with an ellipsis when cut.
fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// `ranges` sorted and merged, so overlapping job regions (fio clones) are read once.
pub fn merge_ranges(ranges: &[ByteRange]) -> Vec<ByteRange> {
    let mut v: Vec<ByteRange> = ranges.iter().copied().filter(|r| r.end > r.start).collect();
    v.sort_by_key(|r| r.start);
    let mut out: Vec<ByteRange> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The first byte offset inside `ranges` of `file` that is not zero, reading 1 MiB at a time
/// (bounded memory whatever the region), stopping at the first non-zero byte. Ranges past the
/// end of the file read as nothing.
pub fn first_nonzero(file: &File, ranges: &[ByteRange]) -> io::Result<Option<u64>> {
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    for r in merge_ranges(ranges) {
        let mut off = r.start;
        while off < r.end {
            let want = CHUNK.min(usize::try_from(r.end - off).unwrap_or(CHUNK));
            let n = match file.read_at(&mut buf[..want], off) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if let Some(i) = buf[..n].iter().position(|&b| b != 0) {
                return Ok(Some(off + i as u64));
            }
            off += n as u64;
        }
    }
    Ok(None)
}

/// The mounts in `mounts` (the text of /proc/self/mounts) whose source `is_ours` says is the
/// device or one of its partitions, as "source on mountpoint".
pub fn mounted_on(mounts: &str, is_ours: impl Fn(&Path) -> bool) -> Vec<String> {
    mounts
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (src, dir) = (it.next()?, it.next()?);
            (src.starts_with('/') && is_ours(Path::new(src))).then(|| format!("{src} on {dir}"))
        })
        .collect()
}

/// The swap areas in `swaps` (the text of /proc/swaps) that `is_ours` claims.
pub fn swaps_on(swaps: &str, is_ours: impl Fn(&Path) -> bool) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|src| src.starts_with('/') && is_ours(Path::new(src)))
        .map(|src| format!("{src} is in use as swap"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(offset: usize, magic: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; SIGNATURE_BYTES];
        v[offset..offset + magic.len()].copy_from_slice(magic);
        v
    }

    #[test]
    fn filesystem_and_partition_signatures_are_recognised() {
        assert_eq!(detect_signature(&vec![0u8; SIGNATURE_BYTES]), None);
        assert!(detect_signature(&with(1080, &[0x53, 0xef]))
            .unwrap()
            .contains("ext"));
        assert!(detect_signature(&with(0, b"XFSB")).unwrap().contains("XFS"));
        assert!(detect_signature(&with(0x10040, b"_BHRfS_M"))
            .unwrap()
            .contains("btrfs"));
        assert!(detect_signature(&with(4086, b"SWAPSPACE2"))
            .unwrap()
            .contains("swap"));
        assert!(detect_signature(&with(510, &[0x55, 0xaa]))
            .unwrap()
            .contains("MBR"));
        assert!(detect_signature(&with(512, b"EFI PART"))
            .unwrap()
            .contains("GPT"));
        // A short head (a small device) is not an error.
        assert_eq!(detect_signature(&[0u8; 100]), None);
    }

    #[test]
    fn squashfs_and_md_members_are_in_the_built_in_list() {
        assert!(detect_signature(&with(0, b"hsqs"))
            .unwrap()
            .contains("squashfs"));
        assert!(detect_signature(&with(4096, &[0xfc, 0x4e, 0x2b, 0xa9]))
            .unwrap()
            .contains("md RAID member (superblock 1.2)"));
    }

    #[test]
    fn blkid_export_is_described_with_type_usage_and_label() {
        let md = "DEVNAME=/dev/loop0\nUUID=x\nLABEL=host:t0\nVERSION=1.2\nTYPE=linux_raid_member\nUSAGE=raid\n";
        assert_eq!(
            describe_blkid_export(md),
            "linux_raid_member (usage raid, label host:t0)"
        );
        assert_eq!(
            describe_blkid_export("PTUUID=1\nPTTYPE=gpt\n"),
            "a gpt partition table"
        );
        let long = format!("TYPE={}\n", "x".repeat(10_000));
        assert!(describe_blkid_export(&long).len() < 100);
    }

    #[test]
    fn overlapping_regions_are_merged_before_reading() {
        let r = |start, end| ByteRange { start, end };
        assert_eq!(
            merge_ranges(&[r(10, 20), r(0, 5), r(15, 30), r(30, 31), r(40, 40)]),
            vec![r(0, 5), r(10, 31)]
        );
    }

    #[test]
    fn the_first_non_zero_byte_of_the_written_regions_is_found() {
        let mut f = tempfile::tempfile().unwrap();
        use std::io::Write;
        let mut data = vec![0u8; 3 << 20];
        data[(2 << 20) + 17] = b',';
        f.write_all(&data).unwrap();
        let r = |start, end| ByteRange { start, end };
        assert_eq!(first_nonzero(&f, &[r(0, 2 << 20)]).unwrap(), None);
        assert_eq!(
            first_nonzero(&f, &[r(0, 1 << 20), r(1 << 20, 3 << 20)]).unwrap(),
            Some((2 << 20) + 17)
        );
        // Past the end reads as nothing, not as an error.
        assert_eq!(first_nonzero(&f, &[r(4 << 20, 5 << 20)]).unwrap(), None);
    }

    #[test]
    fn mounts_and_swaps_of_the_device_or_its_partitions_are_found() {
        let mounts =
            "/dev/vda / ext4 rw 0 0\nproc /proc proc rw 0 0\n/dev/loop3p1 /mnt xfs rw 0 0\n";
        let ours = |p: &Path| p.to_str().unwrap().starts_with("/dev/loop3");
        assert_eq!(mounted_on(mounts, ours), vec!["/dev/loop3p1 on /mnt"]);
        assert!(mounted_on(mounts, |p: &Path| p == Path::new("/dev/loop4")).is_empty());
        let swaps = "Filename Type Size Used Priority\n/dev/loop3 partition 1024 0 -2\n";
        assert_eq!(swaps_on(swaps, ours).len(), 1);
    }
}
