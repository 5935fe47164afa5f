//! What a run produced, in one schema both backends fill ([`Outcome`]); the named metrics an
//! experiment's `[report]` asks for, computed from it; the summary over seeds ([`spread`]); and
//! the markdown tables. Statistics come from `mpquic-stats` only.

use std::collections::BTreeMap;

use mpquic::PathClose;
use serde::{Deserialize, Serialize};

use crate::error::{at, ScenarioError};
use crate::model::{Scenario, Workload};

/// One run's result, as the report metrics read it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    /// Flows, in the backend's order (the scenario's, expanded).
    pub flows: Vec<FlowOutcome>,
    /// Monitored link directions.
    pub links: Vec<LinkOutcome>,
    /// Time the run covered, seconds.
    pub duration_s: f64,
    /// The host's 1-minute load average at the run's start (a shared machine's noise).
    pub host_load_1min: Option<f64>,
    /// Datagrams the receivers' UDP sockets dropped for a full buffer (sum of their
    /// `Udp.RcvbufErrors`).
    pub receiver_rcvbuf_errors: u64,
    /// CPU seconds of the receiving processes, summed.
    pub receiver_cpu_s: Option<f64>,
    /// The backend's goodput ceiling as a fraction of the link rate, for full-size packets
    /// (payload over wire bytes): what an ideal transfer reaches.
    pub payload_ceiling: Option<f64>,
    /// The testbed's link delay line, per queue and second (empty elsewhere).
    #[serde(default)]
    pub delay_line: Vec<DelayLineSecond>,
}

/// One second of one delay-line queue (one delayed link direction) on the testbed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DelayLineSecond {
    /// Packets it released.
    pub pkt_per_s: f64,
    /// 99th percentile of their release lateness (release time to verdict), microseconds.
    pub late_p99_us: f64,
    /// The latest of them, microseconds.
    pub late_max_us: f64,
}

/// One flow's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowOutcome {
    /// Name.
    pub name: String,
    /// Group.
    pub group: Option<String>,
    /// Flow completion time, microseconds (None: not complete).
    pub fct_us: Option<f64>,
    /// Goodput over the flow's lifetime, bits per second.
    pub goodput_bps: f64,
    /// Goodput over the second half of the run, bits per second.
    pub goodput_last_half_bps: f64,
    /// Probe-timeout expiries of the client.
    pub pto_client: u64,
    /// Probe-timeout expiries of the server.
    pub pto_server: u64,
    /// Suppression episodes of the flow's controllers (AMP's SSR).
    pub suppressions: u64,
    /// Whether the client's ACK_FREQUENCY request never reached the server (the ACK profile did
    /// not take effect for the data the client sends).
    pub ack_request_lost: bool,
    /// The same for the server's request.
    pub server_ack_request_lost: bool,
    /// When the flow started, seconds since the start of the run.
    pub start_s: f64,
    /// The job (partition/aggregate) it is part of, numbered within its group.
    pub job: Option<usize>,
    /// What carried it: `mpquic`, `kernel-tcp` or `kernel-mptcp`.
    pub kind: String,
    /// Bytes it carried (with repeated transfers, their total).
    pub bytes: u64,
    /// Packets declared lost, over its paths.
    pub lost_packets: u64,
    /// CPU seconds of the sending process.
    pub cpu_s: Option<f64>,
    /// Paths its controller eliminated (MPTCP-D's ESE).
    pub eliminations: u64,
    /// Each transfer's completion time of a repeating flow, microseconds.
    pub transfer_fcts_us: Vec<f64>,
    /// The client's paths (multipath flows).
    pub paths: Vec<PathOutcome>,
}

/// One path of a flow, as the client saw it at the end.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PathOutcome {
    /// The server's address.
    pub remote: String,
    /// QUIC bytes sent.
    pub bytes_sent: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Smallest RTT sample, ms.
    pub rtt_min_ms: Option<f64>,
    /// Median RTT sample, ms.
    pub rtt_p50_ms: Option<f64>,
    /// 99th percentile RTT sample, ms.
    pub rtt_p99_ms: Option<f64>,
    /// Whether the controller lets it carry new data.
    pub active: bool,
    /// Why it was closed, or that its controller eliminated it (MPTCP-D's ESE, the one
    /// closure the ESE metrics count); `None` while open and free to carry data.
    #[serde(default)]
    pub close_reason: Option<PathClose>,
    /// The sender's congestion window at the end, bytes (None: the backend does not know it).
    pub cwnd_bytes: Option<u64>,
    /// The link direction that delivers to `remote` (`b->dst`), where the backend knows it:
    /// what a path metric's `[link]` selects by.
    #[serde(default)]
    pub link: Option<String>,
}

