//! The runner's plan: the topology, its link parameters, and the flows and jobs to run.
//! `compile.rs` builds it from a point of an experiment file (the shared language); it is the
//! testbed's former scenario dialect, no longer read from files. Its serde form, below, is what
//! each `result.json` records as `scenario` and what the unit tests here write.
//!
//! ```toml
//! name = "two-path-mptcp"
//! duration_s = 5.0            # hard limit per repetition
//! sample_interval_ms = 1      # queue sampling and marker resync period
//! repetitions = 3
//!
//! [topology]
//! kind = "multi-path"         # "multi-path" | "many-to-one" | "fat-tree"
//! paths = 2                   # multi-path: disjoint paths (one router each)
//! addrs_per_link = 1          # multi-path: addresses per host interface (link-sharing paths)
//! cross_hosts = false         # multi-path: one cross-traffic host per path
//! senders = 8                 # many-to-one: sender hosts
//!
//! [link]                      # every bottleneck direction
//! rate_mbit = 100.0
//! k_packets = 20              # ECN marking threshold (instantaneous queue)
//! buffer_bytes = 150000       # FIFO size
//! delay_ms = 0.0              # one-way extra delay of this direction (netem where the kernel
//!                             # has it, else the NFQUEUE delay line, see `delay`)
//! jitter_ms = 0.0             # uniform +- jitter on that delay (<= delay_ms; FIFO, no reordering
//!                             # on the delay line)
//! loss = 0.0                  # random loss probability
//! ecn = true                  # false: plain drop-tail
//! sender_offload = false      # segmentation offload on senders (GSO/TSO batches cross as one skb)
//!
//! [[link_overrides]]          # per-direction exceptions to [link] (heterogeneous paths)
//! from = "r2"                 # the node whose egress it is (multi-path: router r<i> of path i)
//! to = "d"                    # optional: only the direction toward this node
//! rate_mbit = 20.0            # any of rate_mbit, k_packets, buffer_bytes, delay_ms, jitter_ms
//! delay_ms = 40.0
//!
//! [[flows]]
//! kind = "kernel-mptcp"       # "mpquic" | "kernel-tcp" | "kernel-mptcp"
//! from = "s"                  # host name (see the topology kinds)
//! to = "d"
//! cc = "cubic"                # kernel TCP congestion control, or mpquic controller name
//! bytes = 50000000            # bytes to send (0: send for `for_s` seconds; mpquic: a timed
//! for_s = 0.0                 # `mpquic send --time` into the server's sink)
//! start_s = 0.0
//! count = 1                   # identical flows started `stagger_ms` apart
//! stagger_ms = 0.0
//! paths = 0                   # mpquic: paths to use (0: every address pair); kernel-tcp: path index
//! from_addr = 0               # the paths start at the routed pair from this address of `from`
//! to_addr = 0                 # ... to this address of `to` (0: either end open; see
//!                             # `Net::flow_pairs`)
//! cc_params = []              # mpquic: ["key=value", ...]
//! ecn = "auto"                # mpquic: --ecn auto (default) | per-packet (GSO off, ACK every packet)
//! scheduler = "stack"         # mpquic: --scheduler stack | lowest-rtt | round-robin | ecf
//! paths_per_pair = 1          # mpquic: --paths-per-pair N (N paths over each address pair)
//! repeat = 1                  # mpquic: --repeat N (N transfers of `bytes`, a new connection each)
//! path_delays_s = [0.0, 5.0]  # mpquic: --path-delay (path i opens this long after the connection)
//!
//! [[jobs]]                    # partition/aggregate jobs (`mpquic aggregate`); flows may be empty
//! aggregator = "d"            # host that sends the requests and receives the answers
//! workers = ["s1", "s2"]      # hosts that answer (`mpquic serve --dir`), one connection each
//! response_bytes = 65536      # every answer's size
//! jobs = 50                   # jobs per job stream
//! parallel = 1                # job streams, each starting its next job when the last one ends
//! gap_ms = 0.0                # pause between a stream's jobs
//! start_s = 0.0
//! cc = "dctcp"                # the workers' (senders of the answers) and the aggregator's controller
//! cc_params = []
//! ecn = "exact"
//! ```

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    #[serde(default = "default_sample")]
    pub sample_interval_ms: f64,
    #[serde(default = "default_reps")]
    pub repetitions: u32,
    pub topology: TopologySpec,
    pub link: LinkSpec,
    /// Per-direction exceptions to `link`.
    #[serde(default)]
    pub link_overrides: Vec<LinkOverride>,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub jobs: Vec<JobSpec>,
}

