//! E3, traffic shifting: how fast a multipath flow moves its traffic off a path when cross
//! traffic arrives there.
//!
//! The multipath flow's rate on each path is read from the wire bytes of the links only it uses
//! (its host's access links, e.g. `src->a` and `src->b` in the `two-path` topology), per bucket
//! of `output.goodput_interval`.
//!
//! **Definition.** Let `share(t)` be the crossed path's share of the multipath flow's bytes in
//! bucket `t`, and `pre` its mean share over the *pre-cross window* (the last half of the time
//! between the previous phase change and the cross flow's start). The flow *has moved its
//! traffic* at the end of the first bucket that begins a run of buckets, lasting at least
//! `hold`, in each of which `share < threshold * pre`. The shifting time is that instant minus
//! the cross flow's start. Buckets where the flow sent nothing on either path do not count as
//! moved.

use serde::Serialize;

use crate::net::Ps;
use crate::sim::Sim;

/// The parameters of the definition.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct ShiftDefinition {
    /// The share must fall below this fraction of its pre-cross value...
    pub threshold: f64,
    /// ...and stay below for this long, microseconds.
    pub hold_us: f64,
    /// Bucket width, microseconds (the scenario's `goodput_interval`).
    pub bucket_us: f64,
}

/// One cross-traffic phase.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseShift {
    /// The crossed path's access link.
    pub path_link: String,
    /// Cross flow start and stop, milliseconds.
    pub cross_ms: (f64, f64),
    /// Pre-cross window, milliseconds.
    pub pre_window_ms: (f64, f64),
    /// Mean share of the crossed path before the cross flow.
    pub pre_share: f64,
    /// Mean share over the second half of the cross phase.
    pub during_share: f64,
    /// Shifting time, milliseconds (`None`: never moved during the phase).
    pub shift_ms: Option<f64>,
    /// Multipath flow's rate over the second half of the cross phase, Gbps (both paths, wire).
    pub during_rate_gbps: f64,
}

fn bytes(sim: &Sim, link: &str) -> Vec<u64> {
    sim.links
        .iter()
        .find(|l| l.params.name == link)
        .map(|l| l.stats.bytes_series.clone())
        .unwrap_or_default()
}

/// The "moved" criterion: share below `threshold` times its pre-cross value for `hold`.
#[derive(Debug, Clone, Copy)]
pub struct Criterion {
    /// Fraction of the pre-cross share.
    pub threshold: f64,
    /// Minimum time below it, picoseconds.
    pub hold: Ps,
}

/// Shifting time of one phase: cross traffic on `crossed` (index into `links`) during
/// `[start, stop)`, the previous phase change at `prev`.
pub fn phase_shift(
    sim: &Sim,
    links: [&str; 2],
    crossed: usize,
    (prev, start, stop): (Ps, Ps, Ps),
    Criterion { threshold, hold }: Criterion,
) -> PhaseShift {
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let series = [bytes(sim, links[0]), bytes(sim, links[1])];
    let at = |s: &Vec<u64>, i: usize| s.get(i).copied().unwrap_or(0);
    let share = |i: usize| {
        let (c, o) = (at(&series[crossed], i), at(&series[1 - crossed], i));
        (c + o > 0).then(|| c as f64 / (c + o) as f64)
    };
    let mean_share = |from: usize, to: usize| {
        let c: u64 = (from..to).map(|i| at(&series[crossed], i)).sum();
        let o: u64 = (from..to).map(|i| at(&series[1 - crossed], i)).sum();
        if c + o == 0 {
            0.0
        } else {
            c as f64 / (c + o) as f64
        }
    };
    let b = |t: Ps| (t / bucket) as usize;
    let pre_from = prev + (start - prev) / 2;
    let pre_share = mean_share(b(pre_from), b(start));
    let mid = start + (stop - start) / 2;
    let during_share = mean_share(b(mid), b(stop));
    let during_bytes: u64 = (b(mid)..b(stop)).map(|i| at(&series[0], i) + at(&series[1], i)).sum();
    let during_rate_gbps = during_bytes as f64 * 8.0 / ((stop - mid) as f64 / 1e12) / 1e9;
    let need = hold.div_ceil(bucket).max(1) as usize;
    let limit = threshold * pre_share;
    let mut run = 0;
    let mut shift_ms = None;
    for i in b(start)..b(stop) {
        if share(i).is_some_and(|s| s < limit) {
            run += 1;
            if run == need {
                let first = i + 1 - need;
                let moved_at = (first as Ps + 1) * bucket;
                shift_ms = Some(moved_at.saturating_sub(start) as f64 / 1e9);
                break;
            }
        } else {
            run = 0;
        }
    }
    PhaseShift {
        path_link: links[crossed].to_string(),
        cross_ms: (start as f64 / 1e9, stop as f64 / 1e9),
        pre_window_ms: (pre_from as f64 / 1e9, start as f64 / 1e9),
        pre_share: (pre_share * 1e4).round() / 1e4,
        during_share: (during_share * 1e4).round() / 1e4,
        shift_ms,
        during_rate_gbps: (during_rate_gbps * 1e3).round() / 1e3,
    }
}

/// Per-bucket rate of the multipath flow on each path, Gbps, re-bucketed to `every` buckets:
/// (time ms, rate on links[0], rate on links[1]).
pub fn path_rates(sim: &Sim, links: [&str; 2], every: usize) -> Vec<(f64, f64, f64)> {
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let [a, b] = [bytes(sim, links[0]), bytes(sim, links[1])];
    let n = a.len().max(b.len());
    let every = every.max(1);
    let width = (bucket * every as Ps) as f64 / 1e12;
    (0..n.div_ceil(every))
        .map(|k| {
            let r = k * every..((k + 1) * every).min(n);
            let sa: u64 = r.clone().map(|i| a.get(i).copied().unwrap_or(0)).sum();
            let sb: u64 = r.map(|i| b.get(i).copied().unwrap_or(0)).sum();
            let t = (k * every) as f64 * bucket as f64 / 1e9;
            (t, sa as f64 * 8.0 / width / 1e9, sb as f64 * 8.0 / width / 1e9)
        })
        .collect()
}