/// One link direction's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkOutcome {
    /// `from->to`.
    pub name: String,
    /// Packets marked CE.
    pub marked: u64,
    /// Packets dropped because the queue was full.
    pub dropped: u64,
    /// Fraction of the time busy.
    pub utilization: f64,
    /// Queue length percentiles, packets (when sampled).
    pub queue: Option<QueueOutcome>,
    /// Bytes it sent, as the backend counts them on the wire.
    pub sent_bytes: u64,
    /// Its rate, bits per second.
    pub rate_bps: f64,
    /// Packets it sent (the testbed, which counts bytes: its bytes over a full packet's frame).
    pub sent_packets: u64,
}

/// Queue length over the run, packets.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueueOutcome {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// The metrics a report may name, with what each means (a metric may add `@group` to use
/// other flows than the report's group; `A / B`, spaces around the slash, is the ratio of two,
/// and B may be a number; a `path_` metric may add `[link]` to use only the paths that cross
/// that link direction last, `path_share[b->dst]`).
pub const CATALOGUE: &[(&str, &str)] = &[
    ("flows", "flows of the group"),
    ("unfinished", "flows not complete at the end of the run"),
    ("fct_mean_ms", "mean flow completion time of the completed flows, ms"),
    ("fct_std_ms", "population standard deviation of those, ms"),
    ("fct_p50_ms", "median completion time (nearest rank), ms"),
    ("fct_p90_ms", "90th percentile completion time, ms"),
    ("fct_p99_ms", "99th percentile completion time, ms"),
    ("fct_max_ms", "longest completion time, ms"),
    ("fct_mean_ms_ack_heard", "mean FCT of the flows whose ACK_FREQUENCY request arrived, ms"),
    ("fct_max_ms_ack_heard", "longest FCT of those, ms"),
    ("pto", "probe-timeout expiries of both ends of every flow"),
    ("pto_per_round", "pto / incast rounds"),
    ("flows_with_pto_per_round", "flows whose client had a PTO / incast rounds"),
    ("suppressions", "suppression episodes (AMP SSR)"),
    ("suppressions_per_round", "suppressions / incast rounds"),
    ("ack_request_lost_per_round", "flows whose ACK_FREQUENCY request was lost / rounds"),
    ("flows_over_10ms_per_round", "flows unfinished or over 10 ms / rounds"),
    ("over_10ms_with_ack_request_lost_per_round", "of those, with the request lost / rounds"),
    ("goodput_mean_gbps", "mean goodput of the flows over their lifetime, Gbit/s"),
    ("goodput_last_half_mean_gbps", "mean goodput over the run's second half, Gbit/s"),
    ("jain", "Jain's index of the flows' second-half goodput"),
    ("jobs", "jobs (flows of one group with one job number; JCT = last answer - first start)"),
    ("jobs_unfinished", "jobs with a flow not complete at the end of the run"),
    ("jct_mean_ms", "mean job completion time of the completed jobs, ms"),
    ("jct_p50_ms", "median JCT, ms"),
    ("jct_p90_ms", "90th percentile JCT, ms"),
    ("jct_p99_ms", "99th percentile JCT, ms"),
    ("jct_all_p90_ms", "90th percentile JCT, unfinished jobs counted until the end (a bound)"),
    ("jct_all_p99_ms", "99th percentile of the same, ms"),
    ("jobs_over_10ms", "jobs, finished or not, over 10 ms"),
    ("jobs_ack_heard", "completed jobs where no flow lost an ACK_FREQUENCY request"),
    ("jct_p90_ms_ack_heard", "90th percentile JCT of those, ms"),
    ("jct_p99_ms_ack_heard", "99th percentile JCT of those, ms"),
    ("ack_request_lost", "flows where either end's ACK_FREQUENCY request was lost"),
    ("queue_p90_max", "the largest 90th percentile queue over every monitored link, packets"),
    ("drops", "drops at the report's link"),
    ("drops_per_round", "drops / incast rounds"),
    ("marks", "CE marks at the report's link"),
    ("marks_per_round", "marks / incast rounds"),
    ("utilization", "busy fraction of the report's link"),
    ("queue_p50", "median queue of the report's link, packets"),
    ("queue_p90", "90th percentile queue, packets"),
    ("queue_p99", "99th percentile queue, packets"),
    ("queue_mean", "mean queue, packets"),
    ("lost", "packets the flows' senders declared lost"),
    ("drops_all", "drops summed over every monitored link"),
    ("marks_all", "CE marks summed over every monitored link"),
    ("rcvbuf_drops", "datagrams the receivers' UDP sockets dropped (Udp.RcvbufErrors)"),
    ("host_load", "the host's 1-min load average at the run's start"),
    ("goodput_sum_mbps", "sum of the flows' goodput, Mbit/s"),
    ("goodput_mean_mbps", "mean goodput of the flows, Mbit/s"),
    ("queue_p5", "5th percentile queue of the report's link, packets"),
    ("queue_p95", "95th percentile queue, packets"),
    ("queue_p50_mean", "the links' median queues averaged over every monitored link, packets"),
    ("queue_p99_max", "the largest 99th percentile queue over every monitored link, packets"),
    ("cpu_s_per_gb", "CPU s of the flows' senders and all receivers per GB the flows carried"),
    ("fct_over_200ms", "completed flows slower than 200 ms (the papers' minimum RTO)"),
    ("jain_goodput", "Jain's index of the flows' goodput over their lifetime (bytes / FCT)"),
    ("rtt_p50_ms", "median RTT of the flows' paths that sent > 100 kB: the median (nearest rank, the lower middle of an even count) of those paths' median RTT samples, ms"),
    ("rtt_min_ms", "smallest RTT sample of those paths, ms"),
    ("eliminations", "paths the flows' controllers eliminated (MPTCP-D's ESE)"),
    ("flows_with_elimination", "flows whose controller eliminated a path"),
    ("ese_extra", "extra paths: per link (paths grouped by server address) all but one"),
    ("ese_keep", "paths that should stay: one per link"),
    ("ese_tp", "true positives: eliminated paths of a link, up to its extra paths"),
    ("ese_fp", "false positives: eliminated paths of a link beyond its extra ones (its last path)"),
    ("active_paths", "paths carrying data at the end (a repeating flow: its last transfer's)"),
    ("transfers", "transfers completed (each of a repeating flow; else each completed flow)"),
    ("transfer_fct_p50_ms", "median completion time of those transfers (nearest rank), ms"),
    ("transfer_fct_p99_ms", "99th percentile completion time of those transfers, ms"),
    ("sender_cpu_ms_per_transfer", "CPU ms of the flows' senders per completed transfer"),
    ("cwnd_pkts_mean", "the flows' paths' congestion windows at the end, mean, packets of the mtu"),
    ("path_share", "bytes the flows sent on the selected paths over their bytes on all paths"),
    ("path_rtt_p50_ms", "median over the selected paths of each path's median RTT sample, ms"),
    ("path_rtt_p99_ms", "median over the selected paths of each path's p99 RTT sample, ms"),
    ("delay_pkt_per_s", "testbed delay line: median packet rate of its busy seconds (> 100 pkt/s)"),
    ("delay_late_p99_us", "median over those seconds of their p99 release lateness, us"),
    ("delay_late_p99_worst_us", "the worst second's p99 release lateness, us"),
    ("delay_late_max_us", "median over the busy seconds of their latest release, us"),
    ("delay_late_max_worst_us", "the latest release of any busy second, us"),
    ("ideal_ms", "the flows' bytes at the report link's rate x payload ceiling, ms"),
    ("goodput_of_ceiling", "second-half goodput sum over the monitored links' rates x ceiling"),
    ("marked_fraction", "marks over packets sent, summed over every monitored link"),
];

