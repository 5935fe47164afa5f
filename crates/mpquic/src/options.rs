//! Per-connection transport options and the noq `TransportConfig` they make.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use mpquic_cc::{ConfigError, ControllerChoice, ControllerConfig, ControllerKind, EcnCodepoint};
use noq::{AckFrequencyConfig, TransportConfig, VarInt};
use serde::Serialize;

use crate::congestion::{CoupledFactory, SharedController};
use crate::failover::PathFailure;
use crate::scheduler::Scheduler;

/// Which congestion control a connection runs.
///
/// Parsed from one string, `name` or `name:key=value,key=value`, as the command line takes it;
/// bad names and parameters are refused with the reason:
///
/// ```
/// use mpquic::Congestion;
///
/// let amp: Congestion = "amp:beta=8,tau=4".parse()?;
/// assert_eq!(amp.name(), "amp");
/// assert_eq!("cubic".parse(), Ok(Congestion::StackCubic));
/// // The same from a name and separate parameters:
/// assert_eq!(Congestion::parse("amp", ["beta=8", "tau=4"]), Ok(amp));
///
/// let err = "amp:alpha=1".parse::<Congestion>().unwrap_err();
/// assert!(err.to_string().contains("no parameter `alpha`"), "{err}");
/// # Ok::<(), mpquic::mpquic_cc::ConfigError>(())
/// ```
///
/// A controller registered with [`mpquic_cc::register`] is chosen by its name the same way, from
/// this parser and so from every command line, simulator run and scenario file that takes a
/// controller string (see `Write your own controller` in docs/LIBRARY.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Congestion {
    /// One of mpquic-cc's controllers, coupled across the connection's paths.
    Coupled(ControllerConfig),
    /// A controller registered by the program ([`mpquic_cc::register`]), with its parameters.
    Custom(ControllerChoice),
    /// noq's own Cubic on every path, uncoupled: the "no coupling" baseline.
    StackCubic,
    /// noq's own NewReno on every path, uncoupled.
    StackNewReno,
}

impl Congestion {
    /// Parse a controller name (`cubic`, `newreno`, any mpquic-cc name or a registered one) and
    /// `key=value` parameters.
    pub fn parse<'a>(
        name: &str,
        params: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, ConfigError> {
        let stack = match name.to_ascii_lowercase().as_str() {
            "cubic" => Congestion::StackCubic,
            "newreno" => Congestion::StackNewReno,
            _ if name.parse::<ControllerKind>().is_err() => {
                return ControllerChoice::parse(name, params).map(Congestion::Custom)
            }
            _ => return ControllerConfig::parse(name, params).map(Congestion::Coupled),
        };
        match params.into_iter().next() {
            Some(param) => Err(ConfigError::UnknownParameter {
                controller: stack.name(),
                param: param.split('=').next().unwrap_or(param).to_owned(),
                known: "none",
            }),
            None => Ok(stack),
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &'static str {
        match self {
            Congestion::Coupled(config) => config.kind().name(),
            Congestion::Custom(choice) => choice.name(),
            Congestion::StackCubic => "cubic",
            Congestion::StackNewReno => "newreno",
        }
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Congestion {
    type Err = ConfigError;

    /// A controller spec in one string: `name` or `name:key=value,key=value` (`amp:beta=4,tau=8`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, params) = s.split_once(':').unwrap_or((s, ""));
        Congestion::parse(name.trim(), params.split(',').map(str::trim).filter(|p| !p.is_empty()))
    }
}

impl Default for Congestion {
    fn default() -> Self {
        Congestion::Coupled(ControllerConfig::with_defaults(ControllerKind::Amp))
    }
}

/// How the sender's ACK feedback is shaped for ECN.
///
/// The controller always gets exact CE counts: the stack hands over the increase of the peer's
/// CE count with every ACK frame (`third_party/noq-proto`, patch 1), whatever the frame covers.
/// What this chooses is only the granularity the network and the receiver see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnPrecision {
    /// GSO batches and the stack's ACK frequency: the counts are exact, at the stack's speed.
    #[default]
    Auto,
    /// A measurement option: one packet per datagram and an ACK for every packet, so that a
    /// queue that marks whole GSO batches (one skb) marks single packets instead. Costs 2-3x the
    /// CPU per byte. `exact` is its name from before the counts came from the ACK frame.
    PerPacket,
}

impl EcnPrecision {
    /// Every setting.
    pub const ALL: [EcnPrecision; 2] = [EcnPrecision::Auto, EcnPrecision::PerPacket];

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            EcnPrecision::Auto => "auto",
            EcnPrecision::PerPacket => "per-packet",
        }
    }
}

