//! `shift` (E3, traffic shifting, AMP Fig. 5, 6, 11): how far the traffic already on a link
//! yields when a cross flow arrives there, and how fast; the windows and their definition are
//! shared with the simulator ([`mpquic_scenario::shift`]), the bins are the testbed's.
//!
//! The metric's group names one cross flow with a receiver rate series (kernel TCP: its sink
//! records bytes over time; mpquic: its server's `--received-series`). Its link is the shaped
//! direction that delivers to its server address; the link's rate is the qdisc's sampled byte
//! counter, the other links are the other shaped directions into the same host.

use super::{Analysis, Run};
use crate::results::FlowResult;
use crate::sampler::Series;
use mpquic_scenario::shift::{bin, shift, Bins, Shift, BIN_S};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

pub const SHIFT: Analysis = Analysis { name: "shift", compute, table: None };

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

fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let [i] = flows else { return f64::NAN };
    let Some(s) = flow_shift(run, &run.rep.flows[*i]) else { return f64::NAN };
    s.metric(metric)
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
