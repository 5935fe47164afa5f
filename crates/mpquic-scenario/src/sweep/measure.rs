//! The one metrics and analysis pass: a run's record into its entry in `experiment.json`
//! (the catalogue's metrics of its outcome and the report's analyses' of the rest) and its rows
//! of the analyses that give tables, whichever backend ran it.

use crate::analyses::{self, BackendKind, Row};
use crate::metrics;
use crate::results::{AnalysisRow, FailedRun, RunEntry};
use crate::Experiment;

use super::run::{Done, Ran, RunId};

/// Measure run `id` of `e` from what `kind` collected of it; `label` names its point in
/// analysis rows and failures, and `interleaved` says whether its round is one of interleaved
/// rounds (which its entry then records).
pub fn measure<X>(
    e: &Experiment,
    id: RunId,
    ran: Ran<X>,
    kind: BackendKind,
    label: &str,
    interleaved: bool,
) -> Done<X> {
    let (file, point) = (&e.base, &e.points[id.point]);
    let mut scenario = point.scenario.clone();
    scenario.seed = id.seed;
    let outcome = &ran.record.outcome;
    let mut metrics = metrics::compute(&scenario, outcome);
    let (mut rows, mut failed) = (vec![], vec![]);
    if let Some(report) = &scenario.report {
        let run = analyses::Run { record: &ran.record, point: &scenario, file };
        metrics.extend(analyses::compute(report, &run, kind));
        for (name, table) in analyses::tables(report, &run, kind) {
            match table {
                Ok(table) => rows.push((name.to_string(), analysis_rows(table, label, id.round))),
                Err(error) => {
                    eprintln!("FAILED: analysis {name} of {label} round {}: {error}", id.round);
                    let analysis = Some(name.to_string());
                    failed.push(FailedRun {
                        point: label.into(),
                        round: id.round,
                        analysis,
                        error,
                    });
                }
            }
        }
    }
    let (series, x) = point.place(file);
    let entry = RunEntry {
        point: point.name(),
        series,
        x,
        seed: id.seed,
        round: interleaved.then_some(id.round),
        dir: ran.dir,
        host_load_1min: outcome.host_load_1min,
        host_steal_pct: outcome.host_steal_pct,
        metrics,
    };
    Done { id, entry, rows, failed, extra: ran.extra }
}

/// One run's rows of an analysis's table, as `experiment.json` keeps them.
fn analysis_rows(table: Vec<Row>, label: &str, round: usize) -> Vec<AnalysisRow> {
    let row = |row: Row| AnalysisRow {
        point: label.to_string(),
        round,
        values: row.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    };
    table.into_iter().map(row).collect()
}
