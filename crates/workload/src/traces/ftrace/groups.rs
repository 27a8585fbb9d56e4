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
//! ```
//!
//! A group's ancestors not declared take the default weight; a process not named is in the
//! root group. The groups are fixed for the recording (fio moves a job's process into its
//! group before its first I/O), so bfq's handling of a process moved between groups
//! (`bfq_bic_update_cgroup` moving or splitting its queue) is never replayed.

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
}

impl ContextGroups {
    /// The group of process `pid`: the root unless the file named it.
    pub fn of(&self, pid: u32) -> GroupId {
        self.by_pid.get(&pid).copied().unwrap_or(GroupId::ROOT)
    }

    /// Read a groups file's `text` (see the module docs); `path` names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<ContextGroups, InputError> {
        let mut out = ContextGroups::default();
        let mut declared: HashMap<String, usize> = HashMap::new();
        let mut pids: Vec<(u32, String, usize)> = Vec::new();
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
                [kind, ..] if kind != "group" && kind != "pid" => {
                    return Err(err(
                        "kind",
                        format!("{kind:?}: a line is `group PATH WEIGHT` or `pid PID PATH`"),
                    ));
                }
                _ => {
                    return Err(err(
                        words[0],
                        format!(
                            "{} fields: `group PATH WEIGHT` or `pid PID PATH`",
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
            ("cgroup /a 10\n", 1, "kind"),
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
