//! The statistics every mpquic crate reports with, defined once: percentiles, mean and standard
//! deviation, Jain's fairness index, empirical CDFs, the median's confidence interval. No
//! dependencies, so any crate may use it without changing the dependency direction (cli ->
//! mpquic -> mpquic-cc; mpquic-sim -> mpquic).
//!
//! # The percentile rule: nearest rank
//!
//! The `q`-quantile of `n` values is the value of rank `ceil(q * n)` in ascending order, ranks
//! counted from 1, clamped to `1..=n`. So it is always one of the observed values, `q = 0` is the
//! minimum, `q = 1` the maximum, and the median of an even count is the lower middle value.
//! For `n = 100`, p99 is the 99th value (not the maximum, which `int(q * n)` as an index would
//! give); for `n < 100`, p99 is the maximum.
//!
//! Why this rule: it is the one `hdrhistogram`'s `value_at_quantile` uses (count `ceil(q * n)`,
//! at least 1), which the library and the simulator record latencies with, so a percentile of a
//! list of values here and one of a histogram there are the same statistic, up to the
//! histogram's bucket precision (it reports the bucket's highest equivalent value). Interpolating
//! rules (e.g. `round(q * (n - 1))` as an index) would differ from the histograms by up to one rank.

/// Values sorted once, for several percentiles of the same data.
#[derive(Debug, Clone, PartialEq)]
pub struct Sorted(Vec<f64>);

impl Sorted {
    /// Sorts a copy of `values` (NaNs, if any, sort last: `f64::total_cmp`).
    pub fn new(values: &[f64]) -> Sorted {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Sorted(v)
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The nearest-rank `q`-quantile (`q` in `[0, 1]`; see the crate docs); `None` without values.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.0.len();
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n.max(1));
        self.0.get(rank - 1).copied()
    }

    /// The smallest value.
    pub fn min(&self) -> Option<f64> {
        self.0.first().copied()
    }

    /// The largest value.
    pub fn max(&self) -> Option<f64> {
        self.0.last().copied()
    }

    /// A confidence interval for the median at `confidence` (e.g. 0.95) that holds whatever
    /// the distribution: the order statistics `(x_(k), x_(n+1-k))`, ranks from 1, with the
    /// largest `k` whose coverage [`median_interval_coverage`] is at least `confidence`.
    /// `None` when even `(min, max)` covers less: below 6 values at 0.95 (`1 - 2 / 2^n`).
    pub fn median_interval(&self, confidence: f64) -> Option<(f64, f64)> {
        let n = self.0.len();
        let k = (1..=n.div_ceil(2))
            .take_while(|&k| median_interval_coverage(n, k) >= confidence)
            .last()?;
        Some((self.0[k - 1], self.0[n - k]))
    }

    /// The empirical CDF: one `(value, fraction of values <= value)` point per value, ascending.
    /// Equal values give a vertical run of points ending at their common fraction.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let n = self.0.len() as f64;
        self.0.iter().enumerate().map(|(i, &x)| (x, (i + 1) as f64 / n)).collect()
    }
}

/// The probability that `(x_(k), x_(n+1-k))` of `n` independent values from one continuous
/// distribution contains its median: each value falls below the median with probability 1/2,
/// so the interval misses it when at most `k - 1` values fall below or at most `k - 1` above,
/// `1 - 2 P(B <= k - 1)` for `B ~ Binomial(n, 1/2)`. Summed in logarithms, so large `n` does
/// not underflow `2^-n`.
pub fn median_interval_coverage(n: usize, k: usize) -> f64 {
    let mut ln_pmf = -(n as f64) * std::f64::consts::LN_2; // P(B = 0)
    let mut below = 0.0;
    for i in 0..k.min(n + 1) {
        below += ln_pmf.exp();
        ln_pmf += ((n - i) as f64 / (i + 1) as f64).ln();
    }
    1.0 - 2.0 * below
}

/// The nearest-rank `q`-quantile of `values` (see the crate docs); `None` without values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    Sorted::new(values).quantile(q)
}

/// The arithmetic mean; `None` without values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The mean and the population standard deviation (divided by `n`: the values are the whole
/// set measured, not a sample of a larger one); `None` without values.
pub fn mean_std(values: &[f64]) -> Option<(f64, f64)> {
    let m = mean(values)?;
    let variance = values.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / values.len() as f64;
    Some((m, variance.sqrt()))
}

