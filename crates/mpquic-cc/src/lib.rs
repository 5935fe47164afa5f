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

mod config;
mod event;
mod snapshot;

pub use config::{ConfigError, ControllerConfig, ControllerKind};
pub use event::{Event, Notice, PathId, ReductionCause, RttSample};
pub use snapshot::{ConnectionSnapshot, PathSnapshot};

/// A connection-scoped congestion controller for every path of one connection.
pub trait Controller: Send + std::fmt::Debug {
    /// The algorithm's name, as accepted by [`ControllerKind`]'s `FromStr`.
    fn name(&self) -> &'static str;

    /// Feed one event on one path. Events for unknown or removed paths are ignored.
    fn on_event(&mut self, path: PathId, event: Event);

    /// Bytes that may be in flight on `path` (0 for an unknown path). This is the congestion
    /// window even when the path is suppressed; see [`Controller::may_send`].
    fn window(&self, path: PathId) -> u64;

    /// Whether `path` may carry new data now.
    fn may_send(&self, path: PathId) -> bool;

    /// The controller's state, for logs, qlog, statistics and tests.
    fn snapshot(&self) -> ConnectionSnapshot;

    /// Move the notices recorded since the last call into `out`.
    fn drain_notices(&mut self, out: &mut Vec<Notice>);
}
