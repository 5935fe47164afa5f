//! An experiment file of the shared language (`experiments/*.toml`) on the testbed: checked and
//! compiled whole before anything is built, then run in interleaved rounds (round 1 of every
//! sweep point, then round 2, ...: one round per seed, so that a shared machine's load drift
//! hits every point alike). Each run writes its `result.json` and plots under
//! `<out>/<point>/round<i>/`; the experiment writes `experiment.json` (every run's report metrics
//! and the median, min and max per point) and `tables.md` (the report's tables).

use crate::compile::compile;
use crate::plots;
use crate::results::RunResult;
use crate::runner;
use crate::sampler::Series;
use crate::spec::{self, FlowKind};
use anyhow::{bail, Context, Result};
use mpquic_scenario::error::{locate, span_of};
use mpquic_scenario::expand::expand_workloads;
use mpquic_scenario::metrics::{
    self, FlowOutcome, LinkOutcome, Outcome, PathOutcome, QueueOutcome, RunRow,
};
use mpquic_scenario::{Experiment, Point, ScenarioError};
use serde::Serialize;
use std::path::Path;

/// A checked experiment with every point compiled to the runner's plan.
pub struct Compiled {
    pub experiment: Experiment,
    /// In the order of the experiment's points.
    pub points: Vec<CompiledPoint>,
}

/// One sweep point, ready to run.
pub struct CompiledPoint {
    /// Its directory under the output (and the plan's name).
    pub dir: String,
    pub plan: spec::Scenario,
    /// The flows' (name, group), in the plan's order.
    pub flows: Vec<(String, Option<String>)>,
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
    compile_points(experiment, |e| match (&e, &parent) {
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
    compile_points(Experiment::parse(text, file)?.for_netns(), |e| locate(e, file, text))
}

/// Compiles every point; `place` puts a point's error in its file.
fn compile_points(
    experiment: Experiment,
    place: impl Fn(ScenarioError) -> ScenarioError,
) -> Result<Compiled, ScenarioError> {
    let mut points = Vec::new();
    for p in &experiment.points {
        let dir = point_dir(&experiment.base.name, p);
        let plan = compile(&p.scenario, &dir).map_err(&place)?;
        points.push(CompiledPoint { dir, plan, flows: flow_labels(p).map_err(&place)? });
    }
    Ok(Compiled { experiment, points })
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

/// The names and groups of a point's flows, in the order `compile` lists them.
fn flow_labels(p: &Point) -> Result<Vec<(String, Option<String>)>, ScenarioError> {
    let s = &p.scenario;
    let mut flows = s.clone();
    flows.workloads.retain(|w| !matches!(w, mpquic_scenario::Workload::PartitionAggregate { .. }));
    let hosts = s.topology.expand()?.hosts;
    Ok(expand_workloads(&flows, &hosts)?
        .into_iter()
        .enumerate()
        .map(|(i, f)| (f.name.unwrap_or_else(|| format!("flow{i}")), f.group))
        .collect())
}

/// One run's row in `experiment.json`.
#[derive(Serialize)]
struct RunEntry {
    point: String,
    round: usize,
    seed: u64,
    /// The run's directory (result.json, plots, series).
    dir: String,
    host_loadavg_1min: f64,
    metrics: metrics::Metrics,
}

/// Runs every point `rounds` times (default: one round per seed), interleaved; writes
/// `experiment.json` and `tables.md` in `out`, and prints the tables.
pub fn run(c: &Compiled, out: &Path, rounds: Option<usize>) -> Result<()> {
    let seeds = &c.experiment.base.seeds;
    let rounds = rounds.unwrap_or(seeds.len());
    let mut entries = Vec::new();
    let mut rows: Vec<Vec<RunRow>> = vec![Vec::new(); c.points.len()];
    let mut failed = Vec::new();
    let link = c.experiment.base.report.as_ref().and_then(|r| r.link.clone());
    // Per point, the report link's queue over every round (frames, busy samples).
    let mut queues: Vec<Vec<f64>> = vec![Vec::new(); c.points.len()];
    runner::require_root()?;
    for round in 0..rounds {
        for (i, CompiledPoint { dir, plan, flows }) in c.points.iter().enumerate() {
            let run_dir = out.join(dir).join(format!("round{}", round + 1));
            eprintln!("round {}: {dir} (load {:.1})", round + 1, runner::loadavg());
            // A failed run is reported and the others go on, as on a long unattended sweep.
            let result = match runner::run_scenario(plan, &run_dir) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("FAILED: {dir} round {}: {e:#}", round + 1);
                    failed.push(serde_json::json!({
                        "point": dir, "round": round + 1, "error": format!("{e:#}"),
                    }));
                    continue;
                }
            };
            let point = &c.experiment.points[i];
            let seed = seeds[round % seeds.len()];
            let m = metrics::compute(&point.scenario, &outcome(&result, flows));
            if let Some(link) = &link {
                queues[i].extend(busy_queue(&result, &run_dir, link)?);
            }
            rows[i].push(RunRow {
                series: point.name(),
                x: 0.0,
                seed,
                metrics: m.clone(),
                wall_s: result.repetitions.iter().map(|r| r.duration_s).sum(),
            });
            entries.push(RunEntry {
                point: point.name(),
                round: round + 1,
                seed,
                dir: run_dir.display().to_string(),
                host_loadavg_1min: result.repetitions[0].host_loadavg_1min[0],
                metrics: m,
            });
        }
    }
    let summary: Vec<_> = c
        .experiment
        .points
        .iter()
        .zip(&rows)
        .map(|(p, runs)| {
            let mut row = metrics::summarize(&p.name(), 0.0, runs);
            row.labels = p.labels.clone();
            row
        })
        .collect();
    let json = serde_json::json!({
        "experiment": c.experiment.base.name,
        "backend": "netns",
        "definition": c.experiment.base.report.as_ref().map(|r| r.definition.clone()),
        "report": c.experiment.base.report,
        "runs": entries,
        "failed": failed,
        "summary": summary,
    });
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("experiment.json"), serde_json::to_string_pretty(&json)?)?;
    let mut tables = String::new();
    for t in c.experiment.base.report.iter().flat_map(|r| &r.table) {
        tables += &metrics::markdown_table(&t.title, &summary, &t.metrics);
        tables += "\n";
    }
    std::fs::write(out.join("tables.md"), &tables)?;
    if let Some(link) = &link {
        let points = c.experiment.points.iter().map(|p| p.name()).zip(queues).collect();
        plots::queue_cdf(&out.join("queue-cdf.svg"), link, points)?;
    }
    print!("{tables}");
    eprintln!(
        "wrote {} and {}",
        out.join("experiment.json").display(),
        out.join("tables.md").display()
    );
    if !failed.is_empty() {
        let runs = rounds * c.points.len();
        bail!("{} of {runs} runs failed (listed in experiment.json)", failed.len());
    }
    Ok(())
}

