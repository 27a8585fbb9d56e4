//! The cgroup of each recorded process and each group's bfq weight, as bfq reads them.
//!
//! Linux 6.18's bfq serves a queue inside the bfq group of the blkcg its process's bios
//! belong to (`bfq_bic_update_cgroup` -> `__bfq_bic_change_cgroup` at each request's setup,
//! from `bio->bi_blkg`, which `bio_associate_blkg` takes from the submitting task's css).
//! Each group is an entity of its parent's scheduling data (`bfq_group_set_parent`) with the
//! weight of its cgroup's `blkio.bfq.weight` (cgroup v1, `bfq_io_set_weight_legacy`) or
//! `io.bfq.weight` (v2): 1 to 1000 (`BFQ_MIN_WEIGHT`, `BFQ_MAX_WEIGHT`), 100 by default, the
//! root taking none (`CFTYPE_NOT_ON_ROOT`). The root group's own queues compete with its
//! child groups as entities of one service tree.
//!
//! The block tracepoints do not carry the cgroup, so a recording whose processes ran in
//! groups says so in a file of its own, [`GROUPS_FILE`] (written by `kernel-record` for jobs
//! that set fio's `cgroup`, or by hand), one declaration a line:
//!
//! ```text
//! # comment
//! group /elevator-record-g0 100     # a group's path and its bfq weight
//! pid 6080 /elevator-record-g0      # a process and the group it ran in
//! cgroup 26d /elevator-record-g0    # the group's cgroup id, hexadecimal, as the blk tracer prints it
//! ```
//!
//! A `cgroup` line gives a declared group's cgroup id (its directory's kernfs inode number,
//! `cgroup_id`), which the `blk` tracer prints in each of bfq's notes with its `blk_cgroup`
//! option (`ino,gen`; `kernel-record` sets the option and writes these lines). With them the
//! replay finds the group of a process the file does not name from bfq's log: blk-throttle's
//! dispatch work (`blk_throtl_dispatch_work_fn`) resubmits a throttled bio from a kworker,
//! still charged to the bio's own blkcg (`bio->bi_blkg`), so bfq puts the kworker's queue in
//! that group (the replay's `QueueCgroups`, `kernel_diff::bfq_log`).
//!
//! A group's ancestors not declared take the default weight; a process not named, and not
//! placed by bfq's log, is in the root group. fio moves a job's process into its group
//! before its first I/O, so a named process stays in its group for the recording.

use std::collections::HashMap;
use std::path::Path;

use elevator_core::group::check_path;
use elevator_core::{GroupId, GroupTree};

use crate::input::InputError;
use crate::traces::kernel_limits::PID_MAX_LIMIT;

/// The file of a recording directory that holds its groups.
pub const GROUPS_FILE: &str = "groups.txt";

/// The bfq weights a group may have (`BFQ_MIN_WEIGHT`, `BFQ_MAX_WEIGHT`).
const WEIGHTS: std::ops::RangeInclusive<u32> = 1..=1000;

/// The most groups a recording's tree holds, their ancestors counted: a group a fio job
/// (`kernel-record` makes one per job), and far more than any recording has.
pub const MAX_GROUPS: usize = 1024;

/// The recording's groups and which process ran in which.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextGroups {
    /// The groups, with each declared one's bfq weight (`io.bfq_weight`).
    pub tree: GroupTree,
    /// Each named process's group, by pid.
    pub by_pid: HashMap<u32, GroupId>,
    /// The line naming each process, by pid (for errors about it).
    pub pid_lines: HashMap<u32, usize>,
    /// Each group's cgroup id (`cgroup` lines), the key of bfq's notes' `ino` field.
    pub by_cgroup_id: HashMap<u64, GroupId>,
}

impl ContextGroups {
    /// The group of process `pid`: the root unless the file named it.
    pub fn of(&self, pid: u32) -> GroupId {
        self.by_pid.get(&pid).copied().unwrap_or(GroupId::ROOT)
    }

    /// The group of cgroup id `id` in bfq's notes: a `cgroup` line's group; the root for 1
    /// (the root's id, and every note's without `blk_cgroup`); `None` for an id the file
    /// does not give.
    pub fn of_cgroup_id(&self, id: u64) -> Option<GroupId> {
        match self.by_cgroup_id.get(&id) {
            Some(&g) => Some(g),
            None => (id == 1).then_some(GroupId::ROOT),
        }
    }

