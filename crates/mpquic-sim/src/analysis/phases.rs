//! `phases` (E4, coexistence, XMP Fig. 6, Table 2): the run cut into phases at the instants of
//! the experiment file's timeline as written (flow starts and stops, paths opened at their
//! `path_times`; 0 and the run's end). The file's, not the point's: every point of a sweep then
//! has the same phases (E4's dctcp point runs every flow on one path and still has flow 1's
//! path instants). `[k]` names phase k (1 = the first).
//!
//! Of the metric's flows present for the whole phase (started by its start, not stopped before
//! its end): `rate_gbps` (`rate_mbps`) = their goodput over the phase's second half, summed
//! (NaN: none present); `paths` = their paths established by the middle of the phase, summed;
//! `jain` = Jain's index of their goodputs.

use super::{timeline, Analysis, Panel, Run};
use crate::net::Ps;
use crate::plot::TimelinePanel;
use crate::report::{goodput_between, jain};

pub const PHASES: Analysis = Analysis { name: "phases", compute, panel: Some(panel) };

fn compute(run: &Run, metric: &str, selector: Option<&str>, flows: &[usize]) -> f64 {
    let sim = run.sim;
    let end = sim.scenario.duration.0;
    let bounds = timeline(run.file, end);
    let phase = selector.and_then(|s| s.trim().parse::<usize>().ok());
    let Some(k) = phase.filter(|k| (1..bounds.len()).contains(k)) else { return f64::NAN };
    let (from, to) = (bounds[k - 1], bounds[k]);
    let mid = from + (to - from) / 2;
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let present: Vec<_> = flows
        .iter()
        .map(|&i| &sim.flows[i])
        .filter(|f| f.spec.start.0 <= from && f.spec.stop.map_or(end, |d| d.0) >= to)
        .collect();
    let rates: Vec<f64> = present.iter().map(|f| goodput_between(f, bucket, mid, to)).collect();
    let sum = |values: &[f64]| {
        if values.is_empty() {
            f64::NAN
        } else {
            values.iter().sum()
        }
    };
    match metric {
        "rate_gbps" => sum(&rates) / 1e9,
        "rate_mbps" => sum(&rates) / 1e6,
        "jain" => jain(&rates).unwrap_or(f64::NAN),
        "paths" => {
            let established = |f: &&crate::sim::Flow| {
                1.0 + f.progress.paths_established.iter().filter(|p| p.1 <= mid).count() as f64
            };
            sum(&present.iter().map(established).collect::<Vec<_>>())
        }
        _ => f64::NAN,
    }
}

/// Per-flow goodput over time (about 250 points), the file's flow starts and path openings
/// marked, each phase's Jain's index in the title.
fn panel(run: &Run) -> Panel {
    let sim = run.sim;
    let end = sim.scenario.duration.0;
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let step = ((end / bucket) as usize / 250).max(1);
    let flows = sim
        .flows
        .iter()
        .map(|f| {
            let points = f
                .progress
                .delivered
                .chunks(step)
                .enumerate()
                .map(|(i, c)| {
                    let secs = c.len() as f64 * bucket as f64 / 1e12;
                    let t_ms = (i * step) as f64 * bucket as f64 / 1e9;
                    (t_ms, c.iter().sum::<u64>() as f64 * 8.0 / secs / 1e9)
                })
                .collect();
            (f.name.clone(), points)
        })
        .collect();
    let all: Vec<usize> = (0..sim.flows.len()).collect();
    let phases = timeline(run.file, end).len().saturating_sub(1);
    let jains: Vec<String> = (1..=phases)
        .map(|k| format!("{:.3}", compute(run, "jain", Some(&k.to_string()), &all)))
        .collect();
    let title = format!("Jain per phase {}", jains.join(" / "));
    Panel::Timeline(TimelinePanel { title, flows, marks: marks(run) })
}

/// The file's flows starting after 0 and paths opening after their flow's handshake (ms,
/// label).
fn marks(run: &Run) -> Vec<(f64, String)> {
    let ms = |t: Ps| t as f64 / 1e9;
    let mut marks = vec![];
    for (i, f) in run.file.flows.iter().enumerate() {
        let name = f.name.clone().unwrap_or_else(|| format!("flow{i}"));
        if f.start.0 > 0 {
            marks.push((ms(f.start.0), format!("{name} starts")));
        }
        for (p, t) in f.path_times.iter().enumerate().filter(|(_, t)| **t > f.connect_at()) {
            marks.push((ms(t.0), format!("{name} +path {}", p + 1)));
        }
    }
    marks
}
