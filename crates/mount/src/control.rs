//! The sysfs-like control directory, `MOUNTPOINT/.elevator/`:
//!
//! | file | read | write |
//! |---|---|---|
//! | `scheduler` | every policy, the running one in brackets, as `/sys/block/<dev>/queue/scheduler` | a policy's name: switch to it (tunables back to its defaults, as the kernel does) |
//! | `iosched/<tunable>` | the value, in the unit `elevator list` shows | an integer: set it |
//! | `stat` | the 17 counters of `/sys/block/<dev>/stat` | (read-only) |
//!
//! The directory shadows a `.elevator` in the backing directory's root, which stays untouched.

use std::sync::{Arc, Mutex};

use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::{GroupTree, Settings, Tunable, TunableError};
use elevator_real::submit::{Handle, SchedFactory};

use crate::classify::Classifier;

/// The control directory's name in the root of the mount.
pub const DIR_NAME: &str = ".elevator";

/// Inode of `.elevator`.
pub const INO_DIR: u64 = 2;
/// Inode of `.elevator/scheduler`.
pub const INO_SCHEDULER: u64 = 3;
/// Inode of `.elevator/stat`.
pub const INO_STAT: u64 = 4;
/// Inode of `.elevator/iosched`.
pub const INO_IOSCHED: u64 = 5;
/// Inode of the first tunable file; tunable `i` of the running policy is `INO_TUNABLE + i`.
pub const INO_TUNABLE: u64 = 1000;
/// One past the last control inode; backing files get inodes from here up.
pub const INO_END: u64 = 2000;

/// One node of the control tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// A directory (`.elevator`, `iosched`).
    Dir,
    /// A read-write file.
    File {
        /// Whether writes are accepted.
        writable: bool,
    },
}

/// Whether `ino` belongs to the control tree.
pub fn is_control(ino: u64) -> bool {
    (INO_DIR..INO_END).contains(&ino)
}

/// The policies' state the control files show and change.
pub struct Control {
    handle: Handle,
    classifier: Arc<Classifier>,
    /// The backing device's `queue/rotational`, given to every policy switched to.
    rotational: Option<bool>,
    state: Mutex<State>,
}

struct State {
    info: SchedulerSpec,
    settings: Settings,
}

/// Why a control write was refused (an errno for the writer, a message for the log).
#[derive(Debug)]
pub struct Refused {
    /// The errno the write returns.
    pub errno: i32,
    /// What was wrong.
    pub message: String,
}

fn invalid(message: String) -> Refused {
    Refused {
        errno: libc::EINVAL,
        message,
    }
}

/// A factory building `info` with `settings` over `tree`, for the engine thread.
pub fn factory(info: SchedulerSpec, settings: Settings, tree: GroupTree) -> SchedFactory {
    Box::new(move || {
        info.validate(&settings)?;
        info.build(&settings, &tree)
    })
}

