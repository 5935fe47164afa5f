//! The one [`Controller`] implementation: event routing over the shared [`Core`], with the
//! algorithm plugged in as a set of hooks ([`Algorithm`]).
//!
//! `Coupled<A>` is generic, so each algorithm's hooks are statically dispatched and inlined into
//! the event loop; only the outer `Box<dyn Controller>` call is dynamic. A user's algorithm runs
//! through exactly the same code as the built-ins.

use std::fmt;

use crate::core::{Core, Coupling, RoundStats, Slot};
use crate::{
    ConnectionSnapshot, Controller, EcnCodepoint, Event, InitialWindow, Notice, PathId,
    PathSnapshot, ReductionCause,
};

/// What distinguishes one coupled controller from another: hooks over the shared [`Core`], in
/// the style of Linux's `tcp_congestion_ops` ("override only what differs"). The defaults are
/// the common ground: slow start `w += acked`, halving on loss and ECN (once per round, shared
/// by both signals), no round-end or connection-level logic. Only
/// [`ca_increase`](Algorithm::ca_increase) and [`name`](Algorithm::name) are required.
///
/// Hooks receive the path as a [`Slot`]; they read the shared state through [`Core::path`] and
/// [`Core::sums`] and change it through the core's methods, which keep the coupled sums, the
/// window bounds and the once-per-round gate consistent. Wrap the algorithm in [`Coupled`] to
/// get a [`Controller`]; register it by name with [`register`](crate::register) to choose it
/// from a string like the built-ins.
///
/// ```
/// use mpquic_cc::coupled::{Algorithm, Core, Coupled, Coupling, Slot};
/// use mpquic_cc::{Controller, PathId};
///
/// /// Every path grows by one packet per round of the whole connection's window (AMP's rule).
/// #[derive(Debug, Clone)]
/// struct Shared;
///
/// impl Algorithm for Shared {
///     type Path = ();
///
///     fn name(&self) -> &'static str {
///         "shared"
///     }
///
///     fn coupling(&self) -> Coupling {
///         Coupling::WindowSum
///     }
///
///     fn ca_increase(&self, core: &Core<()>, path: Slot, bytes: u64) -> f64 {
///         core.path(path).mss_f() * bytes as f64 / core.sums().window_sum()
///     }
/// }
///
/// let mut cc = Coupled::new(Shared);
/// cc.on_event(PathId(0), mpquic_cc::Event::PathAdded { mss: 1200 });
/// assert_eq!(cc.window(PathId(0)), 12_000);
/// assert_eq!(cc.name(), "shared");
/// ```
pub trait Algorithm: Clone + fmt::Debug + Send + 'static {
    /// The algorithm's own per-path state ([`PathState::ext`](crate::coupled::PathState::ext)).
    type Path: Clone + fmt::Debug + Default + Send + 'static;

    /// The algorithm's name, as in snapshots and on command lines.
    fn name(&self) -> &'static str;

    /// Which sums the core keeps for the per-ACK increase.
    fn coupling(&self) -> Coupling {
        Coupling::Off
    }

    /// The congestion-avoidance increase for `bytes` acknowledged on `path`, in bytes.
    fn ca_increase(&self, core: &Core<Self::Path>, path: Slot, bytes: u64) -> f64;

    /// An acknowledged packet on an active path, sent after the path's last reaction and not
    /// application-limited. The default is [`standard_ack`].
    fn on_ack(&mut self, core: &mut Core<Self::Path>, path: Slot, bytes: u64) {
        standard_ack(self, core, path, bytes);
    }

    /// The window after an ECN reaction on `path`, before the `cwnd_min` floor (default: half).
    fn ecn_target(&self, core: &Core<Self::Path>, path: Slot) -> f64 {
        core.path(path).cwnd() / 2.0
    }

    /// A congestion signal that passed the once-per-round gate. The default is
    /// [`standard_congestion`].
    fn on_congestion(&mut self, core: &mut Core<Self::Path>, path: Slot, cause: ReductionCause) {
        standard_congestion(self, core, path, cause);
    }

    /// Any CE increase on `path`, gated or not (before `on_congestion`).
    fn on_ce_signal(&mut self, _core: &mut Core<Self::Path>, _path: Slot) {}

    /// `path` finished a round; `round` says what happened in it.
    fn on_round_end(&mut self, _core: &mut Core<Self::Path>, _path: Slot, _round: &RoundStats) {}

    /// The end of an ACK frame on `path` (after any round end).
    fn on_batch_end(&mut self, _core: &mut Core<Self::Path>, _path: Slot) {}

    /// A packet of `bytes` was sent on `path`.
    fn on_sent(&mut self, _core: &mut Core<Self::Path>, _path: Slot, _bytes: u64) {}

    /// `path` was just added.
    fn on_path_added(&mut self, _core: &mut Core<Self::Path>, _path: Slot) {}

    /// The path `removed` is gone; `was_initial` if it was the initial path (the lowest id).
    fn on_path_removed(
        &mut self,
        _core: &mut Core<Self::Path>,
        _removed: PathId,
        _was_initial: bool,
    ) {
    }

    /// Bytes that may be in flight on `path` (default: its window).
    fn window(&self, core: &Core<Self::Path>, path: Slot) -> u64 {
        core.path(path).window()
    }

    /// `(ssthresh, in_slow_start)` of `path` for snapshots.
    fn slow_start_view(&self, core: &Core<Self::Path>, path: Slot) -> (Option<u64>, bool) {
        let p = core.path(path);
        (p.ssthresh().is_finite().then_some(p.ssthresh() as u64), p.in_slow_start())
    }

    /// The per-path ECN estimate, if the algorithm has one (for snapshots).
    fn alpha(&self, _path: &Self::Path) -> Option<f64> {
        None
    }

    /// Connection-level fields of the snapshot (mode, SSR and ESE counters).
    fn fill_snapshot(&self, _snapshot: &mut ConnectionSnapshot) {}

    /// The ECN-capable codepoint the connection sends (default ECT(0); see
    /// [`Controller::ecn_codepoint`]).
    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::Ect0
    }
}

