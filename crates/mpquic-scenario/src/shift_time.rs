//! `shift_time` (E3, traffic shifting, AMP Fig. 5, 6, 11): how fast the run's 2-path flow moves
//! its traffic off a path when a cross flow (the metric's group) arrives there.
//!
//! The 2-path flow's rate on each path is read from the bytes of the links only it uses (its
//! host's access links, each path's [`PathFacts::first_link`], e.g. `src->a` and `src->b` in
//! the `two-path` topology), per bucket of `output.goodput_interval`. The crossed path is the
//! one whose last link (the link into its server address) the cross flow's first path ends on
//! too. Only the simulator records the links its paths leave on and bytes per bucket; on the
//! testbed the metrics are NaN.
//!
//! **Definition.** Let `share(t)` be the crossed path's share of the 2-path flow's bytes in
//! bucket `t`, and `pre` its mean share over the *pre-cross window* (the last half of the time
//! between the run's previous timeline instant, a flow's start or stop or a path opening, and
//! the cross flow's start). The flow *has moved its traffic* at the end of the first bucket
//! that begins a run of buckets, lasting at least [`HOLD`], in each of which
//! `share < THRESHOLD * pre`. The shifting time (`shift_ms`) is that instant minus the cross
//! flow's start; NaN if it never moved before the cross flow's stop. Buckets where the flow
//! sent nothing on either path do not count as moved. `during_share` and `during_rate_gbps`
//! are over the second half of the cross flow's time.

use crate::phases::timeline;
use crate::record::{PathFacts, Run, RunRecord};
use crate::units::{Dur, Ps};

/// "Moved": the crossed path's share below this fraction of its pre-cross value...
const THRESHOLD: f64 = 0.5;
/// ...for at least this long.
pub const HOLD: Dur = Dur::ms(1);

/// One cross flow's phase, as the definition reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrossPhase {
    /// The crossed path's mean share of the 2-path flow's bytes before the cross flow.
    pub pre_share: f64,
    /// Its mean share over the second half of the cross flow's time.
    pub during_share: f64,
    /// From the cross flow's start until the flow had moved, ms (None: it did not).
    pub shift_ms: Option<f64>,
    /// The 2-path flow's wire rate over that second half (both paths), Gbit/s.
    pub during_rate_gbps: f64,
}

/// The `shift_time` metric `metric` of the run, its flows being the one cross flow.
pub fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let [cross] = flows else { return f64::NAN };
    let Some(p) = cross_phase(run, *cross) else { return f64::NAN };
    match metric {
        "shift_ms" => p.shift_ms.unwrap_or(f64::NAN),
        "pre_share" => p.pre_share,
        "during_share" => p.during_share,
        "during_rate_gbps" => p.during_rate_gbps,
        _ => f64::NAN,
    }
}

/// The run's one 2-path flow (its index) with its two paths' (first link, last link).
pub fn multipath(r: &RunRecord) -> Option<(usize, [(&str, &str); 2])> {
    let two_paths = |i: usize| r.flows[i].paths.as_ref().filter(|p| p.len() == 2);
    let mut two = (0..r.flows.len()).filter(|&i| two_paths(i).is_some());
    let i = two.next().filter(|_| two.next().is_none())?;
    let paths = two_paths(i)?;
    Some((i, [hop(&paths[0])?, hop(&paths[1])?]))
}

/// A path's (first link, last link), where both are known.
fn hop(p: &PathFacts) -> Option<(&str, &str)> {
    Some((p.first_link.as_deref()?, p.last_link.as_deref()?))
}

/// Link `name`'s bytes per bucket of width `bucket`, by bucket index from its stamps.
pub fn per_bucket(r: &RunRecord, name: &str, bucket: Ps) -> Vec<u64> {
    let Some(l) = r.link_series(name) else { return vec![] };
    let index = |t: f64| ((t * 1e12).round().max(0.0) as Ps / bucket) as usize;
    let mut out = vec![0; l.sent.iter().map(|&(t, _)| index(t) + 1).max().unwrap_or(0)];
    for &(t, b) in &l.sent {
        out[index(t)] += b;
    }
    out
}

/// The phase of cross flow `cross` (None where the run has no 2-path flow, the cross flow is
/// it or shares none of its paths, or the cross flow starts at 0).
pub fn cross_phase(run: &Run, cross: usize) -> Option<CrossPhase> {
    let r = run.record;
    let (mp, hops) = multipath(r)?;
    let c = r.flows.get(cross).filter(|_| cross != mp)?;
    let crossed = hops.iter().position(|h| Some(h.1) == c.into_link.as_deref())?;
    let end = run.point.duration.0;
    let (start, stop) = (c.start.0, c.stop.map_or(end, |t| t.0));
    let instants = timeline(run.point, Dur(end)).into_iter().map(|t| t.0);
    let prev = instants.filter(|&t| t < start).max()?;
    let bucket = run.point.output.goodput_interval.0.max(1);
    let series = [per_bucket(r, hops[0].0, bucket), per_bucket(r, hops[1].0, bucket)];
    let shares = Shares { crossed: &series[crossed], other: &series[1 - crossed] };
    let b = |t: Ps| (t / bucket) as usize;
    let pre_share = shares.mean(b(prev + (start - prev) / 2), b(start));
    let mid = start + (stop - start) / 2;
    let during_bytes: u64 = (b(mid)..b(stop)).map(|i| shares.total(i)).sum();
    let moved_at = shares.moved(b(start)..b(stop), THRESHOLD * pre_share, bucket);
    Some(CrossPhase {
        pre_share,
        during_share: shares.mean(b(mid), b(stop)),
        shift_ms: moved_at.map(|t| t.saturating_sub(start) as f64 / 1e9),
        during_rate_gbps: during_bytes as f64 * 8.0 / ((stop - mid) as f64 / 1e12) / 1e9,
    })
}

/// The 2-path flow's bytes per bucket on the crossed path and on the other.
struct Shares<'a> {
    crossed: &'a [u64],
    other: &'a [u64],
}

impl Shares<'_> {
    /// Bytes on both paths in bucket `i`.
    fn total(&self, i: usize) -> u64 {
        at(self.crossed, i) + at(self.other, i)
    }

    /// The crossed path's share in bucket `i`; None where the flow sent nothing.
    fn share(&self, i: usize) -> Option<f64> {
        let total = self.total(i);
        (total > 0).then(|| at(self.crossed, i) as f64 / total as f64)
    }

    /// The crossed path's share of the bytes of buckets `[from, to)` (0 where none).
    fn mean(&self, from: usize, to: usize) -> f64 {
        let c: u64 = (from..to).map(|i| at(self.crossed, i)).sum();
        let all: u64 = (from..to).map(|i| self.total(i)).sum();
        if all == 0 {
            0.0
        } else {
            c as f64 / all as f64
        }
    }

    /// The end of the first bucket of `buckets` that begins [`HOLD`] of buckets whose share is
    /// below `limit`, in ps.
    fn moved(&self, buckets: std::ops::Range<usize>, limit: f64, bucket: Ps) -> Option<Ps> {
        let need = HOLD.0.div_ceil(bucket).max(1) as usize;
        let mut run = 0;
        for i in buckets {
            if !self.share(i).is_some_and(|s| s < limit) {
                run = 0;
                continue;
            }
            run += 1;
            if run == need {
                return Some((i + 1 - need) as Ps * bucket + bucket);
            }
        }
        None
    }
}

/// Bytes of bucket `i` (0 past the series' end).
fn at(s: &[u64], i: usize) -> u64 {
    s.get(i).copied().unwrap_or(0)
}