/// The queue of link `from->to` at the run's busy samples, in frames, from the series the run
/// wrote (`rep0-series.json`); none if the run did not shape that direction.
fn busy_queue(r: &RunResult, run_dir: &Path, link: &str) -> Result<Vec<f64>> {
    let rep = &r.repetitions[0];
    let Some(l) = rep.links.iter().find(|l| format!("{}->{}", l.from, l.to) == link) else {
        return Ok(vec![]);
    };
    let path = run_dir.join("rep0-series.json");
    let text = std::fs::read(&path).with_context(|| path.display().to_string())?;
    let series: Vec<Series> =
        serde_json::from_slice(&text).with_context(|| path.display().to_string())?;
    Ok(series
        .iter()
        .filter(|s| s.link_id == l.link_id)
        .flat_map(|s| {
            let frames = s.frames();
            s.busy().map(move |i| frames[i]).collect::<Vec<_>>()
        })
        .collect())
}

/// Two `experiment.json` of one experiment file side by side (the simulator's and the
/// testbed's): each report table of the first, its metrics from both, points matched by their
/// axis values. Markdown.
pub fn compare(a: &Path, b: &Path) -> Result<String> {
    let read = |p: &Path| -> Result<(String, Vec<metrics::SummaryRow>, serde_json::Value)> {
        let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).with_context(|| p.display().to_string())?;
        let summary = serde_json::from_value(doc["summary"].clone())
            .with_context(|| format!("{}: no summary of an experiment", p.display()))?;
        let backend = doc["backend"].as_str().unwrap_or("?").to_string();
        Ok((backend, summary, doc["report"].clone()))
    };
    let (a_name, a_rows, report) = read(a)?;
    let (b_name, b_rows, _) = read(b)?;
    let report: mpquic_scenario::experiment::ReportSpec = serde_json::from_value(report)
        .with_context(|| format!("{}: no report section", a.display()))?;
    Ok(report
        .table
        .iter()
        .map(|t| {
            metrics::comparison_table(&t.title, (&a_name, &a_rows), (&b_name, &b_rows), &t.metrics)
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The shared per-run outcome from a testbed run (its one repetition): flows by name and group,
/// every shaped direction as `from->to` with its queue in 1514-byte frames over busy samples.
fn outcome(r: &RunResult, labels: &[(String, Option<String>)]) -> Outcome {
    let rep = &r.repetitions[0];
    let flows: Vec<FlowOutcome> = rep
        .flows
        .iter()
        .zip(labels)
        .map(|(f, (name, group))| {
            let goodput = f.goodput_mbps.unwrap_or(0.0) * 1e6;
            let state = f.mpquic.as_ref().map(|m| &m["controller_state"]);
            let count = |key: &str| state.and_then(|s| s[key].as_u64()).unwrap_or(0);
            let paths = mpquic_paths(f.mpquic.as_ref());
            FlowOutcome {
                name: name.clone(),
                group: group.clone(),
                fct_us: f.completed.then_some(f.fct_s).flatten().map(|s| s * 1e6),
                goodput_bps: goodput,
                // The CLI reports totals only: the lifetime goodput stands for both halves.
                goodput_last_half_bps: goodput,
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
        })
        .collect();
    let frame = full_packet(rep.flows.iter().map(|f| f.kind));
    let links = rep
        .links
        .iter()
        .map(|l| {
            let q = &l.queue_frames_busy;
            LinkOutcome {
                name: format!("{}->{}", l.from, l.to),
                marked: l.marker.as_ref().map_or(0, |m| m.marks),
                dropped: l.qdisc_drops,
                utilization: if l.samples > 1 { q.n as f64 / (l.samples - 1) as f64 } else { 0.0 },
                queue: Some(QueueOutcome {
                    p50: q.median,
                    p90: q.p90,
                    p99: q.p99,
                    mean: q.mean,
                    p5: q.p5,
                    p95: q.p95,
                }),
                sent_bytes: l.sent_bytes,
                rate_bps: r.scenario.link_for(&l.from, &l.to).rate_mbit * 1e6,
                sent_packets: frame.map_or(0, |(_, frame)| l.sent_bytes / frame),
            }
        })
        .collect();
    let receiver_cpu = rep.receiver_cpu_s.values().sum();
    Outcome {
        payload_ceiling: frame.map(|(payload, frame)| payload / frame as f64),
        flows,
        links,
        duration_s: rep.duration_s,
        host_load_1min: Some(rep.host_loadavg_1min[0]),
        receiver_rcvbuf_errors: rep
            .receiver_counters
            .values()
            .filter_map(|c| c.get("Udp.RcvbufErrors"))
            .sum(),
        receiver_cpu_s: (!rep.receiver_cpu_s.is_empty()).then_some(receiver_cpu),
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

/// The paths of an mpquic client's JSON report (`paths`), none for kernel flows.
fn mpquic_paths(report: Option<&serde_json::Value>) -> Vec<PathOutcome> {
    let Some(paths) = report.and_then(|m| m["paths"].as_array()) else { return vec![] };
    paths
        .iter()
        .map(|p| {
            let count = |key: &str| p[key].as_u64().unwrap_or(0);
            PathOutcome {
                remote: p["remote"].as_str().unwrap_or_default().to_string(),
                bytes_sent: count("bytes_sent"),
                packets_sent: count("packets_sent"),
                lost_packets: count("lost_packets"),
                rtt_min_ms: p["rtt_min_ms"].as_f64(),
                rtt_p50_ms: p["rtt_p50_ms"].as_f64(),
                rtt_p99_ms: p["rtt_p99_ms"].as_f64(),
                active: p["active"].as_bool().unwrap_or(false),
            }
        })
        .collect()
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
        let paths = mpquic_paths(Some(&report));
        assert_eq!(paths.len(), 2);
        let p = &paths[0];
        assert_eq!((p.remote.as_str(), p.bytes_sent, p.packets_sent), ("10.0.1.2:4433", 3000, 3));
        assert_eq!(
            (p.lost_packets, p.rtt_min_ms, p.rtt_p50_ms, p.rtt_p99_ms),
            (1, Some(0.2), Some(0.5), None)
        );
        assert!(p.active && !paths[1].active);
        assert!(mpquic_paths(None).is_empty());
    }
}
