//! The failover experiment (`mpquic-testbed failover`): one `mpquic send` of a file over two
//! shaped, marked paths, one path black-holed mid-transfer on both ends and restored later,
//! measuring how long the receiver waited for data and when the sender reported the failure
//! and the recovery.
//!
//! The topology is the runner's two-path one (s -> r1/r2 -> d, the r -> d directions shaped
//! and marked as `backend`, `marker` and `sampler` do for a scenario); the path's last link
//! (r -> d and d -> r) is what fails (`fault`). The server keeps its default idle timeout and
//! failure rule; the sender's idle timeout is shorter (3 s by default), as in issue #12.

use crate::backend::{self, Backend, DelayMethod, FRAME};
use crate::cleanup;
use crate::fault::{Egress, LinkFault};
use crate::flows::{self, Proc};
use crate::host::HostSpan;
use crate::marker::{self, Marker, MarkerConfig};
use crate::netns::{self, run, Namespaces};
use crate::plan::{LinkParams, Topology};
use crate::sampler::{self, Probe};
use crate::stall::{Progress, ReceiveWatch, Stall};
use crate::topology::{self, Net};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const QUIC_PORT: u16 = 4433;
/// Namespaces are `mqtb-<pid>-failover-<node>`: this experiment's, at a glance.
const NODE_TAG: &str = "failover-";
/// The received file's name on the server.
const NAME: &str = "payload";
/// How often the sampler re-synchronizes the markers with their queues.
const SAMPLE: Duration = Duration::from_millis(5);

#[derive(clap::Args, Debug, Clone)]
pub struct FailoverArgs {
    /// The path to black-hole: 0 (the connection's first path) or 1.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub path: u8,
    /// Bytes to send (a file of random bytes).
    #[arg(long, default_value_t = 150_000_000)]
    pub bytes: u64,
    /// Rate of each path's bottleneck, Mbit/s.
    #[arg(long, default_value_t = 100.0)]
    pub rate_mbit: f64,
    /// Marking threshold K, packets.
    #[arg(long, default_value_t = 20)]
    pub k_packets: u32,
    /// Black-hole the path this many seconds after starting the sender.
    #[arg(long, default_value_t = 1.5)]
    pub blackhole_at: f64,
    /// Restore it this many seconds later.
    #[arg(long, default_value_t = 3.0)]
    pub restore_after: f64,
    /// The sender's idle timeout, seconds (the server keeps its default).
    #[arg(long, default_value_t = 3.0)]
    pub sender_idle_timeout: f64,
    /// Run both ends without failure detection, for contrast.
    #[arg(long)]
    pub no_failover: bool,
    /// Open path 1 as a backup (`--backup-path`): it carries data only while path 0 cannot.
    #[arg(long)]
    pub backup: bool,
    /// A gray path instead of a black hole: drop this percentage of the path's packets, both
    /// ways, from --blackhole-at for --restore-after seconds.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub loss: Option<f64>,
    /// Send over the other path alone, with no fault: the baseline of a --loss run.
    #[arg(long)]
    pub alone: bool,
    /// Give up on the sender after this many seconds.
    #[arg(long, default_value_t = 120.0)]
    pub deadline_s: f64,
    /// Write the sender's qlog into <out>/qlog.
    #[arg(long)]
    pub qlog: bool,
    /// Output directory: result.json, the processes' output, the qlog.
    #[arg(long)]
    pub out: PathBuf,
}

