//! Live measures of every connection, for a service to scrape.
//!
//! With [`Options::metrics`](crate::Options) set to an interval, each connection
//! samples its [`ConnectionReport`] that often and reports it through the `metrics` crate's
//! facade; the program installs the recorder it wants (the `mpquic` tool's `serve --metrics`
//! installs `metrics-exporter-prometheus`, which serves Prometheus text over HTTP). Without the
//! option, the default, no sampler runs: the library's only work for metrics is then to keep the
//! bytes-in-flight figure that noq hands the controller at the end of each ACK batch (one store
//! under a lock already held), and without an installed recorder the facade drops what it is
//! given.
//!
//! Why the `metrics` facade rather than OpenTelemetry: it is a facade in the manner of `log`, so
//! the library decides nothing about exporting (Prometheus, StatsD or an OpenTelemetry bridge are
//! the program's choice of recorder), it brings no runtime or exporter into the library's
//! dependencies, and a service that embeds QUIC already wires it that way. OpenTelemetry's SDK
//! would tie every user to its pipeline and its versions.
//!
//! Labels are bounded: nothing names a connection or a remote address. Per-path series carry
//! `path`, the path's number within its connection (`"0"` to `"15"`, and `"16+"` for the
//! paths a long-lived connection opens after many failovers), so a server's series are sums over
//! its connections: counters add up, and gauges (windows, bytes in flight, rates) are each
//! connection's contribution, taken back out when it ends. A counter moves at each sample and
//! once more when the connection closes (implicitly too, by being dropped): the byte and packet
//! counters then hold every path's totals at the close.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `mpquic_connections` | gauge | | connections open |
//! | `mpquic_connections_opened_total` | counter | | connections opened |
//! | `mpquic_paths` | gauge | `state` | open paths: `active` (carry data), `inactive` (the controller keeps them from data: AMP suppression, MPTCP-D elimination), `backup` |
//! | `mpquic_paths_closed_total` | counter | `reason` | paths closed, by [`crate::PathClose`] (`failed`, `idle_timeout`, ...) |
//! | `mpquic_failovers_total` | counter | `event` | `path_failed`, `path_recovered` |
//! | `mpquic_suppressions_total` | counter | | AMP suppression episodes |
//! | `mpquic_releases_total` | counter | | AMP releases |
//! | `mpquic_eliminations_total` | counter | | MPTCP-D eliminations |
//! | `mpquic_path_sent_bytes_total` | counter | `path` | QUIC bytes sent |
//! | `mpquic_path_received_bytes_total` | counter | `path` | UDP payload bytes received |
//! | `mpquic_path_sent_packets_total` | counter | `path` | packets sent |
//! | `mpquic_path_lost_packets_total` | counter | `path` | packets declared lost |
//! | `mpquic_path_ce_marked_packets_total` | counter | `path` | CE-marked packets (coupled controllers) |
//! | `mpquic_path_inactive_milliseconds_total` | counter | `path` | time the controller kept the path from data |
//! | `mpquic_path_send_rate_bytes_per_second` | gauge | `path` | bytes sent per second over the last interval |
//! | `mpquic_path_cwnd_bytes` | gauge | `path` | congestion window |
//! | `mpquic_path_in_flight_bytes` | gauge | `path` | bytes in flight (coupled controllers) |
//! | `mpquic_path_rtt_seconds` | histogram | `path` | smoothed RTT, one observation per path per interval |

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use ::metrics::{counter, gauge, histogram, Label};

use noq::PathStats;

use crate::connection::{ConnectionReport, PathReport};

/// Path numbers from this one on share one label, so that the series stay bounded.
const PATH_LABELS: u32 = 16;

/// The per-path counter of bytes sent, which the send rate is also computed from.
const SENT_BYTES: &str = "mpquic_path_sent_bytes_total";

