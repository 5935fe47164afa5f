//! What one run of a sweep point with one seed yields, whatever the backend ran it: a
//! [`RunRecord`]. Each backend converts what it collected (the simulator its finished
//! simulation, the testbed its `result.json` and sampled series) into one, so that the metrics
//! and the experiment's output read the same thing from either.

use mpquic::PathClose;
use serde::{Deserialize, Serialize};

use crate::metrics::Outcome;

/// One (point, seed) run, in the backends' common terms.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunRecord {
    /// The per-flow and per-link results the report's metrics are computed from.
    pub outcome: Outcome,
    /// Per flow, its goodput over time, where the backend measures it (the simulator: bytes
    /// delivered to the application per `output.goodput_interval`; the testbed: the
    /// receiver's rate series).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_series: Vec<FlowSeries>,
    /// Per link direction, its queue and sent bytes over time, where the backend samples them
    /// (the simulator: its monitored links; the testbed: its shaped directions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_series: Vec<LinkSeries>,
    /// The clients' paths opening and closing, in each flow's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_events: Vec<PathEvent>,
}

/// One flow's goodput series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSeries {
    /// The flow's name (as in the outcome).
    pub flow: String,
    /// (seconds since the run's start, bits per second), in time order.
    pub goodput: Vec<(f64, f64)>,
}

/// One link direction's sampled series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSeries {
    /// `from->to`, as in the outcome.
    pub link: String,
    /// Samples in time order.
    pub samples: Vec<LinkSample>,
}

/// One sample of a link direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSample {
    /// Seconds since the run's start (the testbed's sampler starts before the flows: its
    /// first samples are negative).
    pub t_s: f64,
    /// Its queue, packets (the testbed: 1514-byte frames of its byte backlog).
    pub queue_pkts: f64,
    /// Bytes it sent up to this sample, where the backend counts them per sample.
    pub sent_bytes: Option<u64>,
}

/// A client path opening or closing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathEvent {
    /// The flow's name.
    pub flow: String,
    /// The path's number in its connection.
    pub path: u64,
    /// When, seconds since the run's start, where the backend knows it.
    pub t_s: Option<f64>,
    /// What happened.
    pub kind: PathEventKind,
}

/// What happened to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathEventKind {
    /// It was validated and could carry data.
    Opened,
    /// It closed, or its controller eliminated it, for this reason.
    Closed(PathClose),
}

impl RunRecord {
    /// A record of just an outcome (a backend with no series to add).
    pub fn of(outcome: Outcome) -> RunRecord {
        RunRecord { outcome, ..RunRecord::default() }
    }

    /// The series of flow `name`, if the backend measured one.
    pub fn flow_series(&self, name: &str) -> Option<&FlowSeries> {
        self.flow_series.iter().find(|s| s.flow == name)
    }

    /// The series of link direction `name` (`from->to`), if the backend sampled one.
    pub fn link_series(&self, name: &str) -> Option<&LinkSeries> {
        self.link_series.iter().find(|s| s.link == name)
    }

    /// The path events of flow `name`, in order.
    pub fn path_events<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a PathEvent> + 'a {
        self.path_events.iter().filter(move |e| e.flow == name)
    }
}

/// The events a client's final path list says: each path (its number, its close reason) that
/// closed or was eliminated, with its reason; `t_s` unknown. For a backend that has only the
/// end state of its paths.
pub fn closed_at_end(
    flow: &str,
    paths: impl IntoIterator<Item = (u64, Option<PathClose>)>,
) -> Vec<PathEvent> {
    paths
        .into_iter()
        .filter_map(|(path, reason)| {
            reason.map(|reason| PathEvent {
                flow: flow.to_string(),
                path,
                t_s: None,
                kind: PathEventKind::Closed(reason),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_at_end_lists_closed_and_eliminated_paths_only() {
        let paths =
            [(0, None), (1, Some(PathClose::Eliminated)), (2, Some(PathClose::IdleTimeout))];
        let events = closed_at_end("f", paths);
        let got: Vec<(u64, PathEventKind)> = events.iter().map(|e| (e.path, e.kind)).collect();
        assert_eq!(
            got,
            [
                (1, PathEventKind::Closed(PathClose::Eliminated)),
                (2, PathEventKind::Closed(PathClose::IdleTimeout))
            ]
        );
    }

    #[test]
    fn a_record_round_trips_through_json() {
        let mut r = RunRecord::of(Outcome { duration_s: 2.0, ..Outcome::default() });
        r.flow_series.push(FlowSeries { flow: "a".into(), goodput: vec![(0.0, 1e6)] });
        let sample = LinkSample { t_s: -0.1, queue_pkts: 3.0, sent_bytes: Some(1500) };
        r.link_series.push(LinkSeries { link: "s->d".into(), samples: vec![sample] });
        r.path_events.push(PathEvent {
            flow: "a".into(),
            path: 1,
            t_s: Some(0.5),
            kind: PathEventKind::Opened,
        });
        let back: RunRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.flow_series("a"), r.flow_series("a"));
        assert_eq!(back.link_series("s->d"), r.link_series("s->d"));
        assert_eq!(back.path_events("a").count(), 1);
        assert_eq!(back.outcome.duration_s, 2.0);
    }
}
