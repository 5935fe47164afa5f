//! The event loop: virtual time, links, switches, hosts and real `noq-proto` endpoints.
//!
//! Every QUIC endpoint is a sans-IO `noq_proto::Endpoint` bound to one (host, port). Datagrams
//! it emits go into the host's egress link for the datagram's source address; switches forward
//! by destination address (ECMP over equal-cost links); a datagram reaching its host is handed
//! to the endpoint with its (possibly CE-marked) ECN codepoint. The stack's timers are
//! scheduled as events. Time is only `base + virtual offset`; randomness only comes from the
//! scenario seed.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use mpquic::internals::{slot_of, SharedController};
use mpquic::Congestion;
use mpquic_cc::{Notice, PathId as Slot};
use noq_proto::{
    ClientConfig, Connection, ConnectionHandle, ConnectionId, ConnectionIdGenerator, DatagramEvent,
    Dir, Endpoint, EndpointConfig, EndpointEvent, Event, FourTuple, Incoming, PathEvent,
    PathStatus, ServerConfig, StreamEvent, StreamId, TimeSource, TransportConfig,
    ValidationTokenConfig,
};
use slab::Slab;

use crate::bursts::{Burst, MAX_BURSTS};
use crate::crypto::{NullClientConfig, NullHmacKey, NullServerConfig, NullTokenKey};
use crate::net::{ecmp_hash, Link, LinkId, Network, Node, NodeId, Offered, Packet, Ps};
use crate::rng::SimRng;
use crate::scenario::{
    expand_workloads, ControllerSpec, CryptoSuite, Dur, FlowSpec, HostSpec, RepeatOver, Scenario,
    ScenarioError,
};
use crate::supervise::{Policy, Supervision};
use mpquic_scenario::error::at;
use mpquic_scenario::expand::MAX_FLOWS;

static ZEROS: [u8; 65536] = [0; 65536];
/// The name clients connect to (and a TLS server's certificate is issued for).
const SERVER_NAME: &str = "sim";
/// Datagrams one `poll_transmit` call may build (a GSO batch, split into separate packets
/// before they reach the link: the wire sees the same back-to-back packets, the stack does less
/// work per packet).
const BATCH: NonZeroUsize = NonZeroUsize::new(8).unwrap();

/// Which end of a flow an endpoint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

/// A flow's progress.
#[derive(Debug, Clone, Default)]
pub struct FlowProgress {
    /// Connection established (client view), virtual time.
    pub connected_at: Option<Ps>,
    /// Bytes the client has written into its stream.
    pub request_written: u64,
    /// Bytes of the request the server application has read.
    pub request_read: u64,
    /// When the server had the whole request.
    pub request_done_at: Option<Ps>,
    /// Bytes of the response written by the server.
    pub response_written: u64,
    /// Bytes of the response the client has read.
    pub response_read: u64,
    /// When the client had the whole response.
    pub response_done_at: Option<Ps>,
    /// Goodput buckets: bytes delivered to an application per `goodput_interval`.
    pub delivered: Vec<u64>,
    /// Paths the client opened beyond the first, and when each was established.
    pub paths_established: Vec<(u64, Ps)>,
    /// Paths abandoned.
    pub paths_abandoned: u64,
    /// Paths found failed and re-opened, by either end's path supervisor, in order.
    pub failovers: Vec<(Side, mpquic::FailoverEvent)>,
    /// Window traces of the client's paths: path id -> samples.
    pub traces: BTreeMap<u64, Vec<TracePoint>>,
    /// Why the connection was lost, if it was.
    pub error: Option<String>,
    /// The flow's completed transfers, in order: one, or `repeat` of a repeating flow. The
    /// fields above from `connected_at` to `response_done_at` are the current connection's;
    /// the others add up over all of them.
    pub transfers: Vec<Transfer>,
}

/// One completed transfer: a sized flow's `bytes` (and its response), over one connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    /// When it began: the first, at the flow's `start`; each next one when the client opened its
    /// connection, right after it knew the previous one was over.
    pub start: Ps,
    /// Its connection's handshake completion (client view).
    pub connected: Option<Ps>,
    /// When the receiving application had everything.
    pub done: Ps,
}

impl Transfer {
    /// Its completion time: from its start (a next transfer's handshake included) until done.
    pub fn fct(&self) -> Ps {
        self.done - self.start
    }
}

/// One sample of a client path's congestion state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TracePoint {
    /// Virtual time.
    pub at: Ps,
    /// Congestion window, bytes: the controller's own (from the adapter's snapshot) for mpquic-cc
    /// controllers, the stack's for its own.
    pub window: u64,
    /// The stack's smoothed RTT, nanoseconds.
    pub rtt_ns: u64,
    /// DCTCP / DCM alpha of the path.
    pub alpha: Option<f64>,
    /// Whether the controller lets the path carry new data (false while suppressed/eliminated).
    pub active: bool,
}

/// Which end of a flow's connection a controller belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The connecting end (sends the request, or the bulk data).
    Client,
    /// The accepting end (sends the response).
    Server,
}

/// A controller notice with the virtual time the stack reported it at.
#[derive(Debug, Clone, PartialEq)]
pub struct NoticeAt {
    /// Virtual time.
    pub at: Ps,
    /// Which end's controller.
    pub side: Side,
    /// What happened.
    pub notice: Notice,
}

/// Whether a notice is an episode (kept always) rather than a per-round event (kept up to
/// `output.notice_limit` per flow).
pub fn is_episode(notice: &Notice) -> bool {
    !matches!(notice, Notice::AlphaUpdated { .. } | Notice::WindowReduced { .. })
}

/// The notices of one flow's controllers (both ends), as the adapter's sink delivered them.
#[derive(Debug, Default)]
pub struct NoticeLog {
    /// Episodes: SSR suppress/release, ESE eliminations, slow-start exits, MMPTCP phase switch.
    pub episodes: Vec<NoticeAt>,
    /// Per-round notices: alpha updates and window reductions, up to `limit`.
    pub rounds: Vec<NoticeAt>,
    /// Per-round notices not kept because `limit` was reached.
    pub rounds_dropped: u64,
    /// Notices per kind (all of them, kept or not).
    pub counts: BTreeMap<&'static str, u64>,
    limit: usize,
}

impl NoticeLog {
    fn push(&mut self, at: Ps, side: Side, notice: &Notice) {
        *self.counts.entry(notice.kind()).or_default() += 1;
        let record = || NoticeAt { at, side, notice: notice.clone() };
        if is_episode(notice) {
            self.episodes.push(record());
        } else if self.rounds.len() < self.limit {
            self.rounds.push(record());
        } else {
            self.rounds_dropped += 1;
        }
    }
}

/// One flow with its resolved addresses.
#[derive(Debug)]
pub struct Flow {
    /// The specification (after workload expansion).
    pub spec: FlowSpec,
    /// Result name.
    pub name: String,
    /// Controller name.
    pub controller: String,
    congestion: Congestion,
    client_ep: usize,
    server_ep: usize,
    /// Notices of the flow's controllers (client and server), with virtual timestamps.
    pub notices: Arc<Mutex<NoticeLog>>,
    /// Per path: (client address, server socket address).
    path_addrs: Vec<(IpAddr, SocketAddr)>,
    stream: Option<StreamId>,
    server_stream: Option<StreamId>,
    paths_opened: usize,
    request_finished: bool,
    response_finished: bool,
    /// The client saw its request stream finished and acknowledged (it knows the server has it).
    request_acked: bool,
    started: bool,
    stopped: bool,
    /// The current transfer, counted from 0 (a repeating flow's next one runs over a new
    /// connection), and when it began.
    transfer: usize,
    transfer_start: Ps,
    /// Progress and measurements.
    pub progress: FlowProgress,
}

impl Flow {
    /// Whether the flow has nothing left to do.
    pub fn is_done(&self) -> bool {
        match self.spec.bytes {
            None => self.stopped,
            Some(_) => self.progress.transfers.len() == self.spec.repeat,
        }
    }

    /// Flow completion time in picoseconds, for sized flows that completed: the time from its
    /// start until the receiving application had everything; a repeating flow's, the sum of its
    /// transfers' (the time spent transferring, as the testbed counts it).
    pub fn fct(&self) -> Option<Ps> {
        self.spec.bytes?;
        let transfers = &self.progress.transfers;
        (transfers.len() == self.spec.repeat).then(|| transfers.iter().map(Transfer::fct).sum())
    }

