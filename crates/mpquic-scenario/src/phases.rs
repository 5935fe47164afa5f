//! The phases of the `phases` analysis (E4, coexistence, XMP Fig. 6, Table 2, Fig. 7), shared
//! by both backends so that they compute one statistic. The run is cut into phases at the
//! instants of the experiment file's timeline as written (flow starts and stops, paths opened
//! at their `path_times`, links going down at their `down_at`; 0 and the run's end). The
//! file's, not the point's: every point of a sweep then has the same phases (E4's dctcp point
//! runs every flow on one path and still has flow 1's path instants). A metric's `[k]` names
//! phase k (1 = the first).
//!
//! Of the metric's flows present for the whole phase (started by its start, not stopped before
//! its end): `rate_gbps` (`rate_mbps`) = their goodput over the phase's second half, summed;
//! `paths` = their paths established by the middle of the phase, summed; `jain` = Jain's index
//! of their goodputs (all NaN: none present). Which flows are present is decided on the file's
//! clock, from the flows as written; what they did is read on the run's, the phase's times
//! multiplied by the record's `time_scale` (the testbed's). A present flow's goodput over the
//! phase's second half is its goodput series' bytes there over the half's length (where each
//! point's interval lies is in the series: [`FlowSeries::interval_s`]); its paths established
//! by the middle are its path openings by then (NaN where the backend does not record them:
//! the testbed's kernel MPTCP flows).
//!
//! `link_mbps[k,<from->to>]` reads no flow: the bytes the link direction sent over phase k's
//! second half, over the half's length (XMP Fig. 7's per-subflow rates, where each subflow has
//! a link of its own). Its bytes are those of the link's [`LinkSeries::sent`] intervals
//! stamped inside the half, so the half's edges are exact to one interval (the simulator's
//! `output.goodput_interval` buckets, the testbed's samples).

use crate::model::Scenario;
use crate::record::{FlowFacts, FlowSeries, LinkSeries, PathEventKind, Run, RunRecord};
use crate::units::Dur;

/// The instants at which a scenario's timeline changes (flow starts and stops, path openings,
/// links going down), with 0 and `end` (the run's end): the bounds of its phases, in order.
pub fn timeline(s: &Scenario, end: Dur) -> Vec<Dur> {
    let mut t = vec![Dur(0), end];
    for f in &s.flows {
        t.push(f.start);
        t.extend(f.stop);
        t.extend(f.path_times.iter().copied());
    }
    t.extend(s.written_links().iter().filter_map(|(_, l)| l.down_at));
    t.retain(|&x| x <= end);
    t.sort_unstable();
    t.dedup();
    t
}

/// The number of phases of a scenario's timeline that ends at `end`.
pub fn count(s: &Scenario, end: Dur) -> usize {
    timeline(s, end).len().saturating_sub(1)
}

