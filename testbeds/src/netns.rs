//! Network namespaces, veth links, addresses, routes and sysctls for one run.
//!
//! Every namespace of a run is named `mqtb-<pid>-<node>`: the prefix marks it as ours and the
//! pid tells a later run whether its owner is still alive (see `cleanup`). Links are created
//! directly inside their namespaces, so their device names never appear in the root namespace.

use crate::topology::{Link, Net, Node, Route};
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
        add_namespace(&mut nss, n, run_id)?;
    }
    for l in &net.links {
        add_link(&nss, net, l, sender_offload)?;
    }
    for r in &net.routes {
        add_route(&nss, r)?;
    }
    for (n, node) in net.nodes.iter().enumerate() {
        if !node.router {
            add_source_routing(&nss, net, n)?;
        }
    }
    Ok(nss)
}

/// Node `n`'s namespace with its sysctls: a router forwards and hashes ECMP per 5-tuple, a host
/// speaks ECN and MPTCP. Added to `nss` as soon as it exists, so that a failure removes it.
fn add_namespace(nss: &mut Namespaces, n: &Node, run_id: u32) -> Result<()> {
    let name = ns_name(run_id, &n.name);
    run("ip", &["netns", "add", &name])?;
    nss.names.push(name.clone());
    run("ip", &["-n", &name, "link", "set", "lo", "up"])?;
    if n.router {
        sysctl(&name, "net.ipv4.ip_forward", "1")?;
        // ECMP (fat-tree) hashes on the 5-tuple, so a host's flows and paths spread, with its
        // own seed per router. Policy 3 (custom fields: addresses, protocol, ports), not 1:
        // policy 1 reuses the hash a TCP socket stamped on the skb, which veth keeps, so every
        // hop would repeat the first hop's choice (hash polarization: the flows an edge sends
        // to its first aggregation switch all take that switch's first core, too). Seeds need
        // kernel >= 6.11.
        sysctl(&name, "net.ipv4.fib_multipath_hash_policy", "3")?;
        sysctl(&name, "net.ipv4.fib_multipath_hash_fields", "0x0037")?;
        let seed = (0x9e37_79b9u32.wrapping_mul(nss.names.len() as u32 + 1)).to_string();
        if sysctl(&name, "net.ipv4.fib_multipath_hash_seed", &seed).is_err() {
            eprintln!("note: net.ipv4.fib_multipath_hash_seed unavailable (kernel < 6.11): ECMP hops share one hash seed");
        }
    } else {
        sysctl(&name, "net.ipv4.tcp_ecn", "1")?;
        sysctl(&name, "net.mptcp.enabled", "1")?;
    }
    sysctl(&name, "net.ipv4.conf.all.rp_filter", "0")?;
    sysctl(&name, "net.ipv4.conf.default.rp_filter", "0")
}

/// Link `l` as a veth pair between its two namespaces, with its addresses, up.
fn add_link(nss: &Namespaces, net: &Net, l: &Link, sender_offload: bool) -> Result<()> {
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
    Ok(())
}

/// Route `r`: one next hop, or one multipath route over every equal-cost next hop (ECMP).
fn add_route(nss: &Namespaces, r: &Route) -> Result<()> {
    let ns = nss.ns(r.node);
    let dst = format!("{}/24", r.dst);
    if r.more.is_empty() {
        return run(
            "ip",
            &["-n", ns, "route", "add", &dst, "via", &r.via.to_string(), "dev", &r.dev],
        )
        .map(|_| ());
    }
    let mut args: Vec<String> =
        ["-n", ns, "route", "add", &dst].iter().map(|s| s.to_string()).collect();
    for (via, dev) in std::iter::once((r.via, r.dev.clone())).chain(r.more.iter().cloned()) {
        args.extend(["nexthop".into(), "via".into(), via.to_string(), "dev".into(), dev]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run("ip", &args).map(|_| ())
}

/// Host `n`'s source-address policy routing when it has several interfaces, so that a packet
/// from an address leaves through that address's interface (one path per address): a table
/// per interface, and a rule per address that selects it.
fn add_source_routing(nss: &Namespaces, net: &Net, n: usize) -> Result<()> {
    let ends = net.ends_of(n);
    if ends.len() < 2 {
        return Ok(());
    }
    let ns = nss.ns(n);
    for (i, (l, e)) in ends.iter().enumerate() {
        let table = (100 + i).to_string();
        let subnet = format!("{}/24", l.subnet);
        run("ip", &["-n", ns, "route", "add", &subnet, "dev", &e.dev, "table", &table])?;
        let other = if l.a.node == n { &l.b } else { &l.a };
        if net.nodes[other.node].router {
            let via = other.addrs[0].to_string();
            let default = ["route", "add", "default", "via", &via, "dev", &e.dev, "table", &table];
            run("ip", &[&["-n", ns][..], &default[..]].concat())?;
        }
        for a in &e.addrs {
            let rule = ["rule", "add", "from", &a.to_string(), "table", &table, "priority", "100"];
            run("ip", &[&["-n", ns][..], &rule[..]].concat())?;
        }
    }
    Ok(())
}

/// The interface index of `dev` inside namespace `ns`.
pub fn ifindex(ns: &str, dev: &str) -> Result<u32> {
    let out = run("ip", &["-n", ns, "-o", "link", "show", "dev", dev])?;
    let idx = out.split(':').next().unwrap_or("").trim();
    idx.parse().with_context(|| format!("parsing ifindex of {dev} in {ns}: {out}"))
}
