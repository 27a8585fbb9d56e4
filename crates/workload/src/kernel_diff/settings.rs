//! Our policy for a recording's scheduler, its settings and the queue's limits, from what the
//! recording's meta.json says the kernel had (its sysfs, `uname -r`, `CONFIG_HZ`).

use elevator_core::block::NoMerges;
use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::tunable::{check_range, Settings};

use crate::traces::ftrace::RecordingMeta;

/// Our policy for the kernel scheduler `name` (`none` is `noop`).
pub fn policy_for(name: &str) -> Option<SchedulerSpec> {
    registry::find(if name == "none" { "noop" } else { name })
}

/// The settings for `info` from the recording's sysfs: each tunable of ours found in
/// `iosched` (else `queue`), in range; the refused ones (name, value, why) beside.
/// `slice_idle` is left out when `slice_idle_us` is recorded (the same knob, finer).
pub fn policy_settings(
    info: &SchedulerSpec,
    meta: &RecordingMeta,
) -> (Settings, Vec<(String, String, String)>) {
    let mut s = Settings::new();
    let mut skipped = Vec::new();
    for t in info.tunables {
        if t.name == "slice_idle" && meta.iosched.contains_key("slice_idle_us") {
            continue;
        }
        let Some(raw) = meta.iosched.get(t.name).or_else(|| meta.queue.get(t.name)) else {
            continue;
        };
        match raw.trim().parse::<i64>() {
            Ok(v) => match check_range(t, v) {
                Ok(()) => {
                    s.set(t.name, v);
                }
                Err(e) => skipped.push((t.name.to_string(), raw.clone(), e.to_string())),
            },
            Err(_) => skipped.push((t.name.to_string(), raw.clone(), "not an integer".into())),
        }
    }
    if let Some(depth) = allocated_tags(info, meta) {
        s.set("tag_map_depth", i64::from(depth));
    }
    if tags_counted_over_the_whole_map(meta) {
        for name in WHOLE_MAP_TAG_RULES {
            if info.tunables.iter().any(|t| t.name == name) && s.raw(name).is_none() {
                s.set(name, 1);
            }
        }
    }
    if info.tunables.iter().any(|t| t.name == ROTATIONAL_AT_INIT) && meta.device.backing == "tmpfs"
    {
        s.set(ROTATIONAL_AT_INIT, 0);
    }
    if info.tunables.iter().any(|t| t.name == "hz") {
        if let Some(hz) = kernel_hz(meta) {
            s.set("hz", i64::from(hz));
        }
    }
    (s, skipped)
}

/// Our bfq's tunable for the queue's rotational flag when the scheduler started. A loop
/// device over tmpfs is non-rotational when attached (`loop_update_rotational`: tmpfs has no
/// block device), and the recorder sets the scheduler before any `--set rotational=1`, so
/// bfq started there on a non-rotational queue (`bfq_init_queue`). Over a file on a disk the
/// loop device takes the disk's flag, not recorded: the recorded flag is kept.
const ROTATIONAL_AT_INIT: &str = "rotational_at_init";

/// The tunables of ours that follow blk-mq's scheduler tags from Linux 6.17 on, set for a
/// recording of such a kernel unless its `iosched` names them: `whole_map_depths`
/// (`bfq_limit_depth`'s depths are counts over all `nr_requests` tags, `async_depths` in
/// `bfq_depth_updated`, lib/sbitmap's shallow depth a count over the whole map) and
/// `tag_sleepers` (a task finding no tag sleeps on one of the 8 wait queues and each freed
/// tag wakes one, `blk_mq_get_tag`, `sbitmap_queue_wake_up` with bfq's wake batch of 1).
/// Our bfq's defaults stay 6.9's per-word depths, for the simulator: against Linux 6.18
/// asked with two weighted groups under a deep backlog neither rule matches in every shape,
/// and bfq's group-weight test gives `/b` 0.75 per word, 0.69 with both rules (docs/bfq.md,
/// "6.18's depths under a deep backlog").
const WHOLE_MAP_TAG_RULES: [&str; 2] = ["whole_map_depths", "tag_sleepers"];

/// Whether the recording's kernel (`uname -r`, `MAJOR.MINOR...`) is Linux 6.17 or later,
/// whose scheduler tags follow [`WHOLE_MAP_TAG_RULES`]; an unreadable release is taken as
/// not.
fn tags_counted_over_the_whole_map(meta: &RecordingMeta) -> bool {
    let mut parts = meta.kernel.release.split(['.', '-']);
    let mut number = || parts.next().and_then(|p| p.parse::<u32>().ok());
    match (number(), number()) {
        (Some(major), Some(minor)) => (major, minor) >= (6, 17),
        _ => false,
    }
}

/// The scheduler tags the kernel allocated when the recording's scheduler started, for a
/// policy with the tunable `tag_map_depth`: `2 x min(queue depth, 128)`
/// (`blk_mq_default_nr_requests`, a device of one hardware queue), whose bitmap words a
/// lower `nr_requests` written after keeps (`sbitmap_queue_resize`; the recorder sets the
/// scheduler, then `nr_requests`). Inferred from the recorded queue depth, not read.
fn allocated_tags(info: &SchedulerSpec, meta: &RecordingMeta) -> Option<u32> {
    if !info.tunables.iter().any(|t| t.name == "tag_map_depth") {
        return None;
    }
    let depth = meta.device.hw_queue_depth?;
    Some(2 * depth.clamp(1, 128))
}

