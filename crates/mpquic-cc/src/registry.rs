//! Controllers registered by name, as Linux's `tcp_register_congestion_control` does: a program
//! that embeds the library registers its own controller once, and from then on the name is
//! accepted wherever a built-in name is (the library's controller strings, the command line, the
//! simulator, the scenario files), with its `key=value` parameters checked as a built-in's are.
//!
//! The controllers this crate ships are registered the same way, with the same checks, when the
//! registry is first used: the built-ins from their one table (`crate::builtin`; their typed
//! configurations, [`crate::ControllerConfig`], read the same parameters), then Prague and the
//! coupled cprague (`crate::alg::prague` and `crate::alg::cprague`). Nothing distinguishes them
//! from a user's but that their names are taken from the start.
//!
//! The registry is process-wide because the places that parse controller names (the `mpquic`
//! command line, the scenario validator, the simulator) share no context object; it only grows
//! (a registered name stays registered, as a loaded kernel module's does until unloaded).
//!
//! Registration checks what can be checked before any connection runs:
//! - the name fits the controller-string grammar (`name:key=value,...`): lowercase ASCII letters,
//!   digits, `-` and `_`, starting with a letter;
//! - it is not one of the transport's own (`cubic`, `newreno`), and not taken (a built-in's
//!   included);
//! - the parameter names fit the grammar and are unique;
//! - the factory builds a controller from the defaults (no parameters), and that controller
//!   reports the registered name (snapshots, logs and results carry it).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, RwLock};

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::param::split_param;
use crate::{ConfigError, Controller, ControllerKind};

/// Names the transport keeps for its own uncoupled controllers (`mpquic::Congestion`).
pub const TRANSPORT_NAMES: [&str; 2] = ["cubic", "newreno"];

/// How a registered controller is built from its parameters.
type Build = dyn Fn(&Params) -> Result<Box<dyn Controller>, ConfigError> + Send + Sync;

/// A controller to register: its name, the parameters it takes, and how to build one.
pub struct Registration {
    name: &'static str,
    parameters: &'static [&'static str],
    build: Arc<Build>,
}

impl Registration {
    /// `build` makes one connection's controller from the `key=value` parameters given (only
    /// names in `parameters` reach it); it refuses bad values with
    /// [`ConfigError::BadValue`], most simply through [`Params::get_or`].
    pub fn new(
        name: &'static str,
        parameters: &'static [&'static str],
        build: impl Fn(&Params) -> Result<Box<dyn Controller>, ConfigError> + Send + Sync + 'static,
    ) -> Self {
        Registration { name, parameters, build: Arc::new(build) }
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegisterError {
    /// The name does not fit the controller-string grammar.
    #[error("controller name `{0}` must be lowercase ASCII letters, digits, `-` or `_`, starting with a letter")]
    BadName(String),
    /// A built-in, the transport or an earlier registration has the name.
    #[error("controller name `{0}` is taken")]
    Taken(String),
    /// A parameter name does not fit the grammar or is listed twice.
    #[error("controller `{controller}`: bad or repeated parameter name `{param}`")]
    BadParameter {
        /// The controller.
        controller: String,
        /// The parameter name.
        param: String,
    },
    /// The factory failed on the defaults.
    #[error("controller `{0}` does not build with its defaults: {1}")]
    DefaultsRefused(String, ConfigError),
    /// The controller built reports another name.
    #[error("controller registered as `{registered}` calls itself `{reported}`")]
    NameMismatch {
        /// The name registered.
        registered: String,
        /// What its controller's `name()` says.
        reported: String,
    },
}

/// One registered controller.
struct Entry {
    name: &'static str,
    parameters: &'static [&'static str],
    /// `parameters` joined, for error messages (kept as `&'static str` like the built-ins').
    known: &'static str,
    build: Arc<Build>,
}

type Registry = BTreeMap<&'static str, Arc<Entry>>;

/// Registered controllers by name, the crate's own first.
static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(|| {
    let mut registry = Registry::new();
    for registration in crate::alg::registrations() {
        checked(registration)
            .and_then(|entry| insert(&mut registry, entry))
            .expect("a controller of this crate fails registration");
    }
    RwLock::new(registry)
});

