//! One connection's trace turned into bounded per-path series, episodes and totals.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use mpquic::mpquic_cc::Notice;
use serde::Serialize;
use serde_json::value::RawValue;

use super::events::*;
use super::qlog_reader::{Header, Partial, QlogReader, RawEvent};
use super::series::Series;

/// Paths beyond this many are not tracked (memory stays bounded for hostile input).
const MAX_PATHS: usize = 64;
/// Episodes beyond this many are counted, not kept.
const MAX_EPISODES: usize = 10_000;

/// One path's series and totals.
#[derive(Debug, Clone)]
pub struct PathData {
    /// Congestion window, bytes.
    pub cwnd: Series,
    /// Bytes in flight.
    pub bytes_in_flight: Series,
    /// Smoothed RTT, ms.
    pub srtt: Series,
    /// Minimum RTT, ms.
    pub min_rtt: Series,
    /// Bytes of packets sent (sum per bucket).
    pub sent: Series,
    /// CE marks newly reported by the peer's ACKs (sum per bucket).
    pub ce: Series,
    /// DCTCP/DCM alpha.
    pub alpha: Series,
    /// Window reductions per cause (count per bucket), indexed like `ReductionCause::ALL`.
    pub reductions: [Series; 3],
    /// Stream payload bytes sent on this path (retransmissions included).
    pub stream_sent: u64,
    /// Stream payload bytes received on this path.
    pub stream_received: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// CE marks reported in total.
    pub ce_total: u64,
    /// Highest cumulative CE count seen in an ACK for this path.
    ce_cumulative: u64,
}

impl PathData {
    fn new(buckets: usize) -> PathData {
        let s = || Series::new(buckets);
        PathData {
            cwnd: s(),
            bytes_in_flight: s(),
            srtt: s(),
            min_rtt: s(),
            sent: s(),
            ce: s(),
            alpha: s(),
            reductions: [s(), s(), s()],
            stream_sent: 0,
            stream_received: 0,
            packets_sent: 0,
            ce_total: 0,
            ce_cumulative: 0,
        }
    }
}

/// A controller episode or decision worth a marker.
#[derive(Debug, Clone, Serialize)]
pub struct Episode {
    /// ms since trace start.
    pub time: f64,
    /// The notice's kind: `suppressed`, `released`, `eliminated`, `phase_switched`,
    /// `slow_start_exited`.
    pub kind: &'static str,
    /// Paths concerned.
    pub paths: Vec<u64>,
    /// Human-readable detail.
    pub detail: String,
    /// The notice itself.
    #[serde(skip)]
    pub notice: Notice,
}

/// How the connection was configured (the `mpquic:configured` event).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {
    /// Controller.
    pub controller: Option<String>,
    /// Scheduler.
    pub scheduler: Option<String>,
    /// ECN precision.
    pub ecn: Option<String>,
    /// Exact CE counts.
    pub exact_ecn: Option<bool>,
}

/// Everything a report shows about one connection.
#[derive(Debug)]
pub struct Connection {
    /// The qlog file.
    pub file: PathBuf,
    /// Its size, bytes.
    pub file_bytes: u64,
    /// Header fields.
    pub header: Header,
    /// `mpquic:configured`.
    pub config: Config,
    /// Per path (noq path id = controller slot).
    pub paths: BTreeMap<u64, PathData>,
    /// Lost packets (count per bucket); noq does not say on which path.
    pub losses: Series,
    /// Lost packets in total.
    pub lost_total: u64,
    /// Controller episodes, in file order.
    pub episodes: Vec<Episode>,
    /// Episodes not kept (over `MAX_EPISODES`).
    pub episodes_dropped: u64,
    /// First stream frame sent / received, ms.
    pub first_stream: [Option<f64>; 2],
    /// End offset per stream, sent / received.
    stream_ends: [HashMap<u64, u64>; 2],
    /// First CONNECTION_CLOSE sent or received, ms.
    pub close_time: Option<f64>,
    /// Latest event time, ms.
    pub end_time: f64,
    /// Events read.
    pub events: u64,
    /// Set when the last record was cut.
    pub partial: Option<Partial>,
    /// Things the reader should know (ignored paths, ...).
    pub warnings: Vec<String>,
}

/// Direction index into `first_stream` / stream ends.
const SENT: usize = 0;
const RECEIVED: usize = 1;

impl Connection {
    fn new(file: &Path, file_bytes: u64, header: Header) -> Connection {
        Connection {
            file: file.to_owned(),
            file_bytes,
            header,
            config: Config::default(),
            paths: BTreeMap::new(),
            losses: Series::new(1),
            lost_total: 0,
            episodes: Vec::new(),
            episodes_dropped: 0,
            first_stream: [None, None],
            stream_ends: [HashMap::new(), HashMap::new()],
            close_time: None,
            end_time: 0.0,
            events: 0,
            partial: None,
            warnings: Vec::new(),
        }
    }

