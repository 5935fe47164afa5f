//! The controller spec: which congestion control a connection runs, parsed from one string and
//! written back as one.

use std::fmt;
use std::str::FromStr;

use mpquic_cc::{ConfigError, ControllerChoice, ControllerConfig, ControllerKind, TRANSPORT_NAMES};
use serde::Serialize;

/// Which congestion control a connection runs.
///
/// Parsed from one string, `name` or `name:key=value,key=value`, as the command line takes it;
/// bad names and parameters are refused with the reason:
///
/// ```
/// use mpquic_choice::Congestion;
///
/// let amp: Congestion = "amp:beta=8,tau=4".parse()?;
/// assert_eq!(amp.name(), "amp");
/// assert_eq!("cubic".parse(), Ok(Congestion::StackCubic));
/// // The same from a name and separate parameters:
/// assert_eq!(Congestion::parse("amp", ["beta=8", "tau=4"]), Ok(amp));
///
/// let err = "amp:alpha=1".parse::<Congestion>().unwrap_err();
/// assert!(err.to_string().contains("no parameter `alpha`"), "{err}");
/// # Ok::<(), mpquic_cc::ConfigError>(())
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

/// The transport's own controllers, in the order of [`TRANSPORT_NAMES`], the names mpquic-cc
/// keeps from registrations: their one table of names.
const STACK: [Congestion; 2] = [Congestion::StackCubic, Congestion::StackNewReno];

impl Congestion {
    /// Parse a controller name (`cubic`, `newreno`, any mpquic-cc name or a registered one) and
    /// `key=value` parameters. The built-ins are registered too, but a built-in's name is read
    /// into its typed configuration ([`Congestion::Coupled`]): [`Congestion::spec`] then writes
    /// only the parameters that differ from the defaults, and results record every parameter
    /// with its type.
    pub fn parse<'a>(
        name: &str,
        params: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, ConfigError> {
        let stack = match TRANSPORT_NAMES.iter().position(|n| n.eq_ignore_ascii_case(name)) {
            Some(i) => STACK[i].clone(),
            None if name.parse::<ControllerKind>().is_err() => {
                return ControllerChoice::parse(name, params).map(Congestion::Custom)
            }
            None => return ControllerConfig::parse(name, params).map(Congestion::Coupled),
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

    /// The spec in one string, as [`FromStr`] reads it back to this value: the name, then
    /// the parameters that differ from the controller's defaults (`"amp"`, `"amp:beta=8.0"`,
    /// a registered controller's parameters as they were given). The one formatter of
    /// controller specs: a process launched with a spec gets it through here.
    ///
    /// ```
    /// use mpquic_choice::Congestion;
    ///
    /// let amp: Congestion = "AMP: tau=4, beta=4".parse()?;
    /// assert_eq!(amp.spec(), "amp:tau=4");
    /// assert_eq!(amp.spec().parse::<Congestion>()?, amp);
    /// # Ok::<(), mpquic_cc::ConfigError>(())
    /// ```
    pub fn spec(&self) -> String {
        let params: Vec<String> = match self {
            Congestion::Coupled(config) => changed_parameters(config),
            Congestion::Custom(choice) => {
                choice.params().map(|(k, v)| format!("{k}={v}")).collect()
            }
            Congestion::StackCubic | Congestion::StackNewReno => Vec::new(),
        };
        if params.is_empty() {
            self.name().to_owned()
        } else {
            format!("{}:{}", self.name(), params.join(","))
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &'static str {
        match self {
            Congestion::Coupled(config) => config.kind().name(),
            Congestion::Custom(choice) => choice.name(),
            Congestion::StackCubic => TRANSPORT_NAMES[0],
            Congestion::StackNewReno => TRANSPORT_NAMES[1],
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

/// `key=value` for each parameter of `config` that differs from its controller's defaults,
/// read from the configuration's serde form, whose field names and value names are the
/// parameters' (`initial_window = "shared"`, `deal = "pairs"`): a parameter added to a
/// configuration is written without a line here.
fn changed_parameters(config: &ControllerConfig) -> Vec<String> {
    let fields = |c: &ControllerConfig| match serde_json::to_value(c) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => unreachable!("a controller configuration serializes as a map"),
    };
    let defaults = fields(&ControllerConfig::with_defaults(config.kind()));
    let value = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    fields(config)
        .iter()
        .filter(|(key, v)| *key != "algorithm" && defaults.get(*key) != Some(*v))
        .map(|(key, v)| format!("{key}={}", value(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_cc::{AmpConfig, Dealing, InitialWindow, MmptcpConfig};

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

    /// Every name the parser knows (built-ins, the transport's, the registered), and specs
    /// with parameters of every kind of value.
    fn specs() -> Vec<String> {
        let mut specs: Vec<String> = mpquic_cc::names().into_iter().map(String::from).collect();
        specs.extend(
            [
                "amp:beta=8,tau=4,gamma=3,ssr=false,cwnd_min=1,initial_window=shared",
                "xmp:beta=2.5",
                "dcm:g=0.1",
                "dctcp:g=0.0625,cwnd_min=10",
                "mptcp-d:ese=false,alpha=1.25,beta=0.3,candidates=7",
                "mmptcp:switch_bytes=1,switch_on_congestion=true,deal=single",
                "amp:beta=4",
                "AMP: tau = 4",
            ]
            .map(String::from),
        );
        specs
    }

    #[test]
    fn the_spec_reads_back_as_the_same_value() {
        for text in specs() {
            let parsed: Congestion = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            let spec = parsed.spec();
            assert_eq!(spec.parse::<Congestion>().as_ref(), Ok(&parsed), "{text} -> {spec}");
            assert_eq!(spec.parse::<Congestion>().unwrap().spec(), spec, "{text}: a fixed point");
        }
        let amp = Congestion::Coupled(ControllerConfig::Amp(AmpConfig {
            initial_window: InitialWindow::Shared,
            beta: 1.0 / 3.0 + 2.0,
            ..Default::default()
        }));
        assert_eq!(amp.spec().parse::<Congestion>(), Ok(amp));
        let single = MmptcpConfig { deal: Dealing::Single, ..Default::default() };
        let mmptcp = Congestion::Coupled(ControllerConfig::Mmptcp(single));
        assert_eq!(mmptcp.spec(), "mmptcp:deal=single");
        assert_eq!(Congestion::default().spec(), "amp");
        assert_eq!("cubic".parse::<Congestion>().unwrap().spec(), "cubic");
        for stack in STACK {
            assert_eq!(stack.name().parse::<Congestion>(), Ok(stack.clone()));
        }
    }
}