    /// Time spent transferring until `end`: the completed transfers' FCTs and, if the flow is
    /// not done, the current one's time so far.
    pub fn busy(&self, end: Ps) -> Ps {
        let done: Ps = self.progress.transfers.iter().map(Transfer::fct).sum();
        let current = if self.is_done() { 0 } else { end.saturating_sub(self.transfer_start) };
        done + current
    }
}

struct Ep {
    node: NodeId,
    port: u16,
    flow: usize,
    role: Role,
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    /// The connection's current deadline.
    timer: Option<Ps>,
    /// The earliest timer event in the queue for this endpoint (later ones are stale).
    timer_queued: Option<Ps>,
    /// The connection's coupled controller, for mpquic-cc controllers.
    cc: Option<Arc<SharedController>>,
    /// noq path number -> the controller slot behind it.
    slots: BTreeMap<u64, Slot>,
    /// How the library supervises the connection's paths.
    policy: Policy,
    /// The connection's path supervisor, once there is a connection.
    supervision: Option<Supervision>,
    /// The flow's transfer the connection carries (a repeating flow has one connection each).
    transfer: usize,
    /// Where this endpoint's timer ticks fall within the host's timer period
    /// (`host_timer_granularity`), from the run's seed.
    timer_phase: Ps,
}

enum Ev {
    /// A packet (parked in `Sim::packets`) reaches the far end of a link.
    Arrive(LinkId, usize),
    /// A dual-queue link finished serializing: it takes its next packet.
    LinkFree(LinkId),
    /// A packet (parked in `Sim::packets`) reaches an endpoint after the host's jitter.
    Deliver(usize, usize),
    Timer(usize, Ps),
    /// An endpoint's path supervisor asked to be polled at this instant.
    Supervise(usize, Instant),
    /// The link drops every packet from now on.
    BlackHole(LinkId),
    Connect(usize),
    Start(usize),
    /// Some of a flow's `path_times` are due: the client opens those paths.
    OpenPaths(usize),
    /// A burst source sends its next datagram.
    Burst(usize),
    Stop(usize),
    SampleQueues,
    Trace,
}

struct Scheduled {
    at: Ps,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        // Min-heap on (time, insertion order): ties are broken by insertion, deterministically.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Deterministic connection ids: 8 bytes from a seeded generator.
struct SeededCids {
    rng: SimRng,
}

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0; 8];
        self.rng.fill(&mut b);
        ConnectionId::new(&b)
    }
    fn cid_len(&self) -> usize {
        8
    }
    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// A wall clock frozen at the Unix epoch: the stack asks for system time only for tokens.
#[derive(Debug)]
struct FrozenClock;

impl TimeSource for FrozenClock {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH
    }
}

/// Counters of the run itself.
#[derive(Debug, Clone, Default)]
pub struct RunCounters {
    /// Events processed.
    pub events: u64,
    /// Datagrams emitted by endpoints.
    pub datagrams: u64,
    /// Datagrams that found no route or no endpoint.
    pub undeliverable: u64,
}

/// A simulation, built from a [`Scenario`].
pub struct Sim {
    /// The scenario it runs.
    pub scenario: Scenario,
    now: Ps,
    base: Instant,
    seq: u64,
    events: BinaryHeap<Scheduled>,
    /// Packets on the wire, referred to by their events: the heap then moves small entries
    /// instead of whole packets (sifting them was a few percent of the run time).
    packets: Slab<Packet>,
    /// Hosts and switches.
    pub nodes: Vec<Node>,
    /// Unidirectional links.
    pub links: Vec<Link>,
    /// Flows.
    pub flows: Vec<Flow>,
    endpoints: Vec<Ep>,
    ep_by_addr: HashMap<(NodeId, u16), usize>,
    host_of: HashMap<IpAddr, NodeId>,
    buf: Vec<u8>,
    outbox: Vec<(NodeId, Packet)>,
    monitored: Vec<LinkId>,
    series_every: u64,
    samples_taken: u64,
    /// Counters of the run.
    pub counters: RunCounters,
    finished_at: Option<Ps>,
    /// Per host: jitter generator and the latest delivery time handed out (order is kept).
    jitter: Vec<(SimRng, Ps)>,
    /// Probe-timeout expiries per endpoint (see [`crate::pto`]).
    pub ptos: Arc<Mutex<crate::pto::PtoTally>>,
    /// Server and client handshake configuration, shared by every connection.
    crypto: CryptoConfigs,
    /// Nodes by name.
    node_index: HashMap<String, NodeId>,
    /// The jobs that flows wait for ([`FlowSpec::after`]), by (group, job).
    waiting: HashMap<(Option<String>, usize), Waiting>,
    /// Burst sources.
    pub bursts: Vec<Burst>,
    /// Burst sources by the (receiving host, port) their datagrams go to.
    burst_sinks: HashMap<(NodeId, u16), usize>,
}

/// A job that flows wait for: its flows so far, and the flows to add when they are all done.
#[derive(Default)]
struct Waiting {
    flows: Vec<usize>,
    specs: Vec<FlowSpec>,
}

/// One end's transport configuration, coupled controller and path supervision policy.
type EndTransport = (Arc<TransportConfig>, Option<Arc<SharedController>>, Policy);

/// One event of endpoint `ep`'s connection: its paths registered with the controller and the
/// supervisor as they are established or abandoned, and the client's record of them.
fn on_connection_event(
    ep: &mut Ep,
    flow: &mut Flow,
    conn: &mut Connection,
    event: Event,
    now: Instant,
    now_ps: Ps,
) {
    match event {
        Event::Connected => {
            register_slot(&mut ep.slots, conn, noq_proto::PathId::ZERO);
            if ep.role == Role::Client {
                flow.progress.connected_at = Some(now_ps);
            }
        }
        // A connection whose transfer is over is closed by the client (a repeating flow's): no
        // error.
        Event::ConnectionLost { reason } if ep.transfer == flow.transfer => {
            flow.progress.error = Some(reason.to_string());
        }
        Event::Stream(StreamEvent::Finished { id })
            if ep.role == Role::Client && flow.stream == Some(id) =>
        {
            flow.request_acked = true;
        }
        Event::Path(PathEvent::Established { id, .. }) => {
            register_slot(&mut ep.slots, conn, id);
            if let Some(supervision) = &mut ep.supervision {
                supervision.on_established(now, id);
            }
            if ep.role == Role::Client {
                flow.progress.paths_established.push((path_number(id), now_ps));
            }
        }
        Event::Path(PathEvent::Abandoned { id, reason, .. }) => {
            if let Some(supervision) = &mut ep.supervision {
                supervision.on_abandoned(now, id, &reason, conn);
            }
            // As the mpquic library does: the controller forgets the path and couples over the
            // others.
            if let (Some(cc), Some(slot)) = (&ep.cc, ep.slots.get(&path_number(id))) {
                cc.remove_path(*slot);
            }
            if ep.role == Role::Client {
                flow.progress.paths_abandoned += 1;
            }
        }
        _ => {}
    }
}

/// An endpoint whose keys, connection IDs and randomness come from `seed`'s random streams
/// `stream .. stream + 2`, so that a run repeats to the byte.
fn seeded_endpoint(seed: u64, stream: u64, server: Option<Arc<ServerConfig>>) -> Endpoint {
    let mut cfg = EndpointConfig::new(NullHmacKey::new(SimRng::new(seed, stream).next_u64()));
    let cid_seed = SimRng::new(seed, stream + 1).next_u64();
    cfg.cid_generator(Arc::new(move || {
        Box::new(SeededCids { rng: SimRng::new(cid_seed, 0) }) as Box<dyn ConnectionIdGenerator>
    }));
    let mut rng_seed = [0; 32];
    SimRng::new(seed, stream + 2).fill(&mut rng_seed);
    cfg.rng_seed(Some(rng_seed));
    Endpoint::new(Arc::new(cfg), server, false)
}

/// A server's configuration for one connection, with its coupled controller and path
/// supervision policy.
type ServerEnd = (Arc<ServerConfig>, Option<Arc<SharedController>>, Policy);

/// Server and client handshake configuration.
type CryptoConfigs =
    (Arc<dyn noq_proto::crypto::ServerConfig>, Arc<dyn noq_proto::crypto::ClientConfig>);

