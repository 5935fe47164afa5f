//! A small scripted sender for tests: it keeps each path's packet numbers, what is in flight and
//! the RTT to report, and turns "send 10 packets", "acknowledge them with 3 CE marks",
//! "lose one" into the event sequences the QUIC adapter produces (per ACK frame: the
//! acknowledged packets, then at most one CE report, then `AckBatchEnded`).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::coupled::{Algorithm, Coupled, PathState};
use crate::{
    ConnectionSnapshot, Controller, ControllerConfig, Event, Notice, PathId, PathSnapshot,
    RttSample,
};

/// Default RTT of a scripted path.
pub(crate) const RTT: Duration = Duration::from_micros(100);

/// A path of a fluid-model script ([`Driver::fluid_rates`]): a fixed RTT and a per-packet CE
/// probability, applied deterministically (a packet is marked whenever the running sum of
/// `mark` passes an integer), so that every controller driven with the same script sees the
/// same marking, as the fixed per-path price `lambda_r` of a fluid model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FluidPath {
    pub rtt: Duration,
    pub mark: f64,
}

/// A bottleneck shared by every path of several connections ([`shared_step_link`]), with a
/// step marker: `bdp` packets fill the pipe, and a packet that arrives while more than
/// `threshold` packets wait in the queue is CE-marked (DCTCP's K, the L queue of L4S).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepLink {
    pub bdp: u64,
    pub threshold: u64,
}

#[derive(Debug, Clone)]
struct Flight {
    mss: u64,
    next_pn: u64,
    in_flight: VecDeque<(u64, u64)>,
    rtt: RttSample,
}

/// Drives one controller through scripted scenarios.
#[derive(Debug, Clone)]
pub(crate) struct Driver<C: Controller = Box<dyn Controller>> {
    pub cc: C,
    flights: BTreeMap<u32, Flight>,
}

impl Driver {
    pub(crate) fn new(config: ControllerConfig) -> Self {
        Driver::with(config.build())
    }
}

impl<C: Controller> Driver<C> {
    pub(crate) fn with(cc: C) -> Self {
        Driver { cc, flights: BTreeMap::new() }
    }

    pub(crate) fn raw(&mut self, path: u32, event: Event) {
        self.cc.on_event(PathId(path), event);
    }

    pub(crate) fn add_path(&mut self, path: u32) {
        self.add_path_mss(path, 1200);
    }

    pub(crate) fn add_path_mss(&mut self, path: u32, mss: u64) {
        let rtt = RttSample { latest: RTT, smoothed: RTT, min: RTT };
        self.flights.insert(path, Flight { mss, next_pn: 0, in_flight: VecDeque::new(), rtt });
        self.raw(path, Event::PathAdded { mss });
    }

    pub(crate) fn remove_path(&mut self, path: u32) {
        self.flights.remove(&path);
        self.raw(path, Event::PathRemoved);
    }

    pub(crate) fn change_mss(&mut self, path: u32, mss: u64) {
        self.flight(path).mss = mss;
        self.raw(path, Event::MssChanged { mss });
    }

    /// The RTT reported with later ACKs on `path` (latest = smoothed; min follows).
    pub(crate) fn set_rtt(&mut self, path: u32, rtt: Duration) {
        let f = self.flight(path);
        f.rtt = RttSample { latest: rtt, smoothed: rtt, min: f.rtt.min.min(rtt) };
    }

    fn flight(&mut self, path: u32) -> &mut Flight {
        self.flights.get_mut(&path).expect("scripted path exists")
    }

    /// Send `n` full-size packets on `path`.
    pub(crate) fn send(&mut self, path: u32, n: u64) {
        for _ in 0..n {
            let f = self.flight(path);
            let (pn, bytes) = (f.next_pn, f.mss);
            f.next_pn += 1;
            f.in_flight.push_back((pn, bytes));
            self.raw(path, Event::PacketSent { bytes, pn });
        }
    }

    /// One ACK frame acknowledging the oldest `n` packets in flight on `path`, reporting `ce`
    /// newly marked packets (exactly) if `ce > 0`.
    pub(crate) fn ack(&mut self, path: u32, n: usize, ce: u64) {
        let rtt = self.flight(path).rtt;
        self.ack_frame(path, n, rtt, ce);
    }

    /// One ACK frame acknowledging the oldest packet with a given RTT sample.
    pub(crate) fn ack_with(&mut self, path: u32, n: usize, rtt: RttSample) {
        self.ack_frame(path, n, rtt, 0);
    }

