//! The fields of qlog event data a report reads (everything else is skipped while parsing).
//!
//! The controllers' `mpquic:<kind>` events are [`Notice`](mpquic::mpquic_cc::Notice)s and are read
//! as such; only the transport's events and `mpquic:configured` are declared here.

use std::borrow::Cow;

use serde::Deserialize;

/// `quic:packet_sent` / `quic:packet_received`.
#[derive(Debug, Deserialize)]
pub struct PacketEvent<'a> {
    /// The packet header.
    #[serde(default)]
    pub header: PacketHeader,
    /// The frames in it.
    #[serde(default, borrow)]
    pub frames: Vec<Frame<'a>>,
}

/// A packet header: which path, how long.
#[derive(Debug, Default, Deserialize)]
pub struct PacketHeader {
    /// Multipath path ID (absent: path 0).
    pub path_id: Option<u64>,
    /// Packet length, bytes.
    pub length: Option<u64>,
}

/// A frame: the fields of stream and ACK frames.
#[derive(Debug, Deserialize)]
pub struct Frame<'a> {
    /// `stream`, `ack`, `path_ack`, `connection_close`, ...
    #[serde(borrow)]
    pub frame_type: Cow<'a, str>,
    /// Stream ID of a stream frame.
    pub stream_id: Option<u64>,
    /// Stream offset of a stream frame.
    pub offset: Option<u64>,
    /// Raw lengths (a stream frame's payload length).
    pub raw: Option<RawInfo>,
    /// Path an ACK (path_ack) frame acknowledges.
    pub path_id: Option<u64>,
    /// Cumulative CE count in an ACK frame.
    pub ce: Option<u64>,
}

/// qlog's RawInfo.
#[derive(Debug, Deserialize)]
pub struct RawInfo {
    /// Length, bytes.
    pub length: Option<u64>,
}

/// `quic:recovery_metrics_updated`: only the fields that changed are present.
#[derive(Debug, Deserialize)]
pub struct RecoveryMetrics {
    /// Path (absent: path 0).
    pub path_id: Option<u64>,
    /// Congestion window, bytes.
    pub congestion_window: Option<f64>,
    /// Bytes in flight.
    pub bytes_in_flight: Option<f64>,
    /// Smoothed RTT, ms.
    pub smoothed_rtt: Option<f64>,
    /// Minimum RTT, ms.
    pub min_rtt: Option<f64>,
}

/// `mpquic:configured`.
#[derive(Debug, Deserialize)]
pub struct Configured {
    /// Controller name.
    pub controller: Option<String>,
    /// Scheduler name.
    pub scheduler: Option<String>,
    /// ECN precision setting.
    pub ecn: Option<String>,
    /// Whether CE counts are exact.
    pub exact_ecn: Option<bool>,
}