/// The handshake configuration for `suite`.
fn crypto_configs(suite: CryptoSuite) -> Result<CryptoConfigs, ScenarioError> {
    Ok(match suite {
        CryptoSuite::Null => (Arc::new(NullServerConfig), Arc::new(NullClientConfig)),
        CryptoSuite::Tls => {
            let tls_error = |e: mpquic::TlsError| ScenarioError::Invalid(format!("tls: {e}"));
            // Clients connect to the name "sim" and verify the certificate, as the library does.
            let identity =
                mpquic::Identity::self_signed(&[SERVER_NAME.into()]).map_err(tls_error)?;
            let trust = mpquic::Trust::Roots(identity.chain.clone());
            (
                identity.server_crypto().map_err(tls_error)?,
                trust.client_crypto().map_err(tls_error)?,
            )
        }
    })
}

/// The written flows' fields the simulator refuses, at the field (workloads never set them):
/// `paths_per_pair`, which only the testbed has (the simulator spreads a flow's `paths` over the
/// addresses, so more paths than addresses share their links already), and `repeat` on a bulk
/// flow (it has no end to repeat after).
fn refuse_unsupported(s: &Scenario) -> Result<(), ScenarioError> {
    for (i, f) in s.flows.iter().enumerate() {
        if f.paths_per_pair > 1 {
            return Err(at(
                format!("flows.{i}.paths_per_pair"),
                "sim: paths_per_pair is the testbed's (write more `paths`: they spread over the \
                 addresses)",
            ));
        }
        if f.repeat > 1 && f.bytes.is_none() {
            return Err(at(
                format!("flows.{i}.repeat"),
                "sim: repeat needs `bytes` (a bulk flow has no end to repeat after)",
            ));
        }
    }
    Ok(())
}

impl Sim {
    /// The name (`from->to`) of the link that delivers to address `ip` (a path to that address
    /// crosses it last).
    pub fn link_into(&self, ip: IpAddr) -> Option<&str> {
        crate::net::link_into(&self.nodes, &self.links, *self.host_of.get(&ip)?, ip)
    }

    /// Build the network, endpoints and flows of a scenario.
    pub fn new(scenario: Scenario) -> Result<Sim, ScenarioError> {
        refuse_unsupported(&scenario)?;
        let expanded = scenario.topology.expand()?;
        let Network { nodes, links, index: node_index, host_of } =
            Network::build(&expanded, &scenario)?;
        let hosts = expanded.hosts;

        let monitored: Vec<LinkId> =
            links.iter().enumerate().filter(|(_, l)| l.params.monitor).map(|(i, _)| i).collect();
        let q = scenario.output.queue_sample.0.max(1);
        let total_samples = scenario.duration.0 / q;
        let series_every =
            (total_samples / scenario.output.queue_series_points.max(1) as u64).max(1);

        let mut sim = Sim {
            now: 0,
            base: Instant::now(),
            seq: 0,
            events: BinaryHeap::new(),
            packets: Slab::new(),
            nodes,
            links,
            flows: vec![],
            endpoints: vec![],
            ep_by_addr: HashMap::new(),
            host_of,
            buf: Vec::with_capacity(2048),
            outbox: vec![],
            monitored,
            series_every,
            samples_taken: 0,
            counters: RunCounters::default(),
            finished_at: None,
            jitter: (0..hosts.len())
                .map(|h| (SimRng::new(scenario.seed, 0x4a49_0000 + h as u64), 0))
                .collect(),
            ptos: Arc::default(),
            crypto: crypto_configs(scenario.transport.crypto)?,
            node_index,
            waiting: HashMap::new(),
            bursts: vec![],
            burst_sinks: HashMap::new(),
            scenario,
        };

        sim.add_flows(&hosts)?;
        sim.add_bursts()?;
        // A link the scenario writes down (`down_at`) fails as a test's black hole does.
        for link in 0..sim.links.len() {
            if let Some(at) = sim.links[link].params.down_at {
                sim.black_hole(link, at);
            }
        }
        if !sim.monitored.is_empty() {
            sim.schedule(0, Ev::SampleQueues);
        }
        sim.schedule(0, Ev::Trace);
        Ok(sim)
    }

    /// The run's flows, written and generated (`hosts`: the topology's): those that wait for a
    /// job parked until it completes, the others added now, in order.
    fn add_flows(&mut self, hosts: &[HostSpec]) -> Result<(), ScenarioError> {
        let flows = expand_workloads(&self.scenario, hosts)?;
        if flows.len() > MAX_FLOWS {
            return Err(ScenarioError::Invalid(format!("at most {MAX_FLOWS} flows")));
        }
        // The waiting flows first, so that the jobs they wait for know their flows as they come.
        let mut ready = vec![];
        for spec in flows {
            match spec.after {
                Some(after) => self.park(spec, after.job)?,
                None => ready.push(spec),
            }
        }
        ready.into_iter().try_for_each(|spec| self.add_flow(spec))
    }

    /// The scenario's burst sources, each with its first datagram's event (validation checked
    /// their hosts and addresses).
    fn add_bursts(&mut self) -> Result<(), ScenarioError> {
        let sources = mpquic_scenario::bursts::sources(&self.scenario);
        if sources.len() > MAX_BURSTS {
            return Err(ScenarioError::Invalid(format!("at most {MAX_BURSTS} burst sources")));
        }
        for (i, source) in sources.iter().enumerate() {
            let host = |name: &str| {
                let node = self.node_index.get(name).copied();
                node.ok_or_else(|| ScenarioError::Invalid(format!("bursts: no host `{name}`")))
            };
            let (from, to) = (host(&source.from)?, host(&source.to)?);
            let address = |node: NodeId, addr: usize| {
                let ip = self.host_ips(node).get(addr).copied();
                ip.ok_or_else(|| ScenarioError::Invalid(format!("bursts: no address {addr}")))
            };
            let ips = (address(from, source.from_addr)?, address(to, source.to_addr)?);
            let link = self.link_into(ips.1).map(String::from);
            let burst = Burst::new(i, source, from, ips, link);
            self.burst_sinks.insert((to, burst.port()), i);
            if let Some(at) = burst.first() {
                self.schedule(at, Ev::Burst(i));
            }
            self.bursts.push(burst);
        }
        Ok(())
    }

    /// Flow `spec` as the run's next flow: its endpoints and its events. A flow of a job that
    /// others wait for joins that job's flows.
    fn add_flow(&mut self, spec: FlowSpec) -> Result<(), ScenarioError> {
        let i = self.flows.len();
        let (client, server) = self.flow_hosts(&spec)?;
        let congestion = self.congestion(&spec)?;
        let controller = self.controller_of(&spec).text().to_owned();
        if let Some(job) = spec.job {
            if let Some(waiting) = self.waiting.get_mut(&(spec.group.clone(), job)) {
                waiting.flows.push(i);
            }
        }
        let notices = Arc::new(Mutex::new(NoticeLog {
            limit: self.scenario.output.notice_limit,
            ..NoticeLog::default()
        }));
        let (client_port, server_port) = (10_000 + i as u16, 30_000 + i as u16);
        let path_addrs = self.path_addrs(&spec, client, server, server_port);
        let server_end = self.server_config(&congestion, spec.paths, &notices)?;
        let client_ep = self.endpoints.len();
        let server_ep = client_ep + 1;
        self.add_endpoints(i, (client, client_port), (server, server_port), server_end);
        self.schedule_flow(i, &spec);
        let name = spec.name.clone().unwrap_or_else(|| format!("flow{i}"));
        let spec_start = spec.start.0;
        self.flows.push(Flow {
            spec,
            name,
            controller,
            congestion,
            client_ep,
            server_ep,
            notices,
            path_addrs,
            stream: None,
            server_stream: None,
            paths_opened: 1,
            request_finished: false,
            response_finished: false,
            request_acked: false,
            started: false,
            stopped: false,
            transfer: 0,
            transfer_start: spec_start,
            progress: FlowProgress::default(),
        });
        Ok(())
    }

    /// Flow `spec`'s controller as written: its own, else the scenario's.
    fn controller_of<'a>(&'a self, spec: &'a FlowSpec) -> &'a ControllerSpec {
        spec.controller.as_ref().unwrap_or(&self.scenario.controller)
    }

