//! A synthetic run for the analyses' tests: a small file's point compiled as the testbed
//! compiles it, with made-up flow results in place of a run's.

use super::Run;
use crate::experiment::load_text;
use crate::plan::FlowKind;
use crate::results::{FlowResult, RepResult};
use std::collections::BTreeMap;

/// On the file's clock: f1 (mpquic, group f1) opens its second path at 2 s, f2 (kernel TCP,
/// group f2) starts at 4 s, the run ends at 8 s: phases [0, 2), [2, 4), [4, 8). The testbed
/// runs it twice as slow (`time_scale = 2`): [0, 4), [4, 8), [8, 16) s.
const FILE: &str = r#"
name = "phases"
duration = "8s"
[topology]
kind = "many-to-one"
senders = 2
sender_addrs = 2
access = { rate = "1Gbps", delay = "2us" }
bottleneck = { rate = "300Mbps", delay = "100us", k = 15 }
[[flows]]
name = "f1"
group = "f1"
from = "s0"
to = "r"
paths = 2
path_times = ["0s", "2s"]
[[flows]]
name = "f2"
group = "f2"
kind = "kernel-tcp"
from = "s1"
to = "r"
start = "4s"
[netns]
time_scale = 2
"#;

/// A flow's result with its receiver's rate series and no report.
pub fn flow(id: &str, kind: FlowKind, start_s: f64, throughput: Vec<(f64, f64)>) -> FlowResult {
    FlowResult {
        id: id.into(),
        kind,
        from: String::new(),
        to: "r".into(),
        cc: "xmp".into(),
        paths: vec![],
        start_s,
        end_s: 16.0,
        completed: true,
        bytes: 0,
        fct_s: None,
        goodput_mbps: None,
        throughput,
        transfer_fcts_s: vec![],
        mpquic: None,
        cpu_s: None,
        error: None,
    }
}

/// A repetition of `flows` (those of [`FILE`], in its order) and nothing else.
pub fn rep_of(flows: Vec<FlowResult>) -> RepResult {
    RepResult {
        rep: 0,
        duration_s: 16.0,
        flows,
        jobs: vec![],
        links: vec![],
        total_goodput_mbps: 0.0,
        link_sum_mbit: 300.0,
        goodput_fraction_of_link_sum: 0.0,
        ce: None,
        receiver_counters: BTreeMap::new(),
        sampler_late_fraction: 0.0,
        sampler_lead_s: 0.05,
        host_loadavg_1min: [0.0, 0.0],
        mpquic_server_reports: vec![],
        receiver_cpu_s: BTreeMap::new(),
        delay_line: vec![],
    }
}

/// `f` of the run of [`FILE`] whose repetition is `rep` (no sampled series).
pub fn with_run<R>(rep: &RepResult, f: impl FnOnce(&Run) -> R) -> R {
    let c = load_text(FILE, "phases.toml").unwrap();
    let point = &c.points[0];
    f(&Run {
        rep,
        series: &[],
        net: &crate::topology::build(&point.plan.topology),
        flows: &point.flows,
        point: &c.experiment.points[0].scenario,
        file: &c.experiment.base,
    })
}
