//! cprague, a coupled multipath Prague: Prague ([`super::prague`]) on every path, coupled in
//! its increase and its decrease, so that a connection whose paths share one L4S bottleneck
//! takes about what one Prague flow takes there, and one over disjoint paths uses them all and
//! moves its traffic off the marked ones.
//!
//! Per path, the rest is Prague's: ECT(1), `alpha` (a 1/16-gain EWMA of each round's CE
//! fraction), at most one cut per round, Reno's halving on loss, the increase scaled by
//! `srtt / rtt_target` below the target. The two changes, on path `r`:
//!
//! - **Increase** (per ACK in congestion avoidance): Prague's, times the best path's share of
//!   the connection's rate, `c = max_k(w_k / rtt_k) / sum_k(w_k / rtt_k)` over the active
//!   measured paths (1 with one path).
//! - **Decrease** (on CE, once per round): `w_r * (1 - min(1, alpha_r * m / m_r) / 2)`, where
//!   `m_r` is the share of path `r`'s rounds in which it was marked and `m` the share of them in
//!   which the connection was marked on any path (1/16-gain EWMAs, starting at 1). With one
//!   path `m = m_r`: cprague is Prague.
//!
//! Why (docs/L4S.md has the algebra and the checks). A scalable response settles where a
//! path's growth per round, `a_r` packets, meets its expected cut per round,
//! `w_r * alpha_r / 2` times `m_r`:
//! - The increase: at one bottleneck every path sees one marking, so the windows follow the
//!   increases, and an equal increase `c = 1/n` on `n` paths sums to one flow's window. An
//!   uneven split is no resting point: every path grows alike (`c` is one number per
//!   connection) and the larger is cut more. Over disjoint paths the windows go inversely to
//!   the marking, so traffic leaves the marked path. LIA's increase (in proportion to `w_r`)
//!   does not fit a scalable cut: the balance then fixes the marking and not the window, and
//!   `n` equal paths settle at `1/n` of one flow.
//! - The decrease: one flow of the connection's size is marked in more of its rounds than any
//!   of its smaller paths (a few marks per round, spread over `n` paths, miss some of them),
//!   so paths cut as Prague cuts would together take more than one flow: 1.3x over two paths
//!   and 1.6-2x over four at a shared step marker in the round-by-round script below. Scaling
//!   each cut by `m / m_r` makes a path's expected cut per round `w_r * alpha_r * m / 2`, as if
//!   it were marked whenever the connection is. `alpha_r <= m_r` (a marked fraction is at most
//!   the indicator that a round was marked, under the same EWMA), so no cut exceeds a half. A
//!   path that is rarely marked while others are (a disjoint, idle bottleneck) is cut by
//!   about half its marked packets when it is marked, and keeps growing between.

use std::collections::BTreeMap;

use super::alpha::{self, Alpha};
use super::dctcp::Dctcp;
use super::prague::{prague, PARAMETERS};
use crate::coupled::{Algorithm, Core, Coupled, Coupling, RoundStats, Slot};
use crate::{EcnCodepoint, PathId, Registration};

/// The name cprague is registered under.
pub(crate) const NAME: &str = "cprague";

/// The registration: `cprague:g=0.0625,rtt_target=25`, Prague's parameters.
pub(crate) fn registration() -> Registration {
    Registration::new(NAME, PARAMETERS, |params| {
        Ok(Box::new(Coupled::new(Cprague::new(prague(params)?))))
    })
}

/// Prague on every path ([`Dctcp`] with [`super::dctcp::L4s`]), plus what couples the paths.
#[derive(Debug, Clone)]
pub(crate) struct Cprague {
    prague: Dctcp,
    /// CE increases on any path of the connection, ever.
    ce_signals: u64,
    /// Per path, its marked-round shares.
    marking: BTreeMap<PathId, Marking>,
}

/// The shares of a path's rounds that were marked: on the path itself (`m_r`) and anywhere in
/// the connection (`m`), as 1/16-gain EWMAs starting at 1 (a marked round until shown
/// otherwise, as `alpha` starts at 1).
#[derive(Debug, Clone, Copy)]
struct Marking {
    on_path: f64,
    in_connection: f64,
    /// `ce_signals` when the path's current round began.
    ce_signals_at_round_start: u64,
}

impl Cprague {
    pub(crate) fn new(prague: Dctcp) -> Self {
        Cprague { prague, ce_signals: 0, marking: BTreeMap::new() }
    }

