//! What a run killed outright leaves behind, and how the next run finds and cleans it.
//!
//! `elevator compare` and `elevator kernel-record` create system objects: a scratch image
//! (8 GiB under `/var/tmp` for `compare`), a loop device over it, a tmpfs mount, a tracefs
//! instance, a block device's scheduler switched. Their destructors undo all of it on an
//! error, Ctrl-C or SIGTERM, but nothing runs on SIGKILL (or a crash of the machine's OOM
//! killer): the loop device and the image stay, and nothing said whose they were.
//!
//! Each such run now holds a [`Claim`]: a marker file in [`DIR`] naming its process (pid,
//! the process's start time in clock ticks and the boot it ran in, so a reused pid is not
//! taken for it) and, before each object is created, what it is about to create. The marker
//! is removed when the run has undone everything itself. The next run that creates such
//! objects first calls [`clean_dead`]: each marker whose process is gone (another boot, no
//! such pid, or a pid now held by a process that started at another time) is undone in
//! reverse, touching only what the marker names and only while it is still what the dead
//! run made (a loop device still backed by its image, an image with the inode it created, a
//! tmpfs mounted by the recorder at its directory); a marker of a live process is never
//! touched, nor anything it names. What cannot be undone is refused, naming the object, the
//! command that removes it, and the marker.
//!
//! The markers' directory is root's (mode 0700): a marker is an instruction to remove files
//! and detach devices, so a directory anyone else could write is refused, not read.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// Where the markers live. Under `/var/tmp` (not `/run`) because the scratch images there
/// outlive a reboot, and so must the note of whose they are.
pub const DIR: &str = "/var/tmp/elevator-runs";

/// One object a run creates, noted before it is created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Item {
    /// A file the run creates (`create_new`), with the device and inode it got once created
    /// (`None` until then): removed only while it still has them, after detaching every loop
    /// device it backs. A file noted without them is removed only if its name carries the
    /// dead run's pid (`elevator-compare.PID.img`).
    Image {
        /// The file.
        path: PathBuf,
        /// Its `(st_dev, st_ino)` once created.
        id: Option<(u64, u64)>,
    },
    /// A tmpfs the run mounts at `path` (a directory it creates), with the source name
    /// `source`: unmounted only while the last mount there is a tmpfs of that source, then
    /// the directory removed if empty.
    Tmpfs {
        /// The mount point.
        path: PathBuf,
        /// The mount's source field (`elevator-record`).
        source: String,
    },
    /// A tracefs instance directory: tracing switched off, the instance removed.
    TraceInstance {
        /// `/sys/kernel/tracing/instances/NAME`.
        path: PathBuf,
    },
    /// The top-level tracer of tracefs, which the run sets to `blk` (bfq's log): put back to
    /// `nop` with the clock, buffer size and `tracing_on` it had, only while it is still
    /// `blk` and no live run's marker names it.
    TopTracer {
        /// The tracefs root (`/sys/kernel/tracing`).
        tracefs: PathBuf,
        /// Its `trace_clock` before.
        clock: String,
        /// Its `buffer_size_kb` before.
        size_kb: String,
        /// Its `tracing_on` before.
        on: String,
    },
    /// A block device's scheduler the run switches: put back to `restore`, unless a live
    /// run's marker names the same queue.
    Scheduler {
        /// The device's name under `/sys/block` (`vda`).
        queue: String,
        /// The scheduler it had.
        restore: String,
    },
}

/// A marker: whose run, and what it creates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Marker {
    /// The owning process.
    pid: u32,
    /// Its start time (field 22 of `/proc/PID/stat`, clock ticks since boot).
    start: u64,
    /// `/proc/sys/kernel/random/boot_id` when it ran.
    boot: String,
    /// The command (`compare`, `kernel-record`), for messages.
    command: String,
    /// What it creates, in order.
    items: Vec<Item>,
}

