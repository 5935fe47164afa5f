//! Runs a scenario: builds the topology, shapes the bottlenecks, attaches markers, starts the
//! sampler, sinks and flows, collects everything, tears down, writes the result and plots.

use crate::backend::{self, Backend, DelayMethod, FRAME};
use crate::cleanup;
use crate::delay::{DelayLine, QueueSpec};
use crate::flows::{self, Proc, SendRecord, SinkRecord};
use crate::marker::{self, Marker, MarkerConfig};
use crate::netns::{self, run};
use crate::plots;
use crate::results::*;
use crate::sampler::{self, Probe, Series};
use crate::spec::{FlowKind, Scenario};
use crate::topology::{self, Net};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TCP_PORT: u16 = 5201;
const MPTCP_PORT: u16 = 5202;
const QUIC_PORT: u16 = 4433;
/// `mpquic serve`'s connection and transfer caps for lab servers: far above any scenario's
/// fan-in, so that no flow of a run is refused.
const LAB_CAPS: [&str; 4] = ["--max-connections", "4096", "--max-active-transfers", "4096"];
/// Job workers of `[[jobs]]` entry j listen on JOB_PORT + j (a host may also receive flows).
const JOB_PORT: u16 = 4500;
/// The file the job workers answer with.
const JOB_ANSWER: &str = "answer";

pub fn require_root() -> Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!("the testbed needs root (network namespaces, tc, bpf)");
    }
    Ok(())
}

/// Runs every repetition; writes `<out>/result.json` and SVG plots. Returns the result.
pub fn run_scenario(sc: &Scenario, out: &Path) -> Result<RunResult> {
    require_root()?;
    for tool in ["ip", "tc", "sysctl"] {
        if marker::which(tool).is_none() {
            bail!(
                "`{tool}` not found: install the Debian package `{}`",
                if tool == "sysctl" { "procps" } else { "iproute2" }
            );
        }
    }
    let removed = cleanup::cleanup_stale(false);
    if !removed.is_empty() {
        eprintln!("removed leftovers of crashed runs: {removed:?}");
    }
    let run_id = std::process::id();
    let caps = backend::detect(run_id)?;
    let be = backend::choose(&caps, &sc.link)?;
    let mut detail = match be {
        Backend::Red => "htb rate + red(min=max=K, probability 1, ecn) [+ netem]".to_string(),
        Backend::Ebpf => {
            marker::check_tools()?;
            "htb rate + bfifo, eBPF ECN marker on clsact egress, closed loop via rtnetlink"
                .to_string()
        }
    };
    let delay = caps.delay_method();
    if sc.links().iter().any(|(_, _, l)| l.delay_ms > 0.0) {
        detail += match delay {
            DelayMethod::Netem => "; delay: netem",
            DelayMethod::Nfqueue => {
                if marker::which("iptables").is_none() {
                    bail!(
                        "this kernel has no netem: link delay needs the NFQUEUE delay line, \
                           which needs `iptables` (Debian package `iptables`)"
                    );
                }
                "; delay: NFQUEUE delay line (no netem on this kernel)"
            }
        };
    }
    if sc.flows.iter().any(|f| f.kind == FlowKind::Mpquic) || !sc.jobs.is_empty() {
        flows::mpquic_bin()?;
    }
    std::fs::create_dir_all(out)?;
    let mut reps = Vec::new();
    for rep in 0..sc.repetitions {
        let r = run_rep(sc, rep, run_id, (be, delay), out);
        cleanup::cleanup_run(run_id);
        reps.push(r?);
    }
    let fr: Vec<f64> = reps.iter().map(|r| r.goodput_fraction_of_link_sum).collect();
    let qm: Vec<f64> =
        reps.iter().flat_map(|r| r.links.iter().map(|l| l.queue_pkts_busy.median)).collect();
    let qp: Vec<f64> =
        reps.iter().flat_map(|r| r.links.iter().map(|l| l.queue_pkts_busy.p99)).collect();
    let result = RunResult {
        scenario: sc.clone(),
        backend: be,
        backend_detail: detail,
        capabilities: caps,
        kernel: run("uname", &["-r"]).unwrap_or_default().trim().to_string(),
        median_goodput_fraction: median(&fr),
        median_queue_pkts_median: median(&qm),
        median_queue_pkts_p99: median(&qp),
        median_ce_sender_error: median_opt(reps.iter().map(|r| r.ce.as_ref()?.sender_error)),
        median_ce_receiver_error: median_opt(reps.iter().map(|r| r.ce.as_ref()?.receiver_error)),
        repetitions: reps,
    };
    std::fs::write(out.join("result.json"), serde_json::to_string_pretty(&result)?)?;
    Ok(result)
}

