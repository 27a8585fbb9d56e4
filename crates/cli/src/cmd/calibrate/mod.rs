//! `elevator calibrate --target PATH [-o SPEC.toml]`: measure a real file or block device with
//! the io_uring executor and fit the SSD model to it, writing a drive spec that `--drive`
//! accepts.
//!
//! The measurement ([`measure`]) is a fixed grid of 20 fio-like points (4 KiB random reads at
//! queue depths 1 to 128, random reads of 16 KiB to 1 MiB, a 1 MiB sequential reader, 4 KiB
//! random writes at depths 1 and 32, 1 MiB sequential writes at depths 1 and 32, and a 4 KiB
//! random reader at depth 1 beside the 1 MiB writer at depths 32, 1 and 4), sharing the
//! `--duration` budget equally (a tenth of each point is ramp), under our `none`; a point that
//! completes fewer than 16 I/Os in its share is measured once more, longer ([`stretched`]),
//! and refused if it still does; the fit
//! ([`fit`]) then sets the model's rates from them and prints each point measured beside
//! predicted. Progress goes to stderr, drawn only on a terminal.
//!
//! `--iocost` measures instead the six points of io.cost's model ([`measure::IOCOST_PLAN`],
//! as the kernel's `tools/cgroup/iocost_coef_gen.py` measures them, through Linux native AIO
//! as its fio does: [`measure::Engine::Aio`]) and prints the
//! `io.cost.model` line for the device and an `io.cost.qos` proposal searched by simulation
//! ([`iocost`]).
//!
//! Safety is `elevator run`'s ([`elevator_real::target`]): the writes stay in the region
//! measured (`--size`, default 1 GiB for a new file, else the whole target); a new file is
//! created and laid out; an existing file elevator did not lay out, and a device carrying data,
//! are refused unless `--allow-overwrite`; a mounted or swapped-on device always.
//!
//! What is measured must be the drive ([`elevator_real::fidelity`]): a target the kernel
//! serves from memory (tmpfs, a RAM disk, a loop device without direct I/O) is refused before
//! anything is laid out, a point that reads with O_DIRECT while pages of the target enter the
//! page cache (a file system buffering O_DIRECT) stops the calibration, both unless
//! `--allow-memory`; a target truncated, replaced or deleted while it is measured stops it,
//! naming what happened, with no spec written.

mod fit;
pub(crate) mod iocost;
pub(crate) mod iocost_qos;
pub(crate) mod measure;
pub(crate) mod resctl;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use elevator_core::registry;
use elevator_real::fidelity;
use elevator_real::target::{self, OpenSpec};
use elevator_real::ByteRange;
use elevator_workload::fio_file::parse_size;
use serde::Serialize;

use super::run::{install_stop_handler, STOP};
use crate::output::{self, say};

use measure::{Figures, Span, IOCOST_PLAN, PLAN};

/// Default region of a new file.
const DEFAULT_NEW_FILE: u64 = 1 << 30;

/// Arguments of `elevator calibrate`.
#[derive(clap::Args)]
pub struct Args {
    /// The file or block device to measure; a file that does not exist is created and laid
    /// out (`--size`).
    #[arg(long)]
    target: PathBuf,
    /// Write the fitted spec here (default: standard output, the tables then go to stderr).
    #[arg(short = 'o', long, value_name = "SPEC.toml")]
    output: Option<PathBuf>,
    /// Seconds of measuring in all, shared by the 18 points.
    #[arg(long, value_name = "S", default_value_t = 120.0)]
    duration: f64,
    /// Bytes of the target to measure over (fio size suffixes: 4g). Default: all of an existing
    /// file or device, 1 GiB of a new file.
    #[arg(long, value_name = "BYTES")]
    size: Option<String>,
    /// Allow writing over an existing file or a device carrying data.
    #[arg(long)]
    allow_overwrite: bool,
    /// Calibrate a target whose I/O the kernel serves from memory (a file on tmpfs, a RAM
    /// disk, a loop device without direct I/O, O_DIRECT a file system buffers): the spec then
    /// models memory, not a drive. Without it such a target is refused.
    #[arg(long)]
    allow_memory: bool,
    /// The spec's name (default: `calibrated-<target's file name>`).
    #[arg(long)]
    name: Option<String>,
    /// Write the measured and predicted figures of every point, and the spec, as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Fit to the points an earlier `--json` measured instead of measuring (the same
    /// measurements under another version of the model); the target is not opened.
    #[arg(long, value_name = "FILE")]
    measured: Option<PathBuf>,
    /// Fit quickly: simulate each point that writes for at most 1 s (after 0.1 s of ramp)
    /// instead of as long as it was measured. A large fitted write buffer fills for seconds,
    /// so 1 s scores the point's start; the default, the measured span, takes about a minute
    /// more (docs/ssd-model.md, "Calibrating a real device").
    #[arg(long)]
    fit_first_second: bool,
    /// Measure the six figures of io.cost's model instead of the SSD model's grid, and print
    /// the `io.cost.model` line for the device and an `io.cost.qos` proposal (vrate bounds
    /// searched by simulation on `--drive`), as the lines a user echoes into
    /// /sys/fs/cgroup/io.cost.model and io.cost.qos (docs/iocost.md).
    #[arg(long)]
    iocost: bool,
    /// With `--iocost`: the simulated drive the io.cost.qos sweep runs on (a built-in name, or
    /// the spec `elevator calibrate -o` fitted for the device); `none` skips the sweep.
    #[arg(long, value_name = "NAME|FILE", default_value = "samsung-980pro-1tb")]
    drive: String,
    /// With `--iocost`: the scheduler below io.cost in the io.cost.qos sweep's simulations
    /// (one of `elevator list`'s: none, mq-deadline, bfq, kyber ...), as the device runs it
    /// under io.cost. Default: the device's current scheduler
    /// (/sys/dev/block/MAJ:MIN/queue/scheduler, of the device or of the one the file is on)
    /// when it can be read and is one of ours, else none.
    #[arg(long, value_name = "NAME")]
    sched: Option<String>,
}

