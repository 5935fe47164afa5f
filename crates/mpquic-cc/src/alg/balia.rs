//! BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang, Low, "Multipath TCP:
//! Analysis, Design, and Implementation", IEEE/ACM Transactions on Networking 24(1), 2016,
//! section VI, equations (14) and (15)). Written on the public [`coupled`](crate::coupled) API
//! only.
//!
//! With `x_r = w_r / rtt_r` and `alpha_r = max_k x_k / x_r` over the paths:
//!
//! - Per ACK on path `r` in congestion avoidance, in packets (eq. 14):
//!   `w_r += (x_r / rtt_r) / (sum_k x_k)^2 * ((1 + alpha_r) / 2) * ((4 + alpha_r) / 5)`; in bytes,
//!   for `acked` bytes: `w_r += MSS * acked * (w_r / rtt_r^2) / (sum_k w_k / rtt_k)^2 *
//!   (1 + alpha_r) * (4 + alpha_r) / 10`.
//! - On a congestion reaction (eq. 15): `w_r -= (w_r / 2) * min(alpha_r, 1.5)`, never below
//!   `cwnd_min`; the threshold is the new window. The best path (`alpha = 1`) halves, as Reno;
//!   a path of a quarter or less of the best rate loses three quarters.
//!
//! A single path has `alpha = 1`: the increase is `MSS * acked / w` and the cut a half, Reno.
//! `sum(x)` and `max(x)` come from the core's cached sums, so the increase is O(1) per ACK.
//!
//! Readings:
//! - **(reading)** ECN marks are a congestion signal like a loss, once per round (the core's
//!   gate), as for LIA, and cut by equation (15) too.
//! - **(reading)** Persistent congestion (RFC 9002 section 7.6) is outside the paper: the
//!   window collapses to `cwnd_min` and the threshold falls to equation (15)'s
//!   `w - (w / 2) min(alpha, 1.5)`. Linux's `mptcp_balia.c` answers a retransmission timeout
//!   with its `ssthresh` hook, equation (15), and RFC 9002's pseudocode collapses the window after
//!   the controller's own loss response has set the threshold; both give this threshold. (Until
//!   issue 43's audit it was the core's common `w / 2`, which let a path at `alpha >= 1.5`
//!   restart slow start towards twice the kernel's threshold.) Pinned by
//!   `persistent_congestion_collapses_to_the_floor_with_equation_15_as_threshold`.
//! - **(reading)** A path without an RTT sample has no rate and no `alpha`; it cuts by half, as
//!   Linux's `mptcp_balia.c` falls back to Reno when it cannot compute the rates.
//! - The float arithmetic replaces the kernel's integer scaling of `alpha` and the rates.

use crate::coupled::{standard_congestion, Algorithm, Core, Coupling, Slot};
use crate::{ControllerKind, ReductionCause};

/// `alpha_r = max_k x_k / x_r`, or `None` if the path or the sums have no rate.
pub(crate) fn alpha(core: &Core<()>, s: Slot) -> Option<f64> {
    let x = core.path(s).rate();
    let max = core.sums().max_rate();
    (x > 0.0 && max > 0.0).then(|| (max / x).max(1.0))
}

/// The window after a reaction on the path in `s` (eq. 15), before the `cwnd_min` floor.
fn cut(core: &Core<()>, s: Slot) -> f64 {
    let w = core.path(s).cwnd();
    w - w / 2.0 * alpha(core, s).unwrap_or(1.0).min(1.5)
}

/// BALIA.
#[derive(Debug, Clone, Default)]
pub(crate) struct Balia;

impl Algorithm for Balia {
    type Path = ();

