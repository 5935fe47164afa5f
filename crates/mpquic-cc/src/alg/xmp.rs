//! XMP (xmp-paper.txt: section 2 for BOS and TraSh, section 3 and Algorithm 1 for the code):
//! BOS, an ECN reaction that cuts by a constant `1/beta`, and TraSh, a rate-based coupled
//! increase applied once per round.
//!
//! - Slow start: `w += MSS` for each ACK frame that acknowledged new packets and raised no CE
//!   (BOS rule 3: "increases cwnd by one if receiving an acknowledgement packet whose ECE and
//!   CWR are both zero"; Algorithm 1: `snd_cwnd <- snd_cwnd + 1` per new ack), as
//!   ALGORITHMS.md says: one packet per ACK, not per packet acknowledged.
//! - The first CE in slow start ends it without a cut: `ssthresh = w - MSS` (the pseudo-code's
//!   reduction is guarded by `snd_cwnd > snd_ssthresh`, which is false in slow start, while
//!   `snd_ssthresh = snd_cwnd - 1` is not).
//! - Congestion avoidance, at each round end of path `r` (Algorithm 1, "per-round-operations"):
//!   `rate_k = w_k / srtt_k` for every path, `total = sum(rate)`, `min_rtt = min(srtt)`,
//!   `delta_r = w_r / (total * min_rtt)` packets; `adder += delta_r`, and whole packets of
//!   `adder` move into `w_r`. This is paper eq. (9) with the converged rate taken as `w / srtt`.
//! - ECN, once per round, in congestion avoidance, in whole packets ("cwnd changes with packet
//!   granularity"; Algorithm 1 on Linux's integer `snd_cwnd`): with `c = floor(w / MSS)`,
//!   `c -= max(floor(c / beta), 1)`, `c = max(c, cwnd_min)` (2 packets unless configured),
//!   `w = c * MSS`, `ssthresh = w - MSS` (so
//!   slow start is never re-entered). From 5, 6 and 7 packets this leaves 4, 5 and 6.
//! - Loss halves (common ground).
//!
//! Readings:
//! - One QUIC ACK frame is the paper's acknowledgement packet. QUIC receivers acknowledge at
//!   least every second ack-eliciting packet (RFC 9000 section 13.2.2), like the delayed ACKs
//!   the paper assumes ("one cumulative acknowledgement for at most every two consecutively
//!   received packets"), so slow start grows by about half the packets acknowledged.
//! - The cut is in whole packets, which differs from ALGORITHMS.md (`w -= max(w / beta, MSS)`
//!   in bytes): the paper's cwnd is Linux's packet count and its `tmp` an integer division,
//!   and the paper chooses `beta` "considering cwnd changes with packet granularity". The
//!   window's fraction of a packet (from slow start's byte counts or an MSS change) is dropped
//!   at the cut.
//! - QUIC reports the CE count after the ACK frame's acknowledged packets, so slow-start growth
//!   is held until the end of the frame and dropped if the frame raised the CE count.
//! - The pseudo-code skips the round's increase while the path is in its REDUCED state; here a
//!   round in which the path reacted (ECN or loss) gets no increase, which is the same rounds:
//!   the reaction's `cwr_seq` is always passed within the next round.
//! - The round-end sums walk the paths (O(paths) once per round, not per ACK), so XMP needs no
//!   per-ACK cached sums. Paths without an RTT sample yet are left out of them.

use serde::Serialize;

use crate::builtin::TypedConfig;
use crate::core::DEFAULT_MIN_WINDOW;
use crate::coupled::{standard_congestion, Algorithm, Core, Coupled, RoundStats, Slot};
use crate::param::{parameters, Parameter, Parameters};
use crate::{Controller, ControllerConfig, InitialWindow};
use crate::{ControllerKind, ReductionCause};

/// XMP parameters (XMP paper, section 3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct XmpConfig {
    /// ECN cut, in whole packets: `cwnd -= max(floor(cwnd / beta), 1)`. At least 2.
    pub beta: f64,
    /// The window of a path the connection opens.
    pub initial_window: InitialWindow,
    /// The minimum window of every path, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
}

impl Default for XmpConfig {
    fn default() -> Self {
        XmpConfig {
            beta: 4.0,
            initial_window: InitialWindow::PerPath,
            cwnd_min: DEFAULT_MIN_WINDOW,
        }
    }
}

impl TypedConfig for XmpConfig {
    const PARAMETERS: Parameters<Self> = parameters![
        Parameter::beta(|c| &mut c.beta),
        Parameter::initial_window(|c| &mut c.initial_window),
        Parameter::min_window(|c| &mut c.cwnd_min),
    ];

    const VARIANT: fn(Self) -> ControllerConfig = ControllerConfig::Xmp;

    fn build(&self) -> Box<dyn Controller> {
        Box::new(
            Coupled::new(Xmp { cfg: *self })
                .with_initial_window(self.initial_window)
                .with_min_window(self.cwnd_min),
        )
    }
}

/// XMP's per-path state.
#[derive(Debug, Clone, Default)]
pub(crate) struct XmpPath {
    /// TraSh's fractional packets not yet added to the window.
    adder: f64,
    /// Whether the current ACK frame acknowledged a packet that may grow the window in slow
    /// start; one packet is added at the frame's end if it carried no CE.
    pending: bool,
}

/// XMP with BOS reduction factor `beta`.
#[derive(Debug, Clone)]
pub(crate) struct Xmp {
    pub cfg: XmpConfig,
}

impl Algorithm for Xmp {
    type Path = XmpPath;

