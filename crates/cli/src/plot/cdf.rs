//! Latency CDFs: for each series, the fraction of requests finished within x ms, on a log
//! time axis (a reader's few slow requests and a writer's many fast ones on one picture).

use plotters::prelude::*;

use super::{color, svg, Samples, CAPTION, SIZE};

/// At most this many points per line: the CDF is drawn through evenly spaced quantiles.
const MAX_POINTS: usize = 600;

/// Values below this (ms) are drawn at it: a log axis has no zero.
const FLOOR_MS: f64 = 1e-3;

/// The CDF of each series of latencies (ms), one line per series, log x axis.
pub fn latency_cdf(title: &str, series: &[Samples]) -> anyhow::Result<String> {
    let sorted: Vec<(&str, Vec<f64>)> = series
        .iter()
        .map(|s| {
            let mut v: Vec<f64> = s.values.iter().map(|&x| x.max(FLOOR_MS)).collect();
            v.sort_by(f64::total_cmp);
            (s.label.as_str(), v)
        })
        .collect();
    let lo = sorted
        .iter()
        .filter_map(|(_, v)| v.first().copied())
        .fold(f64::INFINITY, f64::min);
    let hi = sorted
        .iter()
        .filter_map(|(_, v)| v.last().copied())
        .fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo * 0.9, hi * 1.1)
    } else {
        (FLOOR_MS, 1.0)
    };
    svg(SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, CAPTION)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)?;
        chart
            .configure_mesh()
            .x_desc("latency (ms, log scale)")
            .y_desc("fraction of requests")
            .draw()?;
        for (i, (label, v)) in sorted.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(cdf_points(v), c.stroke_width(2)))?
                .label(*label)
                .legend(super::legend_line(c));
        }
        super::draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    })
}

/// The points of the CDF of `sorted` values: (value, fraction at or below it), thinned to
/// [`MAX_POINTS`] evenly spaced ranks (the last always kept).
pub fn cdf_points(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(MAX_POINTS).max(1);
    let mut pts: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (sorted[i], (i + 1) as f64 / n as f64))
        .collect();
    if pts.last().map(|p| p.1) != Some(1.0) {
        pts.push((sorted[n - 1], 1.0));
    }
    pts
}
