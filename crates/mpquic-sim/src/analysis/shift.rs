//! `shift`, the testbed's E3 statistic, from the simulator's record: the windows of
//! [`mpquic_scenario::shift`] over the link into the cross flow's server address (the metric's
//! group names the one cross flow), with the link's wire bytes and the cross flow's delivered
//! bytes per bucket of `output.goodput_interval` summed into 10 ms bins, and the other links
//! into the same host as the other links. The windows assume phases of about 1 s (the rest's
//! `during` ends 0.95 s after the start).

use mpquic_scenario::shift::{bin, shift, Bins, Shift, BIN_S};

use super::{Analysis, Run};
use crate::net::Ps;
use crate::Sim;

pub const SHIFT: Analysis = Analysis { name: "shift", compute, panel: None };

fn compute(run: &Run, metric: &str, _: Option<&str>, flows: &[usize]) -> f64 {
    let [cross] = flows else { return f64::NAN };
    let Some(s) = flow_shift(run.sim, *cross) else { return f64::NAN };
    s.metric(metric)
}

/// Bytes per bucket of width `bucket` as Mbit/s per 10 ms bin, every bin of the run present.
fn bins(bytes: &[u64], bucket: Ps, end: Ps) -> Bins {
    let mut out: Bins = (0..=bin(end as f64 / 1e12)).map(|k| (k, 0.0)).collect();
    for (i, b) in bytes.iter().enumerate() {
        let rate = *b as f64 * 8.0 / BIN_S / 1e6;
        *out.entry(bin((i as Ps * bucket) as f64 / 1e12)).or_default() += rate;
    }
    out
}

fn flow_shift(sim: &Sim, cross: usize) -> Option<Shift> {
    let f = &sim.flows[cross];
    let server = super::host_addrs(sim, &f.spec.to);
    let into = sim.link_into(*server.get(f.spec.to_addr % server.len().max(1))?)?;
    let link = sim.links.iter().find(|l| l.params.name == into)?;
    let bucket = sim.scenario.output.goodput_interval.0.max(1);
    let end = sim.scenario.duration.0;
    let mut other = Bins::new();
    let others = sim.links.iter().filter(|l| l.params.to == link.params.to);
    for l in others.filter(|l| l.params.name != into) {
        for (k, rate) in bins(&l.stats.bytes_series, bucket, end) {
            *other.entry(k).or_default() += rate;
        }
    }
    let link_bins = bins(&link.stats.bytes_series, bucket, end);
    let cross_bins = bins(&f.progress.delivered, bucket, end);
    Some(shift(&link_bins, &cross_bins, &other, f.spec.start.secs()))
}
