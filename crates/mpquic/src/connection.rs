//! Multipath connections: opening paths, following their lives, and reporting on them.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use mpquic_cc::ConnectionSnapshot;
use noq::{
    FourTuple, PathError, PathEvent, PathId, PathStats, PathStatus, SetPathStatusError,
    TransportErrorCode,
};
use noq_proto::PathAbandonReason;
use serde::Serialize;
use tokio_stream::StreamExt;
use tracing::Instrument;

use crate::congestion::{slot_of, SharedController, SlotReport};
pub use crate::failover::FailoverEvent;
use crate::options::Transport;
use crate::path_close::PathClose;
use crate::supervisor::{PathSupervisor, PathView, SupervisorAction};

/// One path to open: a remote address and, optionally, the local address to send from.
///
/// Several paths may share one spec: they are distinct QUIC paths (own packet-number space,
/// RTT estimator and controller state) over the same addresses, i.e. link-sharing subflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathSpec {
    /// Source address; `None` lets the routing table choose.
    pub local: Option<IpAddr>,
    /// The peer's address.
    pub remote: SocketAddr,
    /// Whether the path opens as a backup (RFC 10069 path status): it carries data only while
    /// no available path can, and failover promotes it when the last available path fails.
    pub backup: bool,
}

impl PathSpec {
    /// The path from `local` (or the routed default) to `remote`, available for data.
    pub fn new(local: Option<IpAddr>, remote: SocketAddr) -> Self {
        PathSpec { local, remote, backup: false }
    }

    /// The same path as a backup: see [`PathSpec::backup`].
    ///
    /// ```
    /// use mpquic::PathSpec;
    ///
    /// let wifi = PathSpec::new(Some("10.0.1.1".parse()?), "10.0.1.2:4433".parse()?);
    /// let lte = PathSpec::new(Some("10.0.2.1".parse()?), "10.0.1.2:4433".parse()?).as_backup();
    /// assert!(lte.backup && !wifi.backup);
    /// assert_eq!(lte.to_string(), "10.0.2.1 -> 10.0.1.2:4433 (backup)");
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn as_backup(self) -> Self {
        PathSpec { backup: true, ..self }
    }

    fn status(&self) -> PathStatus {
        if self.backup {
            PathStatus::Backup
        } else {
            PathStatus::Available
        }
    }

    /// One path per (local, remote) pair: every local address with every remote one of the
    /// same IP family. With no local addresses, one path per remote address.
    ///
    /// ```
    /// use std::net::{IpAddr, SocketAddr};
    /// use mpquic::PathSpec;
    ///
    /// let locals: [IpAddr; 2] = ["10.0.1.1".parse()?, "10.0.2.1".parse()?];
    /// let server: SocketAddr = "10.0.1.2:4433".parse()?;
    /// assert_eq!(
    ///     PathSpec::all_pairs(&locals, &[server]),
    ///     [PathSpec::new(Some(locals[0]), server), PathSpec::new(Some(locals[1]), server)],
    /// );
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn all_pairs(locals: &[IpAddr], remotes: &[SocketAddr]) -> Vec<PathSpec> {
        if locals.is_empty() {
            return remotes.iter().map(|&r| PathSpec::new(None, r)).collect();
        }
        remotes
            .iter()
            .flat_map(|&r| {
                locals
                    .iter()
                    .filter(move |l| l.is_ipv4() == r.is_ipv4())
                    .map(move |&l| PathSpec::new(Some(l), r))
            })
            .collect()
    }
}

impl std::fmt::Display for PathSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.local {
            Some(local) => write!(f, "{local} -> {}", self.remote)?,
            None => write!(f, "* -> {}", self.remote)?,
        }
        if self.backup {
            f.write_str(" (backup)")?;
        }
        Ok(())
    }
}

/// A path that could not be opened.
#[derive(Debug, Clone, thiserror::Error)]
#[error("path {spec} could not be opened: {reason}")]
pub struct PathOpenError {
    /// The path asked for.
    pub spec: PathSpec,
    /// Why it failed.
    pub reason: String,
}

