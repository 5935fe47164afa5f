//! MPTCP-D (mptcp-d-paper.txt: section IV-B, equations 1-2; section IV-C, Algorithm 1):
//! an energy-efficient multipath TCP for data centers. A psi-weighted coupled increase shifts
//! traffic to the lowest-RTT path, and Extra Subflow Elimination (ESE) closes paths found to
//! share a bottleneck link with another path of the connection.
//!
//! - Increase per ACK on path `r` (Algorithm 1, from eq. 1):
//!   `w_r += MSS * acked * psi_r * (w_r / rtt_r^2) / (sum_k w_k / rtt_k)^2` with
//!   `psi_r = min_k rtt_k / rtt_r` (eq. 2), smoothed RTTs, active paths. With one path this is
//!   Reno's `MSS * acked / w`, and since `psi_r <= 1` no path ever grows faster than Reno on it.
//!   The sums and `min_k rtt_k` are cached by the core: O(1) per ACK.
//! - Loss, and CE once per round: `w_r = max(w_r / 2, cwnd_min)`.
//! - ESE (Algorithm 1), on the RTT samples of path `r` while it is within its first
//!   `candidates` samples (80), `base_r` its minimum RTT:
//!   - `rtt_r > alpha * base_r` (alpha = 1.3) with no trigger yet: set the trigger,
//!     `ref = rtt_r`, and `r` is the keeper;
//!   - trigger set, `r` not the keeper, `rtt_r > alpha * base_r` and
//!     `|rtt_r - ref| < beta * base_r` (beta = 0.1): `r` shares the keeper's link; it is
//!     eliminated (`may_send` false from then on).
//!
//! Readings:
//! - ECN marks are a congestion signal too (the paper reacts to loss only), halving like loss,
//!   because the project runs every controller on ECN feedback.
//! - The keeper is never eliminated: read literally, Algorithm 1 would close the very path that
//!   set the trigger (its `|rtt - ref|` is 0).
//! - An "RTT sample" is one ACK frame that acknowledged something on the path: QUIC's RTT
//!   estimator takes one sample per ACK frame (RFC 9002 section 5.1), from its largest newly
//!   acknowledged packet. The adapter gives each packet of the frame its own send-to-ACK time;
//!   ESE reads the frame's last, the largest packet number's, at the frame's end. The sample is
//!   `RttSample::latest`, `base` is `RttSample::min`.
//! - At our scale the test is fragile, faithfully read: where one packet's serialization is
//!   about the base RTT (E5's 50 Mbit/s links, 2 us delays), a burst's RTTs form a staircase
//!   (`base + (k - 1) * packet time`), the same on identical disjoint links, so the second
//!   step of any path's initial window crosses `alpha * base` and matches another path's
//!   second step within `beta * base` (see the test
//!   `ese_on_two_identical_idle_links_hinges_on_which_burst_steps_are_sampled`). The paper's
//!   testbeds had a packet at 0.08-0.4 of the base RTT, and jitter.
//! - The adaptive candidate count ("if NUM_pkt < NUM_candidate then NUM_candidate = NUM_pkt")
//!   uses the packets sent on the path so far. A streaming sender cannot know a flow's final
//!   size, and there are never more samples than packets sent, so in practice the limit is
//!   `candidates`.
//! - Eliminated paths keep a window of `cwnd_min` rather than 0: `may_send` already stops new
//!   data, and a non-zero window lets the transport finish what is in flight on them.
//!   Elimination is permanent, except when the keeper itself goes away: then the eliminated
//!   paths are reopened (a `Released` notice), as otherwise the connection could not send.

use serde::Serialize;

use crate::builtin::TypedConfig;
use crate::coupled::{Algorithm, Core, Coupled, Coupling, Slot};
use crate::param::{parameters, Parameter, Parameters};
use crate::{ConnectionSnapshot, ControllerKind, Notice, PathId};
use crate::{Controller, ControllerConfig};

/// MPTCP-D parameters (MPTCP-D paper, Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MptcpDConfig {
    /// Whether extra-subflow elimination runs.
    pub ese: bool,
    /// RTT inflation threshold: a sample above `alpha * base` counts as inflated. Above 1.
    pub alpha: f64,
    /// Two inflated samples within `beta * base` of each other indicate a shared link. Positive.
    pub beta: f64,
    /// RTT samples per path during which ESE looks for link sharing. At least 1.
    pub candidates: u32,
}

