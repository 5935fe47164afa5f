//! Scenarios as data: a topology, link defaults, flows and workload generators, read from TOML.
//!
//! The topology format is a list of hosts (with a number of addresses), switches and
//! bidirectional links between named nodes, the same shape a netns testbed builds (namespaces,
//! veth pairs, addresses, shaped egress queues). The standard shapes (many-to-one, dumbbell,
//! two-path, fat-tree) are generators that expand into that list.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::net::{Ps, Routing, PS_PER_US};

/// A scenario could not be read or makes no sense.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// TOML syntax or field error.
    #[error("scenario: {0}")]
    Toml(#[from] toml::de::Error),
    /// Semantic error (unknown node, bad parameter).
    #[error("scenario: {0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid(msg.into())
}

/// A duration in virtual time, written `"2us"`, `"1.5ms"`, `"1s"`, `"500ns"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Ps);

impl Dur {
    /// From microseconds.
    pub const fn us(us: u64) -> Dur {
        Dur(us * PS_PER_US)
    }
    /// From milliseconds.
    pub const fn ms(ms: u64) -> Dur {
        Dur(ms * 1000 * PS_PER_US)
    }
    /// In seconds.
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e12
    }
}

fn split_unit(s: &str) -> (&str, &str) {
    let idx = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    (s[..idx].trim(), s[idx..].trim())
}

impl FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = split_unit(s.trim());
        let x: f64 = num.replace('_', "").parse().map_err(|_| format!("bad duration `{s}`"))?;
        let scale = match unit {
            "ps" => 1.0,
            "ns" => 1e3,
            "us" | "µs" => 1e6,
            "ms" => 1e9,
            "s" => 1e12,
            _ => return Err(format!("bad duration unit in `{s}` (ns, us, ms, s)")),
        };
        Ok(Dur((x * scale).round() as Ps))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps.is_multiple_of(1_000_000_000_000) {
            write!(f, "{}s", ps / 1_000_000_000_000)
        } else if ps.is_multiple_of(1_000_000_000) {
            write!(f, "{}ms", ps / 1_000_000_000)
        } else if ps.is_multiple_of(1_000_000) {
            write!(f, "{}us", ps / 1_000_000)
        } else {
            write!(f, "{}ns", ps as f64 / 1000.0)
        }
    }
}

/// Serde through the text form (`FromStr` / `Display`), as scenario files write the value.
macro_rules! serde_as_text {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}

serde_as_text!(Dur, Rate);

/// A link rate, written `"10Gbps"`, `"100Mbps"`, `"1.5Gbps"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rate(pub u64);

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = split_unit(s.trim());
        let x: f64 = num.replace('_', "").parse().map_err(|_| format!("bad rate `{s}`"))?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "bps" => 1.0,
            "kbps" => 1e3,
            "mbps" => 1e6,
            "gbps" => 1e9,
            _ => return Err(format!("bad rate unit in `{s}` (bps, Kbps, Mbps, Gbps)")),
        };
        let bps = (x * scale).round() as u64;
        if bps == 0 {
            return Err(format!("rate `{s}` must be positive"));
        }
        Ok(Rate(bps))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1_000_000_000) {
            write!(f, "{}Gbps", self.0 / 1_000_000_000)
        } else if self.0.is_multiple_of(1_000_000) {
            write!(f, "{}Mbps", self.0 / 1_000_000)
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}

/// Link parameters; every field may be left out to take the scenario's default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Rate.
    pub rate: Option<Rate>,
    /// Propagation delay.
    pub delay: Option<Dur>,
    /// Buffer in packets.
    pub buffer: Option<usize>,
    /// ECN marking threshold K in packets; `0` disables marking on this link.
    pub ecn_k: Option<usize>,
    /// Random loss probability.
    pub loss: Option<f64>,
}

