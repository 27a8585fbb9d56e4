//! `elevator`: Linux block I/O schedulers in a deterministic disk simulator and on real I/O.
//!
//! One file per subcommand under `cmd/`, each with its `Args` and `run`. Errors from every
//! subcommand reach `main`, which prints them with their cause chain and exits non-zero.

mod cmd;

use clap::{Parser, Subcommand};

/// Linux block I/O schedulers as sans-IO state machines, run in a deterministic disk simulator
/// and on real devices.
#[derive(Parser)]
#[command(name = "elevator", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a fio job file on a real file or block device under one or more of our schedulers.
    Run(cmd::run::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
    };
    if let Err(e) = result {
        eprintln!("elevator: error: {e}");
        for cause in e.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}