/// What one failover run measured. Times are seconds since the sender was started.
#[derive(Debug, Serialize)]
pub struct FailoverResult {
    pub path: u8,
    pub bytes: u64,
    pub rate_mbit: f64,
    pub failover: bool,
    /// Path 1 was a backup path.
    pub backup: bool,
    /// The fault was this much random loss (percent, both ways) rather than a black hole.
    pub loss_pct: Option<f64>,
    /// The transfer ran over the other path alone, with no fault.
    pub alone: bool,
    pub backend: Backend,
    /// The sender exited successfully (the CLI checks the receiver's BLAKE3 verdict).
    pub completed: bool,
    /// The sender's report says the receiver verified the data.
    pub verified: bool,
    /// The stored file is byte for byte the one sent.
    pub identical: bool,
    /// Sender start to exit.
    pub duration_s: f64,
    /// First received byte to last.
    pub receive_span_s: Option<f64>,
    pub bytes_received: u64,
    /// Bytes received over the receive span, Mbit/s.
    pub goodput_mbit: Option<f64>,
    pub longest_stall: Option<Stall>,
    /// How precise the stall is (see `stall`).
    pub longest_poll_gap_s: f64,
    pub blackhole_at_s: Option<f64>,
    pub restored_at_s: Option<f64>,
    /// The dead link's qdiscs and egress filters (`LinkFault::qdiscs`) before the black hole,
    /// while it lasts, and after the restore.
    pub qdiscs: [Option<String>; 3],
    /// When the sender printed its first failure line, and the line.
    pub failure_at_s: Option<f64>,
    pub failure_line: Option<String>,
    /// Black-hole to failure line.
    pub detection_s: Option<f64>,
    /// When the sender printed its first recovery line after the restore, and the line.
    pub recovered_at_s: Option<f64>,
    pub recovered_line: Option<String>,
    /// Failure and recovery lines of the faulted path, all of them (a gray path may fail and
    /// come back several times).
    pub failures: usize,
    pub recoveries: usize,
    /// Failure lines naming the path that was not black-holed (false positives).
    pub live_path_failures: Vec<String>,
    /// The dead path's server address.
    pub dead_server: String,
    pub sender_error: Option<String>,
    /// The sender's final JSON report (paths, failovers).
    pub sender_report: Option<serde_json::Value>,
    pub host_loadavg_1min: [f64; 2],
    /// The hypervisor's CPU steal over the transfer, % of the host's CPU time (none: not read).
    pub host_steal_pct: Option<f64>,
}

/// Runs the experiment, tears it down, writes `<out>/result.json`.
pub fn run_failover(args: &FailoverArgs, run_id: u32) -> Result<FailoverResult> {
    run_saved(&args.out, run_id, |mpquic| run_inner(args, run_id, mpquic))
}

/// Runs an experiment of the `mpquic` CLI (`run`, given the binary) as run `run_id`: claims
/// the run, removes crashed runs' leftovers, tears it down after, and writes its result to
/// `<out>/result.json`.
pub(crate) fn run_saved<T: Serialize>(
    out: &Path,
    run_id: u32,
    run: impl FnOnce(&str) -> Result<T>,
) -> Result<T> {
    crate::runner::require_root()?;
    cleanup::claim_run(run_id)?;
    let removed = cleanup::cleanup_stale(false);
    if !removed.is_empty() {
        eprintln!("removed leftovers of crashed runs: {removed:?}");
    }
    let mpquic = flows::mpquic_bin()?;
    std::fs::create_dir_all(out)?;
    let res = run(&mpquic);
    cleanup::cleanup_run(run_id);
    let res = res?;
    std::fs::write(out.join("result.json"), serde_json::to_string_pretty(&res)?)?;
    Ok(res)
}