/// Whether `name` fits the grammar of names in controller strings (`name:key=value,...`):
/// lowercase ASCII letters, digits, `-` and `_`, starting with a letter. Other registries
/// whose names share command lines (the transport's schedulers) use it too.
pub fn is_valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Register a controller under its name (see the module docs for what is checked).
///
/// ```
/// use mpquic_cc::coupled::{Algorithm, Core, Coupled, Slot};
/// use mpquic_cc::{register, Controller, ControllerChoice, Registration};
///
/// /// Reno with a configurable increase per round, in packets.
/// #[derive(Debug, Clone)]
/// struct Gentle {
///     packets: f64,
/// }
///
/// impl Algorithm for Gentle {
///     type Path = ();
///     fn name(&self) -> &'static str {
///         "gentle"
///     }
///     fn ca_increase(&self, core: &Core<()>, path: Slot, bytes: u64) -> f64 {
///         let p = core.path(path);
///         self.packets * p.mss_f() * bytes as f64 / p.cwnd()
///     }
/// }
///
/// register(Registration::new("gentle", &["packets"], |params| {
///     let packets = params.get_or("packets", 0.5, |&x: &f64| x > 0.0, "must be positive")?;
///     Ok(Box::new(Coupled::new(Gentle { packets })))
/// }))?;
///
/// let choice = ControllerChoice::parse("gentle", ["packets=0.25"])?;
/// assert_eq!(choice.build().name(), "gentle");
/// assert!(ControllerChoice::parse("gentle", ["packets=-1"]).is_err());
/// assert!(ControllerChoice::parse("gentle", ["beta=4"]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register(registration: Registration) -> Result<(), RegisterError> {
    if lookup(registration.name).is_some() {
        return Err(RegisterError::Taken(registration.name.to_owned()));
    }
    let entry = checked(registration)?;
    // Checked again under the write lock: two threads may register the same name at once.
    insert(&mut REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner()), entry)
}

/// Add a checked entry under a name not yet taken.
fn insert(registry: &mut Registry, entry: Entry) -> Result<(), RegisterError> {
    if registry.contains_key(entry.name) {
        return Err(RegisterError::Taken(entry.name.to_owned()));
    }
    registry.insert(entry.name, Arc::new(entry));
    Ok(())
}

/// The entry of a registration that passes every check but the registry's own names (see the
/// module docs).
fn checked(registration: Registration) -> Result<Entry, RegisterError> {
    let Registration { name, parameters, build } = registration;
    if !is_valid_name(name) {
        return Err(RegisterError::BadName(name.to_owned()));
    }
    if TRANSPORT_NAMES.contains(&name) {
        return Err(RegisterError::Taken(name.to_owned()));
    }
    for (k, param) in parameters.iter().enumerate() {
        if !is_valid_name(param) || parameters[..k].contains(param) {
            let (controller, param) = (name.to_owned(), (*param).to_owned());
            return Err(RegisterError::BadParameter { controller, param });
        }
    }
    let known = if parameters.is_empty() { "none" } else { leak_joined(parameters) };
    let entry = Entry { name, parameters, known, build };
    let built = (entry.build)(&Params { entry: &entry, values: Vec::new() })
        .map_err(|e| RegisterError::DefaultsRefused(name.to_owned(), e))?;
    if built.name() != name {
        let reported = built.name().to_owned();
        return Err(RegisterError::NameMismatch { registered: name.to_owned(), reported });
    }
    Ok(entry)
}

/// The names registered so far, sorted: the built-ins' ([`ControllerKind::ALL`]), this crate's
/// Prague and cprague, and the program's.
pub fn registered() -> Vec<&'static str> {
    REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner()).keys().copied().collect()
}

/// Every controller name a controller string may take, in the order they are documented: the
/// built-ins ([`ControllerKind::ALL`]), the other registered ones, sorted (this crate's Prague
/// and cprague, and the program's), and the transport's own ([`TRANSPORT_NAMES`]). Error
/// messages, help texts and plots list these, so a name is written once.
pub fn names() -> Vec<&'static str> {
    let builtins = ControllerKind::ALL.map(ControllerKind::name);
    let others = registered().into_iter().filter(|name| !builtins.contains(name));
    builtins.into_iter().chain(others).chain(TRANSPORT_NAMES).collect()
}

fn lookup(name: &str) -> Option<Arc<Entry>> {
    let registry = REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.get(name.to_ascii_lowercase().as_str()).cloned()
}