    fn name(&self) -> &'static str {
        ControllerKind::Balia.name()
    }

    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<()>, s: Slot, bytes: u64) -> f64 {
        let p = core.path(s);
        let rate_sum = core.sums().rate_sum();
        let step = p.mss_f() * bytes as f64;
        let Some(a) = alpha(core, s).filter(|_| rate_sum > 0.0) else {
            // Unmeasured or degenerate: Reno, as with one path.
            return step / p.cwnd();
        };
        step * (p.rate() / p.srtt()) / (rate_sum * rate_sum) * (1.0 + a) * (4.0 + a) / 10.0
    }

    fn ecn_target(&self, core: &Core<()>, s: Slot) -> f64 {
        cut(core, s)
    }

    fn on_congestion(&mut self, core: &mut Core<()>, s: Slot, cause: ReductionCause) {
        let floor = core.path(s).cwnd_min();
        match cause {
            ReductionCause::Loss => {
                let target = cut(core, s).max(floor);
                core.reduce(s, target, target, cause);
            }
            // The window collapses after the loss response has set the threshold (RFC 9002's
            // order), so the threshold is equation (15)'s, as Linux's BALIA sets on a timeout.
            ReductionCause::PersistentCongestion => {
                core.reduce(s, floor, cut(core, s).max(floor), cause);
            }
            _ => standard_congestion(self, core, s, cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Balia;
    use crate::coupled::Coupled;
    use crate::testkit::Driver;

    const MSS: f64 = 1200.0;

    /// Two paths in congestion avoidance: 20 packets at 100 us and 10 packets at 300 us, so
    /// `x = 240 MB/s` and `40 MB/s`: `alpha = 1` and `6`.
    fn two_paths() -> Driver<Coupled<Balia>> {
        let mut d = Driver::with(Coupled::new(Balia));
        for (id, rtt, w) in [(0, 100, 24_000), (1, 300, 12_000)] {
            d.add_path(id);
            d.set_rtt(id, Duration::from_micros(rtt));
            d.force_window(id, w);
        }
        d
    }

    /// Equation (14) in bytes for one full-size ACK on path `r` of `(w, rtt)` pairs.
    fn expected_increase(all: &[(f64, f64)], r: usize) -> f64 {
        let x: Vec<f64> = all.iter().map(|&(w, rtt)| w / rtt).collect();
        let (sum, max) = (x.iter().sum::<f64>(), x.iter().copied().fold(0.0, f64::max));
        let a = max / x[r];
        let (w, rtt) = all[r];
        MSS * MSS * (w / (rtt * rtt)) / (sum * sum) * ((1.0 + a) / 2.0) * ((4.0 + a) / 5.0)
    }

    #[test]
    fn increase_is_equation_14() {
        let mut d = two_paths();
        let mut all = [(24_000.0, 100e-6), (12_000.0, 300e-6)];
        for r in [1, 0, 1, 1, 0] {
            let inc = expected_increase(&all, r);
            d.send(r as u32, 1);
            d.ack(r as u32, 1, 0);
            all[r].0 += inc;
            assert!((d.cwnd(r as u32) - all[r].0).abs() < 1e-6, "path {r}");
        }
    }

    #[test]
    fn one_path_is_reno() {
        let mut d = Driver::with(Coupled::new(Balia));
        d.add_path(0);
        d.force_window(0, 12_000);
        d.send(0, 2);
        d.ack(0, 1, 0);
        assert!((d.cwnd(0) - (12_000.0 + MSS * MSS / 12_000.0)).abs() < 1e-9);
        let before = d.cwnd(0);
        d.lose(0, 1);
        assert_eq!(d.cwnd(0), before / 2.0);
    }

    #[test]
    fn the_cut_is_equation_15_for_loss_and_ecn() {
        // Path 1 at alpha = 6: min(6, 1.5) = 1.5, so w -= 0.75 w.
        let mut d = two_paths();
        d.send(1, 2);
        d.lose(1, 1);
        assert_eq!(d.cwnd(1), 12_000.0 * 0.25);
        assert_eq!(d.state(1).ssthresh(), 12_000.0 * 0.25);
        // Path 0 is the fastest (alpha = 1): it halves, on a CE report.
        d.send(0, 2);
        d.ack(0, 0, 1);
        assert_eq!(d.cwnd(0), 12_000.0);
        // Once per round: the second packet's loss on path 1 is of the same round.
        d.lose(1, 1);
        assert_eq!(d.cwnd(1), 3_000.0);
        // A path at 0.8 of the best rate: alpha = 1.25, w -= w * 0.625.
        let mut d = two_paths();
        d.set_rtt(1, Duration::from_micros(100));
        d.force_window(0, 24_000);
        d.force_window(1, 19_200);
        d.send(1, 1);
        d.lose(1, 1);
        assert!((d.cwnd(1) - 19_200.0 * (1.0 - 1.25 / 2.0)).abs() < 1e-9);
    }

    /// A CE report on a path below the best rate cuts by equation (15) too, not by half: path
    /// 1 at alpha = 6 keeps a quarter of its window.
    #[test]
    fn an_ecn_cut_off_the_best_path_is_equation_15() {
        let mut d = two_paths();
        d.send(1, 2);
        d.ack(1, 0, 1);
        assert_eq!(d.cwnd(1), 12_000.0 * 0.25);
        assert_eq!(d.state(1).ssthresh(), 12_000.0 * 0.25);
    }

    /// Persistent congestion: the window to `cwnd_min`, the threshold to equation (15)'s cut,
    /// `w (1 - min(alpha, 1.5) / 2)`: a quarter of the window for path 1 (`alpha = 6`), half of
    /// it for the best path.
    #[test]
    fn persistent_congestion_collapses_to_the_floor_with_equation_15_as_threshold() {
        let mut d = two_paths();
        d.send(1, 2);
        let pn = d.state(1).sent_packets() - 1;
        d.lose_pn(1, pn, true);
        assert_eq!(d.cwnd(1), d.state(1).cwnd_min());
        assert_eq!(d.state(1).ssthresh(), 12_000.0 * 0.25);
        d.send(0, 2);
        let pn = d.state(0).sent_packets() - 1;
        d.lose_pn(0, pn, true);
        assert_eq!(d.cwnd(0), d.state(0).cwnd_min());
        assert_eq!(d.state(0).ssthresh(), 24_000.0 * 0.5);
    }
}