/// Every point of the plan and what it measured.
type Measured = Vec<(measure::Point, Figures)>;

/// A measured grid, to fit.
struct Grid {
    /// Bytes of the target.
    size: u64,
    /// Bytes measured over.
    region: u64,
    /// Load average after measuring.
    load: String,
    /// Seconds of measuring in all (`--duration`), where known.
    duration_s: Option<f64>,
    /// How long each point ran, where known.
    span: Option<Span>,
    points: Measured,
}

/// The measured points of an earlier `--json` (its target's size taken as the region's).
fn load_measured(path: &Path) -> anyhow::Result<Grid> {
    #[derive(serde::Deserialize)]
    struct Saved {
        region_bytes: u64,
        load_average: String,
        duration_s: Option<f64>,
        points: Vec<SavedPoint>,
    }
    #[derive(serde::Deserialize)]
    struct SavedPoint {
        point: String,
        measured: Figures,
    }
    // A `--json` of calibrate holds a few dozen points: 16 MiB is far more (and /dev/zero
    // or a FIFO that never ends is refused, not read without bound).
    let text = elevator_workload::input::read_text(path, 16 << 20, "`calibrate --json` file")?;
    let saved: Saved = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a `calibrate --json` file", path.display()))?;
    // "duration_s 120: not a number of seconds ... shared by the points" blamed the
    // duration for a file of no points.
    anyhow::ensure!(
        !saved.points.is_empty(),
        "{}: points: none: not a measurement to fit",
        path.display()
    );
    anyhow::ensure!(
        (MIN_REGION..=MAX_REGION).contains(&saved.region_bytes),
        "{}: region_bytes {}: not between 16 MiB and 2^50 bytes",
        path.display(),
        saved.region_bytes
    );
    for (i, p) in saved.points.iter().enumerate() {
        check_figures(&p.measured, saved.duration_s).map_err(|e| {
            anyhow::anyhow!(
                "{}: points[{i}] ({}): measured.{e}",
                path.display(),
                show(&p.point)
            )
        })?;
    }
    // A point measured twice (a hand-edited file; no version writes one) would be fitted to
    // whichever came first, and would shorten every point's share of duration_s.
    let mut seen = std::collections::HashMap::new();
    for (i, p) in saved.points.iter().enumerate() {
        if let Some(first) = seen.insert(p.point.as_str(), i) {
            anyhow::bail!(
                "{}: points[{i}] ({}): the point of points[{first}] again: give each point once",
                path.display(),
                show(&p.point)
            );
        }
    }
    let known: std::collections::HashSet<String> = PLAN
        .iter()
        .chain(IOCOST_PLAN.iter())
        .map(|p| p.label())
        .collect();
    if let Some((i, p)) = saved
        .points
        .iter()
        .enumerate()
        .find(|(_, p)| !known.contains(&p.point))
    {
        say!(
            "note: {}: points[{i}] ({}) is not a point this version measures, and {} in all: \
             they are not fitted",
            path.display(),
            show(&p.point),
            saved
                .points
                .iter()
                .filter(|p| !known.contains(&p.point))
                .count()
        );
    }
    // A point of the plan an earlier version did not measure is left out: the fit says which
    // it needs, and does without the optional ones (the reader beside the shallow writers).
    let mut points: Measured = Vec::new();
    for p in PLAN.iter().chain(IOCOST_PLAN.iter()) {
        let label = p.label();
        if points.iter().any(|(q, _)| q == p) {
            continue;
        }
        if let Some((i, m)) = saved
            .points
            .iter()
            .enumerate()
            .find(|(_, s)| s.point == label)
        {
            consistent(p, &m.measured).map_err(|e| {
                anyhow::anyhow!(
                    "{}: points[{i}] ({}): measured.{e}",
                    path.display(),
                    show(&label)
                )
            })?;
            points.push((*p, m.measured));
        }
    }
    // The budget was shared by the points of the plan that measured them, all of which the
    // file lists.
    let span = match saved.duration_s {
        Some(d) if (MIN_DURATION_S..=MAX_DURATION_S).contains(&d) => Some(Span::of_slice(
            Duration::from_secs_f64(d / saved.points.len() as f64),
        )),
        // `{:?}`: 1e300 as written, where `{}` printed 301 digits.
        Some(d) => anyhow::bail!(
            "{}: duration_s {d:?}: not a number of seconds from {MIN_DURATION_S} to \
             {MAX_DURATION_S} shared by the points",
            path.display()
        ),
        None => None,
    };
    Ok(Grid {
        size: saved.region_bytes,
        region: saved.region_bytes,
        load: saved.load_average,
        duration_s: saved.duration_s,
        span,
        points,
    })
}

