//! `shift` (E3, traffic shifting, AMP Fig. 5, 6, 11): how far the traffic already on a link
//! yields when a cross flow arrives there, and how fast.
//!
//! The metric's group names one cross flow with a receiver rate series (kernel TCP: its sink
//! records bytes over time; mpquic flows have none, and get NaN). Its link is the shaped
//! direction that delivers to its server address. In 10 ms bins since the flows' zero, the
//! rate of everything else on that link is the link's sent rate (the qdisc's byte counter) minus
//! the cross flow's receiver rate. With `k0` the bin of the cross flow's (process) start:
//!
//! - `before_mbps`: median of that rate over bins `[k0 - 30, k0 - 1)` (0.3 s before the start,
//!   the last bin left out);
//! - `during_mbps`: its median over `[k0 + 20, k0 + 95)` (0.2 to 0.95 s after the start, after
//!   the cross flow's own start-up);
//! - `cross_mbps`: the cross flow's median receiver rate over the same bins;
//! - `other_link_mbps`: the median sent rate over those bins of the other shaped directions
//!   into the same host (where a multipath flow's other paths run);
//! - `to_80pct_ms`: the end of the first bin in `[k0, k0 + 100)` where the rate is at most
//!   `before - 0.8 (before - during)`, in ms after the start bin began (NaN: none).
//!
//! A bin with no link sample (the sampler was late) counts 0 in the medians and `before` in
//! the search.

use super::{Analysis, Run};
use crate::results::FlowResult;
use crate::sampler::Series;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

pub const SHIFT: Analysis = Analysis { name: "shift", compute, table: None };

const BIN_S: f64 = 0.01;
/// The windows, in bins from the cross flow's start bin: `[from, to)`.
const BEFORE: (i64, i64) = (-30, -1);
const DURING: (i64, i64) = (20, 95);
const SEARCH: (i64, i64) = (0, 100);
/// The part of the drop from before to during that counts as shifted.
const SHIFTED: f64 = 0.8;

/// Mbit/s per bin, keyed by bin index since the flows' zero.
type Bins = BTreeMap<i64, f64>;

fn bin(t_s: f64) -> i64 {
    (t_s / BIN_S).floor() as i64
}

/// A link direction's sent rate per bin, from its sampled cumulative byte counter (`lead_s`:
/// how long the sampler ran before the flows' zero).
fn link_bins(s: &Series, lead_s: f64) -> Bins {
    let mut bytes = BTreeMap::<i64, u64>::new();
    for i in 1..s.t.len().min(s.bytes.len()) {
        *bytes.entry(bin(s.t[i] - lead_s)).or_default() +=
            s.bytes[i].saturating_sub(s.bytes[i - 1]);
    }
    bytes.into_iter().map(|(k, b)| (k, b as f64 * 8.0 / BIN_S / 1e6)).collect()
}

/// A receiver's rate series (end of each interval since the zero, Mbit/s) by bin.
fn rate_bins(series: &[(f64, f64)]) -> Bins {
    series.iter().map(|&(t, rate)| (bin(t), rate)).collect()
}

/// One cross flow's windows.
#[derive(Debug, PartialEq)]
struct Shift {
    before_mbps: f64,
    during_mbps: f64,
    cross_mbps: f64,
    other_link_mbps: f64,
    to_80pct_ms: Option<f64>,
}

/// The windows of a cross flow that started at `start_s` on the link of `link` bins, next to
/// `other` (the other links' summed bins).
fn shift(link: &Bins, cross: &Bins, other: &Bins, start_s: f64) -> Shift {
    let k0 = bin(start_s);
    let rest = |k: i64| link.get(&k).map(|l| l - cross.get(&k).copied().unwrap_or(0.0));
    let median = |(from, to): (i64, i64), x: &dyn Fn(i64) -> f64| {
        let xs: Vec<f64> = (k0 + from..k0 + to).map(x).collect();
        mpquic_stats::quantile(&xs, 0.5).unwrap_or(f64::NAN)
    };
    let before_mbps = median(BEFORE, &|k| rest(k).unwrap_or(0.0));
    let during_mbps = median(DURING, &|k| rest(k).unwrap_or(0.0));
    let target = before_mbps - SHIFTED * (before_mbps - during_mbps);
    let to_80pct_ms = (k0 + SEARCH.0..k0 + SEARCH.1)
        .find(|&k| rest(k).unwrap_or(before_mbps) <= target)
        .map(|k| (k - k0 + 1) as f64 * BIN_S * 1e3);
    Shift {
        before_mbps,
        during_mbps,
        cross_mbps: median(DURING, &|k| at(cross, k)),
        other_link_mbps: median(DURING, &|k| at(other, k)),
        to_80pct_ms,
    }
}

/// A bin's rate, 0 where there is none.
fn at(bins: &Bins, k: i64) -> f64 {
    bins.get(&k).copied().unwrap_or(0.0)
}

