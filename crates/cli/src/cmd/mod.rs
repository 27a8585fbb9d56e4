//! One module per subcommand.

pub mod calibrate;
pub mod common;
pub mod compare;
pub mod drive;
pub mod emulate;
pub mod kernel_diff;
pub mod kernel_record;
pub mod list;
pub mod merge;
pub mod mount;
pub mod replay;
pub mod run;
pub mod run_blktrace;
pub mod sim;
pub mod sim_job;
pub mod validate;

#[cfg(test)]
mod differential_tests;

use anyhow::Context;
use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::Settings;

/// The schedulers `--sched` names, in order; an unknown name is an error naming it and the
/// known ones.
pub fn find_schedulers(names: &[String]) -> anyhow::Result<Vec<SchedulerSpec>> {
    names.iter().map(|name| find_scheduler(name)).collect()
}

/// The scheduler `--sched NAME` names (by name or alias); see [`find_schedulers`].
pub fn find_scheduler(name: &str) -> anyhow::Result<SchedulerSpec> {
    registry::find(name).with_context(|| {
        let known: Vec<&str> = registry::all().iter().map(|i| i.name).collect();
        format!(
            "--sched {name:?}: no such scheduler{} (known: {})",
            elevator_workload::suggest::scheduler(name),
            known.join(", ")
        )
    })
}

/// Parse `--set NAME=VALUE` pairs (shared by `sim` and `run`) into settings. `NAME` is a
/// tunable's sysfs name, for every scheduler that has it, or `SCHED.NAME` (e.g.
/// `kyber.read_lat_nsec`) for that scheduler only; see [`settings_for`].
pub fn parse_sets(sets: &[String]) -> anyhow::Result<Settings> {
    let mut s = Settings::new();
    for kv in sets {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--set {kv:?}: expected NAME=VALUE"))?;
        let v: i64 = v
            .trim()
            .parse()
            .with_context(|| format!("--set {kv:?}: {v:?} is not an integer"))?;
        s.set(k.trim(), v);
    }
    Ok(s)
}

/// The scheduler a scoped `--set SCHED.NAME` names, and `NAME`; `None` for a plain name.
fn scoped(key: &str) -> Option<(SchedulerSpec, &str)> {
    let (sched, name) = key.split_once('.')?;
    Some((registry::find(sched)?, name))
}

/// [`settings_for`], with `rotational` set from the device the run is on
/// ([`SchedulerSpec::on_device`]).
pub fn settings_on_device(
    info: &SchedulerSpec,
    extra: &Settings,
    rotational: Option<bool>,
) -> Settings {
    info.on_device(settings_for(info, extra), rotational)
}

/// The `--set` values that scheduler `info` takes: each plain `NAME` it has a tunable of, and
/// each `SCHED.NAME` whose `SCHED` is it (by name or alias; these win over plain ones).
pub fn settings_for(info: &SchedulerSpec, extra: &Settings) -> Settings {
    elevator_campaign::settings_for(info, extra)
}

/// The error of building scheduler `name` with the `--set` values it took (`given`): blamed on
/// `--set` only when some were given, else on the scheduler (or what the job file asks of it),
/// so an error never names a flag the user did not give.
pub fn blame_set(name: &str, given: &Settings, e: impl std::fmt::Display) -> anyhow::Error {
    if given.names().next().is_some() {
        anyhow::anyhow!("--set: scheduler {name}: {e}")
    } else {
        anyhow::anyhow!("scheduler {name}: {e}")
    }
}

/// Every `--set` must apply to at least one of `scheds`: a plain name to one that has the
/// tunable, a `SCHED.NAME` to a listed `SCHED` that has it.
pub fn check_sets(extra: &Settings, scheds: &[String]) -> anyhow::Result<()> {
    let infos: Vec<SchedulerSpec> = scheds.iter().filter_map(|n| registry::find(n)).collect();
    for k in extra.names() {
        match scoped(k) {
            Some((info, name)) => {
                anyhow::ensure!(
                    infos.iter().any(|i| i.name == info.name),
                    "--set {k}: {} is not among the schedulers run ({})",
                    info.name,
                    scheds.join(", ")
                );
                anyhow::ensure!(
                    info.has_tunable(name),
                    "--set {k}: {} has no tunable {name:?} (see `elevator list schedulers`)",
                    info.name
                );
            }
            None => anyhow::ensure!(
                infos.iter().any(|i| i.has_tunable(k)),
                "--set {k}: none of the schedulers {scheds:?} has a tunable of that name"
            ),
        }
    }
    Ok(())
}
