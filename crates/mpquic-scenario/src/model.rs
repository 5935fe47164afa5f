//! The scenario: a topology, link parameters, flows and workload generators, QUIC settings,
//! what to record, the testbed's scaling, and the experiment around it (sweep axes, seeds,
//! report). One TOML document per experiment; see the crate's README for the language.
//!
//! The topology format is a list of hosts (with a number of addresses), switches and
//! bidirectional links between named nodes, the same shape a netns testbed builds (namespaces,
//! veth pairs, addresses, shaped egress queues). The standard shapes (many-to-one, dumbbell,
//! two-path, fat-tree) are generators that expand into that list.

use std::fmt;

use mpquic_choice::{Congestion, EcnPrecision, Scheduler};
use serde::{Deserialize, Serialize};
use serde::{Deserializer, Serializer};

use crate::flow_size::FlowSize;
use crate::sections::{Axis, PlotSpec, ReportSpec};
use crate::units::{de_bytes, de_bytes_opt, Amount, Dur, Rate};

/// Link parameters; every field may be left out to take the scenario's default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Rate.
    pub rate: Option<Rate>,
    /// Propagation delay.
    pub delay: Option<Dur>,
    /// Buffer: packets (`100`, `"100pkt"`) or bytes (`"150KB"`).
    pub buffer: Option<Amount>,
    /// ECN marking threshold K on the instantaneous queue, packets or bytes; `0` disables
    /// marking on this link (a drop-tail queue).
    pub k: Option<Amount>,
    /// Random loss probability, in `[0, 1)`.
    pub loss: Option<f64>,
    /// Uniform +- jitter on `delay` (testbed: its delay line; the simulator has no per-link
    /// jitter and refuses a non-zero value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Dur>,
    /// The queue's discipline: `"step"` (the default: one FIFO, CE above `k`) or `"dualq"`
    /// (RFC 9332's DualQ Coupled AQM: ECT(1) and CE to a low-latency queue, step-marked at
    /// `l_step` of sojourn, the rest to a classic queue under a PI2 controller aiming at
    /// `classic_target`; `k` is not used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<Aqm>,
    /// DualQ: the L queue's marking step, a sojourn time (default 1 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l_step: Option<Dur>,
    /// DualQ: the classic queue's delay target (default 15 ms, RFC 9332's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classic_target: Option<Dur>,
    /// When the link goes down: from this time of the run on, it drops every packet offered
    /// to it (a custom link's key closes both its directions, an override's its own). The
    /// simulator's only: XMP Fig. 7 closes a bottleneck mid-run; the testbed refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_at: Option<Dur>,
}

/// What a host's egress queue is ([`Scenario::host_egress`]; a custom link's `host_queue`
/// overrides it for its `a` end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostEgress {
    /// A host's qdisc: `host_buffer` packets, never marking. Where a host's own link is a
    /// flow's bottleneck, its queue grows to the window's excess, as a real qdisc's does
    /// without TCP Small Queues.
    #[default]
    Qdisc,
    /// A switch port's: the link's buffer and marking threshold.
    Port,
}

impl HostEgress {
    fn is_qdisc(&self) -> bool {
        *self == HostEgress::Qdisc
    }
}

/// A link's queue discipline ([`LinkConfig::aqm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aqm {
    /// One FIFO, CE-marked above the threshold `k` (DCTCP's marker).
    #[default]
    Step,
    /// RFC 9332's DualQ Coupled AQM.
    Dualq,
}

impl Aqm {
    /// The L queue's default step (1 ms of sojourn).
    pub const L_STEP: Dur = Dur::us(1000);
    /// The classic queue's default delay target (RFC 9332: 15 ms).
    pub const CLASSIC_TARGET: Dur = Dur::us(15_000);
}

impl LinkConfig {
    /// `self` with unset fields taken from `base`.
    pub fn or(&self, base: &LinkConfig) -> LinkConfig {
        LinkConfig {
            rate: self.rate.or(base.rate),
            delay: self.delay.or(base.delay),
            buffer: self.buffer.or(base.buffer),
            k: self.k.or(base.k),
            loss: self.loss.or(base.loss),
            jitter: self.jitter.or(base.jitter),
            aqm: self.aqm.or(base.aqm),
            l_step: self.l_step.or(base.l_step),
            classic_target: self.classic_target.or(base.classic_target),
            down_at: self.down_at.or(base.down_at),
        }
    }

    /// The papers' data-center link: 10 Gbps, 2 us, 100 packets, K = 10, no loss.
    pub fn paper_default() -> LinkConfig {
        LinkConfig {
            rate: Some(Rate(10_000_000_000)),
            delay: Some(Dur::us(2)),
            buffer: Some(Amount::Packets(100)),
            k: Some(Amount::Packets(10)),
            loss: Some(0.0),
            jitter: None,
            aqm: None,
            l_step: None,
            classic_target: None,
            down_at: None,
        }
    }
}

/// A host in a custom topology.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Name.
    pub name: String,
    /// Number of addresses. Address `i` sends on the host's link `i % links`.
    #[serde(default = "one")]
    pub addrs: usize,
}

/// A bidirectional link in a custom topology.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// One end.
    pub a: String,
    /// The other end.
    pub b: String,
    /// Parameters (both directions), over the scenario defaults.
    #[serde(flatten)]
    pub config: LinkConfig,
    /// Record queue samples of the `a -> b` direction.
    #[serde(default)]
    pub monitor: bool,
    /// Record queue samples of the `b -> a` direction.
    #[serde(default)]
    pub monitor_reverse: bool,
    /// Host egress links: a large buffer and no marking, like a host's qdisc (default true when
    /// `a` is a host).
    #[serde(default)]
    pub host_queue: Option<bool>,
}

