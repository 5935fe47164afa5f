//! Path failure detection: which path has stopped answering while another still does.
//!
//! A path *fails* when ack-eliciting data it sent has gone unanswered (no ACK frame came back
//! on it) for [`PathFailure::ptos`] of its own probe timeouts, and at least
//! [`PathFailure::min`], while another path is fine: heard from within that time, or with
//! nothing of its own unanswered. The rule only reads noq's per-path counters, so it needs no
//! hook in the stack; it relies on the peer acknowledging a path's packets on that path (the
//! PATH_ACK placement patch of `third_party/noq-proto`, and D4 for paths the controller keeps
//! from data), as otherwise a live path's answers would arrive on another.
//!
//! An answer is an ACK frame, not any datagram: when only the way out of a path fails, the
//! peer's own probes still arrive on it, but carry no acknowledgement. And another path that
//! has nothing unanswered counts as fine although silent: a sender whose lost data is stuck on
//! the failed path is soon blocked by flow control and sends nothing on the others.
//!
//! The connection then abandons the failed path: noq declares its in-flight packets lost at
//! the abandon (`lose_in_flight_on_abandon`, noq-proto patch 4, set when failover is on) and
//! re-sends their data on the live paths, and the client keeps trying
//! to open a new path over the same addresses, which succeeds once the path answers again.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use noq::PathId;
use serde::Serialize;

/// The rule that declares a path failed (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PathFailure {
    /// Probe timeouts of the path's own that its data may go unanswered.
    pub ptos: u32,
    /// The shortest silence that counts as a failure, whatever the path's RTT.
    pub min: Duration,
    /// How often the client tries to re-open a failed path.
    pub retry: Duration,
}

impl Default for PathFailure {
    fn default() -> Self {
        PathFailure { ptos: 3, min: Duration::from_millis(200), retry: Duration::from_millis(500) }
    }
}

impl PathFailure {
    /// How long a path with smoothed RTT `srtt` may leave data unanswered.
    ///
    /// The probe timeout is RFC 9002's with the RTT variance taken as half the smoothed RTT
    /// (as at its first sample) and noq's default maximum ACK delay of 25 ms, since noq's
    /// statistics give the smoothed RTT alone.
    pub fn deadline(&self, srtt: Duration) -> Duration {
        let pto = srtt * 3 + Duration::from_millis(25);
        (pto * self.ptos).max(self.min)
    }
}

/// One path's counters at one instant, as read from noq's path statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PathSample {
    /// Bytes of ack-eliciting packets sent on the path.
    pub sent_bytes: u64,
    /// Datagrams received on the path.
    pub received: u64,
    /// ACK frames received on the path.
    pub acks: u64,
    /// The path's smoothed RTT.
    pub srtt: Duration,
}

/// What the detector remembers of one path.
#[derive(Debug, Clone, Copy)]
struct Watch {
    last: PathSample,
    /// When a datagram last arrived on the path (or watching began).
    heard: Instant,
    /// When the path first sent data that nothing has answered since.
    unanswered_since: Option<Instant>,
}

/// Applies a [`PathFailure`] rule to successive samples of a connection's open paths.
#[derive(Debug)]
pub(crate) struct FailureDetector {
    rule: PathFailure,
    paths: BTreeMap<PathId, Watch>,
}

impl FailureDetector {
    pub(crate) fn new(rule: PathFailure) -> Self {
        FailureDetector { rule, paths: BTreeMap::new() }
    }

    /// Take in the open paths' counters at `now`; returns the paths that failed just now.
    ///
    /// Paths missing from `samples` are forgotten; a failed path is forgotten too, so a path
    /// re-opened later starts afresh.
    pub(crate) fn observe(
        &mut self,
        now: Instant,
        samples: &[(PathId, PathSample)],
    ) -> Vec<PathId> {
        self.paths.retain(|id, _| samples.iter().any(|(open, _)| open == id));
        for &(id, sample) in samples {
            let watch = self.paths.entry(id).or_insert(Watch {
                last: sample,
                heard: now,
                unanswered_since: None,
            });
            if sample.received != watch.last.received {
                watch.heard = now;
            }
            if sample.acks != watch.last.acks {
                watch.unanswered_since = None;
            } else if sample.sent_bytes != watch.last.sent_bytes {
                watch.unanswered_since.get_or_insert(now);
            }
            watch.last = sample;
        }
        let failed: Vec<PathId> = self
            .paths
            .iter()
            .filter(|&(&id, watch)| {
                let Some(since) = watch.unanswered_since else { return false };
                let deadline = self.rule.deadline(watch.last.srtt);
                now.saturating_duration_since(since) >= deadline
                    && self.other_fine(id, now, deadline)
            })
            .map(|(&id, _)| id)
            .collect();
        for id in &failed {
            self.paths.remove(id);
        }
        failed
    }

    /// Whether a path other than `id` was heard from within `window` before `now`, or has
    /// nothing unanswered.
    fn other_fine(&self, id: PathId, now: Instant, window: Duration) -> bool {
        self.paths.iter().any(|(&other, w)| {
            other != id
                && (now.saturating_duration_since(w.heard) < window || w.unanswered_since.is_none())
        })
    }
}

/// A change in a path's health, as the application hears of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum FailoverEvent {
    /// The path stopped answering and was abandoned; its data moves to the live paths.
    PathFailed {
        /// noq's id of the failed path.
        path: u32,
        /// Its local address, when known.
        local: Option<IpAddr>,
        /// Its remote address.
        remote: Option<SocketAddr>,
        /// Seconds since the connection was set up.
        at_s: f64,
        /// The paths still open.
        continuing_on: Vec<u32>,
    },
    /// A path over the addresses of a failed one answered again and was opened.
    PathRecovered {
        /// noq's id of the new path.
        path: u32,
        /// The failed path it replaces.
        failed_path: u32,
        /// Its local address, when known.
        local: Option<IpAddr>,
        /// Its remote address.
        remote: Option<SocketAddr>,
        /// Seconds since the connection was set up.
        at_s: f64,
    },
}