impl FromStr for EcnPrecision {
    type Err = String;

    /// Also reads the names of earlier releases, with the same wire behaviour: `exact` (GSO off,
    /// an ACK per packet) and `batched` (the stack's defaults).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" | "batched" => Ok(EcnPrecision::Auto),
            "per-packet" | "exact" => Ok(EcnPrecision::PerPacket),
            _ => Err(format!("unknown ECN precision `{s}` (known: auto, per-packet)")),
        }
    }
}

/// Everything that shapes one connection's transport.
///
/// Set what matters and take the rest from [`Options::default`] (AMP, the stack's scheduler,
/// noq's ACK timing and windows, up to 16 paths, 10 s idle timeout, path failover
/// by [`PathFailure::default`]):
///
/// ```
/// use std::time::Duration;
/// use mpquic::{Options, Scheduler};
///
/// let options = Options {
///     congestion: "xmp:beta=4".parse()?,
///     scheduler: Scheduler::LowestRtt,
///     // The data-center ACK profile: at microsecond RTTs, noq's 25 ms default delay would
///     // set the floor of every probe timeout.
///     max_ack_delay: Some(Duration::from_millis(1)),
///     ..Options::default()
/// };
/// options.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// The congestion controller.
    pub congestion: Congestion,
    /// The packet scheduler.
    pub scheduler: Scheduler,
    /// Whether packets go one per datagram with an ACK each (a measurement option).
    pub ecn: EcnPrecision,
    /// The ECN-capable codepoint of the connection's packets: `None` (the default) lets the
    /// controller choose (ECT(1), the L4S identifier of RFC 9331, for an L4S controller; ECT(0)
    /// for every classic one); `Some` overrides it, e.g. to run a DCTCP-like controller through
    /// an L4S queue. The stack's own Cubic and NewReno send ECT(0) only.
    pub ecn_codepoint: Option<EcnCodepoint>,
    /// The longest the peer may wait before acknowledging, asked for through QUIC's ACK
    /// frequency extension (noq accepts 1-25 ms; `None`: noq's default, 25 ms). A data-center
    /// profile asks for 1 ms: at microsecond RTTs the default puts a 26 ms floor under the probe
    /// timeout, which then decides incast and job tails.
    pub max_ack_delay: Option<Duration>,
    /// Connection and stream receive windows and the send buffer, bytes (`None`: noq's 1.25 MB
    /// per stream, which covers 10 Gbit/s at a 1 ms RTT).
    pub receive_window: Option<u64>,
    /// Paths a connection may have open at once (1: no multipath extension).
    pub max_paths: u32,
    /// A connection (or a path) silent for this long is closed.
    pub idle_timeout: Duration,
    /// Write a qlog trace per connection into this directory.
    pub qlog_dir: Option<PathBuf>,
    /// When a path counts as failed (and is abandoned for the live ones); `None`: no failure
    /// detection.
    pub path_failure: Option<PathFailure>,
    /// Report each connection's measures through the `metrics` facade this often (see
    /// [`crate::metrics`]); `None` (the default): no reporting and no cost.
    pub metrics: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            congestion: Congestion::default(),
            scheduler: Scheduler::default(),
            ecn: EcnPrecision::default(),
            ecn_codepoint: None,
            max_ack_delay: None,
            receive_window: None,
            max_paths: 16,
            idle_timeout: Duration::from_secs(10),
            qlog_dir: None,
            path_failure: Some(PathFailure::default()),
            metrics: None,
        }
    }
}

/// Options that cannot be carried out as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidOptions(pub String);

/// A connection's transport configuration and the handle on its coupled controller.
pub(crate) struct Transport {
    /// Ready for a `ClientConfig` or `ServerConfig`.
    pub config: Arc<TransportConfig>,
    /// The connection's controller (`None` for the stack's own).
    pub controller: Option<Arc<SharedController>>,
    /// How often a path that sent nothing is probed, so that the peer (which abandons a path
    /// that receives nothing for the idle timeout) keeps it.
    pub path_keep_alive: Duration,
    /// How long a path may receive nothing before noq abandons it (a backup path has no such
    /// limit: its ACKs may ride another path, see `MultipathConnection::set_path_status`).
    pub path_idle_timeout: Duration,
    /// When a path counts as failed (`None`: not watched).
    pub path_failure: Option<PathFailure>,
    /// How often the connection's measures go to the `metrics` facade (`None`: never).
    pub metrics: Option<Duration>,
    /// The qlog trace's sink for the connection's own events, when tracing.
    #[cfg(feature = "qlog")]
    pub qlog_events: Option<crate::qlog::QlogEvents>,
}

