//! The one [`Controller`] implementation: event routing over the shared [`Core`], with the
//! algorithm plugged in as a set of hooks ([`Algorithm`]).
//!
//! `Conn<A>` is generic, so each algorithm's hooks are statically dispatched and inlined into the
//! event loop; only the outer `Box<dyn Controller>` call is dynamic.

use std::fmt;

use crate::core::{Core, Coupling, RoundStats};
use crate::{
    ConnectionSnapshot, Controller, ControllerKind, Event, Notice, PathId, PathSnapshot,
    ReductionCause,
};

/// What distinguishes one algorithm from another. Defaults are the common ground: slow start
/// `w += acked`, halving on loss and ECN, no round-end or connection-level logic.
pub(crate) trait Algorithm: Clone + fmt::Debug + Send + 'static {
    /// The algorithm's own per-path state.
    type Path: Clone + fmt::Debug + Default + Send + 'static;

    /// Which algorithm this is (its name comes from here).
    const KIND: ControllerKind;

    /// Which sums the core keeps for the per-ACK increase.
    fn coupling(&self) -> Coupling {
        Coupling::Off
    }

    /// The congestion-avoidance increase for `bytes` acknowledged on path `i`, in bytes.
    fn ca_increase(&self, core: &Core<Self::Path>, i: usize, bytes: u64) -> f64;

    /// An acknowledged packet on active path `i`, sent after the path's last reaction.
    fn on_ack(&mut self, core: &mut Core<Self::Path>, i: usize, bytes: u64) {
        standard_ack(self, core, i, bytes);
    }

    /// The window after an ECN reaction on path `i`, before the `cwnd_min` floor.
    fn ecn_target(&self, core: &Core<Self::Path>, i: usize) -> f64 {
        core.paths[i].w / 2.0
    }

    /// A congestion signal that passed the once-per-round gate.
    fn on_congestion(&mut self, core: &mut Core<Self::Path>, i: usize, cause: ReductionCause) {
        standard_congestion(self, core, i, cause);
    }

    /// Any CE increase on path `i`, gated or not (before `on_congestion`).
    fn on_ce_signal(&mut self, _core: &mut Core<Self::Path>, _i: usize) {}

    /// Path `i` finished a round.
    fn on_round_end(&mut self, _core: &mut Core<Self::Path>, _i: usize, _round: &RoundStats) {}

    /// The end of an ACK frame on path `i` (after any round end).
    fn on_batch_end(&mut self, _core: &mut Core<Self::Path>, _i: usize) {}

    /// A packet was sent on path `i`.
    fn on_sent(&mut self, _core: &mut Core<Self::Path>, _i: usize, _bytes: u64) {}

    /// Path `i` was just added.
    fn on_path_added(&mut self, _core: &mut Core<Self::Path>, _i: usize) {}

    /// A path was removed; `index` is where it was.
    fn on_path_removed(&mut self, _core: &mut Core<Self::Path>, _removed: PathId, _index: usize) {}

    /// Bytes that may be in flight on path `i`.
    fn window(&self, core: &Core<Self::Path>, i: usize) -> u64 {
        core.paths[i].window()
    }

    /// `(ssthresh, in_slow_start)` of path `i` for snapshots.
    fn slow_start_view(&self, core: &Core<Self::Path>, i: usize) -> (Option<u64>, bool) {
        let p = &core.paths[i];
        (p.ssthresh.is_finite().then_some(p.ssthresh as u64), p.in_slow_start())
    }

    /// The per-path ECN estimate, if the algorithm has one.
    fn alpha(&self, _path: &Self::Path) -> Option<f64> {
        None
    }

    /// Connection-level fields of the snapshot (mode, SSR and ESE counters).
    fn fill_snapshot(&self, _snapshot: &mut ConnectionSnapshot) {}
}

/// The common per-ACK rule: slow start `w += acked`, otherwise the algorithm's increase.
#[inline]
pub(crate) fn standard_ack<A: Algorithm>(alg: &A, core: &mut Core<A::Path>, i: usize, bytes: u64) {
    let inc =
        if core.paths[i].in_slow_start() { bytes as f64 } else { alg.ca_increase(core, i, bytes) };
    core.grow(i, inc);
}

