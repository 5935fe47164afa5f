//! The receiving side of one repetition: a sink or an `mpquic serve` per (destination host,
//! flow kind), MPTCP endpoints, the `[[jobs]]` workers; and what they leave when stopped.

use super::{first_addr, host, transport_args, JOB_ANSWER, JOB_PORT, LAB_CAPS};
use super::{MPTCP_PORT, QUIC_PORT, TCP_PORT};
use crate::flows::{self, Proc, SinkRecord};
use crate::netns::{run, Namespaces};
use crate::plan::{FlowKind, Plan, Quic};
use crate::topology::Net;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The running receivers.
pub struct Receivers {
    /// One per (destination host, flow kind).
    sinks: Vec<(usize, FlowKind, Proc)>,
    /// Job workers: (`[[jobs]]` entry index, server).
    workers: Vec<(usize, Proc)>,
    /// Every host that receives (flow destinations and aggregators), sorted: their counters
    /// are read before and after the flows.
    pub hosts: Vec<usize>,
}

/// What the sinks and servers left.
pub struct Received {
    /// The kernel flows' sink records (bytes over time per peer).
    pub sink_records: Vec<SinkRecord>,
    /// The mpquic servers' JSON lines (their `received_series` taken out into `server_series`).
    pub server_reports: Vec<serde_json::Value>,
    /// The mpquic servers' received bytes over time per transfer name (the flow's id), as the
    /// kernel sinks' samples: (CLOCK_MONOTONIC ns, cumulative bytes).
    pub server_series: BTreeMap<String, Vec<(u64, u64)>>,
    /// The sinks' and servers' error lines, one entry per process.
    pub sink_errors: Vec<String>,
    /// CPU seconds per receiving process, keyed `<host>:mpquic` or `<host>:tcp-sink`.
    pub cpu_s: BTreeMap<String, f64>,
}

impl Receivers {
    /// Sets up MPTCP limits and endpoints, starts every sink and server and every job worker
    /// (their answer files under `scratch`), and waits until each listens.
    pub fn start(sc: &Plan, net: &Net, nss: &Namespaces, scratch: &Path) -> Result<Receivers> {
        if sc.flows.iter().any(|f| f.kind == FlowKind::KernelMptcp) {
            mptcp_limits(net, nss)?;
        }
        let mut dests: Vec<(usize, FlowKind)> = Vec::new();
        for f in &sc.flows {
            let to = host(net, &f.to)?;
            if !dests.contains(&(to, f.kind)) {
                dests.push((to, f.kind));
            }
        }
        let mut sinks = Vec::new();
        let mut signalled = Vec::new();
        for &(to, kind) in &dests {
            if kind == FlowKind::KernelMptcp && !signalled.contains(&to) {
                announce_mptcp_addrs(net, nss.ns(to), to)?;
                signalled.push(to);
            }
            let p = match kind {
                FlowKind::KernelTcp | FlowKind::KernelMptcp => start_sink(nss.ns(to), kind)?,
                FlowKind::Mpquic => start_flow_server(net, nss.ns(to), to, &sc.quic)?,
            };
            sinks.push((to, kind, p));
        }
        let workers = start_job_workers(sc, net, nss, scratch)?;
        let aggregators = sc.jobs.iter().map(|j| host(net, &j.aggregator));
        let mut hosts: Vec<usize> =
            dests.iter().map(|d| Ok(d.0)).chain(aggregators).collect::<Result<_>>()?;
        hosts.sort_unstable();
        hosts.dedup();
        Ok(Receivers { sinks, workers, hosts })
    }

    /// Stops the job workers; returns each `[[jobs]]` entry's workers' error lines.
    pub fn stop_workers(&mut self, entries: usize) -> Vec<Vec<String>> {
        let mut errors = vec![Vec::new(); entries];
        for (ji, p) in self.workers.drain(..) {
            let (_, err) = p.stop();
            errors[ji].extend(server_errors(&err));
        }
        errors
    }

    /// Stops the sinks and flow servers and collects what they wrote.
    pub fn stop_sinks(self, net: &Net) -> Received {
        let mut r = Received {
            sink_records: Vec::new(),
            server_reports: Vec::new(),
            server_series: BTreeMap::new(),
            sink_errors: Vec::new(),
            cpu_s: BTreeMap::new(),
        };
        for (to, kind, p) in self.sinks {
            let (lines, err, cpu) = p.stop_cpu();
            if let Some(c) = cpu {
                let process = if kind == FlowKind::Mpquic { "mpquic" } else { "tcp-sink" };
                r.cpu_s.insert(format!("{}:{process}", net.nodes[to].name), c);
            }
            if kind != FlowKind::Mpquic {
                r.sink_records.extend(
                    lines.iter().filter_map(|l| serde_json::from_str::<SinkRecord>(l).ok()),
                );
            } else {
                for mut report in
                    lines.iter().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                {
                    take_series(&mut report, &mut r.server_series);
                    r.server_reports.push(report);
                }
            }
            let err = server_errors(&err);
            if !err.is_empty() {
                r.sink_errors.push(err.join(" / "));
            }
        }
        r
    }
}

