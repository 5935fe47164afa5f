//! A workload's flow size: one size for every flow, or a distribution each flow draws its size
//! from (the papers' general workloads: AMP Fig. 13's sizes uniform between 1 KB and 1 MB, the
//! data-mining and web-search workloads of VL2, DCTCP and pFabric written as empirical CDFs).

use serde::{Deserialize, Deserializer, Serialize};

use crate::rng::SimRng;
use crate::units::Bytes;

/// How big a workload's flows are.
///
/// Written as a size (`70000`, `"70KB"`), as `{ uniform = [low, high] }`, or as
/// `{ cdf = [[size, p], ...] }`: points of the cumulative distribution, sizes and probabilities
/// non-decreasing, the last probability 1. A draw from a CDF interpolates linearly between the
/// two points around a uniform draw, the reading of ns-2's `EmpiricalRandomVariable`, which is
/// how the pFabric and DCTCP workload files are used.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FlowSize {
    /// Every flow this size (serialized as the plain integer sizes have always been).
    Fixed(Bytes),
    /// Uniform between the two sizes, both included.
    Uniform {
        /// The smallest and the largest size.
        uniform: [Bytes; 2],
    },
    /// An empirical cumulative distribution.
    Cdf {
        /// `(size, P(flow size <= size))` points.
        cdf: Vec<(Bytes, f64)>,
    },
}

/// The written forms, tried in turn; [`FlowSize`]'s own `Deserialize` replaces serde's "did
/// not match any variant" with the three spellings.
#[derive(Deserialize)]
#[serde(untagged)]
enum Written {
    Fixed(Bytes),
    Uniform { uniform: [Bytes; 2] },
    Cdf { cdf: Vec<(Bytes, f64)> },
}

impl<'de> Deserialize<'de> for FlowSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Written::deserialize(d)
            .map(|w| match w {
                Written::Fixed(b) => FlowSize::Fixed(b),
                Written::Uniform { uniform } => FlowSize::Uniform { uniform },
                Written::Cdf { cdf } => FlowSize::Cdf { cdf },
            })
            .map_err(|_| {
                serde::de::Error::custom(
                    "a flow size is a size (70000, \"70KB\"), { uniform = [low, high] } or \
                     { cdf = [[size, p], ...] }",
                )
            })
    }
}

impl FlowSize {
    /// What is wrong with the distribution, if anything: sizes of at least one byte, a uniform
    /// range that is not reversed, CDF points non-decreasing in both with the last at 1.
    pub fn check(&self) -> Result<(), String> {
        match self {
            FlowSize::Fixed(b) if b.0 == 0 => Err("must be at least 1 byte".into()),
            FlowSize::Fixed(_) => Ok(()),
            FlowSize::Uniform { uniform: [low, high] } => {
                if low.0 == 0 {
                    Err("uniform: the low size must be at least 1 byte".into())
                } else if high.0 < low.0 {
                    Err(format!("uniform: the high size {} is below the low {}", high.0, low.0))
                } else {
                    Ok(())
                }
            }
            FlowSize::Cdf { cdf } => check_cdf(cdf),
        }
    }

    /// Whether every flow has the same size (no draw is made).
    pub fn is_fixed(&self) -> bool {
        matches!(self, FlowSize::Fixed(_))
    }

    /// One flow's size, drawn with `rng` (a fixed size draws nothing).
    pub fn draw(&self, rng: &mut SimRng) -> u64 {
        match self {
            FlowSize::Fixed(b) => b.0,
            FlowSize::Uniform { uniform: [low, high] } => {
                low.0 + rng.next_u64() % (high.0 - low.0 + 1)
            }
            FlowSize::Cdf { cdf } => cdf_quantile(cdf, rng.next_f64()),
        }
    }

    /// The mean size, bytes (for the offered load a workload's comment states).
    pub fn mean(&self) -> f64 {
        match self {
            FlowSize::Fixed(b) => b.0 as f64,
            FlowSize::Uniform { uniform: [low, high] } => (low.0 + high.0) as f64 / 2.0,
            // Linear between points: each segment's mass at its midpoint size; the mass at or
            // below the first point sits at the first size.
            FlowSize::Cdf { cdf } => {
                let (first_size, first_p) = cdf[0];
                let head = first_size.0 as f64 * first_p;
                head + cdf
                    .windows(2)
                    .map(|w| (w[1].1 - w[0].1) * (w[0].0 .0 + w[1].0 .0) as f64 / 2.0)
                    .sum::<f64>()
            }
        }
    }
}

fn check_cdf(cdf: &[(Bytes, f64)]) -> Result<(), String> {
    let Some(&(_, last)) = cdf.last() else {
        return Err("cdf: needs at least one point".into());
    };
    if let Some((i, _)) = cdf.iter().enumerate().find(|(_, (_, p))| !(0.0..=1.0).contains(p)) {
        return Err(format!("cdf: point {i}'s probability is outside [0, 1]"));
    }
    if cdf[0].0 .0 == 0 {
        return Err("cdf: sizes must be at least 1 byte".into());
    }
    if let Some(i) = cdf.windows(2).position(|w| w[1].0 .0 < w[0].0 .0 || w[1].1 < w[0].1) {
        return Err(format!("cdf: point {} decreases after point {i}", i + 1));
    }
    if last != 1.0 {
        return Err(format!("cdf: the last point's probability is {last}, not 1"));
    }
    Ok(())
}

