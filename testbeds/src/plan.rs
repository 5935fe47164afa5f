//! The runner's plan: the topology, its link parameters, and the flows and jobs to run. Plain
//! values with no defaults of their own, built by `compile.rs` from one point of an experiment
//! file (the shared language, which owns every default and the checks of what is written);
//! controllers, ECN shaping and schedulers are the library's types, parsed once there. Each
//! `result.json` records the plan as `scenario`.

use mpquic::{Congestion, EcnPrecision, Scheduler};
use serde::{Serialize, Serializer};

/// One point of an experiment as the runner builds and runs it.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub name: String,
    /// Hard limit per repetition.
    pub duration_s: f64,
    /// Queue sampling and marker resynchronisation period.
    pub sample_interval_ms: f64,
    pub repetitions: u32,
    pub topology: Topology,
    /// Every shaped direction's parameters, unless `link_overrides` says otherwise.
    pub link: LinkParams,
    /// Per-direction exceptions to `link`.
    pub link_overrides: Vec<LinkOverride>,
    /// Directions the testbed does not shape whose delay the scenario set: delayed only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delay_only: Vec<DelayOnly>,
    pub flows: Vec<Flow>,
    pub jobs: Vec<Jobs>,
    /// What every mpquic process of the run is given beside its own flow's settings.
    pub quic: Quic,
}

/// The scenario's `[transport]` settings that every mpquic process of a run takes as CLI
/// flags, senders and servers alike (a stream's window is the receiver's to give).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Quic {
    /// The CLI's `--receive-window` (the language's `transport.window`), bytes; 0: the CLI's
    /// own default.
    pub receive_window: u64,
    /// The CLI's `--max-ack-delay` (the language's `transport.max_ack_delay`), milliseconds:
    /// a protocol timer, given as written, not scaled with the links' times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ack_delay_ms: Option<f64>,
}

impl Quic {
    /// As `mpquic` arguments.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.receive_window > 0 {
            args.extend(["--receive-window".into(), self.receive_window.to_string()]);
        }
        if let Some(ms) = self.max_ack_delay_ms {
            args.extend(["--max-ack-delay".into(), ms.to_string()]);
        }
        args
    }
}

/// The namespaces and veth pairs to build. Experiments compile to `Custom`; the failover
/// check builds its own two paths.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    /// Sender `s` and receiver `d` joined by `paths` disjoint routed paths (routers `r1..rk`);
    /// each host interface carries `addrs_per_link` addresses; optional cross hosts `c1..ck`
    /// attached to the routers send to `d` through the same bottlenecks.
    MultiPath { paths: usize, addrs_per_link: usize, cross_hosts: bool },
    /// Hosts and routers by name and the links between them, with the directions to shape:
    /// what the shared scenario language's topologies compile to (`compile`).
    Custom { hosts: Vec<CustomHost>, switches: Vec<String>, links: Vec<CustomLink> },
}

/// A host of a custom topology.
#[derive(Debug, Clone, Serialize)]
pub struct CustomHost {
    pub name: String,
}

/// A link of a custom topology: its ends, the addresses of each end on it, and which of its
/// directions are shaped bottlenecks.
#[derive(Debug, Clone, Serialize)]
pub struct CustomLink {
    pub a: String,
    pub b: String,
    pub a_addrs: usize,
    pub b_addrs: usize,
    pub shape_a_to_b: bool,
    pub shape_b_to_a: bool,
}

/// One shaped direction's parameters.
#[derive(Debug, Clone, Serialize)]
pub struct LinkParams {
    pub rate_mbit: f64,
    /// ECN marking threshold (instantaneous queue).
    pub k_packets: u32,
    /// FIFO size.
    pub buffer_bytes: u64,
    /// One-way extra delay (netem where the kernel has it, else the NFQUEUE delay line).
    pub delay_ms: f64,
    /// Uniform jitter (+-) on `delay_ms` (FIFO, no reordering on the delay line).
    pub jitter_ms: f64,
    /// Random loss probability.
    pub loss: f64,
    /// False: plain drop-tail.
    pub ecn: bool,
    /// Segmentation offload on senders (GSO/TSO batches cross as one skb).
    pub sender_offload: bool,
    /// An RFC 9332 dual queue (`aqm = "dualq"`) instead of the step-marked FIFO.
    pub dualq: Option<Dualq>,
}