/// The per-path traffic counters, in the order (bytes sent, bytes received, packets sent,
/// packets lost): what each sample and the connection's close both move to the path's totals.
const TRAFFIC_COUNTERS: [&str; 4] = [
    SENT_BYTES,
    "mpquic_path_received_bytes_total",
    "mpquic_path_sent_packets_total",
    "mpquic_path_lost_packets_total",
];

/// One series: its name and labels.
type Series = (&'static str, Vec<Label>);

/// The `path` label of path number `id`.
fn path_label(id: u32) -> Label {
    let value = if id < PATH_LABELS { id.to_string() } else { format!("{PATH_LABELS}+") };
    Label::new("path", value)
}

/// What one open path is doing, as `mpquic_paths` counts it.
fn path_state(path: &PathReport) -> &'static str {
    match (path.status, path.active) {
        (noq::PathStatus::Backup, _) => "backup",
        (_, true) => "active",
        (_, false) => "inactive",
    }
}

/// One connection's reporter: turns its successive reports into counter increments and its
/// share of the summed gauges.
pub(crate) struct Reporter {
    /// What this connection adds to each gauge, to move by the difference at the next sample
    /// and to take back out at the end.
    gauges: HashMap<Series, f64>,
    /// Counter totals already reported, by series and path number (not label: paths beyond
    /// [`PATH_LABELS`] share a label but count separately).
    counted: HashMap<(&'static str, Option<u32>), u64>,
    /// Failover events and closed paths already counted.
    failovers_seen: usize,
    closed_seen: BTreeSet<u32>,
    /// When the previous sample was taken, for the send rate.
    last_sample: Option<Instant>,
}

impl Reporter {
    /// A reporter for a connection that has just been established.
    pub(crate) fn new() -> Self {
        counter!("mpquic_connections_opened_total").increment(1);
        gauge!("mpquic_connections").increment(1.0);
        Reporter {
            gauges: HashMap::new(),
            counted: HashMap::new(),
            failovers_seen: 0,
            closed_seen: BTreeSet::new(),
            last_sample: None,
        }
    }

    /// Report one sample of the connection: its report and each open path's bytes in flight.
    pub(crate) fn record(&mut self, report: &ConnectionReport, in_flight: &BTreeMap<u32, u64>) {
        let now = Instant::now();
        let elapsed = self.last_sample.map(|t| now.saturating_duration_since(t).as_secs_f64());
        let mut gauges = HashMap::new();
        for path in &report.paths {
            let rate = elapsed.filter(|&s| s > 0.0).map(|s| {
                let before = self.counted.get(&(SENT_BYTES, Some(path.id)));
                path.bytes_sent.saturating_sub(before.copied().unwrap_or(0)) as f64 / s
            });
            self.count_path(path);
            if path.open {
                self.path_gauges(&mut gauges, path, rate, in_flight.get(&path.id).copied());
            } else {
                self.count_closed(path);
            }
        }
        self.count_connection(report);
        self.set_gauges(gauges);
        self.last_sample = Some(now);
    }

