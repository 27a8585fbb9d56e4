//! `elevator reproduce`: the seed documents' experiments, ours beside the published figures.
//!
//! Every figure of ours is the mean over several seeds (`--seeds N`, default
//! [`DEFAULT_SEEDS`]) with its 95% confidence interval; the JSON keeps each seed's value.
//! The runs of an experiment are independent and go to every core (rayon); results are
//! collected in input order, so they do not depend on the number of cores.

mod anticipatory;
mod bfq_merge;
mod flash;
mod io_control_today;
mod io_controller;
pub mod ssd_loo;

use std::path::PathBuf;

use elevator_core::Nanos;

use crate::output::{self, say};

/// Seeds per figure unless `--seeds` says otherwise.
pub const DEFAULT_SEEDS: usize = 5;
/// The most seeds per figure `--seeds` takes.
pub const MAX_SEEDS: u32 = 100;

/// Arguments of `elevator reproduce`.
#[derive(clap::Args)]
pub struct Args {
    /// Which experiment: anticipatory (Morton 2003), bfq-merge (BFQ's 100 ms merge window),
    /// io-controller (Goyal 2009, extended to today's io.latency / io.max / io.cost),
    /// io-control-today (that extension alone; not part of all), flash (a reader beside a
    /// random writer on a simulated 980 PRO, ICPE'24), ssd-loo (the 980 PRO model fitted
    /// without each of the ICPE'24 configurations in shared/data and predicting it; not part
    /// of all), or all.
    #[arg(value_parser = ["anticipatory", "bfq-merge", "io-controller", "io-control-today", "flash", "ssd-loo", "all"])]
    experiment: String,
    /// Write the rows as JSON; `-` prints only JSON on stdout (the tables go to stderr).
    /// With `all`, one file per experiment (FILE gets the name inserted before its
    /// extension), or with `-` one document holding every experiment.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seeds per figure (seeds 1..=N): each figure is the mean over them with its 95%
    /// confidence interval (Student t). The bfq-merge start-up times use their own 20
    /// repetitions.
    /// From 2 (an interval needs two) to 100: each seed is a whole set of runs (4294967295
    /// seeds aborted on a 32 GiB allocation; 10^5 would run for days).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEEDS as u32,
          value_parser = clap::value_parser!(u32).range(2..=MAX_SEEDS as i64))]
    seeds: u32,
    /// Run one part: bfq-merge's `startup` (parts 1 and 2, which share their runs) or
    /// `cooperating` (part 3, a few seconds); ssd-loo's `read` (the drive's read side) or
    /// `tapp` (the host's costs, fig-7); io-control-today's `saturation` (io.cost with both
    /// groups saturating the drive), `protection` (a reader beside a bulk writer) or `share`
    /// (Goyal's readers under io.cost).
    #[arg(long, value_parser = ["startup", "cooperating", "read", "tapp", "saturation", "protection", "share"])]
    part: Option<String>,
    /// io-control-today only: run one drive's rows, `ibm18es` (the 2009 disk) or
    /// `samsung-980pro-1tb` (the 980 PRO model); default both.
    #[arg(long, value_name = "NAME", value_parser = ["ibm18es", "samsung-980pro-1tb"])]
    drive: Option<String>,
    /// Microseconds between a completion and its process seeing it (the process wake-up
    /// latency; the scheduler dispatches first, as in the kernel). Default 0: a process's
    /// next request is queued at the instant its last one completes, as the published
    /// figures beside ours were reproduced.
    #[arg(long, value_name = "US", default_value_t = 0)]
    wakeup_us: u32,
    /// Write an HTML page of the tables and plots (seek maps, latency CDFs, group shares ...)
    /// to DIR/index.html, the plots beside it as SVG.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

/// What every experiment runs with.
pub struct Opts {
    /// Process wake-up latency.
    pub wakeup: Nanos,
    /// The seeds each figure is measured at.
    pub seeds: Vec<u64>,
    /// The `--report` page (inert without it).
    pub report: crate::report::Sink,
}

/// Say so when an experiment runs with a process wake-up latency.
fn note_wakeup(wakeup: Nanos) {
    if wakeup > Nanos::ZERO {
        say!(
            "Process wake-up latency {} us: the scheduler dispatches before a woken process \
             issues its next request.\n",
            wakeup.as_ns() / 1000
        );
    }
}

/// One line on the seeds: what "±" means in the tables.
fn seeds_note(seeds: &[u64]) -> String {
    format!(
        "Ours: mean ± 95% interval over {} seeds ({}..={}).",
        seeds.len(),
        seeds.first().copied().unwrap_or(0),
        seeds.last().copied().unwrap_or(0)
    )
}

/// The experiments `all` runs, by the names their JSON files take.
const ALL: [&str; 4] = ["anticipatory", "bfq-merge", "io-controller", "flash"];

/// The file `reproduce all --json P` writes an experiment's rows to: P with the experiment's
/// name inserted before its extension.
fn json_of_experiment(p: &std::path::Path, name: &str) -> PathBuf {
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("out");
    let ext = p.extension().and_then(|s| s.to_str()).unwrap_or("json");
    p.with_file_name(format!("{stem}-{name}.{ext}"))
}

