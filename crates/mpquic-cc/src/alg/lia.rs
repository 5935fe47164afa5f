//! LIA, the Linked Increases Algorithm of MPTCP (RFC 6356), with halving on loss or CE. It is
//! "MPTCP" in the AMP, XMP and MMPTCP papers.
//!
//! Per ACK on path `s` in congestion avoidance (RFC 6356 section 3, in bytes):
//! `w_s += min(a * MSS * acked / W_total, MSS * acked / w_s)` with
//! `a = W_total * max_r(w_r / rtt_r^2) / (sum_r w_r / rtt_r)^2` over the active paths, `rtt` the
//! smoothed RTT. `W_total` cancels out of the first term, which is what is computed:
//! `MSS * acked * max_r(w_r / rtt_r^2) / (sum_r w_r / rtt_r)^2`, from the sums the core caches,
//! so the increase is O(1) per ACK.
//!
//! The second term caps every path at what a single Reno flow on it would do; together with `a`
//! this meets RFC 6356's goals: a multipath flow takes no more than a single TCP flow would on the
//! best of its paths.
//!
//! Readings: paths without an RTT sample yet take no part in `a` (they have no rate); the float
//! arithmetic replaces RFC 6356's integer scaling of `alpha`, which it only needs for kernels.

use crate::coupled::{Algorithm, Core, Coupling, Slot};
use crate::ControllerKind;

/// RFC 6356's coupled increase for `bytes` acknowledged on path `i`; shared by LIA, DCM and
/// MMPTCP's second phase. Needs [`Coupling::Rates`].
#[inline]
pub(crate) fn lia_increase<X>(core: &Core<X>, s: Slot, bytes: u64) -> f64 {
    let p = core.path(s);
    let (rate_sum, max_lia) = (core.sums().rate_sum(), core.sums().max_rate_per_rtt());
    let step = p.mss_f() * bytes as f64;
    let uncoupled = step / p.cwnd();
    // The path was just measured and is active, so rate_sum > 0; guard anyway so a degenerate
    // state falls back to Reno rather than producing NaN.
    if rate_sum.is_nan() || rate_sum <= 0.0 {
        return uncoupled;
    }
    let coupled = step * max_lia / (rate_sum * rate_sum);
    coupled.min(uncoupled)
}

/// RFC 6356's `alpha` (called `a` in the AMP paper), for snapshots and tests.
#[cfg(test)]
pub(crate) fn lia_a<X>(core: &Core<X>) -> f64 {
    let w_total: f64 =
        core.paths().filter(|p| p.is_active() && p.srtt() > 0.0).map(|p| p.cwnd()).sum();
    let sums = core.sums();
    w_total * sums.max_rate_per_rtt() / (sums.rate_sum() * sums.rate_sum())
}

/// LIA with halving on loss or CE.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lia;

impl Algorithm for Lia {
    type Path = ();

    fn name(&self) -> &'static str {
        ControllerKind::Lia.name()
    }

    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<()>, s: Slot, bytes: u64) -> f64 {
        lia_increase(core, s, bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::{lia_a, Lia};
    use crate::coupled::Coupled;
    use crate::testkit::Driver;

    fn us(x: u64) -> Duration {
        Duration::from_micros(x)
    }

    /// Two paths in congestion avoidance with the given windows (in packets) and RTTs.
    fn two_paths(w0: u64, w1: u64, rtt0: u64, rtt1: u64) -> Driver<Coupled<Lia>> {
        let mut d = Driver::with(Coupled::new(Lia));
        d.add_path(0);
        d.add_path(1);
        d.set_rtt(0, us(rtt0));
        d.set_rtt(1, us(rtt1));
        d.force_window(0, w0 * 1200);
        d.force_window(1, w1 * 1200);
        d
    }

    #[test]
    fn increase_is_rfc6356s_formula() {
        let mut d = two_paths(20, 10, 100, 300);
        let (w0, w1, r0, r1) = (24_000.0f64, 12_000.0f64, 100e-6f64, 300e-6f64);
        let a = (w0 + w1) * (w0 / (r0 * r0)).max(w1 / (r1 * r1)) / (w0 / r0 + w1 / r1).powi(2);
        assert!((lia_a(&d.cc.core) - a).abs() < 1e-9 * a);
        let expect = (a * 1200.0 * 1200.0 / (w0 + w1)).min(1200.0 * 1200.0 / w1);
        let before = d.cwnd(1);
        d.send(1, 1);
        d.ack(1, 1, 0);
        let got = d.cwnd(1) - before;
        assert!((got - expect).abs() < 1e-6, "got {got}, expected {expect}");
    }

    #[test]
    fn cap_is_reno_on_the_path() {
        // A single path: a = 1 and the coupled term equals the Reno cap.
        let mut d = Driver::with(Coupled::new(Lia));
        d.add_path(0);
        d.set_rtt(0, us(100));
        d.force_window(0, 12_000);
        d.send(0, 1);
        d.ack(0, 1, 0);
        assert!((d.cwnd(0) - 12_120.0).abs() < 1e-6);
    }

    proptest! {
        /// RFC 6356 goal 2 ("do no harm"): summed over its paths, the connection's rate
        /// `sum(w_r / rtt_r)` grows no faster than one Reno flow's on the best (lowest-RTT) path,
        /// `MSS / rtt_min^2` per second, and no path grows faster than Reno on it. Each path's
        /// per-ACK increase is measured on an identical copy of the controller and scaled to a
        /// round (`w_r / MSS` ACKs per `rtt_r`).
        #[test]
        fn never_faster_than_reno_on_the_best_path(
            windows in prop::collection::vec(2u64..200, 1..6),
            rtts in prop::collection::vec(20u64..2000, 6),
        ) {
            let n = windows.len();
            let mut d = Driver::with(Coupled::new(Lia));
            for (id, &w) in windows.iter().enumerate() {
                d.add_path(id as u32);
                d.set_rtt(id as u32, us(rtts[id]));
                d.force_window(id as u32, w * 1200);
            }
            let rtt_min = rtts[..n].iter().min().copied().unwrap() as f64 * 1e-6;
            let mut rate_growth = 0.0; // d/dt of sum(w_r / rtt_r), bytes/s per second
            for (id, &rtt) in rtts[..n].iter().enumerate() {
                let mut copy = d.clone();
                let w = copy.cwnd(id as u32);
                copy.send(id as u32, 1);
                copy.ack(id as u32, 1, 0);
                let inc = copy.cwnd(id as u32) - w;
                // `inc` is a difference of two windows: allow for its rounding.
                prop_assert!(inc <= 1200.0 * 1200.0 / w + w * 1e-15, "path {id}: {inc}");
                let rtt = rtt as f64 * 1e-6;
                rate_growth += inc * (w / 1200.0) / rtt / rtt;
            }
            let reno_best = 1200.0 / (rtt_min * rtt_min);
            prop_assert!(rate_growth <= reno_best * (1.0 + 1e-6),
                "connection rate growth {rate_growth} > Reno on the best path {reno_best}");
        }
    }
}
