//! Loop devices for the tests that write block devices: skip (with a notice) without root or
//! the tools, detach on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Whether `name` is installed; prints a notice when it is not.
pub fn tool(name: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipping: {name} is not installed");
    }
    found
}

/// Whether we run as root; prints a notice when not.
pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let r = unsafe { libc::geteuid() } == 0;
    if !r {
        eprintln!("skipping: loop devices need root");
    }
    r
}

/// A loop device over an image file, detached on drop.
pub struct Loop {
    /// The device node, e.g. /dev/loop3.
    pub dev: PathBuf,
}

impl Loop {
    /// Attach a free loop device to `img`; `None` (with a notice) when that cannot be done.
    pub fn over(img: &Path) -> Option<Loop> {
        if !root() || !tool("losetup") {
            return None;
        }
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(img)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipping: losetup failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Some(Loop { dev })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A process holding a mount in its own mount namespace; killed (by its id) on drop, which
/// takes the namespace and the mount with it.
pub struct Elsewhere {
    /// The process whose namespace holds the mount.
    pub child: Child,
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Mount `dev` on `dir` in a new, private mount namespace: the mount is invisible in this
/// process's /proc/self/mounts.
pub fn mount_elsewhere(dev: &Path, dir: &Path) -> Option<Elsewhere> {
    if !tool("unshare") {
        return None;
    }
    let script = format!(
        "mount {} {} && echo mounted && exec sleep 600",
        dev.display(),
        dir.display()
    );
    let mut child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take()?).read_line(&mut line);
    let held = Elsewhere { child };
    if line.trim() != "mounted" {
        eprintln!("skipping: mounting in another namespace failed");
        return None;
    }
    Some(held)
}
