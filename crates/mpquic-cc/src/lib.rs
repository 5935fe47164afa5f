//! Coupled, ECN-driven multipath congestion controllers as pure state machines.
//!
//! One [`Controller`] serves a whole connection: it is fed `(path, event)` pairs through
//! [`Controller::on_event`] and answers, per path, how many bytes may be in flight
//! ([`Controller::window`]) and whether the path may take new data at all
//! ([`Controller::may_send`]; AMP suppression and MPTCP-D elimination say no).
//!
//! There is no I/O, no clock and no QUIC type in this crate: the QUIC library, the simulator and
//! the tests all drive the same code. The algorithms and the readings taken where the papers are
//! ambiguous are documented per module and in `shared/design/ALGORITHMS.md`.
//!
//! ```
//! use std::time::Duration;
//! use mpquic_cc::{ControllerConfig, Event, PathId, RttSample};
//!
//! let mut cc = ControllerConfig::parse("amp", ["beta=4", "tau=8"]).unwrap().build();
//! cc.on_event(PathId(0), Event::PathAdded { mss: 1200 });
//! cc.on_event(PathId(0), Event::PacketSent { bytes: 1200, pn: 0 });
//! let rtt = RttSample {
//!     latest: Duration::from_micros(100),
//!     smoothed: Duration::from_micros(100),
//!     min: Duration::from_micros(100),
//! };
//! cc.on_event(PathId(0), Event::PacketAcked { bytes: 1200, pn: 0, rtt, app_limited: false });
//! cc.on_event(PathId(0), Event::AckBatchEnded);
//! assert_eq!(cc.window(PathId(0)), 13_200); // slow start: initial window + one packet
//! assert!(cc.may_send(PathId(0)));
//! ```
//!
//! # Layout
//!
//! - `core` (public as [`coupled`]): what every algorithm shares, implemented once: per-path window and slow-start
//!   threshold, rounds, the once-per-round reaction gate, RTT, counters, the cached coupled sums
//!   and the notice buffer.
//! - `conn` (public as [`coupled::Coupled`]): the single [`Controller`] implementation, routing events to the core and to an
//!   algorithm's hooks.
//! - `alg`: one module per algorithm (`amp`, `xmp`, `dcm`, `mptcp_d`, `mmptcp`, `lia`, `olia`,
//!   `balia`, `dctcp`, `reno`, and the registered `prague`, `cprague`) plus the shared DCTCP
//!   alpha estimator (`alpha`), all written on the public [`coupled`] API; a built-in with
//!   parameters has its typed configuration there ([`AmpConfig`], ...).
//! - `config`: the one table of built-ins (their names and typed configurations,
//!   [`ControllerKind`], [`ControllerConfig`]); `builtin`: what a built-in's typed configuration
//!   implements (read and check its parameters, build) and the built-ins' registrations;
//!   `param`: reading and checking parameter values, shared by the built-ins.
//! - `registry`: controllers registered by name ([`register`]), the built-ins first, chosen from
//!   a controller string ([`ControllerChoice`]).
//!
//! # Readings beyond `ALGORITHMS.md`
//!
//! Each module lists its own; the ones that apply to every algorithm:
//!
//! - ECN and loss share one once-per-round gate (RFC 9002's single recovery period): after a
//!   reaction, neither CE nor the loss of a packet sent before it cuts again.
//! - ACKs of packets sent before the last reaction do not grow the window (RFC 9002
//!   section 7.3.2).
//! - A round is closed at the end of the ACK frame that ends it, so the frame's CE report (which
//!   follows its acknowledged packets) counts in the round it ends.
//! - Persistent congestion (RFC 9002 section 7.6.2) sets the window to `cwnd_min` with the
//!   threshold at half the old window.
//! - Windows are `f64` bytes internally (no sub-byte increase is lost) and capped at 2^48 bytes;
//!   `window()` rounds down. MSS is clamped to `1..=65536`; smoothed RTTs are floored at 1 ns.
//! - A new path starts at RFC 9002's initial window (10 packets) by default. AMP, XMP and DCM
//!   take `initial_window=shared` ([`InitialWindow::Shared`]): the connection keeps one initial
//!   window however many paths it opens (4 paths of 1200 bytes: 3000 bytes each; never below the
//!   2-packet floor), for incasts where 4 paths x 10 packets per flow overrun the buffer
//!   (`experiments/incast-iw.toml`, `docs/results/incast-iw.md`). Per path stays the default.
//! - Undrained notices stop accumulating at 65536; the excess is counted in
//!   [`ConnectionSnapshot::notices_dropped`].

