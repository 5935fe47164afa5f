//! The shared per-path core: everything the algorithms have in common, implemented once.
//!
//! - **Rounds** (ALGORITHMS.md "Common ground", XMP's `beg_seq`): a round of a path ends when an
//!   ACK acknowledges a packet number at or above the next packet number that was unsent when
//!   the round began. The round is closed at the end of that ACK frame (`AckBatchEnded`), so the
//!   frame's CE count, which the stack reports after the frame's acknowledged packets, belongs to
//!   the round the frame ends. Round-end hooks (DCTCP/DCM alpha, XMP's increase, AMP's SSR) get
//!   the round's acknowledged and marked packet counts.
//! - **Once-per-round reaction**: after a reaction the path records `cwr_seq`, its next unsent
//!   packet number, and ignores CE until a packet at or above `cwr_seq` is acknowledged. Losses of
//!   packets below `cwr_seq` are ignored too, so ECN and loss share one gate, as RFC 9002's single
//!   recovery period and Linux's CWR/Recovery states do: one cut per round whatever the signal.
//!   ACKs of packets below `cwr_seq` do not grow the window (RFC 9002 section 7.3.2).
//! - **Slow start**: `w < ssthresh`; `ssthresh` starts infinite and is set by the first
//!   reaction, which therefore ends slow start. RFC 9002 persistent congestion collapses the
//!   window to `cwnd_min` and so re-enters slow start up to the halved threshold.
//! - **Coupled sums** ([`coupling`]): `W_total`, `sum(w / srtt)`, `max(w / srtt^2)` and
//!   `min(srtt)` over the active paths, kept up to date on every window or RTT change so that a
//!   coupled per-ACK increase is O(1) instead of O(paths).
//! - **Notices**: window reductions and slow-start exits are reported here; algorithms add their
//!   own (alpha updates, SSR, ESE, phase switch).

pub(crate) mod coupling;
pub(crate) mod path;

pub use coupling::{Coupling, Sums};
pub(crate) use path::DEFAULT_MIN_WINDOW;
pub use path::{PathState, RoundStats};

use crate::{InitialWindow, Notice, PathId, ReductionCause, RttSample};

/// Where a live path sits in the [`Core`] while a hook runs: a handle the hooks receive and pass
/// back, valid until the set of paths changes (a path is added or removed). To remember a path
/// across events, keep its [`PathId`] ([`Core::id`]) and find it again with [`Core::slot`].
///
/// Slots are ordered as the paths' ids are: the first slot ([`Core::initial`]) is the initial
/// path, or, once it is gone, the oldest remaining one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot(usize);

impl Slot {
    /// The path's position among the live paths in id order (0 for the initial path).
    pub fn position(self) -> usize {
        self.0
    }
}

/// Notices are only pushed on reactions and episodes, never per ACK, but a transport that never
/// drains them must not make a long connection grow without bound: past this many undrained
/// notices new ones are counted and dropped.
pub(crate) const NOTICE_CAP: usize = 1 << 16;

/// The per-path states of one connection, the coupled sums over them, and the notice buffer:
/// what every [`Algorithm`](crate::coupled::Algorithm) shares. Hooks read it through
/// [`Core::path`] and [`Core::sums`] and change it through its methods, which keep the sums, the
/// window bounds and the once-per-round gate consistent.
#[derive(Debug, Clone)]
pub struct Core<X> {
    /// Live paths, sorted by id, so index 0 is the initial path (or, once it is gone, the oldest
    /// remaining one).
    paths: Vec<PathState<X>>,
    /// The ids of `paths`, in the same order: a lookup searches 4 bytes per path, not a whole
    /// state.
    ids: Vec<PathId>,
    sums: Sums,
    notices: Vec<Notice>,
    pub(crate) notices_dropped: u64,
    /// Round ends since the sums were last recomputed from scratch.
    round_ends: usize,
    /// How a new path's window is chosen.
    initial_window: InitialWindow,
    /// The minimum window of every path, packets.
    min_window: u32,
}