fn one() -> usize {
    1
}
fn is_one(x: &usize) -> bool {
    *x == 1
}
fn is_zero(d: &Dur) -> bool {
    d.0 == 0
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// What carries a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// An mpquic connection.
    #[default]
    Mpquic,
    /// Testbed: a kernel TCP socket (path: `from_addr`).
    KernelTcp,
    /// Testbed: a kernel MPTCP socket.
    KernelMptcp,
}

impl FlowKind {
    fn is_mpquic(&self) -> bool {
        *self == FlowKind::Mpquic
    }

    /// The kind as experiment files write it (`kind = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Mpquic => "mpquic",
            FlowKind::KernelTcp => "kernel-tcp",
            FlowKind::KernelMptcp => "kernel-mptcp",
        }
    }
}

/// What a repeating flow's transfers run over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepeatOver {
    /// Each transfer over a new connection (its own handshake, paths and controllers) from the
    /// same client endpoint.
    #[default]
    NewConnection,
    /// All transfers over the flow's one connection, a new stream each: after the first, its
    /// paths are validated and their windows open (the CLI's `send --repeat N --same-connection`).
    OneConnection,
}

impl RepeatOver {
    fn is_default(&self) -> bool {
        *self == RepeatOver::NewConnection
    }
}

/// A topology: explicit, or one of the standard shapes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Topology {
    /// Hosts, switches and links, listed.
    Custom {
        /// Hosts.
        hosts: Vec<HostSpec>,
        /// Switch names.
        switches: Vec<String>,
        /// Links.
        links: Vec<LinkSpec>,
    },
    /// `senders` hosts `s0..` and a receiver `r` on one switch `sw`; the bottleneck is `sw -> r`.
    ManyToOne {
        /// Number of senders.
        senders: usize,
        /// Addresses per sender (paths of a multipath flow share the access link).
        #[serde(default = "one")]
        sender_addrs: usize,
        /// Addresses of the receiver.
        #[serde(default = "one")]
        receiver_addrs: usize,
        /// Overrides for the access links `s<i> <-> sw` (e.g. a faster rate, so that even one
        /// sender queues at the switch rather than in its own host).
        #[serde(default)]
        access: LinkConfig,
        /// Overrides for the bottleneck `sw <-> r`.
        #[serde(default)]
        bottleneck: LinkConfig,
    },
    /// `pairs` hosts `l0..` on switch `sl`, `pairs` hosts `r0..` on switch `sr`, bottleneck
    /// `sl -> sr`.
    Dumbbell {
        /// Hosts per side.
        pairs: usize,
        /// Addresses per host.
        #[serde(default = "one")]
        addrs: usize,
        /// Overrides for the bottleneck.
        #[serde(default)]
        bottleneck: LinkConfig,
    },
    /// Host `src` and host `dst`, each with two addresses, joined through switch `a` (address 0)
    /// and switch `b` (address 1); cross-traffic hosts `xa0..` on `a` and `xb0..` on `b`.
    /// Bottlenecks `a -> dst` and `b -> dst`.
    TwoPath {
        /// Cross-traffic hosts per switch.
        #[serde(default = "one")]
        cross_hosts: usize,
        /// Overrides for the sending hosts' links (`src` and the cross-traffic hosts), e.g. a
        /// faster rate so that queues form at the switches.
        #[serde(default)]
        access: LinkConfig,
    },
    /// A k-ary fat-tree: k pods of k/2 edge (`e<pod>_<i>`) and k/2 aggregation (`a<pod>_<i>`)
    /// switches, (k/2)^2 cores (`c<i>`), k^3/4 hosts `h0..`. Host downlinks are monitored.
    FatTree {
        /// Even arity, e.g. 4 or 8.
        k: usize,
        /// Addresses per host (paths spread by ECMP over the addresses).
        #[serde(default = "one")]
        addrs: usize,
    },
    /// A VL2 Clos (Greenberg et al., SIGCOMM 2009): `tors` ToR switches `t<i>` with
    /// `hosts_per_tor` hosts `h0..` each, every ToR dual-homed to a pair of aggregation
    /// switches `a<i>` (ToR t to `a<2p>` and `a<2p+1>`, p = t mod aggregations/2, so the ToRs
    /// spread evenly over the pairs), and every aggregation switch linked to every
    /// intermediate switch `i<j>`. Counts, not the VL2 paper's port degrees, as htsim's VL2
    /// takes them, so that a file can match another paper's host and switch counts. Host
    /// downlinks are monitored.
    Vl2 {
        /// ToR switches.
        tors: usize,
        /// Hosts on each ToR (the VL2 paper's 20).
        hosts_per_tor: usize,
        /// Aggregation switches: even, as they serve the ToRs in pairs.
        aggregations: usize,
        /// Intermediate switches.
        intermediates: usize,
        /// Addresses per host (paths spread by ECMP over the addresses).
        #[serde(default = "one")]
        addrs: usize,
        /// Overrides for the host links `h<i> <-> t<j>` (VL2's 1 Gbit/s).
        #[serde(default)]
        access: LinkConfig,
        /// Overrides for the switch-to-switch links (VL2's 10 Gbit/s).
        #[serde(default)]
        fabric: LinkConfig,
    },
    /// BCube(n, k) (Guo et al., SIGCOMM 2009): n^(k+1) servers and k+1 levels of n^k n-port
    /// switches `s<level>_<j>`; server i's level-l port is on the level-l switch of the
    /// servers whose base-n digits equal i's in every place but place l. BCube's servers relay
    /// traffic, and here hosts only send and receive, so each server is its host `h<i>` plus
    /// a relay switch `v<i>` of its own, joined by the `server` link; the BCube ports join the
    /// relay to the level switches. Host downlinks (`v<i> -> h<i>`) are monitored.
    Bcube {
        /// Ports per switch (and servers per level-0 switch), at least 2.
        n: usize,
        /// Levels less one: every server has k+1 ports.
        k: usize,
        /// Addresses per host (every address on the host's one link; the relay's ECMP spreads
        /// a flow's paths over its ports).
        #[serde(default = "one")]
        addrs: usize,
        /// Overrides for the links `h<i> <-> v<i>` inside each server. Give them at least k+1
        /// times the ports' rate: the relay receives on at most k+1 ports and the host sends
        /// to at most k+1, so this link is then never the bottleneck, as a server's memory bus
        /// is not in BCube.
        #[serde(default)]
        server: LinkConfig,
        /// Overrides for the BCube ports, `v<i> <-> s<level>_<j>`.
        #[serde(default)]
        ports: LinkConfig,
    },
}

