//! The bridge from noq's per-path congestion callbacks to one connection-scoped
//! [`mpquic_cc::Controller`].
//!
//! noq builds one `Controller` per path through a [`ControllerFactory`] that does not say which
//! path or connection it builds for. Coupling therefore lives here: every connection gets its own
//! [`CoupledFactory`] (through its own `TransportConfig`), each `build()` call takes the next
//! *slot* of that connection's shared state, and every callback of the resulting [`PathHandle`]
//! is forwarded, under one lock, to the connection's controller as `(slot, event)`.
//!
//! Slot 0 is built with the connection, so it is the initial path. The library maps noq's
//! `PathId`s to slots by downcasting a path's controller ([`slot_of`]).
//!
//! noq reports an ACK frame as `on_ack` per packet, `on_end_acks`, then losses, then at most one
//! ECN congestion event. mpquic-cc wants the CE and losses of a frame *before* its batch end (so
//! that a round's marks count in that round), so the batch end is held back until the next
//! callback of the connection arrives.
//!
//! The CE count comes from the ACK frame's ECN section (`on_ecn_counts`, patch 1 of our noq-proto
//! series): the increase of the peer's CE count is the number of newly marked packets, whatever
//! the frame acknowledged (the peer's counters also count our rare ACK-only packets, which the
//! sender of bulk data seldom sends). noq's boolean ECN congestion event that follows carries
//! nothing more and is ignored.
//!
//! The connection's [`Scheduler`] and the controller's suppression decide which path takes the
//! next packet through `send_rank` (patch 2): noq offers paths data in ascending rank, and a
//! path the controller keeps from data ranks `None`, so it still sends probes, PINGs and path
//! validation while its window stays the controller's. What the scheduler reads of each path
//! ([`PathLoad`]) is kept current here as the callbacks arrive, so that a rank costs one lock
//! and no gathering; noq's own part (the backlog, a path's bytes in flight and status) comes
//! with each `send_rank`.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mpquic_cc::{ConnectionSnapshot, Controller, EcnCodepoint, Event, Notice, PathId, RttSample};
use noq::congestion::{self as noq_cc, ControllerFactory, ControllerMetrics, SendContext};

use crate::{ConnectionLoad, PathLoad, PathScheduler, Scheduler};

/// Called with every notice the controller produces, with the time it was drained.
pub type NoticeSink = Box<dyn FnMut(Instant, &Notice) + Send>;

/// Builds the per-path controllers of one connection, all sharing one coupled controller.
pub struct CoupledFactory {
    shared: Arc<SharedController>,
}

impl CoupledFactory {
    /// A factory for one connection running `controller` (built for this connection alone),
    /// placing packets by `scheduler`, its packets marked `codepoint` (`None`: the controller's
    /// choice, [`Controller::ecn_codepoint`]).
    pub fn with_controller(
        controller: Box<dyn Controller>,
        scheduler: &Scheduler,
        codepoint: Option<EcnCodepoint>,
    ) -> Self {
        let codepoint = codepoint.unwrap_or_else(|| controller.ecn_codepoint());
        let shared = SharedController::with_controller(controller, scheduler.build(), codepoint);
        CoupledFactory { shared: Arc::new(shared) }
    }

    /// The connection-wide state, to read snapshots and statistics from.
    pub fn shared(&self) -> Arc<SharedController> {
        self.shared.clone()
    }
}

impl ControllerFactory for CoupledFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn noq_cc::Controller> {
        self.shared.lock().tick(now);
        Box::new(PathHandle::add_to(&self.shared, u64::from(current_mtu)))
    }
}

/// The adapter's own measurements of one slot.
#[derive(Debug, Clone)]
pub struct SlotReport {
    /// RTT samples, microseconds (samples noq's batch clock made zero are left out).
    pub rtt_us: hdrhistogram::Histogram<u64>,
    /// How long the controller has kept the slot from new data (suppressed or eliminated).
    pub inactive: Duration,
    /// Whether the controller has eliminated the slot (MPTCP-D's ESE) and not released it.
    pub eliminated: bool,
    /// Packets the peer received ECT(0)- and ECT(1)-marked (not CE), from the ACK frames' ECN
    /// counts: the codepoint the path sent, seen from the other end.
    pub ect_packets: [u64; 2],
}

/// One connection's coupled controller and the per-path bookkeeping around it.
pub struct SharedController {
    state: Mutex<State>,
    /// The ECN-capable codepoint of every path's packets, fixed for the connection (noq asks
    /// for it per datagram, and ECN validation expects it not to change).
    codepoint: EcnCodepoint,
}