/// A live run's marker; removed when dropped (after the run undid what it made).
pub struct Claim {
    path: PathBuf,
    marker: Marker,
    /// Left in place when dropped: the run could not undo everything itself.
    kept: bool,
}

fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The start time of process `pid` (clock ticks since boot), if it exists.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Marker {
    fn alive(&self) -> bool {
        self.boot == boot_id() && start_time(self.pid) == Some(self.start)
    }
}

/// The markers' directory, made root's and private if missing; refused if anyone else could
/// have written it (not a directory, a symbolic link, another owner, writable by others).
fn open_dir(dir: &Path, create: bool) -> Result<bool, String> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if !create {
                return Ok(false);
            }
            fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| format!("create {}: {e}", dir.display()))?;
            Ok(true)
        }
        Err(e) => Err(format!("{}: {e}", dir.display())),
        Ok(m) => {
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if !m.is_dir() || m.uid() != me || m.permissions().mode() & 0o022 != 0 {
                return Err(format!(
                    "{}: not a directory of uid {me} writable only by it (elevator keeps the \
                     notes of what its runs create there; remove it: rm -r {})",
                    dir.display(),
                    dir.display()
                ));
            }
            Ok(true)
        }
    }
}

impl Claim {
    /// A marker for this process, running `command`, in [`DIR`].
    pub fn take(command: &str) -> Result<Claim, String> {
        Claim::take_in(Path::new(DIR), command)
    }

    fn take_in(dir: &Path, command: &str) -> Result<Claim, String> {
        open_dir(dir, true)?;
        let pid = std::process::id();
        let start = start_time(pid).ok_or("read /proc/self/stat")?;
        let claim = Claim {
            path: dir.join(format!("{pid}.{start}.json")),
            marker: Marker {
                pid,
                start,
                boot: boot_id(),
                command: command.to_string(),
                items: Vec::new(),
            },
            kept: false,
        };
        claim.save()?;
        Ok(claim)
    }

    /// Note `item` before creating it.
    pub fn note(&mut self, item: Item) -> Result<(), String> {
        self.marker.items.push(item);
        self.save()
    }

    /// Note the device and inode of the image at `path`, once created.
    pub fn created(&mut self, path: &Path) -> Result<(), String> {
        let m = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for it in &mut self.marker.items {
            if let Item::Image { path: p, id } = it {
                if p == path {
                    *id = Some((m.dev(), m.ino()));
                }
            }
        }
        self.save()
    }

    /// Write the marker whole to a new file, then rename it over the old: a marker is never
    /// seen half written.
    fn save(&self) -> Result<(), String> {
        let text = serde_json::to_string(&self.marker).map_err(|e| e.to_string())?;
        let tmp = self.path.with_extension("tmp");
        let write = || -> io::Result<()> {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)
        };
        write().map_err(|e| format!("write the run's marker {}: {e}", self.path.display()))
    }
}

