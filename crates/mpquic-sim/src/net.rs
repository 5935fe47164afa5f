//! The network: packets, unidirectional links with a FIFO buffer and an ECN marker, switches
//! with static or ECMP routing, and hosts with one or more addresses.
//!
//! Time is in picoseconds of virtual time ([`Ps`]), which keeps serialization at 10 Gbit/s exact
//! (a 1428-byte packet takes 1 142 400 ps).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bytes::BytesMut;
use hdrhistogram::Histogram;
use noq_proto::EcnCodepoint;
use serde::Serialize;

use crate::dualq::{DualQueue, DualqParams};
use crate::rng::SimRng;
use crate::scenario::{Aqm, Expanded, HostEgress, HostSpec, LinkSpec, Scenario, ScenarioError};

/// Virtual time in picoseconds, and picoseconds per microsecond.
pub use mpquic_scenario::units::{Ps, PS_PER_US};
/// Switch routing.
pub use mpquic_scenario::Routing;

/// Bytes of IPv4 + UDP header added to each QUIC datagram on the wire.
pub const WIRE_OVERHEAD: usize = 28;

/// Index of a node (host or switch).
pub type NodeId = usize;
/// Index of a unidirectional link.
pub type LinkId = usize;

/// One UDP datagram in flight.
#[derive(Debug)]
pub struct Packet {
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// ECN codepoint in the IP header; links may turn ECT into CE.
    pub ecn: Option<EcnCodepoint>,
    /// The QUIC datagram.
    pub data: BytesMut,
}

impl Packet {
    /// Size on the wire, in bytes.
    pub fn wire_bytes(&self) -> usize {
        self.data.len() + WIRE_OVERHEAD
    }
}

/// Static parameters of one unidirectional link.
#[derive(Debug, Clone, Serialize)]
pub struct LinkParams {
    /// Human-readable name, `from->to`.
    pub name: String,
    /// Sending node.
    pub from: NodeId,
    /// Receiving node.
    pub to: NodeId,
    /// Rate in bits per second.
    pub rate_bps: u64,
    /// Propagation delay.
    pub delay_ps: Ps,
    /// Buffer size in packets, counting the one being serialized.
    pub buffer_packets: usize,
    /// ECN marking threshold K in packets: an ECT packet arriving when more than K packets are
    /// queued (counting the one being serialized) is marked CE. `None`: no marking.
    pub ecn_k: Option<usize>,
    /// Probability that a packet is lost on this link (independently, before queueing).
    pub loss: f64,
    /// Whether queue-length samples are recorded for this link.
    pub monitor: bool,
    /// RFC 9332's dual queue in place of the FIFO and its step marker (`ecn_k` unused).
    pub dualq: Option<DualqParams>,
    /// When it goes down (the scenario's `down_at`): `Sim::new` black-holes it then.
    pub down_at: Option<Ps>,
}

/// Counters and samples of one link.
#[derive(Debug, Clone)]
pub struct LinkStats {
    /// Packets that entered the buffer.
    pub enqueued: u64,
    /// Packets sent (accepted into the FIFO; each is serialized in turn).
    pub sent_packets: u64,
    /// Wire bytes sent.
    pub sent_bytes: u64,
    /// Packets marked CE.
    pub marked: u64,
    /// Packets dropped because the buffer was full.
    pub dropped_overflow: u64,
    /// Packets dropped by random loss.
    pub dropped_random: u64,
    /// Queue lengths (packets) seen by the periodic sampler.
    pub queue_hist: Histogram<u64>,
    /// (time, queue length) samples, for plots.
    pub queue_series: Vec<(Ps, u32)>,
    /// Wire bytes whose serialization starts in each bucket of the goodput interval.
    pub bytes_series: Vec<u64>,
}

impl Default for LinkStats {
    fn default() -> Self {
        LinkStats {
            enqueued: 0,
            sent_packets: 0,
            sent_bytes: 0,
            marked: 0,
            dropped_overflow: 0,
            dropped_random: 0,
            queue_hist: Histogram::new_with_max(1 << 20, 3).expect("valid histogram bounds"),
            queue_series: Vec::new(),
            bytes_series: Vec::new(),
        }
    }
}