struct Bottleneck {
    link_id: usize,
    from: String,
    to: String,
    to_node: usize,
    /// The addresses this direction delivers to (the receiving end's).
    to_addrs: Vec<std::net::Ipv4Addr>,
    rate_mbit: f64,
}

fn run_rep(
    sc: &Scenario,
    rep: u32,
    run_id: u32,
    (be, delay): (Backend, DelayMethod),
    out: &Path,
) -> Result<RepResult> {
    let net = topology::build(&sc.topology);
    let dir = cleanup::run_dir(run_id);
    std::fs::create_dir_all(&dir)?;
    let nss = netns::setup(&net, run_id, sc.link.sender_offload)?;
    let bpffs = dir.join(format!("bpffs{rep}"));
    let use_marker = be == Backend::Ebpf && (sc.link.ecn || sc.link.loss > 0.0);
    if use_marker {
        marker::mount_bpffs(&bpffs)?;
    }

    // Bottlenecks.
    let mut probes = Vec::new();
    let mut bns = Vec::new();
    let mut delayed: BTreeMap<String, Vec<(String, QueueSpec)>> = BTreeMap::new();
    for d in net.bottlenecks() {
        let ns = nss.ns(d.from.node).to_string();
        let (from, to) = (net.nodes[d.from.node].name.clone(), net.nodes[d.to.node].name.clone());
        let link = sc.link_for(&from, &to);
        let handle = backend::shape(&ns, &d.from.dev, &link, be, delay)?;
        if delay == DelayMethod::Nfqueue && link.delay_ms > 0.0 {
            let queues = delayed.entry(ns.clone()).or_default();
            let us = |ms: f64| Duration::from_micros((ms * 1000.0).round() as u64);
            let num = queues.len() as u16;
            let q = QueueSpec { num, delay: us(link.delay_ms), jitter: us(link.jitter_ms) };
            queues.push((d.from.dev.clone(), q));
        }
        let m = if use_marker {
            let k = if link.ecn { link.k_packets as u64 * FRAME } else { u64::MAX };
            let rate = (link.rate_mbit * 1e6 / 8.0) as u64;
            Some(Marker::attach(
                &dir,
                &bpffs,
                d.id,
                &ns,
                &d.from.dev,
                MarkerConfig { rate_bytes_per_s: rate, k_bytes: k, loss: link.loss },
            )?)
        } else {
            None
        };
        let ifindex = netns::ifindex(&ns, &d.from.dev)? as i32;
        probes.push(Probe { link_id: d.id, ns, ifindex, handle, marker: m });
        bns.push(Bottleneck {
            link_id: d.id,
            from,
            to,
            to_node: d.to.node,
            to_addrs: d.to.addrs.clone(),
            rate_mbit: link.rate_mbit,
        });
    }
    let mut delay_lines = Vec::new();
    for (ns, dirs) in &delayed {
        let log = out.join(format!("delay-line-{ns}-rep{rep}.log"));
        delay_lines.push(DelayLine::start(ns, dirs, &log)?);
    }

    // Receivers: sinks and servers, MPTCP endpoints.
    let me = std::env::current_exe()?.display().to_string();
    let mut sinks: Vec<(usize, FlowKind, Proc)> = Vec::new();
    let any_mptcp = sc.flows.iter().any(|f| f.kind == FlowKind::KernelMptcp);
    if any_mptcp {
        for (n, node) in net.nodes.iter().enumerate() {
            if node.router {
                continue;
            }
            let ns = nss.ns(n);
            run(
                "ip",
                &["-n", ns, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8"],
            )?;
        }
    }
    let mut dests: Vec<(usize, FlowKind)> = Vec::new();
    let mut aggregators = Vec::new();
    for j in &sc.jobs {
        let a =
            net.node(&j.aggregator).with_context(|| format!("unknown host {}", j.aggregator))?;
        for w in &j.workers {
            let w = net.node(w).with_context(|| format!("unknown host {w}"))?;
            if net.nodes[w].router || net.nodes[a].router {
                bail!("jobs from {}: aggregator and workers must be hosts", j.aggregator);
            }
        }
        aggregators.push(a);
    }
    for f in &sc.flows {
        let to = net.node(&f.to).with_context(|| format!("unknown host {}", f.to))?;
        net.node(&f.from).with_context(|| format!("unknown host {}", f.from))?;
        if net.nodes[to].router {
            bail!("flow destination {} is a router", f.to);
        }
        if !dests.contains(&(to, f.kind)) {
            dests.push((to, f.kind));
        }
    }
    let mut signalled = Vec::new();
    for &(to, kind) in &dests {
        let ns = nss.ns(to).to_string();
        let p = match kind {
            FlowKind::KernelTcp | FlowKind::KernelMptcp => {
                let (port, proto) = if kind == FlowKind::KernelTcp {
                    (TCP_PORT, "tcp")
                } else {
                    (MPTCP_PORT, "mptcp")
                };
                if kind == FlowKind::KernelMptcp && !signalled.contains(&to) {
                    // Announce every address but the first: the client opens a subflow to each,
                    // and routing sends it over that address's path.
                    for (_, e) in net.ends_of(to) {
                        for a in &e.addrs {
                            if a != &first_addr(&net, to) {
                                let a = a.to_string();
                                run(
                                    "ip",
                                    &[
                                        "-n", &ns, "mptcp", "endpoint", "add", &a, "dev", &e.dev,
                                        "signal",
                                    ],
                                )?;
                            }
                        }
                    }
                    signalled.push(to);
                }
                let args = vec![
                    "__sink".into(),
                    "--listen".into(),
                    format!("0.0.0.0:{port}"),
                    "--proto".into(),
                    proto.into(),
                    "--interval-ms".into(),
                    "5".into(),
                ];
                let p = Proc::spawn(&ns, &me, &args)?;
                if !p.wait_line(Duration::from_secs(5), |l| l.contains("listening")) {
                    let (_, err) = p.stop();
                    bail!("the {proto} sink did not start: {err}");
                }
                p
            }
            FlowKind::Mpquic => {
                let mut args = vec!["serve".to_string()];
                for (_, e) in net.ends_of(to) {
                    for a in &e.addrs {
                        args.push("--listen".into());
                        args.push(format!("{a}:{QUIC_PORT}"));
                    }
                }
                // Lab servers: a throwaway certificate, any client of the testbed may send, and
                // caps far above any scenario's fan-in (a refused flow would skew a run).
                let lab = ["--insecure", "--allow-anonymous", "--sink", "--json"];
                args.extend(lab.into_iter().chain(LAB_CAPS).map(Into::into));
                start_mpquic_server(&ns, args)?
            }
        };
        sinks.push((to, kind, p));
    }
    // Job workers: `mpquic serve --dir` with the answer file, one server per (entry, worker),
    // sending with the entry's controller. No --json: a line per answer would be thousands.
    let mut workers: Vec<(usize, Proc)> = Vec::new();
    for (ji, j) in sc.jobs.iter().enumerate() {
        let files = dir.join(format!("jobs{ji}"));
        std::fs::create_dir_all(&files)?;
        std::fs::write(files.join(JOB_ANSWER), vec![0x5au8; j.response_bytes as usize])?;
        for w in &j.workers {
            let w = net.node(w).unwrap();
            let mut args = vec!["serve".to_string()];
            for (_, e) in net.ends_of(w) {
                for a in &e.addrs {
                    args.extend(["--listen".into(), format!("{a}:{}", JOB_PORT + ji as u16)]);
                }
            }
            args.extend(["--dir".into(), files.display().to_string()]);
            args.extend(["--insecure", "--allow-anonymous", "--read-only"].map(Into::into));
            args.extend(LAB_CAPS.map(Into::into));
            args.extend(transport_args(&j.cc, &j.cc_params, &j.ecn));
            workers.push((ji, start_mpquic_server(nss.ns(w), args)?));
        }
    }
    let recv_hosts: Vec<usize> = {
        let mut v: Vec<usize> = dests.iter().map(|d| d.0).chain(aggregators).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let before: Vec<_> =
        recv_hosts.iter().map(|&h| flows::netstat(nss.ns(h))).collect::<Result<_>>()?;

    // Sampler.
    let stop = Arc::new(AtomicBool::new(false));
    let interval = Duration::from_secs_f64(sc.sample_interval_ms / 1000.0);
    let st = stop.clone();
    let sampler = std::thread::spawn(move || sampler::run(probes, interval, st));
    std::thread::sleep(Duration::from_millis(50));

    // Flows.
    let load_before = loadavg();
    let t0 = Instant::now();
    let deadline = Duration::from_secs_f64(sc.duration_s);
    let mut handles = Vec::new();
    for (fi, f) in sc.flows.iter().enumerate() {
        for inst in 0..f.count {
            let from = net.node(&f.from).unwrap();
            let to = net.node(&f.to).unwrap();
            let pairs = net.path_pairs(from, to);
            if pairs.is_empty() {
                bail!("no path from {} to {}", f.from, f.to);
            }
            let start = f.start_s + inst as f64 * f.stagger_ms / 1000.0;
            let id = format!("f{fi}.{inst}");
            let ns = nss.ns(from).to_string();
            let (program, args, used): (String, Vec<String>, Vec<(String, String)>) = match f.kind {
                FlowKind::KernelTcp | FlowKind::KernelMptcp => {
                    let idx =
                        if f.kind == FlowKind::KernelTcp && f.paths > 0 { f.paths - 1 } else { 0 };
                    let (l, r) =
                        *pairs.get(idx).with_context(|| format!("{id}: no path {}", f.paths))?;
                    let mptcp = f.kind == FlowKind::KernelMptcp;
                    let port = if mptcp { MPTCP_PORT } else { TCP_PORT };
                    let args = vec![
                        "__send".into(),
                        "--server".into(),
                        format!("{r}:{port}"),
                        "--proto".into(),
                        if mptcp { "mptcp" } else { "tcp" }.into(),
                        "--cc".into(),
                        f.cc.clone(),
                        "--bytes".into(),
                        f.bytes.to_string(),
                        "--for-s".into(),
                        f.for_s.to_string(),
                    ];
                    let used = if mptcp {
                        pairs.iter().map(|(l, r)| (l.to_string(), r.to_string())).collect()
                    } else {
                        vec![(l.to_string(), r.to_string())]
                    };
                    (me.clone(), args, used)
                }
                FlowKind::Mpquic => {
                    let n = if f.paths == 0 { pairs.len() } else { f.paths.min(pairs.len()) };
                    // noq cannot bind path 0's source: the routing table picks it. The first
                    // pair must be the one routing gives, or path 0 would run elsewhere.
                    let (l0, r0) = pairs[0];
                    let src = route_src(&ns, r0)?;
                    if src != l0 {
                        bail!(
                            "{id}: the route from {} to {r0} leaves from {src}, not from the first path's address {l0}: path 0 would not take its intended path",
                            f.from
                        );
                    }
                    let mut args = vec![
                        "send".into(),
                        "--generate".into(),
                        f.bytes.to_string(),
                        "--server".into(),
                        format!("{r0}:{QUIC_PORT}"),
                    ];
                    for (l, r) in &pairs[..n] {
                        args.push("--path".into());
                        args.push(format!("{l}={r}:{QUIC_PORT}"));
                    }
                    if f.paths_per_pair > 1 {
                        args.extend(["--paths-per-pair".into(), f.paths_per_pair.to_string()]);
                    }
                    if f.repeat > 1 {
                        args.extend(["--repeat".into(), f.repeat.to_string()]);
                    }
                    args.extend(transport_args(&f.cc, &f.cc_params, &f.ecn));
                    args.extend([
                        "--scheduler".into(),
                        f.scheduler.clone(),
                        "--insecure".into(),
                        "--json".into(),
                    ]);
                    let used =
                        pairs[..n].iter().map(|(l, r)| (l.to_string(), r.to_string())).collect();
                    (flows::mpquic_bin()?, args, used)
                }
            };
            handles.push((id, f.clone(), used, spawn_at(ns, program, args, start, t0, deadline)));
        }
    }
    let mut job_handles = Vec::new();
    for (ji, j) in sc.jobs.iter().enumerate() {
        let a = net.node(&j.aggregator).unwrap();
        let mut args = vec![
            "aggregate".to_string(),
            "--name".into(),
            JOB_ANSWER.into(),
            "--jobs".into(),
            j.jobs.to_string(),
            "--parallel".into(),
            j.parallel.to_string(),
            "--gap-ms".into(),
            j.gap_ms.to_string(),
        ];
        for w in &j.workers {
            let w = net.node(w).unwrap();
            args.extend([
                "--server".into(),
                format!("{}:{}", first_addr(&net, w), JOB_PORT + ji as u16),
            ]);
        }
        args.extend(transport_args(&j.cc, &j.cc_params, &j.ecn));
        args.extend(["--insecure".into(), "--json".into()]);
        let h =
            spawn_at(nss.ns(a).to_string(), flows::mpquic_bin()?, args, j.start_s, t0, deadline);
        job_handles.push((format!("j{ji}"), j.clone(), h));
    }
    let outcomes: Vec<FlowOutcome> = handles
        .into_iter()
        .map(|(id, spec, paths, h)| FlowOutcome {
            id,
            spec,
            paths,
            run: h.join().expect("flow thread"),
        })
        .collect();
    let mut worker_errors: Vec<Vec<String>> = vec![Vec::new(); sc.jobs.len()];
    let jobs_res: Vec<JobsResult> = job_handles
        .into_iter()
        .map(|(id, spec, h)| jobs_result(id, spec, h.join().expect("job thread")))
        .collect();
    for (ji, p) in workers {
        let (_, err) = p.stop();
        worker_errors[ji].extend(server_errors(&err));
    }
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let (series, late) = sampler.join().expect("sampler thread")?;
    let after: Vec<_> =
        recv_hosts.iter().map(|&h| flows::netstat(nss.ns(h))).collect::<Result<_>>()?;
    let mut sink_records: Vec<SinkRecord> = Vec::new();
    let mut server_reports: Vec<serde_json::Value> = Vec::new();
    let mut sink_errors = Vec::new();
    let mut receiver_cpu_s = BTreeMap::new();
    for (to, kind, p) in sinks {
        let (lines, err, cpu) = p.stop_cpu();
        if let Some(c) = cpu {
            let key = format!(
                "{}:{}",
                net.nodes[to].name,
                if kind == FlowKind::Mpquic { "mpquic" } else { "tcp-sink" }
            );
            receiver_cpu_s.insert(key, c);
        }
        if kind != FlowKind::Mpquic {
            sink_records
                .extend(lines.iter().filter_map(|l| serde_json::from_str::<SinkRecord>(l).ok()));
        } else {
            server_reports.extend(
                lines.iter().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()),
            );
        }
        let err = server_errors(&err);
        if !err.is_empty() {
            sink_errors.push(err.join(" / "));
        }
    }
    drop(delay_lines);
    drop(nss);
    if use_marker {
        let _ = nix::mount::umount2(&bpffs, nix::mount::MntFlags::MNT_DETACH);
    }

    // Results.
    let start_ns = marker::mono_ns() - t0.elapsed().as_nanos() as u64;
    let flows_res: Vec<FlowResult> =
        outcomes.into_iter().map(|o| flow_result(o, &sink_records, start_ns)).collect();
    let links: Vec<LinkResult> = series.iter().zip(&bns).map(|(s, b)| link_result(s, b)).collect();
    let mut counters = BTreeMap::new();
    let mut receiver_ce = 0;
    for ((h, b), a) in recv_hosts.iter().zip(&before).zip(&after) {
        let mut d = BTreeMap::new();
        for k in [
            "IpExt.InCEPkts",
            "IpExt.InECT0Pkts",
            "IpExt.InECT1Pkts",
            "IpExt.InNoECTPkts",
            "TcpExt.TCPTimeouts",
            // A receiving process that falls behind overflows its UDP socket (mpquic incast).
            "Udp.InDatagrams",
            "Udp.RcvbufErrors",
        ] {
            d.insert(k.to_string(), a.get(k).unwrap_or(&0) - b.get(k).unwrap_or(&0));
        }
        receiver_ce += d["IpExt.InCEPkts"];
        counters.insert(net.nodes[*h].name.clone(), d);
    }
    let ce = if use_marker && sc.link.ecn {
        let marks: u64 = links.iter().filter_map(|l| l.marker.as_ref()).map(|m| m.marks).sum();
        let marked_segs: u64 =
            links.iter().filter_map(|l| l.marker.as_ref()).map(|m| m.marked_segs).sum();
        let drops = links.iter().map(|l| l.qdisc_drops).sum();
        let per_link: Vec<LinkCe> =
            links.iter().zip(&bns).map(|(l, b)| link_ce(l, b, &flows_res)).collect();
        let any_mpquic = flows_res.iter().any(|f| f.mpquic.is_some());
        let sender_ce: Option<u64> =
            any_mpquic.then(|| per_link.iter().filter_map(|l| l.sender_ce_marked).sum());
        // The reference is the number of CE packets the marks produced: a marked GSO skb
        // (sender offload) becomes gso_segs CE packets; without offload that equals `marks`.
        let err = |x: u64| ratio_error(x, marked_segs);
        Some(CeEstimation {
            marks,
            marked_segs,
            qdisc_drops: drops,
            receiver_ce,
            sender_ce,
            receiver_error: err(receiver_ce),
            sender_error: sender_ce.and_then(err),
            per_link,
        })
    } else {
        None
    };
    // Aggregate goodput: every completed flow's bytes over the span from the first start to
    // the last completion (flows need not overlap the whole run).
    let done: Vec<&FlowResult> = flows_res.iter().filter(|f| f.fct_s.is_some()).collect();
    let span = done.iter().map(|f| f.start_s + f.fct_s.unwrap()).fold(0.0, f64::max)
        - done.iter().map(|f| f.start_s).fold(f64::INFINITY, f64::min);
    let total = if span > 0.0 {
        done.iter().map(|f| f.bytes as f64).sum::<f64>() * 8.0 / span / 1e6
    } else {
        0.0
    };
    // The capacity into the flows' receivers: the bottleneck directions that end at one.
    let link_sum: f64 =
        bns.iter().filter(|b| recv_hosts.contains(&b.to_node)).map(|b| b.rate_mbit).sum();
    let mut jobs_res = jobs_res;
    for (j, errs) in jobs_res.iter_mut().zip(worker_errors) {
        if !errs.is_empty() && !j.completed {
            let e = j.error.take().unwrap_or_default();
            j.error = Some(format!("{e}; workers: {}", errs.join(" | ")));
        }
    }
    let mut rr = RepResult {
        rep,
        duration_s: t0.elapsed().as_secs_f64(),
        jobs: jobs_res,
        total_goodput_mbps: total,
        link_sum_mbit: link_sum,
        goodput_fraction_of_link_sum: total / link_sum,
        flows: flows_res,
        links,
        ce,
        receiver_counters: counters,
        sampler_late_fraction: late,
        host_loadavg_1min: [load_before, loadavg()],
        mpquic_server_reports: server_reports,
        receiver_cpu_s,
    };
    if !sink_errors.is_empty() {
        for f in rr.flows.iter_mut().filter(|f| !f.completed) {
            let e = f.error.take().unwrap_or_default();
            f.error = Some(format!("{e}; receiver: {}", sink_errors.join(" | ")));
        }
    }
    write_plots(out, &rr, &series)?;
    Ok(rr)
}

/// Starts `mpquic serve` in `ns` and waits until it has bound its socket (the CLI announces
/// `mpquic: serving on ...` on stderr).
fn start_mpquic_server(ns: &str, args: Vec<String>) -> Result<Proc> {
    let mut p = Proc::spawn(ns, &flows::mpquic_bin()?, &args)?;
    if !p.wait_err_line(Duration::from_secs(10), |l| l.starts_with("mpquic: serving on")) {
        let (_, err) = p.stop();
        bail!("mpquic serve did not start ({}): {}", args.join(" "), err.trim());
    }
    Ok(p)
}

/// The CLI's controller, its parameters and the CE-count precision, as arguments.
fn transport_args(cc: &str, cc_params: &[String], ecn: &str) -> Vec<String> {
    let mut args = vec!["--cc".to_string(), cc.to_string()];
    for p in cc_params {
        args.extend(["--cc-param".into(), p.clone()]);
    }
    args.extend(["--ecn".into(), ecn.to_string()]);
    args
}

/// A server's stderr lines that report errors: its warnings (--insecure), start-up and
/// shutdown lines are not errors.
fn server_errors(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| !l.starts_with("mpquic: WARNING") && !l.starts_with("mpquic: serving on"))
        .filter(|l| !l.starts_with("mpquic: shutting down") && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// What a started process left: (stdout lines, stderr, exited successfully, CPU seconds).
type ProcOutcome = Result<(Vec<String>, String, bool, Option<f64>)>;

/// Starts `program` in `ns` at `start_s` after `t0` (on a thread of its own) and waits for it
/// until the run's deadline; returns when it started and ended (seconds after `t0`) and its
/// outcome.
fn spawn_at(
    ns: String,
    program: String,
    args: Vec<String>,
    start_s: f64,
    t0: Instant,
    deadline: Duration,
) -> std::thread::JoinHandle<Launched> {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs_f64(start_s).saturating_sub(t0.elapsed()));
        let started = t0.elapsed().as_secs_f64();
        let res = Proc::spawn(&ns, &program, &args)
            .and_then(|p| p.finish(deadline.saturating_sub(t0.elapsed())));
        Launched { started, ended: t0.elapsed().as_secs_f64(), res }
    })
}