impl<X: Default> Core<X> {
    pub(crate) fn new(coupling: Coupling) -> Self {
        Core {
            paths: Vec::new(),
            ids: Vec::new(),
            sums: Sums::new(coupling),
            notices: Vec::new(),
            notices_dropped: 0,
            round_ends: 0,
            initial_window: InitialWindow::PerPath,
            min_window: DEFAULT_MIN_WINDOW,
        }
    }

    /// Add a path (the caller has checked that it is new) and return its slot.
    pub(crate) fn add_path(&mut self, id: PathId, mss: u64) -> Slot {
        let i = self.ids.partition_point(|&other| other < id);
        self.ids.insert(i, id);
        self.paths.insert(i, PathState::new(id, mss, self.min_window));
        if self.initial_window == InitialWindow::Shared && self.paths.len() > 1 {
            self.share_initial_window(i);
        }
        self.recompute_sums();
        Slot(i)
    }

    /// [`InitialWindow::Shared`]: the new path at index `new` and the active paths still in their
    /// first slow start (infinite threshold) split those paths' windows evenly, so the connection's
    /// first burst stays one initial window however many paths it opens. Each share keeps the
    /// `cwnd_min` floor. With no such path to share with, the new path starts at the floor. The
    /// caller recomputes the sums.
    fn share_initial_window(&mut self, new: usize) {
        let sharing =
            |i: usize, p: &PathState<X>| i == new || (p.active && p.ssthresh.is_infinite());
        let (count, total) = self
            .paths
            .iter()
            .enumerate()
            .filter(|&(i, p)| i != new && sharing(i, p))
            .fold((1usize, 0.0), |(n, sum), (_, p)| (n + 1, sum + p.w));
        let share = total / count as f64;
        for (i, p) in self.paths.iter_mut().enumerate() {
            if sharing(i, p) {
                p.w = share.clamp(p.cwnd_min, path::MAX_WINDOW);
            }
        }
    }
}

impl<X> Core<X> {
    /// Choose how new paths' windows are set (existing paths keep theirs).
    pub(crate) fn set_initial_window(&mut self, mode: InitialWindow) {
        self.initial_window = mode;
    }

    /// Set the minimum window of the paths opened from now on, packets (at least 1).
    pub(crate) fn set_min_window(&mut self, packets: u32) {
        self.min_window = packets.max(1);
    }
}

/// Reading the shared state.
impl<X> Core<X> {
    /// The slot of path `id`, if it is live.
    #[inline]
    pub fn slot(&self, id: PathId) -> Option<Slot> {
        // `ids` is sorted (`add_path` inserts in order): every event looks its path up here.
        self.ids.binary_search(&id).ok().map(Slot)
    }

    /// Every live path's slot, in id order.
    pub fn slots(&self) -> impl ExactSizeIterator<Item = Slot> + DoubleEndedIterator {
        (0..self.paths.len()).map(Slot)
    }

    /// The initial path (the lowest live id), if any path is live.
    pub fn initial(&self) -> Option<Slot> {
        (!self.paths.is_empty()).then_some(Slot(0))
    }

    /// The id of the path in `slot`.
    #[inline]
    pub fn id(&self, slot: Slot) -> PathId {
        self.ids[slot.0]
    }

    /// The shared state of the path in `slot`.
    #[inline]
    pub fn path(&self, slot: Slot) -> &PathState<X> {
        &self.paths[slot.0]
    }

    /// Every live path's state, in id order.
    pub fn paths(&self) -> impl ExactSizeIterator<Item = &PathState<X>> + DoubleEndedIterator {
        self.paths.iter()
    }

    /// The coupled sums over the active paths (those [`Coupling`] asks for).
    #[inline]
    pub fn sums(&self) -> &Sums {
        &self.sums
    }