/// A dual queue's parameters (`[link] l_step`, `classic_target`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Dualq {
    /// The L queue's marking step, a sojourn, microseconds.
    pub l_step_us: f64,
    /// The classic queue's PI2 delay target, microseconds.
    pub classic_target_us: f64,
}

/// The link parameters of some shaped directions that differ from the plan's `link`: the
/// egress of node `from` (toward `to` only, if given).
#[derive(Debug, Clone, Serialize)]
pub struct LinkOverride {
    pub from: String,
    pub to: Option<String>,
    pub rate_mbit: Option<f64>,
    pub k_packets: Option<u32>,
    pub buffer_bytes: Option<u64>,
    pub delay_ms: Option<f64>,
    pub jitter_ms: Option<f64>,
}

impl LinkOverride {
    fn matches(&self, from: &str, to: &str) -> bool {
        self.from == from && self.to.as_deref().is_none_or(|t| t == to)
    }

    fn apply(&self, link: &mut LinkParams) {
        link.rate_mbit = self.rate_mbit.unwrap_or(link.rate_mbit);
        link.k_packets = self.k_packets.unwrap_or(link.k_packets);
        link.buffer_bytes = self.buffer_bytes.unwrap_or(link.buffer_bytes);
        link.delay_ms = self.delay_ms.unwrap_or(link.delay_ms);
        link.jitter_ms = self.jitter_ms.unwrap_or(link.jitter_ms);
    }
}

/// A direction that is not shaped (no rate, FIFO or marker) but delayed: its packets wait on
/// the delay line of switch `at`, on their way out of it (`Hook::Egress`: the switch sends
/// this direction) or on their way in (`Hook::Ingress`: a host sends it, and a delay at the
/// host's own egress would hold its socket's packets, which TCP Small Queues throttles).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelayOnly {
    pub from: String,
    pub to: String,
    /// The switch whose namespace delays it.
    pub at: String,
    pub hook: Hook,
    /// One-way delay at the testbed's scale.
    pub delay_ms: f64,
    /// Uniform jitter (+-) on `delay_ms`.
    pub jitter_ms: f64,
}

/// Where in a switch's namespace a delay-only direction's packets are taken: leaving by the
/// device toward `to` (`mangle POSTROUTING -o`), or arriving by the device from `from`
/// (`mangle PREROUTING -i`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hook {
    Egress,
    Ingress,
}

/// Which program sends a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    Mpquic,
    KernelTcp,
    KernelMptcp,
}

/// An mpquic controller as the library parsed it, with the text it was parsed from (what the
/// plan records); the CLI the runner starts gets the parsed value back through its one
/// formatter ([`MpquicController::spec`], `--cc amp:beta=8.0`), which the CLI's tests read back.
#[derive(Debug, Clone, PartialEq)]
pub struct MpquicController {
    congestion: Congestion,
    text: String,
}

impl MpquicController {
    /// The controller the library parsed from `text`.
    pub fn new(congestion: Congestion, text: &str) -> Self {
        MpquicController { congestion, text: text.to_string() }
    }

    /// The controller's name (`amp`).
    pub fn name(&self) -> &'static str {
        self.congestion.name()
    }

    /// The text it was parsed from, as the experiment file wrote it (`amp:beta=4`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What the CLI's `--cc` takes: the parsed value written back by
    /// [`mpquic::Congestion::spec`] (`amp` for `amp:beta=4`, whose `beta` is the default).
    pub fn spec(&self) -> String {
        self.congestion.spec()
    }
}

impl Serialize for MpquicController {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

/// A flow's congestion controller: an mpquic one, or the kernel's for kernel flows (a
/// `tcp_congestion_control` module name).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Controller {
    Mpquic(MpquicController),
    Kernel(String),
}

impl Controller {
    /// The name results record (`amp`, `cubic`).
    pub fn name(&self) -> &str {
        match self {
            Controller::Mpquic(c) => c.name(),
            Controller::Kernel(name) => name,
        }
    }
}

