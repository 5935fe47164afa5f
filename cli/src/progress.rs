//! Live per-path progress (`--interval SECS`): every interval one line per open path (rate,
//! RTT, CE marks, losses, window, controller state), like iperf3's interval lines, and a line
//! for each path event (opened, closed, suppressed, released) when an interval sees it. With
//! `--json` the same as JSON lines on stdout, plus a line for each failover event (a path
//! failed, with its retry delay; a path recovered) the moment it happens: the text form of those
//! is the `mpquic: path ... failed` line a client always prints. Above the progress bar on a
//! terminal, plain lines on stderr otherwise.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use mpquic::noq::PathStatus;
use mpquic::{FailoverEvent, MultipathConnection, PathReport};
use serde::Serialize;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::output::human_bytes;

/// Prints interval lines until dropped.
pub struct IntervalReporter(JoinHandle<()>);

impl Drop for IntervalReporter {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where and how the lines go.
#[derive(Clone)]
pub struct Sink {
    /// JSON lines on stdout instead of text.
    pub json: bool,
    /// Print above this bar while it is drawn.
    pub bar: Option<ProgressBar>,
    /// Whom the lines are about, on a server (which prints lines for every client).
    pub peer: Option<Peer>,
}

/// A server's client, named on every line about its connection.
#[derive(Clone, Debug, Serialize)]
pub struct Peer {
    /// Its address on the initial path.
    peer: String,
    /// The name in its certificate, when mutual TLS gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_name: Option<String>,
}

impl Peer {
    fn text(&self) -> String {
        match &self.peer_name {
            Some(name) => format!("{} ({name})", self.peer),
            None => self.peer.clone(),
        }
    }
}

/// A line as JSON: the interval or event, and on a server the peer it is about.
#[derive(Serialize)]
struct JsonLine<'a> {
    #[serde(flatten)]
    peer: Option<&'a Peer>,
    #[serde(flatten)]
    line: &'a IntervalLine<'a>,
}

impl Sink {
    /// Lines for a client's transfer, drawn above `bar`.
    pub fn new(json: bool, bar: &ProgressBar) -> Self {
        Sink { json, bar: Some(bar.clone()), peer: None }
    }

    /// Lines for one of a server's connections, each naming the peer.
    pub fn server(json: bool, conn: &MultipathConnection) -> Self {
        let peer = Peer {
            peer: conn.remote().map_or_else(|| "?".into(), |r| r.to_string()),
            peer_name: conn.peer_certificate_name(),
        };
        Sink { json, bar: None, peer: Some(peer) }
    }

    fn emit(&self, line: &IntervalLine<'_>) {
        if self.json {
            let line = JsonLine { peer: self.peer.as_ref(), line };
            println!("{}", serde_json::to_string(&line).unwrap_or_default());
            return;
        }
        let text = match &self.peer {
            Some(peer) => format!("{} {}", peer.text(), line.text()),
            None => line.text(),
        };
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.println(text),
            _ => eprintln!("{text}"),
        }
    }
}

/// Report on `conn` every `every` (`None`: not at all).
pub fn start(
    conn: &MultipathConnection,
    every: Option<Duration>,
    sink: Sink,
) -> Option<IntervalReporter> {
    let every = every?;
    let conn = conn.clone();
    Some(IntervalReporter(tokio::spawn(async move {
        let started = Instant::now();
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        // Paths open at the start are not news; paths opened later are.
        let mut before: BTreeMap<u32, PathReport> =
            conn.report().paths.into_iter().map(|p| (p.id, p)).collect();
        let mut failovers = sink.json.then(|| conn.failover_events());
        loop {
            if let Some(event) = next_tick_or_failover(&mut ticks, &mut failovers).await {
                let t_s = started.elapsed().as_secs_f64();
                sink.emit(&IntervalLine::Failover { t_s, event: &event });
                continue;
            }
            let t_s = started.elapsed().as_secs_f64();
            let report = conn.report();
            for path in &report.paths {
                let previous = before.get(&path.id);
                for change in changes(previous, path) {
                    sink.emit(&IntervalLine::Event {
                        t_s,
                        path: path.id,
                        route: route(path),
                        change,
                    });
                }
                if path.open {
                    sink.emit(&IntervalLine::Path(PathInterval::new(t_s, every, previous, path)));
                }
            }
            before = report.paths.into_iter().map(|p| (p.id, p)).collect();
        }
    })))
}