    /// The path in `s`'s round ended: alpha's update (Prague's) and the marked-round shares.
    fn round_ended(&mut self, core: &mut Core<Alpha>, s: Slot, round: &RoundStats) {
        alpha::update(core, s, round, self.prague.g);
        let g = self.prague.g;
        let ce_signals = self.ce_signals;
        if let Some(m) = self.marking.get_mut(&core.id(s)) {
            let in_connection = ce_signals > m.ce_signals_at_round_start;
            m.on_path = (1.0 - g) * m.on_path + g * f64::from(u8::from(round.ce_events > 0));
            m.in_connection = (1.0 - g) * m.in_connection + g * f64::from(u8::from(in_connection));
            m.ce_signals_at_round_start = ce_signals;
        }
    }
}

impl Algorithm for Cprague {
    type Path = Alpha;

    fn name(&self) -> &'static str {
        NAME
    }

    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<Alpha>, s: Slot, bytes: u64) -> f64 {
        self.prague.ca_increase(core, s, bytes) * best_path_share(core)
    }

    fn ecn_target(&self, core: &Core<Alpha>, s: Slot) -> f64 {
        let p = core.path(s);
        let alpha = p.ext().0;
        let cut = match self.marking.get(&p.id()) {
            Some(m) if m.on_path > 0.0 => (alpha * m.in_connection / m.on_path).min(1.0),
            _ => alpha,
        };
        p.cwnd() * (1.0 - cut / 2.0)
    }

    fn on_ce_signal(&mut self, core: &mut Core<Alpha>, s: Slot) {
        self.ce_signals += 1;
        if let Some(round) = core.end_round_now(s) {
            self.round_ended(core, s, &round);
        }
    }

    fn on_round_end(&mut self, core: &mut Core<Alpha>, s: Slot, round: &RoundStats) {
        self.round_ended(core, s, round);
    }

    fn on_path_added(&mut self, core: &mut Core<Alpha>, s: Slot) {
        let fresh = Marking {
            on_path: 1.0,
            in_connection: 1.0,
            ce_signals_at_round_start: self.ce_signals,
        };
        self.marking.insert(core.id(s), fresh);
    }

    fn on_path_removed(&mut self, _core: &mut Core<Alpha>, removed: PathId, _was_initial: bool) {
        self.marking.remove(&removed);
    }

    fn alpha(&self, path: &Alpha) -> Option<f64> {
        Some(path.0)
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::Ect1
    }
}

