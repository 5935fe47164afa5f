//! Reading the stack's path abandons as a [`PathClose`] (the enum is `mpquic_choice`'s, shared
//! with the experiment language).

use noq_proto::{PathAbandonReason, TransportErrorCode, VarInt};

use crate::PathClose;

/// The reason noq's abandon gives, where this end did not decide it: `failed_here` when
/// this end's failover abandoned the path. A peer's PATH_ABANDON is read by its error code
/// (RFC 10069, section 3.4): only PATH_UNSTABLE_OR_POOR is the peer's failure verdict.
pub(crate) fn of_abandon(reason: &PathAbandonReason, failed_here: bool) -> PathClose {
    match reason {
        PathAbandonReason::ApplicationClosed { .. } if failed_here => PathClose::Failed,
        PathAbandonReason::ApplicationClosed { .. } => PathClose::Closed,
        PathAbandonReason::RemoteAbandoned { error_code } => {
            path_close_of_peer_abandon(*error_code)
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
/// use mpquic::{path_close_of_peer_abandon, PathClose};
///
/// let code = TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED.into();
/// assert_eq!(path_close_of_peer_abandon(code), PathClose::ResourceLimit);
/// ```
pub fn path_close_of_peer_abandon(error_code: VarInt) -> PathClose {
    match TransportErrorCode::from(error_code) {
        TransportErrorCode::PATH_UNSTABLE_OR_POOR => PathClose::Failed,
        TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED => PathClose::ResourceLimit,
        _ => PathClose::ClosedByPeer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abandon_is_a_failure_only_where_failover_decided_it() {
        let local = PathAbandonReason::ApplicationClosed { error_code: 0u32.into() };
        assert_eq!(of_abandon(&local, true), PathClose::Failed);
        assert_eq!(of_abandon(&local, false), PathClose::Closed);
        let idle = PathAbandonReason::TimedOut;
        assert_eq!(of_abandon(&idle, false), PathClose::IdleTimeout);
    }

    #[test]
    fn a_peer_abandon_is_read_by_its_error_code() {
        let remote = |code: TransportErrorCode| PathAbandonReason::RemoteAbandoned {
            error_code: code.into(),
        };
        let of = |code| of_abandon(&remote(code), false);
        assert_eq!(of(TransportErrorCode::PATH_UNSTABLE_OR_POOR), PathClose::Failed);
        assert_eq!(of(TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED), PathClose::ResourceLimit);
        assert_eq!(of(TransportErrorCode::APPLICATION_ABANDON_PATH), PathClose::ClosedByPeer);
        assert_eq!(of(TransportErrorCode::NO_ERROR), PathClose::ClosedByPeer);
        // This end's failover deciding too does not change what the peer said.
        let poor = remote(TransportErrorCode::PATH_RESOURCE_LIMIT_REACHED);
        assert_eq!(of_abandon(&poor, true), PathClose::ResourceLimit);
    }
}
