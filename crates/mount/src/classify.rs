//! Who issued an I/O: the context (process), group and priority a request carries.
//!
//! FUSE tells us the id of the *thread* that made the system call. The kernel's schedulers key
//! their per-process state on the io_context, which threads of one process share by default
//! (CLONE_IO aside, a thread group has one), so the context is the thread group: the `Tgid:`
//! line of `/proc/<pid>/status`. Page-cache writeback reaches us with pid 0 (the kernel sends
//! it without the dirtier's credentials); it gets [`FLUSHER`], the flusher thread's context, as
//! writeback from a kworker has in the kernel.
//!
//! The group is, by [`GroupRule`]s given on the command line, the group mapped to the
//! process's name (`/proc/<tgid>/comm`), else with [`GroupMode::Cgroup`] the process's cgroup v2
//! path (`/proc/<tgid>/cgroup`, line `0::`), else the root. Writeback is charged to the group of
//! the process that opened the file handle it comes through, standing for cgroup writeback's
//! inode owner.
//!
//! The priority is the thread's `ioprio_get(IOPRIO_WHO_PROCESS)`; with no class set, best
//! effort at level (nice + 20) / 5, the kernel's `task_nice_ioprio`.
//!
//! Answers are cached per pid for [`CACHE_FOR`]; contexts whose process has gone are reported
//! by [`Classifier::exited`] so the scheduler can be told (`exit_io_context`). A classifier
//! made [`with_names`](Classifier::with_names) also remembers every process's name after it
//! has gone, for the request log's readers ([`Classifier::name_of`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use elevator_core::group::CgroupFileWrite;
use elevator_core::{CtxId, GroupId, GroupTree, IoClass, IoPrio};

/// The context of page-cache writeback (the flusher), and of anything with pid 0.
pub const FLUSHER: CtxId = CtxId(0);

/// The name [`Classifier::name_of`] gives [`FLUSHER`].
pub const FLUSHER_NAME: &str = "writeback";

/// How long a pid's classification is reused before `/proc` is read again.
pub const CACHE_FOR: Duration = Duration::from_secs(1);

/// Where groups come from when no rule names the process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupMode {
    /// Everything not matched by a rule is in the root group.
    #[default]
    Root,
    /// The process's cgroup v2 path.
    Cgroup,
}

/// `--group NAME=PATH[:WEIGHT]`: processes named NAME go to group PATH (with that weight).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRule {
    /// The process name, as `/proc/<pid>/comm` shows it (at most 15 bytes).
    pub comm: String,
    /// The group path, e.g. `/reader`.
    pub path: String,
    /// The group's weight in the scheduler's scale, or its default.
    pub weight: Option<u32>,
}

/// A `--group` argument could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError(String);

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RuleError {}

impl std::str::FromStr for GroupRule {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<GroupRule, RuleError> {
        let err = |why: &str| {
            RuleError(format!(
                "--group {s:?}: {why} (expected NAME=/PATH[:WEIGHT])"
            ))
        };
        let (comm, rest) = s.split_once('=').ok_or_else(|| err("no '='"))?;
        if comm.is_empty() || comm.len() > 15 {
            return Err(err(
                "the process name must be 1 to 15 bytes, as /proc/PID/comm",
            ));
        }
        let (path, weight) = match rest.rsplit_once(':') {
            Some((p, w)) => {
                let w: u32 = w
                    .parse()
                    .map_err(|_| err("the weight is not a positive integer"))?;
                if w == 0 {
                    return Err(err("the weight must be at least 1"));
                }
                (p, Some(w))
            }
            None => (rest, None),
        };
        if !path.starts_with('/') {
            return Err(err("the group path must start with '/'"));
        }
        Ok(GroupRule {
            comm: comm.to_string(),
            path: path.to_string(),
            weight,
        })
    }
}

/// What a request is tagged with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    /// The issuing context (thread group).
    pub ctx: CtxId,
    /// Its group.
    pub group: GroupId,
    /// Its I/O priority.
    pub prio: IoPrio,
}

/// What `/proc` says about one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    /// Thread group id.
    pub tgid: u32,
    /// The process name.
    pub comm: String,
    /// The cgroup v2 path ("/" if none).
    pub cgroup: String,
    /// The I/O priority.
    pub prio: IoPrio,
}

/// Read `/proc` for thread `pid`; `None` if it has gone.
pub fn proc_info(pid: u32) -> Option<ProcInfo> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let tgid = parse_tgid(&status)?;
    let comm = std::fs::read_to_string(format!("/proc/{tgid}/comm"))
        .map(|c| c.trim_end_matches('\n').to_string())
        .unwrap_or_default();
    let cgroup = std::fs::read_to_string(format!("/proc/{tgid}/cgroup"))
        .ok()
        .and_then(|c| parse_cgroup_v2(&c))
        .unwrap_or_else(|| "/".to_string());
    Some(ProcInfo {
        tgid,
        comm,
        cgroup,
        prio: thread_ioprio(pid),
    })
}

