//! One path's share of the common ground: window, slow-start threshold, rounds, the
//! once-per-round reaction gate, RTT and counters.
//!
//! Every algorithm reads and writes these fields through [`Core`](super::Core); nothing here knows
//! which algorithm runs.

use std::time::Duration;

use crate::PathId;

/// The largest window, bytes (2^48). Windows are kept as `f64` bytes so that sub-byte per-ACK increases (e.g. `MSS * acked / W`
/// with a large `W`) accumulate instead of being rounded away. They are capped here so that no
/// event sequence can drive them to infinity; 2^48 bytes is far beyond any real window.
pub const MAX_WINDOW: f64 = (1u64 << 48) as f64;

/// Smoothed RTTs are floored at 1 ns: a zero RTT (a simulator with zero delay, a bogus sample)
/// would otherwise turn `w / rtt` into infinity. At this floor the largest window gives
/// `w / rtt^2` of about 1e36 and its square about 1e72, still far inside `f64`.
pub(crate) const MIN_SRTT: f64 = 1e-9;

/// Largest maximum datagram size accepted; larger values are clamped. (UDP payloads stop at
/// 65527 bytes; the clamp only keeps arithmetic on absurd inputs finite.)
pub(crate) const MAX_MSS: u64 = 1 << 16;

/// The minimum window, packets, unless a controller's `cwnd_min` parameter sets another: the
/// papers' `cwnd_min = 2` (AMP section 5, XMP, and RFC 9002's `kMinimumWindow`).
pub(crate) const DEFAULT_MIN_WINDOW: u32 = 2;

/// A new path's window, bytes: RFC 9002 section 7.2, `min(10 * mss, max(14720, 2 * mss))`.
pub fn initial_window(mss: u64) -> f64 {
    (10 * mss).min(14_720u64.max(2 * mss)) as f64
}

/// What happened on a path during one round, handed to the round-end hook.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoundStats {
    /// Packets acknowledged in the round (including those of the ACK frame that ended it).
    pub acked: u64,
    /// CE-marked packets reported in the round (exact counts or the stack's estimates).
    pub marked: u64,
    /// ACK frames in the round that raised the CE count.
    pub ce_events: u64,
    /// Whether the path reacted to congestion (ECN or loss) during the round.
    pub reacted: bool,
    /// Whether any ACK of the round came while the sender was application-limited.
    pub app_limited: bool,
}

impl RoundStats {
    /// The fraction of the round's acknowledged packets that were CE-marked, in `[0, 1]`
    /// (0 for a round that acknowledged nothing).
    pub fn ce_fraction(&self) -> f64 {
        if self.acked == 0 {
            0.0
        } else {
            (self.marked as f64 / self.acked as f64).min(1.0)
        }
    }
}

/// Running totals for snapshots and experiments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Counters {
    pub rounds: u64,
    pub ce_events: u64,
    pub ce_marked: u64,
    pub ce_exact: bool,
    pub ecn_reductions: u64,
    pub loss_reductions: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub acked_bytes: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            rounds: 0,
            ce_events: 0,
            ce_marked: 0,
            ce_exact: true,
            ecn_reductions: 0,
            loss_reductions: 0,
            sent_packets: 0,
            sent_bytes: 0,
            acked_bytes: 0,
        }
    }
}

