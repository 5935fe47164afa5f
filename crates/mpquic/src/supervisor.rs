//! What a connection decides about its paths over time, without I/O: which silent path to
//! ping, which failed path to abandon, when to re-open it.
//!
//! A [`PathSupervisor`] is fed views of the open paths' counters and the current time; it
//! answers with [`SupervisorAction`]s and, as the caller reports what came of them,
//! [`FailoverEvent`]s. [`MultipathConnection`](crate::MultipathConnection) runs one on tokio;
//! the simulator runs the same one in virtual time.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use noq::{PathId, PathStats};

use crate::connection::{path_number, PathSpec};
use crate::failover::{FailoverEvent, FailureDetector, PathFailure, PathSample};

/// How often the paths' counters are read for failure detection: the detection's granularity.
pub const FAILURE_POLL: Duration = Duration::from_millis(25);

/// One open path at one instant, as the supervisor needs to see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathView {
    /// noq's path id.
    pub id: PathId,
    /// Local address, when known.
    pub local: Option<IpAddr>,
    /// Remote address, when known.
    pub remote: Option<SocketAddr>,
    /// Bytes of ack-eliciting packets sent on the path.
    pub sent_bytes: u64,
    /// Packets sent on the path.
    pub sent_packets: u64,
    /// Packets the stack declared lost on the path.
    pub lost_packets: u64,
    /// Datagrams sent on the path, of any kind.
    pub sent_datagrams: u64,
    /// Datagrams received on the path.
    pub received: u64,
    /// Answers to the path's packets: ACK frames received on the path (PATH_ACK and ACK),
    /// plus the ACK frames for its packets that arrived on other paths where the controller
    /// counts them (its RTT samples).
    pub acks: u64,
    /// The path's smoothed RTT.
    pub srtt: Duration,
    /// Whether the path is a backup: it sends keep-alive PINGs only, whose ACKs may ride an
    /// available path (RFC 10069 lets the peer), so its silence says nothing: it is not judged
    /// while it is a backup, and counts as fine. A path the controller keeps from data (AMP's
    /// suppression) is judged: its peer acknowledges its PINGs on it (noq-proto D4), and data
    /// it had in flight would otherwise wait for the idle timeout.
    pub backup: bool,
}

impl PathView {
    /// The view of path `id` from noq's statistics of it and, under a controller of ours, the
    /// RTT samples its packets gave (`SharedController::rtt_samples`).
    pub fn new(
        id: PathId,
        spec: Option<PathSpec>,
        stats: &PathStats,
        rtt_samples: Option<u64>,
        backup: bool,
    ) -> Self {
        PathView {
            id,
            local: spec.and_then(|s| s.local),
            remote: spec.map(|s| s.remote),
            sent_bytes: stats.sent_bytes,
            sent_packets: stats.sent_packets,
            lost_packets: stats.lost_packets,
            sent_datagrams: stats.udp_tx.datagrams,
            received: stats.udp_rx.datagrams,
            acks: stats.frame_rx.acks + stats.frame_rx.path_acks + rtt_samples.unwrap_or(0),
            srtt: stats.rtt,
            backup,
        }
    }
}

/// What the supervisor asks its connection to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SupervisorAction {
    /// Send a PING on the path: it sent nothing for a keep-alive interval, and the peer
    /// abandons a path that receives nothing for its idle timeout.
    Ping(PathId),
    /// Abandon the path: it failed. Report it with [`PathSupervisor::path_failed`] once done.
    Abandon(PathId),
    /// Try to open a path over `spec` again, in place of the failed path `failed`. Report how
    /// it went with [`PathSupervisor::reopen_finished`].
    Reopen {
        /// The failed path.
        failed: PathId,
        /// Its addresses.
        spec: PathSpec,
    },
}

/// A failed path the client opens again.
#[derive(Debug, Clone, Copy)]
struct Reopen {
    spec: PathSpec,
    /// When to try next; `None` while an attempt is under way.
    due: Option<Instant>,
    /// Attempts that came to nothing so far (see [`PathFailure::backoff`]).
    level: u32,
}

/// A re-opened path that has not yet worked for [`PathFailure::settle`].
#[derive(Debug, Clone, Copy)]
struct Returned {
    /// The back-off level it came back at.
    level: u32,
    at: Instant,
}

