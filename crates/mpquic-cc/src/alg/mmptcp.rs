//! MMPTCP (mmptcp-paper.txt, section 2): packet scatter under one congestion window, then
//! MPTCP.
//!
//! - Phase 1, packet scatter: one Reno window `W` for the whole connection (slow start
//!   `W += acked`, then `W += MSS * acked / W`; halved once per round on loss or CE, never below
//!   2 packets). `W`'s `P = floor(W / MSS)` whole packets are dealt over the `n` paths as the
//!   parameter `deal` says (`mmptcp:deal=single|pairs`, default `pairs`), so the paths together
//!   hold at most `W`:
//!   - `single`, the paper's scatter: `P / n` packets to each path and the `P % n` left over one
//!     each to paths drawn at random, drawn again at every cut and when `W` grows by a
//!     packet. At 2-3 packets over 4 paths, 2-3 paths hold one packet each.
//!   - `pairs` (a deviation from the paper, see the readings): the `P / 2` pairs go `P / 2 / n`
//!     to each path, the pairs left over one each to the first paths, and an odd packet to the
//!     first path; a path that gets data gets at least 2 packets, and at `P <= 3` every packet
//!     is on path 0.
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
//! - The paper scatters by randomizing source ports under ECMP, each packet on a random path;
//!   here the paths are the QUIC paths the connection already has, and a window caps each
//!   path's packets in flight, so `single` deals the window rather than each packet: evenly,
//!   with only the remainder at random (the paper's per-packet draw would also leave some
//!   paths with more than their share). The draws are a small seeded generator (splitmix64,
//!   no dependency in this pure state machine) stirred with the latest RTT sample of the path
//!   whose ACK or signal caused the new deal: deterministic for a given sequence of events (the
//!   simulator stays so), and different between connections once their RTT samples differ. The
//!   first window's deal, before any sample, is the same for every connection.
//! - `pairs`: the paper's PS flow is one TCP connection with one delayed-ACK state (every
//!   second packet of the flow is acknowledged at once, whatever its path), while a QUIC
//!   receiver acknowledges every second packet *of each path*, or after its `max_ack_delay`
//!   (25 ms by default). A path dealt a single packet waits that delay for its ACK, every
//!   round; a pair is acknowledged at once, as the paper's flow is. Under a data-center ACK
//!   profile (1 ms `max_ack_delay`) that wait is small, which is what the E6 control run
//!   (docs/results/E6-sim.md) measures.
//! - A packet is the largest MSS among the paths, so every path's share holds whole packets of
//!   its own MSS. The 2-packet floor is applied to `W` when it is dealt (as well as at a cut),
//!   so a larger MSS learnt later cannot leave every path without a packet.
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
//! Why `pairs` is the default, measured (docs/results/E6-sim.md, "Control run"): in the
//! simulator's E6 (70 KB short flows among long flows, k = 4 fat-tree, 10 Gbps), single
//! dealing stalls short flows under QUIC's default 25 ms `max_ack_delay` (seed 1: 2 / 24 of 164
//! unfinished at 4 / 8 paths, pairs none; a path holding one packet waits that delay for each
//! ACK), and it stays behind pairs with the data-center ACK profile (1 ms) too, in every seed
//! of 1-3: short-flow mean FCT 0.43-0.94 ms against 0.24-0.27 at 4 paths, 0.55-0.69 against
//! 0.38-0.43 at 8, p99 5.6-10.4 against 0.68-2.2 ms at 4 paths, and 0-2 short flows per run
//! unfinished at 8 paths (pairs: none).

use std::str::FromStr;

use serde::Serialize;

use super::lia::lia_increase;
use crate::builtin::TypedConfig;
use crate::coupled::{
    initial_window, standard_ack, standard_congestion, Algorithm, Core, Coupled, Coupling, Slot,
    MAX_WINDOW,
};
use crate::param::{parameters, Parameter, Parameters, Value};
use crate::{ConnectionSnapshot, ControllerKind, Notice, ReductionCause};
use crate::{Controller, ControllerConfig};