impl Control {
    /// Control over the engine behind `handle`, running `info` with `settings`, on a device
    /// whose `queue/rotational` is `rotational` (see [`SchedulerSpec::on_device`]).
    pub fn new(
        handle: Handle,
        classifier: Arc<Classifier>,
        info: SchedulerSpec,
        settings: Settings,
        rotational: Option<bool>,
    ) -> Control {
        Control {
            handle,
            classifier,
            rotational,
            state: Mutex::new(State { info, settings }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rebuild the running policy with the same settings over the classifier's current
    /// group tree (after a new group appeared).
    pub fn rebuild(&self) -> Result<(), TunableError> {
        let st = self.lock();
        let f = factory(st.info, st.settings.clone(), self.classifier.tree());
        // Holding the lock keeps a concurrent switch from interleaving with this one.
        self.handle.set_scheduler(f)
    }

    /// The running policy's tunables.
    pub fn tunables(&self) -> &'static [Tunable] {
        self.lock().info.tunables
    }

    /// The node at `ino`, if it exists now.
    pub fn node(&self, ino: u64) -> Option<Node> {
        match ino {
            INO_DIR | INO_IOSCHED => Some(Node::Dir),
            INO_SCHEDULER => Some(Node::File { writable: true }),
            INO_STAT => Some(Node::File { writable: false }),
            i if i >= INO_TUNABLE && ((i - INO_TUNABLE) as usize) < self.tunables().len() => {
                Some(Node::File { writable: true })
            }
            _ => None,
        }
    }

    /// The child `name` of control directory `parent`.
    pub fn lookup(&self, parent: u64, name: &str) -> Option<u64> {
        self.entries(parent)
            .into_iter()
            .find(|(_, n)| n == name)
            .map(|(i, _)| i)
    }

    /// The children of control directory `dir`, as (inode, name).
    pub fn entries(&self, dir: u64) -> Vec<(u64, String)> {
        match dir {
            INO_DIR => vec![
                (INO_SCHEDULER, "scheduler".into()),
                (INO_IOSCHED, "iosched".into()),
                (INO_STAT, "stat".into()),
            ],
            INO_IOSCHED => self
                .tunables()
                .iter()
                .enumerate()
                .map(|(i, t)| (INO_TUNABLE + i as u64, t.name.to_string()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What reading file `ino` gives.
    pub fn read(&self, ino: u64) -> Option<String> {
        match ino {
            INO_SCHEDULER => {
                let running = self.lock().info.name;
                let names: Vec<String> = registry::all()
                    .iter()
                    .map(|i| {
                        if i.name == running {
                            format!("[{}]", i.name)
                        } else {
                            i.name.to_string()
                        }
                    })
                    .collect();
                let mut line = names.join(" ");
                if !registry::all().iter().any(|i| i.name == running) {
                    line.push_str(&format!(" [{running}]"));
                }
                Some(line + "\n")
            }
            INO_STAT => Some(self.handle.stats().to_string()),
            i if i >= INO_TUNABLE => {
                let st = self.lock();
                let t = st.info.tunables.get((i - INO_TUNABLE) as usize)?;
                Some(format!("{}\n", st.settings.get(st.info.tunables, t.name)))
            }
            _ => None,
        }
    }

    /// Apply a write of `data` to file `ino`.
    pub fn write(&self, ino: u64, data: &[u8]) -> Result<(), Refused> {
        let text = std::str::from_utf8(data)
            .map_err(|_| invalid("not UTF-8".into()))?
            .trim();
        match ino {
            INO_SCHEDULER => self.switch(text),
            i if i >= INO_TUNABLE => {
                let mut st = self.lock();
                let Some(t) = st.info.tunables.get((i - INO_TUNABLE) as usize) else {
                    return Err(Refused {
                        errno: libc::ENOENT,
                        message: "no such tunable".into(),
                    });
                };
                let value: i64 = text
                    .parse()
                    .map_err(|_| invalid(format!("{}: {text:?} is not an integer", t.name)))?;
                self.handle
                    .set_tunable(t.name, value)
                    .map_err(|e| invalid(e.to_string()))?;
                st.settings.set(t.name, value);
                Ok(())
            }
            _ => Err(Refused {
                errno: libc::EACCES,
                message: "read-only".into(),
            }),
        }
    }

    fn switch(&self, name: &str) -> Result<(), Refused> {
        let info =
            registry::find(name).ok_or_else(|| invalid(format!("no scheduler named {name:?}")))?;
        let mut st = self.lock();
        // Tunables back to the policy's defaults, as the kernel does; the device's rotational
        // flag is the queue's, not a tunable, so it stays.
        let settings = info.on_device(Settings::new(), self.rotational);
        let f = factory(info, settings.clone(), self.classifier.tree());
        self.handle
            .set_scheduler(f)
            .map_err(|e| invalid(e.to_string()))?;
        st.info = info;
        st.settings = settings;
        Ok(())
    }
}
