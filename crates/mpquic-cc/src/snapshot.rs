//! A controller's state as plain data.

use std::time::Duration;

use serde::Serialize;

use crate::PathId;

/// One path's congestion state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathSnapshot {
    /// The path.
    pub path: PathId,
    /// Congestion window, bytes.
    pub window: u64,
    /// Slow-start threshold, bytes (`None` while it is still infinite).
    pub ssthresh: Option<u64>,
    /// Whether the path is in slow start.
    pub in_slow_start: bool,
    /// Whether the path may carry new data (false while suppressed or eliminated).
    pub active: bool,
    /// ECN estimate of DCTCP and DCM, in [0, 1]; `None` for algorithms without one.
    pub alpha: Option<f64>,
    /// Completed rounds on this path.
    pub rounds: u64,
    /// ACK frames that raised the CE count.
    pub ce_events: u64,
    /// Marked packets: exact if `ce_exact`, otherwise the estimate the controller worked with.
    pub ce_marked: u64,
    /// Whether every CE count received so far was exact.
    pub ce_exact: bool,
    /// Reactions to ECN (at most one per round). A reaction that left the window where it was
    /// (already at `cwnd_min`, or XMP's slow-start exit) counts too.
    pub ecn_reductions: u64,
    /// Reactions to loss, persistent congestion included (at most one per round otherwise).
    pub loss_reductions: u64,
    /// Ack-eliciting packets sent on the path.
    pub sent_packets: u64,
    /// Bytes in those packets.
    pub sent_bytes: u64,
    /// The smoothed RTT the controller last saw (`None` before the first sample).
    pub srtt: Option<Duration>,
}

/// A whole connection's congestion state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionSnapshot {
    /// The algorithm's name.
    pub algorithm: &'static str,
    /// Connection-wide mode, e.g. AMP's `"normal"` / `"suppressed"`, MMPTCP's `"scatter"` /
    /// `"multipath"`; `None` for algorithms without modes.
    pub mode: Option<&'static str>,
    /// Every live path, in id order.
    pub paths: Vec<PathSnapshot>,
    /// AMP suppression episodes so far.
    pub suppressions: u64,
    /// AMP releases so far.
    pub releases: u64,
    /// MPTCP-D ESE eliminations so far.
    pub eliminations: u64,
    /// Notices dropped because nobody drained them and the buffer was full (see
    /// [`Controller::drain_notices`](crate::Controller::drain_notices)).
    pub notices_dropped: u64,
}

impl ConnectionSnapshot {
    /// The snapshot of one path, if it is live.
    pub fn path(&self, path: PathId) -> Option<&PathSnapshot> {
        self.paths.iter().find(|p| p.path == path)
    }
}