/// What the connection remembers of each path.
#[derive(Debug, Clone)]
struct PathRecord {
    local: Option<IpAddr>,
    remote: Option<SocketAddr>,
    /// The path's slot in the coupled controller, if the controller is ours.
    slot: Option<mpquic_cc::PathId>,
    /// Final statistics, once noq discarded the path.
    closed_stats: Option<PathStats>,
    /// Why the path was closed; `None` while it is open.
    close: Option<PathClose>,
    /// This end's failover is abandoning it (set before the abandon, whose event reads it).
    failing: bool,
    /// Its status here: a backup carries data only while no available path can.
    status: PathStatus,
    /// A backup that failover made available when the last available path failed; it goes
    /// back to backup when an available path is established again.
    promoted: bool,
    /// When the path was established (path 0: when the connection was).
    opened: Instant,
}

/// A QUIC connection with the multipath extension, its coupled controller and its path ledger.
#[derive(Clone)]
pub struct MultipathConnection {
    conn: noq::Connection,
    controller: Option<Arc<SharedController>>,
    paths: Arc<Mutex<BTreeMap<PathId, PathRecord>>>,
    controller_name: &'static str,
    failover: Arc<Failover>,
}

/// The connection's path supervisor and the failover events it produced, shared by its tasks.
struct Failover {
    supervisor: Mutex<PathSupervisor>,
    /// The paths' idle timeout (none for a backup: see `MultipathConnection::set_path_status`).
    path_idle_timeout: Duration,
    /// Wakes the supervising task when the supervisor has new work (a path the peer
    /// abandoned is to be re-opened).
    wake: tokio::sync::Notify,
    #[cfg(feature = "qlog")]
    qlog: Option<crate::qlog::QlogEvents>,
    history: Mutex<Vec<FailoverEvent>>,
    events: tokio::sync::broadcast::Sender<FailoverEvent>,
}

impl Failover {
    fn new(transport: &Transport, client: bool) -> Self {
        let supervisor = PathSupervisor::new(
            transport.path_failure,
            transport.path_keep_alive,
            client,
            Instant::now(),
        );
        Failover {
            supervisor: Mutex::new(supervisor),
            path_idle_timeout: transport.path_idle_timeout,
            wake: tokio::sync::Notify::new(),
            #[cfg(feature = "qlog")]
            qlog: transport.qlog_events.clone(),
            history: Mutex::default(),
            events: tokio::sync::broadcast::channel(64).0,
        }
    }

    fn supervisor(&self) -> MutexGuard<'_, PathSupervisor> {
        self.supervisor.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, event: FailoverEvent) {
        tracing::warn!("{event}");
        self.trace(event.qlog_name(), &event);
        self.history.lock().unwrap_or_else(|p| p.into_inner()).push(event.clone());
        let _ = self.events.send(event);
    }

    /// Append `data` to the connection's qlog trace as the event `mpquic:<name>`, if it writes
    /// one.
    fn trace(&self, name: &str, data: &impl Serialize) {
        #[cfg(feature = "qlog")]
        if let (Some(qlog), Ok(data)) = (&self.qlog, serde_json::to_value(data)) {
            qlog.write(name, data);
        }
        #[cfg(not(feature = "qlog"))]
        let _ = (name, data);
    }
}

impl MultipathConnection {
    /// Wrap an established connection; starts following its path events and supervising its
    /// paths (keep-alive, failure detection, re-opening).
    pub(crate) fn new(
        conn: noq::Connection,
        transport: Transport,
        controller_name: &'static str,
    ) -> Self {
        let failover = Arc::new(Failover::new(&transport, conn.side().is_client()));
        let metrics = transport.metrics;
        let this = MultipathConnection {
            conn,
            controller: transport.controller,
            paths: Arc::default(),
            controller_name,
            failover,
        };
        let events = this.conn.path_events();
        this.register(PathId::ZERO);
        let follower = this.clone_weak();
        let span = tracing::info_span!("connection", id = this.conn.stable_id());
        tokio::spawn(
            async move {
                let mut events = events;
                while let Some(event) = events.next().await {
                    let Some(this) = follower.upgrade() else { break };
                    match event {
                        Ok(event) => this.on_path_event(event),
                        Err(lagged) => tracing::warn!("missed path events: {lagged}"),
                    }
                }
            }
            .instrument(span.clone()),
        );
        if let Some(interval) = metrics {
            this.spawn_metrics(interval, span.clone());
        }
        this.spawn_supervisor(span);
        this
    }