/// A unidirectional link with its FIFO, or its dual queue.
///
/// The FIFO is served at a fixed rate, so each packet's departure is known when it is queued:
/// the link keeps only the departure times of the packets it holds, and a packet's arrival at
/// the far end is scheduled as soon as it is accepted. The queue length at any instant is the
/// number of held packets that have not finished serialization.
///
/// A dual queue ([`DualQueue`]) serves its L queue ahead of older classic packets, so a
/// departure is only known when the packet starts serialization: the link holds the packets,
/// and the simulator asks it for the next one ([`Link::serve`]) whenever it falls idle.
#[derive(Debug)]
pub struct Link {
    /// Parameters.
    pub params: LinkParams,
    /// End of serialization of each packet in the buffer (including the one being sent).
    departures: VecDeque<Ps>,
    /// When the last accepted packet finishes serialization.
    busy_until: Ps,
    /// Counters.
    pub stats: LinkStats,
    /// Bucket width of `stats.bytes_series`.
    bucket: Ps,
    rng: SimRng,
    /// The dual queue, on a `dualq` link.
    pub dual: Option<DualQueue>,
}

/// What became of a packet offered to a link.
#[derive(Debug)]
pub enum Offered {
    /// Accepted into the FIFO: it reaches the far end at `arrives`.
    Sent {
        /// The packet, CE-marked if the marker marked it.
        packet: Packet,
        /// When it reaches the far end.
        arrives: Ps,
    },
    /// Held in the dual queue; `wake` if the link was idle and must be served now.
    Queued {
        /// Whether the caller must call [`Link::serve`] now.
        wake: bool,
    },
    /// Lost (random loss, or a full buffer).
    Dropped,
}

/// A packet a dual-queue link started to serialize ([`Link::serve`]).
#[derive(Debug)]
pub struct Served {
    /// The packet, CE-marked if the AQM marked it.
    pub packet: Packet,
    /// When it reaches the far end.
    pub arrives: Ps,
    /// When the link is free for the next one.
    pub free_at: Ps,
}

impl Link {
    /// A new idle link. `rng` drives its random loss; `bucket` is the width of the byte-count
    /// time series.
    pub fn new(params: LinkParams, rng: SimRng, bucket: Ps) -> Self {
        let dual = params.dualq.map(DualQueue::new);
        Link {
            params,
            departures: VecDeque::new(),
            busy_until: 0,
            stats: LinkStats::default(),
            bucket: bucket.max(1),
            rng,
            dual,
        }
    }

    /// Packets in the buffer at `now`, counting the one being serialized.
    pub fn occupancy(&mut self, now: Ps) -> usize {
        if let Some(dual) = &self.dual {
            return dual.len() + usize::from(self.busy_until > now);
        }
        while self.departures.front().is_some_and(|&end| end <= now) {
            self.departures.pop_front();
        }
        self.departures.len()
    }

    /// Serialization time of `bytes` wire bytes.
    pub fn serialization(&self, bytes: usize) -> Ps {
        // ps = bytes * 8 * 1e12 / rate, rounded up. The product fits 64 bits for any datagram
        // (up to 2.3 MB); 128-bit division, a library call, is only the fallback.
        const BITS_PS: u64 = 8 * 1_000_000_000_000;
        match (bytes as u64).checked_mul(BITS_PS) {
            Some(num) => num.div_ceil(self.params.rate_bps),
            None => {
                (bytes as u128 * u128::from(BITS_PS)).div_ceil(u128::from(self.params.rate_bps))
                    as Ps
            }
        }
    }

    /// Offer a packet at `now`: random loss, tail drop, then the FIFO with its step marker (the
    /// packet's departure is known at once) or the dual queue (it is known when
    /// [`serve`](Link::serve) takes the packet).
    pub fn offer(&mut self, now: Ps, mut packet: Packet) -> Offered {
        if self.params.loss > 0.0 && self.rng.next_f64() < self.params.loss {
            self.stats.dropped_random += 1;
            return Offered::Dropped;
        }
        let occupancy = self.occupancy(now);
        if occupancy >= self.params.buffer_packets {
            self.stats.dropped_overflow += 1;
            return Offered::Dropped;
        }
        self.stats.enqueued += 1;
        if let Some(dual) = &mut self.dual {
            dual.push(packet, now);
            return Offered::Queued { wake: occupancy == 0 };
        }
        let ect = matches!(packet.ecn, Some(EcnCodepoint::Ect0 | EcnCodepoint::Ect1));
        if ect && self.params.ecn_k.is_some_and(|k| occupancy > k) {
            packet.ecn = Some(EcnCodepoint::Ce);
            self.stats.marked += 1;
        }
        let start = self.busy_until.max(now);
        let end = self.serialize(start, packet.wire_bytes());
        self.departures.push_back(end);
        Offered::Sent { packet, arrives: end + self.params.delay_ps }
    }