impl LinkConfig {
    /// `self` with unset fields taken from `base`.
    pub fn or(&self, base: &LinkConfig) -> LinkConfig {
        LinkConfig {
            rate: self.rate.or(base.rate),
            delay: self.delay.or(base.delay),
            buffer: self.buffer.or(base.buffer),
            ecn_k: self.ecn_k.or(base.ecn_k),
            loss: self.loss.or(base.loss),
        }
    }

    /// The papers' data-center link: 10 Gbps, 2 us, 100 packets, K = 10, no loss.
    pub fn paper_default() -> LinkConfig {
        LinkConfig {
            rate: Some(Rate(10_000_000_000)),
            delay: Some(Dur::us(2)),
            buffer: Some(100),
            ecn_k: Some(10),
            loss: Some(0.0),
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
}

/// One flow: a QUIC connection from `from` (client, sends `bytes`) to `to` (server, answers
/// `response_bytes`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Name in results (default `flow<i>`).
    #[serde(default)]
    pub name: Option<String>,
    /// Group for aggregate statistics (e.g. `"dctcp"`, `"incast"`).
    #[serde(default)]
    pub group: Option<String>,
    /// Client host.
    pub from: String,
    /// Server host.
    pub to: String,
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
    /// Controller: `newreno`, `cubic` (the stack's own, uncoupled per path) or an mpquic-cc name.
    #[serde(default)]
    pub controller: Option<String>,
    /// When the client starts sending.
    #[serde(default)]
    pub start: Dur,
    /// When a bulk flow stops sending (default: the end of the run).
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Bytes the client sends; absent = bulk (until `stop`).
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Bytes the server answers once it has the whole request.
    #[serde(default)]
    pub response_bytes: u64,
    /// Run the handshake at `start` (counted in the FCT) instead of at time 0.
    #[serde(default)]
    pub handshake_at_start: bool,
    /// Job id (partition/aggregate), for job completion times.
    #[serde(default, skip_deserializing)]
    pub job: Option<usize>,
}

impl FlowSpec {
    /// A bulk flow with defaults.
    pub fn bulk(from: &str, to: &str) -> FlowSpec {
        FlowSpec {
            name: None,
            group: None,
            from: from.into(),
            to: to.into(),
            from_addr: 0,
            to_addr: 0,
            paths: 1,
            path_times: vec![],
            controller: None,
            start: Dur(0),
            stop: None,
            bytes: None,
            response_bytes: 0,
            handshake_at_start: false,
            job: None,
        }
    }

