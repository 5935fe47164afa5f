//! The phases of the `phases` analysis (E4, coexistence, XMP Fig. 6, Table 2), shared by both
//! backends so that they compute one statistic. The run is cut into phases at the instants of
//! the experiment file's timeline as written (flow starts and stops, paths opened at their
//! `path_times`; 0 and the run's end). The file's, not the point's: every point of a sweep then
//! has the same phases (E4's dctcp point runs every flow on one path and still has flow 1's path
//! instants). A metric's `[k]` names phase k (1 = the first).
//!
//! Of the metric's flows present for the whole phase (started by its start, not stopped before
//! its end): `rate_gbps` (`rate_mbps`) = their goodput over the phase's second half, summed;
//! `paths` = their paths established by the middle of the phase, summed; `jain` = Jain's index
//! of their goodputs (all NaN: none present). Each backend measures a present flow's goodput and
//! paths from its own record (the simulator: bytes delivered per bucket and the paths'
//! establishment times; the testbed: the receiver's rate series and the client's report).

use crate::model::Scenario;
use crate::units::Dur;

/// The instants at which a scenario's timeline changes (flow starts and stops, path openings),
/// with 0 and `end` (the run's end): the bounds of its phases, in order.
pub fn timeline(s: &Scenario, end: Dur) -> Vec<Dur> {
    let mut t = vec![Dur(0), end];
    for f in &s.flows {
        t.push(f.start);
        t.extend(f.stop);
        t.extend(f.path_times.iter().copied());
    }
    t.retain(|&x| x <= end);
    t.sort_unstable();
    t.dedup();
    t
}

/// The number of phases of a scenario's timeline that ends at `end`.
pub fn count(s: &Scenario, end: Dur) -> usize {
    timeline(s, end).len().saturating_sub(1)
}

/// One phase: `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// Its start.
    pub from: Dur,
    /// Its end.
    pub to: Dur,
}

impl Phase {
    /// Phase `selector` (`"1"`: the first) of the timeline of `s` that ends at `end`; None
    /// where there is no such phase.
    pub fn of(s: &Scenario, end: Dur, selector: Option<&str>) -> Option<Phase> {
        let bounds = timeline(s, end);
        let k = selector.and_then(|s| s.trim().parse::<usize>().ok())?;
        (1..bounds.len()).contains(&k).then(|| Phase { from: bounds[k - 1], to: bounds[k] })
    }

    /// Its middle: where the second half, over which rates are taken, begins, and by when a
    /// path counts as established.
    pub fn mid(&self) -> Dur {
        Dur(self.from.0 + (self.to.0 - self.from.0) / 2)
    }

    /// Whether a flow that runs from `start` to `stop` is present for the whole phase.
    pub fn spans(&self, start: Dur, stop: Dur) -> bool {
        start <= self.from && stop >= self.to
    }

    /// The same phase with its times multiplied by `k` (the testbed's `time_scale`).
    pub fn scaled(&self, k: f64) -> Phase {
        let scale = |d: Dur| Dur((d.0 as f64 * k).round() as u64);
        Phase { from: scale(self.from), to: scale(self.to) }
    }
}

/// What one flow present for the whole phase did in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Present {
    /// Its goodput over the phase's second half, bit/s.
    pub rate_bps: f64,
    /// Its paths established by the phase's middle (NaN where the backend cannot say).
    pub paths: f64,
}

/// Metric `metric` of the phase over its present flows; NaN without any, or for a metric the
/// analysis does not have.
pub fn metric(metric: &str, present: &[Present]) -> f64 {
    if present.is_empty() {
        return f64::NAN;
    }
    let rates: Vec<f64> = present.iter().map(|p| p.rate_bps).collect();
    match metric {
        "rate_gbps" => rates.iter().sum::<f64>() / 1e9,
        "rate_mbps" => rates.iter().sum::<f64>() / 1e6,
        "jain" => mpquic_stats::jain(&rates).unwrap_or(f64::NAN),
        "paths" => present.iter().map(|p| p.paths).sum(),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// E4's timeline: f1 opens paths at 0, 5 and 15 s, f2 starts at 20 s, f4 at 10 s; 25 s.
    fn e4() -> Scenario {
        crate::parse_scenario(
            r#"
name = "e4"
duration = "25s"
[topology]
kind = "many-to-one"
senders = 4
sender_addrs = 4
access = { rate = "1Gbps", delay = "2us" }
bottleneck = { rate = "300Mbps", delay = "898us", k = 15 }
[[flows]]
from = "s0"
to = "r"
paths = 3
path_times = ["0s", "5s", "15s"]
[[flows]]
from = "s1"
to = "r"
paths = 2
start = "20s"
[[flows]]
from = "s2"
to = "r"
[[flows]]
from = "s3"
to = "r"
start = "10s"
"#,
        )
        .unwrap()
    }

    const S: u64 = 1_000_000_000_000;

    #[test]
    fn the_timeline_cuts_at_starts_and_path_times_up_to_the_end() {
        let s = e4();
        let secs: Vec<u64> = timeline(&s, Dur(25 * S)).iter().map(|d| d.0 / S).collect();
        assert_eq!(secs, [0, 5, 10, 15, 20, 25]);
        assert_eq!(count(&s, Dur(25 * S)), 5);
        // A shorter run leaves out what comes after its end.
        assert_eq!(count(&s, Dur(12 * S)), 3);
    }

    #[test]
    fn a_phase_is_named_from_one_and_spans_flows_present_throughout() {
        let s = e4();
        let end = Dur(25 * S);
        let p = Phase::of(&s, end, Some("3")).unwrap();
        assert_eq!(p, Phase { from: Dur(10 * S), to: Dur(15 * S) });
        assert_eq!(p.mid(), Dur(12 * S + S / 2));
        assert!(p.spans(Dur(10 * S), end), "a flow starting with the phase is present");
        assert!(!p.spans(Dur(11 * S), end), "one starting in it is not");
        assert!(!p.spans(Dur(0), Dur(14 * S)), "nor one stopping in it");
        for bad in [None, Some("0"), Some("6"), Some("x")] {
            assert_eq!(Phase::of(&s, end, bad), None, "{bad:?}");
        }
        assert_eq!(p.scaled(2.0), Phase { from: Dur(20 * S), to: Dur(30 * S) });
    }

    #[test]
    fn metrics_sum_rates_and_paths_and_take_jain_of_the_rates() {
        let two = [Present { rate_bps: 100e6, paths: 3.0 }, Present { rate_bps: 50e6, paths: 1.0 }];
        assert_eq!(metric("rate_mbps", &two), 150.0);
        assert_eq!(metric("rate_gbps", &two), 0.15);
        assert_eq!(metric("paths", &two), 4.0);
        assert!((metric("jain", &two) - 0.9).abs() < 1e-12, "150^2 / (2 x (100^2 + 50^2))");
        assert!(metric("rate_mbps", &[]).is_nan());
        assert!(metric("other", &two).is_nan());
    }
}