impl FailoverEvent {
    /// The qlog custom event's name (without the `mpquic:` prefix).
    pub fn qlog_name(&self) -> &'static str {
        match self {
            FailoverEvent::PathFailed { .. } => "path_failed",
            FailoverEvent::PathRecovered { .. } => "path_recovered",
        }
    }
}

/// `local -> remote`, with `*` for an address not known.
fn addresses(local: &Option<IpAddr>, remote: &Option<SocketAddr>) -> String {
    let local = local.map_or_else(|| "*".to_owned(), |l| l.to_string());
    let remote = remote.map_or_else(|| "*".to_owned(), |r| r.ip().to_string());
    format!("{local} -> {remote}")
}

impl fmt::Display for FailoverEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailoverEvent::PathFailed { path, local, remote, at_s, continuing_on } => {
                let on: Vec<String> = continuing_on.iter().map(u32::to_string).collect();
                let (noun, on) = match on.len() {
                    1 => ("path", on.join("")),
                    _ => ("paths", on.join(", ")),
                };
                write!(
                    f,
                    "path {path} {} failed at {at_s:.2} s; continuing on {noun} {on}",
                    addresses(local, remote)
                )
            }
            FailoverEvent::PathRecovered { path, failed_path, local, remote, at_s } => write!(
                f,
                "path {failed_path} {} answers again at {at_s:.2} s; reopened as path {path}",
                addresses(local, remote)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A path that sent `sent_bytes` and got `received` datagrams back, each with an ACK.
    fn sample(sent_bytes: u64, received: u64) -> PathSample {
        PathSample { sent_bytes, received, acks: received, srtt: 10 * MS }
    }

    fn paths(p0: PathSample, p1: PathSample) -> Vec<(PathId, PathSample)> {
        vec![(PathId::ZERO, p0), (PathId::from(1u32), p1)]
    }

    #[test]
    fn failure_reads_as_the_cli_prints_it() {
        let event = FailoverEvent::PathFailed {
            path: 0,
            local: Some("10.0.1.1".parse().unwrap()),
            remote: Some("10.0.1.2:4433".parse().unwrap()),
            at_s: 2.031,
            continuing_on: vec![1],
        };
        assert_eq!(
            event.to_string(),
            "path 0 10.0.1.1 -> 10.0.1.2 failed at 2.03 s; continuing on path 1"
        );
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["event"], "path_failed");
    }

    #[test]
    fn deadline_is_ptos_of_the_path_but_never_below_the_minimum() {
        let rule = PathFailure { ptos: 3, min: 200 * MS, ..PathFailure::default() };
        assert_eq!(rule.deadline(10 * MS), 200 * MS); // 3 x 55 ms = 165 ms < min
        assert_eq!(rule.deadline(50 * MS), 525 * MS); // 3 x (150 + 25) ms
    }

    #[test]
    fn silent_path_fails_after_the_deadline_while_the_other_answers() {
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        assert!(detector.observe(t0, &paths(sample(0, 0), sample(0, 0))).is_empty());
        // Path 0 sends and hears nothing back; path 1 sends and is answered every 25 ms.
        let mut failed_at = None;
        for step in 1..=20u32 {
            let now = t0 + step * 25 * MS;
            let failed = detector
                .observe(now, &paths(sample(step.into(), 0), sample(step.into(), step.into())));
            if !failed.is_empty() {
                assert_eq!(failed, vec![PathId::ZERO]);
                failed_at = Some(now - t0);
                break;
            }
        }
        // Unanswered since the first sample that sent (25 ms), failed 200 ms later.
        assert_eq!(failed_at, Some(225 * MS));
    }

    #[test]
    fn no_failure_when_every_path_is_silent() {
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        for step in 0..=40u32 {
            let now = t0 + step * 25 * MS;
            assert!(detector
                .observe(now, &paths(sample(step.into(), 0), sample(step.into(), 0)))
                .is_empty());
        }
    }

    #[test]
    fn a_path_that_sends_nothing_does_not_fail() {
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        for step in 0..=40u32 {
            let now = t0 + step * 25 * MS;
            assert!(detector
                .observe(now, &paths(sample(0, 0), sample(step.into(), step.into())))
                .is_empty());
        }
    }

    #[test]
    fn datagrams_without_acks_do_not_answer() {
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        // Path 0's way out fails: the peer's probes still arrive on it, without an ACK. Path 1
        // is idle with nothing unanswered (its sender is blocked by flow control).
        let mut failed = vec![];
        for step in 0..=20u32 {
            let now = t0 + step * 25 * MS;
            let probes = PathSample { received: step.into(), acks: 0, ..sample(step.into(), 0) };
            failed = detector.observe(now, &paths(probes, sample(0, 0)));
            if !failed.is_empty() {
                break;
            }
        }
        assert_eq!(failed, [PathId::ZERO]);
    }

    #[test]
    fn an_answer_resets_the_clock() {
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        for step in 0..=40u32 {
            let now = t0 + step * 25 * MS;
            // Path 0 is answered every 150 ms (< 200 ms): slow, not failed.
            let received = step / 6;
            assert!(detector
                .observe(
                    now,
                    &paths(sample(step.into(), received.into()), sample(step.into(), step.into()))
                )
                .is_empty());
        }
    }
}
