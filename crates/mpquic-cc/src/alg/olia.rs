//! OLIA, the Opportunistic Linked-Increases Algorithm (Khalili, Gast, Popovic, Le Boudec,
//! "MPTCP is not Pareto-optimal: performance issues and a possible solution", CoNEXT 2012,
//! section 5, equation (5)), with halving on loss or CE. Written on the public
//! [`coupled`](crate::coupled) API only.
//!
//! Per ACK on path `r` in congestion avoidance, in packets (equation 5):
//! `w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r`; in bytes, for `acked` bytes,
//! `w_r += MSS * acked * ((w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r)`. The first
//! term is the Pareto-optimal part (it takes the place of LIA's coupled term, with no Reno cap);
//! `alpha_r` moves window from the paths with the largest windows to the best paths:
//!
//! - `l_r = max(l1_r, l2_r)`: `l2_r` the bytes acknowledged on `r` since its last congestion
//!   reaction, `l1_r` those between its two last reactions (an estimate of `1 / loss rate`);
//! - `B`: the paths that maximise `l_r / rtt_r^2` (those a regular TCP would give the most rate:
//!   its rate squared goes as `l / rtt^2`); `M`: the paths with the largest window;
//! - if `B \ M` is not empty: `alpha_r = 1 / (|P| * |B \ M|)` on `B \ M`,
//!   `alpha_r = -1 / (|P| * |M|)` on `M`, 0 elsewhere; otherwise every `alpha_r = 0`.
//!
//! A single path has `alpha = 0` and the first term is `MSS * acked / w`: Reno.
//!
//! Readings:
//! - **(reading)** A "loss" of the paper is any congestion reaction that passed the core's
//!   once-per-round gate, ECN or loss, as for LIA: one per round at most.
//! - **(reading)** `B` maximises `l_r / rtt_r^2`, as the CoNEXT paper and Linux's
//!   `mptcp_olia.c` (`mptcp_get_epsilon`: `l * best_rtt^2 >= best_l * rtt^2`) do.
//!   draft-khalili-mptcp-congestion-control-05 defines `best_paths` by `l_r^2 / rtt_r`, but its
//!   own rationale (a regular TCP's rate goes as `sqrt(l) / rtt`, so its square as `l / rtt^2`)
//!   agrees with the paper and the kernel: `l^2 / rtt` would rank paths by their loss interval
//!   far more than by their RTT (path 2 of `the_best_path_is_judged_by_l_over_rtt_squared`, twice
//!   the interval at 1.5 times the RTT, would be the best path).
//! - **(reading)** `P`, `B` and `M` range over the active paths with an RTT sample (the others
//!   have no rate), so `n = |P|` counts only those. The draft's `number_of_paths` is every path;
//!   the kernel takes its sets over the subflows with an RTT sample and `n` from the established
//!   ones, nearly the same set, since a TCP subflow is measured by its handshake. A QUIC path
//!   is first measured when a packet sent on it is acknowledged, so for about its first RTT a new
//!   path is left out of `n` here: the other paths' `alpha` are `(n + 1) / n` times the kernel's
//!   (3/2 as a third path joins two), and window moves that much faster to the best path for that
//!   round trip (the new path itself is in slow start, where `alpha` plays no part).
//!   `n_counts_only_the_paths_with_an_rtt_sample` pins it.
//! - **(reading)** `M` is judged in whole packets (`floor(w / MSS)`), as the paper's and the
//!   kernel's packet-counting windows are: byte windows almost never tie exactly, and a path a
//!   fraction of a packet below the largest window is as much "the largest" as in the kernel.
//!   `B` ties are exact.
//! - **(reading)** A reaction with nothing acknowledged since the last one does not shift `l`
//!   (the kernel's `loss3 != loss2` test), so a burst of reactions cannot zero the estimate.
//! - The sets are evaluated per ACK, an O(paths) scan, as the kernel does; the first term uses
//!   the core's cached `sum(w / rtt)`.
//! - A negative increase (`alpha < 0` on a path of `M`) shrinks the window, never below
//!   `cwnd_min` (the kernel's floor is one packet). With ACKs of at most one MSS the floor is
//!   never reached: `alpha` is negative only while the path has more whole packets than a best
//!   path, which has at least the `m` packets of `cwnd_min`, so the window is at least one packet
//!   above the floor when an ACK arrives, and an ACK of `bytes` takes at most
//!   `bytes / (2 (m + 1))` from it (`n >= 2`, `w >= (m + 1) MSS`). Only an ACK event reporting
//!   `2 (m + 1)` packets' bytes or more can reach the floor
//!   (`a_negative_increase_stops_at_cwnd_min`).
//! - Persistent congestion (RFC 9002 section 7.6, outside the paper and the draft) is the core's
//!   common ground: window to `cwnd_min`, threshold to `w / 2`, as the kernel's Reno `ssthresh`
//!   on a retransmission timeout. It is a reaction like any other for `l`: the interval before
//!   it becomes `l1` (`persistent_congestion_collapses_the_window_and_shifts_l`).

