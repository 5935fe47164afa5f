//! Burst sources (`kind = "bursts"` workloads) on the simulated network: during each on period
//! ([`mpquic_scenario::bursts`]) the source host sends a datagram every packet time at the
//! written rate into its egress, whatever becomes of it; nothing answers. The datagrams are
//! Not-ECT, so queues drop them when full and never mark them; the receiving host counts them
//! and discards them (no endpoint listens on their port).

use std::net::{IpAddr, SocketAddr};

use bytes::BytesMut;
use mpquic_scenario::bursts::BurstSource;
use mpquic_scenario::metrics::BurstOutcome;

use crate::net::{Packet, Ps, WIRE_OVERHEAD};

/// The first port of burst datagrams, at both ends: above every flow's (clients from 10000,
/// servers from 30000, at most `MAX_FLOWS` = 20000 each), so no endpoint receives them.
const FIRST_PORT: u16 = 50_000;

/// The most burst sources a run may have: one port each.
pub const MAX_BURSTS: usize = (u16::MAX - FIRST_PORT) as usize + 1;

/// One burst source while the run goes.
#[derive(Debug)]
pub struct Burst {
    /// The sending host's node.
    pub node: usize,
    /// Where its datagrams come from and go to.
    src: SocketAddr,
    dst: SocketAddr,
    /// UDP payload per datagram.
    payload: usize,
    /// Time between datagrams while on: one datagram's wire bits at the rate.
    gap: Ps,
    /// The on periods, and the one it is in or waits for.
    on: Vec<(Ps, Ps)>,
    period: usize,
    /// Its counters (`on_s` filled at the end, [`Burst::outcome`]).
    counts: BurstOutcome,
}

impl Burst {
    /// Source number `index` of the run, from host `node`'s address `src` to `dst`; `link`
    /// names the direction that delivers to `dst`.
    pub fn new(
        index: usize,
        source: &BurstSource,
        node: usize,
        (src, dst): (IpAddr, IpAddr),
        link: Option<String>,
    ) -> Burst {
        let port = FIRST_PORT + index as u16;
        let payload = source.payload as usize;
        let bits = (payload + WIRE_OVERHEAD) as u128 * 8;
        Burst {
            node,
            src: SocketAddr::new(src, port),
            dst: SocketAddr::new(dst, port),
            payload,
            gap: (bits * 1_000_000_000_000).div_ceil(u128::from(source.rate.0)) as Ps,
            on: source.on.clone(),
            period: 0,
            counts: BurstOutcome { name: source.name.clone(), link, ..BurstOutcome::default() },
        }
    }

    /// The port its datagrams are sent to.
    pub fn port(&self) -> u16 {
        self.dst.port()
    }

    /// When its first datagram goes, if it is ever on.
    pub fn first(&self) -> Option<Ps> {
        self.on.first().map(|&(begin, _)| begin)
    }

    /// The datagram it sends at `now`, and when the next one goes: a gap later while the period
    /// lasts, else at the next period's start.
    pub fn emit(&mut self, now: Ps) -> (Packet, Option<Ps>) {
        let packet = Packet {
            src: self.src,
            dst: self.dst,
            ecn: None,
            data: BytesMut::zeroed(self.payload),
        };
        self.counts.sent_packets += 1;
        self.counts.sent_bytes += packet.wire_bytes() as u64;
        let next = now + self.gap;
        if next < self.on[self.period].1 {
            return (packet, Some(next));
        }
        self.period += 1;
        (packet, self.on.get(self.period).map(|&(begin, _)| begin))
    }

    /// One of its datagrams reached the receiver.
    pub fn delivered(&mut self, packet: &Packet) {
        self.counts.delivered_packets += 1;
        self.counts.delivered_bytes += packet.wire_bytes() as u64;
    }

    /// What it did in a run that ended at `end`.
    pub fn outcome(&self, end: Ps) -> BurstOutcome {
        let on: Ps = self.on.iter().map(|&(b, e)| e.min(end).saturating_sub(b)).sum();
        BurstOutcome { on_s: on as f64 / 1e12, ..self.counts.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_scenario::Rate;

    /// At 50 Mbit/s a 1428-byte datagram takes 228.48 us: a 1 ms period holds 5 of them (0 to
    /// 913.92 us), and the next goes at the next period's start; after the last, none.
    #[test]
    fn datagrams_go_a_packet_time_apart_within_each_period() {
        let source = BurstSource {
            name: "b".into(),
            from: "x".into(),
            to: "y".into(),
            from_addr: 0,
            to_addr: 0,
            rate: Rate(50_000_000),
            payload: 1400,
            on: vec![(0, 1_000_000_000), (5_000_000_000, 5_100_000_000)],
        };
        let ips = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut b = Burst::new(0, &source, 0, ips, None);
        let mut times = vec![b.first().unwrap()];
        while let (p, Some(next)) = b.emit(*times.last().unwrap()) {
            assert_eq!((p.ecn, p.wire_bytes(), p.dst.port()), (None, 1428, 50_000));
            times.push(next);
        }
        let us: Vec<f64> = times.iter().map(|&t| t as f64 / 1e6).collect();
        assert_eq!(us, [0.0, 228.48, 456.96, 685.44, 913.92, 5000.0]);
        let out = b.outcome(5_050_000_000);
        assert_eq!((out.sent_packets, out.sent_bytes, out.on_s), (6, 6 * 1428, 1.05e-3));
    }
}
