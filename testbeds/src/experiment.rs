//! An experiment file of the shared language (`experiments/*.toml`) on the testbed: checked and
//! compiled whole before anything is built (then run by the sweep loop, [`crate::sweep`]), and
//! a testbed run's results as the shared per-run outcome.

use crate::compile::compile;
use crate::plan::{self, FlowKind};
use crate::record;
use crate::results::{FlowResult, JobsResult, LinkResult, RepResult, RunResult, Summary};
use anyhow::{Context, Result};
use mpquic_scenario::error::{locate, span_of};
use mpquic_scenario::expand::expand_workloads;
use mpquic_scenario::metrics::{
    self, DelayLineSecond, FlowOutcome, LinkOutcome, Outcome, PathOutcome, QueueOutcome,
};
use mpquic_scenario::phases::mean_rate;
use mpquic_scenario::results::ExperimentResults;
use mpquic_scenario::{Experiment, Point, ScenarioError};
use std::path::Path;

/// A checked experiment with every point compiled to the runner's plan.
pub struct Compiled {
    /// The experiment file, as given.
    pub file: String,
    pub experiment: Experiment,
    /// In the order of the experiment's points.
    pub points: Vec<CompiledPoint>,
}

/// One sweep point, ready to run.
pub struct CompiledPoint {
    /// Its directory under the output (and the plan's name).
    pub dir: String,
    pub plan: plan::Plan,
    /// The point's flows as the language expands them, in the plan's order.
    pub flows: Vec<mpquic_scenario::FlowSpec>,
    /// The group of each of the plan's `jobs` entries (its partition-aggregate workload's).
    pub job_groups: Vec<String>,
}

/// Reads, checks and compiles `path` (and the file it `extends`); errors are
/// `file:line:column: reason`, in the file that holds the field.
pub fn load(path: &Path) -> Result<Compiled, ScenarioError> {
    // The testbed runs each point with the file's `[netns] set` applied.
    let experiment = Experiment::load(path)?.for_netns();
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let parent = text.parse::<toml::Table>().ok().and_then(|t| {
        let name = t.get("extends")?.as_str()?.to_string();
        let parent = path.parent().unwrap_or(Path::new("")).join(name);
        Some((parent.display().to_string(), std::fs::read_to_string(parent).ok()?))
    });
    compile_points(experiment, &file, |e| match (&e, &parent) {
        (ScenarioError::At { path, .. }, Some((pfile, ptext)))
            if span_of(&text, path).is_none() =>
        {
            locate(e, pfile, ptext)
        }
        _ => locate(e, &file, &text),
    })
}

/// Checks and compiles the text of `file` (no `extends`).
#[cfg(test)]
pub fn load_text(text: &str, file: &str) -> Result<Compiled, ScenarioError> {
    compile_points(Experiment::parse(text, file)?.for_netns(), file, |e| locate(e, file, text))
}

/// Compiles every point; `place` puts a point's error in its file.
fn compile_points(
    experiment: Experiment,
    file: &str,
    place: impl Fn(ScenarioError) -> ScenarioError,
) -> Result<Compiled, ScenarioError> {
    let mut points = Vec::new();
    for p in &experiment.points {
        let dir = point_dir(&experiment.base.name, p);
        let plan = compile(&p.scenario, &dir).map_err(&place)?;
        let flows = expanded_flows(p).map_err(&place)?;
        points.push(CompiledPoint { dir, plan, flows, job_groups: job_groups(p) });
    }
    Ok(Compiled { file: file.to_string(), experiment, points })
}

/// `<experiment>` without axes, else `<experiment>-<value>-<value>...`.
fn point_dir(name: &str, p: &Point) -> String {
    let mut dir = name.to_string();
    for (_, v) in &p.labels {
        let v: String = v
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect();
        dir += &format!("-{v}");
    }
    dir
}

/// A point's flows, in the order `compile` lists them.
fn expanded_flows(p: &Point) -> Result<Vec<mpquic_scenario::FlowSpec>, ScenarioError> {
    let s = &p.scenario;
    let mut flows = s.clone();
    flows.workloads.retain(|w| !matches!(w, mpquic_scenario::Workload::PartitionAggregate { .. }));
    let hosts = s.topology.expand()?.hosts;
    expand_workloads(&flows, &hosts)
}

/// The groups of a point's partition-aggregate workloads, in the order `compile` lists their
/// jobs: `pa<workload index>`, as `expand_workloads` names the flows of one.
fn job_groups(p: &Point) -> Vec<String> {
    let pa = |w: &mpquic_scenario::Workload| {
        matches!(w, mpquic_scenario::Workload::PartitionAggregate { .. })
    };
    let workloads = p.scenario.workloads.iter().enumerate();
    workloads.filter(|(_, w)| pa(w)).map(|(i, _)| format!("pa{i}")).collect()
}