/// Why `selector` of the `phases` metric `metric` names no phase of the timeline of `file` cut
/// at `point`'s duration, or (`link_mbps`) no link direction of `point`'s topology, if it does
/// not: such a metric would read NaN in every run.
pub fn check_selector(
    file: &Scenario,
    point: &Scenario,
    metric: &str,
    selector: &str,
) -> Result<(), String> {
    let phases = count(file, point.duration);
    let (k, link) = match (metric, selector.split_once(',')) {
        ("link_mbps", Some((k, link))) => (k, Some(link.trim())),
        ("link_mbps", None) => return Err("names no link (write `[<phase>,<from>-><to>]`)".into()),
        _ => (selector, None),
    };
    match k.trim().parse::<usize>() {
        Ok(k) if (1..=phases).contains(&k) => {}
        _ => {
            return Err(format!("`{}` is not a phase (this timeline has 1 to {phases})", k.trim()))
        }
    }
    let Some(link) = link else { return Ok(()) };
    let expanded = point.topology.expand().map_err(|e| e.to_string())?;
    if expanded.directions().any(|(a, b)| link == format!("{a}->{b}")) {
        return Ok(());
    }
    Err(format!("no link direction `{link}` in this topology"))
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

/// The `phases` metric `metric` of phase `selector` of the run over the given flows
/// (`link_mbps`: of the link its selector names after the phase).
pub fn compute(run: &Run, metric_name: &str, selector: Option<&str>, flows: &[usize]) -> f64 {
    let end = run.point.duration;
    let r = run.record;
    let (selector, link) = match (metric_name, selector) {
        ("link_mbps", Some(s)) => match s.split_once(',') {
            Some((k, link)) => (Some(k), r.link_series(link.trim())),
            None => return f64::NAN,
        },
        _ => (selector, None),
    };
    let Some(phase) = Phase::of(run.file, end, selector) else { return f64::NAN };
    let on_run = phase.scaled(r.time_scale());
    let (mid, to) = (on_run.mid().secs(), on_run.to.secs());
    if metric_name == "link_mbps" {
        return link.map_or(f64::NAN, |l| sent_rate(l, mid, to) / 1e6);
    }
    let present: Vec<Present> = flows
        .iter()
        .filter_map(|&i| r.flows.get(i))
        .filter(|f| phase.spans(f.start, f.stop.unwrap_or(end)))
        .map(|f| Present {
            rate_bps: r.flow_series(&f.flow).map_or(0.0, |s| mean_rate(s, mid, to)),
            paths: paths_by(r, f, mid),
        })
        .collect();
    metric(metric_name, &present)
}

/// The mean rate of a goodput series over `[from, to)` (seconds of the run), bit/s: the bits
/// of its points' intervals inside the window over the window's length. Time no interval
/// covers received nothing.
pub fn mean_rate(s: &FlowSeries, from: f64, to: f64) -> f64 {
    if to <= from {
        return f64::NAN;
    }
    let inside = |(t0, t1): (f64, f64), bps: f64| bps * (t1.min(to) - t0.max(from)).max(0.0);
    let bits: f64 = match s.interval_s {
        Some(w) => s.goodput.iter().map(|&(t, bps)| inside((t, t + w), bps)).sum(),
        None => s.goodput.windows(2).map(|p| inside((p[0].0, p[1].0), p[1].1)).sum(),
    };
    bits / (to - from)
}

/// A link direction's sent rate over `[from, to)` (seconds of the run), bit/s: the bytes of its
/// intervals stamped inside the window over the window's length.
pub fn sent_rate(l: &LinkSeries, from: f64, to: f64) -> f64 {
    if to <= from {
        return f64::NAN;
    }
    let inside = l.sent.iter().filter(|&&(t, _)| (from..to).contains(&t));
    inside.map(|&(_, b)| b as f64 * 8.0).sum::<f64>() / (to - from)
}

/// A flow's paths opened by `t_s` (seconds of the run); NaN where its openings are not
/// recorded.
fn paths_by(r: &RunRecord, f: &FlowFacts, t_s: f64) -> f64 {
    if !f.openings_recorded {
        return f64::NAN;
    }
    let opened = r.path_events(&f.flow).filter(|e| e.kind == PathEventKind::Opened);
    opened.filter(|e| e.t_s.is_some_and(|t| t <= t_s)).count() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// E4's timeline: f1 opens paths at 0, 5 and 15 s, f2 starts at 20 s, f4 at 10 s; 25 s.
    fn e4() -> Scenario {
        toml::from_str(
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

    /// Why E4 refuses the `phases` metric `metric` with `selector`, if it does.
    fn refused(metric: &str, selector: &str) -> Option<String> {
        let s = e4();
        check_selector(&s, &s, metric, selector).err()
    }

    #[test]
    fn a_selector_must_name_a_phase_and_a_link_of_the_file() {
        for (metric, fine) in [("jain", "1"), ("rate_mbps", " 5"), ("link_mbps", "2, sw->r")] {
            assert_eq!(refused(metric, fine), None, "{metric}[{fine}]");
        }
        assert_eq!(refused("link_mbps", "3,r->sw"), None, "either direction of a link");
        for (metric, bad, why) in [
            ("jain", "6", "`6` is not a phase (this timeline has 1 to 5)"),
            ("jain", "0", "`0` is not a phase"),
            ("jain", "x", "`x` is not a phase"),
            ("link_mbps", "1,sw->s9", "no link direction `sw->s9` in this topology"),
            ("link_mbps", "1", "names no link"),
        ] {
            let error = refused(metric, bad).unwrap_or_else(|| panic!("{metric}[{bad}] was taken"));
            assert!(error.contains(why), "{metric}[{bad}]: {error}");
        }
    }

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
    fn a_link_going_down_cuts_the_timeline() {
        let mut s = e4();
        if let crate::model::Topology::ManyToOne { bottleneck, .. } = &mut s.topology {
            bottleneck.down_at = Some(Dur(12 * S));
        }
        let secs: Vec<u64> = timeline(&s, Dur(25 * S)).iter().map(|d| d.0 / S).collect();
        assert_eq!(secs, [0, 5, 10, 12, 15, 20, 25]);
    }

    /// `link_mbps[k,link]`: the link's bytes stamped in phase k's second half over its length,
    /// whatever the metric's flows.
    #[test]
    fn the_link_rate_is_its_bytes_in_the_phase_second_half() {
        let s = e4();
        // 0.5 Mbit in each 0.5 s bucket from 0 (1 Mbit/s) up to 3 s, 2 Mbit/s after.
        let sent =
            (0..50).map(|i| (i as f64 * 0.5, if i < 6 { 62_500 } else { 125_000 })).collect();
        let link = LinkSeries { link: "sw->r".into(), samples: vec![], sent };
        let record = RunRecord { link_series: vec![link], ..RunRecord::default() };
        let run = Run { record: &record, point: &s, file: &s };
        // Phase 1's second half, [2.5, 5): the bucket at 2.5 s at 1 Mbit/s, four at 2.
        assert_eq!(compute(&run, "link_mbps", Some("1,sw->r"), &[]), 1.8);
        assert_eq!(compute(&run, "link_mbps", Some("2, sw->r"), &[]), 2.0);
        assert!(compute(&run, "link_mbps", Some("1,r->sw"), &[]).is_nan(), "no such link");
        assert!(compute(&run, "link_mbps", Some("1"), &[]).is_nan(), "no link named");
        assert!(compute(&run, "link_mbps", Some("9,sw->r"), &[]).is_nan(), "no such phase");
        assert!(sent_rate(&record.link_series[0], 1.0, 1.0).is_nan());
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
    fn the_mean_rate_is_the_bits_in_the_window_over_its_length() {
        // Points closing their intervals: 100 Mbit/s over (1, 2], nothing over (2, 3], 50 over
        // (3, 4].
        let goodput = vec![(1.0, 7e6), (2.0, 100e6), (3.0, 0.0), (4.0, 50e6)];
        let s = FlowSeries { flow: "f".into(), goodput, interval_s: None };
        assert_eq!(mean_rate(&s, 1.0, 4.0), 50e6);
        assert_eq!(mean_rate(&s, 1.5, 2.5), 50e6, "half a second of 100");
        assert_eq!(mean_rate(&s, 0.0, 1.0), 0.0, "the first point's own interval is unknown");
        assert_eq!(mean_rate(&s, 4.0, 6.0), 0.0, "nothing after the last point");
        assert!(mean_rate(&s, 2.0, 2.0).is_nan());
        // Buckets opening their intervals: 0.5 s each from 0.
        let goodput = vec![(0.0, 10e6), (0.5, 20e6), (1.0, 30e6)];
        let s = FlowSeries { flow: "f".into(), goodput, interval_s: Some(0.5) };
        assert_eq!(mean_rate(&s, 0.5, 1.5), 25e6);
        assert_eq!(mean_rate(&s, 1.0, 2.0), 15e6, "nothing after the last bucket");
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