/// Before `all` runs (minutes): the files its `--json` becomes, one per experiment, can be
/// written (issue 32, round 14). Only the path given was checked: a derived name that was a
/// directory failed after every experiment ran, and `--json /dev/null` (or `/dev/stdout`, a
/// FIFO) created `/dev/null-anticipatory.json` and three more files in /dev. A path that is
/// not a regular file is refused with `all` (its derived names are not what it names).
fn check_all_json(p: &std::path::Path) -> anyhow::Result<()> {
    if std::fs::metadata(p).is_ok_and(|m| !m.is_file()) {
        anyhow::bail!(
            "--json {}: not a regular file; with `all` one file is written per experiment \
             beside the name ({}, ...): give a file's name, or `-` for one document on \
             standard output",
            p.display(),
            json_of_experiment(p, ALL[0]).display()
        );
    }
    for name in ALL {
        crate::cmd::common::check_file("--json", &json_of_experiment(p, name))?;
    }
    Ok(())
}

/// Run the experiment(s).
pub fn run(args: Args) -> anyhow::Result<()> {
    let all = args.experiment == "all";
    match (args.experiment.as_str(), args.part.as_deref()) {
        (_, None)
        | ("bfq-merge", Some("startup" | "cooperating"))
        | ("ssd-loo", Some("read" | "tapp"))
        | ("io-control-today", Some("saturation" | "protection" | "share")) => {}
        (e, Some(p)) => anyhow::bail!("--part {p} does not apply to {e}"),
    }
    if args.drive.is_some() && args.experiment != "io-control-today" {
        anyhow::bail!("--drive applies to io-control-today only");
    }
    // Outputs are checked before the experiments run (minutes for `all`): a `--json` in a
    // missing directory or on a directory, a `--report` on a file, were found only after.
    // Through the shared check: `--json R --report R` ran for minutes, then failed writing
    // the JSON ("Is a directory") and lost the report too.
    crate::cmd::common::OutputOpts {
        json: args.json.clone(),
        report: args.report.clone(),
        ..Default::default()
    }
    .check(
        "reproduce",
        crate::cmd::common::Supported {
            json: true,
            report: true,
            ..Default::default()
        },
        &[],
        &[],
        &[],
    )?;
    let stdout_json = output::json_to_stdout(args.json.as_deref());
    if all && !stdout_json {
        if let Some(p) = &args.json {
            check_all_json(p)?;
        }
    }
    let opts = Opts {
        wakeup: Nanos::from_us(u64::from(args.wakeup_us)),
        seeds: crate::stats::seeds(1, args.seeds as usize),
        report: crate::report::Sink::new(
            args.report.is_some(),
            &format!("elevator reproduce {}", args.experiment),
        ),
    };
    let json_for = |name: &str| {
        args.json.as_ref().map(|p| {
            if all && !stdout_json {
                json_of_experiment(p, name)
            } else {
                p.clone()
            }
        })
    };
    let mut docs = Vec::new();
    // A JSON that fails to be written (a full disk) is kept as an error while the other
    // experiments run and the report is written: one failed output loses nothing else.
    let mut outcomes = crate::cmd::common::Outcomes::default();
    let mut done = |name: &str, doc: serde_json::Value| -> anyhow::Result<()> {
        match json_for(name) {
            Some(_) if stdout_json && all => docs.push(doc),
            Some(p) => {
                outcomes.keep(output::write_json(&p, &doc));
            }
            None => {}
        }
        say!();
        Ok(())
    };
    if all || args.experiment == "anticipatory" {
        done("anticipatory", anticipatory::run(&opts)?)?;
    }
    if all || args.experiment == "bfq-merge" {
        done("bfq-merge", bfq_merge::run(&opts, args.part.as_deref())?)?;
    }
    if all || args.experiment == "io-controller" {
        done("io-controller", io_controller::run(&opts)?)?;
    }
    if args.experiment == "io-control-today" {
        // The today part of io-controller alone (it also runs within io-controller).
        let drives = io_control_today::drives(args.drive.as_deref())?;
        let today = if args.part.as_deref() == Some("saturation") {
            serde_json::to_value(io_control_today::run_saturation(&opts.seeds, drives)?)?
        } else if args.part.as_deref() == Some("protection") {
            serde_json::to_value(io_control_today::run_protection(&opts.seeds, drives)?)?
        } else if args.part.as_deref() == Some("share") {
            serde_json::to_value(io_control_today::run_share(&opts.seeds, drives)?)?
        } else {
            serde_json::to_value(io_control_today::run(&opts.seeds, drives)?)?
        };
        done("io-control-today", today)?;
    }
    if args.experiment == "ssd-loo" {
        // Deterministic: no seeds; its own data (shared/data/nvme-980pro).
        done("ssd-loo", ssd_loo::run(args.part.as_deref())?)?;
    }
    if all || args.experiment == "flash" {
        done("flash", flash::run(&opts)?)?;
    }
    if stdout_json && all {
        outcomes.keep(output::write_json(
            std::path::Path::new("-"),
            &serde_json::json!({ "experiments": docs }),
        ));
    }
    outcomes.keep(opts.report.write(args.report.as_deref()));
    outcomes.finish()
}