    /// Read a groups file's `text` (see the module docs); `path` names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<ContextGroups, InputError> {
        let mut out = ContextGroups::default();
        let mut declared: HashMap<String, usize> = HashMap::new();
        let mut pids: Vec<(u32, String, usize)> = Vec::new();
        let mut cgroup_ids: Vec<(u64, String, usize)> = Vec::new();
        let mut ids_named: HashMap<u64, usize> = HashMap::new();
        // Each process's first line, to find one named twice in one look-up (a scan of the
        // earlier ones made a file of 10^5 processes quadratic).
        let mut named: HashMap<u32, usize> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let err = |field: &str, msg: String| InputError::at_line(path, n, field, msg);
            let l = line.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let words: Vec<&str> = l.split_whitespace().collect();
            match words[..] {
                ["group", group, weight] => {
                    let w = weight
                        .parse::<u32>()
                        .ok()
                        .filter(|w| WEIGHTS.contains(w))
                        .ok_or_else(|| {
                            err(
                                "weight",
                                format!(
                                    "{weight:?} is not a bfq weight from {} to {}",
                                    WEIGHTS.start(),
                                    WEIGHTS.end()
                                ),
                            )
                        })?;
                    check_path(group).map_err(|m| err("group", m))?;
                    if group.trim_end_matches('/').is_empty() {
                        return Err(err(
                            "group",
                            "the root group takes no weight (the kernel has no \
                             blkio.bfq.weight at the root)"
                                .into(),
                        ));
                    }
                    let id = out
                        .tree
                        .add(group, None)
                        .map_err(|e| err("group", e.reason.to_string()))?;
                    if out.tree.len() > MAX_GROUPS + 1 {
                        return Err(err(
                            "group",
                            format!(
                                "more than {MAX_GROUPS} groups (their ancestors counted): \
                                 no recording has so many"
                            ),
                        ));
                    }
                    let key = out.tree.get(id).path.clone();
                    if let Some(first) = declared.insert(key, n) {
                        return Err(err(
                            "group",
                            format!("{group:?} is declared again (first on line {first})"),
                        ));
                    }
                    out.tree.io_mut(id).bfq_weight = Some(w);
                }
                ["pid", pid, group] => {
                    let pid = pid
                        .parse::<u32>()
                        .ok()
                        .filter(|p| (1..=PID_MAX_LIMIT).contains(p))
                        .ok_or_else(|| {
                            err(
                                "pid",
                                format!(
                                    "{:?} is not a process id (1 to {PID_MAX_LIMIT})",
                                    crate::fio_file::excerpt(pid)
                                ),
                            )
                        })?;
                    check_path(group).map_err(|m| err("group", m))?;
                    if let Some(first) = named.insert(pid, n) {
                        return Err(err(
                            "pid",
                            format!("process {pid} is named again (first on line {first})"),
                        ));
                    }
                    pids.push((pid, group.to_string(), n));
                }
                ["cgroup", id, group] => {
                    let id = u64::from_str_radix(id, 16)
                        .ok()
                        .filter(|&id| id > 1)
                        .ok_or_else(|| {
                            err(
                                "cgroup",
                                format!(
                                    "{:?} is not a cgroup id: hexadecimal, above 1 (the root's)",
                                    crate::fio_file::excerpt(id)
                                ),
                            )
                        })?;
                    check_path(group).map_err(|m| err("group", m))?;
                    if let Some(first) = ids_named.insert(id, n) {
                        return Err(err(
                            "cgroup",
                            format!("cgroup id {id:x} is given again (first on line {first})"),
                        ));
                    }
                    cgroup_ids.push((id, group.to_string(), n));
                }
                [kind, ..] if kind != "group" && kind != "pid" && kind != "cgroup" => {
                    return Err(err(
                        "kind",
                        format!(
                            "{kind:?}: a line is `group PATH WEIGHT`, `pid PID PATH` or \
                             `cgroup ID PATH`"
                        ),
                    ));
                }
                _ => {
                    return Err(err(
                        words[0],
                        format!(
                            "{} fields: `group PATH WEIGHT`, `pid PID PATH` or `cgroup ID PATH`",
                            words.len()
                        ),
                    ));
                }
            }
        }
        // A process may be named before its group is declared; the root needs no declaration.
        for (pid, group, n) in pids {
            let id = out.tree.lookup(&group).ok_or_else(|| {
                InputError::at_line(
                    path,
                    n,
                    "group",
                    format!("process {pid} is in {group:?}, which no `group` line declares"),
                )
            })?;
            out.by_pid.insert(pid, id);
            out.pid_lines.insert(pid, n);
        }
        for (cgroup, group, n) in cgroup_ids {
            let id = out.tree.lookup(&group).ok_or_else(|| {
                InputError::at_line(
                    path,
                    n,
                    "group",
                    format!("cgroup id {cgroup:x} is {group:?}, which no `group` line declares"),
                )
            })?;
            out.by_cgroup_id.insert(cgroup, id);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::group::MAX_DEPTH;

    #[test]
    fn each_process_takes_its_declared_group_and_weight() {
        let text = "# groups\ngroup /a 300\npid 10 /a   # moved\npid 11 /\n\
                    pid 12 /b/c\ngroup /b/c 50\n";
        let g = ContextGroups::parse(Path::new("groups.txt"), text).unwrap();
        let a = g.tree.lookup("/a").unwrap();
        let c = g.tree.lookup("/b/c").unwrap();
        assert_eq!(g.of(10), a);
        assert_eq!(g.of(11), GroupId::ROOT);
        assert_eq!(g.of(12), c);
        // Unnamed: the root.
        assert_eq!(g.of(99), GroupId::ROOT);
        assert_eq!(g.tree.get(a).io.bfq_weight, Some(300));
        assert_eq!(g.tree.get(c).io.bfq_weight, Some(50));
        // /b was not declared: bfq's default weight.
        let b = g.tree.lookup("/b").unwrap();
        assert_eq!(g.tree.get(b).io.bfq_weight, None);
        assert_eq!(g.tree.get(c).parent, Some(b));
    }

    /// bfq's notes carry the logged queue's group's cgroup id with the `blk` tracer's
    /// `blk_cgroup` option (`blk_add_cgroup_trace_msg`); the file maps each id to its group,
    /// and 1, the id of the root and of every note without the option, to the root.
    #[test]
    fn a_cgroup_line_maps_the_tracers_cgroup_id_to_its_group() {
        let text = "group /rlim 100\ncgroup 26d /rlim\ncgroup 2A0 /wlim\ngroup /wlim 100\n";
        let g = ContextGroups::parse(Path::new("groups.txt"), text).unwrap();
        assert_eq!(g.of_cgroup_id(0x26d), g.tree.lookup("/rlim"));
        assert_eq!(g.of_cgroup_id(0x2a0), g.tree.lookup("/wlim"));
        assert_eq!(g.of_cgroup_id(1), Some(GroupId::ROOT));
        assert_eq!(g.of_cgroup_id(0x26e), None);
        // No process is named by a cgroup line.
        assert!(g.by_pid.is_empty());
    }

    #[test]
    fn a_bad_groups_line_names_the_file_line_and_field() {
        for (text, line, field) in [
            ("group /a 0\n", 1, "weight"),
            ("group /a 1001\n", 1, "weight"),
            ("\ngroup / 100\n", 2, "group"),
            ("group a 100\n", 1, "group"),
            ("group /a 10\ngroup /a/ 20\n", 2, "group"),
            ("pid x /a\n", 1, "pid"),
            ("group /a 10\npid 1 /a\npid 1 /\n", 3, "pid"),
            ("pid 1 /nowhere\n", 1, "group"),
            ("cgroups /a 10\n", 1, "kind"),
            ("cgroup /a 10\n", 1, "cgroup"),
            ("cgroup 1 /\n", 1, "cgroup"),
            ("group /a 10\ncgroup 26d /a\ncgroup 26D /\n", 3, "cgroup"),
            ("cgroup 26d /nowhere\n", 1, "group"),
            ("cgroup 26d a\n", 1, "group"),
            ("group /a\n", 1, "group"),
            ("pid 0 /\n", 1, "pid"),
            ("pid 4194305 /\n", 1, "pid"),
        ] {
            let e = ContextGroups::parse(Path::new("rec/groups.txt"), text).unwrap_err();
            assert_eq!(
                (e.line(), e.field.as_str()),
                (Some(line), field),
                "{text:?}: {e}"
            );
            assert!(e.to_string().contains("rec/groups.txt"), "{e}");
        }
    }

    /// Round 12: a group path of 5000 bytes, one 65 levels deep, and 1025 groups were taken
    /// into the tree (a 1 MiB path of 500,000 levels holds every ancestor's path: 2.5e11
    /// bytes); each is refused naming the line and `group`.
    #[test]
    fn group_paths_and_counts_past_their_bounds_are_refused_naming_the_line() {
        let long = format!("group /{} 100\n", "a".repeat(5000));
        let deep = format!("pid 1 {}\n", "/a".repeat(65));
        let many: String = (0..=MAX_GROUPS)
            .map(|i| format!("group /g{i} 100\n"))
            .collect();
        for (text, line) in [(long, 1), (deep, 1), (many, MAX_GROUPS + 1)] {
            let e = ContextGroups::parse(Path::new("groups.txt"), &text).unwrap_err();
            assert_eq!((e.line(), e.field.as_str()), (Some(line), "group"), "{e}");
            assert!(e.to_string().len() < 1024, "{e}");
        }
        // At the bounds: accepted.
        let ok: String = (0..MAX_GROUPS)
            .map(|i| format!("group /g{i} 100\n"))
            .collect();
        let deep = format!("group {} 100\n", "/a".repeat(MAX_DEPTH));
        for text in [ok, deep] {
            ContextGroups::parse(Path::new("groups.txt"), &text).unwrap();
        }
    }
}