    /// The library's controller of flow `spec`.
    fn congestion(&self, spec: &FlowSpec) -> Result<Congestion, ScenarioError> {
        let written = self.controller_of(spec);
        Ok(written.congestion().map_err(|e| ScenarioError::Invalid(e.into()))?.clone())
    }

    /// Keep flow `spec` until job `job` of its group completes; checked now as it would be when
    /// added, and for what a waiting flow cannot have (times since the run's start, before its
    /// own start is known, or no end to complete after).
    fn park(&mut self, spec: FlowSpec, job: usize) -> Result<(), ScenarioError> {
        self.flow_hosts(&spec)?;
        self.options(&self.congestion(&spec)?, spec.paths)?;
        if spec.bytes.is_none() || spec.stop.is_some() || !spec.path_times.is_empty() {
            return Err(ScenarioError::Invalid(format!(
                "flow {}: a flow that waits for a job needs `bytes`, and no `stop` or \
                 `path_times`",
                spec.name.as_deref().unwrap_or(&spec.from)
            )));
        }
        self.waiting.entry((spec.group.clone(), job)).or_default().specs.push(spec);
        Ok(())
    }

    /// Flow `f` is done. If that completes a job that flows wait for, they are added now,
    /// each to start its `gap` later; one whose start would not come before the run's end is
    /// left out (it never starts, as in a run that ended before its turn).
    fn start_waiting(&mut self, f: usize) {
        let spec = &self.flows[f].spec;
        let Some(key) = spec.job.map(|job| (spec.group.clone(), job)) else { return };
        let Some(waiting) = self.waiting.get(&key) else { return };
        if !waiting.flows.iter().all(|&g| self.flows[g].is_done()) {
            return;
        }
        let specs = self.waiting.remove(&key).map(|w| w.specs).unwrap_or_default();
        for mut spec in specs {
            let start = self.now + spec.after.map_or(0, |a| a.gap.0);
            if start >= self.scenario.duration.0 {
                continue;
            }
            spec.start = Dur(start);
            // Its checks passed when it was parked (`park`), and a run adds no more flows than
            // it expanded, at most `MAX_FLOWS`: adding it cannot fail.
            self.add_flow(spec).expect("a waiting flow was checked when it was parked");
        }
    }

    /// The (client, server) hosts of flow `spec`, after checking what the simulator cannot run.
    fn flow_hosts(&self, spec: &FlowSpec) -> Result<(NodeId, NodeId), ScenarioError> {
        let invalid = |m: String| ScenarioError::Invalid(m);
        let node = |name: &str| -> Result<NodeId, ScenarioError> {
            match self.node_index.get(name) {
                Some(&n) if matches!(self.nodes[n], Node::Host { .. }) => Ok(n),
                _ => Err(invalid(format!("flow endpoint `{name}` is not a host"))),
            }
        };
        let client = node(&spec.from)?;
        let server = node(&spec.to)?;
        if client == server {
            return Err(invalid(format!("flow from {} to itself", spec.from)));
        }
        if spec.paths == 0 {
            return Err(invalid("a flow needs at least one path".into()));
        }
        spec.check_path_times().map_err(invalid)?;
        spec.check_backup_paths().map_err(invalid)?;
        Ok((client, server))
    }

    /// A flow's paths as (client address, server socket): path `p` from the client's address
    /// `from_addr + p` to the server's `to_addr + p`, each wrapping around the host's addresses.
    fn path_addrs(
        &self,
        spec: &FlowSpec,
        client: NodeId,
        server: NodeId,
        server_port: u16,
    ) -> Vec<(IpAddr, SocketAddr)> {
        let client_ips = self.host_ips(client);
        let server_ips = self.host_ips(server);
        (0..spec.paths)
            .map(|p| {
                let c = client_ips[(spec.from_addr + p) % client_ips.len()];
                let s = server_ips[(spec.to_addr + p) % server_ips.len()];
                (c, SocketAddr::new(s, server_port))
            })
            .collect()
    }

    /// Flow `i`'s client and server endpoints, in that order, each seeded from the run's seed
    /// and the flow's own random streams so that flows do not share randomness.
    fn add_endpoints(
        &mut self,
        i: usize,
        (client, client_port): (NodeId, u16),
        (server, server_port): (NodeId, u16),
        (server_config, server_cc, policy): ServerEnd,
    ) {
        let seed = self.scenario.seed;
        let base_stream = 0x4550_0000 + 8 * i as u64;
        let ends = [
            (client, client_port, Role::Client, base_stream, None, None),
            (server, server_port, Role::Server, base_stream + 4, Some(server_config), server_cc),
        ];
        let tick = self.scenario.host_timer_granularity.0;
        for (node, port, role, stream, config, cc) in ends {
            let endpoint = seeded_endpoint(seed, stream, config);
            let timer_phase = match tick {
                0 => 0,
                // The stream after the three `seeded_endpoint` takes.
                _ => SimRng::new(seed, stream + 3).next_u64() % tick,
            };
            self.ep_by_addr.insert((node, port), self.endpoints.len());
            self.endpoints.push(Ep {
                node,
                port,
                flow: i,
                role,
                endpoint,
                conn: None,
                timer: None,
                timer_queued: None,
                cc,
                slots: BTreeMap::new(),
                policy,
                supervision: None,
                transfer: 0,
                timer_phase,
            });
        }
    }

    /// Flow `i`'s events: its handshake, the paths it opens later, its start, and the stop of a
    /// flow without a size.
    fn schedule_flow(&mut self, i: usize, spec: &FlowSpec) {
        let connect_at = spec.connect_at().0;
        self.schedule(connect_at, Ev::Connect(i));
        // Paths opened later than the handshake: wake the client at each such time.
        let mut later: Vec<Ps> =
            spec.path_times.iter().map(|t| t.0).filter(|&t| t > connect_at).collect();
        later.dedup();
        for at in later {
            self.schedule(at, Ev::OpenPaths(i));
        }
        self.schedule(spec.start.0, Ev::Start(i));
        if spec.bytes.is_none() {
            let stop = spec.stop.unwrap_or(self.scenario.duration).0;
            self.schedule(stop, Ev::Stop(i));
        }
    }

    /// The server's configuration for one connection of a flow: the handshake's, and a fresh
    /// transport with its coupled controller (mpquic-cc controllers), as the library's server
    /// gives every connection it accepts.
    fn server_config(
        &self,
        congestion: &Congestion,
        paths: usize,
        notices: &Arc<Mutex<NoticeLog>>,
    ) -> Result<ServerEnd, ScenarioError> {
        let (transport, server_cc, policy) =
            self.transport_config(congestion, paths, Side::Server, notices)?;
        let mut server_config = ServerConfig::new(self.crypto.0.clone(), Arc::new(NullTokenKey));
        server_config.transport_config(transport);
        let mut tokens = ValidationTokenConfig::default();
        tokens.sent(0);
        server_config.validation_token_config(tokens);
        server_config.time_source(Arc::new(FrozenClock));
        Ok((Arc::new(server_config), server_cc, policy))
    }

    /// Probe-timeout expiries of flow `f`: (client, server), and the virtual times of all.
    pub fn flow_ptos(&self, f: usize) -> (u64, u64, Vec<Ps>) {
        let flow = &self.flows[f];
        let t = self.ptos.lock().unwrap_or_else(|p| p.into_inner());
        let n = |ep: usize| t.per_endpoint.get(ep).copied().unwrap_or(0);
        let times = t
            .events
            .iter()
            .filter(|(ep, _)| *ep == flow.client_ep || *ep == flow.server_ep)
            .map(|&(_, at)| at)
            .collect();
        (n(flow.client_ep), n(flow.server_ep), times)
    }

    /// Whether the client's and the server's ACK_FREQUENCY request (QUIC's ACK frequency
    /// extension) never reached the peer. With an ACK profile (exact ECN, or
    /// `transport.max_ack_delay`) each end sends one request after the handshake; released
    /// noq-proto 1.4 does not send a lost one again (its per-poll "should send a new request"
    /// check overwrites the retransmission flag; fixed in the vendored copy, PATCHES.md D1), so
    /// such a connection keeps the peer's default ACK behaviour and, for the PTO, its 25 ms
    /// max_ack_delay.
    pub fn ack_frequency_lost(&mut self, f: usize) -> (bool, bool) {
        let (client, server) = (self.flows[f].client_ep, self.flows[f].server_ep);
        let mut frames = |ep: usize| {
            self.endpoints[ep].conn.as_mut().map_or((0, 0), |(_, c)| {
                let stats = c.stats();
                (stats.frame_tx.ack_frequency, stats.frame_rx.ack_frequency)
            })
        };
        let ((client_tx, client_rx), (server_tx, server_rx)) = (frames(client), frames(server));
        (client_tx > 0 && server_rx == 0, server_tx > 0 && client_rx == 0)
    }

