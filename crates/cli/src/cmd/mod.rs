//! One module per subcommand.

pub mod compare;
pub mod drive;
pub mod list;
pub mod mount;
pub mod replay;
pub mod run;
pub mod sim;
pub mod validate;

use anyhow::Context;
use elevator_core::Settings;

/// Parse `--set NAME=VALUE` pairs (shared by `sim` and `run`) into settings.
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
