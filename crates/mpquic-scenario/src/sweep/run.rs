//! One run of a sweep: which it is ([`RunId`]), what a backend gives of it ([`Ran`]) and what
//! the loop made of that ([`Done`], or the [`FailedRun`] that says why there is none).

use serde::{Deserialize, Serialize};

use crate::record::RunRecord;
use crate::results::{AnalysisRow, FailedRun, RunEntry};

/// One run of a sweep: a point of the experiment (its index) with a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunId {
    /// Index into the experiment's points.
    pub point: usize,
    /// The seed.
    pub seed: u64,
    /// Which of its point's runs it is, from 1 (its round, when rounds are interleaved).
    pub round: usize,
}

/// What a backend collected of one run.
#[derive(Debug, Clone)]
pub struct Ran<X> {
    /// The run in the backends' common terms, which the metrics and analyses read.
    pub record: RunRecord,
    /// Where the backend wrote the run's own output, if it writes one.
    pub dir: Option<String>,
    /// What only the backend uses of it.
    pub extra: X,
}

/// A measured run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Done<X> {
    /// Which run.
    pub id: RunId,
    /// Its entry in `experiment.json`.
    pub entry: RunEntry,
    /// Per analysis that gives a table, this run's rows.
    pub rows: Vec<(String, Vec<AnalysisRow>)>,
    /// The analyses of it that failed.
    pub failed: Vec<FailedRun>,
    /// What only the backend uses of it.
    pub extra: X,
}

/// A run measured, or why it failed.
pub type Finished<X> = Result<Done<X>, FailedRun>;