    fn name(&self) -> &'static str {
        ControllerKind::Xmp.name()
    }

    fn ca_increase(&self, _core: &Core<XmpPath>, _path: Slot, _bytes: u64) -> f64 {
        // Congestion avoidance grows only at round ends.
        0.0
    }

    fn on_ack(&mut self, core: &mut Core<XmpPath>, s: Slot, _bytes: u64) {
        if core.path(s).in_slow_start() {
            core.ext_mut(s).pending = true;
        }
    }

    fn on_ce_signal(&mut self, core: &mut Core<XmpPath>, s: Slot) {
        core.ext_mut(s).pending = false;
    }

    fn on_batch_end(&mut self, core: &mut Core<XmpPath>, s: Slot) {
        let pending = std::mem::take(&mut core.ext_mut(s).pending);
        let p = core.path(s);
        if pending && p.in_slow_start() && p.is_active() {
            let packet = p.mss_f();
            core.grow(s, packet);
        }
    }

    fn on_congestion(&mut self, core: &mut Core<XmpPath>, s: Slot, cause: ReductionCause) {
        if cause != ReductionCause::Ecn {
            return standard_congestion(self, core, s, cause);
        }
        let p = core.path(s);
        let (w, mss) = (p.cwnd(), p.mss_f());
        if p.in_slow_start() {
            core.reduce(s, w, w - mss, cause);
        } else {
            let packets = (w / mss).floor();
            let cut = (packets / self.cfg.beta).floor().max(1.0);
            let floor = (p.cwnd_min() / mss).round();
            let to = (packets - cut).max(floor) * mss;
            core.reduce(s, to, to - mss, cause);
        }
    }

    fn on_round_end(&mut self, core: &mut Core<XmpPath>, s: Slot, round: &RoundStats) {
        let p = core.path(s);
        if round.reacted
            || round.app_limited
            || p.in_cwr()
            || p.in_slow_start()
            || !p.is_active()
            || p.srtt() == 0.0
        {
            return;
        }
        let (total, min_rtt) = core.scan_rates();
        let (w, mss) = (core.path(s).cwnd(), core.path(s).mss_f());
        let delta = w / (total * min_rtt);
        if !delta.is_finite() {
            return;
        }
        let ext = core.ext_mut(s);
        ext.adder += delta;
        let whole = ext.adder.floor();
        ext.adder -= whole;
        let inc = whole * mss;
        core.grow(s, inc);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Xmp;
    use crate::coupled::Coupled;
    use crate::testkit::Driver;
    use crate::{Notice, PathId, XmpConfig};

    fn xmp(paths: u32) -> Driver<Coupled<Xmp>> {
        let mut d = Driver::with(Coupled::new(Xmp { cfg: XmpConfig::default() }));
        for id in 0..paths {
            d.add_path(id);
        }
        d
    }

    /// BOS rule 3: "The source increases cwnd by one if receiving an acknowledgement packet whose
    /// ECE and CWR are both zero; otherwise, it stops increasing cwnd, and meanwhile enters
    /// Congestion Avoidance", with no cut (the reduction is guarded by `snd_cwnd >
    /// snd_ssthresh`) and `snd_ssthresh = snd_cwnd - 1`.
    #[test]
    fn first_ce_in_slow_start_ends_it_without_a_cut() {
        let mut d = xmp(1);
        // One acknowledgement for 10 packets: one packet more than the initial 10.
        d.round(0, 10, 0);
        assert_eq!(d.window(0), 11 * 1200);
        // Ten acknowledgements of one packet each: ten packets more.
        d.ack_each_round(0, 10);
        assert_eq!(d.window(0), 21 * 1200);
        d.drain();
        d.round(0, 20, 1); // this acknowledgement carries CE: no increase, slow start ends
        let p = d.path(0);
        assert_eq!(p.window, 21 * 1200);
        assert_eq!(p.ssthresh, Some(20 * 1200));
        assert!(!p.in_slow_start);
        let notices = d.drain();
        assert_eq!(notices, vec![Notice::SlowStartExited { path: PathId(0), window: 25_200 }]);
    }

    /// Algorithm 1 on packets: `tmp = snd_cwnd / reducer` (integer division),
    /// `snd_cwnd -= max{tmp, 1}`, `snd_cwnd = max{snd_cwnd, 2}`, `snd_ssthresh = snd_cwnd - 1`.
    #[test]
    fn cut_in_congestion_avoidance_is_in_whole_packets() {
        let mut d = xmp(1);
        d.round(0, 10, 1); // leave slow start at 12000 (10 packets)
        d.round(0, 1, 0); // a clean round
        let cases = [
            // (packets before, packets after): 40 - 40/4; 5, 6, 7 each lose one packet (5/4,
            // 6/4 and 7/4 are 1); 8 - 8/4; 3 - max{0, 1}; 2 stays at the floor of 2.
            (40, 30),
            (5, 4),
            (6, 5),
            (7, 6),
            (8, 6),
            (3, 2),
            (2, 2),
        ];
        for (before, after) in cases {
            d.force_window(0, before * 1200);
            d.round(0, 1, 1);
            let p = d.path(0);
            assert_eq!(p.window, after * 1200, "from {before} packets");
            assert_eq!(p.ssthresh, Some((after - 1) * 1200), "from {before} packets");
        }
        // A window that is not whole packets counts its whole packets: 4000 bytes are 3
        // packets, which leave 2.
        d.force_window(0, 4_000);
        d.round(0, 1, 1);
        assert_eq!(d.window(0), 2_400);
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
        let mut adder: Vec<f64> = (0..3).map(|k| d.state(k as u32).ext().adder).collect();
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
