//! Path failure detection: which path has stopped answering while another still does.
//!
//! A path *fails* when ack-eliciting data it sent has gone unanswered (no ACK frame came back
//! on it) for [`PathFailure::ptos`] of its own probe timeouts, and at least
//! [`PathFailure::min`], over enough packets that a path which still delivers would almost
//! surely have answered one ([`FailureDetector`]: more packets the more the path was losing),
//! while another path is fine: heard from within that time, or with nothing of its own
//! unanswered. The rule reads noq's per-path counters and, under a controller of ours, the
//! path's RTT samples, so it needs no hook in the stack. An answer is an ACK frame received on
//! the path, or one that acknowledged the path's packets on another path (the RTT samples: a
//! peer may acknowledge a path on any path, as picoquic does; mpquic's peer acknowledges each
//! path on itself, the PATH_ACK placement patch of `third_party/noq-proto` and D4). Under the
//! stack's own Cubic only ACK frames on the path count.
//!
//! An answer is an ACK frame, not any datagram: when only the way out of a path fails, the
//! peer's own probes still arrive on it, but carry no acknowledgement. And another path that
//! has nothing unanswered counts as fine although silent: a sender whose lost data is stuck on
//! the failed path is soon blocked by flow control and sends nothing on the others.
//!
//! A *gray* path, one that loses many packets but still delivers some, is not failed: its
//! controller deals with the loss. Time alone cannot tell it from a dead one (at 30% loss each
//! way, a round of two packets goes unanswered a third of the time, and the stack's backed-off
//! probe timeouts make a few such rounds last a few hundred ms), so the rule also counts the
//! packets that went unanswered and asks for more of them on a path that was losing more;
//! only a silence of four deadlines fails a lossy path whatever its loss (it strands the data
//! it holds).
//!
//! The connection then abandons the failed path with PATH_UNSTABLE_OR_POOR (RFC 10069's code
//! for a path found failed, so the peer can tell it from a deliberate close): noq declares its
//! in-flight packets lost at the abandon (`lose_in_flight_on_abandon`, noq-proto patch 4, set
//! when failover is on) and re-sends their data on the live paths, and the client keeps trying
//! to open a new path over the same addresses, which succeeds once the path answers again. A
//! path that fails again soon after it came back is retried later each time (exponential
//! back-off up to [`PathFailure::max_retry`]).

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use noq::PathId;
use serde::Serialize;

/// The rule that declares a path failed (see the module documentation), and how failed paths
/// are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PathFailure {
    /// Probe timeouts of the path's own that its data may go unanswered.
    pub ptos: u32,
    /// The shortest silence that counts as a failure, whatever the path's RTT.
    pub min: Duration,
    /// How long the client waits before its first attempt to re-open a failed path.
    pub retry: Duration,
    /// The longest wait between attempts: each attempt that gets no answer, and each failure
    /// of a re-opened path within [`PathFailure::settle`] of its return, doubles the wait up
    /// to this.
    pub max_retry: Duration,
    /// How long a re-opened path must keep working for its next failure to start the
    /// back-off afresh.
    pub settle: Duration,
}

impl Default for PathFailure {
    fn default() -> Self {
        PathFailure {
            ptos: 3,
            min: Duration::from_millis(200),
            retry: Duration::from_millis(500),
            max_retry: Duration::from_secs(30),
            settle: Duration::from_secs(10),
        }
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

    /// How long the client waits before re-opening a path after `level` earlier attempts that
    /// came to nothing (a re-open that got no answer, or a path that failed again soon after it
    /// came back): [`PathFailure::retry`] doubled `level` times, at most
    /// [`PathFailure::max_retry`].
    pub fn backoff(&self, level: u32) -> Duration {
        let factor = 1u32.checked_shl(level).unwrap_or(u32::MAX);
        self.retry.saturating_mul(factor).min(self.max_retry.max(self.retry))
    }
}

/// How many packets must go unanswered before a path that was losing `loss` of its packets
/// counts as failed: enough that a path still delivering would have left them all unanswered
/// with a chance below [`UNANSWERED_CHANCE`], taking a packet to go unanswered when it or its
/// ACK is lost (the loss taken alike both ways). Never fewer than [`MIN_UNANSWERED`].
fn unanswered_needed(loss: f64) -> u64 {
    let loss = loss.clamp(0.0, 0.95);
    let unanswered = 1.0 - (1.0 - loss) * (1.0 - loss);
    if unanswered <= 0.0 {
        return MIN_UNANSWERED;
    }
    let needed = (UNANSWERED_CHANCE.ln() / unanswered.ln()).ceil() as u64;
    needed.max(MIN_UNANSWERED)
}

/// The chance, for a path that still delivers, of a failure verdict on one silent stretch.
/// Packets of one round share their ACKs, so the real chance is higher than this figure; it is
/// set low for that reason.
const UNANSWERED_CHANCE: f64 = 1e-5;

/// The fewest unanswered packets that make a failure: a lone lost packet and its probe do not.
const MIN_UNANSWERED: u64 = 3;

/// How many deadlines of silence make a lossy path failed whatever its loss (see
/// `Watch::silent_for`).
const LONG_SILENCE: u32 = 4;

/// Weight of one answer in a path's loss estimate (an exponentially weighted moving average of
/// the fraction of the packets sent between two answers that the stack declared lost).
const LOSS_GAIN: f64 = 1.0 / 8.0;

/// One path's counters at one instant, as read from noq's path statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PathSample {
    /// Bytes of ack-eliciting packets sent on the path.
    pub sent_bytes: u64,
    /// Packets sent on the path.
    pub sent_packets: u64,
    /// Packets the stack declared lost on the path.
    pub lost_packets: u64,
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
    /// Packets the path had sent, and had lost, when it was last answered (or watching began).
    sent_when_answered: u64,
    lost_when_answered: u64,
    /// The fraction of its packets the path has been losing, recently.
    loss: f64,
}

