//! The built-in controllers: one table, registered through the public registry as a user's
//! controller is.
//!
//! Linux registers its own congestion controls with `tcp_register_congestion_control`, the call
//! a module uses; so does this crate. The table is the one invocation of [`builtins!`] (in
//! `config`): each built-in is a line there, with its name and the typed configuration
//! (`AmpConfig`, ...) that carries its parameters, or the algorithm it runs if it has none. From
//! that line come [`ControllerKind`](crate::ControllerKind), the variant of
//! [`ControllerConfig`](crate::ControllerConfig), and the built-in's [`Registration`], made by
//! [`registrations`] through [`Registration::new`] as a user's is. The name lookup, the unknown
//! parameter errors, the help listings and [`crate::names`] then all go through the registry.
//!
//! What a built-in does with its parameters is its [`TypedConfig`] implementation, next to its
//! algorithm in `alg`: a table of its parameters ([`crate::param`]), each named once with how it
//! is read and checked and which field it sets, and how the controller is built. [`Builtin`],
//! which `ControllerConfig`'s methods dispatch to through `ControllerConfig::builtin` (the one
//! place that looks inside the variants), is derived from that once for every typed
//! configuration.

use crate::coupled::{Algorithm, Coupled};
use crate::param::Parameters;
use crate::{ConfigError, Controller, ControllerConfig, ControllerKind, Registration};

/// A built-in controller's typed parameters: the ops of its registration. Every [`TypedConfig`]
/// has it from its table (the impl below); the defaults are those of a built-in without
/// parameters ([`Parameterless`]).
pub(crate) trait Builtin {
    /// The parameters [`Builtin::with`] takes, in the order they are documented.
    fn parameters(&self) -> &'static [&'static str] {
        &[]
    }

    /// This configuration with `key` read from `value` and checked; `controller` names the
    /// built-in in errors. A key not in [`Builtin::parameters`] is refused with
    /// [`unknown_parameter`].
    fn with(
        &self,
        controller: &'static str,
        key: &str,
        _value: &str,
    ) -> Result<ControllerConfig, ConfigError> {
        Err(unknown_parameter(controller, key))
    }

    /// Check every parameter's range, for configurations built as values rather than read
    /// through [`Builtin::with`] (which checks as it goes).
    fn validate(&self, _controller: &'static str) -> Result<(), ConfigError> {
        Ok(())
    }

    /// A controller for one connection, from parameters [`Builtin::validate`] accepted.
    fn build(&self) -> Box<dyn Controller>;
}

/// A built-in's typed configuration (`AmpConfig`, ...): the table of its parameters, from which
/// its [`Builtin`] is derived, and how it builds its controller.
pub(crate) trait TypedConfig: Copy + 'static {
    /// Its parameters, written with [`crate::param::parameters!`].
    const PARAMETERS: Parameters<Self>;

    /// The variant of [`ControllerConfig`] that holds it.
    const VARIANT: fn(Self) -> ControllerConfig;

    /// A controller for one connection, from parameters [`Builtin::validate`] accepted.
    fn build(&self) -> Box<dyn Controller>;
}

/// Every parameter's name, reading and check come from the one table, [`TypedConfig::PARAMETERS`].
impl<C: TypedConfig> Builtin for C {
    fn parameters(&self) -> &'static [&'static str] {
        C::PARAMETERS.names
    }

    fn with(
        &self,
        controller: &'static str,
        key: &str,
        value: &str,
    ) -> Result<ControllerConfig, ConfigError> {
        let mut config = *self;
        C::PARAMETERS.read(&mut config, controller, key, value)?;
        Ok((C::VARIANT)(config))
    }

    fn validate(&self, controller: &'static str) -> Result<(), ConfigError> {
        C::PARAMETERS.check(self, controller)
    }

    fn build(&self) -> Box<dyn Controller> {
        // Named by its trait: `C` has both traits' `build`, and this is the one it writes.
        TypedConfig::build(self)
    }
}

/// A built-in without parameters (LIA, OLIA, BALIA, Reno): its algorithm, which it runs as it is.
pub(crate) struct Parameterless<A>(pub(crate) A);

impl<A: Algorithm> Builtin for Parameterless<A> {
    fn build(&self) -> Box<dyn Controller> {
        Box::new(Coupled::new(self.0.clone()))
    }
}

/// The error for a parameter `controller` does not take, listing those it does as its
/// registration does (every built-in is registered from the start).
pub(crate) fn unknown_parameter(controller: &'static str, key: &str) -> ConfigError {
    crate::registry::unknown_parameter(controller, key)
}

/// The built-ins' registrations, in the table's order. Each reads the parameters it is given
/// into its typed configuration and builds from that, with nothing a user's registration could
/// not do: the values are read by [`ControllerConfig::set`], so a bad one is refused with the
/// message a typed configuration gives.
pub(crate) fn registrations() -> impl Iterator<Item = Registration> {
    ControllerKind::ALL.into_iter().map(|kind| {
        let defaults = ControllerConfig::with_defaults(kind);
        let parameters = defaults.builtin().parameters();
        Registration::new(kind.name(), parameters, move |params| {
            let mut config = defaults;
            for key in parameters {
                if let Some(value) = params.get(key) {
                    config.set(key, value)?;
                }
            }
            config.try_build()
        })
    })
}