impl Options {
    /// Whether this connection sends one packet per datagram and asks for an ACK per packet.
    pub fn acks_every_packet(&self) -> bool {
        self.ecn == EcnPrecision::PerPacket
    }

    /// How often a path that sent nothing is pinged: well within the peer's idle timeout,
    /// after which it would abandon the path.
    pub fn path_keep_alive(&self) -> Duration {
        self.idle_timeout / 3
    }

    /// Noq's range for a requested max_ack_delay.
    const MAX_ACK_DELAY: std::ops::RangeInclusive<Duration> =
        Duration::from_millis(1)..=Duration::from_millis(25);

    /// Check the values that a connection built from these options would otherwise have to
    /// clamp (out-of-range ACK delay, receive window, idle timeout, metrics interval).
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        if let Some(delay) = self.max_ack_delay.filter(|d| !Self::MAX_ACK_DELAY.contains(d)) {
            return Err(InvalidOptions(format!(
                "max_ack_delay {delay:?} is outside noq's 1 ms ..= 25 ms"
            )));
        }
        if let Some(window) = self.receive_window.filter(|&w| VarInt::from_u64(w).is_err()) {
            return Err(InvalidOptions(format!("receive window {window} is too large")));
        }
        let stack_controller =
            matches!(self.congestion, Congestion::StackCubic | Congestion::StackNewReno);
        if stack_controller && self.ecn_codepoint == Some(EcnCodepoint::Ect1) {
            return Err(InvalidOptions(format!(
                "ECT(1) needs one of mpquic's controllers; the stack's own {} sends ECT(0) only",
                self.congestion.name()
            )));
        }
        if self.idle_timeout.is_zero() {
            return Err(InvalidOptions("the idle timeout must be positive".into()));
        }
        if self.metrics.is_some_and(|interval| interval.is_zero()) {
            return Err(InvalidOptions("the metrics interval must be positive".into()));
        }
        Ok(())
    }

    /// One connection's noq transport configuration and coupled controller: every transport
    /// policy of the library in one place (controller, scheduler, ECN shaping, ACK profile,
    /// windows, paths, idle timeout). The CLI, the simulator and the tests all start here; a
    /// caller that runs elsewhere (the simulator's fixed MTU and virtual clock) adjusts only
    /// what is about its environment. Each connection needs its own: the controller factory
    /// inside it is that connection's coupling. Out-of-range values (see [`Options::validate`])
    /// are clamped.
    pub(crate) fn transport_config(&self) -> (TransportConfig, Option<Arc<SharedController>>) {
        let mut config = TransportConfig::default();
        if self.max_paths > 1 {
            config.max_concurrent_multipath_paths(self.max_paths);
        }
        config
            .max_idle_timeout(self.idle_timeout.try_into().ok())
            .default_path_max_idle_timeout(Some(self.idle_timeout))
            .keep_alive_interval(Some(self.idle_timeout / 3))
            // With failover, a path is abandoned because it stopped delivering (by this end's
            // supervisor or the peer's): what is in flight on it goes to the live paths at the
            // abandon, not a loss-detection time threshold later (noq-proto patch 4).
            .lose_in_flight_on_abandon(self.path_failure.is_some())
            // A path whose probe timeout fires while another path delivers sends what is in
            // flight on it again on the others and waits for an answer before new data
            // (noq-proto patch 5): otherwise the stream data stuck on a lossy path holds the
            // receive window of every path for its probes' back-off (a gray path at 30% loss
            // stalled the good path 17 s out of 60).
            .reinject_on_pto(true);
        if let Some(window) = self.receive_window {
            // Larger windows let multipath reordering hold more out-of-order data; noq-proto's
            // receive buffer is bounded by the window (patch series), not a chunk count.
            let window = VarInt::from_u64(window).unwrap_or(VarInt::MAX);
            config.receive_window(window).stream_receive_window(window).send_window(window.into());
        }

        let controller = match &self.congestion {
            Congestion::Coupled(cc) => Some(self.install_coupled(&mut config, cc.build())),
            Congestion::Custom(choice) => Some(self.install_coupled(&mut config, choice.build())),
            Congestion::StackCubic => {
                config.congestion_controller_factory(Arc::new(
                    noq::congestion::CubicConfig::default(),
                ));
                None
            }
            Congestion::StackNewReno => {
                config.congestion_controller_factory(Arc::new(
                    noq::congestion::NewRenoConfig::default(),
                ));
                None
            }
        };
        config.ack_frequency_config(self.ack_frequency());
        if self.acks_every_packet() {
            config.enable_segmentation_offload(false);
        }
        (config, controller)
    }

    /// Make `controller` this connection's, coupled over all its paths.
    fn install_coupled(
        &self,
        config: &mut TransportConfig,
        controller: Box<dyn mpquic_cc::Controller>,
    ) -> Arc<SharedController> {
        let factory =
            CoupledFactory::with_controller(controller, &self.scheduler, self.ecn_codepoint);
        let shared = factory.shared();
        config.congestion_controller_factory(Arc::new(factory));
        shared
    }

    /// What the ACK frequency extension asks of the peer, if anything.
    fn ack_frequency(&self) -> Option<AckFrequencyConfig> {
        if !self.acks_every_packet() && self.max_ack_delay.is_none() {
            return None;
        }
        let mut ack_frequency = AckFrequencyConfig::default();
        if self.acks_every_packet() {
            ack_frequency.ack_eliciting_threshold(VarInt::from_u32(0));
        } else {
            // As without the extension: an ACK every second packet, and at once on reordering
            // (the extension's default threshold of 2 would delay it).
            ack_frequency.reordering_threshold(VarInt::from_u32(1));
        }
        if let Some(delay) = self.max_ack_delay {
            let (min, max) = (*Self::MAX_ACK_DELAY.start(), *Self::MAX_ACK_DELAY.end());
            ack_frequency.max_ack_delay(Some(delay.clamp(min, max)));
        }
        Some(ack_frequency)
    }

    /// A fresh transport for one connection, with its qlog trace if asked for (`label` names
    /// the file).
    pub(crate) fn transport(&self, label: &str) -> Transport {
        // Mutated only to attach the qlog trace, which the `qlog` feature may leave out.
        #[allow(unused_mut)]
        let (mut config, controller) = self.transport_config();
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
                "ecn_codepoint": controller.as_ref().map(|c| c.codepoint()),
                "exact_ecn": controller.is_some(),
                "max_ack_delay_ms": self.max_ack_delay.map(|d| d.as_secs_f64() * 1e3),
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
            path_keep_alive: self.path_keep_alive(),
            path_idle_timeout: self.idle_timeout,
            path_failure: self.path_failure,
            metrics: self.metrics,
            #[cfg(feature = "qlog")]
            qlog_events,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_spec_is_one_string_with_its_parameters() {
        let Ok(Congestion::Coupled(ControllerConfig::Amp(amp))) = "amp:beta=8, tau=4".parse()
        else {
            panic!("not amp")
        };
        assert_eq!((amp.beta, amp.tau), (8.0, 4));
        assert_eq!("newreno".parse::<Congestion>().map(|c| c.name()), Ok("newreno"));
        assert_eq!("cubic".parse::<Congestion>().map(|c| c.name()), Ok("cubic"));
        let err = "cubic:beta=1".parse::<Congestion>().unwrap_err().to_string();
        assert!(err.contains("beta"), "{err}");
        assert!("vegas".parse::<Congestion>().is_err());
    }

    #[test]
    fn the_ack_profile_asks_the_peer_only_when_told_to() {
        let options = Options::default();
        assert!(options.ack_frequency().is_none(), "noq's defaults, no extension frames");
        let profile = Options { max_ack_delay: Some(Duration::from_millis(1)), ..options.clone() };
        assert!(profile.validate().is_ok());
        assert!(profile.ack_frequency().is_some());
        let per_packet = Options { ecn: EcnPrecision::PerPacket, ..options.clone() };
        assert!(per_packet.ack_frequency().is_some() && per_packet.acks_every_packet());
    }

    #[test]
    fn options_outside_the_stacks_range_are_refused_with_the_reason() {
        let too_short =
            Options { max_ack_delay: Some(Duration::from_micros(500)), ..Options::default() };
        let err = too_short.validate().unwrap_err().to_string();
        assert!(err.contains("outside noq's 1 ms ..= 25 ms"), "{err}");
        let too_large = Options { receive_window: Some(u64::MAX), ..Options::default() };
        assert!(too_large.validate().unwrap_err().to_string().contains("too large"));
    }

    #[test]
    fn ecn_precision_reads_its_old_names_with_the_same_wire_behaviour() {
        assert_eq!("exact".parse(), Ok(EcnPrecision::PerPacket));
        assert_eq!("batched".parse(), Ok(EcnPrecision::Auto));
        for p in EcnPrecision::ALL {
            assert_eq!(p.name().parse(), Ok(p));
        }
        assert!("sometimes".parse::<EcnPrecision>().unwrap_err().contains("per-packet"));
    }
}
