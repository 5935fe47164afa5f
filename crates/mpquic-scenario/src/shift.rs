//! The `shift` analysis (E3, traffic shifting, AMP Fig. 5, 6, 11), one statistic for both
//! backends: how far the traffic already on a link yields when a cross flow arrives there, and
//! how fast. The metric's group names one cross flow with a goodput series; its link is the
//! one into the server address its first path reaches ([`FlowFacts::into_link`]), the other
//! links are those into the same node. The link's bytes per interval
//! ([`LinkSeries::sent`]) and the cross flow's goodput points are put in 10 ms bins since the
//! flows' zero by the time each carries (a bin's link rate: its bytes over the bin; its cross
//! rate: the mean of its points' rates), in Mbit/s. Which time that is differs in the data,
//! not here: the simulator stamps a bucket's start and has every bucket to the run's end, the
//! testbed stamps the sample or receiver point that closes an interval and has bins only
//! where its sampler took samples. The rest of the link is the link's sent rate minus the
//! cross flow's receiver rate. With `k0` the bin of the cross flow's start:
//!
//! - `before_mbps`: median of the rest over bins `[k0 - 30, k0 - 1)` (0.3 s before the start,
//!   the last bin left out);
//! - `during_mbps`: its median over `[k0 + 20, k0 + 95)` (0.2 to 0.95 s after the start, after
//!   the cross flow's own start-up);
//! - `cross_mbps`: the cross flow's median receiver rate over the same bins;
//! - `other_link_mbps`: the median sent rate over those bins of the other links into the same
//!   host (where a multipath flow's other paths run);
//! - `to_80pct_ms`: the end of the first bin in `[k0, k0 + 100)` where the rest is at most
//!   `before - 0.8 (before - during)`, in ms after the start bin began (None: none).
//!
//! A bin with no link sample (the testbed's sampler was late) counts 0 in the medians and
//! `before` in the search.

use std::collections::BTreeMap;

use crate::record::{FlowSeries, Run, RunRecord};

/// The width of a bin, seconds.
pub const BIN_S: f64 = 0.01;
/// The windows, in bins from the cross flow's start bin: `[from, to)`.
const BEFORE: (i64, i64) = (-30, -1);
const DURING: (i64, i64) = (20, 95);
const SEARCH: (i64, i64) = (0, 100);
/// The part of the drop from before to during that counts as shifted.
const SHIFTED: f64 = 0.8;

/// Mbit/s per bin, keyed by bin index since the flows' zero.
pub type Bins = BTreeMap<i64, f64>;

/// The bin of time `t_s` (seconds since the flows' zero).
pub fn bin(t_s: f64) -> i64 {
    (t_s / BIN_S).floor() as i64
}

/// One cross flow's windows.
#[derive(Debug, PartialEq)]
pub struct Shift {
    /// The rest's median rate before the start, Mbit/s.
    pub before_mbps: f64,
    /// Its median 0.2-0.95 s after the start, Mbit/s.
    pub during_mbps: f64,
    /// The cross flow's median receiver rate then, Mbit/s.
    pub cross_mbps: f64,
    /// The other links' median sent rate then, Mbit/s.
    pub other_link_mbps: f64,
    /// Until the rest fell by 80% of before - during, ms.
    pub to_80pct_ms: Option<f64>,
}

impl Shift {
    /// The `shift` analysis's metric of that name (declared in [`crate::analyses`]); NaN for
    /// none or a name it does not have.
    pub fn metric(&self, name: &str) -> f64 {
        match name {
            "before_mbps" => self.before_mbps,
            "during_mbps" => self.during_mbps,
            "cross_mbps" => self.cross_mbps,
            "other_link_mbps" => self.other_link_mbps,
            "to_80pct_ms" => self.to_80pct_ms.unwrap_or(f64::NAN),
            _ => f64::NAN,
        }
    }
}

/// The windows of a cross flow that started at `start_s` on the link of `link` bins, next to
/// `other` (the other links' summed bins).
pub fn shift(link: &Bins, cross: &Bins, other: &Bins, start_s: f64) -> Shift {
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

/// The `shift` metric `metric` of the run, its flows being the one cross flow.
pub fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let [cross] = flows else { return f64::NAN };
    run_shift(run.record, *cross).map_or(f64::NAN, |s| s.metric(metric))
}