    /// When the connection (and so its path 0) is made: `start` with `handshake_at_start`,
    /// else time 0.
    pub fn connect_at(&self) -> Dur {
        if self.handshake_at_start {
            self.start
        } else {
            Dur(0)
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
        controller: Option<String>,
    },
    /// Jobs: the aggregator sends `request_bytes` to each worker, each answers
    /// `response_bytes`; `parallel` jobs start every `interval`.
    PartitionAggregate {
        /// The aggregator.
        aggregator: String,
        /// Workers.
        workers: Vec<String>,
        /// Request size.
        #[serde(default = "default_request")]
        request_bytes: u64,
        /// Answer size.
        response_bytes: u64,
        /// Number of job batches.
        #[serde(default = "one")]
        jobs: usize,
        /// Jobs started together.
        #[serde(default = "one")]
        parallel: usize,
        /// Time between batches.
        #[serde(default = "default_round")]
        interval: Dur,
        /// First batch.
        #[serde(default)]
        start: Dur,
        /// Paths per connection.
        #[serde(default = "one")]
        paths: usize,
        /// Controller.
        #[serde(default)]
        controller: Option<String>,
    },
    /// Short flows of `bytes` between random distinct hosts, Poisson arrivals at `rate` per
    /// second, from `start` to `stop`.
    Poisson {
        /// Hosts to pick from (default all).
        #[serde(default)]
        hosts: Vec<String>,
        /// Arrivals per second.
        rate: f64,
        /// Flow size.
        bytes: u64,
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
        controller: Option<String>,
        /// Run the handshake at the arrival (default true for short flows).
        #[serde(default = "yes")]
        handshake_at_start: bool,
    },
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
    /// UDP payload size of full packets (the papers' MSS).
    pub mtu: u16,
    /// RTT assumed before the first sample.
    pub initial_rtt: Dur,
    /// Connection and stream receive windows, and the send buffer, bytes.
    pub window: u64,
    /// ACK shaping for ECN (the mpquic library's `EcnPrecision`): `auto` (GSO batches, the
    /// stack's ACKs; counts are exact either way) or `per-packet` (GSO off, an ACK per packet;
    /// `exact` is its old name, `batched` the old name of `auto`).
    pub ecn: String,
    /// The mpquic packet scheduler over the coupled controller: `stack`, `lowest-rtt`,
    /// `round-robin` (mpquic-cc controllers only).
    pub scheduler: String,
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
            ecn: "auto".into(),
            scheduler: "stack".into(),
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

/// A whole experiment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Seed of every random choice.
    #[serde(default)]
    pub seed: u64,
    /// Virtual time to run.
    pub duration: Dur,
    /// Default controller of flows that name none.
    #[serde(default = "default_controller")]
    pub controller: String,
    /// Switch routing.
    #[serde(default)]
    pub routing: Routing,
    /// Default link parameters (the papers' 10 Gbps / 2 us / 100 packets / K = 10).
    #[serde(default = "LinkConfig::paper_default")]
    pub link: LinkConfig,
    /// Host egress queue size in packets (host links never mark).
    #[serde(default = "default_host_buffer")]
    pub host_buffer: usize,
    /// Receive-processing jitter of hosts: each datagram reaches its endpoint after an extra
    /// uniform random delay in `[0, host_jitter)`, in arrival order per host (default 0: none).
    /// Real hosts have microseconds of it; without any, ACK-clocked flows travel as unbroken
    /// per-flow packet trains and lock into phase patterns (see the DCTCP fairness test).
    #[serde(default)]
    pub host_jitter: Dur,
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
}

fn default_controller() -> String {
    "newreno".into()
}
fn default_host_buffer() -> usize {
    10_000
}

impl Scenario {
    /// Parse TOML.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text)?;
        Ok(s)
    }

