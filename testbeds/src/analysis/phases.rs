//! `phases` (E4, coexistence, XMP Fig. 6, Table 2): the run cut into phases at the instants of
//! the experiment file's timeline, and per phase the rates, paths and Jain's index of the
//! metric's flows present for all of it; the definition is shared with the simulator
//! ([`mpquic_scenario::phases`]). Which flows are present is decided on the file's clock, from
//! the flows as written (as in the simulator); what they did is read on the run's, the phase's
//! times multiplied by `time_scale` (as `compile` scales the flows').
//!
//! A present flow's goodput over the phase's second half is the bytes its receiver's rate series
//! (`FlowResult::throughput`: kernel TCP's sink, an mpquic server's `--received-series`) holds
//! there, over the half's length. Its paths established by the phase's middle: an mpquic flow's
//! client reports each path's `opened_ms` after its connection, which it makes when the runner
//! starts its process (`start_s`); a kernel TCP flow has one; a kernel MPTCP flow's subflows are
//! not recorded (NaN).

use super::{Analysis, Run};
use crate::plan::FlowKind;
use crate::results::FlowResult;
use mpquic_scenario::phases::{self, Phase, Present};

pub const PHASES: Analysis = Analysis { name: "phases", compute, table: None };

fn compute(run: &Run, metric: &str, selector: Option<&str>, flows: &[usize]) -> f64 {
    let end = run.point.duration;
    let Some(phase) = Phase::of(run.file, end, selector) else { return f64::NAN };
    let on_run = phase.scaled(run.time_scale());
    let (mid, to) = (on_run.mid().secs(), on_run.to.secs());
    let spans =
        |i: usize| run.flows.get(i).is_some_and(|f| phase.spans(f.start, f.stop.unwrap_or(end)));
    let present: Vec<Present> = flows
        .iter()
        .filter(|&&i| spans(i))
        .map(|&i| {
            let f = &run.rep.flows[i];
            Present { rate_bps: rate_bps(&f.throughput, mid, to), paths: paths_by(f, mid) }
        })
        .collect();
    phases::metric(metric, &present)
}

/// The mean rate over `[from, to)` (seconds of the run), bit/s, of a receiver's rate series:
/// each point is the end of an interval and the rate over it, Mbit/s, the intervals back to
/// back from the first point (whose own interval, the first few ms of the flow, is not known).
/// Time without a point received nothing.
fn rate_bps(series: &[(f64, f64)], from: f64, to: f64) -> f64 {
    if to <= from {
        return f64::NAN;
    }
    let bits: f64 = series
        .windows(2)
        .map(|w| {
            let ((t0, _), (t1, mbps)) = (w[0], w[1]);
            mbps * 1e6 * (t1.min(to) - t0.max(from)).max(0.0)
        })
        .sum();
    bits / (to - from)
}