/// How MMPTCP's scatter phase deals its one window over the paths (parameter `deal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dealing {
    /// Single packets at random, as the paper's packet scatter: every path gets the same whole
    /// number of packets and the packets left over go one each to paths drawn at random.
    Single,
    /// Pairs of packets, evenly, the left-over pairs and an odd packet to the first paths (a
    /// deviation from the paper: a pair is acknowledged at once by a QUIC receiver that
    /// acknowledges every second packet of a path).
    Pairs,
}

impl Dealing {
    /// The parameter's value names, as [`ConfigError::BadValue`](crate::ConfigError::BadValue) lists them.
    const NAMES: &'static str = "expected single or pairs";

    /// The value's name on command lines and in results.
    pub fn name(self) -> &'static str {
        match self {
            Dealing::Single => "single",
            Dealing::Pairs => "pairs",
        }
    }
}

impl FromStr for Dealing {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Dealing::Single, Dealing::Pairs].into_iter().find(|d| d.name() == s).ok_or(())
    }
}

impl Value for Dealing {
    fn read(text: &str) -> Result<Self, &'static str> {
        Dealing::from_str(text).map_err(|()| Dealing::NAMES)
    }
    fn written(self) -> String {
        self.name().to_owned()
    }
}

/// MMPTCP parameters (MMPTCP paper).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MmptcpConfig {
    /// Bytes sent in packet-scatter phase before switching to per-path windows. At least 1.
    pub switch_bytes: u64,
    /// Also switch at the first congestion event: a loss (the paper's fast retransmission or RTO;
    /// a CE mark is not one).
    pub switch_on_congestion: bool,
    /// How the scatter phase's window is dealt over the paths.
    pub deal: Dealing,
}

impl Default for MmptcpConfig {
    fn default() -> Self {
        MmptcpConfig { switch_bytes: 100_000, switch_on_congestion: false, deal: Dealing::Pairs }
    }
}

impl TypedConfig for MmptcpConfig {
    const PARAMETERS: Parameters<Self> = parameters![
        Parameter::positive("switch_bytes", |c| &mut c.switch_bytes),
        Parameter::new("switch_on_congestion", |c| &mut c.switch_on_congestion),
        Parameter::new("deal", |c| &mut c.deal),
    ];

    const VARIANT: fn(Self) -> ControllerConfig = ControllerConfig::Mmptcp;

    fn build(&self) -> Box<dyn Controller> {
        Box::new(Coupled::new(Mmptcp::new(*self)))
    }
}

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
    /// `single` dealing: the random draw that orders the paths for the packets left over.
    draw: u64,
    /// The generator's state `draw` comes from.
    rng: u64,
    /// `single` dealing: the packet count of the window last drawn for.
    drawn_for: u64,
}

/// The packet size `W` is counted in: the largest MSS among the paths, so that a share of `k`
/// packets holds `k` packets of any path's own MSS.
fn scatter_packet(core: &Core<()>) -> u64 {
    core.paths().map(|p| p.mss()).max().unwrap_or(1)
}

/// The whole packets of `packet` bytes that `w` deals out, at least the floor's 2.
fn scatter_packets(w: f64, packet: u64) -> u64 {
    (w / packet as f64).floor().max(2.0) as u64
}

/// Path `s`'s share of `w`, in bytes: whole packets dealt out evenly in pairs, the pairs left
/// over one each to the first paths, and an odd packet to path 0. A path that gets data gets at
/// least 2 packets, so its receiver acknowledges them at once (a QUIC receiver acknowledges
/// every second packet of a path, or after its `max_ack_delay`).
fn pairs_share(core: &Core<()>, w: f64, s: Slot) -> u64 {
    let packet = scatter_packet(core);
    let packets = scatter_packets(w, packet);
    let (pairs, odd) = (packets / 2, packets % 2);
    let n = core.slots().len() as u64;
    let i = s.position();
    let share = 2 * (pairs / n + u64::from((i as u64) < pairs % n)) + u64::from(i == 0) * odd;
    share * packet
}

