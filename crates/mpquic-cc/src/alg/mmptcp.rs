//! MMPTCP (mmptcp-paper.txt, section 2): packet scatter under one congestion window, then
//! MPTCP.
//!
//! - Phase 1, packet scatter: one Reno window `W` for the whole connection (slow start
//!   `W += acked`, then `W += MSS * acked / W`; halved once per round on loss or CE). Its
//!   packets are spread evenly over the paths: each path's `window()` is its share
//!   `max(W / n_paths, cwnd_min)`, so a scheduler that fills paths in turn scatters the packets.
//! - The switch (the paper's "data volume" strategy): once the connection has sent
//!   `switch_bytes` (default 100 KB), or, with `switch_on_congestion` (the "congestion event"
//!   strategy), at the first loss or CE.
//! - Phase 2: each path runs LIA ([`lia_increase`], halving on loss or CE) starting from
//!   `W / n_paths`, and from `ssthresh_W / n_paths` if `W` had left slow start.
//!
//! Readings:
//! - "Once per round" for the connection window: a reaction closes the gate of every path
//!   (each records its own next unsent packet number), so a signal about any packet sent
//!   before the cut is ignored, as with one packet-number space.
//! - At a congestion switch the connection first reacts (halves `W`), then switches: phase 2
//!   starts from the reduced window, since the congestion happened under `W`.
//! - The paper scatters by randomizing source ports under ECMP; here the paths are the QUIC
//!   paths the connection already has, and the share is even rather than random.
//! - In the scatter phase, `WindowReduced` and `SlowStartExited` notices carry the connection
//!   window `W` (on the path whose signal caused them), and snapshots show each path's share.
//! - Paths added in phase 2 start like any LIA path (initial window, slow start).

use super::lia::lia_increase;
use crate::conn::{standard_ack, standard_congestion, Algorithm};
use crate::core::path::{initial_window, MAX_WINDOW};
use crate::core::{Core, Coupling};
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

impl Mmptcp {
    pub(crate) fn new(cfg: MmptcpConfig) -> Self {
        // W starts as soon as the first path says what its MSS is.
        Mmptcp { cfg, phase: Phase::Scatter { w: 0.0, ssthresh: f64::INFINITY }, sent_bytes: 0 }
    }

    fn switch(&mut self, core: &mut Core<()>) {
        let Phase::Scatter { w, ssthresh } = self.phase else { return };
        self.phase = Phase::Multipath;
        let n = core.paths.len().max(1) as f64;
        for i in 0..core.paths.len() {
            let p = &mut core.paths[i];
            p.ssthresh =
                if ssthresh.is_finite() { (ssthresh / n).max(p.cwnd_min) } else { f64::INFINITY };
            core.set_window(i, w / n);
        }
        core.set_coupling(Coupling::Rates);
        core.notify(Notice::PhaseSwitched { window: w as u64, sent_bytes: self.sent_bytes });
    }
}

impl Algorithm for Mmptcp {
    type Path = ();
    const KIND: ControllerKind = ControllerKind::Mmptcp;

    fn ca_increase(&self, core: &Core<()>, i: usize, bytes: u64) -> f64 {
        lia_increase(core, i, bytes)
    }

    fn on_path_added(&mut self, core: &mut Core<()>, i: usize) {
        if let Phase::Scatter { w, .. } = &mut self.phase {
            if *w == 0.0 {
                *w = initial_window(core.paths[i].mss);
            }
        }
    }

    fn on_sent(&mut self, core: &mut Core<()>, _i: usize, bytes: u64) {
        if let Phase::Scatter { .. } = self.phase {
            self.sent_bytes = self.sent_bytes.saturating_add(bytes);
            if self.sent_bytes >= self.cfg.switch_bytes {
                self.switch(core);
            }
        }
    }

    fn on_ack(&mut self, core: &mut Core<()>, i: usize, bytes: u64) {
        match &mut self.phase {
            Phase::Scatter { w, ssthresh } => {
                let inc = if *w < *ssthresh {
                    bytes as f64
                } else {
                    super::reno::reno_step(core.paths[i].mss_f(), bytes, *w)
                };
                *w = (*w + inc).min(MAX_WINDOW);
            }
            Phase::Multipath => standard_ack(self, core, i, bytes),
        }
    }

