//! DCM (AMP paper section 2.1, Table 1): MPTCP's coupled increase with DCTCP's decrease on every
//! path.
//!
//! - Increase per ACK: the LIA rule of RFC 6356 ([`lia_increase`], shared with LIA and MMPTCP).
//! - Per round on each path: DCTCP's `alpha` (AMP paper eq. 2; [`alpha`], shared
//!   with DCTCP), gain `g = 1/16`.
//! - CE, once per round: `w = max(w * (1 - alpha / 2), cwnd_min)`. Loss halves.
//!
//! The paper gives no slow start for DCM; the common ground's applies (leave at first CE/loss).

use serde::Serialize;

use super::alpha::{self, Alpha};
use super::lia::lia_increase;
use crate::builtin::TypedConfig;
use crate::core::DEFAULT_MIN_WINDOW;
use crate::coupled::{Algorithm, Core, Coupled, Coupling, RoundStats, Slot};
use crate::param::{parameters, Parameter, Parameters};
use crate::{AlphaConfig, Controller, ControllerConfig, ControllerKind, InitialWindow};

/// DCM parameters: DCTCP's alpha estimator and the coupled controllers' initial window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DcmConfig {
    /// EWMA gain of alpha, in (0, 1].
    pub g: f64,
    /// The window of a path the connection opens.
    pub initial_window: InitialWindow,
    /// The minimum window of every path, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
}

impl Default for DcmConfig {
    fn default() -> Self {
        DcmConfig {
            g: AlphaConfig::default().g,
            initial_window: InitialWindow::PerPath,
            cwnd_min: DEFAULT_MIN_WINDOW,
        }
    }
}

impl TypedConfig for DcmConfig {
    const PARAMETERS: Parameters<Self> = parameters![
        Parameter::gain(|c| &mut c.g),
        Parameter::initial_window(|c| &mut c.initial_window),
        Parameter::min_window(|c| &mut c.cwnd_min),
    ];

    const VARIANT: fn(Self) -> ControllerConfig = ControllerConfig::Dcm;

    fn build(&self) -> Box<dyn Controller> {
        Box::new(
            Coupled::new(Dcm { g: self.g })
                .with_initial_window(self.initial_window)
                .with_min_window(self.cwnd_min),
        )
    }
}

/// DCM with EWMA gain `g`.
#[derive(Debug, Clone)]
pub(crate) struct Dcm {
    pub g: f64,
}

impl Algorithm for Dcm {
    type Path = Alpha;

    fn name(&self) -> &'static str {
        ControllerKind::Dcm.name()
    }

    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<Alpha>, s: Slot, bytes: u64) -> f64 {
        lia_increase(core, s, bytes)
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
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Dcm;
    use crate::alg::lia::Lia;
    use crate::coupled::Coupled;
    use crate::testkit::Driver;

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        let g = 1.0 / 16.0;
        let mut d = Driver::with(Coupled::new(Dcm { g }));
        d.add_path(0);
        d.add_path(1);
        // Steady pattern: 3 of every 10 packets marked on path 0, 1 of 10 on path 1.
        let mut expect = [1.0f64, 1.0];
        for round in 1..=200 {
            d.round(0, 10, 3);
            d.round(1, 10, 1);
            expect[0] = (1.0 - g) * expect[0] + g * 0.3;
            expect[1] = (1.0 - g) * expect[1] + g * 0.1;
            let got = [d.path(0).alpha.unwrap(), d.path(1).alpha.unwrap()];
            assert!((got[0] - expect[0]).abs() < 1e-12, "round {round}");
            assert!((got[1] - expect[1]).abs() < 1e-12, "round {round}");
        }
        assert!((d.path(0).alpha.unwrap() - 0.3).abs() < 1e-3);
        assert!((d.path(1).alpha.unwrap() - 0.1).abs() < 1e-3);
    }

    #[test]
    fn cut_is_w_times_one_minus_half_alpha() {
        let mut d = Driver::with(Coupled::new(Dcm { g: 1.0 }));
        d.add_path(0);
        d.round(0, 10, 0); // alpha 0, w 24000, slow start
        d.round(0, 4, 0); // 28800
                          // RFC 8257 section 3.3 for an ACK frame that carries ECE and ends the observation
                          // window: its ACKs grow w to 28800 + 8 * 1200 = 38400 (slow start), alpha takes in the
                          // round's fraction (g = 1: alpha = 2/8), then the cut uses that alpha.
        d.round(0, 8, 2);
        assert_eq!(d.path(0).alpha, Some(0.25));
        assert_eq!(d.window(0), (38_400.0 * (1.0 - 0.25 / 2.0)) as u64);
        // In congestion avoidance: 4 ACKs of LIA's increase (one path: Reno's MSS * acked / w),
        // then alpha = 1/4, then the cut.
        d.force_window(0, 40_000);
        d.send(0, 4);
        d.ack(0, 4, 1);
        let mut grown = 40_000.0;
        for _ in 0..4 {
            grown += 1200.0 * 1200.0 / grown;
        }
        assert_eq!(d.window(0), (grown * (1.0 - 0.125)) as u64);
    }

    #[test]
    fn cut_never_goes_below_cwnd_min() {
        let mut d = Driver::with(Coupled::new(Dcm { g: 1.0 }));
        d.add_path(0);
        for _ in 0..30 {
            d.round(0, 2, 2);
        }
        assert_eq!(d.window(0), 2_400);
    }

    /// DCM's increase is LIA's: the same ACK sequence gives the same windows.
    #[test]
    fn increase_equals_lias() {
        let mut dcm = Driver::with(Coupled::new(Dcm { g: 1.0 / 16.0 }));
        let mut lia = Driver::with(Coupled::new(Lia));
        for (id, rtt, w) in [(0, 80, 30_000), (1, 200, 9_000), (2, 500, 60_000)] {
            dcm.add_path(id);
            lia.add_path(id);
            dcm.set_rtt(id, Duration::from_micros(rtt));
            lia.set_rtt(id, Duration::from_micros(rtt));
            dcm.force_window(id, w);
            lia.force_window(id, w);
        }
        for step in 0..300u32 {
            let id = step % 3;
            dcm.send(id, 1);
            lia.send(id, 1);
            dcm.ack(id, 1, 0);
            lia.ack(id, 1, 0);
            for id in 0..3 {
                assert_eq!(dcm.cwnd(id as u32), lia.cwnd(id as u32), "step {step}");
            }
        }
        assert!(dcm.window(0) > 30_000, "it did grow");
    }
}
