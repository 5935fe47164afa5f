//! Prague, the L4S sender of RFC 9331 section 4.3 (draft-briscoe-iccrg-prague-congestion-control),
//! uncoupled on every path: DCTCP's scalable response to ECT(1) marks, made fit for the shared
//! Internet.
//!
//! It is DCTCP ([`super::dctcp`]) with Prague's additions ([`L4s`]). Per path: packets carry
//! ECT(1); `alpha` is a 1/16-gain EWMA of each round's CE fraction (`super::alpha`); on CE, at
//! most once per round, `w = w * (1 - alpha / 2)`; on loss, Reno's halving (the core's common
//! ground); in congestion avoidance Reno's increase scaled by `min(1, srtt / rtt_target)`.
//!
//! Readings (RFC 9331 section 4.3's requirements, and where each is met):
//! - **ECT(1) identifier**: `Algorithm::ecn_codepoint`; the stack sends it on every path and
//!   validates the peer's counts against it (noq-proto patch 9).
//! - **Accurate ECN feedback**: QUIC's ACK frames carry cumulative counts; the stack hands the
//!   controller exact CE increases (patch 1), so `alpha` counts every mark.
//! - **Fall back to Reno on loss**: a loss halves the window, once per round, as Reno does.
//! - **Reduce RTT dependence**: a window-based sender's window settles where its growth per
//!   round meets its cut per round, `a = w * p / 2` at marking `p`, whatever the RTT, so its rate
//!   `w / RTT` goes as `1 / RTT`. Below `rtt_target` the increase per round is scaled by
//!   `srtt / rtt_target`: the window then settles at `2 * srtt / (rtt_target * p)` and the rate
//!   at `2 / (rtt_target * p)`, the same at every RTT up to the target; above it, as Reno. The
//!   target is 25 ms, quiche's. **A deviation** from Linux TCP Prague's rate mode
//!   (`RTT_CONTROL_RATE`, as its ns-3 port writes it), which scales the increase by
//!   `(srtt / rtt_target)^2`, the same rate *growth* per second at every RTT: with the cut at
//!   most once per real round, as here, the square over-corrects, and at one dual queue a 5 ms
//!   flow took 0.21x a 50 ms flow's rate (1.04x with the linear scaling, 11.4x without any;
//!   experiments/L4-dualq-rtt-bias.toml, docs/results/L4S-sim.md). Whether Linux's other
//!   choices (when alpha and the cut are updated) make up for the square there is not checked
//!   here. `rtt_target=0` turns the scaling off (a data center's microsecond RTTs would
//!   otherwise grow by a thousandth of Reno's step).
//! - **Paced sending**: the stack's pacer (noq paces every path at 1.25 windows per smoothed
//!   RTT), as for every controller here.
//! - **Detect a classic bottleneck** (a SHOULD): left out. A classic RFC 3168 queue marking ECT(1)
//!   as it would drop lets Prague take more than a Reno/Cubic flow beside it; detecting one
//!   needs delay heuristics (Linux Prague's are off by default and still experimental, and the
//!   drafts name no settled method). The bottlenecks this project runs Prague through are L4S
//!   dual queues and step markers, where the response above is the intended one; the risk is
//!   named here so that an operator who puts Prague through a classic ECN queue knows it.
//! - `alpha` starts at 1, as DCTCP's: the first mark halves, before any estimate exists.

use super::dctcp::{Dctcp, L4s};
use crate::coupled::Coupled;
use crate::{ConfigError, Params, Registration};

/// The name Prague is registered under.
pub(crate) const NAME: &str = "prague";

/// RFC 9331 / the Prague draft's gain.
const G: f64 = 1.0 / 16.0;
/// quiche's RTT target (Linux TCP Prague's is 10 ms), seconds.
const RTT_TARGET: f64 = 0.025;

/// The registration: `prague:g=0.0625,rtt_target=25` (`rtt_target` in milliseconds, 0: off).
pub(crate) fn registration() -> Registration {
    Registration::new(NAME, PARAMETERS, |params| Ok(Box::new(Coupled::new(prague(params)?))))
}

/// The parameters of `prague` and `cprague`.
pub(crate) const PARAMETERS: &[&str] = &["g", "rtt_target"];

