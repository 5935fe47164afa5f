//! The library's path supervisor on a simulated connection: the keep-alive of silent paths,
//! failure detection and re-opening of failed paths that `MultipathConnection` runs on tokio,
//! here driven in virtual time by the event loop.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use mpquic::internals::{PathSupervisor, PathView, SharedController, SupervisorAction};
use mpquic::{FailoverEvent, Options, PathClose, PathFailure, PathSpec};
use mpquic_cc::PathId as Slot;
use noq_proto::{Connection, FourTuple, PathAbandonReason, PathId, PathStatus, TransportErrorCode};

use crate::sim::path_number;

/// How a connection's paths are supervised, as the library's options say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    rule: Option<PathFailure>,
    keep_alive: Duration,
}

impl Policy {
    pub(crate) fn of(options: &Options) -> Self {
        Policy { rule: options.path_failure, keep_alive: options.path_keep_alive() }
    }

    /// The supervision of a connection set up at `now`.
    pub(crate) fn start(self, client: bool, now: Instant) -> Supervision {
        let supervisor = PathSupervisor::new(self.rule, self.keep_alive, client, now);
        Supervision {
            supervisor,
            abandoned: BTreeSet::new(),
            reopening: BTreeMap::new(),
            events: vec![],
            queued: None,
        }
    }
}

/// One end's supervisor and what it needs to remember about the connection's paths.
pub(crate) struct Supervision {
    supervisor: PathSupervisor,
    /// Paths abandoned (by either end) and not to be watched any more.
    abandoned: BTreeSet<PathId>,
    /// Re-opening attempts under way: the new path -> the failed path it replaces.
    reopening: BTreeMap<PathId, PathId>,
    /// Failures and recoveries not yet collected by the flow.
    pub(crate) events: Vec<FailoverEvent>,
    /// The wake-up queued in the event loop (later ones are stale).
    pub(crate) queued: Option<Instant>,
}

impl Supervision {
    /// When the supervisor next wants to be polled, if that is earlier than the wake-up
    /// already queued (the caller then queues it).
    pub(crate) fn wake_up(&mut self) -> Option<Instant> {
        let at = self.supervisor.poll_timeout();
        if self.queued.is_some_and(|q| q <= at) {
            return None;
        }
        self.queued = Some(at);
        Some(at)
    }

    /// Poll the supervisor and carry out its decisions on `conn`.
    pub(crate) fn poll(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        cc: Option<&SharedController>,
        slots: &BTreeMap<u64, Slot>,
    ) {
        if conn.is_closed() {
            return;
        }
        let views = self.views(conn, cc, slots);
        for action in self.supervisor.poll(now, &views) {
            match action {
                SupervisorAction::Ping(id) => {
                    let _ = conn.ping_path(id);
                }
                SupervisorAction::Abandon(id) => {
                    // RFC 10069's code for a path found failed, as the library sends it.
                    let code = TransportErrorCode::PATH_UNSTABLE_OR_POOR.into();
                    if conn.close_path(now, id, code).is_ok() {
                        self.failed(now, id, conn);
                    }
                }
                SupervisorAction::Reopen { failed, spec } => {
                    let tuple = FourTuple::new(spec.remote, spec.local);
                    let status =
                        if spec.backup { PathStatus::Backup } else { PathStatus::Available };
                    match conn.open_path(tuple, status, now) {
                        Ok(new) => {
                            self.reopening.insert(new, failed);
                        }
                        Err(_) => self.reopen_finished(now, failed, None),
                    }
                }
            }
        }
    }

    /// A path was established: if it re-opens a failed one, that one recovered.
    pub(crate) fn on_established(&mut self, now: Instant, id: PathId) {
        if let Some(failed) = self.reopening.remove(&id) {
            self.reopen_finished(now, failed, Some(id));
        }
    }

    /// A path was abandoned: by the peer (a failure when it says PATH_UNSTABLE_OR_POOR, as
    /// the library reads it: [`PathClose`]), or an attempt to re-open a failed path that did
    /// not answer.
    pub(crate) fn on_abandoned(
        &mut self,
        now: Instant,
        id: PathId,
        reason: &PathAbandonReason,
        conn: &Connection,
    ) {
        if !self.abandoned.insert(id) {
            return;
        }
        if let Some(failed) = self.reopening.remove(&id) {
            self.reopen_finished(now, failed, None);
        } else if failed_at_peer(reason) && !conn.is_closed() {
            self.failed(now, id, conn);
        }
    }

    fn failed(&mut self, now: Instant, id: PathId, conn: &Connection) {
        self.abandoned.insert(id);
        let addresses =
            conn.network_path(id).map_or((None, None), |t| (t.local_ip(), Some(t.remote())));
        let open = self.open_paths(conn);
        let backup = conn.path_status(id) == Ok(PathStatus::Backup);
        let event = self.supervisor.path_failed(now, id, addresses, &open, backup);
        self.events.push(event);
    }

    fn reopen_finished(&mut self, now: Instant, failed: PathId, opened: Option<PathId>) {
        self.events.extend(self.supervisor.reopen_finished(now, failed, opened));
    }

    fn open_paths(&self, conn: &Connection) -> Vec<PathId> {
        conn.paths().into_iter().filter(|id| !self.abandoned.contains(id)).collect()
    }

    /// The open paths as the supervisor sees them (see the library's `MultipathConnection`).
    fn views(
        &self,
        conn: &mut Connection,
        cc: Option<&SharedController>,
        slots: &BTreeMap<u64, Slot>,
    ) -> Vec<PathView> {
        self.open_paths(conn)
            .into_iter()
            .filter_map(|id| {
                let backup = conn.path_status(id) == Ok(PathStatus::Backup);
                // A backup is re-opened as a backup.
                let spec = conn.network_path(id).ok().map(|t| {
                    let spec = PathSpec::new(t.local_ip(), t.remote());
                    if backup {
                        spec.as_backup()
                    } else {
                        spec
                    }
                });
                let stats = conn.path_stats(id)?;
                let slot = slots.get(&path_number(id));
                let samples = slot.and_then(|&slot| cc?.rtt_samples(slot));
                Some(PathView::new(id, spec, &stats, samples, backup))
            })
            .collect()
    }
}

/// Whether the peer abandoned a path because it found it failed (PATH_UNSTABLE_OR_POOR).
fn failed_at_peer(reason: &PathAbandonReason) -> bool {
    match reason {
        PathAbandonReason::RemoteAbandoned { error_code } => {
            mpquic::path_close_of_peer_abandon(*error_code) == PathClose::Failed
        }
        _ => false,
    }
}
