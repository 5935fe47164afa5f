//! `paths_end`: whether a multipath flow's paths still carry data at the end of the run, or
//! its coupled controller keeps some from new data (AMP's suppression, MPTCP-D's elimination).
//! `active` = the paths the client's controller allows new data at the end, summed over the
//! metric's flows (NaN: none runs an mpquic-cc controller).

use super::{Analysis, Run};
use crate::sim::Side;

pub const PATHS_END: Analysis = Analysis { name: "paths_end", compute, panel: None };

fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    if metric != "active" {
        return f64::NAN;
    }
    let clients = flows
        .iter()
        .filter_map(|&i| run.report.flows.get(i))
        .filter_map(|f| f.controllers.iter().find(|c| c.side == Side::Client));
    let counts: Vec<usize> =
        clients.map(|c| c.snapshot.paths.iter().filter(|p| p.active).count()).collect();
    if counts.is_empty() {
        f64::NAN
    } else {
        counts.iter().sum::<usize>() as f64
    }
}