/// A controller as a file names it, parsed once when the file is read: the library's controller
/// spec ([`Congestion`]), or why the library does not take the name (a kernel flow may still:
/// the kernel's `bbr`). The text as written stays with it: results, labels and the kernel's
/// flows read that.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerSpec {
    text: String,
    parsed: Result<Congestion, String>,
}

impl ControllerSpec {
    /// The name and parameters as the file wrote them (`"amp:beta=4"`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The library's controller, or why the library does not take this name.
    pub fn congestion(&self) -> Result<&Congestion, &str> {
        self.parsed.as_ref().map_err(String::as_str)
    }
}

impl From<&str> for ControllerSpec {
    /// Parsed here, once ([`Congestion`]'s `FromStr`).
    fn from(text: &str) -> Self {
        let parsed = text.parse::<Congestion>().map_err(|e| e.to_string());
        ControllerSpec { text: text.to_owned(), parsed }
    }
}

impl fmt::Display for ControllerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// As the text it was read from, so that results name it as the file did.
impl Serialize for ControllerSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for ControllerSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| ControllerSpec::from(text.as_str()))
    }
}

/// One flow: a QUIC connection from `from` (client, sends `bytes`) to `to` (server, answers
/// `response_bytes`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// What runs the flow: an mpquic connection (the default), or (testbed) a kernel TCP or
    /// MPTCP socket with the kernel controller `controller`; the simulator runs kernel flows as
    /// QUIC connections with the library controller of that name, and says so in its output's
    /// notes.
    #[serde(default, skip_serializing_if = "FlowKind::is_mpquic")]
    pub kind: FlowKind,
    /// Name in results (default `flow<i>`; with `count` or a host range, `<name>-<i>`).
    #[serde(default)]
    pub name: Option<String>,
    /// Group for aggregate statistics (e.g. `"dctcp"`, `"incast"`).
    #[serde(default)]
    pub group: Option<String>,
    /// Client host, or a range of hosts `"s[0..7]"` (inclusive): one flow from each.
    pub from: String,
    /// Server host.
    pub to: String,
    /// Identical flows per client host, started `stagger` apart.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: usize,
    /// Time between the starts of the flows `count` and `from`'s range make, in order.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stagger: Dur,
    /// First client address used (path `i` uses `(from_addr + i) % addrs`).
    #[serde(default)]
    pub from_addr: usize,
    /// First server address used.
    #[serde(default)]
    pub to_addr: usize,
    /// Number of paths (1 = single path).
    #[serde(default = "one")]
    pub paths: usize,
    /// When each path opens, in virtual time since the start of the run: one entry per path,
    /// non-decreasing, e.g. `["0ms", "100ms", "300ms"]` (XMP Fig. 6's flow that adds paths while
    /// it runs). Path 0 is the connection's own path and opens with the handshake, so its entry
    /// must not be later than the handshake (time 0, or `start` with `handshake_at_start`). A
    /// later path opens on the running connection at its time (or as soon after as the
    /// connection is established). Empty (the default): every path opens as soon as the
    /// connection is established.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_times: Vec<Dur>,
    /// Paths (by index, never 0: path 0 is the connection's own) that open as backups (RFC
    /// 10069 path status, the CLI's `--backup-path`): they carry data only while no available
    /// path can, and take over when the available paths fail. E.g. `backup_paths = [1]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backup_paths: Vec<usize>,
    /// Controller with its parameters in one string, as the library reads it
    /// (`mpquic_choice::Congestion`): `newreno`, `cubic` (the stack's own, uncoupled per path), or an
    /// mpquic-cc name with parameters, `"amp:beta=4,tau=8"`, or the name of a controller the
    /// program registered (`mpquic_cc::register`). Kernel flows: the kernel's name.
    #[serde(default)]
    pub controller: Option<ControllerSpec>,
    /// When the client starts sending.
    #[serde(default)]
    pub start: Dur,
    /// When a bulk flow stops sending (default: the end of the run).
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Bytes the client sends (`131072`, `"128KB"`); absent = bulk (until `stop`).
    #[serde(default, deserialize_with = "de_bytes_opt")]
    pub bytes: Option<u64>,
    /// Bytes the server answers once it has the whole request.
    #[serde(default, deserialize_with = "de_bytes")]
    pub response_bytes: u64,
    /// `bytes` sent this many times, one after the other, each over a new connection from the
    /// same client (the testbed: one process, no process start-up per transfer). Sized flows
    /// only.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: usize,
    /// What the `repeat` transfers run over: `"new-connection"` (the default) or
    /// `"one-connection"`. On one connection, each transfer's FCT runs from its first byte
    /// written until the receiver has it all (the simulator: the server application read the
    /// last byte; the testbed: the CLI read the server's verified reply).
    #[serde(default, skip_serializing_if = "RepeatOver::is_default")]
    pub repeat_over: RepeatOver,
    /// Testbed: paths over each address pair (the CLI's `--paths-per-pair`, link sharing). The
    /// simulator refuses values above 1 (its paths spread over the addresses by `paths`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub paths_per_pair: usize,
    /// Run the handshake at `start` (counted in the FCT) instead of at time 0.
    #[serde(default)]
    pub handshake_at_start: bool,
    /// Job id (partition/aggregate), for job completion times.
    #[serde(default, skip_deserializing)]
    pub job: Option<usize>,
    /// The job this flow waits for (a closed-loop partition-aggregate workload's): it starts
    /// `gap` after that job of its group has completed, not at `start`, and does not exist
    /// before (so a job whose turn never came within the run has no flows in the results).
    /// Its handshake is at its start. Set by workloads only, on sized flows without
    /// `path_times` or `stop` (times since the run's start, which such a flow cannot know).
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub after: Option<After>,
}