/// The `Tgid:` of a `/proc/<pid>/status` text.
pub fn parse_tgid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The unified hierarchy's path in a `/proc/<pid>/cgroup` text (the `0::` line).
pub fn parse_cgroup_v2(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim().to_string())
        .filter(|p| p.starts_with('/'))
}

/// The priority an `ioprio_get` value stands for, given the thread's nice value.
pub fn ioprio_from(raw: i32, nice: i32) -> IoPrio {
    const CLASS_SHIFT: i32 = 13;
    let level = (raw & 0x7) as u8;
    match raw >> CLASS_SHIFT {
        1 => IoPrio {
            class: IoClass::RealTime,
            level,
        },
        2 => IoPrio {
            class: IoClass::BestEffort,
            level,
        },
        3 => IoPrio {
            class: IoClass::Idle,
            level: 7,
        },
        // No class set: best effort at the level the nice value gives (task_nice_ioprio).
        _ => IoPrio {
            class: IoClass::BestEffort,
            level: ((nice.clamp(-20, 19) + 20) / 5) as u8,
        },
    }
}

fn thread_ioprio(pid: u32) -> IoPrio {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: ioprio_get and getpriority take plain integers and touch no memory of ours.
    let raw = unsafe {
        libc::syscall(
            libc::SYS_ioprio_get,
            IOPRIO_WHO_PROCESS,
            libc::c_long::from(pid as i32),
        )
    };
    // SAFETY: as above; errno is reset first because -1 is a valid nice value.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, pid)
    };
    ioprio_from(raw.max(0) as i32, nice)
}

struct Cached {
    info: ProcInfo,
    at: Instant,
}

/// Turns FUSE's pid into a [`Tag`], adding groups to the tree as they are met.
pub struct Classifier {
    mode: GroupMode,
    rules: Vec<GroupRule>,
    keep_names: bool,
    state: Mutex<State>,
}

struct State {
    tree: GroupTree,
    cache: HashMap<u32, Cached>,
    /// Thread groups seen, for exit detection.
    live: HashMap<u32, Instant>,
    /// Every thread group's name, kept after it exits (`keep_names` only).
    names: HashMap<u32, String>,
    swept: Instant,
}

impl Classifier {
    /// A classifier with these rules; the tree starts with the rules' groups, then the
    /// cgroup io files written (`--cgroup-file`, in order, each adding its group if no rule
    /// named it: with [`GroupMode::Cgroup`] processes reach it by their cgroup path).
    /// A process name given two rules, or a group two weights, is refused: the first rule
    /// (or the last weight) won without a word. So is an io file's value out of the
    /// kernel's range ([`elevator_core::qos::validate`]).
    pub fn new(
        mode: GroupMode,
        rules: Vec<GroupRule>,
        io_files: &[CgroupFileWrite],
    ) -> Result<Classifier, String> {
        let mut tree = GroupTree::new();
        let mut names: HashMap<&str, &GroupRule> = HashMap::new();
        let mut weights: HashMap<&str, (u32, &GroupRule)> = HashMap::new();
        let shown = |r: &GroupRule| match r.weight {
            Some(w) => format!("--group {}={}:{w}", r.comm, r.path),
            None => format!("--group {}={}", r.comm, r.path),
        };
        for r in &rules {
            if let Some(first) = names.insert(&r.comm, r) {
                return Err(format!(
                    "{} and {}: processes named {:?} are given two rules; give each name once",
                    shown(first),
                    shown(r),
                    r.comm
                ));
            }
            if let Some(w) = r.weight {
                if let Some((v, first)) = weights.insert(&r.path, (w, r)) {
                    if v != w {
                        return Err(format!(
                            "{} and {}: group {} is given two weights; give one",
                            shown(first),
                            shown(r),
                            r.path
                        ));
                    }
                }
            }
        }
        for r in &rules {
            tree.add(&r.path, r.weight).map_err(|e| e.to_string())?;
        }
        for f in io_files {
            f.apply(&mut tree).map_err(|e| e.to_string())?;
        }
        elevator_core::qos::validate(&tree).map_err(|e| e.to_string())?;
        Ok(Classifier {
            mode,
            rules,
            keep_names: false,
            state: Mutex::new(State {
                tree,
                cache: HashMap::new(),
                live: HashMap::new(),
                names: HashMap::new(),
                swept: Instant::now(),
            }),
        })
    }

