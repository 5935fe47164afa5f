//! Choosing a controller: by name, with the papers' defaults, or by typed configuration.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::alg::{
    amp::Amp, balia::Balia, dcm::Dcm, dctcp::Dctcp, lia::Lia, mmptcp::Mmptcp, mptcp_d::MptcpD,
    olia::Olia, reno::Reno, xmp::Xmp,
};
use crate::core::DEFAULT_MIN_WINDOW;
use crate::coupled::Coupled;
use crate::Controller;

/// The algorithms this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerKind {
    /// AMP: RTT-agnostic coupled increase, ECN cut by 1/beta, subflow suppression and release.
    Amp,
    /// XMP: BOS (ECN cut by 1/beta) and TraSh (rate-based coupled increase).
    Xmp,
    /// DCM: LIA's coupled increase with DCTCP's alpha-based decrease per path.
    Dcm,
    /// MPTCP-D: psi-weighted coupled increase with extra-subflow elimination.
    MptcpD,
    /// MMPTCP: one scattered window, then LIA per path.
    Mmptcp,
    /// LIA (RFC 6356), halving on loss or CE.
    Lia,
    /// OLIA (Khalili et al., CoNEXT 2012): LIA's successor, Pareto-optimal, loss or CE halves.
    Olia,
    /// BALIA (Peng et al., IEEE/ACM ToN 2016): balanced linked adaptation, rate-dependent cut.
    Balia,
    /// DCTCP (RFC 8257) on every path, uncoupled.
    Dctcp,
    /// NewReno on every path, uncoupled, halving on loss or CE.
    Reno,
}

impl ControllerKind {
    /// Every kind with its name on command lines and in results, in the order they are
    /// documented: the one table of built-in names ([`ControllerKind::ALL`],
    /// [`ControllerKind::name`], error messages and help texts through [`crate::names`]).
    const TABLE: [(ControllerKind, &'static str); 10] = [
        (ControllerKind::Amp, "amp"),
        (ControllerKind::Xmp, "xmp"),
        (ControllerKind::Dcm, "dcm"),
        (ControllerKind::MptcpD, "mptcp-d"),
        (ControllerKind::Mmptcp, "mmptcp"),
        (ControllerKind::Lia, "lia"),
        (ControllerKind::Olia, "olia"),
        (ControllerKind::Balia, "balia"),
        (ControllerKind::Dctcp, "dctcp"),
        (ControllerKind::Reno, "reno"),
    ];

    /// Every kind, in the order they are documented.
    pub const ALL: [ControllerKind; 10] = {
        let mut all = [ControllerKind::Amp; 10];
        let mut i = 0;
        while i < all.len() {
            // The table lists the kinds in declaration order, so that `name` can index it.
            assert!(ControllerKind::TABLE[i].0 as usize == i);
            all[i] = ControllerKind::TABLE[i].0;
            i += 1;
        }
        all
    };

    /// The name used on command lines and in results.
    pub fn name(self) -> &'static str {
        ControllerKind::TABLE[self as usize].1
    }
}

impl fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ControllerKind {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ControllerKind::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ConfigError::UnknownController(s.to_owned()))
    }
}

/// A bad controller name or parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// No controller has this name.
    #[error("unknown controller `{0}` (known: {known})", known = crate::names().join(", "))]
    UnknownController(String),
    /// The controller has no parameter of this name.
    #[error("controller `{controller}` has no parameter `{param}` (it has: {known})")]
    UnknownParameter {
        /// The controller.
        controller: &'static str,
        /// The parameter asked for.
        param: String,
        /// The parameters it does have.
        known: &'static str,
    },
    /// The value does not parse or is out of range.
    #[error("bad value `{value}` for {controller} parameter `{param}`: {reason}")]
    BadValue {
        /// The controller.
        controller: &'static str,
        /// The parameter.
        param: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// How a coupled controller chooses the window of a path it opens (parameter `initial_window`).
///
/// QUIC gives every path RFC 9002's initial window of 10 packets, so a connection that opens 4
/// paths at once may send 40 packets before its first acknowledgment. `Shared` keeps the
/// connection's first burst at one initial window however many paths it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitialWindow {
    /// Every new path starts at RFC 9002's initial window ([`initial_window`](crate::coupled::initial_window)):
    /// QUIC multipath's rule and the default.
    #[default]
    PerPath,
    /// A new path takes an even share of the windows of the connection's paths still in their
    /// first slow start (no reaction yet), so opening it adds nothing to the connection's total
    /// window; every window keeps the `2 * mss` floor, so 4 paths of 1200 bytes share 12,000
    /// bytes as 3,000 each and 8 paths hold 2,400 each. A path opened once every other path has
    /// reacted starts at the floor (and slow-starts from there).
    Shared,
}

