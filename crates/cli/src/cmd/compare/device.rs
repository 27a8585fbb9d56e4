//! The device `elevator compare` runs on, set up and put back: a direct-io loop device over a
//! scratch file, or a scratch file on the disk under a directory; and the kernel's scheduler of
//! the block device whose queue the I/O meets, switched per run and restored at the end.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use elevator_real::leftovers::{self, Claim, Item};
use elevator_real::tool::output_of;

/// Where the runs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum On {
    /// A loop device with direct I/O (`losetup --direct-io=on`, 4 KiB sectors) over a scratch
    /// file; the kernel's scheduler is the loop device's.
    Loop,
    /// A scratch file, read and written with O_DIRECT; the kernel's scheduler is that of the
    /// disk holding the file system (switched for the runs, restored at the end).
    File,
}

/// The scratch target, the scheduler switch, and what to undo.
pub struct Device {
    /// What fio and the executor open.
    pub target: PathBuf,
    /// The block device whose scheduler the runs switch (`loop0`, `vda`).
    pub queue: String,
    /// A human description for the report's header.
    pub describe: String,
    backing: PathBuf,
    loop_dev: Option<PathBuf>,
    saved_sched: Option<String>,
    /// The marker naming what this run creates, for the next run if this one is killed
    /// ([`leftovers`]); dropped last, after `Device`'s `drop` undid it all.
    claim: Claim,
}

fn sched_path(queue: &str) -> PathBuf {
    Path::new("/sys/block").join(queue).join("queue/scheduler")
}

/// The kernel schedulers `queue` offers and the one in use (`[mq-deadline] kyber bfq none`).
pub fn available(queue: &str) -> anyhow::Result<(Vec<String>, String)> {
    let p = sched_path(queue);
    let text = std::fs::read_to_string(&p).with_context(|| format!("read {}", p.display()))?;
    use elevator_workload::traces::ftrace::recording::{bracketed_choice, offered_choices};
    let all = offered_choices(&text)
        .into_iter()
        .map(String::from)
        .collect();
    let current = bracketed_choice(&text).unwrap_or_default().to_string();
    Ok((all, current))
}

impl Device {
    /// A scratch target of `bytes` in `workdir`, per `on`.
    /// What an earlier run killed outright left (its loop device and scratch image, a disk's
    /// scheduler it switched) is cleaned first, and what this one creates is noted before it
    /// is created ([`leftovers`]).
    pub fn set_up(on: On, workdir: &Path, bytes: u64) -> anyhow::Result<Device> {
        leftovers::clean_dead(&mut |m| crate::output::tell!("elevator compare: {m}"))
            .map_err(anyhow::Error::msg)?;
        let mut claim = Claim::take("compare").map_err(anyhow::Error::msg)?;
        let workdir = std::fs::canonicalize(workdir)
            .with_context(|| format!("--workdir {}", workdir.display()))?;
        let backing = workdir.join(format!("elevator-compare.{}.img", std::process::id()));
        claim
            .note(Item::Image {
                path: backing.clone(),
                id: None,
            })
            .map_err(anyhow::Error::msg)?;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&backing)
            .with_context(|| format!("create the scratch file {}", backing.display()))?;
        claim.created(&backing).map_err(anyhow::Error::msg)?;
        let mut dev = Device {
            target: backing.clone(),
            queue: String::new(),
            describe: String::new(),
            backing: backing.clone(),
            loop_dev: None,
            saved_sched: None,
            claim,
        };
        f.set_len(bytes)
            .with_context(|| format!("size {} to {bytes} bytes", backing.display()))?;
        drop(f);
        match on {
            On::Loop => {
                let out = output_of(
                    Command::new("losetup")
                        .args([
                            "--find",
                            "--show",
                            "--direct-io=on",
                            "--sector-size",
                            "4096",
                        ])
                        .arg(&backing),
                )
                .map_err(anyhow::Error::msg)?;
                let loop_dev = PathBuf::from(out);
                dev.loop_dev = Some(loop_dev.clone());
                let name = loop_dev
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let dio = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
                    .unwrap_or_default();
                if dio.trim() != "1" {
                    bail!("{}: the loop device is not doing direct I/O (its file system may not support O_DIRECT)", loop_dev.display());
                }
                dev.describe = format!(
                    "direct-io loop device {} (4 KiB sectors) over {}",
                    loop_dev.display(),
                    backing.display()
                );
                dev.target = loop_dev;
                dev.queue = name;
            }
            On::File => {
                let source = output_of(
                    Command::new("findmnt")
                        .args(["-no", "SOURCE", "--target"])
                        .arg(&workdir),
                )
                .map_err(anyhow::Error::msg)?;
                let parent = output_of(Command::new("lsblk").args(["-no", "PKNAME", &source]))
                    .unwrap_or_default();
                let parent = parent.lines().next().unwrap_or("").trim().to_string();
                dev.queue = if parent.is_empty() {
                    Path::new(&source)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                } else {
                    parent
                };
                if !sched_path(&dev.queue).exists() {
                    bail!(
                        "{}: no I/O scheduler to switch for {source} (block device {:?})",
                        workdir.display(),
                        dev.queue
                    );
                }
                dev.describe = format!(
                    "file {} (O_DIRECT) on {source}, disk {}",
                    backing.display(),
                    dev.queue
                );
            }
        }
        let (_, current) = available(&dev.queue)?;
        if on == On::File {
            // The loop device's scheduler goes with the loop device; a disk's stays switched.
            dev.claim
                .note(Item::Scheduler {
                    queue: dev.queue.clone(),
                    restore: current.clone(),
                })
                .map_err(anyhow::Error::msg)?;
        }
        dev.saved_sched = Some(current);
        Ok(dev)
    }

    /// Switch the queue's kernel scheduler.
    pub fn set_scheduler(&self, name: &str) -> anyhow::Result<()> {
        let p = sched_path(&self.queue);
        std::fs::write(&p, name)
            .with_context(|| format!("set the kernel scheduler {name} in {}", p.display()))?;
        let (_, now) = available(&self.queue)?;
        if now != name {
            bail!(
                "{}: asked for {name}, the kernel reports {now}",
                p.display()
            );
        }
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Some(s) = self.saved_sched.take() {
            let _ = std::fs::write(sched_path(&self.queue), s);
        }
        if let Some(l) = self.loop_dev.take() {
            let _ = Command::new("losetup").arg("-d").arg(&l).status();
        }
        let _ = std::fs::remove_file(&self.backing);
    }
}
