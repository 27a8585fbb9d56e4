//! Each group's share over time: the fraction of the bytes completed in a bin that each
//! group moved (the picture of a proportional-share controller keeping its promise, or not).

use plotters::prelude::*;

use super::throughput::{binned_mb_s, end_of};
use super::{color, svg, Timed, CAPTION, SIZE};

/// Each series' fraction of every bin's bytes: (bin start s, share 0..1); bins where nothing
/// completed are left out.
pub fn shares(series: &[Timed], bin_s: f64) -> Vec<Vec<(f64, f64)>> {
    let end = end_of(series).max(bin_s);
    let per: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| binned_mb_s(&s.events, bin_s, end))
        .collect();
    let bins = per.first().map_or(0, Vec::len);
    let totals: Vec<f64> = (0..bins)
        .map(|i| per.iter().map(|p| p[i].1).sum())
        .collect();
    per.iter()
        .map(|p| {
            p.iter()
                .zip(&totals)
                .filter(|(_, &t)| t > 0.0)
                .map(|(&(x, y), &t)| (x, y / t))
                .collect()
        })
        .collect()
}

/// Each group's share of the bytes completed per bin of `bin_s` seconds, one line per group.
pub fn group_share(title: &str, groups: &[Timed], bin_s: f64) -> anyhow::Result<String> {
    let end = end_of(groups).max(bin_s);
    let lines = shares(groups, bin_s);
    svg(SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, CAPTION)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..end, 0.0..1.0)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(format!("share of bytes ({:.0} ms bins)", bin_s * 1e3))
            .draw()?;
        for (i, (g, pts)) in groups.iter().zip(&lines).enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(1)))?
                .label(g.label.as_str())
                .legend(super::legend_line(c));
        }
        super::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}