impl InitialWindow {
    /// The parameter's value names, as [`ConfigError::BadValue`] lists them.
    const NAMES: &'static str = "expected per-path or shared";

    /// The value's name on command lines and in results.
    pub fn name(self) -> &'static str {
        match self {
            InitialWindow::PerPath => "per-path",
            InitialWindow::Shared => "shared",
        }
    }
}

impl FromStr for InitialWindow {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [InitialWindow::PerPath, InitialWindow::Shared]
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or(())
    }
}

/// AMP parameters (AMP paper, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AmpConfig {
    /// ECN cut: `w -= w / beta`. At least 2.
    pub beta: f64,
    /// Rounds of the initial path with every active path at the minimum window before suppression.
    pub gamma: u32,
    /// CE-free rounds of the initial path before suppressed paths are released.
    pub tau: u32,
    /// The window of a path the connection opens.
    pub initial_window: InitialWindow,
    /// The minimum window of every path, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
    /// Whether subflow suppression and release (SSR) runs; without it AMP is its coupled
    /// increase and constant-factor cut alone (the paper's ablation, section 5.2).
    pub ssr: bool,
}

impl Default for AmpConfig {
    fn default() -> Self {
        AmpConfig {
            beta: 4.0,
            gamma: 2,
            tau: 8,
            initial_window: InitialWindow::PerPath,
            cwnd_min: DEFAULT_MIN_WINDOW,
            ssr: true,
        }
    }
}

/// XMP parameters (XMP paper, section 3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct XmpConfig {
    /// ECN cut, in whole packets: `cwnd -= max(floor(cwnd / beta), 1)`. At least 2.
    pub beta: f64,
    /// The window of a path the connection opens.
    pub initial_window: InitialWindow,
    /// The minimum window of every path, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
}

impl Default for XmpConfig {
    fn default() -> Self {
        XmpConfig {
            beta: 4.0,
            initial_window: InitialWindow::PerPath,
            cwnd_min: DEFAULT_MIN_WINDOW,
        }
    }
}

/// DCTCP parameters: its alpha estimator's gain and the minimum window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AlphaConfig {
    /// EWMA gain of alpha, in (0, 1].
    pub g: f64,
    /// The minimum window, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
}

impl Default for AlphaConfig {
    fn default() -> Self {
        AlphaConfig { g: 1.0 / 16.0, cwnd_min: DEFAULT_MIN_WINDOW }
    }
}

/// DCM parameters: DCTCP's alpha estimator and the coupled controllers' initial window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DcmConfig {
    /// EWMA gain of alpha, in (0, 1].
    pub g: f64,
    /// The window of a path the connection opens.
    pub initial_window: InitialWindow,
    /// The minimum window of every path, packets (`cwnd_min`), at least 1.
    pub cwnd_min: u32,
}

impl Default for DcmConfig {
    fn default() -> Self {
        DcmConfig {
            g: AlphaConfig::default().g,
            initial_window: InitialWindow::PerPath,
            cwnd_min: DEFAULT_MIN_WINDOW,
        }
    }
}

/// MPTCP-D parameters (MPTCP-D paper, Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MptcpDConfig {
    /// Whether extra-subflow elimination runs.
    pub ese: bool,
    /// RTT inflation threshold: a sample above `alpha * base` counts as inflated. Above 1.
    pub alpha: f64,
    /// Two inflated samples within `beta * base` of each other indicate a shared link. Positive.
    pub beta: f64,
    /// RTT samples per path during which ESE looks for link sharing. At least 1.
    pub candidates: u32,
}

impl Default for MptcpDConfig {
    fn default() -> Self {
        MptcpDConfig { ese: true, alpha: 1.3, beta: 0.1, candidates: 80 }
    }
}

/// How MMPTCP's scatter phase deals its one window over the paths (parameter `deal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dealing {
    /// Single packets at random, as the paper's packet scatter: every path gets the same whole
    /// number of packets and the packets left over go one each to paths drawn at random.
    Single,
    /// Pairs of packets, evenly, the left-over pairs and an odd packet to the first paths (a
    /// deviation from the paper: a pair is acknowledged at once by a QUIC receiver that
    /// acknowledges every second packet of a path).
    Pairs,
}