    /// The algorithm's own state of the path in `slot`, to change.
    #[inline]
    pub fn ext_mut(&mut self, slot: Slot) -> &mut X {
        &mut self.paths[slot.0].ext
    }
}

/// The event plumbing, driven by [`Coupled`](crate::coupled::Coupled) only.
impl<X> Core<X> {
    pub(crate) fn remove_path(&mut self, s: Slot) -> PathState<X> {
        self.ids.remove(s.0);
        let removed = self.paths.remove(s.0);
        self.recompute_sums();
        removed
    }

    pub(crate) fn on_acked(
        &mut self,
        s: Slot,
        pn: u64,
        bytes: u64,
        rtt: &RttSample,
        app_limited: bool,
    ) -> bool {
        let p = &mut self.paths[s.0];
        p.latest_rtt = rtt.latest;
        p.min_rtt = rtt.min;
        let may_grow = p.on_acked(pn, bytes, app_limited);
        let srtt = rtt.smoothed.as_secs_f64().max(path::MIN_SRTT);
        if srtt != p.srtt {
            self.set_srtt(s, srtt);
        }
        may_grow
    }

    /// Called at every round end: recompute the cached sums from scratch about once per round of
    /// every path (after as many round ends as there are paths), which bounds floating-point
    /// drift of the running sums at O(1) amortized cost per round end.
    pub(crate) fn round_ended(&mut self) {
        self.round_ends += 1;
        if self.round_ends >= self.paths.len() {
            self.round_ends = 0;
            self.recompute_sums();
        }
    }

    pub(crate) fn set_mss(&mut self, s: Slot, mss: u64) {
        let p = &mut self.paths[s.0];
        p.mss = mss.clamp(1, path::MAX_MSS);
        p.cwnd_min = (u64::from(self.min_window) * p.mss) as f64;
        let w = p.w;
        self.set_window(s, w);
    }

    pub(crate) fn on_sent(&mut self, s: Slot, bytes: u64, pn: u64) {
        self.paths[s.0].on_sent(bytes, pn);
    }

    /// Count a CE increase; whether the path may react to it (see [`PathState::in_cwr`]).
    pub(crate) fn on_ce(&mut self, s: Slot, count: u64, exact: bool) -> bool {
        self.paths[s.0].on_ce(count, exact)
    }

    pub(crate) fn loss_reacts(&self, s: Slot, largest_pn: u64, persistent: bool) -> bool {
        self.paths[s.0].loss_reacts(largest_pn, persistent)
    }

    /// If the ACK frame just processed ended the round of the path in `s`, close the round.
    pub(crate) fn take_round_end(&mut self, s: Slot) -> Option<RoundStats> {
        self.paths[s.0].take_round_end()
    }

    pub(crate) fn end_batch(&mut self, s: Slot) {
        self.paths[s.0].acked_in_batch = false;
    }

    pub(crate) fn drain_notices(&mut self, out: &mut Vec<Notice>) {
        out.append(&mut self.notices);
    }
}

/// Changing the shared state: every write keeps the coupled sums in step and the window within
/// `[cwnd_min, 2^48]` bytes.
impl<X> Core<X> {
    /// Grow the window of the path in `s` by `inc` bytes (a negative `inc` shrinks it, down to
    /// `cwnd_min`).
    #[inline]
    pub fn grow(&mut self, s: Slot, inc: f64) {
        let w = self.paths[s.0].w + inc;
        self.set_window(s, w);
    }

    /// Apply a reaction to congestion on the path in `s`: window to `target` (never below `cwnd_min`,
    /// never above the current window), slow-start threshold to `ssthresh`, close the round's
    /// gate, count it, and report it.
    pub fn reduce(&mut self, s: Slot, target: f64, ssthresh: f64, cause: ReductionCause) {
        let p = &self.paths[s.0];
        let from = p.w;
        let was_slow_start = p.in_slow_start();
        let to = target.min(from).max(p.cwnd_min);
        self.set_window(s, to);
        let p = &mut self.paths[s.0];
        p.ssthresh = ssthresh.max(0.0);
        let now_slow_start = p.in_slow_start();
        self.record_reaction(s, cause);
        self.report_reduction(s, from, to, cause, was_slow_start && !now_slow_start);
    }

