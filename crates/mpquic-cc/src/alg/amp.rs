//! AMP (amp-paper.txt, section 4.2, Algorithm 1, Table 1; defaults from section 5):
//! an RTT-agnostic coupled increase, a constant-factor ECN decrease, and subflow
//! suppression/release (SSR), which turns the connection into a single-path one while all its
//! paths sit at the minimum window (incast, the "minimum window syndrome") and back once the
//! initial path has seen no CE for a while.
//!
//! - Increase per ACK on path `s` (Algorithm 1 line 25, `w_s += 1 / w_total` in packets):
//!   `w_s += MSS * acked / W_total`, `W_total` over the active paths (cached by the core).
//! - ECN, once per round (line 29): `w_s = max(w_s * (1 - 1/beta), cwnd_min)`, `beta = 4`.
//! - Loss (line 32): `w_s = max(w_s / 2, cwnd_min)`.
//! - Suppression (lines 2-13), checked at each round end of the initial path: if every active
//!   path is at `cwnd_min`, `n_min += 1`, else `n_min = 0`; when `n_min` reaches `gamma = 2`,
//!   every path but the initial one stops taking new data (`may_send` is false; it stays open).
//! - Release (lines 14-21): at each round end of the initial path while suppressed, a round with
//!   CE resets `n_clear`, a round without increments it; at `tau = 8` every suppressed path is
//!   reactivated.
//! - `ssr=false` turns suppression and release off (the paper's ablation, section 5.2: "when we
//!   disable SSR"), leaving the coupled increase and the constant-factor cut.
//!
//! Readings (ALGORITHMS.md's, plus three of this module's own):
//! - Release counts rounds of the initial path, not ACKs (the pseudo-code counts ACKs, the text
//!   RTTs).
//! - Released paths restart at `cwnd_min` in congestion avoidance (`ssthresh = cwnd_min`):
//!   section 5.1 warns that synchronized reactivation bursts re-trigger suppression.
//! - "At `cwnd_min`" is judged in whole packets, as the paper's packet-counting windows are:
//!   `w < cwnd_min + MSS`. Byte windows grow by fractions of a packet between two cuts (e.g.
//!   `2 * MSS * MSS / W_total` in a two-packet round); a path at 2.25 packets has not left the
//!   minimum any more than a kernel's `snd_cwnd = 2` with a partial `snd_cwnd_cnt` has, and an
//!   exact byte comparison would almost never hold.
//! - The "initial path" is the lowest-numbered live path: path 0 while it lives. If it goes away
//!   while others are suppressed they are released (else the connection could not send); a path
//!   added during suppression starts suppressed, since the connection is in single-path mode.
//! - Suppressed paths do not grow (they carry no new data); their windows stay where SSR found
//!   them and are reset on release anyway.

use serde::Serialize;

use crate::builtin::TypedConfig;
use crate::core::DEFAULT_MIN_WINDOW;
use crate::coupled::Algorithm;
use crate::coupled::{Core, Coupled, Coupling, PathState, RoundStats, Slot};
use crate::param::{parameters, Parameter, Parameters};
use crate::{ConnectionSnapshot, ControllerKind, Notice, PathId};
use crate::{Controller, ControllerConfig, InitialWindow};

/// AMP parameters (AMP paper, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AmpConfig {
    /// ECN cut: `w -= w / beta`. At least 2.
    pub beta: f64,
    /// Rounds of the initial path with every active path at the minimum window before suppression.
    pub gamma: u32,
    /// CE-free rounds of the initial path before suppressed paths are released.
    pub tau: u32,
    /// The window of a path the connection opens.
    pub initial_window: InitialWindow,
    /// The minimum window of every path, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
    /// Whether subflow suppression and release (SSR) runs; without it AMP is its coupled
    /// increase and constant-factor cut alone (the paper's ablation, section 5.2).
    pub ssr: bool,
}

impl Default for AmpConfig {
    fn default() -> Self {
        AmpConfig {
            beta: 4.0,
            gamma: 2,
            tau: 8,
            initial_window: InitialWindow::PerPath,
            cwnd_min: DEFAULT_MIN_WINDOW,
            ssr: true,
        }
    }
}

impl TypedConfig for AmpConfig {
    const PARAMETERS: Parameters<Self> = parameters![
        Parameter::beta(|c| &mut c.beta),
        Parameter::positive("gamma", |c| &mut c.gamma),
        Parameter::positive("tau", |c| &mut c.tau),
        Parameter::initial_window(|c| &mut c.initial_window),
        Parameter::min_window(|c| &mut c.cwnd_min),
        Parameter::new("ssr", |c| &mut c.ssr),
    ];

