//! Built-in scenarios, embedded from the repository's scenarios/ folder.

use std::path::Path;

use elevator_sim::scenario::Scenario;

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
];

/// The built-in scenario `name`, parsed.
pub fn builtin(name: &str) -> Option<anyhow::Result<Scenario>> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(n, text)| {
        Scenario::parse(text, &format!("builtin:{n}"), None).map_err(anyhow::Error::from)
    })
}

/// A built-in scenario by name, or a scenario file by path.
pub fn load(name_or_path: &str) -> anyhow::Result<Scenario> {
    if let Some(s) = builtin(name_or_path) {
        return s;
    }
    let p = Path::new(name_or_path);
    anyhow::ensure!(
        p.exists(),
        "{name_or_path:?} is neither a built-in scenario ({}) nor a file",
        BUILTIN
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    );
    Scenario::load(p).map_err(anyhow::Error::from)
}
