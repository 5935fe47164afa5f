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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{flow, rep_of, with_run};
    use crate::plan::FlowKind;
    use serde_json::json;

    #[test]
    fn active_paths_are_those_the_client_report_calls_active_under_a_coupled_controller() {
        let mut f1 = flow("f0.0", FlowKind::Mpquic, 0.0, vec![]);
        let paths = json!([{"active": true}, {"active": false, "open": false}, {"active": true}]);
        f1.mpquic = Some(json!({"controller_state": {"suppressions": 0}, "paths": paths}));
        let f2 = flow("f1.0", FlowKind::KernelTcp, 8.0, vec![]);
        let rep = rep_of(vec![f1.clone(), f2.clone()]);
        let active =
            |rep, flows: &[usize]| with_run(rep, |run| compute(run, "active", None, flows));
        assert_eq!(active(&rep, &[0, 1]), 2.0, "the kernel flow adds none");
        assert!(active(&rep, &[1]).is_nan(), "a kernel flow has no coupled controller");
        // The stack's own controller reports no controller state.
        f1.mpquic.as_mut().unwrap()["controller_state"] = json!(null);
        assert!(active(&rep_of(vec![f1, f2]), &[0]).is_nan());
    }
}