/// Delay-line seconds with fewer packets than this are idle (keep-alives between transfers):
/// their lateness says little about the line under load.
const DELAY_BUSY_PKT_PER_S: f64 = 100.0;

/// Whether the report names known metrics, the plot and tables only report metrics, and the
/// plot's x is an axis.
pub fn check_report(s: &Scenario) -> Result<(), ScenarioError> {
    let Some(report) = &s.report else {
        return match &s.plot {
            Some(_) => Err(at("plot", "a plot needs a [report] with its metrics")),
            None => Ok(()),
        };
    };
    crate::analyses::check(report)?;
    for (i, m) in report.metrics.iter().enumerate() {
        for operand in operands(m).into_iter().filter(|o| o.parse::<f64>().is_err()) {
            let name = operand.split_once('@').map_or(operand, |(n, _)| n);
            let analysed =
                name.split_once('.').is_some_and(|(a, _)| report.analyses.contains(&a.into()));
            if analysed {
                continue; // checked by `analyses::check`
            }
            let (name, selector) = path_selector(name);
            if !CATALOGUE.iter().any(|(k, _)| *k == name) {
                let known: Vec<&str> = CATALOGUE.iter().map(|(k, _)| *k).collect();
                return Err(at(
                    format!("report.metrics.{i}"),
                    format!("unknown metric `{name}` (known: {})", known.join(", ")),
                ));
            }
            if selector.is_some() && !name.starts_with("path_") {
                return Err(at(
                    format!("report.metrics.{i}"),
                    format!("`{name}` is not a path metric: it takes no `[link]`"),
                ));
            }
        }
    }
    let reported = |m: &String| report.metrics.contains(m);
    for (t, table) in report.table.iter().enumerate() {
        if let Some((i, m)) = table.metrics.iter().enumerate().find(|(_, m)| !reported(m)) {
            return Err(at(
                format!("report.table.{t}.metrics.{i}"),
                format!("`{m}` is not in report.metrics"),
            ));
        }
    }
    if let Some(plot) = &s.plot {
        if !s.sweep.iter().any(|a| a.name == plot.x) {
            return Err(at("plot.x", format!("`{}` is not a sweep axis", plot.x)));
        }
        if let Some((i, p)) = plot.panels.iter().enumerate().find(|(_, p)| !reported(&p.metric)) {
            return Err(at(
                format!("plot.panels.{i}.metric"),
                format!("`{}` is not in report.metrics", p.metric),
            ));
        }
    }
    Ok(())
}

