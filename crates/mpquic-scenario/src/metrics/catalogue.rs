//! The metrics a report may name: each one entry with its name, its meaning and its
//! computation over one run, so that no name can be listed without being computed. A metric
//! that needs what only one backend measures says so ([`Source`]); it is NaN (`-` in the
//! tables) on the other.

use std::collections::BTreeMap;

use mpquic_choice::PathClose;

use super::{
    BurstOutcome, DelayLineSecond, FlowOutcome, LinkOutcome, Outcome, PathOutcome, QueueOutcome,
};

/// One metric of the catalogue.
pub struct Metric {
    /// Its name in `[report] metrics`.
    pub name: &'static str,
    /// What it means (`experiment.json`'s definitions).
    pub meaning: &'static str,
    /// Which backends measure what it needs.
    pub source: Source,
    /// Its value on one run (NaN where there is nothing to compute over).
    pub compute: fn(&Input) -> f64,
}

/// Which backends measure what a metric needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Both backends.
    Both,
    /// Only the netns testbed, for the reason given: the simulator's value is NaN.
    Netns(&'static str),
    /// Only the simulator, for the reason given: the testbed's value is NaN.
    Sim(&'static str),
}

/// The host a run measures: the simulator's host is no part of the run.
const HOST: &str = "the host's load and CPU steal: the simulator runs in virtual time";
/// Processes' CPU time.
const CPU: &str = "CPU time of sending and receiving processes: the simulator has none";
/// A dual queue's sojourns.
/// The testbed's own delay line.
const DELAY_LINE: &str = "the testbed's delay line: the simulator's links delay exactly";
/// Burst sources.
const BURSTS: &str = "burst sources: the testbed has no rate-paced unresponsive sender";

/// What a metric reads of one run.
pub struct Input<'a> {
    /// The run.
    pub run: &'a Outcome,
    /// The flows it is over (the report's group, or the metric's `@group`).
    pub flows: Vec<&'a FlowOutcome>,
    /// The report's link (or the metric's `@from->to`), if the run has it.
    pub link: Option<&'a LinkOutcome>,
    /// Incast rounds of the scenario, at least 1: the `_per_round` divisor.
    pub rounds: f64,
    /// The scenario's MTU, bytes.
    pub mtu: u16,
    /// A path metric's `[link]`: only the paths that cross that link direction last.
    pub selector: Option<&'a str>,
}

/// Delay-line seconds with fewer packets than this are idle (keep-alives between transfers):
/// their lateness says little about the line under load.
const DELAY_BUSY_PKT_PER_S: f64 = 100.0;

/// Paths that carried enough data for their RTT to describe the flow (E5: > 100 kB sent).
const RTT_PATH_MIN_BYTES: u64 = 100_000;