    /// Report the connection's measures every `interval` until it closes (or is dropped); the
    /// reporter then takes its share of the summed gauges back out.
    fn spawn_metrics(&self, interval: Duration, span: tracing::Span) {
        let follower = self.clone_weak();
        tokio::spawn(
            async move {
                let mut reporter = crate::metrics::Reporter::new();
                let mut tick = tokio::time::interval(interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(this) = follower.upgrade() else { break };
                    reporter.record(&this.report(), &this.in_flight());
                    if this.conn.close_reason().is_some() {
                        break;
                    }
                }
            }
            .instrument(span),
        );
    }

    /// Bytes in flight on each open path, by path number, as the coupled controller last heard
    /// (empty under the stack's own controllers).
    fn in_flight(&self) -> BTreeMap<u32, u64> {
        let Some(controller) = &self.controller else { return BTreeMap::new() };
        let ledger = self.ledger();
        let open = ledger.iter().filter(|(_, r)| r.close.is_none());
        open.filter_map(|(&id, r)| Some((path_number(id), controller.in_flight(r.slot?)?)))
            .collect()
    }

    /// Poll the path supervisor whenever it asks to be and carry out what it decides.
    fn spawn_supervisor(&self, span: tracing::Span) {
        let follower = self.clone_weak();
        tokio::spawn(
            async move {
                loop {
                    let wake = follower.failover.supervisor().poll_timeout();
                    let sleep = tokio::time::sleep_until(wake.into());
                    tokio::select! {
                        () = sleep => {}
                        () = follower.failover.wake.notified() => {}
                    }
                    let Some(this) = follower.upgrade() else { break };
                    if this.conn.close_reason().is_some() {
                        break;
                    }
                    let views = this.path_views();
                    let actions = this.failover.supervisor().poll(Instant::now(), &views);
                    for action in actions {
                        this.carry_out(action);
                    }
                }
            }
            .instrument(span),
        );
    }

    /// The open paths as the supervisor sees them.
    fn path_views(&self) -> Vec<PathView> {
        let ledger = self.ledger().clone();
        let view = |id| {
            let record = ledger.get(&id)?;
            let spec = record.remote.map(|remote| PathSpec::new(record.local, remote));
            let samples = record.slot.and_then(|slot| self.controller.as_ref()?.rtt_samples(slot));
            let backup = record.status == PathStatus::Backup;
            Some(PathView::new(id, spec, &self.conn.path_stats(id)?, samples, backup))
        };
        self.open_paths_now().into_iter().filter_map(view).collect()
    }

    fn carry_out(&self, action: SupervisorAction) {
        match action {
            SupervisorAction::Ping(id) => {
                tracing::trace!(path = %id, "keep-alive probe");
                if let Some(path) = self.conn.path(id) {
                    let _ = path.ping();
                }
            }
            SupervisorAction::Abandon(id) => self.fail_path(id),
            SupervisorAction::Reopen { failed, spec } => {
                let follower = self.clone_weak();
                tokio::spawn(follower.reopen(failed, spec));
            }
        }
    }

    /// Abandon a failed path with PATH_UNSTABLE_OR_POOR, RFC 10069's code for it (noq re-sends
    /// its in-flight data on the others when it discards it) and, on the client, keep trying
    /// to open it again.
    fn fail_path(&self, id: PathId) {
        self.set_failing(id, true);
        let code = TransportErrorCode::PATH_UNSTABLE_OR_POOR.into();
        let abandoned = self.conn.path(id).map_or(Ok(()), |path| path.close_with(code));
        if let Err(e) = abandoned {
            self.set_failing(id, false);
            tracing::warn!(path = %id, "path failed but cannot be abandoned: {e}");
            return;
        }
        self.announce_failure(id);
    }

    fn set_failing(&self, id: PathId, failing: bool) {
        if let Some(record) = self.ledger().get_mut(&id) {
            record.failing = failing;
        }
    }