/// Incast rounds of the scenario's workloads (at least 1): the `_per_round` divisor.
pub fn rounds(s: &Scenario) -> f64 {
    let n: usize = s
        .workloads
        .iter()
        .map(|w| if let Workload::Incast { rounds, .. } = w { *rounds } else { 0 })
        .sum();
    n.max(1) as f64
}

/// A report metric's catalogue metrics: `A / B` is two, anything else one.
pub(crate) fn operands(m: &str) -> Vec<&str> {
    m.split_once(" / ").map_or(vec![m], |(a, b)| vec![a, b])
}

/// A metric name and the link of its `[link]` selector, if it has one
/// (`path_share[b->dst]` is `path_share` over the paths crossing `b->dst`).
fn path_selector(name: &str) -> (&str, Option<&str>) {
    match name.strip_suffix(']').and_then(|n| n.split_once('[')) {
        Some((name, link)) => (name, Some(link)),
        None => (name, None),
    }
}

/// The report's metrics of one run of `s` (NaN where there is nothing to compute over).
pub fn compute(s: &Scenario, o: &Outcome) -> BTreeMap<String, f64> {
    let Some(report) = &s.report else { return BTreeMap::new() };
    let rounds = rounds(s);
    let link = report.link.as_deref().and_then(|n| o.links.iter().find(|l| l.name == n));
    let monitored = || o.links.iter().filter(|l| l.queue.is_some());
    let one = |m: &str| {
        if let Ok(constant) = m.parse::<f64>() {
            return constant;
        }
        let (name, group, link) = match m.split_once('@') {
            // `@from->to` names the link of the link metrics.
            Some((n, l)) if l.contains("->") => {
                (n, report.group.as_deref(), o.links.iter().find(|x| x.name == l))
            }
            Some((n, g)) => (n, Some(g), link),
            None => (m, report.group.as_deref(), link),
        };
        let flows: Vec<&FlowOutcome> =
            o.flows.iter().filter(|f| in_group(f.group.as_deref(), group)).collect();
        match name {
            _ if name.starts_with("jct") || name.starts_with("jobs") => {
                job_metric(name, &flows, o.duration_s)
            }
            "cpu_s_per_gb" => cpu_s_per_gb(&flows, o),
            _ if name.starts_with("ese_") => ese_metric(name, &flows),
            "cwnd_pkts_mean" => cwnd_pkts_mean(&flows, s.transport.mtu),
            _ if name.starts_with("path_") => {
                let (name, selector) = path_selector(name);
                path_metric(name, selector, &flows)
            }
            _ if name.starts_with("delay_") => delay_metric(name, &o.delay_line),
            "ideal_ms" => {
                let bits = flows.iter().map(|f| f.bytes).sum::<u64>() as f64 * 8.0;
                let rate = link.map_or(f64::NAN, |l| l.rate_bps);
                bits / (rate * o.payload_ceiling.unwrap_or(f64::NAN)) * 1e3
            }
            "goodput_of_ceiling" => {
                let goodput: f64 = flows.iter().map(|f| f.goodput_last_half_bps).sum();
                let rates: f64 = monitored().map(|l| l.rate_bps).sum();
                goodput / (rates * o.payload_ceiling.unwrap_or(f64::NAN))
            }
            _ => run_metric(name, o).unwrap_or_else(|| metric(name, &flows, link, rounds)),
        }
    };
    report
        .metrics
        .iter()
        .map(|m| {
            let value = match operands(m)[..] {
                [a, b] => one(a) / one(b),
                _ => one(m),
            };
            (m.clone(), value)
        })
        .collect()
}

/// Whether a flow of group `flow` is one of `group`'s: its group starts with that name (no
/// group: every flow is).
pub fn in_group(flow: Option<&str>, group: Option<&str>) -> bool {
    group.is_none_or(|g| flow.is_some_and(|f| f.starts_with(g)))
}

