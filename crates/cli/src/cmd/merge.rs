//! `elevator merge OUT.parquet SHARD.parquet...`: join the Parquet files of a sweep's shards
//! (`elevator sim ... --sweep ... --shard I/N --parquet FILE`) into one, sorted by cell.
//!
//! The shards must come from the same sweep (the same columns) and must not overlap (no cell
//! in two files); a missing shard is not an error (its cells are absent), so a partial merge
//! can be looked at while the batch system still runs.

use std::path::PathBuf;

use crate::output::say;

/// Arguments of `elevator merge`.
#[derive(clap::Args)]
pub struct Args {
    /// The merged Parquet file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// The shards' Parquet files.
    #[arg(required = true, value_name = "SHARD")]
    inputs: Vec<PathBuf>,
}

/// Merge the shards.
pub fn run(args: Args) -> anyhow::Result<()> {
    // Before reading every shard: the output can be written (it may be one of the inputs:
    // the table is written beside it and renamed over it once complete).
    super::common::check_table_file("--output", &args.output)?;
    let batch = elevator_campaign::table::merge(&args.inputs)?;
    elevator_campaign::table::write_parquet(&args.output, &batch)?;
    say!(
        "merged {} rows from {} files into {}",
        batch.num_rows(),
        args.inputs.len(),
        args.output.display()
    );
    // A missing shard is not an error (a partial merge can be looked at while the others
    // run), but it is said: the table does not hold the whole sweep.
    if let (n @ 1.., Some(first)) = elevator_campaign::table::missing_cells(&batch) {
        say!(
            "note: {n} cells below the highest merged are absent (the first is cell {first}): \
             a shard was not given, so this table is not the whole sweep"
        );
    }
    Ok(())
}
