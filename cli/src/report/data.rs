//! `data.json`: the plotted series and episodes, machine-readable (what the plots are drawn from).

use serde_json::{json, Value};

use mpquic::mpquic_cc::ReductionCause;

use super::connection::Connection;
use super::series::Series;
use super::Run;

fn series(s: &Series) -> Value {
    let buckets: Vec<Value> = s
        .buckets()
        .map(|(start, b)| {
            json!({
                "start": start, "t_first": b.t_first, "t_last": b.t_last, "min": b.min,
                "max": b.max, "last": b.last, "sum": b.sum, "count": b.count,
            })
        })
        .collect();
    json!({ "width_ms": s.width(), "buckets": buckets })
}

fn connection(c: &Connection) -> Value {
    let paths: serde_json::Map<String, Value> = c
        .paths
        .iter()
        .map(|(id, p)| {
            let mut reductions = serde_json::Map::new();
            for (cause, s) in ReductionCause::ALL.iter().zip(&p.reductions) {
                reductions.insert(cause.name().to_owned(), series(s));
            }
            let v = json!({
                "cwnd": series(&p.cwnd),
                "bytes_in_flight": series(&p.bytes_in_flight),
                "smoothed_rtt": series(&p.srtt),
                "min_rtt": series(&p.min_rtt),
                "sent_bytes": series(&p.sent),
                "ce_marks": series(&p.ce),
                "alpha": series(&p.alpha),
                "window_reductions": reductions,
            });
            (id.to_string(), v)
        })
        .collect();
    json!({
        "file": c.file.display().to_string(),
        "title": c.header.title,
        "group_id": c.header.group_id,
        "vantage": c.header.vantage,
        "config": c.config,
        "summary": c.summary(),
        "events": c.events,
        "end_time_ms": c.end_time,
        "partial": c.partial.as_ref().map(|p| json!({
            "line": p.line, "offset": p.offset, "last_time_ms": p.last_time
        })),
        "losses": series(&c.losses),
        "episodes": c.episodes,
        "episodes_dropped": c.episodes_dropped,
        "warnings": c.warnings,
        "paths": paths,
    })
}

/// The whole report's data.
pub fn report(runs: &[Run]) -> Value {
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "label": r.label,
                "connections": r.connections.iter().map(connection).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "runs": runs })
}
