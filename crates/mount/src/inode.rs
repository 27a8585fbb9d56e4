//! The inode table: each inode the kernel knows is a backing file we can find again, by an
//! O_PATH descriptor while we hold one and otherwise by its last known name in its parent
//! (checked against its device and inode number when reopened), so renames and unlinks in the
//! backing directory never leave a FUSE inode pointing at the wrong file.
//!
//! **Descriptors are bounded.** libfuse's passthrough_ll holds one O_PATH descriptor per inode
//! the kernel remembers; the kernel remembers every inode it has looked up until memory
//! pressure or a cache drop makes it forget them, so an untar of 60,000 entries would need
//! 60,000 descriptors, far above the default limit of 1,024. Here at most [`Inodes::cap`]
//! descriptors are held (half the soft limit on open files at start, at least 16): a node's
//! descriptor is opened when an operation needs it (a lookup only stats the name) and, when
//! the cap is passed, the least recently used ones are closed (CLOCK: a node used since the
//! last sweep gets a second chance). A closed node is reopened from its parent and name; if
//! what is there now is another file (renamed or replaced in the backing directory behind the
//! mount), the operation fails with ESTALE, as NFS does. Renames through the mount move the
//! name; an unlink through the mount pins the descriptor of a node whose last name it removes
//! (an open-but-unlinked file stays reachable).
//!
//! **Inode numbers are the backing files' own** where they can be: a file on the backing
//! directory's filesystem is given its `st_ino` as its FUSE node id (which fuser also reports
//! as `st_ino`), so a file keeps its number across the kernel forgetting and looking it up
//! again (a dropped cache, a remount), as `git status` and `find -newer` expect of a local
//! filesystem. A file on another filesystem (a mount inside the backing directory), and one
//! whose number falls among ours (the root's and the control files', below [`INO_END`]), gets
//! a number counted from [`FOREIGN_BASE`]. Numbers cannot collide: a number is given to one
//! (device, inode) at a time, and a node keeps its number until the kernel forgets it.

use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::control::INO_END;

/// The root's inode number (FUSE's).
pub const ROOT: u64 = 1;

/// Where the numbers of files that cannot keep their own start (see the module's doc).
pub const FOREIGN_BASE: u64 = 1 << 62;

/// The fewest descriptors [`Inodes`] holds whatever the limit.
pub const MIN_CAP: usize = 16;

/// Where a node can be found again: its parent and its name there.
#[derive(Debug)]
struct Link {
    parent: Arc<Node>,
    name: CString,
}

/// A backing file or directory the kernel holds a reference to.
#[derive(Debug)]
pub struct Node {
    /// Its O_PATH | O_NOFOLLOW descriptor, while one is held.
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// Its last known name (`None` for the root, whose descriptor is always held).
    link: Mutex<Option<Link>>,
    /// Used since the last sweep of the descriptor cache.
    referenced: AtomicBool,
    /// Its descriptor is never closed (the root; a file whose last name was unlinked).
    pinned: AtomicBool,
    key: (u64, u64),
}

/// A node with its descriptor, held open for as long as this lives.
#[derive(Debug)]
pub struct Held {
    /// The node.
    pub node: Arc<Node>,
    /// Its O_PATH descriptor.
    pub fd: Arc<OwnedFd>,
}

impl Held {
    /// `/proc/self/fd/N` for this node: reopens it with real flags, or names it to calls
    /// that take no descriptor.
    pub fn proc_path(&self) -> CString {
        CString::new(format!("/proc/self/fd/{}", self.fd.as_raw_fd())).expect("no NUL")
    }
}

/// The table.
#[derive(Debug)]
pub struct Inodes {
    nodes: Mutex<Table>,
    /// Nodes whose descriptor is held (unpinned), oldest first; dead entries are skipped.
    open: Mutex<VecDeque<Weak<Node>>>,
    cap: usize,
}

#[derive(Debug)]
struct Table {
    /// Each node with the number of lookups the kernel has not forgotten.
    by_ino: HashMap<u64, (Arc<Node>, u64)>,
    by_key: HashMap<(u64, u64), u64>,
    next: u64,
    /// The backing directory's device: its files keep their own numbers.
    dev: u64,
}

impl Table {
    /// The number for a new node of `key`.
    fn number(&mut self, key: (u64, u64)) -> u64 {
        let (dev, ino) = key;
        if dev == self.dev
            && (INO_END..FOREIGN_BASE).contains(&ino)
            && !self.by_ino.contains_key(&ino)
        {
            return ino;
        }
        let n = self.next;
        self.next += 1;
        n
    }
}