/// One connection's path keep-alive, failure detection and re-opening, as a state machine.
#[derive(Debug)]
pub struct PathSupervisor {
    rule: Option<PathFailure>,
    detector: Option<FailureDetector>,
    keep_alive: Duration,
    client: bool,
    started: Instant,
    next_detection: Instant,
    next_keep_alive: Instant,
    /// Per path, the datagrams it had sent at the last keep-alive round.
    sent_before: BTreeMap<PathId, u64>,
    reopening: BTreeMap<PathId, Reopen>,
    returned: BTreeMap<PathId, Returned>,
}

impl PathSupervisor {
    /// A supervisor for a connection set up at `now`: failed paths are found by `rule` (`None`:
    /// not looked for), paths silent for `keep_alive` are pinged, and the `client` re-opens
    /// failed paths (a server cannot open paths).
    pub fn new(
        rule: Option<PathFailure>,
        keep_alive: Duration,
        client: bool,
        now: Instant,
    ) -> Self {
        PathSupervisor {
            rule,
            detector: rule.map(FailureDetector::new),
            keep_alive,
            client,
            started: now,
            next_detection: now,
            next_keep_alive: now + keep_alive,
            sent_before: BTreeMap::new(),
            reopening: BTreeMap::new(),
            returned: BTreeMap::new(),
        }
    }

    /// When the supervisor next wants to be polled.
    pub fn poll_timeout(&self) -> Instant {
        let detection = self.detector.as_ref().map(|_| self.next_detection);
        let reopen = self.reopening.values().filter_map(|r| r.due);
        reopen.chain(detection).fold(self.next_keep_alive, Instant::min)
    }

    /// Look at the open paths at `now` and say what to do about them.
    pub fn poll(&mut self, now: Instant, paths: &[PathView]) -> Vec<SupervisorAction> {
        let mut actions = vec![];
        if now >= self.next_keep_alive {
            self.next_keep_alive = now + self.keep_alive;
            actions.extend(self.silent_paths(paths).map(SupervisorAction::Ping));
        }
        if let Some(detector) = self.detector.as_mut().filter(|_| now >= self.next_detection) {
            self.next_detection = now + FAILURE_POLL;
            // A backup sends only PINGs, whose ACKs may ride another path: it is not judged,
            // and it is watched afresh once it is available again.
            let samples: Vec<(PathId, PathSample)> = paths
                .iter()
                .filter(|p| !p.backup)
                .map(|p| {
                    let sample = PathSample {
                        sent_bytes: p.sent_bytes,
                        sent_packets: p.sent_packets,
                        lost_packets: p.lost_packets,
                        received: p.received,
                        acks: p.acks,
                        srtt: p.srtt,
                    };
                    (p.id, sample)
                })
                .collect();
            let standby: Vec<PathId> = paths.iter().filter(|p| p.backup).map(|p| p.id).collect();
            let failed = detector.observe(now, &samples, &standby);
            actions.extend(failed.into_iter().map(SupervisorAction::Abandon));
        }
        for (&failed, reopen) in &mut self.reopening {
            if reopen.due.is_some_and(|due| now >= due) {
                reopen.due = None;
                actions.push(SupervisorAction::Reopen { failed, spec: reopen.spec });
            }
        }
        let settle = self.rule().settle;
        self.returned.retain(|_, r| now.saturating_duration_since(r.at) < settle);
        actions
    }

    /// The paths that sent nothing since the last keep-alive round.
    ///
    /// noq abandons a path when nothing is received on it for the path idle timeout, and a
    /// path can be silent in one direction while in use: the sender keeps paths from new data
    /// (AMP's suppressed paths, a scheduler's unused ones) although they stay open, and noq's
    /// own per-path keep-alive does not help, as it restarts whenever a packet arrives on the
    /// path. So each end pings its silent paths (a PING goes out on a path the controller keeps
    /// from data: that only takes away its rank, not its window).
    fn silent_paths<'a>(&'a mut self, paths: &'a [PathView]) -> impl Iterator<Item = PathId> + 'a {
        self.sent_before.retain(|id, _| paths.iter().any(|p| p.id == *id));
        paths.iter().filter_map(|p| {
            let silent = self.sent_before.get(&p.id) == Some(&p.sent_datagrams);
            // The probe's own datagram does not make the path busy: count it in, so that a
            // path that sends nothing else is probed at every interval, not every other.
            self.sent_before.insert(p.id, p.sent_datagrams + u64::from(silent));
            silent.then_some(p.id)
        })
    }

