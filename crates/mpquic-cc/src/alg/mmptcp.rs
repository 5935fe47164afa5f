//! MMPTCP (mmptcp-paper.txt, section 2): packet scatter under one congestion window, then
//! MPTCP.
//!
//! - Phase 1, packet scatter: one Reno window `W` for the whole connection (slow start
//!   `W += acked`, then `W += MSS * acked / W`; halved once per round on loss or CE, never below
//!   2 packets). `W` is spread over the paths in pairs of whole packets: of its
//!   `P = floor(W / MSS)` packets, the `P / 2` pairs go `P / 2 / n` to each of the `n` paths and
//!   the pairs left over one each to the first paths, and an odd packet to the first path; so
//!   the paths together hold at most `W`, a path that gets data gets at least 2 packets, and a
//!   path may get none while `W` is small.
//! - The switch, as the paper's two strategies: "Data Volume", once the connection has sent
//!   `switch_bytes` (default 100 KB); and, with `switch_on_congestion`, "Congestion Event":
//!   "when congestion is first inferred (i.e. when fast retransmission or an RTO is
//!   triggered)", here QUIC's loss detection (a declared loss or persistent congestion). A CE
//!   mark does not switch.
//! - Phase 2: "MMPTCP initiates a number of sub-flows and data transport is governed by MPTCP's
//!   congestion control". Every path starts as a new LIA subflow ([`lia_increase`], halving on
//!   loss or CE): the initial window, slow start, nothing inherited from `W`.
//!
//! Readings:
//! - "Once per round" for the connection window: a reaction closes the gate of every path
//!   (each records its own next unsent packet number), so a signal about any packet sent
//!   before the cut is ignored, as with one packet-number space.
//! - CE halves `W` like a loss: the paper's single window is a TCP window, and TCP with ECN
//!   (RFC 3168) halves on ECE.
//! - The paper scatters by randomizing source ports under ECMP; here the paths are the QUIC
//!   paths the connection already has, and the packets are dealt out evenly rather than at
//!   random, in pairs: the paper's PS flow is one TCP connection with one delayed-ACK state
//!   (every second packet of the flow is acknowledged at once, whatever its path), while a
//!   QUIC receiver acknowledges every second packet *of each path*, or after its
//!   `max_ack_delay` (25 ms by default). A path dealt a single packet would wait that delay
//!   for its ACK, every round; a pair is acknowledged at once, as the paper's flow is. A packet is the largest MSS among the paths, so every path's share holds whole
//!   packets of its own MSS. The 2-packet floor is applied to `W` when it is spread (as well as
//!   at a cut), so a larger MSS learnt later cannot leave every path without a packet.
//! - The paper's phase-2 subflows are new connections beside the PS flow, which "is
//!   deactivated when its window gets emptied". Here the subflows are the same QUIC paths: at
//!   the switch each path closes its once-per-round gate, so ACKs, losses and CE marks of
//!   packets sent in phase 1 (the PS flow's) neither grow nor cut the new subflow, but those
//!   packets still count against the path's new window until they leave the network.
//! - At a congestion switch the connection first reacts (halves `W`; the notices say so),
//!   then switches; the subflows start at the initial window whatever `W` became.
//! - In the scatter phase, `WindowReduced` and `SlowStartExited` notices carry the connection
//!   window `W` (on the path whose signal caused them); snapshots show each path's share of `W`
//!   as its window and the connection's threshold as its ssthresh.
//! - Paths added in phase 2 start like any LIA path (initial window, slow start).
//!
//! Dealing single packets stalled short flows in the simulator's E6 (docs/results/E6-sim.md):
//! with `W` at a few packets over 4-8 paths, most paths held one packet and waited 25 ms for
//! each ACK. The pairs are the fix.

