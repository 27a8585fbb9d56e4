//! The inode table: each inode the kernel knows holds an O_PATH descriptor of its backing
//! file, so renames and unlinks in the backing directory never leave a FUSE inode pointing at
//! the wrong path (the approach of libfuse's passthrough_ll).
//!
//! **Inode numbers are the backing files' own** where they can be: a file on the backing
//! directory's filesystem is given its `st_ino` as its FUSE node id (which fuser also reports
//! as `st_ino`), so a file keeps its number across the kernel forgetting and looking it up
//! again (a dropped cache, a remount), as `git status` and `find -newer` expect of a local
//! filesystem. A file on another filesystem (a mount inside the backing directory), and one
//! whose number falls among ours (the root's and the control files', below [`INO_END`]), gets
//! a number counted from [`FOREIGN_BASE`]. Numbers cannot collide: while the kernel remembers
//! a node we hold an O_PATH descriptor of its file, so its number is not reused.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::control::INO_END;

/// The root's inode number (FUSE's).
pub const ROOT: u64 = 1;

/// Where the numbers of files that cannot keep their own start (see the module's doc).
pub const FOREIGN_BASE: u64 = 1 << 62;

/// A backing file or directory the kernel holds a reference to.
#[derive(Debug)]
pub struct Node {
    /// O_PATH | O_NOFOLLOW descriptor of the backing file.
    pub fd: OwnedFd,
    key: (u64, u64),
}

impl Node {
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

impl Inodes {
    /// A table whose root is `backing`.
    pub fn new(backing: &Path) -> io::Result<Inodes> {
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
        let root = Arc::new(Node { fd, key });
        Ok(Inodes {
            nodes: Mutex::new(Table {
                by_ino: HashMap::from([(ROOT, (root, 1))]),
                by_key: HashMap::from([(key, ROOT)]),
                next: FOREIGN_BASE,
                dev: st.st_dev,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node `ino`.
    pub fn get(&self, ino: u64) -> Option<Arc<Node>> {
        self.lock().by_ino.get(&ino).map(|(n, _)| Arc::clone(n))
    }

    /// Look `name` up under `parent` and count one more kernel reference: (inode, stat).
    pub fn lookup(&self, parent: &Node, name: &CStr) -> io::Result<(u64, libc::stat)> {
        let st = stat_at(parent.fd.as_raw_fd(), name)?;
        let key = (st.st_dev, st.st_ino);
        if let Some(ino) = self.bump(key) {
            return Ok((ino, st));
        }
        let fd = open_path(parent.fd.as_raw_fd(), name)?;
        // The file may have been replaced between the stat and the open: key on what we hold.
        let st = stat_at(fd.as_raw_fd(), c"")?;
        let key = (st.st_dev, st.st_ino);
        let mut t = self.lock();
        if let Some(&ino) = t.by_key.get(&key) {
            if let Some(entry) = t.by_ino.get_mut(&ino) {
                entry.1 += 1;
                return Ok((ino, st));
            }
        }
        let ino = t.number(key);
        t.by_key.insert(key, ino);
        t.by_ino.insert(ino, (Arc::new(Node { fd, key }), 1));
        Ok((ino, st))
    }

    fn bump(&self, key: (u64, u64)) -> Option<u64> {
        let mut t = self.lock();
        let ino = *t.by_key.get(&key)?;
        t.by_ino.get_mut(&ino)?.1 += 1;
        Some(ino)
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
        let root = t.get(ROOT).unwrap();
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
}