    /// On a dual-queue link that is idle at `now`, start serializing the next packet the AQM
    /// lets through; `None` if the link is busy, has no dual queue or nothing waits.
    pub fn serve(&mut self, now: Ps) -> Option<Served> {
        if self.busy_until > now {
            return None;
        }
        let dequeued = self.dual.as_mut()?.pop(now, &mut self.rng)?;
        self.stats.marked += u64::from(dequeued.marked);
        let free_at = self.serialize(now, dequeued.packet.wire_bytes());
        Some(Served { packet: dequeued.packet, arrives: free_at + self.params.delay_ps, free_at })
    }

    /// Account for `bytes` serialized from `start`; returns when serialization ends.
    fn serialize(&mut self, start: Ps, bytes: usize) -> Ps {
        let end = start + self.serialization(bytes);
        self.busy_until = end;
        self.stats.sent_packets += 1;
        self.stats.sent_bytes += bytes as u64;
        let bucket = (start / self.bucket) as usize;
        if self.stats.bytes_series.len() <= bucket {
            self.stats.bytes_series.resize(bucket + 1, 0);
        }
        self.stats.bytes_series[bucket] += bytes as u64;
        end
    }

    /// Record one queue-length sample.
    pub fn sample(&mut self, now: Ps, keep_series: bool) {
        let q = self.occupancy(now) as u64;
        self.stats.queue_hist.record(q).expect("queue length within histogram range");
        if keep_series {
            self.stats.queue_series.push((now, q as u32));
        }
    }
}

/// A host address and the link it sends on.
#[derive(Debug, Clone)]
pub struct Interface {
    /// The address.
    pub ip: IpAddr,
    /// The outgoing link.
    pub link: LinkId,
}

/// A node of the network.
#[derive(Debug)]
pub enum Node {
    /// An end host.
    Host {
        /// Name from the scenario.
        name: String,
        /// Its addresses, each with the link it sends on.
        interfaces: Vec<Interface>,
    },
    /// A switch.
    Switch {
        /// Name from the scenario.
        name: String,
        /// For each destination address, the equal-cost outgoing links.
        routes: std::collections::BTreeMap<IpAddr, Vec<LinkId>>,
        /// Per-switch hash salt, so that ECMP decisions are not correlated across hops.
        salt: u64,
    },
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        match self {
            Node::Host { name, .. } | Node::Switch { name, .. } => name,
        }
    }
}