    /// The connection's last word: each path's byte and packet totals at its close, so that
    /// the counters end where the connection did (CE marks and inactive time, which the
    /// controller keeps, stay at their last sample).
    pub(crate) fn record_final<'a>(&mut self, paths: impl Iterator<Item = (u32, &'a PathStats)>) {
        for (id, stats) in paths {
            let totals =
                [stats.sent_bytes, stats.udp_rx.bytes, stats.sent_packets, stats.lost_packets];
            for (name, total) in TRAFFIC_COUNTERS.into_iter().zip(totals) {
                self.count_for_path(name, id, total);
            }
        }
    }

    /// The per-path counters, moved to the path's totals.
    fn count_path(&mut self, path: &PathReport) {
        let traffic = [path.bytes_sent, path.bytes_received, path.packets_sent, path.lost_packets];
        let controller = [
            ("mpquic_path_ce_marked_packets_total", path.ce_marked),
            ("mpquic_path_inactive_milliseconds_total", Some(path.inactive_ms as u64)),
        ];
        let traffic = TRAFFIC_COUNTERS.into_iter().zip(traffic.map(Some));
        for (name, total) in traffic.chain(controller) {
            if let Some(total) = total {
                self.count_for_path(name, path.id, total);
            }
        }
    }

    /// A path's contribution to the per-path gauges and the path count, and its RTT.
    fn path_gauges(
        &self,
        gauges: &mut HashMap<Series, f64>,
        path: &PathReport,
        rate: Option<f64>,
        in_flight: Option<u64>,
    ) {
        let label = path_label(path.id);
        let mut add = |name, labels: Vec<Label>, value: f64| {
            *gauges.entry((name, labels)).or_insert(0.0) += value;
        };
        add("mpquic_paths", vec![Label::new("state", path_state(path))], 1.0);
        add("mpquic_path_cwnd_bytes", vec![label.clone()], path.cwnd as f64);
        if let Some(rate) = rate {
            add("mpquic_path_send_rate_bytes_per_second", vec![label.clone()], rate);
        }
        if let Some(bytes) = in_flight {
            add("mpquic_path_in_flight_bytes", vec![label.clone()], bytes as f64);
        }
        if path.rtt_smoothed_ms > 0.0 {
            histogram!("mpquic_path_rtt_seconds", vec![label]).record(path.rtt_smoothed_ms / 1e3);
        }
    }

    /// A closed path counts once, by why it was closed.
    fn count_closed(&mut self, path: &PathReport) {
        let Some(reason) = path.close_reason else { return };
        if self.closed_seen.insert(path.id) {
            let reason = serde_json::to_value(reason).ok();
            let reason = reason.as_ref().and_then(|r| r.as_str()).unwrap_or("other").to_owned();
            counter!("mpquic_paths_closed_total", "reason" => reason).increment(1);
        }
    }

    /// The connection-wide counters: failover events and the controller's episodes.
    fn count_connection(&mut self, report: &ConnectionReport) {
        for event in report.failovers.iter().skip(self.failovers_seen) {
            counter!("mpquic_failovers_total", "event" => event.qlog_name()).increment(1);
        }
        self.failovers_seen = report.failovers.len();
        let Some(state) = &report.controller_state else { return };
        self.count("mpquic_suppressions_total", None, Vec::new(), state.suppressions);
        self.count("mpquic_releases_total", None, Vec::new(), state.releases);
        self.count("mpquic_eliminations_total", None, Vec::new(), state.eliminations);
    }

    /// A per-path counter of path number `id`, moved to `total`.
    fn count_for_path(&mut self, name: &'static str, id: u32, total: u64) {
        self.count(name, Some(id), vec![path_label(id)], total);
    }

    /// Move counter `name` by what `total` grew since the last sample of the same key.
    fn count(&mut self, name: &'static str, path: Option<u32>, labels: Vec<Label>, total: u64) {
        let before = self.counted.insert((name, path), total);
        let grown = total.saturating_sub(before.unwrap_or(0));
        if grown > 0 || before.is_none() {
            // A zero increment still registers the series, so that it reads 0 rather than
            // missing before the first event.
            counter!(name, labels).increment(grown);
        }
    }

    /// Move each gauge by the difference between this connection's new and old contributions
    /// (a series it no longer contributes to goes back by its old one).
    fn set_gauges(&mut self, new: HashMap<Series, f64>) {
        for (series, old) in &self.gauges {
            if !new.contains_key(series) {
                gauge!(series.0, series.1.clone()).decrement(*old);
            }
        }
        for (series, value) in &new {
            let old = self.gauges.get(series).copied().unwrap_or(0.0);
            gauge!(series.0, series.1.clone()).increment(value - old);
        }
        self.gauges = new;
    }
}

impl Drop for Reporter {
    /// The connection is gone: its contributions leave the gauges.
    fn drop(&mut self) {
        self.set_gauges(HashMap::new());
        gauge!("mpquic_connections").decrement(1.0);
    }
}
