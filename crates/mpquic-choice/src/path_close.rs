//! Why a path stopped carrying data: the reason the connection's report gives for each path
//! that is closed, or that the controller closed to data for good.
//!
//! A report has to tell these apart: a failed path comes back as a new one (failover), an
//! eliminated one is the controller's decision (MPTCP-D's extra-subflow elimination, which the
//! ESE metrics score), and the others are the ordinary end of a path.

use std::fmt;

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
    /// This end's application closed it (`mpquic::MultipathConnection::close_path`).
    Closed,
    /// It was open until the connection ended.
    ConnectionEnd,
}

impl PathClose {
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
