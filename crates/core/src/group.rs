//! The group (cgroup) tree that group-aware policies (CFQ, BFQ, ioband) share.
//!
//! Groups are named by path (`/`, `/a`, `/a/b`) as a cgroup mount would show them. A weight of
//! `None` means "the policy's default" (500 for CFQ's blkio.weight, 100 for BFQ's io.weight),
//! so one scenario can run under policies with different weight scales.
//!
//! Each group also carries the cgroup v2 io controller's files ([`IoSettings`]): `io.weight`
//! (io.cost's weight), `io.bfq.weight`, `io.latency`'s target and `io.max`; and the tree
//! carries the device-level `io.cost.model` and `io.cost.qos` lines ([`IoCostDevice`]). The
//! controllers at the block layer's rq_qos position are built from them by
//! [`crate::qos::chain`].

use crate::request::GroupId;
use crate::time::Nanos;
use rustc_hash::FxHashMap;
use std::fmt;

/// A group's `io.max` (blk-throttle): a limit per direction in bytes and in I/Os per second;
/// `None` is `max` (no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoMax {
    /// `rbps`: read bytes per second.
    pub rbps: Option<u64>,
    /// `wbps`: write bytes per second.
    pub wbps: Option<u64>,
    /// `riops`: read I/Os per second.
    pub riops: Option<u32>,
    /// `wiops`: write I/Os per second.
    pub wiops: Option<u32>,
}

impl IoMax {
    /// Whether every limit is `max`.
    pub fn is_unlimited(&self) -> bool {
        *self == IoMax::default()
    }

    /// Parse the keys of an `io.max` line as a user writes them after `MAJ:MIN`:
    /// `rbps=2097152 wiops=120 wbps=max`. Keys not given stay `max`. The error names the key.
    pub fn parse(line: &str) -> Result<IoMax, String> {
        let mut m = IoMax::default();
        for tok in line.split_whitespace() {
            let (k, v) = tok
                .split_once('=')
                .ok_or_else(|| format!("{tok:?} is not KEY=VALUE (rbps, wbps, riops, wiops)"))?;
            let num = |v: &str| -> Result<Option<u64>, String> {
                if v == "max" {
                    return Ok(None);
                }
                match v.parse::<u64>() {
                    Ok(0) => Err(format!("{k}=0: a limit is at least 1 (or max)")),
                    Ok(n) => Ok(Some(n)),
                    Err(_) => Err(format!("{k}={v:?} is not a number or max")),
                }
            };
            match k {
                "rbps" => m.rbps = num(v)?,
                "wbps" => m.wbps = num(v)?,
                "riops" | "wiops" => {
                    let n = num(v)?
                        .map(|n| u32::try_from(n).map_err(|_| format!("{k}={n} is too large")))
                        .transpose()?;
                    if k == "riops" {
                        m.riops = n;
                    } else {
                        m.wiops = n;
                    }
                }
                _ => {
                    return Err(format!(
                        "unknown io.max key {k:?} (rbps, wbps, riops, wiops)"
                    ))
                }
            }
        }
        Ok(m)
    }
}

impl fmt::Display for IoMax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |x: Option<u64>| x.map_or("max".to_string(), |n| n.to_string());
        write!(
            f,
            "rbps={} wbps={} riops={} wiops={}",
            v(self.rbps),
            v(self.wbps),
            v(self.riops.map(u64::from)),
            v(self.wiops.map(u64::from))
        )
    }
}

/// One write to a cgroup v2 io file, given as `/PATH/FILE=VALUE`: what a user would do with
/// `echo "VALUE" > /sys/fs/cgroup/PATH/FILE`, the `MAJ:MIN` of the per-device files left out
/// (the device is the one scheduled). FILE is `io.max` (`rbps=.. wbps=.. riops=.. wiops=..`),
/// `io.latency` (`target=MICROSECONDS`), `io.weight` or `io.bfq.weight` (`N` or
/// `default N`), all below the root, or at the root `io.cost.model` and `io.cost.qos` (their
/// lines as written after `MAJ:MIN`), where the kernel offers them. The mount's
/// `--cgroup-file` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupFileWrite {
    /// The group, e.g. `/bulk` (`/` for the device-level io.cost files).
    pub path: String,
    /// The file and what is written to it.
    pub value: CgroupFileValue,
}

