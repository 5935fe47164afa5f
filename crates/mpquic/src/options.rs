//! Per-connection transport options and the noq `TransportConfig` they make.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use mpquic_cc::{ConfigError, ControllerConfig, ControllerKind};
use noq::{AckFrequencyConfig, TransportConfig, VarInt};
use serde::Serialize;

use crate::congestion::{CoupledFactory, SharedController};
use crate::failover::PathFailure;
use crate::scheduler::Scheduler;

/// Which congestion control a connection runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Congestion {
    /// One of mpquic-cc's controllers, coupled across the connection's paths.
    Coupled(ControllerConfig),
    /// noq's own Cubic on every path, uncoupled: the "no coupling" baseline.
    StackCubic,
}

impl Congestion {
    /// Parse a controller name (`cubic` or any mpquic-cc name) and `key=value` parameters.
    pub fn parse<'a>(
        name: &str,
        params: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, ConfigError> {
        let mut params = params.into_iter().peekable();
        if name.eq_ignore_ascii_case("cubic") {
            if let Some(param) = params.next() {
                return Err(ConfigError::UnknownParameter {
                    controller: "cubic",
                    param: param.split('=').next().unwrap_or(param).to_owned(),
                    known: "none",
                });
            }
            return Ok(Congestion::StackCubic);
        }
        ControllerConfig::parse(name, params).map(Congestion::Coupled)
    }

    /// The controller's name.
    pub fn name(&self) -> &'static str {
        match self {
            Congestion::Coupled(config) => config.kind().name(),
            Congestion::StackCubic => "cubic",
        }
    }

    /// Whether the controller needs the fraction of marked packets.
    fn needs_marked_fraction(&self) -> bool {
        matches!(self, Congestion::Coupled(c) if c.kind().needs_marked_fraction())
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Congestion {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Congestion::parse(s, [])
    }
}

impl Default for Congestion {
    fn default() -> Self {
        Congestion::Coupled(ControllerConfig::with_defaults(ControllerKind::Amp))
    }
}

/// How exact the sender's count of CE-marked packets is.
///
/// noq tells the controller only that an ACK frame raised the CE count. One mark per frame is
/// the estimate; it is exact when every frame acknowledges one packet, which needs the peer to
/// acknowledge every packet and the sender to send one packet per datagram (no GSO batches,
/// which a marking queue also treats as one unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnPrecision {
    /// Exact when the controller needs the marked fraction (DCM, DCTCP), batched otherwise.
    #[default]
    Auto,
    /// GSO off and an ACK for every packet: exact counts, more CPU per byte.
    Exact,
    /// The stack's defaults: GSO on, ACKs every few packets; counts are estimates.
    Batched,
}

impl EcnPrecision {
    /// Every setting.
    pub const ALL: [EcnPrecision; 3] =
        [EcnPrecision::Auto, EcnPrecision::Exact, EcnPrecision::Batched];

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            EcnPrecision::Auto => "auto",
            EcnPrecision::Exact => "exact",
            EcnPrecision::Batched => "batched",
        }
    }
}

impl FromStr for EcnPrecision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EcnPrecision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown ECN precision `{s}` (known: auto, exact, batched)"))
    }
}

/// Everything that shapes one connection's transport.
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// The congestion controller.
    pub congestion: Congestion,
    /// The packet scheduler.
    pub scheduler: Scheduler,
    /// How exact CE counts should be.
    pub ecn: EcnPrecision,
    /// Paths a connection may have open at once.
    pub max_paths: u32,
    /// A connection (or a path) silent for this long is closed.
    pub idle_timeout: Duration,
    /// Write a qlog trace per connection into this directory.
    pub qlog_dir: Option<PathBuf>,
    /// When a path counts as failed (and is abandoned for the live ones).
    pub path_failure: PathFailure,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            congestion: Congestion::default(),
            scheduler: Scheduler::default(),
            ecn: EcnPrecision::default(),
            max_paths: 16,
            idle_timeout: Duration::from_secs(10),
            qlog_dir: None,
            path_failure: PathFailure::default(),
        }
    }
}