/// What a flow that waits for a job waits for ([`FlowSpec::after`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    /// The job, numbered within the flow's group: it has completed when every flow of it has.
    pub job: usize,
    /// From that job's completion to this flow's start.
    pub gap: Dur,
}

impl FlowSpec {
    /// A bulk flow with defaults.
    pub fn bulk(from: &str, to: &str) -> FlowSpec {
        FlowSpec {
            kind: FlowKind::Mpquic,
            name: None,
            group: None,
            from: from.into(),
            to: to.into(),
            count: 1,
            stagger: Dur(0),
            from_addr: 0,
            to_addr: 0,
            paths: 1,
            path_times: vec![],
            backup_paths: vec![],
            controller: None,
            start: Dur(0),
            stop: None,
            bytes: None,
            response_bytes: 0,
            repeat: 1,
            repeat_over: RepeatOver::NewConnection,
            paths_per_pair: 1,
            handshake_at_start: false,
            job: None,
            after: None,
        }
    }

    /// When the connection (and so its path 0) is made: `start` with `handshake_at_start` or
    /// `after` (such a flow does not exist before), else time 0.
    pub fn connect_at(&self) -> Dur {
        if self.handshake_at_start || self.after.is_some() {
            self.start
        } else {
            Dur(0)
        }
    }

    /// Whether path `index` opens as a backup.
    pub fn is_backup(&self, index: usize) -> bool {
        self.backup_paths.contains(&index)
    }

    /// Check `backup_paths` against `paths`; the error says what is wrong.
    pub fn check_backup_paths(&self) -> Result<(), String> {
        let flow = self.name.clone().unwrap_or_else(|| format!("{} -> {}", self.from, self.to));
        match self.backup_paths.iter().find(|&&i| i == 0 || i >= self.paths) {
            Some(0) => Err(format!(
                "flow {flow}: backup_paths names path 0, the connection's own path (available)"
            )),
            Some(i) => Err(format!(
                "flow {flow}: backup_paths names path {i}, but the flow has paths 0..{}",
                self.paths - 1
            )),
            None => Ok(()),
        }
    }

    /// Check `path_times` against `paths` and the handshake time; the error says what is wrong.
    pub fn check_path_times(&self) -> Result<(), String> {
        let times = &self.path_times;
        if times.is_empty() {
            return Ok(());
        }
        let flow = self.name.clone().unwrap_or_else(|| format!("{} -> {}", self.from, self.to));
        if times.len() != self.paths {
            return Err(format!(
                "flow {flow}: path_times has {} entries for {} paths (one per path)",
                times.len(),
                self.paths
            ));
        }
        if let Some(w) = times.windows(2).find(|w| w[1] < w[0]) {
            return Err(format!(
                "flow {flow}: path_times must not decrease ({} after {})",
                w[1], w[0]
            ));
        }
        if times[0] > self.connect_at() {
            return Err(format!(
                "flow {flow}: path_times[0] = {} is after the handshake at {}; path 0 opens with \
                 the connection",
                times[0],
                self.connect_at()
            ));
        }
        Ok(())
    }
}

