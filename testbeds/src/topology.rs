//! Expands a topology kind into nodes, point-to-point links with addresses, routes, and the
//! bottleneck directions. Pure data: nothing here touches the system.

use crate::plan::Topology;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub name: String,
    pub router: bool,
}

/// One end of a link: its node, device name (inside the node's namespace) and addresses.
#[derive(Debug, Clone, Serialize)]
pub struct End {
    pub node: usize,
    pub dev: String,
    pub addrs: Vec<Ipv4Addr>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Link {
    pub id: usize,
    pub a: End,
    pub b: End,
    /// The subnet is 10.<id+1>.0.0/24.
    pub subnet: Ipv4Addr,
    /// Whether the a -> b direction (egress of `a.dev`) is a shaped, marked bottleneck.
    pub bottleneck_a_to_b: bool,
    /// Whether the b -> a direction (egress of `b.dev`) is one too (switch-to-switch links).
    pub bottleneck_b_to_a: bool,
}

/// One shaped, marked link direction: the egress of `from.dev`.
#[derive(Debug, Clone, Copy)]
pub struct Direction<'a> {
    /// Unique per direction: the link id for a -> b, 1000 + the link id for b -> a.
    pub id: usize,
    pub from: &'a End,
    pub to: &'a End,
}

#[derive(Debug, Clone, Serialize)]
pub struct Route {
    pub node: usize,
    pub dst: Ipv4Addr, // a /24
    pub via: Ipv4Addr,
    pub dev: String,
    /// Further equal-cost next hops (ECMP): the route is then multipath over all of them.
    pub more: Vec<(Ipv4Addr, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Net {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub routes: Vec<Route>,
}

impl Net {
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Every shaped, marked link direction.
    pub fn bottlenecks(&self) -> Vec<Direction<'_>> {
        let mut v = Vec::new();
        for l in &self.links {
            if l.bottleneck_a_to_b {
                v.push(Direction { id: l.id, from: &l.a, to: &l.b });
            }
            if l.bottleneck_b_to_a {
                v.push(Direction { id: 1000 + l.id, from: &l.b, to: &l.a });
            }
        }
        v
    }

    /// The node's interfaces: (link, is_a_end).
    pub fn ends_of(&self, node: usize) -> Vec<(&Link, &End)> {
        let mut v = Vec::new();
        for l in &self.links {
            if l.a.node == node {
                v.push((l, &l.a));
            }
            if l.b.node == node {
                v.push((l, &l.b));
            }
        }
        v
    }

    /// Paths between two hosts: (local, remote) address pairs on links that lead to the same
    /// router, i.e. the pairs the routing actually carries over one path. Link-sharing paths
    /// (several addresses per interface) come out as several pairs over one link.
    pub fn path_pairs(&self, from: usize, to: usize) -> Vec<(Ipv4Addr, Ipv4Addr)> {
        let mut pairs = Vec::new();
        for (fl, fe) in self.ends_of(from) {
            let fr = other_end(fl, from).node;
            for (tl, te) in self.ends_of(to) {
                let tr = other_end(tl, to).node;
                let routed = self.nodes[fr].router
                    && self.nodes[tr].router
                    && (fr == tr || self.next_hop(fr, tl.id).is_some());
                if routed {
                    for (i, la) in fe.addrs.iter().enumerate() {
                        let ra = te.addrs[i.min(te.addrs.len() - 1)];
                        pairs.push((*la, ra));
                    }
                }
            }
        }
        pairs
    }

    /// A host's addresses as the scenario language numbers them: with `L` interfaces, address
    /// `i` is the `i / L`-th address of its `i % L`-th interface.
    pub fn host_addrs(&self, node: usize) -> Vec<Ipv4Addr> {
        let ends = self.ends_of(node);
        let per_end = ends.iter().map(|(_, e)| e.addrs.len()).max().unwrap_or(0);
        (0..per_end)
            .flat_map(|j| ends.iter().filter_map(move |(_, e)| e.addrs.get(j)))
            .copied()
            .collect()
    }

    /// A flow's address pairs: the routed pairs (`path_pairs`, in their order, wrapping
    /// around) from the first that leaves from `from`'s address `from_addr` and arrives at
    /// `to`'s address `to_addr`, where 0 leaves that end open (the first routed pair by
    /// default). An error names the addresses when no routed pair joins them.
    pub fn flow_pairs(
        &self,
        from: usize,
        to: usize,
        (from_addr, to_addr): (usize, usize),
    ) -> Result<Vec<(Ipv4Addr, Ipv4Addr)>, String> {
        let pairs = self.path_pairs(from, to);
        let (from_name, to_name) = (&self.nodes[from].name, &self.nodes[to].name);
        if pairs.is_empty() {
            return Err(format!("no path from {from_name} to {to_name}"));
        }
        // Address `i` of a host, or None for 0 (that end left open).
        let address = |node: usize, i: usize| -> Result<Option<Ipv4Addr>, String> {
            if i == 0 {
                return Ok(None);
            }
            let addrs = self.host_addrs(node);
            let name = &self.nodes[node].name;
            let n = addrs.len();
            addrs.get(i).map(|a| Some(*a)).ok_or(format!("{name} has no address {i} (it has {n})"))
        };
        let (local, remote) = (address(from, from_addr)?, address(to, to_addr)?);
        let first = pairs
            .iter()
            .position(|&(l, r)| local.is_none_or(|a| a == l) && remote.is_none_or(|a| a == r))
            .ok_or_else(|| {
                format!(
                    "no routed path from {from_name}'s address {from_addr} to {to_name}'s \
                     address {to_addr}"
                )
            })?;
        Ok(pairs[first..].iter().chain(&pairs[..first]).copied().collect())
    }

    /// The first hop from router `from` toward link `target` (BFS over routers only).
    fn next_hop(&self, from: usize, target: usize) -> Option<(Ipv4Addr, String)> {
        bfs_next_hop(self, from, target)
    }
}

fn other_end(l: &Link, node: usize) -> &End {
    if l.a.node == node {
        &l.b
    } else {
        &l.a
    }
}

fn bfs_next_hop(net: &Net, from: usize, target: usize) -> Option<(Ipv4Addr, String)> {
    let tl = &net.links[target];
    if tl.a.node == from || tl.b.node == from {
        return None; // directly connected
    }
    // BFS over router nodes; remember the first hop.
    let mut seen = vec![false; net.nodes.len()];
    let mut q: VecDeque<(usize, Option<(Ipv4Addr, String)>)> = VecDeque::new();
    seen[from] = true;
    q.push_back((from, None));
    while let Some((n, first)) = q.pop_front() {
        for (l, e) in net.ends_of(n) {
            let o = other_end(l, n);
            if seen[o.node] || !net.nodes[o.node].router {
                continue;
            }
            seen[o.node] = true;
            let hop = first.clone().or_else(|| Some((o.addrs[0], e.dev.clone())));
            if tl.a.node == o.node || tl.b.node == o.node {
                return hop;
            }
            q.push_back((o.node, hop));
        }
    }
    None
}

fn subnet(id: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, (id + 1) as u8, 0, 0)
}

