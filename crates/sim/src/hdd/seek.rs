//! Seek curves: time to move the arm a given number of cylinders.
//!
//! As DiskSim's `mech_g1`: an extracted (measured) table interpolated linearly and extrapolated
//! from its last two points; the Ruemmler-Wilkes formula (`a + b*sqrt(d)` below a boundary,
//! `c + e*d` from it, optional single-cylinder time); the same formula with a measured table for
//! distances 1 to 10; or a constant. A zero-distance seek takes no time.

use super::spec::SeekCurveSpec;

/// A seek curve ready for lookups.
#[derive(Clone, Debug)]
pub enum SeekCurve {
    /// Constant time for any non-zero distance, ms.
    Constant(f64),
    /// Measured points, and a dense table for every distance up to the last point.
    Extracted {
        /// Seek time for each distance `0..dense.len()`, ms.
        dense: Vec<f64>,
        /// Slope used past the last point, ms per cylinder.
        tail_slope: f64,
    },
    /// Ruemmler-Wilkes, with an optional table for distances 1..=10.
    Hpl {
        /// Boundary distance (V1).
        boundary: f64,
        /// `a`, `b`, `c`, `e` (V2..V5).
        coef: [f64; 4],
        /// One-cylinder time (V6) when not computed by the formula.
        single: Option<f64>,
        /// Distances 1..=10, when measured.
        first_ten: Option<[f64; 10]>,
    },
}

impl SeekCurve {
    /// Builds the lookup form of a spec'd curve.
    pub fn new(spec: &SeekCurveSpec) -> SeekCurve {
        match spec {
            SeekCurveSpec::Constant { ms } => SeekCurve::Constant(*ms),
            SeekCurveSpec::Extracted { points } => {
                let last = points.last().map(|p| p[0] as usize).unwrap_or(1);
                let mut dense = Vec::with_capacity(last + 1);
                dense.push(0.0);
                for d in 1..=last {
                    dense.push(interpolate(points, d as f64));
                }
                let tail_slope = if points.len() >= 2 {
                    let a = points[points.len() - 2];
                    let b = points[points.len() - 1];
                    (b[1] - a[1]) / (b[0] - a[0])
                } else {
                    0.0
                };
                SeekCurve::Extracted { dense, tail_slope }
            }
            SeekCurveSpec::Hpl {
                boundary,
                sqrt_base_ms,
                sqrt_factor_ms,
                linear_base_ms,
                linear_factor_ms,
                single_cylinder_ms,
            } => SeekCurve::Hpl {
                boundary: *boundary,
                coef: [
                    *sqrt_base_ms,
                    *sqrt_factor_ms,
                    *linear_base_ms,
                    *linear_factor_ms,
                ],
                single: *single_cylinder_ms,
                first_ten: None,
            },
            SeekCurveSpec::HplFirstTen {
                boundary,
                sqrt_base_ms,
                sqrt_factor_ms,
                linear_base_ms,
                linear_factor_ms,
                first_ten_ms,
            } => SeekCurve::Hpl {
                boundary: *boundary,
                coef: [
                    *sqrt_base_ms,
                    *sqrt_factor_ms,
                    *linear_base_ms,
                    *linear_factor_ms,
                ],
                single: None,
                first_ten: Some(*first_ten_ms),
            },
        }
    }

    /// Seek time in ms for a move of `dist` cylinders.
    #[inline]
    pub fn time(&self, dist: u32) -> f64 {
        if dist == 0 {
            return 0.0;
        }
        match self {
            SeekCurve::Constant(ms) => *ms,
            SeekCurve::Extracted { dense, tail_slope } => {
                let d = dist as usize;
                match dense.get(d) {
                    Some(t) => *t,
                    None => {
                        let last = dense.len() - 1;
                        dense[last] + (d - last) as f64 * tail_slope
                    }
                }
            }
            SeekCurve::Hpl {
                boundary,
                coef,
                single,
                first_ten,
            } => {
                if let Some(t) = first_ten {
                    if dist <= 10 {
                        return t[dist as usize - 1];
                    }
                }
                if dist == 1 {
                    if let Some(s) = single {
                        return *s;
                    }
                }
                let d = f64::from(dist);
                if d < *boundary {
                    coef[0] + coef[1] * d.sqrt()
                } else {
                    coef[2] + coef[3] * d
                }
            }
        }
    }

    /// Mean seek time over all distances `1..cylinders` weighted as for random requests
    /// (uniform start and end cylinder), ms.
    pub fn average(&self, cylinders: u32) -> f64 {
        let n = f64::from(cylinders);
        let mut sum = 0.0;
        let mut w = 0.0;
        for d in 1..cylinders {
            let weight = 2.0 * (n - f64::from(d));
            sum += weight * self.time(d);
            w += weight;
        }
        if w > 0.0 {
            sum / w
        } else {
            0.0
        }
    }
}

/// DiskSim's rule: exact at a point; between points linear; past the end from the last two.
fn interpolate(points: &[[f64; 2]], d: f64) -> f64 {
    let i = points.partition_point(|p| p[0] < d);
    if i < points.len() && points[i][0] == d {
        return points[i][1];
    }
    if i == 0 {
        // Below the first point: scale the first point's time down toward zero distance.
        return points[0][1];
    }
    let (a, b) = if i < points.len() {
        (points[i - 1], points[i])
    } else if points.len() >= 2 {
        (points[points.len() - 2], points[points.len() - 1])
    } else {
        return points[0][1];
    };
    a[1] + (d - a[0]) * (b[1] - a[1]) / (b[0] - a[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracted_curve_is_exact_at_points_and_linear_between() {
        let c = SeekCurve::new(&SeekCurveSpec::Extracted {
            points: vec![[1.0, 1.0], [3.0, 2.0], [11.0, 6.0]],
        });
        assert_eq!(c.time(0), 0.0);
        assert_eq!(c.time(1), 1.0);
        assert_eq!(c.time(2), 1.5);
        assert_eq!(c.time(7), 4.0);
        // Past the last point: extrapolated from the last two.
        assert_eq!(c.time(13), 7.0);
    }

    #[test]
    fn hpl_formula_switches_from_sqrt_to_linear_at_the_boundary() {
        let c = SeekCurve::new(&SeekCurveSpec::Hpl {
            boundary: 300.0,
            sqrt_base_ms: 3.81,
            sqrt_factor_ms: 0.33,
            linear_base_ms: 7.75,
            linear_factor_ms: 0.0059,
            single_cylinder_ms: Some(2.0),
        });
        assert_eq!(c.time(1), 2.0);
        assert!((c.time(100) - (3.81 + 3.3)).abs() < 1e-12);
        assert!((c.time(300) - (7.75 + 0.0059 * 300.0)).abs() < 1e-12);
    }

    #[test]
    fn hpl_first_ten_uses_the_table_up_to_ten_cylinders() {
        let t = [2.89, 3.68, 3.81, 3.98, 4.27, 4.65, 4.52, 4.65, 4.82, 4.99];
        let c = SeekCurve::new(&SeekCurveSpec::HplFirstTen {
            boundary: 300.0,
            sqrt_base_ms: 3.81,
            sqrt_factor_ms: 0.33,
            linear_base_ms: 7.75,
            linear_factor_ms: 0.0059,
            first_ten_ms: t,
        });
        assert_eq!(c.time(1), 2.89);
        assert_eq!(c.time(10), 4.99);
        assert!((c.time(16) - (3.81 + 0.33 * 4.0)).abs() < 1e-12);
    }
}
