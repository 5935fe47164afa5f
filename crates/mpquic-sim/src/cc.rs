//! Choosing a congestion controller for a flow.
//!
//! Every controller reaches the stack through noq-proto's `ControllerFactory` seam, with one
//! factory per connection (coupled controllers keep per-connection state in it).
//!
//! - `newreno` and `cubic` are the stack's own controllers, uncoupled per path (baselines).
//! - The mpquic-cc algorithms (`amp`, `xmp`, `dcm`, `mptcp-d`, `mmptcp`, `lia`, `dctcp`, `reno`)
//!   run through the `mpquic` library's own adapter, [`mpquic::congestion::CoupledFactory`]: the
//!   very code a real connection runs, not a re-implementation. Parameters follow the name:
//!   `amp:beta=4,tau=8`.
//!
//! `noq::congestion` is `noq_proto::congestion` re-exported (there is a single noq-proto 1.4 in
//! the build), so the adapter's factory is a `noq_proto::congestion::ControllerFactory` as is.
//!
//! CE counts come exact from the ACK frames (the library's adapter over our noq-proto patch);
//! one packet per datagram with an ACK each is a measurement option, decided by the library's
//! own [`mpquic::Options::acks_every_packet`], so the simulator and the library behave the same.

use std::sync::Arc;

use mpquic::congestion::{CoupledFactory, SharedController};
use mpquic::{Congestion, EcnPrecision, Options, Scheduler};
use mpquic_cc::ControllerConfig;
use noq_proto::congestion::{ControllerFactory, CubicConfig, NewRenoConfig};

/// A factory ready to go into a `TransportConfig`.
pub type Factory = Arc<dyn ControllerFactory + Send + Sync + 'static>;

/// The stack's own controllers (uncoupled baselines).
const STACK: [&str; 2] = ["newreno", "cubic"];

/// Every controller name this build can run.
pub fn available() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = STACK.to_vec();
    names.extend(mpquic_cc::ControllerKind::ALL.iter().map(|k| k.name()));
    names
}

/// A parsed controller choice.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// noq-proto's NewReno on every path.
    StackNewReno,
    /// noq-proto's Cubic on every path.
    StackCubic,
    /// An mpquic-cc controller through the mpquic adapter.
    Coupled(ControllerConfig),
}

impl Choice {
    /// Parse `name` or `name:key=value,key=value`.
    pub fn parse(spec: &str) -> Result<Choice, String> {
        let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
        let name = name.trim();
        let params: Vec<&str> =
            params.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        let stack = |c: Choice| {
            if params.is_empty() {
                Ok(c)
            } else {
                Err(format!("controller `{name}` (the stack's own) takes no parameters"))
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "newreno" => stack(Choice::StackNewReno),
            "cubic" => stack(Choice::StackCubic),
            _ => ControllerConfig::parse(name, params.iter().copied())
                .map(Choice::Coupled)
                .map_err(|e| format!("{e} (or the stack's own: newreno, cubic)")),
        }
    }

    /// Whether this connection sends one packet per datagram with an ACK each, as the mpquic
    /// library decides it for the same controller and precision setting.
    pub fn acks_every_packet(&self, precision: EcnPrecision) -> bool {
        let congestion = match self {
            Choice::Coupled(c) => Congestion::Coupled(*c),
            // The library's uncoupled baseline; its ECN precision rule is the same for NewReno.
            Choice::StackNewReno | Choice::StackCubic => Congestion::StackCubic,
        };
        Options { congestion, ecn: precision, ..Options::default() }.acks_every_packet()
    }

    /// A fresh factory for one connection, and the handle on its coupled controller (if any).
    pub fn factory(&self, scheduler: Scheduler) -> (Factory, Option<Arc<SharedController>>) {
        match self {
            Choice::StackNewReno => (Arc::new(NewRenoConfig::default()), None),
            Choice::StackCubic => (Arc::new(CubicConfig::default()), None),
            Choice::Coupled(config) => {
                let factory = CoupledFactory::new(config, scheduler);
                let shared = factory.shared();
                (Arc::new(factory), Some(shared))
            }
        }
    }
}

/// Whether `name` is a controller the simulator can run.
pub fn is_known(name: &str) -> bool {
    Choice::parse(name).is_ok()
}

/// A fresh factory for one connection (see [`Choice::factory`]), with the stack's default
/// packet scheduler.
pub fn factory(name: &str) -> Result<Factory, String> {
    Ok(Choice::parse(name)?.factory(Scheduler::default()).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parameters_parse() {
        for name in available() {
            assert!(factory(name).is_ok(), "{name}");
        }
        assert_eq!(Choice::parse("newreno").unwrap(), Choice::StackNewReno);
        let Choice::Coupled(ControllerConfig::Amp(amp)) =
            Choice::parse("amp:beta=8, tau=4").unwrap()
        else {
            panic!("not amp")
        };
        assert_eq!((amp.beta, amp.tau), (8.0, 4));
        assert!(Choice::parse("vegas").is_err());
        assert!(Choice::parse("amp:bogus=1").is_err());
        assert!(Choice::parse("cubic:beta=1").is_err());
    }

    #[test]
    fn ack_shaping_follows_the_library() {
        let per_packet = |n: &str, p| Choice::parse(n).unwrap().acks_every_packet(p);
        for name in ["dctcp", "dcm", "amp", "newreno"] {
            assert!(!per_packet(name, EcnPrecision::Auto), "{name}");
            assert!(per_packet(name, EcnPrecision::PerPacket), "{name}");
        }
    }
}
