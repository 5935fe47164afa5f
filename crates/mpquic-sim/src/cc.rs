//! Choosing a congestion controller for a flow.
//!
//! Every controller reaches the stack through noq-proto's `ControllerFactory` seam, with one
//! factory per connection (coupled controllers keep per-connection state in it).
//!
//! `newreno` and `cubic` are the stack's own controllers, uncoupled per path. The mpquic-cc
//! algorithms (AMP, XMP, DCM, MPTCP-D, MMPTCP, LIA, DCTCP) are driven through the adapter of the
//! `mpquic` crate; until that adapter is on the main branch they are refused with a clear error
//! rather than replaced by a re-implementation here.

use std::sync::Arc;

use noq_proto::congestion::{ControllerFactory, CubicConfig, NewRenoConfig};

/// A factory ready to go into a `TransportConfig`.
pub type Factory = Arc<dyn ControllerFactory + Send + Sync + 'static>;

/// The controller names this build can run.
pub fn available() -> &'static [&'static str] {
    &["newreno", "cubic"]
}

/// Whether `name` is a controller the simulator knows of (runnable or not yet).
pub fn is_known(name: &str) -> bool {
    available().contains(&name) || name.parse::<mpquic_cc::ControllerKind>().is_ok()
}

/// A fresh factory for one connection.
pub fn factory(name: &str) -> Result<Factory, String> {
    match name {
        "newreno" => Ok(Arc::new(NewRenoConfig::default())),
        "cubic" => Ok(Arc::new(CubicConfig::default())),
        other => match other.parse::<mpquic_cc::ControllerKind>() {
            Ok(kind) => Err(format!(
                "controller `{kind}` runs through the mpquic adapter, which is not in this build yet \
                 (available: {})",
                available().join(", ")
            )),
            Err(e) => Err(e.to_string()),
        },
    }
}
