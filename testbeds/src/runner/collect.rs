//! One repetition's results from what its processes, sampler and counters left: per flow, per
//! `[[jobs]]` entry, per bottleneck, the CE estimation and the aggregate goodput.

use super::launch::Launched;
use super::receivers::Received;
use super::shaping::Bottleneck;
use crate::backend::FRAME;
use crate::flows::SendRecord;
use crate::plan::{Flow, FlowKind, Jobs};
use crate::results::*;
use crate::sampler::Series;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// The kernel counters compared before and after the flows on every receiving host.
const RECEIVER_COUNTERS: [&str; 7] = [
    "IpExt.InCEPkts",
    "IpExt.InECT0Pkts",
    "IpExt.InECT1Pkts",
    "IpExt.InNoECTPkts",
    "TcpExt.TCPTimeouts",
    // A receiving process that falls behind overflows its UDP socket (mpquic incast).
    "Udp.InDatagrams",
    "Udp.RcvbufErrors",
];

/// A flow instance after its thread returned.
pub struct FinishedFlow {
    pub id: String,
    pub spec: Flow,
    pub paths: Vec<(String, String)>,
    pub run: Launched,
}

/// A flow's result from its sender's output and its receiver's samples (a kernel sink's or an
/// mpquic server's), whose clock starts at `start_ns`.
pub fn flow_result(o: FinishedFlow, received: &Received, start_ns: u64) -> FlowResult {
    let mut fr = FlowResult {
        id: o.id,
        kind: o.spec.kind,
        from: o.spec.from.clone(),
        to: o.spec.to.clone(),
        cc: o.spec.controller.name().to_string(),
        paths: o.paths,
        start_s: o.run.started,
        end_s: o.run.ended,
        completed: false,
        bytes: 0,
        fct_s: None,
        goodput_mbps: None,
        throughput: Vec::new(),
        transfer_fcts_s: Vec::new(),
        mpquic: None,
        cpu_s: None,
        error: None,
    };
    let (lines, err, ok, cpu) = match o.run.res {
        Ok(x) => x,
        Err(e) => {
            fr.error = Some(format!("{e:#}"));
            return fr;
        }
    };
    fr.cpu_s = cpu;
    if !ok {
        fr.error = Some(format!("did not finish before the deadline or failed: {}", err.trim()));
    }
    match o.spec.kind {
        FlowKind::KernelTcp | FlowKind::KernelMptcp => {
            read_kernel_report(&mut fr, &lines, ok, received, start_ns)
        }
        FlowKind::Mpquic => {
            let run = Finished { lines: &lines, stderr: &err, ok };
            read_mpquic_reports(&mut fr, run, &o.spec, received, start_ns)
        }
    }
    fr
}

/// What a finished flow process left: its stdout lines, its stderr, whether it exited well.
struct Finished<'a> {
    lines: &'a [String],
    stderr: &'a str,
    ok: bool,
}

/// A kernel flow's result from its sender's last JSON record and its sink's byte samples.
fn read_kernel_report(
    fr: &mut FlowResult,
    lines: &[String],
    ok: bool,
    received: &Received,
    start_ns: u64,
) {
    let Some(r) = lines.iter().rev().find_map(|l| serde_json::from_str::<SendRecord>(l).ok())
    else {
        return;
    };
    fr.completed = ok;
    fr.bytes = r.bytes;
    fr.fct_s = Some(r.fct_s);
    fr.goodput_mbps = Some(r.goodput_mbps);
    if let Some(s) = received.sink_records.iter().find(|s| s.peer == r.local) {
        fr.throughput = rate_series(&s.samples, start_ns, 0.01);
    }
}

