//! What a run produced, in one schema both backends fill ([`Outcome`]); the named metrics an
//! experiment's `[report]` asks for ([`CATALOGUE`]), computed from it; the summary over seeds ([`spread`]); and
//! the markdown tables. Statistics come from `mpquic-stats` only.

use std::collections::BTreeMap;

use mpquic_choice::PathClose;
use serde::{Deserialize, Serialize};

mod catalogue;

pub use catalogue::{find, Input, Metric, Source, CATALOGUE};

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
    /// The hypervisor's CPU steal over the run, % of the host's CPU time (a VM's noise that
    /// the load average does not show).
    pub host_steal_pct: Option<f64>,
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
    /// The run's burst sources (`kind = "bursts"` workloads; the simulator's only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bursts: Vec<BurstOutcome>,
}

/// What one burst source sent and what of it arrived.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BurstOutcome {
    /// Its name.
    pub name: String,
    /// The link direction that delivers to its destination address (`a->dst`).
    pub link: Option<String>,
    /// Time it was on within the run, seconds.
    pub on_s: f64,
    /// Datagrams it sent.
    pub sent_packets: u64,
    /// Their bytes on the wire (IP and UDP headers included).
    pub sent_bytes: u64,
    /// Datagrams that reached the receiver (the others were dropped at a full queue, or were
    /// still on their way at the run's end).
    pub delivered_packets: u64,
    /// Their bytes on the wire.
    pub delivered_bytes: u64,
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

impl PathOutcome {
    /// A client path from the library's report of it (`mpquic::PathReport`, as it serializes:
    /// the CLI's JSON report on the testbed, the simulator's own report of its client), with
    /// the link that delivers to its remote address. The language does not depend on the
    /// library, so both backends read the report by its serialized names, here; a field the
    /// report lacks reads as none (0, false).
    pub fn of_report(report: &serde_json::Value, link: Option<String>) -> PathOutcome {
        let count = |key: &str| report[key].as_u64().unwrap_or(0);
        PathOutcome {
            remote: report["remote"].as_str().unwrap_or_default().to_string(),
            bytes_sent: count("bytes_sent"),
            packets_sent: count("packets_sent"),
            lost_packets: count("lost_packets"),
            rtt_min_ms: report["rtt_min_ms"].as_f64(),
            rtt_p50_ms: report["rtt_p50_ms"].as_f64(),
            rtt_p99_ms: report["rtt_p99_ms"].as_f64(),
            active: report["active"].as_bool().unwrap_or(false),
            close_reason: serde_json::from_value(report["close_reason"].clone()).ok().flatten(),
            cwnd_bytes: report["cwnd"].as_u64(),
            link,
        }
    }
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
    /// A dual queue's (`aqm = "dualq"`) sojourn in its L queue, microseconds (`None` on a
    /// step-marked FIFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l_sojourn_us: Option<QueueOutcome>,
    /// A dual queue's sojourn in its classic queue, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_sojourn_us: Option<QueueOutcome>,
}

/// Queue length over the run, packets (or a dual queue's sojourns, microseconds).
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

/// Whether the report names known metrics, the plot and tables only report metrics, and the
/// plot's x is an axis (the analyses' metrics are [`crate::analyses::check`]'s, which the
/// experiment asks first).
pub fn check_report(s: &Scenario) -> Result<(), ScenarioError> {
    let Some(report) = &s.report else {
        return match &s.plot {
            Some(_) => Err(at("plot", "a plot needs a [report] with its metrics")),
            None => Ok(()),
        };
    };
    for (i, m) in report.metrics.iter().enumerate() {
        for operand in operands(m).into_iter().filter(|o| o.parse::<f64>().is_err()) {
            let name = operand.split_once('@').map_or(operand, |(n, _)| n);
            let analysed =
                name.split_once('.').is_some_and(|(a, _)| report.analyses.contains(&a.into()));
            if analysed {
                continue; // checked by `analyses::check`
            }
            let (name, selector) = path_selector(name);
            if find(name).is_none() {
                let known: Vec<&str> = CATALOGUE.iter().map(|m| m.name).collect();
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

/// The report's metrics of one run of `s` (NaN where there is nothing to compute over, and for
/// names outside the catalogue: an analysis's metrics, which its backend fills in).
pub fn compute(s: &Scenario, o: &Outcome) -> BTreeMap<String, f64> {
    let Some(report) = &s.report else { return BTreeMap::new() };
    let rounds = rounds(s);
    let link = report.link.as_deref().and_then(|n| o.links.iter().find(|l| l.name == n));
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
        let (name, selector) = path_selector(name);
        let Some(metric) = find(name) else { return f64::NAN };
        let flows = o.flows.iter().filter(|f| in_group(f.group.as_deref(), group)).collect();
        let input = Input { run: o, flows, link, rounds, mtu: s.transport.mtu, selector };
        (metric.compute)(&input)
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

/// Metrics of one run.
pub type Metrics = BTreeMap<String, f64>;

/// Median, min, max of a metric over seeds, and the median's 95% interval when there are
/// enough runs for one.
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
    /// The median's 95% confidence interval, exact order statistics
    /// ([`mpquic_stats::Sorted::median_interval`]): from 6 runs up, none below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<(f64, f64)>,
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
        ci95: sorted.median_interval(0.95).map(|(lo, hi)| (r4(lo), r4(hi))),
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

/// The summary of one point's runs (their metrics).
pub fn summarize(series: &str, x: f64, runs: &[Metrics]) -> SummaryRow {
    let mut keys: Vec<&String> = runs.iter().flat_map(|r| r.keys()).collect();
    keys.sort();
    keys.dedup();
    let metrics = keys
        .into_iter()
        .filter_map(|k| {
            let xs: Vec<f64> = runs.iter().filter_map(|r| r.get(k).copied()).collect();
            spread(&xs).map(|s| (k.clone(), s))
        })
        .collect();
    SummaryRow { series: series.to_string(), x, labels: vec![], metrics }
}

/// A table cell: `median [lo, hi]` with the median's 95% interval from 6 runs up, else
/// `median (min-max)`; the median alone when the spread rounds away.
pub fn cell(s: &Spread) -> String {
    let (median, min, max) = (short(s.median), short(s.min), short(s.max));
    if let Some((lo, hi)) = s.ci95.map(|(lo, hi)| (short(lo), short(hi))) {
        return if lo == hi { median } else { format!("{median} [{lo}, {hi}]") };
    }
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