/// Generators of many flows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Workload {
    /// Every `interval`, each sender starts one flow of `bytes` to `receiver`, `stagger` apart.
    Incast {
        /// Senders (default: every host but the receiver).
        #[serde(default)]
        senders: Vec<String>,
        /// The receiver.
        receiver: String,
        /// How many of the senders take part (default all).
        #[serde(default)]
        k: Option<usize>,
        /// Flow size.
        #[serde(deserialize_with = "de_bytes")]
        bytes: u64,
        /// Rounds.
        #[serde(default = "one")]
        rounds: usize,
        /// Time between rounds.
        #[serde(default = "default_round")]
        interval: Dur,
        /// Time between the flows of one round.
        #[serde(default)]
        stagger: Dur,
        /// First round.
        #[serde(default)]
        start: Dur,
        /// Paths per flow.
        #[serde(default = "one")]
        paths: usize,
        /// Controller.
        #[serde(default)]
        controller: Option<ControllerSpec>,
    },
    /// Jobs: an aggregator sends `request_bytes` to each of its workers, each answers
    /// `response_bytes`; a job completes when the aggregator has read every answer. `parallel`
    /// job slots: in the open loop each starts a job every `interval`; in the closed loop
    /// (`closed_loop`) each starts its next job `gap` after its previous one completed. The
    /// hosts are written (`aggregator` and a list of `workers`) or drawn per job from `hosts`
    /// (`workers` a number), from the run's seed.
    PartitionAggregate {
        /// The aggregator (default: each job draws its own; needs a number of `workers`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        aggregator: Option<String>,
        /// Workers: a list of hosts, every job's, or how many distinct hosts each job draws.
        workers: Workers,
        /// The hosts a job draws its aggregator and workers from (default all); only with a
        /// number of `workers`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        hosts: Vec<String>,
        /// Request size.
        #[serde(default = "default_request", deserialize_with = "de_bytes")]
        request_bytes: u64,
        /// Answer size.
        #[serde(deserialize_with = "de_bytes")]
        response_bytes: u64,
        /// Jobs per slot: the open loop's batches (default [`Workload::OPEN_LOOP_JOBS`]); the
        /// most a closed-loop slot starts (default: as many as the run's end lets it, up to
        /// what the others leave of [`crate::expand::MAX_FLOWS`] flows).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        jobs: Option<usize>,
        /// Job slots (jobs started together in the open loop).
        #[serde(default = "one")]
        parallel: usize,
        /// Open loop: time between batches.
        #[serde(default = "default_round")]
        interval: Dur,
        /// Each slot starts its next job when its previous one has completed (every answer
        /// read), instead of every `interval`; its jobs' connections are made as they start.
        #[serde(default, skip_serializing_if = "is_false")]
        closed_loop: bool,
        /// Closed loop: from a job's completion to its slot's next job.
        #[serde(default, skip_serializing_if = "is_zero")]
        gap: Dur,
        /// First batch.
        #[serde(default)]
        start: Dur,
        /// Paths per connection.
        #[serde(default = "one")]
        paths: usize,
        /// Controller.
        #[serde(default)]
        controller: Option<ControllerSpec>,
    },
    /// Short flows of `bytes` between random distinct hosts (or from random hosts to
    /// `receiver`), Poisson arrivals at `rate` per second, from `start` to `stop`.
    Poisson {
        /// Hosts to pick from (default all).
        #[serde(default)]
        hosts: Vec<String>,
        /// Every flow to this host, from a random other one of `hosts` (default: a random
        /// destination too).
        #[serde(default)]
        receiver: Option<String>,
        /// Arrivals per second.
        rate: f64,
        /// Flow size: one size, or a distribution each flow draws from ([`FlowSize`]).
        bytes: FlowSize,
        /// First possible arrival.
        #[serde(default)]
        start: Dur,
        /// No arrivals after this.
        stop: Dur,
        /// Paths per flow.
        #[serde(default = "one")]
        paths: usize,
        /// Controller.
        #[serde(default)]
        controller: Option<ControllerSpec>,
        /// Run the handshake at the arrival (default true for short flows).
        #[serde(default = "yes")]
        handshake_at_start: bool,
        /// The flows' group (default `poisson<i>`, `i` the workload's index).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    /// The papers' permutation traffic matrix: each of the hosts sends one flow to another and
    /// receives one, the pairing a random derangement drawn from the seed.
    Permutation(Pairing),
    /// The XMP paper's Random pattern: each of the hosts sends one flow to a random other host
    /// drawn from the seed, uniformly among those that receive fewer than `max_in` so far.
    Random(Pairing),
    /// An open-loop on/off source of datagrams (simulator only): no flow, no congestion
    /// control.
    Bursts(BurstSpec),
}

/// One flow from each of a set of hosts to another of them, bulk (or of `bytes`) from `start` to
/// `stop`: the pairing of a [`Workload::Permutation`] or a [`Workload::Random`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Pairing {
    /// Hosts to pair (default all).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Flow size (default: bulk until `stop` or the run's end).
    #[serde(default, deserialize_with = "de_bytes_opt")]
    pub bytes: Option<u64>,
    /// Start.
    #[serde(default)]
    pub start: Dur,
    /// Stop sending (default: the run's end).
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Paths per flow.
    #[serde(default = "one")]
    pub paths: usize,
    /// Controller.
    #[serde(default)]
    pub controller: Option<ControllerSpec>,
    /// The flows' group (default `permutation<i>` or `random<i>`, `i` the workload's index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Random only: the most flows one host receives (the XMP paper's 4; default: no bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in: Option<usize>,
    /// Name each flow's group `<group>-inner-rack`, `<group>-inter-rack` or `<group>-inter-pod`
    /// by where its two hosts sit in a fat tree (the XMP paper's Fig. 8 categories).
    #[serde(default, skip_serializing_if = "is_false")]
    pub by_location: bool,
}

impl Pairing {
    /// The fat tree's arity when the flows are grouped by location (`None` when they are not),
    /// or why the topology cannot say where hosts sit.
    pub fn location_arity(&self, topology: &Topology) -> Result<Option<usize>, String> {
        match (self.by_location, topology) {
            (false, _) => Ok(None),
            (true, Topology::FatTree { k, .. }) => Ok(Some(*k)),
            (true, _) => Err("needs a fat-tree topology: racks and pods are a fat tree's".into()),
        }
    }
}