    /// Tell the application that path `id` failed (here or at the peer); the supervisor has
    /// the client re-open it, over the same addresses and with the same status.
    fn announce_failure(&self, id: PathId) {
        let record = self.ledger().get(&id).cloned();
        let addresses = record.as_ref().map_or((None, None), |r| (r.local, r.remote));
        let open = self.open_paths_now();
        let mut supervisor = self.failover.supervisor();
        let backup = record.is_some_and(|r| r.status == PathStatus::Backup && !r.promoted);
        let event = supervisor.path_failed(Instant::now(), id, addresses, &open, backup);
        drop(supervisor);
        self.failover.publish(event);
        self.failover.wake.notify_one();
        self.promote_backups();
    }

    /// When no available path is left (open and not being abandoned), make the backups
    /// available, telling the peer (RFC 10069 PATH_STATUS_AVAILABLE), so that both ends send
    /// on them.
    fn promote_backups(&self) {
        let backups: Vec<PathId> = {
            let ledger = self.ledger();
            let mut open = ledger.iter().filter(|(_, r)| r.close.is_none() && !r.failing);
            if open.clone().any(|(_, r)| r.status == PathStatus::Available) {
                return;
            }
            open.by_ref().map(|(&id, _)| id).collect()
        };
        for id in backups {
            if self.set_path_status(id, PathStatus::Available).is_ok() {
                tracing::info!(path = %id, "no available path is left: the backup path takes over");
                if let Some(record) = self.ledger().get_mut(&id) {
                    record.promoted = true;
                }
            }
        }
    }

    /// Once an available path is established again, the backups that failover promoted go
    /// back to backup.
    fn demote_promoted(&self, established: PathId) {
        let promoted: Vec<PathId> = {
            let ledger = self.ledger();
            if ledger.get(&established).is_none_or(|r| r.status != PathStatus::Available) {
                return;
            }
            let open_promoted = ledger.iter().filter(|(_, r)| r.promoted && r.close.is_none());
            open_promoted.map(|(&id, _)| id).collect()
        };
        for id in promoted {
            if self.set_path_status(id, PathStatus::Backup).is_ok() {
                tracing::info!(path = %id, "an available path is back: path returns to backup");
            }
        }
    }

    /// Set path `id`'s status here, and tell the peer (a PATH_STATUS_BACKUP or
    /// PATH_STATUS_AVAILABLE frame): a backup carries data only while no available path can.
    /// A path the peer set to backup (or available) is set so here too.
    ///
    /// A backup path has no idle timeout here: the peer acknowledges its keep-alive PINGs on
    /// an available path (RFC 10069 lets it), so it may receive nothing for long, and its
    /// failure is looked for once it carries data again.
    pub fn set_path_status(
        &self,
        id: PathId,
        status: PathStatus,
    ) -> Result<(), SetPathStatusError> {
        let path = self.conn.path(id).ok_or(SetPathStatusError::ClosedPath)?;
        path.set_status(status)?;
        self.keep_idle_timeout(&path, status);
        if let Some(record) = self.ledger().get_mut(&id) {
            record.status = status;
            record.promoted = false;
        }
        let status = status_name(&status);
        self.failover.trace(
            "path_status",
            &serde_json::json!({ "path": path_number(id), "status": status }),
        );
        Ok(())
    }

    /// A backup path has no idle timeout, an available one the connection's.
    fn keep_idle_timeout(&self, path: &noq::Path, status: PathStatus) {
        let timeout = match status {
            PathStatus::Available => Some(self.failover.path_idle_timeout),
            PathStatus::Backup => None,
        };
        if let Err(e) = path.set_max_idle_timeout(timeout) {
            tracing::debug!(path = %path.id(), "cannot set the path's idle timeout: {e}");
        }
    }

    /// Failures and recoveries of this connection's paths, as they happen.
    pub fn failover_events(&self) -> tokio::sync::broadcast::Receiver<FailoverEvent> {
        self.failover.events.subscribe()
    }

    /// A handle that does not keep the connection alive.
    fn clone_weak(&self) -> WeakConnection {
        WeakConnection {
            conn: self.conn.weak_handle(),
            controller: self.controller.clone(),
            paths: Arc::downgrade(&self.paths),
            controller_name: self.controller_name,
            failover: self.failover.clone(),
        }
    }