    /// Path `id` over `spec` failed at `now` (this end abandoned it, or the peer did with
    /// PATH_UNSTABLE_OR_POOR) and the connection goes on over `open`: the event to tell the
    /// application. A `backup` path is re-opened as a backup. The client re-opens the path after the rule's back-off: its first retry
    /// interval, or longer if the path had failed and come back only recently.
    pub fn path_failed(
        &mut self,
        now: Instant,
        id: PathId,
        spec: (Option<IpAddr>, Option<SocketAddr>),
        open: &[PathId],
        backup: bool,
    ) -> FailoverEvent {
        let (local, remote) = spec;
        let rule = self.rule();
        let level = match self.returned.remove(&id) {
            Some(r) if now.saturating_duration_since(r.at) < rule.settle => r.level + 1,
            _ => 0,
        };
        let mut retry_in_s = None;
        if let (Some(remote), true) = (remote, self.client) {
            let wait = rule.backoff(level);
            let due = Some(now + wait);
            let spec = PathSpec { local, remote, backup };
            self.reopening.insert(id, Reopen { spec, due, level });
            retry_in_s = Some(wait.as_secs_f64());
        }
        FailoverEvent::PathFailed {
            path: path_number(id),
            local,
            remote,
            at_s: self.since_start(now),
            continuing_on: open.iter().filter(|&&p| p != id).map(|&p| path_number(p)).collect(),
            retry_in_s,
        }
    }

    /// What came of re-opening the failed path `failed`: the new path that answers, or `None`
    /// (tried again after a back-off twice as long, up to the rule's cap). Returns the event to
    /// tell the application.
    pub fn reopen_finished(
        &mut self,
        now: Instant,
        failed: PathId,
        opened: Option<PathId>,
    ) -> Option<FailoverEvent> {
        let rule = self.rule();
        match opened {
            None => {
                if let Some(reopen) = self.reopening.get_mut(&failed) {
                    reopen.level = reopen.level.saturating_add(1);
                    reopen.due = Some(now + rule.backoff(reopen.level));
                }
                None
            }
            Some(path) => {
                let Reopen { spec, level, .. } = self.reopening.remove(&failed)?;
                self.returned.insert(path, Returned { level, at: now });
                Some(FailoverEvent::PathRecovered {
                    path: path_number(path),
                    failed_path: path_number(failed),
                    local: spec.local,
                    remote: Some(spec.remote),
                    at_s: self.since_start(now),
                })
            }
        }
    }

    fn rule(&self) -> PathFailure {
        self.rule.unwrap_or_default()
    }

    fn since_start(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.started).as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn view(id: u32, sent: u64, received: u64) -> PathView {
        PathView {
            id: PathId::from(id),
            local: None,
            remote: Some("10.0.0.2:4433".parse().unwrap()),
            sent_bytes: sent,
            sent_packets: sent,
            lost_packets: 0,
            sent_datagrams: sent,
            received,
            acks: received,
            srtt: 10 * MS,
            backup: false,
        }
    }

    #[test]
    fn a_silent_path_is_pinged_at_every_keep_alive_round() {
        let t0 = Instant::now();
        let mut supervisor = PathSupervisor::new(None, 100 * MS, true, t0);
        assert_eq!(supervisor.poll_timeout(), t0 + 100 * MS);
        let paths = [view(0, 5, 5), view(1, 5, 5)];
        assert!(supervisor.poll(t0 + 100 * MS, &paths).is_empty(), "first round only counts");
        let busy = [view(0, 9, 5), view(1, 5, 5)];
        assert_eq!(
            supervisor.poll(t0 + 200 * MS, &busy),
            [SupervisorAction::Ping(PathId::from(1u32))]
        );
        // Path 1 sent only the PING since: still silent.
        let pinged = [view(0, 12, 5), view(1, 6, 5)];
        assert_eq!(
            supervisor.poll(t0 + 300 * MS, &pinged),
            [SupervisorAction::Ping(PathId::from(1u32))]
        );
    }

