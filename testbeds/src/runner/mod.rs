//! Runs a scenario: per repetition builds the topology, shapes the bottlenecks and attaches
//! markers (`shaping`), starts the receivers (`receivers`), the sampler and the senders
//! (`launch`), collects everything (`collect`), tears down, writes the result and plots.

mod collect;
mod launch;
mod receivers;
mod shaping;

use crate::backend::{self, Backend, DelayMethod};
use crate::cleanup;
use crate::flows;
use crate::host::HostSpan;
use crate::marker;
use crate::netns::{self, run};
use crate::plan::{FlowKind, MpquicController, Plan, Quic};
use crate::plots;
use crate::results::*;
use crate::sampler::{self, Series};
use crate::topology::{self, Net};
use anyhow::{bail, Context, Result};
use collect::*;
use launch::Clock;
use mpquic::EcnPrecision;
use receivers::Receivers;
use shaping::{shape_bottlenecks, MarkerDirs};
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
pub fn run_scenario(sc: &Plan, out: &Path) -> Result<RunResult> {
    require_root()?;
    for tool in ["ip", "tc", "sysctl"] {
        if marker::which(tool).is_none() {
            bail!(
                "`{tool}` not found: install the Debian package `{}`",
                if tool == "sysctl" { "procps" } else { "iproute2" }
            );
        }
    }
    let run_id = std::process::id();
    cleanup::claim_run(run_id)?;
    let removed = cleanup::cleanup_stale(false);
    if !removed.is_empty() {
        eprintln!("removed leftovers of crashed runs: {removed:?}");
    }
    let caps = backend::detect(run_id)?;
    let be = backend::choose(&caps, &sc.link)?;
    let mut detail = match be {
        Backend::Red => "htb rate + red(min=max=K, probability 1, ecn) [+ netem]".to_string(),
        Backend::Ebpf if sc.link.dualq.is_some() => {
            marker::check_tools()?;
            "dual queue (no dualpi2 on this kernel): htb rate with an L class (priority) and a \
             classic class (10% guaranteed), a bfifo each; eBPF marker on clsact egress \
             classifying by ECN, modelling both queues (step on L sojourn, p_L = 2p', \
             p_C = p'^2, PI2 in the resync loop), closed loop via rtnetlink"
                .to_string()
        }
        Backend::Ebpf => {
            marker::check_tools()?;
            "htb rate + bfifo, eBPF ECN marker on clsact egress, closed loop via rtnetlink"
                .to_string()
        }
        Backend::Dualpi2 => "htb rate + dualpi2 (the kernel's RFC 9332 qdisc)".to_string(),
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
        reps.iter().flat_map(|r| r.links.iter().map(|l| l.queue_frames_busy.median)).collect();
    let qp: Vec<f64> =
        reps.iter().flat_map(|r| r.links.iter().map(|l| l.queue_frames_busy.p99)).collect();
    let result = RunResult {
        scenario: sc.clone(),
        backend: be,
        backend_detail: detail,
        capabilities: caps,
        kernel: run("uname", &["-r"]).unwrap_or_default().trim().to_string(),
        median_goodput_fraction: median(&fr),
        median_queue_frames_median: median(&qm),
        median_queue_frames_p99: median(&qp),
        median_ce_sender_error: median_opt(reps.iter().map(|r| r.ce.as_ref()?.sender_error)),
        median_ce_receiver_error: median_opt(reps.iter().map(|r| r.ce.as_ref()?.receiver_error)),
        repetitions: reps,
    };
    std::fs::write(out.join("result.json"), serde_json::to_string_pretty(&result)?)?;
    Ok(result)
}

/// One repetition: builds the namespaces, shapes the bottlenecks, starts the receivers, the
/// sampler and the senders, waits for them, tears down and collects the result and plots.
fn run_rep(
    sc: &Plan,
    rep: u32,
    run_id: u32,
    (be, delay): (Backend, DelayMethod),
    out: &Path,
) -> Result<RepResult> {
    let net = topology::build(&sc.topology);
    let scratch = cleanup::run_dir(run_id);
    std::fs::create_dir_all(&scratch)?;
    let nss = netns::setup(&net, run_id, sc.link.sender_offload)?;
    let bpffs = scratch.join(format!("bpffs{rep}"));
    let use_marker =
        be == Backend::Ebpf && (sc.link.ecn || sc.link.loss > 0.0 || sc.link.dualq.is_some());
    if use_marker {
        marker::mount_bpffs(&bpffs)?;
    }
    let markers = use_marker.then(|| MarkerDirs { scratch: &scratch, bpffs: &bpffs });
    let shaped = shape_bottlenecks(sc, &net, &nss, (be, delay), markers, (out, rep))?;
    let mut receivers = Receivers::start(sc, &net, &nss, &scratch)?;
    let hosts = receivers.hosts.clone();
    let netstat_all =
        || -> Result<Vec<_>> { hosts.iter().map(|&h| flows::netstat(nss.ns(h))).collect() };
    let before = netstat_all()?;

    let sampler = Sampler::start(shaped.probes, sc.sample_interval_ms);
    let host = HostSpan::start();
    let clock = Clock { t0: Instant::now(), deadline: Duration::from_secs_f64(sc.duration_s) };
    let sampler_lead_s = clock.t0.duration_since(sampler.started).as_secs_f64();
    let flows = launch::start_flows(sc, &net, &nss, clock)?;
    let jobs = launch::start_jobs(sc, &net, &nss, clock)?;
    let (outcomes, jobs_res) = wait_for(flows, jobs, &mut receivers);
    let (series, late) = sampler.stop()?;
    let after = netstat_all()?;
    let received = receivers.stop_sinks(&net);
    let delay_line = shaped.delay_lines.into_iter().flat_map(|d| d.finish()).collect();
    drop(nss);
    if use_marker {
        let _ = nix::mount::umount2(&bpffs, nix::mount::MntFlags::MNT_DETACH);
    }

    let start_ns = marker::mono_ns() - clock.t0.elapsed().as_nanos() as u64;
    let mut flows_res: Vec<FlowResult> =
        outcomes.into_iter().map(|o| flow_result(o, &received, start_ns)).collect();
    let bns = &shaped.bottlenecks;
    let links: Vec<LinkResult> = series.iter().zip(bns).map(|(s, b)| link_result(s, b)).collect();
    let names = hosts.iter().map(|&h| net.nodes[h].name.clone());
    let counters = receiver_counters(names, &before, &after);
    let receiver_ce = counters.values().map(|d| d["IpExt.InCEPkts"]).sum();
    let ce = (use_marker && (sc.link.ecn || sc.link.dualq.is_some()))
        .then(|| ce_estimation(&links, bns, &flows_res, receiver_ce));
    let total = total_goodput_mbps(&flows_res);
    // The capacity into the flows' receivers: the bottleneck directions that end at one.
    let link_sum: f64 =
        bns.iter().filter(|b| hosts.contains(&b.to_node)).map(|b| b.rate_mbit).sum();
    blame_receivers(&mut flows_res, &received.sink_errors);
    let (host_loadavg_1min, host_steal_pct) = host.end();
    let rr = RepResult {
        rep,
        duration_s: clock.t0.elapsed().as_secs_f64(),
        jobs: jobs_res,
        total_goodput_mbps: total,
        link_sum_mbit: link_sum,
        goodput_fraction_of_link_sum: total / link_sum,
        flows: flows_res,
        links,
        ce,
        receiver_counters: counters,
        sampler_late_fraction: late,
        sampler_lead_s,
        host_loadavg_1min,
        host_steal_pct,
        mpquic_server_reports: received.server_reports,
        receiver_cpu_s: received.cpu_s,
        delay_line,
    };
    write_plots(out, &rr, &series)?;
    Ok(rr)
}

/// Waits for every started flow and aggregator to end, then stops the jobs' workers: the
/// flows' outcomes and the jobs' results.
fn wait_for(
    flows: Vec<launch::StartedFlow>,
    jobs: Vec<launch::StartedJobs>,
    receivers: &mut Receivers,
) -> (Vec<FinishedFlow>, Vec<JobsResult>) {
    let outcomes: Vec<FinishedFlow> = flows
        .into_iter()
        .map(|f| FinishedFlow {
            id: f.id,
            spec: f.spec,
            paths: f.paths,
            run: f.handle.join().expect("flow thread"),
        })
        .collect();
    let jobs: Vec<_> = jobs.into_iter().map(|j| (j.id, j.spec, j.handle.join())).collect();
    let worker_errors = receivers.stop_workers(jobs.len());
    let jobs_res = jobs
        .into_iter()
        .zip(worker_errors)
        .map(|((id, spec, l), errs)| jobs_result(id, spec, l.expect("job thread"), errs))
        .collect();
    (outcomes, jobs_res)
}

/// The receivers' errors added to every flow that did not complete (its receiver may be why).
fn blame_receivers(flows: &mut [FlowResult], sink_errors: &[String]) {
    if sink_errors.is_empty() {
        return;
    }
    for f in flows.iter_mut().filter(|f| !f.completed) {
        let e = f.error.take().unwrap_or_default();
        f.error = Some(format!("{e}; receiver: {}", sink_errors.join(" | ")));
    }
}

/// How long the sampler runs before the flows start (at least: the run records the measured
/// lead, `RepResult::sampler_lead_s`).
const SAMPLER_LEAD: Duration = Duration::from_millis(50);

/// The queue sampler on its thread.
struct Sampler {
    stop: Arc<AtomicBool>,
    /// The zero of the series' times.
    started: Instant,
    thread: std::thread::JoinHandle<Result<(Vec<Series>, f64)>>,
}

impl Sampler {
    /// Starts sampling every `interval_ms`, and lets it run `SAMPLER_LEAD` before the flows
    /// start.
    fn start(probes: Vec<sampler::Probe>, interval_ms: f64) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let interval = Duration::from_secs_f64(interval_ms / 1000.0);
        let st = stop.clone();
        let started = Instant::now();
        let thread = std::thread::spawn(move || sampler::run(probes, interval, st, started));
        std::thread::sleep(SAMPLER_LEAD);
        Sampler { stop, started, thread }
    }

    /// Samples 50 ms more (the queues drain), stops; returns the series and the fraction of
    /// late ticks.
    fn stop(self) -> Result<(Vec<Series>, f64)> {
        std::thread::sleep(Duration::from_millis(50));
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler thread")
    }
}

/// A host's node index; the scenario was validated, so this fails only on a bug.
fn host(net: &Net, name: &str) -> Result<usize> {
    net.node(name).with_context(|| format!("unknown host {name}"))
}

/// The CLI's controller, its parameters, the CE-count precision and the run's shared QUIC
/// settings, as arguments.
fn transport_args(controller: &MpquicController, ecn: EcnPrecision, quic: &Quic) -> Vec<String> {
    let mut args = ["--cc", &controller.spec(), "--ecn", ecn.name()].map(String::from).to_vec();
    args.extend(quic.args());
    args
}

fn first_addr(net: &Net, node: usize) -> std::net::Ipv4Addr {
    net.ends_of(node)[0].1.addrs[0]
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