fn run_inner(args: &FailoverArgs, run_id: u32, mpquic: &str) -> Result<FailoverResult> {
    let dir = cleanup::run_dir(run_id);
    std::fs::create_dir_all(&dir)?;
    let tb = TwoPaths::setup(args.rate_mbit, args.k_packets, NODE_TAG, run_id, &dir)?;
    let pairs = tb.net.path_pairs(tb.s, tb.d);
    let dead_server = pairs.get(args.path as usize).context("no such path")?.1;
    let fault = tb.fault_on(dead_server)?;

    let source = dir.join(NAME);
    write_random(&source, args.bytes)?;
    let received = dir.join("received");
    std::fs::create_dir_all(&received)?;
    let server = start_server(&tb, args, &received, mpquic)?;
    let send = sender_command(&tb, args, &source)?;

    let mut r = Timeline {
        dead_server: dead_server.to_string(),
        qdiscs: [Some(fault.qdiscs()?), None, None],
        ..Timeline::default()
    };
    let host = HostSpan::start();
    let t0 = Instant::now();
    let watch = ReceiveWatch::start(received.clone(), t0);
    let sender = Proc::spawn(tb.nss.ns(tb.s), mpquic, &send)?;
    let (ok, lines, stderr) = r.drive(sender, &fault, args, t0)?;
    let duration_s = t0.elapsed().as_secs_f64();
    let progress: Progress = watch.finish()?;
    let (server_lines, server_err) = server.stop();
    if let Err(e) = tb.sampling.finish() {
        eprintln!("note: the queue sampler stopped early (the markers ran open-loop): {e:#}");
    }
    let (host_loadavg_1min, host_steal_pct) = host.end();

    save(&args.out.join("sender.stdout"), &lines.join("\n"))?;
    save(&args.out.join("sender.stderr"), &stderr)?;
    save(&args.out.join("server.stdout"), &server_lines.join("\n"))?;
    save(&args.out.join("server.stderr"), &server_err)?;
    save(&args.out.join("receive-progress.json"), &serde_json::to_string(&progress)?)?;
    let report = sender_report(&lines);
    let verified = report.as_ref().is_some_and(|v| v["verified"] == true);
    let stored = received.join(NAME);
    let identical = ok && stored.is_file() && same_contents(&source, &stored)?;
    let detection_s = r.failure.as_ref().zip(r.blackhole_at).map(|((t, _), b)| t - b);
    let goodput_mbit = progress.span_s().map(|span| progress.bytes() as f64 * 8.0 / span / 1e6);
    Ok(FailoverResult {
        path: args.path,
        bytes: args.bytes,
        rate_mbit: args.rate_mbit,
        failover: !args.no_failover,
        backup: args.backup,
        loss_pct: args.loss,
        alone: args.alone,
        backend: tb.backend,
        completed: ok,
        verified,
        identical,
        duration_s,
        receive_span_s: progress.span_s(),
        bytes_received: progress.bytes(),
        goodput_mbit,
        longest_stall: progress.longest_stall(),
        longest_poll_gap_s: progress.longest_poll_gap_s,
        blackhole_at_s: r.blackhole_at,
        restored_at_s: r.restored_at,
        qdiscs: r.qdiscs,
        failure_at_s: r.failure.as_ref().map(|f| f.0),
        failure_line: r.failure.map(|f| f.1),
        detection_s,
        recovered_at_s: r.recovered.as_ref().map(|f| f.0),
        recovered_line: r.recovered.map(|f| f.1),
        failures: r.failures,
        recoveries: r.recoveries,
        live_path_failures: r.live_path_failures,
        dead_server: r.dead_server,
        sender_error: (!ok).then(|| stderr.trim().to_string()),
        sender_report: report,
        host_loadavg_1min,
        host_steal_pct,
    })
}

// Without failover, neither end detects the dead path: the server's own detector would
// otherwise abandon it and the sender follow the peer's PATH_ABANDON.
fn no_failover_flag(args: &FailoverArgs) -> Option<String> {
    args.no_failover.then(|| "--no-failover".to_string())
}

/// `mpquic serve` on the receiving host, once it says it is serving.
fn start_server(tb: &TwoPaths, args: &FailoverArgs, received: &Path, mpquic: &str) -> Result<Proc> {
    let mut serve = tb.server_args(received);
    serve.extend(no_failover_flag(args));
    let mut server = Proc::spawn(tb.nss.ns(tb.d), mpquic, &serve)?;
    if !server.wait_err_line(Duration::from_secs(10), |l| l.starts_with("mpquic: serving on")) {
        let (_, err) = server.stop();
        bail!("mpquic serve did not start: {}", err.trim());
    }
    Ok(server)
}

/// The `mpquic send` arguments of the sender under test.
fn sender_command(tb: &TwoPaths, args: &FailoverArgs, source: &Path) -> Result<Vec<String>> {
    let mut send = tb.sender_args(source, args)?;
    send.extend(["--idle-timeout".into(), args.sender_idle_timeout.to_string()]);
    send.extend(no_failover_flag(args));
    if args.qlog {
        send.extend(["--qlog".into(), args.out.join("qlog").display().to_string()]);
    }
    Ok(send)
}