/// The metrics of the whole run (every monitored link: those with a sampled queue; the host,
/// the receivers); None for the others.
fn run_metric(name: &str, o: &Outcome) -> Option<f64> {
    let monitored = || o.links.iter().filter(|l| l.queue.is_some());
    let queues = |x: &dyn Fn(&QueueOutcome) -> f64| {
        o.links.iter().filter_map(|l| l.queue.as_ref()).map(x).collect::<Vec<f64>>()
    };
    Some(match name {
        "queue_p90_max" => quantile(&queues(&|q| q.p90), 1.0),
        "queue_p99_max" => quantile(&queues(&|q| q.p99), 1.0),
        "queue_p50_mean" => mean(&queues(&|q| q.p50)),
        "drops_all" => monitored().map(|l| l.dropped).sum::<u64>() as f64,
        "marks_all" => monitored().map(|l| l.marked).sum::<u64>() as f64,
        "rcvbuf_drops" => o.receiver_rcvbuf_errors as f64,
        "host_load" => o.host_load_1min.unwrap_or(f64::NAN),
        "marked_fraction" => {
            let marks: u64 = monitored().map(|l| l.marked).sum();
            marks as f64 / monitored().map(|l| l.sent_packets).sum::<u64>() as f64
        }
        _ => return None,
    })
}

/// A metric over the paths of `flows` that cross the link `selector` last (every path without
/// one).
fn path_metric(name: &str, selector: Option<&str>, flows: &[&FlowOutcome]) -> f64 {
    let all: Vec<&PathOutcome> = flows.iter().flat_map(|f| &f.paths).collect();
    let chosen: Vec<&PathOutcome> = all
        .iter()
        .copied()
        .filter(|p| selector.is_none_or(|l| p.link.as_deref() == Some(l)))
        .collect();
    let bytes = |ps: &[&PathOutcome]| ps.iter().map(|p| p.bytes_sent).sum::<u64>() as f64;
    let median_of = |x: &dyn Fn(&PathOutcome) -> Option<f64>| {
        quantile(&chosen.iter().filter_map(|p| x(p)).collect::<Vec<_>>(), 0.5)
    };
    match name {
        "path_share" => bytes(&chosen) / bytes(&all),
        "path_rtt_p50_ms" => median_of(&|p| p.rtt_p50_ms),
        "path_rtt_p99_ms" => median_of(&|p| p.rtt_p99_ms),
        _ => f64::NAN,
    }
}

/// A metric of the delay line's busy seconds (NaN without any).
fn delay_metric(name: &str, seconds: &[DelayLineSecond]) -> f64 {
    let busy: Vec<&DelayLineSecond> =
        seconds.iter().filter(|s| s.pkt_per_s > DELAY_BUSY_PKT_PER_S).collect();
    let of = |x: &dyn Fn(&DelayLineSecond) -> f64| busy.iter().map(|s| x(s)).collect::<Vec<_>>();
    match name {
        "delay_pkt_per_s" => quantile(&of(&|s| s.pkt_per_s), 0.5),
        "delay_late_p99_us" => quantile(&of(&|s| s.late_p99_us), 0.5),
        "delay_late_p99_worst_us" => quantile(&of(&|s| s.late_p99_us), 1.0),
        "delay_late_max_us" => quantile(&of(&|s| s.late_max_us), 0.5),
        "delay_late_max_worst_us" => quantile(&of(&|s| s.late_max_us), 1.0),
        _ => f64::NAN,
    }
}

/// CPU seconds of the flows' senders and of all receivers per GB the flows carried (NaN when a
/// CPU time is missing).
/// Mean over the flows' paths whose window the backend reported, in packets of `mtu` bytes.
fn cwnd_pkts_mean(flows: &[&FlowOutcome], mtu: u16) -> f64 {
    let windows: Vec<f64> = flows
        .iter()
        .flat_map(|f| &f.paths)
        .filter_map(|p| p.cwnd_bytes)
        .map(|w| w as f64 / f64::from(mtu))
        .collect();
    mean(&windows)
}

fn cpu_s_per_gb(flows: &[&FlowOutcome], o: &Outcome) -> f64 {
    let senders: Option<f64> = flows.iter().map(|f| f.cpu_s).sum();
    let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
    match (senders, o.receiver_cpu_s) {
        (Some(s), Some(r)) if bytes > 0 => (s + r) / (bytes as f64 / 1e9),
        _ => f64::NAN,
    }
}

/// Paths that carried enough data for their RTT to describe the flow (E5: > 100 kB sent).
const RTT_PATH_MIN_BYTES: u64 = 100_000;

/// Each transfer's completion time, ms: every transfer of a repeating flow, else the flow's
/// own when it completed.
fn transfer_fcts_ms(flows: &[&FlowOutcome]) -> Vec<f64> {
    let per_flow = |f: &&FlowOutcome| match &f.transfer_fcts_us[..] {
        [] => f.fct_us.into_iter().collect::<Vec<_>>(),
        each => each.to_vec(),
    };
    flows.iter().flat_map(per_flow).map(|us| us / 1e3).collect()
}