fn default_duration() -> f64 {
    10.0
}
fn default_sample() -> f64 {
    1.0
}
fn default_reps() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Sender `s` and receiver `d` joined by `paths` disjoint routed paths (routers `r1..rk`);
    /// each host interface carries `addrs_per_link` addresses; optional cross hosts `c1..ck`
    /// attached to the routers send to `d` through the same bottlenecks.
    MultiPath {
        #[serde(default = "two")]
        paths: usize,
        #[serde(default = "one")]
        addrs_per_link: usize,
        #[serde(default)]
        cross_hosts: bool,
    },
    /// A k = 4 fat-tree: hosts `h1..h16`, edge `e1..e8`, aggregation `a1..a8`, core `c1..c4`,
    /// ECMP routes (L4 hash, `fib_multipath_hash_policy = 1`); every switch egress is a
    /// bottleneck (edge -> host, and both directions of every switch-to-switch link).
    FatTree {
        #[serde(default = "four")]
        k: usize,
        #[serde(default = "one")]
        addrs_per_host: usize,
    },
    /// Senders `s1..sn` -> router `r` -> receiver `d`, one bottleneck (r -> d).
    ManyToOne {
        senders: usize,
        #[serde(default = "one")]
        addrs_per_host: usize,
    },
    /// Hosts and routers by name and the links between them, with the directions to shape:
    /// what the shared scenario language's topologies compile to (`compile`).
    Custom { hosts: Vec<CustomHost>, switches: Vec<String>, links: Vec<CustomLink> },
}

/// A host of a custom topology.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomHost {
    pub name: String,
}

/// A link of a custom topology: its ends, the addresses of each end on it, and which of its
/// directions are shaped bottlenecks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomLink {
    pub a: String,
    pub b: String,
    pub a_addrs: usize,
    pub b_addrs: usize,
    pub shape_a_to_b: bool,
    pub shape_b_to_a: bool,
}

/// The most namespaces a run builds (the k = 4 fat-tree's 36, with room).
const MAX_NODES: usize = 64;

fn one() -> usize {
    1
}
fn two() -> usize {
    2
}
fn four() -> usize {
    4
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub rate_mbit: f64,
    pub k_packets: u32,
    pub buffer_bytes: u64,
    /// One-way extra delay of every shaped direction.
    #[serde(default)]
    pub delay_ms: f64,
    /// Uniform jitter (+-) on `delay_ms`.
    #[serde(default)]
    pub jitter_ms: f64,
    #[serde(default)]
    pub loss: f64,
    #[serde(default = "yes")]
    pub ecn: bool,
    #[serde(default)]
    pub sender_offload: bool,
}

/// The link parameters of some shaped directions that differ from `[link]`: the egress of node
/// `from` (toward `to` only, if given).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    pub from: String,
    #[serde(default)]
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

    fn apply(&self, link: &mut LinkSpec) {
        link.rate_mbit = self.rate_mbit.unwrap_or(link.rate_mbit);
        link.k_packets = self.k_packets.unwrap_or(link.k_packets);
        link.buffer_bytes = self.buffer_bytes.unwrap_or(link.buffer_bytes);
        link.delay_ms = self.delay_ms.unwrap_or(link.delay_ms);
        link.jitter_ms = self.jitter_ms.unwrap_or(link.jitter_ms);
    }
}

impl LinkSpec {
    /// Checks one direction's parameters; `what` names it in the error.
    fn validate(&self, what: &str) -> Result<()> {
        if self.rate_mbit.is_nan() || self.rate_mbit <= 0.0 || self.buffer_bytes < 3000 {
            bail!("{what}: rate_mbit must be > 0 and buffer_bytes >= 3000");
        }
        if !(0.0..1.0).contains(&self.loss) {
            bail!("{what}: loss must be in [0, 1)");
        }
        if !(0.0..=MAX_DELAY_MS).contains(&self.delay_ms) {
            bail!("{what}: delay_ms must be in [0, {MAX_DELAY_MS}], not {}", self.delay_ms);
        }
        if !(0.0..=self.delay_ms).contains(&self.jitter_ms) {
            bail!(
                "{what}: jitter_ms must be in [0, delay_ms = {}] (a packet is never sent before it \
                 arrived), not {}",
                self.delay_ms,
                self.jitter_ms
            );
        }
        Ok(())
    }
}

