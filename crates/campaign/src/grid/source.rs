//! Where a grid's cells get their jobs ([`Source`]: a scenario, a fio job file or a block
//! trace), and a source with a cell's drive, job-field and io controller axes applied: a
//! scenario's text edited and parsed again ([`ScenarioSource::cell`]), a job file's or a
//! trace's group tree set ([`apply_controls`]).

use std::path::PathBuf;

use elevator_core::{GroupTree, Nanos, SECTOR_BYTES};
use elevator_sim::scenario::Scenario;
use elevator_sim::DriveModel;
use elevator_workload::fio_file::FioFile;
use elevator_workload::traces::OpenOptions;

use super::axis::{control_key, show};
use super::{GridSpec, Plan};
use crate::Error;

/// Where a grid's cells get their jobs.
#[derive(Clone, Debug)]
pub(super) enum Source {
    /// A scenario.
    Scenario(ScenarioSource),
    /// A fio job file on a simulated drive.
    Fio { file: Box<FioFile>, drive: String },
    /// A block trace replayed on a simulated drive.
    Trace {
        paths: Vec<PathBuf>,
        opts: OpenOptions,
        drive: String,
    },
}

/// A scenario as a grid's source: its text (edited per cell by drive, job and io controller
/// axes) and the base parsed from it.
#[derive(Clone, Debug)]
pub(super) struct ScenarioSource {
    /// The scenario file's text.
    pub(super) text: String,
    /// Where the text came from, for errors.
    pub(super) origin: String,
    /// The directory its drive paths resolve against.
    pub(super) dir: Option<PathBuf>,
    /// The text parsed, with the spec's wake-up.
    pub(super) base: Box<Scenario>,
}

impl ScenarioSource {
    /// The text parsed once (with the spec's wakeup), so a bad scenario fails before any
    /// cell runs; `ios` set to the I/Os a run of it implies.
    pub(super) fn new(
        text: String,
        origin: String,
        dir: Option<PathBuf>,
        spec: &GridSpec,
        ios: &mut u64,
    ) -> Result<ScenarioSource, Error> {
        let mut base = Scenario::parse(&text, &origin, dir.as_deref())?;
        *ios = base.check_work(spec.max_ios.unwrap_or(crate::fio::MAX_SIMULATED_IOS))?;
        if let Some(us) = spec.wakeup_us {
            base.wakeup = Nanos::from_us(u64::from(us));
        }
        Ok(ScenarioSource {
            text,
            origin,
            dir,
            base: Box::new(base),
        })
    }

    /// Cell `p`'s scenario: the base's when `p` changes none of its drive, job fields and
    /// controls, else its text parsed again with them ([`ScenarioSource::edited`]), keeping
    /// the base's wake-up.
    pub(super) fn cell(&self, p: &Plan) -> Result<Scenario, Error> {
        if p.job_fields.is_empty() && p.drive.is_none() && p.controls.is_empty() {
            return Ok((*self.base).clone());
        }
        let mut s = self.edited(p.drive.as_deref(), &p.job_fields, &p.controls)?;
        s.wakeup = self.base.wakeup;
        Ok(s)
    }
}

/// Set the io controller files `controls` (group path, file, value) in `groups`, whose
/// groups came from `what` (named in errors), and check the tree as a scenario's is checked
/// ([`elevator_core::qos::validate`]).
pub(super) fn apply_controls(
    groups: &mut GroupTree,
    controls: &[(String, String, toml::Value)],
    what: &str,
) -> Result<(), Error> {
    for (path, file, value) in controls {
        let arg = || format!("--sweep {}", control_key(path, file));
        let text = show(value);
        let int = || -> Result<u32, Error> {
            value
                .as_integer()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| Error::arg(arg(), format!("{text}: not a count")))
        };
        if file.starts_with("io.cost.") {
            let mut cost = groups.io_cost().clone();
            if file == "io.cost.qos" {
                cost.qos = Some(text.clone());
            } else {
                cost.model = Some(text.clone());
            }
            groups.set_io_cost(cost);
            continue;
        }
        let id = groups
            .lookup(path)
            .ok_or_else(|| Error::arg(arg(), format!("{what} has no group {path:?}")))?;
        let io = groups.io_mut(id);
        match file.as_str() {
            "io.weight" => io.weight = Some(int()?),
            "io.bfq.weight" => io.bfq_weight = Some(int()?),
            "io.latency" => io.latency_target = Some(Nanos::from_us(u64::from(int()?))),
            "io.max" => {
                io.max = elevator_core::group::IoMax::parse(&text)
                    .map_err(|e| Error::arg(arg(), format!("{text:?}: {e}")))?
            }
            other => unreachable!("parse_axis takes no {other}"),
        }
    }
    elevator_core::qos::validate(groups).map_err(|e| Error::arg("--sweep", e.to_string()))
}