    /// Read a qlog file; `progress` is told how many bytes have been read.
    pub fn read(file: &Path, buckets: usize, mut progress: impl FnMut(u64)) -> Result<Connection> {
        let file_bytes = std::fs::metadata(file)
            .map_err(|e| anyhow!("cannot open {}: {e}", file.display()))?
            .len();
        let mut reader = QlogReader::open(file)?;
        let mut conn = Connection::new(file, file_bytes, reader.header().clone());
        conn.losses = Series::new(buckets);
        conn.read_events(&mut reader, buckets, &mut progress)?;
        conn.partial = reader.partial().cloned();
        Ok(conn)
    }

    fn read_events<R: BufRead>(
        &mut self,
        reader: &mut QlogReader<R>,
        buckets: usize,
        progress: &mut impl FnMut(u64),
    ) -> Result<()> {
        let mut reported = 0;
        loop {
            let position = reader.position();
            if position - reported >= 1 << 20 {
                progress(position);
                reported = position;
            }
            let line = reader.records() + 1;
            let Some(event) = reader.next_event()? else { break };
            self.apply(&event, buckets).map_err(|e| {
                anyhow!("{} line {line}: bad {} event: {e}", self.file.display(), event.name)
            })?;
        }
        progress(reader.position());
        Ok(())
    }

    fn path(&mut self, id: u64, buckets: usize) -> Option<&mut PathData> {
        if !self.paths.contains_key(&id) && self.paths.len() >= MAX_PATHS {
            let w = format!("more than {MAX_PATHS} paths: path {id} and later ones ignored");
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
            return None;
        }
        Some(self.paths.entry(id).or_insert_with(|| PathData::new(buckets)))
    }

    fn episode(&mut self, time: f64, notice: Notice, paths: Vec<u64>, detail: String) {
        if self.episodes.len() < MAX_EPISODES {
            self.episodes.push(Episode { time, kind: notice.kind(), paths, detail, notice });
        } else {
            self.episodes_dropped += 1;
        }
    }

    fn apply(&mut self, event: &RawEvent<'_>, buckets: usize) -> serde_json::Result<()> {
        let t = event.time;
        self.events += 1;
        if t.is_finite() {
            self.end_time = self.end_time.max(t);
        }
        let data: &RawValue = event.data;
        match &*event.name {
            "quic:packet_sent" | "quic:packet_received" => {
                let sent = event.name == "quic:packet_sent";
                let p: PacketEvent<'_> = serde_json::from_str(data.get())?;
                self.packet(t, sent, &p, buckets);
            }
            "quic:recovery_metrics_updated" => {
                let m: RecoveryMetrics = serde_json::from_str(data.get())?;
                if let Some(path) = self.path(m.path_id.unwrap_or(0), buckets) {
                    for (series, value) in [
                        (&mut path.cwnd, m.congestion_window),
                        (&mut path.bytes_in_flight, m.bytes_in_flight),
                        (&mut path.srtt, m.smoothed_rtt),
                        (&mut path.min_rtt, m.min_rtt),
                    ] {
                        if let Some(v) = value {
                            series.push(t, v);
                        }
                    }
                }
            }
            "quic:packet_lost" => {
                // noq's packet_lost has no path_id, so losses are per connection.
                self.losses.push(t, 1.0);
                self.lost_total += 1;
            }
            "mpquic:configured" => {
                let c: Configured = serde_json::from_str(data.get())?;
                self.config = Config {
                    controller: c.controller,
                    scheduler: c.scheduler,
                    ecn: c.ecn,
                    exact_ecn: c.exact_ecn,
                };
            }
            name => {
                let is_notice =
                    name.strip_prefix("mpquic:").is_some_and(|kind| Notice::KINDS.contains(&kind));
                if is_notice {
                    self.notice(t, serde_json::from_str(data.get())?, buckets);
                }
            }
        }
        Ok(())
    }

    /// A controller notice: per-path series for window cuts and alpha, episodes for the rest.
    fn notice(&mut self, t: f64, notice: Notice, buckets: usize) {
        let id = |path: mpquic::mpquic_cc::PathId| u64::from(path.0);
        match &notice {
            Notice::WindowReduced { path, cause, .. } => {
                if let Some(path) = self.path(id(*path), buckets) {
                    path.reductions[*cause as usize].push(t, 1.0);
                }
            }
            Notice::AlphaUpdated { path, alpha, .. } => {
                if let Some(path) = self.path(id(*path), buckets) {
                    path.alpha.push(t, *alpha);
                }
            }
            Notice::SlowStartExited { path, window } => {
                let paths = vec![id(*path)];
                let detail = format!("window {window} B");
                self.episode(t, notice, paths, detail);
            }
            Notice::Suppressed { paths } | Notice::Released { paths } => {
                let paths = paths.iter().copied().map(id).collect();
                self.episode(t, notice, paths, String::new());
            }
            Notice::Eliminated { path, keeper, .. } => {
                let (paths, detail) = (vec![id(*path)], format!("keeper path {keeper}"));
                self.episode(t, notice, paths, detail);
            }
            Notice::PhaseSwitched { window, .. } => {
                let detail = format!("window {window} B");
                self.episode(t, notice, vec![], detail);
            }
        }
    }