impl Dealing {
    /// The parameter's value names, as [`ConfigError::BadValue`] lists them.
    const NAMES: &'static str = "expected single or pairs";

    /// The value's name on command lines and in results.
    pub fn name(self) -> &'static str {
        match self {
            Dealing::Single => "single",
            Dealing::Pairs => "pairs",
        }
    }
}

impl FromStr for Dealing {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Dealing::Single, Dealing::Pairs].into_iter().find(|d| d.name() == s).ok_or(())
    }
}

/// MMPTCP parameters (MMPTCP paper).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MmptcpConfig {
    /// Bytes sent in packet-scatter phase before switching to per-path windows. At least 1.
    pub switch_bytes: u64,
    /// Also switch at the first congestion event: a loss (the paper's fast retransmission or RTO;
    /// a CE mark is not one).
    pub switch_on_congestion: bool,
    /// How the scatter phase's window is dealt over the paths.
    pub deal: Dealing,
}

impl Default for MmptcpConfig {
    fn default() -> Self {
        MmptcpConfig { switch_bytes: 100_000, switch_on_congestion: false, deal: Dealing::Pairs }
    }
}

/// A controller with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "algorithm", rename_all = "kebab-case")]
pub enum ControllerConfig {
    /// See [`ControllerKind::Amp`].
    Amp(AmpConfig),
    /// See [`ControllerKind::Xmp`].
    Xmp(XmpConfig),
    /// See [`ControllerKind::Dcm`].
    Dcm(DcmConfig),
    /// See [`ControllerKind::MptcpD`].
    MptcpD(MptcpDConfig),
    /// See [`ControllerKind::Mmptcp`].
    Mmptcp(MmptcpConfig),
    /// See [`ControllerKind::Lia`].
    Lia,
    /// See [`ControllerKind::Olia`].
    Olia,
    /// See [`ControllerKind::Balia`].
    Balia,
    /// See [`ControllerKind::Dctcp`].
    Dctcp(AlphaConfig),
    /// See [`ControllerKind::Reno`].
    Reno,
}

impl ControllerConfig {
    /// The algorithm with the papers' default parameters.
    pub fn with_defaults(kind: ControllerKind) -> Self {
        match kind {
            ControllerKind::Amp => ControllerConfig::Amp(AmpConfig::default()),
            ControllerKind::Xmp => ControllerConfig::Xmp(XmpConfig::default()),
            ControllerKind::Dcm => ControllerConfig::Dcm(DcmConfig::default()),
            ControllerKind::MptcpD => ControllerConfig::MptcpD(MptcpDConfig::default()),
            ControllerKind::Mmptcp => ControllerConfig::Mmptcp(MmptcpConfig::default()),
            ControllerKind::Lia => ControllerConfig::Lia,
            ControllerKind::Olia => ControllerConfig::Olia,
            ControllerKind::Balia => ControllerConfig::Balia,
            ControllerKind::Dctcp => ControllerConfig::Dctcp(AlphaConfig::default()),
            ControllerKind::Reno => ControllerConfig::Reno,
        }
    }

    /// Which algorithm this configures.
    pub fn kind(&self) -> ControllerKind {
        match self {
            ControllerConfig::Amp(_) => ControllerKind::Amp,
            ControllerConfig::Xmp(_) => ControllerKind::Xmp,
            ControllerConfig::Dcm(_) => ControllerKind::Dcm,
            ControllerConfig::MptcpD(_) => ControllerKind::MptcpD,
            ControllerConfig::Mmptcp(_) => ControllerKind::Mmptcp,
            ControllerConfig::Lia => ControllerKind::Lia,
            ControllerConfig::Olia => ControllerKind::Olia,
            ControllerConfig::Balia => ControllerKind::Balia,
            ControllerConfig::Dctcp(_) => ControllerKind::Dctcp,
            ControllerConfig::Reno => ControllerKind::Reno,
        }
    }

    /// Parse `name` and a list of `key=value` parameters, e.g. `("amp", ["beta=4", "tau=8"])`.
    pub fn parse<'a>(
        name: &str,
        params: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, ConfigError> {
        let mut config = ControllerConfig::with_defaults(name.parse()?);
        for param in params {
            let (key, value) = split_param(config.kind().name(), param)?;
            config.set(key, value)?;
        }
        Ok(config)
    }