impl Default for MptcpDConfig {
    fn default() -> Self {
        MptcpDConfig { ese: true, alpha: 1.3, beta: 0.1, candidates: 80 }
    }
}

impl TypedConfig for MptcpDConfig {
    const PARAMETERS: Parameters<Self> = parameters![
        Parameter::new("ese", |c| &mut c.ese),
        Parameter::in_range("alpha", |c| &mut c.alpha, |a| a > 1.0, "must be above 1"),
        Parameter::in_range("beta", |c| &mut c.beta, |b| b > 0.0, "must be positive"),
        Parameter::positive("candidates", |c| &mut c.candidates),
    ];

    const VARIANT: fn(Self) -> ControllerConfig = ControllerConfig::MptcpD;

    fn build(&self) -> Box<dyn Controller> {
        Box::new(Coupled::new(MptcpD::new(*self)))
    }
}

/// MPTCP-D's per-path ESE state.
#[derive(Debug, Clone, Default)]
pub(crate) struct EsePath {
    samples: u32,
    eliminated: bool,
}

/// MPTCP-D's connection-level state.
#[derive(Debug, Clone)]
pub(crate) struct MptcpD {
    cfg: MptcpDConfig,
    /// The keeper and its reference RTT in seconds, once ESE has triggered.
    trigger: Option<(PathId, f64)>,
    eliminations: u64,
}

impl MptcpD {
    pub(crate) fn new(cfg: MptcpDConfig) -> Self {
        MptcpD { cfg, trigger: None, eliminations: 0 }
    }

    fn ese_sample(&mut self, core: &mut Core<EsePath>, s: Slot) {
        let p = core.path(s);
        let window = u64::from(self.cfg.candidates).min(p.sent_packets());
        if p.ext().eliminated || u64::from(p.ext().samples) >= window {
            return;
        }
        let (id, latest, min, floor) = (p.id(), p.latest_rtt(), p.min_rtt(), p.cwnd_min());
        core.ext_mut(s).samples += 1;
        let rtt = latest.as_secs_f64();
        let base = min.as_secs_f64();
        if base <= 0.0 || rtt <= self.cfg.alpha * base {
            return;
        }
        match self.trigger {
            None => self.trigger = Some((id, rtt)),
            Some((keeper, reference)) => {
                if keeper != id && (rtt - reference).abs() < self.cfg.beta * base {
                    core.ext_mut(s).eliminated = true;
                    let notice =
                        Notice::Eliminated { path: id, keeper, rtt: latest, base_rtt: min };
                    core.set_active(s, false);
                    core.set_window(s, floor);
                    self.eliminations += 1;
                    core.notify(notice);
                }
            }
        }
    }
}

impl Algorithm for MptcpD {
    type Path = EsePath;