/// A [`CgroupFileWrite`]'s file and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupFileValue {
    /// `io.max`.
    Max(IoMax),
    /// `io.latency`'s `target=`.
    LatencyTarget(Nanos),
    /// `io.weight`.
    Weight(u32),
    /// `io.bfq.weight`.
    BfqWeight(u32),
    /// The root's `io.cost.model` line.
    CostModel(String),
    /// The root's `io.cost.qos` line.
    CostQos(String),
}

impl std::str::FromStr for CgroupFileWrite {
    type Err = String;
    fn from_str(s: &str) -> Result<CgroupFileWrite, String> {
        let err = |why: String| format!("{s:?}: {why} (expected /PATH/FILE=VALUE)");
        let (target, value) = s.split_once('=').ok_or_else(|| err("no '='".into()))?;
        let (dir, file) = target
            .rsplit_once('/')
            .filter(|(d, _)| target.starts_with('/') && !d.ends_with('/'))
            .ok_or_else(|| err("the file must follow a group path starting with '/'".into()))?;
        let path = if dir.is_empty() { "/" } else { dir };
        check_path(path).map_err(err)?;
        let root = path == "/";
        let weight = |v: &str| -> Result<u32, String> {
            let n = v.strip_prefix("default ").unwrap_or(v).trim();
            n.parse()
                .map_err(|_| err(format!("{file} takes N or `default N`, not {v:?}")))
        };
        let value = match file {
            "io.cost.model" | "io.cost.qos" if !root => {
                return Err(err(format!(
                    "{file} is the root's (/{file}): the kernel offers it only there"
                )))
            }
            "io.max" | "io.latency" | "io.weight" | "io.bfq.weight" if root => {
                return Err(err(format!(
                    "the root group has no {file} (the kernel offers it only below the root)"
                )))
            }
            "io.cost.model" => CgroupFileValue::CostModel(value.to_string()),
            "io.cost.qos" => CgroupFileValue::CostQos(value.to_string()),
            "io.max" => CgroupFileValue::Max(IoMax::parse(value).map_err(err)?),
            "io.latency" => {
                let us = value
                    .trim()
                    .strip_prefix("target=")
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|&us| us > 0 && us <= u64::MAX / 1000)
                    .ok_or_else(|| {
                        err(format!(
                            "io.latency takes target=MICROSECONDS (above 0), not {value:?}"
                        ))
                    })?;
                CgroupFileValue::LatencyTarget(Nanos::from_us(us))
            }
            "io.weight" => CgroupFileValue::Weight(weight(value)?),
            "io.bfq.weight" => CgroupFileValue::BfqWeight(weight(value)?),
            other => {
                return Err(err(format!(
                    "unknown file {other:?} (io.max, io.latency, io.weight, io.bfq.weight, \
                     io.cost.model, io.cost.qos)"
                )))
            }
        };
        Ok(CgroupFileWrite {
            path: path.to_string(),
            value,
        })
    }
}

impl CgroupFileWrite {
    /// Write it into `tree`, adding the group if it is not there. Ranges are checked with
    /// the tree's others ([`crate::qos::validate`]).
    pub fn apply(&self, tree: &mut GroupTree) -> Result<(), GroupError> {
        let id = tree.add(&self.path, None)?;
        match &self.value {
            CgroupFileValue::Max(m) => tree.io_mut(id).max = *m,
            CgroupFileValue::LatencyTarget(t) => tree.io_mut(id).latency_target = Some(*t),
            CgroupFileValue::Weight(w) => tree.io_mut(id).weight = Some(*w),
            CgroupFileValue::BfqWeight(w) => tree.io_mut(id).bfq_weight = Some(*w),
            CgroupFileValue::CostModel(m) => {
                let mut c = tree.io_cost().clone();
                c.model = Some(m.clone());
                tree.set_io_cost(c);
            }
            CgroupFileValue::CostQos(q) => {
                let mut c = tree.io_cost().clone();
                c.qos = Some(q.clone());
                tree.set_io_cost(c);
            }
        }
        Ok(())
    }
}

/// A group's cgroup v2 io controller files. Every field `None` (or `max`) by default: no
/// controller acts on the group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoSettings {
    /// `io.weight` (1..=10000; the kernel's default 100): the group's weight under io.cost
    /// (`io.cost.weight` in the kernel's documentation).
    pub weight: Option<u32>,
    /// `io.bfq.weight` (1..=1000): bfq's weight for the group; when set, bfq takes it over
    /// [`Group::weight`].
    pub bfq_weight: Option<u32>,
    /// `io.latency`'s `target`: the completion latency the group is to be kept under.
    pub latency_target: Option<Nanos>,
    /// `io.max`.
    pub max: IoMax,
}