/// Extra-subflow elimination judged per link, summed over the flows: `ese_extra` and `ese_keep`
/// count the paths that should and should not be closed, `ese_tp` and `ese_fp` the eliminated
/// ones that were right and wrong. A path closed for another reason is no elimination; a
/// failed one is not even a path of its link, as failover re-opens it over the same addresses
/// as a new path, which counts in its place. A flow's paths are grouped by the server
/// address they reach (one per link, port stripped); of a link's n paths n - 1 are extra and
/// one should stay, so closures up to n - 1 are true positives and any beyond (the link's
/// last path) false positives. Flows without paths (kernel ones) count nothing.
fn ese_metric(name: &str, flows: &[&FlowOutcome]) -> f64 {
    let (mut extra, mut keep, mut tp, mut fp) = (0, 0, 0, 0);
    for f in flows {
        let mut links: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for p in f.paths.iter().filter(|p| p.close_reason != Some(PathClose::Failed)) {
            let address = p.remote.rsplit_once(':').map_or(p.remote.as_str(), |(a, _)| a);
            let (n, eliminated) = links.entry(address).or_default();
            *n += 1;
            *eliminated += u64::from(p.close_reason == Some(PathClose::Eliminated));
        }
        for (n, eliminated) in links.into_values() {
            extra += n - 1;
            keep += 1;
            tp += eliminated.min(n - 1);
            fp += eliminated.saturating_sub(n - 1);
        }
    }
    match name {
        "ese_extra" => extra as f64,
        "ese_keep" => keep as f64,
        "ese_tp" => tp as f64,
        "ese_fp" => fp as f64,
        _ => f64::NAN,
    }
}

/// A job: first start and last completion (ms), whether all its flows completed and whether
/// none lost an ACK_FREQUENCY request.
struct Job {
    start: f64,
    end: f64,
    complete: bool,
    heard: bool,
}

fn job_metric(name: &str, flows: &[&FlowOutcome], duration_s: f64) -> f64 {
    // Keyed as the job names sort (`job10` before `job2`), the order sums are taken in.
    let mut jobs: BTreeMap<(String, String), Job> = BTreeMap::new();
    for f in flows {
        let Some(job) = f.job else { continue };
        let key = (f.group.clone().unwrap_or_default(), format!("job{job}"));
        let e = jobs.entry(key).or_insert(Job {
            start: f64::MAX,
            end: 0.0,
            complete: true,
            heard: true,
        });
        let start = f.start_s * 1e3;
        e.start = e.start.min(start);
        match f.fct_us {
            Some(fct) => e.end = e.end.max(start + fct / 1e3),
            None => e.complete = false,
        }
        e.heard &= !(f.ack_request_lost || f.server_ack_request_lost);
    }
    let jct: Vec<f64> = jobs.values().filter(|j| j.complete).map(|j| j.end - j.start).collect();
    let heard: Vec<f64> =
        jobs.values().filter(|j| j.complete && j.heard).map(|j| j.end - j.start).collect();
    let end_ms = duration_s * 1e3;
    let all: Vec<f64> = jobs
        .values()
        .map(|j| if j.complete { j.end - j.start } else { end_ms - j.start })
        .collect();
    match name {
        "jobs" => jobs.len() as f64,
        "jobs_unfinished" => jobs.values().filter(|j| !j.complete).count() as f64,
        "jct_mean_ms" => mean(&jct),
        "jct_p50_ms" => quantile(&jct, 0.5),
        "jct_p90_ms" => quantile(&jct, 0.9),
        "jct_p99_ms" => quantile(&jct, 0.99),
        "jct_all_p90_ms" => quantile(&all, 0.9),
        "jct_all_p99_ms" => quantile(&all, 0.99),
        "jobs_over_10ms" => all.iter().filter(|&&x| x > 10.0).count() as f64,
        "jobs_ack_heard" => heard.len() as f64,
        "jct_p90_ms_ack_heard" => quantile(&heard, 0.9),
        "jct_p99_ms_ack_heard" => quantile(&heard, 0.99),
        _ => f64::NAN,
    }
}

fn ms(flows: &[&FlowOutcome]) -> Vec<f64> {
    flows.iter().filter_map(|f| f.fct_us).map(|x| x / 1000.0).collect()
}

fn mean(xs: &[f64]) -> f64 {
    mpquic_stats::mean_std(xs).map_or(f64::NAN, |m| m.0)
}

fn quantile(xs: &[f64], q: f64) -> f64 {
    mpquic_stats::quantile(xs, q).unwrap_or(f64::NAN)
}