    /// Set one parameter by name, checking its range.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let controller = self.kind().name();
        let known = self.parameter_names();
        let unknown = || ConfigError::UnknownParameter {
            controller,
            param: key.to_owned(),
            known: if known.is_empty() { "none" } else { known },
        };
        match (self, key) {
            (ControllerConfig::Amp(c), "beta") => c.beta = beta(controller, value)?,
            (ControllerConfig::Amp(c), "gamma") => c.gamma = positive(controller, "gamma", value)?,
            (ControllerConfig::Amp(c), "tau") => c.tau = positive(controller, "tau", value)?,
            (ControllerConfig::Amp(c), "initial_window") => {
                c.initial_window = initial_window(controller, value)?
            }
            (ControllerConfig::Amp(c), "cwnd_min") => c.cwnd_min = min_window(controller, value)?,
            (ControllerConfig::Amp(c), "ssr") => c.ssr = boolean(controller, "ssr", value)?,
            (ControllerConfig::Xmp(c), "beta") => c.beta = beta(controller, value)?,
            (ControllerConfig::Xmp(c), "initial_window") => {
                c.initial_window = initial_window(controller, value)?
            }
            (ControllerConfig::Xmp(c), "cwnd_min") => c.cwnd_min = min_window(controller, value)?,
            (ControllerConfig::Dcm(c), "g") => c.g = gain(controller, value)?,
            (ControllerConfig::Dcm(c), "initial_window") => {
                c.initial_window = initial_window(controller, value)?
            }
            (ControllerConfig::Dcm(c), "cwnd_min") => c.cwnd_min = min_window(controller, value)?,
            (ControllerConfig::Dctcp(c), "g") => c.g = gain(controller, value)?,
            (ControllerConfig::Dctcp(c), "cwnd_min") => c.cwnd_min = min_window(controller, value)?,
            (ControllerConfig::MptcpD(c), "ese") => c.ese = boolean(controller, "ese", value)?,
            (ControllerConfig::MptcpD(c), "alpha") => {
                c.alpha = float(controller, "alpha", value, |x| x > 1.0, "must be above 1")?
            }
            (ControllerConfig::MptcpD(c), "beta") => {
                c.beta = float(controller, "beta", value, |x| x > 0.0, "must be positive")?
            }
            (ControllerConfig::MptcpD(c), "candidates") => {
                c.candidates = positive(controller, "candidates", value)?
            }
            (ControllerConfig::Mmptcp(c), "switch_bytes") => {
                c.switch_bytes = positive(controller, "switch_bytes", value)?
            }
            (ControllerConfig::Mmptcp(c), "switch_on_congestion") => {
                c.switch_on_congestion = boolean(controller, "switch_on_congestion", value)?
            }
            (ControllerConfig::Mmptcp(c), "deal") => {
                c.deal = value.parse().map_err(|()| ConfigError::BadValue {
                    controller,
                    param: "deal",
                    value: value.to_owned(),
                    reason: Dealing::NAMES,
                })?
            }
            _ => return Err(unknown()),
        }
        Ok(())
    }

    /// Check every parameter's range, for configurations built as values rather than through
    /// [`ControllerConfig::parse`] / [`ControllerConfig::set`] (which check as they go).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let controller = self.kind().name();
        let check = |ok: bool, param: &'static str, value: String, reason: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::BadValue { controller, param, value, reason })
            }
        };
        let beta_ok = |b: f64| b.is_finite() && b >= 2.0;
        let floor_ok = |w: u32| {
            check(MIN_WINDOW_RANGE.contains(&w), "cwnd_min", w.to_string(), MIN_WINDOW_REASON)
        };
        match *self {
            ControllerConfig::Amp(c) => {
                check(beta_ok(c.beta), "beta", c.beta.to_string(), "must be at least 2")?;
                check(c.gamma >= 1, "gamma", c.gamma.to_string(), "must be at least 1")?;
                check(c.tau >= 1, "tau", c.tau.to_string(), "must be at least 1")?;
                floor_ok(c.cwnd_min)
            }
            ControllerConfig::Xmp(c) => {
                check(beta_ok(c.beta), "beta", c.beta.to_string(), "must be at least 2")?;
                floor_ok(c.cwnd_min)
            }
            ControllerConfig::Dcm(DcmConfig { g, cwnd_min, .. })
            | ControllerConfig::Dctcp(AlphaConfig { g, cwnd_min }) => {
                check(g > 0.0 && g <= 1.0, "g", g.to_string(), "must be in (0, 1]")?;
                floor_ok(cwnd_min)
            }
            ControllerConfig::MptcpD(c) => {
                let alpha_ok = c.alpha.is_finite() && c.alpha > 1.0;
                check(alpha_ok, "alpha", c.alpha.to_string(), "must be above 1")?;
                let beta_ok = c.beta.is_finite() && c.beta > 0.0;
                check(beta_ok, "beta", c.beta.to_string(), "must be positive")?;
                check(
                    c.candidates >= 1,
                    "candidates",
                    c.candidates.to_string(),
                    "must be at least 1",
                )
            }
            ControllerConfig::Mmptcp(c) => check(
                c.switch_bytes >= 1,
                "switch_bytes",
                c.switch_bytes.to_string(),
                "must be at least 1",
            ),
            ControllerConfig::Lia
            | ControllerConfig::Olia
            | ControllerConfig::Balia
            | ControllerConfig::Reno => Ok(()),
        }
    }

    /// A controller for one connection, after [`ControllerConfig::validate`].
    pub fn try_build(&self) -> Result<Box<dyn Controller>, ConfigError> {
        self.validate()?;
        Ok(match *self {
            ControllerConfig::Amp(c) => Box::new(
                Coupled::new(Amp::new(c))
                    .with_initial_window(c.initial_window)
                    .with_min_window(c.cwnd_min),
            ),
            ControllerConfig::Xmp(cfg) => Box::new(
                Coupled::new(Xmp { cfg })
                    .with_initial_window(cfg.initial_window)
                    .with_min_window(cfg.cwnd_min),
            ),
            ControllerConfig::Dcm(c) => Box::new(
                Coupled::new(Dcm { g: c.g })
                    .with_initial_window(c.initial_window)
                    .with_min_window(c.cwnd_min),
            ),
            ControllerConfig::MptcpD(c) => Box::new(Coupled::new(MptcpD::new(c))),
            ControllerConfig::Mmptcp(c) => Box::new(Coupled::new(Mmptcp::new(c))),
            ControllerConfig::Lia => Box::new(Coupled::new(Lia)),
            ControllerConfig::Olia => Box::new(Coupled::new(Olia)),
            ControllerConfig::Balia => Box::new(Coupled::new(Balia)),
            ControllerConfig::Dctcp(c) => {
                Box::new(Coupled::new(Dctcp { g: c.g, l4s: None }).with_min_window(c.cwnd_min))
            }
            ControllerConfig::Reno => Box::new(Coupled::new(Reno)),
        })
    }

    /// A controller for one connection (give every connection its own).
    ///
    /// # Panics
    ///
    /// If a parameter is out of range (see [`ControllerConfig::validate`]). Configurations from
    /// [`ControllerConfig::parse`], [`ControllerConfig::set`] and the defaults always build; use
    /// [`ControllerConfig::try_build`] for values assembled by hand.
    pub fn build(&self) -> Box<dyn Controller> {
        match self.try_build() {
            Ok(controller) => controller,
            Err(e) => panic!("invalid controller configuration: {e}"),
        }
    }

    /// The parameter names [`ControllerConfig::set`] accepts, comma-separated.
    pub fn parameter_names(&self) -> &'static str {
        match self {
            ControllerConfig::Amp(_) => "beta, gamma, tau, initial_window, cwnd_min, ssr",
            ControllerConfig::Xmp(_) => "beta, initial_window, cwnd_min",
            ControllerConfig::Dcm(_) => "g, initial_window, cwnd_min",
            ControllerConfig::Dctcp(_) => "g, cwnd_min",
            ControllerConfig::MptcpD(_) => "ese, alpha, beta, candidates",
            ControllerConfig::Mmptcp(_) => "switch_bytes, switch_on_congestion, deal",
            ControllerConfig::Lia
            | ControllerConfig::Olia
            | ControllerConfig::Balia
            | ControllerConfig::Reno => "",
        }
    }
}

