//! Built-in scenarios, embedded from the repository's scenarios/ folder.

use std::path::Path;

use elevator_sim::scenario::Scenario;
use elevator_workload::input::InputError;

/// (name, TOML text) of every built-in scenario.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "anticipatory",
        include_str!("../../../scenarios/anticipatory.toml"),
    ),
    (
        "anticipatory-no-write",
        include_str!("../../../scenarios/anticipatory-no-write.toml"),
    ),
    (
        "anticipatory-2.4",
        include_str!("../../../scenarios/anticipatory-2.4.toml"),
    ),
];

/// The built-in scenario `name`, parsed.
pub fn builtin(name: &str) -> Option<Result<Scenario, InputError>> {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| Scenario::parse(text, &format!("builtin:{n}"), None))
}

/// The text of the built-in scenario `name` or of the scenario file at `name_or_path`, its
/// origin (`builtin:NAME` or the path) and the directory its drive paths resolve against.
pub fn source(
    name_or_path: &str,
) -> Result<(String, String, Option<std::path::PathBuf>), InputError> {
    if let Some((n, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return Ok((text.to_string(), format!("builtin:{n}"), None));
    }
    let p = Path::new(name_or_path);
    // A name that is there (a link to itself or to nowhere included) is read, so its own
    // error is told, not that nothing is there.
    if p.symlink_metadata().is_err() {
        return Err(InputError::new(
            name_or_path,
            format!(
                "neither a built-in scenario ({}) nor a file{}",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
                elevator_workload::suggest::did_you_mean(
                    name_or_path,
                    BUILTIN.iter().map(|(n, _)| *n)
                )
            ),
        ));
    }
    let text = elevator_workload::input::read_text(p, elevator_sim::MAX_SPEC_BYTES, "spec file")?;
    Ok((
        text,
        p.display().to_string(),
        p.parent().map(Path::to_path_buf),
    ))
}
