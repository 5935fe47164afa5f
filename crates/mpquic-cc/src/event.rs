//! What a controller is told, and what it tells back.
//!
//! Every congestion signal reaches a controller through one entry point,
//! [`Controller::on_event`](crate::Controller::on_event), as a `(path, event)` pair. Controllers
//! answer queries (`window`, `may_send`, `snapshot`) and leave a trail of [`Notice`]s for logs and
//! qlog.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Identifies one path (one MPTCP "subflow") of a connection.
///
/// Path 0 is the *initial path*: the one the handshake ran on. Ids are never reused within a
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PathId(pub u32);

impl PathId {
    /// The path the connection was established on.
    pub const INITIAL: PathId = PathId(0);
}

impl fmt::Display for PathId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The ECN-capable codepoint a controller's packets carry (RFC 3168 section 5, RFC 9331).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnCodepoint {
    /// ECT(0), the classic codepoint: a bottleneck marks it as it would drop (RFC 3168), and
    /// every controller here reads the marks.
    #[default]
    Ect0,
    /// ECT(1), the L4S identifier (RFC 9331): an L4S bottleneck marks it at a shallow,
    /// immediate step, for a sender that answers each mark in proportion (a scalable
    /// controller: DCTCP-like, Prague).
    Ect1,
}

impl EcnCodepoint {
    /// Both codepoints.
    pub const ALL: [EcnCodepoint; 2] = [EcnCodepoint::Ect0, EcnCodepoint::Ect1];

    /// The name in option strings and reports: `ect0` or `ect1`.
    pub fn name(self) -> &'static str {
        match self {
            EcnCodepoint::Ect0 => "ect0",
            EcnCodepoint::Ect1 => "ect1",
        }
    }
}

impl std::str::FromStr for EcnCodepoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EcnCodepoint::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown ECN codepoint `{s}` (ect0 or ect1)"))
    }
}

/// The RTT estimator's view of a path when a packet is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RttSample {
    /// The most recent RTT sample.
    pub latest: Duration,
    /// The smoothed RTT (RFC 9002 section 5.3).
    pub smoothed: Duration,
    /// The minimum RTT seen on the path.
    pub min: Duration,
}

/// One congestion-relevant thing that happened on a path.
///
/// The order within one ACK frame is: `PacketAcked` for each newly acknowledged packet, then
/// `CongestionExperienced` if the frame raised the peer's CE count, then `PacketsLost` if loss
/// detection declared packets lost, then `AckBatchEnded`. Round boundaries are derived by the
/// controller from packet numbers; callers do not signal them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// The path exists and may carry data. `mss` is its maximum datagram size in bytes.
    PathAdded {
        /// Maximum datagram size in bytes.
        mss: u64,
    },
    /// The path is gone; its state may be dropped. Later events for it are ignored.
    PathRemoved,
    /// An ack-eliciting packet of `bytes` bytes with packet number `pn` was sent.
    PacketSent {
        /// Size of the packet in bytes.
        bytes: u64,
        /// Packet number in the path's number space.
        pn: u64,
    },
    /// A previously sent packet was acknowledged.
    PacketAcked {
        /// Size of the packet in bytes.
        bytes: u64,
        /// Its packet number.
        pn: u64,
        /// The path's RTT estimator at this moment.
        rtt: RttSample,
        /// The sender had too little data to fill the window before this ACK. The window then
        /// does not grow (RFC 9002 section 7.8): growth it does not use would later come out as a
        /// burst.
        app_limited: bool,
    },
    /// The ACK frame raised the peer's CE counter for this path.
    CongestionExperienced {
        /// Number of newly CE-marked packets: exact when `exact`, otherwise an estimate.
        count: u64,
        /// Whether `count` is the true CE increase (the stack reported counts) or an estimate
        /// (the stack only reported that the count rose).
        exact: bool,
    },
    /// Loss detection declared packets lost.
    PacketsLost {
        /// Bytes declared lost.
        bytes: u64,
        /// Largest packet number among them.
        largest_pn: u64,
        /// RFC 9002 persistent congestion.
        persistent: bool,
    },
    /// All packets of one ACK frame have been reported.
    AckBatchEnded,
    /// The path's maximum datagram size changed (PMTU discovery).
    MssChanged {
        /// New maximum datagram size in bytes.
        mss: u64,
    },
}

/// Why a window went down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReductionCause {
    /// ECN congestion-experienced feedback.
    Ecn,
    /// Packet loss.
    Loss,
    /// RFC 9002 persistent congestion.
    PersistentCongestion,
}

impl ReductionCause {
    /// Every cause, in declaration order (so `cause as usize` indexes it).
    pub const ALL: [ReductionCause; 3] =
        [ReductionCause::Ecn, ReductionCause::Loss, ReductionCause::PersistentCongestion];

    /// The cause's serialized name.
    pub fn name(self) -> &'static str {
        match self {
            ReductionCause::Ecn => "ecn",
            ReductionCause::Loss => "loss",
            ReductionCause::PersistentCongestion => "persistent_congestion",
        }
    }
}