/// A flow's paths established by `t_s` (seconds of the run).
fn paths_by(f: &FlowResult, t_s: f64) -> f64 {
    match f.kind {
        FlowKind::KernelTcp => 1.0,
        FlowKind::KernelMptcp => f64::NAN,
        FlowKind::Mpquic => {
            let Some(paths) = f.mpquic.as_ref().and_then(|m| m["paths"].as_array()) else {
                return f64::NAN;
            };
            let opened = paths.iter().filter_map(|p| p["opened_ms"].as_f64());
            opened.filter(|ms| f.start_s + ms / 1e3 <= t_s).count() as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{flow, rep_of, with_run};
    use crate::results::RepResult;
    use serde_json::json;

    /// A receiver's series in 10 ms bins from `from` to `to` (run's seconds) at `mbps(t)`.
    fn series(from: f64, to: f64, mbps: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        let bins = ((to - from) / 0.01).round() as usize;
        (1..=bins).map(|k| from + k as f64 * 0.01).map(|t| (t, mbps(t))).collect()
    }

    /// f1 alone at 100 Mbit/s until f2 starts at 8 s, then f1 at 60 and f2 at 40; f1's second
    /// path opens `opened_ms` after its connection (made at 0.01 s).
    fn rep(opened_ms: f64) -> RepResult {
        let mut f1 = flow(
            "f0.0",
            FlowKind::Mpquic,
            0.01,
            series(0.01, 16.0, |t| if t <= 8.0 { 100.0 } else { 60.0 }),
        );
        f1.mpquic = Some(json!({"paths": [{"opened_ms": 0.0}, {"opened_ms": opened_ms}]}));
        let f2 = flow("f1.0", FlowKind::KernelTcp, 8.003, series(8.003, 16.0, |_| 40.0));
        rep_of(vec![f1, f2])
    }

    /// Metric `metric` of phase `k` over the flows `flows` of `rep`.
    fn metric(rep: &RepResult, metric: &str, k: &str, flows: &[usize]) -> f64 {
        with_run(rep, |run| compute(run, metric, Some(k), flows))
    }

    #[test]
    fn a_flow_counts_in_the_phases_it_is_present_for_on_the_scaled_clock() {
        let rep = rep(4000.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        // Phase 1 (run's 0-4 s): f1 alone, one path; f2 has not started.
        assert!(close(metric(&rep, "rate_mbps", "1", &[0, 1]), 100.0));
        assert_eq!(metric(&rep, "paths", "1", &[0, 1]), 1.0);
        assert_eq!(metric(&rep, "jain", "1", &[0, 1]), 1.0);
        // Phase 2 (4-8 s): f1's second path opened at 4.01 s, before the middle (6 s).
        assert_eq!(metric(&rep, "paths", "2", &[0, 1]), 2.0);
        assert!(metric(&rep, "rate_mbps", "2", &[1]).is_nan(), "f2 is not present in phase 2");
        // Phase 3 (8-16 s): f2, started mid-run, is present; rates over 12-16 s.
        assert!(close(metric(&rep, "rate_mbps", "3", &[0, 1]), 100.0));
        assert!(close(metric(&rep, "rate_mbps", "3", &[1]), 40.0));
        assert!(close(metric(&rep, "rate_gbps", "3", &[0]), 0.06));
        assert_eq!(metric(&rep, "paths", "3", &[0, 1]), 3.0, "f1's two and f2's one");
        let jain = metric(&rep, "jain", "3", &[0, 1]);
        assert!(close(jain, 100.0 * 100.0 / (2.0 * (60.0 * 60.0 + 40.0 * 40.0))), "{jain}");
        assert!(jain > 0.0 && jain < 1.0);
        // No such phase.
        assert!(metric(&rep, "rate_mbps", "4", &[0, 1]).is_nan());
    }

    #[test]
    fn a_path_counts_once_established_by_the_middle_of_the_phase() {
        // Opened at 6.01 s, after phase 2's middle: not yet; by phase 3's, yes.
        let rep = rep(6000.0);
        assert_eq!(metric(&rep, "paths", "2", &[0]), 1.0);
        assert_eq!(metric(&rep, "paths", "3", &[0]), 2.0);
    }

    #[test]
    fn the_rate_is_the_bytes_in_the_window_over_its_length() {
        // 100 Mbit/s over (1, 2], nothing received over (2, 3], 50 over (3, 4].
        let s = [(1.0, 7.0), (2.0, 100.0), (3.0, 0.0), (4.0, 50.0)];
        assert_eq!(rate_bps(&s, 1.0, 4.0), 50e6);
        assert_eq!(rate_bps(&s, 1.5, 2.5), 50e6, "half a second of 100");
        assert_eq!(rate_bps(&s, 0.0, 1.0), 0.0, "the first point's own interval is unknown");
        assert_eq!(rate_bps(&s, 4.0, 6.0), 0.0, "nothing after the last point");
        assert!(rate_bps(&s, 2.0, 2.0).is_nan());
    }
}