impl Watch {
    fn new(sample: PathSample, now: Instant) -> Self {
        Watch {
            last: sample,
            heard: now,
            unanswered_since: None,
            sent_when_answered: sample.sent_packets,
            lost_when_answered: sample.lost_packets,
            loss: 0.0,
        }
    }

    /// Take in the path's counters at `now`.
    fn update(&mut self, sample: PathSample, now: Instant) {
        if sample.received != self.last.received {
            self.heard = now;
        }
        if sample.acks != self.last.acks {
            self.unanswered_since = None;
            self.answered(sample);
        } else if sample.sent_bytes != self.last.sent_bytes {
            self.unanswered_since.get_or_insert(now);
        }
        self.last = sample;
    }

    /// An answer came: fold the packets lost since the last one into the loss estimate. Only
    /// answers move it, as the stack finds losses through ACKs: a silent path keeps the
    /// estimate it had.
    fn answered(&mut self, sample: PathSample) {
        let sent = sample.sent_packets.saturating_sub(self.sent_when_answered);
        let lost = sample.lost_packets.saturating_sub(self.lost_when_answered);
        if sent + lost > 0 {
            let fraction = lost as f64 / sent.max(lost) as f64;
            self.loss += LOSS_GAIN * (fraction - self.loss);
        }
        self.sent_when_answered = sample.sent_packets;
        self.lost_when_answered = sample.lost_packets;
    }

    /// Whether the path has left data unanswered for `deadline`, over enough packets; or, over
    /// a few packets, for [`LONG_SILENCE`] deadlines, lossy or not: a path that answers nothing
    /// for that long strands the data it holds, and is better re-opened (with back-off).
    fn silent_for(&self, now: Instant, deadline: Duration) -> bool {
        let Some(since) = self.unanswered_since else { return false };
        let unanswered = self.last.sent_packets.saturating_sub(self.sent_when_answered);
        let silence = now.saturating_duration_since(since);
        silence >= deadline
            && (unanswered >= unanswered_needed(self.loss)
                || (silence >= deadline * LONG_SILENCE && unanswered >= MIN_UNANSWERED))
    }
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
    /// re-opened later starts afresh. `standby` are the open paths kept from data (backups,
    /// paths the controller suppressed): they send only probes, whose silence says nothing
    /// (a backup's ACKs may ride an available path), so they are not judged and count as
    /// fine; one is watched afresh from when it carries data again.
    pub(crate) fn observe(
        &mut self,
        now: Instant,
        samples: &[(PathId, PathSample)],
        standby: &[PathId],
    ) -> Vec<PathId> {
        self.paths.retain(|id, _| samples.iter().any(|(open, _)| open == id));
        for &(id, sample) in samples {
            match self.paths.get_mut(&id) {
                Some(watch) => watch.update(sample, now),
                None => {
                    self.paths.insert(id, Watch::new(sample, now));
                }
            }
        }
        let failed: Vec<PathId> = self
            .paths
            .iter()
            .filter(|&(&id, watch)| {
                let deadline = self.rule.deadline(watch.last.srtt);
                watch.silent_for(now, deadline)
                    && (standby.iter().any(|&s| s != id) || self.other_fine(id, now, deadline))
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
        /// Seconds until the client tries to open the path again (`None` where it will not:
        /// on a server, or without the path's addresses).
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_in_s: Option<f64>,
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
            FailoverEvent::PathFailed { path, local, remote, at_s, continuing_on, retry_in_s } => {
                let on: Vec<String> = continuing_on.iter().map(u32::to_string).collect();
                let (noun, on) = match on.len() {
                    1 => ("path", on.join("")),
                    _ => ("paths", on.join(", ")),
                };
                write!(
                    f,
                    "path {path} {} failed at {at_s:.2} s; continuing on {noun} {on}",
                    addresses(local, remote)
                )?;
                match retry_in_s {
                    Some(retry) => write!(f, "; retrying in {retry:.1} s"),
                    None => Ok(()),
                }
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
    /// One packet per byte here, none lost.
    fn sample(sent_bytes: u64, received: u64) -> PathSample {
        PathSample {
            sent_bytes,
            sent_packets: sent_bytes,
            lost_packets: 0,
            received,
            acks: received,
            srtt: 10 * MS,
        }
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
            retry_in_s: Some(4.0),
        };
        assert_eq!(
            event.to_string(),
            "path 0 10.0.1.1 -> 10.0.1.2 failed at 2.03 s; continuing on path 1; retrying in 4.0 s"
        );
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["event"], "path_failed");
        assert_eq!(json["retry_in_s"], 4.0);
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
        assert!(detector.observe(t0, &paths(sample(0, 0), sample(0, 0)), &[]).is_empty());
        // Path 0 sends and hears nothing back; path 1 sends and is answered every 25 ms.
        let mut failed_at = None;
        for step in 1..=20u32 {
            let now = t0 + step * 25 * MS;
            let failed = detector.observe(
                now,
                &paths(sample(step.into(), 0), sample(step.into(), step.into())),
                &[],
            );
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
                .observe(now, &paths(sample(step.into(), 0), sample(step.into(), 0)), &[])
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
                .observe(now, &paths(sample(0, 0), sample(step.into(), step.into())), &[])
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
            failed = detector.observe(now, &paths(probes, sample(0, 0)), &[]);
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
                    &paths(sample(step.into(), received.into()), sample(step.into(), step.into())),
                    &[],
                )
                .is_empty());
        }
    }

