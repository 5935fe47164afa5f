//! Named analyses of a run's raw record, for what the shared catalogue's per-run metrics cannot
//! say: time windows over the sampled link series and the receivers' rate series. An
//! experiment's `[report] analyses = ["shift"]` asks for one; its metrics are named
//! `<analysis>.<metric>`, with `@group` for the flows they are about (as catalogue metrics), are
//! listed in `report.metrics` and fill `experiment.json` and the tables like any other (median,
//! min, max over rounds). The names and metrics of every analysis of either backend are declared
//! once in [`mpquic_scenario::analyses`] (which refuses an unknown one at its line in both
//! backends); this module computes those declared for the testbed ([`Backend::Netns`]), and the
//! simulator's own (`shift_time`) reads NaN here, with a note. An analysis may instead (or also)
//! give a table of rows per run (`pathkeep`: one row per path), which `experiment.json` keeps
//! under `analyses.<name>` and `tables.md` prints run by run, not as a median over rounds.
//!
//! Adding one: declare it in `mpquic_scenario::analyses`, then a module here with its
//! [`Analysis`] in [`ANALYSES`].

mod job_phase;
mod pathkeep;
mod paths_end;
mod phases;
mod shift;
#[cfg(test)]
mod testing;

use crate::results::RepResult;
use crate::sampler::Series;
use crate::topology::Net;
use mpquic_scenario::analyses::{self, Backend};
use mpquic_scenario::experiment::ReportSpec;
use mpquic_scenario::metrics::{self, Metrics};
use mpquic_scenario::{FlowSpec, Scenario};

/// What an analysis reads of one run.
pub struct Run<'a> {
    /// The run's (one) repetition.
    pub rep: &'a RepResult,
    /// Its sampled link directions (`rep<i>-series.json`), times since the sampler's start.
    pub series: &'a [Series],
    /// The topology it ran on (which link carries which address).
    pub net: &'a Net,
    /// The point's flows as the language expands them (name, group, start, stop, path_times;
    /// times before `time_scale`), in the order of `rep.flows`.
    pub flows: &'a [FlowSpec],
    /// The point's scenario (its sweep values and `[netns] set` applied).
    pub point: &'a Scenario,
    /// The experiment file's scenario as written (before the sweep).
    pub file: &'a Scenario,
}

impl Run<'_> {
    /// The testbed's factor on the scenario's times (`[netns] time_scale`).
    pub fn time_scale(&self) -> f64 {
        self.point.netns.as_ref().map_or(1.0, |n| n.time_scale)
    }
}

/// A named analysis.
pub struct Analysis {
    /// Its name in [`mpquic_scenario::analyses::ANALYSES`].
    pub name: &'static str,
    /// One metric (`metric`, with its `[selector]`) over the given flows (indices into
    /// `rep.flows`); NaN where it cannot say.
    pub compute: fn(&Run, &str, Option<&str>, &[usize]) -> f64,
    /// The rows of its table for a run (every row has the same columns), if it gives one
    /// (titled as [`mpquic_scenario::analyses`] declares).
    pub table: Option<RunRows>,
}

/// An analysis's rows of one run (every row has the same columns).
pub type RunRows = fn(&Run) -> anyhow::Result<Vec<Row>>;

/// One row: (column, value) in column order.
pub type Row = Vec<(&'static str, serde_json::Value)>;

/// The rows of one run per analysis that gives a table (or why it could not).
pub type Tables = Vec<(&'static str, anyhow::Result<Vec<Row>>)>;

/// Every analysis the testbed has.
pub const ANALYSES: &[Analysis] =
    &[shift::SHIFT, phases::PHASES, paths_end::PATHS_END, job_phase::JOB_PHASE, pathkeep::PATHKEEP];

fn find(name: &str) -> Option<&'static Analysis> {
    ANALYSES.iter().find(|a| a.name == name)
}

/// A line for each analysis of the report the testbed does not compute.
pub fn notes(report: &ReportSpec) -> Vec<String> {
    analyses::not_computed(report, Backend::Netns)
}

/// The report's analysis metrics of one run.
pub fn compute(report: &ReportSpec, run: &Run) -> Metrics {
    analyses::asked(report)
        .filter_map(|asked| {
            let a = find(asked.analysis)?;
            let flows: Vec<usize> = (0..run.rep.flows.len())
                .filter(|&i| {
                    let of = run.flows.get(i).and_then(|f| f.group.as_deref());
                    metrics::in_group(of, asked.group)
                })
                .collect();
            Some((asked.key.to_owned(), (a.compute)(run, asked.metric, asked.selector, &flows)))
        })
        .collect()
}

/// The report's analyses that give tables, with their rows for one run.
pub fn tables(report: &ReportSpec, run: &Run) -> Tables {
    report
        .analyses
        .iter()
        .filter_map(|name| find(name))
        .filter_map(|a| Some((a.name, (a.table?)(run))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The testbed computes exactly the analyses the shared list declares for it.
    #[test]
    fn the_testbed_computes_the_analyses_declared_for_it() {
        let ours: Vec<&str> = ANALYSES.iter().map(|a| a.name).collect();
        let declared = analyses::ANALYSES.iter().filter(|a| a.on(Backend::Netns));
        assert_eq!(ours, declared.map(|a| a.name).collect::<Vec<_>>());
    }
}
