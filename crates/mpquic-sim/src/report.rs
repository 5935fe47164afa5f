//! Results of a run: per-flow goodput and completion times, per-group FCT percentiles
//! (hdrhistogram), per-link queue statistics and mark counts, per-path window traces.
//!
//! Everything here is computed from virtual time and the run's own counters, so the same
//! scenario and seed serialize to byte-identical JSON. Wall-clock figures (speed) are kept out of
//! the report on purpose; see [`Perf`].

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use mpquic::PathReport;
use mpquic_cc::{ConnectionSnapshot, Notice};
use mpquic_scenario::metrics::{
    BurstOutcome, FlowOutcome, LinkOutcome, Outcome, PathOutcome, QueueOutcome,
};
use mpquic_scenario::record::RunRecord;

use crate::net::{Ps, WIRE_OVERHEAD};
use crate::scenario::Scenario;
use crate::sim::{Flow, NoticeAt, Side, Sim, Transfer};

/// Percentiles of a distribution.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    /// Number of values.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// Minimum.
    pub min: u64,
    /// 5th percentile.
    pub p5: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Maximum.
    pub max: u64,
}

impl Percentiles {
    /// Summarize a histogram.
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        Percentiles {
            count: h.len(),
            mean: round3(h.mean()),
            stdev: round3(h.stdev()),
            min: h.min(),
            p5: h.value_at_quantile(0.05),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// Bytes of a full-size QUIC packet that are not application data, for the payload ceiling.
const QUIC_OVERHEAD: f64 = 35.0;

/// A client path as the shared outcome has it, with the link that delivers to its remote
/// address: read from the library's report as the testbed reads the CLI's, through its JSON.
fn path_outcome(p: &PathReport, link: Option<String>) -> PathOutcome {
    let report = serde_json::to_value(p).expect("path reports serialize");
    PathOutcome::of_report(&report, link)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A controller notice with its virtual time.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoticeRecord {
    /// Virtual time, microseconds.
    pub t_us: f64,
    /// Which end's controller.
    pub side: Side,
    /// The notice (`kind` and its fields).
    #[serde(flatten)]
    pub notice: Notice,
}

impl NoticeRecord {
    fn of(n: &NoticeAt) -> NoticeRecord {
        NoticeRecord { t_us: us(n.at), side: n.side, notice: n.notice.clone() }
    }
}

/// One end's mpquic-cc controller at the end of the run (from the adapter).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ControllerReport {
    /// Which end.
    pub side: Side,
    /// The adapter's snapshot: per path window, alpha, active, rounds, CE counts; connection-wide
    /// suppressions, releases, eliminations.
    pub snapshot: ConnectionSnapshot,
    /// Per slot, in slot order: time the controller kept it from new data, microseconds.
    pub inactive_us: Vec<f64>,
}

/// One flow's results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowReport {
    /// Name.
    pub name: String,
    /// Group.
    pub group: Option<String>,
    /// Client host.
    pub from: String,
    /// Server host.
    pub to: String,
    /// Controller.
    pub controller: String,
    /// Paths asked for.
    pub paths: usize,
    /// Start, seconds.
    pub start_s: f64,
    /// Request size (absent: bulk).
    pub bytes: Option<u64>,
    /// Response size.
    pub response_bytes: u64,
    /// Bytes delivered to the receiving applications.
    pub delivered_bytes: u64,
    /// Goodput over the flow's active time, bits per second.
    pub goodput_bps: f64,
    /// Goodput over the second half of the flow's active time, bits per second.
    pub goodput_last_half_bps: f64,
    /// Flow completion time, microseconds (sized flows that completed; a repeating flow: the sum
    /// of its transfers').
    pub fct_us: Option<f64>,
    /// Handshake completion, microseconds after the start of the run (a repeating flow: its
    /// last connection's).
    pub connected_us: Option<f64>,
    /// A repeating flow's completed transfers, in order, each over its own connection or all
    /// over one (`repeat_over`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<TransferReport>,
    /// Extra paths established, with the time (us).
    pub paths_established: Vec<(u64, f64)>,
    /// Paths abandoned.
    pub paths_abandoned: u64,
    /// The client's paths, as the library reports a connection's paths.
    pub path_stats: Vec<PathReport>,
    /// Per path of `path_stats`, the link that delivers to its remote address (`b->dst`).
    pub path_links: Vec<Option<String>>,
    /// mpquic-cc controllers (through the mpquic adapter): the client's, and the server's if it
    /// sends a response. Empty for the stack's own controllers.
    pub controllers: Vec<ControllerReport>,
    /// Controller notices per kind, both ends.
    pub notice_counts: BTreeMap<&'static str, u64>,
    /// Controller episodes (SSR suppress/release, ESE eliminations, slow-start exits, MMPTCP
    /// phase switches), both ends, in time order. Alpha updates and window reductions are in
    /// `traces.json`.
    pub episodes: Vec<NoticeRecord>,
    /// Per-round notices (alpha updates, window reductions) beyond `output.notice_limit`, not
    /// kept in `traces.json`.
    pub round_notices_dropped: u64,
    /// Probe timeouts (PTO expiries) of the client's connection, all paths.
    pub pto_client: u64,
    /// Probe timeouts of the server's connection.
    pub pto_server: u64,
    /// Virtual time of the first PTO expiry of either end, microseconds.
    pub first_pto_us: Option<f64>,
    /// Whether the client's / the server's ACK_FREQUENCY request never reached its peer (see
    /// [`Sim::ack_frequency_lost`]).
    pub ack_frequency_lost: (bool, bool),
    /// Connection error, if any.
    pub error: Option<String>,
    /// The job (partition/aggregate) or round (incast) the flow belongs to; for the experiment
    /// metrics, not written (the name says it).
    #[serde(skip)]
    pub job: Option<usize>,
}

impl FlowReport {
    /// AMP's suppression episodes, both ends.
    pub fn suppressions(&self) -> u64 {
        self.notice_counts.get(Notice::SUPPRESSED).copied().unwrap_or(0)
    }
}

/// One transfer of a repeating flow.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TransferReport {
    /// When it began (the first at the flow's start, each next one when the client knew the
    /// previous one was over and opened its connection, or its stream on the one connection),
    /// microseconds.
    pub start_us: f64,
    /// Its connection's handshake completion (on one connection, the first transfer's),
    /// microseconds.
    pub connected_us: Option<f64>,
    /// Its completion time, from its start (a next transfer's handshake included) until the
    /// receiving application had everything, microseconds.
    pub fct_us: f64,
}