/// The metrics a report may name (a metric may add `@group` to use other flows than the
/// report's group; `A / B`, spaces around the slash, is the ratio of two, and B may be a
/// number; a `path_` metric may add `[link]` to use only the paths that cross that link
/// direction last, `path_share[b->dst]`).
pub const CATALOGUE: &[Metric] = &[
    both("flows", "flows of the group", |i| i.flows.len() as f64),
    both("unfinished", "flows not complete at the end of the run",
        |i| (i.flows.len() - ms(&i.flows).len()) as f64),
    both("fct_mean_ms", "mean completion time of the completed transfers (each of a repeating \
        flow, else each completed flow), ms", |i| mean(&i.fcts())),
    both("fct_std_ms", "population standard deviation of those, ms",
        |i| mpquic_stats::mean_std(&i.fcts()).map_or(f64::NAN, |m| m.1)),
    both("fct_p50_ms", "median completion time (nearest rank), ms", |i| quantile(&i.fcts(), 0.5)),
    both("fct_p90_ms", "90th percentile completion time, ms", |i| quantile(&i.fcts(), 0.9)),
    both("fct_p99_ms", "99th percentile completion time, ms", |i| quantile(&i.fcts(), 0.99)),
    both("fct_max_ms", "longest completion time, ms", |i| quantile(&i.fcts(), 1.0)),
    both("fct_mean_ms_ack_heard", "mean FCT of the flows whose ACK_FREQUENCY request arrived, ms",
        |i| mean(&ms(&i.heard()))),
    both("fct_max_ms_ack_heard", "longest FCT of those, ms", |i| quantile(&ms(&i.heard()), 1.0)),
    both("pto", "probe-timeout expiries of both ends of every flow",
        |i| i.sum(|f| f.pto_client + f.pto_server)),
    both("pto_per_round", "pto / incast rounds",
        |i| i.sum(|f| f.pto_client + f.pto_server) / i.rounds),
    both("flows_with_pto_per_round", "flows whose client had a PTO / incast rounds",
        |i| i.count(|f| f.pto_client > 0) / i.rounds),
    both("suppressions", "suppression episodes (AMP SSR)", |i| i.sum(|f| f.suppressions)),
    both("suppressions_per_round", "suppressions / incast rounds",
        |i| i.sum(|f| f.suppressions) / i.rounds),
    both("ack_request_lost_per_round", "flows whose ACK_FREQUENCY request was lost / rounds",
        |i| i.count(|f| f.ack_request_lost) / i.rounds),
    both("flows_over_10ms_per_round", "flows unfinished or over 10 ms / rounds",
        |i| i.count(slow) / i.rounds),
    both("over_10ms_with_ack_request_lost_per_round", "of those, with the request lost / rounds",
        |i| i.count(|f| slow(f) && f.ack_request_lost) / i.rounds),
    both("goodput_mean_gbps", "mean goodput of the flows over their lifetime, Gbit/s",
        |i| mean(&i.of(|f| f.goodput_bps / 1e9))),
    both("goodput_last_half_mean_gbps", "mean goodput over the run's second half, Gbit/s",
        |i| mean(&i.of(|f| f.goodput_last_half_bps / 1e9))),
    both("jain", "Jain's index of the flows' second-half goodput",
        |i| jain(&i.of(|f| f.goodput_last_half_bps))),
    both("jobs", "jobs (flows of one group with one job number; JCT = last answer - first start)",
        |i| i.jobs().all.len() as f64),
    both("jobs_unfinished", "jobs with a flow not complete at the end of the run",
        |i| i.jobs().unfinished as f64),
    both("jct_mean_ms", "mean job completion time of the completed jobs, ms",
        |i| mean(&i.jobs().complete)),
    both("jct_p50_ms", "median JCT, ms", |i| quantile(&i.jobs().complete, 0.5)),
    both("jct_p90_ms", "90th percentile JCT, ms", |i| quantile(&i.jobs().complete, 0.9)),
    both("jct_p99_ms", "99th percentile JCT, ms", |i| quantile(&i.jobs().complete, 0.99)),
    both("jct_all_p90_ms", "90th percentile JCT, unfinished jobs counted until the end (a bound)",
        |i| quantile(&i.jobs().all, 0.9)),
    both("jct_all_p99_ms", "99th percentile of the same, ms", |i| quantile(&i.jobs().all, 0.99)),
    both("jobs_over_10ms", "jobs, finished or not, over 10 ms", |i| i.jobs_over(10.0)),
    both("jobs_over_300ms", "jobs, finished or not, over 300 ms (XMP Table 3's share of them)",
        |i| i.jobs_over(300.0)),
    both("jobs_ack_heard", "completed jobs where no flow lost an ACK_FREQUENCY request",
        |i| i.jobs().heard.len() as f64),
    both("jct_p90_ms_ack_heard", "90th percentile JCT of those, ms",
        |i| quantile(&i.jobs().heard, 0.9)),
    both("jct_p99_ms_ack_heard", "99th percentile JCT of those, ms",
        |i| quantile(&i.jobs().heard, 0.99)),
    both("ack_request_lost", "flows where either end's ACK_FREQUENCY request was lost",
        |i| i.count(|f| f.ack_request_lost || f.server_ack_request_lost)),
    both("queue_p90_max", "the largest 90th percentile queue over every monitored link, packets",
        |i| quantile(&i.queues(|q| q.p90), 1.0)),
    both("drops", "drops at the report's link", |i| i.on_link(|l| l.dropped as f64)),
    both("drops_per_round", "drops / incast rounds",
        |i| i.on_link(|l| l.dropped as f64) / i.rounds),
    both("marks", "CE marks at the report's link", |i| i.on_link(|l| l.marked as f64)),
    both("marks_per_round", "marks / incast rounds", |i| i.on_link(|l| l.marked as f64) / i.rounds),
    both("utilization", "busy fraction of the report's link", |i| i.on_link(|l| l.utilization)),
    both("queue_p50", "median queue of the report's link, packets", |i| i.queue(|q| q.p50)),
    both("queue_p90", "90th percentile queue, packets", |i| i.queue(|q| q.p90)),
    both("queue_p99", "99th percentile queue, packets", |i| i.queue(|q| q.p99)),
    both("queue_mean", "mean queue, packets", |i| i.queue(|q| q.mean)),
    // The simulator's sojourns are per packet; the testbed's are each queue's head sojourn, sampled
    // every millisecond and weighted by the packets dequeued since (testbeds/src/marker.rs).
    both("l_sojourn_p50_us", "median sojourn in the report's link's L queue (aqm = \"dualq\"), us",
        |i| i.sojourn(|l| &l.l_sojourn_us, |q| q.p50)),
    both("l_sojourn_p99_us", "99th percentile sojourn in the L queue, us",
        |i| i.sojourn(|l| &l.l_sojourn_us, |q| q.p99)),
    both("c_sojourn_p50_us", "median sojourn in the report's link's classic queue (aqm = \"dualq\"), \
        us", |i| i.sojourn(|l| &l.c_sojourn_us, |q| q.p50)),
    both("c_sojourn_p99_us", "99th percentile sojourn in the classic queue, us",
        |i| i.sojourn(|l| &l.c_sojourn_us, |q| q.p99)),
    both("lost", "packets the flows' senders declared lost", |i| i.sum(|f| f.lost_packets)),
    both("drops_all", "drops summed over every monitored link",
        |i| i.monitored().map(|l| l.dropped).sum::<u64>() as f64),
    both("marks_all", "CE marks summed over every monitored link",
        |i| i.monitored().map(|l| l.marked).sum::<u64>() as f64),
    both("rcvbuf_drops", "datagrams the receivers' UDP sockets dropped (Udp.RcvbufErrors)",
        |i| i.run.receiver_rcvbuf_errors as f64),
    netns("host_load", "the host's 1-min load average at the run's start", HOST,
        |i| i.run.host_load_1min.unwrap_or(f64::NAN)),
    netns("host_steal", "CPU time the hypervisor took from the host during the run (steal), % of \
        all of it", HOST,
        |i| i.run.host_steal_pct.unwrap_or(f64::NAN)),
    both("goodput_sum_mbps", "sum of the flows' goodput, Mbit/s",
        |i| i.flows.iter().map(|f| f.goodput_bps / 1e6).sum()),
    both("goodput_mean_mbps", "mean goodput of the flows, Mbit/s",
        |i| mean(&i.of(|f| f.goodput_bps / 1e6))),
    // The distribution of the flows' lifetime goodputs (XMP Fig. 8's bars), per unit.
    both("goodput_p10_gbps", "10th percentile (nearest rank) of the flows' lifetime goodputs, \
        Gbit/s", |i| goodput_quantile(i, 0.1, 1e9)),
    both("goodput_p50_gbps", "median (nearest rank) of those, Gbit/s",
        |i| goodput_quantile(i, 0.5, 1e9)),
    both("goodput_p90_gbps", "90th percentile of those, Gbit/s", |i| goodput_quantile(i, 0.9, 1e9)),
    both("goodput_min_gbps", "smallest of those, Gbit/s", |i| goodput_quantile(i, 0.0, 1e9)),
    both("goodput_max_gbps", "largest of those, Gbit/s", |i| goodput_quantile(i, 1.0, 1e9)),
    both("goodput_p10_mbps", "goodput_p10_gbps in Mbit/s", |i| goodput_quantile(i, 0.1, 1e6)),
    both("goodput_p50_mbps", "goodput_p50_gbps in Mbit/s", |i| goodput_quantile(i, 0.5, 1e6)),
    both("goodput_p90_mbps", "goodput_p90_gbps in Mbit/s", |i| goodput_quantile(i, 0.9, 1e6)),
    both("goodput_min_mbps", "goodput_min_gbps in Mbit/s", |i| goodput_quantile(i, 0.0, 1e6)),
    both("goodput_max_mbps", "goodput_max_gbps in Mbit/s", |i| goodput_quantile(i, 1.0, 1e6)),
    both("queue_p5", "5th percentile queue of the report's link, packets", |i| i.queue(|q| q.p5)),
    both("queue_p95", "95th percentile queue, packets", |i| i.queue(|q| q.p95)),
    both("queue_p50_mean", "the links' median queues averaged over every monitored link, packets",
        |i| mean(&i.queues(|q| q.p50))),
    both("queue_p99_max", "the largest 99th percentile queue over every monitored link, packets",
        |i| quantile(&i.queues(|q| q.p99), 1.0)),
    netns("cpu_s_per_gb", "CPU s of the flows' senders and all receivers per GB the flows carried", CPU,
        cpu_s_per_gb),
    both("fct_over_200ms", "completed transfers slower than 200 ms (the papers' minimum RTO)",
        |i| i.fcts().iter().filter(|&&x| x > 200.0).count() as f64),
    both("jain_goodput", "Jain's index of the flows' goodput over their lifetime (bytes / FCT)",
        |i| jain(&i.of(|f| f.goodput_bps))),
    both("rtt_p50_ms", "median RTT of the flows' paths that sent > 100 kB: the median (nearest rank, the lower middle of an even count) of those paths' median RTT samples, ms",
        |i| quantile(&i.rtts(|p| p.rtt_p50_ms), 0.5)),
    both("rtt_min_ms", "smallest RTT sample of those paths, ms",
        |i| quantile(&i.rtts(|p| p.rtt_min_ms), 0.0)),
    both("eliminations", "paths the flows' controllers eliminated (MPTCP-D's ESE)",
        |i| i.sum(|f| f.eliminations)),
    both("flows_with_elimination", "flows whose controller eliminated a path",
        |i| i.count(|f| f.eliminations > 0)),
    both("ese_extra", "extra paths: per link (paths grouped by server address) all but one",
        |i| i.ese().extra as f64),
    both("ese_keep", "paths that should stay: one per link", |i| i.ese().keep as f64),
    both("ese_tp", "true positives: eliminated paths of a link, up to its extra paths",
        |i| i.ese().tp as f64),
    both("ese_fp", "false positives: eliminated paths of a link beyond its extra ones (its last path)",
        |i| i.ese().fp as f64),
    both("active_paths", "paths carrying data at the end (a repeating flow: its last transfer's)",
        |i| i.flows.iter().map(|f| f.paths.iter().filter(|p| p.active).count()).sum::<usize>() as f64),
    both("transfers", "transfers completed (each of a repeating flow; else each completed flow)",
        |i| i.fcts().len() as f64),
    both("transfer_fct_p50_ms", "the same as fct_p50_ms (the name E5's tables use), ms",
        |i| quantile(&i.fcts(), 0.5)),
    both("transfer_fct_p99_ms", "the same as fct_p99_ms (the name E5's tables use), ms",
        |i| quantile(&i.fcts(), 0.99)),
    netns("sender_cpu_ms_per_transfer", "CPU ms of the flows' senders per completed transfer", CPU,
        sender_cpu_ms_per_transfer),
    both("cwnd_pkts_mean", "the flows' paths' congestion windows at the end, mean, packets of the mtu",
        cwnd_pkts_mean),
    both("path_share", "bytes the flows sent on the selected paths over their bytes on all paths",
        |i| i.path_bytes(true) / i.path_bytes(false)),
    both("path_mb", "MB (10^6 bytes, QUIC packets) the flows sent on the selected paths",
        |i| i.path_bytes(true) / 1e6),
    both("path_rtt_p50_ms", "median over the selected paths of each path's median RTT sample, ms",
        |i| quantile(&i.selected_paths(|p| p.rtt_p50_ms), 0.5)),
    both("path_rtt_p99_ms", "median over the selected paths of each path's p99 RTT sample, ms",
        |i| quantile(&i.selected_paths(|p| p.rtt_p99_ms), 0.5)),
    netns("delay_pkt_per_s", "testbed delay line: median packet rate of its busy seconds (> 100 pkt/s)", DELAY_LINE,
        |i| quantile(&i.busy_seconds(|s| s.pkt_per_s), 0.5)),
    netns("delay_late_p99_us", "median over those seconds of their p99 release lateness, us", DELAY_LINE,
        |i| quantile(&i.busy_seconds(|s| s.late_p99_us), 0.5)),
    netns("delay_late_p99_worst_us", "the worst second's p99 release lateness, us", DELAY_LINE,
        |i| quantile(&i.busy_seconds(|s| s.late_p99_us), 1.0)),
    netns("delay_late_max_us", "median over the busy seconds of their latest release, us", DELAY_LINE,
        |i| quantile(&i.busy_seconds(|s| s.late_max_us), 0.5)),
    netns("delay_late_max_worst_us", "the latest release of any busy second, us", DELAY_LINE,
        |i| quantile(&i.busy_seconds(|s| s.late_max_us), 1.0)),
    both("ideal_ms", "the flows' bytes at the report link's rate x payload ceiling, ms", ideal_ms),
    both("goodput_of_ceiling", "second-half goodput sum over the monitored links' rates x ceiling",
        goodput_of_ceiling),
    both("marked_fraction", "marks over packets sent, summed over every monitored link",
        marked_fraction),
    both("loss_pct", "packets the flows' senders declared lost, % of the packets their paths sent",
        loss_pct),
    sim("burst_mbps", "burst sources: wire bytes delivered over the run's duration, mean over the \
        sources, Mbit/s", BURSTS,
        |i| mean(&i.bursts(|b| b.delivered_bytes as f64 * 8.0 / i.run.duration_s / 1e6))),
    sim("burst_duty", "burst sources: the fraction of the run they were on, mean over the sources",
        BURSTS, |i| mean(&i.bursts(|b| b.on_s / i.run.duration_s))),
    sim("burst_loss_pct", "burst sources: datagrams not delivered (dropped at full queues, or on \
        their way at the end), % of those sent, over every source", BURSTS, burst_loss_pct),
];