use super::lia::lia_increase;
use crate::coupled::{
    initial_window, standard_ack, standard_congestion, Algorithm, Core, Coupling, Slot, MAX_WINDOW,
};
use crate::{ConnectionSnapshot, ControllerKind, MmptcpConfig, Notice, ReductionCause};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// One window for the connection.
    Scatter { w: f64, ssthresh: f64 },
    /// LIA per path.
    Multipath,
}

/// MMPTCP's connection-level state.
#[derive(Debug, Clone)]
pub(crate) struct Mmptcp {
    cfg: MmptcpConfig,
    phase: Phase,
    sent_bytes: u64,
}

/// The packet size `W` is counted in: the largest MSS among the paths, so that a share of `k`
/// packets holds `k` packets of any path's own MSS.
fn scatter_packet(core: &Core<()>) -> u64 {
    core.paths().map(|p| p.mss()).max().unwrap_or(1)
}

/// Path `i`'s share of `w`, in bytes: whole packets dealt out evenly in pairs, the pairs left
/// over one each to the first paths, and an odd packet to path 0. A path that gets data gets at
/// least 2 packets, so its receiver acknowledges them at once (a QUIC receiver acknowledges
/// every second packet of a path, or after its `max_ack_delay`).
fn scatter_share(core: &Core<()>, w: f64, s: Slot) -> u64 {
    let packet = scatter_packet(core);
    let packets = (w / packet as f64).floor().max(2.0) as u64;
    let (pairs, odd) = (packets / 2, packets % 2);
    let n = core.slots().len() as u64;
    let i = s.position();
    let share = 2 * (pairs / n + u64::from((i as u64) < pairs % n)) + u64::from(i == 0) * odd;
    share * packet
}

impl Mmptcp {
    pub(crate) fn new(cfg: MmptcpConfig) -> Self {
        // W starts as soon as the first path says what its MSS is.
        Mmptcp { cfg, phase: Phase::Scatter { w: 0.0, ssthresh: f64::INFINITY }, sent_bytes: 0 }
    }

    fn switch(&mut self, core: &mut Core<()>) {
        let Phase::Scatter { w, .. } = self.phase else { return };
        self.phase = Phase::Multipath;
        for s in core.slots() {
            // A new subflow: initial window, slow start, and the PS flow's packets in flight
            // are not its own (see the readings).
            core.set_ssthresh(s, f64::INFINITY);
            let initial = initial_window(core.path(s).mss());
            core.set_window(s, initial);
            core.close_gate(s);
        }
        core.set_coupling(Coupling::Rates);
        core.notify(Notice::PhaseSwitched { window: w as u64, sent_bytes: self.sent_bytes });
    }
}

impl Algorithm for Mmptcp {
    type Path = ();