    /// The common part of every reaction: close the gate of the path in `s` and count it.
    pub fn record_reaction(&mut self, s: Slot, cause: ReductionCause) {
        let p = &mut self.paths[s.0];
        p.close_gate();
        match cause {
            ReductionCause::Ecn => p.counters.ecn_reductions += 1,
            ReductionCause::Loss | ReductionCause::PersistentCongestion => {
                p.counters.loss_reductions += 1
            }
        }
    }

    /// Report a reaction on the path in `s` from `from` to `to` bytes (which may be a connection-level
    /// window, as in MMPTCP's scatter phase).
    pub fn report_reduction(
        &mut self,
        s: Slot,
        from: f64,
        to: f64,
        cause: ReductionCause,
        left_slow_start: bool,
    ) {
        let path = self.paths[s.0].id;
        let (from, to) = (from as u64, to as u64);
        if to < from {
            self.notify(Notice::WindowReduced { path, from, to, cause });
        }
        if left_slow_start {
            self.notify(Notice::SlowStartExited { path, window: to });
        }
    }

    /// Report `notice` (drained by the transport into logs and qlog).
    pub fn notify(&mut self, notice: Notice) {
        if self.notices.len() < NOTICE_CAP {
            self.notices.push(notice);
        } else {
            self.notices_dropped += 1;
        }
    }

    /// Set the slow-start threshold of the path in `s`, bytes (`f64::INFINITY`: no threshold).
    pub fn set_ssthresh(&mut self, s: Slot, ssthresh: f64) {
        self.paths[s.0].ssthresh = ssthresh.max(0.0);
    }

    /// Start the once-per-round gate on the path in `s` without counting a reaction: congestion
    /// signals for what is in flight are ignored, and its ACKs do not grow the window.
    pub fn close_gate(&mut self, s: Slot) {
        self.paths[s.0].close_gate();
    }