/// Hash of a flow's 4-tuple for ECMP (FNV-1a over the fields, salted per switch).
pub fn ecmp_hash(src: &SocketAddr, dst: &SocketAddr, salt: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for addr in [src, dst] {
        match addr.ip() {
            IpAddr::V4(ip) => eat(&ip.octets()),
            IpAddr::V6(ip) => eat(&ip.octets()),
        }
        eat(&addr.port().to_be_bytes());
    }
    // Final avalanche, so that the low bits used by `%` depend on every input byte.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A scenario's network, built: nodes, links in both directions, host addresses and the
/// switches' routes.
pub struct Network {
    /// Hosts first (in the scenario's order), then switches.
    pub nodes: Vec<Node>,
    /// Unidirectional links.
    pub links: Vec<Link>,
    /// Node ids by name.
    pub index: HashMap<String, NodeId>,
    /// The host each address belongs to.
    pub host_of: HashMap<IpAddr, NodeId>,
}

/// Who is connected to whom: per node, (neighbour, link to it), in the order links were made.
type Adjacency = Vec<Vec<(NodeId, LinkId)>>;

/// An address, the node it hangs off (the far end of its host's link), and the link from that
/// node back to the host.
type Attachment = (IpAddr, NodeId, LinkId);

impl Network {
    /// Build the expanded topology of `scenario`: nodes, links (the scenario's link settings
    /// where a link has none of its own), addresses (address i of a host sends on its link
    /// i % links) and routes (shortest paths over switches; ECMP keeps every equal choice).
    pub fn build(expanded: &Expanded, scenario: &Scenario) -> Result<Network, ScenarioError> {
        let (mut nodes, index) = build_nodes(&expanded.hosts, &expanded.switches, scenario.seed)?;
        let hosts = &expanded.hosts;
        let (links, adjacency) =
            build_links(&expanded.links, &index, &nodes, hosts.len(), scenario)?;
        let (host_of, attached) = attach_addresses(&mut nodes, hosts, &links, &adjacency)?;
        route(&mut nodes, hosts.len(), &attached, &adjacency, scenario.routing);
        Ok(Network { nodes, links, index, host_of })
    }
}

fn invalid(message: String) -> ScenarioError {
    ScenarioError::Invalid(message)
}

/// The name (`from->to`) of the link that delivers to address `ip` of host `host`: the reverse
/// of the link the host sends that address's packets on.
pub fn link_into<'a>(
    nodes: &[Node],
    links: &'a [Link],
    host: NodeId,
    ip: IpAddr,
) -> Option<&'a str> {
    let Node::Host { interfaces, .. } = &nodes[host] else { return None };
    let out = &links[interfaces.iter().find(|i| i.ip == ip)?.link].params;
    let back = links.iter().find(|l| l.params.from == out.to && l.params.to == out.from)?;
    Some(&back.params.name)
}

/// Address `addr` of host `host`: 10.addr.(h >> 8).(h & 255) with h = host + 1.
fn host_ip(host: usize, addr: usize) -> IpAddr {
    let h = host + 1;
    IpAddr::V4(Ipv4Addr::new(10, addr as u8, (h >> 8) as u8, h as u8))
}

/// Hosts, then switches (each with its ECMP hash salt), and their ids by name.
fn build_nodes(
    hosts: &[HostSpec],
    switches: &[String],
    seed: u64,
) -> Result<(Vec<Node>, HashMap<String, NodeId>), ScenarioError> {
    let mut nodes = vec![];
    let mut index: HashMap<String, NodeId> = HashMap::new();
    for h in hosts {
        if h.addrs == 0 || h.addrs > 255 {
            return Err(invalid(format!("host {} needs 1..=255 addresses", h.name)));
        }
        if index.insert(h.name.clone(), nodes.len()).is_some() {
            return Err(invalid(format!("duplicate node name {}", h.name)));
        }
        nodes.push(Node::Host { name: h.name.clone(), interfaces: vec![] });
    }
    for (i, s) in switches.iter().enumerate() {
        if index.insert(s.clone(), nodes.len()).is_some() {
            return Err(invalid(format!("duplicate node name {s}")));
        }
        let salt = SimRng::new(seed, 0x5357_0000 + i as u64).next_u64();
        nodes.push(Node::Switch { name: s.clone(), routes: BTreeMap::new(), salt });
    }
    Ok((nodes, index))
}

