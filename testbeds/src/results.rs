//! The result of a run: per repetition, per flow and per bottleneck, plus the parameters and
//! the backend that ran. Written as one JSON file.

use crate::backend::{Backend, Capabilities};
use crate::delay::DelaySecond;
use crate::plan::{FlowKind, Plan};
use crate::sampler::MarkerCounts;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub p5: f64,
    pub median: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// Percentiles by the suite's rule, nearest rank (`mpquic_stats`); all zero without values.
    pub fn of(values: &[f64]) -> Summary {
        let v = mpquic_stats::Sorted::new(values);
        let q = |p: f64| v.quantile(p).unwrap_or(0.0);
        Summary {
            n: v.len(),
            mean: mpquic_stats::mean(values).unwrap_or(0.0),
            min: q(0.0),
            p5: q(0.05),
            median: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            max: q(1.0),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub id: String,
    pub kind: FlowKind,
    pub from: String,
    pub to: String,
    pub cc: String,
    pub paths: Vec<(String, String)>,
    pub start_s: f64,
    /// When its sending process exited or was stopped (seconds since the run started).
    pub end_s: f64,
    pub completed: bool,
    pub bytes: u64,
    pub fct_s: Option<f64>,
    pub goodput_mbps: Option<f64>,
    /// Receiver-side throughput over time: (seconds since the run started, Mbit/s).
    pub throughput: Vec<(f64, f64)>,
    /// With `repeat`: each transfer's FCT (then `fct_s` is their sum, `bytes` their total).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfer_fcts_s: Vec<f64>,
    /// The mpquic client's own JSON report, verbatim (with `repeat`, the last transfer's).
    pub mpquic: Option<serde_json::Value>,
    /// CPU seconds (user + system) of the sending process (`/proc/<pid>/stat` before reaping).
    pub cpu_s: Option<f64>,
    pub error: Option<String>,
}

/// One `[[jobs]]` entry's outcome: the aggregator's report of every job.
#[derive(Debug, Clone, Serialize)]
pub struct JobsResult {
    pub id: String,
    pub aggregator: String,
    pub workers: Vec<String>,
    pub cc: String,
    /// When the aggregator process was started and when it exited or was stopped (seconds
    /// since the run started).
    pub start_s: f64,
    pub end_s: f64,
    /// Every job completed before the deadline.
    pub completed: bool,
    /// `mpquic aggregate --json`, verbatim: the connections' set-up time, every job (start, JCT,
    /// each answer's FCT and size, errors) and the JCT percentiles in ms.
    pub report: Option<serde_json::Value>,
    /// CPU seconds (user + system) of the aggregator process.
    pub cpu_s: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkResult {
    pub link_id: usize,
    pub from: String,
    pub to: String,
    /// The addresses this direction delivers to: a path whose remote address is one of them
    /// crosses this link last.
    pub to_addrs: Vec<std::net::Ipv4Addr>,
    pub samples: usize,
    /// Queue over samples where the link was sending, in the qdisc's packets: skbs, so with
    /// sender offload a GSO batch of ~6 packets counts once (see `queue_frames_busy`).
    pub queue_pkts_busy: Summary,
    pub queue_bytes_busy: Summary,
    /// The byte backlog in 1514-byte frames: with sender offload the qdisc's packet count is
    /// in skbs (a GSO batch is one), so this is the comparable queue length.
    pub queue_frames_busy: Summary,
    pub qdisc_drops: u64,
    pub sent_bytes: u64,
    pub busy_throughput_mbit: f64,
    pub marker: Option<MarkerCounts>,
    /// Marker model minus the real backlog at each resync, in packets of 1514 bytes.
    pub model_minus_real_pkts: Option<Summary>,
    /// A dual queue's L sojourn, microseconds, per packet dequeued: the L head's sojourn at
    /// each sample from the leaf's counters (`marker::HeadSojourn`), weighted by the packets
    /// that left since the sample before. Sample-resolution (1-10 ms between samples), not
    /// timestamped per packet as in the simulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l_sojourn_us: Option<Summary>,
    /// A dual queue's classic sojourn, the same way: the classic head's, as PI2 reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_sojourn_us: Option<Summary>,
}

impl LinkResult {
    /// `from->to`, as the experiment language names a link direction.
    pub fn name(&self) -> String {
        format!("{}->{}", self.from, self.to)
    }

    /// Whether `remote` (`ip:port`, a path's server address) is one this direction delivers
    /// to, i.e. the path crosses it last.
    pub fn delivers_to(&self, remote: &str) -> bool {
        remote
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| self.to_addrs.iter().any(|x| std::net::IpAddr::V4(*x) == a.ip()))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CeEstimation {
    /// Marks set by the bottleneck markers (sum over links), one per skb.
    pub marks: u64,
    /// Packets those marks cover: a marked GSO skb (sender offload) is several CE packets.
    pub marked_segs: u64,
    /// Marked packets the FIFO behind the marker dropped cannot arrive; this bounds that.
    pub qdisc_drops: u64,
    /// CE-marked packets counted where they arrive (receiver IpExt.InCEPkts, sum over hosts).
    pub receiver_ce: u64,
    /// CE counts the mpquic senders report (sum of ce_marked over paths), if any.
    pub sender_ce: Option<u64>,
    /// (receiver_ce - marked_segs) / marked_segs: whether every CE packet arrived.
    pub receiver_error: Option<f64>,
    /// (sender_ce - marked_segs) / marked_segs: the senders' CE-count estimation error.
    pub sender_error: Option<f64>,
    /// Per bottleneck: marks against the CE the mpquic senders report on that link's paths.
    pub per_link: Vec<LinkCe>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkCe {
    pub link_id: usize,
    pub marks: u64,
    pub marked_segs: u64,
    /// Sum of `ce_marked` over the mpquic paths whose server address is on this link.
    pub sender_ce_marked: Option<u64>,
    /// Sum of `ce_events` (ACK frames that raised the CE count) over the same paths.
    pub sender_ce_events: Option<u64>,
    /// Whether every one of those paths reported exact counts.
    pub sender_ce_exact: bool,
    /// Whether non-mpquic flows also crossed this link (their marks are not in the senders').
    pub other_flows: bool,
    /// (sender_ce_marked - marked_segs) / marked_segs
    pub sender_error: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RepResult {
    pub rep: u32,
    pub duration_s: f64,
    pub flows: Vec<FlowResult>,
    /// Partition/aggregate jobs (not counted in the goodput below).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobsResult>,
    pub links: Vec<LinkResult>,
    /// Bytes of all completed flows over the span from the first start to the last completion.
    pub total_goodput_mbps: f64,
    pub link_sum_mbit: f64,
    pub goodput_fraction_of_link_sum: f64,
    pub ce: Option<CeEstimation>,
    pub receiver_counters: BTreeMap<String, BTreeMap<String, u64>>,
    pub sampler_late_fraction: f64,
    /// How long the sampler ran before the flows' zero: a series time minus this is the run's
    /// time (`rep<i>-series.json` counts from the sampler's start).
    pub sampler_lead_s: f64,
    /// The host's 1-minute load average before the flows started and after they ended.
    pub host_loadavg_1min: [f64; 2],
    /// The hypervisor's CPU steal from the flows' start to their end, % of the host's CPU
    /// time (none: `/proc/stat` not read).
    pub host_steal_pct: Option<f64>,
    /// The mpquic servers' JSON lines (one per received transfer), verbatim but for their
    /// `received_series`, which became the flows' `throughput`.
    pub mpquic_server_reports: Vec<serde_json::Value>,
    /// CPU seconds (user + system) of each receiver process ("host:mpquic" or
    /// "host:tcp-sink"), read just before it was stopped: with one flow per receiver, the
    /// receiving side of the energy proxy.
    pub receiver_cpu_s: BTreeMap<String, f64>,
    /// The delay lines' seconds (every queue's, from their logs): how many packets each
    /// released and how late.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delay_line: Vec<DelaySecond>,
}

impl RepResult {
    /// The shaped direction (`from->to`) that delivers to `remote` (a path's server address,
    /// `ip:port`): the link the path crosses last.
    pub fn link_into(&self, remote: &str) -> Option<String> {
        self.links.iter().find(|l| l.delivers_to(remote)).map(LinkResult::name)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub scenario: Plan,
    pub backend: Backend,
    pub backend_detail: String,
    pub capabilities: Capabilities,
    pub kernel: String,
    pub repetitions: Vec<RepResult>,
    /// Medians over repetitions.
    pub median_goodput_fraction: f64,
    /// Of the links' `queue_frames_busy` (1514-byte frames; the skb count undercounts a GSO
    /// batch, see `queue_pkts_busy`).
    pub median_queue_frames_median: f64,
    pub median_queue_frames_p99: f64,
    /// Median over repetitions of the mpquic senders' CE error against the marks.
    pub median_ce_sender_error: Option<f64>,
    /// Median over repetitions of the receivers' CE error (InCEPkts) against the marks.
    pub median_ce_receiver_error: Option<f64>,
}

pub fn median(v: &[f64]) -> f64 {
    Summary::of(v).median
}

/// The median of the values that are there, if all are.
pub fn median_opt(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Option<Vec<f64>> = v.collect();
    v.filter(|v| !v.is_empty()).map(|v| median(&v))
}

pub const TABLE_HEADER: &str = "| scenario | flow | ecn | offload | K | goodput % of link sum (reps) | median | queue median / p99 (frames) | sender CE error (reps) | median | receiver CE / marks | host load (reps) |\n|---|---|---|---|---|---|---|---|---|---|---|---|";

/// A Markdown row for one result.json: per-repetition goodput and CE error with their medians,
/// the median over repetitions and links of the queue's median and p99 in 1514-byte frames.
pub fn table_row(v: &serde_json::Value) -> String {
    let reps = v["repetitions"].as_array().cloned().unwrap_or_default();
    let loads: Vec<f64> = reps.iter().filter_map(|r| r["host_loadavg_1min"][0].as_f64()).collect();
    let num = |x: &serde_json::Value| x.as_f64();
    let fr: Vec<f64> = reps
        .iter()
        .filter_map(|r| num(&r["goodput_fraction_of_link_sum"]))
        .map(|x| x * 100.0)
        .collect();
    let links = || reps.iter().flat_map(|r| r["links"].as_array().cloned().unwrap_or_default());
    let qm: Vec<f64> = links().filter_map(|l| num(&l["queue_frames_busy"]["median"])).collect();
    let qp: Vec<f64> = links().filter_map(|l| num(&l["queue_frames_busy"]["p99"])).collect();
    let se: Vec<f64> = reps.iter().filter_map(|r| num(&r["ce"]["sender_error"])).collect();
    let rm: Vec<f64> = reps
        .iter()
        .filter_map(|r| Some(num(&r["ce"]["receiver_ce"])? / num(&r["ce"]["marks"])?))
        .collect();
    let flow = &v["scenario"]["flows"][0];
    let kind = flow["kind"].as_str().unwrap_or("?");
    // The plan's `controller` (results before it: `cc`).
    let cc = flow["controller"].as_str().or(flow["cc"].as_str()).unwrap_or("?");
    let name = format!("{kind} {cc}");
    let list = |v: &[f64], prec: usize| {
        v.iter().map(|x| format!("{x:.prec$}")).collect::<Vec<_>>().join(", ")
    };
    let med = |v: &[f64], prec: usize| {
        if v.is_empty() {
            "-".to_string()
        } else {
            format!("{:.prec$}", median(v))
        }
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} |",
        v["scenario"]["name"].as_str().unwrap_or("?"),
        name,
        if kind == "mpquic" { flow["ecn"].as_str().unwrap_or("?") } else { "-" },
        if v["scenario"]["link"]["sender_offload"] == true { "on" } else { "off" },
        v["scenario"]["link"]["k_packets"],
        list(&fr, 1),
        med(&fr, 1),
        med(&qm, 1),
        med(&qp, 1),
        if se.is_empty() {
            "-".into()
        } else {
            list(&se.iter().map(|x| x * 100.0).collect::<Vec<_>>(), 1) + " %"
        },
        if se.is_empty() {
            "-".into()
        } else {
            med(&se.iter().map(|x| x * 100.0).collect::<Vec<_>>(), 1) + " %"
        },
        med(&rm, 2),
        list(&loads, 1),
    )
}

/// Results of one scenario run in several invocations (e.g. repetitions interleaved with other
/// scenarios' so that a shared machine's load drift hits all alike) merged into one: the first
/// result with every result's repetitions.
pub fn merge_by_scenario(results: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for r in results {
        let name = r["scenario"]["name"].clone();
        match out.iter_mut().find(|o| o["scenario"]["name"] == name) {
            Some(o) => {
                let more = r["repetitions"].as_array().cloned().unwrap_or_default();
                if let Some(reps) = o["repetitions"].as_array_mut() {
                    reps.extend(more);
                }
            }
            None => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row names the first flow's kind and controller: the plan's `controller` text, or the
    /// `cc` of results written before it.
    #[test]
    fn a_row_names_the_flows_controller_of_either_plan() {
        let row = |flow: serde_json::Value| {
            table_row(&serde_json::json!({"scenario": {"name": "t", "flows": [flow]}}))
        };
        let now = row(serde_json::json!({"kind": "mpquic", "controller": "amp:beta=4"}));
        assert!(now.starts_with("| t | mpquic amp:beta=4 |"), "{now}");
        let before = row(serde_json::json!({"kind": "kernel-tcp", "cc": "cubic"}));
        assert!(before.starts_with("| t | kernel-tcp cubic | - |"), "{before}");
    }
}