/// An mpquic flow's result from its client's JSON reports (one line per transfer, several
/// with `repeat`) and its server's received series.
fn read_mpquic_reports(
    fr: &mut FlowResult,
    run: Finished,
    spec: &Flow,
    received: &Received,
    start_ns: u64,
) {
    let reports: Vec<serde_json::Value> = run
        .lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .collect();
    let Some(last) = reports.last() else {
        if fr.error.is_none() {
            fr.error = Some(format!("no JSON report on stdout; stderr: {}", run.stderr.trim()));
        }
        return;
    };
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64());
    fr.completed = run.ok && reports.len() == spec.repeat as usize;
    fr.bytes = reports.iter().filter_map(|v| v.get("bytes")?.as_u64()).sum();
    if reports.len() == 1 {
        fr.fct_s = num(last, "fct_s");
        fr.goodput_mbps = num(last, "goodput_mbps");
    } else {
        // The time spent transferring, and the goodput over it.
        fr.transfer_fcts_s = reports.iter().filter_map(|v| num(v, "fct_s")).collect();
        let busy: f64 = fr.transfer_fcts_s.iter().sum();
        fr.fct_s = Some(busy);
        fr.goodput_mbps = (busy > 0.0).then(|| fr.bytes as f64 * 8.0 / busy / 1e6);
    }
    if let Some(samples) = received.server_series.get(&fr.id) {
        fr.throughput = rate_series(samples, start_ns, 0.01);
    }
    // A timed flow that runs to the run's end is stopped there by the runner's SIGTERM and
    // ends cleanly, verified: that is its end, not a failure.
    if spec.bytes == 0 && last["ended_by"] == "SIGTERM" && fr.error.is_some() {
        fr.completed = reports.len() == 1;
        fr.error = None;
    }
    fr.mpquic = Some(last.clone());
}

/// Cumulative (ns, bytes) samples to (s since start, Mbit/s) in bins of `bin_s`.
fn rate_series(samples: &[(u64, u64)], start_ns: u64, bin_s: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let Some(&(t_first, _)) = samples.first() else { return out };
    let bin = (bin_s * 1e9) as u64;
    let mut edge = t_first + bin;
    let mut last_bytes = 0u64;
    let mut last_t = t_first;
    for &(t, b) in samples {
        if t >= edge {
            let dt = (t - last_t) as f64 / 1e9;
            if dt > 0.0 {
                out.push((
                    (t.saturating_sub(start_ns)) as f64 / 1e9,
                    (b - last_bytes) as f64 * 8.0 / dt / 1e6,
                ));
            }
            last_bytes = b;
            last_t = t;
            edge = t + bin;
        }
    }
    out
}

/// A `[[jobs]]` entry's result from its aggregator's outcome (the JSON report on stdout) and
/// its workers' error lines.
pub fn jobs_result(id: String, spec: Jobs, l: Launched, worker_errors: Vec<String>) -> JobsResult {
    let mut jr = JobsResult {
        id,
        aggregator: spec.aggregator,
        workers: spec.workers,
        cc: spec.controller.name().to_string(),
        start_s: l.started,
        end_s: l.ended,
        completed: false,
        report: None,
        cpu_s: None,
        error: None,
    };
    match l.res {
        Err(e) => jr.error = Some(format!("{e:#}")),
        Ok((lines, err, ok, cpu)) => {
            jr.cpu_s = cpu;
            jr.completed = ok;
            jr.report = lines.iter().rev().find_map(|l| serde_json::from_str(l.trim()).ok());
            if !ok || jr.report.is_none() {
                jr.error =
                    Some(format!("the aggregator failed or missed the deadline: {}", err.trim()));
            }
        }
    }
    if !worker_errors.is_empty() && !jr.completed {
        let e = jr.error.take().unwrap_or_default();
        jr.error = Some(format!("{e}; workers: {}", worker_errors.join(" | ")));
    }
    jr
}

/// One bottleneck's result from its sampled series.
pub fn link_result(s: &Series, b: &Bottleneck) -> LinkResult {
    let mut qp = Vec::new();
    let mut qb = Vec::new();
    let mut busy_t = 0.0;
    let mut busy_bytes = 0u64;
    for i in s.busy() {
        qp.push(s.qlen[i] as f64);
        qb.push(s.backlog[i] as f64);
        busy_t += s.t[i] - s.t[i - 1];
        busy_bytes += s.bytes[i] - s.bytes[i - 1];
    }
    let mm = if s.model_minus_real.is_empty() {
        None
    } else {
        let v: Vec<f64> = s.model_minus_real.iter().map(|x| *x as f64 / FRAME as f64).collect();
        Some(Summary::of(&v))
    };
    LinkResult {
        link_id: b.link_id,
        from: b.from.clone(),
        to: b.to.clone(),
        to_addrs: b.to_addrs.clone(),
        samples: s.t.len(),
        queue_pkts_busy: Summary::of(&qp),
        queue_bytes_busy: Summary::of(&qb),
        queue_frames_busy: Summary::of(&qb.iter().map(|b| b / FRAME as f64).collect::<Vec<_>>()),
        qdisc_drops: s.drops.last().copied().unwrap_or(0) as u64,
        sent_bytes: s.bytes.last().copied().unwrap_or(0) - s.bytes.first().copied().unwrap_or(0),
        busy_throughput_mbit: if busy_t > 0.0 {
            busy_bytes as f64 * 8.0 / busy_t / 1e6
        } else {
            0.0
        },
        marker: s.final_marker.clone(),
        model_minus_real_pkts: mm,
        l_sojourn_us: per_packet_sojourn_us(s, &s.l_sojourn_us, &s.l_left),
        c_sojourn_us: per_packet_sojourn_us(s, &s.c_sojourn_us, &s.c_left),
    }
}