/// One point of the report.
#[derive(Serialize)]
struct Row {
    point: String,
    measured: Figures,
    predicted: Figures,
}

fn pct(pred: f64, meas: f64) -> String {
    if meas > 0.0 {
        format!("{:+.0}%", (pred / meas - 1.0) * 100.0)
    } else {
        "-".into()
    }
}

/// The shortest `--duration` (seconds in all): a twentieth of a second per point at least, so
/// every point measures many I/Os, not one.
const MIN_DURATION_S: f64 = 1.0;
/// The longest `--duration`: a week.
const MAX_DURATION_S: f64 = 7.0 * 86_400.0;
/// I/Os a point must complete for its figures to be fitted.
const MIN_IOS: u64 = 16;
/// The span for a point measured again after completing only `ios` I/Os in `span`: long
/// enough for twice [`MIN_IOS`] at that rate (32 times as long when it completed none), at
/// least four times as long, and within the whole budget of `duration_s` seconds, so that a
/// saved calibration's points still fit in its `duration_s`.
fn stretched(span: Span, ios: u64, duration_s: f64) -> Span {
    let factor = (2 * MIN_IOS) as f64 / ios.max(1) as f64;
    let runtime = span.runtime.mul_f64(factor.max(4.0));
    let runtime = runtime.min(Duration::from_secs_f64(duration_s).saturating_sub(span.ramp));
    Span {
        ramp: span.ramp,
        runtime: runtime.max(span.runtime),
    }
}

/// Pages (4 KiB) that must enter the target's page cache while a point only read it with
/// O_DIRECT, and at least a quarter of those it read, for the reads to count as buffered: a
/// direct read adds none, so anything of this size is a file system serving it buffered (or
/// another program reading the same file meanwhile).
const BUFFERED_PAGES: u64 = 256;
/// The smallest and largest region a calibration measures over.
const MIN_REGION: u64 = 16 << 20;
const MAX_REGION: u64 = 1 << 50;