/// A connection's transport configuration and the handle on its coupled controller.
pub struct Transport {
    /// Ready for a `ClientConfig` or `ServerConfig`.
    pub config: Arc<TransportConfig>,
    /// The connection's controller (`None` for [`Congestion::StackCubic`]).
    pub controller: Option<Arc<SharedController>>,
    /// Whether CE counts will be exact.
    pub exact_ecn: bool,
    /// How often a path that sent nothing is probed, so that the peer (which abandons a path
    /// that receives nothing for the idle timeout) keeps it.
    pub path_keep_alive: Duration,
    /// When a path counts as failed.
    pub path_failure: PathFailure,
    /// The qlog trace's sink for the connection's own events, when tracing.
    #[cfg(feature = "qlog")]
    pub qlog_events: Option<crate::qlog::QlogEvents>,
}

impl Options {
    /// Whether this connection runs with exact CE counts.
    pub fn exact_ecn(&self) -> bool {
        match self.ecn {
            EcnPrecision::Auto => self.congestion.needs_marked_fraction(),
            EcnPrecision::Exact => true,
            EcnPrecision::Batched => false,
        }
    }

    /// A fresh transport for one connection. Each connection needs its own: the controller
    /// factory inside it is that connection's coupling. `label` names its qlog file.
    pub fn transport(&self, label: &str) -> Transport {
        let mut config = TransportConfig::default();
        config
            .max_concurrent_multipath_paths(self.max_paths)
            .max_idle_timeout(self.idle_timeout.try_into().ok())
            .default_path_max_idle_timeout(Some(self.idle_timeout))
            // noq's flow-control windows (1.25 MB per stream) stay: they cover 10 Gbit/s at a
            // data-center RTT of 1 ms, and larger ones let multipath reordering fragment the
            // receive buffer past noq's limit on gaps (it then aborts the connection).
            .keep_alive_interval(Some(self.idle_timeout / 3));

        let controller = match &self.congestion {
            Congestion::Coupled(cc) => {
                let factory = CoupledFactory::new(cc, self.scheduler);
                let shared = factory.shared();
                config.congestion_controller_factory(Arc::new(factory));
                Some(shared)
            }
            Congestion::StackCubic => {
                config.congestion_controller_factory(Arc::new(
                    noq::congestion::CubicConfig::default(),
                ));
                None
            }
        };

        let exact_ecn = self.exact_ecn();
        if exact_ecn {
            let mut ack_frequency = AckFrequencyConfig::default();
            ack_frequency.ack_eliciting_threshold(VarInt::from_u32(0));
            config.enable_segmentation_offload(false).ack_frequency_config(Some(ack_frequency));
        }

        #[cfg(feature = "qlog")]
        let mut qlog_events = None;
        #[cfg(not(feature = "qlog"))]
        if self.qlog_dir.is_some() {
            let _ = label;
            tracing::warn!("qlog requested, but mpquic was built without its `qlog` feature");
        }
        #[cfg(feature = "qlog")]
        if let Some(dir) = &self.qlog_dir {
            let configuration = serde_json::json!({
                "congestion": self.congestion,
                "controller": self.congestion.name(),
                "scheduler": self.scheduler,
                "ecn": self.ecn,
                "exact_ecn": exact_ecn,
                "max_paths": self.max_paths,
            });
            let factory = crate::qlog::ConnectionQlog::new(
                dir.clone(),
                label,
                controller.clone(),
                configuration,
            );
            qlog_events = Some(factory.events());
            config.qlog_factory(Arc::new(factory));
        }
        Transport {
            config: Arc::new(config),
            controller,
            exact_ecn,
            path_keep_alive: self.idle_timeout / 3,
            path_failure: self.path_failure,
            #[cfg(feature = "qlog")]
            qlog_events,
        }
    }
}