impl Claim {
    /// Leave the marker when dropped: what it names was not all undone, and the next run,
    /// once this process is gone, tries again (or says what is left).
    pub fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The loop devices whose backing file is `path` (`/sys/block/loopN/loop/backing_file`; the
/// kernel adds ` (deleted)` once the file is unlinked).
fn loops_backed_by(path: &Path) -> Vec<PathBuf> {
    let want = path.to_string_lossy();
    let deleted = format!("{want} (deleted)");
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter(|e| {
            fs::read_to_string(e.path().join("loop/backing_file"))
                .is_ok_and(|b| b.trim_end_matches('\n') == want || b.trim_end() == deleted)
        })
        .map(|e| Path::new("/dev").join(e.file_name()))
        .collect();
    found.sort();
    found
}

/// The filesystem type and source of the last mount at `path` (`/proc/self/mountinfo`).
fn mounted_at(path: &Path) -> Option<(String, String)> {
    let text = fs::read_to_string("/proc/self/mountinfo").ok()?;
    crate::mountinfo::last_on(&text, path).map(|m| (m.fstype.to_string(), m.source.to_string()))
}

fn tool(program: &str, args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Undo one item of a dead run; `Ok` with what was done (empty when nothing was left), `Err`
/// with what is left and the command that removes it.
/// What live runs' markers hold, which a dead run's undoing must leave alone.
#[derive(Default)]
struct Live {
    /// Queues whose scheduler a live run switched.
    queues: Vec<String>,
    /// A live run holds the top-level tracer.
    top_tracer: bool,
}

fn undo(item: &Item, pid: u32, live: &Live) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    match item {
        Item::Image { path, id } => {
            for l in loops_backed_by(path) {
                tool("losetup", &[std::ffi::OsStr::new("-d"), l.as_os_str()]).map_err(|e| {
                    format!(
                        "loop device {} ({e}): losetup -d {}",
                        l.display(),
                        l.display()
                    )
                })?;
                done.push(format!("detached {}", l.display()));
            }
            let Ok(m) = fs::symlink_metadata(path) else {
                return Ok(done);
            };
            let named = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .is_some_and(|n| n.starts_with("elevator-") && n.contains(&format!(".{pid}.")));
            let ours = match id {
                Some(id) => m.is_file() && (m.dev(), m.ino()) == *id,
                None => m.is_file() && named,
            };
            if ours {
                fs::remove_file(path)
                    .map_err(|e| format!("{} ({e}): rm {}", path.display(), path.display()))?;
                done.push(format!("removed {}", path.display()));
            }
        }
        Item::Tmpfs { path, source } => {
            if mounted_at(path).is_some_and(|(t, s)| t == "tmpfs" && &s == source) {
                tool("umount", &[path.as_os_str()]).map_err(|e| {
                    format!(
                        "tmpfs at {} ({e}): umount {}",
                        path.display(),
                        path.display()
                    )
                })?;
                done.push(format!("unmounted {}", path.display()));
            }
            if fs::remove_dir(path).is_ok() {
                done.push(format!("removed {}", path.display()));
            }
        }
        Item::TraceInstance { path } => {
            if path.is_dir() {
                let _ = fs::write(path.join("tracing_on"), "0");
                fs::remove_dir(path).map_err(|e| {
                    format!(
                        "tracefs instance {} ({e}): rmdir {}",
                        path.display(),
                        path.display()
                    )
                })?;
                done.push(format!("removed {}", path.display()));
            }
        }
        Item::TopTracer {
            tracefs,
            clock,
            size_kb,
            on,
        } => {
            let cur = tracefs.join("current_tracer");
            let now = fs::read_to_string(&cur).unwrap_or_default();
            if now.trim() == "blk" && !live.top_tracer {
                let put = |f: &str, v: &str| {
                    fs::write(tracefs.join(f), v).map_err(|e| {
                        format!(
                            "the top-level tracer ({f}: {e}): echo nop > {}",
                            cur.display()
                        )
                    })
                };
                put("tracing_on", "0")?;
                // Its option, set while it ran; the blk tracer's only while it is current.
                let _ = fs::write(tracefs.join("trace_options"), "noblk_cgroup");
                put("current_tracer", "nop")?;
                put("trace_clock", clock)?;
                put("buffer_size_kb", size_kb)?;
                put("tracing_on", on)?;
                done.push(format!(
                    "put back the top-level tracer of {}",
                    tracefs.display()
                ));
            }
        }
        Item::Scheduler { queue, restore } => {
            let p = Path::new("/sys/block").join(queue).join("queue/scheduler");
            if p.exists() && !live.queues.contains(queue) {
                let now = fs::read_to_string(&p).unwrap_or_default();
                if !now.contains(&format!("[{restore}]")) {
                    fs::write(&p, restore).map_err(|e| {
                        format!("{} ({e}): echo {restore} > {}", p.display(), p.display())
                    })?;
                    done.push(format!("put back {queue}'s scheduler {restore}"));
                }
            }
        }
    }
    Ok(done)
}

/// Find the markers of dead runs in [`DIR`] and undo what they name; `tell` hears each thing
/// undone. `Err` names what could not be undone and how to remove it by hand.
pub fn clean_dead(tell: &mut dyn FnMut(&str)) -> Result<(), String> {
    clean_dead_in(Path::new(DIR), tell)
}

fn clean_dead_in(dir: &Path, tell: &mut dyn FnMut(&str)) -> Result<(), String> {
    if !open_dir(dir, false)? {
        return Ok(());
    }
    let rd = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut markers = Vec::new();
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "tmp") {
            // A marker being written, or one a kill cut short before its rename: the marker
            // it replaces (if any) holds everything noted before.
            if !p.with_extension("json").exists() && !markers_owner_alive(&p) {
                let _ = fs::remove_file(&p);
            }
            continue;
        }
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let m: Marker = serde_json::from_slice(&text).map_err(|e| {
            format!(
                "{}: not a marker elevator wrote ({e}); remove it: rm {}",
                p.display(),
                p.display()
            )
        })?;
        markers.push((p, m));
    }
    let mut live = Live::default();
    for i in markers
        .iter()
        .filter(|(_, m)| m.alive())
        .flat_map(|(_, m)| m.items.iter())
    {
        match i {
            Item::Scheduler { queue, .. } => live.queues.push(queue.clone()),
            Item::TopTracer { .. } => live.top_tracer = true,
            _ => {}
        }
    }
    for (p, m) in markers.iter().filter(|(_, m)| !m.alive()) {
        for item in m.items.iter().rev() {
            let done = undo(item, m.pid, &live).map_err(|left| {
                format!(
                    "a killed `elevator {}` (pid {}, gone) left {left}; then rm {}",
                    m.command,
                    m.pid,
                    p.display()
                )
            })?;
            for d in done {
                tell(&format!(
                    "cleaned what a killed `elevator {}` (pid {}) left: {d}",
                    m.command, m.pid
                ));
            }
        }
        fs::remove_file(p).map_err(|e| format!("remove {}: {e}", p.display()))?;
    }
    Ok(())
}