    fn name(&self) -> &'static str {
        ControllerKind::Mmptcp.name()
    }

    fn ca_increase(&self, core: &Core<()>, s: Slot, bytes: u64) -> f64 {
        lia_increase(core, s, bytes)
    }

    fn on_path_added(&mut self, core: &mut Core<()>, s: Slot) {
        if let Phase::Scatter { w, .. } = &mut self.phase {
            if *w == 0.0 {
                *w = initial_window(core.path(s).mss());
            }
        }
    }

    fn on_sent(&mut self, core: &mut Core<()>, _path: Slot, bytes: u64) {
        if let Phase::Scatter { .. } = self.phase {
            self.sent_bytes = self.sent_bytes.saturating_add(bytes);
            if self.sent_bytes >= self.cfg.switch_bytes {
                self.switch(core);
            }
        }
    }

    fn on_ack(&mut self, core: &mut Core<()>, s: Slot, bytes: u64) {
        match &mut self.phase {
            Phase::Scatter { w, ssthresh } => {
                let inc = if *w < *ssthresh {
                    bytes as f64
                } else {
                    super::reno::reno_step(core.path(s).mss_f(), bytes, *w)
                };
                *w = (*w + inc).min(MAX_WINDOW);
            }
            Phase::Multipath => standard_ack(self, core, s, bytes),
        }
    }

    fn on_congestion(&mut self, core: &mut Core<()>, s: Slot, cause: ReductionCause) {
        let Phase::Scatter { w, ssthresh } = &mut self.phase else {
            return standard_congestion(self, core, s, cause);
        };
        let (from, was_slow_start) = (*w, *w < *ssthresh);
        let floor = 2.0 * scatter_packet(core) as f64;
        if cause == ReductionCause::PersistentCongestion {
            *ssthresh = (*w / 2.0).max(floor);
            *w = floor;
        } else {
            *w = (*w / 2.0).max(floor);
            *ssthresh = *w;
        }
        let (to, left_slow_start) = (*w, was_slow_start && *w >= *ssthresh);
        for k in core.slots() {
            core.close_gate(k);
        }
        core.record_reaction(s, cause);
        core.report_reduction(s, from, to, cause, left_slow_start);
        // The paper's congestion event is a fast retransmission or an RTO: a loss, not a mark.
        if self.cfg.switch_on_congestion && cause != ReductionCause::Ecn {
            self.switch(core);
        }
    }

    fn window(&self, core: &Core<()>, s: Slot) -> u64 {
        match self.phase {
            Phase::Scatter { w, .. } => scatter_share(core, w, s),
            Phase::Multipath => core.path(s).window(),
        }
    }

    fn slow_start_view(&self, core: &Core<()>, s: Slot) -> (Option<u64>, bool) {
        match self.phase {
            Phase::Scatter { w, ssthresh } => {
                (ssthresh.is_finite().then_some(ssthresh as u64), w < ssthresh)
            }
            Phase::Multipath => {
                let p = core.path(s);
                (p.ssthresh().is_finite().then_some(p.ssthresh() as u64), p.in_slow_start())
            }
        }
    }

    fn fill_snapshot(&self, snapshot: &mut ConnectionSnapshot) {
        snapshot.mode = Some(match self.phase {
            Phase::Scatter { .. } => "scatter",
            Phase::Multipath => "multipath",
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::{Mmptcp, Phase};
    use crate::coupled::Coupled;
    use crate::properties::{apply, op, Op};
    use crate::testkit::Driver;
    use crate::{Controller, MmptcpConfig, Notice, PathId};

    fn mmptcp(cfg: MmptcpConfig, paths: u32) -> Driver<Coupled<Mmptcp>> {
        let mut d = Driver::with(Coupled::new(Mmptcp::new(cfg)));
        for id in 0..paths {
            d.add_path(id);
        }
        d
    }

    fn windows(d: &Driver<Coupled<Mmptcp>>, paths: u32) -> Vec<u64> {
        (0..paths).map(|id| d.window(id)).collect()
    }

    /// "Packets are randomly scattered in the network under a single TCP congestion window":
    /// the paths' windows are `W`'s whole packets dealt out, never more than `W` in all.
    #[test]
    fn one_window_dealt_out_in_whole_packets() {
        let mut d = mmptcp(MmptcpConfig::default(), 4);
        assert_eq!(d.snapshot().mode, Some("scatter"));
        // W = RFC 9002's initial window, 10 packets of 1200, 5 pairs: 1 each, the pair left
        // over to path 0.
        assert_eq!(windows(&d, 4), vec![4_800, 2_400, 2_400, 2_400]);
        // ACKs on any path grow the one window (TCP slow start: W += acked): 10 + 36 = 46
        // packets, 23 pairs: 5 each and 3 left over.
        d.send(2, 40);
        d.ack(2, 36, 0);
        assert_eq!(windows(&d, 4), vec![14_400, 14_400, 14_400, 12_000]);
        // A CE on another path halves the one TCP window once (RFC 3168): the frame's ACK first
        // makes W 47 packets (56400), the CE halves it to 28200, 23 whole packets: 11 pairs (2
        // each and 3 left over) and an odd packet for path 0. The threshold is the connection's.
        d.send(1, 1);
        d.ack(1, 1, 1);
        assert_eq!(windows(&d, 4), vec![8_400, 7_200, 7_200, 4_800]);
        let snap = d.snapshot();
        assert!(snap.paths.iter().all(|p| p.ssthresh == Some(28_200) && !p.in_slow_start));
        // The same round on any path: no second cut. Path 2 loses a packet sent before the cut,
        // path 1 reports more CE before anything sent after the cut is acknowledged.
        d.send(3, 1);
        d.lose(2, 1);
        d.ack(1, 0, 1);
        assert_eq!(d.cc.alg.phase, Phase::Scatter { w: 28_200.0, ssthresh: 28_200.0 });
        // Congestion avoidance (Reno): W += MSS * acked / W, from an ACK on yet another path.
        d.ack(3, 1, 0);
        let w = 28_200.0 + 1200.0 * 1200.0 / 28_200.0;
        assert_eq!(d.cc.alg.phase, Phase::Scatter { w, ssthresh: 28_200.0 });
        // Still 23 whole packets: a path added later takes part of them (11 pairs: 2 each, 1
        // left over; the odd packet to path 0), and a removed path's part goes back to the
        // others.
        d.add_path(4);
        assert_eq!(windows(&d, 5), vec![8_400, 4_800, 4_800, 4_800, 4_800]);
        d.remove_path(0);
        assert_eq!((1..5).map(|id| d.window(id)).sum::<u64>(), 23 * 1200);
        // The floor is W's (2 packets), not each path's: at it, one path holds both (its
        // receiver acknowledges them at once) and three hold none.
        for _ in 0..10 {
            d.round(1, 1, 1);
        }
        assert_eq!((1..5).map(|id| d.window(id)).collect::<Vec<_>>(), vec![2_400, 0, 0, 0]);
    }

    /// "MMPTCP initiates a number of sub-flows and data transport is governed by MPTCP's
    /// congestion control": each path starts as a new LIA subflow, at the initial window in
    /// slow start, whatever `W` was.
    #[test]
    fn switches_at_switch_bytes_to_new_lia_subflows() {
        let cfg = MmptcpConfig { switch_bytes: 30_000, ..Default::default() };
        let mut d = mmptcp(cfg, 3);
        d.set_rtt(1, Duration::from_micros(300));
        d.send(0, 12); // 14400 bytes sent
        d.ack(0, 12, 0); // W = 12000 + 14400 = 26400 (slow start)
        d.send(1, 12); // 28800 bytes
        assert_eq!(d.snapshot().mode, Some("scatter"));
        d.send(2, 1); // 30000 bytes: "when a certain amount of data has been transmitted"
        let snap = d.snapshot();
        assert_eq!(snap.mode, Some("multipath"));
        // RFC 9002's initial window for MSS 1200: min(10 * 1200, max(14720, 2400)).
        assert_eq!(windows(&d, 3), vec![12_000; 3]);
        assert!(snap.paths.iter().all(|p| p.in_slow_start && p.ssthresh.is_none()));
        assert!(d.drain().contains(&Notice::PhaseSwitched { window: 26_400, sent_bytes: 30_000 }));
        // The 12 packets path 1 sent in phase 1 belong to the PS flow: their ACKs and CE marks
        // neither grow nor cut the new subflow.
        d.ack(1, 12, 1);
        assert_eq!(windows(&d, 3), vec![12_000; 3]);
        // Packets of the subflow's own: slow start (w += acked), then a frame whose ACK grows
        // the window to 14400 before its CE halves this path only, then LIA's coupled
        // increase, computed on a copy of the state.
        d.send(1, 2);
        d.ack(1, 1, 0);
        assert_eq!(d.window(1), 13_200);
        d.ack(1, 1, 1);
        assert_eq!(windows(&d, 3), vec![12_000, 7_200, 12_000]);
        d.send(1, 1);
        let mut expect = d.cc.core.clone();
        let s1 = expect.slot(crate::PathId(1)).unwrap();
        let inc = crate::alg::lia::lia_increase(&expect, s1, 1200);
        expect.grow(s1, inc);
        d.ack(1, 1, 0);
        assert!(d.cwnd(1) > 7_200.0);
        assert_eq!(d.cwnd(1), expect.path(s1).cwnd());
    }

    /// A switch after `W` left slow start still starts fresh subflows: nothing of `W`'s
    /// threshold is inherited.
    #[test]
    fn switch_after_congestion_avoidance_starts_in_slow_start() {
        let cfg = MmptcpConfig { switch_bytes: 20 * 1200, ..Default::default() };
        let mut d = mmptcp(cfg, 2);
        d.send(0, 10);
        d.ack(0, 10, 1); // W: 24000 then halved to 12000, congestion avoidance
        d.send(1, 10); // 20 packets sent: switch
        assert_eq!(windows(&d, 2), vec![12_000, 12_000]);
        let snap = d.snapshot();
        assert!(snap.paths.iter().all(|p| p.in_slow_start && p.ssthresh.is_none()));
    }

    /// "Congestion Event: Switching occurs when congestion is first inferred (i.e. when fast
    /// retransmission or an RTO is triggered)": a loss switches, a CE mark does not.
    #[test]
    fn switch_on_first_loss_when_asked() {
        let cfg = MmptcpConfig { switch_on_congestion: true, ..Default::default() };
        let mut d = mmptcp(cfg, 2);
        d.send(0, 10);
        d.ack(0, 10, 0); // W 24000
        d.send(0, 1);
        d.ack(0, 1, 1); // a mark halves W (25200 -> 12600) but is not a congestion event
        assert_eq!(d.snapshot().mode, Some("scatter"));
        d.send(1, 2);
        d.ack(1, 1, 0); // passes the gate of the cut above
        d.lose(1, 1);
        assert_eq!(d.snapshot().mode, Some("multipath"));
        assert_eq!(windows(&d, 2), vec![12_000, 12_000]);
        // Without the option the same loss does not switch.
        let mut d = mmptcp(MmptcpConfig::default(), 2);
        d.send(1, 2);
        d.lose(1, 1);
        assert_eq!(d.snapshot().mode, Some("scatter"));
        assert!(d.cc.may_send(PathId(0)));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// In the scatter phase the paths together never hold more than the one window `W`
        /// (its 2-packet floor included), plus one packet of rounding, and a path that gets data
        /// gets at least a pair of packets.
        #[test]
        fn scatter_total_never_exceeds_w(ops in prop::collection::vec(op(6), 1..300)) {
            // A switch volume no structured step reaches: the script runs in the scatter phase.
            let cfg = MmptcpConfig { switch_bytes: u64::MAX, ..Default::default() };
            let mut d = Driver::with(Coupled::new(Mmptcp::new(cfg)));
            let mut live = vec![None; 6];
            apply(&mut d, &mut live, &Op::Add { path: 0, mss: 1200 });
            for op in &ops {
                apply(&mut d, &mut live, op);
                // Only a raw PacketSent of some 2^64 bytes reaches the switch volume.
                let Phase::Scatter { w, .. } = d.cc.alg.phase else { break };
                let snap = d.snapshot();
                let Some(packet) = d.cc.core().paths().map(|p| p.mss()).max() else { continue };
                let total: u64 = snap.paths.iter().map(|p| p.window).sum();
                let w = w.max(2.0 * packet as f64);
                prop_assert!(total as f64 <= w + packet as f64, "total {} > W {}", total, w);
                // At least the floor's 2 packets are out, so some path can always send.
                prop_assert!(total >= 2 * packet, "total {} < 2 * {}", total, packet);
                let single = snap.paths.iter().find(|p| p.window > 0 && p.window < 2 * packet);
                prop_assert!(single.is_none(), "a path holds one packet: {:?}", single);
            }
        }
    }
}
