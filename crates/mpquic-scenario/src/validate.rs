//! Checks of one scenario before anything is built: names against the topology, controllers,
//! ECN shaping and schedulers through the library that runs them, values in range. Errors name
//! the field (`flows.3.from`) so that [`crate::error::locate`] can place them in the file.

use crate::error::{at, ScenarioError};
use crate::expand::host_range;
use crate::expand::Expanded;
use crate::model::{
    BurstSpec, ControllerSpec, FlowKind, FlowSpec, LinkConfig, NetnsSettings, Pairing, RepeatOver,
    Scenario, Topology, Workers, Workload,
};

/// Check `s`; the first problem found, at its field.
pub fn validate(s: &Scenario) -> Result<(), ScenarioError> {
    if s.duration.0 == 0 {
        return Err(at("duration", "must be > 0"));
    }
    controller(&s.controller, "controller")?;
    link(&s.link, "link")?;
    let expanded = s.topology.expand().map_err(|e| at("topology", e.to_string()))?;
    let names = Names::of(&expanded);
    link_overrides(s, &expanded, &names)?;
    for (i, f) in s.flows.iter().enumerate() {
        flow(f, i, &names)?;
    }
    for (i, w) in s.workloads.iter().enumerate() {
        workload(w, i, &names, &s.topology)?;
    }
    s.netns.as_ref().map_or(Ok(()), netns)
}

/// The topology's hosts (with their address counts) and nodes (hosts and switches) by name.
struct Names<'a> {
    hosts: Vec<&'a str>,
    addrs: Vec<usize>,
    nodes: Vec<&'a str>,
}