    fn name(&self) -> &'static str {
        ControllerKind::MptcpD.name()
    }

    fn coupling(&self) -> Coupling {
        Coupling::Rates
    }

    fn ca_increase(&self, core: &Core<EsePath>, s: Slot, bytes: u64) -> f64 {
        let p = core.path(s);
        let sums = core.sums();
        let (rate_sum, min_srtt) = (sums.rate_sum(), sums.min_srtt());
        let step = p.mss_f() * bytes as f64;
        // The path is active and measured, so the sums include it; fall back to Reno if not.
        if rate_sum.is_nan() || rate_sum <= 0.0 || !min_srtt.is_finite() {
            return step / p.cwnd();
        }
        let psi = min_srtt / p.srtt();
        step * psi * (p.rate() / p.srtt()) / (rate_sum * rate_sum)
    }

    fn on_batch_end(&mut self, core: &mut Core<EsePath>, s: Slot) {
        if self.cfg.ese && core.path(s).acked_in_batch() {
            self.ese_sample(core, s);
        }
    }

    fn on_path_removed(&mut self, core: &mut Core<EsePath>, removed: PathId, _was_initial: bool) {
        if self.trigger.is_some_and(|(keeper, _)| keeper == removed) {
            self.trigger = None;
            let mut paths = Vec::new();
            for s in core.slots() {
                if core.path(s).ext().eliminated {
                    core.ext_mut(s).eliminated = false;
                    core.set_active(s, true);
                    paths.push(core.id(s));
                }
            }
            if !paths.is_empty() {
                core.notify(Notice::Released { paths });
            }
        }
    }

    fn fill_snapshot(&self, snapshot: &mut ConnectionSnapshot) {
        snapshot.eliminations = self.eliminations;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::MptcpD;
    use crate::coupled::Coupled;
    use crate::testkit::{Driver, FluidPath};
    use crate::{Controller, ControllerConfig, MptcpDConfig, Notice, PathId, RttSample};

    fn us(x: u64) -> Duration {
        Duration::from_micros(x)
    }

    fn mptcp_d(paths: u32) -> Driver<Coupled<MptcpD>> {
        let mut d = Driver::with(Coupled::new(MptcpD::new(MptcpDConfig::default())));
        for id in 0..paths {
            d.add_path(id);
        }
        d
    }

    fn sample(latest: u64, min: u64) -> RttSample {
        RttSample { latest: us(latest), smoothed: us(latest), min: us(min) }
    }

    #[test]
    fn one_path_reduces_to_reno() {
        let mut d = mptcp_d(1);
        d.set_rtt(0, us(150));
        d.force_window(0, 30_000);
        for _ in 0..50 {
            let w = d.cwnd(0);
            d.send(0, 1);
            d.ack(0, 1, 0);
            let got = d.cwnd(0) - w;
            let reno = 1200.0 * 1200.0 / w;
            assert!((got - reno).abs() < 1e-9 * reno, "{got} vs {reno}");
        }
    }

    #[test]
    fn increase_follows_equations_1_and_2() {
        let mut d = mptcp_d(3);
        let (w, r) = ([20_000.0f64, 15_000.0, 9_000.0], [100.0e-6f64, 200e-6, 400e-6]);
        for k in 0..3 {
            d.set_rtt(k as u32, Duration::from_secs_f64(r[k]));
            d.force_window(k as u32, w[k] as u64);
        }
        let r: Vec<f64> = (0..3).map(|k| d.state(k as u32).srtt()).collect();
        let sum: f64 = (0..3).map(|k| w[k] / r[k]).sum();
        for k in 0..3 {
            let mut copy = d.clone();
            copy.send(k as u32, 1);
            copy.ack(k as u32, 1, 0);
            let psi = r[0] / r[k];
            let expect = 1200.0 * 1200.0 * psi * (w[k] / (r[k] * r[k])) / (sum * sum);
            let got = copy.cwnd(k as u32) - w[k];
            assert!((got - expect).abs() < 1e-9 * expect, "path {k}: {got} vs {expect}");
            // psi < 1 off the best path: slower than Reno there.
            assert!(got <= 1200.0 * 1200.0 / w[k]);
        }
    }

    #[test]
    fn ecn_and_loss_halve_once_per_round() {
        let mut d = mptcp_d(2);
        d.force_window(0, 40_000);
        d.send(0, 4);
        d.ack(0, 1, 1);
        let w = d.window(0);
        assert!((20_000..20_100).contains(&w));
        d.lose(0, 1);
        assert_eq!(d.window(0), w);
    }

    /// Two paths sharing a link (inflated RTTs within beta * base of each other) and a third on
    /// its own link: path 0 triggers and is kept, path 1 is eliminated, path 2 stays.
    #[test]
    fn ese_closes_a_link_sharing_path_and_keeps_the_trigger() {
        let mut d = mptcp_d(3);
        for id in 0..3 {
            d.send(id, 5);
            d.ack_with(id, 1, sample(100, 100)); // base 100 us everywhere
        }
        d.ack_with(0, 1, sample(135, 100)); // > 1.3 * 100: trigger, ref 135, keeper 0
        assert!(d.drain().iter().all(|n| !matches!(n, Notice::Eliminated { .. })));
        d.ack_with(2, 1, sample(160, 100)); // inflated, but 25 us > 10 us from the reference
        d.ack_with(1, 1, sample(140, 100)); // inflated and within 10 us: shares the link
        d.ack_with(0, 1, sample(138, 100)); // the keeper again: never eliminated
        assert!(d.cc.may_send(PathId(0)));
        assert!(!d.cc.may_send(PathId(1)));
        assert!(d.cc.may_send(PathId(2)));
        assert_eq!(d.snapshot().eliminations, 1);
        assert_eq!(
            d.drain(),
            vec![Notice::Eliminated {
                path: PathId(1),
                keeper: PathId(0),
                rtt: us(140),
                base_rtt: us(100)
            }]
        );
        // The eliminated path leaves the coupled sums and no longer grows.
        let total: f64 = [0, 2].iter().map(|&k| d.cwnd(k as u32)).sum();
        assert_eq!(d.cc.core().sums().window_sum(), total);
        let w1 = d.cwnd(1);
        d.ack_with(1, 1, sample(100, 100));
        assert_eq!(d.cwnd(1), w1);
    }

    /// ESE's false positive on disjoint links in E5-sim after noq-proto D8 (traced at 83487b0),
    /// a faithful reading's fragility, not a defect: two disjoint, idle, identical 50 Mbit/s
    /// links, 2 us delays, 1400-byte packets, so the base RTT (~216-248 us) is about one
    /// packet's serialization (224 us). Each path sends its 10-packet initial
    /// window in one burst; packet k of the burst waits behind k-1 others at its own bottleneck,
    /// RTT_k = 247.9 + (k-1) * 228.5 us, the same staircase on both links. Path 0's second
    /// packet (476.2 us > 1.3 * 247.9) sets the trigger; path 1's second packet, ~2.7 ms later,
    /// measures 476.2 us again: |476.2 - 476.2| < 0.1 * 216.2, path 1 is eliminated. With an
    /// ACK per two packets (paths 1+ before D8: the PATH_CHALLENGE's packet and data packet 1
    /// acked together, then 2+3, 4+5, ...) path 1 sees only the odd steps (247.8, 704.7,
    /// 1161.7 us), each 228 us from the reference, and is kept.
    #[test]
    fn ese_on_two_identical_idle_links_hinges_on_which_burst_steps_are_sampled() {
        let step = |k: u64| 248 + (k - 1) * 228; // RTT of packet k of a burst, us
        let run = |per_packet: bool| {
            let mut d = mptcp_d(2);
            d.send(0, 10); // path 0's initial window, one burst
            d.ack_with(0, 1, sample(step(1), step(1)));
            d.ack_with(0, 1, sample(step(2), step(1))); // trigger, ref 476, keeper 0
            d.send(1, 1); // path 1's PATH_CHALLENGE (1200 bytes)
            if per_packet {
                d.ack_with(1, 1, sample(216, 216));
                d.send(1, 10); // its initial window
                for k in 1..=5 {
                    d.ack_with(1, 1, sample(step(k), 216));
                }
            } else {
                d.send(1, 10);
                d.ack_with(1, 2, sample(step(1), step(1))); // challenge + packet 1
                for k in [3, 5, 7, 9] {
                    d.ack_with(1, 2, sample(step(k), step(1))); // packets k-1 and k
                }
            }
            d.cc.may_send(PathId(1))
        };
        assert!(!run(true), "an ACK per packet samples step 2 and matches the reference");
        assert!(run(false), "an ACK per two packets samples only odd steps");
    }

    #[test]
    fn paths_with_rtts_further_apart_than_beta_base_are_all_kept() {
        let mut d = mptcp_d(4);
        for id in 0..4 {
            d.send(id, 5);
            d.ack_with(id, 1, sample(100, 100));
        }
        d.ack_with(0, 1, sample(140, 100));
        d.ack_with(1, 1, sample(160, 100));
        d.ack_with(2, 1, sample(180, 100));
        d.ack_with(3, 1, sample(129, 100)); // close to the reference but not inflated
        assert!((0..4).all(|id| d.cc.may_send(PathId(id))));
        assert_eq!(d.snapshot().eliminations, 0);
    }

    #[test]
    fn nothing_happens_after_the_candidate_window() {
        let cfg = MptcpDConfig { candidates: 5, ..Default::default() };
        let mut d = Driver::with(Coupled::new(MptcpD::new(cfg)));
        d.add_path(0);
        d.add_path(1);
        d.send(0, 20);
        d.send(1, 20);
        d.ack_with(0, 1, sample(100, 100));
        d.ack_with(0, 1, sample(140, 100)); // trigger
        for _ in 0..5 {
            d.ack_with(1, 1, sample(100, 100)); // path 1 spends its five samples uninflated
        }
        d.ack_with(1, 1, sample(141, 100)); // sixth sample: outside the window
        assert!(d.cc.may_send(PathId(1)));
        // Nor can a path outside its window set the trigger.
        let mut d = Driver::with(Coupled::new(MptcpD::new(cfg)));
        d.add_path(0);
        d.add_path(1);
        d.send(0, 20);
        d.send(1, 20);
        for _ in 0..5 {
            d.ack_with(0, 1, sample(100, 100));
        }
        d.ack_with(0, 1, sample(140, 100));
        d.ack_with(1, 1, sample(100, 100));
        d.ack_with(1, 1, sample(140, 100)); // would be the trigger, then nothing to match
        assert!(d.cc.may_send(PathId(0)) && d.cc.may_send(PathId(1)));
    }

    #[test]
    fn candidate_window_never_exceeds_packets_sent() {
        let cfg = MptcpDConfig { candidates: 80, ..Default::default() };
        let mut d = Driver::with(Coupled::new(MptcpD::new(cfg)));
        d.add_path(0);
        d.send(0, 1);
        d.ack_with(0, 1, sample(100, 100));
        // A further ACK frame for a packet never sent (a bogus or reordered report) is not a
        // new candidate sample: one packet sent, one sample.
        d.raw(
            0,
            crate::Event::PacketAcked {
                bytes: 1200,
                pn: 0,
                rtt: sample(140, 100),
                app_limited: false,
            },
        );
        d.raw(0, crate::Event::AckBatchEnded);
        assert_eq!(d.state(0).ext().samples, 1);
    }

    #[test]
    fn ese_can_be_disabled() {
        let cfg = MptcpDConfig { ese: false, ..Default::default() };
        let mut d = Driver::with(Coupled::new(MptcpD::new(cfg)));
        d.add_path(0);
        d.add_path(1);
        d.send(0, 5);
        d.send(1, 5);
        d.ack_with(0, 1, sample(140, 100));
        d.ack_with(1, 1, sample(140, 100));
        assert!(d.cc.may_send(PathId(1)));
    }

    #[test]
    fn removing_the_keeper_reopens_eliminated_paths() {
        let mut d = mptcp_d(2);
        d.send(0, 5);
        d.send(1, 5);
        d.ack_with(0, 1, sample(140, 100));
        d.ack_with(1, 1, sample(140, 100));
        assert!(!d.cc.may_send(PathId(1)));
        d.remove_path(0);
        assert!(d.cc.may_send(PathId(1)));
    }

    /// Rounds of the slowest path in a Theorem 1 run ([`Driver::fluid_rates`]): the rates are
    /// taken over the second half.
    const THEOREM_1_ROUNDS: u32 = 400;

    /// The connection's total sending rate and the paths' single-path Reno rates under the
    /// same script (each path alone, as "a regular TCP connection on that path").
    fn theorem_1_rates(paths: &[FluidPath], floor: u32) -> (Vec<f64>, Vec<f64>) {
        let coupled = Coupled::new(MptcpD::new(MptcpDConfig::default())).with_min_window(floor);
        let mut d = Driver::with(coupled);
        let rates = d.fluid_rates(paths, THEOREM_1_ROUNDS);
        let reno = paths
            .iter()
            .map(|p| Driver::new(ControllerConfig::Reno).fluid_rates(&[*p], THEOREM_1_ROUNDS)[0])
            .collect();
        (rates, reno)
    }

    /// Cases of the Theorem 1 sweep ([`theorem_1_sweep`]): 1-4 paths each, drawn from a fixed
    /// seed, so that the counts the write-up quotes (mptcp-d-theorem1.md) re-derive exactly.
    const THEOREM_1_CASES: usize = 4000;

    /// How far the discrete controller's total rate exceeds single-path Reno's on the best path
    /// in the sweep, at most: 2.89% (measured 2026-11-29, see [`theorem_1_sweep`]). This is
    /// the bound failing, not an allowance the theorem grants: it is asserted only so that a
    /// change which makes the failure larger is noticed.
    const THEOREM_1_MEASURED_EXCESS: f64 = 0.029;

    /// The most the most-used path `h` alone sends over single-path Reno on `h`, in the
    /// sweep at a 2- or 1-packet floor: 1.0051 measured (2026-11-29).
    const THEOREM_1_H_ALONE: f64 = 1.006;

    /// A path of random RTT (50 us to 1 ms) and per-packet mark probability (0.001 to 0.02,
    /// single-path Reno windows of ~10 to ~45 packets), drawn with splitmix64.
    fn theorem_1_case(state: &mut u64) -> Vec<FluidPath> {
        let mut next = || {
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let paths = 1 + (next() % 4) as usize;
        (0..paths)
            .map(|_| {
                let rtt = us(50 + next() % 950);
                let mark = 0.001 + (next() >> 11) as f64 / (1u64 << 53) as f64 * 0.019;
                FluidPath { rtt, mark }
            })
            .collect()
    }

    /// The connection's total rate over single-path Reno's on path `h`: no allowance.
    fn over_reno_on(h: usize, rates: &[f64], reno: &[f64]) -> f64 {
        rates.iter().sum::<f64>() / reno[h]
    }

    fn argmax(values: &[f64]) -> usize {
        (0..values.len()).max_by(|&a, &b| values[a].total_cmp(&values[b])).expect("paths")
    }

    /// What a Theorem 1 sweep found ([`theorem_1_sweep_at`]).
    #[derive(Debug, Default)]
    struct Theorem1Counts {
        /// Cases whose total exceeds single-path Reno on the best path.
        over: usize,
        /// The largest total / Reno on the best path, and its case.
        worst: f64,
        worst_case: Vec<FluidPath>,
        /// One-path cases, and their largest ratio.
        single: usize,
        single_worst: f64,
        /// Multipath cases with no path but `h` within half a packet of the floor, how many of
        /// them are over, and their largest ratio.
        unfloored: usize,
        unfloored_over: usize,
        unfloored_worst: f64,
        /// The largest total / eq. 3's right-hand side.
        eq3_worst: f64,
        /// Multipath cases: the largest rate of `h` alone over single-path Reno's on `h`.
        h_alone_worst: f64,
    }

    /// The Theorem 1 sweep's [`THEOREM_1_CASES`] cases with MPTCP-D's window floor at `floor`
    /// packets; asserts eq. 3 as printed in every case.
    fn theorem_1_sweep_at(floor: u32) -> Theorem1Counts {
        let mut state = 0x5EED_0001_u64;
        let mut c = Theorem1Counts::default();
        for _ in 0..THEOREM_1_CASES {
            let paths = theorem_1_case(&mut state);
            let (rates, reno) = theorem_1_rates(&paths, floor);
            let total: f64 = rates.iter().sum();
            let h = argmax(&rates);
            // eq. 3 as printed, in bytes per second (scripted MSS 1200 bytes).
            let eq3 = 1200.0 * (2.0 / paths[h].mark).sqrt() / paths[h].rtt.as_secs_f64();
            c.eq3_worst = c.eq3_worst.max(total / eq3);
            assert!(total <= eq3, "eq. 3: {total} > {eq3} ({paths:?}, rates {rates:?})");
            let ratio =
                over_reno_on(argmax(&reno), &rates, &reno).max(over_reno_on(h, &rates, &reno));
            // Paths other than h within half a packet of the floor.
            let near_floor = f64::from(floor) + 0.5;
            let floored = (0..paths.len())
                .filter(|&r| r != h && rates[r] * paths[r].rtt.as_secs_f64() / 1200.0 <= near_floor)
                .count();
            if paths.len() == 1 {
                c.single += 1;
                c.single_worst = c.single_worst.max(ratio);
            } else {
                c.h_alone_worst = c.h_alone_worst.max(rates[h] / reno[h]);
                if floored == 0 {
                    c.unfloored_worst = c.unfloored_worst.max(ratio);
                    c.unfloored += 1;
                    c.unfloored_over += usize::from(ratio > 1.0);
                }
            }
            c.over += usize::from(ratio > 1.0);
            if ratio > c.worst {
                (c.worst, c.worst_case) = (ratio, paths.clone());
            }
        }
        println!(
            "theorem 1, floor {floor}, {THEOREM_1_CASES} cases: total / Reno on the best path > 1 \
             in {}, worst {:.4} ({:?}); one path ({} cases) worst {:.6}; 2+ paths, none but h \
             at the floor: {} of {} over, worst {:.6}; total / eq. 3's right side worst {:.4}; \
             h alone / Reno on h worst {:.4}",
            c.over,
            c.worst,
            c.worst_case,
            c.single,
            c.single_worst,
            c.unfloored_over,
            c.unfloored,
            c.unfloored_worst,
            c.eq3_worst,
            c.h_alone_worst
        );
        c
    }

    /// MPTCP-D Theorem 1 (mptcp-d-paper.txt eq. 3): at the equilibrium of the fluid model of
    /// eq. 1 a connection's total rate is no more than a regular TCP's on its best path, `sum_k
    /// x*_k <= sqrt(2 / lambda_h) / RTT_h`, `h = argmax_k x*_k`. The controller is driven with a
    /// fixed RTT and a fixed mark probability per path (the theorem's exogenous `RTT_r` and
    /// `lambda_r`) for 400 rounds of the slowest path and measured over the second half, in
    /// 4000 seeded cases of 1-4 paths.
    ///
    /// Two right-hand sides, neither with an allowance:
    /// - eq. 3 as printed, `sqrt(2 / lambda_h) / RTT_h` (the fluid model's TCP rate): asserted
    ///   in every case;
    /// - single-path Reno driven by the same script on the best path (both readings: `h`, the
    ///   path the connection uses most, and the path where Reno alone does best, RFC 6356's
    ///   goal). Reno's sawtooth sends less than the fluid rate, so this is the stricter
    ///   comparison, and the discrete controller fails it: in the sweep the total exceeds Reno
    ///   on the best path in 325 of 4000 cases, by up to 2.89%, every one with 2 or more paths
    ///   (2 of them among the 99 multipath cases where no path but `h` is within half a packet
    ///   of the 2-packet floor, by up to 0.71%). With one path the bound holds in every case.
    ///
    /// The window floor is no excuse the theorem's statement gives: add `x_r >= w_min /
    /// RTT_r` to eq. 1 and, at an equilibrium where `h` is above its floor, `dx_h / dt = 0`
    /// still gives `sum_k x_k = sqrt(2 psi_h / lambda_h) / RTT_h` (the floor paths' rate is in
    /// the coupled sum, so it displaces `h`'s rate instead of adding to it), which is the bound.
    /// The excess is the discrete controller's: `h` alone stays within 0.51% of Reno on `h`,
    /// and the other paths' rate, which the fluid model has `h` give up in full, is partly kept
    /// on top of it. The same sweep at a one-packet floor (nothing else changed) halves the
    /// floor paths' rate and shrinks the excess, not in proportion (2.89% -> 2.10% at worst).
    #[test]
    fn theorem_1_sweep() {
        let c = theorem_1_sweep_at(2);
        assert!(c.single_worst <= 1.0 + 1e-9, "one path: {}", c.single_worst);
        assert!(
            c.worst <= 1.0 + THEOREM_1_MEASURED_EXCESS,
            "the bound's failure grew: {} ({:?})",
            c.worst,
            c.worst_case
        );
        // Where the excess comes from: the run that changes only the floor, to one packet.
        // `h` alone never sends more than 0.51% over Reno on `h`, so the excess is the other
        // paths' rate that `h` does not give up; halving the floor paths' rate shrinks it
        // (2.89% -> 2.10% at worst, 325 -> 305 cases over), though not in proportion.
        let one = theorem_1_sweep_at(1);
        for c in [&c, &one] {
            assert!(c.h_alone_worst <= THEOREM_1_H_ALONE, "h alone: {}", c.h_alone_worst);
        }
        assert!(one.worst < c.worst, "floor 1: {} against floor 2: {}", one.worst, c.worst);
        assert!(one.over < c.over, "floor 1: {} cases over against floor 2: {}", one.over, c.over);
    }

    /// The Theorem 1 check can fail: uncoupled Reno on two equal paths sends about twice what
    /// Reno does on one.
    #[test]
    fn theorem_1_check_rejects_uncoupled_paths() {
        let path = FluidPath { rtt: us(200), mark: 0.005 };
        let rates =
            Driver::new(ControllerConfig::Reno).fluid_rates(&[path, path], THEOREM_1_ROUNDS);
        let reno = Driver::new(ControllerConfig::Reno).fluid_rates(&[path], THEOREM_1_ROUNDS);
        let ratio = over_reno_on(0, &rates, &[reno[0], reno[0]]);
        assert!(ratio > 1.8, "uncoupled Reno on two paths: {ratio}");
    }
}
