//! Refusals: the executor writes only where it was asked to and never over data it did not
//! create, unless told so (`--allow-overwrite`).
//!
//! A block device is refused for writing when it, or one of its partitions, is mounted, used
//! as swap or held by another device (LVM, dm, md), or when its first 68 KiB carry a partition
//! table or filesystem signature ([`detect_signature`]). A regular file is refused for writing
//! when it exists and is not empty. Reading is always allowed.

use std::fmt;
use std::path::{Path, PathBuf};

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