/// The longest delay a direction may have: the delay line holds every packet of that many
/// milliseconds in the kernel queue.
pub const MAX_DELAY_MS: f64 = 1000.0;

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    Mpquic,
    KernelTcp,
    KernelMptcp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub kind: FlowKind,
    pub from: String,
    pub to: String,
    #[serde(default = "cubic")]
    pub cc: String,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub for_s: f64,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default = "one_u32")]
    pub count: u32,
    #[serde(default)]
    pub stagger_ms: f64,
    #[serde(default)]
    pub paths: usize,
    /// The address of `from` (and of `to`) the flow's address pairs start at
    /// (`Net::flow_pairs`; 0: the first routed pair's).
    #[serde(default)]
    pub from_addr: usize,
    #[serde(default)]
    pub to_addr: usize,
    #[serde(default)]
    pub cc_params: Vec<String>,
    /// mpquic: the CLI's `--ecn` (ACK shaping; the library's default unless set).
    #[serde(default = "default_ecn")]
    pub ecn: String,
    /// mpquic: the CLI's `--scheduler`.
    #[serde(default = "stack")]
    pub scheduler: String,
    /// mpquic: the CLI's `--paths-per-pair` (several paths over one address pair, 1..=16).
    #[serde(default = "one_u32")]
    pub paths_per_pair: u32,
    /// mpquic: the CLI's `--repeat` (`bytes` sent this many times, each over a new connection,
    /// by one process: short flows without a process start-up each).
    #[serde(default = "one_u32")]
    pub repeat: u32,
    /// mpquic: the CLI's `--path-delay`: when each path the CLI opens does, in seconds after its
    /// connection is established (the first 0, none earlier than the one before). Empty: every
    /// path opens with the connection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_delays_s: Vec<f64>,
}

/// Partition/aggregate jobs: the aggregator asks every worker at once (one warm single-path
/// QUIC connection each), every worker answers `response_bytes`, and a job completes when the
/// last answer has arrived. `parallel` job streams run side by side, closed-loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub aggregator: String,
    pub workers: Vec<String>,
    #[serde(default = "response_64k")]
    pub response_bytes: u64,
    pub jobs: u32,
    #[serde(default = "one_u32")]
    pub parallel: u32,
    #[serde(default)]
    pub gap_ms: f64,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default = "dctcp")]
    pub cc: String,
    #[serde(default)]
    pub cc_params: Vec<String>,
    #[serde(default = "default_ecn")]
    pub ecn: String,
}

fn response_64k() -> u64 {
    64 * 1024
}
fn dctcp() -> String {
    "dctcp".into()
}

fn default_ecn() -> String {
    mpquic::EcnPrecision::default().name().into()
}
fn stack() -> String {
    "stack".into()
}

fn cubic() -> String {
    "cubic".into()
}
fn one_u32() -> u32 {
    1
}

