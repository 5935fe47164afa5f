//! XMP (xmp-paper.txt: section 2 for BOS and TraSh, section 3 and Algorithm 1 for the code):
//! BOS, an ECN reaction that cuts by a constant `1/beta`, and TraSh, a rate-based coupled
//! increase applied once per round.
//!
//! - Slow start: `w += acked` for each packet acknowledged by an ACK frame that raised no CE
//!   (BOS rule 3: "increases cwnd by one if receiving an acknowledgement packet whose ECE and
//!   CWR are both zero").
//! - The first CE in slow start ends it without a cut: `ssthresh = w - MSS` (the pseudo-code's
//!   reduction is guarded by `snd_cwnd > snd_ssthresh`, which is false in slow start, while
//!   `snd_ssthresh = snd_cwnd - 1` is not).
//! - Congestion avoidance, at each round end of path `r` (Algorithm 1, "per-round-operations"):
//!   `rate_k = w_k / srtt_k` for every path, `total = sum(rate)`, `min_rtt = min(srtt)`,
//!   `delta_r = w_r / (total * min_rtt)` packets; `adder += delta_r`, and whole packets of
//!   `adder` move into `w_r`. This is paper eq. (9) with the converged rate taken as `w / srtt`.
//! - ECN, once per round, in congestion avoidance: `w -= max(w / beta, MSS)`,
//!   `w = max(w, cwnd_min)`, `ssthresh = w - MSS` (so slow start is never re-entered).
//! - Loss halves (common ground).
//!
//! Readings:
//! - QUIC reports the CE count after the ACK frame's acknowledged packets, so slow-start growth
//!   is held until the end of the frame and dropped if the frame raised the CE count.
//! - The pseudo-code skips the round's increase while the path is in its REDUCED state; here a
//!   round in which the path reacted (ECN or loss) gets no increase, which is the same rounds:
//!   the reaction's `cwr_seq` is always passed within the next round.
//! - The round-end sums walk the paths (O(paths) once per round, not per ACK), so XMP needs no
//!   per-ACK cached sums. Paths without an RTT sample yet are left out of them.

use crate::conn::Algorithm;
use crate::core::{Core, RoundStats};
use crate::{ControllerKind, ReductionCause, XmpConfig};

/// XMP's per-path state.
#[derive(Debug, Clone, Default)]
pub(crate) struct XmpPath {
    /// TraSh's fractional packets not yet added to the window.
    adder: f64,
    /// Slow-start growth of the current ACK frame, applied at its end if it carried no CE.
    pending: f64,
}

/// XMP with BOS reduction factor `beta`.
#[derive(Debug, Clone)]
pub(crate) struct Xmp {
    pub cfg: XmpConfig,
}

impl Algorithm for Xmp {
    type Path = XmpPath;
    const KIND: ControllerKind = ControllerKind::Xmp;

    fn ca_increase(&self, _core: &Core<XmpPath>, _i: usize, _bytes: u64) -> f64 {
        // Congestion avoidance grows only at round ends.
        0.0
    }

    fn on_ack(&mut self, core: &mut Core<XmpPath>, i: usize, bytes: u64) {
        let p = &mut core.paths[i];
        if p.in_slow_start() {
            p.ext.pending += bytes as f64;
        }
    }

    fn on_ce_signal(&mut self, core: &mut Core<XmpPath>, i: usize) {
        core.paths[i].ext.pending = 0.0;
    }

    fn on_batch_end(&mut self, core: &mut Core<XmpPath>, i: usize) {
        let p = &mut core.paths[i];
        let pending = std::mem::take(&mut p.ext.pending);
        if pending > 0.0 && p.in_slow_start() && p.active {
            core.grow(i, pending);
        }
    }

    fn on_congestion(&mut self, core: &mut Core<XmpPath>, i: usize, cause: ReductionCause) {
        if cause != ReductionCause::Ecn {
            return crate::conn::standard_congestion(self, core, i, cause);
        }
        let p = &core.paths[i];
        let (w, mss) = (p.w, p.mss_f());
        if p.in_slow_start() {
            core.reduce(i, w, w - mss, cause);
        } else {
            let to = (w - (w / self.cfg.beta).max(mss)).max(p.cwnd_min);
            core.reduce(i, to, to - mss, cause);
        }
    }