struct Builder {
    nodes: Vec<Node>,
    links: Vec<Link>,
}

impl Builder {
    fn node(&mut self, name: &str, router: bool) -> usize {
        self.nodes.push(Node { name: name.into(), router });
        self.nodes.len() - 1
    }

    /// Link a—b; `a_addrs`/`b_addrs` addresses on each end (host ends may carry several).
    fn link(&mut self, a: usize, b: usize, a_addrs: usize, b_addrs: usize, bottleneck: bool) {
        self.link2(a, b, a_addrs, b_addrs, bottleneck, false);
    }

    /// Like `link`, with the b -> a direction shaped too if `back`.
    fn link2(
        &mut self,
        a: usize,
        b: usize,
        a_addrs: usize,
        b_addrs: usize,
        bottleneck: bool,
        back: bool,
    ) {
        let id = self.links.len();
        let dev_count = |n: usize, links: &[Link]| {
            links.iter().filter(|l| l.a.node == n || l.b.node == n).count()
        };
        let adev = format!("e{}", dev_count(a, &self.links));
        let bdev = format!("e{}", dev_count(b, &self.links));
        let s = subnet(id).octets();
        let addr = |host: u8| Ipv4Addr::new(s[0], s[1], s[2], host);
        let a_list = (0..a_addrs).map(|i| addr(1 + 10 * i as u8)).collect();
        let b_list = (0..b_addrs).map(|i| addr(2 + 10 * i as u8)).collect();
        self.links.push(Link {
            id,
            a: End { node: a, dev: adev, addrs: a_list },
            b: End { node: b, dev: bdev, addrs: b_list },
            subnet: subnet(id),
            bottleneck_a_to_b: bottleneck,
            bottleneck_b_to_a: back,
        });
    }