    fn on_congestion(&mut self, core: &mut Core<()>, i: usize, cause: ReductionCause) {
        let Phase::Scatter { w, ssthresh } = &mut self.phase else {
            return standard_congestion(self, core, i, cause);
        };
        let (from, was_slow_start) = (*w, *w < *ssthresh);
        let floor = core.paths[i].cwnd_min;
        if cause == ReductionCause::PersistentCongestion {
            *ssthresh = (*w / 2.0).max(floor);
            *w = floor;
        } else {
            *w = (*w / 2.0).max(floor);
            *ssthresh = *w;
        }
        let (to, left_slow_start) = (*w, was_slow_start && *w >= *ssthresh);
        for k in 0..core.paths.len() {
            core.paths[k].close_gate();
        }
        core.record_reaction(i, cause);
        core.report_reduction(i, from, to, cause, left_slow_start);
        if self.cfg.switch_on_congestion {
            self.switch(core);
        }
    }

    fn window(&self, core: &Core<()>, i: usize) -> u64 {
        match self.phase {
            Phase::Scatter { w, .. } => {
                let p = &core.paths[i];
                (w / core.paths.len() as f64).max(p.cwnd_min) as u64
            }
            Phase::Multipath => core.paths[i].window(),
        }
    }

    fn slow_start_view(&self, core: &Core<()>, i: usize) -> (Option<u64>, bool) {
        match self.phase {
            Phase::Scatter { w, ssthresh } => {
                let share = (ssthresh / core.paths.len() as f64).max(core.paths[i].cwnd_min);
                (ssthresh.is_finite().then_some(share as u64), w < ssthresh)
            }
            Phase::Multipath => {
                let p = &core.paths[i];
                (p.ssthresh.is_finite().then_some(p.ssthresh as u64), p.in_slow_start())
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

    use super::{Mmptcp, Phase};
    use crate::conn::Conn;
    use crate::testkit::Driver;
    use crate::{Controller, MmptcpConfig, Notice, PathId};

    fn mmptcp(cfg: MmptcpConfig, paths: u32) -> Driver<Conn<Mmptcp>> {
        let mut d = Driver::with(Conn::new(Mmptcp::new(cfg)));
        for id in 0..paths {
            d.add_path(id);
        }
        d
    }

    fn windows(d: &Driver<Conn<Mmptcp>>, paths: u32) -> Vec<u64> {
        (0..paths).map(|id| d.window(id)).collect()
    }

    #[test]
    fn one_window_spread_evenly() {
        let mut d = mmptcp(MmptcpConfig::default(), 4);
        assert_eq!(d.snapshot().mode, Some("scatter"));
        // W = 12000 initially: 3000 per path.
        assert_eq!(windows(&d, 4), vec![3_000; 4]);
        // ACKs on any path grow the one window (slow start: W += acked).
        d.send(2, 40);
        d.ack(2, 36, 0);
        assert_eq!(windows(&d, 4), vec![13_800; 4]);
        // A CE on another path halves W once: 56400 -> 28200, 7050 per path.
        d.send(1, 1);
        d.ack(1, 1, 1);
        assert_eq!(windows(&d, 4), vec![7_050; 4]);
        let snap = d.snapshot();
        assert!(snap.paths.iter().all(|p| p.ssthresh == Some(7_050) && !p.in_slow_start));
        // The same round on any path: no second cut. Path 2 loses a packet sent before the cut,
        // path 1 reports more CE before anything sent after the cut is acknowledged.
        d.send(3, 1);
        d.lose(2, 1);
        d.ack(1, 0, 1);
        assert_eq!(d.cc.alg.phase, Phase::Scatter { w: 28_200.0, ssthresh: 28_200.0 });
        // Congestion avoidance: W += MSS * acked / W, from an ACK on yet another path.
        d.ack(3, 1, 0);
        let w = 28_200.0 + 1200.0 * 1200.0 / 28_200.0;
        assert_eq!(d.cc.alg.phase, Phase::Scatter { w, ssthresh: 28_200.0 });
        assert_eq!(windows(&d, 4), vec![(w / 4.0) as u64; 4]);
        // A path added later takes its share; so does a path's removal.
        d.add_path(4);
        assert_eq!(windows(&d, 5), vec![(w / 5.0) as u64; 5]);
        d.remove_path(0);
        assert_eq!(d.window(1), (w / 4.0) as u64);
        // Shares never go below cwnd_min.
        for _ in 0..10 {
            d.round(1, 1, 1);
        }
        assert_eq!(d.window(1), 2_400);
    }

    #[test]
    fn switches_at_switch_bytes_to_lia_from_w_over_n() {
        let cfg = MmptcpConfig { switch_bytes: 30_000, ..Default::default() };
        let mut d = mmptcp(cfg, 3);
        d.set_rtt(1, Duration::from_micros(300));
        d.send(0, 12); // 14400 bytes sent
        d.ack(0, 12, 0); // W = 12000 + 14400 = 26400 (slow start)
        d.send(1, 12); // 28800 bytes
        assert_eq!(d.snapshot().mode, Some("scatter"));
        d.send(2, 1); // 30000 bytes: switch
        let snap = d.snapshot();
        assert_eq!(snap.mode, Some("multipath"));
        assert_eq!(windows(&d, 3), vec![8_800; 3]);
        assert!(snap.paths.iter().all(|p| p.in_slow_start), "W was in slow start");
        assert!(d.drain().contains(&Notice::PhaseSwitched { window: 26_400, sent_bytes: 30_000 }));
        // Phase 2 is per-path LIA: the same ACKs as on a LIA controller in the same state give
        // the same windows, and a CE on one path halves only that path.
        d.ack(1, 12, 1);
        assert_eq!(d.window(0), 8_800);
        assert_eq!(d.window(1), (8_800 + 12 * 1200) / 2);
        let lia_like = d.cc.core.paths[1].w;
        d.send(1, 1);
        let mut expect = d.cc.core.clone();
        let inc = crate::alg::lia::lia_increase(&expect, 1, 1200);
        expect.grow(1, inc);
        d.ack(1, 1, 0);
        assert!(d.cc.core.paths[1].w > lia_like);
        assert_eq!(d.cc.core.paths[1].w, expect.paths[1].w);
    }

    #[test]
    fn switch_after_congestion_avoidance_splits_ssthresh() {
        let cfg = MmptcpConfig { switch_bytes: 20 * 1200, ..Default::default() };
        let mut d = mmptcp(cfg, 2);
        d.send(0, 10);
        d.ack(0, 10, 1); // W: 24000 then halved to 12000, CA
        d.send(1, 10); // 20 packets sent: switch
        assert_eq!(windows(&d, 2), vec![6_000, 6_000]);
        let snap = d.snapshot();
        assert!(snap.paths.iter().all(|p| !p.in_slow_start && p.ssthresh == Some(6_000)));
    }

    #[test]
    fn switch_on_first_congestion_when_asked() {
        let cfg = MmptcpConfig { switch_on_congestion: true, ..Default::default() };
        let mut d = mmptcp(cfg, 2);
        d.send(0, 10);
        d.ack(0, 10, 0); // W 24000
        assert_eq!(d.snapshot().mode, Some("scatter"));
        d.send(1, 2);
        d.lose(1, 1); // halve to 12000, then switch: 6000 each
        assert_eq!(d.snapshot().mode, Some("multipath"));
        assert_eq!(windows(&d, 2), vec![6_000, 6_000]);
        // Without the option the same loss does not switch.
        let mut d = mmptcp(MmptcpConfig::default(), 2);
        d.send(1, 2);
        d.lose(1, 1);
        assert_eq!(d.snapshot().mode, Some("scatter"));
        assert!(d.cc.may_send(PathId(0)));
    }
}
