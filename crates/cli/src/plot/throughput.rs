//! Throughput over time: each series' bytes completed per time bin, as MB/s.

use plotters::prelude::*;

use super::{color, svg, Timed, CAPTION, SIZE};

/// The bin fio and iowatcher readers expect: 100 ms.
pub const BIN_S: f64 = 0.1;

/// Bytes of each bin of `bin_s` seconds over `[0, end_s)`, as MB/s (10^6 bytes).
pub fn binned_mb_s(events: &[(f64, u64)], bin_s: f64, end_s: f64) -> Vec<(f64, f64)> {
    let n = (end_s / bin_s).ceil().max(1.0) as usize;
    let mut bytes = vec![0u64; n];
    for &(t, b) in events {
        let i = ((t / bin_s) as usize).min(n - 1);
        bytes[i] += b;
    }
    bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| (i as f64 * bin_s, b as f64 / 1e6 / bin_s))
        .collect()
}

/// The end of the last event of every series.
pub fn end_of(series: &[Timed]) -> f64 {
    series
        .iter()
        .flat_map(|s| s.events.iter().map(|e| e.0))
        .fold(0.0, f64::max)
}

/// MB/s per series over time in bins of `bin_s` seconds, one line per series.
pub fn throughput(title: &str, series: &[Timed], bin_s: f64) -> anyhow::Result<String> {
    let end = end_of(series).max(bin_s);
    let lines: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| (s.label.as_str(), binned_mb_s(&s.events, bin_s, end)))
        .collect();
    let top = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.1;
    svg(SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, CAPTION)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..end, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(format!("MB/s ({:.0} ms bins)", bin_s * 1e3))
            .draw()?;
        for (i, (label, pts)) in lines.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(1)))?
                .label(*label)
                .legend(super::legend_line(c));
        }
        super::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}