impl TransferReport {
    fn of(t: &Transfer) -> TransferReport {
        TransferReport {
            start_us: us(t.start),
            connected_us: t.connected.map(us),
            fct_us: us(t.fct()),
        }
    }
}

/// FCT statistics of a group of sized flows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupReport {
    /// Group name.
    pub group: String,
    /// Flows in the group.
    pub flows: usize,
    /// Flows that completed.
    pub completed: usize,
    /// FCT in microseconds.
    pub fct_us: Option<Percentiles>,
    /// Job completion times in microseconds (jobs = rounds of incast, partition/aggregate jobs):
    /// the last flow of the job minus the job's first start.
    pub jct_us: Option<Percentiles>,
}

impl From<&Percentiles> for QueueOutcome {
    fn from(p: &Percentiles) -> Self {
        QueueOutcome {
            p50: p.p50 as f64,
            p90: p.p90 as f64,
            p99: p.p99 as f64,
            mean: p.mean,
            p5: p.p5 as f64,
            p95: p.p95 as f64,
        }
    }
}

/// One link's counters.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkReport {
    /// `from->to`.
    pub name: String,
    /// Rate, bits per second.
    pub rate_bps: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Wire bytes sent (IP and UDP headers included).
    pub sent_bytes: u64,
    /// Utilization over the run.
    pub utilization: f64,
    /// CE marks.
    pub marked: u64,
    /// Tail drops.
    pub dropped_overflow: u64,
    /// Random losses.
    pub dropped_random: u64,
    /// Queue length in packets from periodic samples (monitored links only).
    pub queue: Option<Percentiles>,
    /// A dual queue's L and classic sojourns and its AQM's drops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dualq: Option<DualqReport>,
}

/// What a dual-queue link ([`crate::dualq`]) measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DualqReport {
    /// Sojourn of every packet served from the L queue, microseconds.
    pub l_sojourn_us: Percentiles,
    /// Sojourn of every packet served from the classic queue, microseconds.
    pub c_sojourn_us: Percentiles,
    /// Not-ECT classic packets the AQM dropped.
    pub aqm_dropped: u64,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// The scenario as it ran (all defaults filled in).
    pub scenario: Scenario,
    /// Virtual time the run covered, seconds.
    pub simulated_s: f64,
    /// Flows.
    pub flows: Vec<FlowReport>,
    /// Per-group FCT statistics.
    pub groups: Vec<GroupReport>,
    /// Jain's fairness index over the bulk flows' last-half goodput.
    pub jain_bulk: Option<f64>,
    /// Links that carried traffic.
    pub links: Vec<LinkReport>,
    /// Events processed.
    pub events: u64,
    /// Datagrams sent by endpoints.
    pub datagrams: u64,
    /// Datagrams without route or endpoint.
    pub undeliverable: u64,
    /// Burst sources: what each sent, and what of it arrived.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bursts: Vec<BurstOutcome>,
}

