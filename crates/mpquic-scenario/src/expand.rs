//! From a scenario's compact form to what a backend builds: the topology's hosts, switches and
//! links, and every flow (host ranges and counts unrolled, workloads generated).

use crate::error::{invalid, ScenarioError};
use crate::model::{
    After, FlowSpec, HostSpec, LinkConfig, LinkSpec, Scenario, Topology, Workers, Workload,
};
use crate::rng::SimRng;
use crate::units::{Dur, Ps};

/// The most flows one run may have: the simulator gives every flow a port of its own at each
/// end (clients from 10000, servers from 30000).
pub const MAX_FLOWS: usize = 20_000;

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

impl Expanded {
    /// Every link direction, `(from, to)`: each link both ways.
    pub fn directions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.links.iter().flat_map(|l| [(l.a.as_str(), l.b.as_str()), (l.b.as_str(), l.a.as_str())])
    }
}

fn link(a: &str, b: &str, config: LinkConfig, monitor: bool) -> LinkSpec {
    LinkSpec { a: a.into(), b: b.into(), config, monitor, monitor_reverse: false, host_queue: None }
}

impl Topology {
    /// Expand a standard shape into hosts, switches and links.
    pub fn expand(&self) -> Result<Expanded, ScenarioError> {
        Ok(match self {
            Topology::Custom { hosts, switches, links } => {
                Expanded { hosts: hosts.clone(), switches: switches.clone(), links: links.clone() }
            }
            Topology::ManyToOne { senders, sender_addrs, receiver_addrs, access, bottleneck } => {
                many_to_one(*senders, *sender_addrs, *receiver_addrs, access, bottleneck)
            }
            Topology::Dumbbell { pairs, addrs, bottleneck } => dumbbell(*pairs, *addrs, bottleneck),
            Topology::TwoPath { cross_hosts, access } => two_path(*cross_hosts, access),
            Topology::FatTree { k, addrs } => fat_tree(*k, *addrs)?,
            Topology::Vl2 {
                tors,
                hosts_per_tor,
                aggregations,
                intermediates,
                addrs,
                access,
                fabric,
            } => vl2(*tors, *hosts_per_tor, *aggregations, *intermediates, *addrs, access, fabric)?,
            Topology::Bcube { n, k, addrs, server, ports } => bcube(*n, *k, *addrs, server, ports)?,
        })
    }
}

/// Senders `s0..` on access links into `sw`, and the monitored bottleneck `sw -> r`.
fn many_to_one(
    senders: usize,
    sender_addrs: usize,
    receiver_addrs: usize,
    access: &LinkConfig,
    bottleneck: &LinkConfig,
) -> Expanded {
    let mut hosts: Vec<HostSpec> =
        (0..senders).map(|i| HostSpec { name: format!("s{i}"), addrs: sender_addrs }).collect();
    hosts.push(HostSpec { name: "r".into(), addrs: receiver_addrs });
    let mut links: Vec<LinkSpec> =
        (0..senders).map(|i| link(&format!("s{i}"), "sw", access.clone(), false)).collect();
    let mut b = link("sw", "r", bottleneck.clone(), true);
    b.host_queue = Some(false);
    links.push(b);
    Expanded { hosts, switches: vec!["sw".into()], links }
}

/// `l0..` and `r0..` on either side of the bottleneck `sl - sr`, monitored both ways.
fn dumbbell(pairs: usize, addrs: usize, bottleneck: &LinkConfig) -> Expanded {
    let mut hosts = vec![];
    let mut links = vec![];
    for side in ["l", "r"] {
        for i in 0..pairs {
            let name = format!("{side}{i}");
            hosts.push(HostSpec { name: name.clone(), addrs });
            links.push(link(&name, &format!("s{side}"), LinkConfig::default(), false));
        }
    }
    let mut b = link("sl", "sr", bottleneck.clone(), true);
    b.monitor_reverse = true;
    links.push(b);
    Expanded { hosts, switches: vec!["sl".into(), "sr".into()], links }
}

/// `src` and `dst` joined through switches `a` and `b`, with cross hosts on each switch.
fn two_path(cross_hosts: usize, access: &LinkConfig) -> Expanded {
    let d = LinkConfig::default;
    let mut hosts =
        vec![HostSpec { name: "src".into(), addrs: 2 }, HostSpec { name: "dst".into(), addrs: 2 }];
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
        for i in 0..cross_hosts {
            let name = format!("x{sw}{i}");
            hosts.push(HostSpec { name: name.clone(), addrs: 1 });
            links.push(link(&name, sw, access.clone(), false));
        }
    }
    Expanded { hosts, switches: vec!["a".into(), "b".into()], links }
}