/// The sender's final JSON report (the last stdout line with a `verified` field).
fn sender_report(lines: &[String]) -> Option<serde_json::Value> {
    lines.iter().rev().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        v.get("verified").is_some().then_some(v)
    })
}

/// The two-path testbed, shaped and marked, its markers' loop closed by the sampler.
pub(crate) struct TwoPaths {
    pub(crate) net: Net,
    pub(crate) nss: Namespaces,
    /// The sending and receiving hosts.
    pub(crate) s: usize,
    pub(crate) d: usize,
    pub(crate) link: LinkParams,
    pub(crate) backend: Backend,
    pub(crate) delay: DelayMethod,
    pub(crate) sampling: Sampling,
}

impl TwoPaths {
    /// Builds it in namespaces `mqtb-<run_id>-<tag><node>`, each bottleneck `rate_mbit` and
    /// marked at `k_packets`, scratch files in `dir`.
    pub(crate) fn setup(
        rate_mbit: f64,
        k_packets: u32,
        tag: &str,
        run_id: u32,
        dir: &Path,
    ) -> Result<TwoPaths> {
        let link = LinkParams {
            rate_mbit,
            k_packets,
            buffer_bytes: 150_000,
            delay_ms: 0.0,
            jitter_ms: 0.0,
            loss: 0.0,
            ecn: true,
            sender_offload: false,
            dualq: None,
        };
        let caps = backend::detect(run_id)?;
        let be = backend::choose(&caps, &link)?;
        let delay = caps.delay_method();
        if be == Backend::Ebpf {
            marker::check_tools()?;
        }
        let mut net = topology::build(&Topology::MultiPath {
            paths: 2,
            addrs_per_link: 1,
            cross_hosts: false,
        });
        let (s, d) = (net.node("s").context("no s")?, net.node("d").context("no d")?);
        for n in &mut net.nodes {
            n.name = format!("{tag}{}", n.name);
        }
        let nss = netns::setup(&net, run_id, false)?;

        // Shape and mark every bottleneck as the runner does.
        let bpffs = dir.join("bpffs0");
        if be == Backend::Ebpf {
            marker::mount_bpffs(&bpffs)?;
        }
        let mut probes = Vec::new();
        for b in net.bottlenecks() {
            let ns = nss.ns(b.from.node).to_string();
            let handle = backend::shape(&ns, &b.from.dev, &link, be, delay)?;
            let m = if be == Backend::Ebpf {
                let conf = MarkerConfig {
                    rate_bytes_per_s: (link.rate_mbit * 1e6 / 8.0) as u64,
                    k_bytes: link.k_packets as u64 * FRAME,
                    loss: 0.0,
                    dualq: None,
                };
                Some(Marker::attach(dir, &bpffs, b.id, &ns, &b.from.dev, conf)?)
            } else {
                None
            };
            let ifindex = netns::ifindex(&ns, &b.from.dev)? as i32;
            probes.push(Probe { link_id: b.id, ns, ifindex, handle, marker: m, dual_leaves: None });
        }
        let sampling = Sampling::start(probes);
        Ok(TwoPaths { net, nss, s, d, link, backend: be, delay, sampling })
    }

    /// The fault of the path to `server`: its last link, r -> d (shaped) and d -> r.
    fn fault_on(&self, server: Ipv4Addr) -> Result<LinkFault> {
        let last = (self.net.links.iter())
            .find(|l| l.b.node == self.d && l.b.addrs.contains(&server))
            .with_context(|| format!("no link delivers to {server}"))?;
        Ok(LinkFault {
            directions: [
                Egress::Shaped {
                    ns: self.nss.ns(last.a.node).into(),
                    dev: last.a.dev.clone(),
                    link: self.link.clone(),
                    backend: self.backend,
                    delay: self.delay,
                },
                Egress::Plain { ns: self.nss.ns(self.d).into(), dev: last.b.dev.clone() },
            ],
        })
    }