/// A flow (or `count` identical ones, `stagger_ms` apart) as the runner starts it.
#[derive(Debug, Clone, Serialize)]
pub struct Flow {
    pub kind: FlowKind,
    /// Host names (see the topology).
    pub from: String,
    pub to: String,
    pub controller: Controller,
    /// Bytes to send (0: send for `for_s` seconds; mpquic: a timed `mpquic send --time` into
    /// the server's sink).
    pub bytes: u64,
    pub for_s: f64,
    pub start_s: f64,
    pub count: u32,
    pub stagger_ms: f64,
    /// mpquic: paths to use (0: every address pair); kernel-tcp: path index (1-based).
    pub paths: usize,
    /// The address of `from` (and of `to`) the flow's address pairs start at
    /// (`Net::flow_pairs`; 0: the first routed pair's).
    pub from_addr: usize,
    pub to_addr: usize,
    /// mpquic: the CLI's `--ecn` (ACK shaping).
    pub ecn: EcnPrecision,
    /// mpquic: the CLI's `--scheduler`.
    pub scheduler: Scheduler,
    /// mpquic: the CLI's `--paths-per-pair` (several paths over one address pair, 1..=16).
    pub paths_per_pair: u32,
    /// mpquic: the CLI's `--repeat` (`bytes` sent this many times, each over a new connection,
    /// by one process: short flows without a process start-up each).
    pub repeat: u32,
    /// mpquic: the CLI's `--same-connection` (the `repeat` transfers over one connection, a
    /// new stream each: the scenario's `repeat_over = "one-connection"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub same_connection: bool,
    /// mpquic: the CLI's `--path-delay`: when each path the CLI opens does, in seconds after its
    /// connection is established (the first 0, none earlier than the one before). Empty: every
    /// path opens with the connection.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_delays_s: Vec<f64>,
    /// mpquic: the paths (by index, the last ones) the CLI opens with `--backup-path` instead
    /// of `--path`: the CLI opens backups after the others, so only the last paths can be
    /// backups in the language's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backup_paths: Vec<usize>,
}

/// Partition/aggregate jobs: the aggregator asks every worker at once (one warm single-path
/// QUIC connection each), every worker answers `response_bytes`, and a job completes when the
/// last answer has arrived. `parallel` job streams run side by side, closed-loop.
#[derive(Debug, Clone, Serialize)]
pub struct Jobs {
    /// The host that sends the requests and receives the answers.
    pub aggregator: String,
    /// The hosts that answer (`mpquic serve --dir`), one connection each.
    pub workers: Vec<String>,
    pub response_bytes: u64,
    /// Jobs per job stream.
    pub jobs: u32,
    /// Job streams, each starting its next job when the last one ends.
    pub parallel: u32,
    /// Pause between a stream's jobs.
    pub gap_ms: f64,
    pub start_s: f64,
    /// The workers' (senders of the answers) and the aggregator's controller.
    pub controller: MpquicController,
    pub ecn: EcnPrecision,
}

/// The longest delay a direction may have: the delay line holds every packet of that many
/// milliseconds in the kernel queue.
pub const MAX_DELAY_MS: f64 = 1000.0;

impl Plan {
    /// The parameters of the shaped direction from node `from` to node `to`: `link` with the
    /// matching overrides applied in order.
    pub fn link_for(&self, from: &str, to: &str) -> LinkParams {
        let mut link = self.link.clone();
        for o in self.link_overrides.iter().filter(|o| o.matches(from, to)) {
            o.apply(&mut link);
        }
        link
    }

    /// Every shaped direction's parameters, as (from, to, link).
    pub fn links(&self) -> Vec<(String, String, LinkParams)> {
        let net = crate::topology::build(&self.topology);
        let name = |n: usize| net.nodes[n].name.clone();
        net.bottlenecks()
            .iter()
            .map(|d| {
                let (from, to) = (name(d.from.node), name(d.to.node));
                let link = self.link_for(&from, &to);
                (from, to, link)
            })
            .collect()
    }
}

#[cfg(test)]
impl Flow {
    /// An mpquic flow of AMP from `s` to `d` (unit tests).
    pub fn mpquic_for_tests(bytes: u64, for_s: f64) -> Flow {
        Flow {
            kind: FlowKind::Mpquic,
            from: "s".into(),
            to: "d".into(),
            controller: Controller::Mpquic(MpquicController::new(Congestion::default(), "amp")),
            bytes,
            for_s,
            start_s: 0.0,
            count: 1,
            stagger_ms: 0.0,
            paths: 0,
            from_addr: 0,
            to_addr: 0,
            ecn: EcnPrecision::default(),
            scheduler: Scheduler::default(),
            paths_per_pair: 1,
            repeat: 1,
            same_connection: false,
            path_delays_s: vec![],
            backup_paths: vec![],
        }
    }
}
