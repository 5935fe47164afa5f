//! Why a path stopped carrying data: the reason the connection's report gives for each path
//! that is closed, or that the controller closed to data for good.
//!
//! A report has to tell these apart: a failed path comes back as a new one (failover), an
//! eliminated one is the controller's decision (MPTCP-D's extra-subflow elimination, which the
//! ESE metrics score), and the others are the ordinary end of a path.

use std::fmt;

use noq_proto::{PathAbandonReason, TransportErrorCode, VarInt};
use serde::{Deserialize, Serialize};

/// Why a path was closed (or, for [`PathClose::Eliminated`], kept from data for good).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathClose {
    /// It stopped answering and failover abandoned it (here, or at the peer, which says so
    /// with PATH_UNSTABLE_OR_POOR), or the local network took it away. A failed path that
    /// answers again comes back as a new path.
    Failed,
    /// The controller eliminated it (MPTCP-D's extra-subflow elimination): it carries no new
    /// data from then on. The QUIC path stays open, sending only probes, and is reported
    /// open.
    Eliminated,
    /// Nothing arrived on it for the path idle timeout.
    IdleTimeout,
    /// The peer closed it with PATH_RESOURCE_LIMIT_REACHED: it cannot keep the path, so it is
    /// not opened again.
    ResourceLimit,
    /// The peer closed it for a reason of its own (any other PATH_ABANDON error code).
    ClosedByPeer,
    /// This end's application closed it ([`crate::MultipathConnection::close_path`]).
    Closed,
    /// It was open until the connection ended.
    ConnectionEnd,
}

impl PathClose {
    /// The reason noq's abandon gives, where this end did not decide it: `failed_here` when
    /// this end's failover abandoned the path. A peer's PATH_ABANDON is read by its error code
    /// (RFC 10069, section 3.4): only PATH_UNSTABLE_OR_POOR is the peer's failure verdict.
    pub(crate) fn of_abandon(reason: &PathAbandonReason, failed_here: bool) -> PathClose {
        match reason {
            PathAbandonReason::ApplicationClosed { .. } if failed_here => PathClose::Failed,
            PathAbandonReason::ApplicationClosed { .. } => PathClose::Closed,
            PathAbandonReason::RemoteAbandoned { error_code } => {
                PathClose::of_peer_abandon(*error_code)
            }
            PathAbandonReason::UnusableAfterNetworkChange => PathClose::Failed,
            // Path validation that gets no answer ends as an idle timeout too.
            _ => PathClose::IdleTimeout,
        }
    }

    /// What the error code of the peer's PATH_ABANDON frame says about the path: `Failed` for
    /// PATH_UNSTABLE_OR_POOR (the peer found it failed: the client opens it again),
    /// `ResourceLimit` for PATH_RESOURCE_LIMIT_REACHED (not opened again), `ClosedByPeer` for
    /// any other code.
    ///
    /// ```
    /// use mpquic::noq::TransportErrorCode;
    /// use mpquic::PathClose;
    ///
    /// let code = TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED.into();
    /// assert_eq!(PathClose::of_peer_abandon(code), PathClose::ResourceLimit);
    /// ```
    pub fn of_peer_abandon(error_code: VarInt) -> PathClose {
        match TransportErrorCode::from(error_code) {
            TransportErrorCode::PATH_UNSTABLE_OR_POOR => PathClose::Failed,
            TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED => PathClose::ResourceLimit,
            _ => PathClose::ClosedByPeer,
        }
    }

    /// What a report says of a path: the reason the connection recorded for its close
    /// (`closed`, `None` while it is open), unless the controller had eliminated it before.
    /// An eliminated path's later close (at the end of the connection, by either end) ends a
    /// path that no longer carried data, so the elimination is what it says; only a failure
    /// overrides it, as the path then comes back as a new one.
    pub fn reported(closed: Option<PathClose>, eliminated: bool) -> Option<PathClose> {
        match closed {
            Some(PathClose::Failed) => closed,
            _ if eliminated => Some(PathClose::Eliminated),
            _ => closed,
        }
    }
}

/// In words, as the CLI's per-path table shows it (the JSON report has `idle_timeout` etc.).
impl fmt::Display for PathClose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathClose::Failed => "failed",
            PathClose::Eliminated => "eliminated",
            PathClose::IdleTimeout => "idle timeout",
            PathClose::ResourceLimit => "closed by the peer: resource limit",
            PathClose::ClosedByPeer => "closed by the peer",
            PathClose::Closed => "closed here",
            PathClose::ConnectionEnd => "connection ended",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_are_snake_case() {
        let names = [
            (PathClose::Failed, "failed"),
            (PathClose::Eliminated, "eliminated"),
            (PathClose::IdleTimeout, "idle_timeout"),
            (PathClose::ResourceLimit, "resource_limit"),
            (PathClose::ClosedByPeer, "closed_by_peer"),
            (PathClose::Closed, "closed"),
            (PathClose::ConnectionEnd, "connection_end"),
        ];
        for (reason, name) in names {
            assert_eq!(serde_json::to_value(reason).unwrap(), name);
            assert_eq!(serde_json::from_value::<PathClose>(name.into()).unwrap(), reason);
        }
    }

    #[test]
    fn an_abandon_is_a_failure_only_where_failover_decided_it() {
        let local = PathAbandonReason::ApplicationClosed { error_code: 0u32.into() };
        assert_eq!(PathClose::of_abandon(&local, true), PathClose::Failed);
        assert_eq!(PathClose::of_abandon(&local, false), PathClose::Closed);
        let idle = PathAbandonReason::TimedOut;
        assert_eq!(PathClose::of_abandon(&idle, false), PathClose::IdleTimeout);
    }

    #[test]
    fn a_peer_abandon_is_read_by_its_error_code() {
        let remote = |code: TransportErrorCode| PathAbandonReason::RemoteAbandoned {
            error_code: code.into(),
        };
        let of = |code| PathClose::of_abandon(&remote(code), false);
        assert_eq!(of(TransportErrorCode::PATH_UNSTABLE_OR_POOR), PathClose::Failed);
        assert_eq!(of(TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED), PathClose::ResourceLimit);
        assert_eq!(of(TransportErrorCode::APPLICATION_ABANDON_PATH), PathClose::ClosedByPeer);
        assert_eq!(of(TransportErrorCode::NO_ERROR), PathClose::ClosedByPeer);
        // This end's failover deciding too does not change what the peer said.
        let poor = remote(TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED);
        assert_eq!(PathClose::of_abandon(&poor, true), PathClose::ResourceLimit);
    }

    #[test]
    fn an_elimination_stands_unless_the_path_then_failed() {
        let reported = PathClose::reported;
        assert_eq!(reported(None, false), None);
        assert_eq!(reported(None, true), Some(PathClose::Eliminated));
        assert_eq!(reported(Some(PathClose::ConnectionEnd), true), Some(PathClose::Eliminated));
        assert_eq!(reported(Some(PathClose::ClosedByPeer), true), Some(PathClose::Eliminated));
        assert_eq!(reported(Some(PathClose::Failed), true), Some(PathClose::Failed));
        assert_eq!(reported(Some(PathClose::IdleTimeout), false), Some(PathClose::IdleTimeout));
    }
}
