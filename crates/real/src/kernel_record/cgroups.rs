//! Jobs that run in cgroups: fio's `cgroup` option, recorded into the recording's
//! `groups.txt` ([`elevator_workload::traces::ftrace::groups`]) for the replay.
//!
//! fio moves a job's process into the group named by its `cgroup` option (a path below the
//! first mounted cgroup hierarchy with the `blkio` controller, or the cgroup v2 hierarchy;
//! `cgroup_setup`) at the job's start, before its first I/O: the only way a job runs its
//! whole I/O in a group, since fio forks a job's process when its start delay ends. The
//! recorder does not make groups: each must exist, with the bfq weight the user gave it
//! (`blkio.bfq.weight` on v1, `io.bfq.weight` on v2), and the job must set `cgroup_nodelete=1`
//! so that fio leaves it in place. fio's `cgroup_weight` stays refused: it writes
//! `blkio.weight` (v1) or `io.weight` (v2), not bfq's weight.
//!
//! Each group's cgroup id (its directory's inode number, which the kernel's `cgroup_id`
//! gives and the `blk` tracer prints in bfq's notes with `blk_cgroup`) goes into the file
//! too: the replay reads from bfq's log which group a process the file does not name was
//! served in (blk-throttle's kworker resubmitting a group's throttled bios).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use elevator_workload::traces::ftrace::recording::FioJobPid;
use elevator_workload::traces::ftrace::GROUPS_FILE;

/// The cgroup hierarchy fio uses and the name of bfq's weight file in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// Where it is mounted.
    pub mount: PathBuf,
    /// `blkio.bfq.weight` (v1) or `io.bfq.weight` (v2).
    pub weight_file: &'static str,
}

/// The hierarchy fio would pick from `/proc/mounts`'s text: the first `cgroup` mount with the
/// `blkio` option, or `cgroup2` mount (`find_cgroup_mnt`).
pub fn hierarchy(mounts: &str) -> Option<Hierarchy> {
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, mount, kind, opts, ..] = f[..] else {
            continue;
        };
        let weight_file = match kind {
            "cgroup" if opts.split(',').any(|o| o == "blkio") => "blkio.bfq.weight",
            "cgroup2" => "io.bfq.weight",
            _ => continue,
        };
        return Some(Hierarchy {
            mount: PathBuf::from(mount),
            weight_file,
        });
    }
    None
}

/// Each job's `cgroup` and whether it sets `cgroup_nodelete=1`, by job name, with `[global]`
/// sections' settings inherited as fio does; jobs without a group left out.
pub fn job_groups(text: &str) -> BTreeMap<String, (String, bool)> {
    let mut out = BTreeMap::new();
    let mut global: (Option<String>, bool) = (None, false);
    let mut job: Option<(String, (Option<String>, bool))> = None;
    let finish = |out: &mut BTreeMap<_, _>, job: Option<(String, (Option<String>, bool))>| {
        if let Some((name, (Some(g), keep))) = job {
            out.insert(name, (g, keep));
        }
    };
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(name) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            finish(&mut out, job.take());
            let name = name.trim();
            if !name.starts_with("global") {
                job = Some((name.to_string(), global.clone()));
            }
            continue;
        }
        let (key, value) = l.split_once('=').unwrap_or((l, ""));
        let slot = match &mut job {
            Some((_, s)) => s,
            None => &mut global,
        };
        match key.trim().to_ascii_lowercase().as_str() {
            "cgroup" => slot.0 = Some(value.trim().to_string()),
            "cgroup_nodelete" => slot.1 = value.trim() != "0",
            _ => {}
        }
    }
    finish(&mut out, job.take());
    out
}

/// A group's bfq weight from its weight file's text: `N` (v1) or `default N` (v2).
fn parse_weight(text: &str) -> Option<u32> {
    let first = text.lines().next()?.trim();
    first
        .strip_prefix("default ")
        .unwrap_or(first)
        .trim()
        .parse()
        .ok()
}

/// The jobs' groups, by the path fio gives them (`/NAME` below the hierarchy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Groups {
    /// Each group's bfq weight.
    pub weights: BTreeMap<String, u32>,
    /// Each group's cgroup id: its directory's inode number (kernfs gives a cgroup's
    /// directory its id as inode number, `cgroup_id`).
    pub cgroup_ids: BTreeMap<String, u64>,
}

/// The groups of `text`'s jobs with their bfq weights and cgroup ids, or why the job is
/// refused: a group that is not a plain relative path, does not exist, has no bfq weight
/// file (bfq not loaded for this hierarchy), or a job without `cgroup_nodelete=1`.
pub fn check(text: &str, mounts: &str) -> Result<Groups, String> {
    let jobs = job_groups(text);
    let mut groups = Groups::default();
    if jobs.is_empty() {
        return Ok(groups);
    }
    let h = hierarchy(mounts)
        .ok_or("`cgroup`: no cgroup hierarchy with the blkio controller is mounted")?;
    for (job, (group, keep)) in &jobs {
        let plain = !group.is_empty()
            && !group.starts_with('/')
            && group
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        if !plain {
            return Err(format!(
                "job {job:?}: cgroup={group:?} is not a path below the cgroup hierarchy"
            ));
        }
        if !keep {
            return Err(format!(
                "job {job:?}: cgroup={group} needs cgroup_nodelete=1 (fio would remove the group)"
            ));
        }
        let dir = h.mount.join(group);
        let file = dir.join(h.weight_file);
        let text = fs::read_to_string(&file).map_err(|e| {
            format!(
                "job {job:?}: cgroup={group}: {}: {e} (make the group, with its bfq weight, \
                 before recording)",
                file.display()
            )
        })?;
        let w = parse_weight(&text)
            .ok_or_else(|| format!("{}: {text:?} is not a weight", file.display()))?;
        groups.weights.insert(format!("/{group}"), w);
        if let Ok(m) = fs::metadata(&dir) {
            groups.cgroup_ids.insert(format!("/{group}"), m.ino());
        }
    }
    Ok(groups)
}