    #[test]
    fn a_lossier_path_must_leave_more_packets_unanswered() {
        assert_eq!(unanswered_needed(0.0), MIN_UNANSWERED);
        // 5% each way: a packet or its ACK lost 9.75% of the time; 0.0975^5 < 1e-5.
        assert_eq!(unanswered_needed(0.05), 5);
        // 30% each way: 51%; 0.51^18 < 1e-5 < 0.51^17.
        assert_eq!(unanswered_needed(0.3), 18);
        assert!(unanswered_needed(1.0) > 18, "never infinite, and more still");
    }

    /// Path 0 sends a packet every 25 ms; path 1 is answered throughout. Until `quiet_from`
    /// path 0 is answered at every step and loses `lost_per_step` of 4 packets a step.
    fn fails_when_silent(lost_per_step: u64, quiet_steps: u32) -> bool {
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        let (mut sent, mut lost, mut acks) = (0, 0, 0);
        for step in 0..200u32 {
            let now = t0 + step * 25 * MS;
            let quiet = step >= 100;
            if quiet && step >= 100 + quiet_steps {
                return false;
            }
            sent += if quiet { 1 } else { 4 };
            if !quiet {
                lost += lost_per_step;
                acks += 1;
            }
            let p0 =
                PathSample { sent_packets: sent, lost_packets: lost, acks, ..sample(sent, acks) };
            let p1 = sample(step.into(), step.into());
            if !detector.observe(now, &paths(p0, p1), &[]).is_empty() {
                return true;
            }
        }
        false
    }

    #[test]
    fn a_gray_path_is_given_longer_than_a_clean_one() {
        // 12 quiet steps = 300 ms and 12 unanswered packets: past the 200 ms deadline.
        assert!(fails_when_silent(0, 12), "a clean path that stops answering fails");
        assert!(!fails_when_silent(1, 12), "a path losing a quarter of its packets does not");
        assert!(fails_when_silent(1, 40), "it does when it stays silent for long enough");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let rule = PathFailure::default();
        assert_eq!(rule.backoff(0), 500 * MS);
        assert_eq!(rule.backoff(1), 1000 * MS);
        assert_eq!(rule.backoff(5), 16_000 * MS);
        assert_eq!(rule.backoff(6), rule.max_retry);
        assert_eq!(rule.backoff(99), rule.max_retry);
    }

    #[test]
    fn a_path_fails_beside_a_silent_backup() {
        // Path 0 stops answering; path 1 is a backup whose ACKs rode path 0: silent too, but a
        // standby path counts as fine, so path 0 fails and the backup can take over.
        let mut detector = FailureDetector::new(PathFailure::default());
        let t0 = Instant::now();
        let standby = [PathId::from(1u32)];
        let mut failed = vec![];
        for step in 0..=20u32 {
            let now = t0 + step * 25 * MS;
            let p0 = (PathId::ZERO, sample(step.into(), 0));
            failed = detector.observe(now, &[p0], &standby);
            if !failed.is_empty() {
                break;
            }
        }
        assert_eq!(failed, [PathId::ZERO]);
    }
}