    fn packet(&mut self, t: f64, sent: bool, p: &PacketEvent<'_>, buckets: usize) {
        let dir = if sent { SENT } else { RECEIVED };
        let path_id = p.header.path_id.unwrap_or(0);
        let mut stream_bytes = 0;
        for f in &p.frames {
            match &*f.frame_type {
                "stream" => {
                    let len = f.raw.as_ref().and_then(|r| r.length).unwrap_or(0);
                    stream_bytes += len;
                    let end = f.offset.unwrap_or(0) + len;
                    let e = self.stream_ends[dir].entry(f.stream_id.unwrap_or(0)).or_default();
                    *e = (*e).max(end);
                    self.first_stream[dir].get_or_insert(t);
                }
                "ack" | "path_ack" if !sent => {
                    // The peer's ACKs carry cumulative CE counts for the packets we sent.
                    if let (Some(ce), Some(path)) =
                        (f.ce, self.path(f.path_id.unwrap_or(0), buckets))
                    {
                        if ce > path.ce_cumulative {
                            let new = ce - path.ce_cumulative;
                            path.ce_cumulative = ce;
                            path.ce_total += new;
                            path.ce.push(t, new as f64);
                        }
                    }
                }
                "connection_close" => {
                    self.close_time.get_or_insert(t);
                }
                _ => {}
            }
        }
        if let Some(path) = self.path(path_id, buckets) {
            if sent {
                path.packets_sent += 1;
                path.sent.push(t, p.header.length.unwrap_or(0) as f64);
                path.stream_sent += stream_bytes;
            } else {
                path.stream_received += stream_bytes;
            }
        }
    }

    /// Totals for the summary table.
    pub fn summary(&self) -> Summary {
        let data = |dir: usize| self.stream_ends[dir].values().sum::<u64>();
        // The data direction is the one with more stream bytes (sender or receiver trace).
        let dir = if data(SENT) >= data(RECEIVED) { SENT } else { RECEIVED };
        let bytes = data(dir);
        let start = self.first_stream[dir];
        let end = self.close_time.unwrap_or(self.end_time);
        let fct_ms = start.map(|s| end - s).filter(|d| *d > 0.0);
        let per_path: Vec<(u64, u64)> = self
            .paths
            .iter()
            .map(|(id, p)| (*id, if dir == SENT { p.stream_sent } else { p.stream_received }))
            .collect();
        let total: u64 = per_path.iter().map(|p| p.1).sum();
        Summary {
            direction: if dir == SENT { "sent" } else { "received" },
            data_bytes: bytes,
            fct_ms,
            goodput_mbps: fct_ms.map(|f| bytes as f64 * 8.0 / (f * 1000.0)),
            closed: self.close_time.is_some(),
            shares: per_path
                .iter()
                .map(|&(id, b)| PathShare {
                    path: id,
                    stream_bytes: b,
                    share: if total > 0 { b as f64 / total as f64 } else { 0.0 },
                    ce_marks: self.paths[&id].ce_total,
                    reductions: self.paths[&id].reductions.iter().map(|s| s.total() as u64).sum(),
                })
                .collect(),
            lost_packets: self.lost_total,
        }
    }
}

/// A connection's totals.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// `sent` for a sender's trace, `received` for a receiver's.
    pub direction: &'static str,
    /// Stream bytes in the data direction (highest offset per stream, summed).
    pub data_bytes: u64,
    /// First stream frame to CONNECTION_CLOSE (or the trace's end), ms.
    pub fct_ms: Option<f64>,
    /// `data_bytes` over `fct_ms`, Mbit/s.
    pub goodput_mbps: Option<f64>,
    /// Whether a CONNECTION_CLOSE was seen (else FCT runs to the last event).
    pub closed: bool,
    /// Per path: stream bytes carried and share.
    pub shares: Vec<PathShare>,
    /// Lost packets (all paths).
    pub lost_packets: u64,
}

/// One path's part of the data.
#[derive(Debug, Clone, Serialize)]
pub struct PathShare {
    /// Path id.
    pub path: u64,
    /// Stream payload bytes on it (retransmissions included).
    pub stream_bytes: u64,
    /// Fraction of all stream bytes.
    pub share: f64,
    /// CE marks reported for it.
    pub ce_marks: u64,
    /// Window reductions.
    pub reductions: u64,
}