struct State {
    controller: Box<dyn Controller>,
    scheduler: Box<dyn PathScheduler>,
    paths: Vec<SlotState>,
    /// What the scheduler sees of each slot, by slot (kept apart from `paths` so that the
    /// scheduler reads them all as one slice). Its `in_flight` is the one copy of each path's
    /// bytes in flight: the scheduler, the metrics and the slot reports read it.
    loads: Vec<PathLoad>,
    /// Every slot's window as the controller last gave it, by slot: the buffer `feed` reads
    /// them all into in one call.
    windows: Vec<u64>,
    /// A path whose ACK batch ended but whose `AckBatchEnded` is held back (see module docs).
    pending_batch_end: Option<PathId>,
    notices: Vec<Notice>,
    sink: Option<NoticeSink>,
    /// The latest time the stack has told us. Notices and inactive time are stamped with it, so
    /// a simulator's virtual clock stays the only clock.
    clock: Option<Instant>,
}

/// What the adapter itself tracks per path, beyond the controller's state.
struct SlotState {
    /// The controller's window for the slot, refreshed after every event: noq asks for it (as
    /// `metrics()`, for the pacer) several times per packet, and this answers without the lock.
    window: Arc<AtomicU64>,
    /// Packets acknowledged and CE marks counted in the ACK frame being processed, for the
    /// slot's CE fraction at the frame's end.
    frame_acked: u64,
    frame_marked: u64,
    /// Latest RTT samples in microseconds.
    rtt_us: hdrhistogram::Histogram<u64>,
    /// The smallest RTT sample measured on the slot: the controller's minimum RTT. Not noq's:
    /// its estimator starts from the configured initial RTT and takes its first sample after
    /// the ACK callbacks, so on a path's first ACK its minimum is that guess, not a measurement
    /// (MPTCP-D's ESE read a 1 ms guess as the path's base RTT and found a first sample of a
    /// full queue "inflated").
    min_rtt: Option<Duration>,
    /// Since when the controller keeps the path from new data, if it does.
    inactive_since: Option<Instant>,
    /// Time spent inactive before `inactive_since`.
    inactive_before: Duration,
    /// Eliminated by the controller, and not released since.
    eliminated: bool,
    removed: bool,
    /// Packets the peer counted as received ECT(0) and ECT(1).
    ect_packets: [u64; 2],
}