/// An open-loop, unresponsive on/off source, as a traffic generator (MGEN) makes one: while a
/// burst is on, `from` sends `rate` of datagrams of `packet` bytes to `to` at constant spacing,
/// whatever they meet; off, nothing. On and off periods alternate from `start`, an off period
/// first, their lengths drawn from the run's seed. The datagrams are not ECN-capable, so a
/// full queue drops them and a marker leaves them alone; the receiver counts and discards them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BurstSpec {
    /// Its name in results (default `bursts<i>`, `i` the workload's index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The sending host.
    pub from: String,
    /// The receiving host.
    pub to: String,
    /// The sender's address the datagrams leave from (so its link), counted from 0.
    #[serde(default)]
    pub from_addr: usize,
    /// The receiver's address they go to (so the link into it), counted from 0.
    #[serde(default)]
    pub to_addr: usize,
    /// The sending rate while a burst is on (wire bytes: IP and UDP headers included).
    pub rate: Rate,
    /// The mean length of a burst.
    pub on_mean: Dur,
    /// The mean gap from a burst's end to the next one's start.
    pub off_mean: Dur,
    /// How burst lengths are drawn (default Pareto).
    #[serde(default = "Spread::pareto")]
    pub on_dist: Spread,
    /// How gaps are drawn (default exponential: bursts at random times).
    #[serde(default = "Spread::exponential")]
    pub off_dist: Spread,
    /// The Pareto shape, > 1 so that the mean exists (default 1.5: heavy-tailed, infinite
    /// variance, the usual reading of "Pareto on/off" traffic).
    #[serde(default = "BurstSpec::default_shape")]
    pub shape: f64,
    /// When the first gap begins.
    #[serde(default)]
    pub start: Dur,
    /// When the source stops, a burst on then cut short (default: the run's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Dur>,
    /// UDP payload of each datagram, bytes (default: the transport's `mtu`, so a datagram is
    /// as long on the wire as a full QUIC packet).
    #[serde(default, deserialize_with = "de_bytes_opt", skip_serializing_if = "Option::is_none")]
    pub packet: Option<u64>,
}

impl BurstSpec {
    /// The default Pareto shape.
    pub const SHAPE: f64 = 1.5;

    fn default_shape() -> f64 {
        Self::SHAPE
    }
}

/// How a burst source draws the lengths of its on or off periods, each of a given mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spread {
    /// Every period the mean.
    Fixed,
    /// Exponential (memoryless: periods that begin at random times).
    Exponential,
    /// Pareto of the source's `shape` (heavy-tailed: mostly short, a few very long).
    Pareto,
}

impl Spread {
    fn pareto() -> Spread {
        Spread::Pareto
    }
    fn exponential() -> Spread {
        Spread::Exponential
    }
}

impl Workload {
    /// An open-loop partition-aggregate workload's batches when it writes no `jobs`.
    pub const OPEN_LOOP_JOBS: usize = 1;
}

/// A partition-aggregate workload's workers.
///
/// Written as a list of hosts (`["h1", "h2"]`), the same for every job, or as a number (`8`):
/// each job draws that many distinct hosts of the workload's `hosts`, other than its aggregator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "workers is a list of hosts ([\"h1\", \"h2\"]) or how many each job draws (8)"
)]
pub enum Workers {
    /// These hosts answer every job.
    Hosts(Vec<String>),
    /// Each job draws this many.
    Count(usize),
}

fn yes() -> bool {
    true
}
fn default_round() -> Dur {
    Dur::ms(1000)
}
fn default_request() -> u64 {
    2048
}

/// QUIC settings for every connection.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TransportSettings {
    /// UDP payload size of full packets (the papers' MSS). The simulator's only: the
    /// testbed's processes send what noq sends over a veth (1452-byte datagrams).
    pub mtu: u16,
    /// RTT assumed before the first sample (the simulator's only; the CLI keeps noq's).
    pub initial_rtt: Dur,
    /// Connection and stream receive windows, and the send buffer, bytes. The testbed gives a
    /// window other than this default to every mpquic process as `--receive-window`; at the
    /// default it keeps the CLI's (noq's 1.25 MB per stream), since a timed send stopped at a
    /// run's end first delivers all the window let it buffer.
    pub window: u64,
    /// ACK shaping for ECN, parsed when the file is read ([`EcnPrecision`]): `auto` (GSO
    /// batches, the stack's ACKs; counts are exact either way) or `per-packet` (GSO off, an ACK
    /// per packet; `exact` is its old name, `batched` the old name of `auto`).
    pub ecn: EcnPrecision,
    /// The mpquic packet scheduler over the coupled controller: `stack`, `lowest-rtt`,
    /// `round-robin`, `ecf`, or a name the program registered (`mpquic_choice::register_scheduler`)
    /// (mpquic-cc controllers only), parsed when the file is read ([`Scheduler`]).
    pub scheduler: Scheduler,
    /// The data-center ACK profile: the `max_ack_delay` each end asks its peer to use (QUIC's
    /// ACK frequency extension, which noq implements: an ACK_FREQUENCY frame after the
    /// handshake), e.g. `"1ms"`. The probe timeout adds the peer's max_ack_delay, so noq's
    /// default of 25 ms puts a ~26 ms floor under it at data-center RTTs. noq bounds it to
    /// 1 ms (its min_ack_delay, the timer granularity) ..= 25 ms. Absent (the default): the
    /// transport's own 25 ms. The ack-delay exponent is not a knob in noq (fixed at 3, and it
    /// only sets the precision of the reported delay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ack_delay: Option<Dur>,
    /// Packet protection and handshake: the simulator's null suite (deterministic) or real
    /// TLS 1.3 (to measure what crypto costs; not deterministic).
    pub crypto: CryptoSuite,
}

/// How connections protect packets in the simulator.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CryptoSuite {
    /// `crate::crypto`'s clear-text handshake and 16-byte tags: packets keep their real size,
    /// nothing is spent on ciphers, and runs are byte-for-byte repeatable.
    #[default]
    Null,
    /// rustls (ring) TLS 1.3 with a self-signed certificate, AES-GCM and header protection, as
    /// the library runs. Key material comes from the operating system's randomness, so runs
    /// are not repeatable.
    Tls,
}