/// A process `spawn_at` ran: when it started and ended (seconds since the run started), and
/// its outcome.
struct Launched {
    started: f64,
    ended: f64,
    res: ProcOutcome,
}

/// A `[[jobs]]` entry's result from its aggregator's outcome: the JSON report on stdout.
fn jobs_result(id: String, spec: crate::spec::JobSpec, l: Launched) -> JobsResult {
    let mut jr = JobsResult {
        id,
        aggregator: spec.aggregator,
        workers: spec.workers,
        cc: spec.cc,
        start_s: l.started,
        end_s: l.ended,
        completed: false,
        report: None,
        cpu_s: None,
        error: None,
    };
    match l.res {
        Err(e) => jr.error = Some(format!("{e:#}")),
        Ok((lines, err, ok, cpu)) => {
            jr.cpu_s = cpu;
            jr.completed = ok;
            jr.report = lines.iter().rev().find_map(|l| serde_json::from_str(l.trim()).ok());
            if !ok || jr.report.is_none() {
                jr.error =
                    Some(format!("the aggregator failed or missed the deadline: {}", err.trim()));
            }
        }
    }
    jr
}

/// The host's 1-minute load average (the machine may be shared: a measurement on a loaded
/// host is CPU-bound, and the result should say so).
fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// (x - reference) / reference, if there is a reference.
fn ratio_error(x: u64, reference: u64) -> Option<f64> {
    (reference > 0).then(|| (x as f64 - reference as f64) / reference as f64)
}