impl SharedController {
    fn with_controller(
        controller: Box<dyn Controller>,
        scheduler: Box<dyn PathScheduler>,
        codepoint: EcnCodepoint,
    ) -> Self {
        SharedController {
            codepoint,
            state: Mutex::new(State {
                controller,
                scheduler,
                paths: Vec::new(),
                loads: Vec::new(),
                windows: Vec::new(),
                pending_batch_end: None,
                notices: Vec::new(),
                sink: None,
                clock: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain numbers behind, never a broken invariant
        // worth refusing service over.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The ECN-capable codepoint the connection's packets carry. Read by the qlog
    /// configuration and the simulator only, so a build with neither has no reader.
    #[cfg(any(feature = "qlog", feature = "internals"))]
    pub fn codepoint(&self) -> EcnCodepoint {
        self.codepoint
    }

    /// Where the controller's notices go (qlog, tracing). Without a sink they are dropped.
    /// Set by qlog and the simulator's traces only (the same two builds as `codepoint`).
    #[cfg(any(feature = "qlog", feature = "internals"))]
    pub fn set_notice_sink(&self, sink: NoticeSink) {
        self.lock().sink = Some(sink);
    }

    /// The controller's state now.
    pub fn snapshot(&self) -> ConnectionSnapshot {
        self.lock().controller.snapshot()
    }

    /// What the adapter measured on a slot, beyond the controller's own snapshot.
    pub fn slot_report(&self, slot: PathId) -> Option<SlotReport> {
        let state = self.lock();
        let p = state.paths.get(slot.0 as usize)?;
        let open = match (p.inactive_since, state.clock) {
            (Some(since), Some(now)) => now.saturating_duration_since(since),
            _ => Duration::ZERO,
        };
        Some(SlotReport {
            rtt_us: p.rtt_us.clone(),
            inactive: p.inactive_before + open,
            eliminated: p.eliminated,
            ect_packets: p.ect_packets,
        })
    }

    /// Bytes in flight on the slot's path at its latest send rank.
    pub fn in_flight(&self, slot: PathId) -> Option<u64> {
        Some(self.lock().loads.get(slot.0 as usize)?.in_flight)
    }

    /// How many RTT samples the slot's path has given: each is an ACK frame that acknowledged
    /// a new largest packet of that path, on whichever path the frame arrived. Failover counts
    /// them as answers, as a peer may acknowledge a path's packets on another path (RFC 10069
    /// allows it; picoquic does).
    pub fn rtt_samples(&self, slot: PathId) -> Option<u64> {
        Some(self.lock().paths.get(slot.0 as usize)?.rtt_us.len())
    }

    /// The path is gone: the controller forgets it and couples over the others.
    pub fn remove_path(&self, slot: PathId) {
        let mut state = self.lock();
        if let Some(path) = state.paths.get_mut(slot.0 as usize) {
            if !path.removed {
                path.removed = true;
                state.loads[slot.0 as usize].may_send = false;
                state.feed(slot, Event::PathRemoved);
            }
        }
    }
}

impl State {
    /// Advance the adapter's clock to the stack's `now`.
    fn tick(&mut self, now: Instant) {
        self.clock = Some(self.clock.map_or(now, |clock| clock.max(now)));
    }

    fn add_path(&mut self, mss: u64) -> PathId {
        let slot = PathId(self.paths.len() as u32);
        self.paths.push(SlotState {
            window: Arc::default(),
            frame_acked: 0,
            frame_marked: 0,
            // Within 1% (2 significant digits), growing to the largest RTT seen: 4 KiB at 1 ms,
            // 11 KiB at 100 ms. Fixed bounds of 1 us .. 100 s at 3 digits took 147 KiB per path,
            // kept for the connection's life: a peer abandoning and re-opening paths in a loop
            // took a server to 460 MiB in 3,100 paths. 2 digits is valid, so this cannot fail.
            rtt_us: hdrhistogram::Histogram::new(2).expect("valid histogram precision"),
            min_rtt: None,
            inactive_since: None,
            inactive_before: Duration::ZERO,
            eliminated: false,
            removed: false,
            ect_packets: [0; 2],
        });
        self.loads.push(PathLoad::new(slot, mss));
        self.windows.push(0);
        self.feed(slot, Event::PathAdded { mss });
        slot
    }

    /// Deliver a held-back batch end of another path: a path's own batch end waits for the
    /// frame's CE count and losses, which come after it.
    fn flush_other_than(&mut self, slot: PathId) {
        if self.pending_batch_end.is_some_and(|pending| pending != slot) {
            self.flush();
        }
    }

    /// Deliver a held-back batch end before anything else happens on the connection.
    fn flush(&mut self) {
        if let Some(slot) = self.pending_batch_end.take() {
            self.end_frame(slot);
            self.feed(slot, Event::AckBatchEnded);
        }
    }

    /// Fold an ACK frame's marks into the slot's CE fraction (DCTCP's alpha, gain 1/16).
    fn end_frame(&mut self, slot: PathId) {
        const GAIN: f64 = 1.0 / 16.0;
        let path = &mut self.paths[slot.0 as usize];
        let (acked, marked) = (path.frame_acked, path.frame_marked);
        (path.frame_acked, path.frame_marked) = (0, 0);
        if acked > 0 {
            let load = &mut self.loads[slot.0 as usize];
            let fraction = (marked as f64 / acked as f64).min(1.0);
            load.ce_fraction += GAIN * (fraction - load.ce_fraction);
        }
    }

    fn feed(&mut self, slot: PathId, event: Event) {
        self.controller.on_event(slot, event);
        // Coupled controllers may move any path's window on one path's event: read them all,
        // in one call (one lookup per path made this O(paths^2) per event).
        self.controller.windows(&mut self.windows);
        for ((path, load), &window) in self.paths.iter().zip(&mut self.loads).zip(&self.windows) {
            load.window = window;
            path.window.store(window, Ordering::Relaxed);
        }
        self.controller.drain_notices(&mut self.notices);
        if !self.notices.is_empty() {
            // Notices only follow events, and every event follows a stack callback with a time.
            let now = self.clock.unwrap_or_else(Instant::now);
            self.track_activity(now);
            match &mut self.sink {
                Some(sink) => self.notices.drain(..).for_each(|n| sink(now, &n)),
                None => self.notices.clear(),
            }
        }
    }

    /// Account inactive time per path, and which paths are eliminated, from the notices that
    /// change them (a release ends a suppression or, under MPTCP-D, an elimination).
    fn track_activity(&mut self, now: Instant) {
        for notice in &self.notices {
            let (paths, active) = match notice {
                Notice::Suppressed { paths } => (paths.as_slice(), false),
                Notice::Released { paths } => (paths.as_slice(), true),
                Notice::Eliminated { path, .. } => (std::slice::from_ref(path), false),
                _ => continue,
            };
            let eliminated = match notice {
                Notice::Eliminated { .. } => Some(true),
                Notice::Released { .. } => Some(false),
                _ => None,
            };
            for slot in paths {
                let Some(path) = self.paths.get_mut(slot.0 as usize) else { continue };
                path.eliminated = eliminated.unwrap_or(path.eliminated);
                match (active, path.inactive_since) {
                    (false, None) => path.inactive_since = Some(now),
                    (true, Some(since)) => {
                        path.inactive_before += now.saturating_duration_since(since);
                        path.inactive_since = None;
                    }
                    _ => {}
                }
            }
        }
    }

    /// Where the slot stands in noq's packet scheduling: `None` while the controller keeps it
    /// from new data (AMP's suppression, MPTCP-D's elimination), otherwise its rank under the
    /// connection's scheduler (lowest first).
    fn send_rank(&mut self, slot: PathId, context: &SendContext) -> Option<u64> {
        let i = slot.0 as usize;
        let removed = self.paths.get(i)?.removed;
        let may_send = !removed && self.controller.may_send(slot);
        let load = &mut self.loads[i];
        load.may_send = may_send;
        load.in_flight = context.in_flight;
        load.backup = context.backup;
        if !may_send {
            return None;
        }
        let connection = ConnectionLoad { backlog: context.backlog, paths: &self.loads };
        self.scheduler.rank(&self.loads[i], &connection)
    }

    /// A new RTT sample of the slot, with noq's smoothed RTT: the variance is RFC 6298's.
    fn record_rtt(&mut self, slot: PathId, smoothed: Duration, sample: Duration) {
        let load = &mut self.loads[slot.0 as usize];
        load.rtt_var = Some(match load.rtt_var {
            None => sample / 2,
            Some(var) => (var * 3 + smoothed.abs_diff(sample)) / 4,
        });
        load.smoothed_rtt = Some(smoothed);
    }
}

/// The largest RTT sample the slot histograms record (100 s); larger ones are recorded as it.
const MAX_RTT_US: u64 = 100_000_000;

impl SlotState {
    /// A measured RTT sample: into the slot's histogram and its minimum.
    fn record_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        // Out-of-range samples (over 100 s) are clamped rather than lost. Not with
        // `saturating_record`: it clamps before it resizes, so on this auto-resizing histogram
        // (created tracking values up to 2) it recorded every sample past the initial counts
        // array (256 us at 2 digits) as 2 us.
        let us = (rtt.as_micros().max(1) as u64).min(MAX_RTT_US);
        self.rtt_us.record(us).expect("auto-resizing histogram, bounded value");
    }
}

/// noq's per-path controller: a handle on one slot of the connection's shared controller.
#[derive(Clone)]
pub struct PathHandle {
    shared: Arc<SharedController>,
    slot: PathId,
    /// The slot's ungated window, kept current by the shared state (see `SlotState::window`).
    window: Arc<AtomicU64>,
}

impl std::fmt::Debug for PathHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PathHandle").field("slot", &self.slot).finish()
    }
}

/// The slot behind a path's controller, if it is one of ours (see `PathHandle`).
pub fn slot_of(controller: Box<dyn noq_cc::Controller>) -> Option<PathId> {
    let any: Box<dyn Any> = controller.into_any();
    any.downcast::<PathHandle>().ok().map(|handle| handle.slot)
}

impl PathHandle {
    /// A handle on a new slot of `shared`, for a path whose MSS is `mss`.
    fn add_to(shared: &Arc<SharedController>, mss: u64) -> Self {
        let mut state = shared.lock();
        let slot = state.add_path(mss);
        let window = state.paths[slot.0 as usize].window.clone();
        PathHandle { shared: shared.clone(), slot, window }
    }