impl Default for TransportSettings {
    fn default() -> Self {
        TransportSettings {
            mtu: 1400,
            initial_rtt: Dur::ms(1),
            window: 8 << 20,
            ecn: EcnPrecision::default(),
            scheduler: Scheduler::default(),
            max_ack_delay: None,
            crypto: CryptoSuite::Null,
        }
    }
}

/// What is recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSettings {
    /// Queue-length sampling period of monitored links.
    pub queue_sample: Dur,
    /// Keep a time series of the queue samples (for plots), at most this many points per link.
    pub queue_series_points: usize,
    /// Window-trace sampling period (per path of each flow's client).
    pub trace_interval: Dur,
    /// Bucket width of the goodput time series.
    pub goodput_interval: Dur,
    /// End the run once every sized flow has completed and no bulk flow is running.
    pub stop_when_done: bool,
    /// Per-round controller notices (alpha updates, window reductions) kept per flow for
    /// `traces.json`; episodes (suppress/release/eliminate...) are always kept.
    pub notice_limit: usize,
}

impl Default for OutputSettings {
    fn default() -> Self {
        OutputSettings {
            queue_sample: Dur::us(10),
            queue_series_points: 5000,
            trace_interval: Dur::us(100),
            goodput_interval: Dur::ms(1),
            stop_when_done: true,
            notice_limit: 100_000,
        }
    }
}

/// Switch routing: how a switch picks among equal-cost next hops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Routing {
    /// Always the first of the equal-cost links (in link order).
    Static,
    /// Hash of (source address, source port, destination address, destination port).
    #[default]
    Ecmp,
}

/// The link parameters of some directions that differ from `[link]` and the topology's own
/// settings: the egress of node `from` (toward `to` only, if given), e.g. a slow, long path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    /// The node whose egress it is.
    pub from: String,
    /// Only the direction toward this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The parameters that differ.
    #[serde(flatten)]
    pub config: LinkConfig,
}

impl LinkOverride {
    /// Whether this override is about the direction `from -> to`.
    pub fn matches(&self, from: &str, to: &str) -> bool {
        self.from == from && self.to.as_deref().is_none_or(|t| t == to)
    }
}

/// How the netns testbed scales a scenario written at data-center scale down to what veths,
/// qdiscs and two cores carry (the simulator ignores this section). Every factor multiplies.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NetnsSettings {
    /// Link rates (e.g. 0.01: 10 Gbps becomes 100 Mbit/s).
    pub rate_scale: f64,
    /// Times: the duration, flow starts and stops, workload intervals and staggers, delays.
    pub time_scale: f64,
    /// Flow and answer sizes.
    pub size_scale: f64,
    /// Bytes per packet where a queue amount is given in packets (an Ethernet frame of a full
    /// QUIC packet).
    pub frame_bytes: u64,
    /// Segmentation offload (GSO/TSO) on the senders: batches cross the marker as one skb.
    pub sender_offload: bool,
    /// Queue sampling and marker resync period (`output.queue_sample` is the simulator's).
    pub sample_interval: Dur,
    /// Fields only the testbed sets, as dotted paths like a sweep's `set`
    /// (`"flows.*.bytes" = "8MB"`, `"link.k" = 20`), applied after the sweep.
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub set: toml::Table,
}

impl Default for NetnsSettings {
    fn default() -> Self {
        NetnsSettings {
            rate_scale: 1.0,
            time_scale: 1.0,
            size_scale: 1.0,
            frame_bytes: 1514,
            sender_offload: false,
            sample_interval: Dur::ms(1),
            set: toml::Table::new(),
        }
    }
}