    /// Remember every process's name, even after it exits (one short string per process
    /// seen, for as long as the classifier lives).
    pub fn with_names(mut self) -> Classifier {
        self.keep_names = true;
        self
    }

    /// The name of the process behind context `ctx` ([`FLUSHER_NAME`] for the flusher), if
    /// the classifier keeps names and has seen it.
    pub fn name_of(&self, ctx: CtxId) -> Option<String> {
        if ctx == FLUSHER {
            return Some(FLUSHER_NAME.to_string());
        }
        self.lock().names.get(&ctx.0).cloned()
    }

    /// The group tree as it stands.
    pub fn tree(&self) -> GroupTree {
        self.lock().tree.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The group path for a process.
    pub fn group_path<'a>(&'a self, info: &'a ProcInfo) -> &'a str {
        if let Some(r) = self.rules.iter().find(|r| r.comm == info.comm) {
            return &r.path;
        }
        match self.mode {
            GroupMode::Root => "/",
            GroupMode::Cgroup => &info.cgroup,
        }
    }

    /// Classify thread `pid`. The second value is true when the group tree grew (the
    /// scheduler must be rebuilt with [`tree`](Self::tree) before a request of the new group
    /// reaches it).
    pub fn classify(&self, pid: u32) -> (Tag, bool) {
        let root = Tag {
            ctx: FLUSHER,
            group: GroupId::ROOT,
            prio: IoPrio::default(),
        };
        if pid == 0 {
            return (root, false);
        }
        let now = Instant::now();
        let info = {
            let st = self.lock();
            st.cache
                .get(&pid)
                .filter(|c| now.duration_since(c.at) < CACHE_FOR)
                .map(|c| c.info.clone())
        };
        let info = match info.or_else(|| proc_info(pid)) {
            Some(i) => i,
            None => return (root, false),
        };
        let path = self.group_path(&info).to_string();
        let mut st = self.lock();
        let before = st.tree.len();
        let group = st.tree.add(&path, None).unwrap_or(GroupId::ROOT);
        let grew = st.tree.len() != before;
        st.live.insert(info.tgid, now);
        if self.keep_names && st.names.get(&info.tgid) != Some(&info.comm) {
            st.names.insert(info.tgid, info.comm.clone());
        }
        let tag = Tag {
            ctx: CtxId(info.tgid),
            group,
            prio: info.prio,
        };
        st.cache.insert(pid, Cached { info, at: now });
        (tag, grew)
    }

    /// Thread groups seen that no longer exist (checked at most once per [`CACHE_FOR`]); each
    /// is reported once.
    pub fn exited(&self) -> Vec<CtxId> {
        let mut st = self.lock();
        if st.swept.elapsed() < CACHE_FOR {
            return Vec::new();
        }
        st.swept = Instant::now();
        st.cache.retain(|_, c| c.at.elapsed() < CACHE_FOR);
        let gone: Vec<u32> = st
            .live
            .keys()
            .copied()
            .filter(|t| !std::path::Path::new(&format!("/proc/{t}")).exists())
            .collect();
        for t in &gone {
            st.live.remove(t);
        }
        gone.into_iter().map(CtxId).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_rules_parse_and_bad_ones_name_the_problem() {
        let r: GroupRule = "dd=/writer:100".parse().unwrap();
        assert_eq!(
            r,
            GroupRule {
                comm: "dd".into(),
                path: "/writer".into(),
                weight: Some(100),
            }
        );
        let r: GroupRule = "tar=/a/b".parse().unwrap();
        assert_eq!((r.path.as_str(), r.weight), ("/a/b", None));
        for bad in [
            "dd",
            "dd=writer",
            "dd=/w:0",
            "dd=/w:x",
            "=/w",
            "a-very-long-process-name=/w",
        ] {
            let e = bad.parse::<GroupRule>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    /// `--group dd=/a --group dd=/b` put dd in /a (the first rule found) without a word;
    /// `--group a=/g:100 --group b=/g:200` gave /g the weight 200.
    #[test]
    fn a_name_given_two_rules_or_a_group_two_weights_is_refused() {
        let rules =
            |r: &[&str]| -> Vec<GroupRule> { r.iter().map(|s| s.parse().unwrap()).collect() };
        let e = Classifier::new(GroupMode::Root, rules(&["dd=/a", "dd=/b:10"]), &[])
            .err()
            .unwrap();
        assert!(
            e.contains("dd=/a") && e.contains("dd=/b:10") && e.contains("two rules"),
            "{e}"
        );
        let e = Classifier::new(GroupMode::Root, rules(&["a=/g:100", "b=/g:200"]), &[])
            .err()
            .unwrap();
        assert!(e.contains("/g") && e.contains("two weights"), "{e}");
        // One group for two names, its weight given once or the same twice, is fine.
        assert!(Classifier::new(
            GroupMode::Root,
            rules(&["a=/g:100", "b=/g", "c=/g:100"]),
            &[]
        )
        .is_ok());
    }

    /// `--cgroup-file` writes land in the tree the submission engine's controllers are built
    /// from, adding the groups no rule named; a value out of the kernel's range is refused.
    #[test]
    fn cgroup_file_writes_set_the_trees_io_files() {
        let files: Vec<CgroupFileWrite> = ["/bulk/io.max=wbps=10485760", "/web/io.weight=500"]
            .iter()
            .map(|f| f.parse().unwrap())
            .collect();
        let rules = vec!["dd=/bulk:100".parse().unwrap()];
        let c = Classifier::new(GroupMode::Cgroup, rules, &files).unwrap();
        let t = c.tree();
        let bulk = t.get(t.lookup("/bulk").unwrap());
        assert_eq!(
            (bulk.weight, bulk.io.max.wbps),
            (Some(100), Some(10_485_760))
        );
        assert_eq!(t.get(t.lookup("/web").unwrap()).io.weight, Some(500));
        assert!(t.has_io_control());
        let big: CgroupFileWrite = "/web/io.weight=10001".parse().unwrap();
        let e = Classifier::new(GroupMode::Root, Vec::new(), &[big])
            .err()
            .unwrap();
        assert!(e.contains("io.weight") && e.contains("10001"), "{e}");
    }

    #[test]
    fn proc_texts_give_the_thread_group_and_the_unified_cgroup() {
        let status = "Name:\tcc1\nUmask:\t0022\nState:\tR\nTgid:\t4242\nNgid:\t0\nPid:\t4250\n";
        assert_eq!(parse_tgid(status), Some(4242));
        let cg = "12:blkio:/old\n0::/user.slice/build.scope\n";
        assert_eq!(
            parse_cgroup_v2(cg).as_deref(),
            Some("/user.slice/build.scope")
        );
        assert_eq!(parse_cgroup_v2("3:cpu:/x\n"), None);
    }

    #[test]
    fn ioprio_without_a_class_follows_nice_as_task_nice_ioprio_does() {
        let be = |level| IoPrio {
            class: IoClass::BestEffort,
            level,
        };
        assert_eq!(ioprio_from(0, 0), be(4));
        assert_eq!(ioprio_from(0, 19), be(7));
        assert_eq!(ioprio_from(0, -20), be(0));
        assert_eq!(ioprio_from((2 << 13) | 6, 0), be(6));
        assert_eq!(ioprio_from(1 << 13, 0).class, IoClass::RealTime);
        assert_eq!(ioprio_from(3 << 13, 0).class, IoClass::Idle);
    }

    #[test]
    fn this_process_is_its_thread_group_and_rules_pick_its_group() {
        let me = std::process::id();
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        let rule = GroupRule {
            comm: comm.trim().to_string(),
            path: "/mine".into(),
            weight: Some(300),
        };
        let c = Classifier::new(GroupMode::Root, vec![rule], &[]).unwrap();
        let tid = unsafe { libc::gettid() } as u32;
        let other = std::thread::spawn(|| unsafe { libc::gettid() } as u32);
        let other_tid = other.join().unwrap();
        let (tag, grew) = c.classify(tid);
        assert_eq!(tag.ctx, CtxId(me));
        assert_eq!(c.name_of(tag.ctx), None, "names are kept only when asked");
        assert!(!grew, "the rule's group was in the tree from the start");
        assert_eq!(c.tree().get(tag.group).path, "/mine");
        assert_eq!(c.tree().get(tag.group).weight, Some(300));
        // A thread that has exited no longer resolves: the flusher context, root group.
        assert_eq!(c.classify(other_tid).0.ctx, FLUSHER);
        assert_eq!(c.classify(0).0.ctx, FLUSHER);
    }

    #[test]
    fn a_classifier_with_names_names_every_process_it_classified() {
        let c = Classifier::new(GroupMode::Root, Vec::new(), &[])
            .unwrap()
            .with_names();
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        let tid = unsafe { libc::gettid() } as u32;
        let (tag, _) = c.classify(tid);
        assert_eq!(c.name_of(tag.ctx).as_deref(), Some(comm.trim_end()));
        assert_eq!(c.name_of(FLUSHER).as_deref(), Some(FLUSHER_NAME));
        assert_eq!(c.name_of(CtxId(u32::MAX)), None);
    }
}