/// One sample of a path's congestion state.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WindowPoint {
    /// Time, microseconds.
    pub t_us: f64,
    /// Congestion window, bytes (the controller's own, not the scheduler-gated one).
    pub window: u64,
    /// Smoothed RTT, microseconds.
    pub rtt_us: f64,
    /// DCTCP / DCM alpha.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Whether the path may carry new data (false while suppressed or eliminated).
    pub active: bool,
}

/// Per path of one flow: samples.
pub type PathTraces = BTreeMap<u64, Vec<WindowPoint>>;

/// Per group: flows, FCT histogram, and per job (first start, last completion, all complete).
type GroupAcc = (usize, Histogram<u64>, BTreeMap<usize, (Ps, Ps, bool)>);

/// Time series for plots and traces, kept apart from the summary.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Traces {
    /// Per flow, per path: window, RTT, alpha, active.
    pub windows: BTreeMap<String, PathTraces>,
    /// Per flow: per-round controller notices (alpha updates, window reductions), both ends.
    pub notices: BTreeMap<String, Vec<NoticeRecord>>,
    /// Per flow: goodput per bucket (time us at bucket start, bits per second).
    pub goodput: BTreeMap<String, Vec<(f64, f64)>>,
    /// Per monitored link: (time us, queue packets).
    pub queues: BTreeMap<String, Vec<(f64, u32)>>,
}

/// Wall-clock performance of a run (not part of the deterministic report).
#[derive(Debug, Clone, Serialize)]
pub struct Perf {
    /// Virtual seconds simulated.
    pub simulated_s: f64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Simulated seconds per wall second.
    pub speed: f64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// CPU seconds the simulating thread used (what a shared machine's load does not inflate
    /// as much as wall time), if the platform reports it.
    pub cpu_s: Option<f64>,
    /// Simulated seconds per CPU second.
    pub speed_per_cpu_s: Option<f64>,
}

