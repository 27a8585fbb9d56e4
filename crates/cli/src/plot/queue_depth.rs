//! Queue depth over time: how many requests wait in the scheduler, and how many are at the
//! device, drawn as steps at every change.

use plotters::prelude::*;

use super::{color, svg, Io, CAPTION, SIZE};

/// At most this many steps per line; beyond, the deepest value of each slice is kept.
const MAX_STEPS: usize = 4000;

/// The number of intervals `[start, end)` covering each instant, as steps (time, depth) at
/// every change, thinned to [`MAX_STEPS`] by keeping each slice's maximum.
pub fn depth_steps(spans: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let mut edges: Vec<(f64, i64)> = Vec::new();
    for (a, b) in spans {
        edges.push((a, 1));
        edges.push((b.max(a), -1));
    }
    // Ends before starts at the same instant: a request handed on leaves before the next
    // arrives.
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let mut depth = 0i64;
    let mut steps: Vec<(f64, f64)> = Vec::new();
    for (t, d) in edges {
        depth += d;
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = depth as f64,
            _ => steps.push((t, depth as f64)),
        }
    }
    if steps.len() > MAX_STEPS {
        let k = steps.len().div_ceil(MAX_STEPS);
        steps = steps
            .chunks(k)
            .map(|c| (c[0].0, c.iter().map(|s| s.1).fold(0.0, f64::max)))
            .collect();
    }
    steps
}

/// Requests in the scheduler (inserted, not dispatched) and at the device (dispatched, not
/// completed) over time, from the requests of a run.
pub fn queue_depth(title: &str, ios: &[Io]) -> anyhow::Result<String> {
    let queued = depth_steps(
        ios.iter()
            .filter(|io| !io.merged)
            .map(|io| (io.inserted, io.dispatched)),
    );
    let device = depth_steps(
        ios.iter()
            .filter(|io| !io.merged)
            .map(|io| (io.dispatched, io.completed)),
    );
    let end = ios.iter().map(|io| io.completed).fold(1e-3, f64::max);
    let top = queued
        .iter()
        .chain(&device)
        .map(|s| s.1)
        .fold(1.0, f64::max)
        * 1.1;
    svg(SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, CAPTION)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..end, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("requests")
            .draw()?;
        for (i, (label, steps)) in [("in the scheduler", &queued), ("at the device", &device)]
            .into_iter()
            .enumerate()
        {
            let c = color(i);
            let mut pts = Vec::with_capacity(steps.len() * 2);
            for w in steps.windows(2) {
                pts.push(w[0]);
                pts.push((w[1].0, w[0].1));
            }
            if let Some(&last) = steps.last() {
                pts.push(last);
            }
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(1)))?
                .label(label)
                .legend(super::legend_line(c));
        }
        super::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}