/// A dual queue's sojourn per packet, microseconds: each sample's head sojourn counted once for
/// every packet the queue dequeued since the sample before (those left having waited about
/// that long), as the simulator records every packet's. `None` on a single queue, or when the
/// queue sent nothing.
fn per_packet_sojourn_us(s: &Series, sojourn: &[u32], left: &[u32]) -> Option<Summary> {
    if sojourn.len() != s.t.len() || left.len() != s.t.len() {
        return None;
    }
    let us: Vec<f64> = sojourn
        .iter()
        .zip(left)
        .flat_map(|(&us, &n)| std::iter::repeat_n(us as f64, n as usize))
        .collect();
    (!us.is_empty()).then(|| Summary::of(&us))
}

/// Every receiving host's counter deltas (after minus before), keyed by host name.
pub fn receiver_counters(
    names: impl Iterator<Item = String>,
    before: &[BTreeMap<String, u64>],
    after: &[BTreeMap<String, u64>],
) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut counters = BTreeMap::new();
    for ((name, b), a) in names.zip(before).zip(after) {
        let mut d = BTreeMap::new();
        for k in RECEIVER_COUNTERS {
            d.insert(k.to_string(), a.get(k).unwrap_or(&0) - b.get(k).unwrap_or(&0));
        }
        counters.insert(name, d);
    }
    counters
}

/// The CE estimation: the markers' marks against the receivers' CE counts (`receiver_ce`) and
/// the mpquic senders' counts, in total and per bottleneck.
pub fn ce_estimation(
    links: &[LinkResult],
    bns: &[Bottleneck],
    flows: &[FlowResult],
    receiver_ce: u64,
) -> CeEstimation {
    let marks: u64 = links.iter().filter_map(|l| l.marker.as_ref()).map(|m| m.marks).sum();
    let marked_segs: u64 =
        links.iter().filter_map(|l| l.marker.as_ref()).map(|m| m.marked_segs).sum();
    let drops = links.iter().map(|l| l.qdisc_drops).sum();
    let per_link: Vec<LinkCe> = links.iter().zip(bns).map(|(l, b)| link_ce(l, b, flows)).collect();
    let any_mpquic = flows.iter().any(|f| f.mpquic.is_some());
    let sender_ce: Option<u64> =
        any_mpquic.then(|| per_link.iter().filter_map(|l| l.sender_ce_marked).sum());
    // The reference is the number of CE packets the marks produced: a marked GSO skb (sender
    // offload) becomes gso_segs CE packets; without offload that equals `marks`.
    let err = |x: u64| ratio_error(x, marked_segs);
    CeEstimation {
        marks,
        marked_segs,
        qdisc_drops: drops,
        receiver_ce,
        sender_ce,
        receiver_error: err(receiver_ce),
        sender_error: sender_ce.and_then(err),
        per_link,
    }
}

/// (x - reference) / reference, if there is a reference.
fn ratio_error(x: u64, reference: u64) -> Option<f64> {
    (reference > 0).then(|| (x as f64 - reference as f64) / reference as f64)
}