/// CPU time of the calling thread so far.
pub fn thread_cpu_time() -> Option<Duration> {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

fn us(ps: Ps) -> f64 {
    ps as f64 / 1e6
}

pub use mpquic_stats::jain;

/// Active interval of a flow, picoseconds.
fn active(flow: &Flow, end: Ps) -> (Ps, Ps) {
    let start = flow.spec.start.0;
    let stop = match flow.spec.bytes {
        None => flow.spec.stop.map_or(end, |s| s.0.min(end)),
        Some(_) => flow.fct().map_or(end, |f| start + f),
    };
    (start, stop.max(start))
}

/// A flow's goodput (bits per second) over `[from, to)`, from its delivery buckets of width
/// `bucket` (whole buckets inside the interval; the flow's average if none fits).
pub fn goodput_between(flow: &Flow, bucket: Ps, from: Ps, to: Ps) -> f64 {
    if to <= from {
        return 0.0;
    }
    // Whole buckets inside [from, to).
    let first = from.div_ceil(bucket) as usize;
    let last = (to / bucket) as usize;
    if last <= first {
        let total: u64 = flow.progress.delivered.iter().sum();
        return total as f64 * 8.0 / ((to - from) as f64 / 1e12);
    }
    let bytes: u64 = flow.progress.delivered.iter().skip(first).take(last - first).sum();
    bytes as f64 * 8.0 / ((last - first) as f64 * bucket as f64 / 1e12)
}

impl Report {
    /// The run in the schema the experiment metrics read (shared with the testbed).
    pub fn outcome(&self) -> Outcome {
        let flows = self
            .flows
            .iter()
            .map(|f| FlowOutcome {
                name: f.name.clone(),
                group: f.group.clone(),
                fct_us: f.fct_us,
                goodput_bps: f.goodput_bps,
                goodput_last_half_bps: f.goodput_last_half_bps,
                pto_client: f.pto_client,
                pto_server: f.pto_server,
                suppressions: f.suppressions(),
                ack_request_lost: f.ack_frequency_lost.0,
                server_ack_request_lost: f.ack_frequency_lost.1,
                start_s: f.start_s,
                job: f.job,
                kind: "mpquic".into(),
                bytes: f.delivered_bytes,
                lost_packets: f.path_stats.iter().map(|p| p.lost_packets).sum(),
                cpu_s: None,
                eliminations: f.controllers.iter().map(|c| c.snapshot.eliminations).sum(),
                transfer_fcts_us: f.transfers.iter().map(|t| t.fct_us).collect(),
                paths: f
                    .path_stats
                    .iter()
                    .zip(&f.path_links)
                    .map(|(p, link)| path_outcome(p, link.clone()))
                    .collect(),
            })
            .collect();
        let links = self
            .links
            .iter()
            .map(|l| LinkOutcome {
                name: l.name.clone(),
                marked: l.marked,
                dropped: l.dropped_overflow,
                utilization: l.utilization,
                queue: l.queue.as_ref().map(QueueOutcome::from),
                sent_bytes: l.sent_bytes,
                rate_bps: l.rate_bps as f64,
                sent_packets: l.sent_packets,
                l_sojourn_us: l.dualq.as_ref().map(|d| QueueOutcome::from(&d.l_sojourn_us)),
                c_sojourn_us: l.dualq.as_ref().map(|d| QueueOutcome::from(&d.c_sojourn_us)),
            })
            .collect();
        let mtu = f64::from(self.scenario.transport.mtu);
        Outcome {
            flows,
            links,
            duration_s: self.simulated_s,
            // Links carry IP + UDP; ~35 bytes of a packet are QUIC's (short header, STREAM
            // frame header, AEAD tag).
            payload_ceiling: Some((mtu - QUIC_OVERHEAD) / (mtu + WIRE_OVERHEAD as f64)),
            bursts: self.bursts.clone(),
            ..Outcome::default()
        }
    }

    /// The run as both backends record one ([`crate::record::of`]).
    pub fn record(&self, sim: &Sim) -> RunRecord {
        crate::record::of(self, sim)
    }

    /// Summarize a finished run.
    pub fn new(sim: &mut Sim) -> Report {
        let end = sim.end_time();
        let bucket = sim.scenario.output.goodput_interval.0.max(1);
        let (flows, last_halves): (Vec<FlowReport>, Vec<f64>) =
            (0..sim.flows.len()).map(|f| flow_report(sim, f, end, bucket)).unzip();
        // Jain's index over the bulk flows' last halves (before rounding).
        let last_half_bulk: Vec<f64> = flows
            .iter()
            .zip(last_halves)
            .filter(|(f, _)| f.bytes.is_none())
            .map(|(_, last_half)| last_half)
            .collect();
        let groups = group_reports(sim);
        let links = link_reports(sim, end);
        Report {
            scenario: sim.scenario.clone(),
            simulated_s: end as f64 / 1e12,
            flows,
            groups,
            jain_bulk: jain(&last_half_bulk).map(|j| (j * 1e6).round() / 1e6),
            links,
            events: sim.counters.events,
            datagrams: sim.counters.datagrams,
            undeliverable: sim.counters.undeliverable,
            bursts: sim.bursts.iter().map(|b| b.outcome(end)).collect(),
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialize")
    }

    /// A flow by name.
    pub fn flow(&self, name: &str) -> Option<&FlowReport> {
        self.flows.iter().find(|f| f.name == name)
    }

    /// A link by name (`from->to`).
    pub fn link(&self, name: &str) -> Option<&LinkReport> {
        self.links.iter().find(|l| l.name == name)
    }
}

/// `bytes` over `time` in bits per second (0 over no time).
fn bps(bytes: u64, time: Ps) -> f64 {
    if time > 0 {
        bytes as f64 * 8.0 / (time as f64 / 1e12)
    } else {
        0.0
    }
}

/// Flow `f`'s results at the end `end` of the run, its goodput buckets `bucket` wide, and its
/// goodput over the second half unrounded.
fn flow_report(sim: &mut Sim, f: usize, end: Ps, bucket: Ps) -> (FlowReport, f64) {
    let path_stats = sim.client_path_stats(f);
    let path_links =
        path_stats.iter().map(|p| sim.link_into(p.remote?.ip()).map(String::from)).collect();
    let (pto_client, pto_server, pto_times) = sim.flow_ptos(f);
    let ack_frequency_lost = sim.ack_frequency_lost(f);
    let controllers = sim
        .controllers(f)
        .into_iter()
        .map(|(side, snapshot, inactive)| ControllerReport {
            side,
            snapshot,
            inactive_us: inactive.iter().map(|d| d.as_nanos() as f64 / 1000.0).collect(),
        })
        .collect();
    let flow = &sim.flows[f];
    let log = flow.notices.lock().unwrap_or_else(|p| p.into_inner());
    let notice_counts = log.counts.clone();
    let episodes = log.episodes.iter().map(NoticeRecord::of).collect();
    let round_notices_dropped = log.rounds_dropped;
    drop(log);
    let delivered: u64 = flow.progress.delivered.iter().sum();
    let repeating = flow.spec.repeat > 1;
    let (goodput, last_half) = if repeating {
        // Over the time spent transferring (the gaps between transfers left out), for
        // both halves: what the testbed makes of the CLI's per-transfer reports.
        let goodput = bps(delivered, flow.busy(end));
        (goodput, goodput)
    } else {
        let (start, stop) = active(flow, end);
        let mid = start + (stop - start) / 2;
        (bps(delivered, stop - start), goodput_between(flow, bucket, mid, stop))
    };
    let report = FlowReport {
        name: flow.name.clone(),
        group: flow.spec.group.clone(),
        from: flow.spec.from.clone(),
        to: flow.spec.to.clone(),
        controller: flow.controller.clone(),
        paths: flow.spec.paths,
        start_s: flow.spec.start.secs(),
        job: flow.spec.job,
        bytes: flow.spec.bytes,
        response_bytes: flow.spec.response_bytes,
        delivered_bytes: delivered,
        goodput_bps: goodput.round(),
        goodput_last_half_bps: last_half.round(),
        fct_us: flow.fct().map(us),
        connected_us: flow.progress.connected_at.map(us),
        transfers: if repeating {
            flow.progress.transfers.iter().map(TransferReport::of).collect()
        } else {
            vec![]
        },
        paths_established: flow
            .progress
            .paths_established
            .iter()
            .map(|&(p, t)| (p, us(t)))
            .collect(),
        paths_abandoned: flow.progress.paths_abandoned,
        path_stats,
        path_links,
        controllers,
        notice_counts,
        episodes,
        round_notices_dropped,
        pto_client,
        pto_server,
        first_pto_us: pto_times.iter().min().map(|&t| us(t)),
        ack_frequency_lost,
        error: flow.progress.error.clone(),
    };
    (report, last_half)
}

/// Per group of sized flows: how many completed, their FCT percentiles and their jobs' JCTs.
fn group_reports(sim: &Sim) -> Vec<GroupReport> {
    let mut groups: BTreeMap<String, GroupAcc> = BTreeMap::new();
    for flow in &sim.flows {
        let (Some(group), Some(_)) = (&flow.spec.group, flow.spec.bytes) else { continue };
        let entry = groups
            .entry(group.clone())
            .or_insert_with(|| (0, Histogram::new(3).expect("valid histogram"), BTreeMap::new()));
        entry.0 += 1;
        let fct = flow.fct();
        if let Some(fct) = fct {
            entry.1.record((fct / 1_000_000).max(1)).expect("auto-resizing histogram");
        }
        if let Some(job) = flow.spec.job {
            let e = entry.2.entry(job).or_insert((Ps::MAX, 0, true));
            e.0 = e.0.min(flow.spec.start.0);
            match fct {
                Some(fct) => e.1 = e.1.max(flow.spec.start.0 + fct),
                None => e.2 = false,
            }
        }
    }
    groups
        .into_iter()
        .map(|(group, (n, h, jobs))| {
            let mut jh = Histogram::<u64>::new(3).expect("valid histogram");
            for (start, done, complete) in jobs.values() {
                if *complete {
                    jh.record(((done - start) / 1_000_000).max(1)).expect("auto-resizing");
                }
            }
            GroupReport {
                group,
                flows: n,
                completed: h.len() as usize,
                fct_us: (!h.is_empty()).then(|| Percentiles::of(&h)),
                jct_us: (!jh.is_empty()).then(|| Percentiles::of(&jh)),
            }
        })
        .collect()
}

/// The links that carried packets or are monitored, at the end `end` of the run.
fn link_reports(sim: &Sim, end: Ps) -> Vec<LinkReport> {
    sim.links
        .iter()
        .filter(|l| l.stats.sent_packets > 0 || l.params.monitor)
        .map(|l| LinkReport {
            name: l.params.name.clone(),
            rate_bps: l.params.rate_bps,
            sent_packets: l.stats.sent_packets,
            sent_bytes: l.stats.sent_bytes,
            utilization: round3(
                l.stats.sent_bytes as f64 * 8.0 / (l.params.rate_bps as f64 * end as f64 / 1e12),
            ),
            marked: l.stats.marked,
            dropped_overflow: l.stats.dropped_overflow,
            dropped_random: l.stats.dropped_random,
            queue: (l.params.monitor && !l.stats.queue_hist.is_empty())
                .then(|| Percentiles::of(&l.stats.queue_hist)),
            dualq: l.dual.as_ref().map(|d| DualqReport {
                l_sojourn_us: Percentiles::of(&d.l_sojourn_us),
                c_sojourn_us: Percentiles::of(&d.c_sojourn_us),
                aqm_dropped: d.dropped,
            }),
        })
        .collect()
}

impl Traces {
    /// Collect the time series of a finished run.
    pub fn new(sim: &Sim) -> Traces {
        let bucket = sim.scenario.output.goodput_interval.0.max(1);
        let mut windows = BTreeMap::new();
        let mut goodput = BTreeMap::new();
        let mut notices = BTreeMap::new();
        for flow in &sim.flows {
            let log = flow.notices.lock().unwrap_or_else(|p| p.into_inner());
            if !log.rounds.is_empty() {
                notices
                    .insert(flow.name.clone(), log.rounds.iter().map(NoticeRecord::of).collect());
            }
            drop(log);
            if !flow.progress.traces.is_empty() {
                let per_path = flow
                    .progress
                    .traces
                    .iter()
                    .map(|(&p, v)| {
                        let points = v
                            .iter()
                            .map(|t| WindowPoint {
                                t_us: us(t.at),
                                window: t.window,
                                rtt_us: t.rtt_ns as f64 / 1000.0,
                                alpha: t.alpha,
                                active: t.active,
                            })
                            .collect();
                        (p, points)
                    })
                    .collect();
                windows.insert(flow.name.clone(), per_path);
            }
            let series = flow
                .progress
                .delivered
                .iter()
                .enumerate()
                .map(|(i, &b)| (us(i as Ps * bucket), b as f64 * 8.0 / (bucket as f64 / 1e12)))
                .collect();
            goodput.insert(flow.name.clone(), series);
        }
        let queues = sim
            .links
            .iter()
            .filter(|l| l.params.monitor)
            .map(|l| {
                (
                    l.params.name.clone(),
                    l.stats.queue_series.iter().map(|&(t, q)| (us(t), q)).collect(),
                )
            })
            .collect();
        Traces { windows, notices, goodput, queues }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared outcome reads the library's path report by its serialized names (the
    /// language does not depend on the library): every field it takes arrives, so a renamed
    /// field in the library fails here rather than reading as none.
    #[test]
    fn a_path_outcome_takes_every_field_it_reads_from_the_library_report() {
        let report = PathReport {
            id: 1,
            local: None,
            remote: Some("10.0.2.2:4433".parse().unwrap()),
            open: true,
            status: noq_proto::PathStatus::Available,
            close_reason: Some(mpquic::PathClose::Eliminated),
            bytes_sent: 3000,
            bytes_received: 100,
            share: 0.5,
            share_received: 0.1,
            packets_sent: 3,
            lost_packets: 1,
            rtt_smoothed_ms: 0.6,
            rtt_min_ms: Some(0.2),
            rtt_p50_ms: Some(0.5),
            rtt_p99_ms: Some(0.9),
            cwnd: 14_000,
            ce_events: None,
            ce_marked: None,
            ce_exact: true,
            ect_packets: None,
            active: true,
            inactive_ms: 0.0,
            opened_ms: None,
        };
        let p = path_outcome(&report, Some("b->dst".into()));
        assert_eq!((p.remote.as_str(), p.link.as_deref()), ("10.0.2.2:4433", Some("b->dst")));
        assert_eq!((p.bytes_sent, p.packets_sent, p.lost_packets), (3000, 3, 1));
        assert_eq!((p.rtt_min_ms, p.rtt_p50_ms, p.rtt_p99_ms), (Some(0.2), Some(0.5), Some(0.9)));
        assert!(p.active);
        assert_eq!(
            (p.close_reason, p.cwnd_bytes),
            (Some(mpquic::PathClose::Eliminated), Some(14_000))
        );
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }
}