    /// Final statistics of the client's paths of flow `f`.
    pub fn client_path_stats(&mut self, f: usize) -> Vec<mpquic::PathReport> {
        let flow = &self.flows[f];
        let ep = &mut self.endpoints[flow.client_ep];
        let Some((_, conn)) = &mut ep.conn else { return vec![] };
        let snapshot = ep.cc.as_ref().map(|cc| cc.snapshot());
        let mut out = vec![];
        for path in conn.paths() {
            let Some(stats) = conn.path_stats(path) else { continue };
            let Ok(tuple) = conn.network_path(path) else { continue };
            let local = tuple.local_ip().or_else(|| flow.path_addrs.first().map(|a| a.0));
            let status = conn.path_status(path).unwrap_or_default();
            let remote = Some(tuple.remote());
            let ends = mpquic::PathEnds { local, remote, status, closed: None };
            let slot = ep.slots.get(&path_number(path));
            let cc = slot.and_then(|&slot| snapshot.as_ref()?.path(slot));
            let measured = slot.and_then(|&slot| ep.cc.as_ref()?.slot_report(slot));
            out.push(mpquic::internals::path_report(
                path,
                ends,
                Some(&stats),
                cc,
                measured.as_ref(),
            ));
        }
        mpquic::internals::set_shares(&mut out);
        out
    }

    /// The mpquic-cc controllers of flow `f` at this moment: the client's, and the server's if
    /// the server sends a response. Per controller: end, snapshot, inactive time per slot.
    pub fn controllers(
        &self,
        f: usize,
    ) -> Vec<(Side, mpquic_cc::ConnectionSnapshot, Vec<Duration>)> {
        let flow = &self.flows[f];
        let mut ends = vec![(Side::Client, flow.client_ep)];
        if flow.spec.response_bytes > 0 {
            ends.push((Side::Server, flow.server_ep));
        }
        ends.into_iter()
            .filter_map(|(side, ep)| {
                let cc = self.endpoints[ep].cc.as_ref()?;
                let snapshot = cc.snapshot();
                let slots = snapshot.paths.iter().map(|p| p.path.0).max().map_or(0, |m| m + 1);
                let inactive = (0..slots)
                    .map(|s| cc.slot_report(Slot(s)).map_or(Duration::ZERO, |r| r.inactive))
                    .collect();
                Some((side, snapshot, inactive))
            })
            .collect()
    }

    fn host_ips(&self, node: NodeId) -> Vec<IpAddr> {
        match &self.nodes[node] {
            Node::Host { interfaces, .. } => interfaces.iter().map(|i| i.ip).collect(),
            Node::Switch { .. } => vec![],
        }
    }

    /// The library's options for a connection of `paths` paths under `congestion`, from the
    /// scenario's transport settings, checked.
    fn options(
        &self,
        congestion: &Congestion,
        paths: usize,
    ) -> Result<mpquic::Options, ScenarioError> {
        let t = &self.scenario.transport;
        let options = mpquic::Options {
            congestion: congestion.clone(),
            scheduler: t.scheduler.clone(),
            ecn: t.ecn,
            max_ack_delay: t.max_ack_delay.map(|d| Duration::from_nanos(d.0 / 1000)),
            receive_window: Some(t.window),
            max_paths: paths as u32,
            ..mpquic::Options::default()
        };
        options.validate().map_err(|e| ScenarioError::Invalid(format!("transport: {e}")))?;
        Ok(options)
    }

    /// A fresh transport (and so a fresh controller factory: one per connection) for one end of
    /// a flow, made by the library from the scenario's transport options; the coupled
    /// controller's notices go to `log`.
    fn transport_config(
        &self,
        congestion: &Congestion,
        paths: usize,
        side: Side,
        log: &Arc<Mutex<NoticeLog>>,
    ) -> Result<EndTransport, ScenarioError> {
        let t = &self.scenario.transport;
        let options = self.options(congestion, paths)?;
        let (mut c, shared) = mpquic::internals::transport_config(&options);
        if let Some(shared) = &shared {
            let log = log.clone();
            let base = self.base;
            shared.set_notice_sink(Box::new(move |at: Instant, notice: &Notice| {
                let ps = at.saturating_duration_since(base).as_nanos() as u64 * 1000;
                log.lock().unwrap_or_else(|p| p.into_inner()).push(ps, side, notice);
            }));
        }
        // What is about simulating: the scenario's fixed MTU and initial RTT, and no spin bit.
        // Idle timeouts and keep-alives are the library's, and so is the path supervision
        // (`crate::supervise`), which the event loop drives.
        c.initial_mtu(t.mtu);
        c.min_mtu(t.mtu);
        c.mtu_discovery_config(None);
        c.initial_rtt(Duration::from_nanos(t.initial_rtt.0 / 1000));
        c.allow_spin(false);
        Ok((Arc::new(c), shared, Policy::of(&options)))
    }

    /// From virtual time `at` on, `link` drops every packet offered to it (a path failure).
    pub fn black_hole(&mut self, link: LinkId, at: Ps) {
        self.schedule(at, Ev::BlackHole(link));
    }

    /// Current virtual time.
    pub fn now(&self) -> Ps {
        self.now
    }

    fn instant(&self, t: Ps) -> Instant {
        self.base + Duration::from_nanos(t / 1000)
    }

    fn schedule(&mut self, at: Ps, ev: Ev) {
        self.seq += 1;
        self.events.push(Scheduled { at, seq: self.seq, ev });
    }

    /// Run until the scenario's duration (or until every flow is done, if so configured).
    pub fn run(&mut self) {
        let counter = crate::pto::PtoCounter(self.ptos.clone());
        tracing::subscriber::with_default(counter, || self.run_events());
    }

    fn run_events(&mut self) {
        let end = self.scenario.duration.0;
        while let Some(top) = self.events.peek() {
            if top.at > end {
                break;
            }
            let Scheduled { at, ev, .. } = self.events.pop().expect("peeked");
            self.now = at;
            self.counters.events += 1;
            self.handle(ev);
            if self.finished_at.is_some() {
                break;
            }
        }
        if self.finished_at.is_none() {
            self.now = end;
        }
    }

