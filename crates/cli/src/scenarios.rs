//! Built-in scenarios, embedded from the repository's scenarios/ folder.

use std::path::Path;

use elevator_sim::scenario::Scenario;

/// (name, TOML text) of every built-in scenario (embedded by the library).
pub use elevator_campaign::scenarios::BUILTIN;

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
        // A link to itself or to nowhere is read and told as such, not as missing.
        p.symlink_metadata().is_ok(),
        "{name_or_path:?} is neither a built-in scenario ({}) nor a file{}",
        BUILTIN
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        elevator_workload::suggest::did_you_mean(name_or_path, BUILTIN.iter().map(|(n, _)| *n))
    );
    Scenario::load(p).map_err(anyhow::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_workload::spec::JobSpec;

    fn job(scenario: &str, name: &str) -> JobSpec {
        let s = builtin(scenario).expect("built in").expect("parses");
        s.jobs
            .into_iter()
            .find(|j| j.name == name)
            .unwrap_or_else(|| panic!("{scenario} has no job {name}"))
            .spec
    }

    #[test]
    fn mortons_scenarios_run_the_same_compile_and_place_the_writer_alike() {
        let compile = job("anticipatory", "compile");
        assert_eq!(job("anticipatory-no-write", "compile"), compile);
        assert_eq!(job("anticipatory-2.4", "compile"), compile);
        // 2.4.20 differs only in what the block layer lets the writer queue.
        let (JobSpec::StreamWriter(w25), JobSpec::StreamWriter(w24)) = (
            job("anticipatory", "writer"),
            job("anticipatory-2.4", "writer"),
        ) else {
            panic!("the writers are stream writers");
        };
        assert_eq!(
            (w24.nr_requests, w24.request_bytes, w24.batch),
            (1024, 4096, 512)
        );
        assert_eq!((w25.nr_requests, w25.request_bytes), (128, 128 * 1024));
        assert_eq!(
            (w24.offset_frac, w24.size_frac),
            (w25.offset_frac, w25.size_frac)
        );
    }
}