    fn finish(self) -> Net {
        let mut net = Net { nodes: self.nodes, links: self.links, routes: Vec::new() };
        // Routers: a route to every subnet that is not directly connected.
        let mut routes = Vec::new();
        for n in 0..net.nodes.len() {
            if !net.nodes[n].router {
                continue;
            }
            for l in 0..net.links.len() {
                if let Some((via, dev)) = bfs_next_hop(&net, n, l) {
                    // Equal-cost alternatives: router neighbours one hop closer to the link.
                    let d = hops(&net, n, l);
                    let mut more = Vec::new();
                    for (lk, e) in net.ends_of(n) {
                        let o = other_end(lk, n);
                        if !net.nodes[o.node].router || o.addrs[0] == via {
                            continue;
                        }
                        if let (Some(d), Some(od)) = (d, hops(&net, o.node, l)) {
                            if od + 1 == d {
                                more.push((o.addrs[0], e.dev.clone()));
                            }
                        }
                    }
                    routes.push(Route { node: n, dst: net.links[l].subnet, via, dev, more });
                }
            }
        }
        // Hosts: per destination subnet, the interface whose router reaches it in fewest hops.
        for n in 0..net.nodes.len() {
            if net.nodes[n].router {
                continue;
            }
            let mut best: BTreeMap<usize, (usize, Ipv4Addr, String)> = BTreeMap::new();
            for (l, e) in net.ends_of(n) {
                let r = other_end(l, n);
                if !net.nodes[r.node].router {
                    continue;
                }
                for t in 0..net.links.len() {
                    if net.links[t].a.node == n || net.links[t].b.node == n {
                        continue;
                    }
                    let dist = if net.links[t].a.node == r.node || net.links[t].b.node == r.node {
                        Some(0)
                    } else {
                        hops(&net, r.node, t)
                    };
                    if let Some(d) = dist {
                        let cand = (d, r.addrs[0], e.dev.clone());
                        if best.get(&t).is_none_or(|b| d < b.0) {
                            best.insert(t, cand);
                        }
                    }
                }
            }
            for (t, (_, via, dev)) in best {
                routes.push(Route {
                    node: n,
                    dst: net.links[t].subnet,
                    via,
                    dev,
                    more: Vec::new(),
                });
            }
        }
        net.routes = routes;
        net
    }
}

fn hops(net: &Net, from: usize, target: usize) -> Option<usize> {
    let mut dist = vec![usize::MAX; net.nodes.len()];
    let mut q = VecDeque::new();
    dist[from] = 0;
    q.push_back(from);
    while let Some(n) = q.pop_front() {
        let l = &net.links[target];
        if l.a.node == n || l.b.node == n {
            return Some(dist[n]);
        }
        for (lk, _) in net.ends_of(n) {
            let o = other_end(lk, n).node;
            if dist[o] == usize::MAX && net.nodes[o].router {
                dist[o] = dist[n] + 1;
                q.push_back(o);
            }
        }
    }
    None
}

pub fn build(spec: &Topology) -> Net {
    let mut b = Builder { nodes: Vec::new(), links: Vec::new() };
    match *spec {
        Topology::MultiPath { paths, addrs_per_link, cross_hosts } => {
            let s = b.node("s", false);
            let d = b.node("d", false);
            for i in 1..=paths {
                let r = b.node(&format!("r{i}"), true);
                b.link(s, r, addrs_per_link, 1, false);
                b.link(r, d, 1, addrs_per_link, true);
                if cross_hosts {
                    let c = b.node(&format!("c{i}"), false);
                    b.link(c, r, 1, 1, false);
                }
            }
        }
        Topology::Custom { ref hosts, ref switches, ref links } => {
            let mut id = std::collections::HashMap::new();
            for h in hosts {
                id.insert(h.name.as_str(), b.node(&h.name, false));
            }
            for s in switches {
                id.insert(s.as_str(), b.node(s, true));
            }
            for l in links {
                let (a, z) = (id[l.a.as_str()], id[l.b.as_str()]);
                b.link2(a, z, l.a_addrs, l.b_addrs, l.shape_a_to_b, l.shape_b_to_a);
            }
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_path_has_two_disjoint_pairs_and_two_bottlenecks() {
        let net = build(&Topology::MultiPath { paths: 2, addrs_per_link: 1, cross_hosts: true });
        let s = net.node("s").unwrap();
        let d = net.node("d").unwrap();
        let pairs = net.path_pairs(s, d);
        assert_eq!(pairs.len(), 2);
        assert_ne!(pairs[0].0, pairs[1].0);
        assert_ne!(pairs[0].1, pairs[1].1);
        assert_eq!(net.links.iter().filter(|l| l.bottleneck_a_to_b).count(), 2);
        // The cross host reaches d's address on its own path only.
        let c1 = net.node("c1").unwrap();
        assert_eq!(net.path_pairs(c1, d).len(), 1);
        assert_eq!(net.path_pairs(c1, d)[0].1, pairs[0].1);
    }

    #[test]
    fn link_sharing_gives_several_pairs_per_link() {
        let net = build(&Topology::MultiPath { paths: 2, addrs_per_link: 3, cross_hosts: false });
        let pairs = net.path_pairs(net.node("s").unwrap(), net.node("d").unwrap());
        assert_eq!(pairs.len(), 6);
    }
}
