//! Uncoupled NewReno on every path (RFC 5681 / RFC 9002 section 7): what a multipath stack does
//! with no coupling at all.
//!
//! Slow start `w += acked`; congestion avoidance `w += MSS * acked / w` per ACK (one MSS per
//! round); halve on loss or CE, once per round (the common ground). It is also the increase of
//! DCTCP and of MMPTCP's scatter phase, through [`reno_step`].

use crate::coupled::{Algorithm, Core, Slot};
use crate::ControllerKind;

/// Reno's congestion-avoidance step for `bytes` acknowledged with window `w`: one `mss` per
/// window of data.
#[inline]
pub(crate) fn reno_step(mss: f64, bytes: u64, w: f64) -> f64 {
    mss * bytes as f64 / w
}

/// Uncoupled Reno.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reno;

impl Algorithm for Reno {
    type Path = ();

    fn name(&self) -> &'static str {
        ControllerKind::Reno.name()
    }

    fn ca_increase(&self, core: &Core<()>, s: Slot, bytes: u64) -> f64 {
        let p = core.path(s);
        reno_step(p.mss_f(), bytes, p.cwnd())
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::Driver;
    use crate::ControllerConfig;

    #[test]
    fn slow_start_then_one_mss_per_round() {
        let mut d = Driver::new(ControllerConfig::Reno);
        d.add_path(0);
        d.round(0, 10, 0);
        assert_eq!(d.window(0), 24_000, "slow start doubles per round");
        d.round(0, 20, 1);
        assert_eq!(d.window(0), 24_000, "48000 halved");
        // One window of ACKs in congestion avoidance adds about one MSS.
        let before = d.window(0) as f64;
        d.ack_each_round(0, 20);
        let grown = d.window(0) as f64 - before;
        assert!((grown - 1200.0).abs() < 30.0, "grew {grown}");
    }

    #[test]
    fn paths_are_independent() {
        let mut d = Driver::new(ControllerConfig::Reno);
        d.add_path(0);
        d.add_path(1);
        d.round(0, 10, 1);
        assert_eq!(d.window(1), 12_000);
        assert_eq!(d.window(0), 12_000, "24000 halved");
    }
}