/// One link's CE estimation: its marker's marks against the CE the mpquic senders report on
/// the paths whose server address is on this link.
fn link_ce(l: &LinkResult, b: &Bottleneck, flows: &[FlowResult]) -> LinkCe {
    let on_link = |remote: &str| {
        remote
            .parse::<SocketAddr>()
            .is_ok_and(|a| b.to_addrs.iter().any(|x| std::net::IpAddr::V4(*x) == a.ip()))
    };
    let mut marked = None::<u64>;
    let mut events = None::<u64>;
    let mut exact = Vec::new();
    let mut other_flows = false;
    for f in flows {
        match &f.mpquic {
            Some(j) => {
                let ps = j.get("paths").and_then(|p| p.as_array()).cloned().unwrap_or_default();
                for p in ps
                    .iter()
                    .filter(|p| p.get("remote").and_then(|r| r.as_str()).is_some_and(on_link))
                {
                    if let Some(m) = p.get("ce_marked").and_then(|x| x.as_u64()) {
                        *marked.get_or_insert(0) += m;
                    }
                    if let Some(e) = p.get("ce_events").and_then(|x| x.as_u64()) {
                        *events.get_or_insert(0) += e;
                    }
                    exact.push(p.get("ce_exact").and_then(|x| x.as_bool()).unwrap_or(false));
                }
            }
            None => {
                if f.paths.iter().any(|(_, r)| {
                    r.parse::<std::net::Ipv4Addr>().is_ok_and(|a| b.to_addrs.contains(&a))
                        || on_link(r)
                }) {
                    other_flows = true;
                }
            }
        }
    }
    let m = l.marker.as_ref();
    let marks = m.map_or(0, |m| m.marks);
    let marked_segs = m.map_or(0, |m| m.marked_segs);
    LinkCe {
        link_id: b.link_id,
        marks,
        marked_segs,
        sender_ce_marked: marked,
        sender_ce_events: events,
        sender_ce_exact: !exact.is_empty() && exact.iter().all(|x| *x),
        other_flows,
        sender_error: marked.and_then(|x| ratio_error(x, marked_segs)),
    }
}