    /// `on_ack`, with the two numbers it needs from noq's RTT estimator, smoothed and minimum
    /// RTT (nothing outside noq can construct an estimator, so tests call this). noq's minimum
    /// stands in only until the slot has measured a sample of its own.
    fn acked(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        pn: u64,
        app_limited: bool,
        (smoothed, min): (Duration, Duration),
    ) {
        let mut state = self.shared.lock();
        state.tick(now);
        state.flush();
        // noq's estimator does not hold this frame's sample yet, and exposes no "latest": the
        // packet's own send-to-ack time is the sample (it includes the peer's ACK delay).
        // noq stamps `now` once per batch of received datagrams, so a packet sent while that
        // batch was being processed can look acknowledged before it was sent: such a sample says
        // nothing and must not become the path's minimum.
        let measured = now.checked_duration_since(sent).filter(|d| !d.is_zero());
        let path = &mut state.paths[self.slot.0 as usize];
        path.frame_acked += 1;
        if let Some(measured) = measured {
            path.record_rtt(measured);
        }
        let min = path.min_rtt.unwrap_or(min);
        let latest = measured.unwrap_or(min);
        let sample = RttSample { latest, smoothed, min };
        state.record_rtt(self.slot, smoothed, latest);
        state.feed(self.slot, Event::PacketAcked { bytes, pn, rtt: sample, app_limited });
    }
}

impl noq_cc::Controller for PathHandle {
    fn on_packet_sent(&mut self, now: Instant, bytes: u16, pn: u64) {
        let mut state = self.shared.lock();
        state.tick(now);
        state.flush();
        state.loads[self.slot.0 as usize].packets_sent += 1;
        state.feed(self.slot, Event::PacketSent { bytes: bytes.into(), pn });
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        pn: u64,
        app_limited: bool,
        rtt: &noq_proto::RttEstimator,
    ) {
        self.acked(now, sent, bytes, pn, app_limited, (rtt.get(), rtt.min()));
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        // The same count of noq's as `SendContext::in_flight`, which the next rank brings.
        _in_flight: u64,
        _app_limited: bool,
        _largest_packet_num_acked: Option<u64>,
    ) {
        let mut state = self.shared.lock();
        state.tick(now);
        state.flush();
        state.pending_batch_end = Some(self.slot);
    }