    fn on_round_end(&mut self, core: &mut Core<XmpPath>, i: usize, round: &RoundStats) {
        let p = &core.paths[i];
        if round.reacted
            || round.app_limited
            || p.in_cwr()
            || p.in_slow_start()
            || !p.active
            || p.srtt == 0.0
        {
            return;
        }
        let (total, min_rtt) = core.scan_rates();
        let p = &mut core.paths[i];
        let delta = p.w / (total * min_rtt);
        if !delta.is_finite() {
            return;
        }
        p.ext.adder += delta;
        let whole = p.ext.adder.floor();
        p.ext.adder -= whole;
        let inc = whole * p.mss_f();
        core.grow(i, inc);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Xmp;
    use crate::conn::Conn;
    use crate::testkit::Driver;
    use crate::{Notice, PathId, XmpConfig};

    fn xmp(paths: u32) -> Driver<Conn<Xmp>> {
        let mut d = Driver::with(Conn::new(Xmp { cfg: XmpConfig::default() }));
        for id in 0..paths {
            d.add_path(id);
        }
        d
    }

    #[test]
    fn first_ce_in_slow_start_ends_it_without_a_cut() {
        let mut d = xmp(1);
        d.round(0, 10, 0);
        assert_eq!(d.window(0), 24_000);
        d.drain();
        d.round(0, 20, 1); // this frame raised CE: its ACKs do not grow the window either
        let p = d.path(0);
        assert_eq!(p.window, 24_000);
        assert_eq!(p.ssthresh, Some(22_800));
        assert!(!p.in_slow_start);
        let notices = d.drain();
        assert_eq!(notices, vec![Notice::SlowStartExited { path: PathId(0), window: 24_000 }]);
    }

    #[test]
    fn cut_in_congestion_avoidance_is_max_of_w_over_beta_and_mss() {
        let mut d = xmp(1);
        d.round(0, 10, 1); // leave slow start at 12000
        d.round(0, 1, 0); // a clean round
        for (w, expect) in [(40_000, 30_000), (3_600, 2_400), (4_000, 2_800), (2_500, 2_400)] {
            d.force_window(0, w);
            d.round(0, 1, 1);
            let p = d.path(0);
            assert_eq!(p.window, expect, "from {w}");
            assert_eq!(p.ssthresh, Some(expect - 1200), "from {w}");
        }
    }

    #[test]
    fn trash_delta_per_round() {
        // Windows and RTTs chosen so the deltas are fractions: the adder carries them over.
        let mut d = xmp(3);
        let rtts = [100u64, 250, 400];
        for (id, rtt) in rtts.iter().enumerate() {
            d.set_rtt(id as u32, Duration::from_micros(*rtt));
            d.round(id as u32, 10, 1); // leave slow start at 12000 without a cut
            d.round(id as u32, 1, 0); // a clean round in congestion avoidance
        }
        d.force_window(0, 30 * 1200);
        d.force_window(1, 12 * 1200);
        d.force_window(2, 7 * 1200);
        // The clean rounds above left fractions in the adders: carry on from them.
        let mut adder: Vec<f64> = (0..3).map(|k| d.cc.core.paths[k].ext.adder).collect();
        for step in 0..60 {
            let r = [0usize, 1, 2, 2, 1, 0, 2][step % 7];
            let w: Vec<f64> = (0..3).map(|k| d.path(k as u32).window as f64).collect();
            let secs = |k: usize| Duration::from_micros(rtts[k]).as_secs_f64();
            let total: f64 = (0..3).map(|k| w[k] / secs(k)).sum();
            let min_rtt = secs(0);
            let delta = w[r] / (total * min_rtt);
            adder[r] += delta;
            let whole = adder[r].floor();
            adder[r] -= whole;
            d.round(r as u32, 1, 0);
            assert_eq!(d.path(r as u32).window as f64, w[r] + whole * 1200.0, "step {step}");
        }
        assert!(d.window(0) > 36_000, "it grew");
    }

    #[test]
    fn one_path_gains_one_packet_per_round() {
        let mut d = xmp(1);
        d.round(0, 10, 1);
        d.round(0, 1, 0);
        let w = d.window(0);
        for k in 1..=5 {
            d.round(0, 3, 0);
            assert_eq!(d.window(0), w + k * 1200);
        }
    }
}