/// The text of `groups.txt`: each group of `jobs_text` with its weight and cgroup id
/// (`groups`, from [`check`]), and each fio job process in its job's group.
pub fn groups_file(jobs_text: &str, groups: &Groups, pids: &[FioJobPid]) -> String {
    let by_job = job_groups(jobs_text);
    let mut s = String::from(
        "# elevator kernel-record: each job's cgroup (fio's `cgroup`) with its bfq weight\n",
    );
    for (path, w) in &groups.weights {
        s.push_str(&format!("group {path} {w}\n"));
    }
    for (path, id) in &groups.cgroup_ids {
        s.push_str(&format!("cgroup {id:x} {path}\n"));
    }
    for j in pids {
        if let Some((g, _)) = by_job.get(&j.name) {
            s.push_str(&format!("pid {} /{g}\n", j.pid));
        }
    }
    s
}

/// Write `groups.txt` into `out` when any job runs in a group.
pub fn write(
    out: &Path,
    jobs_text: &str,
    groups: &Groups,
    pids: &[FioJobPid],
) -> std::io::Result<()> {
    if groups.weights.is_empty() {
        return Ok(());
    }
    fs::write(out.join(GROUPS_FILE), groups_file(jobs_text, groups, pids))
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_workload::traces::ftrace::ContextGroups;

    const MOUNTS: &str = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
        cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
        cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\n\
        cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";

    #[test]
    fn fio_picks_the_first_blkio_or_v2_hierarchy() {
        let h = hierarchy(MOUNTS).unwrap();
        assert_eq!(h.mount, Path::new("/sys/fs/cgroup/blkio"));
        assert_eq!(h.weight_file, "blkio.bfq.weight");
        let v2 = hierarchy("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n").unwrap();
        assert_eq!(v2.weight_file, "io.bfq.weight");
        assert_eq!(hierarchy("tmpfs /tmp tmpfs rw 0 0\n"), None);
        assert_eq!(parse_weight("default 300\n8:0 50\n"), Some(300));
        assert_eq!(parse_weight("900\n"), Some(900));
    }

    #[test]
    fn each_job_process_goes_to_its_jobs_group_in_the_groups_file() {
        let text = "[global]\ncgroup_nodelete=1\n[a]\ncgroup=g/a\n[b]\nrw=read\n[c]\ncgroup=c\n";
        let jobs = job_groups(text);
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs["a"], ("g/a".to_string(), true));
        let groups = Groups {
            weights: BTreeMap::from([("/g/a".to_string(), 300), ("/c".to_string(), 50)]),
            cgroup_ids: BTreeMap::from([("/g/a".to_string(), 0x26d), ("/c".to_string(), 0x2a0)]),
        };
        let pid = |name: &str, pid| FioJobPid {
            name: name.into(),
            groupid: 0,
            pid,
        };
        let pids = [pid("a", 10), pid("b", 11), pid("c", 12), pid("c", 13)];
        let file = groups_file(text, &groups, &pids);
        let g = ContextGroups::parse(Path::new(GROUPS_FILE), &file).unwrap();
        let a = g.tree.lookup("/g/a").unwrap();
        assert_eq!(g.of(10), a);
        assert_eq!(g.tree.get(a).io.bfq_weight, Some(300));
        assert_eq!(g.of(11), elevator_core::GroupId::ROOT);
        assert_eq!(g.of(12), g.of(13));
        assert_eq!(g.tree.get(g.of(13)).io.bfq_weight, Some(50));
        // The ids the blk tracer prints in bfq's notes name the groups.
        assert_eq!(g.of_cgroup_id(0x26d), Some(a));
        assert_eq!(g.of_cgroup_id(0x2a0), Some(g.of(12)));
    }

    #[test]
    fn a_group_fio_would_remove_or_that_leaves_the_hierarchy_is_refused() {
        let e = check("[a]\ncgroup=g\n", MOUNTS).unwrap_err();
        assert!(e.contains("cgroup_nodelete=1"), "{e}");
        let e = check("[a]\ncgroup=../x\ncgroup_nodelete=1\n", MOUNTS).unwrap_err();
        assert!(e.contains("not a path below"), "{e}");
        let e = check(
            "[a]\ncgroup=g\ncgroup_nodelete=1\n",
            "tmpfs /t tmpfs rw 0 0\n",
        )
        .unwrap_err();
        assert!(e.contains("no cgroup hierarchy"), "{e}");
        let e = check(
            "[a]\ncgroup=elevator-no-such-group\ncgroup_nodelete=1\n",
            MOUNTS,
        )
        .unwrap_err();
        assert!(e.contains("make the group"), "{e}");
        assert!(check("[a]\nrw=read\n", "").unwrap().weights.is_empty());
    }
}