/// At most 40 characters of a point's label from a file, for errors.
fn show(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// Figures a fit can use: finite, not negative, not denormal and within what any storage
/// device does (10^9 IOPS, 10^6 MB/s, latencies up to an hour), with at least [`MIN_IOS`]
/// I/Os and latencies in order (p50 <= p99). The error names the field.
fn check_figures(f: &Figures, duration_s: Option<f64>) -> Result<(), String> {
    let fields = [
        ("iops", f.iops, 1e9),
        ("mb_s", f.mb_s, 1e6),
        ("mean_us", f.mean_us, 3.6e9),
        ("p50_us", f.p50_us, 3.6e9),
        ("p99_us", f.p99_us, 3.6e9),
    ];
    for (name, v, max) in fields {
        if !v.is_finite() {
            return Err(format!("{name}: {v} is not a finite number"));
        }
        if v < 0.0 {
            return Err(format!("{name}: {v} is negative"));
        }
        if v != 0.0 && !v.is_normal() {
            return Err(format!("{name}: {v:e} is denormal (not a measurement)"));
        }
        if v > max {
            return Err(format!(
                "{name}: {v:e} is more than any device does ({max:e})"
            ));
        }
    }
    if f.ios < MIN_IOS {
        return Err(format!(
            "ios: {} I/Os are too few to fit (at least {MIN_IOS}; measure for longer)",
            f.ios
        ));
    }
    if f.iops == 0.0 || f.mean_us == 0.0 || f.p99_us == 0.0 {
        return Err(
            "iops, mean_us and p99_us: a point that completed I/Os has them above 0".into(),
        );
    }
    if f.p50_us > f.p99_us {
        return Err(format!("p50_us: {} is above p99_us {}", f.p50_us, f.p99_us));
    }
    if let Some(d) = duration_s {
        // At most every I/O counted within the whole budget, with a generous margin.
        if f.ios as f64 > f.iops * d * 1.5 + 1.0 && d.is_finite() && d > 0.0 {
            return Err(format!(
                "ios: {} I/Os at {} IOPS cannot fit in duration_s {d:?}",
                f.ios, f.iops
            ));
        }
    }
    Ok(())
}

/// How far a point's bandwidth may stray from its IOPS times its block size: a measured
/// point's two figures count the same I/Os over the same time, so they agree but for the
/// rounding of the file's figures.
const MB_S_TOLERANCE: f64 = 0.05;

/// Whether `f`'s bandwidth is its IOPS times point `p`'s block size (within
/// [`MB_S_TOLERANCE`], and 0.01 MB/s for figures that small). A hand-edited file whose 1 MiB
/// read point gave 10^6 IOPS and 200 MB/s was fitted without a word, one figure or the other
/// taken as the device's. The error names the field.
fn consistent(p: &measure::Point, f: &Figures) -> Result<(), String> {
    let implied = f.iops * p.bs as f64 / 1e6;
    if (f.mb_s - implied).abs() > MB_S_TOLERANCE * f.mb_s.max(implied) + 0.01 {
        return Err(format!(
            "mb_s: {:?} disagrees with iops {:?} at {} bytes an I/O ({implied:.3e} MB/s): \
             not one measurement",
            f.mb_s, f.iops, p.bs
        ));
    }
    Ok(())
}

/// Run the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        (MIN_DURATION_S..=MAX_DURATION_S).contains(&args.duration),
        // `{:?}` prints 1e308 as written, where `{}` printed 309 digits.
        "--duration {:?}: not a number of seconds from {MIN_DURATION_S} (a twentieth of a second for \
         each of the {} points) to {MAX_DURATION_S} (a week)",
        args.duration,
        PLAN.len()
    );
    if let Some(s) = &args.sched {
        anyhow::ensure!(
            args.iocost,
            "--sched {s}: only with --iocost (the io.cost.qos sweep)"
        );
        sweep_sched(Some(s), &args.target)?;
    }
    if args.measured.is_none() {
        // The target is written (with --allow-overwrite, or laid out): never an input.
        let mut read = Vec::new();
        if args.iocost && args.drive != "none" {
            read.push(super::common::Input::new(
                "the drive spec (--drive)",
                &args.drive,
            ));
        }
        super::common::check_target(&args.target, &read)?;
        // An output that is the target: the outputs are written, not read ("the --json file
        // this command reads" was said of one).
        for (flag, p) in [("--output", &args.output), ("--json", &args.json)] {
            if let Some(p) = p
                .as_ref()
                .filter(|p| super::common::same_file(&args.target, p))
            {
                anyhow::bail!(
                    "{flag} {}: is the target {}, which calibrate measures and writes; choose \
                     another {flag}",
                    p.display(),
                    args.target.display()
                );
            }
        }
    }
    if let (Some(o), Some(j)) = (&args.output, &args.json) {
        anyhow::ensure!(
            o.as_os_str() == "-" || !super::common::same_file(o, j),
            "--output {} and --json {} name one file: each would overwrite the other",
            o.display(),
            j.display()
        );
    }
    for (flag, p) in [("--output", &args.output), ("--json", &args.json)] {
        if let Some(p) = p {
            super::common::check_file(flag, p)?;
            for (what, input) in [
                ("the target", Some(&args.target)),
                ("--measured", args.measured.as_ref()),
            ] {
                if let Some(input) = input {
                    anyhow::ensure!(
                        !super::common::same_file(p, input),
                        "{flag} {}: is {what}, which calibrate reads; choose another output",
                        p.display()
                    );
                }
            }
        }
    }
    if args.output.is_none() {
        // The spec goes to standard output: the tables go to stderr.
        output::json_to_stdout(Some(Path::new("-")));
    }
    if let Some(path) = &args.measured {
        let saved = load_measured(path)?;
        if saved.span.is_none() && !args.fit_first_second {
            say!(
                "note: {} does not say how long its points ran (no duration_s): the points that \
                 write are simulated for {:.1} s",
                path.display(),
                fit::UNKNOWN_SPAN.runtime.as_secs_f64()
            );
        }
        if args.iocost {
            return report_iocost(&args, &saved);
        }
        say!("fitting the SSD model to {} ...", path.display());
        return report(&args, &saved);
    }
    let plan: &[measure::Point] = if args.iocost { &IOCOST_PLAN } else { &PLAN };
    let existing = target::existing_size(&args.target)?;
    let size = match &args.size {
        Some(s) => parse_size(s).map_err(|e| anyhow::anyhow!("--size {s:?}: {e}"))?,
        None => existing.unwrap_or(DEFAULT_NEW_FILE),
    };
    if args.size.is_none() && !(MIN_REGION..=MAX_REGION).contains(&size) {
        // The size is the target's own: blamed on it, not on a --size the user did not give.
        anyhow::bail!(
            "{}: holds {size} bytes; calibrate measures over at least 16 MiB and at most 2^50 \
             bytes (give --size, with --allow-overwrite to extend a file that is not elevator's)",
            args.target.display()
        );
    }
    anyhow::ensure!(
        (MIN_REGION..=MAX_REGION).contains(&size),
        "--size {size}: at least 16 MiB and at most 2^50 bytes to measure over"
    );
    // A target in memory gives a spec of memory's speed: refused before anything is laid out
    // or measured, unless asked for.
    if let Some(why) = fidelity::served_from_memory(&args.target) {
        anyhow::ensure!(
            args.allow_memory,
            "{}: {why}: a calibration there measures memory, not a drive; nothing measured \
             (give --allow-memory to fit memory's speed anyway)",
            args.target.display()
        );
        say!(
            "note: {}: {why}: the spec will model memory, not a drive (--allow-memory)",
            args.target.display()
        );
    }
    // A file smaller than --size is extended as fio extends one (elevator's own, or with
    // --allow-overwrite), a device is refused by the open: `target::open` judges both.
    // 1 MiB I/O at depth 32 needs room: the region is a whole number of MiB.
    let region = size / (1 << 20) * (1 << 20);
    install_stop_handler();
    let tgt = target::open(
        &args.target,
        OpenSpec {
            writes: true,
            allow_overwrite: args.allow_overwrite,
            need_bytes: region,
            write_regions: vec![ByteRange {
                start: 0,
                end: region,
            }],
            stop: Some(&STOP),
        },
    )?;
    let watch = fidelity::Watch::new(&args.target, &tgt.file, region)
        .with_context(|| format!("{}: stat the open target", args.target.display()))?;
    let slice = Duration::from_secs_f64(args.duration / plan.len() as f64);
    let span = Span::of_slice(slice);
    say!(
        "calibrating {} over {} MiB: {} points of {:.2} s each",
        args.target.display(),
        region >> 20,
        plan.len(),
        slice.as_secs_f64()
    );
    let bar = crate::progress::bar(plan.len(), "calibrate");
    let mut measured = Vec::new();
    // A point that only reads adds no page to the target's page cache when O_DIRECT is
    // honoured (`cached_pages`): the region's pages are dropped from the cache first (as
    // fio's `invalidate` does; a file system that buffers O_DIRECT filled it when the file
    // was laid out), and counted before and after.
    let reads_only = |p: &measure::Point| !p.writes() && p.beside == 0;
    for (i, p) in plan.iter().enumerate() {
        bar.set_message(p.label());
        let cached = reads_only(p)
            .then(|| match fidelity::cached_pages(&tgt.file, 0, region)? {
                // Nothing cached (a layout through O_DIRECT, a device): nothing to drop.
                0 => Some(0),
                _ => {
                    fidelity::drop_cached(&tgt.file, 0, region).ok()?;
                    fidelity::cached_pages(&tgt.file, 0, region)
                }
            })
            .flatten();
        let engine = if args.iocost {
            measure::Engine::Aio
        } else {
            measure::Engine::Uring
        };
        let run = |span| {
            measure::measure(
                p,
                &tgt.file,
                tgt.size,
                region,
                span,
                &STOP,
                i as u64 + 1,
                engine,
            )
        };
        let mut f = run(span);
        // A point too slow for its share of the budget (a disk's QD1 random reads in a short
        // --duration, or a device slowed by other work) is measured once more for as long as
        // MIN_IOS twice over takes at the rate it showed, within the whole budget, rather than
        // refused: its rates are per second of its own run, so the fit takes them as any other.
        if let Some(longer) = f
            .as_ref()
            .ok()
            .filter(|f| f.ios < MIN_IOS && !STOP.load(Ordering::SeqCst))
            .map(|f| stretched(span, f.ios, args.duration))
        {
            say!(
                "note: point {} completed {} I/Os in {:.2} s; measuring it again for {:.2} s",
                p.label(),
                f.as_ref().map_or(0, |f| f.ios),
                span.runtime.as_secs_f64(),
                longer.runtime.as_secs_f64()
            );
            f = run(longer);
        }
        if STOP.load(Ordering::SeqCst) {
            bar.finish_and_clear();
            tgt.remember()?;
            anyhow::bail!("interrupted: no spec written");
        }
        // A target truncated, replaced or deleted under the measurement: named, whether the
        // point failed (reads past the new end come back short) or not.
        if let Some(what) = watch.changed(&tgt.file) {
            bar.finish_and_clear();
            let cause = match &f {
                Err(e) => format!(" (point {}: {e})", p.label()),
                Ok(_) => String::new(),
            };
            anyhow::bail!("{}: {what}{cause}; no spec written", args.target.display());
        }
        let f = f?;
        if let (Some(before), Some(after)) = (
            cached,
            fidelity::cached_pages(&tgt.file, 0, region).filter(|_| reads_only(p)),
        ) {
            let grown = after.saturating_sub(before);
            let read = (f.ios.saturating_mul(p.bs) / 4096).min(region / 4096);
            if grown >= BUFFERED_PAGES && grown.saturating_mul(4) >= read {
                let why = format!(
                    "{grown} pages of the region entered the page cache while point {} read \
                     it with O_DIRECT: its file system serves O_DIRECT buffered, so the figures \
                     are the page cache's",
                    p.label()
                );
                if !args.allow_memory {
                    bar.finish_and_clear();
                    tgt.remember()?;
                    anyhow::bail!(
                        "{}: {why}; no spec written (give --allow-memory to fit memory's speed \
                         anyway)",
                        args.target.display()
                    );
                }
                say!("note: {}: {why} (--allow-memory)", args.target.display());
            }
        }
        if let Err(e) = check_figures(&f, None) {
            bar.finish_and_clear();
            tgt.remember()?;
            anyhow::bail!(
                "{}: point {}: {e}; no spec written (the figures of one I/O are not a device's: \
                 give a longer --duration)",
                args.target.display(),
                p.label()
            );
        }
        measured.push((*p, f));
        bar.inc(1);
    }
    bar.finish_and_clear();
    tgt.remember()?;
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let grid = Grid {
        size: tgt.size.max(region),
        region,
        load,
        duration_s: Some(args.duration),
        span: Some(span),
        points: measured,
    };
    if args.iocost {
        return report_iocost(&args, &grid);
    }
    say!("fitting the SSD model ...");
    report(&args, &grid)
}

