//! The simulator's plots of the named analyses: a panel per point (its first seed) of the
//! analyses that draw one (`shift_time`, `phases`), into `<analysis>.svg`. The numbers in them
//! are the shared analyses' ([`mpquic_scenario::analyses`]), read from the run's record.

use std::collections::BTreeMap;
use std::path::Path;

use mpquic_scenario::analyses::Run;
use mpquic_scenario::experiment::ReportSpec;
use mpquic_scenario::{phases, shift_time, Dur};
use serde::{Deserialize, Serialize};

use crate::net::Ps;
use crate::plot::{write_shift_plot, write_timeline_plot, ShiftPanel, TimelinePanel};

/// A panel of an analysis's plot: one run (kept in a shard's partial result until the merge
/// draws it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Panel {
    /// A 2-path flow's rate per path, cross traffic shaded (`shift_time`).
    Shift(ShiftPanel),
    /// Per-flow rates over time with the timeline's instants (`phases`).
    Timeline(TimelinePanel),
}

/// The report's analyses' panels of one run, by analysis.
pub fn panels(report: &ReportSpec, run: &Run) -> Vec<(String, Panel)> {
    let drawn = report.analyses.iter().filter_map(|name| match name.as_str() {
        "shift_time" => Some((name.clone(), shift_panel(run))),
        "phases" => Some((name.clone(), timeline_panel(run))),
        _ => None,
    });
    drawn.collect()
}

/// Write `<out>/<analysis>.svg` for each analysis that drew panels: per run (its title, its
/// panels), in run order; each panel's title is led by its run's.
pub fn write_plots(out: &Path, runs: Vec<(String, Vec<(String, Panel)>)>) -> Result<(), String> {
    let mut by_analysis: BTreeMap<String, (Vec<ShiftPanel>, Vec<TimelinePanel>)> = BTreeMap::new();
    for (run, panels) in runs {
        for (name, panel) in panels {
            let (shifts, timelines) = by_analysis.entry(name).or_default();
            match panel {
                Panel::Shift(mut p) => {
                    p.title = format!("{run}: {}", p.title);
                    shifts.push(p)
                }
                Panel::Timeline(mut p) => {
                    p.title = format!("{run}: {}", p.title);
                    timelines.push(p)
                }
            }
        }
    }
    for (name, (shifts, timelines)) in by_analysis {
        let path = out.join(format!("{name}.svg"));
        if !shifts.is_empty() {
            write_shift_plot(&path, &shifts)?;
        }
        if !timelines.is_empty() {
            let title = "per-flow goodput; dashed: flow starts and path openings";
            write_timeline_plot(&path, title, &timelines)?;
        }
    }
    Ok(())
}

/// Per-flow goodput over time (about 250 points), the file's flow starts and path openings
/// marked, each phase's Jain's index in the title.
fn timeline_panel(run: &Run) -> Panel {
    let end = run.point.duration;
    let bucket = run.point.output.goodput_interval.0.max(1);
    let step = ((end.0 / bucket) as usize / 250).max(1);
    let flows = run
        .record
        .flow_series
        .iter()
        .map(|s| {
            let points = s.goodput.chunks(step).enumerate().map(|(i, c)| {
                let t_ms = (i * step) as f64 * bucket as f64 / 1e9;
                (t_ms, c.iter().map(|p| p.1).sum::<f64>() / c.len() as f64 / 1e9)
            });
            (s.flow.clone(), points.collect())
        })
        .collect();
    let all: Vec<usize> = (0..run.record.flows.len()).collect();
    let jains: Vec<String> = (1..=phases::count(run.file, end))
        .map(|k| format!("{:.3}", phases::compute(run, "jain", Some(&k.to_string()), &all)))
        .collect();
    let title = format!("Jain per phase {}", jains.join(" / "));
    Panel::Timeline(TimelinePanel { title, flows, marks: marks(run) })
}

/// The file's flows starting after 0 and paths opening after their flow's handshake (ms,
/// label).
fn marks(run: &Run) -> Vec<(f64, String)> {
    let ms = |t: Dur| t.0 as f64 / 1e9;
    let mut marks = vec![];
    for (i, f) in run.file.flows.iter().enumerate() {
        let name = f.name.clone().unwrap_or_else(|| format!("flow{i}"));
        if f.start.0 > 0 {
            marks.push((ms(f.start), format!("{name} starts")));
        }
        for (p, t) in f.path_times.iter().enumerate().filter(|(_, t)| **t > f.connect_at()) {
            marks.push((ms(*t), format!("{name} +path {}", p + 1)));
        }
    }
    marks
}

/// The 2-path flow's rate per path over time (about 2000 points), the other flows' times
/// shaded, the shifting times in the title.
fn shift_panel(run: &Run) -> Panel {
    let r = run.record;
    let Some((mp, hops)) = shift_time::multipath(r) else {
        let title = "no 2-path flow".into();
        return Panel::Shift(ShiftPanel { title, rates: vec![], cross: vec![] });
    };
    let bucket = run.point.output.goodput_interval.0.max(1);
    let rates = path_rates(
        &shift_time::per_bucket(r, hops[0].0, bucket),
        &shift_time::per_bucket(r, hops[1].0, bucket),
        bucket,
    );
    let end = run.point.duration;
    let (mut cross, mut moved) = (vec![], vec![]);
    for (i, f) in r.flows.iter().enumerate().filter(|(i, _)| *i != mp) {
        let ms = |t: Dur| t.0 as f64 / 1e9;
        cross.push((ms(f.start), ms(f.stop.unwrap_or(end))));
        let shift = shift_time::cross_phase(run, i).and_then(|p| p.shift_ms);
        let shift = shift.map_or("not moved".into(), |t| format!("{t:.1} ms"));
        moved.push(format!("{shift} ({})", f.flow));
    }
    let title = format!("moved in {}", moved.join(", "));
    Panel::Shift(ShiftPanel { title, rates, cross })
}

/// Two paths' bytes per bucket as (ms, Gbit/s on each) in about 2000 points.
fn path_rates(a: &[u64], b: &[u64], bucket: Ps) -> Vec<(f64, f64, f64)> {
    let n = a.len().max(b.len());
    let every = n.div_ceil(2000).max(1);
    let width = (bucket * every as Ps) as f64 / 1e12;
    let gbps = |s: &[u64], r: std::ops::Range<usize>| {
        r.map(|i| s.get(i).copied().unwrap_or(0)).sum::<u64>() as f64 * 8.0 / width / 1e9
    };
    let point = |k: usize| {
        let r = k * every..((k + 1) * every).min(n);
        let t = (k * every) as f64 * bucket as f64 / 1e9;
        (t, gbps(a, r.clone()), gbps(b, r))
    };
    (0..n.div_ceil(every)).map(point).collect()
}
