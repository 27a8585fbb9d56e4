//! Which of the grid's `--set` tunables a scheduler takes: plain names for every scheduler
//! that has them, `SCHED.NAME` for one.

use elevator_core::registry::{self, SchedulerSpec};
use elevator_core::Settings;

use crate::Error;

/// The tunables of `extra` that scheduler `info` takes: each plain `NAME` it has a tunable
/// of, and each `SCHED.NAME` whose `SCHED` is it (by name or alias; these win).
pub fn settings_for(info: &SchedulerSpec, extra: &Settings) -> Settings {
    let scoped = |key: &str| -> Option<(SchedulerSpec, String)> {
        let (sched, name) = key.split_once('.')?;
        Some((registry::find(sched)?, name.to_string()))
    };
    let mut out = Settings::new();
    for k in extra
        .names()
        .filter(|k| scoped(k).is_none() && info.has_tunable(k))
    {
        out.set(k, extra.raw(k).unwrap_or_default());
    }
    for k in extra.names() {
        if let Some((i, name)) = scoped(k) {
            if i.name == info.name {
                out.set(&name, extra.raw(k).unwrap_or_default());
            }
        }
    }
    out
}

/// Every `set` must apply to at least one of `scheds`.
pub(crate) fn check_sets(extra: &Settings, scheds: &[String]) -> Result<(), Error> {
    let infos: Vec<SchedulerSpec> = scheds.iter().filter_map(|n| registry::find(n)).collect();
    for k in extra.names() {
        let arg = format!("--set {k}");
        match k.split_once('.') {
            Some((sched, name)) => {
                let info = registry::find(sched)
                    .ok_or_else(|| Error::arg(&arg, format!("no scheduler named {sched:?}")))?;
                if !infos.iter().any(|i| i.name == info.name) {
                    return Err(Error::arg(
                        arg,
                        format!(
                            "{} is not among the schedulers run ({})",
                            info.name,
                            scheds.join(", ")
                        ),
                    ));
                }
                if !info.has_tunable(name) {
                    return Err(Error::arg(
                        arg,
                        format!("{} has no tunable {name:?}", info.name),
                    ));
                }
            }
            None => {
                if !infos.iter().any(|i| i.has_tunable(k)) {
                    return Err(Error::arg(
                        arg,
                        format!("none of the schedulers {scheds:?} has a tunable of that name"),
                    ));
                }
            }
        }
    }
    Ok(())
}
