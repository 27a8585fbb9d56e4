//! `elevator drive`: show built-in drives, import DiskSim drive models.

use anyhow::{Context, Result};
use elevator_sim::hdd::seek::SeekCurve;
use elevator_sim::hdd::Hdd;
use elevator_sim::DriveModel;
use std::path::PathBuf;

use crate::output::say;

/// Drive specs: show one, or convert a DiskSim model to our TOML.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `drive` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print a drive's spec (built-in name or TOML file) with derived figures.
    Show {
        /// Built-in name (see `elevator list`) or a TOML file.
        name: String,
    },
    /// Convert a DiskSim 4.0 `.parv` (with its .diskspecs, .model, .seek) to a drive TOML.
    ImportDisksim {
        /// The `.parv` file; files it names resolve next to it.
        parv: PathBuf,
        /// Write the TOML here instead of standard output.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Show { name } => {
            let spec = match DriveModel::resolve(&name).map_err(|e| anyhow::anyhow!("{e}"))? {
                DriveModel::Hdd(spec) => *spec,
                DriveModel::Ssd(spec) => {
                    say!("# {}", spec.description);
                    say!(
                        "# capacity {} sectors ({:.2} GB), {} flash planes",
                        spec.capacity_sectors(),
                        spec.capacity_sectors() as f64 * 512.0 / 1e9,
                        spec.planes()
                    );
                    crate::output::say_str(&spec.to_toml());
                    return Ok(());
                }
            };
            let hdd = Hdd::new(spec.clone());
            let g = hdd.geometry();
            let seek = SeekCurve::new(&spec.seek.curve);
            say!("# {}", spec.description);
            say!(
                "# capacity {} sectors ({:.2} GB), {} rpm ({:.3} ms per revolution), {} zones",
                g.blocks,
                g.blocks as f64 * 512.0 / 1e9,
                spec.rpm,
                hdd.period_ms(),
                spec.layout.zones.len()
            );
            say!(
                "# seek: 1 cylinder {:.3} ms, average (random) {:.3} ms, full stroke {:.3} ms",
                seek.time(1),
                seek.average(spec.cylinders),
                seek.time(spec.cylinders.saturating_sub(1))
            );
            crate::output::say_str(&spec.to_toml());
        }
        Command::ImportDisksim { parv, output } => {
            if let Some(out) = &output {
                // `-o` onto the `.parv` (or a `.diskspecs`, `.model` or `.seek` beside it,
                // which it names) overwrote the model being imported.
                use super::common::{Input, OutputOpts, Supported};
                let mut inputs = vec![Input::new("the .parv file", &parv)];
                let stem = parv.file_stem().map(|s| s.to_string_lossy().into_owned());
                let dir = parv
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(std::path::Path::new("."));
                if let (Some(stem), Ok(rd)) = (stem, std::fs::read_dir(dir)) {
                    for e in rd.flatten().take(10_000) {
                        if e.file_name().to_string_lossy().starts_with(&stem) {
                            inputs.push(Input::new("a DiskSim file beside the .parv", e.path()));
                        }
                    }
                }
                OutputOpts::default().check(
                    "drive import-disksim",
                    Supported::default(),
                    &[],
                    &inputs,
                    &[("--output", out.as_path())],
                )?;
            }
            let spec = elevator_sim::disksim::import(&parv).map_err(|e| anyhow::anyhow!("{e}"))?;
            let text = format!(
                "# Imported by `elevator drive import-disksim {}`.\n# Derived from DiskSim 4.0 data: keep DiskSim's copyright notice with this file.\n{}",
                parv.display(),
                spec.to_toml()
            );
            match output {
                Some(path) => elevator_workload::input::write_output(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => crate::output::say_str(&text),
            }
        }
    }
    Ok(())
}
