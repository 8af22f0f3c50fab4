//! Summaries of repeated runs: mean, standard deviation, 95% confidence half-width, percentiles.

/// Mean of independent runs with its sample standard deviation and the half-width of the 95%
/// confidence interval of the mean (Student's t, so small run counts are not overconfident).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub sd: f64,
    pub ci95: f64,
}

impl Estimate {
    pub fn low(&self) -> f64 {
        self.mean - self.ci95
    }

    pub fn high(&self) -> f64 {
        self.mean + self.ci95
    }
}

/// Estimate from a sample; with fewer than two values, sd and ci95 are 0 (nothing to say).
pub fn estimate(values: &[f64]) -> Estimate {
    let count = values.len();
    if count == 0 {
        return Estimate {
            mean: f64::NAN,
            sd: 0.0,
            ci95: 0.0,
        };
    }
    let mean = values.iter().sum::<f64>() / count as f64;
    if count < 2 {
        return Estimate {
            mean,
            sd: 0.0,
            ci95: 0.0,
        };
    }
    let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    let sd = (squares / (count - 1) as f64).sqrt();
    let ci95 = t_975(count as u64 - 1) * sd / (count as f64).sqrt();
    Estimate { mean, sd, ci95 }
}

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom: exact table up to 30,
/// then the Cornish-Fisher expansion around the normal quantile (error below 1e-4 there).
pub fn t_975(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    assert!(df >= 1, "t quantile needs at least one degree of freedom");
    if df <= 30 {
        return TABLE[df as usize - 1];
    }
    let z = 1.959_963_984_540_054_f64;
    let n = df as f64;
    let z3 = z.powi(3);
    let z5 = z.powi(5);
    let z7 = z.powi(7);
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// Nearest-rank percentile (`percent` in 0..=100) of an ascending-sorted, non-empty slice.
pub fn percentile_sorted(sorted: &[f64], percent: f64) -> f64 {
    assert!(!sorted.is_empty(), "percentile of nothing");
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
    let rank = ((percent / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Least-squares slope of `ln y` against `ln x`: the exponent `k` in `y ~ x^k`.
pub fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let x_mean = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let y_mean = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let covariance: f64 = logs.iter().map(|p| (p.0 - x_mean) * (p.1 - y_mean)).sum();
    let variance: f64 = logs.iter().map(|p| (p.0 - x_mean) * (p.0 - x_mean)).sum();
    covariance / variance
}

/// The Wilson score interval at 95% of `hits` out of `count` trials (sound at 0 and 1, where a
/// normal interval collapses to a point).
pub fn wilson_95(hits: u32, count: u32) -> (f64, f64) {
    let z = 1.959_964;
    let n = f64::from(count);
    let p = f64::from(hits) / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_of_a_known_sample() {
        let e = estimate(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(e.mean, 5.0);
        assert!((e.sd - 2.138_089_935).abs() < 1e-9);
        assert!((e.ci95 - 2.365 * e.sd / 8f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn t_quantile_is_continuous_and_tends_to_normal() {
        assert!((t_975(31) - 2.0395).abs() < 1e-3);
        assert!((t_975(99) - 1.9842).abs() < 1e-3);
        assert!((t_975(1_000_000) - 1.96).abs() < 1e-3);
        assert!(t_975(30) > t_975(31));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&sorted, 50.0), 50.0);
        assert_eq!(percentile_sorted(&sorted, 99.0), 99.0);
        assert_eq!(percentile_sorted(&sorted, 100.0), 100.0);
        assert_eq!(percentile_sorted(&[3.0], 99.0), 3.0);
    }

    #[test]
    fn slope_of_a_power_law() {
        let points: Vec<(f64, f64)> = (1..10)
            .map(|x| (f64::from(x), 3.0 * f64::from(x * x)))
            .collect();
        assert!((log_log_slope(&points) - 2.0).abs() < 1e-12);
    }
}
