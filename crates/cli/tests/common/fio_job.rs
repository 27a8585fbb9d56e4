//! A fio job file run by `elevator run` on a temporary file.

use std::path::Path;

use super::elevator::elevator;
use super::file::write;

/// Two jobs: a 2 MiB sequential writer of 64 KiB blocks at depth 4, and 50 psync random 4 KiB
/// reads of the next MiB.
pub const MIXED: &str = "[global]\ndirect=1\n\n[writer]\nrw=write\nbs=64k\niodepth=4\nsize=2m\n\n\
                         [reader]\nrw=randread\nbs=4k\nioengine=psync\noffset=2m\nsize=1m\nnumber_ios=50\n";

/// `elevator run DIR/job.fio --target DIR/t.dat EXTRA`, the job file holding `job`: whether
/// it succeeded, its stdout, its stderr.
pub fn run_on_a_file(dir: &Path, job: &str, extra: &[&str]) -> (bool, String, String) {
    let job = write(dir, "job.fio", job);
    let target = dir.join("t.dat");
    let mut args = vec!["run", &job, "--target", target.to_str().unwrap()];
    args.extend_from_slice(extra);
    elevator(&args)
}