/// The common per-ACK rule: slow start `w += acked`, otherwise the algorithm's
/// [`ca_increase`](Algorithm::ca_increase).
#[inline]
pub fn standard_ack<A: Algorithm>(alg: &A, core: &mut Core<A::Path>, path: Slot, bytes: u64) {
    let inc = if core.path(path).in_slow_start() {
        bytes as f64
    } else {
        alg.ca_increase(core, path, bytes)
    };
    core.grow(path, inc);
}

/// The common reaction: ECN to the algorithm's [`ecn_target`](Algorithm::ecn_target), loss to
/// half, persistent congestion to `cwnd_min` (RFC 9002 section 7.6.2) with the threshold at
/// half. The new threshold is the new window, which ends slow start.
pub fn standard_congestion<A: Algorithm>(
    alg: &A,
    core: &mut Core<A::Path>,
    path: Slot,
    cause: ReductionCause,
) {
    let p = core.path(path);
    let (w, floor) = (p.cwnd(), p.cwnd_min());
    let (target, ssthresh) = match cause {
        ReductionCause::Ecn => {
            let t = alg.ecn_target(core, path).max(floor);
            (t, t)
        }
        ReductionCause::Loss => {
            let t = (w / 2.0).max(floor);
            (t, t)
        }
        ReductionCause::PersistentCongestion => (floor, (w / 2.0).max(floor)),
    };
    core.reduce(path, target, ssthresh, cause);
}

/// A connection's controller: the shared core plus one algorithm. This is the [`Controller`]
/// every built-in is, and what a user's [`Algorithm`] becomes.
#[derive(Debug, Clone)]
pub struct Coupled<A: Algorithm> {
    pub(crate) core: Core<A::Path>,
    pub(crate) alg: A,
}

impl<A: Algorithm> Coupled<A> {
    /// A controller running `alg`, with no path yet.
    pub fn new(alg: A) -> Self {
        Coupled { core: Core::new(alg.coupling()), alg }
    }

    /// The same controller, choosing the windows of the paths it opens by `mode` (the default is
    /// [`InitialWindow::PerPath`]).
    pub fn with_initial_window(mut self, mode: InitialWindow) -> Self {
        self.core.set_initial_window(mode);
        self
    }

    /// The same controller, keeping every path's window at `packets` or more (the default is 2;
    /// 0 counts as 1). Set it before any path is added: the paths opened later take it.
    pub fn with_min_window(mut self, packets: u32) -> Self {
        self.core.set_min_window(packets);
        self
    }

