//! Validation CDFs: a drive model's simulated access times against the measured drive's,
//! one panel per drive (`elevator validate --plot`).

use plotters::prelude::*;

use super::cdf::cdf_points;
use super::{color, svg, CAPTION};

/// One drive's validation.
pub struct DriveCdfs<'a> {
    /// Drive name.
    pub drive: &'a str,
    /// RMS horizontal distance between the two CDFs, ms.
    pub demerit_ms: f64,
    /// Simulated access times, ms.
    pub simulated_ms: &'a [f64],
    /// Measured access times, ms.
    pub measured_ms: &'a [f64],
}

/// One panel per drive: the measured and the simulated access-time CDFs.
pub fn validation_cdfs(drives: &[DriveCdfs]) -> anyhow::Result<String> {
    let n = drives.len().max(1);
    svg((800, 420 * n as u32), |root| {
        let areas = root.split_evenly((n, 1));
        for (d, area) in drives.iter().zip(areas.iter()) {
            let mut sim = d.simulated_ms.to_vec();
            let mut meas = d.measured_ms.to_vec();
            sim.sort_by(f64::total_cmp);
            meas.sort_by(f64::total_cmp);
            let xmax = sim
                .last()
                .copied()
                .unwrap_or(1.0)
                .max(meas.last().copied().unwrap_or(1.0));
            let mut chart = ChartBuilder::on(area)
                .caption(
                    format!(
                        "{}: access time CDF (demerit {:.3} ms)",
                        d.drive, d.demerit_ms
                    ),
                    CAPTION,
                )
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(45)
                .build_cartesian_2d(0.0..xmax * 1.02, 0.0..1.0)?;
            chart
                .configure_mesh()
                .x_desc("access time (ms)")
                .y_desc("fraction of requests")
                .draw()?;
            for (i, (data, label)) in [(&meas, "measured"), (&sim, "elevator")]
                .into_iter()
                .enumerate()
            {
                let c = color(i);
                chart
                    .draw_series(LineSeries::new(cdf_points(data), c.stroke_width(2)))?
                    .label(label)
                    .legend(super::legend_line(c));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE)
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
        }
        Ok(())
    })
}
