//! What one run of a sweep point with one seed yields, whatever the backend ran it: a
//! [`RunRecord`]. Each backend converts what it collected (the simulator its finished
//! simulation, the testbed its `result.json` and sampled series) into one, so that the metrics
//! and the experiment's output read the same thing from either. The analyses
//! ([`crate::analyses`]) are computed from it once for both; where the backends measure
//! differently (the simulator's exact buckets against the testbed's samples), the difference is
//! in the data a backend fills, stated at each field, not in two computations.

use mpquic_choice::PathClose;
use serde::{Deserialize, Serialize};

use crate::metrics::Outcome;
use crate::model::Scenario;
use crate::units::Dur;

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
    /// Per flow, what the analyses read of it beyond its outcome, in the backend's flow order
    /// (the order the analyses' flow indices are into).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowFacts>,
    /// The partition-aggregate aggregators, where the backend runs them as processes of their
    /// own (the testbed; the simulator's jobs are flows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregators: Vec<AggregatorFacts>,
    /// The factor the backend ran the file's times at (the testbed's `[netns] time_scale`);
    /// None: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<f64>,
}

/// What the analyses read of one flow beyond its outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowFacts {
    /// The flow's name (as in the outcome).
    pub flow: String,
    /// Its group.
    pub group: Option<String>,
    /// Its start as the point's flows are expanded from the file (the file's clock, before the
    /// testbed's `time_scale`).
    #[serde(skip)]
    pub start: Dur,
    /// Its stop on the same clock, if it has one.
    #[serde(skip)]
    pub stop: Option<Dur>,
    /// When it started on the run's clock, seconds (the testbed: when its process started).
    pub start_s: f64,
    /// When it ended on the run's clock, seconds (completed or stopped).
    pub end_s: f64,
    /// Its completion time, seconds, if it completed.
    pub fct_s: Option<f64>,
    /// Whether its path openings are in [`RunRecord::path_events`] (false: the testbed's
    /// kernel MPTCP flows, whose subflows are not recorded).
    pub openings_recorded: bool,
    /// The paths its client's coupled controller (mpquic-cc) lets carry new data at the end;
    /// None without such a controller.
    pub active_paths_end: Option<usize>,
    /// The link (`from->to`) into the server address its first path reaches, where the
    /// backend knows it (the simulator: every flow; the testbed: the shaped direction that
    /// delivers to the address its plan gives).
    pub into_link: Option<String>,
    /// Its paths, where the backend has a report of each (the simulator: its expanded paths;
    /// the testbed: an mpquic client's report at the end of its transfer).
    pub paths: Option<Vec<PathFacts>>,
}

/// One path of a flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathFacts {
    /// Its number in its connection.
    pub id: u64,
    /// The link its packets leave the client's host on, where the backend knows it (the
    /// simulator).
    pub first_link: Option<String>,
    /// The link into the server address it reaches.
    pub last_link: Option<String>,
    /// Whether it was open at the end (the testbed's report).
    pub open_at_end: Option<bool>,
    /// Bytes its sender reports sending on it.
    pub bytes_sent: Option<f64>,
    /// Packets its sender (the client) sent on it.
    pub packets_sent: Option<u64>,
    /// Packets the other end (the server) sent on it.
    pub peer_packets_sent: Option<u64>,
}

/// A partition-aggregate aggregator run as a process of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregatorFacts {
    /// The link into its host, where the answers queue.
    pub into_link: Option<String>,
    /// When it exited on the run's clock, seconds (when its last job ended).
    pub end_s: f64,
    /// Its connections' set-up (concurrent handshakes), seconds, if it reported it.
    pub connect_s: Option<f64>,
    /// Its jobs, as it reports them.
    pub jobs: Vec<JobFacts>,
}

/// One job of an aggregator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JobFacts {
    /// Its start since the aggregator's zero (after its start-up and handshakes), seconds.
    pub start_s: f64,
    /// Its completion time, seconds; None: an answer failed.
    pub jct_s: Option<f64>,
    /// Its answers' bytes.
    pub answer_bytes: u64,
}

/// One flow's goodput series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSeries {
    /// The flow's name (as in the outcome).
    pub flow: String,
    /// (seconds since the run's start, bits per second), in time order.
    pub goodput: Vec<(f64, f64)>,
    /// Where each point's interval lies. Some(width): the point's time is its interval's start
    /// and every interval is `width` seconds (the simulator's buckets of
    /// `output.goodput_interval`); None: its time is its interval's end, which began at the
    /// previous point (a receiver's rate series on the testbed; the first point's interval is
    /// not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
}

/// One link direction's sampled series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSeries {
    /// `from->to`, as in the outcome.
    pub link: String,
    /// Samples in time order.
    pub samples: Vec<LinkSample>,
    /// Bytes it sent per interval, in time order, each stamped with the time the backend puts
    /// them at: the simulator a bucket's start (every bucket of `output.goodput_interval` from
    /// 0 to the run's end, empty ones too), the testbed the sample that closes the interval
    /// (the bytes its counter grew by since the previous sample; sampled directions only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<(f64, u64)>,
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

    /// The factor the backend ran the file's times at (1 unless the testbed scaled them).
    pub fn time_scale(&self) -> f64 {
        self.time_scale.unwrap_or(1.0)
    }

    /// The link directions that deliver to node `to`.
    pub fn links_into<'a>(&'a self, to: &'a str) -> impl Iterator<Item = &'a LinkSeries> + 'a {
        self.link_series.iter().filter(move |l| l.to() == to)
    }

    /// The path events of flow `name`, in order.
    pub fn path_events<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a PathEvent> + 'a {
        self.path_events.iter().filter(move |e| e.flow == name)
    }
}

impl LinkSeries {
    /// The node it delivers to: what follows `->` in its name.
    pub fn to(&self) -> &str {
        self.link.rsplit_once("->").map_or("", |(_, to)| to)
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

/// What an analysis ([`crate::analyses`]) reads of one run: the record and the scenarios it
/// ran. Here, with the record, so that each analysis module and the table of analyses import it
/// from below rather than from each other.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The run's record.
    pub record: &'a RunRecord,
    /// The point's scenario (its sweep values applied; the testbed's `[netns] set` too).
    pub point: &'a Scenario,
    /// The experiment file's scenario as written (before the sweep).
    pub file: &'a Scenario,
}

/// One metric (`metric`, with its `[selector]`) of a run over the given flows (indices into
/// [`RunRecord::flows`]); NaN where it cannot say.
pub type Compute = fn(&Run, &str, Option<&str>, &[usize]) -> f64;

/// One row of an analysis's table: (column, value) in column order.
pub type Row = Vec<(&'static str, serde_json::Value)>;

/// An analysis's rows of one run (every row has the same columns), or why there are none.
pub type Rows = fn(&Run) -> Result<Vec<Row>, String>;

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
        let goodput = vec![(0.0, 1e6)];
        r.flow_series.push(FlowSeries { flow: "a".into(), goodput, interval_s: None });
        let sample = LinkSample { t_s: -0.1, queue_pkts: 3.0, sent_bytes: Some(1500) };
        let samples = vec![sample];
        r.link_series.push(LinkSeries { link: "s->d".into(), samples, sent: vec![] });
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