/// The table of built-in controllers, written once (see the module docs). Each line is
///
/// ```text
/// /// Docs of the ControllerKind variant.
/// Variant = "name", configured by TypedConfig;   // a built-in with parameters
/// Variant = "name", parameterless Algorithm;     // a built-in without
/// ```
///
/// in the order the built-ins are documented (error messages, help texts and
/// [`ControllerKind::ALL`] list them so). It defines [`ControllerKind`], [`ControllerConfig`]
/// (serialized as `{"algorithm": name, parameter: value, ...}`), `ControllerKind::TABLE`, and
/// the three functions that map between kinds, variants and their [`Builtin`]:
/// `ControllerConfig::with_defaults`, `ControllerConfig::kind` and `ControllerConfig::builtin`.
macro_rules! builtins {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident = $name:literal,
            $(configured by $config:ident)? $(parameterless $algorithm:ident)?;
    )*) => {
        /// The algorithms this crate implements.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum ControllerKind {
            $( $(#[doc = $doc])* $kind, )*
        }

        impl ControllerKind {
            /// Every kind with its name on command lines and in results, in the order they are
            /// documented: the one table of built-in names ([`ControllerKind::ALL`],
            /// [`ControllerKind::name`], the registry and through it error messages and help
            /// texts).
            const TABLE: [(ControllerKind, &'static str); [$($name),*].len()] =
                [$( (ControllerKind::$kind, $name), )*];
        }

        /// A controller with its parameters.
        #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
        #[serde(tag = "algorithm", rename_all = "kebab-case")]
        pub enum ControllerConfig {
            $(
                #[doc = concat!("See [`ControllerKind::", stringify!($kind), "`].")]
                $kind $(($config))?,
            )*
        }

        impl ControllerConfig {
            /// The algorithm with the papers' default parameters.
            pub fn with_defaults(kind: ControllerKind) -> Self {
                match kind {
                    $( ControllerKind::$kind => ControllerConfig::$kind $(($config::default()))?, )*
                }
            }

            /// Which algorithm this configures.
            pub fn kind(&self) -> ControllerKind {
                match self {
                    $( ControllerConfig::$kind { .. } => ControllerKind::$kind, )*
                }
            }

            /// The built-in's parameters, through which `set`, `validate`, `try_build` and the
            /// registration dispatch.
            pub(crate) fn builtin(&self) -> &dyn $crate::builtin::Builtin {
                match self {
                    $(
                        $( ControllerConfig::$kind(config @ $config { .. }) => config, )?
                        $( ControllerConfig::$kind => &$crate::builtin::Parameterless($algorithm), )?
                    )*
                }
            }
        }
    };
}

pub(crate) use builtins;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ControllerChoice;

    #[test]
    fn every_builtin_is_registered_with_the_parameters_its_configuration_reads() {
        for kind in ControllerKind::ALL {
            let config = ControllerConfig::with_defaults(kind);
            assert!(crate::registered().contains(&kind.name()), "{kind}");
            let registered = ControllerChoice::parse(kind.name(), []).unwrap();
            assert_eq!(registered.build().name(), kind.name());
            // A name the configuration does not read is refused as the registry refuses it.
            let unknown = ControllerChoice::parse(kind.name(), ["no_such=1"]).unwrap_err();
            let mut set = config;
            assert_eq!(set.set("no_such", "1"), Err(unknown), "{kind}");
            // Every parameter listed is one the configuration reads.
            for key in config.builtin().parameters() {
                let err = config.builtin().with(kind.name(), key, "?").unwrap_err();
                let bad_value = matches!(err, ConfigError::BadValue { param, .. } if param == *key);
                assert!(bad_value, "{kind} {key}: {err}");
            }
        }
    }

    #[test]
    fn a_builtin_chosen_through_the_registry_is_its_typed_configuration() {
        let specs: [(&str, &[&str]); 4] = [
            ("amp", &["beta=8", "ssr=false", "initial_window=shared"]),
            ("dctcp", &["g=0.5", "cwnd_min=4"]),
            ("mmptcp", &["deal=single", "switch_bytes=7"]),
            ("olia", &[]),
        ];
        for (name, params) in specs {
            let typed = ControllerConfig::parse(name, params.iter().copied()).unwrap().build();
            let registered = ControllerChoice::parse(name, params.iter().copied()).unwrap().build();
            assert_eq!(format!("{registered:?}"), format!("{typed:?}"), "{name} {params:?}");
        }
        let typed = ControllerConfig::parse("amp", ["beta=1"]).unwrap_err();
        assert_eq!(ControllerChoice::parse("amp", ["beta=1"]).unwrap_err(), typed);
    }
}