/// A k-ary fat tree: (k/2)^2 cores, k pods of k/2 edge and k/2 aggregation switches, k/2 hosts
/// per edge switch.
fn fat_tree(k: usize, addrs: usize) -> Result<Expanded, ScenarioError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(invalid(format!("fat-tree k must be even and >= 2, not {k}")));
    }
    let h = k / 2;
    let mut switches: Vec<String> = (0..h * h).map(|c| format!("c{c}")).collect();
    let (mut hosts, mut links) = (vec![], vec![]);
    for p in 0..k {
        for i in 0..h {
            switches.push(format!("e{p}_{i}"));
            switches.push(format!("a{p}_{i}"));
        }
        for e in 0..h {
            pod_edge(p, e, h, addrs, &mut hosts, &mut links);
        }
        for a in 0..h {
            for j in 0..h {
                let core = format!("c{}", a * h + j);
                links.push(link(&format!("a{p}_{a}"), &core, LinkConfig::default(), false));
            }
        }
    }
    Ok(Expanded { hosts, switches, links })
}

/// Edge switch `e` of pod `p`: its links up to the pod's aggregation switches and its hosts.
fn pod_edge(
    p: usize,
    e: usize,
    h: usize,
    addrs: usize,
    hosts: &mut Vec<HostSpec>,
    links: &mut Vec<LinkSpec>,
) {
    let edge = format!("e{p}_{e}");
    for a in 0..h {
        links.push(link(&edge, &format!("a{p}_{a}"), LinkConfig::default(), false));
    }
    for j in 0..h {
        add_host((p * h + e) * h + j, &edge, addrs, &LinkConfig::default(), hosts, links);
    }
}

/// Host `h<i>` on switch `switch`, its downlink (`switch -> h<i>`) monitored: where a
/// permutation's receivers queue.
fn add_host(
    i: usize,
    switch: &str,
    addrs: usize,
    config: &LinkConfig,
    hosts: &mut Vec<HostSpec>,
    links: &mut Vec<LinkSpec>,
) {
    let name = format!("h{i}");
    let mut l = link(&name, switch, config.clone(), false);
    l.monitor_reverse = true;
    links.push(l);
    hosts.push(HostSpec { name, addrs });
}

/// A VL2 Clos: ToR `t<i>` with its hosts and on the aggregation pair `a<2p>`, `a<2p+1>`
/// (p = i mod aggregations/2), every aggregation switch on every intermediate `i<j>`.
fn vl2(
    tors: usize,
    hosts_per_tor: usize,
    aggregations: usize,
    intermediates: usize,
    addrs: usize,
    access: &LinkConfig,
    fabric: &LinkConfig,
) -> Result<Expanded, ScenarioError> {
    if tors == 0 || hosts_per_tor == 0 || intermediates == 0 {
        return Err(invalid(format!(
            "vl2 needs at least 1 ToR, 1 host per ToR and 1 intermediate switch, not {tors}, \
             {hosts_per_tor} and {intermediates}"
        )));
    }
    if aggregations < 2 || !aggregations.is_multiple_of(2) {
        return Err(invalid(format!(
            "vl2 aggregations must be even and >= 2 (every ToR is on a pair), not {aggregations}"
        )));
    }
    let named =
        |prefix: &'static str, count: usize| (0..count).map(move |i| format!("{prefix}{i}"));
    let switches: Vec<String> =
        named("t", tors).chain(named("a", aggregations)).chain(named("i", intermediates)).collect();
    let (mut hosts, mut links) = (vec![], vec![]);
    for t in 0..tors {
        let tor = format!("t{t}");
        let pair = t % (aggregations / 2);
        for a in [2 * pair, 2 * pair + 1] {
            links.push(link(&tor, &format!("a{a}"), fabric.clone(), false));
        }
        for j in 0..hosts_per_tor {
            add_host(t * hosts_per_tor + j, &tor, addrs, access, &mut hosts, &mut links);
        }
    }
    for a in named("a", aggregations) {
        for i in named("i", intermediates) {
            links.push(link(&a, &i, fabric.clone(), false));
        }
    }
    Ok(Expanded { hosts, switches, links })
}