/// Something a controller did that a person reading a trace wants to see.
///
/// These are the controller's own events for qlog, tracing and experiment reports: reactions
/// and episodes, not every per-ACK increase.
///
/// Serialized (and deserialized, e.g. by the qlog reader of `mpquic report`) as an object whose
/// `kind` field is [`Notice::kind`] and whose other fields are the variant's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// A path's window was cut.
    WindowReduced {
        /// The path.
        path: PathId,
        /// Window before, bytes.
        from: u64,
        /// Window after, bytes.
        to: u64,
        /// What caused it.
        cause: ReductionCause,
    },
    /// A path left slow start.
    SlowStartExited {
        /// The path.
        path: PathId,
        /// Window at exit, bytes.
        window: u64,
    },
    /// A round-based ECN estimate (DCTCP / DCM alpha) was updated.
    AlphaUpdated {
        /// The path.
        path: PathId,
        /// New alpha in [0, 1].
        alpha: f64,
        /// Fraction of the round's acknowledged packets that were marked.
        marked_fraction: f64,
    },
    /// AMP: every path but the initial one was suppressed.
    Suppressed {
        /// The paths that stopped carrying new data.
        paths: Vec<PathId>,
    },
    /// AMP: suppressed paths were released. Also MPTCP-D: eliminated paths were reopened
    /// because the path they were kept in favour of went away.
    Released {
        /// The paths that may carry data again.
        paths: Vec<PathId>,
    },
    /// MPTCP-D ESE: a path was found to share a bottleneck and was closed for new data.
    Eliminated {
        /// The eliminated path.
        path: PathId,
        /// The path whose RTT inflation triggered the detection (it stays open).
        keeper: PathId,
        /// The eliminated path's RTT sample at detection.
        rtt: Duration,
        /// Its base (minimum) RTT.
        base_rtt: Duration,
    },
    /// MMPTCP left packet scatter and runs one window per path from now on.
    PhaseSwitched {
        /// Connection window at the switch, bytes.
        window: u64,
        /// Bytes sent when it switched.
        sent_bytes: u64,
    },
}

impl Notice {
    /// The kind of [`Notice::Suppressed`] (AMP's suppression episodes, counted by reports).
    pub const SUPPRESSED: &'static str = "suppressed";

    /// Every [`Notice::kind`], in declaration order.
    pub const KINDS: [&'static str; 7] = [
        "window_reduced",
        "slow_start_exited",
        "alpha_updated",
        Self::SUPPRESSED,
        "released",
        "eliminated",
        "phase_switched",
    ];

    /// The notice's name: its serialized `kind`, the suffix of its qlog event `mpquic:<kind>`.
    pub fn kind(&self) -> &'static str {
        let index = match self {
            Notice::WindowReduced { .. } => 0,
            Notice::SlowStartExited { .. } => 1,
            Notice::AlphaUpdated { .. } => 2,
            Notice::Suppressed { .. } => 3,
            Notice::Released { .. } => 4,
            Notice::Eliminated { .. } => 5,
            Notice::PhaseSwitched { .. } => 6,
        };
        Self::KINDS[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One notice of every kind, in declaration order.
    fn one_of_each() -> Vec<Notice> {
        let path = PathId(2);
        vec![
            Notice::WindowReduced { path, from: 20_000, to: 10_000, cause: ReductionCause::Ecn },
            Notice::SlowStartExited { path, window: 64_000 },
            Notice::AlphaUpdated { path, alpha: 0.0625, marked_fraction: 0.5 },
            Notice::Suppressed { paths: vec![PathId(1), path] },
            Notice::Released { paths: vec![path] },
            Notice::Eliminated {
                path,
                keeper: PathId::INITIAL,
                rtt: Duration::from_micros(900),
                base_rtt: Duration::from_micros(300),
            },
            Notice::PhaseSwitched { window: 30_000, sent_bytes: 1 << 20 },
        ]
    }

    #[test]
    fn kind_is_the_serialized_tag_and_every_notice_round_trips() {
        let notices = one_of_each();
        assert_eq!(notices.len(), Notice::KINDS.len(), "one sample per kind");
        for (notice, kind) in notices.iter().zip(Notice::KINDS) {
            assert_eq!(notice.kind(), kind);
            let json = serde_json::to_value(notice).unwrap();
            assert_eq!(json["kind"], kind, "{json}");
            let back: Notice = serde_json::from_value(json).unwrap();
            assert_eq!(&back, notice);
        }
    }

    #[test]
    fn every_reduction_cause_round_trips_under_its_name() {
        for (i, cause) in ReductionCause::ALL.into_iter().enumerate() {
            assert_eq!(cause as usize, i);
            let notice = Notice::WindowReduced { path: PathId::INITIAL, from: 2, to: 1, cause };
            let json = serde_json::to_value(&notice).unwrap();
            assert_eq!(json["cause"], cause.name());
            assert_eq!(serde_json::from_value::<Notice>(json).unwrap(), notice);
        }
    }

    #[test]
    fn an_unknown_kind_is_an_error() {
        let err = serde_json::from_str::<Notice>(r#"{"kind": "vanished", "path": 1}"#);
        assert!(err.is_err());
    }
}