/// The common reaction: ECN to the algorithm's target, loss to half, persistent congestion to
/// `cwnd_min` (RFC 9002 section 7.6.2) with the threshold at half. The new threshold is the new
/// window, which ends slow start.
pub(crate) fn standard_congestion<A: Algorithm>(
    alg: &A,
    core: &mut Core<A::Path>,
    i: usize,
    cause: ReductionCause,
) {
    let p = &core.paths[i];
    let (target, ssthresh) = match cause {
        ReductionCause::Ecn => {
            let t = alg.ecn_target(core, i).max(p.cwnd_min);
            (t, t)
        }
        ReductionCause::Loss => {
            let t = (p.w / 2.0).max(p.cwnd_min);
            (t, t)
        }
        ReductionCause::PersistentCongestion => (p.cwnd_min, (p.w / 2.0).max(p.cwnd_min)),
    };
    core.reduce(i, target, ssthresh, cause);
}

/// A connection's controller: the shared core plus one algorithm.
#[derive(Debug, Clone)]
pub(crate) struct Conn<A: Algorithm> {
    pub(crate) core: Core<A::Path>,
    pub(crate) alg: A,
}

impl<A: Algorithm> Conn<A> {
    pub(crate) fn new(alg: A) -> Self {
        Conn { core: Core::new(alg.coupling()), alg }
    }
}

impl<A: Algorithm> Controller for Conn<A> {
    fn name(&self) -> &'static str {
        A::KIND.name()
    }

    fn on_event(&mut self, path: PathId, event: Event) {
        let Conn { core, alg } = self;
        let Some(i) = core.index(path) else {
            if let Event::PathAdded { mss } = event {
                let i = core.add_path(path, mss);
                alg.on_path_added(core, i);
            }
            return;
        };
        match event {
            // A second PathAdded for a live path changes nothing.
            Event::PathAdded { .. } => {}
            Event::PathRemoved => {
                core.remove_path(i);
                alg.on_path_removed(core, path, i);
            }
            Event::PacketSent { bytes, pn } => {
                core.paths[i].on_sent(bytes, pn);
                alg.on_sent(core, i, bytes);
            }
            Event::PacketAcked { bytes, pn, rtt, app_limited } => {
                if core.on_acked(i, pn, &rtt, app_limited) && core.paths[i].active {
                    alg.on_ack(core, i, bytes);
                }
            }
            Event::CongestionExperienced { count, exact } => {
                let react = core.paths[i].on_ce(count, exact);
                alg.on_ce_signal(core, i);
                if react {
                    alg.on_congestion(core, i, ReductionCause::Ecn);
                }
            }
            Event::PacketsLost { largest_pn, persistent, .. } => {
                if core.paths[i].loss_reacts(largest_pn, persistent) {
                    let cause = if persistent {
                        ReductionCause::PersistentCongestion
                    } else {
                        ReductionCause::Loss
                    };
                    alg.on_congestion(core, i, cause);
                }
            }
            Event::AckBatchEnded => {
                if let Some(round) = core.paths[i].take_round_end() {
                    alg.on_round_end(core, i, &round);
                    core.round_ended();
                }
                alg.on_batch_end(core, i);
                core.paths[i].acked_in_batch = false;
            }
            Event::MssChanged { mss } => core.set_mss(i, mss),
        }
    }

    fn window(&self, path: PathId) -> u64 {
        self.core.index(path).map_or(0, |i| self.alg.window(&self.core, i))
    }

    fn may_send(&self, path: PathId) -> bool {
        self.core.index(path).is_some_and(|i| self.core.paths[i].active)
    }

    fn snapshot(&self) -> ConnectionSnapshot {
        let core = &self.core;
        let paths = (0..core.paths.len())
            .map(|i| {
                let p = &core.paths[i];
                let (ssthresh, in_slow_start) = self.alg.slow_start_view(core, i);
                let c = &p.counters;
                PathSnapshot {
                    path: p.id,
                    window: self.alg.window(core, i),
                    ssthresh,
                    in_slow_start,
                    active: p.active,
                    alpha: self.alg.alpha(&p.ext),
                    rounds: c.rounds,
                    ce_events: c.ce_events,
                    ce_marked: c.ce_marked,
                    ce_exact: c.ce_exact,
                    ecn_reductions: c.ecn_reductions,
                    loss_reductions: c.loss_reductions,
                    sent_packets: c.sent_packets,
                    sent_bytes: c.sent_bytes,
                    srtt: std::time::Duration::try_from_secs_f64(p.srtt)
                        .ok()
                        .filter(|d| !d.is_zero()),
                }
            })
            .collect();
        let mut snapshot = ConnectionSnapshot {
            algorithm: A::KIND.name(),
            mode: None,
            paths,
            suppressions: 0,
            releases: 0,
            eliminations: 0,
            notices_dropped: core.notices_dropped,
        };
        self.alg.fill_snapshot(&mut snapshot);
        snapshot
    }

    fn drain_notices(&mut self, out: &mut Vec<Notice>) {
        self.core.drain_notices(out);
    }
}
