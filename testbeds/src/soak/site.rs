//! Where the soak runs: four routed paths between two namespaces (s, the clients; d, the
//! server), each path's last link faultable, or loopback, where nothing can fail on its own.

use crate::fault::{Egress, LinkFault};
use crate::netns::{self, Namespaces};
use crate::plan::Topology;
use crate::topology::{self, Net};
use anyhow::{Context, Result};
use std::net::{Ipv4Addr, SocketAddr};

/// Namespaces are `mqtb-<pid>-soak-<node>`.
const NODE_TAG: &str = "soak-";
/// Paths between the clients and the server.
pub const PATHS: usize = 4;

pub struct Site {
    /// The namespaces (none on loopback), removed on drop.
    nss: Option<Namespaces>,
    client_ns: Option<String>,
    server_ns: Option<String>,
    /// Per path: (client address, server address).
    pub pairs: Vec<(Ipv4Addr, Ipv4Addr)>,
    /// Per path: its last link (r -> d and d -> r), unshaped; empty on loopback.
    pub faults: Vec<LinkFault>,
    pub port: u16,
}

impl Site {
    /// The namespaces: s -> r1..r4 -> d, unshaped veths (the soak is about churn, not queues).
    pub fn netns(run_id: u32) -> Result<Site> {
        let mut net = topology::build(&Topology::MultiPath {
            paths: PATHS,
            addrs_per_link: 1,
            cross_hosts: false,
        });
        let (s, d) = (net.node("s").context("no s")?, net.node("d").context("no d")?);
        for n in &mut net.nodes {
            n.name = format!("{NODE_TAG}{}", n.name);
        }
        let nss = netns::setup(&net, run_id, false)?;
        let pairs = net.path_pairs(s, d);
        let faults: Result<Vec<_>> =
            pairs.iter().map(|&(_, server)| last_link(&net, &nss, d, server)).collect();
        Ok(Site {
            client_ns: Some(nss.ns(s).to_string()),
            server_ns: Some(nss.ns(d).to_string()),
            nss: Some(nss),
            pairs,
            faults: faults?,
            port: 4433,
        })
    }

    /// Loopback: path i from 127.0.0.(10 + i) to 127.0.1.(10 + i), on a free port.
    pub fn loopback() -> Result<Site> {
        let pairs = (0..PATHS as u8)
            .map(|i| (Ipv4Addr::new(127, 0, 0, 10 + i), Ipv4Addr::new(127, 0, 1, 10 + i)))
            .collect();
        let port = std::net::UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port();
        Ok(Site { nss: None, client_ns: None, server_ns: None, pairs, faults: Vec::new(), port })
    }

    pub fn client_ns(&self) -> Option<&str> {
        self.client_ns.as_deref()
    }

    pub fn server_ns(&self) -> Option<&str> {
        self.server_ns.as_deref()
    }

    /// Whether paths can be black-holed and made lossy here.
    pub fn faultable(&self) -> bool {
        !self.faults.is_empty()
    }

    pub fn server_addr(&self, path: usize) -> SocketAddr {
        SocketAddr::from((self.pairs[path].1, self.port))
    }

    /// The namespaces' names, for the table.
    pub fn describe(&self) -> String {
        match &self.nss {
            Some(nss) => format!("netns ({})", nss.names.join(", ")),
            None => "loopback".into(),
        }
    }
}

/// Both directions of the link that delivers to `server` on d.
fn last_link(net: &Net, nss: &Namespaces, d: usize, server: Ipv4Addr) -> Result<LinkFault> {
    let link = (net.links.iter())
        .find(|l| l.b.node == d && l.b.addrs.contains(&server))
        .with_context(|| format!("no link delivers to {server}"))?;
    Ok(LinkFault {
        directions: [
            Egress::Plain { ns: nss.ns(link.a.node).into(), dev: link.a.dev.clone() },
            Egress::Plain { ns: nss.ns(d).into(), dev: link.b.dev.clone() },
        ],
    })
}