/// The entry of a built-in, which the registry holds from the start.
fn builtin(name: &'static str) -> Arc<Entry> {
    lookup(name).unwrap_or_else(|| panic!("built-in controller `{name}` is not registered"))
}

/// The error for a parameter the built-in `controller` does not take, as for any registered
/// controller ([`crate::builtin::unknown_parameter`]).
pub(crate) fn unknown_parameter(controller: &'static str, key: &str) -> ConfigError {
    builtin(controller).unknown_parameter(key)
}

/// The parameters of the built-in `controller`, comma-separated, empty if it takes none
/// ([`crate::ControllerConfig::parameter_names`]).
pub(crate) fn parameter_names(controller: &'static str) -> &'static str {
    let entry = builtin(controller);
    if entry.parameters.is_empty() {
        ""
    } else {
        entry.known
    }
}

impl Entry {
    /// The error for a parameter this controller does not take, listing those it does.
    fn unknown_parameter(&self, key: &str) -> ConfigError {
        ConfigError::UnknownParameter {
            controller: self.name,
            param: key.to_owned(),
            known: self.known,
        }
    }
}

/// Error messages want the list as one `&'static str`; a registration lives as long as the
/// process, so leaking this one string per registration costs nothing that grows.
fn leak_joined(parameters: &[&str]) -> &'static str {
    Box::leak(parameters.join(", ").into_boxed_str())
}

/// The `key=value` parameters a registered controller's factory is given.
pub struct Params<'a> {
    entry: &'a Entry,
    values: Vec<(&'static str, String)>,
}

impl Params<'_> {
    /// The value given for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key` parsed as a `T`, or `default` if it was not given; a value that does
    /// not parse or fails `valid` is refused with `reason`.
    pub fn get_or<T: FromStr>(
        &self,
        key: &str,
        default: T,
        valid: impl Fn(&T) -> bool,
        reason: &'static str,
    ) -> Result<T, ConfigError> {
        let Some((param, value)) = self.values.iter().find(|(k, _)| *k == key) else {
            return Ok(default);
        };
        let bad = |reason| ConfigError::BadValue {
            controller: self.entry.name,
            param,
            value: value.clone(),
            reason,
        };
        let x: T = value.parse().map_err(|_| bad("does not parse"))?;
        if valid(&x) {
            Ok(x)
        } else {
            Err(bad(reason))
        }
    }
}

/// A registered controller with its parameters, checked: what a controller string names (a
/// built-in's name too, though `mpquic_choice` reads those into a typed
/// [`ControllerConfig`](crate::ControllerConfig)). Build one controller per connection with
/// [`ControllerChoice::build`].
#[derive(Clone)]
pub struct ControllerChoice {
    entry: Arc<Entry>,
    values: Vec<(&'static str, String)>,
}

impl ControllerChoice {
    /// A registered controller by name (case-insensitive) with `key=value` parameters. Unknown
    /// names and parameters are refused as a built-in's are, and the values are checked by
    /// building one controller.
    pub fn parse<'a>(
        name: &str,
        params: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, ConfigError> {
        let entry = lookup(name).ok_or_else(|| ConfigError::UnknownController(name.to_owned()))?;
        let mut values: Vec<(&'static str, String)> = Vec::new();
        for param in params {
            let (key, value) = split_param(entry.name, param)?;
            let known = entry
                .parameters
                .iter()
                .find(|k| **k == key)
                .ok_or_else(|| entry.unknown_parameter(key))?;
            values.retain(|(k, _)| k != known);
            values.push((known, value.to_owned()));
        }
        let choice = ControllerChoice { entry, values };
        choice.try_build()?;
        Ok(choice)
    }

    /// The registered name.
    pub fn name(&self) -> &'static str {
        self.entry.name
    }

    /// The parameters given, in order, as `(key, value)`.
    pub fn params(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values.iter().map(|(k, v)| (*k, v.as_str()))
    }

    fn try_build(&self) -> Result<Box<dyn Controller>, ConfigError> {
        (self.entry.build)(&Params { entry: &self.entry, values: self.values.clone() })
    }

