//! Y axes that fit their data, robust to spikes.
//!
//! The axis top is the largest value plus headroom, unless a few values stand far above the rest:
//! then it is a high percentile plus headroom, the plot says that it clips, and the clipped
//! values are drawn at the top edge. One spike (a burst measured over a short interval, the
//! initial RTT estimate before any ACK) then no longer flattens everything else onto the floor.

use serde::Serialize;

/// The percentile the axis is fitted to when the maximum is an outlier.
const PERCENTILE: f64 = 0.995;
/// Room above the fitted value, as a fraction of it.
const HEADROOM: f64 = 0.1;
/// A plot gets its own axis when its own would be under this fraction of the shared one.
const OWN_BELOW: f64 = 0.25;
/// The maximum counts as an outlier when it exceeds the percentile by more than this factor.
const OUTLIER_FACTOR: f64 = 1.5;

/// A fitted y axis (it always starts at 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct YAxis {
    /// Top of the axis.
    pub top: f64,
    /// The largest value, when it is above `top` (the plot clips).
    pub clipped_max: Option<f64>,
    /// Set when the plot does not share its row's axis (its values would sit on the floor).
    pub own: bool,
}

impl YAxis {
    /// The axis for `values` (non-finite values are ignored; no values or only zeros: [0, 1]).
    pub fn fit(values: impl IntoIterator<Item = f64>) -> YAxis {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let Some(&max) = v.last().filter(|m| **m > 0.0) else {
            return YAxis::fixed(1.0);
        };
        let p = v[((v.len() - 1) as f64 * PERCENTILE).round() as usize];
        if p > 0.0 && max > p * OUTLIER_FACTOR {
            YAxis { top: p * (1.0 + HEADROOM), clipped_max: Some(max), own: false }
        } else {
            YAxis::fixed(max * (1.0 + HEADROOM))
        }
    }

    /// The axis [0, top], nothing clipped.
    pub fn fixed(top: f64) -> YAxis {
        YAxis { top, clipped_max: None, own: false }
    }

    /// The axes of a row of plots (one list of values per plot): one shared axis, so that the
    /// plots compare at a glance, except for a plot whose own axis would be under a quarter of
    /// the shared one (a receiver's ACK rate next to a sender's data rate): it gets its own.
    pub fn row(plots: &[Vec<f64>]) -> Vec<YAxis> {
        let shared = YAxis::fit(plots.iter().flatten().copied());
        plots
            .iter()
            .map(|values| {
                let own = YAxis::fit(values.iter().copied());
                if own.top < shared.top * OWN_BELOW {
                    YAxis { own: true, ..own }
                } else {
                    shared
                }
            })
            .collect()
    }

    /// A value as drawn: clipped to the top of the axis.
    pub fn clip(&self, v: f64) -> f64 {
        v.min(self.top)
    }

    /// What the plot says about its axis: clipped, not shared (`None`: neither).
    pub fn note(&self) -> Option<String> {
        let clip = self.clipped_max.map(|m| {
            format!("axis clipped at p99.5 + 10% = {}; max {}", short(self.top), short(m))
        });
        let own = self.own.then(|| "own y axis (values under 1/4 of the row's)".to_owned());
        match (clip, own) {
            (Some(c), Some(o)) => Some(format!("{o}; {c}")),
            (c, o) => c.or(o),
        }
    }
}

/// A number in 3-4 significant digits.
pub fn short(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_is_the_maximum_plus_headroom_without_outliers() {
        let axis = YAxis::fit((1..=1000).map(f64::from));
        assert!((axis.top - 1100.0).abs() < 1e-9 && axis.clipped_max.is_none(), "{axis:?}");
        assert_eq!(axis.note(), None);
    }

    #[test]
    fn a_spike_is_clipped_at_the_percentile_and_said() {
        // 24 Mbit/s for 999 buckets, one bucket at 1200 (a burst over a tiny interval).
        let values = std::iter::repeat_n(24.0, 999).chain([1200.0]);
        let axis = YAxis::fit(values);
        assert!((axis.top - 26.4).abs() < 1e-9, "{axis:?}");
        assert_eq!(axis.clipped_max, Some(1200.0));
        assert_eq!(axis.clip(1200.0), axis.top);
        assert_eq!(axis.clip(3.0), 3.0);
        let note = axis.note().unwrap();
        assert!(note.contains("26.4") && note.contains("1200"), "{note}");
    }

    #[test]
    fn empty_zero_and_non_finite_input_give_the_unit_axis() {
        let unit = YAxis::fixed(1.0);
        assert_eq!(YAxis::fit([]), unit);
        assert_eq!(YAxis::fit([0.0, 0.0]), unit);
        assert_eq!(YAxis::fit([f64::NAN, f64::INFINITY]), unit);
    }

    #[test]
    fn mostly_zero_series_keep_their_rare_values_visible() {
        // CE marks in 3 buckets of 1000: the percentile is 0, so nothing is called an outlier.
        let values = std::iter::repeat_n(0.0, 997).chain([5.0, 40.0, 7.0]);
        let axis = YAxis::fit(values);
        assert!((axis.top - 44.0).abs() < 1e-9 && axis.clipped_max.is_none(), "{axis:?}");
    }

    #[test]
    fn a_row_shares_its_axis_unless_a_plot_would_sit_on_the_floor() {
        let sender: Vec<f64> = vec![100.0; 50];
        let similar: Vec<f64> = vec![60.0; 50];
        let acks: Vec<f64> = vec![2.0; 50];
        let axes = YAxis::row(&[sender, similar, acks]);
        assert!((axes[0].top - 110.0).abs() < 1e-9 && !axes[0].own);
        assert_eq!(axes[1], axes[0]);
        assert!((axes[2].top - 2.2).abs() < 1e-9 && axes[2].own, "{:?}", axes[2]);
        assert!(axes[2].note().unwrap().contains("own y axis"));
    }
}