    /// Virtual time the run ended at.
    pub fn end_time(&self) -> Ps {
        self.finished_at.unwrap_or(self.scenario.duration.0)
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive(link, key) => {
                let node = self.links[link].params.to;
                let packet = self.packets.remove(key);
                self.receive(node, packet);
            }
            Ev::Deliver(ep, key) => {
                let packet = self.packets.remove(key);
                self.deliver(ep, packet);
            }
            Ev::LinkFree(link) => self.serve(link),
            Ev::Timer(ep, at) => self.on_timer(ep, at),
            Ev::Supervise(ep, at) => self.on_supervise(ep, at),
            Ev::BlackHole(link) => self.links[link].params.loss = 1.0,
            Ev::Connect(f) => self.connect(f),
            Ev::Start(f) => {
                self.flows[f].started = true;
                let ep = self.flows[f].client_ep;
                self.service(ep);
            }
            Ev::OpenPaths(f) => {
                let ep = self.flows[f].client_ep;
                self.service(ep);
            }
            Ev::Burst(b) => {
                let (packet, next) = self.bursts[b].emit(self.now);
                if let Some(at) = next {
                    self.schedule(at, Ev::Burst(b));
                }
                self.send_from_host(self.bursts[b].node, packet);
            }
            Ev::Stop(f) => {
                self.flows[f].stopped = true;
                let ep = self.flows[f].client_ep;
                self.service(ep);
                self.check_done();
            }
            Ev::SampleQueues => self.sample_queues(),
            Ev::Trace => {
                self.trace();
                let next = self.now + self.scenario.output.trace_interval.0.max(1);
                self.schedule(next, Ev::Trace);
            }
        }
    }

    /// Endpoint `ep`'s timer event queued for `at`: the connection's timeout if its deadline
    /// has come, else the event again at the deadline it moved to.
    fn on_timer(&mut self, ep: usize, at: Ps) {
        let now = self.instant(self.now);
        let e = &mut self.endpoints[ep];
        if e.timer_queued != Some(at) {
            return; // superseded by an earlier event
        }
        e.timer_queued = None;
        match e.timer {
            Some(deadline) if deadline <= self.now => {
                e.timer = None;
                if let Some((_, conn)) = &mut e.conn {
                    self.ptos.lock().unwrap_or_else(|p| p.into_inner()).current =
                        Some((ep, self.now));
                    conn.handle_timeout(now);
                    self.ptos.lock().unwrap_or_else(|p| p.into_inner()).current = None;
                }
                self.service(ep);
            }
            Some(deadline) => {
                // The deadline moved later since this event was queued.
                let at = self.wake_time(ep, deadline);
                self.endpoints[ep].timer_queued = Some(at);
                self.schedule(at, Ev::Timer(ep, at));
            }
            None => {}
        }
    }

    /// When endpoint `ep`'s host wakes it for a timer due at `deadline`: at the deadline, or
    /// with `host_timer_granularity` at the endpoint's first tick not before it.
    fn wake_time(&self, ep: usize, deadline: Ps) -> Ps {
        let tick = self.scenario.host_timer_granularity.0;
        if tick == 0 {
            return deadline;
        }
        let phase = self.endpoints[ep].timer_phase;
        let since = deadline.saturating_sub(phase);
        phase + since.div_ceil(tick) * tick
    }

    /// Endpoint `ep_id`'s path supervisor asked to be polled at `at`.
    fn on_supervise(&mut self, ep_id: usize, at: Instant) {
        let now = self.instant(self.now);
        let ep = &mut self.endpoints[ep_id];
        let (Some(supervision), Some((_, conn))) = (&mut ep.supervision, &mut ep.conn) else {
            return;
        };
        if supervision.queued != Some(at) {
            return; // superseded by an earlier wake-up
        }
        supervision.queued = None;
        supervision.poll(now, conn, ep.cc.as_deref(), &ep.slots);
        self.service(ep_id);
    }

    /// One sample of every monitored link's queue (kept in the series every `series_every`-th
    /// time), and the next sample's event.
    fn sample_queues(&mut self) {
        let keep = self.samples_taken.is_multiple_of(self.series_every);
        self.samples_taken += 1;
        for i in 0..self.monitored.len() {
            let l = self.monitored[i];
            self.links[l].sample(self.now, keep);
        }
        let next = self.now + self.scenario.output.queue_sample.0.max(1);
        self.schedule(next, Ev::SampleQueues);
    }

    fn trace(&mut self) {
        let now = self.now;
        for f in 0..self.flows.len() {
            let flow = &mut self.flows[f];
            if !flow.started || flow.is_done() {
                continue;
            }
            let ep = &mut self.endpoints[flow.client_ep];
            let Some((_, conn)) = &mut ep.conn else { continue };
            let snapshot = ep.cc.as_ref().map(|cc| cc.snapshot());
            for path in conn.paths() {
                let Some(cc) = conn.congestion_state(path) else { continue };
                let n = path_number(path);
                let rtt_ns = conn.rtt(path).map_or(0, |d| d.as_nanos() as u64);
                let point = match &snapshot {
                    Some(snapshot) => {
                        let Some(p) = ep.slots.get(&n).and_then(|&slot| snapshot.path(slot)) else {
                            continue;
                        };
                        TracePoint {
                            at: now,
                            window: p.window,
                            rtt_ns,
                            alpha: p.alpha,
                            active: p.active,
                        }
                    }
                    None => TracePoint {
                        at: now,
                        window: cc.window(),
                        rtt_ns,
                        alpha: None,
                        active: true,
                    },
                };
                flow.progress.traces.entry(n).or_default().push(point);
            }
        }
    }

    fn check_done(&mut self) {
        if self.scenario.output.stop_when_done && self.flows.iter().all(|f| f.is_done()) {
            self.finished_at = Some(self.now);
        }
    }

    fn connect(&mut self, f: usize) {
        let flow = &self.flows[f];
        let ep_id = flow.client_ep;
        let (local_ip, remote) = flow.path_addrs[0];
        let (transport, client_cc, _) = match self.transport_config(
            &flow.congestion,
            flow.spec.paths,
            Side::Client,
            &flow.notices,
        ) {
            Ok(t) => t,
            Err(e) => {
                self.flows[f].progress.error = Some(e.to_string());
                return;
            }
        };
        let mut config = ClientConfig::new(self.crypto.1.clone());
        config.transport_config(transport);
        // Each transfer's connection gets its own initial destination CIDs (the first's are as
        // before).
        let transfer = flow.transfer;
        let stream = 0x4943_0000 + f as u64 + ((transfer as u64) << 32);
        let counter = Arc::new(AtomicU64::new(SimRng::new(self.scenario.seed, stream).next_u64()));
        config.initial_dst_cid_provider(Arc::new(move || {
            let x = counter.fetch_add(1, AtomicOrdering::Relaxed);
            let mut b = [0; 8];
            SimRng::new(x, 7).fill(&mut b);
            ConnectionId::new(&b)
        }));
        let now = self.instant(self.now);
        let ep = &mut self.endpoints[ep_id];
        debug_assert_eq!(ep.role, Role::Client);
        let _ = local_ip; // the first path's local address: the host's first interface
        match ep.endpoint.connect(now, config, remote, SERVER_NAME) {
            Ok(conn) => {
                replace_connection(ep, conn, transfer);
                ep.cc = client_cc;
                ep.supervision = Some(ep.policy.start(true, now));
                self.service(ep_id);
            }
            Err(e) => self.flows[f].progress.error = Some(format!("connect: {e}")),
        }
    }

    /// The client of flow `f` knows its transfer is over and more are due: the next one begins
    /// now, over a new connection (its own handshake, paths and controllers) from the same
    /// endpoint, as the CLI's `send --repeat` does, or with `repeat_over = "one-connection"` on
    /// a new stream of the same connection (`send --repeat --same-connection`).
    fn next_transfer(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        flow.transfer += 1;
        flow.transfer_start = self.now;
        flow.stream = None;
        flow.server_stream = None;
        flow.request_finished = false;
        flow.response_finished = false;
        flow.request_acked = false;
        let same = flow.spec.repeat_over == RepeatOver::OneConnection;
        flow.progress = next_progress(std::mem::take(&mut flow.progress), same);
        if same {
            self.next_stream(f);
        } else {
            self.flows[f].paths_opened = 1;
            self.connect(f);
        }
    }

    /// The next transfer of flow `f` runs over the connection its endpoints have: they carry
    /// it now (a loss of the connection is this transfer's error), and the client writes it.
    fn next_stream(&mut self, f: usize) {
        let flow = &self.flows[f];
        for ep in [flow.client_ep, flow.server_ep] {
            self.endpoints[ep].transfer = flow.transfer;
        }
        self.service(flow.client_ep);
    }

    /// The server of a flow takes a new connection: the flow's first, or a repeating flow's next
    /// one (once its connection's transfer is over), which gets a fresh transport and
    /// controller. Anything else is ignored.
    fn accept(&mut self, ep_id: usize, incoming: Incoming, now: Instant) {
        let ep = &self.endpoints[ep_id];
        let (f, transfer) = (ep.flow, self.flows[ep.flow].transfer);
        let wanted = ep.role == Role::Server && (ep.conn.is_none() || ep.transfer < transfer);
        let fresh = if wanted && ep.conn.is_some() {
            let flow = &self.flows[f];
            Some(self.server_config(&flow.congestion, flow.spec.paths, &flow.notices))
        } else {
            None
        };
        let ep = &mut self.endpoints[ep_id];
        let (config, cc) = match fresh.transpose() {
            _ if !wanted => return ep.endpoint.ignore(incoming),
            Ok(fresh) => fresh.map(|(config, cc, _)| (config, cc)).unzip(),
            Err(e) => {
                ep.endpoint.ignore(incoming);
                self.flows[f].progress.error = Some(e.to_string());
                return;
            }
        };
        match ep.endpoint.accept(incoming, now, &mut Vec::new(), config) {
            Ok(conn) => {
                replace_connection(ep, conn, transfer);
                if let Some(cc) = cc {
                    ep.cc = cc;
                }
                ep.supervision = Some(ep.policy.start(false, now));
            }
            Err(e) => self.flows[f].progress.error = Some(format!("accept: {}", e.cause)),
        }
    }

    /// A datagram reached `node`.
    fn receive(&mut self, node: NodeId, packet: Packet) {
        match &self.nodes[node] {
            Node::Switch { routes, salt, .. } => {
                let Some(choices) = routes.get(&packet.dst.ip()) else {
                    self.counters.undeliverable += 1;
                    return;
                };
                let link = if choices.len() == 1 {
                    choices[0]
                } else {
                    let h = ecmp_hash(&packet.src, &packet.dst, *salt);
                    choices[(h % choices.len() as u64) as usize]
                };
                self.enqueue(link, packet);
            }
            Node::Host { .. } => {
                if self.host_of.get(&packet.dst.ip()) != Some(&node) {
                    self.counters.undeliverable += 1;
                    return;
                }
                let at = (node, packet.dst.port());
                let Some(&ep) = self.ep_by_addr.get(&at) else {
                    // A burst source's datagram ends here, counted; anything else is lost.
                    match self.burst_sinks.get(&at) {
                        Some(&b) => self.bursts[b].delivered(&packet),
                        None => self.counters.undeliverable += 1,
                    }
                    return;
                };
                let jitter = self.scenario.host_jitter.0;
                if jitter == 0 {
                    self.deliver(ep, packet);
                } else {
                    let (rng, last) = &mut self.jitter[node];
                    let at = (self.now + rng.next_u64() % jitter).max(*last);
                    *last = at;
                    let key = self.packets.insert(packet);
                    self.schedule(at, Ev::Deliver(ep, key));
                }
            }
        }
    }

    fn deliver(&mut self, ep_id: usize, packet: Packet) {
        let now = self.instant(self.now);
        let ep = &mut self.endpoints[ep_id];
        let path = FourTuple::new(packet.src, Some(packet.dst.ip()));
        self.buf.clear();
        let Some(event) = ep.endpoint.handle(now, path, packet.ecn, packet.data, &mut self.buf)
        else {
            return;
        };
        match event {
            DatagramEvent::ConnectionEvent(ch, event) => {
                if let Some((h, conn)) = &mut ep.conn {
                    if *h == ch {
                        conn.handle_event(event);
                    }
                }
            }
            DatagramEvent::NewConnection(incoming) => self.accept(ep_id, incoming, now),
            DatagramEvent::Response(transmit) => {
                let data = BytesMut::from(&self.buf[..transmit.size]);
                let src_ip = transmit.src_ip.unwrap_or(packet.dst.ip());
                let p = Packet {
                    src: SocketAddr::new(src_ip, ep.port),
                    dst: transmit.destination,
                    ecn: transmit.ecn,
                    data,
                };
                let node = ep.node;
                self.send_from_host(node, p);
            }
        }
        self.service(ep_id);
    }

    /// Run the application and the connection of one endpoint until it has nothing to send.
    fn service(&mut self, ep_id: usize) {
        let now_ps = self.now;
        let now = self.instant(now_ps);
        // Out of its endpoint while it runs, so that the endpoint's other fields and the
        // simulator's can be borrowed beside it; nothing below reads `conn` through `ep`.
        let Some((ch, mut conn)) = self.endpoints[ep_id].conn.take() else { return };
        let f = self.endpoints[ep_id].flow;
        let next_transfer = self.run_connection(ep_id, ch, &mut conn, now, now_ps);
        let done = self.flows[f].is_done();
        self.arm_wake_ups(ep_id, &mut conn, now_ps);
        self.endpoints[ep_id].conn = Some((ch, conn));
        let outbox = std::mem::take(&mut self.outbox);
        self.counters.datagrams += outbox.len() as u64;
        for (node, p) in outbox {
            self.send_from_host(node, p);
        }
        if done {
            self.start_waiting(f);
            self.check_done();
        }
        if next_transfer {
            self.next_transfer(f);
        }
    }

    /// Endpoint `ep_id`'s connection events, application and transmissions (into the outbox),
    /// round after round until the connection has no endpoint event left; whether the client
    /// finished a transfer and the next one is due.
    fn run_connection(
        &mut self,
        ep_id: usize,
        ch: ConnectionHandle,
        conn: &mut Connection,
        now: Instant,
        now_ps: Ps,
    ) -> bool {
        let gp_bucket = (now_ps / self.scenario.output.goodput_interval.0.max(1)) as usize;
        // The client closed its connection after a transfer, and the next one is due.
        let mut next_transfer = false;
        loop {
            let ep = &mut self.endpoints[ep_id];
            let flow = &mut self.flows[ep.flow];
            while let Some(event) = conn.poll() {
                on_connection_event(ep, flow, conn, event, now, now_ps);
            }
            match ep.role {
                Role::Client => next_transfer |= client_app(flow, conn, now, now_ps, gp_bucket),
                Role::Server => server_app(flow, conn, now_ps, gp_bucket),
            }
            self.transmit(ep_id, conn, now);
            let ep = &mut self.endpoints[ep_id];
            let mut more = false;
            while let Some(event) = conn.poll_endpoint_events() {
                more = true;
                if let Some(back) = ep.endpoint.handle_event(ch, event) {
                    conn.handle_event(back);
                }
            }
            if !more {
                return next_transfer;
            }
        }
    }

    /// The datagrams endpoint `ep_id`'s connection has to send now, into the outbox (a GSO
    /// batch split into its datagrams).
    fn transmit(&mut self, ep_id: usize, conn: &mut Connection, now: Instant) {
        let (node, port) = (self.endpoints[ep_id].node, self.endpoints[ep_id].port);
        loop {
            self.buf.clear();
            let Some(t) = conn.poll_transmit(now, BATCH, &mut self.buf) else { return };
            let src_ip = t.src_ip.unwrap_or_else(|| match &self.nodes[node] {
                Node::Host { interfaces, .. } => interfaces[0].ip,
                Node::Switch { .. } => unreachable!("endpoints live on hosts"),
            });
            let segment = t.segment_size.unwrap_or(t.size);
            for datagram in self.buf[..t.size].chunks(segment) {
                self.outbox.push((
                    node,
                    Packet {
                        src: SocketAddr::new(src_ip, port),
                        dst: t.destination,
                        ecn: t.ecn,
                        data: BytesMut::from(datagram),
                    },
                ));
            }
        }
    }

    /// The events that wake endpoint `ep_id` again: its path supervisor's next poll (its
    /// failover reports go to the flow) and the connection's next timeout.
    fn arm_wake_ups(&mut self, ep_id: usize, conn: &mut Connection, now_ps: Ps) {
        let deadline = conn.poll_timeout().map(|t| {
            let ns = t.saturating_duration_since(self.base).as_nanos() as u64;
            (ns * 1000).max(now_ps)
        });
        let ep = &mut self.endpoints[ep_id];
        let side = match ep.role {
            Role::Client => Side::Client,
            Role::Server => Side::Server,
        };
        if let Some(supervision) = &mut ep.supervision {
            let events = supervision.events.drain(..);
            self.flows[ep.flow].progress.failovers.extend(events.map(|e| (side, e)));
            // A closed connection's paths are not supervised (its supervisor would ask to be
            // woken at the same instant over and over): a repeating flow's server keeps the
            // one the client closed until the next connection arrives.
            let wake_up = if conn.is_closed() { None } else { supervision.wake_up() };
            if let Some(at) = wake_up {
                let ps =
                    (at.saturating_duration_since(self.base).as_nanos() as u64 * 1000).max(now_ps);
                self.schedule(ps, Ev::Supervise(ep_id, at));
            }
        }
        let wake = deadline.map(|d| self.wake_time(ep_id, d));
        let ep = &mut self.endpoints[ep_id];
        ep.timer = deadline;
        if let Some(at) = wake {
            // Queue an event only if none is queued at or before the wake-up; a later deadline
            // is picked up when the queued event fires.
            if ep.timer_queued.is_none_or(|q| at < q) {
                ep.timer_queued = Some(at);
                self.schedule(at, Ev::Timer(ep_id, at));
            }
        }
    }

    fn send_from_host(&mut self, node: NodeId, packet: Packet) {
        let Node::Host { interfaces, .. } = &self.nodes[node] else { unreachable!() };
        let Some(link) = interfaces.iter().find(|i| i.ip == packet.src.ip()).map(|i| i.link) else {
            self.counters.undeliverable += 1;
            return;
        };
        self.enqueue(link, packet);
    }

    fn enqueue(&mut self, link: LinkId, packet: Packet) {
        match self.links[link].offer(self.now, packet) {
            Offered::Sent { packet, arrives } => {
                let key = self.packets.insert(packet);
                self.schedule(arrives, Ev::Arrive(link, key));
            }
            Offered::Queued { wake: true } => self.serve(link),
            Offered::Queued { wake: false } | Offered::Dropped => {}
        }
    }

    /// A dual-queue link is idle: send its next packet on, and come back when it is through.
    fn serve(&mut self, link: LinkId) {
        if let Some(served) = self.links[link].serve(self.now) {
            let key = self.packets.insert(served.packet);
            self.schedule(served.arrives, Ev::Arrive(link, key));
            self.schedule(served.free_at, Ev::LinkFree(link));
        }
    }
}