    /// A controller for one connection.
    ///
    /// # Panics
    ///
    /// If the factory refuses parameters it accepted when the choice was parsed (a factory that
    /// is not a function of its parameters).
    pub fn build(&self) -> Box<dyn Controller> {
        match self.try_build() {
            Ok(controller) => controller,
            Err(e) => panic!("controller `{}` refused parameters it once took: {e}", self.name()),
        }
    }
}

impl fmt::Debug for ControllerChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerChoice")
            .field("name", &self.entry.name)
            .field("params", &self.values)
            .finish()
    }
}

impl PartialEq for ControllerChoice {
    fn eq(&self, other: &Self) -> bool {
        self.entry.name == other.entry.name && self.values == other.values
    }
}

/// As the built-ins' configurations are: `{"algorithm": name, key: value, ...}`.
impl Serialize for ControllerChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1 + self.values.len()))?;
        map.serialize_entry("algorithm", self.entry.name)?;
        for (key, value) in &self.values {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coupled::{Algorithm, Core, Coupled, Slot};
    use crate::ControllerConfig;

    /// Reno under another name; `reports` is the name its controller gives itself.
    #[derive(Debug, Clone)]
    struct Named(&'static str);

    impl Algorithm for Named {
        type Path = ();
        fn name(&self) -> &'static str {
            self.0
        }
        fn ca_increase(&self, core: &Core<()>, path: Slot, bytes: u64) -> f64 {
            let p = core.path(path);
            p.mss_f() * bytes as f64 / p.cwnd()
        }
    }

    fn reno_as(name: &'static str) -> Registration {
        let reports = if name == "test-misnamed" { "someone-else" } else { name };
        Registration::new(name, &["scale"], move |params| {
            params.get_or("scale", 1.0, |&x: &f64| x > 0.0, "must be positive")?;
            Ok(Box::new(Coupled::new(Named(reports))))
        })
    }

    #[test]
    fn registration_checks_names_parameters_and_the_defaults() {
        assert_eq!(register(reno_as("test-ok")), Ok(()));
        assert!(registered().contains(&"test-ok"));
        assert_eq!(register(reno_as("test-ok")), Err(RegisterError::Taken("test-ok".into())));
        for taken in ["lia", "amp", "cubic", "newreno"] {
            assert_eq!(register(reno_as(taken)), Err(RegisterError::Taken(taken.into())));
        }
        for bad in ["", "Test", "1x", "a:b", "a,b", "a=b", "a b"] {
            assert_eq!(register(reno_as(bad)), Err(RegisterError::BadName(bad.into())));
        }
        let twice =
            Registration::new("test-twice", &["k", "k"], |_| Ok(ControllerConfig::Reno.build()));
        assert!(matches!(register(twice), Err(RegisterError::BadParameter { .. })));
        // A factory whose own default is out of its own range.
        let refuses = Registration::new("test-refuses", &[], |_| {
            ControllerConfig::Amp(crate::AmpConfig { gamma: 0, ..Default::default() }).try_build()
        });
        assert!(matches!(register(refuses), Err(RegisterError::DefaultsRefused(..))));
        assert!(matches!(
            register(reno_as("test-misnamed")),
            Err(RegisterError::NameMismatch { .. })
        ));
        assert!(!registered().contains(&"test-misnamed"));
    }

    #[test]
    fn a_registered_name_parses_like_a_builtin() {
        let _ = register(reno_as("test-parse"));
        let choice = ControllerChoice::parse("TEST-PARSE", [" scale = 2 "]).unwrap();
        assert_eq!(choice.name(), "test-parse");
        assert_eq!(choice.params().collect::<Vec<_>>(), vec![("scale", "2")]);
        assert_eq!(choice.build().name(), "test-parse");
        let err = ControllerChoice::parse("test-parse", ["beta=1"]).unwrap_err();
        assert!(err.to_string().contains("it has: scale"), "{err}");
        let err = ControllerChoice::parse("test-parse", ["scale=-1"]).unwrap_err();
        assert!(matches!(err, ConfigError::BadValue { param: "scale", .. }), "{err}");
        let err = ControllerChoice::parse("test-parse", ["scale"]).unwrap_err();
        assert!(err.to_string().contains("key=value"), "{err}");
        assert_eq!(
            ControllerChoice::parse("test-unregistered", []).unwrap_err(),
            ConfigError::UnknownController("test-unregistered".into())
        );
        let json = serde_json::to_string(&choice).unwrap();
        assert_eq!(json, r#"{"algorithm":"test-parse","scale":"2"}"#);
    }
}
