//! The one writer of a sweep: its finished runs gathered in order and written as
//! `experiment.json`, `tables.md` and `sweep.svg`, whichever backend ran them.

use std::collections::BTreeMap;
use std::path::Path;

use crate::analyses::BackendKind;
use crate::results::{AnalysisRow, ExperimentResults, FailedRun, RunEntry};
use crate::sweep_plot::write_sweep_plot;
use crate::Experiment;

use super::run::{Finished, RunId};

/// A sweep's runs, gathered in the order they were given.
#[derive(Debug)]
pub struct Gathered<X> {
    /// Every finished run.
    pub runs: Vec<RunEntry>,
    /// The runs, and analyses of runs, that failed.
    pub failed: Vec<FailedRun>,
    /// Per analysis that gives a table: the rows of every run.
    pub analysed: BTreeMap<String, Vec<AnalysisRow>>,
    /// What only the backend uses of each finished run.
    pub extras: Vec<(RunId, X)>,
}

/// Gather `finished` (in the sweep's order).
pub fn gather<X>(finished: impl IntoIterator<Item = Finished<X>>) -> Gathered<X> {
    let mut g =
        Gathered { runs: vec![], failed: vec![], analysed: BTreeMap::new(), extras: vec![] };
    for f in finished {
        let done = match f {
            Ok(done) => done,
            Err(failed) => {
                g.failed.push(failed);
                continue;
            }
        };
        g.runs.push(done.entry);
        g.failed.extend(done.failed);
        for (name, rows) in done.rows {
            g.analysed.entry(name).or_default().extend(rows);
        }
        g.extras.push((done.id, done.extra));
    }
    g
}

/// Write the sweep's output into `out`: `experiment.json` (its runs, failures, summary over
/// seeds and analyses' rows), `tables.md` and, for a file with a `[plot]`, `sweep.svg`. Returns
/// what it wrote and the runs' extras for the backend's own plots.
pub fn write<X>(
    e: &Experiment,
    kind: BackendKind,
    (file, command): (&str, String),
    out: &Path,
    g: Gathered<X>,
) -> Result<(ExperimentResults, Vec<(RunId, X)>), String> {
    let mut results = ExperimentResults::new(e, kind, file, Some(command), g.runs);
    results.failed = g.failed;
    results.analyses = g.analysed;
    results.write(out)?;
    write_sweep_plot(&out.join("sweep.svg"), e, &results.summary).map_err(|e| e.to_string())?;
    Ok((results, g.extras))
}