/// Remember which controller slot a path's controller is (mpquic-cc controllers only).
fn register_slot(slots: &mut BTreeMap<u64, Slot>, conn: &Connection, path: noq_proto::PathId) {
    if let Some(slot) = conn.congestion_state(path).and_then(|cc| slot_of(cc.clone_box())) {
        slots.insert(path_number(path), slot);
    }
}

/// The number of a path id (noq-proto exposes it only through `Display`).
pub fn path_number(path: noq_proto::PathId) -> u64 {
    path.to_string().parse().unwrap_or(u64::MAX)
}

fn record_delivery(flow: &mut Flow, bucket: usize, bytes: u64) {
    if flow.progress.delivered.len() <= bucket {
        flow.progress.delivered.resize(bucket + 1, 0);
    }
    flow.progress.delivered[bucket] += bytes;
}

/// Read what is readable on `stream`; returns (bytes, finished).
fn drain(conn: &mut Connection, stream: StreamId) -> (u64, bool) {
    let mut recv = conn.recv_stream(stream);
    let Ok(mut chunks) = recv.read(true) else { return (0, false) };
    let mut n = 0;
    let mut fin = false;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => n += chunk.bytes.len() as u64,
            Ok(None) => {
                fin = true;
                break;
            }
            Err(_) => break,
        }
    }
    let _ = chunks.finalize();
    (n, fin)
}

