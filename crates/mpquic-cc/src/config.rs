//! Choosing a controller: by name, with the papers' defaults, or by typed configuration.
//!
//! The built-ins are one table, the `builtins!` invocation below: each line names a built-in
//! and the typed configuration that carries its parameters ([`AmpConfig`], ...; defined, read
//! and checked next to its algorithm in `alg`). [`ControllerKind`] and [`ControllerConfig`]
//! are made from it, and so are the built-ins' registrations: the registry
//! ([`crate::register`]) holds the built-ins as it holds a user's controller, so a name is looked
//! up, and a parameter it does not take refused, in one place.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::alg::{balia::Balia, lia::Lia, olia::Olia, reno::Reno};
use crate::builtin::builtins;
use crate::param::split_param;
use crate::{AlphaConfig, AmpConfig, Controller, DcmConfig, MmptcpConfig, MptcpDConfig, XmpConfig};

builtins! {
    /// AMP: RTT-agnostic coupled increase, ECN cut by 1/beta, subflow suppression and release.
    Amp = "amp", configured by AmpConfig;
    /// XMP: BOS (ECN cut by 1/beta) and TraSh (rate-based coupled increase).
    Xmp = "xmp", configured by XmpConfig;
    /// DCM: LIA's coupled increase with DCTCP's alpha-based decrease per path.
    Dcm = "dcm", configured by DcmConfig;
    /// MPTCP-D: psi-weighted coupled increase with extra-subflow elimination.
    MptcpD = "mptcp-d", configured by MptcpDConfig;
    /// MMPTCP: one scattered window, then LIA per path.
    Mmptcp = "mmptcp", configured by MmptcpConfig;
    /// LIA (RFC 6356), halving on loss or CE.
    Lia = "lia", parameterless Lia;
    /// OLIA (Khalili et al., CoNEXT 2012): LIA's successor, Pareto-optimal, loss or CE halves.
    Olia = "olia", parameterless Olia;
    /// BALIA (Peng et al., IEEE/ACM ToN 2016): balanced linked adaptation, rate-dependent cut.
    Balia = "balia", parameterless Balia;
    /// DCTCP (RFC 8257) on every path, uncoupled.
    Dctcp = "dctcp", configured by AlphaConfig;
    /// NewReno on every path, uncoupled, halving on loss or CE.
    Reno = "reno", parameterless Reno;
}

impl ControllerKind {
    /// Every kind, in the order they are documented.
    pub const ALL: [ControllerKind; 10] = {
        let mut all = [ControllerKind::Amp; 10];
        // The table has a line per kind: a built-in added to it is added to this type's length.
        assert!(ControllerKind::TABLE.len() == all.len());
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
    pub(crate) const NAMES: &'static str = "expected per-path or shared";

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

impl ControllerConfig {
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
        *self = self.builtin().with(self.kind().name(), key, value)?;
        Ok(())
    }

    /// Check every parameter's range, for configurations built as values rather than through
    /// [`ControllerConfig::parse`] / [`ControllerConfig::set`] (which check as they go).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.builtin().validate(self.kind().name())
    }

    /// A controller for one connection, after [`ControllerConfig::validate`].
    pub fn try_build(&self) -> Result<Box<dyn Controller>, ConfigError> {
        self.validate()?;
        Ok(self.builtin().build())
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

    /// The parameter names [`ControllerConfig::set`] accepts, comma-separated (as the
    /// registry lists them in errors).
    pub fn parameter_names(&self) -> &'static str {
        crate::registry::parameter_names(self.kind().name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Driver;
    use crate::Dealing;

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