/// BCube(n, k): level switches `s<l>_<j>`, and per server its host `h<i>`, its relay `v<i>`
/// and the relay's k+1 ports, one to each level.
fn bcube(
    n: usize,
    k: usize,
    addrs: usize,
    server: &LinkConfig,
    ports: &LinkConfig,
) -> Result<Expanded, ScenarioError> {
    if n < 2 {
        return Err(invalid(format!("bcube n (ports per switch) must be >= 2, not {n}")));
    }
    let servers = u32::try_from(k + 1)
        .ok()
        .and_then(|levels| n.checked_pow(levels))
        .filter(|&s| s <= MAX_BCUBE_SERVERS)
        .ok_or_else(|| {
            invalid(format!(
                "bcube n^(k+1) servers must be at most {MAX_BCUBE_SERVERS} (n {n}, k {k})"
            ))
        })?;
    let mut switches: Vec<String> =
        (0..=k).flat_map(|l| (0..servers / n).map(move |j| format!("s{l}_{j}"))).collect();
    let (mut hosts, mut links) = (vec![], vec![]);
    for i in 0..servers {
        let relay = format!("v{i}");
        add_host(i, &relay, addrs, server, &mut hosts, &mut links);
        for l in 0..=k {
            links.push(link(&relay, &bcube_switch(n, l, i), ports.clone(), false));
        }
        switches.push(relay);
    }
    Ok(Expanded { hosts, switches, links })
}

/// The most servers a `bcube` may have: BCube(2, 6)'s 128 with room, and a bound that keeps
/// n^(k+1) from overflowing. It is no promise that a run builds that many: the simulator's
/// routes grow with switches x addresses.
const MAX_BCUBE_SERVERS: usize = 4096;

/// The level-`l` switch of server `i` in a BCube of n-port switches: numbered by i's base-n
/// digits without digit l, so the servers equal in every other digit share it.
fn bcube_switch(n: usize, l: usize, i: usize) -> String {
    let below = n.pow(l as u32);
    format!("s{l}_{}", i / (below * n) * below + i % below)
}

/// The hosts a flow's `from` names: one host, or a range `"s[0..7]"` (inclusive).
pub fn host_range(from: &str) -> Result<Vec<String>, String> {
    let Some((prefix, rest)) = from.split_once('[') else {
        return Ok(vec![from.to_string()]);
    };
    let bad = || format!("bad host range `{from}` (write `s[0..7]`: s0 to s7)");
    let (range, suffix) = rest.split_once(']').ok_or_else(bad)?;
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    let lo: usize = lo.trim().parse().map_err(|_| bad())?;
    let hi: usize = hi.trim().parse().map_err(|_| bad())?;
    if lo > hi {
        return Err(format!("host range `{from}` is empty ({lo} > {hi})"));
    }
    Ok((lo..=hi).map(|i| format!("{prefix}{i}{suffix}")).collect())
}

/// The written flows with host ranges and counts unrolled: for each host of `from`, `count`
/// flows; the i-th flow made from one entry starts `i * stagger` after its `start` and is
/// named `<name>-<i>` (a single flow keeps its name).
pub fn expand_flows(specs: &[FlowSpec]) -> Result<Vec<FlowSpec>, ScenarioError> {
    let mut flows = vec![];
    for spec in specs {
        let hosts = host_range(&spec.from).map_err(invalid)?;
        let many = hosts.len() * spec.count > 1;
        let mut i = 0;
        for host in &hosts {
            for _ in 0..spec.count {
                let mut f = spec.clone();
                f.from = host.clone();
                f.count = 1;
                f.stagger = Dur(0);
                f.start = Dur(spec.start.0 + i as u64 * spec.stagger.0);
                if many {
                    f.name = spec.name.as_ref().map(|n| format!("{n}-{i}"));
                }
                flows.push(f);
                i += 1;
            }
        }
    }
    Ok(flows)
}

