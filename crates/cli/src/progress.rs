//! Progress bars for long work (reproduce, sweeps, real runs).
//!
//! indicatif draws on stderr and only when stderr is a terminal: piped or redirected runs
//! (and tests) see nothing, and stdout, which may carry JSON, is never touched.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `len` runs, labelled `label`, with elapsed and remaining time.
pub fn bar(len: usize, label: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, about {eta} left",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message(label.to_string());
    bar
}