/// One link's CE estimation: its marker's marks against the CE the mpquic senders report on
/// the paths whose server address is on this link.
fn link_ce(l: &LinkResult, b: &Bottleneck, flows: &[FlowResult]) -> LinkCe {
    let on_link = |remote: &str| l.delivers_to(remote);
    let mut marked = None::<u64>;
    let mut events = None::<u64>;
    let mut exact = Vec::new();
    let mut other_flows = false;
    for f in flows {
        match &f.mpquic {
            Some(j) => {
                let ps = j.get("paths").and_then(|p| p.as_array()).cloned().unwrap_or_default();
                for p in ps
                    .iter()
                    .filter(|p| p.get("remote").and_then(|r| r.as_str()).is_some_and(on_link))
                {
                    if let Some(m) = p.get("ce_marked").and_then(|x| x.as_u64()) {
                        *marked.get_or_insert(0) += m;
                    }
                    if let Some(e) = p.get("ce_events").and_then(|x| x.as_u64()) {
                        *events.get_or_insert(0) += e;
                    }
                    exact.push(p.get("ce_exact").and_then(|x| x.as_bool()).unwrap_or(false));
                }
            }
            None => {
                if f.paths.iter().any(|(_, r)| {
                    r.parse::<Ipv4Addr>().is_ok_and(|a| b.to_addrs.contains(&a)) || on_link(r)
                }) {
                    other_flows = true;
                }
            }
        }
    }
    let m = l.marker.as_ref();
    let marks = m.map_or(0, |m| m.marks);
    let marked_segs = m.map_or(0, |m| m.marked_segs);
    LinkCe {
        link_id: b.link_id,
        marks,
        marked_segs,
        sender_ce_marked: marked,
        sender_ce_events: events,
        sender_ce_exact: !exact.is_empty() && exact.iter().all(|x| *x),
        other_flows,
        sender_error: marked.and_then(|x| ratio_error(x, marked_segs)),
    }
}

/// Aggregate goodput: every completed flow's bytes over the span from the first start to the
/// last completion (flows need not overlap the whole run).
pub fn total_goodput_mbps(flows: &[FlowResult]) -> f64 {
    let done: Vec<&FlowResult> = flows.iter().filter(|f| f.fct_s.is_some()).collect();
    let span = done.iter().map(|f| f.start_s + f.fct_s.unwrap()).fold(0.0, f64::max)
        - done.iter().map(|f| f.start_s).fold(f64::INFINITY, f64::min);
    if span > 0.0 {
        done.iter().map(|f| f.bytes as f64).sum::<f64>() * 8.0 / span / 1e6
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Flow;

    /// An mpquic flow `f0.0` of `bytes` (0: for `for_s` seconds) whose sender exited (`ok`:
    /// before the deadline) printing `report`.
    fn mpquic_flow(bytes: u64, for_s: f64, ok: bool, report: serde_json::Value) -> FinishedFlow {
        let spec = Flow::mpquic_for_tests(bytes, for_s);
        let lines = vec![report.to_string()];
        let res = Ok((lines, "mpquic: shutting down".to_string(), ok, None));
        let run = Launched { started: 1.0, ended: 5.0, res };
        FinishedFlow { id: "f0.0".into(), spec, paths: vec![], run }
    }

    fn received(series: Vec<(u64, u64)>) -> Received {
        Received {
            sink_records: vec![],
            server_reports: vec![],
            server_series: [("f0.0".to_string(), series)].into(),
            sink_errors: vec![],
            cpu_s: BTreeMap::new(),
        }
    }

    #[test]
    fn a_timed_flow_stopped_at_the_run_end_is_complete_with_its_receiver_series() {
        // 1.25 MB per 10 ms from 1 s on the run's clock (start_ns = 10 s): 1000 Mbit/s.
        let series: Vec<(u64, u64)> =
            (0..=100).map(|i| (11_000_000_000 + i * 10_000_000, i * 1_250_000)).collect();
        let report = serde_json::json!({"bytes": 125_000_000u64, "fct_s": 1.0,
            "goodput_mbps": 1000.0, "ended_by": "SIGTERM", "paths": []});
        let f = flow_result(
            mpquic_flow(0, 3.0, false, report.clone()),
            &received(series),
            10_000_000_000,
        );
        assert!(f.completed && f.error.is_none(), "{:?}", f.error);
        assert_eq!((f.bytes, f.goodput_mbps), (125_000_000, Some(1000.0)));
        assert_eq!(f.throughput.len(), 100);
        assert!(f.throughput.iter().all(|&(t, rate)| t > 1.0 && (rate - 1000.0).abs() < 1e-6));
        // A sized flow cut at the deadline did not finish: that stays an error.
        let f = flow_result(mpquic_flow(1000, 0.0, false, report), &received(vec![]), 0);
        assert!(!f.completed && f.error.is_some());
    }
}