/// Jain's fairness index `(sum x)^2 / (n * sum x^2)`: 1 when all are equal, `1/n` when one value
/// has everything. `None` without values or when all are zero (no share to be fair about).
pub fn jain(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    (squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_takes_the_binomial_order_statistics() {
        // n = 6: (min, max) covers 1 - 2/64 = 0.969; n = 5 covers 1 - 2/32 = 0.9375 < 0.95.
        assert!((median_interval_coverage(6, 1) - 62.0 / 64.0).abs() < 1e-12);
        assert!((median_interval_coverage(5, 1) - 30.0 / 32.0).abs() < 1e-12);
        let ranks = |n: usize| -> Vec<f64> { (1..=n).map(|i| i as f64).collect() };
        assert_eq!(Sorted::new(&ranks(5)).median_interval(0.95), None);
        assert_eq!(Sorted::new(&ranks(6)).median_interval(0.95), Some((1.0, 6.0)));
        // n = 10: P(B <= 1) = 11/1024, coverage 0.979 at k = 2; P(B <= 2) = 56/1024 gives
        // 0.891 at k = 3, too little: (x_2, x_9), as tables of the sign test have it.
        assert!((median_interval_coverage(10, 2) - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        assert_eq!(Sorted::new(&ranks(10)).median_interval(0.95), Some((2.0, 9.0)));
        // n = 20: (x_6, x_15), coverage 0.9586 (P(B <= 5) = 21700/2^20).
        assert_eq!(Sorted::new(&ranks(20)).median_interval(0.95), Some((6.0, 15.0)));
        assert!(
            (median_interval_coverage(20, 6) - (1.0 - 2.0 * 21700.0 / 1048576.0)).abs() < 1e-12
        );
        // Large n does not underflow: of 2000 values, k = 956 covers 0.9534 and k = 957 0.9483
        // (exact binomial sums, computed with integers outside this test).
        assert!((median_interval_coverage(2000, 956) - 0.953_447).abs() < 1e-5);
        assert!((median_interval_coverage(2000, 957) - 0.948_298).abs() < 1e-5);
    }

    #[test]
    fn nearest_rank_takes_rank_ceil_q_n() {
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&hundred, 0.99), Some(99.0), "not the maximum for n = 100");
        assert_eq!(quantile(&hundred, 0.5), Some(50.0));
        assert_eq!(quantile(&hundred, 0.0), Some(1.0));
        assert_eq!(quantile(&hundred, 1.0), Some(100.0));
        // rank ceil(0.9 * 4) = 4; ceil(0.5 * 4) = 2 (the lower middle); ceil(0.26 * 4) = 2.
        let four = [40.0, 10.0, 30.0, 20.0];
        assert_eq!(quantile(&four, 0.9), Some(40.0));
        assert_eq!(quantile(&four, 0.5), Some(20.0));
        assert_eq!(quantile(&four, 0.26), Some(20.0));
        assert_eq!(quantile(&four, 0.25), Some(10.0));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    /// The rule is hdrhistogram's: the same ranks on the same integers.
    #[test]
    fn agrees_with_hdrhistogram_on_exact_values() {
        let values: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1543).collect();
        let mut h = hdrhistogram::Histogram::<u64>::new(5).unwrap();
        for &v in &values {
            h.record(v).unwrap();
        }
        let sorted = Sorted::new(&values.iter().map(|&v| v as f64).collect::<Vec<_>>());
        for q in [0.0, 0.001, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(sorted.quantile(q), Some(h.value_at_quantile(q) as f64), "q = {q}");
        }
    }

    #[test]
    fn mean_std_jain_and_cdf() {
        assert_eq!(mean_std(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), Some((5.0, 2.0)));
        assert_eq!(mean(&[]), None);
        assert_eq!(jain(&[3.0, 3.0, 3.0]), Some(1.0));
        assert_eq!(jain(&[0.0, 0.0, 8.0, 0.0]), Some(0.25));
        assert_eq!(jain(&[0.0, 0.0]), None);
        assert_eq!(jain(&[]), None);
        let cdf = Sorted::new(&[3.0, 1.0, 2.0, 2.0]).cdf();
        assert_eq!(cdf, [(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]);
    }
}

/// The crate README's example compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