    /// A scenario with the given topology, paper link defaults and no flows.
    pub fn new(name: &str, duration: Dur, topology: Topology) -> Scenario {
        Scenario {
            name: name.into(),
            seed: 1,
            duration,
            controller: default_controller(),
            routing: Routing::Ecmp,
            link: LinkConfig::paper_default(),
            host_buffer: default_host_buffer(),
            host_jitter: Dur(0),
            transport: TransportSettings::default(),
            topology,
            flows: vec![],
            workloads: vec![],
            output: OutputSettings::default(),
        }
    }
}

/// A topology expanded to hosts, switches and links.
#[derive(Debug, Clone)]
pub struct Expanded {
    /// Hosts.
    pub hosts: Vec<HostSpec>,
    /// Switches.
    pub switches: Vec<String>,
    /// Links.
    pub links: Vec<LinkSpec>,
}

fn link(a: &str, b: &str, config: LinkConfig, monitor: bool) -> LinkSpec {
    LinkSpec { a: a.into(), b: b.into(), config, monitor, monitor_reverse: false, host_queue: None }
}

impl Topology {
    /// Expand a standard shape into hosts, switches and links.
    pub fn expand(&self) -> Result<Expanded, ScenarioError> {
        let d = LinkConfig::default;
        Ok(match self {
            Topology::Custom { hosts, switches, links } => {
                Expanded { hosts: hosts.clone(), switches: switches.clone(), links: links.clone() }
            }
            Topology::ManyToOne { senders, sender_addrs, receiver_addrs, access, bottleneck } => {
                let mut hosts: Vec<HostSpec> = (0..*senders)
                    .map(|i| HostSpec { name: format!("s{i}"), addrs: *sender_addrs })
                    .collect();
                hosts.push(HostSpec { name: "r".into(), addrs: *receiver_addrs });
                let mut links: Vec<LinkSpec> = (0..*senders)
                    .map(|i| link(&format!("s{i}"), "sw", access.clone(), false))
                    .collect();
                let mut b = link("sw", "r", bottleneck.clone(), true);
                b.host_queue = Some(false);
                links.push(b);
                Expanded { hosts, switches: vec!["sw".into()], links }
            }
            Topology::Dumbbell { pairs, addrs, bottleneck } => {
                let mut hosts = vec![];
                let mut links = vec![];
                for side in ["l", "r"] {
                    for i in 0..*pairs {
                        let name = format!("{side}{i}");
                        hosts.push(HostSpec { name: name.clone(), addrs: *addrs });
                        links.push(link(&name, &format!("s{side}"), d(), false));
                    }
                }
                let mut b = link("sl", "sr", bottleneck.clone(), true);
                b.monitor_reverse = true;
                links.push(b);
                Expanded { hosts, switches: vec!["sl".into(), "sr".into()], links }
            }
            Topology::TwoPath { cross_hosts, access } => {
                let mut hosts = vec![
                    HostSpec { name: "src".into(), addrs: 2 },
                    HostSpec { name: "dst".into(), addrs: 2 },
                ];
                let mut links = vec![
                    link("src", "a", access.clone(), false),
                    link("src", "b", access.clone(), false),
                    link("dst", "a", d(), false),
                    link("dst", "b", d(), false),
                ];
                // Bottlenecks a -> dst and b -> dst are the reverse direction of dst's links.
                links[2].monitor_reverse = true;
                links[3].monitor_reverse = true;
                for sw in ["a", "b"] {
                    for i in 0..*cross_hosts {
                        let name = format!("x{sw}{i}");
                        hosts.push(HostSpec { name: name.clone(), addrs: 1 });
                        links.push(link(&name, sw, access.clone(), false));
                    }
                }
                Expanded { hosts, switches: vec!["a".into(), "b".into()], links }
            }
            Topology::FatTree { k, addrs } => {
                if *k < 2 || k % 2 != 0 {
                    return Err(invalid(format!("fat-tree k must be even and >= 2, not {k}")));
                }
                let h = k / 2;
                let mut hosts = vec![];
                let mut switches = vec![];
                let mut links = vec![];
                for c in 0..h * h {
                    switches.push(format!("c{c}"));
                }
                for p in 0..*k {
                    for i in 0..h {
                        switches.push(format!("e{p}_{i}"));
                        switches.push(format!("a{p}_{i}"));
                    }
                    for e in 0..h {
                        for a in 0..h {
                            links.push(link(
                                &format!("e{p}_{e}"),
                                &format!("a{p}_{a}"),
                                d(),
                                false,
                            ));
                        }
                        for j in 0..h {
                            let name = format!("h{}", (p * h + e) * h + j);
                            hosts.push(HostSpec { name: name.clone(), addrs: *addrs });
                            let mut l = link(&name, &format!("e{p}_{e}"), d(), false);
                            l.monitor_reverse = true;
                            links.push(l);
                        }
                    }
                    for a in 0..h {
                        for j in 0..h {
                            links.push(link(
                                &format!("a{p}_{a}"),
                                &format!("c{}", a * h + j),
                                d(),
                                false,
                            ));
                        }
                    }
                }
                Expanded { hosts, switches, links }
            }
        })
    }
}

/// Expand workloads into flows, using the scenario seed for random choices.
pub fn expand_workloads(
    scenario: &Scenario,
    hosts: &[HostSpec],
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let mut flows = scenario.flows.clone();
    let all: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    for (w, workload) in scenario.workloads.iter().enumerate() {
        match workload {
            Workload::Incast {
                senders,
                receiver,
                k,
                bytes,
                rounds,
                interval,
                stagger,
                start,
                paths,
                controller,
            } => {
                let senders: Vec<String> = if senders.is_empty() {
                    all.iter().filter(|h| *h != receiver).cloned().collect()
                } else {
                    senders.clone()
                };
                let k = k.unwrap_or(senders.len());
                if k > senders.len() {
                    return Err(invalid(format!("incast k = {k} > {} senders", senders.len())));
                }
                for r in 0..*rounds {
                    for (i, s) in senders.iter().take(k).enumerate() {
                        let mut f = FlowSpec::bulk(s, receiver);
                        f.name = Some(format!("incast{w}-r{r}-{s}"));
                        f.group = Some(format!("incast{w}"));
                        f.bytes = Some(*bytes);
                        f.paths = *paths;
                        f.controller = controller.clone();
                        f.start = Dur(start.0 + r as u64 * interval.0 + i as u64 * stagger.0);
                        f.job = Some(r);
                        flows.push(f);
                    }
                }
            }
            Workload::PartitionAggregate {
                aggregator,
                workers,
                request_bytes,
                response_bytes,
                jobs,
                parallel,
                interval,
                start,
                paths,
                controller,
            } => {
                for batch in 0..*jobs {
                    for j in 0..*parallel {
                        let job = batch * parallel + j;
                        for wk in workers {
                            let mut f = FlowSpec::bulk(aggregator, wk);
                            f.name = Some(format!("pa{w}-job{job}-{wk}"));
                            f.group = Some(format!("pa{w}"));
                            f.bytes = Some(*request_bytes);
                            f.response_bytes = *response_bytes;
                            f.paths = *paths;
                            f.controller = controller.clone();
                            f.start = Dur(start.0 + batch as u64 * interval.0);
                            f.job = Some(job);
                            flows.push(f);
                        }
                    }
                }
            }
            Workload::Poisson {
                hosts: pick,
                rate,
                bytes,
                start,
                stop,
                paths,
                controller,
                handshake_at_start,
            } => {
                let pick = if pick.is_empty() { all.clone() } else { pick.clone() };
                if pick.len() < 2 || *rate <= 0.0 {
                    return Err(invalid("poisson workload needs >= 2 hosts and a positive rate"));
                }
                let mut rng = crate::rng::SimRng::new(scenario.seed, 0x5050_0000 + w as u64);
                let mut t = start.secs();
                let mut n = 0;
                loop {
                    t += rng.exponential(1.0 / rate);
                    if t >= stop.secs() {
                        break;
                    }
                    let a = (rng.next_u64() % pick.len() as u64) as usize;
                    let mut b = (rng.next_u64() % (pick.len() as u64 - 1)) as usize;
                    if b >= a {
                        b += 1;
                    }
                    let mut f = FlowSpec::bulk(&pick[a], &pick[b]);
                    f.name = Some(format!("poisson{w}-{n}"));
                    f.group = Some(format!("poisson{w}"));
                    f.bytes = Some(*bytes);
                    f.paths = *paths;
                    f.controller = controller.clone();
                    f.start = Dur((t * 1e12) as Ps);
                    f.handshake_at_start = *handshake_at_start;
                    flows.push(f);
                    n += 1;
                }
            }
        }
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse() {
        assert_eq!("2us".parse::<Dur>().unwrap(), Dur::us(2));
        assert_eq!("1.5ms".parse::<Dur>().unwrap(), Dur(1_500_000_000));
        assert_eq!("10Gbps".parse::<Rate>().unwrap(), Rate(10_000_000_000));
        assert_eq!(
            "3 parsecs".parse::<Dur>(),
            Err("bad duration unit in `3 parsecs` (ns, us, ms, s)".into())
        );
        assert_eq!(Dur::us(50).to_string(), "50us");
    }

    #[test]
    fn fat_tree_sizes() {
        for (k, hosts, switches) in [(4, 16, 20), (8, 128, 80)] {
            let e = Topology::FatTree { k, addrs: 1 }.expand().unwrap();
            assert_eq!(e.hosts.len(), hosts);
            assert_eq!(e.switches.len(), switches);
            // host-edge + edge-agg + agg-core links: k^3/4 each.
            assert_eq!(e.links.len(), 3 * k * k * k / 4);
        }
    }
}