/// The source address the routing table picks in `ns` toward `dst` (`ip route get`).
fn route_src(ns: &str, dst: std::net::Ipv4Addr) -> Result<std::net::Ipv4Addr> {
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

fn first_addr(net: &Net, node: usize) -> std::net::Ipv4Addr {
    net.ends_of(node)[0].1.addrs[0]
}

struct FlowOutcome {
    id: String,
    spec: crate::spec::FlowSpec,
    paths: Vec<(String, String)>,
    run: Launched,
}

fn flow_result(o: FlowOutcome, sinks: &[SinkRecord], start_ns: u64) -> FlowResult {
    let mut fr = FlowResult {
        id: o.id,
        kind: o.spec.kind,
        from: o.spec.from.clone(),
        to: o.spec.to.clone(),
        cc: o.spec.cc.clone(),
        paths: o.paths,
        start_s: o.run.started,
        end_s: o.run.ended,
        completed: false,
        bytes: 0,
        fct_s: None,
        goodput_mbps: None,
        throughput: Vec::new(),
        transfer_fcts_s: Vec::new(),
        mpquic: None,
        cpu_s: None,
        error: None,
    };
    let (lines, err, ok, cpu) = match o.run.res {
        Ok(x) => x,
        Err(e) => {
            fr.error = Some(format!("{e:#}"));
            return fr;
        }
    };
    fr.cpu_s = cpu;
    if !ok {
        fr.error = Some(format!("did not finish before the deadline or failed: {}", err.trim()));
    }
    match o.spec.kind {
        FlowKind::KernelTcp | FlowKind::KernelMptcp => {
            if let Some(r) =
                lines.iter().rev().find_map(|l| serde_json::from_str::<SendRecord>(l).ok())
            {
                fr.completed = ok;
                fr.bytes = r.bytes;
                fr.fct_s = Some(r.fct_s);
                fr.goodput_mbps = Some(r.goodput_mbps);
                if let Some(s) = sinks.iter().find(|s| s.peer == r.local) {
                    fr.throughput = rate_series(&s.samples, start_ns, 0.01);
                }
            }
        }
        FlowKind::Mpquic => {
            // One JSON line per transfer (several with `repeat`).
            let reports: Vec<serde_json::Value> = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
                .collect();
            if let Some(last) = reports.last() {
                let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64());
                fr.completed = ok && reports.len() == o.spec.repeat as usize;
                fr.bytes = reports.iter().filter_map(|v| v.get("bytes")?.as_u64()).sum();
                if reports.len() == 1 {
                    fr.fct_s = num(last, "fct_s");
                    fr.goodput_mbps = num(last, "goodput_mbps");
                } else {
                    // The time spent transferring, and the goodput over it.
                    fr.transfer_fcts_s = reports.iter().filter_map(|v| num(v, "fct_s")).collect();
                    let busy: f64 = fr.transfer_fcts_s.iter().sum();
                    fr.fct_s = Some(busy);
                    fr.goodput_mbps = (busy > 0.0).then(|| fr.bytes as f64 * 8.0 / busy / 1e6);
                }
                fr.mpquic = Some(last.clone());
            } else if fr.error.is_none() {
                fr.error = Some(format!("no JSON report on stdout; stderr: {}", err.trim()));
            }
        }
    }
    fr
}