/// `name` as a C string (a name with a NUL byte cannot exist).
pub fn cname(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Turn a -1 return into the errno.
pub fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// stat of `name` under `dir` (or of `dir` itself when `name` is empty), not following a
/// final symlink.
pub fn stat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let flags = libc::AT_SYMLINK_NOFOLLOW
        | if name.is_empty() {
            libc::AT_EMPTY_PATH
        } else {
            0
        };
    // SAFETY: valid C string and a stat buffer we own.
    check(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, flags) })?;
    Ok(st)
}

fn open_path(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: valid C string; the result is checked and owned.
    let fd = check(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: a descriptor just returned to us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `e` says this process has too many descriptors open.
pub fn out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Half the soft limit on open files (the other half for open files' descriptors, the
/// engine and FUSE), at least [`MIN_CAP`].
pub fn default_cap() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes a struct we own.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    (soft / 2).max(MIN_CAP)
}

impl Inodes {
    /// A table whose root is `backing`, holding at most [`default_cap`] descriptors.
    pub fn new(backing: &Path) -> io::Result<Inodes> {
        Inodes::with_cap(backing, default_cap())
    }

    /// A table whose root is `backing`, holding at most `cap` (at least [`MIN_CAP`])
    /// descriptors besides the root's and pinned ones.
    pub fn with_cap(backing: &Path, cap: usize) -> io::Result<Inodes> {
        let c = CString::new(backing.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: valid C string; checked.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: just returned to us.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = stat_at(fd.as_raw_fd(), c"")?;
        let key = (st.st_dev, st.st_ino);
        let root = Arc::new(Node {
            fd: Mutex::new(Some(Arc::new(fd))),
            link: Mutex::new(None),
            referenced: AtomicBool::new(false),
            pinned: AtomicBool::new(true),
            key,
        });
        Ok(Inodes {
            nodes: Mutex::new(Table {
                by_ino: HashMap::from([(ROOT, (root, 1))]),
                by_key: HashMap::from([(key, ROOT)]),
                next: FOREIGN_BASE,
                dev: st.st_dev,
            }),
            open: Mutex::new(VecDeque::new()),
            cap: cap.max(MIN_CAP),
        })
    }

    /// The most descriptors held at once (besides the root's and pinned ones).
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Descriptors held now (besides the root's and pinned ones).
    pub fn held(&self) -> usize {
        lock(&self.open)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|n| lock(&n.fd).is_some())
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        lock(&self.nodes)
    }

    /// The node `ino`.
    pub fn get(&self, ino: u64) -> Option<Arc<Node>> {
        self.lock().by_ino.get(&ino).map(|(n, _)| Arc::clone(n))
    }

    /// The node of the file `st` describes (its device and inode), if there is one.
    fn of_file(&self, st: &libc::stat) -> Option<Arc<Node>> {
        let t = self.lock();
        t.by_key
            .get(&(st.st_dev, st.st_ino))
            .and_then(|i| t.by_ino.get(i))
            .map(|(node, _)| Arc::clone(node))
    }

    /// The node `ino` with its descriptor (reopened if it was closed): ESTALE if the kernel
    /// forgot it or its file is gone or replaced.
    pub fn hold(&self, ino: u64) -> io::Result<Held> {
        let node = self
            .get(ino)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
        self.hold_node(node)
    }

    /// `node` with its descriptor.
    pub fn hold_node(&self, node: Arc<Node>) -> io::Result<Held> {
        let fd = self.fd_of(&node)?;
        Ok(Held { node, fd })
    }

    fn fd_of(&self, node: &Arc<Node>) -> io::Result<Arc<OwnedFd>> {
        node.referenced.store(true, Ordering::Relaxed);
        if let Some(fd) = lock(&node.fd).as_ref() {
            return Ok(Arc::clone(fd));
        }
        let (parent, name) = {
            let link = lock(&node.link);
            let l = link
                .as_ref()
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ESTALE))?;
            (Arc::clone(&l.parent), l.name.clone())
        };
        let pfd = self.fd_of(&parent)?;
        let fd = match open_path(pfd.as_raw_fd(), &name) {
            Err(e) if out_of_fds(&e) => {
                self.relieve();
                open_path(pfd.as_raw_fd(), &name)?
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                return Err(io::Error::from_raw_os_error(libc::ESTALE))
            }
            r => r?,
        };
        let st = stat_at(fd.as_raw_fd(), c"")?;
        if (st.st_dev, st.st_ino) != node.key {
            return Err(io::Error::from_raw_os_error(libc::ESTALE));
        }
        let fd = Arc::new(fd);
        {
            let mut slot = lock(&node.fd);
            if let Some(other) = slot.as_ref() {
                return Ok(Arc::clone(other)); // another thread reopened it first
            }
            *slot = Some(Arc::clone(&fd));
        }
        if !node.pinned.load(Ordering::Relaxed) {
            let mut open = lock(&self.open);
            open.push_back(Arc::downgrade(node));
            self.sweep(&mut open, self.cap);
        }
        Ok(fd)
    }

    /// Close descriptors (least recently used first) until at most `keep` are held.
    fn sweep(&self, open: &mut VecDeque<Weak<Node>>, keep: usize) {
        // Each entry is looked at most twice: once to clear its mark, once to close it.
        let mut budget = 2 * open.len();
        while open.len() > keep && budget > 0 {
            budget -= 1;
            let Some(w) = open.pop_front() else { break };
            let Some(n) = w.upgrade() else { continue };
            if n.pinned.load(Ordering::Relaxed) {
                continue;
            }
            if n.referenced.swap(false, Ordering::Relaxed) {
                open.push_back(w);
                continue;
            }
            lock(&n.fd).take();
        }
    }

    /// Out of descriptors: close half of those held.
    pub fn relieve(&self) {
        let mut open = lock(&self.open);
        open.retain(|w| w.upgrade().is_some_and(|n| lock(&n.fd).is_some()));
        for w in open.iter() {
            if let Some(n) = w.upgrade() {
                n.referenced.store(false, Ordering::Relaxed);
            }
        }
        let keep = open.len() / 2;
        self.sweep(&mut open, keep);
    }

    /// Look `name` up under `parent` and count one more kernel reference: (inode, stat).
    /// Only stats the name: the node's descriptor is opened when first needed.
    pub fn lookup(&self, parent: &Held, name: &CStr) -> io::Result<(u64, libc::stat)> {
        let st = stat_at(parent.fd.as_raw_fd(), name)?;
        let key = (st.st_dev, st.st_ino);
        let mut t = self.lock();
        if let Some(&ino) = t.by_key.get(&key) {
            if let Some(entry) = t.by_ino.get_mut(&ino) {
                entry.1 += 1;
                let node = Arc::clone(&entry.0);
                drop(t);
                // Found by this name now: the name to find it again by.
                if let Some(l) = lock(&node.link).as_mut() {
                    if l.name.as_c_str() != name || !Arc::ptr_eq(&l.parent, &parent.node) {
                        *l = Link {
                            parent: Arc::clone(&parent.node),
                            name: name.to_owned(),
                        };
                    }
                }
                return Ok((ino, st));
            }
        }
        let ino = t.number(key);
        let node = Arc::new(Node {
            fd: Mutex::new(None),
            link: Mutex::new(Some(Link {
                parent: Arc::clone(&parent.node),
                name: name.to_owned(),
            })),
            referenced: AtomicBool::new(false),
            pinned: AtomicBool::new(false),
            key,
        });
        t.by_key.insert(key, ino);
        t.by_ino.insert(ino, (node, 1));
        Ok((ino, st))
    }

    /// `name` in `parent` is about to be renamed to `new_name` in `new_parent` (or exchanged
    /// with it): after `rename` succeeds, the nodes known under either name are found under
    /// their new ones.
    pub fn rename<R>(
        &self,
        parent: &Held,
        name: &CStr,
        new_parent: &Held,
        new_name: &CStr,
        rename: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        let r = rename()?;
        for (p, n) in [(new_parent, new_name), (parent, name)] {
            let Ok(st) = stat_at(p.fd.as_raw_fd(), n) else {
                continue;
            };
            if let Some(node) = self.of_file(&st) {
                if let Some(l) = lock(&node.link).as_mut() {
                    *l = Link {
                        parent: Arc::clone(&p.node),
                        name: n.to_owned(),
                    };
                }
            }
        }
        Ok(r)
    }

    /// `name` in `parent` is about to be unlinked: if it is a node's last name, keep that
    /// node's descriptor (an open file stays reachable after its unlink).
    pub fn before_unlink(&self, parent: &Held, name: &CStr) {
        let Ok(st) = stat_at(parent.fd.as_raw_fd(), name) else {
            return;
        };
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return;
        }
        let Some(node) = self.of_file(&st) else {
            return;
        };
        let by_this_name = lock(&node.link)
            .as_ref()
            .is_some_and(|l| l.name.as_c_str() == name && Arc::ptr_eq(&l.parent, &parent.node));
        if by_this_name && self.fd_of(&node).is_ok() {
            node.pinned.store(true, Ordering::Relaxed);
        }
    }

    /// The kernel dropped `n` references to `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let mut t = self.lock();
        let Some((node, count)) = t.by_ino.get_mut(&ino) else {
            return;
        };
        if *count > n {
            *count -= n;
            return;
        }
        let key = node.key;
        t.by_ino.remove(&ino);
        if t.by_key.get(&key) == Some(&ino) {
            t.by_key.remove(&key);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_file_keeps_its_backing_inode_number_across_forget_and_lookup() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        let want = std::fs::metadata(dir.path().join("a")).unwrap().ino();
        let t = Inodes::new(dir.path()).unwrap();
        let root = t.hold(ROOT).unwrap();
        let (ino, st) = t.lookup(&root, c"a").unwrap();
        assert_eq!(st.st_ino, want);
        if want >= INO_END {
            assert_eq!(ino, want);
        } else {
            assert!(ino >= FOREIGN_BASE);
        }
        // The kernel forgets it (a dropped cache) and looks it up again: the same number.
        t.forget(ino, 1);
        assert!(t.get(ino).is_none());
        let (again, _) = t.lookup(&root, c"a").unwrap();
        assert_eq!(again, ino);
    }

    #[test]
    fn a_number_among_ours_is_given_one_of_the_foreign_range() {
        let mut t = Table {
            by_ino: HashMap::new(),
            by_key: HashMap::new(),
            next: FOREIGN_BASE,
            dev: 7,
        };
        assert_eq!(t.number((7, 5)), FOREIGN_BASE);
        assert_eq!(t.number((8, 5000)), FOREIGN_BASE + 1);
        assert_eq!(t.number((7, 5000)), 5000);
    }

    #[test]
    fn descriptors_stay_under_the_cap_and_closed_ones_are_reopened_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..100 {
            std::fs::write(dir.path().join(format!("f{i}")), b"x").unwrap();
        }
        let t = Inodes::with_cap(dir.path(), MIN_CAP).unwrap();
        let root = t.hold(ROOT).unwrap();
        let mut inos = Vec::new();
        for i in 0..100 {
            let name = CString::new(format!("f{i}")).unwrap();
            let (ino, _) = t.lookup(&root, &name).unwrap();
            drop(t.hold(ino).unwrap());
            assert!(t.held() <= MIN_CAP, "{} held after {i}", t.held());
            inos.push(ino);
        }
        // The first was closed long ago; holding it reopens it by its name.
        let first = t.hold(inos[0]).unwrap();
        let st = stat_at(first.fd.as_raw_fd(), c"").unwrap();
        assert_eq!(
            st.st_ino,
            std::fs::metadata(dir.path().join("f0")).unwrap().ino()
        );
    }

    #[test]
    fn a_closed_node_replaced_behind_the_mount_is_stale_and_one_renamed_through_it_is_found() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["a", "b"] {
            std::fs::write(dir.path().join(n), n).unwrap();
        }
        let t = Inodes::with_cap(dir.path(), MIN_CAP).unwrap();
        let root = t.hold(ROOT).unwrap();
        let (a, _) = t.lookup(&root, c"a").unwrap();
        let (b, _) = t.lookup(&root, c"b").unwrap();
        // Replaced behind our back (no descriptor held yet): its name now holds another
        // file, which must not be taken for it.
        std::fs::rename(dir.path().join("b"), dir.path().join("a")).unwrap();
        assert_eq!(t.hold(a).unwrap_err().raw_os_error(), Some(libc::ESTALE));
        // Renamed through the table: found under its new name.
        let d = dir.path();
        t.rename(&root, c"a", &root, c"c", || {
            std::fs::rename(d.join("a"), d.join("c"))
        })
        .unwrap();
        let held = t.hold(b).unwrap();
        let st = stat_at(held.fd.as_raw_fd(), c"").unwrap();
        assert_eq!(st.st_ino, std::fs::metadata(d.join("c")).unwrap().ino());
    }
}