    const VARIANT: fn(Self) -> ControllerConfig = ControllerConfig::Amp;

    fn build(&self) -> Box<dyn Controller> {
        Box::new(
            Coupled::new(Amp::new(*self))
                .with_initial_window(self.initial_window)
                .with_min_window(self.cwnd_min),
        )
    }
}

/// AMP's connection-level state.
#[derive(Debug, Clone)]
pub(crate) struct Amp {
    cfg: AmpConfig,
    suppressed: bool,
    /// Consecutive initial-path rounds with every active path at `cwnd_min`.
    n_min: u32,
    /// Consecutive CE-free initial-path rounds while suppressed.
    n_clear: u32,
    suppressions: u64,
    releases: u64,
}

impl Amp {
    pub(crate) fn new(cfg: AmpConfig) -> Self {
        Amp { cfg, suppressed: false, n_min: 0, n_clear: 0, suppressions: 0, releases: 0 }
    }

    fn suppress(&mut self, core: &mut Core<()>) {
        let mut paths = Vec::new();
        for s in core.slots().skip(1) {
            if core.path(s).is_active() {
                core.set_active(s, false);
                paths.push(core.id(s));
            }
        }
        self.suppressed = true;
        self.n_clear = 0;
        self.suppressions += 1;
        core.notify(Notice::Suppressed { paths });
    }

    fn release(&mut self, core: &mut Core<()>) {
        let mut paths: Vec<PathId> = Vec::new();
        for s in core.slots() {
            if !core.path(s).is_active() {
                let floor = core.path(s).cwnd_min();
                core.set_active(s, true);
                core.set_window(s, floor);
                core.set_ssthresh(s, floor);
                paths.push(core.id(s));
            }
        }
        self.suppressed = false;
        self.n_min = 0;
        self.releases += 1;
        core.notify(Notice::Released { paths });
    }
}

/// Whether a path is at the minimum window, in whole packets.
fn at_floor<X>(p: &PathState<X>) -> bool {
    p.cwnd() < p.cwnd_min() + p.mss_f()
}

impl Algorithm for Amp {
    type Path = ();

    fn name(&self) -> &'static str {
        ControllerKind::Amp.name()
    }

    fn coupling(&self) -> Coupling {
        Coupling::WindowSum
    }

    fn ca_increase(&self, core: &Core<()>, s: Slot, bytes: u64) -> f64 {
        // Path i is active, so W_total >= w_i >= cwnd_min > 0.
        core.path(s).mss_f() * bytes as f64 / core.sums().window_sum()
    }

    fn ecn_target(&self, core: &Core<()>, s: Slot) -> f64 {
        core.path(s).cwnd() * (1.0 - 1.0 / self.cfg.beta)
    }

    fn on_round_end(&mut self, core: &mut Core<()>, s: Slot, round: &RoundStats) {
        // Without SSR nothing is ever suppressed, so there is nothing to count or release.
        if !self.cfg.ssr || core.initial() != Some(s) {
            return;
        }
        if self.suppressed {
            if round.ce_events > 0 {
                self.n_clear = 0;
            } else {
                self.n_clear += 1;
            }
            if self.n_clear >= self.cfg.tau {
                self.release(core);
            }
        } else {
            if core.paths().filter(|p| p.is_active()).all(at_floor) {
                self.n_min += 1;
            } else {
                self.n_min = 0;
            }
            let others_active = core.paths().skip(1).any(|p| p.is_active());
            if self.n_min >= self.cfg.gamma && others_active {
                self.suppress(core);
            }
        }
    }

    fn on_path_added(&mut self, core: &mut Core<()>, s: Slot) {
        if !self.suppressed {
            return;
        }
        if core.initial() == Some(s) {
            // A lower id than the initial path's: it is the new initial path, which must carry
            // data, so the episode ends.
            self.release(core);
        } else {
            core.set_active(s, false);
        }
    }

    fn on_path_removed(&mut self, core: &mut Core<()>, _removed: PathId, was_initial: bool) {
        if was_initial {
            // The initial path changed: its round counts start over.
            self.n_min = 0;
            self.n_clear = 0;
            if self.suppressed {
                self.release(core);
            }
        }
    }

    fn fill_snapshot(&self, snapshot: &mut ConnectionSnapshot) {
        snapshot.mode = Some(if self.suppressed { "suppressed" } else { "normal" });
        snapshot.suppressions = self.suppressions;
        snapshot.releases = self.releases;
    }
}

#[cfg(test)]
mod tests {
    use super::Amp;
    use crate::coupled::Coupled;
    use crate::testkit::Driver;
    use crate::{AmpConfig, Controller, Notice, PathId};