/// Waits for the next tick (`None`) or, when `failovers` listens, a failover event, whichever
/// comes first. Events a slow reader missed are skipped (the final report lists them all); a
/// listener whose connection is gone stops listening.
async fn next_tick_or_failover(
    ticks: &mut tokio::time::Interval,
    failovers: &mut Option<broadcast::Receiver<FailoverEvent>>,
) -> Option<FailoverEvent> {
    loop {
        let Some(events) = failovers else {
            ticks.tick().await;
            return None;
        };
        tokio::select! {
            _ = ticks.tick() => return None,
            event = events.recv() => match event {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => *failovers = None,
            },
        }
    }
}

/// One path over one interval.
#[derive(Debug, Serialize)]
pub struct PathInterval {
    t_s: f64,
    path: u32,
    route: String,
    /// Sending rate over the interval (QUIC bytes sent).
    mbit_s: f64,
    /// Receiving rate over the interval (UDP bytes received).
    rx_mbit_s: f64,
    rtt_ms: f64,
    ce_marked: u64,
    lost: u64,
    cwnd: u64,
    state: &'static str,
}

impl PathInterval {
    fn new(t_s: f64, every: Duration, before: Option<&PathReport>, now: &PathReport) -> Self {
        let delta = |f: fn(&PathReport) -> u64| f(now).saturating_sub(before.map_or(0, f));
        let mbit_s = |bytes: u64| bytes as f64 * 8.0 / every.as_secs_f64() / 1e6;
        PathInterval {
            t_s,
            path: now.id,
            route: route(now),
            mbit_s: mbit_s(delta(|p| p.bytes_sent)),
            rx_mbit_s: mbit_s(delta(|p| p.bytes_received)),
            rtt_ms: now.rtt_smoothed_ms,
            ce_marked: delta(|p| p.ce_marked.unwrap_or(0)),
            lost: delta(|p| p.lost_packets),
            cwnd: now.cwnd,
            state: match (now.status, now.active) {
                (PathStatus::Backup, _) => "backup",
                (PathStatus::Available, true) => "active",
                (PathStatus::Available, false) => "inactive",
            },
        }
    }
}

/// What an interval line says.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum IntervalLine<'a> {
    /// A path's interval.
    Path(PathInterval),
    /// A path changed state.
    Event { t_s: f64, path: u32, route: String, change: &'a str },
    /// A path failed or recovered (JSON only: `event` names which, with its fields).
    Failover {
        t_s: f64,
        #[serde(flatten)]
        event: &'a FailoverEvent,
    },
}

impl IntervalLine<'_> {
    fn text(&self) -> String {
        match self {
            IntervalLine::Path(p) => format!(
                "[{:7.2} s] path {:>2} {:<34} tx {:>8.1} rx {:>8.1} Mbit/s  rtt {:>7.2} ms  CE {:>6}  lost {:>4}  cwnd {:>10}  {}",
                p.t_s,
                p.path,
                p.route,
                p.mbit_s,
                p.rx_mbit_s,
                p.rtt_ms,
                p.ce_marked,
                p.lost,
                human_bytes(p.cwnd),
                p.state
            ),
            IntervalLine::Event { t_s, path, route, change } => {
                format!("[{t_s:7.2} s] path {path:>2} {route}: {change}")
            }
            IntervalLine::Failover { t_s, event } => format!("[{t_s:7.2} s] {event}"),
        }
    }
}

fn route(path: &PathReport) -> String {
    format!(
        "{} -> {}",
        path.local.map_or("*".to_string(), |l| l.to_string()),
        path.remote.map_or("?".to_string(), |r| r.to_string())
    )
}

/// The state changes of a path between two reports (a path first seen is "opened").
fn changes(before: Option<&PathReport>, now: &PathReport) -> Vec<&'static str> {
    let Some(before) = before else {
        return if now.open { vec!["opened"] } else { vec![] };
    };
    let mut changes = vec![];
    if before.open && !now.open {
        changes.push("closed");
    }
    if now.open && before.status != now.status {
        changes.push(match now.status {
            PathStatus::Backup => "now a backup path",
            PathStatus::Available => "now available (a backup taking over, or set so)",
        });
    }
    if now.open && before.active != now.active {
        changes.push(if now.active {
            "released (carries data again)"
        } else {
            "suppressed by the controller"
        });
    }
    changes
}
