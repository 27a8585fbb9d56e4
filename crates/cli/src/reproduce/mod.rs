//! `elevator reproduce`: the seed documents' experiments, ours beside the published figures.

mod anticipatory;
mod bfq_merge;
mod io_controller;

use std::path::PathBuf;

/// Arguments of `elevator reproduce`.
#[derive(clap::Args)]
pub struct Args {
    /// Which experiment: anticipatory (Morton 2003), bfq-merge (BFQ's 100 ms merge window),
    /// io-controller (Goyal 2009), or all.
    #[arg(value_parser = ["anticipatory", "bfq-merge", "io-controller", "all"])]
    experiment: String,
    /// Write the rows as JSON (with `all`, one file per experiment: FILE gets the name
    /// inserted before its extension).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// bfq-merge only: run one part, `startup` (parts 1 and 2, which share their runs) or
    /// `cooperating` (part 3, a few seconds).
    #[arg(long, value_parser = ["startup", "cooperating"])]
    part: Option<String>,
    /// Microseconds between a completion and its process seeing it (the process wake-up
    /// latency; the scheduler dispatches first, as in the kernel). Default 0: a process's
    /// next request is queued at the instant its last one completes, as the published
    /// figures beside ours were reproduced.
    #[arg(long, value_name = "US", default_value_t = 0)]
    wakeup_us: u32,
}

/// Say so when an experiment runs with a process wake-up latency.
fn note_wakeup(wakeup: elevator_core::Nanos) {
    if wakeup > elevator_core::Nanos::ZERO {
        println!(
            "Process wake-up latency {} us: the scheduler dispatches before a woken process \
             issues its next request.\n",
            wakeup.as_ns() / 1000
        );
    }
}

/// Run the experiment(s).
pub fn run(args: Args) -> anyhow::Result<()> {
    let all = args.experiment == "all";
    let wakeup = elevator_core::Nanos::from_us(u64::from(args.wakeup_us));
    if args.part.is_some() && args.experiment != "bfq-merge" {
        anyhow::bail!("--part applies to bfq-merge only");
    }
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
        anticipatory::run(json_for("anticipatory").as_deref(), wakeup)?;
    }
    if all || args.experiment == "bfq-merge" {
        bfq_merge::run(
            json_for("bfq-merge").as_deref(),
            args.part.as_deref(),
            wakeup,
        )?;
    }
    if all || args.experiment == "io-controller" {
        io_controller::run(json_for("io-controller").as_deref(), wakeup)?;
    }
    Ok(())
}
