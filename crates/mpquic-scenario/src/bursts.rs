//! Burst sources (`kind = "bursts"` workloads): when each one is on, drawn once per run from the
//! run's seed, so that a backend only has to send at the written rate inside those periods.
//!
//! A source alternates off and on periods from its `start`, an off period first (a burst "at a
//! random time"), each length drawn from its [`Spread`] around its mean; over a long window it is
//! on `on_mean / (on_mean + off_mean)` of the time. Each source draws from a random stream of
//! its own, so adding one moves no other random choice of the run.

use crate::model::{BurstSpec, Scenario, Spread, Workload};
use crate::rng::SimRng;
use crate::units::{Ps, Rate};

/// One burst source of a run, with its on periods.
#[derive(Debug, Clone, PartialEq)]
pub struct BurstSource {
    /// Its name in results.
    pub name: String,
    /// The sending host.
    pub from: String,
    /// The receiving host.
    pub to: String,
    /// The sender's address, counted from 0.
    pub from_addr: usize,
    /// The receiver's address, counted from 0.
    pub to_addr: usize,
    /// The rate while on, bits per second on the wire.
    pub rate: Rate,
    /// UDP payload per datagram, bytes.
    pub payload: u64,
    /// The on periods, `[begin, end)` in picoseconds, in order, none past the source's stop.
    pub on: Vec<(Ps, Ps)>,
}

impl BurstSource {
    /// The time it is on, picoseconds.
    pub fn on_time(&self) -> Ps {
        self.on.iter().map(|(b, e)| e - b).sum()
    }
}

impl Spread {
    /// One period's length, seconds, of mean `mean` seconds (`shape`: a Pareto's).
    pub fn draw(self, mean: f64, shape: f64, rng: &mut SimRng) -> f64 {
        match self {
            Spread::Fixed => mean,
            Spread::Exponential => rng.exponential(mean),
            // Inverse transform: the scale x_m = mean (shape - 1) / shape gives the mean; 1 - u
            // is in (0, 1], so the power is finite.
            Spread::Pareto => {
                let scale = mean * (shape - 1.0) / shape;
                scale * (1.0 - rng.next_f64()).powf(-1.0 / shape)
            }
        }
    }
}

/// The burst sources of `scenario`'s run (its seed), in the order of its workloads; a source's
/// default name is `bursts<i>`, `i` its workload's index.
pub fn sources(scenario: &Scenario) -> Vec<BurstSource> {
    let workloads = scenario.workloads.iter().enumerate();
    workloads
        .filter_map(|(w, workload)| match workload {
            Workload::Bursts(spec) => Some(source(w, spec, scenario)),
            _ => None,
        })
        .collect()
}

/// Workload `w`'s source, its periods drawn from its own stream of the run's seed.
fn source(w: usize, spec: &BurstSpec, scenario: &Scenario) -> BurstSource {
    let stop = spec.stop.unwrap_or(scenario.duration).min(scenario.duration).0;
    let mut rng = SimRng::new(scenario.seed, 0x4255_0000 + w as u64);
    BurstSource {
        name: spec.name.clone().unwrap_or_else(|| format!("bursts{w}")),
        from: spec.from.clone(),
        to: spec.to.clone(),
        from_addr: spec.from_addr,
        to_addr: spec.to_addr,
        rate: spec.rate,
        payload: spec.packet.unwrap_or(u64::from(scenario.transport.mtu)),
        on: on_periods(spec, stop, &mut rng),
    }
}

/// Off and on periods in turn from `spec.start` until `stop`: the on ones, the last cut at
/// `stop`.
fn on_periods(spec: &BurstSpec, stop: Ps, rng: &mut SimRng) -> Vec<(Ps, Ps)> {
    let (on_mean, off_mean) = (spec.on_mean.secs(), spec.off_mean.secs());
    // Seconds to picoseconds; a draw too long for the type saturates, past any stop.
    let ps = |secs: f64| (secs * 1e12) as Ps;
    let mut periods = vec![];
    let mut t = spec.start.0;
    loop {
        t = t.saturating_add(ps(spec.off_dist.draw(off_mean, spec.shape, rng)));
        if t >= stop {
            return periods;
        }
        let end = t.saturating_add(ps(spec.on_dist.draw(on_mean, spec.shape, rng)));
        periods.push((t, end.min(stop)));
        t = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_scenario;
    use crate::units::Dur;

    /// A scenario with one burst source whose workload lines are `lines`.
    fn scenario(duration: &str, lines: &str) -> Scenario {
        parse_scenario(&format!(
            "name = \"b\"\nduration = \"{duration}\"\n[topology]\nkind = \"two-path\"\n\
             [[workloads]]\nkind = \"bursts\"\nfrom = \"xa0\"\nto = \"dst\"\nrate = \"50Mbps\"\n\
             {lines}\n"
        ))
        .unwrap()
    }

    /// Over a long window a source is on about on / (on + off) of the time, so it sends at
    /// about rate x on / (on + off): Pareto bursts of mean 2 s and exponential gaps of mean
    /// 10 s, 1/6 of 50 Mbit/s; the exponential and fixed spreads the same.
    #[test]
    fn the_mean_rate_over_a_long_window_is_rate_times_the_duty_cycle() {
        let lines = |on: &str| format!("on_mean = \"2s\"\noff_mean = \"10s\"\non_dist = \"{on}\"");
        for (on, tolerance) in [("pareto", 0.05), ("exponential", 0.02), ("fixed", 0.02)] {
            let s = scenario("1000000s", &lines(on));
            let source = &sources(&s)[0];
            let duty = source.on_time() as f64 / s.duration.0 as f64;
            let mbps = duty * source.rate.0 as f64 / 1e6;
            let expected = 50.0 * 2.0 / 12.0;
            assert!((mbps / expected - 1.0).abs() < tolerance, "{on}: {mbps} against {expected}");
            assert!(source.on.len() > 70_000, "{on}: {} bursts", source.on.len());
        }
    }

    /// Periods are in order, apart, within [start, stop); the seed fixes them, and another
    /// seed or a second source draws others.
    #[test]
    fn periods_are_ordered_within_the_window_and_fixed_by_the_seed() {
        let lines = "on_mean = \"200ms\"\noff_mean = \"1s\"\nstart = \"1s\"\nstop = \"50s\"";
        let s = scenario("60s", lines);
        let on = &sources(&s)[0].on;
        assert!(on.len() > 10, "{on:?}");
        assert!(on[0].0 > Dur::ms(1000).0 && on.last().unwrap().1 <= Dur::ms(50_000).0);
        assert!(on.windows(2).all(|w| w[0].1 < w[1].0) && on.iter().all(|(b, e)| b < e));
        assert_eq!(sources(&s)[0].on, *on);
        let mut other = s.clone();
        other.seed = 2;
        assert_ne!(sources(&other)[0].on, *on);
        // The first source draws the same whatever follows it.
        let mut two = s.clone();
        two.workloads.push(two.workloads[0].clone());
        let both = sources(&two);
        assert_eq!((both[0].on == *on, both[1].on == *on), (true, false));
        assert_eq!((both[0].name.as_str(), both[1].name.as_str()), ("bursts0", "bursts1"));
        assert_eq!(both[0].payload, 1400, "the transport's mtu");
    }
}