use crate::coupled::{standard_congestion, Algorithm, Core, Coupling, PathState, Slot};
use crate::{ControllerKind, ReductionCause};

/// OLIA's per-path inter-loss estimate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct OliaPath {
    /// The path's acknowledged bytes at its last reaction.
    mark: u64,
    /// Bytes acknowledged between its two last reactions (`l1`).
    between: u64,
}

/// `l_r`: the larger of the bytes acknowledged since the last reaction and between the two
/// last ones.
fn inter_loss(p: &PathState<OliaPath>) -> u64 {
    p.acked_bytes().saturating_sub(p.ext().mark).max(p.ext().between)
}

/// `l_r / rtt_r^2`, the path's quality for `B`.
fn quality(p: &PathState<OliaPath>) -> f64 {
    inter_loss(p) as f64 / (p.srtt() * p.srtt())
}

/// The window in whole packets, for `M`.
fn packets(p: &PathState<OliaPath>) -> u64 {
    (p.cwnd() / p.mss_f()) as u64
}

fn counts(p: &PathState<OliaPath>) -> bool {
    p.is_active() && p.srtt() > 0.0
}

/// `alpha_r` of the path in `s` (equation 5's opportunistic term).
pub(crate) fn alpha(core: &Core<OliaPath>, s: Slot) -> f64 {
    let paths = || core.paths().filter(|p| counts(p));
    let (Some(largest), Some(best)) =
        (paths().map(packets).max(), paths().map(quality).max_by(f64::total_cmp))
    else {
        return 0.0;
    };
    let in_m = |p: &PathState<OliaPath>| packets(p) == largest;
    let in_c = |p: &PathState<OliaPath>| quality(p) == best && !in_m(p);
    let collected = paths().filter(|p| in_c(p)).count();
    let p = core.path(s);
    if collected == 0 || !counts(p) {
        return 0.0;
    }
    let n = paths().count() as f64;
    if in_c(p) {
        1.0 / (n * collected as f64)
    } else if in_m(p) {
        -1.0 / (n * paths().filter(|p| in_m(p)).count() as f64)
    } else {
        0.0
    }
}

/// OLIA with halving on loss or CE.
#[derive(Debug, Clone, Default)]
pub(crate) struct Olia;

impl Algorithm for Olia {
    type Path = OliaPath;

