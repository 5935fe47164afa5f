//! `pathkeep`: does every path of a multipath flow stay open and carry data past the CLI's 10 s
//! path idle timeout (docs/results/E7-netns.md, "The 10 s path closure")? Per path of the
//! run's first flow (its client's report of each: the testbed's): whether it was open at the
//! end, the bytes the sender reports, the bytes the path's link sent before and after 10 s, in
//! each half of the transfer and in its last second (from the link's sampled byte counter, so
//! each path needs its own link), and the packets each end sent on it.

use serde_json::json;

use crate::record::{LinkSample, PathFacts, Row, Run, RunRecord};

const NAME: &str = "pathkeep";

/// The CLI's default `--idle-timeout`, which is also each path's idle timeout.
const IDLE_S: f64 = 10.0;

/// One row per path of the run's first flow (an mpquic flow).
pub fn rows(run: &Run) -> Result<Vec<Row>, String> {
    let r = run.record;
    let Some(flow) = r.flows.first() else { return Err(format!("{NAME}: the run has no flow")) };
    let Some(paths) = &flow.paths else {
        return Err(format!("{NAME}: flow {} has no mpquic path report", flow.flow));
    };
    let window = Window { start: flow.start_s, end: flow.end_s };
    let rows = paths.iter().map(|p| {
        let mut row = path_row(r, p, &window)?;
        row.push(("FCT s", json!(flow.fct_s)));
        row.push(("host load", json!(r.outcome.host_load_1min)));
        Ok(row)
    });
    rows.collect()
}

/// The flow's transfer on the run's clock, seconds.
struct Window {
    start: f64,
    end: f64,
}

/// A path's row but for the flow's columns.
fn path_row(r: &RunRecord, p: &PathFacts, w: &Window) -> Result<Row, String> {
    let Some(link) = p.last_link.as_deref() else {
        return Err(format!("{NAME}: no bottleneck delivers to path {}", p.id));
    };
    let s = r.link_series(link).map_or(&[][..], |l| &l.samples[..]);
    if s.is_empty() {
        return Err(format!("{NAME}: no series of link {link}"));
    }
    let (mid, cut) = ((w.start + w.end) / 2.0, w.start + IDLE_S);
    let mb = |lo: f64, hi: f64| sent_between(s, lo, hi) as f64 / 1e6;
    let mbps = |lo: f64, hi: f64| (hi > lo).then(|| mb(lo, hi) * 8.0 / (hi - lo));
    Ok(vec![
        ("path", json!(p.id)),
        ("link", json!(link)),
        ("open at end", json!(p.open_at_end)),
        ("bytes sent (sender) MB", json!(p.bytes_sent.map(|b| b / 1e6))),
        ("link MB, 0-10 s", json!(mb(w.start, cut))),
        ("link MB, 10 s-end", json!(mb(cut, w.end))),
        ("Mbit/s 0-10 s", json!(mbps(w.start, cut))),
        ("Mbit/s 10 s-end", json!(mbps(cut, w.end))),
        ("link MB, 1st half", json!(mb(w.start, mid))),
        ("link MB, 2nd half", json!(mb(mid, w.end))),
        ("link MB, last 1 s", json!(mb(w.end - 1.0, w.end))),
        ("packets sent by the sender", json!(p.packets_sent)),
        ("packets sent by the receiver", json!(p.peer_packets_sent)),
    ])
}

/// Bytes the link sent between `lo` and `hi` (seconds of the run): its cumulative counter at
/// the last sample at or before each.
fn sent_between(s: &[LinkSample], lo: f64, hi: f64) -> u64 {
    let at = |x: f64| {
        let i = s.partition_point(|k| k.t_s <= x);
        i.checked_sub(1).and_then(|i| s[i].sent_bytes).unwrap_or(0)
    };
    at(hi).saturating_sub(at(lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_between_two_times_come_from_the_counter_at_or_before_each() {
        let s: Vec<LinkSample> = [(0.0, 0), (1.0, 100), (2.0, 300), (3.0, 600)]
            .map(|(t_s, b)| LinkSample { t_s, queue_pkts: 0.0, sent_bytes: Some(b) })
            .to_vec();
        assert_eq!(sent_between(&s, 1.0, 3.0), 500);
        assert_eq!(sent_between(&s, 0.5, 2.5), 300, "at 0.5: 0; at 2.5: 300");
        assert_eq!(sent_between(&s, -1.0, 9.0), 600);
        assert_eq!(sent_between(&s, 2.0, 1.0), 0, "an empty window");
    }
}