/// A metric both backends measure.
const fn both(name: &'static str, meaning: &'static str, compute: fn(&Input) -> f64) -> Metric {
    Metric { name, meaning, source: Source::Both, compute }
}

/// A metric only the netns testbed measures (`why` the simulator does not).
const fn netns(
    name: &'static str,
    meaning: &'static str,
    why: &'static str,
    compute: fn(&Input) -> f64,
) -> Metric {
    Metric { name, meaning, source: Source::Netns(why), compute }
}

/// A metric only the simulator measures (`why` the testbed does not).
const fn sim(
    name: &'static str,
    meaning: &'static str,
    why: &'static str,
    compute: fn(&Input) -> f64,
) -> Metric {
    Metric { name, meaning, source: Source::Sim(why), compute }
}

/// The catalogue's metric `name`.
pub fn find(name: &str) -> Option<&'static Metric> {
    CATALOGUE.iter().find(|m| m.name == name)
}

/// Unfinished or over 10 ms.
fn slow(f: &FlowOutcome) -> bool {
    f.fct_us.is_none_or(|x| x > 10_000.0)
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

fn jain(xs: &[f64]) -> f64 {
    mpquic_stats::jain(xs).unwrap_or(f64::NAN)
}

/// The jobs of the flows (flows of one group with one job number), as completion times, ms.
struct Jobs {
    /// Per job: its JCT if complete, else the time from its start to the end of the run.
    all: Vec<f64>,
    /// The completed jobs' JCTs.
    complete: Vec<f64>,
    /// The JCTs of the completed jobs where no flow lost an ACK_FREQUENCY request.
    heard: Vec<f64>,
    /// Jobs with a flow not complete.
    unfinished: usize,
}

/// A job: first start and last completion (ms), whether all its flows completed and whether
/// none lost an ACK_FREQUENCY request.
struct Job {
    start: f64,
    end: f64,
    complete: bool,
    heard: bool,
}

/// Extra-subflow elimination judged per link, summed over the flows (see [`Input::ese`]).
struct Ese {
    extra: u64,
    keep: u64,
    tp: u64,
    fp: u64,
}

impl Input<'_> {
    /// The flows whose ACK_FREQUENCY request arrived.
    fn heard(&self) -> Vec<&FlowOutcome> {
        self.flows.iter().copied().filter(|f| !f.ack_request_lost).collect()
    }

    fn count(&self, pred: impl Fn(&FlowOutcome) -> bool) -> f64 {
        self.flows.iter().filter(|f| pred(f)).count() as f64
    }

    fn sum(&self, x: impl Fn(&FlowOutcome) -> u64) -> f64 {
        self.flows.iter().map(|f| x(f)).sum::<u64>() as f64
    }

    /// A value per flow.
    fn of(&self, x: impl Fn(&FlowOutcome) -> f64) -> Vec<f64> {
        self.flows.iter().map(|f| x(f)).collect()
    }

    fn on_link(&self, x: impl Fn(&LinkOutcome) -> f64) -> f64 {
        self.link.map_or(f64::NAN, x)
    }

    fn queue(&self, x: impl Fn(&QueueOutcome) -> f64) -> f64 {
        self.link.and_then(|l| l.queue.as_ref()).map_or(f64::NAN, x)
    }

    /// A statistic of one of the report's link's dual-queue sojourns (NaN without one).
    fn sojourn(
        &self,
        queue: impl Fn(&LinkOutcome) -> &Option<QueueOutcome>,
        x: impl Fn(&QueueOutcome) -> f64,
    ) -> f64 {
        self.link.and_then(|l| queue(l).as_ref()).map_or(f64::NAN, x)
    }

    /// The monitored links: those with a sampled queue.
    fn monitored(&self) -> impl Iterator<Item = &LinkOutcome> {
        self.run.links.iter().filter(|l| l.queue.is_some())
    }

    /// A queue statistic of every monitored link.
    fn queues(&self, x: impl Fn(&QueueOutcome) -> f64) -> Vec<f64> {
        self.run.links.iter().filter_map(|l| l.queue.as_ref()).map(x).collect()
    }

    /// A value per burst source of the run.
    fn bursts(&self, x: impl Fn(&BurstOutcome) -> f64) -> Vec<f64> {
        self.run.bursts.iter().map(x).collect()
    }

    /// An RTT statistic of the flows' paths that sent more than [`RTT_PATH_MIN_BYTES`].
    fn rtts(&self, x: impl Fn(&PathOutcome) -> Option<f64>) -> Vec<f64> {
        let paths = self.flows.iter().flat_map(|f| &f.paths);
        paths.filter(|p| p.bytes_sent > RTT_PATH_MIN_BYTES).filter_map(x).collect()
    }

    /// The flows' paths that cross the link of `[link]` last (every path without one).
    fn selected(&self) -> impl Iterator<Item = &PathOutcome> {
        let paths = self.flows.iter().flat_map(|f| &f.paths);
        paths.filter(|p| self.selector.is_none_or(|l| p.link.as_deref() == Some(l)))
    }

    /// A value of each selected path that has it.
    fn selected_paths(&self, x: impl Fn(&PathOutcome) -> Option<f64>) -> Vec<f64> {
        self.selected().filter_map(x).collect()
    }

    /// The bytes the flows sent on the selected paths (`selected`) or on all of them.
    fn path_bytes(&self, selected: bool) -> f64 {
        let all = self.flows.iter().flat_map(|f| &f.paths);
        let bytes: u64 = match selected {
            true => self.selected().map(|p| p.bytes_sent).sum(),
            false => all.map(|p| p.bytes_sent).sum(),
        };
        bytes as f64
    }

    /// A value of each busy second of the delay line (more than [`DELAY_BUSY_PKT_PER_S`]).
    fn busy_seconds(&self, x: impl Fn(&DelayLineSecond) -> f64) -> Vec<f64> {
        let busy = self.run.delay_line.iter().filter(|s| s.pkt_per_s > DELAY_BUSY_PKT_PER_S);
        busy.map(x).collect()
    }

    /// Each completed transfer's completion time, ms: every transfer of a repeating flow (its
    /// FCT is their sum, no transfer's time), else the flow's own when it completed.
    fn fcts(&self) -> Vec<f64> {
        let per_flow = |f: &&FlowOutcome| match &f.transfer_fcts_us[..] {
            [] => f.fct_us.into_iter().collect::<Vec<_>>(),
            each => each.to_vec(),
        };
        self.flows.iter().flat_map(per_flow).map(|us| us / 1e3).collect()
    }

    /// Jobs, finished or not, that took longer than `ms` (an unfinished one: by the run's end).
    fn jobs_over(&self, ms: f64) -> f64 {
        self.jobs().all.iter().filter(|&&x| x > ms).count() as f64
    }

    /// The flows' jobs.
    fn jobs(&self) -> Jobs {
        // Keyed as the job names sort (`job10` before `job2`), the order sums are taken in.
        let mut jobs: BTreeMap<(String, String), Job> = BTreeMap::new();
        for f in &self.flows {
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
        let end_ms = self.run.duration_s * 1e3;
        let jct = |j: &&Job| j.end - j.start;
        Jobs {
            all: jobs
                .values()
                .map(|j| if j.complete { j.end - j.start } else { end_ms - j.start })
                .collect(),
            complete: jobs.values().filter(|j| j.complete).map(|j| jct(&j)).collect(),
            heard: jobs.values().filter(|j| j.complete && j.heard).map(|j| jct(&j)).collect(),
            unfinished: jobs.values().filter(|j| !j.complete).count(),
        }
    }

    /// Extra-subflow elimination judged per link, summed over the flows: `extra` and `keep`
    /// count the paths that should and should not be closed, `tp` and `fp` the eliminated
    /// ones that were right and wrong. A path closed for another reason is no elimination; a
    /// failed one is not even a path of its link, as failover re-opens it over the same
    /// addresses as a new path, which counts in its place. A flow's paths are grouped by the
    /// server address they reach (one per link, port stripped); of a link's n paths n - 1 are
    /// extra and one should stay, so closures up to n - 1 are true positives and any beyond
    /// (the link's last path) false positives. Flows without paths (kernel ones) count
    /// nothing.
    fn ese(&self) -> Ese {
        let mut ese = Ese { extra: 0, keep: 0, tp: 0, fp: 0 };
        for f in &self.flows {
            let mut links: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
            for p in f.paths.iter().filter(|p| p.close_reason != Some(PathClose::Failed)) {
                let address = p.remote.rsplit_once(':').map_or(p.remote.as_str(), |(a, _)| a);
                let (n, eliminated) = links.entry(address).or_default();
                *n += 1;
                *eliminated += u64::from(p.close_reason == Some(PathClose::Eliminated));
            }
            for (n, eliminated) in links.into_values() {
                ese.extra += n - 1;
                ese.keep += 1;
                ese.tp += eliminated.min(n - 1);
                ese.fp += eliminated.saturating_sub(n - 1);
            }
        }
        ese
    }
}

/// The `q` quantile (nearest rank; 0 the smallest, 1 the largest) of the flows' lifetime
/// goodputs, in `unit` bit/s.
fn goodput_quantile(i: &Input, q: f64, unit: f64) -> f64 {
    quantile(&i.of(|f| f.goodput_bps / unit), q)
}

/// CPU seconds of the flows' senders and of all receivers per GB the flows carried (NaN when a
/// CPU time is missing).
fn cpu_s_per_gb(i: &Input) -> f64 {
    let senders: Option<f64> = i.flows.iter().map(|f| f.cpu_s).sum();
    let bytes: u64 = i.flows.iter().map(|f| f.bytes).sum();
    match (senders, i.run.receiver_cpu_s) {
        (Some(s), Some(r)) if bytes > 0 => (s + r) / (bytes as f64 / 1e9),
        _ => f64::NAN,
    }
}

/// CPU ms of the flows' senders per completed transfer (NaN when a CPU time is missing).
fn sender_cpu_ms_per_transfer(i: &Input) -> f64 {
    let cpu: Option<f64> = i.flows.iter().map(|f| f.cpu_s).sum();
    cpu.map_or(f64::NAN, |c| c * 1e3 / i.fcts().len() as f64)
}

/// Mean over the flows' paths whose window the backend reported, in packets of the MTU.
fn cwnd_pkts_mean(i: &Input) -> f64 {
    let windows: Vec<f64> = i
        .flows
        .iter()
        .flat_map(|f| &f.paths)
        .filter_map(|p| p.cwnd_bytes)
        .map(|w| w as f64 / f64::from(i.mtu))
        .collect();
    mean(&windows)
}

/// The flows' bytes at the link's rate times the payload ceiling, ms.
fn ideal_ms(i: &Input) -> f64 {
    let bits = i.flows.iter().map(|f| f.bytes).sum::<u64>() as f64 * 8.0;
    let rate = i.link.map_or(f64::NAN, |l| l.rate_bps);
    bits / (rate * i.run.payload_ceiling.unwrap_or(f64::NAN)) * 1e3
}

/// The flows' second-half goodput over the monitored links' rates times the ceiling.
fn goodput_of_ceiling(i: &Input) -> f64 {
    let goodput: f64 = i.flows.iter().map(|f| f.goodput_last_half_bps).sum();
    let rates: f64 = i.monitored().map(|l| l.rate_bps).sum();
    goodput / (rates * i.run.payload_ceiling.unwrap_or(f64::NAN))
}

/// Marks over packets sent, summed over the monitored links.
fn marked_fraction(i: &Input) -> f64 {
    let marks: u64 = i.monitored().map(|l| l.marked).sum();
    marks as f64 / i.monitored().map(|l| l.sent_packets).sum::<u64>() as f64
}

/// The burst sources' datagrams not delivered, % of those they sent (NaN without any).
fn burst_loss_pct(i: &Input) -> f64 {
    let sent: u64 = i.run.bursts.iter().map(|b| b.sent_packets).sum();
    let delivered: u64 = i.run.bursts.iter().map(|b| b.delivered_packets).sum();
    100.0 * sent.saturating_sub(delivered) as f64 / sent as f64
}

/// Lost over sent packets of the flows' paths, %: a loss rate comparable across runs of
/// different lengths and rates, where `lost` is a count (NaN without paths: kernel flows).
fn loss_pct(i: &Input) -> f64 {
    let paths = || i.flows.iter().flat_map(|f| &f.paths);
    let lost: u64 = paths().map(|p| p.lost_packets).sum();
    100.0 * lost as f64 / paths().map(|p| p.packets_sent).sum::<u64>() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::BackendKind;

    /// A path of a flow: `bytes` sent towards `remote`, crossing `link`.
    fn path(remote: &str, link: &str, bytes: u64, close: Option<PathClose>) -> PathOutcome {
        PathOutcome {
            remote: remote.into(),
            bytes_sent: bytes,
            packets_sent: bytes / 1000,
            lost_packets: 2,
            rtt_min_ms: Some(0.1),
            rtt_p50_ms: Some(0.2),
            rtt_p99_ms: Some(0.5),
            active: close.is_none(),
            close_reason: close,
            cwnd_bytes: Some(30_000),
            link: Some(link.into()),
        }
    }

    /// A completed sized flow of job `job` (its ACK_FREQUENCY request lost when `lost`).
    fn flow(name: &str, job: usize, fct_ms: f64, lost: bool, backend: BackendKind) -> FlowOutcome {
        FlowOutcome {
            name: name.into(),
            group: Some("g".into()),
            fct_us: Some(fct_ms * 1e3),
            goodput_bps: 1e9 * fct_ms,
            goodput_last_half_bps: 0.9e9 * fct_ms,
            pto_client: 1,
            pto_server: 1,
            suppressions: 1,
            ack_request_lost: lost,
            start_s: 0.001 * job as f64,
            job: Some(job),
            kind: "mpquic".into(),
            bytes: 1_000_000,
            lost_packets: 3,
            cpu_s: (backend == BackendKind::Netns).then_some(0.01),
            eliminations: 1,
            transfer_fcts_us: vec![fct_ms * 500.0, fct_ms * 500.0],
            paths: vec![
                path("10.0.0.1:4433", "a->dst", 400_000, None),
                path("10.0.0.1:4433", "a->dst", 200_000, Some(PathClose::Eliminated)),
                path("10.0.1.1:4433", "b->dst", 300_000, None),
            ],
            ..FlowOutcome::default()
        }
    }

    /// A monitored link direction.
    fn link(name: &str) -> LinkOutcome {
        let q = QueueOutcome { p50: 5.0, p90: 9.0, p99: 12.0, mean: 5.5, p5: 1.0, p95: 10.0 };
        // Both backends measure a dual queue's sojourns.
        let sojourn = Some(q.clone());
        LinkOutcome {
            name: name.into(),
            marked: 10,
            dropped: 1,
            utilization: 0.9,
            queue: Some(q),
            sent_bytes: 10_000_000,
            rate_bps: 1e10,
            sent_packets: 7000,
            l_sojourn_us: sojourn.clone(),
            c_sojourn_us: sojourn,
        }
    }

    /// A burst source on `on_s` of the run that sent 1000 datagrams of 1000 bytes, `dropped`
    /// of them lost.
    fn burst(name: &str, on_s: f64, dropped: u64) -> BurstOutcome {
        BurstOutcome {
            name: name.into(),
            link: Some("a->dst".into()),
            on_s,
            sent_packets: 1000,
            sent_bytes: 1_000_000,
            delivered_packets: 1000 - dropped,
            delivered_bytes: (1000 - dropped) * 1000,
        }
    }

    /// A run as `backend` fills an outcome: every field it measures has a value.
    fn run(backend: BackendKind) -> Outcome {
        let netns = backend == BackendKind::Netns;
        let second =
            |pkt_per_s| DelayLineSecond { pkt_per_s, late_p99_us: 40.0, late_max_us: 90.0 };
        Outcome {
            flows: vec![
                flow("f0", 0, 2.0, false, backend),
                flow("f1", 0, 12.0, true, backend),
                flow("f2", 1, 300.0, false, backend),
            ],
            links: vec![link("a->dst"), link("b->dst")],
            duration_s: 1.0,
            host_load_1min: netns.then_some(1.5),
            host_steal_pct: netns.then_some(0.4),
            receiver_rcvbuf_errors: 0,
            receiver_cpu_s: netns.then_some(0.02),
            payload_ceiling: Some(0.95),
            delay_line: if netns { vec![second(5000.0), second(10.0)] } else { vec![] },
            bursts: if netns {
                vec![]
            } else {
                vec![burst("b0", 0.25, 400), burst("b1", 0.5, 300)]
            },
        }
    }

    /// Every metric of the catalogue on a run of each backend's shape is a number, but for
    /// those that say the backend does not measure what they need, which are NaN there.
    #[test]
    fn every_metric_computes_on_each_backend_or_says_why_not() {
        for backend in [BackendKind::Sim, BackendKind::Netns] {
            let o = run(backend);
            for m in CATALOGUE {
                let selector = m.name.starts_with("path_").then_some("a->dst");
                let input = Input {
                    run: &o,
                    flows: o.flows.iter().collect(),
                    link: o.links.first(),
                    rounds: 2.0,
                    mtu: 1500,
                    selector,
                };
                let value = (m.compute)(&input);
                let unmeasured = match m.source {
                    Source::Both => false,
                    Source::Netns(_) => backend == BackendKind::Sim,
                    Source::Sim(_) => backend == BackendKind::Netns,
                };
                match unmeasured {
                    true => assert!(value.is_nan(), "{}: {value} on {}", m.name, backend.name()),
                    false => {
                        assert!(value.is_finite(), "{}: {value} on {}", m.name, backend.name())
                    }
                }
            }
        }
    }

    /// The goodput distribution over 11 flows of 1..=11 Mbit/s, listed out of order: nearest
    /// rank puts p10 at the 2nd (ceil 1.1), p50 at the 6th (ceil 5.5), p90 at the 10th (ceil 9.9).
    #[test]
    fn goodput_percentiles_are_nearest_rank_over_the_flows() {
        let flows: Vec<FlowOutcome> = [7, 3, 11, 1, 9, 5, 2, 10, 4, 8, 6]
            .map(|mbps| FlowOutcome { goodput_bps: f64::from(mbps) * 1e6, ..Default::default() })
            .into();
        let o = Outcome { flows, ..run(BackendKind::Sim) };
        let value = |name: &str| {
            let flows = o.flows.iter().collect();
            let input =
                Input { run: &o, flows, link: None, rounds: 1.0, mtu: 1500, selector: None };
            (find(name).expect(name).compute)(&input)
        };
        for (stat, expect) in
            [("p10", 2.0), ("p50", 6.0), ("p90", 10.0), ("min", 1.0), ("max", 11.0)]
        {
            assert_eq!(value(&format!("goodput_{stat}_mbps")), expect, "{stat}");
            assert_eq!(value(&format!("goodput_{stat}_gbps")), expect / 1e3, "{stat}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = CATALOGUE.iter().map(|m| m.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }

    /// A few values of the synthetic run worked out by hand.
    #[test]
    fn values_on_the_synthetic_run() {
        let o = run(BackendKind::Sim);
        let value = |name: &str, selector: Option<&str>| {
            let flows = o.flows.iter().collect();
            let input =
                Input { run: &o, flows, link: o.links.first(), rounds: 2.0, mtu: 1500, selector };
            (find(name).expect(name).compute)(&input)
        };
        assert_eq!(value("jobs", None), 2.0);
        // Job 0: f0 and f1 start at 0 and end at 2 and 12 ms; job 1 starts at 1 ms, 300 ms long.
        assert_eq!(value("jct_p50_ms", None), 12.0);
        assert_eq!(value("jobs_ack_heard", None), 1.0);
        // "Over" is strictly longer: job 1's 300 ms is over 10 ms, not over 300 ms.
        assert_eq!((value("jobs_over_10ms", None), value("jobs_over_300ms", None)), (2.0, 0.0));
        assert_eq!(value("flows_over_10ms_per_round", None), 1.0);
        assert_eq!(value("path_share", Some("b->dst")), 1.0 / 3.0);
        assert_eq!(
            (value("ese_extra", None), value("ese_tp", None), value("ese_fp", None)),
            (3.0, 3.0, 0.0)
        );
        assert_eq!(value("marked_fraction", None), 20.0 / 14000.0);
        // Each flow's three paths lost 2 of 400, 200 and 300 packets.
        assert_eq!(value("loss_pct", None), 100.0 * 18.0 / 2700.0);
        // Two sources over 1 s delivered 600 and 700 kB (4.8 and 5.6 Mbit/s), were on 1/4 and
        // 1/2 of it, and lost 700 of their 2000 datagrams.
        assert!((value("burst_mbps", None) - 5.2).abs() < 1e-12);
        assert_eq!((value("burst_duty", None), value("burst_loss_pct", None)), (0.375, 35.0));
    }
}