/// DCTCP with Prague's additions ([`L4s`]), from the registration's parameters.
pub(crate) fn prague(params: &Params) -> Result<Dctcp, ConfigError> {
    let g = params.get_or("g", G, |&g: &f64| g > 0.0 && g <= 1.0, "must be in (0, 1]")?;
    let target_ms = params.get_or(
        "rtt_target",
        RTT_TARGET * 1e3,
        |&ms: &f64| (0.0..=10_000.0).contains(&ms),
        "must be 0 (off) to 10000 ms",
    )?;
    Ok(Dctcp { g, l4s: Some(L4s { rtt_target: target_ms / 1e3 }) })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::RTT_TARGET;
    use crate::alg::dctcp::L4s;
    use crate::testkit::Driver;
    use crate::{ControllerChoice, EcnCodepoint, Notice, PathId};

    fn prague(params: &[&str]) -> Driver {
        let mut d = Driver::with(
            ControllerChoice::parse("prague", params.iter().copied()).unwrap().build(),
        );
        d.add_path(0);
        d
    }

    #[test]
    fn it_sends_ect1() {
        assert_eq!(prague(&[]).cc.ecn_codepoint(), EcnCodepoint::Ect1);
    }

    /// RFC 9331 section 4.3 / the Prague draft: alpha is a 1/16-gain EWMA of each round's CE
    /// fraction, and a CE cuts `w * (1 - alpha / 2)` with the alpha its ACK frame updated (the
    /// same order as DCTCP's, RFC 8257 section 3.3). Windows derived step by step.
    #[test]
    fn alpha_is_a_sixteenth_gain_ewma_and_the_cut_is_proportional() {
        let g = 1.0 / 16.0;
        let mut d = prague(&["rtt_target=0"]);
        let mut alpha = 1.0;
        // Round 1: 10 acked, none marked; slow start doubles 12000 to 24000.
        d.round(0, 10, 0);
        alpha *= 1.0 - g;
        assert_eq!(d.path(0).alpha, Some(alpha));
        assert_eq!(d.window(0), 24_000);
        // Round 2: 20 acked, 4 marked in the frame that ends the round: alpha takes F = 0.2
        // first, then the window (grown to 48000 by the 20 ACKs) is cut by alpha / 2.
        d.round(0, 20, 4);
        alpha = (1.0 - g) * alpha + g * 0.2;
        assert!((d.path(0).alpha.unwrap() - alpha).abs() < 1e-12);
        assert_eq!(d.window(0), (48_000.0 * (1.0 - alpha / 2.0)) as u64);
        let notices = d.drain();
        assert!(notices.contains(&Notice::AlphaUpdated {
            path: PathId(0),
            alpha,
            marked_fraction: 0.2
        }));
    }

    /// At most one reduction per round: a second marked frame within the round changes alpha's
    /// round counts but not the window.
    #[test]
    fn one_cut_per_round() {
        let mut d = prague(&["rtt_target=0"]);
        d.round(0, 10, 0);
        d.send(0, 20);
        d.ack(0, 5, 1);
        let cut_once = d.window(0);
        assert_eq!(d.path(0).ecn_reductions, 1);
        d.ack(0, 5, 2);
        assert_eq!(d.path(0).ecn_reductions, 1, "a second cut in the same round");
        assert!(d.window(0) >= cut_once, "the window fell again within the round");
    }

    /// Loss is Reno's: the window halves, whatever alpha says.
    #[test]
    fn loss_halves() {
        let mut d = prague(&["rtt_target=0"]);
        d.round(0, 10, 0);
        let w = d.window(0);
        d.send(0, 20);
        d.lose(0, 1);
        assert_eq!(d.window(0), w / 2);
    }

    /// In congestion avoidance the increase is Reno's at or above the target and
    /// `rtt / target` of it below. Each run leaves slow start with one marked round, then
    /// acknowledges ten windows' worth of packets one per frame.
    #[test]
    fn the_increase_below_the_target_is_scaled_by_the_rtt_ratio() {
        let grown = |target: &str, rtt_ms: u64| {
            let mut d = prague(&[target]);
            d.set_rtt(0, Duration::from_millis(rtt_ms));
            d.round(0, 10, 2);
            let before = d.window(0);
            for _ in 0..10 {
                let n = d.window(0) / 1200;
                d.ack_each_round(0, n);
            }
            (d.window(0) - before) as f64
        };
        let scale = |rtt_ms| grown("rtt_target=25", rtt_ms) / grown("rtt_target=0", rtt_ms);
        assert!((scale(25) - 1.0).abs() < 1e-9, "25 ms: {}", scale(25));
        assert!((scale(50) - 1.0).abs() < 1e-9, "50 ms: {}", scale(50));
        assert!((scale(5) / 0.2 - 1.0).abs() < 0.02, "5 ms: {}", scale(5));
        // Reno's own growth: about one MSS per round, ten rounds.
        let reno = grown("rtt_target=0", 5) / 1200.0;
        assert!((reno - 10.0).abs() < 1.0, "Reno grew {reno} MSS in 10 rounds");
        assert!((L4s { rtt_target: RTT_TARGET }.rtt_scale(0.005) - 0.2).abs() < 1e-12);
        assert_eq!(L4s { rtt_target: 0.0 }.rtt_scale(0.005), 1.0);
    }

    #[test]
    fn parameters_are_checked() {
        assert!(ControllerChoice::parse("prague", ["g=0.5", "rtt_target=10"]).is_ok());
        assert!(ControllerChoice::parse("prague", ["g=0"]).is_err());
        assert!(ControllerChoice::parse("prague", ["rtt_target=-1"]).is_err());
        assert!(ControllerChoice::parse("prague", ["beta=4"]).is_err());
    }
}
