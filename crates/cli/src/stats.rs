//! Figures measured over several seeds: the mean, its 95% confidence interval (Student t) and
//! the value at every seed, as the reproduced tables print them and their JSON keeps them.

use serde::Serialize;

/// Student's t at 0.975 for 1..=30 degrees of freedom (beyond: 1.96 + 2.4 / df, within 0.1%).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Student's t quantile at 0.975 for `df` degrees of freedom (`df` >= 1).
fn t975(df: usize) -> f64 {
    T975.get(df.saturating_sub(1))
        .copied()
        .unwrap_or(1.96 + 2.4 / df as f64)
}

/// One figure over several seeds (or one published figure).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The mean over the seeds (a published figure: the figure).
    pub mean: f64,
    /// Half width of the 95% confidence interval of the mean (Student t, n - 1 degrees of
    /// freedom); absent for a published figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci95: Option<f64>,
    /// The value at each seed, in the order of the run's `seeds`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_seed: Vec<f64>,
}

impl Estimate {
    /// The estimate of `values` (one per seed; at least one).
    pub fn of(values: Vec<f64>) -> Estimate {
        let (mean, ci95) = mean_ci95(&values);
        Estimate {
            mean,
            ci95: Some(ci95),
            per_seed: values,
        }
    }

    /// A published figure: no interval, no seeds.
    pub fn published(value: f64) -> Estimate {
        Estimate {
            mean: value,
            ci95: None,
            per_seed: Vec::new(),
        }
    }

    /// `mean ± ci95` with `decimals` decimals (the mean alone for a published figure).
    pub fn show(&self, decimals: usize) -> String {
        match self.ci95 {
            Some(ci) => format!("{:.d$} ± {:.d$}", self.mean, ci, d = decimals),
            None => format!("{:.d$}", self.mean, d = decimals),
        }
    }

    /// The estimate of `f` applied to every seed's value of `self` and `other` (for ratios
    /// and shares computed per seed). Both must come from the same seeds.
    pub fn zip(&self, other: &Estimate, f: impl Fn(f64, f64) -> f64) -> Estimate {
        if self.per_seed.is_empty() || other.per_seed.is_empty() {
            return Estimate::published(f(self.mean, other.mean));
        }
        assert_eq!(self.per_seed.len(), other.per_seed.len(), "same seeds");
        Estimate::of(
            self.per_seed
                .iter()
                .zip(&other.per_seed)
                .map(|(&a, &b)| f(a, b))
                .collect(),
        )
    }
}

/// Mean and 95% CI half width (Student t) of `xs`; the half width is 0 for fewer than two.
pub fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, t975(xs.len() - 1) * (var / n).sqrt())
}

/// The seeds of a run of `n` seeds starting at `first`: first, first + 1, ...
pub fn seeds(first: u64, n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| first + i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci95_is_student_t_times_standard_error() {
        let (mean, ci) = mean_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(mean, 3.0);
        // sd = sqrt(2.5), se = sqrt(0.5), t(0.975, 4) = 2.776.
        let exact = 2.776 * 0.5f64.sqrt();
        assert!((ci - exact).abs() < 1e-9, "{ci} vs {exact}");
        assert_eq!(mean_ci95(&[7.0]), (7.0, 0.0));
    }

    #[test]
    fn t_beyond_the_table_approaches_the_normal_quantile() {
        assert!((t975(40) - 2.021).abs() < 0.003, "{}", t975(40));
        assert!((t975(120) - 1.980).abs() < 0.003, "{}", t975(120));
        assert_eq!(t975(30), 2.042);
    }

    #[test]
    fn zip_computes_per_seed_then_summarises() {
        let a = Estimate::of(vec![2.0, 4.0, 6.0]);
        let b = Estimate::of(vec![1.0, 2.0, 2.0]);
        let r = a.zip(&b, |x, y| x / y);
        assert_eq!(r.per_seed, vec![2.0, 2.0, 3.0]);
        assert!((r.mean - 7.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            Estimate::published(8.0)
                .zip(&Estimate::published(2.0), |x, y| x / y)
                .mean,
            4.0
        );
    }

    #[test]
    fn show_prints_the_interval_only_for_measured_figures() {
        assert_eq!(Estimate::of(vec![1.0, 3.0]).show(1), "2.0 ± 12.7");
        assert_eq!(Estimate::published(400.0).show(0), "400");
    }
}