    /// The shared state, to inspect (tests, diagnostics).
    pub fn core(&self) -> &Core<A::Path> {
        &self.core
    }

    /// The algorithm's own state.
    pub fn algorithm(&self) -> &A {
        &self.alg
    }
}

impl<A: Algorithm> Controller for Coupled<A> {
    fn name(&self) -> &'static str {
        self.alg.name()
    }

    fn on_event(&mut self, path: PathId, event: Event) {
        let Coupled { core, alg } = self;
        let Some(s) = core.slot(path) else {
            if let Event::PathAdded { mss } = event {
                let s = core.add_path(path, mss);
                alg.on_path_added(core, s);
            }
            return;
        };
        match event {
            // A second PathAdded for a live path changes nothing.
            Event::PathAdded { .. } => {}
            Event::PathRemoved => {
                core.remove_path(s);
                alg.on_path_removed(core, path, s.position() == 0);
            }
            Event::PacketSent { bytes, pn } => {
                core.on_sent(s, bytes, pn);
                alg.on_sent(core, s, bytes);
            }
            Event::PacketAcked { bytes, pn, rtt, app_limited } => {
                if core.on_acked(s, pn, bytes, &rtt, app_limited) && core.path(s).is_active() {
                    alg.on_ack(core, s, bytes);
                }
            }
            Event::CongestionExperienced { count, exact } => {
                let react = core.on_ce(s, count, exact);
                alg.on_ce_signal(core, s);
                if react {
                    alg.on_congestion(core, s, ReductionCause::Ecn);
                }
            }
            Event::PacketsLost { largest_pn, persistent, .. } => {
                if core.loss_reacts(s, largest_pn, persistent) {
                    let cause = if persistent {
                        ReductionCause::PersistentCongestion
                    } else {
                        ReductionCause::Loss
                    };
                    alg.on_congestion(core, s, cause);
                }
            }
            Event::AckBatchEnded => {
                if let Some(round) = core.take_round_end(s) {
                    alg.on_round_end(core, s, &round);
                    core.round_ended();
                }
                alg.on_batch_end(core, s);
                core.end_batch(s);
            }
            Event::MssChanged { mss } => core.set_mss(s, mss),
        }
    }

    fn window(&self, path: PathId) -> u64 {
        self.core.slot(path).map_or(0, |s| self.alg.window(&self.core, s))
    }

    fn may_send(&self, path: PathId) -> bool {
        self.core.slot(path).is_some_and(|s| self.core.path(s).is_active())
    }

    fn windows(&self, out: &mut [u64]) {
        // One pass over the live paths, no lookup by id: the adapter calls this after every
        // event, and a search per path made it O(paths^2).
        out.fill(0);
        for s in self.core.slots() {
            if let Some(window) = out.get_mut(self.core.id(s).0 as usize) {
                *window = self.alg.window(&self.core, s);
            }
        }
    }

    fn snapshot(&self) -> ConnectionSnapshot {
        let core = &self.core;
        let paths = core
            .slots()
            .map(|s| {
                let p = core.path(s);
                let (ssthresh, in_slow_start) = self.alg.slow_start_view(core, s);
                let c = p.counters();
                PathSnapshot {
                    path: p.id(),
                    window: self.alg.window(core, s),
                    ssthresh,
                    in_slow_start,
                    active: p.is_active(),
                    alpha: self.alg.alpha(p.ext()),
                    rounds: c.rounds,
                    ce_events: c.ce_events,
                    ce_marked: c.ce_marked,
                    ce_exact: c.ce_exact,
                    ecn_reductions: c.ecn_reductions,
                    loss_reductions: c.loss_reductions,
                    sent_packets: c.sent_packets,
                    sent_bytes: c.sent_bytes,
                    srtt: std::time::Duration::try_from_secs_f64(p.srtt())
                        .ok()
                        .filter(|d| !d.is_zero()),
                }
            })
            .collect();
        let mut snapshot = ConnectionSnapshot {
            algorithm: self.alg.name(),
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

    fn ecn_codepoint(&self) -> EcnCodepoint {
        self.alg.ecn_codepoint()
    }
}