/// Expand workloads into flows, using the scenario seed for random choices; every flow's start
/// then moves by its draw from `start_spread`. A closed-loop partition-aggregate workload
/// without `jobs` is expanded last, to what the other flows leave of [`MAX_FLOWS`] (shared
/// equally with any other such workload): jobs whose turn does not come within the run are
/// never started, so it runs until the run's end unless that many jobs finish before.
pub fn expand_workloads(
    scenario: &Scenario,
    hosts: &[HostSpec],
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let mut flows = expand_flows(&scenario.flows)?;
    let all: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let seed = scenario.seed;
    let mut parts = Vec::with_capacity(scenario.workloads.len());
    let mut open_ended = vec![];
    for (w, workload) in scenario.workloads.iter().enumerate() {
        parts.push(match workload {
            Workload::Incast { .. } => incast_flows(w, workload, &all)?,
            Workload::PartitionAggregate { jobs: None, closed_loop: true, .. } => {
                open_ended.push(w);
                vec![]
            }
            Workload::PartitionAggregate { .. } => {
                partition_aggregate_flows(w, workload, &all, seed, 0)?
            }
            Workload::Poisson { .. } => poisson_flows(w, workload, &all, seed)?,
            Workload::Permutation(_) | Workload::Random(_) => {
                pairing_flows(w, workload, &all, seed, &scenario.topology)?
            }
            // A burst source is no flow (`crate::bursts`).
            Workload::Bursts(_) => vec![],
        });
    }
    if !open_ended.is_empty() {
        let used = flows.len() + parts.iter().map(Vec::len).sum::<usize>();
        let share = MAX_FLOWS.saturating_sub(used) / open_ended.len();
        for w in open_ended {
            parts[w] = partition_aggregate_flows(w, &scenario.workloads[w], &all, seed, share)?;
        }
    }
    flows.extend(parts.into_iter().flatten());
    spread_starts(&mut flows, scenario.start_spread, scenario.seed);
    Ok(flows)
}

/// Moves flow `i`'s start later by a uniform draw from `[0, spread)`: one stream per flow, so
/// a flow's draw does not depend on how many flows came before it.
fn spread_starts(flows: &mut [FlowSpec], spread: Dur, seed: u64) {
    if spread.is_zero() {
        return;
    }
    for (i, f) in flows.iter_mut().enumerate() {
        f.start = Dur(f.start.0 + SimRng::new(seed, 0x5354_0000 + i as u64).next_u64() % spread.0);
    }
}

/// The flows of incast workload number `w` (`all`: every host).
fn incast_flows(
    w: usize,
    workload: &Workload,
    all: &[String],
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let Workload::Incast {
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
    } = workload
    else {
        return Ok(vec![]);
    };
    let senders: Vec<String> = if senders.is_empty() {
        all.iter().filter(|h| *h != receiver).cloned().collect()
    } else {
        senders.clone()
    };
    let k = k.unwrap_or(senders.len());
    if k > senders.len() {
        return Err(invalid(format!("incast k = {k} > {} senders", senders.len())));
    }
    let mut flows = vec![];
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
    Ok(flows)
}

/// The flows of partition-aggregate workload number `w` (`all`: every host): per job, a
/// request from its aggregator to each of its workers. Job `n` is slot `n % parallel`'s
/// `n / parallel`-th. Open loop: a slot's jobs `interval` apart from `start`. Closed loop: a
/// slot's first job at `start`, each next one after the one before it (`after`), all with
/// their handshake at their start; without `jobs`, as many per slot as `budget` flows hold.
fn partition_aggregate_flows(
    w: usize,
    workload: &Workload,
    all: &[String],
    seed: u64,
    budget: usize,
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let Workload::PartitionAggregate {
        aggregator,
        workers,
        hosts,
        request_bytes,
        response_bytes,
        jobs,
        parallel,
        interval,
        closed_loop,
        gap,
        start,
        paths,
        controller,
    } = workload
    else {
        return Ok(vec![]);
    };
    let mut crews = Crews::new(w, aggregator.as_ref(), workers, hosts, all, seed)?;
    let per_slot = jobs.unwrap_or(match closed_loop {
        true => (budget / (parallel * crews.workers()).max(1)).max(1),
        false => Workload::OPEN_LOOP_JOBS,
    });
    let mut flows = vec![];
    for batch in 0..per_slot {
        for j in 0..*parallel {
            let job = batch * parallel + j;
            let (aggregator, workers) = crews.next()?;
            for wk in &workers {
                let mut f = FlowSpec::bulk(&aggregator, wk);
                f.name = Some(format!("pa{w}-job{job}-{wk}"));
                f.group = Some(format!("pa{w}"));
                f.bytes = Some(*request_bytes);
                f.response_bytes = *response_bytes;
                f.paths = *paths;
                f.controller = controller.clone();
                f.job = Some(job);
                if *closed_loop {
                    f.start = *start;
                    f.handshake_at_start = true;
                    f.after = (batch > 0).then_some(After { job: job - parallel, gap: *gap });
                } else {
                    f.start = Dur(start.0 + batch as u64 * interval.0);
                }
                flows.push(f);
            }
        }
    }
    Ok(flows)
}