    fn ack_frame(&mut self, path: u32, n: usize, rtt: RttSample, ce: u64) {
        let f = self.flight(path);
        let n = n.min(f.in_flight.len());
        let acked: Vec<(u64, u64)> = f.in_flight.drain(..n).collect();
        for (pn, bytes) in acked {
            self.raw(path, Event::PacketAcked { bytes, pn, rtt, app_limited: false });
        }
        if ce > 0 {
            self.raw(path, Event::CongestionExperienced { count: ce, exact: true });
        }
        self.raw(path, Event::AckBatchEnded);
    }

    /// One ACK frame acknowledging the oldest packet but reporting `bytes` for it.
    pub(crate) fn ack_bytes(&mut self, path: u32, bytes: u64) {
        let f = self.flight(path);
        let rtt = f.rtt;
        let (pn, _) = f.in_flight.pop_front().expect("a packet in flight");
        self.raw(path, Event::PacketAcked { bytes, pn, rtt, app_limited: false });
        self.raw(path, Event::AckBatchEnded);
    }

    /// Declare the oldest `n` packets in flight on `path` lost (no-op if none).
    pub(crate) fn lose(&mut self, path: u32, n: usize) {
        let f = self.flight(path);
        let n = n.min(f.in_flight.len());
        let lost: Vec<(u64, u64)> = f.in_flight.drain(..n).collect();
        if let Some(&(largest_pn, _)) = lost.last() {
            let bytes = lost.iter().map(|&(_, b)| b).sum();
            self.raw(path, Event::PacketsLost { bytes, largest_pn, persistent: false });
        }
    }

    /// Declare packet `pn` lost (it need not be tracked).
    pub(crate) fn lose_pn(&mut self, path: u32, pn: u64, persistent: bool) {
        let f = self.flight(path);
        f.in_flight.retain(|&(p, _)| p != pn);
        let bytes = f.mss;
        self.raw(path, Event::PacketsLost { bytes, largest_pn: pn, persistent });
    }

    /// A round: send `n` packets, then one ACK frame for everything in flight with `ce` marks.
    pub(crate) fn round(&mut self, path: u32, n: u64, ce: u64) {
        self.send(path, n);
        let all = self.flight(path).in_flight.len();
        self.ack(path, all, ce);
    }

    /// A window's worth of packets sent, then acknowledged one ACK frame each.
    pub(crate) fn ack_each_round(&mut self, path: u32, n: u64) {
        self.send(path, n);
        for _ in 0..n {
            self.ack(path, 1, 0);
        }
    }

    /// Open `paths` as paths 0, 1, ... and drive them in rounds: every `rtt` a path that may
    /// send sends its window in full packets (at least one) and has each acknowledged in its
    /// own ACK frame, CE-marked as the script says. Runs `rounds` rounds of the slowest path;
    /// returns each path's sending rate over the second half of that time, bytes per second.
    pub(crate) fn fluid_rates(&mut self, paths: &[FluidPath], rounds: u32) -> Vec<f64> {
        for (id, p) in paths.iter().enumerate() {
            self.add_path(id as u32);
            self.set_rtt(id as u32, p.rtt);
        }
        let horizon = paths.iter().map(|p| p.rtt).max().unwrap_or_default() * rounds;
        let warm_up = horizon / 2;
        let mut next = vec![Duration::ZERO; paths.len()];
        let mut credit = vec![0.0; paths.len()];
        let mut sent = vec![0u64; paths.len()];
        loop {
            let (k, &now) = next.iter().enumerate().min_by_key(|&(_, t)| *t).expect("paths");
            if now >= horizon {
                break;
            }
            next[k] += paths[k].rtt;
            let id = k as u32;
            if !self.cc.may_send(PathId(id)) {
                continue;
            }
            let mss = self.flight(id).mss;
            let packets = (self.window(id) / mss).max(1);
            self.send(id, packets);
            for _ in 0..packets {
                credit[k] += paths[k].mark;
                let ce = u64::from(credit[k] >= 1.0);
                credit[k] -= ce as f64;
                self.ack(id, 1, ce);
            }
            if now >= warm_up {
                sent[k] += packets * mss;
            }
        }
        let span = (horizon - warm_up).as_secs_f64();
        sent.iter().map(|&b| b as f64 / span).collect()
    }