/// An error if Ctrl-C or SIGTERM came while fitting: an interrupted calibration writes no
/// spec and no `--json` (none of them partial, and none fitted after the user asked to stop).
fn interrupted() -> anyhow::Result<()> {
    anyhow::ensure!(
        !STOP.load(Ordering::SeqCst),
        "interrupted: no spec or --json written"
    );
    Ok(())
}

/// The scheduler the io.cost.qos sweep runs below io.cost, and why: `--sched` if given (a
/// registered name, else an error naming the flag), else the current scheduler of the device
/// `target` is or is on when it can be read and is registered, else `none`.
fn sweep_sched(flag: Option<&str>, target: &Path) -> anyhow::Result<(String, String)> {
    if let Some(s) = flag {
        let info = registry::find(s).with_context(|| {
            let known: Vec<&str> = registry::all().iter().map(|i| i.name).collect();
            format!(
                "--sched: unknown scheduler {s:?} (known: {})",
                known.join(", ")
            )
        })?;
        return Ok((info.name.to_string(), "--sched".into()));
    }
    Ok(match iocost::current_scheduler(target) {
        Some(name) => match registry::find(&name) {
            Some(info) => (
                info.name.to_string(),
                format!("the current scheduler of {}", iocost::devno(target)),
            ),
            None => (
                "none".into(),
                format!(
                    "{}'s current scheduler {name:?} is not one of ours",
                    iocost::devno(target)
                ),
            ),
        },
        None => (
            "none".into(),
            format!(
                "the current scheduler of {} could not be read",
                iocost::devno(target)
            ),
        ),
    })
}

