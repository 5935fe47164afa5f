//! The sending side of one repetition: each flow's and each `[[jobs]]` aggregator's command
//! line, started at its time on a thread of its own and waited for until the run's deadline.

use super::{first_addr, host, transport_args, JOB_ANSWER, JOB_PORT};
use super::{MPTCP_PORT, QUIC_PORT, TCP_PORT};
use crate::flows::{self, Proc};
use crate::netns::{run, Namespaces};
use crate::plan::{Controller, Flow, FlowKind, Jobs, Plan, Quic};
use crate::topology::Net;
use anyhow::{bail, Context, Result};
use std::net::Ipv4Addr;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a started process left: (stdout lines, stderr, exited successfully, CPU seconds).
pub type ProcOutcome = Result<(Vec<String>, String, bool, Option<f64>)>;

/// A process `spawn_at` ran: when it started and ended (seconds since the run started), and
/// its outcome.
pub struct Launched {
    pub started: f64,
    pub ended: f64,
    pub res: ProcOutcome,
}

/// A flow instance that was started: its id (`f<entry>.<instance>`), spec, the (local,
/// remote) address pairs it uses, and its thread.
pub struct StartedFlow {
    pub id: String,
    pub spec: Flow,
    pub paths: Vec<(String, String)>,
    pub handle: JoinHandle<Launched>,
}

/// A `[[jobs]]` entry's started aggregator.
pub struct StartedJobs {
    pub id: String,
    pub spec: Jobs,
    pub handle: JoinHandle<Launched>,
}

/// The run's clock: flows start at their `start_s` after `t0`; every process is stopped at
/// `deadline` after it.
#[derive(Clone, Copy)]
pub struct Clock {
    pub t0: Instant,
    pub deadline: Duration,
}

/// Starts every instance of every flow (`count` of each, `stagger_ms` apart).
pub fn start_flows(
    sc: &Plan,
    net: &Net,
    nss: &Namespaces,
    clock: Clock,
) -> Result<Vec<StartedFlow>> {
    let mut started = Vec::new();
    for (fi, f) in sc.flows.iter().enumerate() {
        for inst in 0..f.count {
            let id = format!("f{fi}.{inst}");
            let from = host(net, &f.from)?;
            let pairs = net
                .flow_pairs(from, host(net, &f.to)?, (f.from_addr, f.to_addr))
                .map_err(|e| anyhow::anyhow!("{id}: {e}"))?;
            let ns = nss.ns(from).to_string();
            let cmd = match f.kind {
                FlowKind::KernelTcp | FlowKind::KernelMptcp => kernel_flow(f, &pairs, &id)?,
                FlowKind::Mpquic => mpquic_flow(f, &pairs, (&ns, &id), &sc.quic)?,
            };
            let start = f.start_s + inst as f64 * f.stagger_ms / 1000.0;
            let handle = spawn_at(ns, cmd.program, cmd.args, start, clock);
            started.push(StartedFlow { id, spec: f.clone(), paths: cmd.paths, handle });
        }
    }
    Ok(started)
}

/// Starts every `[[jobs]]` entry's aggregator: `mpquic aggregate` asking each worker.
pub fn start_jobs(
    sc: &Plan,
    net: &Net,
    nss: &Namespaces,
    clock: Clock,
) -> Result<Vec<StartedJobs>> {
    let mut started = Vec::new();
    for (ji, j) in sc.jobs.iter().enumerate() {
        let a = host(net, &j.aggregator)?;
        let mut args = vec!["aggregate".to_string(), "--name".into(), JOB_ANSWER.into()];
        args.extend(["--jobs".into(), j.jobs.to_string()]);
        args.extend(["--parallel".into(), j.parallel.to_string()]);
        args.extend(["--gap-ms".into(), j.gap_ms.to_string()]);
        for w in &j.workers {
            let w = first_addr(net, host(net, w)?);
            args.extend(["--server".into(), format!("{w}:{}", JOB_PORT + ji as u16)]);
        }
        args.extend(transport_args(&j.controller, j.ecn, &sc.quic));
        args.extend(["--insecure".into(), "--json".into()]);
        let ns = nss.ns(a).to_string();
        let handle = spawn_at(ns, flows::mpquic_bin()?, args, j.start_s, clock);
        started.push(StartedJobs { id: format!("j{ji}"), spec: j.clone(), handle });
    }
    Ok(started)
}

/// A flow's process: program, arguments and the address pairs it will use.
struct Command {
    program: String,
    args: Vec<String>,
    paths: Vec<(String, String)>,
}

