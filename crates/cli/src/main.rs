//! `elevator`: Linux block I/O schedulers in a deterministic disk simulator and on real I/O.
//!
//! One file per subcommand under `cmd/`, each with its `Args` and `run`; the published
//! experiments live under `reproduce/`. Errors from every subcommand reach `main`, which
//! prints them with their cause chain and exits non-zero.

mod cmd;
mod output;
mod plot;
mod progress;
mod report;
mod reproduce;
mod scenarios;
mod signals;
mod stats;
mod sweep;

use clap::{Parser, Subcommand};

/// Linux block I/O schedulers (noop, the 2.4 elevator, deadline, anticipatory, CFQ, BFQ ...)
/// as sans-IO state machines, run in a deterministic disk simulator and on real devices.
#[derive(Parser)]
#[command(name = "elevator", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Reproduce a published experiment and print ours beside the published figures.
    Reproduce(reproduce::Args),
    /// Simulate a fio job file (on a built-in or calibrated drive) or a scenario under one or
    /// more schedulers.
    #[command(mut_arg("request_log", |a| a.hide(true)))]
    Sim(cmd::sim::Args),
    /// Run a fio job file on a real file or block device under one or more of our schedulers.
    Run(cmd::run::Args),
    /// Measure a real file or block device and fit the SSD model to it, writing a drive spec
    /// for `--drive`.
    Calibrate(cmd::calibrate::Args),
    /// Mount a directory through a FUSE filesystem whose data I/O one of our schedulers decides.
    #[command(mut_arg("sched", |a| a
        .value_name("NAME")
        .help("The scheduler, one (see `elevator list`; default none); switch it while mounted \
               with `echo NAME > MOUNTPOINT/.elevator/scheduler`")))]
    #[command(mut_arg("blktrace_out", |a| a
        .help("At unmount, write the requests as a blktrace `DIR/mount.blktrace.0`, each \
               process under its pid and name (read it with `blkparse -i DIR/mount`)")))]
    #[command(mut_arg("json", |a| a.hide(true)))]
    #[command(mut_arg("request_log", |a| a.hide(true)))]
    Mount(cmd::mount::Args),
    /// Replay a recorded block trace (blktrace, blkparse, fio iolog, MSR, SPC, Alibaba,
    /// Tencent, DiskSim, MQSim) through schedulers, simulated or on a real target.
    Replay(cmd::replay::Args),
    /// Compare the kernel's schedulers (fio) with ours on the same device, round by round,
    /// with paired ratios (needs root and fio).
    Compare(cmd::compare::Args),
    /// List schedulers with their tunables, built-in drives, host CPU models and scenarios.
    List(cmd::list::Args),
    /// Replay DiskSim validation traces on a drive model and compare with the measured drive.
    #[command(
        override_usage = "elevator validate --drive <DRIVE> --trace <TRACE> [OPTIONS]\n       \
                                elevator validate --all [OPTIONS]"
    )]
    Validate(cmd::validate::Args),
    /// Show a drive spec, or import a DiskSim drive model.
    Drive(cmd::drive::Args),
    /// Record the kernel's own schedulers deciding a fio job on a loop device (block and
    /// kyber tracepoints through tracefs; needs root and fio).
    KernelRecord(cmd::kernel_record::Args),
    /// Join the Parquet files of a sweep's shards (`sim --sweep ... --shard I/N --parquet F`)
    /// into one, sorted by cell.
    Merge(cmd::merge::Args),
    /// Replay recorded kernel traces into our schedulers of the same names and report how
    /// often ours made the kernel's dispatch decision (no root needed).
    KernelDiff(cmd::kernel_diff::Args),
}

fn main() {
    // The signal state the shell handed over: caught signals unblocked, SIGXFSZ ignored (a
    // write past `ulimit -f` is an error of its output). SIGPIPE stays ignored, as Rust's
    // runtime set it: a reader of our output that went away (`elevator list | head`) is an
    // error of standard output only, and the other outputs are still written (signals.rs).
    signals::prepare();
    // Ctrl-C, SIGTERM and SIGHUP end any command promptly, leaving no half-written output
    // (commands that drive a device stop cooperatively instead; see signals.rs).
    signals::install_ending();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Reproduce(a) => reproduce::run(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::List(a) => cmd::list::run(a),
        Command::Mount(a) => cmd::mount::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Drive(a) => cmd::drive::run(a),
        Command::KernelRecord(a) => cmd::kernel_record::run(a),
        Command::KernelDiff(a) => cmd::kernel_diff::run(a),
        Command::Merge(a) => cmd::merge::run(a),
    };
    // Like any Unix filter: when the reader of our standard output went away (`elevator list
    // | head`), end quietly, with the status of a process SIGPIPE ended, once every other
    // output is written; an error of the command itself is still told.
    if result.is_ok() && output::stdout_broken() {
        std::process::exit(128 + libc::SIGPIPE);
    }
    // Output that could not be written is an error too (`elevator list > /dev/full`).
    let result = result.and_then(|()| output::stdout_result());
    if let (Ok(()), Some(s)) = (&result, signals::received()) {
        // Stopped by a signal, the command still wrote what it had: say so in the status.
        crate::output::tell!("elevator: stopped by {}", signals::name(s));
        std::process::exit(128 + s);
    }
    if let Err(e) = result {
        // An input read from a FIFO is named as given, not by its private copy.
        crate::output::tell!("elevator: error: {}", cmd::common::unmask(&e.to_string()));
        for cause in e.chain().skip(1) {
            crate::output::tell!("  caused by: {}", cmd::common::unmask(&cause.to_string()));
        }
        // A command stopped by Ctrl-C, SIGTERM or SIGHUP exits as a shell reports a signal's end.
        std::process::exit(signals::received().map_or(1, |s| 128 + s));
    }
}