impl Scenario {
    pub fn validate(&self) -> Result<()> {
        match self.topology {
            TopologySpec::MultiPath { paths, addrs_per_link, .. } => {
                if !(1..=8).contains(&paths) || !(1..=8).contains(&addrs_per_link) {
                    bail!("multi-path: paths and addrs_per_link must be in 1..=8");
                }
            }
            TopologySpec::FatTree { k, addrs_per_host } => {
                if k != 4 {
                    bail!("fat-tree: only k = 4 (36 namespaces, 80 marked link directions) fits this testbed");
                }
                if !(1..=4).contains(&addrs_per_host) {
                    bail!("fat-tree: addrs_per_host must be in 1..=4");
                }
            }
            TopologySpec::ManyToOne { senders, addrs_per_host } => {
                if !(1..=16).contains(&senders) || !(1..=8).contains(&addrs_per_host) {
                    bail!("many-to-one: senders must be in 1..=16, addrs_per_host in 1..=8");
                }
            }
            TopologySpec::Custom { ref hosts, ref switches, ref links } => {
                let names: Vec<&str> = hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .chain(switches.iter().map(String::as_str))
                    .collect();
                if names.len() > MAX_NODES {
                    bail!(
                        "{} nodes: the testbed builds at most {MAX_NODES} namespaces",
                        names.len()
                    );
                }
                for l in links {
                    if !names.contains(&l.a.as_str()) || !names.contains(&l.b.as_str()) {
                        bail!("link {} -- {}: unknown node", l.a, l.b);
                    }
                    if !(1..=8).contains(&l.a_addrs) || !(1..=8).contains(&l.b_addrs) {
                        bail!("link {} -- {}: 1..=8 addresses per end", l.a, l.b);
                    }
                }
            }
        }
        self.link.validate("link")?;
        self.validate_overrides()?;
        if self.sample_interval_ms <= 0.0 || self.duration_s <= 0.0 {
            bail!("sample_interval_ms and duration_s must be > 0");
        }
        if self.flows.is_empty() && self.jobs.is_empty() {
            bail!("no flows and no jobs");
        }
        for j in &self.jobs {
            if j.workers.is_empty() || j.jobs == 0 || !(1..=64).contains(&j.parallel) {
                bail!("jobs from {}: need workers, jobs >= 1 and parallel in 1..=64", j.aggregator);
            }
            if j.response_bytes == 0 || j.gap_ms < 0.0 || j.workers.contains(&j.aggregator) {
                bail!("jobs from {}: response_bytes must be > 0, gap_ms >= 0, and the aggregator not one of its workers", j.aggregator);
            }
            check_mpquic_transport(&j.cc, &j.cc_params, &j.ecn, "stack")
                .with_context(|| format!("jobs from {}", j.aggregator))?;
        }
        self.validate_hosts()?;
        for f in &self.flows {
            if f.bytes == 0 && f.for_s <= 0.0 {
                bail!("flow {} -> {}: set bytes or for_s", f.from, f.to);
            }
            if f.kind == FlowKind::Mpquic {
                if f.bytes == 0 && f.repeat > 1 {
                    bail!(
                        "flow {} -> {}: repeat needs bytes (a timed flow sends once)",
                        f.from,
                        f.to
                    );
                }
                check_mpquic_transport(&f.cc, &f.cc_params, &f.ecn, &f.scheduler)
                    .with_context(|| format!("flow {} -> {}", f.from, f.to))?;
                if f.repeat == 0 {
                    bail!("flow {} -> {}: repeat must be >= 1", f.from, f.to);
                }
                if !(1..=16).contains(&f.paths_per_pair) {
                    bail!("flow {} -> {}: paths_per_pair must be in 1..=16", f.from, f.to);
                }
            } else if !f.path_delays_s.is_empty() {
                bail!("flow {} -> {}: path_delays_s is for mpquic flows", f.from, f.to);
            }
            if f.path_delays_s.iter().any(|d| !(d.is_finite() && *d >= 0.0)) {
                bail!("flow {} -> {}: path_delays_s must be seconds, 0 or more", f.from, f.to);
            }
        }
        Ok(())
    }

    /// The parameters of the shaped direction from node `from` to node `to`: `[link]` with the
    /// matching overrides applied in order.
    pub fn link_for(&self, from: &str, to: &str) -> LinkSpec {
        let mut link = self.link.clone();
        for o in self.link_overrides.iter().filter(|o| o.matches(from, to)) {
            o.apply(&mut link);
        }
        link
    }

    /// Every shaped direction's parameters, as (from, to, link).
    pub fn links(&self) -> Vec<(String, String, LinkSpec)> {
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

    /// Every host a flow or a `[[jobs]]` entry names exists in the topology and is a host (not
    /// a router), and every flow has a path; checked before any namespace exists.
    fn validate_hosts(&self) -> Result<()> {
        let net = crate::topology::build(&self.topology);
        let host = |name: &str, what: &str| -> Result<usize> {
            let n = net.node(name).with_context(|| {
                let hosts: Vec<&str> =
                    net.nodes.iter().filter(|n| !n.router).map(|n| n.name.as_str()).collect();
                format!("{what}: no host {name:?} in this topology (hosts: {})", hosts.join(", "))
            })?;
            if net.nodes[n].router {
                bail!("{what}: {name:?} is a router, not a host");
            }
            Ok(n)
        };
        for f in &self.flows {
            let what = format!("flow {} -> {}", f.from, f.to);
            let pairs = net.path_pairs(host(&f.from, &what)?, host(&f.to, &what)?);
            if pairs.is_empty() {
                bail!("{what}: no path between these hosts");
            }
            if f.kind == FlowKind::KernelTcp && f.paths > pairs.len() {
                bail!("{what}: path {} asked, the hosts have {} paths", f.paths, pairs.len());
            }
        }
        for j in &self.jobs {
            let what = format!("jobs from {}", j.aggregator);
            host(&j.aggregator, &what)?;
            for w in &j.workers {
                host(w, &what)?;
            }
        }
        Ok(())
    }

    fn validate_overrides(&self) -> Result<()> {
        let links = self.links();
        for o in &self.link_overrides {
            if !links.iter().any(|(f, t, _)| o.matches(f, t)) {
                bail!(
                    "link_overrides: no shaped link direction from {:?}{} in this topology",
                    o.from,
                    o.to.as_ref().map(|t| format!(" to {t:?}")).unwrap_or_default()
                );
            }
        }
        for (from, to, link) in &links {
            link.validate(&format!("link {from} -> {to}"))?;
        }
        Ok(())
    }
}

/// What an mpquic flow hands the CLI, checked by the library that will parse it (controller and
/// its parameters, ECN shaping, scheduler), before any namespace exists.
fn check_mpquic_transport(
    cc: &str,
    cc_params: &[String],
    ecn: &str,
    scheduler: &str,
) -> Result<()> {
    mpquic::Congestion::parse(cc, cc_params.iter().map(String::as_str))?;
    ecn.parse::<mpquic::EcnPrecision>().map_err(anyhow::Error::msg)?;
    scheduler.parse::<mpquic::Scheduler>()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HETERO: &str = r#"
name = "t"
[topology]
kind = "multi-path"
paths = 2
[link]
rate_mbit = 100.0
k_packets = 20
buffer_bytes = 150000
delay_ms = 2.0
[[link_overrides]]
from = "r2"
rate_mbit = 20.0
delay_ms = 40.0
jitter_ms = 1.0
[[flows]]
kind = "mpquic"
from = "s"
to = "d"
bytes = 1000
"#;

    fn parse(text: &str) -> Result<Scenario> {
        let s: Scenario = toml::from_str(text)?;
        s.validate()?;
        Ok(s)
    }

    fn error_of(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err())
    }