/// Each job's aggregator and workers: the written ones, or drawn per job, in job order, from
/// the workload's own random stream, so that a seed fixes every job's hosts.
enum Crews<'a> {
    /// The written aggregator and workers.
    Written(&'a str, &'a [String]),
    /// Drawn from `pool`: an aggregator (unless written) and `workers` distinct others.
    Drawn { aggregator: Option<&'a str>, pool: Vec<String>, workers: usize, rng: SimRng },
}

impl<'a> Crews<'a> {
    fn new(
        w: usize,
        aggregator: Option<&'a String>,
        workers: &'a Workers,
        hosts: &[String],
        all: &[String],
        seed: u64,
    ) -> Result<Crews<'a>, ScenarioError> {
        Ok(match (aggregator, workers) {
            (Some(a), Workers::Hosts(list)) => Crews::Written(a, list),
            (None, Workers::Hosts(_)) => {
                return Err(invalid("a partition-aggregate list of workers needs its aggregator"))
            }
            (aggregator, Workers::Count(n)) => {
                let pool = if hosts.is_empty() { all } else { hosts };
                let aggregator = aggregator.map(String::as_str);
                let pool: Vec<String> =
                    pool.iter().filter(|h| Some(h.as_str()) != aggregator).cloned().collect();
                let rng = SimRng::new(seed, 0x5041_0000 + w as u64);
                Crews::Drawn { aggregator, pool, workers: *n, rng }
            }
        })
    }

    /// Workers per job: its flows.
    fn workers(&self) -> usize {
        match self {
            Crews::Written(_, workers) => workers.len(),
            Crews::Drawn { workers, .. } => *workers,
        }
    }

    /// The next job's aggregator and workers.
    fn next(&mut self) -> Result<(String, Vec<String>), ScenarioError> {
        let (aggregator, pool, workers, rng) = match self {
            Crews::Written(a, workers) => return Ok((a.to_string(), workers.to_vec())),
            Crews::Drawn { aggregator, pool, workers, rng } => (aggregator, pool, *workers, rng),
        };
        let drawn = usize::from(aggregator.is_none());
        if pool.len() < drawn + workers {
            return Err(invalid(format!(
                "a partition-aggregate job draws {} distinct hosts from {}",
                drawn + workers,
                pool.len()
            )));
        }
        // A partial Fisher-Yates shuffle: the pool's first `drawn + workers` places.
        for i in 0..drawn + workers {
            let j = i + (rng.next_u64() % (pool.len() - i) as u64) as usize;
            pool.swap(i, j);
        }
        let first = aggregator.map_or_else(|| pool[0].clone(), str::to_string);
        Ok((first, pool[drawn..drawn + workers].to_vec()))
    }
}

/// The flows of Poisson workload number `w` (`all`: every host), drawn from the scenario's
/// `seed`.
fn poisson_flows(
    w: usize,
    workload: &Workload,
    all: &[String],
    seed: u64,
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let Workload::Poisson {
        hosts: pick,
        receiver,
        rate,
        bytes,
        start,
        stop,
        paths,
        controller,
        handshake_at_start,
        group,
    } = workload
    else {
        return Ok(vec![]);
    };
    let mut pick = if pick.is_empty() { all.to_vec() } else { pick.clone() };
    // With a receiver, flows come from the other hosts.
    pick.retain(|h| Some(h) != receiver.as_ref());
    let needed = if receiver.is_some() { 1 } else { 2 };
    if pick.len() < needed || *rate <= 0.0 {
        return Err(invalid(
            "poisson workload needs >= 2 hosts (a receiver and >= 1 other) and a positive rate",
        ));
    }
    let mut rng = SimRng::new(seed, 0x5050_0000 + w as u64);
    // Sizes from a stream of their own, so a distribution does not move the arrivals.
    let mut sizes = SimRng::new(seed, 0x5053_0000 + w as u64);
    let group = group.clone().unwrap_or_else(|| format!("poisson{w}"));
    let mut t = start.secs();
    let mut flows = vec![];
    loop {
        t += rng.exponential(1.0 / rate);
        if t >= stop.secs() {
            break;
        }
        let a = (rng.next_u64() % pick.len() as u64) as usize;
        let to = match receiver {
            Some(r) => r,
            None => {
                let mut b = (rng.next_u64() % (pick.len() as u64 - 1)) as usize;
                if b >= a {
                    b += 1;
                }
                &pick[b]
            }
        };
        let mut f = FlowSpec::bulk(&pick[a], to);
        f.name = Some(format!("poisson{w}-{}", flows.len()));
        f.group = Some(group.clone());
        f.bytes = Some(bytes.draw(&mut sizes));
        f.paths = *paths;
        f.controller = controller.clone();
        f.start = Dur((t * 1e12) as Ps);
        f.handshake_at_start = *handshake_at_start;
        flows.push(f);
    }
    Ok(flows)
}