    fn name(&self) -> &'static str {
        ControllerKind::Olia.name()
    }

    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<OliaPath>, s: Slot, bytes: u64) -> f64 {
        let p = core.path(s);
        let rate_sum = core.sums().rate_sum();
        let step = p.mss_f() * bytes as f64;
        // The path was just measured and is active, so rate_sum > 0; guard anyway so a
        // degenerate state falls back to Reno rather than producing NaN.
        if rate_sum.is_nan() || rate_sum <= 0.0 || p.srtt() <= 0.0 {
            return step / p.cwnd();
        }
        let pareto = step * (p.rate() / p.srtt()) / (rate_sum * rate_sum);
        pareto + step * alpha(core, s) / p.cwnd()
    }

    fn on_congestion(&mut self, core: &mut Core<OliaPath>, s: Slot, cause: ReductionCause) {
        let acked = core.path(s).acked_bytes();
        let ext = core.ext_mut(s);
        if acked != ext.mark {
            ext.between = acked - ext.mark;
            ext.mark = acked;
        }
        standard_congestion(self, core, s, cause);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{alpha, Olia};
    use crate::coupled::Coupled;
    use crate::testkit::Driver;
    use crate::PathId;

    const MSS: f64 = 1200.0;

    fn alpha_of(d: &Driver<Coupled<Olia>>, path: u32) -> f64 {
        let core = d.cc.core();
        alpha(core, core.slot(PathId(path)).unwrap())
    }

    /// Equation (5) in bytes for one full-size ACK on a path of window `w` and RTT `rtt`, given
    /// every path's `(w, rtt)` and the path's `alpha`.
    fn expected_increase(w: f64, rtt: f64, all: &[(f64, f64)], alpha: f64) -> f64 {
        let rate_sum: f64 = all.iter().map(|&(w, r)| w / r).sum();
        MSS * MSS * ((w / (rtt * rtt)) / (rate_sum * rate_sum) + alpha / w)
    }

    /// Three paths of equal RTT whose inter-loss distances are set by scripted rounds and one
    /// loss each: `l = 12000, 6000, 24000` bytes.
    fn three_paths_after_one_loss_each() -> Driver<Coupled<Olia>> {
        let mut d = Driver::with(Coupled::new(Olia));
        for (id, packets) in [(0, 10), (1, 5), (2, 20)] {
            d.add_path(id);
            d.round(id, packets, 0);
            d.send(id, 1);
            d.lose(id, 1);
        }
        d
    }

    #[test]
    fn one_path_is_reno() {
        let mut d = Driver::with(Coupled::new(Olia));
        d.add_path(0);
        d.force_window(0, 12_000);
        d.send(0, 1);
        d.ack(0, 1, 0);
        assert_eq!(alpha_of(&d, 0), 0.0);
        assert!((d.cwnd(0) - (12_000.0 + MSS * MSS / 12_000.0)).abs() < 1e-9);
    }

    #[test]
    fn alpha_moves_window_from_the_largest_to_the_best_path() {
        let mut d = three_paths_after_one_loss_each();
        // M = {0} (the largest window), B = {2} (the largest l at equal RTTs): B \ M = {2}.
        let windows = [24_000.0, 12_000.0, 12_000.0];
        for (id, w) in windows.iter().enumerate() {
            d.force_window(id as u32, *w as u64);
        }
        assert_eq!(alpha_of(&d, 0), -1.0 / 3.0);
        assert_eq!(alpha_of(&d, 1), 0.0);
        assert_eq!(alpha_of(&d, 2), 1.0 / 3.0);
        let rtt = crate::testkit::RTT.as_secs_f64();
        let mut all: Vec<(f64, f64)> = windows.iter().map(|&w| (w, rtt)).collect();
        // One ACK on each path in turn; each ACK adds 1200 bytes to l2, below every l1, so the
        // sets stay as they are.
        for (id, a) in [(2, 1.0 / 3.0), (0, -1.0 / 3.0), (1, 0.0)] {
            let inc = expected_increase(all[id].0, rtt, &all, a);
            d.send(id as u32, 1);
            d.ack(id as u32, 1, 0);
            all[id].0 += inc;
            assert!((d.cwnd(id as u32) - all[id].0).abs() < 1e-6, "path {id}");
        }
        assert!(d.cwnd(0) < 24_000.0, "the largest path gave window away");
    }

    #[test]
    fn alpha_is_zero_when_the_best_paths_have_the_largest_windows() {
        let mut d = three_paths_after_one_loss_each();
        for (id, w) in [(0, 12_000), (1, 12_000), (2, 24_000)] {
            d.force_window(id, w);
        }
        for id in 0..3 {
            assert_eq!(alpha_of(&d, id), 0.0, "path {id}");
        }
    }

    #[test]
    fn the_best_path_is_judged_by_l_over_rtt_squared() {
        let mut d = three_paths_after_one_loss_each();
        // Path 2 has twice path 0's l but 1.5 times its RTT: 2 / 2.25 < 1, so path 0 is best.
        d.set_rtt(2, Duration::from_micros(150));
        for (id, w) in [(0, 12_000), (1, 24_000), (2, 12_000)] {
            d.force_window(id, w);
        }
        assert_eq!(alpha_of(&d, 0), 1.0 / 3.0);
        assert_eq!(alpha_of(&d, 1), -1.0 / 3.0);
        assert_eq!(alpha_of(&d, 2), 0.0);
    }

    /// `l = max(l1, l2)`: bytes acknowledged since the last reaction count as soon as they
    /// exceed the interval before it. Path 1's `l1` is 6000 bytes, below path 2's 24000; 15
    /// packets later without a loss its `l2` is 18000, still below; 10 more make it 30000, and
    /// path 1 is the best path (`M` stays path 0, the largest window).
    #[test]
    fn bytes_since_the_last_loss_count_once_they_exceed_the_interval_before_it() {
        let mut d = three_paths_after_one_loss_each();
        for (id, w) in [(0, 24_000), (1, 12_000), (2, 12_000)] {
            d.force_window(id, w);
        }
        assert_eq!((alpha_of(&d, 1), alpha_of(&d, 2)), (0.0, 1.0 / 3.0));
        d.round(1, 15, 0);
        assert_eq!(super::inter_loss(d.state(1)), 18_000);
        assert_eq!((alpha_of(&d, 1), alpha_of(&d, 2)), (0.0, 1.0 / 3.0), "l2 below path 2's l");
        d.round(1, 10, 0);
        assert_eq!(super::inter_loss(d.state(1)), 30_000);
        assert_eq!((alpha_of(&d, 1), alpha_of(&d, 2)), (1.0 / 3.0, 0.0), "l2 above every l");
    }

    /// A path joins the three of `alpha_moves_window_from_the_largest_to_the_best_path` and has
    /// no RTT sample yet: `n` stays 3 and the new path has no `alpha`. Once measured (a window of
    /// 10 packets, no loss yet: neither in `M` nor in `B`) it counts, and `n = 4`.
    #[test]
    fn n_counts_only_the_paths_with_an_rtt_sample() {
        let mut d = three_paths_after_one_loss_each();
        for (id, w) in [(0, 24_000), (1, 12_000), (2, 12_000)] {
            d.force_window(id, w);
        }
        d.add_path(3);
        assert_eq!(d.state(3).srtt(), 0.0);
        assert_eq!([0, 2, 3].map(|id| alpha_of(&d, id)), [-1.0 / 3.0, 1.0 / 3.0, 0.0]);
        d.force_window(3, 12_000);
        assert_eq!([0, 2, 3].map(|id| alpha_of(&d, id)), [-1.0 / 4.0, 1.0 / 4.0, 0.0]);
    }

    /// Path 0 (3 packets, 100 us) is `M`; path 1 (2 packets, 50 us, the same `l`) is `B`, so
    /// path 0's `alpha` is -1/2. One ACK event reporting 18 packets' bytes on path 0 would take
    /// it below `cwnd_min` (2 packets); the window stops there.
    #[test]
    fn a_negative_increase_stops_at_cwnd_min() {
        let mut d = Driver::with(Coupled::new(Olia));
        for id in [0, 1] {
            d.add_path(id);
            d.round(id, 10, 0);
            d.send(id, 1);
            d.lose(id, 1);
        }
        d.set_rtt(1, Duration::from_micros(50));
        d.force_window(0, 3_600);
        d.force_window(1, 2_400);
        assert_eq!((alpha_of(&d, 0), alpha_of(&d, 1)), (-0.5, 0.5));
        let all = [(3_600.0, 100e-6), (2_400.0, 50e-6)];
        let unfloored = 3_600.0 + 18.0 * expected_increase(3_600.0, 100e-6, &all, -0.5);
        assert!(unfloored > 0.0 && unfloored < d.state(0).cwnd_min(), "{unfloored}");
        d.send(0, 1);
        d.ack_bytes(0, 18 * 1200);
        assert_eq!(d.cwnd(0), d.state(0).cwnd_min());
    }

    /// Persistent congestion: the window to `cwnd_min`, the threshold to half the window (slow
    /// start again), and `l` shifts as on any reaction: the 12000 bytes acknowledged since the
    /// path's start become `l1`.
    #[test]
    fn persistent_congestion_collapses_the_window_and_shifts_l() {
        let mut d = Driver::with(Coupled::new(Olia));
        d.add_path(0);
        d.force_window(0, 24_000);
        d.round(0, 10, 0);
        let w = d.cwnd(0);
        d.send(0, 2);
        let pn = d.state(0).sent_packets() - 1;
        d.lose_pn(0, pn, true);
        assert_eq!(d.cwnd(0), d.state(0).cwnd_min());
        assert_eq!(d.state(0).ssthresh(), w / 2.0);
        assert!(d.state(0).in_slow_start());
        assert_eq!(d.state(0).ext().between, 12_000);
        assert_eq!(super::inter_loss(d.state(0)), 12_000);
    }

    #[test]
    fn ecn_counts_as_a_loss_once_per_round_and_halves() {
        let mut d = Driver::with(Coupled::new(Olia));
        d.add_path(0);
        d.force_window(0, 24_000);
        d.send(0, 4);
        d.ack(0, 2, 0);
        let before = d.cwnd(0);
        d.ack(0, 0, 1); // a frame that reports CE only
        assert_eq!(d.cwnd(0), before / 2.0);
        assert_eq!(d.state(0).ext().between, 2_400);
        d.ack(0, 2, 1); // the same round: no second cut, no growth, no shift
        assert_eq!(d.cwnd(0), before / 2.0);
        assert_eq!(d.state(0).ext().between, 2_400);
        assert_eq!(super::inter_loss(d.state(0)), 2_400);
    }
}