/// `c`: the best path's share of the connection's rate, `max(w / srtt) / sum(w / srtt)` over
/// the active measured paths; 1 while no path has a rate (needs [`Coupling::Rates`]).
fn best_path_share<X>(core: &Core<X>) -> f64 {
    let sums = core.sums();
    let (max, sum) = (sums.max_rate(), sums.rate_sum());
    if sum > 0.0 && max.is_finite() {
        (max / sum).min(1.0)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Cprague;
    use crate::alg::dctcp::{Dctcp, L4s};
    use crate::coupled::Coupled;
    use crate::testkit::{shared_step_link, Driver, FluidPath, StepLink};
    use crate::{ControllerChoice, EcnCodepoint};

    fn driver(name: &str) -> Driver {
        Driver::with(ControllerChoice::parse(name, ["rtt_target=0"]).unwrap().build())
    }

    /// One path: the same events give Prague's windows exactly.
    #[test]
    fn on_one_path_it_is_prague() {
        let script = |d: &mut Driver| {
            d.add_path(0);
            d.round(0, 10, 0);
            d.round(0, 20, 3);
            for _ in 0..5 {
                let n = d.window(0) / 1200;
                d.ack_each_round(0, n);
            }
            d.round(0, d.window(0) / 1200, 2);
            d.window(0)
        };
        let (mut c, mut p) = (driver("cprague"), driver("prague"));
        assert_eq!(script(&mut c), script(&mut p));
        assert_eq!(c.cc.ecn_codepoint(), EcnCodepoint::Ect1);
        assert_eq!(c.cc.name(), "cprague");
    }

    /// The increase on a path in congestion avoidance is Prague's times `c`: with windows
    /// 24000 and 12000 bytes at one RTT, `c = 2/3`, so one 1200-byte ACK on path 1 grows it
    /// by `1200 * 1200 / 12000 * 2/3` = 80 bytes.
    #[test]
    fn the_increase_is_scaled_by_the_best_paths_share() {
        let l4s = Some(L4s { rtt_target: 0.0 });
        let mut d = Driver::with(Coupled::new(Cprague::new(Dctcp { g: 1.0 / 16.0, l4s })));
        d.add_path(0);
        d.add_path(1);
        d.force_window(0, 24_000);
        d.force_window(1, 12_000);
        d.send(1, 1);
        let before = d.cwnd(1);
        d.ack(1, 1, 0);
        let expected = 1200.0 * 1200.0 / 12_000.0 * 2.0 / 3.0;
        assert!((d.cwnd(1) - before - expected).abs() < 1e-9, "{}", d.cwnd(1) - before);
    }

    /// A CE cut is Prague's `alpha` scaled by `m / m_r`. Path 0's first round ends unmarked
    /// while path 1 was marked during it; its second ends with 2 of 20 marked, and that frame's
    /// CE cuts (the EWMAs first, then the cut, as for alpha), derived step by step.
    #[test]
    fn the_cut_is_scaled_by_the_marked_round_shares() {
        let g = 1.0 / 16.0;
        let mut d = driver("cprague");
        d.add_path(0);
        d.add_path(1);
        d.send(0, 10);
        d.round(1, 10, 1);
        d.ack(0, 10, 0); // path 0: unmarked round, the connection marked during it
        let (alpha, on_path, in_connection) = (1.0 - g, 1.0 - g, 1.0);
        assert_eq!(d.path(0).alpha, Some(alpha));
        assert_eq!(d.window(0), 24_000, "slow start: 12000 + 10 ACKs");
        d.round(0, 20, 2); // slow start to 48000, then the cut
        let alpha = (1.0 - g) * alpha + g * 0.1;
        let on_path = (1.0 - g) * on_path + g;
        let in_connection = (1.0 - g) * in_connection + g;
        let cut = alpha * in_connection / on_path;
        assert!((d.path(0).alpha.unwrap() - alpha).abs() < 1e-12);
        assert_eq!(d.window(0), (48_000.0 * (1.0 - cut / 2.0)) as u64);
        assert!(cut > alpha, "the path was marked in fewer rounds than the connection");
    }

    /// The L4S case: one step-marked bottleneck shared by a single-path Prague flow and a
    /// connection of 2 or 4 paths, at three sizes (pipe / step, in packets). cprague's paths
    /// together take about the single flow's rate; uncoupled Prague on every path takes n times.
    #[test]
    fn at_a_shared_step_marker_it_takes_what_one_prague_flow_takes() {
        let rtt = Duration::from_millis(1);
        let ratio = |multipath: &str, paths: u32, link: StepLink| {
            let (mut mp, mut single) = (driver(multipath), driver("prague"));
            let rates =
                shared_step_link(&mut [(&mut mp, paths), (&mut single, 1)], link, rtt, 4000);
            rates[0] / rates[1]
        };
        for (bdp, threshold) in [(60, 20), (200, 40), (1000, 100)] {
            let link = StepLink { bdp, threshold };
            for paths in [2, 4] {
                let coupled = ratio("cprague", paths, link);
                assert!((0.9..=1.1).contains(&coupled), "cprague x{paths} at {link:?}: {coupled}");
                let uncoupled = ratio("prague", paths, link) / paths as f64;
                assert!(
                    (0.9..=1.1).contains(&uncoupled),
                    "prague x{paths} at {link:?}: {uncoupled}n"
                );
            }
        }
    }

    /// Disjoint paths at fixed prices: the windows go inversely to the marking, so the path
    /// marked four times as often carries about a quarter of the other's rate.
    #[test]
    fn it_moves_traffic_off_the_more_marked_path() {
        let rtt = Duration::from_millis(1);
        let paths = [FluidPath { rtt, mark: 0.01 }, FluidPath { rtt, mark: 0.04 }];
        let rates = driver("cprague").fluid_rates(&paths, 4000);
        let ratio = rates[0] / rates[1];
        assert!((2.5..=6.0).contains(&ratio), "rates {rates:?}");
    }

    /// What the design does not cover, kept visible: with marks at a fixed probability on every
    /// packet (independent of the windows), two cprague paths take more than one Prague flow,
    /// though less than two uncoupled ones.
    #[test]
    fn at_fixed_prices_two_paths_take_more_than_one_flow() {
        let rtt = Duration::from_millis(1);
        let path = FluidPath { rtt, mark: 0.05 };
        let one = driver("prague").fluid_rates(&[path], 3000)[0];
        let sum = |name| driver(name).fluid_rates(&[path, path], 3000).iter().sum::<f64>();
        let (coupled, uncoupled) = (sum("cprague") / one, sum("prague") / one);
        assert!(coupled > 1.15 && coupled < uncoupled, "cprague {coupled}, prague {uncoupled}");
    }
}