/// Path `s`'s share of `w`, in bytes: whole packets dealt out evenly one at a time, the packets
/// left over one each to the first paths in the random order `draw` puts them in.
fn single_share(core: &Core<()>, w: f64, s: Slot, draw: u64) -> u64 {
    let packet = scatter_packet(core);
    let packets = scatter_packets(w, packet);
    let n = core.slots().len();
    let left_over = u64::from(random_rank(draw, s.position(), n) < packets % n as u64);
    (packets / n as u64 + left_over) * packet
}

/// Path `i`'s place among `n` paths in the random order `draw` gives them: how many paths'
/// keys sort below its own. Computed where it is needed so that a window lookup allocates
/// nothing; the keys are distinct because `mix` is a bijection.
fn random_rank(draw: u64, i: usize, n: usize) -> u64 {
    let key = |j: usize| mix(draw ^ j as u64);
    let own = key(i);
    (0..n).filter(|&j| key(j) < own).count() as u64
}

/// splitmix64's output function: a bijection of `u64` that scatters nearby inputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Mmptcp {
    pub(crate) fn new(cfg: MmptcpConfig) -> Self {
        // W starts as soon as the first path says what its MSS is.
        let phase = Phase::Scatter { w: 0.0, ssthresh: f64::INFINITY };
        Mmptcp { cfg, phase, sent_bytes: 0, draw: mix(0), rng: 0, drawn_for: 0 }
    }

    /// A new random order of the paths for `single` dealing, from the generator stirred with
    /// path `s`'s latest RTT sample (see the readings).
    fn draw_again(&mut self, core: &Core<()>, s: Slot) {
        let sample = core.path(s).latest_rtt().as_nanos() as u64;
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ sample;
        self.draw = mix(self.rng);
    }

    /// After `W` grew: `single` dealing draws again when `W` holds a new number of packets.
    fn redeal_if_grown(&mut self, core: &Core<()>, s: Slot) {
        let Phase::Scatter { w, .. } = self.phase else { return };
        let packets = scatter_packets(w, scatter_packet(core));
        if self.cfg.deal == Dealing::Single && packets != self.drawn_for {
            self.drawn_for = packets;
            self.draw_again(core, s);
        }
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
                self.redeal_if_grown(core, s);
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
        // A cut is a new window: dealt afresh even when its packet count is unchanged (at the
        // floor), so that a window stuck at a few packets still moves over the paths.
        self.drawn_for = scatter_packets(to, scatter_packet(core));
        self.draw_again(core, s);
        // The paper's congestion event is a fast retransmission or an RTO: a loss, not a mark.
        if self.cfg.switch_on_congestion && cause != ReductionCause::Ecn {
            self.switch(core);
        }
    }

    fn window(&self, core: &Core<()>, s: Slot) -> u64 {
        match self.phase {
            Phase::Scatter { w, .. } => match self.cfg.deal {
                Dealing::Single => single_share(core, w, s, self.draw),
                Dealing::Pairs => pairs_share(core, w, s),
            },
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
    use crate::{Controller, Dealing, MmptcpConfig, Notice, PathId};

    const SINGLE: MmptcpConfig =
        MmptcpConfig { switch_bytes: u64::MAX, switch_on_congestion: false, deal: Dealing::Single };

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

    /// The packets `W` holds, in the scatter phase.
    fn packets(d: &Driver<Coupled<Mmptcp>>) -> u64 {
        let Phase::Scatter { w, .. } = d.cc.alg.phase else { panic!("switched") };
        super::scatter_packets(w, 1200)
    }

    /// "Packets are randomly scattered in the network under a single TCP congestion window":
    /// the paths' windows are `W`'s whole packets dealt out, never more than `W` in all. The
    /// default dealing, pairs, to the byte as before it was a parameter.
    #[test]
    fn one_window_dealt_out_in_whole_packets() {
        assert_eq!(MmptcpConfig::default().deal, Dealing::Pairs);
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

    /// Single dealing, the paper's scatter: a window of 2 or 3 packets is on 2 or 3 of the 4
    /// paths, one packet each (pairs put it all on path 0), and each cut deals afresh, so over
    /// rounds at the floor every path carries packets.
    #[test]
    fn single_dealing_spreads_a_small_window_over_the_paths() {
        let mut d = mmptcp(SINGLE, 4);
        // 10 packets over 4 paths: 2 each, the 2 left over to 2 paths.
        let mut w = windows(&d, 4);
        w.sort_unstable();
        assert_eq!(w, vec![2_400, 2_400, 3_600, 3_600]);
        // Marked rounds down to the floor, 2 packets: 2 paths hold one each.
        while packets(&d) > 2 {
            d.round(0, 1, 1);
        }
        let mut used = [false; 4];
        for round in 0..12 {
            d.round(round % 4, 1, 1);
            assert_eq!(packets(&d), 2);
            let w = windows(&d, 4);
            assert_eq!(w.iter().filter(|&&x| x == 1_200).count(), 2, "round {round}: {w:?}");
            assert_eq!(w.iter().sum::<u64>(), 2_400);
            for (used, x) in used.iter_mut().zip(&w) {
                *used |= *x > 0;
            }
        }
        assert_eq!(used, [true; 4], "every path carried packets over the rounds at the floor");
        // Congestion avoidance to 3 packets: 3 paths hold one each.
        while packets(&d) < 3 {
            d.round(0, 1, 0);
        }
        let w = windows(&d, 4);
        assert_eq!(w.iter().filter(|&&x| x == 1_200).count(), 3, "{w:?}");
        // The same window under pairs: every packet on path 0.
        let mut pairs = mmptcp(MmptcpConfig { deal: Dealing::Pairs, ..SINGLE }, 4);
        let Phase::Scatter { w: at_3, ssthresh } = d.cc.alg.phase else { unreachable!() };
        pairs.cc.alg.phase = Phase::Scatter { w: at_3, ssthresh };
        assert_eq!(windows(&pairs, 4), vec![3_600, 0, 0, 0]);
    }

    /// The random deal is a function of the events: the same script gives the same windows
    /// (the simulator stays deterministic), and RTT samples that differ give other deals.
    #[test]
    fn single_dealing_is_deterministic_given_the_events() {
        let script = |rtt_us: u64| {
            let mut d = mmptcp(SINGLE, 8);
            for id in 0..8 {
                d.set_rtt(id, Duration::from_micros(rtt_us + u64::from(id)));
            }
            let mut seen = Vec::new();
            for round in 0..16 {
                d.round(round % 8, 1, u64::from(round % 3 == 0));
                seen.push(windows(&d, 8));
            }
            seen
        };
        assert_eq!(script(100), script(100));
        assert_ne!(script(100), script(137));
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
        /// (its 2-packet floor included), plus one packet of rounding; dealt in pairs, a path
        /// that gets data gets at least a pair of packets; dealt singly, the paths' shares
        /// differ by at most one packet.
        #[test]
        fn scatter_total_never_exceeds_w(
            ops in prop::collection::vec(op(6), 1..300),
            deal in prop_oneof![Just(Dealing::Pairs), Just(Dealing::Single)],
        ) {
            // A switch volume no structured step reaches: the script runs in the scatter phase.
            let cfg = MmptcpConfig { deal, ..SINGLE };
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
                let shares = snap.paths.iter().map(|p| p.window / packet);
                let (least, most) = (shares.clone().min(), shares.clone().max());
                match deal {
                    // A path that gets data gets at least a pair.
                    Dealing::Pairs => prop_assert!(
                        shares.clone().all(|k| k == 0 || k >= 2),
                        "a path holds one packet: {:?}", snap.paths
                    ),
                    // Evenly: shares differ by at most one packet.
                    Dealing::Single => prop_assert!(
                        most.unwrap_or(0) - least.unwrap_or(0) <= 1,
                        "uneven deal: {:?}", snap.paths
                    ),
                }
            }
        }
    }
}