    #[test]
    fn a_failed_path_is_abandoned_then_reopened_until_it_answers() {
        let t0 = Instant::now();
        let rule = PathFailure::default();
        let mut supervisor = PathSupervisor::new(Some(rule), Duration::from_secs(10), true, t0);
        let mut abandoned = None;
        for step in 0..20u32 {
            let now = t0 + step * FAILURE_POLL;
            assert!(supervisor.poll_timeout() <= now);
            let paths = [view(0, step.into(), 0), view(1, step.into(), step.into())];
            if let Some(action) = supervisor.poll(now, &paths).pop() {
                abandoned = Some((action, now));
                break;
            }
        }
        let (action, failed_at) = abandoned.expect("path 0 fails");
        assert_eq!(action, SupervisorAction::Abandon(PathId::ZERO));
        let spec = (None, view(0, 0, 0).remote);
        let event =
            supervisor.path_failed(failed_at, PathId::ZERO, spec, &[PathId::from(1u32)], false);
        assert!(
            matches!(event, FailoverEvent::PathFailed { path: 0, ref continuing_on, .. } if continuing_on == &[1])
        );
        let due = failed_at + rule.retry;
        assert_eq!(supervisor.poll_timeout(), failed_at + FAILURE_POLL);
        assert_eq!(reopens(&mut supervisor, due - MS), 0);
        assert_eq!(reopens(&mut supervisor, due), 1);
        assert_eq!(reopens(&mut supervisor, due + rule.retry), 0, "an attempt is under way");
        // The attempt gets no answer: the next one waits twice as long.
        let tried = due + rule.retry;
        assert_eq!(supervisor.reopen_finished(tried, PathId::ZERO, None), None);
        assert_eq!(reopens(&mut supervisor, tried + rule.backoff(1) - MS), 0);
        assert_eq!(reopens(&mut supervisor, tried + rule.backoff(1)), 1);
        let back = tried + rule.backoff(1);
        let recovered = supervisor.reopen_finished(back, PathId::ZERO, Some(PathId::from(2u32)));
        assert!(matches!(
            recovered,
            Some(FailoverEvent::PathRecovered { path: 2, failed_path: 0, .. })
        ));
        assert_eq!(
            reopens(&mut supervisor, back + 4 * rule.retry),
            0,
            "recovered: no more attempts"
        );
    }

    /// Actions asking to re-open a path, at `now`, with path 1 alone open.
    fn reopens(supervisor: &mut PathSupervisor, now: Instant) -> usize {
        supervisor
            .poll(now, &[view(1, 0, 0)])
            .into_iter()
            .filter(|a| matches!(a, SupervisorAction::Reopen { .. }))
            .count()
    }

    /// When the client next re-opens path `id`, failed at `now`, in seconds from `now`.
    fn retry_after_failure(supervisor: &mut PathSupervisor, now: Instant, id: u32) -> f64 {
        let spec = (None, view(0, 0, 0).remote);
        let event =
            supervisor.path_failed(now, PathId::from(id), spec, &[PathId::from(9u32)], false);
        let FailoverEvent::PathFailed { retry_in_s: Some(retry), .. } = event else {
            panic!("the client re-opens a failed path: {event:?}")
        };
        retry
    }

    #[test]
    fn a_path_that_fails_again_soon_after_it_came_back_waits_longer_each_time() {
        let t0 = Instant::now();
        let rule = PathFailure::default();
        let mut supervisor = PathSupervisor::new(Some(rule), Duration::from_secs(10), true, t0);
        let mut now = t0;
        let mut waits = vec![];
        for id in 0..8u32 {
            let wait = retry_after_failure(&mut supervisor, now, id);
            waits.push(wait);
            now += Duration::from_secs_f64(wait);
            supervisor.poll(now, &[]);
            // It answers again, and fails 2 s later (a gray path's flapping).
            supervisor.reopen_finished(now, PathId::from(id), Some(PathId::from(id + 1)));
            now += Duration::from_secs(2);
        }
        assert_eq!(waits, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]);
        // One that worked for longer than `settle` starts afresh.
        now += rule.settle;
        supervisor.poll(now, &[]);
        assert_eq!(retry_after_failure(&mut supervisor, now, 8), 0.5);
    }

    #[test]
    fn a_server_does_not_reopen() {
        let t0 = Instant::now();
        let mut supervisor = PathSupervisor::new(Some(PathFailure::default()), 10 * MS, false, t0);
        let _ = supervisor.path_failed(t0, PathId::ZERO, (None, view(0, 0, 0).remote), &[], false);
        assert!(supervisor.poll(t0 + Duration::from_secs(5), &[]).is_empty());
    }
}