/// The recording kernel's `CONFIG_HZ`: the recorder's reading of `/proc/config.gz`, else
/// the one HZ whose `HZ / 8` jiffies `bfq`'s `timeout_sync` shows in ms (`bfq_timeout` is
/// `HZ / 8` jiffies and sysfs prints `jiffies_to_msecs` of it: 125 at HZ = 1000, 124 at
/// 250, 123 at 300, 120 at 100), else unknown. The second only holds while `timeout_sync`
/// is at its default; a recording with another value and no HZ keeps our default.
pub fn kernel_hz(meta: &RecordingMeta) -> Option<u32> {
    if let Some(hz) = meta.kernel.hz {
        return Some(hz);
    }
    let ms: u32 = meta.iosched.get("timeout_sync")?.trim().parse().ok()?;
    [(1000, 125), (300, 123), (250, 124), (100, 120)]
        .into_iter()
        .find(|&(_, shown)| shown == ms)
        .map(|(hz, _)| hz)
}

/// Whether a device number's major is one of the SCSI disk majors (`SCSI_DISK0_MAJOR` 8,
/// 65-71, 128-135: include/uapi/linux/major.h), whose driver gives out a dispatch budget
/// (`scsi_mq_get_budget`) before blk-mq asks the scheduler.
pub(super) fn scsi_major(major: u32) -> bool {
    matches!(major, 8 | 65..=71 | 128..=135)
}

/// The recording's queue limit `name` (sysfs `queue/NAME`), if recorded, refused unless a
/// whole number of at least `min`, naming meta.json and the field.
pub(super) fn queue_limit(
    meta: &RecordingMeta,
    name: &str,
    min: u32,
) -> Result<Option<u32>, String> {
    let Some(v) = meta.queue.get(name) else {
        return Ok(None);
    };
    let short: String = v.chars().take(40).collect();
    match v.trim().parse::<u32>() {
        Ok(n) if n >= min => Ok(Some(n)),
        Ok(n) => Err(format!(
            "meta.json: field `queue.{name}`: {n} is below what the kernel accepts ({min})"
        )),
        Err(_) => Err(format!(
            "meta.json: field `queue.{name}`: {short:?} is not a whole number of at most {}",
            u32::MAX
        )),
    }
}

/// The block layer's merging for the queue's `nomerges` as sysfs shows it
/// (`queue_nomerges_show`: 0, 1 or 2; the module docs say why 1 is replayed as 0).
pub(super) fn nomerges(n: u32) -> Result<NoMerges, String> {
    match n {
        0 | 1 => Ok(NoMerges::All),
        2 => Ok(NoMerges::None),
        _ => Err(format!(
            "meta.json: field `queue.nomerges`: {n} is not a value sysfs shows (0, 1 or 2)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_diff::tests::meta;
    use crate::kernel_diff::Pace;

    #[test]
    fn out_of_range_tunables_are_skipped_and_named() {
        let mut m = meta("mq-deadline");
        m.iosched.insert("fifo_batch".into(), "-3".into());
        let (s, skipped) = policy_settings(&policy_for("mq-deadline").unwrap(), &m);
        assert_eq!(s.raw("fifo_batch"), None);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].0, "fifo_batch");
        assert!(policy_for("cfq-like-nothing").is_none());
        assert!("kernel".parse::<Pace>() == Ok(Pace::Kernel));
        assert!("early".parse::<Pace>() == Ok(Pace::Early));
        assert!("device".parse::<Pace>() == Ok(Pace::Device));
        assert!("x".parse::<Pace>().is_err());
    }

    /// From Linux 6.17 blk-mq's scheduler tags are counted over the whole map
    /// (`bfq_depth_updated` fills `async_depths` from `nr_requests`; lib/sbitmap's shallow
    /// depth is a count over all words) and a freed tag wakes one sleeper
    /// (`sbitmap_queue_wake_up`): a recording of such a kernel replays bfq with
    /// `whole_map_depths` and `tag_sleepers`, unless its `iosched` names them; an older or
    /// unreadable release, and a policy without the tunables, get none.
    #[test]
    fn a_recording_of_linux_6_17_on_replays_bfq_with_whole_map_tags() {
        let bfq = policy_for("bfq").unwrap();
        let with = |release: &str| {
            let mut m = meta("bfq");
            m.kernel.release = release.into();
            policy_settings(&bfq, &m).0
        };
        for release in ["6.18.44-fc-v857", "6.17.0", "7.0.1"] {
            let s = with(release);
            assert_eq!(s.raw("whole_map_depths"), Some(1), "{release}");
            assert_eq!(s.raw("tag_sleepers"), Some(1), "{release}");
        }
        for release in ["6.16.9", "6.9.12-arch1", "", "linux"] {
            let s = with(release);
            assert_eq!(s.raw("whole_map_depths"), None, "{release:?}");
            assert_eq!(s.raw("tag_sleepers"), None, "{release:?}");
        }
        let mut m = meta("bfq");
        m.kernel.release = "6.18.44".into();
        m.iosched.insert("whole_map_depths".into(), "0".into());
        let (s, _) = policy_settings(&bfq, &m);
        assert_eq!(s.raw("whole_map_depths"), Some(0));
        assert_eq!(s.raw("tag_sleepers"), Some(1));
        m.scheduler = "mq-deadline".into();
        let (s, _) = policy_settings(&policy_for("mq-deadline").unwrap(), &m);
        assert_eq!(s.raw("whole_map_depths"), None);
    }
}