    fn on_ecn_counts(&mut self, now: Instant, ect0: u64, ect1: u64, ce: u64) {
        let mut state = self.shared.lock();
        let counted = &mut state.paths[self.slot.0 as usize].ect_packets;
        counted[0] += ect0;
        counted[1] += ect1;
        if ce == 0 {
            return;
        }
        state.tick(now);
        state.flush_other_than(self.slot);
        state.paths[self.slot.0 as usize].frame_marked += ce;
        state.feed(self.slot, Event::CongestionExperienced { count: ce, exact: true });
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        _sent: Instant,
        is_persistent_congestion: bool,
        is_ecn: bool,
        lost_bytes: u64,
        largest_lost_pn: u64,
    ) {
        if is_ecn {
            // The frame's CE count came through `on_ecn_counts` just before.
            return;
        }
        let mut state = self.shared.lock();
        state.tick(now);
        state.flush_other_than(self.slot);
        state.feed(
            self.slot,
            Event::PacketsLost {
                bytes: lost_bytes,
                largest_pn: largest_lost_pn,
                persistent: is_persistent_congestion,
            },
        );
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        let mut state = self.shared.lock();
        state.flush();
        state.loads[self.slot.0 as usize].mss = new_mtu.into();
        state.feed(self.slot, Event::MssChanged { mss: new_mtu.into() });
    }

    fn window(&self) -> u64 {
        let mut state = self.shared.lock();
        state.flush();
        state.controller.window(self.slot)
    }

    fn ecn_codepoint(&self) -> noq::EcnCodepoint {
        match self.shared.codepoint {
            EcnCodepoint::Ect0 => noq::EcnCodepoint::Ect0,
            EcnCodepoint::Ect1 => noq::EcnCodepoint::Ect1,
        }
    }

    fn send_rank(&self, context: &SendContext) -> Option<u64> {
        let mut state = self.shared.lock();
        state.flush();
        state.send_rank(self.slot, context)
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = ControllerMetrics::default();
        metrics.congestion_window = self.window.load(Ordering::Relaxed).max(1);
        metrics
    }

