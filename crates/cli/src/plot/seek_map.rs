//! The seek map: the sector each request was dispatched to, against the time it was
//! dispatched, reads and writes in two colours (what seekwatcher and iowatcher draw from a
//! blktrace). Under deadline the head sweeps between a writer's region and a reader's; under
//! anticipation it stays with the reader for long stretches.
//!
//! Points are thinned to one per pixel cell per direction. A run that fills more than
//! [`MAX_POINTS`] cells (10^6 scattered requests filled about 540,000: 42 MB of SVG) is binned
//! again to square cells of `k` pixels, the smallest `k` that leaves at most [`MAX_POINTS`],
//! each drawn as a larger dot; the caption then says so. Small runs look as before.

use std::collections::BTreeSet;

use plotters::prelude::*;

use super::{color, svg, Io, CAPTION, SIZE};

/// Pixel cells per axis the points are thinned to (about the plotting area's size).
const CELLS: (f64, f64) = (820.0, 330.0);

/// The most dots a seek map draws (both directions together): about 1.7 MB of SVG.
pub const MAX_POINTS: usize = 20_000;

/// One dispatched request's place on the map: (time s, sector, write).
pub fn points(ios: &[Io]) -> Vec<(f64, u64, bool)> {
    ios.iter()
        .filter(|io| !io.merged)
        .map(|io| (io.dispatched, io.sector, io.write))
        .collect()
}

/// The seek map of the dispatched (not merged) requests in `ios`.
pub fn seek_map(title: &str, ios: &[Io]) -> anyhow::Result<String> {
    let pts = points(ios);
    let t_end = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-3);
    let s_lo = pts.iter().map(|p| p.1).min().unwrap_or(0);
    let s_hi = pts.iter().map(|p| p.1).max().unwrap_or(1).max(s_lo + 1);
    // One point per (cell, direction), in a deterministic order.
    let mut cells = BTreeSet::new();
    for &(t, s, w) in &pts {
        let cx = (t / t_end * CELLS.0) as u32;
        let cy = ((s - s_lo) as f64 / (s_hi - s_lo) as f64 * CELLS.1) as u32;
        cells.insert((w, cx, cy));
    }
    // Binned again to k x k pixel cells while there are too many to draw.
    let fine = cells.clone();
    let mut k = 1u32;
    while cells.len() > MAX_POINTS {
        k += 1;
        cells = fine
            .iter()
            .map(|&(w, cx, cy)| (w, cx / k * k, cy / k * k))
            .collect();
    }
    let half = f64::from(k) / 2.0;
    let to_point = |&(_, cx, cy): &(bool, u32, u32)| {
        (
            (f64::from(cx) + half) / CELLS.0 * t_end,
            s_lo as f64 + (f64::from(cy) + half) / CELLS.1 * (s_hi - s_lo) as f64,
        )
    };
    let radius = k.div_ceil(2).max(1) as i32;
    let caption = if k == 1 {
        format!("{title} ({} requests)", pts.len())
    } else {
        format!(
            "{title} ({} requests, {} dots: {k}x{k} pixel bins)",
            pts.len(),
            cells.len()
        )
    };
    svg(SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption, CAPTION)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..t_end, s_lo as f64..s_hi as f64)?;
        chart
            .configure_mesh()
            .x_desc("time dispatched (s)")
            .y_desc("sector")
            .y_label_formatter(&|y| format!("{:.3e}", y))
            .draw()?;
        for (i, (write, label)) in [(false, "read"), (true, "write")].into_iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(
                    cells
                        .iter()
                        .filter(|p| p.0 == write)
                        .map(|p| Circle::new(to_point(p), radius, c.filled())),
                )?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 10, y), 3, c.filled()));
        }
        super::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}