/// The device-level io.cost lines (`/sys/fs/cgroup/io.cost.model` and `io.cost.qos`), as the
/// user would write them after `MAJ:MIN`; `None`: the kernel's built-in model and QoS
/// defaults. Kept as text here; io.cost parses them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoCostDevice {
    /// `io.cost.model`, e.g. `ctrl=user model=linear rbps=... rseqiops=...`.
    pub model: Option<String>,
    /// `io.cost.qos`, e.g. `enable=1 ctrl=user rpct=95 rlat=5000 ... min=50 max=150`.
    pub qos: Option<String>,
}

/// One group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Full path, e.g. `/a/b`; the root is `/`.
    pub path: String,
    /// The parent; `None` only for the root.
    pub parent: Option<GroupId>,
    /// The weight asked for, or `None` for the policy's default: the scheduler's weight
    /// (CFQ's `blkio.weight`, bfq's `io.bfq.weight` unless [`IoSettings::bfq_weight`] is set,
    /// ioband's share).
    pub weight: Option<u32>,
    /// The cgroup v2 io controller's files for this group.
    pub io: IoSettings,
}

/// The longest group path, in bytes: `PATH_MAX`, the kernel's bound on a path a user can name
/// under /sys/fs/cgroup (`getname` refuses a longer one with ENAMETOOLONG).
pub const MAX_PATH: usize = 4096;

/// The most levels of a group path. The kernel has no bound of its own by default
/// (`cgroup.max.depth` is "max", `cgroup_mkdir` -> `cgroup_check_hierarchy_limits`); ours
/// keeps a group's ancestry short, as bfq and io.cost walk it on every activation, and the
/// tree's size linear in the paths given (each level is a group, its whole path kept).
pub const MAX_DEPTH: usize = 64;

/// A group path within [`MAX_PATH`] bytes and [`MAX_DEPTH`] levels, or why not. Every path
/// that enters a [`GroupTree`] is checked here ([`GroupTree::add`]), whatever file named it.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.len() > MAX_PATH {
        return Err(format!(
            "a group path of {} bytes: at most {MAX_PATH} (PATH_MAX)",
            path.len()
        ));
    }
    let depth = path.split('/').filter(|p| !p.is_empty()).count();
    if depth > MAX_DEPTH {
        return Err(format!(
            "a group path {depth} levels deep: at most {MAX_DEPTH}"
        ));
    }
    Ok(())
}

/// The key of a path in [`GroupTree`]'s index.
fn path_hash(path: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    path.hash(&mut h);
    h.finish()
}

/// A group path could not be added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupError {
    /// The path given.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The path as given, cut: a refused path may be far past PATH_MAX.
        const SHOWN: usize = 60;
        match self.path.char_indices().nth(SHOWN) {
            Some((at, _)) => write!(
                f,
                "group {:?}... ({} bytes): {}",
                &self.path[..at],
                self.path.len(),
                self.reason
            ),
            None => write!(f, "group {:?}: {}", self.path, self.reason),
        }
    }
}

impl std::error::Error for GroupError {}

/// The tree of groups. Index 0 is the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTree {
    groups: Vec<Group>,
    /// The groups by the hash of their path (`path_hash`; several where two paths collide):
    /// a look-up per level of a path added, not a scan of every group (a scenario's 10,000
    /// groups of 64 levels each are 640,000 groups), without a second copy of every path.
    by_path: FxHashMap<u64, Vec<GroupId>>,
    io_cost: IoCostDevice,
}

impl Default for GroupTree {
    fn default() -> Self {
        GroupTree::new()
    }
}

impl GroupTree {
    /// A tree holding only the root.
    pub fn new() -> GroupTree {
        GroupTree {
            groups: vec![Group {
                path: "/".to_string(),
                parent: None,
                weight: None,
                io: IoSettings::default(),
            }],
            by_path: FxHashMap::from_iter([(path_hash("/"), vec![GroupId::ROOT])]),
            io_cost: IoCostDevice::default(),
        }
    }

