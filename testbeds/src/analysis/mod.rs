//! Named analyses of a run's raw record, for what the shared catalogue's per-run metrics cannot
//! say: time windows over the sampled link series and the receivers' rate series. An
//! experiment's `[report] analyses = ["shift"]` asks for one; its metrics are named
//! `<analysis>.<metric>`, with `@group` for the flows they are about (as catalogue metrics), are
//! listed in `report.metrics` and fill `experiment.json` and the tables like any other (median,
//! min, max over rounds). The simulator has none of these: there they read "-".
//!
//! Adding one (pathkeep): a module with its [`Analysis`] in [`ANALYSES`].

mod job_phase;
mod shift;

use crate::results::RepResult;
use crate::sampler::Series;
use crate::topology::Net;
use mpquic_scenario::error::{at, ScenarioError};
use mpquic_scenario::experiment::ReportSpec;
use mpquic_scenario::metrics::{self, Metrics};

/// What an analysis reads of one run.
pub struct Run<'a> {
    /// The run's (one) repetition.
    pub rep: &'a RepResult,
    /// Its sampled link directions (`rep<i>-series.json`), times since the sampler's start.
    pub series: &'a [Series],
    /// The topology it ran on (which link carries which address).
    pub net: &'a Net,
    /// The flows' groups, in the order of `rep.flows`.
    pub groups: &'a [Option<String>],
}

/// A named analysis.
pub struct Analysis {
    /// The name a report asks for.
    pub name: &'static str,
    /// Its metrics, with what each means.
    pub metrics: &'static [(&'static str, &'static str)],
    /// One metric over the given flows (indices into `rep.flows`); NaN where it cannot say.
    pub compute: fn(&Run, &str, &[usize]) -> f64,
}

/// Every analysis the testbed has.
pub const ANALYSES: &[Analysis] = &[shift::SHIFT, job_phase::JOB_PHASE];

fn find(name: &str) -> Option<&'static Analysis> {
    ANALYSES.iter().find(|a| a.name == name)
}

/// Whether the report's analyses exist and its `<analysis>.<metric>` names are theirs.
pub fn check(report: &ReportSpec) -> Result<(), ScenarioError> {
    for (i, name) in report.analyses.iter().enumerate() {
        if find(name).is_none() {
            let known: Vec<&str> = ANALYSES.iter().map(|a| a.name).collect();
            return Err(at(
                format!("report.analyses.{i}"),
                format!("netns: unknown analysis `{name}` (known: {})", known.join(", ")),
            ));
        }
    }
    for (i, m) in report.metrics.iter().enumerate() {
        let Some((analysis, metric)) = split(m) else { continue };
        let Some(a) = find(analysis) else { continue };
        if !a.metrics.iter().any(|(k, _)| *k == metric) {
            let known: Vec<&str> = a.metrics.iter().map(|(k, _)| *k).collect();
            return Err(at(
                format!("report.metrics.{i}"),
                format!(
                    "netns: `{analysis}` has no metric `{metric}` (it has {})",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `<analysis>.<metric>[@group]` as (analysis, metric), for an analysis the report asks for.
fn split(m: &str) -> Option<(&str, &str)> {
    let name = m.split_once('@').map_or(m, |(n, _)| n);
    name.split_once('.')
}

/// The report's analysis metrics of one run.
pub fn compute(report: &ReportSpec, run: &Run) -> Metrics {
    report
        .metrics
        .iter()
        .filter_map(|m| {
            let (analysis, metric) = split(m)?;
            let a = find(analysis).filter(|_| report.analyses.iter().any(|r| r == analysis))?;
            let group = m.split_once('@').map(|(_, g)| g).or(report.group.as_deref());
            let flows: Vec<usize> = (0..run.rep.flows.len())
                .filter(|&i| metrics::in_group(run.groups[i].as_deref(), group))
                .collect();
            Some((m.clone(), (a.compute)(run, metric, &flows)))
        })
        .collect()
}
