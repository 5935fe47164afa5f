//! A testbed run as both backends record one ([`RunRecord`]): what the shared analyses
//! ([`mpquic_scenario::analyses`]) read. The testbed measures its runs by sampling: each shaped
//! direction's qdisc counters (its queue in 1514-byte frames of its byte backlog, its sent
//! bytes; times since the flows' zero, negative before it, as the sampler starts first), each
//! receiver's rate series, the clients' and aggregators' reports.

use crate::plan::{self, FlowKind};
use crate::results::{FlowResult, JobsResult, LinkResult, RepResult, RunResult};
use crate::sampler::Series;
use mpquic_scenario::record::{
    closed_at_end, AggregatorFacts, FlowFacts, FlowSeries, JobFacts, LinkSample, LinkSeries,
    PathEvent, PathEventKind, PathFacts, RunRecord,
};
use mpquic_scenario::FlowSpec;
use serde_json::Value;

/// The run in the backends' common terms: the outcome, each flow's receiver rate, each shaped
/// direction's sampled queue (frames) and bytes, the paths the clients reported opening and
/// closed, what the analyses read of each flow and aggregator.
pub fn of(
    r: &RunResult,
    series: &[Series],
    specs: &[FlowSpec],
    job_specs: &[plan::Jobs],
    job_groups: &[String],
    time_scale: f64,
) -> RunRecord {
    let outcome = crate::experiment::outcome(r, specs, job_specs, job_groups);
    let rep = &r.repetitions[0];
    let named = || outcome.flows.iter().map(|o| o.name.as_str()).zip(&rep.flows);
    let flow_series = named().map(|(name, f)| flow_series(name, f)).collect();
    let link_series = rep.links.iter().map(|l| link_series(l, series, rep)).collect();
    let path_events = named().flat_map(|(name, f)| path_events(name, f, &outcome)).collect();
    let flows = named().zip(specs).map(|((name, f), spec)| flow_facts(name, f, spec, rep));
    let flows = flows.collect();
    let aggregators = rep.jobs.iter().map(|j| aggregator_facts(j, rep)).collect();
    RunRecord {
        outcome,
        flow_series,
        link_series,
        path_events,
        flows,
        aggregators,
        time_scale: Some(time_scale),
    }
}

/// A flow's receiver rate series: each point closes an interval since the previous one.
pub(crate) fn flow_series(name: &str, f: &FlowResult) -> FlowSeries {
    FlowSeries {
        flow: name.to_string(),
        goodput: f.throughput.iter().map(|&(t, mbps)| (t, mbps * 1e6)).collect(),
        interval_s: None,
    }
}

/// A shaped direction's samples (timed from the flows' zero) and the bytes it sent between
/// consecutive samples, stamped at the later one.
fn link_series(l: &LinkResult, series: &[Series], rep: &RepResult) -> LinkSeries {
    let sampled = series.iter().filter(|s| s.link_id == l.link_id);
    let lead = rep.sampler_lead_s;
    LinkSeries {
        link: l.name(),
        samples: sampled.clone().flat_map(|s| link_samples(s, lead)).collect(),
        sent: sampled.flat_map(|s| sent_between_samples(s, lead)).collect(),
    }
}

/// A sampled direction's samples, timed from the flows' zero (the sampler starts `lead`
/// seconds before it), the queue in 1514-byte frames.
fn link_samples(s: &Series, lead: f64) -> Vec<LinkSample> {
    let frames = s.frames();
    (0..s.t.len())
        .map(|k| LinkSample {
            t_s: s.t[k] - lead,
            queue_pkts: frames.get(k).copied().unwrap_or(0.0),
            sent_bytes: s.bytes.get(k).copied(),
        })
        .collect()
}

/// The bytes a direction's counter grew by from each sample to the next, at the next one's
/// time from the flows' zero.
fn sent_between_samples(s: &Series, lead: f64) -> Vec<(f64, u64)> {
    let n = s.t.len().min(s.bytes.len());
    (1..n).map(|i| (s.t[i] - lead, s.bytes[i].saturating_sub(s.bytes[i - 1]))).collect()
}

/// The paths of an mpquic client's report, if it has one.
fn reported_paths(f: &FlowResult) -> Option<&Vec<Value>> {
    f.mpquic.as_ref().and_then(|m| m["paths"].as_array())
}

