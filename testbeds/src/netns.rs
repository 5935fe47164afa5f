//! Network namespaces, veth links, addresses, routes and sysctls for one run.
//!
//! Every namespace of a run is named `mqtb-<pid>-<node>`: the prefix marks it as ours and the
//! pid tells a later run whether its owner is still alive (see `cleanup`). Links are created
//! directly inside their namespaces, so their device names never appear in the root namespace.

use crate::topology::Net;
use anyhow::{bail, Context, Result};
use std::process::{Command, Stdio};

pub const PREFIX: &str = "mqtb-";

/// Runs a command and fails with its stderr if it fails.
pub fn run(cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting {cmd} (is it installed?)"))?;
    if !out.status.success() {
        bail!("{} {} failed: {}", cmd, args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn ns_name(run_id: u32, node: &str) -> String {
    format!("{PREFIX}{run_id}-{node}")
}

/// The namespaces of one run, removed on drop.
pub struct Namespaces {
    pub names: Vec<String>,
}

impl Namespaces {
    pub fn ns(&self, node: usize) -> &str {
        &self.names[node]
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            crate::cleanup::remove_namespace(n);
        }
    }
}

fn sysctl(ns: &str, key: &str, val: &str) -> Result<()> {
    run("ip", &["netns", "exec", ns, "sysctl", "-qw", &format!("{key}={val}")]).map(|_| ())
}

/// Creates the namespaces, links, addresses, routes and sysctls of `net`.
pub fn setup(net: &Net, run_id: u32, sender_offload: bool) -> Result<Namespaces> {
    let mut nss = Namespaces { names: Vec::new() };
    for n in &net.nodes {
        let name = ns_name(run_id, &n.name);
        run("ip", &["netns", "add", &name])?;
        nss.names.push(name.clone());
        run("ip", &["-n", &name, "link", "set", "lo", "up"])?;
        if n.router {
            sysctl(&name, "net.ipv4.ip_forward", "1")?;
        } else {
            sysctl(&name, "net.ipv4.tcp_ecn", "1")?;
            sysctl(&name, "net.mptcp.enabled", "1")?;
        }
        sysctl(&name, "net.ipv4.conf.all.rp_filter", "0")?;
        sysctl(&name, "net.ipv4.conf.default.rp_filter", "0")?;
    }
    for l in &net.links {
        let (na, nb) = (nss.ns(l.a.node).to_string(), nss.ns(l.b.node).to_string());
        run(
            "ip",
            &[
                "link", "add", &l.a.dev, "netns", &na, "type", "veth", "peer", "name", &l.b.dev,
                "netns", &nb,
            ],
        )?;
        for (ns, end) in [(&na, &l.a), (&nb, &l.b)] {
            for a in &end.addrs {
                run("ip", &["-n", ns, "addr", "add", &format!("{a}/24"), "dev", &end.dev])?;
            }
            let host = !net.nodes[end.node].router;
            if host && !sender_offload {
                // One packet per skb, so the marker and the qdisc see packets, not GSO batches.
                run("ip", &["-n", ns, "link", "set", "dev", &end.dev, "gso_max_segs", "1"])?;
            }
            run("ip", &["-n", ns, "link", "set", "dev", &end.dev, "up"])?;
        }
    }
    for r in &net.routes {
        let ns = nss.ns(r.node);
        let dst = format!("{}/24", r.dst);
        run("ip", &["-n", ns, "route", "add", &dst, "via", &r.via.to_string(), "dev", &r.dev])?;
    }
    // Hosts with several interfaces: source-address policy routing, so that a packet from an
    // address leaves through that address's interface (one path per address).
    for (n, node) in net.nodes.iter().enumerate() {
        if node.router {
            continue;
        }
        let ends = net.ends_of(n);
        if ends.len() < 2 {
            continue;
        }
        for (i, (l, e)) in ends.iter().enumerate() {
            let table = (100 + i).to_string();
            let other = if l.a.node == n { &l.b } else { &l.a };
            let ns = nss.ns(n);
            run(
                "ip",
                &[
                    "-n",
                    ns,
                    "route",
                    "add",
                    &format!("{}/24", l.subnet),
                    "dev",
                    &e.dev,
                    "table",
                    &table,
                ],
            )?;
            if net.nodes[other.node].router {
                let via = other.addrs[0].to_string();
                run(
                    "ip",
                    &[
                        "-n", ns, "route", "add", "default", "via", &via, "dev", &e.dev, "table",
                        &table,
                    ],
                )?;
            }
            for a in &e.addrs {
                run(
                    "ip",
                    &[
                        "-n",
                        ns,
                        "rule",
                        "add",
                        "from",
                        &a.to_string(),
                        "table",
                        &table,
                        "priority",
                        "100",
                    ],
                )?;
            }
        }
    }
    Ok(nss)
}

/// The interface index of `dev` inside namespace `ns`.
pub fn ifindex(ns: &str, dev: &str) -> Result<u32> {
    let out = run("ip", &["-n", ns, "-o", "link", "show", "dev", dev])?;
    let idx = out.split(':').next().unwrap_or("").trim();
    idx.parse().with_context(|| format!("parsing ifindex of {dev} in {ns}: {out}"))
}