    fn clone_box(&self) -> Box<dyn noq_cc::Controller> {
        // noq clones a path's controller to inspect it and when a path migrates; both mean the
        // same path, so the clone shares the slot.
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.window.load(Ordering::Relaxed).max(1)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use mpquic_cc::{
        ConnectionSnapshot, Controller, ControllerConfig, EcnCodepoint, Event, Notice, PathId,
        RttSample,
    };
    use noq::congestion::{Controller as _, ControllerFactory, SendContext};

    use super::{slot_of, CoupledFactory, PathHandle, SharedController};
    use crate::Scheduler;

    /// What the recorder saw, in order.
    type Log = Arc<std::sync::Mutex<Vec<(PathId, Event)>>>;

    /// Records what the adapter feeds it; a fixed window; `suppressed` paths may not send.
    #[derive(Debug, Default)]
    struct Recorder {
        events: Log,
        suppressed: Vec<PathId>,
    }

    impl Controller for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn on_event(&mut self, path: PathId, event: Event) {
            self.events.lock().unwrap().push((path, event));
        }
        fn window(&self, _path: PathId) -> u64 {
            20_000
        }
        fn may_send(&self, path: PathId) -> bool {
            !self.suppressed.contains(&path)
        }
        fn snapshot(&self) -> ConnectionSnapshot {
            unimplemented!("not used by the adapter's hot path")
        }
        fn drain_notices(&mut self, _out: &mut Vec<Notice>) {}
    }

    fn handles(suppressed: Vec<PathId>, n: u32) -> (Vec<PathHandle>, Log) {
        let events = Arc::default();
        let recorder = Recorder { events: Arc::clone(&events), suppressed };
        let shared = Arc::new(SharedController::with_controller(
            Box::new(recorder),
            Scheduler::Stack.build(),
            EcnCodepoint::Ect0,
        ));
        let handles = (0..n).map(|_| PathHandle::add_to(&shared, 1200)).collect();
        (handles, events)
    }