/// A kernel TCP flow over path `paths` (1-based; 0: the first), or a kernel MPTCP flow that
/// starts on the first pair and gets subflows to every announced address.
fn kernel_flow(f: &Flow, pairs: &[(Ipv4Addr, Ipv4Addr)], id: &str) -> Result<Command> {
    let idx = if f.kind == FlowKind::KernelTcp && f.paths > 0 { f.paths - 1 } else { 0 };
    let (l, r) = *pairs.get(idx).with_context(|| format!("{id}: no path {}", f.paths))?;
    let mptcp = f.kind == FlowKind::KernelMptcp;
    let (port, proto) = if mptcp { (MPTCP_PORT, "mptcp") } else { (TCP_PORT, "tcp") };
    let mut args = vec!["__send".into(), "--server".into(), format!("{r}:{port}")];
    args.extend(["--proto".into(), proto.into()]);
    args.extend(["--cc".into(), f.controller.name().into()]);
    args.extend(["--bytes".into(), f.bytes.to_string(), "--for-s".into(), f.for_s.to_string()]);
    let used: &[(Ipv4Addr, Ipv4Addr)] = if mptcp { pairs } else { &[(l, r)] };
    Ok(Command { program: crate::programs::testbed(), args, paths: address_pairs(used) })
}

/// An mpquic flow over its first `paths` pairs (0: every pair): `mpquic send`, of `bytes` or
/// (none) for `for_s` seconds, named by the flow's id (the server's report says which it was).
fn mpquic_flow(
    f: &Flow,
    pairs: &[(Ipv4Addr, Ipv4Addr)],
    (ns, id): (&str, &str),
    quic: &Quic,
) -> Result<Command> {
    let n = if f.paths == 0 { pairs.len() } else { f.paths.min(pairs.len()) };
    // noq cannot bind path 0's source: the routing table picks it. The first pair must be the
    // one routing gives, or path 0 would run elsewhere.
    let (l0, r0) = pairs[0];
    let src = route_src(ns, r0)?;
    if src != l0 {
        bail!(
            "{id}: the route from {} to {r0} leaves from {src}, not from the first path's address {l0}: path 0 would not take its intended path",
            f.from
        );
    }
    let mut args = match f.bytes {
        0 => vec!["send".into(), "--time".into(), f.for_s.to_string()],
        bytes => vec!["send".into(), "--generate".into(), bytes.to_string()],
    };
    args.extend(["--name".into(), id.into()]);
    args.extend(["--server".into(), format!("{r0}:{QUIC_PORT}")]);
    for (i, (l, r)) in pairs[..n].iter().enumerate() {
        let flag = if f.backup_paths.contains(&i) { "--backup-path" } else { "--path" };
        args.extend([flag.into(), format!("{l}={r}:{QUIC_PORT}")]);
    }
    if f.paths_per_pair > 1 {
        args.extend(["--paths-per-pair".into(), f.paths_per_pair.to_string()]);
    }
    if f.repeat > 1 {
        args.extend(["--repeat".into(), f.repeat.to_string()]);
    }
    if f.same_connection {
        args.push("--same-connection".into());
    }
    if !f.path_delays_s.is_empty() {
        let delays: Vec<String> = f.path_delays_s.iter().map(f64::to_string).collect();
        args.extend(["--path-delay".into(), delays.join(",")]);
    }
    let Controller::Mpquic(controller) = &f.controller else {
        bail!("{id}: an mpquic flow with the kernel's controller");
    };
    args.extend(transport_args(controller, f.ecn, quic));
    args.extend(["--scheduler".into(), f.scheduler.name().into()]);
    args.extend(["--insecure".into(), "--json".into()]);
    Ok(Command { program: flows::mpquic_bin()?, args, paths: address_pairs(&pairs[..n]) })
}

fn address_pairs(pairs: &[(Ipv4Addr, Ipv4Addr)]) -> Vec<(String, String)> {
    pairs.iter().map(|(l, r)| (l.to_string(), r.to_string())).collect()
}

/// The source address the routing table picks in `ns` toward `dst` (`ip route get`).
fn route_src(ns: &str, dst: Ipv4Addr) -> Result<Ipv4Addr> {
    let out = run("ip", &["-n", ns, "route", "get", &dst.to_string()])?;
    let mut words = out.split_whitespace();
    while let Some(w) = words.next() {
        if w == "src" {
            if let Some(a) = words.next() {
                return a.parse().with_context(|| format!("parsing `ip route get {dst}`: {out}"));
            }
        }
    }
    bail!("`ip route get {dst}` in {ns} names no source address: {out}")
}

/// Starts `program` in `ns` at `start_s` after the clock's zero (on a thread of its own) and
/// waits for it until the run's deadline; returns when it started and ended (seconds after
/// the zero) and its outcome.
fn spawn_at(
    ns: String,
    program: String,
    args: Vec<String>,
    start_s: f64,
    Clock { t0, deadline }: Clock,
) -> JoinHandle<Launched> {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs_f64(start_s).saturating_sub(t0.elapsed()));
        let started = t0.elapsed().as_secs_f64();
        let res = Proc::spawn(&ns, &program, &args)
            .and_then(|p| p.finish(deadline.saturating_sub(t0.elapsed())));
        Launched { started, ended: t0.elapsed().as_secs_f64(), res }
    })
}