    /// Close the round of the path in `s` now if the ACK frame being processed ends it, and
    /// return what happened in it; the frame's end then finds no round to close. For an
    /// algorithm that must update a per-round estimate before a CE reaction in the same frame
    /// (DCTCP's order, RFC 8257 section 3.3).
    pub fn end_round_now(&mut self, s: Slot) -> Option<RoundStats> {
        let round = self.paths[s.0].take_round_end()?;
        self.round_ended();
        Some(round)
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::Driver;
    use crate::{ControllerConfig, ControllerKind, Notice, PathId, ReductionCause};

    const P0: PathId = PathId(0);

    fn reno() -> Driver {
        let mut d = Driver::new(ControllerConfig::Reno);
        d.add_path(0);
        d
    }

    #[test]
    fn initial_window_follows_rfc9002() {
        for (mss, iw) in [(1200, 12_000), (1500, 14_720), (9000, 18_000), (1, 10)] {
            let mut d = Driver::new(ControllerConfig::Reno);
            d.add_path_mss(0, mss);
            assert_eq!(d.window(0), iw, "mss {mss}");
        }
    }

    /// The coupled controllers that take `initial_window`, with it set to `mode`.
    fn with_initial_window(mode: &str) -> Vec<Driver> {
        let param = format!("initial_window={mode}");
        ["amp", "xmp", "dcm"]
            .into_iter()
            .map(|name| Driver::new(ControllerConfig::parse(name, [param.as_str()]).unwrap()))
            .collect()
    }

    fn windows(d: &Driver, paths: u32) -> Vec<u64> {
        (0..paths).map(|p| d.window(p)).collect()
    }

    #[test]
    fn per_path_initial_window_gives_every_new_path_a_whole_one() {
        for mut d in with_initial_window("per-path") {
            (0..4).for_each(|p| d.add_path(p));
            assert_eq!(windows(&d, 4), [12_000; 4], "{}", d.cc.name());
        }
    }

    #[test]
    fn shared_initial_window_splits_one_initial_window_over_the_paths() {
        for mut d in with_initial_window("shared") {
            let name = d.cc.name();
            d.add_path(0);
            assert_eq!(windows(&d, 1), [12_000], "{name}: the first path has it all");
            d.add_path(1);
            assert_eq!(windows(&d, 2), [6_000; 2], "{name}");
            d.add_path(2);
            d.add_path(3);
            // 10 packets of 1200 bytes over 4 paths: 2.5 packets each, the sum one window.
            assert_eq!(windows(&d, 4), [3_000; 4], "{name}");
            // Beyond 5 paths the 2-packet floor wins: 8 paths hold 2 packets each.
            (4..8).for_each(|p| d.add_path(p));
            assert_eq!(windows(&d, 8), [2_400; 8], "{name}");
        }
    }

    #[test]
    fn shared_initial_window_shares_what_slow_start_has_grown() {
        for mut d in with_initial_window("shared") {
            d.add_path(0);
            d.send(0, 2);
            d.ack(0, 2, 0); // slow start (AMP, DCM: + 2,400; XMP: + 1,200 per ACK frame)
            let grown = d.window(0);
            assert!(grown > 12_000, "{}", d.cc.name());
            d.add_path(1);
            assert_eq!(windows(&d, 2), [grown / 2; 2], "{}", d.cc.name());
        }
    }

    #[test]
    fn shared_initial_window_leaves_reacted_paths_alone() {
        for mut d in with_initial_window("shared") {
            let name = d.cc.name();
            d.add_path(0);
            d.send(0, 10);
            d.ack(0, 2, 1); // a CE reaction ends path 0's slow start
            let after = d.window(0);
            assert!(d.path(0).ssthresh.is_some(), "{name}");
            d.add_path(1);
            assert_eq!(d.window(0), after, "{name}: a reacted path keeps its window");
            assert_eq!(d.window(1), 2_400, "{name}: nothing to share: the floor");
            d.add_path(2);
            assert_eq!(windows(&d, 3)[1..], [2_400; 2], "{name}: the floor is shared, not cut");
        }
    }

    #[test]
    fn a_round_ends_at_the_first_ack_at_or_above_the_marker() {
        let mut d = reno();
        d.send(0, 4); // pn 0..3; the first round ends with the ACK of pn 0
        d.ack(0, 1, 0);
        assert_eq!(d.path(0).rounds, 1);
        // The second round began with pn 4 unsent: acking 1..3 does not end it.
        d.ack(0, 3, 0);
        assert_eq!(d.path(0).rounds, 1);
        d.send(0, 2); // pn 4, 5
        d.ack(0, 1, 0);
        assert_eq!(d.path(0).rounds, 2);
    }

    #[test]
    fn ecn_reaction_is_gated_until_a_packet_sent_after_it_is_acked() {
        let mut d = reno();
        d.send(0, 10);
        d.ack(0, 2, 1); // reacts: 12000 + 2400 slow start, then halved
        let after_first = d.window(0);
        assert_eq!(after_first, 7_200);
        assert_eq!(d.path(0).ecn_reductions, 1);
        // More CE for packets sent before the cut: ignored.
        d.ack(0, 4, 2);
        assert_eq!(d.path(0).ecn_reductions, 1);
        assert_eq!(d.window(0), after_first, "no growth from packets sent before the cut");
        // A packet sent after the cut is acknowledged with CE: a new round, a new reaction.
        d.send(0, 1);
        d.ack(0, 5, 0); // the rest of the old flight and the new packet, no CE yet
        d.send(0, 1);
        d.ack(0, 1, 1);
        assert_eq!(d.path(0).ecn_reductions, 2);
    }

    #[test]
    fn loss_and_ecn_share_the_gate() {
        let mut d = reno();
        d.send(0, 10);
        d.ack(0, 1, 1); // ECN reaction
        assert_eq!(d.path(0).ecn_reductions, 1);
        d.lose(0, 1); // pn 1 was sent before the cut: same round, no second cut
        assert_eq!(d.path(0).loss_reductions, 0);
        d.send(0, 1); // pn 10, after the cut
        d.lose_pn(0, 10, false);
        assert_eq!(d.path(0).loss_reductions, 1);
    }

    #[test]
    fn persistent_congestion_collapses_to_cwnd_min_and_reenters_slow_start() {
        let mut d = reno();
        d.send(0, 10);
        d.ack(0, 1, 1); // 13200 -> 6600
        d.lose_pn(0, 2, true);
        let p = d.path(0);
        assert_eq!(p.window, 2_400);
        assert_eq!(p.ssthresh, Some(3_300));
        assert!(p.in_slow_start);
        assert!(d.drain().contains(&Notice::WindowReduced {
            path: P0,
            from: 6_600,
            to: 2_400,
            cause: ReductionCause::PersistentCongestion
        }));
    }

    #[test]
    fn slow_start_exit_is_reported_once() {
        let mut d = reno();
        d.round(0, 10, 1);
        d.round(0, 5, 1);
        let exits =
            d.drain().into_iter().filter(|n| matches!(n, Notice::SlowStartExited { .. })).count();
        assert_eq!(exits, 1);
    }

    #[test]
    fn mss_change_raises_the_floor() {
        let mut d = reno();
        for _ in 0..6 {
            d.round(0, 1, 1);
        }
        assert_eq!(d.window(0), 2_400);
        d.change_mss(0, 1500);
        assert_eq!(d.window(0), 3_000);
    }

    #[test]
    fn unknown_and_removed_paths_are_ignored() {
        for kind in ControllerKind::ALL {
            let mut d = Driver::new(ControllerConfig::with_defaults(kind));
            d.add_path(0);
            d.add_path(1);
            d.remove_path(1);
            assert_eq!(d.cc.window(PathId(1)), 0);
            assert!(!d.cc.may_send(PathId(1)));
            assert_eq!(d.cc.window(PathId(7)), 0);
            d.raw(1, crate::Event::CongestionExperienced { count: 3, exact: true });
            d.raw(7, crate::Event::PacketsLost { bytes: 1, largest_pn: 0, persistent: true });
            assert_eq!(d.snapshot().paths.len(), 1, "{kind}");
        }
    }

    #[test]
    fn app_limited_acks_do_not_grow_the_window() {
        let rtt = crate::RttSample {
            latest: std::time::Duration::from_micros(100),
            smoothed: std::time::Duration::from_micros(100),
            min: std::time::Duration::from_micros(100),
        };
        for kind in ControllerKind::ALL {
            for app_limited in [true, false] {
                let mut d = Driver::new(ControllerConfig::with_defaults(kind));
                d.add_path(0);
                d.send(0, 4);
                let before = d.window(0);
                for pn in 0..4 {
                    d.raw(0, crate::Event::PacketAcked { bytes: 1200, pn, rtt, app_limited });
                }
                d.raw(0, crate::Event::AckBatchEnded);
                if app_limited {
                    assert_eq!(d.window(0), before, "{kind}: grew while app-limited");
                } else {
                    assert!(d.window(0) > before, "{kind}: did not grow in slow start");
                }
            }
        }
    }

    #[test]
    fn notice_buffer_is_bounded() {
        let mut d = Driver::new(ControllerConfig::Dctcp(Default::default()));
        d.add_path(0);
        // Every round pushes an alpha notice; never drained.
        for _ in 0..(super::NOTICE_CAP + 10) {
            d.round(0, 1, 0);
        }
        let snap = d.snapshot();
        assert!(snap.notices_dropped >= 10);
    }
}