    /// `mpquic serve` on every address of d, storing into `received`.
    pub(crate) fn server_args(&self, received: &Path) -> Vec<String> {
        let mut serve = vec!["serve".to_string()];
        for (_, e) in self.net.ends_of(self.d) {
            serve.extend(["--listen".into(), format!("{}:{QUIC_PORT}", e.addrs[0])]);
        }
        serve.extend(["--dir".into(), received.display().to_string()]);
        let lab = ["--insecure", "--allow-anonymous", "--json", "--interval", "0.05"];
        serve.extend(lab.map(String::from));
        serve
    }

    /// `mpquic send` of `source` over both paths (path 1 a backup with `--backup`), or over
    /// the path that is not faulted alone (`--alone`); the first path is the one routing gives
    /// (noq cannot bind path 0's source).
    fn sender_args(&self, source: &Path, args: &FailoverArgs) -> Result<Vec<String>> {
        let mut pairs = self.net.path_pairs(self.s, self.d);
        if args.alone {
            pairs = vec![pairs[1 - usize::from(args.path)]];
        }
        let mut send = vec!["send".to_string(), source.display().to_string()];
        send.extend(self.client_paths(&pairs, args.backup)?);
        send.extend(["--insecure", "--json", "--interval", "0.05"].map(String::from));
        Ok(send)
    }

    /// A client's `--server` and `--path` options for `pairs` of (local, server) addresses,
    /// the second a `--backup-path` with `backup`; the first must be the one routing gives.
    pub(crate) fn client_paths(
        &self,
        pairs: &[(Ipv4Addr, Ipv4Addr)],
        backup: bool,
    ) -> Result<Vec<String>> {
        let (l0, r0) = pairs[0];
        let route = run("ip", &["-n", self.nss.ns(self.s), "route", "get", &r0.to_string()])?;
        if !route.contains(&format!("src {l0} ")) {
            bail!("path 0 would not leave from {l0}: {route}");
        }
        let mut args = vec!["--server".into(), format!("{r0}:{QUIC_PORT}")];
        for (i, (l, r)) in pairs.iter().enumerate() {
            let option = if backup && i == 1 { "--backup-path" } else { "--path" };
            args.extend([option.into(), format!("{l}={r}:{QUIC_PORT}")]);
        }
        Ok(args)
    }
}

/// The sampler's thread, stopped on `finish` or drop.
pub(crate) struct Sampling {
    stop: Arc<AtomicBool>,
    /// The series are not kept: the sampler is here for the markers' loop.
    thread: Option<JoinHandle<Result<()>>>,
}

impl Sampling {
    fn start(probes: Vec<Probe>) -> Sampling {
        let stop = Arc::new(AtomicBool::new(false));
        let sampling = stop.clone();
        let start = std::time::Instant::now();
        let thread =
            std::thread::spawn(move || sampler::run(probes, SAMPLE, sampling, start).map(|_| ()));
        Sampling { stop, thread: Some(thread) }
    }

    /// Stops it; an error if it had stopped early.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().context("sampler already finished")?;
        thread.join().map_err(|_| anyhow!("the sampler panicked"))?
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The fault's instants and the sender's failover lines, stamped as they arrive.
#[derive(Default)]
struct Timeline {
    /// The black-holed path's server address.
    dead_server: String,
    blackhole_at: Option<f64>,
    restored_at: Option<f64>,
    qdiscs: [Option<String>; 3],
    failure: Option<(f64, String)>,
    recovered: Option<(f64, String)>,
    failures: usize,
    recoveries: usize,
    live_path_failures: Vec<String>,
    seen: usize,
}

impl Timeline {
    /// Runs the fault on the sender's schedule (seconds after `t0`) until it exits or the
    /// deadline; returns whether it succeeded, its stdout lines and stderr.
    fn drive(
        &mut self,
        mut sender: Proc,
        fault: &LinkFault,
        args: &FailoverArgs,
        t0: Instant,
    ) -> Result<(bool, Vec<String>, String)> {
        let secs = || t0.elapsed().as_secs_f64();
        let ok = loop {
            if let Some(ok) = sender.try_done()? {
                break ok;
            }
            let now = secs();
            if now > args.deadline_s {
                break false;
            }
            if self.blackhole_at.is_none() && now >= args.blackhole_at && !args.alone {
                match args.loss {
                    Some(percent) => fault.lose(percent)?,
                    None => fault.blackhole()?,
                }
                self.blackhole_at = Some(secs());
                self.qdiscs[1] = Some(fault.qdiscs()?);
            }
            if let (Some(at), None) = (self.blackhole_at, self.restored_at) {
                if now >= at + args.restore_after {
                    match args.loss {
                        Some(percent) => fault.stop_losing(percent)?,
                        None => fault.restore()?,
                    }
                    self.restored_at = Some(secs());
                    self.qdiscs[2] = Some(fault.qdiscs()?);
                }
            }
            self.read_events(&sender.stderr(), secs());
            std::thread::sleep(Duration::from_millis(2));
        };
        let end = secs();
        let (lines, stderr, _) = sender.stop_cpu();
        self.read_events(&stderr, end);
        Ok((ok, lines, stderr))
    }

