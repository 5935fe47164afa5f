//! The soak's one `mpquic serve` (mutual TLS, `--metrics`, `--json`), its restarts, and what
//! it is watched by: its RSS and open descriptors from /proc, and its Prometheus counters,
//! scraped from inside its namespace.

use crate::flows::Proc;
use anyhow::{anyhow, bail, Context, Result};
use nix::sys::signal::Signal;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

/// Where the server serves its metrics, inside its namespace (on loopback, the port differs).
const METRICS_PORT: u16 = 9464;
/// How long a SIGTERMed server may take to exit before it is killed: long enough for a
/// draining server (issue 41's `--drain`) to finish what it may.
const TERM_WAIT: Duration = Duration::from_secs(40);

/// One server process's life.
#[derive(Debug, Serialize, Clone, Default)]
pub struct Instance {
    pub pid: u32,
    pub started_s: f64,
    pub stopped_s: Option<f64>,
    /// SIGTERM to exit, and how it exited ("exit 0", "signal 15", "SIGKILLed after 40 s").
    pub exit: Option<String>,
    pub term_to_exit_s: Option<f64>,
    /// The last scrape before it stopped (or at the end): series -> value.
    pub metrics: BTreeMap<String, f64>,
    /// Its `--json` lines that report a finished transfer.
    pub transfers_logged: usize,
}

/// One sample of the server process.
#[derive(Debug, Serialize, Clone)]
pub struct Sample {
    pub t_s: f64,
    pub instance: usize,
    pub rss_kib: u64,
    pub fds: usize,
    /// The `mpquic_connections` gauge, when the scrape answered.
    pub connections: Option<f64>,
    /// The host's 1-minute load average.
    pub load: f64,
}

pub struct Server {
    program: String,
    args: Vec<String>,
    ns: Option<String>,
    logs: PathBuf,
    proc: Option<Proc>,
    scraper: Scraper,
    pub instances: Vec<Instance>,
    t0: Instant,
}

impl Server {
    /// Its command line: every path's address, mutual TLS from `certs`, metrics, JSON lines.
    pub fn new(
        program: &str,
        site: &super::site::Site,
        dir: &Path,
        certs: &Path,
        logs: &Path,
        t0: Instant,
    ) -> Result<Server> {
        let mut args = vec!["serve".to_string()];
        for p in 0..site.pairs.len() {
            args.extend(["--listen".into(), site.server_addr(p).to_string()]);
        }
        let metrics = metrics_addr(site.server_ns().is_some(), site.port);
        let pem = |p: &str| certs.join(p).display().to_string();
        args.extend(["--dir".into(), dir.display().to_string()]);
        args.extend([
            "--cert".into(),
            pem("server/cert.pem"),
            "--key".into(),
            pem("server/key.pem"),
        ]);
        args.extend(["--client-ca".into(), pem("ca/ca.pem")]);
        args.extend(["--metrics".into(), metrics.to_string(), "--json".into()]);
        let scraper = Scraper::start(site.server_ns().map(String::from), metrics)?;
        Ok(Server {
            program: program.into(),
            args,
            ns: site.server_ns().map(String::from),
            logs: logs.into(),
            proc: None,
            scraper,
            instances: Vec::new(),
            t0,
        })
    }

    /// Starts an instance and waits until it serves.
    pub fn start(&mut self) -> Result<()> {
        let mut proc = Proc::spawn_in(self.ns.as_deref(), &self.program, &self.args)?;
        if !proc.wait_err_line(Duration::from_secs(15), |l| l.starts_with("mpquic: serving on")) {
            let (_, err) = proc.stop();
            bail!("mpquic serve did not start: {}", err.trim());
        }
        let started_s = self.t0.elapsed().as_secs_f64();
        self.instances.push(Instance { pid: proc.pid(), started_s, ..Instance::default() });
        self.proc = Some(proc);
        Ok(())
    }

    /// The running instance's pid.
    pub fn pid(&self) -> Option<u32> {
        self.proc.as_ref().map(Proc::pid)
    }

    /// A sample of the running instance: memory, descriptors, the metrics (kept as its last).
    pub fn sample(&mut self) -> Option<Sample> {
        let pid = self.pid()?;
        let (rss_kib, fds) = (rss_kib(pid)?, fd_count(pid)?);
        let metrics = self.scraper.scrape().ok();
        let connections = metrics.as_ref().and_then(|m| m.get("mpquic_connections").copied());
        let instance = self.instances.len() - 1;
        if let Some(m) = metrics {
            self.instances[instance].metrics = m;
        }
        let (t_s, load) = (self.t0.elapsed().as_secs_f64(), crate::host::loadavg());
        Some(Sample { t_s, instance, rss_kib, fds, connections, load })
    }