    fn amp(cfg: AmpConfig, paths: u32) -> Driver<Coupled<Amp>> {
        let mut d = Driver::with(Coupled::new(Amp::new(cfg)));
        for id in 0..paths {
            d.add_path(id);
        }
        d
    }

    #[test]
    fn increase_is_mss_times_acked_over_w_total_of_active_paths() {
        let mut d = amp(AmpConfig::default(), 4);
        for (id, w) in [(0, 20_000), (1, 10_000), (2, 6_000), (3, 4_000)] {
            d.force_window(id, w);
        }
        let w_total = 40_000.0;
        d.send(2, 3);
        d.ack(2, 1, 0);
        assert_eq!(d.cwnd(2), 6_000.0 + 1200.0 * 1200.0 / w_total);
        // Different RTTs change nothing: AMP is RTT-agnostic.
        d.set_rtt(1, std::time::Duration::from_millis(3));
        d.send(1, 1);
        let (w1, total) = (d.cwnd(1), d.cc.core().sums().window_sum());
        d.ack(1, 1, 0);
        assert_eq!(d.cwnd(1), w1 + 1200.0 * 1200.0 / total);
        // Acknowledging a partial packet scales with the bytes.
        let (w2, total) = (d.cwnd(2), d.cc.core().sums().window_sum());
        d.ack_bytes(2, 300);
        assert_eq!(d.cwnd(2), w2 + 1200.0 * 300.0 / total);
    }

    #[test]
    fn ecn_cuts_by_one_over_beta_once_per_round_and_not_below_cwnd_min() {
        let mut d = amp(AmpConfig::default(), 2);
        d.force_window(0, 40_000);
        d.send(0, 10);
        // Two ACKs of the frame grow the window first (W_total moves with it), then the cut.
        let w1 = 40_000.0 + 1200.0 * 1200.0 / 52_000.0;
        let before = w1 + 1200.0 * 1200.0 / (52_000.0 + (w1 - 40_000.0));
        d.ack(0, 2, 2);
        assert_eq!(d.cwnd(0), before * 0.75);
        d.ack(0, 2, 2); // same round: ignored, and no growth from packets sent before the cut
        assert_eq!(d.cwnd(0), before * 0.75);
        for _ in 0..20 {
            d.round(0, 2, 1);
        }
        assert_eq!(d.window(0), 2_400);
        assert_eq!(d.path(0).ecn_reductions, 21);
    }

    /// Bring every path of `d` down to cwnd_min without ending a round of path 0 after the last
    /// one got there (path 0 goes first; later ones are driven by their own rounds).
    fn all_to_floor(d: &mut Driver<Coupled<Amp>>, paths: u32) {
        for id in 0..paths {
            for _ in 0..12 {
                d.round(id, 2, 1);
            }
            assert_eq!(d.window(id), 2_400);
        }
    }

    #[test]
    fn suppression_after_exactly_gamma_rounds_at_cwnd_min() {
        for gamma in [1, 2, 3, 5] {
            let mut d = amp(AmpConfig { gamma, ..Default::default() }, 4);
            all_to_floor(&mut d, 4);
            // Path 0's rounds so far ended before paths 1-3 reached the floor, so the count is
            // at 0 whatever gamma is (paths 1-3 were above it at each of them).
            assert!((0..4).all(|id| d.cc.may_send(PathId(id))), "gamma {gamma}");
            for round in 1..gamma {
                d.round(0, 2, 1);
                assert!(d.cc.may_send(PathId(3)), "gamma {gamma}: suppressed after {round}");
            }
            d.drain();
            d.round(0, 2, 1);
            assert!(d.cc.may_send(PathId(0)));
            for id in 1..4 {
                assert!(!d.cc.may_send(PathId(id)), "gamma {gamma}: path {id} still active");
            }
            let snap = d.snapshot();
            assert_eq!(snap.mode, Some("suppressed"));
            assert_eq!(snap.suppressions, 1);
            assert!(d
                .drain()
                .contains(&Notice::Suppressed { paths: vec![PathId(1), PathId(2), PathId(3)] }));
        }
    }

    #[test]
    fn without_ssr_nothing_is_ever_suppressed() {
        let mut d = amp(AmpConfig { ssr: false, gamma: 1, ..Default::default() }, 4);
        all_to_floor(&mut d, 4);
        for _ in 0..50 {
            d.round(0, 2, 1);
            d.round(0, 2, 0);
        }
        assert!((0..4).all(|id| d.cc.may_send(PathId(id))));
        let snap = d.snapshot();
        assert_eq!((snap.mode, snap.suppressions), (Some("normal"), 0));
        assert!(!d.drain().iter().any(|n| matches!(n, Notice::Suppressed { .. })));
    }

