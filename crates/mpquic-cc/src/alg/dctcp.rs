//! DCTCP (RFC 8257), uncoupled on every path: the single-path reference of every paper here.
//!
//! Reno's increase ([`reno_step`]); per round, `alpha` from the marked fraction; on CE, once per
//! round, `w = w * (1 - alpha / 2)` (RFC 8257 section 3.3; estimator in [`alpha`]).
//! Loss halves, as in RFC 8257 section 3.4.
//!
//! Prague (RFC 9331, [`super::prague`]) is this response made fit for the Internet: the same
//! algorithm with [`L4s`] set (ECT(1), and the increase scaled for RTT independence).

use serde::Serialize;

use super::alpha::{self, Alpha};
use super::reno::reno_step;
use crate::builtin::TypedConfig;
use crate::core::DEFAULT_MIN_WINDOW;
use crate::coupled::{Algorithm, Core, Coupled, RoundStats, Slot};
use crate::param::{parameters, Parameter, Parameters};
use crate::{Controller, ControllerConfig, ControllerKind, EcnCodepoint};

/// DCTCP parameters: its alpha estimator's gain and the minimum window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AlphaConfig {
    /// EWMA gain of alpha, in (0, 1].
    pub g: f64,
    /// The minimum window, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
}

impl Default for AlphaConfig {
    fn default() -> Self {
        AlphaConfig { g: 1.0 / 16.0, cwnd_min: DEFAULT_MIN_WINDOW }
    }
}

impl TypedConfig for AlphaConfig {
    const PARAMETERS: Parameters<Self> =
        parameters![Parameter::gain(|c| &mut c.g), Parameter::min_window(|c| &mut c.cwnd_min),];

    const VARIANT: fn(Self) -> ControllerConfig = ControllerConfig::Dctcp;

    fn build(&self) -> Box<dyn Controller> {
        Box::new(Coupled::new(Dctcp { g: self.g, l4s: None }).with_min_window(self.cwnd_min))
    }
}

/// DCTCP with EWMA gain `g`; Prague with `l4s`.
#[derive(Debug, Clone)]
pub(crate) struct Dctcp {
    pub g: f64,
    pub l4s: Option<L4s>,
}

/// What Prague adds to DCTCP (see [`super::prague`]): packets carry ECT(1), and below
/// `rtt_target` seconds (0: never) the congestion-avoidance increase is scaled by
/// `srtt / rtt_target`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct L4s {
    pub rtt_target: f64,
}

impl L4s {
    /// How much of Reno's increase a path at smoothed RTT `srtt` (seconds) takes:
    /// `min(1, srtt / rtt_target)`, 1 without a target or an RTT sample.
    pub(crate) fn rtt_scale(self, srtt: f64) -> f64 {
        if self.rtt_target <= 0.0 || srtt <= 0.0 {
            return 1.0;
        }
        (srtt / self.rtt_target).min(1.0)
    }
}

impl Algorithm for Dctcp {
    type Path = Alpha;

    fn name(&self) -> &'static str {
        match self.l4s {
            Some(_) => super::prague::NAME,
            None => ControllerKind::Dctcp.name(),
        }
    }

    fn ca_increase(&self, core: &Core<Alpha>, s: Slot, bytes: u64) -> f64 {
        let p = core.path(s);
        let scale = self.l4s.map_or(1.0, |l4s| l4s.rtt_scale(p.srtt()));
        reno_step(p.mss_f(), bytes, p.cwnd()) * scale
    }

    fn ecn_target(&self, core: &Core<Alpha>, s: Slot) -> f64 {
        alpha::cut(core, s)
    }

    fn on_ce_signal(&mut self, core: &mut Core<Alpha>, s: Slot) {
        alpha::end_round_before_cut(core, s, self.g);
    }

    fn on_round_end(&mut self, core: &mut Core<Alpha>, s: Slot, round: &RoundStats) {
        alpha::update(core, s, round, self.g);
    }

    fn alpha(&self, path: &Alpha) -> Option<f64> {
        Some(path.0)
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        match self.l4s {
            Some(_) => EcnCodepoint::Ect1,
            None => EcnCodepoint::Ect0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AlphaConfig;
    use crate::testkit::Driver;
    use crate::{ControllerConfig, Notice, PathId};

    fn dctcp(g: f64) -> Driver {
        let mut d = Driver::new(ControllerConfig::Dctcp(AlphaConfig { g, ..Default::default() }));
        d.add_path(0);
        d
    }

    /// RFC 8257 section 3.3, step by step: alpha from the marked fraction of each round, the
    /// cut `w * (1 - alpha / 2)` with the alpha updated by the ACK that carries the ECE.
    #[test]
    fn alpha_and_cut_follow_rfc8257() {
        let g = 1.0 / 16.0;
        let mut d = dctcp(g);
        let mut alpha = 1.0;
        // Round 1: 10 acked, none marked. Slow start to 24000.
        d.round(0, 10, 0);
        alpha *= 1.0 - g;
        assert_eq!(d.path(0).alpha, Some(alpha));
        assert_eq!(d.window(0), 24_000);
        // Round 2: 20 acked, 5 marked, all in one ACK frame that also ends the round. RFC 8257
        // section 3.3 per ACK: bytes_acked and bytes_marked take in the ACK (steps 2-3); the
        // ACK passes WindowEnd, so M = 5/20 and alpha = (1 - g) * alpha + g * M (steps 4-6);
        // then the ECE cuts cwnd = cwnd * (1 - alpha / 2) with that new alpha. The frame's 20
        // ACKs grow the window to 48000 first (slow start; the CE count follows the ACKs).
        d.round(0, 20, 5);
        alpha = (1.0 - g) * alpha + g * 0.25;
        assert_eq!(d.window(0), (48_000.0 * (1.0 - alpha / 2.0)) as u64);
        assert!((d.path(0).alpha.unwrap() - alpha).abs() < 1e-12);
        let notices = d.drain();
        assert!(notices.contains(&Notice::AlphaUpdated {
            path: PathId(0),
            alpha,
            marked_fraction: 0.25
        }));
    }

    #[test]
    fn gain_one_tracks_the_last_round() {
        let mut d = dctcp(1.0);
        d.round(0, 8, 2);
        assert_eq!(d.path(0).alpha, Some(0.25));
        d.round(0, 4, 4);
        assert_eq!(d.path(0).alpha, Some(1.0));
        d.round(0, 4, 9); // more marks than ACKs (estimates): the fraction is capped at 1
        assert_eq!(d.path(0).alpha, Some(1.0));
    }

    /// With `g = 1` alpha is the last round's marked fraction. A CE inside a round (its frame
    /// does not end it) cuts by the alpha of the moment: 0 after a clean round, so nothing.
    #[test]
    fn small_alpha_cuts_little() {
        let mut d = dctcp(1.0);
        d.round(0, 10, 0);
        d.send(0, 20);
        d.ack(0, 1, 0); // ends a round with 1 acked, 0 marked: alpha = 0
        assert_eq!(d.path(0).alpha, Some(0.0));
        let w = d.window(0);
        d.ack(0, 5, 1); // within the next round: the 5 ACKs grow it (slow start), the cut is nil
        assert_eq!(d.window(0), w + 5 * 1200);
        assert_eq!(d.path(0).ecn_reductions, 1);
        assert!(!d.path(0).in_slow_start);
    }
}