/// A flow's path openings and the paths its client reported closed: an mpquic client reports
/// each path's opening after its connection, made when its process started; a kernel TCP flow
/// has its one path from its start; a kernel MPTCP flow's subflows are not recorded.
fn path_events(
    name: &str,
    f: &FlowResult,
    outcome: &mpquic_scenario::metrics::Outcome,
) -> Vec<PathEvent> {
    let opened = |path: u64, t_s: f64| PathEvent {
        flow: name.to_string(),
        path,
        t_s: Some(t_s),
        kind: PathEventKind::Opened,
    };
    let paths = reported_paths(f).map_or(&[][..], |p| p.as_slice());
    let id = |i: usize| paths.get(i).and_then(|p| p["id"].as_u64()).unwrap_or(i as u64);
    let mut events: Vec<PathEvent> = match f.kind {
        FlowKind::KernelTcp => vec![opened(0, f.start_s)],
        FlowKind::KernelMptcp => vec![],
        FlowKind::Mpquic => (0..paths.len())
            .filter_map(|i| Some(opened(id(i), f.start_s + paths[i]["opened_ms"].as_f64()? / 1e3)))
            .collect(),
    };
    if f.kind == FlowKind::Mpquic {
        let o = outcome.flows.iter().find(|o| o.name == name);
        let closes = o.into_iter().flat_map(|o| o.paths.iter().enumerate());
        events.extend(closed_at_end(name, closes.map(|(i, p)| (id(i), p.close_reason))));
    }
    events
}

/// What the analyses read of a flow beyond its outcome.
fn flow_facts(name: &str, f: &FlowResult, spec: &FlowSpec, rep: &RepResult) -> FlowFacts {
    let report = f.mpquic.as_ref();
    let controlled = report.filter(|m| !m["controller_state"].is_null());
    let active = |m: &Value| {
        let paths = m["paths"].as_array().map_or(&[][..], |p| p.as_slice());
        paths.iter().filter(|p| p["active"].as_bool() == Some(true)).count()
    };
    let server = f.paths.first().and_then(|p| p.1.parse::<std::net::Ipv4Addr>().ok());
    let into_link = server
        .and_then(|ip| rep.links.iter().find(|l| l.to_addrs.contains(&ip)).map(LinkResult::name));
    FlowFacts {
        flow: name.to_string(),
        group: spec.group.clone(),
        start: spec.start,
        stop: spec.stop,
        start_s: f.start_s,
        end_s: f.end_s,
        fct_s: f.fct_s,
        openings_recorded: match f.kind {
            FlowKind::KernelTcp => true,
            FlowKind::KernelMptcp => false,
            FlowKind::Mpquic => report.is_some(),
        },
        active_paths_end: controlled.map(active),
        into_link,
        paths: reported_paths(f).map(|paths| paths.iter().map(|p| path_facts(p, rep)).collect()),
    }
}

/// A path of an mpquic client's report, with the server's packets on it.
fn path_facts(p: &Value, rep: &RepResult) -> PathFacts {
    let server = rep.mpquic_server_reports.first().and_then(|r| r["paths"].as_array());
    let peer = server.and_then(|ps| ps.iter().find(|sp| sp["id"] == p["id"]));
    PathFacts {
        id: p["id"].as_u64().unwrap_or_default(),
        first_link: None,
        last_link: rep.link_into(p["remote"].as_str().unwrap_or_default()),
        open_at_end: p["open"].as_bool(),
        bytes_sent: p["bytes_sent"].as_f64(),
        packets_sent: p["packets_sent"].as_u64(),
        peer_packets_sent: peer.and_then(|sp| sp["packets_sent"].as_u64()),
    }
}

/// An aggregator as its report (`mpquic aggregate --json`) has it; no jobs without a report.
fn aggregator_facts(j: &JobsResult, rep: &RepResult) -> AggregatorFacts {
    let report = j.report.as_ref();
    let jobs = report.and_then(|r| r["jobs"].as_array()).into_iter().flatten();
    let into = rep.links.iter().find(|l| l.to == j.aggregator);
    AggregatorFacts {
        into_link: into.map(LinkResult::name),
        end_s: j.end_s,
        connect_s: report.and_then(|r| r["connect_s"].as_f64()),
        jobs: jobs.map(job_facts).collect(),
    }
}

/// One job of an aggregator's report.
fn job_facts(job: &Value) -> JobFacts {
    JobFacts {
        start_s: job["start_s"].as_f64().unwrap_or(f64::NAN),
        jct_s: job["jct_s"].as_f64(),
        answer_bytes: job["response_bytes"]
            .as_array()
            .map_or(0, |b| b.iter().filter_map(|x| x.as_u64()).sum()),
    }
}