    fn ledger(&self) -> MutexGuard<'_, BTreeMap<PathId, PathRecord>> {
        self.paths.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn register(&self, id: PathId) {
        let path = self.conn.path(id);
        let network = path.as_ref().and_then(|p| p.network_path().ok());
        let status = path.as_ref().and_then(|p| p.status().ok()).unwrap_or_default();
        if let (Some(path), PathStatus::Backup) = (&path, status) {
            self.keep_idle_timeout(path, status);
        }
        let slot = self.conn.congestion_state(id).and_then(slot_of);
        let mut ledger = self.ledger();
        let record = ledger.entry(id).or_insert(PathRecord {
            local: None,
            remote: None,
            slot: None,
            closed_stats: None,
            close: None,
            failing: false,
            status: PathStatus::Available,
            promoted: false,
            opened: Instant::now(),
        });
        if let Some(network) = network {
            record.local = network.local_ip();
            record.remote = Some(network.remote());
        }
        record.slot = record.slot.or(slot);
        record.status = status;
        tracing::debug!(path = %id, local = ?record.local, remote = ?record.remote, "path established");
    }

    fn on_path_event(&self, event: PathEvent) {
        match event {
            PathEvent::Established { id, .. } => {
                self.register(id);
                self.demote_promoted(id);
            }
            PathEvent::Abandoned { id, reason, .. } => self.on_abandoned(id, &reason),
            PathEvent::Discarded { id, path_stats, .. } => {
                if let Some(record) = self.ledger().get_mut(&id) {
                    record.closed_stats = Some(*path_stats);
                }
            }
            PathEvent::RemoteStatus { id, status, .. } => {
                tracing::debug!(path = %id, ?status, "the peer set the path's status");
                if let Err(e) = self.set_path_status(id, status) {
                    tracing::debug!(path = %id, "cannot follow the peer's path status: {e}");
                }
            }
            _ => {}
        }
    }

    /// Path `id` was abandoned, by this end or the peer: record why (a peer's PATH_ABANDON by
    /// its error code, see [`PathClose`]), and act on it: a failure at the peer is announced
    /// (the client then re-opens the path), a path the peer cannot keep
    /// (PATH_RESOURCE_LIMIT_REACHED) or closed for another reason is left closed, and the
    /// backups take over if no available path is left.
    fn on_abandoned(&self, id: PathId, reason: &PathAbandonReason) {
        tracing::info!(path = %id, ?reason, "path abandoned");
        let connection_open = self.conn.close_reason().is_none();
        let closed = {
            let mut ledger = self.ledger();
            ledger.get_mut(&id).map(|r| {
                let close = if connection_open {
                    PathClose::of_abandon(reason, r.failing)
                } else {
                    PathClose::ConnectionEnd
                };
                (*r.close.get_or_insert(close), r.slot)
            })
        };
        // A path never established here (an open the peer gave up on, e.g. a re-open over a
        // link still dark) has no record: nothing ran on it, and without its addresses it
        // could not be re-opened.
        let Some((close, slot)) = closed else { return };
        self.failover
            .trace("path_closed", &serde_json::json!({ "path": path_number(id), "reason": close }));
        if let (Some(slot), Some(controller)) = (slot, &self.controller) {
            controller.remove_path(slot);
        }
        if !connection_open {
            return;
        }
        let by_peer = matches!(reason, PathAbandonReason::RemoteAbandoned { .. });
        match close {
            PathClose::Failed if by_peer => self.announce_failure(id),
            PathClose::ResourceLimit => {
                tracing::warn!(path = %id, "the peer cannot keep the path (resource limit): not re-opening it");
                self.promote_backups();
            }
            _ => self.promote_backups(),
        }
    }

    /// The peer's address on the initial path.
    pub fn remote(&self) -> Option<SocketAddr> {
        self.ledger().get(&PathId::ZERO).and_then(|r| r.remote)
    }

    /// The name in the certificate the peer proved itself with ([`crate::tls::certificate_name`]):
    /// on a server that requires mutual TLS, the client's; `None` when the peer showed none.
    pub fn peer_certificate_name(&self) -> Option<String> {
        let identity = self.conn.peer_identity()?;
        let chain = identity.downcast_ref::<Vec<rustls::pki_types::CertificateDer<'static>>>()?;
        crate::tls::certificate_name(chain.first()?)
    }

    /// The underlying noq connection, for streams and datagrams.
    pub fn connection(&self) -> &noq::Connection {
        &self.conn
    }