fn metric(name: &str, flows: &[&FlowOutcome], link: Option<&LinkOutcome>, rounds: f64) -> f64 {
    let fcts = ms(flows);
    let count =
        |pred: &dyn Fn(&FlowOutcome) -> bool| flows.iter().filter(|f| pred(f)).count() as f64;
    let sum = |x: &dyn Fn(&FlowOutcome) -> u64| flows.iter().map(|f| x(f)).sum::<u64>() as f64;
    let slow = |f: &FlowOutcome| f.fct_us.is_none_or(|x| x > 10_000.0);
    let heard: Vec<&FlowOutcome> = flows.iter().copied().filter(|f| !f.ack_request_lost).collect();
    let gbps =
        |x: &dyn Fn(&FlowOutcome) -> f64| flows.iter().map(|f| x(f) / 1e9).collect::<Vec<_>>();
    let on_link = |x: &dyn Fn(&LinkOutcome) -> f64| link.map_or(f64::NAN, x);
    let queue =
        |x: &dyn Fn(&QueueOutcome) -> f64| link.and_then(|l| l.queue.as_ref()).map_or(f64::NAN, x);
    let rtts = |x: &dyn Fn(&PathOutcome) -> Option<f64>| -> Vec<f64> {
        let paths = flows.iter().flat_map(|f| &f.paths);
        paths.filter(|p| p.bytes_sent > RTT_PATH_MIN_BYTES).filter_map(x).collect()
    };
    let transfers = transfer_fcts_ms(flows);
    match name {
        "flows" => flows.len() as f64,
        "unfinished" => (flows.len() - fcts.len()) as f64,
        "fct_mean_ms" => mean(&fcts),
        "fct_std_ms" => mpquic_stats::mean_std(&fcts).map_or(f64::NAN, |m| m.1),
        "fct_p50_ms" => quantile(&fcts, 0.5),
        "fct_p90_ms" => quantile(&fcts, 0.9),
        "fct_p99_ms" => quantile(&fcts, 0.99),
        "fct_max_ms" => quantile(&fcts, 1.0),
        "fct_mean_ms_ack_heard" => mean(&ms(&heard)),
        "fct_max_ms_ack_heard" => quantile(&ms(&heard), 1.0),
        "pto" => sum(&|f| f.pto_client + f.pto_server),
        "pto_per_round" => sum(&|f| f.pto_client + f.pto_server) / rounds,
        "flows_with_pto_per_round" => count(&|f| f.pto_client > 0) / rounds,
        "suppressions" => sum(&|f| f.suppressions),
        "suppressions_per_round" => sum(&|f| f.suppressions) / rounds,
        "ack_request_lost_per_round" => count(&|f| f.ack_request_lost) / rounds,
        "ack_request_lost" => count(&|f| f.ack_request_lost || f.server_ack_request_lost),
        "flows_over_10ms_per_round" => count(&slow) / rounds,
        "over_10ms_with_ack_request_lost_per_round" => {
            count(&|f| slow(f) && f.ack_request_lost) / rounds
        }
        "fct_over_200ms" => fcts.iter().filter(|&&x| x > 200.0).count() as f64,
        "rtt_p50_ms" => quantile(&rtts(&|p| p.rtt_p50_ms), 0.5),
        "rtt_min_ms" => quantile(&rtts(&|p| p.rtt_min_ms), 0.0),
        "eliminations" => sum(&|f| f.eliminations),
        "flows_with_elimination" => count(&|f| f.eliminations > 0),
        "active_paths" => {
            flows.iter().map(|f| f.paths.iter().filter(|p| p.active).count()).sum::<usize>() as f64
        }
        "transfers" => transfers.len() as f64,
        "transfer_fct_p50_ms" => quantile(&transfers, 0.5),
        "transfer_fct_p99_ms" => quantile(&transfers, 0.99),
        "sender_cpu_ms_per_transfer" => {
            let cpu: Option<f64> = flows.iter().map(|f| f.cpu_s).sum();
            cpu.map_or(f64::NAN, |c| c * 1e3 / transfers.len() as f64)
        }
        "lost" => sum(&|f| f.lost_packets),
        "goodput_sum_mbps" => flows.iter().map(|f| f.goodput_bps / 1e6).sum(),
        "goodput_mean_mbps" => mean(&flows.iter().map(|f| f.goodput_bps / 1e6).collect::<Vec<_>>()),
        "goodput_mean_gbps" => mean(&gbps(&|f| f.goodput_bps)),
        "goodput_last_half_mean_gbps" => mean(&gbps(&|f| f.goodput_last_half_bps)),
        "jain_goodput" => {
            let xs: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
            mpquic_stats::jain(&xs).unwrap_or(f64::NAN)
        }
        "jain" => {
            let xs: Vec<f64> = flows.iter().map(|f| f.goodput_last_half_bps).collect();
            mpquic_stats::jain(&xs).unwrap_or(f64::NAN)
        }
        "drops" => on_link(&|l| l.dropped as f64),
        "drops_per_round" => on_link(&|l| l.dropped as f64) / rounds,
        "marks" => on_link(&|l| l.marked as f64),
        "marks_per_round" => on_link(&|l| l.marked as f64) / rounds,
        "utilization" => on_link(&|l| l.utilization),
        "queue_p5" => queue(&|q| q.p5),
        "queue_p95" => queue(&|q| q.p95),
        "queue_p50" => queue(&|q| q.p50),
        "queue_p90" => queue(&|q| q.p90),
        "queue_p99" => queue(&|q| q.p99),
        "queue_mean" => queue(&|q| q.mean),
        _ => f64::NAN,
    }
}