/// The common state of one path, plus `ext`, the algorithm's own per-path state.
#[derive(Debug, Clone)]
pub struct PathState<X> {
    pub(super) id: PathId,
    /// Maximum datagram size, bytes, clamped to `1..=MAX_MSS`.
    pub(super) mss: u64,
    /// The minimum window, `min_window * mss` bytes (2 packets unless configured), as `f64`
    /// because every window comparison is in `f64`.
    pub(super) cwnd_min: f64,
    /// Congestion window, bytes. Only [`Core::set_window`](super::Core::set_window) writes it, so
    /// the coupled sums stay in step.
    pub(super) w: f64,
    /// Slow-start threshold, bytes; infinite until the first reaction.
    pub(super) ssthresh: f64,
    /// False while AMP suppresses or MPTCP-D eliminated the path. Written only through
    /// [`Core::set_active`](super::Core::set_active).
    pub(super) active: bool,
    /// One past the largest packet number sent.
    pub(super) next_unsent: u64,
    sent_any: bool,
    /// The round ends when a packet number at or above this is acknowledged.
    round_end: u64,
    /// Set by the ACK that ends the round; the round is closed at the end of that ACK frame so
    /// that the frame's CE count belongs to the round it ends.
    round_ending: bool,
    pub(super) round: RoundStats,
    /// Next unsent packet number at the last reaction: packets below it were sent before the
    /// window was cut, so their CE marks, losses and ACKs do not act on the window again.
    cwr_seq: u64,
    /// True from a reaction until a packet at or above `cwr_seq` is acknowledged.
    in_cwr: bool,
    /// Whether the current ACK frame acknowledged anything on this path.
    pub(super) acked_in_batch: bool,
    /// Smoothed RTT in seconds; 0 until the first sample.
    pub(super) srtt: f64,
    pub(super) latest_rtt: Duration,
    pub(super) min_rtt: Duration,
    /// This path's current terms in the coupled sums (`w / srtt` and `w / srtt^2`), kept so a
    /// change can subtract exactly what it once added.
    pub(super) rate_term: f64,
    pub(super) lia_term: f64,
    pub(super) counters: Counters,
    pub(super) ext: X,
}

impl<X: Default> PathState<X> {
    /// A new path whose windows never go below `min_window` packets.
    pub(crate) fn new(id: PathId, mss: u64, min_window: u32) -> Self {
        let mss = mss.clamp(1, MAX_MSS);
        let cwnd_min = (u64::from(min_window) * mss) as f64;
        PathState {
            id,
            mss,
            cwnd_min,
            // A floor above RFC 9002's initial window lifts the first window to it.
            w: initial_window(mss).max(cwnd_min),
            ssthresh: f64::INFINITY,
            active: true,
            next_unsent: 0,
            sent_any: false,
            round_end: 0,
            round_ending: false,
            round: RoundStats::default(),
            cwr_seq: 0,
            in_cwr: false,
            acked_in_batch: false,
            srtt: 0.0,
            latest_rtt: Duration::ZERO,
            min_rtt: Duration::ZERO,
            rate_term: 0.0,
            lia_term: 0.0,
            counters: Counters::default(),
            ext: X::default(),
        }
    }
}

/// What every algorithm may read of one path. Writes go through [`Core`](super::Core), so that
/// the coupled sums and the reaction gate stay consistent with the window.
impl<X> PathState<X> {
    /// The path's stable id (the transport's; it never changes while the path lives).
    pub fn id(&self) -> PathId {
        self.id
    }

    /// Maximum datagram size, bytes, clamped to `1..=65536`.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// [`PathState::mss`] as `f64`, for window arithmetic.
    pub fn mss_f(&self) -> f64 {
        self.mss as f64
    }

    /// The minimum window, `2 * mss` bytes unless the controller's `cwnd_min` parameter says
    /// otherwise: no reduction goes below it.
    pub fn cwnd_min(&self) -> f64 {
        self.cwnd_min
    }

    /// The congestion window in bytes, with its fraction (increases smaller than a byte add up).
    pub fn cwnd(&self) -> f64 {
        self.w
    }

    /// The window in whole bytes, as the transport sees it.
    pub fn window(&self) -> u64 {
        self.w as u64
    }

    /// The slow-start threshold, bytes; infinite until the first reaction.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// Whether the path is in slow start (`cwnd < ssthresh`).
    pub fn in_slow_start(&self) -> bool {
        self.w < self.ssthresh
    }

    /// Whether the path may carry new data (false while suppressed or eliminated).
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Smoothed RTT in seconds, floored at 1 ns; 0 until the first sample.
    pub fn srtt(&self) -> f64 {
        self.srtt
    }

    /// The latest RTT sample (zero until the first).
    pub fn latest_rtt(&self) -> Duration {
        self.latest_rtt
    }