fn compute(run: &Run, metric: &str, flows: &[usize]) -> f64 {
    let [i] = flows else { return f64::NAN };
    let Some(s) = flow_shift(run, &run.rep.flows[*i]) else { return f64::NAN };
    match metric {
        "before_mbps" => s.before_mbps,
        "during_mbps" => s.during_mbps,
        "cross_mbps" => s.cross_mbps,
        "other_link_mbps" => s.other_link_mbps,
        "to_80pct_ms" => s.to_80pct_ms.unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

/// The windows of flow `f` as a cross flow, if it has a receiver series and a sampled link.
fn flow_shift(run: &Run, f: &FlowResult) -> Option<Shift> {
    if f.throughput.is_empty() {
        return None;
    }
    let server: Ipv4Addr = f.paths.first()?.1.parse().ok()?;
    let bottlenecks = run.net.bottlenecks();
    let crossed = bottlenecks.iter().find(|d| d.to.addrs.contains(&server))?;
    let lead = run.rep.sampler_lead_s;
    let bins = |id: usize| {
        let s = run.series.iter().find(|s| s.link_id == id)?;
        Some(link_bins(s, lead))
    };
    let mut other = Bins::new();
    for d in bottlenecks.iter().filter(|d| d.to.node == crossed.to.node && d.id != crossed.id) {
        for (k, rate) in bins(d.id)? {
            *other.entry(k).or_default() += rate;
        }
    }
    Some(shift(&bins(crossed.id)?, &rate_bins(&f.throughput), &other, f.start_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link sampled every 5 ms (2.5 ms off the bins' edges) by a sampler started 50 ms
    /// before the flows' zero, sending `rate(bin)` Mbit/s in each 10 ms bin of the run.
    fn sampled(rate: impl Fn(i64) -> f64) -> Series {
        let mut s = Series::default();
        let mut bytes = 0u64;
        for i in 0..=800 {
            let t = 0.0025 + i as f64 * 0.005;
            if i > 0 {
                bytes += (rate(bin(t - 0.05)) * 1e6 / 8.0 * 0.005) as u64;
            }
            s.t.push(t);
            s.bytes.push(bytes);
        }
        s
    }

    #[test]
    fn link_bins_are_rates_in_10ms_bins_of_the_run() {
        let bins = link_bins(&sampled(|k| if k < 100 { 40.0 } else { 8.0 }), 0.05);
        assert_eq!(bins[&0], 40.0);
        assert_eq!(bins[&99], 40.0);
        assert_eq!(bins[&100], 8.0);
        assert_eq!(bins.keys().next(), Some(&-5), "the sampler's lead comes first");
    }

    #[test]
    fn shift_reads_the_windows_and_the_first_bin_past_80_percent() {
        // The rest of the link: 50 Mbit/s until bin 100, where the cross flow starts (1.003 s),
        // then 30 (bin 100), 20, 14 (the first at or below 50 - 0.8 x 40 = 18), then 10.
        let rest = |k: i64| match k {
            ..100 => 50.0,
            100 => 30.0,
            101 => 20.0,
            102 => 14.0,
            _ => 10.0,
        };
        let cross: Bins = (100..200).map(|k| (k, 40.0)).collect();
        let link: Bins = (0..300).map(|k| (k, rest(k) + cross.get(&k).unwrap_or(&0.0))).collect();
        let other: Bins = (0..300).map(|k| (k, if k == 150 { 0.0 } else { 49.0 })).collect();
        let s = shift(&link, &cross, &other, 1.003);
        assert_eq!(
            s,
            Shift {
                before_mbps: 50.0,
                during_mbps: 10.0,
                cross_mbps: 40.0,
                other_link_mbps: 49.0,
                to_80pct_ms: Some(30.0),
            }
        );
        // A rest that does not fall has no shifting time.
        let up: Bins = (0..300).map(|k| (k, if k < 100 { 50.0 } else { 60.0 })).collect();
        let s = shift(&up, &Bins::new(), &other, 1.003);
        assert_eq!((s.during_mbps, s.to_80pct_ms), (60.0, None));
        // A bin without a link sample reads as `before` in the search (as the old summary did).
        let mut late = up.clone();
        late.remove(&100);
        assert_eq!(shift(&late, &Bins::new(), &other, 1.003).to_80pct_ms, Some(10.0));
    }

    #[test]
    fn shift_of_a_sampled_link_and_receiver_series() {
        // 50 Mbit/s on the link throughout; the cross flow, started at 1.003 s, receives 40 of
        // them from bin 102 on: the rest drops to 10 in the third bin.
        let series = sampled(|_| 50.0);
        let cross: Vec<(f64, f64)> = (101..200)
            .map(|k| (k as f64 * 0.01 + 0.0095, if k == 101 { 0.0 } else { 40.0 }))
            .collect();
        let s = shift(&link_bins(&series, 0.05), &rate_bins(&cross), &Bins::new(), 1.003);
        assert_eq!((s.before_mbps, s.during_mbps, s.cross_mbps), (50.0, 10.0, 40.0));
        assert_eq!(s.to_80pct_ms, Some(30.0));
    }
}