    /// Send on every path of `path_count` a round's window (at least one packet), as
    /// [`fluid_rates`](Driver::fluid_rates) does; the packets sent, per path.
    fn send_windows(&mut self, path_count: u32) -> Vec<u64> {
        (0..path_count)
            .map(|id| {
                if !self.cc.may_send(PathId(id)) {
                    return 0;
                }
                let packets = (self.window(id) / self.flight(id).mss).max(1);
                self.send(id, packets);
                packets
            })
            .collect()
    }

    pub(crate) fn window(&self, path: u32) -> u64 {
        self.cc.window(PathId(path))
    }

    pub(crate) fn snapshot(&self) -> ConnectionSnapshot {
        self.cc.snapshot()
    }

    pub(crate) fn path(&self, path: u32) -> PathSnapshot {
        self.snapshot().path(PathId(path)).cloned().expect("live path")
    }

    pub(crate) fn drain(&mut self) -> Vec<Notice> {
        let mut out = Vec::new();
        self.cc.drain_notices(&mut out);
        out
    }
}

impl<A: Algorithm> Driver<Coupled<A>> {
    /// Test backdoor: put `path` in congestion avoidance at `bytes`, with the scripted RTT as its
    /// smoothed RTT, as if earlier rounds had brought it there.
    pub(crate) fn force_window(&mut self, path: u32, bytes: u64) {
        let srtt = self.flight(path).rtt.smoothed.as_secs_f64();
        let core = &mut self.cc.core;
        let s = core.slot(PathId(path)).expect("live path");
        core.set_srtt(s, srtt);
        core.set_window(s, bytes as f64);
        let w = core.path(s).cwnd();
        core.set_ssthresh(s, w);
    }

    /// The shared state of live path `path`.
    pub(crate) fn state(&self, path: u32) -> &PathState<A::Path> {
        let core = self.cc.core();
        core.path(core.slot(PathId(path)).expect("live path"))
    }

    /// The exact (fractional) window of live path `path`, bytes.
    pub(crate) fn cwnd(&self, path: u32) -> f64 {
        self.state(path).cwnd()
    }
}

/// Drive connections whose paths all cross one [`StepLink`], in rounds of one common RTT: every
/// path sends its window, the packets of all paths arrive interleaved (each path's spread over
/// the round, as a pacer spreads them), the queue builds by what exceeds the pipe, and the last
/// `sum - bdp - threshold` packets of the round are marked (those that found the queue above
/// the threshold). Each packet is acknowledged in its own frame, in arrival order. `flows`
/// pairs each connection with its number of paths (opened here as 0, 1, ...); returns each
/// connection's mean packets per round over the second half of `rounds`.
pub(crate) fn shared_step_link(
    flows: &mut [(&mut Driver, u32)],
    link: StepLink,
    rtt: Duration,
    rounds: u32,
) -> Vec<f64> {
    for (driver, paths) in flows.iter_mut() {
        for id in 0..*paths {
            driver.add_path(id);
            driver.set_rtt(id, rtt);
        }
    }
    let warm_up = rounds / 2;
    let mut sent = vec![0u64; flows.len()];
    for round in 0..rounds {
        // (position in the round, connection, path) of every packet sent this round.
        // Each path's packets are evenly spaced at a phase drawn afresh for every path and
        // round (a fixed pseudo-random sequence), so that no path's packets sit at the round's
        // end, where the marks fall, more often than another's.
        let mut arrivals = Vec::new();
        let mut stream = 0u64;
        for (f, (driver, paths)) in flows.iter_mut().enumerate() {
            for (path, &n) in driver.send_windows(*paths).iter().enumerate() {
                stream += 1;
                let phase = unit_interval(u64::from(round) << 20 | stream);
                arrivals.extend((0..n).map(|j| ((j as f64 + phase) / n as f64, f, path as u32)));
                if round >= warm_up {
                    sent[f] += n;
                }
            }
        }
        arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
        // The queue holds what exceeds the pipe; the arrivals past `bdp + threshold` find it
        // above the threshold.
        let marked_from = (link.bdp + link.threshold) as usize;
        for (i, &(_, f, path)) in arrivals.iter().enumerate() {
            flows[f].0.ack(path, 1, u64::from(i >= marked_from));
        }
    }
    sent.iter().map(|&n| n as f64 / (rounds - warm_up) as f64).collect()
}

/// A number in [0, 1) that looks random and depends only on `seed` (splitmix64's finaliser).
fn unit_interval(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as f64 / 2f64.powi(64)
}
