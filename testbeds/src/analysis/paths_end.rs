//! `paths_end`: whether a multipath flow's paths still carry data at the end of the run, or its
//! coupled controller keeps some from new data (AMP's suppression, MPTCP-D's elimination), as
//! the simulator's. `active` = the paths the mpquic client's report at the end of its transfer
//! calls active (its mpquic-cc controller lets them carry new data, and they are open), summed
//! over the metric's flows (NaN: none runs an mpquic-cc controller, so no report has a
//! `controller_state`).

use super::{Analysis, Run};

pub const PATHS_END: Analysis = Analysis { name: "paths_end", compute, table: None };

fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    if metric != "active" {
        return f64::NAN;
    }
    let counts: Vec<usize> = flows
        .iter()
        .filter_map(|&i| run.rep.flows[i].mpquic.as_ref())
        .filter(|report| !report["controller_state"].is_null())
        .map(|report| {
            let paths = report["paths"].as_array().map_or(&[][..], |p| p.as_slice());
            paths.iter().filter(|p| p["active"].as_bool() == Some(true)).count()
        })
        .collect();
    if counts.is_empty() {
        f64::NAN
    } else {
        counts.iter().sum::<usize>() as f64
    }
}