/// Both directions of every link, and the adjacency they make.
fn build_links(
    specs: &[LinkSpec],
    index: &HashMap<String, NodeId>,
    nodes: &[Node],
    hosts: usize,
    scenario: &Scenario,
) -> Result<(Vec<Link>, Adjacency), ScenarioError> {
    let node = |name: &String| {
        index.get(name).copied().ok_or_else(|| invalid(format!("unknown node {name}")))
    };
    let mut links: Vec<Link> = vec![];
    let mut adjacency: Adjacency = vec![vec![]; nodes.len()];
    for spec in specs {
        let (a, b) = (node(&spec.a)?, node(&spec.b)?);
        // Queue amounts in bytes count full packets on the wire.
        let packet = u64::from(scenario.transport.mtu) + WIRE_OVERHEAD as u64;
        for (from, to, monitor) in [(a, b, spec.monitor), (b, a, spec.monitor_reverse)] {
            let config = scenario.link_for(nodes[from].name(), nodes[to].name(), &spec.config);
            let (Some(rate), Some(delay), Some(buffer)) =
                (config.rate, config.delay, config.buffer)
            else {
                return Err(invalid(format!(
                    "link {}-{} lacks rate, delay or buffer",
                    spec.a, spec.b
                )));
            };
            if config.jitter.is_some_and(|j| j.0 > 0) {
                return Err(invalid(format!(
                    "link {}-{}: per-link jitter is not simulated (use host_jitter)",
                    spec.a, spec.b
                )));
            }
            let buffer = buffer.packets(packet) as usize;
            let host_queue = if from == a { spec.host_queue } else { None };
            let host_queue =
                host_queue.unwrap_or(from < hosts && scenario.host_egress == HostEgress::Qdisc);
            let id = links.len();
            let params = LinkParams {
                name: format!("{}->{}", nodes[from].name(), nodes[to].name()),
                from,
                to,
                rate_bps: rate.0,
                delay_ps: delay.0,
                buffer_packets: if host_queue { scenario.host_buffer } else { buffer },
                ecn_k: if host_queue {
                    None
                } else {
                    config.k.map(|k| k.packets(packet) as usize).filter(|&k| k > 0)
                },
                loss: config.loss.unwrap_or(0.0),
                monitor,
                dualq: (config.aqm == Some(Aqm::Dualq) && !host_queue).then(|| DualqParams {
                    l_step: config.l_step.unwrap_or(Aqm::L_STEP).0,
                    classic_target: config.classic_target.unwrap_or(Aqm::CLASSIC_TARGET).0,
                }),
                down_at: config.down_at.map(|d| d.0),
            };
            let rng = SimRng::new(scenario.seed, 0x4c4b_0000 + id as u64);
            links.push(Link::new(params, rng, scenario.output.goodput_interval.0));
            adjacency[from].push((to, id));
        }
    }
    Ok((links, adjacency))
}

/// Give every host its addresses, address i on the host's link i % links.
fn attach_addresses(
    nodes: &mut [Node],
    hosts: &[HostSpec],
    links: &[Link],
    adjacency: &Adjacency,
) -> Result<(HashMap<IpAddr, NodeId>, Vec<Attachment>), ScenarioError> {
    let mut host_of = HashMap::new();
    let mut attached = vec![];
    for (h, spec) in hosts.iter().enumerate() {
        let host_links: Vec<LinkId> = adjacency[h].iter().map(|&(_, l)| l).collect();
        if host_links.is_empty() {
            return Err(invalid(format!("host {} has no link", spec.name)));
        }
        let mut interfaces = vec![];
        for i in 0..spec.addrs {
            let ip = host_ip(h, i);
            let link = host_links[i % host_links.len()];
            interfaces.push(Interface { ip, link });
            host_of.insert(ip, h);
            let neighbor = links[link].params.to;
            // A host may have several links to one switch: the way back to this address is
            // the reverse of its own link, the k-th of the host's links to that switch pairing
            // with the switch's k-th link to the host (both directions are made together).
            let k = adjacency[h]
                .iter()
                .filter(|&&(to, _)| to == neighbor)
                .position(|&(_, l)| l == link)
                .expect("the address's link is the host's");
            let back = adjacency[neighbor]
                .iter()
                .filter(|&&(to, l)| to == h && links[l].params.from == neighbor)
                .nth(k)
                .map(|&(_, l)| l)
                .expect("links are bidirectional");
            attached.push((ip, neighbor, back));
        }
        if let Node::Host { interfaces: ifs, .. } = &mut nodes[h] {
            *ifs = interfaces;
        }
    }
    Ok((host_of, attached))
}