/// Write up to `limit` bytes (None: as much as the stream takes); returns bytes written.
fn fill(conn: &mut Connection, stream: StreamId, limit: Option<u64>) -> u64 {
    let mut total = 0;
    loop {
        let want = limit.map_or(ZEROS.len() as u64, |l| (l - total).min(ZEROS.len() as u64));
        if want == 0 {
            break;
        }
        // A static chunk: the stack keeps a reference instead of copying the bytes.
        let mut chunks = [Bytes::from_static(&ZEROS[..want as usize])];
        match conn.send_stream(stream).write_chunks(&mut &mut chunks[..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n as u64,
        }
    }
    total
}

/// The client's application: opens the paths, writes the request, reads the response. Returns
/// whether its transfer is over and a repeating flow's next one is due (then, unless they share
/// the connection, it closed it).
fn client_app(
    flow: &mut Flow,
    conn: &mut Connection,
    now: Instant,
    now_ps: Ps,
    bucket: usize,
) -> bool {
    if flow.progress.connected_at.is_none() || conn.is_closed() {
        return false;
    }
    while flow.paths_opened < flow.spec.paths
        && flow.spec.path_times.get(flow.paths_opened).is_none_or(|t| t.0 <= now_ps)
    {
        let (local, remote) = flow.path_addrs[flow.paths_opened];
        let status = match flow.spec.is_backup(flow.paths_opened) {
            true => PathStatus::Backup,
            false => PathStatus::Available,
        };
        match conn.open_path(FourTuple::new(remote, Some(local)), status, now) {
            Ok(_) => flow.paths_opened += 1,
            Err(_) => break, // not allowed yet (CIDs or path ids pending): retried later
        }
    }
    if !flow.started {
        return false;
    }
    if flow.stream.is_none() {
        flow.stream = conn.streams().open(Dir::Bi);
    }
    let Some(stream) = flow.stream else { return false };
    if !flow.request_finished {
        match flow.spec.bytes {
            None if flow.stopped => {
                let _ = conn.send_stream(stream).finish();
                flow.request_finished = true;
            }
            None => flow.progress.request_written += fill(conn, stream, None),
            Some(total) => {
                let left = total - flow.progress.request_written;
                flow.progress.request_written += fill(conn, stream, Some(left));
                if flow.progress.request_written == total {
                    let _ = conn.send_stream(stream).finish();
                    flow.request_finished = true;
                }
            }
        }
    }
    if flow.spec.response_bytes > 0 && flow.progress.response_done_at.is_none() {
        let (n, fin) = drain(conn, stream);
        if n > 0 {
            flow.progress.response_read += n;
            record_delivery(flow, bucket, n);
        }
        if fin || flow.progress.response_read >= flow.spec.response_bytes {
            flow.progress.response_done_at = Some(now_ps);
            transfer_complete(flow, now_ps);
        }
    }
    // The client knows its transfer is over once it has the whole response, or else once the
    // server has acknowledged the whole request; then, if more are due, it closes the
    // connection (the next transfer opens a new one), as the CLI does after each, unless they
    // share it.
    let over = if flow.spec.response_bytes > 0 {
        flow.progress.response_done_at.is_some()
    } else {
        flow.request_acked
    };
    let recorded = flow.progress.transfers.len() > flow.transfer;
    if over && recorded && flow.transfer + 1 < flow.spec.repeat {
        if flow.spec.repeat_over == RepeatOver::NewConnection {
            conn.close(now, 0u32.into(), Bytes::from_static(b"done"));
        }
        return true;
    }
    false
}

/// The flow's current transfer is complete, the receiving application has everything: note it
/// (sized flows; a bulk flow's end is its `stop`).
fn transfer_complete(flow: &mut Flow, now_ps: Ps) {
    if flow.spec.bytes.is_some() {
        flow.progress.transfers.push(Transfer {
            start: flow.transfer_start,
            connected: flow.progress.connected_at,
            done: now_ps,
        });
    }
}

/// A flow's progress as its next transfer begins: what adds up over the transfers is kept, and,
/// on the `same` connection, the connection's own (its handshake time); the request's and the
/// response's counters start again.
fn next_progress(p: FlowProgress, same: bool) -> FlowProgress {
    FlowProgress {
        connected_at: p.connected_at.filter(|_| same),
        delivered: p.delivered,
        paths_established: p.paths_established,
        paths_abandoned: p.paths_abandoned,
        failovers: p.failovers,
        traces: p.traces,
        error: p.error,
        transfers: p.transfers,
        ..FlowProgress::default()
    }
}

/// Make `conn` the endpoint's connection, carrying the flow's `transfer`. A previous one (a
/// repeating flow's, whose transfer is over) is dropped and its endpoint forgets it.
fn replace_connection(ep: &mut Ep, conn: (ConnectionHandle, Connection), transfer: usize) {
    if let Some((old, _)) = ep.conn.replace(conn) {
        ep.endpoint.handle_event(old, EndpointEvent::drained());
    }
    ep.slots.clear();
    ep.transfer = transfer;
}

fn server_app(flow: &mut Flow, conn: &mut Connection, now_ps: Ps, bucket: usize) {
    if flow.server_stream.is_none() {
        flow.server_stream = conn.streams().accept(Dir::Bi);
    }
    let Some(stream) = flow.server_stream else { return };
    if flow.progress.request_done_at.is_none() {
        let (n, fin) = drain(conn, stream);
        if n > 0 {
            flow.progress.request_read += n;
            if !flow.stopped || flow.spec.bytes.is_some() {
                record_delivery(flow, bucket, n);
            }
        }
        if fin {
            flow.progress.request_done_at = Some(now_ps);
            if flow.spec.response_bytes == 0 {
                transfer_complete(flow, now_ps);
            }
        }
    }
    if flow.progress.request_done_at.is_some() && !flow.response_finished {
        let total = flow.spec.response_bytes;
        let left = total - flow.progress.response_written;
        flow.progress.response_written += fill(conn, stream, Some(left));
        if flow.progress.response_written == total {
            let _ = conn.send_stream(stream).finish();
            flow.response_finished = true;
        }
    }
}