    /// Scrapes once more, then SIGTERM; waits for the exit (SIGKILL after `TERM_WAIT`) and
    /// saves the instance's output.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut proc) = self.proc.take() else { return Ok(()) };
        let i = self.instances.len() - 1;
        if let Ok(m) = self.scraper.scrape() {
            self.instances[i].metrics = m;
        }
        let term = Instant::now();
        proc.signal(Signal::SIGTERM);
        let status = loop {
            if let Some(status) = proc.try_status()? {
                break Some(status);
            }
            if term.elapsed() > TERM_WAIT {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let inst = &mut self.instances[i];
        inst.term_to_exit_s = Some(term.elapsed().as_secs_f64());
        inst.stopped_s = Some(self.t0.elapsed().as_secs_f64());
        inst.exit = Some(match status {
            Some(s) => exit_text(s),
            None => format!("SIGKILLed after {} s", TERM_WAIT.as_secs()),
        });
        let (lines, stderr) = proc.stop();
        inst.transfers_logged = lines.iter().filter(|l| is_transfer_line(l)).count();
        let name = format!("server-{i}");
        std::fs::write(self.logs.join(format!("{name}.stdout")), lines.join("\n"))?;
        std::fs::write(self.logs.join(format!("{name}.stderr")), stderr)?;
        Ok(())
    }
}

/// The metrics address: the server's namespace's own loopback, or this one's on a free port.
fn metrics_addr(netns: bool, quic_port: u16) -> SocketAddr {
    let port = if netns {
        METRICS_PORT
    } else {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_or(quic_port.wrapping_add(1), |a| a.port())
    };
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// "exit N" or "signal N".
fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (_, Some(signal)) => format!("signal {signal}"),
        _ => "unknown".into(),
    }
}

/// A server `--json` line of a finished transfer (not a per-second `--interval` line).
fn is_transfer_line(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.get("verified").is_some())
}

/// VmRSS of `pid`, KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `pid`'s RSS after its allocator returned its free memory to the system: glibc's
/// `malloc_trim(0)` (every arena, free pages inside heaps too), called through gdb, which
/// stops the process for the second or two it takes to attach. KiB.
pub fn rss_after_trim(pid: u32) -> Result<u64> {
    let out = std::process::Command::new("gdb")
        .args(["-p", &pid.to_string(), "-batch", "-nx", "-ex", "call (int)malloc_trim(0)"])
        .output()
        .context("running gdb (--trim-at-end needs it: apt-get install gdb)")?;
    let said = String::from_utf8_lossy(&out.stdout);
    if !said.lines().any(|l| l.starts_with("$1 = ")) {
        bail!(
            "gdb did not call malloc_trim in the server: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    rss_kib(pid).ok_or_else(|| anyhow!("the server ({pid}) is gone after malloc_trim"))
}

/// Open file descriptors of `pid`.
pub fn fd_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// What each open descriptor of `pid` refers to ("socket:[..]" as "socket"), sorted: the
/// report names the ones a quiet server holds beyond its idle set.
pub fn fd_targets(pid: u32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    let mut targets: Vec<String> = dir
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|t| {
            let t = t.display().to_string();
            match t.split_once(":[") {
                Some((kind, _)) => kind.to_string(),
                None => t,
            }
        })
        .collect();
    targets.sort();
    targets
}

/// A thread inside the server's namespace (when it has one) that fetches the metrics page on
/// request: a socket belongs to the namespace of the thread that makes it.
struct Scraper {
    requests: Sender<Sender<Result<String>>>,
}

impl Scraper {
    fn start(ns: Option<String>, addr: SocketAddr) -> Result<Scraper> {
        let (requests, incoming) = channel::<Sender<Result<String>>>();
        let (ready_tx, ready) = channel();
        std::thread::spawn(move || {
            let entered = ns.as_deref().map_or(Ok(()), enter_netns);
            let failed = entered.as_ref().err().map(|e| format!("{e:#}"));
            let _ = ready_tx.send(entered);
            for reply in incoming {
                let page = match &failed {
                    Some(e) => Err(anyhow!("{e}")),
                    None => fetch(addr),
                };
                let _ = reply.send(page);
            }
        });
        ready.recv().context("the scraper thread")??;
        Ok(Scraper { requests })
    }

    /// The metrics now: series (name with labels) -> value.
    fn scrape(&self) -> Result<BTreeMap<String, f64>> {
        let (tx, rx) = channel();
        self.requests.send(tx).map_err(|_| anyhow!("the scraper thread is gone"))?;
        Ok(parse_metrics(&rx.recv()??))
    }
}

/// Moves this thread into network namespace `ns`.
fn enter_netns(ns: &str) -> Result<()> {
    let file = std::fs::File::open(format!("/var/run/netns/{ns}"))
        .with_context(|| format!("opening namespace {ns}"))?;
    nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET)
        .with_context(|| format!("entering namespace {ns}"))
}

/// GET /metrics over plain HTTP/1.0: the body.
fn fetch(addr: SocketAddr) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: soak\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no HTTP header")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("metrics answered {}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_string())
}

/// Prometheus text: every sample line's series and value (comments skipped).
pub fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.trim().to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The sum of every series of metric `name` (all its labels).
pub fn total(metrics: &BTreeMap<String, f64>, name: &str) -> f64 {
    let of_name = |s: &String| s == name || s.starts_with(&format!("{name}{{"));
    metrics.iter().filter(|(s, _)| of_name(s)).map(|(_, v)| v).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_text_sums_over_labels() {
        let text = "# TYPE mpquic_path_received_bytes_total counter\n\
                    mpquic_path_received_bytes_total{path=\"0\"} 100\n\
                    mpquic_path_received_bytes_total{path=\"1\"} 23\n\
                    mpquic_path_received_bytes_total_other 5\n\
                    mpquic_connections 2\n";
        let m = parse_metrics(text);
        assert_eq!(total(&m, "mpquic_path_received_bytes_total"), 123.0);
        assert_eq!(total(&m, "mpquic_connections"), 2.0);
        assert_eq!(total(&m, "mpquic_connections_opened_total"), 0.0);
    }
}