    /// Add `path` (creating missing ancestors with default weight), or update its weight if it
    /// exists. Returns its id.
    pub fn add(&mut self, path: &str, weight: Option<u32>) -> Result<GroupId, GroupError> {
        let err = |reason: &str| GroupError {
            path: path.to_string(),
            reason: reason.to_string(),
        };
        if !path.starts_with('/') {
            return Err(err("a group path starts with '/'"));
        }
        check_path(path).map_err(|r| err(&r))?;
        let mut id = GroupId::ROOT;
        let mut full = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if part == "." || part == ".." {
                return Err(err("'.' and '..' are not allowed in a group path"));
            }
            full.push('/');
            full.push_str(part);
            id = match self.lookup(&full) {
                Some(g) => g,
                None => {
                    let new = GroupId(self.groups.len() as u32);
                    self.groups.push(Group {
                        path: full.clone(),
                        parent: Some(id),
                        weight: None,
                        io: IoSettings::default(),
                    });
                    self.by_path.entry(path_hash(&full)).or_default().push(new);
                    new
                }
            };
        }
        if weight.is_some() {
            self.groups[id.0 as usize].weight = weight;
        }
        Ok(id)
    }

    /// Set the io controller files of group `id`. Panics on an id this tree did not hand out.
    pub fn set_io(&mut self, id: GroupId, io: IoSettings) {
        self.groups[id.0 as usize].io = io;
    }

    /// The io controller files of group `id`, to change some of them.
    pub fn io_mut(&mut self, id: GroupId) -> &mut IoSettings {
        &mut self.groups[id.0 as usize].io
    }

    /// The device-level io.cost lines.
    pub fn io_cost(&self) -> &IoCostDevice {
        &self.io_cost
    }

    /// Set the device-level io.cost lines.
    pub fn set_io_cost(&mut self, io_cost: IoCostDevice) {
        self.io_cost = io_cost;
    }

    /// Whether any group asks for a controller at the rq_qos position (io.max, io.latency,
    /// io.weight) or the device has io.cost lines.
    pub fn has_io_control(&self) -> bool {
        self.io_cost != IoCostDevice::default()
            || self.groups.iter().any(|g| {
                !g.io.max.is_unlimited() || g.io.latency_target.is_some() || g.io.weight.is_some()
            })
    }

    /// The children of `id`, in the order they were added.
    pub fn children(&self, id: GroupId) -> impl Iterator<Item = GroupId> + '_ {
        self.groups
            .iter()
            .enumerate()
            .filter(move |(_, g)| g.parent == Some(id))
            .map(|(i, _)| GroupId(i as u32))
    }

    /// The group at `path`, if present.
    pub fn lookup(&self, path: &str) -> Option<GroupId> {
        let norm = if path.len() > 1 {
            path.trim_end_matches('/')
        } else {
            path
        };
        self.by_path
            .get(&path_hash(norm))?
            .iter()
            .copied()
            .find(|id| self.groups[id.0 as usize].path == norm)
    }

    /// The group `id`. Panics on an id this tree did not hand out.
    pub fn get(&self, id: GroupId) -> &Group {
        &self.groups[id.0 as usize]
    }

    /// The weight of `id`, or `default` if none was set.
    pub fn weight_or(&self, id: GroupId, default: u32) -> u32 {
        self.get(id).weight.unwrap_or(default)
    }

    /// Number of groups, the root included.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Always false: the root is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every group id, root first, parents before children.
    pub fn ids(&self) -> impl Iterator<Item = GroupId> {
        (0..self.groups.len() as u32).map(GroupId)
    }

    /// The path from the root down to `id`, both included.
    pub fn ancestry(&self, id: GroupId) -> Vec<GroupId> {
        let mut v = vec![id];
        let mut cur = id;
        while let Some(p) = self.get(cur).parent {
            v.push(p);
            cur = p;
        }
        v.reverse();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32, round 15: a scenario group of 300,000 levels made the tree hold every
    /// ancestor's path (sim aborted). A path past PATH_MAX bytes or 64 levels is refused
    /// before anything is added; at the bounds every level is found again.
    #[test]
    fn paths_past_path_max_or_64_levels_are_refused_before_anything_is_added() {
        let mut t = GroupTree::new();
        let deep = "/a".repeat(MAX_DEPTH + 1);
        let e = t.add(&deep, None).unwrap_err();
        assert!(e.reason.contains("65 levels deep"), "{e}");
        let long = format!("/{}", "b".repeat(MAX_PATH));
        let e = t.add(&long, None).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
        assert_eq!(t.len(), 1, "nothing added");
        let ok = "/a".repeat(MAX_DEPTH);
        let id = t.add(&ok, Some(7)).unwrap();
        assert_eq!(t.len(), MAX_DEPTH + 1);
        for level in 1..=MAX_DEPTH {
            let p = "/a".repeat(level);
            assert_eq!(t.get(t.lookup(&p).unwrap()).path, p);
        }
        assert_eq!(t.lookup(&format!("{ok}/")), Some(id));
        assert_eq!(t.lookup("/b"), None);
    }

    #[test]
    fn paths_create_ancestors_and_are_found_again() {
        let mut t = GroupTree::new();
        let b = t.add("/a/b", Some(200)).unwrap();
        let a = t.lookup("/a").unwrap();
        assert_eq!(t.get(b).parent, Some(a));
        assert_eq!(t.ancestry(b), vec![GroupId::ROOT, a, b]);
        assert_eq!(t.add("/a/b/", None).unwrap(), b);
        assert_eq!(t.weight_or(b, 500), 200);
        assert_eq!(t.weight_or(a, 500), 500);
    }

    #[test]
    fn io_max_lines_parse_as_the_kernel_writes_them() {
        let m = IoMax::parse("rbps=2097152 wiops=120 wbps=max").unwrap();
        assert_eq!(
            m,
            IoMax {
                rbps: Some(2_097_152),
                wbps: None,
                riops: None,
                wiops: Some(120)
            }
        );
        assert_eq!(m.to_string(), "rbps=2097152 wbps=max riops=max wiops=120");
        assert_eq!(IoMax::parse(&m.to_string()).unwrap(), m);
        assert!(IoMax::parse("rbps=0").unwrap_err().contains("rbps"));
        assert!(IoMax::parse("xbps=1").unwrap_err().contains("xbps"));
        assert!(IoMax::parse("riops=fast").unwrap_err().contains("riops"));
        assert!(IoMax::parse("riops=99999999999").is_err());
        assert!(IoMax::parse("").unwrap().is_unlimited());
    }

    #[test]
    fn io_settings_mark_the_tree_as_controlled() {
        let mut t = GroupTree::new();
        let a = t.add("/a", Some(300)).unwrap();
        assert!(!t.has_io_control());
        t.io_mut(a).latency_target = Some(Nanos::from_ms(5));
        assert!(t.has_io_control());
        assert_eq!(t.children(GroupId::ROOT).collect::<Vec<_>>(), vec![a]);
    }

    #[test]
    fn relative_and_dotted_paths_are_refused() {
        let mut t = GroupTree::new();
        assert!(t.add("a", None).is_err());
        assert!(t.add("/a/../b", None).is_err());
    }

    /// `echo "wbps=10485760" > /sys/fs/cgroup/bulk/io.max` and its kin, the device's
    /// `MAJ:MIN` left out: each file lands in its field; the root takes only io.cost's files
    /// and the groups only theirs, as the kernel's cgroup files are laid out
    /// (`blkcg_files` / `blkcg_legacy_files`, `ioc_files`, `iolatency_files`).
    #[test]
    fn cgroup_file_writes_set_their_field_and_the_kernels_layout_is_kept() {
        let mut t = GroupTree::new();
        for w in [
            "/bulk/io.max=wbps=10485760 riops=max",
            "/a/b/io.latency=target=10000",
            "/a/io.weight=default 300",
            "/a/io.bfq.weight=50",
            "/io.cost.model=ctrl=user model=linear rbps=1000",
            "/io.cost.qos=enable=1 ctrl=user min=50 max=150",
        ] {
            w.parse::<CgroupFileWrite>().unwrap().apply(&mut t).unwrap();
        }
        let g = |p: &str| t.get(t.lookup(p).unwrap()).io.clone();
        assert_eq!(g("/bulk").max.wbps, Some(10_485_760));
        assert_eq!(g("/bulk").max.riops, None);
        assert_eq!(g("/a/b").latency_target, Some(Nanos::from_ms(10)));
        assert_eq!((g("/a").weight, g("/a").bfq_weight), (Some(300), Some(50)));
        assert_eq!(
            t.io_cost().model.as_deref(),
            Some("ctrl=user model=linear rbps=1000")
        );
        assert_eq!(
            t.io_cost().qos.as_deref(),
            Some("enable=1 ctrl=user min=50 max=150")
        );
        for (bad, says) in [
            ("/io.max=wbps=1", "root group has no io.max"),
            ("/a/io.cost.qos=min=50", "only there"),
            ("/a/io.max=xbps=1", "xbps"),
            ("/a/io.latency=10000", "target="),
            ("/a/io.latency=target=0", "above 0"),
            ("/a/io.weight=heavy", "default N"),
            ("/a/io.stat=1", "unknown file"),
            ("a/io.max=wbps=1", "starting with '/'"),
            ("//io.max=wbps=1", "starting with '/'"),
            ("/a/io.max", "no '='"),
        ] {
            let e = bad.parse::<CgroupFileWrite>().unwrap_err();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }
}
