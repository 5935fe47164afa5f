//! `phases` (E4, coexistence, XMP Fig. 6, Table 2): the run cut into phases at the instants of
//! the experiment file's timeline, and per phase the rates, paths and Jain's index of the
//! metric's flows present for all of it; the definition is shared with the testbed
//! ([`mpquic_scenario::phases`]). Here a flow's goodput over the phase's second half is its
//! bytes delivered in the whole buckets (`output.goodput_interval`) of that half, and its paths
//! are path 0 and those established by the phase's middle.

use mpquic_scenario::phases::{self, Phase, Present};
use mpquic_scenario::Dur;

use super::{Analysis, Panel, Run};
use crate::net::Ps;
use crate::plot::TimelinePanel;
use crate::report::goodput_between;

pub const PHASES: Analysis = Analysis { name: "phases", compute, panel: Some(panel) };

fn compute(run: &Run, metric: &str, selector: Option<&str>, flows: &[usize]) -> f64 {
    let sim = run.sim;
    let end = sim.scenario.duration;
    let Some(phase) = Phase::of(run.file, end, selector) else { return f64::NAN };
    let (mid, to) = (phase.mid().0, phase.to.0);
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let present: Vec<Present> = flows
        .iter()
        .map(|&i| &sim.flows[i])
        .filter(|f| phase.spans(f.spec.start, f.spec.stop.unwrap_or(end)))
        .map(|f| Present {
            rate_bps: goodput_between(f, bucket, mid, to),
            paths: 1.0 + f.progress.paths_established.iter().filter(|p| p.1 <= mid).count() as f64,
        })
        .collect();
    phases::metric(metric, &present)
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
    let jains: Vec<String> = (1..=phases::count(run.file, Dur(end)))
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