/// Moves a server report's `received_series` into `series` under the transfer's name; a
/// flow's transfers (`repeat`), one after the other, add up to one cumulative count.
fn take_series(report: &mut serde_json::Value, series: &mut BTreeMap<String, Vec<(u64, u64)>>) {
    let samples = report.as_object_mut().and_then(|o| o.remove("received_series"));
    let (Some(name), Some(samples)) = (report["name"].as_str(), samples) else { return };
    let samples: Vec<(u64, u64)> = serde_json::from_value(samples).unwrap_or_default();
    let flow = series.entry(name.to_string()).or_default();
    let before = flow.last().map_or(0, |&(_, bytes)| bytes);
    flow.extend(samples.into_iter().map(|(t, bytes)| (t, before + bytes)));
}

/// Lets every host's MPTCP connections open and accept up to 8 subflows.
fn mptcp_limits(net: &Net, nss: &Namespaces) -> Result<()> {
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
    Ok(())
}

/// Announces every address of host `to` but the first: the client opens a subflow to each, and
/// routing sends it over that address's path.
fn announce_mptcp_addrs(net: &Net, ns: &str, to: usize) -> Result<()> {
    let first = first_addr(net, to);
    for (_, e) in net.ends_of(to) {
        for a in e.addrs.iter().filter(|a| **a != first) {
            let a = a.to_string();
            run("ip", &["-n", ns, "mptcp", "endpoint", "add", &a, "dev", &e.dev, "signal"])?;
        }
    }
    Ok(())
}

/// The kernel flows' sink (this binary's `__sink`), sampling received bytes every 5 ms.
fn start_sink(ns: &str, kind: FlowKind) -> Result<Proc> {
    let (port, proto) =
        if kind == FlowKind::KernelTcp { (TCP_PORT, "tcp") } else { (MPTCP_PORT, "mptcp") };
    let me = crate::programs::testbed();
    let args = ["__sink", "--listen", &format!("0.0.0.0:{port}"), "--proto", proto]
        .into_iter()
        .chain(["--interval-ms", "5"])
        .map(String::from)
        .collect::<Vec<_>>();
    let p = Proc::spawn(ns, &me, &args)?;
    if !p.wait_line(Duration::from_secs(5), |l| l.contains("listening")) {
        let (_, err) = p.stop();
        bail!("the {proto} sink did not start: {err}");
    }
    Ok(p)
}

/// The mpquic flows' server on every address of host `to`, with the run's shared QUIC settings
/// (its receive window is what the senders may have in flight).
fn start_flow_server(net: &Net, ns: &str, to: usize, quic: &Quic) -> Result<Proc> {
    let mut args = vec!["serve".to_string()];
    for (_, e) in net.ends_of(to) {
        for a in &e.addrs {
            args.extend(["--listen".into(), format!("{a}:{QUIC_PORT}")]);
        }
    }
    // Lab servers: a throwaway certificate, any client of the testbed may send, and caps far
    // above any scenario's fan-in (a refused flow would skew a run). Received bytes every 5 ms,
    // as the kernel flows' sink samples them.
    let lab = ["--insecure", "--allow-anonymous", "--sink", "--json", "--received-series", "5"];
    args.extend(lab.into_iter().chain(LAB_CAPS).map(Into::into));
    args.extend(quic.args());
    start_mpquic_server(ns, args)
}

/// Job workers: `mpquic serve --dir` with the answer file, one server per (entry, worker),
/// sending with the entry's controller. No --json: a line per answer would be thousands.
fn start_job_workers(
    sc: &Plan,
    net: &Net,
    nss: &Namespaces,
    scratch: &Path,
) -> Result<Vec<(usize, Proc)>> {
    let mut workers = Vec::new();
    for (ji, j) in sc.jobs.iter().enumerate() {
        let files = scratch.join(format!("jobs{ji}"));
        std::fs::create_dir_all(&files)?;
        std::fs::write(files.join(JOB_ANSWER), vec![0x5au8; j.response_bytes as usize])?;
        for w in &j.workers {
            let w = host(net, w)?;
            let mut args = vec!["serve".to_string()];
            for (_, e) in net.ends_of(w) {
                for a in &e.addrs {
                    args.extend(["--listen".into(), format!("{a}:{}", JOB_PORT + ji as u16)]);
                }
            }
            args.extend(["--dir".into(), files.display().to_string()]);
            args.extend(["--insecure", "--allow-anonymous", "--read-only"].map(Into::into));
            args.extend(LAB_CAPS.map(Into::into));
            args.extend(transport_args(&j.controller, j.ecn, &sc.quic));
            workers.push((ji, start_mpquic_server(nss.ns(w), args)?));
        }
    }
    Ok(workers)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_series_leave_the_reports_and_add_up_per_flow() {
        let mut series = BTreeMap::new();
        let mut reports = [
            json!({"name": "f0.0", "bytes": 30, "received_series": [[10, 0], [15, 20], [20, 30]]}),
            json!({"name": "f1.0", "bytes": 5, "received_series": [[12, 0], [13, 5]]}),
            json!({"name": "f0.0", "bytes": 7, "received_series": [[30, 0], [31, 7]]}),
            json!({"name": "f2.0", "bytes": 9}),
        ];
        for r in &mut reports {
            take_series(r, &mut series);
            assert!(r.get("received_series").is_none() && r["bytes"].is_u64(), "{r}");
        }
        assert_eq!(series["f0.0"], [(10, 0), (15, 20), (20, 30), (30, 30), (31, 37)]);
        assert_eq!(series["f1.0"], [(12, 0), (13, 5)]);
        assert!(!series.contains_key("f2.0"), "no series, no entry");
    }
}
