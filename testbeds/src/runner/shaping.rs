//! The bottlenecks of one repetition: every shaped direction gets its rate and FIFO (`backend`),
//! its eBPF marker if the run marks or drops, and its place on its router's delay line; every
//! delay-only direction (`plan::DelayOnly`) its place on its switch's delay line alone.

use crate::backend::{self, Backend, DelayMethod, DUALQ_LEAVES, FRAME};
use crate::delay::{DelayLine, QueueSpec};
use crate::marker::{DualMarker, Marker, MarkerConfig};
use crate::netns::{self, Namespaces};
use crate::plan::{Hook, LinkParams, Plan};
use crate::sampler::Probe;
use crate::topology::Net;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

/// One shaped direction, as the results describe it.
pub struct Bottleneck {
    pub link_id: usize,
    pub from: String,
    pub to: String,
    pub to_node: usize,
    /// The addresses this direction delivers to (the receiving end's).
    pub to_addrs: Vec<Ipv4Addr>,
    pub rate_mbit: f64,
}

/// Where the markers keep their objects and pinned maps (`None`: the run has no markers).
pub struct MarkerDirs<'a> {
    pub scratch: &'a Path,
    pub bpffs: &'a Path,
}

/// What shaping set up: the sampler's probes, the bottlenecks in the same order, and the
/// running delay lines (stopped on drop).
pub struct Shaped {
    pub probes: Vec<Probe>,
    pub bottlenecks: Vec<Bottleneck>,
    pub delay_lines: Vec<DelayLine>,
}

/// The delay lines' queues to start, per namespace: (where the rule takes the packets,
/// device, queue).
type Delayed = BTreeMap<String, Vec<(Hook, String, QueueSpec)>>;

/// Shapes every bottleneck direction of `net`, attaches the markers (with `markers`), and
/// starts one delay line per router namespace with delayed directions, delay-only ones
/// included (their logs in `out`).
pub fn shape_bottlenecks(
    sc: &Plan,
    net: &Net,
    nss: &Namespaces,
    (be, delay): (Backend, DelayMethod),
    markers: Option<MarkerDirs>,
    (out, rep): (&Path, u32),
) -> Result<Shaped> {
    let mut probes = Vec::new();
    let mut bottlenecks = Vec::new();
    let mut delayed = Delayed::new();
    for d in net.bottlenecks() {
        let ns = nss.ns(d.from.node).to_string();
        let (from, to) = (net.nodes[d.from.node].name.clone(), net.nodes[d.to.node].name.clone());
        let link = sc.link_for(&from, &to);
        let handle = backend::shape(&ns, &d.from.dev, &link, be, delay)?;
        if delay == DelayMethod::Nfqueue && link.delay_ms > 0.0 {
            let queues = delayed.entry(ns.clone()).or_default();
            let q = queue_spec(queues.len() as u16, link.delay_ms, link.jitter_ms);
            queues.push((Hook::Egress, d.from.dev.clone(), q));
        }
        let marker = match &markers {
            Some(dirs) => Some(Marker::attach(
                dirs.scratch,
                dirs.bpffs,
                d.id,
                &ns,
                &d.from.dev,
                marker_config(&link, be, delay),
            )?),
            None => None,
        };
        let ifindex = netns::ifindex(&ns, &d.from.dev)? as i32;
        let dual_leaves = (link.dualq.is_some() && be == Backend::Ebpf).then_some(DUALQ_LEAVES);
        probes.push(Probe { link_id: d.id, ns, ifindex, handle, marker, dual_leaves });
        bottlenecks.push(Bottleneck {
            link_id: d.id,
            from,
            to,
            to_node: d.to.node,
            to_addrs: d.to.addrs.clone(),
            rate_mbit: link.rate_mbit,
        });
    }
    add_delay_only(sc, net, nss, &mut delayed)?;
    let mut delay_lines = Vec::new();
    for (ns, dirs) in &delayed {
        let log = out.join(format!("delay-line-{ns}-rep{rep}.log"));
        delay_lines.push(DelayLine::start(ns, dirs, &log)?);
    }
    Ok(Shaped { probes, bottlenecks, delay_lines })
}

/// Queues every delay-only direction on its switch's delay line, after the namespace's shaped
/// directions: the switch's device on each link that joins the direction's ends.
fn add_delay_only(sc: &Plan, net: &Net, nss: &Namespaces, delayed: &mut Delayed) -> Result<()> {
    let node = |n: &str| net.node(n).with_context(|| format!("{n}: not in the topology"));
    for d in &sc.delay_only {
        let (from, to, at) = (node(&d.from)?, node(&d.to)?, node(&d.at)?);
        let joins = |l: &&crate::topology::Link| {
            (l.a.node, l.b.node) == (from, to) || (l.a.node, l.b.node) == (to, from)
        };
        for l in net.links.iter().filter(joins) {
            let dev = if l.a.node == at { &l.a.dev } else { &l.b.dev };
            let queues = delayed.entry(nss.ns(at).to_string()).or_default();
            let q = queue_spec(queues.len() as u16, d.delay_ms, d.jitter_ms);
            queues.push((d.hook, dev.clone(), q));
        }
    }
    Ok(())
}

/// Delay-line queue `num`'s delay and jitter (ms) for one direction.
fn queue_spec(num: u16, delay_ms: f64, jitter_ms: f64) -> QueueSpec {
    let us = |ms: f64| Duration::from_micros((ms * 1000.0).round() as u64);
    QueueSpec { num, delay: us(delay_ms), jitter: us(jitter_ms) }
}

/// The marker's model of one direction: its drain rate, its threshold (never reached without
/// ECN: the marker then only drops), its loss, and a dual queue's step, target and classes.
fn marker_config(link: &LinkParams, be: Backend, delay: DelayMethod) -> MarkerConfig {
    let k = if link.ecn { link.k_packets as u64 * FRAME } else { u64::MAX };
    let rate = (link.rate_mbit * 1e6 / 8.0) as u64;
    let dualq = link.dualq.map(|d| DualMarker {
        l_step_bytes: (d.l_step_us * 1e-6 * rate as f64) as u64,
        classic_target_s: d.classic_target_us * 1e-6,
        priorities: backend::dualq_priorities(link, be, delay),
    });
    MarkerConfig { rate_bytes_per_s: rate, k_bytes: k, loss: link.loss, dualq }
}
