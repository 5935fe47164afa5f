//! From the shared scenario language (`mpquic-scenario`, one file per experiment, the same the
//! simulator runs) to the runner's plan (`plan::Plan`): the topology's hosts, switches
//! and links become namespaces and veth pairs (switches route), the `[netns]` section scales
//! rates, times and sizes, flows and workloads become the processes the runner starts.
//!
//! What the netns testbed cannot do is refused here, at the field that asks for it, before
//! anything is built: answers (`response_bytes`), per-direction loss, a delay between two
//! hosts, and flows whose addresses (`from_addr`, `to_addr`) no routed path joins. A delay set
//! on a direction the testbed does not shape is kept, as a delay-only direction (`delay_only`). Paths that open later
//! (`path_times`) become the CLI's `--path-delay`. A Poisson workload's arrivals become flows
//! with their start times: a process each, as the runner starts any flow.

use crate::plan::{
    Controller, CustomHost, CustomLink, DelayOnly, Dualq, Flow, FlowKind, Hook, Jobs, LinkOverride,
    LinkParams, MpquicController, Plan, Quic, Topology,
};
use mpquic::{EcnPrecision, Scheduler};
use mpquic_scenario::error::{at, ScenarioError};
use mpquic_scenario::expand::{expand_workloads, host_range, Expanded};
use mpquic_scenario::{
    self as lang, Amount, LinkConfig, LinkSpec, NetnsSettings, Workers, Workload,
};

/// The queue sampling (and marker resynchronisation) period: the scenario's `queue_sample`
/// is the simulator's (microseconds); an rtnetlink dump per namespace every millisecond is
/// what the testbed sustains next to the flows, every 5 ms with more than
/// `MANY_DIRECTIONS` shaped directions (a fat-tree's 80 in 20 namespaces).
fn sample_interval_ms(shaped: usize) -> f64 {
    if shaped > MANY_DIRECTIONS {
        5.0
    } else {
        1.0
    }
}
const MANY_DIRECTIONS: usize = 32;

/// Link delays (after `time_scale`) below this are not added: the delay line cannot hold a
/// packet for less than its 100 us poll period, and a veth hop already takes ~50-150 us here,
/// so a data-center propagation delay is the veths' own.
const MIN_DELAY_MS: f64 = 0.1;

/// The runner's plan for one point of an experiment (with its seed), named `name`.
pub fn compile(s: &lang::Scenario, name: &str) -> Result<Plan, ScenarioError> {
    let scale = s.netns.clone().unwrap_or_default();
    let expanded = s.topology.expand()?;
    refuse_unsupported(s)?;
    let (topology, directions) = topology(&expanded);
    let refused = |e: String| ScenarioError::Invalid(format!("netns: {e}"));
    // Checked before the network is built: its addresses and routes for a few hundred nodes
    // take longer than any run (BCube(2, 6)'s 704: over 10 min).
    crate::limits::topology(&topology).map_err(refused)?;
    let net = crate::topology::build(&topology);
    let link_overrides = shaped_links(s, &directions, &scale)?;
    let delay_only = delay_only(s, &expanded, &directions, &scale)?;
    let mut link = link_params(&s.link, &scale).map_err(|e| at("link", e))?;
    link.ecn = link_overrides.iter().any(|(_, ecn)| *ecn);
    let point = Point::new(s, &scale, &net)?;
    let mut flow_workloads = s.clone();
    flow_workloads.workloads.retain(|w| !matches!(w, Workload::PartitionAggregate { .. }));
    // A flow that starts at or after the run's end never sends, as in the simulator: a sweep
    // writes "no such flow in this point" as a start at the end (L3's cross flow).
    let flows = expand_workloads(&flow_workloads, &expanded.hosts)?
        .iter()
        .filter(|f| f.start < s.duration)
        .map(|f| point.flow(f))
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = s.workloads.iter().enumerate().filter_map(|(i, w)| point.jobs(i, w));
    let plan = Plan {
        name: name.to_string(),
        duration_s: s.duration.secs() * scale.time_scale,
        sample_interval_ms: sample_interval_ms(directions.len()),
        repetitions: 1,
        topology,
        link,
        link_overrides: link_overrides.into_iter().map(|(o, _)| o).collect(),
        delay_only,
        flows,
        jobs: jobs.collect::<Result<Vec<_>, _>>()?,
        quic: Quic {
            receive_window: written_window(s),
            max_ack_delay_ms: s.transport.max_ack_delay.map(|d| d.secs() * 1e3),
        },
    };
    crate::limits::check(&plan).map_err(refused)?;
    check_addresses(s, &plan)?;
    Ok(plan)
}

/// The window a file wrote (`transport.window`) for the CLI's `--receive-window`; 0 (the CLI's
/// own 1.25 MB per stream) when it left the language's 8 MB default, which is the simulator's:
/// a timed `mpquic send` hands the stream all the window lets it buffer and, stopped at the
/// run's end, delivers that before it reports, which 8 MB per flow does not fit in the
/// runner's grace (amp-fig4b-k20: no flow of 5-17 reported).
fn written_window(s: &lang::Scenario) -> u64 {
    let window = s.transport.window;
    if window == lang::TransportSettings::default().window {
        0
    } else {
        window
    }
}

/// Every shaped direction's own parameters at the testbed's scale, as an override of the
/// plan's `link`, with whether it marks ECN.
fn shaped_links(
    s: &lang::Scenario,
    directions: &[(String, String, LinkConfig)],
    scale: &NetnsSettings,
) -> Result<Vec<(LinkOverride, bool)>, ScenarioError> {
    let mut links = Vec::new();
    for (i, (from, to, own)) in directions.iter().enumerate() {
        let config = s.link_for(from, to, own);
        let l = link_params(&config, scale).map_err(|e| at(format!("link ({from}->{to})"), e))?;
        if config.loss != s.link.loss {
            return Err(at(
                override_path(s, from, to, "loss", |c| c.loss.is_some())
                    .unwrap_or(format!("topology.links.{i}")),
                "netns: loss is one value for every direction ([link] loss)",
            ));
        }
        let o = LinkOverride {
            from: from.clone(),
            to: Some(to.clone()),
            rate_mbit: Some(l.rate_mbit),
            k_packets: Some(l.k_packets),
            buffer_bytes: Some(l.buffer_bytes),
            delay_ms: Some(l.delay_ms),
            jitter_ms: Some(l.jitter_ms),
        };
        links.push((o, l.ecn));
    }
    Ok(links)
}