/// One `key=value` parameter of `controller`, trimmed; the one grammar of built-in and
/// registered controllers' parameters.
pub(crate) fn split_param<'a>(
    controller: &'static str,
    param: &'a str,
) -> Result<(&'a str, &'a str), ConfigError> {
    let (key, value) = param.split_once('=').ok_or(ConfigError::BadValue {
        controller,
        param: "parameter",
        value: param.to_owned(),
        reason: "expected key=value",
    })?;
    Ok((key.trim(), value.trim()))
}

fn float(
    controller: &'static str,
    param: &'static str,
    value: &str,
    valid: impl Fn(f64) -> bool,
    reason: &'static str,
) -> Result<f64, ConfigError> {
    let bad = |reason| ConfigError::BadValue { controller, param, value: value.to_owned(), reason };
    let x: f64 = value.parse().map_err(|_| bad("not a number"))?;
    if !x.is_finite() || !valid(x) {
        return Err(bad(reason));
    }
    Ok(x)
}

fn beta(controller: &'static str, value: &str) -> Result<f64, ConfigError> {
    float(controller, "beta", value, |x| x >= 2.0, "must be at least 2")
}

fn initial_window(controller: &'static str, value: &str) -> Result<InitialWindow, ConfigError> {
    value.parse().map_err(|()| ConfigError::BadValue {
        controller,
        param: "initial_window",
        value: value.to_owned(),
        reason: InitialWindow::NAMES,
    })
}