/// Cumulative (ns, bytes) samples to (s since start, Mbit/s) in bins of `bin_s`.
fn rate_series(samples: &[(u64, u64)], start_ns: u64, bin_s: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let Some(&(t_first, _)) = samples.first() else { return out };
    let bin = (bin_s * 1e9) as u64;
    let mut edge = t_first + bin;
    let mut last_bytes = 0u64;
    let mut last_t = t_first;
    for &(t, b) in samples {
        if t >= edge {
            let dt = (t - last_t) as f64 / 1e9;
            if dt > 0.0 {
                out.push((
                    (t.saturating_sub(start_ns)) as f64 / 1e9,
                    (b - last_bytes) as f64 * 8.0 / dt / 1e6,
                ));
            }
            last_bytes = b;
            last_t = t;
            edge = t + bin;
        }
    }
    out
}

fn link_result(s: &Series, b: &Bottleneck) -> LinkResult {
    // Busy samples: the link sent bytes since the previous sample.
    let mut qp = Vec::new();
    let mut qb = Vec::new();
    let mut busy_t = 0.0;
    let mut busy_bytes = 0u64;
    for i in 1..s.t.len() {
        if s.bytes[i] > s.bytes[i - 1] {
            qp.push(s.qlen[i] as f64);
            qb.push(s.backlog[i] as f64);
            busy_t += s.t[i] - s.t[i - 1];
            busy_bytes += s.bytes[i] - s.bytes[i - 1];
        }
    }
    let mm = if s.model_minus_real.is_empty() {
        None
    } else {
        let v: Vec<f64> = s.model_minus_real.iter().map(|x| *x as f64 / FRAME as f64).collect();
        Some(Summary::of(&v))
    };
    LinkResult {
        link_id: b.link_id,
        from: b.from.clone(),
        to: b.to.clone(),
        samples: s.t.len(),
        queue_pkts_busy: Summary::of(&qp),
        queue_bytes_busy: Summary::of(&qb),
        queue_frames_busy: Summary::of(&qb.iter().map(|b| b / FRAME as f64).collect::<Vec<_>>()),
        qdisc_drops: s.drops.last().copied().unwrap_or(0) as u64,
        sent_bytes: s.bytes.last().copied().unwrap_or(0) - s.bytes.first().copied().unwrap_or(0),
        busy_throughput_mbit: if busy_t > 0.0 {
            busy_bytes as f64 * 8.0 / busy_t / 1e6
        } else {
            0.0
        },
        marker: s.final_marker.clone(),
        model_minus_real_pkts: mm,
    }
}

fn write_plots(out: &Path, rr: &RepResult, series: &[Series]) -> Result<()> {
    let p = |n: &str| -> PathBuf { out.join(format!("rep{}-{n}.svg", rr.rep)) };
    plots::throughput(&p("throughput"), &rr.flows)?;
    plots::queue(&p("queue"), rr, series)?;
    plots::fct_cdf(&p("fct-cdf"), &rr.flows, &rr.jobs)?;
    // The raw per-link samples (queue, bytes sent, marks), for analyses the summaries do not
    // cover (queue distributions, traffic shifting over time).
    let raw = out.join(format!("rep{}-series.json", rr.rep));
    std::fs::write(&raw, serde_json::to_vec(series)?)
        .with_context(|| format!("writing {}", raw.display()))?;
    Ok(())
}

/// The hidden subcommands' address parsing.
pub fn parse_addr(s: &str) -> Result<SocketAddr> {
    s.parse().with_context(|| format!("bad address {s}"))
}