/// Whether a routed path joins each flow's addresses (`from_addr`, `to_addr`), as the runner
/// will pick them; an error is placed at the written flow's address field.
fn check_addresses(s: &lang::Scenario, plan: &Plan) -> Result<(), ScenarioError> {
    let net = crate::topology::build(&plan.topology);
    for f in &plan.flows {
        let node = |name: &str| net.node(name).expect("the plan's hosts are the topology's");
        let Err(e) = net.flow_pairs(node(&f.from), node(&f.to), (f.from_addr, f.to_addr)) else {
            continue;
        };
        let written = s.flows.iter().position(|g| {
            (&g.to, g.from_addr, g.to_addr) == (&f.to, f.from_addr, f.to_addr)
                && host_range(&g.from).is_ok_and(|hosts| hosts.contains(&f.from))
        });
        let field = if f.to_addr > 0 { "to_addr" } else { "from_addr" };
        return Err(match written {
            Some(i) => at(format!("flows.{i}.{field}"), format!("netns: {e}")),
            None => ScenarioError::Invalid(format!("netns: {e}")),
        });
    }
    Ok(())
}

/// The written flows' and workloads' features the testbed has no counterpart for.
fn refuse_unsupported(s: &lang::Scenario) -> Result<(), ScenarioError> {
    if s.host_egress != lang::HostEgress::Qdisc {
        // The testbed leaves a host's egress unshaped (TCP Small Queues would hide a queue
        // there), so it has no port to mark at.
        return Err(at(
            "host_egress",
            "netns: the hosts' egress is their own qdisc (the simulator's `qdisc`); `port` \
             runs in the simulator",
        ));
    }
    if let Some((place, _)) = s.written_links().into_iter().find(|(_, l)| l.down_at.is_some()) {
        // Taking a veth down mid-run is not among the runner's events (it shapes each
        // direction once, at set-up).
        return Err(at(
            format!("{place}.down_at"),
            "netns: links stay up for the whole run; `down_at` runs in the simulator",
        ));
    }
    for (i, f) in s.flows.iter().enumerate() {
        let here = |field: &str| format!("flows.{i}.{field}");
        if f.response_bytes > 0 {
            return Err(at(
                here("response_bytes"),
                "netns: flows send one way (use workloads of kind partition-aggregate for answers)",
            ));
        }
    }
    for (i, w) in s.workloads.iter().enumerate() {
        match w {
            Workload::PartitionAggregate { paths, .. } if *paths != 1 => {
                return Err(at(
                    format!("workloads.{i}.paths"),
                    "netns: jobs use one path per worker",
                ));
            }
            Workload::Bursts(_) => {
                return Err(at(
                    format!("workloads.{i}.kind"),
                    "netns: burst sources run in the simulator (the testbed has no rate-paced \
                     unresponsive sender)",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The last `link_overrides` entry that sets `field` of the direction `from -> to` (`sets`
/// says whether a config does), as a field path.
fn override_path(
    s: &lang::Scenario,
    from: &str,
    to: &str,
    field: &str,
    sets: impl Fn(&LinkConfig) -> bool,
) -> Option<String> {
    let i = s.link_overrides.iter().rposition(|o| o.matches(from, to) && sets(&o.config))?;
    Some(format!("link_overrides.{i}.{field}"))
}

/// The directions the testbed does not shape whose delay the scenario sets explicitly, as
/// delay-only directions on the delay line of the switch at either end (`DelayOnly`).
/// Explicitly: by a `link_overrides` entry or by the link's own table (a custom topology's
/// link, a shape's `access`); `[link]`'s delay is every direction's default and stays off the
/// hosts' links (a data-center file's microseconds are the veths' own). A delay below the delay
/// line's resolution is dropped as on shaped directions; one between two hosts is refused at
/// the field that sets it, as no switch sits there to hold it.
fn delay_only(
    s: &lang::Scenario,
    e: &Expanded,
    shaped: &[(String, String, LinkConfig)],
    scale: &NetnsSettings,
) -> Result<Vec<DelayOnly>, ScenarioError> {
    let is_switch = |n: &str| e.switches.iter().any(|s| s == n);
    let mut delayed = Vec::new();
    for (i, l) in e.links.iter().enumerate() {
        for (from, to) in [(&l.a, &l.b), (&l.b, &l.a)] {
            let is_shaped = shaped.iter().any(|(f, t, _)| f == from && t == to);
            let Some(field) = delay_field(s, (i, l), from, to).filter(|_| !is_shaped) else {
                continue;
            };
            let (delay_ms, jitter_ms) = delay_ms(&s.link_for(from, to, &l.config), scale);
            let (switch, hook) = match (is_switch(from), is_switch(to)) {
                _ if delay_ms == 0.0 => continue,
                (true, _) => (from, Hook::Egress),
                (false, true) => (to, Hook::Ingress),
                (false, false) => return Err(at(field, HOST_TO_HOST_DELAY)),
            };
            let (from, to, at) = (from.clone(), to.clone(), switch.clone());
            delayed.push(DelayOnly { from, to, at, hook, delay_ms, jitter_ms });
        }
    }
    Ok(delayed)
}

const HOST_TO_HOST_DELAY: &str =
    "netns: a delay between two hosts (the testbed delays a direction at a switch it crosses)";

/// Where the scenario sets the delay of `from -> to` on link `i` (`l`) explicitly, as a field
/// path: the last override that does, else the link's own table (for a host-to-host link,
/// which only a custom topology has, `topology.links.i.delay`). `None`: `[link]`'s default.
fn delay_field(
    s: &lang::Scenario,
    (i, l): (usize, &LinkSpec),
    from: &str,
    to: &str,
) -> Option<String> {
    override_path(s, from, to, "delay", |c| c.delay.is_some())
        .or_else(|| l.config.delay.map(|_| format!("topology.links.{i}.delay")))
}

/// The testbed topology: hosts and switches (routers) by name; each host's addresses spread
/// over its links (address `i` on link `i % links`, at least one per link). A direction is
/// shaped (rate, FIFO, marker) when a switch sends it and it is monitored or leads to another
/// switch; hosts' own egress never is (TCP Small Queues would hide the queue; a delay set there
/// is `delay_only`'s). Returns the shaped directions with their links' own parameters.
fn topology(e: &Expanded) -> (Topology, Vec<(String, String, LinkConfig)>) {
    let is_switch = |n: &str| e.switches.iter().any(|s| s == n);
    let link_count = |h: &str| e.links.iter().filter(|l| l.a == h || l.b == h).count();
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut addrs_on = |node: &str| -> usize {
        let Some(h) = e.hosts.iter().find(|h| h.name == node) else { return 1 };
        let j = seen.entry(node.to_string()).or_default();
        let n = (0..h.addrs).filter(|i| i % link_count(node) == *j).count();
        *j += 1;
        n.max(1)
    };
    let mut links = Vec::new();
    let mut directions = Vec::new();
    for l in &e.links {
        let shaped =
            |from: &str, to: &str, monitored: bool| is_switch(from) && (monitored || is_switch(to));
        let a_to_b = shaped(&l.a, &l.b, l.monitor);
        let b_to_a = shaped(&l.b, &l.a, l.monitor_reverse);
        if a_to_b {
            directions.push((l.a.clone(), l.b.clone(), l.config.clone()));
        }
        if b_to_a {
            directions.push((l.b.clone(), l.a.clone(), l.config.clone()));
        }
        links.push(CustomLink {
            a: l.a.clone(),
            b: l.b.clone(),
            a_addrs: addrs_on(&l.a),
            b_addrs: addrs_on(&l.b),
            shape_a_to_b: a_to_b,
            shape_b_to_a: b_to_a,
        });
    }
    let hosts = e.hosts.iter().map(|h| CustomHost { name: h.name.clone() }).collect();
    (Topology::Custom { hosts, switches: e.switches.clone(), links }, directions)
}

/// One direction's parameters at the testbed's scale (`config` has every field set: the
/// scenario's `[link]` fills what the link and the overrides leave out).
fn link_params(config: &LinkConfig, scale: &NetnsSettings) -> Result<LinkParams, String> {
    let missing = |f: &str| format!("no {f} (set it in [link])");
    let frame = scale.frame_bytes;
    let k = config.k.ok_or_else(|| missing("k"))?;
    let buffer = config.buffer.ok_or_else(|| missing("buffer"))?;
    let (delay_ms, jitter_ms) = delay_ms(config, scale);
    let buffer_bytes = buffer.bytes(frame);
    let k_packets = k.packets(frame);
    Ok(LinkParams {
        rate_mbit: config.rate.ok_or_else(|| missing("rate"))?.0 as f64 * scale.rate_scale / 1e6,
        // A drop-tail direction (k = 0) is modelled with a threshold the FIFO cannot reach.
        k_packets: if k_packets == 0 {
            (buffer_bytes / frame + 1) as u32
        } else {
            k_packets as u32
        },
        buffer_bytes,
        delay_ms,
        jitter_ms,
        loss: config.loss.unwrap_or(0.0),
        ecn: k != Amount::Packets(0) && k != Amount::Bytes(0),
        sender_offload: scale.sender_offload,
        dualq: dualq(config, scale),
    })
}

/// A direction's delay and jitter at the testbed's scale, ms: none below `MIN_DELAY_MS`.
fn delay_ms(config: &LinkConfig, scale: &NetnsSettings) -> (f64, f64) {
    let ms = |d: Option<lang::Dur>| d.map_or(0.0, |d| d.secs() * 1e3 * scale.time_scale);
    match ms(config.delay) {
        d if d < MIN_DELAY_MS => (0.0, 0.0),
        d => (d, ms(config.jitter)),
    }
}

/// A dual queue's step and target at the testbed's time scale (the language's defaults where
/// the scenario leaves them out, as in the simulator).
fn dualq(config: &LinkConfig, scale: &NetnsSettings) -> Option<Dualq> {
    use lang::model::Aqm;
    if config.aqm != Some(Aqm::Dualq) {
        return None;
    }
    let us = |d: Option<lang::Dur>, default: lang::Dur| {
        d.unwrap_or(default).secs() * 1e6 * scale.time_scale
    };
    Some(Dualq {
        l_step_us: us(config.l_step, Aqm::L_STEP),
        classic_target_us: us(config.classic_target, Aqm::CLASSIC_TARGET),
    })
}

/// An mpquic flow's paths as the runner opens them: (address pairs, paths over each pair).
/// The simulator spreads path `i` over address `i % addrs`, so more paths than the hosts have
/// address pairs share the pairs' links (link sharing, as MPTCP-D's E5 studies); the testbed
/// opens them as `paths_per_pair` over each pair, which needs a whole number per pair.
fn spread_paths(f: &lang::FlowSpec, pairs: usize) -> Result<(usize, usize), ScenarioError> {
    if pairs == 0 || f.paths <= pairs {
        return Ok((f.paths, f.paths_per_pair));
    }
    if !f.paths.is_multiple_of(pairs) {
        return Err(ScenarioError::Invalid(format!(
            "netns: flow from {} to {}: {} paths over {pairs} address pairs (the testbed opens \
             as many over every pair: a multiple of {pairs})",
            f.from, f.to, f.paths
        )));
    }
    Ok((pairs, f.paths / pairs * f.paths_per_pair))
}

/// The controller of a kernel flow: the one it names, else [`KERNEL_DEFAULT`].
fn kernel_controller(f: &lang::FlowSpec) -> Controller {
    Controller::Kernel(f.controller.as_ref().map_or(KERNEL_DEFAULT, |c| c.text()).to_string())
}

/// The controller of kernel flows that name none: Linux's default. The library's default
/// (AMP) is no kernel module, and a new namespace's own default need not be the host's (bbr
/// here), so the testbed names it.
const KERNEL_DEFAULT: &str = "cubic";

/// What every flow and job of one point shares: the scenario, its scale, the testbed's
/// network, and the transport settings, parsed once.
struct Point<'a> {
    s: &'a lang::Scenario,
    scale: &'a NetnsSettings,
    net: &'a crate::topology::Net,
    ecn: EcnPrecision,
    scheduler: Scheduler,
}

impl<'a> Point<'a> {
    fn new(
        s: &'a lang::Scenario,
        scale: &'a NetnsSettings,
        net: &'a crate::topology::Net,
    ) -> Result<Self, ScenarioError> {
        let (ecn, scheduler) = (s.transport.ecn, s.transport.scheduler.clone());
        Ok(Point { s, scale, net, ecn, scheduler })
    }

    /// The mpquic controller `written` (none: the document's), as the library parsed it when
    /// the file was read.
    fn mpquic_controller(
        &self,
        written: Option<&lang::ControllerSpec>,
    ) -> Result<MpquicController, ScenarioError> {
        let spec = written.unwrap_or(&self.s.controller);
        let invalid = |e| ScenarioError::Invalid(format!("netns: controller `{spec}`: {e}"));
        Ok(MpquicController::new(spec.congestion().map_err(invalid)?.clone(), spec.text()))
    }

    /// One expanded flow as the runner starts it.
    fn flow(&self, f: &lang::FlowSpec) -> Result<Flow, ScenarioError> {
        let (kind, controller) = match f.kind {
            lang::FlowKind::Mpquic => (
                FlowKind::Mpquic,
                Controller::Mpquic(self.mpquic_controller(f.controller.as_ref())?),
            ),
            lang::FlowKind::KernelTcp => (FlowKind::KernelTcp, kernel_controller(f)),
            lang::FlowKind::KernelMptcp => (FlowKind::KernelMptcp, kernel_controller(f)),
        };
        let start_s = f.start.secs() * self.scale.time_scale;
        let bytes = f.bytes.map_or(0, |b| (b as f64 * self.scale.size_scale).round() as u64);
        let stop_s = f.stop.unwrap_or(self.s.duration).secs() * self.scale.time_scale;
        let (paths, paths_per_pair) = self.paths(f, kind)?;
        Ok(Flow {
            kind,
            from: f.from.clone(),
            to: f.to.clone(),
            controller,
            bytes,
            for_s: if bytes == 0 { (stop_s - start_s).max(0.0) } else { 0.0 },
            start_s,
            count: 1,
            stagger_ms: 0.0,
            paths,
            from_addr: f.from_addr,
            to_addr: f.to_addr,
            ecn: self.ecn,
            scheduler: self.scheduler.clone(),
            paths_per_pair: paths_per_pair as u32,
            repeat: f.repeat as u32,
            same_connection: f.repeat_over == lang::RepeatOver::OneConnection,
            path_delays_s: path_delays(f, kind, paths_per_pair, start_s, self.scale)?,
            backup_paths: backup_paths(f, kind, paths_per_pair)?,
        })
    }

    /// A flow's paths as the runner opens them, (paths, paths over each pair), from the pair of
    /// its addresses: mpquic, `paths` pairs (spread over the pairs when there are fewer);
    /// kernel TCP, that pair; kernel MPTCP, its subflows.
    fn paths(&self, f: &lang::FlowSpec, kind: FlowKind) -> Result<(usize, usize), ScenarioError> {
        let pairs = match (self.net.node(&f.from), self.net.node(&f.to)) {
            (Some(a), Some(b)) => self.net.path_pairs(a, b).len(),
            _ => 0,
        };
        Ok(match kind {
            FlowKind::Mpquic => spread_paths(f, pairs)?,
            FlowKind::KernelTcp => (1, 1),
            FlowKind::KernelMptcp => (f.paths, 1),
        })
    }

    /// Workload `i` as the runner's jobs if it is a partition-aggregate one: `parallel`
    /// closed-loop job streams of `jobs` jobs each, one warm connection per worker (the
    /// testbed's `mpquic aggregate`). The language's closed loop (connections per job, jobs
    /// until the run's end) and jobs with hosts drawn per job are refused: a stream here has
    /// one aggregator with its workers' connections open from the start.
    fn jobs(&self, i: usize, w: &Workload) -> Option<Result<Jobs, ScenarioError>> {
        let Workload::PartitionAggregate {
            aggregator,
            workers,
            response_bytes,
            jobs,
            parallel,
            closed_loop,
            start,
            controller,
            ..
        } = w
        else {
            return None;
        };
        let here = |field: &str| format!("workloads.{i}.{field}");
        let (Some(aggregator), Workers::Hosts(workers)) = (aggregator, workers) else {
            return Some(Err(at(
                here("workers"),
                "netns: jobs that draw their hosts (`workers` as a number) run in the simulator \
                 only (a job stream here has one aggregator and its workers' connections)",
            )));
        };
        if *closed_loop {
            return Some(Err(at(
                here("closed_loop"),
                "netns: closed_loop runs in the simulator only (a job stream here keeps one \
                 warm connection per worker and runs `jobs` jobs)",
            )));
        }
        let controller = match self.mpquic_controller(controller.as_ref()) {
            Ok(c) => c,
            Err(e) => return Some(Err(at(here("controller"), e.to_string()))),
        };
        Some(Ok(Jobs {
            aggregator: aggregator.clone(),
            workers: workers.clone(),
            response_bytes: (*response_bytes as f64 * self.scale.size_scale).round() as u64,
            jobs: jobs.unwrap_or(Workload::OPEN_LOOP_JOBS) as u32,
            parallel: *parallel as u32,
            gap_ms: 0.0,
            start_s: start.secs() * self.scale.time_scale,
            controller,
            ecn: self.ecn,
        }))
    }
}

/// A flow's `path_times` (since the start of the run) as the CLI's `--path-delay` (since its
/// connection, which the runner makes when it starts the flow's process at `start_s`): a path
/// due by then opens with the connection, as in the simulator. The CLI opens a pair's paths
/// one after the other where the language spreads them over the pairs, so `path_times` with
/// several paths over a pair is refused.
fn path_delays(
    f: &lang::FlowSpec,
    kind: FlowKind,
    paths_per_pair: usize,
    start_s: f64,
    scale: &NetnsSettings,
) -> Result<Vec<f64>, ScenarioError> {
    if f.path_times.is_empty() {
        return Ok(Vec::new());
    }
    if kind != FlowKind::Mpquic || paths_per_pair > 1 {
        return Err(ScenarioError::Invalid(format!(
            "netns: flow from {} to {}: path_times needs an mpquic flow with one path per \
             address pair",
            f.from, f.to
        )));
    }
    Ok(f.path_times.iter().map(|t| (t.secs() * scale.time_scale - start_s).max(0.0)).collect())
}

/// A flow's `backup_paths` as the runner passes them (`--backup-path` for those pairs). The CLI
/// opens its backups after its other paths, so only the last paths may be backups (the
/// language's order is then the CLI's), one path per address pair.
fn backup_paths(
    f: &lang::FlowSpec,
    kind: FlowKind,
    paths_per_pair: usize,
) -> Result<Vec<usize>, ScenarioError> {
    if f.backup_paths.is_empty() {
        return Ok(Vec::new());
    }
    let refuse = |why: &str| {
        Err(ScenarioError::Invalid(format!(
            "netns: flow from {} to {}: backup_paths {why}",
            f.from, f.to
        )))
    };
    if kind != FlowKind::Mpquic || paths_per_pair > 1 {
        return refuse("needs an mpquic flow with one path per address pair");
    }
    let mut backups = f.backup_paths.clone();
    backups.sort_unstable();
    backups.dedup();
    if backups.iter().rev().zip((0..f.paths).rev()).any(|(b, last)| *b != last) {
        return refuse("must be the flow's last paths (the CLI opens backups after the others)");
    }
    Ok(backups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology;

    const TWO_PATH: &str = r#"
name = "t"
duration = "2s"
controller = "amp:beta=4"
[link]
rate = "10Gbps"
delay = "2us"
buffer = 100
k = 10
[netns]
rate_scale = 0.01
[topology]
kind = "two-path"
cross_hosts = 0
[[link_overrides]]
from = "b"
to = "dst"
rate = "2Gbps"
delay = "40ms"
[[flows]]
from = "src"
to = "dst"
paths = 2
bytes = "1MB"
"#;

    fn plan(text: &str) -> Result<Plan, ScenarioError> {
        let e = mpquic_scenario::Experiment::parse(text, "t.toml")?;
        compile(&e.points[0].scenario, "t")
    }

    /// The `[transport]` settings the simulator reads reach every mpquic process here too, as
    /// CLI flags: a window the file wrote and the ACK profile, which a run used to leave at
    /// the CLI's defaults (1.25 MB, 25 ms) unsaid. The language's default window stays the
    /// CLI's (see `written_window`).
    #[test]
    fn the_transport_window_and_ack_profile_reach_the_cli() {
        let p = plan(TWO_PATH).unwrap();
        assert!(p.quic.args().is_empty(), "{:?}", p.quic.args());
        let text = TWO_PATH.replace(
            "[topology]",
            "[transport]\nwindow = 2000000\nmax_ack_delay = \"1ms\"\n[topology]",
        );
        let p = plan(&text).unwrap();
        assert_eq!(p.quic.args(), ["--receive-window", "2000000", "--max-ack-delay", "1"]);
    }

    #[test]
    fn two_path_shapes_the_switches_toward_dst_at_the_netns_scale() {
        let p = plan(TWO_PATH).unwrap();
        let links = p.links();
        let dirs: Vec<(&str, &str)> = links.iter().map(|(f, t, _)| (&f[..], &t[..])).collect();
        assert_eq!(dirs, [("a", "dst"), ("b", "dst")], "never a host's egress, never toward src");
        let (a, b) = (&links[0].2, &links[1].2);
        assert_eq!((a.rate_mbit, a.k_packets, a.buffer_bytes), (100.0, 10, 151_400));
        assert_eq!(a.delay_ms, 0.0, "2 us is below the delay line's resolution");
        assert_eq!((b.rate_mbit, b.delay_ms), (20.0, 40.0), "the override, scaled");
        let f = &p.flows[0];
        let Controller::Mpquic(c) = &f.controller else { panic!("{:?}", f.controller) };
        assert_eq!((c.name(), c.text()), ("amp", "amp:beta=4"), "parsed, and its text for the CLI");
        assert_eq!((f.bytes, f.paths), (1 << 20, 2));
        let net = topology::build(&p.topology);
        let pairs = net.path_pairs(net.node("src").unwrap(), net.node("dst").unwrap());
        assert_eq!(pairs.len(), 2, "one address of src and dst on each switch's link");
        assert_ne!(pairs[0].1, pairs[1].1);
    }

    #[test]
    fn fat_tree_shapes_every_switch_to_switch_direction_and_the_host_downlinks() {
        let text = TWO_PATH
            .replace("kind = \"two-path\"\ncross_hosts = 0", "kind = \"fat-tree\"\nk = 4")
            .replace("from = \"b\"\nto = \"dst\"", "from = \"c0\"")
            .replace("from = \"src\"\nto = \"dst\"", "from = \"h0\"\nto = \"h15\"");
        let p = plan(&text).unwrap();
        assert_eq!(p.links().len(), 16 + 64);
        let net = topology::build(&p.topology);
        assert_eq!(net.nodes.iter().filter(|n| !n.router).count(), 16);
        assert_eq!(net.nodes.iter().filter(|n| n.router).count(), 20);
        assert_eq!(net.links.len(), 48);
        let node = |n: &str| net.node(n).unwrap();
        let host_link =
            |h: usize| net.links.iter().find(|l| l.a.node == h || l.b.node == h).unwrap();
        // h0's edge reaches h15 (another pod) over both aggregation switches, an aggregation
        // switch over both its cores; a core has one way down.
        let dst = host_link(node("h15")).subnet;
        let route = |n: &str, dst| net.routes.iter().find(|r| r.node == node(n) && r.dst == dst);
        assert_eq!(route("e0_0", dst).unwrap().more.len(), 1, "edge: 2 next hops");
        assert_eq!(route("a0_0", dst).unwrap().more.len(), 1, "agg: 2 next hops");
        assert_eq!(route("c0", dst).unwrap().more.len(), 0, "core: 1 next hop");
        // Within a pod, an edge reaches the other edge's hosts over both aggregation switches.
        let dst2 = host_link(node("h2")).subnet;
        assert_eq!(route("e0_0", dst2).unwrap().more.len(), 1);
        assert_eq!(net.path_pairs(node("h0"), node("h15")).len(), 1);
        let two_path = topology::build(&plan(TWO_PATH).unwrap().topology);
        assert!(two_path.routes.iter().all(|r| r.more.is_empty()), "single-path routed");
    }

    #[test]
    fn what_the_testbed_cannot_do_is_refused_at_its_line() {
        let text = TWO_PATH.replace("paths = 2", "paths = 2\nresponse_bytes = 100");
        let e = crate::experiment::load_text(&text, "t.toml").err().unwrap().to_string();
        assert!(e.starts_with("t.toml:24:"), "{e}");
        assert!(e.contains("netns: flows send one way"), "{e}");
        let text = TWO_PATH.replace("to = \"dst\"\nrate", "to = \"dst\"\nloss = 0.1\nrate");
        let e = crate::experiment::load_text(&text, "t.toml").err().unwrap().to_string();
        assert!(e.contains("t.toml:18:") && e.contains("loss is one value"), "{e}");
    }

    /// Backup paths become `--backup-path`s: the last paths only, as the CLI opens them last.
    #[test]
    fn backup_paths_are_the_flows_last_paths() {
        let text = TWO_PATH.replace("paths = 2\n", "paths = 2\nbackup_paths = [1]\n");
        assert_eq!(plan(&text).unwrap().flows[0].backup_paths, [1]);
        assert!(plan(TWO_PATH).unwrap().flows[0].backup_paths.is_empty());
        let mut three = lang::FlowSpec::bulk("src", "dst");
        three.paths = 3;
        three.backup_paths = vec![1];
        let e = backup_paths(&three, FlowKind::Mpquic, 1).err().unwrap().to_string();
        assert!(e.contains("backup_paths must be the flow's last paths"), "{e}");
    }

    /// XMP Fig. 6's flow adding paths while it runs: the run's times become delays after the
    /// connection, which the runner makes at the flow's start (scaled); a path due before
    /// then opens with it.
    #[test]
    fn path_times_become_delays_after_the_flows_connection() {
        let text = TWO_PATH
            .replace("paths = 2\n", "paths = 2\npath_times = [\"0ms\", \"300ms\"]\n")
            .replace("rate_scale = 0.01", "rate_scale = 0.01\ntime_scale = 10");
        assert_eq!(plan(&text).unwrap().flows[0].path_delays_s, [0.0, 3.0]);
        let late = text.replace("bytes = \"1MB\"", "bytes = \"1MB\"\nstart = \"100ms\"");
        assert_eq!(plan(&late).unwrap().flows[0].path_delays_s, [0.0, 2.0]);
        let early = text.replace("bytes = \"1MB\"", "bytes = \"1MB\"\nstart = \"500ms\"");
        assert_eq!(plan(&early).unwrap().flows[0].path_delays_s, [0.0, 0.0]);
        assert!(plan(TWO_PATH).unwrap().flows[0].path_delays_s.is_empty());
        // The CLI opens a pair's paths together, the language spreads them over the pairs.
        let shared = text
            .replace("paths = 2\n", "paths = 4\n")
            .replace("[\"0ms\", \"300ms\"]", "[\"0ms\", \"1ms\", \"2ms\", \"3ms\"]");
        let e = plan(&shared).err().unwrap().to_string();
        assert!(
            e.contains("path_times needs an mpquic flow with one path per address pair"),
            "{e}"
        );
    }

    /// A flow without `bytes` (E3's bulk flows) sends from its start until its stop, or the
    /// run's end: a timed `mpquic send`, its time at the testbed's scale.
    #[test]
    fn flows_without_bytes_send_until_their_stop_or_the_run_end() {
        let text = TWO_PATH.replace(
            "rate_scale = 0.01",
            "rate_scale = 0.01
time_scale = 2.0",
        );
        let text = text.replace("bytes = \"1MB\"", "start = \"0.5s\"\nstop = \"1.5s\"");
        let f = &plan(&text).unwrap().flows[0];
        assert_eq!((f.bytes, f.start_s, f.for_s), (0, 1.0, 2.0));
        let f = &plan(&text.replace("stop = \"1.5s\"", "")).unwrap().flows[0];
        assert_eq!((f.bytes, f.for_s), (0, 3.0), "until the run's end, 4 s");
        let e = plan(&text.replace("paths = 2", "paths = 2\nrepeat = 3")).unwrap_err();
        assert!(e.to_string().contains("repeat needs bytes"), "{e}");
        // Starting at the run's end (2 s here) is "not in this run", as in the simulator (this
        // file's only flow, so the plan has none left); a moment earlier it is a flow.
        let never = text.replace("stop = \"1.5s\"", "").replace("\"0.5s\"", "\"2s\"");
        let e = plan(&never).unwrap_err().to_string();
        assert!(e.contains("no flows and no jobs"), "{e}");
        let late = never.replace("start = \"2s\"", "start = \"1.9s\"");
        assert_eq!(plan(&late).unwrap().flows.len(), 1);
    }

    /// `repeat_over = "one-connection"` becomes the CLI's `--same-connection`.
    #[test]
    fn repeats_over_one_connection_pass_same_connection_to_the_cli() {
        let text = TWO_PATH.replace("paths = 2\n", "paths = 2\nrepeat = 3\n");
        assert!(!plan(&text).unwrap().flows[0].same_connection);
        let one = text.replace("repeat = 3\n", "repeat = 3\nrepeat_over = \"one-connection\"\n");
        let f = &plan(&one).unwrap().flows[0];
        assert!(f.same_connection && f.repeat == 3);
    }

    /// E5's link sharing: more paths than address pairs become paths over each pair, as the
    /// simulator spreads them; kernel flows keep theirs.
    #[test]
    fn paths_beyond_the_address_pairs_share_the_pairs_links() {
        let text = TWO_PATH.replace("paths = 2\n", "paths = 8\nrepeat = 20\n");
        let f = &plan(&text).unwrap().flows[0];
        assert_eq!((f.paths, f.paths_per_pair, f.repeat), (2, 4, 20));
        let text = TWO_PATH.replace("paths = 2\n", "paths = 2\npaths_per_pair = 3\n");
        let f = &plan(&text).unwrap().flows[0];
        assert_eq!((f.paths, f.paths_per_pair), (2, 3), "written per pair: as written");
        let text = TWO_PATH.replace("paths = 2\n", "paths = 3\n");
        let e = plan(&text).err().unwrap().to_string();
        assert!(e.contains("3 paths over 2 address pairs") && e.contains("multiple of 2"), "{e}");
        let text = TWO_PATH.replace("paths = 2\n", "kind = \"kernel-mptcp\"\npaths = 8\n");
        let f = &plan(&text).unwrap().flows[0];
        assert_eq!((f.kind, f.paths_per_pair), (FlowKind::KernelMptcp, 1));
    }

    /// The points of an experiment file of `experiments/`, as `mpquic-testbed plan` compiles
    /// them.
    fn file_plans(name: &str) -> Vec<Plan> {
        let path = format!("{}/../experiments/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let compiled = crate::experiment::load(std::path::Path::new(&path)).unwrap();
        compiled.points.into_iter().map(|p| p.plan).collect()
    }

    /// L4's access links set the flows' RTTs: s0 -> sw and s1 -> sw are hosts' egress, never
    /// shaped, so their delays are held where they enter sw, at the testbed's time scale, and
    /// sw -> r stays the one shaped direction.
    #[test]
    fn l4s_access_delays_are_held_at_the_switchs_ingress() {
        let delayed = |p: &Plan| -> Vec<(String, String, String, Hook, f64)> {
            let d = p.delay_only.iter();
            d.map(|d| (d.from.clone(), d.to.clone(), d.at.clone(), d.hook, d.delay_ms)).collect()
        };
        let ingress = |from: &str, ms| (from.into(), "sw".into(), "sw".into(), Hook::Ingress, ms);
        for p in file_plans("L4-dualq-rtt-bias") {
            assert_eq!(delayed(&p), [ingress("s0", 1.5), ingress("s1", 24.0)], "{}", p.name);
            let links = p.links();
            assert_eq!(links.len(), 1, "{}: only sw -> r is shaped", p.name);
            assert_eq!((&links[0].0[..], &links[0].1[..], links[0].2.delay_ms), ("sw", "r", 1.0));
        }
        let path = format!("{}/../experiments/L4-dualq-rtt-bias.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap() + "[netns]\ntime_scale = 2\n";
        let p = plan(&text).unwrap();
        assert_eq!(delayed(&p), [ingress("s0", 3.0), ingress("s1", 48.0)], "scaled");
    }

    /// A switch's own egress toward a host is delayed where it leaves the switch; a delay
    /// below the delay line's resolution (a data-center access link's microseconds) is the
    /// veths' own, as on shaped directions; `[link]`'s delay alone delays no host link.
    #[test]
    fn delays_on_unshaped_directions_are_kept_only_where_written() {
        let text = TWO_PATH.replace("from = \"b\"\nto = \"dst\"", "from = \"a\"\nto = \"src\"");
        let p = plan(&text).unwrap();
        let d = &p.delay_only;
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            (&d[0].from[..], &d[0].at[..], d[0].hook, d[0].delay_ms),
            ("a", "a", Hook::Egress, 40.0)
        );
        assert_eq!(p.links().len(), 2, "the shaped directions are as before");
        let microseconds =
            TWO_PATH.replace("cross_hosts = 0", "cross_hosts = 0\naccess = { delay = \"50us\" }");
        assert!(plan(&microseconds).unwrap().delay_only.is_empty());
        let own = microseconds.replace("50us", "5ms");
        let d = plan(&own).unwrap().delay_only;
        let dirs: Vec<_> = d.iter().map(|d| (&d.from[..], &d.to[..], d.hook)).collect();
        assert_eq!(
            dirs,
            [
                ("src", "a", Hook::Ingress),
                ("a", "src", Hook::Egress),
                ("src", "b", Hook::Ingress),
                ("b", "src", Hook::Egress)
            ],
            "a link's own table sets both its directions"
        );
        let p = plan(TWO_PATH).unwrap();
        assert!(p.delay_only.is_empty(), "b -> dst is shaped: its delay is the shaped link's");
        let long = TWO_PATH.replace("delay = \"2us\"", "delay = \"20ms\"");
        assert_eq!(plan(&long).unwrap().links()[0].2.delay_ms, 20.0, "[link] delays shaped links");
        assert!(plan(&long).unwrap().delay_only.is_empty(), "but no host link");
    }

    /// Between two hosts no switch can hold a delay: refused at the field that sets it.
    #[test]
    fn a_delay_between_two_hosts_is_refused_at_its_field() {
        let text = r#"
name = "h"
duration = "1s"
[link]
rate = "100Mbps"
buffer = 100
k = 10
[topology]
kind = "custom"
hosts = [{ name = "a" }, { name = "b" }, { name = "c" }]
switches = ["sw"]
links = [
    { a = "a", b = "sw", monitor = true },
    { a = "b", b = "sw", monitor = true },
    { a = "a", b = "c", delay = "5ms" },
]
[[flows]]
from = "a"
to = "b"
"#;
        let e = crate::experiment::load_text(text, "h.toml").err().unwrap().to_string();
        assert!(e.starts_with("h.toml:15:") && e.contains("topology.links.2.delay"), "{e}");
        assert!(e.contains("a delay between two hosts"), "{e}");
        let overridden = text.replace("delay = \"5ms\" ", "")
            + "[[link_overrides]]\nfrom = \"c\"\nto = \"a\"\ndelay = \"2ms\"\n";
        let e = crate::experiment::load_text(&overridden, "h.toml").err().unwrap().to_string();
        assert!(e.starts_with("h.toml:23:") && e.contains("link_overrides.0.delay"), "{e}");
    }

    #[test]
    fn poisson_arrivals_become_flows_with_their_start_times_at_the_netns_scale() {
        let text = r#"
name = "p"
duration = "100ms"
controller = "lia"
[link]
rate = "10Gbps"
buffer = 100
k = 10
[netns]
rate_scale = 0.01
time_scale = 10
[netns.set]
"flows.*.bytes" = "8MB"
[topology]
kind = "many-to-one"
senders = 4
[[flows]]
from = "s0"
to = "r"
paths = 2
[[workloads]]
kind = "poisson"
hosts = ["s1", "s2", "s3"]
receiver = "r"
rate = 1000.0
bytes = "70KB"
start = "10ms"
stop = "50ms"
paths = 4
controller = "mmptcp"
"#;
        let e = crate::experiment::load_text(text, "p.toml").unwrap();
        let s = &e.experiment.points[0].scenario;
        let hosts = s.topology.expand().unwrap().hosts;
        let arrivals = mpquic_scenario::expand::expand_workloads(s, &hosts).unwrap();
        let p = &e.points[0].plan;
        assert_eq!(p.flows.len(), arrivals.len());
        assert!(p.flows.len() > 20, "~40 arrivals in 40 ms at 1000/s: {}", p.flows.len());
        assert_eq!(
            (p.flows[0].bytes, p.flows[0].controller.name()),
            (8 << 20, "lia"),
            "[netns.set]"
        );
        for (f, a) in p.flows.iter().zip(&arrivals).skip(1) {
            // One address pair per host here: the 4 paths share it (`paths_per_pair`).
            assert_eq!(
                (f.to.as_str(), f.bytes, f.paths, f.paths_per_pair, f.controller.name()),
                ("r", 70 * 1024, 1, 4, "mmptcp")
            );
            assert!((f.start_s - a.start.secs() * 10.0).abs() < 1e-9, "time_scale 10");
            assert!((0.1..0.5).contains(&f.start_s));
        }
    }

    #[test]
    fn flows_start_at_the_routed_pair_of_their_addresses() {
        let text = TWO_PATH.replace("cross_hosts = 0", "cross_hosts = 1").replace(
            "[[flows]]",
            "[[flows]]\nfrom = \"xb0\"\nto = \"dst\"\nto_addr = 1\nbytes = \"1MB\"\n[[flows]]",
        ) + "from_addr = 1\n";
        let p = plan(&text).unwrap();
        let net = topology::build(&p.topology);
        let node = |n: &str| net.node(n).unwrap();
        let pairs = |f: &Flow| {
            net.flow_pairs(node(&f.from), node(&f.to), (f.from_addr, f.to_addr)).unwrap()
        };
        let dst = net.host_addrs(node("dst"));
        let src = net.host_addrs(node("src"));
        assert_eq!(pairs(&p.flows[0]), [(net.host_addrs(node("xb0"))[0], dst[1])]);
        // src's address 1 is on switch b's link: its paths start there and wrap around.
        assert_eq!(pairs(&p.flows[1]), [(src[1], dst[1]), (src[0], dst[0])]);

        // xa0 reaches only dst's address 0 (switch a), and dst has two addresses.
        for (to_addr, says) in [
            (1, "no routed path from xa0's address 0 to dst's address 1"),
            (2, "dst has no address 2 (it has 2)"),
        ] {
            let bad = text.replacen(
                "from = \"xb0\"\nto = \"dst\"\nto_addr = 1",
                &format!("from = \"xa0\"\nto = \"dst\"\nto_addr = {to_addr}"),
                1,
            );
            let e = crate::experiment::load_text(&bad, "t.toml").err().unwrap().to_string();
            assert!(e.starts_with("t.toml:23:") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn workloads_become_flows_and_jobs_at_the_netns_scale() {
        let text = r#"
name = "w"
duration = "100ms"
controller = "amp"
[link]
rate = "10Gbps"
delay = "2us"
buffer = 100
k = 10
[netns]
rate_scale = 0.01
time_scale = 10
size_scale = 2
[topology]
kind = "many-to-one"
senders = 6
sender_addrs = 4
[[workloads]]
kind = "incast"
receiver = "r"
senders = ["s0", "s1", "s2"]
bytes = "128KB"
rounds = 2
interval = "30ms"
stagger = "50us"
start = "5ms"
paths = 4
[[workloads]]
kind = "partition-aggregate"
aggregator = "r"
workers = ["s3", "s4", "s5"]
response_bytes = "64KB"
jobs = 5
parallel = 2
controller = "dctcp"
"#;
        let p = plan(text).unwrap();
        assert_eq!(p.duration_s, 1.0);
        assert_eq!(p.flows.len(), 6, "3 senders x 2 rounds");
        let starts: Vec<f64> = p.flows.iter().map(|f| (f.start_s * 1e4).round() / 1e4).collect();
        assert_eq!(starts, [0.05, 0.0505, 0.051, 0.35, 0.3505, 0.351]);
        assert!(p.flows.iter().all(|f| f.bytes == 2 * 128 * 1024 && f.paths == 4));
        assert_eq!(p.jobs.len(), 1);
        let j = &p.jobs[0];
        assert_eq!((j.jobs, j.parallel, j.response_bytes), (5, 2, 2 * 64 * 1024));
        assert_eq!((j.controller.name(), j.workers.len()), ("dctcp", 3));
        let links = p.links();
        assert_eq!(links.len(), 1, "only sw->r is shaped");
        assert_eq!((&links[0].0[..], &links[0].1[..], links[0].2.rate_mbit), ("sw", "r", 100.0));
    }

    /// Jobs whose hosts are drawn per job, or that run in the language's closed loop, are the
    /// simulator's: refused at the key that asks for them, not run as fixed job streams.
    #[test]
    fn drawn_or_closed_loop_jobs_are_refused_at_their_line() {
        let text = r#"
name = "j"
duration = "100ms"
[topology]
kind = "many-to-one"
senders = 4
[[workloads]]
kind = "partition-aggregate"
aggregator = "r"
workers = ["s0", "s1"]
response_bytes = "64KB"
"#;
        assert!(plan(text).is_ok(), "fixed hosts, open loop: the testbed's job streams");
        let drawn = text.replace("aggregator = \"r\"\nworkers = [\"s0\", \"s1\"]", "workers = 2");
        let e = crate::experiment::load_text(&drawn, "j.toml").err().unwrap().to_string();
        assert!(e.starts_with("j.toml:9:") && e.contains("workloads.0.workers"), "{e}");
        assert!(e.contains("netns: jobs that draw their hosts"), "{e}");
        let closed = format!("{text}closed_loop = true\n");
        let e = crate::experiment::load_text(&closed, "j.toml").err().unwrap().to_string();
        assert!(e.starts_with("j.toml:12:") && e.contains("workloads.0.closed_loop"), "{e}");
        assert!(e.contains("netns: closed_loop runs in the simulator only"), "{e}");
    }

    /// A burst source is the simulator's: refused at its workload's kind.
    #[test]
    fn a_burst_source_is_refused_at_its_line() {
        let text = "name = \"b\"\nduration = \"1s\"\n[topology]\nkind = \"two-path\"\n\
                    [[workloads]]\nkind = \"bursts\"\nfrom = \"xa0\"\nto = \"dst\"\n\
                    rate = \"50Mbps\"\non_mean = \"2s\"\noff_mean = \"10s\"\n";
        let e = crate::experiment::load_text(text, "b.toml").err().unwrap().to_string();
        assert!(e.starts_with("b.toml:6:8: workloads.0.kind"), "{e}");
        assert!(e.contains("netns: burst sources run in the simulator"), "{e}");
    }

    /// A host egress made a switch port is the simulator's: refused at its key.
    #[test]
    fn a_host_egress_port_is_refused_at_its_line() {
        let text = "name = \"p\"\nduration = \"100ms\"\nhost_egress = \"port\"\n\
                    [topology]\nkind = \"two-path\"\n[[flows]]\nfrom = \"src\"\nto = \"dst\"\n";
        let e = crate::experiment::load_text(text, "p.toml").err().unwrap().to_string();
        assert!(e.starts_with("p.toml:3:") && e.contains("host_egress"), "{e}");
        assert!(e.contains("netns: the hosts' egress is their own qdisc"), "{e}");
        assert!(
            crate::experiment::load_text(&text.replace("\"port\"", "\"qdisc\""), "p.toml").is_ok()
        );
    }

    /// A link going down mid-run is the simulator's: refused at its key, wherever the link is
    /// written.
    #[test]
    fn a_link_going_down_is_refused_at_its_line() {
        let text = "name = \"d\"\nduration = \"100ms\"\n[topology]\nkind = \"custom\"\n\
                    hosts = [{ name = \"s\" }, { name = \"r\" }]\nswitches = [\"sw\"]\n\
                    links = [\n  { a = \"s\", b = \"sw\" },\n  { a = \"sw\", b = \"r\", \
                    down_at = \"50ms\" },\n]\n[[flows]]\nfrom = \"s\"\nto = \"r\"\n";
        let e = crate::experiment::load_text(text, "d.toml").err().unwrap().to_string();
        assert!(e.starts_with("d.toml:9:") && e.contains("down_at"), "{e}");
        assert!(e.contains("netns: links stay up for the whole run"), "{e}");
        let up = text.replace(", down_at = \"50ms\"", "");
        assert!(crate::experiment::load_text(&up, "d.toml").is_ok());
    }
}