/// The `cwnd_min` values accepted, packets: a floor above RFC 9002's initial window of 10
/// packets would make the first window a floor, which no paper studies.
const MIN_WINDOW_RANGE: std::ops::RangeInclusive<u32> = 1..=10;
const MIN_WINDOW_REASON: &str = "must be 1 to 10 packets";

fn min_window(controller: &'static str, value: &str) -> Result<u32, ConfigError> {
    let bad = |reason| ConfigError::BadValue {
        controller,
        param: "cwnd_min",
        value: value.to_owned(),
        reason,
    };
    let w: u32 = value.parse().map_err(|_| bad("not a whole number"))?;
    if !MIN_WINDOW_RANGE.contains(&w) {
        return Err(bad(MIN_WINDOW_REASON));
    }
    Ok(w)
}

fn boolean(
    controller: &'static str,
    param: &'static str,
    value: &str,
) -> Result<bool, ConfigError> {
    value.parse().map_err(|_| ConfigError::BadValue {
        controller,
        param,
        value: value.to_owned(),
        reason: "expected true or false",
    })
}

fn gain(controller: &'static str, value: &str) -> Result<f64, ConfigError> {
    float(controller, "g", value, |x| x > 0.0 && x <= 1.0, "must be in (0, 1]")
}

fn positive<T: FromStr + PartialOrd + Default>(
    controller: &'static str,
    param: &'static str,
    value: &str,
) -> Result<T, ConfigError> {
    let bad = |reason| ConfigError::BadValue { controller, param, value: value.to_owned(), reason };
    let x: T = value.parse().map_err(|_| bad("not a whole number"))?;
    if x <= T::default() {
        return Err(bad("must be at least 1"));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Driver;

    #[test]
    fn every_name_round_trips_and_builds_with_the_papers_defaults() {
        for kind in ControllerKind::ALL {
            assert_eq!(kind.name().parse::<ControllerKind>(), Ok(kind));
            let config = ControllerConfig::parse(kind.name(), []).unwrap();
            assert_eq!(config, ControllerConfig::with_defaults(kind));
            assert_eq!(config.validate(), Ok(()));
            assert_eq!(config.build().name(), kind.name());
        }
        assert_eq!("MPTCP-D".parse::<ControllerKind>(), Ok(ControllerKind::MptcpD));
        assert_eq!(
            ControllerConfig::with_defaults(ControllerKind::Amp),
            ControllerConfig::Amp(AmpConfig {
                beta: 4.0,
                gamma: 2,
                tau: 8,
                initial_window: InitialWindow::PerPath,
                cwnd_min: 2,
                ssr: true,
            })
        );
        assert_eq!(
            ControllerConfig::with_defaults(ControllerKind::MptcpD),
            ControllerConfig::MptcpD(MptcpDConfig {
                ese: true,
                alpha: 1.3,
                beta: 0.1,
                candidates: 80
            })
        );
        assert_eq!(
            ControllerConfig::with_defaults(ControllerKind::Dcm),
            ControllerConfig::Dcm(DcmConfig {
                g: 0.0625,
                initial_window: InitialWindow::PerPath,
                cwnd_min: 2
            })
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_name_from_the_one_table() {
        let err = ControllerConfig::parse("vegas", []).unwrap_err().to_string();
        for name in crate::names() {
            assert!(err.contains(name), "{name} missing: {err}");
        }
        assert!(err.contains("amp, xmp, dcm, mptcp-d, mmptcp, lia, olia, balia, dctcp, reno"));
        assert!(["prague", "cprague", "cubic", "newreno"].iter().all(|n| err.contains(n)), "{err}");
        assert_eq!(
            ControllerKind::ALL.map(ControllerKind::name),
            ControllerKind::TABLE.map(|(_, n)| n)
        );
    }

    #[test]
    fn unknown_names_and_parameters_are_errors() {
        assert_eq!(
            ControllerConfig::parse("cubic", []),
            Err(ConfigError::UnknownController("cubic".into()))
        );
        let err = ControllerConfig::parse("xmp", ["gamma=2"]).unwrap_err();
        assert!(matches!(err, ConfigError::UnknownParameter { param, .. } if param == "gamma"));
        let err = ControllerConfig::parse("lia", ["beta=4"]).unwrap_err();
        assert!(err.to_string().contains("it has: none"), "{err}");
        let err = ControllerConfig::parse("amp", ["beta"]).unwrap_err();
        assert!(err.to_string().contains("key=value"), "{err}");
    }

    #[test]
    fn out_of_range_values_are_errors() {
        let bad = [
            ("amp", "beta=1.9"),
            ("amp", "beta=inf"),
            ("amp", "beta=NaN"),
            ("amp", "gamma=0"),
            ("amp", "gamma=-1"),
            ("amp", "tau=0"),
            ("amp", "tau=1.5"),
            ("xmp", "beta=1"),
            ("dcm", "g=0"),
            ("dcm", "g=1.01"),
            ("dctcp", "g=-0.5"),
            ("dctcp", "g=x"),
            ("mptcp-d", "alpha=1"),
            ("mptcp-d", "beta=0"),
            ("mptcp-d", "candidates=0"),
            ("mptcp-d", "ese=maybe"),
            ("mmptcp", "switch_bytes=0"),
            ("mmptcp", "switch_on_congestion=1"),
            ("mmptcp", "deal=random"),
            ("mmptcp", "deal=Single"),
            ("amp", "initial_window=10"),
            ("xmp", "initial_window=Shared"),
            ("amp", "cwnd_min=0"),
            ("xmp", "cwnd_min=11"),
            ("dcm", "cwnd_min=1.5"),
            ("dctcp", "cwnd_min=-1"),
            ("amp", "ssr=off"),
        ];
        for (name, param) in bad {
            let err = ControllerConfig::parse(name, [param]).unwrap_err();
            let key = param.split('=').next().unwrap();
            assert!(
                matches!(err, ConfigError::BadValue { param: p, .. } if p == key),
                "{name} {param}: {err}"
            );
        }
        let good = [
            ("amp", "beta=2"),
            ("xmp", "beta=5"),
            ("dcm", "g=1"),
            ("mptcp-d", "ese=false"),
            ("mmptcp", "switch_on_congestion=true"),
            ("mmptcp", "deal=pairs"),
            ("amp", "initial_window=per-path"),
            ("dcm", "initial_window=shared"),
            ("amp", "cwnd_min=1"),
            ("dctcp", "cwnd_min=10"),
            ("amp", "ssr=false"),
        ];
        for (name, param) in good {
            assert!(ControllerConfig::parse(name, [param]).is_ok(), "{name} {param}");
        }
        let single = ControllerConfig::parse("mmptcp", ["deal=single"]).unwrap();
        let expect = MmptcpConfig { deal: Dealing::Single, ..Default::default() };
        assert_eq!(single, ControllerConfig::Mmptcp(expect));
        let shared = ControllerConfig::parse("xmp", ["initial_window=shared"]).unwrap();
        let expect = XmpConfig { initial_window: InitialWindow::Shared, ..Default::default() };
        assert_eq!(shared, ControllerConfig::Xmp(expect));
        // The uncoupled controllers have no such parameter: one path, one initial window.
        let err = ControllerConfig::parse("dctcp", ["initial_window=shared"]).unwrap_err();
        assert!(matches!(err, ConfigError::UnknownParameter { .. }), "{err}");
        let c = ControllerConfig::parse("amp", [" gamma = 3 ", "tau=6"]).unwrap();
        let expect = AmpConfig { gamma: 3, tau: 6, ..Default::default() };
        assert_eq!(c, ControllerConfig::Amp(expect));
    }

    #[test]
    fn validate_catches_hand_built_values() {
        let bad = [
            (ControllerConfig::Amp(AmpConfig { beta: 1.5, ..Default::default() }), "beta"),
            (ControllerConfig::Amp(AmpConfig { gamma: 0, ..Default::default() }), "gamma"),
            (ControllerConfig::Amp(AmpConfig { tau: 0, ..Default::default() }), "tau"),
            (ControllerConfig::Xmp(XmpConfig { beta: f64::NAN, ..Default::default() }), "beta"),
            (ControllerConfig::Dcm(DcmConfig { g: 0.0, ..Default::default() }), "g"),
            (ControllerConfig::Dctcp(AlphaConfig { g: 2.0, cwnd_min: 2 }), "g"),
            (ControllerConfig::Dctcp(AlphaConfig { g: 0.5, cwnd_min: 0 }), "cwnd_min"),
            (ControllerConfig::Xmp(XmpConfig { cwnd_min: 11, ..Default::default() }), "cwnd_min"),
            (ControllerConfig::MptcpD(MptcpDConfig { alpha: 0.9, ..Default::default() }), "alpha"),
            (ControllerConfig::MptcpD(MptcpDConfig { beta: -1.0, ..Default::default() }), "beta"),
            (
                ControllerConfig::MptcpD(MptcpDConfig { candidates: 0, ..Default::default() }),
                "candidates",
            ),
            (
                ControllerConfig::Mmptcp(MmptcpConfig { switch_bytes: 0, ..Default::default() }),
                "switch_bytes",
            ),
        ];
        for (config, param) in bad {
            let err = config.validate().unwrap_err();
            assert!(
                matches!(err, ConfigError::BadValue { param: p, .. } if p == param),
                "{config:?}: expected a bad `{param}`, got: {err}"
            );
            let build = config.try_build().err().map(|e| e.to_string());
            assert_eq!(build, Some(err.to_string()), "{config:?}");
        }
    }

    /// The window of one path of `name` with `params` after persistent congestion, which
    /// collapses every controller's window to its floor (RFC 9002 section 7.6.2).
    fn floor_after_persistent_congestion(name: &str, params: &[&str]) -> u64 {
        let mut d = Driver::new(ControllerConfig::parse(name, params.iter().copied()).unwrap());
        d.add_path(0);
        d.send(0, 10);
        d.lose_pn(0, 5, true);
        d.window(0)
    }

    #[test]
    fn cwnd_min_sets_the_floor_in_packets() {
        for name in ["amp", "xmp", "dcm", "dctcp"] {
            assert_eq!(floor_after_persistent_congestion(name, &[]), 2 * 1200, "{name} default");
            assert_eq!(floor_after_persistent_congestion(name, &["cwnd_min=1"]), 1200, "{name}");
            assert_eq!(
                floor_after_persistent_congestion(name, &["cwnd_min=3"]),
                3 * 1200,
                "{name}"
            );
        }
        // XMP's ECN cut counts whole packets with its own floor, which follows the parameter.
        for (params, floor) in [(&[][..], 2 * 1200), (&["cwnd_min=1"][..], 1200)] {
            let mut d =
                Driver::new(ControllerConfig::parse("xmp", params.iter().copied()).unwrap());
            d.add_path(0);
            d.round(0, 10, 1); // leave slow start
            d.round(0, 1, 0);
            let windows: Vec<u64> = (0..20)
                .map(|_| {
                    d.round(0, 1, 1);
                    d.window(0)
                })
                .collect();
            assert_eq!(windows.iter().min(), Some(&floor), "xmp {params:?}: {windows:?}");
        }
        let err = ControllerConfig::parse("lia", ["cwnd_min=1"]).unwrap_err();
        assert!(matches!(err, ConfigError::UnknownParameter { .. }), "{err}");
        let err = ControllerConfig::parse("amp", ["floor=1"]).unwrap_err();
        assert!(err.to_string().contains("cwnd_min, ssr"), "{err}");
    }

    #[test]
    #[should_panic(expected = "invalid controller configuration")]
    fn build_panics_on_an_invalid_value() {
        ControllerConfig::Amp(AmpConfig { gamma: 0, ..Default::default() }).build();
    }
}
