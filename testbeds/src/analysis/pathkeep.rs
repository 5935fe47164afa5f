//! `pathkeep`: does every path of a multipath flow stay open and carry data past the CLI's 10 s
//! path idle timeout (docs/results/E7-netns.md, "The 10 s path closure")? Per path of the
//! run's first flow: whether it was open at the end, the bytes the sender reports, the bytes the
//! path's bottleneck sent before and after 10 s, in each half of the transfer and in its last
//! second (from the per-link byte series, so each path needs its own bottleneck), and the
//! packets each end sent on it (both ends' reports).

use super::{Analysis, Row, Run};
use crate::sampler::Series;
use anyhow::{bail, Result};
use serde_json::{json, Value};

const NAME: &str = "pathkeep";

pub const PATHKEEP: Analysis = Analysis {
    name: NAME,
    // No metrics (the shared list declares none), so this is never asked.
    compute: |_, _, _, _| f64::NAN,
    table: Some(rows),
};
/// The CLI's default `--idle-timeout`, which is also each path's idle timeout.
const IDLE_S: f64 = 10.0;

/// One row per path of the run's first flow (an mpquic flow).
fn rows(run: &Run) -> Result<Vec<Row>> {
    let (rep, series) = (run.rep, run.series);
    let Some(flow) = rep.flows.first() else { bail!("{NAME}: the run has no flow") };
    let paths = flow.mpquic.as_ref().and_then(|m| m["paths"].as_array()).cloned();
    let Some(paths) = paths else { bail!("{NAME}: flow {} has no mpquic path report", flow.id) };
    let server = rep.mpquic_server_reports.first().and_then(|r| r["paths"].as_array());
    let lead = rep.sampler_lead_s;
    let (start, end) = (flow.start_s, flow.end_s);
    let (mid, cut) = ((start + end) / 2.0, start + IDLE_S);
    let load = rep.host_loadavg_1min[0];
    let mut rows = Vec::new();
    for p in &paths {
        let remote = p["remote"].as_str().unwrap_or_default();
        let Some(link) = rep.links.iter().find(|l| l.delivers_to(remote)) else {
            bail!("{NAME}: no bottleneck delivers to path {remote:?}")
        };
        let Some(s) = series.iter().find(|s| s.link_id == link.link_id) else {
            bail!("{NAME}: no series of link {}", link.link_id)
        };
        let mb = |lo: f64, hi: f64| sent_between(s, lo + lead, hi + lead) as f64 / 1e6;
        let mbps = |lo: f64, hi: f64| (hi > lo).then(|| mb(lo, hi) * 8.0 / (hi - lo));
        let receiver = server
            .and_then(|ps| ps.iter().find(|sp| sp["id"] == p["id"]))
            .map_or(Value::Null, |sp| sp["packets_sent"].clone());
        rows.push(vec![
            ("path", p["id"].clone()),
            ("link", json!(format!("{}->{}", link.from, link.to))),
            ("open at end", p["open"].clone()),
            ("bytes sent (sender) MB", json!(p["bytes_sent"].as_f64().map(|b| b / 1e6))),
            ("link MB, 0-10 s", json!(mb(start, cut))),
            ("link MB, 10 s-end", json!(mb(cut, end))),
            ("Mbit/s 0-10 s", json!(mbps(start, cut))),
            ("Mbit/s 10 s-end", json!(mbps(cut, end))),
            ("link MB, 1st half", json!(mb(start, mid))),
            ("link MB, 2nd half", json!(mb(mid, end))),
            ("link MB, last 1 s", json!(mb(end - 1.0, end))),
            ("packets sent by the sender", p["packets_sent"].clone()),
            ("packets sent by the receiver", receiver),
            ("FCT s", json!(flow.fct_s)),
            ("host load", json!(load)),
        ]);
    }
    Ok(rows)
}

/// Bytes the link sent between `lo` and `hi` (seconds of the sampler's clock): its cumulative
/// counter at the last sample at or before each.
fn sent_between(s: &Series, lo: f64, hi: f64) -> u64 {
    let at = |x: f64| {
        let i = s.t.partition_point(|t| *t <= x);
        s.bytes.get(i.saturating_sub(1)).copied().unwrap_or(0)
    };
    at(hi).saturating_sub(at(lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_between_two_times_come_from_the_counter_at_or_before_each() {
        let s = Series {
            t: vec![0.0, 1.0, 2.0, 3.0],
            bytes: vec![0, 100, 300, 600],
            ..Default::default()
        };
        assert_eq!(sent_between(&s, 1.0, 3.0), 500);
        assert_eq!(sent_between(&s, 0.5, 2.5), 300, "at 0.5: 0; at 2.5: 300");
        assert_eq!(sent_between(&s, -1.0, 9.0), 600);
        assert_eq!(sent_between(&s, 2.0, 1.0), 0, "an empty window");
    }
}
