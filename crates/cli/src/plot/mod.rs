//! Plots as SVG text, one file per kind, each a function from plain data to a string:
//! a test calls it and parses the result; the report writes it beside its HTML page.
//!
//! - [`cdf::latency_cdf`]: latency CDF per job and scheduler, log time axis.
//! - [`throughput::throughput`]: MB/s per job over time (100 ms bins by default).
//! - [`seek_map::seek_map`]: the sector each request went to over time, reads and writes
//!   marked apart (the seek map of seekwatcher and iowatcher).
//! - [`queue_depth::queue_depth`]: requests in the scheduler and at the device over time.
//! - [`share::group_share`]: each group's share of the bytes moved over time.
//! - [`validation::validation_cdfs`]: simulated against measured access-time CDFs.
//! - [`lines::lines`]: any metric against a swept value, one line per series.
//!
//! Every plot is drawn by plotters' SVG backend into a string, so nothing here touches a
//! file. [`Io`] is the one per-request shape the request-level plots read, converted from the
//! simulator's and the real executor's records by [`ios_from_sim`] and [`ios_from_real`].

pub mod cdf;
pub mod lines;
pub mod queue_depth;
pub mod seek_map;
pub mod share;
pub mod throughput;
pub mod validation;

use elevator_core::{Nanos, Op};
use plotters::style::RGBColor;

/// One request, in seconds from the start of its run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Io {
    /// Index of the job that issued it.
    pub job: usize,
    /// Whether it wrote (a read otherwise; flushes and discards are left out).
    pub write: bool,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Inserted into the scheduler.
    pub inserted: f64,
    /// Dispatched to the device.
    pub dispatched: f64,
    /// Completed.
    pub completed: f64,
    /// Merged into another request (so it moved no head of its own).
    pub merged: bool,
}

impl Io {
    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        u64::from(self.sectors) * elevator_core::SECTOR_BYTES
    }
    /// From insertion to completion, milliseconds.
    pub fn latency_ms(&self) -> f64 {
        (self.completed - self.inserted) * 1e3
    }
}

/// A labelled set of values (latencies in ms for a CDF).
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// Legend text.
    pub label: String,
    /// The values.
    pub values: Vec<f64>,
}

/// A labelled set of (time s, bytes) events: completions to bin into throughput or shares.
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    /// Legend text.
    pub label: String,
    /// (completion time in seconds, bytes).
    pub events: Vec<(f64, u64)>,
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}

/// A labelled line of (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// The simulator's request records as [`Io`]s (reads and writes only).
pub fn ios_from_sim(records: &[elevator_sim::engine::RequestRecord]) -> Vec<Io> {
    records
        .iter()
        .filter(|r| matches!(r.op, Op::Read | Op::Write))
        .map(|r| Io {
            job: r.job as usize,
            write: r.op == Op::Write,
            sector: r.sector,
            sectors: r.sectors,
            inserted: secs(r.inserted),
            dispatched: secs(r.dispatched),
            completed: secs(r.completed),
            merged: r.merged,
        })
        .collect()
}

/// The real executor's request log as [`Io`]s (reads and writes only).
pub fn ios_from_real(records: &[elevator_real::RequestRecord]) -> Vec<Io> {
    records
        .iter()
        .filter(|r| matches!(r.op, Op::Read | Op::Write))
        .map(|r| Io {
            job: r.job,
            write: r.op == Op::Write,
            sector: r.sector,
            sectors: r.sectors,
            inserted: secs(r.inserted),
            dispatched: secs(r.dispatched),
            completed: secs(r.completed),
            merged: false,
        })
        .collect()
}

/// The latencies of `ios` in ms, labelled `label`.
pub fn latencies(label: &str, ios: &[Io]) -> Samples {
    Samples {
        label: label.to_string(),
        values: ios.iter().map(Io::latency_ms).collect(),
    }
}

/// Each job's latencies in ms, labelled `prefix` + job name (jobs with no I/O left out).
pub fn latencies_by_job(ios: &[Io], jobs: &[String], prefix: &str) -> Vec<Samples> {
    jobs.iter()
        .enumerate()
        .map(|(j, name)| Samples {
            label: format!("{prefix}{name}"),
            values: ios
                .iter()
                .filter(|io| io.job == j)
                .map(Io::latency_ms)
                .collect(),
        })
        .filter(|s| !s.values.is_empty())
        .collect()
}

/// Each job's completions (time, bytes), labelled by job name (jobs with no I/O left out).
pub fn completions_by_job(ios: &[Io], jobs: &[String]) -> Vec<Timed> {
    jobs.iter()
        .enumerate()
        .map(|(j, name)| Timed {
            label: name.clone(),
            events: ios
                .iter()
                .filter(|io| io.job == j)
                .map(|io| (io.completed, io.bytes()))
                .collect(),
        })
        .filter(|t| !t.events.is_empty())
        .collect()
}

/// Eight colours told apart by most readers (Tableau 10's first eight).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Width and height of every single plot, pixels.
pub const SIZE: (u32, u32) = (900, 420);

/// The drawing area every plot draws on.
type Area<'a> =
    plotters::drawing::DrawingArea<plotters::prelude::SVGBackend<'a>, plotters::coord::Shift>;

/// Draw into an SVG string of `size` with `draw`.
fn svg(size: (u32, u32), draw: impl FnOnce(&Area) -> anyhow::Result<()>) -> anyhow::Result<String> {
    use plotters::prelude::*;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(out)
}

/// A series' legend mark: a short line in its colour.
fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> plotters::element::PathElement<(i32, i32)> {
    use plotters::style::Color;
    move |(x, y)| plotters::element::PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
}

/// Draw the legend of `chart`'s labelled series at `position`, on a white box.
fn draw_legend<'a, 'b: 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut plotters::chart::ChartContext<'a, plotters::prelude::SVGBackend<'b>, CT>,
    position: plotters::chart::SeriesLabelPosition,
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(position)
        .draw()?;
    Ok(())
}

/// The caption font.
const CAPTION: (&str, u32) = ("sans-serif", 18);

/// The bin width for `span_s` seconds of run: `base` unless that makes more than `max_bins`
/// bins, then the smallest multiple of `base` that does not.
pub fn bin_width(span_s: f64, base: f64, max_bins: usize) -> f64 {
    let bins = (span_s / base).ceil().max(1.0);
    let k = (bins / max_bins as f64).ceil().max(1.0);
    base * k
}

#[cfg(test)]
mod tests;