/// The flows of permutation or random workload number `w` (`all`: every host): one flow from
/// each host to its partner, drawn from the scenario's `seed`; grouped by location in the
/// fat tree `topology` when the workload asks.
fn pairing_flows(
    w: usize,
    workload: &Workload,
    all: &[String],
    seed: u64,
    topology: &Topology,
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let (kind, stream, p) = match workload {
        Workload::Permutation(p) => ("permutation", 0x5045_0000, p),
        Workload::Random(p) => ("random", 0x524e_0000, p),
        _ => return Ok(vec![]),
    };
    let hosts = if p.hosts.is_empty() { all } else { &p.hosts };
    if hosts.len() < 2 {
        return Err(invalid(format!("a {kind} workload needs at least 2 hosts")));
    }
    let mut rng = SimRng::new(seed, stream + w as u64);
    let partner = match workload {
        Workload::Random(_) => random_partners(hosts.len(), p.max_in, &mut rng),
        _ => derangement(hosts.len(), &mut rng),
    };
    let arity = p.location_arity(topology).map_err(invalid)?;
    let group = p.group.clone().unwrap_or_else(|| format!("{kind}{w}"));
    let mut flows = Vec::with_capacity(hosts.len());
    for (i, (from, &to)) in hosts.iter().zip(&partner).enumerate() {
        let mut f = FlowSpec::bulk(from, &hosts[to]);
        f.name = Some(format!("{group}-{i}"));
        f.group = Some(match arity {
            Some(k) => format!("{group}-{}", fat_tree_location(k, from, &hosts[to])?),
            None => group.clone(),
        });
        f.bytes = p.bytes;
        f.paths = p.paths;
        f.controller = p.controller.clone();
        f.start = p.start;
        f.stop = p.stop;
        flows.push(f);
    }
    Ok(flows)
}

/// A uniformly random derangement of `0..n` (`n >= 2`): shuffles until no index is its own
/// partner, about e tries.
fn derangement(n: usize, rng: &mut SimRng) -> Vec<usize> {
    loop {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        if order.iter().enumerate().all(|(i, &j)| i != j) {
            return order;
        }
    }
}

/// A partner for each of `0..n` (`n >= 2`) in turn: uniformly one of the others that has
/// fewer than `max_in` partners so far (any other without a bound). With `max_in >= 2` some
/// other always has room: before index `i` at most `i / max_in < n - 1` are full.
fn random_partners(n: usize, max_in: Option<usize>, rng: &mut SimRng) -> Vec<usize> {
    let mut taken = vec![0; n];
    let mut partner = Vec::with_capacity(n);
    for i in 0..n {
        let room: Vec<usize> =
            (0..n).filter(|&j| j != i && max_in.is_none_or(|m| taken[j] < m)).collect();
        let j = room[(rng.next_u64() % room.len() as u64) as usize];
        taken[j] += 1;
        partner.push(j);
    }
    partner
}

