//! The library's insides that the simulator (`mpquic-sim`) drives on its own virtual clock, so
//! that a simulated connection is built and supervised by the same code as a real one: the
//! adapter between the stack and the coupled controller, the path supervisor, the transport
//! configuration of [`Options`] and the per-path report.
//!
//! **Not part of the API mpquic promises.** This module exists only with the `internals`
//! feature, which the simulator enables; what it offers changes with the simulator's needs, in
//! any release, without notice. A service should not enable it: everything a service needs is
//! in the crate root.

use std::sync::Arc;

use noq::{PathId, PathStats, TransportConfig};

pub use crate::congestion::{slot_of, SharedController, SlotReport};
pub use crate::supervisor::{PathSupervisor, PathView, SupervisorAction, FAILURE_POLL};
use crate::{Options, PathEnds, PathReport};

/// One connection's transport configuration and coupled controller, as [`Options`] builds them
/// for every connection of the library (see `Options`' fields for the policies in it).
pub fn transport_config(options: &Options) -> (TransportConfig, Option<Arc<SharedController>>) {
    options.transport_config()
}

/// A path's report from the stack's statistics for it and, under a coupled controller of ours,
/// its slot's snapshot and the adapter's measurements ([`SharedController::slot_report`]);
/// `share` is left at 0 until [`set_shares`].
pub fn path_report(
    id: PathId,
    ends: PathEnds,
    stats: Option<&PathStats>,
    cc: Option<&mpquic_cc::PathSnapshot>,
    measured: Option<&SlotReport>,
) -> PathReport {
    PathReport::new(id, ends, stats, cc, measured)
}

/// Set each path's `share` of the bytes all of them sent.
pub fn set_shares(paths: &mut [PathReport]) {
    PathReport::set_shares(paths)
}