    #[test]
    fn overrides_apply_to_their_direction_only() {
        let s = parse(HETERO).unwrap();
        let links = s.links();
        assert_eq!(links.len(), 2);
        let (r1, r2) = (&links[0], &links[1]);
        assert_eq!((r1.0.as_str(), r1.2.rate_mbit, r1.2.delay_ms), ("r1", 100.0, 2.0));
        assert_eq!((r2.0.as_str(), r2.2.rate_mbit, r2.2.delay_ms), ("r2", 20.0, 40.0));
        assert_eq!((r1.2.jitter_ms, r2.2.jitter_ms), (0.0, 1.0));
        assert_eq!(r2.2.k_packets, 20, "unset fields keep [link]'s value");
    }

    #[test]
    fn bad_delay_and_overrides_are_refused_with_the_reason() {
        let e = error_of(&HETERO.replace("jitter_ms = 1.0", "jitter_ms = 50.0"));
        assert!(e.contains("link r2 -> d: jitter_ms must be in [0, delay_ms = 40]"), "{e}");
        let e = error_of(&HETERO.replace("delay_ms = 2.0", "delay_ms = -1.0"));
        assert!(e.contains("link: delay_ms must be in [0, 1000]"), "{e}");
        let e = error_of(&HETERO.replace("from = \"r2\"", "from = \"r3\""));
        assert!(e.contains("no shaped link direction from \"r3\""), "{e}");
        let e = error_of(&HETERO.replace("[[link_overrides]]", "[[link_overrides]]\nto = \"s\""));
        assert!(e.contains("from \"r2\" to \"s\""), "{e}");
        let e = error_of(&HETERO.replace("delay_ms = 40.0", "delay_ms = 40.0\nloss = 0.1"));
        assert!(e.contains("unknown field `loss`"), "{e}");
    }

    #[test]
    fn hosts_and_paths_are_checked_without_building_anything() {
        let e = error_of(&HETERO.replace("to = \"d\"", "to = \"x\""));
        assert!(e.contains("flow s -> x: no host \"x\" in this topology (hosts: s, d)"), "{e}");
        let e = error_of(&HETERO.replace("to = \"d\"", "to = \"r1\""));
        assert!(e.contains("\"r1\" is a router"), "{e}");
        let tcp = HETERO.replace("kind = \"mpquic\"", "kind = \"kernel-tcp\"\npaths = 3");
        let e = error_of(&tcp);
        assert!(e.contains("path 3 asked, the hosts have 2 paths"), "{e}");
        let jobs = "[[jobs]]\naggregator = \"d\"\nworkers = [\"s\", \"w\"]\njobs = 1\n";
        let e = error_of(&format!("{HETERO}{jobs}"));
        assert!(e.contains("jobs from d: no host \"w\""), "{e}");
        let e = error_of(&HETERO.replace("bytes = 1000", "bytes = 1000\ncc = \"nope\""));
        assert!(e.contains("flow s -> d"), "{e}");
    }
}
