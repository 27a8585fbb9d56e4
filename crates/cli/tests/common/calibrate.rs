//! The arguments of a small `elevator calibrate` run, as the hostile rounds give them.

use std::path::Path;

/// `calibrate --target TARGET --size 16m` followed by `more` (its duration, outputs, mode):
/// a calibration of 16 MiB of `target`.
pub fn calibrate_16m<'a>(target: &'a Path, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "calibrate",
        "--target",
        super::bounded::s(target),
        "--size",
        "16m",
    ];
    args.extend_from_slice(more);
    args
}