/// `--iocost`: the model line from the measured points, the QoS proposal, the JSON.
fn report_iocost(args: &Args, grid: &Grid) -> anyhow::Result<()> {
    let model = iocost::model(&grid.points)?;
    let dev = iocost::devno(&args.target);
    let mut table = Vec::new();
    for p in IOCOST_PLAN.iter() {
        if let Some((_, m)) = grid.points.iter().find(|(q, _)| q == p) {
            table.push(vec![
                p.label(),
                format!("{:.0}", m.iops),
                format!("{:.1}", m.mb_s),
                format!("{:.1}", m.mean_us),
                format!("{:.1}", m.p99_us),
            ]);
        }
    }
    output::say_str(&output::table(
        &["point", "IOPS", "MB/s", "mean us", "p99 us"],
        &table,
    ));
    let model_line = model.line(&dev);
    let mut json = serde_json::json!({
        "target": args.target.display().to_string(),
        "region_bytes": grid.region,
        "duration_s": grid.duration_s,
        "load_average": grid.load,
        "points": grid.points.iter().map(|(p, f)| serde_json::json!({"point": p.label(), "measured": f})).collect::<Vec<_>>(),
        "io_cost_model": model_line,
    });
    let mut lines = vec![format!(
        "echo \"{model_line}\" > /sys/fs/cgroup/io.cost.model"
    )];
    if args.drive != "none" {
        let drive = elevator_sim::DriveModel::resolve(&args.drive)
            .map_err(|e| anyhow::anyhow!("--drive {}: {e}", args.drive))?;
        let (sched, why) = sweep_sched(args.sched.as_deref(), &args.target)?;
        let spin = crate::progress::spinner("sweeping io.cost.qos's vrate bounds");
        let prop = iocost_qos::propose(&model, &drive, &sched);
        spin.finish_and_clear();
        interrupted()?;
        let prop = prop?;
        let row = |label: String, t: &iocost_qos::Trial| {
            vec![
                label,
                format!("{:.0}", t.read_p95_us),
                format!("{:.0}", t.read_iops),
                format!("{:.1}", t.write_mb_s),
                format!("{:.1}", t.sat_b_share_pct),
                format!("{:.1}", t.sat_mb_s),
            ]
        };
        let mut rows = vec![row("none (no io.cost)".to_string(), &prop.none)];
        let mut sorted = prop.trials.clone();
        sorted.sort_by_key(|t| (t.max, t.min));
        for t in &sorted {
            rows.push(row(format!("min={} max={}", t.min, t.max), t));
        }
        say!(
            "io.cost.qos sweep on {} under {sched} ({why}; simulated). Protection: a 4 KiB random reader at depth 4 \
             (io.weight 500) beside a 1 MiB writer at depth 32 (io.weight 100); alone, the reader's \
             p95 is {:.0} us (rlat = {} x that), the writer's {:.0} us at {:.1} MB/s. Saturation: \
             /a and /b (io.weight {} and {}: /b {:.1}%) each {} 4 KiB random reader(s) at depth {}:",
            drive.name(),
            prop.read_alone_p95_us,
            iocost_qos::RLAT_MULT,
            prop.write_alone_p95_us,
            prop.write_alone_mb_s,
            iocost_qos::SATURATION_WEIGHTS.0,
            iocost_qos::SATURATION_WEIGHTS.1,
            prop.weight_pct,
            prop.saturation_jobs,
            IOCOST_PLAN[2].qd,
        );
        output::say_str(&output::table(
            &[
                "vrate bounds",
                "read p95 us",
                "read IOPS",
                "write MB/s",
                "sat. /b %",
                "sat. MB/s",
            ],
            &rows,
        ));
        say!(
            "proposed: min={} max={} ({})",
            prop.chosen.min,
            prop.chosen.max,
            match prop.rule {
                iocost_qos::Rule::Both =>
                    "the reader within rlat and the weights kept, the most saturation throughput",
                iocost_qos::Rule::Protection =>
                    "no pair kept both; the reader within rlat, the most write bandwidth",
                iocost_qos::Rule::Weights =>
                    "no pair kept the reader within rlat; the weights kept, the most saturation throughput",
                iocost_qos::Rule::LowestP95 =>
                    "no pair kept the reader within rlat or the weights; the reader's lowest p95",
            }
        );
        let qos_line = prop.qos.line(&dev);
        lines.push(format!("echo \"{qos_line}\" > /sys/fs/cgroup/io.cost.qos"));
        json["io_cost_qos"] = serde_json::json!(qos_line);
        json["sweep_drive"] = serde_json::json!(drive.name());
        json["sweep_sched"] = serde_json::json!(sched);
        json["sweep"] = serde_json::to_value(&prop)?;
    }
    interrupted()?;
    for l in &lines {
        output::out_str(&format!("{l}\n"));
    }
    if let Some(p) = &args.json {
        output::write_json(p, &json)?;
    }
    Ok(())
}