    /// Open one more path. Retries briefly while the peer has not yet issued connection ids for
    /// it (noq refuses new paths for a few ms after the handshake).
    pub async fn open_path(&self, spec: PathSpec) -> Result<PathId, PathOpenError> {
        let fail = |reason: String| PathOpenError { spec, reason };
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let opening =
                self.conn.open_path(FourTuple::new(spec.remote, spec.local), spec.status());
            match tokio::time::timeout(Duration::from_secs(5), opening).await {
                Ok(Ok(path)) => {
                    self.register(path.id());
                    if let Some(record) = self.ledger().get_mut(&path.id()) {
                        record.local = record.local.or(spec.local);
                        record.remote = record.remote.or(Some(spec.remote));
                    }
                    return Ok(path.id());
                }
                Ok(Err(PathError::RemoteCidsExhausted)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(Err(e)) => return Err(fail(e.to_string())),
                Err(_) => return Err(fail("no answer on the path within 5 s".into())),
            }
        }
    }

    /// Open several paths at once; returns the failures (the connection goes on without them).
    pub async fn open_paths(&self, specs: &[PathSpec]) -> Vec<PathOpenError> {
        let results = join_all(specs.iter().map(|&spec| self.open_path(spec))).await;
        results.into_iter().filter_map(Result::err).collect()
    }

    /// Close a path; its data moves to the others.
    pub fn close_path(&self, id: PathId) -> Result<(), noq::ClosePathError> {
        match self.conn.path(id) {
            Some(path) => path.close(),
            None => Ok(()),
        }
    }

    /// The ids of paths that are open now.
    pub fn open_paths_now(&self) -> Vec<PathId> {
        self.ledger().iter().filter(|(_, r)| r.close.is_none()).map(|(&id, _)| id).collect()
    }

    /// The coupled controller's state (`None` for the stack's own Cubic).
    pub fn controller_snapshot(&self) -> Option<ConnectionSnapshot> {
        self.controller.as_ref().map(|c| c.snapshot())
    }

    /// Statistics of every path the connection has had, and of the connection. Also valid
    /// after the connection closed: it then tells what each path carried in all.
    ///
    /// ```
    /// fn print_paths(conn: &mpquic::MultipathConnection) {
    ///     let report = conn.report();
    ///     for path in &report.paths {
    ///         let state = if path.active { "carries data" } else { "kept from data" };
    ///         println!(
    ///             "path {}: {:.0}% of the bytes, RTT {:.2} ms, {} CE marks, {state}",
    ///             path.id,
    ///             path.share * 100.0,
    ///             path.rtt_smoothed_ms,
    ///             path.ce_marked.unwrap_or(0),
    ///         );
    ///     }
    ///     // All of it, with the controller's state, as JSON:
    ///     println!("{}", serde_json::to_string(&report).unwrap());
    /// }
    /// ```
    pub fn report(&self) -> ConnectionReport {
        let snapshot = self.controller_snapshot();
        let ledger = self.ledger().clone();
        let established = ledger.get(&PathId::ZERO).map(|r| r.opened);
        // A path still open when the connection closed ended with it (noq need not abandon
        // each path of a closed connection).
        let ended = self.conn.close_reason().is_some().then_some(PathClose::ConnectionEnd);
        let mut paths: Vec<PathReport> = ledger
            .iter()
            .map(|(&id, record)| {
                let stats = record.closed_stats.or_else(|| self.conn.path_stats(id));
                let cc = record.slot.and_then(|slot| snapshot.as_ref()?.path(slot).cloned());
                let measured =
                    record.slot.and_then(|slot| self.controller.as_ref()?.slot_report(slot));
                let closed = record.close.or(ended);
                let (local, remote, status) = (record.local, record.remote, record.status);
                let ends = PathEnds { local, remote, status, closed };
                let mut path =
                    PathReport::new(id, ends, stats.as_ref(), cc.as_ref(), measured.as_ref());
                path.opened_ms = established
                    .map(|t0| record.opened.saturating_duration_since(t0).as_secs_f64() * 1000.0);
                path
            })
            .collect();
        PathReport::set_shares(&mut paths);
        let failovers = self.failover.history.lock().unwrap_or_else(|p| p.into_inner()).clone();
        ConnectionReport {
            controller: self.controller_name,
            // Every controller of ours gets the exact CE counts; noq's own hears only that a
            // frame raised the count.
            exact_ecn: self.controller.is_some(),
            paths,
            controller_state: snapshot,
            failovers,
        }
    }
}

