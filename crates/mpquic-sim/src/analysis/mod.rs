//! The simulator's named analyses: what `[report] analyses = [...]` asks of a finished run
//! beyond the per-run outcome (the links' byte counts per bucket, the flows' delivered bytes
//! per bucket, their path openings). Their names and metrics are declared once for both
//! backends in [`mpquic_scenario::analyses`]; this module computes those declared for the
//! simulator (`Backend::Sim`), and the others' metrics stay NaN (`-`), with a note. Metrics
//! are `<analysis>.<metric>[<selector>][@group]` in `report.metrics` and fill
//! `experiment.json` and the tables like catalogue metrics (median, min, max over seeds). An
//! analysis may also draw a panel per point (its first seed) into `<analysis>.svg`.
//!
//! Adding one: declare it in `mpquic_scenario::analyses`, then a module here with its
//! [`Analysis`] in [`ANALYSES`].

mod paths_end;
mod phases;
mod shift;
mod shift_time;

use std::collections::BTreeMap;
use std::path::Path;

use mpquic_scenario::analyses;
use mpquic_scenario::experiment::ReportSpec;
use mpquic_scenario::metrics::{in_group, Metrics};
use serde::{Deserialize, Serialize};

use crate::net::{Interface, Node};
use crate::plot::{write_shift_plot, write_timeline_plot, ShiftPanel, TimelinePanel};
use crate::report::Report;
use crate::scenario::Scenario;
use crate::Sim;

/// What an analysis reads of one run.
pub struct Run<'a> {
    /// The finished simulation (its scenario is the run's point with its seed).
    pub sim: &'a Sim,
    /// Its report.
    pub report: &'a Report,
    /// The experiment file's scenario as written (before the sweep's overrides).
    pub file: &'a Scenario,
}

/// A panel of an analysis's plot: one run (kept in a shard's partial result until the merge
/// draws it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Panel {
    /// A 2-path flow's rate per path, cross traffic shaded (`shift_time`).
    Shift(ShiftPanel),
    /// Per-flow rates over time with the timeline's instants (`phases`).
    Timeline(TimelinePanel),
}

/// A named analysis the simulator computes.
pub struct Analysis {
    /// Its name in [`mpquic_scenario::analyses::ANALYSES`].
    pub name: &'static str,
    /// One metric (`metric`, with its `[selector]`) over the given flows (indices into
    /// `sim.flows`); NaN where it cannot say.
    pub compute: fn(&Run, &str, Option<&str>, &[usize]) -> f64,
    /// Its panel for a run (titled by the caller), if it draws one.
    pub panel: Option<fn(&Run) -> Panel>,
}

/// Every analysis the simulator has.
pub const ANALYSES: &[Analysis] =
    &[shift::SHIFT, shift_time::SHIFT_TIME, phases::PHASES, paths_end::PATHS_END];

fn find(name: &str) -> Option<&'static Analysis> {
    ANALYSES.iter().find(|a| a.name == name)
}

/// The report's analysis metrics of one run (those of analyses the simulator does not compute
/// are left out: the catalogue's computation has them NaN).
pub fn compute(report: &ReportSpec, run: &Run) -> Metrics {
    analyses::asked(report)
        .filter_map(|asked| {
            let a = find(asked.analysis)?;
            let flows: Vec<usize> = (0..run.sim.flows.len())
                .filter(|&i| in_group(run.sim.flows[i].spec.group.as_deref(), asked.group))
                .collect();
            Some((asked.key.to_owned(), (a.compute)(run, asked.metric, asked.selector, &flows)))
        })
        .collect()
}

/// The report's analyses' panels of one run, by analysis.
pub fn panels(report: &ReportSpec, run: &Run) -> Vec<(String, Panel)> {
    report
        .analyses
        .iter()
        .filter_map(|name| find(name))
        .filter_map(|a| Some((a.name.to_owned(), (a.panel?)(run))))
        .collect()
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

/// The interfaces of host `name` (none if there is no such host).
fn interfaces<'a>(sim: &'a Sim, name: &str) -> &'a [Interface] {
    let host = sim.nodes.iter().find_map(|n| match n {
        Node::Host { name: host, interfaces } if host == name => Some(interfaces),
        _ => None,
    });
    host.map_or(&[], |i| i.as_slice())
}

/// The addresses of host `name`, in order.
fn host_addrs(sim: &Sim, name: &str) -> Vec<std::net::IpAddr> {
    interfaces(sim, name).iter().map(|i| i.ip).collect()
}