/// Where a flow from host `from` to host `to` of a k-ary fat tree runs, as [`fat_tree`] names
/// its hosts (`h<n>`: rack `n / (k/2)`, pod `n / (k/2)^2`): `inner-rack` under one edge
/// switch, `inter-rack` within one pod, else `inter-pod`.
fn fat_tree_location(k: usize, from: &str, to: &str) -> Result<&'static str, ScenarioError> {
    let index = |h: &str| {
        h.strip_prefix('h')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| invalid(format!("`{h}` is not a fat-tree host (h<n>)")))
    };
    let (a, b, half) = (index(from)?, index(to)?, k / 2);
    Ok(if a / half == b / half {
        "inner-rack"
    } else if a / (half * half) == b / (half * half) {
        "inter-rack"
    } else {
        "inter-pod"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `e` has a link between `a` and `b`, either way round.
    fn joined(e: &Expanded, a: &str, b: &str) -> bool {
        e.links.iter().any(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
    }

    /// The switches linked to `node`.
    fn neighbours(e: &Expanded, node: &str) -> Vec<String> {
        let other = |l: &LinkSpec| match (l.a == node, l.b == node) {
            (true, _) => Some(l.b.clone()),
            (_, true) => Some(l.a.clone()),
            _ => None,
        };
        e.links.iter().filter_map(other).collect()
    }

    fn rate(mbps: u64) -> LinkConfig {
        LinkConfig { rate: Some(crate::units::Rate(mbps * 1_000_000)), ..LinkConfig::default() }
    }

    #[test]
    fn vl2_counts_and_dual_homed_tors() {
        let e = vl2(64, 2, 8, 8, 8, &rate(100), &rate(1000)).unwrap();
        assert_eq!((e.hosts.len(), e.switches.len()), (128, 80));
        // 128 host links, 2 per ToR up, every aggregation to every intermediate.
        assert_eq!(e.links.len(), 128 + 64 * 2 + 8 * 8);
        assert_eq!(neighbours(&e, "t0"), ["a0", "a1", "h0", "h1"]);
        assert_eq!(neighbours(&e, "t5"), ["a2", "a3", "h10", "h11"]);
        assert_eq!(neighbours(&e, "t4")[..2], neighbours(&e, "t0")[..2]);
        assert!((0..8).all(|a| (0..8).all(|i| joined(&e, &format!("a{a}"), &format!("i{i}")))));
        assert!(e.hosts.iter().all(|h| h.addrs == 8));
        let host = e.links.iter().find(|l| l.a == "h3").unwrap();
        assert!(host.b == "t1" && host.monitor_reverse && !host.monitor);
        assert_eq!(host.config, rate(100));
        assert!(e.links.iter().filter(|l| !l.a.starts_with('h')).all(|l| l.config == rate(1000)));
    }

    #[test]
    fn bcube_counts_and_one_digit_neighbours() {
        let e = bcube(2, 6, 8, &rate(700), &rate(100)).unwrap();
        // 7 levels of 64 two-port switches, and a relay per server.
        assert_eq!((e.hosts.len(), e.switches.len()), (128, 7 * 64 + 128));
        assert_eq!(e.links.len(), 128 + 128 * 7);
        assert_eq!(neighbours(&e, "h5"), ["v5"]);
        // Server 5 = 0000101: level 0 holds it with 4 (0000100), level 2 with 1 (0000001).
        assert_eq!(neighbours(&e, "s0_2"), ["v4", "v5"]);
        assert_eq!(neighbours(&e, "s2_1"), ["v1", "v5"]);
        // Every level switch joins n servers that differ in its level's digit only.
        for s in e.switches.iter().filter(|s| s.starts_with('s')) {
            let level: u32 = s[1..s.find('_').unwrap()].parse().unwrap();
            let servers: Vec<usize> =
                neighbours(&e, s).iter().map(|v| v[1..].parse().unwrap()).collect();
            assert_eq!(servers.len(), 2, "{s}");
            assert_eq!(servers[0] ^ servers[1], 1 << level, "{s}");
        }
        let e = bcube(4, 1, 1, &rate(200), &rate(100)).unwrap();
        assert_eq!((e.hosts.len(), e.switches.len(), e.links.len()), (16, 8 + 16, 16 + 32));
        assert_eq!(neighbours(&e, "s1_2"), ["v2", "v6", "v10", "v14"]);
    }

    #[test]
    fn bad_vl2_and_bcube_parameters_are_refused() {
        let d = LinkConfig::default();
        let err = |r: Result<Expanded, ScenarioError>| r.unwrap_err().to_string();
        assert!(err(vl2(4, 2, 3, 2, 1, &d, &d)).contains("vl2 aggregations must be even and >= 2"));
        assert!(err(vl2(4, 0, 2, 2, 1, &d, &d)).contains("vl2 needs at least 1 ToR"));
        assert!(err(bcube(1, 2, 1, &d, &d)).contains("bcube n (ports per switch) must be >= 2"));
        assert!(err(bcube(2, 12, 1, &d, &d)).contains("servers must be at most 4096"));
        assert!(err(bcube(usize::MAX, 3, 1, &d, &d)).contains("servers must be at most"));
    }
}