    /// The minimum RTT seen (zero until the first sample).
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt
    }

    /// `cwnd / srtt`, bytes per second; 0 until the first RTT sample.
    pub fn rate(&self) -> f64 {
        if self.srtt > 0.0 {
            self.w / self.srtt
        } else {
            0.0
        }
    }

    /// What the round in progress has seen so far.
    pub fn round(&self) -> &RoundStats {
        &self.round
    }

    /// Rounds completed.
    pub fn rounds(&self) -> u64 {
        self.counters.rounds
    }

    /// Packets sent on the path.
    pub fn sent_packets(&self) -> u64 {
        self.counters.sent_packets
    }

    /// Bytes acknowledged on the path so far (every acknowledged packet, whether or not its ACK
    /// could grow the window).
    pub fn acked_bytes(&self) -> u64 {
        self.counters.acked_bytes
    }

    /// Whether the ACK frame being processed acknowledged anything on this path.
    pub fn acked_in_batch(&self) -> bool {
        self.acked_in_batch
    }

    /// Whether the path is in its post-reaction period: congestion signals for packets sent
    /// before the last reaction are being ignored (once per round).
    pub fn in_cwr(&self) -> bool {
        self.in_cwr
    }

    /// The algorithm's own per-path state.
    pub fn ext(&self) -> &X {
        &self.ext
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    pub(crate) fn on_sent(&mut self, bytes: u64, pn: u64) {
        if !self.sent_any {
            // The first round began when the path did; the next unsent number then was this one.
            self.sent_any = true;
            self.round_end = pn;
        }
        self.next_unsent = self.next_unsent.max(pn.saturating_add(1));
        self.counters.sent_packets += 1;
        self.counters.sent_bytes = self.counters.sent_bytes.saturating_add(bytes);
    }

    /// Book-keeping for one acknowledged packet. Returns whether its ACK may grow the window:
    /// the packet was sent after the last reaction (RFC 9002 section 7.3.2: no increase during
    /// recovery) and the sender was not application-limited (section 7.8).
    pub(crate) fn on_acked(&mut self, pn: u64, bytes: u64, app_limited: bool) -> bool {
        self.acked_in_batch = true;
        self.counters.acked_bytes = self.counters.acked_bytes.saturating_add(bytes);
        self.round.acked += 1;
        self.round.app_limited |= app_limited;
        if self.sent_any && pn >= self.round_end {
            self.round_ending = true;
        }
        let after_reaction = pn >= self.cwr_seq;
        if after_reaction {
            self.in_cwr = false;
        }
        after_reaction && !app_limited
    }

    /// Book-keeping for a CE increase. Returns whether the path may react to it (once per
    /// round: not while a previous reaction's packets are still being acknowledged).
    pub(crate) fn on_ce(&mut self, count: u64, exact: bool) -> bool {
        self.counters.ce_events += 1;
        self.counters.ce_marked = self.counters.ce_marked.saturating_add(count);
        self.counters.ce_exact &= exact;
        self.round.ce_events += 1;
        self.round.marked = self.round.marked.saturating_add(count);
        !self.in_cwr
    }

    /// Whether a loss reaches the window: persistent congestion always does; otherwise only a
    /// loss of a packet sent after the last reaction (once per round, shared with ECN as in
    /// RFC 9002's single recovery period).
    pub(crate) fn loss_reacts(&self, largest_pn: u64, persistent: bool) -> bool {
        persistent || largest_pn >= self.cwr_seq
    }

    /// Start the once-per-round gate: ignore congestion signals for what is already in flight.
    pub(crate) fn close_gate(&mut self) {
        self.cwr_seq = self.next_unsent;
        self.in_cwr = true;
        self.round.reacted = true;
    }

    /// If the ACK frame just ended ended the round, close it and return what happened in it.
    pub(crate) fn take_round_end(&mut self) -> Option<RoundStats> {
        if !self.round_ending {
            return None;
        }
        self.round_ending = false;
        self.round_end = self.next_unsent;
        self.counters.rounds += 1;
        Some(std::mem::take(&mut self.round))
    }
}