struct WeakConnection {
    conn: noq::WeakConnectionHandle,
    controller: Option<Arc<SharedController>>,
    paths: std::sync::Weak<Mutex<BTreeMap<PathId, PathRecord>>>,
    controller_name: &'static str,
    failover: Arc<Failover>,
}

impl WeakConnection {
    fn upgrade(&self) -> Option<MultipathConnection> {
        Some(MultipathConnection {
            conn: self.conn.upgrade()?,
            controller: self.controller.clone(),
            paths: self.paths.upgrade()?,
            controller_name: self.controller_name,
            failover: self.failover.clone(),
        })
    }

    /// Try once to open a path over `spec` in place of the failed path `failed` (a failed
    /// path comes back as a new one) and tell the supervisor how it went.
    async fn reopen(self, failed: PathId, spec: PathSpec) {
        let Some(this) = self.upgrade() else { return };
        let opened = this.open_path(spec).await;
        if let Err(e) = &opened {
            tracing::debug!("{e}; retrying");
        }
        let outcome =
            this.failover.supervisor().reopen_finished(Instant::now(), failed, opened.ok());
        if let Some(event) = outcome {
            this.failover.publish(event);
        }
        this.failover.wake.notify_one();
    }
}

/// One path's statistics: what [`MultipathConnection::report`] tells, and what the simulator
/// reports for each path of a flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathReport {
    /// noq's path id.
    pub id: u32,
    /// Local address, when known.
    pub local: Option<IpAddr>,
    /// Remote address.
    pub remote: Option<SocketAddr>,
    /// Whether the path is still open.
    pub open: bool,
    /// Its status (RFC 10069): `available`, or `backup` (carries data only while no available
    /// path can).
    #[serde(serialize_with = "serialize_status")]
    pub status: PathStatus,
    /// Why it was closed, or eliminated by the controller (which leaves it open); `None` for
    /// a path that is open and may carry data. See [`PathClose::reported`].
    pub close_reason: Option<PathClose>,
    /// QUIC bytes sent (ack-eliciting packets).
    pub bytes_sent: u64,
    /// UDP payload bytes received on the path (what a receiver's interval lines show).
    pub bytes_received: u64,
    /// This path's share of all bytes sent, in [0, 1].
    pub share: f64,
    /// This path's share of all bytes received, in [0, 1]: where a receiver's data arrived
    /// (`share` is mostly its ACKs).
    pub share_received: f64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Smoothed RTT, ms.
    pub rtt_smoothed_ms: f64,
    /// Minimum, median and 99th percentile of the RTT samples, ms (`None` without samples).
    pub rtt_min_ms: Option<f64>,
    /// Median RTT sample, ms.
    pub rtt_p50_ms: Option<f64>,
    /// 99th percentile RTT sample, ms.
    pub rtt_p99_ms: Option<f64>,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// ACK frames that raised the CE count (`None` under the stack's own Cubic, which does not
    /// tell CE from loss).
    pub ce_events: Option<u64>,
    /// CE-marked packets the controller counted, from the peer's CE counts in the ACK frames.
    pub ce_marked: Option<u64>,
    /// Whether `ce_marked` is exact (it is for every controller of ours).
    pub ce_exact: bool,
    /// Packets the peer received ECT(0)-marked and ECT(1)-marked (not CE), from the ACK frames'
    /// ECN counts: which codepoint arrived, seen from the other end (`None` under the stack's
    /// own Cubic).
    pub ect_packets: Option<[u64; 2]>,
    /// Whether the controller lets the path carry new data now (or did until the connection
    /// ended, for a path that ended with it).
    pub active: bool,
    /// Time the controller kept the path from new data (AMP suppression, MPTCP-D elimination).
    pub inactive_ms: f64,
    /// When the path was established, in ms after the connection was (path 0: 0; a path
    /// opened later, or re-opened after a failure, later). `None` where not recorded (the
    /// simulator's reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opened_ms: Option<f64>,
}