/// Metrics of one run.
pub type Metrics = BTreeMap<String, f64>;

/// One run's row in the output.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// Series (the values of the axes other than the plot's x).
    pub series: String,
    /// X value.
    pub x: f64,
    /// Seed.
    pub seed: u64,
    /// Metrics.
    pub metrics: Metrics,
    /// Wall-clock seconds (not deterministic).
    pub wall_s: f64,
}

/// Median, min, max of a metric over seeds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Runs.
    pub n: usize,
    /// Sum (counts pooled over the runs; absent in summaries written before it existed).
    #[serde(default)]
    pub sum: f64,
}

/// Median (nearest rank: the lower middle of an even count), min, max and sum of the finite
/// values.
pub fn spread(xs: &[f64]) -> Option<Spread> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    let sorted = mpquic_stats::Sorted::new(&v);
    Some(Spread {
        median: r4(sorted.quantile(0.5)?),
        min: r4(sorted.min()?),
        max: r4(sorted.max()?),
        n: v.len(),
        sum: r4(v.iter().sum()),
    })
}

fn r4(x: f64) -> f64 {
    if x.abs() >= 1.0 {
        (x * 1e3).round() / 1e3
    } else {
        (x * 1e6).round() / 1e6
    }
}

/// Per sweep point: metric -> spread over seeds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Series.
    pub series: String,
    /// X value.
    pub x: f64,
    /// The point's (axis, value) pairs, when it comes from an experiment file's sweep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<(String, String)>,
    /// Metric -> median/min/max over seeds.
    pub metrics: BTreeMap<String, Spread>,
}

/// The summary of the rows of one point (its runs).
pub fn summarize(series: &str, x: f64, runs: &[RunRow]) -> SummaryRow {
    let mut keys: Vec<&String> = runs.iter().flat_map(|r| r.metrics.keys()).collect();
    keys.sort();
    keys.dedup();
    let metrics = keys
        .into_iter()
        .filter_map(|k| {
            let xs: Vec<f64> = runs.iter().filter_map(|r| r.metrics.get(k).copied()).collect();
            spread(&xs).map(|s| (k.clone(), s))
        })
        .collect();
    SummaryRow { series: series.to_string(), x, labels: vec![], metrics }
}

/// A table cell: `median (min-max)`, or the median alone when the spread rounds away.
pub fn cell(s: &Spread) -> String {
    let (median, min, max) = (short(s.median), short(s.min), short(s.max));
    if s.n > 1 && min != max {
        format!("{median} ({min}-{max})")
    } else {
        median
    }
}

/// A table's number, short: about 3 significant digits (`0.743`, `14.7`), whole numbers and
/// values from 100 up without decimals (`34`, `332`, `1235`).
pub fn short(x: f64) -> String {
    if x.abs() >= 100.0 || x == x.round() {
        // `+ 0.0` turns -0 into 0.
        return format!("{:.0}", x + 0.0);
    }
    // Decimals for 3 significant digits, counted again after rounding (0.9996 -> 1, not 1.000).
    let decimals = |v: f64| (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let rounded: f64 = format!("{x:.*}", decimals(x)).parse().unwrap_or(x);
    if rounded == rounded.round() {
        return format!("{rounded:.0}");
    }
    format!("{rounded:.*}", decimals(rounded))
}

/// Two summaries of one experiment side by side (e.g. the simulator's and the testbed's
/// `experiment.json`): a row per point of `a` (by its axis values) with the point of `b` that
/// has the same values, and per metric a column for each, headed `metric (a_name)` and
/// `metric (b_name)`.
pub fn comparison_table(
    title: &str,
    (a_name, a): (&str, &[SummaryRow]),
    (b_name, b): (&str, &[SummaryRow]),
    metrics: &[String],
) -> String {
    let keys: Vec<&str> =
        a.first().map_or(vec![], |r| r.labels.iter().map(|(k, _)| &k[..]).collect());
    let heads: Vec<String> = metrics
        .iter()
        .flat_map(|m| [format!("{m} ({a_name})"), format!("{m} ({b_name})")])
        .collect();
    let mut out = format!("### {title}\n\n| {} | {} |\n", keys.join(" | "), heads.join(" | "));
    out += &format!("|{}\n", "---|".repeat(keys.len() + heads.len()));
    for row in a {
        let twin = b.iter().find(|r| r.labels == row.labels);
        let mut cells: Vec<String> = row.labels.iter().map(|(_, v)| v.clone()).collect();
        for m in metrics {
            cells.push(row.metrics.get(m).map_or("-".into(), cell));
            cells.push(twin.and_then(|t| t.metrics.get(m)).map_or("-".into(), cell));
        }
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}