/// Two `experiment.json` of one experiment file side by side (the simulator's and the
/// testbed's): each report table of the first, its metrics from both, points matched by their
/// axis values. Markdown.
pub fn compare(a: &Path, b: &Path) -> Result<String> {
    let (a_doc, b_doc) = (read_results(a)?, read_results(b)?);
    let report =
        a_doc.report.as_ref().with_context(|| format!("{}: no report section", a.display()))?;
    let (a_rows, b_rows) =
        ((&a_doc.backend[..], &a_doc.summary[..]), (&b_doc.backend[..], &b_doc.summary[..]));
    Ok(report
        .table
        .iter()
        .map(|t| metrics::comparison_table(&t.title, a_rows, b_rows, &t.metrics))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// An `experiment.json`, with its backend named `?` when it does not say.
fn read_results(path: &Path) -> Result<ExperimentResults> {
    let mut doc = ExperimentResults::read(path).map_err(anyhow::Error::msg)?;
    if doc.backend.is_empty() {
        doc.backend = "?".into();
    }
    Ok(doc)
}

/// The shared per-run outcome from a testbed run (its one repetition): flows by name and group,
/// each job as one flow of its workload's group with its job number (start and JCT: the job
/// metrics' completion time), every shaped direction as `from->to` with its queue in
/// 1514-byte frames over busy samples.
pub fn outcome(
    r: &RunResult,
    specs: &[mpquic_scenario::FlowSpec],
    job_specs: &[plan::Jobs],
    job_groups: &[String],
) -> Outcome {
    let rep = &r.repetitions[0];
    let mut flows: Vec<FlowOutcome> = rep
        .flows
        .iter()
        .zip(specs.iter().enumerate())
        .map(|(f, (i, spec))| {
            let name = spec.name.clone().unwrap_or_else(|| format!("flow{i}"));
            flow_outcome(rep, f, name, spec, r.scenario.duration_s)
        })
        .collect();
    for ((jobs, spec), group) in rep.jobs.iter().zip(job_specs).zip(job_groups) {
        flows.extend(job_outcomes(jobs, spec, group));
    }
    let frame = full_packet(rep.flows.iter().map(|f| f.kind));
    let links = rep.links.iter().map(|l| link_outcome(r, l, frame)).collect();
    let receiver_cpu = rep.receiver_cpu_s.values().sum();
    Outcome {
        payload_ceiling: frame.map(|(payload, frame)| payload / frame as f64),
        flows,
        links,
        duration_s: rep.duration_s,
        host_load_1min: Some(rep.host_loadavg_1min[0]),
        host_steal_pct: rep.host_steal_pct,
        receiver_rcvbuf_errors: rep
            .receiver_counters
            .values()
            .filter_map(|c| c.get("Udp.RcvbufErrors"))
            .sum(),
        receiver_cpu_s: (!rep.receiver_cpu_s.is_empty()).then_some(receiver_cpu),
        // The testbed refuses burst sources (`compile::refuse_unsupported`).
        bursts: vec![],
        delay_line: rep
            .delay_line
            .iter()
            .map(|d| DelayLineSecond {
                pkt_per_s: d.pkt_per_s,
                late_p99_us: d.late_p99_us as f64,
                late_max_us: d.late_max_us as f64,
            })
            .collect(),
    }
}

/// One flow of the run (named `name`, the run planned for `run_s` seconds) as the shared
/// outcome has it.
///
/// A timed (bulk) flow's goodput over the run's second half comes from its receiver's rate
/// series, as the simulator measures it; a sized flow's is its lifetime goodput (the CLI
/// reports totals only). A timed flow whose sender the runner had to stop before it reported
/// (the data it had buffered ahead still draining at the deadline) gets its goodput from the
/// series too, instead of none.
fn flow_outcome(
    rep: &RepResult,
    f: &FlowResult,
    name: String,
    spec: &mpquic_scenario::FlowSpec,
    run_s: f64,
) -> FlowOutcome {
    let series = record::flow_series(&name, f);
    let measured = spec.bytes.is_none() && !f.throughput.is_empty();
    let received = |from: f64| measured.then(|| mean_rate(&series, from, run_s));
    let goodput = f.goodput_mbps.map(|m| m * 1e6).or_else(|| received(f.start_s)).unwrap_or(0.0);
    let state = f.mpquic.as_ref().map(|m| &m["controller_state"]);
    let count = |key: &str| state.and_then(|s| s[key].as_u64()).unwrap_or(0);
    let paths = mpquic_paths(f.mpquic.as_ref(), |remote| rep.link_into(remote));
    FlowOutcome {
        name,
        group: spec.group.clone(),
        fct_us: f.completed.then_some(f.fct_s).flatten().map(|s| s * 1e6),
        goodput_bps: goodput,
        goodput_last_half_bps: received(run_s / 2.0).unwrap_or(goodput),
        suppressions: count("suppressions"),
        start_s: f.start_s,
        kind: kind_name(f.kind).into(),
        bytes: f.bytes,
        lost_packets: paths.iter().map(|p| p.lost_packets).sum(),
        cpu_s: f.cpu_s,
        eliminations: count("eliminations"),
        transfer_fcts_us: f.transfer_fcts_s.iter().map(|s| s * 1e6).collect(),
        paths,
        ..Default::default()
    }
}

/// One shaped direction as the shared outcome has it: its queue in 1514-byte frames over busy
/// samples, its packets counted in full packets of `frame` bytes (when one kind of flow ran).
fn link_outcome(r: &RunResult, l: &LinkResult, frame: Option<(f64, u64)>) -> LinkOutcome {
    let q = &l.queue_frames_busy;
    let outcome = |q: &Summary| QueueOutcome {
        p50: q.median,
        p90: q.p90,
        p99: q.p99,
        mean: q.mean,
        p5: q.p5,
        p95: q.p95,
    };
    LinkOutcome {
        name: l.name(),
        marked: l.marker.as_ref().map_or(0, |m| m.marks),
        dropped: l.qdisc_drops,
        utilization: if l.samples > 1 { q.n as f64 / (l.samples - 1) as f64 } else { 0.0 },
        queue: Some(outcome(q)),
        l_sojourn_us: l.l_sojourn_us.as_ref().map(outcome),
        c_sojourn_us: l.c_sojourn_us.as_ref().map(outcome),
        sent_bytes: l.sent_bytes,
        rate_bps: r.scenario.link_for(&l.from, &l.to).rate_mbit * 1e6,
        sent_packets: frame.map_or(0, |(_, frame)| l.sent_bytes / frame),
    }
}

/// The flow kind as the experiment files and the outcome name it.
fn kind_name(kind: FlowKind) -> &'static str {
    match kind {
        FlowKind::Mpquic => "mpquic",
        FlowKind::KernelTcp => "kernel-tcp",
        FlowKind::KernelMptcp => "kernel-mptcp",
    }
}

/// Application bytes and frame bytes of a full-size packet, when every flow is of one kind
/// (htb counts Ethernet frames). An mpquic packet is a 1452-byte UDP payload in a 1494-byte
/// frame, ~35 bytes of it QUIC's (short header, STREAM frame header, AEAD tag); a kernel TCP
/// segment carries 1448 bytes (timestamps on) in a 1514-byte frame.
fn full_packet(mut kinds: impl Iterator<Item = FlowKind>) -> Option<(f64, u64)> {
    let kind = kinds.next()?;
    if kinds.any(|k| k != kind) {
        return None;
    }
    Some(match kind {
        FlowKind::Mpquic => (1452.0 - 35.0, 1494),
        FlowKind::KernelTcp | FlowKind::KernelMptcp => (1448.0, 1514),
    })
}

/// The paths of an mpquic client's JSON report (`paths`), none for kernel flows; `link_into`
/// names the link that delivers to a remote address.
fn mpquic_paths(
    report: Option<&serde_json::Value>,
    link_into: impl Fn(&str) -> Option<String>,
) -> Vec<PathOutcome> {
    let Some(paths) = report.and_then(|m| m["paths"].as_array()) else { return vec![] };
    let path = |report| {
        let path = PathOutcome::of_report(report, None);
        PathOutcome { link: link_into(&path.remote), ..path }
    };
    paths.iter().map(path).collect()
}

/// The jobs of one aggregator as flows of `group`: job `i` (in start order) starts at its
/// start on the aggregator's clock and completes after its JCT (none when an answer failed;
/// every job when the aggregator reported nothing, so that they count as unfinished).
fn job_outcomes(jobs: &JobsResult, spec: &plan::Jobs, group: &str) -> Vec<FlowOutcome> {
    let reported = jobs.report.as_ref().and_then(|r| r["jobs"].as_array());
    let flow = |i: usize, start_s: f64, jct_s: Option<f64>| FlowOutcome {
        name: format!("{group}-job{i}"),
        group: Some(group.to_string()),
        fct_us: jct_s.map(|s| s * 1e6),
        start_s,
        job: Some(i),
        ..Default::default()
    };
    match reported {
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, j)| flow(i, j["start_s"].as_f64().unwrap_or(0.0), j["jct_s"].as_f64()))
            .collect(),
        None => {
            let total = (spec.jobs * spec.parallel) as usize;
            (0..total).map(|i| flow(i, 0.0, None)).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_packet_of_one_kind_only() {
        assert_eq!(full_packet([FlowKind::Mpquic].into_iter()), Some((1417.0, 1494)));
        let tcp = [FlowKind::KernelTcp, FlowKind::KernelTcp];
        assert_eq!(full_packet(tcp.into_iter()), Some((1448.0, 1514)));
        assert_eq!(full_packet([FlowKind::Mpquic, FlowKind::KernelTcp].into_iter()), None);
        assert_eq!(full_packet(std::iter::empty()), None);
    }

    #[test]
    fn paths_from_the_client_report() {
        let report = serde_json::json!({"paths": [
            {"remote": "10.0.1.2:4433", "bytes_sent": 3000, "packets_sent": 3, "lost_packets": 1,
             "rtt_min_ms": 0.2, "rtt_p50_ms": 0.5, "rtt_p99_ms": null, "active": true},
            {"remote": "10.0.2.2:4433", "bytes_sent": 0}
        ]});
        let link_into = |r: &str| r.starts_with("10.0.2.").then(|| "b->dst".to_string());
        let paths = mpquic_paths(Some(&report), link_into);
        assert_eq!(paths.len(), 2);
        let p = &paths[0];
        assert_eq!((p.remote.as_str(), p.bytes_sent, p.packets_sent), ("10.0.1.2:4433", 3000, 3));
        assert_eq!(
            (p.lost_packets, p.rtt_min_ms, p.rtt_p50_ms, p.rtt_p99_ms),
            (1, Some(0.2), Some(0.5), None)
        );
        assert!(p.active && !paths[1].active);
        assert_eq!((p.link.as_deref(), paths[1].link.as_deref()), (None, Some("b->dst")));
        assert!(mpquic_paths(None, |_| None).is_empty());
    }

    #[test]
    fn jobs_are_job_flows_of_their_workload_for_the_jct_metrics() {
        let text = r#"
name = "j"
duration = "10s"
[link]
rate = "100Mbit"
buffer = 100
k = 10
[topology]
kind = "many-to-one"
senders = 3
[[workloads]]
kind = "partition-aggregate"
aggregator = "r"
workers = ["s0", "s1", "s2"]
response_bytes = "64KB"
jobs = 2
parallel = 2
controller = "dctcp"
[report]
metrics = ["jobs@pa", "jobs_unfinished@pa", "jct_p50_ms@pa", "jct_p99_ms@pa"]
"#;
        let c = load_text(text, "j.toml").unwrap();
        let point = &c.points[0];
        assert_eq!(point.job_groups, ["pa0"]);
        let spec = &point.plan.jobs[0];
        let mut result = JobsResult {
            id: "jobs0".into(),
            aggregator: "r".into(),
            workers: spec.workers.clone(),
            cc: "dctcp".into(),
            start_s: 0.0,
            end_s: 1.0,
            completed: false,
            report: Some(serde_json::json!({"jobs": [
                {"start_s": 0.0, "jct_s": 0.004},
                {"start_s": 0.0, "jct_s": 0.010},
                {"start_s": 0.004, "jct_s": 0.002},
                {"start_s": 0.010, "jct_s": null},
            ]})),
            cpu_s: None,
            error: None,
        };
        let jobs = job_outcomes(&result, spec, "pa0");
        assert_eq!(jobs.len(), 4);
        let o = Outcome { flows: jobs, duration_s: 1.0, ..Default::default() };
        let m = metrics::compute(&c.experiment.points[0].scenario, &o);
        let got: Vec<f64> = ["jobs@pa", "jobs_unfinished@pa", "jct_p50_ms@pa", "jct_p99_ms@pa"]
            .iter()
            .map(|k| (m[*k] * 1e6).round() / 1e6)
            .collect();
        assert_eq!(got, [4.0, 1.0, 4.0, 10.0], "the JCTs 4, 10, 2 ms and one unfinished job");
        // An aggregator that reported nothing leaves every planned job unfinished.
        result.report = None;
        let o = Outcome { flows: job_outcomes(&result, spec, "pa0"), ..Default::default() };
        let m = metrics::compute(&c.experiment.points[0].scenario, &o);
        assert_eq!((m["jobs@pa"], m["jobs_unfinished@pa"]), (4.0, 4.0));
    }
}
