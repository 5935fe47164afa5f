//! From a scenario's compact form to what a backend builds: the topology's hosts, switches and
//! links, and every flow (host ranges and counts unrolled, workloads generated).

use crate::error::{invalid, ScenarioError};
use crate::model::{FlowSpec, HostSpec, LinkConfig, LinkSpec, Scenario, Topology, Workload};
use crate::rng::SimRng;
use crate::units::{Dur, Ps};

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
        let name = format!("h{}", (p * h + e) * h + j);
        hosts.push(HostSpec { name: name.clone(), addrs });
        let mut l = link(&name, &edge, LinkConfig::default(), false);
        l.monitor_reverse = true;
        links.push(l);
    }
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
/// then moves by its draw from `start_spread`.
pub fn expand_workloads(
    scenario: &Scenario,
    hosts: &[HostSpec],
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let mut flows = expand_flows(&scenario.flows)?;
    let all: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    for (w, workload) in scenario.workloads.iter().enumerate() {
        match workload {
            Workload::Incast { .. } => flows.extend(incast_flows(w, workload, &all)?),
            Workload::PartitionAggregate { .. } => {
                flows.extend(partition_aggregate_flows(w, workload))
            }
            Workload::Poisson { .. } => {
                flows.extend(poisson_flows(w, workload, &all, scenario.seed)?)
            }
            Workload::Permutation { .. } => {
                flows.extend(permutation_flows(w, workload, &all, scenario.seed)?)
            }
        }
    }
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

/// The flows of partition-aggregate workload number `w`: per job, a request to each worker.
fn partition_aggregate_flows(w: usize, workload: &Workload) -> Vec<FlowSpec> {
    let Workload::PartitionAggregate {
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
    } = workload
    else {
        return vec![];
    };
    let mut flows = vec![];
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
    flows
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

/// The flows of permutation workload number `w` (`all`: every host): a uniformly random
/// derangement of the hosts drawn from the scenario's `seed` (shuffles until no host is paired
/// with itself, about e tries), one flow from each host to its partner.
fn permutation_flows(
    w: usize,
    workload: &Workload,
    all: &[String],
    seed: u64,
) -> Result<Vec<FlowSpec>, ScenarioError> {
    let Workload::Permutation { hosts, bytes, start, stop, paths, controller, group } = workload
    else {
        return Ok(vec![]);
    };
    let hosts = if hosts.is_empty() { all } else { hosts };
    if hosts.len() < 2 {
        return Err(invalid("a permutation workload needs at least 2 hosts"));
    }
    let mut rng = SimRng::new(seed, 0x5045_0000 + w as u64);
    let partner = loop {
        let mut order: Vec<usize> = (0..hosts.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        if order.iter().enumerate().all(|(i, &j)| i != j) {
            break order;
        }
    };
    let group = group.clone().unwrap_or_else(|| format!("permutation{w}"));
    Ok(hosts
        .iter()
        .zip(&partner)
        .enumerate()
        .map(|(i, (from, &to))| {
            let mut f = FlowSpec::bulk(from, &hosts[to]);
            f.name = Some(format!("{group}-{i}"));
            f.group = Some(group.clone());
            f.bytes = *bytes;
            f.paths = *paths;
            f.controller = controller.clone();
            f.start = *start;
            f.stop = *stop;
            f
        })
        .collect())
}