    /// The RTT samples the controller got, in order.
    fn acked_rtts(events: &Log) -> Vec<RttSample> {
        let events = events.lock().unwrap();
        events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::PacketAcked { rtt, .. } => Some(*rtt),
                _ => None,
            })
            .collect()
    }

    fn kinds(events: &[(PathId, Event)]) -> Vec<&'static str> {
        events
            .iter()
            .map(|(_, e)| match e {
                Event::PathAdded { .. } => "added",
                Event::PacketSent { .. } => "sent",
                Event::PacketAcked { .. } => "acked",
                Event::CongestionExperienced { exact: true, .. } => "ce-exact",
                Event::CongestionExperienced { exact: false, .. } => "ce-estimate",
                Event::PacketsLost { .. } => "lost",
                Event::AckBatchEnded => "batch-end",
                Event::PathRemoved => "removed",
                Event::MssChanged { .. } => "mss",
            })
            .collect()
    }

    #[test]
    fn a_frames_ce_and_losses_reach_the_controller_before_its_batch_end() {
        let (mut paths, events) = handles(vec![], 1);
        let t0 = Instant::now();
        let p = &mut paths[0];
        p.on_packet_sent(t0, 1200, 0);
        p.on_packet_sent(t0, 1200, 1);
        let t1 = t0 + Duration::from_millis(1);
        let rtt = Duration::from_millis(1);
        // noq's order: acks, end of acks, loss event, then the ECN counts and the ECN event.
        p.acked(t1, t0, 1200, 0, false, (rtt, rtt));
        p.on_end_acks(t1, 1200, false, Some(0));
        p.on_packet_lost(1200, 1, t1);
        p.on_congestion_event(t1, t0, false, false, 1200, 1);
        p.on_ecn_counts(t1, 0, 0, 1);
        p.on_congestion_event(t1, t0, false, true, 0, 0);
        // The held-back batch end goes out with the next callback of the connection.
        let _ = p.window();
        let seen = events.lock().unwrap().clone();
        assert_eq!(
            kinds(&seen),
            ["added", "sent", "sent", "acked", "lost", "ce-exact", "batch-end"]
        );
    }

    /// The slot's RTT histogram holds the samples as measured, whatever their size: 2 us
    /// samples were the histogram's clamp of every sample of 256 us or more (`saturating_record`
    /// on an auto-resizing histogram), while the controller got the right value.
    #[test]
    fn rtt_samples_are_recorded_as_measured() {
        let events: Log = Arc::default();
        let recorder = Recorder { events: Arc::clone(&events), suppressed: vec![] };
        let shared = Arc::new(SharedController::with_controller(
            Box::new(recorder),
            Scheduler::Stack.build(),
            EcnCodepoint::Ect0,
        ));
        let mut p = PathHandle::add_to(&shared, 1200);
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let samples = [300, 1_100, 41_000, 255, 2_000_000];
        for (pn, &rtt) in samples.iter().enumerate() {
            p.on_packet_sent(t0, 1200, pn as u64);
            p.acked(t0 + us(rtt), t0, 1200, pn as u64, false, (us(1_000), us(200)));
        }
        p.on_end_acks(t0 + us(2_000_000), 0, false, Some(4));
        let h = shared.slot_report(PathId(0)).unwrap().rtt_us;
        assert_eq!(h.len(), samples.len() as u64);
        // Within the histogram's 2 significant digits.
        let near = |got: u64, want: u64| got.abs_diff(want) * 100 <= want;
        assert!(near(h.min(), 255), "min {} us", h.min());
        assert!(near(h.value_at_quantile(0.5), 1_100), "p50 {} us", h.value_at_quantile(0.5));
        assert!(near(h.max(), 2_000_000), "max {} us", h.max());
        // The controller's samples were right before and after: the histogram is reporting only.
        let latest: Vec<u64> =
            acked_rtts(&events).iter().map(|rtt| rtt.latest.as_micros() as u64).collect();
        assert_eq!(latest, samples);
    }

    /// The controller's minimum RTT is measured: on a path's first ACK noq's estimator still
    /// holds the configured initial RTT (here 1 ms) as its minimum, which is no sample. With
    /// noq's minimum passed through, MPTCP-D's ESE took a first sample of 7 ms against a 1 ms
    /// "base" as inflated.
    #[test]
    fn the_controllers_minimum_rtt_is_a_measured_sample() {
        let (mut paths, events) = handles(vec![], 1);
        let p = &mut paths[0];
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // A sample noq's batch clock made zero says nothing: noq's minimum stands in.
        p.on_packet_sent(t0, 1200, 0);
        p.acked(t0, t0, 1200, 0, false, (ms(1), ms(1)));
        // noq's minimum is its 1 ms guess until it has taken its own first sample.
        for (pn, sent, rtt, noq_min) in [(1, 0, 7, 1), (2, 10, 5, 7), (3, 20, 9, 5)] {
            p.on_packet_sent(t0 + ms(sent), 1200, pn);
            p.acked(t0 + ms(sent + rtt), t0 + ms(sent), 1200, pn, false, (ms(7), ms(noq_min)));
        }
        let mins: Vec<u64> =
            acked_rtts(&events).iter().map(|rtt| rtt.min.as_millis() as u64).collect();
        assert_eq!(mins, [1, 7, 5, 5]);
    }

    #[test]
    fn a_frame_that_acked_several_marked_packets_counts_each() {
        let (mut paths, events) = handles(vec![], 1);
        let t0 = Instant::now();
        let p = &mut paths[0];
        for pn in 0..3 {
            p.on_packet_sent(t0, 1200, pn);
        }
        let t1 = t0 + Duration::from_millis(1);
        let rtt = Duration::from_millis(1);
        for pn in 0..3 {
            p.acked(t1, t0, 1200, pn, false, (rtt, rtt));
        }
        p.on_end_acks(t1, 0, false, Some(2));
        // Two of the three were marked; noq's boolean event that follows adds nothing.
        p.on_ecn_counts(t1, 1, 0, 2);
        p.on_congestion_event(t1, t0, false, true, 0, 2);
        p.on_packet_sent(t1, 1200, 3);
        let seen = events.lock().unwrap().clone();
        assert!(matches!(seen[7].1, Event::CongestionExperienced { count: 2, exact: true }));
        assert_eq!(
            kinds(&seen),
            [
                "added",
                "sent",
                "sent",
                "sent",
                "acked",
                "acked",
                "acked",
                "ce-exact",
                "batch-end",
                "sent"
            ]
        );
    }

    #[test]
    fn a_path_the_controller_keeps_from_data_has_no_rank_and_keeps_its_window() {
        let (mut paths, _) = handles(vec![PathId(1)], 2);
        let t0 = Instant::now();
        paths[1].on_packet_sent(t0, 1200, 0);
        assert_eq!(paths[0].send_rank(&SendContext::default()), Some(0));
        assert_eq!(
            paths[1].send_rank(&SendContext::default()),
            None,
            "no new data on a suppressed path"
        );
        // Its window stays the controller's: probes, PINGs and validation still go out.
        assert_eq!(paths[1].window(), 20_000);
        assert_eq!(paths[1].metrics().congestion_window, 20_000);
    }

    #[test]
    fn round_robin_ranks_follow_the_packets_each_path_sent() {
        let recorder = Recorder::default();
        let shared = Arc::new(SharedController::with_controller(
            Box::new(recorder),
            Scheduler::RoundRobin.build(),
            EcnCodepoint::Ect0,
        ));
        let mut paths: Vec<_> = (0..2).map(|_| PathHandle::add_to(&shared, 1200)).collect();
        let t0 = Instant::now();
        for pn in 0..3 {
            paths[0].on_packet_sent(t0, 1200, pn);
        }
        paths[1].on_packet_sent(t0, 1200, 0);
        assert_eq!(
            (
                paths[0].send_rank(&SendContext::default()),
                paths[1].send_rank(&SendContext::default())
            ),
            (Some(3), Some(1))
        );
    }

    /// A library controller by name, with its defaults.
    fn config(name: &str) -> ControllerConfig {
        name.parse::<mpquic_cc::ControllerKind>().map(ControllerConfig::with_defaults).unwrap()
    }

    /// The controller `name` over two paths (stack scheduler), and their handles.
    fn two_paths(name: &str) -> (Arc<SharedController>, Vec<PathHandle>) {
        let shared = Arc::new(SharedController::with_controller(
            config(name).build(),
            Scheduler::Stack.build(),
            EcnCodepoint::Ect0,
        ));
        let paths = (0..2).map(|_| PathHandle::add_to(&shared, 1200)).collect();
        (shared, paths)
    }

    #[test]
    fn the_pacers_window_follows_every_event_on_any_path() {
        // LIA couples the increase over paths; after each callback on path 0, what noq's pacer
        // reads (lock-free) on either path must equal the controller's window.
        let (shared, mut paths) = two_paths("lia");
        let agree = |paths: &[PathHandle]| {
            let snapshot = shared.snapshot();
            for (handle, path) in paths.iter().zip(&snapshot.paths) {
                assert_eq!(handle.metrics().congestion_window, path.window.max(1));
            }
        };
        let t0 = Instant::now();
        let rtt = Duration::from_millis(1);
        agree(&paths);
        for pn in 0..40 {
            paths[0].on_packet_sent(t0, 1200, pn);
            paths[1].on_packet_sent(t0, 1200, pn);
        }
        agree(&paths);
        for round in 1..=3u32 {
            let now = t0 + rtt * round;
            for pn in 0..40 {
                paths[0].acked(now, t0, 1200, pn, false, (rtt, rtt));
                agree(&paths);
            }
            paths[0].on_end_acks(now, 0, false, Some(39));
            paths[0].on_ecn_counts(now, 30, 0, 10);
            let _ = paths[1].window();
            agree(&paths);
        }
    }

    /// MPTCP-D's ESE through the adapter, as in mpquic-cc's own test: two paths whose RTTs
    /// inflate together share a link, so the second is eliminated; the slot report says so
    /// until the keeper goes away and the controller releases it.
    #[test]
    fn an_eliminated_slot_is_reported_until_the_controller_releases_it() {
        let (shared, mut paths) = two_paths("mptcp-d");
        let t0 = Instant::now();
        let us = Duration::from_micros;
        for path in &mut paths {
            for pn in 0..5 {
                path.on_packet_sent(t0, 1200, pn);
            }
        }
        // One ACK frame per (path, packet, RTT): base 100 us on both, then path 0 inflates
        // (the trigger and keeper) and path 1 inflates within beta * base of it.
        for (i, pn, rtt) in [(0, 0, 100), (1, 0, 100), (0, 1, 135), (1, 1, 140)] {
            let now = t0 + us(rtt);
            paths[i].acked(now, t0, 1200, pn, false, (us(rtt), us(100)));
            paths[i].on_end_acks(now, 0, false, Some(pn));
        }
        let _ = paths[0].window();
        let eliminated = |slot| shared.slot_report(PathId(slot)).unwrap().eliminated;
        assert_eq!(shared.snapshot().eliminations, 1);
        assert!(!eliminated(0) && eliminated(1), "path 1 shares path 0's link");
        shared.remove_path(PathId(0));
        assert!(!eliminated(1), "released when its keeper went away");
    }

    #[test]
    fn clones_share_the_slot_and_the_factory_numbers_paths_in_build_order() {
        let factory = Arc::new(CoupledFactory::with_controller(
            config("amp").build(),
            &Scheduler::Stack,
            None,
        ));
        let now = Instant::now();
        let first = factory.clone().build(now, 1200);
        let second = factory.clone().build(now, 1200);
        assert_eq!(slot_of(first.clone_box()), Some(PathId(0)));
        assert_eq!(slot_of(second.clone_box()), Some(PathId(1)));
        assert_eq!(
            slot_of(Box::new(noq::congestion::NewReno::new(
                Arc::new(Default::default()),
                now,
                1200
            ))),
            None
        );
        assert_eq!(factory.shared().snapshot().paths.len(), 2);
    }
}
