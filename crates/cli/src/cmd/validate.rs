//! `elevator validate`: replay DiskSim validation traces on our drive model and compare.

use anyhow::{bail, Context, Result};
use elevator_sim::hdd::{DriveSpec, Hdd};
use elevator_sim::validate::{self, Validation, DISKSIM_FIGURES};
use elevator_sim::Device;
use std::path::{Path, PathBuf};

use crate::output::say;
use crate::plot::validation::{validation_cdfs, DriveCdfs};

/// Replay a DiskSim validation trace (one request at a time, each issued at the previous
/// completion plus the recorded gap) and print the demerit figure.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A built-in drive name or a drive TOML file, validated against `--trace` (or give
    /// `--all` instead of both).
    #[arg(long, required_unless_present = "all")]
    pub drive: Option<String>,
    /// A DiskSim validation trace (`R|W Hit|Miss blkno nsectors service_us gap_us`), replayed
    /// on `--drive` (or give `--all` instead of both).
    #[arg(long, required_unless_present = "all")]
    pub trace: Option<PathBuf>,
    /// Validate the five DiskSim drives of the data directory, DiskSim's figures beside ours.
    #[arg(long, conflicts_with_all = ["drive", "trace"])]
    pub all: bool,
    /// Directory holding the DiskSim validation data (default: $ELEVATOR_DISKSIM_VALID, then
    /// shared/data/disksim-valid next to or above the current directory).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Draw the simulated and measured access-time CDFs to this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One row of results.
struct Row {
    drive: String,
    disksim: Option<f64>,
    v: Validation,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    // No output may be an input: `--json` onto the validation trace overwrote it with the
    // results, as `--plot` onto the drive spec did.
    {
        use super::common::{Input, OutputOpts, Supported};
        let mut inputs: Vec<Input> = Vec::new();
        if let Some(t) = &args.trace {
            inputs.push(Input::new("the validation trace", t));
        }
        if let Some(d) = &args.drive {
            inputs.push(Input::new("the drive spec", d));
        }
        let outputs: Vec<(&str, &std::path::Path)> =
            [("--json", &args.json), ("--plot", &args.plot)]
                .into_iter()
                .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
                .collect();
        OutputOpts::default().check("validate", Supported::default(), &[], &inputs, &outputs)?;
    }
    if let Some(p) = &args.plot {
        if p.is_dir() {
            bail!(
                "--plot {}: is a directory (give an SVG file's path)",
                p.display()
            );
        }
    }
    let rows = if args.all {
        let dir = match &args.data {
            Some(d) => d.clone(),
            None => validate::find_data_dir().context(
                "DiskSim validation data not found; pass --data DIR (the shared/data/disksim-valid folder)",
            )?,
        };
        let mut rows = Vec::new();
        for (name, prefix, demerit) in DISKSIM_FIGURES {
            let spec = DriveSpec::builtin(name).context("built-in drive missing")?;
            let trace = dir.join(format!("{prefix}.trace"));
            let v = run_one(spec, &trace)?;
            rows.push(Row {
                drive: name.to_string(),
                disksim: Some(*demerit),
                v,
            });
        }
        rows
    } else {
        let (Some(drive), Some(trace)) = (&args.drive, &args.trace) else {
            bail!("--drive and --trace are required without --all");
        };
        let spec = DriveSpec::resolve(drive).map_err(|e| anyhow::anyhow!("{e}"))?;
        let name = spec.name.clone();
        let disksim = DISKSIM_FIGURES
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|f| f.2);
        vec![Row {
            drive: name,
            disksim,
            v: run_one(spec, trace)?,
        }]
    };
    print_table(&rows);
    if let Some(path) = &args.plot {
        plot(&rows, path)
            .with_context(|| format!("--plot {}: cannot write the SVG", path.display()))?;
        say!("plot written to {}", path.display());
    }
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "rows": rows.iter().map(|r| serde_json::json!({
                "drive": r.drive,
                "demerit_ms": r.v.demerit_ms,
                "disksim_demerit_ms": r.disksim,
                "sim_mean_ms": r.v.sim_mean_ms,
                "measured_mean_ms": r.v.measured_mean_ms,
            })).collect::<Vec<_>>()
        });
        elevator_workload::input::write_output(path, serde_json::to_string_pretty(&json)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn run_one(spec: DriveSpec, trace: &Path) -> Result<Validation> {
    let mut hdd = Hdd::new(spec);
    let records = validate::read_trace_within(trace, Some(hdd.capacity_sectors()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if records.is_empty() {
        bail!("{}: the trace holds no requests", trace.display());
    }
    Ok(validate::replay(&mut hdd, &records))
}

fn print_table(rows: &[Row]) {
    say!(
        "{:<12} {:>11} {:>9} {:>13} {:>12} {:>12} {:>9}",
        "drive",
        "demerit ms",
        "% of mean",
        "DiskSim ms",
        "sim mean ms",
        "meas mean ms",
        "hit/miss"
    );
    for r in rows {
        let pct = 100.0 * r.v.demerit_ms / r.v.measured_mean_ms.max(f64::MIN_POSITIVE);
        let ds = r
            .disksim
            .map(|d| format!("{d:.3}"))
            .unwrap_or_else(|| "-".into());
        say!(
            "{:<12} {:>11.3} {:>8.2}% {:>13} {:>12.3} {:>12.3} {:>8.1}%",
            r.drive,
            r.v.demerit_ms,
            pct,
            ds,
            r.v.sim_mean_ms,
            r.v.measured_mean_ms,
            100.0 * r.v.hit_agreement
        );
    }
    say!("demerit: RMS horizontal distance between simulated and measured access-time CDFs (DiskSim's rms); hit/miss: agreement with the trace's Hit/Miss column");
}

fn plot(rows: &[Row], path: &Path) -> Result<()> {
    let drives: Vec<DriveCdfs> = rows
        .iter()
        .map(|r| DriveCdfs {
            drive: &r.drive,
            demerit_ms: r.v.demerit_ms,
            simulated_ms: &r.v.simulated_ms,
            measured_ms: &r.v.measured_ms,
        })
        .collect();
    elevator_workload::input::write_output(path, validation_cdfs(&drives)?)
        .with_context(|| format!("writing {}", path.display()))
}
