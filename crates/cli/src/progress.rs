//! Progress bars for long work (reproduce, sweeps, real runs, replays).
//!
//! indicatif draws on stderr and only when stderr is a terminal: piped or redirected runs
//! (and tests) see nothing, and stdout, which may carry JSON, is never touched.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// A spinner labelled `label` with the time elapsed, for work of unknown length (a fit); it
/// ticks by itself until finished.
pub fn spinner(label: &str) -> ProgressBar {
    let s = ProgressBar::new_spinner();
    s.set_style(
        ProgressStyle::with_template("{spinner} {msg}, {elapsed} elapsed")
            .expect("a valid template"),
    );
    s.set_message(label.to_string());
    s.enable_steady_tick(TICK);
    s
}

/// How often a [`Live`] display refreshes.
const TICK: Duration = Duration::from_millis(250);

/// A display of one run in progress: requests completed and the current rate, elapsed time,
/// and the time left when the run's length is known. The run counts completions in
/// [`Live::counter`]; a thread reads it (only when stderr is a terminal).
pub struct Live {
    counter: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Live {
    /// Start a display labelled `label`; `expected` is the run's length if known.
    pub fn start(label: &str, expected: Option<Duration>) -> Live {
        let counter = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let bar = match expected {
            Some(d) => {
                let b = ProgressBar::new(d.as_millis().max(1) as u64);
                b.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:30}] {elapsed} elapsed, about {eta} left",
                    )
                    .expect("a valid template")
                    .progress_chars("=> "),
                );
                b
            }
            None => {
                let b = ProgressBar::new_spinner();
                b.set_style(
                    ProgressStyle::with_template("{spinner} {msg}, {elapsed} elapsed")
                        .expect("a valid template"),
                );
                b
            }
        };
        let thread = (!bar.is_hidden()).then(|| {
            let (counter, done, label) = (counter.clone(), done.clone(), label.to_string());
            std::thread::spawn(move || {
                let start = Instant::now();
                let (mut last_n, mut last_t) = (0u64, start);
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    let (n, t) = (counter.load(Ordering::Relaxed), Instant::now());
                    let rate = (n - last_n) as f64 / (t - last_t).as_secs_f64().max(1e-9);
                    (last_n, last_t) = (n, t);
                    bar.set_message(format!("{label}: {n} I/Os, {rate:.0} IOPS now"));
                    if expected.is_some() {
                        bar.set_position((t - start).as_millis() as u64);
                    } else {
                        bar.tick();
                    }
                }
                bar.finish_and_clear();
            })
        });
        Live {
            counter,
            done,
            thread,
        }
    }

    /// The counter the run adds each completed request to.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.counter.clone()
    }

    /// Stop and clear the display.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