/// Where a path runs, its status, and whether it is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathEnds {
    /// Local address, when known.
    pub local: Option<IpAddr>,
    /// Remote address, when known.
    pub remote: Option<SocketAddr>,
    /// Its status here (last, for a closed path).
    pub status: PathStatus,
    /// Why the path was closed; `None` while it is open.
    pub closed: Option<PathClose>,
}

/// A path status as reports and qlog name it.
fn status_name(status: &PathStatus) -> &'static str {
    match status {
        PathStatus::Available => "available",
        PathStatus::Backup => "backup",
    }
}

fn serialize_status<S: serde::Serializer>(status: &PathStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(status_name(status))
}

impl PathReport {
    /// A path's report from the stack's statistics for it and, under a coupled controller of
    /// ours, the controller's snapshot of its slot and the adapter's measurements
    /// (`SharedController::slot_report`). `share` is left at 0: see `PathReport::set_shares`.
    pub(crate) fn new(
        id: PathId,
        ends: PathEnds,
        stats: Option<&PathStats>,
        cc: Option<&mpquic_cc::PathSnapshot>,
        measured: Option<&SlotReport>,
    ) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        let rtt_us = measured.map(|m| &m.rtt_us).filter(|h| !h.is_empty());
        PathReport {
            id: path_number(id),
            local: ends.local,
            remote: ends.remote,
            open: ends.closed.is_none(),
            status: ends.status,
            close_reason: PathClose::reported(ends.closed, measured.is_some_and(|m| m.eliminated)),
            bytes_sent: stats.map_or(0, |s| s.sent_bytes),
            bytes_received: stats.map_or(0, |s| s.udp_rx.bytes),
            share: 0.0,
            share_received: 0.0,
            packets_sent: stats.map_or(0, |s| s.sent_packets),
            lost_packets: stats.map_or(0, |s| s.lost_packets),
            rtt_smoothed_ms: stats.map_or(0.0, |s| s.rtt.as_secs_f64() * 1000.0),
            rtt_min_ms: rtt_us.map(|h| ms(h.min())),
            rtt_p50_ms: rtt_us.map(|h| ms(h.value_at_quantile(0.5))),
            rtt_p99_ms: rtt_us.map(|h| ms(h.value_at_quantile(0.99))),
            cwnd: cc.map_or_else(|| stats.map_or(0, |s| s.cwnd), |c| c.window),
            ce_events: cc.map(|c| c.ce_events),
            ce_marked: cc.map(|c| c.ce_marked),
            ce_exact: cc.is_some_and(|c| c.ce_exact),
            ect_packets: measured.map(|m| m.ect_packets),
            // A report taken just after the connection closed (the peer may close first) still
            // says which paths were carrying data at the end.
            active: cc.is_none_or(|c| c.active)
                && ends.closed.is_none_or(|c| c == PathClose::ConnectionEnd),
            inactive_ms: measured.map_or(0.0, |m| m.inactive.as_secs_f64() * 1000.0),
            opened_ms: None,
        }
    }

    /// Set each path's `share` of the bytes all of them sent, and `share_received` of the
    /// bytes all of them received.
    pub(crate) fn set_shares(paths: &mut [PathReport]) {
        let sent: u64 = paths.iter().map(|p| p.bytes_sent).sum();
        let received: u64 = paths.iter().map(|p| p.bytes_received).sum();
        let part = |n: u64, total: u64| if total == 0 { 0.0 } else { n as f64 / total as f64 };
        for path in paths {
            path.share = part(path.bytes_sent, sent);
            path.share_received = part(path.bytes_received, received);
        }
    }
}

/// noq's path id as a number (noq exposes it only through `Display`).
pub(crate) fn path_number(id: PathId) -> u32 {
    id.to_string().parse().unwrap_or(u32::MAX)
}

/// A connection's statistics: per path, and the controller's state.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionReport {
    /// The congestion controller's name.
    pub controller: &'static str,
    /// Whether the connection ran with exact CE counts.
    pub exact_ecn: bool,
    /// Every path the connection had, by id.
    pub paths: Vec<PathReport>,
    /// The coupled controller's state, if it is one of ours.
    pub controller_state: Option<ConnectionSnapshot>,
    /// Paths that failed and came back, in order.
    pub failovers: Vec<FailoverEvent>,
}