/// How long the fit simulates the points that write: as long as they were `measured`, or with
/// `first_second` at most [`fit::UNKNOWN_SPAN`] (a short calibration's points, shorter).
fn fitted_span(measured: Option<measure::Span>, first_second: bool) -> Option<measure::Span> {
    measured.map(|m| match first_second {
        false => m,
        true => measure::Span {
            ramp: m.ramp.min(fit::UNKNOWN_SPAN.ramp),
            runtime: m.runtime.min(fit::UNKNOWN_SPAN.runtime),
        },
    })
}

/// Fit the spec to `grid`, print the points beside the model, write the spec and the JSON.
fn report(args: &Args, grid: &Grid) -> anyhow::Result<()> {
    let region = grid.region;
    let name = args.name.clone().unwrap_or_else(|| {
        let stem = args
            .target
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "target".into());
        format!("calibrated-{stem}")
    });
    let sim = fit::Sim::new(region, fitted_span(grid.span, args.fit_first_second));
    let spin = crate::progress::spinner("fitting the SSD model");
    let fitted = fit::fit(&name, grid.size, &sim, &grid.points);
    spin.finish_and_clear();
    let mut spec = fitted?;
    let duration = grid
        .duration_s
        .map_or("duration unknown".into(), |d| format!("{d:.0} s"));
    spec.description = format!(
        "calibrated by `elevator calibrate` on {} ({} MiB measured, {duration}, load average {})",
        args.target.display(),
        region >> 20,
        grid.load
    );
    let mut rows = Vec::new();
    let mut table = Vec::new();
    for (p, m) in &grid.points {
        let s = fit::predict(&spec, p, &sim)?;
        table.push(vec![
            p.label(),
            format!("{:.0}", m.iops),
            format!("{:.0}", s.iops),
            pct(s.iops, m.iops),
            format!("{:.1}", m.mb_s),
            format!("{:.1}", m.mean_us),
            format!("{:.1}", s.mean_us),
            pct(s.mean_us, m.mean_us),
        ]);
        rows.push(Row {
            point: p.label(),
            measured: *m,
            predicted: s,
        });
    }
    output::say_str(&output::table(
        &[
            "point", "IOPS", "model", "err", "MB/s", "mean us", "model", "err",
        ],
        &table,
    ));
    let toml = format!(
        "# {}\n# Measured beside predicted, per point: `elevator calibrate --json`.\n{}",
        spec.description,
        spec.to_toml()
    );
    interrupted()?;
    match &args.output {
        Some(p) => {
            elevator_workload::input::write_output(p, &toml)
                .with_context(|| format!("write {}", p.display()))?;
            say!(
                "wrote {} (use it with --drive {})",
                p.display(),
                p.display()
            );
        }
        None => output::out_str(&toml),
    }
    if let Some(p) = &args.json {
        output::write_json(
            p,
            &serde_json::json!({
                "target": args.target.display().to_string(),
                "region_bytes": region,
                "duration_s": grid.duration_s,
                "load_average": grid.load,
                "points": rows,
                "spec": spec,
            }),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::Point;

    /// A point with too few I/Os is measured again for twice MIN_IOS at the rate it showed, at
    /// least four times as long, never past the whole budget.
    #[test]
    fn a_slow_point_is_measured_again_long_enough_within_the_budget() {
        let span = Span::of_slice(Duration::from_millis(450));
        // 14 I/Os in 405 ms: 32 take 926 ms, under four times 405 ms.
        assert_eq!(stretched(span, 14, 9.0).runtime, span.runtime * 4);
        // 2 I/Os: 16 times as long.
        assert_eq!(stretched(span, 2, 9.0).runtime, span.runtime * 16);
        // None: 32 times would be 12.96 s; the budget less the ramp is 8.955 s.
        let none = stretched(span, 0, 9.0);
        assert_eq!(none.runtime, Duration::from_millis(8955));
        assert_eq!(none.ramp, span.ramp);
        // A budget already spent on the point keeps its span.
        assert_eq!(stretched(span, 0, 0.3).runtime, span.runtime);
    }

    /// A `--json` of `points` points, with `duration` as its `duration_s` line (or none).
    fn saved(dir: &Path, points: usize, duration: &str) -> PathBuf {
        let points: Vec<String> = PLAN[..points]
            .iter()
            .map(|p| {
                let figures = format!(
                    r#"{{"ios": 1000, "iops": 1000.0, "mb_s": {}, "mean_us": 1000.0, "p50_us": 900.0, "p99_us": 3000.0}}"#,
                    1000.0 * p.bs as f64 / 1e6
                );
                format!(r#"{{"point": "{}", "measured": {figures}}}"#, p.label())
            })
            .collect();
        let text = format!(
            r#"{{"target": "/dev/loop0", "region_bytes": 1073741824, {duration} "load_average": "1.0 1.0 1.0", "points": [{}]}}"#,
            points.join(",")
        );
        let path = dir.join(format!("calibrate-{points}.json", points = points.len()));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The fit simulates the writing points for as long as they ran; `--fit-first-second`
    /// caps them at 1 s after 0.1 s and leaves a shorter point as it was.
    #[test]
    fn the_fit_spans_the_measured_points_unless_asked_for_the_first_second() {
        let six = Span {
            ramp: Duration::from_millis(600),
            runtime: Duration::from_millis(5400),
        };
        let short = Span {
            ramp: Duration::from_millis(16),
            runtime: Duration::from_millis(144),
        };
        assert_eq!(fitted_span(Some(six), false), Some(six));
        assert_eq!(fitted_span(Some(six), true), Some(fit::UNKNOWN_SPAN));
        assert_eq!(fitted_span(Some(short), true), Some(short));
        assert_eq!(fitted_span(None, false), None);
    }

    /// How long each point ran is the file's `duration_s` shared by the points it lists (the
    /// plan that measured them): 6 s a point of 120 s over 20, 0.6 s of it ramp; over the 18
    /// of session 22's plan, 6.67 s. A file from before it said loads without it.
    #[test]
    fn a_calibration_says_how_long_its_points_ran_or_loads_without() {
        let dir = tempfile::tempdir().unwrap();
        let g = load_measured(&saved(dir.path(), 20, r#""duration_s": 120.0,"#)).unwrap();
        assert_eq!(
            g.span,
            Some(Span {
                ramp: Duration::from_millis(600),
                runtime: Duration::from_millis(5400),
            })
        );
        assert_eq!(g.points.len(), 20);
        let g = load_measured(&saved(dir.path(), 18, r#""duration_s": 120.0,"#)).unwrap();
        let span = g.span.unwrap();
        assert!(((span.ramp + span.runtime).as_secs_f64() - 120.0 / 18.0).abs() < 1e-6);
        let g = load_measured(&saved(dir.path(), 20, "")).unwrap();
        assert_eq!((g.span, g.duration_s, g.points.len()), (None, None, 20));
        let bad = saved(dir.path(), 20, r#""duration_s": -1.0,"#);
        let e = load_measured(&bad).err().unwrap().to_string();
        assert!(
            e.contains("duration_s") && e.contains("calibrate-20.json"),
            "{e}"
        );
    }

    /// Round 8 (issue 32): a hand-edited file listing `randread 4k qd1` twice, with other
    /// figures the second time, was fitted to the first silently, and each point's share of
    /// `duration_s` shortened by the extra entry. Now refused naming both entries.
    #[test]
    fn a_point_measured_twice_is_refused_naming_both_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = saved(dir.path(), 20, r#""duration_s": 120.0,"#);
        let text = std::fs::read_to_string(&path).unwrap();
        let first = format!(r#"{{"point": "{}""#, PLAN[0].label());
        let twice = text.replacen(&format!(r#"{{"point": "{}""#, PLAN[1].label()), &first, 1);
        std::fs::write(&path, twice).unwrap();
        let e = load_measured(&path).err().unwrap().to_string();
        assert!(
            e.contains("points[1]") && e.contains("points[0]") && e.contains("calibrate-20.json"),
            "{e}"
        );
    }

    #[test]
    fn the_plan_spans_depths_1_to_128_and_sizes_4k_to_1m_in_both_directions() {
        let qd: Vec<u32> = PLAN.iter().map(|p| p.qd).collect();
        assert_eq!(qd.iter().min(), Some(&1));
        assert_eq!(qd.iter().max(), Some(&128));
        let bs: Vec<u64> = PLAN.iter().map(|p| p.bs).collect();
        assert_eq!(bs.iter().min(), Some(&4096));
        assert_eq!(bs.iter().max(), Some(&(1 << 20)));
        assert!(PLAN.iter().any(|p| p.writes() && p.bs == 4096));
        assert!(PLAN.iter().any(|p| p.writes() && p.bs == 1 << 20));
        // Reads before writes: the writes fill the drive's buffer. The last points read beside
        // the writer, at depths 32, 1 and 4.
        let first_write = PLAN.iter().position(Point::writes).unwrap();
        assert!(PLAN[first_write..]
            .iter()
            .all(|p| p.writes() || p.beside > 0));
        assert!(PLAN[..first_write].iter().all(|p| p.beside == 0));
        let beside: Vec<u32> = PLAN.iter().map(|p| p.beside).filter(|&d| d > 0).collect();
        assert_eq!(beside, [32, 1, 4]);
        assert!(PLAN[PLAN.len() - 1].beside > 0);
    }
}