/// The windows of flow `cross` as a cross flow, if it has a goodput series and its link
/// bytes per interval.
fn run_shift(r: &RunRecord, cross: usize) -> Option<Shift> {
    let f = r.flows.get(cross)?;
    let series = r.flow_series(&f.flow).filter(|s| !s.goodput.is_empty())?;
    let link = r.link_series(f.into_link.as_deref()?).filter(|l| !l.sent.is_empty())?;
    let mut other = Bins::new();
    for l in r.links_into(link.to()).filter(|l| l.link != link.link) {
        for (k, rate) in sent_bins(&l.sent) {
            *other.entry(k).or_default() += rate;
        }
    }
    Some(shift(&sent_bins(&link.sent), &rate_bins(series), &other, f.start_s))
}

/// Bytes per interval (stamped) as Mbit/s per 10 ms bin, the bins of the stamps present.
pub fn sent_bins(sent: &[(f64, u64)]) -> Bins {
    let mut bytes = BTreeMap::<i64, u64>::new();
    for &(t, b) in sent {
        *bytes.entry(bin(t)).or_default() += b;
    }
    bytes.into_iter().map(|(k, b)| (k, b as f64 * 8.0 / BIN_S / 1e6)).collect()
}

/// A goodput series by bin: the mean of the rates of the points stamped in each, Mbit/s.
pub fn rate_bins(series: &FlowSeries) -> Bins {
    let mut sums = BTreeMap::<i64, (f64, u32)>::new();
    for &(t, bps) in &series.goodput {
        let (sum, n) = sums.entry(bin(t)).or_default();
        *sum += bps / 1e6;
        *n += 1;
    }
    sums.into_iter().map(|(k, (sum, n))| (k, sum / f64::from(n))).collect()
}

/// A bin's rate, 0 where there is none.
fn at(bins: &Bins, k: i64) -> f64 {
    bins.get(&k).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{FlowFacts, LinkSeries};

    #[test]
    fn sent_bytes_and_goodput_points_fall_in_the_bins_of_their_stamps() {
        // 12500 bytes in a 10 ms bin are 10 Mbit/s; two stamps in a bin add up.
        let sent = [(0.001, 6250), (0.009, 6250), (0.0125, 25_000)];
        let bins = sent_bins(&sent);
        assert_eq!((bins[&0], bins[&1]), (10.0, 20.0));
        // Goodput points: the mean of those in a bin.
        let goodput = vec![(0.0, 10e6), (0.005, 30e6), (0.019, 5e6)];
        let bins = rate_bins(&FlowSeries { flow: "c".into(), goodput, interval_s: None });
        assert_eq!((bins[&0], bins[&1]), (20.0, 5.0));
    }

    #[test]
    fn a_run_s_shift_reads_the_cross_flow_s_link_and_the_other_links_into_its_node() {
        // 50 Mbit/s on r1->d throughout (62500 bytes per 10 ms, stamped at each bin's end as
        // the testbed does), 30 on r2->d; the cross flow, started at 1.003 s, receives 40 from
        // bin 102 on.
        let link = |name: &str, bytes: u64| LinkSeries {
            link: name.into(),
            samples: vec![],
            sent: (1..=300).map(|k| (k as f64 * 0.01 + 0.0001, bytes)).collect(),
        };
        let goodput = (101..200).map(|k| (k as f64 * 0.01 + 0.0095, 40e6 * f64::from(k > 101)));
        let mut r = RunRecord {
            link_series: vec![link("r1->d", 62_500), link("r2->d", 37_500), link("d->r1", 9)],
            ..RunRecord::default()
        };
        let goodput = goodput.collect();
        r.flow_series.push(FlowSeries { flow: "x".into(), goodput, interval_s: None });
        let into_link = Some("r1->d".to_string());
        r.flows.push(FlowFacts {
            flow: "x".into(),
            start_s: 1.003,
            into_link,
            ..Default::default()
        });
        let s = run_shift(&r, 0).unwrap();
        assert_eq!((s.before_mbps, s.during_mbps, s.cross_mbps), (50.0, 10.0, 40.0));
        assert_eq!(s.other_link_mbps, 30.0, "d->r1 goes the other way");
        assert_eq!(s.to_80pct_ms, Some(30.0));
        r.flow_series.clear();
        assert_eq!(run_shift(&r, 0), None, "no goodput series");
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
}