#![warn(missing_docs)]

mod alg;
mod builtin;
mod config;
mod conn;
mod core;
mod event;
mod param;
mod registry;
mod snapshot;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod testkit;

pub use alg::amp::AmpConfig;
pub use alg::dcm::DcmConfig;
pub use alg::dctcp::AlphaConfig;
pub use alg::mmptcp::{Dealing, MmptcpConfig};
pub use alg::mptcp_d::MptcpDConfig;
pub use alg::xmp::XmpConfig;
pub use config::{ConfigError, ControllerConfig, ControllerKind, InitialWindow};
pub use event::{EcnCodepoint, Event, Notice, PathId, ReductionCause, RttSample};

/// Writing a coupled controller: the hooks-over-shared-core API every built-in is written on.
///
/// Implement [`Algorithm`](coupled::Algorithm) (only the hooks that differ from the common
/// ground), wrap it in [`Coupled`](coupled::Coupled) and, to choose it by name like a built-in,
/// [`register`] it. The hooks read the shared per-path state
/// ([`PathState`](coupled::PathState): window, threshold, RTTs, rounds, the round's CE
/// fraction) and the coupled sums ([`Sums`](coupled::Sums)) through [`Core`](coupled::Core),
/// and change them through the core's methods, which keep the sums, the window bounds and the
/// once-per-round gate consistent.
pub mod coupled {
    pub use crate::conn::{standard_ack, standard_congestion, Algorithm, Coupled};
    pub use crate::core::path::{initial_window, MAX_WINDOW};
    pub use crate::core::{Core, Coupling, PathState, RoundStats, Slot, Sums};
}
pub use registry::{
    is_valid_name, names, register, registered, ControllerChoice, Params, RegisterError,
    Registration, TRANSPORT_NAMES,
};
pub use snapshot::{ConnectionSnapshot, PathSnapshot};

/// A connection-scoped congestion controller for every path of one connection.
pub trait Controller: Send + std::fmt::Debug {
    /// The name the controller is [`register`]ed under (a built-in's is its [`ControllerKind`]'s
    /// name).
    fn name(&self) -> &'static str;

    /// Feed one event on one path. Events for unknown or removed paths are ignored.
    fn on_event(&mut self, path: PathId, event: Event);

    /// Bytes that may be in flight on `path` (0 for an unknown path). This is the congestion
    /// window even when the path is suppressed; see [`Controller::may_send`].
    fn window(&self, path: PathId) -> u64;

    /// Whether `path` may carry new data now.
    fn may_send(&self, path: PathId) -> bool;

    /// The windows of paths `PathId(0)` to `PathId(out.len() - 1)` into `out`, each what
    /// [`Controller::window`] says of it (0 for an unknown or removed path). A coupled
    /// controller may move any path's window on one path's event, so a transport that mirrors
    /// the windows reads them all after every event: the default asks path by path; override it
    /// to read them in one pass.
    fn windows(&self, out: &mut [u64]) {
        for (i, window) in out.iter_mut().enumerate() {
            *window = self.window(PathId(i as u32));
        }
    }

    /// The controller's state, for logs, qlog, statistics and tests.
    fn snapshot(&self) -> ConnectionSnapshot;

    /// Move the notices recorded since the last call into `out`.
    fn drain_notices(&mut self, out: &mut Vec<Notice>);

    /// The ECN-capable codepoint the connection's packets carry: ECT(0) (the default) for a
    /// controller that reads marks as classic congestion, ECT(1) for an L4S controller, whose
    /// bottlenecks then mark early and often. Fixed for the connection's life.
    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::Ect0
    }
}

impl<C: Controller + ?Sized> Controller for Box<C> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn on_event(&mut self, path: PathId, event: Event) {
        (**self).on_event(path, event)
    }

    fn window(&self, path: PathId) -> u64 {
        (**self).window(path)
    }

    fn may_send(&self, path: PathId) -> bool {
        (**self).may_send(path)
    }

    fn windows(&self, out: &mut [u64]) {
        (**self).windows(out)
    }

    fn snapshot(&self) -> ConnectionSnapshot {
        (**self).snapshot()
    }

    fn drain_notices(&mut self, out: &mut Vec<Notice>) {
        (**self).drain_notices(out)
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        (**self).ecn_codepoint()
    }
}

/// The crate README's example compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
