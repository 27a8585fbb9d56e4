//! A block device's request-queue limits, as its sysfs directory gives them: the largest
//! request (`queue/max_sectors_kb`), the most segments in one (`queue/max_segments`) and the
//! hardware queue's tags (`mq/0/nr_tags`). The executor's block layer splits and stops
//! merging at the first two and keeps at most the third at the device, as the kernel's block
//! layer in front of that device does. The logical block size (`queue/logical_block_size`)
//! explains a direct I/O the device refused for its alignment.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// What the kernel's queue in front of a block device allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLimits {
    /// The largest request, sectors.
    pub max_sectors: Option<u32>,
    /// Most segments in one request.
    pub max_segments: Option<u32>,
    /// Requests the hardware queue holds at once.
    pub depth: Option<u32>,
    /// The smallest unit it addresses, bytes: a direct I/O whose offset or length is not a
    /// multiple of it fails with EINVAL (`blkdev_dio_invalid`).
    pub logical_block: Option<u32>,
}

/// The limits of the block device `file` is open on; none for a regular file (the
/// filesystem below it splits and queues as it likes).
pub fn of(file: &fs::File) -> QueueLimits {
    let Ok(meta) = file.metadata() else {
        return QueueLimits::default();
    };
    if !meta.file_type().is_block_device() {
        return QueueLimits::default();
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let dir = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    // A partition has no queue of its own: its disk's is one level up.
    let queue = if dir.join("queue").exists() {
        dir.clone()
    } else {
        dir.join("..")
    };
    let read = |rel: &str| -> Option<u32> {
        fs::read_to_string(queue.join(rel))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    QueueLimits {
        max_sectors: read("queue/max_sectors_kb").map(|kb| kb.saturating_mul(2)),
        max_segments: read("queue/max_segments"),
        depth: read("mq/0/nr_tags"),
        logical_block: read("queue/logical_block_size"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_has_no_queue_limits() {
        let f = tempfile::tempfile().unwrap();
        assert_eq!(of(&f), QueueLimits::default());
    }
}