/// Check one value of an io controller axis before any cell runs: the group exists in the
/// source, and the value is one its controller takes.
pub(super) fn check_control(
    source: &Source,
    spec: &GridSpec,
    path: &str,
    file: &str,
    value: &toml::Value,
) -> Result<(), Error> {
    let one = [(path.to_string(), file.to_string(), value.clone())];
    match source {
        Source::Scenario(s) => {
            if !file.starts_with("io.cost.") && s.base.groups.lookup(path).is_none() {
                return Err(Error::arg(
                    format!("--sweep {}", control_key(path, file)),
                    format!("{} has no group {path:?}", s.origin),
                ));
            }
            s.edited(None, &[], &one).map(|_| ())
        }
        Source::Fio { file: f, drive } => {
            let model = DriveModel::resolve(drive)?;
            let capacity = model.device().capacity_sectors() * SECTOR_BYTES;
            let mut groups = GroupTree::new();
            crate::fio::build_jobs(f, capacity, spec.seed.unwrap_or(1), &mut groups)?;
            apply_controls(&mut groups, &one, "the job file")
        }
        Source::Trace { .. } => apply_controls(
            &mut GroupTree::new(),
            &one,
            "a trace (replayed in the root)",
        ),
    }
}

impl ScenarioSource {
    /// The scenario with its `drive` replaced, `fields` set in its jobs and `controls` (group
    /// path, io file, value) set in its groups (a `[[group]]` table added for a group only its
    /// jobs name) or on the root (`io.cost.*`), parsed again from its edited text (so the
    /// scenario's own drive settings, such as `write_cache`, still apply, and a bad value is
    /// reported as the scenario's own would be).
    fn edited(
        &self,
        drive: Option<&str>,
        fields: &[(String, String, toml::Value)],
        controls: &[(String, String, toml::Value)],
    ) -> Result<Scenario, Error> {
        let (text, dir, origin) = (&self.text, self.dir.as_deref(), &self.origin);
        let mut doc: toml::Table =
            toml::from_str(text).map_err(|e| Error::arg(origin, e.to_string()))?;
        let mut what: Vec<String> = Vec::new();
        if let Some(d) = drive {
            doc.insert("drive".into(), toml::Value::String(d.to_string()));
            what.push(format!("drive={d}"));
        }
        for (job, field, value) in fields {
            let arg = format!("--sweep job.{job}.{field}");
            let jobs = doc
                .get_mut("job")
                .and_then(toml::Value::as_array_mut)
                .ok_or_else(|| Error::arg(&arg, format!("{origin} has no jobs")))?;
            let t = jobs
                .iter_mut()
                .filter_map(toml::Value::as_table_mut)
                .find(|t| t.get("name").and_then(toml::Value::as_str) == Some(job.as_str()))
                .ok_or_else(|| Error::arg(&arg, format!("{origin} has no job {job:?}")))?;
            t.insert(field.clone(), value.clone());
        }
        what.extend(
            fields
                .iter()
                .map(|(j, f, v)| format!("job.{j}.{f}={}", show(v))),
        );
        for (path, file, value) in controls {
            what.push(format!("{}={}", control_key(path, file), show(value)));
            let (key, v) = match file.as_str() {
                "io.cost.qos" => ("io_cost_qos", value.clone()),
                "io.cost.model" => ("io_cost_model", value.clone()),
                "io.weight" => ("io_weight", value.clone()),
                "io.bfq.weight" => ("io_bfq_weight", value.clone()),
                "io.latency" => (
                    "io_latency_us",
                    toml::Value::Float(value.as_integer().unwrap_or(0) as f64),
                ),
                _ => ("io_max", value.clone()),
            };
            if file.starts_with("io.cost.") {
                doc.insert(key.into(), v);
                continue;
            }
            let groups = doc
                .entry("group")
                .or_insert_with(|| toml::Value::Array(Vec::new()))
                .as_array_mut()
                .ok_or_else(|| Error::arg(origin, "`group` is not an array of tables"))?;
            let at = groups
                .iter()
                .position(|g| g.get("path").and_then(toml::Value::as_str) == Some(path.as_str()));
            let at = match at {
                Some(i) => i,
                None => {
                    let mut t = toml::Table::new();
                    t.insert("path".into(), toml::Value::String(path.clone()));
                    groups.push(toml::Value::Table(t));
                    groups.len() - 1
                }
            };
            if let Some(t) = groups[at].as_table_mut() {
                t.insert(key.into(), v);
            }
        }
        let text = toml::to_string(&doc).map_err(|e| Error::arg(origin, e.to_string()))?;
        Ok(Scenario::parse(
            &text,
            &format!("{origin} with {}", what.join(", ")),
            dir,
        )?)
    }
}
