//! A finished simulation as both backends record a run ([`RunRecord`]): what the shared
//! analyses ([`mpquic_scenario::analyses`]) read. The simulator knows its runs exactly: bytes
//! per bucket of `output.goodput_interval` for every flow and link (stamped at each bucket's
//! start), path openings in virtual time, the links each path crosses.

use std::net::IpAddr;

use mpquic_scenario::record::{
    self, FlowFacts, FlowSeries, LinkSample, LinkSeries, PathEvent, PathEventKind, PathFacts,
    RunRecord,
};

use crate::net::{Interface, Node, Ps};
use crate::report::{FlowReport, Report};
use crate::sim::{Flow, Side, Sim};

/// The run as both backends record one: the outcome, each flow's goodput per bucket, every
/// link's bytes per bucket (and the monitored links' queue series), the client paths' openings
/// (with their virtual time) and closures (at the end: the simulator keeps the reason, not the
/// time), and what the analyses read of each flow.
pub fn of(report: &Report, sim: &Sim) -> RunRecord {
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let flow_series = sim.flows.iter().map(|f| flow_series(f, bucket)).collect();
    let end = sim.scenario.duration.0;
    let link_series = sim.links.iter().map(|l| link_series(l, bucket, end)).collect();
    let path_events = report.flows.iter().zip(&sim.flows).flat_map(path_events).collect();
    let flows = (0..sim.flows.len()).map(|i| flow_facts(sim, &report.flows[i], i)).collect();
    RunRecord {
        outcome: report.outcome(),
        flow_series,
        link_series,
        path_events,
        flows,
        ..RunRecord::default()
    }
}

/// A flow's goodput per bucket of width `bucket` as (bucket start in seconds, bits per second).
fn flow_series(flow: &Flow, bucket: Ps) -> FlowSeries {
    let secs = bucket as f64 / 1e12;
    let delivered = flow.progress.delivered.iter().enumerate();
    FlowSeries {
        flow: flow.name.clone(),
        goodput: delivered.map(|(i, &b)| (i as f64 * secs, b as f64 * 8.0 / secs)).collect(),
        interval_s: Some(secs),
    }
}

/// A link's bytes per bucket, every bucket from 0 to the run's end `end` (an empty one at
/// `end` too, so that the analyses' bins of a link reach the run's end), and, monitored, its
/// queue series.
fn link_series(l: &crate::net::Link, bucket: Ps, end: Ps) -> LinkSeries {
    let bytes = &l.stats.bytes_series;
    let buckets = bytes.len().max((end / bucket) as usize + 1);
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut sent: Vec<(f64, u64)> =
        (0..buckets).map(|i| ((i as Ps * bucket) as f64 / 1e12, at(i))).collect();
    sent.push((end as f64 / 1e12, 0));
    let queue = l.stats.queue_series.iter().map(|&(t, q)| queue_sample(t, q));
    LinkSeries {
        link: l.params.name.clone(),
        samples: if l.params.monitor { queue.collect() } else { vec![] },
        sent,
    }
}

/// A monitored link's queue at virtual time `t`.
fn queue_sample(t: Ps, queue: u32) -> LinkSample {
    LinkSample { t_s: t as f64 / 1e12, queue_pkts: f64::from(queue), sent_bytes: None }
}

/// A flow's path openings (its first path at the flow's start, with its connection), then its
/// paths closed at the end.
fn path_events((f, flow): (&FlowReport, &Flow)) -> Vec<PathEvent> {
    let first = PathEvent {
        flow: f.name.clone(),
        path: 0,
        t_s: Some(flow.spec.start.secs()),
        kind: PathEventKind::Opened,
    };
    let opened = f.paths_established.iter().map(|&(path, t_us)| PathEvent {
        flow: f.name.clone(),
        path,
        t_s: Some(t_us / 1e6),
        kind: PathEventKind::Opened,
    });
    let closes = f.path_stats.iter().map(|p| (u64::from(p.id), p.close_reason));
    let closed = record::closed_at_end(&f.name, closes);
    std::iter::once(first).chain(opened).chain(closed).collect()
}

/// What the analyses read of flow `i` beyond its outcome.
fn flow_facts(sim: &Sim, report: &FlowReport, i: usize) -> FlowFacts {
    let flow = &sim.flows[i];
    let end = sim.scenario.duration;
    let fct_s = report.fct_us.map(|us| us / 1e6);
    let paths: Vec<PathFacts> = (0..flow.spec.paths).map(|p| path_facts(sim, flow, p)).collect();
    let client = report.controllers.iter().find(|c| c.side == Side::Client);
    FlowFacts {
        flow: flow.name.clone(),
        group: flow.spec.group.clone(),
        start: flow.spec.start,
        stop: flow.spec.stop,
        start_s: flow.spec.start.secs(),
        end_s: fct_s.map_or(flow.spec.stop.unwrap_or(end).secs(), |f| flow.spec.start.secs() + f),
        fct_s,
        openings_recorded: true,
        active_paths_end: client.map(|c| c.snapshot.paths.iter().filter(|p| p.active).count()),
        into_link: paths.first().and_then(|p| p.last_link.clone()),
        paths: Some(paths),
    }
}

/// Path `p` of `flow`: the link it leaves its client's host on (the host's interfaces taken in
/// turn from `from_addr`) and the link into the server address it reaches.
fn path_facts(sim: &Sim, flow: &Flow, p: usize) -> PathFacts {
    let (client, server) = (interfaces(sim, &flow.spec.from), host_addrs(sim, &flow.spec.to));
    let first = client.get((flow.spec.from_addr + p) % client.len().max(1));
    let ip = server.get((flow.spec.to_addr + p) % server.len().max(1));
    PathFacts {
        id: p as u64,
        first_link: first.map(|i| sim.links[i.link].params.name.clone()),
        last_link: ip.and_then(|ip| sim.link_into(*ip)).map(String::from),
        ..PathFacts::default()
    }
}

/// The interfaces of host `name` (none if there is no such host).
fn interfaces<'a>(sim: &'a Sim, name: &str) -> &'a [Interface] {
    let host = sim.nodes.iter().find_map(|n| match n {
        Node::Host { name: host, interfaces } if host == name => Some(interfaces),
        _ => None,
    });
    host.map_or(&[], |i| i.as_slice())
}

/// The addresses of host `name`, in order.
fn host_addrs(sim: &Sim, name: &str) -> Vec<IpAddr> {
    interfaces(sim, name).iter().map(|i| i.ip).collect()
}
