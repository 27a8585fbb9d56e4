//! A metric against a swept value: one line (with its points marked) per series.

use plotters::prelude::*;

use super::{color, svg, Series, CAPTION, SIZE};

/// `series` as lines with markers, x labelled `x_desc`, y labelled `y_desc`.
pub fn lines(title: &str, x_desc: &str, y_desc: &str, series: &[Series]) -> anyhow::Result<String> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x_lo, x_hi) = if x_lo.is_finite() && x_hi > x_lo {
        let pad = (x_hi - x_lo) * 0.05;
        (x_lo - pad, x_hi + pad)
    } else if x_lo.is_finite() {
        (x_lo - 1.0, x_lo + 1.0)
    } else {
        (0.0, 1.0)
    };
    let y_hi = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_hi = if y_hi > 0.0 { y_hi * 1.1 } else { 1.0 };
    svg(SIZE, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, CAPTION)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, 0.0..y_hi)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
                .label(s.label.as_str())
                .legend(super::legend_line(c));
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        super::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}