/// The size at cumulative probability `u` in `[0, 1)`: the first point's size up to its
/// probability, then linear between the points around `u`.
fn cdf_quantile(cdf: &[(Bytes, f64)], u: f64) -> u64 {
    let i = cdf.partition_point(|&(_, p)| p < u);
    if i == 0 {
        return cdf[0].0 .0;
    }
    let ((s0, p0), (s1, p1)) = (cdf[i - 1], cdf[i.min(cdf.len() - 1)]);
    if p1 <= p0 {
        return s1.0;
    }
    let size = s0.0 as f64 + (s1.0 as f64 - s0.0 as f64) * (u - p0) / (p1 - p0);
    (size.round() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FlowSize, String> {
        #[derive(Deserialize)]
        struct Holder {
            bytes: FlowSize,
        }
        toml::from_str::<Holder>(text).map(|h| h.bytes).map_err(|e| e.message().to_owned())
    }

    #[test]
    fn the_three_spellings_read_and_a_fixed_size_writes_as_before() {
        assert_eq!(parse("bytes = 70000"), Ok(FlowSize::Fixed(Bytes(70_000))));
        assert_eq!(parse("bytes = \"2KB\""), Ok(FlowSize::Fixed(Bytes(2048))));
        assert_eq!(
            parse("bytes = { uniform = [\"1KB\", \"1MB\"] }"),
            Ok(FlowSize::Uniform { uniform: [Bytes(1024), Bytes(1 << 20)] })
        );
        assert_eq!(
            parse("bytes = { cdf = [[1460, 0.5], [\"14600B\", 1.0]] }"),
            Ok(FlowSize::Cdf { cdf: vec![(Bytes(1460), 0.5), (Bytes(14_600), 1.0)] })
        );
        let err = parse("bytes = { normal = 3 }").unwrap_err();
        assert!(err.contains("uniform = [low, high]"), "{err}");
        assert_eq!(serde_json::to_string(&FlowSize::Fixed(Bytes(70_000))).unwrap(), "70000");
    }

    #[test]
    fn bad_distributions_say_what_is_wrong() {
        let cdf = |points: &[(u64, f64)]| FlowSize::Cdf {
            cdf: points.iter().map(|&(s, p)| (Bytes(s), p)).collect(),
        };
        let reversed = FlowSize::Uniform { uniform: [Bytes(10), Bytes(5)] };
        assert!(reversed.check().unwrap_err().contains("below the low"));
        assert!(cdf(&[(10, 0.5), (5, 1.0)]).check().unwrap_err().contains("decreases"));
        assert!(cdf(&[(10, 0.5), (20, 0.9)]).check().unwrap_err().contains("not 1"));
        assert!(cdf(&[(10, 1.5)]).check().unwrap_err().contains("outside [0, 1]"));
        assert!(cdf(&[]).check().is_err());
        assert!(FlowSize::Fixed(Bytes(0)).check().is_err());
        assert_eq!(cdf(&[(1, 0.0), (1, 0.5), (100, 1.0)]).check(), Ok(()));
    }

    #[test]
    fn a_cdf_draw_interpolates_between_its_points() {
        let cdf = [(Bytes(1000), 0.5), (Bytes(2000), 0.75), (Bytes(6000), 1.0)];
        assert_eq!(cdf_quantile(&cdf, 0.0), 1000);
        assert_eq!(cdf_quantile(&cdf, 0.5), 1000);
        assert_eq!(cdf_quantile(&cdf, 0.625), 1500);
        assert_eq!(cdf_quantile(&cdf, 0.875), 4000);
        assert_eq!(cdf_quantile(&cdf, 0.999_999), 6000);
    }

    #[test]
    fn draws_follow_the_distribution_and_its_mean() {
        let dist = FlowSize::Cdf {
            cdf: vec![(Bytes(1000), 0.5), (Bytes(2000), 0.75), (Bytes(6000), 1.0)],
        };
        // 0.5 * 1000 + 0.25 * 1500 + 0.25 * 4000
        assert!((dist.mean() - 1875.0).abs() < 1e-9);
        let mut rng = SimRng::new(7, 1);
        let n = 200_000;
        let draws: Vec<u64> = (0..n).map(|_| dist.draw(&mut rng)).collect();
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 1875.0).abs() / 1875.0 < 0.01, "{mean}");
        let at_most_2000 = draws.iter().filter(|&&s| s <= 2000).count() as f64 / n as f64;
        assert!((at_most_2000 - 0.75).abs() < 0.01, "{at_most_2000}");

        let uniform = FlowSize::Uniform { uniform: [Bytes(1024), Bytes(1 << 20)] };
        let draws: Vec<u64> = (0..n).map(|_| uniform.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&s| (1024..=1 << 20).contains(&s)));
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - uniform.mean()).abs() / uniform.mean() < 0.01, "{mean}");
    }
}