/// Have `cmd`'s process sent SIGTERM when the thread that spawns it dies (SIGKILL included:
/// `PR_SET_PDEATHSIG`), so a program a killed run started (fio, which ends its jobs on
/// SIGTERM) does not go on writing to a device the next run cleans up. A parent already gone
/// before the child asked ends the child at once.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid before the fork; the closure calls only async-signal-safe functions
    // (prctl, getppid, _exit), as pre_exec requires.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        })
    }
}

/// Whether the process named by a marker file's name (`PID.START.tmp`) is still running.
fn markers_owner_alive(p: &Path) -> bool {
    let name = p.file_stem().map(|n| n.to_string_lossy().into_owned());
    let parsed = name.as_deref().and_then(|n| {
        let (pid, start) = n.split_once('.')?;
        Some((pid.parse::<u32>().ok()?, start.parse::<u64>().ok()?))
    });
    parsed.is_some_and(|(pid, start)| start_time(pid) == Some(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A marker whose process is gone is undone (its image removed) and removed; a live
    /// process's marker, and the image it names, are left alone.
    #[test]
    fn a_dead_runs_marker_is_undone_and_a_live_ones_is_not() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("runs");
        let live_img = root.path().join("elevator-compare.live.img");
        let mut live = Claim::take_in(&dir, "compare").unwrap();
        live.note(Item::Image {
            path: live_img.clone(),
            id: None,
        })
        .unwrap();
        fs::write(&live_img, b"x").unwrap();
        live.created(&live_img).unwrap();
        // A dead run: pid 1's marker with a start time it never had.
        let dead_img = root.path().join("elevator-compare.1.img");
        fs::write(&dead_img, b"y").unwrap();
        let m = fs::metadata(&dead_img).unwrap();
        let dead = Marker {
            pid: 1,
            start: u64::MAX,
            boot: boot_id(),
            command: "compare".into(),
            items: vec![Item::Image {
                path: dead_img.clone(),
                id: Some((m.dev(), m.ino())),
            }],
        };
        let dead_marker = dir.join("1.x.json");
        fs::write(&dead_marker, serde_json::to_string(&dead).unwrap()).unwrap();
        let mut told = Vec::new();
        clean_dead_in(&dir, &mut |s| told.push(s.to_string())).unwrap();
        assert!(!dead_img.exists() && !dead_marker.exists(), "{told:?}");
        assert!(
            told[0].contains("pid 1") && told[0].contains("removed"),
            "{told:?}"
        );
        assert!(live_img.exists() && live.path.exists());
        drop(live);
        assert!(fs::read_dir(&dir).unwrap().next().is_none(), "released");
    }

    /// An image whose inode is not the one the dead run created (someone made a new file of
    /// that name since) is left in place.
    #[test]
    fn a_file_that_is_not_the_one_created_is_left() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("runs");
        open_dir(&dir, true).unwrap();
        let img = root.path().join("elevator-compare.1.img");
        fs::write(&img, b"someone's").unwrap();
        let dead = Marker {
            pid: 1,
            start: u64::MAX,
            boot: "another boot".into(),
            command: "compare".into(),
            items: vec![Item::Image {
                path: img.clone(),
                id: Some((0, 0)),
            }],
        };
        fs::write(dir.join("1.x.json"), serde_json::to_string(&dead).unwrap()).unwrap();
        clean_dead_in(&dir, &mut |_| {}).unwrap();
        assert_eq!(fs::read(&img).unwrap(), b"someone's");
    }

    /// A markers' directory others can write is refused, not read: its markers could name
    /// anything to remove.
    #[test]
    fn a_directory_others_can_write_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("runs");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let e = clean_dead_in(&dir, &mut |_| {}).unwrap_err();
        assert!(e.contains("writable only by it"), "{e}");
    }

    /// A killed `kernel-record --bfq-log` left tracefs's top-level tracer `blk` (the next
    /// run refused: "the top-level tracer is \"blk\", in use"). Its marker names the tracer
    /// and what it was; the next run puts it back, only while it is still `blk` and no live
    /// run holds it. A fake tracefs of plain files stands in for /sys/kernel/tracing.
    #[test]
    fn a_dead_runs_top_level_tracer_is_put_back_only_while_still_blk() {
        let root = tempfile::tempdir().unwrap();
        let tracefs = root.path().join("tracing");
        fs::create_dir(&tracefs).unwrap();
        let set = |f: &str, v: &str| fs::write(tracefs.join(f), v).unwrap();
        let get = |f: &str| fs::read_to_string(tracefs.join(f)).unwrap();
        set("current_tracer", "blk\n");
        set("trace_clock", "mono");
        set("buffer_size_kb", "32768");
        set("tracing_on", "1");
        let item = Item::TopTracer {
            tracefs: tracefs.clone(),
            clock: "local".into(),
            size_kb: "1408".into(),
            on: "0".into(),
        };
        let held = Live {
            queues: Vec::new(),
            top_tracer: true,
        };
        assert!(undo(&item, 1, &held).unwrap().is_empty());
        assert_eq!(
            get("current_tracer"),
            "blk\n",
            "a live run's tracer was taken"
        );
        let done = undo(&item, 1, &Live::default()).unwrap();
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(get("current_tracer"), "nop");
        assert_eq!(get("trace_clock"), "local");
        assert_eq!(get("buffer_size_kb"), "1408");
        assert_eq!(get("tracing_on"), "0");
        // Someone else's tracer since: left alone.
        set("current_tracer", "function\n");
        assert!(undo(&item, 1, &Live::default()).unwrap().is_empty());
        assert_eq!(get("current_tracer"), "function\n");
    }
}