impl<'a> Names<'a> {
    fn of(expanded: &'a Expanded) -> Names<'a> {
        let hosts: Vec<&str> = expanded.hosts.iter().map(|h| h.name.as_str()).collect();
        let addrs = expanded.hosts.iter().map(|h| h.addrs).collect();
        let switches = expanded.switches.iter().map(String::as_str);
        let nodes = hosts.iter().copied().chain(switches).collect();
        Names { hosts, addrs, nodes }
    }

    /// `addr` is one of host `name`'s addresses, or the error at `path` (`name` is a host).
    fn addr(&self, name: &str, addr: usize, path: String) -> Result<(), ScenarioError> {
        let n = self.hosts.iter().position(|&h| h == name).map_or(0, |i| self.addrs[i]);
        if addr < n {
            return Ok(());
        }
        Err(at(path, format!("{addr}: `{name}` has addresses 0..={}", n.saturating_sub(1))))
    }

    /// `name` is a host, or the error at `path`.
    fn host(&self, name: &str, path: String) -> Result<(), ScenarioError> {
        if self.hosts.contains(&name) {
            Ok(())
        } else {
            Err(at(path, format!("no host `{name}` in this topology ({})", some(&self.hosts))))
        }
    }
}

/// Each link override's values, and that it matches a link direction of the topology.
fn link_overrides(s: &Scenario, expanded: &Expanded, names: &Names) -> Result<(), ScenarioError> {
    for (i, o) in s.link_overrides.iter().enumerate() {
        let here = |f: &str| format!("link_overrides.{i}.{f}");
        link(&o.config, &format!("link_overrides.{i}"))?;
        if !expanded.directions().any(|(a, b)| o.matches(a, b)) {
            let what = if names.nodes.contains(&o.from.as_str()) { "to" } else { "from" };
            return Err(at(
                here(what),
                format!(
                    "no link direction from `{}`{} in this topology",
                    o.from,
                    o.to.as_ref().map(|t| format!(" to `{t}`")).unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

/// Flow `i`: its hosts, controller, counts and times.
fn flow(f: &FlowSpec, i: usize, names: &Names) -> Result<(), ScenarioError> {
    let here = |field: &str| format!("flows.{i}.{field}");
    for h in host_range(&f.from).map_err(|e| at(here("from"), e))? {
        names.host(&h, here("from"))?;
        if h == f.to {
            return Err(at(here("to"), format!("flow from `{h}` to itself")));
        }
    }
    names.host(&f.to, here("to"))?;
    if f.kind == FlowKind::Mpquic {
        if let Some(c) = &f.controller {
            controller(c, &here("controller"))?;
        }
    }
    if f.paths == 0 || f.count == 0 || f.repeat == 0 {
        let field = if f.paths == 0 {
            "paths"
        } else if f.count == 0 {
            "count"
        } else {
            "repeat"
        };
        return Err(at(here(field), "must be >= 1"));
    }
    if f.repeat_over != RepeatOver::NewConnection && f.repeat == 1 {
        return Err(at(
            here("repeat_over"),
            "needs repeat > 1 (one transfer has nothing to share)",
        ));
    }
    if f.stop.is_some_and(|t| t <= f.start) {
        return Err(at(here("stop"), "must be after start"));
    }
    f.check_path_times().map_err(|e| at(here("path_times"), e))?;
    f.check_backup_paths().map_err(|e| at(here("backup_paths"), e))
}

/// Workload `i`, by its kind (`topology`: where its hosts sit).
fn workload(
    w: &Workload,
    i: usize,
    names: &Names,
    topology: &Topology,
) -> Result<(), ScenarioError> {
    let here = |field: &str| format!("workloads.{i}.{field}");
    match w {
        Workload::Incast { senders, receiver, k, paths, controller: c, .. } => {
            names.host(receiver, here("receiver"))?;
            for (j, h) in senders.iter().enumerate() {
                names.host(h, format!("workloads.{i}.senders.{j}"))?;
            }
            let available = if senders.is_empty() { names.hosts.len() - 1 } else { senders.len() };
            if let Some(k) = k.filter(|&k| k > available || k == 0) {
                return Err(at(
                    here("k"),
                    format!("k = {k}: must be in 1..={available} (the senders)"),
                ));
            }
            paths_and_controller(*paths, c, &here)
        }
        Workload::PartitionAggregate { .. } => partition_aggregate(w, i, names),
        Workload::Poisson { .. } => poisson(w, i, names),
        Workload::Permutation(p) => pairing(p, false, i, names, topology),
        Workload::Random(p) => pairing(p, true, i, names, topology),
        Workload::Bursts(b) => bursts(b, i, names),
    }
}

/// Burst source `i` (`b`): its hosts and addresses, means, shape, times and datagram size.
fn bursts(b: &BurstSpec, i: usize, names: &Names) -> Result<(), ScenarioError> {
    let here = |field: &str| format!("workloads.{i}.{field}");
    names.host(&b.from, here("from"))?;
    names.host(&b.to, here("to"))?;
    if b.from == b.to {
        return Err(at(here("to"), format!("bursts from `{}` to itself", b.from)));
    }
    names.addr(&b.from, b.from_addr, here("from_addr"))?;
    names.addr(&b.to, b.to_addr, here("to_addr"))?;
    for (field, mean) in [("on_mean", b.on_mean), ("off_mean", b.off_mean)] {
        if mean.is_zero() {
            return Err(at(here(field), "must be > 0 (a mean period length)"));
        }
    }
    if !(b.shape.is_finite() && b.shape > 1.0) {
        return Err(at(
            here("shape"),
            format!("{}: a Pareto shape must be > 1 (at 1 or below it has no mean)", b.shape),
        ));
    }
    if b.stop.is_some_and(|stop| stop <= b.start) {
        return Err(at(here("stop"), "must be after start"));
    }
    match b.packet {
        Some(p) if !(1..=MAX_UDP_PAYLOAD).contains(&p) => Err(at(
            here("packet"),
            format!("{p} bytes: a datagram's payload is 1..={MAX_UDP_PAYLOAD} bytes"),
        )),
        _ => Ok(()),
    }
}

/// The most a UDP datagram over IPv4 carries.
const MAX_UDP_PAYLOAD: u64 = 65_507;

/// Partition-aggregate workload `i` (`w`): its hosts, written or drawn, its slots and loop.
fn partition_aggregate(w: &Workload, i: usize, names: &Names) -> Result<(), ScenarioError> {
    let Workload::PartitionAggregate {
        aggregator,
        workers,
        hosts,
        jobs,
        parallel,
        closed_loop,
        gap,
        paths,
        controller: c,
        ..
    } = w
    else {
        return Ok(());
    };
    let here = |field: &str| format!("workloads.{i}.{field}");
    if let Some(a) = aggregator {
        names.host(a, here("aggregator"))?;
    }
    match workers {
        Workers::Hosts(list) => written_workers(i, aggregator.as_deref(), list, hosts, names)?,
        Workers::Count(n) => drawn_workers(i, aggregator.as_deref(), *n, hosts, names)?,
    }
    if *parallel == 0 {
        return Err(at(here("parallel"), "must be >= 1 (job slots)"));
    }
    if *jobs == Some(0) {
        return Err(at(here("jobs"), "must be >= 1 (jobs per slot)"));
    }
    if !gap.is_zero() && !closed_loop {
        return Err(at(
            here("gap"),
            "is the closed loop's (closed_loop = true); open-loop jobs start `interval` apart",
        ));
    }
    paths_and_controller(*paths, c, &here)
}

/// Workload `i`'s written workers: hosts other than its aggregator, which it must name.
fn written_workers(
    i: usize,
    aggregator: Option<&str>,
    workers: &[String],
    hosts: &[String],
    names: &Names,
) -> Result<(), ScenarioError> {
    let here = |field: &str| format!("workloads.{i}.{field}");
    let Some(aggregator) = aggregator else {
        return Err(at(
            here("workers"),
            "a list of workers needs its `aggregator` (or write how many each job draws: \
             `workers = 8`)",
        ));
    };
    if !hosts.is_empty() {
        return Err(at(
            here("hosts"),
            "is what a number of workers draws from; this workload lists its workers",
        ));
    }
    if workers.is_empty() {
        return Err(at(here("workers"), "needs at least one worker"));
    }
    for (j, h) in workers.iter().enumerate() {
        names.host(h, format!("workloads.{i}.workers.{j}"))?;
        if h == aggregator {
            return Err(at(here("workers"), "the aggregator is one of its workers"));
        }
    }
    Ok(())
}

/// Workload `i`'s `n` workers drawn per job from `hosts` (default every host), each host named
/// once: there must be `n` besides the aggregator (drawn too, unless written).
fn drawn_workers(
    i: usize,
    aggregator: Option<&str>,
    n: usize,
    hosts: &[String],
    names: &Names,
) -> Result<(), ScenarioError> {
    let here = |field: &str| format!("workloads.{i}.{field}");
    for (j, h) in hosts.iter().enumerate() {
        names.host(h, format!("workloads.{i}.hosts.{j}"))?;
        if hosts[..j].contains(h) {
            return Err(at(format!("workloads.{i}.hosts.{j}"), format!("`{h}` is listed twice")));
        }
    }
    let pool: Vec<&str> = match hosts.is_empty() {
        true => names.hosts.clone(),
        false => hosts.iter().map(String::as_str).collect(),
    };
    // The aggregator is drawn from the pool too, or, written, is no worker of its own jobs.
    let others = match aggregator {
        None => pool.len().saturating_sub(1),
        Some(a) => pool.iter().filter(|&&h| h != a).count(),
    };
    if n == 0 || n > others {
        let from = match aggregator {
            None => format!("its aggregator and its workers, distinct, from {} hosts", pool.len()),
            Some(a) => format!("its workers from the {others} hosts other than `{a}`"),
        };
        return Err(at(
            here("workers"),
            format!("workers = {n}: must be in 1..={others} (a job draws {from})"),
        ));
    }
    Ok(())
}

/// Poisson workload `i` (`w`): its hosts, rate and times.
fn poisson(w: &Workload, i: usize, names: &Names) -> Result<(), ScenarioError> {
    let Workload::Poisson {
        hosts: pick,
        receiver,
        rate,
        bytes,
        start,
        stop,
        paths,
        controller: c,
        ..
    } = w
    else {
        return Ok(());
    };
    let here = |field: &str| format!("workloads.{i}.{field}");
    bytes.check().map_err(|e| at(here("bytes"), e))?;
    for (j, h) in pick.iter().enumerate() {
        names.host(h, format!("workloads.{i}.hosts.{j}"))?;
    }
    if let Some(r) = receiver {
        names.host(r, here("receiver"))?;
    }
    let sources = pick.iter().filter(|h| Some(*h) != receiver.as_ref()).count();
    let needed = if receiver.is_some() { 1 } else { 2 };
    if !pick.is_empty() && sources < needed {
        return Err(at(
            here("hosts"),
            format!("needs at least {needed} host(s) other than the receiver"),
        ));
    }
    if !(rate.is_finite() && *rate > 0.0) {
        return Err(at(here("rate"), "must be > 0 (arrivals per second)"));
    }
    if stop <= start {
        return Err(at(here("stop"), "must be after start"));
    }
    paths_and_controller(*paths, c, &here)
}

/// Permutation or (`random`) random workload `i` (`p`): its hosts (at least two, each named
/// once), times, receiver bound (random only, at least 2: 1 is a permutation) and location
/// grouping (a fat tree only).
fn pairing(
    p: &Pairing,
    random: bool,
    i: usize,
    names: &Names,
    topology: &Topology,
) -> Result<(), ScenarioError> {
    let here = |field: &str| format!("workloads.{i}.{field}");
    for (j, h) in p.hosts.iter().enumerate() {
        names.host(h, format!("workloads.{i}.hosts.{j}"))?;
        if p.hosts[..j].contains(h) {
            return Err(at(format!("workloads.{i}.hosts.{j}"), format!("`{h}` is listed twice")));
        }
    }
    if p.hosts.len() == 1 {
        return Err(at(here("hosts"), "needs at least 2 hosts to pair"));
    }
    if p.bytes == Some(0) {
        return Err(at(here("bytes"), "must be at least 1 byte (leave it out for bulk flows)"));
    }
    if p.stop.is_some_and(|stop| stop <= p.start) {
        return Err(at(here("stop"), "must be after start"));
    }
    match (random, p.max_in) {
        (false, Some(_)) => {
            return Err(at(
                here("max_in"),
                "a permutation's hosts each receive one flow; \
                max_in bounds a random workload's",
            ));
        }
        (true, Some(m)) if m < 2 => {
            return Err(at(
                here("max_in"),
                "must be >= 2 (one flow per receiver is kind = \
                \"permutation\")",
            ));
        }
        _ => {}
    }
    p.location_arity(topology).map_err(|e| at(here("by_location"), e))?;
    paths_and_controller(p.paths, &p.controller, &here)
}

/// The testbed's scaling: factors > 0, a sampling interval, a frame of at least 64 bytes.
fn netns(n: &NetnsSettings) -> Result<(), ScenarioError> {
    for (field, x) in
        [("rate_scale", n.rate_scale), ("time_scale", n.time_scale), ("size_scale", n.size_scale)]
    {
        if !(x.is_finite() && x > 0.0) {
            return Err(at(format!("netns.{field}"), "must be > 0"));
        }
    }
    if n.sample_interval.0 == 0 {
        return Err(at("netns.sample_interval", "must be > 0"));
    }
    if n.frame_bytes < 64 {
        return Err(at("netns.frame_bytes", "must be >= 64"));
    }
    Ok(())
}

fn paths_and_controller(
    paths: usize,
    c: &Option<ControllerSpec>,
    here: &dyn Fn(&str) -> String,
) -> Result<(), ScenarioError> {
    if paths == 0 {
        return Err(at(here("paths"), "must be >= 1"));
    }
    c.as_ref().map_or(Ok(()), |c| controller(c, &here("controller")))
}

/// A few names of `list`, for error messages.
fn some(list: &[&str]) -> String {
    let shown: Vec<&str> = list.iter().copied().take(6).collect();
    let more = if list.len() > shown.len() {
        format!(", ... {} in all", list.len())
    } else {
        String::new()
    };
    format!("hosts: {}{more}", shown.join(", "))
}

/// A controller the library takes (parsed when the file was read).
fn controller(spec: &ControllerSpec, path: &str) -> Result<(), ScenarioError> {
    spec.congestion().map(|_| ()).map_err(|e| at(path, format!("controller `{spec}`: {e}")))
}

/// One set of link parameters in range.
fn link(l: &LinkConfig, path: &str) -> Result<(), ScenarioError> {
    if let Some(loss) = l.loss.filter(|x| !(0.0..1.0).contains(x)) {
        return Err(at(format!("{path}.loss"), format!("{loss} is not in [0, 1)")));
    }
    if let (Some(j), Some(d)) = (l.jitter, l.delay) {
        if j > d {
            return Err(at(
                format!("{path}.jitter"),
                format!(
                    "{j} is more than the delay {d} (a packet is never sent before it arrived)"
                ),
            ));
        }
    }
    if l.buffer.is_some_and(|b| b.packets(1) == 0) {
        return Err(at(format!("{path}.buffer"), "must be > 0"));
    }
    for (name, value) in [("l_step", l.l_step), ("classic_target", l.classic_target)] {
        if value.is_some_and(|d| d.0 == 0) {
            return Err(at(format!("{path}.{name}"), "must be > 0"));
        }
    }
    Ok(())
}
