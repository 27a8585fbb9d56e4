//! The mount tests' harness: a running `elevator mount` in a temporary directory, unmounted
//! (retrying while busy, then lazily) and reaped within bounds; and the checks for what the
//! tests need (/dev/fuse, fusermount3, a tool, root).
// Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::child::wait_within;

/// Whether `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether FUSE can be mounted here (/dev/fuse and fusermount3); says why not for `test`.
pub fn fuse_available(test: &str) -> bool {
    if !Path::new("/dev/fuse").exists() || !have("fusermount3") {
        eprintln!("{test}: skipped: needs /dev/fuse and fusermount3 (apt-get install fuse3)");
        return false;
    }
    true
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether something is mounted on `mnt`.
pub fn mounted(mnt: &Path) -> bool {
    mount_line(mnt).is_some()
}

/// The line of /proc/self/mounts for `mnt`, if something is mounted there.
pub fn mount_line(mnt: &Path) -> Option<String> {
    let m = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let want = mnt.to_str().unwrap();
    m.lines()
        .find(|l| l.split(' ').nth(1) == Some(want))
        .map(str::to_owned)
}

/// A running `elevator mount`, unmounted and reaped on drop.
pub struct Mount {
    child: Option<Child>,
    /// The mount point.
    pub mnt: PathBuf,
    /// The backing directory.
    pub back: PathBuf,
    _dirs: tempfile::TempDir,
}

impl Mount {
    pub fn start(sched: &str, extra: &[&str]) -> Mount {
        let dirs = tempfile::tempdir().unwrap();
        let back = dirs.path().join("back");
        std::fs::create_dir(&back).unwrap();
        Mount::start_over(back, dirs, sched, extra)
    }

    /// A mount of `back`, its mount point made in `dirs`.
    pub fn start_over(
        back: PathBuf,
        dirs: tempfile::TempDir,
        sched: &str,
        extra: &[&str],
    ) -> Mount {
        Mount::start_limited(back, dirs, sched, extra, None)
    }

    /// As [`Mount::start_over`], the daemon's open-file limit `nofile` (soft and hard) when
    /// given.
    pub fn start_limited(
        back: PathBuf,
        dirs: tempfile::TempDir,
        sched: &str,
        extra: &[&str],
        nofile: Option<u64>,
    ) -> Mount {
        Mount::start_set_up(back, dirs, sched, extra, |cmd| {
            if let Some(nofile) = nofile {
                super::child::rlimit(cmd, libc::RLIMIT_NOFILE, nofile);
            }
        })
    }

    /// As [`Mount::start_over`], the daemon's command set up further by `set_up` first (its
    /// limits, its signal state).
    pub fn start_set_up(
        back: PathBuf,
        dirs: tempfile::TempDir,
        sched: &str,
        extra: &[&str],
        set_up: impl FnOnce(&mut Command),
    ) -> Mount {
        let mnt = dirs.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_elevator"));
        cmd.arg("mount")
            .arg(&back)
            .arg(&mnt)
            .args(["--sched", sched])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        set_up(&mut cmd);
        let child = cmd.spawn().unwrap();
        let m = Mount {
            child: Some(child),
            mnt,
            back,
            _dirs: dirs,
        };
        let t0 = Instant::now();
        while !mounted(&m.mnt) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "mount did not appear"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Descriptors the daemon holds now.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// Unmount cleanly and wait for the daemon; returns its success.
    ///
    /// The kernel refuses the unmount (EBUSY) while any process holds a file of the mount: a
    /// child that another test's thread forks while this one has a file open keeps its copy
    /// of the descriptor until it execs. So a refusal is retried for 30 s (naming who holds
    /// the mount), then the mount is detached lazily and the unmount counted a failure; the
    /// daemon is waited for at most 60 s, then killed. Nothing here waits without end.
    pub fn unmount(&mut self) -> bool {
        let t0 = Instant::now();
        let mut refused = false;
        let ok = loop {
            let out = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.mnt)
                .stderr(Stdio::piped())
                .output();
            match out {
                Ok(o) if o.status.success() => break true,
                Ok(o) if t0.elapsed() < Duration::from_secs(30) => {
                    if !refused {
                        eprintln!(
                            "unmount {}: {} held by {}; retrying",
                            self.mnt.display(),
                            String::from_utf8_lossy(&o.stderr).trim(),
                            holders(&self.mnt)
                        );
                        refused = true;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                _ => {
                    lazy_unmount(&self.mnt);
                    break false;
                }
            }
        };
        let status = self
            .child
            .take()
            .and_then(|c| reap(c, Duration::from_secs(60)));
        ok && status.is_some_and(|s| s.success())
    }

    /// Wait at most `limit` for the daemon to exit by itself (after a signal); its status, or
    /// `None` if it was still running (it is then left to the drop, which kills it).
    pub fn exited_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let t0 = Instant::now();
        let child = self.child.as_mut()?;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            if t0.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        lazy_unmount(&self.mnt);
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.child.is_some() {
            lazy_unmount(&self.mnt);
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Detach the mount now; the kernel drops it when its last user lets go.
fn lazy_unmount(mnt: &Path) {
    let _ = Command::new("fusermount3").arg("-uz").arg(mnt).status();
}

/// The daemon's exit status, or `None` (it is killed) when it has not exited within `limit`.
fn reap(child: Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let status = wait_within(child, limit, |c| {
        let _ = c.kill();
    })
    .status;
    if status.is_none() {
        eprintln!("elevator mount did not exit within {limit:?}; killed");
    }
    status
}

/// The processes with a descriptor or working directory under `mnt`, as "pid (comm)".
fn holders(mnt: &Path) -> String {
    let mut found = Vec::new();
    for proc in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = proc.file_name();
        let Some(pid) = pid
            .to_str()
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let cwd = std::fs::read_link(proc.path().join("cwd")).ok();
        let fds = std::fs::read_dir(proc.path().join("fd"))
            .into_iter()
            .flatten()
            .flatten();
        let mut links = fds.filter_map(|fd| std::fs::read_link(fd.path()).ok());
        if cwd.is_some_and(|c| c.starts_with(mnt)) || links.any(|l| l.starts_with(mnt)) {
            let comm = std::fs::read_to_string(proc.path().join("comm")).unwrap_or_default();
            found.push(format!("{pid} ({})", comm.trim()));
        }
    }
    if found.is_empty() {
        "no process found".to_string()
    } else {
        found.join(", ")
    }
}