    /// Takes in the sender's stderr lines not seen yet, stamping them `now`.
    fn read_events(&mut self, stderr: &str, now: f64) {
        let dead_server = &self.dead_server;
        let lines: Vec<&str> = stderr.lines().collect();
        // The CLI's own lines (the log's copies carry timestamps and colours):
        // "mpquic: path 0 10.1.0.1 -> 10.2.0.2 failed at 1.83 s; continuing on path 1"
        // "mpquic: path 0 10.1.0.1 -> 10.2.0.2 answers again at 5.1 s; reopened as path 2"
        let new = lines[self.seen.min(lines.len())..].iter();
        for line in new.filter(|l| l.starts_with("mpquic: path ")) {
            if let Some((route, _)) = line.split_once(" failed at ") {
                if route.ends_with(&format!("-> {dead_server}")) {
                    self.failure.get_or_insert((now, line.to_string()));
                    self.failures += 1;
                } else {
                    self.live_path_failures.push(line.to_string());
                }
            } else if line.contains(" answers again at ") {
                self.recoveries += 1;
                if self.restored_at.is_some() {
                    self.recovered.get_or_insert((now, line.to_string()));
                }
            }
        }
        self.seen = lines.len();
    }
}

fn parse_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("{s:?} is not a percentage from 0 to 100")),
    }
}

pub(crate) fn write_random(path: &Path, bytes: u64) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut rng = fastrand::Rng::new();
    let mut block = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        rng.fill(&mut block);
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
    }
    f.flush()?;
    Ok(())
}

pub(crate) fn same_contents(a: &Path, b: &Path) -> Result<bool> {
    use std::io::Read;
    let (mut fa, mut fb) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

fn save(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_takes_the_cli_lines_of_the_dead_path_once() {
        let mut t = Timeline { dead_server: "10.2.0.2".into(), ..Timeline::default() };
        let log = "\x1b[2m...\x1b[0m WARN path 0 10.1.0.1 -> 10.2.0.2 failed at 1.70 s; continuing on path 1\n\
                   mpquic: path 0 10.1.0.1 -> 10.2.0.2 failed at 1.70 s; continuing on path 1";
        t.read_events(log, 1.8);
        let restored = format!(
            "{log}\nmpquic: path 1 10.3.0.1 -> 10.4.0.2 failed at 2.00 s; continuing on path 0\n\
             mpquic: path 0 10.1.0.1 -> 10.2.0.2 answers again at 3.0 s; reopened as path 2"
        );
        t.restored_at = Some(2.5);
        t.read_events(&restored, 3.1);
        assert_eq!(t.failure.as_ref().map(|f| f.0), Some(1.8), "stamped when first read");
        assert!(
            t.failure.unwrap().1.starts_with("mpquic: path 0"),
            "the CLI's line, not the log's"
        );
        assert_eq!(t.live_path_failures.len(), 1);
        assert_eq!(t.recovered.map(|r| r.0), Some(3.1));
    }
}
