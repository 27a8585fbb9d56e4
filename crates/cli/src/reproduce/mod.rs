//! `elevator reproduce`: the seed documents' experiments, ours beside the published figures.

mod anticipatory;

use std::path::PathBuf;

/// Arguments of `elevator reproduce`.
#[derive(clap::Args)]
pub struct Args {
    /// Which experiment: anticipatory (Morton 2003), or all.
    #[arg(value_parser = ["anticipatory", "all"])]
    experiment: String,
    /// Write the rows as JSON (with `all`, one file per experiment: FILE gets the name
    /// inserted before its extension).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Run the experiment(s).
pub fn run(args: Args) -> anyhow::Result<()> {
    let all = args.experiment == "all";
    let json_for = |name: &str| {
        args.json.as_ref().map(|p| {
            if all {
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("out");
                let ext = p.extension().and_then(|s| s.to_str()).unwrap_or("json");
                p.with_file_name(format!("{stem}-{name}.{ext}"))
            } else {
                p.clone()
            }
        })
    };
    if all || args.experiment == "anticipatory" {
        anticipatory::run(json_for("anticipatory").as_deref())?;
    }
    Ok(())
}
