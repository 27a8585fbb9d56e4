//! The I/O priority of each recorded process's io_context, as bfq reads it.
//!
//! Linux 6.18's bfq takes a queue's class and level from the task's io_context, not from
//! the request: `bfq_check_ioprio_change` (from `bfq_init_rq`, at each request's setup) copies
//! `ioc->ioprio` into the `bfq_io_cq` (`bic->ioprio`), `bfq_get_queue` picks the async queue
//! by it and `bfq_init_bfqq` -> `bfq_set_next_ioprio_data` gives a new queue its class and
//! weight from it. A request's own priority (`rq->ioprio`, what `block_rq_insert` prints:
//! fio's `cmdprio_*` sets it per I/O through the iocb's or the sqe's `ioprio`) is not read
//! by bfq (mq-deadline reads it: `dd_insert_request`).
//!
//! The trace does not show `ioc->ioprio`; the job file does: fio sets a job's `prioclass`
//! and `prio` on its process with `ioprio_set(IOPRIO_WHO_PROCESS, 0, ...)` before the job's
//! first I/O, and io_uring's workers share that io_context (`CLONE_IO`:
//! [`super::requests::io_uring_owner`]). So each context's priority is fixed for the whole
//! recording, and the kernel's reaction to a change (`bfq_check_ioprio_change` moves the
//! context to the async queue of the new priority, and the sync queue takes it at its next
//! activation, `entity.prio_changed`) never comes into play here.

use std::collections::HashMap;
use std::path::Path;

use elevator_core::{IoClass, IoPrio};

use crate::fio_ini::Item;
use crate::input::InputError;

/// A section's `prioclass`, `prio` and `nice` when it sets them, and whether it sets a
/// per-I/O priority (`cmdprio*`).
type ClassLevel = (Option<u8>, Option<u8>, Option<i8>, bool);

/// Each job's process priority by job name: from its `prioclass` and `prio` (its own or a
/// `[global]` section's above it, as in fio). `prio` without `prioclass`, or with class 0, is
/// best effort (fio's `ioprio_value` sets class 0 so), `prioclass` without `prio` level 0, the idle class level 7
/// (`bfq_set_next_ioprio_data`). A job that sets neither but gives its I/Os priorities of their
/// own (`cmdprio*`) has the default context priority, best effort at its `nice` level
/// (`task_nice_ioprio`: (nice + 20) / 5, 4 at nice 0). A job that sets none of these is left
/// out: its requests carry what the kernel derived from the process (`bio_set_ioprio` ->
/// `get_current_ioprio`), which the replay keeps. `path` names the file in errors.
pub fn job_priorities(path: &Path, text: &str) -> Result<HashMap<String, IoPrio>, InputError> {
    let mut out = HashMap::new();
    // What [global] sections set so far, and the current job.
    let mut global_set: ClassLevel = (None, None, None, false);
    let mut job: Option<(String, ClassLevel)> = None;
    let mut finish = |job: Option<(String, ClassLevel)>| {
        if let Some((name, (class, level, nice, cmdprio))) = job {
            if class.is_some() || level.is_some() {
                out.insert(name, prio_of(class.unwrap_or(2), level.unwrap_or(0)));
            } else if cmdprio {
                // nice is -20..=19: the level is 0..=7.
                let level = (i16::from(nice.unwrap_or(0)) + 20) / 5;
                out.insert(name, prio_of(2, level as u8));
            }
        }
    };
    for e in crate::fio_ini::entries(text.as_bytes()) {
        let (key, value) = match e.item {
            Ok(Item::Section { name, global }) => {
                finish(job.take());
                if !global {
                    job = Some((name.to_string(), global_set));
                }
                continue;
            }
            Ok(Item::Option { key, value }) => (key, value.unwrap_or("")),
            // Not a section and no option this reader takes.
            Ok(Item::Unclosed(_)) | Err(_) => continue,
        };
        let slot = match &mut job {
            Some((_, p)) => p,
            None => &mut global_set,
        };
        let number = |min: i8, max: i8| {
            value
                .parse::<i8>()
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| {
                    InputError::at_line(
                        path,
                        e.line,
                        key,
                        format!("{value:?} is not a number from {min} to {max}"),
                    )
                })
        };
        match key {
            "prioclass" => slot.0 = Some(number(0, 3)? as u8),
            "prio" => slot.1 = Some(number(0, 7)? as u8),
            "nice" => slot.2 = Some(number(-20, 19)?),
            k if k.starts_with("cmdprio") => slot.3 = true,
            _ => {}
        }
    }
    finish(job.take());
    Ok(out)
}

/// The names of the job file's job sections (its global sections left out), as fio names
/// its jobs.
pub fn job_sections(text: &str) -> std::collections::HashSet<String> {
    crate::fio_ini::entries(text.as_bytes())
        .filter_map(|e| match e.item {
            Ok(Item::Section {
                name,
                global: false,
            }) => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

/// The priority bfq gives a context of ioprio class `class` (1 real time, 2 best effort, 3
/// idle; 0, none, is the nice-0 default, best effort 4) and level `level`.
fn prio_of(class: u8, level: u8) -> IoPrio {
    match class {
        1 => IoPrio {
            class: IoClass::RealTime,
            level,
        },
        3 => IoPrio {
            class: IoClass::Idle,
            level: 7,
        },
        // fio's `ioprio_value` (os/os-linux.h) sets class 0 as best effort, at the level given.
        _ => IoPrio {
            class: IoClass::BestEffort,
            level,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_job_takes_its_prioclass_and_prio_with_globals_and_per_io_options_ignored() {
        let text = "[global]\nprio=3\n[a]\nprioclass=1\nprio=0\ncmdprio_class=3\ncmdprio=7\n\
                    [b]\nprioclass=3\n[c]\nrw=read\n[globalx]\nprioclass=2\n[d]\n";
        let p = job_priorities(Path::new("j.fio"), text).unwrap();
        let rt0 = IoPrio {
            class: IoClass::RealTime,
            level: 0,
        };
        assert_eq!(p["a"], rt0);
        assert_eq!(p["b"].class, IoClass::Idle);
        // [c] inherits the global prio 3 (best effort: no class given).
        assert_eq!(
            p["c"],
            IoPrio {
                class: IoClass::BestEffort,
                level: 3
            }
        );
        assert_eq!(p["d"].class, IoClass::BestEffort);
        // Class 0 is best effort at the level given (fio's `ioprio_value`), not the default.
        let zero = "[a]\nprioclass=0\nprio=6\n[b]\nprioclass=0\n";
        let zero = job_priorities(Path::new("j.fio"), zero).unwrap();
        let be = |level| IoPrio {
            class: IoClass::BestEffort,
            level,
        };
        assert_eq!((zero["a"], zero["b"]), (be(6), be(0)));
        let none = job_priorities(Path::new("j.fio"), "[a]\nrw=read\n").unwrap();
        assert!(none.is_empty());
        // Per-I/O priorities alone: the context has the nice-derived default.
        let cmd = "[a]\ncmdprio_percentage=30\n[b]\nnice=-20\ncmdprio_class=1\n";
        let cmd = job_priorities(Path::new("j.fio"), cmd).unwrap();
        assert_eq!(cmd["a"], IoPrio::default());
        assert_eq!(
            cmd["b"],
            IoPrio {
                class: IoClass::BestEffort,
                level: 0
            }
        );
    }

    #[test]
    fn a_bad_priority_names_the_file_line_and_option() {
        let e = job_priorities(Path::new("j.fio"), "[a]\nprio=9\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("j.fio") && e.contains('2') && e.contains("prio"),
            "{e}"
        );
    }
}
