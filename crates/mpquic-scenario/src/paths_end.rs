//! `paths_end`: whether a multipath flow's paths still carry data at the end of the run, or its
//! coupled controller keeps some from new data (AMP's suppression, MPTCP-D's elimination).
//! `active` = the paths the client's mpquic-cc controller lets carry new data at the end
//! ([`FlowFacts::active_paths_end`](crate::record::FlowFacts::active_paths_end): the
//! simulator's controller snapshot; the testbed's client report at the end of its transfer,
//! where a closed path is not active), summed over the metric's flows; NaN where none runs
//! such a controller.

use crate::record::Run;

/// The `paths_end` metric `metric` of the run over the given flows.
pub fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    if metric != "active" {
        return f64::NAN;
    }
    let counts: Vec<usize> =
        flows.iter().filter_map(|&i| run.record.flows.get(i)?.active_paths_end).collect();
    if counts.is_empty() {
        f64::NAN
    } else {
        counts.iter().sum::<usize>() as f64
    }
}