/// A whole experiment: one scenario, and the sweep axes, seeds and report around it. Each run
/// is a [`Scenario`] with the axes' values set and one seed (see [`crate::Experiment`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// This run's seed of every random choice (set from `seeds`; not written in files).
    #[serde(skip_deserializing, default = "default_seed")]
    pub seed: u64,
    /// Repetitions: one run per seed (testbed: per repetition) for every sweep point.
    #[serde(default = "default_seeds", skip_serializing)]
    pub seeds: Vec<u64>,
    /// Time to run (virtual time in the simulator, a hard limit in the testbed).
    pub duration: Dur,
    /// Default controller of flows and workloads that name none (`"amp:beta=4"`).
    #[serde(default = "default_controller")]
    pub controller: ControllerSpec,
    /// Switch routing.
    #[serde(default)]
    pub routing: Routing,
    /// Default link parameters; each field left out is the papers' (10 Gbps / 2 us / 100
    /// packets / K = 10 / no loss).
    #[serde(default = "LinkConfig::paper_default", deserialize_with = "over_paper_default")]
    pub link: LinkConfig,
    /// Per-direction exceptions to `link`, applied in order over the topology's own settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_overrides: Vec<LinkOverride>,
    /// Host egress queue size in packets (host links never mark).
    #[serde(default = "default_host_buffer")]
    pub host_buffer: usize,
    /// What a host's egress queue is (simulator): a host's qdisc (`host_buffer`, no marking) or
    /// a switch port's (the link's buffer and K, as ns-3 puts one queue discipline on every
    /// device, the papers' simulators' hosts included). The testbed's hosts keep their own.
    #[serde(default, skip_serializing_if = "HostEgress::is_qdisc")]
    pub host_egress: HostEgress,
    /// Receive-processing jitter of hosts: each datagram reaches its endpoint after an extra
    /// uniform random delay in `[0, host_jitter)`, in arrival order per host (default 0: none).
    /// Real hosts have microseconds of it; without any, ACK-clocked flows travel as unbroken
    /// per-flow packet trains and lock into phase patterns (see the DCTCP fairness test).
    #[serde(default)]
    pub host_jitter: Dur,
    /// Timer resolution of hosts (simulator): an endpoint's timer wake-ups (pacing, ACK delay,
    /// loss detection) come at the next tick of this period, each endpoint's ticks at its own
    /// phase drawn from the run's seed (default 0: at the deadline). A real host's runtime
    /// wakes on a coarser clock (tokio's timers tick every millisecond), so a paced sender
    /// there releases what the pacer allows once a tick, in bursts; arriving packets still
    /// wake an endpoint at once, as they do on a host. The testbed's hosts have their own.
    #[serde(default, skip_serializing_if = "Dur::is_zero")]
    pub host_timer_granularity: Dur,
    /// Flow start spread: every flow (written or generated) starts later by a uniform random
    /// `[0, start_spread)` drawn from the run's seed, the same draw in both backends. What the
    /// papers vary between repetitions; without it, seeds differ only by jitter and ECMP
    /// (default 0: flows start when written).
    #[serde(default, skip_serializing_if = "Dur::is_zero")]
    pub start_spread: Dur,
    /// QUIC settings.
    #[serde(default)]
    pub transport: TransportSettings,
    /// The network.
    pub topology: Topology,
    /// Explicit flows.
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// Flow generators.
    #[serde(default)]
    pub workloads: Vec<Workload>,
    /// Recording.
    #[serde(default)]
    pub output: OutputSettings,
    /// The testbed's scaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<NetnsSettings>,
    /// Sweep axes: every combination of their values is one point (first axis slowest).
    #[serde(default, skip_serializing)]
    pub sweep: Vec<Axis>,
    /// Points left out of the sweep: each entry names axis values (`{ controller = "dctcp",
    /// paths = 6 }`); a point with all of one entry's values is not run.
    #[serde(default, skip_serializing)]
    pub skip: Vec<toml::Table>,
    /// What to compute per run and tabulate.
    #[serde(default, skip_serializing)]
    pub report: Option<ReportSpec>,
    /// The sweep plot.
    #[serde(default, skip_serializing)]
    pub plot: Option<PlotSpec>,
}

fn over_paper_default<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LinkConfig, D::Error> {
    LinkConfig::deserialize(d).map(|l| l.or(&LinkConfig::paper_default()))
}

/// The library's default controller (`mpquic_choice::Congestion::default()`, AMP), as the CLI's: one
/// default everywhere.
fn default_controller() -> ControllerSpec {
    ControllerSpec::from(Congestion::default().name())
}
fn default_host_buffer() -> usize {
    10_000
}
fn default_seed() -> u64 {
    1
}
fn default_seeds() -> Vec<u64> {
    vec![1]
}

impl Scenario {
    /// A scenario with the given topology, paper link defaults and no flows.
    pub fn new(name: &str, duration: Dur, topology: Topology) -> Scenario {
        Scenario {
            name: name.into(),
            seed: 1,
            seeds: default_seeds(),
            duration,
            controller: default_controller(),
            routing: Routing::Ecmp,
            link: LinkConfig::paper_default(),
            link_overrides: vec![],
            host_buffer: default_host_buffer(),
            host_egress: HostEgress::Qdisc,
            host_jitter: Dur(0),
            host_timer_granularity: Dur(0),
            start_spread: Dur(0),
            transport: TransportSettings::default(),
            topology,
            flows: vec![],
            workloads: vec![],
            output: OutputSettings::default(),
            netns: None,
            sweep: vec![],
            skip: vec![],
            report: None,
            plot: None,
        }
    }

    /// Every link configuration the scenario writes, with its dotted place (`link`,
    /// `link_overrides.0`, `topology.links.2`, `topology.access`, ...): where a key such as
    /// `down_at` may be set.
    pub fn written_links(&self) -> Vec<(String, &LinkConfig)> {
        let mut out = vec![("link".to_owned(), &self.link)];
        let overrides = self.link_overrides.iter().enumerate();
        out.extend(overrides.map(|(i, o)| (format!("link_overrides.{i}"), &o.config)));
        let topology = |key: &str| format!("topology.{key}");
        match &self.topology {
            Topology::Custom { links, .. } => out.extend(
                links.iter().enumerate().map(|(i, l)| (topology(&format!("links.{i}")), &l.config)),
            ),
            Topology::ManyToOne { access, bottleneck, .. } => {
                out.push((topology("access"), access));
                out.push((topology("bottleneck"), bottleneck));
            }
            Topology::Dumbbell { bottleneck, .. } => out.push((topology("bottleneck"), bottleneck)),
            Topology::TwoPath { access, .. } => out.push((topology("access"), access)),
            Topology::Vl2 { access, fabric, .. } => {
                out.push((topology("access"), access));
                out.push((topology("fabric"), fabric));
            }
            Topology::Bcube { server, ports, .. } => {
                out.push((topology("server"), server));
                out.push((topology("ports"), ports));
            }
            Topology::FatTree { .. } => {}
        }
        out
    }

    /// The parameters of the direction `from -> to` whose link sets `own` over `[link]`:
    /// `own`, then the matching overrides in order, then `[link]` for what is still unset.
    pub fn link_for(&self, from: &str, to: &str, own: &LinkConfig) -> LinkConfig {
        let mut config = own.clone();
        for o in self.link_overrides.iter().filter(|o| o.matches(from, to)) {
            config = o.config.or(&config);
        }
        config.or(&self.link)
    }
}