    #[test]
    fn a_path_above_the_floor_resets_the_count() {
        let mut d = amp(AmpConfig::default(), 2);
        all_to_floor(&mut d, 2);
        d.round(0, 2, 1); // n_min = 1
        d.force_window(1, 3_600); // three packets: above the floor
        d.round(0, 2, 1); // reset
        d.force_window(1, 2_400);
        d.round(0, 2, 1); // n_min = 1
        assert!(d.cc.may_send(PathId(1)));
        // A fraction of a packet above cwnd_min is still the floor.
        d.force_window(1, 2_400 + 1_199);
        d.round(0, 2, 1); // n_min = 2
        assert!(!d.cc.may_send(PathId(1)));
    }

    #[test]
    fn suppressed_paths_leave_w_total_and_path_0_grows_like_reno() {
        let mut d = amp(AmpConfig::default(), 3);
        all_to_floor(&mut d, 3);
        d.round(0, 2, 1);
        d.round(0, 2, 1);
        assert_eq!(d.snapshot().mode, Some("suppressed"));
        assert_eq!(d.cc.core().sums().window_sum(), d.cwnd(0));
        let w = d.cwnd(0);
        d.send(0, 1);
        d.ack(0, 1, 0);
        assert_eq!(d.cwnd(0), w + 1200.0 * 1200.0 / w);
        // ACKs of data still in flight on a suppressed path do not grow it.
        let w1 = d.cwnd(1);
        d.send(1, 1);
        d.ack(1, 1, 0);
        assert_eq!(d.cwnd(1), w1);
    }

    fn suppressed(tau: u32) -> Driver<Coupled<Amp>> {
        let mut d = amp(AmpConfig { tau, ..Default::default() }, 4);
        all_to_floor(&mut d, 4);
        d.round(0, 2, 1);
        d.round(0, 2, 1);
        assert_eq!(d.snapshot().mode, Some("suppressed"));
        d.drain();
        d
    }

    #[test]
    fn release_after_tau_clean_rounds_not_before() {
        for tau in [1, 3, 8] {
            let mut d = suppressed(tau);
            for round in 1..tau {
                d.round(0, 2, 0);
                assert!(!d.cc.may_send(PathId(2)), "tau {tau}: released after {round}");
            }
            d.round(0, 2, 0);
            for id in 0..4 {
                assert!(d.cc.may_send(PathId(id)), "tau {tau}: path {id}");
            }
            for id in 1..4 {
                let p = d.path(id);
                assert_eq!(p.window, 2_400, "restarts at cwnd_min");
                assert!(!p.in_slow_start, "and in congestion avoidance");
            }
            let snap = d.snapshot();
            assert_eq!((snap.mode, snap.releases), (Some("normal"), 1));
            assert!(d
                .drain()
                .contains(&Notice::Released { paths: vec![PathId(1), PathId(2), PathId(3)] }));
        }
    }

    #[test]
    fn a_ce_round_resets_the_release_count() {
        let mut d = suppressed(8);
        for _ in 0..7 {
            d.round(0, 2, 0);
        }
        d.round(0, 2, 1); // CE on the initial path: start over
        for _ in 0..7 {
            d.round(0, 2, 0);
            assert!(!d.cc.may_send(PathId(1)));
        }
        d.round(0, 2, 0);
        assert!(d.cc.may_send(PathId(1)));
    }

    #[test]
    fn ce_on_other_paths_does_not_delay_release() {
        let mut d = suppressed(2);
        d.round(1, 1, 1);
        d.round(0, 2, 0);
        d.round(2, 1, 1);
        d.round(0, 2, 0);
        assert!(d.cc.may_send(PathId(1)));
    }

    #[test]
    fn removing_the_initial_path_releases_the_others() {
        let mut d = suppressed(8);
        d.remove_path(0);
        assert!((1..4).all(|id| d.cc.may_send(PathId(id))));
        assert_eq!(d.snapshot().mode, Some("normal"));
    }

    #[test]
    fn a_path_added_during_suppression_starts_suppressed() {
        let mut d = suppressed(8);
        d.add_path(9);
        assert!(!d.cc.may_send(PathId(9)));
        for _ in 0..8 {
            d.round(0, 2, 0);
        }
        assert!(d.cc.may_send(PathId(9)));
    }

    #[test]
    fn a_single_path_is_never_suppressed() {
        let mut d = amp(AmpConfig::default(), 1);
        for _ in 0..20 {
            d.round(0, 2, 1);
        }
        assert!(d.cc.may_send(PathId(0)));
        assert_eq!(d.snapshot().suppressions, 0);
    }
}