/// Each switch's next hops towards every address: the neighbours one step closer (breadth
/// first over switches) to the switch the address hangs off.
fn route(
    nodes: &mut [Node],
    hosts: usize,
    attached: &[Attachment],
    adjacency: &Adjacency,
    routing: Routing,
) {
    let is_host = |n: NodeId| n < hosts;
    for &(ip, edge, back) in attached {
        if is_host(edge) {
            continue; // host-to-host wire: nothing to route
        }
        let dist = hops_from(edge, hosts, adjacency);
        for s in hosts..nodes.len() {
            let choices: Vec<LinkId> = if s == edge {
                vec![back]
            } else if dist[s] == usize::MAX {
                continue;
            } else {
                adjacency[s]
                    .iter()
                    .filter(|&&(m, _)| !is_host(m) && dist[m] + 1 == dist[s])
                    .map(|&(_, l)| l)
                    .collect()
            };
            if let Node::Switch { routes, .. } = &mut nodes[s] {
                let choices = match routing {
                    Routing::Static => choices.into_iter().take(1).collect(),
                    Routing::Ecmp => choices,
                };
                routes.insert(ip, choices);
            }
        }
    }
}

/// Hops from `edge` to every switch over switches only (`usize::MAX`: unreachable).
fn hops_from(edge: NodeId, hosts: usize, adjacency: &Adjacency) -> Vec<usize> {
    let mut dist = vec![usize::MAX; adjacency.len()];
    dist[edge] = 0;
    let mut queue = VecDeque::from([edge]);
    while let Some(n) = queue.pop_front() {
        for &(m, _) in &adjacency[n] {
            if m >= hosts && dist[m] == usize::MAX {
                dist[m] = dist[n] + 1;
                queue.push_back(m);
            }
        }
    }
    dist
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(k: Option<usize>, buffer: usize) -> Link {
        Link::new(
            LinkParams {
                name: "a->b".into(),
                from: 0,
                to: 1,
                rate_bps: 10_000_000_000,
                delay_ps: 2 * PS_PER_US,
                buffer_packets: buffer,
                ecn_k: k,
                loss: 0.0,
                monitor: true,
                dualq: None,
                down_at: None,
            },
            SimRng::new(1, 1),
            1_000_000_000,
        )
    }

    /// A host's egress is a qdisc (its own buffer, no marking) unless the scenario makes it a
    /// switch port; switches' egress is a port either way.
    #[test]
    fn host_egress_is_a_qdisc_or_a_port() {
        let text = "name = \"e\"\nduration = \"1ms\"\nhost_buffer = 500\n\
                    [link]\nbuffer = 80\nk = 12\n[topology]\nkind = \"fat-tree\"\nk = 4\n";
        let egress = |text: &str| {
            let scenario = crate::scenario::parse_scenario(text).unwrap();
            let net = Network::build(&scenario.topology.expand().unwrap(), &scenario).unwrap();
            let of = |name: &str| {
                let l = net.links.iter().find(|l| l.params.name.starts_with(name)).unwrap();
                (l.params.buffer_packets, l.params.ecn_k)
            };
            (of("h0->"), of("e0_0->h0"))
        };
        assert_eq!(egress(text), ((500, None), (80, Some(12))));
        let port =
            text.replace("host_buffer = 500\n", "host_buffer = 500\nhost_egress = \"port\"\n");
        assert_eq!(egress(&port), ((80, Some(12)), (80, Some(12))));
    }

    /// A BCube relay's equal-cost next hops towards a server are its ports on the levels whose
    /// digits differ, so ECMP spreads a flow's paths over as many disjoint first hops (BCube's
    /// own routing would also detour over the levels whose digits agree).
    #[test]
    fn a_bcube_relay_spreads_over_the_levels_whose_digits_differ() {
        let text = "name = \"b\"\nduration = \"1ms\"\nrouting = \"ecmp\"\n\
                    [topology]\nkind = \"bcube\"\nn = 2\nk = 2\n";
        let scenario = crate::scenario::parse_scenario(text).unwrap();
        let net = Network::build(&scenario.topology.expand().unwrap(), &scenario).unwrap();
        let Node::Switch { routes, .. } = &net.nodes[net.index["v0"]] else { panic!("a relay") };
        let next_hops = |server: usize| -> Vec<&str> {
            routes[&host_ip(server, 0)].iter().map(|&l| net.links[l].params.name.as_str()).collect()
        };
        // Server 7 = 111 differs from 0 in every digit, 5 = 101 in two, 1 = 001 in one.
        assert_eq!(next_hops(7), ["v0->s0_0", "v0->s1_0", "v0->s2_0"]);
        assert_eq!(next_hops(5), ["v0->s0_0", "v0->s2_0"]);
        assert_eq!(next_hops(1), ["v0->s0_0"]);
        assert_eq!(next_hops(0), ["v0->h0"]);
    }

    fn packet(ecn: Option<EcnCodepoint>) -> Packet {
        Packet {
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:2".parse().unwrap(),
            ecn,
            data: BytesMut::zeroed(1400),
        }
    }

    #[test]
    fn serialization_is_exact_at_10g() {
        assert_eq!(link(None, 10).serialization(1428), 1_142_400);
        // Beyond 64-bit products the 128-bit fallback gives the same arithmetic.
        assert_eq!(link(None, 10).serialization(1 << 22), (1u64 << 22) * 800);
    }

    /// Where an offered packet arrives and with which codepoint (`None`: dropped).
    fn sent(l: &mut Link, p: Packet) -> Option<(Ps, Option<EcnCodepoint>)> {
        match l.offer(0, p) {
            Offered::Sent { packet, arrives } => Some((arrives, packet.ecn)),
            Offered::Dropped => None,
            Offered::Queued { .. } => panic!("a FIFO link queued a packet"),
        }
    }

    #[test]
    fn fifo_timing_marking_and_tail_drop() {
        let mut l = link(Some(2), 4);
        let out: Vec<_> = (0..5).map(|_| sent(&mut l, packet(Some(EcnCodepoint::Ect0)))).collect();
        // Back to back: arrivals one serialization apart, after the propagation delay.
        assert_eq!(out[0].unwrap().0, 1_142_400 + 2 * PS_PER_US);
        assert_eq!(out[1].unwrap().0, 2 * 1_142_400 + 2 * PS_PER_US);
        // Occupancy before each arrival: 0, 1, 2, 3 (> K: marked), 4 (full: dropped).
        assert_eq!(out[2].unwrap().1, Some(EcnCodepoint::Ect0));
        assert_eq!(out[3].unwrap().1, Some(EcnCodepoint::Ce));
        assert_eq!(out[4], None);
        assert_eq!((l.stats.marked, l.stats.dropped_overflow), (1, 1));
        // Once the first packet has left, there is room again.
        assert_eq!(l.occupancy(1_142_400), 3);
        // Not-ECT packets are never marked.
        let mut l = link(Some(0), 10);
        for _ in 0..3 {
            sent(&mut l, packet(None));
        }
        assert_eq!(l.stats.marked, 0);
    }

    /// A dual-queue link holds what it is offered and hands packets out one serialization
    /// apart, the L packet ahead of the classic ones queued before it; the buffer is shared.
    #[test]
    fn a_dual_queue_link_serves_when_idle_l_first() {
        let mut l = link(None, 3);
        l.dual = Some(DualQueue::new(DualqParams {
            l_step: 1000 * PS_PER_US,
            classic_target: 15_000 * PS_PER_US,
        }));
        assert!(matches!(
            l.offer(0, packet(Some(EcnCodepoint::Ect0))),
            Offered::Queued { wake: true }
        ));
        let first = l.serve(0).expect("idle with a packet waiting");
        assert_eq!((first.free_at, first.arrives), (1_142_400, 1_142_400 + 2 * PS_PER_US));
        assert!(l.serve(10).is_none(), "busy until the first is through");
        assert!(matches!(l.offer(10, packet(None)), Offered::Queued { wake: false }));
        assert!(matches!(l.offer(20, packet(Some(EcnCodepoint::Ect1))), Offered::Queued { .. }));
        assert!(matches!(l.offer(30, packet(None)), Offered::Dropped), "3 held: full");
        let second = l.serve(first.free_at).expect("the link is free again");
        assert_eq!(second.packet.ecn, Some(EcnCodepoint::Ect1), "the L packet first");
        assert_eq!(l.occupancy(first.free_at), 2);
    }

    #[test]
    fn ecmp_hash_spreads_ports() {
        let dst: SocketAddr = "10.0.0.2:443".parse().unwrap();
        let mut counts = [0; 4];
        for port in 0..4000u16 {
            let src = SocketAddr::new("10.0.0.1".parse().unwrap(), 10_000 + port);
            counts[(ecmp_hash(&src, &dst, 9) % 4) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 850), "{counts:?}");
    }
}
